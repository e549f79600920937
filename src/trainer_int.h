/* trainer_int.h - what the trainer's own files share, and nothing else
 * includes: the trainer itself (struct trainer: its locks, its queue, the
 * published snapshot and the trainer thread's state), each run's
 * diagnosis, the bits a run's marker names, and each file's entry points.
 *
 *   trainer.c       the loop of a run, stepping, publishing the status and the
 *                   events; the front end's side (create, send, copy, wait, free)
 *   trainer_cmd.c   applying a command: the run's flow, settings, rewinds,
 *                   re-inits, the chart's marks
 *   trainer_fix.c   the diagnosis' fixes: choosing, going back, applying, judging
 *   trainer_diag.c  each run's diagnosis each step: its events, the stall stop,
 *                   a divergence's rewind note; the end-of-run diagnosis lines
 *   trainer_out.c   what a run writes: the CSV/JSONL rows, the progress line,
 *                   the events on the log, the summary line
 *
 * Not here: the public interface (trainer.h).
 */
#ifndef NS_TRAINER_INT_H
#define NS_TRAINER_INT_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include "diagnose.h"
#include "trainer.h"

/* A fix's commands, every candidate's (trainer_apply_fix) */
#define TRAINER_FIX_TEXT 160

/* One run's diagnosis (diagnose.c): its rules' state, the latest step's
 * findings until reported, and what the status shows of it. */
typedef struct {
    diag d;
    diag_finding found[DIAG_MAX_FINDINGS];
    int n_found;
    trainer_diagnosis view;
} run_diag;

/* Locks: qlock guards the queue and the quit flag (qcond wakes a paused
 * trainer); slock guards the published snapshot (scond wakes
 * trainer_wait); clock_lock guards the run clock's hold (trainer_clock_hold).
 * No code path holds two of them. The fields below "trainer-thread
 * only" are touched by the trainer thread alone once it runs (before
 * that, by the creating thread; pthread_create orders the two). */
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

    /* the run clock (trainer_run_now): CLOCK_MONOTONIC less the time held, under
     * clock_lock */
    pthread_mutex_t clock_lock;
    double held_at;    /* >= 0: held since then (the process is stopping) */
    double held_total; /* seconds held so far */

    /* trainer-thread only */
    trainer_state state;
    long limit;
    long budget; /* steps still to take while paused (n presses) */
    int sync;            /* run by trainer_run on the caller's thread */
    long reported[2];    /* events of a and b written to o.log so far */
    double log_t0, last_print; /* the progress line's clock */
    int diverged_run;    /* see trainer_status */
    long diverged_steps;
    int write_failed;
    unsigned long applied; /* commands applied so far (a script's show up) */
    char ask[NS_CMD_TEXT];   /* a script pause's prompt (trainer_status.ask) */
    long ask_step;
    unsigned ask_seq;
    unsigned mark_bits[2];   /* a's and b's: what the label names (mark_for) */
    long joined;             /* trainer_status.joined */
    char was[2][64];         /* trainer_status.was */
    /* run a at [0], the twin b (o.twin) at [1] */
    struct {
        step_metrics m;          /* the latest step */
        float loss;              /* at the step the run is at (trainer_status) */
        float last_val;
        char mark[TRAINER_MARK]; /* marker label for the next step's point */
        long events_seen;        /* the engine's events pulled so far */
    } run[2];
    int have_metrics;
    int have_loss; /* run[].loss is set */
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
    run_diag *rd;    /* [2]: the diagnosis of run a and of the twin b */
    int stall_stopped; /* --on-stall stop ended the run (headless) */
    int fixes;         /* fixes applied (TRAINER_FIX_MAX at most) */
    const char *fix_due; /* --on-diverge/--on-stall fix: apply one after this
                            step's report; the flag that asked */
    int fixed_row;     /* the next step's rows say "fixed" */
    long fix_check_at; /* the latest fix is judged at this step (0: none pending) */
    double fix_bar;    /* ... by a mean loss below this */
    int fix_run;       /* ... of this run */
    unsigned fix_rules; /* rules whose fixes were tried since one helped */
    int fix_failed;    /* the run stopped: its fix did not help and none was left */
    char fix_note[NS_EVENT_TEXT]; /* fix_run's verdict waits on its fix (trainer_diagnosis) */
    char fix_what[TRAINER_FIX_TEXT]; /* the latest fix's commands */
    char fix_proven[NS_EVENT_TEXT];  /* the latest fix's check, when it helped or was undone */
    /* the run left alone (Advice is an experiment, DESIGN.md): a copy of
     * the fix run taken where the fix went back, before its commands,
     * stepped beside it on the same batches until the fix's check */
    engine *fix_twin;         /* NULL: none (fix_alone says why) */
    step_metrics fix_twin_m;  /* its latest step */
    diag *fix_twin_d;         /* its diagnosis, continued from the fix run's */
    long fix_at;              /* the step both started from */
    long fix_twin_bad;        /* the step it diverged or blew up at (0: it did not) */
    char fix_alone[160];      /* why no twin was stepped, what was compared instead */
    int in_script;     /* applying a --script command (trainer_apply_fix's log) */
    long hist_cut;   /* >= 0: the history keeps only steps <= this (rewind) */
    int hist_reset;  /* the history restarts (re-init) */
};

