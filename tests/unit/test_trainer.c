/* test_trainer.c - the live view's runtime: commands are applied between
 * steps (the same metrics as calling the engine directly), pause / one
 * step / resume, the bounded queue, snapshot consistency while the trainer
 * runs, divergence pausing without hanging, --steps, scripts, rewind and
 * the sample. Run under ThreadSanitizer by `make tsan`: it must be silent.
 * Not here: drawing (test_tui.c), the real terminal (tui_e2e.sh). */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "command.h"
#include "engine.h"
#include "plot.h"
#include "testengine.h"
#include "testutil.h"
#include "diagnose.h"
#include "trainer.h"
#include "tui.h"

static dataset D;
static trainer_snapshot *S; /* the test's copy, as a front end keeps one */

static ns_config small_cfg(void)
{
    ns_config c;
    settings_defaults(&c);
    c.n_layer = 2;
    c.dim = 16;
    c.n_head = 2;
    c.context = 16;
    c.batch = 4;
    c.warmup = 5;
    c.val_every = 4;
    c.val_batches = 2;
    c.steps = 0;
    return c;
}

static engine *make(const ns_config *c) { return test_engine_create(c, &D); }

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

/* Copy snapshots until pred holds or timeout_s passes (generous: TSan
 * runs the trainer ten times slower). */
typedef int (*pred_fn)(const trainer_status *s, long arg);
static int wait_for(trainer *t, pred_fn pred, long arg, double timeout_s)
{
    double end = now_s() + timeout_s;
    for (;;) {
        trainer_snapshot_copy(t, S);
        if (pred(&S->s, arg))
            return 1;
        if (now_s() > end)
            return 0;
        trainer_wait(t, S->s.seq, 0.05);
    }
}
static int steps_at_least(const trainer_status *s, long n) { return s->steps_done >= n; }
static int steps_equal(const trainer_status *s, long n) { return s->steps_done == n; }
static int state_is(const trainer_status *s, long st) { return s->state == (trainer_state)st; }

static ns_command cmd(const char *text) { return test_command(text); }

static int send(trainer *t, const char *text)
{
    ns_command c = cmd(text);
    return trainer_send(t, &c);
}

/* A command without a value (step, rewind, ...). */
static int send_kind(trainer *t, command_kind k)
{
    ns_command c = command_make(k);
    return trainer_send(t, &c);
}

/* The trainer thread's view of every step, through the on_step hook. The
 * test reads it only after trainer_stop (the join orders the accesses). */
#define REC_MAX 512
typedef struct {
    step_metrics m[REC_MAX];
    int n;
} recorder;
static void record(void *ctx, const step_metrics *m)
{
    recorder *r = ctx;
    if (r->n < REC_MAX)
        r->m[r->n++] = *m;
}

static int same_metrics(const step_metrics *a, const step_metrics *b)
{
    step_metrics x = *a, y = *b;
    x.tokens_per_s = y.tokens_per_s = 0;
    /* what the trainer adds for the diagnosis (the engine's steps lack it) */
    x.vocab = y.vocab = 0;
    x.data_entropy = y.data_entropy = 0;
    return memcmp(&x, &y, sizeof x) == 0;
}

static trainer *start(engine *e, trainer_opts *o)
{
    char err[256];
    memset(S, 0, sizeof *S); /* a copy belongs to one trainer */
    trainer *t = trainer_create(e, o, err, sizeof err);
    if (!t || trainer_start(t, err, sizeof err) != 0) {
        fprintf(stderr, "trainer: %s\n", err);
        exit(1);
    }
    return t;
}

/* Commands queued while paused are applied between steps, in order: the
 * metrics are bit for bit those of calling the engine directly. */
static void test_between_steps(void)
{
    ns_config c = small_cfg();
    engine *e = make(&c), *ref = make(&c);
    static recorder rec;
    rec.n = 0;
    trainer_opts o = {.start_paused = 1, .on_step = record, .ctx = &rec};
    char err[256];
    memset(S, 0, sizeof *S);
    trainer *t = trainer_create(e, &o, err, sizeof err);
    CHECK(t != NULL);
    /* queued before the thread runs: they wait, in order */
    for (int i = 0; i < 5; i++)
        CHECK(send_kind(t, CMD_STEP) == 0);
    CHECK(send(t, "norm post") == 0);
    CHECK(send(t, "lr x2") == 0);
    for (int i = 0; i < 5; i++)
        CHECK(send_kind(t, CMD_STEP) == 0);
    CHECK(trainer_start(t, err, sizeof err) == 0);
    CHECK(wait_for(t, steps_at_least, 10, 20.0));
    sleep_s(0.1); /* no more: the n presses were exactly ten */
    trainer_snapshot_copy(t, S);
    CHECK(S->s.steps_done == 10);
    CHECK(S->s.state == TRAINER_PAUSED);
    CHECK(S->s.run[0].cfg.norm == NORM_POST);
    trainer_stop(t);

    step_metrics m;
    int same = rec.n == 10;
    for (int i = 0; i < 10 && same; i++) {
        if (i == 5) {
            ns_command a = cmd("norm post"), b = cmd("lr x2");
            command_apply(ref, &a);
            command_apply(ref, &b);
        }
        engine_step(ref, &m);
        same = same_metrics(&m, &rec.m[i]);
    }
    CHECK(same);
    CHECK(metrics_norm(&rec.m[4]) == NORM_PRE && metrics_norm(&rec.m[5]) == NORM_POST);
    /* the chart's marker sits on the first step under the new setting */
    CHECK(S->s.hist_total == 10);
    CHECK(S->hist[5].step == 6 && strstr(S->hist[5].run[0].mark, "post") != NULL);
    CHECK(strstr(S->hist[5].run[0].mark, "lr") != NULL); /* two changes, one marker */
    CHECK(S->hist[4].run[0].mark[0] == 0 && S->hist[6].run[0].mark[0] == 0);
    trainer_free(t);
    engine_free(e);
    engine_free(ref);
}

