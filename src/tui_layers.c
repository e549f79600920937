/* tui_layers.c - the layer panels, drawn into the cell grid from a
 * snapshot: one row per layer of gradient bars and activation maxima (a
 * run, or a --compare pair side by side with their ratio), and the
 * selected layer's numbers in the box beside the chart.
 *
 * Only draws: it reads the snapshot and the UI state, and records
 * clickable places in ui->hits. No curses, no trainer calls.
 */
#include "tui.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "numfmt.h"
#include "twin.h"

/* ---- glyphs (the code points: tui.h) ------------------------------------ */
/* Left-aligned eighth blocks: index k = k/8 of a cell (k = 1..7). */
static uint32_t eighth(int k) { return (uint32_t)(0x2590 - k); /* ▏=258F .. ▉=2589 */ }

/* v in e-notation in 7 columns: one decimal while it fits, none for a
 * negative number or a three-digit exponent ("-7e-03", not "-7.4e-0") */
static void e7(char *b, size_t n, double v)
{
    if (snprintf(b, n, "%7.1e", v) > 7)
        snprintf(b, n, "%7.0e", v);
}

/* A number in 7 columns: fixed point while it reads well, else e-notation. */

static void fmt7(char *b, size_t n, double v)
{
    if (isnan(v))
        snprintf(b, n, "%7s", "nan");
    else if (isinf(v))
        snprintf(b, n, "%7s", v > 0 ? "inf" : "-inf");
    else if (fabs(v) >= 0.01 && fabs(v) < 1000)
        snprintf(b, n, "%7.3f", v);
    else if (v == 0)
        snprintf(b, n, "%7s", "0");
    else
        e7(b, n, v);
}

static void fmt_e(char *b, size_t n, double v)
{
    if (isnan(v))
        snprintf(b, n, "%7s", "nan");
    else if (isinf(v))
        snprintf(b, n, "%7s", v > 0 ? "inf" : "-inf");
    else
        e7(b, n, v);
}

static tui_style grad_style(scale_grad_state st)
{
    switch (st) {
    case SCALE_G_VANISH: return TUI_S_VANISH;
    case SCALE_G_EXPLODE: return TUI_S_EXPLODE;
    case SCALE_G_NONFINITE: return TUI_S_BAD;
    default: return TUI_S_NORMAL;
    }
}

static const char *grad_state_name(scale_grad_state st)
{
    static const char *const n[] = {"normal", "vanishing", "exploding", "not finite"};
    return n[st];
}

/* A bar of v on the log scale lo..hi over w cells at (r, c). Colors name
 * the state; without color the glyph does (htop's monochrome scheme), and
 * ASCII has its own distinct glyphs. */
static void log_bar(tui_grid *g, int r, int c, int w, double v, double lo, double hi,
                    tui_style s, const tui_ui *ui)
{
    if (w <= 0)
        return;
    if (!isfinite(v)) {
        tui_puts(g, r, c, w, TUI_S_BAD, isnan(v) ? "NaN" : "Inf");
        return;
    }
    int e = (int)tui_log_eighths_d(v, lo, hi, w);
    int full = e / 8, part = e % 8;
    uint32_t fullg, partg;
    if (ui->unicode) {
        int distinct = !ui->color && s != TUI_S_NORMAL;
        fullg = distinct ? (s == TUI_S_VANISH ? G_LIGHT : G_DARK) : G_FULL;
        partg = distinct ? fullg : eighth(part);
    } else {
        fullg = s == TUI_S_VANISH ? '.' : (s == TUI_S_NORMAL ? '#' : '!');
        partg = s == TUI_S_NORMAL ? ':' : fullg;
    }
    for (int i = 0; i < full; i++)
        tui_put(g, r, c + i, fullg, s);
    if (part)
        tui_put(g, r, c + full, partg, s);
    if (v > pow(10.0, hi)) /* off the scale: say so at the end */
        tui_put(g, r, c + w - 1, ui->unicode ? G_RIGHT : '>', TUI_S_EXPLODE);
}

static void decade_label(char *b, size_t n, int d)
{
    if (d == 0)
        snprintf(b, n, "1");
    else
        snprintf(b, n, "1e%+d", d);
}

/* Decade labels under a bar area; each label starts at its decade's tick
 * (where a bar of exactly that value ends). Labels that would overlap the
 * previous one, or run past the bar area, are left out. */
static void scale_row(tui_grid *g, int r, int c, int w, int lo, int hi)
{
    int next_free = 0;
    for (int d = lo; d <= hi; d++) {
        char b[16];
        decade_label(b, sizeof b, d);
        int col = tui_decade_col(d, lo, hi, w), len = (int)strlen(b);
        if (col < next_free || col + len > w)
            continue;
        tui_puts(g, r, c + col, len, TUI_S_DIM, b);
        next_free = col + len + 1;
    }
}

/* ---- the layer panel ---------------------------------------------------------- */

/* The precision counter of a layer, 8 columns: overflows this step
 * ("ovf 12"), else the headroom log2(format max / act max) in doublings,
 * warned below 3 and bad below 1, so a layer about to overflow shows in
 * its row before it does. */
static void prec_cell(tui_grid *g, int r, int c, const layer_metrics *lm)
{
    char b[32];
    tui_style st = TUI_S_TEXT;
    if (lm->overflow > 0) {
        snprintf(b, sizeof b, "ovf%5.0f", (double)lm->overflow);
        st = TUI_S_BAD;
    } else if (!isfinite(lm->headroom)) {
        /* NaN: the act max was not a number; inf: it was 0 (a block a
         * norm gain of 0 switched off), nothing to measure against */
        snprintf(b, sizeof b, "%8s", "-");
        st = isnan(lm->headroom) ? TUI_S_BAD : TUI_S_DIM;
    } else {
        snprintf(b, sizeof b, "%8.1f", (double)lm->headroom);
        st = lm->headroom < 1 ? TUI_S_BAD : lm->headroom < 3 ? TUI_S_WARN : TUI_S_TEXT;
    }
    tui_puts(g, r, c, 8, st, b);
}

/* The underflow count of a layer this step, 8 columns: the gradient
 * values that fell to zero or to subnormals. */
