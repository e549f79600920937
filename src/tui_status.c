/* tui_status.c - the status line, drawn into the cell grid from a
 * snapshot: the run's state, step, loss, rates and memory, and the row of
 * toggles ("[p] Pre-LN"), each clickable like its key.
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

/* ---- status line ------------------------------------------------------------ */

typedef struct {
    char text[96];
    char brief[24]; /* a shorter form for a narrow row ("" = none) */
    tui_style style;
    int prio; /* lower = dropped last; 0: never */
    int join; /* a note on the item before: one space from it, not two */
} item;

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

/* A narrow row's loss: 2 decimals (a validation's; the loss keeps 4). */
static loss_text brief_loss_text(float v)
{
    loss_text r;
    if (isfinite(v) && fabsf(v) < 1e3f)
        snprintf(r.t, sizeof r.t, "%.2f", (double)v);
    else
        r = fmt_loss_text(v);
    return r;
}

/* A narrow row's rate: 2 digits and a bare exponent ("2e-3", "1.2e-4"). */
static loss_text brief_rate_text(float v)
{
    loss_text r;
    snprintf(r.t, sizeof r.t, "%.2g", (double)v);
    char *e = strchr(r.t, 'e');
    if (!e)
        return r;
    char *d = e + 1, *p = e + 1;
    if (*p == '-')
        *d++ = *p++;
    else if (*p == '+')
        p++;
    while (*p == '0' && p[1])
        p++; /* e-05 -> e-5, e+05 -> e5 */
    memmove(d, p, strlen(p) + 1);
    return r;
}

/* The items of one status row, in order; the least important are dropped
 * first when the row is narrow. Bounded: an item past the end is left out. */
#define STATUS_ITEMS 16
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
    it->join = 0;
    it->brief[0] = 0;
}

/* The last item's shorter form, taken before a narrow row drops an item
 * of priority STATUS_BRIEF or less. */
