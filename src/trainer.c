/* trainer.c - the trainer thread of the live view: it owns the engine,
 * drains the command queue between steps, runs the --script, steps, and
 * publishes.
 *
 * Locks: qlock guards the queue and the quit flag (qcond wakes a paused
 * trainer); slock guards the published snapshot (scond wakes
 * trainer_wait); clock_lock guards the run clock's hold (trainer_clock_hold).
 * No code path holds two of them. The fields below "trainer-thread
 * only" are touched by the trainer thread alone once it runs (before
 * that, by the creating thread; pthread_create orders the two).
 *
 * Not here: curses, files, flags.
 */
#include "trainer.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "numfmt.h"
#include "pool.h"
#include "twin.h"

/* The sample prompt: the room watches this turn from noise into words. */
static const char default_prompt[] = "The model ";

/* Samples may take at most 1/SAMPLE_BUDGET of the running time, however
 * slow the model: a sample is TRAINER_SAMPLE forward passes of one
 * sequence, several steps' worth of work on a big model, and the live view
 * must train at >= 95% of headless speed. */
#define SAMPLE_BUDGET 50.0
/* steps/s is measured over windows of this many seconds */
#define RATE_WINDOW 0.5

struct trainer {
    engine *e;
    trainer_opts o;
    pthread_t thread;
    int started;

    /* the command queue (a ring) and the quit flag, under qlock */
    pthread_mutex_t qlock;
    pthread_cond_t qcond;
    ns_command q[TRAINER_QUEUE];
    int qt[TRAINER_QUEUE]; /* each command's target (twin.h) */
    int q_head, q_len;
    int quit;

    /* the published snapshot, under slock */
    pthread_mutex_t slock;
    pthread_cond_t scond;
    trainer_snapshot *pub;

    /* the run clock (run_now): CLOCK_MONOTONIC less the time held, under
     * clock_lock */
    pthread_mutex_t clock_lock;
    double held_at;    /* >= 0: held since then (the process is stopping) */
    double held_total; /* seconds held so far */

    /* trainer-thread only */
    trainer_state state;
    long limit;
    long budget; /* steps still to take while paused (n presses) */
    long engine_events_seen;
    long engine_events_seen_b; /* the twin's */
    unsigned long applied; /* commands applied so far (a script's show up) */
    char mark[TRAINER_MARK]; /* marker label for the next step's point */
    char mark_b[TRAINER_MARK]; /* the same on run b's curve */
    step_metrics m;
    step_metrics mb; /* the twin's latest step (o.twin) */
    float last_val_b;
    int have_metrics;
    int have_loss; /* loss, loss_b: at the step the run is at (trainer_status) */
    float loss, loss_b;
    float last_val;
    long last_val_step;
    double rate, rate_t0;
    long rate_s0;
    double run_seconds;
    long run_steps;
    double next_sample;
    uint8_t sample[TRAINER_SAMPLE];
    int sample_len;
    long sample_step;
    unsigned generation;
    long hist_cut;   /* >= 0: the history keeps only steps <= this (rewind) */
    int hist_reset;  /* the history restarts (re-init) */
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The trainer's clock: monotonic, standing still while held (the process
 * stopped by Ctrl-Z), so that a stop is not counted as running time. */
static double run_now(trainer *t)
{
    double now = now_s();
    pthread_mutex_lock(&t->clock_lock);
    if (t->held_at >= 0 && now > t->held_at)
        now = t->held_at;
    now -= t->held_total;
    pthread_mutex_unlock(&t->clock_lock);
    return now;
}

void trainer_clock_hold(trainer *t)
{
    double now = now_s();
    pthread_mutex_lock(&t->clock_lock);
    if (t->held_at < 0)
        t->held_at = now;
    pthread_mutex_unlock(&t->clock_lock);
}

void trainer_clock_release(trainer *t)
{
    double now = now_s();
    pthread_mutex_lock(&t->clock_lock);
    if (t->held_at >= 0 && now > t->held_at)
        t->held_total += now - t->held_at;
    t->held_at = -1;
    pthread_mutex_unlock(&t->clock_lock);
}

void trainer_loss_text(const trainer_status *s, int b, char *buf, size_t n)
{
    if (s->have_loss)
        snprintf(buf, n, "%.4f", (double)(b ? s->loss_b : s->loss));
    else
        snprintf(buf, n, "-");
}

