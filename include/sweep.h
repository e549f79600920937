/* sweep.h - grids of headless runs: --sweep / --list / --sweep-collect
 * (the SPEC and the run IDs themselves: sweep_spec.h).
 *
 * A sweep runs each cell of the grid as a child process of this same
 * binary (--headless --threads 1), so a run's numbers are those of the same
 * settings run alone, and a crash of one run stays in that run. Settings
 * are checked by the command line's own parser (cli_parse), never here.
 * Files: the SPEC grammar and run IDs (sweep_spec.c), a run's CSV and
 * results.csv (sweep_results.c), spawning and reaping (sweep_run.c), the
 * sweep's directory, --list and --sweep-collect (sweep.c).
 * Not here: training (main.c, engine.c), the flag table (settings.c).
 */
#ifndef NS_SWEEP_H
#define NS_SWEEP_H

#include "cli_opts.h"
#include "sweep_spec.h"

/* ---- watching a sweep (the live view: tui_sweep.h) -------------------------- */
enum { SWEEP_ROW_MAX = 8192 }; /* a results.csv row, with its newline */

typedef struct sweep_ctx sweep_ctx; /* a sweep checked and ready to run */

/* A watcher, told from the scheduler's thread: a run started (as process
 * pid: it writes its CSV to DIR/run-ID.csv.tmp.PID until it ends, see
 * atomicio.h), a run ended (row: the line appended to results.csv; NULL
 * when it got none, being interrupted). stop is polled every ~20 ms: nonzero stops the sweep (no
 * new runs; the running ones get SIGTERM and leave no row). */
typedef struct {
    void *ctx;
    void (*started)(void *ctx, long k, long pid);
    void (*ended)(void *ctx, long k, const char *row);
    int (*stop)(void *ctx);
} sweep_watch;

/* What a row of results.csv says of its run. */
typedef struct {
    int ok;          /* status ok */
    int diverged;    /* status diverged */
    int failed;      /* failed, killed, corrupt (older files: exit N, signal N): no numbers */
    long steps;      /* the last step it reached */
    double train, val; /* NaN when empty */
    double final;    /* val, or train without it */
    long div_step;   /* 0 = none */
    int stalled;     /* status stalled: its own diagnosis at its end */
    int exploded;    /* status exploded: it stopped at a finite blow-up */
    int has_ratio;   /* the ratio fields are not empty (a run with a summary) */
    double ratio_first, ratio_last;
    double best_val; /* NaN when empty (older files, no validation) */
    long best_step;
    double update_end; /* the update ratio at its end, NaN when empty */
    int n_at;        /* loss_at_N columns (--loss-at), in the header's order */
    double loss_at[SWEEP_MAX_LOSS_AT]; /* NaN when empty: it never reached that step */
} sweep_result;

/* results.csv's columns, found by name in its header: "id", the axes but
 * seed (in name order), then the result columns, the loss_at_N columns
 * of --loss-at, every other setting the runs ran with, and where the row
 * comes from. */
enum { SWEEP_COL_SEED, SWEEP_COL_STEPS, SWEEP_COL_TRAIN, SWEEP_COL_VAL, SWEEP_COL_DIV,
       SWEEP_COL_STALLED, SWEEP_COL_EXPLODED, SWEEP_COL_R1, SWEEP_COL_RN, SWEEP_COL_WALL,
       SWEEP_COL_STATUS, SWEEP_COL_STATE, SWEEP_COL_REASON, SWEEP_COL_BEST,
       SWEEP_COL_BEST_STEP, SWEEP_COL_UPD, SWEEP_COL_TOKENS, SWEEP_COL_TRAIN_S, SWEEP_COLS };
enum { SWEEP_MAX_FIELDS = 256 }; /* fields of a results.csv row */
typedef struct {
    int n;               /* the header's fields: a row has as many */
    int n_axes;          /* the axes: fields 1 .. n_axes */
    int col[SWEEP_COLS]; /* each result column's field (-1: a column a file
                            written by an older version lacks, read as empty) */
    int n_at;            /* loss_at_N columns: their fields and steps N */
    int at_col[SWEEP_MAX_LOSS_AT];
    long at_step[SWEEP_MAX_LOSS_AT];
} sweep_cols;

/* The columns of a header split into f[0..n) (csv.h). 0, or -1 with the
 * name of the first column missing in *missing ("id" when f[0] is not). */
