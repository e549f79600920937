/* ops_avx2.c - the x86 AVX2+FMA kernels behind ops.c (see ops_simd.h).
 *
 * Each function carries target("avx2,fma"), so this file builds with the
 * project's ordinary flags and the binary still runs on any x86-64: ops.c
 * calls in here only when the CPU reports both features. On other
 * architectures the file is empty.
 *
 * Every sum has an order fixed by the code (vector lanes, then a fixed
 * reduction tree), so the same inputs give the same bits on every run.
 * Fused multiply-adds round differently from the portable C's multiply
 * then add, so the two paths agree to rounding, not bit for bit.
 * Tails use masked loads (which never touch the masked-off memory) and
 * masked stores, so no kernel reads or writes past its arrays.
 */
#include "ops_simd.h"

#if NS_OPS_X86

#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define NS_AVX2 __attribute__((target("avx2,fma")))
#define NS_AVX2_INLINE __attribute__((target("avx2,fma"), always_inline)) static inline

/* ---- helpers ---------------------------------------------------------- */

/* lane mask of the first n (0..8) lanes */
static const int32_t mask_tab[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};

NS_AVX2_INLINE __m256i lanes(int n)
{
    return _mm256_loadu_si256((const __m256i *)(mask_tab + 8 - n));
}

/* load n (1..8) floats; lanes past n read as 0 and their memory is not touched */
NS_AVX2_INLINE __m256 load_n(const float *p, int n)
{
    return n >= 8 ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, lanes(n));
}

NS_AVX2_INLINE void store_n(float *p, __m256 v, int n)
{
    if (n >= 8)
        _mm256_storeu_ps(p, v);
    else
        _mm256_maskstore_ps(p, lanes(n), v);
}

/* sum of the 8 lanes, in the fixed order ((0+4)+(2+6)) + ((1+5)+(3+7)) */
NS_AVX2_INLINE float hsum(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* max of the 8 lanes (NaN lanes may or may not win: callers that care
 * propagate NaN some other way) */
NS_AVX2_INLINE float hmax(__m256 v)
{
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* A maximum of |x| taken while a kernel writes x: the largest so far in
 * each lane and the lanes that saw a NaN. The maximum is exact whatever
 * the order, so it equals ops_avx2_absmax over what was written. */
typedef struct {
    __m256 m, bad;
} amax8;

NS_AVX2_INLINE amax8 amax_init(void) { return (amax8){_mm256_setzero_ps(), _mm256_setzero_ps()}; }

/* take in the first k (1..8) lanes of v */
NS_AVX2_INLINE void amax_add(amax8 *a, __m256 v, int k)
{
    __m256 x = _mm256_and_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)));
    if (k < 8)
        x = _mm256_and_ps(x, _mm256_castsi256_ps(lanes(k)));
    a->bad = _mm256_or_ps(a->bad, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
    a->m = _mm256_max_ps(a->m, x);
}

NS_AVX2_INLINE float amax_result(amax8 a) { return _mm256_movemask_ps(a.bad) ? NAN : hmax(a.m); }

/* exp(x) within about 2 ulp (Cephes expf: x = n ln2 + r, its degree-7
 * polynomial in r, times 2^n). Below -87 it returns 0 (the true value is
 * under the smallest normal float); above 88.3 it returns exp(88.3), a
 * finite 2.2e38, not inf (softmax never gets there; GELU's backward relies
 * on it: it multiplies e by a vanishing s^2); NaN stays NaN. */
NS_AVX2_INLINE __m256 exp256(__m256 x)
{
    const __m256 lo = _mm256_set1_ps(-87.0f), hi = _mm256_set1_ps(88.3f);
    __m256 under = _mm256_cmp_ps(x, lo, _CMP_LT_OQ);
    /* max/min return their second operand when either is NaN: NaN passes */
    __m256 xc = _mm256_min_ps(hi, _mm256_max_ps(lo, x));
    __m256 fn = _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(1.44269504088896341f)),
                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(fn, _mm256_set1_ps(0.693359375f), xc);
    r = _mm256_fnmadd_ps(fn, _mm256_set1_ps(-2.12194440e-4f), r);
    /* 1 + r + r^2 q(r), q of degree 5 by Estrin's scheme (a shorter
     * chain of dependent operations than Horner's) */
    __m256 r2 = _mm256_mul_ps(r, r), r4 = _mm256_mul_ps(r2, r2);
    __m256 e0 =
        _mm256_fmadd_ps(_mm256_set1_ps(1.6666665459e-1f), r, _mm256_set1_ps(5.0000001201e-1f));
    __m256 e1 =
        _mm256_fmadd_ps(_mm256_set1_ps(8.3334519073e-3f), r, _mm256_set1_ps(4.1665795894e-2f));
    __m256 e2 =
        _mm256_fmadd_ps(_mm256_set1_ps(1.9875691500e-4f), r, _mm256_set1_ps(1.3981999507e-3f));
    __m256 p = _mm256_fmadd_ps(e2, r4, _mm256_fmadd_ps(e1, r2, e0));
    p = _mm256_add_ps(_mm256_fmadd_ps(p, r2, r), _mm256_set1_ps(1.0f));
    __m256i n = _mm256_cvtps_epi32(fn);
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(n, _mm256_set1_epi32(127)), 23);
    return _mm256_andnot_ps(under, _mm256_mul_ps(p, _mm256_castsi256_ps(e)));
}

/* ---- packing for the gemm (and the tiled attention) -------------------- */

enum { PACK_PF = 32 }; /* rows ahead to prefetch */