static void under_cell(tui_grid *g, int r, int c, const layer_metrics *lm)
{
    char b[32];
    double u = lm->underflow;
    if (!isfinite(u))
        snprintf(b, sizeof b, "%8s", "-");
    else
        snprintf(b, sizeof b, u < 1e8 ? "%8.0f" : "%8.1e", u);
    tui_puts(g, r, c, 8, isfinite(u) ? TUI_S_TEXT : TUI_S_BAD, b);
}

/* Which precision counter the compact panels show: the underflow count
 * when a low-precision run does not scale its loss (its gradients fall
 * below fp16's smallest normal), else the headroom. */
static int shows_underflow(const trainer_status *s)
{
    int a_off = s->run[0].cfg.precision != FMT_FP32 && s->run[0].cfg.loss_scale < 0;
    int b_off = s->compare && s->run[1].cfg.precision != FMT_FP32 && s->run[1].cfg.loss_scale < 0;
    return a_off || b_off;
}

/* The largest finite attention or MLP gradient norm of any layer:
 * "vanishing" is relative to it. */
static double largest_grad(const step_metrics *m, int L)
{
    double gmax = 0;
    for (int l = 0; l < L; l++) {
        double a = m->layer[l].grad_attn, f = m->layer[l].grad_ffn;
        if (isfinite(a) && a > gmax)
            gmax = a;
        if (isfinite(f) && f > gmax)
            gmax = f;
    }
    return gmax;
}

/* The per-layer gradient norm the --compare ratio uses. */
static double layer_gnorm(const layer_metrics *lm)
{
    double a = lm->grad_attn, f = lm->grad_ffn, n = lm->grad_ln;
    return sqrt(a * a + f * f + n * n);
}

/* The activation-max bar of one layer on 1 .. 1e+6 over w cells at
 * (r, c), with the marks at 256 and 65504 under it. */
static tui_style act_style(double am)
{
    return !isfinite(am) || am >= SCALE_MARK_FP16 ? TUI_S_BAD
           : am >= SCALE_MARK_LNVAR               ? TUI_S_WARN
                                                : TUI_S_NORMAL;
}

/* ---- the per-layer numbers: the table (tui.h) ------------------------------- */

static tui_style grad_col_style(double v, double gmax)
{
    return grad_style(scale_grad_state_of(v, gmax));
}
static tui_style act_col_style(double v, double gmax)
{
    (void)gmax;
    return act_style(v);
}
static tui_style finite_style(double v, double gmax)
{
    (void)gmax;
    return isfinite(v) ? TUI_S_TEXT : TUI_S_BAD;
}
/* log2(format max / act max) in doublings: warned below 3, bad below 1 */
static tui_style headroom_style(double v, double gmax)
{
    (void)gmax;
    return !isfinite(v) ? (isnan(v) ? TUI_S_BAD : TUI_S_DIM)
           : v < 1      ? TUI_S_BAD
           : v < 3      ? TUI_S_WARN
                        : TUI_S_TEXT;
}
static tui_style count_style(double v, double gmax)
{
    (void)gmax;
    return v > 0 ? TUI_S_BAD : TUI_S_TEXT;
}
/* the precision cell: the underflow count where the compact rows say so */
static void prec_or_under(tui_grid *g, int r, int c, const layer_metrics *lm, int under)
{
    if (under)
        under_cell(g, r, c, lm);
    else
        prec_cell(g, r, c, lm);
}

/* In the single view's order (the cells before the act bar, then the
 * rest); the compact rows keep theirs in the same order. */
