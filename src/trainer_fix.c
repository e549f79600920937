/* trainer_fix.c - the diagnosis' fix (the a key, --on-diverge fix,
 * --on-stall fix): the findings whose fixes apply and their commands as
 * one list, going back to a snapshot still healthy (or a re-init),
 * running the commands, and judging the fix DIAG_FIX_CHECK steps later;
 * with no fix left the run stops with its diagnosis. Also the fix's story
 * in each run's view and where the D panel's fix would go.
 *
 * Not here: the findings (diagnose.c, trainer_diag.c), the commands a
 * fix runs (trainer_cmd.c).
 */
#include "trainer_int.h"

#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "settings.h"
#include "twin.h"

/* The findings of run's episode whose fixes apply, in the order the
 * panel gives them (the cause first), leaving out the rules whose fixes
 * were tried since the last fix that helped (t->fix_rules). */
static int fix_candidates(const trainer *t, int run, const diag_finding **out, int max)
{
    const trainer_diagnosis *v = &t->rd[run].view;
    int n = 0;
    for (int rank = 0; rank < TRAINER_RANKS; rank++)
        for (int i = 0; i < v->n && n < max; i++)
            if (snapshot_finding_rank(&v->f[i]) == rank && v->f[i].fix[0] &&
                !(t->fix_rules & (1u << v->f[i].rule)))
                out[n++] = &v->f[i];
    return n;
}

/* The finding whose fix applies first, and its run: the run that
 * diverged, else a before b (snapshot_fix_run); NULL for none. */
static const diag_finding *fix_finding(const trainer *t, int *run)
{
    const diag_finding *f[1];
    const trainer_diagnosis *views[2] = {&t->rd[0].view, &t->rd[1].view};
    *run = snapshot_fix_run(views, trainer_n_runs(t), t->diverged_run);
    if (*run >= 0 && fix_candidates(t, *run, f, 1) == 1)
        return f[0];
    for (*run = 0; *run < trainer_n_runs(t); ++*run) /* every tried fix of the first: the other's */
        if (fix_candidates(t, *run, f, 1) == 1)
            return f[0];
    *run = -1;
    return NULL;
}

/* Every candidate's commands as one list, the cause's first: a command
 * whose word an earlier one has ("lr 0.001" before a blow-up's "lr
 * x0.1") is left out, so each setting is set once. */
static void fix_all_commands(const diag_finding *const *f, int n, char *buf, size_t len)
{
    buf[0] = 0;
    for (int i = 0; i < n; i++) {
        char list[DIAG_FIX_TEXT], *save = NULL;
        snprintf(list, sizeof list, "%s", f[i]->fix);
        for (char *w = strtok_r(list, ";", &save); w; w = strtok_r(NULL, ";", &save)) {
            while (*w == ' ')
                w++;
            size_t wl = strcspn(w, " "), at = strlen(buf);
            int dup = 0;
            for (const char *p = buf; *p && !dup; p += strcspn(p, ";"), p += *p == ';', p += *p == ' ')
                dup = strncmp(p, w, wl) == 0 && p[wl] == ' ';
            if (!dup && at + strlen(w) + 3 < len)
                snprintf(buf + at, len - at, "%s%s", at ? "; " : "", w);
        }
    }
}

/* Does the script command w change anything on e? A setting set to the
 * value in force, or scaled by 1, does not: a fix that is already in
 * force. Any other command does (a rewind, a toggle). */
static int fix_changes(const engine *e, const char *w)
{
    ns_command c;
    char err[128];
    if (command_parse(w, &c, err, sizeof err) != 0 || c.kind != CMD_SETTING || !command_row(&c))
        return 1;
    double now = engine_setting_value(e, command_row(&c));
    if (c.how == CMDH_SCALE)
        return c.v.u.x != 1.0;
    if (c.how != CMDH_SET)
        return 1;
    return (c.v.type == CMDV_INT ? (double)c.v.u.i : c.v.u.x) != now;
}

/* Split a fix's commands into those that change something on e (keep)
 * and those already in force (kept out, in force); returns how many
 * were kept. */
