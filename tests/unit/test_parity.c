/* test_parity.c - the C model against PyTorch. tests/fixtures/gen_fixtures.py (run
 * with Debian's python3-torch) wrote, for each placement x norm kind, the
 * weights, a batch, the logits, the loss, every parameter gradient and the
 * losses of 10 AdamW steps (config record: L, C, NH, T, B, placement, kind,
 * eps, lr, beta1, beta2, adam_eps, weight_decay, final_norm, mix_k); the fixtures are committed so this test needs
 * no torch. Any mismatch fails the build.
 *
 * The first fixtures hold the layout before the QK-norm tensors (as
 * checkpoints before format 5 do): their weights are put in place tensor
 * by tensor, the QK-norm's at their initial values, their gradients
 * expected 0. The later ones (QK-norm, res-post, z-loss) hold the layout
 * with them, a config of 20 values (the fp16 one's 18, then qk_norm and
 * z_loss) and the records logz_mean and zloss.
 *
 * Tolerance: |c - torch| <= 1e-4 * |torch| + atol, with atol 1e-6 for
 * gradients and logits (a floor for values that are zero up to rounding). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "settings.h"
#include "optim.h"
#include "testutil.h"

typedef struct {
    char name[32];
    uint64_t n;
    float *data;
} record;

typedef struct {
    int count;
    record rec[16];
} fixture;

static int rd(FILE *f, void *p, size_t n) { return fread(p, 1, n, f) == n ? 0 : -1; }

static int load_fixture(const char *path, fixture *fx)
{
    memset(fx, 0, sizeof *fx);
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    char magic[4];
    uint32_t ver, count;
    if (rd(f, magic, 4) || memcmp(magic, "NSFX", 4) || rd(f, &ver, 4) || ver != 1 ||
        rd(f, &count, 4) || count > 16) {
        fclose(f);
        return -1;
    }
    for (uint32_t i = 0; i < count; i++) {
        record *r = &fx->rec[i];
        uint32_t len;
        if (rd(f, &len, 4) || len >= sizeof r->name || rd(f, r->name, len) || rd(f, &r->n, 8) ||
            r->n > 100000000) {
            fclose(f);
            return -1;
        }
        r->data = malloc(r->n * sizeof(float) + 1);
        if (!r->data || rd(f, r->data, r->n * sizeof(float))) {
            fclose(f);
            return -1;
        }
        fx->count++;
    }
    fclose(f);
    return 0;
}

static const record *get(const fixture *fx, const char *name)
{
    for (int i = 0; i < fx->count; i++)
        if (!strcmp(fx->rec[i].name, name))
            return &fx->rec[i];
    fprintf(stderr, "fixture has no record '%s'\n", name);
    exit(1);
}

static const record *find(const fixture *fx, const char *name)
{
    for (int i = 0; i < fx->count; i++)
        if (!strcmp(fx->rec[i].name, name))
            return &fx->rec[i];
    return NULL;
}

static void free_fixture(fixture *fx)
{
    for (int i = 0; i < fx->count; i++)
        free(fx->rec[i].data);
}

/* Compare n values; report the worst few. Returns 1 if all are close. */
static int all_close(const char *what, const float *c, const float *ref, size_t n, double rtol,
                     double atol)
{
    size_t bad = 0;
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)c[i] - ref[i]);
        double lim = rtol * fabs(ref[i]) + atol;
        if (!(d <= lim)) {
            if (bad < 3)
                fprintf(stderr, "  %s[%zu]: C %.9g torch %.9g\n", what, i, c[i], ref[i]);
            bad++;
        }
        if (d > worst)
            worst = d;
    }
    if (bad)
        fprintf(stderr, "  %s: %zu of %zu values differ (worst %.3g)\n", what, bad, n, worst);
    return bad == 0;
}

/* The model settings of a fixture's config record (n values): L, C, NH,
 * T, B, placement, kind, eps, then (after the optimizer's five) final_norm
 * and mix_k; from 20 values, qk_norm and z_loss at 18 and 19. */
