/* trainer.c - the one loop of a run, for the live view (on its own
 * thread) and the headless run (on the caller's, trainer_run): it owns the
 * engine and the --compare twin, drains the command queue between steps,
 * runs the --script, steps, decides which run diverged, writes the
 * CSV/JSONL rows, reports the events, and publishes; and it prints the
 * run's summary at the end. Its locks: trainer_int.h.
 *
 * The trainer's other files (trainer_int.h: what they share):
 *   trainer_cmd.c   applying a command (flow, settings, rewinds, marks)
 *   trainer_fix.c   the diagnosis' fixes and their check
 *   trainer_diag.c  the diagnosis' events, the stall stop, its end-of-run lines
 *   trainer_out.c   the rows, the progress line, the log's events, the summary
 *
 * Not here: curses, flags, opening or committing the output files
 * (the caller's, with atomicio.c).
 */
#include "trainer_int.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nstime.h"
#include "twin.h"

/* Samples may take at most 1/SAMPLE_BUDGET of the running time, however
 * slow the model: a sample is TRAINER_SAMPLE forward passes of one
 * sequence, several steps' worth of work on a big model, and the live view
 * must train at >= 95% of headless speed. */
#define SAMPLE_BUDGET 50.0
/* steps/s is measured over windows of this many seconds */
#define RATE_WINDOW 0.5

/* The trainer's clock: monotonic, standing still while held (the process
 * stopped by Ctrl-Z), so that a stop is not counted as running time. */
double trainer_run_now(trainer *t)
{
    double now = nstime_now();
    pthread_mutex_lock(&t->clock_lock);
    if (t->held_at >= 0 && now > t->held_at)
        now = t->held_at;
    now -= t->held_total;
    pthread_mutex_unlock(&t->clock_lock);
    return now;
}

void trainer_clock_hold(trainer *t)
{
    double now = nstime_now();
    pthread_mutex_lock(&t->clock_lock);
    if (t->held_at < 0)
        t->held_at = now;
    pthread_mutex_unlock(&t->clock_lock);
}

void trainer_clock_release(trainer *t)
{
    double now = nstime_now();
    pthread_mutex_lock(&t->clock_lock);
    if (t->held_at >= 0 && now > t->held_at)
        t->held_total += now - t->held_at;
    t->held_at = -1;
    pthread_mutex_unlock(&t->clock_lock);
}

/* The program before any model: code and data of the binary and its
 * libraries, the built-in corpus, the first pages of each heap and stack
 * (measured: the peak resident size of a one-step run of a model of a few
 * thousand parameters is 4.6 to 4.9 MiB on two Debian 12 machines, of
 * which the other terms estimate 0.4 for its model, out_change's batch and
 * its history; it grows with the program, so tests/sh/memory.sh measures
 * that run again against this figure). */
#define TRAINER_BASE_BYTES (4.4 * 1048576.0)
/* What the live view adds: curses and the terminal's buffers, its own
 * copy of the history (measured: 3 to 5 MiB over the same run headless). */
#define TRAINER_LIVE_BYTES (5.0 * 1048576.0)
/* The trainer thread's stack (trainer_start): the pool's workers' size. */
enum { TRAINER_STACK = 4 << 20 };

/* The history that steps fill: the published ring (a point and two
 * heatmap rows a step, each NS_MAX_LAYERS wide in memory whatever L) and
 * the copy the end of a run reads (a point and a's row, and b's too). */
static double history_bytes(long steps, int twin)
{
    long n = steps <= 0 || steps > TRAINER_HIST ? TRAINER_HIST : steps;
    double row = NS_MAX_LAYERS * sizeof(float);
    return (double)n * (2.0 * sizeof(trainer_point) + (3.0 + twin) * row);
}

double trainer_bytes_needed(const ns_config *a, const ns_config *b, int live)
{
    double bytes = TRAINER_BASE_BYTES + history_bytes(a->steps, b != NULL);
    bytes += live ? TRAINER_LIVE_BYTES : 0;
    bytes += engine_bytes_needed(a);
    if (b)
        bytes += engine_bytes_needed(b);
    return bytes;
}

