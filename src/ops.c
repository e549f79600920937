/* ops.c - forward and backward of each Transformer operation, in fp32.
 *
 * The hot kernels are written once (ops_kern.h) and built twice: over
 * AVX2+FMA registers (ops_avx2.c) and over plain C (ops_generic.c). Both
 * builds run the same IEEE 754 operations in the same order, so they give
 * the same bits, and so does every CPU: no hardware estimate (rcp,
 * rsqrt) and no libm routine that glibc picks per CPU (exp, log, pow,
 * tanh: nsmath.h has the project's own). Which build runs is chosen at
 * run time (ops_select_kernels, NORMSCOPE_KERNELS); the rest of this file
 * (the gemm's blocking, the norms without a vector kernel, the thread
 * splits) is shared by both. Nothing reassociates anything behind the
 * code's back (no -ffast-math, -ffp-contract=off): every sum has an order
 * written in the code, so the same inputs give the same bits on every run.
 *
 * The matmuls are one blocked gemm (below) with a register-tiled
 * micro-kernel of OPS_MR x OPS_NR outputs. Nothing here allocates: the
 * scratch is on the stack, fixed in size -- the gemm's packed panels
 * (64 KB + 48 KB) and the tiled attention's (at most 100 KB, in
 * ops_kern.h), one at a time.
 *
 * The _mt functions at the bottom split the work over a thread pool
 * (pool.c), and that must not change a bit of the results, so every
 * kernel is written so that each output element is summed in an order
 * that depends only on the problem's sizes, never on which rows or
 * columns a call covers:
 *  - gemm: each C[i][j] is one FMA chain over k in increasing order, cut
 *    into KC-long blocks that depend only on K and the operands' layout
 *    (each block's sum is added to C, the first block starts from the
 *    bias or, when accumulating, is added to the old C). Work may
 *    be split over row blocks of C (i) or column panels (j), never over k.
 *    For ops_matmul_forward and the dinp of ops_matmul_backward that is a split
 *    over the N rows or the output columns; for dw it is a split over the
 *    OC rows or C columns of dw, NOT over N (N is dw's sum).
 *  - db: each column sums its N rows in order: split over columns only.
 *  - attention: each (b, h) pair touches only its own slices of out, att
 *    and dqkv: split over (b, h) (the _mt functions split over b).
 *  - gelu, norms, softmax: rows (elements) are independent; elementwise
 *    kernels are cut at whole vectors so the tails are the same. The
 *    LayerNorm backward's dinp is split over rows; its dw and db, each
 *    column a sum over the rows in order, over columns (whole vectors).
 * The _mt functions split at those boundaries (row blocks at multiples of
 * OPS_MR, column panels at multiples of OPS_NR) and get the same bits as
 * one thread; tests/unit/test_threads.c checks it with memcmp.
 */
#include "ops.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "nsmath.h"
#include "ops_simd.h"
#include "sysdep.h"

/* ---- dispatch ----------------------------------------------------------- */

/* The chosen build: 0 not chosen yet, else 1 + OPS_KERNELS_*. Atomic, as
 * are the tests' override, so a reader on another thread is no data race;
 * every thread that chooses chooses the same. */
static atomic_int chosen, force_generic;

void ops_force_generic(int on)
{
    atomic_store_explicit(&force_generic, on != 0, memory_order_relaxed);
}

static int avx2_available(void)
{
#if NS_OPS_X86
    return sysdep_cpu_avx2_fma();
#else
    return 0;
#endif
}

int ops_select_kernels(const char *name)
{
    int k;
    if (!name || !*name)
        k = avx2_available() ? OPS_KERNELS_AVX2 : OPS_KERNELS_GENERIC;
    else if (!strcmp(name, "generic"))
        k = OPS_KERNELS_GENERIC;
    else if (!strcmp(name, "avx2"))
        k = OPS_KERNELS_AVX2;
    else
        return -1;
    if (k == OPS_KERNELS_AVX2 && !avx2_available())
        return -2;
    atomic_store_explicit(&chosen, 1 + k, memory_order_relaxed);
    return 0;
}

static const ops_kernels *kernels(void)
{
    int c = atomic_load_explicit(&chosen, memory_order_relaxed);
    if (!c) {
        /* not chosen by the program (a unit test): the environment, else
         * the CPU; a bad name here falls back to the CPU's choice, the
         * program itself refuses it (main.c) */
        if (ops_select_kernels(getenv("NORMSCOPE_KERNELS")) != 0)
            ops_select_kernels(NULL);
        c = atomic_load_explicit(&chosen, memory_order_relaxed);
    }
#if NS_OPS_X86
    if (c == 1 + OPS_KERNELS_AVX2 && !atomic_load_explicit(&force_generic, memory_order_relaxed))
        return &ops_kernels_avx2;
#endif
    return &ops_kernels_generic;
}

const char *ops_isa(void) { return kernels() == &ops_kernels_generic ? "generic" : "avx2+fma"; }

static inline int imin(int a, int b) { return a < b ? a : b; }

void ops_encoder_forward(float *out, const uint8_t *tokens, const float *wte, const float *wpe,
                     int B, int T, int C)
{
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            float *o = out + ((long)b * T + t) * C;
            const float *te = wte + (long)tokens[b * T + t] * C;
            const float *pe = wpe + (long)t * C;
            for (int i = 0; i < C; i++)
                o[i] = te[i] + pe[i];
        }
    }
}

void ops_encoder_backward(float *dwte, float *dwpe, const float *dout, const uint8_t *tokens,
                      int B, int T, int C)
{
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            const float *d = dout + ((long)b * T + t) * C;
            ops_axpy(dwte + (long)tokens[b * T + t] * C, 1.0f, d, C);
            ops_axpy(dwpe + (long)t * C, 1.0f, d, C);
        }
    }
}

/* max |x| over a run of values, kept as the largest so far and whether a
 * NaN was seen: the state ops_absmax keeps, so a kernel can take the
 * maximum of what it writes while it writes it */