/* 8 x 8 transpose of the rows r[0..7] */
NS_AVX2_INLINE void tr8(__m256 r[8])
{
    __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xee);
    __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xee);
    __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xee);
    __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xee);
    r[0] = _mm256_permute2f128_ps(u0, u4, 0x20), r[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
    r[2] = _mm256_permute2f128_ps(u2, u6, 0x20), r[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
    r[4] = _mm256_permute2f128_ps(u0, u4, 0x31), r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
    r[6] = _mm256_permute2f128_ps(u2, u6, 0x31), r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

/* panels of 16 columns, panel p at dst + p * 16 * kc, zero past nc:
 * B(k, j) = src[j * rs + k] (rows of src become columns), by 8 x 8 blocks;
 * rows past nc read as zero and columns past kc are not read */
NS_AVX2 static void pack_tr(float *dst, const float *src, long rs, int kc, int nc)
{
    for (int j0 = 0; j0 < nc; j0 += 8) {
        float *d = dst + (long)(j0 & ~15) * kc + (j0 & 15);
        for (int k0 = 0; k0 < kc; k0 += 8) {
            int nk = kc - k0 < 8 ? kc - k0 : 8;
            __m256 r[8];
            for (int j = 0; j < 8; j++)
                r[j] = j0 + j < nc ? load_n(src + (j0 + j) * rs + k0, nk) : _mm256_setzero_ps();
            tr8(r);
            for (int k = 0; k < nk; k++)
                _mm256_storeu_ps(d + (k0 + k) * 16, r[k]);
        }
    }
    if (nc & 15) /* the unused half of the last panel */
        if ((nc & 15) <= 8)
            for (int k = 0; k < kc; k++)
                _mm256_storeu_ps(dst + (long)(nc & ~15) * kc + k * 16 + 8, _mm256_setzero_ps());
}

/* the same with B(k, j) = src[k * rs + j]: row by row, so each source row
 * is read once and in order; rows are rs apart, which the hardware
 * prefetcher does not follow, so prefetch PACK_PF rows ahead */
NS_AVX2 static void pack_cp(float *dst, const float *src, long rs, int kc, int nc)
{
    int nfull = nc & ~15;
    for (int k = 0; k < kc; k++) {
        const float *s = src + k * rs;
        for (int j = 0; j < nc; j += 16)
            _mm_prefetch((const char *)(s + PACK_PF * rs + j), _MM_HINT_T0);
        float *d = dst + k * 16;
        for (int j0 = 0; j0 < nfull; j0 += 16, d += 16L * kc) {
            _mm256_storeu_ps(d, _mm256_loadu_ps(s + j0));
            _mm256_storeu_ps(d + 8, _mm256_loadu_ps(s + j0 + 8));
        }
        if (nfull < nc) {
            int n = nc - nfull;
            _mm256_storeu_ps(d, load_n(s + nfull, n));
            _mm256_storeu_ps(d + 8, n > 8 ? load_n(s + nfull + 8, n - 8) : _mm256_setzero_ps());
        }
    }
}

NS_AVX2 void ops_avx2_gemm_pack_b(float *bp, const float *b, long rsb, long csb, int kc, int nc)
{
    if (csb == 1)
        pack_cp(bp, b, rsb, kc, nc);
    else
        pack_tr(bp, b, csb, kc, nc);
}

/* A(i, k) = a[i + k * csa] (rsa = 1): row k of the block is mc contiguous
 * floats. Each 6-float piece is written with an 8-float store whose last
 * two lanes land in the next row's slot (rewritten next) or in the
 * panel's padding. */
NS_AVX2 void ops_avx2_gemm_pack_a(float *ap, const float *a, long csa, int mc, int kc)
{
    long ps = (long)kc * OPS_MR + OPS_APAD;
    for (int k = 0; k < kc; k++) {
        const float *src = a + k * csa;
        for (int i = 0; i < mc; i += 16)
            _mm_prefetch((const char *)(src + PACK_PF * csa + i), _MM_HINT_T0);
        float *dst = ap + k * OPS_MR;
        int ir = 0;
        for (; ir + 8 <= mc; ir += OPS_MR, dst += ps)
            _mm256_storeu_ps(dst, _mm256_loadu_ps(src + ir));
        for (; ir < mc; ir += OPS_MR, dst += ps) {
            int n = mc - ir; /* rows past mc repeat the panel's first row */
            __m256 v = load_n(src + ir, n);
            if (n < OPS_MR)
                v = _mm256_blendv_ps(_mm256_set1_ps(src[ir]), v, _mm256_castsi256_ps(lanes(n)));
            _mm256_storeu_ps(dst, v);
        }
    }
}

/* ---- gemm micro-kernel ------------------------------------------------ */

NS_AVX2 void ops_avx2_gemm_ukr(int kc, const float *a, long rsa, long csa, int mr, const float *bp,
                               float *c, long ldc, int nr, const float *bias, int accumulate)
{
    /* rows past mr repeat row 0: computed, never stored */
    const float *a0 = a, *a1 = mr > 1 ? a + rsa : a, *a2 = mr > 2 ? a + 2 * rsa : a,
                *a3 = mr > 3 ? a + 3 * rsa : a, *a4 = mr > 4 ? a + 4 * rsa : a,
                *a5 = mr > 5 ? a + 5 * rsa : a;
    _Alignas(32) float tile[OPS_MR * OPS_NR];
    int full = mr == OPS_MR && nr == OPS_NR;
    __m256 c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51;
    __m256 i0 = _mm256_setzero_ps(), i1 = _mm256_setzero_ps(); /* initial row */
    if (accumulate) {
        /* C is added after the products: fetch it meanwhile */
        for (int i = 0; i < mr; i++) {
            _mm_prefetch((const char *)(c + i * ldc), _MM_HINT_T0);
            _mm_prefetch((const char *)(c + i * ldc + nr - 1), _MM_HINT_T0);
        }
    } else if (bias) {
        i0 = load_n(bias, nr);
        if (nr > 8)
            i1 = load_n(bias + 8, nr - 8);
    }
    c00 = c10 = c20 = c30 = c40 = c50 = i0;
    c01 = c11 = c21 = c31 = c41 = c51 = i1;
    long off = 0;
#pragma GCC unroll 4
    for (int k = 0; k < kc; k++) {
        __m256 b0 = _mm256_load_ps(bp), b1 = _mm256_load_ps(bp + 8);
        bp += OPS_NR;
        __m256 av = _mm256_broadcast_ss(a0 + off);
        c00 = _mm256_fmadd_ps(av, b0, c00), c01 = _mm256_fmadd_ps(av, b1, c01);
        av = _mm256_broadcast_ss(a1 + off);
        c10 = _mm256_fmadd_ps(av, b0, c10), c11 = _mm256_fmadd_ps(av, b1, c11);
        av = _mm256_broadcast_ss(a2 + off);
        c20 = _mm256_fmadd_ps(av, b0, c20), c21 = _mm256_fmadd_ps(av, b1, c21);
        av = _mm256_broadcast_ss(a3 + off);
        c30 = _mm256_fmadd_ps(av, b0, c30), c31 = _mm256_fmadd_ps(av, b1, c31);
        av = _mm256_broadcast_ss(a4 + off);
        c40 = _mm256_fmadd_ps(av, b0, c40), c41 = _mm256_fmadd_ps(av, b1, c41);
        av = _mm256_broadcast_ss(a5 + off);
        c50 = _mm256_fmadd_ps(av, b0, c50), c51 = _mm256_fmadd_ps(av, b1, c51);
        off += csa;
    }
    float *dst = full ? c : tile;
    long ld = full ? ldc : OPS_NR;
    if (accumulate) {
        const float *src = c;
        if (!full) {
            memset(tile, 0, sizeof tile);
            for (int i = 0; i < mr; i++)
                memcpy(tile + i * OPS_NR, c + i * ldc, sizeof(float) * (size_t)nr);
            src = tile;
        }
        c00 = _mm256_add_ps(_mm256_loadu_ps(src), c00);
        c01 = _mm256_add_ps(_mm256_loadu_ps(src + 8), c01);
        c10 = _mm256_add_ps(_mm256_loadu_ps(src + ld), c10);
        c11 = _mm256_add_ps(_mm256_loadu_ps(src + ld + 8), c11);
        c20 = _mm256_add_ps(_mm256_loadu_ps(src + 2 * ld), c20);
        c21 = _mm256_add_ps(_mm256_loadu_ps(src + 2 * ld + 8), c21);
        c30 = _mm256_add_ps(_mm256_loadu_ps(src + 3 * ld), c30);
        c31 = _mm256_add_ps(_mm256_loadu_ps(src + 3 * ld + 8), c31);
        c40 = _mm256_add_ps(_mm256_loadu_ps(src + 4 * ld), c40);
        c41 = _mm256_add_ps(_mm256_loadu_ps(src + 4 * ld + 8), c41);
        c50 = _mm256_add_ps(_mm256_loadu_ps(src + 5 * ld), c50);
        c51 = _mm256_add_ps(_mm256_loadu_ps(src + 5 * ld + 8), c51);
    }
    _mm256_storeu_ps(dst, c00), _mm256_storeu_ps(dst + 8, c01);
    _mm256_storeu_ps(dst + ld, c10), _mm256_storeu_ps(dst + ld + 8, c11);
    _mm256_storeu_ps(dst + 2 * ld, c20), _mm256_storeu_ps(dst + 2 * ld + 8, c21);
    _mm256_storeu_ps(dst + 3 * ld, c30), _mm256_storeu_ps(dst + 3 * ld + 8, c31);
    _mm256_storeu_ps(dst + 4 * ld, c40), _mm256_storeu_ps(dst + 4 * ld + 8, c41);
    _mm256_storeu_ps(dst + 5 * ld, c50), _mm256_storeu_ps(dst + 5 * ld + 8, c51);
    if (!full)
        for (int i = 0; i < mr; i++)
            memcpy(c + i * ldc, tile + i * OPS_NR, sizeof(float) * (size_t)nr);
}

/* db (n) += column sums of d (N rows of n, row stride ld), each column
 * summed over the rows in order with plain adds: the same bits as the
 * portable loop in ops.c. 64 columns at a time stay in registers. */
NS_AVX2 void ops_avx2_colsum(float *db, const float *d, long ld, int N, int n)
{
    for (int j0 = 0; j0 < n; j0 += 64) {
        int m = n - j0 < 64 ? n - j0 : 64;
        __m256 acc[8];
        for (int v = 0; v < 8; v++)
            acc[v] = _mm256_setzero_ps();
        if (m == 64) {
            for (int r = 0; r < N; r++) {
                const float *row = d + r * ld + j0;
#pragma GCC unroll 8
                for (int v = 0; v < 8; v++)
                    acc[v] = _mm256_add_ps(acc[v], _mm256_loadu_ps(row + 8 * v));
            }
        } else {
            for (int r = 0; r < N; r++)
                for (int v = 0; v * 8 < m; v++)
                    acc[v] = _mm256_add_ps(acc[v], load_n(d + r * ld + j0 + 8 * v, m - 8 * v));
        }
        for (int v = 0; v * 8 < m; v++)
            store_n(db + j0 + 8 * v, _mm256_add_ps(load_n(db + j0 + 8 * v, m - 8 * v), acc[v]),
                    m - 8 * v);
    }
}

/* ---- attention, a row at a time --------------------------------------------
 * The fallback for shapes whose panels do not fit the tiled kernels'
 * stack buffers (further below): no scratch beyond 4 rows of T floats. */

/* Lane j = q . k[j] over hs. Per key the products go to 8 lanes by
 * position mod 8, which are then added in the tree of hsum. */
NS_AVX2_INLINE __m256 dot8(const float *q, const float *const k[8], int hs)
{
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0, s4 = s0, s5 = s0, s6 = s0, s7 = s0;
    for (int d = 0; d < hs; d += 8) {
        int n = hs - d;
        __m256 qv = load_n(q + d, n);
        s0 = _mm256_fmadd_ps(qv, load_n(k[0] + d, n), s0);
        s1 = _mm256_fmadd_ps(qv, load_n(k[1] + d, n), s1);
        s2 = _mm256_fmadd_ps(qv, load_n(k[2] + d, n), s2);
        s3 = _mm256_fmadd_ps(qv, load_n(k[3] + d, n), s3);
        s4 = _mm256_fmadd_ps(qv, load_n(k[4] + d, n), s4);
        s5 = _mm256_fmadd_ps(qv, load_n(k[5] + d, n), s5);
        s6 = _mm256_fmadd_ps(qv, load_n(k[6] + d, n), s6);
        s7 = _mm256_fmadd_ps(qv, load_n(k[7] + d, n), s7);
    }
    /* transpose-and-add: lane j ends as ((s_j0+s_j1)+(s_j2+s_j3)) + ((s_j4+s_j5)+(s_j6+s_j7)) */
    __m256 t0 = _mm256_hadd_ps(s0, s1), t1 = _mm256_hadd_ps(s2, s3);
    __m256 t2 = _mm256_hadd_ps(s4, s5), t3 = _mm256_hadd_ps(s6, s7);
    __m256 u0 = _mm256_hadd_ps(t0, t1), u1 = _mm256_hadd_ps(t2, t3);
    return _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20),
                         _mm256_permute2f128_ps(u0, u1, 0x31));
}