static const tui_layer_col layer_cols[] = {
    {.metric = "grad_attn", .fmt = TUI_FMT_E, .flags = TUI_COL_BEFORE_ACT,
     .row = {8, 0, "   attn", NULL}, .side = "grad attn", .brief = "g attn", .fold = "attn",
     .style = grad_col_style,
     .gloss = "L2 norm of the gradient of the block's attention weights (the attn bar); "
              "healthy: < 10 and > 1e-3 of the largest layer's"},
    {.metric = "grad_ffn", .fmt = TUI_FMT_E, .flags = TUI_COL_BEFORE_ACT,
     .row = {8, 0, "    mlp", NULL}, .side = "grad mlp", .brief = "g mlp", .fold = "mlp",
     .style = grad_col_style,
     .gloss = "the same for the block's MLP weights (the mlp bar); with attn, the layer's "
              "gradient"},
    /* the single view's title is the act bar's, "activation max" over both */
    {.metric = "act_max", .fmt = TUI_FMT_FIX, .row = {8, 0, NULL, NULL},
     .twin = {8, 1, " act max", NULL}, .twin_drop = 40, .side = "act max", .brief = "act mx",
     .fold = "act max", .style = act_col_style,
     .gloss = "largest |value| in the block (q, k, MLP, residual); fp16 overflows past 65504, "
              "the LN variance past 256"},
    {.metric = "headroom", .fmt = TUI_FMT_FIX, .flags = TUI_COL_LOWP,
     .row = {9, 1, " headroom", NULL}, .twin = {9, 1, " headroom", "    under"}, .twin_drop = 30,
     .side = "headroom", .brief = "headrm", .fold = "headroom", .style = headroom_style,
     .cell = prec_or_under,
     .gloss = "log2(format max / act max): doublings left before overflow; warned < 3, bad < 1; "
              "fp32 ~124: never near"},
    /* in the box only, next to act max and headroom: the residual stream's
     * largest value is what reaches fp16's limit (in the rows, act max) */
    {.metric = "resid_max", .fmt = TUI_FMT_FIX, .side = "resid max", .brief = "res mx",
     .style = finite_style,
     .gloss = "largest |x| of the residual stream after the block; past 65504 fp16 overflows"},
    {.metric = "resid_rms", .fmt = TUI_FMT_FIX, .row = {10, 2, " resid rms", NULL},
     .twin = {8, 1, "   rms", NULL}, .twin_drop = 10, .side = "resid rms", .brief = "rms",
     .fold = "rms", .style = finite_style,
     .gloss = "RMS of the residual stream after the block; Post-LN 1.00 (after its norm), "
              "Pre-LN grows with depth"},
    {.metric = "update_ratio", .fmt = TUI_FMT_E, .flags = TUI_COL_WIDE,
     .row = {9, 1, " upd/w", NULL}, .side = "upd/weight", .brief = "upd/w", .style = finite_style,
     .gloss = "||this step's update|| / ||weights||; healthy about 1e-3 (1e-4..1e-2), larger: "
              "the LR is high"},
    /* the gradient of the norms' own gains and biases, not the layer's
     * gradient (attn and mlp): two testers read "grad norm" as that */
    {.metric = "grad_ln", .fmt = TUI_FMT_E, .flags = TUI_COL_WIDE, .row = {9, 1, " g(norms)", NULL},
     .side = "g(norms)", .brief = "g(nrm)", .style = finite_style,
     .gloss = "|grad| of the block's norm gains and biases only, NOT the layer's gradient norm "
              "(attn, mlp)"},
    {.metric = "overflow", .fmt = TUI_FMT_COUNT, .flags = TUI_COL_LOWP, .side = "overflows",
     .brief = "ovf", .fold = "over", .style = count_style,
     .gloss = "values that overflowed to inf this step (bf16, fp16); healthy 0"},
    {.metric = "underflow", .fmt = TUI_FMT_COUNT, .flags = TUI_COL_LOWP, .side = "underflows",
     .gloss = "gradient values that fell to 0 or subnormals (bf16, fp16); many: loss scaling "
              "(l)",
     .brief = "unf", .fold = "under", .style = finite_style},
    /* the mechanisms: the attention's logits and entropy in the rows of a
     * wide screen, all four in the box and in the mechanisms rows (M) */
    {.metric = "attn_logit_max", .fmt = TUI_FMT_FIX,
     .flags = TUI_COL_WIDE | TUI_COL_BOX_LAST | TUI_COL_MECH,
     .row = {9, 1, " att lgt", NULL}, .side = "att logit", .brief = "logit",
     .style = finite_style, .unit = "q.k/sqrt(d)",
     .gloss = "largest |q.k|/sqrt(d_head) before the softmax; the default run: 2-13 in 600 "
              "steps; growing by orders of magnitude: QK-norm (Q) or a lower LR"},
    {.metric = "attn_entropy", .fmt = TUI_FMT_FIX,
     .flags = TUI_COL_WIDE | TUI_COL_BOX_LAST | TUI_COL_MECH,
     .row = {9, 1, " att ent", NULL}, .side = "att entrpy", .brief = "entrpy",
     .style = finite_style, .unit = "nats",
     .gloss = "entropy of the attention weights, nats, mean over heads and queries; at most "
              "ln(context); near 0: one-hot"},
    {.metric = "branch_ratio", .fmt = TUI_FMT_FIX, .flags = TUI_COL_BOX_LAST | TUI_COL_MECH,
     .side = "branch/x", .brief = "branch", .style = finite_style, .unit = "rms/rms",
     .gloss = "RMS of the block's branch outputs / RMS of the residual entering it; near 0: "
              "the block adds little"},
    {.metric = "norm_in_rms", .fmt = TUI_FMT_FIX, .flags = TUI_COL_BOX_LAST | TUI_COL_MECH,
     .side = "norm in", .brief = "nrm in", .style = finite_style, .unit = "rms",
     .gloss = "RMS of the first norm's input; growing by orders of magnitude: massive "
              "activations (Pre-LN)"},
};
enum { N_LAYER_COLS = sizeof layer_cols / sizeof layer_cols[0] };
_Static_assert(N_LAYER_COLS <= TUI_LAYER_COLS_MAX, "raise TUI_LAYER_COLS_MAX");

const tui_layer_col *tui_layer_col_table(int *n)
{
    *n = N_LAYER_COLS;
    return layer_cols;
}

double tui_layer_col_value(const tui_layer_col *c, const layer_metrics *lm)
{
    int k = metrics_layer_col_find(c->metric, strlen(c->metric));
    return k < 0 ? NAN : metrics_layer_col_get(lm, k);
}

/* Did the row say column c's value? A followed stream may not (an empty
 * group, a ratio between measurements): shown as "-", never as NaN,
 * which means measured and not finite. */
static int col_known(const tui_layer_col *c, const layer_metrics *lm)
{
    int k = metrics_layer_col_find(c->metric, strlen(c->metric));
    return k >= 0 && metrics_layer_known(lm, k);
}

/* A column's value in w columns: fixed point while it reads well, else
 * e-notation; or e-notation; or a count. */
static void col_text(char *b, size_t n, const tui_layer_col *c, double v, int w)
{
    if (c->fmt == TUI_FMT_E)
        fmt_e(b, n, v);
    else if (c->fmt == TUI_FMT_COUNT && isfinite(v))
        snprintf(b, n, v < 1e7 ? "%*.0f" : "%*.1e", w, v);
    else
        fmt7(b, n, v);
}

/* Column c's cell of a panel row at x (its cell's start). */
static void col_cell(tui_grid *g, int rr, int x, const tui_col_cell *cell, const tui_layer_col *c,
                     const layer_metrics *lm, double gmax, int under)
{
    if (!col_known(c, lm)) {
        tui_puts(g, rr, x + cell->pad, 7, TUI_S_TEXT, "      -");
        return;
    }
    if (c->cell) {
        c->cell(g, rr, x + cell->pad, lm, under);
        return;
    }
    char b[32];
    double v = tui_layer_col_value(c, lm);
    col_text(b, sizeof b, c, v, 7);
    tui_puts(g, rr, x + cell->pad, 7, c->style(v, gmax), b);
}

/* The cells' titles over a panel row at r (compact: the compact cells). */
static void col_titles(tui_grid *g, int r, int c0, const int *x, int compact, int under,
                       tui_style st)
{
    for (int i = 0; i < N_LAYER_COLS; i++) {
        const tui_col_cell *cell = compact ? &layer_cols[i].twin : &layer_cols[i].row;
        const char *t = under && cell->under_title ? cell->under_title : cell->title;
        if (x[i] >= 0 && t)
            tui_puts(g, r, c0 + x[i], cell->w, st, t);
    }
}

/* The cells of one layer's panel row. */
static void col_cells(tui_grid *g, int rr, int c0, const int *x, int compact,
                      const layer_metrics *lm, double gmax, int under)
{
    for (int i = 0; i < N_LAYER_COLS; i++)
        if (x[i] >= 0)
            col_cell(g, rr, c0 + x[i], compact ? &layer_cols[i].twin : &layer_cols[i].row,
                     &layer_cols[i], lm, gmax, under);
}


