/* plot_map_scale.c - what colors a --kind map cell (--metric: the final
 * loss, the best validation loss, the update ratio at the end, the share
 * of runs stalled) and how (--scale: MAP_BINS bins, or a gradient through
 * the same colors), and the color bar that reads it back.
 *
 * Not here: the cells and their layout (plot_fig_map.c), reading
 * results.csv (plot_map.c).
 */
#include "plot_int.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* ---- the metrics ----------------------------------------------------------------- */

/* Every one is lower-is-better or neither: the scale's bright end is its
 * low end for all of them, and the caption says which. */
static const map_metric metrics[PLOT_METRICS] = {
    [PLOT_METRIC_LOSS] = {"loss", NULL, "nats", "no finite loss", NULL, "lower (bright) is better",
                          offsetof(sweep_cell, final), 1, 0, 0},
    [PLOT_METRIC_BEST] = {"best_val", "best validation loss", "best val, nats",
                          "no finite loss",
                          "color: the lowest validation loss a run reached (best_val), nats; "
                          "lower is better (bright)", "lower (bright) is better",
                          offsetof(sweep_cell, best), 0, 0, 0},
    [PLOT_METRIC_UPDATE] = {"update_ratio_end", "update ratio at the last step",
                            "update ratio", "no value",
                            "color: the update ratio ||dW||/||W|| at the last step, the mean "
                            "over the layers (update_ratio_end), no unit; bright is smaller, "
                            "neither end is better in itself", NULL,
                            offsetof(sweep_cell, update), 1, 0, 1},
    [PLOT_METRIC_STALLED] = {"stalled", "share of each cell's runs that stalled", "stalled share",
                             "no value",
                             "color: the share of a cell's runs that stalled at the unigram "
                             "plateau, of those that neither diverged nor failed, 0..1, no unit; "
                             "lower is better (bright)", "lower (bright) is better",
                             0, 0, 1, 1},
};

int plot_parse_metric(const char *s, plot_metric *m, char *err, size_t errlen)
{
    size_t k = 0;
    for (int i = 0; i < PLOT_METRICS; i++) {
        if (!strcmp(s, metrics[i].name)) {
            *m = (plot_metric)i;
            return 0;
        }
        if (k < errlen)
            k += (size_t)snprintf(err + k, errlen - k, "%s%s", i ? ", " : "", metrics[i].name);
    }
    return -1;
}

static const map_metric *map_metric_of(plot_metric m) { return &metrics[m]; }

/* The share is over the runs that trained to their end (neither diverged
 * nor failed), the runs the other metrics average: a diverged run was
 * never judged stalled or not, and a cell where every run diverged has
 * no share, not the best one. */
map_value plot_map_cell_value(const map_metric *mt, const plot_map_cell *c)
{
    if (mt->share) {
        int trained = c->runs - c->diverged - c->failed;
        return (map_value){trained ? (double)c->stalled / trained : NAN, NAN, NAN, trained};
    }
    const sweep_stat *s = (const sweep_stat *)(const void *)((const char *)c + mt->stat);
    return (map_value){sweep_stat_mean(s), sweep_stat_sd(s), sweep_stat_ci95(s), s->n};
}

void plot_map_fmt(const map_metric *mt, char *buf, size_t n, double x, int width)
{
    if (!mt->sig) {
        sweep_fmt_loss(buf, n, x, width);
        return;
    }
    snprintf(buf, n, "%.3g", x);
    for (int p = 2; p >= 1 && (int)strlen(buf) > width; p--)
        snprintf(buf, n, "%.*g", p, x);
    if ((int)strlen(buf) > width)
        snprintf(buf, n, "%.0e", x);
}

/* ---- the scale ------------------------------------------------------------------- */

/* The cells' values, lo..hi, but for those off the scale: an exploded
 * run's loss (1e12) would make every other cell one color, so the scale
 * runs from the best trained cell to the plateau where the stalled cells
 * sit. A share runs 0..1, whatever the cells hold. */