/* row[t2] = (q . key(t2)) * scale for t2 = 0..n-1, keys rows ks floats apart */
NS_AVX2_INLINE void dot_row(float *row, const float *q, const float *key0, long ks, int n, int hs,
                            float scale)
{
    __m256 sc = _mm256_set1_ps(scale);
    for (int t2 = 0; t2 < n; t2 += 8) {
        int m = n - t2;
        const float *k[8];
        for (int j = 0; j < 8; j++)
            k[j] = key0 + (t2 + (j < m ? j : 0)) * ks; /* past n: a valid row, result unused */
        store_n(row + t2, _mm256_mul_ps(dot8(q, k, hs), sc), m);
    }
}

/* a[0..n) = softmax(a[0..n)) in place */
NS_AVX2_INLINE void softmax_row(float *a, int n)
{
    __m256 vm = _mm256_set1_ps(-INFINITY);
    for (int i = 0; i < n; i += 8) {
        int m = n - i;
        __m256 x = load_n(a + i, m);
        if (m < 8)
            x = _mm256_blendv_ps(_mm256_set1_ps(-INFINITY), x, _mm256_castsi256_ps(lanes(m)));
        vm = _mm256_max_ps(vm, x);
    }
    __m256 mx = _mm256_set1_ps(hmax(vm)), vs = _mm256_setzero_ps();
    for (int i = 0; i < n; i += 8) {
        int m = n - i;
        __m256 e = exp256(_mm256_sub_ps(load_n(a + i, m), mx));
        if (m < 8)
            e = _mm256_and_ps(e, _mm256_castsi256_ps(lanes(m)));
        vs = _mm256_add_ps(vs, e);
        store_n(a + i, e, m);
    }
    __m256 inv = _mm256_set1_ps(1.0f / hsum(vs));
    for (int i = 0; i < n; i += 8) {
        int m = n - i;
        store_n(a + i, _mm256_mul_ps(load_n(a + i, m), inv), m);
    }
}

/* out row t0+r (r < R) = sum_{t2 <= t0+r} p_r[t2] v(t2), R query rows at
 * once so each v row is loaded once for all of them; each output sums
 * over t2 in increasing order. */
NS_AVX2_INLINE void pv_rows(float *out, long os, const float *const p[4], const float *v, long vs,
                            int t0, int hs, int R)
{
    for (int d = 0; d < hs; d += 8) {
        int n = hs - d;
        __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                         _mm256_setzero_ps()};
        for (int t2 = 0; t2 <= t0; t2++) {
            __m256 vv = load_n(v + t2 * vs + d, n);
#pragma GCC unroll 4
            for (int r = 0; r < R; r++)
                acc[r] = _mm256_fmadd_ps(_mm256_broadcast_ss(p[r] + t2), vv, acc[r]);
        }
#pragma GCC unroll 4
        for (int j = 1; j < R; j++) { /* t2 = t0 + j: rows r >= j only */
            __m256 vv = load_n(v + (t0 + j) * vs + d, n);
#pragma GCC unroll 4
            for (int r = j; r < R; r++)
                acc[r] = _mm256_fmadd_ps(_mm256_broadcast_ss(p[r] + t0 + j), vv, acc[r]);
        }
#pragma GCC unroll 4
        for (int r = 0; r < R; r++)
            store_n(out + r * os + d, acc[r], n);
    }
}

/* The row-at-a-time forward: for shapes whose (b, h) panels do not fit
 * the stack buffers of the tiled one below. */
NS_AVX2 static void attention_forward_rows(float *out, float *att, const float *qkv, int B, int T,
                                           int C, int NH)
{
    int hs = C / NH;
    long C3 = 3L * C;
    float scale = 1.0f / sqrtf((float)hs);
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < NH; h++) {
            const float *q0 = qkv + (long)b * T * C3 + h * hs;
            const float *k0 = q0 + C, *v0 = q0 + 2 * C;
            float *a0 = att + ((long)b * NH + h) * T * T;
            float *o0 = out + (long)b * T * C + h * hs;
            for (int t0 = 0; t0 < T; t0 += 4) {
                int R = T - t0 < 4 ? T - t0 : 4;
                const float *p[4];
                for (int r = 0; r < 4; r++) {
                    int t = t0 + (r < R ? r : R - 1);
                    float *a = a0 + (long)t * T;
                    p[r] = a;
                    if (r < R) {
                        dot_row(a, q0 + t * C3, k0, C3, t + 1, hs, scale);
                        softmax_row(a, t + 1);
                    }
                }
                float *o = o0 + (long)t0 * C;
                switch (R) {
                case 4: pv_rows(o, C, p, v0, C3, t0, hs, 4); break;
                case 3: pv_rows(o, C, p, v0, C3, t0, hs, 3); break;
                case 2: pv_rows(o, C, p, v0, C3, t0, hs, 2); break;
                default: pv_rows(o, C, p, v0, C3, t0, hs, 1); break;
                }
            }
        }
    }
}

/* For R query rows t0+r: dk(t2) += ds_r[t2] q_r and dq_r += ds_r[t2] k(t2)
 * over t2 <= t0+r; then dv(t2) += p_r[t2] dy_r. Each dk and dv row takes
 * its terms in increasing t, the order a row-at-a-time loop would give. */
