/* ops_v8.h - private to the kernels: eight float lanes, two ways.
 *
 * The kernels (ops_kern.h) are written once against the v8 operations
 * below and compiled twice: in ops_avx2.c over AVX2+FMA registers, in
 * ops_generic.c over plain C arrays. Every operation here is one whose
 * result IEEE 754 fixes (add, sub, mul, div, sqrt, fused multiply-add,
 * compare, select, bit masks), and the portable form computes lane by
 * lane exactly what the x86 instruction does, including its NaN rules
 * (MAXPS returns the second operand when either is NaN), so the two
 * builds of one kernel give the same bits on every machine. No hardware
 * estimate (rcp, rsqrt) and no libm function chosen per CPU is used.
 *
 * The includer defines NS_V8_AVX2 (and compiles for avx2,fma) or
 * nothing (portable). Not a public header.
 */
#ifndef NS_OPS_V8_H
#define NS_OPS_V8_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#ifdef NS_V8_AVX2
#include <immintrin.h>
#define V8_INLINE __attribute__((always_inline)) static inline

typedef __m256 v8;
typedef __m256d v4d;

/* lane mask of the first n (0..8) lanes */
static const int32_t v8_mask_tab[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};

V8_INLINE __m256i v8_lanes_i(int n) { return _mm256_loadu_si256((const __m256i *)(v8_mask_tab + 8 - n)); }
V8_INLINE v8 v8_first(int n) { return _mm256_castsi256_ps(v8_lanes_i(n)); }
V8_INLINE v8 v8_zero(void) { return _mm256_setzero_ps(); }
V8_INLINE v8 v8_set1(float x) { return _mm256_set1_ps(x); }
V8_INLINE v8 v8_bcast(const float *p) { return _mm256_broadcast_ss(p); }
V8_INLINE v8 v8_loadu(const float *p) { return _mm256_loadu_ps(p); }
V8_INLINE v8 v8_load(const float *p) { return _mm256_load_ps(p); }
V8_INLINE void v8_storeu(float *p, v8 v) { _mm256_storeu_ps(p, v); }
V8_INLINE void v8_store(float *p, v8 v) { _mm256_store_ps(p, v); }
/* n (1..8) floats; lanes past n read as 0 and their memory is not touched */
V8_INLINE v8 v8_load_n(const float *p, int n)
{
    return n >= 8 ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, v8_lanes_i(n));
}
V8_INLINE void v8_store_n(float *p, v8 v, int n)
{
    if (n >= 8)
        _mm256_storeu_ps(p, v);
    else
        _mm256_maskstore_ps(p, v8_lanes_i(n), v);
}
V8_INLINE v8 v8_add(v8 a, v8 b) { return _mm256_add_ps(a, b); }
V8_INLINE v8 v8_sub(v8 a, v8 b) { return _mm256_sub_ps(a, b); }
V8_INLINE v8 v8_mul(v8 a, v8 b) { return _mm256_mul_ps(a, b); }
V8_INLINE v8 v8_div(v8 a, v8 b) { return _mm256_div_ps(a, b); }
V8_INLINE v8 v8_sqrt(v8 a) { return _mm256_sqrt_ps(a); }
/* a b + c, one rounding */
V8_INLINE v8 v8_fma(v8 a, v8 b, v8 c) { return _mm256_fmadd_ps(a, b, c); }
/* c - a b, one rounding */
V8_INLINE v8 v8_fnma(v8 a, v8 b, v8 c) { return _mm256_fnmadd_ps(a, b, c); }
/* a > b ? a : b and a < b ? a : b per lane (so b when either is NaN) */
V8_INLINE v8 v8_max(v8 a, v8 b) { return _mm256_max_ps(a, b); }
V8_INLINE v8 v8_min(v8 a, v8 b) { return _mm256_min_ps(a, b); }
V8_INLINE v8 v8_and(v8 a, v8 b) { return _mm256_and_ps(a, b); }
V8_INLINE v8 v8_or(v8 a, v8 b) { return _mm256_or_ps(a, b); }
/* ~m & x */
V8_INLINE v8 v8_andnot(v8 m, v8 x) { return _mm256_andnot_ps(m, x); }
V8_INLINE v8 v8_abs(v8 a) { return _mm256_and_ps(a, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff))); }
/* all-ones lanes where a or b is NaN / where a < b (ordered) */
V8_INLINE v8 v8_unord(v8 a, v8 b) { return _mm256_cmp_ps(a, b, _CMP_UNORD_Q); }
V8_INLINE v8 v8_lt(v8 a, v8 b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
/* lanes of b where m's sign bit is set, else of a */
V8_INLINE v8 v8_blend(v8 a, v8 b, v8 m) { return _mm256_blendv_ps(a, b, m); }
/* any sign bit set / any bit set */
V8_INLINE int v8_any_sign(v8 m) { return _mm256_movemask_ps(m) != 0; }
V8_INLINE int v8_any_bit(v8 v) { return !_mm256_testz_si256(_mm256_castps_si256(v), _mm256_castps_si256(v)); }
/* to the nearest integer, ties to even */
V8_INLINE v8 v8_round(v8 a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
/* 2^n for integral n in [-126, 127] (the float with exponent field n + 127);
 * a NaN n converts to INT32_MIN, which wraps to 1.0 */
V8_INLINE v8 v8_pow2n(v8 n)
{
    __m256i e = _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127));
    return _mm256_castsi256_ps(_mm256_slli_epi32(e, 23));
}

