/* rng.c - the parts of the generator that need libm. */
#include "rng.h"
#include "nsmath.h"

#include <math.h>

float rng_normal(ns_rng *r)
{
    /* Box-Muller; u1 in (0, 1] so the log is finite. nsmath, not libm:
     * the initial weights must be the same bits on every machine. */
    double u1 = ((double)(rng_u64(r) >> 11) + 1.0) * (1.0 / 9007199254740992.0);
    double u2 = (double)(rng_u64(r) >> 11) * (1.0 / 9007199254740992.0);
    return (float)(sqrt(-2.0 * ns_log(u1)) * ns_cospi(2.0 * u2));
}