static void brief_last(items *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void brief_last(items *l, const char *fmt, ...)
{
    if (l->n <= 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(l->it[l->n - 1].brief, sizeof l->it[0].brief, fmt, ap);
    va_end(ap);
}

/* The last item's note, dropped before it (prio: higher than its own). */
static void join_last(items *l)
{
    if (l->n > 0)
        l->it[l->n - 1].join = 1;
}

/* A run's own state: with --compare, the run that did not diverge (the
 * trainer's word, trainer_diverged_run) is only paused by the other's
 * divergence. */
static trainer_state run_state(const trainer_status *s, int run)
{
    if (run == 1 && (s->state == TRAINER_RUNNING || s->state == TRAINER_STALLED))
        return s->run[1].last.stalled ? TRAINER_STALLED : TRAINER_RUNNING; /* b's own */
    if (s->state != TRAINER_DIVERGED || !s->compare)
        return s->state;
    int d = trainer_diverged_run(s);
    return run == (d < 0 ? 0 : d) ? TRAINER_DIVERGED : TRAINER_PAUSED;
}

/* The run's own divergence: where it blew up or first went non-finite. */
static void status_fault(items *l, const trainer_status *s, int run)
{
    const step_metrics *m = &s->run[run].last;
    if (run_state(s, run) == TRAINER_DIVERGED && s->have_metrics && m->exploded && !m->nonfinite)
        add_item(l, TUI_S_BAD, 0, "blew up%s, finite", run ? " (b)" : "");
    else if (run_state(s, run) == TRAINER_DIVERGED && s->have_metrics)
        /* where it started, not the last symptom: the first thing to look at */
        add_item(l, TUI_S_BAD, 0, "first non-finite%s: %s", run ? " (b)" : "",
                 m->fault[0] ? m->fault : "the loss");
}

/* Past the first 100 steps out_change is measured at the validations
 * only: the latest kept, with its step. */
void tui_status_out_change(const trainer_snapshot *snap, int run, long upto, int unicode, char *buf,
                           size_t len)
{
    const trainer_status *s = &snap->s;
    buf[0] = 0;
    for (long i = s->hist_total - 1; i >= trainer_hist_first(s); i--) {
        const trainer_point *pt = &snap->hist[i % TRAINER_HIST];
        if (!pt->run[run].oc_known || pt->step > upto)
            continue;
        int n = snprintf(buf, len, "%s ", unicode ? "\u0394out" : "dout");
        if (isnan(pt->run[run].out_change))
            n += snprintf(buf + n, len - (size_t)n, "nan");
        else
            n += snprintf(buf + n, len - (size_t)n, "%.2g", (double)pt->run[run].out_change);
        if (pt->step < upto)
            snprintf(buf + n, len - (size_t)n, "@%ld", pt->step);
        return;
    }
}

typedef struct {
    char t[2][40];
} oc_texts;
static oc_texts status_out_change(const trainer_snapshot *snap, int unicode)
{
    oc_texts r;
    for (int run = 0; run < 2; run++)
        tui_status_out_change(snap, run, snap->s.steps_done, unicode, r.t[run], sizeof r.t[run]);
    return r;
}

/* Columns of a UTF-8 text: its bytes but continuation bytes. */
static int text_cols(const char *t)
{
    int n = 0;
    for (const unsigned char *p = (const unsigned char *)t; *p; p++)
        n += (*p & 0xC0) != 0x80;
    return n;
}

/* A run's loss, validation loss, LR, out_change (oc: its text, "" for
 * none) and (fault) first non-finite (run 1 = b). */
static void status_run_values(items *l, const trainer_status *s, int run, int fault,
                              const char *oc)
{
    float loss = s->run[run].loss;
    float val = s->run[run].last_val;
    /* the loss at the step the run is at: after a rewind, the step
     * rewound to's, not the (diverged) step taken last */
    /* the most important number: never dropped (a row too narrow for the
     * rest keeps it); --compare's follows its run's label, one space on */
    if (s->have_loss)
        add_item(l, isfinite(loss) ? TUI_S_STATUS : TUI_S_BAD, 0, "loss %s",
                 fmt_loss_text(loss).t);
    else
        add_item(l, TUI_S_STATUS, 0, "loss -");
    if (s->compare)
        join_last(l);
    int have_val = run ? !isnan(s->run[1].last_val) : s->last_val_step > 0;
    /* val ranks next: a lesson compares both runs' (lr goes first); a
     * narrow row shows it to 2 decimals, without its step */
    /* a validation of an earlier step says which (every 100 steps by
     * default; a followed run's may be its first, long ago) */
    if (have_val && s->last_val_step > 0 && s->last_val_step < s->steps_done)
        add_item(l, TUI_S_STATUS, 1, "val %s@%ld", fmt_loss_text(val).t, s->last_val_step);
    else if (have_val)
        add_item(l, TUI_S_STATUS, 1, "val %s", fmt_loss_text(val).t);
    else
        add_item(l, TUI_S_STATUS, 1, "val -");
    if (have_val)
        brief_last(l, "val %s", brief_loss_text(val).t);
    int warm_on = s->run[run].warmup_on;
    float next = s->run[run].lr_next, peak = s->run[run].lr_peak;
    const step_metrics *m = &s->run[run].last;
    add_item(l, TUI_S_STATUS, 2, "lr %.2e", (double)next);
    brief_last(l, "lr %s", brief_rate_text(next).t);
    if (warm_on && s->have_metrics && m->in_warmup && peak > 0) {
        /* a narrow row keeps the rate and gives up how far warmup is */
        add_item(l, TUI_S_STATUS, 3, "(warmup %d%%)", (int)(100.0 * next / peak));
        join_last(l);
    }
    /* the global gradient norm before clipping (what c clips): the
     * layers' bars are its parts, so the student sees the sum too; one
     * run's row at 80 columns keeps it over the LR (a long run's step and
     * validation leave room for one); --compare's rows, where a's holds
     * the step and the target too, keep it for both runs over the val
     * and the LR (each shortened first), as over warmup's progress */
    if (s->have_metrics && !(m->unknown & (1u << METRICS_COL_GNORM)))
        add_item(l, isfinite(m->grad_norm) ? TUI_S_STATUS : TUI_S_BAD, s->compare ? 1 : 2,
                 "|grad| %.3g",
                 (double)m->grad_norm);
    /* how far the last measured update moved the output: measured at the
     * step shown (the first 100 steps, where it tells Post-LN from
     * DeepNorm), of the LR's rank and after it, so a row too narrow for
     * both (a's under --compare at 80 columns) keeps it; an older one
     * ("@step", a validation's in a long run) goes before the rest */
    if (oc[0])
        add_item(l, TUI_S_STATUS, strchr(oc, '@') ? 4 : 2, "%s", oc);
    /* the diagnosis' mark (D shows it whole); a run that diverged says
     * where (its fault, below), which tells the same finding more
     * exactly: there the mark ranks with the LR (a short row drops the LR first)
     * and never moves the fault to a row of its own */
    if (s->diag[run].alert[0])
        add_item(l, TUI_S_WARN, run_state(s, run) == TRAINER_DIVERGED ? 2 : 1, "! %s",
                 s->diag[run].alert);
    if (fault)
        status_fault(l, s, run);
}

/* Row 0: the step, run a's values, the speed and (--compare) the target. */
static void status_values_a(items *l, const trainer_status *s, const tui_ui *ui, int fault,
                            const char *oc)
{
    add_item(l, TUI_S_TITLE, 6, "normscope");
    if (s->limit > 0) {
        add_item(l, TUI_S_STATUS, 0, "step %ld/%ld", s->steps_done, s->limit);
        brief_last(l, "step %ld", s->steps_done); /* a narrow row: without the limit */
    } else {
        add_item(l, TUI_S_STATUS, 0, "step %ld", s->steps_done);
    }
    if (s->compare) { /* narrow: its key and the target, as the toggle's [Tab] */
        add_item(l, TUI_S_TOGGLE, 0, "TARGET %s", twin_target_name((twin_target)ui->target));
        brief_last(l, "Tab:%s", twin_target_name((twin_target)ui->target));
        add_item(l, TUI_S_LABEL, 0, "a:");
    }
    status_run_values(l, s, 0, fault, oc);
    double tok = s->steps_per_s * s->run[0].cfg.batch * s->run[0].cfg.context;
    if (tok >= 1e6)
        add_item(l, TUI_S_STATUS, 5, "%.2fM tok/s", tok / 1e6);
    else if (tok >= 1e3)
        add_item(l, TUI_S_STATUS, 5, "%.1fk tok/s", tok / 1e3);
    else
        add_item(l, TUI_S_STATUS, 5, "%.0f tok/s", tok);
    /* the speed goes before warmup's progress (3) */
    if (s->threads > 1)
        add_item(l, TUI_S_STATUS, 4, "%.1f steps/s (%d threads)", s->steps_per_s, s->threads);
    else
        add_item(l, TUI_S_STATUS, 4, "%.1f steps/s", s->steps_per_s);
}

/* Which items a row of avail columns shows (keep) and which in their
 * shorter form (brief): the least important go first (the highest prio,
 * the first of equals; never prio 0, nor a note without its item); before
 * any of priority STATUS_BRIEF or less goes, the shorter forms are taken,
 * the one that saves the most first, and those a later drop made room
 * for are given back. Returns 1 when the rest fit. */
#define STATUS_BRIEF 2
static int row_width(const items *l, const int *keep, const int *brief)
{
    int need = 0, first = 1;
    for (int i = 0; i < l->n; i++)
        if (keep[i]) {
            need += text_cols(brief[i] ? l->it[i].brief : l->it[i].text);
            need += first ? 0 : l->it[i].join ? 1 : 2;
            first = 0;
        }
    return need + 1; /* a space before what follows (the state) */
}

static int status_fit(const items *l, int avail, int *keep, int *brief)
{
    for (int i = 0; i < l->n; i++)
        keep[i] = 1, brief[i] = 0;
    while (row_width(l, keep, brief) > avail) {
        int pick = -1, rank = 0, save = 0, shorten = 0;
        for (int i = 0; i < l->n; i++) {
            if (!keep[i])
                continue;
            if (l->it[i].prio > 0 && 2 * l->it[i].prio > rank) /* drops rank 2 prio */
                pick = i, rank = 2 * l->it[i].prio, shorten = 0;
            int cut = text_cols(l->it[i].text) - text_cols(l->it[i].brief);
            if (!brief[i] && l->it[i].brief[0] && cut > 0 &&
                (2 * STATUS_BRIEF + 1 > rank || (shorten && cut > save)))
                pick = i, rank = 2 * STATUS_BRIEF + 1, save = cut, shorten = 1;
        }
        if (pick < 0)
            return 0;
        if (shorten) {
            brief[pick] = 1;
            continue;
        }
        keep[pick] = 0;
        for (int i = pick + 1; i < l->n && l->it[i].join; i++)
            keep[i] = 0; /* a note goes with its item */
    }
    /* a drop after the shortening may have left room for a whole form */
    for (int i = 0; i < l->n; i++)
        if (keep[i] && brief[i]) {
            brief[i] = 0;
            brief[i] = row_width(l, keep, brief) > avail;
        }
    return 1;
}

/* Draw a row of items from column c0, as status_fit keeps them. */
static void status_items(tui_grid *g, int row, int c0, int avail, const items *l)
{
    int keep[STATUS_ITEMS], brief[STATUS_ITEMS];
    status_fit(l, avail, keep, brief);
    int c = c0;
    for (int i = 0; i < l->n; i++) {
        if (!keep[i])
            continue;
        if (l->it[i].join && c > c0)
            c--; /* one space after the item it notes */
        c += tui_puts(g, row, c, c0 + avail - c, l->it[i].style,
                      brief[i] ? l->it[i].brief : l->it[i].text);
        c += 2;
    }
}

/* Do the items of priority up to prio fit in avail columns (in their
 * shorter forms)? */
static int items_fit(const items *l, int avail, int prio)
{
    int keep[STATUS_ITEMS], brief[STATUS_ITEMS];
    for (int i = 0; i < l->n; i++)
        keep[i] = l->it[i].prio <= prio, brief[i] = l->it[i].brief[0] != 0;
    return row_width(l, keep, brief) <= avail;
}

/* The state at the row's right end (and FROZEN before it on row 0);
 * returns the columns left for the values (g NULL: draws nothing). */
static int status_state(tui_grid *g, tui_rect r, int row, trainer_state st, int frozen)
{
    char state[32];
    snprintf(state, sizeof state, " %s ", snapshot_state_name(st));
    int right = (int)strlen(state) + (frozen ? 9 : 0) + 1;
    int sc = r.c + r.w - right;
    if (!g) /* only the room it leaves */
        return r.w - right - 1;
    if (frozen)
        sc += tui_puts(g, row, sc, 9, TUI_S_FROZEN, " FROZEN ") + 1;
    tui_puts(g, row, sc, (int)strlen(state), state_style(st), state);
    return r.w - right - 1;
}

/* One clickable toggle of the toggles row. */
typedef struct {
    tui_action act;
    int on;
    int idle; /* a setting off at its default: the first to leave a short row */
    char text[40];
} toggle;
#define STATUS_TOGGLES 32
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
    t->idle = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->text, sizeof t->text, fmt, ap);
    va_end(ap);
}