/* sum of the 8 lanes, in the fixed order ((0+4)+(2+6)) + ((1+5)+(3+7)) */
V8_INLINE float v8_hsum(v8 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
/* max of the 8 lanes, the same tree as v8_hsum with v8_max's rule */
V8_INLINE float v8_hmax(v8 v)
{
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
/* lane j = ((s[j]0 + s[j]1) + (s[j]2 + s[j]3)) + ((s[j]4 + s[j]5) + (s[j]6 + s[j]7)) */
V8_INLINE v8 v8_sum8(const v8 s[8])
{
    __m256 t0 = _mm256_hadd_ps(s[0], s[1]), t1 = _mm256_hadd_ps(s[2], s[3]);
    __m256 t2 = _mm256_hadd_ps(s[4], s[5]), t3 = _mm256_hadd_ps(s[6], s[7]);
    __m256 u0 = _mm256_hadd_ps(t0, t1), u1 = _mm256_hadd_ps(t2, t3);
    return _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20),
                         _mm256_permute2f128_ps(u0, u1, 0x31));
}
V8_INLINE void v8_prefetch(const float *p) { _mm_prefetch((const char *)p, _MM_HINT_T0); }
V8_INLINE void v8_prefetch_l2(const float *p) { _mm_prefetch((const char *)p, _MM_HINT_T1); }

/* four doubles: lanes 0..3 or 4..7 of a v8, widened (exact) */
#define V4D_INLINE V8_INLINE
V4D_INLINE v4d v4d_zero(void) { return _mm256_setzero_pd(); }
V4D_INLINE v4d v4d_lo(v8 v) { return _mm256_cvtps_pd(_mm256_castps256_ps128(v)); }
V4D_INLINE v4d v4d_hi(v8 v) { return _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)); }
V4D_INLINE v4d v4d_add(v4d a, v4d b) { return _mm256_add_pd(a, b); }
V4D_INLINE v4d v4d_sub(v4d a, v4d b) { return _mm256_sub_pd(a, b); }
V4D_INLINE v4d v4d_mul(v4d a, v4d b) { return _mm256_mul_pd(a, b); }
V4D_INLINE v4d v4d_fma(v4d a, v4d b, v4d c) { return _mm256_fmadd_pd(a, b, c); }
/* t = lo + hi; (t0 + t2) + (t1 + t3) */
V4D_INLINE double v4d_hsum2(v4d lo, v4d hi)
{
    __m256d t = _mm256_add_pd(lo, hi);
    __m128d u = _mm_add_pd(_mm256_castpd256_pd128(t), _mm256_extractf128_pd(t, 1));
    return _mm_cvtsd_f64(_mm_add_sd(u, _mm_unpackhi_pd(u, u)));
}

#else /* portable */

/* forced inline, so every lane loop lands in the kernel (and in each of
 * its clones, ops_generic.c); not under the sanitizers, whose checks on
 * so many inlined loops make one file take minutes to compile */
#if (defined(__GNUC__) || defined(__clang__)) && !defined(__SANITIZE_ADDRESS__) && \
    !defined(__SANITIZE_THREAD__) && !defined(NS_SANITIZED)
#define V8_INLINE __attribute__((always_inline)) static inline
#else
#define V8_INLINE static inline
#endif
#define V4D_INLINE V8_INLINE

