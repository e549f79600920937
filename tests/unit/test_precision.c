/* test_precision.c - the precision lab and divergence debugging: the
 * LayerNorm variance overflow in fp16 for real, the loss scaler's state
 * machine, the first-non-finite report, rewinding bit for bit, and low
 * precision runs that still learn. */
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "model.h"
#include "numfmt.h"
#include "testutil.h"

static dataset D;

static ns_config tiny(void)
{
    ns_config c;
    settings_defaults(&c);
    c.n_layer = 2;
    c.dim = 16;
    c.n_head = 2;
    c.context = 8;
    c.batch = 2;
    c.val_every = 0;
    return c;
}

static void make_batch(uint8_t *x, uint8_t *y, int n)
{
    for (int i = 0; i < n; i++) {
        x[i] = (uint8_t)(i * 31 + 3);
        y[i] = (uint8_t)(i * 17 + 1);
    }
}

/* A deviation past 256 squares past 65504: with the norm computed in fp16
 * (--fp32-norms off) the variance is inf and the report names that norm;
 * with fp32 norms the statistics are finite and the output normalized. */
static void test_layernorm_overflow(void)
{
    ns_config c = tiny();
    model m;
    ns_rng r;
    rng_seed(&r, 1);
    CHECK(model_create(&m, &c) == 0);
    model_init(&m, &c, &r);
    /* embeddings of +-300 around 0: |x - mean| about 300 everywhere */
    for (int t = 0; t < 256; t++)
        for (int i = 0; i < c.dim; i++)
            m.params[m.wte + (size_t)t * c.dim + i] = (i & 1) ? 300.0f : -300.0f;
    memset(m.params + m.wpe, 0, sizeof(float) * (size_t)c.context * c.dim);
    uint8_t x[16], y[16];
    make_batch(x, y, 16);

    model_set_precision(&m, FMT_FP16, 0);
    model_forward(&m, x, y, 2);
    CHECK(m.fault.set && !m.fault.backward && m.fault.layer == 0);
    CHECK(m.fault.op && !strcmp(m.fault.op, "attn norm variance"));
    CHECK(m.nin_rstd[0][0] == 0.0f); /* rsqrt(inf) */

    model_set_precision(&m, FMT_FP16, 1);
    model_forward(&m, x, y, 2);
    CHECK(!m.fault.set);
    CHECK(t_close(m.nin_rstd[0][0], 1.0 / 300.0, 1e-5, 0));
    /* normalized: +-1 times the gain (1), rounded to fp16 */
    CHECK(t_close(fabsf(m.nin[0][0]), 1.0, 1e-3, 0));

    /* a deviation of 200 is fine even in fp16 (200^2 = 40000 < 65504) */
    for (int t = 0; t < 256; t++)
        for (int i = 0; i < c.dim; i++)
            m.params[m.wte + (size_t)t * c.dim + i] = (i & 1) ? 200.0f : -200.0f;
    model_set_precision(&m, FMT_FP16, 0);
    model_forward(&m, x, y, 2);
    CHECK(!m.fault.set);
    /* bf16 has fp32's range: no overflow at 300 either */
    for (int t = 0; t < 256; t++)
        for (int i = 0; i < c.dim; i++)
            m.params[m.wte + (size_t)t * c.dim + i] = (i & 1) ? 300.0f : -300.0f;
    model_set_precision(&m, FMT_BF16, 0);
    model_forward(&m, x, y, 2);
    CHECK(!m.fault.set);
    model_free(&m);
}

/* GradScaler's rule: halve and skip on inf/NaN gradients, double after
 * 2000 clean steps. */
static void test_loss_scaler(void)
{
    ns_config c = tiny();
    c.n_layer = 1;
    c.batch = 1;
    c.precision = FMT_FP16;
    c.snapshot_every = 0;
    c.warmup = 0;
    c.lr = 1e-4f;
    char err[256];
    engine *e = engine_create(&c, &D, err, sizeof err);
    /* a constant scale this large overflows the loss gradient itself in
     * fp16 (2^30 / 8 positions > 65504) */
    engine_set_loss_scale(e, 1073741824.0f);
    step_metrics m;
    int r = engine_step(e, &m);
    CHECK(r == 1 && m.nonfinite && !m.skipped); /* constant scale: a divergence */
    CHECK(strstr(m.fault, "backward") != NULL);

    /* dynamic: overflow skips the step and halves the scale (no
     * divergence); 2000 clean steps in a row double it. Replay the rule
     * alongside the engine and require both kinds of event to happen. */
    engine_set_loss_scale(e, 0.0f);
    size_t n;
    float *p = engine_params(e, &n);
    float *before = malloc(n * sizeof(float));
    float expect = 65536.0f;
    long clean = 0, skips = 0, doublings = 0, agree = 1, frozen = 1;
    for (int i = 0; i < 2600; i++) {
        memcpy(before, p, n * sizeof(float));
        r = engine_step(e, &m);
        agree &= r == 0 && m.loss_scale == expect;
        if (m.skipped) {
            frozen &= memcmp(before, p, n * sizeof(float)) == 0;
            expect *= 0.5f;
            clean = 0;
            skips++;
        } else if (++clean == 2000) {
            expect *= 2.0f;
            clean = 0;
            doublings++;
        }
    }
    CHECK(agree);
    CHECK(frozen);
    /* the rule alone: halving down to 1, then a divergence, never a
     * skip for ever; growth after exactly 2000 clean steps */
    float sc = 65536.0f;
    long good = 0;
    int halvings = 0, r2;
    while ((r2 = engine_scaler_update(&sc, &good, 1)) == SCALER_SKIPPED)
        halvings++;
    CHECK(r2 == SCALER_GAVE_UP && halvings == 16 && sc < 1.0f);
    sc = 8.0f;
    good = 0;
    int grew_at = 0;
    for (int i = 1; i <= 4001 && !grew_at; i++)
        if (engine_scaler_update(&sc, &good, 0) == SCALER_GREW)
            grew_at = i;
    CHECK(grew_at == 2000 && sc == 16.0f && good == 0);
    CHECK(skips >= 1);
    CHECK(doublings >= 1);
    free(before);
    engine_free(e);
}