int sweep_cols_find(sweep_cols *c, char *const *f, int n, const char **missing);
/* A row split into f[0..c->n), as a result. */
void sweep_result_fields(const sweep_cols *c, char *const *f, sweep_result *r);

/* A value over the runs of a cell: count, mean and the sum of squared
 * deviations (Welford's update, so a cell of large equal losses keeps
 * its digits), range. */
typedef struct {
    int n;               /* finite values */
    double sum, lo, hi;
    double mean, m2;
} sweep_stat;

/* The runs of a cell (every axis value the same but the seed) folded:
 * counts, and the losses of the runs that neither diverged nor failed;
 * at[j]: the finite losses at the header's j-th --loss-at step of every
 * run that reached it (a run that diverged later included: its loss
 * then was a trained model's). */
typedef struct {
    int runs, diverged, stalled, exploded, failed;
    sweep_stat final, train, val, best, update;
    sweep_stat at[SWEEP_MAX_LOSS_AT];
    long div_step;       /* the earliest divergence, 0 = none */
    int n_ratio;         /* runs with gradient ratios */
    double ratio[2];     /* their sums: at step 1, at the end */
} sweep_cell;

void sweep_cell_add(sweep_cell *c, const sweep_result *r);
/* A stat's mean, NaN without a value. */
double sweep_stat_mean(const sweep_stat *s);
/* Its sample standard deviation (n - 1), NaN with fewer than 2 values. */
double sweep_stat_sd(const sweep_stat *s);
/* Half the width of its 95% confidence interval for the mean, Student's t
 * with n - 1 degrees of freedom times sd / sqrt(n); NaN below 2 values. */
double sweep_stat_ci95(const sweep_stat *s);
/* A loss in at most width characters (width >= 5): "%.3f" when it fits,
 * else fewer decimals, else the most significant digits that fit
 * ("2.8e+12"); "nan", "inf". */
void sweep_fmt_loss(char *buf, size_t n, double x, int width);
/* Axis values in order: numbers as numbers, anything else as text. */
int sweep_value_cmp(const char *a, const char *b);

const sweep_spec *sweep_ctx_spec(const sweep_ctx *c);
const char *sweep_ctx_dir(const sweep_ctx *c);
/* The row results.csv held for run k when the sweep started, or NULL. */
const char *sweep_ctx_row(const sweep_ctx *c, long k);
/* Parse a row of the results.csv of a sweep over s. 0, or -1 (not such
 * a row). */
int sweep_row_parse(const sweep_spec *s, const char *row, sweep_result *r);
/* Run what is left (--jobs at a time), watched by w; the caller's thread
 * waits for it. Returns the exit status, as a headless sweep's (0 at once
 * for --sweep-collect's view: nothing runs). */
int sweep_ctx_execute(sweep_ctx *c, const sweep_watch *w);

/* A live view of a sweep: runs it (sweep_ctx_execute, on a thread of its
 * own) while showing it; returns the exit status. The table is printed
 * after it returns. --sweep-collect shows its results with it too. */
typedef int (*sweep_live_fn)(sweep_ctx *c, void *arg);

/* Flags that would make every run of a sweep write the same file, or a
 * second run (--csv, --jsonl, --save, --compare, --lesson): 2 after one
 * line naming the flag and what it cannot go with (what: "--sweep", or a
 * sweep lesson's "--lesson NAME"), else 0. sweep_main asks it first; a
 * sweep lesson asks before it prints its text. */
int sweep_refuse_common(const cli_opts *o, const char *what);

/* Is any sweep flag given (--sweep, --sweep-collect, --sweep-out, --jobs,
 * --list, --list-range, --retry, --per-seed, --loss-at, --yes)? */
int sweep_requested(const cli_opts *o);
/* Run the sweep, --list or --sweep-collect that o asks for; argv is the
 * whole command line (the flags outside SPEC are common to every run).
 * live (NULL: none) shows a sweep that runs, or the results
 * --sweep-collect gathered: it is used unless --headless, when standard
 * input and output are terminals.
 * Returns the exit status: 0, 1 a run failed or an output could not be
 * written, 2 bad input (nothing written), 130 interrupted. */
int sweep_main(const cli_opts *o, int argc, char **argv, sweep_live_fn live, void *live_arg);

#endif
