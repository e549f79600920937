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
 * Also here: the viewer's half of the control file "<stream>.ctl". The
 * lines are parsed by jsonl.h.
 * Not here: drawing or keys (tui_follow.c), flags (cli.c).
 */
#ifndef NS_STREAM_H
#define NS_STREAM_H

#include <signal.h>
#include <stddef.h>
#include <stdio.h>

#include "snapshot.h"

/* ---- the reader ------------------------------------------------------------ */
#define STREAM_LINE_MAX (1 << 20) /* a longer line is malformed (and skipped) */
#define STREAM_SPIKES 8           /* spike steps the summary lists */
#define STREAM_ACKS 64            /* acknowledged commands remembered */
#define STREAM_CKPTS 16           /* the run's checkpoints remembered (the newest) */
#define STREAM_QUIET_MIN 10.0     /* seconds without a step before "no new step" */

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
    long nonfinite_rows;  /* step lines that were not finite */
    long nonfinite_said;  /* the writer's count of non-finite steps (nonfinite_steps), -1 = not said */
    long nonfinite_step;  /* the first non-finite step; 0 = none */
    char nonfinite_where[NS_EVENT_TEXT]; /* "<module>, forward", or "" */
    char nonfinite_loss[8];              /* "nan", "inf", "-inf", or "" */
    long spikes;
    long spike_step[STREAM_SPIKES];
    long malformed;
    long first_malformed_line;
    long truncations, replacements, restarts;
    long partial_bytes;   /* an unterminated last line (not read) */
    long recognized;      /* lines that were a header, a step or an event */
    int ended;            /* the writer's end line was read */
    long end_step;
    char end_reason[16];  /* "close", "exit", "exception", "signal" */
    char end_text[NS_EVENT_TEXT];
    int end_rank;         /* the rank whose failure ended the run, -1 = not said */
    char norm_class[32];  /* the header's norm_class, or "" */
    int layer_grads_said; /* a step said some layer's gradient norm */
    int have_finite;      /* last_finite holds a step with finite gradients */
    step_metrics last_finite;
    int vocab;            /* the header's vocabulary size; 0 = not said */
    float data_entropy;   /* the targets' unigram entropy, the latest said; NaN = not said */
    /* the lab's rules (diagnose.h) over the steps read, as the lab runs them */
    long warnings, diagnoses;          /* findings of each kind */
    diag_finding first_warning, cause; /* the first of each; step 0 = none */
    int blew_up;          /* a finite blow-up was diagnosed (exit 3) */
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

/* Is it a stream? 0 once bytes were read and not one line was a header, a
 * step or an event (random bytes, a text file). */
int stream_is_stream(const stream_reader *r);

/* How the writer is doing, now (nstime_now()): */
typedef enum {
    STREAM_LIVE_WAITING,    /* no file yet, or not a line in it yet */
    STREAM_LIVE_RUNNING,    /* steps arrive */
    STREAM_LIVE_QUIET,      /* "no new step for N s": more than 4 mean gaps, and
                             * at least the quiet minimum (STREAM_QUIET_MIN) */
    STREAM_LIVE_GONE,       /* "writer gone": the header's pid runs no more on this host */
    STREAM_LIVE_ENDED,      /* the end line was read */
    STREAM_LIVE_NOT_STREAM  /* stream_is_stream said no */
} stream_live;
/* The state, and in text a phrase for it ("no new step for 12 s"). */
stream_live stream_liveness(const stream_reader *r, double now, char *text, size_t n);
/* The quiet minimum in seconds (tests shorten it). */
void stream_set_quiet(stream_reader *r, double seconds);
/* Was command seq acknowledged ("ack" event) by the run? */
int stream_acked(const stream_reader *r, long seq);

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
/* During that call: each number's token as the line had it. */
const metrics_digits *stream_digits(const stream_reader *r);

/* A finding's fix (diagnose.h) as the followed run can take it: in cmd
 * the part the control file carries ("lr x0.1"; "" when none), and in
 * text all of it in words. A fix that needs the weights from before the
 * trouble says so, with the run's own checkpoint to resume from (the
 * newest at or before that step the stream announced, or none: from the
 * start). Returns 1 for such a fix (it is not applied from here), else 0. */
int stream_fix(const stream_reader *r, const diag_finding *f, char *cmd, size_t cn, char *text,
               size_t tn);
/* The newest checkpoint the run announced with at most `step` updates in
 * it: its updates, and its name in name; -1 when there is none. */
long stream_checkpoint_at(const stream_reader *r, long step, char *name, size_t n);

/* An event in the log, as the reader's own (a sent command, a note). */
void stream_note(stream_reader *r, ns_event_kind kind, const char *text);

/* The summary as text: steps, last loss, the first non-finite and where,
 * the smallest and largest layer gradient norms and their ratio, spikes. */
void stream_print_summary(FILE *f, const stream_reader *r, const char *path);

/* ---- the control file ------------------------------------------------------
 * "<stream path>.ctl": one command per line, "<seq> <command>", appended
 * with one write (O_APPEND), seq one more than the highest in the file.
 * Commands: pause, resume, lr x2, lr x0.5, checkpoint. It steers a run,
 * so it is the run's user's alone: created 0600, never through a symbolic
 * link, and refused when it is another user's or group or others may
 * write it (the probe applies the same rule when it reads). */
#define STREAM_CONTROL_MAX (1L << 20) /* bytes of it read for the next seq */
int stream_control_path(const char *stream_path, char *out, size_t n);
/* 0 with the seq used in *seq, or -1 with "PATH: reason" in err. */
int stream_control_send(const char *stream_path, const char *command, long *seq, char *err,
                        size_t errlen);

/* --follow FILE --headless: read to the end (or, with steps > 0, follow
 * until step `steps` is read), print the summary unless quiet, write the
 * CSV when csv_path; returns the exit status: 0 (a run that ended
 * normally, step `steps` reached, or the lab's own rows, which have no
 * end line), 2 (a missing file without steps, not a stream, an unwritable
 * CSV), 3 (the run diverged), 5 (a stream without its end line: the run
 * is still writing, or its writer was killed), 6 (the run ended by an
 * exception or a signal), 130 (stopped by a signal: *stop became nonzero).
 * (4 is the lab's stalled run.) */
enum { STREAM_EXIT_DIVERGED = 3, STREAM_EXIT_NO_END = 5, STREAM_EXIT_ABNORMAL = 6 };
int stream_headless(const char *path, long steps, const char *csv_path, int quiet,
                    volatile sig_atomic_t *stop);

#endif