void plot_map_scale_make(map_scale *s, const plot_map *m, const plot_opts *o)
{
    s->mt = map_metric_of(o->metric);
    s->continuous = o->continuous;
    s->lo = s->mt->share ? 0 : INFINITY;
    s->hi = s->mt->share ? 1 : -INFINITY;
    for (long i = 0; i < m->ncells && !s->mt->share; i++) {
        map_value v = plot_map_cell_value(s->mt, &m->cell[i]);
        if (v.n && !(m->cell[i].exploded && s->mt->at_end)) {
            s->lo = fmin(s->lo, v.x);
            s->hi = fmax(s->hi, v.x);
        }
    }
    if (!(s->lo <= s->hi))
        s->lo = s->hi = 0;
    if (s->hi - s->lo < 1e-6) {
        s->lo -= 0.005;
        s->hi += 0.005;
    }
}

int plot_map_bin(const map_scale *s, double x)
{
    int b = (int)floor((x - s->lo) / (s->hi - s->lo) * MAP_BINS);
    return b < 0 ? 0 : b >= MAP_BINS ? MAP_BINS - 1 : b;
}

/* The gradient's stops: the bins' colors, evenly from the low end (0) to
 * the high (1), mixed in sRGB between them as an SVG gradient is drawn. */
static double ramp_pos(const map_scale *s, double x)
{
    double t = (x - s->lo) / (s->hi - s->lo);
    return (t < 0 ? 0 : t > 1 ? 1 : t) * (MAP_BINS - 1);
}

int plot_map_fill(const svg *v, const map_scale *s, double x, char *buf)
{
    if (!s->continuous) {
        int b = plot_map_bin(s, x);
        snprintf(buf, 8, "%s", v->p->map[b]);
        return b >= v->p->map_dark;
    }
    double u = ramp_pos(s, x);
    int k = u >= MAP_BINS - 1 ? MAP_BINS - 2 : (int)u;
    unsigned a[3], b[3], c[3];
    sscanf(v->p->map[k], "#%2x%2x%2x", &a[0], &a[1], &a[2]);
    sscanf(v->p->map[k + 1], "#%2x%2x%2x", &b[0], &b[1], &b[2]);
    for (int i = 0; i < 3; i++)
        c[i] = (unsigned)lround(a[i] + (u - k) * ((double)b[i] - a[i]));
    snprintf(buf, 8, "#%02x%02x%02x", c[0] & 255, c[1] & 255, c[2] & 255);
    return (int)floor(u + 0.5) >= v->p->map_dark; /* the nearest stop's type */
}

/* ---- the color bar --------------------------------------------------------------- */

/* The bins, the low end at the bottom, every other one's low edge ticked
 * and the top's high edge. */
static void bar_bins(svg *v, const map_scale *s, double x, double y0, double bw, double bh)
{
    double step = bh / MAP_BINS;
    for (int k = 0; k < MAP_BINS; k++) {
        double lo = s->lo + (s->hi - s->lo) * k / MAP_BINS, hi = s->lo + (s->hi - s->lo) * (k + 1) / MAP_BINS;
        double y = y0 + bh - (k + 1) * step;
        fprintf(v->f, "<rect class=\"colorbar-bin\" data-bin=\"%d\" data-lo=\"%.6g\" data-hi=\"%.6g\" "
                      "x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" stroke=\"%s\"/>\n",
                k, lo, hi, x, y, bw, step, v->p->map[k], v->p->dim);
        char num[32]; /* the bar's width left of the canvas edge: 7 characters */
        plot_map_fmt(s->mt, num, sizeof num, lo, 7);
        if (k % 2 == 0 && k + 2 < MAP_BINS)
            plot_svg_text(v, x + bw + v->fs * 0.4, y + step, v->fs_small, 's', v->p->fg, "class=\"tick\"", "%s", num);
    }
    char num[32];
    plot_map_fmt(s->mt, num, sizeof num, s->hi, 7);
    plot_svg_text(v, x + bw + v->fs * 0.4, y0 + v->fs_small * 0.35, v->fs_small, 's', v->p->fg, "class=\"tick\"",
         "%s", num);
}

/* The gradient through the bins' colors, the low end at the bottom, ticked
 * at 1-2-5 steps (a tick's data-value is the value at its height). */
