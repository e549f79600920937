/* plot_fig_map.c - a sweep's grid as a map: one cell per combination of
 * the axes drawn as rows and columns, colored by its final loss (or
 * --metric's value), small multiples for the other axes, marks where runs
 * diverged, exploded or stalled.
 *
 * Not here: reading results.csv into cells (plot_map.c), the metrics, the
 * color scale and its bar (plot_map_scale.c).
 */
#include "plot_int.h"

#include "sweep_map.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- the map of a sweep ---------------------------------------------------------- */

/* Which axes are the rows and the columns: --rows/--cols, else the live
 * view's rule (sweep_map_make: the two with the most values, the first of
 * equals, rows first). -1: none. A grid of one axis is drawn as one row of
 * columns, the wide way of a slide (the terminal stacks it). 0, or -1 with
 * one line in err. */
static int map_find_axis(const plot_map *m, const char *flag, const char *name, int *a, char *err,
                         size_t errlen)
{
    for (int i = 0; i < m->n_axes; i++)
        if (!strcmp(m->axis[i].name, name)) {
            *a = i;
            return 0;
        }
    size_t k = (size_t)snprintf(err, errlen, "%s '%s': not an axis of the sweep (axes:", flag, name);
    for (int i = 0; i < m->n_axes && k < errlen; i++)
        k += (size_t)snprintf(err + k, errlen - k, "%s %s", i ? "," : "", m->axis[i].name);
    int seed = m->seed.n > 1 && !m->seed_drawn; /* the seed, drawn on asking */
    if (k < errlen && seed)
        k += (size_t)snprintf(err + k, errlen - k, "%s seed", m->n_axes ? "," : "");
    if (k < errlen)
        snprintf(err + k, errlen - k, "%s)", m->n_axes || seed ? "" : " none but the seed");
    return -1;
}

static int map_choose_axes(const plot_map *m, const plot_opts *o, int *ra, int *ca, char *err,
                           size_t errlen)
{
    *ra = *ca = -1;
    if (o->rows && map_find_axis(m, "--rows", o->rows, ra, err, errlen))
        return -1;
    if (o->cols && map_find_axis(m, "--cols", o->cols, ca, err, errlen))
        return -1;
    if (o->rows && o->cols && *ra == *ca) {
        snprintf(err, errlen, "--rows and --cols name the same axis '%s'", o->rows);
        return -1;
    }
    const char *names[PLOT_MAP_AXES];
    int count[PLOT_MAP_AXES];
    for (int i = 0; i < m->n_axes; i++) { /* the rule folds an axis named seed: a drawn one is not */
        names[i] = m->seed_drawn && i == m->n_axes - 1 ? "" : m->axis[i].name;
        count[i] = m->axis[i].n;
    }
    sweep_map sm;
    sweep_map_make(&sm, m->n_axes, names, count, *ra, *ca);
    *ra = sm.row;
    *ca = sm.col;
    if (*ca < 0 && *ra >= 0 && !o->rows) { /* one axis: one row of columns */
        *ca = *ra;
        *ra = -1;
    }
    return 0;
}

typedef struct {
    const plot_map *m;
    int ra, ca;        /* rows, columns (-1: one) */
    int other[PLOT_MAP_AXES], n_other; /* the axes of the small multiples */
    long panels;
    map_scale sc;      /* what colors a cell, on what scale */
} map_layout;

/* "norm=post, seed folded" names a panel. */
static void map_panel_title(const map_layout *g, const int *idx, char *b, size_t n)
{
    size_t k = 0;
    b[0] = 0;
    for (int j = 0; j < g->n_other && k < n; j++) {
        const plot_map_axis *x = &g->m->axis[g->other[j]];
        k += (size_t)snprintf(b + k, n - k, "%s%s=%s", j ? ", " : "", x->name, x->val[idx[g->other[j]]]);
    }
}

/* A cell's rect: its key (every axis's value), its value and counts as
 * data, its fill on the scale (hatched without a value, cross-hatched
 * when an explosion puts it off the scale). Sets the type's color; 1 when
 * the cell is on the scale. */
