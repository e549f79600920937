/* rng.c - the parts of the generator that need libm. */
#include "rng.h"

#include <math.h>

float rng_normal(ns_rng *r)
{
    /* u1 in (0, 1] so log() is finite */
    double u1 = ((double)(rng_u64(r) >> 11) + 1.0) * (1.0 / 9007199254740992.0);
    double u2 = (double)(rng_u64(r) >> 11) * (1.0 / 9007199254740992.0);
    return (float)(sqrt(-2.0 * log(u1)) * cos(2.0 * 3.14159265358979323846 * u2));
}
