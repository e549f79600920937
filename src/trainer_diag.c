/* trainer_diag.c - each run's diagnosis (diagnose.c), each step: the
 * findings observed and kept until reported, as events and on the
 * headless log, --on-stall stop, a validation result as an event, a
 * divergence's rewind note (where b goes); after the summary line, each
 * run's cause and its checks.
 *
 * Not here: the rules (diagnose.c), the fixes (trainer_fix.c), the
 * summary line (trainer_out.c).
 */
#include "trainer_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The step's findings, kept until reported; the stalled mark on each row. */
void trainer_diagnosis_observe(trainer *t)
{
    for (int r = 0; r < trainer_n_runs(t); r++) {
        run_diag *d = &t->rd[r];
        step_metrics *m = trainer_run_metrics(t, r);
        /* what the rules need of the data travels with the step */
        m->vocab = NS_VOCAB;
        m->data_entropy = (float)t->o.plateau;
        d->n_found = diag_observe(&d->d, m, d->found, DIAG_MAX_FINDINGS);
        d->view.n_checks = diag_checks(&d->d, d->view.checks, DIAG_CHECKS);
        /* a fix not yet proven, or one that did not help, is not healthy */
        trainer_view_fix(t, r, &d->view);
        d->view.healthy = diag_healthy(&d->d) && !d->view.fix_note[0];
        m->stalled = diag_stalled(&d->d);
        m->exploded = diag_exploded(&d->d);
        m->fixed = t->fixed_row;
    }
    t->fixed_row = 0;
    trainer_fix_twin_observe(t);
}

void trainer_diag_resume(trainer *t)
{
    size_t n;
    const uint8_t *p = engine_diag_state(t->e, &n);
    char why[160];
    diag *d = &t->rd[0].d;
    if (!engine_loaded_version(t->e))
        return; /* a new run */
    if (p && diag_state_load(d, p, n, why, sizeof why) == 0)
        d->plateau_given = t->o.plateau; /* the data given now (resume_check_data) */
    else
        diag_state_unknown(d, engine_steps_done(t->e));
}

int trainer_diag_to_engine(trainer *t, engine *e)
{
    uint8_t *p;
    size_t n;
    if (diag_state_save(&t->rd[0].d, &p, &n) != 0)
        return -1;
    int r = engine_set_diag_state(e, p, n);
    free(p);
    return r;
}

/* Did this step find rule's diagnosis in a run (once an episode: a
 * finite blow-up, a stall)? The run, or -1. */
int trainer_found_rule(const trainer *t, diag_rule rule)
{
    for (int r = 0; r < trainer_n_runs(t); r++)
        for (int i = 0; i < t->rd[r].n_found; i++)
            if (t->rd[r].found[i].rule == rule && t->rd[r].found[i].kind == DIAG_DIAGNOSIS)
                return r;
    return -1;
}

int trainer_found_stall(const trainer *t)
{
    static const diag_rule stalls[] = {DIAG_R_STALL, DIAG_R_NOT_LEARNING, DIAG_R_UNDERFLOW};
    int r = -1;
    for (size_t i = 0; r < 0 && i < sizeof stalls / sizeof stalls[0]; i++)
        r = trainer_found_rule(t, stalls[i]);
    return r;
}

/* A finding's line as events of at most NS_EVENT_TEXT - 1 characters, cut
 * at spaces, never inside a number (an event holds a finding whole today;
 * this keeps it so if either grows); the continuations are indented under
 * the first line's text. The log's view wraps each event to its width. */
_Static_assert(NS_EVENT_TEXT >= DIAG_TEXT + 16, "an event holds a finding, its run and \"  try: \"");
static void add_event_wrapped(trainer *t, int layer, const char *prefix, const char *text)
{
    size_t room = NS_EVENT_TEXT - 1 - strlen(prefix), len = strlen(text);
    const char *ind = "";
    while (len > 0) {
        size_t take = len, cap = room - strlen(ind);
        if (take > cap) {
            take = cap;
            while (take > 0 && text[take] != ' ')
                take--;
            if (take == 0)
                take = cap; /* one word longer than an event */
        }
        trainer_add_event(t, NS_EV_WARNING, layer, "%s%s%.*s", prefix, ind, (int)take, text);
        text += take;
        len -= take;
        while (*text == ' ')
            text++, len--;
        ind = "    ";
    }
}

