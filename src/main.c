/* main.c - normscope's entry point: parse flags, load data, and run the
 * headless trainer (the live view comes with the [live] work).
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

#include "cli.h"
#include "command.h"
#include "data.h"
#include "engine.h"
#include "metrics.h"
#include "model.h"

static volatile sig_atomic_t stop_requested;
static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

/* An output file written atomically: a temp file beside it, renamed over
 * it on success. "-" is stdout; an existing non-regular file (a FIFO,
 * /dev/full, /dev/null) is written in place, since it cannot be renamed over. */
typedef struct {
    const char *path;
    const char *flag;
    char tmp[4096];
    FILE *f;
    int direct;
} outfile;

static int out_open(outfile *o, const char *flag, const char *path)
{
    memset(o, 0, sizeof *o);
    o->path = path;
    o->flag = flag;
    if (!path)
        return 0;
    if (!strcmp(path, "-")) {
        o->f = stdout;
        o->direct = 1;
        return 0;
    }
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        fprintf(stderr, "normscope: --%s %s: is a directory\n", flag, path);
        return -1;
    }
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        o->f = fopen(path, "w");
        o->direct = 1;
    } else {
        if (snprintf(o->tmp, sizeof o->tmp, "%s.tmp.%ld", path, (long)getpid()) >=
            (int)sizeof o->tmp) {
            fprintf(stderr, "normscope: --%s: path too long\n", flag);
            return -1;
        }
        o->f = fopen(o->tmp, "w");
    }
    if (!o->f) {
        fprintf(stderr, "normscope: --%s %s: %s\n", flag, path, strerror(errno));
        return -1;
    }
    return 0;
}

/* Finish the file: flush, check for write errors, rename into place.
 * keep = 0 discards a temp file. Returns 0 or -1 (message printed). */
