/* test_ops.c - each op's backward against central finite differences of
 * its forward. The scalar probed is sum(out * R) for a fixed random R, so
 * every output element and every gradient term takes part; a missing or
 * wrong term moves the analytic gradient by O(1), far past the tolerance
 * that float rounding needs (about 1e-3 relative here). */
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "nsmath.h"
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
        ops_rmsnorm_forward(c->out, c->mean, c->rstd, c->x, c->w, LN_N, LN_C, 1e-5f);
    else
        ops_layernorm_forward(c->out, c->mean, c->rstd, c->x, c->w, c->b, LN_N, LN_C, 1e-5f);
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
        ops_rmsnorm_backward(dx, dw, c.r, c.x, c.w, c.rstd, LN_N, LN_C);
    else
        ops_layernorm_backward(dx, dw, db, c.r, c.x, c.w, c.mean, c.rstd, LN_N, LN_C);
    const char *nm = rms ? "rmsnorm" : "layernorm";
    CHECK(fd_check(nm, c.x, dx, LN_N * LN_C, ln_probe, &c, 1e-2f, 2e-3) == 0);
    CHECK(fd_check(nm, c.w, dw, LN_C, ln_probe, &c, 1e-2f, 2e-3) == 0);
    if (!rms)
        CHECK(fd_check(nm, c.b, db, LN_C, ln_probe, &c, 1e-2f, 2e-3) == 0);

    /* the backward accumulates: a second call doubles the gradient */
    float *dx2 = zeros(LN_N * LN_C), *dw2 = zeros(LN_C), *db2 = zeros(LN_C);
    for (int k = 0; k < 2; k++) {
        if (rms)
            ops_rmsnorm_backward(dx2, dw2, c.r, c.x, c.w, c.rstd, LN_N, LN_C);
        else
            ops_layernorm_backward(dx2, dw2, db2, c.r, c.x, c.w, c.mean, c.rstd, LN_N, LN_C);
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
    ops_layernorm_forward(o1, &m1, &r1, x, w, b, 1, C, 1e-5f);
    ops_rmsnorm_forward(o2, &m2, &r2, x, w, 1, C, 1e-5f);
    int same = 1;
    for (int i = 0; i < C; i++)
        same &= t_close(o1[i], o2[i], 1e-5, 1e-6);
    CHECK(same);
    for (int i = 0; i < C; i++)
        x[i] += 3.0f;
    ops_layernorm_forward(o1, &m1, &r1, x, w, b, 1, C, 1e-5f);
    ops_rmsnorm_forward(o2, &m2, &r2, x, w, 1, C, 1e-5f);
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
    ops_dyt_forward(c->out, c->x, c->w, c->b, c->a, LN_N, LN_C);
    return dotd(c->out, c->r, LN_N * LN_C);
}

static void test_dyt(void)
{
    dyt_ctx c = {rnd(LN_N * LN_C, 1.5f), rnd(LN_C, 1), rnd(LN_C, 1), zeros(LN_N * LN_C),
                 rnd(LN_N * LN_C, 1), 0.7f};
    float *dx = zeros(LN_N * LN_C), *dw = zeros(LN_C), *db = zeros(LN_C), da = 0;
    dyt_probe(&c);
    ops_dyt_backward(dx, dw, db, &da, c.r, c.x, c.w, c.a, LN_N, LN_C);
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
    ops_matmul_forward(c->out, c->x, c->w, c->b, MM_N, MM_C, MM_OC);
    return dotd(c->out, c->r, MM_N * MM_OC);
}

static void test_matmul(void)
{
    mm_ctx c = {rnd(MM_N * MM_C, 1), rnd(MM_OC * MM_C, 1), rnd(MM_OC, 1), zeros(MM_N * MM_OC),
                rnd(MM_N * MM_OC, 1)};
    float *dx = zeros(MM_N * MM_C), *dw = zeros(MM_OC * MM_C), *db = zeros(MM_OC);
    mm_probe(&c);
    ops_matmul_backward(dx, dw, db, c.r, c.x, c.w, MM_N, MM_C, MM_OC);
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
    ops_attention_forward(c->out, c->att, c->qkv, AT_B, AT_T, AT_C, AT_NH);
    return dotd(c->out, c->r, AT_B * AT_T * AT_C);
}

static void test_attention(void)
{
    int nq = AT_B * AT_T * 3 * AT_C;
    at_ctx c = {rnd(nq, 1), zeros(AT_B * AT_T * AT_C), zeros(AT_B * AT_NH * AT_T * AT_T),
                rnd(AT_B * AT_T * AT_C, 1)};
    float *dqkv = zeros(nq), *drow = zeros(AT_T);
    at_probe(&c);
    ops_attention_backward(dqkv, drow, c.r, c.qkv, c.att, AT_B, AT_T, AT_C, AT_NH);
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
    ops_gelu_forward(c->out, c->x, c->n);
    return dotd(c->out, c->r, c->n);
}

static void test_gelu(void)
{
    g_ctx c = {rnd(40, 2), zeros(40), rnd(40, 1), 40};
    float *dx = zeros(40);
    g_probe(&c);
    ops_gelu_backward(dx, c.x, c.r, 40);
    CHECK(fd_check("gelu", c.x, dx, 40, g_probe, &c, 1e-2f, 1e-3) == 0);
    /* known values of the tanh form: gelu(0) = 0, gelu(1) = 0.841192 */
    float x[2] = {0.0f, 1.0f}, o[2];
    ops_gelu_forward(o, x, 2);
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
    ops_crossentropy_forward(c->losses, c->logits, c->tg, CE_N, CE_V);
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
    ops_softmax_forward(probs, c.logits, CE_N, CE_V);
    ops_crossentropy_softmax_backward(dl, probs, tg, CE_N, CE_V, 1.0f / CE_N);
    CHECK(fd_check("crossentropy", c.logits, dl, CE_N * CE_V, ce_probe, &c, 1e-2f, 1e-3) == 0);
    /* uniform logits give ln(V) */
    for (int i = 0; i < CE_N * CE_V; i++)
        c.logits[i] = 0.5f;
    CHECK(t_close(ce_probe(&c), log(CE_V), 1e-6, 0));
    /* a very unlikely target still gives a finite loss (computed from logits) */
    for (int i = 0; i < CE_V; i++)
        c.logits[i] = i == 0 ? -200.0f : 200.0f;
    ops_crossentropy_forward(c.losses, c.logits, tg, 1, CE_V);
    CHECK(isfinite(c.losses[0]) && c.losses[0] > 399.0f);
    free(c.logits), free(c.losses), free(probs), free(dl);
}

