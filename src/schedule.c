/* schedule.c - learning-rate schedules; see schedule.h for the formulas. */
#include "schedule.h"
#include "nsmath.h"

#include <math.h>

void schedule_init(schedule *s, const ns_config *c)
{
    s->kind = c->schedule;
    s->warmup = config_ramp_steps(c);
    s->warmup_on = c->warmup > 0;
    s->ramp_start = 0;
    s->total = c->steps;
    s->cos_start = c->warmup > 0 ? c->warmup : 0;
    s->peak = c->lr;
    if (c->schedule == SCHED_NOAM)
        s->peak = (float)(1.0 / sqrt((double)c->dim) / sqrt((double)s->warmup));
}

static double ramp(const schedule *s, long step)
{
    if (!s->warmup_on)
        return 1.0;
    double r = (double)(step - s->ramp_start) / s->warmup;
    return r < 1.0 ? (r > 0.0 ? r : 0.0) : 1.0;
}

float schedule_lr(const schedule *s, long step)
{
    double decay = 1.0;
    switch (s->kind) {
    case SCHED_COSINE: {
        double span = (double)(s->total - s->cos_start);
        double p = span > 0 ? (double)(step - s->cos_start) / span : 1.0;
        p = p < 0.0 ? 0.0 : (p > 1.0 ? 1.0 : p);
        decay = 0.5 * (1.0 + ns_cospi(p));
        break;
    }
    case SCHED_INVSQRT:
    case SCHED_NOAM:
        if (step > s->warmup)
            decay = sqrt((double)s->warmup / (double)step);
        break;
    default:
        break;
    }
    return (float)(s->peak * ramp(s, step) * decay);
}

int schedule_in_warmup(const schedule *s, long step) { return ramp(s, step) < 1.0; }