static int out_close(outfile *o, int keep)
{
    if (!o->f)
        return 0;
    int ok = fflush(o->f) == 0 && !ferror(o->f);
    int e = errno;
    if (o->f != stdout)
        ok = (fclose(o->f) == 0) && ok;
    o->f = NULL;
    if (!o->direct) {
        if (ok && keep && rename(o->tmp, o->path) != 0) {
            e = errno;
            ok = 0;
        }
        if (!ok || !keep)
            unlink(o->tmp);
    }
    if (!ok) {
        fprintf(stderr, "normscope: --%s %s: %s\n", o->flag, o->path, strerror(e ? e : EIO));
        return -1;
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
    engine *e;
    int stop;
} headless_ctx;

static void headless_cmd(void *p, const ns_command *c)
{
    headless_ctx *h = p;
    if (command_apply(h->e, c) != CMD_FLOW)
        return;
    if (c->kind == CMD_STOP) {
        engine_note(h->e, "script: stop at step %ld", engine_steps_done(h->e));
        h->stop = 1;
    } else {
        engine_note(h->e, "script: pause, resume and step do nothing without the live view");
    }
}

static int run_headless(cli_opts *o, const dataset *data)
{
    char err[512];
    engine *e;
    ns_config cfg = o->cfg;
    if (o->load) {
        e = engine_load(o->load, data, &cfg, err, sizeof err);
        if (!e) {
            fprintf(stderr, "normscope: %s\n", err);
            return 2;
        }
        if (check_against_checkpoint(o, &cfg) != 0) {
            engine_free(e);
            return 2;
        }
        if (o->set & CLI_SET_STEPS)
            cfg.steps = o->cfg.steps;
    } else {
        double need = model_bytes_needed(&cfg);
        double have = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
        if (have > 0 && need > have) {
            fprintf(stderr,
                    "normscope: this model needs %.1f GiB of memory, the machine has %.1f GiB "
                    "(lower --batch, --context, --dim or --layers)\n",
                    need / 1073741824.0, have / 1073741824.0);
            return 2;
        }
        e = engine_create(&cfg, data, err, sizeof err);
        if (!e) {
            fprintf(stderr, "normscope: %s\n", err);
            return 2;
        }
    }
    long start = engine_steps_done(e);
    long total = cfg.steps;
    if (total <= start) {
        fprintf(stderr, "normscope: nothing to do: the run is at step %ld and --steps is %ld\n",
                start, total);
        engine_free(e);
        return 2;
    }

    outfile csv, jsonl;
    if (out_open(&csv, "csv", o->csv) != 0) {
        engine_free(e);
        return 1;
    }
    if (out_open(&jsonl, "jsonl", o->jsonl) != 0) {
        out_close(&csv, 0);
        engine_free(e);
        return 1;
    }
    const ns_config *live = engine_config(e);
    if (csv.f)
        metrics_csv_header(csv.f, live->n_layer);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    int progress = !o->quiet && isatty(2);
    int status = 0;
    step_metrics m;
    memset(&m, 0, sizeof m);
    float last_val = NAN;
    double t0 = now_s(), last_print = 0;
    long done = 0, diverged = 0;
    long ev_seen = engine_event_count(e); /* the start event is not news */
    int stop_on_diverge = cfg.on_div != ONDIV_CONTINUE;
    headless_ctx hc = {e, 0};
    while (engine_steps_done(e) < total && !stop_requested) {
        if (o->script_loaded) {
            script_due(&o->script_s, engine_steps_done(e), headless_cmd, &hc);
            if (hc.stop)
                break;
        }
        int bad = engine_step(e, &m);
        done++;
        diverged += bad;
        /* events (divergence, skipped steps, spikes) as they happen */
        for (; ev_seen < engine_event_count(e); ev_seen++) {
            ns_event ev;
            if (!o->quiet && engine_event_get(e, ev_seen, &ev) == 0)
                fprintf(stderr, "%snormscope: %s\n", progress ? "\r\033[K" : "", ev.text);
        }
        if (m.has_val)
            last_val = m.val_loss;
        if (csv.f)
            metrics_csv_row(csv.f, &m);
        if (jsonl.f)
            metrics_jsonl_row(jsonl.f, &m);
        if ((csv.f && ferror(csv.f)) || (jsonl.f && ferror(jsonl.f))) {
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
            fprintf(stderr, "normscope: diverged at step %ld (first non-finite: %s); stopping\n",
                    m.step, m.fault[0] ? m.fault : "loss");
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
        char valtxt[32] = "-";
        if (!isnan(last_val))
            snprintf(valtxt, sizeof valtxt, "%.4f", (double)last_val);
        fprintf(stderr,
                "normscope: %ld steps in %.1f s (%.1f steps/s, %.0f tokens/s); loss %.4f, "
                "val %s; %s, %s, %s, L=%d d=%d H=%d T=%d B=%d\n",
                done, secs, secs > 0 ? done / secs : 0.0,
                secs > 0 ? done * (double)live->batch * live->context / secs : 0.0,
                (double)m.loss, valtxt, norm_place_name(live->norm),
                norm_kind_name(live->norm_kind), numfmt_name(live->precision), live->n_layer,
                live->dim, live->n_head,
                live->context, live->batch);
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
    return status;
}

int main(int argc, char **argv)
{
    cli_opts o;
    int r = cli_parse(&o, argc, argv, stdout, stderr);
    if (r == 1)
        return 0;
    if (r)
        return 2;
    if (!o.headless) {
        fprintf(stderr, "normscope: the live view is not built yet; run with --headless "
                        "(see --help)\n");
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
    if (o.script) {
        if (script_load(o.script, &o.script_s, err, sizeof err) != 0) {
            fprintf(stderr, "normscope: %s\n", err);
            data_free(&data);
            return 2;
        }
        o.script_loaded = 1;
    }
    int status = run_headless(&o, &data);
    if (o.script_loaded)
        script_free(&o.script_s);
    data_free(&data);
    return status;
}