static void bar_ramp(svg *v, const map_scale *s, double x, double y0, double bw, double bh)
{
    fputs("<defs><linearGradient id=\"mapramp\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">", v->f);
    for (int k = 0; k < MAP_BINS; k++)
        fprintf(v->f, "<stop offset=\"%.6g\" stop-color=\"%s\"/>", (double)k / (MAP_BINS - 1), v->p->map[k]);
    fputs("</linearGradient></defs>\n", v->f);
    fprintf(v->f, "<rect class=\"colorbar-ramp\" data-lo=\"%.6g\" data-hi=\"%.6g\" x=\"%.1f\" y=\"%.1f\" "
                  "width=\"%.1f\" height=\"%.1f\" fill=\"url(#mapramp)\" stroke=\"%s\"/>\n",
            s->lo, s->hi, x, y0, bw, bh, v->p->dim);
    axis a = {.lo = s->lo, .hi = s->hi, .p0 = y0 + bh, .p1 = y0};
    double t[16];
    int n = plot_ax_ticks(&a, t, 16);
    for (int i = 0; i < n; i++) {
        double y = plot_ax_map(&a, t[i]);
        char num[32];
        plot_map_fmt(s->mt, num, sizeof num, t[i], 7);
        fprintf(v->f, "<line class=\"colorbar-tick\" data-value=\"%.6g\" x1=\"%.1f\" y1=\"%.1f\" "
                      "x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"%.1f\"/>\n",
                t[i], x + bw - v->fs * 0.3, y, x + bw + v->fs * 0.2, y, v->p->fg, 1.5 * v->s);
        plot_svg_text(v, x + bw + v->fs * 0.4, y + v->fs_small * 0.35, v->fs_small, 's', v->p->fg,
                 "class=\"tick\"", "%s", num);
    }
}

/* A swatch of the marks' legend at y: the box's fill, or none */
static double legend_swatch(svg *v, double x, double y, double bw, const char *fill, const char *text)
{
    fprintf(v->f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>\n", x,
            y - v->fs, bw, v->fs, fill);
    plot_svg_text(v, x + bw + v->fs * 0.4, y - v->fs * 0.15, v->fs_small, 's', v->p->fg, NULL, "%s", text);
    return y + v->fs * 1.6;
}

void plot_map_colorbar(svg *v, const map_scale *s, box b)
{
    double bh = fmin(b.h * 0.55, v->fs * 1.6 * MAP_BINS), bw = v->fs * 1.6;
    double x = b.x + v->fs, y0 = b.y + v->fs * 1.6;
    plot_svg_text_fit(v, b.x, b.y + v->fs * 0.5, b.w, v->fs, v->p->fg, "class=\"colorbar-title\"", s->mt->bar);
    if (s->mt->better) { /* a map read alone: which end to look for */
        plot_svg_text_fit(v, b.x, b.y + v->fs * 1.6, b.w, v->fs_small, v->p->fg, "class=\"colorbar-better\"",
                          s->mt->better);
        y0 += v->fs * 1.1;
    }
    fputs("<g class=\"colorbar\">\n", v->f);
    if (s->continuous)
        bar_ramp(v, s, x, y0, bw, bh);
    else
        bar_bins(v, s, x, y0, bw, bh);
    fputs("</g>\n", v->f);
    double ly = legend_swatch(v, x, y0 + bh + v->fs * 2, bw, "url(#nan)", s->mt->none);
    if (s->mt->at_end) /* only a value at the end is left off for an explosion */
        ly = legend_swatch(v, x, ly, bw, "url(#exploded)", "exploded");
    plot_svg_line(v, x, ly, x + bw, ly - v->fs, v->p->explode, 3 * v->s, NULL); /* mono's: black */
    plot_svg_line(v, x, ly - v->fs, x + bw, ly, v->p->explode, 3 * v->s, NULL);
    plot_svg_text(v, x + bw + v->fs * 0.4, ly - v->fs * 0.15, v->fs_small, 's', v->p->fg, NULL, "diverged");
    ly += v->fs * 1.6;
    fprintf(v->f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"%s\" "
                  "stroke-width=\"2\" stroke-dasharray=\"8 5\"/>\n", x, ly - v->fs, bw, v->fs, v->p->fg);
    plot_svg_text(v, x + bw + v->fs * 0.4, ly - v->fs * 0.15, v->fs_small, 's', v->p->fg, NULL, "stalled");
}
