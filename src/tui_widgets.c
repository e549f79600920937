/* tui_widgets.c - the dashboard's widgets, drawn into the cell grid from a
 * trainer snapshot: status line, layer bars, the selected layer's box,
 * sample line, event log, footer, help overlay, and the whole frame.
 * The chart and the heatmap are in tui_chart.c.
 *
 * Widgets only draw: they read the snapshot and the UI state, and record
 * clickable places in ui->hits. No curses, no trainer calls.
 */
#include "tui.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "numfmt.h"

/* ---- glyphs (the code points: tui.h) ------------------------------------ */
/* Left-aligned eighth blocks: index k = k/8 of a cell (k = 1..7). */
static uint32_t eighth(int k) { return (uint32_t)(0x2590 - k); /* ▏=258F .. ▉=2589 */ }

static void box(tui_grid *g, tui_rect r, int unicode, tui_style s)
{
    if (r.h < 2 || r.w < 2)
        return;
    uint32_t h = unicode ? G_HLINE : '-', v = unicode ? G_VLINE : '|';
    for (int c = 1; c < r.w - 1; c++) {
        tui_put(g, r.r, r.c + c, h, s);
        tui_put(g, r.r + r.h - 1, r.c + c, h, s);
    }
    for (int i = 1; i < r.h - 1; i++) {
        tui_put(g, r.r + i, r.c, v, s);
        tui_put(g, r.r + i, r.c + r.w - 1, v, s);
    }
    tui_put(g, r.r, r.c, unicode ? G_TL : '+', s);
    tui_put(g, r.r, r.c + r.w - 1, unicode ? G_TR : '+', s);
    tui_put(g, r.r + r.h - 1, r.c, unicode ? G_BL : '+', s);
    tui_put(g, r.r + r.h - 1, r.c + r.w - 1, unicode ? G_BR : '+', s);
}

static void add_hit(tui_ui *ui, int r, int c0, int c1, tui_action a, int layer)
{
    if (ui->n_hits < TUI_MAX_HITS && c1 > c0)
        ui->hits[ui->n_hits++] = (tui_hit){r, c0, c1, a, layer};
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
        snprintf(b, n, "%7.1e", v);
}

static void fmt_e(char *b, size_t n, double v)
{
    if (isnan(v))
        snprintf(b, n, "%7s", "nan");
    else if (isinf(v))
        snprintf(b, n, "%7s", v > 0 ? "inf" : "-inf");
    else
        snprintf(b, n, "%7.1e", v);
}

static tui_style grad_style(tui_grad_state st)
{
    switch (st) {
    case TUI_G_VANISH: return TUI_S_VANISH;
    case TUI_G_EXPLODE: return TUI_S_EXPLODE;
    case TUI_G_NONFINITE: return TUI_S_BAD;
    default: return TUI_S_NORMAL;
    }
}

static const char *grad_state_name(tui_grad_state st)
{
    static const char *const n[] = {"normal", "vanishing", "exploding", "not finite"};
    return n[st];
}

/* A bar of v on the log scale lo..hi over w cells at (r, c). Colors name
 * the state; without color the glyph does (htop's monochrome scheme), and
 * ASCII has its own distinct glyphs. */
