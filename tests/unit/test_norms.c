/* test_norms.c - the invariants of each norm scheme, beyond the PyTorch
 * parity of test_parity: ReZero is the identity at init, DeepNorm's
 * constants and which weights its beta scales, placement and kind
 * switches that leave every weight alone, RMSNorm vs LayerNorm by exactly
 * the mean, and a zero gain that silences a sublayer's weights; QK-norm
 * and the z-loss switched between steps, res-post's parameters and the
 * placements' names. */
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "model.h"
#include "ops.h"
#include "rng.h"
#include "testutil.h"

static ns_config small(norm_place p)
{
    ns_config c;
    settings_defaults(&c);
    c.n_layer = 3;
    c.dim = 16;
    c.n_head = 2;
    c.context = 8;
    c.batch = 2;
    c.norm = p;
    return c;
}

static void batch(uint8_t *x, uint8_t *y, int n)
{
    for (int i = 0; i < n; i++) {
        x[i] = (uint8_t)(i * 37 + 11);
        y[i] = (uint8_t)(i * 53 + 7);
    }
}

/* ReZero with g = 0: every block passes the residual stream through
 * unchanged, so the stream leaving the last block equals the embeddings. */
static void test_rezero_identity(void)
{
    ns_config c = small(NORM_REZERO);
    model m;
    ns_rng r;
    rng_seed(&r, 5);
    CHECK(model_create(&m, &c) == 0);
    model_init(&m, &c, &r);
    uint8_t x[16], y[16];
    batch(x, y, 16);
    model_forward(&m, x, y, 2);
    size_t nC = (size_t)16 * c.dim, BTC = nC;
    int same = 1;
    for (int l = 0; l < c.n_layer; l++)
        same &= memcmp(m.res[1] + l * BTC, m.encoded, nC * sizeof(float)) == 0;
    CHECK(same);
    /* but the blocks are not dead: the gates get a gradient */
    model_backward(&m);
    float *g = m.grads + m.layer0 + m.layer_off[PT_RZG];
    CHECK(*g != 0.0f);
    /* and with g != 0 the identity is gone */
    m.params[m.layer0 + m.layer_off[PT_RZG]] = 0.5f;
    model_forward(&m, x, y, 2);
    CHECK(memcmp(m.res[1], m.encoded, nC * sizeof(float)) != 0);
    model_free(&m);
}

/* DeepNet (Wang et al. 2022), decoder-only: alpha = (2N)^(1/4),
 * beta = (8N)^(-1/4). Values for N = 6, 12, 24 from Python floats. */
static void test_deepnorm_constants(void)
{
    CHECK(t_close(model_deepnorm_alpha(6), 1.8612097, 1e-6, 0));
    CHECK(t_close(model_deepnorm_alpha(12), 2.2133638, 1e-6, 0));
    CHECK(t_close(model_deepnorm_alpha(24), 2.6321480, 1e-6, 0));
    CHECK(t_close(model_deepnorm_beta(6), 0.3799178, 1e-6, 0));
    CHECK(t_close(model_deepnorm_beta(12), 0.3194716, 1e-6, 0));
    CHECK(t_close(model_deepnorm_beta(24), 0.2686425, 1e-6, 0));
}

/* Same seed under pre and deepnorm: beta scales exactly the value rows of
 * qkvw, attprojw, fcw and fcprojw; every other weight is identical. */
static void test_deepnorm_beta_targets(void)
{
    ns_config a = small(NORM_PRE), b = small(NORM_DEEPNORM);
    model ma, mb;
    ns_rng r;
    CHECK(model_create(&ma, &a) == 0 && model_create(&mb, &b) == 0);
    rng_seed(&r, 9);
    model_init(&ma, &a, &r);
    rng_seed(&r, 9);
    model_init(&mb, &b, &r);
    float beta = (float)model_deepnorm_beta(b.n_layer);
    size_t C = (size_t)a.dim;
    int scaled_ok = 1, other_same = 1, n_scaled = 0;
    for (int k = 0; k < ma.n_tensors; k++) {
        const model_tensor *t = &ma.tensors[k];
        const float *pa = ma.params + t->offset, *pb = mb.params + t->offset;
        int whole = !strcmp(t->name, "attprojw") || !strcmp(t->name, "fcw") ||
                    !strcmp(t->name, "fcprojw");
        for (size_t i = 0; i < t->size; i++) {
            int is_v = !strcmp(t->name, "qkvw") && i >= 2 * C * C;
            if (whole || is_v) {
                scaled_ok &= pb[i] == pa[i] * beta;
                n_scaled++;
            } else {
                other_same &= pb[i] == pa[i];
            }
        }
    }
    CHECK(scaled_ok);
    CHECK(other_same);
    CHECK(n_scaled == b.n_layer * (int)(C * C + C * C + 4 * C * C + 4 * C * C));
    model_free(&ma);
    model_free(&mb);
}