/* The key of a row that toggles or cycles it ("toggle", "next"): the
 * status line shows such a row; a key that sets a factor (lr x2) does
 * not make a toggle. NULL when the row has none. */
static const setting_key *toggle_key(const ns_setting *r)
{
    for (int j = 0; r->cmd && j < SET_KEYS; j++)
        if (r->keys[j].key && (!strcmp(r->keys[j].how, "toggle") || !strcmp(r->keys[j].how, "next")))
            return &r->keys[j];
    return NULL;
}

/* A row's value in a run: its field of the config, but for the warmup
 * ramp, which lives in the schedule (twin_run's warmup_on). */
static double row_value(const ns_setting *r, const trainer_status *s, int run)
{
    return r->hook == SETH_WARMUP ? s->run[run].warmup_on : settings_get(r, &s->run[run].cfg);
}

/* What the last step adds to a toggle's words: the dynamic loss scale
 * in force, when the step ran in this precision with the dynamic scaler
 * (until then, after a switch from fp32, it is not known). */
static void toggle_note(const ns_setting *r, const trainer_status *s, int run, char *buf,
                        size_t len)
{
    const ns_config *cf = &s->run[run].cfg;
    const step_metrics *m = &s->run[run].last;
    buf[0] = 0;
    if (r->hook == SETH_LOSS_SCALE && cf->loss_scale == 0 && s->have_metrics &&
        metrics_precision(m) == cf->precision && m->loss_scale_dynamic)
        snprintf(buf, len, " %g", (double)m->loss_scale);
}

