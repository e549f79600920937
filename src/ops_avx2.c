/* ops_avx2.c - the x86 AVX2+FMA build of the kernels (ops_kern.h).
 *
 * The whole file is compiled for avx2,fma (the pragmas below), so it
 * builds with the project's ordinary flags and the binary still runs on
 * any x86-64: ops.c calls in here only when the CPU reports both
 * features. The kernels are the ones ops_generic.c builds over plain C,
 * with the same bits; only the packing routines, which move data and
 * round nothing, are written for AVX2 alone. On other architectures the
 * file is empty.
 */
#include "ops_simd.h"

#if NS_OPS_X86

#include <immintrin.h>

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#endif

#define NS_V8_AVX2 1
#include "ops_v8.h"

/* ---- packing for the gemm (and the tiled attention) -------------------- */

enum { PACK_PF = 32 }; /* rows ahead to prefetch */

/* 8 x 8 transpose of the rows r[0..7] */
V8_INLINE void tr8(__m256 r[8])
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
static void pack_tr(float *dst, const float *src, long rs, int kc, int nc)
{
    for (int j0 = 0; j0 < nc; j0 += 8) {
        float *d = dst + (long)(j0 & ~15) * kc + (j0 & 15);
        for (int k0 = 0; k0 < kc; k0 += 8) {
            int nk = kc - k0 < 8 ? kc - k0 : 8;
            __m256 r[8];
            for (int j = 0; j < 8; j++)
                r[j] = j0 + j < nc ? v8_load_n(src + (j0 + j) * rs + k0, nk) : _mm256_setzero_ps();
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
static void pack_cp(float *dst, const float *src, long rs, int kc, int nc)
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
            _mm256_storeu_ps(d, v8_load_n(s + nfull, n));
            _mm256_storeu_ps(d + 8, n > 8 ? v8_load_n(s + nfull + 8, n - 8) : _mm256_setzero_ps());
        }
    }
}

void ops_avx2_gemm_pack_b(float *bp, const float *b, long rsb, long csb, int kc, int nc)
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
void ops_avx2_gemm_pack_a(float *ap, const float *a, long csa, int mc, int kc)
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
            __m256 v = v8_load_n(src + ir, n);
            if (n < OPS_MR)
                v = _mm256_blendv_ps(_mm256_set1_ps(src[ir]), v, _mm256_castsi256_ps(v8_lanes_i(n)));
            _mm256_storeu_ps(dst, v);
        }
    }
}

#define OPS_KERN_TABLE ops_kernels_avx2
#include "ops_kern.h"

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#endif