/* ---- the mechanisms rows (key M) ---------------------------------------------
 * In step with the gradient rows (the same layer per row, the same
 * selection and scroll): the largest attention logit on a log bar over
 * 1..1e4 (it grows by orders of magnitude: Dehghani et al. 2023), then
 * the TUI_COL_MECH cells. Not coloured by a verdict: the bar's length
 * is the news, and no threshold here is measured to separate healthy
 * from not at every size. */

static int col_index(const char *metric)
{
    for (int i = 0; i < N_LAYER_COLS; i++)
        if (!strcmp(layer_cols[i].metric, metric))
            return i;
    return -1;
}

/* Titles of the mechanisms cells at row r (right-aligned to the value),
 * and with units (the single view's second row) at r + 1. */
static void mech_titles(tui_grid *g, int r, int c0, const tui_mech_cols *k, int compact,
                        tui_style st)
{
    for (int i = 0; i < N_LAYER_COLS; i++) {
        if (k->x[i] < 0)
            continue;
        const char *t = compact ? layer_cols[i].brief : layer_cols[i].side;
        int len = (int)strlen(t), end = c0 + k->x[i] + k->cell_w - 1;
        tui_puts(g, r, end - len, len, st, t);
        if (!compact && layer_cols[i].unit) {
            len = (int)strlen(layer_cols[i].unit);
            tui_puts(g, r + 1, end - len, len, TUI_S_LABEL, layer_cols[i].unit);
        }
    }
}

/* One layer's mechanisms row after its index. */
static void mech_row(tui_grid *g, int rr, int c0, const tui_mech_cols *k, const layer_metrics *lm,
                     double gmax, const tui_ui *ui)
{
    int li = col_index("attn_logit_max");
    if (k->bar_w > 0 && li >= 0 && col_known(&layer_cols[li], lm))
        log_bar(g, rr, c0 + k->bar, k->bar_w, tui_layer_col_value(&layer_cols[li], lm),
                TUI_MECH_LOGIT_LO, TUI_MECH_LOGIT_HI, TUI_S_NORMAL, ui);
    tui_col_cell cell = {k->cell_w, k->cell_w - 8, NULL, NULL};
    for (int i = 0; i < N_LAYER_COLS; i++)
        if (k->x[i] >= 0)
            col_cell(g, rr, c0 + k->x[i], &cell, &layer_cols[i], lm, gmax, 0);
}

/* The single view's two header rows of the mechanisms. */
static void mech_header(tui_grid *g, tui_rect r, const tui_mech_cols *k)
{
    tui_puts(g, r.r, r.c + k->idx, 4, TUI_S_TITLE, "lyr");
    if (k->bar_w > 0) {
        tui_puts(g, r.r, r.c + k->bar, k->bar_w, TUI_S_TITLE,
                 k->bar_w >= 22 ? "largest attention logit" : "att logit");
        scale_row(g, r.r + 1, r.c + k->bar, k->bar_w, TUI_MECH_LOGIT_LO, TUI_MECH_LOGIT_HI);
    }
    mech_titles(g, r.r, r.c, k, 0, TUI_S_TITLE);
}

/* The cells of the 256 and 65504 marks inside an activation bar of w. */
static void act_marks(int w, int *m256, int *m16)
{
    int e256 = tui_log_eighths(SCALE_MARK_LNVAR, SCALE_AMAX_LO, SCALE_AMAX_HI, w);
    int e16 = tui_log_eighths(SCALE_MARK_FP16, SCALE_AMAX_LO, SCALE_AMAX_HI, w);
    *m256 = (e256 + 7) / 8 - 1;
    *m16 = (e16 + 7) / 8 - 1;
}

static void act_bar(tui_grid *g, int r, int c, int w, double am, const tui_ui *ui)
{
    tui_style as = act_style(am);
    int m256, m16;
    act_marks(w, &m256, &m16);
    uint32_t mark = ui->unicode ? G_DOTV : '|';
    tui_put(g, r, c + m256, mark, TUI_S_WARN);
    tui_put(g, r, c + m16, mark, TUI_S_BAD);
    if (!isfinite(am)) {
        tui_puts(g, r, c, w, TUI_S_BAD, isnan(am) ? "NaN" : "Inf");
        return;
    }
    int e = tui_log_eighths(am, SCALE_AMAX_LO, SCALE_AMAX_HI, w);
    int full = e / 8, part = e % 8;
    uint32_t fg = ui->unicode ? (ui->color || as == TUI_S_NORMAL ? G_FULL : G_DARK)
                              : (as == TUI_S_NORMAL ? '#' : (as == TUI_S_WARN ? '%' : '!'));
    for (int j = 0; j < full; j++)
        tui_put(g, r, c + j, fg, as);
    if (part)
        tui_put(g, r, c + full,
                ui->unicode ? (fg == G_FULL ? eighth(part) : fg) : (fg == '#' ? ':' : fg), as);
}

/* The scale labels over an activation bar: 1, 256, 65504 where they fit. */
static void act_scale(tui_grid *g, int r, int c, int w)
{
    int m256, m16;
    act_marks(w, &m256, &m16);
    tui_puts(g, r, c, 1, TUI_S_DIM, "1");
    if (m256 > 1)
        tui_puts(g, r, c + m256, 3, TUI_S_WARN, "256");
    if (m16 > m256 + 3 && m16 + 5 <= w)
        tui_puts(g, r, c + m16, 5, TUI_S_BAD, "65504");
    else if (m16 > m256 + 3 && m16 + 3 <= w)
        tui_puts(g, r, c + m16, 3, TUI_S_BAD, "65k");
}

/* The labels under (or over) a gradient bar area: the decades on the
 * absolute axis; on the relative one, its two ends. */
static void grad_scale(tui_grid *g, int r, int c, int w, int relative)
{
    if (!relative) {
        scale_row(g, r, c, w, SCALE_GRAD_LO, SCALE_GRAD_HI);
        return;
    }
    tui_puts(g, r, c, w, TUI_S_DIM, "max/10");
    if (w >= 11)
        tui_puts(g, r, c + w - 3, 3, TUI_S_DIM, "max");
}

