/* numfmt.c - fp16 and bf16 rounding by integer arithmetic on the bits,
 * so the result does not depend on the compiler or the FPU mode. */
#include "numfmt.h"
#include "sysdep.h"

#include <math.h>
#include <string.h>

const char *const numfmt_names[FMT_COUNT] = {"fp32", "bf16", "fp16"};

const char *numfmt_name(numfmt f) { return (unsigned)f < FMT_COUNT ? numfmt_names[f] : "?"; }

int numfmt_parse(const char *s)
{
    for (int i = 0; i < FMT_COUNT; i++)
        if (!strcmp(s, numfmt_names[i]))
            return i;
    return -1;
}

float numfmt_max(numfmt f)
{
    switch (f) {
    case FMT_FP16: return 65504.0f;
    case FMT_BF16: return 3.38953139e38f; /* 0x7F7F0000 */
    default: return 3.40282347e38f;
    }
}

float numfmt_min_normal(numfmt f) { return f == FMT_FP16 ? 6.103515625e-05f : 1.17549435e-38f; }

static uint32_t bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}

static float from_bits(uint32_t u)
{
    float x;
    memcpy(&x, &u, 4);
    return x;
}

uint16_t numfmt_f32_to_f16(float x)
{
    uint32_t u = bits(x);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7FFFFFFFu;
    if (a >= 0x7F800000u) /* inf or NaN: keep NaN quiet with its top payload bits */
        return (uint16_t)(sign | 0x7C00u | (a > 0x7F800000u ? 0x0200u | ((a >> 13) & 0x3FFu) : 0));
    if (a >= 0x477FF000u) /* >= 65520: rounds to inf */
        return (uint16_t)(sign | 0x7C00u);
    if (a >= 0x38800000u) { /* normal half: exponent >= -14 */
        uint32_t mant = a + 0xC8000000u; /* rebias exponent: -112 << 23 */
        /* round to nearest even on the 13 dropped bits */
        mant += 0x0FFFu + ((mant >> 13) & 1u);
        return (uint16_t)(sign | (mant >> 13));
    }
    if (a < 0x33000000u) /* < 2^-25: rounds to zero (2^-25 itself is a tie to 0) */
        return sign;
    /* subnormal half: value = m * 2^-24, m = round(a_value * 2^24) */
    uint32_t e = a >> 23;               /* 102 .. 112 */
    uint32_t m = (a & 0x7FFFFFu) | 0x800000u;
    uint32_t shift = 126 - e;           /* 14 .. 24: bits to drop from the 24-bit significand */
    uint32_t r = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1u)))
        r++;
    return (uint16_t)(sign | r);
}

float numfmt_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
    if (e == 0x1F)
        return from_bits(sign | 0x7F800000u | (m << 13));
    if (e == 0) {
        if (m == 0)
            return from_bits(sign);
        /* subnormal: m * 2^-24, exact in float */
        float v = (float)m * 5.9604644775390625e-08f;
        return sign ? -v : v;
    }
    return from_bits(sign | ((e + 112) << 23) | (m << 13));
}

uint16_t numfmt_f32_to_bf16(float x)
{
    uint32_t u = bits(x);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) /* NaN: keep it quiet */
        return (uint16_t)((u >> 16) | 0x0040u);
    u += 0x7FFFu + ((u >> 16) & 1u); /* nearest even; overflow carries into inf */
    return (uint16_t)(u >> 16);
}

float numfmt_bf16_to_f32(uint16_t h) { return from_bits((uint32_t)h << 16); }

float numfmt_round1(numfmt f, float x)
{
    switch (f) {
    case FMT_FP16: return numfmt_f16_to_f32(numfmt_f32_to_f16(x));
    case FMT_BF16: return numfmt_bf16_to_f32(numfmt_f32_to_bf16(x));
    default: return x;
    }
}

/* The counting rule, shared by every path: a finite value that became
 * infinite overflowed; a nonzero value that became zero or subnormal
 * underflowed (NaN is neither). */
static void round_scalar(numfmt f, float *x, size_t n, long *over, long *under)
{
    float minn = numfmt_min_normal(f);
    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        float r = numfmt_round1(f, v);
        *over += isinf(r) && !isinf(v);
        *under += v != 0.0f && fabsf(r) < minn && !(v != v);
        x[i] = r;
    }
}

/* bf16 without branches, so the loop vectorizes: NaN is selected back in. */
static void round_bf16(float *x, size_t n, long *over, long *under)
{
    long ov = 0, un = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &x[i], 4);
        uint32_t a = u & 0x7FFFFFFFu;
        uint32_t r = (u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u;
        uint32_t ra = r & 0x7FFFFFFFu;
        int nan = a > 0x7F800000u;
        r = nan ? (u | 0x00400000u) & 0xFFFF0000u : r;
        ov += !nan && a < 0x7F800000u && ra == 0x7F800000u;
        un += !nan && a != 0 && ra < 0x00800000u;
        memcpy(&x[i], &r, 4);
    }
    *over += ov;
    *under += un;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
/* fp16 with the F16C instructions: vcvtps2ph with round-to-nearest-even is
 * IEEE's conversion, the same as _Float16 (test_numfmt checks both paths
 * against it). */