/* --compare in the live view: the trainer steps a then b each step, a
 * setting command goes to both, and both runs' metrics are bit for bit
 * those of two engines stepped directly. */
typedef struct {
    step_metrics a[REC_MAX / 2], b[REC_MAX / 2];
    int n;
} pair_recorder;
static void record_pair(void *ctx, const step_metrics *a, const step_metrics *b)
{
    pair_recorder *r = ctx;
    if (r->n < REC_MAX / 2) {
        r->a[r->n] = *a;
        r->b[r->n++] = *b;
    }
}

static void test_twin(void)
{
    ns_config c = small_cfg(), cb = small_cfg();
    cb.norm = NORM_POST;
    engine *e = make(&c), *tw = make(&cb), *ra = make(&c), *rb = make(&cb);
    static pair_recorder rec;
    rec.n = 0;
    trainer_opts o = {.start_paused = 1, .twin = tw, .label_b = "norm=post",
                      .on_pair = record_pair, .ctx = &rec};
    char err[256];
    memset(S, 0, sizeof *S);
    trainer *t = trainer_create(e, &o, err, sizeof err);
    CHECK(t != NULL);
    for (int i = 0; i < 4; i++)
        CHECK(send_kind(t, CMD_STEP) == 0);
    CHECK(send(t, "lr x2") == 0);
    for (int i = 0; i < 4; i++)
        CHECK(send_kind(t, CMD_STEP) == 0);
    CHECK(trainer_start(t, err, sizeof err) == 0);
    CHECK(wait_for(t, steps_at_least, 8, 20.0));
    sleep_s(0.1);
    trainer_snapshot_copy(t, S);
    trainer_stop(t);
    CHECK(S->s.steps_done == 8 && S->s.compare);
    /* labels from each run's settings, what differs first */
    CHECK(!strncmp(S->s.run[1].label, "b: norm=post ", 13) && !strncmp(S->s.run[0].label, "a: norm=pre ", 12));
    CHECK(S->s.run[1].cfg.norm == NORM_POST && S->s.run[0].cfg.norm == NORM_PRE);
    int same = rec.n == 8;
    step_metrics ma, mb;
    for (int i = 0; i < 8 && same; i++) {
        if (i == 4) {
            ns_command k = cmd("lr x2");
            command_apply(ra, &k);
            command_apply(rb, &k);
        }
        engine_step(ra, &ma);
        engine_step(rb, &mb);
        same = same_metrics(&ma, &rec.a[i]) && same_metrics(&mb, &rec.b[i]);
    }
    CHECK(same);
    CHECK(same_metrics(&mb, &S->s.run[1].last) && same_metrics(&ma, &S->s.run[0].last));
    CHECK(S->s.hist_total == 8 && S->hist[7].run[1].loss == mb.loss && S->hist[7].run[0].loss == ma.loss);
    CHECK(rec.a[0].loss != rec.b[0].loss); /* the runs differ */
    CHECK(S->s.run[1].last_val == rec.b[7].val_loss && rec.b[7].has_val); /* val_every 4 */
    trainer_free(t);
    engine_free(e);
    engine_free(tw);
    engine_free(ra);
    engine_free(rb);
}

static void test_queue_bound(void)
{
    ns_config c = small_cfg();
    engine *e = make(&c);
    char err[256];
    trainer_opts o = {.start_paused = 1};
    trainer *t = trainer_create(e, &o, err, sizeof err);
    int ok = 1;
    for (int i = 0; i < TRAINER_QUEUE; i++)
        ok &= send_kind(t, CMD_NOTE) == 0;
    CHECK(ok);
    CHECK(send_kind(t, CMD_STEP) == -1); /* full: refused, not blocking */
    trainer_free(t);                   /* never started: nothing to join */
    engine_free(e);
}

/* Pause stops the counter; n moves it by exactly one; space resumes. */
static void test_pause_step_resume(void)
{
    ns_config c = small_cfg();
    engine *e = make(&c);
    trainer_opts o = {0};
    trainer *t = start(e, &o);
    CHECK(wait_for(t, steps_at_least, 3, 20.0));
    CHECK(send_kind(t, CMD_PAUSE_TOGGLE) == 0);
    CHECK(wait_for(t, state_is, TRAINER_PAUSED, 10.0));
    long s1 = S->s.steps_done;
    sleep_s(0.15);
    trainer_snapshot_copy(t, S);
    CHECK(S->s.steps_done == s1);
    CHECK(S->s.steps_per_s == 0.0);
    CHECK(send_kind(t, CMD_STEP) == 0);
    CHECK(wait_for(t, steps_at_least, s1 + 1, 10.0));
    sleep_s(0.15);
    trainer_snapshot_copy(t, S);
    CHECK(S->s.steps_done == s1 + 1);
    CHECK(S->s.state == TRAINER_PAUSED);
    for (int i = 0; i < 3; i++)
        send_kind(t, CMD_STEP);
    CHECK(wait_for(t, steps_at_least, s1 + 4, 10.0));
    sleep_s(0.1);
    trainer_snapshot_copy(t, S);
    CHECK(S->s.steps_done == s1 + 4);
    /* n while running pauses (a debugger's single-step) */
    CHECK(send_kind(t, CMD_PAUSE_TOGGLE) == 0);
    CHECK(wait_for(t, steps_at_least, s1 + 10, 20.0));
    CHECK(S->s.state == TRAINER_RUNNING);
    CHECK(send_kind(t, CMD_STEP) == 0);
    CHECK(wait_for(t, state_is, TRAINER_PAUSED, 10.0));
    trainer_free(t);
    engine_free(e);
}