const char *trainer_state_name(trainer_state s)
{
    static const char *const names[] = {"RUNNING", "PAUSED", "DIVERGED", "DONE"};
    return (unsigned)s < 4 ? names[s] : "?";
}

trainer_snapshot *trainer_snapshot_new(void)
{
    trainer_snapshot *s = calloc(1, sizeof *s);
    if (s) {
        s->s.last_val = NAN;
        s->s.last_val_b = NAN;
        s->s.prompt = default_prompt;
    }
    return s;
}

/* ---- publishing (trainer thread) ---------------------------------------- */

/* Bring the published header up to date; apply a pending cut of the
 * history. slock held. */
static void fill_status(trainer *t, trainer_snapshot *p)
{
    trainer_status *s = &p->s;
    const ns_config *c = engine_config(t->e);
    s->state = t->state;
    s->steps_done = engine_steps_done(t->e);
    s->have_metrics = t->have_metrics;
    s->last = t->m;
    s->have_loss = t->have_loss;
    s->loss = t->loss;
    s->loss_b = t->loss_b;
    s->last_val = t->last_val;
    s->last_val_step = t->last_val_step;
    s->cfg = *c;
    s->warmup_on = engine_warmup_on(t->e);
    s->lr_peak = engine_current_peak(t->e);
    s->lr_next = engine_current_lr(t->e);
    s->steps_per_s = t->state == TRAINER_RUNNING ? t->rate : 0.0;
    s->threads = engine_threads(t->e);
    s->run_seconds = t->run_seconds;
    s->run_steps = t->run_steps;
    s->limit = t->limit;
    memcpy(s->sample, t->sample, sizeof s->sample);
    s->sample_len = t->sample_len;
    s->sample_step = t->sample_step;
    s->prompt = t->o.prompt;
    s->n_layer = c->n_layer;
    s->compare = t->o.twin != NULL;
    if (t->o.twin) {
        engine *b = t->o.twin;
        s->last_b = t->mb;
        s->last_val_b = t->last_val_b;
        s->cfg_b = *engine_config(b);
        s->warmup_on_b = engine_warmup_on(b);
        s->lr_peak_b = engine_current_peak(b);
        s->lr_next_b = engine_current_lr(b);
        /* from each run's state now, never from the --compare words */
        twin_run ra = {&s->cfg, s->warmup_on, s->lr_peak};
        twin_run rb = {&s->cfg_b, s->warmup_on_b, s->lr_peak_b};
        twin_label("a", ra, rb, s->label_a, sizeof s->label_a);
        twin_label("b", rb, ra, s->label_b, sizeof s->label_b);
    }
    if (t->hist_reset) {
        s->hist_total = 0;
        s->hist_first = 0;
        t->hist_reset = 0;
    }
    if (t->hist_cut >= 0) {
        /* points are consecutive steps, so the ones after the cut are the
         * newest (last - cut) of them. Their ring slots held the oldest
         * points of the full ring, which stay lost: the window now starts
         * after those. */
        if (s->hist_total > 0) {
            long last = p->hist[(s->hist_total - 1) % TRAINER_HIST].step;
            long drop = last - t->hist_cut;
            if (drop > 0) {
                long lost = s->hist_total - TRAINER_HIST;
                s->hist_total = drop >= s->hist_total ? 0 : s->hist_total - drop;
                if (lost > s->hist_first)
                    s->hist_first = lost;
                if (s->hist_first > s->hist_total)
                    s->hist_first = s->hist_total;
            }
        }
        t->hist_cut = -1;
    }
    /* a front end's incremental copy is only valid within one generation */
    s->generation = t->generation;
}

static void publish_end(trainer *t)
{
    t->pub->s.seq++;
    pthread_mutex_unlock(&t->slock);
    pthread_cond_broadcast(&t->scond);
}

/* Publish the header only (a command changed a setting or the state). */
static void publish_status(trainer *t)
{
    pthread_mutex_lock(&t->slock);
    fill_status(t, t->pub);
    publish_end(t);
}

/* A layer's gradient norm as the heatmap shows it. */
static float layer_norm_of(const layer_metrics *lm)
{
    double a = lm->grad_attn, f = lm->grad_ffn, n = lm->grad_ln;
    return (float)sqrt(a * a + f * f + n * n);
}