static int fix_split_in_force(const engine *e, const char *fix, char *keep, char *in_force,
                              size_t len)
{
    char list[TRAINER_FIX_TEXT], *save = NULL;
    int n = 0;
    keep[0] = in_force[0] = 0;
    snprintf(list, sizeof list, "%s", fix);
    for (char *w = strtok_r(list, ";", &save); w; w = strtok_r(NULL, ";", &save)) {
        while (*w == ' ')
            w++;
        char *to = fix_changes(e, w) ? keep : in_force;
        n += to == keep;
        if (strlen(to) + strlen(w) + 3 < len)
            snprintf(to + strlen(to), len - strlen(to), "%s%s", to[0] ? "; " : "", w);
    }
    return n;
}

/* The candidates a fix whose cause is f[0] applies: when it goes back
 * to a snapshot, a finding made of steps after it (the logits of an LR
 * spike the rewind drops) has no evidence left, so its fix is left out */
static int fix_after_back(const diag_finding *cause, const diag_finding **f, int n)
{
    if (cause->fix_from != DIAG_FROM_SNAPSHOT)
        return n;
    int k = 0;
    for (int i = 0; i < n; i++)
        if (f[i] == cause || f[i]->step <= cause->fix_before)
            f[k++] = f[i];
    return k;
}

/* Where a fix that goes back to a snapshot goes: the newest snapshot at
 * or before `before` still healthy by the run's first step
 * (diag_snapshot_healthy), or -1: none, a re-init. Its metrics' loss in
 * *loss (NaN when not kept); why the newest was passed over in skipped. */
static long fix_healthy_snapshot(const trainer *t, int run, long before, double *loss,
                                 char *skipped, size_t len)
{
    const engine *e = run ? t->o.twin : t->e;
    long at;
    step_metrics m;
    skipped[0] = 0;
    for (long b = before + 1; b > 0; b = at) {
        int known = engine_snapshot_before(e, b, &at, &m);
        if (known < 0)
            return -1;
        char why[DIAG_TEXT];
        int h = known > 0 ? diag_snapshot_healthy(&t->rd[run].d, &m, why, sizeof why) : -1;
        if (h != 0) {
            *loss = known > 0 ? m.loss : NAN;
            return at;
        }
        if (!skipped[0])
            snprintf(skipped, len, "step %ld's %s", at, why);
    }
    return -1;
}

/* Go back for candidate f of run: a rewind to the newest healthy
 * snapshot at or before its step (a re-init when none is), a re-init, or
 * nothing. Returns the step the run is at then; *back_loss the loss
 * there (the start's after a re-init), the words of where in where. */
static long fix_go_back(trainer *t, int run, const diag_finding *f, double *back_loss,
                        char *where, size_t len)
{
    long before = engine_steps_done(t->e);
    double start = t->rd[run].d.start_loss;
    char skipped[DIAG_TEXT + 16];
    ns_command c;
    where[0] = 0;
    *back_loss = diag_recent_loss(&t->rd[run].d);
    if (f->fix_from == DIAG_FROM_HERE || before == 0)
        return before;
    /* step 0's snapshot is the init's weights: the start's loss */
    long at = f->fix_from == DIAG_FROM_SNAPSHOT
                  ? fix_healthy_snapshot(t, run, f->fix_before < before - 1 ? f->fix_before
                                                                            : before - 1,
                                         back_loss, skipped, sizeof skipped)
                  : -1;
    if (at >= 0) {
        c = command_make(CMD_REWIND);
        c.v.type = CMDV_REAL;
        c.v.u.x = (double)at;
        trainer_apply_command(t, &c, TWIN_BOTH);
        if (skipped[0])
            snprintf(where, len, " (the newest still healthy; %s)", skipped);
        if (at == 0 || !(*back_loss > 0))
            *back_loss = start;
        if (engine_steps_done(t->e) < before)
            return engine_steps_done(t->e);
    }
    c = command_make(CMD_REINIT);
    trainer_apply_command(t, &c, TWIN_BOTH);
    *back_loss = start;
    if (f->fix_from == DIAG_FROM_SNAPSHOT)
        snprintf(where, len, " (no snapshot still healthy%s%s)", skipped[0] ? ": " : "",
                 skipped);
    return engine_steps_done(t->e);
}

/* Run a fix's commands (';'-separated script commands) on target, as
 * keys are run. */
static void fix_commands(trainer *t, const char *fix, int target)
{
    char list[TRAINER_FIX_TEXT], *save = NULL;
    snprintf(list, sizeof list, "%s", fix);
    for (char *w = strtok_r(list, ";", &save); w; w = strtok_r(NULL, ";", &save)) {
        ns_command c;
        char err[128];
        while (*w == ' ')
            w++;
        if (command_parse(w, &c, err, sizeof err) == 0)
            trainer_apply_command(t, &c, target);
    }
}

