/* plot_int.h - what the files that draw a figure share (private to
 * src/plot*.c): the palette, the SVG writer's state, boxes, axes, legends,
 * and each file's entry points.
 *
 *   plot_svg.c        palettes, SVG elements (text, line, marker shapes), legends
 *   plot_axes.c       scales, ticks, a panel's frame; the content area and its parts
 *   plot_series.c     a line series with gaps and per-pixel decimation
 *   plot_frame.c      title, caption, run labels and settings; the steps shown
 *   plot_fig_*.c      one figure kind each (loss, layers, profile, heatmap, view, map)
 *   plot_map_scale.c  a map's metric and color scale, and its color bar
 *   plot.c            the public entry points: render, write atomically
 *   plot_args.c       --plot's command line
 *
 * Not here: the public interface (plot.h), reading rows (plot_data.c) or a
 * sweep's results (plot_map.c).
 */
#ifndef NS_PLOT_INT_H
#define NS_PLOT_INT_H

#include "plot.h"

enum { MAP_BINS = 9 };

typedef struct {
    const char *bg, *fg, *grid, *dim, *train, *val, *twin, *twin_val, *mark;
    const char *normal, *vanish, *explode, *nan; /* a gradient's states */
    const char *mark_dash; /* a setting's marker, in its own color: unlike any series */
    double mark_width;     /* px at 1600 wide */
    const char *heat[7];
    const char *step[PLOT_MAX_STEPS];
    const char *map[MAP_BINS]; /* a map's loss scale, its low end first */
    int map_dark;              /* bins from here on get light type */
} palette;

enum { SH_NONE, SH_CIRCLE, SH_SQUARE, SH_TRIANGLE, SH_DIAMOND, SH_TRIANGLE_DOWN };

typedef struct {
    FILE *f;
    const plot_opts *o;
    const palette *p;
    double s;               /* W / 1600 */
    double fs, fs_small;    /* body and caption type, px */
    double top, bottom;     /* the title's and the caption's lines past their first, px */
} svg;

/* A text broken into lines (plot_svg_wrap). */
enum { SVG_LINES = 4, SVG_LINELEN = 512 };
typedef struct {
    char line[SVG_LINES][SVG_LINELEN];
    int n;
    double size; /* the type they fit at */
} svg_wrapped;

/* Every width is an estimate this much over the font's advances (kerning
 * narrows a line, hinting at small sizes may widen it). */
#define SVG_WIDTH_MARGIN 1.04

typedef struct {
    double x, y, w, h;
} box;

/* lo, hi in data units (log10 of them on a log axis), drawn from p0 to p1 */
typedef struct {
    double lo, hi;
    int log;
    double p0, p1;
    int integer; /* ticks on whole numbers only (layers) */
    int count;   /* counts: log10(1 + v), ticked at 0 and decades */
} axis;

typedef struct {
    char text[96];
    const char *color, *dash;
    int shape;
    int swatch; /* a filled box instead of a line; 2: hatched as an MLP bar */
    double opacity;
} legend_entry;

enum { LEGEND_MAX = 4 * PLOT_MAX_STEPS }; /* a profile: 2 runs x steps x 2 parts */
typedef struct {
    legend_entry e[LEGEND_MAX];
    int n;
} legend;

/* ---- plot_svg.c ---- */
/* --mono: series told apart by dashes and marker shapes */
extern const char *const plot_svg_mono_dash[8];
/* The writer on f for o: the palette (screen, light or mono) and the type sizes. */
void plot_svg_init(svg *v, FILE *f, const plot_opts *o);
void plot_svg_esc(FILE *f, const char *t);
/* anchor: 's'tart, 'm'iddle, 'e'nd */
void plot_svg_text(svg *v, double x, double y, double size, char anchor, const char *fill,
              const char *extra, const char *fmt, ...);
void plot_svg_line(svg *v, double x1, double y1, double x2, double y2, const char *stroke,
              double width, const char *dash);
void plot_svg_shape(svg *v, int sh, double x, double y, double r, const char *color);
void plot_svg_begin(svg *v);
/* t's width at size px in DejaVu Sans (bold or not), over-estimated by
 * SVG_WIDTH_MARGIN; a character past ASCII counts an em. */
double plot_svg_text_width(const char *t, double size, int bold);
/* t in at most maxl lines no wider than maxw: broken at seps[0] (a NULL-
 * ended list), a piece too wide alone at seps[1], and so on; the type made
 * smaller until they fit. */
void plot_svg_wrap(svg_wrapped *w, const char *t, double size, int bold, double maxw, int maxl,
              const char *const *seps);
void plot_svg_text_fit(svg *v, double x, double y, double maxw, double size, const char *fill,
                  const char *extra, const char *t);
void plot_legend_add(legend *lg, const char *color, const char *dash, int shape_, int swatch,
                double opacity, const char *fmt, ...);
void plot_legend_size(const legend *lg, double fs, double *w, double *h);
void plot_legend_draw_at(svg *v, double x, double y, double fs, const legend *lg);
void plot_legend_draw_beside(svg *v, box col, const legend *lg);