/* Snapshots copied while the trainer runs are consistent: the header and
 * the newest point agree, points are consecutive steps, and an incremental
 * copy equals a full one. */
static void test_snapshot_consistency(void)
{
    ns_config c = small_cfg();
    engine *e = make(&c);
    trainer_opts o = {0};
    trainer *t = start(e, &o);
    trainer_snapshot *full = snapshot_new();
    memset(S, 0, sizeof *S);
    int copies = 0, consistent = 1, consecutive = 1, heat_ok = 1;
    double end = now_s() + 0.5;
    while (now_s() < end || S->s.hist_total < 20) {
        if (!trainer_snapshot_copy(t, S)) {
            trainer_wait(t, S->s.seq, 0.01);
            continue;
        }
        copies++;
        const trainer_status *s = &S->s;
        if (!s->have_metrics)
            continue;
        const trainer_point *newest = &S->hist[(s->hist_total - 1) % TRAINER_HIST];
        consistent &= s->run[0].last.step == s->steps_done && newest->step == s->run[0].last.step &&
                      s->hist_total == s->steps_done;
        for (long i = trainer_hist_first(s) + 1; i < s->hist_total; i++)
            consecutive &= S->hist[i % TRAINER_HIST].step == S->hist[(i - 1) % TRAINER_HIST].step + 1;
        const layer_metrics *lm = &s->run[0].last.layer[1];
        double want = sqrt((double)lm->grad_attn * lm->grad_attn +
                           (double)lm->grad_ffn * lm->grad_ffn + (double)lm->grad_ln * lm->grad_ln);
        heat_ok &= t_close(S->run[0].heat[(s->hist_total - 1) % TRAINER_HIST][1], want, 1e-6, 0);
        if (now_s() > end + 20)
            break;
    }
    CHECK(copies > 3);
    CHECK(consistent);
    CHECK(consecutive);
    CHECK(heat_ok);
    trainer_stop(t);
    trainer_snapshot_copy(t, S);
    trainer_snapshot_copy(t, full);
    int same = S->s.hist_total == full->s.hist_total && S->s.hist_total > 0;
    for (long i = trainer_hist_first(&S->s); i < S->s.hist_total && same; i++) {
        long k = i % TRAINER_HIST;
        same = !memcmp(&S->hist[k], &full->hist[k], sizeof S->hist[k]) &&
               !memcmp(S->run[0].heat[k], full->run[0].heat[k], 2 * sizeof(float));
    }
    CHECK(same);
    CHECK(trainer_snapshot_copy(t, S) == 0); /* nothing new after the stop */
    free(full);
    trainer_free(t);
    engine_free(e);
}

static int find_event(const trainer_snapshot *s, ns_event_kind kind, const char *needle)
{
    for (long i = s->s.ev_total - 1; i >= 0 && i >= s->s.ev_total - TRAINER_EVENTS; i--) {
        const trainer_event *ev = &s->ev[i % TRAINER_EVENTS];
        if (ev->kind == kind && (!needle || strstr(ev->text, needle)))
            return 1;
    }
    return 0;
}

/* A non-finite step pauses as DIVERGED; the trainer keeps answering. */
static void test_divergence(void)
{
    ns_config c = small_cfg();
    engine *e = make(&c);
    size_t n;
    float *p = engine_params(e, &n);
    for (size_t i = 0; i < n; i++)
        p[i] = NAN; /* every forward value is NaN from the first op */
    trainer_opts o = {0};
    trainer *t = start(e, &o);
    CHECK(wait_for(t, state_is, TRAINER_DIVERGED, 20.0));
    CHECK(S->s.steps_done == 1);
    CHECK(S->s.run[0].last.nonfinite);
    CHECK(find_event(S, NS_EV_DIVERGED, "DIVERGED at step 1"));
    CHECK(find_event(S, NS_EV_DIVERGED, "diverged at step 1")); /* the engine's, kind kept */
    /* where the b key goes (not "b: ", which names run b's lines) */
    CHECK(find_event(S, NS_EV_INFO, "b rewinds to step 0 (its headroom is not known)"));
    CHECK(S->ev[(S->s.ev_total - 1) % TRAINER_EVENTS].layer == S->s.run[0].last.fault_layer);
    sleep_s(0.1);
    trainer_snapshot_copy(t, S);
    CHECK(S->s.steps_done == 1); /* paused, not stepping on */
    send_kind(t, CMD_STEP);
    CHECK(wait_for(t, steps_at_least, 2, 10.0));
    CHECK(S->s.state == TRAINER_DIVERGED);
    unsigned gen = S->s.generation;
    send_kind(t, CMD_REINIT); /* fresh weights from the seed: finite again */
    CHECK(wait_for(t, state_is, TRAINER_RUNNING, 10.0));
    CHECK(wait_for(t, steps_at_least, 3, 20.0));
    CHECK(S->s.generation != gen);
    CHECK(!S->s.run[0].last.nonfinite);
    CHECK(S->hist[0].step == 1 && strstr(S->hist[0].run[0].mark, "reinit") != NULL);
    trainer_free(t);
    engine_free(e);

    /* --on-diverge continue: logged, and training goes on */
    e = make(&c);
    p = engine_params(e, &n);
    for (size_t i = 0; i < n; i++)
        p[i] = NAN;
    o.on_div = ONDIV_CONTINUE;
    t = start(e, &o);
    CHECK(wait_for(t, steps_at_least, 4, 20.0));
    CHECK(S->s.state == TRAINER_RUNNING);
    trainer_free(t);
    engine_free(e);
}