/* The settings toggles, one for each row a key toggles or cycles, in the
 * key table's (the help's) order, where the row applies (fp32-norms and
 * loss-scale in bf16 and fp16 only). They show the run the keys act on:
 * run b's values under target b, else run a's (under `both` a toggle
 * computes the new value from run a's and sets both: twin.h). */
static void status_setting_toggles(toggles *l, const trainer_status *s, const tui_ui *ui)
{
    int b = s->compare && ui->target == TWIN_B, n;
    const tui_key *keys = tui_key_table(&n);
    for (int i = 0; i < n; i++) {
        const ns_setting *r = tui_bind_row(keys[i].act);
        const setting_key *k = r ? toggle_key(r) : NULL;
        /* one toggle a row (p, not P); holds reads the settings in force
         * only for rows with keys */
        if (!k || tui_bind_action(r->cmd, k->how) != keys[i].act ||
            (r->applies.holds && !r->applies.holds(&s->run[b].cfg, NULL)))
            continue;
        double x = row_value(r, s, b);
        char words[40], note[24];
        settings_status(r, x, words, sizeof words);
        toggle_note(r, s, b, note, sizeof note);
        add_toggle(l, keys[i].act, !settings_is_off(r, x), "%s%s", words, note);
        l->t[l->n - 1].idle = settings_is_off(r, x) && x == r->def && !(r->flags & SETF_NOFLAG);
    }
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
    add_toggle(l, TUI_ACT_MECH, ui->mech, "%s", ui->mech ? "mechanisms" : "gradients");
    add_toggle(l, TUI_ACT_BARS, ui->bars_rel, "bars %s", ui->bars_rel ? "relative" : "absolute");
    add_toggle(l, TUI_ACT_LOGY, 1, "%s", ui->logy ? "log-y" : "linear");
    add_toggle(l, TUI_ACT_FREEZE, 1, "%s", ui->frozen ? "frozen" : "live");
}

