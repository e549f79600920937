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
 * Not here: drawing (tui*.c), flags and opening files (main.c), the
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

/* Every history is bounded; these are the bounds (a snapshot is about
 * 256 KiB of points, 4 MiB of heatmaps at NS_MAX_LAYERS = 128 (a run
 * each), 128 KiB of events). */
#define TRAINER_HIST 4096 /* steps kept for the loss chart and the heatmap (a ring) */
/* log lines kept (a ring), for scrolling back: a lesson's text and, with a
 * validation line every 50 steps, some 25,000 steps of a run's events */
#define TRAINER_EVENTS 1024
#define TRAINER_QUEUE 64 /* commands waiting; trainer_send refuses more */
#define TRAINER_SAMPLE 64 /* bytes of each sample continuation */
#define TRAINER_MARK 16 /* label of a chart marker, with its NUL */

typedef enum {
    TRAINER_RUNNING = 0,
    TRAINER_PAUSED = 1,
    TRAINER_DIVERGED = 2, /* a step was not finite: paused until told */
    TRAINER_DONE = 3,     /* reached --steps, or a script said stop: paused;
                           * resuming trains on */
    TRAINER_STALLED = 4   /* running, and the diagnosis (diagnose.c) finds run a
                           * stalled on the unigram plateau (b's: its
                           * last_b.stalled); published only: the trainer
                           * itself is RUNNING */
} trainer_state;

const char *trainer_state_name(trainer_state s); /* "RUNNING", ... */

/* One run's diagnosis as the D panel shows it: the warnings and diagnoses
 * of its current episode (from the first finding until a rewind or a
 * setting change ends it, diagnose.h), oldest first; past
 * TRAINER_FINDINGS the oldest warning makes room. alert is the status
 * line's mark: the rule of the latest ("headroom", "stall":
 * diag_rule_name), "" for none. */
#define TRAINER_FINDINGS 6
typedef struct {
    char alert[16];
    int n;
    diag_finding f[TRAINER_FINDINGS];
} trainer_diagnosis;

/* A line of the event log: the engine's (ns_event, typed where it is
 * made) and the trainer's own (pause, resume, validation, DIVERGED, a
 * refused command), one type, so a front end reads the kind and the
 * layer and never the words. */
typedef ns_event trainer_event;

/* One step of the history. */
typedef struct {
    long step;
    float loss;
    float val_loss; /* NaN when not measured at this step */
    float lr;
    int nonfinite;
    float loss_b; /* the --compare twin's loss at this step (NaN without one) */
    float val_loss_b; /* the twin's validation loss (NaN when not measured) */
    char mark[TRAINER_MARK]; /* settings changed just before this step; "" if none */
    char mark_b[TRAINER_MARK]; /* the same for the twin (run b) */
} trainer_point;

/* Point from a step of run a and, with a twin, run b's (NULL without
 * one); mark and mark_b are the markers' labels (NULL or "" = none). Any
 * snapshot source (the trainer, a followed stream) fills its points so. */
void trainer_point_set(trainer_point *pt, const step_metrics *a, const step_metrics *b,
                       const char *mark, const char *mark_b);

/* The small part of a snapshot, copied whole each time it changed. */
typedef struct {
    unsigned long seq; /* publications so far; unchanged seq = nothing new */
    trainer_state state;
    long steps_done;
    int have_metrics;  /* last is a real step of this generation */
    step_metrics last; /* the latest step taken; after a rewind the snapshot's
                        * step's (engine_last_metrics), have_metrics 0 when the
                        * engine has none (a rewind to step 0) */
    /* The loss of the step the run is at (steps_done): the latest step's,
     * or after a rewind the step rewound to's, from the history. 0 when
     * there is none: before the first step, after a re-init, after a
     * rewind to step 0 or to a step the history no longer holds. */
    int have_loss;
    float loss;
    float loss_b;      /* --compare: b's at that step */
    float last_val;    /* the latest validation loss (NaN before the first) */
    long last_val_step;
    ns_config cfg;     /* the settings in force now (after any command) */
    int warmup_on;
    float lr_peak;
    float lr_next;         /* the LR the next step will use */
    double steps_per_s;    /* over the last ~0.5 s of running; 0 while paused */
    int threads;           /* --threads of the run (engine_threads) */
    double run_seconds;    /* time spent running this session (pauses and
                            * stops, see trainer_clock_hold, excluded) */
    long run_steps;        /* steps taken this session */
    long limit;            /* pause at this step (--steps); 0 = never */
    uint8_t sample[TRAINER_SAMPLE]; /* raw bytes; a front end escapes them */
    int sample_len;
    long sample_step;
    const char *prompt;    /* the sample's fixed prompt (static string) */
    unsigned generation;   /* bumped when the history is cut (re-init, rewind) */
    long hist_total;       /* points in the history of this generation */
    long hist_first;       /* no point before this one is kept (see trainer_hist_first) */
    long ev_total;         /* events since the start */
    int n_layer;
    /* each run's diagnosis: run a's, and with --compare run b's */
    trainer_diagnosis diag[2];
    /* --compare: the twin run b, stepped in lockstep with a */
    int compare;
    step_metrics last_b;   /* b's latest step (valid with have_metrics) */
    float last_val_b;      /* b's latest validation loss (NaN before the first) */
    ns_config cfg_b;       /* b's settings in force now, as cfg is a's */
    int warmup_on_b;
    float lr_peak_b, lr_next_b;
    /* each run's current settings, differences first (twin_label):
     * "a: fp32-norms=off  norm=pre ..." */
    char label_a[160], label_b[160];
    /* The run whose latest step was not finite: 0 = a, 1 = b, -1 = none.
     * Decided once, by the trainer (a first: a steps first); front ends
     * read it through trainer_diverged_run, never from the metrics. */
    int diverged_run;
    long diverged_steps; /* steps not finite this session (a or b) */
    int write_failed;    /* a --csv/--jsonl row could not be written */
    /* a script's "pause PROMPT": the latest prompt, its step, and a count
     * that changes with each (the lesson panel shows it again) */
    char ask[NS_CMD_TEXT];
    long ask_step;
    unsigned ask_seq;
    int stall_stopped;   /* headless, --on-stall stop ended the stalled run */
    /* The curve the latest rewind abandoned, so the chart can keep it grey
     * behind the replay: the losses (a's, b's) of steps ghost_first ..
     * ghost_first + ghost_n - 1, in the snapshot's ghost arrays; ghost_seq
     * changes when it is replaced (a rewind) or dropped (a re-init). */
    long ghost_first;
    int ghost_n;
    unsigned ghost_seq;
} trainer_status;