static ns_config fixture_config(const float *cf, uint64_t n)
{
    ns_config c;
    settings_defaults(&c);
    c.n_layer = (int)cf[0];
    c.dim = (int)cf[1];
    c.n_head = (int)cf[2];
    c.context = (int)cf[3];
    c.batch = (int)cf[4];
    c.norm = (norm_place)(int)cf[5];
    c.norm_kind = (norm_kind)(int)cf[6];
    c.eps = cf[7];
    c.final_norm = (int)cf[13];
    c.mix_k = (int)cf[14];
    if (n >= 20) {
        c.qk_norm = (int)cf[18];
        c.z_loss = cf[19];
    }
    return c;
}

/* dst (m's n_params) from a fixture's array src of n values: the same
 * layout, or the one before the QK-norm tensors, whose places in dst
 * keep what they hold. 0, or -1 when n is neither count. */
static int put_layout(const model *m, const ns_config *c, float *dst, const float *src,
                      uint64_t n)
{
    if (n == m->n_params) {
        memcpy(dst, src, m->n_params * sizeof(float));
        return 0;
    }
    if (n != model_param_count_noqk(c))
        return -1;
    size_t at = 0;
    for (int k = 0; k < m->n_tensors; k++) {
        const model_tensor *t = &m->tensors[k];
        if (model_tensor_qk(t))
            continue;
        memcpy(dst + t->offset, src + at, t->size * sizeof(float));
        at += t->size;
    }
    return 0;
}

/* The largest |a - b| over n values. */
static double max_diff(const float *a, const float *b, size_t n)
{
    double w = 0;
    for (size_t i = 0; i < n; i++)
        w = fabs((double)a[i] - b[i]) > w ? fabs((double)a[i] - b[i]) : w;
    return w;
}

