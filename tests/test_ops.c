/* test_ops.c - each op's backward against central finite differences of
 * its forward. The scalar probed is sum(out * R) for a fixed random R, so
 * every output element and every gradient term takes part; a missing or
 * wrong term moves the analytic gradient by O(1), far past the tolerance
 * that float rounding needs (about 1e-3 relative here). */
#include <stdlib.h>
#include <string.h>

#include "ops.h"
#include "rng.h"
#include "testutil.h"

static ns_rng R;

static float *rnd(int n, float scale)
{
    float *x = malloc(sizeof(float) * (size_t)n);
    for (int i = 0; i < n; i++)
        x[i] = scale * rng_normal(&R);
    return x;
}

static float *zeros(int n) { return calloc((size_t)n, sizeof(float)); }

static double dotd(const float *a, const float *b, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += (double)a[i] * b[i];
    return s;
}

/* Compare analytic grads g (n) with finite differences of f over x (n).
 * Returns the number of mismatches (reported with the op's name). */
typedef double (*probe_fn)(void *ctx);
static int fd_check(const char *name, float *x, const float *g, int n, probe_fn f, void *ctx,
                    float h, double rtol)
{
    int bad = 0;
    double worst = 0;
    for (int i = 0; i < n; i++) {
        float keep = x[i];
        x[i] = keep + h;
        double up = f(ctx);
        x[i] = keep - h;
        double dn = f(ctx);
        x[i] = keep;
        double num = (up - dn) / (2.0 * h);
        double err = fabs(num - g[i]) / (fabs(num) + fabs(g[i]) + 1e-2);
        if (err > worst)
            worst = err;
        if (err > rtol) {
            if (bad < 3)
                fprintf(stderr, "  %s[%d]: analytic %.6g numeric %.6g\n", name, i, g[i], num);
            bad++;
        }
    }
    if (bad)
        fprintf(stderr, "  %s: %d of %d mismatched (worst rel %.3g)\n", name, bad, n, worst);
    return bad;
}

/* ---- layernorm / rmsnorm ---- */
enum { LN_N = 5, LN_C = 12 };
typedef struct {
    float *x, *w, *b, *out, *mean, *rstd, *r;
    int rms;
} ln_ctx;

static double ln_probe(void *p)
{
    ln_ctx *c = p;
    if (c->rms)
        rmsnorm_forward(c->out, c->mean, c->rstd, c->x, c->w, LN_N, LN_C, 1e-5f);
    else
        layernorm_forward(c->out, c->mean, c->rstd, c->x, c->w, c->b, LN_N, LN_C, 1e-5f);
    return dotd(c->out, c->r, LN_N * LN_C);
}

static void test_norm(int rms)
{
    ln_ctx c = {rnd(LN_N * LN_C, 1.5f), rnd(LN_C, 1.0f), rnd(LN_C, 1.0f), zeros(LN_N * LN_C),
                zeros(LN_N), zeros(LN_N), rnd(LN_N * LN_C, 1.0f), rms};
    for (int i = 0; i < LN_N * LN_C; i++)
        c.x[i] += 0.7f; /* a nonzero mean, so centering matters */
    float *dx = zeros(LN_N * LN_C), *dw = zeros(LN_C), *db = zeros(LN_C);
    ln_probe(&c);
    if (rms)
        rmsnorm_backward(dx, dw, c.r, c.x, c.w, c.rstd, LN_N, LN_C);
    else
        layernorm_backward(dx, dw, db, c.r, c.x, c.w, c.mean, c.rstd, LN_N, LN_C);
    const char *nm = rms ? "rmsnorm" : "layernorm";
    CHECK(fd_check(nm, c.x, dx, LN_N * LN_C, ln_probe, &c, 1e-2f, 2e-3) == 0);
    CHECK(fd_check(nm, c.w, dw, LN_C, ln_probe, &c, 1e-2f, 2e-3) == 0);
    if (!rms)
        CHECK(fd_check(nm, c.b, db, LN_C, ln_probe, &c, 1e-2f, 2e-3) == 0);

    /* the backward accumulates: a second call doubles the gradient */
    float *dx2 = zeros(LN_N * LN_C), *dw2 = zeros(LN_C), *db2 = zeros(LN_C);
    for (int k = 0; k < 2; k++) {
        if (rms)
            rmsnorm_backward(dx2, dw2, c.r, c.x, c.w, c.rstd, LN_N, LN_C);
        else
            layernorm_backward(dx2, dw2, db2, c.r, c.x, c.w, c.mean, c.rstd, LN_N, LN_C);
    }
    CHECK(t_close(dx2[3], 2 * dx[3], 1e-6, 1e-7) && t_close(dw2[1], 2 * dw[1], 1e-6, 1e-7));
    free(dx2), free(dw2), free(db2);
    free(c.x), free(c.w), free(c.b), free(c.out), free(c.mean), free(c.rstd), free(c.r);
    free(dx), free(dw), free(db);
}

