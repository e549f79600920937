/* diagnose.c - the rules that turn a run's recent metrics into warnings
 * and a diagnosis (diagnose.h). Plain arithmetic over a fixed ring of
 * points: no allocation, no I/O, no threads. Each rule's threshold is a
 * named constant in diagnose.h and is documented in man/normscope.1.
 */
#include "diagnose.h"
#include "nsmath.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "command.h"
#include "numfmt.h"
#include "settings.h"

static const char *const rule_names[DIAG_R_COUNT] = {
    "headroom", "val-nan", "scale", "update", "resumed", "stall", "norm-variance", "growth", "lr",
    "blowup", "lr-high", "loss-overflow", "not-learning", "overfit", "lr-warn", "growth-warn",
    "start", "change", "attn-logits", "underflow", "excursion", "spike"};

const char *diag_rule_name(diag_rule r)
{
    return r >= 0 && r < DIAG_R_COUNT ? rule_names[r] : "?";
}

void diag_init(diag *d, double plateau)
{
    memset(d, 0, sizeof *d);
    d->plateau = plateau;
    d->plateau_given = plateau;
    d->start_loss = d->start_gnorm = NAN;
    d->learn_loss = NAN;
    d->changed_at = -1;
    d->exc_loss = d->exc_now = NAN;
    d->lr_raised_at = -1;
    d->warmup_off_at = -1;
    d->first_upd_lr = NAN;
}

/* A big file is sampled, not read whole: DIAG_CHUNKS evenly spaced runs
 * of DIAG_CHUNK bytes, so a mapped 1 GiB corpus is not paged in for it. */
#define DIAG_CHUNKS 64
#define DIAG_CHUNK 65536

double diag_unigram_entropy(const uint8_t *b, size_t n)
{
    size_t count[256] = {0}, total = 0;
    size_t chunks = n > (size_t)DIAG_CHUNKS * DIAG_CHUNK ? DIAG_CHUNKS : 1;
    size_t len = chunks > 1 ? DIAG_CHUNK : n;
    for (size_t c = 0; c < chunks; c++) {
        const uint8_t *p = b + (n - len) / (chunks > 1 ? chunks - 1 : 1) * c;
        for (size_t i = 0; i < len; i++)
            count[p[i]]++;
        total += len;
    }
    double h = 0;
    for (int k = 0; k < 256; k++)
        if (count[k]) {
            double p = (double)count[k] / (double)total;
            h -= p * ns_log(p);
        }
    return h;
}

int diag_stalled(const diag *d) { return d->stalled; }

int diag_stall_over(const diag *d, char *buf, size_t len)
{
    if (!d->stall_over)
        return 0;
    snprintf(buf, len, "off the plateau at step %ld: mean loss %.3f, %.3f below it; the stall "
             "diagnosed at step %ld is over", d->stall_over, d->stall_over_loss,
             d->plateau - d->stall_over_loss, d->stall_at);
    return 1;
}

int diag_exploded(const diag *d) { return d->exploded; }

int diag_episode_open(const diag *d) { return d->warned || d->div_seen; }

/* ---- the history -------------------------------------------------------- */

static long kept(const diag *d) { return d->n < DIAG_WINDOW ? d->n : DIAG_WINDOW; }

/* age 0 = the newest point kept */
static const diag_point *point(const diag *d, long age)
{
    return &d->hist[(d->n - 1 - age) % DIAG_WINDOW];
}

static float layer_grad(const layer_metrics *l)
{
    return sqrtf(l->grad_attn * l->grad_attn + l->grad_ffn * l->grad_ffn +
                 l->grad_ln * l->grad_ln);
}

/* The columns the rules read most, by name. */
static float act_of(const diag_point *p, int l) { return diag_point_lc(p, METRICS_LC_ACT_MAX, l); }
static float upd_of(const diag_point *p, int l) { return diag_point_lc(p, METRICS_LC_UPDATE, l); }
static float head_of(const diag_point *p, int l) { return diag_point_lc(p, METRICS_LC_HEADROOM, l); }

static void push(diag *d, const step_metrics *m)
{
    diag_point *p = &d->hist[d->n % DIAG_WINDOW];
    p->step = m->step;
    p->updated = !m->nonfinite && !m->skipped;
    /* a stream's column not said is not known: NaN, which no rule takes
     * for a value (every comparison with it is false) */
    p->loss = metrics_known(m, METRICS_COL_LOSS) ? m->loss : NAN;
    p->lr = metrics_known(m, METRICS_COL_LR) ? m->lr : NAN;
    p->scale = metrics_known(m, METRICS_COL_SCALE) ? m->loss_scale : NAN;
    p->gnorm = metrics_known(m, METRICS_COL_GNORM) ? m->grad_norm : NAN;
    p->out_change = metrics_known(m, METRICS_COL_OUT_CHANGE) ? m->out_change : NAN;
    p->clip = metrics_clip(m);
    if (d->first_loss == 0 && p->updated && isfinite(p->loss))
        d->first_loss = p->loss;
    for (int l = 0; l < m->n_layer && l < NS_MAX_LAYERS; l++) {
        p->grad[l] = layer_grad(&m->layer[l]);
        for (int k = 0; k < METRICS_LAYER_COLS; k++)
            p->lc[k][l] = metrics_layer_col_get(&m->layer[l], k);
    }
    d->n++;
}

/* The points kept since the trend's start (a rewind, a change of
 * precision or norm), DIAG_WINDOW at most. */
static long trend_len(const diag *d)
{
    long a = 0;
    while (a < kept(d) && a < DIAG_WINDOW && point(d, a)->step > d->trend_from)
        a++;
    return a;
}

/* Least-squares slope per step of y over the newest `span` points kept
 * (finite y only); which = 0 log2(act max), 1 headroom. NaN with fewer
 * than 8 points. */
static double slope_over(const diag *d, int layer, int which, long span)
{
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    int k = 0;
    for (long a = 0; a < kept(d) && a < span; a++) {
        const diag_point *p = point(d, a);
        if (p->step <= d->trend_from)
            break; /* another precision or norm: another run's trend */
        double y = which ? head_of(p, layer) : ns_log2(act_of(p, layer));
        if (!isfinite(y) || !p->updated)
            continue;
        double x = (double)p->step;
        sx += x, sy += y, sxx += x * x, sxy += x * y, k++;
    }
    double den = k * sxx - sx * sx;
    if (k < 8 || den <= 0)
        return NAN;
    return (k * sxy - sx * sy) / den;
}

static double slope(const diag *d, int layer, int which)
{
    return slope_over(d, layer, which, DIAG_WINDOW);
}

/* The largest loss scale in the window, and how many steps back it was. */
static float window_max_scale(const diag *d, long *age_out)
{
    float mx = 0;
    for (long a = 0; a < kept(d); a++)
        if (point(d, a)->scale > mx) {
            mx = point(d, a)->scale;
            *age_out = a;
        }
    return mx;
}

/* ---- settings and rewinds ---------------------------------------------- */

static double recent_loss(const diag *d, long after, int *cnt);
static double recent_var(const diag *d, long after);

static diag_settings settings_of(const step_metrics *m)
{
    diag_settings s;
    memset(&s, 0, sizeof s);
    s.lr_peak = m->lr_peak;
    s.clip = metrics_clip(m);
    s.warmup_on = metrics_warmup_on(m);
    s.precision = (int)metrics_precision(m);
    s.fp32_norms = metrics_fp32_norms(m);
    s.norm = (int)metrics_norm(m);
    s.norm_kind = (int)metrics_norm_kind(m);
    s.scale_dynamic = m->loss_scale_dynamic;
    for (int k = 0; k < metrics_step_ncols(); k++)
        if (metrics_step_col(k)->setting && metrics_known(m, k))
            metrics_step_col_text(m, k, s.col[k], sizeof s.col[k]);
    return s;
}

static int settings_equal(const diag_settings *a, const diag_settings *b)
{
    if (a->lr_peak != b->lr_peak || a->scale_dynamic != b->scale_dynamic)
        return 0;
    for (int k = 0; k < metrics_step_ncols(); k++)
        if (strcmp(a->col[k], b->col[k]) != 0)
            return 0;
    return 1;
}

/* The command that sets step column k's setting to value text v, or ""
 * when none can mid-run: the settings table's command word of the row of
 * that name ("norm_kind" -> the norm-kind row -> "kind"), checked by the
 * script parser. */
static void undo_command(int k, const char *v, char *buf, size_t len)
{
    const ns_setting *row = metrics_step_col(k)->setting;
    ns_command c;
    char err[128];
    buf[0] = 0;
    if (row && row->cmd) {
        snprintf(buf, len, "%s %s", row->cmd, v);
        if (command_parse(buf, &c, err, sizeof err) != 0)
            buf[0] = 0;
    }
}

static void append(char *buf, size_t len, const char *sep, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void append(char *buf, size_t len, const char *sep, const char *fmt, ...)
{
    size_t at = strlen(buf);
    if (at && at < len)
        at += (size_t)snprintf(buf + at, len - at, "%s", sep);
    if (at >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + at, len - at, fmt, ap);
    va_end(ap);
}

/* Whether a change of the row makes the older steps another run's for a
 * trend: what the model computes (placement, kind, arithmetic), not how
 * it is trained. */
static int another_run(const ns_setting *s)
{
    return s && (s->hook == SETH_NORM || s->hook == SETH_NORM_KIND ||
                 s->hook == SETH_PRECISION || s->hook == SETH_FP32_NORMS);
}

/* The change just recorded joins the run of changes within
 * DIAG_EXC_AFTER steps of each other, or starts one: its first's loss
 * before it is what their effect is judged against. */
static void track_excursion(diag *d, const diag_settings *a, const diag_settings *b, long at)
{
    char what[DIAG_TEXT / 2];
    snprintf(what, sizeof what, "%s", d->change_what);
    if (a->lr_peak != b->lr_peak)
        append(what, sizeof what, ", ", "lr %g -> %g", (double)a->lr_peak, (double)b->lr_peak);
    if (d->exc_at == 0 || at - d->exc_last > DIAG_EXC_AFTER) {
        d->exc_at = at;
        d->exc_loss = d->change_loss;
        d->exc_var = recent_var(d, 0);
        snprintf(d->exc_what, sizeof d->exc_what, "%s", what);
        snprintf(d->exc_undo, sizeof d->exc_undo, "%s", d->change_undo);
        if (a->lr_peak != b->lr_peak)
            append(d->exc_undo, sizeof d->exc_undo, "; ", "lr %g", (double)a->lr_peak);
    } else {
        append(d->exc_what, sizeof d->exc_what, ", ", "%s", what);
    }
    d->exc_last = at;
    d->exc_judged = 0;
    d->exc_now = NAN;
}

/* A change from a to b at step `at`: what changed in the table's words
 * ("norm pre -> post"), the commands that undo it, and whether it makes
 * the older rows another run's for a trend (the precision, the norm, its
 * kind, fp32 norms). */
static void record_change(diag *d, const diag_settings *a, const diag_settings *b, long at)
{
    int cnt;
    d->change_loss = recent_loss(d, 0, &cnt);
    d->change_held = at - (d->changed_at >= 0 ? d->changed_at : d->start_step - 1);
    d->change_at = at;
    d->change_what[0] = d->change_undo[0] = 0;
    for (int k = 0; k < metrics_step_ncols(); k++) {
        if (!strcmp(a->col[k], b->col[k]))
            continue;
        append(d->change_what, sizeof d->change_what, ", ", "%s %s -> %s",
               metrics_step_col(k)->name, a->col[k][0] ? a->col[k] : "?", b->col[k]);
        char undo[DIAG_FIX_TEXT];
        undo_command(k, a->col[k], undo, sizeof undo);
        if (undo[0])
            append(d->change_undo, sizeof d->change_undo, "; ", "%s", undo);
        if (another_run(metrics_step_col(k)->setting))
            d->trend_from = at;
    }
    track_excursion(d, a, b, at);
    if (a->lr_peak != b->lr_peak) {
        append(d->change_what, sizeof d->change_what, ", ", "lr %g -> %g", (double)a->lr_peak,
               (double)b->lr_peak);
        append(d->change_undo, sizeof d->change_undo, "; ", "lr %g", (double)a->lr_peak);
    }
    if (a->scale_dynamic != b->scale_dynamic)
        append(d->change_what, sizeof d->change_what, ", ", "dynamic loss scaling %s -> %s",
               a->scale_dynamic ? "on" : "off", b->scale_dynamic ? "on" : "off");
}

/* A new episode: the warnings may speak again, the stall is judged anew. */
static void new_episode(diag *d)
{
    d->warned = 0;
    d->head_left = 0;
    d->exploded = 0;
    d->stall_run = 0;
    d->stalled = 0;
}

static diag_finding *add(diag_finding *out, int max, int *k, diag_kind kind, diag_rule rule,
                         int layer, long step, const double v[4], const char *hint,
                         const char *fmt, ...) __attribute__((format(printf, 10, 11)));

/* The finding added (NULL when out is full), for its fix (set_fix). */
static diag_finding *add(diag_finding *out, int max, int *k, diag_kind kind, diag_rule rule,
                         int layer, long step, const double v[4], const char *hint,
                         const char *fmt, ...)
{
    if (*k >= max)
        return NULL;
    diag_finding *f = &out[(*k)++];
    memset(f, 0, sizeof *f);
    f->kind = kind;
    f->rule = rule;
    f->layer = layer;
    f->step = step;
    memcpy(f->value, v, sizeof f->value);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->text, sizeof f->text, fmt, ap);
    va_end(ap);
    snprintf(f->hint, sizeof f->hint, "%s", hint);
    f->fix_from = DIAG_FROM_HERE;
    return f;
}