/* --steps pauses as DONE; space trains on past it. */
static void test_limit(void)
{
    ns_config c = small_cfg();
    engine *e = make(&c);
    trainer_opts o = {.limit = 6};
    trainer *t = start(e, &o);
    CHECK(wait_for(t, state_is, TRAINER_DONE, 20.0));
    sleep_s(0.1);
    trainer_snapshot_copy(t, S);
    CHECK(S->s.steps_done == 6);
    CHECK(S->s.run_steps == 6);
    CHECK(S->s.run_seconds > 0);
    send_kind(t, CMD_PAUSE_TOGGLE);
    CHECK(wait_for(t, steps_at_least, 9, 20.0));
    CHECK(S->s.limit == 0);
    trainer_free(t);
    engine_free(e);
}

/* A script speaks between steps, through the same commands as keys. */
static void test_script(void)
{
    ns_config c = small_cfg();
    engine *e = make(&c);
    ns_script sc;
    char err[256];
    CHECK(command_script_parse("at 3: norm post\nat 7: pause\n", "test", &sc, err, sizeof err) == 0);
    static recorder rec;
    rec.n = 0;
    trainer_opts o = {.script = &sc, .on_step = record, .ctx = &rec};
    trainer *t = start(e, &o);
    CHECK(wait_for(t, state_is, TRAINER_PAUSED, 20.0));
    sleep_s(0.1);
    trainer_stop(t);
    trainer_snapshot_copy(t, S);
    CHECK(S->s.steps_done == 7);
    CHECK(rec.n == 7 && metrics_norm(&rec.m[2]) == NORM_PRE &&
          metrics_norm(&rec.m[3]) == NORM_POST);
    trainer_free(t);
    command_script_free(&sc);
    engine_free(e);
}

/* A script's "pause PROMPT" pauses with the prompt in the status and the
 * event log; with no_pause (--no-pause) the run goes on, still logging it. */
static void test_script_prompt(void)
{
    ns_config c = small_cfg();
    c.steps = 0;
    for (int np = 0; np < 2; np++) {
        engine *e = make(&c);
        ns_script sc;
        char err[256];
        CHECK(command_script_parse("at 4: pause Why did the loss fall?\n", "test", &sc, err, sizeof err) == 0);
        trainer_opts o = {.script = &sc, .no_pause = np};
        trainer *t = start(e, &o);
        if (np)
            CHECK(wait_for(t, steps_at_least, 8, 20.0));
        else
            CHECK(wait_for(t, state_is, TRAINER_PAUSED, 20.0));
        trainer_stop(t);
        trainer_snapshot_copy(t, S);
        CHECK(np ? S->s.steps_done >= 8 : S->s.steps_done == 4);
        CHECK(S->s.ask_seq == 1 && S->s.ask_step == 4 && !strcmp(S->s.ask, "Why did the loss fall?"));
        int logged = 0;
        for (long i = 0; i < S->s.ev_total && i < TRAINER_EVENTS; i++)
            logged += !strcmp(S->ev[i].text, "Why did the loss fall?");
        CHECK(logged == 1);
        trainer_free(t);
        command_script_free(&sc);
        engine_free(e);
    }
}

/* The small model trained 12 steps (validation every 4, a snapshot every
 * 5) and stopped there: what the rewind tests start from. */
static trainer *twelve_steps(engine **e)
{
    ns_config c = small_cfg();
    c.snapshot_every = 5;
    *e = make(&c);
    static trainer_opts o;
    o = (trainer_opts){.limit = 12};
    trainer *t = start(*e, &o);
    CHECK(wait_for(t, state_is, TRAINER_DONE, 20.0));
    return t;
}

/* Rewind cuts the history back to the snapshot's step and marks it. */
static void test_rewind(void)
{
    engine *e;
    trainer *t = twelve_steps(&e);
    unsigned gen = S->s.generation;
    send_kind(t, CMD_REWIND);
    CHECK(wait_for(t, steps_equal, 10, 10.0));
    CHECK(S->s.hist_total == 10);
    CHECK(S->s.generation != gen);
    /* the layer panel's numbers are the snapshot's step's */
    CHECK(S->s.have_metrics && S->s.run[0].last.step == 10);
    /* two LR changes after the rewind: the marker shows the LR in force */
    ns_command set = cmd("lr 0.02"), scale = cmd("lr x0.2");
    trainer_send(t, &set);
    trainer_send(t, &scale);
    send_kind(t, CMD_STEP);
    CHECK(wait_for(t, steps_at_least, 11, 10.0));
    CHECK(S->s.hist_total == 11 && S->hist[10].step == 11);
    CHECK(strcmp(S->hist[10].run[0].mark, "rewind,lr 4e-03") == 0);
    /* more changes than the label holds: whole labels, then "+" */
    const char *many[] = {"norm post", "kind rmsnorm", "warmup off", "precision bf16",
                          "clip 0.5", "lr 0.003"};
    send_kind(t, CMD_REWIND);
    CHECK(wait_for(t, steps_equal, 10, 10.0));
    for (size_t i = 0; i < sizeof many / sizeof *many; i++) {
        ns_command c = cmd(many[i]);
        trainer_send(t, &c);
    }
    send_kind(t, CMD_STEP);
    CHECK(wait_for(t, steps_at_least, 11, 10.0));
    const char *mk = S->hist[10].run[0].mark;
    size_t ml = strlen(mk);
    CHECK(ml > 2 && !strcmp(mk + ml - 2, ",+") && strncmp(mk, "rewind,", 7) == 0);
    for (const char *p = mk; *p && *p != '+';) { /* every piece is a whole label */
        size_t n = strcspn(p, ",");
        char piece[TRAINER_MARK];
        snprintf(piece, sizeof piece, "%.*s", (int)n, p);
        CHECK(!strcmp(piece, "rewind") || !strcmp(piece, "post") || !strcmp(piece, "rmsnorm") ||
              !strcmp(piece, "no warmup") || !strcmp(piece, "bf16") || !strncmp(piece, "clip ", 5) ||
              !strncmp(piece, "lr ", 3));
        p += n + (p[n] == ',');
    }
    trainer_free(t);
    engine_free(e);
}

