/* model.c - parameter layout, initialization, forward and backward of the
 * Transformer for every norm placement. Pure computation: no I/O, no
 * threads, no global state. See model.h for the layout.
 */
#include "model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"

static const char *const layer_names[PT_LAYER_COUNT] = {
    "ln1w", "ln1b", "ln2w", "ln2b", "qkvw", "qkvb", "attprojw", "attprojb",
    "fcw", "fcb", "fcprojw", "fcprojb",
};

/* Element counts of one layer's tensors, in layout order. */
static void layer_sizes(size_t sz[PT_LAYER_COUNT], size_t C)
{
    sz[PT_LN1W] = sz[PT_LN1B] = sz[PT_LN2W] = sz[PT_LN2B] = C;
    sz[PT_QKVW] = 3 * C * C;
    sz[PT_QKVB] = 3 * C;
    sz[PT_ATTPROJW] = C * C;
    sz[PT_ATTPROJB] = C;
    sz[PT_FCW] = 4 * C * C;
    sz[PT_FCB] = 4 * C;
    sz[PT_FCPROJW] = 4 * C * C;
    sz[PT_FCPROJB] = C;
}

static size_t param_count(size_t L, size_t C, size_t T, size_t V)
{
    size_t sz[PT_LAYER_COUNT], per = 0;
    layer_sizes(sz, C);
    for (int i = 0; i < PT_LAYER_COUNT; i++)
        per += sz[i];
    return V * C + T * C + L * per + 2 * C + V * C + V;
}

static size_t act_count(size_t L, size_t B, size_t T, size_t C, size_t NH, size_t V)
{
    size_t BT = B * T;
    return BT * C                                  /* encoded */
           + L * (BT * C * 2 + BT * 2)             /* ln1, ln2 */
           + L * (BT * 2 * 2)                      /* their mean, rstd */
           + L * BT * 3 * C                        /* qkv */
           + L * BT * C * 4                        /* atty, attproj, res1, res2 */
           + L * B * NH * T * T                    /* att */
           + L * BT * 4 * C * 2                    /* fch, fch_gelu */
           + L * BT * C                            /* fcproj */
           + BT * C + 2 * BT                       /* lnf, mean, rstd */
           + BT * V * 2 + BT;                      /* logits, probs, losses */
}

static size_t scratch_count(size_t B, size_t T, size_t C, size_t V)
{
    size_t BT = B * T;
    return BT * C * 3 + BT * 3 * C + BT * 4 * C * 2 + BT * V + T;
}

double model_bytes_needed(const ns_config *c)
{
    size_t L = c->n_layer, C = c->dim, T = c->context, B = c->batch, NH = c->n_head;
    double p = (double)param_count(L, C, T, NS_VOCAB);
    /* params + grads (+ two Adam moments, which the optimizer owns) */
    return 4.0 * (4.0 * p + (double)act_count(L, B, T, C, NH, NS_VOCAB) +
                  (double)scratch_count(B, T, C, NS_VOCAB));
}

/* Hand out the next n floats of a buffer. */
static float *carve(float **p, size_t n)
{
    float *r = *p;
    *p += n;
    return r;
}

