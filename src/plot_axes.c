/* plot_axes.c - scales and the frame of a panel: data to pixels on a
 * linear or log axis, 1-2-5 and decade ticks, grid lines, tick labels and
 * axis titles; the content area inside a figure's title and caption and
 * its split into panels and a legend column.
 *
 * Not here: the SVG elements (plot_svg.c), what a panel holds (plot_fig_*.c).
 */
#include "plot_int.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- axes ------------------------------------------------------------------------ */

/* A position along the axis of a value in its own units (log10 of the
 * value on a log axis, log10(1 + count) on a count axis). */
static double ax_pos(const axis *a, double u)
{
    double t = a->hi > a->lo ? (u - a->lo) / (a->hi - a->lo) : 0.5;
    return a->p0 + t * (a->p1 - a->p0);
}

double plot_ax_map(const axis *a, double v)
{
    if (a->count)
        v = log10(1 + fmax(v, 0));
    else if (a->log)
        v = v > 0 ? log10(v) : a->lo - 1;
    return ax_pos(a, v);
}

void plot_ax_fit_count(axis *a, double hi)
{
    a->log = 0;
    a->count = 1;
    a->lo = 0;
    a->hi = fmax(1, log10(1 + fmax(hi, 0)));
    double m = a->hi * 0.05;
    a->lo -= m;
    a->hi += m;
}

static double nice_step(double span)
{
    double raw = span / 5, mag = pow(10, floor(log10(raw))), n = raw / mag;
    return (n < 1.5 ? 1 : n < 3.5 ? 2 : n < 7.5 ? 5 : 10) * mag;
}

/* Fit lo..hi (data units) to the axis: a margin on a linear one, whole
 * decades on a log one; a single value gets a span around it. */
void plot_ax_fit(axis *a, double lo, double hi, int log_, double pad)
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

/* Decades or 1-2-5 steps, as plot_int.h says; the count axis's 0 first. */
int plot_ax_ticks(const axis *a, double *t, int max)
{
    int n = 0;
    if (a->count) { /* 0, then decades: 10, 100, ... */
        int step = (int)ceil(a->hi / 8);
        t[n++] = 0;
        for (int k = step; k <= (int)floor(a->hi) && n < max; k += step)
            t[n++] = k;
        return n;
    }
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
    if (ax_decades(a) || (a->count && t > 0))
        decade_label(v, x, y, anchor, (int)t);
    else
        plot_svg_text(v, x, y, v->fs, anchor, v->p->fg, "class=\"tick\"", "%g", t);
}

static double ax_tick_pos(const axis *a, double t)
{
    return a->count ? ax_pos(a, t) : ax_decades(a) ? plot_ax_map(a, pow(10, t)) : plot_ax_map(a, t);
}

/* An axis title centred at x, y within maxw: whole, else without its
 * parenthesis ("layer (0 = next to the input)" -> "layer": the ticks say
 * the rest), and only then in smaller type. */
static void ax_label(svg *v, double x, double y, double maxw, const char *label, const char *extra)
{
    char t[160];
    snprintf(t, sizeof t, "%s", label);
    char *paren = strstr(t, " (");
    if (plot_svg_text_width(t, v->fs, 0) > maxw && paren)
        *paren = 0;
    double wide = plot_svg_text_width(t, v->fs, 0);
    plot_svg_text(v, x, y, wide > maxw ? v->fs * maxw / wide : v->fs, 'm', v->p->fg, extra, "%s", t);
}

/* The widest of an axis' "%g" tick labels (decades are "10" and a small
 * exponent): a linear axis of small values (0.0005) has labels wider than
 * the room an axis title usually leaves them. */
static double ax_ticks_width(const svg *v, const axis *a, const double *t, int n)
{
    double w = 0;
    for (int i = 0; i < n; i++) {
        if (ax_decades(a) || (a->count && t[i] > 0))
            continue;
        char b[32];
        snprintf(b, sizeof b, "%g", t[i]);
        w = fmax(w, plot_svg_text_width(b, v->fs, 0));
    }
    return w;
}