/* Publish the header and append the step just taken to the history. */
static void publish_step(trainer *t)
{
    const step_metrics *m = &t->m;
    pthread_mutex_lock(&t->slock);
    trainer_snapshot *p = t->pub;
    fill_status(t, p);
    long i = p->s.hist_total % TRAINER_HIST;
    trainer_point *pt = &p->hist[i];
    pt->step = m->step;
    pt->loss = m->loss;
    pt->val_loss = m->has_val ? m->val_loss : NAN;
    pt->lr = m->lr;
    pt->nonfinite = m->nonfinite;
    pt->loss_b = t->o.twin ? t->mb.loss : NAN;
    pt->val_loss_b = t->o.twin && t->mb.has_val ? t->mb.val_loss : NAN;
    memcpy(pt->mark, t->mark, sizeof pt->mark);
    memcpy(pt->mark_b, t->mark_b, sizeof pt->mark_b);
    for (int l = 0; l < m->n_layer && l < NS_MAX_LAYERS; l++) {
        p->heat[i][l] = layer_norm_of(&m->layer[l]);
        p->heat_b[i][l] = t->o.twin ? layer_norm_of(&t->mb.layer[l]) : 0.0f;
    }
    p->s.hist_total++;
    publish_end(t);
    t->mark[0] = 0;
    t->mark_b[0] = 0;
}

static void push_event(trainer *t, const trainer_event *ev)
{
    pthread_mutex_lock(&t->slock);
    trainer_snapshot *p = t->pub;
    p->ev[p->s.ev_total % TRAINER_EVENTS] = *ev;
    p->s.ev_total++;
    publish_end(t);
}

static void add_event(trainer *t, trainer_event_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void add_event(trainer *t, trainer_event_kind kind, const char *fmt, ...)
{
    trainer_event ev;
    ev.step = engine_steps_done(t->e);
    ev.kind = kind;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ev.text, sizeof ev.text, fmt, ap);
    va_end(ap);
    push_event(t, &ev);
}

/* Move one engine's new log lines into ours, after prefix ("b: " for the
 * twin). kind < 0: tell the kind from the text (the engine's step-time
 * lines). Lines the engine's ring already dropped are skipped, not
 * invented. */
static void pull_run_events(trainer *t, engine *e, long *seen, const char *prefix, int kind)
{
    long n = engine_event_count(e);
    for (; *seen < n; ++*seen) {
        ns_event ev;
        if (engine_event_get(e, *seen, &ev) != 0)
            continue;
        trainer_event out;
        out.step = ev.step;
        snprintf(out.text, sizeof out.text, "%s%s", prefix, ev.text);
        if (kind >= 0)
            out.kind = (trainer_event_kind)kind;
        else if (!strncmp(ev.text, "diverged", 8))
            out.kind = TEV_DIVERGED;
        else if (!strncmp(ev.text, "warning", 7) || strstr(ev.text, " skipped"))
            out.kind = TEV_NOTE;
        else
            out.kind = TEV_INFO;
        push_event(t, &out);
    }
}

/* Both runs' new lines; with a twin each names its run. */
static void pull_engine_events(trainer *t, int kind)
{
    pull_run_events(t, t->e, &t->engine_events_seen, t->o.twin ? "a: " : "", kind);
    if (t->o.twin)
        pull_run_events(t, t->o.twin, &t->engine_events_seen_b, "b: ", kind);
}

/* Label the next step's point (mark: a run's TRAINER_MARK buffer):
 * several changes before one step share it, comma-separated and cut to
 * the label's size. */
static void add_mark(char *mark, const char *label)
{
    size_t used = strlen(mark), room = TRAINER_MARK - 1 - used;
    if (used && room > 0) {
        mark[used++] = ',';
        room--;
    }
    size_t n = strlen(label);
    if (n > room)
        n = room;
    memcpy(mark + used, label, n);
    mark[used + n] = 0;
}

/* ---- commands (trainer thread, between steps) -------------------------- */

