/* engine.c - a training run stepped one update at a time, its mid-run
 * settings, its event log, and its checkpoints. It owns a pool of worker
 * threads for its kernels (engine_set_threads) that run only inside its
 * calls; no I/O except checkpoint files.
 */
#include "engine.h"
#include "nsmath.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "atomicio.h"
#include "model.h"
#include "nstime.h"
#include "ops.h"
#include "optim.h"
#include "pool.h"
#include "rng.h"
#include "schedule.h"
#include "settings.h"

/* An in-memory copy of everything a step depends on. */
typedef struct {
    long step; /* -1: empty */
    float *params, *m, *v; /* (n_params) each, one allocation */
    long opt_t;
    uint64_t rng;
    schedule sched;
    float scale;
    long good;
    step_metrics metrics; /* its step's, when metrics.step == step (else none) */
} snapshot;

/* GradScaler's defaults (torch.cuda.amp.GradScaler): start at 2^16, halve
 * and skip the step on inf/NaN gradients, double after 2000 clean steps. */
#define SCALE_INIT 65536.0f
#define SCALE_GROWTH_INTERVAL 2000

int engine_scaler_update(float *scale, long *good, int overflowed)
{
    if (overflowed) {
        *scale *= 0.5f;
        *good = 0;
        /* below 1 the gradients overflow at their true size: no scale
         * helps, and skipping for ever would hide it, so it diverges */
        return *scale < 1.0f ? SCALER_GAVE_UP : SCALER_SKIPPED;
    }
    if (++*good >= SCALE_GROWTH_INTERVAL) {
        *scale *= 2.0f;
        *good = 0;
        return SCALER_GREW;
    }
    return SCALER_CLEAN;
}

struct engine {
    ns_config cfg; /* settings in force */
    const dataset *data;
    model m;
    adamw opt;
    schedule sched;
    ns_rng rng; /* batches */
    long step;
    uint8_t *x, *y;      /* (B, T) */
    double *layer_sq;    /* (2 L): optim_adamw_update's squared update and weights */
    double *grad_sq;     /* (L + 1): squared gradients of each layer, then the rest */
    ns_event events[NS_EVENT_RING];
    long n_events;
    /* precision */
    float scale; /* dynamic loss scale */
    long good;   /* clean steps since the scale last changed */
    /* divergence */
    snapshot *snaps; /* (n_snaps) ring, allocated on first use */
    int n_snaps;
    int snaps_off; /* one snapshot would pass the memory cap */
    metrics_spike spike_loss, spike_gnorm; /* metrics.h: the spike rule */
    step_metrics last; /* the latest step's metrics; a snapshot keeps its step's */
    ns_pool *pool; /* threads of the kernels (engine_set_threads); NULL = one */
    engine_data_id loaded; /* the data its checkpoint says it trained on */
    uint8_t *diag_state;   /* the diagnosis' state, opaque (diagnose.h): the one to save
                              (engine_set_diag_state), or the one loaded */
    size_t diag_n;
    unsigned loaded_version; /* the checkpoint's format version (0: not loaded) */
    engine_loss_terms terms; /* the latest step's (engine_last_loss_terms) */
    /* out_change's fixed batch and the logits the weights of step oc_at
     * gave it (-1: none held; a setting, a rewind or a load makes them
     * stale, as the same weights then give other logits) */
    uint8_t *oc_x;    /* (oc_B, T) */
    float *oc_logits; /* (oc_B, T, V) */
    int oc_B;
    long oc_at;
};

/* The settings the model reads at each forward, as in force now: a
 * settings row without a hook sets cfg's field, and the next forward
 * follows it. */
static void model_sync(engine *e)
{
    model_set_qk_norm(&e->m, e->cfg.qk_norm);
    model_set_z_loss(&e->m, e->cfg.z_loss);
}

static void event_v(engine *e, ns_event_kind kind, int layer, const char *fmt, va_list ap)
{
    if (kind == NS_EV_SETTING) /* a setting, a rewind, a re-init */
        e->oc_at = -1;
    ns_event *ev = &e->events[e->n_events % NS_EVENT_RING];
    ev->step = e->step;
    ev->kind = kind;
    ev->layer = layer;
    vsnprintf(ev->text, sizeof ev->text, fmt, ap);
    e->n_events++;
}

