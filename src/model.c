/* model.c - parameter layout, initialization, forward and backward of the
 * Transformer for every norm placement and kind. Pure computation: no I/O,
 * no threads, no global state. See model.h for the layout and the rules.
 *
 * Each sublayer runs the same five stages, switched on or off by its
 * placement, so eight placements share one forward and one backward:
 *   h  = pre  ? N(x) : x
 *   f  = F(h)                      attention or MLP
 *   f2 = out  ? N_out(f) : f       (sandwich, res-post)
 *   r  = a x + (gate ? g f2 : f2)  a = alpha under deepnorm, else 1
 *   y  = post ? N(r) : r
 * Inside F, attention may normalize its queries and keys (qk_norm).
 */
#include "model.h"
#include "nsmath.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"

static const char *const layer_names[PT_LAYER_COUNT] = {
    "ln1w",  "ln1b", "ln2w", "ln2b", "ln1ow",    "ln1ob",    "ln2ow", "ln2ob", "ln1a", "ln2a",
    "ln1oa", "ln2oa", "rzg", "qkvw", "qkvb",     "attprojw", "attprojb", "qnw", "qnb", "knw",
    "knb",   "qna",  "kna",  "fcw",  "fcb",      "fcprojw",  "fcprojb",
};

/* Element counts of one layer's tensors, in layout order (hd = C / NH). */
static void layer_sizes(size_t sz[PT_LAYER_COUNT], size_t C, size_t NH)
{
    for (int i = PT_LN1W; i <= PT_LN2OB; i++)
        sz[i] = C;
    for (int i = PT_LN1A; i <= PT_RZG; i++)
        sz[i] = 1;
    sz[PT_QKVW] = 3 * C * C;
    sz[PT_QKVB] = 3 * C;
    sz[PT_ATTPROJW] = C * C;
    sz[PT_ATTPROJB] = C;
    for (int i = PT_QNW; i <= PT_KNB; i++)
        sz[i] = C / NH;
    sz[PT_QNA] = sz[PT_KNA] = 1;
    sz[PT_FCW] = 4 * C * C;
    sz[PT_FCB] = 4 * C;
    sz[PT_FCPROJW] = 4 * C * C;
    sz[PT_FCPROJB] = C;
}

/* qk: with the QK-norm tensors (the layout now), or without (before) */
static size_t param_count(size_t L, size_t C, size_t NH, size_t T, size_t V, int qk)
{
    size_t sz[PT_LAYER_COUNT], per = 0;
    layer_sizes(sz, C, NH);
    for (int i = 0; i < PT_LAYER_COUNT; i++)
        if (qk || i < PT_QNW || i > PT_KNA)
            per += sz[i];
    return V * C + T * C + L * per + 2 * C + 1 + V * C + V;
}

/* Which buffers a placement writes: the block's input (or post) norm's,
 * the output norm's (Sandwich-LN, res-post), the final norm's; and the
 * QK-norm's when it is on. A buffer no step writes
 * stays out of memory (the zeroing calloc maps no page), so the memory
 * estimate counts only the written ones. */
enum { USE_ALWAYS = 0, USE_IN_NORM = 1, USE_OUT_NORM = 2, USE_FINAL_NORM = 4, USE_QK_NORM = 8 };

/* One buffer of the activations or of the backward scratch: where its
 * pointer goes, how many floats it takes, and which USE_ writes it. */
typedef struct {
    float **dst;
    size_t n;
    int use;
} buf_spec;
enum { N_ACT_BUFS = 1 + 2 * 7 + 18, N_SCRATCH_BUFS = 9 };

/* The activation buffers of m, in their order in m->acts (BT = B*T rows;
 * L-major where per layer). This one table sizes the allocation and carves
 * it, so the two cannot drift apart. */
static void act_table(model *m, size_t L, size_t B, size_t T, size_t C, size_t NH, size_t V,
                      buf_spec t[N_ACT_BUFS])
{
    size_t BT = B * T;
    int k = 0;
    t[k++] = (buf_spec){&m->encoded, BT * C, USE_ALWAYS}; /* (B, T, C) */
    for (int s = 0; s < 2; s++) { /* sublayer 1 (attention), 2 (MLP) */
        t[k++] = (buf_spec){&m->nin[s], L * BT * C, USE_IN_NORM}; /* (L, B, T, C) */
        t[k++] = (buf_spec){&m->nin_mean[s], L * BT, USE_IN_NORM}; /* (L, B, T) */
        t[k++] = (buf_spec){&m->nin_rstd[s], L * BT, USE_IN_NORM};
        t[k++] = (buf_spec){&m->nout[s], L * BT * C, USE_OUT_NORM};
        t[k++] = (buf_spec){&m->nout_mean[s], L * BT, USE_OUT_NORM};
        t[k++] = (buf_spec){&m->nout_rstd[s], L * BT, USE_OUT_NORM};
        t[k++] = (buf_spec){&m->res[s], L * BT * C, USE_ALWAYS};
    }
    t[k++] = (buf_spec){&m->qkv, L * BT * 3 * C, USE_ALWAYS};     /* (L, B, T, 3C) */
    t[k++] = (buf_spec){&m->qkraw, L * BT * 2 * C, USE_QK_NORM};  /* (L, B, T, 2C) */
    t[k++] = (buf_spec){&m->qk_mean, L * BT * 2 * NH, USE_QK_NORM}; /* (L, B, T, 2NH) */
    t[k++] = (buf_spec){&m->qk_rstd, L * BT * 2 * NH, USE_QK_NORM};
    t[k++] = (buf_spec){&m->atty, L * BT * C, USE_ALWAYS};
    t[k++] = (buf_spec){&m->att, L * B * NH * T * T, USE_ALWAYS}; /* (L, B, NH, T, T) */
    t[k++] = (buf_spec){&m->attproj, L * BT * C, USE_ALWAYS};
    t[k++] = (buf_spec){&m->fch, L * BT * 4 * C, USE_ALWAYS};     /* (L, B, T, 4C) */
    t[k++] = (buf_spec){&m->fch_gelu, L * BT * 4 * C, USE_ALWAYS};
    t[k++] = (buf_spec){&m->fcproj, L * BT * C, USE_ALWAYS};
    t[k++] = (buf_spec){&m->lnf, BT * C, USE_FINAL_NORM};
    t[k++] = (buf_spec){&m->lnf_mean, BT, USE_FINAL_NORM};
    t[k++] = (buf_spec){&m->lnf_rstd, BT, USE_FINAL_NORM};
    t[k++] = (buf_spec){&m->logits, BT * V, USE_ALWAYS}; /* (B, T, V) */
    t[k++] = (buf_spec){&m->probs, BT * V, USE_ALWAYS};
    t[k++] = (buf_spec){&m->losses, BT, USE_ALWAYS};
    t[k++] = (buf_spec){&m->logz, BT, USE_ALWAYS};
    t[k++] = (buf_spec){&m->lmax, BT, USE_ALWAYS};
}

/* The backward pass's scratch, in its order in m->scratch (one layer at a
 * time, so no L). */
static void scratch_table(model *m, size_t B, size_t T, size_t C, size_t V,
                          buf_spec t[N_SCRATCH_BUFS])
{
    size_t BT = B * T;
    int k = 0;
    t[k++] = (buf_spec){&m->dresid, BT * C, USE_ALWAYS};
    t[k++] = (buf_spec){&m->dtmp, BT * C, USE_ALWAYS};
    t[k++] = (buf_spec){&m->dtmp2, BT * C, USE_ALWAYS};
    t[k++] = (buf_spec){&m->datty, BT * C, USE_ALWAYS};
    t[k++] = (buf_spec){&m->dqkv, BT * 3 * C, USE_ALWAYS};
    t[k++] = (buf_spec){&m->dfch, BT * 4 * C, USE_ALWAYS};
    t[k++] = (buf_spec){&m->dfch_gelu, BT * 4 * C, USE_ALWAYS};
    t[k++] = (buf_spec){&m->dlogits, BT * V, USE_ALWAYS};
    t[k++] = (buf_spec){&m->drow, BT, USE_ALWAYS};
}

/* Floats of the buffers in t that some USE_ in used writes (all: -1). */
static size_t bufs_total(const buf_spec *t, int n, int used)
{
    size_t total = 0;
    for (int i = 0; i < n; i++)
        if (t[i].use == USE_ALWAYS || (t[i].use & used))
            total += t[i].n;
    return total;
}

/* Point each buffer of the table at its place in base, in order. */
static void bufs_carve(const buf_spec *t, int n, float *base)
{
    for (int i = 0; i < n; i++) {
        *t[i].dst = base;
        base += t[i].n;
    }
}

size_t model_param_count(const ns_config *c)
{
    return param_count((size_t)c->n_layer, (size_t)c->dim, (size_t)c->n_head, (size_t)c->context,
                       NS_VOCAB, 1);
}

