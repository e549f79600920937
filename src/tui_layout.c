/* tui_layout.c - where everything goes, as pure functions of the terminal
 * size and the layer count (nvtop's habit), and the scales the bars use.
 * The tests call these over many sizes; nothing here draws.
 *
 *   rows 0-1     status: values, then clickable toggles
 *   layers       2 header rows + one row per layer (top = output side);
 *                as many layers as fit, the chart keeps >= 2/5 of the middle
 *   chart | side the loss chart; the selected layer's numbers at the right
 *   sample       1 row
 *   events       a title row + 2..8 newest events (more on taller screens)
 *   lesson       (--lesson, when shown) over the sample and events rows
 *   footer       the last row: key hints
 *
 * The ranked layout (the projector): a class's large font leaves a small
 * terminal (80x24, 100x30), and a lesson's moment needs its question, both
 * runs' loss and val and the layers it names (Post-LN's vanishing bottom
 * ones). When the layout above would scroll the layers (on up to 32 rows)
 * or cut the lesson's question (at any size), the rows go out by rank:
 * the question, the values rows, every layer (two columns of compact rows
 * before any of them scrolls), a chart of TUI_CHART_MIN rows (4 plotted;
 * 2 where that keeps every layer); then the
 * toggles or the selected layer's numbers (fold), the lesson's text, and
 * the rest to the chart. The sample line and the event log give theirs up.
 */
#include "tui.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

tui_layout tui_layout_compute(int rows, int cols, int n_layer)
{
    return tui_layout_compute_cmp(rows, cols, n_layer, 0);
}

/* The a | ratio | b split of --compare over the layer rows. */
static void split_compare(tui_layout *L, int cols)
{
    int aw = (cols - TUI_RATIO_W) / 2;
    tui_rect p = L->layers;
    L->layers.w = aw;
    L->ratio = (tui_rect){p.r, aw, p.h, TUI_RATIO_W};
    L->layers_b = (tui_rect){p.r, aw + TUI_RATIO_W, p.h, cols - aw - TUI_RATIO_W};
}

/* The ranked layout (the projector: a class's large font leaves 80x24 or
 * 100x30, and a lesson's moment needs its question, both runs' values and
 * the layers it names). Top to bottom: the values rows (and the toggles,
 * or the fold), the layers, the chart (| side), the lesson, the footer.
 * Rows go out in rank order: the question, the values rows, every layer
 * (two columns of compact rows before any of them scrolls), a chart of
 * TUI_CHART_MIN rows; then two more chart rows, the third status row,
 * the lesson's text, and the rest to the chart. 0 when even one layer row
 * does not fit. */
static int ranked(tui_layout *L, int rows, int cols, int n_layer, int compare, int lmin, int lwant)
{
    int vals = compare ? 2 : 1;
    int avail = rows - 1 - vals - lmin;
    int lcols = 1, lrows = n_layer, half = (n_layer + 1) / 2;
    /* 4 plotted rows, unless only 2 keep every layer on screen */
    int cmin = n_layer > 1 && half + 2 + TUI_CHART_MIN > avail && half + 2 + TUI_CHART_FLOOR <= avail
                   ? TUI_CHART_FLOOR
                   : TUI_CHART_MIN;
    if (n_layer + 2 + cmin > avail) {
        if (n_layer > 1 && half + 2 + cmin <= avail)
            lcols = 2, lrows = half;
        else
            lrows = avail - 2 - cmin; /* even compact rows scroll */
    }
    if (lrows < 1)
        return 0;
    int left = avail - lrows - 2 - cmin, chart_h = cmin;
    int grow = clampi(TUI_CHART_MIN - cmin, 0, left); /* the floor's 2 rows back first */
    chart_h += grow, left -= grow;
    int third = left > 0; /* the toggles, or the selected layer's numbers */
    left -= third;
    int text = lwant - lmin < left ? lwant - lmin : left;
    if (text < 0)
        text = 0;
    left -= text;
    chart_h += left;
    /* the side box needs its title, the a/b row and a few numbers */
    int side_w = chart_h >= 8 ? (cols < 100 ? 26 : (cols < 140 ? 30 : 36)) : 0;
    L->projector = 1;
    L->layer_cols = lcols;
    L->status = (tui_rect){0, 0, vals + (third && side_w), cols};
    int top = L->status.h;
    if (third && !side_w)
        L->fold = (tui_rect){top++, 0, 1, cols};
    L->layers = (tui_rect){top, 0, lrows + 2, cols};
    L->layer_rows = lrows;
    if (compare && lcols == 1)
        split_compare(L, cols);
    else if (compare) { /* two columns each: the ratio gives its columns up */
        L->layers.w = cols / 2;
        L->layers_b = (tui_rect){top, cols / 2, lrows + 2, cols - cols / 2};
    }
    top += lrows + 2;
    L->chart = (tui_rect){top, 0, chart_h, cols - side_w};
    L->side = side_w ? (tui_rect){top, cols - side_w, chart_h, side_w} : (tui_rect){0, 0, 0, 0};
    top += chart_h;
    L->lesson = lmin + text > 0 ? (tui_rect){top, 0, lmin + text, cols} : (tui_rect){0, 0, 0, 0};
    L->sample = L->events = (tui_rect){0, 0, 0, 0};
    return 1;
}