__attribute__((target("avx2,f16c"))) static void round_fp16_f16c(float *x, size_t n, long *over,
                                                                  long *under)
{
    const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
    const __m256 inf = _mm256_set1_ps(INFINITY), minn = _mm256_set1_ps(6.103515625e-05f);
    const __m256 zero = _mm256_setzero_ps();
    long ov = 0, un = 0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT);
        __m256 r = _mm256_cvtph_ps(h);
        __m256 av = _mm256_and_ps(v, absmask), ar = _mm256_and_ps(r, absmask);
        /* ordered compares are false for NaN */
        __m256 o = _mm256_and_ps(_mm256_cmp_ps(ar, inf, _CMP_EQ_OQ),
                                 _mm256_cmp_ps(av, inf, _CMP_LT_OQ));
        __m256 u = _mm256_and_ps(_mm256_cmp_ps(av, zero, _CMP_GT_OQ),
                                 _mm256_cmp_ps(ar, minn, _CMP_LT_OQ));
        ov += __builtin_popcount((unsigned)_mm256_movemask_ps(o));
        un += __builtin_popcount((unsigned)_mm256_movemask_ps(u));
        _mm256_storeu_ps(x + i, r);
    }
    *over += ov;
    *under += un;
    round_scalar(FMT_FP16, x + i, n - i, over, under);
}

/* bf16 eight at a time: the same integer rule as round_bf16, lane by lane
 * (test_numfmt checks the bits and the counts against the portable path).
 * GCC does not vectorize round_bf16's loop: its counts are longs. */
__attribute__((target("avx2"))) static void round_bf16_avx2(float *x, size_t n, long *over,
                                                            long *under)
{
    const __m256i absm = _mm256_set1_epi32(0x7FFFFFFF), hi = _mm256_set1_epi32((int)0xFFFF0000u);
    const __m256i inf = _mm256_set1_epi32(0x7F800000), half = _mm256_set1_epi32(0x7FFF);
    const __m256i one = _mm256_set1_epi32(1), quiet = _mm256_set1_epi32(0x00400000);
    const __m256i minn = _mm256_set1_epi32(0x00800000), zero = _mm256_setzero_si256();
    long ov = 0, un = 0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i u = _mm256_loadu_si256((const __m256i *)(x + i));
        __m256i a = _mm256_and_si256(u, absm);
        __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), one);
        __m256i r = _mm256_and_si256(_mm256_add_epi32(_mm256_add_epi32(u, half), lsb), hi);
        __m256i ra = _mm256_and_si256(r, absm);
        __m256i nan = _mm256_cmpgt_epi32(a, inf); /* a and inf are >= 0 as int32 */
        r = _mm256_blendv_epi8(r, _mm256_and_si256(_mm256_or_si256(u, quiet), hi), nan);
        /* overflow: finite in, infinite out; underflow: nonzero in, below
         * the smallest normal out (NaN is neither) */
        __m256i o = _mm256_andnot_si256(_mm256_cmpeq_epi32(a, inf), _mm256_cmpeq_epi32(ra, inf));
        o = _mm256_andnot_si256(nan, o);
        __m256i un_m = _mm256_andnot_si256(_mm256_or_si256(nan, _mm256_cmpeq_epi32(a, zero)),
                                           _mm256_cmpgt_epi32(minn, ra));
        ov += __builtin_popcount((unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(o)));
        un += __builtin_popcount((unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(un_m)));
        _mm256_storeu_si256((__m256i *)(x + i), r);
    }
    *over += ov;
    *under += un;
    round_bf16(x + i, n - i, over, under);
}

static int have_avx2(void) { return sysdep_cpu_avx2(); }

static int have_f16c(void)
{
    /* F16C is CPUID leaf 1, ECX bit 29 (asked directly: not every
     * compiler's __builtin_cpu_supports knows its name); AVX2 as sysdep
     * checks it, OS support for the ymm registers included */
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    return (c & (1u << 29)) && sysdep_cpu_avx2();
}
#else
static int have_avx2(void) { return 0; }
static void round_bf16_avx2(float *x, size_t n, long *over, long *under)
{
    round_bf16(x, n, over, under);
}
static int have_f16c(void) { return 0; }
static void round_fp16_f16c(float *x, size_t n, long *over, long *under)
{
    round_scalar(FMT_FP16, x, n, over, under);
}
#endif

void numfmt_round_portable(numfmt f, float *x, size_t n, numfmt_counts *c)
{
    long over = 0, under = 0;
    if (f == FMT_FP32)
        return;
    round_scalar(f, x, n, &over, &under);
    if (c) {
        c->overflow += over;
        c->underflow += under;
    }
}

void numfmt_round(numfmt f, float *x, size_t n, numfmt_counts *c)
{
    long over = 0, under = 0;
    switch (f) {
    case FMT_FP16:
        if (have_f16c())
            round_fp16_f16c(x, n, &over, &under);
        else
            round_scalar(f, x, n, &over, &under);
        break;
    case FMT_BF16:
        if (have_avx2())
            round_bf16_avx2(x, n, &over, &under);
        else
            round_bf16(x, n, &over, &under);
        break;
    default:
        return;
    }
    if (c) {
        c->overflow += over;
        c->underflow += under;
    }
}