void ops_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w,
                       const float *b, int N, int C, float eps)
{
    kernels()->layernorm_forward(out, mean, rstd, inp, w, b, N, C, eps, NULL);
}

float ops_layernorm_forward_absmax(float *out, float *mean, float *rstd, const float *inp,
                               const float *w, const float *b, int N, int C, float eps)
{
    float a = 0.0f;
    kernels()->layernorm_forward(out, mean, rstd, inp, w, b, N, C, eps, &a);
    return a;
}

/* dinp's rows, and dw and db's columns [c0, c1) summed over the rows in
 * order; dinp NULL: only dw and db, dw NULL: only dinp (see
 * ops_layernorm_backward_mt). Returns whether any of dinp is inf or NaN
 * afterwards (0 without dinp). */
static int ln_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                       const float *w, const float *mean, const float *rstd, int N, int C, int c0,
                       int c1)
{
    return kernels()->layernorm_backward(dinp, dw, db, dout, inp, w, mean, rstd, N, C, c0, c1);
}

void ops_layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                        const float *w, const float *mean, const float *rstd, int N, int C)
{
    ln_backward(dinp, dw, db, dout, inp, w, mean, rstd, N, C, 0, C);
}

int ops_layernorm_backward_watch(float *dinp, float *dw, float *db, const float *dout,
                             const float *inp, const float *w, const float *mean,
                             const float *rstd, int N, int C)
{
    return ln_backward(dinp, dw, db, dout, inp, w, mean, rstd, N, C, 0, C);
}

void ops_rmsnorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w,
                     int N, int C, float eps)
{
    for (int n = 0; n < N; n++) {
        const float *x = inp + (long)n * C;
        float *o = out + (long)n * C;
        float ss = 0.0f;
        for (int i = 0; i < C; i++)
            ss += x[i] * x[i];
        float s = 1.0f / sqrtf(ss / (float)C + eps);
        for (int i = 0; i < C; i++)
            o[i] = x[i] * s * w[i];
        mean[n] = 0.0f;
        rstd[n] = s;
    }
}

void ops_rmsnorm_backward(float *dinp, float *dw, const float *dout, const float *inp,
                      const float *w, const float *rstd, int N, int C)
{
    for (int n = 0; n < N; n++) {
        const float *x = inp + (long)n * C;
        const float *d = dout + (long)n * C;
        float *dx = dinp + (long)n * C;
        float s = rstd[n];
        /* xhat = x*s; dx = s * (dxhat - xhat * mean(dxhat * xhat)) */
        float dnorm_mean = 0.0f;
        for (int i = 0; i < C; i++)
            dnorm_mean += d[i] * w[i] * x[i] * s;
        dnorm_mean /= (float)C;
        for (int i = 0; i < C; i++) {
            float xhat = x[i] * s;
            dw[i] += xhat * d[i];
            dx[i] += s * (d[i] * w[i] - xhat * dnorm_mean);
        }
    }
}

void ops_dyt_forward(float *out, const float *inp, const float *w, const float *b, float a, int N,
                 int C)
{
    for (int n = 0; n < N; n++) {
        const float *x = inp + (long)n * C;
        float *o = out + (long)n * C;
        for (int i = 0; i < C; i++)
            o[i] = w[i] * ns_tanhf(a * x[i]) + b[i];
    }
}

void ops_dyt_backward(float *dinp, float *dw, float *db, float *da, const float *dout,
                  const float *inp, const float *w, float a, int N, int C)
{
    double dsum = 0.0;
    for (int n = 0; n < N; n++) {
        const float *x = inp + (long)n * C;
        const float *d = dout + (long)n * C;
        float *dx = dinp + (long)n * C;
        for (int i = 0; i < C; i++) {
            float t = ns_tanhf(a * x[i]);
            float g = d[i] * w[i] * (1.0f - t * t); /* d out / d (a x) */
            dw[i] += d[i] * t;
            db[i] += d[i];
            dx[i] += g * a;
            dsum += (double)g * x[i];
        }
    }
    *da += (float)dsum;
}


/* ---- gemm ---------------------------------------------------------------
 *
 * C (M x Nc, row stride ldc) = bias + A (M x K) B (K x Nc), or when
 * accumulate C += A B, with A(i, k) = a[i * rsa + k * csa] and
 * B(k, j) = b[k * rsb + j * csb], so one routine serves x W^T (forward),
 * dy W (dinp) and dy^T x (dw) with no transposed copy of an operand.
 * bias is per column and may be NULL (0).
 *
 * Blocking (Goto/BLIS): for each column block of NC and each depth block
 * of KC, B's block is packed into panels of OPS_NR columns (64 KB, in L2)
 * and swept by the micro-kernel over row blocks of MC rows of A (in L2),
 * each B panel (KC x 16 floats) staying in L1 across the row block. A is
 * read in place when its rows are contiguous in k (x, dy); dw's dy^T is
 * strided in k and is packed per row block first (gemm_pack_a).
 */
enum {
    GEMM_KC = 256,          /* depth of one pass; depends only on K (see top) */
    GEMM_MC = 144,          /* rows of A per sweep, a multiple of OPS_MR */
    GEMM_MC_PACKED = 96,    /* the same when A is packed ... */
    GEMM_KC_PACKED = 128,   /* ... with this depth: 48 KB of stack */
    GEMM_PANEL = 64 * 256,  /* floats of packed B: 64 KB of stack */
    GEMM_PF = 32,           /* rows ahead to prefetch when packing */
};