typedef struct {
    float f[8];
} v8;
typedef struct {
    double d[4];
} v4d;

V8_INLINE uint32_t v8_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}
V8_INLINE float v8_float(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}
V8_INLINE v8 v8_first(int n)
{
    v8 r;
    for (int i = 0; i < 8; i++)
        r.f[i] = v8_float(i < n ? 0xffffffffu : 0u);
    return r;
}
V8_INLINE v8 v8_zero(void) { return (v8){{0}}; }
V8_INLINE v8 v8_set1(float x)
{
    v8 r;
    for (int i = 0; i < 8; i++)
        r.f[i] = x;
    return r;
}
V8_INLINE v8 v8_bcast(const float *p) { return v8_set1(*p); }
V8_INLINE v8 v8_loadu(const float *p)
{
    v8 r;
    memcpy(r.f, p, sizeof r.f);
    return r;
}
V8_INLINE v8 v8_load(const float *p) { return v8_loadu(p); }
V8_INLINE void v8_storeu(float *p, v8 v) { memcpy(p, v.f, sizeof v.f); }
V8_INLINE void v8_store(float *p, v8 v) { v8_storeu(p, v); }
V8_INLINE v8 v8_load_n(const float *p, int n)
{
    v8 r = v8_zero();
    for (int i = 0; i < 8 && i < n; i++)
        r.f[i] = p[i];
    return r;
}
V8_INLINE void v8_store_n(float *p, v8 v, int n)
{
    for (int i = 0; i < 8 && i < n; i++)
        p[i] = v.f[i];
}
V8_INLINE v8 v8_add(v8 a, v8 b)
{
    for (int i = 0; i < 8; i++)
        a.f[i] += b.f[i];
    return a;
}
V8_INLINE v8 v8_sub(v8 a, v8 b)
{
    for (int i = 0; i < 8; i++)
        a.f[i] -= b.f[i];
    return a;
}
V8_INLINE v8 v8_mul(v8 a, v8 b)
{
    for (int i = 0; i < 8; i++)
        a.f[i] *= b.f[i];
    return a;
}
V8_INLINE v8 v8_div(v8 a, v8 b)
{
    for (int i = 0; i < 8; i++)
        a.f[i] /= b.f[i];
    return a;
}
V8_INLINE v8 v8_sqrt(v8 a)
{
    for (int i = 0; i < 8; i++)
        a.f[i] = sqrtf(a.f[i]);
    return a;
}
V8_INLINE v8 v8_fma(v8 a, v8 b, v8 c)
{
    for (int i = 0; i < 8; i++)
        c.f[i] = fmaf(a.f[i], b.f[i], c.f[i]);
    return c;
}
V8_INLINE v8 v8_fnma(v8 a, v8 b, v8 c)
{
    for (int i = 0; i < 8; i++)
        c.f[i] = fmaf(-a.f[i], b.f[i], c.f[i]);
    return c;
}
V8_INLINE v8 v8_max(v8 a, v8 b)
{
    for (int i = 0; i < 8; i++)
        a.f[i] = a.f[i] > b.f[i] ? a.f[i] : b.f[i];
    return a;
}
V8_INLINE v8 v8_min(v8 a, v8 b)
{
    for (int i = 0; i < 8; i++)
        a.f[i] = a.f[i] < b.f[i] ? a.f[i] : b.f[i];
    return a;
}
V8_INLINE v8 v8_and(v8 a, v8 b)
{
    for (int i = 0; i < 8; i++)
        a.f[i] = v8_float(v8_bits(a.f[i]) & v8_bits(b.f[i]));
    return a;
}
V8_INLINE v8 v8_or(v8 a, v8 b)
{
    for (int i = 0; i < 8; i++)
        a.f[i] = v8_float(v8_bits(a.f[i]) | v8_bits(b.f[i]));
    return a;
}
V8_INLINE v8 v8_andnot(v8 m, v8 x)
{
    for (int i = 0; i < 8; i++)
        x.f[i] = v8_float(~v8_bits(m.f[i]) & v8_bits(x.f[i]));
    return x;
}
V8_INLINE v8 v8_abs(v8 a)
{
    for (int i = 0; i < 8; i++)
        a.f[i] = v8_float(v8_bits(a.f[i]) & 0x7fffffffu);
    return a;
}
V8_INLINE v8 v8_unord(v8 a, v8 b)
{
    for (int i = 0; i < 8; i++)
        a.f[i] = v8_float(a.f[i] != a.f[i] || b.f[i] != b.f[i] ? 0xffffffffu : 0u);
    return a;
}
V8_INLINE v8 v8_lt(v8 a, v8 b)
{
    for (int i = 0; i < 8; i++)
        a.f[i] = v8_float(a.f[i] < b.f[i] ? 0xffffffffu : 0u);
    return a;
}
V8_INLINE v8 v8_blend(v8 a, v8 b, v8 m)
{
    for (int i = 0; i < 8; i++)
        a.f[i] = v8_bits(m.f[i]) >> 31 ? b.f[i] : a.f[i];
    return a;
}
V8_INLINE int v8_any_sign(v8 m)
{
    uint32_t o = 0;
    for (int i = 0; i < 8; i++)
        o |= v8_bits(m.f[i]) >> 31;
    return o != 0;
}
V8_INLINE int v8_any_bit(v8 v)
{
    uint32_t o = 0;
    for (int i = 0; i < 8; i++)
        o |= v8_bits(v.f[i]);
    return o != 0;
}
/* rintf rounds to an integral value, exactly, in the current mode
 * (round to nearest even, which the program never changes) */