/* Switching to any placement or kind mid-run touches no weight, changes
 * what the model computes, and switching back restores it exactly. */
static void test_switch_all(void)
{
    ns_config c = small(NORM_PRE);
    c.context = 16;
    dataset d;
    data_builtin(&d);
    char err[256];
    engine *e = engine_create(&c, &d, err, sizeof err);
    step_metrics sm;
    for (int i = 0; i < 3; i++)
        engine_step(e, &sm);
    size_t n;
    float *p = engine_params(e, &n);
    float *copy = malloc(n * sizeof(float));
    memcpy(copy, p, n * sizeof(float));
    float base = engine_validate(e);
    int untouched = 1, differs = 1;
    for (int pl = 0; pl < NORM_PLACE_COUNT; pl++) {
        if (pl == NORM_PRE)
            continue;
        engine_set_norm(e, (norm_place)pl);
        float v = engine_validate(e);
        untouched &= memcmp(copy, p, n * sizeof(float)) == 0;
        /* mix with k = L/4 = 0 blocks of Post-LN is Pre-LN exactly */
        if (pl != NORM_MIX)
            differs &= v != base;
        else
            CHECK(v == base);
    }
    engine_set_norm(e, NORM_PRE);
    for (int k = 0; k < NORM_KIND_COUNT; k++) {
        engine_set_norm_kind(e, (norm_kind)k);
        float v = engine_validate(e);
        untouched &= memcmp(copy, p, n * sizeof(float)) == 0;
        if (k != NORMK_LAYERNORM)
            differs &= v != base;
    }
    engine_set_norm_kind(e, NORMK_LAYERNORM);
    CHECK(untouched);
    CHECK(differs);
    CHECK(engine_validate(e) == base);
    engine_set_final_norm(e, 0);
    CHECK(engine_validate(e) != base);
    engine_set_final_norm(e, -1);
    CHECK(engine_validate(e) == base);
    free(copy);
    engine_free(e);
}

/* RMSNorm of the centered input is LayerNorm (with zero bias): the two
 * differ by exactly the mean term. */
static void test_rms_vs_layernorm(void)
{
    enum { N = 3, C = 16 };
    ns_rng r;
    rng_seed(&r, 4);
    float x[N * C], xc[N * C], w[C], b[C] = {0}, o1[N * C], o2[N * C], o3[N * C], mu[N], rs[N];
    for (int i = 0; i < C; i++)
        w[i] = 1.0f + 0.2f * rng_normal(&r);
    for (int n = 0; n < N; n++) {
        float mean = 0;
        for (int i = 0; i < C; i++)
            mean += x[n * C + i] = rng_normal(&r) + 2.5f; /* a large common mean */
        mean /= C;
        for (int i = 0; i < C; i++)
            xc[n * C + i] = x[n * C + i] - mean;
    }
    ops_layernorm_forward(o1, mu, rs, x, w, b, N, C, 1e-5f);
    ops_rmsnorm_forward(o2, mu, rs, xc, w, N, C, 1e-5f);
    ops_rmsnorm_forward(o3, mu, rs, x, w, N, C, 1e-5f);
    int same = 1, differ = 0;
    for (int i = 0; i < N * C; i++) {
        same &= t_close(o1[i], o2[i], 1e-5, 1e-6);
        differ |= !t_close(o1[i], o3[i], 1e-2, 1e-3);
    }
    CHECK(same);
    CHECK(differ);
}

/* Gain 0 under Pre-LN: the sublayers see zeros, so their weight matrices
 * get exactly zero gradient (only biases and the gains move); gain and
 * bias 0 under Post-LN make every block output zero. */