static void check_fixture(const char *dir, const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s.bin", dir, name);
    fixture fx;
    if (!CHECK(load_fixture(path, &fx) == 0)) {
        fprintf(stderr, "  cannot read %s\n", path);
        return;
    }
    const record *cfr = get(&fx, "config");
    const float *cf = cfr->data;
    ns_config c = fixture_config(cf, cfr->n);
    adamw_hparams h = {cf[8], cf[9], cf[10], cf[11], cf[12], 1.0f, 1.0f}; /* no layer decay */

    model m;
    CHECK(model_create(&m, &c) == 0);
    const record *params = get(&fx, "params"), *grec = get(&fx, "grads");
    /* expected gradients in the model's layout: 0 for tensors not in the
     * fixture's */
    float *g = calloc(m.n_params, sizeof(float));
    model_init_qk_norm(&m, m.params, c.dyt_alpha);
    if (!CHECK(g && put_layout(&m, &c, m.params, params->data, params->n) == 0 &&
               put_layout(&m, &c, g, grec->data, grec->n) == 0)) {
        fprintf(stderr, "  %s: %llu params in the fixture, %zu in the model\n", name,
                (unsigned long long)params->n, m.n_params);
        free(g);
        model_free(&m);
        free_fixture(&fx);
        return;
    }
    int BT = c.batch * c.context;
    uint8_t *tok = malloc((size_t)BT), *tgt = malloc((size_t)BT);
    for (int i = 0; i < BT; i++) {
        tok[i] = (uint8_t)get(&fx, "tokens")->data[i];
        tgt[i] = (uint8_t)get(&fx, "targets")->data[i];
    }

    float loss = model_forward(&m, tok, tgt, c.batch);
    model_backward(&m);
    char what[64];
    snprintf(what, sizeof what, "%s loss", name);
    CHECK(all_close(what, &loss, get(&fx, "loss")->data, 1, 1e-4, 0));
    snprintf(what, sizeof what, "%s logits", name);
    CHECK(all_close(what, m.logits, get(&fx, "logits")->data, (size_t)BT * NS_VOCAB, 1e-4, 1e-6));
    /* the loss terms, where the fixture has them */
    const record *lz = find(&fx, "logz_mean"), *zl = find(&fx, "zloss");
    if (lz) {
        snprintf(what, sizeof what, "%s logz_mean", name);
        CHECK(all_close(what, &m.logz_mean, lz->data, 1, 1e-4, 1e-6));
    }
    if (zl) {
        snprintf(what, sizeof what, "%s zloss", name);
        CHECK(all_close(what, &m.zloss, zl->data, 1, 1e-4, 1e-9));
    }
    /* every gradient, tensor by tensor so a failure names the tensor */
    int grads_ok = 1;
    for (int k = 0; k < m.n_tensors; k++) {
        const model_tensor *t = &m.tensors[k];
        snprintf(what, sizeof what, "%s grad %s (layer %d)", name, t->name, t->layer);
        grads_ok &= all_close(what, m.grads + t->offset, g + t->offset, t->size, 1e-4, 1e-6);
    }
    CHECK(grads_ok);
    /* the gradients are not trivially zero */
    CHECK(model_l2(m.grads, m.n_params) > 1e-3);
    /* and the mechanism is really there: without it, the head's gradient
     * (z-loss) or the loss (QK-norm) misses by more than the tolerance */
    if (c.z_loss != 0.0f || c.qk_norm) {
        size_t hb = 0;
        for (int k = 0; k < m.n_tensors; k++)
            if (!strcmp(m.tensors[k].name, "headb"))
                hb = m.tensors[k].offset;
        model_set_z_loss(&m, 0.0f);
        model_set_qk_norm(&m, 0);
        float loss0 = model_forward(&m, tok, tgt, c.batch);
        model_backward(&m);
        if (c.z_loss != 0.0f)
            CHECK(max_diff(m.grads + hb, g + hb, NS_VOCAB) > 1e-5);
        if (c.qk_norm)
            CHECK(fabs((double)loss0 - loss) > 1e-3);
        model_set_z_loss(&m, c.z_loss);
        model_set_qk_norm(&m, c.qk_norm);
    }

    /* 10 AdamW steps on the same batch: the loss before each update */
    adamw o;
    CHECK(optim_adamw_create(&o, m.n_params) == 0);
    float losses[10];
    for (int s = 0; s < 10; s++) {
        losses[s] = model_forward(&m, tok, tgt, c.batch);
        model_backward(&m);
        optim_adamw_update(&o, &m, &h, NULL);
    }
    snprintf(what, sizeof what, "%s 10-step losses", name);
    CHECK(all_close(what, losses, get(&fx, "losses10")->data, 10, 1e-4, 0));
    CHECK(losses[9] < losses[0]);
    optim_adamw_free(&o);
    free(g);
    free(tok);
    free(tgt);
    model_free(&m);
    free_fixture(&fx);
}

/* One fp16 step with fp32 norms and loss scale 1024, against a PyTorch
 * model that rounds through torch.half at the same points (an op's output
 * and the gradient flowing into it). The roundings are the same, the sums
 * before them are not in the same order, so a value could land one fp16
 * ulp (2^-11 relative) away. Tolerance, stated: loss to 2e-3 relative;
 * logits to 1e-2 relative + 1e-2; each gradient tensor's error norm within
 * 1e-4 of its norm (measured: at most 3e-5). Gradients left in fp32 miss
 * by about 1.4e-4 (an ulp over sqrt 12); a dropped loss scale by more. */