int model_create(model *m, const ns_config *cfg)
{
    memset(m, 0, sizeof *m);
    m->L = cfg->n_layer;
    m->C = cfg->dim;
    m->NH = cfg->n_head;
    m->T = cfg->context;
    m->B = cfg->batch;
    m->V = NS_VOCAB;
    m->norm = cfg->norm;
    m->kind = cfg->norm_kind;
    m->eps = cfg->eps;
    size_t L = m->L, C = m->C, T = m->T, B = m->B, NH = m->NH, V = m->V;

    /* parameter table */
    size_t sz[PT_LAYER_COUNT];
    layer_sizes(sz, C);
    m->n_tensors = 2 + (int)L * PT_LAYER_COUNT + 4;
    m->tensors = calloc((size_t)m->n_tensors, sizeof *m->tensors);
    if (!m->tensors)
        return -1;
    size_t off = 0;
    int k = 0;
    m->wte = off;
    m->tensors[k++] = (model_tensor){"wte", off, V * C, -1, 1};
    off += V * C;
    m->wpe = off;
    m->tensors[k++] = (model_tensor){"wpe", off, T * C, -1, 1};
    off += T * C;
    m->layer0 = off;
    size_t lo = 0;
    for (int i = 0; i < PT_LAYER_COUNT; i++) {
        m->layer_off[i] = lo;
        lo += sz[i];
    }
    m->layer_stride = lo;
    for (size_t l = 0; l < L; l++) {
        for (int i = 0; i < PT_LAYER_COUNT; i++) {
            int is_matrix = i == PT_QKVW || i == PT_ATTPROJW || i == PT_FCW || i == PT_FCPROJW;
            m->tensors[k++] = (model_tensor){layer_names[i], off, sz[i], (int)l, is_matrix};
            off += sz[i];
        }
    }
    m->lnfw = off;
    m->tensors[k++] = (model_tensor){"lnfw", off, C, -1, 0};
    off += C;
    m->lnfb = off;
    m->tensors[k++] = (model_tensor){"lnfb", off, C, -1, 0};
    off += C;
    m->headw = off;
    m->tensors[k++] = (model_tensor){"headw", off, V * C, -1, 1};
    off += V * C;
    m->headb = off;
    m->tensors[k++] = (model_tensor){"headb", off, V, -1, 0};
    off += V;
    m->n_params = off;

    m->params = calloc(m->n_params, sizeof(float));
    m->grads = calloc(m->n_params, sizeof(float));
    m->n_acts = act_count(L, B, T, C, NH, V);
    m->acts = malloc(m->n_acts * sizeof(float));
    m->n_scratch = scratch_count(B, T, C, V);
    m->scratch = malloc(m->n_scratch * sizeof(float));
    m->stats = calloc(L, sizeof *m->stats);
    if (!m->params || !m->grads || !m->acts || !m->scratch || !m->stats) {
        model_free(m);
        return -1;
    }
    /* zero once so reading a buffer that was never written is defined */
    memset(m->acts, 0, m->n_acts * sizeof(float));

    size_t BT = B * T;
    float *p = m->acts;
    m->encoded = carve(&p, BT * C);
    m->ln1 = carve(&p, L * BT * C);
    m->ln1_mean = carve(&p, L * BT);
    m->ln1_rstd = carve(&p, L * BT);
    m->qkv = carve(&p, L * BT * 3 * C);
    m->atty = carve(&p, L * BT * C);
    m->att = carve(&p, L * B * NH * T * T);
    m->attproj = carve(&p, L * BT * C);
    m->res1 = carve(&p, L * BT * C);
    m->ln2 = carve(&p, L * BT * C);
    m->ln2_mean = carve(&p, L * BT);
    m->ln2_rstd = carve(&p, L * BT);
    m->fch = carve(&p, L * BT * 4 * C);
    m->fch_gelu = carve(&p, L * BT * 4 * C);
    m->fcproj = carve(&p, L * BT * C);
    m->res2 = carve(&p, L * BT * C);
    m->lnf = carve(&p, BT * C);
    m->lnf_mean = carve(&p, BT);
    m->lnf_rstd = carve(&p, BT);
    m->logits = carve(&p, BT * V);
    m->probs = carve(&p, BT * V);
    m->losses = carve(&p, BT);
    p = m->scratch;
    m->dresid = carve(&p, BT * C);
    m->dtmp = carve(&p, BT * C);
    m->datty = carve(&p, BT * C);
    m->dqkv = carve(&p, BT * 3 * C);
    m->dfch = carve(&p, BT * 4 * C);
    m->dfch_gelu = carve(&p, BT * 4 * C);
    m->dlogits = carve(&p, BT * V);
    m->drow = carve(&p, T);
    return 0;
}

void model_free(model *m)
{
    free(m->tensors);
    free(m->params);
    free(m->grads);
    free(m->acts);
    free(m->scratch);
    free(m->stats);
    memset(m, 0, sizeof *m);
}

static void fill_normal(float *x, size_t n, float std, ns_rng *r)
{
    for (size_t i = 0; i < n; i++)
        x[i] = std * rng_normal(r);
}

static void fill_uniform(float *x, size_t n, float a, ns_rng *r)
{
    for (size_t i = 0; i < n; i++)
        x[i] = a * (2.0f * rng_uniform(r) - 1.0f);
}

