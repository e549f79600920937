/* ops.c - forward and backward of each Transformer operation, in fp32.
 *
 * Two implementations of the hot kernels, chosen per call at run time:
 * the x86 AVX2+FMA ones of ops_avx2.c when the CPU has both features, and
 * the portable C here otherwise (any CPU, any compiler; GCC's -O2
 * vectorizer does what it can with it). ops_force_generic() makes tests
 * take the portable path on an AVX2 machine too. Neither reassociates
 * anything behind the code's back (no -ffast-math): every sum has an
 * order written in the code, so the same inputs give the same bits on
 * every run. The two paths agree to rounding (FMA vs multiply-then-add),
 * not bit for bit.
 *
 * The matmuls are one blocked gemm (below) with a register-tiled
 * micro-kernel of OPS_MR x OPS_NR outputs. Nothing here allocates: the
 * scratch is on the stack, fixed in size -- the gemm's packed panels
 * (64 KB + 48 KB) and the tiled attention's (at most 100 KB, in
 * ops_avx2.c), one at a time.
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
 *    For matmul_forward and the dinp of matmul_backward that is a split
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
 * one thread; tests/test_threads.c checks it with memcmp.
 */
#include "ops.h"

#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "ops_simd.h"

/* ---- dispatch ----------------------------------------------------------- */

/* Set only by tests (ops_force_generic); atomic so a reader on another
 * thread is not a data race. */
static atomic_int force_generic;

void ops_force_generic(int on)
{
    atomic_store_explicit(&force_generic, on != 0, memory_order_relaxed);
}

static int use_avx2(void)
{
#if NS_OPS_X86
    return !atomic_load_explicit(&force_generic, memory_order_relaxed) &&
           __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return 0;
#endif
}

const char *ops_isa(void) { return use_avx2() ? "avx2+fma" : "generic"; }

static inline int imin(int a, int b) { return a < b ? a : b; }

void encoder_forward(float *out, const uint8_t *tokens, const float *wte, const float *wpe,
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

void encoder_backward(float *dwte, float *dwpe, const float *dout, const uint8_t *tokens,
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
typedef struct {
    float m;
    int nan;
} absmax_acc;

static inline void absmax_add(absmax_acc *a, float x)
{
    float v = fabsf(x);
    a->nan |= v != v;
    a->m = v > a->m ? v : a->m;
}

static inline float absmax_result(absmax_acc a) { return a.nan ? NAN : a.m; }

/* layernorm_forward; with amax, *amax = max |out| (NaN if any is NaN) */
static void ln_forward(float *out, float *mean, float *rstd, const float *inp, const float *w,
                       const float *b, int N, int C, float eps, float *amax)
{
#if NS_OPS_X86
    if (use_avx2()) {
        ops_avx2_layernorm_forward(out, mean, rstd, inp, w, b, N, C, eps, amax);
        return;
    }
#endif
    absmax_acc acc = {0.0f, 0};
    for (int n = 0; n < N; n++) {
        const float *x = inp + (long)n * C;
        float *o = out + (long)n * C;
        float m = 0.0f;
        for (int i = 0; i < C; i++)
            m += x[i];
        m /= (float)C;
        float v = 0.0f;
        for (int i = 0; i < C; i++) {
            float d = x[i] - m;
            v += d * d;
        }
        v /= (float)C;
        float s = 1.0f / sqrtf(v + eps);
        for (int i = 0; i < C; i++)
            o[i] = (x[i] - m) * s * w[i] + b[i];
        if (amax)
            for (int i = 0; i < C; i++)
                absmax_add(&acc, o[i]);
        mean[n] = m;
        rstd[n] = s;
    }
    if (amax)
        *amax = absmax_result(acc);
}

void layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w,
                       const float *b, int N, int C, float eps)
{
    ln_forward(out, mean, rstd, inp, w, b, N, C, eps, NULL);
}

float layernorm_forward_absmax(float *out, float *mean, float *rstd, const float *inp,
                               const float *w, const float *b, int N, int C, float eps)
{
    float a = 0.0f;
    ln_forward(out, mean, rstd, inp, w, b, N, C, eps, &a);
    return a;
}

/* dinp's rows, and dw and db's columns [c0, c1) summed over the rows in
 * order; dinp NULL: only dw and db, dw NULL: only dinp (see
 * layernorm_backward_mt). Returns whether any of dinp is inf or NaN
 * afterwards (0 without dinp). */
static int ln_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                       const float *w, const float *mean, const float *rstd, int N, int C, int c0,
                       int c1)
{
#if NS_OPS_X86
    if (use_avx2())
        return ops_avx2_layernorm_backward(dinp, dw, db, dout, inp, w, mean, rstd, N, C, c0, c1);
#endif
    int bad = 0;
    if (dinp)
        c0 = 0, c1 = C;
    for (int n = 0; n < N; n++) {
        const float *x = inp + (long)n * C;
        const float *d = dout + (long)n * C;
        float m = mean[n], s = rstd[n];
        /* dxhat = d * w; dx = s * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)) */
        float dmean = 0.0f, dnorm_mean = 0.0f;
        if (dinp) {
            for (int i = 0; i < C; i++) {
                float xhat = (x[i] - m) * s;
                float dxhat = d[i] * w[i];
                dmean += dxhat;
                dnorm_mean += dxhat * xhat;
            }
            dmean /= (float)C;
            dnorm_mean /= (float)C;
        }
        for (int i = c0; i < c1; i++) {
            float xhat = (x[i] - m) * s;
            if (dw) {
                db[i] += d[i];
                dw[i] += xhat * d[i];
            }
            if (dinp) {
                float dxhat = d[i] * w[i];
                dinp[(long)n * C + i] += s * (dxhat - dmean - xhat * dnorm_mean);
            }
        }
        /* the row just written, while it is in the cache */
        bad = bad || (dinp && ops_any_nonfinite(dinp + (long)n * C, (size_t)C));
    }
    return bad;
}

void layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                        const float *w, const float *mean, const float *rstd, int N, int C)
{
    ln_backward(dinp, dw, db, dout, inp, w, mean, rstd, N, C, 0, C);
}

int layernorm_backward_watch(float *dinp, float *dw, float *db, const float *dout,
                             const float *inp, const float *w, const float *mean,
                             const float *rstd, int N, int C)
{
    return ln_backward(dinp, dw, db, dout, inp, w, mean, rstd, N, C, 0, C);
}

void rmsnorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w,
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

void rmsnorm_backward(float *dinp, float *dw, const float *dout, const float *inp,
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

void dyt_forward(float *out, const float *inp, const float *w, const float *b, float a, int N,
                 int C)
{
    for (int n = 0; n < N; n++) {
        const float *x = inp + (long)n * C;
        float *o = out + (long)n * C;
        for (int i = 0; i < C; i++)
            o[i] = w[i] * tanhf(a * x[i]) + b[i];
    }
}

void dyt_backward(float *dinp, float *dw, float *db, float *da, const float *dout,
                  const float *inp, const float *w, float a, int N, int C)
{
    double dsum = 0.0;
    for (int n = 0; n < N; n++) {
        const float *x = inp + (long)n * C;
        const float *d = dout + (long)n * C;
        float *dx = dinp + (long)n * C;
        for (int i = 0; i < C; i++) {
            float t = tanhf(a * x[i]);
            float g = d[i] * w[i] * (1.0f - t * t); /* d out / d (a x) */
            dw[i] += d[i] * t;
            db[i] += d[i];
            dx[i] += g * a;
            dsum += (double)g * x[i];
        }
    }
    *da += (float)dsum;
}

/* Dot product with 8 independent partial sums: a fixed summation order
 * (so results do not depend on the compiler) that still pipelines. */
static inline float dot8(const float *a, const float *b, int n)
{
    float acc[8] = {0};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++)
            acc[k] += a[i + k] * b[i + k];
    float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    for (; i < n; i++)
        s += a[i] * b[i];
    return s;
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

typedef void (*gemm_ukr_fn)(int kc, const float *a, long rsa, long csa, int mr, const float *bp,
                            float *c, long ldc, int nr, const float *bias, int accumulate);

/* The portable micro-kernel: the same contract and the same order of
 * terms as ops_avx2_gemm_ukr (ops_simd.h), with a multiply and an add
 * per term. It works on half the tile's columns at a time: 6 x 8
 * accumulators, as 12 vectors of 4 with GCC's or clang's vector types
 * (SSE2 on any x86-64, NEON on arm64, scalar code elsewhere), which fit in
 * 16 registers; other compilers get the same loops on plain floats. */
#if defined(__GNUC__) || defined(__clang__)
typedef float v4f __attribute__((vector_size(16)));
#else
typedef struct {
    float v[4];
} v4f;
#endif

static inline v4f v4_load(const float *p)
{
    v4f r;
    memcpy(&r, p, sizeof r);
    return r;
}

static inline v4f v4_muladd(v4f acc, float a, v4f b)
{
#if defined(__GNUC__) || defined(__clang__)
    return acc + a * b;
#else
    for (int i = 0; i < 4; i++)
        acc.v[i] += a * b.v[i];
    return acc;
#endif
}

static void gemm_ukr_generic(int kc, const float *a, long rsa, long csa, int mr, const float *bp,
                             float *c, long ldc, int nr, const float *bias, int accumulate)
{
    const float *ar[OPS_MR];
    for (int i = 0; i < OPS_MR; i++)
        ar[i] = a + (i < mr ? i : 0) * rsa; /* rows past mr: computed, not stored */
    for (int h = 0; h < nr; h += 8) {
        float init[8] = {0};
        for (int j = 0; j < 8 && h + j < nr; j++)
            init[j] = !accumulate && bias ? bias[h + j] : 0.0f;
        v4f acc[OPS_MR][2];
        for (int i = 0; i < OPS_MR; i++)
            acc[i][0] = v4_load(init), acc[i][1] = v4_load(init + 4);
        for (int k = 0; k < kc; k++) {
            v4f b0 = v4_load(bp + k * OPS_NR + h), b1 = v4_load(bp + k * OPS_NR + h + 4);
#pragma GCC unroll 6
            for (int i = 0; i < OPS_MR; i++) {
                float av = ar[i][k * csa];
                acc[i][0] = v4_muladd(acc[i][0], av, b0);
                acc[i][1] = v4_muladd(acc[i][1], av, b1);
            }
        }
        for (int i = 0; i < mr; i++) {
            float out[8];
            memcpy(out, &acc[i][0], sizeof acc[i][0]);
            memcpy(out + 4, &acc[i][1], sizeof acc[i][1]);
            for (int j = 0; j < 8 && h + j < nr; j++)
                c[i * ldc + h + j] = accumulate ? c[i * ldc + h + j] + out[j] : out[j];
        }
    }
}

/* bp = B's kc x nc block as panels of kc x OPS_NR, zero past nc */
static void gemm_pack_b(float *bp, const float *b, long rsb, long csb, int kc, int nc)
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

static void gemm(float *c, long ldc, int M, int Nc, int K, const float *a, long rsa, long csa,
                 const float *b, long rsb, long csb, const float *bias, int accumulate)
{
    if (M <= 0 || Nc <= 0)
        return;
    if (K <= 0) {
        if (!accumulate)
            for (int i = 0; i < M; i++)
                for (int j = 0; j < Nc; j++)
                    c[i * ldc + j] = bias ? bias[j] : 0.0f;
        return;
    }
#if NS_OPS_X86
    int simd = use_avx2();
    gemm_ukr_fn ukr = simd ? ops_avx2_gemm_ukr : gemm_ukr_generic;
#else
    gemm_ukr_fn ukr = gemm_ukr_generic;
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
            int acc = accumulate || pc > 0;
#if NS_OPS_X86
            if (simd && (csb == 1 || rsb == 1))
                ops_avx2_gemm_pack_b(bp, b + pc * rsb + jc * csb, rsb, csb, kc, nc);
            else
#endif
                gemm_pack_b(bp, b + pc * rsb + jc * csb, rsb, csb, kc, nc);
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
                        ukr(kc, ablk + ir / OPS_MR * astep, ars, acs, imin(OPS_MR, mc - ir), panel,
                            c + (ic + ir) * ldc + jc + jr, ldc, nr, bias_j, acc);
                }
            }
        }
    }
}