tui_layout tui_layout_compute_cmp(int rows, int cols, int n_layer, int compare)
{
    return tui_layout_compute_lesson(rows, cols, n_layer, compare, 0, 0);
}

tui_layout tui_layout_compute_lesson(int rows, int cols, int n_layer, int compare, int lesson_min,
                                     int lesson_want)
{
    tui_layout L = {0};
    if (rows < TUI_MIN_ROWS || cols < TUI_MIN_COLS) {
        L.too_small = 1;
        return L;
    }
    if (n_layer < 1)
        n_layer = 1;
    if (lesson_min < 0)
        lesson_min = 0;
    if (lesson_want < lesson_min)
        lesson_want = lesson_min;
    L.layer_cols = 1;
    /* --compare: a second values row, run b's */
    L.status = (tui_rect){0, 0, compare ? 3 : 2, cols};
    L.footer = (tui_rect){rows - 1, 0, 1, cols};
    int ev_h = clampi(3 + (rows - TUI_MIN_ROWS) / 6, 3, 9);
    L.events = (tui_rect){rows - 1 - ev_h, 0, ev_h, cols};
    L.sample = (tui_rect){L.events.r - 1, 0, 1, cols};
    L.lesson = (tui_rect){L.sample.r, 0, L.sample.h + L.events.h, cols};
    int mid_top = L.status.h, mid_h = L.sample.r - mid_top;
    /* the chart needs a title, an axis and >= 6 plot rows to read a trend */
    int chart_min = mid_h * 2 / 5 > 8 ? mid_h * 2 / 5 : 8;
    int panel_h = clampi(n_layer + 2, 3, mid_h - chart_min);
    L.layers = (tui_rect){mid_top, 0, panel_h, cols};
    L.layer_rows = panel_h - 2;
    if (compare)
        split_compare(&L, cols);
    int side_w = cols < 100 ? 26 : (cols < 140 ? 30 : 36);
    int chart_r = mid_top + panel_h, chart_h = mid_h - panel_h;
    L.chart = (tui_rect){chart_r, 0, chart_h, cols - side_w};
    L.side = (tui_rect){chart_r, cols - side_w, chart_h, side_w};
    /* a lesson's moment, or a projector-sized screen, ranks its rows when
     * this layout would scroll the layers or cut the question */
    int short_of = L.layer_rows < n_layer || L.lesson.h < lesson_min;
    if (short_of && (lesson_min > 0 || rows <= TUI_PROJECTOR_ROWS)) {
        tui_layout R = L;
        R.ratio = R.layers_b = R.fold = (tui_rect){0, 0, 0, 0};
        if (ranked(&R, rows, cols, n_layer, compare, lesson_min, lesson_want))
            L = R;
    }
    /* on a short screen the help takes every row: the keys come first */
    int hw = cols - 4 < 76 ? cols - 4 : 76;
    int need = tui_help_height(hw), hh = rows < need ? rows : need;
    L.help = (tui_rect){(rows - hh) / 2, (cols - hw) / 2, hh, hw};
    return L;
}

tui_layer_cols tui_layer_columns(int width)
{
    return tui_layer_columns_prec(width, 0);
}

