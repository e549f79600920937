/* plot_fig_loss.c - the loss figure: train and validation of each run, a
 * marker where a setting changed, a red tick where a step was not finite
 * (the first divergence labelled with the operation it named), the rows a
 * rewind abandoned dashed grey, and a legend in the emptiest corner. Its
 * panel is also the live view's figure's chart (plot_fig_view.c).
 *
 * Not here: the line itself (plot_series.c), the words around (plot_frame.c).
 */
#include "plot_int.h"

#include "scale.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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
        double x = plot_ax_map(ax, (double)m->step), w = plot_svg_text_width(label, v->fs_small, 0);
        double x0 = x + w + v->fs * 0.3 > b.x + b.w ? x - w - v->fs * 0.25 : x + v->fs * 0.25;
        int row = 0;
        while (row < 2 && x0 < ends[row] + v->fs * 0.5)
            row++;
        ends[row] = x0 + w;
        fprintf(v->f, "<g class=\"marker\" data-step=\"%ld\">", m->step);
        plot_svg_line(v, x, b.y, x, b.y + b.h, v->p->mark, v->p->mark_width * v->s, v->p->mark_dash);
        plot_svg_text(v, x0, row ? b.y + v->fs * 1.25 * row : b.y - v->fs * 0.35, v->fs_small, 's', v->p->mark,
             "class=\"marker-label\"", "%s", label);
        fputs("</g>\n", v->f);
    }
}

/* The label beside the step at x, on the side with room for it (wrapped
 * after its colon when neither has), inside the panel: at its bottom for
 * run a, its top for b. */
static void nonfinite_label(svg *v, box b, double x, int which, const char *label)
{
    static const char *const seps[] = {": ", ", ", " ", NULL};
    double m = v->fs * 0.5, left = x - m - b.x, right = b.x + b.w - x - m;
    int on_left = left > right;
    if (plot_svg_text_width(label, v->fs_small, 0) <= fmin(left, right)) /* fits either: as before */
        on_left = x > b.x + b.w / 2;
    svg_wrapped w;
    plot_svg_wrap(&w, label, v->fs_small, 0, on_left ? left : right, 2, seps);
    for (int i = 0; i < w.n; i++) {
        double y = which ? b.y + v->fs * 1.5 + i * w.size * 1.2
                         : b.y + b.h - v->fs * 0.9 - (w.n - 1 - i) * w.size * 1.2;
        plot_svg_text(v, on_left ? x - m : x + m, y, w.size, on_left ? 'e' : 's', v->p->explode,
                 "class=\"nonfinite-label\"", "%s", w.line[i]);
    }
}

/* A red tick at each pixel column where the train loss was not finite or
 * the row's state says the step diverged (a non-finite inside the step,
 * such as a norm's variance, can leave the loss finite): the gap in the
 * line says where, this says why, and the first divergence is labelled
 * with the operation the run named. Run a's stand on the bottom edge, a
 * comparison's run b's hang from the top one. */
int plot_loss_draw_nonfinite(svg *v, box b, const axis *ax, const plot_data *d, int which)
{
    const plot_run *r = &d->run[which];
    long last_px = -1;
    int any = 0;
    if (r->fault[0]) {
        char what[80];
        snprintf(what, sizeof what, "%s", r->fault);
        for (char *c = what; *c; c++)
            *c = *c == ';' ? ',' : *c; /* a CSV field spells its commas so */
        char label[160];
        snprintf(label, sizeof label, "%s%sdiverged at step %ld: %s", d->nruns > 1 ? (which ? "b" : "a") : "",
                 d->nruns > 1 ? " " : "", r->fault_step, what);
        nonfinite_label(v, b, plot_ax_map(ax, (double)r->fault_step), which, label);
    }
    for (long i = 0; i < r->n; i++) {
        if (isfinite(r->loss[i]) && !r->bad[i])
            continue;
        double x = plot_ax_map(ax, (double)r->step[i]);
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
        plot_legend_add(lg, v->p->dim, ghost_dash[r], SH_NONE, 0, 1, "before the rewind: %s",
                   d->run[r].label);
    else
        plot_legend_add(lg, v->p->dim, ghost_dash[r], SH_NONE, 0, 1, "before the rewind");
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
        if (plot_series_draw(v, ax, ay, d->ghost_step, d->ghost_loss[r], d->ghost_n, 1, name, v->p->dim,
                        ghost_dash[r], 2 * v->s) > 0)
            ghost_legend(lg, v, d, r);
    }
}

/* y of run p's rows on the timeline it ended on (live 1) or of the rows a
 * rewind abandoned (live 0), the others -inf (skipped, as a validation
 * loss not measured). NULL when out of memory. */