/* ---- publishing (trainer thread) ---------------------------------------- */

/* A rewind is about to cut the newest `drop` points: they become the
 * ghost, the abandoned curve the chart keeps grey behind the replay (the
 * newest TRAINER_HIST of them; the previous ghost is replaced). */
static void keep_ghost(trainer_snapshot *p, long drop)
{
    trainer_status *s = &p->s;
    long total = s->hist_total, from = total - drop, first = trainer_hist_first(s);
    if (from < first)
        from = first;
    if (total - from > TRAINER_HIST)
        from = total - TRAINER_HIST;
    s->ghost_n = 0;
    s->ghost_seq++;
    if (from >= total)
        return;
    s->ghost_first = p->hist[from % TRAINER_HIST].step;
    for (long i = from; i < total; i++, s->ghost_n++) {
        p->run[0].ghost[s->ghost_n] = p->hist[i % TRAINER_HIST].run[0].loss;
        p->run[1].ghost[s->ghost_n] = p->hist[i % TRAINER_HIST].run[1].loss;
    }
}

/* Run r's part of the status, from its engine e and the trainer's copy of
 * its latest step */
static void fill_run(const trainer *t, trainer_status *s, int r, const engine *e)
{
    trainer_run_status *rs = &s->run[r];
    rs->last = t->run[r].m;
    rs->loss = t->run[r].loss;
    rs->last_val = t->run[r].last_val;
    rs->cfg = *engine_config(e);
    rs->warmup_on = engine_warmup_on(e);
    rs->lr_peak = engine_current_peak(e);
    rs->lr_next = engine_current_lr(e);
}

static void cut_history(trainer *t, trainer_snapshot *p);

/* Bring the published header up to date; apply a pending cut of the
 * history. slock held. */
static void fill_status(trainer *t, trainer_snapshot *p)
{
    trainer_status *s = &p->s;
    const ns_config *c = engine_config(t->e);
    s->state = t->state == TRAINER_RUNNING && t->run[0].m.stalled ? TRAINER_STALLED : t->state;
    s->diag[0] = t->rd[0].view;
    s->diag[1] = t->rd[1].view;
    s->steps_done = engine_steps_done(t->e);
    s->have_metrics = t->have_metrics;
    s->have_loss = t->have_loss;
    s->last_val_step = t->last_val_step;
    s->run[1].loss = t->run[1].loss; /* NaN without a twin */
    fill_run(t, s, 0, t->e);
    s->steps_per_s = t->state == TRAINER_RUNNING ? t->rate : 0.0;
    /* the twin's share counts when it steps beside a */
    s->threads = engine_threads(t->e) + (t->o.twin && t->o.pair ? engine_threads(t->o.twin) : 0);
    s->run_seconds = t->run_seconds;
    s->run_steps = t->run_steps;
    s->limit = t->limit;
    memcpy(s->sample, t->sample, sizeof s->sample);
    s->sample_len = t->sample_len;
    s->sample_step = t->sample_step;
    s->prompt = t->o.prompt;
    s->n_layer = c->n_layer;
    s->compare = t->o.twin != NULL;
    s->diverged_run = t->diverged_run;
    s->diverged_steps = t->diverged_steps;
    s->write_failed = t->write_failed;
    memcpy(s->ask, t->ask, sizeof s->ask);
    s->ask_step = t->ask_step;
    s->ask_seq = t->ask_seq;
    s->stall_stopped = t->stall_stopped;
    s->fixes = t->fixes;
    if (t->o.twin) {
        fill_run(t, s, 1, t->o.twin);
        /* from each run's state now, never from the --compare words */
        s->joined = t->joined;
        memcpy(s->was, t->was, sizeof s->was);
        twin_run ra = snapshot_status_twin(s, 0), rb = snapshot_status_twin(s, 1);
        twin_label("a", ra, rb, s->run[0].label, sizeof s->run[0].label);
        twin_label("b", rb, ra, s->run[1].label, sizeof s->run[1].label);
        for (int r = 0; r < 2 && !s->joined; r++) /* the words a join keeps */
            twin_label_differs(s->run[r].label, t->was[r], sizeof t->was[r]);
        memcpy(s->was, t->was, sizeof s->was);
    }
    if (t->hist_reset) {
        s->hist_total = 0;
        s->hist_first = 0;
        s->ghost_n = 0; /* a re-init: nothing was abandoned, all starts over */
        s->ghost_seq++;
        t->hist_reset = 0;
    }
    if (t->hist_cut >= 0)
        cut_history(t, p);
    /* a front end's incremental copy is only valid within one generation */
    s->generation = t->generation;
}