/* bp = B's kc x nc block as panels of kc x OPS_NR, zero past nc */
void ops_generic_pack_b(float *bp, const float *b, long rsb, long csb, int kc, int nc)
{
    if (csb == 1) {
        /* rows of B contiguous (w for dinp, x for dw): copy row by row, so
         * each source row is read once, in order; rows are rsb apart, which
         * the hardware prefetcher does not follow */
        for (int k = 0; k < kc; k++) {
            const float *src = b + k * rsb;
            for (int j = 0; j < nc; j += 16)
                __builtin_prefetch(src + GEMM_PF * rsb + j);
            int jr = 0;
            for (; jr + OPS_NR <= nc; jr += OPS_NR) /* a fixed size: moves, not rep movs */
                memcpy(bp + (long)jr * kc + k * OPS_NR, src + jr, sizeof(float) * OPS_NR);
            if (jr < nc) {
                float *d = bp + (long)jr * kc + k * OPS_NR;
                for (int j = 0; j < OPS_NR; j++)
                    d[j] = jr + j < nc ? src[jr + j] : 0.0f;
            }
        }
        return;
    }
    /* columns of B contiguous (a weight read as W^T): transpose */
    for (int jr = 0; jr < nc; jr += OPS_NR) {
        int nr = imin(OPS_NR, nc - jr);
        float *dst = bp + (long)jr * kc;
        for (int j = 0; j < OPS_NR; j++) {
            if (j < nr) {
                const float *src = b + (jr + j) * csb;
                for (int k = 0; k < kc; k++)
                    dst[k * OPS_NR + j] = src[k * rsb];
            } else {
                for (int k = 0; k < kc; k++)
                    dst[k * OPS_NR + j] = 0.0f;
            }
        }
    }
}

/* ap = A's mc x kc block as micro-panels (layout in ops_simd.h); rows
 * past mc repeat the panel's first row */
static void gemm_pack_a(float *ap, const float *a, long rsa, long csa, int mc, int kc)
{
    if (rsa == 1) {
        /* dw's dy^T: row k of the block is mc contiguous floats of dy; read
         * each once, in order, prefetching ahead (rows csa apart defeat
         * the hardware prefetcher and alias in the caches) */
        long ps = (long)kc * OPS_MR + OPS_APAD;
        for (int k = 0; k < kc; k++) {
            const float *src = a + k * csa;
            const float *pf = src + GEMM_PF * csa;
            for (int i = 0; i < mc; i += 16)
                __builtin_prefetch(pf + i);
            int ir = 0;
            for (; ir + OPS_MR <= mc; ir += OPS_MR)
                memcpy(ap + ir / OPS_MR * ps + k * OPS_MR, src + ir, sizeof(float) * OPS_MR);
            for (int i = 0; ir < mc && i < OPS_MR; i++)
                ap[ir / OPS_MR * ps + k * OPS_MR + i] = src[ir + (ir + i < mc ? i : 0)];
        }
        return;
    }
    for (int ir = 0; ir < mc; ir += OPS_MR) {
        int mr = imin(OPS_MR, mc - ir);
        const float *as = a + ir * rsa;
        float *dst = ap + ir / OPS_MR * ((long)kc * OPS_MR + OPS_APAD);
        for (int k = 0; k < kc; k++)
            for (int i = 0; i < OPS_MR; i++)
                dst[k * OPS_MR + i] = as[k * csa + (i < mr ? i : 0) * rsa];
    }
}

/* Columns of C per packed block of B (>= 64, a multiple of OPS_NR) */
static int gemm_nc(int K, long csa)
{
    int kc_max = imin(K, csa != 1 ? GEMM_KC_PACKED : GEMM_KC);
    return GEMM_PANEL / kc_max / OPS_NR * OPS_NR;
}

/* max |x| of the lanes a micro-kernel took in (ops_simd.h: 8 maxima, 8
 * NaN marks): NaN if a lane saw one. The lanes hold the maxima of parts
 * of the same values, so the fold is exact whatever the split. */
static float ops_amax_lanes(const float *lanes)
{
    float m = 0.0f;
    for (int i = 0; i < 8; i++) {
        uint32_t bad;
        memcpy(&bad, lanes + 8 + i, sizeof bad);
        if (bad)
            return NAN;
        m = lanes[i] > m ? lanes[i] : m;
    }
    return m;
}

/* C (M x Nc, row stride ldc) = or += A (M x K) B (K x Nc) (+ bias), A(i,
 * k) = a[i rsa + k csa], B(k, j) = b[k rsb + j csb]; accumulate 2: +=
 * onto a C of +0 that is not read (the micro-kernel's). With amax, *amax
 * takes in max |C| as written (ops_max_nan), from the micro-kernel's
 * registers on the last block of K. */