/* RMSNorm and LayerNorm agree on zero-mean rows (with b = 0) and differ
 * by exactly the mean term otherwise. */
static void test_norm_relation(void)
{
    enum { C = 8 };
    float x[C], w[C], b[C] = {0}, o1[C], o2[C], m1, r1, m2, r2;
    for (int i = 0; i < C; i++) {
        x[i] = rng_normal(&R);
        w[i] = 1.0f + 0.1f * rng_normal(&R);
    }
    float mean = 0;
    for (int i = 0; i < C; i++)
        mean += x[i];
    mean /= C;
    for (int i = 0; i < C; i++)
        x[i] -= mean;
    layernorm_forward(o1, &m1, &r1, x, w, b, 1, C, 1e-5f);
    rmsnorm_forward(o2, &m2, &r2, x, w, 1, C, 1e-5f);
    int same = 1;
    for (int i = 0; i < C; i++)
        same &= t_close(o1[i], o2[i], 1e-5, 1e-6);
    CHECK(same);
    for (int i = 0; i < C; i++)
        x[i] += 3.0f;
    layernorm_forward(o1, &m1, &r1, x, w, b, 1, C, 1e-5f);
    rmsnorm_forward(o2, &m2, &r2, x, w, 1, C, 1e-5f);
    CHECK(t_close(m1, 3.0f, 1e-5, 1e-5));
    CHECK(!t_close(o1[0], o2[0], 1e-2, 1e-3));
}

/* ---- DyT ---- */
typedef struct {
    float *x, *w, *b, *out, *r;
    float a;
} dyt_ctx;

static double dyt_probe(void *p)
{
    dyt_ctx *c = p;
    dyt_forward(c->out, c->x, c->w, c->b, c->a, LN_N, LN_C);
    return dotd(c->out, c->r, LN_N * LN_C);
}

static void test_dyt(void)
{
    dyt_ctx c = {rnd(LN_N * LN_C, 1.5f), rnd(LN_C, 1), rnd(LN_C, 1), zeros(LN_N * LN_C),
                 rnd(LN_N * LN_C, 1), 0.7f};
    float *dx = zeros(LN_N * LN_C), *dw = zeros(LN_C), *db = zeros(LN_C), da = 0;
    dyt_probe(&c);
    dyt_backward(dx, dw, db, &da, c.r, c.x, c.w, c.a, LN_N, LN_C);
    CHECK(fd_check("dyt dx", c.x, dx, LN_N * LN_C, dyt_probe, &c, 1e-2f, 2e-3) == 0);
    CHECK(fd_check("dyt dw", c.w, dw, LN_C, dyt_probe, &c, 1e-2f, 2e-3) == 0);
    CHECK(fd_check("dyt db", c.b, db, LN_C, dyt_probe, &c, 1e-2f, 2e-3) == 0);
    CHECK(fd_check("dyt da", &c.a, &da, 1, dyt_probe, &c, 1e-3f, 2e-3) == 0);
    free(c.x), free(c.w), free(c.b), free(c.out), free(c.r), free(dx), free(dw), free(db);
}

/* ---- matmul ---- */
enum { MM_N = 7, MM_C = 13, MM_OC = 9 };
typedef struct {
    float *x, *w, *b, *out, *r;
} mm_ctx;

