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
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "numfmt.h"
#include "twin.h"

/* ---- glyphs (the code points: tui.h) ------------------------------------ */
/* Left-aligned eighth blocks: index k = k/8 of a cell (k = 1..7). */
static uint32_t eighth(int k) { return (uint32_t)(0x2590 - k); /* ▏=258F .. ▉=2589 */ }

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
typedef struct {
    char t[32];
} loss_text;
static loss_text fmt_loss_text(float v)
{
    loss_text r;
    if (isnan(v))
        snprintf(r.t, sizeof r.t, "nan"); /* no sign: a NaN has none to show */
    else if (fabsf(v) < 1e5f || !isfinite(v))
        snprintf(r.t, sizeof r.t, "%.4f", (double)v);
    else
        snprintf(r.t, sizeof r.t, "%.3e", (double)v);
    return r;
}

/* The items of one status row, in order; the least important are dropped
 * first when the row is narrow. Bounded: an item past the end is left out. */
#define STATUS_ITEMS 12
typedef struct {
    item it[STATUS_ITEMS];
    int n;
} items;

static void add_item(items *l, tui_style st, int prio, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void add_item(items *l, tui_style st, int prio, const char *fmt, ...)
{
    if (l->n >= STATUS_ITEMS)
        return;
    item *it = &l->it[l->n++];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(it->text, sizeof it->text, fmt, ap);
    va_end(ap);
    it->style = st;
    it->prio = prio;
}

/* A run's own state: with --compare, the run that did not diverge (the
 * trainer's word, trainer_diverged_run) is only paused by the other's
 * divergence. */
static trainer_state run_state(const trainer_status *s, int run)
{
    if (run == 1 && (s->state == TRAINER_RUNNING || s->state == TRAINER_STALLED))
        return s->last_b.stalled ? TRAINER_STALLED : TRAINER_RUNNING; /* b's own */
    if (s->state != TRAINER_DIVERGED || !s->compare)
        return s->state;
    int d = trainer_diverged_run(s);
    return run == (d < 0 ? 0 : d) ? TRAINER_DIVERGED : TRAINER_PAUSED;
}

/* A run's loss, validation loss and first non-finite (run 1 = b). */
static void status_run_values(items *l, const trainer_status *s, int run)
{
    float loss = run ? s->loss_b : s->loss;
    float val = run ? s->last_val_b : s->last_val;
    /* the loss at the step the run is at: after a rewind, the step
     * rewound to's, not the (diverged) step taken last */
    if (s->have_loss)
        add_item(l, isfinite(loss) ? TUI_S_STATUS : TUI_S_BAD, 1, "loss %s",
                 fmt_loss_text(loss).t);
    else
        add_item(l, TUI_S_STATUS, 1, "loss -");
    int have_val = run ? !isnan(s->last_val_b) : s->last_val_step > 0;
    if (have_val)
        add_item(l, TUI_S_STATUS, 2, "val %s", fmt_loss_text(val).t);
    else
        add_item(l, TUI_S_STATUS, 2, "val -");
    int warm_on = run ? s->warmup_on_b : s->warmup_on;
    float next = run ? s->lr_next_b : s->lr_next, peak = run ? s->lr_peak_b : s->lr_peak;
    const step_metrics *m = run ? &s->last_b : &s->last;
    if (warm_on && s->have_metrics && m->in_warmup && peak > 0)
        add_item(l, TUI_S_STATUS, 1, "lr %.2e (warmup %d%%)", (double)next,
                 (int)(100.0 * next / peak));
    else
        add_item(l, TUI_S_STATUS, 1, "lr %.2e", (double)next);
    if (s->diag[run].alert[0]) /* the diagnosis' mark: D shows it whole */
        add_item(l, TUI_S_WARN, 1, "! %s", s->diag[run].alert);
    if (run_state(s, run) == TRAINER_DIVERGED && s->have_metrics)
        /* where it started, not the last symptom: the first thing to look at */
        add_item(l, TUI_S_BAD, 0, "first non-finite%s: %s", run ? " (b)" : "",
                 m->fault[0] ? m->fault : "the loss");
}

/* Row 0: the step, run a's values, the speed and (--compare) the target. */
static void status_values_a(items *l, const trainer_status *s, const tui_ui *ui)
{
    add_item(l, TUI_S_TITLE, 6, "normscope");
    if (s->limit > 0)
        add_item(l, TUI_S_STATUS, 0, "step %ld/%ld", s->steps_done, s->limit);
    else
        add_item(l, TUI_S_STATUS, 0, "step %ld", s->steps_done);
    if (s->compare)
        add_item(l, TUI_S_TOGGLE, 0, "TARGET %s", twin_target_name((twin_target)ui->target));
    if (s->compare)
        add_item(l, TUI_S_LABEL, 0, "a:");
    status_run_values(l, s, 0);
    double tok = s->steps_per_s * s->cfg.batch * s->cfg.context;
    if (tok >= 1e6)
        add_item(l, TUI_S_STATUS, 4, "%.2fM tok/s", tok / 1e6);
    else if (tok >= 1e3)
        add_item(l, TUI_S_STATUS, 4, "%.1fk tok/s", tok / 1e3);
    else
        add_item(l, TUI_S_STATUS, 4, "%.0f tok/s", tok);
    if (s->threads > 1)
        add_item(l, TUI_S_STATUS, 3, "%.1f steps/s (%d threads)", s->steps_per_s, s->threads);
    else
        add_item(l, TUI_S_STATUS, 3, "%.1f steps/s", s->steps_per_s);
}

/* Draw a row of items from column c, dropping the least important
 * (highest prio, never prio 0) until the rest fit in avail columns. */
static void status_items(tui_grid *g, int row, int c0, int avail, const items *l)
{
    int keep[STATUS_ITEMS];
    for (int i = 0; i < l->n; i++)
        keep[i] = 1;
    for (;;) {
        int need = 0, worst = -1;
        for (int i = 0; i < l->n; i++)
            if (keep[i]) {
                need += (int)strlen(l->it[i].text) + 2;
                if (worst < 0 || l->it[i].prio > l->it[worst].prio)
                    worst = i;
            }
        if (need <= avail || worst < 0 || l->it[worst].prio == 0)
            break;
        keep[worst] = 0;
    }
    int c = c0;
    for (int i = 0; i < l->n; i++) {
        if (!keep[i])
            continue;
        c += tui_puts(g, row, c, c0 + avail - c, l->it[i].style, l->it[i].text);
        c += 2;
    }
}

/* The state at the row's right end (and FROZEN before it on row 0);
 * returns the columns left for the values. */
static int status_state(tui_grid *g, tui_rect r, int row, trainer_state st, int frozen)
{
    char state[32];
    snprintf(state, sizeof state, " %s ", trainer_state_name(st));
    int right = (int)strlen(state) + (frozen ? 9 : 0) + 1;
    int sc = r.c + r.w - right;
    if (frozen)
        sc += tui_puts(g, row, sc, 9, TUI_S_FROZEN, " FROZEN ") + 1;
    tui_puts(g, row, sc, (int)strlen(state), state_style(st), state);
    return r.w - right - 1;
}

/* One clickable toggle of the toggles row. */
typedef struct {
    tui_action act;
    int on;
    char text[40];
} toggle;
#define STATUS_TOGGLES 16
typedef struct {
    toggle t[STATUS_TOGGLES];
    int n;
} toggles;

static void add_toggle(toggles *l, tui_action act, int on, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void add_toggle(toggles *l, tui_action act, int on, const char *fmt, ...)
{
    if (l->n >= STATUS_TOGGLES)
        return;
    toggle *t = &l->t[l->n++];
    t->act = act;
    t->on = on;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->text, sizeof t->text, fmt, ap);
    va_end(ap);
}

/* The settings toggles, showing the run the keys act on: run b's values
 * under target b, else run a's (under `both` a toggle computes the new
 * value from run a's and sets both: twin.h). */
static void status_setting_toggles(toggles *l, const trainer_status *s, const tui_ui *ui)
{
    int b = s->compare && ui->target == TWIN_B;
    const ns_config *cf = b ? &s->cfg_b : &s->cfg;
    int warm = b ? s->warmup_on_b : s->warmup_on;
    add_toggle(l, TUI_ACT_NORM, 1, "%s", place_label(cf->norm));
    add_toggle(l, TUI_ACT_KIND_CYCLE, 1, "%s", norm_kind_name(cf->norm_kind));
    add_toggle(l, TUI_ACT_WARMUP, warm, "warmup %s", warm ? "on" : "off");
    add_toggle(l, TUI_ACT_PRECISION, 1, "%s", numfmt_name(cf->precision));
    if (cf->precision != FMT_FP32) { /* these two only matter in bf16 and fp16 */
        add_toggle(l, TUI_ACT_FP32_NORMS, cf->fp32_norms, "%s norms",
                   cf->fp32_norms ? "fp32" : "low");
        const step_metrics *m = b ? &s->last_b : &s->last;
        if (cf->loss_scale == 0)
            add_toggle(l, TUI_ACT_LOSS_SCALE, 1, "scale dyn %g", (double)m->loss_scale);
        else if (cf->loss_scale < 0)
            add_toggle(l, TUI_ACT_LOSS_SCALE, 0, "scale off");
        else
            add_toggle(l, TUI_ACT_LOSS_SCALE, 1, "scale %g", (double)cf->loss_scale);
    }
    if (cf->clip > 0)
        add_toggle(l, TUI_ACT_CLIP, 1, "clip %g", (double)cf->clip);
    else
        add_toggle(l, TUI_ACT_CLIP, 0, "clip off");
}

/* The toggles of the run and the view. */
static void status_view_toggles(toggles *l, const trainer_status *s, const tui_ui *ui)
{
    add_toggle(l, TUI_ACT_PAUSE, 1, "%s", s->state == TRAINER_RUNNING || s->state == TRAINER_STALLED ? "pause" : "resume");
    add_toggle(l, TUI_ACT_STEP, 1, "step");
    if (s->compare)
        add_toggle(l, TUI_ACT_TARGET, 1, "keys: %s",
                   ui->target == TWIN_BOTH ? "both" : ui->target == TWIN_A ? "run a" : "run b");
    add_toggle(l, TUI_ACT_VIEW, 1, "%s", ui->view == TUI_VIEW_HEATMAP ? "heatmap" : "bars");
    add_toggle(l, TUI_ACT_BARS, ui->bars_rel, "bars %s", ui->bars_rel ? "relative" : "absolute");
    add_toggle(l, TUI_ACT_LOGY, 1, "%s", ui->logy ? "log-y" : "linear");
    add_toggle(l, TUI_ACT_FREEZE, 1, "%s", ui->frozen ? "frozen" : "live");
}

/* The toggles row: "[key] value", each clickable like its key, then the
 * fixed shape at the right as room allows. */
static void status_toggles(tui_grid *g, tui_rect r, int row, const trainer_status *s, tui_ui *ui)
{
    toggles l;
    l.n = 0;
    status_setting_toggles(&l, s, ui);
    status_view_toggles(&l, s, ui);
    int c = r.c + 1;
    for (int i = 0; i < l.n; i++) {
        char name[8], k[16];
        tui_key_name(l.t[i].act, name, sizeof name);
        int kl = snprintf(k, sizeof k, "[%s]", name);
        int len = kl + 1 + (int)strlen(l.t[i].text);
        if (c + len > r.c + r.w - 1)
            break;
        tui_puts(g, row, c, kl, TUI_S_KEY, k);
        tui_puts(g, row, c + kl + 1, len - kl - 1, l.t[i].on ? TUI_S_TOGGLE : TUI_S_STATUS,
                 l.t[i].text);
        add_hit(ui, row, c, c + len, l.t[i].act, -1);
        c += len + 2;
    }
    const ns_config *cf = &s->cfg;
    char b[64];
    int len = snprintf(b, sizeof b, "L=%d d=%d H=%d T=%d B=%d", cf->n_layer, cf->dim, cf->n_head,
                       cf->context, cf->batch);
    if (c + len <= r.c + r.w - 1)
        tui_puts(g, row, r.c + r.w - 1 - len, len, TUI_S_LABEL, b);
}

/* Rows: run a's values (and the step, speed and target), with --compare
 * run b's values, then the toggles. */
void tui_draw_status(tui_grid *g, tui_rect r, const trainer_snapshot *snap, tui_ui *ui)
{
    const trainer_status *s = &snap->s;
    tui_fill(g, r.r, r.c, r.h, r.w, ' ', TUI_S_STATUS);
    items a;
    a.n = 0;
    status_values_a(&a, s, ui);
    int avail = status_state(g, r, r.r, run_state(s, 0), ui->frozen);
    status_items(g, r.r, r.c + 1, avail, &a);
    int row = r.r + 1;
    if (s->compare && r.h >= 3) {
        items b;
        b.n = 0;
        add_item(&b, TUI_S_LABEL, 0, "b:");
        status_run_values(&b, s, 1);
        avail = status_state(g, r, row, run_state(s, 1), 0);
        status_items(g, row, r.c + 1, avail, &b);
        row++;
    }
    if (row < r.r + r.h)
        status_toggles(g, r, row, s, ui);
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

/* The activation-max bar of one layer on 1 .. 1e+6 over w cells at
 * (r, c), with the marks at 256 and 65504 under it. */
static tui_style act_style(double am)
{
    return !isfinite(am) || am >= TUI_MARK_FP16 ? TUI_S_BAD
           : am >= TUI_MARK_LNVAR               ? TUI_S_WARN
                                                : TUI_S_NORMAL;
}

/* The cells of the 256 and 65504 marks inside an activation bar of w. */
static void act_marks(int w, int *m256, int *m16)
{
    int e256 = tui_log_eighths(TUI_MARK_LNVAR, TUI_AMAX_LO, TUI_AMAX_HI, w);
    int e16 = tui_log_eighths(TUI_MARK_FP16, TUI_AMAX_LO, TUI_AMAX_HI, w);
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
    int e = tui_log_eighths(am, TUI_AMAX_LO, TUI_AMAX_HI, w);
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
        scale_row(g, r, c, w, TUI_GRAD_LO, TUI_GRAD_HI);
        return;
    }
    tui_puts(g, r, c, w, TUI_S_DIM, "max/10");
    if (w >= 11)
        tui_puts(g, r, c + w - 3, 3, TUI_S_DIM, "max");
}

/* A gradient bar column's title: which sublayer, and which axis. */
static void grad_title(char *b, size_t n, const char *what, int w, int relative)
{
    if (relative)
        snprintf(b, n, w >= 16 ? "%s, own max/10..max" : "%s rel", what);
    else
        snprintf(b, n, w >= 16 ? "%s 1e-5..1e+2" : "%s abs", what);
}

/* One run's label as the panel header shows it (twin_label). */
static void run_label(const trainer_status *s, int which, char *b, size_t n)
{
    twin_run ra = {&s->cfg, s->warmup_on, s->lr_peak};
    twin_run rb = {&s->cfg_b, s->warmup_on_b, s->lr_peak_b};
    twin_label(which ? "b" : "a", which ? rb : ra, which ? ra : rb, b, n);
}

/* The two header rows of a run's panel: its settings now, and the column
 * titles (the bars' axes and the activation marks). */
static void twin_header(tui_grid *g, tui_rect r, const trainer_status *s, const tui_ui *ui,
                        int which, const tui_twin_cols *k)
{
    char b[160];
    run_label(s, which, b, sizeof b);
    if ((int)strlen(b) > r.w) { /* whole words: half of "fp32-norms" reads as a precision */
        b[r.w] = 0;
        char *sp = strrchr(b, ' ');
        if (sp)
            *sp = 0;
    }
    tui_puts(g, r.r, r.c, r.w, ui->target == (which ? TWIN_B : TWIN_A) ? TUI_S_SELECT : TUI_S_TITLE,
             b);
    int rr = r.r + 1;
    tui_puts(g, rr, r.c + k->idx, 4, TUI_S_LABEL, "lyr");
    grad_title(b, sizeof b, "attn", k->bar, ui->bars_rel);
    tui_puts(g, rr, r.c + k->attn, k->bar, TUI_S_LABEL, b);
    grad_title(b, sizeof b, "mlp", k->bar, ui->bars_rel);
    tui_puts(g, rr, r.c + k->ffn, k->bar, TUI_S_LABEL, b);
    if (k->act >= 0)
        act_scale(g, rr, r.c + k->act, k->act_w);
    if (k->act_num >= 0)
        tui_puts(g, rr, r.c + k->act_num, 8, TUI_S_LABEL, " act max");
    if (k->prec >= 0)
        tui_puts(g, rr, r.c + k->prec, 9, TUI_S_LABEL, " headroom");
    if (k->rms >= 0)
        tui_puts(g, rr, r.c + k->rms, 8, TUI_S_LABEL, "   rms");
}

/* One layer's row of a run's panel. */
static void twin_row(tui_grid *g, tui_rect r, int rr, const layer_metrics *lm,
                     const tui_twin_cols *k, double gmax, const tui_ui *ui)
{
    double lo, hi;
    tui_bar_axis(ui->bars_rel, gmax, &lo, &hi);
    tui_grad_state sa = tui_grad_state_of(lm->grad_attn, gmax);
    tui_grad_state sf = tui_grad_state_of(lm->grad_ffn, gmax);
    log_bar(g, rr, r.c + k->attn, k->bar, lm->grad_attn, lo, hi, grad_style(sa), ui);
    log_bar(g, rr, r.c + k->ffn, k->bar, lm->grad_ffn, lo, hi, grad_style(sf), ui);
    char b[32];
    if (k->act >= 0)
        act_bar(g, rr, r.c + k->act, k->act_w, lm->act_max, ui);
    if (k->act_num >= 0) {
        fmt7(b, sizeof b, lm->act_max);
        tui_puts(g, rr, r.c + k->act_num + 1, 7, act_style(lm->act_max), b);
    }
    if (k->prec >= 0)
        prec_cell(g, rr, r.c + k->prec + 1, lm);
    if (k->rms >= 0) {
        fmt7(b, sizeof b, lm->resid_rms);
        tui_puts(g, rr, r.c + k->rms + 1, 7, isfinite(lm->resid_rms) ? TUI_S_TEXT : TUI_S_BAD, b);
    }
}

/* --compare: one run's layers, the single view's columns compacted so two
 * panels fit side by side; tui_twin_columns drops what does not fit. */
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
    if (rows < 1 || r.w < 4 + 2 * TUI_TWIN_BAR_MIN + 1)
        return;
    ui->layer_rows = rows;
    if (ui->selected < 0 || ui->selected >= L)
        ui->selected = L - 1;
    ui->scroll = tui_scroll_fit(ui->scroll, rows, L - 1 - ui->selected, L);
    tui_twin_cols k = tui_twin_columns(r.w, cfg->precision != FMT_FP32);
    twin_header(g, r, s, ui, which, &k);
    int fault_l = s->have_metrics && m->nonfinite ? m->fault_layer : -1;
    double gmax = s->have_metrics ? largest_grad(m, L) : 0;
    for (int i = 0; i < rows; i++) {
        int l = L - 1 - (ui->scroll + i);
        if (l < 0)
            break;
        int rr = r.r + 2 + i, sel = l == ui->selected;
        const layer_metrics *lm = &m->layer[l];
        tui_grad_state sa = tui_grad_state_of(lm->grad_attn, gmax);
        tui_grad_state sf = tui_grad_state_of(lm->grad_ffn, gmax);
        char b[16];
        snprintf(b, sizeof b, "%c%2d%c", sel ? '>' : ' ', l, l == fault_l ? '!' : ' ');
        tui_puts(g, rr, r.c, 4,
                 l == fault_l ? TUI_S_BAD : sel ? TUI_S_SELECT : grad_style(sa > sf ? sa : sf), b);
        add_hit(ui, rr, r.c, r.c + r.w, TUI_ACT_NONE, l);
        if (s->have_metrics)
            twin_row(g, r, rr, lm, &k, gmax, ui);
        else if (i == 0)
            tui_puts(g, rr, r.c + 4, r.w - 4, TUI_S_DIM, "waiting...");
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
    tui_puts(g, r.r, r.c + k->nums, 16, TUI_S_TITLE, "   attn     mlp");
    tui_puts(g, r.r, r.c + k->act, k->act_w + 9, TUI_S_TITLE, "activation max");
    tui_puts(g, r.r, r.c + k->rms, 10, TUI_S_TITLE, " resid rms");
    if (k->prec >= 0)
        tui_puts(g, r.r, r.c + k->prec, 9, TUI_S_TITLE, " headroom");
    if (k->extra >= 0) {
        tui_puts(g, r.r, r.c + k->extra, 9, TUI_S_TITLE, " upd/w");
        tui_puts(g, r.r, r.c + k->extra + 9, 9, TUI_S_TITLE, " norm|g|");
    }
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
    tui_grad_state sa = tui_grad_state_of(lm->grad_attn, gmax);
    tui_grad_state sf = tui_grad_state_of(lm->grad_ffn, gmax);
    char b[32];
    log_bar(g, rr, r.c + k->attn, k->bar, lm->grad_attn, lo, hi, grad_style(sa), ui);
    log_bar(g, rr, r.c + k->ffn, k->bar, lm->grad_ffn, lo, hi, grad_style(sf), ui);
    fmt_e(b, sizeof b, lm->grad_attn);
    tui_puts(g, rr, r.c + k->nums, 7, grad_style(sa), b);
    fmt_e(b, sizeof b, lm->grad_ffn);
    tui_puts(g, rr, r.c + k->nums + 8, 7, grad_style(sf), b);
    /* activation max, with the two fp16 marks */
    act_bar(g, rr, r.c + k->act, k->act_w, lm->act_max, ui);
    fmt7(b, sizeof b, lm->act_max);
    tui_puts(g, rr, r.c + k->act_num, 7, act_style(lm->act_max), b);
    fmt7(b, sizeof b, lm->resid_rms);
    tui_puts(g, rr, r.c + k->rms + 2, 7, isfinite(lm->resid_rms) ? TUI_S_TEXT : TUI_S_BAD, b);
    if (k->prec >= 0)
        prec_cell(g, rr, r.c + k->prec + 1, lm);
    if (k->extra >= 0) {
        fmt_e(b, sizeof b, lm->update_ratio);
        tui_puts(g, rr, r.c + k->extra + 1, 7, TUI_S_TEXT, b);
        fmt_e(b, sizeof b, lm->grad_ln);
        tui_puts(g, rr, r.c + k->extra + 10, 7, TUI_S_TEXT, b);
    }
}

void tui_draw_layers(tui_grid *g, tui_rect r, const trainer_snapshot *snap, tui_ui *ui)
{
    const trainer_status *s = &snap->s;
    const step_metrics *m = &s->last;
    int L = s->n_layer > 0 ? s->n_layer : 1;
    if (L > NS_MAX_LAYERS)
        L = NS_MAX_LAYERS;
    tui_layer_cols k = tui_layer_columns_prec(r.w, s->cfg.precision != FMT_FP32);
    int rows = r.h - 2;
    if (rows < 1)
        return;
    ui->layer_rows = rows;
    int fault_l = s->have_metrics && m->nonfinite ? m->fault_layer : -1;
    if (ui->selected < 0 || ui->selected >= L)
        ui->selected = L - 1;
    ui->scroll = tui_scroll_fit(ui->scroll, rows, L - 1 - ui->selected, L);
    layers_header(g, r, &k, L, rows, ui);
    /* the largest layer gradient: "vanishing" is relative to it */
    double gmax = s->have_metrics ? largest_grad(m, L) : 0;
    for (int i = 0; i < rows; i++) {
        int l = L - 1 - (ui->scroll + i);
        if (l < 0)
            break;
        int rr = r.r + 2 + i, sel = l == ui->selected;
        const layer_metrics *lm = &m->layer[l];
        tui_grad_state sa = tui_grad_state_of(lm->grad_attn, gmax);
        tui_grad_state sf = tui_grad_state_of(lm->grad_ffn, gmax);
        char b[16];
        snprintf(b, sizeof b, "%c%2d%c", sel ? '>' : ' ', l, l == fault_l ? '!' : ' ');
        tui_puts(g, rr, r.c + k.idx, 4,
                 l == fault_l ? TUI_S_BAD : sel ? TUI_S_SELECT : grad_style(sa > sf ? sa : sf), b);
        add_hit(ui, rr, r.c, r.c + r.w, TUI_ACT_NONE, l);
        if (s->have_metrics)
            layer_row(g, r, rr, lm, &k, gmax, ui);
        else if (i == 0)
            tui_puts(g, rr, r.c + k.attn, r.w - k.attn, TUI_S_DIM, "waiting for the first step...");
    }
}

/* ---- the selected layer's numbers -------------------------------------------- */

/* The selected layer's rows: name, value, format and style. */
typedef struct {
    const char *name, *brief; /* brief: 7 columns, for two runs in a narrow box */
    double v;
    int fmt; /* 0 fixed, 1 e-notation, 2 a count */
    tui_style st;
} side_row;
enum { SIDE_ROWS = 10 };

static void side_rows(const layer_metrics *lm, double gmax, side_row out[SIDE_ROWS])
{
    const side_row rows[SIDE_ROWS] = {
        {"grad attn", "|g|attn", lm->grad_attn, 1,
         grad_style(tui_grad_state_of(lm->grad_attn, gmax))},
        {"grad mlp", "|g|mlp", lm->grad_ffn, 1, grad_style(tui_grad_state_of(lm->grad_ffn, gmax))},
        {"grad norm", "|g|norm", lm->grad_ln, 1, TUI_S_TEXT},
        {"act max", "act max", lm->act_max, 0, act_style(lm->act_max) == TUI_S_NORMAL ? TUI_S_TEXT
                                                                          : act_style(lm->act_max)},
        {"resid max", "res max", lm->resid_max, 0, TUI_S_TEXT},
        {"resid rms", "res rms", lm->resid_rms, 0, TUI_S_TEXT},
        {"upd/weight", "upd/w", lm->update_ratio, 1, TUI_S_TEXT},
        {"headroom", "headrm", lm->headroom, 0, lm->headroom < 1 ? TUI_S_WARN : TUI_S_TEXT},
        {"overflows", "ovf", lm->overflow, 2, lm->overflow > 0 ? TUI_S_BAD : TUI_S_TEXT},
        {"underflows", "unf", lm->underflow, 2, TUI_S_TEXT},
    };
    memcpy(out, rows, sizeof rows);
}

static void side_value(tui_grid *g, int r, int c, int w, const side_row *row)
{
    char b[32];
    if (row->fmt == 1)
        fmt_e(b, sizeof b, row->v);
    else if (row->fmt == 2)
        snprintf(b, sizeof b, "%7.0f", row->v);
    else
        fmt7(b, sizeof b, row->v);
    tui_puts(g, r, c, w, row->st, b);
}

/* The rows of numbers; with --compare a column per run (a, then b).
 * Returns the next free row. */
static int side_numbers(tui_grid *g, tui_rect r, const trainer_status *s, int l, double gmax,
                        double gmax_b)
{
    side_row a[SIDE_ROWS], b[SIDE_ROWS];
    side_rows(&s->last.layer[l], gmax, a);
    side_rows(&s->last_b.layer[l], gmax_b, b);
    /* two runs: the names take what two 7-column values and a gap leave */
    int rr = r.r + 1, two = s->compare, namew = two ? clampi(r.w - 4 - 15, 7, 11) : 11;
    if (two && rr < r.r + r.h - 1) {
        tui_puts(g, rr, r.c + 2 + namew + 6, 1, TUI_S_TITLE, "a");
        tui_puts(g, rr, r.c + 2 + namew + 14, 1, TUI_S_TWIN, "b");
        rr++;
    }
    for (int i = 0; i < SIDE_ROWS && rr < r.r + r.h - 1; i++, rr++) {
        tui_puts(g, rr, r.c + 2, namew, TUI_S_LABEL, namew < 10 ? a[i].brief : a[i].name);
        side_value(g, rr, r.c + 2 + namew, 7, &a[i]);
        if (two)
            side_value(g, rr, r.c + 2 + namew + 8, 7, &b[i]);
    }
    return rr;
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
    const layer_metrics *lm = &s->last.layer[l];
    double gmax = largest_grad(&s->last, L), gmax_b = largest_grad(&s->last_b, L);
    int rr = side_numbers(g, r, s, l, gmax, gmax_b);
    if (rr < r.r + r.h - 1 && !s->compare) {
        tui_grad_state sa = tui_grad_state_of(lm->grad_attn, gmax);
        tui_grad_state sf = tui_grad_state_of(lm->grad_ffn, gmax);
        tui_grad_state w = sa > sf ? sa : sf;
        tui_puts(g, rr, r.c + 2, 11, TUI_S_LABEL, "gradients");
        tui_puts(g, rr, r.c + 13, r.w - 15, grad_style(w), grad_state_name(w));
        rr++;
    }
    if (rr < r.r + r.h - 1 && !s->compare) {
        tui_puts(g, rr, r.c + 2, 11, TUI_S_LABEL, "rule");
        int post = s->cfg.norm == NORM_POST || s->cfg.norm == NORM_DEEPNORM ||
                   (s->cfg.norm == NORM_MIX && l < (s->cfg.mix_k >= 0 ? s->cfg.mix_k : L / 4));
        /* a followed stream that does not say its placement: no rule is made up */
        const char *rule = !metrics_known(&s->last, METRICS_COL_NORM) ? "-"
                           : post                                     ? "x=N(x+F(x))"
                                                                      : "x=x+F(N(x))";
        tui_puts(g, rr, r.c + 13, r.w - 15, TUI_S_TEXT, rule);
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
    long newest = tui_log_newest(ui, s->ev_total, lines), newer = tui_log_newer(ui, s->ev_total, lines);
    long first = newest - lines + 1;
    if (first < 0)
        first = 0;
    if (first < s->ev_total - TRAINER_EVENTS)
        first = s->ev_total - TRAINER_EVENTS;
    if (newer > 0) { /* scrolled back: new events wait below, and say so */
        char b[64];
        snprintf(b, sizeof b, " -- %ld newer: ] or } -- ", newer);
        int len = (int)strlen(b);
        if (r.w > len + 12)
            tui_puts(g, r.r, r.c + r.w - len - 2, len, TUI_S_EV_NOTE, b);
    }
    int rr = r.r + 1;
    for (long i = first; i <= newest; i++, rr++) {
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
    "Bars: |gradient| on one log scale, 1e-5 .. 1e+2 (v: each run's own",
    "  max/10 .. max); vanishing < 1e-3 of the largest, exploding >= 10.",
    "Activation max: marks at 256 (the LN variance overflows fp16) and",
    "  65504 (fp16's largest value). Layer 0 is next to the embeddings.",
    "Chart: loss; y from the window's lowest to its 98th percentile;",
    "  a marker where a setting changed. Heatmap (m): |gradient| by decade.",
    "--compare: Tab sets the TARGET; under both a toggle takes a's new",
    "  value and sets both runs to it. Chart: a line, b '+', both '*'.",
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
    tui_box(g, r, ui->unicode, TUI_S_BORDER);
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
    tui_layout L = tui_layout_compute_cmp(g->rows, g->cols, s->s.n_layer, s->s.compare);
    if (s->s.compare && !cmp) /* the heatmap takes the panels' whole width */
        L.layers.w = g->cols;
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
    tui_log_frame(ui, L.events, s->s.ev_total);
    tui_draw_events(g, L.events, s, ui);
    tui_draw_footer(g, L.footer, ui);
    tui_draw_lesson(g, L.lesson, s, ui);
    tui_draw_fold(g, L.fold, s, ui);
    if (ui->help) {
        ui->n_hits = 0; /* the overlay covers what was clickable */
        tui_draw_help(g, L.help, ui);
    }
    if (ui->diag && !ui->help) {
        ui->n_hits = 0;
        tui_draw_diag(g, L.help, s, ui);
    }
}
