/* trainer.h - the runtime of the live view: one pthread that owns an
 * engine, applies queued commands only between steps, and publishes a
 * snapshot after every step.
 *
 * Two pieces of shared state, each behind its own mutex held just long
 * enough to copy, as cmus and redis's bio.c do it (a worker publishes a
 * struct under a mutex, the UI copies it once per frame; a mutex + condvar
 * queue that also wakes a paused worker; no lock-free code):
 *   - the command queue (mutex + condvar; the condvar also wakes a paused
 *     trainer), written by front ends, drained by the trainer. Commands
 *     are ns_command values (command.h): a key press and a --script line
 *     are the same value, applied the same way, between steps;
 *   - the snapshot, written by the trainer, copied by front ends.
 * The trainer never waits for a front end: it holds the snapshot lock only
 * to append one step, and a front end holds it only to copy what changed.
 *
 * It is also the headless run (trainer_run): the same loop on the
 * caller's thread, so scripts, the --compare twin, divergence, events,
 * CSV/JSONL rows and the summary behave the same in both.
 *
 * Not here: the snapshot's types (snapshot.h, shared with the other
 * sources), drawing (tui*.c), flags and opening files (main.c), the
 * numbers themselves (engine.c). Nothing in this module calls curses.
 */
#ifndef NS_TRAINER_H
#define NS_TRAINER_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "atomicio.h"

#include "command.h"
#include "diagnose.h"
#include "engine.h"
#include "metrics.h"
#include "pool.h"
#include "snapshot.h"

typedef struct {
    long limit;          /* pause (state DONE) when this many steps are done; 0 = never */
    on_diverge on_div;   /* a non-finite step or a finite blow-up (diagnose.h): pause
                          * (default) or stop -> DIVERGED; continue; fix: rewind and
                          * apply the diagnosis' next step, TRAINER_FIX_MAX times */
    ns_script *script;   /* commands at set steps, or NULL; used by the running thread only */
    int start_paused;    /* begin in PAUSED (tests, scripted demos) */
    double sample_every; /* seconds between samples; 0 = never */
    const char *prompt;  /* the sample prompt; NULL = a built-in one */
    /* --csv/--jsonl: the trainer writes the CSV header (trainer_create)
     * and a row per step (with a twin, one CSV row with b_ columns and two
     * JSONL lines, "run":"a" and "b"); NULL = none. The caller opens and
     * commits them. */
    atomic_file *csv, *jsonl;
    /* The live view's e export: the CSV again (its header and a row per
     * step, as --csv writes them), into a file the caller opened (an
     * unlinked temp file) and closes; flushed a step at a time, so a reader
     * of its descriptor (pread) sees whole rows. NULL = none. */
    FILE *spool;
    /* The headless run's lines (trainer_run): each engine event as it
     * happens ("normscope: [a: |b: ]text"), the divergence that stopped the
     * run, and with progress a progress line redrawn in place. NULL = none;
     * quiet keeps only the divergence line. */
    FILE *log;
    int quiet, progress;
    /* trainer_run ends after the step in progress once this is nonzero
     * (a signal handler's flag); NULL = never */
    volatile sig_atomic_t *interrupt;
    /* called on the running thread after every step (tests); it must not
     * call back into the trainer */
    void (*on_step)(void *ctx, const step_metrics *m);
    void *ctx;
    /* --compare: a second engine the trainer owns too and steps in
     * lockstep (both, each step); settings commands go to the runs
     * their target names (twin.h), flow commands and notes to the
     * trainer / a only. NULL = one run. */
    engine *twin;
    /* with a twin: a pool of two threads that step a and b at the same
     * time, each engine on its own share of the cores (engine_set_threads)
     * and still in lockstep: both steps end before anything else happens.
     * The steps are the same whoever runs them. NULL = a, then b. */
    ns_pool *pair;
    /* the --compare words, "norm=pre": label_b names b in the summary; the
     * panels' labels come from each run's state (trainer_status) */
    const char *label_a, *label_b;
    /* with a twin, called instead of on_step with both runs' metrics */
    void (*on_pair)(void *ctx, const step_metrics *a, const step_metrics *b);
    /* --no-pause: a script's pause is skipped (its prompt still goes to
     * the event log), so a lesson runs straight through */
    int no_pause;
    /* the data's unigram entropy (diag_unigram_entropy): every step's
     * data_entropy, the stall rule's plateau and the floor it sits on; NaN
     * = not known (the rules that need it say so); 0 (one repeated byte)
     * leaves the stall rule silent: the plateau is the optimum */
    double plateau;
    /* --on-stall stop (1): trainer_run ends when the diagnosis finds a run
     * (a, or the twin b) stalled (trainer_status.stall_stopped); the live
     * view goes on. TRAINER_STALL_FIX: the stall's fix is applied, as
     * --on-diverge fix applies a divergence's */
    int on_stall;
} trainer_opts;

