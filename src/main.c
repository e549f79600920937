/* main.c - normscope's entry point: parse flags, load data, and run the
 * headless trainer, or the live view (a trainer thread, trainer.c, and the
 * dashboard, tui*.c).
 *
 * Exit status: 0 done, 1 runtime error (an output could not be written),
 * 2 bad usage or input, 3 the run diverged (non-finite loss or gradients),
 * 130 interrupted (the outputs hold the steps done).
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "atomicio.h"
#include "cli.h"
#include "command.h"
#include "lesson.h"
#include "data.h"
#include "engine.h"
#include "metrics.h"
#include "model.h"
#include "trainer.h"
#include "twin.h"
#include "tui.h"

static volatile sig_atomic_t stop_requested;
static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

/* Headless: SIGINT, SIGTERM and SIGHUP (the ssh session closed) end the
 * run after the step in progress, so the outputs hold every step done. A
 * signal ignored when we started stays ignored: `nohup normscope
 * --headless &` must outlive the session, and a shell starts background
 * jobs with SIGINT ignored. */
static void catch_stop_signals(void)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = on_signal;
    for (int i = 0; i < 3; i++)
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
            sigaction(sigs[i], &sa, NULL);
}

/* An output file (--csv, --jsonl): written through atomicio.c (a temp file
 * beside it, renamed over it on success; "-", FIFOs and devices in place),
 * with its flag for the messages. */
typedef struct {
    const char *flag;
    atomic_file *a; /* NULL when the flag was not given */
    FILE *f;        /* a->f: where the rows go; NULL when not given */
} outfile;

static int out_open(outfile *o, const char *flag, const char *path)
{
    char err[ATOMIC_PATH_MAX + 128];
    memset(o, 0, sizeof *o);
    o->flag = flag;
    if (!path)
        return 0;
    o->a = malloc(sizeof *o->a);
    if (!o->a) {
        fprintf(stderr, "normscope: --%s %s: out of memory\n", flag, path);
        return -1;
    }
    if (atomic_open(o->a, path, err, sizeof err) != 0) {
        fprintf(stderr, "normscope: --%s %s\n", flag, err);
        free(o->a);
        o->a = NULL;
        return -1;
    }
    o->f = o->a->f;
    return 0;
}

/* Has a write failed (a full disk, /dev/full)? The first cause is kept. */
static int out_failed(outfile *o) { return o->a && atomic_failed(o->a); }

/* Finish the file: flush, fsync, rename into place; keep = 0 discards it
 * (an old file of that name stays). Returns 0 or -1 (message printed). */
static int out_close(outfile *o, int keep)
{
    if (!o->a)
        return 0;
    char err[ATOMIC_PATH_MAX + 128];
    int r = 0;
    if (keep && (r = atomic_commit(o->a, err, sizeof err)) != 0)
        fprintf(stderr, "normscope: --%s %s\n", o->flag, err);
    else if (!keep)
        atomic_abort(o->a);
    free(o->a);
    o->a = NULL;
    o->f = NULL;
    return r;
}

/* Two outputs named alike would replace each other's file. Standard
 * output and devices (/dev/null) may be shared: they are written in place
 * and the rows just interleave. */
static int same_output(const char *a, const char *b)
{
    struct stat st;
    if (!a || !b || strcmp(a, b) != 0 || strcmp(a, "-") == 0)
        return 0;
    return stat(a, &st) != 0 || S_ISREG(st.st_mode);
}

/* Every output checked before training starts, so a typo in a directory is
 * not found only after minutes of work. Returns 0, or 1 or 2 (printed). */
