/* tui_chart.c - the loss chart and the gradient heatmap, drawn into the
 * cell grid from a snapshot's history ring.
 *
 * Chart: train loss as a line (braille dots, 2x4 per cell, in a UTF-8
 * locale; '.', '-' and '\'' at three heights per cell in ASCII), each
 * step's dim and the smoothed loss (scale.h, as TensorBoard's) bright,
 * validation loss as points, and a labelled marker at every step where a
 * setting changed. With --compare, run b's loss is a '+' per column under
 * run a's line, a cell both pass through is a '*', and b's markers are
 * labelled on the bottom row. x: one dot per step while they fit, else the window
 * squeezed; y: fitted to the window's values from the lowest to the 98th
 * percentile, so one spike cannot flatten the rest (values above it ride
 * the top edge); a chart of 4 plotted rows or fewer takes the percentile
 * of the window's later half. After a rewind the curve it abandoned stays, grey, under
 * the replay (a's as dots, b's as '+'), the window stretched to its end.
 *
 * Heatmap: one row per layer, one column per step (or per bucket of steps
 * when they do not fit, showing the bucket's largest norm), cells colored
 * (and, without color, shaded) by decade.
 *
 * No curses here.
 */
#include "scale.h"
#include "tui.h"
#include "twin.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Fit a run's label for the legend to w columns (tui_label_fit: what
 * differs first, shortened, " +N" for the settings left out), then two
 * spaces. Returns how many settings that matter it left out. */
static int trim_label(char *b, int w)
{
    int lost = tui_label_fit(b, w);
    char *rest = strstr(b, "  "); /* only what differs: the panel headers show the rest */
    if (rest)
        *rest = 0;
    size_t n = strlen(b);
    b[n] = ' ', b[n + 1] = ' ', b[n + 2] = 0;
    return lost;
}

/* Both runs' labels (twin_label, in buffers of 160) fitted into room
 * columns together, two spaces after each, neither over cap columns:
 * both in their short forms when either needs it (the two read alike),
 * and a short label gives its spare columns to the other. Returns how
 * many settings that matter they left out. */
static int fit_label_pair(char *la, char *lb, const char *fa, const char *fb, int room, int cap)
{
    char sa[160], sb[160];
    snprintf(sa, sizeof sa, "%s", fa);
    snprintf(sb, sizeof sb, "%s", fb);
    snprintf(la, 160, "%s", sa);
    snprintf(lb, 160, "%s", sb);
    trim_label(la, 160);
    trim_label(lb, 160);
    int na = (int)strlen(la), nb = (int)strlen(lb);
    if (na + nb <= room && na <= cap + 2 && nb <= cap + 2)
        return 0;
    tui_label_brief(sa);
    tui_label_brief(sb);
    snprintf(la, 160, "%s", sa);
    trim_label(la, clampi(room / 2 - 2, 1, cap));
    snprintf(lb, 160, "%s", sb);
    int lost = trim_label(lb, clampi(room - (int)strlen(la) - 2, 1, cap));
    snprintf(la, 160, "%s", sa);
    return lost + trim_label(la, clampi(room - (int)strlen(lb) - 2, 1, cap));
}

static long window_points(const trainer_snapshot *s)
{
    return s->s.hist_total - trainer_hist_first(&s->s);
}

static const trainer_point *point(const trainer_snapshot *s, long i)
{
    return &s->hist[i % TRAINER_HIST];
}