static void set_fix(diag_finding *f, int from, long before, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The finding's first next step (diag_finding.fix): commands, and where
 * they apply from. */
static void set_fix(diag_finding *f, int from, long before, const char *fmt, ...)
{
    if (!f)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->fix, sizeof f->fix, fmt, ap);
    va_end(ap);
    f->fix_from = from;
    f->fix_before = before;
}

/* A peak LR change at step `at`: the old one is tolerated if the run
 * trained at it for DIAG_LR_HELD steps; a new one above that is a raise. */
static void track_lr(diag *d, float peak, long at)
{
    if (peak == d->set.lr_peak)
        return;
    if (at - d->lr_since >= DIAG_LR_HELD)
        d->lr_tolerated = d->set.lr_peak;
    d->lr_since = at;
    d->lr_raised_at = peak > d->lr_tolerated ? at : -1;
}

/* Resumed at step `from` after a rewind, with the settings the run
 * diverged with. The replay is the same run, and diverges at the same step,
 * only when no setting changed after the snapshot: a change made later (an
 * LR raised at 700 when the snapshot is of 650) is in force from the
 * snapshot now, so the step is not claimed. The replay's settings hold from
 * `from` on: a change before it is past for the new timeline. */
static void warn_resumed(diag *d, long from, diag_finding *out, int max, int *k)
{
    const char *hint = "pause, change a setting (LR, warmup, precision, norm), rewind again";
    d->warned |= 1u << DIAG_R_RESUMED; /* it holds until a change */
    double v[4] = {(double)from, (double)d->diverged_at, (double)d->changed_at, 0};
    if (d->changed_at <= from) {
        add(out, max, k, DIAG_WARNING, DIAG_R_RESUMED, -1, from + 1, v, hint,
            "resumed from step %ld with nothing changed: it will diverge again at step %ld", from,
            d->diverged_at);
    } else {
        v[1] = -1; /* no step claimed */
        add(out, max, k, DIAG_WARNING, DIAG_R_RESUMED, -1, from + 1, v, hint,
            "resumed from step %ld, the change made at step %ld in force from here: it may "
            "diverge again", from, d->changed_at);
        d->changed_at = from;
    }
}

static void rewound_checks(diag *d, long step);

/* Rewinds (a step number that goes back) and setting changes; the
 * "resumed with nothing changed" warning. */
static void track_changes(diag *d, const step_metrics *m, diag_finding *out, int max, int *k)
{
    diag_settings s = settings_of(m);
    if (d->last_step > 0 && m->step <= d->last_step) {
        d->n = 0; /* the ring's points are from the future now */
        rewound_checks(d, m->step);
        new_episode(d);
        d->div_seen = 0;
        if (d->diverged_at >= m->step && settings_equal(&s, &d->diverged_set))
            warn_resumed(d, m->step - 1, out, max, k);
        d->diverged_at = 0;
        d->finite_run = 0;
    }
    if (!d->have_set) {
        /* a run loaded at step N had its peak LR from step 0, as far as
         * anyone knows: its warmup was not just turned off */
        if (!s.warmup_on)
            d->warmup_off_at = 0;
        d->lr_tolerated = s.lr_peak;
        d->lr_since = m->step - 1;
    } else if (!settings_equal(&s, &d->set)) {
        record_change(d, &d->set, &s, m->step - 1);
        d->changed_at = m->step - 1;
        /* learning is judged anew, from the loss before the run of changes:
         * a fall from a spike the changes made is no learning */
        d->learn_from = m->step - 1;
        d->learn_loss = d->exc_loss;
        track_lr(d, s.lr_peak, m->step - 1);
        if (d->set.warmup_on && !s.warmup_on)
            d->warmup_off_at = m->step - 1;
        /* a blow-up stays diagnosed: the weights are as blown as before,
         * and only a rewind (or the loss coming down) ends it */
        unsigned blown = d->warned & (1u << DIAG_R_BLOWUP);
        int exploded = d->exploded;
        new_episode(d);
        d->warned |= blown;
        d->exploded = exploded;
    }
    d->set = s;
    d->have_set = 1;
}

/* ---- warnings ------------------------------------------------------------ */

/* The step at which h doublings of headroom are gone, falling at rate
 * (doublings per step, negative). */
static long crossing(long step, double h, double rate)
{
    return step + (long)ceil(h / -rate);
}

/* When the headroom h of a layer falling at the window's rate and at its
 * newest quarter's crosses: [a, b] from the two rates (a growth that
 * speeds up crosses sooner than the window's mean says); a growth that
 * slows (the newer rate under DIAG_SLOWING of the window's) crosses at a
 * or later, a from the newer rate, and b is -1. */
static void crossing_range(long step, double h, double rate, double recent, long *a, long *b)
{
    *a = *b = crossing(step, h, rate);
    if (!(-recent * 100 > DIAG_GROWTH_MIN))
        return;
    long c = crossing(step, h, recent);
    if (recent > DIAG_SLOWING * rate) { /* both negative: the newer is slower */
        *a = c;
        *b = -1;
        return;
    }
    *a = c < *a ? c : *a;
    *b = c > *b ? c : *b;
}

/* Headroom below DIAG_HEADROOM_WARN doublings and falling (the layer with
 * the least), once DIAG_TREND_MIN points make a trend: where it is and
 * when it crosses (crossing_range). Warned again when the steps left fell
 * to DIAG_REWARN of the last warning's. */
static void rule_headroom(diag *d, const step_metrics *m, diag_finding *out, int max, int *k)
{
    int lo = -1;
    for (int l = 0; l < m->n_layer; l++) {
        float h = m->layer[l].headroom;
        if (isfinite(h) && (lo < 0 || h < m->layer[lo].headroom))
            lo = l;
    }
    if (lo < 0 || trend_len(d) < DIAG_TREND_MIN)
        return;
    double h = m->layer[lo].headroom;
    double rate = slope(d, lo, 1); /* doublings per step, negative when falling */
    /* falling: at least DIAG_GROWTH_MIN doublings per 100 steps, not noise */
    if (h >= DIAG_HEADROOM_WARN || !(-rate * 100 > DIAG_GROWTH_MIN))
        return;
    double recent = slope_over(d, lo, 1, DIAG_WINDOW / 4);
    long a, b;
    crossing_range(m->step, h, rate, recent, &a, &b);
    long left = (b >= 0 ? b : a) - m->step;
    if ((d->warned & (1u << DIAG_R_HEADROOM)) && !(left <= DIAG_REWARN * d->head_left))
        return;
    d->warned |= 1u << DIAG_R_HEADROOM;
    d->head_left = left > 0 ? left : 1;
    double act = m->layer[lo].act_max, limit = act * ns_exp2(h);
    double v[4] = {h, act, (double)a, (double)b};
    char when[96];
    if (b >= 0)
        snprintf(when, sizeof when, "at these rates it crosses between step %ld and %ld", a, b);
    else
        snprintf(when, sizeof when, "slowing (%.2f/100 over the newest %d steps): crosses at "
                 "step %ld or later", -recent * 100, DIAG_WINDOW / 4, a);
    diag_finding *f = add(out, max, k, DIAG_WARNING, DIAG_R_HEADROOM, lo, m->step, v,
        "lower the LR, or fp32 norms / bf16 if the limit is a norm's variance",
        "layer %d headroom %.2f doublings (act max %.4g of %.3g), falling %.2f/100 steps: %s",
        lo, h, act, limit, -rate * 100, when);
    set_fix(f, DIAG_FROM_HERE, 0, "lr x0.5");
}

static void rule_val_nan(diag *d, const step_metrics *m, diag_finding *out, int max, int *k)
{
    /* once per episode: the weights near the limit give NaN on some
     * validations and not on others, and the first one is the news */
    if (!m->has_val || isfinite(m->val_loss) || (d->warned & (1u << DIAG_R_VAL_NAN)))
        return;
    d->warned |= 1u << DIAG_R_VAL_NAN;
    double v[4] = {m->val_loss, 0, 0, 0};
    add(out, max, k, DIAG_WARNING, DIAG_R_VAL_NAN, -1, m->step, v,
        "the weights already overflow on held-out text: a divergence is near",
        "validation loss is %s at step %ld while training still looks finite",
        isnan(m->val_loss) ? "nan" : "inf", m->step);
}

/* The dynamic scaler gave up (engine_scaler_update): the step's
 * gradients overflowed even at loss scale 1, while its forward and loss
 * were finite. No scale helps then: the gradients at their true size pass
 * the format's max. */
static int scale_gave_up(const step_metrics *m)
{
    return m->nonfinite && m->loss_scale_dynamic && m->loss_scale <= 1.0f && isfinite(m->loss) &&
           strncmp(m->fault, "forward", 7) != 0;
}

/* The dynamic loss scale fell DIAG_SCALE_DROP-fold or more within the
 * window, or gave up (scale_gave_up, at any drop). kind: a warning on the
 * way, a diagnosis at a divergence. value {largest in the window, now,
 * steps, 1 when it gave up}. */
static int rule_scale(diag *d, const step_metrics *m, diag_kind kind, diag_finding *out, int max,
                      int *k)
{
    if (!m->loss_scale_dynamic || kept(d) == 0)
        return 0;
    long age = 0;
    float mx = window_max_scale(d, &age);
    int gave = kind == DIAG_DIAGNOSIS && scale_gave_up(m);
    if (!(m->loss_scale > 0) || (mx / m->loss_scale < DIAG_SCALE_DROP && !gave))
        return 0;
    double v[4] = {mx, m->loss_scale, (double)(age + 1), gave};
    char at_one[DIAG_TEXT] = "";
    if (gave)
        snprintf(at_one, sizeof at_one, ", and at 1 the %s still overflowed: gradients at "
                 "their true size pass %s's max %g", m->fault[0] ? m->fault : "gradients",
                 numfmt_name(metrics_precision(m)), (double)numfmt_max(metrics_precision(m)));
    diag_finding *f = add(out, max, k, kind, DIAG_R_SCALE, -1, m->step, v,
        !gave ? "values grow toward fp16's limit: lower the LR, or train in bf16 (fp32's range)"
        : metrics_precision(m) == FMT_FP16
            ? "no loss scale helps: train in bf16, which has fp32's range (lower the LR too if "
              "the values grow)"
            : "no loss scale helps: lower the LR",
        "loss scale collapsed %g -> %g (%gx) within %ld steps (since step %ld)%s", (double)mx,
        (double)m->loss_scale, (double)(mx / m->loss_scale), age + 1, point(d, age)->step,
        gave ? at_one : ": gradients overflow ever more");
    set_fix(f, kind == DIAG_DIAGNOSIS ? DIAG_FROM_SNAPSHOT : DIAG_FROM_HERE, m->step,
            metrics_precision(m) == FMT_FP16 ? "precision bf16" : "lr x0.5");
    return 1;
}

/* A layer's mean update ratio over the window below DIAG_UPDATE_VANISH
 * while the top layer's is above DIAG_UPDATE_ALIVE: that layer has stopped
 * learning. */
static void rule_update(diag *d, const step_metrics *m, diag_finding *out, int max, int *k)
{
    int L = m->n_layer;
    if (L < 2 || kept(d) < DIAG_WINDOW / 2 || (d->warned & (1u << DIAG_R_UPDATE)))
        return;
    double mean[NS_MAX_LAYERS] = {0};
    int cnt = 0;
    for (long a = 0; a < kept(d); a++) {
        const diag_point *p = point(d, a);
        if (!p->updated)
            continue;
        for (int l = 0; l < L; l++)
            mean[l] += upd_of(p, l);
        cnt++;
    }
    if (cnt < DIAG_WINDOW / 4)
        return;
    int lo = 0;
    for (int l = 0; l < L; l++)
        if (mean[l] < mean[lo])
            lo = l;
    double low = mean[lo] / cnt, top = mean[L - 1] / cnt;
    if (!(low < DIAG_UPDATE_VANISH) || !(top > DIAG_UPDATE_ALIVE))
        return;
    d->warned |= 1u << DIAG_R_UPDATE;
    double v[4] = {low, top, (double)cnt, 0};
    add(out, max, k, DIAG_WARNING, DIAG_R_UPDATE, lo, m->step, v,
        "its gradient vanished: Pre-LN, or a smaller depth, keeps the signal",
        "layer %d update ratio %.2g (top layer %.2g) over %d steps: it has stopped learning", lo,
        low, top, cnt);
}

/* The layer whose act max was largest (finite) in act[0..L). */
static int top_act_layer(const float *act, int L);

/* The mean of the top layer's update ratio over the newest `span` updated
 * points kept (DIAG_WINDOW: the window's). */
static double mean_top_update_over(const diag *d, int L, int *cnt, long span)
{
    double sum = 0;
    *cnt = 0;
    for (long a = 0; a < kept(d) && a < span; a++)
        if (point(d, a)->updated && isfinite(upd_of(point(d, a), L - 1))) {
            sum += upd_of(point(d, a), L - 1);
            ++*cnt;
        }
    return *cnt ? sum / *cnt : NAN;
}

static double mean_top_update(const diag *d, int L, int *cnt)
{
    return mean_top_update_over(d, L, cnt, DIAG_WINDOW);
}

/* The top layer's update per unit LR (its update ratio / the step's LR)
 * over the newest `span` updated points kept, as a share of its first
 * update's: Adam's first step moves every weight by the LR, so that one
 * is 1 / rms(W) of the initial weights, the model's own unit (6.3 at
 * width 32, 8.5 at 64); a run that trains well settles at 0.1-0.25 of
 * it (Adam's step on noisy gradients), one whose LR inflated its weights
 * far under it. NaN when not known. */
