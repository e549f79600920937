/* plot.h - figures for slides: SVG drawn from what normscope writes.
 *
 * Two halves. plot_data reads a run's --csv or --jsonl (one run, or a
 * --compare pair: CSV "b_" columns, JSONL "run":"b" lines; a followed
 * stream's header-less JSON lines too, skipping its "event" and "format"
 * lines) into columns per run, or takes a live view's snapshot. plot_render
 * draws one kind of figure from it as a standalone SVG the program writes
 * itself (no library): loss, layers, profile, heatmap, headroom (act max
 * and headroom over the run), overflow (overflow and underflow counts),
 * series (any per-layer column over the run, --metric naming it), or
 * the live view's chart + layer panel (the g key). plot_map reads a sweep's results.csv
 * into cells for the map (plot_map.c), drawn by plot_render_map.
 *
 * Not here: the live view (tui_*.c), the writing of the CSV/JSONL
 * (metrics.c), the temp-file + rename (atomicio.c).
 */
#ifndef NS_PLOT_H
#define NS_PLOT_H

#include <stddef.h>
#include <stdio.h>

#include "snapshot.h"
#include "sweep.h"

/* PLOT_NSET: a run's settings are indexed by step column (metrics.h: a
 * setting's column is its settings row's step_col), so every column the
 * settings table records has its place. */
enum { PLOT_NSET = METRICS_STEP_MAX, PLOT_SETLEN = 24, PLOT_MARKLEN = 96, PLOT_MAX_STEPS = 8 };

typedef struct {
    long step;               /* where it is drawn: a rewind at the step it left */
    long rewind_to;          /* a rewind: the step it went back to; -1 = none */
    char text[PLOT_MARKLEN]; /* "warmup=off", "rewind 200 -> 0, warmup=on" */
} plot_mark;

/* One run's rows, in file order. Per-layer arrays are (n, L). */
typedef struct {
    long n, cap;
    int L;                 /* layers seen in its first row; 0 = no layer columns */
    int has_loss, has_val; /* columns present */
    long *step;
    float *loss, *val;     /* val: -inf where not measured, NaN where measured NaN */
    float *oc;             /* out_change, as val: -inf where not measured */
    int has_oc;            /* the column is in the file */
    /* every per-layer column of the table the writers walk, by its index
     * (METRICS_LC_*, metrics.h): lc[METRICS_LC_ACT_MAX] is each row's act
     * max per layer (NaN where the row has none), so a new column is kept
     * and drawn (--kind series) without a line here */
    float *lc[METRICS_LAYER_COLS];
    int has_lc[METRICS_LAYER_COLS]; /* the column of layer 0 was in the file */
    float *gn;             /* sqrt(attn^2 + mlp^2 + ln^2) per layer: the heatmap's */
    plot_mark *mark;
    int nmark, capmark;
    char set[PLOT_NSET][PLOT_SETLEN]; /* settings of the first row */
    char cur[PLOT_NSET][PLOT_SETLEN]; /* of the last row (to see changes) */
    int have_set;
    char scale0[PLOT_SETLEN]; /* the first row's loss_scale ("" = no column) */
    char label[64];        /* "a: norm=pre" in a comparison (every setting
                            * the runs differ in); "a" when the file records
                            * none that differs; "" alone */
    char *bad;             /* (n) 1 for a row whose state says diverged (a step
                            * not finite, even where its loss is) */
    char fault[64];        /* the first such row's first_nonfinite ("" = none) */
    long fault_step;
    char *live;            /* (n) after finish: 1 for a row on the timeline the
                            * run ended on, 0 for one a later rewind abandoned */
    long abandoned;        /* rows with live 0 */
} plot_run;

typedef struct {
    plot_run run[2];
    int nruns;             /* 1, or 2 for a comparison */
    /* reader state */
    int ncol;              /* CSV columns; 0 before the header (or JSONL) */
    short *col_run, *col_field, *col_layer;
    long lineno;
    int skipped;           /* lines that were neither a header nor a row */
    int unnamed;           /* a comparison whose runs differ in no recorded setting */
    /* from a live view's snapshot after a rewind: the curve the rewind
     * abandoned (trainer_status's ghost), steps ghost_step[0..ghost_n),
     * each run's loss; drawn dashed grey. ghost_n = 0: none */
    long ghost_n;
    long *ghost_step;
    float *ghost_loss[2];
} plot_data;

