/* plot.c - draw a figure for a slide as SVG, written by the program itself.
 *
 * Kinds: the loss (train and validation, both runs of a comparison, a
 * marker where a setting changed, the rows a rewind abandoned grey), the
 * per-layer gradient norms at one step as bars (output at the top, log
 * axis, as the live view shows them), the MLP and attention gradient norms
 * against depth at chosen steps (the picture of Xiong et al. 2020, "On
 * Layer Normalization in the Transformer Architecture", Fig. 3), a layers x
 * steps heatmap on a viridis ramp, the live view's chart + each run's
 * layer panel (g), and a sweep's grid as a map of cells colored by final
 * loss. A comparison's panels are titled by what their runs differ in.
 *
 * Sized for a slide (1600x900 by default), type >= 20 px at 1600 wide, the
 * live view's colors on its dark ground; --mono is black on white with
 * dashes and marker shapes instead of colors. Non-finite values are gaps in
 * a line (a new subpath), never a point at NaN; more rows than pixels are
 * reduced to each pixel column's minimum and maximum, so the file stays
 * small whatever the run's length.
 *
 * Not here: reading the rows (plot_data.c) and a sweep's results
 * (plot_map.c), the temp-file + rename
 * (atomicio.c), the terminal (tui_*.c).
 */
#include "plot.h"

#include "atomicio.h"
#include "scale.h"
#include "sweep_map.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

enum { MAP_BINS = 9 };

typedef struct {
    const char *bg, *fg, *grid, *dim, *train, *val, *twin, *twin_val, *mark;
    const char *normal, *vanish, *explode, *nan;
    const char *heat[7];
    const char *step[PLOT_MAX_STEPS];
    const char *map[MAP_BINS]; /* a map's loss scale, its low end first */
    int map_dark;              /* bins from here on get light type */
} palette;

/* The live view's curses colors (tui_curses.c), as a terminal shows them. */
static const palette pal_screen = {
    "#121417", "#e6e6e6", "#33383d", "#9aa0a6", "#2ec4d6", "#e05ad8", "#5fd35f", "#b7f29b",
    "#f0c419", "#4caf50", "#5c7cfa", "#ff4d4d", "#ff4d4d",
    /* viridis (van der Walt and Smith 2015) at 7 even steps: lightness rises
     * with the value, so the order reads in any color vision and in grey */
    {"#440154", "#443983", "#31688e", "#21918c", "#35b779", "#90d743", "#fde725"},
    {"#2ec4d6", "#f0c419", "#e05ad8", "#5fd35f", "#ff4d4d", "#5c7cfa", "#e6e6e6", "#ff922b"},
    /* viridis, bright for a low loss */
    {"#fde725", "#addc30", "#5ec962", "#28ae80", "#21918c", "#2c728e", "#3b528b", "#472d7b",
     "#440154"},
    5};
static const palette pal_mono = {
    "#ffffff", "#000000", "#d0d0d0", "#555555", "#000000", "#000000", "#000000", "#000000",
    "#000000", "#000000", "#000000", "#000000", "#000000",
    {"#f4f4f4", "#d9d9d9", "#bdbdbd", "#969696", "#737373", "#4d4d4d", "#252525"},
    {"#000000", "#000000", "#000000", "#000000", "#000000", "#000000", "#000000", "#000000"},
    {"#ffffff", "#eeeeee", "#dddddd", "#cccccc", "#bbbbbb", "#aaaaaa", "#888888", "#666666",
     "#444444"},
    6};
/* --mono: series told apart by dashes and marker shapes */
static const char *const mono_dash[] = {"", "14 7", "4 5", "14 5 3 5", "24 6", "2 3", "8 3 8 9",
                                        "18 4 4 4 4 4"};
enum { SH_NONE, SH_CIRCLE, SH_SQUARE, SH_TRIANGLE, SH_DIAMOND, SH_TRIANGLE_DOWN };

typedef struct {
    FILE *f;
    const plot_opts *o;
    const palette *p;
    double s;               /* W / 1600 */
    double fs, fs_small;    /* body and caption type, px */
} svg;

typedef struct {
    double x, y, w, h;
} box;

/* lo, hi in data units (log10 of them on a log axis), drawn from p0 to p1 */
typedef struct {
    double lo, hi;
    int log;
    double p0, p1;
    int integer; /* ticks on whole numbers only (layers) */
} axis;

typedef struct {
    char text[96];
    const char *color, *dash;
    int shape;
    int swatch; /* a filled box instead of a line */
    double opacity;
} legend_entry;

enum { LEGEND_MAX = 24 };
typedef struct {
    legend_entry e[LEGEND_MAX];
    int n;
} legend;

/* ---- SVG primitives -------------------------------------------------------------- */

static void esc(FILE *f, const char *t)
{
    for (; *t; t++) {
        switch (*t) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        default:
            if ((unsigned char)*t >= 0x20 || *t == '\t')
                fputc(*t, f);
        }
    }
}

/* anchor: 's'tart, 'm'iddle, 'e'nd */
static void text(svg *v, double x, double y, double size, char anchor, const char *fill,
                 const char *extra, const char *fmt, ...)
{
    char b[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b, sizeof b, fmt, ap);
    va_end(ap);
    fprintf(v->f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%.1f\" fill=\"%s\" text-anchor=\"%s\"%s%s>",
            x, y, size, fill, anchor == 'm' ? "middle" : anchor == 'e' ? "end" : "start",
            extra ? " " : "", extra ? extra : "");
    esc(v->f, b);
    fputs("</text>\n", v->f);
}

static void line(svg *v, double x1, double y1, double x2, double y2, const char *stroke,
                 double width, const char *dash)
{
    fprintf(v->f,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"%.1f\"",
            x1, y1, x2, y2, stroke, width);
    if (dash && dash[0])
        fprintf(v->f, " stroke-dasharray=\"%s\"", dash);
    fputs("/>\n", v->f);
}

static void shape(svg *v, int sh, double x, double y, double r, const char *color)
{
    const char *fill = v->o->mono ? v->p->bg : color;
    switch (sh) {
    case SH_CIRCLE:
        fprintf(v->f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" fill=\"%s\" stroke=\"%s\" stroke-width=\"2\"/>\n",
                x, y, r, fill, color);
        break;
    case SH_SQUARE:
        fprintf(v->f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" stroke=\"%s\" stroke-width=\"2\"/>\n",
                x - r, y - r, 2 * r, 2 * r, fill, color);
        break;
    case SH_TRIANGLE:
    case SH_TRIANGLE_DOWN:
    case SH_DIAMOND:
        if (sh != SH_DIAMOND) {
            double k = sh == SH_TRIANGLE ? 1 : -1;
            fprintf(v->f, "<path d=\"M%.1f %.1fL%.1f %.1fL%.1f %.1fZ\"", x, y - k * r, x + r, y + k * r,
                    x - r, y + k * r);
        }
        else
            fprintf(v->f, "<path d=\"M%.1f %.1fL%.1f %.1fL%.1f %.1fL%.1f %.1fZ\"", x, y - r, x + r, y, x,
                    y + r, x - r, y);
        fprintf(v->f, " fill=\"%s\" stroke=\"%s\" stroke-width=\"2\"/>\n", fill, color);
        break;
    default:
        break;
    }
}

static void svg_begin(svg *v)
{
    const plot_opts *o = v->o;
    fprintf(v->f,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "viewBox=\"0 0 %d %d\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n"
            "<defs><pattern id=\"nan\" width=\"10\" height=\"10\" patternUnits=\"userSpaceOnUse\">"
            "<rect width=\"10\" height=\"10\" fill=\"%s\"/><path d=\"M0 10L10 0\" stroke=\"%s\" "
            "stroke-width=\"3\"/></pattern>"
            /* a map's exploded cell: off the loss scale, cross-hatched */
            "<pattern id=\"exploded\" width=\"12\" height=\"12\" patternUnits=\"userSpaceOnUse\">"
            "<rect width=\"12\" height=\"12\" fill=\"%s\"/><path d=\"M0 12L12 0M0 0L12 12\" "
            "stroke=\"%s\" stroke-width=\"2\"/></pattern></defs>\n"
            "<rect class=\"background\" width=\"%d\" height=\"%d\" fill=\"%s\"/>\n",
            o->w, o->h, o->w, o->h, v->p->bg, v->p->nan, v->p->bg, v->p->explode, o->w, o->h,
            v->p->bg);
}

/* Text of at most maxw pixels: the type made smaller for a long one. */
static void text_fit(svg *v, double x, double y, double maxw, double size, const char *fill,
                     const char *extra, const char *t)
{
    double fit = maxw / (0.56 * (double)(strlen(t) > 0 ? strlen(t) : 1));
    text(v, x, y, fit < size ? fit : size, 's', fill, extra, "%s", t);
}

/* ---- axes ------------------------------------------------------------------------ */

static double ax_map(const axis *a, double v)
{
    if (a->log)
        v = v > 0 ? log10(v) : a->lo - 1;
    double t = a->hi > a->lo ? (v - a->lo) / (a->hi - a->lo) : 0.5;
    return a->p0 + t * (a->p1 - a->p0);
}

static double nice_step(double span)
{
    double raw = span / 5, mag = pow(10, floor(log10(raw))), n = raw / mag;
    return (n < 1.5 ? 1 : n < 3.5 ? 2 : n < 7.5 ? 5 : 10) * mag;
}

/* Fit lo..hi (data units) to the axis: a margin on a linear one, whole
 * decades on a log one; a single value gets a span around it. */
static void ax_fit(axis *a, double lo, double hi, int log_, double pad)
{
    a->log = log_;
    if (!(lo <= hi)) {
        lo = log_ ? 0.1 : 0;
        hi = log_ ? 10 : 1;
    }
    if (log_) {
        lo = log10(lo);
        hi = log10(hi);
        if (hi - lo < 0.3) {
            lo -= 0.15;
            hi += 0.15;
        }
    } else if (hi - lo < 1e-12 * (fabs(lo) + 1)) {
        lo -= fabs(lo) * 0.1 + 1;
        hi += fabs(hi) * 0.1 + 1;
    }
    double m = (hi - lo) * pad;
    a->lo = lo - m;
    a->hi = hi + m;
}

/* A log axis spanning enough decades to be ticked at whole ones; a
 * shorter one gets 1-2-5 ticks (two decade ticks or fewer say little). */
static int ax_decades(const axis *a) { return a->log && a->hi - a->lo >= 1.5; }