static int map_cell_rect(svg *v, const map_layout *g, box c, const int *idx, map_value mv,
                         const char **ink)
{
    const plot_map_cell *cl = &g->m->cell[plot_map_cell_of(g->m, idx)];
    char key[512], col[8];
    size_t k = 0;
    for (int a = 0; a < g->m->n_axes && k < sizeof key; a++)
        k += (size_t)snprintf(key + k, sizeof key - k, "%s%s=%s", a ? "," : "", g->m->axis[a].name,
                              g->m->axis[a].val[idx[a]]);
    int off = cl->exploded && g->sc.mt->at_end, on = mv.n && !off;
    int light = on && plot_map_fill(v, &g->sc, mv.x, col);
    const char *fill = !cl->runs ? v->p->bg : off ? "url(#exploded)" : !on ? "url(#nan)" : col;
    *ink = light ? "#ffffff" : !on ? v->p->fg : "#000000";
    fprintf(v->f, "<g class=\"map-cell\"><rect class=\"cell\" data-key=\"");
    plot_svg_esc(v->f, key);
    fprintf(v->f, "\" data-value=\"%.6g\" ", mv.x);
    if (g->sc.continuous)
        fprintf(v->f, "data-on-ramp=\"%d\" ", on);
    else
        fprintf(v->f, "data-bin=\"%d\" ", on ? plot_map_bin(&g->sc, mv.x) : -1);
    fprintf(v->f, "data-runs=\"%d\" data-diverged=\"%d\" "
                  "data-stalled=\"%d\" data-exploded=\"%d\" data-failed=\"%d\" x=\"%.1f\" "
                  "y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" stroke=\"%s\" "
                  "stroke-width=\"1.5\"/>\n",
            cl->runs, cl->diverged, cl->stalled, cl->exploded, cl->failed, c.x, c.y, c.w, c.h, fill,
            v->p->bg);
    return on;
}

/* What happened to a cell's runs, in words ("1/2 stalled"); "" for none. */
static void map_cell_tag(const plot_map_cell *cl, char *tag, size_t n)
{
    tag[0] = 0;
    if (cl->diverged && cl->runs == 1)
        snprintf(tag, n, "diverged @%ld", cl->div_step);
    else if (cl->diverged)
        snprintf(tag, n, "%d/%d diverged", cl->diverged, cl->runs);
    else if (cl->exploded)
        snprintf(tag, n, cl->runs > 1 ? "%d/%d exploded" : "exploded", cl->exploded, cl->runs);
    else if (cl->stalled)
        snprintf(tag, n, cl->runs > 1 ? "%d/%d stalled" : "stalled", cl->stalled, cl->runs);
    else if (cl->failed)
        snprintf(tag, n, "%d/%d failed", cl->failed, cl->runs);
}

/* On a hatched cell (off the scale, or no value), a box of the ground
 * under a line of text of size fs centred at x on baseline y, so black
 * type on black hatching (--mono's exploded cell) stays readable. */
static void text_ground(svg *v, int on, double x, double y, double fs, const char *text)
{
    if (on)
        return;
    double w = 0.7 * fs * (double)strlen(text); /* bold digits are 0.64 em wide */
    fprintf(v->f, "<rect class=\"text-ground\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                  "height=\"%.1f\" fill=\"%s\" fill-opacity=\"0.85\"/>\n",
            x - w / 2, y - fs, w, fs * 1.35, v->p->bg);
}

/* One of a cell's lines of text, centred, of size fs * scale, on the
 * ground where the cell is hatched; *y moves a line of the cell's type
 * size fs down. Nothing for "". */
static void cell_line(svg *v, int on, box c, double *y, double fs, double scale,
                      const char *ink, const char *attrs, const char *text)
{
    if (!text[0])
        return;
    text_ground(v, on, c.x + c.w / 2, *y, fs * scale, text);
    plot_svg_text(v, c.x + c.w / 2, *y, fs * scale, 'm', ink, attrs, "%s", text);
    *y += fs * 1.2;
}