static void gemm(float *c, long ldc, int M, int Nc, int K, const float *a, long rsa, long csa,
                 const float *b, long rsb, long csb, const float *bias, int accumulate,
                 float *amax)
{
    if (M <= 0 || Nc <= 0)
        return;
    if (K <= 0) {
        for (int i = 0; i < M; i++)
            for (int j = 0; j < Nc; j++) {
                if (accumulate != 1) /* 2: C taken as +0, not read */
                    c[i * ldc + j] = !accumulate && bias ? bias[j] : 0.0f;
                if (amax)
                    *amax = ops_max_nan(*amax, fabsf(c[i * ldc + j]));
            }
        return;
    }
    _Alignas(32) float lanes[16] = {0};
    const ops_kernels *k = kernels();
#if NS_OPS_X86
    int simd = k == &ops_kernels_avx2;
#endif
    _Alignas(64) float bp[GEMM_PANEL];
    _Alignas(64) float ap[GEMM_MC_PACKED / OPS_MR * (GEMM_KC_PACKED * OPS_MR + OPS_APAD)];
    /* A's rows contiguous in k (x, dy): read in place, they stream well.
     * Strided in k (dw's dy^T): rows csa apart fall into a few L1 sets and
     * evict each other, so copy each block to contiguous panels first. */
    int pack_a = csa != 1;
    int MC = pack_a ? GEMM_MC_PACKED : GEMM_MC;
    int KC = pack_a ? GEMM_KC_PACKED : GEMM_KC;
    int NC = gemm_nc(K, csa);
    for (int jc = 0; jc < Nc; jc += NC) {
        int nc = imin(NC, Nc - jc);
        for (int pc = 0; pc < K; pc += KC) {
            int kc = imin(KC, K - pc);
            int acc = pc > 0 ? 1 : accumulate; /* 2 (C is +0) on the first block only */
#if NS_OPS_X86
            if (simd && (csb == 1 || rsb == 1))
                ops_avx2_gemm_pack_b(bp, b + pc * rsb + jc * csb, rsb, csb, kc, nc);
            else
#endif
                ops_generic_pack_b(bp, b + pc * rsb + jc * csb, rsb, csb, kc, nc);
            for (int ic = 0; ic < M; ic += MC) {
                int mc = imin(MC, M - ic);
                const float *ablk = a + ic * rsa + pc * csa;
                long ars = rsa, acs = csa, astep = OPS_MR * rsa;
                if (pack_a) {
#if NS_OPS_X86
                    if (simd && rsa == 1)
                        ops_avx2_gemm_pack_a(ap, ablk, csa, mc, kc);
                    else
#endif
                        gemm_pack_a(ap, ablk, rsa, csa, mc, kc);
                    ablk = ap, ars = 1, acs = OPS_MR, astep = (long)OPS_MR * kc + OPS_APAD;
                }
                for (int jr = 0; jr < nc; jr += OPS_NR) {
                    int nr = imin(OPS_NR, nc - jr);
                    const float *bias_j = !acc && bias ? bias + jc + jr : NULL;
                    const float *panel = bp + (long)jr * kc;
                    for (int ir = 0; ir < mc; ir += OPS_MR)
                        k->gemm_ukr(kc, ablk + ir / OPS_MR * astep, ars, acs, imin(OPS_MR, mc - ir), panel,
                            c + (ic + ir) * ldc + jc + jr, ldc, nr, bias_j, acc,
                            amax && pc + kc == K ? lanes : NULL);
                }
            }
        }
    }
    if (amax)
        *amax = ops_max_nan(*amax, ops_amax_lanes(lanes));
}


void ops_matmul_forward(float *out, const float *inp, const float *w, const float *b, int N, int C,
                    int OC)
{
    /* out (N, OC) = inp (N, C) @ W^T: B(k, j) = w[j * C + k] */
    gemm(out, OC, N, OC, C, inp, C, 1, w, 1, C, b, 0, NULL);
}

float ops_matmul_forward_absmax(float *out, const float *inp, const float *w, const float *b, int N,
                            int C, int OC)
{
    float m = 0.0f;
    gemm(out, OC, N, OC, C, inp, C, 1, w, 1, C, b, 0, &m);
    return m;
}


/* db (n) += column sums of d (N rows of n, row stride ld), each column
 * summed over the rows in order: the same bits for any split over columns */
static void colsum(float *db, const float *d, long ld, int N, int n)
{
    kernels()->colsum(db, d, ld, N, n);
}

/* ops_matmul_backward; flags MM_DINP_SET: dinp = dout @ w instead of += (each
 * element the same chain of products, started from 0 instead of added to
 * the old value); MM_DW_ZERO: dw's old value is taken as +0, unread (the
 * bits of += onto a zeroed dw) */
static void mm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                        const float *w, int N, int C, int OC, int flags)
{
    /* dinp (N, C) += dout (N, OC) @ w (OC, C) */
    if (dinp)
        gemm(dinp, C, N, C, OC, dout, OC, 1, w, C, 1, NULL, !(flags & MM_DINP_SET), NULL);
    /* dw (OC, C) += dout^T (OC, N) @ inp (N, C): A(j, n) = dout[n * OC + j] */
    gemm(dw, C, OC, C, N, dout, 1, OC, inp, C, 1, NULL, flags & MM_DW_ZERO ? 2 : 1, NULL);
    /* db (OC) += sum over n of dout, each column in order of n */
    if (db)
        colsum(db, dout, OC, N, OC);
}

void ops_matmul_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                     const float *w, int N, int C, int OC)
{
    mm_backward(dinp, dw, db, dout, inp, w, N, C, OC, 0);
}


/* ---- attention ---------------------------------------------------------- */

void ops_attention_forward(float *out, float *att, const float *qkv, int B, int T, int C, int NH)
{
    kernels()->attention_forward(out, att, qkv, B, T, C, NH);
}

void ops_attention_backward(float *dqkv, float *drow, const float *dout, const float *qkv,
                        const float *att, int B, int T, int C, int NH)
{
    (void)drow; /* the kernels keep their scratch on the stack (T <= OPS_ATT_TMAX) */
    kernels()->attention_backward(dqkv, dout, qkv, att, B, T, C, NH);
}

/* ---- GELU, softmax and cross-entropy ------------------------------------ */

void ops_gelu_forward(float *out, const float *inp, int n)
{
    kernels()->gelu_forward(out, NULL, inp, n, NULL);
}

float ops_gelu_forward_absmax(float *out, const float *inp, int n)
{
    float a = 0.0f;
    kernels()->gelu_forward(out, NULL, inp, n, &a);
    return a;
}

float ops_gelu_forward_grad_absmax(float *out, float *grad, const float *inp, int n)
{
    float a = 0.0f;
    kernels()->gelu_forward(out, grad, inp, n, &a);
    return a;
}

void ops_gelu_backward(float *dinp, const float *inp, const float *dout, int n)
{
    kernels()->gelu_backward(dinp, inp, dout, n, 0, 0);
}

int ops_gelu_backward_set(float *dinp, const float *inp, const float *dout, int n)
{
    return kernels()->gelu_backward(dinp, inp, dout, n, 1, 0);
}

int ops_gelu_backward_grad_set(float *dinp, const float *grad, const float *dout, int n)
{
    return kernels()->gelu_backward(dinp, grad, dout, n, 1, 1);
}

void ops_softmax_forward(float *probs, const float *logits, int N, int V)
{
    kernels()->softmax_forward(probs, logits, N, V);
}

