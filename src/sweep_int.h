/* sweep_int.h - what the sweep's own files share, and nothing else
 * includes: the sweep being run (sweep.c), a run's command line and the
 * facts the flag parser gives of it, a run's CSV summarized and the rows
 * of DIR/results.csv (sweep_results.c), spawning and reaping the runs
 * (sweep_run.c).
 *
 * Not here: the SPEC grammar and the run IDs (sweep.h, sweep_spec.c).
 */
#ifndef NS_SWEEP_INT_H
#define NS_SWEEP_INT_H

#include <stdint.h>
#include <stdio.h>

#include "data.h"
#include "metrics.h"
#include "sweep.h"

typedef struct {
    char id[13];
    long k;
} sweep_key;

struct sweep_ctx {
    sweep_spec spec;
    char spec_text[8192]; /* as given, newlines made spaces */
    char exe[4096];       /* this binary, for the children and --list */
    char dir[4096];
    int n_common;
    char **common; /* the flags outside SPEC, as given */
    long n_runs;
    sweep_key *keys; /* sorted by id */
    dataset data;    /* the last --data loaded, for its checks */
    char data_name[4096];
    int have_data;
    int quiet;
    int per_seed;    /* --per-seed: the table a line per run */
    unsigned char *done; /* done[k]: run k has a row in results.csv */
    unsigned char *failed; /* failed[k]: that row says it failed (exit N, signal N) */
    int lock_fd;     /* DIR/sweep.lock, flocked while this process lives; -1 none */
    long list_lo, list_hi; /* --list-range: lines lo..hi (1-based) of a list */
    char **rows;     /* for a live view: that row (as read at the start), else NULL */
    int jobs;
    int view_only;   /* --sweep-collect's view: nothing to run */
    struct sweep_inapp *inapp; /* per settings row: runs where the flag does nothing (--sweep) */
};

/* A run's command line: this binary, --headless --threads 1 --quiet, the
 * common flags (a --threads there wins), one --NAME=VALUE per axis, and
 * --csv DIR/run-ID.csv. One allocation; free(r->argv). */
typedef struct {
    char **argv;
    int argc;
    char id[13];
    char csv[4200];
} sweep_args;

/* 0, or -1 when out of memory. */
int sweep_args_make(const sweep_ctx *c, long k, sweep_args *r);

/* What a row needs to know of a run's settings, from the flag parser. */
typedef struct {
    uint64_t seed;
    long steps;
    ns_config cfg;       /* every setting the run runs with */
    char data[1024];     /* --data, --script, --load ("" none) */
    char script[1024];
    char load[1024];
    char command[4096];  /* its command line, words joined by spaces */
} sweep_facts;

/* Parse run k's command line as the run itself will; with check, also its
 * data (as main does before training). 0, or 2 after one line. */
int sweep_run_parse(sweep_ctx *c, long k, int check, sweep_facts *f);

/* What is known of a run: complete (a row that is not a failure), no
 * trace of it, a CSV that stops short, a CSV still being written by a
 * live process, a CSV that is not whole or not the run's, a failure row. */
enum { RUN_COMPLETE, RUN_MISSING, RUN_TRUNCATED, RUN_RUNNING, RUN_CORRUPT, RUN_FAILED,
       RUN_STATES };
/* Judge run k's CSV against its settings, as the run's row says it:
 * RUN_COMPLETE with its row, RUN_CORRUPT with a "corrupt" row whose
 * reason says why, or RUN_MISSING / RUN_TRUNCATED without a row (*n = 0).
 * wall: seconds (NAN unknown). The row goes to row[SWEEP_ROW_MAX]. */
int sweep_run_judge(sweep_ctx *c, long k, double wall, char *row, size_t *n);