/* ---- the run left alone ---------------------------------------------------
 * Advice is an experiment (DESIGN.md): where the fix went back to, before
 * its commands, a copy of the run is made and stepped beside it on the
 * same batches (trainer.c's step_runs, the --compare pair's way), its
 * diagnosis continued from the run's; at the check the two are compared
 * step by step. Under --compare the twin slot is taken, and a copy that
 * does not fit in memory is not made: the fix is then judged against the
 * run's own loss before it, and the log says so. */

void trainer_fix_twin_end(trainer *t)
{
    engine_free(t->fix_twin);
    free(t->fix_twin_d);
    t->fix_twin = NULL;
    t->fix_twin_d = NULL;
}

/* A copy of run's engine as it stands, with a copy of its diagnosis; NULL
 * and why in t->fix_alone when none can be had. */
static engine *fix_twin_make(trainer *t, int run)
{
    char err[128];
    engine *e = NULL;
    t->fix_alone[0] = 0;
    double machine = engine_machine_bytes();
    const ns_config *c = engine_config(t->e);
    if (t->o.twin) {
        snprintf(t->fix_alone, sizeof t->fix_alone, "--compare's run b takes the twin's place");
    } else if (machine > 0 && trainer_bytes_needed(c, c, 0) > machine) {
        snprintf(t->fix_alone, sizeof t->fix_alone, "a twin would pass the machine's %.0f MiB",
                 machine / 1048576.0);
    } else if (!(e = engine_clone(t->e, err, sizeof err)) ||
               !(t->fix_twin_d = malloc(sizeof *t->fix_twin_d))) {
        snprintf(t->fix_alone, sizeof t->fix_alone, "no twin: %.80s", e ? "out of memory" : err);
        engine_free(e);
        return NULL;
    } else {
        sigset_t ui;
        trainer_ui_signals(&ui); /* its workers leave the signals to the UI thread */
        if (engine_set_threads(e, engine_threads(t->e), &ui) != 0)
            engine_set_threads(e, 1, NULL);
        *t->fix_twin_d = t->rd[run].d;
    }
    return e;
}

/* Do the two runs have every mid-run setting alike? (a fix whose
 * commands changed nothing: going back was all of it) */
static int fix_same_settings(const engine *a, const engine *b)
{
    for (int i = 0; i < settings_count(); i++) {
        const ns_setting *r = settings_row(i);
        if (r->cmd && engine_setting_value(a, r) != engine_setting_value(b, r))
            return 0; /* a mid-run row: the twin's snapshots and validation are its own */
    }
    return 1;
}

void trainer_fix_twin_observe(trainer *t)
{
    if (!t->fix_twin)
        return;
    diag_finding scratch[DIAG_MAX_FINDINGS]; /* the run left alone reports nothing */
    step_metrics *m = &t->fix_twin_m;
    m->vocab = NS_VOCAB;
    m->data_entropy = (float)t->o.plateau;
    diag_observe(t->fix_twin_d, m, scratch, DIAG_MAX_FINDINGS);
    if (!t->fix_twin_bad && (m->nonfinite || diag_exploded(t->fix_twin_d)))
        t->fix_twin_bad = m->step;
}

void trainer_fix_twin_command(trainer *t, const ns_command *c, int r)
{
    if (!t->fix_twin || r != CMD_APPLIED)
        return;
    if (c->kind == CMD_REWIND || c->kind == CMD_REINIT) {
        trainer_fix_twin_end(t);
        snprintf(t->fix_alone, sizeof t->fix_alone,
                 "the run left alone was dropped at a %s during the check",
                 c->kind == CMD_REWIND ? "rewind" : "re-init");
    } else if (c->kind == CMD_SETTING) {
        command_apply(t->fix_twin, c);
    }
}

/* The two runs' mean losses over the newest DIAG_LEARN_MEAN steps both
 * took (finite, updated), and the noise of their difference: two
 * standard errors of the step-by-step differences (the same batches make
 * them paired). The steps compared; 0 when none. */
