/* rng.c - the parts of the generator that need libm, and the build's
 * check that floating point is evaluated in its own type. */
#include "rng.h"
#include "nsmath.h"

#include <float.h>
#include <math.h>

/* The same bits on every machine need float and double arithmetic to
 * round in their own precision (C11 5.2.4.2.2: FLT_EVAL_METHOD 0). 32-bit
 * x86 with x87 keeps 80 bits in its registers (method 2) and gives other
 * numbers from the first step; SSE2 gives the same as x86-64, and the
 * Makefile asks for it there (-msse2 -mfpmath=sse). A build that does
 * not stops here rather than give a run that does not replay. */
#if !defined(FLT_EVAL_METHOD) || FLT_EVAL_METHOD != 0
#error "normscope needs FLT_EVAL_METHOD 0 (on 32-bit x86: -msse2 -mfpmath=sse, which the Makefile adds)"
#endif

float rng_normal(ns_rng *r)
{
    /* Box-Muller; u1 in (0, 1] so the log is finite. nsmath, not libm:
     * the initial weights must be the same bits on every machine. */
    double u1 = ((double)(rng_u64(r) >> 11) + 1.0) * (1.0 / 9007199254740992.0);
    double u2 = (double)(rng_u64(r) >> 11) * (1.0 / 9007199254740992.0);
    return (float)(sqrt(-2.0 * ns_log(u1)) * ns_cospi(2.0 * u2));
}