/* The step's findings as events, after the engine's, named by run like
 * its other events; the episode's list and the status line's mark follow
 * them until the episode ends. */
void trainer_diagnosis_events(trainer *t)
{
    for (int r = 0; r < trainer_n_runs(t); r++) {
        run_diag *d = &t->rd[r];
        if (!diag_episode_open(&d->d)) { /* a rewind or a setting change: the checks stay */
            trainer_diagnosis keep = d->view;
            memset(&d->view, 0, sizeof d->view);
            d->view.n_checks = keep.n_checks;
            d->view.healthy = keep.healthy;
            memcpy(d->view.fix_note, keep.fix_note, sizeof keep.fix_note);
            memcpy(d->view.fix_proven, keep.fix_proven, sizeof keep.fix_proven);
            memcpy(d->view.checks, keep.checks, sizeof keep.checks);
        }
        for (int i = 0; i < d->n_found; i++) {
            const diag_finding *f = &d->found[i];
            char hint[DIAG_TEXT + 8];
            snprintf(hint, sizeof hint, "  try: %s", f->hint);
            add_event_wrapped(t, f->layer, trainer_run_prefix(t, r), f->text);
            add_event_wrapped(t, f->layer, trainer_run_prefix(t, r), hint);
            snapshot_diagnosis_add(&d->view, f);
        }
        char over[DIAG_TEXT];
        if (diag_stall_over(&d->d, over, sizeof over))
            trainer_add_event(t, NS_EV_INFO, -1, "%s%s", trainer_run_prefix(t, r), over);
    }
}

/* Headless, --on-stall stop: a stalled run (a's first) ends the run
 * (trainer_status.stall_stopped); --on-stall fix (live too): a stall
 * found this step has its fix applied after the report. */
static void stop_if_stalled(trainer *t)
{
    int r = 0;
    while (r < trainer_n_runs(t) && !trainer_run_metrics(t, r)->stalled)
        r++;
    if (!t->sync || t->o.on_stall != 1 || r == trainer_n_runs(t) || t->state != TRAINER_RUNNING)
        return;
    trainer_set_state(t, TRAINER_DONE);
    t->budget = 0;
    t->stall_stopped = 1;
    long step = trainer_run_metrics(t, r)->step;
    trainer_add_event(t, NS_EV_INFO, -1, "%sstalled at step %ld; stopping (--on-stall stop)",
              trainer_run_prefix(t, r), step);
    if (t->o.log)
        fprintf(t->o.log, "%snormscope: %sstalled at step %ld; stopping (--on-stall stop)\n",
                t->o.progress ? "\r\033[K" : "", trainer_run_prefix(t, r), step);
    trainer_publish_status(t);
}

/* Headless: the findings on the log, after the step's engine events, a's
 * then b's; then --on-stall stop. */
void trainer_diagnosis_report(trainer *t)
{
    FILE *log = t->o.log;
    const char *cr = t->o.progress ? "\r\033[K" : "";
    for (int r = 0; r < trainer_n_runs(t); r++) {
        run_diag *d = &t->rd[r];
        for (int i = 0; log && !t->o.quiet && i < d->n_found; i++) {
            const diag_finding *f = &d->found[i];
            fprintf(log, "%snormscope: %s%s at step %ld: %s\nnormscope: %s  try: %s\n", cr,
                    trainer_run_prefix(t, r), f->kind == DIAG_WARNING ? "warning" : "diagnosis",
                    f->step, f->text, trainer_run_prefix(t, r), f->hint);
        }
        char over[DIAG_TEXT];
        if (log && !t->o.quiet && diag_stall_over(&d->d, over, sizeof over))
            fprintf(log, "%snormscope: %s%s\n", cr, trainer_run_prefix(t, r), over);
        d->n_found = 0;
    }
    stop_if_stalled(t);
}

/* Headless, after the summary line: for each run that ended diverged or
 * stalled, the cause and what to try. */
void trainer_diagnosis_summary(trainer *t, const trainer_status *s, FILE *f)
{
    for (int r = 0; s->have_metrics && r < trainer_n_runs(t); r++) {
        const step_metrics *m = &s->run[r].last;
        const diag_finding *c = &t->rd[r].d.last_diagnosis;
        int ended_bad = m->nonfinite || m->stalled || m->exploded ||
                        (s->state == TRAINER_DIVERGED && trainer_diverged_run(s) == r);
        if (ended_bad && c->step > 0)
            fprintf(f, "normscope: %scause: %s\nnormscope: %stry: %s\n", trainer_run_prefix(t, r),
                    c->text, trainer_run_prefix(t, r), c->hint);
    }
}