/* The decade label "10^k" with a raised exponent. */
static void decade_label(svg *v, double x, double y, char anchor, int k)
{
    char extra[160];
    snprintf(extra, sizeof extra, "class=\"tick\"");
    fprintf(v->f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%.1f\" fill=\"%s\" text-anchor=\"%s\" %s>10"
                  "<tspan dy=\"-0.45em\" font-size=\"75%%\">%d</tspan></text>\n",
            x, y, v->fs, v->p->fg, anchor == 'm' ? "middle" : "end", extra, k);
}

/* Ticks of an axis: decades (or 1-2-5 within a decade) on a log axis,
 * 1-2-5 steps on a linear one. Calls out for each. */
static int ax_ticks(const axis *a, double *t, int max)
{
    int n = 0;
    if (ax_decades(a)) {
        int step = (int)ceil((a->hi - a->lo) / 10);
        for (int k = (int)ceil(a->lo); k <= (int)floor(a->hi) && n < max; k += step)
            t[n++] = k;
        return n;
    }
    double lo = a->log ? pow(10, a->lo) : a->lo, hi = a->log ? pow(10, a->hi) : a->hi;
    double st = nice_step(hi - lo);
    if (a->integer && st < 1)
        st = 1;
    for (double x = ceil(lo / st) * st; x <= hi + st * 1e-9 && n < max; x += st)
        t[n++] = fabs(x) < st * 1e-9 ? 0 : x;
    return n;
}

static void ax_tick_label(svg *v, const axis *a, double t, double x, double y, char anchor)
{
    if (ax_decades(a))
        decade_label(v, x, y, anchor, (int)t);
    else
        text(v, x, y, v->fs, anchor, v->p->fg, "class=\"tick\"", "%g", t);
}

static double ax_tick_pos(const axis *a, double t)
{
    return ax_decades(a) ? ax_map(a, pow(10, t)) : ax_map(a, t);
}

/* Frame, grid lines, tick labels and axis titles of one panel. */
static void draw_axes(svg *v, box b, const axis *ax, const axis *ay, const char *xlabel,
                      const char *ylabel)
{
    double t[16];
    fprintf(v->f,
            "<rect class=\"plot-area\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
            "fill=\"none\" stroke=\"%s\" stroke-width=\"2\"",
            b.x, b.y, b.w, b.h, v->p->dim);
    if (ax && !ax->log)
        fprintf(v->f, " data-x0=\"%.9g\" data-x1=\"%.9g\"", ax->lo, ax->hi);
    fputs("/>\n", v->f);
    int n = ax ? ax_ticks(ax, t, 16) : 0;
    for (int i = 0; i < n; i++) {
        double x = ax_tick_pos(ax, t[i]);
        line(v, x, b.y, x, b.y + b.h, v->p->grid, 1, NULL);
        ax_tick_label(v, ax, t[i], x, b.y + b.h + v->fs * 1.2, 'm');
    }
    n = ay ? ax_ticks(ay, t, 16) : 0;
    for (int i = 0; i < n; i++) {
        double y = ax_tick_pos(ay, t[i]);
        line(v, b.x, y, b.x + b.w, y, v->p->grid, 1, NULL);
        ax_tick_label(v, ay, t[i], b.x - v->fs * 0.4, y + v->fs * 0.35, 'e');
    }
    if (xlabel)
        text(v, b.x + b.w / 2, b.y + b.h + v->fs * 2.5, v->fs, 'm', v->p->fg, "class=\"axis-label\"",
             "%s", xlabel);
    if (ylabel) {
        char rot[96];
        double x = b.x - v->fs * 3.2, y = b.y + b.h / 2;
        snprintf(rot, sizeof rot, "class=\"axis-label\" transform=\"rotate(-90 %.1f %.1f)\"", x, y);
        double fit = b.h / (0.56 * (double)strlen(ylabel)); /* along a short panel's side */
        text(v, x, y, fit < v->fs ? fit : v->fs, 'm', v->p->fg, rot, "%s", ylabel);
    }
}

/* ---- legend ---------------------------------------------------------------------- */

static void legend_add(legend *lg, const char *color, const char *dash, int shape_, int swatch,
                       double opacity, const char *fmt, ...)
{
    if (lg->n >= LEGEND_MAX)
        return;
    legend_entry *e = &lg->e[lg->n++];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->text, sizeof e->text, fmt, ap);
    va_end(ap);
    e->color = color;
    e->dash = dash;
    e->shape = shape_;
    e->swatch = swatch;
    e->opacity = opacity;
}

/* A legend's box at type size fs: w, h. */
static void legend_size(const legend *lg, double fs, double *w, double *h)
{
    size_t longest = 0;
    for (int i = 0; i < lg->n; i++)
        if (strlen(lg->e[i].text) > longest)
            longest = strlen(lg->e[i].text);
    *w = fs * 2.2 + fs * 0.8 + (double)longest * fs * 0.56 + fs;
    *h = fs * 1.35 * lg->n + fs * 0.6;
}

/* The legend with its box's top left at x, y, type size fs, on a box that
 * hides the grid. */
static void draw_legend_at(svg *v, double x, double y, double fs, const legend *lg)
{
    double rowh = fs * 1.35, sw = fs * 2.2, w, h;
    legend_size(lg, fs, &w, &h);
    fprintf(v->f, "<g class=\"legend\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                  "fill=\"%s\" fill-opacity=\"0.85\" stroke=\"%s\"/>\n",
            x, y, w, h, v->p->bg, v->p->dim);
    for (int i = 0; i < lg->n; i++) {
        const legend_entry *e = &lg->e[i];
        double cy = y + fs * 0.3 + rowh * (i + 0.5), lx = x + fs * 0.5;
        if (e->swatch)
            fprintf(v->f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" "
                          "fill-opacity=\"%.2f\" stroke=\"%s\"/>\n",
                    lx, cy - fs * 0.4, sw, fs * 0.8, e->color, e->opacity, v->p->fg);
        else
            line(v, lx, cy, lx + sw, cy, e->color, 3 * v->s, e->dash);
        shape(v, e->shape, lx + sw / 2, cy, fs * 0.25, e->color);
        text(v, lx + sw + fs * 0.5, cy + fs * 0.35, fs, 's', v->p->fg, NULL, "%s", e->text);
    }
    fputs("</g>\n", v->f);
}

/* In a column of its own beside the panels (col): its left edge at the
 * column's, the type made smaller when the longest entry would reach past
 * the column (over a panel, or off the canvas). */
static void draw_legend_beside(svg *v, box col, const legend *lg)
{
    if (lg->n == 0)
        return;
    double fs = v->fs, w, h;
    legend_size(lg, fs, &w, &h);
    if (w > col.w)
        fs *= col.w / w;
    draw_legend_at(v, col.x, col.y + v->fs * 0.5, fs, lg);
}

/* ---- a line series, with gaps and decimation -------------------------------------- */

typedef struct {
    svg *v;
    const axis *ax, *ay;
    int pen;             /* a subpath is open */
    long px;             /* the pixel column being reduced */
    int have;            /* the bucket holds a point */
    double xmin_, ymin, xmax_, ymax; /* its extremes, in order of arrival */
    int min_first;
    long points;
} series;

static void series_point(series *s, double x, double y)
{
    fprintf(s->v->f, "%c%.1f %.1f", s->pen ? 'L' : 'M', ax_map(s->ax, x), ax_map(s->ay, y));
    s->pen = 1;
    s->points++;
}

/* A pixel column's points: its minimum and maximum, in the order they came. */
static void series_flush(series *s)
{
    if (!s->have)
        return;
    double x1 = s->min_first ? s->xmin_ : s->xmax_, y1 = s->min_first ? s->ymin : s->ymax;
    double x2 = s->min_first ? s->xmax_ : s->xmin_, y2 = s->min_first ? s->ymax : s->ymin;
    series_point(s, x1, y1);
    if (y2 != y1 || x2 != x1)
        series_point(s, x2, y2);
    s->have = 0;
}

/* x, y of n rows (y with a stride). NaN and inf break the line; -inf means
 * "not measured" (a validation loss between measurements) and is skipped;
 * a step that goes back (a rewind) starts a new subpath. */
static long draw_series(svg *v, const axis *ax, const axis *ay, const long *x, const float *y,
                        long n, long stride, const char *name, const char *color, const char *dash,
                        double width)
{
    series s = {.v = v, .ax = ax, .ay = ay, .px = -1};
    fprintf(v->f, "<path class=\"series\" data-name=\"");
    esc(v->f, name);
    fprintf(v->f, "\" fill=\"none\" stroke=\"%s\" stroke-width=\"%.1f\" stroke-linejoin=\"round\"", color,
            width);
    if (dash && dash[0])
        fprintf(v->f, " stroke-dasharray=\"%s\"", dash);
    fputs(" d=\"", v->f);
    long prev = 0;
    int started = 0;
    for (long i = 0; i < n; i++) {
        double yy = y[i * stride];
        if (isinf(yy) && yy < 0)
            continue;
        if (started && x[i] <= prev) { /* a rewind */
            series_flush(&s);
            s.pen = 0;
        }
        prev = x[i];
        started = 1;
        if (!isfinite(yy) || (ay->log && yy <= 0)) {
            series_flush(&s);
            s.pen = 0;
            continue;
        }
        long px = (long)floor(ax_map(ax, (double)x[i]));
        if (px != s.px || !s.have) {
            series_flush(&s);
            s.px = px;
            s.have = 1;
            s.xmin_ = s.xmax_ = (double)x[i];
            s.ymin = s.ymax = yy;
            s.min_first = 1;
            continue;
        }
        if (yy < s.ymin) {
            s.ymin = yy;
            s.xmin_ = (double)x[i];
            s.min_first = 0;
        }
        if (yy > s.ymax) {
            s.ymax = yy;
            s.xmax_ = (double)x[i];
            s.min_first = 1;
        }
    }
    series_flush(&s);
    fprintf(v->f, "\" data-points=\"%ld\"/>\n", s.points);
    return s.points;
}

/* Marker shapes on the measured points of a sparse series (validation). */
static void draw_points(svg *v, const axis *ax, const axis *ay, const long *x, const float *y,
                        long n, int sh, const char *color)
{
    long count = 0;
    for (long i = 0; i < n; i++)
        count += isfinite(y[i]) && (!ay->log || y[i] > 0);
    if (count > 200 || sh == SH_NONE)
        return;
    for (long i = 0; i < n; i++)
        if (isfinite(y[i]) && (!ay->log || y[i] > 0))
            shape(v, sh, ax_map(ax, (double)x[i]), ax_map(ay, y[i]), v->fs * 0.22, color);
}

/* ---- captions -------------------------------------------------------------------- */