void ops_crossentropy_forward_z(float *losses, float *logz, float *lmax, const float *logits,
                            const uint8_t *targets, int N, int V)
{
    const ops_kernels *k = kernels();
    for (int n = 0; n < N; n++) {
        const float *l = logits + (long)n * V;
        float mx;
        float s = k->sumexp(l, V, &mx); /* >= 1: the max's own term */
        double lse = ns_log((double)s) + mx;
        losses[n] = (float)(lse - l[targets[n]]);
        if (logz)
            logz[n] = (float)lse;
        if (lmax)
            lmax[n] = mx;
    }
}

void ops_crossentropy_forward(float *losses, const float *logits, const uint8_t *targets, int N,
                          int V)
{
    ops_crossentropy_forward_z(losses, NULL, NULL, logits, targets, N, V);
}

int ops_crossentropy_zloss_backward_set(float *dlogits, const float *probs, const float *logz,
                                    const uint8_t *targets, int N, int V, float scale, float z)
{
    int bad = 0;
    for (int n = 0; n < N; n++) {
        const float *p = probs + (long)n * V;
        float *d = dlogits + (long)n * V;
        float k = 1.0f + 2.0f * z * logz[n]; /* d (z lz^2) / d l_i = 2 z lz p_i */
        for (int i = 0; i < V; i++)
            d[i] = p[i] * k * scale;
        d[targets[n]] = (p[targets[n]] * k - 1.0f) * scale;
        bad = bad || ops_any_nonfinite(d, (size_t)V);
    }
    return bad;
}

int ops_crossentropy_softmax_backward_set(float *dlogits, const float *probs,
                                      const uint8_t *targets, int N, int V, float scale)
{
    int bad = 0;
    for (int n = 0; n < N; n++) {
        const float *p = probs + (long)n * V;
        float *d = dlogits + (long)n * V;
        for (int i = 0; i < V; i++)
            d[i] = p[i] * scale; /* (p - 0) * scale */
        d[targets[n]] = (p[targets[n]] - 1.0f) * scale;
        /* the row just written, while it is in the cache */
        bad = bad || ops_any_nonfinite(d, (size_t)V);
    }
    return bad;
}

void ops_crossentropy_softmax_backward(float *dlogits, const float *probs, const uint8_t *targets,
                                   int N, int V, float scale)
{
    for (int n = 0; n < N; n++) {
        const float *p = probs + (long)n * V;
        float *d = dlogits + (long)n * V;
        for (int i = 0; i < V; i++)
            d[i] += (p[i] - (i == targets[n] ? 1.0f : 0.0f)) * scale;
    }
}

void ops_axpy(float *restrict y, float a, const float *restrict x, int n)
{
    for (int i = 0; i < n; i++)
        y[i] += a * x[i];
}

float ops_absmax(const float *x, long n) { return kernels()->absmax(x, n); }

float ops_residual(float *out, const float *x, float a, const float *f, float g, long n)
{
    return kernels()->residual(out, x, a, f, g, n);
}

int ops_any_nonfinite(const float *x, size_t n) { return kernels()->any_nonfinite(x, n); }

double ops_sumsq(const float *x, size_t n) { return kernels()->sumsq(x, n); }

void ops_adamw(float *p, const float *g, float *m, float *v, size_t n, const ops_adamw_args *a,
               double sums[2])
{
    kernels()->adamw(p, g, m, v, n, a, sums);
}

void ops_exp(float *out, const float *x, long n) { kernels()->exp(out, x, n); }

/* ---- the same, split over a thread pool ---------------------------------
 *
 * Each split below follows the rules at the top of this file, so its bits
 * are those of the plain call. A problem smaller than these thresholds
 * stays on the caller: waking another core and sharing the cache lines of
 * the output costs a few microseconds. */
enum {
    MT_GEMM_MIN = 1 << 18,  /* multiply-adds of a gemm (~10 us) */
    MT_ELEM_MIN = 1 << 18,  /* elements of an elementwise op (15-150 us) */
    MT_ELEM_ALIGN = 64,     /* cuts of elementwise ops: whole vectors */
    MT_ROWS_MIN = 64,       /* rows of a row-wise op */
    MT_NORM_MIN = 1 << 15,  /* elements of a LayerNorm (a row pass or two: ~20 us) */
    MT_GEMM_PARTS = 8,      /* parts per thread of a big gemm, at most */
    MT_ELEM_PARTS = 4,      /* the same for an elementwise op */
    MT_ELEM_PART_MIN = 1 << 16, /* ... of at least this many elements */
};

typedef struct {
    float *c;
    long ldc;
    int M, Nc, K;
    const float *a;
    long rsa, csa;
    const float *b;
    long rsb, csb;
    const float *bias;
    int accumulate;
    int by_cols, parts, align;
    float *amax; /* with a maximum: one a part (NULL: none) */
} gemm_job;

/* one part of C: a row block (i0..i1) or a column block (j0..j1), cut at
 * multiples of the micro-tile so every element's FMA chain is unchanged */
static void gemm_task(void *ctx, int part, int thread)
{
    (void)thread;
    const gemm_job *g = ctx;
    int lo, hi;
    float *amax = g->amax ? g->amax + part : NULL;
    if (g->by_cols) {
        pool_split(g->Nc, g->parts, g->align, part, &lo, &hi);
        if (lo < hi)
            gemm(g->c + lo, g->ldc, g->M, hi - lo, g->K, g->a, g->rsa, g->csa, g->b + lo * g->csb,
                 g->rsb, g->csb, g->bias ? g->bias + lo : NULL, g->accumulate, amax);
    } else {
        pool_split(g->M, g->parts, OPS_MR, part, &lo, &hi);
        if (lo < hi)
            gemm(g->c + lo * g->ldc, g->ldc, hi - lo, g->Nc, g->K, g->a + lo * g->rsa, g->rsa,
                 g->csa, g->b, g->rsb, g->csb, g->bias, g->accumulate, amax);
    }
}