V8_INLINE v8 v8_round(v8 a)
{
    for (int i = 0; i < 8; i++)
        a.f[i] = rintf(a.f[i]);
    return a;
}
V8_INLINE v8 v8_pow2n(v8 n)
{
    for (int i = 0; i < 8; i++) {
        /* CVTPS2DQ: NaN and out-of-range give INT32_MIN */
        float x = n.f[i];
        uint32_t k = x == x && x > -2147483648.0f && x < 2147483648.0f
                         ? (uint32_t)(int32_t)x
                         : 0x80000000u;
        n.f[i] = v8_float((k + 127u) << 23);
    }
    return n;
}
V8_INLINE float v8_hsum(v8 v)
{
    return ((v.f[0] + v.f[4]) + (v.f[2] + v.f[6])) + ((v.f[1] + v.f[5]) + (v.f[3] + v.f[7]));
}
V8_INLINE float v8_max1(float a, float b) { return a > b ? a : b; }
V8_INLINE float v8_hmax(v8 v)
{
    float s0 = v8_max1(v.f[0], v.f[4]), s1 = v8_max1(v.f[1], v.f[5]);
    float s2 = v8_max1(v.f[2], v.f[6]), s3 = v8_max1(v.f[3], v.f[7]);
    return v8_max1(v8_max1(s0, s2), v8_max1(s1, s3));
}
V8_INLINE v8 v8_sum8(const v8 s[8])
{
    v8 r;
    for (int j = 0; j < 8; j++) {
        const float *x = s[j].f;
        r.f[j] = ((x[0] + x[1]) + (x[2] + x[3])) + ((x[4] + x[5]) + (x[6] + x[7]));
    }
    return r;
}
V8_INLINE void v8_prefetch(const float *p) { (void)p; }
V8_INLINE void v8_prefetch_l2(const float *p) { (void)p; }

V4D_INLINE v4d v4d_zero(void) { return (v4d){{0}}; }
V4D_INLINE v4d v4d_lo(v8 v) { return (v4d){{v.f[0], v.f[1], v.f[2], v.f[3]}}; }
V4D_INLINE v4d v4d_hi(v8 v) { return (v4d){{v.f[4], v.f[5], v.f[6], v.f[7]}}; }
V4D_INLINE v4d v4d_add(v4d a, v4d b)
{
    for (int i = 0; i < 4; i++)
        a.d[i] += b.d[i];
    return a;
}
V4D_INLINE v4d v4d_sub(v4d a, v4d b)
{
    for (int i = 0; i < 4; i++)
        a.d[i] -= b.d[i];
    return a;
}
V4D_INLINE v4d v4d_mul(v4d a, v4d b)
{
    for (int i = 0; i < 4; i++)
        a.d[i] *= b.d[i];
    return a;
}
V4D_INLINE v4d v4d_fma(v4d a, v4d b, v4d c)
{
    for (int i = 0; i < 4; i++)
        c.d[i] = fma(a.d[i], b.d[i], c.d[i]);
    return c;
}
V4D_INLINE double v4d_hsum2(v4d lo, v4d hi)
{
    v4d t = v4d_add(lo, hi);
    return (t.d[0] + t.d[2]) + (t.d[1] + t.d[3]);
}

#endif

#endif