size_t model_param_count_noqk(const ns_config *c)
{
    return param_count((size_t)c->n_layer, (size_t)c->dim, (size_t)c->n_head, (size_t)c->context,
                       NS_VOCAB, 0);
}

/* The USE_ buffers the config's norms write: an input or post norm in
 * every placement but ReZero, none and res-post, the output norm of
 * Sandwich-LN and res-post, the final norm when on, the QK-norm's. */
static int buffers_used(const ns_config *c)
{
    int used = 0;
    if (c->norm != NORM_REZERO && c->norm != NORM_NONE && c->norm != NORM_RESPOST)
        used |= USE_IN_NORM;
    if (c->norm == NORM_SANDWICH || c->norm == NORM_RESPOST)
        used |= USE_OUT_NORM;
    if (config_final_norm(c))
        used |= USE_FINAL_NORM;
    if (c->qk_norm)
        used |= USE_QK_NORM;
    return used;
}

size_t model_buffer_floats(const ns_config *c)
{
    size_t L = c->n_layer, C = c->dim, T = c->context, B = c->batch, NH = c->n_head;
    model sizes; /* only its buffer pointers' addresses are used */
    buf_spec acts[N_ACT_BUFS], scratch[N_SCRATCH_BUFS];
    act_table(&sizes, L, B, T, C, NH, NS_VOCAB, acts);
    scratch_table(&sizes, B, T, C, NS_VOCAB, scratch);
    int used = buffers_used(c);
    return bufs_total(acts, N_ACT_BUFS, used) + bufs_total(scratch, N_SCRATCH_BUFS, used);
}

/* RB_ROWS: the fewest rows (tokens) a block takes; on fewer, packing the
 * weights for each block's matrix products costs more than it splits
 * (measured on the default model, B T = 1024: 8 blocks of 128 rows ran
 * one thread 6% slower than 4 of 256, and two threads no faster; and the
 * lessons' 256-token twins, one thread a run, gain nothing from blocks) */
enum { RB_MAX = 8, RB_MIN = 4, RB_ROWS = 256 };
#define RB_PARTIAL_BYTES (32.0 * 1048576.0)

int model_row_blocks(size_t n_params, int B, int T)
{
    /* block 0 writes grads itself: fit partials for the others */
    double fit = 1.0 + floor(RB_PARTIAL_BYTES / (4.0 * (double)n_params));
    if (fit < RB_MIN)
        return 1;
    int k = B < RB_MAX ? B : RB_MAX;
    int rows = (int)((long)B * T / RB_ROWS);
    k = rows < k ? rows : k;
    k = fit < k ? (int)fit : k;
    return k < 2 ? 1 : k;
}

/* (2L)^(1/4) and (8L)^(-1/4) as square roots: exact operations */
double model_deepnorm_alpha(int L) { return sqrt(sqrt(2.0 * L)); }
double model_deepnorm_beta(int L) { return 1.0 / sqrt(sqrt(8.0 * L)); }

static int is_matrix_tensor(int i)
{
    return i == PT_QKVW || i == PT_ATTPROJW || i == PT_FCW || i == PT_FCPROJW;
}

/* The parameter table: every tensor's name, offset and size in one
 * array (wte, wpe, the L blocks, the final norm, the head), and the
 * offsets the code reads them by. */
static int param_table(model *m)
{
    size_t L = m->L, C = m->C, T = m->T, V = m->V;
    size_t sz[PT_LAYER_COUNT];
    layer_sizes(sz, C, (size_t)m->NH);
    m->n_tensors = 2 + (int)L * PT_LAYER_COUNT + 5;
    m->tensors = calloc((size_t)m->n_tensors, sizeof *m->tensors);
    if (!m->tensors)
        return -1;
    size_t off = 0;
    int k = 0;
    m->wte = off;
    m->tensors[k++] = (model_tensor){"wte", off, V * C, -1, 1, -1};
    off += V * C;
    m->wpe = off;
    m->tensors[k++] = (model_tensor){"wpe", off, T * C, -1, 1, -1};
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
            m->tensors[k++] =
                (model_tensor){layer_names[i], off, sz[i], (int)l, is_matrix_tensor(i), i};
            off += sz[i];
        }
    }
    m->lnfw = off;
    m->tensors[k++] = (model_tensor){"lnfw", off, C, -1, 0, -1};
    off += C;
    m->lnfb = off;
    m->tensors[k++] = (model_tensor){"lnfb", off, C, -1, 0, -1};
    off += C;
    m->lnfa = off;
    m->tensors[k++] = (model_tensor){"lnfa", off, 1, -1, 0, -1};
    off += 1;
    m->headw = off;
    m->tensors[k++] = (model_tensor){"headw", off, V * C, -1, 1, -1};
    off += V * C;
    m->headb = off;
    m->tensors[k++] = (model_tensor){"headb", off, V, -1, 0, -1};
    off += V;
    m->n_params = off;
    return 0;
}

/* Parameters, gradients, the low-precision copy, the activations and the
 * scratch: allocated once, the buffers carved by their tables. */
static int alloc_buffers(model *m)
{
    size_t L = m->L;
    buf_spec acts[N_ACT_BUFS], scratch[N_SCRATCH_BUFS];
    act_table(m, L, m->B, m->T, m->C, m->NH, m->V, acts);
    scratch_table(m, m->B, m->T, m->C, m->V, scratch);
    m->params = calloc(m->n_params, sizeof(float));
    m->grads = calloc(m->n_params, sizeof(float));
    m->wlow = calloc(m->n_params, sizeof(float));
    m->counts = calloc(L + 1, sizeof *m->counts);
    m->n_acts = bufs_total(acts, N_ACT_BUFS, -1);
    /* zeroed, so reading a buffer that was never written is defined; and
     * calloc's fresh pages cost no memory until a step writes them (the
     * buffers of norms the placement has not) */
    m->acts = calloc(m->n_acts, sizeof(float));
    m->n_scratch = bufs_total(scratch, N_SCRATCH_BUFS, -1);
    m->scratch = malloc(m->n_scratch * sizeof(float));
    m->stats = calloc(L, sizeof *m->stats);
    m->n_blocks = model_row_blocks(m->n_params, m->B, m->T);
    size_t K = (size_t)m->n_blocks;
    m->partials = K > 1 ? malloc((K - 1) * m->n_params * sizeof(float)) : NULL;
    m->blk_counts = calloc(K * (L + 1), sizeof *m->blk_counts);
    m->blk_stats = calloc(K * L, sizeof *m->blk_stats);
    if (!m->params || !m->grads || !m->wlow || !m->counts || !m->acts || !m->scratch ||
        !m->stats || (K > 1 && !m->partials) || !m->blk_counts || !m->blk_stats)
        return -1;
    bufs_carve(acts, N_ACT_BUFS, m->acts);
    bufs_carve(scratch, N_SCRATCH_BUFS, m->scratch);
    return 0;
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
    m->kind = cfg->norm_kind;
    m->eps = cfg->eps;
    m->mix_k = config_mix_k(cfg);
    m->alpha = (float)model_deepnorm_alpha(m->L);
    model_set_norm(m, cfg->norm, config_final_norm(cfg));
    m->qk_norm = cfg->qk_norm;
    m->z_loss = cfg->z_loss;
    m->fmt = FMT_FP32;
    m->fp32_norms = 1;
    m->loss_scale = 1.0f;
    if (param_table(m) != 0 || alloc_buffers(m) != 0) {
        model_free(m);
        return -1;
    }
    m->W = m->params;
    return 0;
}