static void log_bar(tui_grid *g, int r, int c, int w, double v, int lo, int hi, tui_style s,
                    const tui_ui *ui)
{
    if (w <= 0)
        return;
    if (!isfinite(v)) {
        tui_puts(g, r, c, w, TUI_S_BAD, isnan(v) ? "NaN" : "Inf");
        return;
    }
    int e = tui_log_eighths(v, lo, hi, w);
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

/* ---- status line ------------------------------------------------------------ */

typedef struct {
    char text[96];
    tui_style style;
    int prio; /* lower = dropped last */
} item;

static const char *place_label(norm_place p)
{
    switch (p) {
    case NORM_POST: return "Post-LN";
    case NORM_PRE: return "Pre-LN";
    case NORM_SANDWICH: return "Sandwich-LN";
    case NORM_DEEPNORM: return "DeepNorm";
    case NORM_REZERO: return "ReZero";
    case NORM_NONE: return "no norm";
    case NORM_MIX: return "Mix-LN";
    default: return "?";
    }
}

static tui_style state_style(trainer_state st)
{
    switch (st) {
    case TRAINER_RUNNING: return TUI_S_RUN;
    case TRAINER_PAUSED: return TUI_S_PAUSE;
    case TRAINER_DIVERGED: return TUI_S_DIVERGED;
    case TRAINER_STALLED: return TUI_S_WARN;
    default: return TUI_S_DONE;
    }
}

/* A loss as the headless summary prints it, unless it blew up: 1e30 with
 * "%.4f" is 35 digits that push the rest of the status line off. */
static void fmt_loss(char *b, size_t n, const char *what, float v)
{
    if (fabsf(v) < 1e5f || !isfinite(v))
        snprintf(b, n, "%s %.4f", what, (double)v);
    else
        snprintf(b, n, "%s %.3e", what, (double)v);
}

void tui_draw_status(tui_grid *g, tui_rect r, const trainer_snapshot *snap, tui_ui *ui)
{
    const trainer_status *s = &snap->s;
    tui_fill(g, r.r, r.c, r.h, r.w, ' ', TUI_S_STATUS);

    /* row 0: values; the least important go first when it is narrow */
    item it[12];
    int n = 0;
    char b[64];
    snprintf(it[n].text, sizeof it[n].text, "normscope"), it[n].style = TUI_S_TITLE, it[n++].prio = 6;
    if (s->limit > 0)
        snprintf(it[n].text, sizeof it[n].text, "step %ld/%ld", s->steps_done, s->limit);
    else
        snprintf(it[n].text, sizeof it[n].text, "step %ld", s->steps_done);
    it[n].style = TUI_S_STATUS, it[n++].prio = 0;
    /* the loss at the step the run is at: after a rewind, the step
     * rewound to's, not the (diverged) step taken last */
    if (s->have_loss)
        fmt_loss(it[n].text, sizeof it[n].text, "loss", s->loss);
    else
        snprintf(it[n].text, sizeof it[n].text, "loss -");
    it[n].style = s->have_loss && !isfinite(s->loss) ? TUI_S_BAD : TUI_S_STATUS;
    it[n++].prio = 1;
    if (s->last_val_step > 0)
        fmt_loss(it[n].text, sizeof it[n].text, "val", s->last_val);
    else
        snprintf(it[n].text, sizeof it[n].text, "val -");
    it[n].style = TUI_S_STATUS, it[n++].prio = 2;
    int warm = s->warmup_on && s->have_metrics && s->last.in_warmup && s->lr_peak > 0;
    if (warm)
        snprintf(it[n].text, sizeof it[n].text, "lr %.2e (warmup %d%%)", (double)s->lr_next,
                 (int)(100.0 * s->lr_next / s->lr_peak));
    else
        snprintf(it[n].text, sizeof it[n].text, "lr %.2e", (double)s->lr_next);
    it[n].style = TUI_S_STATUS, it[n++].prio = 1;
    double tok = s->steps_per_s * s->cfg.batch * s->cfg.context;
    if (tok >= 1e6)
        snprintf(b, sizeof b, "%.2fM tok/s", tok / 1e6);
    else if (tok >= 1e3)
        snprintf(b, sizeof b, "%.1fk tok/s", tok / 1e3);
    else
        snprintf(b, sizeof b, "%.0f tok/s", tok);
    snprintf(it[n].text, sizeof it[n].text, "%s", b), it[n].style = TUI_S_STATUS, it[n++].prio = 4;
    if (s->threads > 1)
        snprintf(it[n].text, sizeof it[n].text, "%.1f steps/s (%d threads)", s->steps_per_s,
                 s->threads);
    else
        snprintf(it[n].text, sizeof it[n].text, "%.1f steps/s", s->steps_per_s);
    it[n].style = TUI_S_STATUS, it[n++].prio = 3;
    if (s->state == TRAINER_DIVERGED && s->have_metrics) {
        /* where it started, not the last symptom: the first thing to look at */
        /* with --compare, the run that diverged: a first, else b */
        int in_b = trainer_diverged_run(s) == 1;
        const char *fault = in_b ? s->last_b.fault : s->last.fault;
        snprintf(it[n].text, sizeof it[n].text, "first non-finite%s: %s", in_b ? " (b)" : "",
                 fault[0] ? fault : "the loss");
        it[n].style = TUI_S_BAD, it[n++].prio = 0;
    }

    if (s->alert[0]) { /* the diagnosis' mark: its lines are in the event log */
        snprintf(it[n].text, sizeof it[n].text, "! %s", s->alert);
        it[n].style = TUI_S_WARN, it[n++].prio = 1;
    }

    char state[32];
    snprintf(state, sizeof state, " %s ", trainer_state_name(s->state));
    int right = (int)strlen(state) + (ui->frozen ? 9 : 0) + 1;
    int avail = r.w - right - 1;
    int keep[12];
    for (int i = 0; i < n; i++)
        keep[i] = 1;
    for (;;) {
        int need = 0, worst = -1;
        for (int i = 0; i < n; i++)
            if (keep[i]) {
                need += (int)strlen(it[i].text) + 2;
                if (worst < 0 || it[i].prio > it[worst].prio)
                    worst = i;
            }
        if (need <= avail || worst < 0 || it[worst].prio == 0)
            break;
        keep[worst] = 0;
    }
    int c = r.c + 1;
    for (int i = 0; i < n; i++) {
        if (!keep[i])
            continue;
        c += tui_puts(g, r.r, c, r.c + avail - c, it[i].style, it[i].text);
        c += 2;
    }
    int sc = r.c + r.w - right;
    if (ui->frozen)
        sc += tui_puts(g, r.r, sc, 9, TUI_S_FROZEN, " FROZEN ") + 1;
    tui_puts(g, r.r, sc, (int)strlen(state), state_style(s->state), state);

    if (r.h < 2)
        return;
    /* row 1: the toggles, each clickable like its key */
    int rr = r.r + 1;
    c = r.c + 1;
    struct {
        char text[48];
        tui_action act;
        int on;
    } tg[13];
    int m = 0;
    const ns_config *cf = &s->cfg;
    snprintf(tg[m].text, sizeof tg[m].text, "[p] %s", place_label(cf->norm));
    tg[m].act = TUI_ACT_NORM, tg[m++].on = 1;
    snprintf(tg[m].text, sizeof tg[m].text, "[k] %s", norm_kind_name(cf->norm_kind));
    tg[m].act = TUI_ACT_KIND_CYCLE, tg[m++].on = 1;
    snprintf(tg[m].text, sizeof tg[m].text, "[w] warmup %s", s->warmup_on ? "on" : "off");
    tg[m].act = TUI_ACT_WARMUP, tg[m++].on = s->warmup_on;
    snprintf(tg[m].text, sizeof tg[m].text, "[f] %s", numfmt_name(cf->precision));
    tg[m].act = TUI_ACT_PRECISION, tg[m++].on = 1;
    if (cf->precision != FMT_FP32) { /* these two only matter in bf16 and fp16 */
        snprintf(tg[m].text, sizeof tg[m].text, "[i] %s norms", cf->fp32_norms ? "fp32" : "low");
        tg[m].act = TUI_ACT_FP32_NORMS, tg[m++].on = cf->fp32_norms;
        if (cf->loss_scale == 0)
            snprintf(tg[m].text, sizeof tg[m].text, "[l] scale dyn %g",
                     (double)s->last.loss_scale);
        else if (cf->loss_scale < 0)
            snprintf(tg[m].text, sizeof tg[m].text, "[l] scale off");
        else
            snprintf(tg[m].text, sizeof tg[m].text, "[l] scale %g", (double)cf->loss_scale);
        tg[m].act = TUI_ACT_LOSS_SCALE, tg[m++].on = cf->loss_scale >= 0;
    }
    if (cf->clip > 0)
        snprintf(tg[m].text, sizeof tg[m].text, "[c] clip %g", (double)cf->clip);
    else
        snprintf(tg[m].text, sizeof tg[m].text, "[c] clip off");
    tg[m].act = TUI_ACT_CLIP, tg[m++].on = cf->clip > 0;
    snprintf(tg[m].text, sizeof tg[m].text, "[space] %s",
             s->state == TRAINER_RUNNING || s->state == TRAINER_STALLED ? "pause" : "resume");
    tg[m].act = TUI_ACT_PAUSE, tg[m++].on = 1;
    snprintf(tg[m].text, sizeof tg[m].text, "[n] step"), tg[m].act = TUI_ACT_STEP, tg[m++].on = 1;
    snprintf(tg[m].text, sizeof tg[m].text, "[Tab] %s",
             ui->view == TUI_VIEW_HEATMAP ? "heatmap" : "bars");
    tg[m].act = TUI_ACT_VIEW, tg[m++].on = 1;
    snprintf(tg[m].text, sizeof tg[m].text, "[y] %s", ui->logy ? "log-y" : "linear");
    tg[m].act = TUI_ACT_LOGY, tg[m++].on = 1;
    snprintf(tg[m].text, sizeof tg[m].text, "[z] %s", ui->frozen ? "frozen" : "live");
    tg[m].act = TUI_ACT_FREEZE, tg[m++].on = 1;
    for (int i = 0; i < m; i++) {
        int len = (int)strlen(tg[i].text);
        if (c + len > r.c + r.w - 1)
            break;
        tui_puts(g, rr, c, 3, TUI_S_KEY, tg[i].text); /* the [k] part */
        tui_puts(g, rr, c + 3, len - 3, tg[i].on ? TUI_S_TOGGLE : TUI_S_STATUS, tg[i].text + 3);
        /* "[space]" is longer than 3: redraw its key part */
        const char *close = strchr(tg[i].text, ']');
        if (close)
            tui_puts(g, rr, c, (int)(close - tg[i].text + 1), TUI_S_KEY, tg[i].text);
        add_hit(ui, rr, c, c + len, tg[i].act, -1);
        c += len + 2;
    }
    /* the fixed settings, as room allows */
    snprintf(b, sizeof b, "L=%d d=%d H=%d T=%d B=%d", cf->n_layer, cf->dim, cf->n_head,
             cf->context, cf->batch);
    int len = (int)strlen(b);
    if (c + len <= r.c + r.w - 1)
        tui_puts(g, rr, r.c + r.w - 1 - len, len, TUI_S_LABEL, b);
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
        snprintf(b, sizeof b, "%8s", isnan(lm->headroom) ? "-" : "inf");
        st = isnan(lm->headroom) ? TUI_S_BAD : TUI_S_DIM;
    } else {
        snprintf(b, sizeof b, "%8.1f", (double)lm->headroom);
        st = lm->headroom < 1 ? TUI_S_BAD : lm->headroom < 3 ? TUI_S_WARN : TUI_S_TEXT;
    }
    tui_puts(g, r, c, 8, st, b);
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

/* --compare: one run's layers, compact so two fit side by side:
 *   idx 4 | attn 7 | mlp 7 | act max 7 | headroom 8 (not fp32) | |grad| bar */
void tui_draw_layers_twin(tui_grid *g, tui_rect r, const trainer_snapshot *snap, tui_ui *ui,
                          int which)
{
    const trainer_status *s = &snap->s;
    const step_metrics *m = which ? &s->last_b : &s->last;
    const ns_config *cfg = which ? &s->cfg_b : &s->cfg;
    int L = s->n_layer > 0 ? s->n_layer : 1;
    if (L > NS_MAX_LAYERS)
        L = NS_MAX_LAYERS;
    int rows = r.h - 2;
    if (rows < 1 || r.w < 30)
        return;
    ui->layer_rows = rows;
    if (ui->selected < 0 || ui->selected >= L)
        ui->selected = L - 1;
    ui->scroll = tui_scroll_fit(ui->scroll, rows, L - 1 - ui->selected, L);
    int lowp = cfg->precision != FMT_FP32 && r.w >= 30 + 9 + 4;
    int bar_c = lowp ? 38 : 29, bar_w = r.w - bar_c;
    const char *label = which ? s->label_b : s->label_a;
    tui_puts(g, r.r, r.c, r.w, TUI_S_TITLE, label[0] ? label : (which ? "b" : "a"));
    tui_puts(g, r.r + 1, r.c, r.w, TUI_S_LABEL,
             lowp ? "lyr    attn     mlp act max headroom |grad|"
                  : "lyr    attn     mlp act max |grad|");
    int fault_l = s->have_metrics && m->nonfinite ? m->fault_layer : -1;
    double gmax = s->have_metrics ? largest_grad(m, L) : 0;
    for (int i = 0; i < rows; i++) {
        int l = L - 1 - (ui->scroll + i);
        if (l < 0)
            break;
        int rr = r.r + 2 + i;
        const layer_metrics *lm = &m->layer[l];
        char b[32];
        int sel = l == ui->selected;
        tui_grad_state sa = tui_grad_state_of(lm->grad_attn, gmax);
        tui_grad_state sf = tui_grad_state_of(lm->grad_ffn, gmax);
        tui_grad_state worst = sa > sf ? sa : sf;
        snprintf(b, sizeof b, "%c%2d%c", sel ? '>' : ' ', l, l == fault_l ? '!' : ' ');
        tui_puts(g, rr, r.c, 4, l == fault_l ? TUI_S_BAD : sel ? TUI_S_SELECT : grad_style(worst),
                 b);
        add_hit(ui, rr, r.c, r.c + r.w, TUI_ACT_NONE, l);
        if (!s->have_metrics) {
            if (i == 0)
                tui_puts(g, rr, r.c + 4, r.w - 4, TUI_S_DIM, "waiting...");
            continue;
        }
        fmt_e(b, sizeof b, lm->grad_attn);
        tui_puts(g, rr, r.c + 5, 7, grad_style(sa), b);
        fmt_e(b, sizeof b, lm->grad_ffn);
        tui_puts(g, rr, r.c + 13, 7, grad_style(sf), b);
        double am = lm->act_max;
        tui_style as = !isfinite(am) || am >= TUI_MARK_FP16 ? TUI_S_BAD
                       : am >= TUI_MARK_LNVAR               ? TUI_S_WARN
                                                            : TUI_S_NORMAL;
        fmt7(b, sizeof b, am);
        tui_puts(g, rr, r.c + 21, 7, as, b);
        if (lowp)
            prec_cell(g, rr, r.c + 29, lm);
        if (bar_w >= 4)
            log_bar(g, rr, r.c + bar_c, bar_w, layer_gnorm(lm), TUI_GRAD_LO, TUI_GRAD_HI,
                    grad_style(worst), ui);
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
        double a = layer_gnorm(&s->last.layer[l]), b = layer_gnorm(&s->last_b.layer[l]);
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

void tui_draw_layers(tui_grid *g, tui_rect r, const trainer_snapshot *snap, tui_ui *ui)
{
    const trainer_status *s = &snap->s;
    const step_metrics *m = &s->last;
    int L = s->n_layer > 0 ? s->n_layer : 1;
    if (L > NS_MAX_LAYERS)
        L = NS_MAX_LAYERS;
    int lowp = s->cfg.precision != FMT_FP32;
    tui_layer_cols k = tui_layer_columns_prec(r.w, lowp);
    int rows = r.h - 2;
    if (rows < 1)
        return;
    ui->layer_rows = rows;
    int fault_l = s->have_metrics && m->nonfinite ? m->fault_layer : -1;
    if (ui->selected < 0 || ui->selected >= L)
        ui->selected = L - 1;
    ui->scroll = tui_scroll_fit(ui->scroll, rows, L - 1 - ui->selected, L);

    /* header 1: titles over the columns */
    int top_shown = L - 1 - ui->scroll, bottom_shown = top_shown - rows + 1;
    if (bottom_shown < 0)
        bottom_shown = 0;
    tui_puts(g, r.r, r.c + k.idx, 4, TUI_S_TITLE, "lyr");
    tui_puts(g, r.r, r.c + k.attn, k.bar, TUI_S_TITLE,
             k.bar >= 17 ? "attention |grad|" : "attn |grad|");
    tui_puts(g, r.r, r.c + k.ffn, k.bar, TUI_S_TITLE, "MLP |grad|");
    tui_puts(g, r.r, r.c + k.nums, 16, TUI_S_TITLE, "   attn     mlp");
    tui_puts(g, r.r, r.c + k.act, k.act_w + 9, TUI_S_TITLE, "activation max");
    tui_puts(g, r.r, r.c + k.rms, 10, TUI_S_TITLE, " resid rms");
    if (k.prec >= 0)
        tui_puts(g, r.r, r.c + k.prec, 9, TUI_S_TITLE, " headroom");
    if (k.extra >= 0) {
        tui_puts(g, r.r, r.c + k.extra, 9, TUI_S_TITLE, " upd/w");
        tui_puts(g, r.r, r.c + k.extra + 9, 9, TUI_S_TITLE, " norm|g|");
    }
    if (L > rows) { /* scrolling: say which layers are shown */
        char b[48];
        snprintf(b, sizeof b, " %d-%d of %d ", top_shown, bottom_shown, L);
        int len = (int)strlen(b);
        tui_puts(g, r.r, r.c + r.w - len, len, TUI_S_DIM, b);
    }
    /* header 2: the scales */
    scale_row(g, r.r + 1, r.c + k.attn, k.bar, TUI_GRAD_LO, TUI_GRAD_HI);
    scale_row(g, r.r + 1, r.c + k.ffn, k.bar, TUI_GRAD_LO, TUI_GRAD_HI);
    int e256 = tui_log_eighths(TUI_MARK_LNVAR, TUI_AMAX_LO, TUI_AMAX_HI, k.act_w);
    int e16 = tui_log_eighths(TUI_MARK_FP16, TUI_AMAX_LO, TUI_AMAX_HI, k.act_w);
    int m256 = (e256 + 7) / 8 - 1, m16 = (e16 + 7) / 8 - 1;
    tui_puts(g, r.r + 1, r.c + k.act, 1, TUI_S_DIM, "1");
    if (m256 > 1)
        tui_puts(g, r.r + 1, r.c + k.act + m256, 3, TUI_S_WARN, "256");
    if (m16 > m256 + 3)
        tui_puts(g, r.r + 1, r.c + k.act + m16, 5, TUI_S_BAD, "65504");

    /* the largest layer gradient: "vanishing" is relative to it */
    double gmax = s->have_metrics ? largest_grad(m, L) : 0;

    for (int i = 0; i < rows; i++) {
        int l = L - 1 - (ui->scroll + i);
        if (l < 0)
            break;
        int rr = r.r + 2 + i;
        const layer_metrics *lm = &m->layer[l];
        char b[32];
        int sel = l == ui->selected;
        tui_grad_state sa = tui_grad_state_of(lm->grad_attn, gmax);
        tui_grad_state sf = tui_grad_state_of(lm->grad_ffn, gmax);
        tui_grad_state worst = sa > sf ? sa : sf;
        snprintf(b, sizeof b, "%c%2d%c", sel ? '>' : ' ', l, l == fault_l ? '!' : ' ');
        tui_puts(g, rr, r.c + k.idx, 4,
                 l == fault_l ? TUI_S_BAD : sel ? TUI_S_SELECT : grad_style(worst), b);
        add_hit(ui, rr, r.c, r.c + r.w, TUI_ACT_NONE, l);
        if (!s->have_metrics) {
            if (i == 0)
                tui_puts(g, rr, r.c + k.attn, r.w - k.attn, TUI_S_DIM,
                         "waiting for the first step...");
            continue;
        }
        log_bar(g, rr, r.c + k.attn, k.bar, lm->grad_attn, TUI_GRAD_LO, TUI_GRAD_HI,
                grad_style(sa), ui);
        log_bar(g, rr, r.c + k.ffn, k.bar, lm->grad_ffn, TUI_GRAD_LO, TUI_GRAD_HI,
                grad_style(sf), ui);
        fmt_e(b, sizeof b, lm->grad_attn);
        tui_puts(g, rr, r.c + k.nums, 7, grad_style(sa), b);
        fmt_e(b, sizeof b, lm->grad_ffn);
        tui_puts(g, rr, r.c + k.nums + 8, 7, grad_style(sf), b);

        /* activation max, with the two fp16 marks */
        double am = lm->act_max;
        tui_style as = !isfinite(am) || am >= TUI_MARK_FP16 ? TUI_S_BAD
                       : am >= TUI_MARK_LNVAR               ? TUI_S_WARN
                                                            : TUI_S_NORMAL;
        uint32_t mark = ui->unicode ? G_DOTV : '|';
        tui_put(g, rr, r.c + k.act + m256, mark, TUI_S_WARN);
        tui_put(g, rr, r.c + k.act + m16, mark, TUI_S_BAD);
        if (isfinite(am)) {
            int e = tui_log_eighths(am, TUI_AMAX_LO, TUI_AMAX_HI, k.act_w);
            int full = e / 8, part = e % 8;
            uint32_t fg = ui->unicode ? (ui->color || as == TUI_S_NORMAL ? G_FULL : G_DARK)
                                      : (as == TUI_S_NORMAL ? '#' : (as == TUI_S_WARN ? '%' : '!'));
            for (int j = 0; j < full; j++)
                tui_put(g, rr, r.c + k.act + j, fg, as);
            if (part)
                tui_put(g, rr, r.c + k.act + full,
                        ui->unicode ? (fg == G_FULL ? eighth(part) : fg) : (fg == '#' ? ':' : fg),
                        as);
        } else {
            tui_puts(g, rr, r.c + k.act, k.act_w, TUI_S_BAD, isnan(am) ? "NaN" : "Inf");
        }
        fmt7(b, sizeof b, am);
        tui_puts(g, rr, r.c + k.act_num, 7, as, b);
        fmt7(b, sizeof b, lm->resid_rms);
        tui_puts(g, rr, r.c + k.rms + 2, 7, isfinite(lm->resid_rms) ? TUI_S_TEXT : TUI_S_BAD, b);
        if (k.prec >= 0)
            prec_cell(g, rr, r.c + k.prec + 1, lm);
        if (k.extra >= 0) {
            fmt_e(b, sizeof b, lm->update_ratio);
            tui_puts(g, rr, r.c + k.extra + 1, 7, TUI_S_TEXT, b);
            fmt_e(b, sizeof b, lm->grad_ln);
            tui_puts(g, rr, r.c + k.extra + 10, 7, TUI_S_TEXT, b);
        }
    }
}

/* ---- the selected layer's numbers -------------------------------------------- */

void tui_draw_side(tui_grid *g, tui_rect r, const trainer_snapshot *snap, const tui_ui *ui)
{
    if (r.w < 12 || r.h < 3)
        return;
    const trainer_status *s = &snap->s;
    int L = s->n_layer > 0 ? s->n_layer : 1;
    int l = clampi(ui->selected, 0, L - 1);
    box(g, r, ui->unicode, TUI_S_BORDER);
    char t[48];
    snprintf(t, sizeof t, " layer %d of %d ", l, L);
    tui_puts(g, r.r, r.c + 2, r.w - 4, TUI_S_TITLE, t);
    const layer_metrics *lm = &s->last.layer[l];
    double gmax = 0;
    for (int i = 0; i < L && s->have_metrics; i++) {
        double a = s->last.layer[i].grad_attn, f = s->last.layer[i].grad_ffn;
        gmax = isfinite(a) && a > gmax ? a : gmax;
        gmax = isfinite(f) && f > gmax ? f : gmax;
    }
    struct {
        const char *name;
        double v;
        int fmt; /* 0 fixed, 1 e-notation, 2 a count */
        tui_style st;
    } rows[] = {
        {"grad attn", lm->grad_attn, 1, grad_style(tui_grad_state_of(lm->grad_attn, gmax))},
        {"grad mlp", lm->grad_ffn, 1, grad_style(tui_grad_state_of(lm->grad_ffn, gmax))},
        {"grad norm", lm->grad_ln, 1, TUI_S_TEXT},
        {"act max", lm->act_max, 0,
         !isfinite(lm->act_max) || lm->act_max >= TUI_MARK_FP16 ? TUI_S_BAD
         : lm->act_max >= TUI_MARK_LNVAR                        ? TUI_S_WARN
                                                                : TUI_S_TEXT},
        {"resid max", lm->resid_max, 0, TUI_S_TEXT},
        {"resid rms", lm->resid_rms, 0, TUI_S_TEXT},
        {"upd/weight", lm->update_ratio, 1, TUI_S_TEXT},
        {"headroom", lm->headroom, 0, lm->headroom < 1 ? TUI_S_WARN : TUI_S_TEXT},
        {"overflows", lm->overflow, 2, lm->overflow > 0 ? TUI_S_BAD : TUI_S_TEXT},
        {"underflows", lm->underflow, 2, TUI_S_TEXT},
    };
    int n = (int)(sizeof rows / sizeof rows[0]);
    int inner = r.h - 2, rr = r.r + 1;
    if (!s->have_metrics) {
        tui_puts(g, rr, r.c + 2, r.w - 4, TUI_S_DIM, "no step yet");
        return;
    }
    for (int i = 0; i < n && i < inner; i++, rr++) {
        char b[32];
        if (rows[i].fmt == 1)
            fmt_e(b, sizeof b, rows[i].v);
        else if (rows[i].fmt == 2)
            snprintf(b, sizeof b, "%7.0f", rows[i].v);
        else
            fmt7(b, sizeof b, rows[i].v);
        tui_puts(g, rr, r.c + 2, 11, TUI_S_LABEL, rows[i].name);
        tui_puts(g, rr, r.c + 13, r.w - 15, rows[i].st, b);
    }
    if (rr < r.r + r.h - 1) {
        tui_grad_state sa = tui_grad_state_of(lm->grad_attn, gmax);
        tui_grad_state sf = tui_grad_state_of(lm->grad_ffn, gmax);
        tui_grad_state w = sa > sf ? sa : sf;
        tui_puts(g, rr, r.c + 2, 11, TUI_S_LABEL, "gradients");
        tui_puts(g, rr, r.c + 13, r.w - 15, grad_style(w), grad_state_name(w));
        rr++;
    }
    if (rr < r.r + r.h - 1) {
        tui_puts(g, rr, r.c + 2, 11, TUI_S_LABEL, "rule");
        int post = s->cfg.norm == NORM_POST || s->cfg.norm == NORM_DEEPNORM ||
                   (s->cfg.norm == NORM_MIX && l < (s->cfg.mix_k >= 0 ? s->cfg.mix_k : L / 4));
        tui_puts(g, rr, r.c + 13, r.w - 15, TUI_S_TEXT, post ? "x=N(x+F(x))" : "x=x+F(N(x))");
        rr++;
    }
    if (rr < r.r + r.h - 1)
        tui_puts(g, rr, r.c + 2, r.w - 4, TUI_S_DIM, l == 0 ? "next to the embeddings"
                                                     : l == L - 1 ? "next to the output"
                                                                  : "");
}

/* ---- sample, events, footer ------------------------------------------------------ */

void tui_draw_sample(tui_grid *g, tui_rect r, const trainer_snapshot *snap)
{
    const trainer_status *s = &snap->s;
    int c = r.c + 1;
    if (s->sample_len <= 0) {
        tui_puts(g, r.r, c, r.w - 2, TUI_S_DIM,
                 "sample: a continuation of a fixed prompt appears here every few seconds");
        return;
    }
    char b[48];
    snprintf(b, sizeof b, "sample @%ld: ", s->sample_step);
    c += tui_puts(g, r.r, c, r.w - 2, TUI_S_LABEL, b);
    char esc[TRAINER_SAMPLE * 4 + 64];
    const char *prompt = s->prompt ? s->prompt : "";
    tui_escape((const uint8_t *)prompt, (int)strlen(prompt), esc, sizeof esc);
    c += tui_puts(g, r.r, c, r.c + r.w - 1 - c, TUI_S_DIM, esc);
    tui_escape(s->sample, s->sample_len, esc, sizeof esc);
    tui_puts(g, r.r, c, r.c + r.w - 1 - c, TUI_S_TEXT, esc);
}

static tui_style event_style(ns_event_kind k)
{
    switch (k) {
    case NS_EV_SETTING: case NS_EV_NOTE: return TUI_S_EV_SETTING;
    case NS_EV_VAL: return TUI_S_EV_VAL;
    case NS_EV_DIVERGED: return TUI_S_BAD;
    case NS_EV_WARNING: case NS_EV_SKIPPED: case NS_EV_REFUSED: return TUI_S_EV_NOTE;
    default: return TUI_S_TEXT;
    }
}

void tui_draw_events(tui_grid *g, tui_rect r, const trainer_snapshot *snap, const tui_ui *ui)
{
    const trainer_status *s = &snap->s;
    if (r.h < 1)
        return;
    uint32_t h = ui->unicode ? G_HLINE : '-';
    tui_fill(g, r.r, r.c, 1, r.w, h, TUI_S_BORDER);
    tui_puts(g, r.r, r.c + 2, r.w - 4, TUI_S_TITLE, " events ");
    int lines = r.h - 1;
    long first = s->ev_total - lines;
    if (first < 0)
        first = 0;
    if (first < s->ev_total - TRAINER_EVENTS)
        first = s->ev_total - TRAINER_EVENTS;
    int rr = r.r + 1;
    for (long i = first; i < s->ev_total; i++, rr++) {
        const trainer_event *e = &snap->ev[i % TRAINER_EVENTS];
        char b[24];
        snprintf(b, sizeof b, "%8ld  ", e->step);
        int c = r.c + tui_puts(g, rr, r.c, r.w, TUI_S_DIM, b);
        tui_puts(g, rr, c, r.c + r.w - c, event_style(e->kind), e->text);
    }
}

void tui_draw_footer(tui_grid *g, tui_rect r, tui_ui *ui)
{
    int c = r.c;
    for (int i = 0; i < tui_n_keys; i++) {
        const tui_key *k = &tui_keys[i];
        if (!k->foot)
            continue;
        int kl = (int)strlen(k->foot), hl = (int)strlen(k->hint);
        if (c + kl + hl + 1 > r.c + r.w)
            break;
        int c0 = c;
        c += tui_puts(g, r.r, c, kl, TUI_S_KEY, k->foot);
        c += tui_puts(g, r.r, c, hl, TUI_S_STATUS, k->hint);
        add_hit(ui, r.r, c0, c, k->act, -1);
        c += 1;
    }
    int len = (int)strlen(ui->note);
    if (len && c + len < r.c + r.w)
        tui_puts(g, r.r, r.c + r.w - len, len, TUI_S_EV_NOTE, ui->note);
}

/* ---- help overlay and the too-small message ------------------------------------- */

static const char *const help_legend[] = {
    "Bars: |gradient| on one log scale, 1e-5 .. 1e+2; colors (or glyphs):",
    "  vanishing < 1e-3 of the largest layer, normal, exploding >= 10.",
    "Activation max: marks at 256 (the LN variance overflows fp16) and",
    "  65504 (fp16's largest value). Layer 0 is next to the embeddings.",
    "Chart: train and validation loss; y from the window's lowest value",
    "  to its 98th percentile (a spike rides the top edge); a labelled",
    "  marker where a setting changed. Click a toggle or a layer row.",
    "Heatmap (Tab): each layer's |gradient| per step, shaded by decade.",
};

/* --follow: the keys that change the lab's model, named in one line */
static void help_off_line(tui_grid *g, tui_rect r, int rr)
{
    char names[64] = "";
    size_t n = 0;
    for (int i = 0; i < tui_n_keys; i++)
        if (tui_keys[i].name && tui_action_changes_model(tui_keys[i].act) && n + 8 < sizeof names)
            n += (size_t)snprintf(names + n, sizeof names - n, "%s%s", n ? " " : "", tui_keys[i].name);
    int c = r.c + 2 + tui_puts(g, rr, r.c + 2, r.w - 4, TUI_S_DIM, names);
    tui_puts(g, rr, c, r.c + r.w - 2 - c, TUI_S_DIM, ": not available while following");
}

void tui_draw_help(tui_grid *g, tui_rect r, const tui_ui *ui)
{
    if (r.w < 20 || r.h < 4)
        return;
    tui_fill(g, r.r, r.c, r.h, r.w, ' ', TUI_S_TEXT);
    box(g, r, ui->unicode, TUI_S_BORDER);
    tui_puts(g, r.r, r.c + 2, r.w - 4, TUI_S_TITLE, " normscope keys ");
    /* the closing hint sits on the bottom border, as the title on the top */
    int rr = r.r + 1, last = r.r + r.h - 1;
    int off_said = 0;
    for (int i = 0; i < tui_n_keys && rr < last; i++) {
        if (!tui_keys[i].name || (!ui->follow && tui_action_follow_only(tui_keys[i].act)))
            continue;
        if (ui->follow && tui_action_changes_model(tui_keys[i].act)) {
            /* --follow: the lab's model is not there to change; one line */
            if (!off_said++)
                help_off_line(g, r, rr++);
            continue;
        }
        tui_puts(g, rr, r.c + 2, 10, TUI_S_KEY, tui_keys[i].name);
        tui_puts(g, rr, r.c + 13, r.w - 15, TUI_S_TEXT, tui_keys[i].help);
        rr++;
    }
    /* the legend only when all of it fits: half a legend misleads */
    int n_leg = (int)(sizeof help_legend / sizeof help_legend[0]);
    if (rr + 1 + n_leg <= last) {
        rr++;
        for (int i = 0; i < n_leg; i++, rr++)
            tui_puts(g, rr, r.c + 2, r.w - 4, TUI_S_DIM, help_legend[i]);
    }
    tui_puts(g, last, r.c + 2, r.w - 4, TUI_S_LABEL, " any key closes this help; q quits ");
}

void tui_draw_too_small(tui_grid *g, int rows, int cols)
{
    char a[64], b[64];
    snprintf(a, sizeof a, "normscope needs at least %dx%d", TUI_MIN_COLS, TUI_MIN_ROWS);
    snprintf(b, sizeof b, "this terminal is %dx%d", cols, rows);
    const char *lines[] = {a, b, "enlarge it, or press q to quit"};
    if (cols < (int)strlen(lines[2])) {
        /* a tiny terminal (a pane of a split, a resize in passing): the
         * same three facts in 10 columns, rather than cut mid-word */
        snprintf(a, sizeof a, "need %dx%d", TUI_MIN_COLS, TUI_MIN_ROWS);
        snprintf(b, sizeof b, "have %dx%d", cols, rows);
        lines[2] = "q quits";
    }
    int top = rows / 2 - 1;
    if (top < 0)
        top = 0;
    for (int i = 0; i < 3; i++) {
        int len = (int)strlen(lines[i]);
        int c = (cols - len) / 2;
        tui_puts(g, top + i, c < 0 ? 0 : c, cols, i == 1 ? TUI_S_WARN : TUI_S_TEXT, lines[i]);
    }
}

void tui_draw(tui_grid *g, const trainer_snapshot *s, tui_ui *ui)
{
    tui_grid_clear(g);
    ui->n_hits = 0;
    int cmp = s->s.compare && ui->view == TUI_VIEW_LAYERS;
    tui_layout L = tui_layout_compute_cmp(g->rows, g->cols, s->s.n_layer, cmp);
    if (L.too_small) {
        tui_draw_too_small(g, g->rows, g->cols);
        return;
    }
    tui_draw_status(g, L.status, s, ui);
    if (ui->view == TUI_VIEW_HEATMAP)
        tui_draw_heatmap(g, L.layers, s, ui);
    else if (cmp) {
        tui_draw_layers_twin(g, L.layers, s, ui, 0);
        tui_draw_ratio(g, L.ratio, s, ui);
        tui_draw_layers_twin(g, L.layers_b, s, ui, 1);
    } else
        tui_draw_layers(g, L.layers, s, ui);
    tui_draw_chart(g, L.chart, s, ui);
    tui_draw_side(g, L.side, s, ui);
    tui_draw_sample(g, L.sample, s);
    tui_draw_events(g, L.events, s, ui);
    tui_draw_footer(g, L.footer, ui);
    tui_draw_lesson(g, L.lesson, s, ui);
    tui_draw_fold(g, L.fold, s, ui);
    if (ui->help) {
        ui->n_hits = 0; /* the overlay covers what was clickable */
        tui_draw_help(g, L.help, ui);
    }
}