/* One cell: its rect, the value, spread and interval printed in it, an X
 * where a run diverged, a dashed inner frame and "stalled" where one
 * stalled. */
static void map_cell(svg *v, const map_layout *g, box c, const int *idx)
{
    const plot_map_cell *cl = &g->m->cell[plot_map_cell_of(g->m, idx)];
    const map_metric *mt = g->sc.mt;
    map_value mv = plot_map_cell_value(mt, cl);
    const char *ink;
    int on = map_cell_rect(v, g, c, idx, mv, &ink), spread = mv.n > 1 && !isnan(mv.sd);
    double fs = fmin(v->fs, fmin(c.h * 0.26, c.w / 5.5));
    int tagged = cl->diverged || cl->exploded || cl->stalled || cl->failed;
    /* the 95% interval's own line, where the cell has the height for it */
    int ci = spread && !isnan(mv.ci) && ((mv.n ? 1 : 0) + 2 + tagged) * fs * 1.2 <= c.h * 0.9;
    int lines = (mv.n ? 1 : 0) + spread + ci + tagged;
    double y = c.y + c.h / 2 - (lines - 1) * fs * 0.6 + fs * 0.35;
    if (cl->diverged) {
        fprintf(v->f, "<path class=\"diverged-mark\" d=\"M%.1f %.1fL%.1f %.1fM%.1f %.1fL%.1f %.1f\" "
                      "stroke=\"%s\" stroke-width=\"%.1f\" stroke-opacity=\"0.8\"/>\n",
                c.x + 4, c.y + 4, c.x + c.w - 4, c.y + c.h - 4, c.x + c.w - 4, c.y + 4, c.x + 4,
                c.y + c.h - 4, v->p->explode, 3 * v->s); /* mono's: black */
    }
    if (cl->stalled)
        fprintf(v->f, "<rect class=\"stalled-mark\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                      "fill=\"none\" stroke=\"%s\" stroke-width=\"%.1f\" stroke-dasharray=\"8 5\"/>\n",
                c.x + 5, c.y + 5, c.w - 10, c.h - 10, ink, 2.5 * v->s);
    char num[32], line[48];
    if (mv.n) { /* as many digits as fit the cell: 2.8e+12, not 2794610000000.000 */
        plot_map_fmt(mt, num, sizeof num, mv.x, (int)fmax(5, c.w / (fs * 0.62)));
        cell_line(v, on, c, &y, fs, 1, ink, "class=\"cell-value\" font-weight=\"bold\"", num);
    }
    if (spread) {
        plot_map_fmt(mt, num, sizeof num, mv.sd, (int)fmax(5, c.w / (fs * 0.5)) - 6);
        snprintf(line, sizeof line, "\xc2\xb1%s (%d)", num, mv.n); /* ± sd (runs) */
        cell_line(v, on, c, &y, fs, 0.8, ink, "class=\"cell-spread\"", line);
    }
    if (ci) {
        plot_map_fmt(mt, num, sizeof num, mv.ci, (int)fmax(5, c.w / (fs * 0.5)) - 8);
        snprintf(line, sizeof line, "95%%: \xc2\xb1%s", num);
        cell_line(v, on, c, &y, fs, 0.8, ink, "class=\"cell-ci\"", line);
    }
    char tag[96];
    map_cell_tag(cl, tag, sizeof tag);
    cell_line(v, on, c, &y, fs, 0.8, ink, "class=\"cell-tag\"", tag);
    fputs("</g>\n", v->f);
}

/* One panel: rows x columns of cells, the values as tick labels, the axes'
 * names as labels. idx holds the panel's values on the other axes. */
