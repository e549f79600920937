/* snapshot.c - the snapshot types' few functions (snapshot.h): a state's
 * name, a history point from a step's metrics, a fresh snapshot, and
 * whether a run ended diverged. Shared by every source.
 *
 * Not here: publishing (trainer.c), reading streams (stream.c).
 */
#include "snapshot.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

const char trainer_default_prompt[] = "The model ";

const char *trainer_state_name(trainer_state s)
{
    static const char *const names[] = {"RUNNING", "PAUSED", "DIVERGED", "DONE", "STALLED"};
    return (unsigned)s < 5 ? names[s] : "?";
}

trainer_snapshot *trainer_snapshot_new(void)
{
    trainer_snapshot *s = calloc(1, sizeof *s);
    if (s) {
        s->s.last_val = NAN;
        s->s.last_val_b = NAN;
        s->s.prompt = trainer_default_prompt;
    }
    return s;
}

void trainer_point_set(trainer_point *pt, const step_metrics *a, const step_metrics *b,
                       const char *mark, const char *mark_b)
{
    pt->step = a->step;
    pt->loss = a->loss;
    pt->val_loss = a->has_val ? a->val_loss : NAN;
    pt->lr = a->lr;
    pt->nonfinite = a->nonfinite;
    pt->loss_b = b ? b->loss : NAN;
    pt->val_loss_b = b && b->has_val ? b->val_loss : NAN;
    snprintf(pt->mark, sizeof pt->mark, "%s", mark ? mark : "");
    snprintf(pt->mark_b, sizeof pt->mark_b, "%s", mark_b ? mark_b : "");
}

const diag_finding *trainer_diagnosis_fix(const trainer_diagnosis *d)
{
    for (int kind = DIAG_DIAGNOSIS; kind >= DIAG_WARNING; kind--)
        for (int i = 0; i < d->n; i++)
            if ((int)d->f[i].kind == kind && d->f[i].fix[0])
                return &d->f[i];
    return NULL;
}

int trainer_ended_diverged(const trainer_status *s)
{
    return s->state == TRAINER_DIVERGED ||
           (s->have_metrics && (s->last.nonfinite || s->last.exploded ||
                                (s->compare && (s->last_b.nonfinite || s->last_b.exploded))));
}
