/* trainer_cmd.c - applying a command on the trainer thread between steps,
 * from a key, the --script or a fix: the run's flow (pause, resume, step,
 * stop; headless, a script's are noted and skipped), a setting on the
 * run(s) it targets, a rewind or a re-init and what they reset (the loss
 * shown, the history's cut, the step since which the runs are joined),
 * and the chart marker each change leaves on the next step's point.
 *
 * Not here: the queue (trainer.c), the fixes (trainer_fix.c), what a
 * command does to an engine (engine.c, twin.c).
 */
#include "trainer_int.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "twin.h"

void trainer_set_state(trainer *t, trainer_state s)
{
    if (s == TRAINER_RUNNING && t->state != TRAINER_RUNNING) {
        /* a fresh rate window: paused time is not running time */
        t->rate_t0 = trainer_run_now(t);
        t->rate_s0 = engine_steps_done(t->e);
    }
    t->state = s;
}

static void resume_run(trainer *t)
{
    if (t->state == TRAINER_RUNNING)
        return;
    if (t->state == TRAINER_DONE) {
        if (t->limit > 0 && engine_steps_done(t->e) >= t->limit) {
            trainer_add_event(t, NS_EV_INFO, -1, "training on past --steps %ld", t->limit);
            t->limit = 0;
        } else {
            trainer_add_event(t, NS_EV_INFO, -1, "training on");
        }
    } else if (t->state == TRAINER_DIVERGED) {
        trainer_add_event(t, NS_EV_INFO, -1, "resumed after the divergence (weights as before it)");
    } else {
        trainer_add_event(t, NS_EV_INFO, -1, "resumed");
    }
    t->budget = 0;
    trainer_set_state(t, TRAINER_RUNNING);
}

static void pause_run(trainer *t, const char *why)
{
    if (t->state != TRAINER_RUNNING)
        return;
    trainer_set_state(t, TRAINER_PAUSED);
    t->budget = 0;
    trainer_add_event(t, NS_EV_INFO, -1, "paused at step %ld%s", engine_steps_done(t->e), why);
}

/* A script's "pause PROMPT": the prompt goes to the event log and, for the
 * lesson panel, to the status; under --no-pause the run goes on. */
static void pause_ask(trainer *t, const ns_command *c)
{
    if (c->text[0]) {
        snprintf(t->ask, sizeof t->ask, "%s", c->text);
        t->ask_step = engine_steps_done(t->e);
        t->ask_seq++;
        trainer_add_event(t, NS_EV_NOTE, -1, "%s", c->text);
    }
    if (!t->o.no_pause)
        pause_run(t, c->text[0] ? ": space goes on" : "");
}

/* Label the next step's point (mark: a run's TRAINER_MARK buffer):
 * several changes before one step share it, comma-separated. A label
 * that does not fit whole is left out and the mark ends in ",+" (more
 * changed than it says), never a label cut short ("no warmu"). */
static void add_mark(char *mark, const char *label)
{
    size_t used = strlen(mark), n = strlen(label), sep = used > 0;
    if (used && mark[used - 1] == '+')
        return; /* already full */
    /* a label goes in only with room to spare for the ",+" */
    if (used + sep + n > TRAINER_MARK - 3)
        label = "+", n = 1;
    if (sep)
        mark[used++] = ',';
    memcpy(mark + used, label, n);
    mark[used + n] = 0;
}

/* The chart marker of the changes before the next step on one run's curve
 * (run 1 = b), rebuilt from that run's state after the latest one:
 * "rewind,lr 4e-03" after a rewind and two LR changes shows the LR in
 * force, not the first change's. Each setting says itself (its row's
 * marker, settings_mark). */
static void mark_for(trainer *t, int run, const ns_command *c)
{
    const engine *e = run ? t->o.twin : t->e;
    char *mark = t->run[run].mark;
    const ns_setting *row = command_row(c);
    unsigned *bits = &t->mark_bits[run];
    if (c->kind == CMD_REINIT)
        *bits |= MARK_REINIT;
    else if (c->kind == CMD_REWIND)
        *bits |= MARK_REWIND;
    else if (row && row->hook != SETH_NONE)
        *bits |= 1u << (MARK_HOOK0 + row->hook);
    mark[0] = 0;
    if (*bits & MARK_FIX)
        add_mark(mark, "fix");
    if (*bits & MARK_REINIT)
        add_mark(mark, "reinit");
    if (*bits & MARK_REWIND)
        add_mark(mark, "rewind");
    for (int h = SETH_NONE + 1; h < SETH_COUNT; h++) {
        const ns_setting *s = settings_find_hook((setting_hook)h);
        char b[32];
        if (!s || !(*bits & (1u << (MARK_HOOK0 + h))))
            continue;
        settings_mark(s, engine_setting_shown(e, s), b, sizeof b);
        if (b[0])
            add_mark(mark, b);
    }
}

/* A rewind to step `to`: the loss (and the validation loss) shown are
 * those of that step and before, from the published history, whose points
 * after `to` are about to be cut. The trainer thread is its only writer;
 * slock for the readers' sake. */