static void map_panel(svg *v, const map_layout *g, box b, int *idx)
{
    const plot_map *m = g->m;
    int nr = g->ra >= 0 ? m->axis[g->ra].n : 1, nc = g->ca >= 0 ? m->axis[g->ca].n : 1;
    char title[256];
    map_panel_title(g, idx, title, sizeof title);
    size_t wide = 0; /* the rows' widest value */
    for (int r = 0; r < nr && g->ra >= 0; r++)
        wide = strlen(m->axis[g->ra].val[r]) > wide ? strlen(m->axis[g->ra].val[r]) : wide;
    if (g->ra >= 0) { /* room inside b for the values and the rows' name: never off the
                       * canvas, never over the panel to the left */
        double inset = v->fs * (1.8 + 0.6 * (double)wide);
        b.x += inset;
        b.w -= inset;
    }
    plot_ax_draw(v, b, NULL, NULL, g->ca >= 0 ? m->axis[g->ca].name : NULL, NULL);
    if (g->ra >= 0) { /* the rows' name, left of their widest value */
        char rot[96];
        double x = b.x - v->fs * (1.2 + 0.6 * (double)wide), y = b.y + b.h / 2;
        snprintf(rot, sizeof rot, "class=\"axis-label\" transform=\"rotate(-90 %.1f %.1f)\"", x, y);
        plot_svg_text(v, x, y, v->fs, 'm', v->p->fg, rot, "%s", m->axis[g->ra].name);
    }
    if (title[0])
        plot_svg_text(v, b.x, b.y - v->fs * 0.4, v->fs, 's', v->p->fg, "class=\"panel-title\"", "%s", title);
    double cw = b.w / nc, rh = b.h / nr;
    for (int r = 0; r < nr; r++)
        for (int c = 0; c < nc; c++) {
            if (g->ra >= 0)
                idx[g->ra] = r;
            if (g->ca >= 0)
                idx[g->ca] = c;
            map_cell(v, g, (box){b.x + c * cw, b.y + r * rh, cw, rh}, idx);
        }
    for (int c = 0; c < nc && g->ca >= 0; c++)
        plot_svg_text(v, b.x + (c + 0.5) * cw, b.y + b.h + v->fs * 1.2, v->fs, 'm', v->p->fg, "class=\"tick\"",
             "%s", m->axis[g->ca].val[c]);
    for (int r = 0; r < nr && g->ra >= 0; r++)
        plot_svg_text(v, b.x - v->fs * 0.4, b.y + (r + 0.5) * rh + v->fs * 0.35, v->fs, 'e', v->p->fg,
             "class=\"tick\"", "%s", m->axis[g->ra].val[r]);
}

static void map_layout_make(map_layout *g, const plot_map *m, const plot_opts *o, int ra, int ca)
{
    memset(g, 0, sizeof *g);
    g->m = m;
    g->ra = ra;
    g->ca = ca;
    g->panels = 1;
    for (int a = 0; a < m->n_axes; a++)
        if (a != ra && a != ca) {
            g->other[g->n_other++] = a;
            g->panels *= m->axis[a].n;
        }
    plot_map_scale_make(&g->sc, m, o);
}

/* --vmin, --vmax: the scale's ends as given, one for maps drawn apart;
 * a cell beyond them takes the end's color. -1 when the ends cross. */
static int map_scale_given(map_layout *g, const plot_opts *o, char *err, size_t errlen)
{
    double lo = o->vset & 1 ? o->vmin : g->sc.lo, hi = o->vset & 2 ? o->vmax : g->sc.hi;
    if (!(lo < hi)) {
        snprintf(err, errlen, "the color scale would run from %g to %g: give --vmin below --vmax",
                 lo, hi);
        return -1;
    }
    g->sc.lo = lo;
    g->sc.hi = hi;
    return 0;
}

/* Panel p's values on the other axes (the last varies fastest). */
static void map_panel_index(const map_layout *g, long p, int *idx)
{
    for (int j = g->n_other - 1; j >= 0; j--) {
        int a = g->other[j];
        idx[a] = (int)(p % g->m->axis[a].n);
        p /= g->m->axis[a].n;
    }
}