/* ---- encoder ---- */
static void test_encoder(void)
{
    enum { B = 2, T = 3, C = 4, V = 256 };
    uint8_t tok[B * T] = {7, 7, 200, 1, 7, 0};
    float *wte = rnd(V * C, 1), *wpe = rnd(T * C, 1), out[B * T * C], d[B * T * C];
    ops_encoder_forward(out, tok, wte, wpe, B, T, C);
    CHECK(out[(1 * T + 2) * C + 3] == wte[0 * C + 3] + wpe[2 * C + 3]);
    for (int i = 0; i < B * T * C; i++)
        d[i] = 1.0f;
    float *dwte = zeros(V * C), *dwpe = zeros(T * C);
    ops_encoder_backward(dwte, dwpe, d, tok, B, T, C);
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

/* ==== the fast kernels against double-precision references ==============
 *
 * Sizes are odd on purpose (not multiples of the 6 x 16 register tile,
 * the 8-lane vectors or the cache blocks) and some are large enough to
 * cross every block boundary of src/ops.c's gemm (depth > 256, rows >
 * 144, more columns than one packed panel, and for dw rows > 96 and
 * depth > 128) and the tiled attention's (T > 128 and hs * T past its
 * panels take the row-at-a-time kernel).
 * Every check runs on the path the CPU selects and again with
 * ops_force_generic(1), so an AVX2 machine tests both.
 *
 * Tolerance for a sum of K products (any order, fp32 with or without
 * FMA): |got - exact| <= (K + 2) * 2^-24 * sum |terms| -- the standard
 * worst-case bound, so a failure is a real bug, never bad luck. */
static const char *path_name(void) { return ops_isa(); }

static float *rndf(long n, float scale)
{
    float *x = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    for (long i = 0; i < n; i++)
        x[i] = scale * rng_normal(&R);
    return x;
}

static float *dupf(const float *x, long n)
{
    float *y = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    memcpy(y, x, sizeof(float) * (size_t)n);
    return y;
}

static int sum_close(double got, double exact, double abssum, int K)
{
    return fabs(got - exact) <= (K + 2) * 0x1p-24 * abssum + 1e-30;
}

/* out = inp w^T + b; dinp += dout w; dw += dout^T inp; db += sum dout,
 * each against a double loop, for one shape */
static int check_matmul_shape(int N, int C, int OC, int with_bias)
{
    float *x = rndf((long)N * C, 1), *w = rndf((long)OC * C, 1), *b = rndf(OC, 1);
    float *out = rndf((long)N * OC, 1), *dout = rndf((long)N * OC, 1);
    float *dx0 = rndf((long)N * C, 1), *dw0 = rndf((long)OC * C, 1), *db0 = rndf(OC, 1);
    float *dx = dupf(dx0, (long)N * C), *dw = dupf(dw0, (long)OC * C), *db = dupf(db0, OC);
    const float *bias = with_bias ? b : NULL;
    ops_matmul_forward(out, x, w, bias, N, C, OC);
    ops_matmul_backward(dx, dw, with_bias ? db : NULL, dout, x, w, N, C, OC);
    int bad = 0;
    for (int n = 0; n < N && bad < 3; n++)
        for (int j = 0; j < OC; j++) {
            double e = bias ? b[j] : 0, a = fabs(e);
            for (int i = 0; i < C; i++) {
                double t = (double)x[(long)n * C + i] * w[(long)j * C + i];
                e += t, a += fabs(t);
            }
            if (!sum_close(out[(long)n * OC + j], e, a, C) && bad++ < 3)
                fprintf(stderr, "  matmul_forward %s N=%d C=%d OC=%d [%d][%d]: %.9g vs %.9g\n",
                        path_name(), N, C, OC, n, j, out[(long)n * OC + j], e);
        }
    for (int n = 0; n < N && bad < 3; n++)
        for (int i = 0; i < C; i++) {
            double e = dx0[(long)n * C + i], a = fabs(e);
            for (int j = 0; j < OC; j++) {
                double t = (double)dout[(long)n * OC + j] * w[(long)j * C + i];
                e += t, a += fabs(t);
            }
            if (!sum_close(dx[(long)n * C + i], e, a, OC) && bad++ < 3)
                fprintf(stderr, "  matmul dinp %s N=%d C=%d OC=%d [%d][%d]: %.9g vs %.9g\n",
                        path_name(), N, C, OC, n, i, dx[(long)n * C + i], e);
        }
    for (int j = 0; j < OC && bad < 3; j++) {
        for (int i = 0; i < C; i++) {
            double e = dw0[(long)j * C + i], a = fabs(e);
            for (int n = 0; n < N; n++) {
                double t = (double)dout[(long)n * OC + j] * x[(long)n * C + i];
                e += t, a += fabs(t);
            }
            if (!sum_close(dw[(long)j * C + i], e, a, N) && bad++ < 3)
                fprintf(stderr, "  matmul dw %s N=%d C=%d OC=%d [%d][%d]: %.9g vs %.9g\n",
                        path_name(), N, C, OC, j, i, dw[(long)j * C + i], e);
        }
        double e = db0[j], a = fabs(e);
        for (int n = 0; n < N; n++)
            e += dout[(long)n * OC + j], a += fabs(dout[(long)n * OC + j]);
        if (with_bias && !sum_close(db[j], e, a, N) && bad++ < 3)
            fprintf(stderr, "  matmul db %s N=%d OC=%d [%d]: %.9g vs %.9g\n", path_name(), N, OC, j,
                    db[j], e);
        if (!with_bias && db[j] != db0[j])
            bad++;
    }
    free(x), free(w), free(b), free(out), free(dout), free(dx0), free(dw0), free(db0);
    free(dx), free(dw), free(db);
    return bad;
}

static void test_matmul_reference(void)
{
    static const int odd[] = {1, 3, 7, 13, 17, 33, 65};
    int bad = 0, shapes = 0;
    for (int a = 0; a < 7; a++)
        for (int c = 0; c < 7; c++)
            for (int o = 0; o < 7; o += 2) {
                bad += check_matmul_shape(odd[a], odd[c], odd[o], (a + c + o) & 1) != 0;
                shapes++;
            }
    /* across the cache blocks (see above): forward depth 300 > 256 and
     * 70 columns > one panel of 64; dinp 513 columns > a panel; dw with
     * 200 and 257 rows > 96, depth 150, 301, 400 > 128, 300 and 513
     * columns > a panel of 128 */
    static const int big[][3] = {{150, 300, 70}, {7, 513, 200}, {301, 64, 257},
                                 {97, 260, 49},  {1, 1000, 3},  {400, 5, 1}};
    for (int i = 0; i < 6; i++, shapes++)
        bad += check_matmul_shape(big[i][0], big[i][1], big[i][2], i & 1) != 0;
    if (bad)
        fprintf(stderr, "  matmul (%s): %d of %d shapes off\n", path_name(), bad, shapes);
    CHECK(bad == 0);
}

/* Same inputs, same bits: twice in a row, and with the rows split into
 * two calls (how a later thread pool will cut the work). */
static void test_matmul_deterministic(void)
{
    enum { N = 157, C = 300, OC = 77 };
    float *x = rndf((long)N * C, 1), *w = rndf((long)OC * C, 1), *b = rndf(OC, 1);
    float *dout = rndf((long)N * OC, 1);
    float *o1 = rndf((long)N * OC, 1), *o2 = rndf((long)N * OC, 1), *o3 = rndf((long)N * OC, 1);
    ops_matmul_forward(o1, x, w, b, N, C, OC);
    ops_matmul_forward(o2, x, w, b, N, C, OC);
    int split = 61; /* not a multiple of any tile */
    ops_matmul_forward(o3, x, w, b, split, C, OC);
    ops_matmul_forward(o3 + (long)split * OC, x + (long)split * C, w, b, N - split, C, OC);
    CHECK(!memcmp(o1, o2, sizeof(float) * N * OC));
    CHECK(!memcmp(o1, o3, sizeof(float) * N * OC));
    float *dx1 = calloc((size_t)N * C, 4), *dx2 = calloc((size_t)N * C, 4),
          *dx3 = calloc((size_t)N * C, 4);
    float *dw1 = calloc((size_t)OC * C, 4), *dw2 = calloc((size_t)OC * C, 4),
          *dw3 = calloc((size_t)OC * C, 4);
    float *db1 = calloc(OC, 4), *db2 = calloc(OC, 4), *db3 = calloc(OC, 4);
    ops_matmul_backward(dx1, dw1, db1, dout, x, w, N, C, OC);
    ops_matmul_backward(dx2, dw2, db2, dout, x, w, N, C, OC);
    ops_matmul_backward(dx3, dw3, db3, dout, x, w, split, C, OC); /* dinp rows split */
    ops_matmul_backward(dx3 + (long)split * C, dw3, db3, dout + (long)split * OC, x + (long)split * C,
                    w, N - split, C, OC);
    CHECK(!memcmp(dx1, dx2, sizeof(float) * N * C) && !memcmp(dw1, dw2, sizeof(float) * OC * C) &&
          !memcmp(db1, db2, sizeof(float) * OC));
    CHECK(!memcmp(dx1, dx3, sizeof(float) * N * C));
    free(x), free(w), free(b), free(dout), free(o1), free(o2), free(o3);
    free(dx1), free(dx2), free(dx3), free(dw1), free(dw2), free(dw3), free(db1), free(db2),
        free(db3);
}

/* ---- attention against a double reference ---- */
static void attention_ref(double *out, double *att, double *dqkv, const float *qkv,
                          const float *dout, int B, int T, int C, int NH)
{
    int hs = C / NH;
    double scale = 1.0 / sqrt((double)hs);
    memset(dqkv, 0, sizeof(double) * B * T * 3 * C);
    double *dp = malloc(sizeof(double) * T);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int t = 0; t < T; t++) {
                const float *q = qkv + ((long)b * T + t) * 3 * C + h * hs;
                double *a = att + (((long)b * NH + h) * T + t) * T, mx = -INFINITY, sum = 0;
                for (int k = 0; k <= t; k++) {
                    const float *kk = qkv + ((long)b * T + k) * 3 * C + C + h * hs;
                    double s = 0;
                    for (int d = 0; d < hs; d++)
                        s += (double)q[d] * kk[d];
                    a[k] = s * scale;
                    mx = a[k] > mx ? a[k] : mx;
                }
                for (int k = 0; k <= t; k++)
                    sum += (a[k] = exp(a[k] - mx));
                double *o = out + ((long)b * T + t) * C + h * hs;
                for (int d = 0; d < hs; d++)
                    o[d] = 0;
                for (int k = 0; k <= t; k++) {
                    a[k] /= sum;
                    const float *v = qkv + ((long)b * T + k) * 3 * C + 2 * C + h * hs;
                    for (int d = 0; d < hs; d++)
                        o[d] += a[k] * v[d];
                }
                /* backward of this row */
                const float *dy = dout + ((long)b * T + t) * C + h * hs;
                double dsum = 0;
                for (int k = 0; k <= t; k++) {
                    const float *v = qkv + ((long)b * T + k) * 3 * C + 2 * C + h * hs;
                    double *dv = dqkv + ((long)b * T + k) * 3 * C + 2 * C + h * hs;
                    dp[k] = 0;
                    for (int d = 0; d < hs; d++) {
                        dp[k] += (double)dy[d] * v[d];
                        dv[d] += a[k] * dy[d];
                    }
                    dsum += a[k] * dp[k];
                }
                double *dq = dqkv + ((long)b * T + t) * 3 * C + h * hs;
                for (int k = 0; k <= t; k++) {
                    double ds = a[k] * (dp[k] - dsum) * scale;
                    const float *kk = qkv + ((long)b * T + k) * 3 * C + C + h * hs;
                    double *dk = dqkv + ((long)b * T + k) * 3 * C + C + h * hs;
                    for (int d = 0; d < hs; d++) {
                        dq[d] += ds * kk[d];
                        dk[d] += ds * q[d];
                    }
                }
            }
    free(dp);
}