/* gemm over the pool; with amax, as gemm's (each part takes its own
 * maximum, folded after: the same value as one call's) */
static void gemm_mt(ns_pool *p, float *c, long ldc, int M, int Nc, int K, const float *a,
                    long rsa, long csa, const float *b, long rsb, long csb, const float *bias,
                    int accumulate, float *amax)
{
    int nt = pool_threads(p);
    if (nt == 1 || (double)M * Nc * K < MT_GEMM_MIN) {
        gemm(c, ldc, M, Nc, K, a, rsa, csa, b, rsb, csb, bias, accumulate, amax);
        return;
    }
    float part_max[MT_GEMM_PARTS * POOL_MAX_THREADS] = {0};
    /* Cut at the gemm's own blocks of NC columns, the parts do the same
     * work as one call (each block packs its B and, when A is strided,
     * repacks A anyway), so make several parts per thread: taken
     * first-come, they even out threads that run at different speeds. */
    int NC = gemm_nc(K, csa);
    int blocks = (Nc + NC - 1) / NC;
    gemm_job g = {c, ldc, M, Nc, K, a, rsa, csa, b, rsb, csb, bias, accumulate, 1, 0, NC,
                  amax ? part_max : NULL};
    if (blocks >= nt) {
        g.parts = imin(blocks, MT_GEMM_PARTS * nt);
    } else {
        /* Too few blocks: one part per thread, cut where the repeated
         * packing costs less. Cut by columns, each part re-reads A
         * (repacking it only when it is strided, dw's dy^T); cut by rows,
         * each part repacks all of B. */
        double a_cost = csa != 1 ? (double)M * K : 0.0, b_cost = (double)K * Nc;
        int col_units = (Nc + OPS_NR - 1) / OPS_NR, row_units = (M + OPS_MR - 1) / OPS_MR;
        g.by_cols = a_cost <= b_cost ? col_units >= nt || col_units >= row_units
                                     : !(row_units >= nt || row_units >= col_units);
        g.align = OPS_NR;
        g.parts = imin(nt, g.by_cols ? col_units : row_units);
    }
    pool_run(p, g.parts, gemm_task, &g);
    for (int i = 0; amax && i < g.parts; i++)
        *amax = ops_max_nan(*amax, part_max[i]);
}

void ops_matmul_forward_mt(ns_pool *p, float *out, const float *inp, const float *w, const float *b,
                       int N, int C, int OC)
{
    gemm_mt(p, out, OC, N, OC, C, inp, C, 1, w, 1, C, b, 0, NULL);
}

float ops_matmul_forward_absmax_mt(ns_pool *p, float *out, const float *inp, const float *w,
                               const float *b, int N, int C, int OC)
{
    float m = 0.0f;
    gemm_mt(p, out, OC, N, OC, C, inp, C, 1, w, 1, C, b, 0, &m);
    return m;
}

typedef struct {
    float *db;
    const float *dout;
    int N, OC, parts;
} colsum_job;

static void db_task(void *ctx, int part, int thread)
{
    (void)thread;
    const colsum_job *j = ctx;
    int lo, hi;
    pool_split(j->OC, j->parts, MT_ELEM_ALIGN, part, &lo, &hi);
    /* each column still sums its N rows in order */
    if (lo < hi)
        colsum(j->db + lo, j->dout + lo, j->OC, j->N, hi - lo);
}

static void mm_backward_mt(ns_pool *p, float *dinp, float *dw, float *db, const float *dout,
                           const float *inp, const float *w, int N, int C, int OC, int flags)
{
    if (pool_threads(p) == 1) {
        mm_backward(dinp, dw, db, dout, inp, w, N, C, OC, flags);
        return;
    }
    if (dinp)
        gemm_mt(p, dinp, C, N, C, OC, dout, OC, 1, w, C, 1, NULL, !(flags & MM_DINP_SET), NULL);
    gemm_mt(p, dw, C, OC, C, N, dout, 1, OC, inp, C, 1, NULL, flags & MM_DW_ZERO ? 2 : 1, NULL);
    if (db) {
        int units = (OC + MT_ELEM_ALIGN - 1) / MT_ELEM_ALIGN;
        int parts = (long)N * OC < MT_ELEM_MIN ? 1 : imin(pool_threads(p), units);
        colsum_job j = {db, dout, N, OC, parts};
        pool_run(p, parts, db_task, &j);
    }
}

void ops_matmul_backward_mt(ns_pool *p, float *dinp, float *dw, float *db, const float *dout,
                        const float *inp, const float *w, int N, int C, int OC)
{
    mm_backward_mt(p, dinp, dw, db, dout, inp, w, N, C, OC, 0);
}

void ops_matmul_backward_set_mt(ns_pool *p, float *dinp, float *dw, float *db, const float *dout,
                            const float *inp, const float *w, int N, int C, int OC)
{
    mm_backward_mt(p, dinp, dw, db, dout, inp, w, N, C, OC, MM_DINP_SET);
}

void ops_matmul_backward_flags_mt(ns_pool *p, float *dinp, float *dw, float *db, const float *dout,
                              const float *inp, const float *w, int N, int C, int OC, int flags)
{
    mm_backward_mt(p, dinp, dw, db, dout, inp, w, N, C, OC, flags);
}

/* attention: one task per sequence b, which touches only its own slices
 * of out, att and dqkv (its heads stay together: the kernels loop over
 * them inside) */
typedef struct {
    float *out, *att, *dqkv, *drow;
    const float *qkv, *dout;
    const float *att_c;
    int T, C, NH;
} att_job;

static void att_fwd_task(void *ctx, int b, int thread)
{
    (void)thread;
    const att_job *j = ctx;
    long T = j->T, C = j->C;
    ops_attention_forward(j->out + b * T * C, j->att + b * j->NH * T * T, j->qkv + b * T * 3 * C, 1,
                      j->T, j->C, j->NH);
}

