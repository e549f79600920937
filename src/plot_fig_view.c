/* plot_fig_view.c - the live view's g: its loss chart and each run's
 * layer panel at the last step, side by side as the bars view shows them.
 *
 * Not here: the panels themselves (plot_fig_loss.c, plot_fig_layers.c).
 */
#include "plot_int.h"

#include <stdio.h>

/* The live view's g: the loss chart, and the last step's layer panel of
 * each run, as the bars view shows them side by side. */
int plot_fig_view(svg *v, const plot_data *d)
{
    char title[96];
    const plot_run *a = &d->run[0];
    snprintf(title, sizeof title, "normscope at step %ld", a->step[a->n - 1]);
    plot_frame_draw(v, d, title);
    box all = plot_frame_content(v);
    double gap = v->fs * 5.5; /* a bar panel's layer numbers and axis title */
    box chart = {all.x, all.y, all.w * 0.52, all.h};
    box bars = {chart.x + chart.w + gap, all.y + v->fs * 2.4, all.w - chart.w - gap,
                all.h - v->fs * 2.4};
    legend lg = {0}, lb = {0};
    plot_loss_panel_draw(v, chart, d, &lg);
    plot_svg_text_fit(v, bars.x - gap + v->fs * 1.5, all.y + v->fs * 0.6, bars.w + gap - v->fs * 1.5, v->fs_small,
             v->p->dim, "class=\"panel-note\"", "layer bars at the last step: upper attention, lower MLP");
    long last[2] = {d->run[0].n - 1, d->run[1].n - 1};
    axis scale;
    plot_layers_axis(d, last, &scale);
    for (int r = 0; r < d->nruns; r++) { /* stacked: side by side they would be too narrow */
        char t[128];
        plot_frame_run_title(d, r, t, sizeof t);
        plot_layers_panel_draw(v, plot_frame_part(bars, r, d->nruns, 0, v->fs * 4.6), &scale, &d->run[r],
                          last[r], t, &lb);
    }
    return 0; /* the bars' legend would cover them: their colors are the live view's */
}