/* ---- plot_axes.c ---- */
double plot_ax_map(const axis *a, double v);
/* Ticks of an axis, at most max into t: decades (or 1-2-5 within a decade)
 * on a log axis, 1-2-5 steps on a linear one. */
int plot_ax_ticks(const axis *a, double *t, int max);
void plot_ax_fit(axis *a, double lo, double hi, int log_, double pad);
/* A count axis from 0 to at least hi (0 has a place: a log axis has none). */
void plot_ax_fit_count(axis *a, double hi);
void plot_ax_draw(svg *v, box b, const axis *ax, const axis *ay, const char *xlabel,
             const char *ylabel);
box plot_frame_content(const svg *v);
box plot_frame_part(box b, int i, int n, int cols, double gap);
/* Panels left, the legend's column right: share of the width for the
 * panels, less when lg (NULL: any) needs more, down to 55%. */
void plot_frame_split_legend(const svg *v, double share, const legend *lg, box *panels, box *leg);

/* ---- plot_series.c ---- */
long plot_series_draw(svg *v, const axis *ax, const axis *ay, const long *x, const float *y, long n,
                 long stride, const char *name, const char *color, const char *dash,
                 double width);
void plot_series_draw_points(svg *v, const axis *ax, const axis *ay, const long *x, const float *y,
                        long n, int sh, const char *color);

/* ---- plot_frame.c ---- */
void plot_frame_run_title(const plot_data *d, int r, char *b, size_t n);
void plot_frame_text(svg *v, const char *title, char *cap, size_t capn);
void plot_frame_draw(svg *v, const plot_data *d, const char *title_in);
int plot_frame_pick_steps(const plot_data *d, const plot_opts *o, int many, long *steps, long *rows,
                     char *err, size_t errlen);

/* ---- the kinds (plot_fig_*.c) ---- */
void plot_loss_panel_draw(svg *v, box b, const plot_data *d, legend *lg);
/* Run which's red ticks where a step was not finite, the first labelled
 * with what the run named. 1 when there were any. */
int plot_loss_draw_nonfinite(svg *v, box b, const axis *ax, const plot_data *d, int which);
int plot_fig_precision(svg *v, const plot_data *d, plot_kind k);
int plot_fig_change(svg *v, const plot_data *d);
/* The bars' scale shared by every run's panel (rows[r]: run r's row). */
void plot_layers_axis(const plot_data *d, const long *rows, axis *a);
void plot_layers_panel_draw(svg *v, box b, const axis *scale, const plot_run *r, long row,
                       const char *title, legend *lg);
int plot_fig_loss(svg *v, const plot_data *d);
int plot_fig_layers(svg *v, const plot_data *d, char *err, size_t errlen);
int plot_fig_profile(svg *v, const plot_data *d, char *err, size_t errlen);
int plot_fig_heatmap(svg *v, const plot_data *d);
int plot_fig_view(svg *v, const plot_data *d);
int plot_fig_map(svg *v, const plot_map *m, char *err, size_t errlen);

/* ---- plot_map_scale.c: what colors a map's cell, and how ---- */
typedef struct {
    const char *name;    /* --metric NAME */
    const char *title;   /* the figure's title after "Stability map: " (NULL: the loss's own) */
    const char *bar;     /* over the color bar: the metric and its unit */
    const char *none;    /* the legend of a cell without a value */
    const char *reads;   /* the caption: the metric, its unit, which end is better (NULL: none) */
    const char *better;  /* under the color bar's title: which end is better (NULL: neither) */
    size_t stat;         /* offsetof its sweep_stat in a cell; the share reads counts */
    int at_end;          /* a value at a run's end: an exploded run's is off the scale */
    int share;           /* the share of runs stalled: 0..1 by default */
    int sig;             /* printed in significant digits (0.000667), not decimals */
} map_metric;

typedef struct {
    double x;    /* the cell's value, NaN: none */
    double sd;   /* the seeds' standard deviation, NaN: fewer than 2 */
    double ci;   /* the half-width of the mean's 95% interval, NaN: fewer than 2 */
    int n;       /* the runs it is over */
} map_value;

typedef struct {
    const map_metric *mt;
    double lo, hi;  /* the scale's ends */
    int continuous; /* a smooth gradient, not MAP_BINS bins */
} map_scale;

map_value plot_map_cell_value(const map_metric *mt, const plot_map_cell *c);
/* x in at most width characters, as the metric is printed. */
void plot_map_fmt(const map_metric *mt, char *buf, size_t n, double x, int width);
/* The scale of o's metric over m's cells (--vmin/--vmax apart). */
void plot_map_scale_make(map_scale *s, const plot_map *m, const plot_opts *o);
/* The bin of x on the scale (the ends' beyond them). */
int plot_map_bin(const map_scale *s, double x);
/* The fill of a finite x into buf[8] (its bin's, or the gradient's at x);
 * 1 when type on it should be light. */
int plot_map_fill(const svg *v, const map_scale *s, double x, char *buf);
/* The color bar and the marks' legend, in the column b. */
void plot_map_colorbar(svg *v, const map_scale *s, box b);

#endif