/* A gradient bar column's title: which sublayer, and which axis. */
static void grad_title(char *b, size_t n, const char *what, int w, int relative)
{
    if (w < 8) /* a compact column: the header row above names the axis */
        snprintf(b, n, "%s", what);
    else if (relative)
        snprintf(b, n, w >= 16 ? "%s, own max/10..max" : "%s rel", what);
    else
        snprintf(b, n, w >= 16 ? "%s 1e-5..1e+2" : "%s abs", what);
}

/* Replace every `from` in b (of size n) by `to` (not longer). */
static void label_replace(char *b, const char *from, const char *to)
{
    size_t fl = strlen(from), tl = strlen(to);
    for (char *p = strstr(b, from); p; p = strstr(p + tl, from)) {
        memmove(p + tl, p + fl, strlen(p + fl) + 1);
        memcpy(p, to, tl);
    }
}

void tui_label_brief(char *b)
{
    /* the values of the named kinds say what they are: "pre", "bf16";
     * the long names of the other settings by a shorter one that still
     * reads as the setting ("gamma=0"), before any is left out */
    static const char *const brief[][2] = {
        {" norm=", " "},         {" norm-kind=", " "}, {" precision=", " "},
        {"loss-scale=dynamic", "scale=dyn"},
        {"loss-scale=", "scale="},
        {" ln-gamma-init=", " gamma="},
        {" ln-beta-init=", " beta="},
        {" lr-layer-decay=", " lr-decay="},
        {" since step ", " since "},   {" until step ", " until "},
    };
    for (size_t i = 0; i < sizeof brief / sizeof brief[0]; i++)
        label_replace(b, brief[i][0], brief[i][1]);
}

/* A brief label names a precision (" bf16", a word of its own, not the
 * start of " fp32-norms"): the runs' precisions differ. */
static int precision_differs(const char *b)
{
    for (int f = 0; f < FMT_COUNT; f++) {
        size_t n = strlen(numfmt_names[f]);
        for (const char *p = strstr(b, numfmt_names[f]); p; p = strstr(p + 1, numfmt_names[f]))
            if (p > b && p[-1] == ' ' && (p[n] == ' ' || p[n] == 0))
                return 1;
    }
    return 0;
}

int tui_label_fit(char *b, int w)
{
    if (w < 1 || (int)strlen(b) <= w)
        return 0;
    /* twin_label's two spaces end what differs; without them nothing does */
    char *two = strstr(b, "  ");
    if (!two || two - b <= w) { /* what differs fits: the rest in whole words */
        b[w] = 0;
        char *sp = strrchr(b, ' ');
        if (sp && (two ? sp >= two : sp > b + 2))
            *sp = 0;
        for (size_t n = strlen(b); n > 0 && b[n - 1] == ' '; n--)
            b[n - 1] = 0;
        return 0;
    }
    *two = 0;
    if ((int)strlen(b) <= w)
        return 0;
    tui_label_brief(b);
    if ((int)strlen(b) <= w)
        return 0;
    /* the defaults of low precision, which differ from an fp32 run's only
     * as not applying there, go before a setting changed by hand; where
     * the precisions agree they are what differs, and stay */
    int gone = 0;
    static const char *const defaults[] = {" fp32-norms=on", " scale=dyn"}; /* and room for " +N" */
    for (size_t i = 0; i < 2 && (int)strlen(b) > w - 3 && precision_differs(b); i++)
        if (strstr(b, defaults[i])) {
            label_replace(b, defaults[i], "");
            gone++;
        }
    if ((int)strlen(b) <= w - 3 || (gone == 0 && (int)strlen(b) <= w)) {
        if (gone)
            snprintf(b + strlen(b), 4, " +%c", (char)('0' + gone)); /* at most 2 */
        return 0;
    }
    /* whole words, and how many of the differing settings were left out
     * (those before twin_label's two spaces): " +2" says so */
    char orig[192];
    snprintf(orig, sizeof orig, "%s", b);
    char *rest = strstr(orig, "  ");
    int diff_end = rest ? (int)(rest - orig) : (int)strlen(orig);
    int cut = w > 6 ? w - 3 : w;
    b[cut] = 0;
    char *sp = strrchr(b, ' ');
    if (sp && sp > b + 2)
        *sp = 0;
    int kept = (int)strlen(b), dropped = gone;
    for (int i = kept; i < diff_end; i++)
        dropped += (i == kept || orig[i - 1] == ' ') && orig[i] != ' ';
    if (dropped > 0 && dropped < 10 && w > 6)
        snprintf(b + kept, 4, " +%d", dropped);
    return dropped - gone;
}

/* One run's label as the panel header shows it (twin_label). */
static void run_label(const trainer_status *s, int which, char *b, size_t n)
{
    twin_run ra = snapshot_status_twin(s, 0), rb = snapshot_status_twin(s, 1);
    if (!s->compare) { /* one run (compact rows): its settings, no other to differ from */
        twin_label("run", ra, (twin_run){0}, b, n);
        return;
    }
    twin_label(which ? "b" : "a", which ? rb : ra, which ? ra : rb, b, n);
}

/* The two header rows of a run's panel: its settings now, and the column
 * titles (the bars' axes and the activation marks). */
static void twin_header(tui_grid *g, tui_rect r, const trainer_status *s, const tui_ui *ui,
                        int which, const tui_twin_cols *k, int label_w)
{
    char b[160], full[160];
    run_label(s, which, full, sizeof full);
    int col_w = r.w;
    r.w = label_w;
    /* compact bars: their axis said once, after the label, unless the
     * label needs its columns to say a setting that differs */
    const char *axis = k->bar >= 8 ? "" : ui->bars_rel ? "  bars rel" : "  bars abs";
    int aw = (int)strlen(axis);
    memcpy(b, full, sizeof b);
    /* whole words: half of "fp32-norms" reads as a precision */
    if (tui_label_fit(b, r.w - aw > 20 ? r.w - aw : r.w) > 0) {
        memcpy(b, full, sizeof b);
        tui_label_fit(b, r.w);
    }
    if ((int)strlen(b) + aw <= r.w && strlen(b) + (size_t)aw < sizeof b)
        strcat(b, axis);
    if (label_w > 0)
        tui_puts(g, r.r, r.c, r.w, ui->target == (which ? TWIN_B : TWIN_A) ? TUI_S_SELECT : TUI_S_TITLE,
                 b);
    int rr = r.r + 1;
    tui_puts(g, rr, r.c + k->idx, 4, TUI_S_LABEL, "lyr");
    if (ui->mech) {
        tui_mech_cols m = tui_mech_columns(col_w, 1);
        if (m.bar_w > 0)
            tui_puts(g, rr, r.c + m.bar, m.bar_w, TUI_S_LABEL,
                     m.bar_w >= 13 ? "logit 1..1e4" : "1..1e4");
        mech_titles(g, rr, r.c, &m, 1, TUI_S_LABEL);
        return;
    }
    grad_title(b, sizeof b, "attn", k->bar, ui->bars_rel);
    tui_puts(g, rr, r.c + k->attn, k->bar, TUI_S_LABEL, b);
    grad_title(b, sizeof b, "mlp", k->bar, ui->bars_rel);
    tui_puts(g, rr, r.c + k->ffn, k->bar, TUI_S_LABEL, b);
    if (k->act >= 0)
        act_scale(g, rr, r.c + k->act, k->act_w);
    col_titles(g, rr, r.c, k->x, 1, shows_underflow(s), TUI_S_LABEL);
}