static float *loss_timeline_rows(const plot_run *p, const float *y, int live)
{
    float *m = malloc(sizeof(float) * (size_t)(p->n > 0 ? p->n : 1));
    for (long i = 0; m && i < p->n; i++)
        m[i] = p->live[i] == live ? y[i] : -INFINITY;
    return m;
}

static void draw_smoothed(svg *v, const axis *ax, const axis *ay, const plot_run *p, const float *y,
                          const char *name, const char *color, const char *dash);

/* The train loss of the rows a rewind abandoned (read from a file: the
 * steps before a step that went back), under the replay, in the run's
 * color and dashed, smoothed as the replay is: often they are the
 * evidence (a plateau the replay escapes), so they are not greyed out. */
static void draw_abandoned(svg *v, const axis *ax, const axis *ay, const plot_data *d, int r,
                           legend *lg)
{
    const plot_run *p = &d->run[r];
    if (p->abandoned == 0)
        return;
    float *y = loss_timeline_rows(p, p->loss, 0);
    if (!y)
        return;
    const char *color = r ? v->p->twin : v->p->train;
    char name[96];
    snprintf(name, sizeof name, "before the rewind: train loss%s%s", d->nruns > 1 ? " " : "",
             d->nruns > 1 ? p->label : "");
    long drawn = 0;
    for (long i = 0; i < p->n; i++)
        drawn += isfinite(y[i]);
    fputs("<g class=\"abandoned\">\n", v->f);
    draw_smoothed(v, ax, ay, p, y, name, color, ghost_dash[r]);
    if (drawn > 0 && drawn < 5) /* a point or two: no line to see, so marked */
        plot_series_draw_points(v, ax, ay, p->step, y, p->n, SH_CIRCLE, color);
    fputs("</g>\n", v->f);
    if (drawn > 0) {
        if (d->nruns > 1)
            plot_legend_add(lg, color, ghost_dash[r], SH_NONE, 0, 1, "before the rewind: %s", p->label);
        else
            plot_legend_add(lg, color, ghost_dash[r], SH_NONE, 0, 1, "before the rewind");
    }
    free(y);
}