void matmul_forward(float *out, const float *inp, const float *w, const float *b, int N, int C,
                    int OC)
{
    /* out (N, OC) = inp (N, C) @ W^T: B(k, j) = w[j * C + k] */
    gemm(out, OC, N, OC, C, inp, C, 1, w, 1, C, b, 0);
}

/* db (n) += column sums of d (N rows of n, row stride ld), each column
 * summed over the rows in order with plain adds: the same bits on both
 * paths, and for any split over columns */
static void colsum(float *db, const float *d, long ld, int N, int n)
{
#if NS_OPS_X86
    if (use_avx2()) {
        ops_avx2_colsum(db, d, ld, N, n);
        return;
    }
#endif
    enum { CHUNK = 256 };
    float acc[CHUNK];
    for (int j0 = 0; j0 < n; j0 += CHUNK) {
        int nj = imin(CHUNK, n - j0);
        memset(acc, 0, sizeof acc);
        for (int r = 0; r < N; r++) {
            const float *row = d + r * ld + j0;
            for (int j = 0; j < nj; j++)
                acc[j] += row[j];
        }
        for (int j = 0; j < nj; j++)
            db[j0 + j] += acc[j];
    }
}

/* matmul_backward; set: dinp = dout @ w instead of += (each element the
 * same chain of products, started from 0 instead of added to the old
 * value) */