/* The run ended diverged: stopped on it (DIVERGED), or its latest step (a's
 * or b's) was not finite, as --on-diverge continue leaves it. */
int trainer_ended_diverged(const trainer_status *s);

/* Which run diverged (0 = a, 1 = b), or -1: none, or no step yet. */
static inline int trainer_diverged_run(const trainer_status *s)
{
    return s->have_metrics ? s->diverged_run : -1;
}

/* A front end's copy. Point i of this generation (0-based) is kept at
 * hist[i % TRAINER_HIST] while i >= trainer_hist_first(); event i at
 * ev[i % TRAINER_EVENTS] while i >= ev_total - TRAINER_EVENTS. About 4.5 MiB:
 * allocate it (trainer_snapshot_new), do not put it on a stack. */
typedef struct {
    trainer_status s;
    trainer_point hist[TRAINER_HIST];
    float heat[TRAINER_HIST][NS_MAX_LAYERS]; /* per-layer gradient norm sqrt(attn^2+mlp^2+ln^2) */
    float heat_b[TRAINER_HIST][NS_MAX_LAYERS]; /* the same for the twin (0 without one) */
    trainer_event ev[TRAINER_EVENTS];
    float ghost[TRAINER_HIST], ghost_b[TRAINER_HIST]; /* (ghost_n): see trainer_status */
} trainer_snapshot;

/* The oldest point kept: the newest TRAINER_HIST points at most, and after
 * a rewind cut the history, none whose ring slot a cut point had reused. */
static inline long trainer_hist_first(const trainer_status *s)
{
    long lo = s->hist_total - TRAINER_HIST;
    if (lo < s->hist_first)
        lo = s->hist_first;
    return lo > 0 ? lo : 0;
}

trainer_snapshot *trainer_snapshot_new(void); /* zeroed; free() it */

typedef struct {
    long limit;          /* pause (state DONE) when this many steps are done; 0 = never */
    on_diverge on_div;   /* a non-finite step: pause (default) or stop -> DIVERGED; continue */
    ns_script *script;   /* commands at set steps, or NULL; used by the running thread only */
    int start_paused;    /* begin in PAUSED (tests, scripted demos) */
    double sample_every; /* seconds between samples; 0 = never */
    const char *prompt;  /* the sample prompt; NULL = a built-in one */
    /* --csv/--jsonl: the trainer writes the CSV header (trainer_create)
     * and a row per step (with a twin, one CSV row with b_ columns and two
     * JSONL lines, "run":"a" and "b"); NULL = none. The caller opens and
     * commits them. */
    atomic_file *csv, *jsonl;
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
    /* the data's unigram entropy (diag_unigram_entropy), the stall rule's
     * plateau; 0 leaves the stall rule silent */
    double plateau;
    /* --on-stall stop: trainer_run ends when the diagnosis finds a run
     * (a, or the twin b) stalled (trainer_status.stall_stopped); the live
     * view goes on */
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
/* Queue a command. 0, or -1 when TRAINER_QUEUE commands are waiting.
 * Settings go through command_apply; pause, resume, step and stop are the
 * trainer's: step takes one step while paused (and pauses a running
 * trainer); stop pauses as DONE, as reaching --steps does. */
int trainer_send(trainer *t, const ns_command *c);
/* The same with a target for a two-run view (a twin_target: 0 both,
 * 1 run a, 2 run b; the rule is in twin.h). trainer_send is target both. */
int trainer_send_to(trainer *t, const ns_command *c, int target);
/* Copy what changed since dst was last filled; dst must come from
 * trainer_snapshot_new or a previous copy from this same trainer (a copy
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