void ops_attention_forward_mt(ns_pool *p, float *out, float *att, const float *qkv, int B, int T,
                          int C, int NH)
{
    if (pool_threads(p) == 1 || B == 1 || (double)B * T * T * C < MT_GEMM_MIN) {
        ops_attention_forward(out, att, qkv, B, T, C, NH);
        return;
    }
    att_job j = {out, att, NULL, NULL, qkv, NULL, NULL, T, C, NH};
    pool_run(p, B, att_fwd_task, &j);
}

static void att_bwd_task(void *ctx, int b, int thread)
{
    (void)thread;
    const att_job *j = ctx;
    long T = j->T, C = j->C;
    ops_attention_backward(j->dqkv + b * T * 3 * C, NULL, j->dout + b * T * C, j->qkv + b * T * 3 * C,
                       j->att_c + b * j->NH * T * T, 1, j->T, j->C, j->NH);
}

void ops_attention_backward_mt(ns_pool *p, float *dqkv, float *drow, const float *dout,
                           const float *qkv, const float *att, int B, int T, int C, int NH)
{
    if (pool_threads(p) == 1 || B == 1 || (double)B * T * T * C < MT_GEMM_MIN) {
        ops_attention_backward(dqkv, drow, dout, qkv, att, B, T, C, NH);
        return;
    }
    att_job j = {NULL, NULL, dqkv, drow, qkv, dout, att, T, C, NH};
    pool_run(p, B, att_bwd_task, &j);
}

/* elementwise ops: contiguous parts cut at whole vectors, so every element
 * takes the path (vector body or scalar tail) it takes in one call */
typedef struct {
    float *out;
    const float *in, *in2;
    float a, g;   /* the residual's scales */
    long n;
    int parts;
    float *grad;  /* gelu forward: gelu'(in) goes here too (NULL: not kept) */
    int want_max; /* res[part] = max |out| of the part */
    int set;      /* gelu backward: dinp = (else +=) */
    int is_grad;  /* gelu backward: in holds gelu'(x), not x */
    float res[MT_ELEM_PARTS * POOL_MAX_THREADS];
    int bad[MT_ELEM_PARTS * POOL_MAX_THREADS];
} elem_job;

static int elem_parts(ns_pool *p, long n)
{
    if (n < MT_ELEM_MIN || pool_threads(p) == 1)
        return 1;
    long parts = n / MT_ELEM_PART_MIN, most = (long)MT_ELEM_PARTS * pool_threads(p);
    parts = parts < pool_threads(p) ? pool_threads(p) : parts > most ? most : parts;
    return (int)parts;
}

static void elem_range(const elem_job *j, int part, long *lo, long *hi)
{
    long units = (j->n + MT_ELEM_ALIGN - 1) / MT_ELEM_ALIGN;
    long a = units * part / j->parts * MT_ELEM_ALIGN;
    long b = units * (part + 1) / j->parts * MT_ELEM_ALIGN;
    *lo = a < j->n ? a : j->n;
    *hi = b < j->n ? b : j->n;
}

/* the maximum of n parts' maxima: exact whatever the grouping; a NaN
 * anywhere wins */
static float max_of_parts(const float *res, int n)
{
    float m = 0.0f;
    for (int i = 0; i < n; i++) {
        if (res[i] != res[i])
            return NAN;
        m = res[i] > m ? res[i] : m;
    }
    return m;
}

static int any_of_parts(const int *bad, int n)
{
    int any = 0;
    for (int i = 0; i < n; i++)
        any |= bad[i];
    return any;
}

static void gelu_fwd_task(void *ctx, int part, int thread)
{
    (void)thread;
    elem_job *j = ctx;
    long lo, hi;
    elem_range(j, part, &lo, &hi);
    kernels()->gelu_forward(j->out + lo, j->grad ? j->grad + lo : NULL, j->in + lo, (int)(hi - lo),
                            j->want_max ? &j->res[part] : NULL);
}

void ops_gelu_forward_mt(ns_pool *p, float *out, const float *inp, int n)
{
    elem_job j = {.out = out, .in = inp, .n = n, .parts = elem_parts(p, n)};
    pool_run(p, j.parts, gelu_fwd_task, &j);
}

float ops_gelu_forward_absmax_mt(ns_pool *p, float *out, const float *inp, int n)
{
    return ops_gelu_forward_grad_absmax_mt(p, out, NULL, inp, n);
}

float ops_gelu_forward_grad_absmax_mt(ns_pool *p, float *out, float *grad, const float *inp, int n)
{
    elem_job j = {.out = out, .grad = grad, .in = inp, .n = n, .parts = elem_parts(p, n),
                  .want_max = 1};
    pool_run(p, j.parts, gelu_fwd_task, &j);
    return max_of_parts(j.res, j.parts);
}

static void gelu_bwd_task(void *ctx, int part, int thread)
{
    (void)thread;
    elem_job *j = ctx;
    long lo, hi;
    elem_range(j, part, &lo, &hi);
    j->bad[part] = kernels()->gelu_backward(j->out + lo, j->in + lo, j->in2 + lo, (int)(hi - lo),
                                            j->set, j->is_grad);
}

void ops_gelu_backward_mt(ns_pool *p, float *dinp, const float *inp, const float *dout, int n)
{
    elem_job j = {.out = dinp, .in = inp, .in2 = dout, .n = n, .parts = elem_parts(p, n)};
    pool_run(p, j.parts, gelu_bwd_task, &j);
}

int ops_gelu_backward_set_mt(ns_pool *p, float *dinp, const float *inp, const float *dout, int n)
{
    elem_job j = {.out = dinp, .in = inp, .in2 = dout, .n = n, .parts = elem_parts(p, n), .set = 1};
    pool_run(p, j.parts, gelu_bwd_task, &j);
    return any_of_parts(j.bad, j.parts);
}