static double upd_share_over(const diag *d, int L, long span)
{
    double sum = 0;
    int cnt = 0;
    for (long a = 0; a < kept(d) && a < span; a++) {
        const diag_point *p = point(d, a);
        if (p->updated && isfinite(upd_of(p, L - 1)) && p->lr > 0) {
            sum += upd_of(p, L - 1) / p->lr;
            cnt++;
        }
    }
    return cnt && d->first_upd_lr > 0 ? sum / cnt / d->first_upd_lr : NAN;
}

/* Is the LR too high by the top layer's update: its update per unit LR
 * under DIAG_UPDATE_KEEP of its first update's (the weights inflated),
 * or its update ratio above DIAG_UPDATE_HUGE (the LR simply big, before
 * they could); when the first is not known (a stream silent at its
 * first step, or joined later), its update ratio above DIAG_UPDATE_HIGH.
 * The words (the numbers compared, the threshold used) into buf when
 * given. Its answer: LR_OK, or which of the three said too high. */
enum { LR_OK, LR_BY_SHARE, LR_BY_HUGE, LR_BY_ALONE }; /* lr_high_by's answers */

static int lr_high_by(const diag *d, double share, double upd, char *buf, size_t len)
{
    int rel = isfinite(share);
    int high = !rel                        ? (upd > DIAG_UPDATE_HIGH ? LR_BY_ALONE : LR_OK)
               : share < DIAG_UPDATE_KEEP ? LR_BY_SHARE
               : upd > DIAG_UPDATE_HUGE   ? LR_BY_HUGE
                                          : LR_OK;
    if (buf && rel)
        snprintf(buf, len, "per unit LR %.3g of its first update's %.3g (too high: under %g, "
                 "or a ratio above %g)", share, (double)d->first_upd_lr, DIAG_UPDATE_KEEP,
                 DIAG_UPDATE_HUGE);
    else if (buf)
        snprintf(buf, len, "its first update's not said: the ratio judged alone (too high: "
                 "above %g)", DIAG_UPDATE_HIGH);
    return high;
}

/* The LR's factor that brings an update ratio upd to DIAG_UPDATE_GOAL or
 * below: a power of ten, 0.1 at most (Adam's step is about the LR per
 * weight, so the ratio scales with it). */
static double lr_factor(double upd)
{
    double f = 0.1;
    while (upd * f > DIAG_UPDATE_GOAL && f > 1e-4)
        f /= 10;
    return f;
}

/* Keep this step's mean in the ring of the stall run (stall_run > 0);
 * is it less than DIAG_STALL_FALL below the mean DIAG_STALL_BACK steps
 * back? (A run not yet that long on the plateau is not judged flat.) */
static int flat(diag *d, double mean)
{
    double *slot = &d->stall_mean[(d->stall_run - 1) % DIAG_STALL_BACK];
    double back = d->stall_run > DIAG_STALL_BACK ? *slot : NAN;
    *slot = mean;
    return back - mean < DIAG_STALL_FALL;
}

/* A stall: the mean loss over DIAG_STALL_STEPS steps on the unigram
 * plateau (from DIAG_STALL_TOL below to DIAG_STALL_ABOVE above), for
 * DIAG_STALL_LONG steps while falling less than DIAG_STALL_FALL in
 * DIAG_STALL_BACK (flat: a slow descent through the plateau is learning),
 * or at once when the bottom quarter's gradient is
 * below DIAG_STALL_GRAD of the top layer's (Liu et al. 2020 "Admin", Wang et al.
 * 2022 "DeepNet": the collapse comes within 5-10 updates, the output's change
 * amplified by the residual branches; Xiong et al. 2020 show the
 * gradient of Post-LN's lower layers shrinking with depth). The cause is
 * chosen from the numbers: activations grown past DIAG_STALL_ACT while the
 * weights move more than DIAG_STALL_UPD a step, or weights moving more than
 * DIAG_UPDATE_HIGH a step, are the LR's (Adam's fixed-size steps inflate
 * the weights); a vanishing bottom
 * gradient is the depth's; an update ratio below DIAG_UPDATE_LOW on steps
 * clipped (DIAG_CLIP_SHARE of them or more) is the clip's (Adam's step does
 * not depend on the gradient's size until the clipped gradient nears its
 * epsilon; then it shrinks with it); every block's gradient under
 * DIAG_STALL_GRAD of the whole model's while the weights barely move is
 * no gradient reaching the blocks (more LR moves nothing: DyT stalls so);
 * else it is an LR too low. */
/* Is the latest setting change a candidate cause at step `step`: within
 * DIAG_LR_RECENT steps before it, after the settings before it held for
 * DIAG_LR_HELD steps or more (a run that had trained at them)? */
static int change_candidate(const diag *d, long step)
{
    return d->change_at > 0 && step - d->change_at <= DIAG_LR_RECENT &&
           d->change_held >= DIAG_LR_HELD && d->change_what[0];
}

/* At a divergence or a blow-up: a change the run did not survive, when
 * no LR raise (rule_lr's) is it. value {change step, steps held, steps
 * since, 0}. */
static void rule_change(diag *d, const step_metrics *m, diag_finding *out, int max, int *k)
{
    if (!change_candidate(d, m->step) || d->lr_raised_at == d->change_at)
        return;
    double v[4] = {(double)d->change_at, (double)d->change_held,
                   (double)(m->step - d->change_at), 0};
    diag_finding *f = add(out, max, k, DIAG_DIAGNOSIS, DIAG_R_CHANGE, -1, m->step, v,
        d->change_undo[0] ? "go back to before the change and undo it"
                          : "go back to before the change: no command undoes it",
        "%ld steps after the change at step %ld (%s), made after %ld steps at the settings "
        "before it", m->step - d->change_at, d->change_at, d->change_what, d->change_held);
    if (d->change_undo[0])
        set_fix(f, DIAG_FROM_SNAPSHOT, d->change_at, "%s", d->change_undo);
}

/* The stall rule's window: the DIAG_STALL_STEPS latest steps since the
 * last change, summed. */
typedef struct {
    int cnt, clipped;
    double loss, bottom, top, gnorm;
    double blocks[NS_MAX_LAYERS]; /* each layer's gradient norm */
} stall_window;

static void stall_sums(const diag *d, int L, stall_window *w)
{
    int nb = L / 4 > 0 ? L / 4 : 1;
    memset(w, 0, sizeof *w);
    for (long a = 0; a < kept(d) && w->cnt < DIAG_STALL_STEPS; a++) {
        const diag_point *p = point(d, a);
        if (p->step <= d->changed_at)
            break; /* judged anew after a change */
        float b = 0;
        for (int l = 0; l < nb; l++)
            b = p->grad[l] > b ? p->grad[l] : b;
        w->loss += p->loss, w->bottom += b, w->top += p->grad[L - 1], w->cnt++;
        for (int l = 0; l < L; l++)
            w->blocks[l] += p->grad[l];
        w->clipped += p->clip > 0 && p->gnorm > p->clip;
        w->gnorm += isfinite(p->gnorm) ? p->gnorm : 0;
    }
}

/* The stall's finding: its cause from the numbers (see rule_stall), in
 * one chain that gives the words, the hint, the layer and the fix. */
/* A stall's cause, as stall_cause names it: the sentence, the fix's
 * commands and from where they apply, the layer it is about. */
typedef struct {
    char why[DIAG_TEXT], fix[DIAG_FIX_TEXT];
    const char *hint;
    int from, layer;
    long before;
    /* the numbers the causes read */
    int la, lb, ucnt, post;
    double act, grow, upd, ratio, silent;
    double oc; /* the first update's out_change (NaN: not measured) */
} stall_ctx;

/* The causes a setting makes: a change that came before the stall, an LR
 * that grows the activations, a clip that starves Adam. 1 when one holds. */
static int stall_setting_cause(const diag *d, const step_metrics *m, const stall_window *w,
                               stall_ctx *c)
{
    if (change_candidate(d, m->step) && d->change_loss < d->plateau - DIAG_STALL_TOL) {
        snprintf(c->why, sizeof c->why, "the change at step %ld (%.48s): loss %.3f before it, "
                 "after %ld steps", d->change_at, d->change_what, d->change_loss,
                 d->change_held);
        c->hint = d->change_undo[0] ? "go back to before the change and undo it"
                                    : "go back to before the change: no command undoes it";
        snprintf(c->fix, sizeof c->fix, "%s", d->change_undo);
        c->from = DIAG_FROM_SNAPSHOT;
        c->before = d->change_at;
    } else if ((c->act > DIAG_STALL_ACT && c->upd > DIAG_STALL_UPD) || c->upd > DIAG_UPDATE_HIGH) {
        snprintf(c->why, sizeof c->why, "the LR %g: act max %.4g (layer %d), %+.2f doublings/100 "
                 "steps; update ratio %.2g a step", (double)m->lr_peak, c->act, c->la,
                 isfinite(c->grow) ? c->grow : 0.0, c->upd);
        c->hint = "re-init with a lower LR: lowering it from here keeps the grown weights";
        snprintf(c->fix, sizeof c->fix, "lr x%g", lr_factor(c->upd));
        c->from = DIAG_FROM_START;
    } else if (metrics_clip(m) > 0 && w->clipped >= DIAG_CLIP_SHARE * w->cnt &&
               c->upd < DIAG_UPDATE_LOW) {
        double gn = w->gnorm / w->cnt;
        snprintf(c->why, sizeof c->why, "the clip %g: %d of %d steps clipped, the gradient norm "
                 "%.3g (mean) cut to %.2g of it; update ratio %.2g a step",
                 (double)metrics_clip(m), w->clipped, w->cnt, gn,
                 gn > 0 ? (double)metrics_clip(m) / gn : 0.0, c->upd);
        c->hint = "raise the clip or turn it off (clip 0): Adam's step shrinks once the clipped "
                  "gradient nears its epsilon";
        snprintf(c->fix, sizeof c->fix, "clip 0");
    } else {
        return 0;
    }
    return 1;
}

/* A clip that cut DIAG_CLIP_SHARE of cnt steps (clipped of them, their
 * gradient norms summing to gsum) to DIAG_CLIP_CUT of the mean norm or
 * less: named with its numbers in why; 0 when it did not. */
static int clip_cut_named(const step_metrics *m, int clipped, int cnt, double gsum, double upd,
                          char *why, size_t len)
{
    double clip = metrics_clip(m), gn = cnt ? gsum / cnt : 0;
    if (!(clip > 0) || cnt == 0 || clipped < DIAG_CLIP_SHARE * cnt || !(clip <= DIAG_CLIP_CUT * gn))
        return 0;
    snprintf(why, len, "the clip %g: %d of %d steps clipped, the gradient norm %.3g (mean) cut "
             "%.*gx; update ratio %.2g", clip, clipped, cnt, gn, gn / clip < 1e5 ? 5 : 2, gn / clip,
             upd);
    return 1;
}

/* The causes the gradients' reach makes (gains at zero, depth, no
 * gradient into the blocks), a low LR, or none known. */
/* The depth stall's sentence: the vanished gradient, and where it was
 * measured how far the first update moved the output (Liu et al. 2020's
 * amplified output change, which DeepNorm bounds: out_change at step 1
 * is about 1 under Post-LN without warmup at 12 and 24 blocks, 0.2-0.3
 * under DeepNorm, under 0.05 with warmup) */
static void depth_why(stall_ctx *c)
{
    int n = snprintf(c->why, sizeof c->why, "depth: bottom layers' gradient %.2g of the top's",
                     c->ratio);
    if (c->post && isfinite(c->oc) && n > 0 && (size_t)n < sizeof c->why)
        snprintf(c->why + n, sizeof c->why - (size_t)n, "; the first update moved the output "
                 "by %.2f of its size (out_change)", c->oc);
}

static void stall_reach_cause(const step_metrics *m, const stall_window *w, stall_ctx *c)
{
    if (w->bottom < DIAG_STALL_GRAD * w->top && metrics_gamma0(m) == 0 &&
        metrics_setting_known(m, "ln_gamma_init") && c->post) {
        snprintf(c->why, sizeof c->why, "the norms' gains start at 0: each block outputs 0, and "
                 "the gradient below it is %.2g of the top's", c->ratio);
        c->hint = "Pre-LN (norm pre) keeps the residual path open and the gains grow back; or "
                  "start again with --ln-gamma-init 1";
        snprintf(c->fix, sizeof c->fix, "norm pre");
        c->from = DIAG_FROM_START;
        c->layer = 0;
    } else if (w->bottom < DIAG_STALL_GRAD * w->top) {
        depth_why(c);
        c->hint = c->post ? "Pre-LN first (norm pre); else rewind to step 0, warmup on "
                            "(warmup alone stays stuck)"
                          : "the bottom layers get no gradient: lower the LR or the depth";
        /* a fresh Pre-LN start learns sooner than a switch */
        snprintf(c->fix, sizeof c->fix, "%s", c->post ? "norm pre" : "lr x0.5");
        c->from = DIAG_FROM_START;
        c->layer = 0;
    } else if (c->silent < DIAG_STALL_GRAD && c->upd < DIAG_UPDATE_LOW) {
        if (w->blocks[c->lb] > 0)
            snprintf(c->why, sizeof c->why, "no gradient reaches the blocks: the largest (layer "
                     "%d) is %.2g of the whole model's; update ratio %.2g a step", c->lb,
                     c->silent, c->upd);
        else
            snprintf(c->why, sizeof c->why, "no gradient reaches the blocks: every block's is 0; "
                     "update ratio %.2g a step", c->upd);
        int dyt = metrics_norm_kind(m) == NORMK_DYT;
        c->hint = dyt ? "a LayerNorm from here (kind layernorm); 10x the LR stalls the same"
                      : "no rule names a fix: compare a run with another norm (--compare)";
        snprintf(c->fix, sizeof c->fix, "%s", dyt ? "kind layernorm" : "");
    } else if (c->upd < DIAG_UPDATE_LOW) {
        snprintf(c->why, sizeof c->why, "the LR %g is too low: update ratio %.2g a step",
                 (double)m->lr_peak, c->upd);
        c->hint = "raise the LR (lr x10)";
        snprintf(c->fix, sizeof c->fix, "lr x10");
    } else if (clip_cut_named(m, w->clipped, w->cnt, w->gnorm, c->upd, c->why, sizeof c->why)) {
        c->hint = "raise the clip or turn it off (clip 0): every step's gradient was cut to a "
                  "sliver of its norm";
        snprintf(c->fix, sizeof c->fix, "clip 0");
    } else {
        snprintf(c->why, sizeof c->why, "cause unknown: act max %.4g, bottom/top gradient %.2g, "
                 "update ratio %.2g", c->act, c->ratio, c->upd);
        c->hint = "no rule names a cause: compare a run with another LR or norm (--compare)";
    }
}