static const diag_point *fix_point_at(const diag *d, long step)
{
    for (long age = 0; age < d->n && age < DIAG_WINDOW; age++) {
        const diag_point *p = &d->hist[(d->n - 1 - age) % DIAG_WINDOW];
        if (p->step == step)
            return p;
    }
    return NULL;
}

static int fix_twin_paired(const diag *fixed, const diag *alone, double *f, double *u,
                           double *noise)
{
    double sf = 0, su = 0, sd = 0, sdd = 0;
    int n = 0;
    for (long age = 0; age < fixed->n && age < DIAG_WINDOW && n < DIAG_LEARN_MEAN; age++) {
        const diag_point *p = &fixed->hist[(fixed->n - 1 - age) % DIAG_WINDOW];
        const diag_point *q = fix_point_at(alone, p->step);
        if (!q || !p->updated || !q->updated)
            continue;
        double d = (double)p->loss - q->loss;
        sf += p->loss, su += q->loss, sd += d, sdd += d * d, n++;
    }
    if (n < 2)
        return 0;
    *f = sf / n, *u = su / n;
    double var = (sdd - sd * sd / n) / (n - 1);
    *noise = 2.0 * sqrt(var > 0 ? var / n : 0);
    return n;
}

/* The fix judged against the run left alone at its check step: helped
 * when its mean loss is below the other's by more than the noise (or the
 * other diverged); else it lost, or made no difference, and is undone:
 * the run left alone takes over, and the next candidate is tried if it
 * is still in trouble. */
static void fix_judge_twin(trainer *t, long done)
{
    const char *pre = trainer_run_prefix(t, t->fix_run);
    diag *d = &t->rd[t->fix_run].d;
    double f = NAN, u = NAN, noise = NAN;
    int n = fix_twin_paired(d, t->fix_twin_d, &f, &u, &noise);
    if (t->fix_twin_bad) {
        f = diag_recent_loss(d);
        engine_note(t->e, "%sthe fix helped: loss %.3f at step %ld, while the run left alone "
                    "%s at step %ld", pre, f, done,
                    t->fix_twin_m.nonfinite ? "diverged" : "blew up", t->fix_twin_bad);
        snprintf(t->fix_proven, sizeof t->fix_proven,
                 "fix %d (%.100s) helped: loss %.3f at step %ld; left alone, it %s at step %ld",
                 t->fixes, t->fix_what, f, done, t->fix_twin_m.nonfinite ? "diverged" : "blew up",
                 t->fix_twin_bad);
        t->fix_rules = 0;
    } else if (n && f < u - noise) {
        engine_note(t->e, "%sthe fix helped: loss %.3f against %.3f left alone at step %ld "
                    "(means of %d steps on the same batches; noise %.3f)", pre, f, u, done, n, noise);
        snprintf(t->fix_proven, sizeof t->fix_proven,
                 "fix %d (%.100s) helped: loss %.3f against %.3f left alone at step %ld", t->fixes,
                 t->fix_what, f, u, done);
        t->fix_rules = 0;
    } else {
        const char *how = !n ? "could not be compared" : f > u + noise ? "lost" : "made no difference";
        engine_note(t->e, "%sthe fix did not help: it %s: loss %.3f against %.3f left alone at step "
                    "%ld (means of %d steps on the same batches; noise %.3f); undone: the run left "
                    "alone goes on", pre, how, f, u, done, n, noise);
        snprintf(t->fix_proven, sizeof t->fix_proven,
                 "fix %d (%.100s) %s: loss %.3f against %.3f left alone at step %ld; undone",
                 t->fixes, t->fix_what, how, f, u, done);
        engine_copy_run(t->e, t->fix_twin, t->fix_at);
        *d = *t->fix_twin_d;
        t->run[0].m = t->fix_twin_m;
        t->run[0].loss = t->fix_twin_m.loss;
        if (diag_stalled(d) || diag_exploded(d))
            t->fix_due = "the fix's check"; /* still in trouble: the next candidate */
    }
    trainer_fix_twin_end(t);
    t->fix_check_at = 0;
    trainer_set_fix_note(t, "%s", "");
    trainer_pull_engine_events(t);
}

/* The fix's story in run r's view: what its verdict waits on, and the
 * latest fix proven (none for the other run). */
void trainer_view_fix(const trainer *t, int r, trainer_diagnosis *v)
{
    snprintf(v->fix_note, sizeof v->fix_note, "%s", r == t->fix_run ? t->fix_note : "");
    snprintf(v->fix_proven, sizeof v->fix_proven, "%s", r == t->fix_run ? t->fix_proven : "");
}

