/* plot_fig_precision.c - the per-layer figures over time: each layer over
 * the run, a panel per run and quantity, on axes the runs share.
 *
 *   headroom   the largest |activation| of each layer (log), under the
 *              format's limit (act max * 2^headroom, the largest value a
 *              norm's square or the format itself can hold), and the
 *              headroom log2(limit / act max): the doublings left before
 *              it overflows, 0 at the limit.
 *   overflow   the values rounded to inf, and the nonzero values rounded
 *              to zero or a subnormal, each step: counts, from 0 up on a
 *              log scale (a log axis has no place for 0).
 *   series     any per-layer column of the table (--metric NAME, a name of
 *              metrics_layer_cols: act_max, update_ratio, ...): one row of
 *              panels, on a log axis when its values are positive and span
 *              two decades or more, else on a linear one from 0.
 *
 * One line per layer, colored by depth on viridis (dark near the input,
 * bright near the output; in --mono greys and dashes); the step where a
 * run diverged ticked and labelled as on the loss figure.
 *
 * Not here: the columns (plot_data.c), the live view's rows (tui_layers.c).
 */
#include "plot_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *title;
    const char *ylabel[2];
    int q[2];  /* the layer columns drawn (METRICS_LC_*), a row of panels each */
    int nrow;  /* 1 or 2 */
    int count; /* the quantities are counts */
    int limit; /* act max under the format's limit, headroom above 0 */
    int log[2]; /* row j on a log axis */
} precision_kind;

static const precision_kind kind_headroom = {
    "Activations of each layer over the run: the largest |x| and its headroom",
    {"largest |activation| (log)", "headroom (doublings left)"},
    {METRICS_LC_ACT_MAX, METRICS_LC_HEADROOM},
    2, 0, 1, {1, 0}};
static const precision_kind kind_overflow = {
    "Overflow and underflow of each layer over the run",
    {"overflows (values rounded to inf)", "underflows (to 0 or a subnormal)"},
    {METRICS_LC_OVERFLOW, METRICS_LC_UNDERFLOW},
    2, 1, 0, {0, 0}};

/* Layer l of L's color: viridis without its darkest stop (unseen on the
 * dark ground), lightness rising toward the output; in --light without its
 * two brightest (its yellow and lime faint on white), so from purple to
 * green; --mono grey from #a0a0a0 near the input to black. */
static void depth_color(const svg *v, int l, int L, char out[8])
{
    double t = L > 1 ? (double)l / (L - 1) : 1;
    unsigned c[3];
    if (v->o->mono) {
        c[0] = c[1] = c[2] = (unsigned)lround(0xa0 * (1 - t));
    } else {
        int first = v->o->light ? 0 : 1, segs = v->o->light ? 4 : 5;
        double pos = t * segs;
        int i = pos >= segs ? segs - 1 : (int)pos;
        double f = pos - i;
        unsigned a[3], b[3];
        sscanf(v->p->heat[first + i], "#%2x%2x%2x", &a[0], &a[1], &a[2]);
        sscanf(v->p->heat[first + 1 + i], "#%2x%2x%2x", &b[0], &b[1], &b[2]);
        for (int k = 0; k < 3; k++)
            c[k] = (unsigned)lround(a[k] + (b[k] - (double)a[k]) * f);
    }
    snprintf(out, 8, "#%02x%02x%02x", c[0] & 0xff, c[1] & 0xff, c[2] & 0xff);
}

/* Layer l's values of quantity q on the timeline the run ended on (a
 * rewind's abandoned rows -inf, skipped). NULL when out of memory. */
static float *layer_column(const plot_run *p, int q, int l)
{
    float *y = malloc(sizeof(float) * (size_t)(p->n > 0 ? p->n : 1));
    for (long i = 0; y && i < p->n; i++)
        y[i] = !p->live || p->live[i] ? p->lc[q][i * p->L + l] : -INFINITY;
    return y;
}

/* The format's limit at each row (act max * 2^headroom of layer 0), a gap
 * where it is above the axis (fp32's 3.4e38 over activations of 10). */