/* Setting k as the run had it: "on", or "off \u2192 on" when the last row's
 * differs from the first's (a change by key or script, a rewind's replay). */
static const char *run_setting(const plot_run *r, int k, char *b, size_t n)
{
    if (strcmp(r->set[k], r->cur[k]))
        snprintf(b, n, "%s \xe2\x86\x92 %s", r->set[k], r->cur[k]);
    else
        snprintf(b, n, "%s", r->set[k]);
    return b;
}

/* "pre layernorm, warmup off -> on, clip 0, fp32, 6 layers" */
static void run_settings(const plot_run *r, char *b, size_t n)
{
    if (!r->have_set) {
        snprintf(b, n, "%d layers", r->L);
        return;
    }
    char s[PLOT_NSET][2 * PLOT_SETLEN + 8];
    for (int k = 0; k < PLOT_NSET; k++)
        run_setting(r, k, s[k], sizeof s[k]);
    snprintf(b, n, "%s %s, warmup %s, clip %s, %s%s, %d layers", s[0], s[1], s[2], s[3], s[4],
             strcmp(r->cur[4], "fp32") ? (strcmp(r->cur[5], "on") ? " (norms too)" : " (fp32 norms)")
                                       : "",
             r->L);
}

/* A comparison's panel title: the run and the settings it differs in, or
 * that the file does not say what they are. */
static void run_title(const plot_data *d, int r, char *b, size_t n)
{
    if (d->nruns < 2)
        snprintf(b, n, "%s", "");
    else if (d->unnamed)
        snprintf(b, n, "%s: differs from %s in a setting the file does not record", r ? "b" : "a",
                 r ? "a" : "b");
    else
        snprintf(b, n, "%s", d->run[r].label);
}

/* The title at the top and the caption line at the bottom (cap, with the
 * source file's name added, shrunk to the width when long). */
static void frame_text(svg *v, const char *title, char *cap, size_t capn)
{
    const plot_opts *o = v->o;
    text(v, o->w / 2.0, v->fs * 1.9, v->fs * 1.35, 'm', v->p->fg, "class=\"title\" font-weight=\"bold\"",
         "%s", title);
    if (o->source) { /* the file's name: its directory says nothing on a slide */
        const char *base = strrchr(o->source, '/');
        size_t used = strlen(cap);
        snprintf(cap + used, capn - used, "  |  %s", base && base[1] ? base + 1 : o->source);
    }
    double size = v->fs_small, fit = o->w * 0.96 / (0.55 * (double)strlen(cap));
    if (fit < size)
        size = fit;
    text(v, o->w / 2.0, o->h - v->fs * 0.7, size, 'm', v->p->dim, "class=\"caption\"", "%s", cap);
}

/* A comparison's title says what the runs differ in, when the file
 * names it and it fits a slide's line: "...: ln-gamma-init=0 against
 * ln-gamma-init=1". */
static void frame_title(const plot_data *d, const char *title, char *t, size_t n)
{
    snprintf(t, n, "%s", title);
    if (d->nruns < 2 || d->unnamed)
        return;
    const char *a = strchr(d->run[0].label, ':'), *b = strchr(d->run[1].label, ':');
    if (!a || !b || strlen(title) + strlen(a) + strlen(b) + 8 > 90)
        return;
    snprintf(t, n, "%s: %s against %s", title, a + 2, b + 2);
}

static void draw_frame(svg *v, const plot_data *d, const char *title_in)
{
    char cap[1200], a[400], b[400], title[256];
    frame_title(d, title_in, title, sizeof title);
    run_settings(&d->run[0], a, sizeof a);
    if (d->nruns > 1) {
        run_settings(&d->run[1], b, sizeof b);
        const char *sep = d->unnamed ? ": " : "; "; /* "a: norm=post; post layernorm, ..." */
        snprintf(cap, sizeof cap, "%s%s%s  |  %s%s%s%s", d->run[0].label, sep, a, d->run[1].label, sep, b,
                 d->unnamed ? "  |  the setting a and b differ in is not in the file" : "");
    } else {
        snprintf(cap, sizeof cap, "%s", a);
    }
    frame_text(v, title, cap, sizeof cap);
}

/* ---- the loss -------------------------------------------------------------------- */

static void loss_range(const plot_data *d, int logy, long *x0, long *x1, double *y0, double *y1)
{
    *x0 = 0;
    *x1 = 1;
    *y0 = INFINITY;
    *y1 = -INFINITY;
    int first = 1;
    for (int r = 0; r < d->nruns; r++) {
        const plot_run *p = &d->run[r];
        for (long i = 0; i < p->n; i++) {
            if (first || p->step[i] < *x0)
                *x0 = p->step[i];
            if (first || p->step[i] > *x1)
                *x1 = p->step[i];
            first = 0;
            float ys[2] = {p->loss[i], p->val[i]};
            for (int k = 0; k < 2; k++)
                if (isfinite(ys[k]) && (!logy || ys[k] > 0)) {
                    *y0 = fmin(*y0, ys[k]);
                    *y1 = fmax(*y1, ys[k]);
                }
        }
        for (long i = 0; i < d->ghost_n; i++) { /* the curve a rewind left: in range */
            float y = d->ghost_loss[r][i];
            if (d->ghost_step[i] > *x1)
                *x1 = d->ghost_step[i];
            if (isfinite(y) && (!logy || y > 0)) {
                *y0 = fmin(*y0, y);
                *y1 = fmax(*y1, y);
            }
        }
    }
}

/* Is the same change marked at the same step in run r? (A setting sent to
 * both runs of a comparison is marked once.) */
static int mark_in(const plot_run *r, const plot_mark *m)
{
    for (int i = 0; i < r->nmark; i++)
        if (r->mark[i].step == m->step && !strcmp(r->mark[i].text, m->text))
            return 1;
    return 0;
}

/* A dashed vertical line at each marked step, its label in the first of
 * three rows (above the panel, then inside its top) where it overlaps no
 * earlier label. */
static void draw_marks(svg *v, box b, const axis *ax, const plot_data *d, int which, double *ends)
{
    const plot_run *r = &d->run[which], *other = &d->run[!which];
    for (int i = 0; i < r->nmark; i++) {
        const plot_mark *m = &r->mark[i];
        int shared = d->nruns > 1 && mark_in(other, m);
        if (which && shared)
            continue;
        char label[PLOT_MARKLEN + 8];
        snprintf(label, sizeof label, "%s%s", d->nruns > 1 && !shared ? (which ? "b: " : "a: ") : "",
                 m->text);
        double x = ax_map(ax, (double)m->step), w = 0.56 * v->fs_small * (double)strlen(label);
        double x0 = x + w + v->fs * 0.3 > b.x + b.w ? x - w - v->fs * 0.25 : x + v->fs * 0.25;
        int row = 0;
        while (row < 2 && x0 < ends[row] + v->fs * 0.5)
            row++;
        ends[row] = x0 + w;
        fprintf(v->f, "<g class=\"marker\" data-step=\"%ld\">", m->step);
        line(v, x, b.y, x, b.y + b.h, v->p->mark, 2 * v->s, "6 5");
        text(v, x0, row ? b.y + v->fs * 1.25 * row : b.y - v->fs * 0.35, v->fs_small, 's', v->p->mark,
             "class=\"marker-label\"", "%s", label);
        fputs("</g>\n", v->f);
    }
}

/* A red tick at each pixel column where the train loss was not finite or
 * the row's state says the step diverged (a non-finite inside the step,
 * such as a norm's variance, can leave the loss finite): the gap in the
 * line says where, this says why, and the first divergence is labelled
 * with the operation the run named. Run a's stand on the bottom edge, a
 * comparison's run b's hang from the top one. */
static int draw_nonfinite(svg *v, box b, const axis *ax, const plot_data *d, int which)
{
    const plot_run *r = &d->run[which];
    long last_px = -1;
    int any = 0;
    if (r->fault[0]) {
        char what[80];
        snprintf(what, sizeof what, "%s", r->fault);
        for (char *c = what; *c; c++)
            *c = *c == ';' ? ',' : *c; /* a CSV field spells its commas so */
        double x = ax_map(ax, (double)r->fault_step), y = which ? b.y + v->fs * 1.5 : b.y + b.h - v->fs * 0.9;
        int right = x > b.x + b.w / 2;
        text(v, right ? x - v->fs * 0.5 : x + v->fs * 0.5, y, v->fs_small, right ? 'e' : 's', v->p->explode,
             "class=\"nonfinite-label\"", "%s%sdiverged at step %ld: %s", d->nruns > 1 ? (which ? "b" : "a") : "",
             d->nruns > 1 ? " " : "", r->fault_step, what);
    }
    for (long i = 0; i < r->n; i++) {
        if (isfinite(r->loss[i]) && !r->bad[i])
            continue;
        double x = ax_map(ax, (double)r->step[i]);
        if ((long)x == last_px)
            continue;
        last_px = (long)x;
        any = 1;
        double base = which ? b.y + 1 : b.y + b.h - 1, tip = which ? b.y + v->fs * 0.6 : b.y + b.h - v->fs * 0.6;
        fprintf(v->f, "<path class=\"nonfinite\" data-run=\"%d\" data-step=\"%ld\" "
                      "d=\"M%.1f %.1fL%.1f %.1fL%.1f %.1fZ\" fill=\"%s\"/>\n",
                which, r->step[i], x, tip, x - v->fs * 0.3, base, x + v->fs * 0.3, base, v->p->explode);
    }
    return any;
}

/* The abandoned curves are grey, a's and b's told apart by their dashes. */
static const char *const ghost_dash[2] = {"8 6", "2 4"};

static void ghost_legend(legend *lg, svg *v, const plot_data *d, int r)
{
    if (d->nruns > 1)
        legend_add(lg, v->p->dim, ghost_dash[r], SH_NONE, 0, 1, "before the rewind: %s",
                   d->run[r].label);
    else
        legend_add(lg, v->p->dim, ghost_dash[r], SH_NONE, 0, 1, "before the rewind");
}

/* The curve the latest rewind abandoned (a live view's figure), dashed
 * grey under the replay, as the live chart keeps it. */
static void draw_ghost(svg *v, const axis *ax, const axis *ay, const plot_data *d, legend *lg)
{
    if (d->ghost_n <= 0)
        return;
    for (int r = 0; r < d->nruns; r++) {
        char name[96];
        snprintf(name, sizeof name, "before the rewind: train loss%s%s", d->nruns > 1 ? " " : "",
                 d->nruns > 1 ? d->run[r].label : "");
        if (draw_series(v, ax, ay, d->ghost_step, d->ghost_loss[r], d->ghost_n, 1, name, v->p->dim,
                        ghost_dash[r], 2 * v->s) > 0)
            ghost_legend(lg, v, d, r);
    }
}

