/* schedule.h - the learning rate at each step.
 * Engine-internal: only the engine's sources include it (README, Layout).
 *
 * lr(s) = peak * ramp(s) * decay(s), s = 1, 2, ... the step being taken.
 *   ramp:  linear from ramp_start: min(1, (s - ramp_start) / warmup) while
 *          warmup is on, else 1. Turning warmup on mid-run starts a fresh
 *          ramp at the current step.
 *   decay: constant 1; cosine 0.5 (1 + cos(pi p)), p = (s - w0) /
 *          (steps - w0) clamped to [0, 1], w0 = --warmup; invsqrt and
 *          noam min(1, sqrt(w / s)), w = --warmup (100 when it is 0).
 * noam is the original Transformer schedule (Vaswani et al. 2017, eq. 3),
 * d^-0.5 * min(s^-0.5, s * w^-1.5): the same shape as warmup + invsqrt,
 * with its peak d^-0.5 * w^-0.5 taking the place of --lr.
 */
#ifndef NS_SCHEDULE_H
#define NS_SCHEDULE_H

#include "config.h"

typedef struct {
    sched_kind kind;
    float peak;      /* peak learning rate */
    int warmup;      /* ramp length in steps (the configured --warmup, or 100) */
    int warmup_on;   /* is the ramp in force */
    long ramp_start; /* step count when the current ramp began */
    long total;      /* --steps, for cosine */
    int cos_start;   /* cosine decays from this step (the --warmup given) */
} schedule;

void schedule_init(schedule *s, const ns_config *c);
float schedule_lr(const schedule *s, long step);
/* ramp(s) < 1 at this step */
int schedule_in_warmup(const schedule *s, long step);

#endif