NS_AVX2_INLINE void attn_bwd_rows(float *dq0, float *dk0, float *dv0, const float *q0,
                                  const float *k0, const float *dy0, long rs, long dys,
                                  const float *const ds[4], const float *const p[4], int t0, int hs,
                                  int R)
{
    for (int d = 0; d < hs; d += 8) {
        int n = hs - d;
        __m256 qr[4], acc[4];
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            qr[r] = load_n(q0 + (t0 + r) * rs + d, n);
            acc[r] = _mm256_setzero_ps();
        }
        for (int t2 = 0; t2 <= t0; t2++) {
            __m256 kv = load_n(k0 + t2 * rs + d, n);
            __m256 dk = load_n(dk0 + t2 * rs + d, n);
#pragma GCC unroll 4
            for (int r = 0; r < R; r++) {
                __m256 s = _mm256_broadcast_ss(ds[r] + t2);
                dk = _mm256_fmadd_ps(s, qr[r], dk);
                acc[r] = _mm256_fmadd_ps(s, kv, acc[r]);
            }
            store_n(dk0 + t2 * rs + d, dk, n);
        }
#pragma GCC unroll 4
        for (int j = 1; j < R; j++) {
            int t2 = t0 + j;
            __m256 kv = load_n(k0 + t2 * rs + d, n);
            __m256 dk = load_n(dk0 + t2 * rs + d, n);
#pragma GCC unroll 4
            for (int r = j; r < R; r++) {
                __m256 s = _mm256_broadcast_ss(ds[r] + t2);
                dk = _mm256_fmadd_ps(s, qr[r], dk);
                acc[r] = _mm256_fmadd_ps(s, kv, acc[r]);
            }
            store_n(dk0 + t2 * rs + d, dk, n);
        }
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            float *dq = dq0 + (t0 + r) * rs + d;
            store_n(dq, _mm256_add_ps(load_n(dq, n), acc[r]), n);
        }
    }
    for (int d = 0; d < hs; d += 8) {
        int n = hs - d;
        __m256 dy[4];
#pragma GCC unroll 4
        for (int r = 0; r < R; r++)
            dy[r] = load_n(dy0 + (t0 + r) * dys + d, n);
        for (int t2 = 0; t2 <= t0; t2++) {
            __m256 dv = load_n(dv0 + t2 * rs + d, n);
#pragma GCC unroll 4
            for (int r = 0; r < R; r++)
                dv = _mm256_fmadd_ps(_mm256_broadcast_ss(p[r] + t2), dy[r], dv);
            store_n(dv0 + t2 * rs + d, dv, n);
        }
#pragma GCC unroll 4
        for (int j = 1; j < R; j++) {
            int t2 = t0 + j;
            __m256 dv = load_n(dv0 + t2 * rs + d, n);
#pragma GCC unroll 4
            for (int r = j; r < R; r++)
                dv = _mm256_fmadd_ps(_mm256_broadcast_ss(p[r] + t2), dy[r], dv);
            store_n(dv0 + t2 * rs + d, dv, n);
        }
    }
}

NS_AVX2 static void attention_backward_rows(float *dqkv, const float *dout, const float *qkv,
                                            const float *att, int B, int T, int C, int NH)
{
    int hs = C / NH;
    long C3 = 3L * C;
    float scale = 1.0f / sqrtf((float)hs);
    float dsb[4][OPS_AVX2_ATT_TMAX];
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < NH; h++) {
            const float *q0 = qkv + (long)b * T * C3 + h * hs;
            const float *k0 = q0 + C, *v0 = q0 + 2 * C;
            float *dq0 = dqkv + (long)b * T * C3 + h * hs;
            float *dk0 = dq0 + C, *dv0 = dq0 + 2 * C;
            const float *dy0 = dout + (long)b * T * C + h * hs;
            const float *a0 = att + ((long)b * NH + h) * T * T;
            for (int t0 = 0; t0 < T; t0 += 4) {
                int R = T - t0 < 4 ? T - t0 : 4;
                const float *p[4], *ds[4];
                for (int r = 0; r < R; r++) {
                    int t = t0 + r, n = t + 1;
                    const float *a = a0 + (long)t * T;
                    float *s = dsb[r];
                    p[r] = a, ds[r] = s;
                    /* datt[t2] = dy . v(t2), then the softmax backward:
                     * ds = a (datt - sum_t2 a datt) * scale */
                    dot_row(s, dy0 + (long)t * C, v0, C3, n, hs, 1.0f);
                    __m256 acc = _mm256_setzero_ps();
                    for (int i = 0; i < n; i += 8)
                        acc = _mm256_fmadd_ps(load_n(a + i, n - i), load_n(s + i, n - i), acc);
                    __m256 dsum = _mm256_set1_ps(hsum(acc)), sc = _mm256_set1_ps(scale);
                    for (int i = 0; i < n; i += 8) {
                        __m256 g = _mm256_sub_ps(load_n(s + i, n - i), dsum);
                        store_n(s + i, _mm256_mul_ps(_mm256_mul_ps(load_n(a + i, n - i), g), sc),
                                n - i);
                    }
                }
                for (int r = R; r < 4; r++)
                    p[r] = p[0], ds[r] = ds[0]; /* unused */
                switch (R) {
                case 4: attn_bwd_rows(dq0, dk0, dv0, q0, k0, dy0, C3, C, ds, p, t0, hs, 4); break;
                case 3: attn_bwd_rows(dq0, dk0, dv0, q0, k0, dy0, C3, C, ds, p, t0, hs, 3); break;
                case 2: attn_bwd_rows(dq0, dk0, dv0, q0, k0, dy0, C3, C, ds, p, t0, hs, 2); break;
                default: attn_bwd_rows(dq0, dk0, dv0, q0, k0, dy0, C3, C, ds, p, t0, hs, 1); break;
                }
            }
        }
    }
}

/* ---- attention, tiled ----------------------------------------------------
 *
 * Per (b, h) the six products of attention are small gemms, run through
 * the gemm micro-kernel: S = Q K^T and dP = dY V^T (depth hs), O = P V and
 * dQ = dS K (depth: keys), dK = dS^T Q and dV = P^T dY (depth: queries).
 * Causality stays exact: no product ever reads a masked entry. The square
 * part of each tile goes through the micro-kernel; the triangle on the
 * diagonal is finished (or, for dK and dV, started) by plain FMAs that
 * continue the same chain in the same increasing order, so each element
 * is one FMA chain over its terms in order, whatever the tiling.
 * The buffers are on the stack: the fast path takes T <= ATT_T and
 * (hs, T) panels of at most ATT_PANEL floats; other shapes use the
 * row-at-a-time kernels above. */
enum { ATT_T = 128, ATT_PANEL = 8192 };

static inline int up16(int n) { return (n + 15) & ~15; }

static int att_tiled_fits(int T, int hs) { return T <= ATT_T && up16(hs) * up16(T) <= ATT_PANEL; }

/* z (n) += sum_{j < m} c[j * cs] y(j), y rows ys apart: each element one
 * FMA chain over j in order, kept in a register */
NS_AVX2_INLINE void fma_chain(float *z, const float *c, long cs, const float *y, long ys, int m,
                              int n)
{
    if (m <= 0)
        return;
    for (int d = 0; d < n; d += 8) {
        __m256 acc = load_n(z + d, n - d);
        for (int j = 0; j < m; j++)
            acc = _mm256_fmadd_ps(_mm256_broadcast_ss(c + j * cs), load_n(y + j * ys + d, n - d),
                                  acc);
        store_n(z + d, acc, n - d);
    }
}

/* The triangle of a full 6-row tile of Z (zs apart) += P Y, in registers:
 * row r (r = 0..5) takes the terms j = 0..r-1 (colmix: j = r..4), in
 * order of j, coefficient c(r, j) = p[r * prs + j * pjs], Y(j) = y + j * ys.
 * lower: terms j < r (rowmix, rows t0+1..); else terms j >= r (colmix). */
NS_AVX2_INLINE void tri6(float *z, long zs, const float *p, long prs, long pjs, const float *y,
                         long ys, int hs, int lower)
{
    for (int d = 0; d < hs; d += 8) {
        int n = hs - d;
        __m256 acc[6];
#pragma GCC unroll 6
        for (int r = 0; r < 6; r++)
            acc[r] = load_n(z + r * zs + d, n);
#pragma GCC unroll 5
        for (int j = 0; j < 5; j++) {
            __m256 yj = load_n(y + j * ys + d, n);
#pragma GCC unroll 6
            for (int r = 0; r < 6; r++)
                if (lower ? j < r : j >= r)
                    acc[r] =
                        _mm256_fmadd_ps(_mm256_broadcast_ss(p + r * prs + j * pjs), yj, acc[r]);
        }
#pragma GCC unroll 6
        for (int r = 0; r < 6; r++)
            store_n(z + r * zs + d, acc[r], n);
    }
}

/* Z rows t0..t0+mr-1 (zs apart) += or = sum_{k <= t} P[t][k] Y(k): P rows
 * ps apart, Y as copy panels yp (depth T), y its rows (ys apart) */