/* y of run p's rows on the timeline it ended on (live 1) or of the rows a
 * rewind abandoned (live 0), the others -inf (skipped, as a validation
 * loss not measured). NULL when out of memory. */
static float *timeline_rows(const plot_run *p, const float *y, int live)
{
    float *m = malloc(sizeof(float) * (size_t)(p->n > 0 ? p->n : 1));
    for (long i = 0; m && i < p->n; i++)
        m[i] = p->live[i] == live ? y[i] : -INFINITY;
    return m;
}

/* The train loss of the rows a rewind abandoned (read from a file: the
 * steps before a step that went back), dashed grey as the live chart
 * keeps them, under the replay. */
static void draw_abandoned(svg *v, const axis *ax, const axis *ay, const plot_data *d, int r,
                           legend *lg)
{
    const plot_run *p = &d->run[r];
    if (p->abandoned == 0)
        return;
    float *y = timeline_rows(p, p->loss, 0);
    if (!y)
        return;
    char name[96];
    snprintf(name, sizeof name, "before the rewind: train loss%s%s", d->nruns > 1 ? " " : "",
             d->nruns > 1 ? p->label : "");
    long drawn = draw_series(v, ax, ay, p->step, y, p->n, 1, name, v->p->dim, ghost_dash[r], 2 * v->s);
    if (drawn > 0 && drawn < 5) /* a point or two: no line to see, so marked */
        draw_points(v, ax, ay, p->step, y, p->n, SH_CIRCLE, v->p->dim);
    if (drawn > 0)
        ghost_legend(lg, v, d, r);
    free(y);
}

/* Points of the loss lines inside the box (x0, y0, w, h). */
static long loss_points_in(const plot_data *d, const axis *ax, const axis *ay, double x0, double y0,
                           double w, double h)
{
    long n = 0;
    for (int r = 0; r < d->nruns; r++)
        for (long i = 0; i < d->run[r].n; i++) {
            const plot_run *p = &d->run[r];
            float ys[2] = {p->loss[i], p->val[i]};
            for (int k = 0; k < 2; k++) {
                if (!isfinite(ys[k]))
                    continue;
                double x = ax_map(ax, (double)p->step[i]), y = ax_map(ay, ys[k]);
                n += x >= x0 && x <= x0 + w && y >= y0 && y <= y0 + h;
            }
        }
    return n;
}

/* The loss panel's legend in the corner that hides the fewest points
 * (top right on a tie: a loss falls, so that corner is mostly empty). */
static void draw_loss_legend(svg *v, box b, const plot_data *d, const axis *ax, const axis *ay,
                             const legend *lg)
{
    if (lg->n == 0)
        return;
    double w, h, m = v->fs * 0.5, fs = v->fs;
    legend_size(lg, fs, &w, &h);
    if (w > b.w - 2 * m) { /* long run labels: smaller type, never past the panel */
        fs *= (b.w - 2 * m) / w;
        legend_size(lg, fs, &w, &h);
    }
    double xs[4] = {b.x + b.w - w - m, b.x + m, b.x + b.w - w - m, b.x + m};
    double ys[4] = {b.y + m, b.y + m, b.y + b.h - h - m, b.y + b.h - h - m};
    int best = 0;
    long least = -1;
    for (int c = 0; c < 4; c++) {
        long n = loss_points_in(d, ax, ay, xs[c], ys[c], w, h);
        if (least < 0 || n < least) {
            least = n;
            best = c;
        }
    }
    draw_legend_at(v, xs[best], ys[best], fs, lg);
}

static void draw_loss_panel(svg *v, box b, const plot_data *d, legend *lg)
{
    long x0, x1;
    double y0, y1;
    loss_range(d, v->o->logy, &x0, &x1, &y0, &y1);
    axis ax = {.p0 = b.x, .p1 = b.x + b.w}, ay = {.p0 = b.y + b.h, .p1 = b.y};
    ax_fit(&ax, (double)x0, (double)x1, 0, 0);
    ax_fit(&ay, y0, y1, v->o->logy, 0.05);
    draw_axes(v, b, &ax, &ay, "step (optimizer updates)",
              v->o->logy ? "loss (nats, log scale)" : "loss (nats per byte)");
    draw_ghost(v, &ax, &ay, d, lg);
    for (int r = 0; r < d->nruns; r++)
        draw_abandoned(v, &ax, &ay, d, r, lg);
    for (int r = 0; r < d->nruns; r++) {
        const plot_run *p = &d->run[r];
        const char *tc = r ? v->p->twin : v->p->train, *vc = r ? v->p->twin_val : v->p->val;
        const char *td = v->o->mono ? mono_dash[r * 2] : "", *vd = v->o->mono ? mono_dash[r * 2 + 1] : "";
        const char *who = d->nruns > 1 ? p->label : "";
        float *loss = p->abandoned ? timeline_rows(p, p->loss, 1) : NULL;
        float *val = p->abandoned ? timeline_rows(p, p->val, 1) : NULL;
        char name[96];
        snprintf(name, sizeof name, "train loss%s%s", who[0] ? " " : "", who);
        draw_series(v, &ax, &ay, p->step, loss ? loss : p->loss, p->n, 1, name, tc, td, 2.5 * v->s);
        legend_add(lg, tc, td, SH_NONE, 0, 1, "%s", name);
        if (p->has_val) {
            snprintf(name, sizeof name, "validation loss%s%s", who[0] ? " " : "", who);
            if (draw_series(v, &ax, &ay, p->step, val ? val : p->val, p->n, 1, name, vc, vd, 3 * v->s) > 0)
                legend_add(lg, vc, vd, r ? SH_SQUARE : SH_CIRCLE, 0, 1, "%s", name);
            draw_points(v, &ax, &ay, p->step, val ? val : p->val, p->n, r ? SH_SQUARE : SH_CIRCLE, vc);
        }
        free(loss);
        free(val);
    }
    for (int r = 0; r < d->nruns; r++)
        if (draw_nonfinite(v, b, &ax, d, r))
            legend_add(lg, v->p->explode, NULL, r ? SH_TRIANGLE_DOWN : SH_TRIANGLE, 0, 1,
                       "%s%sa step not finite", d->nruns > 1 ? (r ? "b" : "a") : "",
                       d->nruns > 1 ? ": " : "");
    double ends[3] = {-1e9, -1e9, -1e9};
    for (int r = 0; r < d->nruns; r++)
        draw_marks(v, b, &ax, d, r, ends);
    if (d->run[0].nmark || (d->nruns > 1 && d->run[1].nmark))
        legend_add(lg, v->p->mark, "6 5", SH_NONE, 0, 1, "a setting changed");
    draw_loss_legend(v, b, d, &ax, &ay, lg);
}

/* ---- per-layer bars at one step -------------------------------------------------- */

/* The row of the last occurrence of step (after a rewind, the replay's). */
static long row_of(const plot_run *r, long step)
{
    for (long i = r->n - 1; i >= 0; i--)
        if (r->step[i] == step)
            return i;
    return -1;
}

static const char *state_color(const svg *v, double x, double gmax)
{
    switch (scale_grad_state_of(x, gmax)) {
    case SCALE_G_VANISH: return v->p->vanish;
    case SCALE_G_EXPLODE: return v->p->explode;
    case SCALE_G_NONFINITE: return v->p->nan;
    default: return v->p->normal;
    }
}

/* The decades the bars span: at least the live view's 1e-5 .. 1e+2. */
static void bars_axis(const plot_run *r, long row, axis *a)
{
    double lo = SCALE_GRAD_LO, hi = SCALE_GRAD_HI;
    for (int l = 0; l < r->L; l++) {
        float g[2] = {r->ga[row * r->L + l], r->gf[row * r->L + l]};
        for (int k = 0; k < 2; k++)
            if (isfinite(g[k]) && g[k] > 0) {
                lo = fmin(lo, floor(log10(g[k])));
                hi = fmax(hi, ceil(log10(g[k])));
            }
    }
    a->log = 1;
    a->lo = lo;
    a->hi = hi;
}

static void draw_bar(svg *v, box b, const axis *ax, int l, const char *part, double g, double y,
                     double h, const char *color, double opacity)
{
    if (!isfinite(g)) {
        fprintf(v->f, "<rect class=\"nan\" data-layer=\"%d\" data-part=\"%s\" x=\"%.1f\" y=\"%.1f\" "
                      "width=\"%.1f\" height=\"%.1f\" fill=\"url(#nan)\"/>\n",
                l, part, b.x, y, b.w, h);
        text(v, b.x + v->fs * 0.3, y + h * 0.5 + v->fs * 0.3, v->fs * 0.8, 's', v->p->fg, NULL, "%s",
             isnan(g) ? "nan" : "inf");
        return;
    }
    double x1 = g > 0 ? ax_map(ax, g) : b.x;
    if (x1 < b.x)
        x1 = b.x;
    if (g == 0) /* no bar on a log axis: say it is exactly 0, not missing */
        text(v, b.x + v->fs * 0.3, y + h * 0.5 + v->fs * 0.3, v->fs * 0.8, 's', v->p->dim,
             "class=\"zero\"", "0");
    fprintf(v->f, "<rect class=\"bar\" data-layer=\"%d\" data-part=\"%s\" data-value=\"%.6g\" "
                  "x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" fill-opacity=\"%.2f\"",
            l, part, g, b.x, y, x1 - b.x, h, v->o->mono && opacity < 1 ? v->p->bg : color, opacity);
    if (v->o->mono)
        fprintf(v->f, " stroke=\"%s\" stroke-width=\"1.5\"", v->p->fg);
    fputs("/>\n", v->f);
}

/* Bars of each layer's attention and MLP gradient norms at one row, the
 * output layer at the top, as the live view's panel. */