static void stall_finding(diag *d, const step_metrics *m, const stall_window *w, double mean,
                          diag_finding *out, int max, int *k)
{
    int L = m->n_layer;
    const diag_point *now = point(d, 0);
    stall_ctx c;
    memset(&c, 0, sizeof c);
    c.from = DIAG_FROM_HERE;
    c.la = c.layer = top_act_layer(now->lc[METRICS_LC_ACT_MAX], L);
    c.act = act_of(now, c.la);
    c.grow = slope(d, c.la, 0) * 100;
    c.upd = mean_top_update(d, L, &c.ucnt);
    c.ratio = w->top > 0 ? w->bottom / w->top : 0;
    norm_place place = metrics_norm(m);
    c.post = place == NORM_POST || place == NORM_DEEPNORM || place == NORM_MIX;
    c.oc = d->band_n > 0 ? d->band_oc : NAN;
    /* every block's gradient vanished, the top's too, while the model's
     * (the embeddings' and the head's) did not: the largest block's mean
     * over the model's */
    for (int l = 1; l < L; l++)
        c.lb = w->blocks[l] > w->blocks[c.lb] ? l : c.lb;
    c.silent = w->gnorm > 0 ? w->blocks[c.lb] / w->gnorm : 1;
    if (!stall_setting_cause(d, m, w, &c))
        stall_reach_cause(m, w, &c);
    double v[4] = {mean, d->plateau, c.act, c.ratio};
    diag_finding *f = add(out, max, k, DIAG_DIAGNOSIS, DIAG_R_STALL, c.layer, m->step, v, c.hint,
                          "stalled: loss %.3f on the unigram plateau %.3f for %ld step%s; %s",
                          mean, d->plateau, d->stall_run, d->stall_run == 1 ? "" : "s", c.why);
    if (c.fix[0])
        set_fix(f, c.from, c.before, "%s", c.fix);
    if (f)
        d->last_diagnosis = *f;
    d->stall_at = m->step;
}

static void rule_stall(diag *d, const step_metrics *m, diag_finding *out, int max, int *k)
{
    int L = m->n_layer;
    stall_window w;
    stall_sums(d, L, &w);
    double mean = w.cnt ? w.loss / w.cnt : NAN, off = mean - d->plateau;
    /* a plateau near the floor is the optimum, or close to it: a data set
     * of one repeated byte has entropy 0 and its loss there is right */
    int on = L >= 2 && w.cnt >= DIAG_STALL_STEPS && d->plateau > DIAG_FLOOR_MARGIN &&
             off > -DIAG_STALL_TOL && off < DIAG_STALL_ABOVE;
    /* a run that learned its way off the plateau, below it, is stalled no
     * more: its diagnosis ends with it (the status mark clears when no
     * other finding holds; the log keeps it) */
    if (w.cnt >= DIAG_STALL_STEPS && off <= -DIAG_STALL_TOL &&
        (d->warned & (1u << DIAG_R_STALL))) {
        d->warned &= ~(1u << DIAG_R_STALL);
        d->stall_over = m->step, d->stall_over_loss = mean;
    }
    d->stall_run = on ? d->stall_run + 1 : 0;
    int vanish = w.bottom < DIAG_STALL_GRAD * w.top, level = on && flat(d, mean);
    d->stalled = on && ((vanish && off < DIAG_STALL_TOL) ||
                        (d->stall_run + DIAG_STALL_STEPS >= DIAG_STALL_LONG && level));
    if (!d->stalled || (d->warned & (1u << DIAG_R_STALL)))
        return;
    d->warned |= 1u << DIAG_R_STALL;
    stall_finding(d, m, &w, mean, out, max, k);
}

/* ---- at a divergence ---------------------------------------------------- */

/* The layer whose act max was largest (finite) in act[0..L). */
static int top_act_layer(const float *act, int L)
{
    int best = 0;
    for (int l = 1; l < L; l++)
        if (isfinite(act[l]) && (!isfinite(act[best]) || act[l] > act[best]))
            best = l;
    return best;
}

/* A norm's variance overflowed the format (its inputs squared past fmax):
 * fp32 norms or bf16 remove the overflow, not the growth that caused it. */
static void rule_norm_var(const step_metrics *m, diag_finding *out, int max, int *k)
{
    if (!strstr(m->fault, "norm variance"))
        return;
    const char *ly = strstr(m->fault, "layer ");
    int layer = ly ? atoi(ly + 6) : -1;
    float act_now[NS_MAX_LAYERS];
    for (int l = 0; l < m->n_layer; l++)
        act_now[l] = m->layer[l].act_max;
    int top = top_act_layer(act_now, m->n_layer);
    double fmax = numfmt_max(metrics_precision(m)), act = m->layer[top].act_max;
    double v[4] = {act, sqrt(fmax), fmax, (double)top};
    char at[24]; /* "nan" without the sign printf may give it */
    snprintf(at, sizeof at, isnan(act) ? "nan" : "%.4g", act);
    diag_finding *f = add(out, max, k, DIAG_DIAGNOSIS, DIAG_R_NORM_VAR, layer, m->step, v,
        "fp32-norms on or precision bf16 fix the overflow; the growth remains: lower the LR too",
        "%s overflowed in %s: act max %s (layer %d) squares past %g (limit %.3g)", m->fault,
        numfmt_name(metrics_precision(m)), at, top, fmax, sqrt(fmax));
    set_fix(f, DIAG_FROM_SNAPSHOT, m->step, "fp32-norms on");
}

/* The largest activation grew over the window: how fast, and when it
 * meets the limit at that rate (at once, when it already has). */
static void rule_growth(diag *d, const step_metrics *m, diag_finding *out, int max, int *k)
{
    if (kept(d) < 8)
        return;
    const diag_point *old = point(d, kept(d) - 1), *now = point(d, 0);
    int l = top_act_layer(now->lc[METRICS_LC_ACT_MAX], m->n_layer);
    double rate = slope(d, l, 0) * 100; /* doublings per 100 steps */
    if (!(rate > DIAG_GROWTH_MIN))
        return;
    double h = head_of(now, l);
    long cross = h > 0 && isfinite(h) ? now->step + (long)ceil(h / rate * 100) : m->step;
    double v[4] = {act_of(old, l), act_of(now, l), rate, (double)cross};
    diag_finding *f = add(out, max, k, DIAG_DIAGNOSIS, DIAG_R_GROWTH, l, m->step, v,
        "lower the LR (clipping does not bound Adam's step, it can make this sooner)",
        "layer %d act max %.4g -> %.4g in %ld steps (least-squares rate +%.2f doublings/100 "
        "steps): at the limit by step %ld",
        l, (double)act_of(old, l), (double)act_of(now, l), now->step - old->step, rate, cross);
    set_fix(f, DIAG_FROM_SNAPSHOT, old->step, "lr x0.25");
}

/* The top layer's update over the window: its mean ratio (upd, over cnt
 * points) and its share of the first update's; 1 when lr_high_by says
 * the LR is too high by them, on 4 points or more (its words into by
 * when given). */
static int lr_high_now(const diag *d, const step_metrics *m, double *upd, double *share,
                       int *cnt, char *by, size_t len)
{
    *cnt = 0;
    *upd = *share = NAN;
    if (m->n_layer < 1)
        return 0;
    *upd = mean_top_update(d, m->n_layer, cnt);
    *share = upd_share_over(d, m->n_layer, DIAG_WINDOW);
    return lr_high_by(d, *share, *upd, by, len) && *cnt >= 4;
}

/* At a divergence: the top layer's update per unit LR, averaged over the
 * window, is under DIAG_UPDATE_KEEP of its first update's (lr_high_by):
 * the LR's steps, about the LR per weight, have inflated the weights
 * (the ratio itself says only how big the LR is for weights of this
 * size: no norms on 4 blocks of width 32 train best at a ratio of 1e-2).
 * value {ratio, LR peak, share, steps}. */
static void rule_lr_high(diag *d, const step_metrics *m, diag_finding *out, int max, int *k)
{
    int cnt;
    double upd, share;
    char by[160];
    if (!lr_high_now(d, m, &upd, &share, &cnt, by, sizeof by))
        return;
    double v[4] = {upd, m->lr_peak, share, (double)cnt};
    const diag_point *old = point(d, kept(d) - 1);
    diag_finding *f = add(out, max, k, DIAG_DIAGNOSIS, DIAG_R_LR_HIGH, m->n_layer - 1, m->step,
        v, "rewind and lower the LR, to bring the update ratio near 3e-3",
        "LR %g too high: the top layer's weights move %.2g of their norm a step (mean of %d "
        "steps), %s", (double)m->lr_peak, upd, cnt, by);
    set_fix(f, DIAG_FROM_SNAPSHOT, old->step, "lr x%g", lr_factor(upd));
}

/* Is the top layer's update per unit LR under DIAG_UPDATE_KEEP of its
 * first update's? Then the LR itself is the cause, and a warmup only
 * delays the divergence. */
static int lr_too_high(const diag *d, const step_metrics *m)
{
    int cnt;
    double upd, share;
    return lr_high_now(d, m, &upd, &share, &cnt, NULL, 0);
}

/* The least positive value format f holds (a subnormal): the smallest
 * normal halved while the format keeps the half. */
static double format_least(numfmt f)
{
    float x = numfmt_min_normal(f);
    while (numfmt_round1(f, x * 0.5f) > 0.0f)
        x *= 0.5f;
    return x;
}

/* The loss computed in the format (fp32 norms off) is the step's first
 * non-finite value: a token's probability rounded to 0, so its loss, -ln
 * 0, is inf. In fp32 that token's loss is large but finite: the softmax
 * and the loss in fp32 (as autocast keeps them) remove it. value {mean
 * loss before, the largest token loss the format holds, its least
 * probability, steps}. */
static void rule_loss(diag *d, const step_metrics *m, diag_finding *out, int max, int *k)
{
    if (metrics_precision(m) == FMT_FP32 || metrics_fp32_norms(m) ||
        strcmp(m->fault, "forward, loss") != 0)
        return;
    double least = format_least(metrics_precision(m)), cap = -ns_log(least), sum = 0;
    int cnt = 0;
    for (long a = 0; a < kept(d); a++)
        if (point(d, a)->updated && isfinite(point(d, a)->loss))
            sum += point(d, a)->loss, cnt++;
    double v[4] = {cnt ? sum / cnt : NAN, cap, least, (double)cnt};
    char before[64] = "";
    if (cnt)
        snprintf(before, sizeof before, "; mean loss %.3f over the %d steps before", v[0], cnt);
    const char *fmt = numfmt_name(metrics_precision(m));
    diag_finding *f = add(out, max, k, DIAG_DIAGNOSIS, DIAG_R_LOSS, -1, m->step, v,
        lr_too_high(d, m) ? "fp32-norms on computes the softmax and the loss in fp32, as "
                            "autocast does; the update ratio says the LR is high too: lower it "
                            "if the loss grows"
                          : "fp32-norms on computes the softmax and the loss in fp32, as "
                            "autocast does",
        "forward, loss is inf in %s: a token's probability rounded to 0 (the least %s holds is "
        "%.3g: a loss of %.1f nats)%s", fmt, fmt, least, cap, before);
    set_fix(f, DIAG_FROM_SNAPSHOT, m->step, "fp32-norms on");
}

/* Steps kept that changed the weights. */
static int updates_kept(const diag *d)
{
    int n = 0;
    for (long a = 0; a < kept(d); a++)
        n += point(d, a)->updated;
    return n;
}

/* The LR was raised, or warmup turned off, shortly before: value
 * {tolerated, peak now, raised at, 0} or {peak, off since, 0, 1}. Not
 * warmup when no step changed the weights yet (every one skipped, or the
 * first diverged): the LR has not acted. */