/* relative to the size of the values: attention mixes sums of hs and T
 * terms through a softmax, so an absolute floor scaled by the data */
static int att_close(double got, double ref, double scale)
{
    return fabs(got - ref) <= 2e-5 * scale;
}

static int check_attention_shape(int B, int T, int C, int NH)
{
    long nq = (long)B * T * 3 * C, no = (long)B * T * C, na = (long)B * NH * T * T;
    float *qkv = rndf(nq, 1), *dout = rndf(no, 1), *out = rndf(no, 1);
    float *att = malloc(sizeof(float) * na), *drow = malloc(sizeof(float) * T);
    float *dqkv0 = rndf(nq, 1), *dqkv = dupf(dqkv0, nq);
    for (long i = 0; i < na; i++)
        att[i] = 12345.0f; /* the upper triangle must stay untouched */
    double *ro = malloc(sizeof(double) * no), *ra = malloc(sizeof(double) * na),
           *rd = malloc(sizeof(double) * nq);
    attention_ref(ro, ra, rd, qkv, dout, B, T, C, NH);
    ops_attention_forward(out, att, qkv, B, T, C, NH);
    ops_attention_backward(dqkv, drow, dout, qkv, att, B, T, C, NH);
    int bad = 0;
    double go = 0, gd = 0;
    for (long i = 0; i < no; i++)
        go = fmax(go, fabs(ro[i]));
    for (long i = 0; i < nq; i++)
        gd = fmax(gd, fabs(rd[i]));
    for (long i = 0; i < no; i++)
        bad += !att_close(out[i], ro[i], go + 1);
    for (int bh = 0; bh < B * NH; bh++)
        for (int t = 0; t < T; t++)
            for (int k = 0; k < T; k++) {
                long i = ((long)bh * T + t) * T + k;
                bad += k <= t ? !att_close(att[i], ra[i], 1) : att[i] != 12345.0f;
            }
    for (long i = 0; i < nq; i++)
        bad += !att_close(dqkv[i] - dqkv0[i], rd[i], gd + 1);
    if (bad)
        fprintf(stderr, "  attention %s B=%d T=%d C=%d NH=%d: %d values off\n", path_name(), B, T,
                C, NH, bad);
    free(qkv), free(dout), free(out), free(att), free(drow), free(dqkv0), free(dqkv);
    free(ro), free(ra), free(rd);
    return bad;
}

static void test_attention_reference(void)
{
    /* {B, T, C, NH}: head sizes 1..72, T across the 6-row tiles and the
     * 16-key panels; T = 130 and hs = 72 at T = 128 exceed the tiled
     * kernel's stack panels and take the row-at-a-time one */
    static const int shapes[][4] = {{1, 1, 4, 4},    {2, 5, 8, 2},     {1, 7, 3, 1},
                                    {2, 13, 10, 2},  {1, 17, 33, 3},   {1, 33, 64, 4},
                                    {1, 64, 16, 1},  {1, 65, 48, 2},   {1, 128, 256, 4},
                                    {1, 130, 24, 2}, {1, 128, 144, 2}, {1, 40, 9, 9}};
    int bad = 0;
    for (int i = 0; i < 12; i++)
        bad += check_attention_shape(shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3]) != 0;
    CHECK(bad == 0);
}

/* Causality stays exact even for non-finite values: a NaN in a later
 * position's v never reaches an earlier output, a NaN in a query never
 * reaches the keys it did not attend to. */
static void test_attention_causal_nan(void)
{
    enum { B = 1, T = 37, C = 16, NH = 2 };
    float *qkv = rndf(B * T * 3 * C, 1), *dout = rndf(B * T * C, 1), *out = rndf(B * T * C, 1);
    float *att = calloc(B * NH * T * T, 4), *dqkv = calloc(B * T * 3 * C, 4), drow[T];
    int tv = 20, tq = 9;
    qkv[tv * 3 * C + 2 * C + 3] = NAN; /* v of position 20, head 0 */
    ops_attention_forward(out, att, qkv, B, T, C, NH);
    int ok = 1;
    for (int t = 0; t < tv; t++)
        for (int d = 0; d < C; d++)
            ok &= isfinite(out[t * C + d]);
    CHECK(ok);
    CHECK(isnan(out[tv * C + 3]));
    qkv[tv * 3 * C + 2 * C + 3] = 0.5f;
    ops_attention_forward(out, att, qkv, B, T, C, NH);
    qkv[tq * 3 * C + 1] = NAN; /* q of position 9, head 0 */
    ops_attention_backward(dqkv, drow, dout, qkv, att, B, T, C, NH);
    ok = 1;
    for (int k = tq + 1; k < T; k++) /* keys after 9 never met query 9 */
        for (int d = 0; d < C; d++)
            ok &= isfinite(dqkv[k * 3 * C + C + d]);
    CHECK(ok);
    free(qkv), free(dout), free(out), free(att), free(dqkv);
}

/* Batches split into separate calls give the same bits (the later
 * thread pool splits attention over (b, h)). */
static void test_attention_deterministic(void)
{
    enum { B = 3, T = 29, C = 20, NH = 2 };
    long nq = B * T * 3 * C, no = B * T * C, na = B * NH * T * T, bq = T * 3 * C;
    float *qkv = rndf(nq, 1), *dout = rndf(no, 1), drow[T];
    float *o1 = calloc(no, 4), *o2 = calloc(no, 4), *a1 = calloc(na, 4), *a2 = calloc(na, 4);
    float *d1 = calloc(nq, 4), *d2 = calloc(nq, 4);
    ops_attention_forward(o1, a1, qkv, B, T, C, NH);
    ops_attention_backward(d1, drow, dout, qkv, a1, B, T, C, NH);
    for (int b = 0; b < B; b++) {
        ops_attention_forward(o2 + b * T * C, a2 + (long)b * NH * T * T, qkv + b * bq, 1, T, C, NH);
        ops_attention_backward(d2 + b * bq, drow, dout + b * T * C, qkv + b * bq,
                           a2 + (long)b * NH * T * T, 1, T, C, NH);
    }
    CHECK(!memcmp(o1, o2, 4 * no) && !memcmp(a1, a2, 4 * na) && !memcmp(d1, d2, 4 * nq));
    free(qkv), free(dout), free(o1), free(o2), free(a1), free(a2), free(d1), free(d2);
}

/* ---- GELU, softmax, cross-entropy, LayerNorm against double ---- */
/* 0.5 x (1 + tanh(u)) = x / (1 + exp(-2u)): the second keeps its digits
 * where 1 + tanh(u) cancels, even in double */