/* ---- a run's CSV, summarized (sweep_results.c) ---------------------------- */
typedef struct {
    long first_step, last_step;
    double first_loss; /* the first step's loss: where a run starts */
    double train;    /* mean loss of the last SWEEP_LAST_K steps */
    double val;      /* the validation losses of the last K steps, else the last */
    int has_val;
    long div_step;   /* first non-finite loss or (unskipped) gradient, or state
                        "diverged"; 0 = none */
    long blown_step; /* the last row's state is "exploded": the run stopped at a
                        finite blow-up (--on-diverge stop) at this step; 0 = none */
    char state[24];  /* the last row's state: the run's own diagnosis at its end */
    double ratio_first, ratio_last; /* block 0 / top block gradient norm */
    double best_val; /* the lowest validation loss, NaN without one */
    long best_val_step;
    double update_last; /* the last row's update ratio, mean over the layers */
    double inv_tps;  /* sum of 1 / tokens_per_s: the steps' time over B*T */
    int n_layer;     /* layers its columns hold */
    char set[METRICS_STEP_MAX][16]; /* its first row's setting columns (metrics.h), as
                                     * written; "" where it has none */
    char loss_at[SWEEP_MAX_LOSS_AT][32]; /* the loss field of step loss_at[j] (of the
                        spec read with) as the CSV writes it; "" when no row has that step */
    char why[200];   /* SWEEP_CSV_CORRUPT: what is wrong, "line N: ..." */
} sweep_summary;

/* What a run's CSV is. */
enum { SWEEP_CSV_READ, SWEEP_CSV_NONE, SWEEP_CSV_SHORT, SWEEP_CSV_CORRUPT };
/* Read a run's CSV, every row parsed whole, with the loss at each of
 * at's --loss-at steps (at NULL: none). SWEEP_CSV_READ; NONE when it
 * cannot be opened; SHORT when it holds a header and no step row; CORRUPT (s->why says where) when the
 * header is not a run's, or a row is not whole: a field missing or extra,
 * one its column cannot hold ("abc" for a loss), the last line cut, a step
 * not after the one before. */
int sweep_summary_read(const char *path, const sweep_spec *at, sweep_summary *s);
/* Does the CSV hold the run f describes (its layers, norm, norm kind,
 * precision and clip)? 0, or -1 with the first difference in why. */
int sweep_summary_matches(const sweep_summary *s, const sweep_facts *f, char *why, size_t n);
/* The status a run's CSV shows, from its own diagnosis (its last row's
 * state): diverged, exploded, stalled, another state's name, or ok when
 * it ran all steps of the run's --steps; NULL when it stopped short
 * (interrupted, not finished). */
const char *sweep_summary_status(const sweep_summary *s, long steps);

/* ---- DIR/results.csv (sweep_results.c) ------------------------------------- */
/* Its header line, with its newline. */
void sweep_results_header(const sweep_spec *s, char *buf, size_t n);
/* The row of run k. f: what the flag parser says of it; s: its CSV's
 * summary (NULL when it left none); wall: seconds (NAN: unknown, the
 * field is empty); status: sweep_summary_status's, or "failed",
 * "killed", "corrupt" with reason (NULL: none) saying why; ended: when
 * the run ended (its CSV's time). Returns the row's length (with its
 * newline). */
size_t sweep_results_row(const sweep_spec *sp, long k, const sweep_facts *f,
                         const sweep_summary *s, double wall, const char *status,
                         const char *reason, long ended, char *buf, size_t n);
/* Append one row to DIR/results.csv with one write(): O_APPEND puts it
 * whole at the end, so a sweep killed at any point leaves whole rows. 0,
 * or -1 (errno). */
int sweep_results_append(const char *dir, const char *row, size_t len);
/* The wall time a row of a sweep over s holds (NAN: none). */
double sweep_row_wall(const sweep_spec *s, const char *row);
/* Which rows the table shows and how. */
typedef struct {
    int per_seed;  /* one line per run, its seed a column (--per-seed) */
    int (*keep)(void *ctx, const char *id); /* the rows of these runs (NULL: all) */
    void *ctx;
    FILE *csv;     /* the same table as CSV (DIR/summary.csv), NULL: none */
} sweep_table_opts;
/* Read results.csv and print its table to out (NULL: none), one line per
 * cell with the seeds folded (or per seed). 0, or -1 (unreadable, not a
 * results.csv). */
int sweep_table_print(const char *path, FILE *out, const sweep_table_opts *o);

/* ---- running the grid (sweep_run.c) ------------------------------------------ */
/* Run the runs not done, jobs at a time; w (NULL: none) watches. Returns
 * the exit status. */
int sweep_execute(sweep_ctx *c, const unsigned char *done, int jobs, const sweep_watch *w);

#endif