void model_init(model *m, const ns_config *cfg, ns_rng *rng)
{
    memset(m->params, 0, m->n_params * sizeof(float));
    for (int k = 0; k < m->n_tensors; k++) {
        const model_tensor *t = &m->tensors[k];
        float *x = m->params + t->offset;
        const char *nm = t->name;
        if (!strcmp(nm, "ln1w") || !strcmp(nm, "ln2w") || !strcmp(nm, "lnfw")) {
            for (size_t i = 0; i < t->size; i++)
                x[i] = 1.0f;
        } else if (!strcmp(nm, "wte") || !strcmp(nm, "wpe")) {
            fill_normal(x, t->size, cfg->init_std, rng);
        } else if (t->is_matrix || !strcmp(nm, "headw")) {
            if (cfg->init == INIT_NORMAL) {
                fill_normal(x, t->size, cfg->init_std, rng);
            } else {
                /* Glorot & Bengio 2010: U(-a, a), a = sqrt(6 / (fan_in + fan_out)).
                 * Every matrix here is (out, in) with in = size / out. */
                size_t fan_out = !strcmp(nm, "qkvw")   ? 3 * (size_t)m->C
                                 : !strcmp(nm, "fcw")  ? 4 * (size_t)m->C
                                 : !strcmp(nm, "headw") ? (size_t)m->V
                                                        : (size_t)m->C;
                size_t fan_in = t->size / fan_out;
                fill_uniform(x, t->size, sqrtf(6.0f / (float)(fan_in + fan_out)), rng);
            }
        }
        /* biases stay 0 */
    }
}

void model_set_norm(model *m, norm_place p) { m->norm = p; }
void model_set_norm_kind(model *m, norm_kind k) { m->kind = k; }

double model_l2(const float *x, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++)
        s += (double)x[i] * x[i];
    return sqrt(s);
}

void model_group_slice(const model *m, int l, model_group g, size_t *off, size_t *n)
{
    size_t base = m->layer0 + (size_t)l * m->layer_stride;
    switch (g) {
    case GROUP_LN:
        *off = base + m->layer_off[PT_LN1W];
        *n = m->layer_off[PT_QKVW] - m->layer_off[PT_LN1W];
        break;
    case GROUP_ATTN:
        *off = base + m->layer_off[PT_QKVW];
        *n = m->layer_off[PT_FCW] - m->layer_off[PT_QKVW];
        break;
    case GROUP_FFN:
        *off = base + m->layer_off[PT_FCW];
        *n = m->layer_stride - m->layer_off[PT_FCW];
        break;
    default:
        *off = base;
        *n = m->layer_stride;
        break;
    }
}

/* Normalization of either kind; b is ignored by RMSNorm. */
static void norm_fwd(const model *m, float *out, float *mean, float *rstd, const float *inp,
                     const float *w, const float *b, int N)
{
    if (m->kind == NORMK_RMSNORM)
        rmsnorm_forward(out, mean, rstd, inp, w, N, m->C, m->eps);
    else
        layernorm_forward(out, mean, rstd, inp, w, b, N, m->C, m->eps);
}

static void norm_bwd(const model *m, float *dinp, float *dw, float *db, const float *dout,
                     const float *inp, const float *w, const float *mean, const float *rstd,
                     int N)
{
    if (m->kind == NORMK_RMSNORM)
        rmsnorm_backward(dinp, dw, dout, inp, w, rstd, N, m->C);
    else
        layernorm_backward(dinp, dw, db, dout, inp, w, mean, rstd, N, m->C);
}

static void add(float *out, const float *a, const float *b, long n)
{
    for (long i = 0; i < n; i++)
        out[i] = a[i] + b[i];
}

/* Pointers to one layer's parameters (or gradients) and activations. */
typedef struct {
    float *t[PT_LAYER_COUNT];
} layer_params;

static layer_params layer_ptrs(const model *m, float *base, int l)
{
    layer_params p;
    float *b = base + m->layer0 + (size_t)l * m->layer_stride;
    for (int i = 0; i < PT_LAYER_COUNT; i++)
        p.t[i] = b + m->layer_off[i];
    return p;
}