static double gelu_ref(double x)
{
    return x / (1 + exp(-2 * 0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

static double gelu_dref(double x)
{
    double u = 0.7978845608028654 * (x + 0.044715 * x * x * x), th = tanh(u);
    return 0.5 * (1 + th) +
           0.5 * x * (1 - th * th) * 0.7978845608028654 * (1 + 3 * 0.044715 * x * x);
}

static void test_gelu_reference(void)
{
    enum { n = 2003 };
    float *x = malloc(4 * n), *y = malloc(4 * n), *g0 = rndf(n, 1), *g = dupf(g0, n),
          *d = rndf(n, 1);
    for (int i = 0; i < n; i++)
        x[i] = -12.0f + 24.0f * i / (n - 1) + 0.001f * rng_normal(&R);
    x[0] = -80.0f, x[1] = 80.0f, x[2] = 0.0f, x[3] = 1e-20f, x[4] = -3e4f;
    ops_gelu_forward(y, x, n);
    ops_gelu_backward(g, x, d, n);
    int bad = 0;
    for (int i = 0; i < n; i++) {
        double r = gelu_ref(x[i]), dr = g0[i] + d[i] * gelu_dref(x[i]);
        /* a few ulp, times the conditioning: in float, u itself carries
         * a relative error of a few ulp, and y ~ x exp(2u) for u < 0 */
        double u = 0.7978845608028654 * (x[i] + 0.044715 * (double)x[i] * x[i] * x[i]);
        bad += fabs(y[i] - r) > 0x1p-22 * (2 + 2 * fabs(u)) * fabs(r) + 1e-37;
        bad += fabs(g[i] - dr) > 2e-6 * (fabs(dr) + fabs(g0[i]) + fabs(d[i]));
    }
    if (bad)
        fprintf(stderr, "  gelu %s: %d values off\n", path_name(), bad);
    CHECK(bad == 0);
    /* IEEE cases: NaN stays NaN, +inf maps to +inf, -inf to a non-finite */
    float sx[3] = {NAN, INFINITY, -INFINITY}, sy[3], sg[3] = {0, 0, 0}, one[3] = {1, 1, 1};
    ops_gelu_forward(sy, sx, 3);
    ops_gelu_backward(sg, sx, one, 3);
    CHECK(isnan(sy[0]) && sy[1] == INFINITY && !isfinite(sy[2]) && isnan(sg[0]));
    free(x), free(y), free(g0), free(g), free(d);
}

static void test_softmax_ce_reference(void)
{
    static const int Vs[] = {1, 7, 13, 256, 257};
    int bad = 0;
    for (int vi = 0; vi < 5; vi++) {
        int N = 9, V = Vs[vi];
        float *l = rndf((long)N * V, 4), *p = malloc(4 * (size_t)N * V), loss[9];
        uint8_t tg[9];
        for (int n = 0; n < N; n++)
            tg[n] = (uint8_t)(n * 37 % V);
        l[3] = 90.0f; /* a large logit: no overflow */
        ops_softmax_forward(p, l, N, V);
        ops_crossentropy_forward(loss, l, tg, N, V);
        for (int n = 0; n < N; n++) {
            const float *r = l + (long)n * V;
            double mx = -INFINITY, s = 0;
            for (int i = 0; i < V; i++)
                mx = fmax(mx, r[i]);
            for (int i = 0; i < V; i++)
                s += exp((double)r[i] - mx);
            for (int i = 0; i < V; i++)
                bad += fabs(p[(long)n * V + i] - exp(r[i] - mx) / s) >
                       1e-6 * exp(r[i] - mx) / s + 1e-9;
            double ce = log(s) + mx - r[tg[n]];
            bad += fabs(loss[n] - ce) > 1e-6 * (fabs(ce) + fabs(mx)) + 1e-6;
        }
        free(l), free(p);
    }
    if (bad)
        fprintf(stderr, "  softmax/cross-entropy %s: %d values off\n", path_name(), bad);
    CHECK(bad == 0);
}

static void test_layernorm_reference(void)
{
    static const int Cs[] = {1, 3, 8, 13, 64, 257};
    int bad = 0;
    for (int ci = 0; ci < 6; ci++) {
        int N = 7, C = Cs[ci];
        float *x = rndf((long)N * C, 2), *w = rndf(C, 1), *b = rndf(C, 1),
              *d = rndf((long)N * C, 1);
        float *o = malloc(4 * (size_t)N * C), mean[7], rstd[7];
        float *dx0 = rndf((long)N * C, 1), *dx = dupf(dx0, (long)N * C), *dw0 = rndf(C, 1),
              *dw = dupf(dw0, C), *db0 = rndf(C, 1), *db = dupf(db0, C);
        for (int i = 0; i < N * C; i++)
            x[i] += 3.0f;
        ops_layernorm_forward(o, mean, rstd, x, w, b, N, C, 1e-5f);
        ops_layernorm_backward(dx, dw, db, d, x, w, mean, rstd, N, C);
        double *rdw = calloc(C, 8), *rdb = calloc(C, 8);
        for (int n = 0; n < N; n++) {
            const float *r = x + (long)n * C, *dd = d + (long)n * C;
            double m = 0, v = 0, a = 0, c = 0;
            for (int i = 0; i < C; i++)
                m += r[i];
            m /= C;
            for (int i = 0; i < C; i++)
                v += (r[i] - m) * (r[i] - m);
            double s = 1 / sqrt(v / C + 1e-5);
            bad += fabs(mean[n] - m) > 1e-6 * fabs(m) + 1e-6 || fabs(rstd[n] - s) > 1e-5 * s;
            for (int i = 0; i < C; i++) {
                double xh = (r[i] - m) * s, ref = xh * w[i] + b[i];
                bad += fabs(o[(long)n * C + i] - ref) >
                       2e-5 * (fabs(w[i]) * (fabs(xh) + 1) + fabs(b[i]));
                a += dd[i] * w[i], c += dd[i] * w[i] * xh;
                rdw[i] += xh * dd[i], rdb[i] += dd[i];
            }
            for (int i = 0; i < C; i++) {
                double xh = (r[i] - m) * s;
                double ref = dx0[(long)n * C + i] + s * (dd[i] * w[i] - a / C - xh * c / C);
                double scale = fabs(dx0[(long)n * C + i]) +
                               s * (fabs(dd[i] * w[i]) + fabs(a) / C + fabs(xh * c) / C + 1e-3);
                bad += fabs(dx[(long)n * C + i] - ref) > 1e-4 * scale;
            }
        }
        for (int i = 0; i < C; i++) {
            bad += fabs(dw[i] - dw0[i] - rdw[i]) > 1e-4 * (fabs(rdw[i]) + fabs(dw0[i]) + 1);
            bad += fabs(db[i] - db0[i] - rdb[i]) > 1e-5 * (fabs(rdb[i]) + fabs(db0[i]) + 1);
        }
        free(x), free(w), free(b), free(d), free(o), free(dx0), free(dx), free(dw0), free(dw);
        free(db0), free(db), free(rdw), free(rdb);
    }
    if (bad)
        fprintf(stderr, "  layernorm %s: %d values off\n", path_name(), bad);
    CHECK(bad == 0);
}

static void test_absmax_sizes(void)
{
    int bad = 0;
    for (int n = 1; n < 70; n++) {
        float *x = rndf(n, 1);
        float m = 0;
        for (int i = 0; i < n; i++)
            m = fmaxf(m, fabsf(x[i]));
        bad += ops_absmax(x, n) != m;
        x[n / 2] = NAN;
        bad += !isnan(ops_absmax(x, n));
        free(x);
    }
    CHECK(bad == 0);
}

/* every position of every size up to 70 (the blocks of 32, the tail),
 * with NaN, +inf and -inf; the largest and the subnormal floats are finite */
static void test_any_nonfinite(void)
{
    int bad = 0;
    static const float specials[3] = {NAN, INFINITY, -INFINITY};
    for (int n = 0; n < 70; n++) {
        float *x = rndf(n, 1);
        for (int i = 0; i < n; i += 3)
            x[i] = i % 2 ? -FLT_MAX : 0x1p-140f;
        bad += ops_any_nonfinite(x, (size_t)n) != 0;
        for (int i = 0; i < n; i++)
            for (int k = 0; k < 3; k++) {
                float keep = x[i];
                x[i] = specials[k];
                bad += ops_any_nonfinite(x, (size_t)n) != 1;
                bad += i > 0 && ops_any_nonfinite(x, (size_t)i) != 0; /* before it: clean */
                x[i] = keep;
            }
        free(x);
    }
    CHECK(bad == 0);
}

/* ops_sumsq against a long double sum (n squared floats, n - 1 double
 * adds: relative error under n 2^-53), over sizes that cover the 16-lane
 * blocks' tails, and NaN/inf propagation */
static void test_sumsq(void)
{
    int bad = 0;
    static const int sizes[] = {0, 1, 2, 7, 15, 16, 17, 31, 33, 100, 1000, 4099};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        int n = sizes[s];
        float *x = rndf(n, 3);
        long double ref = 0;
        for (int i = 0; i < n; i++)
            ref += (long double)x[i] * x[i];
        double got = ops_sumsq(x, (size_t)n);
        if (fabs(got - (double)ref) > (n + 1) * 0x1p-53 * (double)ref) {
            fprintf(stderr, "  sumsq %s n=%d: %.17g vs %.17Lg\n", path_name(), n, got, ref);
            bad++;
        }
        if (n > 0) {
            x[n - 1] = NAN; /* the last value: in the tail when there is one */
            bad += !isnan(ops_sumsq(x, (size_t)n));
            x[n - 1] = -INFINITY;
            bad += !isinf(ops_sumsq(x, (size_t)n));
        }
        free(x);
    }
    CHECK(bad == 0);
}

/* ops_adamw against the update written out in the test, element by
 * element (the same operations in the same order: the same floats), and
 * its sums against long double ones */
static void test_adamw(void)
{
    int bad = 0;
    static const int sizes[] = {1, 3, 8, 9, 17, 250, 1001};
    ops_adamw_args a = {0.5f, 0.9f, 0.999f, 1.0f - 1e-3f * 0.1f, 2e-3f, 0.03f, 1e-8f};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        int n = sizes[s];
        float *p = rndf(n, 1), *g = rndf(n, 2), *m = rndf(n, 0.1f), *v = rndf(n, 0.1f);
        for (int i = 0; i < n; i++)
            v[i] = v[i] * v[i]; /* second moments are >= 0 */
        float *pr = dupf(p, n), *mr = dupf(m, n), *vr = dupf(v, n);
        long double usq = 0, psq = 0;
        for (int i = 0; i < n; i++) {
            float gi = g[i] * a.grad_scale;
            mr[i] = a.beta1 * mr[i] + (1.0f - a.beta1) * gi;
            vr[i] = a.beta2 * vr[i] + (1.0f - a.beta2) * gi * gi;
            float np = pr[i] * a.decay;
            np -= a.step * mr[i] / (sqrtf(vr[i]) / a.bc2_sqrt + a.eps);
            usq += ((long double)np - pr[i]) * ((long double)np - pr[i]);
            psq += (long double)np * np;
            pr[i] = np;
        }
        float *p0 = dupf(p, n), *m0 = dupf(m, n), *v0 = dupf(v, n);
        double sums[2] = {0.0, 0.0};
        ops_adamw(p, g, m, v, (size_t)n, &a, sums);
        bad += memcmp(p, pr, sizeof(float) * n) != 0;
        bad += memcmp(m, mr, sizeof(float) * n) != 0;
        bad += memcmp(v, vr, sizeof(float) * n) != 0;
        /* each d^2 rounds once, each add once */
        bad += !t_close(sums[0], (double)usq, (n + 3) * 0x1p-52, 0);
        bad += !t_close(sums[1], (double)psq, (n + 3) * 0x1p-52, 0);
        /* the sums are added to, not replaced: the same step again from
         * the same state doubles them, exactly */
        double twice[2] = {sums[0], sums[1]};
        ops_adamw(p0, g, m0, v0, (size_t)n, &a, twice);
        bad += twice[0] != 2 * sums[0] || twice[1] != 2 * sums[1];
        free(p0), free(m0), free(v0);
        if (bad)
            fprintf(stderr, "  adamw %s n=%d: %d bad\n", path_name(), n, bad);
        /* eps = 0 (no lane of the tail divides 0 by 0 into the sums),
         * then a NaN gradient: NaN in its parameter and in the sums */
        ops_adamw_args z = a;
        z.eps = 0.0f;
        for (int i = 0; i < n; i++)
            v[i] = 1.0f;
        sums[0] = sums[1] = 0.0;
        ops_adamw(p, g, m, v, (size_t)n, &z, sums);
        bad += !isfinite(sums[0]) || !isfinite(sums[1]);
        g[n / 2] = NAN;
        ops_adamw(p, g, m, v, (size_t)n, &a, sums);
        bad += !isnan(p[n / 2]) || !isnan(sums[0]) || !isnan(sums[1]);
        free(p), free(g), free(m), free(v), free(pr), free(mr), free(vr);
    }
    CHECK(bad == 0);
}

/* the two paths give the same bits (ops.h promises it for these two) */
static void test_sumsq_adamw_paths_agree(void)
{
    enum { N = 1037 };
    ops_adamw_args a = {1.0f, 0.9f, 0.95f, 0.999f, 1e-3f, 0.1f, 1e-8f};
    float *x = rndf(N, 1), *g = rndf(N, 1), *m = rndf(N, 0.1f), *v = rndf(N, 0.1f);
    for (int i = 0; i < N; i++)
        v[i] *= v[i];
    float *p1 = dupf(x, N), *m1 = dupf(m, N), *v1 = dupf(v, N);
    double s1[2] = {0, 0}, s2[2] = {0, 0}, q1 = ops_sumsq(x, N);
    ops_adamw(p1, g, m1, v1, N, &a, s1);
    ops_force_generic(1);
    double q2 = ops_sumsq(x, N);
    ops_adamw(x, g, m, v, N, &a, s2);
    ops_force_generic(0);
    CHECK(!memcmp(&q1, &q2, sizeof q1));
    /* lanes of very different sizes, so that any other order of the adds
     * would round differently somewhere in 50 tries */
    int diff = 0;
    for (int t = 0; t < 50; t++) {
        float *y = rndf(N + t, 1);
        for (int i = 0; i < N + t; i++)
            y[i] = ldexpf(y[i], 3 * (i % 16) - 24);
        double r1 = ops_sumsq(y, (size_t)(N + t));
        ops_force_generic(1);
        double r2 = ops_sumsq(y, (size_t)(N + t));
        ops_force_generic(0);
        diff += memcmp(&r1, &r2, sizeof r1) != 0;
        free(y);
    }
    CHECK(diff == 0);
    CHECK(!memcmp(p1, x, sizeof(float) * N) && !memcmp(m1, m, sizeof(float) * N) &&
          !memcmp(v1, v, sizeof(float) * N));
    CHECK(!memcmp(s1, s2, sizeof s1));
    free(x), free(g), free(m), free(v), free(p1), free(m1), free(v1);
}

/* db is plain adds in row order on both paths: the same bits */
static void test_db_paths_agree(void)
{
    enum { N = 203, C = 5, OC = 131 };
    float *x = rndf(N * C, 1), *w = rndf(OC * C, 1), *dout = rndf(N * OC, 1);
    float *dw = calloc(OC * C, 4), *db1 = calloc(OC, 4), *db2 = calloc(OC, 4);
    ops_matmul_backward(NULL, dw, db1, dout, x, w, N, C, OC);
    ops_force_generic(1);
    ops_matmul_backward(NULL, dw, db2, dout, x, w, N, C, OC);
    ops_force_generic(0);
    CHECK(!memcmp(db1, db2, sizeof(float) * OC));
    free(x), free(w), free(dout), free(dw), free(db1), free(db2);
}

/* ---- the fused kernels ----
 * Each promises the bits of its plain kernel and of ops_absmax (or of
 * ops_any_nonfinite) on the same path; checked for sizes around the
 * vector widths, and with a NaN or an inf planted at each place. */

/* a == b for every value (-0 and +0 alike: a product started from +0
 * may keep a -0 the old sum turned to +0) */
static int same_values(const float *a, const float *b, long n)
{
    for (long i = 0; i < n; i++)
        if (a[i] != b[i] && !(a[i] != a[i] && b[i] != b[i]))
            return 0;
    return 1;
}

/* max |x| the slow way (NaN if any) */
static float ref_absmax(const float *x, long n)
{
    float m = 0;
    for (long i = 0; i < n; i++) {
        if (x[i] != x[i])
            return NAN;
        m = fmaxf(m, fabsf(x[i]));
    }
    return m;
}

static int same_max(float a, float b) { return a == b || (isnan(a) && isnan(b)); }

static void test_fused_gelu(void)
{
    int bad = 0;
    static const int sizes[] = {1, 5, 8, 9, 16, 31, 64, 257};
    static const float specials[2] = {NAN, INFINITY};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        int n = sizes[s];
        float *x = rndf(n, 3), *d = rndf(n, 1), *y1 = rndf(n, 1), *y2 = rndf(n, 1);
        float *g1 = calloc((size_t)n, 4), *g2 = rndf(n, 1), *xg = rndf(n, 1);
        for (int at = -1; at < n; at++) {
            for (int k = 0; k < 2; k++) {
                float keep = at >= 0 ? x[at] : 0, keepd = at >= 0 ? d[at] : 0;
                if (at >= 0 && k == 0)
                    x[at] = specials[at % 2];
                else if (at >= 0)
                    d[at] = specials[at % 2];
                ops_gelu_forward(y1, x, n);
                float a = ops_gelu_forward_absmax(y2, x, n);
                bad += !same_values(y1, y2, n) || !same_max(a, ops_absmax(y1, n)) ||
                       !same_max(a, ref_absmax(y1, n));
                memset(g1, 0, sizeof(float) * (size_t)n);
                ops_gelu_backward(g1, x, d, n);
                int nf = ops_gelu_backward_set(g2, x, d, n);
                bad += !same_values(g1, g2, n);
                bad += !(nf & GELU_BAD_DINP) != !ops_any_nonfinite(g1, (size_t)n);
                bad += !(nf & GELU_BAD_DOUT) != !ops_any_nonfinite(d, (size_t)n);
                /* the derivative made by the forward, in place over a copy
                 * of x as the model does: the same outputs and flags */
                memcpy(xg, x, sizeof(float) * (size_t)n);
                float a2 = ops_gelu_forward_grad_absmax(y2, xg, xg, n);
                bad += !same_values(y1, y2, n) || !same_max(a, a2);
                bad += ops_gelu_backward_grad_set(g2, xg, d, n) != nf || !same_values(g1, g2, n);
                if (at >= 0)
                    x[at] = keep, d[at] = keepd;
            }
        }
        free(x), free(d), free(y1), free(y2), free(g1), free(g2), free(xg);
    }
    CHECK(bad == 0);
}