/* One layer's row of a run's panel. */
static void twin_row(tui_grid *g, tui_rect r, int rr, const layer_metrics *lm,
                     const tui_twin_cols *k, double gmax, const tui_ui *ui, int under)
{
    if (ui->mech) {
        tui_mech_cols m = tui_mech_columns(r.w, 1);
        mech_row(g, rr, r.c, &m, lm, gmax, ui);
        return;
    }
    double lo, hi;
    tui_bar_axis(ui->bars_rel, gmax, &lo, &hi);
    scale_grad_state sa = scale_grad_state_of(lm->grad_attn, gmax);
    scale_grad_state sf = scale_grad_state_of(lm->grad_ffn, gmax);
    if (metrics_layer_known(lm, METRICS_LC_GRAD_ATTN)) /* no bar for what was not said */
        log_bar(g, rr, r.c + k->attn, k->bar, lm->grad_attn, lo, hi, grad_style(sa), ui);
    if (metrics_layer_known(lm, METRICS_LC_GRAD_FFN)) /* no bar for what was not said */
        log_bar(g, rr, r.c + k->ffn, k->bar, lm->grad_ffn, lo, hi, grad_style(sf), ui);
    if (k->act >= 0 && metrics_layer_known(lm, METRICS_LC_ACT_MAX))
        act_bar(g, rr, r.c + k->act, k->act_w, lm->act_max, ui);
    col_cells(g, rr, r.c, k->x, 1, lm, gmax, under);
}

/* A layer row's index cell, 4 columns: ">12!" (selected, the first
 * non-finite), styled by the worse of its two gradients' states. */
static void layer_index(tui_grid *g, int rr, int c, int l, int fault_l, const layer_metrics *lm,
                        double gmax, const tui_ui *ui)
{
    int sel = l == ui->selected;
    scale_grad_state sa = scale_grad_state_of(lm->grad_attn, gmax);
    scale_grad_state sf = scale_grad_state_of(lm->grad_ffn, gmax);
    char b[16];
    snprintf(b, sizeof b, "%c%2d%c", sel ? '>' : ' ', l, l == fault_l ? '!' : ' ');
    tui_puts(g, rr, c, 4,
             l == fault_l ? TUI_S_BAD : sel ? TUI_S_SELECT : grad_style(sa > sf ? sa : sf), b);
}

/* One column of a run's compact panel: its header and the display rows
 * first..first+rows-1 (display row 0 = the top layer). */
static void twin_column(tui_grid *g, tui_rect r, const trainer_status *s, tui_ui *ui, int which,
                        int first, int rows, int label_w)
{
    const step_metrics *m = &s->run[which].last;
    const ns_config *cfg = &s->run[which].cfg;
    int L = s->n_layer > 0 ? s->n_layer : 1;
    if (L > NS_MAX_LAYERS)
        L = NS_MAX_LAYERS;
    tui_twin_cols k = tui_twin_columns(r.w, cfg->precision != FMT_FP32);
    twin_header(g, r, s, ui, which, &k, label_w);
    int fault_l = s->have_metrics && m->nonfinite ? m->fault_layer : -1;
    double gmax = s->have_metrics ? largest_grad(m, L) : 0;
    for (int i = 0; i < rows; i++) {
        int l = L - 1 - (first + i);
        if (l < 0)
            break;
        int rr = r.r + 2 + i;
        const layer_metrics *lm = &m->layer[l];
        layer_index(g, rr, r.c, l, fault_l, lm, gmax, ui);
        tui_add_hit(ui, rr, r.c, r.c + r.w, TUI_ACT_NONE, l);
        if (s->have_metrics)
            twin_row(g, r, rr, lm, &k, gmax, ui, shows_underflow(s));
        else if (i == 0)
            tui_puts(g, rr, r.c + 4, r.w - 4, TUI_S_DIM, "waiting...");
    }
}

/* --compare: one run's layers, the single view's columns compacted so two
 * panels fit side by side; tui_twin_columns drops what does not fit. In
 * the ranked layout's two columns (ui->layer_cols) the top half of the
 * layers is at the left, the bottom half at the right, every one shown. */
void tui_draw_layers_twin(tui_grid *g, tui_rect r, const trainer_snapshot *snap, tui_ui *ui,
                          int which)
{
    const trainer_status *s = &snap->s;
    int L = s->n_layer > 0 ? s->n_layer : 1;
    if (L > NS_MAX_LAYERS)
        L = NS_MAX_LAYERS;
    int rows = r.h - 2, ncol = ui->layer_cols == 2 ? 2 : 1;
    int colw = ncol == 2 ? (r.w - 1) / 2 : r.w;
    if (rows < 1 || colw < (ncol == 2 ? 4 + 3 : 4 + 2 * TUI_TWIN_BAR_MIN + 1))
        return;
    ui->layer_rows = rows * ncol;
    if (ui->selected < 0 || ui->selected >= L)
        ui->selected = L - 1;
    ui->scroll = tui_scroll_fit(ui->scroll, rows * ncol, L - 1 - ui->selected, L);
    for (int c = 0; c < ncol; c++) {
        tui_rect cr = {r.r, r.c + c * (colw + 1), r.h, colw}; /* the same columns in both */
        twin_column(g, cr, s, ui, which, ui->scroll + c * rows, rows, c == 0 ? r.w - 1 : 0);
    }
}