tui_chart_geom tui_chart_geometry(tui_rect r, const trainer_snapshot *s, int unicode)
{
    tui_chart_geom g;
    memset(&g, 0, sizeof g);
    g.top = r.r + 1;
    g.left = r.c + 8; /* 7 columns of y labels and an axis */
    g.h = r.h - 2;    /* a title row above, the x labels below */
    g.w = r.w - 9;
    if (g.h < 1 || g.w < 1) {
        g.h = g.w = 0;
        return g;
    }
    g.xdots = unicode ? 2 * g.w : g.w;
    g.ydots = unicode ? 4 * g.h : 3 * g.h;
    long n = window_points(s), total = s->s.hist_total;
    if (n > 0) {
        g.first = point(s, total - n)->step;
        g.last = point(s, total - 1)->step;
    }
    /* the abandoned curve of a rewind reaches past the replay: the window
     * takes it in, so the class sees where the run was */
    if (s->s.ghost_n > 0) {
        long gl = s->s.ghost_first + s->s.ghost_n - 1;
        if (n <= 0)
            g.first = s->s.ghost_first;
        if (n <= 0 || gl > g.last)
            g.last = gl;
    }
    return g;
}

/* The x dot of a step: one dot per step while the window fits, else the
 * window squeezed onto the dots (first at dot 0, last at the last dot). */
static long xdot(const tui_chart_geom *cg, long step)
{
    long span = cg->last - cg->first;
    if (span < cg->xdots)
        return step - cg->first;
    return (step - cg->first) * (cg->xdots - 1) / span;
}

