/* test_numfmt.c - fp16 and bf16 emulation, bit for bit.
 *
 * fp16 against the compiler's _Float16 (its conversions are IEEE
 * round-to-nearest-even): every one of the 65536 halves both ways, the
 * midpoints between neighbouring halves (ties) and their neighbours, and
 * millions of random floats. bf16 against bit patterns worked by hand and
 * the nearest-even rule on random floats. NaN is compared as "is NaN"
 * (payloads are not part of the contract). */
#include <math.h>
#include <string.h>

#include "numfmt.h"
#include "rng.h"
#include "testutil.h"

static uint32_t fbits(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}

static float bitsf(uint32_t u)
{
    float x;
    memcpy(&x, &u, 4);
    return x;
}

static uint16_t ref_f16(float x)
{
    _Float16 h = (_Float16)x;
    uint16_t u;
    memcpy(&u, &h, 2);
    return u;
}

static int same_half(uint16_t a, uint16_t b)
{
    int nan_a = (a & 0x7C00) == 0x7C00 && (a & 0x3FF), nan_b = (b & 0x7C00) == 0x7C00 && (b & 0x3FF);
    return nan_a || nan_b ? nan_a && nan_b : a == b;
}

static long mism;
static void cmp16(float x)
{
    uint16_t a = numfmt_f32_to_f16(x), b = ref_f16(x);
    if (!same_half(a, b)) {
        if (mism < 5)
            fprintf(stderr, "  f32 %a (0x%08x): got 0x%04x, _Float16 0x%04x\n", x, fbits(x), a, b);
        mism++;
    }
}

static void test_f16_exhaustive(void)
{
    /* every half to float and back */
    long bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        _Float16 r;
        uint16_t hh = (uint16_t)h;
        memcpy(&r, &hh, 2);
        float want = (float)r, got = numfmt_f16_to_f32(hh);
        if (!(isnan(want) ? isnan(got) : fbits(want) == fbits(got)))
            bad++;
        if (!isnan(got) && numfmt_f32_to_f16(got) != hh)
            bad++;
    }
    CHECK(bad == 0);

    /* ties: the exact midpoint between each pair of neighbouring finite
     * halves, and one float ulp either side */
    mism = 0;
    for (uint32_t h = 0; h < 0x7C00; h++) {
        float lo = numfmt_f16_to_f32((uint16_t)h);
        float hi = h + 1 == 0x7C00 ? 65536.0f : numfmt_f16_to_f32((uint16_t)(h + 1));
        float mid = (float)(((double)lo + hi) / 2); /* exact in float */
        for (int s = 0; s < 2; s++) {
            float m = s ? -mid : mid;
            cmp16(m);
            cmp16(nextafterf(m, INFINITY));
            cmp16(nextafterf(m, -INFINITY));
        }
    }
    CHECK(mism == 0);

    /* edges */
    float edges[] = {0.0f, -0.0f, 65504.0f, 65519.0f, 65520.0f, 65536.0f, 1e10f, INFINITY,
                     -INFINITY, NAN, 5.9604645e-08f, 2.9802322e-08f, 2.98023259e-08f,
                     6.1035156e-05f, 6.0975552e-05f, 1e-30f, 3.4e38f};
    mism = 0;
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) {
        cmp16(edges[i]);
        cmp16(-edges[i]);
    }
    CHECK(mism == 0);
    CHECK(numfmt_f32_to_f16(65520.0f) == 0x7C00);  /* tie rounds to even: inf */
    CHECK(numfmt_f32_to_f16(65519.0f) == 0x7BFF);
    CHECK(numfmt_f32_to_f16(2.98023224e-08f) == 0); /* 2^-25: tie to 0 */
    CHECK(numfmt_f32_to_f16(1.0f + 1.0f / 2048) == 0x3C00); /* tie to even below */
    CHECK(numfmt_f32_to_f16(1.0f + 3.0f / 2048) == 0x3C02); /* tie to even above */

    /* millions of random floats: random bit patterns, and values spread
     * over fp16's range */
    ns_rng r;
    rng_seed(&r, 99);
    mism = 0;
    for (long i = 0; i < 4000000; i++) {
        cmp16(bitsf((uint32_t)rng_u64(&r)));
        float e = (float)ldexp(1.0 + rng_uniform(&r), (int)rng_below(&r, 50) - 30);
        cmp16(rng_u64(&r) & 1 ? e : -e);
    }
    CHECK(mism == 0);
}