/* After the summary line, each run's verdict: "healthy" only when every
 * check answered ok, then the checks, each with its answer and numbers
 * (diag_checks), as the D panel gives them. */
void trainer_checks_summary(trainer *t, FILE *f)
{
    for (int r = 0; r < trainer_n_runs(t); r++) {
        const trainer_diagnosis *v = &t->rd[r].view;
        if (v->n_checks == 0)
            continue; /* no step: nothing was asked */
        char line[NS_EVENT_TEXT + 80];
        snapshot_verdict_text(v, line, sizeof line);
        fprintf(f, "normscope: %s%s\n", trainer_run_prefix(t, r), line);
        for (int i = 0; i < v->n_checks; i++) {
            const diag_check *c = &v->checks[i];
            fprintf(f, "normscope: %s  %s? %s%s%s\n", trainer_run_prefix(t, r), c->question,
                    c->answer == DIAG_Q_UNKNOWN ? "" : diag_answer_name(c->answer),
                    c->answer == DIAG_Q_UNKNOWN ? "" : ": ", c->text);
        }
    }
}

/* A validation result of run (1 = b) as an event: "b: validation loss
 * 2.6200 (train 2.6100)"; a non-finite one is news, not an ordinary
 * validation, and is spelled nan without a sign. */
void trainer_validation_event(trainer *t, int run, const step_metrics *m)
{
    char v[16], l[16];
    snprintf(v, sizeof v, isnan(m->val_loss) ? "nan" : "%.4f", (double)m->val_loss);
    snprintf(l, sizeof l, isnan(m->loss) ? "nan" : "%.4f", (double)m->loss);
    if (run) {
        t->run[1].last_val = m->val_loss;
    } else {
        t->run[0].last_val = m->val_loss;
        t->last_val_step = m->step;
    }
    trainer_add_event(t, isfinite(m->val_loss) ? NS_EV_VAL : NS_EV_WARNING, -1,
              "%svalidation loss %s (train %s)", trainer_run_prefix(t, run), v, l);
}

/* Live, at a divergence of run (1 = b): where b goes and how close that
 * snapshot is to the limit (trainer_rewind_note), as a line of the log and
 * in the run's diagnosis (the D panel's, with the fix's own target), which
 * a rewind clears. */
void trainer_rewind_target_event(trainer *t, int run)
{
    const engine *e = run ? t->o.twin : t->e;
    char *note = t->rd[run].view.rewind;
    if (t->o.log)
        return; /* headless: --save says it */
    trainer_rewind_note(e, engine_steps_done(e), 1, note, sizeof t->rd[run].view.rewind);
    if (note[0])
        trainer_add_event(t, NS_EV_INFO, -1, "b rewinds to %s", note);
    trainer_fix_target_note(t, run);
}

void trainer_rewind_note(const engine *e, long from, int live, char *buf, size_t len)
{
    step_metrics m, m2, cand;
    long at, pick = 0, s, k = 1, pick_k = 0;
    double best = -1;
    int l, known = engine_snapshot_before(e, from, &at, &m), known2 = 0;
    buf[0] = 0;
    if (known < 0)
        return;
    /* walk back: the newest snapshot clear of the limit, else the roomiest */
    for (s = at; known > 0 && diag_least_headroom(&m, &l) < DIAG_SNAP_NEAR;) {
        int r = engine_snapshot_before(e, s, &s, &cand);
        if (r < 0)
            break;
        k++;
        double h = r > 0 ? diag_least_headroom(&cand, &l) : NAN;
        if (r > 0 && h > best) {
            best = h, pick = s, pick_k = k, m2 = cand, known2 = 1;
            if (h >= DIAG_SNAP_NEAR)
                break;
        }
    }
    char again[64];
    if (live && pick_k == 2)
        snprintf(again, sizeof again, "b twice");
    else if (live)
        snprintf(again, sizeof again, "b %ld times", pick_k);
    else
        snprintf(again, sizeof again, "the same run with --steps %ld saves it", pick);
    diag_snapshot_text(at, known > 0 ? &m : NULL, pick, known2 ? &m2 : NULL, again, buf, len);
}