static int check_outputs(const cli_opts *o)
{
    char err[ATOMIC_PATH_MAX + 128];
    if (same_output(o->csv, o->jsonl) || same_output(o->save, o->csv) ||
        same_output(o->save, o->jsonl)) {
        const char *p = same_output(o->csv, o->jsonl) || same_output(o->save, o->csv) ? o->csv
                                                                                  : o->jsonl;
        fprintf(stderr, "normscope: %s is named by two of --csv, --jsonl and --save\n", p);
        return 2;
    }
    if (o->save && atomic_probe(o->save, err, sizeof err) != 0) {
        fprintf(stderr, "normscope: --save %s\n", err);
        return 1;
    }
    return 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The flags that fix the model's shape must agree with a checkpoint. */
static int check_against_checkpoint(const cli_opts *o, const ns_config *c)
{
    struct {
        unsigned bit;
        const char *flag;
        int mine, theirs;
    } f[] = {
        {CLI_SET_LAYERS, "--layers", o->cfg.n_layer, c->n_layer},
        {CLI_SET_DIM, "--dim", o->cfg.dim, c->dim},
        {CLI_SET_HEADS, "--heads", o->cfg.n_head, c->n_head},
        {CLI_SET_CONTEXT, "--context", o->cfg.context, c->context},
        {CLI_SET_BATCH, "--batch", o->cfg.batch, c->batch},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if ((o->set & f[i].bit) && f[i].mine != f[i].theirs) {
            fprintf(stderr, "normscope: --load %s: checkpoint has %s %d, the command line says %d\n",
                    o->load, f[i].flag, f[i].theirs, f[i].mine);
            return -1;
        }
    return 0;
}

/* Script commands in headless runs: settings go to the engine; there is
 * no one to resume a pause, so pause, resume and step are noted and
 * skipped; stop ends the run. */
typedef struct {
    engine *e, *twin; /* twin: the --compare run, or NULL */
    int stop;
} headless_ctx;

static void headless_cmd(void *p, const ns_command *c, int target)
{
    headless_ctx *h = p;
    /* the two-run rule (twin.h): "b: ..." acts on b, no prefix on both */
    if (twin_apply(h->e, h->twin, c, (twin_target)target) != CMD_FLOW)
        return;
    if (c->kind == CMD_STOP) {
        engine_note(h->e, "script: stop at step %ld", engine_steps_done(h->e));
        h->stop = 1;
    } else {
        engine_note(h->e, "script: pause, resume and step do nothing without the live view");
    }
}

/* What both front ends start from: the engine (loaded or new), the
 * --compare twin, and the opened outputs with their CSV header. */
typedef struct {
    ns_config cfg; /* the settings, with steps resolved */
    engine *e, *twin;
    outfile csv, jsonl;
} run_setup;

static void setup_free(run_setup *r, int keep_files)
{
    out_close(&r->csv, keep_files);
    out_close(&r->jsonl, keep_files);
    engine_free(r->e);
    engine_free(r->twin);
    r->e = r->twin = NULL;
}

/* live: a loaded run trains until stopped unless --steps says; headless, it
 * trains to the checkpoint's --steps. Returns 0, or the exit status after
 * printing one line. */
static int setup_run(cli_opts *o, const dataset *data, int live, run_setup *r)
{
    char err[512];
    memset(r, 0, sizeof *r);
    r->cfg = o->cfg;
    ns_config *cfg = &r->cfg;
    if (o->load) {
        r->e = engine_load(o->load, data, cfg, err, sizeof err);
        if (!r->e) {
            fprintf(stderr, "normscope: %s\n", err);
            return 2;
        }
        if (check_against_checkpoint(o, cfg) != 0) {
            setup_free(r, 0);
            return 2;
        }
        if (o->set & CLI_SET_STEPS)
            cfg->steps = o->cfg.steps;
        else if (live)
            cfg->steps = 0;
    } else {
        double need = model_bytes_needed(cfg);
        double have = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
        if (have > 0 && need > have) {
            fprintf(stderr,
                    "normscope: this model needs %.1f GiB of memory, the machine has %.1f GiB "
                    "(lower --batch, --context, --dim or --layers)\n",
                    need / 1073741824.0, have / 1073741824.0);
            return 2;
        }
        r->e = engine_create(cfg, data, err, sizeof err);
        if (!r->e) {
            fprintf(stderr, "normscope: %s\n", err);
            return 2;
        }
    }
    /* the --compare twin: the same seed, so the same initial weights (unless
     * the setting is about initialization) and the same batches */
    if (o->compare) {
        ns_config cb = *cfg;
        const char *why = NULL;
        if (o->load) {
            fprintf(stderr, "normscope: --compare cannot be used with --load\n");
        } else if (cli_apply_setting(&cb, o->compare, stderr) != 0) {
            /* reported */
        } else if ((why = config_check(&cb)) != NULL) {
            fprintf(stderr, "normscope: --compare %s: %s\n", o->compare, why);
        } else if (!(r->twin = engine_create(&cb, data, err, sizeof err))) {
            fprintf(stderr, "normscope: --compare: %s\n", err);
        }
        if (!r->twin) {
            setup_free(r, 0);
            return 2;
        }
    }
    /* --threads: each run (the twin too) gets its own pool, made here,
     * on this (the UI) thread, before any training thread starts */
    if (engine_set_threads(r->e, o->threads) != 0 ||
        (r->twin && engine_set_threads(r->twin, o->threads) != 0)) {
        fprintf(stderr, "normscope: --threads %d: cannot start the worker threads\n", o->threads);
        setup_free(r, 0);
        return 1;
    }
    long start = engine_steps_done(r->e);
    if ((!live || cfg->steps > 0) && cfg->steps <= start) {
        fprintf(stderr, "normscope: nothing to do: the run is at step %ld and --steps is %ld\n",
                start, cfg->steps);
        setup_free(r, 0);
        return 2;
    }
    int bad = check_outputs(o);
    if (bad) {
        setup_free(r, 0);
        return bad;
    }
    if (out_open(&r->csv, "csv", o->csv) != 0 || out_open(&r->jsonl, "jsonl", o->jsonl) != 0) {
        setup_free(r, 0);
        return 1;
    }
    if (r->csv.f) {
        int L = engine_config(r->e)->n_layer;
        metrics_csv_header_fields(r->csv.f, L, "");
        if (r->twin) {
            fputc(',', r->csv.f);
            metrics_csv_header_fields(r->csv.f, L, "b_");
        }
        fputc('\n', r->csv.f);
    }
    return 0;
}

static int run_headless(cli_opts *o, const dataset *data)
{
    char err[512];
    run_setup rs;
    int r = setup_run(o, data, 0, &rs);
    if (r)
        return r;
    ns_config cfg = rs.cfg;
    engine *e = rs.e, *twin = rs.twin;
    outfile csv = rs.csv, jsonl = rs.jsonl;
    long total = cfg.steps;
    const ns_config *live = engine_config(e);

    catch_stop_signals();

    int progress = !o->quiet && isatty(2);
    int status = 0;
    step_metrics m, mb;
    memset(&m, 0, sizeof m);
    memset(&mb, 0, sizeof mb);
    float last_val = NAN, last_val_b = NAN;
    double t0 = now_s(), last_print = 0;
    long done = 0, diverged = 0;
    long ev_seen = engine_event_count(e); /* the start event is not news */
    long ev_seen_b = twin ? engine_event_count(twin) : 0;
    int stop_on_diverge = cfg.on_div != ONDIV_CONTINUE;
    headless_ctx hc = {e, twin, 0};
    while (engine_steps_done(e) < total && !stop_requested) {
        if (o->script_loaded) {
            script_due(&o->script_s, engine_steps_done(e), headless_cmd, &hc);
            if (hc.stop)
                break;
        }
        int bad = engine_step(e, &m);
        if (twin)
            bad |= engine_step(twin, &mb);
        done++;
        diverged += bad;
        /* events (divergence, skipped steps, spikes) as they happen */
        for (; ev_seen < engine_event_count(e); ev_seen++) {
            ns_event ev;
            if (!o->quiet && engine_event_get(e, ev_seen, &ev) == 0)
                fprintf(stderr, "%snormscope: %s%s\n", progress ? "\r\033[K" : "",
                        twin ? "a: " : "", ev.text);
        }
        for (; twin && ev_seen_b < engine_event_count(twin); ev_seen_b++) {
            ns_event ev;
            if (!o->quiet && engine_event_get(twin, ev_seen_b, &ev) == 0)
                fprintf(stderr, "%snormscope: b: %s\n", progress ? "\r\033[K" : "", ev.text);
        }
        if (m.has_val)
            last_val = m.val_loss;
        if (twin && mb.has_val)
            last_val_b = mb.val_loss;
        if (csv.f) {
            metrics_csv_fields(csv.f, &m);
            if (twin) {
                fputc(',', csv.f);
                metrics_csv_fields(csv.f, &mb);
            }
            fputc('\n', csv.f);
        }
        if (jsonl.f) {
            metrics_jsonl_run(jsonl.f, &m, twin ? "a" : NULL);
            if (twin)
                metrics_jsonl_run(jsonl.f, &mb, "b");
        }
        /* a full disk: stop now, the message comes when the file is closed */
        if (out_failed(&csv) | out_failed(&jsonl)) {
            status = 1;
            break;
        }
        double t = now_s();
        if (progress && (t - last_print > 0.1 || m.step == total)) {
            double rate = done / (t - t0);
            double eta = rate > 0 ? (total - m.step) / rate : 0;
            fprintf(stderr, "\rstep %ld/%ld  loss %.4f  val %.4f  %.1f steps/s  ETA %d:%02d   ",
                    m.step, total, (double)m.loss, (double)last_val, rate, (int)eta / 60,
                    (int)eta % 60);
            last_print = t;
        }
        if (bad && stop_on_diverge) {
            if (progress)
                fputc('\n', stderr);
            const step_metrics *d = m.nonfinite || !twin ? &m : &mb;
            fprintf(stderr, "normscope: %sdiverged at step %ld (first non-finite: %s); stopping\n",
                    !twin ? "" : d == &m ? "run a " : "run b ", d->step,
                    d->fault[0] ? d->fault : "loss");
            status = 3;
            break;
        }
    }
    for (; ev_seen < engine_event_count(e); ev_seen++) {
        ns_event ev;
        if (!o->quiet && engine_event_get(e, ev_seen, &ev) == 0)
            fprintf(stderr, "%snormscope: %s\n", progress ? "\r\033[K" : "", ev.text);
    }
    if (progress)
        fputc('\n', stderr);
    double secs = now_s() - t0;
    if (out_close(&csv, 1) != 0)
        status = 1;
    if (out_close(&jsonl, 1) != 0)
        status = 1;
    if (o->save && status != 3) {
        if (engine_save(e, o->save, err, sizeof err) != 0) {
            fprintf(stderr, "normscope: %s\n", err);
            status = 1;
        }
    }
    if (!o->quiet) {
        live = engine_config(e);
        char valtxt[32] = "-", losstxt[32] = "-"; /* "-": no step ran (Ctrl-C first) */
        if (!isnan(last_val))
            snprintf(valtxt, sizeof valtxt, "%.4f", (double)last_val);
        if (done > 0)
            snprintf(losstxt, sizeof losstxt, "%.4f", (double)m.loss);
        fprintf(stderr,
                "normscope: %ld steps in %.1f s (%.1f steps/s, %.0f tokens/s); loss %s, "
                "val %s; %s, %s, %s, L=%d d=%d H=%d T=%d B=%d threads=%d\n",
                done, secs, secs > 0 ? done / secs : 0.0,
                secs > 0 ? done * (double)live->batch * live->context / secs : 0.0,
                losstxt, valtxt, norm_place_name(live->norm),
                norm_kind_name(live->norm_kind), numfmt_name(live->precision), live->n_layer,
                live->dim, live->n_head,
                live->context, live->batch, engine_threads(e));
    }
    if (twin && !o->quiet) {
        char valtxt[32] = "-", losstxt[32] = "-";
        if (!isnan(last_val_b))
            snprintf(valtxt, sizeof valtxt, "%.4f", (double)last_val_b);
        if (done > 0)
            snprintf(losstxt, sizeof losstxt, "%.4f", (double)mb.loss);
        fprintf(stderr, "normscope: b (%s): loss %s, val %s\n", o->compare, losstxt, valtxt);
    }
    if (diverged && status == 0 && !o->quiet)
        fprintf(stderr, "normscope: %ld diverged steps were skipped (--on-diverge continue)\n",
                diverged);
    if (stop_requested && status == 0) {
        fprintf(stderr, "normscope: interrupted at step %ld; outputs hold the steps done\n",
                engine_steps_done(e));
        status = 130;
    }
    engine_free(e);
    engine_free(twin);
    return status;
}

/* ---- the live view -----------------------------------------------------
 * The trainer thread (trainer.c) owns the engine while the dashboard
 * (tui_curses.c) runs; --csv/--jsonl rows are written on that thread after
 * each step; --save and the summary line come after it has stopped. */
typedef struct {
    outfile *csv, *jsonl;
} live_out;

static void live_row(void *ctx, const step_metrics *m)
{
    live_out *lo = ctx;
    if (lo->csv->f)
        metrics_csv_row(lo->csv->f, m);
    if (lo->jsonl->f)
        metrics_jsonl_row(lo->jsonl->f, m);
    /* note the cause of a failed write now, while errno still holds it; it
     * is reported when the file is closed */
    out_failed(lo->csv);
    out_failed(lo->jsonl);
}

/* --compare: one CSV row with b_ columns, two JSONL lines, as headless */
static void live_pair(void *ctx, const step_metrics *a, const step_metrics *b)
{
    live_out *lo = ctx;
    if (lo->csv->f) {
        metrics_csv_fields(lo->csv->f, a);
        fputc(',', lo->csv->f);
        metrics_csv_fields(lo->csv->f, b);
        fputc('\n', lo->csv->f);
    }
    if (lo->jsonl->f) {
        metrics_jsonl_run(lo->jsonl->f, a, "a");
        metrics_jsonl_run(lo->jsonl->f, b, "b");
    }
    out_failed(lo->csv); /* as live_row */
    out_failed(lo->jsonl);
}

/* The lesson's title and text, as the first lines of the event log. */
static void live_lesson_notes(engine *e, const ns_lesson *lesson)
{
    engine_note(e, "lesson %s: %s", lesson->name, lesson->title);
    const char *p = lesson->text;
    while (*p) {
        size_t len = strcspn(p, "\n");
        engine_note(e, "%.*s", (int)len, p);
        p += len + (p[len] == '\n');
    }
}

static int run_live(cli_opts *o, const dataset *data, const ns_lesson *lesson)
{
    char err[512];
    run_setup rs;
    int r = setup_run(o, data, 1, &rs);
    if (r)
        return r;
    ns_config cfg = rs.cfg;
    engine *e = rs.e, *twin = rs.twin;
    outfile csv = rs.csv, jsonl = rs.jsonl;
    if (lesson)
        live_lesson_notes(e, lesson);
    if (o->compare)
        engine_note(e, "--compare %s: run b trains in lockstep, shown at the right", o->compare);

    live_out lo = {&csv, &jsonl};
    trainer_opts to;
    memset(&to, 0, sizeof to);
    to.limit = cfg.steps;
    to.on_div = cfg.on_div;
    to.script = o->script_loaded ? &o->script_s : NULL;
    to.sample_every = 3.0;
    to.on_step = (csv.f || jsonl.f) ? live_row : NULL;
    to.ctx = &lo;
    to.twin = twin;
    to.label_b = o->compare;
    char label_a[32];
    if (o->compare) {
        cli_setting_label(&cfg, o->compare, label_a, sizeof label_a);
        to.label_a = label_a;
    }
    to.on_pair = (csv.f || jsonl.f) ? live_pair : NULL;
    trainer *t = trainer_create(e, &to, err, sizeof err);
    trainer_snapshot *snap = trainer_snapshot_new();
    if (!t || !snap) {
        fprintf(stderr, "normscope: %s\n", snap ? err : "out of memory");
        trainer_free(t);
        free(snap);
        out_close(&csv, 0);
        out_close(&jsonl, 0);
        engine_free(e);
        engine_free(twin);
        return 1;
    }
    tui_options uo = {o->ascii, o->no_color, o->bars_rel};
    tui_end end = tui_run(t, &uo, err, sizeof err); /* starts the trainer */
    trainer_stop(t); /* the engine is ours again */
    trainer_snapshot_copy(t, snap);
    const trainer_status *st = &snap->s;

    int status = 0;
    if (end == TUI_END_ERROR) {
        fprintf(stderr, "normscope: %s\n", err);
        trainer_free(t);
        free(snap);
        out_close(&csv, 0);
        out_close(&jsonl, 0);
        engine_free(e);
        engine_free(twin);
        return 1;
    }
    if (out_close(&csv, 1) != 0)
        status = 1;
    if (out_close(&jsonl, 1) != 0)
        status = 1;
    int diverged = st->state == TRAINER_DIVERGED;
    if (o->save && !diverged) {
        if (engine_save(e, o->save, err, sizeof err) != 0) {
            fprintf(stderr, "normscope: %s\n", err);
            status = 1;
        }
    } else if (o->save) {
        fprintf(stderr, "normscope: --save %s: not written, the run is diverged\n", o->save);
    }
    if (!o->quiet) {
        const ns_config *c = engine_config(e);
        double secs = st->run_seconds;
        long done = st->run_steps;
        char valtxt[32] = "-", losstxt[32];
        if (st->last_val_step > 0)
            snprintf(valtxt, sizeof valtxt, "%.4f", (double)st->last_val);
        /* the loss at the step the run is at ("-" after a re-init, say) */
        trainer_loss_text(st, 0, losstxt, sizeof losstxt);
        /* the headless summary's format: scripts and the bench read both */
        fprintf(stderr,
                "normscope: %ld steps in %.1f s (%.1f steps/s, %.0f tokens/s); loss %s, "
                "val %s; %s, %s, %s, L=%d d=%d H=%d T=%d B=%d threads=%d\n",
                done, secs, secs > 0 ? done / secs : 0.0,
                secs > 0 ? done * (double)c->batch * c->context / secs : 0.0,
                losstxt, valtxt, norm_place_name(c->norm),
                norm_kind_name(c->norm_kind), numfmt_name(c->precision), c->n_layer, c->dim,
                c->n_head, c->context, c->batch, engine_threads(e));
    }
    if (twin && !o->quiet) { /* as headless says it */
        char valtxt[32] = "-", losstxt[32];
        if (!isnan(st->last_val_b))
            snprintf(valtxt, sizeof valtxt, "%.4f", (double)st->last_val_b);
        trainer_loss_text(st, 1, losstxt, sizeof losstxt);
        fprintf(stderr, "normscope: b (%s): loss %s, val %s\n", o->compare, losstxt, valtxt);
    }
    if (end == TUI_END_SIGNAL && status == 0) {
        fprintf(stderr, "normscope: interrupted at step %ld\n", engine_steps_done(e));
        status = 130;
    } else if (diverged && status == 0) {
        status = 3;
    }
    trainer_free(t);
    free(snap);
    engine_free(e);
        engine_free(twin);
    return status;
}

static int run(cli_opts *o_, const ns_lesson *lesson);

/* --lesson NAME: the lesson's flags come first and the user's after them,
 * so the user's win; its script joins --script's; its compare is the
 * default of --compare. argv2 and words must live as long as o. */
static int setup_lesson(cli_opts *o, int argc, char **argv, ns_lesson *l, char ***argv2,
                        char **words)
{
    char err[512];
    if (lesson_load(o->lesson, l, err, sizeof err) != 0) {
        fprintf(stderr, "normscope: %s\n", err);
        return 2;
    }
    *words = strdup(l->flags);
    *argv2 = calloc((size_t)argc + sizeof l->flags / 2 + 2, sizeof **argv2);
    if (!*words || !*argv2) {
        fprintf(stderr, "normscope: out of memory\n");
        lesson_free(l);
        return 2;
    }
    int n = 0;
    (*argv2)[n++] = argv[0];
    for (char *t = strtok(*words, " \t"); t; t = strtok(NULL, " \t"))
        (*argv2)[n++] = t;
    for (int i = 1; i < argc; i++)
        (*argv2)[n++] = argv[i];
    int r = cli_parse(o, n, *argv2, stdout, stderr);
    if (r) {
        lesson_free(l);
        return r == 1 ? 1 : 2;
    }
    if (!o->compare && l->compare[0])
        o->compare = l->compare;
    return 0;
}

/* The lesson's script and --script's, in that order. */
static int merge_scripts(ns_script *dst, const ns_script *add)
{
    if (add->n == 0)
        return 0;
    script_entry *ne = realloc(dst->e, (size_t)(dst->n + add->n) * sizeof *ne);
    if (!ne)
        return -1;
    memcpy(ne + dst->n, add->e, (size_t)add->n * sizeof *ne);
    dst->e = ne;
    dst->n += add->n;
    return 0;
}

int main(int argc, char **argv)
{
    cli_opts o;
    int r = cli_parse(&o, argc, argv, stdout, stderr);
    if (r == 1)
        return 0;
    if (r)
        return 2;
    ns_lesson lesson;
    char **argv2 = NULL, *words = NULL;
    int have_lesson = 0;
    if (o.lesson && !strcmp(o.lesson, "list")) {
        lesson_list(stdout);
        return 0;
    }
    if (o.lesson) {
        r = setup_lesson(&o, argc, argv, &lesson, &argv2, &words);
        if (r) {
            free(argv2);
            free(words);
            return r == 1 ? 0 : 2;
        }
        have_lesson = 1;
    }
    int status = run(&o, have_lesson ? &lesson : NULL);
    if (have_lesson)
        lesson_free(&lesson);
    free(argv2);
    free(words);
    return status;
}

static int run(cli_opts *o_, const ns_lesson *lesson)
{
    cli_opts o = *o_;
    if (!o.headless && (!isatty(STDOUT_FILENO) || !isatty(STDIN_FILENO))) {
        fprintf(stderr, "normscope: the live view needs a terminal; use --headless to train "
                        "without one (see --help)\n");
        return 2;
    }
    dataset data;
    char err[512];
    if (o.data) {
        if (data_load_file(&data, o.data, err, sizeof err) != 0) {
            fprintf(stderr, "normscope: %s\n", err);
            return 2;
        }
    } else {
        data_builtin(&data);
    }
    int context = o.cfg.context;
    if (!o.load && data_check(&data, context, err, sizeof err) != 0) {
        fprintf(stderr, "normscope: %s\n", err);
        data_free(&data);
        return 2;
    }
    memset(&o.script_s, 0, sizeof o.script_s);
    o.script_s.high = -1;
    if (lesson && merge_scripts(&o.script_s, &lesson->script) != 0) {
        fprintf(stderr, "normscope: out of memory\n");
        data_free(&data);
        return 2;
    }
    if (o.script) {
        ns_script user;
        if (script_load(o.script, &user, err, sizeof err) != 0) {
            fprintf(stderr, "normscope: %s\n", err);
            script_free(&o.script_s);
            data_free(&data);
            return 2;
        }
        int bad = merge_scripts(&o.script_s, &user);
        script_free(&user);
        if (bad) {
            fprintf(stderr, "normscope: out of memory\n");
            script_free(&o.script_s);
            data_free(&data);
            return 2;
        }
    }
    o.script_loaded = o.script_s.n > 0;
    if (lesson && !o.quiet) {
        fprintf(stderr, "lesson %s: %s\n", lesson->name, lesson->title);
        if (lesson->text[0])
            fprintf(stderr, "%s\n", lesson->text);
        if (lesson->cite[0])
            fprintf(stderr, "%s\n", lesson->cite);
    }
    int status = o.headless ? run_headless(&o, &data) : run_live(&o, &data, lesson);
    script_free(&o.script_s);
    data_free(&data);
    return status;
}