static void draw_layers_panel(svg *v, box b, const plot_run *r, long row, const char *title,
                              legend *lg)
{
    axis ax = {.p0 = b.x, .p1 = b.x + b.w};
    bars_axis(r, row, &ax);
    draw_axes(v, b, &ax, NULL, "gradient norm ||dL/dW|| (log scale)", "layer (0 = next to the input)");
    text_fit(v, b.x, b.y - v->fs * 0.5, b.w, v->fs, v->p->fg, "class=\"panel-title\"", title);
    double gmax = 0;
    for (int l = 0; l < r->L; l++) {
        float g[2] = {r->ga[row * r->L + l], r->gf[row * r->L + l]};
        for (int k = 0; k < 2; k++)
            if (isfinite(g[k]) && g[k] > gmax)
                gmax = g[k];
    }
    double rh = b.h / (r->L > 0 ? r->L : 1);
    int every = (int)ceil(v->fs * 1.1 / rh);
    for (int l = 0; l < r->L; l++) {
        double y = b.y + (r->L - 1 - l) * rh;
        double ga = r->ga[row * r->L + l], gf = r->gf[row * r->L + l];
        draw_bar(v, b, &ax, l, "attn", ga, y + rh * 0.08, rh * 0.4, state_color(v, ga, gmax), 1);
        draw_bar(v, b, &ax, l, "mlp", gf, y + rh * 0.52, rh * 0.4, state_color(v, gf, gmax), 0.55);
        if (l % (every > 0 ? every : 1) == 0)
            text(v, b.x - v->fs * 0.4, y + rh / 2 + v->fs * 0.35, v->fs, 'e', v->p->fg, "class=\"tick\"",
                 "%d", l);
    }
    if (lg->n)
        return;
    legend_add(lg, v->p->normal, NULL, SH_NONE, 1, 1, "attention (upper)");
    legend_add(lg, v->p->normal, NULL, SH_NONE, 1, 0.55, "MLP (lower)");
    if (!v->o->mono) {
        legend_add(lg, v->p->vanish, NULL, SH_NONE, 1, 1, "vanishing (<1e-3 max)");
        legend_add(lg, v->p->explode, NULL, SH_NONE, 1, 1, "exploding (>10)");
    }
}

/* ---- gradient norm against depth ------------------------------------------------- */

/* The two parts of a block the lessons speak of, drawn as their own
 * lines: a block's total would hide an MLP profile under the attention's
 * (Post-LN's layer 0 attention at initialization is several times its MLP). */
static const float *profile_part(const plot_run *p, int part) { return part ? p->ga : p->gf; }

static void profile_range(const plot_data *d, const long *rows, int nrows, double *lo, double *hi)
{
    *lo = INFINITY;
    *hi = -INFINITY;
    for (int r = 0; r < d->nruns; r++)
        for (int k = 0; k < nrows; k++) {
            long i = rows[r * PLOT_MAX_STEPS + k];
            const plot_run *p = &d->run[r];
            for (int part = 0; part < 2; part++)
                for (int l = 0; l < p->L && i >= 0; l++) {
                    double g = profile_part(p, part)[i * p->L + l];
                    if (isfinite(g) && g > 0) {
                        *lo = fmin(*lo, g);
                        *hi = fmax(*hi, g);
                    }
                }
        }
}

/* One color per run and step (runs apart first), MLP solid and attention
 * dashed; in --mono one dash per run and step, the parts told apart by
 * marker shape (MLP circle / square, attention triangle / diamond for a / b)
 * and width. */
static void draw_profile_panel(svg *v, box b, const plot_data *d, const long *steps, int nsteps,
                               const long *rows, legend *lg)
{
    int L = d->run[0].L;
    double lo, hi;
    profile_range(d, rows, nsteps, &lo, &hi);
    axis ax = {.p0 = b.x, .p1 = b.x + b.w, .log = 0, .lo = -0.3, .hi = L - 1 + 0.3,
                 .integer = 1};
    axis ay = {.p0 = b.y + b.h, .p1 = b.y};
    ax_fit(&ay, lo, hi, 1, 0.05);
    draw_axes(v, b, &ax, &ay, "layer (depth: 0 = next to the input, right = output)",
              "gradient norm ||dL/dW|| (log)");
    long xs[NS_MAX_LAYERS]; /* each run's own depth: a file may give b fewer layers */
    for (int l = 0; l < NS_MAX_LAYERS; l++)
        xs[l] = l;
    static const char *const part_name[2] = {"MLP", "attention"};
    for (int r = 0; r < d->nruns; r++)
        for (int k = 0; k < nsteps; k++) {
            const plot_run *p = &d->run[r];
            long i = rows[r * PLOT_MAX_STEPS + k];
            int g = (r * nsteps + k) % PLOT_MAX_STEPS;
            const char *c = v->p->step[g];
            for (int part = 0; part < 2; part++) {
                const float *y = profile_part(p, part) + i * p->L;
                const char *dash = v->o->mono ? mono_dash[g] : part ? "10 6" : "";
                int sh = part ? (r ? SH_DIAMOND : SH_TRIANGLE) : (r ? SH_SQUARE : SH_CIRCLE);
                char name[128];
                snprintf(name, sizeof name, "%s, step %ld%s%s", part_name[part], steps[k],
                         d->nruns > 1 ? ", " : "", d->nruns > 1 ? p->label : "");
                fprintf(v->f, "<g class=\"profile\" data-run=\"%d\" data-step=\"%ld\" data-part=\"%s\">\n",
                        r, steps[k], part ? "attn" : "mlp");
                draw_series(v, &ax, &ay, xs, y, p->L, 1, name, c, dash,
                            (part && v->o->mono ? 2 : 3) * v->s);
                for (int l = 0; l < p->L && L <= 32; l++)
                    if (isfinite(y[l]) && y[l] > 0)
                        shape(v, sh, ax_map(&ax, l), ax_map(&ay, y[l]), v->fs * 0.25, c);
                fputs("</g>\n", v->f);
                legend_add(lg, c, dash, sh, 0, 1, "%s", name);
            }
        }
}

/* ---- heatmap --------------------------------------------------------------------- */

/* A bucket's value: non-finite if any row was (a divergence must show),
 * else the largest. rows: the indices of the timeline's rows. */
static double heat_bucket(const plot_run *r, const long *rows, long a, long b, int l)
{
    double m = 0;
    for (long i = a; i < b; i++) {
        double g = r->gn[rows[i] * r->L + l];
        if (!isfinite(g))
            return g;
        m = fmax(m, g);
    }
    return m;
}

/* The steps the heatmap draws: the rows on the timeline the run ended on
 * (a rewind's abandoned rows are left out, so the steps run forward).
 * NULL when out of memory. */
static long *heat_rows(const plot_run *r, long *n)
{
    long *rows = malloc(sizeof(long) * (size_t)(r->n > 0 ? r->n : 1));
    *n = 0;
    for (long i = 0; rows && i < r->n; i++)
        if (!r->live || r->live[i]) /* no timeline (never finished): every row */
            rows[(*n)++] = i;
    return rows;
}

/* cells: the most rects this panel may draw (the file's size) */
static void draw_heat_panel(svg *v, box b, const plot_run *r, const char *title, long cells)
{
    long n;
    long *rows = heat_rows(r, &n);
    if (!rows)
        return;
    draw_axes(v, b, NULL, NULL, "step", "layer (0 = next to the input)");
    text_fit(v, b.x, b.y - v->fs * 0.4, r->abandoned ? b.w * 0.45 : b.w, v->fs, v->p->fg,
             "class=\"panel-title\"", title);
    long C = n, maxc = (long)(b.w / 3), cellcap = cells / (r->L > 0 ? r->L : 1);
    C = C < maxc ? C : maxc;
    C = C < cellcap ? C : cellcap;
    if (C < 1)
        C = 1;
    double cw = b.w / (double)C, rh = b.h / (r->L > 0 ? r->L : 1);
    for (long j = 0; j < C; j++) {
        long a = j * n / C, e = (j + 1) * n / C;
        if (e <= a)
            e = a + 1;
        if (e > n)
            e = n;
        for (int l = 0; l < r->L && a < e; l++) {
            double g = heat_bucket(r, rows, a, e, l);
            int lv = scale_heat_level(g);
            fprintf(v->f, "<rect class=\"cell\" data-step=\"%ld\" data-layer=\"%d\" data-value=\"%.6g\" "
                          "data-level=\"%d\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>\n",
                    r->step[rows[a]], l, g, lv, b.x + j * cw, b.y + (r->L - 1 - l) * rh, cw + 0.3, rh + 0.3,
                    lv < 0 ? "url(#nan)" : v->p->heat[lv]);
        }
    }
    int every = (int)ceil(v->fs * 1.1 / rh);
    for (int l = 0; l < r->L; l += every > 0 ? every : 1)
        text(v, b.x - v->fs * 0.4, b.y + (r->L - 1 - l) * rh + rh / 2 + v->fs * 0.35, v->fs, 'e', v->p->fg,
             "class=\"tick\"", "%d", l);
    fputs("<g class=\"heat-ticks\">\n", v->f);
    for (int k = 0; k < 5 && n > 0; k++) {
        long j = k * (C - 1) / 4, i = j * n / C;
        text(v, b.x + (j + 0.5) * cw, b.y + b.h + v->fs * 1.2, v->fs, 'm', v->p->fg, "class=\"tick\"", "%ld",
             r->step[rows[i]]);
        if (C < 5)
            break;
    }
    fputs("</g>\n", v->f);
    if (r->abandoned) /* what a rewind replaced is not drawn: say so in the panel */
        text(v, b.x + b.w, b.y - v->fs * 0.4, v->fs_small, 'e', v->p->dim, "class=\"panel-note\"",
             "%ld step%s a rewind abandoned not drawn (their replay is)", r->abandoned,
             r->abandoned == 1 ? "" : "s");
    free(rows);
}

/* The color scale, in decades, under the panels' right edge. */
static void heat_legend(svg *v, legend *lg)
{
    static const char *const names[7] = {"< 1e-4", "1e-4 .. 1e-3", "1e-3 .. 0.01", "0.01 .. 0.1",
                                         "0.1 .. 1",  "1 .. 10",      ">= 10"};
    for (int k = 6; k >= 0; k--)
        legend_add(lg, v->p->heat[k], NULL, SH_NONE, 1, 1, "%s", names[k]);
    legend_add(lg, "url(#nan)", NULL, SH_NONE, 1, 1, "not finite");
}

/* ---- figures --------------------------------------------------------------------- */

/* The area inside the title and caption, with room for axis labels. */
static box content(const svg *v)
{
    double l = v->fs * 5.2, t = v->fs * 4.4, r = v->fs * 1.2, bt = v->fs * 4.6;
    return (box){l, t, v->o->w - l - r, v->o->h - t - bt};
}

/* Split b into n side by side (cols) or stacked, with a gap for labels. */
static box part(box b, int i, int n, int cols, double gap)
{
    if (cols) {
        double w = (b.w - gap * (n - 1)) / n;
        return (box){b.x + i * (w + gap), b.y, w, b.h};
    }
    double h = (b.h - gap * (n - 1)) / n;
    return (box){b.x, b.y + i * (h + gap), b.w, h};
}