static float *limit_column(const plot_run *p, const axis *ay)
{
    float *y = malloc(sizeof(float) * (size_t)(p->n > 0 ? p->n : 1));
    for (long i = 0; y && i < p->n; i++) {
        double am = p->lc[METRICS_LC_ACT_MAX][i * p->L], hr = p->lc[METRICS_LC_HEADROOM][i * p->L];
        double lim = am * exp2(hr);
        y[i] = (p->live && !p->live[i]) ? -INFINITY : lim > pow(10, ay->hi) ? NAN : (float)lim;
    }
    return y;
}

/* Quantity q's finite range over every run and layer (> 0 on a log axis). */
static void lx_range(const plot_data *d, int q, int log_, double *lo, double *hi)
{
    *lo = INFINITY;
    *hi = -INFINITY;
    for (int r = 0; r < d->nruns; r++)
        for (long i = 0; i < d->run[r].n * d->run[r].L; i++) {
            double x = d->run[r].lc[q][i];
            if (isfinite(x) && (!log_ || x > 0)) {
                *lo = fmin(*lo, x);
                *hi = fmax(*hi, x);
            }
        }
}

static void step_range(const plot_data *d, axis *ax)
{
    long x0 = d->run[0].step[0], x1 = x0;
    for (int r = 0; r < d->nruns; r++)
        for (long i = 0; i < d->run[r].n; i++) {
            x0 = d->run[r].step[i] < x0 ? d->run[r].step[i] : x0;
            x1 = d->run[r].step[i] > x1 ? d->run[r].step[i] : x1;
        }
    plot_ax_fit(ax, (double)x0, (double)(x1 > x0 ? x1 : x0 + 1), 0, 0);
}

/* The y axis of row j, shared by the runs: headroom always shows its 0. */
static void row_axis(const plot_data *d, const precision_kind *k, int j, axis *ay)
{
    double lo, hi;
    lx_range(d, k->q[j], k->log[j], &lo, &hi);
    if (k->count) {
        plot_ax_fit_count(ay, hi);
    } else if (k->limit && k->q[j] == METRICS_LC_ACT_MAX) {
        for (int r = 0; r < d->nruns; r++) { /* the limit too, where it is finite */
            const plot_run *p = &d->run[r];
            for (long i = 0; i < p->n; i++) {
                double lim = p->lc[METRICS_LC_ACT_MAX][i * p->L] *
                             exp2(p->lc[METRICS_LC_HEADROOM][i * p->L]);
                if (isfinite(lim) && lim > 0 && lim < 1e30)
                    hi = fmax(hi, lim);
            }
        }
        plot_ax_fit(ay, lo, hi, 1, 0.05);
    } else if (k->log[j]) {
        plot_ax_fit(ay, lo, hi, 1, 0.05);
    } else if (lo > hi) { /* no finite value: an empty axis, not one from inf */
        plot_ax_fit(ay, 0, 1, 0, 0.05);
    } else {
        plot_ax_fit(ay, fmin(lo, 0), fmax(hi, 0), 0, 0.05);
    }
}

/* The line a quantity must stay off: the limit on act max, 0 on headroom. */
static void draw_limit(svg *v, box b, const axis *ax, const axis *ay, const plot_run *p, int q)
{
    if (q == METRICS_LC_HEADROOM) {
        double y = plot_ax_map(ay, 0);
        plot_svg_line(v, b.x, y, b.x + b.w, y, v->p->explode, 2.5 * v->s, "10 6");
        return;
    }
    float *lim = limit_column(p, ay);
    if (lim)
        plot_series_draw(v, ax, ay, p->step, lim, p->n, 1, "the format's limit", v->p->explode, "10 6",
                    2.5 * v->s);
    free(lim);
}