static void rule_lr(diag *d, const step_metrics *m, diag_finding *out, int max, int *k)
{
    char hint[DIAG_TEXT];
    if (d->lr_raised_at >= 0 && m->step - d->lr_raised_at <= DIAG_LR_RECENT) {
        double v[4] = {d->lr_tolerated, m->lr_peak, (double)d->lr_raised_at, 0};
        snprintf(hint, sizeof hint, "rewind and set lr %g, which the run tolerated",
                 (double)d->lr_tolerated);
        diag_finding *f = add(out, max, k, DIAG_DIAGNOSIS, DIAG_R_LR, -1, m->step, v, hint,
            "LR raised %g -> %g at step %ld, %ld steps before: above what the run tolerated",
            (double)d->lr_tolerated, (double)m->lr_peak, d->lr_raised_at,
            m->step - d->lr_raised_at);
        set_fix(f, DIAG_FROM_SNAPSHOT, d->lr_raised_at, "lr %g", (double)d->lr_tolerated);
    } else if (!metrics_warmup_on(m) && d->warmup_off_at >= 0 &&
               m->step - d->warmup_off_at <= DIAG_WARMUP_EARLY && !lr_too_high(d, m) &&
               updates_kept(d) > 0 &&
               !strstr(m->fault, "loss")) { /* the loss in the format: the format's */
        double v[4] = {m->lr_peak, (double)d->warmup_off_at, 0, 1}; /* 1: no warmup */
        diag_finding *f = add(out, max, k, DIAG_DIAGNOSIS, DIAG_R_LR, -1, m->step, v,
            "rewind to step 0 and turn warmup on, or lower the LR",
            "no warmup: peak LR %g in force from step %ld, %ld steps before", (double)m->lr_peak,
            d->warmup_off_at, m->step - d->warmup_off_at);
        set_fix(f, DIAG_FROM_SNAPSHOT, d->warmup_off_at, "warmup on");
    }
}

static void diagnose_divergence(diag *d, const step_metrics *m, diag_finding *out, int max,
                                int *k)
{
    int first = *k;
    d->div_seen = 1;
    if (d->diverged_at == 0) { /* the first since the start or a rewind */
        d->diverged_at = m->step;
        d->diverged_set = settings_of(m);
    }
    /* the first is the cause: the specific ones (the scaler gave up, an
     * op, a raise), then the LR by its update ratio, then the symptoms */
    int gave = scale_gave_up(m);
    if (gave)
        rule_scale(d, m, DIAG_DIAGNOSIS, out, max, k);
    rule_norm_var(m, out, max, k);
    rule_loss(d, m, out, max, k);
    rule_lr(d, m, out, max, k);
    rule_change(d, m, out, max, k);
    rule_lr_high(d, m, out, max, k);
    if (!gave)
        rule_scale(d, m, DIAG_DIAGNOSIS, out, max, k);
    rule_growth(d, m, out, max, k);
    if (*k > first)
        d->last_diagnosis = out[first];
}

/* A finite blow-up: the mean loss of the newest DIAG_BLOWUP_STEPS points
 * above DIAG_BLOWUP_FACTOR times the larger of the first loss and the
 * plateau. Where it began (the oldest point of the rise kept), so that a
 * fix goes back before it; then the causes, as at a divergence. */
static void rule_blowup(diag *d, const step_metrics *m, diag_finding *out, int max, int *k)
{
    /* the plateau when it is known and above the start, else the start */
    double ref = d->plateau > d->first_loss ? d->plateau : d->first_loss, sum = 0;
    double bar = DIAG_BLOWUP_FACTOR * ref;
    int cnt = 0;
    for (long a = 0; a < kept(d) && cnt < DIAG_BLOWUP_STEPS; a++)
        if (point(d, a)->updated)
            sum += point(d, a)->loss, cnt++;
    double mean = cnt ? sum / cnt : NAN;
    d->exploded = cnt >= DIAG_BLOWUP_STEPS && mean > bar;
    if (!d->exploded || (d->warned & (1u << DIAG_R_BLOWUP)))
        return;
    d->warned |= 1u << DIAG_R_BLOWUP;
    long a = 0;
    while (a + 1 < kept(d) && !(point(d, a + 1)->loss <= bar))
        a++;
    d->blow_from = point(d, a)->step;
    int first = *k, ucnt;
    double upd = mean_top_update_over(d, m->n_layer, &ucnt, a + 1); /* over the rise */
    double v[4] = {mean, ref, (double)d->blow_from, upd};
    int la = top_act_layer(point(d, 0)->lc[METRICS_LC_ACT_MAX], m->n_layer);
    double grow = slope(d, la, 0) * 100;
    diag_finding *f = add(out, max, k, DIAG_DIAGNOSIS, DIAG_R_BLOWUP, -1, m->step, v,
        "rewind to before the rise and lower the LR, to bring the update ratio near 3e-3",
        "blew up, finite: loss %.4g (mean of %d steps) is %.1fx %s %.3g, rising since step "
        "%ld; update ratio %.2g a step, act max %+.2f doublings/100 steps (layer %d)", mean, cnt,
        mean / ref, ref > d->plateau ? "its start" : "the plateau", ref, d->blow_from, upd,
        isfinite(grow) ? grow : 0.0, la);
    set_fix(f, DIAG_FROM_SNAPSHOT, d->blow_from - 1, "lr x%g",
            lr_factor(isfinite(upd) ? upd : 1.0));
    /* a raise is the cause when there was one; the growth is evidence */
    if (d->lr_raised_at >= 0 && m->step - d->lr_raised_at <= DIAG_LR_RECENT)
        rule_lr(d, m, out, max, k);
    rule_growth(d, m, out, max, k);
    if (*k > first + 1 && out[first + 1].rule == DIAG_R_LR) { /* the raise first */
        diag_finding t = out[first];
        out[first] = out[first + 1];
        out[first + 1] = t;
    }
    if (*k > first)
        d->last_diagnosis = out[first];
}

/* ---- the start, the early band, validation, learning ---------------------- */

/* The mean loss of the newest DIAG_LEARN_MEAN points kept after step
 * `after` that changed the weights with a finite loss; their count in
 * *cnt (NaN with none). */
/* recent_loss's steps' variance (NaN: fewer than 2). */
static double recent_var(const diag *d, long after)
{
    double sum = 0, sq = 0;
    int cnt = 0;
    for (long a = 0; a < kept(d) && cnt < DIAG_LEARN_MEAN; a++) {
        const diag_point *p = point(d, a);
        if (p->step <= after)
            break;
        if (p->updated && isfinite(p->loss))
            sum += p->loss, sq += (double)p->loss * p->loss, cnt++;
    }
    return cnt > 1 ? (sq - sum * sum / cnt) / (cnt - 1) : NAN;
}

static double recent_loss(const diag *d, long after, int *cnt)
{
    double sum = 0;
    *cnt = 0;
    for (long a = 0; a < kept(d) && *cnt < DIAG_LEARN_MEAN; a++) {
        const diag_point *p = point(d, a);
        if (p->step <= after)
            break;
        if (p->updated && isfinite(p->loss))
            sum += p->loss, ++*cnt;
    }
    return *cnt ? sum / *cnt : NAN;
}

/* The largest finite act max of a point's L layers, and its layer. */
static float point_act_max(const diag_point *p, int L, int *layer)
{
    float mx = NAN;
    *layer = -1;
    for (int l = 0; l < L; l++)
        if (isfinite(act_of(p, l)) && !(act_of(p, l) <= mx)) {
            mx = act_of(p, l);
            *layer = l;
        }
    return mx;
}

/* After push: the run's first step, the first loss learning is judged
 * from, and the early band (the first DIAG_BAND_STEPS updates). */
static void track_start(diag *d, const step_metrics *m)
{
    const diag_point *p = point(d, 0);
    int L = m->n_layer < NS_MAX_LAYERS ? m->n_layer : NS_MAX_LAYERS, la;
    if (d->start_step == 0) {
        /* a run first seen at step N (a resumed or followed one) is judged
         * from there, not from a step 1 it never showed */
        if (d->learn_from < m->step - 1)
            d->learn_from = m->step - 1;
        d->start_step = m->step;
        d->start_loss = p->loss;
        d->start_gnorm = NAN;
    }
    /* the first update's gradient norm: a step the loss scaler skipped
     * has an overflowed one, not the model's */
    if (isnan(d->start_gnorm) && p->updated && d->band_n == 0)
        d->start_gnorm = p->gnorm, d->start_gnorm_step = m->step;
    if (isnan(d->learn_loss) && p->updated && isfinite(p->loss) && m->step > d->learn_from)
        d->learn_loss = p->loss;
    /* the model's own unit, from its first update only (a stream joined
     * later, or silent then, has none): Adam's first step moves each
     * weight by the LR.
     * The ratio is against the weights after it; that step, the sign of
     * the gradient, is orthogonal to random initial weights, so |W + dW|^2
     * = |W|^2 + |dW|^2 and the ratio r to the weights before is r' /
     * sqrt(1 - r'^2) (LR 0.3 on 4 blocks of width 32: 0.885 after, 1.9
     * before, 6.3 per unit LR as at LR 1e-3) */
    float r = L >= 1 ? upd_of(p, L - 1) : NAN;
    if (isnan(d->first_upd_lr) && d->start_step == 1 && d->band_n == 0 && p->updated &&
        r >= 0 && r < 1 && p->lr > 0)
        d->first_upd_lr = r / sqrtf(1 - r * r) / p->lr;
    if (d->band_n >= DIAG_BAND_STEPS || !p->updated || !isfinite(p->loss) || L < 1)
        return;
    float act = point_act_max(p, L, &la);
    if (d->band_n == 0 || act > d->band_act)
        d->band_act = act;
    if (d->band_n == 0 || p->loss > d->band_loss)
        d->band_loss = p->loss;
    if (d->band_n == 0 || p->out_change > d->band_oc || isnan(d->band_oc))
        d->band_oc = p->out_change;
    d->band_n++;
    d->band_last = m->step;
}

/* A rewind to before `step`: what was measured after it is of the
 * abandoned timeline (validation, learning), and so is the start or the
 * band when the rewind went back into them. */
static void rewound_checks(diag *d, long step)
{
    d->val_n = 0;
    d->val_above = 0;
    d->learn_from = step - 1;
    d->learn_loss = NAN;
    if (step <= d->band_last)
        d->band_n = 0, d->band_last = 0;
    if (step <= 1) {
        d->first_upd_lr = NAN;
        d->start_step = 0;
        d->first_loss = 0;
    }
    if (step <= d->change_at) /* the change is in force from the snapshot now, or undone */
        d->change_at = 0;
    if (step <= d->spike_at) /* back to before the spike: another timeline's */
        d->spike_at = 0;
    if (step <= d->exc_at + 1) /* back to before the changes: their run is over */
        d->exc_at = 0, d->exc_now = NAN;
    d->trend_from = 0; /* the ring is empty: every point is of the settings in force */
}

/* A finite validation: its minimum so far, and the evaluations in a row
 * above it by DIAG_OVERFIT_MARGIN while the training loss (the mean of
 * DIAG_LEARN_MEAN steps) is below what it was at the minimum. */
static void track_val(diag *d, const step_metrics *m)
{
    if (!m->has_val || !metrics_known(m, METRICS_COL_VAL) || !isfinite(m->val_loss))
        return;
    int cnt;
    float train = (float)recent_loss(d, 0, &cnt);
    d->val_last = m->val_loss, d->val_last_step = m->step, d->val_last_train = train;
    if (d->val_n == 0 || m->val_loss < d->val_min) {
        d->val_min = m->val_loss, d->val_min_step = m->step, d->val_min_train = train;
        d->val_above = 0;
    } else if (m->val_loss > d->val_min + DIAG_OVERFIT_MARGIN && train < d->val_min_train) {
        d->val_above++;
    } else {
        d->val_above = 0;
    }
    d->val_n++;
}

/* Validation above its own minimum for DIAG_OVERFIT_EVALS evaluations
 * while training falls: the model learns its training text by heart.
 * value {val now, its minimum, the minimum's step, train now}. */
static void rule_overfit(diag *d, const step_metrics *m, diag_finding *out, int max, int *k)
{
    if (d->val_above < DIAG_OVERFIT_EVALS || (d->warned & (1u << DIAG_R_OVERFIT)))
        return;
    d->warned |= 1u << DIAG_R_OVERFIT;
    double v[4] = {d->val_last, d->val_min, (double)d->val_min_step, d->val_last_train};
    add(out, max, k, DIAG_DIAGNOSIS, DIAG_R_OVERFIT, -1, m->step, v,
        "more data or a smaller model; the weights of the minimum are those of its step",
        "overfitting: validation %.3f, %.3f above its minimum %.3f at step %ld, on %d "
        "evaluations in a row; train %.3f (%.3f at the minimum)",
        (double)d->val_last, (double)(d->val_last - d->val_min), (double)d->val_min,
        d->val_min_step, d->val_above, (double)d->val_last_train, (double)d->val_min_train);
}

/* How far the loss fell since learning is judged (learn_from) and how
 * far it must: DIAG_LEARN_FRAC of the way from its first loss there to
 * the plateau (to 0 when the plateau is not known). need is NaN when that
 * first loss is within DIAG_STALL_ABOVE of the plateau or below it: the
 * stall rule's ground, or a run past the byte frequencies. */
typedef struct {
    long steps;   /* since learn_from */
    int cnt;      /* points in now's mean */
    double now, fell, need, to;
} learn_state;

static learn_state learn_of(const diag *d, long step)
{
    learn_state s;
    s.steps = step - d->learn_from;
    s.now = recent_loss(d, d->learn_from, &s.cnt);
    s.fell = d->learn_loss - s.now;
    s.to = isfinite(d->plateau) ? d->plateau : 0;
    double gap = d->learn_loss - s.to;
    s.need = gap > DIAG_STALL_ABOVE ? DIAG_LEARN_FRAC * gap : NAN;
    return s;
}

static int not_learning(const learn_state *s)
{
    return s->steps >= DIAG_LEARN_STEPS && s->cnt >= DIAG_LEARN_MEAN && s->fell < s->need;
}

