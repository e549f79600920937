/* plot_fig_profile.c - the MLP and attention gradient norms against depth
 * at chosen steps, one line per run, step and part: the picture of Xiong
 * et al. 2020, "On Layer Normalization in the Transformer Architecture",
 * Fig. 3.
 *
 * Not here: choosing the steps (plot_frame.c).
 */
#include "plot_int.h"

#include <math.h>
#include <stdio.h>

/* ---- gradient norm against depth ------------------------------------------------- */

/* The two parts of a block the lessons speak of, drawn as their own
 * lines: a block's total would hide an MLP profile under the attention's
 * (Post-LN's layer 0 attention at initialization is several times its MLP). */
static const float *profile_part(const plot_run *p, int part)
{
    return p->lc[part ? METRICS_LC_GRAD_ATTN : METRICS_LC_GRAD_FFN];
}

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

/* The legend, one entry per run, step and part in the order they are
 * drawn (entry (r * nsteps + k) * 2 + part): built before the panel, so the
 * panel can leave its column the room it needs. One color per run and
 * step (runs apart first), MLP solid and attention dashed; in --mono one
 * dash per run and step, the parts told apart by marker shape (MLP circle /
 * square, attention triangle / diamond for a / b) and width. More run and
 * step pairs than colors (two runs of five steps or more): one color per
 * step, and run b's lines dotted (MLP) and dash-dotted (attention), so no
 * two lines share a color and a dash. */
static void profile_legend(const svg *v, const plot_data *d, const long *steps, int nsteps,
                           legend *lg)
{
    static const char *const part_name[2] = {"MLP", "attention"};
    static const char *const dash[2][2] = {{"", "10 6"}, {"2 4", "10 4 2 4"}}; /* [b][part] */
    int by_step = d->nruns * nsteps > PLOT_MAX_STEPS;
    for (int r = 0; r < d->nruns; r++)
        for (int k = 0; k < nsteps; k++) {
            int g = by_step ? k : r * nsteps + k;
            for (int part = 0; part < 2; part++)
                plot_legend_add(lg, v->p->step[g], v->o->mono ? plot_svg_mono_dash[g] : dash[by_step && r][part],
                           part ? (r ? SH_DIAMOND : SH_TRIANGLE) : (r ? SH_SQUARE : SH_CIRCLE), 0, 1,
                           "%s, step %ld%s%s", part_name[part], steps[k], d->nruns > 1 ? ", " : "",
                           d->nruns > 1 ? d->run[r].label : "");
        }
}

static void draw_profile_panel(svg *v, box b, const plot_data *d, const long *steps, int nsteps,
                               const long *rows, const legend *lg)
{
    int L = d->run[0].L;
    double lo, hi;
    profile_range(d, rows, nsteps, &lo, &hi);
    axis ax = {.p0 = b.x, .p1 = b.x + b.w, .log = 0, .lo = -0.3, .hi = L - 1 + 0.3, .integer = 1};
    axis ay = {.p0 = b.y + b.h, .p1 = b.y};
    plot_ax_fit(&ay, lo, hi, 1, 0.05);
    plot_ax_draw(v, b, &ax, &ay, "layer (depth: 0 = next to the input, right = output)",
            "gradient norm ||dL/dW|| (log)");
    long xs[NS_MAX_LAYERS]; /* each run's own depth: a file may give b fewer layers */
    for (int l = 0; l < NS_MAX_LAYERS; l++)
        xs[l] = l;
    for (int r = 0; r < d->nruns; r++)
        for (int k = 0; k < nsteps; k++) {
            const plot_run *p = &d->run[r];
            long i = rows[r * PLOT_MAX_STEPS + k];
            for (int part = 0; part < 2; part++) {
                const legend_entry *e = &lg->e[(r * nsteps + k) * 2 + part];
                const float *y = profile_part(p, part) + i * p->L;
                fprintf(v->f, "<g class=\"profile\" data-run=\"%d\" data-step=\"%ld\" data-part=\"%s\">\n",
                        r, steps[k], part ? "attn" : "mlp");
                plot_series_draw(v, &ax, &ay, xs, y, p->L, 1, e->text, e->color, e->dash,
                            (part && v->o->mono ? 2 : 3) * v->s);
                for (int l = 0; l < p->L && L <= 32; l++)
                    if (isfinite(y[l]) && y[l] > 0)
                        plot_svg_shape(v, e->shape, plot_ax_map(&ax, l), plot_ax_map(&ay, y[l]), v->fs * 0.25, e->color);
                fputs("</g>\n", v->f);
            }
        }
}

int plot_fig_profile(svg *v, const plot_data *d, char *err, size_t errlen)
{
    long steps[PLOT_MAX_STEPS], rows[2 * PLOT_MAX_STEPS];
    int n = plot_frame_pick_steps(d, v->o, 1, steps, rows, err, errlen);
    if (n < 0)
        return -1;
    plot_frame_draw(v, d, "Gradient norm against depth: MLP and attention of each block");
    legend lg = {0};
    profile_legend(v, d, steps, n, &lg);
    box b, leg;
    plot_frame_split_legend(v, 0.7, &lg, &b, &leg);
    draw_profile_panel(v, b, d, steps, n, rows, &lg);
    plot_legend_draw_beside(v, leg, &lg);
    return 0;
}