static void check_fp16(const char *dir)
{
    char path[512];
    snprintf(path, sizeof path, "%s/fp16_pre_layernorm.bin", dir);
    fixture fx;
    if (!CHECK(load_fixture(path, &fx) == 0))
        return;
    const record *cfr = get(&fx, "config");
    const float *cf = cfr->data;
    ns_config c = fixture_config(cf, cfr->n);
    model m;
    CHECK(model_create(&m, &c) == 0);
    model_init_qk_norm(&m, m.params, c.dyt_alpha);
    const record *pr = get(&fx, "params"), *grec = get(&fx, "grads");
    float *g = calloc(m.n_params, sizeof(float));
    if (!CHECK(g && put_layout(&m, &c, m.params, pr->data, pr->n) == 0 &&
               put_layout(&m, &c, g, grec->data, grec->n) == 0)) {
        free(g);
        model_free(&m);
        free_fixture(&fx);
        return;
    }
    int BT = c.batch * c.context;
    uint8_t *tok = malloc((size_t)BT), *tgt = malloc((size_t)BT);
    for (int i = 0; i < BT; i++) {
        tok[i] = (uint8_t)get(&fx, "tokens")->data[i];
        tgt[i] = (uint8_t)get(&fx, "targets")->data[i];
    }
    model_set_precision(&m, (numfmt)(int)cf[15], (int)cf[16]);
    m.loss_scale = cf[17];
    float loss = model_forward(&m, tok, tgt, c.batch);
    model_backward(&m);
    for (size_t i = 0; i < m.n_params; i++)
        m.grads[i] /= m.loss_scale;
    CHECK(all_close("fp16 loss", &loss, get(&fx, "loss")->data, 1, 2e-3, 0));
    CHECK(all_close("fp16 logits", m.logits, get(&fx, "logits")->data, (size_t)BT * NS_VOCAB,
                    1e-2, 1e-2));
    int ok = 1;
    for (int k = 0; k < m.n_tensors; k++) {
        const model_tensor *t = &m.tensors[k];
        double dn = 0, rn = 0;
        for (size_t i = 0; i < t->size; i++) {
            double d = (double)m.grads[t->offset + i] - g[t->offset + i];
            dn += d * d;
            rn += (double)g[t->offset + i] * g[t->offset + i];
        }
        if (getenv("NS_VERBOSE"))
            fprintf(stderr, "  fp16 grad %s (layer %d): rel err %.3g\n", t->name, t->layer,
                    rn > 0 ? sqrt(dn / rn) : 0.0);
        if (sqrt(dn) > 1e-4 * sqrt(rn) + 1e-9) {
            fprintf(stderr, "  fp16 grad %s (layer %d): error norm %.3g of %.3g\n", t->name,
                    t->layer, sqrt(dn), sqrt(rn));
            ok = 0;
        }
    }
    CHECK(ok);
    /* and it is not the fp32 answer: the rounding is really there */
    model_set_precision(&m, FMT_FP32, 1);
    m.loss_scale = 1.0f;
    float loss32 = model_forward(&m, tok, tgt, c.batch);
    CHECK(loss32 != loss);
    free(g);
    free(tok);
    free(tgt);
    model_free(&m);
    free_fixture(&fx);
}

/* out_change of one AdamW step (the fixture config's hyperparameters)
 * on the batch from m's weights, as the engine computes it: the logits
 * before and after, model_rel_change. */
static float mech_out_change(model *m, const float *cf, const uint8_t *tok, const uint8_t *tgt,
                             int B)
{
    size_t n = (size_t)B * m->T * m->V;
    float *before = malloc(n * sizeof(float));
    adamw o;
    adamw_hparams h = {cf[8], cf[9], cf[10], cf[11], cf[12], 1.0f, 1.0f};
    if (!before || optim_adamw_create(&o, m->n_params) != 0) {
        free(before);
        return NAN;
    }
    model_forward(m, tok, NULL, B);
    memcpy(before, m->logits, n * sizeof(float));
    model_forward(m, tok, tgt, B);
    model_backward(m);
    optim_adamw_update(&o, m, &h, NULL);
    model_forward(m, tok, NULL, B);
    float oc = (float)model_rel_change(before, m->logits, n);
    optim_adamw_free(&o);
    free(before);
    return oc;
}

/* The mechanisms' statistics of a forward (model_forward's per-layer
 * attention logits and entropy, branch share and first norm's input; the
 * output's log Z and largest logit) against PyTorch's float64 values on
 * the same weights and batch (tests/fixtures/gen_mech.py, which computes
 * the entropy as -sum p ln p, not as the model does). A value PyTorch says
 * is NaN (no norm) must be NaN here. And out_change of one AdamW step. */