typedef struct trainer trainer;

/* The signals the UI thread handles (SIGINT, SIGTERM, SIGHUP, SIGWINCH,
 * SIGTSTP): the trainer thread starts with them blocked, and so should
 * every other thread of the run (the engines' pools: engine_set_threads),
 * so that the kernel delivers them where getch can return early. */
void trainer_ui_signals(sigset_t *set);

/* Take over e (the caller must not touch it until trainer_stop). NULL
 * with a reason in err on failure. */
trainer *trainer_create(engine *e, const trainer_opts *o, char *err, size_t errlen);
/* Start the thread (commands sent before are applied first, in order). */
int trainer_start(trainer *t, char *err, size_t errlen);
/* Or run on the calling thread, the headless way: the same loop as the
 * thread's, but with no one to resume a pause, a script's pause, resume
 * and step are noted and skipped and its stop ends the run, as do the
 * step limit, a divergence (on_div pause or stop), a stall (o.on_stall),
 * *o.interrupt and a failed row write. Returns then, with the events of
 * both runs and the diagnosis' findings (each run's) reported to o.log. Use trainer_start or trainer_run, once. */
void trainer_run(trainer *t);
/* Peak resident bytes of a run of a (with its --compare twin b, or NULL)
 * over a->steps steps (0: until stopped), headless or in the live view:
 * the program itself, the histories of the chart and heatmap, and each
 * run's engine_bytes_needed. The man page's MEMORY formula; main refuses a
 * run it finds bigger than the machine, and the summary line sets it
 * beside the measured peak. */
double trainer_bytes_needed(const ns_config *a, const ns_config *b, int live);

/* The run's summary on f, as both front ends end: "N steps in S s (...);
 * loss L, val V; settings", with a twin a "b (label_b): loss, val" line,
 * after non-finite steps not applied (--on-diverge continue) how many,
 * and headless, for a run that ended diverged or stalled, the diagnosis'
 * cause and what to try.
 * Call once the run is over (trainer_stop, or trainer_run returned). */
void trainer_summary(trainer *t, FILE *f);

/* The first run's diagnosis into e, for engine_save to carry in the
 * checkpoint (diag_state_save): 0, or -1 out of memory. Call once the run
 * is over, as trainer_summary. */
int trainer_diag_to_engine(trainer *t, engine *e);

/* Where a rewind from step `from` of e goes and how close that snapshot is
 * to the format's limit; when near (DIAG_SNAP_NEAR), the newest earlier
 * snapshot clear of it (else the one with the most room), with how to
 * reach it: live, b pressed k times; headless, the same run stopped at its
 * step (the run is deterministic). "" when there is no snapshot. Call it
 * on the thread that owns e. */
void trainer_rewind_note(const engine *e, long from, int live, char *buf, size_t len);
/* Queue a command. 0, or -1 when TRAINER_QUEUE commands are waiting.
 * Settings go through command_apply; pause, resume, step and stop are the
 * trainer's: step takes one step while paused (and pauses a running
 * trainer); stop pauses as DONE, as reaching --steps does. */
int trainer_send(trainer *t, const ns_command *c);
/* The same with a target for a two-run view (a twin_target: 0 both,
 * 1 run a, 2 run b; the rule is in twin.h). trainer_send is target both. */
int trainer_send_to(trainer *t, const ns_command *c, int target);
/* Copy what changed since dst was last filled; dst must come from
 * snapshot_new or a previous copy from this same trainer (a copy
 * from another one may look up to date). Returns 1 if anything changed. */
int trainer_snapshot_copy(trainer *t, trainer_snapshot *dst);
/* Wait until a publication after seq, or timeout_s seconds; returns the
 * latest seq. For tests and scripts; the UI polls instead. */
unsigned long trainer_wait(trainer *t, unsigned long seq, double timeout_s);
/* The process is about to stop (Ctrl-Z) / was continued: the trainer's
 * clock (run_seconds, steps/s, the pacing of samples) stands still in
 * between, where CLOCK_MONOTONIC runs on. Any thread may call them (not a
 * signal handler: a mutex); a hold without a release holds on; holding
 * twice keeps the first hold. */
void trainer_clock_hold(trainer *t);
void trainer_clock_release(trainer *t);
/* The summary's text for the loss the run is at (have_loss): "%.4f", or
 * "-" when there is none; b = 1 for the --compare twin's. */
void trainer_loss_text(const trainer_status *s, int b, char *buf, size_t n);
/* Stop after the step in progress and join the thread; the engine is the
 * caller's again, and trainer_snapshot_copy still gives the final state.
 * Calling it twice is harmless. */
void trainer_stop(trainer *t);
/* Stop if still running, then free the trainer (not the engine). */
void trainer_free(trainer *t);

#endif