/* The steps a figure shows: the chosen ones, or the kind's default (the
 * last; for a profile, four spread over the run). Each must be in every
 * run; rows[r * PLOT_MAX_STEPS + k] is where step k is in run r. */
static int pick_steps(const plot_data *d, const plot_opts *o, int many, long *steps, long *rows,
                      char *err, size_t errlen)
{
    const plot_run *a = &d->run[0];
    int n = 0;
    if (o->nsteps)
        for (int k = 0; k < o->nsteps && k < (many ? PLOT_MAX_STEPS : 1); k++)
            steps[n++] = o->steps[k];
    else
        for (int k = many ? 0 : 3; k < 4; k++) {
            long s = a->step[(a->n - 1) * k / 3];
            if (n == 0 || steps[n - 1] != s)
                steps[n++] = s;
        }
    for (int r = 0; r < d->nruns; r++)
        for (int k = 0; k < n; k++) {
            rows[r * PLOT_MAX_STEPS + k] = row_of(&d->run[r], steps[k]);
            if (rows[r * PLOT_MAX_STEPS + k] < 0) {
                const plot_run *p = &d->run[r];
                snprintf(err, errlen, "--step %ld: not in the %s rows (steps %ld..%ld)", steps[k],
                         r ? "b" : "input's", p->step[0], p->step[p->n - 1]);
                return -1;
            }
        }
    return n;
}

static int fig_loss(svg *v, const plot_data *d)
{
    box b = content(v);
    legend lg = {0};
    draw_frame(v, d, d->nruns > 1 ? "Training loss of two runs" : "Training loss");
    draw_loss_panel(v, b, d, &lg);
    return 0;
}

/* Panels side by side in the left part of the content area, and a
 * column right of them for the legend, apart from the last panel. */
static void split_legend(const svg *v, double share, box *panels, box *leg)
{
    box all = content(v);
    *panels = all;
    panels->w = all.w * share;
    panels->y += v->fs * 1.2;
    panels->h -= v->fs * 1.2;
    leg->x = panels->x + panels->w + v->fs;
    leg->y = panels->y;
    leg->w = v->o->w - leg->x - v->fs * 0.5;
    leg->h = panels->h;
}

static int fig_layers(svg *v, const plot_data *d, char *err, size_t errlen)
{
    long steps[PLOT_MAX_STEPS], rows[2 * PLOT_MAX_STEPS];
    if (pick_steps(d, v->o, 0, steps, rows, err, errlen) < 0)
        return -1;
    char title[128];
    snprintf(title, sizeof title, "Gradient norm of each layer at step %ld", steps[0]);
    draw_frame(v, d, title);
    box all, leg;
    split_legend(v, 0.74, &all, &leg);
    legend lg = {0};
    for (int r = 0; r < d->nruns; r++) {
        box b = part(all, r, d->nruns, 1, v->fs * 5.5);
        char t[128];
        run_title(d, r, t, sizeof t);
        draw_layers_panel(v, b, &d->run[r], rows[r * PLOT_MAX_STEPS], t, &lg);
    }
    draw_legend_beside(v, leg, &lg);
    return 0;
}

static int fig_profile(svg *v, const plot_data *d, char *err, size_t errlen)
{
    long steps[PLOT_MAX_STEPS], rows[2 * PLOT_MAX_STEPS];
    int n = pick_steps(d, v->o, 1, steps, rows, err, errlen);
    if (n < 0)
        return -1;
    draw_frame(v, d, "Gradient norm against depth: MLP and attention of each block");
    box b, leg;
    split_legend(v, 0.7, &b, &leg);
    legend lg = {0};
    draw_profile_panel(v, b, d, steps, n, rows, &lg);
    draw_legend_beside(v, leg, &lg);
    return 0;
}

static int fig_heatmap(svg *v, const plot_data *d)
{
    draw_frame(v, d, "Gradient norm of each layer over the run");
    box all, leg;
    split_legend(v, 0.76, &all, &leg);
    for (int r = 0; r < d->nruns; r++) {
        char t[128];
        run_title(d, r, t, sizeof t);
        draw_heat_panel(v, part(all, r, d->nruns, 0, v->fs * 4.4), &d->run[r], t,
                        9000 / d->nruns); /* < 1 MB */
    }
    legend lg = {0};
    heat_legend(v, &lg);
    draw_legend_beside(v, leg, &lg);
    return 0;
}

/* The live view's g: the loss chart, and the last step's layer panel of
 * each run, as the bars view shows them side by side. */
static int fig_view(svg *v, const plot_data *d)
{
    char title[96];
    const plot_run *a = &d->run[0];
    snprintf(title, sizeof title, "normscope at step %ld", a->step[a->n - 1]);
    draw_frame(v, d, title);
    box all = content(v);
    double gap = v->fs * 5.5; /* a bar panel's layer numbers and axis title */
    box chart = {all.x, all.y, all.w * 0.52, all.h};
    box bars = {chart.x + chart.w + gap, all.y + v->fs * 2.4, all.w - chart.w - gap,
                all.h - v->fs * 2.4};
    legend lg = {0}, lb = {0};
    draw_loss_panel(v, chart, d, &lg);
    text_fit(v, bars.x - gap + v->fs * 1.5, all.y + v->fs * 0.6, bars.w + gap - v->fs * 1.5, v->fs_small,
             v->p->dim, "class=\"panel-note\"", "layer bars at the last step: upper attention, lower MLP");
    for (int r = 0; r < d->nruns; r++) { /* stacked: side by side they would be too narrow */
        char t[128];
        run_title(d, r, t, sizeof t);
        draw_layers_panel(v, part(bars, r, d->nruns, 0, v->fs * 4.6), &d->run[r], d->run[r].n - 1, t, &lb);
    }
    return 0; /* the bars' legend would cover them: their colors are the live view's */
}

/* ---- the map of a sweep ---------------------------------------------------------- */

/* Which axes are the rows and the columns: --rows/--cols, else the live
 * view's rule (sweep_map_make: the two with the most values, the first of
 * equals, rows first). -1: none. A grid of one axis is drawn as one row of
 * columns, the wide way of a slide (the terminal stacks it). 0, or -1 with
 * one line in err. */
static int map_find_axis(const plot_map *m, const char *flag, const char *name, int *a, char *err,
                         size_t errlen)
{
    for (int i = 0; i < m->n_axes; i++)
        if (!strcmp(m->axis[i].name, name)) {
            *a = i;
            return 0;
        }
    size_t k = (size_t)snprintf(err, errlen, "%s '%s': not an axis of the sweep (axes:", flag, name);
    for (int i = 0; i < m->n_axes && k < errlen; i++)
        k += (size_t)snprintf(err + k, errlen - k, "%s %s", i ? "," : "", m->axis[i].name);
    if (k < errlen)
        snprintf(err + k, errlen - k, "%s)", m->n_axes ? "" : " none but the seed");
    return -1;
}

static int map_choose_axes(const plot_map *m, const plot_opts *o, int *ra, int *ca, char *err,
                           size_t errlen)
{
    *ra = *ca = -1;
    if (o->rows && map_find_axis(m, "--rows", o->rows, ra, err, errlen))
        return -1;
    if (o->cols && map_find_axis(m, "--cols", o->cols, ca, err, errlen))
        return -1;
    if (o->rows && o->cols && *ra == *ca) {
        snprintf(err, errlen, "--rows and --cols name the same axis '%s'", o->rows);
        return -1;
    }
    const char *names[PLOT_MAP_AXES];
    int count[PLOT_MAP_AXES];
    for (int i = 0; i < m->n_axes; i++) {
        names[i] = m->axis[i].name;
        count[i] = m->axis[i].n;
    }
    sweep_map sm;
    sweep_map_make(&sm, m->n_axes, names, count, *ra, *ca);
    *ra = sm.row;
    *ca = sm.col;
    if (*ca < 0 && *ra >= 0 && !o->rows) { /* one axis: one row of columns */
        *ca = *ra;
        *ra = -1;
    }
    return 0;
}

/* The loss scale: the cells' means, lo..hi, but for cells with an
 * exploded run: an outlier (a loss of 1e12) would make every other cell
 * one color. So the scale runs from the best trained cell to the plateau
 * where the stalled cells sit. */
static void map_range(const plot_map *m, double *lo, double *hi)
{
    *lo = INFINITY;
    *hi = -INFINITY;
    for (long i = 0; i < m->ncells; i++)
        if (m->cell[i].final.n && !m->cell[i].exploded) {
            double x = sweep_stat_mean(&m->cell[i].final);
            *lo = fmin(*lo, x);
            *hi = fmax(*hi, x);
        }
    if (!(*lo <= *hi))
        *lo = *hi = 0;
    if (*hi - *lo < 1e-6) {
        *lo -= 0.005;
        *hi += 0.005;
    }
}

static int map_bin(double x, double lo, double hi)
{
    int b = (int)floor((x - lo) / (hi - lo) * MAP_BINS);
    return b < 0 ? 0 : b >= MAP_BINS ? MAP_BINS - 1 : b;
}

typedef struct {
    const plot_map *m;
    int ra, ca;        /* rows, columns (-1: one) */
    int other[PLOT_MAP_AXES], n_other; /* the axes of the small multiples */
    long panels;
    double lo, hi;     /* the loss scale */
} map_layout;

/* "norm=post, seed folded" names a panel. */
static void map_panel_title(const map_layout *g, const int *idx, char *b, size_t n)
{
    size_t k = 0;
    b[0] = 0;
    for (int j = 0; j < g->n_other && k < n; j++) {
        const plot_map_axis *x = &g->m->axis[g->other[j]];
        k += (size_t)snprintf(b + k, n - k, "%s%s=%s", j ? ", " : "", x->name, x->val[idx[g->other[j]]]);
    }
}

/* One cell: its fill on the scale (hatched with no finite loss), the value
 * and spread printed in it, an X where a run diverged, a dashed inner
 * frame and "stalled" where one stalled. */
