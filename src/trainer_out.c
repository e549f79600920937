/* trainer_out.c - what a run writes: the CSV header, each step's CSV row
 * and JSONL line(s) (and the e key's copy), the headless progress line,
 * the engines' events on the log, and the summary line at the end
 * (scripts and the bench read it).
 *
 * Not here: opening or committing the files (the caller's, with
 * atomicio.c), the diagnosis' lines after the summary (trainer_diag.c).
 */
#include "trainer_int.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/resource.h>

#include "nstime.h"
#include "numfmt.h"

/* One CSV row: run a's columns, then run b's when there is one. */
static void csv_row(FILE *csv, const step_metrics *a, const step_metrics *b)
{
    metrics_csv_fields(csv, a);
    if (b) {
        fputc(',', csv);
        metrics_csv_fields(csv, b);
    }
    metrics_csv_state_fields(csv, a);
    if (b)
        metrics_csv_state_fields(csv, b);
    fputc('\n', csv);
}

/* The step's CSV row and JSONL line(s), flushed. A failed write (a full disk) is
 * noted now, while errno holds its cause; the file reports it when
 * committed, and a headless run stops (no one would see the rest). */
void trainer_write_rows(trainer *t)
{
    const step_metrics *b = t->o.twin ? &t->run[1].m : NULL;
    FILE *csv = t->o.csv ? t->o.csv->f : NULL, *js = t->o.jsonl ? t->o.jsonl->f : NULL;
    if (csv)
        csv_row(csv, &t->run[0].m, b);
    if (t->o.spool) { /* the e key's copy: one write a step too */
        csv_row(t->o.spool, &t->run[0].m, b);
        fflush(t->o.spool);
    }
    if (js) {
        metrics_jsonl_run(js, &t->run[0].m, b ? "a" : NULL);
        if (b)
            metrics_jsonl_run(js, b, "b");
    }
    /* whole rows reach the file as they are made, for whoever reads it
     * while it grows (a sweep's live view, tail -f): one write a step */
    if (csv)
        fflush(csv);
    if (js)
        fflush(js);
    /* both asked: each records its own error */
    int failed = csv && atomicio_failed(t->o.csv);
    failed |= js && atomicio_failed(t->o.jsonl);
    if (failed)
        t->write_failed = 1;
}

/* The CSV's header, as trainer_write_rows fills it: b's columns prefixed b_, the
 * state columns (a's, then b's) after all the others. */
void trainer_csv_header(trainer *t, FILE *csv)
{
    int L = engine_config(t->e)->n_layer;
    metrics_csv_header_fields(csv, L, "");
    if (t->o.twin) {
        fputc(',', csv);
        metrics_csv_header_fields(csv, L, "b_");
    }
    metrics_csv_state_header(csv, "");
    if (t->o.twin)
        metrics_csv_state_header(csv, "b_");
    fputc('\n', csv);
}

/* The headless progress line, redrawn at most every 0.1 s and at the end. */
void trainer_print_progress(trainer *t)
{
    const step_metrics *m = &t->run[0].m;
    double now = nstime_now();
    if (!t->o.log || !t->o.progress || (now - t->last_print <= 0.1 && m->step != t->limit))
        return;
    double rate = t->run_steps / (now - t->log_t0);
    double eta = rate > 0 ? (t->limit - m->step) / rate : 0;
    fprintf(t->o.log, "\rstep %ld/%ld  loss %.4f  val %.4f  %.1f steps/s  ETA %d:%02d   ", m->step,
            t->limit, (double)m->loss, (double)t->run[0].last_val, rate, (int)eta / 60, (int)eta % 60);
    t->last_print = now;
}

/* The engines' events not yet written to o.log, a's then b's, each
 * prefixed with its run when there are two. */