static void rewound_to(trainer *t, long to)
{
    t->have_loss = 0;
    int val_gone = t->last_val_step > to;
    if (val_gone) {
        t->run[0].last_val = NAN;
        t->run[1].last_val = NAN; /* found below with a's: the runs validate together */
        t->last_val_step = 0;
    }
    if (t->hist_reset)
        return; /* the history is being restarted: nothing in it is ours */
    pthread_mutex_lock(&t->slock);
    const trainer_snapshot *p = t->pub;
    long total = p->s.hist_total, first = trainer_hist_first(&p->s);
    if (total > first) {
        /* points are consecutive steps: step `to` is (last - to) back */
        long last = p->hist[(total - 1) % TRAINER_HIST].step;
        long i = total - 1 - (last - to);
        if (i >= first && i < total && p->hist[i % TRAINER_HIST].step == to) {
            const trainer_point *pt = &p->hist[i % TRAINER_HIST];
            t->have_loss = 1;
            t->run[0].loss = pt->run[0].loss;
            t->run[1].loss = pt->run[1].loss;
        }
        for (; val_gone && i >= first && i < total; i--) {
            const trainer_point *pt = &p->hist[i % TRAINER_HIST];
            if (!isnan(pt->run[0].val_loss)) {
                t->run[0].last_val = pt->run[0].val_loss;
                t->run[1].last_val = pt->run[1].val_loss;
                t->last_val_step = pt->step;
                break;
            }
        }
    }
    pthread_mutex_unlock(&t->slock);
}

/* A re-init: step 0, no metrics, a new history, no fix pending or failed
 * (a fix's own re-init comes before its check is set). */
static void reinited(trainer *t)
{
    t->generation++;
    t->fix_check_at = 0;
    t->fix_failed = 0;
    t->fix_proven[0] = 0;
    trainer_set_fix_note(t, "%s", "");
    t->hist_reset = 1;
    t->have_metrics = 0;
    t->have_loss = 0;
    memset(&t->run[0].m, 0, sizeof t->run[0].m);
    memset(&t->run[1].m, 0, sizeof t->run[1].m);
    t->run[0].last_val = NAN;
    t->run[1].last_val = NAN;
    t->last_val_step = 0;
    t->diverged_run = -1;
    t->run[0].mark[0] = 0;
    t->run[1].mark[0] = 0;
    t->mark_bits[0] = t->mark_bits[1] = 0;
    t->budget = 0;
    /* a diverged or finished run starts over; a paused one stays paused */
    if (t->state == TRAINER_DIVERGED || t->state == TRAINER_DONE)
        trainer_set_state(t, TRAINER_RUNNING);
}

/* A note about both runs (a script's or a lesson's, without "a:" or
 * "b:"): in the log without a run's name, where a note in run a's engine
 * would read "a: ..."; headless, printed after what the engines said
 * before it. Alone, the run's own note. */
static void note_runs(trainer *t, const char *text)
{
    if (!t->o.twin) {
        engine_note(t->e, "%s", text);
        trainer_pull_engine_events(t);
        return;
    }
    trainer_report_events(t);
    trainer_pull_engine_events(t);
    trainer_add_event(t, NS_EV_NOTE, -1, "%s", text);
    if (t->o.log && !t->o.quiet)
        fprintf(t->o.log, "%snormscope: %s\n", t->o.progress ? "\r\033[K" : "", text);
}

/* Headless, a script's flow commands: there is no one to resume a pause,
 * so pause, resume and step are noted and skipped; stop ends the run. */
static void apply_flow_sync(trainer *t, const ns_command *c)
{
    char text[NS_EVENT_TEXT];
    if (c->kind == CMD_STOP) {
        snprintf(text, sizeof text, "script: stop at step %ld", engine_steps_done(t->e));
        trainer_set_state(t, TRAINER_DONE);
        t->budget = 0;
    } else if (c->kind == CMD_PAUSE && c->text[0]) { /* a lesson's question: no one to ask */
        snprintf(text, sizeof text, "%s", c->text);
    } else {
        snprintf(text, sizeof text, "script: pause, resume and step do nothing without the live view");
    }
    note_runs(t, text);
}

static int is_flow(const ns_command *c)
{
    return c->kind == CMD_PAUSE || c->kind == CMD_RESUME || c->kind == CMD_PAUSE_TOGGLE ||
           c->kind == CMD_STEP || c->kind == CMD_STOP;
}

/* Since when the runs' settings are the same (trainer_status.joined): a
 * change that made them equal starts it, one that split them ends it; a
 * rewind before it brings it back to the snapshot's step. */
static void joined_after(trainer *t, long step)
{
    twin_run ra = {engine_config(t->e), engine_warmup_on(t->e), engine_current_peak(t->e), 0,
                   NULL};
    twin_run rb = {engine_config(t->o.twin), engine_warmup_on(t->o.twin),
                   engine_current_peak(t->o.twin), 0, NULL};
    if (twin_differ(ra, rb))
        t->joined = 0;
    else if (t->joined == 0 || t->joined > step)
        t->joined = step;
}