/* The matmul's max |out| from the micro-kernel's registers: the plain
 * forward's bits, ops_absmax's value, on one thread and on a pool of 2
 * (whose parts fold their maxima), with a NaN, an inf or a value whose
 * products overflow planted in the input, and shapes with row and column
 * tails (mr < 6, nr < 16) and depths past one block. */
static void test_fused_matmul(void)
{
    static const int shapes[][3] = {{7, 5, 3}, {13, 7, 19}, {64, 64, 192}, {150, 300, 40},
                                    {512, 64, 256}};
    static const float specials[3] = {NAN, INFINITY, 3e38f};
    ns_pool *pool = pool_create(2, NULL);
    int bad = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        int N = shapes[s][0], C = shapes[s][1], OC = shapes[s][2];
        long nx = (long)N * C, ny = (long)N * OC;
        float *x = rndf(nx, 1), *w = rndf((long)OC * C, 1), *b = rndf(OC, 1);
        float *y1 = rndf(ny, 1), *y2 = rndf(ny, 1), *y3 = rndf(ny, 1);
        for (int k = -1; k < 3; k++) {
            long at = k < 0 ? 0 : (nx - 1) * k / 2; /* first, middle, last */
            float keep = x[at];
            if (k >= 0)
                x[at] = specials[k];
            ops_matmul_forward(y1, x, w, b, N, C, OC);
            float a = ops_matmul_forward_absmax(y2, x, w, b, N, C, OC);
            float a2 = ops_matmul_forward_absmax_mt(pool, y3, x, w, b, N, C, OC);
            bad += memcmp(y1, y2, sizeof(float) * (size_t)ny) != 0 && !same_values(y1, y2, ny);
            bad += !same_values(y1, y3, ny);
            bad += !same_max(a, ops_absmax(y1, ny)) || !same_max(a, ref_absmax(y1, ny));
            bad += !same_max(a2, a);
            x[at] = keep;
        }
        free(x), free(w), free(b), free(y1), free(y2), free(y3);
    }
    pool_free(pool);
    CHECK(pool != NULL && bad == 0);
}