/* A rewind keeps the curve it abandons (the ghost): the losses of the
 * steps cut, which the chart draws grey behind the replay with its window
 * stretched to their end; the next rewind replaces it, a re-init drops it. */
static int ghost_is(const trainer_status *s, long n) { return s->ghost_n == n; }

static void test_rewind_ghost(void)
{
    engine *e;
    trainer *t = twelve_steps(&e);
    CHECK(S->s.ghost_n == 0);
    float at11 = S->hist[10].run[0].loss, at12 = S->hist[11].run[0].loss;
    send_kind(t, CMD_REWIND);
    CHECK(wait_for(t, steps_equal, 10, 10.0));
    CHECK(S->s.ghost_n == 2 && S->s.ghost_first == 11);
    CHECK(S->run[0].ghost[0] == at11 && S->run[0].ghost[1] == at12);
    /* the chart: its window reaches step 12, past the run's step 10 */
    tui_grid g = {0};
    CHECK(tui_grid_resize(&g, 12, 100) == 0);
    tui_ui ui;
    tui_ui_init(&ui, 0, 0);
    tui_rect r = {0, 0, 12, 100};
    tui_draw_chart(&g, r, S, &ui);
    tui_chart_geom cg = tui_chart_geometry(r, S, 0);
    CHECK(cg.last == 12 && S->s.steps_done == 10);
    char row0[512];
    tui_row_utf8(&g, 0, row0, sizeof row0);
    CHECK(strstr(row0, "before rewind") != NULL && strstr(row0, "steps 1-12") != NULL);
    int dim_dots = 0; /* the ghost's two points, grey, right of step 10 */
    int col10 = tui_chart_col(&cg, 10);
    for (int y = cg.top; y < cg.top + cg.h; y++)
        for (int x = col10 + 1; x < cg.left + cg.w; x++) {
            const tui_cell *cell = tui_at(&g, y, x);
            dim_dots += cell && cell->ch == '.' && cell->style == TUI_S_DIM;
        }
    CHECK(dim_dots == 2);
    /* g's figure draws it too: a dashed series under the replay */
    char path[64], perr[256];
    snprintf(path, sizeof path, "/tmp/ns_ghost_%d.svg", (int)getpid());
    CHECK(plot_write_snapshot(S, 0, 0, 0.9, path, perr, sizeof perr) == 0);
    FILE *f = fopen(path, "r");
    static char svg[1 << 20];
    size_t got = f ? fread(svg, 1, sizeof svg - 1, f) : 0;
    svg[got] = 0;
    if (f)
        fclose(f);
    remove(path);
    const char *gs = strstr(svg, "data-name=\"before the rewind: train loss\"");
    CHECK(gs != NULL && strstr(gs, "stroke-dasharray") != NULL);
    /* again: to step 5, the ghost is what this rewind cut (6..10) */
    send_kind(t, CMD_REWIND);
    CHECK(wait_for(t, steps_equal, 5, 10.0));
    CHECK(S->s.ghost_n == 5 && S->s.ghost_first == 6);
    send_kind(t, CMD_REINIT); /* it trains on from step 0: wait for the drop itself */
    CHECK(wait_for(t, ghost_is, 0, 10.0));
    tui_grid_free(&g);
    trainer_free(t);
    engine_free(e);
}

/* A rewind after the history ring has wrapped: the slots of the points cut
 * away were reused, so the oldest points they overwrote are gone too. The
 * window a front end draws must hold only consecutive steps ending at the
 * snapshot's (a stale, later step in it once sent the chart's x negative
 * and wrote before its buffer). */
static void test_rewind_wrapped(void)
{
    ns_config c = small_cfg();
    c.snapshot_every = 500;
    c.val_every = 0;
    engine *e = make(&c);
    long steps = TRAINER_HIST + 700;
    trainer_opts o = {.limit = steps};
    trainer *t = start(e, &o);
    CHECK(wait_for(t, state_is, TRAINER_DONE, 600.0));
    send_kind(t, CMD_REWIND);
    long snap = steps / 500 * 500;
    CHECK(wait_for(t, steps_equal, snap, 20.0));
    const trainer_status *s = &S->s;
    long first = trainer_hist_first(s);
    CHECK(s->hist_total == snap);
    /* the cut points held indices snap .. steps-1: their slots held the
     * points steps - TRAINER_HIST .. , which are lost */
    CHECK(first == steps - TRAINER_HIST);
    int consecutive = first < s->hist_total;
    for (long i = first + 1; i < s->hist_total; i++)
        consecutive &= S->hist[i % TRAINER_HIST].step == S->hist[(i - 1) % TRAINER_HIST].step + 1;
    CHECK(consecutive);
    CHECK(S->hist[(s->hist_total - 1) % TRAINER_HIST].step == snap);
    /* new steps go on from there, and the window grows back */
    send_kind(t, CMD_STEP);
    CHECK(wait_for(t, steps_at_least, snap + 1, 10.0));
    CHECK(trainer_hist_first(&S->s) == first);
    CHECK(S->hist[(S->s.hist_total - 1) % TRAINER_HIST].step == snap + 1);
    trainer_free(t);
    engine_free(e);
}