/* A line of the event log, of a kind and about a layer (-1: none). */
static void event_of(engine *e, ns_event_kind kind, int layer, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void event_of(engine *e, ns_event_kind kind, int layer, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    event_v(e, kind, layer, fmt, ap);
    va_end(ap);
}

/* An informational line (NS_EV_INFO, no layer). */
static void event(engine *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void event(engine *e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    event_v(e, NS_EV_INFO, -1, fmt, ap);
    va_end(ap);
}

/* out_change's fixed batch: ENGINE_OC_BATCH sequences (fewer when the
 * batch is smaller) spread evenly over the held-out bytes, the same
 * whatever the seed, the batch or --val-batches. */
static int oc_alloc(engine *e)
{
    const ns_config *c = &e->cfg;
    e->oc_B = c->batch < ENGINE_OC_BATCH ? c->batch : ENGINE_OC_BATCH;
    e->oc_at = -1;
    size_t BT = (size_t)e->oc_B * c->context;
    uint8_t *y = malloc(BT);
    e->oc_x = malloc(BT);
    e->oc_logits = malloc(BT * NS_VOCAB * sizeof(float));
    if (!y || !e->oc_x || !e->oc_logits) {
        free(y);
        return -1;
    }
    data_val_batch(e->data, 0, 1, e->oc_B, c->context, e->oc_x, y);
    free(y);
    return 0;
}

/* Seeds of the two streams: initialization and batches. */
static uint64_t init_seed(uint64_t seed) { return seed ^ 0x696E6974ull; /* "init" */ }
static uint64_t data_seed(uint64_t seed) { return seed ^ 0x64617461ull; /* "data" */ }

static engine *engine_alloc(const ns_config *cfg, const dataset *data, char *err, size_t errlen)
{
    if (data_check(data, cfg->context, err, errlen) != 0)
        return NULL;
    engine *e = calloc(1, sizeof *e);
    if (!e) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    e->cfg = *cfg;
    e->data = data;
    metrics_spike_reset(&e->spike_loss, METRICS_SPIKE_LOSS); /* a loaded run too */
    metrics_spike_reset(&e->spike_gnorm, METRICS_SPIKE_GNORM);
    size_t BT = (size_t)cfg->batch * cfg->context;
    if (model_create(&e->m, cfg) != 0 || optim_adamw_create(&e->opt, e->m.n_params) != 0 ||
        !(e->x = malloc(BT)) || !(e->y = malloc(BT)) ||
        !(e->layer_sq = calloc(2 * (size_t)cfg->n_layer, sizeof(double))) ||
        !(e->grad_sq = calloc((size_t)cfg->n_layer + 1, sizeof(double))) ||
        oc_alloc(e) != 0) {
        snprintf(err, errlen, "out of memory: this model needs about %.1f MiB",
                 engine_bytes_needed(cfg) / 1048576.0);
        engine_free(e);
        return NULL;
    }
    schedule_init(&e->sched, cfg);
    return e;
}

static void fresh_start(engine *e)
{
    ns_rng r;
    rng_seed(&r, init_seed(e->cfg.seed));
    model_init(&e->m, &e->cfg, &r);
    optim_adamw_reset(&e->opt);
    rng_seed(&e->rng, data_seed(e->cfg.seed));
    e->step = 0;
    e->sched.ramp_start = 0;
    e->scale = SCALE_INIT;
    e->good = 0;
    metrics_spike_reset(&e->spike_loss, METRICS_SPIKE_LOSS);
    metrics_spike_reset(&e->spike_gnorm, METRICS_SPIKE_GNORM);
    for (int i = 0; i < e->n_snaps; i++)
        e->snaps[i].step = -1;
    engine_snapshot(e); /* step 0: there is always somewhere to go back to */
}

engine *engine_create(const ns_config *cfg, const dataset *data, char *err, size_t errlen)
{
    engine *e = engine_alloc(cfg, data, err, errlen);
    if (!e)
        return NULL;
    fresh_start(e);
    event(e, "start: %s, %s, L=%d d=%d, init %s, warmup %s", config_norm_place_name(cfg->norm),
          config_norm_kind_name(cfg->norm_kind), cfg->n_layer, cfg->dim, config_init_kind_name(cfg->init),
          e->sched.warmup_on ? "on" : "off");
    return e;
}

void engine_free(engine *e)
{
    if (!e)
        return;
    model_free(&e->m);
    optim_adamw_free(&e->opt);
    free(e->x);
    free(e->y);
    free(e->diag_state);
    free(e->layer_sq);
    free(e->grad_sq);
    free(e->oc_x);
    free(e->oc_logits);
    for (int i = 0; i < e->n_snaps; i++)
        free(e->snaps[i].params);
    free(e->snaps);
    pool_free(e->pool);
    free(e);
}

int engine_select_kernels(const char *name) { return ops_select_kernels(name); }

const char *engine_kernels(void) { return ops_isa(); }

int engine_set_threads(engine *e, int n, const sigset_t *block)
{
    if (n < 1 || n > POOL_MAX_THREADS)
        return -1;
    if (n == engine_threads(e))
        return 0;
    ns_pool *p = NULL;
    if (n > 1 && !(p = pool_create(n, block)))
        return -1;
    pool_free(e->pool);
    e->pool = p;
    e->m.pool = p;
    return 0;
}

int engine_threads(const engine *e) { return pool_threads(e->pool); }

/* Is the dynamic loss scaler in force? (low precision, --loss-scale dynamic) */
static int scaler_dynamic(const engine *e)
{
    return e->cfg.precision != FMT_FP32 && e->cfg.loss_scale == 0.0f;
}

static float scale_in_force(const engine *e)
{
    if (e->cfg.precision == FMT_FP32 || e->cfg.loss_scale < 0.0f)
        return 1.0f;
    return e->cfg.loss_scale > 0.0f ? e->cfg.loss_scale : e->scale;
}

/* Warn once when x is far above the recent window (metrics.h's rule). */
static void spike_check(engine *e, metrics_spike *w, double x, const char *what)
{
    char msg[NS_EVENT_TEXT];
    if (metrics_spike_check(w, e->step, x, what, msg, sizeof msg))
        event_of(e, NS_EV_WARNING, -1, "%s", msg);
}

/* The first non-finite op of the step into out: its words (fault) and
 * its block (fault_layer, -1 outside the blocks or when there was none). */
static void fault_report(const model_fault *f, int n_layer, step_metrics *out)
{
    char *buf = out->fault;
    size_t len = sizeof out->fault;
    int in_block = f->set && f->layer >= 0 && f->layer < n_layer;
    out->fault_layer = in_block ? f->layer : -1;
    if (!f->set)
        buf[0] = 0;
    else if (in_block)
        snprintf(buf, len, "%s, layer %d, %s", f->backward ? "backward" : "forward", f->layer,
                 f->op);
    else
        snprintf(buf, len, "%s, %s", f->backward ? "backward" : "forward", f->op);
}

/* The per-step reductions, split over the pool by layer: each sum is
 * one ops_sumsq call, in its own order, whatever the count. */
typedef struct {
    model *m;
    step_metrics *out;
    float inv_scale;
    int parts;      /* of the unscaling */
    double *grad_sq; /* (L + 1) */
} norms_job;

static void unscale_task(void *ctx, int part, int thread)
{
    (void)thread;
    norms_job *j = ctx;
    size_t n = j->m->n_params, parts = (size_t)j->parts;
    size_t lo = n * (size_t)part / parts, hi = n * (size_t)(part + 1) / parts;
    float *g = j->m->grads;
    for (size_t i = lo; i < hi; i++)
        g[i] *= j->inv_scale;
}

/* task l < L: layer l's three group norms, and its squared sum; task L:
 * the squared sum of the tensors outside the layers (embeddings, final
 * norm, head), so the global norm needs no second pass */
static void grad_norms_task(void *ctx, int l, int thread)
{
    (void)thread;
    norms_job *j = ctx;
    model *m = j->m;
    if (l == m->L) {
        size_t end = m->layer0 + (size_t)m->L * m->layer_stride;
        j->grad_sq[l] =
            ops_sumsq(m->grads, m->layer0) + ops_sumsq(m->grads + end, m->n_params - end);
        return;
    }
    static const model_group groups[3] = {GROUP_LN, GROUP_ATTN, GROUP_FFN};
    double sq[3];
    for (int i = 0; i < 3; i++) {
        size_t off, n;
        model_group_slice(m, l, groups[i], &off, &n);
        sq[i] = ops_sumsq(m->grads + off, n);
    }
    layer_metrics *lm = &j->out->layer[l];
    lm->grad_ln = (float)sqrt(sq[0]);
    lm->grad_attn = (float)sqrt(sq[1]);
    lm->grad_ffn = (float)sqrt(sq[2]);
    j->grad_sq[l] = (sq[0] + sq[1]) + sq[2];
}

float engine_headroom(float limit, float act_max)
{
    if (isnan(act_max))
        return NAN;
    if (!(act_max > 0))
        return INFINITY;
    return (float)(ns_log2((double)limit) - ns_log2((double)act_max));
}

/* Per-layer statistics of the step just computed into out (gradient
 * norms over the pool, activation maxima, headroom, the first non-finite
 * op); returns the global gradient norm. */
static float step_stats(engine *e, step_metrics *out, ns_pool *pool, norms_job *nj)
{
    model *m = &e->m;
    const ns_config *c = &e->cfg;
    /* headroom against the limit of the op that overflows first: a norm
     * computed in the format squares its inputs, so its variance passes
     * fmax once |x| passes sqrt(fmax) (256 in fp16); elsewhere fmax */
    float fmax = numfmt_max(c->precision);
    if (c->precision != FMT_FP32 && !c->fp32_norms && c->norm_kind != NORMK_DYT)
        fmax = sqrtf(fmax);
    /* per-layer gradient norms, and the global one (task L) */
    pool_run(pool, m->L + 1, grad_norms_task, nj);
    for (int l = 0; l < m->L; l++) {
        layer_metrics *lm = &out->layer[l];
        lm->act_max = m->stats[l].act_max;
        lm->resid_max = m->stats[l].resid_max;
        lm->resid_rms = m->stats[l].resid_rms;
        lm->overflow = (float)m->counts[l].overflow;
        lm->underflow = (float)m->counts[l].underflow;
        lm->headroom = engine_headroom(fmax, lm->act_max);
        lm->attn_logit_max = m->stats[l].attn_logit_max;
        lm->attn_entropy = m->stats[l].attn_entropy;
        lm->branch_ratio = m->stats[l].branch_ratio;
        lm->norm_in_rms = m->stats[l].norm_in_rms;
    }
    /* the global norm from the parts, in layer order whatever the count */
    double gsq = e->grad_sq[m->L];
    for (int l = 0; l < m->L; l++)
        gsq += e->grad_sq[l];
    fault_report(&m->fault, m->L, out);
    return (float)sqrt(gsq);
}

/* What to do with this step's gradients: 1 when the step diverged (the
 * model itself made inf/NaN, or the gradients did with no dynamic scaler
 * to absorb them, or the scaler gave up); *skipped when GradScaler's rule
 * skips it instead. */
static int step_verdict(engine *e, const step_metrics *out, int forward_bad, float gnorm,
                        float scale, int *skipped)
{
    long s = e->step;
    *skipped = 0;
    if (forward_bad)
        return 1;
    if (isfinite(gnorm))
        return 0;
    if (!scaler_dynamic(e))
        return 1;
    /* overflow from the scale: GradScaler's skip */
    if (engine_scaler_update(&e->scale, &e->good, 1) == SCALER_GAVE_UP) {
        e->scale = 1.0f;
        event_of(e, NS_EV_DIVERGED, out->fault_layer,
                 "step %ld: %s overflowed even at loss scale 1", s,
                 out->fault[0] ? out->fault : "gradients");
        return 1;
    }
    *skipped = 1;
    event_of(e, NS_EV_SKIPPED, out->fault_layer,
             "step %ld skipped: %s overflowed at loss scale %g; scale now %g", s,
             out->fault[0] ? out->fault : "gradients", (double)scale, (double)e->scale);
    return 0;
}

/* AdamW on the unscaled gradients (clipped to cfg.clip), the per-layer
 * update ratios into out, and the scaler's clean-step count. */
static void step_update(engine *e, step_metrics *out, float lr, float gnorm, float scale)
{
    model *m = &e->m;
    const ns_config *c = &e->cfg;
    adamw_hparams h = {lr, c->beta1, c->beta2, c->adam_eps, c->weight_decay, 1.0f,
                       c->lr_layer_decay};
    if (c->clip > 0.0f && gnorm > c->clip)
        h.grad_scale = c->clip / gnorm;
    optim_adamw_update(&e->opt, m, &h, e->layer_sq);
    for (int l = 0; l < m->L; l++) {
        double usq = e->layer_sq[2 * l], wsq = e->layer_sq[2 * l + 1];
        out->layer[l].update_ratio = wsq > 0 ? (float)sqrt(usq / wsq) : 0.0f;
    }
    if (scaler_dynamic(e) && engine_scaler_update(&e->scale, &e->good, 0) == SCALER_GREW)
        event(e, "loss scale %g -> %g after %d clean steps", (double)scale, (double)e->scale,
              SCALE_GROWTH_INTERVAL);
}

/* The step's scalar fields and the settings it ran with. */
static void step_fields(engine *e, step_metrics *out, float loss, float lr, float gnorm,
                        float scale, double dt)
{
    const ns_config *c = &e->cfg;
    long s = e->step;
    out->step = s;
    out->loss = loss;
    out->lr = lr;
    out->grad_norm = gnorm;
    out->tokens_per_s = dt > 0 ? (double)c->batch * c->context / dt : 0.0;
    out->logz_mean = e->terms.logz_mean;
    out->logit_max = e->terms.logit_max;
    out->z_loss_term = e->terms.zloss;
    /* the settings in force, one column each (the metrics table's) */
    for (int k = 0; k < metrics_step_ncols(); k++) {
        const ns_setting *row = metrics_step_col(k)->setting;
        if (row)
            metrics_step_col_set_value(out, k, engine_setting_value(e, row));
    }
    out->in_warmup = schedule_in_warmup(&e->sched, s);
    out->lr_peak = e->sched.peak;
    out->loss_scale = scale;
    out->loss_scale_dynamic = scaler_dynamic(e);
    out->n_layer = e->m.L;
}

/* Is a validation due after step s? */
static int val_due(const ns_config *c, long s)
{
    return c->val_every > 0 && (s % c->val_every == 0 || (c->steps > 0 && s == c->steps));
}

/* ---- out_change ---------------------------------------------------------
 * How far an update moves the output (Liu et al. 2020, "Admin"; Wang et
 * al. 2022, "DeepNet"): ||f(x; w_t) - f(x; w_t-1)|| / ||f(x; w_t-1)|| over
 * the logits of the fixed batch, on the first ENGINE_OC_STEPS steps and
 * at each validation. A measured step's logits are the next one's
 * "before"; where none are held (a first measurement, a setting changed,
 * a rewind, a load) they are made before the step's update. */
static int oc_due(const engine *e, long s) { return s <= ENGINE_OC_STEPS || val_due(&e->cfg, s); }

/* The fixed batch's logits at the weights and settings in force (the
 * forward leaves them in m.logits). */
static void oc_forward(engine *e)
{
    model_sync(e);
    model_forward(&e->m, e->oc_x, NULL, e->oc_B);
}

/* Before step s's update: the "before" logits, when s is measured and
 * none of the weights now are held. */
static void oc_before(engine *e, long s)
{
    if (!oc_due(e, s) || e->oc_at == e->step)
        return;
    oc_forward(e);
    memcpy(e->oc_logits, e->m.logits, (size_t)e->oc_B * e->m.T * e->m.V * sizeof(float));
    e->oc_at = e->step;
}

/* After it: out_change into out (or its bit of unknown), the new logits
 * kept for the next step. */
static void oc_after(engine *e, step_metrics *out)
{
    if (!oc_due(e, e->step) || e->oc_at != e->step - 1) {
        out->unknown |= 1u << METRICS_COL_OUT_CHANGE;
        return;
    }
    oc_forward(e);
    size_t n = (size_t)e->oc_B * e->m.T * e->m.V;
    out->out_change = (float)model_rel_change(e->oc_logits, e->m.logits, n);
    memcpy(e->oc_logits, e->m.logits, n * sizeof(float));
    e->oc_at = e->step;
}

/* After the step: the divergence event, or the spike rule and the
 * snapshot ring; then the validation loss when one is due. */
static void step_after(engine *e, step_metrics *out, int bad, int skipped)
{
    const ns_config *c = &e->cfg;
    long s = e->step;
    if (bad) {
        char lt[24], gt[24]; /* "nan" without a sign, whatever the platform prints */
        snprintf(lt, sizeof lt, isnan(out->loss) ? "nan" : "%g", (double)out->loss);
        snprintf(gt, sizeof gt, isnan(out->grad_norm) ? "nan" : "%g", (double)out->grad_norm);
        event_of(e, NS_EV_DIVERGED, out->fault_layer,
                 "diverged at step %ld: loss %s, gradient norm %s; first non-finite: %s", s, lt,
                 gt, out->fault[0] ? out->fault : "?");
    } else {
        spike_check(e, &e->spike_loss, out->loss, "loss");
        spike_check(e, &e->spike_gnorm, out->grad_norm, "gradient norm");
        if (!skipped && c->snapshot_every > 0 && s % c->snapshot_every == 0)
            engine_snapshot(e);
    }
    if (val_due(c, s)) {
        out->val_loss = engine_validate(e);
        out->has_val = 1;
        e->last.val_loss = out->val_loss;
        e->last.has_val = 1;
    }
}

int engine_step(engine *e, step_metrics *out)
{
    model *m = &e->m;
    const ns_config *c = &e->cfg;
    double t0 = nstime_now();

    long s = e->step + 1;
    float lr = schedule_lr(&e->sched, s);
    float scale = scale_in_force(e);
    data_train_batch(e->data, &e->rng, c->batch, c->context, e->x, e->y);
    model_set_precision(m, c->precision, c->fp32_norms);
    model_sync(e);
    oc_before(e, s);
    m->loss_scale = scale;
    float loss = model_forward(m, e->x, e->y, c->batch);
    /* before a validation's forward replaces them */
    e->terms = (engine_loss_terms){1, m->logz_mean, m->logit_max, m->zloss};
    int forward_bad = m->fault.set || !isfinite(loss);
    model_backward(m);
    /* unscale into fp32 for the optimizer (exact for powers of two) */
    norms_job nj = {m, out, 1.0f / scale, 1, e->grad_sq};
    /* a small model's reductions take less than waking a thread */
    ns_pool *pool = m->n_params >= (1u << 16) ? e->pool : NULL;
    nj.parts = pool_threads(pool);
    if (scale != 1.0f)
        pool_run(pool, nj.parts, unscale_task, &nj);

    memset(out, 0, sizeof *out);
    float gnorm = step_stats(e, out, pool, &nj);
    /* the step is taken (or skipped) from here on: its events carry its
     * number, as their text does ("step 1665 skipped" at step 1665) */
    e->step = s;
    int skipped;
    int bad = step_verdict(e, out, forward_bad, gnorm, scale, &skipped);
    if (!bad && !skipped)
        step_update(e, out, lr, gnorm, scale);
    oc_after(e, out);
    step_fields(e, out, loss, lr, gnorm, scale, nstime_now() - t0);
    out->nonfinite = bad;
    out->skipped = skipped;
    e->last = *out; /* before a snapshot takes it; the validation is added below */
    step_after(e, out, bad, skipped);
    return bad;
}

/* ---- snapshots --------------------------------------------------------- */

/* The rewind ring's cap: a big model keeps fewer snapshots, and one whose
 * single snapshot would pass it keeps none. */
#define SNAPS_CAP_BYTES 1073741824.0

/* One snapshot: the weights and Adam's two moments. */
static double snapshot_bytes(size_t n_params) { return 3.0 * (double)n_params * sizeof(float); }

/* Slots of the ring for a model of n_params: --snapshots, fewer to keep
 * the ring under the cap, 0 when one alone would pass it. */
static int snapshot_slots(const ns_config *c, size_t n_params)
{
    double per = snapshot_bytes(n_params);
    if (c->snapshots <= 0 || per > SNAPS_CAP_BYTES)
        return 0;
    int k = c->snapshots;
    while (k > 1 && per * k > SNAPS_CAP_BYTES)
        k--;
    return k;
}

/* Snapshots held after a run of c->steps (0: until stopped, so the ring
 * fills): step 0's, then one every --snapshot-every steps. */
static long snapshots_held(const ns_config *c, size_t n_params)
{
    long k = snapshot_slots(c, n_params);
    if (c->steps <= 0 && c->snapshot_every > 0)
        return k;
    long taken = 1 + (c->snapshot_every > 0 ? c->steps / c->snapshot_every : 0);
    return taken < k ? taken : k;
}

double engine_machine_bytes(void)
{
    double pages = (double)sysconf(_SC_PHYS_PAGES), size = (double)sysconf(_SC_PAGESIZE);
    return pages > 0 && size > 0 ? pages * size : 0;
}

double engine_bytes_needed(const ns_config *c)
{
    size_t n = model_param_count(c);
    double p = (double)n, f = sizeof(float);
    double bytes = 0;
    bytes += p * f;                                   /* weights */
    bytes += p * f;                                   /* gradients */
    /* the row blocks' gradient partials (model.h: block 0 writes the gradients) */
    bytes += (double)(model_row_blocks(n, c->batch, c->context) - 1) * p * f;
    bytes += c->precision != FMT_FP32 ? p * f : 0;    /* the bf16/fp16 rounded weights */
    bytes += 2.0 * p * f;                             /* AdamW's m and v */
    bytes += (double)model_buffer_floats(c) * f;      /* activations, backward scratch */
    bytes += (double)snapshots_held(c, n) * snapshot_bytes(n); /* the rewind ring */
    /* out_change's fixed batch: its tokens and logits */
    bytes += (double)(c->batch < ENGINE_OC_BATCH ? c->batch : ENGINE_OC_BATCH) * c->context *
             (1.0 + NS_VOCAB * f);
    return bytes;
}

static int snaps_alloc(engine *e)
{
    if (e->snaps || e->cfg.snapshots <= 0 || e->snaps_off)
        return e->snaps ? 0 : -1;
    double per = snapshot_bytes(e->m.n_params);
    int k = snapshot_slots(&e->cfg, e->m.n_params);
    if (k == 0) {
        e->snaps_off = 1;
        event(e, "no snapshots: one would take %.1f GiB (rewind is off)", per / 1073741824.0);
        return -1;
    }
    e->snaps = calloc((size_t)k, sizeof *e->snaps);
    if (!e->snaps)
        return -1;
    e->n_snaps = k;
    for (int i = 0; i < k; i++)
        e->snaps[i].step = -1;
    if (k < e->cfg.snapshots)
        event(e, "keeping %d snapshots, not %d: each takes %.0f MiB", k, e->cfg.snapshots,
              per / 1048576.0);
    return 0;
}

int engine_snapshot(engine *e)
{
    if (snaps_alloc(e) != 0)
        return -1;
    /* the oldest slot (or an empty one) takes it */
    snapshot *sn = &e->snaps[0];
    for (int i = 0; i < e->n_snaps; i++) {
        if (e->snaps[i].step < 0) {
            sn = &e->snaps[i];
            break;
        }
        if (e->snaps[i].step < sn->step)
            sn = &e->snaps[i];
    }
    size_t n = e->m.n_params;
    if (!sn->params) {
        sn->params = malloc(3 * n * sizeof(float));
        if (!sn->params)
            return -1;
        sn->m = sn->params + n;
        sn->v = sn->m + n;
    }
    memcpy(sn->params, e->m.params, n * sizeof(float));
    memcpy(sn->m, e->opt.m, n * sizeof(float));
    memcpy(sn->v, e->opt.v, n * sizeof(float));
    sn->step = e->step;
    sn->opt_t = e->opt.t;
    sn->rng = e->rng.s;
    sn->sched = e->sched;
    sn->scale = e->scale;
    sn->good = e->good;
    sn->metrics = e->last;
    return 0;
}

int engine_last_metrics(const engine *e, step_metrics *out)
{
    if (e->step <= 0 || e->last.step != e->step)
        return 0;
    *out = e->last;
    return 1;
}

/* The newest kept snapshot before step `before`, or NULL. */
static snapshot *newest_before(const engine *e, long before)
{
    snapshot *best = NULL;
    for (int i = 0; i < e->n_snaps; i++) {
        snapshot *sn = &e->snaps[i];
        if (sn->step >= 0 && sn->step < before && (!best || sn->step > best->step))
            best = sn;
    }
    return best;
}

int engine_snapshot_before(const engine *e, long before, long *step, step_metrics *m)
{
    const snapshot *best = newest_before(e, before);
    if (!best)
        return -1;
    *step = best->step;
    if (best->metrics.step != best->step)
        return 0;
    *m = best->metrics;
    return 1;
}

long engine_rewind(engine *e) { return engine_rewind_before(e, e->step - 1); }

long engine_rewind_before(engine *e, long at)
{
    if (at >= e->step)
        at = e->step - 1;
    snapshot *best = newest_before(e, at + 1);
    if (!best) {
        event_of(e, NS_EV_REFUSED, -1, "rewind: no snapshot at or before step %ld", at);
        return -1;
    }
    size_t n = e->m.n_params;
    long from = e->step;
    memcpy(e->m.params, best->params, n * sizeof(float));
    memcpy(e->opt.m, best->m, n * sizeof(float));
    memcpy(e->opt.v, best->v, n * sizeof(float));
    e->step = best->step;
    e->opt.t = best->opt_t;
    e->rng.s = best->rng;
    /* the schedule comes back, but the settings in force stay as they are
     * now, so a change made before rewinding applies to the replay */
    int warm_on = e->sched.warmup_on;
    long ramp_start = e->sched.ramp_start;
    float peak = e->sched.peak;
    e->sched = best->sched;
    e->sched.warmup_on = warm_on;
    e->sched.peak = peak;
    /* warmup turned on after the snapshot: its ramp starts where the
     * replay does (it started at the abandoned step, which the replay
     * reaches only after its ramp would have ended) */
    if (warm_on && (!best->sched.warmup_on || ramp_start > best->step))
        e->sched.ramp_start = best->step;
    e->scale = best->scale;
    e->good = best->good;
    e->last = best->metrics; /* the snapshot's step's numbers, when it has them */
    /* the spike windows hold the abandoned steps: the replay is judged
     * afresh, as after a re-init (an untrained step 1 is no spike) */
    metrics_spike_reset(&e->spike_loss, METRICS_SPIKE_LOSS);
    metrics_spike_reset(&e->spike_gnorm, METRICS_SPIKE_GNORM);
    /* snapshots after this point belong to the abandoned future */
    for (int i = 0; i < e->n_snaps; i++)
        if (e->snaps[i].step > best->step)
            e->snaps[i].step = -1;
    event_of(e, NS_EV_SETTING, -1, "rewound from step %ld to the snapshot at step %ld", from,
             e->step);
    return e->step;
}

float engine_validate(engine *e)
{
    const ns_config *c = &e->cfg;
    double sum = 0.0;
    model_sync(e);
    for (int k = 0; k < c->val_batches; k++) {
        data_val_batch(e->data, k, c->val_batches, c->batch, c->context, e->x, e->y);
        sum += model_forward(&e->m, e->x, e->y, c->batch);
    }
    return (float)(sum / c->val_batches);
}

long engine_steps_done(const engine *e) { return e->step; }
int engine_warmup_on(const engine *e) { return e->sched.warmup_on; }
int engine_warmup_steps(const engine *e) { return e->sched.warmup; }

int engine_set_warmup_steps(engine *e, int n)
{
    if (n < 1 || (e->sched.kind != SCHED_CONSTANT && e->sched.kind != SCHED_COSINE))
        return -1;
    e->sched.warmup = n;
    return 0;
}
float engine_current_peak(const engine *e) { return e->sched.peak; }

void engine_note(engine *e, const char *fmt, ...)
{
    char buf[NS_EVENT_TEXT];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    event_of(e, NS_EV_NOTE, -1, "%s", buf);
}
const ns_config *engine_config(const engine *e) { return &e->cfg; }
float engine_current_lr(const engine *e) { return schedule_lr(&e->sched, e->step + 1); }

void engine_set_norm(engine *e, norm_place p)
{
    if (p == e->cfg.norm)
        return;
    norm_place was = e->cfg.norm;
    int fn_was = e->m.final_norm;
    e->cfg.norm = p;
    int fn = config_final_norm(&e->cfg);
    model_set_norm(&e->m, p, fn);
    event_of(e, NS_EV_SETTING, -1, "norm %s -> %s%s%s", config_norm_place_name(was), config_norm_place_name(p),
             fn == fn_was ? "" : (fn ? ", final norm on" : ", final norm off"),
             p == NORM_DEEPNORM ? " (alpha only: beta scales weights at init)" : "");
}

void engine_set_norm_kind(engine *e, norm_kind k)
{
    if (k == e->cfg.norm_kind)
        return;
    event_of(e, NS_EV_SETTING, -1, "norm kind %s -> %s", config_norm_kind_name(e->cfg.norm_kind),
             config_norm_kind_name(k));
    e->cfg.norm_kind = k;
    model_set_norm_kind(&e->m, k);
}

void engine_set_final_norm(engine *e, int on)
{
    e->cfg.final_norm = on;
    model_set_norm(&e->m, e->cfg.norm, config_final_norm(&e->cfg));
    event_of(e, NS_EV_SETTING, -1, "final norm %s", e->m.final_norm ? "on" : "off");
}

void engine_set_warmup(engine *e, int on)
{
    on = !!on;
    e->sched.warmup_on = on;
    if (on) {
        e->sched.ramp_start = e->step;
        event_of(e, NS_EV_SETTING, -1, "warmup on: LR ramps to %g over %d steps",
                 (double)e->sched.peak, e->sched.warmup);
    } else {
        event_of(e, NS_EV_SETTING, -1, "warmup off: LR %g", (double)e->sched.peak);
    }
}

void engine_set_lr(engine *e, float peak)
{
    event_of(e, NS_EV_SETTING, -1, "peak LR %g -> %g", (double)e->sched.peak, (double)peak);
    e->sched.peak = peak;
    e->cfg.lr = peak;
}

void engine_set_clip(engine *e, float clip)
{
    if (clip > 0)
        event_of(e, NS_EV_SETTING, -1, "clipping on at %g", (double)clip);
    else
        event_of(e, NS_EV_SETTING, -1, "clipping off");
    e->cfg.clip = clip;
}

void engine_set_precision(engine *e, numfmt f)
{
    if (f == e->cfg.precision)
        return;
    event_of(e, NS_EV_SETTING, -1, "precision %s -> %s%s", numfmt_name(e->cfg.precision),
             numfmt_name(f),
             f == FMT_FP32 ? "" : (e->cfg.fp32_norms ? ", norms in fp32" : ", norms in the format"));
    e->cfg.precision = f;
}

void engine_set_fp32_norms(engine *e, int on)
{
    e->cfg.fp32_norms = !!on;
    event_of(e, NS_EV_SETTING, -1, "norms, softmax and loss in %s",
             on ? "fp32" : "the low format (naive)");
}

void engine_set_loss_scale(engine *e, float mode)
{
    e->cfg.loss_scale = mode;
    if (mode == 0.0f) {
        e->scale = SCALE_INIT;
        e->good = 0;
        event_of(e, NS_EV_SETTING, -1, "loss scaling dynamic, from %g", (double)SCALE_INIT);
    } else if (mode < 0.0f) {
        event_of(e, NS_EV_SETTING, -1, "loss scaling off");
    } else {
        event_of(e, NS_EV_SETTING, -1, "loss scale %g", (double)mode);
    }
}

void engine_set_qk_norm(engine *e, int on)
{
    e->cfg.qk_norm = !!on;
    model_sync(e);
    event_of(e, NS_EV_SETTING, -1, "QK-norm %s", on ? "on" : "off");
}

void engine_set_z_loss(engine *e, float z)
{
    e->cfg.z_loss = z;
    model_sync(e);
    if (z > 0.0f)
        event_of(e, NS_EV_SETTING, -1, "z-loss %g", (double)z);
    else
        event_of(e, NS_EV_SETTING, -1, "z-loss off");
}

/* ---- the settings rows' hooks ------------------------------------------ */

/* Peak LRs stay finite and positive whatever a script or a key asks:
 * no cap at 10, since pressing + many times is how a class sees the LR
 * blow a run up, and the numbers must stay something to show. */
static float lr_clamp(double lr) { return (float)(lr < 1e-9 ? 1e-9 : lr > 1e30 ? 1e30 : lr); }

static void hook_norm(engine *e, double x) { engine_set_norm(e, (norm_place)(int)x); }
static void hook_norm_kind(engine *e, double x) { engine_set_norm_kind(e, (norm_kind)(int)x); }
static void hook_final_norm(engine *e, double x) { engine_set_final_norm(e, (int)x); }
static void hook_warmup(engine *e, double x) { engine_set_warmup(e, x > 0); }
static void hook_precision(engine *e, double x) { engine_set_precision(e, (numfmt)(int)x); }
static void hook_fp32_norms(engine *e, double x) { engine_set_fp32_norms(e, x > 0); }
static void hook_loss_scale(engine *e, double x) { engine_set_loss_scale(e, (float)x); }
static void hook_lr(engine *e, double x) { engine_set_lr(e, lr_clamp(x)); }
static void hook_clip(engine *e, double x) { engine_set_clip(e, (float)x); }

static double get_warmup(const engine *e) { return engine_warmup_on(e); }
static double get_lr(const engine *e) { return engine_current_peak(e); }
static double shown_final_norm(const engine *e) { return config_final_norm(&e->cfg); }

/* Per hook: the setter, and where the value is not the row's field (get)
 * or not as the run uses it (shown), their readers. */
static const struct {
    void (*set)(engine *e, double x);
    double (*get)(const engine *e);
    double (*shown)(const engine *e);
} hooks[SETH_COUNT] = {
    [SETH_NORM] = {.set = hook_norm},
    [SETH_NORM_KIND] = {.set = hook_norm_kind},
    [SETH_FINAL_NORM] = {.set = hook_final_norm, .shown = shown_final_norm},
    [SETH_WARMUP] = {.set = hook_warmup, .get = get_warmup},
    [SETH_PRECISION] = {.set = hook_precision},
    [SETH_FP32_NORMS] = {.set = hook_fp32_norms},
    [SETH_LOSS_SCALE] = {.set = hook_loss_scale},
    [SETH_LR] = {.set = hook_lr, .get = get_lr},
    [SETH_CLIP] = {.set = hook_clip},
};

void engine_set_setting(engine *e, const ns_setting *s, double x)
{
    if (s->hook > SETH_NONE && s->hook < SETH_COUNT && hooks[s->hook].set) {
        hooks[s->hook].set(e, x);
        return;
    }
    char was[48], now[48];
    settings_format(s, &e->cfg, was, sizeof was);
    settings_put(s, &e->cfg, x);
    settings_format(s, &e->cfg, now, sizeof now);
    event(e, "%s %s -> %s", s->name, was, now);
}

double engine_setting_value(const engine *e, const ns_setting *s)
{
    if (s->hook > SETH_NONE && s->hook < SETH_COUNT && hooks[s->hook].get)
        return hooks[s->hook].get(e);
    return settings_get(s, &e->cfg);
}

double engine_setting_shown(const engine *e, const ns_setting *s)
{
    if (s->hook > SETH_NONE && s->hook < SETH_COUNT && hooks[s->hook].shown)
        return hooks[s->hook].shown(e);
    return engine_setting_value(e, s);
}

void engine_reinit(engine *e)
{
    fresh_start(e);
    event_of(e, NS_EV_SETTING, -1, "re-initialized from seed %llu",
             (unsigned long long)e->cfg.seed);
}

/* dst's run becomes src's (same shapes): weights, moments, clock, RNG,
 * schedule, scale, settings in force and what the model caches of them */
static void copy_run(engine *dst, const engine *src)
{
    size_t n = dst->m.n_params;
    ns_config keep = dst->cfg;
    dst->cfg = src->cfg;
    dst->cfg.snapshot_every = keep.snapshot_every;
    dst->cfg.snapshots = keep.snapshots;
    dst->cfg.val_every = keep.val_every;
    dst->cfg.steps = keep.steps;
    memcpy(dst->m.params, src->m.params, n * sizeof(float));
    memcpy(dst->opt.m, src->opt.m, n * sizeof(float));
    memcpy(dst->opt.v, src->opt.v, n * sizeof(float));
    dst->opt.t = src->opt.t;
    model_set_norm(&dst->m, dst->cfg.norm, config_final_norm(&dst->cfg));
    model_set_norm_kind(&dst->m, dst->cfg.norm_kind);
    model_sync(dst);
    dst->rng = src->rng;
    dst->sched = src->sched;
    dst->step = src->step;
    dst->scale = src->scale;
    dst->good = src->good;
    dst->spike_loss = src->spike_loss;
    dst->spike_gnorm = src->spike_gnorm;
    dst->last = src->last;
    dst->terms = src->terms;
}

engine *engine_clone(const engine *src, char *err, size_t errlen)
{
    ns_config c = src->cfg;
    c.snapshot_every = 0;
    c.snapshots = 0;
    c.val_every = 0;
    engine *e = engine_alloc(&c, src->data, err, errlen);
    if (!e)
        return NULL;
    copy_run(e, src);
    e->loaded = src->loaded;
    return e;
}

void engine_copy_run(engine *dst, const engine *src, long keep_until)
{
    long from = dst->step;
    copy_run(dst, src);
    for (int i = 0; i < dst->n_snaps; i++)
        if (dst->snaps[i].step > keep_until)
            dst->snaps[i].step = -1;
    event_of(dst, NS_EV_SETTING, -1, "step %ld: the run left alone since step %ld takes over "
             "(the fixed run's %ld steps are dropped)", dst->step, keep_until, from - keep_until);
}

long engine_event_count(const engine *e) { return e->n_events; }

int engine_event_get(const engine *e, long i, ns_event *ev)
{
    if (i < 0 || i >= e->n_events || i < e->n_events - NS_EVENT_RING)
        return -1;
    *ev = e->events[i % NS_EVENT_RING];
    return 0;
}

void engine_sample(engine *e, const char *prompt, int n, uint8_t *out)
{
    model *m = &e->m;
    int T = m->T, V = m->V;
    uint8_t *win = e->x; /* row 0 of the batch buffer as the window */
    int len = 0;
    for (const char *p = prompt; *p && len < T; p++)
        win[len++] = (uint8_t)*p;
    if (len == 0)
        win[len++] = '\n';
    ns_rng r;
    rng_seed(&r, e->cfg.seed ^ (uint64_t)e->step * 0x9E3779B97F4A7C15ull ^ 0x73616D70ull);
    model_sync(e);
    for (int k = 0; k < n; k++) {
        memset(win + len, ' ', (size_t)(T - len));
        model_forward(m, win, NULL, 1);
        const float *lg = m->logits + (size_t)(len - 1) * V;
        /* softmax at temperature 0.8, then invert the CDF */
        float mx = lg[0];
        for (int i = 1; i < V; i++)
            mx = lg[i] > mx ? lg[i] : mx;
        double sum = 0, pr[NS_VOCAB];
        for (int i = 0; i < V; i++)
            sum += pr[i] = isfinite(lg[i]) ? ns_exp((lg[i] - mx) / 0.8) : 0.0;
        double u = rng_uniform(&r) * sum, c = 0;
        int tok = V - 1;
        for (int i = 0; i < V; i++) {
            c += pr[i];
            if (u < c) {
                tok = i;
                break;
            }
        }
        out[k] = (uint8_t)tok;
        if (len == T) {
            memmove(win, win + 1, (size_t)T - 1);
            len--;
        }
        win[len++] = (uint8_t)tok;
    }
}

int engine_last_loss_terms(const engine *e, engine_loss_terms *out)
{
    *out = e->terms;
    return e->terms.known;
}

float *engine_params(engine *e, size_t *n)
{
    e->oc_at = -1; /* the caller may change them */
    *n = e->m.n_params;
    return e->m.params;
}

/* ---- checkpoints ------------------------------------------------------
 * Little-endian, written field by field (never a struct dump):
 *   "NSCKPT\0\1" magic, u32 format version, u32 header length H,
 *   H bytes of header (from version 4 a u32 count F of the settings that
 *   follow, then the settings and the run state, fields below),
 *   u64 n_params, then params, Adam m, Adam v as f32[n_params] each,
 *   u32 CRC-32 (IEEE) of every byte before it.
 * Version 5 added the QK-norm tensors to each layer (model.h); a file of
 * 1..4 holds every other tensor in the same order, and loads with them at
 * their initial values and their moments 0 (QK-norm off: a run resumes to
 * the numbers it would have had).
 * Version 6 added, after the moments, u32 length D and D bytes of the
 * diagnosis' state (diagnose_state.c writes and checks them; here they are
 * carried opaquely, so no rule reads engine state); D = 0: none.
 */
#define CKPT_MAGIC "NSCKPT\0\1"
#define CKPT_VERSION 6u
#define CKPT_QK_VERSION 5u   /* the first with the QK-norm tensors */
#define CKPT_DIAG_VERSION 6u /* the first with the diagnosis' state */
#define CKPT_DIAG_MAX (16u << 20) /* bytes of it at most */

typedef struct {
    uint8_t *p;
    size_t n, cap;
    int oom;
} wbuf;

static void put(wbuf *b, const void *src, size_t n)
{
    if (b->oom)
        return;
    if (b->n + n > b->cap) {
        size_t nc = b->cap ? b->cap : 4096;
        while (nc < b->n + n)
            nc *= 2;
        uint8_t *np = realloc(b->p, nc);
        if (!np) {
            b->oom = 1;
            return;
        }
        b->p = np;
        b->cap = nc;
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
}

static void put_u32(wbuf *b, uint32_t v)
{
    uint8_t t[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    put(b, t, 4);
}

static void put_u64(wbuf *b, uint64_t v)
{
    put_u32(b, (uint32_t)v);
    put_u32(b, (uint32_t)(v >> 32));
}

static void put_f32(wbuf *b, float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    put_u32(b, u);
}

static void put_f32s(wbuf *b, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        put_f32(b, x[i]);
}

typedef struct {
    const uint8_t *p;
    size_t n, at;
    int short_read;
} rbuf;

static uint32_t get_u32(rbuf *b)
{
    if (b->at + 4 > b->n) {
        b->short_read = 1;
        return 0;
    }
    const uint8_t *t = b->p + b->at;
    b->at += 4;
    return (uint32_t)t[0] | (uint32_t)t[1] << 8 | (uint32_t)t[2] << 16 | (uint32_t)t[3] << 24;
}

static uint64_t get_u64(rbuf *b)
{
    uint64_t lo = get_u32(b);
    return lo | (uint64_t)get_u32(b) << 32;
}

static float get_f32(rbuf *b)
{
    uint32_t u = get_u32(b);
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* CRC-32 continued over n more bytes (crc: the running value, 0 to start). */
static uint32_t crc32_more(uint32_t crc, const uint8_t *p, size_t n)
{
    /* built per call: 256 entries cost nothing next to the file, and no
     * static state means no race between threads */
    uint32_t table[256];
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        table[i] = c;
    }
    uint32_t c = crc ^ 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++)
        c = table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

uint32_t engine_crc32(const void *p, size_t n) { return crc32_more(0, p, n); }

/* engine.h: all the bytes up to 16 MiB, else 256 windows of 64 KiB */
void engine_data_id_of(const dataset *d, engine_data_id *id)
{
    enum { WHOLE = 16 << 20, WINDOWS = 256, WINDOW = 64 << 10 };
    memset(id, 0, sizeof *id);
    id->known = 1;
    id->from_file = d->from_file;
    id->n = d->n;
    snprintf(id->name, sizeof id->name, "%.1023s", d->from_file ? d->name : "");
    if (d->n <= WHOLE) {
        id->print = crc32_more(0, d->bytes, d->n);
        return;
    }
    uint32_t c = 0;
    for (size_t k = 0; k < WINDOWS; k++)
        c = crc32_more(c, d->bytes + (d->n - WINDOW) / (WINDOWS - 1) * k, WINDOW);
    id->print = c;
}

const engine_data_id *engine_loaded_data(const engine *e) { return &e->loaded; }

/* The header's settings are the settings table's checkpoint fields, in
 * their order (settings.c). Versions 1..3 hold the first ckpt_fields[v];
 * from version 4 the header says how many it holds, so a row given the
 * next field number is saved with no new version, and a file saved before
 * it loads with that setting's default. */
static const int ckpt_fields[] = {0, 32, 33, 33};

/* The fields this build writes: the table's highest number. */
static int ckpt_count(void)
{
    int n = 0;
    for (int i = 0; i < settings_count(); i++)
        if (settings_row(i)->ckpt > n)
            n = settings_row(i)->ckpt;
    return n;
}

static const ns_setting *ckpt_row(int pos)
{
    for (int i = 0; i < settings_count(); i++)
        if (settings_row(i)->ckpt == pos)
            return settings_row(i);
    return NULL;
}

static void put_setting(wbuf *b, const ns_setting *s, const ns_config *c)
{
    const void *p = settings_field(s, (ns_config *)c);
    switch (s->type) {
    case SET_LONG: put_u64(b, (uint64_t)*(const long *)p); break;
    case SET_U64: put_u64(b, *(const uint64_t *)p); break;
    case SET_REAL: case SET_LOSS_SCALE: put_f32(b, *(const float *)p); break;
    case SET_BETAS: put_f32s(b, (const float *)p, 2); break;
    default: put_u32(b, (uint32_t)*(const int *)p); break; /* ints, enums, on/off */
    }
}

static void get_setting(rbuf *b, const ns_setting *s, ns_config *c)
{
    void *p = settings_field(s, c);
    switch (s->type) {
    case SET_LONG: *(long *)p = (long)get_u64(b); break;
    case SET_U64: *(uint64_t *)p = get_u64(b); break;
    case SET_REAL: case SET_LOSS_SCALE: *(float *)p = get_f32(b); break;
    case SET_BETAS:
        ((float *)p)[0] = get_f32(b);
        ((float *)p)[1] = get_f32(b);
        break;
    default: *(int *)p = (int)get_u32(b); break;
    }
}

/* The run state after the settings: where the run is, not how it is set;
 * from version 3, the data it trained on. */
typedef struct {
    long step, opt_t, good;
    uint64_t rng_s;
    schedule sc;
    float dyn_scale;
    engine_data_id data;
} run_state;

static void put_data_id(wbuf *b, const dataset *d)
{
    engine_data_id id;
    engine_data_id_of(d, &id);
    size_t len = strlen(id.name);
    put_u32(b, (uint32_t)id.from_file);
    put_u64(b, id.n);
    put_u32(b, id.print);
    put_u32(b, (uint32_t)len);
    put(b, id.name, len);
}

static void put_header(wbuf *b, const engine *e)
{
    put_u32(b, (uint32_t)ckpt_count());
    for (int pos = 1; pos <= ckpt_count(); pos++)
        put_setting(b, ckpt_row(pos), &e->cfg);
    put_u64(b, (uint64_t)e->step);
    put_u64(b, (uint64_t)e->opt.t);
    put_u64(b, e->rng.s);
    put_f32(b, e->sched.peak);
    put_u32(b, (uint32_t)e->sched.warmup);
    put_u32(b, (uint32_t)e->sched.warmup_on);
    put_u64(b, (uint64_t)e->sched.ramp_start);
    put_u64(b, (uint64_t)e->sched.total);
    put_u32(b, (uint32_t)e->sched.cos_start);
    put_f32(b, e->scale);
    put_u64(b, (uint64_t)e->good);
    put_data_id(b, e->data);
}

/* The data's record; a name longer than the field is left unread, for
 * read_header to refuse. */
static void get_data_id(rbuf *b, engine_data_id *id)
{
    id->known = 1;
    id->from_file = (int)get_u32(b);
    id->n = get_u64(b);
    id->print = get_u32(b);
    uint32_t len = get_u32(b);
    if (len >= sizeof id->name || b->at + len > b->n) {
        id->known = -1; /* malformed */
        return;
    }
    memcpy(id->name, b->p + b->at, len);
    id->name[len] = 0;
    b->at += len;
}

/* The header after its settings count: fields 1..fields, the run state. */
static void get_header(rbuf *b, uint32_t ver, int fields, ns_config *c, run_state *r)
{
    settings_defaults(c);
    memset(r, 0, sizeof *r);
    for (int pos = 1; pos <= fields; pos++)
        get_setting(b, ckpt_row(pos), c);
    r->step = (long)get_u64(b);
    r->opt_t = (long)get_u64(b);
    r->rng_s = get_u64(b);
    r->sc.peak = get_f32(b);
    r->sc.warmup = (int)get_u32(b);
    r->sc.warmup_on = (int)get_u32(b);
    r->sc.ramp_start = (long)get_u64(b);
    r->sc.total = (long)get_u64(b);
    r->sc.cos_start = (int)get_u32(b);
    r->sc.kind = c->schedule;
    r->dyn_scale = get_f32(b);
    r->good = (long)get_u64(b);
    if (ver >= 3)
        get_data_id(b, &r->data);
}

/* The first header field out of range, its value and what is allowed, in
 * bad (NULL: none). The settings go through the table's range check, sizes
 * first (table order): a corrupt size must not drive a huge allocation.
 * Then the run state, whose fields have no row. */
static const char *header_bad(const ns_config *c, const run_state *r, char *bad, size_t len)
{
    char v[64], allowed[160];
    for (int pos = 1; pos <= ckpt_count(); pos++) {
        const ns_setting *s = ckpt_row(pos);
        if (settings_check(s, c) != 0) {
            settings_format(s, c, v, sizeof v);
            settings_allowed(s, allowed, sizeof allowed);
            snprintf(bad, len, "'%s' out of range: %s, %s", s->name, v, allowed);
            return bad;
        }
        if (!strcmp(s->name, "heads") && c->dim % c->n_head) {
            snprintf(bad, len, "'heads' out of range: %d does not divide dim %d", c->n_head,
                     c->dim);
            return bad;
        }
    }
    const struct {
        int ok;
        const char *what;
        double x;
        const char *allowed;
    } state[] = {
        {c->mix_k <= c->n_layer, "mix-k", c->mix_k, "at most layers"},
        {r->step >= 0 && r->step <= 1e12, "step", (double)r->step, "0..1e12"},
        {r->opt_t >= 0 && r->opt_t <= 1e12, "optimizer step", (double)r->opt_t, "0..1e12"},
        {isfinite(r->sc.peak) && r->sc.peak > 0, "peak LR", r->sc.peak, "a number above 0"},
        {r->sc.warmup >= 1 && r->sc.warmup <= 1e7, "warmup ramp", r->sc.warmup, "1..1e7"},
        {r->sc.warmup_on == 0 || r->sc.warmup_on == 1, "warmup on", r->sc.warmup_on, "0 or 1"},
        {r->sc.ramp_start >= 0 && r->sc.ramp_start <= 1e12, "ramp start",
         (double)r->sc.ramp_start, "0..1e12"},
        {r->sc.total >= 0 && r->sc.total <= 1e9, "schedule steps", (double)r->sc.total, "0..1e9"},
        {r->sc.cos_start >= 0 && r->sc.cos_start <= 1e7, "cosine start", r->sc.cos_start,
         "0..1e7"},
        {isfinite(r->dyn_scale) && r->dyn_scale > 0, "loss scale", r->dyn_scale,
         "a number above 0"},
        {r->good >= 0 && r->good <= 1e12, "clean steps", (double)r->good, "0..1e12"},
        {r->data.known >= 0 && (r->data.from_file == 0 || r->data.from_file == 1), "data",
         r->data.from_file, "a name under 1024 bytes, from_file 0 or 1"},
};
    for (size_t i = 0; i < sizeof state / sizeof state[0]; i++)
        if (!state[i].ok) {
            snprintf(bad, len, "'%s' out of range: %g, expected %s", state[i].what, state[i].x,
                     state[i].allowed);
            return bad;
        }
    return NULL;
}

int engine_save(const engine *e, const char *path, char *err, size_t errlen)
{
    wbuf b = {0};
    wbuf h = {0};
    put_header(&h, e);
    put(&b, CKPT_MAGIC, 8);
    put_u32(&b, CKPT_VERSION);
    put_u32(&b, (uint32_t)h.n);
    put(&b, h.p, h.n);
    free(h.p);
    put_u64(&b, e->m.n_params);
    put_f32s(&b, e->m.params, e->m.n_params);
    put_f32s(&b, e->opt.m, e->m.n_params);
    put_f32s(&b, e->opt.v, e->m.n_params);
    put_u32(&b, (uint32_t)e->diag_n);
    if (e->diag_n)
        put(&b, e->diag_state, e->diag_n);
    if (!b.oom)
        put_u32(&b, engine_crc32(b.p, b.n));
    if (b.oom || h.oom) {
        free(b.p);
        snprintf(err, errlen, "--save %s: out of memory", path);
        return -1;
    }

    /* temp file in the same directory, fsync, rename (atomicio.c): a crash
     * or a full disk leaves any old file at path as it was */
    char why[600];
    int r = atomicio_write_file(path, b.p, b.n, why, sizeof why);
    free(b.p);
    if (r != 0)
        snprintf(err, errlen, "--save %s", why);
    return r;
}

int engine_set_diag_state(engine *e, const void *p, size_t n)
{
    uint8_t *q = n ? malloc(n) : NULL;
    if (n && !q)
        return -1;
    if (n)
        memcpy(q, p, n);
    free(e->diag_state);
    e->diag_state = q, e->diag_n = n;
    return 0;
}

const uint8_t *engine_diag_state(const engine *e, size_t *n)
{
    *n = e->diag_n;
    return e->diag_state;
}

unsigned engine_loaded_version(const engine *e) { return e->loaded_version; }

/* A checkpoint from a pipe or a device, as data_read_all reads it, but a
 * stream that does not open with the magic ends there: its first bytes are
 * returned alone, for the magic check to refuse without reading on. */
static int read_stream(FILE *f, size_t max, uint8_t **out, size_t *n)
{
    uint8_t head[8];
    size_t got = fread(head, 1, sizeof head, f);
    if (got < sizeof head || memcmp(head, CKPT_MAGIC, sizeof head) != 0) {
        if (ferror(f))
            return -1;
        if (!(*out = malloc(sizeof head)))
            return -3;
        memcpy(*out, head, got);
        *n = got;
        return 0;
    }
    uint8_t *rest;
    size_t rn;
    int r = data_read_all(f, max - sizeof head, &rest, &rn);
    if (r != 0)
        return r;
    uint8_t *p = realloc(rest, rn + sizeof head + 1);
    if (!p) {
        free(rest);
        return -3;
    }
    memmove(p + sizeof head, p, rn + 1);
    memcpy(p, head, sizeof head);
    *out = p;
    *n = rn + sizeof head;
    return 0;
}

static int read_file(const char *path, uint8_t **out, size_t *n, char *err, size_t errlen)
{
    struct stat st;
    FILE *f = fopen(path, "rb");
    if (!f || fstat(fileno(f), &st) != 0) {
        snprintf(err, errlen, "--load %s: %s", path, strerror(errno));
        if (f)
            fclose(f);
        return -1;
    }
    if (S_ISDIR(st.st_mode)) {
        fclose(f);
        snprintf(err, errlen, "--load %s: is a directory, not a checkpoint", path);
        return -1;
    }
    /* a file is read to its size; a pipe or device (/dev/zero) only up to
     * the stream limit of --data, not until memory runs out, and not past
     * a first 8 bytes that are not the magic */
    int regular = S_ISREG(st.st_mode) && st.st_size > 0;
    size_t max = regular ? (size_t)st.st_size : DATA_STREAM_MAX;
    errno = 0;
    int r = regular ? data_read_all(f, max, out, n) : read_stream(f, max, out, n);
    int e = errno;
    fclose(f);
    if (r == -2 && regular)
        snprintf(err, errlen, "--load %s: the file grew while it was read", path);
    else if (r == -2)
        snprintf(err, errlen, "--load %s: more than %zu MiB from a pipe or a device: "
                 "not a checkpoint", path, max >> 20);
    else if (r != 0)
        snprintf(err, errlen, "--load %s: %s", path,
                 r == -3 ? "out of memory" : e ? strerror(e) : "read error");
    return r ? -1 : 0;
}

/* The header after the version: its length, settings and run state,
 * checked. 0, or -1 with the reason (by byte and by field) in err. */
/* The first value of a loaded checkpoint no run could have written from
 * a finite step: a non-finite weight or moment (a run saved after it
 * diverged, or a forged file whose CRC was recomputed), or a negative
 * second moment (its square root is NaN). -1 with the tensor's name, the
 * array and the element in err; 0 when every value is fit to train on. */
static int ckpt_values_bad(const engine *e, const char *path, char *err, size_t errlen)
{
    const float *arr[3] = {e->m.params, e->opt.m, e->opt.v};
    const char *what[3] = {"weights", "first moments", "second moments"};
    for (int a = 0; a < 3; a++)
        for (int k = 0; k < e->m.n_tensors; k++) {
            const model_tensor *t = &e->m.tensors[k];
            for (size_t i = 0; i < t->size; i++) {
                float x = arr[a][t->offset + i];
                if (isfinite(x) && !(a == 2 && x < 0))
                    continue;
                char name[48];
                if (t->layer >= 0)
                    snprintf(name, sizeof name, "layer %d %s", t->layer, t->name);
                else
                    snprintf(name, sizeof name, "%s", t->name);
                snprintf(err, errlen, "--load %s: the %s of tensor '%s' hold %s at element %zu: "
                         "not a state a run can train on", path, what[a], name,
                         isnan(x) ? "nan" : isinf(x) ? (x > 0 ? "inf" : "-inf") : "a negative value",
                         i);
                return -1;
            }
        }
    return 0;
}

static int read_header(rbuf *b, uint32_t ver, ns_config *c, run_state *rs, const char *path,
                       char *err, size_t errlen)
{
    size_t hlen_at = b->at; /* for messages: where the length field is */
    uint32_t hlen = get_u32(b);
    size_t hend = b->at + hlen;
    uint32_t fields = ver >= 4 ? get_u32(b) : (uint32_t)ckpt_fields[ver];
    if (ver >= 4 && !b->short_read &&
        (fields < (uint32_t)ckpt_fields[3] || fields > (uint32_t)ckpt_count())) {
        snprintf(err, errlen, "--load %s: the header holds %u settings, this normscope knows "
                 "%d..%d (a newer normscope's checkpoint, or corrupt)", path, fields,
                 ckpt_fields[3], ckpt_count());
        return -1;
    }
    get_header(b, ver, (int)fields, c, rs);
    if (b->short_read) {
        snprintf(err, errlen, "--load %s: truncated header: the file ends at byte %zu", path,
                 b->n);
        return -1;
    }
    if (b->at != hend) {
        snprintf(err, errlen,
                 "--load %s: malformed header: its length at byte %zu says %u bytes, "
                 "its fields take %zu",
                 path, hlen_at, hlen, b->at - hlen_at - 4);
        return -1;
    }
    char bad[320];
    if (header_bad(c, rs, bad, sizeof bad)) {
        snprintf(err, errlen,
                 "--load %s: header field %s (the header at bytes %zu-%zu is corrupt?)", path, bad,
                 hlen_at, hend - 1);
        return -1;
    }
    return 0;
}

/* The weights and moments from b into e, checked, then the run state: 0,
 * or -1 with the first value no run can train on in err. */
static int restore(engine *e, rbuf *b, uint32_t ver, const run_state *rs, const char *path,
                   char *err, size_t errlen)
{
    /* before version 5 the file has no QK-norm tensors: they keep their
     * initial values, their moments the zeros of a new run */
    int noqk = ver < CKPT_QK_VERSION;
    if (noqk)
        model_init_qk_norm(&e->m, e->m.params, e->cfg.dyt_alpha);
    float *arr[3] = {e->m.params, e->opt.m, e->opt.v};
    for (int a = 0; a < 3; a++)
        for (int k = 0; k < e->m.n_tensors; k++) {
            const model_tensor *t = &e->m.tensors[k];
            if (noqk && model_tensor_qk(t))
                continue;
            for (size_t i = 0; i < t->size; i++)
                arr[a][t->offset + i] = get_f32(b);
        }
    if (ckpt_values_bad(e, path, err, errlen) != 0)
        return -1;
    e->step = rs->step;
    e->opt.t = rs->opt_t;
    e->rng.s = rs->rng_s;
    e->sched = rs->sc;
    e->scale = rs->dyn_scale;
    e->good = rs->good;
    e->loaded = rs->data;
    if (e->cfg.snapshot_every > 0)
        engine_snapshot(e);
    event(e, "resumed from %s at step %ld", path, rs->step);
    return 0;
}

/* The magic and the format version at the start of a checkpoint of n
 * bytes: the version, or 0 with the reason in err. */
static uint32_t ckpt_version(rbuf *b, const char *path, char *err, size_t errlen)
{
    if (b->n < 16 || memcmp(b->p, CKPT_MAGIC, 8) != 0) {
        snprintf(err, errlen, "--load %s: not a normscope checkpoint (bad magic)", path);
        return 0;
    }
    b->at = 8;
    uint32_t ver = get_u32(b);
    if (ver < 1 || ver > CKPT_VERSION) {
        snprintf(err, errlen, "--load %s: format version %u, this normscope reads 1..%u", path,
                 ver, CKPT_VERSION);
        return 0;
    }
    return ver;
}

/* After the header: the parameter count (*np), the diagnosis' state's
 * length (*dn, from version 6: after the moments), and the file's length
 * and checksum against them: 0, or -1 with the first mismatch in err. */
static int ckpt_body(rbuf *b, uint32_t ver, uint64_t *np, uint32_t *dn, const char *path,
                     char *err, size_t errlen)
{
    const uint8_t *p = b->p;
    size_t n = b->n;
    *np = get_u64(b);
    *dn = 0;
    /* at most 2^32 parameters, and a size a 32-bit size_t holds: the
     * count is checked in 64 bits before it is multiplied */
    if (!b->short_read && (*np > ((uint64_t)1 << 32) || *np > (SIZE_MAX - b->at - 4) / 12)) {
        snprintf(err, errlen, "--load %s: %llu parameters (corrupt)", path,
                 (unsigned long long)*np);
        return -1;
    }
    size_t need = b->at + (size_t)*np * 12 + 4;
    if (ver >= CKPT_DIAG_VERSION && !b->short_read && n >= need + 4) {
        rbuf at = {p, n, need - 4, 0};
        *dn = get_u32(&at);
        if (*dn > CKPT_DIAG_MAX || *dn > n - need - 4) {
            snprintf(err, errlen, "--load %s: the diagnosis' state says %u bytes (corrupt)", path,
                     *dn);
            return -1;
        }
        need += 4 + *dn;
    }
    if (b->short_read || n != need) {
        snprintf(err, errlen, "--load %s: %zu bytes, expected %zu (truncated or corrupt)", path,
                 n, need);
        return -1;
    }
    uint32_t crc_stored = (uint32_t)p[n - 4] | (uint32_t)p[n - 3] << 8 |
                          (uint32_t)p[n - 2] << 16 | (uint32_t)p[n - 1] << 24;
    if (engine_crc32(p, n - 4) != crc_stored) {
        snprintf(err, errlen, "--load %s: checksum mismatch (the file is corrupt)", path);
        return -1;
    }
    return 0;
}

/* Before any allocation: the header (which passed its own checks) names
 * a model of np parameters, and one this machine can hold (its batch and
 * heads fix the memory whatever the file's size): 0, or -1 and err. */
static int ckpt_fits(const ns_config *c, uint32_t ver, uint64_t np, const char *path,
                     char *err, size_t errlen)
{
    size_t want = ver < CKPT_QK_VERSION ? model_param_count_noqk(c) : model_param_count(c);
    if (want != np) {
        snprintf(err, errlen, "--load %s: %llu parameters, the model it describes has %zu", path,
                 (unsigned long long)np, want);
        return -1;
    }
    double mem = engine_bytes_needed(c), have = engine_machine_bytes();
    if (have > 0 && mem > have) {
        snprintf(err, errlen, "--load %s: the model it describes needs %.1f GiB of memory, the "
                 "machine has %.1f GiB", path, mem / 1073741824.0, have / 1073741824.0);
        return -1;
    }
    return 0;
}

engine *engine_load(const char *path, const dataset *data, ns_config *cfg_out, char *err,
                    size_t errlen)
{
    uint8_t *p;
    size_t n;
    if (read_file(path, &p, &n, err, errlen) != 0)
        return NULL;
    engine *e = NULL;
    rbuf b = {p, n, 0, 0};
    ns_config c;
    run_state rs;
    uint64_t np;
    uint32_t dn, ver = ckpt_version(&b, path, err, errlen);
    if (!ver || read_header(&b, ver, &c, &rs, path, err, errlen) != 0 ||
        ckpt_body(&b, ver, &np, &dn, path, err, errlen) != 0 ||
        ckpt_fits(&c, ver, np, path, err, errlen) != 0)
        goto out;
    e = engine_alloc(&c, data, err, errlen);
    if (e && restore(e, &b, ver, &rs, path, err, errlen) != 0) {
        engine_free(e);
        e = NULL;
    }
    /* the diagnosis' state: its dn bytes end 4 before the checksum */
    if (e && dn && engine_set_diag_state(e, p + n - 4 - dn, dn) != 0) {
        snprintf(err, errlen, "--load %s: out of memory", path);
        engine_free(e);
        e = NULL;
    }
    if (e) {
        e->loaded_version = ver;
        *cfg_out = c;
    }
out:
    free(p);
    return e;
}