typedef struct {
    float *ln1, *ln1_mean, *ln1_rstd, *qkv, *atty, *att, *attproj, *res1;
    float *ln2, *ln2_mean, *ln2_rstd, *fch, *fch_gelu, *fcproj, *res2;
} layer_acts;

static layer_acts layer_act_ptrs(const model *m, int l)
{
    size_t BT = (size_t)m->B * m->T, C = m->C;
    layer_acts a;
    a.ln1 = m->ln1 + l * BT * C;
    a.ln1_mean = m->ln1_mean + l * BT;
    a.ln1_rstd = m->ln1_rstd + l * BT;
    a.qkv = m->qkv + l * BT * 3 * C;
    a.atty = m->atty + l * BT * C;
    a.att = m->att + l * (size_t)m->B * m->NH * m->T * m->T;
    a.attproj = m->attproj + l * BT * C;
    a.res1 = m->res1 + l * BT * C;
    a.ln2 = m->ln2 + l * BT * C;
    a.ln2_mean = m->ln2_mean + l * BT;
    a.ln2_rstd = m->ln2_rstd + l * BT;
    a.fch = m->fch + l * BT * 4 * C;
    a.fch_gelu = m->fch_gelu + l * BT * 4 * C;
    a.fcproj = m->fcproj + l * BT * C;
    a.res2 = m->res2 + l * BT * C;
    return a;
}

/* The residual stream leaving block l. */
static float *block_out(const model *m, int l)
{
    layer_acts a = layer_act_ptrs(m, l);
    return m->norm == NORM_POST ? a.ln2 : a.res2;
}

static float max2(float a, float b) { return (a != a || b != b) ? NAN : (a > b ? a : b); }

float model_forward(model *m, const uint8_t *tokens, const uint8_t *targets, int B)
{
    int T = m->T, C = m->C, NH = m->NH, V = m->V, N = B * T;
    m->last_tokens = tokens;
    m->last_targets = targets;
    m->last_B = B;
    float *P = m->params;
    encoder_forward(m->encoded, tokens, P + m->wte, P + m->wpe, B, T, C);

    const float *x = m->encoded;
    for (int l = 0; l < m->L; l++) {
        layer_params w = layer_ptrs(m, P, l);
        layer_acts a = layer_act_ptrs(m, l);
        long nC = (long)N * C;
        if (m->norm == NORM_PRE) {
            /* x1 = x + Attn(LN1(x)); out = x1 + MLP(LN2(x1)) */
            norm_fwd(m, a.ln1, a.ln1_mean, a.ln1_rstd, x, w.t[PT_LN1W], w.t[PT_LN1B], N);
            matmul_forward(a.qkv, a.ln1, w.t[PT_QKVW], w.t[PT_QKVB], N, C, 3 * C);
            attention_forward(a.atty, a.att, a.qkv, B, T, C, NH);
            matmul_forward(a.attproj, a.atty, w.t[PT_ATTPROJW], w.t[PT_ATTPROJB], N, C, C);
            add(a.res1, x, a.attproj, nC);
            norm_fwd(m, a.ln2, a.ln2_mean, a.ln2_rstd, a.res1, w.t[PT_LN2W], w.t[PT_LN2B], N);
            matmul_forward(a.fch, a.ln2, w.t[PT_FCW], w.t[PT_FCB], N, C, 4 * C);
            gelu_forward(a.fch_gelu, a.fch, N * 4 * C);
            matmul_forward(a.fcproj, a.fch_gelu, w.t[PT_FCPROJW], w.t[PT_FCPROJB], N, 4 * C, C);
            add(a.res2, a.res1, a.fcproj, nC);
        } else {
            /* x1 = LN1(x + Attn(x)); out = LN2(x1 + MLP(x1)) */
            matmul_forward(a.qkv, x, w.t[PT_QKVW], w.t[PT_QKVB], N, C, 3 * C);
            attention_forward(a.atty, a.att, a.qkv, B, T, C, NH);
            matmul_forward(a.attproj, a.atty, w.t[PT_ATTPROJW], w.t[PT_ATTPROJB], N, C, C);
            add(a.res1, x, a.attproj, nC);
            norm_fwd(m, a.ln1, a.ln1_mean, a.ln1_rstd, a.res1, w.t[PT_LN1W], w.t[PT_LN1B], N);
            matmul_forward(a.fch, a.ln1, w.t[PT_FCW], w.t[PT_FCB], N, C, 4 * C);
            gelu_forward(a.fch_gelu, a.fch, N * 4 * C);
            matmul_forward(a.fcproj, a.fch_gelu, w.t[PT_FCPROJW], w.t[PT_FCPROJB], N, 4 * C, C);
            add(a.res2, a.ln1, a.fcproj, nC);
            norm_fwd(m, a.ln2, a.ln2_mean, a.ln2_rstd, a.res2, w.t[PT_LN2W], w.t[PT_LN2B], N);
        }
        /* statistics: every activation the block made, then its output */
        float am = ops_absmax(a.qkv, nC * 3);
        am = max2(am, ops_absmax(a.ln1, nC));
        am = max2(am, ops_absmax(a.atty, nC));
        am = max2(am, ops_absmax(a.attproj, nC));
        am = max2(am, ops_absmax(a.res1, nC));
        am = max2(am, ops_absmax(a.ln2, nC));
        am = max2(am, ops_absmax(a.fch, nC * 4));
        am = max2(am, ops_absmax(a.fch_gelu, nC * 4));
        am = max2(am, ops_absmax(a.fcproj, nC));
        am = max2(am, ops_absmax(a.res2, nC));
        const float *out = block_out(m, l);
        double ss = 0.0;
        for (long i = 0; i < nC; i++)
            ss += (double)out[i] * out[i];
        m->stats[l].act_max = am;
        m->stats[l].resid_max = ops_absmax(out, nC);
        m->stats[l].resid_rms = (float)sqrt(ss / (double)nC);
        x = out;
    }

    const float *h = x;
    if (m->norm == NORM_PRE) {
        norm_fwd(m, m->lnf, m->lnf_mean, m->lnf_rstd, x, P + m->lnfw, P + m->lnfb, N);
        h = m->lnf;
    }
    matmul_forward(m->logits, h, P + m->headw, P + m->headb, N, C, V);
    softmax_forward(m->probs, m->logits, N, V);
    if (!targets)
        return 0.0f;
    crossentropy_forward(m->losses, m->logits, targets, N, V);
    double sum = 0.0;
    for (int i = 0; i < N; i++)
        sum += m->losses[i];
    return (float)(sum / N);
}