/* MM_DW_ZERO: dw written as if added to a zeroed dw, its old memory
 * unread (here NaN), on one thread and a pool of 2, with depths past one
 * block (N > 128) and tiles with row and column tails; MM_DINP_SET as
 * ops_matmul_backward_set_mt. */
static void test_matmul_dw_zero(void)
{
    static const int shapes[][3] = {{7, 5, 3}, {13, 7, 19}, {300, 64, 64}, {150, 40, 100}};
    ns_pool *pool = pool_create(2, NULL);
    int bad = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        int N = shapes[s][0], C = shapes[s][1], OC = shapes[s][2];
        long nx = (long)N * C, nw = (long)OC * C;
        float *x = rndf(nx, 1), *w = rndf(nw, 1), *dy = rndf((long)N * OC, 1);
        float *dx1 = rndf(nx, 1), *dx2 = rndf(nx, 1), *dw1 = calloc((size_t)nw, 4);
        float *dw2 = malloc(sizeof(float) * (size_t)nw), *db1 = calloc((size_t)OC, 4);
        float *db2 = calloc((size_t)OC, 4);
        for (int t = 0; t < 2; t++) {
            ns_pool *p = t ? pool : NULL;
            memset(dw1, 0, sizeof(float) * (size_t)nw);
            memset(db1, 0, sizeof(float) * (size_t)OC);
            memset(db2, 0, sizeof(float) * (size_t)OC);
            for (long i = 0; i < nw; i++)
                dw2[i] = NAN;
            ops_matmul_backward_set_mt(p, dx1, dw1, db1, dy, x, w, N, C, OC);
            ops_matmul_backward_flags_mt(p, dx2, dw2, db2, dy, x, w, N, C, OC,
                                     MM_DINP_SET | MM_DW_ZERO);
            bad += memcmp(dx1, dx2, sizeof(float) * (size_t)nx) != 0;
            bad += memcmp(dw1, dw2, sizeof(float) * (size_t)nw) != 0;
            bad += memcmp(db1, db2, sizeof(float) * (size_t)OC) != 0;
        }
        free(x), free(w), free(dy), free(dx1), free(dx2), free(dw1), free(dw2), free(db1),
            free(db2);
    }
    pool_free(pool);
    CHECK(pool != NULL && bad == 0);
}

static void test_fused_layernorm(void)
{
    int bad = 0;
    static const int cols[] = {1, 7, 8, 13, 32, 64, 100};
    for (size_t s = 0; s < sizeof cols / sizeof *cols; s++) {
        int N = 5, C = cols[s];
        float *x = rndf(N * C, 2), *w = rndf(C, 1), *b = rndf(C, 1);
        float *o1 = rndf(N * C, 1), *o2 = rndf(N * C, 1);
        float m1[5], r1[5], m2[5], r2[5];
        for (int at = -1; at < N * C; at += 1 + C / 3) {
            float keep = at >= 0 ? x[at] : 0;
            if (at >= 0)
                x[at] = at % 2 ? NAN : -INFINITY;
            ops_layernorm_forward(o1, m1, r1, x, w, b, N, C, 1e-5f);
            float a = ops_layernorm_forward_absmax(o2, m2, r2, x, w, b, N, C, 1e-5f);
            bad += memcmp(o1, o2, sizeof(float) * (size_t)(N * C)) != 0;
            bad += memcmp(m1, m2, sizeof m1) != 0 || memcmp(r1, r2, sizeof r1) != 0;
            bad += !same_max(a, ops_absmax(o1, N * C)) || !same_max(a, ref_absmax(o1, N * C));
            bad += at >= 0 && !isnan(a); /* a non-finite input: its row is NaN */
            if (at >= 0)
                x[at] = keep;
        }
        free(x), free(w), free(b), free(o1), free(o2);
    }
    CHECK(bad == 0);
}

/* the residual against the loop written out (two products, then the sum:
 * the same floats on both paths) */
static void test_residual(void)
{
    int bad = 0;
    for (int n = 1; n < 70; n++) {
        float *x = rndf(n, 2), *f = rndf(n, 2), *o = rndf(n, 1), *r = rndf(n, 1);
        for (int at = -1; at < n; at += 4) {
            float keep = at >= 0 ? f[at] : 0;
            if (at >= 0)
                f[at] = at % 8 ? INFINITY : NAN;
            float a = 1.4142135f, g = 0.3f;
            for (int i = 0; i < n; i++) {
                float p = a * x[i], q2 = g * f[i];
                r[i] = p + q2;
            }
            float got = ops_residual(o, x, a, f, g, n);
            bad += memcmp(o, r, sizeof(float) * (size_t)n) != 0;
            bad += !same_max(got, ref_absmax(r, n));
            if (at >= 0)
                f[at] = keep;
        }
        free(x), free(f), free(o), free(r);
    }
    CHECK(bad == 0);
}