/* After a rewind to step t->hist_cut: the points after it go (to the
 * ghost, which keeps the abandoned curve). Points are consecutive steps,
 * so the ones after the cut are the newest (last - cut) of them. Their
 * ring slots held the oldest points of the full ring, which stay lost:
 * the window now starts after those. */
static void cut_history(trainer *t, trainer_snapshot *p)
{
    trainer_status *s = &p->s;
    if (s->hist_total > 0) {
        long last = p->hist[(s->hist_total - 1) % TRAINER_HIST].step;
        long drop = last - t->hist_cut;
        if (drop > 0) {
            keep_ghost(p, drop);
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

static void publish_end(trainer *t)
{
    t->pub->s.seq++;
    pthread_mutex_unlock(&t->slock);
    pthread_cond_broadcast(&t->scond);
}

/* Publish the header only (a command changed a setting or the state). */
void trainer_publish_status(trainer *t)
{
    pthread_mutex_lock(&t->slock);
    fill_status(t, t->pub);
    publish_end(t);
}

/* Publish the header and append the step just taken to the history. */
static void publish_step(trainer *t)
{
    const step_metrics *m = &t->run[0].m;
    pthread_mutex_lock(&t->slock);
    trainer_snapshot *p = t->pub;
    fill_status(t, p);
    long i = p->s.hist_total % TRAINER_HIST;
    snapshot_point_set(&p->hist[i], m, t->o.twin ? &t->run[1].m : NULL, t->run[0].mark, t->run[1].mark);
    for (int l = 0; l < m->n_layer && l < NS_MAX_LAYERS; l++) {
        p->run[0].heat[i][l] = metrics_layer_gnorm(&m->layer[l]);
        p->run[1].heat[i][l] = t->o.twin ? metrics_layer_gnorm(&t->run[1].m.layer[l]) : 0.0f;
    }
    p->s.hist_total++;
    publish_end(t);
    t->run[0].mark[0] = 0;
    t->run[1].mark[0] = 0;
    t->mark_bits[0] = t->mark_bits[1] = 0;
}

static void push_event(trainer *t, const trainer_event *ev)
{
    pthread_mutex_lock(&t->slock);
    trainer_snapshot *p = t->pub;
    p->ev[p->s.ev_total % TRAINER_EVENTS] = *ev;
    p->s.ev_total++;
    publish_end(t);
}

void trainer_add_event(trainer *t, ns_event_kind kind, int layer, const char *fmt, ...)
{
    trainer_event ev;
    ev.step = engine_steps_done(t->e);
    ev.kind = kind;
    ev.layer = layer;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ev.text, sizeof ev.text, fmt, ap);
    va_end(ap);
    push_event(t, &ev);
}

/* Move one engine's new log lines into ours, kind and layer as the engine
 * said them, the text after prefix ("b: " for the twin). Lines the
 * engine's ring already dropped are skipped, not invented. */
static void pull_run_events(trainer *t, engine *e, long *seen, const char *prefix)
{
    long n = engine_event_count(e);
    for (; *seen < n; ++*seen) {
        trainer_event ev;
        if (engine_event_get(e, *seen, &ev) != 0)
            continue;
        size_t pl = strlen(prefix), tl = strnlen(ev.text, sizeof ev.text - 1 - pl);
        memmove(ev.text + pl, ev.text, tl); /* a long line loses its end */
        memcpy(ev.text, prefix, pl);
        ev.text[pl + tl] = 0;
        push_event(t, &ev);
    }
}

/* Both runs' new lines; with a twin each names its run. */
void trainer_pull_engine_events(trainer *t)
{
    pull_run_events(t, t->e, &t->run[0].events_seen, trainer_run_prefix(t, 0));
    if (t->o.twin)
        pull_run_events(t, t->o.twin, &t->run[1].events_seen, trainer_run_prefix(t, 1));
}

/* Runs there are: a, and b with a twin. */
int trainer_n_runs(const trainer *t) { return t->o.twin ? 2 : 1; }

/* A run's metrics (1 = b). */
step_metrics *trainer_run_metrics(trainer *t, int run) { return &t->run[run].m; }

/* What names a run's lines, as its engine events are named: "b: ", and
 * "a: " beside a twin; "" alone. */
const char *trainer_run_prefix(const trainer *t, int run)
{
    return !t->o.twin ? "" : run ? "b: " : "a: ";
}

/* ---- stepping (trainer thread) ----------------------------------------- */

static void take_sample(trainer *t, double now)
{
    double t0 = trainer_run_now(t);
    engine_sample(t->e, t->o.prompt, TRAINER_SAMPLE, t->sample);
    double cost = trainer_run_now(t) - t0;
    t->sample_len = TRAINER_SAMPLE;
    t->sample_step = engine_steps_done(t->e);
    double wait = t->o.sample_every;
    if (wait < SAMPLE_BUDGET * cost)
        wait = SAMPLE_BUDGET * cost;
    t->next_sample = now + wait;
    trainer_publish_status(t);
}

/* Which run of this step diverged: a first (it steps first), then b; -1
 * when both were finite. The one place this is decided. */
static int diverged_run_of(const step_metrics *a, const step_metrics *b)
{
    if (a->nonfinite || a->exploded)
        return 0;
    return b && (b->nonfinite || b->exploded) ? 1 : -1;
}

/* Both runs' steps, side by side on the pair pool (trainer_opts.pair). */
typedef struct {
    engine *e[2];
    step_metrics *m[2];
    int bad[2];
} pair_job;

static void pair_task(void *ctx, int run, int thread)
{
    (void)thread;
    pair_job *j = ctx;
    j->bad[run] = engine_step(j->e[run], j->m[run]);
}

/* Step a, and b with it under --compare, or a fix's run left alone
 * (trainer_fix.c) during its check; nonzero when a or b diverged. */
static int step_runs(trainer *t)
{
    engine *b = t->o.twin ? t->o.twin : t->fix_twin;
    if (!b)
        return engine_step(t->e, &t->run[0].m);
    pair_job j = {{t->e, b}, {&t->run[0].m, t->o.twin ? &t->run[1].m : &t->fix_twin_m}, {0, 0}};
    if (t->o.pair) {
        pool_run(t->o.pair, 2, pair_task, &j);
    } else {
        pair_task(&j, 0, 0);
        pair_task(&j, 1, 0);
    }
    return j.bad[0] | (t->o.twin ? j.bad[1] : 0);
}

static void do_step(trainer *t)
{
    int bad = step_runs(t);
    trainer_diagnosis_observe(t); /* before the row is written: its state column */
    t->have_metrics = 1;
    t->have_loss = 1;
    t->run[0].loss = t->run[0].m.loss;
    t->run[1].loss = t->o.twin ? t->run[1].m.loss : NAN;
    t->run_steps++;
    t->diverged_run = diverged_run_of(&t->run[0].m, t->o.twin ? &t->run[1].m : NULL);
    t->diverged_steps += bad;
    trainer_write_rows(t);
    if (t->o.twin && t->o.on_pair)
        t->o.on_pair(t->o.ctx, &t->run[0].m, &t->run[1].m);
    else if (t->o.on_step)
        t->o.on_step(t->o.ctx, &t->run[0].m);
    trainer_pull_engine_events(t);
    trainer_diagnosis_events(t);
    if (t->run[0].m.has_val)
        trainer_validation_event(t, 0, &t->run[0].m);
    if (t->o.twin && t->run[1].m.has_val)
        trainer_validation_event(t, 1, &t->run[1].m);
    long done = engine_steps_done(t->e);
    int blown = trainer_found_rule(t, DIAG_R_BLOWUP); /* a finite blow-up counts as a divergence */
    trainer_fix_check(t, bad, blown);
    if ((bad || blown >= 0) && t->o.on_div == ONDIV_FIX) {
        t->fix_due = "--on-diverge fix"; /* after the step's findings are reported */
    } else if (trainer_found_stall(t) >= 0 && t->o.on_stall == TRAINER_STALL_FIX &&
               t->fixes < TRAINER_FIX_MAX) {
        t->fix_due = "--on-stall fix";
    } else if (bad && t->o.on_div != ONDIV_CONTINUE) {
        trainer_set_state(t, TRAINER_DIVERGED);
        t->budget = 0;
        const step_metrics *d = &t->run[t->diverged_run == 1].m;
        trainer_add_event(t, NS_EV_DIVERGED, d->fault_layer,
                  "DIVERGED at step %ld (%s%s): paused; r re-inits, b rewinds, D a fixes",
                  done, d == &t->run[1].m ? "run b, " : "",
                  d->fault[0] ? d->fault : "loss not finite");
        trainer_rewind_target_event(t, d == &t->run[1].m);
    } else if (blown >= 0 && t->o.on_div != ONDIV_CONTINUE) {
        trainer_set_state(t, TRAINER_DIVERGED);
        t->budget = 0;
        trainer_add_event(t, NS_EV_DIVERGED, -1,
                  "BLEW UP at step %ld (%sloss %.4g, finite): paused; b rewinds, D a fixes", done,
                  blown ? "run b, " : "", (double)trainer_run_metrics(t, blown)->loss);
        trainer_rewind_target_event(t, blown == 1);
    } else if (t->limit > 0 && done >= t->limit && t->state == TRAINER_RUNNING) {
        trainer_set_state(t, TRAINER_DONE);
        trainer_add_event(t, NS_EV_INFO, -1, "reached --steps %ld: paused (space trains on)", t->limit);
    }
    double now = trainer_run_now(t);
    if (now - t->rate_t0 >= RATE_WINDOW) {
        t->rate = (double)(done - t->rate_s0) / (now - t->rate_t0);
        t->rate_t0 = now;
        t->rate_s0 = done;
    }
    trainer_print_progress(t);
    publish_step(t);
}

/* One step with what goes with it: the script first (as headless runs
 * it), the step, a sample when due, and the time it all took. */
static void step_once(trainer *t)
{
    double t0 = trainer_run_now(t);
    if (t->o.script) {
        unsigned long was = t->applied;
        command_script_due(t->o.script, engine_steps_done(t->e), trainer_script_cmd, t);
        if (t->applied != was)
            trainer_publish_status(t);
        if (t->state != TRAINER_RUNNING && t->budget == 0)
            return; /* the script paused or stopped the run */
    }
    if (t->state != TRAINER_RUNNING)
        t->budget--;
    do_step(t);
    double now = trainer_run_now(t);
    if (t->o.sample_every > 0 && now >= t->next_sample && t->state == TRAINER_RUNNING)
        take_sample(t, now);
    t->run_seconds += trainer_run_now(t) - t0;
}

/* Nothing to do: no single steps owed and not running. */
static int idle(const trainer *t)
{
    return t->state != TRAINER_RUNNING && t->budget == 0;
}

/* Take the queued commands into cmds and their targets (twin.h) into
 * targets; -1 when the loop is to end. On the
 * thread it sleeps while there is nothing to do (a command or quit wakes
 * it); run synchronously there is no one to send a command, so idle, an
 * interrupt or a failed write end the run. qlock held only to copy. */
static int take_commands(trainer *t, ns_command *cmds, int *targets)
{
    pthread_mutex_lock(&t->qlock);
    while (!t->sync && !t->quit && t->q_len == 0 && idle(t))
        pthread_cond_wait(&t->qcond, &t->qlock);
    int n = t->q_len, quit = t->quit;
    if (t->sync && ((n == 0 && idle(t)) || t->write_failed ||
                    (t->o.interrupt && *t->o.interrupt)))
        quit = 1;
    for (int i = 0; i < n; i++) {
        cmds[i] = t->q[(t->q_head + i) % TRAINER_QUEUE];
        targets[i] = t->qt[(t->q_head + i) % TRAINER_QUEUE];
    }
    t->q_head = (t->q_head + n) % TRAINER_QUEUE;
    t->q_len = 0;
    pthread_mutex_unlock(&t->qlock);
    return quit ? -1 : n;
}

/* The one loop of a run, on the trainer thread or the caller's. */
static void run_loop(trainer *t)
{
    ns_command cmds[TRAINER_QUEUE];
    int targets[TRAINER_QUEUE];
    for (;;) {
        int n = take_commands(t, cmds, targets);
        if (n < 0)
            break;

        /* in order, and a one-step command takes its step before the next
         * command: "n n p n" is two steps, the change, one step */
        for (int i = 0; i < n; i++) {
            trainer_apply_command(t, &cmds[i], targets[i]);
            if (t->budget > 0 && t->state != TRAINER_RUNNING) {
                trainer_publish_status(t);
                step_once(t);
            }
        }
        if (n)
            trainer_publish_status(t);
        if (t->state == TRAINER_RUNNING || t->budget > 0)
            step_once(t);
        trainer_report_events(t);
        trainer_diagnosis_report(t);
        if (t->fix_due) {
            trainer_apply_fix(t, t->fix_due);
            t->fix_due = NULL;
            trainer_report_events(t);
        }
    }
}

static void *trainer_main(void *arg)
{
    run_loop(arg);
    return NULL;
}

/* ---- the front end's side ------------------------------------------------ */

trainer *trainer_create(engine *e, const trainer_opts *o, char *err, size_t errlen)
{
    trainer *t = calloc(1, sizeof *t);
    if (!t || !(t->pub = snapshot_new()) || !(t->rd = calloc(2, sizeof *t->rd))) {
        if (t)
            free(t->pub);
        free(t);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    t->e = e;
    if (o)
        t->o = *o;
    diag_init(&t->rd[0].d, t->o.plateau);
    diag_init(&t->rd[1].d, t->o.plateau);
    trainer_diag_resume(t);
    if (!t->o.prompt)
        t->o.prompt = snapshot_default_prompt;
    pthread_mutex_init(&t->qlock, NULL);
    pthread_cond_init(&t->qcond, NULL);
    pthread_mutex_init(&t->slock, NULL);
    pthread_cond_init(&t->scond, NULL);
    pthread_mutex_init(&t->clock_lock, NULL);
    t->held_at = -1;

    t->state = t->o.start_paused ? TRAINER_PAUSED : TRAINER_RUNNING;
    t->limit = t->o.limit;
    t->run[0].last_val = NAN;
    t->run[1].last_val = NAN;
    t->generation = 1;
    t->diverged_run = -1;
    t->hist_cut = -1;
    t->rate_t0 = trainer_run_now(t);
    t->rate_s0 = engine_steps_done(e);
    t->next_sample = t->rate_t0;
    if (t->o.csv)
        trainer_csv_header(t, t->o.csv->f);
    if (t->o.spool)
        trainer_csv_header(t, t->o.spool);
    trainer_pull_engine_events(t);
    /* what happened before the run (the start line) is not news */
    t->reported[0] = engine_event_count(e);
    t->reported[1] = t->o.twin ? engine_event_count(t->o.twin) : 0;
    trainer_publish_status(t);
    return t;
}

void trainer_ui_signals(sigset_t *set)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGWINCH, SIGTSTP};
    sigemptyset(set);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaddset(set, sigs[i]);
}

int trainer_start(trainer *t, char *err, size_t errlen)
{
    /* signals are for the UI thread: the new thread inherits this blocked
     * set, so the kernel delivers them where getch can return early */
    sigset_t ui, old;
    trainer_ui_signals(&ui);
    pthread_sigmask(SIG_BLOCK, &ui, &old);
    t->rate_t0 = trainer_run_now(t);
    t->next_sample = t->rate_t0;
    /* the kernels it runs keep up to ~200 KB of scratch on the stack, as
     * on the pool's workers: a thread's default stack is 128 KB on musl
     * and 512 KB on macOS, so the size is asked for (the pool's 4 MiB) */
    pthread_attr_t attr;
    int r = pthread_attr_init(&attr);
    if (r == 0) {
        pthread_attr_setstacksize(&attr, TRAINER_STACK);
        r = pthread_create(&t->thread, &attr, trainer_main, t);
        pthread_attr_destroy(&attr);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (r != 0) {
        snprintf(err, errlen, "cannot start the trainer thread: %s", strerror(r));
        return -1;
    }
    t->started = 1;
    return 0;
}

void trainer_run(trainer *t)
{
    t->sync = 1;
    t->rate_t0 = trainer_run_now(t);
    t->log_t0 = nstime_now();
    t->last_print = 0;
    run_loop(t);
    FILE *log = t->o.log;
    if (log && t->state == TRAINER_DIVERGED) {
        const step_metrics *d = &t->run[t->diverged_run == 1].m;
        if (t->o.progress)
            fputc('\n', log);
        if (t->fix_failed && !d->nonfinite && !d->exploded)
            fprintf(log, "normscope: %sthe fix did not help by step %ld; stopping\n",
                    !t->o.twin ? "" : t->fix_run ? "run b: " : "run a: ", d->step);
        else if (d->nonfinite || !d->exploded)
            fprintf(log, "normscope: %sdiverged at step %ld (first non-finite: %s); stopping\n",
                    !t->o.twin ? "" : d == &t->run[0].m ? "run a " : "run b ", d->step,
                    d->fault[0] ? d->fault : "loss");
        else
            fprintf(log, "normscope: %sblew up at step %ld (loss %.4g, finite); stopping\n",
                    !t->o.twin ? "" : d == &t->run[0].m ? "run a " : "run b ", d->step,
                    (double)d->loss);
    }
    trainer_report_events(t); /* the drain: both runs */
    if (log && t->o.progress)
        fputc('\n', log);
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
        memcpy(d->run[0].heat[k], p->run[0].heat[k], (size_t)L * sizeof(float));
        if (p->s.compare)
            memcpy(d->run[1].heat[k], p->run[1].heat[k], (size_t)L * sizeof(float));
    }
    long ev_from = old.ev_total;
    if (ev_from > p->s.ev_total)
        ev_from = 0;
    if (ev_from < p->s.ev_total - TRAINER_EVENTS)
        ev_from = p->s.ev_total - TRAINER_EVENTS;
    for (long i = ev_from; i < p->s.ev_total; i++)
        d->ev[i % TRAINER_EVENTS] = p->ev[i % TRAINER_EVENTS];
    if (old.ghost_seq != p->s.ghost_seq && p->s.ghost_n > 0) { /* once per rewind */
        memcpy(d->run[0].ghost, p->run[0].ghost, (size_t)p->s.ghost_n * sizeof(float));
        memcpy(d->run[1].ghost, p->run[1].ghost, (size_t)p->s.ghost_n * sizeof(float));
    }
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
    trainer_fix_twin_end(t);
    pthread_mutex_destroy(&t->qlock);
    pthread_cond_destroy(&t->qcond);
    pthread_mutex_destroy(&t->slock);
    pthread_cond_destroy(&t->scond);
    pthread_mutex_destroy(&t->clock_lock);
    free(t->pub);
    free(t->rd);
    free(t);
}