/* The cell of the table's column named metric in x, or -1. */
static int cell_of(const int *x, const char *metric)
{
    int n;
    const tui_layer_col *t = tui_layer_col_table(&n);
    for (int i = 0; i < n; i++)
        if (!strcmp(t[i].metric, metric))
            return x[i];
    return -1;
}

/* The single view: the index, the two gradient bars, the cells before the
 * act bar, the act bar, the other cells in the table's order. The bars
 * share what the cells leave: 3/8 each to the gradient bars (4..48), the
 * rest to the act bar (at most 40), less the precision cells (bf16, fp16)
 * while it keeps 4; the wide cells only from TUI_WIDE_COLS columns. */
tui_layer_cols tui_layer_columns_prec(int width, int prec)
{
    tui_layer_cols c;
    int n, fixed = 4 + 3, wide = 0; /* the index, a gap after each bar */
    const tui_layer_col *t = tui_layer_col_table(&n);
    for (int i = 0; i < n; i++) {
        c.x[i] = -1;
        if (t[i].flags & TUI_COL_WIDE)
            wide += t[i].row.w;
        else if (!(t[i].flags & TUI_COL_LOWP))
            fixed += t[i].row.w;
    }
    int extra_w = width >= TUI_WIDE_COLS ? wide : 0;
    int avail = width - fixed - extra_w;
    if (avail < 3 * 4)
        avail = 3 * 4;
    c.bar = clampi(avail * 3 / 8, 4, 48);
    c.act_w = avail - 2 * c.bar;
    if (c.act_w > 40)
        c.act_w = 40;
    int keep[TUI_LAYER_COLS_MAX];
    for (int i = 0; i < n; i++) {
        keep[i] = t[i].row.w > 0 && (extra_w || !(t[i].flags & TUI_COL_WIDE));
        if (keep[i] && (t[i].flags & TUI_COL_LOWP)) {
            keep[i] = prec && c.act_w >= 4 + t[i].row.w;
            c.act_w -= keep[i] ? t[i].row.w : 0;
        }
    }
    c.idx = 0;
    c.attn = 4;
    c.ffn = c.attn + c.bar + 1;
    int col = c.ffn + c.bar + 1;
    for (int i = 0; i < n; i++)
        if (keep[i] && (t[i].flags & TUI_COL_BEFORE_ACT))
            c.x[i] = col, col += t[i].row.w;
    c.act = col;
    col += c.act_w + 1;
    for (int i = 0; i < n; i++)
        if (keep[i] && !(t[i].flags & TUI_COL_BEFORE_ACT))
            c.x[i] = col, col += t[i].row.w;
    c.nums = cell_of(c.x, "grad_attn");
    c.act_num = cell_of(c.x, "act_max");
    c.prec = cell_of(c.x, "headroom");
    c.rms = cell_of(c.x, "resid_rms");
    c.extra = cell_of(c.x, "update_ratio");
    return c;
}

/* The compact rows' cells that fit width, the act bar's keep in *act:
 * every cell, then the lowest twin_drop rank goes while they do not fit.
 * The gradient bars keep 8 cells beside the act bar; only the numbers
 * take them down to TUI_TWIN_BAR_MIN. */
static void twin_keep(int width, int prec, int *keep, int *act)
{
    int n;
    const tui_layer_col *t = tui_layer_col_table(&n);
    for (int i = 0; i < n; i++)
        keep[i] = t[i].twin.w > 0 && (prec || !(t[i].flags & TUI_COL_LOWP));
    *act = 1;
    for (;;) {
        int need = 4 + 2 * (*act ? 8 : TUI_TWIN_BAR_MIN) + 2 + (*act ? TUI_TWIN_ACT_MIN : 0);
        int low = -1, low_rank = *act ? TUI_TWIN_ACT_DROP : 1 << 30;
        for (int i = 0; i < n; i++)
            if (keep[i]) {
                need += t[i].twin.w;
                if (t[i].twin_drop < low_rank)
                    low = i, low_rank = t[i].twin_drop;
            }
        if (need <= width || (low < 0 && !*act))
            return;
        if (low >= 0)
            keep[low] = 0;
        else
            *act = 0;
    }
}