static double mm_probe(void *p)
{
    mm_ctx *c = p;
    matmul_forward(c->out, c->x, c->w, c->b, MM_N, MM_C, MM_OC);
    return dotd(c->out, c->r, MM_N * MM_OC);
}

static void test_matmul(void)
{
    mm_ctx c = {rnd(MM_N * MM_C, 1), rnd(MM_OC * MM_C, 1), rnd(MM_OC, 1), zeros(MM_N * MM_OC),
                rnd(MM_N * MM_OC, 1)};
    float *dx = zeros(MM_N * MM_C), *dw = zeros(MM_OC * MM_C), *db = zeros(MM_OC);
    mm_probe(&c);
    matmul_backward(dx, dw, db, c.r, c.x, c.w, MM_N, MM_C, MM_OC);
    /* linear in each input, so a large step has no truncation error and
     * keeps float rounding small next to it */
    CHECK(fd_check("matmul dinp", c.x, dx, MM_N * MM_C, mm_probe, &c, 0.25f, 1e-3) == 0);
    CHECK(fd_check("matmul dw", c.w, dw, MM_OC * MM_C, mm_probe, &c, 0.25f, 1e-3) == 0);
    CHECK(fd_check("matmul db", c.b, db, MM_OC, mm_probe, &c, 0.25f, 1e-3) == 0);
    /* the forward against a plain triple loop in double */
    mm_probe(&c);
    int same = 1;
    for (int n = 0; n < MM_N; n++)
        for (int j = 0; j < MM_OC; j++) {
            double s = c.b[j];
            for (int i = 0; i < MM_C; i++)
                s += (double)c.x[n * MM_C + i] * c.w[j * MM_C + i];
            same &= t_close(c.out[n * MM_OC + j], s, 1e-5, 1e-5);
        }
    CHECK(same);
    free(c.x), free(c.w), free(c.b), free(c.out), free(c.r), free(dx), free(dw), free(db);
}

/* ---- attention ---- */
enum { AT_B = 2, AT_T = 5, AT_C = 8, AT_NH = 2 };
typedef struct {
    float *qkv, *out, *att, *r;
} at_ctx;

static double at_probe(void *p)
{
    at_ctx *c = p;
    attention_forward(c->out, c->att, c->qkv, AT_B, AT_T, AT_C, AT_NH);
    return dotd(c->out, c->r, AT_B * AT_T * AT_C);
}

static void test_attention(void)
{
    int nq = AT_B * AT_T * 3 * AT_C;
    at_ctx c = {rnd(nq, 1), zeros(AT_B * AT_T * AT_C), zeros(AT_B * AT_NH * AT_T * AT_T),
                rnd(AT_B * AT_T * AT_C, 1)};
    float *dqkv = zeros(nq), *drow = zeros(AT_T);
    at_probe(&c);
    attention_backward(dqkv, drow, c.r, c.qkv, c.att, AT_B, AT_T, AT_C, AT_NH);
    CHECK(fd_check("attention dqkv", c.qkv, dqkv, nq, at_probe, &c, 1e-2f, 2e-3) == 0);
    /* causality: the first position's output depends only on itself */
    float keep = c.qkv[(1 * 3 * AT_C) + 2 * AT_C]; /* v of position 1, batch 0 */
    double before = c.out[0];
    c.qkv[(1 * 3 * AT_C) + 2 * AT_C] = keep + 5.0f;
    at_probe(&c);
    CHECK(c.out[0] == before);
    c.qkv[(1 * 3 * AT_C) + 2 * AT_C] = keep;
    /* probabilities of each row sum to 1 */
    double s = 0;
    for (int t2 = 0; t2 <= 3; t2++)
        s += c.att[3 * AT_T + t2];
    CHECK(t_close(s, 1.0, 1e-6, 1e-6));
    free(c.qkv), free(c.out), free(c.att), free(c.r), free(dqkv), free(drow);
}

/* ---- gelu ---- */
typedef struct {
    float *x, *out, *r;
    int n;
} g_ctx;

static double g_probe(void *p)
{
    g_ctx *c = p;
    gelu_forward(c->out, c->x, c->n);
    return dotd(c->out, c->r, c->n);
}