/* A huge weight in layer k's MLP: the report names layer k, the forward
 * pass, and the op that first made inf. */
static void test_provenance(void)
{
    ns_config c = tiny();
    c.n_layer = 3;
    for (int fmt = FMT_FP32; fmt <= FMT_FP16; fmt += FMT_FP16 - FMT_FP32) {
        model m;
        ns_rng r;
        rng_seed(&r, 3);
        c.precision = (numfmt)fmt;
        CHECK(model_create(&m, &c) == 0);
        model_init(&m, &c, &r);
        int k = 1;
        float *fcw = m.params + m.layer0 + (size_t)k * m.layer_stride + m.layer_off[PT_FCW];
        for (int i = 0; i < 4 * c.dim * c.dim; i++)
            fcw[i] = fmt == FMT_FP16 ? 1e5f : 3e38f; /* inf in fp16; overflows a sum in fp32 */
        uint8_t x[16], y[16];
        make_batch(x, y, 16);
        model_set_precision(&m, (numfmt)fmt, 1);
        model_forward(&m, x, y, 2);
        CHECK(m.fault.set && !m.fault.backward && m.fault.layer == k);
        CHECK(m.fault.op && !strcmp(m.fault.op, "MLP fc1"));
        model_free(&m);
    }
    /* through the engine: the run diverges and the metrics carry the text */
    ns_config ce = tiny();
    ce.n_layer = 3;
    char err[256];
    engine *e = engine_create(&ce, &D, err, sizeof err);
    size_t n;
    float *p = engine_params(e, &n);
    step_metrics m;
    engine_step(e, &m);
    /* layer 2's MLP output projection */
    model tmp;
    model_create(&tmp, &ce);
    size_t off = tmp.layer0 + 2 * tmp.layer_stride + tmp.layer_off[PT_FCPROJW];
    model_free(&tmp);
    for (int i = 0; i < 4 * ce.dim * ce.dim; i++)
        p[off + i] = 3e38f;
    CHECK(engine_step(e, &m) == 1);
    CHECK(!strcmp(m.fault, "forward, layer 2, MLP fc2"));
    engine_free(e);
}

/* Rewind after a forced divergence: the snapshot's weights come back bit
 * for bit, and training from there repeats the original run's losses. */
static void test_rewind(void)
{
    ns_config c = tiny();
    c.context = 16;
    c.snapshot_every = 10;
    char err[256];
    engine *a = engine_create(&c, &D, err, sizeof err);
    step_metrics m;
    float loss_a[31];
    size_t n;
    float *pa = engine_params(a, &n);
    float *at20 = malloc(n * sizeof(float));
    for (int s = 1; s <= 30; s++) {
        engine_step(a, &m);
        loss_a[s] = m.loss;
        if (s == 20)
            memcpy(at20, pa, n * sizeof(float));
    }
    engine *b = engine_create(&c, &D, err, sizeof err);
    for (int s = 1; s <= 25; s++)
        engine_step(b, &m);
    float *pb = engine_params(b, &n);
    pb[n / 3] = NAN; /* the divergence */
    CHECK(engine_step(b, &m) == 1 && engine_steps_done(b) == 26);
    CHECK(engine_rewind(b) == 20);
    CHECK(memcmp(pb, at20, n * sizeof(float)) == 0);
    int same = 1;
    for (int s = 21; s <= 30; s++) {
        engine_step(b, &m);
        same &= m.loss == loss_a[s] && m.step == s;
    }
    CHECK(same);
    /* pressing again goes further back: 30 -> 20 -> 10 -> 0 -> none */
    CHECK(engine_rewind(b) == 20);
    CHECK(engine_rewind(b) == 10);
    CHECK(engine_rewind(b) == 0);
    CHECK(engine_rewind(b) == -1);
    free(at20);
    engine_free(a);
    engine_free(b);
}

/* bf16 and fp16 with dynamic scaling still learn. */
static void test_low_precision_learns(void)
{
    for (int f = FMT_BF16; f <= FMT_FP16; f++) {
        ns_config c;
        settings_defaults(&c);
        c.n_layer = 2;
        c.dim = 32;
        c.context = 32;
        c.batch = 8;
        c.val_every = 0;
        c.warmup = 10;
        c.lr = 3e-3f;
        c.precision = (numfmt)f;
        char err[256];
        engine *e = engine_create(&c, &D, err, sizeof err);
        step_metrics m;
        float first = 0, last = 0;
        int bad = 0;
        for (int s = 0; s < 120; s++) {
            bad |= engine_step(e, &m);
            if (s < 5)
                first += m.loss / 5;
            if (s >= 115)
                last += m.loss / 5;
        }
        CHECK(!bad);
        if (!t_check(last < first - 1.0f, __FILE__, __LINE__, "loss falls in low precision"))
            fprintf(stderr, "  %s: %.3f -> %.3f\n", numfmt_name((numfmt)f), first, last);
        engine_free(e);
    }
}

int main(void)
{
    data_builtin(&D);
    test_layernorm_overflow();
    test_loss_scaler();
    test_provenance();
    test_rewind();
    test_low_precision_learns();
    return test_summary();
}