void model_free(model *m)
{
    free(m->tensors);
    free(m->params);
    free(m->grads);
    free(m->wlow);
    free(m->counts);
    free(m->acts);
    free(m->scratch);
    free(m->stats);
    free(m->partials);
    free(m->blk_counts);
    free(m->blk_stats);
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

static void fill(float *x, size_t n, float v)
{
    for (size_t i = 0; i < n; i++)
        x[i] = v;
}

static void scale(float *x, size_t n, float s)
{
    for (size_t i = 0; i < n; i++)
        x[i] *= s;
}

static int name_is(const char *nm, const char *const *names)
{
    for (; *names; names++)
        if (!strcmp(nm, *names))
            return 1;
    return 0;
}

void model_init(model *m, const ns_config *cfg, ns_rng *rng)
{
    /* the block norms take --ln-gamma-init/--ln-beta-init; the final norm
     * keeps 1 and 0, so a zero gain silences the sublayers, not the head */
    static const char *const gains[] = {"ln1w", "ln2w", "ln1ow", "ln2ow", NULL};
    static const char *const biases[] = {"ln1b", "ln2b", "ln1ob", "ln2ob", NULL};
    static const char *const dyt_a[] = {"ln1a", "ln2a", "ln1oa", "ln2oa", "lnfa", NULL};
    memset(m->params, 0, m->n_params * sizeof(float));
    for (int k = 0; k < m->n_tensors; k++) {
        const model_tensor *t = &m->tensors[k];
        float *x = m->params + t->offset;
        const char *nm = t->name;
        if (!strcmp(nm, "lnfw")) {
            fill(x, t->size, 1.0f);
        } else if (name_is(nm, gains)) {
            fill(x, t->size, cfg->ln_gamma_init);
        } else if (name_is(nm, biases)) {
            fill(x, t->size, cfg->ln_beta_init);
        } else if (name_is(nm, dyt_a)) {
            fill(x, t->size, cfg->dyt_alpha);
        } else if (!strcmp(nm, "wte") || !strcmp(nm, "wpe")) {
            fill_normal(x, t->size, cfg->init_std, rng);
        } else if (t->is_matrix) {
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
        /* other biases, the ReZero gates and the QK-norm stay 0 here */
    }
    model_init_qk_norm(m, m->params, cfg->dyt_alpha);
    size_t C = (size_t)m->C;
    for (int l = 0; l < m->L; l++) {
        float *b = m->params + m->layer0 + (size_t)l * m->layer_stride;
        if (cfg->post_init_scale) {
            float s = (float)(1.0 / sqrt(2.0 * m->L));
            scale(b + m->layer_off[PT_ATTPROJW], C * C, s);
            scale(b + m->layer_off[PT_FCPROJW], 4 * C * C, s);
        }
        if (cfg->norm == NORM_DEEPNORM) {
            /* DeepNet (Wang et al. 2022), decoder-only: beta on the value
             * projection (rows 2C..3C of qkvw), the output projection and
             * both MLP matrices; queries and keys are left alone. */
            float beta = (float)model_deepnorm_beta(m->L);
            scale(b + m->layer_off[PT_QKVW] + 2 * C * C, C * C, beta);
            scale(b + m->layer_off[PT_ATTPROJW], C * C, beta);
            scale(b + m->layer_off[PT_FCW], 4 * C * C, beta);
            scale(b + m->layer_off[PT_FCPROJW], 4 * C * C, beta);
        }
    }
}

void model_init_qk_norm(const model *m, float *params, float dyt_alpha)
{
    for (int k = 0; k < m->n_tensors; k++) {
        const model_tensor *t = &m->tensors[k];
        float v = t->pt == PT_QNW || t->pt == PT_KNW ? 1.0f
                  : t->pt == PT_QNA || t->pt == PT_KNA ? dyt_alpha
                                                       : 0.0f;
        if (model_tensor_qk(t))
            fill(params + t->offset, t->size, v);
    }
}

void model_set_qk_norm(model *m, int on) { m->qk_norm = !!on; }
void model_set_z_loss(model *m, float z) { m->z_loss = z; }

void model_set_norm(model *m, norm_place p, int final_norm)
{
    m->norm = p;
    m->final_norm = final_norm;
}

void model_set_norm_kind(model *m, norm_kind k) { m->kind = k; }

void model_set_precision(model *m, numfmt f, int fp32_norms)
{
    m->fmt = f;
    m->fp32_norms = fp32_norms;
}

/* ---- rounding and the non-finite watch -------------------------------- */

/* A fault point: an op whose output the watch may find non-finite. Each
 * row block passes the same points in the same order, so the earliest
 * point of any block is the pass's first. */
static void fault_point(model *m) { m->fault_seq++; }

static void note_fault(model *m, int backward, int l, const char *op)
{
    if (m->fault.set)
        return;
    m->fault.set = 1;
    m->fault.seq = m->fault_seq;
    m->fault.backward = backward;
    m->fault.layer = l;
    m->fault.op = op;
}

/* An op's output: round it to the format (counting what overflowed or
 * underflowed, for layer l, or outside the blocks when l < 0) and record
 * it if it is the pass's first non-finite value. */
/* Rounding and the watch over parts of x: both are elementwise, the
 * counts are integers and "any" is an or, so the parts' results add up to
 * exactly those of one pass. Parts are cut at whole vectors. */
enum { Q_MT_MIN = 1 << 18, Q_ALIGN = 64, Q_PART_MIN = 1 << 16, Q_PARTS = 4 };
typedef struct {
    numfmt fmt;
    float *x;
    size_t n;
    int parts, watch;
    numfmt_counts counts[Q_PARTS * POOL_MAX_THREADS];
    int bad[Q_PARTS * POOL_MAX_THREADS];
} q_job;

static void q_task(void *ctx, int part, int thread)
{
    (void)thread;
    q_job *j = ctx;
    size_t units = (j->n + Q_ALIGN - 1) / Q_ALIGN;
    size_t lo = units * (size_t)part / (size_t)j->parts * Q_ALIGN;
    size_t hi = units * (size_t)(part + 1) / (size_t)j->parts * Q_ALIGN;
    lo = lo < j->n ? lo : j->n;
    hi = hi < j->n ? hi : j->n;
    memset(&j->counts[part], 0, sizeof j->counts[part]);
    numfmt_round(j->fmt, j->x + lo, hi - lo, &j->counts[part]);
    j->bad[part] = j->watch && ops_any_nonfinite(j->x + lo, hi - lo);
}

/* numfmt_round (adding to *c when not NULL); returns whether, with watch,
 * any of x is not finite afterwards */
static int round_watch(model *m, float *x, size_t n, numfmt_counts *c, int watch)
{
    int nt = pool_threads(m->pool);
    if (nt == 1 || n < Q_MT_MIN || (m->fmt == FMT_FP32 && !watch)) {
        numfmt_round(m->fmt, x, n, c);
        return watch && ops_any_nonfinite(x, n);
    }
    q_job j;
    j.fmt = m->fmt, j.x = x, j.n = n, j.watch = watch;
    /* a few parts per thread, taken first-come: a core shared with another
     * process does less of them */
    size_t parts = n / Q_PART_MIN;
    j.parts = parts < (size_t)nt ? nt : parts > (size_t)(Q_PARTS * nt) ? Q_PARTS * nt : (int)parts;
    pool_run(m->pool, j.parts, q_task, &j);
    int bad = 0;
    for (int i = 0; i < j.parts; i++) {
        if (c) {
            c->overflow += j.counts[i].overflow;
            c->underflow += j.counts[i].underflow;
        }
        bad |= j.bad[i];
    }
    return bad;
}

static void q(model *m, int backward, int l, const char *op, float *x, size_t n)
{
    fault_point(m);
    if (round_watch(m, x, n, &m->counts[l < 0 ? m->L : l], !m->fault.set))
        note_fault(m, backward, l, op);
}

/* q for a forward output of layer l whose largest |x| the layer's
 * statistics need anyway: *amax takes it in (and it is returned), and a
 * NaN or inf maximum is the watch, so x is read once more, not twice */
static float qmax(model *m, int l, const char *op, float *x, size_t n, float *amax)
{
    fault_point(m);
    round_watch(m, x, n, &m->counts[l], 0);
    float a = ops_absmax_mt(m->pool, x, (long)n);
    if (!m->fault.set && !isfinite(a))
        note_fault(m, 0, l, op);
    *amax = ops_max_nan(*amax, a);
    return a;
}

/* qmax for an output whose kernel took its largest |x| (a) while writing
 * it: in fp32 rounding does nothing, so no pass over x is left */
static float qmax_taken(model *m, int l, const char *op, float *x, size_t n, float a,
                        float *amax)
{
    if (m->fmt != FMT_FP32)
        return qmax(m, l, op, x, n, amax);
    fault_point(m);
    if (!m->fault.set && !isfinite(a))
        note_fault(m, 0, l, op);
    *amax = ops_max_nan(*amax, a);
    return a;
}

/* q for an output whose kernel told, while writing it, whether any of it
 * is infinite or NaN (bad) */
static void q_taken(model *m, int backward, int l, const char *op, float *x, size_t n, int bad)
{
    if (m->fmt != FMT_FP32) {
        q(m, backward, l, op, x, n);
        return;
    }
    fault_point(m);
    if (bad)
        note_fault(m, backward, l, op);
}

double model_l2(const float *x, size_t n) { return sqrt(ops_sumsq(x, n)); }

double model_rel_change(const float *before, const float *after, size_t n)
{
    double d = 0, b = 0;
    for (size_t i = 0; i < n; i++) {
        double x = before[i], y = after[i];
        d += (y - x) * (y - x);
        b += x * x;
    }
    return isfinite(d) && isfinite(b) && b > 0 ? sqrt(d / b) : NAN;
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

/* ---- the sublayer rule of a block ------------------------------------ */

typedef struct {
    int pre, out, post, gate;
    float a; /* residual scale */
} rule;

int model_block_is_post(const model *m, int l)
{
    return m->norm == NORM_POST || m->norm == NORM_DEEPNORM ||
           (m->norm == NORM_MIX && l < m->mix_k);
}

static rule block_rule(const model *m, int l)
{
    rule r = {0, 0, 0, 0, 1.0f};
    switch (m->norm) {
    case NORM_POST: r.post = 1; break;
    case NORM_PRE: r.pre = 1; break;
    case NORM_SANDWICH: r.pre = r.out = 1; break;
    case NORM_DEEPNORM: r.post = 1; r.a = m->alpha; break;
    case NORM_REZERO: r.gate = 1; break;
    case NORM_RESPOST: r.out = 1; break;
    case NORM_MIX:
        if (l < m->mix_k)
            r.post = 1;
        else
            r.pre = 1;
        break;
    default: break; /* none */
    }
    return r;
}

/* One norm: the kind decides which parameters take part. */
typedef struct {
    float *w, *b, *a; /* gain (C), bias (C), DyT scalar (1) */
} norm_params;

/* Op names for the first-non-finite report: [sublayer][in/out norm]. */
static const char *const norm_op[2][2] = {{"attn norm", "attn out norm"},
                                          {"MLP norm", "MLP out norm"}};
static const char *const var_op[2][2] = {{"attn norm variance", "attn out norm variance"},
                                         {"MLP norm variance", "MLP out norm variance"}};

/* A norm computed in the low format itself, as a naive fp16 or bf16 kernel
 * would (--fp32-norms off): every product and quotient is rounded to the
 * format, sums are accumulated in fp32. In fp16 a deviation past 256
 * squares to inf, the variance overflows, rstd becomes 0 and the output
 * collapses to the bias: returns 1 when a statistic was not finite. */
static int norm_fwd_lowp(const model *m, norm_params p, float *out, float *mean, float *rstd,
                         const float *inp, int N, int C)
{
    int bad = 0;
    numfmt f = m->fmt;
    for (int n = 0; n < N; n++) {
        const float *x = inp + (long)n * C;
        float *o = out + (long)n * C;
        float mu = 0.0f;
        if (m->kind == NORMK_LAYERNORM) {
            float s = 0.0f;
            for (int i = 0; i < C; i++)
                s += x[i];
            mu = numfmt_round1(f, s / (float)C);
        }
        float ss = 0.0f;
        for (int i = 0; i < C; i++) {
            float d = numfmt_round1(f, x[i] - mu);
            ss += numfmt_round1(f, d * d);
        }
        float var = numfmt_round1(f, ss / (float)C);
        float rs = numfmt_round1(f, 1.0f / sqrtf(numfmt_round1(f, var + m->eps)));
        bad |= !isfinite(var) || !isfinite(rs);
        for (int i = 0; i < C; i++) {
            float xh = numfmt_round1(f, numfmt_round1(f, x[i] - mu) * rs);
            float y = numfmt_round1(f, xh * p.w[i]);
            o[i] = m->kind == NORMK_LAYERNORM ? y + p.b[i] : y;
        }
        mean[n] = mu;
        rstd[n] = rs;
    }
    return bad;
}

/* Norm N of sublayer s (out = 0) or N_out (out = 1) of layer l, or the
 * final norm (l < 0): its output rounded and watched; returns its largest
 * |x|. An fp32 LayerNorm takes that maximum (which is the watch too: inf
 * or NaN) as it writes the output. */
static float norm_fwd(model *m, norm_params p, float *out, float *mean, float *rstd,
                      const float *inp, int N, int l, int s, int out_norm)
{
    const char *op = l < 0 ? "final norm" : norm_op[s][out_norm];
    size_t n = (size_t)N * m->C;
    fault_point(m);
    if (m->fmt == FMT_FP32 && m->kind == NORMK_LAYERNORM) {
        float a = ops_layernorm_forward_absmax_mt(m->pool, out, mean, rstd, inp, p.w, p.b, N, m->C,
                                              m->eps);
        if (!m->fault.set && !isfinite(a))
            note_fault(m, 0, l, op);
        return a;
    }
    if (m->fmt != FMT_FP32 && !m->fp32_norms && m->kind != NORMK_DYT) {
        if (norm_fwd_lowp(m, p, out, mean, rstd, inp, N, m->C))
            note_fault(m, 0, l, l < 0 ? "final norm variance" : var_op[s][out_norm]);
    } else {
        switch (m->kind) {
        case NORMK_RMSNORM: ops_rmsnorm_forward(out, mean, rstd, inp, p.w, N, m->C, m->eps); break;
        case NORMK_DYT: ops_dyt_forward(out, inp, p.w, p.b, *p.a, N, m->C); break;
        default:
            ops_layernorm_forward_mt(m->pool, out, mean, rstd, inp, p.w, p.b, N, m->C, m->eps);
            break;
        }
    }
    q(m, 0, l, op, out, n);
    return ops_absmax_mt(m->pool, out, (long)n);
}

static void norm_bwd(model *m, norm_params p, norm_params g, float *dinp, const float *dout,
                     const float *inp, const float *mean, const float *rstd, int N, int l, int s,
                     int out_norm)
{
    const char *op = l < 0 ? "final norm" : norm_op[s][out_norm];
    size_t n = (size_t)N * m->C;
    switch (m->kind) {
    case NORMK_RMSNORM: ops_rmsnorm_backward(dinp, g.w, dout, inp, p.w, rstd, N, m->C); break;
    case NORMK_DYT: ops_dyt_backward(dinp, g.w, g.b, g.a, dout, inp, p.w, *p.a, N, m->C); break;
    default:
        q_taken(m, 1, l, op, dinp, n,
                ops_layernorm_backward_watch_mt(m->pool, dinp, g.w, g.b, dout, inp, p.w, mean, rstd,
                                            N, m->C));
        return;
    }
    q(m, 1, l, op, dinp, n);
}

static float *layer_base(const model *m, float *base, int l)
{
    return base + m->layer0 + (size_t)l * m->layer_stride;
}

/* The norm N (out = 0) or N_out (out = 1) of sublayer s of layer l, in
 * base (the weights or the gradients). */
static norm_params norm_of(const model *m, float *base, int l, int s, int out)
{
    static const int w_idx[2][2] = {{PT_LN1W, PT_LN1OW}, {PT_LN2W, PT_LN2OW}};
    static const int b_idx[2][2] = {{PT_LN1B, PT_LN1OB}, {PT_LN2B, PT_LN2OB}};
    static const int a_idx[2][2] = {{PT_LN1A, PT_LN1OA}, {PT_LN2A, PT_LN2OA}};
    float *b = layer_base(m, base, l);
    norm_params p = {b + m->layer_off[w_idx[s][out]], b + m->layer_off[b_idx[s][out]],
                     b + m->layer_off[a_idx[s][out]]};
    return p;
}

static norm_params final_norm_of(const model *m, float *base)
{
    norm_params p = {base + m->lnfw, base + m->lnfb, base + m->lnfa};
    return p;
}

/* ---- QK-norm ------------------------------------------------------------
 * Each head's query and key (hd values) normalized by the run's kind, one
 * set of parameters for the queries and one for the keys, shared by the
 * heads (Dehghani et al. 2023; OLMo 2; Gemma 3). In a row of qkv (3C per
 * position) the NH queries and the NH keys are 2 NH rows of hd side by
 * side, so a position is two calls of the row kernels, whose statistics
 * are per row: the values do not depend on which rows a call covers. The
 * parameter gradients are summed over the positions in order, on the
 * block's own thread (row blocks split the batch; the work is O(N C)). */

static const char *const qk_op = "attn qk norm";

/* The QK-norm of the queries (j = 0) or the keys (j = 1) of layer l, in
 * base (the weights or the gradients). */
static norm_params qk_norm_of(const model *m, float *base, int l, int j)
{
    float *b = layer_base(m, base, l);
    const size_t *o = m->layer_off;
    norm_params p = {b + o[j ? PT_KNW : PT_QNW], b + o[j ? PT_KNB : PT_QNB],
                     b + o[j ? PT_KNA : PT_QNA]};
    return p;
}

/* N rows of C through the norm p of the run's kind (in the format itself
 * as norm_fwd does, with --fp32-norms off); returns 1 when a statistic of
 * that low-format norm was not finite. */
static int norm_rows(const model *m, norm_params p, float *out, float *mean, float *rstd,
                     const float *inp, int N, int C)
{
    if (m->fmt != FMT_FP32 && !m->fp32_norms && m->kind != NORMK_DYT)
        return norm_fwd_lowp(m, p, out, mean, rstd, inp, N, C);
    switch (m->kind) {
    case NORMK_RMSNORM: ops_rmsnorm_forward(out, mean, rstd, inp, p.w, N, C, m->eps); break;
    case NORMK_DYT: ops_dyt_forward(out, inp, p.w, p.b, *p.a, N, C); break;
    default: ops_layernorm_forward(out, mean, rstd, inp, p.w, p.b, N, C, m->eps); break;
    }
    return 0;
}

/* Its backward: dinp (N, C) +=, the parameter gradients += into g. */
static void norm_rows_bwd(const model *m, norm_params p, norm_params g, float *dinp,
                          const float *dout, const float *inp, const float *mean,
                          const float *rstd, int N, int C)
{
    switch (m->kind) {
    case NORMK_RMSNORM: ops_rmsnorm_backward(dinp, g.w, dout, inp, p.w, rstd, N, C); break;
    case NORMK_DYT: ops_dyt_backward(dinp, g.w, g.b, g.a, dout, inp, p.w, *p.a, N, C); break;
    default: ops_layernorm_backward(dinp, g.w, g.b, dout, inp, p.w, mean, rstd, N, C); break;
    }
}

/* The queries and keys of layer l's qkv (N positions) normalized in
 * place, their inputs kept in qkraw; rounded to the format, watched, and
 * their largest |x| taken into *amax. */
static void qk_norm_fwd(model *m, int l, float *qkv, int N, float *amax)
{
    int C = m->C, NH = m->NH, hd = C / NH;
    size_t BT = (size_t)m->B * m->T, w = 2 * (size_t)C;
    float *raw = m->qkraw + l * BT * w;
    float *mean = m->qk_mean + l * BT * 2 * NH, *rstd = m->qk_rstd + l * BT * 2 * NH;
    norm_params p[2] = {qk_norm_of(m, m->W, l, 0), qk_norm_of(m, m->W, l, 1)};
    float a = 0.0f;
    int bad = 0;
    fault_point(m);
    for (size_t n = 0; n < (size_t)N; n++) {
        float *row = qkv + n * 3 * C, *x = raw + n * w;
        memcpy(x, row, w * sizeof(float));
        for (int j = 0; j < 2; j++) {
            size_t st = n * 2 * NH + (size_t)j * NH;
            bad |= norm_rows(m, p[j], row + j * C, mean + st, rstd + st, x + j * C, NH, hd);
        }
        numfmt_round(m->fmt, row, w, &m->counts[l]);
        a = ops_max_nan(a, ops_absmax(row, (long)w));
    }
    if (!m->fault.set && (bad || !isfinite(a)))
        note_fault(m, 0, l, bad ? "attn qk norm variance" : qk_op);
    *amax = ops_max_nan(*amax, a);
}

/* dqkv's query and key columns (d of the normalized ones) replaced by d
 * of their inputs, rounded and watched; the parameter gradients
 * accumulated position by position; tmp: 2C floats of scratch. */
static void qk_norm_bwd(model *m, int l, float *dqkv, float *tmp, int N)
{
    int C = m->C, NH = m->NH, hd = C / NH;
    size_t BT = (size_t)m->B * m->T, w = 2 * (size_t)C;
    const float *raw = m->qkraw + l * BT * w;
    const float *mean = m->qk_mean + l * BT * 2 * NH, *rstd = m->qk_rstd + l * BT * 2 * NH;
    norm_params p[2] = {qk_norm_of(m, m->W, l, 0), qk_norm_of(m, m->W, l, 1)};
    norm_params g[2] = {qk_norm_of(m, m->grads, l, 0), qk_norm_of(m, m->grads, l, 1)};
    int bad = 0;
    fault_point(m);
    for (size_t n = 0; n < (size_t)N; n++) {
        float *d = dqkv + n * 3 * C;
        const float *x = raw + n * w;
        memset(tmp, 0, w * sizeof(float));
        for (int j = 0; j < 2; j++) {
            size_t st = n * 2 * NH + (size_t)j * NH;
            norm_rows_bwd(m, p[j], g[j], tmp + j * C, d + j * C, x + j * C, mean + st, rstd + st,
                          NH, hd);
        }
        memcpy(d, tmp, w * sizeof(float));
        numfmt_round(m->fmt, d, w, &m->counts[l]);
        bad = bad || ops_any_nonfinite(d, w);
    }
    if (!m->fault.set && bad)
        note_fault(m, 1, l, qk_op);
}

/* Slices of one layer's activations. */
typedef struct {
    float *nin, *nin_mean, *nin_rstd, *nout, *nout_mean, *nout_rstd, *res;
} sub_acts;

static sub_acts sub_act_ptrs(const model *m, int l, int s)
{
    size_t BT = (size_t)m->B * m->T, C = m->C;
    sub_acts a = {m->nin[s] + l * BT * C,  m->nin_mean[s] + l * BT,  m->nin_rstd[s] + l * BT,
                  m->nout[s] + l * BT * C, m->nout_mean[s] + l * BT, m->nout_rstd[s] + l * BT,
                  m->res[s] + l * BT * C};
    return a;
}

/* F's output buffer of sublayer s (attention projection or MLP output). */
static float *f_out(const model *m, int l, int s)
{
    size_t BTC = (size_t)m->B * m->T * m->C;
    return (s == 0 ? m->attproj : m->fcproj) + l * BTC;
}

/* The output of sublayer s of layer l: N(r) after a post norm, else r. */
static float *sub_out(const model *m, int l, int s)
{
    sub_acts a = sub_act_ptrs(m, l, s);
    return block_rule(m, l).post ? a.nin : a.res;
}

static const float *block_in(const model *m, int l)
{
    return l == 0 ? m->encoded : sub_out(m, l - 1, 1);
}

/* Input of sublayer s of layer l. */
static const float *sub_in(const model *m, int l, int s)
{
    return s == 0 ? block_in(m, l) : sub_out(m, l, 0);
}

/* ---- forward ---------------------------------------------------------- */

/* F of sublayer s; *amax takes in the largest |x| of its outputs */
/* out (N, OC) = in (N, C) @ w^T + b, layer l's op: rounded, watched and
 * its max |x| taken in (*amax) as qmax does. In fp32 the micro-kernel
 * takes the maximum as it stores out, so no pass over out is left. */
static void linear_fwd(model *m, int l, const char *op, float *out, const float *in,
                       const float *w, const float *b, int N, int C, int OC, float *amax)
{
    size_t n = (size_t)N * OC;
    if (m->fmt == FMT_FP32) {
        float a = ops_matmul_forward_absmax_mt(m->pool, out, in, w, b, N, C, OC);
        qmax_taken(m, l, op, out, n, a, amax);
    } else {
        ops_matmul_forward_mt(m->pool, out, in, w, b, N, C, OC);
        qmax(m, l, op, out, n, amax);
    }
}

static void F_forward(model *m, int l, int s, const float *h, int B, float *amax)
{
    int T = m->T, C = m->C, N = B * T;
    size_t BT = (size_t)m->B * T, nC = (size_t)N * C;
    float *w = layer_base(m, m->W, l);
    if (s == 0) {
        float *qkv = m->qkv + l * BT * 3 * C, *atty = m->atty + l * BT * C;
        float *att = m->att + l * (size_t)m->B * m->NH * T * T;
        linear_fwd(m, l, "attn qkv", qkv, h, w + m->layer_off[PT_QKVW], w + m->layer_off[PT_QKVB],
                   N, C, 3 * C, amax);
        if (m->qk_norm)
            qk_norm_fwd(m, l, qkv, N, amax);
        /* scores and softmax accumulate in fp32 inside the fused kernel, as
         * fused attention kernels do; the output is stored in the format */
        ops_attention_forward_mt(m->pool, atty, att, qkv, B, T, C, m->NH);
        qmax(m, l, "attention", atty, nC, amax);
        linear_fwd(m, l, "attn proj", f_out(m, l, 0), atty, w + m->layer_off[PT_ATTPROJW],
                   w + m->layer_off[PT_ATTPROJB], N, C, C, amax);
    } else {
        float *fch = m->fch + l * BT * 4 * C, *fcg = m->fch_gelu + l * BT * 4 * C;
        linear_fwd(m, l, "MLP fc1", fch, h, w + m->layer_off[PT_FCW], w + m->layer_off[PT_FCB], N,
                   C, 4 * C, amax);
        /* fch is read by the GELU's backward only: it takes gelu'(x) in
         * place of x, so the backward need not compute exp again */
        float gm = ops_gelu_forward_grad_absmax_mt(m->pool, fcg, fch, fch, N * 4 * C);
        qmax_taken(m, l, "GELU", fcg, nC * 4, gm, amax);
        linear_fwd(m, l, "MLP fc2", f_out(m, l, 1), fcg, w + m->layer_off[PT_FCPROJW],
                   w + m->layer_off[PT_FCPROJB], N, 4 * C, C, amax);
    }
}

static const char *const res_op[2] = {"attn residual", "MLP residual"};
static const char *const gate_op[2] = {"attn gate", "MLP gate"};

/* Sublayer s of layer l; *amax takes in the largest |x| of every
 * activation, and the largest of the sublayer's output is returned. */
static float sublayer_forward(model *m, int l, int s, int B, float *amax)
{
    int N = B * m->T;
    long nC = (long)N * m->C;
    rule r = block_rule(m, l);
    sub_acts a = sub_act_ptrs(m, l, s);
    const float *x = sub_in(m, l, s);
    const float *h = x;
    if (r.pre) {
        float nm =
            norm_fwd(m, norm_of(m, m->W, l, s, 0), a.nin, a.nin_mean, a.nin_rstd, x, N, l, s, 0);
        h = a.nin;
        *amax = ops_max_nan(*amax, nm);
    }
    F_forward(m, l, s, h, B, amax);
    const float *f = f_out(m, l, s);
    if (r.out) {
        float nm = norm_fwd(m, norm_of(m, m->W, l, s, 1), a.nout, a.nout_mean, a.nout_rstd, f, N,
                            l, s, 1);
        f = a.nout;
        *amax = ops_max_nan(*amax, nm);
    }
    float g = r.gate ? layer_base(m, m->W, l)[m->layer_off[PT_RZG]] : 1.0f;
    float rm = ops_residual_mt(m->pool, a.res, x, r.a, f, g, nC);
    float out_max =
        qmax_taken(m, l, r.gate ? gate_op[s] : res_op[s], a.res, (size_t)nC, rm, amax);
    if (r.post) {
        out_max =
            norm_fwd(m, norm_of(m, m->W, l, s, 0), a.nin, a.nin_mean, a.nin_rstd, a.res, N, l, s, 0);
        *amax = ops_max_nan(*amax, out_max);
    }
    return out_max;
}

/* The loss in the low format itself (--fp32-norms off): probabilities
 * rounded to the format, so a tiny one flushes to zero and its loss is
 * inf, as in a naive fp16 softmax. */
static void loss_lowp(model *m, const uint8_t *targets, int N)
{
    int V = m->V;
    numfmt f = m->fmt;
    for (int n = 0; n < N; n++) {
        const float *l = m->logits + (long)n * V;
        float *p = m->probs + (long)n * V;
        float mx = l[0];
        for (int i = 1; i < V; i++)
            mx = l[i] > mx ? l[i] : mx;
        float sum = 0.0f;
        for (int i = 0; i < V; i++)
            sum += p[i] = numfmt_round1(f, ns_expf(numfmt_round1(f, l[i] - mx)));
        sum = numfmt_round1(f, sum);
        for (int i = 0; i < V; i++)
            p[i] = numfmt_round1(f, p[i] / sum);
        m->losses[n] = numfmt_round1(f, -ns_logf(p[targets[n]]));
        m->logz[n] = (float)(ns_log((double)sum) + mx);
        m->lmax[n] = mx;
    }
}

/* The forward over the rows of m (the whole batch, or one row block's
 * view of it): fills the activations, m->stats' maxima, m->counts and
 * m->fault; with targets, the rows' losses. */
static void forward_rows(model *m, const uint8_t *tokens, const uint8_t *targets, int B)
{
    int T = m->T, C = m->C, V = m->V, N = B * T;
    long nC = (long)N * C;
    float *P = m->W;
    ops_encoder_forward(m->encoded, tokens, P + m->wte, P + m->wpe, B, T, C);
    q(m, 0, -1, "embedding", m->encoded, (size_t)nC);

    for (int l = 0; l < m->L; l++) {
        float am = 0.0f;
        sublayer_forward(m, l, 0, B, &am);
        float out_max = sublayer_forward(m, l, 1, B, &am);
        /* am has taken in F's inner activations (q, k, v, attention output,
         * projection, MLP hidden before and after GELU, MLP output), the
         * norms' outputs and the residual sums, as they were made */
        m->stats[l].act_max = am;
        m->stats[l].resid_max = out_max;
    }

    const float *h = block_in(m, m->L);
    if (m->final_norm) {
        norm_fwd(m, final_norm_of(m, P), m->lnf, m->lnf_mean, m->lnf_rstd, h, N, -1, 0, 0);
        h = m->lnf;
    }
    ops_matmul_forward_mt(m->pool, m->logits, h, P + m->headw, P + m->headb, N, C, V);
    q(m, 0, -1, "head", m->logits, (size_t)N * V);
    int lowp = m->fmt != FMT_FP32 && !m->fp32_norms;
    if (!targets || !lowp)
        ops_softmax_forward(m->probs, m->logits, N, V);
    if (targets && lowp)
        loss_lowp(m, targets, N);
    else if (targets)
        ops_crossentropy_forward_z(m->losses, m->logz, m->lmax, m->logits, targets, N, V);
}

/* ---- row blocks ------------------------------------------------------- */

/* Blocks of a pass over B rows: the model's, fewer when B is smaller. */
static int pass_blocks(const model *m, int B) { return m->n_blocks < B ? m->n_blocks : B; }

/* v: block k of K of a pass over B rows, a copy of m whose buffers start
 * at the block's first row (their layer strides stay m's), whose
 * gradients, counts and statistics are the block's own, and whose kernels
 * run on the calling thread (K > 1) or split over the pool (K = 1). */
static void block_view(const model *m, model *v, int K, int k, int B)
{
    int b0 = B * k / K, b1 = B * (k + 1) / K;
    size_t r = (size_t)b0 * m->T, C = m->C;
    *v = *m;
    v->encoded += r * C;
    for (int s = 0; s < 2; s++) {
        v->nin[s] += r * C, v->nin_mean[s] += r, v->nin_rstd[s] += r;
        v->nout[s] += r * C, v->nout_mean[s] += r, v->nout_rstd[s] += r;
        v->res[s] += r * C;
    }
    v->qkv += r * 3 * C, v->atty += r * C, v->attproj += r * C;
    v->qkraw += r * 2 * C, v->qk_mean += r * 2 * m->NH, v->qk_rstd += r * 2 * m->NH;
    v->att += (size_t)b0 * m->NH * m->T * m->T;
    v->fch += r * 4 * C, v->fch_gelu += r * 4 * C, v->fcproj += r * C;
    v->lnf += r * C, v->lnf_mean += r, v->lnf_rstd += r;
    v->logits += r * m->V, v->probs += r * m->V, v->losses += r;
    v->logz += r, v->lmax += r;
    v->dresid += r * C, v->dtmp += r * C, v->dtmp2 += r * C, v->datty += r * C;
    v->dqkv += r * 3 * C, v->dfch += r * 4 * C, v->dfch_gelu += r * 4 * C;
    v->dlogits += r * m->V, v->drow += r;
    v->last_tokens = m->last_tokens + r;
    v->last_targets = m->last_targets ? m->last_targets + r : NULL;
    v->last_B = b1 - b0;
    v->grads = k == 0 ? m->grads : m->partials + (size_t)(k - 1) * m->n_params;
    v->counts = m->blk_counts + (size_t)k * (m->L + 1);
    v->stats = m->blk_stats + (size_t)k * m->L;
    v->fault_seq = 0;
    if (K > 1)
        v->pool = NULL;
}

typedef struct {
    model *m;
    int K, B, backward;
    float dscale;                /* backward: d loss / d mean loss */
    model_fault fault[RB_MAX];   /* each block's first non-finite */
} rows_job;

static void backward_rows(model *m, float dscale);

static void rows_task(void *ctx, int k, int thread)
{
    (void)thread;
    rows_job *j = ctx;
    model v;
    block_view(j->m, &v, j->K, k, j->B);
    if (j->backward)
        backward_rows(&v, j->dscale);
    else
        forward_rows(&v, v.last_tokens, v.last_targets, v.last_B);
    j->fault[k] = v.fault;
}

/* Run the pass's blocks (on the pool when there are several), then take
 * in their counts, and their first fault if the pass had none yet. */
static void run_blocks(model *m, rows_job *j)
{
    for (int k = 0; k < j->K; k++)
        memset(m->blk_counts + (size_t)k * (m->L + 1), 0, (size_t)(m->L + 1) * sizeof *m->counts);
    pool_run(j->K > 1 ? m->pool : NULL, j->K, rows_task, j);
    const model_fault *first = NULL;
    for (int k = 0; k < j->K; k++) {
        const numfmt_counts *c = m->blk_counts + (size_t)k * (m->L + 1);
        for (int l = 0; l <= m->L; l++) {
            m->counts[l].overflow += c[l].overflow;
            m->counts[l].underflow += c[l].underflow;
        }
        if (j->fault[k].set && (!first || j->fault[k].seq < first->seq))
            first = &j->fault[k];
    }
    if (!m->fault.set && first)
        m->fault = *first;
}

/* The layers' statistics of the whole batch: the blocks' maxima, and the
 * RMS of each layer's output over every row. */
static void merge_stats(model *m, int K, int B)
{
    long nC = (long)B * m->T * m->C;
    for (int l = 0; l < m->L; l++) {
        model_layer_stats *st = &m->stats[l];
        st->act_max = st->resid_max = 0.0f;
        for (int k = 0; k < K; k++) {
            st->act_max = ops_max_nan(st->act_max, m->blk_stats[(size_t)k * m->L + l].act_max);
            st->resid_max = ops_max_nan(st->resid_max, m->blk_stats[(size_t)k * m->L + l].resid_max);
        }
        st->resid_rms = (float)sqrt(ops_sumsq(sub_out(m, l, 1), (size_t)nC) / (double)nC);
    }
}

/* ---- the mechanisms' statistics --------------------------------------- */

/* The attention's statistics look at the batch's first ATTN_STAT_ROWS
 * sequences: the scores are computed again for them (the kernels keep
 * only the probabilities), T^2/2 dot products a head, which over a whole
 * batch of 16 cost a third of a default step; a logit that runs away does
 * so in every sequence. */
enum { ATTN_STAT_ROWS = 4 };

/* Layer l's attention over the first sequences of B: the largest |score|
 * and the mean entropy of each head's query rows. A row's entropy is
 * lse - sum_j p_j s_j (p_j = exp(s_j - lse)), lse = s_j* - ln p_j* at its
 * most likely j*: one logarithm a row, the sums in double, as the scores
 * are large where the entropy is small (4700 and 0.01 at a high LR). */
static void attn_stats(const model *m, int l, int B, float *logit_max, float *entropy)
{
    int T = m->T, C = m->C, NH = m->NH, hs = C / NH;
    int nb = B < ATTN_STAT_ROWS ? B : ATTN_STAT_ROWS;
    long C3 = 3L * C;
    float scale = 1.0f / sqrtf((float)hs), smax = 0.0f;
    double hsum = 0.0;
    const float *qkv = m->qkv + (size_t)l * m->B * T * C3;
    const float *att = m->att + (size_t)l * m->B * NH * T * T;
    for (int b = 0; b < nb; b++)
        for (int h = 0; h < NH; h++) {
            const float *q0 = qkv + (long)b * T * C3 + h * hs, *k0 = q0 + C;
            const float *a0 = att + ((long)b * NH + h) * T * T;
            for (int t = 0; t < T; t++) {
                const float *q = q0 + t * C3, *p = a0 + (long)t * T;
                double ps = 0.0;
                float best = -1.0f, sbest = 0.0f;
                for (int j = 0; j <= t; j++) {
                    const float *k = k0 + j * C3;
                    float d = 0.0f;
                    for (int i = 0; i < hs; i++)
                        d += q[i] * k[i];
                    d *= scale;
                    smax = fabsf(d) > smax || isnan(d) ? fabsf(d) : smax;
                    ps += (double)p[j] * d;
                    if (p[j] > best)
                        best = p[j], sbest = d;
                }
                hsum += best > 0.0f ? (double)sbest - ns_log(best) - ps : NAN;
            }
        }
    *logit_max = smax;
    *entropy = (float)(hsum / ((double)nb * NH * T));
}

/* Layer l's residual branch over B rows: RMS of what its two sublayers add
 * to the stream (F, N_out(F) under an output norm, g F under ReZero) over
 * RMS of the stream entering it; and RMS of its first norm's input (the
 * stream before a pre norm, the sum before a post norm, F before res-post's
 * norm; NaN without a norm). */
static void branch_stats(const model *m, int l, int B, float *ratio, float *norm_in)
{
    size_t n = (size_t)B * m->T * m->C;
    rule r = block_rule(m, l);
    double add = 0.0;
    for (int s = 0; s < 2; s++) {
        sub_acts a = sub_act_ptrs(m, l, s);
        add += ops_sumsq(r.out ? a.nout : f_out(m, l, s), n);
    }
    if (r.gate) {
        double g = m->W[m->layer0 + (size_t)l * m->layer_stride + m->layer_off[PT_RZG]];
        add *= g * g;
    }
    double in = ops_sumsq(block_in(m, l), n);
    *ratio = (float)(sqrt(add / (2.0 * n)) / sqrt(in / n));
    const float *x = r.pre ? block_in(m, l) : r.post ? sub_act_ptrs(m, l, 0).res
                   : r.out ? f_out(m, l, 0) : NULL;
    *norm_in = x ? (float)sqrt(ops_sumsq(x, n) / n) : NAN;
}

typedef struct {
    model *m;
    int B;
} mech_job;

static void mech_task(void *ctx, int l, int thread)
{
    (void)thread;
    const mech_job *j = ctx;
    model_layer_stats *st = &j->m->stats[l];
    attn_stats(j->m, l, j->B, &st->attn_logit_max, &st->attn_entropy);
    branch_stats(j->m, l, j->B, &st->branch_ratio, &st->norm_in_rms);
}

float model_forward(model *m, const uint8_t *tokens, const uint8_t *targets, int B)
{
    int N = B * m->T;
    m->last_tokens = tokens;
    m->last_targets = targets;
    m->last_B = B;
    memset(&m->fault, 0, sizeof m->fault);
    memset(m->counts, 0, (size_t)(m->L + 1) * sizeof *m->counts);
    if (m->fmt == FMT_FP32) {
        m->W = m->params;
    } else {
        /* the fp32 master weights, rounded for this step */
        memcpy(m->wlow, m->params, m->n_params * sizeof(float));
        round_watch(m, m->wlow, m->n_params, NULL, 0);
        m->W = m->wlow;
    }
    rows_job j = {.m = m, .K = pass_blocks(m, B), .B = B, .backward = 0};
    run_blocks(m, &j);
    merge_stats(m, j.K, B);
    if (!targets)
        return 0.0f;
    /* each layer's in one task: the same sums whatever the thread count */
    mech_job mj = {m, B};
    pool_run(m->pool, m->L, mech_task, &mj);
    double sum = 0.0, zs = 0.0, zsq = 0.0;
    float lmax = -INFINITY;
    for (int i = 0; i < N; i++) {
        sum += m->losses[i];
        zs += m->logz[i];
        zsq += (double)m->logz[i] * m->logz[i];
        lmax = ops_max_nan(lmax, m->lmax[i]);
    }
    float loss = (float)(sum / N);
    m->logz_mean = (float)(zs / N);
    m->logit_max = lmax;
    m->zloss = (float)(m->z_loss * (zsq / N));
    if (!isfinite(loss))
        note_fault(m, 0, -1, "loss");
    return loss;
}

/* ---- backward --------------------------------------------------------- */

/* dh (N, C) += d F / d h for the gradient df of F's output (dh_set: =).
 * F's weight matrices' gradients are written whole, as if added to zero
 * (MM_DW_ZERO: backward_rows does not zero them); their biases' are
 * accumulated. */
static void F_backward(model *m, int l, int s, const float *h, const float *df, float *dh, int B,
                       int dh_set)
{
    int T = m->T, C = m->C, N = B * T;
    size_t BT = (size_t)m->B * T, nC = (size_t)N * C;
    float *w = layer_base(m, m->W, l), *g = layer_base(m, m->grads, l);
    const size_t *o = m->layer_off;
    int dh_flags = (dh_set ? MM_DINP_SET : 0) | MM_DW_ZERO;
    if (s == 0) {
        float *qkv = m->qkv + l * BT * 3 * C, *atty = m->atty + l * BT * C;
        float *att = m->att + l * (size_t)m->B * m->NH * T * T;
        ops_matmul_backward_flags_mt(m->pool, m->datty, g + o[PT_ATTPROJW], g + o[PT_ATTPROJB], df,
                                 atty, w + o[PT_ATTPROJW], N, C, C, MM_DINP_SET | MM_DW_ZERO);
        q(m, 1, l, "attn proj", m->datty, nC);
        memset(m->dqkv, 0, nC * 3 * sizeof(float));
        ops_attention_backward_mt(m->pool, m->dqkv, m->drow, m->datty, qkv, att, B, T, C, m->NH);
        q(m, 1, l, "attention", m->dqkv, nC * 3);
        if (m->qk_norm) /* dfch: the MLP's scratch, free here */
            qk_norm_bwd(m, l, m->dqkv, m->dfch, N);
        ops_matmul_backward_flags_mt(m->pool, dh, g + o[PT_QKVW], g + o[PT_QKVB], m->dqkv, h,
                                 w + o[PT_QKVW], N, C, 3 * C, dh_flags);
        q(m, 1, l, "attn qkv", dh, nC);
    } else {
        float *fch = m->fch + l * BT * 4 * C, *fcg = m->fch_gelu + l * BT * 4 * C;
        ops_matmul_backward_flags_mt(m->pool, m->dfch_gelu, g + o[PT_FCPROJW], g + o[PT_FCPROJB],
                                 df, fcg, w + o[PT_FCPROJW], N, 4 * C, C,
                                 MM_DINP_SET | MM_DW_ZERO);
        /* fp32: the GELU's backward watches its input (fc2's output) too;
         * a low format rounds that input before the GELU reads it */
        int fp32 = m->fmt == FMT_FP32;
        if (!fp32)
            q(m, 1, l, "MLP fc2", m->dfch_gelu, nC * 4);
        /* fch holds gelu'(x), from the forward (F_forward) */
        int bad = ops_gelu_backward_grad_set_mt(m->pool, m->dfch, fch, m->dfch_gelu, N * 4 * C);
        if (fp32)
            q_taken(m, 1, l, "MLP fc2", m->dfch_gelu, nC * 4, bad & GELU_BAD_DOUT);
        q_taken(m, 1, l, "GELU", m->dfch, nC * 4, bad & GELU_BAD_DINP);
        ops_matmul_backward_flags_mt(m->pool, dh, g + o[PT_FCW], g + o[PT_FCB], m->dfch, h,
                                 w + o[PT_FCW], N, C, 4 * C, dh_flags);
        q(m, 1, l, "MLP fc1", dh, nC);
    }
}

/* On entry m->dresid holds d y (the sublayer's output); on exit d x. */
static void sublayer_backward(model *m, int l, int s, int B)
{
    int N = B * m->T;
    size_t nC = (size_t)N * m->C;
    rule r = block_rule(m, l);
    sub_acts a = sub_act_ptrs(m, l, s);
    const float *x = sub_in(m, l, s);
    float *dr = m->dresid;
    if (r.post) {
        /* dr = N'(r)^T dy, into dtmp */
        memset(m->dtmp, 0, nC * sizeof(float));
        norm_bwd(m, norm_of(m, m->W, l, s, 0), norm_of(m, m->grads, l, s, 0), m->dtmp, m->dresid,
                 a.res, a.nin_mean, a.nin_rstd, N, l, s, 0);
        dr = m->dtmp;
    }
    /* the branch: df2 = g dr (gate), df = N_out'^T df2 (sandwich) */
    const float *f = f_out(m, l, s);
    const float *df = dr;
    if (r.gate) {
        float gv = layer_base(m, m->W, l)[m->layer_off[PT_RZG]];
        double dg = 0.0;
        for (size_t i = 0; i < nC; i++) {
            dg += (double)dr[i] * f[i];
            m->dtmp2[i] = gv * dr[i];
        }
        layer_base(m, m->grads, l)[m->layer_off[PT_RZG]] += (float)dg;
        q(m, 1, l, gate_op[s], m->dtmp2, nC);
        df = m->dtmp2;
    } else if (r.out) {
        memset(m->dtmp2, 0, nC * sizeof(float));
        norm_bwd(m, norm_of(m, m->W, l, s, 1), norm_of(m, m->grads, l, s, 1), m->dtmp2, dr, f,
                 a.nout_mean, a.nout_rstd, N, l, s, 1);
        df = m->dtmp2;
    }
    /* dh into a zeroed buffer when the pre norm follows, straight into dx
     * otherwise; dx starts as the residual path a * dr */
    float *dx = m->dresid;
    if (r.pre) {
        /* no placement has both a pre and a post norm, so dr is dx: the
         * residual path (a = 1) is already in place; dh goes to dtmp */
        float *dh = m->dtmp;
        F_backward(m, l, s, a.nin, df, dh, B, 1);
        norm_bwd(m, norm_of(m, m->W, l, s, 0), norm_of(m, m->grads, l, s, 0), dx, dh, x,
                 a.nin_mean, a.nin_rstd, N, l, s, 0);
    } else {
        /* dx = a dr + dF/dx; under post, dr lives in dtmp and df may too */
        if (df == dx) {
            /* no gate, no out norm, no post: dF/dx accumulates onto dr */
            if (r.a != 1.0f)
                for (size_t i = 0; i < nC; i++)
                    dx[i] *= r.a;
            /* F_backward reads df while writing dx: give it a copy */
            memcpy(m->dtmp2, dr, nC * sizeof(float));
            F_backward(m, l, s, x, m->dtmp2, dx, B, 0);
        } else {
            for (size_t i = 0; i < nC; i++)
                dx[i] = r.a * dr[i];
            F_backward(m, l, s, x, df, dx, B, 0);
        }
    }
}

/* Is tensor t's gradient written whole by one matmul backward of the
 * pass (MM_DW_ZERO), so that nothing need zero it first? The blocks'
 * matrices and the head's; wte and wpe are accumulated row by row. */
static int grad_set_by_matmul(const model *m, const model_tensor *t)
{
    return (t->layer >= 0 && t->is_matrix) || t->offset == m->headw;
}

/* The backward over the rows of m (the whole batch, or one row block's
 * view of it) into m->grads, which it zeroes first (the matrices' by
 * writing them whole); dscale is d loss / d (a row's loss), the loss
 * scale over the whole batch's rows. */
static void backward_rows(model *m, float dscale)
{
    int B = m->last_B, T = m->T, C = m->C, V = m->V, N = B * T;
    size_t nC = (size_t)N * C;
    float *P = m->W, *G = m->grads;
    /* zero the rest, a run of neighbouring tensors at a time: 90% of the
     * default model's gradients are matrices, so most of a memset of G
     * was written again at once */
    for (int k = 0; k < m->n_tensors;) {
        if (grad_set_by_matmul(m, &m->tensors[k])) {
            k++;
            continue;
        }
        size_t lo = m->tensors[k].offset, hi = lo;
        for (; k < m->n_tensors && !grad_set_by_matmul(m, &m->tensors[k]); k++)
            hi = m->tensors[k].offset + m->tensors[k].size;
        memset(G + lo, 0, (hi - lo) * sizeof(float));
    }

    /* the z-loss's gradient (PaLM) joins the cross-entropy's in one pass;
     * off, the plain kernel, bits as before it */
    int bad = m->z_loss != 0.0f
                  ? ops_crossentropy_zloss_backward_set(m->dlogits, m->probs, m->logz,
                                                    m->last_targets, N, V, dscale, m->z_loss)
                  : ops_crossentropy_softmax_backward_set(m->dlogits, m->probs, m->last_targets, N,
                                                      V, dscale);
    q_taken(m, 1, -1, "loss", m->dlogits, (size_t)N * V, bad);

    const float *top = block_in(m, m->L);
    memset(m->dresid, 0, nC * sizeof(float));
    if (m->final_norm) {
        ops_matmul_backward_flags_mt(m->pool, m->dtmp, G + m->headw, G + m->headb, m->dlogits,
                                 m->lnf, P + m->headw, N, C, V, MM_DINP_SET | MM_DW_ZERO);
        q(m, 1, -1, "head", m->dtmp, nC);
        norm_bwd(m, final_norm_of(m, P), final_norm_of(m, G), m->dresid, m->dtmp, top,
                 m->lnf_mean, m->lnf_rstd, N, -1, 0, 0);
    } else {
        ops_matmul_backward_flags_mt(m->pool, m->dresid, G + m->headw, G + m->headb, m->dlogits, top,
                                 P + m->headw, N, C, V, MM_DW_ZERO);
        q(m, 1, -1, "head", m->dresid, nC);
    }
    for (int l = m->L - 1; l >= 0; l--) {
        sublayer_backward(m, l, 1, B);
        sublayer_backward(m, l, 0, B);
    }
    ops_encoder_backward(G + m->wte, G + m->wpe, m->dresid, m->last_tokens, B, T, C);
}

/* grads += the blocks' partials, each element summed in block order, so
 * the parts the pool cuts the array into do not change a bit */
enum { SUM_PART = 1 << 15 };
typedef struct {
    float *g;
    const float *p;
    size_t n;
    int K;
} sum_job;

static void sum_task(void *ctx, int part, int thread)
{
    (void)thread;
    const sum_job *j = ctx;
    size_t lo = (size_t)part * SUM_PART, hi = lo + SUM_PART < j->n ? lo + SUM_PART : j->n;
    for (int k = 1; k < j->K; k++) {
        const float *p = j->p + (size_t)(k - 1) * j->n;
        for (size_t i = lo; i < hi; i++)
            j->g[i] += p[i];
    }
}

void model_backward(model *m)
{
    int B = m->last_B, N = B * m->T;
    float *G = m->grads;
    /* the blocks start from the forward's verdict: once a pass has a
     * fault, the watch is off, as it is in one pass over every row */
    rows_job j = {.m = m, .K = pass_blocks(m, B), .B = B, .backward = 1};
    /* loss = mean over N positions, times the loss scale */
    j.dscale = m->loss_scale / (float)N;
    run_blocks(m, &j);
    if (j.K > 1) {
        sum_job sj = {G, m->partials, m->n_params, j.K};
        pool_run(m->pool, (int)((m->n_params + SUM_PART - 1) / SUM_PART), sum_task, &sj);
    }
    /* parameter gradients are rounded to the format too (the caller
     * unscales them into fp32 for the optimizer); a non-finite one is
     * reported as the backward of its layer's weights */
    if (m->fmt != FMT_FP32 || !m->fault.set) {
        for (int k = 0; k < m->n_tensors; k++) {
            const model_tensor *t = &m->tensors[k];
            q(m, 1, t->layer, "weight gradients", G + t->offset, t->size);
        }
    }
}