void model_backward(model *m)
{
    int B = m->last_B, T = m->T, C = m->C, NH = m->NH, V = m->V, N = B * T;
    long nC = (long)N * C;
    float *P = m->params, *G = m->grads;
    memset(G, 0, m->n_params * sizeof(float));

    /* loss = mean over N positions */
    memset(m->dlogits, 0, (size_t)N * V * sizeof(float));
    crossentropy_softmax_backward(m->dlogits, m->probs, m->last_targets, N, V, 1.0f / N);

    const float *top = m->L > 0 ? block_out(m, m->L - 1) : m->encoded;
    memset(m->dresid, 0, nC * sizeof(float));
    if (m->norm == NORM_PRE) {
        memset(m->dtmp, 0, nC * sizeof(float));
        matmul_backward(m->dtmp, G + m->headw, G + m->headb, m->dlogits, m->lnf, P + m->headw,
                        N, C, V);
        norm_bwd(m, m->dresid, G + m->lnfw, G + m->lnfb, m->dtmp, top, P + m->lnfw,
                 m->lnf_mean, m->lnf_rstd, N);
    } else {
        matmul_backward(m->dresid, G + m->headw, G + m->headb, m->dlogits, top, P + m->headw, N,
                        C, V);
    }

    for (int l = m->L - 1; l >= 0; l--) {
        layer_params w = layer_ptrs(m, P, l);
        layer_params g = layer_ptrs(m, G, l);
        layer_acts a = layer_act_ptrs(m, l);
        const float *x = l == 0 ? m->encoded : block_out(m, l - 1);
        if (m->norm == NORM_PRE) {
            /* dresid holds d out = d res2; it flows to res1 unchanged */
            memset(m->dfch_gelu, 0, nC * 4 * sizeof(float));
            matmul_backward(m->dfch_gelu, g.t[PT_FCPROJW], g.t[PT_FCPROJB], m->dresid,
                            a.fch_gelu, w.t[PT_FCPROJW], N, 4 * C, C);
            memset(m->dfch, 0, nC * 4 * sizeof(float));
            gelu_backward(m->dfch, a.fch, m->dfch_gelu, N * 4 * C);
            memset(m->dtmp, 0, nC * sizeof(float));
            matmul_backward(m->dtmp, g.t[PT_FCW], g.t[PT_FCB], m->dfch, a.ln2, w.t[PT_FCW], N,
                            C, 4 * C);
            norm_bwd(m, m->dresid, g.t[PT_LN2W], g.t[PT_LN2B], m->dtmp, a.res1, w.t[PT_LN2W],
                     a.ln2_mean, a.ln2_rstd, N);
            /* dresid = d res1 = d x (residual) + attention path */
            memset(m->datty, 0, nC * sizeof(float));
            matmul_backward(m->datty, g.t[PT_ATTPROJW], g.t[PT_ATTPROJB], m->dresid, a.atty,
                            w.t[PT_ATTPROJW], N, C, C);
            memset(m->dqkv, 0, nC * 3 * sizeof(float));
            attention_backward(m->dqkv, m->drow, m->datty, a.qkv, a.att, B, T, C, NH);
            memset(m->dtmp, 0, nC * sizeof(float));
            matmul_backward(m->dtmp, g.t[PT_QKVW], g.t[PT_QKVB], m->dqkv, a.ln1, w.t[PT_QKVW], N,
                            C, 3 * C);
            norm_bwd(m, m->dresid, g.t[PT_LN1W], g.t[PT_LN1B], m->dtmp, x, w.t[PT_LN1W],
                     a.ln1_mean, a.ln1_rstd, N);
        } else {
            /* dresid holds d out = d ln2 */
            memset(m->dtmp, 0, nC * sizeof(float));
            norm_bwd(m, m->dtmp, g.t[PT_LN2W], g.t[PT_LN2B], m->dresid, a.res2, w.t[PT_LN2W],
                     a.ln2_mean, a.ln2_rstd, N);
            /* dtmp = d res2; d ln1 = d res2 (residual) + MLP path */
            memcpy(m->dresid, m->dtmp, nC * sizeof(float));
            memset(m->dfch_gelu, 0, nC * 4 * sizeof(float));
            matmul_backward(m->dfch_gelu, g.t[PT_FCPROJW], g.t[PT_FCPROJB], m->dtmp, a.fch_gelu,
                            w.t[PT_FCPROJW], N, 4 * C, C);
            memset(m->dfch, 0, nC * 4 * sizeof(float));
            gelu_backward(m->dfch, a.fch, m->dfch_gelu, N * 4 * C);
            matmul_backward(m->dresid, g.t[PT_FCW], g.t[PT_FCB], m->dfch, a.ln1, w.t[PT_FCW], N,
                            C, 4 * C);
            memset(m->dtmp, 0, nC * sizeof(float));
            norm_bwd(m, m->dtmp, g.t[PT_LN1W], g.t[PT_LN1B], m->dresid, a.res1, w.t[PT_LN1W],
                     a.ln1_mean, a.ln1_rstd, N);
            /* dtmp = d res1; d x = d res1 (residual) + attention path */
            memcpy(m->dresid, m->dtmp, nC * sizeof(float));
            memset(m->datty, 0, nC * sizeof(float));
            matmul_backward(m->datty, g.t[PT_ATTPROJW], g.t[PT_ATTPROJB], m->dtmp, a.atty,
                            w.t[PT_ATTPROJW], N, C, C);
            memset(m->dqkv, 0, nC * 3 * sizeof(float));
            attention_backward(m->dqkv, m->drow, m->datty, a.qkv, a.att, B, T, C, NH);
            matmul_backward(m->dresid, g.t[PT_QKVW], g.t[PT_QKVB], m->dqkv, x, w.t[PT_QKVW], N,
                            C, 3 * C);
        }
    }
    encoder_backward(G + m->wte, G + m->wpe, m->dresid, m->last_tokens, B, T, C);
}