/* Learning too slowly for its LR: DIAG_LEARN_STEPS steps or more since
 * learning is judged and the mean loss still more than DIAG_STALL_ABOVE
 * above the plateau (a healthy run passes it by step 100), while the top
 * layer's weights move less than DIAG_UPDATE_LOW a step (LR 1e-5, 4
 * blocks: 5.3 at step 300, update ratio 4e-5; at LR 1e-4, 1.5e-4, it is
 * not called so). 1 with that mean update ratio in *upd. */
static int learning_slow(const diag *d, const learn_state *s, int L, double *upd)
{
    int cnt;
    if (s->steps < DIAG_LEARN_STEPS || s->cnt < DIAG_LEARN_MEAN || !isfinite(d->plateau) ||
        !(s->now > d->plateau + DIAG_STALL_ABOVE) || L < 1)
        return 0;
    *upd = mean_top_update(d, L, &cnt);
    return cnt >= DIAG_WINDOW / 2 && *upd < DIAG_UPDATE_LOW;
}

/* Gradients lost to underflow, read from the counts themselves: over the
 * window's updates, the share whose gradient norm is exactly 0, and the
 * values a step rounded to 0 or a subnormal (every layer's underflow
 * column). 1 when the share is DIAG_UNDERFLOW_SHARE or more and some
 * were counted: the loss scale (or the format) is the cause, not the LR,
 * whose update ratio is then 0 because nothing reached the weights. */
static int underflow_lost(const diag *d, int L, int *zero, int *cnt, double *per_step)
{
    double uf = 0;
    *zero = *cnt = 0;
    for (long a = 0; a < kept(d); a++) {
        const diag_point *p = point(d, a);
        if (!p->updated)
            continue;
        ++*cnt;
        *zero += p->gnorm == 0.0f;
        for (int l = 0; l < L; l++)
            uf += isfinite(p->lc[METRICS_LC_UNDERFLOW][l]) ? p->lc[METRICS_LC_UNDERFLOW][l] : 0;
    }
    *per_step = *cnt ? uf / *cnt : 0;
    return *cnt > 0 && *zero >= DIAG_UNDERFLOW_SHARE * *cnt && uf > 0;
}

/* Not learning, its gradients lost to underflow: value {zero steps,
 * steps, underflows a step, loss scale}. 1 when found. */
static int not_learning_underflow(diag *d, const step_metrics *m, const learn_state *s,
                                  diag_finding *out, int max, int *k)
{
    int zero, cnt;
    double per;
    if (!underflow_lost(d, m->n_layer, &zero, &cnt, &per))
        return 0;
    float scale = point(d, 0)->scale;
    double v[4] = {zero, cnt, per, scale};
    diag_finding *f = add(out, max, k, DIAG_DIAGNOSIS, DIAG_R_UNDERFLOW, -1, m->step, v,
        "raise the loss scale (loss-scale dynamic: GradScaler's, from 65536) or train in bf16, "
        "whose range is fp32's",
        "not learning: loss %.3f from %.3f in %ld steps; gradients lost to underflow: the "
        "gradient norm is 0 on %d of %d steps, %.0f values a step rounded to 0 in %s at loss "
        "scale %g", s->now, d->learn_loss, s->steps, zero, cnt, per,
        numfmt_name(metrics_precision(m)), (double)scale);
    set_fix(f, DIAG_FROM_HERE, 0, "loss-scale dynamic");
    return 1;
}

/* DIAG_EXC_AFTER steps after the latest of a run of setting changes, their
 * effect against the loss before the first: a mean loss DIAG_EXC_WORSE or
 * more above it is named, with the snapshot to go back to (an LR
 * excursion that the restored LR does not undo). value {now, before,
 * first change, latest}. */
static void rule_excursion(diag *d, const step_metrics *m, diag_finding *out, int max, int *k)
{
    int cnt;
    if (d->exc_at == 0 || d->exc_judged || m->step - d->exc_last < DIAG_EXC_AFTER ||
        !isfinite(d->exc_loss))
        return;
    d->exc_judged = 1;
    double now = recent_loss(d, d->exc_last, &cnt);
    double noise = 2.0 * sqrt((d->exc_var + recent_var(d, d->exc_last)) / DIAG_LEARN_MEAN);
    if (cnt < DIAG_LEARN_MEAN || !(now > d->exc_loss + DIAG_EXC_WORSE) ||
        !(now > d->exc_loss + noise))
        return;
    d->exc_now = now;
    double v[4] = {now, d->exc_loss, (double)d->exc_at, (double)d->exc_last};
    char when[64], hint[96];
    snprintf(hint, sizeof hint, "go back to the snapshot at or before the first change (step "
             "%ld) and train on", d->exc_at);
    if (d->exc_last > d->exc_at)
        snprintf(when, sizeof when, "the changes at steps %ld-%ld", d->exc_at, d->exc_last);
    else
        snprintf(when, sizeof when, "the change at step %ld", d->exc_at);
    diag_finding *f = add(out, max, k, DIAG_DIAGNOSIS, DIAG_R_EXCURSION, -1, m->step, v,
        hint, "%s (%.60s) left the run worse: loss %.3f at step %ld, %.2f above %.3f before "
        "them (noise %.2f)", when, d->exc_what, now, m->step, now - d->exc_loss, d->exc_loss,
        noise);
    if (d->exc_undo[0])
        set_fix(f, DIAG_FROM_SNAPSHOT, d->exc_at, "%s", d->exc_undo);
}

/* The mean loss of the DIAG_LEARN_MEAN finite updated steps kept before
 * step `before`, their count in *cnt and their variance in *var. */
static double loss_before(const diag *d, long before, int *cnt, double *var)
{
    double sum = 0, sq = 0;
    *cnt = 0;
    for (long a = 0; a < kept(d) && *cnt < DIAG_LEARN_MEAN; a++) {
        const diag_point *p = point(d, a);
        if (p->step < before && p->updated && isfinite(p->loss))
            sum += p->loss, sq += (double)p->loss * p->loss, ++*cnt;
    }
    *var = *cnt > 1 ? (sq - sum * sum / *cnt) / (*cnt - 1) : NAN;
    return *cnt ? sum / *cnt : NAN;
}

/* After push: a step whose loss is above the early band's (the first
 * update's) once the run had fallen DIAG_STALL_ABOVE below it opens a
 * spike, or extends the open one; its peak is kept. A spike the mean loss
 * never comes back from is the blow-up rule's. */
static void track_spike(diag *d)
{
    const diag_point *p = point(d, 0);
    if (d->band_n < DIAG_BAND_STEPS || p->step <= d->band_last || !p->updated ||
        !(p->loss > d->band_loss))
        return;
    if (d->spike_at && !d->spike_judged) {
        d->spike_end = p->step;
        if (p->loss > d->spike_peak)
            d->spike_peak = p->loss, d->spike_peak_step = p->step;
        return;
    }
    int cnt;
    double var, from = loss_before(d, p->step, &cnt, &var);
    if (cnt < DIAG_LEARN_MEAN || !(from < d->band_loss - DIAG_STALL_ABOVE))
        return;
    d->spike_at = d->spike_end = d->spike_peak_step = p->step;
    d->spike_peak = p->loss;
    d->spike_from = from, d->spike_var = var;
    d->spike_judged = 0;
}

/* DIAG_EXC_AFTER steps after a spike's last step above the start: where
 * the run is now against the DIAG_LEARN_MEAN steps before it, as the
 * excursion rule judges a change. No fix is offered: a rewind replays
 * the same batches, and a lower LR from the snapshot before it was not
 * measured against the run left alone. value {peak, from, now, start}. */
static void rule_spike(diag *d, const step_metrics *m, diag_finding *out, int max, int *k)
{
    int cnt;
    if (!d->spike_at || d->spike_judged || d->exploded || m->step - d->spike_end < DIAG_EXC_AFTER)
        return;
    d->spike_judged = 1;
    double now = recent_loss(d, d->spike_end, &cnt);
    double noise = 2.0 * sqrt((d->spike_var + recent_var(d, d->spike_end)) / DIAG_LEARN_MEAN);
    int worse = now > d->spike_from + DIAG_EXC_WORSE && now > d->spike_from + noise;
    double v[4] = {d->spike_peak, d->spike_from, now, d->band_loss};
    add(out, max, k, DIAG_DIAGNOSIS, DIAG_R_SPIKE, -1, m->step, v, worse ?
        "no fix known to beat the run left alone; a lower LR or clip makes the next rarer" :
        "none needed: it recovered; a lower LR or clip makes the next rarer",
        "blew up and recovered: loss spike at step %ld, peak %.3f at step %ld, above the first "
        "update's %.3f; from %.3f (%d steps before); %s %.3f at step %ld, %+.2f (noise %.2f)",
        d->spike_at, (double)d->spike_peak, d->spike_peak_step, (double)d->band_loss,
        d->spike_from, DIAG_LEARN_MEAN, worse ? "ended worse:" : "back to", now, m->step,
        now - d->spike_from, noise);
}

/* No real fall from the first loss after DIAG_LEARN_STEPS steps: the
 * stall rule's plateau is never reached. The cause from the direct
 * measures first (gradients lost to underflow), then the update ratio:
 * below DIAG_UPDATE_LOW the LR is too low. value {now, first, fell, need}. */
static void rule_not_learning(diag *d, const step_metrics *m, diag_finding *out, int max, int *k)
{
    learn_state s = learn_of(d, m->step);
    double upd;
    int slow = !not_learning(&s) && learning_slow(d, &s, m->n_layer, &upd);
    if ((d->warned & (1u << DIAG_R_NOT_LEARNING)) || !(not_learning(&s) || slow) ||
        m->n_layer < 1)
        return;
    d->warned |= 1u << DIAG_R_NOT_LEARNING;
    if (not_learning_underflow(d, m, &s, out, max, k))
        return;
    /* the cause: a clip that cut the gradients, an LR too low, or none known */
    int ucnt, clipped = 0, cnt = 0;
    double gsum = 0;
    upd = mean_top_update(d, m->n_layer, &ucnt);
    for (long a = 0; a < kept(d); a++) {
        const diag_point *p = point(d, a);
        clipped += p->clip > 0 && p->gnorm > p->clip;
        gsum += isfinite(p->gnorm) ? p->gnorm : 0, cnt++;
    }
    char why[DIAG_TEXT], head[DIAG_TEXT];
    int clip = clip_cut_named(m, clipped, cnt, gsum, upd, why, sizeof why);
    int low = !clip && upd < DIAG_UPDATE_LOW;
    if (low)
        snprintf(why, sizeof why, "the LR %g is too low: update ratio %.2g a step",
                 (double)m->lr_peak, upd);
    else if (!clip)
        snprintf(why, sizeof why, "cause unknown: update ratio %.2g a step", upd);
    if (slow)
        snprintf(head, sizeof head, "learning too slowly: loss %.3f after %ld steps, still %.2f "
                 "above the plateau %.3f", s.now, s.steps, s.now - d->plateau, d->plateau);
    else
        snprintf(head, sizeof head, "not learning: loss %.3f from %.3f at step %ld in %ld steps: "
                 "fell %.3f, under %.3f (%g of the way to %s %.3f)", s.now, d->learn_loss,
                 d->learn_from + 1, s.steps, s.fell, s.need, DIAG_LEARN_FRAC,
                 isfinite(d->plateau) ? "the plateau" : "0", s.to);
    double v[4] = {s.now, d->learn_loss, s.fell, s.need};
    diag_finding *f = add(out, max, k, DIAG_DIAGNOSIS, DIAG_R_NOT_LEARNING, -1, m->step, v,
        low ? "raise the LR (lr x10)" : clip ? "raise the clip or turn it off (clip 0)"
                                             : "no rule names a cause: compare a run with another LR",
        "%.*s; %.*s", DIAG_TEXT / 2, head, DIAG_TEXT / 2 + 24, why);
    if (low || clip)
        set_fix(f, DIAG_FROM_HERE, 0, low ? "lr x10" : "clip 0");
}

/* ---- early warnings while finite: the LR, growth, the start --------------- */

/* The top layer's update ratio and the growth of the largest act max
 * over the early band's, now. */
typedef struct {
    int cnt, layer, span; /* span: updated steps kept, cnt: those that said an update ratio */
    double upd, act, grown, rate; /* rate: doublings per 100 steps (least squares) */
    double share; /* the update per unit LR over the first update's (upd_share_over) */
    int high;     /* lr_high_by's answer, its words in by */
    char by[160];
} lr_state;

/* Where activation growth is measured from: the early band's act max, or
 * the unit scale a norm sets when the run started below it (no norms);
 * its words in what ("its 0.267 at the first step", "the unit scale (its
 * 0.0213 at the first step)"). */
static double act_base(const diag *d, char *what, size_t len)
{
    double b = d->band_act >= DIAG_ACT_UNIT ? d->band_act : DIAG_ACT_UNIT;
    if (what && d->band_act >= DIAG_ACT_UNIT)
        snprintf(what, len, "its %.3g at the first step", (double)d->band_act);
    else if (what)
        snprintf(what, len, "the unit scale (its %.3g at the first step)", (double)d->band_act);
    return b;
}

static lr_state lr_of(const diag *d, int L)
{
    lr_state s = {0, -1, 0, NAN, NAN, NAN, NAN, NAN, 0, ""};
    if (L < 1 || kept(d) == 0)
        return s;
    /* the update ratios of the LR in force: a window that still holds an
     * earlier LR's steps would blame this one for them */
    long since = point(d, 0)->step - d->lr_since;
    long span = since < DIAG_WINDOW ? since : DIAG_WINDOW;
    s.upd = mean_top_update_over(d, L, &s.cnt, span);
    s.share = upd_share_over(d, L, span);
    s.high = lr_high_by(d, s.share, s.upd, s.by, sizeof s.by);
    for (long a = 0; a < kept(d) && a < span; a++)
        s.span += point(d, a)->updated;
    s.act = point_act_max(point(d, 0), L, &s.layer);
    s.grown = d->band_n >= DIAG_BAND_STEPS && d->band_act > 0 ? s.act / act_base(d, NULL, 0) : NAN;
    s.rate = s.layer >= 0 ? slope(d, s.layer, 0) * 100 : NAN;
    return s;
}