static void map_cell(svg *v, const map_layout *g, box c, const int *idx)
{
    const plot_map_cell *cl = &g->m->cell[plot_map_cell_of(g->m, idx)];
    char key[512];
    size_t k = 0;
    for (int a = 0; a < g->m->n_axes && k < sizeof key; a++)
        k += (size_t)snprintf(key + k, sizeof key - k, "%s%s=%s", a ? "," : "", g->m->axis[a].name,
                              g->m->axis[a].val[idx[a]]);
    const sweep_stat *fin = &cl->final;
    double mean = sweep_stat_mean(fin);
    int bin = fin->n && !cl->exploded ? map_bin(mean, g->lo, g->hi) : -1;
    const char *fill = !cl->runs ? v->p->bg : cl->exploded ? "url(#exploded)"
                       : bin < 0 ? "url(#nan)" : v->p->map[bin];
    const char *ink = bin >= v->p->map_dark ? "#ffffff" : bin < 0 ? v->p->fg : "#000000";
    fprintf(v->f, "<g class=\"map-cell\"><rect class=\"cell\" data-key=\"");
    esc(v->f, key);
    fprintf(v->f, "\" data-value=\"%.6g\" data-bin=\"%d\" data-runs=\"%d\" data-diverged=\"%d\" "
                  "data-stalled=\"%d\" data-exploded=\"%d\" data-failed=\"%d\" x=\"%.1f\" "
                  "y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" stroke=\"%s\" "
                  "stroke-width=\"1.5\"/>\n",
            mean, bin, cl->runs, cl->diverged, cl->stalled, cl->exploded, cl->failed, c.x, c.y,
            c.w, c.h, fill, v->p->bg);
    double fs = fmin(v->fs, fmin(c.h * 0.26, c.w / 5.5));
    int lines = (fin->n ? 1 : 0) + (fin->n > 1) +
                (cl->diverged || cl->exploded || cl->stalled || cl->failed);
    double y = c.y + c.h / 2 - (lines - 1) * fs * 0.6 + fs * 0.35;
    if (cl->diverged) {
        fprintf(v->f, "<path class=\"diverged-mark\" d=\"M%.1f %.1fL%.1f %.1fM%.1f %.1fL%.1f %.1f\" "
                      "stroke=\"%s\" stroke-width=\"%.1f\" stroke-opacity=\"0.8\"/>\n",
                c.x + 4, c.y + 4, c.x + c.w - 4, c.y + c.h - 4, c.x + c.w - 4, c.y + 4, c.x + 4,
                c.y + c.h - 4, v->o->mono ? "#000000" : v->p->explode, 3 * v->s);
    }
    if (cl->stalled)
        fprintf(v->f, "<rect class=\"stalled-mark\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                      "fill=\"none\" stroke=\"%s\" stroke-width=\"%.1f\" stroke-dasharray=\"8 5\"/>\n",
                c.x + 5, c.y + 5, c.w - 10, c.h - 10, ink, 2.5 * v->s);
    char num[32];
    if (fin->n) { /* as many digits as fit the cell: 2.8e+12, not 2794610000000.000 */
        sweep_fmt_loss(num, sizeof num, mean, (int)fmax(5, c.w / (fs * 0.62)));
        text(v, c.x + c.w / 2, y, fs, 'm', ink, "class=\"cell-value\" font-weight=\"bold\"", "%s", num);
        y += fs * 1.2;
    }
    if (fin->n > 1) {
        sweep_fmt_loss(num, sizeof num, (fin->hi - fin->lo) / 2, (int)fmax(5, c.w / (fs * 0.5)) - 6);
        text(v, c.x + c.w / 2, y, fs * 0.8, 'm', ink, "class=\"cell-spread\"", "+-%s (%d)", num,
             fin->n);
        y += fs * 1.2;
    }
    char tag[96] = "";
    if (cl->diverged && cl->runs == 1)
        snprintf(tag, sizeof tag, "diverged @%ld", cl->div_step);
    else if (cl->diverged)
        snprintf(tag, sizeof tag, "%d/%d diverged", cl->diverged, cl->runs);
    else if (cl->exploded)
        snprintf(tag, sizeof tag, cl->runs > 1 ? "%d/%d exploded" : "exploded", cl->exploded, cl->runs);
    else if (cl->stalled)
        snprintf(tag, sizeof tag, cl->runs > 1 ? "%d/%d stalled" : "stalled", cl->stalled, cl->runs);
    else if (cl->failed)
        snprintf(tag, sizeof tag, "%d/%d failed", cl->failed, cl->runs);
    if (tag[0] && bin < 0) /* readable on the hatching */
        fprintf(v->f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" "
                      "fill-opacity=\"0.85\"/>\n",
                c.x + c.w / 2 - 0.3 * fs * (double)strlen(tag), y - fs * 0.8, 0.6 * fs * (double)strlen(tag),
                fs * 1.1, v->p->bg);
    if (tag[0])
        text(v, c.x + c.w / 2, y, fs * 0.8, 'm', ink, "class=\"cell-tag\"", "%s", tag);
    fputs("</g>\n", v->f);
}

/* One panel: rows x columns of cells, the values as tick labels, the axes'
 * names as labels. idx holds the panel's values on the other axes. */
static void map_panel(svg *v, const map_layout *g, box b, int *idx)
{
    const plot_map *m = g->m;
    int nr = g->ra >= 0 ? m->axis[g->ra].n : 1, nc = g->ca >= 0 ? m->axis[g->ca].n : 1;
    char title[256];
    map_panel_title(g, idx, title, sizeof title);
    size_t wide = 0; /* the rows' widest value */
    for (int r = 0; r < nr && g->ra >= 0; r++)
        wide = strlen(m->axis[g->ra].val[r]) > wide ? strlen(m->axis[g->ra].val[r]) : wide;
    if (g->ra >= 0) { /* room inside b for the values and the rows' name: never off the
                       * canvas, never over the panel to the left */
        double inset = v->fs * (1.8 + 0.6 * (double)wide);
        b.x += inset;
        b.w -= inset;
    }
    draw_axes(v, b, NULL, NULL, g->ca >= 0 ? m->axis[g->ca].name : NULL, NULL);
    if (g->ra >= 0) { /* the rows' name, left of their widest value */
        char rot[96];
        double x = b.x - v->fs * (1.2 + 0.6 * (double)wide), y = b.y + b.h / 2;
        snprintf(rot, sizeof rot, "class=\"axis-label\" transform=\"rotate(-90 %.1f %.1f)\"", x, y);
        text(v, x, y, v->fs, 'm', v->p->fg, rot, "%s", m->axis[g->ra].name);
    }
    if (title[0])
        text(v, b.x, b.y - v->fs * 0.4, v->fs, 's', v->p->fg, "class=\"panel-title\"", "%s", title);
    double cw = b.w / nc, rh = b.h / nr;
    for (int r = 0; r < nr; r++)
        for (int c = 0; c < nc; c++) {
            if (g->ra >= 0)
                idx[g->ra] = r;
            if (g->ca >= 0)
                idx[g->ca] = c;
            map_cell(v, g, (box){b.x + c * cw, b.y + r * rh, cw, rh}, idx);
        }
    for (int c = 0; c < nc && g->ca >= 0; c++)
        text(v, b.x + (c + 0.5) * cw, b.y + b.h + v->fs * 1.2, v->fs, 'm', v->p->fg, "class=\"tick\"",
             "%s", m->axis[g->ca].val[c]);
    for (int r = 0; r < nr && g->ra >= 0; r++)
        text(v, b.x - v->fs * 0.4, b.y + (r + 0.5) * rh + v->fs * 0.35, v->fs, 'e', v->p->fg,
             "class=\"tick\"", "%s", m->axis[g->ra].val[r]);
}

/* The color bar: the scale's bins, low loss at the bottom, and the marks. */
static void map_colorbar(svg *v, const map_layout *g, box b, const char *what)
{
    double bh = fmin(b.h * 0.55, v->fs * 1.6 * MAP_BINS), bw = v->fs * 1.6, step = bh / MAP_BINS;
    double x = b.x + v->fs, y0 = b.y + v->fs * 1.6;
    text(v, b.x, b.y + v->fs * 0.5, v->fs, 's', v->p->fg, "class=\"colorbar-title\"", "%s", what);
    fputs("<g class=\"colorbar\">\n", v->f);
    for (int k = 0; k < MAP_BINS; k++) {
        double lo = g->lo + (g->hi - g->lo) * k / MAP_BINS, hi = g->lo + (g->hi - g->lo) * (k + 1) / MAP_BINS;
        double y = y0 + bh - (k + 1) * step;
        fprintf(v->f, "<rect class=\"colorbar-bin\" data-bin=\"%d\" data-lo=\"%.6g\" data-hi=\"%.6g\" "
                      "x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" stroke=\"%s\"/>\n",
                k, lo, hi, x, y, bw, step, v->p->map[k], v->p->dim);
        char num[32]; /* the bar's width left of the canvas edge: 7 characters */
        sweep_fmt_loss(num, sizeof num, lo, 7);
        if (k % 2 == 0 && k + 2 < MAP_BINS)
            text(v, x + bw + v->fs * 0.4, y + step, v->fs_small, 's', v->p->fg, "class=\"tick\"", "%s", num);
    }
    char num[32];
    sweep_fmt_loss(num, sizeof num, g->hi, 7);
    text(v, x + bw + v->fs * 0.4, y0 + v->fs_small * 0.35, v->fs_small, 's', v->p->fg, "class=\"tick\"",
         "%s", num);
    fputs("</g>\n", v->f);
    double ly = y0 + bh + v->fs * 2;
    fprintf(v->f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"url(#nan)\"/>\n", x,
            ly - v->fs, bw, v->fs);
    text(v, x + bw + v->fs * 0.4, ly - v->fs * 0.15, v->fs_small, 's', v->p->fg, NULL, "no finite loss");
    ly += v->fs * 1.6;
    fprintf(v->f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"url(#exploded)\"/>\n",
            x, ly - v->fs, bw, v->fs);
    text(v, x + bw + v->fs * 0.4, ly - v->fs * 0.15, v->fs_small, 's', v->p->fg, NULL,
         "exploded");
    ly += v->fs * 1.6;
    line(v, x, ly, x + bw, ly - v->fs, v->o->mono ? "#000000" : v->p->explode, 3 * v->s, NULL);
    line(v, x, ly - v->fs, x + bw, ly, v->o->mono ? "#000000" : v->p->explode, 3 * v->s, NULL);
    text(v, x + bw + v->fs * 0.4, ly - v->fs * 0.15, v->fs_small, 's', v->p->fg, NULL, "diverged");
    ly += v->fs * 1.6;
    fprintf(v->f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"%s\" "
                  "stroke-width=\"2\" stroke-dasharray=\"8 5\"/>\n", x, ly - v->fs, bw, v->fs, v->p->fg);
    text(v, x + bw + v->fs * 0.4, ly - v->fs * 0.15, v->fs_small, 's', v->p->fg, NULL, "stalled");
}

static void map_layout_make(map_layout *g, const plot_map *m, int ra, int ca)
{
    memset(g, 0, sizeof *g);
    g->m = m;
    g->ra = ra;
    g->ca = ca;
    g->panels = 1;
    for (int a = 0; a < m->n_axes; a++)
        if (a != ra && a != ca) {
            g->other[g->n_other++] = a;
            g->panels *= m->axis[a].n;
        }
    map_range(m, &g->lo, &g->hi);
}

