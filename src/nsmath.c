/* nsmath.c - see nsmath.h. The polynomial constants of ns_expf and
 * ns_tanhf are Cephes' (S. Moshier, Cephes Math Library, expf.c and
 * tanhf.c); the series are Taylor's. */
#include "nsmath.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

static float float32(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* Lane for lane the vector exp8 of ops_kern.h: the same operations in the
 * same order (its max and min are x86's, which return the second operand
 * when either is NaN; its float-to-int conversion gives INT32_MIN for NaN) */
float ns_expf(float x)
{
    const float lo = -87.0f, hi = 88.3f;
    int under = x < lo;
    float xc = lo > x ? lo : x;
    xc = hi < xc ? hi : xc;
    float fn = rintf(xc * 1.44269504088896341f);
    float r = fmaf(-fn, 0.693359375f, xc);
    r = fmaf(-fn, -2.12194440e-4f, r);
    float r2 = r * r, r4 = r2 * r2;
    float e0 = fmaf(1.6666665459e-1f, r, 5.0000001201e-1f);
    float e1 = fmaf(8.3334519073e-3f, r, 4.1665795894e-2f);
    float e2 = fmaf(1.9875691500e-4f, r, 1.3981999507e-3f);
    float p = fmaf(e2, r4, fmaf(e1, r2, e0));
    p = fmaf(p, r2, r) + 1.0f;
    uint32_t k = fn == fn ? (uint32_t)(int32_t)fn : 0x80000000u;
    float y = p * float32((k + 127u) << 23);
    return under ? 0.0f : y;
}

float ns_tanhf(float x)
{
    float ax = fabsf(x);
    if (ax > 0.625f) {
        float z = ns_expf(ax + ax);
        float y = 1.0f - 2.0f / (z + 1.0f);
        return x < 0 ? -y : y;
    }
    if (x == 0.0f)
        return x;
    float z = x * x;
    float p = ((((-5.70498872745e-3f * z + 2.06390887954e-2f) * z - 5.37397155531e-2f) * z +
                1.33314422036e-1f) * z - 3.33332819422e-1f);
    return p * z * x + x;
}

/* ln 2 in two parts: LN2_HI has its low 32 bits clear, so k LN2_HI is
 * exact for any exponent k (fdlibm's split) */
#define LN2_HI 6.93147180369123816490e-01
#define LN2_LO 1.90821492927058770002e-10
#define INV_LN2 1.44269504088896338700e+00

double ns_log(double x)
{
    if (x != x || x < 0)
        return x < 0 ? NAN : x;
    if (x == 0)
        return -INFINITY;
    if (x == INFINITY)
        return x;
    int k = 0;
    if (x < 0x1p-1022) { /* subnormal: make it normal first (exact) */
        x *= 0x1p54;
        k = -54;
    }
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    k += (int)((u >> 52) & 0x7ff) - 1023;
    u = (u & 0x000fffffffffffffull) | 0x3ff0000000000000ull;
    double m;
    memcpy(&m, &u, sizeof m); /* [1, 2) */
    if (m > 1.41421356237309504880) {
        m *= 0.5;
        k++;
    }
    /* m in [sqrt(1/2), sqrt(2)]: log m = 2 atanh(s), s = f / (2 + f) with
     * |s| < 0.1716, so s^2 < 0.0295 and 12 terms of the series reach
     * past double precision */
    double f = m - 1.0, s = f / (2.0 + f), z = s * s;
    double p = 1.0 / 25;
    p = p * z + 1.0 / 23;
    p = p * z + 1.0 / 21;
    p = p * z + 1.0 / 19;
    p = p * z + 1.0 / 17;
    p = p * z + 1.0 / 15;
    p = p * z + 1.0 / 13;
    p = p * z + 1.0 / 11;
    p = p * z + 1.0 / 9;
    p = p * z + 1.0 / 7;
    p = p * z + 1.0 / 5;
    p = p * z + 1.0 / 3;
    double r = 2.0 * s + 2.0 * s * z * p;
    return k * LN2_HI + (r + k * LN2_LO);
}

float ns_logf(float x) { return (float)ns_log(x); }

double ns_log2(double x) { return ns_log(x) * INV_LN2; }

double ns_exp(double x)
{
    if (x != x)
        return x;
    if (x > 709.78)
        return INFINITY;
    if (x < -745.2)
        return 0.0;
    double n = rint(x * INV_LN2);
    double r = (x - n * LN2_HI) - n * LN2_LO; /* |r| <= ln2 / 2 (a little more) */
    /* e^r = sum r^i / i! to i = 13: the next term is under 2^-60 */
    double p = 1.0 / 6227020800.0;
    p = p * r + 1.0 / 479001600.0;
    p = p * r + 1.0 / 39916800.0;
    p = p * r + 1.0 / 3628800.0;
    p = p * r + 1.0 / 362880.0;
    p = p * r + 1.0 / 40320.0;
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    return ldexp(p, (int)n); /* scaling by a power of two: exact, or IEEE's rounding */
}

double ns_exp2(double x) { return ns_exp(x * (LN2_HI + LN2_LO)); }

/* cos t and sin t for |t| <= pi/4: Taylor to t^18 and t^19 */
static double cos_poly(double t)
{
    double z = t * t, p = 1.0 / 6402373705728000.0;
    p = -p * z + 1.0 / 20922789888000.0;
    p = p * z - 1.0 / 87178291200.0;
    p = p * z + 1.0 / 479001600.0;
    p = p * z - 1.0 / 3628800.0;
    p = p * z + 1.0 / 40320.0;
    p = p * z - 1.0 / 720.0;
    p = p * z + 1.0 / 24.0;
    p = p * z - 0.5;
    return p * z + 1.0;
}

static double sin_poly(double t)
{
    double z = t * t, p = -1.0 / 121645100408832000.0;
    p = p * z + 1.0 / 355687428096000.0;
    p = p * z - 1.0 / 1307674368000.0;
    p = p * z + 1.0 / 6227020800.0;
    p = p * z - 1.0 / 39916800.0;
    p = p * z + 1.0 / 362880.0;
    p = p * z - 1.0 / 5040.0;
    p = p * z + 1.0 / 120.0;
    p = p * z - 1.0 / 6.0;
    return p * z * t + t;
}

double ns_cospi(double x)
{
    const double pi = 3.14159265358979323846;
    x = fmod(fabs(x), 2.0); /* fmod is exact */
    if (x > 1.0)
        x = 2.0 - x; /* exact on [1, 2] (Sterbenz) */
    if (x <= 0.25)
        return cos_poly(pi * x);
    if (x <= 0.75)
        return sin_poly(pi * (0.5 - x)); /* 0.5 - x exact on [0.25, 1] */
    return -cos_poly(pi * (1.0 - x));
}

double ns_powi(double x, long n)
{
    double r = 1.0;
    while (n > 0) {
        if (n & 1)
            r *= x;
        x *= x;
        n >>= 1;
    }
    return r;
}