/* Enough update ratios for their mean: over DIAG_WINDOW/2 updated steps
 * or more, at least DIAG_SPARSE_MIN of them said one (every one in the
 * lab; every 10th from the probe's default). */
static int lr_enough(const lr_state *s)
{
    return s->span >= DIAG_WINDOW / 2 && s->cnt >= DIAG_SPARSE_MIN;
}

static int lr_warns(const lr_state *s)
{
    return s->grown > DIAG_ACT_GROW && s->high && lr_enough(s);
}

/* While finite: the top layer's update per unit LR fell under
 * DIAG_UPDATE_KEEP of its first update's and the activations grew DIAG_ACT_GROW-fold over the early band
 * (Adam's steps of about the LR per weight inflate them): the LR is too
 * high, as at a divergence, before one. Growth alone, still rising, is
 * its own warning. */
static void rule_lr_warn(diag *d, const step_metrics *m, diag_finding *out, int max, int *k)
{
    lr_state s = lr_of(d, m->n_layer);
    if (!(s.grown > DIAG_ACT_GROW))
        return;
    char base[64];
    act_base(d, base, sizeof base);
    double v[4] = {s.upd, s.act, s.grown, s.rate};
    if (lr_warns(&s) && !(d->warned & (1u << DIAG_R_LR_WARN))) {
        d->warned |= 1u << DIAG_R_LR_WARN;
        char by[128];
        if (s.high == LR_BY_SHARE)
            snprintf(by, sizeof by, "update per unit LR is %.3g of its first update's %.3g "
                     "(mean of %d; under %g)", s.share, (double)d->first_upd_lr, s.cnt,
                     DIAG_UPDATE_KEEP);
        else if (s.high == LR_BY_HUGE)
            snprintf(by, sizeof by, "update ratio is %.2g a step (mean of %d; above %g)",
                     s.upd, s.cnt, DIAG_UPDATE_HUGE);
        else
            snprintf(by, sizeof by, "update ratio is %.2g a step (mean of %d; above %g, its "
                     "first not said)", s.upd, s.cnt, DIAG_UPDATE_HIGH);
        diag_finding *f = add(out, max, k, DIAG_WARNING, DIAG_R_LR_WARN, m->n_layer - 1,
            m->step, v, "go back to a snapshot still in the early band and lower the LR",
            "LR %g too high for this run: the top layer's %s, act max %.4g (layer %d) is %.0fx "
            "%s", (double)m->lr_peak, by, s.act, s.layer, s.grown, base);
        set_fix(f, DIAG_FROM_SNAPSHOT, m->step, "lr x%g", lr_factor(s.upd));
    } else if (!lr_warns(&s) && s.rate > DIAG_GROWTH_MIN &&
               !(d->warned & ((1u << DIAG_R_GROWTH_WARN) | (1u << DIAG_R_LR_WARN)))) {
        d->warned |= 1u << DIAG_R_GROWTH_WARN;
        diag_finding *f = add(out, max, k, DIAG_WARNING, DIAG_R_GROWTH_WARN, s.layer, m->step,
            v, "lower the LR before the activations meet the format's limit",
            "layer %d act max %.4g is %.0fx %s and growing %.2f doublings/100 steps "
            "(least-squares rate over the window)", s.layer, s.act, s.grown, base, s.rate);
        set_fix(f, DIAG_FROM_HERE, 0, "lr x0.5");
    }
}

/* Attention logit growth (Dehghani et al. 2023; Wortsman et al. 2023): a
 * layer whose largest attention logit grew DIAG_ATTN_GROW-fold from the
 * first step seen, past DIAG_ATTN_LOGIT, while its attention entropy fell
 * under DIAG_ATTN_ENTROPY of its first step's. Read from the layer columns
 * alone: a stream that does not say them has NaN there, and no comparison
 * with NaN holds. The fix: QK-norm from here (it bounds the logits at
 * once); with QK-norm on already, only the advice of a lower LR.
 * value {layer's logit max, its first, entropy, its first}. */
static void rule_attn_logits(diag *d, const step_metrics *m, diag_finding *out, int max, int *k)
{
    const diag_point *p = point(d, 0);
    int L = m->n_layer < NS_MAX_LAYERS ? m->n_layer : NS_MAX_LAYERS, hit = -1;
    if (!p->updated)
        return;
    if (d->attn_base_step == 0 || m->step <= d->attn_base_step) { /* the start, or rewound to it */
        d->attn_base_step = m->step;
        for (int l = 0; l < L; l++) {
            d->attn_base[l] = diag_point_lc(p, METRICS_LC_ATTN_LOGIT, l);
            d->attn_ent_base[l] = diag_point_lc(p, METRICS_LC_ATTN_ENTROPY, l);
        }
        return;
    }
    if (d->warned & (1u << DIAG_R_ATTN_LOGITS))
        return;
    float x = 0, e = 0; /* the collapsed layer's (the lowest entropy of those that hold) */
    for (int l = 0; l < L; l++) {
        float xl = diag_point_lc(p, METRICS_LC_ATTN_LOGIT, l);
        float el = diag_point_lc(p, METRICS_LC_ATTN_ENTROPY, l);
        if (xl >= DIAG_ATTN_LOGIT && xl >= DIAG_ATTN_GROW * d->attn_base[l] &&
            el <= DIAG_ATTN_ENTROPY * d->attn_ent_base[l] && (hit < 0 || el < e))
            hit = l, x = xl, e = el;
    }
    if (hit < 0)
        return;
    d->warned |= 1u << DIAG_R_ATTN_LOGITS;
    double v[4] = {x, d->attn_base[hit], e, d->attn_ent_base[hit]};
    int qk = metrics_setting_known(m, "qk_norm") && metrics_setting(m, "qk_norm") != 0;
    diag_finding *f = add(out, max, k, DIAG_DIAGNOSIS, DIAG_R_ATTN_LOGITS, hit, m->step, v,
        qk ? "QK-norm is on: lower the LR"
           : "QK-norm (qk-norm on) bounds the logits; or a lower LR",
        "attention logits grew %.0fx: layer %d's largest %.4g (%.3g at step %ld), its attention "
        "entropy %.3g nats (%.3g then): each query attends to one key, the softmax saturated",
        (double)(x / d->attn_base[hit]), hit, (double)x, (double)d->attn_base[hit],
        d->attn_base_step, (double)e, (double)d->attn_ent_base[hit]);
    if (!qk)
        set_fix(f, DIAG_FROM_HERE, 0, "qk-norm on");
}

/* Is step 1 sane: its loss within DIAG_START_LOSS of ln(vocab) (when
 * the vocabulary is known), its gradient norm under DIAG_START_GNORM?
 * 1 when not, with why; 0 when sane or not known. */
static int start_bad(const diag *d, char *why, size_t len)
{
    double ln = d->vocab > 0 ? ns_log((double)d->vocab) : NAN;
    if (d->start_step != 1)
        return 0;
    if (d->start_loss > ln + DIAG_START_LOSS) {
        snprintf(why, len, "step 1's loss %.3f is %.2f nats above ln %d = %.3f, a uniform "
                 "guess's: the init predicts confidently wrong", (double)d->start_loss,
                 d->start_loss - ln, d->vocab, ln);
        return 1;
    }
    if (d->start_gnorm == 0.0f) {
        snprintf(why, len, "the first update's gradient norm is 0 (step %ld): no gradient "
                 "reached the weights", d->start_gnorm_step);
        return 1;
    }
    if (d->start_gnorm > DIAG_START_GNORM) {
        snprintf(why, len, "the first update's gradient norm %.4g (step %ld) is above %g: the "
                 "init's scale", (double)d->start_gnorm, d->start_gnorm_step, DIAG_START_GNORM);
        return 1;
    }
    return 0;
}

static void rule_start(diag *d, const step_metrics *m, diag_finding *out, int max, int *k)
{
    char why[DIAG_TEXT];
    /* once: at step 1, or at the first update after it */
    if ((m->step != 1 && m->step != d->start_gnorm_step) || (d->warned & (1u << DIAG_R_START)) ||
        !start_bad(d, why, sizeof why))
        return;
    d->warned |= 1u << DIAG_R_START;
    double v[4] = {d->start_loss, d->start_gnorm, (double)d->vocab, 0};
    add(out, max, k, DIAG_WARNING, DIAG_R_START, -1, m->step, v,
        d->start_gnorm == 0.0f
            ? "in fp16 a loss scale too small rounds every gradient to 0 (loss-scale dynamic); "
              "else the init's gains (--ln-gamma-init)"
            : "a smaller init (--init-std, --ln-gamma-init), so the first logits are near 0",
        "%s", why);
}

/* After push, on a finite step: the rules of the checks. */
static void check_rules(diag *d, const step_metrics *m, diag_finding *out, int max, int *k)
{
    track_start(d, m);
    track_val(d, m);
    rule_start(d, m, out, max, k);
    rule_not_learning(d, m, out, max, k);
    rule_overfit(d, m, out, max, k);
    rule_lr_warn(d, m, out, max, k);
    rule_attn_logits(d, m, out, max, k);
}

/* ---- the checks ------------------------------------------------------------ */

static void check_set(diag_check *c, const char *q, diag_answer a, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void check_set(diag_check *c, const char *q, diag_answer a, const char *fmt, ...)
{
    c->question = q;
    c->answer = a;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->text, sizeof c->text, fmt, ap);
    va_end(ap);
}

double diag_recent_loss(const diag *d)
{
    int cnt;
    return recent_loss(d, 0, &cnt);
}

const char *diag_answer_name(diag_answer a)
{
    return a == DIAG_Q_OK ? "ok" : a == DIAG_Q_BAD ? "no" : "not yet known";
}

static void check_start(const diag *d, diag_check *c)
{
    const char *q = "did it start sane";
    char why[DIAG_TEXT];
    if (d->start_step == 0)
        check_set(c, q, DIAG_Q_UNKNOWN, "not yet known: no step yet");
    else if (d->start_step != 1 && d->resumed_blind)
        check_set(c, q, DIAG_Q_UNKNOWN, "not known: resumed after step %ld from a checkpoint "
                  "without the diagnosis' state (older than version 6)", d->resumed_blind);
    else if (d->start_step != 1)
        check_set(c, q, DIAG_Q_UNKNOWN, "not yet known: first seen at step %ld, not 1",
                  d->start_step);
    else if (start_bad(d, why, sizeof why))
        check_set(c, q, DIAG_Q_BAD, "%s", why);
    else if (d->vocab <= 0 || !isfinite(d->start_loss) || !isfinite(d->start_gnorm))
        check_set(c, q, DIAG_Q_UNKNOWN, "not yet known: %s", d->vocab <= 0 ?
                  "the vocabulary size is not said" : !isfinite(d->start_loss) ?
                  "step 1's loss is not said" : "no update's gradient norm yet");
    else
        check_set(c, q, DIAG_Q_OK, "step 1: loss %.3f (ln %d = %.3f); gradient norm %.3g at "
                  "the first update (step %ld)", (double)d->start_loss, d->vocab,
                  ns_log((double)d->vocab), (double)d->start_gnorm, d->start_gnorm_step);
}

static void check_finite(const diag *d, diag_check *c)
{
    const char *q = "is every value finite";
    if (d->last_step == 0)
        check_set(c, q, DIAG_Q_UNKNOWN, "not yet known: no step yet");
    else if (d->last_nonfinite)
        check_set(c, q, DIAG_Q_BAD, "not finite since step %ld (%s)", d->last_fault_step,
                  d->last_fault[0] ? d->last_fault : "the loss");
    else if (d->exploded)
        check_set(c, q, DIAG_Q_BAD, "the loss blew up, finite, from step %ld", d->blow_from);
    else if (d->spike_at)
        check_set(c, q, DIAG_Q_BAD, "the loss blew up, finite, at step %ld: %.3f at step %ld, "
                  "above the first update's %.3f, from %.3f%s", d->spike_at,
                  (double)d->spike_peak, d->spike_peak_step, (double)d->band_loss,
                  d->spike_from, d->spike_judged ? "; it came back" : "");
    else
        check_set(c, q, DIAG_Q_OK, "every step finite since step %ld, no blow-up",
                  d->last_step - d->finite_run + 1);
}