static void check_mech(const char *dir, const char *name)
{
    char path[512], what[96];
    snprintf(path, sizeof path, "%s/mech_%s.bin", dir, name);
    fixture fx;
    if (!CHECK(load_fixture(path, &fx) == 0)) {
        fprintf(stderr, "  cannot read %s\n", path);
        return;
    }
    const record *cfr = get(&fx, "config");
    ns_config c = fixture_config(cfr->data, cfr->n);
    model m;
    CHECK(model_create(&m, &c) == 0);
    const record *params = get(&fx, "params");
    CHECK(put_layout(&m, &c, m.params, params->data, params->n) == 0);
    int BT = c.batch * c.context, L = c.n_layer;
    uint8_t *tok = malloc((size_t)BT), *tgt = malloc((size_t)BT);
    for (int i = 0; i < BT; i++) {
        tok[i] = (uint8_t)get(&fx, "tokens")->data[i];
        tgt[i] = (uint8_t)get(&fx, "targets")->data[i];
    }
    model_forward(&m, tok, tgt, c.batch);
    static const char *const cols[] = {"attn_logit_max", "attn_entropy", "branch_ratio",
                                       "norm_in_rms"};
    for (int k = 0; k < 4; k++) {
        const record *r = get(&fx, cols[k]);
        float got[64];
        int nan_ok = 1;
        for (int l = 0; l < L && l < 64; l++) {
            const model_layer_stats *st = &m.stats[l];
            got[l] = k == 0 ? st->attn_logit_max : k == 1 ? st->attn_entropy
                   : k == 2 ? st->branch_ratio : st->norm_in_rms;
            nan_ok &= isnan(got[l]) == isnan(r->data[l]);
            if (isnan(got[l]) && isnan(r->data[l]))
                got[l] = r->data[l] = 0.0f; /* both unknown: equal */
        }
        snprintf(what, sizeof what, "mech %s %s", name, cols[k]);
        CHECK(r->n == (uint64_t)L && nan_ok && all_close(what, got, r->data, (size_t)L, 1e-4, 1e-5));
    }
    snprintf(what, sizeof what, "mech %s logz_mean", name);
    CHECK(all_close(what, &m.logz_mean, get(&fx, "logz_mean")->data, 1, 1e-4, 1e-6));
    snprintf(what, sizeof what, "mech %s logit_max", name);
    CHECK(all_close(what, &m.logit_max, get(&fx, "logit_max")->data, 1, 1e-4, 1e-6));
    snprintf(what, sizeof what, "mech %s out_change", name);
    float oc = mech_out_change(&m, cfr->data, tok, tgt, c.batch);
    CHECK(all_close(what, &oc, get(&fx, "out_change")->data, 1, 1e-4, 1e-7));
    free(tok);
    free(tgt);
    model_free(&m);
    free_fixture(&fx);
}

int main(void)
{
    const char *dir = getenv("NS_FIXTURES");
    if (!dir)
        dir = "tests/fixtures";
    /* every placement x kind meant to train; rezero and none use no norm
     * in their blocks, so one kind covers them */
    const char *names[] = {
        "post_layernorm",     "post_rmsnorm",     "post_dyt",     "pre_layernorm",
        "pre_rmsnorm",        "pre_dyt",          "sandwich_layernorm", "sandwich_rmsnorm",
        "sandwich_dyt",       "deepnorm_layernorm", "deepnorm_rmsnorm", "deepnorm_dyt",
        "rezero_layernorm",   "none_layernorm",   "mix_layernorm", "mix_rmsnorm",
        "mix_dyt",
        /* in the layout with QK-norm: QK-norm with each kind (and under
         * Post-LN), res-post with each kind, z-loss 1e-4 */
        "qk_pre_layernorm",   "qk_pre_rmsnorm",   "qk_pre_dyt",   "qk_post_layernorm",
        "respost_layernorm",  "respost_rmsnorm",  "respost_dyt",  "zloss_pre_layernorm",
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        check_fixture(dir, names[i]);
    check_fp16(dir);
    static const char *const mech[] = {"pre_qk", "post",     "respost", "rezero",
                                       "sandwich_qk", "pre", "deepnorm"};
    for (size_t i = 0; i < sizeof mech / sizeof mech[0]; i++)
        check_mech(dir, mech[i]);
    return test_summary();
}