NS_AVX2_INLINE void att_rowmix(float *z, long zs, const float *P, long ps, int T, const float *yp,
                               const float *y, long ys, int hs, int t0, int mr, int accumulate)
{
    /* keys 0..t0 are visible to every row of the tile */
    for (int d0 = 0; d0 < hs; d0 += 16)
        ops_avx2_gemm_ukr(t0 + 1, P + t0 * ps, ps, 1, mr, yp + (long)d0 * T, z + t0 * zs + d0, zs,
                          hs - d0 < 16 ? hs - d0 : 16, NULL, accumulate);
    /* the triangle: row t0+r also sees keys t0+1..t0+r, continuing each chain */
    if (mr == 6)
        tri6(z + t0 * zs, zs, P + t0 * ps + t0 + 1, ps, 1, y + (t0 + 1) * ys, ys, hs, 1);
    else
        for (int r = 1; r < mr; r++)
            fma_chain(z + (t0 + r) * zs, P + (t0 + r) * ps + t0 + 1, 1, y + (t0 + 1) * ys, ys, r,
                      hs);
}

/* Z rows (keys) k0..k0+mr-1 (zs apart) += sum_{t >= key} P[t][key] Y(t):
 * P rows ps apart (T of them, each T long), Y as copy panels yp (depth T),
 * y its rows (ys apart) */
NS_AVX2_INLINE void att_colmix(float *z, long zs, const float *P, long ps, int T, const float *yp,
                               const float *y, long ys, int hs, int k0, int mr)
{
    _Alignas(32) float ap[OPS_MR * ATT_T + 8];
    int last = k0 + mr - 1;
    /* the triangle first: key k0+i sees queries k0+i..last-1 */
    if (mr == 6)
        tri6(z + k0 * zs, zs, P + k0 * ps + k0, 1, ps, y + k0 * ys, ys, hs, 0);
    else
        for (int i = 0; i < mr; i++)
            fma_chain(z + (k0 + i) * zs, P + (k0 + i) * ps + k0 + i, ps, y + (k0 + i) * ys, ys,
                      last - (k0 + i), hs);
    /* then queries last..T-1, which see every key of the tile: A (keys x
     * queries) = P^T, packed 6 keys per query (8-float stores, the last two
     * lanes rewritten by the next query or left in the slack) */
    int kc = T - last;
    if (mr == 6) {
        int m = T - k0 < 8 ? T - k0 : 8;
        for (int t = last; t < T; t++)
            _mm256_storeu_ps(ap + (t - last) * OPS_MR, load_n(P + t * ps + k0, m));
    } else {
        for (int t = last; t < T; t++)
            for (int i = 0; i < OPS_MR; i++)
                ap[(t - last) * OPS_MR + i] = P[t * ps + k0 + (i < mr ? i : 0)];
    }
    for (int d0 = 0; d0 < hs; d0 += 16)
        ops_avx2_gemm_ukr(kc, ap, 1, OPS_MR, mr, yp + (long)d0 * T + last * 16, z + k0 * zs + d0,
                          zs, hs - d0 < 16 ? hs - d0 : 16, NULL, 1);
}

/* rows 0..mr-1 of sb (ss apart, room for up16(nk)) = X(r) . Y(k) for all
 * k < up16(nk): X rows xs apart, Y as transposed panels yp (depth hs).
 * Callers use only k <= their row's t; the other lanes are scratch,
 * computed from zero padding or later keys. */
NS_AVX2_INLINE void att_scores(float *sb, long ss, const float *x, long xs, const float *yp, int hs,
                               int nk, int mr)
{
    for (int k0 = 0; k0 < nk; k0 += 16)
        ops_avx2_gemm_ukr(hs, x, xs, 1, mr, yp + (long)k0 * hs, sb + k0, ss, 16, NULL, 0);
}

NS_AVX2 static void attention_forward_tiled(float *out, float *att, const float *qkv, int B, int T,
                                            int C, int NH)
{
    int hs = C / NH;
    long C3 = 3L * C;
    float scale = 1.0f / sqrtf((float)hs);
    __m256 sc = _mm256_set1_ps(scale), ninf = _mm256_set1_ps(-INFINITY);
    _Alignas(32) float pb[ATT_PANEL];
    _Alignas(32) float sb[OPS_MR * ATT_T];
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < NH; h++) {
            const float *q0 = qkv + (long)b * T * C3 + h * hs;
            const float *k0 = q0 + C, *v0 = q0 + 2 * C;
            float *P = att + ((long)b * NH + h) * T * T;
            float *o0 = out + (long)b * T * C + h * hs;
            pack_tr(pb, k0, C3, hs, T);
            for (int t0 = 0; t0 < T; t0 += OPS_MR) {
                int mr = T - t0 < OPS_MR ? T - t0 : OPS_MR;
                att_scores(sb, ATT_T, q0 + t0 * C3, C3, pb, hs, t0 + mr, mr);
                /* softmax of (scores * scale) over k <= t, from the scratch
                 * rows into att (where only k <= t is written) */
                for (int r = 0; r < mr; r++) {
                    int n = t0 + r + 1;
                    float *s = sb + r * ATT_T, *a = P + (long)(t0 + r) * T;
                    __m256 vm = ninf;
                    for (int i = 0; i < n; i += 8) {
                        __m256 x = _mm256_mul_ps(_mm256_load_ps(s + i), sc);
                        if (n - i < 8)
                            x = _mm256_blendv_ps(ninf, x, _mm256_castsi256_ps(lanes(n - i)));
                        vm = _mm256_max_ps(vm, x);
                    }
                    __m256 mx = _mm256_set1_ps(hmax(vm)), vs = _mm256_setzero_ps();
                    for (int i = 0; i < n; i += 8) {
                        __m256 e =
                            exp256(_mm256_sub_ps(_mm256_mul_ps(_mm256_load_ps(s + i), sc), mx));
                        if (n - i < 8)
                            e = _mm256_and_ps(e, _mm256_castsi256_ps(lanes(n - i)));
                        vs = _mm256_add_ps(vs, e);
                        _mm256_store_ps(s + i, e);
                    }
                    __m256 inv = _mm256_set1_ps(1.0f / hsum(vs));
                    for (int i = 0; i < n; i += 8)
                        store_n(a + i, _mm256_mul_ps(_mm256_load_ps(s + i), inv), n - i);
                }
            }
            pack_cp(pb, v0, C3, T, hs);
            for (int t0 = 0; t0 < T; t0 += OPS_MR)
                att_rowmix(o0, C, P, T, T, pb, v0, C3, hs, t0, T - t0 < OPS_MR ? T - t0 : OPS_MR,
                           0);
        }
    }
}

/* Ask for the slices the next head will read (its q, k, v and dy rows):
 * in the backward they come back from memory, and a head's own reads
 * start too soon for the hardware to fetch ahead. */
NS_AVX2_INLINE void prefetch_head(const float *q0, long C3, long C, const float *dy0, int T, int hs)
{
    for (int t = 0; t < T; t++)
        for (int d = 0; d < hs; d += 16) {
            const float *r = q0 + t * C3 + d;
            _mm_prefetch((const char *)r, _MM_HINT_T1);
            _mm_prefetch((const char *)(r + C), _MM_HINT_T1);
            _mm_prefetch((const char *)(r + 2 * C), _MM_HINT_T1);
            _mm_prefetch((const char *)(dy0 + t * C + d), _MM_HINT_T1);
        }
}

