/* tui_chart.c - the loss chart and the gradient heatmap, drawn into the
 * cell grid from a snapshot's history ring.
 *
 * Chart: train loss as a line (braille dots, 2x4 per cell, in a UTF-8
 * locale; '.', '-' and '\'' at three heights per cell in ASCII),
 * validation loss as points, and a labelled marker at every step where a
 * setting changed. x: one dot per step while they fit, else the window
 * squeezed; y: fitted to the window's values from the lowest to the 98th
 * percentile, so one spike cannot flatten the rest (values above it ride
 * the top edge).
 *
 * Heatmap: one row per layer, one column per step (or per bucket of steps
 * when they do not fit, showing the bucket's largest norm), cells colored
 * (and, without color, shaded) by decade.
 *
 * No curses here.
 */
#include "tui.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

void tui_draw_chart(tui_grid *g, tui_rect r, const trainer_snapshot *s, const tui_ui *ui)
{
    if (r.h < 4 || r.w < 20)
        return;
    tui_chart_geom cg = tui_chart_geometry(r, s, ui->unicode);
    long n = window_points(s), total = s->s.hist_total;
    int uni = ui->unicode;
    int cmp = s->s.compare;
    char alabel[48], blabel[64];
    snprintf(alabel, sizeof alabel, "%s  ", s->s.label_a[0] ? s->s.label_a : "a");
    snprintf(blabel, sizeof blabel, "%s  ", s->s.label_b[0] ? s->s.label_b : "b");

    /* title and legend: each piece only if it fits whole, the step range
     * at the right */
    char range[64] = "";
    if (n > 0)
        snprintf(range, sizeof range, " steps %ld-%ld ", cg.first, cg.last);
    int right = r.c + r.w - (int)strlen(range);
    struct {
        const char *text;
        tui_style st;
    } legend[] = {
        {"loss ", TUI_S_TITLE},
        {ui->logy ? "[log-y]  " : "[linear]  ", TUI_S_DIM},
        {uni ? "\xe2\xa3\xa4 " : "- ", TUI_S_TRAIN}, /* ⣤ */
        {cmp ? alabel : "train  ", TUI_S_LABEL},
        {cmp ? "+ " : "", TUI_S_TWIN},
        {cmp ? blabel : "", TUI_S_LABEL},
        {uni ? "\xe2\x80\xa2 " : "o ", TUI_S_VAL},
        {"validation  ", TUI_S_LABEL},
        {uni ? "\xe2\x94\x8a " : ": ", TUI_S_MARK},
        {"setting changed", TUI_S_LABEL},
    };
    int c = r.c + 1;
    for (size_t i = 0; i < sizeof legend / sizeof legend[0]; i++) {
        int len = (int)strlen(legend[i].text);
        if (uni && (i == 2 || i == 6 || i == 8))
            len = 2; /* one glyph of three bytes and a space */
        if (len == 0)
            continue;
        if (c + len > right)
            break;
        c += tui_puts(g, r.r, c, len, legend[i].st, legend[i].text);
    }
    if (range[0] && right > c)
        tui_puts(g, r.r, right, (int)strlen(range), TUI_S_DIM, range);
    if (cg.w <= 0)
        return;
    for (int i = 0; i < cg.h; i++)
        tui_put(g, cg.top + i, cg.left - 1, uni ? G_VLINE : '|', TUI_S_DIM);
    if (n == 0) {
        tui_puts(g, cg.top + cg.h / 2, cg.left + 2, cg.w - 2, TUI_S_DIM,
                 "waiting for the first step...");
        return;
    }

    /* y range: lowest value .. 98th percentile of the window */
    float *vals = malloc(sizeof(float) * (size_t)(3 * n));
    if (!vals)
        return;
    int k = 0;
    for (long i = total - n; i < total; i++) {
        const trainer_point *p = point(s, i);
        float a = plotted(p->loss, ui->logy), b = plotted(p->val_loss, ui->logy);
        if (!isnan(a))
            vals[k++] = a;
        if (!isnan(b))
            vals[k++] = b;
        float tb = cmp ? plotted(p->loss_b, ui->logy) : NAN;
        if (!isnan(tb))
            vals[k++] = tb;
    }
    if (k == 0) {
        free(vals);
        tui_puts(g, cg.top + cg.h / 2, cg.left + 2, cg.w - 2, TUI_S_BAD,
                 "no finite loss to plot");
        return;
    }
    qsort(vals, (size_t)k, sizeof *vals, cmp_float);
    double lo = vals[0], hi = vals[(int)floor(0.98 * (k - 1))];
    free(vals);
    double pad = (hi - lo) * 0.05;
    if (pad < (ui->logy ? 0.01 : 1e-3))
        pad = ui->logy ? 0.01 : 1e-3;
    lo -= pad;
    hi += pad;
    if (!ui->logy && lo < 0 && lo + pad >= 0)
        lo = 0; /* a loss is never negative: do not pad below 0 */

    int W = cg.w, H = cg.h;
    int dpc = cg.xdots / W, dpr = cg.ydots / H; /* dots per cell */
    uint8_t *bits = calloc((size_t)W * (size_t)H, 1);
    if (!bits)
        return;
    static const uint8_t braille[2][4] = {{0x01, 0x02, 0x04, 0x40}, {0x08, 0x10, 0x20, 0x80}};

    /* markers under the data */
    for (long i = total - n; i < total; i++) {
        const trainer_point *p = point(s, i);
        if (!p->mark[0])
            continue;
        int col = tui_chart_col(&cg, p->step);
        for (int y = 0; y < H; y++)
            tui_put(g, cg.top + y, col, uni ? G_DOTV : ':', TUI_S_MARK);
    }

    /* the train line: each point joined to the previous by a vertical run */
    int prev_y = -1;
    for (long i = total - n; i < total; i++) {
        const trainer_point *p = point(s, i);
        float v = plotted(p->loss, ui->logy);
        long x = xdot(&cg, p->step);
        if (isnan(v)) {
            tui_put(g, cg.top, cg.left + (int)(x / dpc), '!', TUI_S_BAD);
            prev_y = -1;
            continue;
        }
        int y = (int)floor((hi - v) / (hi - lo) * (cg.ydots - 1) + 0.5);
        y = clampi(y, 0, cg.ydots - 1);
        int y0 = prev_y < 0 ? y : (prev_y < y ? prev_y : y);
        int y1 = prev_y < 0 ? y : (prev_y < y ? y : prev_y);
        /* the window's steps are consecutive, so x is in range; clamped
         * anyway: a wrong step must cost a misplaced dot, not the heap */
        if (x < 0 || x >= cg.xdots)
            x = x < 0 ? 0 : cg.xdots - 1;
        for (int yy = y0; yy <= y1; yy++) {
            int cx = (int)(x / dpc), cy = yy / dpr;
            uint8_t bit = uni ? braille[x % 2][yy % 4] : (uint8_t)(1u << (yy % 3));
            bits[(size_t)cy * W + cx] |= bit;
        }
        prev_y = y;
    }
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            uint8_t b = bits[(size_t)y * W + x];
            if (!b)
                continue;
            uint32_t ch;
            if (uni)
                ch = G_BRAILLE + b;
            else
                ch = b == 1 ? '\'' : b == 2 ? '-' : b == 4 ? '.' : '|';
            tui_put(g, cg.top + y, cg.left + x, ch, TUI_S_TRAIN);
        }
    free(bits);

    /* --compare: run b's loss, one '+' per column it reaches */
    for (long i = total - n; cmp && i < total; i++) {
        const trainer_point *p = point(s, i);
        float v = plotted(p->loss_b, ui->logy);
        if (isnan(v))
            continue;
        int y = (int)floor((hi - v) / (hi - lo) * (cg.ydots - 1) + 0.5);
        y = clampi(y, 0, cg.ydots - 1);
        tui_put(g, cg.top + y / dpr, cg.left + (int)(xdot(&cg, p->step) / dpc), '+', TUI_S_TWIN);
    }

    /* validation points over the line */
    for (long i = total - n; i < total; i++) {
        const trainer_point *p = point(s, i);
        float v = plotted(p->val_loss, ui->logy);
        if (isnan(v))
            continue;
        int y = (int)floor((hi - v) / (hi - lo) * (cg.ydots - 1) + 0.5);
        y = clampi(y, 0, cg.ydots - 1);
        tui_put(g, cg.top + y / dpr, cg.left + (int)(xdot(&cg, p->step) / dpc),
                uni ? G_BULLET : 'o', TUI_S_VAL);
    }

    /* marker labels on the top row, last so they stay readable */
    int free_from = cg.left;
    for (long i = total - n; i < total; i++) {
        const trainer_point *p = point(s, i);
        if (!p->mark[0])
            continue;
        int col = tui_chart_col(&cg, p->step), len = (int)strlen(p->mark);
        int start = col + 1;
        if (start + len > cg.left + W)
            start = col - len;
        if (start < free_from)
            continue; /* would cover the previous label */
        tui_put(g, cg.top, col, uni ? G_DOTV : ':', TUI_S_MARK);
        tui_puts(g, cg.top, start, len, TUI_S_MARK, p->mark);
        free_from = (start > col ? start + len : col + 1) + 1;
    }

    /* y labels: top, middle, bottom of the fitted range */
    char b[32];
    fmt_axis(b, sizeof b, hi, ui->logy);
    tui_puts(g, cg.top, r.c, 7, TUI_S_DIM, b);
    fmt_axis(b, sizeof b, lo, ui->logy);
    tui_puts(g, cg.top + H - 1, r.c, 7, TUI_S_DIM, b);
    if (H >= 5) {
        fmt_axis(b, sizeof b, (hi + lo) / 2, ui->logy);
        tui_puts(g, cg.top + (H - 1) / 2, r.c, 7, TUI_S_DIM, b);
    }

    /* x labels: the first and the last step of the window */
    int xr = r.r + r.h - 1;
    snprintf(b, sizeof b, "%ld", cg.first);
    int l0 = tui_puts(g, xr, cg.left, W, TUI_S_DIM, b);
    snprintf(b, sizeof b, "%ld", cg.last);
    int len = (int)strlen(b), end = tui_chart_col(&cg, cg.last) + 1;
    if (end - len > cg.left + l0 + 1)
        tui_puts(g, xr, end - len, len, TUI_S_DIM, b);
}

