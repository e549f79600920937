/* tui_sweep.h - the live view of a sweep, without curses: the runs'
 * states and numbers, the cells they fold into, the color scale, the
 * selection and paging, and the frames drawn into the cell grid (tui.h).
 *
 * Threads: the sweep's scheduler (sweep_run.c, its own thread) reports a run
 * starting and ending on the board (a mutex held to copy a few numbers);
 * the UI thread copies the board once per frame and reads the running
 * runs' CSVs itself, complete lines only. Only tui_curses.c calls curses.
 *
 * Not here: spawning and reaping the runs (sweep_run.c), results.csv
 * (sweep_results.c), the terminal (tui_curses.c).
 */
#ifndef NS_TUI_SWEEP_H
#define NS_TUI_SWEEP_H

#include <pthread.h>
#include <stddef.h>

#include "plot.h"
#include "sweep.h"
#include "sweep_map.h"
#include "tail.h"
#include "tui.h"

/* ---- the board: what the scheduler reports ---------------------------------
 * Written by the scheduler's thread through sweep_watch, copied by the UI
 * thread; one mutex, held to copy. */
typedef enum { SV_PENDING = 0, SV_RUNNING, SV_ENDED } sv_phase;

typedef struct {
    pthread_mutex_t mu;
    long n;
    unsigned char *phase; /* (n) an sv_phase per run */
    char **row;           /* (n) the results.csv row of an ended run, or NULL */
    long *pid;            /* (n) the process of a running run */
    unsigned long seq;    /* changes so far */
    int stop;             /* the UI asks the sweep to stop */
    int finished;         /* the scheduler returned */
    int status;           /* then its exit status */
} sv_board;

/* 0, or -1 when out of memory. */
int tui_sweep_board_init(sv_board *b, long n_runs);
void tui_sweep_board_free(sv_board *b);
/* The watch that reports on b (its ctx is b). */
sweep_watch tui_sweep_board_watch(sv_board *b);
void tui_sweep_board_stop(sv_board *b);
void tui_sweep_board_done(sv_board *b, int status); /* the scheduler returned */

/* ---- a growing CSV, read by complete lines ----------------------------------
 * The file is followed by tail.h (complete lines only; a run's next
 * attempt, which cuts or replaces the file, starts the rows anew); each
 * line goes to plot_data (plot.h), which reads the rows of a run's CSV
 * as it does for --plot. */
typedef struct {
    tail tl;         /* the follower (open once a path is polled or bytes fed) */
    int open;
    int restarted;   /* this poll began the rows anew */
    plot_data d;
    int bad;         /* out of memory, or a line over SV_LINE_MAX: stopped */
} sv_tail;

#define SV_LINE_MAX (1 << 20)
#define SV_READ_MAX (1 << 20) /* bytes read per poll at most */

void tui_sweep_tail_init(sv_tail *t);
void tui_sweep_tail_free(sv_tail *t);
/* Bytes as appended to the file. Returns 1 when a row was added. */
int tui_sweep_tail_feed(sv_tail *t, const char *bytes, size_t n);
/* Read what path has that is new (at most SV_READ_MAX). Returns 1 when a
 * row was added. A missing file is not an error (the run has not made
 * it yet). */
int tui_sweep_tail_poll(sv_tail *t, const char *path);
/* The last complete row's step and loss. 0, or -1 when there is none. */
int tui_sweep_tail_last(const sv_tail *t, long *step, double *loss);

/* ---- the view ------------------------------------------------------------------ */
typedef struct {
    sv_phase phase;
    int have;          /* res holds its row's numbers */
    sweep_result res;
    long pid;          /* running: its process (its CSV is run-ID.csv.tmp.PID) */
    long step;         /* running: its CSV's last complete step (0: none yet) */
    double loss;
    sv_tail *tail;     /* running: its CSV as read so far */
} sv_run;

/* A cell: the runs with the same values on every axis but seed. */
typedef struct {
    int runs, pending, running, ended;
    sweep_cell fold;   /* the ended runs folded (a row that cannot be read: failed) */
    double mean;       /* their final loss, NaN without one */
    int n_live;        /* running runs that have a row */
    double live_loss;  /* their mean loss */
    long live_step;    /* their smallest step */
} sv_cell;

/* The color scale: one for the whole sweep (every page), from the lowest
 * to the highest final loss of the finished cells but the exploded ones
 * (drawn off the scale, so an outlier cannot flatten it). */
#define SV_LEVELS 7
int tui_sweep_level(double x, double lo, double hi); /* 0 .. SV_LEVELS-1, -1 when not finite */

typedef struct {
    const sweep_spec *spec;
    char dir[4096];
    long n_runs;
    sv_run *runs;
    sweep_map map;
    int fit_cols;          /* cells across the last frame (0: none drawn yet) */
    unsigned long seq;     /* the board's, when copied */
    int finished, status;  /* the board's */
    /* the map */
    long page;
    int sel_r, sel_c;      /* the selected cell on the page */
    int top, left;         /* the first row and column of cells shown */
    int vis_rows, vis_cols; /* cells shown in the last frame */
    double lo, hi;         /* the color scale (NaN: no finished cell yet) */
    int rescale;           /* a run ended since lo and hi were found */
    /* the run view (Enter): one run of the selected cell */
    int open;
    long open_run;
    int open_seed;         /* its seed's value index (Tab: the next) */
    sv_tail open_tail;
    trainer_snapshot *snap; /* what the chart and heatmap draw */
    tui_ui ui;             /* glyphs, colors, chart and heatmap state */
    /* a sweep lesson's at lines (notes, questions), each shown once as
     * many runs have ended as its N says; NULL: none */
    const ns_script *lesson_lines;
    int help, quit;
} sweepview;

/* For the runs of spec whose CSVs are DIR/run-ID.csv. 0, or -1 when out
 * of memory. */
int tui_sweep_init(sweepview *v, const sweep_spec *spec, const char *dir, int unicode, int color);
void tui_sweep_free(sweepview *v);
/* A row results.csv held for run k before the view started. */
void tui_sweep_set_row(sweepview *v, long k, const char *row);
/* Copy the board's news and read the running runs' CSVs (and the open
 * run's). Returns 1 when the frame changed. */
int tui_sweep_update(sweepview *v, sv_board *b);
/* The cell (r, c) of page p. */
void tui_sweep_cell_of(const sweepview *v, long p, int r, int c, sv_cell *out);
/* The cell's text in w columns (w >= 8) and its style. */
void tui_sweep_cell_text(const sweepview *v, const sv_cell *cell, int w, char *buf, size_t n,
                  tui_style *st);

/* Keys (tui.h's codes): returns 1 when the frame must be redrawn. */
enum { SV_KEY_BACKSPACE = 127 }; /* Enter is '\r' */
int tui_sweep_key(sweepview *v, int key);
/* The whole frame: the map, or the open run. */
void tui_sweep_draw(tui_grid *g, sweepview *v);

/* The live view (tui_curses.c): a sweep_live_fn; arg is a tui_options. */
int tui_sweep_live(sweep_ctx *c, void *arg);

#endif
