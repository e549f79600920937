/* rng.h - a small seeded random generator (SplitMix64).
 * Public because the data's batch draws take one (data.h); the engine
 * owns each run's.
 *
 * One 64-bit word of state, so checkpoints store it exactly and a given seed
 * gives the same stream on every machine. Not for cryptography.
 */
#ifndef NS_RNG_H
#define NS_RNG_H

#include <stdint.h>

typedef struct {
    uint64_t s;
} ns_rng;

static inline void rng_seed(ns_rng *r, uint64_t seed) { r->s = seed; }

static inline uint64_t rng_u64(ns_rng *r)
{
    /* SplitMix64 (Steele, Lea, Flood 2014); constants from that paper. */
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [0, 1) with 24 random bits: exactly representable as float. */
static inline float rng_uniform(ns_rng *r)
{
    return (float)(rng_u64(r) >> 40) * (1.0f / 16777216.0f);
}

/* The high 64 bits of the 128-bit product a * b, from four 32 x 32 -> 64
 * products: exact, and the same on every target (no __int128, which
 * 32-bit ones lack). */
static inline uint64_t rng_mulhi64(uint64_t a, uint64_t b)
{
    uint64_t a_lo = (uint32_t)a, a_hi = a >> 32, b_lo = (uint32_t)b, b_hi = b >> 32;
    uint64_t lo_lo = a_lo * b_lo, lo_hi = a_lo * b_hi, hi_lo = a_hi * b_lo;
    /* the middle column with the carry out of the low one: < 3 * 2^32 */
    uint64_t mid = (lo_lo >> 32) + (uint32_t)lo_hi + (uint32_t)hi_lo;
    return a_hi * b_hi + (lo_hi >> 32) + (hi_lo >> 32) + (mid >> 32);
}

/* Uniform integer in [0, n), n > 0 (Lemire's multiply-shift; the tiny bias
 * for huge n does not matter for picking batch offsets). */
static inline uint64_t rng_below(ns_rng *r, uint64_t n) { return rng_mulhi64(rng_u64(r), n); }

/* Standard normal, Box-Muller in double. */
float rng_normal(ns_rng *r);

#endif