static void set_state(trainer *t, trainer_state s)
{
    if (s == TRAINER_RUNNING && t->state != TRAINER_RUNNING) {
        /* a fresh rate window: paused time is not running time */
        t->rate_t0 = run_now(t);
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
            add_event(t, TEV_INFO, "training on past --steps %ld", t->limit);
            t->limit = 0;
        } else {
            add_event(t, TEV_INFO, "training on");
        }
    } else if (t->state == TRAINER_DIVERGED) {
        add_event(t, TEV_INFO, "resumed after the divergence (weights as before it)");
    } else {
        add_event(t, TEV_INFO, "resumed");
    }
    t->budget = 0;
    set_state(t, TRAINER_RUNNING);
}

static void pause_run(trainer *t, const char *why)
{
    if (t->state != TRAINER_RUNNING)
        return;
    set_state(t, TRAINER_PAUSED);
    t->budget = 0;
    add_event(t, TEV_INFO, "paused at step %ld%s", engine_steps_done(t->e), why);
}

/* The chart marker of a settings command on run e's curve, from e's
 * state after it. */
static void mark_for(const engine *e, char *mark, const ns_command *c)
{
    const ns_config *cfg = engine_config(e);
    char b[32];
    switch (c->kind) {
    case CMD_NORM: case CMD_NORM_TOGGLE: case CMD_NORM_CYCLE:
        add_mark(mark, norm_place_name(cfg->norm));
        break;
    case CMD_KIND: case CMD_KIND_CYCLE:
        add_mark(mark, norm_kind_name(cfg->norm_kind));
        break;
    case CMD_FINAL_NORM:
        add_mark(mark, config_final_norm(cfg) ? "final on" : "final off");
        break;
    case CMD_WARMUP:
        add_mark(mark, engine_warmup_on(e) ? "warmup" : "no warmup");
        break;
    case CMD_PRECISION:
        add_mark(mark, numfmt_name(cfg->precision));
        break;
    case CMD_FP32_NORMS:
        add_mark(mark, cfg->fp32_norms ? "fp32 norms" : "low norms");
        break;
    case CMD_LOSS_SCALE:
        if (cfg->loss_scale == 0)
            add_mark(mark, "scale dyn");
        else if (cfg->loss_scale < 0)
            add_mark(mark, "scale off");
        else
            snprintf(b, sizeof b, "scale %g", (double)cfg->loss_scale), add_mark(mark, b);
        break;
    case CMD_LR: case CMD_LR_SCALE:
        snprintf(b, sizeof b, "lr %.0e", (double)engine_current_peak(e));
        add_mark(mark, b);
        break;
    case CMD_CLIP:
        if (cfg->clip > 0)
            snprintf(b, sizeof b, "clip %g", (double)cfg->clip), add_mark(mark, b);
        else
            add_mark(mark, "no clip");
        break;
    case CMD_REWIND:
        add_mark(mark, "rewind");
        break;
    case CMD_REINIT:
        add_mark(mark, "reinit");
        break;
    default: /* snapshots and notes change no setting */
        break;
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
        t->last_val = NAN;
        t->last_val_b = NAN; /* found below with a's: the runs validate together */
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
            t->loss = pt->loss;
            t->loss_b = pt->loss_b;
        }
        for (; val_gone && i >= first && i < total; i--) {
            const trainer_point *pt = &p->hist[i % TRAINER_HIST];
            if (!isnan(pt->val_loss)) {
                t->last_val = pt->val_loss;
                t->last_val_b = pt->val_loss_b;
                t->last_val_step = pt->step;
                break;
            }
        }
    }
    pthread_mutex_unlock(&t->slock);
}