static void test_gamma_zero(void)
{
    ns_config c = small(NORM_PRE);
    c.ln_gamma_init = 0.0f;
    model m;
    ns_rng r;
    rng_seed(&r, 2);
    CHECK(model_create(&m, &c) == 0);
    model_init(&m, &c, &r);
    uint8_t x[16], y[16];
    batch(x, y, 16);
    model_forward(&m, x, y, 2);
    model_backward(&m);
    int zero = 1, gains_move = 0;
    for (int k = 0; k < m.n_tensors; k++) {
        const model_tensor *t = &m.tensors[k];
        if (t->layer < 0)
            continue;
        double g = model_l2(m.grads + t->offset, t->size);
        if (!strcmp(t->name, "qkvw") || !strcmp(t->name, "fcw") || !strcmp(t->name, "attprojw"))
            zero &= g == 0.0;
        if (!strcmp(t->name, "ln1w") || !strcmp(t->name, "ln2w"))
            gains_move |= g > 0.0;
    }
    CHECK(zero);
    CHECK(gains_move);
    model_free(&m);

    c = small(NORM_POST);
    c.ln_gamma_init = 0.0f;
    c.ln_beta_init = 0.0f;
    CHECK(model_create(&m, &c) == 0);
    model_init(&m, &c, &r);
    model_forward(&m, x, y, 2);
    CHECK(m.stats[c.n_layer - 1].resid_max == 0.0f);
    model_free(&m);
}

/* The tensors of m named nm (every layer's): their gradients' norm. */
static double grad_of(const model *m, const char *nm)
{
    double sq = 0;
    for (int k = 0; k < m->n_tensors; k++)
        if (!strcmp(m->tensors[k].name, nm)) {
            double g = model_l2(m->grads + m->tensors[k].offset, m->tensors[k].size);
            sq += g * g;
        }
    return sqrt(sq);
}

/* QK-norm's parameters start at gain 1, bias 0, DyT a dyt_alpha; off,
 * they get zero gradients, on, all of them (the kind's) move; res-post
 * uses the output norms (ln1o, ln2o), not ln1, ln2. */
static void test_qk_params(void)
{
    uint8_t x[16], y[16];
    batch(x, y, 16);
    for (int k = 0; k < NORM_KIND_COUNT; k++) {
        ns_config c = small(NORM_PRE);
        c.norm_kind = (norm_kind)k;
        c.dyt_alpha = 0.75f;
        model m;
        ns_rng r;
        rng_seed(&r, 3);
        CHECK(model_create(&m, &c) == 0);
        model_init(&m, &c, &r);
        int init_ok = 1;
        for (int i = 0; i < m.n_tensors; i++) {
            const model_tensor *t = &m.tensors[i];
            float want = t->pt == PT_QNW || t->pt == PT_KNW ? 1.0f
                         : t->pt == PT_QNA || t->pt == PT_KNA ? 0.75f
                                                              : 0.0f;
            for (size_t j = 0; model_tensor_qk(t) && j < t->size; j++)
                init_ok &= m.params[t->offset + j] == want;
        }
        CHECK(init_ok);
        model_forward(&m, x, y, 2);
        model_backward(&m);
        CHECK(grad_of(&m, "qnw") == 0 && grad_of(&m, "knb") == 0 && grad_of(&m, "qna") == 0);
        model_set_qk_norm(&m, 1);
        model_forward(&m, x, y, 2);
        model_backward(&m);
        CHECK(grad_of(&m, "qnw") > 0 && grad_of(&m, "knw") > 0);
        CHECK((grad_of(&m, "qnb") > 0 && grad_of(&m, "knb") > 0) == (k != NORMK_RMSNORM));
        CHECK((grad_of(&m, "qna") > 0 && grad_of(&m, "kna") > 0) == (k == NORMK_DYT));
        model_set_qk_norm(&m, 0);
        model_set_norm(&m, NORM_RESPOST, 1);
        model_forward(&m, x, y, 2);
        model_backward(&m);
        CHECK(grad_of(&m, "ln1w") == 0 && grad_of(&m, "ln2w") == 0);
        CHECK(grad_of(&m, "ln1ow") > 0 && grad_of(&m, "ln2ow") > 0 && grad_of(&m, "lnfw") > 0);
        model_free(&m);
    }
}