/* Frame, grid lines, tick labels and axis titles of one panel. */
void plot_ax_draw(svg *v, box b, const axis *ax, const axis *ay, const char *xlabel,
                      const char *ylabel)
{
    double t[16];
    fprintf(v->f,
            "<rect class=\"plot-area\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
            "fill=\"none\" stroke=\"%s\" stroke-width=\"2\"",
            b.x, b.y, b.w, b.h, v->p->dim);
    if (ax) /* the range drawn (log10 of it on a log axis), for a reader to compare panels */
        fprintf(v->f, " data-x0=\"%.9g\" data-x1=\"%.9g\"%s", ax->lo, ax->hi,
                ax->log ? " data-xlog=\"1\"" : "");
    if (ay)
        fprintf(v->f, " data-y0=\"%.9g\" data-y1=\"%.9g\"%s", ay->lo, ay->hi,
                ay->log ? " data-ylog=\"1\"" : "");
    fputs("/>\n", v->f);
    int n = ax ? plot_ax_ticks(ax, t, 16) : 0;
    for (int i = 0; i < n; i++) {
        double x = ax_tick_pos(ax, t[i]);
        plot_svg_line(v, x, b.y, x, b.y + b.h, v->p->grid, 1, NULL);
        ax_tick_label(v, ax, t[i], x, b.y + b.h + v->fs * 1.2, 'm');
    }
    n = ay ? plot_ax_ticks(ay, t, 16) : 0;
    for (int i = 0; i < n; i++) {
        double y = ax_tick_pos(ay, t[i]);
        plot_svg_line(v, b.x, y, b.x + b.w, y, v->p->grid, 1, NULL);
        ax_tick_label(v, ay, t[i], b.x - v->fs * 0.4, y + v->fs * 0.35, 'e');
    }
    double ticks_w = ay ? ax_ticks_width(v, ay, t, n) : 0;
    if (xlabel)
        ax_label(v, b.x + b.w / 2, b.y + b.h + v->fs * 2.5, b.w, xlabel, "class=\"axis-label\"");
    if (ylabel) {
        char rot[96];
        /* clear of the widest tick label: its right edge is 0.4 fs off the
         * frame, the rotated title's glyphs 0.3 fs right of x */
        double x = fmin(b.x - v->fs * 3.2, b.x - v->fs * 0.4 - ticks_w - v->fs * 0.5),
               y = b.y + b.h / 2;
        snprintf(rot, sizeof rot, "class=\"axis-label\" transform=\"rotate(-90 %.1f %.1f)\"", x, y);
        ax_label(v, x, y, b.h, ylabel, rot); /* along a short panel's side */
    }
}

/* ---- figures --------------------------------------------------------------------- */

/* The area inside the title and caption, with room for axis labels. */
box plot_frame_content(const svg *v)
{
    double l = v->fs * 5.2, t = v->fs * 4.4 + v->top, r = v->fs * 1.2, bt = v->fs * 4.6 + v->bottom;
    return (box){l, t, v->o->w - l - r, v->o->h - t - bt};
}

/* Split b into n side by side (cols) or stacked, with a gap for labels. */
box plot_frame_part(box b, int i, int n, int cols, double gap)
{
    if (cols) {
        double w = (b.w - gap * (n - 1)) / n;
        return (box){b.x + i * (w + gap), b.y, w, b.h};
    }
    double h = (b.h - gap * (n - 1)) / n;
    return (box){b.x, b.y + i * (h + gap), b.w, h};
}

/* Panels side by side in the left part of the content area, and a
 * column right of them for the legend, apart from the last panel: as
 * wide as the legend needs at body type, while the panels keep 55%. */
void plot_frame_split_legend(const svg *v, double share, const legend *lg, box *panels, box *leg)
{
    box all = plot_frame_content(v);
    double lw = 0, lh;
    if (lg)
        plot_legend_size(lg, v->fs, &lw, &lh);
    double need = 1 - (lw + v->fs * 1.5 - (v->o->w - all.x - all.w)) / all.w;
    *panels = all;
    panels->w = all.w * fmax(0.55, fmin(share, need));
    panels->y += v->fs * 1.2;
    panels->h -= v->fs * 1.2;
    leg->x = panels->x + panels->w + v->fs;
    leg->y = panels->y;
    leg->w = v->o->w - leg->x - v->fs * 0.5;
    leg->h = panels->h;
}