/* The title says what colors the cells, the caption how the seeds are
 * folded (or drawn as an axis) and, but for the loss, the metric's unit and which end is
 * better. */
static void map_frame_text(svg *v, const map_layout *g)
{
    const plot_map *m = g->m;
    const map_metric *mt = g->sc.mt;
    char title[160], cap[1400];
    const char *what = mt->title ? mt->title
                       : m->val_missing ? "final loss (validation, else train)"
                                        : "final validation loss";
    snprintf(title, sizeof title, "Stability map: %s%s", what,
             mt->share ? "" : m->seeds > 1 ? ", mean over seeds" : " of each run");
    const char *folded = m->seeds <= 1 ? m->seed_drawn ? "seeds drawn as an axis: one run per cell"
                                                       : "one run per cell"
                         : mt->share ? "seeds folded: stalled runs over trained runs"
                                     : "seeds folded: mean \xc2\xb1 sd (runs), and the mean's 95% "
                                       "interval (Student's t) where the cell has room";
    snprintf(cap, sizeof cap, "%s%s%s  |  %s%s%s%s", m->common[0] ? "common: " : "", m->common,
             m->common[0] ? "; the rest at their defaults (results.csv has every setting)" : "",
             folded, mt->reads ? "  |  " : "", mt->reads ? mt->reads : "",
             v->o->vset ? "  |  color scale from --vmin/--vmax: a cell beyond it has its end's color"
                        : "");
    plot_frame_text(v, title, cap, sizeof cap);
}

/* --rows seed or --cols seed (the flag), of a map whose seeds are folded;
 * NULL otherwise. */
static const char *map_seed_flag(const plot_map *m, const plot_opts *o)
{
    if (m->seed_drawn)
        return NULL;
    if (o->rows && !strcmp(o->rows, "seed"))
        return "--rows";
    return o->cols && !strcmp(o->cols, "seed") ? "--cols" : NULL;
}

int plot_fig_map(svg *v, const plot_map *m, char *err, size_t errlen)
{
    const char *flag = map_seed_flag(m, v->o);
    if (flag) { /* each seed's run a cell of its own: the map with the seed as an axis */
        plot_map s;
        char why[256];
        if (plot_map_with_seeds(m, &s, why, sizeof why)) {
            snprintf(err, errlen, "%s 'seed': %s", flag, why);
            return -1;
        }
        int rc = plot_fig_map(v, &s, err, errlen);
        plot_map_free(&s);
        return rc;
    }
    int ra, ca;
    if (map_choose_axes(m, v->o, &ra, &ca, err, errlen))
        return -1;
    map_layout g;
    map_layout_make(&g, m, v->o, ra, ca);
    if (map_scale_given(&g, v->o, err, errlen))
        return -1;
    if (g.panels > 16) {
        snprintf(err, errlen, "%ld panels (one per value of the axes not drawn as rows or columns): "
                 "at most 16; choose --rows and --cols", g.panels);
        return -1;
    }
    map_frame_text(v, &g);
    box all = plot_frame_content(v), bar = all;
    all.w *= 0.8;
    bar.x = all.x + all.w + v->fs * 1.5;
    bar.w -= all.w + v->fs * 1.5;
    all.y += v->fs * 1.2;
    all.h -= v->fs * 1.2;
    int pc = g.panels <= 3 ? (int)g.panels : (int)ceil(sqrt((double)g.panels));
    int pr = (int)((g.panels + pc - 1) / pc);
    for (long p = 0; p < g.panels; p++) {
        int idx[PLOT_MAP_AXES] = {0};
        map_panel_index(&g, p, idx);
        box row = plot_frame_part(all, (int)(p / pc), pr, 0, v->fs * 4.2);
        row.x += v->fs * 1.5;
        row.w -= v->fs * 1.5;
        map_panel(v, &g, plot_frame_part(row, (int)(p % pc), pc, 1, v->fs * 5.5), idx);
    }
    plot_map_colorbar(v, &g.sc, bar);
    return 0;
}
