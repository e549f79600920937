/* stream.h - the metrics stream reader: a snapshot source with no engine.
 *
 * A stream is one JSON object per line (normscope(1), STREAM FORMAT): an
 * optional header line, then step lines with the columns of normscope's
 * own --jsonl rows, and event lines. The reader follows a file as tail -f
 * does (waits for it to appear, reads what is there and then what is
 * appended, never half a line, notices a truncated or replaced file) and
 * turns what it reads into the trainer_snapshot the dashboard draws
 * (history points, heat rows, events, the last step's metrics), plus a
 * summary for --follow --headless and a ring of per-step layer rows for
 * the replay.
 *
 * One thread: the caller polls (the UI once per frame, the headless loop
 * until the end). Reads are non-blocking, so a poll never waits.
 *
 * Also here: the small JSON-object-line parser the reader uses (no
 * dependency), and the viewer's half of the control file "<stream>.ctl".
 * Not here: drawing or keys (tui_follow.c), flags (cli.c).
 */
#ifndef NS_STREAM_H
#define NS_STREAM_H

#include <signal.h>
#include <stddef.h>
#include <stdio.h>

#include "snapshot.h"

/* ---- one JSON object on a line ------------------------------------------- */
typedef enum { STREAM_J_NUM, STREAM_J_STR, STREAM_J_NULL, STREAM_J_BOOL } stream_jtype;

typedef struct {
    stream_jtype type;
    double num;      /* NUM (NaN, Infinity, -Infinity accepted), BOOL 0/1 */
    const char *str; /* STR: decoded UTF-8, NUL-terminated; valid during the call */
    size_t len;
    int index;       /* -1: the key's own value; >= 0: that element of an array */
} stream_jvalue;

typedef void (*stream_jfield)(void *ctx, const char *key, size_t keylen, const stream_jvalue *v);

/* Parse line[0..n) as one JSON object whose values are numbers, strings,
 * true/false/null or arrays of those; nested objects and arrays deeper
 * down are checked and skipped (the format may grow). Strings are decoded
 * in place, so line is modified. cb sees each field as it is read: a line
 * that fails may have shown some fields first. Returns 0, or -1 with the
 * reason and its column (1-based) in err. */
int stream_json_parse(char *line, size_t n, stream_jfield cb, void *ctx, char *err,
                      size_t errlen);

/* ---- the reader ------------------------------------------------------------ */
#define STREAM_LINE_MAX (1 << 20) /* a longer line is malformed (and skipped) */
#define STREAM_SPIKES 8           /* spike steps the summary lists */

/* What --follow --headless prints (stream_print_summary). */
typedef struct {
    int have_header;
    char source[32], model[64], dtype[16];
    int world_size;
    long every;
    int n_layer;          /* layers shown (at most NS_MAX_LAYERS) */
    int n_layer_stream;   /* layers the stream has (more when clamped) */
    long n_lines;           /* lines read, counting malformed and blank ones */
    long rows;            /* step lines of this run */
    long first_step, last_step;
    float last_loss;
    float last_val;       /* NaN before the first validation */
    long last_val_step;
    long nonfinite_rows;
    long nonfinite_step;  /* the first non-finite step; 0 = none */
    char nonfinite_where[NS_EVENT_TEXT]; /* "<module>, forward", or "" */
    char nonfinite_loss[8];              /* "nan", "inf", "-inf", or "" */
    long spikes;
    long spike_step[STREAM_SPIKES];
    long malformed;
    long first_malformed_line;
    long truncations, replacements, restarts;
    long partial_bytes;   /* an unterminated last line (not read) */
    int have_finite;      /* last_finite holds a step with finite gradients */
    step_metrics last_finite;
} stream_summary;

typedef struct stream_reader stream_reader;

/* A reader of path (the file need not exist yet). NULL when out of memory. */
stream_reader *stream_open(const char *path);
void stream_free(stream_reader *r);

/* Read what is new, at most max_bytes (0 = to the end). Returns 1 when the
 * snapshot changed. *eof (may be NULL) is set when everything the file
 * holds now was read. Never blocks. */
int stream_poll(stream_reader *r, size_t max_bytes, int *eof);
/* Bytes as if appended to the file (tests, the fuzz harness); returns 1
 * when the snapshot changed. */
int stream_feed(stream_reader *r, const char *data, size_t n);
/* The module name of a layer from the header's "blocks" ("transformer.h.3"),
 * or "" when the stream did not say. */
#define STREAM_NAME 64
const char *stream_block_name(const stream_reader *r, int layer);
/* Does the file exist (has it ever been opened)? */
int stream_found(const stream_reader *r);

/* The snapshot as read (the newest step), and the summary. */
const trainer_snapshot *stream_snapshot(const stream_reader *r);
const stream_summary *stream_summary_of(const stream_reader *r);
/* The first history point still kept in the replay ring, and how many. */
long stream_hist_first(const stream_reader *r);
long stream_hist_total(const stream_reader *r);

/* Copy the snapshot to dst as seen at history point `at` (an index in
 * [stream_hist_first, stream_hist_total)), or at the newest step when at <
 * 0: the layer panel and the box then show that step's numbers. */
void stream_snapshot_at(const stream_reader *r, long at, trainer_snapshot *dst);

/* Called with every step read, in order (the --csv converter). */
void stream_on_step(stream_reader *r, void (*fn)(void *ctx, const step_metrics *m), void *ctx);

/* An event in the log, as the reader's own (a sent command, a note). */
void stream_note(stream_reader *r, ns_event_kind kind, const char *text);

/* The summary as text: steps, last loss, the first non-finite and where,
 * the smallest and largest layer gradient norms and their ratio, spikes. */
void stream_print_summary(FILE *f, const stream_reader *r, const char *path);

/* ---- the control file ------------------------------------------------------
 * "<stream path>.ctl": one command per line, "<seq> <command>", appended
 * with one write (O_APPEND), seq one more than the highest in the file.
 * Commands: pause, resume, lr x2, lr x0.5, checkpoint. */
int stream_control_path(const char *stream_path, char *out, size_t n);
/* 0 with the seq used in *seq, or -1 with "PATH: reason" in err. */
int stream_control_send(const char *stream_path, const char *command, long *seq, char *err,
                        size_t errlen);

/* --follow FILE --headless: read to the end (or, with steps > 0, follow
 * until step `steps` is read), print the summary unless quiet, write the
 * CSV when csv_path; returns the exit status: 0, 2 (a missing file
 * without steps, an unwritable CSV), 3 (the run diverged), 130 (stopped
 * by a signal: *stop became nonzero). */
int stream_headless(const char *path, long steps, const char *csv_path, int quiet,
                    volatile sig_atomic_t *stop);

#endif
