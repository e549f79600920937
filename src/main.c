/* main.c - normscope's entry point: parse flags, load data, open the
 * outputs and make the engines, then hand the run to the trainer
 * (trainer.c): on this thread headless, or on its own thread beside the
 * dashboard (tui*.c). The run itself (script, twin, divergence, events,
 * rows, summary) is the trainer's, the same for both; not here.
 *
 * Exit status: 0 done, 1 runtime error (an output could not be written),
 * 2 bad usage or input, 3 the run diverged (non-finite loss or gradients;
 * with --on-diverge continue, its last step was not finite), 4 the run
 * stalled (headless, --on-stall stop), 130 interrupted (the outputs hold
 * the steps done).
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
#include "plot.h"
#include "data.h"
#include "diagnose.h"
#include "engine.h"
#include "metrics.h"
#include "stopsig.h"
#include "resume.h"
#include "settings.h"
#include "stream.h"
#include "sweep.h"
#include "sysdep.h"
#include "tui_sweep.h"
#include "trainer.h"
#include "tui.h"

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
    if (atomicio_open(o->a, path, err, sizeof err) != 0) {
        fprintf(stderr, "normscope: --%s %s\n", flag, err);
        free(o->a);
        o->a = NULL;
        return -1;
    }
    o->f = o->a->f;
    return 0;
}

/* Finish the file: flush, fsync, rename into place; keep = 0 discards it
 * (an old file of that name stays). Returns 0 or -1 (message printed). */