void plot_data_init(plot_data *d);
void plot_data_free(plot_data *d);
/* Feed one line (without its newline). 0, or -1 when out of memory (err
 * says so). A line that cannot be read as a row is skipped and counted. */
int plot_data_line(plot_data *d, const char *line, size_t len, char *err, size_t errlen);
/* After the last line: labels of a comparison's runs. */
void plot_data_finish(plot_data *d);
/* Read a whole file ("-" = standard input). 0, or -1 with "PATH: reason". */
int plot_data_read(plot_data *d, const char *path, char *err, size_t errlen);
/* Each line of a file ("-" = standard input) to fn(r, ...), until one
 * returns non-zero. 0, or -1 with "PATH: reason" (or fn's) in err. */
typedef int (*plot_line_fn)(void *r, const char *line, size_t len, char *err, size_t errlen);
int plot_read_lines(const char *path, plot_line_fn fn, void *r, char *err, size_t errlen);
/* From a live view's snapshot: the loss history (and run b's), the
 * heatmap's history, and the last step's layers. 0, or -1 (out of memory). */
int plot_data_snapshot(plot_data *d, const trainer_snapshot *s);

/* A sweep's results.csv, for --kind map (plot_map.c). */
enum { PLOT_MAP_AXES = 15, PLOT_MAP_VALUES = 64, PLOT_MAP_VALLEN = 32, PLOT_MAP_CELLS = 4096 };

typedef struct {
    char name[32];
    int n;
    char val[PLOT_MAP_VALUES][PLOT_MAP_VALLEN]; /* in order, numbers as numbers */
} plot_map_axis;

typedef struct {
    int idx[PLOT_MAP_AXES]; /* its value on each axis */
    int seed;               /* its value of plot_map's seed */
    sweep_result res;       /* what its row says */
} plot_map_row;

/* One combination of axis values, its seeds folded (final: the final
 * validation loss, the train loss where none was measured). */
typedef sweep_cell plot_map_cell;

typedef struct {
    int n_axes;             /* the columns between id and seed */
    plot_map_axis axis[PLOT_MAP_AXES];
    plot_map_row *row;
    long nrows, caprows;
    plot_map_cell *cell;    /* after finish: ncells, indexed by plot_map_cell_of */
    long ncells;
    int seeds;              /* the most runs in one cell */
    plot_map_axis seed;     /* the seeds run, in order (folded, not an axis) */
    int seed_drawn;         /* plot_map_with_seeds: the seed is the last axis */
    int val_missing;        /* a loss is a train loss */
    char common[1024];      /* the flags common to every run (DIR/sweep.spec) */
    /* reader state */
    int have_header;
    sweep_cols cols;
    long skipped;
    char bad[256];          /* the first reason the file cannot be drawn */
} plot_map;

void plot_map_init(plot_map *m);
void plot_map_free(plot_map *m);
/* Feed one line. 0, or -1 when out of memory. */
int plot_map_line(plot_map *m, const char *line, size_t len, char *err, size_t errlen);
/* After the last line: sort the values, fold the cells. 0, or -1 with one
 * line in err (no header, a missing column, no rows, too many cells). */
int plot_map_finish(plot_map *m, char *err, size_t errlen);
/* Read DIR/results.csv, or a results.csv by its path ("-" = standard
 * input), and DIR/sweep.spec's common flags when it is there; finish. */
int plot_map_read(plot_map *m, const char *input, char *err, size_t errlen);
/* The cell of a combination of value indices (one per axis). */
long plot_map_cell_of(const plot_map *m, const int *idx);
/* m's rows with the seed as one more axis (named "seed", last), so that
 * each cell is one run, into dst (plot_map_free it). 0, or -1 with one
 * line in err (one seed only, no axis left, too many cells, out of
 * memory). */