NS_AVX2 static void attention_backward_tiled(float *dqkv, const float *dout, const float *qkv,
                                             const float *att, int B, int T, int C, int NH)
{
    int hs = C / NH;
    long C3 = 3L * C, ds = up16(T);
    float scale = 1.0f / sqrtf((float)hs);
    __m256 sc = _mm256_set1_ps(scale);
    _Alignas(32) float pb[ATT_PANEL];
    _Alignas(32) float dS[ATT_T * ATT_T]; /* rows ds apart; k > t is scratch */
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < NH; h++) {
            const float *q0 = qkv + (long)b * T * C3 + h * hs;
            const float *k0 = q0 + C, *v0 = q0 + 2 * C;
            float *dq0 = dqkv + (long)b * T * C3 + h * hs;
            float *dk0 = dq0 + C, *dv0 = dq0 + 2 * C;
            const float *dy0 = dout + (long)b * T * C + h * hs;
            const float *P = att + ((long)b * NH + h) * T * T;
            if (h + 1 < NH)
                prefetch_head(q0 + hs, C3, C, dy0 + hs, T, hs);
            else if (b + 1 < B)
                prefetch_head(qkv + (b + 1L) * T * C3, C3, C, dout + (b + 1L) * T * C, T, hs);
            /* dP = dY V^T, then the softmax backward in place:
             * dS = P (dP - sum_k P dP) * scale */
            pack_tr(pb, v0, C3, hs, T);
            for (int t0 = 0; t0 < T; t0 += OPS_MR) {
                int mr = T - t0 < OPS_MR ? T - t0 : OPS_MR;
                /* the next tile's probabilities come from the forward,
                 * long out of cache: ask for them now */
                for (int t = t0 + OPS_MR; t < t0 + 2 * OPS_MR && t < T; t++)
                    for (int k = 0; k <= t; k += 16)
                        _mm_prefetch((const char *)(P + (long)t * T + k), _MM_HINT_T0);
                att_scores(dS + t0 * ds, ds, dy0 + (long)t0 * C, C, pb, hs, t0 + mr, mr);
                for (int r = 0; r < mr; r++) {
                    int n = t0 + r + 1;
                    const float *a = P + (long)(t0 + r) * T;
                    float *s = dS + (t0 + r) * ds;
                    __m256 acc0 = _mm256_setzero_ps(), acc1 = acc0;
                    int i = 0;
                    for (; i + 16 <= n; i += 16) {
                        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_load_ps(s + i), acc0);
                        acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8),
                                               _mm256_load_ps(s + i + 8), acc1);
                    }
                    for (; i < n; i += 8)
                        acc0 = _mm256_fmadd_ps(load_n(a + i, n - i), load_n(s + i, n - i), acc0);
                    __m256 dsum = _mm256_set1_ps(hsum(_mm256_add_ps(acc0, acc1)));
                    for (i = 0; i < n; i += 8) {
                        __m256 g = _mm256_sub_ps(_mm256_load_ps(s + i), dsum);
                        _mm256_store_ps(s + i,
                                        _mm256_mul_ps(_mm256_mul_ps(load_n(a + i, n - i), g), sc));
                    }
                }
            }
            /* dQ += dS K */
            pack_cp(pb, k0, C3, T, hs);
            for (int t0 = 0; t0 < T; t0 += OPS_MR)
                att_rowmix(dq0, C3, dS, ds, T, pb, k0, C3, hs, t0,
                           T - t0 < OPS_MR ? T - t0 : OPS_MR, 1);
            /* dK += dS^T Q */
            pack_cp(pb, q0, C3, T, hs);
            for (int t0 = 0; t0 < T; t0 += OPS_MR)
                att_colmix(dk0, C3, dS, ds, T, pb, q0, C3, hs, t0,
                           T - t0 < OPS_MR ? T - t0 : OPS_MR);
            /* dV += P^T dY */
            pack_cp(pb, dy0, C, T, hs);
            for (int t0 = 0; t0 < T; t0 += OPS_MR)
                att_colmix(dv0, C3, P, T, T, pb, dy0, C, hs, t0, T - t0 < OPS_MR ? T - t0 : OPS_MR);
        }
    }
}

NS_AVX2 void ops_avx2_attention_forward(float *out, float *att, const float *qkv, int B, int T,
                                        int C, int NH)
{
    if (att_tiled_fits(T, C / NH))
        attention_forward_tiled(out, att, qkv, B, T, C, NH);
    else
        attention_forward_rows(out, att, qkv, B, T, C, NH);
}

NS_AVX2 void ops_avx2_attention_backward(float *dqkv, const float *dout, const float *qkv,
                                         const float *att, int B, int T, int C, int NH)
{
    if (att_tiled_fits(T, C / NH))
        attention_backward_tiled(dqkv, dout, qkv, att, B, T, C, NH);
    else
        attention_backward_rows(dqkv, dout, qkv, att, B, T, C, NH);
}

/* ---- GELU (tanh form) --------------------------------------------------- */

/* 0.5 x (1 + tanh(u)) = x * sigmoid(2u) = x / (1 + exp(-2u)), u =
 * sqrt(2/pi) (x + 0.044715 x^3): one exp and one division, accurate to a
 * few ulp where tanhf's 1 + tanh would lose digits for negative x. */
/* 1 / y within 2 ulp for y >= 1: the hardware estimate (12 bits) and one
 * Newton step; a fifth of a division's cost. Past 2^126 it gives 0 (the
 * estimate flushes), the right limit here. */
NS_AVX2_INLINE __m256 recip(__m256 y)
{
    __m256 r = _mm256_rcp_ps(y);
    return _mm256_mul_ps(r, _mm256_fnmadd_ps(y, r, _mm256_set1_ps(2.0f)));
}

#define GELU_S 0.7978845608028654f
#define GELU_C 0.044715f

NS_AVX2 void ops_avx2_gelu_forward(float *out, const float *inp, int n, float *amax)
{
    const __m256 m2s = _mm256_set1_ps(-2.0f * GELU_S), c = _mm256_set1_ps(GELU_C),
                 one = _mm256_set1_ps(1.0f);
    amax8 mx = amax_init();
    for (int i = 0; i < n; i += 8) {
        int m = n - i;
        __m256 x = load_n(inp + i, m);
        __m256 x3 = _mm256_mul_ps(_mm256_mul_ps(x, x), x);
        __m256 e = exp256(_mm256_mul_ps(_mm256_fmadd_ps(c, x3, x), m2s));
        __m256 y = _mm256_mul_ps(x, recip(_mm256_add_ps(one, e)));
        store_n(out + i, y, m);
        amax_add(&mx, y, m);
    }
    if (amax)
        *amax = amax_result(mx);
}

/* d/dx = s + 2 x s (1 - s) u', s = 1 / (1 + e), e = exp(-2u), 1 - s = e s */
NS_AVX2 int ops_avx2_gelu_backward(float *dinp, const float *inp, const float *dout, int n, int set)
{
    const __m256 m2s = _mm256_set1_ps(-2.0f * GELU_S), c = _mm256_set1_ps(GELU_C),
                 one = _mm256_set1_ps(1.0f), s0 = _mm256_set1_ps(GELU_S),
                 s3c = _mm256_set1_ps(3.0f * GELU_C * GELU_S), two = _mm256_set1_ps(2.0f);
    __m256 bad = _mm256_setzero_ps(), bad_d = bad;
    for (int i = 0; i < n; i += 8) {
        int m = n - i;
        __m256 x = load_n(inp + i, m);
        __m256 x2 = _mm256_mul_ps(x, x);
        __m256 e = exp256(_mm256_mul_ps(_mm256_fmadd_ps(c, _mm256_mul_ps(x2, x), x), m2s));
        __m256 s = recip(_mm256_add_ps(one, e));
        __m256 du = _mm256_fmadd_ps(s3c, x2, s0);
        __m256 q = _mm256_mul_ps(_mm256_mul_ps(_mm256_mul_ps(two, x), du), _mm256_mul_ps(e, s));
        __m256 g = _mm256_fmadd_ps(q, s, s);
        __m256 dy = load_n(dout + i, m);
        __m256 d = set ? _mm256_mul_ps(dy, g) : _mm256_fmadd_ps(dy, g, load_n(dinp + i, m));
        store_n(dinp + i, d, m);
        /* d - d is +0 for finite d, NaN otherwise (masked lanes: 0) */
        bad = _mm256_or_ps(bad, _mm256_sub_ps(d, d));
        bad_d = _mm256_or_ps(bad_d, _mm256_sub_ps(dy, dy));
    }
    return (_mm256_testz_si256(_mm256_castps_si256(bad), _mm256_castps_si256(bad)) ? 0
                                                                                   : GELU_BAD_DINP) |
           (_mm256_testz_si256(_mm256_castps_si256(bad_d), _mm256_castps_si256(bad_d))
                ? 0
                : GELU_BAD_DOUT);
}

/* ---- softmax and the cross-entropy's sum -------------------------------- */

NS_AVX2 void ops_avx2_softmax_forward(float *probs, const float *logits, int N, int V)
{
    for (int n = 0; n < N; n++) {
        const float *l = logits + (long)n * V;
        float *p = probs + (long)n * V;
        if (p != l)
            memcpy(p, l, sizeof(float) * (size_t)V);
        softmax_row(p, V);
    }
}

