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

#include "numfmt.h"

static const char *const rule_names[DIAG_R_COUNT] = {
    "headroom", "val-nan", "scale", "update", "resumed", "stall", "norm-variance", "growth", "lr"};

const char *diag_rule_name(diag_rule r)
{
    return r >= 0 && r < DIAG_R_COUNT ? rule_names[r] : "?";
}

void diag_init(diag *d, double plateau)
{
    memset(d, 0, sizeof *d);
    d->plateau = plateau;
    d->changed_at = -1;
    d->lr_raised_at = -1;
    d->warmup_off_at = -1;
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

static void push(diag *d, const step_metrics *m)
{
    diag_point *p = &d->hist[d->n % DIAG_WINDOW];
    p->step = m->step;
    p->updated = !m->nonfinite && !m->skipped;
    p->loss = m->loss;
    p->lr = m->lr;
    p->scale = m->loss_scale;
    for (int l = 0; l < m->n_layer && l < NS_MAX_LAYERS; l++) {
        p->grad[l] = layer_grad(&m->layer[l]);
        p->act[l] = m->layer[l].act_max;
        p->upd[l] = m->layer[l].update_ratio;
        p->head[l] = m->layer[l].headroom;
    }
    d->n++;
}

/* Least-squares slope per step of y over the points kept (finite y only);
 * which = 0 log2(act max), 1 headroom. NaN with fewer than 8 points. */
static double slope(const diag *d, int layer, int which)
{
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    int k = 0;
    for (long a = 0; a < kept(d); a++) {
        const diag_point *p = point(d, a);
        double y = which ? p->head[layer] : ns_log2(p->act[layer]);
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

static diag_settings settings_of(const step_metrics *m)
{
    diag_settings s;
    memset(&s, 0, sizeof s);
    s.lr_peak = m->lr_peak;
    s.clip = m->clip;
    s.warmup_on = m->warmup_on;
    s.precision = (int)m->precision;
    s.fp32_norms = m->fp32_norms;
    s.norm = (int)m->norm;
    s.norm_kind = (int)m->norm_kind;
    s.scale_dynamic = m->loss_scale_dynamic;
    return s;
}

static int settings_equal(const diag_settings *a, const diag_settings *b)
{
    return a->lr_peak == b->lr_peak && a->clip == b->clip && a->warmup_on == b->warmup_on &&
           a->precision == b->precision && a->fp32_norms == b->fp32_norms &&
           a->norm == b->norm && a->norm_kind == b->norm_kind &&
           a->scale_dynamic == b->scale_dynamic;
}

/* A new episode: the warnings may speak again, the stall is judged anew. */
static void new_episode(diag *d)
{
    d->warned = 0;
    d->stall_run = 0;
    d->stalled = 0;
}

static void add(diag_finding *out, int max, int *k, diag_kind kind, diag_rule rule, int layer,
                long step, const double v[4], const char *hint, const char *fmt, ...)
    __attribute__((format(printf, 10, 11)));

static void add(diag_finding *out, int max, int *k, diag_kind kind, diag_rule rule, int layer,
                long step, const double v[4], const char *hint, const char *fmt, ...)
{
    if (*k >= max)
        return;
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

/* Rewinds (a step number that goes back) and setting changes; the
 * "resumed with nothing changed" warning. */
static void track_changes(diag *d, const step_metrics *m, diag_finding *out, int max, int *k)
{
    diag_settings s = settings_of(m);
    if (d->last_step > 0 && m->step <= d->last_step) {
        d->n = 0; /* the ring's points are from the future now */
        new_episode(d);
        d->div_seen = 0;
        if (d->diverged_at >= m->step && settings_equal(&s, &d->diverged_set))
            warn_resumed(d, m->step - 1, out, max, k);
        d->diverged_at = 0;
        d->finite_run = 0;
    }
    if (!d->have_set) {
        if (!s.warmup_on)
            d->warmup_off_at = m->step - 1;
        d->lr_tolerated = s.lr_peak;
        d->lr_since = m->step - 1;
    } else if (!settings_equal(&s, &d->set)) {
        d->changed_at = m->step - 1;
        track_lr(d, s.lr_peak, m->step - 1);
        if (d->set.warmup_on && !s.warmup_on)
            d->warmup_off_at = m->step - 1;
        new_episode(d);
    }
    d->set = s;
    d->have_set = 1;
}

/* ---- warnings ------------------------------------------------------------ */

/* Headroom below DIAG_HEADROOM_WARN doublings and falling (the layer with
 * the least): where it is and when it crosses at this rate. */
static void rule_headroom(diag *d, const step_metrics *m, diag_finding *out, int max, int *k)
{
    int lo = -1;
    for (int l = 0; l < m->n_layer; l++) {
        float h = m->layer[l].headroom;
        if (isfinite(h) && (lo < 0 || h < m->layer[lo].headroom))
            lo = l;
    }
    if (lo < 0)
        return;
    double h = m->layer[lo].headroom;
    double rate = slope(d, lo, 1); /* doublings per step, negative when falling */
    /* falling: at least DIAG_GROWTH_MIN doublings per 100 steps, not noise */
    if (h >= DIAG_HEADROOM_WARN || !(-rate * 100 > DIAG_GROWTH_MIN) ||
        (d->warned & (1u << DIAG_R_HEADROOM)))
        return;
    d->warned |= 1u << DIAG_R_HEADROOM;
    double act = m->layer[lo].act_max, limit = act * ns_exp2(h);
    long cross = m->step + (long)ceil(h / -rate);
    double v[4] = {h, act, limit, (double)cross};
    add(out, max, k, DIAG_WARNING, DIAG_R_HEADROOM, lo, m->step, v,
        "lower the LR, or fp32 norms / bf16 if the limit is a norm's variance",
        "layer %d headroom %.2f doublings (act max %.4g of %.3g), falling %.2f/100 steps: "
        "crosses near step %ld",
        lo, h, act, limit, -rate * 100, cross);
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

/* The dynamic loss scale fell DIAG_SCALE_DROP-fold or more within the
 * window. kind: a warning on the way, a diagnosis at a divergence. */
static int rule_scale(diag *d, const step_metrics *m, diag_kind kind, diag_finding *out, int max,
                      int *k)
{
    if (!m->loss_scale_dynamic || kept(d) == 0)
        return 0;
    long age = 0;
    float mx = window_max_scale(d, &age);
    if (!(m->loss_scale > 0) || mx / m->loss_scale < DIAG_SCALE_DROP)
        return 0;
    double v[4] = {mx, m->loss_scale, (double)(age + 1), 0};
    add(out, max, k, kind, DIAG_R_SCALE, -1, m->step, v,
        "values grow toward fp16's limit: lower the LR, or train in bf16 (fp32's range)",
        "loss scale collapsed %g -> %g (%gx) within %ld steps: gradients overflow ever more",
        (double)mx, (double)m->loss_scale, (double)(mx / m->loss_scale), age + 1);
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
            mean[l] += p->upd[l];
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

/* The Post-LN stall: the mean loss over DIAG_STALL_STEPS steps within
 * DIAG_STALL_TOL of the unigram plateau, and the bottom quarter's gradient
 * below DIAG_STALL_GRAD of the top layer's (Xiong et al. 2020 show the
 * gradient of Post-LN's lower layers shrinking with depth). */
static void rule_stall(diag *d, const step_metrics *m, diag_finding *out, int max, int *k)
{
    int L = m->n_layer, nb = L / 4 > 0 ? L / 4 : 1;
    double loss = 0, bottom = 0, top = 0;
    int cnt = 0;
    for (long a = 0; a < kept(d) && cnt < DIAG_STALL_STEPS; a++) {
        const diag_point *p = point(d, a);
        if (p->step <= d->changed_at)
            break; /* judged anew after a change */
        float b = 0;
        for (int l = 0; l < nb; l++)
            b = p->grad[l] > b ? p->grad[l] : b;
        loss += p->loss, bottom += b, top += p->grad[L - 1], cnt++;
    }
    d->stalled = L >= 2 && cnt >= DIAG_STALL_STEPS &&
                 fabs(loss / cnt - d->plateau) < DIAG_STALL_TOL && bottom < DIAG_STALL_GRAD * top;
    if (!d->stalled || (d->warned & (1u << DIAG_R_STALL)))
        return;
    d->warned |= 1u << DIAG_R_STALL;
    double v[4] = {loss / cnt, d->plateau, bottom / cnt, top > 0 ? bottom / top : 0};
    int post = m->norm == NORM_POST || m->norm == NORM_DEEPNORM || m->norm == NORM_MIX;
    diag_finding *f = out + *k;
    add(out, max, k, DIAG_DIAGNOSIS, DIAG_R_STALL, 0, m->step, v,
        post ? "Pre-LN first (norm pre); else rewind to step 0, warmup on "
               "(warmup alone stays stuck)"
             : "the bottom layers get no gradient: lower the LR or the depth",
        "stalled: loss %.3f on the unigram plateau %.3f for %d steps; bottom layers' gradient "
        "%.2g of the top's",
        loss / cnt, d->plateau, cnt, v[3]);
    if (*k > 0 && f < out + *k)
        d->last_diagnosis = *f;
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
    double fmax = numfmt_max(m->precision), act = m->layer[top].act_max;
    double v[4] = {act, sqrt(fmax), fmax, (double)top};
    char at[24]; /* "nan" without the sign printf may give it */
    snprintf(at, sizeof at, isnan(act) ? "nan" : "%.4g", act);
    add(out, max, k, DIAG_DIAGNOSIS, DIAG_R_NORM_VAR, layer, m->step, v,
        "fp32-norms on or precision bf16 fix the overflow; the growth remains: lower the LR too",
        "%s overflowed in %s: act max %s (layer %d) squares past %g (limit %.3g)", m->fault,
        numfmt_name(m->precision), at, top, fmax, sqrt(fmax));
}

/* The largest activation grew over the window: how fast, and when it
 * meets the limit at that rate (at once, when it already has). */
static void rule_growth(diag *d, const step_metrics *m, diag_finding *out, int max, int *k)
{
    if (kept(d) < 8)
        return;
    const diag_point *old = point(d, kept(d) - 1), *now = point(d, 0);
    int l = top_act_layer(now->act, m->n_layer);
    double rate = slope(d, l, 0) * 100; /* doublings per 100 steps */
    if (!(rate > DIAG_GROWTH_MIN))
        return;
    double h = now->head[l];
    long cross = h > 0 && isfinite(h) ? now->step + (long)ceil(h / rate * 100) : m->step;
    double v[4] = {old->act[l], now->act[l], rate, (double)cross};
    add(out, max, k, DIAG_DIAGNOSIS, DIAG_R_GROWTH, l, m->step, v,
        "lower the LR (clipping does not bound Adam's step, it can make this sooner)",
        "layer %d act max %.4g -> %.4g in %ld steps (+%.2f doublings/100 steps): at the "
        "limit by step %ld",
        l, (double)old->act[l], (double)now->act[l], now->step - old->step, rate, cross);
}

/* The LR was raised, or warmup turned off, shortly before: value
 * {tolerated, peak now, raised at, 0} or {peak, off since, 0, 1}. */
static void rule_lr(diag *d, const step_metrics *m, diag_finding *out, int max, int *k)
{
    char hint[DIAG_TEXT];
    if (d->lr_raised_at >= 0 && m->step - d->lr_raised_at <= DIAG_LR_RECENT) {
        double v[4] = {d->lr_tolerated, m->lr_peak, (double)d->lr_raised_at, 0};
        snprintf(hint, sizeof hint, "rewind and set lr %g, which the run tolerated",
                 (double)d->lr_tolerated);
        add(out, max, k, DIAG_DIAGNOSIS, DIAG_R_LR, -1, m->step, v, hint,
            "LR raised %g -> %g at step %ld, %ld steps before: above what the run tolerated",
            (double)d->lr_tolerated, (double)m->lr_peak, d->lr_raised_at,
            m->step - d->lr_raised_at);
    } else if (!m->warmup_on && d->warmup_off_at >= 0 &&
               m->step - d->warmup_off_at <= DIAG_WARMUP_EARLY) {
        double v[4] = {m->lr_peak, (double)d->warmup_off_at, 0, 1}; /* 1: no warmup */
        add(out, max, k, DIAG_DIAGNOSIS, DIAG_R_LR, -1, m->step, v,
            "rewind to step 0 and turn warmup on, or lower the LR",
            "no warmup: peak LR %g in force from step %ld, %ld steps before", (double)m->lr_peak,
            d->warmup_off_at, m->step - d->warmup_off_at);
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
    rule_norm_var(m, out, max, k);
    rule_growth(d, m, out, max, k);
    rule_scale(d, m, DIAG_DIAGNOSIS, out, max, k);
    rule_lr(d, m, out, max, k);
    if (*k > first)
        d->last_diagnosis = out[first];
}

int diag_observe(diag *d, const step_metrics *m, diag_finding *out, int max)
{
    int k = 0;
    track_changes(d, m, out, max, &k);
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
        rule_update(d, m, out, max, &k);
        rule_stall(d, m, out, max, &k);
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