static void test_bf16(void)
{
    /* hand-worked patterns */
    CHECK(numfmt_f32_to_bf16(1.0f) == 0x3F80);
    CHECK(numfmt_f32_to_bf16(bitsf(0x3F808000)) == 0x3F80); /* tie, even below */
    CHECK(numfmt_f32_to_bf16(bitsf(0x3F818000)) == 0x3F82); /* tie, even above */
    CHECK(numfmt_f32_to_bf16(bitsf(0x3F808001)) == 0x3F81); /* just above the tie */
    CHECK(numfmt_f32_to_bf16(bitsf(0x3F807FFF)) == 0x3F80);
    CHECK(numfmt_f32_to_bf16(bitsf(0x7F7FFFFF)) == 0x7F80); /* max float rounds to inf */
    CHECK(numfmt_f32_to_bf16(bitsf(0x7F7F7FFF)) == 0x7F7F);
    CHECK(numfmt_f32_to_bf16(INFINITY) == 0x7F80 && numfmt_f32_to_bf16(-INFINITY) == 0xFF80);
    CHECK(isnan(numfmt_bf16_to_f32(numfmt_f32_to_bf16(NAN))));
    CHECK(isnan(numfmt_bf16_to_f32(numfmt_f32_to_bf16(bitsf(0x7F800001))))); /* payload low */
    CHECK(numfmt_f32_to_bf16(bitsf(0x00010000)) == 0x0001); /* subnormals kept */
    CHECK(numfmt_f32_to_bf16(bitsf(0x00008000)) == 0x0000); /* tie to even zero */
    CHECK(numfmt_f32_to_bf16(-0.0f) == 0x8000);
    /* the rule on random floats, checked by distance: the result is a bf16
     * value, no other bf16 value is nearer, and ties go to the even one */
    ns_rng r;
    rng_seed(&r, 5);
    long bad = 0;
    for (long i = 0; i < 2000000; i++) {
        float x = bitsf((uint32_t)rng_u64(&r));
        if (isnan(x) || isinf(x))
            continue;
        uint16_t b = numfmt_f32_to_bf16(x);
        double y = numfmt_bf16_to_f32(b);
        /* the bf16 grid around x: the truncation of x and the next value up */
        uint32_t dn = fbits(x) & 0xFFFF0000u;
        double step = fabs((double)bitsf(dn + 0x10000u) - (double)bitsf(dn));
        double d = fabs((double)x - y);
        if (isinf(y) && fabs(x) < 3.3895314e38) /* only values past max + half a step overflow */
            bad++;
        else if (!isinf(y) && d > step / 2)
            bad++;
        else if (!isinf(y) && d == step / 2 && (b & 1))
            bad++;
    }
    CHECK(bad == 0);
}

static void test_round_counts(void)
{
    float x[6] = {1.0f, 70000.0f, 1e-6f, 0.0f, -1e-9f, NAN};
    numfmt_counts c = {0, 0};
    numfmt_round(FMT_FP16, x, 6, &c);
    CHECK(x[0] == 1.0f && isinf(x[1]) && x[3] == 0.0f && x[4] == 0.0f && isnan(x[5]));
    CHECK(c.overflow == 1);
    CHECK(c.underflow == 2); /* 1e-6 became subnormal, -1e-9 became zero */
    float y[2] = {1e30f, 1e-30f};
    numfmt_counts d = {0, 0};
    numfmt_round(FMT_BF16, y, 2, &d);
    CHECK(d.overflow == 0 && d.underflow == 0 && y[0] != 1e30f); /* bf16: range, not precision */
    float z[1] = {123.456f};
    numfmt_round(FMT_FP32, z, 1, NULL);
    CHECK(z[0] == 123.456f);
    CHECK(numfmt_max(FMT_FP16) == 65504.0f && numfmt_round1(FMT_BF16, numfmt_max(FMT_BF16)) ==
                                                  numfmt_max(FMT_BF16));
    CHECK(numfmt_parse("bf16") == FMT_BF16 && numfmt_parse("fp8") == -1);
}

/* The fast array paths (F16C for fp16 where the CPU has it, branch-free
 * bf16) against the per-value reference: same bits, same counts, on
 * random bit patterns, specials and values around each format's limits. */
static void test_fast_paths(void)
{
    enum { N = 1 << 16 };
    static float a[N + 3], b[N + 3];
    ns_rng r;
    rng_seed(&r, 17);
    for (int f = FMT_BF16; f <= FMT_FP16; f++) {
        for (int i = 0; i < N + 3; i++) {
            switch (i % 5) {
            case 0: a[i] = bitsf((uint32_t)rng_u64(&r)); break;
            case 1: a[i] = (float)ldexp(rng_normal(&r), (int)rng_below(&r, 60) - 40); break;
            case 2: a[i] = (rng_uniform(&r) - 0.5f) * 140000.0f; break;
            case 3: {
                float sp[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 65504.0f, 65520.0f,
                              1e-8f, 3e-8f, 6e-5f, 3.39e38f, 3.4e38f};
                a[i] = sp[rng_below(&r, sizeof sp / sizeof sp[0])];
                break;
            }
            /* exact ties of bf16 (random bits rarely are one) */
            default: a[i] = bitsf(((uint32_t)rng_u64(&r) & 0xFFFF0000u) | 0x8000u); break;
            }
        }
        memcpy(b, a, sizeof a);
        numfmt_counts ca = {0, 0}, cb = {0, 0};
        numfmt_round((numfmt)f, a, N + 3, &ca); /* odd length: the tail path too */
        numfmt_round_portable((numfmt)f, b, N + 3, &cb);
        long bad = 0;
        for (int i = 0; i < N + 3; i++)
            bad += isnan(a[i]) ? !isnan(b[i]) : fbits(a[i]) != fbits(b[i]);
        CHECK(bad == 0);
        CHECK(ca.overflow == cb.overflow && ca.underflow == cb.underflow);
        CHECK(cb.overflow > 0 && cb.underflow > 0);
    }
}

int main(void)
{
    test_f16_exhaustive();
    test_bf16();
    test_round_counts();
    test_fast_paths();
    return test_summary();
}