NS_AVX2 float ops_avx2_sumexp(const float *l, int n, float *maxv)
{
    __m256 vm = _mm256_set1_ps(-INFINITY);
    for (int i = 0; i < n; i += 8) {
        int m = n - i;
        __m256 x = load_n(l + i, m);
        if (m < 8)
            x = _mm256_blendv_ps(_mm256_set1_ps(-INFINITY), x, _mm256_castsi256_ps(lanes(m)));
        vm = _mm256_max_ps(vm, x);
    }
    float mx = hmax(vm);
    __m256 vmx = _mm256_set1_ps(mx), vs = _mm256_setzero_ps();
    for (int i = 0; i < n; i += 8) {
        int m = n - i;
        __m256 e = exp256(_mm256_sub_ps(load_n(l + i, m), vmx));
        if (m < 8)
            e = _mm256_and_ps(e, _mm256_castsi256_ps(lanes(m)));
        vs = _mm256_add_ps(vs, e);
    }
    *maxv = mx;
    return hsum(vs);
}

/* ---- LayerNorm ----------------------------------------------------------
 * Row sums use four vector accumulators (lanes of i mod 32), added in a
 * fixed tree: one chain would make a row wait on its adds' latency. */

NS_AVX2_INLINE __m256 row_sum4(__m256 a0, __m256 a1, __m256 a2, __m256 a3)
{
    return _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3));
}

NS_AVX2 void ops_avx2_layernorm_forward(float *out, float *mean, float *rstd, const float *inp,
                                        const float *w, const float *b, int N, int C, float eps,
                                        float *amax)
{
    amax8 mx = amax_init();
    for (int n = 0; n < N; n++) {
        const float *x = inp + (long)n * C;
        float *o = out + (long)n * C;
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        int i = 0;
        for (; i + 32 <= C; i += 32) {
            a0 = _mm256_add_ps(a0, _mm256_loadu_ps(x + i));
            a1 = _mm256_add_ps(a1, _mm256_loadu_ps(x + i + 8));
            a2 = _mm256_add_ps(a2, _mm256_loadu_ps(x + i + 16));
            a3 = _mm256_add_ps(a3, _mm256_loadu_ps(x + i + 24));
        }
        for (; i < C; i += 8)
            a0 = _mm256_add_ps(a0, load_n(x + i, C - i));
        float m = hsum(row_sum4(a0, a1, a2, a3)) / (float)C;
        __m256 vm = _mm256_set1_ps(m);
        a0 = a1 = a2 = a3 = _mm256_setzero_ps();
        for (i = 0; i + 32 <= C; i += 32) {
            __m256 d0 = _mm256_sub_ps(_mm256_loadu_ps(x + i), vm);
            __m256 d1 = _mm256_sub_ps(_mm256_loadu_ps(x + i + 8), vm);
            __m256 d2 = _mm256_sub_ps(_mm256_loadu_ps(x + i + 16), vm);
            __m256 d3 = _mm256_sub_ps(_mm256_loadu_ps(x + i + 24), vm);
            a0 = _mm256_fmadd_ps(d0, d0, a0), a1 = _mm256_fmadd_ps(d1, d1, a1);
            a2 = _mm256_fmadd_ps(d2, d2, a2), a3 = _mm256_fmadd_ps(d3, d3, a3);
        }
        for (; i < C; i += 8) {
            int k = C - i;
            __m256 d = _mm256_sub_ps(load_n(x + i, k), vm);
            if (k < 8)
                d = _mm256_and_ps(d, _mm256_castsi256_ps(lanes(k)));
            a0 = _mm256_fmadd_ps(d, d, a0);
        }
        float s = 1.0f / sqrtf(hsum(row_sum4(a0, a1, a2, a3)) / (float)C + eps);
        __m256 vs = _mm256_set1_ps(s);
        for (i = 0; i < C; i += 8) {
            int k = C - i;
            __m256 xh = _mm256_mul_ps(_mm256_sub_ps(load_n(x + i, k), vm), vs);
            __m256 y = _mm256_fmadd_ps(xh, load_n(w + i, k), load_n(b + i, k));
            store_n(o + i, y, k);
            if (amax)
                amax_add(&mx, y, k);
        }
        mean[n] = m;
        rstd[n] = s;
    }
    if (amax)
        *amax = amax_result(mx);
}

/* dinp's rows, and dw and db's columns [c0, c1) summed over the N rows in
 * order; dinp NULL: only dw and db (c0 a multiple of 8), dw NULL: only
 * dinp. Each value gets the same operations whichever parts a call
 * does, so a split over rows (dinp) and columns (dw, db) gives the bits
 * of one whole call. */
NS_AVX2 int ops_avx2_layernorm_backward(float *dinp, float *dw, float *db, const float *dout,
                                        const float *inp, const float *w, const float *mean,
                                        const float *rstd, int N, int C, int c0, int c1)
{
    __m256 bad = _mm256_setzero_ps(); /* or of dx - dx: +0 while every dx is finite */
    if (dinp)
        c0 = 0, c1 = C;
    for (int n = 0; n < N; n++) {
        const float *x = inp + (long)n * C;
        const float *d = dout + (long)n * C;
        __m256 vm = _mm256_set1_ps(mean[n]), vs = _mm256_set1_ps(rstd[n]);
        __m256 dmean = _mm256_setzero_ps(), dnm = dmean;
        if (dinp) {
            __m256 a0 = _mm256_setzero_ps(), a1 = a0, b0 = a0, b1 = a0;
            int i = 0;
            for (; i + 16 <= C; i += 16) {
                __m256 xh0 = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm), vs);
                __m256 xh1 = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i + 8), vm), vs);
                __m256 g0 = _mm256_mul_ps(_mm256_loadu_ps(d + i), _mm256_loadu_ps(w + i));
                __m256 g1 = _mm256_mul_ps(_mm256_loadu_ps(d + i + 8), _mm256_loadu_ps(w + i + 8));
                a0 = _mm256_add_ps(a0, g0), a1 = _mm256_add_ps(a1, g1);
                b0 = _mm256_fmadd_ps(g0, xh0, b0), b1 = _mm256_fmadd_ps(g1, xh1, b1);
            }
            for (; i < C; i += 8) {
                int k = C - i;
                __m256 xh = _mm256_mul_ps(_mm256_sub_ps(load_n(x + i, k), vm), vs);
                __m256 g = _mm256_mul_ps(load_n(d + i, k), load_n(w + i, k));
                a0 = _mm256_add_ps(a0, g);
                b0 = _mm256_fmadd_ps(g, xh, b0);
            }
            dmean = _mm256_set1_ps(hsum(_mm256_add_ps(a0, a1)) / (float)C);
            dnm = _mm256_set1_ps(hsum(_mm256_add_ps(b0, b1)) / (float)C);
        }
        for (int i = c0; i < c1; i += 8) {
            int k = c1 - i;
            __m256 dv = load_n(d + i, k);
            __m256 xh = _mm256_mul_ps(_mm256_sub_ps(load_n(x + i, k), vm), vs);
            if (dw) {
                store_n(db + i, _mm256_add_ps(load_n(db + i, k), dv), k);
                store_n(dw + i, _mm256_fmadd_ps(xh, dv, load_n(dw + i, k)), k);
            }
            if (dinp) {
                float *dx = dinp + (long)n * C;
                __m256 dxh = _mm256_mul_ps(dv, load_n(w + i, k));
                __m256 g = _mm256_fnmadd_ps(xh, dnm, _mm256_sub_ps(dxh, dmean));
                __m256 y = _mm256_fmadd_ps(vs, g, load_n(dx + i, k));
                store_n(dx + i, y, k);
                y = _mm256_sub_ps(y, y);
                if (k < 8)
                    y = _mm256_and_ps(y, _mm256_castsi256_ps(lanes(k)));
                bad = _mm256_or_ps(bad, y);
            }
        }
    }
    return !_mm256_testz_si256(_mm256_castps_si256(bad), _mm256_castps_si256(bad));
}

/* ---- absmax ------------------------------------------------------------- */