/* the LayerNorm backward's watch: its plain bits, and whether dinp holds
 * inf or NaN afterwards, with one planted in dout (or in the dinp it adds
 * to) at places across the rows and the vector tails */
static void test_layernorm_backward_watch(void)
{
    int bad = 0;
    static const int cols[] = {3, 8, 13, 64};
    for (size_t s = 0; s < sizeof cols / sizeof *cols; s++) {
        int N = 4, C = cols[s], n = N * C;
        float *x = rndf(n, 2), *w = rndf(C, 1), *b = rndf(C, 1), *o = rndf(n, 1);
        float *dout = rndf(n, 1), *d0 = rndf(n, 1), mean[4], rstd[4];
        ops_layernorm_forward(o, mean, rstd, x, w, b, N, C, 1e-5f);
        for (int at = -1; at < n; at += 1 + C / 4) {
            for (int into = 0; into < 2; into++) {
                float *planted = into ? d0 : dout, keep = at >= 0 ? planted[at] : 0;
                if (at >= 0)
                    planted[at] = at % 2 ? NAN : INFINITY;
                float *d1 = dupf(d0, n), *d2 = dupf(d0, n);
                float *w1 = calloc((size_t)C, 4), *b1 = calloc((size_t)C, 4);
                float *w2 = calloc((size_t)C, 4), *b2 = calloc((size_t)C, 4);
                ops_layernorm_backward(d1, w1, b1, dout, x, w, mean, rstd, N, C);
                int got = ops_layernorm_backward_watch(d2, w2, b2, dout, x, w, mean, rstd, N, C);
                bad += memcmp(d1, d2, sizeof(float) * (size_t)n) != 0;
                bad += memcmp(w1, w2, sizeof(float) * (size_t)C) != 0;
                bad += got != ops_any_nonfinite(d1, (size_t)n) || got != (at >= 0);
                if (at >= 0)
                    planted[at] = keep;
                free(d1), free(d2), free(w1), free(b1), free(w2), free(b2);
            }
        }
        free(x), free(w), free(b), free(o), free(dout), free(d0);
    }
    CHECK(bad == 0);
}

/* the loss gradient set equals it zeroed and accumulated, and its watch
 * finds a NaN probability or scale */
static void test_crossentropy_backward_set(void)
{
    enum { N = 5, V = 37 };
    float *probs = rndf(N * V, 1), *d1 = calloc(N * V, 4), *d2 = rndf(N * V, 1);
    uint8_t tg[N] = {0, 36, 7, 8, 7};
    ops_crossentropy_softmax_backward(d1, probs, tg, N, V, 0.2f);
    int got = ops_crossentropy_softmax_backward_set(d2, probs, tg, N, V, 0.2f);
    CHECK(!memcmp(d1, d2, sizeof(float) * N * V) && got == 0);
    probs[3 * V + 20] = NAN;
    CHECK(ops_crossentropy_softmax_backward_set(d2, probs, tg, N, V, 0.2f) == 1);
    probs[3 * V + 20] = 0.5f;
    CHECK(ops_crossentropy_softmax_backward_set(d2, probs, tg, N, V, INFINITY) == 1);
    free(probs), free(d1), free(d2);
}

/* dinp set equals dinp zeroed and accumulated; dw and db still accumulate */
static void test_matmul_backward_set(void)
{
    static const int shapes[][3] = {{7, 5, 3}, {64, 64, 192}, {33, 256, 64}};
    int bad = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        int N = shapes[s][0], C = shapes[s][1], OC = shapes[s][2];
        float *x = rndf((long)N * C, 1), *w = rndf((long)OC * C, 1), *dout = rndf((long)N * OC, 1);
        float *d1 = calloc((size_t)N * C, 4), *d2 = rndf((long)N * C, 5);
        float *w1 = rndf((long)OC * C, 1), *w2 = dupf(w1, (long)OC * C);
        float *b1 = rndf(OC, 1), *b2 = dupf(b1, OC);
        ops_matmul_backward_mt(NULL, d1, w1, b1, dout, x, w, N, C, OC);
        ops_matmul_backward_set_mt(NULL, d2, w2, b2, dout, x, w, N, C, OC);
        bad += !same_values(d1, d2, (long)N * C);
        bad += memcmp(w1, w2, sizeof(float) * (size_t)(OC * C)) != 0;
        bad += memcmp(b1, b2, sizeof(float) * (size_t)OC) != 0;
        free(x), free(w), free(dout), free(d1), free(d2), free(w1), free(w2), free(b1), free(b2);
    }
    CHECK(bad == 0);
}

/* the residual has no FMA: the portable and AVX2 paths give the same bits */
static void test_residual_paths_agree(void)
{
    enum { N = 1003 };
    float *x = rndf(N, 3), *f = rndf(N, 3), *o1 = rndf(N, 1), *o2 = rndf(N, 1);
    float a1 = ops_residual(o1, x, 1.6817928f, f, 0.25f, N);
    ops_force_generic(1);
    float a2 = ops_residual(o2, x, 1.6817928f, f, 0.25f, N);
    ops_force_generic(0);
    CHECK(!memcmp(o1, o2, sizeof(float) * N) && a1 == a2);
    free(x), free(f), free(o1), free(o2);
}


/* ---- the two builds give the same bits ----
 * Every kernel on shapes that reach its tails and block edges (the tiled
 * attention and its row-at-a-time fallback, the gemm's packed and
 * unpacked A, dinp set and accumulated) and on inputs with inf, NaN,
 * huge and tiny values, once per build, compared with memcmp: the
 * portable build is the same computation as the AVX2 one, not an
 * approximation of it. */
typedef struct {
    float *p;
    long n, cap;
} outbuf;

/* IEEE 754 fixes every result's bits but a NaN's sign and payload (which
 * operand's NaN an x86 instruction passes on depends on the order the
 * compiler put them in): equal bits, or both NaN */
static int same_float(float a, float b) { return !memcmp(&a, &b, sizeof a) || (a != a && b != b); }

/* n more floats of o, zeroed; o never moves, so earlier takes stay valid */
static float *take(outbuf *o, long n)
{
    if (o->n + n > o->cap) {
        fprintf(stderr, "test_ops: outbuf too small\n");
        exit(1);
    }
    float *r = o->p + o->n;
    memset(r, 0, sizeof(float) * (size_t)n);
    o->n += n;
    return r;
}

static float *wild(long n, float scale)
{
    float *x = rndf(n, scale);
    for (long i = 7; i < n; i += 97)
        x[i] = (i / 97) % 4 == 0 ? ldexpf(x[i], 40) : (i / 97) % 4 == 1 ? ldexpf(x[i], -40) : x[i];
    return x;
}

static void outputs_matmul(outbuf *o, int N, int C, int OC)
{
    float *x = wild((long)N * C, 1), *w = rndf((long)OC * C, 0.3f), *b = rndf(OC, 1);
    float *dy = wild((long)N * OC, 1);
    ops_matmul_forward(take(o, (long)N * OC), x, w, b, N, C, OC);
    x[3] = INFINITY; /* an inf product in the output's max */
    *take(o, 1) = ops_matmul_forward_absmax(take(o, (long)N * OC), x, w, b, N, C, OC);
    x[3] = 0.5f;
    float *dx = take(o, (long)N * C), *dw = take(o, (long)OC * C), *db = take(o, OC);
    ops_matmul_backward(dx, dw, db, dy, x, w, N, C, OC);
    ops_matmul_backward_set_mt(NULL, take(o, (long)N * C), dw, db, dy, x, w, N, C, OC);
    ops_matmul_backward_flags_mt(NULL, take(o, (long)N * C), take(o, (long)OC * C), db, dy, x, w, N,
                             C, OC, MM_DINP_SET | MM_DW_ZERO);
    free(x), free(w), free(b), free(dy);
}

static void outputs_attention(outbuf *o, int B, int T, int C, int NH)
{
    long nq = (long)B * T * 3 * C, no = (long)B * T * C, na = (long)B * NH * T * T;
    float *qkv = wild(nq, 1), *dy = wild(no, 1);
    float *out = take(o, no), *att = take(o, na);
    ops_attention_forward(out, att, qkv, B, T, C, NH);
    ops_attention_backward(take(o, nq), NULL, dy, qkv, att, B, T, C, NH);
    free(qkv), free(dy);
}