/* A toggle's width on the row, "[key] value" and the gap after it. */
static int toggle_width(const toggle *t)
{
    char name[8];
    tui_key_name(t->act, name, sizeof name);
    return (int)strlen(name) + 3 + (int)strlen(t->text) + 2;
}

/* Which toggles the row of width w shows (shown[i]): the settings' and
 * the first view toggle (pause / resume); when they do not fit, the
 * settings off at their default (clip off, no qk-norm: nothing to see)
 * go first, from the end of the table, so a new row's toggle does not
 * push pause off the row; what still does not fit is cut at the end as
 * it is drawn; then the other view toggles as room allows. */
static void status_toggles_fit(const toggles *l, int n_set, int w, int *shown)
{
    int used = 0;
    for (int i = 0; i < l->n; i++) {
        shown[i] = i <= n_set;
        used += i <= n_set ? toggle_width(&l->t[i]) : 0;
    }
    for (int i = n_set - 1; i >= 0 && used > w; i--)
        if (l->t[i].idle) {
            shown[i] = 0;
            used -= toggle_width(&l->t[i]);
        }
    for (int i = n_set + 1; i < l->n; i++)
        if (used + toggle_width(&l->t[i]) <= w) {
            shown[i] = 1;
            used += toggle_width(&l->t[i]);
        }
}

