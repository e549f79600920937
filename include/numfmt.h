/* numfmt.h - the numeric formats normscope emulates on the CPU: fp32,
 * bf16 and fp16 (IEEE binary16), with round-to-nearest-even, overflow to
 * +-inf, subnormals and NaN propagation.
 *
 * Values stay in float storage; "rounding to a format" replaces each float
 * by the nearest value the format can hold. fp16 is bit-exact with the
 * compiler's _Float16 conversions; bf16 is the upper half of an fp32 with
 * the lower half rounded to nearest even (NaN kept quiet), as the common
 * hardware and torch.bfloat16 do.
 */
#ifndef NS_NUMFMT_H
#define NS_NUMFMT_H

#include <stddef.h>
#include <stdint.h>

typedef enum { FMT_FP32 = 0, FMT_BF16 = 1, FMT_FP16 = 2, FMT_COUNT } numfmt;

extern const char *const numfmt_names[FMT_COUNT]; /* index = numfmt */
const char *numfmt_name(numfmt f);
int numfmt_parse(const char *s); /* -1 if unknown */
/* Largest finite value: 3.4e38, 3.39e38, 65504. */
float numfmt_max(numfmt f);
/* Smallest positive normal value: 2^-126, 2^-126, 2^-14. */
float numfmt_min_normal(numfmt f);

/* fp16 bit patterns */
uint16_t numfmt_f32_to_f16(float x);
float numfmt_f16_to_f32(uint16_t h);
/* bf16 bit patterns */
uint16_t numfmt_f32_to_bf16(float x);
float numfmt_bf16_to_f32(uint16_t h);

/* One float rounded to the format. */
float numfmt_round1(numfmt f, float x);

/* What rounding an array did: finite values that became infinite, and
 * nonzero values that became zero or subnormal. */
typedef struct {
    long overflow;
    long underflow;
} numfmt_counts;

/* Round x (n) in place; add to *c when c is not NULL. fp32 is a no-op.
 * Uses the F16C instructions for fp16 where the CPU has them. */
void numfmt_round(numfmt f, float *x, size_t n, numfmt_counts *c);

/* The same, one value at a time through numfmt_round1: the reference the
 * fast paths are tested against. */
void numfmt_round_portable(numfmt f, float *x, size_t n, numfmt_counts *c);

#endif