static void mm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                        const float *w, int N, int C, int OC, int set)
{
    /* dinp (N, C) += dout (N, OC) @ w (OC, C) */
    if (dinp)
        gemm(dinp, C, N, C, OC, dout, OC, 1, w, C, 1, NULL, !set);
    /* dw (OC, C) += dout^T (OC, N) @ inp (N, C): A(j, n) = dout[n * OC + j] */
    gemm(dw, C, OC, C, N, dout, 1, OC, inp, C, 1, NULL, 1);
    /* db (OC) += sum over n of dout, each column in order of n */
    if (db)
        colsum(db, dout, OC, N, OC);
}

void matmul_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                     const float *w, int N, int C, int OC)
{
    mm_backward(dinp, dw, db, dout, inp, w, N, C, OC, 0);
}

/* ---- attention ---------------------------------------------------------- */

static void attention_forward_generic(float *out, float *att, const float *qkv, int B, int T, int C,
                                      int NH)
{
    int hs = C / NH;
    float scale = 1.0f / sqrtf((float)hs);
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < NH; h++) {
            for (int t = 0; t < T; t++) {
                const float *q = qkv + ((long)b * T + t) * 3 * C + h * hs;
                float *a = att + (((long)b * NH + h) * T + t) * T;
                float maxv = -INFINITY;
                for (int t2 = 0; t2 <= t; t2++) {
                    const float *k = qkv + ((long)b * T + t2) * 3 * C + C + h * hs;
                    float s = dot8(q, k, hs) * scale;
                    a[t2] = s;
                    if (s > maxv)
                        maxv = s;
                }
                float sum = 0.0f;
                for (int t2 = 0; t2 <= t; t2++) {
                    float e = expf(a[t2] - maxv);
                    a[t2] = e;
                    sum += e;
                }
                float inv = 1.0f / sum;
                float *o = out + ((long)b * T + t) * C + h * hs;
                memset(o, 0, sizeof(float) * hs);
                for (int t2 = 0; t2 <= t; t2++) {
                    a[t2] *= inv;
                    const float *v = qkv + ((long)b * T + t2) * 3 * C + 2 * C + h * hs;
                    ops_axpy(o, a[t2], v, hs);
                }
            }
        }
    }
}

void attention_forward(float *out, float *att, const float *qkv, int B, int T, int C, int NH)
{
#if NS_OPS_X86
    if (use_avx2()) {
        ops_avx2_attention_forward(out, att, qkv, B, T, C, NH);
        return;
    }
#endif
    attention_forward_generic(out, att, qkv, B, T, C, NH);
}

static void attention_backward_generic(float *dqkv, float *drow, const float *dout,
                                       const float *qkv, const float *att, int B, int T, int C,
                                       int NH)
{
    int hs = C / NH;
    float scale = 1.0f / sqrtf((float)hs);
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < NH; h++) {
            for (int t = 0; t < T; t++) {
                const float *a = att + (((long)b * NH + h) * T + t) * T;
                const float *dy = dout + ((long)b * T + t) * C + h * hs;
                const float *q = qkv + ((long)b * T + t) * 3 * C + h * hs;
                float *dq = dqkv + ((long)b * T + t) * 3 * C + h * hs;
                /* datt[t2] = dy . v[t2]; dv[t2] += a[t2] * dy */
                float dsum = 0.0f;
                for (int t2 = 0; t2 <= t; t2++) {
                    long row = ((long)b * T + t2) * 3 * C;
                    drow[t2] = dot8(dy, qkv + row + 2 * C + h * hs, hs);
                    ops_axpy(dqkv + row + 2 * C + h * hs, a[t2], dy, hs);
                    dsum += a[t2] * drow[t2];
                }
                /* softmax backward, then the scaled dot product */
                for (int t2 = 0; t2 <= t; t2++) {
                    long row = ((long)b * T + t2) * 3 * C;
                    float ds = a[t2] * (drow[t2] - dsum) * scale;
                    ops_axpy(dq, ds, qkv + row + C + h * hs, hs);
                    ops_axpy(dqkv + row + C + h * hs, ds, q, hs);
                }
            }
        }
    }
}

