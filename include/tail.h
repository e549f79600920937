/* tail.h - the one line tail: a file followed as `tail -f` does.
 *
 * It waits for the file to appear, reads what it holds and then what is
 * appended, and hands over complete lines only (a line still being
 * written waits for its newline). A file cut shorter than what was read
 * (truncated, rewritten) is read again from its start; a different file
 * under the name (a new inode: a new run, a rename over it) is opened
 * from its start; a removed file is kept open until a new one appears.
 * Each of these is told to the sink once, as a kind and a sentence. A
 * line longer than the limit is skipped whole (told as TAIL_TOO_LONG).
 *
 * Reads are non-blocking and bounded, so a poll never waits: the caller
 * polls (a UI once per frame, a headless loop until it is done).
 *
 * Not here: what the lines mean (stream.c parses them; a sweep view can
 * follow its results the same way).
 */
#ifndef NS_TAIL_H
#define NS_TAIL_H

#include <stddef.h>
#include <sys/types.h>

#include "atomicio.h"

typedef enum {
    TAIL_WAITING,   /* the file does not exist (yet) */
    TAIL_ERROR,     /* it cannot be opened: the sentence says why */
    TAIL_BACK,      /* it appeared again after being missing */
    TAIL_TRUNCATED, /* cut shorter than what was read: read again from the start */
    TAIL_REMOVED,   /* removed: kept open until a new one appears */
    TAIL_REPLACED,  /* another file under the name: read from its start */
    TAIL_TOO_LONG,  /* a line over the limit: skipped */
    TAIL_NOMEM      /* out of memory for a line: skipped */
} tail_event;

typedef struct {
    /* a complete line without its newline; the bytes may be modified */
    void (*line)(void *ctx, char *line, size_t n);
    /* what happened to the file (said once per change) */
    void (*event)(void *ctx, tail_event ev, const char *text);
    void *ctx;
} tail_sink;

typedef struct {
    char path[ATOMIC_PATH_MAX];
    size_t line_max;
    tail_sink sink;
    int fd, found, open_err, gone_said;
    dev_t dev;
    ino_t ino;
    off_t pos;
    char *buf; /* the unterminated tail: never handed over until its newline */
    size_t len, cap;
    int skipping; /* inside a line longer than line_max */
} tail;

/* Follow path (it need not exist yet), lines of at most line_max bytes. */
void tail_init(tail *t, const char *path, size_t line_max, const tail_sink *sink);
void tail_free(tail *t);
/* Look at the file and read what is new, at most max_bytes (0: to the
 * end). Returns the bytes read; *eof (may be NULL) is set when everything
 * the file holds now was read. */
size_t tail_poll(tail *t, size_t max_bytes, int *eof);
/* Bytes as if appended to the file (tests, fuzzing). */
void tail_feed(tail *t, const char *data, size_t n);
/* Forget a partial line (the caller starts over: a rewritten file). */
void tail_reset_line(tail *t);
/* A path's name for messages: its last component (the path itself when it
 * ends in '/'). */
const char *tail_base_name(const char *path);
/* Has the file been opened? The errno of the last failed open (0: none). */
static inline int tail_found(const tail *t) { return t->found; }
static inline int tail_open_err(const tail *t) { return t->open_err; }
/* The unterminated last line, not handed over: its bytes and length. */
static inline const char *tail_partial(const tail *t, size_t *n)
{
    *n = t->len;
    return t->buf;
}

#endif
