/* plot_fig_heatmap.c - each layer's gradient norm over the run as a
 * layers x steps heatmap on a viridis ramp (van der Walt and Smith 2015),
 * buckets of steps per pixel column, a non-finite bucket hatched.
 *
 * Not here: the live view's heatmap (tui_*.c); the levels (scale.c).
 */
#include "plot_int.h"

#include "scale.h"
#include <math.h>
#include <stdlib.h>

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
    plot_ax_draw(v, b, NULL, NULL, "step", "layer (0 = next to the input)");
    plot_svg_text_fit(v, b.x, b.y - v->fs * 0.4, r->abandoned ? b.w * 0.45 : b.w, v->fs, v->p->fg,
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
        plot_svg_text(v, b.x - v->fs * 0.4, b.y + (r->L - 1 - l) * rh + rh / 2 + v->fs * 0.35, v->fs, 'e', v->p->fg,
             "class=\"tick\"", "%d", l);
    fputs("<g class=\"heat-ticks\">\n", v->f);
    for (int k = 0; k < 5 && n > 0; k++) {
        long j = k * (C - 1) / 4, i = j * n / C;
        plot_svg_text(v, b.x + (j + 0.5) * cw, b.y + b.h + v->fs * 1.2, v->fs, 'm', v->p->fg, "class=\"tick\"", "%ld",
             r->step[rows[i]]);
        if (C < 5)
            break;
    }
    fputs("</g>\n", v->f);
    if (r->abandoned) /* what a rewind replaced is not drawn: say so in the panel */
        plot_svg_text(v, b.x + b.w, b.y - v->fs * 0.4, v->fs_small, 'e', v->p->dim, "class=\"panel-note\"",
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
        plot_legend_add(lg, v->p->heat[k], NULL, SH_NONE, 1, 1, "%s", names[k]);
    plot_legend_add(lg, "url(#nan)", NULL, SH_NONE, 1, 1, "not finite");
}

int plot_fig_heatmap(svg *v, const plot_data *d)
{
    plot_frame_draw(v, d, "Gradient norm of each layer over the run");
    box all, leg;
    plot_frame_split_legend(v, 0.76, NULL, &all, &leg);
    for (int r = 0; r < d->nruns; r++) {
        char t[128];
        plot_frame_run_title(d, r, t, sizeof t);
        draw_heat_panel(v, plot_frame_part(all, r, d->nruns, 0, v->fs * 4.4), &d->run[r], t,
                        9000 / d->nruns); /* < 1 MB */
    }
    legend lg = {0};
    heat_legend(v, &lg);
    plot_legend_draw_beside(v, leg, &lg);
    return 0;
}