/* Panel p's values on the other axes (the last varies fastest). */
static void map_panel_index(const map_layout *g, long p, int *idx)
{
    for (int j = g->n_other - 1; j >= 0; j--) {
        int a = g->other[j];
        idx[a] = (int)(p % g->m->axis[a].n);
        p /= g->m->axis[a].n;
    }
}

static int fig_map(svg *v, const plot_map *m, char *err, size_t errlen)
{
    int ra, ca;
    if (map_choose_axes(m, v->o, &ra, &ca, err, errlen))
        return -1;
    map_layout g;
    map_layout_make(&g, m, ra, ca);
    if (g.panels > 16) {
        snprintf(err, errlen, "%ld panels (one per value of the axes not drawn as rows or columns): "
                 "at most 16; choose --rows and --cols", g.panels);
        return -1;
    }
    const char *what = m->val_missing ? "final loss (validation, else train)" : "final validation loss";
    char title[160], cap[1400];
    snprintf(title, sizeof title, "Stability map: %s of each run", what);
    snprintf(cap, sizeof cap, "%s%s  |  %s", m->common[0] ? "common: " : "", m->common,
             m->seeds > 1 ? "seeds folded: mean +- half range (runs)" : "one run per cell");
    frame_text(v, title, cap, sizeof cap);
    box all = content(v), bar = all;
    all.w *= 0.8;
    bar.x = all.x + all.w + v->fs * 1.5;
    bar.w -= all.w + v->fs * 1.5;
    all.y += v->fs * 1.2;
    all.h -= v->fs * 1.2;
    int pc = g.panels <= 3 ? (int)g.panels : (int)ceil(sqrt((double)g.panels));
    int pr = (int)((g.panels + pc - 1) / pc);
    for (long p = 0; p < g.panels; p++) {
        int idx[PLOT_MAP_AXES] = {0};
        map_panel_index(&g, p, idx);
        box row = part(all, (int)(p / pc), pr, 0, v->fs * 4.2);
        row.x += v->fs * 1.5;
        row.w -= v->fs * 1.5;
        map_panel(v, &g, part(row, (int)(p % pc), pc, 1, v->fs * 5.5), idx);
    }
    map_colorbar(v, &g, bar, "nats");
    return 0;
}

int plot_render_map(FILE *f, const plot_map *m, const plot_opts *o, char *err, size_t errlen)
{
    svg v = {.f = f, .o = o, .p = o->mono ? &pal_mono : &pal_screen, .s = o->w / 1600.0};
    v.fs = fmax(10, 24 * v.s);
    v.fs_small = fmax(9, 20 * v.s);
    if (m->ncells == 0) {
        snprintf(err, errlen, "no rows: expected a sweep's results.csv");
        return -1;
    }
    svg_begin(&v);
    int rc = fig_map(&v, m, err, errlen);
    fputs("</svg>\n", f);
    return rc;
}

/* A figure needs rows, and the columns its kind draws. */
static int check_columns(const plot_data *d, plot_kind k, char *err, size_t errlen)
{
    if (d->run[0].n == 0) {
        snprintf(err, errlen, "no rows: expected a normscope --csv or --jsonl file (a 'step' column)");
        return -1;
    }
    if ((k == PLOT_LOSS || k == PLOT_VIEW) && !d->run[0].has_loss) {
        snprintf(err, errlen, "no 'loss' column: --kind loss needs step and loss");
        return -1;
    }
    if (k != PLOT_LOSS && d->run[0].L == 0) {
        snprintf(err, errlen, "no per-layer columns (l0_grad_attn, ...): --kind %s needs them",
                 k == PLOT_LAYERS ? "layers" : k == PLOT_PROFILE ? "profile" : "heatmap");
        return -1;
    }
    if (k == PLOT_MAP) {
        snprintf(err, errlen, "--kind map draws a sweep's results.csv (plot_render_map)");
        return -1;
    }
    return 0;
}

int plot_render(FILE *f, const plot_data *d, const plot_opts *o, char *err, size_t errlen)
{
    if (check_columns(d, o->kind, err, errlen))
        return -1;
    svg v = {.f = f, .o = o, .p = o->mono ? &pal_mono : &pal_screen, .s = o->w / 1600.0};
    v.fs = fmax(10, 24 * v.s);
    v.fs_small = fmax(9, 20 * v.s);
    svg_begin(&v);
    int rc = 0;
    switch (o->kind) {
    case PLOT_LOSS: rc = fig_loss(&v, d); break;
    case PLOT_LAYERS: rc = fig_layers(&v, d, err, errlen); break;
    case PLOT_PROFILE: rc = fig_profile(&v, d, err, errlen); break;
    case PLOT_HEATMAP: rc = fig_heatmap(&v, d); break;
    case PLOT_VIEW: rc = fig_view(&v, d); break;
    case PLOT_MAP: rc = -1; break; /* plot_render_map */
    }
    fputs("</svg>\n", f);
    return rc;
}

/* A figure of either source, for write_atomic. */
typedef struct {
    const plot_data *d;
    const plot_map *m;
} figure_src;

static int write_atomic(const char *path, figure_src src, const plot_opts *o, char *err,
                        size_t errlen)
{
    atomic_file a;
    if (src.d && check_columns(src.d, o->kind, err, errlen))
        return -1;
    if (atomic_open(&a, path, err, errlen))
        return -1;
    if (src.d ? plot_render(a.f, src.d, o, err, errlen) : plot_render_map(a.f, src.m, o, err, errlen)) {
        atomic_abort(&a);
        return -1;
    }
    return atomic_commit(&a, err, errlen);
}

int plot_write(const char *path, const plot_data *d, const plot_opts *o, char *err, size_t errlen)
{
    return write_atomic(path, (figure_src){d, NULL}, o, err, errlen);
}

int plot_write_map(const char *path, const plot_map *m, const plot_opts *o, char *err, size_t errlen)
{
    return write_atomic(path, (figure_src){NULL, m}, o, err, errlen);
}

/* ---- the command line ------------------------------------------------------------ */

int plot_parse_kind(const char *s, plot_kind *k)
{
    static const char *const names[] = {"loss", "layers", "profile", "heatmap", "map"};
    for (int i = 0; i < 5; i++)
        if (!strcmp(s, names[i])) {
            *k = (plot_kind)i;
            return 0;
        }
    return -1;
}

int plot_parse_size(const char *s, int *w, int *h)
{
    char *end;
    errno = 0;
    long a = strtol(s, &end, 10);
    if (end == s || (*end != 'x' && *end != 'X'))
        return -1;
    const char *p = end + 1;
    long b = strtol(p, &end, 10);
    if (end == p || *end || errno || a < 320 || a > 8000 || b < 180 || b > 8000)
        return -1;
    *w = (int)a;
    *h = (int)b;
    return 0;
}

int plot_parse_steps(const char *s, long *steps, int *n)
{
    *n = 0;
    const char *p = s;
    for (;;) {
        char *end;
        errno = 0;
        long x = strtol(p, &end, 10);
        if (end == p || errno || x < 0 || *n == PLOT_MAX_STEPS || (*end && *end != ','))
            return -1;
        steps[(*n)++] = x;
        if (!*end)
            return 0;
        p = end + 1;
    }
}

/* --kind, --size, --step into o: 0, or 2 after one line on err. */
static int plot_options(plot_opts *o, const char *kind, const char *size, const char *steps,
                        FILE *err)
{
    o->kind = PLOT_LOSS;
    o->w = 1600;
    o->h = 900;
    if (kind && plot_parse_kind(kind, &o->kind)) {
        fprintf(err, "normscope: --kind '%s': expected loss|layers|profile|heatmap|map\n", kind);
        return 2;
    }
    if (size && plot_parse_size(size, &o->w, &o->h)) {
        fprintf(err, "normscope: --size '%s': expected WxH, W 320..8000, H 180..8000 (e.g. 1600x900)\n",
                size);
        return 2;
    }
    if (steps && plot_parse_steps(steps, o->steps, &o->nsteps)) {
        fprintf(err, "normscope: --step '%s': expected up to %d steps N[,N...], each >= 0\n", steps,
                PLOT_MAX_STEPS);
        return 2;
    }
    return 0;
}

/* --kind map: DIR or DIR/results.csv. */
static int plot_main_map(const plot_args *a, plot_opts *o, FILE *err)
{
    plot_map m;
    char e[512];
    int rc = 0;
    plot_map_init(&m);
    if (plot_map_read(&m, a->input, e, sizeof e) || plot_write_map(a->out, &m, o, e, sizeof e)) {
        fprintf(err, "normscope: --plot %s: %s\n", a->input, e);
        rc = 2;
    }
    plot_map_free(&m);
    return rc;
}

int plot_main(const plot_args *a, FILE *err)
{
    plot_opts o = {.mono = a->mono, .logy = a->logy, .source = a->input, .rows = a->rows,
                   .cols = a->cols};
    int rc = plot_options(&o, a->kind, a->size, a->steps, err);
    if (rc)
        return rc;
    if (!a->out) {
        fprintf(err, "normscope: --plot needs --out FILE.svg\n");
        return 2;
    }
    if ((a->rows || a->cols) && o.kind != PLOT_MAP) {
        fprintf(err, "normscope: --rows and --cols go with --kind map\n");
        return 2;
    }
    if (o.kind == PLOT_MAP)
        return plot_main_map(a, &o, err);
    plot_data d;
    char e[512];
    plot_data_init(&d);
    if (plot_data_read(&d, a->input, e, sizeof e) || plot_write(a->out, &d, &o, e, sizeof e)) {
        fprintf(err, "normscope: --plot %s: %s\n", a->input, e);
        rc = 2;
    }
    plot_data_free(&d);
    return rc;
}

int plot_write_snapshot(const trainer_snapshot *s, int heatmap, int logy, const char *path,
                        char *err, size_t errlen)
{
    plot_opts o = {.kind = heatmap ? PLOT_HEATMAP : PLOT_VIEW, .w = 1600, .h = 900, .logy = logy};
    plot_data d;
    plot_data_init(&d);
    int rc = -1;
    if (plot_data_snapshot(&d, s))
        snprintf(err, errlen, "%s: out of memory", path);
    else if (d.run[0].n == 0)
        snprintf(err, errlen, "%s: no step yet to draw", path);
    else
        rc = plot_write(path, &d, &o, err, errlen);
    plot_data_free(&d);
    return rc;
}