/* Points of the loss lines (raw, smoothed, validation) inside the box (x0, y0, w, h). */
static long loss_points_in(const plot_data *d, double w_smooth, const axis *ax, const axis *ay,
                           double x0, double y0, double w, double h)
{
    long n = 0;
    for (int r = 0; r < d->nruns; r++) {
        scale_ema e = scale_ema_start(w_smooth); /* the smoothed line's points too (draw_smoothed) */
        for (long i = 0; i < d->run[r].n; i++) {
            const plot_run *p = &d->run[r];
            int live = !p->abandoned || p->live[i];
            float ys[3] = {p->loss[i], p->val[i], live ? (float)scale_ema_add(&e, p->loss[i]) : NAN};
            for (int k = 0; k < 3; k++) {
                if (!isfinite(ys[k]))
                    continue;
                double x = plot_ax_map(ax, (double)p->step[i]), y = plot_ax_map(ay, ys[k]);
                n += x >= x0 && x <= x0 + w && y >= y0 && y <= y0 + h;
            }
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
    plot_legend_size(lg, fs, &w, &h);
    if (w > b.w - 2 * m) { /* long run labels: smaller type, never past the panel */
        fs *= (b.w - 2 * m) / w;
        plot_legend_size(lg, fs, &w, &h);
    }
    double xs[4] = {b.x + b.w - w - m, b.x + m, b.x + b.w - w - m, b.x + m};
    double ys[4] = {b.y + m, b.y + m, b.y + b.h - h - m, b.y + b.h - h - m};
    int best = 0;
    long least = -1;
    for (int c = 0; c < 4; c++) {
        long n = loss_points_in(d, v->o->smooth, ax, ay, xs[c], ys[c], w, h);
        if (least < 0 || n < least) {
            least = n;
            best = c;
        }
    }
    plot_legend_draw_at(v, xs[best], ys[best], fs, lg);
}

/* The train loss of each step faint (a third of the color's strength),
 * and over it the loss smoothed as TensorBoard smooths it (scale.h), in
 * full: the trend reads through the noise, the noise stays in sight. The
 * smoothed line's last value is recorded for a reader to check. */
static void draw_smoothed(svg *v, const axis *ax, const axis *ay, const plot_run *p, const float *y,
                          const char *name, const char *color, const char *dash)
{
    if (!(v->o->smooth > 0)) { /* --smooth 0: the loss itself, in full */
        fputs("<g class=\"raw\">\n", v->f);
        plot_series_draw(v, ax, ay, p->step, y, p->n, 1, name, color, dash, 3 * v->s);
        fputs("</g>\n", v->f);
        return;
    }
    fputs("<g class=\"raw\" opacity=\"0.35\">\n", v->f);
    plot_series_draw(v, ax, ay, p->step, y, p->n, 1, name, color, dash, 2 * v->s);
    fputs("</g>\n", v->f);
    float *sm = malloc(sizeof(float) * (size_t)(p->n > 0 ? p->n : 1));
    if (!sm)
        return;
    scale_ema e = scale_ema_start(v->o->smooth);
    double last = NAN;
    for (long i = 0; i < p->n; i++) {
        sm[i] = isinf(y[i]) && y[i] < 0 ? y[i] : (float)scale_ema_add(&e, y[i]); /* -inf: not a row */
        last = isfinite(sm[i]) ? sm[i] : last;
    }
    char sname[112];
    snprintf(sname, sizeof sname, "smoothed %s", name);
    fprintf(v->f, "<g class=\"smoothed\" data-weight=\"%g\" data-last=\"%.6g\">\n", e.w, last);
    plot_series_draw(v, ax, ay, p->step, sm, p->n, 1, sname, color, dash, 3 * v->s);
    fputs("</g>\n", v->f);
    free(sm);
}

void plot_loss_panel_draw(svg *v, box b, const plot_data *d, legend *lg)
{
    long x0, x1;
    double y0, y1;
    loss_range(d, v->o->logy, &x0, &x1, &y0, &y1);
    axis ax = {.p0 = b.x, .p1 = b.x + b.w}, ay = {.p0 = b.y + b.h, .p1 = b.y};
    plot_ax_fit(&ax, (double)x0, (double)x1, 0, 0);
    plot_ax_fit(&ay, y0, y1, v->o->logy, 0.05);
    plot_ax_draw(v, b, &ax, &ay, "step (optimizer updates)",
              v->o->logy ? "loss (nats, log scale)" : "loss (nats per byte)");
    draw_ghost(v, &ax, &ay, d, lg);
    for (int r = 0; r < d->nruns; r++)
        draw_abandoned(v, &ax, &ay, d, r, lg);
    for (int r = 0; r < d->nruns; r++) {
        const plot_run *p = &d->run[r];
        const char *tc = r ? v->p->twin : v->p->train, *vc = r ? v->p->twin_val : v->p->val;
        const char *td = v->o->mono ? plot_svg_mono_dash[r * 2] : "", *vd = v->o->mono ? plot_svg_mono_dash[r * 2 + 1] : "";
        const char *who = d->nruns > 1 ? p->label : "";
        float *loss = p->abandoned ? loss_timeline_rows(p, p->loss, 1) : NULL;
        float *val = p->abandoned ? loss_timeline_rows(p, p->val, 1) : NULL;
        char name[96];
        snprintf(name, sizeof name, "train loss%s%s", who[0] ? " " : "", who);
        draw_smoothed(v, &ax, &ay, p, loss ? loss : p->loss, name, tc, td);
        plot_legend_add(lg, tc, td, SH_NONE, 0, 1, v->o->smooth > 0 ? "%s, smoothed" : "%s", name);
        if (p->has_val) {
            snprintf(name, sizeof name, "validation loss%s%s", who[0] ? " " : "", who);
            if (plot_series_draw(v, &ax, &ay, p->step, val ? val : p->val, p->n, 1, name, vc, vd, 3 * v->s) > 0)
                plot_legend_add(lg, vc, vd, r ? SH_SQUARE : SH_CIRCLE, 0, 1, "%s", name);
            plot_series_draw_points(v, &ax, &ay, p->step, val ? val : p->val, p->n, r ? SH_SQUARE : SH_CIRCLE, vc);
        }
        free(loss);
        free(val);
    }
    if (v->o->smooth > 0)
        plot_legend_add(lg, v->p->dim, "", SH_NONE, 0, 1, "faint: each step's train loss");
    for (int r = 0; r < d->nruns; r++)
        if (plot_loss_draw_nonfinite(v, b, &ax, d, r))
            plot_legend_add(lg, v->p->explode, NULL, r ? SH_TRIANGLE_DOWN : SH_TRIANGLE, 0, 1,
                       "%s%sa step not finite", d->nruns > 1 ? (r ? "b" : "a") : "",
                       d->nruns > 1 ? ": " : "");
    double ends[3] = {-1e9, -1e9, -1e9};
    for (int r = 0; r < d->nruns; r++)
        draw_marks(v, b, &ax, d, r, ends);
    if (d->run[0].nmark || (d->nruns > 1 && d->run[1].nmark))
        plot_legend_add(lg, v->p->mark, v->p->mark_dash, SH_NONE, 0, 1, "a setting changed");
    draw_loss_legend(v, b, d, &ax, &ay, lg);
}

int plot_fig_loss(svg *v, const plot_data *d)
{
    legend lg = {0};
    plot_frame_draw(v, d, d->nruns > 1 ? "Training loss of two runs" : "Training loss");
    box b = plot_frame_content(v);
    plot_loss_panel_draw(v, b, d, &lg);
    return 0;
}