NS_AVX2 float ops_avx2_absmax(const float *x, long n)
{
    const __m256 absm = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    __m256 m0 = _mm256_setzero_ps(), m1 = m0, bad = m0;
    long i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256 a = _mm256_and_ps(_mm256_loadu_ps(x + i), absm);
        __m256 b = _mm256_and_ps(_mm256_loadu_ps(x + i + 8), absm);
        bad = _mm256_or_ps(bad, _mm256_cmp_ps(a, b, _CMP_UNORD_Q));
        m0 = _mm256_max_ps(m0, a);
        m1 = _mm256_max_ps(m1, b);
    }
    for (; i < n; i += 8) {
        int k = n - i < 8 ? (int)(n - i) : 8;
        __m256 a = _mm256_and_ps(load_n(x + i, k), absm); /* masked lanes read 0 */
        bad = _mm256_or_ps(bad, _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
        m0 = _mm256_max_ps(m0, a);
    }
    if (_mm256_movemask_ps(bad))
        return NAN;
    return hmax(_mm256_max_ps(m0, m1));
}

/* ---- the residual sum -----------------------------------------------------
 * a x + g f as two products and a sum, no FMA: the portable loop's bits */
NS_AVX2 float ops_avx2_residual(float *out, const float *x, float a, const float *f, float g,
                                long n)
{
    const __m256 va = _mm256_set1_ps(a), vg = _mm256_set1_ps(g);
    amax8 mx = amax_init();
    for (long i = 0; i < n; i += 8) {
        int k = n - i < 8 ? (int)(n - i) : 8;
        __m256 y = _mm256_add_ps(_mm256_mul_ps(va, load_n(x + i, k)),
                                 _mm256_mul_ps(vg, load_n(f + i, k)));
        store_n(out + i, y, k);
        amax_add(&mx, y, k);
    }
    return amax_result(mx);
}

/* ---- sums of squares and AdamW -------------------------------------------
 * Lanes and reduction trees as ops.h describes; the portable loops in
 * ops.c give the same bits. */

/* (j + (j+4)) for j = 0..3 of lo = lanes 0..3 and hi = lanes 4..7, then
 * (0 + 2) + (1 + 3) */
NS_AVX2_INLINE double hsum_pd(__m256d lo, __m256d hi)
{
    __m256d t = _mm256_add_pd(lo, hi);
    __m128d u = _mm_add_pd(_mm256_castpd256_pd128(t), _mm256_extractf128_pd(t, 1));
    return _mm_cvtsd_f64(_mm_add_sd(u, _mm_unpackhi_pd(u, u)));
}

/* x - x is +0 (all bits clear) for finite x and NaN otherwise: or the
 * differences together, four vectors at a time */
NS_AVX2 int ops_avx2_any_nonfinite(const float *x, size_t n)
{
    __m256 o0 = _mm256_setzero_ps(), o1 = o0, o2 = o0, o3 = o0;
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m256 a = _mm256_loadu_ps(x + i), b = _mm256_loadu_ps(x + i + 8);
        __m256 c = _mm256_loadu_ps(x + i + 16), d = _mm256_loadu_ps(x + i + 24);
        o0 = _mm256_or_ps(o0, _mm256_sub_ps(a, a)), o1 = _mm256_or_ps(o1, _mm256_sub_ps(b, b));
        o2 = _mm256_or_ps(o2, _mm256_sub_ps(c, c)), o3 = _mm256_or_ps(o3, _mm256_sub_ps(d, d));
    }
    for (; i < n; i += 8) { /* masked lanes read 0 */
        __m256 a = load_n(x + i, n - i < 8 ? (int)(n - i) : 8);
        o0 = _mm256_or_ps(o0, _mm256_sub_ps(a, a));
    }
    __m256 o = _mm256_or_ps(_mm256_or_ps(o0, o1), _mm256_or_ps(o2, o3));
    return !_mm256_testz_si256(_mm256_castps_si256(o), _mm256_castps_si256(o));
}

/* a[j] += (double)v[4 j .. 4 j + 3]^2 for the 16 floats lo, hi; a
 * float's square is exact in double, so the FMA rounds once, as the
 * portable multiply then add does */
NS_AVX2_INLINE void sumsq16(__m256d a[4], __m256 lo, __m256 hi)
{
    __m256d d[4] = {_mm256_cvtps_pd(_mm256_castps256_ps128(lo)),
                    _mm256_cvtps_pd(_mm256_extractf128_ps(lo, 1)),
                    _mm256_cvtps_pd(_mm256_castps256_ps128(hi)),
                    _mm256_cvtps_pd(_mm256_extractf128_ps(hi, 1))};
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++)
        a[j] = _mm256_fmadd_pd(d[j], d[j], a[j]);
}

NS_AVX2 double ops_avx2_sumsq(const float *x, size_t n)
{
    __m256d a[4] = {_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd(),
                    _mm256_setzero_pd()};
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        sumsq16(a, _mm256_loadu_ps(x + i), _mm256_loadu_ps(x + i + 8));
    if (i < n) { /* masked lanes read 0 and add 0 */
        int k = (int)(n - i);
        sumsq16(a, load_n(x + i, k), k > 8 ? load_n(x + i + 8, k - 8) : _mm256_setzero_ps());
    }
    /* lanes j, j+4, j+8, j+12 are lane j of a[0..3] */
    return hsum_pd(_mm256_add_pd(a[0], a[1]), _mm256_add_pd(a[2], a[3]));
}

NS_AVX2 void ops_avx2_adamw(float *p, const float *g, float *m, float *v, size_t n,
                            const ops_adamw_args *a, double sums[2])
{
    const __m256 gs = _mm256_set1_ps(a->grad_scale), b1 = _mm256_set1_ps(a->beta1),
                 b2 = _mm256_set1_ps(a->beta2), c1 = _mm256_set1_ps(1.0f - a->beta1),
                 c2 = _mm256_set1_ps(1.0f - a->beta2), decay = _mm256_set1_ps(a->decay),
                 step = _mm256_set1_ps(a->step), bc2 = _mm256_set1_ps(a->bc2_sqrt),
                 eps = _mm256_set1_ps(a->eps);
    __m256d u0 = _mm256_setzero_pd(), u1 = u0, w0 = u0, w1 = u0;
    for (size_t i = 0; i < n; i += 8) {
        int k = n - i < 8 ? (int)(n - i) : 8;
        /* masked-off lanes compute on zeros (0 / eps: no trap, no NaN) and
         * add exactly 0 to the sums */
        __m256 gi = _mm256_mul_ps(load_n(g + i, k), gs);
        __m256 mi = _mm256_add_ps(_mm256_mul_ps(b1, load_n(m + i, k)), _mm256_mul_ps(c1, gi));
        __m256 vi = _mm256_add_ps(_mm256_mul_ps(b2, load_n(v + i, k)),
                                  _mm256_mul_ps(_mm256_mul_ps(c2, gi), gi));
        __m256 old = load_n(p + i, k);
        __m256 den = _mm256_add_ps(_mm256_div_ps(_mm256_sqrt_ps(vi), bc2), eps);
        __m256 np = _mm256_sub_ps(_mm256_mul_ps(old, decay),
                                  _mm256_div_ps(_mm256_mul_ps(step, mi), den));
        store_n(m + i, mi, k);
        store_n(v + i, vi, k);
        store_n(p + i, np, k);
        if (k < 8) /* eps = 0 would make 0 / 0 of the masked-off lanes */
            np = _mm256_and_ps(np, _mm256_castsi256_ps(lanes(k)));
        __m256d n0 = _mm256_cvtps_pd(_mm256_castps256_ps128(np));
        __m256d n1 = _mm256_cvtps_pd(_mm256_extractf128_ps(np, 1));
        __m256d d0 = _mm256_sub_pd(n0, _mm256_cvtps_pd(_mm256_castps256_ps128(old)));
        __m256d d1 = _mm256_sub_pd(n1, _mm256_cvtps_pd(_mm256_extractf128_ps(old, 1)));
        /* d * d rounds: multiply then add, as the portable loop */
        u0 = _mm256_add_pd(u0, _mm256_mul_pd(d0, d0));
        u1 = _mm256_add_pd(u1, _mm256_mul_pd(d1, d1));
        w0 = _mm256_fmadd_pd(n0, n0, w0); /* exact square: one rounding either way */
        w1 = _mm256_fmadd_pd(n1, n1, w1);
    }
    sums[0] += hsum_pd(u0, u1);
    sums[1] += hsum_pd(w0, w1);
}

#endif