tui_twin_cols tui_twin_columns(int width, int prec)
{
    tui_twin_cols c = {0, 4, 0, TUI_TWIN_BAR_MIN, -1, 0, {0}, -1, -1, -1};
    int n, keep[TUI_LAYER_COLS_MAX], act;
    const tui_layer_col *t = tui_layer_col_table(&n);
    twin_keep(width, prec, keep, &act);
    int fixed = 1; /* the gap after the MLP bar */
    for (int i = 0; i < n; i++)
        fixed += keep[i] ? t[i].twin.w : 0;
    int avail = width - 4 - 1 - fixed; /* bars, their gap, the act bar */
    if (act) {
        c.bar = clampi(avail * 3 / 10, 8, 40);
        c.act_w = clampi(avail - 2 * c.bar, 0, 30);
    } else if (avail >= 2 * TUI_TWIN_BAR_MIN) {
        c.bar = clampi(avail / 2, TUI_TWIN_BAR_MIN, 48);
    } else { /* a column of the ranked layout's two: the bars alone, shorter */
        c.bar = avail / 2 > 1 ? avail / 2 : 1;
    }
    c.ffn = c.attn + c.bar + 1;
    int col = c.ffn + c.bar + 1;
    if (act) {
        c.act = col;
        col += c.act_w;
    }
    for (int i = 0; i < n; i++) {
        c.x[i] = keep[i] ? col : -1;
        col += keep[i] ? t[i].twin.w : 0;
    }
    c.act_num = cell_of(c.x, "act_max");
    c.prec = cell_of(c.x, "headroom");
    c.rms = cell_of(c.x, "resid_rms");
    return c;
}

/* The mechanisms rows: the index, the logit bar, the cells. The cells
 * come first; the bar takes what they leave (at most 40), and goes when
 * under 8 cells, as the cells do from the right when even they do not
 * fit. */
tui_mech_cols tui_mech_columns(int width, int compact)
{
    tui_mech_cols c;
    int n, cells = 0;
    const tui_layer_col *t = tui_layer_col_table(&n);
    c.idx = 0;
    c.cell_w = compact ? 8 : 12;
    for (int i = 0; i < n; i++) {
        c.x[i] = -1;
        cells += (t[i].flags & TUI_COL_MECH) != 0;
    }
    while (cells > 0 && 4 + cells * c.cell_w - 1 > width) /* the last needs no gap after it */
        cells--;
    int avail = width - 4 - cells * c.cell_w - 1; /* the bar, a gap after it */
    c.bar = 4;
    c.bar_w = avail >= 8 ? (avail > 40 ? 40 : avail) : 0;
    int col = c.bar + (c.bar_w ? c.bar_w + 1 : 0);
    for (int i = 0; i < n && cells > 0; i++)
        if (t[i].flags & TUI_COL_MECH) {
            c.x[i] = col;
            col += c.cell_w;
            cells--;
        }
    return c;
}

int tui_scroll_fit(int first, int visible, int pos, int count)
{
    if (visible < 1)
        visible = 1;
    if (pos < first)
        first = pos;
    if (pos >= first + visible)
        first = pos - visible + 1;
    int max_first = count - visible > 0 ? count - visible : 0;
    return clampi(first, 0, max_first);
}

int tui_log_eighths(double v, int lo, int hi, int w)
{
    return (int)tui_log_eighths_d(v, lo, hi, w);
}

double tui_log_eighths_d(double v, double lo, double hi, int w)
{
    if (!(v > 0) || !isfinite(v) || !(hi > lo) || w <= 0)
        return 0;
    double f = (log10(v) - lo) / (hi - lo);
    double e = floor(f * 8.0 * w + 0.5);
    if (e < 0)
        return 0;
    if (e > 8.0 * w)
        return 8 * w;
    return e;
}

void tui_bar_axis(int relative, double gmax, double *lo, double *hi)
{
    *lo = SCALE_GRAD_LO;
    *hi = SCALE_GRAD_HI;
    if (relative && gmax > 0 && isfinite(gmax)) {
        *hi = log10(gmax);
        *lo = *hi - TUI_REL_DECADES;
    }
}

int tui_decade_col(int d, int lo, int hi, int w)
{
    int e = tui_log_eighths(pow(10.0, d), lo, hi, w);
    int col = (e + 7) / 8 - 1; /* the last cell a bar of 10^d touches */
    return col < 0 ? 0 : col;
}