void attention_backward(float *dqkv, float *drow, const float *dout, const float *qkv,
                        const float *att, int B, int T, int C, int NH)
{
#if NS_OPS_X86
    if (T <= OPS_AVX2_ATT_TMAX && use_avx2()) {
        ops_avx2_attention_backward(dqkv, dout, qkv, att, B, T, C, NH);
        return;
    }
#endif
    attention_backward_generic(dqkv, drow, dout, qkv, att, B, T, C, NH);
}

/* ---- GELU ----------------------------------------------------------------
 * The tanh form, computed as 0.5 x (1 + tanh(u)) = x sigmoid(2u) =
 * x / (1 + exp(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3): the same function
 * as torch's approximate='tanh', with one exp instead of tanhf (whose
 * expm1f made GELU a quarter of a step) and no cancellation in 1 + tanh. */
#define GELU_SCALE 0.7978845608028654f /* sqrt(2/pi) */

/* gelu_forward; with amax, *amax = max |out| (NaN if any is NaN) */
static void gelu_fwd(float *out, const float *inp, int n, float *amax)
{
#if NS_OPS_X86
    if (use_avx2()) {
        ops_avx2_gelu_forward(out, inp, n, amax);
        return;
    }
#endif
    absmax_acc acc = {0.0f, 0};
    for (int i = 0; i < n; i++) {
        float x = inp[i];
        float u = GELU_SCALE * (x + 0.044715f * x * x * x);
        out[i] = x / (1.0f + expf(-2.0f * u));
        absmax_add(&acc, out[i]);
    }
    if (amax)
        *amax = absmax_result(acc);
}

void gelu_forward(float *out, const float *inp, int n) { gelu_fwd(out, inp, n, NULL); }

float gelu_forward_absmax(float *out, const float *inp, int n)
{
    float a = 0.0f;
    gelu_fwd(out, inp, n, &a);
    return a;
}

/* d/dx = s + 2 x s (1 - s) u', s = sigmoid(2u), 1 - s = e s with
 * e = exp(-2u) held finite (<= exp(88)) so e s s is 0, not inf * 0.
 * set: dinp = the product (else +=); returns GELU_BAD_DINP when a value
 * written is infinite or NaN, | GELU_BAD_DOUT when one of dout is */
static int gelu_bwd(float *dinp, const float *inp, const float *dout, int n, int set)
{
#if NS_OPS_X86
    if (use_avx2())
        return ops_avx2_gelu_backward(dinp, inp, dout, n, set);
#endif
    float bad = 0.0f, bad_d = 0.0f;
    for (int i = 0; i < n; i++) {
        float x = inp[i];
        float u = GELU_SCALE * (x + 0.044715f * x * x * x);
        float t = -2.0f * u;
        float e = expf(t > 88.0f ? 88.0f : t);
        float s = 1.0f / (1.0f + e);
        float du = GELU_SCALE * (1.0f + 3.0f * 0.044715f * x * x);
        float d = dout[i] * (s + 2.0f * x * du * (e * s) * s);
        dinp[i] = set ? d : dinp[i] + d;
        bad += dinp[i] - dinp[i]; /* 0 for finite values, NaN otherwise */
        bad_d += dout[i] - dout[i];
    }
    return (bad != bad ? GELU_BAD_DINP : 0) | (bad_d != bad_d ? GELU_BAD_DOUT : 0);
}

void gelu_backward(float *dinp, const float *inp, const float *dout, int n)
{
    gelu_bwd(dinp, inp, dout, n, 0);
}

int gelu_backward_set(float *dinp, const float *inp, const float *dout, int n)
{
    return gelu_bwd(dinp, inp, dout, n, 1);
}

/* ---- softmax and cross-entropy ------------------------------------------ */

void softmax_forward(float *probs, const float *logits, int N, int V)
{
#if NS_OPS_X86
    if (use_avx2()) {
        ops_avx2_softmax_forward(probs, logits, N, V);
        return;
    }
#endif
    for (int n = 0; n < N; n++) {
        const float *l = logits + (long)n * V;
        float *p = probs + (long)n * V;
        float maxv = -INFINITY;
        for (int i = 0; i < V; i++)
            if (l[i] > maxv)
                maxv = l[i];
        float sum = 0.0f;
        for (int i = 0; i < V; i++) {
            p[i] = expf(l[i] - maxv);
            sum += p[i];
        }
        float inv = 1.0f / sum;
        for (int i = 0; i < V; i++)
            p[i] *= inv;
    }
}