void trainer_report_events(trainer *t)
{
    engine *run[2] = {t->e, t->o.twin};
    for (int r = 0; r < 2 && run[r]; r++) {
        for (; t->reported[r] < engine_event_count(run[r]); t->reported[r]++) {
            ns_event ev;
            if (!t->o.log || t->o.quiet || engine_event_get(run[r], t->reported[r], &ev) != 0)
                continue;
            fprintf(t->o.log, "%snormscope: %s%s\n", t->o.progress ? "\r\033[K" : "",
                    trainer_run_prefix(t, r), ev.text);
        }
    }
}

/* A summary number: "%.4f", "nan" without the sign printf may give it,
 * or "-" when there is none (have 0). */
static void summary_num(int have, float x, char *buf, size_t n)
{
    if (have)
        snprintf(buf, n, isnan(x) ? "nan" : "%.4f", (double)x);
    else
        snprintf(buf, n, "-");
}

void trainer_loss_text(const trainer_status *s, int b, char *buf, size_t n)
{
    summary_num(s->have_loss, s->run[b].loss, buf, n);
}

/* The process's peak resident size so far: getrusage's ru_maxrss, in KiB
 * on Linux but in bytes on macOS. */
static double peak_resident_bytes(void)
{
    struct rusage ru;
#if defined(__APPLE__)
    const double unit = 1.0;
#else
    const double unit = 1024.0;
#endif
    return getrusage(RUSAGE_SELF, &ru) == 0 ? unit * (double)ru.ru_maxrss : 0.0;
}

void trainer_summary(trainer *t, FILE *f)
{
    trainer_publish_status(t); /* the run is over: this thread may (run_seconds is newer) */
    trainer_status s;
    pthread_mutex_lock(&t->slock);
    s = t->pub->s;
    pthread_mutex_unlock(&t->slock);
    const ns_config *c = &s.run[0].cfg;
    /* the estimate is for the run as asked: a resumed run's config holds
     * the checkpoint's --steps, the trainer's limit the command line's */
    ns_config asked = *c;
    asked.steps = t->o.limit;
    double secs = s.run_seconds;
    long done = s.run_steps;
    /* a validation is "-" before the first (the runs validate together);
     * a NaN one is "nan", not "none" */
    char valtxt[32], losstxt[32];
    summary_num(s.last_val_step > 0, s.run[0].last_val, valtxt, sizeof valtxt);
    trainer_loss_text(&s, 0, losstxt, sizeof losstxt);
    /* scripts and the bench read this line */
    fprintf(f,
            "normscope: %ld steps in %.1f s (%.1f steps/s, %.0f tokens/s); loss %s, "
            "val %s; %s, %s, %s, L=%d d=%d H=%d T=%d B=%d threads=%d; "
            "memory %.1f MiB, estimated %.1f MiB\n",
            done, secs, secs > 0 ? done / secs : 0.0,
            secs > 0 ? done * (double)c->batch * c->context / secs : 0.0, losstxt, valtxt,
            config_norm_place_name(c->norm), config_norm_kind_name(c->norm_kind), numfmt_name(c->precision),
            c->n_layer, c->dim, c->n_head, c->context, c->batch, s.threads,
            peak_resident_bytes() / 1048576.0,
            trainer_bytes_needed(&asked, s.compare ? &s.run[1].cfg : NULL, !t->sync) / 1048576.0);
    if (s.compare) {
        summary_num(s.last_val_step > 0, s.run[1].last_val, valtxt, sizeof valtxt);
        trainer_loss_text(&s, 1, losstxt, sizeof losstxt);
        fprintf(f, "normscope: b (%s): loss %s, val %s\n", t->o.label_b ? t->o.label_b : "twin",
                losstxt, valtxt);
    }
    if (s.diverged_steps > 0 && s.state != TRAINER_DIVERGED && !s.write_failed &&
        t->o.on_div == ONDIV_CONTINUE)
        fprintf(f,
                "normscope: %ld diverged steps were not applied (--on-diverge continue; state "
                "diverged in --csv)\n",
                s.diverged_steps);
    trainer_diagnosis_summary(t, &s, f);
    trainer_checks_summary(t, f);
}
