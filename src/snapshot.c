/* snapshot.c - the snapshot types' few functions (snapshot.h): a state's
 * name, a history point from a step's metrics, a fresh snapshot, and
 * whether a run ended diverged, an episode's findings kept. Shared by
 * every source.
 *
 * Not here: publishing (trainer.c), reading streams (stream.c).
 */
#include "snapshot.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char snapshot_default_prompt[] = "The model ";

const char *snapshot_state_name(trainer_state s)
{
    static const char *const names[] = {"RUNNING", "PAUSED", "DIVERGED", "DONE", "STALLED"};
    return (unsigned)s < 5 ? names[s] : "?";
}

trainer_snapshot *snapshot_new(void)
{
    trainer_snapshot *s = calloc(1, sizeof *s);
    if (s) {
        s->s.run[0].last_val = NAN;
        s->s.run[1].last_val = NAN;
        s->s.prompt = snapshot_default_prompt;
    }
    return s;
}

void snapshot_point_set(trainer_point *pt, const step_metrics *a, const step_metrics *b,
                       const char *mark, const char *mark_b)
{
    pt->step = a->step;
    pt->run[0].loss = a->loss;
    pt->run[0].val_loss = a->has_val ? a->val_loss : NAN;
    pt->lr = a->lr;
    pt->nonfinite = a->nonfinite;
    pt->run[1].loss = b ? b->loss : NAN;
    pt->run[1].val_loss = b && b->has_val ? b->val_loss : NAN;
    pt->run[0].oc_known = metrics_known(a, METRICS_COL_OUT_CHANGE);
    pt->run[0].out_change = pt->run[0].oc_known ? a->out_change : NAN;
    pt->run[1].oc_known = b && metrics_known(b, METRICS_COL_OUT_CHANGE);
    pt->run[1].out_change = pt->run[1].oc_known ? b->out_change : NAN;
    snprintf(pt->run[0].mark, sizeof pt->run[0].mark, "%s", mark ? mark : "");
    snprintf(pt->run[1].mark, sizeof pt->run[1].mark, "%s", mark_b ? mark_b : "");
}

int snapshot_finding_rank(const diag_finding *f)
{
    /* a run that does not learn, or learns its training text by heart,
     * is judged after a divergence's cause; one whose attention collapsed
     * after that: Post-LN at LR 0.1 stalls on the plateau with its logits
     * grown, and QK-norm in place leaves it there where the stall's
     * re-init at a lower LR trains (make diag-grid) */
    int slow = f->rule == DIAG_R_STALL || f->rule == DIAG_R_NOT_LEARNING ||
               f->rule == DIAG_R_OVERFIT;
    return f->kind == DIAG_WARNING ? 3 : f->rule == DIAG_R_ATTN_LOGITS ? 2 : slow ? 1 : 0;
}

/* The first finding in rank order, with a fix when with_fix. */
static const diag_finding *first_ranked(const trainer_diagnosis *d, int with_fix)
{
    for (int rank = 0; rank < TRAINER_RANKS; rank++)
        for (int i = 0; i < d->n; i++)
            if (snapshot_finding_rank(&d->f[i]) == rank && (!with_fix || d->f[i].fix[0]))
                return &d->f[i];
    return NULL;
}

const diag_finding *snapshot_diagnosis_cause(const trainer_diagnosis *d)
{
    return first_ranked(d, 0);
}

const diag_finding *snapshot_diagnosis_fix(const trainer_diagnosis *d)
{
    return first_ranked(d, 1);
}

/* When the list is full the oldest warning (or, with none, the oldest
 * finding) makes room. */
void snapshot_diagnosis_add(trainer_diagnosis *v, const diag_finding *f)
{
    if (v->n == TRAINER_FINDINGS) {
        int drop = 0;
        while (drop < v->n - 1 && v->f[drop].kind != DIAG_WARNING)
            drop++;
        memmove(&v->f[drop], &v->f[drop + 1], (size_t)(v->n - 1 - drop) * sizeof *v->f);
        v->n--;
    }
    v->f[v->n++] = *f;
    /* the status line's mark is the cause the panel gives first; with
     * warnings alone, the latest */
    const diag_finding *shown = snapshot_diagnosis_cause(v);
    if (shown->kind == DIAG_WARNING)
        shown = f;
    snprintf(v->alert, sizeof v->alert, "%s", diag_rule_name(shown->rule));
}

void snapshot_check_text(const diag_check *c, char *buf, size_t n)
{
    if (c->answer == DIAG_Q_UNKNOWN) /* its text says "not yet known: why" */
        snprintf(buf, n, "%s? %s", c->question, c->text);
    else
        snprintf(buf, n, "%s? %s: %s", c->question, diag_answer_name(c->answer), c->text);
}

void snapshot_check_counts(const trainer_diagnosis *d, int *bad, int *unknown)
{
    *bad = *unknown = 0;
    for (int i = 0; i < d->n_checks; i++) {
        *bad += d->checks[i].answer == DIAG_Q_BAD;
        *unknown += d->checks[i].answer == DIAG_Q_UNKNOWN;
    }
}

twin_run snapshot_status_twin(const trainer_status *s, int r)
{
    return (twin_run){&s->run[r].cfg, s->run[r].warmup_on, s->run[r].lr_peak, s->joined,
                      s->was[r]};
}

void snapshot_verdict_text(const trainer_diagnosis *d, char *buf, size_t n)
{
    int bad, unknown;
    snapshot_check_counts(d, &bad, &unknown);
    if (d->fix_note[0])
        snprintf(buf, n, "verdict: not %shealthy (%s; %d answered no, %d not yet known)",
                 strstr(d->fix_note, "did not help") ? "" : "yet known to be ", d->fix_note, bad,
                 unknown);
    else if (d->healthy)
        snprintf(buf, n, "verdict: healthy (every check answered ok%s%s)",
                 d->fix_proven[0] ? "; " : "", d->fix_proven);
    else
        snprintf(buf, n, "verdict: not %shealthy (%d answered no, %d not yet known)",
                 bad ? "" : "known to be ", bad, unknown);
}

int snapshot_fix_run(const trainer_diagnosis *const *runs, int n, int diverged_run)
{
    int order[2] = {diverged_run == 1 ? 1 : 0, diverged_run == 1 ? 0 : 1};
    for (int k = 0; k < n && k < 2; k++)
        if (order[k] < n && snapshot_diagnosis_fix(runs[order[k]]))
            return order[k];
    return -1;
}

int snapshot_ended_diverged(const trainer_status *s)
{
    return s->state == TRAINER_DIVERGED ||
           (s->have_metrics && (s->run[0].last.nonfinite || s->run[0].last.exploded ||
                                (s->compare && (s->run[1].last.nonfinite || s->run[1].last.exploded))));
}