int ops_gelu_backward_grad_set_mt(ns_pool *p, float *dinp, const float *grad, const float *dout,
                              int n)
{
    elem_job j = {.out = dinp, .in = grad, .in2 = dout, .n = n, .parts = elem_parts(p, n),
                  .set = 1, .is_grad = 1};
    pool_run(p, j.parts, gelu_bwd_task, &j);
    return any_of_parts(j.bad, j.parts);
}

static void residual_task(void *ctx, int part, int thread)
{
    (void)thread;
    elem_job *j = ctx;
    long lo, hi;
    elem_range(j, part, &lo, &hi);
    j->res[part] = ops_residual(j->out + lo, j->in + lo, j->a, j->in2 + lo, j->g, hi - lo);
}

float ops_residual_mt(ns_pool *p, float *out, const float *x, float a, const float *f, float g,
                      long n)
{
    elem_job j = {.out = out, .in = x, .in2 = f, .a = a, .g = g, .n = n,
                  .parts = elem_parts(p, n)};
    if (j.parts == 1)
        return ops_residual(out, x, a, f, g, n);
    pool_run(p, j.parts, residual_task, &j);
    return max_of_parts(j.res, j.parts);
}

static void absmax_task(void *ctx, int part, int thread)
{
    (void)thread;
    elem_job *j = ctx;
    long lo, hi;
    elem_range(j, part, &lo, &hi);
    j->res[part] = ops_absmax(j->in + lo, hi - lo);
}

float ops_absmax_mt(ns_pool *p, const float *x, long n)
{
    elem_job j = {.in = x, .n = n, .parts = elem_parts(p, n)};
    if (j.parts == 1)
        return ops_absmax(x, n);
    pool_run(p, j.parts, absmax_task, &j);
    return max_of_parts(j.res, j.parts);
}

typedef struct {
    float *out, *mean, *rstd;
    const float *inp, *w, *b;
    int N, C, parts;
    float eps;
    int want_max; /* amax[part] = max |out| of the part's rows */
    float amax[POOL_MAX_THREADS];
} ln_job;

static void ln_fwd_task(void *ctx, int part, int thread)
{
    (void)thread;
    ln_job *j = ctx;
    int lo, hi;
    pool_split(j->N, j->parts, 1, part, &lo, &hi);
    long o = (long)lo * j->C;
    j->amax[part] = 0.0f; /* no rows: nothing to take the maximum of */
    kernels()->layernorm_forward(j->out + o, j->mean + lo, j->rstd + lo, j->inp + o, j->w, j->b, hi - lo, j->C,
               j->eps, j->want_max && lo < hi ? &j->amax[part] : NULL);
}

/* rows are independent in the forward (the backward sums dw and db over
 * rows, so it stays whole) */
static float ln_forward_mt(ns_pool *p, float *out, float *mean, float *rstd, const float *inp,
                           const float *w, const float *b, int N, int C, float eps, int want_max)
{
    int parts = (long)N * C < MT_NORM_MIN || N < MT_ROWS_MIN ? 1 : imin(pool_threads(p), N);
    ln_job j = {out, mean, rstd, inp, w, b, N, C, parts, eps, want_max, {0}};
    pool_run(p, parts, ln_fwd_task, &j);
    return max_of_parts(j.amax, parts);
}

void ops_layernorm_forward_mt(ns_pool *p, float *out, float *mean, float *rstd, const float *inp,
                          const float *w, const float *b, int N, int C, float eps)
{
    ln_forward_mt(p, out, mean, rstd, inp, w, b, N, C, eps, 0);
}

float ops_layernorm_forward_absmax_mt(ns_pool *p, float *out, float *mean, float *rstd,
                                  const float *inp, const float *w, const float *b, int N, int C,
                                  float eps)
{
    return ln_forward_mt(p, out, mean, rstd, inp, w, b, N, C, eps, 1);
}

typedef struct {
    float *dinp, *dw, *db;
    const float *dout, *inp, *w, *mean, *rstd;
    int N, C, parts; /* of each kind */
    int bad[POOL_MAX_THREADS]; /* of the dinp parts */
} ln_bwd_job;

/* tasks 0..parts-1: dinp by rows; parts..2 parts-1: dw and db by columns
 * (whole vectors of 8), each column over all the rows in order */
static void ln_bwd_task(void *ctx, int task, int thread)
{
    (void)thread;
    ln_bwd_job *j = ctx;
    int lo, hi;
    if (task < j->parts) {
        pool_split(j->N, j->parts, 1, task, &lo, &hi);
        long o = (long)lo * j->C;
        j->bad[task] = ln_backward(j->dinp + o, NULL, NULL, j->dout + o, j->inp + o, j->w, j->mean + lo,
                    j->rstd + lo, hi - lo, j->C, 0, j->C);
    } else {
        pool_split(j->C, j->parts, 8, task - j->parts, &lo, &hi);
        if (lo < hi)
            ln_backward(NULL, j->dw, j->db, j->dout, j->inp, j->w, j->mean, j->rstd, j->N, j->C,
                        lo, hi);
    }
}

int ops_layernorm_backward_watch_mt(ns_pool *p, float *dinp, float *dw, float *db,
                                const float *dout, const float *inp, const float *w,
                                const float *mean, const float *rstd, int N, int C)
{
    int parts = (long)N * C < MT_NORM_MIN || N < MT_ROWS_MIN ? 1 : pool_threads(p);
    if (parts == 1)
        return ops_layernorm_backward_watch(dinp, dw, db, dout, inp, w, mean, rstd, N, C);
    ln_bwd_job j = {dinp, dw, db, dout, inp, w, mean, rstd, N, C, parts, {0}};
    pool_run(p, 2 * parts, ln_bwd_task, &j);
    return any_of_parts(j.bad, parts);
}

void ops_layernorm_backward_mt(ns_pool *p, float *dinp, float *dw, float *db, const float *dout,
                           const float *inp, const float *w, const float *mean, const float *rstd,
                           int N, int C)
{
    ops_layernorm_backward_watch_mt(p, dinp, dw, db, dout, inp, w, mean, rstd, N, C);
}