/* ---- heatmap -------------------------------------------------------------------- */

/* Decade levels: 0 below 1e-4, 1..5 for [1e-4,1e-3) .. [1,10), 6 from 10
 * (exploding); -1 when not finite. */
static int heat_level(double v)
{
    if (!isfinite(v))
        return -1;
    if (!(v > 0))
        return 0;
    return clampi((int)floor(log10(v)) + 5, 0, 6);
}

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

void tui_draw_heatmap(tui_grid *g, tui_rect r, const trainer_snapshot *s, tui_ui *ui)
{
    int L = s->s.n_layer > 0 ? s->s.n_layer : 1;
    if (L > NS_MAX_LAYERS)
        L = NS_MAX_LAYERS;
    int rows = r.h - 2;
    if (rows < 1 || r.w < 20)
        return;
    ui->layer_rows = rows;
    if (ui->selected < 0 || ui->selected >= L)
        ui->selected = L - 1;
    ui->scroll = tui_scroll_fit(ui->scroll, rows, L - 1 - ui->selected, L);

    long n = window_points(s), total = s->s.hist_total;
    int left = r.c + 4, W = r.w - 5;
    long per = n > W ? (n + W - 1) / W : 1; /* steps per column */
    char b[96];
    int c = r.c + tui_puts(g, r.r, r.c, r.w, TUI_S_TITLE, "lyr gradient norm per layer over time");
    if (n > 0) {
        snprintf(b, sizeof b, "  steps %ld-%ld, %ld per column (max)", point(s, total - n)->step,
                 point(s, total - 1)->step, per);
        tui_puts(g, r.r, c, r.c + r.w - c, TUI_S_DIM, b);
    }
    /* legend */
    static const char *const lab[] = {"<1e-4", "1e-4", "1e-3", "0.01", "0.1", "1", ">=10"};
    c = left;
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

    for (int i = 0; i < rows; i++) {
        int l = L - 1 - (ui->scroll + i);
        if (l < 0)
            break;
        int rr = r.r + 2 + i;
        snprintf(b, sizeof b, "%c%2d ", l == ui->selected ? '>' : ' ', l);
        tui_puts(g, rr, r.c, 4, l == ui->selected ? TUI_S_SELECT : TUI_S_TEXT, b);
        if (ui->n_hits < TUI_MAX_HITS)
            ui->hits[ui->n_hits++] = (tui_hit){rr, r.c, r.c + r.w, TUI_ACT_NONE, l};
        for (long j = 0; j * per < n && j < W; j++) {
            double mx = 0;
            int bad = 0;
            for (long q = j * per; q < (j + 1) * per && q < n; q++) {
                float v = s->heat[(total - n + q) % TRAINER_HIST][l];
                if (!isfinite(v))
                    bad = 1;
                else if (v > mx)
                    mx = v;
            }
            uint32_t ch;
            tui_style st;
            heat_glyph(bad ? -1 : heat_level(mx), ui, &ch, &st);
            tui_put(g, rr, left + (int)j, ch, st);
        }
    }
}