/* The status line's values rows (row 0; with --compare run b's too) as
 * a front end draws them from S (drawing is test_tui.c's; this is the
 * trainer's side of what "loss" shows). */
static const char *status_row(void)
{
    static char buf[1024];
    tui_grid g = {0};
    tui_ui ui;
    tui_ui_init(&ui, 0, 0);
    buf[0] = 0;
    int h = S->s.compare ? 3 : 2; /* --compare: run b's values row too */
    if (tui_grid_resize(&g, h, 160) == 0) {
        tui_rect r = {0, 0, h, 160};
        tui_draw_status(&g, r, S, &ui);
        for (int i = 0; i < h - 1; i++) { /* the values rows, not the toggles */
            size_t n = strlen(buf);
            tui_row_utf8(&g, i, buf + n, sizeof buf - n);
        }
    }
    tui_grid_free(&g);
    return buf;
}

/* After a rewind the loss shown (status line, the summary's text) is the
 * step rewound to's, from the history, not that of the step taken last
 * (after b, usually the diverged one); the validation loss likewise goes
 * back to the last one measured at or before it. Rewound to step 0: no
 * loss at all, not a made-up one. */
static void test_rewind_loss(void)
{
    engine *e; /* validation every 4 steps */
    trainer *t = twelve_steps(&e);
    CHECK(S->s.hist_total == 12);
    float at5 = S->hist[4].run[0].loss, at10 = S->hist[9].run[0].loss, at12 = S->hist[11].run[0].loss;
    float val8 = S->hist[7].run[0].val_loss;
    char want[64], stale[64], txt[32];
    snprintf(want, sizeof want, "loss %.4f", (double)at10);
    snprintf(stale, sizeof stale, "loss %.4f", (double)at12);
    CHECK(strcmp(want, stale) != 0);
    CHECK(strstr(status_row(), stale) != NULL); /* before: the latest step's */
    CHECK(S->s.last_val_step == 12 && !isnan(val8));

    send_kind(t, CMD_REWIND);
    CHECK(wait_for(t, steps_equal, 10, 10.0));
    CHECK(strstr(status_row(), want) != NULL);
    CHECK(strstr(status_row(), stale) == NULL);
    CHECK(S->s.have_loss && S->s.run[0].loss == at10);
    trainer_loss_text(&S->s, 0, txt, sizeof txt);
    CHECK(!strcmp(txt, want + 5));
    /* validation at 12 is gone with the step; 8's is the latest now */
    CHECK(S->s.last_val_step == 8 && S->s.run[0].last_val == val8);

    send_kind(t, CMD_REWIND); /* again: an older snapshot */
    CHECK(wait_for(t, steps_equal, 5, 10.0));
    snprintf(want, sizeof want, "loss %.4f", (double)at5);
    CHECK(strstr(status_row(), want) != NULL);
    CHECK(S->s.last_val_step == 4);

    send_kind(t, CMD_STEP); /* a new step: its own loss */
    CHECK(wait_for(t, steps_equal, 6, 10.0));
    CHECK(S->s.have_loss && S->s.run[0].loss == S->s.run[0].last.loss && S->s.run[0].last.step == 6);
    send_kind(t, CMD_REWIND);
    CHECK(wait_for(t, steps_equal, 5, 10.0));
    send_kind(t, CMD_REWIND); /* to step 0: no step, no loss */
    CHECK(wait_for(t, steps_equal, 0, 10.0));
    CHECK(strstr(status_row(), "loss -") != NULL);
    CHECK(!S->s.have_loss);
    trainer_loss_text(&S->s, 0, txt, sizeof txt);
    CHECK(!strcmp(txt, "-"));
    CHECK(S->s.last_val_step == 0 && strstr(status_row(), "val -") != NULL);
    trainer_free(t);
    engine_free(e);
}

/* Quitting right after a re-init: the final snapshot has no step, and the
 * exit summary's loss says so ("-"), not 0.0000. */
static void test_reinit_loss(void)
{
    ns_config c = small_cfg();
    ns_config cb = small_cfg();
    cb.norm = NORM_POST;
    engine *e = make(&c), *tw = make(&cb);
    trainer_opts o = {.start_paused = 1, .twin = tw};
    trainer *t = start(e, &o);
    for (int i = 0; i < 3; i++)
        send_kind(t, CMD_STEP);
    CHECK(wait_for(t, steps_equal, 3, 20.0));
    char txt[32], want[32];
    CHECK(S->s.have_loss && S->s.run[0].loss == S->s.run[0].last.loss && S->s.run[1].loss == S->s.run[1].last.loss);
    trainer_loss_text(&S->s, 1, txt, sizeof txt);
    snprintf(want, sizeof want, "%.4f", (double)S->s.run[1].last.loss);
    CHECK(!strcmp(txt, want));
    send_kind(t, CMD_REINIT);
    CHECK(wait_for(t, steps_equal, 0, 10.0));
    trainer_stop(t); /* as main.c: quit, then the final snapshot */
    trainer_snapshot_copy(t, S);
    CHECK(S->s.steps_done == 0 && !S->s.have_loss);
    trainer_loss_text(&S->s, 0, txt, sizeof txt);
    CHECK(!strcmp(txt, "-"));
    trainer_loss_text(&S->s, 1, txt, sizeof txt);
    CHECK(!strcmp(txt, "-"));
    CHECK(strstr(status_row(), "loss -") != NULL);
    trainer_free(t);
    engine_free(e);
    engine_free(tw);
}