static int out_close(outfile *o, int keep)
{
    if (!o->a)
        return 0;
    char err[ATOMIC_PATH_MAX + 128];
    int r = 0;
    if (keep && (r = atomicio_commit(o->a, err, sizeof err)) != 0)
        fprintf(stderr, "normscope: --%s %s\n", o->flag, err);
    else if (!keep)
        atomicio_abort(o->a);
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
    if (o->save && atomicio_probe(o->save, err, sizeof err) != 0) {
        fprintf(stderr, "normscope: --save %s\n", err);
        return 1;
    }
    return 0;
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

/* What both front ends start from: the engine (loaded or new), the
 * --compare twin, and the opened outputs with their CSV header. */
typedef struct {
    ns_config cfg; /* the settings, with steps resolved */
    engine *e, *twin;
    ns_pool *pair; /* steps a and the twin side by side (trainer_opts.pair) */
    outfile csv, jsonl;
} run_setup;

static void setup_free(run_setup *r, int keep_files)
{
    out_close(&r->csv, keep_files);
    out_close(&r->jsonl, keep_files);
    engine_free(r->e);
    engine_free(r->twin);
    pool_free(r->pair);
    r->e = r->twin = NULL;
    r->pair = NULL;
}

/* live: a loaded run trains until stopped unless --steps says; headless, it
 * trains to the checkpoint's --steps. Returns 0, or the exit status after
 * printing one line. */
/* The diagnosis' state a checkpoint carries, checked before the run
 * starts: a malformed one refuses the file, as any corrupt field does.
 * 0, or 2 after one line. */
static int check_diag_state(const cli_opts *o, const engine *e)
{
    size_t n;
    const uint8_t *p = engine_diag_state(e, &n);
    char why[160];
    diag *d = p ? malloc(sizeof *d) : NULL;
    if (!p)
        return 0;
    int r = d ? diag_state_load(d, p, n, why, sizeof why) : -1;
    if (r != 0)
        fprintf(stderr, "normscope: --load %s: %s\n", o->load, d ? why : "out of memory");
    free(d);
    return r ? 2 : 0;
}

/* The run from --load, or a new one after checking it fits in memory.
 * Returns 0, or the exit status after printing one line. */
static int open_engine(cli_opts *o, const dataset *data, int live, run_setup *r)
{
    char err[512];
    ns_config *cfg = &r->cfg;
    if (o->load) {
        r->e = engine_load(o->load, data, cfg, err, sizeof err);
        if (!r->e) {
            fprintf(stderr, "normscope: %s\n", err);
            return 2;
        }
        if (check_diag_state(o, r->e) != 0 || check_against_checkpoint(o, cfg) != 0 ||
            resume_check_data(o, r->e, data, stderr) ||
            resume_apply_flags(o, cfg, r->e, o->quiet ? NULL : stderr, stderr) != 0)
            return 2;
        if (o->set & CLI_SET_STEPS)
            cfg->steps = o->cfg.steps;
        else if (live)
            cfg->steps = 0;
        return 0;
    }
    double need = trainer_bytes_needed(cfg, NULL, live);
    double have = engine_machine_bytes();
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
    return 0;
}

/* The --compare twin: the same seed, so the same initial weights (unless
 * the setting is about initialization) and the same batches. Returns 0,
 * or 2 after printing why not. */
static int open_twin(cli_opts *o, const dataset *data, run_setup *r)
{
    char err[512];
    ns_config cb = r->cfg;
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
    return r->twin ? 0 : 2;
}

/* live: a loaded run trains until stopped unless --steps says; headless, it
 * trains to the checkpoint's --steps. Returns 0, or the exit status after
 * printing one line (nothing is left open then). */
static int setup_run(cli_opts *o, const dataset *data, int live, run_setup *r)
{
    memset(r, 0, sizeof *r);
    r->cfg = o->cfg;
    int bad = open_engine(o, data, live, r);
    if (!bad && o->compare)
        bad = open_twin(o, data, r);
    /* --threads: each run gets its own pool, made here, on this (the UI)
     * thread, before any training thread starts. With a twin and more
     * than one thread, a and b step side by side, each on its share */
    sigset_t ui;
    trainer_ui_signals(&ui);
    int ta = o->threads, tb = o->threads, pair = r->twin && o->threads > 1;
    if (pair) {
        ta = (o->threads + 1) / 2;
        tb = o->threads / 2;
    }
    if (!bad && ((pair && !(r->pair = pool_create(2, &ui))) ||
                 engine_set_threads(r->e, ta, &ui) != 0 ||
                 (r->twin && engine_set_threads(r->twin, tb, &ui) != 0))) {
        fprintf(stderr, "normscope: --threads %d: cannot start the worker threads\n", o->threads);
        bad = 1;
    }
    if (!bad) { /* the settings in force: a resumed run's are the checkpoint's */
        ns_config now = *engine_config(r->e);
        now.on_div = r->cfg.on_div;
        bad = cli_check_applies(o, &now, stderr);
    }
    long start = r->e ? engine_steps_done(r->e) : 0;
    if (!bad && (!live || r->cfg.steps > 0) && r->cfg.steps <= start) {
        fprintf(stderr, "normscope: nothing to do: the run is at step %ld and --steps is %ld\n",
                start, r->cfg.steps);
        bad = 2;
    }
    if (!bad)
        bad = check_outputs(o);
    if (!bad &&
        (out_open(&r->csv, "csv", o->csv) != 0 || out_open(&r->jsonl, "jsonl", o->jsonl) != 0))
        bad = 1;
    if (bad)
        setup_free(r, 0);
    return bad;
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

/* The trainer's options for this run, headless or live. */
static trainer_opts run_options(cli_opts *o, const dataset *data, run_setup *rs, char *label_a,
                                size_t n)
{
    trainer_opts to;
    memset(&to, 0, sizeof to);
    to.limit = rs->cfg.steps;
    to.on_div = rs->cfg.on_div;
    to.on_stall = o->on_stall;
    /* the stall rule's plateau: a model that knows only byte frequencies */
    to.plateau = diag_unigram_entropy(data->bytes, data->n_train);
    to.script = o->script_run;
    to.twin = rs->twin;
    to.pair = rs->pair;
    to.csv = rs->csv.a;
    to.jsonl = rs->jsonl.a;
    to.label_b = o->compare;
    if (o->compare) {
        settings_label(&rs->cfg, o->compare, label_a, n);
        to.label_a = label_a;
    }
    if (o->headless) {
        to.log = stderr;
        to.quiet = o->quiet;
        to.progress = !o->quiet && isatty(2);
        to.interrupt = &stopsig_requested;
    } else {
        to.sample_every = 3.0;
    }
    to.no_pause = o->no_pause;
    return to;
}

/* --save of a run that ended diverged: the newest snapshot before the
 * divergence, and which step it is. 0, or 1 (said). */
static int save_diverged(engine *e, const char *path)
{
    char err[512];
    long at = engine_steps_done(e), good = engine_rewind(e);
    if (good < 0) {
        fprintf(stderr, "normscope: --save %s: not written, no snapshot before step %ld\n", path,
                at);
        return 1;
    }
    if (engine_save(e, path, err, sizeof err) != 0) {
        fprintf(stderr, "normscope: %s\n", err);
        return 1;
    }
    /* how close it is to the limit, and an earlier one clear of it */
    char room[320];
    trainer_rewind_note(e, at, 0, room, sizeof room);
    fprintf(stderr, "normscope: --save %s: the run diverged; wrote the snapshot of %s\n", path,
            room);
    return 0;
}

/* The end of either run: the outputs committed, --save, the summary and
 * the exit status. interrupted: a signal ended the run. */
static int finish_run(const cli_opts *o, run_setup *rs, trainer *t, int interrupted)
{
    char err[512];
    trainer_snapshot *snap = snapshot_new();
    if (!snap) {
        fprintf(stderr, "normscope: out of memory\n");
        return 1;
    }
    trainer_snapshot_copy(t, snap);
    int stopped = snap->s.state == TRAINER_DIVERGED; /* on its divergence */
    int diverged = snapshot_ended_diverged(&snap->s); /* or --on-diverge continue's last step */
    int stalled = snap->s.stall_stopped;
    int status = snap->s.write_failed ? 1 : 0;
    free(snap);
    if (out_close(&rs->csv, 1) != 0)
        status = 1;
    if (out_close(&rs->jsonl, 1) != 0)
        status = 1;
    if (o->save && trainer_diag_to_engine(t, rs->e) != 0) {
        fprintf(stderr, "normscope: --save %s: out of memory\n", o->save);
        status = 1;
    }
    if (o->save && !diverged) {
        if (engine_save(rs->e, o->save, err, sizeof err) != 0) {
            fprintf(stderr, "normscope: %s\n", err);
            status = 1;
        }
    } else if (o->save && save_diverged(rs->e, o->save) != 0) {
        status = 1;
    }
    if (!o->quiet)
        trainer_summary(t, stderr);
    /* headless, a run that stopped on its divergence was not ended by
     * the signal that came with it */
    if (o->headless && stopped)
        interrupted = 0;
    if (interrupted && status == 0) {
        fprintf(stderr, "normscope: interrupted at step %ld; outputs hold the steps done\n",
                engine_steps_done(rs->e));
        status = 130;
    } else if (diverged && status == 0) {
        status = 3;
    } else if (stalled && status == 0) {
        status = 4;
    }
    return status;
}

/* Headless: the trainer on this thread; live: the trainer thread
 * (trainer.c) while the dashboard (tui_curses.c) runs. Either way the
 * trainer writes the rows; --save and the summary come after it stopped. */
/* The live view's options from the flags (and a lesson's panel text):
 * one place, whichever view (a run, a followed stream, a sweep) they go to */
static tui_options ui_options(const cli_opts *o, const ns_lesson *lesson)
{
    tui_options uo = {o->ascii, o->no_color, lesson ? lesson->title : NULL,
                      lesson ? lesson->text : NULL, o->bars_rel, o->smooth,
                      lesson && lesson->sweep[0] ? &lesson->script : NULL,
                      NULL, lesson ? lesson->reveal : 0, o->light};
    return uo;
}

static int run_training(cli_opts *o, const dataset *data, const ns_lesson *lesson)
{
    char err[512], label_a[32];
    run_setup rs;
    int r = setup_run(o, data, !o->headless, &rs);
    if (r)
        return r;
    if (!o->headless && lesson)
        live_lesson_notes(rs.e, lesson);
    if (!o->headless && o->compare)
        engine_note(rs.e, "--compare %s: run b trains in lockstep, shown at the right", o->compare);
    trainer_opts to = run_options(o, data, &rs, label_a, sizeof label_a);
    if (!o->headless) /* e's copy of the CSV; without one, e writes the loss history */
        to.spool = tmpfile();
    trainer *t = trainer_create(rs.e, &to, err, sizeof err);
    if (!t) {
        fprintf(stderr, "normscope: %s\n", err);
        if (to.spool)
            fclose(to.spool);
        setup_free(&rs, 0);
        return 1;
    }
    int interrupted = 0;
    if (o->headless) {
        stopsig_catch();
        trainer_run(t);
        interrupted = stopsig_requested;
    } else {
        tui_options uo = ui_options(o, lesson);
        uo.spool = to.spool;
        tui_end end = tui_run(t, &uo, err, sizeof err); /* starts the trainer */
        trainer_stop(t); /* the engine is ours again */
        if (end == TUI_END_ERROR) {
            fprintf(stderr, "normscope: %s\n", err);
            trainer_free(t);
            setup_free(&rs, 0);
            return 1;
        }
        interrupted = end == TUI_END_SIGNAL;
    }
    int status = finish_run(o, &rs, t, interrupted);
    trainer_free(t);
    if (to.spool)
        fclose(to.spool);
    setup_free(&rs, 1);
    return status;
}

static int run(cli_opts *o_, const ns_lesson *lesson);

/* A build without curses (make CURSES=0): a run or a stream that wants
 * the live view stops here, before anything starts, with one line. */
static int live_missing(const cli_opts *o)
{
    if (o->headless || tui_live_available())
        return 0;
    fprintf(stderr, "normscope: %s\n", TUI_NO_LIVE);
    return 1;
}

/* The sweep's live view; without curses a sweep shows its table as with
 * --headless (the view only watches runs that go on alike). */
static sweep_live_fn sweep_view(void) { return tui_live_available() ? tui_sweep_live : NULL; }

/* --follow FILE: a metrics stream is shown instead of a run (stream.c,
 * tui_follow.c); the exit status is theirs. */
static int run_follow(const cli_opts *o)
{
    if (o->headless) {
        stopsig_catch();
        long steps = (o->set & CLI_SET_STEPS) ? o->cfg.steps : 0;
        return stream_headless(o->follow, steps, o->csv, o->quiet, &stopsig_requested);
    }
    if (live_missing(o))
        return 2;
    if (!isatty(STDOUT_FILENO) || !isatty(STDIN_FILENO)) {
        fprintf(stderr, "normscope: --follow needs a terminal; add --headless for a summary\n");
        return 2;
    }
    tui_options uo = ui_options(o, NULL);
    char err[512];
    tui_end end = tui_follow(o->follow, &uo, err, sizeof err);
    if (end == TUI_END_ERROR)
        fprintf(stderr, "normscope: %s\n", err);
    return end == TUI_END_ERROR ? 1 : end == TUI_END_SIGNAL ? 130 : 0;
}

/* Are the runs' settings the lesson's own? Its flags alone (with the
 * sweep's SPEC for a sweep lesson) are parsed again, and every setting a
 * checkpoint records is compared with the run's; data, a checkpoint to
 * start from, a script or a twin of the user's change the runs too. What
 * a lesson says of its results ("if own:" lines) was measured with its
 * own flags: other flags get its "if !own:" lines instead. */
static int lesson_own(const ns_lesson *l, const cli_opts *run, char *argv0, const char *spec)
{
    char *words = strdup(l->flags), *av[LESSON_MAX_WORDS + 4];
    FILE *quiet = fopen("/dev/null", "w");
    int n = words ? lesson_words(argv0, words, av, NULL) : 0;
    if (spec) {
        av[n++] = "--sweep";
        av[n++] = (char *)spec;
    }
    cli_opts base;
    int own = words && quiet && cli_parse(&base, n, av, quiet, quiet) == 0 && !run->load &&
              !run->script && (!run->data) == (!base.data) &&
              (!run->data || !strcmp(run->data, base.data)) &&
              (!run->compare || !strcmp(run->compare, l->compare));
    for (int i = 0; own && i < settings_count(); i++) {
        const ns_setting *s = settings_row(i);
        char a[96], b[96];
        if (!s->ckpt)
            continue;
        settings_format(s, &run->cfg, a, sizeof a);
        settings_format(s, &base.cfg, b, sizeof b);
        own = !strcmp(a, b);
    }
    if (quiet)
        fclose(quiet);
    free(words);
    return own;
}

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
    *argv2 = calloc((size_t)argc + LESSON_MAX_WORDS + 2, sizeof **argv2);
    if (!*words || !*argv2) {
        fprintf(stderr, "normscope: out of memory\n");
        lesson_free(l);
        return 2;
    }
    int n = lesson_words(argv[0], *words, *argv2, NULL);
    for (int i = 1; i < argc; i++)
        (*argv2)[n++] = argv[i];
    int r = cli_parse(o, n, *argv2, stdout, stderr);
    char spec[sizeof l->compare];
    snprintf(spec, sizeof spec, "%s", o->compare ? o->compare : l->compare);
    int own = r == 0 && lesson_own(l, o, argv[0], NULL);
    lesson_free(l);
    if (r)
        return r == 1 ? 1 : 2;
    /* again, with the lines that hold for the runs' settings: a question
     * written for 24 layers is not asked of -L 6, one about DeepNorm not of
     * --compare norm=pre (a bad spec is the twin's to report, once) */
    ns_config cb = o->cfg;
    FILE *quiet = fopen("/dev/null", "w");
    int have_b = spec[0] && quiet && cli_apply_setting(&cb, spec, quiet) == 0;
    if (quiet)
        fclose(quiet);
    if (lesson_load_for(o->lesson, &o->cfg, have_b ? &cb : NULL, own, l, err, sizeof err) != 0) {
        fprintf(stderr, "normscope: %s\n", err);
        return 2;
    }
    if (!o->compare && l->compare[0])
        o->compare = l->compare;
    return 0;
}

/* The lesson's title, text and citations on stderr, before it runs. */
static void lesson_notes(const ns_lesson *l)
{
    fprintf(stderr, "lesson %s: %s\n", l->name, l->title);
    if (l->text[0])
        fprintf(stderr, "%s\n", l->text);
    if (l->cite[0])
        fprintf(stderr, "%s\n", l->cite);
}

/* A sweep, live on a terminal unless --headless (sweep.c decides) */
static int run_sweep(const cli_opts *o, int argc, char **argv)
{
    tui_options uo = ui_options(o, NULL);
    return sweep_main(o, argc, argv, sweep_view(), &uo);
}

/* A headless sweep lesson's notes and questions with at in [from, to], as
 * its live view words them ("at the start: ", "18 of 18 ended: "), on
 * stderr with its other notes: those at 0 before the runs, the rest once
 * all n have ended. */
static void lesson_at_lines(const ns_lesson *l, long from, long to, long n)
{
    for (int i = 0; i < l->script.n; i++) {
        const script_entry *e = &l->script.e[i];
        char b[NS_CMD_TEXT + 64];
        if (e->at < from || e->at > to)
            continue;
        lesson_sweep_line(e, n, b, sizeof b);
        fprintf(stderr, "%s\n", b);
    }
}

/* A sweep lesson runs through sweep_main, the one entry point of --sweep:
 * its command line is the lesson's flags, --sweep SPEC, then the user's
 * flags without --lesson (so the user's win, and --sweep-out, --jobs and
 * --headless reach the sweep as they would on a --sweep). */
static int run_lesson_sweep(const cli_opts *o, const ns_lesson *l, int argc, char **argv)
{
    if (o->sweep || o->sweep_collect) {
        fprintf(stderr, "normscope: --lesson %s is a sweep of its own; it takes no --sweep or "
                        "--sweep-collect\n", l->name);
        return 2;
    }
    char *words = strdup(l->flags);
    char **av = calloc((size_t)argc + LESSON_MAX_WORDS + 4, sizeof *av);
    if (!words || !av) {
        free(words);
        free(av);
        fprintf(stderr, "normscope: out of memory\n");
        return 2;
    }
    int n = lesson_words(argv[0], words, av, NULL);
    av[n++] = "--sweep";
    av[n++] = (char *)l->sweep;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--lesson"))
            i++;
        else if (strncmp(argv[i], "--lesson=", 9))
            av[n++] = argv[i];
    }
    cli_opts so;
    ns_lesson lo; /* again, with the lines that hold for the runs' common settings */
    char err[512];
    int r = cli_parse(&so, n, av, stdout, stderr);
    char what[sizeof l->name + 16];
    snprintf(what, sizeof what, "--lesson %s", l->name);
    if (r == 0 && sweep_refuse_common(&so, what)) /* before its text: nothing runs */
        r = 2;
    if (r == 0 && lesson_load_for(l->src, &so.cfg, NULL, lesson_own(l, &so, argv[0], l->sweep),
                                  &lo, err, sizeof err) != 0) {
        fprintf(stderr, "normscope: %s\n", err);
        r = 2;
    } else if (r == 0) {
        sweep_spec sp;
        int parsed = sweep_spec_parse(l->sweep, &sp, err, sizeof err) == 0;
        long runs = parsed ? sweep_spec_runs(&sp) : 0;
        if (parsed)
            sweep_spec_free(&sp);
        int say = so.headless && !so.quiet;
        if (!so.quiet)
            lesson_notes(&lo);
        if (say)
            lesson_at_lines(&lo, 0, 0, runs);
        tui_options uo = ui_options(&so, &lo); /* the live view shows its notes too */
        r = sweep_main(&so, n, av, sweep_view(), &uo);
        if (say && r == 0)
            lesson_at_lines(&lo, 1, runs, runs);
        lesson_free(&lo);
    } else {
        r = r == 1 ? 0 : 2;
    }
    free(words);
    free(av);
    return r;
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

/* Is NAME a sweep lesson? Then l holds it (free it); otherwise nothing is
 * kept (an unknown or broken lesson is setup_lesson's to report). */
static int is_sweep_lesson(const char *name, ns_lesson *l)
{
    char err[512];
    if (lesson_load(name, l, err, sizeof err) != 0)
        return 0;
    if (l->sweep[0])
        return 1;
    lesson_free(l);
    return 0;
}

/* NORMSCOPE_KERNELS: which build of the kernels runs (engine.h); both give
 * the same bits, so this only trades speed for a check of the portable
 * one. A bad value is refused, not ignored. */
static int select_kernels(void)
{
    const char *k = getenv("NORMSCOPE_KERNELS");
    int r = engine_select_kernels(k);
    if (r == -1)
        fprintf(stderr, "normscope: NORMSCOPE_KERNELS=%s: use generic or avx2\n", k);
    else if (r == -2)
        fprintf(stderr, "normscope: NORMSCOPE_KERNELS=avx2: this CPU lacks AVX2 or FMA\n");
    return r;
}

int main(int argc, char **argv)
{
    cli_opts o;
    /* a sweep's run where the kernel cannot end it with its sweep (macOS) */
    sysdep_parent_watch();
    int r = cli_parse(&o, argc, argv, stdout, stderr);
    if (r == 1)
        return 0;
    if (r || select_kernels())
        return 2;
    if (o.plot) {
        plot_args pa = {o.plot, o.out, o.kind, o.size, o.step, o.rows, o.cols, o.mono, o.logy,
                        o.smooth, o.vmin, o.vmax, o.metric, o.scale, o.light};
        return plot_main(&pa, stderr);
    }
    if (o.follow)
        return run_follow(&o);
    if (o.check_lesson) /* the whole lesson checked, nothing run */
        return lesson_check(o.check_lesson, stdout, stderr);
    if (o.lesson && !strcmp(o.lesson, "list")) {
        lesson_list(stdout);
        return 0;
    }
    ns_lesson lesson;
    if (o.lesson && is_sweep_lesson(o.lesson, &lesson)) {
        r = run_lesson_sweep(&o, &lesson, argc, argv);
        lesson_free(&lesson);
        return r;
    }
    if (sweep_requested(&o)) /* --sweep, --sweep-collect: sweep.c; live: tui_sweep.c */
        return run_sweep(&o, argc, argv);
    char **argv2 = NULL, *words = NULL;
    int have_lesson = 0;
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
    if (live_missing(&o))
        return 2;
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
    ns_script script;
    memset(&script, 0, sizeof script);
    script.high = -1;
    if (lesson && merge_scripts(&script, &lesson->script) != 0) {
        fprintf(stderr, "normscope: out of memory\n");
        data_free(&data);
        return 2;
    }
    if (o.script) {
        ns_script user;
        if (command_script_load(o.script, &user, err, sizeof err) != 0) {
            fprintf(stderr, "normscope: %s\n", err);
            command_script_free(&script);
            data_free(&data);
            return 2;
        }
        int bad = merge_scripts(&script, &user);
        command_script_free(&user);
        if (bad) {
            fprintf(stderr, "normscope: out of memory\n");
            command_script_free(&script);
            data_free(&data);
            return 2;
        }
    }
    o.script_run = script.n > 0 ? &script : NULL;
    if (lesson && !o.quiet)
        lesson_notes(lesson);
    int status = run_training(&o, &data, lesson);
    command_script_free(&script);
    data_free(&data);
    return status;
}