int plot_map_with_seeds(const plot_map *m, plot_map *dst, char *err, size_t errlen);

/* What a map's cell is colored by (--metric): the final loss (the
 * default), the best validation loss, the update ratio at the end, the
 * share of the cell's runs that stalled. */
typedef enum { PLOT_METRIC_LOSS, PLOT_METRIC_BEST, PLOT_METRIC_UPDATE, PLOT_METRIC_STALLED,
               PLOT_METRICS } plot_metric;

typedef enum {
    PLOT_LOSS, PLOT_LAYERS, PLOT_PROFILE, PLOT_HEATMAP, PLOT_MAP, PLOT_VIEW, PLOT_HEADROOM, PLOT_OVERFLOW,
    PLOT_SERIES, /* one per-layer column over the run (column) */
    PLOT_CHANGE  /* out_change over the run, the runs on one axis */
} plot_kind;

typedef struct {
    plot_kind kind;
    int w, h;                       /* pixels (16:9 by default) */
    int mono;                       /* dashes and markers, black on white */
    int light;                      /* color on white, for print (not with mono) */
    int logy;                       /* loss on a log axis */
    double smooth;                  /* the smoothed loss's weight (scale.h); 0: none */
    long steps[PLOT_MAX_STEPS];     /* chosen steps; nsteps = 0: the kind's default */
    int nsteps;
    const char *source;             /* named in the caption */
    const char *rows, *cols;        /* map: the axes drawn as rows and columns (NULL: default) */
    double vmin, vmax;              /* map: the color scale's ends, where vset says given */
    int vset;                       /* 1: vmin given, 2: vmax given */
    plot_metric metric;             /* map: what colors a cell */
    int column;                     /* series: the layer column drawn (METRICS_LC_*) */
    int continuous;                 /* map: a smooth color scale, not bins */
} plot_opts;

/* Parse --kind, --size, --step values. 0, or -1 with what is allowed in err. */
int plot_parse_kind(const char *s, plot_kind *k);
int plot_parse_size(const char *s, int *w, int *h);
int plot_parse_steps(const char *s, long *steps, int *n);
/* --metric NAME. 0, or -1 with the names allowed in err ("loss, ..."). */
int plot_parse_metric(const char *s, plot_metric *m, char *err, size_t errlen);

/* Write the figure to f. 0, or -1 with one line in err (a missing column,
 * a step not in the data). */
int plot_render(FILE *f, const plot_data *d, const plot_opts *o, char *err, size_t errlen);

/* Draw the map to f. 0, or -1 with one line in err (an unknown axis). */
int plot_render_map(FILE *f, const plot_map *m, const plot_opts *o, char *err, size_t errlen);
/* The map to path atomically. 0, or -1 with a reason in err. */
int plot_write_map(const char *path, const plot_map *m, const plot_opts *o, char *err,
                   size_t errlen);

/* Render to path atomically. 0, or -1 with "PATH: reason" / the render's
 * error in err. */
int plot_write(const char *path, const plot_data *d, const plot_opts *o, char *err, size_t errlen);

/* The live view's g key: the loss chart (on a log axis when the view's is,
 * logy) and each run's layer panel at the last step, or each run's
 * heatmap, of a snapshot, to path atomically. 0, or -1 with a reason in
 * err. */
int plot_write_snapshot(const trainer_snapshot *s, int heatmap, int logy, double smooth,
                        const char *path, char *err, size_t errlen);

/* --plot INPUT: read, render, write --out. Returns the exit status (0, or
 * 2 after one line on err). */
typedef struct {
    const char *input, *out, *kind, *size, *steps, *rows, *cols;
    int mono, logy;
    double smooth;
    const char *vmin, *vmax; /* --vmin, --vmax as given; NULL: the map's own range */
    const char *metric, *scale; /* --metric, --scale as given; NULL: loss, binned */
    int light; /* --light: the print palette; refused with --mono */
} plot_args;
int plot_main(const plot_args *a, FILE *err);

#endif