static void apply(trainer *t, const ns_command *c, int target)
{
    engine *e = t->e;
    long before = engine_steps_done(e);
    t->applied++;
    switch (c->kind) {
    case CMD_PAUSE: pause_run(t, ""); return;
    case CMD_RESUME: resume_run(t); return;
    case CMD_PAUSE_TOGGLE:
        if (t->state == TRAINER_RUNNING)
            pause_run(t, "");
        else
            resume_run(t);
        return;
    case CMD_STEP:
        if (t->state == TRAINER_RUNNING)
            pause_run(t, ": n steps once, space resumes");
        else
            t->budget++;
        return;
    case CMD_STOP:
        if (t->state != TRAINER_DONE) {
            set_state(t, TRAINER_DONE);
            t->budget = 0;
            add_event(t, TEV_INFO, "stopped at step %ld (space trains on)", before);
        }
        return;
    default:
        break;
    }
    twin_target tg = (twin_target)target;
    int r = twin_apply(e, t->o.twin, c, tg);
    long ev_before = t->engine_events_seen + t->engine_events_seen_b;
    pull_engine_events(t, TEV_SETTING);
    if (r == CMD_FAILED) {
        if (t->engine_events_seen + t->engine_events_seen_b == ev_before)
            add_event(t, TEV_NOTE, "command %d could not be applied", (int)c->kind);
        return;
    }
    if (r != CMD_APPLIED)
        return;
    long after = engine_steps_done(e);
    if (after < before) { /* a fresh rate window: the step count went back */
        t->rate_t0 = run_now(t);
        t->rate_s0 = after;
    }
    if (c->kind == CMD_REINIT) {
        t->generation++;
        t->hist_reset = 1;
        t->have_metrics = 0;
        t->have_loss = 0;
        memset(&t->m, 0, sizeof t->m);
        memset(&t->mb, 0, sizeof t->mb);
        t->last_val = NAN;
        t->last_val_b = NAN;
        t->last_val_step = 0;
        t->mark[0] = 0;
        t->mark_b[0] = 0;
        t->budget = 0;
        /* a diverged or finished run starts over; a paused one stays paused */
        if (t->state == TRAINER_DIVERGED || t->state == TRAINER_DONE)
            set_state(t, TRAINER_RUNNING);
    } else if (c->kind == CMD_REWIND && after < before) {
        /* the steps after the snapshot are gone: so are their points, and
         * the loss shown is the snapshot's step's again */
        rewound_to(t, after);
        t->generation++;
        t->hist_cut = after;
        t->mark[0] = 0;
        t->mark_b[0] = 0;
        if (t->state == TRAINER_DIVERGED)
            set_state(t, TRAINER_PAUSED); /* change a setting, then resume */
    }
    if (twin_acts_on(c, tg, 0) || !t->o.twin)
        mark_for(e, t->mark, c);
    if (t->o.twin && twin_acts_on(c, tg, 1))
        mark_for(t->o.twin, t->mark_b, c);
}

/* Script commands are applied exactly as keys are. */
static void script_cmd(void *ctx, const ns_command *c, int target)
{
    apply(ctx, c, target);
}

/* ---- stepping (trainer thread) ----------------------------------------- */

static void take_sample(trainer *t, double now)
{
    double t0 = run_now(t);
    engine_sample(t->e, t->o.prompt, TRAINER_SAMPLE, t->sample);
    double cost = run_now(t) - t0;
    t->sample_len = TRAINER_SAMPLE;
    t->sample_step = engine_steps_done(t->e);
    double wait = t->o.sample_every;
    if (wait < SAMPLE_BUDGET * cost)
        wait = SAMPLE_BUDGET * cost;
    t->next_sample = now + wait;
    publish_status(t);
}

static void do_step(trainer *t)
{
    int bad = engine_step(t->e, &t->m);
    if (t->o.twin)
        bad |= engine_step(t->o.twin, &t->mb);
    t->have_metrics = 1;
    t->have_loss = 1;
    t->loss = t->m.loss;
    t->loss_b = t->o.twin ? t->mb.loss : NAN;
    t->run_steps++;
    if (t->o.twin && t->o.on_pair)
        t->o.on_pair(t->o.ctx, &t->m, &t->mb);
    else if (t->o.on_step)
        t->o.on_step(t->o.ctx, &t->m);
    pull_engine_events(t, -1);
    if (t->m.has_val) {
        t->last_val = t->m.val_loss;
        t->last_val_step = t->m.step;
        add_event(t, TEV_VAL, "%svalidation loss %.4f (train %.4f)", t->o.twin ? "a: " : "",
                  (double)t->m.val_loss, (double)t->m.loss);
    }
    if (t->o.twin && t->mb.has_val) {
        t->last_val_b = t->mb.val_loss;
        add_event(t, TEV_VAL, "b: validation loss %.4f (train %.4f)", (double)t->mb.val_loss,
                  (double)t->mb.loss);
    }
    long done = engine_steps_done(t->e);
    if (bad && t->o.on_div != ONDIV_CONTINUE) {
        set_state(t, TRAINER_DIVERGED);
        t->budget = 0;
        const step_metrics *d = t->o.twin && !t->m.nonfinite ? &t->mb : &t->m;
        add_event(t, TEV_DIVERGED, "DIVERGED at step %ld (%s%s): paused; r re-inits, b rewinds",
                  done, d == &t->mb ? "run b, " : "",
                  d->fault[0] ? d->fault : "loss not finite");
    } else if (t->limit > 0 && done >= t->limit && t->state == TRAINER_RUNNING) {
        set_state(t, TRAINER_DONE);
        add_event(t, TEV_INFO, "reached --steps %ld: paused (space trains on)", t->limit);
    }
    double now = run_now(t);
    if (now - t->rate_t0 >= RATE_WINDOW) {
        t->rate = (double)(done - t->rate_s0) / (now - t->rate_t0);
        t->rate_t0 = now;
        t->rate_s0 = done;
    }
    publish_step(t);
}