/* The toggles row: "[key] value", each clickable like its key, then the
 * fixed shape at the right as room allows. */
static void status_toggles(tui_grid *g, tui_rect r, int row, const trainer_status *s, tui_ui *ui)
{
    toggles l;
    l.n = 0;
    status_setting_toggles(&l, s, ui);
    int n_set = l.n;
    status_view_toggles(&l, s, ui);
    int c = r.c + 1, shown[STATUS_TOGGLES];
    status_toggles_fit(&l, n_set, r.w - 2, shown);
    for (int i = 0; i < l.n; i++) {
        char name[8], k[16];
        tui_key_name(l.t[i].act, name, sizeof name);
        int kl = snprintf(k, sizeof k, "[%s]", name);
        int len = kl + 1 + (int)strlen(l.t[i].text);
        if (!shown[i])
            continue;
        if (c + len > r.c + r.w - 1)
            break;
        tui_puts(g, row, c, kl, TUI_S_KEY, k);
        tui_puts(g, row, c + kl + 1, len - kl - 1, l.t[i].on ? TUI_S_TOGGLE : TUI_S_STATUS,
                 l.t[i].text);
        tui_add_hit(ui, row, c, c + len, l.t[i].act, -1);
        c += len + 2;
    }
    const ns_config *cf = &s->run[0].cfg;
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
    oc_texts oc = status_out_change(snap, ui->unicode);
    tui_fill(g, r.r, r.c, r.h, r.w, ' ', TUI_S_STATUS);
    /* --compare: a run that diverged says where on the toggles' row, whole,
     * when its values row cannot hold it beside the loss and val (at 80
     * columns it cut the op's name and pushed the loss off); the keys work */
    int avail = status_state(g, r, r.r, run_state(s, 0), ui->frozen), own = 0;
    if (s->compare && r.h >= 3 && s->state == TRAINER_DIVERGED) {
        items t;
        t.n = 0;
        status_values_a(&t, s, ui, 1, oc.t[0]);
        own = !items_fit(&t, avail, 1);
        t.n = 0;
        add_item(&t, TUI_S_LABEL, 0, "b:");
        status_run_values(&t, s, 1, 1, oc.t[1]);
        own |= !items_fit(&t, status_state(NULL, r, r.r + 1, run_state(s, 1), 0), 1);
    }
    items a;
    a.n = 0;
    status_values_a(&a, s, ui, !own, oc.t[0]);
    status_items(g, r.r, r.c + 1, avail, &a);
    int row = r.r + 1;
    if (s->compare && r.h >= 2) {
        items b;
        b.n = 0;
        add_item(&b, TUI_S_LABEL, 0, "b:");
        status_run_values(&b, s, 1, !own, oc.t[1]);
        avail = status_state(g, r, row, run_state(s, 1), 0);
        status_items(g, row, r.c + 1, avail, &b);
        row++;
    }
    if (own) {
        items f;
        f.n = 0;
        status_fault(&f, s, 0);
        status_fault(&f, s, 1);
        status_items(g, row, r.c + 1, r.w - 2, &f);
    } else if (row < r.r + r.h) {
        status_toggles(g, r, row, s, ui);
    }
}