int tui_chart_col(const tui_chart_geom *cg, long step)
{
    if (cg->w <= 0 || step < cg->first || step > cg->last)
        return -1;
    return cg->left + (int)(xdot(cg, step) / (cg->xdots / cg->w));
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* The value as plotted: log10 for log-y (non-positive values cannot be
 * shown there), NaN when it cannot be plotted at all. */
static float plotted(float v, int logy)
{
    if (!isfinite(v))
        return NAN;
    if (logy)
        return v > 0 ? log10f(v) : NAN;
    return v;
}

static void fmt_axis(char *b, size_t n, double v, int logy)
{
    double x = logy ? pow(10.0, v) : v;
    snprintf(b, n, "%7.3g", x);
}

/* The series a chart can show: each run's train loss and validation loss. */
typedef enum { SER_LOSS_A, SER_LOSS_B, SER_VAL_A, SER_VAL_B, SER_COUNT } chart_series;

static float series_value(const trainer_point *p, chart_series k)
{
    switch (k) {
    case SER_LOSS_A: return p->run[0].loss;
    case SER_LOSS_B: return p->run[1].loss;
    case SER_VAL_A: return p->run[0].val_loss;
    default: return p->run[1].val_loss;
    }
}

/* What every step of drawing needs: the geometry, the window of points,
 * the fitted y range (as plotted) and the glyph set. */
typedef struct {
    tui_chart_geom cg;
    const trainer_snapshot *s;
    long first, total; /* the window: points first..total-1 */
    double lo, hi;
    int logy, uni, cmp;
    int dpc, dpr; /* dots per cell: x, y */
    /* each run's train loss smoothed over the window (scale.h: TensorBoard's
     * debiased EMA), point first + i at [i]; NaN where the loss was not finite */
    float smooth[2][TRAINER_HIST];
} chart_ctx;

/* The y dot of a plotted value (0 = the top), clamped into the plot. */
static int ydot(const chart_ctx *c, float v)
{
    int y = (int)floor((c->hi - v) / (c->hi - c->lo) * (c->cg.ydots - 1) + 0.5);
    return clampi(y, 0, c->cg.ydots - 1);
}

/* The x dot of point p, clamped: the window's steps are consecutive, so it
 * is in range; a wrong step must cost a misplaced dot, not a stray write. */
static long xdot_of(const chart_ctx *c, const trainer_point *p)
{
    long x = xdot(&c->cg, p->step);
    return x < 0 ? 0 : (x >= c->cg.xdots ? c->cg.xdots - 1 : x);
}

/* The legend's labels: "train", or with --compare each run's settings
 * now (twin_label), so the legend follows every change. Both runs'
 * entries come before everything else the row holds: their labels are
 * shortened first, then the step range and the y scale's name give their
 * columns; the items after run b's are left out when they do not fit. */
static void chart_legend(tui_grid *g, tui_rect r, const chart_ctx *c, const tui_ui *ui)
{
    const trainer_status *st = &c->s->s;
    char la[160] = "train  ", lb[160] = "";
    char range[64] = "", range_all[64] = "";
    if (c->total > c->first || st->ghost_n > 0)
        snprintf(range_all, sizeof range_all, " steps %ld-%ld ", c->cg.first, c->cg.last);
    memcpy(range, range_all, sizeof range);
    const char *mode = ui->logy ? "[log-y]  " : "[linear]  ";
    if (c->cmp) {
        char fa[160], fb[160];
        twin_run ra = snapshot_status_twin(st, 0), rb = snapshot_status_twin(st, 1);
        twin_label("a", ra, rb, fa, sizeof fa - 2);
        twin_label("b", rb, ra, fb, sizeof fb - 2);
        /* each at most the columns the other items want, while that
         * leaves no setting out */
        const int cap = clampi((r.w - 64) / 2, 20, 60);
        for (int give = 0, lost = 1; give < 6 && lost; give++) {
            if (give >= 2)
                range[0] = 0;
            if (give >= 4)
                mode = "";
            /* less "loss ", the y scale, the two glyphs and the range */
            int room = r.w - 1 - 5 - (int)strlen(mode) - 2 - 2 - (int)strlen(range);
            lost = fit_label_pair(la, lb, fa, fb, room, give % 2 ? room : cap);
        }
    }
    int right = r.c + r.w - (int)strlen(range);
    const int uni = c->uni, ghost = st->ghost_n > 0;
    char smooth[48] = "each step  ";
    if (ui->smooth > 0) /* the weight, as --smooth takes it */
        snprintf(smooth, sizeof smooth, "smoothed %g, %s: each step  ", ui->smooth,
                 ui->light ? "plain" : "dim"); /* --light has no dim (grey on white) */
    struct {
        const char *glyph, *text; /* a mark and what it stands for: both, or neither */
        int glyph_cols;           /* columns the glyph takes (3 bytes of UTF-8 are 1) */
        tui_style glyph_st;
    } legend[] = {
        {"loss ", mode, 5, TUI_S_TITLE},
        {uni ? "\xe2\xa3\xa4 " : "- ", la, 2, TUI_S_TRAIN}, /* ⣤ */
        {c->cmp ? "+ " : "", lb, 2, TUI_S_TWIN},
        {c->cmp ? "* " : "", "both  ", 2, TUI_S_TITLE},
        /* a rewind's curve is named before the smoothing: it is there
         * only for a while, and what it means is not read off the plot */
        {ghost ? (uni ? "\xc2\xb7 " : ". ") : "", "before rewind  ", 2, TUI_S_DIM}, /* · */
        {uni ? "\xe2\xa3\xa4 " : "- ", smooth, 2, TUI_S_DIM}, /* ⣤ */
        {uni ? "\xe2\x80\xa2 " : "o ", "validation  ", 2, TUI_S_VAL},
        {uni ? "\xe2\x94\x8a " : ": ", "setting changed", 2, TUI_S_MARK},
    };
    int col = r.c + 1;
    for (size_t i = 0; i < sizeof legend / sizeof legend[0]; i++) {
        if (!legend[i].glyph[0])
            continue;
        int tw = (int)strlen(legend[i].text);
        if (col + legend[i].glyph_cols + tw > right)
            break;
        col += tui_puts(g, r.r, col, legend[i].glyph_cols, legend[i].glyph_st, legend[i].glyph);
        col += tui_puts(g, r.r, col, tw, i == 0 ? TUI_S_DIM : TUI_S_LABEL, legend[i].text);
    }
    /* a range given up for the labels still shows where they left room */
    int rw = (int)strlen(range_all);
    if (rw > 0 && col <= r.c + r.w - rw)
        tui_puts(g, r.r, r.c + r.w - rw, rw, TUI_S_DIM, range_all);
}

/* The plotted values of the window's points from index `from` on, and of
 * the curve a rewind abandoned, into vals (at most cap); how many. */
static int range_values(const chart_ctx *c, long from, float *vals, int cap)
{
    static const chart_series all[] = {SER_LOSS_A, SER_VAL_A, SER_LOSS_B, SER_VAL_B};
    int k = 0, nser = c->cmp ? 4 : 2;
    for (long i = from; i < c->total && k + 4 <= cap; i++)
        for (int j = 0; j < nser; j++) {
            float v = plotted(series_value(point(c->s, i), all[j]), c->logy);
            if (!isnan(v))
                vals[k++] = v;
        }
    for (int i = 0; i < c->s->s.ghost_n && i < TRAINER_HIST && k + 2 <= cap; i++)
        for (int run = 0; run < 1 + c->cmp; run++) {
            float v = plotted(c->s->run[run].ghost[i], c->logy);
            if (!isnan(v))
                vals[k++] = v;
        }
    return k;
}

/* A chart of this many plotted rows or fewer (the projector's) fits its
 * top to the later half of the window: two or four rows over the first
 * steps' fall from ln 256 would put a plateau and a descent in one row. */
#define CHART_SHORT_ROWS 4

/* The y range: the window's lowest plotted value to its 98th percentile,
 * padded: the highest (k - 1) / 50 of k values are left out, so a window
 * of 50 or fewer keeps its highest (a 2% that is not one whole value
 * dropped the first step's loss of every short run, and the top label
 * then named a value below the point drawn there). A short chart takes
 * the percentile of the later half's values (the earlier ones above it
 * ride the top edge). 0, or -1 when nothing in the window can be
 * plotted. The values are sorted in a buffer on the stack: no allocation
 * per frame. */
static int chart_range(chart_ctx *c)
{
    float vals[6 * TRAINER_HIST];
    const int cap = (int)(sizeof vals / sizeof vals[0]);
    int k = range_values(c, c->first, vals, cap);
    if (k == 0)
        return -1;
    double lo = vals[0];
    for (int i = 1; i < k; i++)
        lo = vals[i] < lo ? vals[i] : lo;
    if (c->cg.h <= CHART_SHORT_ROWS && c->total - c->first >= 8) {
        int later = range_values(c, c->first + (c->total - c->first) / 2, vals, cap);
        k = later > 0 ? later : range_values(c, c->first, vals, cap);
    }
    qsort(vals, (size_t)k, sizeof *vals, cmp_float);
    double hi = vals[k - 1 - (k - 1) / 50];
    double pad = (hi - lo) * 0.05;
    if (pad < (c->logy ? 0.01 : 1e-3))
        pad = c->logy ? 0.01 : 1e-3;
    c->lo = lo - pad;
    c->hi = hi + pad;
    if (!c->logy && c->lo < 0 && c->lo + pad >= 0)
        c->lo = 0; /* a loss is never negative: do not pad below 0 */
    return 0;
}

/* The curve the latest rewind abandoned, grey, under everything else:
 * run a's as dots, run b's as '+' (the shapes of their live curves), one
 * per cell, within the window. */
static void chart_ghost(tui_grid *g, const chart_ctx *c)
{
    const trainer_status *st = &c->s->s;
    for (int run = 0; run < 1 + c->cmp; run++)
        for (int i = 0; i < st->ghost_n && i < TRAINER_HIST; i++) {
            long step = st->ghost_first + i;
            float v = plotted(c->s->run[run].ghost[i], c->logy);
            if (isnan(v) || step < c->cg.first || step > c->cg.last)
                continue;
            uint32_t ch = run ? '+' : c->uni ? G_MIDDOT : '.';
            tui_put(g, c->cg.top + ydot(c, v) / c->dpr,
                    c->cg.left + (int)(xdot(&c->cg, step) / c->dpc), ch, TUI_S_DIM);
        }
}

/* One run's markers: a dotted line down the plot at every step where
 * that run's settings changed (run a's under run b's). */
static void chart_marker_lines(tui_grid *g, const chart_ctx *c, int run)
{
    tui_style st = run ? TUI_S_TWIN : TUI_S_MARK;
    for (long i = c->first; i < c->total; i++) {
        const trainer_point *p = point(c->s, i);
        if (!(p->run[run].mark)[0])
            continue;
        int col = tui_chart_col(&c->cg, p->step);
        for (int y = 0; y < c->cg.h; y++)
            tui_put(g, c->cg.top + y, col, c->uni ? G_DOTV : ':', st);
    }
}

/* The dot bits of a line's cell in style st, from its glyph (0: not one). */
static uint8_t line_bits(const tui_cell *cell, int uni, tui_style st)
{
    if (cell->style != st)
        return 0;
    uint32_t ch = cell->ch;
    if (uni)
        return ch > G_BRAILLE && ch <= G_BRAILLE + 0xFF ? (uint8_t)(ch - G_BRAILLE) : 0;
    return ch == '\'' ? 1 : ch == '-' ? 2 : ch == '.' ? 4 : ch == '|' ? 7 : 0;
}

/* Add one dot of run a's line at plot dot (x, y), or'ed into the cell's
 * glyph. A cell run b's '+' holds becomes '*': both curves pass there, and
 * neither erases the other. */
static void line_dot(tui_grid *g, const chart_ctx *c, long x, int y, tui_style st)
{
    static const uint8_t braille[2][4] = {{0x01, 0x02, 0x04, 0x40}, {0x08, 0x10, 0x20, 0x80}};
    tui_cell *cell = tui_at(g, c->cg.top + y / c->dpr, c->cg.left + (int)(x / c->dpc));
    if (!cell)
        return;
    if (st == TUI_S_TRAIN && (cell->ch == G_BOTH || (cell->ch == '+' && cell->style == TUI_S_TWIN))) {
        cell->ch = G_BOTH;
        cell->style = TUI_S_TITLE;
        return;
    }
    uint8_t b = line_bits(cell, c->uni, st);
    if (st != TUI_S_TRAIN && !b && cell->ch != ' ')
        return; /* the raw line covers nothing but its own dots */
    if (c->uni) {
        b |= braille[x % 2][y % 4];
        cell->ch = G_BRAILLE + b;
    } else {
        b |= (uint8_t)(1u << (y % 3));
        cell->ch = b == 1 ? '\'' : b == 2 ? '-' : b == 4 ? '.' : '|';
    }
    cell->style = st;
}

/* Run a's train loss as a line, each point joined to the previous by a
 * vertical run of dots: smooth 0, each step's loss, dim, a non-finite one
 * a '!' on the top row; smooth 1, the smoothed loss over it, bright. */
static void chart_line_a(tui_grid *g, const chart_ctx *c, int smooth)
{
    int prev_y = -1;
    tui_style st = smooth ? TUI_S_TRAIN : TUI_S_DIM;
    for (long i = c->first; i < c->total; i++) {
        const trainer_point *p = point(c->s, i);
        float v = plotted(smooth ? c->smooth[0][i - c->first] : p->run[0].loss, c->logy);
        long x = xdot_of(c, p);
        if (isnan(v)) {
            if (!smooth)
                tui_put(g, c->cg.top, c->cg.left + (int)(x / c->dpc), '!', TUI_S_BAD);
            prev_y = -1;
            continue;
        }
        int y = ydot(c, v);
        int y0 = prev_y < 0 || prev_y > y ? y : prev_y;
        int y1 = prev_y < 0 || prev_y < y ? y : prev_y;
        for (int yy = y0; yy <= y1; yy++)
            line_dot(g, c, x, yy, st);
        prev_y = y;
    }
}

/* Run b's smoothed loss, a '+' a point. */
static void chart_smooth_b(tui_grid *g, const chart_ctx *c)
{
    for (long i = c->first; i < c->total; i++) {
        float v = plotted(c->smooth[1][i - c->first], c->logy);
        if (!isnan(v))
            tui_put(g, c->cg.top + ydot(c, v) / c->dpr,
                    c->cg.left + (int)(xdot_of(c, point(c->s, i)) / c->dpc), '+', TUI_S_TWIN);
    }
}

static void chart_smooth(chart_ctx *c, double w)
{
    for (int run = 0; run < 2; run++) {
        scale_ema e = scale_ema_start(w);
        for (long i = c->first; i < c->total && i - c->first < TRAINER_HIST; i++)
            c->smooth[run][i - c->first] = (float)scale_ema_add(&e, point(c->s, i)->run[run].loss);
    }
}

/* A series drawn as one glyph per point (run b's loss, the validation
 * losses). */
static void chart_points(tui_grid *g, const chart_ctx *c, chart_series k, uint32_t ch,
                         tui_style st)
{
    for (long i = c->first; i < c->total; i++) {
        const trainer_point *p = point(c->s, i);
        float v = plotted(series_value(p, k), c->logy);
        if (isnan(v))
            continue;
        tui_put(g, c->cg.top + ydot(c, v) / c->dpr, c->cg.left + (int)(xdot_of(c, p) / c->dpc),
                ch, st);
    }
}

/* One run's marker labels, last so they stay readable: run a's on the top
 * row, run b's on the bottom row, "a:"/"b:" first when there are two. */
static void chart_marker_labels(tui_grid *g, const chart_ctx *c, int run)
{
    int row = run ? c->cg.top + c->cg.h - 1 : c->cg.top, free_from = c->cg.left;
    tui_style st = run ? TUI_S_TWIN : TUI_S_MARK;
    for (long i = c->first; i < c->total; i++) {
        const trainer_point *p = point(c->s, i);
        const char *mark = p->run[run].mark;
        if (!mark[0])
            continue;
        char label[TRAINER_MARK + 4];
        snprintf(label, sizeof label, "%s%s", !c->cmp ? "" : run ? "b:" : "a:", mark);
        int col = tui_chart_col(&c->cg, p->step), len = (int)strlen(label);
        int start = col + 1;
        if (start + len > c->cg.left + c->cg.w)
            start = col - len;
        if (start < free_from)
            continue; /* would cover the previous label */
        tui_put(g, row, col, c->uni ? G_DOTV : ':', st);
        tui_puts(g, row, start, len, st, label);
        free_from = (start > col ? start + len : col + 1) + 1;
    }
}

/* y labels (top, middle, bottom of the fitted range) and x labels (the
 * window's first and last step). */
static void chart_axes(tui_grid *g, tui_rect r, const chart_ctx *c)
{
    const tui_chart_geom *cg = &c->cg;
    char b[32];
    fmt_axis(b, sizeof b, c->hi, c->logy);
    tui_puts(g, cg->top, r.c, 7, TUI_S_DIM, b);
    fmt_axis(b, sizeof b, c->lo, c->logy);
    tui_puts(g, cg->top + cg->h - 1, r.c, 7, TUI_S_DIM, b);
    if (cg->h >= 5) {
        fmt_axis(b, sizeof b, (c->hi + c->lo) / 2, c->logy);
        tui_puts(g, cg->top + (cg->h - 1) / 2, r.c, 7, TUI_S_DIM, b);
    }
    int xr = r.r + r.h - 1;
    snprintf(b, sizeof b, "%ld", cg->first);
    int l0 = tui_puts(g, xr, cg->left, cg->w, TUI_S_DIM, b);
    snprintf(b, sizeof b, "%ld", cg->last);
    int len = (int)strlen(b), end = tui_chart_col(cg, cg->last) + 1;
    if (end - len > cg->left + l0 + 1)
        tui_puts(g, xr, end - len, len, TUI_S_DIM, b);
}

void tui_draw_chart(tui_grid *g, tui_rect r, const trainer_snapshot *s, const tui_ui *ui)
{
    if (r.h < 4 || r.w < 20)
        return;
    chart_ctx c;
    memset(&c, 0, sizeof c);
    c.cg = tui_chart_geometry(r, s, ui->unicode);
    c.s = s;
    c.total = s->s.hist_total;
    c.first = c.total - window_points(s);
    c.logy = ui->logy;
    c.uni = ui->unicode;
    c.cmp = s->s.compare;
    chart_legend(g, r, &c, ui);
    if (c.cg.w <= 0)
        return;
    for (int i = 0; i < c.cg.h; i++)
        tui_put(g, c.cg.top + i, c.cg.left - 1, c.uni ? G_VLINE : '|', TUI_S_DIM);
    if (c.first >= c.total && s->s.ghost_n <= 0) {
        tui_puts(g, c.cg.top + c.cg.h / 2, c.cg.left + 2, c.cg.w - 2, TUI_S_DIM,
                 "waiting for the first step...");
        return;
    }
    if (chart_range(&c) != 0) {
        tui_puts(g, c.cg.top + c.cg.h / 2, c.cg.left + 2, c.cg.w - 2, TUI_S_BAD,
                 "no finite loss to plot");
        return;
    }
    c.dpc = c.cg.xdots / c.cg.w;
    c.dpr = c.cg.ydots / c.cg.h;
    /* under the data: the markers; then b's points, a's line over them
     * ('*' where both pass), the validation points, the marker labels */
    chart_smooth(&c, ui->smooth);
    chart_ghost(g, &c);
    if (c.cmp)
        chart_marker_lines(g, &c, 1);
    chart_marker_lines(g, &c, 0);
    /* each step's loss dim, the smoothed loss bright over it */
    if (c.cmp)
        chart_points(g, &c, SER_LOSS_B, '+', TUI_S_DIM);
    chart_line_a(g, &c, 0);
    if (c.cmp)
        chart_smooth_b(g, &c);
    chart_line_a(g, &c, 1);
    if (c.cmp)
        chart_points(g, &c, SER_VAL_B, c.uni ? G_WHITE_BULLET : 'x', TUI_S_TWIN);
    chart_points(g, &c, SER_VAL_A, c.uni ? G_BULLET : 'o', TUI_S_VAL);
    chart_marker_labels(g, &c, 0);
    if (c.cmp)
        chart_marker_labels(g, &c, 1);
    chart_axes(g, r, &c);
}

/* ---- heatmap -------------------------------------------------------------------- */

static void heat_glyph(int lv, const tui_ui *ui, uint32_t *ch, tui_style *st)
{
    static const char ascii[] = " .:-=#@";
    static const uint32_t uni[] = {' ', G_MIDDOT, G_LIGHT, G_MED, G_DARK, G_FULL, G_FULL};
    if (lv < 0) {
        *ch = 'X';
        *st = TUI_S_BAD;
        return;
    }
    *st = (tui_style)(TUI_S_HEAT0 + lv);
    if (ui->color) /* color carries the level; a solid cell shows it best */
        *ch = lv == 0 ? (ui->unicode ? G_MIDDOT : '.') : (ui->unicode ? G_FULL : '#');
    else
        *ch = ui->unicode ? uni[lv] : (uint32_t)ascii[lv];
}

/* One column of the heatmap's layer rows: display rows first..first+rows-1
 * from row top, columns c..c+w-1 (4 of them the index), per steps a cell. */
static void heat_rows(tui_grid *g, int top, int c0, int w, const trainer_snapshot *s, tui_ui *ui,
                      int first, int rows, long per, int run_b)
{
    int L = s->s.n_layer > 0 ? s->s.n_layer : 1;
    if (L > NS_MAX_LAYERS)
        L = NS_MAX_LAYERS;
    long n = window_points(s), total = s->s.hist_total;
    int left = c0 + 4, W = w - 5;
    char b[16];
    for (int i = 0; i < rows; i++) {
        int l = L - 1 - (first + i);
        if (l < 0)
            break;
        int rr = top + i;
        snprintf(b, sizeof b, "%c%2d ", l == ui->selected ? '>' : ' ', l);
        tui_puts(g, rr, c0, 4, l == ui->selected ? TUI_S_SELECT : TUI_S_TEXT, b);
        if (ui->n_hits < TUI_MAX_HITS)
            ui->hits[ui->n_hits++] = (tui_hit){rr, c0, c0 + w, TUI_ACT_NONE, l};
        for (long j = 0; j * per < n && j < W; j++) {
            double mx = 0;
            int bad = 0;
            for (long q = j * per; q < (j + 1) * per && q < n; q++) {
                long k = (total - n + q) % TRAINER_HIST;
                float v = s->run[run_b].heat[k][l];
                if (!isfinite(v))
                    bad = 1;
                else if (v > mx)
                    mx = v;
            }
            uint32_t ch;
            tui_style st;
            heat_glyph(bad ? -1 : scale_heat_level(mx), ui, &ch, &st);
            tui_put(g, rr, left + (int)j, ch, st);
        }
    }
}

void tui_draw_heatmap(tui_grid *g, tui_rect r, const trainer_snapshot *s, tui_ui *ui)
{
    int L = s->s.n_layer > 0 ? s->s.n_layer : 1;
    if (L > NS_MAX_LAYERS)
        L = NS_MAX_LAYERS;
    int rows = r.h - 2;
    /* the ranked layout's two columns: the top half of the layers at the
     * left, the bottom half at the right, each with half the width of time */
    int ncol = ui->layer_cols == 2 ? 2 : 1, colw = ncol == 2 ? (r.w - 1) / 2 : r.w;
    if (rows < 1 || colw < 20)
        return;
    ui->layer_rows = rows * ncol;
    if (ui->selected < 0 || ui->selected >= L)
        ui->selected = L - 1;
    ui->scroll = tui_scroll_fit(ui->scroll, rows * ncol, L - 1 - ui->selected, L);

    long n = window_points(s), total = s->s.hist_total;
    int W = colw - 5;
    long per = n > W ? (n + W - 1) / W : 1; /* steps per column */
    char b[96];
    /* --compare: the run the keys target (Tab), run a under both */
    int run_b = s->s.compare && ui->target == TWIN_B;
    int c = r.c + tui_puts(g, r.r, r.c, r.w, TUI_S_TITLE, "lyr gradient norm per layer over time");
    if (s->s.compare)
        c += tui_puts(g, r.r, c, r.c + r.w - c, run_b ? TUI_S_TWIN : TUI_S_TITLE,
                      run_b ? ", run b" : ", run a");
    if (n > 0) {
        snprintf(b, sizeof b, "  steps %ld-%ld, %ld per column (max)", point(s, total - n)->step,
                 point(s, total - 1)->step, per);
        tui_puts(g, r.r, c, r.c + r.w - c, TUI_S_DIM, b);
    }
    /* legend */
    static const char *const lab[] = {"<1e-4", "1e-4", "1e-3", "0.01", "0.1", "1", ">=10"};
    c = r.c + 4;
    for (int lv = 0; lv <= 6; lv++) {
        uint32_t ch;
        tui_style st;
        heat_glyph(lv, ui, &ch, &st);
        if (c + 3 + (int)strlen(lab[lv]) > r.c + r.w)
            break;
        tui_put(g, r.r + 1, c, ch, st);
        tui_put(g, r.r + 1, c + 1, ch, st);
        c += 3;
        c += tui_puts(g, r.r + 1, c, 6, TUI_S_DIM, lab[lv]) + 2;
    }
    if (c + 12 < r.c + r.w) {
        tui_put(g, r.r + 1, c, 'X', TUI_S_BAD);
        tui_puts(g, r.r + 1, c + 2, 10, TUI_S_DIM, "not finite");
    }
    for (int k = 0; k < ncol; k++)
        heat_rows(g, r.r + 2, r.c + k * (colw + 1), k == ncol - 1 ? r.w - k * (colw + 1) : colw, s,
                  ui, ui->scroll + k * rows, rows, per, run_b);
}