/* One step with what goes with it: the script first (as headless runs
 * it), the step, a sample when due, and the time it all took. */
static void step_once(trainer *t)
{
    double t0 = run_now(t);
    if (t->o.script) {
        unsigned long was = t->applied;
        script_due(t->o.script, engine_steps_done(t->e), script_cmd, t);
        if (t->applied != was)
            publish_status(t);
        if (t->state != TRAINER_RUNNING && t->budget == 0)
            return; /* the script paused or stopped the run */
    }
    if (t->state != TRAINER_RUNNING)
        t->budget--;
    do_step(t);
    double now = run_now(t);
    if (t->o.sample_every > 0 && now >= t->next_sample && t->state == TRAINER_RUNNING)
        take_sample(t, now);
    t->run_seconds += run_now(t) - t0;
}

static void *trainer_main(void *arg)
{
    trainer *t = arg;
    ns_command cmds[TRAINER_QUEUE];
    for (;;) {
        pthread_mutex_lock(&t->qlock);
        /* sleep while there is nothing to do: no command, not running, no
         * single steps owed; a command (or quit) wakes us */
        while (!t->quit && t->q_len == 0 && t->state != TRAINER_RUNNING && t->budget == 0)
            pthread_cond_wait(&t->qcond, &t->qlock);
        int n = t->q_len, quit = t->quit;
        int targets[TRAINER_QUEUE];
        for (int i = 0; i < n; i++) {
            cmds[i] = t->q[(t->q_head + i) % TRAINER_QUEUE];
            targets[i] = t->qt[(t->q_head + i) % TRAINER_QUEUE];
        }
        t->q_head = (t->q_head + n) % TRAINER_QUEUE;
        t->q_len = 0;
        pthread_mutex_unlock(&t->qlock);
        if (quit)
            break;

        /* in order, and a one-step command takes its step before the next
         * command: "n n p n" is two steps, the change, one step */
        for (int i = 0; i < n; i++) {
            apply(t, &cmds[i], targets[i]);
            if (t->budget > 0 && t->state != TRAINER_RUNNING) {
                publish_status(t);
                step_once(t);
            }
        }
        if (n)
            publish_status(t);
        if (t->state == TRAINER_RUNNING || t->budget > 0)
            step_once(t);
    }
    return NULL;
}

/* ---- the front end's side ------------------------------------------------ */