static void outputs_elementwise(outbuf *o, int n)
{
    float *x = wild(n, 3), *d = wild(n, 1);
    x[1] = NAN, x[2] = INFINITY, x[3] = -INFINITY, x[4] = -90.0f, x[5] = 1e-30f, x[6] = -0.0f;
    *take(o, 1) = ops_gelu_forward_absmax(take(o, n), x, n);
    float *g = take(o, n);
    ops_gelu_backward(g, x, d, n);
    *take(o, 1) = (float)ops_gelu_backward_set(take(o, n), x, d, n);
    float *gx = take(o, n);
    *take(o, 1) = ops_gelu_forward_grad_absmax(take(o, n), gx, x, n);
    *take(o, 1) = (float)ops_gelu_backward_grad_set(take(o, n), gx, d, n);
    ops_exp(take(o, n), x, n);
    ops_softmax_forward(take(o, n), x + 3, 1, n - 3);
    *take(o, 1) = ops_absmax(d, n);
    *take(o, 1) = ops_residual(take(o, n), x, 0.7f, d, 1.3f, n);
    *take(o, 1) = (float)ops_any_nonfinite(d, (size_t)n);
    double q = ops_sumsq(d, (size_t)n);
    memcpy(take(o, 2), &q, sizeof q);
    free(x), free(d);
}

static void outputs_norms(outbuf *o, int N, int C)
{
    float *x = wild((long)N * C, 2), *w = rndf(C, 1), *b = rndf(C, 1), *dy = wild((long)N * C, 1);
    float *y = take(o, (long)N * C), *mean = take(o, N), *rstd = take(o, N);
    *take(o, 1) = ops_layernorm_forward_absmax(y, mean, rstd, x, w, b, N, C, 1e-5f);
    float *dx = take(o, (long)N * C), *dw = take(o, C), *db = take(o, C);
    *take(o, 1) = (float)ops_layernorm_backward_watch(dx, dw, db, dy, x, w, mean, rstd, N, C);
    float *l = take(o, N);
    uint8_t tg[64];
    for (int i = 0; i < N && i < 64; i++)
        tg[i] = (uint8_t)(i * 37 % C);
    ops_crossentropy_forward(l, x, tg, N < 64 ? N : 64, C);
    ops_adamw_args a = {0.5f, 0.9f, 0.98f, 0.9999f, 1e-3f, 0.3f, 1e-8f};
    float *p = take(o, (long)N * C), *m = take(o, (long)N * C), *v = take(o, (long)N * C);
    memcpy(p, x, sizeof(float) * (size_t)N * C);
    double sums[2] = {0, 0};
    ops_adamw(p, dy, m, v, (size_t)N * C, &a, sums);
    memcpy(take(o, 4), sums, sizeof sums);
    free(x), free(w), free(b), free(dy);
}

static outbuf all_outputs(void)
{
    outbuf o = {malloc(sizeof(float) << 21), 0, 1L << 21};
    rng_seed(&R, 7);
    outputs_matmul(&o, 13, 7, 19);
    outputs_matmul(&o, 150, 300, 40);  /* depth past 256, rows past 144 */
    outputs_matmul(&o, 130, 70, 200);  /* dw: N past 128 (packed A), OC past 96 */
    outputs_attention(&o, 2, 37, 24, 2);   /* tiled, tails */
    outputs_attention(&o, 1, 140, 32, 2);  /* T past 128: row at a time */
    outputs_elementwise(&o, 1003);
    outputs_norms(&o, 21, 45);
    outputs_norms(&o, 5, 256);
    return o;
}

static void test_builds_same_bits(void)
{
    outbuf a = all_outputs();
    ops_force_generic(1);
    outbuf g = all_outputs();
    ops_force_generic(0);
    long off = 0;
    for (long i = 0; i < a.n && !off; i++)
        if (!same_float(a.p[i], g.p[i]))
            off = i + 1;
    if (off)
        fprintf(stderr, "  builds differ first at output %ld: %a vs %a\n", off - 1, a.p[off - 1],
                g.p[off - 1]);
    CHECK(a.n == g.n && a.n > 100000 && off == 0);
    free(a.p), free(g.p);
}

/* ns_expf is the scalar twin of the kernels' exp: the same bits for
 * every 1021st float bit pattern (all signs, exponents, NaN and inf), on
 * both builds */
static void test_expf_twin(void)
{
    enum { CHUNK = 4096 };
    static float x[CHUNK], y[CHUNK];
    long off = 0, tried = 0;
    for (int generic = 0; generic < 2; generic++) {
        ops_force_generic(generic);
        uint64_t u = 0;
        while (u < 0x100000000ull) {
            int n = 0;
            for (; n < CHUNK && u < 0x100000000ull; n++, u += 1021) {
                uint32_t b = (uint32_t)u;
                memcpy(&x[n], &b, sizeof b);
            }
            ops_exp(y, x, n);
            for (int i = 0; i < n; i++)
                off += !same_float(ns_expf(x[i]), y[i]);
            tried += n;
        }
    }
    ops_force_generic(0);
    if (off)
        fprintf(stderr, "  ns_expf differs from the kernels' exp at %ld of %ld\n", off, tried);
    CHECK(off == 0 && tried > 8000000);
    /* and it is exp: within 2 ulp over the normal range */
    int bad = 0;
    for (float v = -86.0f; v < 88.0f; v += 0.01173f) {
        double r = exp((double)v), e = ns_expf(v);
        bad += fabs(e - r) > 2.5 * 0x1p-24 * r;
    }
    CHECK(bad == 0);
}

/* the other nsmath functions against libm's, to a few ulp */
static void test_nsmath_accuracy(void)
{
    int bad = 0;
    for (double v = 1e-300; v < 1e300; v *= 1.37)
        bad += fabs(ns_log(v) - log(v)) > 4e-16 * fabs(log(v)) + 1e-300;
    for (double v = -700; v < 700; v += 0.731)
        bad += fabs(ns_exp(v) - exp(v)) > 4e-16 * exp(v);
    for (double v = -3; v < 3; v += 0.000937)
        bad += fabs(ns_cospi(v) - cos(3.14159265358979323846 * v)) > 2e-15; /* pi v rounds */
    for (float v = -20; v < 20; v += 0.00371f)
        bad += fabsf(ns_tanhf(v) - (float)tanh(v)) > 2.5f * 0x1p-24f * fmaxf(fabsf((float)tanh(v)), 0x1p-10f);
    /* squaring doubles a relative error: n ulp at most */
    for (int n = 0; n < 2000; n++)
        bad += fabs(ns_powi(0.999, n) - pow(0.999, n)) > (n + 1) * 0x1p-52 * pow(0.999, n);
    CHECK(bad == 0);
    CHECK(isnan(ns_log(-1)) && ns_log(0) == -INFINITY && ns_exp(1000) == INFINITY &&
          ns_exp(-1000) == 0 && isnan(ns_tanhf(NAN)) && ns_tanhf(100) == 1.0f &&
          ns_expf(-100) == 0 && isnan(ns_expf(NAN)) && ns_cospi(1) == -1 && ns_powi(3, 0) == 1);
}

/* every test above, once per path */
static void run_kernel_suite(void)
{
    rng_seed(&R, 42); /* both paths see the same inputs */
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
    test_matmul_reference();
    test_matmul_deterministic();
    test_attention_reference();
    test_attention_causal_nan();
    test_attention_deterministic();
    test_gelu_reference();
    test_softmax_ce_reference();
    test_layernorm_reference();
    test_absmax_sizes();
    test_fused_matmul();
    test_matmul_dw_zero();
    test_any_nonfinite();
    test_sumsq();
    test_adamw();
    test_fused_gelu();
    test_fused_layernorm();
    test_residual();
    test_matmul_backward_set();
    test_layernorm_backward_watch();
    test_crossentropy_backward_set();
}

int main(void)
{
    printf("kernels: %s\n", ops_isa());
    run_kernel_suite();
    if (strcmp(ops_isa(), "generic")) {
        ops_force_generic(1);
        printf("kernels: %s\n", ops_isa());
        run_kernel_suite();
        ops_force_generic(0);
        test_db_paths_agree();
        test_sumsq_adamw_paths_agree();
        test_residual_paths_agree();
        test_builds_same_bits();
        test_expf_twin();
    }
    test_nsmath_accuracy();
    return test_summary();
}