/* --compare: a/b of each layer's gradient norm, on the rows of the panels. */
void tui_draw_ratio(tui_grid *g, tui_rect r, const trainer_snapshot *snap, const tui_ui *ui)
{
    const trainer_status *s = &snap->s;
    int L = s->n_layer > 0 ? s->n_layer : 1;
    if (L > NS_MAX_LAYERS)
        L = NS_MAX_LAYERS;
    int rows = r.h - 2;
    if (rows < 1 || r.w < 8)
        return;
    tui_puts(g, r.r, r.c + 1, r.w - 1, TUI_S_TITLE, "a/b");
    tui_puts(g, r.r + 1, r.c + 1, r.w - 1, TUI_S_LABEL, "|grad|");
    if (!s->have_metrics)
        return;
    for (int i = 0; i < rows; i++) {
        int l = L - 1 - (ui->scroll + i);
        if (l < 0)
            break;
        double a = layer_gnorm(&s->run[0].last.layer[l]), b = layer_gnorm(&s->run[1].last.layer[l]);
        char t[32];
        tui_style st = TUI_S_TEXT;
        if (!isfinite(a) || !isfinite(b)) {
            snprintf(t, sizeof t, "%7s", "nan");
            st = TUI_S_BAD;
        } else if (b <= 0) {
            snprintf(t, sizeof t, "%7s", a > 0 ? "inf" : "-");
            st = TUI_S_DIM;
        } else {
            double q = a / b;
            snprintf(t, sizeof t, q >= 1e4 || q < 1e-3 ? "%7.1e" : "%7.3g", q);
            st = q > 10 || q < 0.1 ? TUI_S_WARN : TUI_S_TEXT;
        }
        tui_puts(g, r.r + 2 + i, r.c + 1, 7, st, t);
    }
}

/* The single view's two header rows: titles over the columns (and which
 * layers show when they scroll), then the scales. */
static void layers_header(tui_grid *g, tui_rect r, const tui_layer_cols *k, int L, int rows,
                          const tui_ui *ui)
{
    int top_shown = L - 1 - ui->scroll, bottom_shown = top_shown - rows + 1;
    if (bottom_shown < 0)
        bottom_shown = 0;
    tui_puts(g, r.r, r.c + k->idx, 4, TUI_S_TITLE, "lyr");
    tui_puts(g, r.r, r.c + k->attn, k->bar, TUI_S_TITLE,
             k->bar >= 17 ? "attention |grad|" : "attn |grad|");
    tui_puts(g, r.r, r.c + k->ffn, k->bar, TUI_S_TITLE, "MLP |grad|");
    /* over the act bar and the act number's cell after it */
    tui_puts(g, r.r, r.c + k->act, k->act_w + 9, TUI_S_TITLE, "activation max");
    col_titles(g, r.r, r.c, k->x, 0, 0, TUI_S_TITLE);
    if (L > rows) { /* scrolling: say which layers are shown */
        char b[48];
        snprintf(b, sizeof b, " %d-%d of %d ", top_shown, bottom_shown, L);
        int len = (int)strlen(b);
        tui_puts(g, r.r, r.c + r.w - len, len, TUI_S_DIM, b);
    }
    grad_scale(g, r.r + 1, r.c + k->attn, k->bar, ui->bars_rel);
    grad_scale(g, r.r + 1, r.c + k->ffn, k->bar, ui->bars_rel);
    act_scale(g, r.r + 1, r.c + k->act, k->act_w);
}

/* One layer's row of the single view, after its index. */
static void layer_row(tui_grid *g, tui_rect r, int rr, const layer_metrics *lm,
                      const tui_layer_cols *k, double gmax, const tui_ui *ui)
{
    /* the relative view's axis ends at the largest layer's gradient */
    double lo, hi;
    tui_bar_axis(ui->bars_rel, gmax, &lo, &hi);
    scale_grad_state sa = scale_grad_state_of(lm->grad_attn, gmax);
    scale_grad_state sf = scale_grad_state_of(lm->grad_ffn, gmax);
    if (metrics_layer_known(lm, METRICS_LC_GRAD_ATTN)) /* no bar for what was not said */
        log_bar(g, rr, r.c + k->attn, k->bar, lm->grad_attn, lo, hi, grad_style(sa), ui);
    if (metrics_layer_known(lm, METRICS_LC_GRAD_FFN)) /* no bar for what was not said */
        log_bar(g, rr, r.c + k->ffn, k->bar, lm->grad_ffn, lo, hi, grad_style(sf), ui);
    /* activation max, with the two fp16 marks */
    if (metrics_layer_known(lm, METRICS_LC_ACT_MAX))
        act_bar(g, rr, r.c + k->act, k->act_w, lm->act_max, ui);
    col_cells(g, rr, r.c, k->x, 0, lm, gmax, 0);
}

void tui_draw_layers(tui_grid *g, tui_rect r, const trainer_snapshot *snap, tui_ui *ui)
{
    const trainer_status *s = &snap->s;
    if (ui->layer_cols == 2) { /* the ranked layout: two columns of compact rows */
        tui_draw_layers_twin(g, r, snap, ui, 0);
        return;
    }
    const step_metrics *m = &s->run[0].last;
    int L = s->n_layer > 0 ? s->n_layer : 1;
    if (L > NS_MAX_LAYERS)
        L = NS_MAX_LAYERS;
    tui_layer_cols k = tui_layer_columns_prec(r.w, s->run[0].cfg.precision != FMT_FP32);
    int rows = r.h - 2;
    if (rows < 1)
        return;
    ui->layer_rows = rows;
    int fault_l = s->have_metrics && m->nonfinite ? m->fault_layer : -1;
    if (ui->selected < 0 || ui->selected >= L)
        ui->selected = L - 1;
    ui->scroll = tui_scroll_fit(ui->scroll, rows, L - 1 - ui->selected, L);
    tui_mech_cols mk = tui_mech_columns(r.w, 0);
    if (ui->mech)
        mech_header(g, r, &mk);
    else
        layers_header(g, r, &k, L, rows, ui);
    /* the largest layer gradient: "vanishing" is relative to it */
    double gmax = s->have_metrics ? largest_grad(m, L) : 0;
    for (int i = 0; i < rows; i++) {
        int l = L - 1 - (ui->scroll + i);
        if (l < 0)
            break;
        int rr = r.r + 2 + i;
        const layer_metrics *lm = &m->layer[l];
        layer_index(g, rr, r.c + k.idx, l, fault_l, lm, gmax, ui);
        tui_add_hit(ui, rr, r.c, r.c + r.w, TUI_ACT_NONE, l);
        if (s->have_metrics && ui->mech)
            mech_row(g, rr, r.c, &mk, lm, gmax, ui);
        else if (s->have_metrics)
            layer_row(g, r, rr, lm, &k, gmax, ui);
        else if (i == 0)
            tui_puts(g, rr, r.c + k.attn, r.w - k.attn, TUI_S_DIM, "waiting for the first step...");
    }
}