/* What the fix run's verdict waits on (trainer_diagnosis.fix_note), in
 * its view at once: a run that stops on it reports it. "" clears it. */
void trainer_set_fix_note(trainer *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->fix_note, sizeof t->fix_note, fmt, ap);
    va_end(ap);
    trainer_diagnosis *v = &t->rd[t->fix_run].view;
    trainer_view_fix(t, t->fix_run, v);
    v->healthy = v->healthy && !t->fix_note[0];
}

/* Nothing to fix it with, or no fix left: the run stops with its
 * diagnosis (DIVERGED: headless, exit 3), but a stall under --on-stall
 * fix goes on. */
static void fix_give_up(trainer *t, const char *how, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void fix_give_up(trainer *t, const char *how, const char *fmt, ...)
{
    char msg[NS_EVENT_TEXT];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* a run that did not diverge or blow up goes on: its fix's failure is
     * news, not a reason to stop a run that trains */
    int stall = t->diverged_run < 0 && (strcmp(how, "--on-stall fix") == 0 || t->fix_alone[0]);
    engine_note(t->e, "fix (%s): %s; %s", how, msg,
                stall ? "the run goes on" : "stopping with the diagnosis");
    trainer_pull_engine_events(t);
    if (!stall) {
        trainer_set_state(t, TRAINER_DIVERGED);
        t->budget = 0;
        t->fix_failed = t->fix_check_at != 0;
        trainer_publish_status(t);
    }
    t->fix_check_at = 0;
}

/* fix_finding, passing over a fix that does not go back and whose
 * commands are all in force already (qk-norm on with QK-norm on): it
 * would change nothing. Each passed over is said, and counts as tried. */
static const diag_finding *fix_finding_to_apply(trainer *t, const char *how, int *run)
{
    const diag_finding *f;
    char keep[TRAINER_FIX_TEXT], in_force[TRAINER_FIX_TEXT];
    while ((f = fix_finding(t, run)) && (f->fix_from == DIAG_FROM_HERE ||
                                         engine_steps_done(t->e) == 0) &&
           fix_split_in_force(*run ? t->o.twin : t->e, f->fix, keep, in_force,
                              sizeof keep) == 0) {
        engine_note(t->e, "fix (%s): %s's fix (%s) is already in force: not applied again; "
                    "its advice: %s", how, diag_rule_name(f->rule), in_force, f->hint);
        trainer_pull_engine_events(t);
        t->fix_rules |= 1u << f->rule;
    }
    return f;
}

/* "; next: RULE, RULE" for the candidates other than the cause's rule,
 * each once: the fixes to try when this one does not help. */
static void fix_next_list(diag_rule cause, const diag_finding *const *all, int n, char *buf,
                          size_t len)
{
    buf[0] = 0;
    for (int i = 0; i < n; i++)
        if (all[i]->rule != cause && !strstr(buf, diag_rule_name(all[i]->rule)) &&
            strlen(buf) + 24 < len)
            snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", buf[0] ? ", " : "; next: ",
                     diag_rule_name(all[i]->rule));
}

/* The log's line on how the fix just applied is judged: against the run
 * left alone (twin), or against the run's own loss before it, and why. */
static void fix_note_check(trainer *t, int run, long at, int twin)
{
    if (twin)
        engine_note(t->e, "%sfix %d is checked at step %ld against the run left alone, stepped "
                    "beside it from step %ld on the same batches: its loss (mean of %d steps) must "
                    "be below the other's by more than their noise", trainer_run_prefix(t, run),
                    t->fixes, t->fix_check_at, at, DIAG_LEARN_MEAN);
    else
        engine_note(t->e, "%sfix %d is checked at step %ld: its loss (mean of %d steps) must be "
                    "below %.3f, the run's own before the fix (not against the run left alone: "
                    "%s)", trainer_run_prefix(t, run), t->fixes, t->fix_check_at, DIAG_LEARN_MEAN,
                    t->fix_bar, t->fix_alone);
}

/* Apply the diagnosis' fixes: go back as the cause's says (to a snapshot
 * still healthy), run every candidate's commands on its run, note it (the
 * log, a "fix" mark, the next row's state "fixed"), train on, and judge
 * it DIAG_FIX_CHECK steps later (trainer_fix_check); at most TRAINER_FIX_MAX
 * times. how: what asked for it, for the log. */