static void test_gelu(void)
{
    g_ctx c = {rnd(40, 2), zeros(40), rnd(40, 1), 40};
    float *dx = zeros(40);
    g_probe(&c);
    gelu_backward(dx, c.x, c.r, 40);
    CHECK(fd_check("gelu", c.x, dx, 40, g_probe, &c, 1e-2f, 1e-3) == 0);
    /* known values of the tanh form: gelu(0) = 0, gelu(1) = 0.841192 */
    float x[2] = {0.0f, 1.0f}, o[2];
    gelu_forward(o, x, 2);
    CHECK(o[0] == 0.0f && t_close(o[1], 0.8411920, 1e-6, 0));
    free(c.x), free(c.out), free(c.r), free(dx);
}

/* ---- softmax + cross-entropy ---- */
enum { CE_N = 4, CE_V = 11 };
typedef struct {
    float *logits, *losses;
    uint8_t *tg;
} ce_ctx;

static double ce_probe(void *p)
{
    ce_ctx *c = p;
    crossentropy_forward(c->losses, c->logits, c->tg, CE_N, CE_V);
    double s = 0;
    for (int i = 0; i < CE_N; i++)
        s += c->losses[i];
    return s / CE_N;
}

static void test_crossentropy(void)
{
    uint8_t tg[CE_N] = {0, 3, 10, 5};
    ce_ctx c = {rnd(CE_N * CE_V, 2), zeros(CE_N), tg};
    float *probs = zeros(CE_N * CE_V), *dl = zeros(CE_N * CE_V);
    softmax_forward(probs, c.logits, CE_N, CE_V);
    crossentropy_softmax_backward(dl, probs, tg, CE_N, CE_V, 1.0f / CE_N);
    CHECK(fd_check("crossentropy", c.logits, dl, CE_N * CE_V, ce_probe, &c, 1e-2f, 1e-3) == 0);
    /* uniform logits give ln(V) */
    for (int i = 0; i < CE_N * CE_V; i++)
        c.logits[i] = 0.5f;
    CHECK(t_close(ce_probe(&c), log(CE_V), 1e-6, 0));
    /* a very unlikely target still gives a finite loss (computed from logits) */
    for (int i = 0; i < CE_V; i++)
        c.logits[i] = i == 0 ? -200.0f : 200.0f;
    crossentropy_forward(c.losses, c.logits, tg, 1, CE_V);
    CHECK(isfinite(c.losses[0]) && c.losses[0] > 399.0f);
    free(c.logits), free(c.losses), free(probs), free(dl);
}

/* ---- encoder ---- */
static void test_encoder(void)
{
    enum { B = 2, T = 3, C = 4, V = 256 };
    uint8_t tok[B * T] = {7, 7, 200, 1, 7, 0};
    float *wte = rnd(V * C, 1), *wpe = rnd(T * C, 1), out[B * T * C], d[B * T * C];
    encoder_forward(out, tok, wte, wpe, B, T, C);
    CHECK(out[(1 * T + 2) * C + 3] == wte[0 * C + 3] + wpe[2 * C + 3]);
    for (int i = 0; i < B * T * C; i++)
        d[i] = 1.0f;
    float *dwte = zeros(V * C), *dwpe = zeros(T * C);
    encoder_backward(dwte, dwpe, d, tok, B, T, C);
    CHECK(dwte[7 * C] == 3.0f && dwte[200 * C] == 1.0f && dwte[5 * C] == 0.0f);
    CHECK(dwpe[0] == 2.0f && dwpe[2 * C + 1] == 2.0f);
    free(wte), free(wpe), free(dwte), free(dwpe);
}

static void test_absmax(void)
{
    float x[4] = {1.0f, -7.5f, 3.0f, 0.0f};
    CHECK(ops_absmax(x, 4) == 7.5f);
    x[2] = NAN;
    CHECK(isnan(ops_absmax(x, 4)));
    x[2] = -INFINITY;
    CHECK(isinf(ops_absmax(x, 4)));
}

int main(void)
{
    rng_seed(&R, 42);
    test_norm(0);
    test_norm(1);
    test_norm_relation();
    test_dyt();
    test_matmul();
    test_attention();
    test_gelu();
    test_crossentropy();
    test_encoder();
    test_absmax();
    return test_summary();
}