trainer *trainer_create(engine *e, const trainer_opts *o, char *err, size_t errlen)
{
    trainer *t = calloc(1, sizeof *t);
    if (!t || !(t->pub = trainer_snapshot_new())) {
        free(t);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    t->e = e;
    if (o)
        t->o = *o;
    if (!t->o.prompt)
        t->o.prompt = default_prompt;
    pthread_mutex_init(&t->qlock, NULL);
    pthread_cond_init(&t->qcond, NULL);
    pthread_mutex_init(&t->slock, NULL);
    pthread_cond_init(&t->scond, NULL);
    pthread_mutex_init(&t->clock_lock, NULL);
    t->held_at = -1;

    t->state = t->o.start_paused ? TRAINER_PAUSED : TRAINER_RUNNING;
    t->limit = t->o.limit;
    t->last_val = NAN;
    t->last_val_b = NAN;
    t->generation = 1;
    t->hist_cut = -1;
    t->rate_t0 = run_now(t);
    t->rate_s0 = engine_steps_done(e);
    t->next_sample = t->rate_t0;
    pull_engine_events(t, TEV_INFO);
    publish_status(t);
    return t;
}

int trainer_start(trainer *t, char *err, size_t errlen)
{
    /* signals are for the UI thread: the new thread inherits this blocked
     * set, so the kernel delivers them where getch can return early */
    sigset_t old;
    pool_block_ui_signals(&old);
    t->rate_t0 = run_now(t);
    t->next_sample = t->rate_t0;
    int r = pthread_create(&t->thread, NULL, trainer_main, t);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (r != 0) {
        snprintf(err, errlen, "cannot start the trainer thread: %s", strerror(r));
        return -1;
    }
    t->started = 1;
    return 0;
}

int trainer_send(trainer *t, const ns_command *c)
{
    return trainer_send_to(t, c, TWIN_BOTH);
}

int trainer_send_to(trainer *t, const ns_command *c, int target)
{
    int r = 0;
    pthread_mutex_lock(&t->qlock);
    if (t->q_len == TRAINER_QUEUE) {
        r = -1;
    } else {
        t->q[(t->q_head + t->q_len) % TRAINER_QUEUE] = *c;
        t->qt[(t->q_head + t->q_len) % TRAINER_QUEUE] =
            target >= 0 && target < TWIN_TARGET_COUNT ? target : TWIN_BOTH;
        t->q_len++;
    }
    pthread_mutex_unlock(&t->qlock);
    pthread_cond_signal(&t->qcond);
    return r;
}

int trainer_snapshot_copy(trainer *t, trainer_snapshot *d)
{
    pthread_mutex_lock(&t->slock);
    const trainer_snapshot *p = t->pub;
    if (d->s.seq == p->s.seq && d->s.seq != 0) {
        pthread_mutex_unlock(&t->slock);
        return 0;
    }
    trainer_status old = d->s;
    d->s = p->s;
    /* only the points and events not copied before: a frame costs
     * O(new steps x layers), not O(TRAINER_HIST x layers) */
    long total = p->s.hist_total;
    long from = old.generation == p->s.generation ? old.hist_total : 0;
    if (from > total)
        from = 0;
    if (from < trainer_hist_first(&p->s))
        from = trainer_hist_first(&p->s);
    int L = p->s.n_layer < NS_MAX_LAYERS ? p->s.n_layer : NS_MAX_LAYERS;
    for (long i = from; i < total; i++) {
        long k = i % TRAINER_HIST;
        d->hist[k] = p->hist[k];
        memcpy(d->heat[k], p->heat[k], (size_t)L * sizeof(float));
        if (p->s.compare)
            memcpy(d->heat_b[k], p->heat_b[k], (size_t)L * sizeof(float));
    }
    long ev_from = old.ev_total;
    if (ev_from > p->s.ev_total)
        ev_from = 0;
    if (ev_from < p->s.ev_total - TRAINER_EVENTS)
        ev_from = p->s.ev_total - TRAINER_EVENTS;
    for (long i = ev_from; i < p->s.ev_total; i++)
        d->ev[i % TRAINER_EVENTS] = p->ev[i % TRAINER_EVENTS];
    pthread_mutex_unlock(&t->slock);
    return 1;
}

unsigned long trainer_wait(trainer *t, unsigned long seq, double timeout_s)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    double whole = floor(timeout_s);
    until.tv_sec += (time_t)whole;
    until.tv_nsec += (long)((timeout_s - whole) * 1e9);
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&t->slock);
    while (t->pub->s.seq <= seq)
        if (pthread_cond_timedwait(&t->scond, &t->slock, &until) == ETIMEDOUT)
            break;
    unsigned long now = t->pub->s.seq;
    pthread_mutex_unlock(&t->slock);
    return now;
}

void trainer_stop(trainer *t)
{
    if (!t || !t->started)
        return;
    pthread_mutex_lock(&t->qlock);
    t->quit = 1;
    pthread_mutex_unlock(&t->qlock);
    pthread_cond_signal(&t->qcond);
    pthread_join(t->thread, NULL);
    t->started = 0;
}

void trainer_free(trainer *t)
{
    if (!t)
        return;
    trainer_stop(t);
    pthread_mutex_destroy(&t->qlock);
    pthread_cond_destroy(&t->qcond);
    pthread_mutex_destroy(&t->slock);
    pthread_cond_destroy(&t->scond);
    pthread_mutex_destroy(&t->clock_lock);
    free(t->pub);
    free(t);
}