/* QK-norm and the z-loss switched mid-run touch no weight; QK-norm
 * changes what the model computes and off again restores it exactly; the
 * z-loss leaves the reported loss (cross-entropy) alone, and changes the
 * step: its term is z mean (log Z)^2. */
static void test_qk_zloss_switch(void)
{
    ns_config c = small(NORM_PRE);
    c.context = 16;
    dataset d;
    data_builtin(&d);
    char err[256];
    engine *e = engine_create(&c, &d, err, sizeof err), *z = engine_create(&c, &d, err, sizeof err);
    step_metrics sm, sz;
    for (int i = 0; i < 3; i++) {
        engine_step(e, &sm);
        engine_step(z, &sz);
    }
    size_t n;
    float *p = engine_params(e, &n);
    float *copy = malloc(n * sizeof(float));
    memcpy(copy, p, n * sizeof(float));
    float base = engine_validate(e);
    engine_set_qk_norm(e, 1);
    CHECK(engine_validate(e) != base);
    engine_set_z_loss(e, 1e-4f);
    CHECK(memcmp(copy, p, n * sizeof(float)) == 0);
    engine_set_qk_norm(e, 0);
    CHECK(engine_validate(e) == base);
    engine_loss_terms t;
    engine_step(e, &sm);
    engine_set_z_loss(z, 0.0f);
    engine_step(z, &sz);
    CHECK(sm.loss == sz.loss); /* the same forward: the reported loss is the CE */
    CHECK(engine_last_loss_terms(e, &t) == 1);
    CHECK(isfinite(t.logz_mean) && t.logz_mean > 0 && isfinite(t.logit_max));
    /* mean of squares >= square of the mean */
    CHECK(t.zloss > 0 && t.zloss >= 1e-4f * t.logz_mean * t.logz_mean * (1 - 1e-5f));
    size_t nz;
    float *pz = engine_params(z, &nz);
    CHECK(nz == n && memcmp(pz, p, n * sizeof(float)) != 0); /* its gradient moved the weights */
    engine_loss_terms tz;
    CHECK(engine_last_loss_terms(z, &tz) == 1 && tz.zloss == 0.0f && tz.logz_mean == t.logz_mean);
    free(copy);
    engine_free(e);
    engine_free(z);

    /* in fp16 with the norms' statistics in the format, QK-norm of each
     * kind trains: finite, and the loss falls */
    for (int k = 0; k < NORM_KIND_COUNT; k++) {
        ns_config f = small(NORM_PRE);
        f.context = 16;
        f.norm_kind = (norm_kind)k;
        f.precision = FMT_FP16;
        f.fp32_norms = 0;
        f.qk_norm = 1;
        f.z_loss = 1e-4f;
        f.lr = 3e-3f;
        engine *h = engine_create(&f, &d, err, sizeof err);
        step_metrics first, last;
        int finite = 1;
        for (int i = 0; i < 30; i++) {
            engine_step(h, i ? &last : &first);
            finite &= i ? isfinite(last.loss) : isfinite(first.loss);
        }
        if (!CHECK(finite && last.loss < first.loss))
            fprintf(stderr, "  fp16 QK-norm %s: loss %g -> %g\n", config_norm_kind_name(f.norm_kind),
                    (double)first.loss, (double)last.loss);
        engine_free(h);
    }
}

/* The placements' names: res-post, and peri a second name of sandwich
 * (Kim et al. 2025), printed as sandwich. */
static void test_place_names(void)
{
    CHECK(config_norm_place_parse("res-post") == NORM_RESPOST);
    CHECK(!strcmp(config_norm_place_name(NORM_RESPOST), "res-post"));
    CHECK(config_norm_place_parse("peri") == NORM_SANDWICH);
    CHECK(!strcmp(config_norm_place_name(NORM_SANDWICH), "sandwich"));
    CHECK(config_norm_place_parse("sandwich") == NORM_SANDWICH);
    CHECK(config_norm_place_parse("Peri") == -1);
    ns_config c = small(NORM_RESPOST);
    CHECK(config_final_norm(&c) == 1);
}

int main(void)
{
    test_qk_params();
    test_qk_zloss_switch();
    test_place_names();
    test_rezero_identity();
    test_deepnorm_constants();
    test_deepnorm_beta_targets();
    test_switch_all();
    test_rms_vs_layernorm();
    test_gamma_zero();
    return test_summary();
}