/* A step's parameters all NaN: it diverges at its first op. */
static void poison(engine *e)
{
    size_t n;
    float *p = engine_params(e, &n);
    for (size_t i = 0; i < n; i++)
        p[i] = NAN;
}

/* The run that diverged is decided by the trainer, once, and read by
 * every front end: b when only b is not finite, a when a is (even if b is
 * too, a steps first), and the headless stop line names the same run. */
static void test_diverged_run(void)
{
    for (int which = 0; which < 3; which++) { /* 0: a, 1: b, 2: both */
        ns_config c = small_cfg();
        c.steps = 5;
        engine *e = make(&c), *tw = make(&c);
        if (which != 1)
            poison(e);
        if (which != 0)
            poison(tw);
        char buf[4096] = "";
        FILE *log = fmemopen(buf, sizeof buf - 1, "w");
        trainer_opts o = {.limit = 5, .twin = tw, .label_b = "twin", .log = log};
        char err[256];
        trainer *t = trainer_create(e, &o, err, sizeof err);
        trainer_run(t);
        fclose(log);
        memset(S, 0, sizeof *S);
        trainer_snapshot_copy(t, S);
        int want = which == 1 ? 1 : 0;
        CHECK(S->s.state == TRAINER_DIVERGED && S->s.steps_done == 1);
        CHECK(S->s.diverged_run == want && trainer_diverged_run(&S->s) == want);
        CHECK(strstr(buf, want ? "run b diverged at step 1" : "run a diverged at step 1"));
        CHECK(strstr(status_row(), want ? "first non-finite (b)" : "first non-finite:"));
        trainer_free(t);
        engine_free(e);
        engine_free(tw);
    }
}

/* trainer_run, the headless loop: the steps and rows of the thread's loop,
 * and every event of both runs reported, those of the step the script
 * stopped at too (the drain after the loop). */
static void test_run_sync(void)
{
    ns_config c = small_cfg();
    engine *e = make(&c), *tw = make(&c);
    ns_script sc;
    char err[256];
    CHECK(command_script_parse("at 3: lr 0.01\nat 3: stop\n", "test", &sc, err, sizeof err) == 0);
    char buf[4096] = "";
    FILE *log = fmemopen(buf, sizeof buf - 1, "w");
    static pair_recorder rec;
    rec.n = 0;
    trainer_opts o = {.limit = 10, .twin = tw, .script = &sc, .log = log,
                      .on_pair = record_pair, .ctx = &rec};
    trainer *t = trainer_create(e, &o, err, sizeof err);
    trainer_run(t);
    trainer_summary(t, log);
    fclose(log);
    CHECK(engine_steps_done(e) == 3 && engine_steps_done(tw) == 3 && rec.n == 3);
    CHECK(strstr(buf, "normscope: a: peak LR 0.001 -> 0.01\n"));
    CHECK(strstr(buf, "normscope: b: peak LR 0.001 -> 0.01\n"));
    CHECK(strstr(buf, "normscope: script: stop at step 3\n"));
    CHECK(strstr(buf, "normscope: 3 steps in "));
    CHECK(strstr(buf, "normscope: b (twin): loss "));
    trainer_free(t);
    command_script_free(&sc);
    engine_free(e);
    engine_free(tw);
}

/* Ctrl-Z stops the process mid-step: the UI holds the trainer's clock
 * around the stop, so run_seconds (and steps/s) leave it out. Simulated:
 * the step stalls in on_step while this thread holds the clock. */
static atomic_int stall_in, stall_go;
static void stall_step(void *ctx, const step_metrics *m)
{
    (void)ctx;
    (void)m;
    atomic_store(&stall_in, 1);
    while (!atomic_load(&stall_go))
        sleep_s(0.001);
}

static void test_stopped_time(void)
{
    ns_config c = small_cfg();
    engine *e = make(&c);
    atomic_store(&stall_in, 0);
    atomic_store(&stall_go, 0);
    trainer_opts o = {.start_paused = 1, .on_step = stall_step};
    trainer *t = start(e, &o);
    send_kind(t, CMD_STEP);
    double end = now_s() + 20;
    while (!atomic_load(&stall_in) && now_s() < end)
        sleep_s(0.001);
    CHECK(atomic_load(&stall_in));
    trainer_clock_hold(t); /* as tui_curses.c's suspend, around the stop */
    sleep_s(0.6);
    trainer_clock_release(t);
    atomic_store(&stall_go, 1);
    CHECK(wait_for(t, steps_equal, 1, 10.0));
    trainer_stop(t);
    trainer_snapshot_copy(t, S);
    CHECK(S->s.run_steps == 1);
    CHECK(S->s.run_seconds > 0 && S->s.run_seconds < 0.3);
    if (S->s.run_seconds >= 0.3)
        fprintf(stderr, "run_seconds %.3f counts the 0.6 s stop\n", S->s.run_seconds);
    trainer_free(t);
    engine_free(e);
}

/* The steps/s window restarts when a rewind (or a re-init) takes the step
 * count back: otherwise the window that spans it reads negative. Steps
 * are held to at most ~200/s, so a window holds at most ~100 of them and
 * a rewind of 220 steps would show below zero without the restart. */
