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
 * This file: the public entry points (render, write atomically, the live
 * view's snapshot); each part of the drawing has its own file, named in
 * plot_int.h.
 *
 * Not here: reading the rows (plot_data.c) and a sweep's results
 * (plot_map.c), the temp-file + rename (atomicio.c), the terminal
 * (tui_*.c).
 */
#include "plot_int.h"

#include "atomicio.h"

#include <stdio.h>
#include <string.h>

int plot_render_map(FILE *f, const plot_map *m, const plot_opts *o, char *err, size_t errlen)
{
    svg v;
    plot_svg_init(&v, f, o);
    if (m->ncells == 0) {
        snprintf(err, errlen, "no rows: expected a sweep's results.csv");
        return -1;
    }
    plot_svg_begin(&v);
    int rc = plot_fig_map(&v, m, err, errlen);
    fputs("</svg>\n", f);
    return rc;
}

/* A figure needs rows, and the columns its kind draws. */
static int check_columns(const plot_data *d, const plot_opts *o, char *err, size_t errlen)
{
    plot_kind k = o->kind;
    if (d->run[0].n == 0) {
        snprintf(err, errlen, "no rows: expected a normscope --csv or --jsonl file (a 'step' column)");
        return -1;
    }
    if ((k == PLOT_LOSS || k == PLOT_VIEW) && !d->run[0].has_loss) {
        snprintf(err, errlen, "no 'loss' column: --kind loss needs step and loss");
        return -1;
    }
    if (k == PLOT_HEADROOM || k == PLOT_OVERFLOW) {
        int q = k == PLOT_HEADROOM ? METRICS_LC_ACT_MAX : METRICS_LC_OVERFLOW;
        int q2 = k == PLOT_HEADROOM ? METRICS_LC_HEADROOM : METRICS_LC_UNDERFLOW;
        if (!d->run[0].has_lc[q] || !d->run[0].has_lc[q2]) {
            snprintf(err, errlen, "no per-layer %s columns (l0_%s, ...): --kind %s needs them",
                     k == PLOT_HEADROOM ? "act_max and headroom" : "overflow and underflow",
                     k == PLOT_HEADROOM ? "act_max" : "overflow", k == PLOT_HEADROOM ? "headroom" : "overflow");
            return -1;
        }
    }
    if (k == PLOT_SERIES && !d->run[0].has_lc[o->column]) {
        const char *name = metrics_layer_cols[o->column].name;
        snprintf(err, errlen, "no per-layer %s column (l0_%s, ...): --kind series --metric %s needs it",
                 name, name, name);
        return -1;
    }
    if (k == PLOT_CHANGE && !d->run[0].has_oc) {
        snprintf(err, errlen, "no 'out_change' column: --kind change needs it");
        return -1;
    }
    if (k != PLOT_LOSS && k != PLOT_CHANGE && d->run[0].L == 0) {
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
    if (check_columns(d, o, err, errlen))
        return -1;
    svg v;
    plot_svg_init(&v, f, o);
    plot_svg_begin(&v);
    int rc = 0;
    switch (o->kind) {
    case PLOT_LOSS: rc = plot_fig_loss(&v, d); break;
    case PLOT_LAYERS: rc = plot_fig_layers(&v, d, err, errlen); break;
    case PLOT_PROFILE: rc = plot_fig_profile(&v, d, err, errlen); break;
    case PLOT_HEATMAP: rc = plot_fig_heatmap(&v, d); break;
    case PLOT_VIEW: rc = plot_fig_view(&v, d); break;
    case PLOT_HEADROOM:
    case PLOT_OVERFLOW:
    case PLOT_SERIES: rc = plot_fig_precision(&v, d, o->kind); break;
    case PLOT_CHANGE: rc = plot_fig_change(&v, d); break;
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
    if (src.d && check_columns(src.d, o, err, errlen))
        return -1;
    if (atomicio_open(&a, path, err, errlen))
        return -1;
    if (src.d ? plot_render(a.f, src.d, o, err, errlen) : plot_render_map(a.f, src.m, o, err, errlen)) {
        atomicio_abort(&a);
        return -1;
    }
    return atomicio_commit(&a, err, errlen);
}

int plot_write(const char *path, const plot_data *d, const plot_opts *o, char *err, size_t errlen)
{
    return write_atomic(path, (figure_src){d, NULL}, o, err, errlen);
}

int plot_write_map(const char *path, const plot_map *m, const plot_opts *o, char *err, size_t errlen)
{
    return write_atomic(path, (figure_src){NULL, m}, o, err, errlen);
}

int plot_write_snapshot(const trainer_snapshot *s, int heatmap, int logy, double smooth,
                        const char *path, char *err, size_t errlen)
{
    plot_opts o = {.kind = heatmap ? PLOT_HEATMAP : PLOT_VIEW, .w = 1600, .h = 900, .logy = logy,
                   .smooth = smooth};
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