/* ---- the selected layer's numbers -------------------------------------------- */

static void side_value(tui_grid *g, int r, int c, int w, const tui_layer_col *col,
                       const layer_metrics *lm, double gmax)
{
    char b[32] = "      -";
    double v = tui_layer_col_value(col, lm);
    tui_style st = col_known(col, lm) ? col->style(v, gmax) : TUI_S_TEXT;
    if (col_known(col, lm))
        col_text(b, sizeof b, col, v, 7);
    tui_puts(g, r, c, w, st == TUI_S_NORMAL ? TUI_S_TEXT : st, b); /* a bar's colour: text */
}

/* The rows of numbers from row rr, one for each column with a name in the
 * box, those flagged TUI_COL_BOX_LAST (last) or the others; with
 * --compare a column per run (a, then b; the heading with the first
 * group). Returns the next free row. */
static int side_numbers(tui_grid *g, tui_rect r, int rr, const trainer_status *s, int l,
                        double gmax, double gmax_b, int last)
{
    const layer_metrics *la = &s->run[0].last.layer[l], *lb = &s->run[1].last.layer[l];
    /* two runs: the names take what two 7-column values and a gap leave */
    int two = s->compare, namew = two ? clampi(r.w - 4 - 15, 7, 11) : 11;
    if (two && !last && rr < r.r + r.h - 1) {
        tui_puts(g, rr, r.c + 2 + namew + 6, 1, TUI_S_TITLE, "a");
        tui_puts(g, rr, r.c + 2 + namew + 14, 1, TUI_S_TWIN, "b");
        rr++;
    }
    for (int i = 0; i < N_LAYER_COLS && rr < r.r + r.h - 1; i++) {
        const tui_layer_col *c = &layer_cols[i];
        if (!c->side || !(c->flags & TUI_COL_BOX_LAST) != !last)
            continue;
        tui_puts(g, rr, r.c + 2, namew - 1, TUI_S_LABEL, namew < 11 ? c->brief : c->side);
        side_value(g, rr, r.c + 2 + namew, 7, c, la, gmax);
        if (two)
            side_value(g, rr, r.c + 2 + namew + 8, 7, c, lb, gmax_b);
        rr++;
    }
    return rr;
}

/* A block's rule as the box says it: post (a Post-LN block of mix
 * included) or the placement's own */
static const char *block_rule_text(norm_place p, int post)
{
    if (post)
        return p == NORM_DEEPNORM ? "x=N(ax+F(x))" : "x=N(x+F(x))";
    switch (p) {
    case NORM_SANDWICH: return "x=x+N(F(N(x)))";
    case NORM_REZERO: return "x=x+g F(x)";
    case NORM_NONE: return "x=x+F(x)";
    case NORM_RESPOST: return "x=x+N(F(x))";
    default: return "x=x+F(N(x))";
    }
}

void tui_draw_side(tui_grid *g, tui_rect r, const trainer_snapshot *snap, const tui_ui *ui)
{
    if (r.w < 12 || r.h < 3)
        return;
    const trainer_status *s = &snap->s;
    int L = s->n_layer > 0 ? s->n_layer : 1;
    int l = clampi(ui->selected, 0, L - 1);
    tui_box(g, r, ui->unicode, TUI_S_BORDER);
    char t[48];
    snprintf(t, sizeof t, " layer %d of %d ", l, L);
    tui_puts(g, r.r, r.c + 2, r.w - 4, TUI_S_TITLE, t);
    if (!s->have_metrics) {
        tui_puts(g, r.r + 1, r.c + 2, r.w - 4, TUI_S_DIM, "no step yet");
        return;
    }
    const layer_metrics *lm = &s->run[0].last.layer[l];
    double gmax = largest_grad(&s->run[0].last, L), gmax_b = largest_grad(&s->run[1].last, L);
    int rr = side_numbers(g, r, r.r + 1, s, l, gmax, gmax_b, 0);
    if (rr < r.r + r.h - 1 && !s->compare) {
        scale_grad_state sa = scale_grad_state_of(lm->grad_attn, gmax);
        scale_grad_state sf = scale_grad_state_of(lm->grad_ffn, gmax);
        scale_grad_state w = sa > sf ? sa : sf;
        tui_puts(g, rr, r.c + 2, 11, TUI_S_LABEL, "gradients");
        tui_puts(g, rr, r.c + 13, r.w - 15, grad_style(w), grad_state_name(w));
        rr++;
    }
    if (rr < r.r + r.h - 1 && !s->compare) {
        tui_puts(g, rr, r.c + 2, 11, TUI_S_LABEL, "rule");
        int post = s->run[0].cfg.norm == NORM_POST || s->run[0].cfg.norm == NORM_DEEPNORM ||
                   (s->run[0].cfg.norm == NORM_MIX && l < (s->run[0].cfg.mix_k >= 0 ? s->run[0].cfg.mix_k : L / 4));
        /* a followed stream that does not say its placement: no rule is made up */
        const char *rule = !metrics_setting_known(&s->run[0].last, "norm") ? "-"
                                                                           : block_rule_text(
                                                                                 s->run[0].cfg.norm,
                                                                                 post);
        tui_puts(g, rr, r.c + 13, r.w - 15, TUI_S_TEXT, rule);
        rr++;
    }
    rr = side_numbers(g, r, rr, s, l, gmax, gmax_b, 1);
    if (rr < r.r + r.h - 1)
        tui_puts(g, rr, r.c + 2, r.w - 4, TUI_S_DIM, l == 0 ? "next to the embeddings"
                                                     : l == L - 1 ? "next to the output"
                                                                  : "");
}