static void slow_step(void *ctx, const step_metrics *m)
{
    (void)ctx;
    (void)m;
    sleep_s(0.005);
}

static void test_rate_after_rewind(void)
{
    ns_config c = small_cfg();
    c.snapshot_every = 200;
    engine *e = make(&c);
    trainer_opts o = {.on_step = slow_step};
    trainer *t = start(e, &o);
    CHECK(wait_for(t, steps_at_least, 420, 60.0));
    send_kind(t, CMD_REWIND); /* to 400 */
    send_kind(t, CMD_REWIND); /* to 200 */
    double lowest = 0, end = now_s() + 1.5;
    int seen = 0;
    while (now_s() < end) {
        trainer_snapshot_copy(t, S);
        if (S->s.steps_done < 400) { /* after both rewinds */
            seen++;
            if (S->s.steps_per_s < lowest)
                lowest = S->s.steps_per_s;
        }
        trainer_wait(t, S->s.seq, 0.05);
    }
    CHECK(seen > 0);
    CHECK(lowest >= 0);
    if (lowest < 0)
        fprintf(stderr, "steps/s read %.1f after a rewind\n", lowest);
    trainer_free(t);
    engine_free(e);
}

static void test_sample(void)
{
    ns_config c = small_cfg();
    engine *e = make(&c);
    trainer_opts o = {.sample_every = 0.01, .prompt = "The "};
    trainer *t = start(e, &o);
    double end = now_s() + 20;
    do
        wait_for(t, steps_at_least, 1, 0.05);
    while (S->s.sample_len == 0 && now_s() < end);
    CHECK(S->s.sample_len == TRAINER_SAMPLE);
    CHECK(S->s.sample_step >= 1);
    CHECK(S->s.prompt && !strcmp(S->s.prompt, "The "));
    trainer_free(t);
    engine_free(e);
}

/* A deep Post-LN run without warmup stalls on the unigram plateau: the
 * published state reads STALLED, the diagnosis is in the event log, the
 * status line's mark names the rule and the row written says so. The same
 * run in Pre-LN stays RUNNING with no mark. */
static void test_stall(void)
{
    for (int pre = 0; pre < 2; pre++) {
        ns_config c = small_cfg(); /* 12 blocks of width 16: stalls near step 80 */
        c.n_layer = 12;
        c.norm = pre ? NORM_PRE : NORM_POST;
        c.warmup = 0;
        c.lr = 3e-3f;
        c.val_every = 0;
        engine *e = make(&c);
        static recorder rec;
        rec.n = 0;
        trainer_opts o = {0};
        o.limit = 120;
        o.on_step = record;
        o.ctx = &rec;
        o.plateau = diag_unigram_entropy(D.bytes, D.n_train);
        trainer *t = start(e, &o);
        /* generous: the ThreadSanitizer build is many times slower */
        CHECK(wait_for(t, state_is, pre ? TRAINER_DONE : TRAINER_STALLED, 600.0));
        trainer_snapshot_copy(t, S);
        trainer_stop(t);
        int stalled_rows = 0;
        for (int i = 0; i < rec.n; i++)
            stalled_rows += rec.m[i].stalled;
        if (pre) {
            CHECK(S->s.diag[0].alert[0] == 0 && stalled_rows == 0);
            CHECK(!find_event(S, NS_EV_WARNING, "stalled"));
        } else {
            CHECK(strcmp(S->s.diag[0].alert, "stall") == 0);
            CHECK(find_event(S, NS_EV_WARNING, "stalled: loss"));
            CHECK(find_event(S, NS_EV_WARNING, "Pre-LN first"));
            CHECK(stalled_rows > 0);
            /* the finding is one event, whole (the log's view wraps it):
             * no continuation lines, and it is the finding's text */
            const diag_finding *f = NULL;
            for (int i = 0; i < S->s.diag[0].n; i++)
                if (S->s.diag[0].f[i].rule == DIAG_R_STALL)
                    f = &S->s.diag[0].f[i];
            char joined[2 * DIAG_TEXT] = "";
            long k = 0, pieces = 0;
            while (k < S->s.ev_total && !strstr(S->ev[k % TRAINER_EVENTS].text, "stalled: loss"))
                k++;
            for (long j = k; j < S->s.ev_total; j++) {
                const char *x = S->ev[j % TRAINER_EVENTS].text;
                if (j > k && strncmp(x, "    ", 4) != 0)
                    break;
                CHECK(strlen(x) < NS_EVENT_TEXT);
                pieces++;
                if (j > k)
                    strcat(joined, " ");
                strncat(joined, j > k ? x + 4 : x, sizeof joined - strlen(joined) - 1);
            }
            CHECK(f && pieces == 1 && strcmp(joined, f->text) == 0);
            CHECK(strcmp(snapshot_state_name(TRAINER_STALLED), "STALLED") == 0);
        }
        trainer_free(t);
        engine_free(e);
    }
}

int main(void)
{
    data_builtin(&D);
    S = snapshot_new();
    test_between_steps();
    test_twin();
    test_queue_bound();
    test_pause_step_resume();
    test_snapshot_consistency();
    test_divergence();
    test_limit();
    test_script();
    test_script_prompt();
    test_rewind();
    test_rewind_wrapped();
    test_rewind_ghost();
    test_rewind_loss();
    test_reinit_loss();
    test_stopped_time();
    test_rate_after_rewind();
    test_sample();
    test_stall();
    test_diverged_run();
    test_run_sync();
    free(S);
    return test_summary();
}