void crossentropy_forward(float *losses, const float *logits, const uint8_t *targets, int N,
                          int V)
{
#if NS_OPS_X86
    int simd = use_avx2();
#endif
    for (int n = 0; n < N; n++) {
        const float *l = logits + (long)n * V;
        double lse;
#if NS_OPS_X86
        if (simd) {
            float mx;
            float s = ops_avx2_sumexp(l, V, &mx); /* >= 1: the max's own term */
            lse = log((double)s) + mx;
        } else
#endif
        {
            float maxv = -INFINITY;
            for (int i = 0; i < V; i++)
                if (l[i] > maxv)
                    maxv = l[i];
            double sum = 0.0;
            for (int i = 0; i < V; i++)
                sum += exp((double)l[i] - maxv);
            lse = log(sum) + maxv;
        }
        losses[n] = (float)(lse - l[targets[n]]);
    }
}

int crossentropy_softmax_backward_set(float *dlogits, const float *probs,
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

void crossentropy_softmax_backward(float *dlogits, const float *probs, const uint8_t *targets,
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

float ops_absmax(const float *x, long n)
{
#if NS_OPS_X86
    if (use_avx2())
        return ops_avx2_absmax(x, n);
#endif
    float m = 0.0f;
    int nan = 0;
    for (long i = 0; i < n; i++) {
        float a = fabsf(x[i]);
        nan |= a != a;
        m = a > m ? a : m;
    }
    return nan ? NAN : m;
}

float ops_residual(float *out, const float *x, float a, const float *f, float g, long n)
{
#if NS_OPS_X86
    if (use_avx2())
        return ops_avx2_residual(out, x, a, f, g, n);
#endif
    absmax_acc acc = {0.0f, 0};
    for (long i = 0; i < n; i++) {
        out[i] = a * x[i] + g * f[i];
        absmax_add(&acc, out[i]);
    }
    return absmax_result(acc);
}

/* x - x is 0 for finite x and NaN otherwise; eight partial sums keep it
 * one vectorizable pass */
int ops_any_nonfinite(const float *x, size_t n)
{
#if NS_OPS_X86
    if (use_avx2())
        return ops_avx2_any_nonfinite(x, n);
#endif
    float acc[8] = {0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++)
            acc[k] += x[i + k] - x[i + k];
    float s = 0.0f;
    for (int k = 0; k < 8; k++)
        s += acc[k];
    for (; i < n; i++)
        s += x[i] - x[i];
    return s != s;
}

double ops_sumsq(const float *x, size_t n)
{
#if NS_OPS_X86
    if (use_avx2())
        return ops_avx2_sumsq(x, n);
#endif
    double acc[16] = {0};
    for (size_t i = 0; i < n; i += 16) {
        size_t k = n - i < 16 ? n - i : 16;
        for (size_t j = 0; j < k; j++)
            acc[j] += (double)x[i + j] * x[i + j];
    }
    double t[4];
    for (int j = 0; j < 4; j++)
        t[j] = (acc[j] + acc[j + 4]) + (acc[j + 8] + acc[j + 12]);
    return (t[0] + t[2]) + (t[1] + t[3]);
}

void ops_adamw(float *p, const float *g, float *m, float *v, size_t n, const ops_adamw_args *a,
               double sums[2])
{
#if NS_OPS_X86
    if (use_avx2()) {
        ops_avx2_adamw(p, g, m, v, n, a, sums);
        return;
    }
#endif
    const float b1 = a->beta1, b2 = a->beta2, c1 = 1.0f - a->beta1, c2 = 1.0f - a->beta2;
    double usq[8] = {0}, psq[8] = {0};
    for (size_t i = 0; i < n; i++) {
        float gi = g[i] * a->grad_scale;
        float mi = b1 * m[i] + c1 * gi;
        float vi = b2 * v[i] + c2 * gi * gi;
        float old = p[i];
        float np = old * a->decay;
        np -= a->step * mi / (sqrtf(vi) / a->bc2_sqrt + a->eps);
        m[i] = mi, v[i] = vi, p[i] = np;
        double d = (double)np - old;
        usq[i & 7] += d * d;
        psq[i & 7] += (double)np * np;
    }
    double u[4], w[4];
    for (int j = 0; j < 4; j++)
        u[j] = usq[j] + usq[j + 4], w[j] = psq[j] + psq[j + 4];
    sums[0] += (u[0] + u[2]) + (u[1] + u[3]);
    sums[1] += (w[0] + w[2]) + (w[1] + w[3]);
}

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
} gemm_job;

/* one part of C: a row block (i0..i1) or a column block (j0..j1), cut at
 * multiples of the micro-tile so every element's FMA chain is unchanged */
static void gemm_task(void *ctx, int part, int thread)
{
    (void)thread;
    const gemm_job *g = ctx;
    int lo, hi;
    if (g->by_cols) {
        pool_split(g->Nc, g->parts, g->align, part, &lo, &hi);
        if (lo < hi)
            gemm(g->c + lo, g->ldc, g->M, hi - lo, g->K, g->a, g->rsa, g->csa, g->b + lo * g->csb,
                 g->rsb, g->csb, g->bias ? g->bias + lo : NULL, g->accumulate);
    } else {
        pool_split(g->M, g->parts, OPS_MR, part, &lo, &hi);
        if (lo < hi)
            gemm(g->c + lo * g->ldc, g->ldc, hi - lo, g->Nc, g->K, g->a + lo * g->rsa, g->rsa,
                 g->csa, g->b, g->rsb, g->csb, g->bias, g->accumulate);
    }
}

static void gemm_mt(ns_pool *p, float *c, long ldc, int M, int Nc, int K, const float *a,
                    long rsa, long csa, const float *b, long rsb, long csb, const float *bias,
                    int accumulate)
{
    int nt = pool_threads(p);
    if (nt == 1 || (double)M * Nc * K < MT_GEMM_MIN) {
        gemm(c, ldc, M, Nc, K, a, rsa, csa, b, rsb, csb, bias, accumulate);
        return;
    }
    /* Cut at the gemm's own blocks of NC columns, the parts do the same
     * work as one call (each block packs its B and, when A is strided,
     * repacks A anyway), so make several parts per thread: taken
     * first-come, they even out threads that run at different speeds. */
    int NC = gemm_nc(K, csa);
    int blocks = (Nc + NC - 1) / NC;
    gemm_job g = {c, ldc, M, Nc, K, a, rsa, csa, b, rsb, csb, bias, accumulate, 1, 0, NC};
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
}

void matmul_forward_mt(ns_pool *p, float *out, const float *inp, const float *w, const float *b,
                       int N, int C, int OC)
{
    gemm_mt(p, out, OC, N, OC, C, inp, C, 1, w, 1, C, b, 0);
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
                           const float *inp, const float *w, int N, int C, int OC, int set)
{
    if (pool_threads(p) == 1) {
        mm_backward(dinp, dw, db, dout, inp, w, N, C, OC, set);
        return;
    }
    if (dinp)
        gemm_mt(p, dinp, C, N, C, OC, dout, OC, 1, w, C, 1, NULL, !set);
    gemm_mt(p, dw, C, OC, C, N, dout, 1, OC, inp, C, 1, NULL, 1);
    if (db) {
        int units = (OC + MT_ELEM_ALIGN - 1) / MT_ELEM_ALIGN;
        int parts = (long)N * OC < MT_ELEM_MIN ? 1 : imin(pool_threads(p), units);
        colsum_job j = {db, dout, N, OC, parts};
        pool_run(p, parts, db_task, &j);
    }
}

void matmul_backward_mt(ns_pool *p, float *dinp, float *dw, float *db, const float *dout,
                        const float *inp, const float *w, int N, int C, int OC)
{
    mm_backward_mt(p, dinp, dw, db, dout, inp, w, N, C, OC, 0);
}

void matmul_backward_set_mt(ns_pool *p, float *dinp, float *dw, float *db, const float *dout,
                            const float *inp, const float *w, int N, int C, int OC)
{
    mm_backward_mt(p, dinp, dw, db, dout, inp, w, N, C, OC, 1);
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
    attention_forward(j->out + b * T * C, j->att + b * j->NH * T * T, j->qkv + b * T * 3 * C, 1,
                      j->T, j->C, j->NH);
}

void attention_forward_mt(ns_pool *p, float *out, float *att, const float *qkv, int B, int T,
                          int C, int NH)
{
    if (pool_threads(p) == 1 || B == 1 || (double)B * T * T * C < MT_GEMM_MIN) {
        attention_forward(out, att, qkv, B, T, C, NH);
        return;
    }
    att_job j = {out, att, NULL, NULL, qkv, NULL, NULL, T, C, NH};
    pool_run(p, B, att_fwd_task, &j);
}

enum { MT_ATT_TMAX = 1024 }; /* T of the per-thread drow on the stack */

static void att_bwd_task(void *ctx, int b, int thread)
{
    const att_job *j = ctx;
    long T = j->T, C = j->C;
    float own[MT_ATT_TMAX];
    attention_backward(j->dqkv + b * T * 3 * C, thread == 0 ? j->drow : own,
                       j->dout + b * T * C, j->qkv + b * T * 3 * C,
                       j->att_c + b * j->NH * T * T, 1, j->T, j->C, j->NH);
}

void attention_backward_mt(ns_pool *p, float *dqkv, float *drow, const float *dout,
                           const float *qkv, const float *att, int B, int T, int C, int NH)
{
    if (pool_threads(p) == 1 || B == 1 || T > MT_ATT_TMAX ||
        (double)B * T * T * C < MT_GEMM_MIN) {
        attention_backward(dqkv, drow, dout, qkv, att, B, T, C, NH);
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
    int want_max; /* res[part] = max |out| of the part */
    int set;      /* gelu backward: dinp = (else +=) */
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
    gelu_fwd(j->out + lo, j->in + lo, (int)(hi - lo), j->want_max ? &j->res[part] : NULL);
}

void gelu_forward_mt(ns_pool *p, float *out, const float *inp, int n)
{
    elem_job j = {.out = out, .in = inp, .n = n, .parts = elem_parts(p, n)};
    pool_run(p, j.parts, gelu_fwd_task, &j);
}

float gelu_forward_absmax_mt(ns_pool *p, float *out, const float *inp, int n)
{
    elem_job j = {.out = out, .in = inp, .n = n, .parts = elem_parts(p, n), .want_max = 1};
    pool_run(p, j.parts, gelu_fwd_task, &j);
    return max_of_parts(j.res, j.parts);
}

static void gelu_bwd_task(void *ctx, int part, int thread)
{
    (void)thread;
    elem_job *j = ctx;
    long lo, hi;
    elem_range(j, part, &lo, &hi);
    j->bad[part] = gelu_bwd(j->out + lo, j->in + lo, j->in2 + lo, (int)(hi - lo), j->set);
}

void gelu_backward_mt(ns_pool *p, float *dinp, const float *inp, const float *dout, int n)
{
    elem_job j = {.out = dinp, .in = inp, .in2 = dout, .n = n, .parts = elem_parts(p, n)};
    pool_run(p, j.parts, gelu_bwd_task, &j);
}

int gelu_backward_set_mt(ns_pool *p, float *dinp, const float *inp, const float *dout, int n)
{
    elem_job j = {.out = dinp, .in = inp, .in2 = dout, .n = n, .parts = elem_parts(p, n), .set = 1};
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
    ln_forward(j->out + o, j->mean + lo, j->rstd + lo, j->inp + o, j->w, j->b, hi - lo, j->C,
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

void layernorm_forward_mt(ns_pool *p, float *out, float *mean, float *rstd, const float *inp,
                          const float *w, const float *b, int N, int C, float eps)
{
    ln_forward_mt(p, out, mean, rstd, inp, w, b, N, C, eps, 0);
}

float layernorm_forward_absmax_mt(ns_pool *p, float *out, float *mean, float *rstd,
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

int layernorm_backward_watch_mt(ns_pool *p, float *dinp, float *dw, float *db,
                                const float *dout, const float *inp, const float *w,
                                const float *mean, const float *rstd, int N, int C)
{
    int parts = (long)N * C < MT_NORM_MIN || N < MT_ROWS_MIN ? 1 : pool_threads(p);
    if (parts == 1)
        return layernorm_backward_watch(dinp, dw, db, dout, inp, w, mean, rstd, N, C);
    ln_bwd_job j = {dinp, dw, db, dout, inp, w, mean, rstd, N, C, parts, {0}};
    pool_run(p, 2 * parts, ln_bwd_task, &j);
    return any_of_parts(j.bad, parts);
}

void layernorm_backward_mt(ns_pool *p, float *dinp, float *dw, float *db, const float *dout,
                           const float *inp, const float *w, const float *mean, const float *rstd,
                           int N, int C)
{
    layernorm_backward_watch_mt(p, dinp, dw, db, dout, inp, w, mean, rstd, N, C);
}