/* What a run's marker names (mark_bits): a re-init, a rewind, and each
 * mid-run setting by its hook, in the hooks' order. */
enum { MARK_REINIT = 1u << 0, MARK_REWIND = 1u << 1, MARK_FIX = 1u << 2, MARK_HOOK0 = 3 };
_Static_assert(MARK_HOOK0 + SETH_COUNT <= 32, "mark_bits keeps a bit per hook");

/* ---- trainer.c ---- */
/* The trainer's clock (seconds): monotonic, standing still while held. */
double trainer_run_now(trainer *t);
/* Publish the header only (a command changed a setting or the state). */
void trainer_publish_status(trainer *t);
/* An event at the step the run is at, into the published ring. */
void trainer_add_event(trainer *t, ns_event_kind kind, int layer, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Both runs' new engine lines into the published events. */
void trainer_pull_engine_events(trainer *t);
/* Runs there are: a, and b with a twin. */
int trainer_n_runs(const trainer *t);
/* A run's latest metrics (1 = b). */
step_metrics *trainer_run_metrics(trainer *t, int run);
/* What names a run's lines: "b: ", and "a: " beside a twin; "" alone. */
const char *trainer_run_prefix(const trainer *t, int run);

/* ---- trainer_cmd.c ---- */
/* The trainer's state; running again opens a fresh rate window. */
void trainer_set_state(trainer *t, trainer_state s);
/* Apply one command to target's run(s) (twin.h), between steps. */
void trainer_apply_command(trainer *t, const ns_command *c, int target);
/* A --script command, applied as a key's is (command_script_due's callback). */
void trainer_script_cmd(void *ctx, const ns_command *c, int target);

/* ---- trainer_fix.c ---- */
/* The fix's story (fix_note, fix_proven) in run r's view. */
void trainer_view_fix(const trainer *t, int r, trainer_diagnosis *v);
/* What the fix run's verdict waits on, in its view at once; "" clears it. */
void trainer_set_fix_note(trainer *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Apply the diagnosis' fixes; how: what asked for it, for the log. */
void trainer_apply_fix(trainer *t, const char *how);
/* Judge the latest fix after a step: bad, the step diverged; blown, the run
 * that blew up (-1: none). */
void trainer_fix_check(trainer *t, int bad, int blown);
/* Where the fix of run's cause goes, and its commands, into run's view. */
void trainer_fix_target_note(trainer *t, int run);
/* The run left alone, after the fix run's step: its diagnosis observed. */
void trainer_fix_twin_observe(trainer *t);
/* A command applied to the fix run during its check (r: twin_apply's
 * result) reaches the run left alone too; a rewind or a re-init ends the
 * comparison. */
void trainer_fix_twin_command(trainer *t, const ns_command *c, int r);
/* Free the run left alone (the end of a run or of a check). */
void trainer_fix_twin_end(trainer *t);

/* ---- trainer_diag.c ---- */
/* The step's findings, kept until reported; the stalled mark on each row. */
void trainer_diagnosis_observe(trainer *t);
/* A run loaded from a checkpoint goes on with the diagnosis it carries
 * (checked by main before: refused there when malformed), or says from
 * which step it knows nothing (a checkpoint older than version 6). */
void trainer_diag_resume(trainer *t);
/* The run in which this step found rule's diagnosis, or -1. */
int trainer_found_rule(const trainer *t, diag_rule rule);
/* The run in which this step found a run not learning: a stall on the
 * plateau, or no real fall from the first loss (its gradients lost to
 * underflow among the causes), or -1: what --on-stall fix fixes. */
int trainer_found_stall(const trainer *t);
/* The step's findings as events, after the engine's. */
void trainer_diagnosis_events(trainer *t);
/* Headless: the findings on the log; then --on-stall stop. */
void trainer_diagnosis_report(trainer *t);
/* Headless, after the summary line: each run that ended badly, its cause. */
void trainer_diagnosis_summary(trainer *t, const trainer_status *s, FILE *f);
/* After the summary line: each run's verdict and its checks. */
void trainer_checks_summary(trainer *t, FILE *f);
/* A validation result of run (1 = b) as an event. */
void trainer_validation_event(trainer *t, int run, const step_metrics *m);
/* Live, at a divergence of run: where b goes, as an event and in its view. */
void trainer_rewind_target_event(trainer *t, int run);

/* ---- trainer_out.c ---- */
/* The step's CSV row and JSONL line(s), flushed; a failed write noted. */
void trainer_write_rows(trainer *t);
/* The CSV's header, as trainer_write_rows fills it. */
void trainer_csv_header(trainer *t, FILE *csv);
/* The headless progress line, redrawn at most every 0.1 s and at the end. */
void trainer_print_progress(trainer *t);
/* The engines' events not yet written to o.log, a's then b's. */
void trainer_report_events(trainer *t);

#endif