void trainer_apply_fix(trainer *t, const char *how)
{
    int run = 0;
    const diag_finding *found = fix_finding_to_apply(t, how, &run), *all[TRAINER_FINDINGS];
    if (!found) {
        if (t->fix_check_at)
            fix_give_up(t, how, "no finding names a next step to try");
        else if (t->diverged_run >= 0 && strcmp(how, "--on-diverge fix") == 0)
            fix_give_up(t, how, "no finding names a next step to apply");
        else {
            engine_note(t->e, "fix (%s): no finding names a next step to apply", how);
            trainer_pull_engine_events(t);
        }
        return;
    }
    if (t->fixes >= TRAINER_FIX_MAX) {
        fix_give_up(t, how, "%d applied already, the most", t->fixes);
        return;
    }
    /* the cause's fix alone, so that its check says whether it helped;
     * the others are listed, each the next fix's when this one fails */
    int n = fix_after_back(found, all, fix_candidates(t, run, all, TRAINER_FINDINGS));
    diag_finding f = *found; /* a rewind clears the episode's list */
    char cmds[TRAINER_FIX_TEXT], in_force[DIAG_FIX_TEXT], next[96];
    char where[DIAG_TEXT + 48];
    fix_next_list(f.rule, all, n, next, sizeof next);
    t->fix_rules |= 1u << f.rule;
    double replaced = diag_recent_loss(&t->rd[run].d), back;
    long from = engine_steps_done(t->e);
    trainer_fix_twin_end(t); /* an earlier fix's, not yet judged */
    long at = fix_go_back(t, run, &f, &back, where, sizeof where);
    engine *alone = fix_twin_make(t, run); /* before the fix's commands */
    int target = !t->o.twin ? TWIN_BOTH : run ? TWIN_B : TWIN_A;
    t->mark_bits[run] |= MARK_FIX; /* the commands' marks name it first */
    /* where it went back to, a command already in force changes nothing */
    fix_split_in_force(run ? t->o.twin : t->e, f.fix, cmds, in_force, sizeof in_force);
    fix_commands(t, cmds, target);
    char shown[TRAINER_FIX_TEXT + DIAG_FIX_TEXT + 32];
    snprintf(shown, sizeof shown, "%s%s%s%s", cmds, in_force[0] ? (cmds[0] ? " (" : "nothing (")
             : "", in_force, in_force[0] ? " already in force)" : "");
    int same = alone && fix_same_settings(t->e, alone);
    if (same) {
        engine_free(alone);
        free(t->fix_twin_d);
        t->fix_twin_d = NULL;
        alone = NULL;
        snprintf(t->fix_alone, sizeof t->fix_alone, "going back is all of the fix, and the run "
                 "left alone from there the same run: against its loss when the fix was made");
    }
    t->fix_twin = alone;
    t->fix_at = at;
    t->fix_twin_bad = 0;
    t->fixes++;
    t->fixed_row = 1;
    /* it must beat the state it replaced, and fall from where it went back */
    double bar = back - DIAG_FIX_FALL;
    if ((!(bar < replaced) || same) && isfinite(replaced))
        bar = replaced; /* going back was all of it: the run as it stood is the other */
    t->fix_check_at = at + DIAG_FIX_CHECK;
    t->fix_bar = bar;
    t->fix_run = run;
    snprintf(t->fix_what, sizeof t->fix_what, "%.*s", (int)sizeof t->fix_what - 1, shown);
    t->fix_proven[0] = 0; /* the story is the new fix's now */
    engine_note(t->e, "fix %d of %d (%s): %s%s step %ld%s, then %s (cause: %s at step %ld%s)",
                t->fixes, TRAINER_FIX_MAX, how, trainer_run_prefix(t, run),
                at < from ? "went back to" : "stayed at", at, where, shown,
                diag_rule_name(f.rule), f.step, next);
    fix_note_check(t, run, at, alone != NULL);
    trainer_set_fix_note(t, "fix %d is checked at step %ld", t->fixes, t->fix_check_at);
    trainer_pull_engine_events(t);
    if (t->state == TRAINER_DIVERGED || t->state == TRAINER_PAUSED || t->state == TRAINER_DONE)
        trainer_set_state(t, TRAINER_RUNNING);
    t->budget = 0;
}