/* The run's flow (pause, resume, step, stop), on the trainer's thread:
 * 1 when c was one */
static int apply_flow(trainer *t, const ns_command *c, long before)
{
    switch (c->kind) {
    case CMD_PAUSE: pause_ask(t, c); return 1;
    case CMD_RESUME: resume_run(t); return 1;
    case CMD_PAUSE_TOGGLE:
        if (t->state == TRAINER_RUNNING)
            pause_run(t, "");
        else
            resume_run(t);
        return 1;
    case CMD_STEP:
        if (t->state == TRAINER_RUNNING)
            pause_run(t, ": n steps once, space resumes");
        else
            t->budget++;
        return 1;
    case CMD_STOP:
        if (t->state != TRAINER_DONE) {
            trainer_set_state(t, TRAINER_DONE);
            t->budget = 0;
            trainer_add_event(t, NS_EV_INFO, -1, "stopped at step %ld (space trains on)", before);
        }
        return 1;
    default:
        return 0;
    }
}

/* A rewind went back to step `after`: the steps after the snapshot are
 * gone, so are their points, and the loss shown is the snapshot's step's
 * again */
static void after_rewind(trainer *t, long after)
{
    rewound_to(t, after);
    /* the layer panel shows the snapshot's step, not the abandoned one */
    t->have_metrics = engine_last_metrics(t->e, &t->run[0].m) &&
                      (!t->o.twin || engine_last_metrics(t->o.twin, &t->run[1].m));
    t->generation++;
    t->hist_cut = after;
    /* a new episode: the marks and the D panel wait for their next finding */
    memset(&t->rd[0].view, 0, sizeof t->rd[0].view);
    memset(&t->rd[1].view, 0, sizeof t->rd[1].view);
    t->run[0].mark[0] = 0;
    t->run[1].mark[0] = 0;
    t->mark_bits[0] = t->mark_bits[1] = 0;
    if (t->state == TRAINER_DIVERGED)
        trainer_set_state(t, TRAINER_PAUSED); /* change a setting, then resume */
}

/* target: the run(s) a settings command acts on under --compare (twin.h). */
void trainer_apply_command(trainer *t, const ns_command *c, int target)
{
    engine *e = t->e;
    long before = engine_steps_done(e);
    t->applied++;
    if (c->kind == CMD_FIX) {
        trainer_apply_fix(t, t->in_script ? "the script" : "the a key");
        return;
    }
    if (t->sync && is_flow(c)) {
        apply_flow_sync(t, c);
        return;
    }
    if (apply_flow(t, c, before))
        return;
    twin_target tg = (twin_target)target;
    if (c->kind == CMD_NOTE && tg == TWIN_BOTH) {
        note_runs(t, c->text);
        return;
    }
    long ev_a = engine_event_count(e), ev_b = t->o.twin ? engine_event_count(t->o.twin) : 0;
    int r = twin_apply(e, t->o.twin, c, tg);
    trainer_fix_twin_command(t, c, r);
    /* a setting marks the runs it changed: the engine logs a change and
     * stays silent on a no-op ("kind rmsnorm" on a run already on RMSNorm,
     * which under both a lesson's command also reaches) */
    int moved_a = c->kind != CMD_SETTING || engine_event_count(e) > ev_a;
    int moved_b = c->kind != CMD_SETTING || (t->o.twin && engine_event_count(t->o.twin) > ev_b);
    long ev_before = t->run[0].events_seen + t->run[1].events_seen;
    trainer_pull_engine_events(t);
    if (r == CMD_FAILED) {
        if (t->run[0].events_seen + t->run[1].events_seen == ev_before)
            trainer_add_event(t, NS_EV_REFUSED, -1, "command %d could not be applied", (int)c->kind);
        return;
    }
    if (r != CMD_APPLIED)
        return;
    long after = engine_steps_done(e);
    if (after < before) { /* a fresh rate window: the step count went back */
        t->rate_t0 = trainer_run_now(t);
        t->rate_s0 = after;
        /* a sample of a step after the one gone back to is of weights no
         * longer there: dropped, and a new one taken soon */
        if (t->sample_step > after) {
            t->sample_len = 0;
            t->next_sample = t->rate_t0;
        }
    }
    if (c->kind == CMD_REINIT) {
        reinited(t);
    } else if (c->kind == CMD_REWIND && after < before) {
        after_rewind(t, after);
    }
    if (t->o.twin)
        joined_after(t, after);
    if ((twin_acts_on(c, tg, 0) || !t->o.twin) && moved_a)
        mark_for(t, 0, c);
    if (t->o.twin && twin_acts_on(c, tg, 1) && moved_b)
        mark_for(t, 1, c);
}

/* Script commands are applied exactly as keys are. */
void trainer_script_cmd(void *ctx, const ns_command *c, int target)
{
    trainer *t = ctx;
    t->in_script = 1; /* for the log: who asked for a fix */
    trainer_apply_command(t, c, target);
    t->in_script = 0;
}
