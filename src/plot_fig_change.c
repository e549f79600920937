/* plot_fig_change.c - --kind change: out_change over the run, how far
 * each update moved the output (the relative change of a fixed batch's
 * logits; Liu et al. 2020, Wang et al. 2022), the runs of a comparison on
 * one log axis, so Post-LN's first updates stand over DeepNorm's or a
 * warmed-up run's. Measured on the first 100 steps and at each
 * validation after: a line through the measured steps, a marker on each
 * when they are few; a step not measured is no point (not 0).
 *
 * Not here: the column (plot_data.c), the measurement (engine.c).
 */
#include "plot_int.h"

#include <math.h>
#include <stdio.h>

/* The finite positive range of out_change over the runs; the steps. */
static void change_range(const plot_data *d, double *lo, double *hi, long *x0, long *x1)
{
    *lo = INFINITY, *hi = -INFINITY;
    *x0 = d->run[0].step[0], *x1 = *x0;
    for (int r = 0; r < d->nruns; r++)
        for (long i = 0; i < d->run[r].n; i++) {
            double y = d->run[r].oc[i];
            long x = d->run[r].step[i];
            *x0 = x < *x0 ? x : *x0;
            *x1 = x > *x1 ? x : *x1;
            if (isfinite(y) && y > 0)
                *lo = fmin(*lo, y), *hi = fmax(*hi, y);
        }
    if (*lo > *hi) /* nothing measured and finite: an empty decade */
        *lo = 0.01, *hi = 0.1;
    if (*x1 <= *x0)
        *x1 = *x0 + 1;
}

/* Run r's measured steps only, so the line joins them across the
 * steps between (-inf rows, skipped by the series). */
static void draw_run(svg *v, const axis *ax, const axis *ay, const plot_data *d, int r,
                     legend *lg)
{
    const plot_run *p = &d->run[r];
    const char *color = r ? v->p->twin : v->p->train;
    const char *dash = v->o->mono ? plot_svg_mono_dash[r * 2] : "";
    char name[96];
    snprintf(name, sizeof name, "out_change%s%s", d->nruns > 1 ? " " : "",
             d->nruns > 1 ? p->label : "");
    if (plot_series_draw(v, ax, ay, p->step, p->oc, p->n, 1, name, color, dash, 3 * v->s) > 0)
        plot_legend_add(lg, color, dash, r ? SH_SQUARE : SH_CIRCLE, 0, 1, "%s", name);
    plot_series_draw_points(v, ax, ay, p->step, p->oc, p->n, r ? SH_SQUARE : SH_CIRCLE, color);
}

int plot_fig_change(svg *v, const plot_data *d)
{
    legend lg = {0};
    plot_frame_draw(v, d, d->nruns > 1 ? "How far each update moves the output: two runs"
                                       : "How far each update moves the output");
    box b = plot_frame_content(v);
    double lo, hi;
    long x0, x1;
    change_range(d, &lo, &hi, &x0, &x1);
    axis ax = {.p0 = b.x, .p1 = b.x + b.w}, ay = {.p0 = b.y + b.h, .p1 = b.y};
    plot_ax_fit(&ax, (double)x0, (double)x1, 0, 0);
    plot_ax_fit(&ay, lo, hi, 1, 0.05);
    plot_ax_draw(v, b, &ax, &ay, "step (optimizer updates)",
                 "out_change: ||f(x; w_t) - f(x; w_t-1)|| / ||f(x; w_t-1)|| (log)");
    fputs("<g class=\"change\">\n", v->f);
    for (int r = 0; r < d->nruns; r++)
        if (d->run[r].has_oc)
            draw_run(v, &ax, &ay, d, r, &lg);
    fputs("</g>\n", v->f);
    for (int r = 0; r < d->nruns; r++)
        if (plot_loss_draw_nonfinite(v, b, &ax, d, r))
            plot_legend_add(&lg, v->p->explode, NULL, r ? SH_TRIANGLE_DOWN : SH_TRIANGLE, 0, 1,
                            "%s%sa step not finite", d->nruns > 1 ? (r ? "b" : "a") : "",
                            d->nruns > 1 ? ": " : "");
    plot_legend_draw_at(v, b.x + b.w * 0.55, b.y + v->fs, v->fs, &lg);
    return 0;
}