static void draw_precision_panel(svg *v, box b, const plot_data *d, int r, int j,
                                 const precision_kind *k, const axis *ax_in, const axis *ay_in,
                                 const char (*colors)[8])
{
    const plot_run *p = &d->run[r];
    axis ax = *ax_in, ay = *ay_in;
    ax.p0 = b.x;
    ax.p1 = b.x + b.w;
    ay.p0 = b.y + b.h;
    ay.p1 = b.y;
    plot_ax_draw(v, b, &ax, &ay, j == k->nrow - 1 ? "step (optimizer updates)" : NULL, k->ylabel[j]);
    char t[128];
    plot_frame_run_title(d, r, t, sizeof t);
    if (j == 0 && t[0])
        plot_svg_text_fit(v, b.x, b.y - v->fs * 0.5, b.w, v->fs, v->p->fg, "class=\"panel-title\"", t);
    if (k->limit)
        draw_limit(v, b, &ax, &ay, p, k->q[j]);
    fprintf(v->f, "<g class=\"precision\" data-run=\"%d\" data-quantity=\"%s\">\n", r,
            metrics_layer_cols[k->q[j]].name);
    for (int l = 0; l < p->L; l++) {
        float *y = layer_column(p, k->q[j], l);
        if (!y)
            break;
        char name[48];
        snprintf(name, sizeof name, "layer %d", l);
        plot_series_draw(v, &ax, &ay, p->step, y, p->n, 1, name, colors[l],
                    v->o->mono ? plot_svg_mono_dash[l % 8] : "", 2.5 * v->s);
        free(y);
    }
    fputs("</g>\n", v->f);
    if (j == 0)
        plot_loss_draw_nonfinite(v, b, &ax, d, r);
}

/* Every layer's entry up to 12, else every few and the last. */
static void precision_legend(const svg *v, const plot_data *d, const precision_kind *k,
                             const char (*colors)[8], legend *lg)
{
    int L = d->run[0].L, every = L <= 12 ? 1 : (L + 9) / 10;
    for (int l = 0; l < L; l++)
        if (l % every == 0 || l == L - 1)
            plot_legend_add(lg, colors[l], v->o->mono ? plot_svg_mono_dash[l % 8] : "", SH_NONE, 0, 1, "layer %d%s", l,
                       l == 0 ? " (input side)" : l == L - 1 ? " (output side)" : "");
    if (k->limit)
        plot_legend_add(lg, v->p->explode, "10 6", SH_NONE, 0, 1, "limit (headroom 0)");
}

/* Does column q span two decades or more of positive values (every
 * finite one > 0)? Then a log axis shows each layer's own scale. */
static int wants_log(const plot_data *d, int q)
{
    double lo, hi;
    lx_range(d, q, 0, &lo, &hi);
    return lo > 0 && hi >= lo * 100;
}

/* --kind series: column q, one row of panels; text[0] its title, text[1]
 * its axis' label. */
static precision_kind series_kind(const plot_data *d, int q, char (*text)[96])
{
    const char *name = metrics_layer_cols[q].name;
    int lg = wants_log(d, q);
    snprintf(text[0], 96, "%s of each layer over the run (l<i>_%s)", name, name);
    snprintf(text[1], 96, "%s%s", name, lg ? " (log)" : "");
    return (precision_kind){text[0], {text[1], ""}, {q, q}, 1, 0, 0, {lg, 0}};
}

int plot_fig_precision(svg *v, const plot_data *d, plot_kind kind)
{
    char text[2][96];
    precision_kind series = {0};
    if (kind == PLOT_SERIES)
        series = series_kind(d, v->o->column, text);
    const precision_kind *k = kind == PLOT_HEADROOM ? &kind_headroom
                              : kind == PLOT_OVERFLOW ? &kind_overflow : &series;
    char colors[NS_MAX_LAYERS][8]; /* by run a's depth; a deeper run b's past it the top's */
    int L = d->run[0].L;
    for (int l = 0; l < NS_MAX_LAYERS; l++)
        depth_color(v, l < L ? l : L - 1, L, colors[l]);
    plot_frame_draw(v, d, k->title);
    legend lg = {0};
    precision_legend(v, d, k, colors, &lg);
    box all, leg;
    plot_frame_split_legend(v, 0.8, &lg, &all, &leg);
    axis ax = {.lo = 0}, ay[2] = {{.lo = 0}, {.lo = 0}};
    step_range(d, &ax);
    for (int j = 0; j < k->nrow; j++) {
        row_axis(d, k, j, &ay[j]);
        box row = plot_frame_part(all, j, k->nrow, 0, v->fs * 3.2);
        for (int r = 0; r < d->nruns; r++)
            draw_precision_panel(v, plot_frame_part(row, r, d->nruns, 1, v->fs * 5.5), d, r, j, k, &ax,
                                 &ay[j], (const char (*)[8])colors);
    }
    plot_legend_draw_beside(v, leg, &lg);
    return 0;
}
