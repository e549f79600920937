/* plot_fig_layers.c - the per-layer gradient norms at one step as bars
 * (output at the top, log axis, colored by state as the live view shows
 * them), one panel per run.
 *
 * Not here: the live view's own bars (tui_layers.c).
 */
#include "plot_int.h"

#include "scale.h"
#include <math.h>
#include <string.h>

/* ---- per-layer bars at one step -------------------------------------------------- */



static const char *state_color(const svg *v, double x, double gmax)
{
    switch (scale_grad_state_of(x, gmax)) {
    case SCALE_G_VANISH: return v->p->vanish;
    case SCALE_G_EXPLODE: return v->p->explode;
    case SCALE_G_NONFINITE: return v->p->nan;
    default: return v->p->normal;
    }
}

/* The decades the bars span, one axis for every panel (rows[r]: run r's
 * row), so bars of equal length are equal gradients in each: at least the
 * live view's 1e-5 .. 1e+2. */
void plot_layers_axis(const plot_data *d, const long *rows, axis *a)
{
    double lo = SCALE_GRAD_LO, hi = SCALE_GRAD_HI;
    for (int r = 0; r < d->nruns; r++) {
        const plot_run *p = &d->run[r];
        for (int l = 0; l < p->L; l++) {
            float g[2] = {p->lc[METRICS_LC_GRAD_ATTN][rows[r] * p->L + l],
                          p->lc[METRICS_LC_GRAD_FFN][rows[r] * p->L + l]};
            for (int k = 0; k < 2; k++)
                if (isfinite(g[k]) && g[k] > 0) {
                    lo = fmin(lo, floor(log10(g[k])));
                    hi = fmax(hi, ceil(log10(g[k])));
                }
        }
    }
    *a = (axis){.log = 1, .lo = lo, .hi = hi};
}

/* One bar: its state's color; an MLP bar (hatched) under the hatching
 * that tells it from the attention's in the same color, so the state
 * keeps its color in both parts (a translucent one came within 12
 * CIEDE2000 of another state for a tritanope); in --mono the ground,
 * framed. */
static void draw_bar(svg *v, box b, const axis *ax, int l, const char *part, double g, double y,
                     double h, const char *color, int hatched)
{
    if (!isfinite(g)) {
        fprintf(v->f, "<rect class=\"nan\" data-layer=\"%d\" data-part=\"%s\" x=\"%.1f\" y=\"%.1f\" "
                      "width=\"%.1f\" height=\"%.1f\" fill=\"url(#nan)\"/>\n",
                l, part, b.x, y, b.w, h);
        plot_svg_text(v, b.x + v->fs * 0.3, y + h * 0.5 + v->fs * 0.3, v->fs_small, 's', v->p->fg, NULL, "%s",
                 isnan(g) ? "nan" : "inf");
        return;
    }
    double x1 = g > 0 ? plot_ax_map(ax, g) : b.x;
    if (x1 < b.x)
        x1 = b.x;
    if (g == 0) /* no bar on a log axis: say it is exactly 0, not missing */
        plot_svg_text(v, b.x + v->fs * 0.3, y + h * 0.5 + v->fs * 0.3, v->fs_small, 's', v->p->dim,
                 "class=\"zero\"", "0");
    fprintf(v->f, "<rect class=\"bar\" data-layer=\"%d\" data-part=\"%s\" data-value=\"%.6g\" "
                  "x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"",
            l, part, g, b.x, y, x1 - b.x, h, v->o->mono && hatched ? v->p->bg : color);
    if (v->o->mono)
        fprintf(v->f, " stroke=\"%s\" stroke-width=\"1.5\"", v->p->fg);
    fputs("/>\n", v->f);
    if (hatched && !v->o->mono)
        fprintf(v->f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"url(#hatch)\"/>\n",
                b.x, y, x1 - b.x, h);
}

/* Bars of each layer's attention and MLP gradient norms at one row, the
 * output layer at the top, as the live view's panel. */
void plot_layers_panel_draw(svg *v, box b, const axis *scale, const plot_run *r, long row,
                       const char *title, legend *lg)
{
    axis ax = *scale;
    ax.p0 = b.x;
    ax.p1 = b.x + b.w;
    plot_ax_draw(v, b, &ax, NULL, "gradient norm ||dL/dW|| (log scale)", "layer (0 = next to the input)");
    plot_svg_text_fit(v, b.x, b.y - v->fs * 0.5, b.w, v->fs, v->p->fg, "class=\"panel-title\"", title);
    double gmax = 0;
    for (int l = 0; l < r->L; l++) {
        float g[2] = {r->lc[METRICS_LC_GRAD_ATTN][row * r->L + l],
                      r->lc[METRICS_LC_GRAD_FFN][row * r->L + l]};
        for (int k = 0; k < 2; k++)
            if (isfinite(g[k]) && g[k] > gmax)
                gmax = g[k];
    }
    double rh = b.h / (r->L > 0 ? r->L : 1);
    int every = (int)ceil(v->fs * 1.1 / rh);
    for (int l = 0; l < r->L; l++) {
        double y = b.y + (r->L - 1 - l) * rh;
        double ga = r->lc[METRICS_LC_GRAD_ATTN][row * r->L + l],
               gf = r->lc[METRICS_LC_GRAD_FFN][row * r->L + l];
        draw_bar(v, b, &ax, l, "attn", ga, y + rh * 0.08, rh * 0.4, state_color(v, ga, gmax), 0);
        draw_bar(v, b, &ax, l, "mlp", gf, y + rh * 0.52, rh * 0.4, state_color(v, gf, gmax), 1);
        if (l % (every > 0 ? every : 1) == 0)
            plot_svg_text(v, b.x - v->fs * 0.4, y + rh / 2 + v->fs * 0.35, v->fs, 'e', v->p->fg, "class=\"tick\"",
                 "%d", l);
    }
    if (lg->n)
        return;
    plot_legend_add(lg, v->p->normal, NULL, SH_NONE, 1, 1, "attention (upper)");
    plot_legend_add(lg, v->p->normal, NULL, SH_NONE, 2, 1, "MLP (lower, hatched)");
    if (!v->o->mono) {
        plot_legend_add(lg, v->p->vanish, NULL, SH_NONE, 1, 1, "vanishing (<1e-3 max)");
        plot_legend_add(lg, v->p->explode, NULL, SH_NONE, 1, 1, "exploding (>10)");
    }
}

int plot_fig_layers(svg *v, const plot_data *d, char *err, size_t errlen)
{
    long steps[PLOT_MAX_STEPS], rows[2 * PLOT_MAX_STEPS];
    if (plot_frame_pick_steps(d, v->o, 0, steps, rows, err, errlen) < 0)
        return -1;
    char title[128];
    snprintf(title, sizeof title, "Gradient norm of each layer at step %ld", steps[0]);
    plot_frame_draw(v, d, title);
    box all, leg;
    plot_frame_split_legend(v, 0.74, NULL, &all, &leg);
    legend lg = {0};
    long at[2] = {rows[0], rows[PLOT_MAX_STEPS]};
    axis scale;
    plot_layers_axis(d, at, &scale);
    for (int r = 0; r < d->nruns; r++) {
        box b = plot_frame_part(all, r, d->nruns, 1, v->fs * 5.5);
        char t[128];
        plot_frame_run_title(d, r, t, sizeof t);
        plot_layers_panel_draw(v, b, &scale, &d->run[r], at[r], t, &lg);
    }
    plot_legend_draw_beside(v, leg, &lg);
    return 0;
}