static void check_learning(const diag *d, diag_check *c)
{
    const char *q = "is it learning";
    learn_state s = learn_of(d, d->last_step);
    const char *to = isfinite(d->plateau) ? "the plateau" : "0";
    double upd;
    int ecnt;
    double enow = d->exc_at ? recent_loss(d, d->exc_last, &ecnt) : NAN;
    if (d->stalled)
        check_set(c, q, DIAG_Q_BAD, "stalled on the plateau %.3f since step %ld",
                  d->plateau, d->stall_at);
    else if (isfinite(d->exc_now) && enow > d->exc_loss + DIAG_EXC_WORSE &&
             enow > d->exc_loss + 2.0 * sqrt((d->exc_var + recent_var(d, d->exc_last)) /
                                             DIAG_LEARN_MEAN))
        check_set(c, q, DIAG_Q_BAD, "loss %.3f, %.2f above %.3f before the change at step %ld "
                  "(%.60s)", enow, enow - d->exc_loss, d->exc_loss, d->exc_at, d->exc_what);
    else if (isnan(d->learn_loss) || s.cnt == 0)
        check_set(c, q, DIAG_Q_UNKNOWN, "not yet known: no finite loss since step %ld",
                  d->learn_from);
    else if (isnan(s.need))
        check_set(c, q, DIAG_Q_OK, "loss %.3f from %.3f at step %ld: started within %g of %s "
                  "%.3f or below it: judged by the plateau rule", s.now, d->learn_loss,
                  d->learn_from + 1, DIAG_STALL_ABOVE, to, s.to);
    else if (learning_slow(d, &s, d->n_layer, &upd))
        check_set(c, q, DIAG_Q_BAD, "loss %.3f after %ld steps, still %.2f above %s %.3f: too "
                  "slow, update ratio %.2g a step", s.now, s.steps, s.now - s.to, to, s.to, upd);
    else if (s.fell >= s.need)
        check_set(c, q, DIAG_Q_OK, "loss %.3f (mean of %d steps) from %.3f at step %ld: fell "
                  "%.3f (%.3f needed, %g of the way to %s %.3f)", s.now, s.cnt, d->learn_loss,
                  d->learn_from + 1, s.fell, s.need, DIAG_LEARN_FRAC, to, s.to);
    else if (not_learning(&s))
        check_set(c, q, DIAG_Q_BAD, "loss %.3f from %.3f at step %ld: fell %.3f in %ld steps, "
                  "under the %.3f needed", s.now, d->learn_loss, d->learn_from + 1, s.fell,
                  s.steps, s.need);
    else
        check_set(c, q, DIAG_Q_UNKNOWN, "not yet known: fell %.3f of %.3f in %ld steps of %d",
                  s.fell, s.need, s.steps, DIAG_LEARN_STEPS);
}

static void check_val(const diag *d, diag_check *c)
{
    const char *q = "does validation follow training";
    double gap = (double)d->val_last - d->val_last_train;
    if (d->val_n == 0)
        check_set(c, q, DIAG_Q_UNKNOWN, "not yet known: no finite validation yet");
    else if (d->val_n == 1 && isnan(gap))
        check_set(c, q, DIAG_Q_UNKNOWN, "not yet known: val %.3f at step %ld, no training loss "
                  "then, on 1 validation", (double)d->val_last, d->val_last_step);
    else if (d->val_n == 1) /* one point: against the training loss at its step */
        check_set(c, q, gap > DIAG_OVERFIT_MARGIN ? DIAG_Q_BAD : DIAG_Q_OK, "val %.3f at step "
                  "%ld, %.3f %s train %.3f there (%s %g above), on 1 validation",
                  (double)d->val_last, d->val_last_step, fabs(gap), gap > 0 ? "above" : "below",
                  (double)d->val_last_train,
                  gap > DIAG_OVERFIT_MARGIN ? "more than" : "not more than", DIAG_OVERFIT_MARGIN);
    else if (d->val_above >= DIAG_OVERFIT_EVALS)
        check_set(c, q, DIAG_Q_BAD, "val %.3f at step %ld, %.3f above its minimum %.3f at step "
                  "%ld for %d evaluations; train %.3f (%.3f then)", (double)d->val_last,
                  d->val_last_step, (double)(d->val_last - d->val_min), (double)d->val_min,
                  d->val_min_step, d->val_above, (double)d->val_last_train,
                  (double)d->val_min_train);
    else
        check_set(c, q, DIAG_Q_OK, "val %.3f at step %ld (train %.3f); its minimum %.3f at "
                  "step %ld", (double)d->val_last, d->val_last_step, (double)d->val_last_train,
                  (double)d->val_min, d->val_min_step);
}

static void check_lr(const diag *d, diag_check *c)
{
    const char *q = "is the LR within what the run tolerates";
    lr_state s = lr_of(d, d->n_layer);
    char base[64];
    act_base(d, base, sizeof base);
    if (s.span < DIAG_WINDOW / 2)
        check_set(c, q, DIAG_Q_UNKNOWN, "not yet known: %d steps of %d observed", s.span,
                  DIAG_WINDOW / 2);
    else if (!lr_enough(&s) || isnan(s.upd))
        check_set(c, q, DIAG_Q_UNKNOWN, "not yet known: an update ratio on %d of the last %d "
                  "steps, %d needed (the stream says it on some steps only)", s.cnt, s.span,
                  DIAG_SPARSE_MIN);
    else if (isnan(s.grown))
        check_set(c, q, DIAG_Q_UNKNOWN, "not yet known: update ratio %.2g a step over %d "
                  "points; the first step's act max is not said", s.upd, s.cnt);
    else if (lr_warns(&s))
        check_set(c, q, DIAG_Q_BAD, "update ratio %.2g a step over %d points, %s; act max "
                  "%.4g, %.0fx %s (too high: above %gx)", s.upd, s.cnt, s.by, s.act, s.grown,
                  base, DIAG_ACT_GROW);
    else
        check_set(c, q, DIAG_Q_OK, "update ratio %.2g a step over %d points, %s; act max "
                  "%.4g, %.1fx %s (too high: above %gx, with the update too high)", s.upd,
                  s.cnt, s.by, s.act, s.grown, base, DIAG_ACT_GROW);
}

static void check_headroom(const diag *d, diag_check *c)
{
    const char *q = "is there headroom";
    int lo = -1;
    const diag_point *p = kept(d) ? point(d, 0) : NULL;
    for (int l = 0; p && l < d->n_layer; l++)
        if (isfinite(head_of(p, l)) && (lo < 0 || head_of(p, l) < head_of(p, lo)))
            lo = l;
    double rate = lo >= 0 ? slope(d, lo, 1) * 100 : NAN;
    if (lo < 0)
        check_set(c, q, DIAG_Q_UNKNOWN, "not yet known: no layer's headroom");
    else if (head_of(p, lo) < DIAG_HEADROOM_WARN && -rate > DIAG_GROWTH_MIN)
        check_set(c, q, DIAG_Q_BAD, "%.2f doublings left (layer %d), falling %.2f/100 steps",
                  (double)head_of(p, lo), lo, -rate);
    else
        check_set(c, q, DIAG_Q_OK, "%.2f doublings left at the lowest (layer %d)",
                  (double)head_of(p, lo), lo);
}

static void check_gradient(const diag *d, diag_check *c)
{
    const char *q = "does the gradient reach the bottom layers";
    stall_window w;
    if (d->n_layer < 2) {
        check_set(c, q, d->n_layer ? DIAG_Q_OK : DIAG_Q_UNKNOWN, "%s", d->n_layer ?
                  "one block: no layer below the top" : "not yet known: no layers");
        return;
    }
    stall_sums(d, d->n_layer, &w);
    double ratio = w.top > 0 ? w.bottom / w.top : NAN;
    if (w.cnt < DIAG_LEARN_MEAN || isnan(ratio))
        check_set(c, q, DIAG_Q_UNKNOWN, "not yet known: %d steps of %d with gradients",
                  w.cnt, DIAG_LEARN_MEAN);
    else if (ratio < DIAG_STALL_GRAD || (d->warned & (1u << DIAG_R_UPDATE)))
        check_set(c, q, DIAG_Q_BAD, "the bottom quarter's gradient is %.2g of the top's (mean "
                  "of %d steps)%s", ratio, w.cnt, ratio < DIAG_STALL_GRAD ? "" :
                  "; a layer's update ratio vanished");
    else
        check_set(c, q, DIAG_Q_OK, "the bottom quarter's gradient is %.2g of the top's (mean of "
                  "%d steps)", ratio, w.cnt);
}

int diag_checks(const diag *d, diag_check *out, int max)
{
    diag_check all[DIAG_CHECKS];
    check_start(d, &all[DIAG_C_START]);
    check_finite(d, &all[DIAG_C_FINITE]);
    check_learning(d, &all[DIAG_C_LEARNING]);
    check_val(d, &all[DIAG_C_VAL]);
    check_lr(d, &all[DIAG_C_LR]);
    check_headroom(d, &all[DIAG_C_HEADROOM]);
    check_gradient(d, &all[DIAG_C_GRADIENT]);
    int n = max < DIAG_CHECKS ? max : DIAG_CHECKS;
    memcpy(out, all, (size_t)(n > 0 ? n : 0) * sizeof *out);
    return n > 0 ? n : 0;
}

int diag_healthy(const diag *d)
{
    diag_check c[DIAG_CHECKS];
    int n = diag_checks(d, c, DIAG_CHECKS);
    for (int i = 0; i < n; i++)
        if (c[i].answer != DIAG_Q_OK)
            return 0;
    return n == DIAG_CHECKS;
}

int diag_snapshot_healthy(const diag *d, const step_metrics *m, char *why, size_t len)
{
    int L = m ? m->n_layer : 0, la = -1;
    char base[64];
    if (!m || d->band_n < DIAG_BAND_STEPS || L < 1) {
        snprintf(why, len, "the early band is not known");
        return -1;
    }
    float act = NAN;
    for (int l = 0; l < L && l < NS_MAX_LAYERS; l++)
        if (isfinite(m->layer[l].act_max) && !(m->layer[l].act_max <= act))
            act = m->layer[l].act_max, la = l;
    double upd = m->layer[L - 1].update_ratio;
    if (m->nonfinite || !isfinite(m->loss))
        snprintf(why, len, "step %ld was not finite", m->step);
    else if (m->loss > d->band_loss + DIAG_STALL_ABOVE)
        snprintf(why, len, "loss %.3f is above the first step's %.3f", (double)m->loss,
                 (double)d->band_loss);
    else if (!(act <= DIAG_BAND_ACT * act_base(d, NULL, 0)))
        snprintf(why, len, "act max %.4g (layer %d) is %.0fx %s", act, la,
                 act / act_base(d, base, sizeof base), base);
    else if (upd > DIAG_UPDATE_HIGH)
        snprintf(why, len, "update ratio %.2g is above %g", upd, DIAG_UPDATE_HIGH);
    else {
        snprintf(why, len, "loss %.3f, act max %.4g (first step %.3g), update ratio %.2g: in the "
                 "band", (double)m->loss, act, (double)d->band_act, upd);
        return 1;
    }
    return 0;
}

int diag_observe(diag *d, const step_metrics *m, diag_finding *out, int max)
{
    int k = 0;
    d->stall_over = 0; /* news of this step only */
    if (m->n_layer < 1)
        return 0; /* nothing to read a top or a bottom layer from */
    /* what the data says travels in the metrics: the step's own plateau,
     * else the one given at init */
    d->plateau = isfinite(m->data_entropy) ? m->data_entropy : d->plateau_given;
    if (m->vocab > 0)
        d->vocab = m->vocab;
    d->n_layer = m->n_layer < NS_MAX_LAYERS ? m->n_layer : NS_MAX_LAYERS;
    track_changes(d, m, out, max, &k);
    /* the first step of a non-finite episode is the one to name: a followed
     * run goes on writing non-finite steps after it (45 first, 61 last) */
    if (m->nonfinite && !d->last_nonfinite) {
        d->last_fault_step = m->step;
        snprintf(d->last_fault, sizeof d->last_fault, "%s", m->fault);
    }
    d->last_nonfinite = m->nonfinite;
    if (m->nonfinite) {
        d->finite_run = 0;
        if (!d->div_seen) /* once: --on-diverge continue repeats it every step */
            diagnose_divergence(d, m, out, max, &k);
    } else {
        /* DIAG_WINDOW finite steps in a row (--on-diverge continue): the
         * next divergence is news again */
        if (++d->finite_run >= DIAG_WINDOW)
            d->div_seen = 0;
        rule_val_nan(d, m, out, max, &k);
        rule_headroom(d, m, out, max, &k);
        if (!(d->warned & (1u << DIAG_R_SCALE)) &&
            rule_scale(d, m, DIAG_WARNING, out, max, &k))
            d->warned |= 1u << DIAG_R_SCALE;
    }
    push(d, m);
    if (!m->nonfinite) {
        check_rules(d, m, out, max, &k);
        rule_update(d, m, out, max, &k);
        rule_blowup(d, m, out, max, &k);
        rule_excursion(d, m, out, max, &k);
        track_spike(d);
        rule_spike(d, m, out, max, &k);
        if (!d->exploded)
            rule_stall(d, m, out, max, &k);
        else
            d->stalled = 0;
    }
    d->last_step = m->step;
    return k;
}

/* ---- rewind targets -------------------------------------------------------- */

double diag_least_headroom(const step_metrics *m, int *layer)
{
    double lo = NAN;
    *layer = -1;
    for (int l = 0; m && l < m->n_layer; l++)
        if (isfinite(m->layer[l].headroom) && !(m->layer[l].headroom >= lo)) {
            lo = m->layer[l].headroom;
            *layer = l;
        }
    return lo;
}

int diag_snapshot_text(long step, const step_metrics *m, long step2, const step_metrics *m2,
                       const char *again, char *buf, size_t len)
{
    int l, l2;
    double h = diag_least_headroom(m, &l), h2 = diag_least_headroom(m2, &l2);
    if (isnan(h)) {
        snprintf(buf, len, "step %ld (its headroom is not known)", step);
        return 0;
    }
    int offer = h < DIAG_SNAP_NEAR && step2 > 0 && !(h2 <= h);
    char earlier[96] = "";
    if (offer && isnan(h2))
        snprintf(earlier, sizeof earlier, "; step %ld is earlier (%s)", step2, again);
    else if (offer)
        snprintf(earlier, sizeof earlier, "; step %ld had %.2g (%s)", step2, h2, again);
    snprintf(buf, len, "step %ld, headroom %.2g (layer %d)%s", step, h, l, earlier);
    return offer;
}