/* The latest fix, judged: a divergence or a blow-up before its check
 * step, or at that step a mean loss (DIAG_LEARN_MEAN steps) not below
 * its bar or a run stalled, and "the fix did not help": the next
 * candidate is tried, or the run stops. Else it helped, and says so. */
void trainer_fix_check(trainer *t, int bad, int blown)
{
    if (!t->fix_check_at)
        return;
    long done = engine_steps_done(t->e);
    const diag *d = &t->rd[t->fix_run].d;
    double now = diag_recent_loss(d);
    int failed = bad || blown >= 0;
    if (!failed && done < t->fix_check_at)
        return;
    if (!failed && t->fix_twin) {
        fix_judge_twin(t, done);
        return;
    }
    trainer_fix_twin_end(t);
    const char *pre = trainer_run_prefix(t, t->fix_run);
    if (failed) {
        engine_note(t->e, "%sthe fix did not help: %s at step %ld, before its check at step %ld",
                    pre, bad ? "diverged" : "blew up", done, t->fix_check_at);
        trainer_set_fix_note(t, "fix %d did not help: %s at step %ld", t->fixes,
                     bad ? "diverged" : "blew up", done);
        t->fix_rules = 0; /* a new episode: its findings are news, tried or not */
    } else if (!(now < t->fix_bar) || diag_stalled(d)) {
        engine_note(t->e, "%sthe fix did not help: loss %.3f (mean of %d steps) at step %ld, "
                    "not below %.3f%s", pre, now, DIAG_LEARN_MEAN, done, t->fix_bar,
                    diag_stalled(d) ? ", stalled" : "");
        trainer_set_fix_note(t, "fix %d did not help: loss %.3f at step %ld, not below %.3f", t->fixes,
                     now, done, t->fix_bar);
        trainer_pull_engine_events(t);
        t->fix_due = "the fix's check"; /* the next candidate, after this step's report */
        return;
    } else {
        engine_note(t->e, "%sthe fix helped: loss %.3f (mean of %d steps) at step %ld, below "
                    "%.3f (the run's own before the fix; %s)", pre, now, DIAG_LEARN_MEAN, done,
                    t->fix_bar, t->fix_alone);
        snprintf(t->fix_proven, sizeof t->fix_proven,
                 "fix %d (%.120s) helped: loss %.3f at step %ld, below %.3f", t->fixes,
                 t->fix_what, now, done, t->fix_bar);
        t->fix_rules = 0;
        trainer_set_fix_note(t, "%s", "");
    }
    t->fix_check_at = 0;
    trainer_pull_engine_events(t);
}

/* The snapshot the fix of v's cause rewinds to (fix_go_back's, as
 * engine_rewind_before picks it) and how close it is to the limit, in the
 * words of b's line, into v->fix_rewind; "" when the fix does not rewind
 * or goes where b goes; v->fix_reinit when no snapshot is that old. */
void trainer_fix_target_note(trainer *t, int run)
{
    const engine *e = run ? t->o.twin : t->e;
    trainer_diagnosis *v = &t->rd[run].view;
    const diag_finding *f = snapshot_diagnosis_fix(v), *all[TRAINER_FINDINGS];
    long done = engine_steps_done(e), b_at;
    step_metrics m, mb;
    char skipped[DIAG_TEXT + 16];
    double loss;
    v->fix_rewind[0] = 0;
    v->fix_reinit = 0;
    int n = fix_candidates(t, run, all, TRAINER_FINDINGS);
    fix_all_commands(all, n > 0 ? 1 : 0, v->fix_cmds, sizeof v->fix_cmds); /* the cause's */
    if (!f || f->fix_from != DIAG_FROM_SNAPSHOT)
        return;
    long before = f->fix_before < done - 1 ? f->fix_before : done - 1;
    long at = fix_healthy_snapshot(t, run, before > 0 ? before : 0, &loss, skipped,
                                   sizeof skipped);
    v->fix_reinit = at < 0 && done > 0;
    if (at < 0 || (engine_snapshot_before(e, done, &b_at, &mb) >= 0 && b_at == at))
        return;
    int known = engine_snapshot_before(e, at + 1, &at, &m);
    diag_snapshot_text(at, known > 0 ? &m : NULL, 0, NULL, "", v->fix_rewind,
                       sizeof v->fix_rewind);
}
