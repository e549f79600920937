/* snapshot.h - what every snapshot source publishes and every front end
 * draws: the run's status, its history of points and heatmap rows, its
 * event log and the curve a rewind abandoned. The trainer fills one after
 * each step (trainer.h); a stream reader (stream.h) and a sweep's run view
 * fill the same types from what they read, so the dashboard, the figures
 * and the headless writers draw one type whatever the source. The names
 * keep the trainer_ prefix: the trainer was the first source.
 *
 * Not here: the thread that fills it (trainer.c), the readers (stream.c,
 * plot_data.c), the drawing (tui_*.c, plot.c). No threads, no I/O.
 */
#ifndef NS_SNAPSHOT_H
#define NS_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include "command.h"
#include "config.h"
#include "diagnose.h"
#include "engine.h"
#include "metrics.h"
#include "twin.h"

/* Every history is bounded; these are the bounds (a snapshot is about
 * 256 KiB of points, 4 MiB of heatmaps at NS_MAX_LAYERS = 128 (a run
 * each), 128 KiB of events). */
#define TRAINER_HIST 4096 /* steps kept for the loss chart and the heatmap (a ring) */
/* log lines kept (a ring), for scrolling back: a lesson's text and, with a
 * validation line every 50 steps, some 25,000 steps of a run's events */
#define TRAINER_EVENTS 1024
#define TRAINER_QUEUE 64 /* commands waiting; trainer_send refuses more */
#define TRAINER_SAMPLE 64 /* bytes of each sample continuation */
#define TRAINER_MARK 32 /* label of a chart marker, with its NUL */

typedef enum {
    TRAINER_RUNNING = 0,
    TRAINER_PAUSED = 1,
    TRAINER_DIVERGED = 2, /* a step was not finite: paused until told */
    TRAINER_DONE = 3,     /* reached --steps, or a script said stop: paused;
                           * resuming trains on */
    TRAINER_STALLED = 4   /* running, and the diagnosis (diagnose.c) finds run a
                           * stalled on the unigram plateau (b's: its
                           * run[1].last.stalled); published only: the trainer
                           * itself is RUNNING */
} trainer_state;

const char *snapshot_state_name(trainer_state s); /* "RUNNING", ... */

/* One run's diagnosis as the D panel shows it: the warnings and diagnoses
 * of its current episode (from the first finding until a rewind or a
 * setting change ends it, diagnose.h), oldest first; past
 * TRAINER_FINDINGS the oldest warning makes room. alert is the status
 * line's mark: the rule of the cause (snapshot_diagnosis_cause), else of
 * the latest warning ("headroom", "stall": diag_rule_name), "" for
 * none. */
#define TRAINER_FINDINGS 6
/* A run applies its diagnosis' fix (the a key, --on-diverge fix) at most
 * this many times; then it stops with the diagnosis. */
#define TRAINER_FIX_MAX 3
#define TRAINER_STALL_FIX 2 /* trainer_opts.on_stall: --on-stall fix */
typedef struct {
    char alert[16];
    int n;
    diag_finding f[TRAINER_FINDINGS];
    /* live, from a divergence or a blow-up until the episode ends: the
     * snapshot b rewinds to and how close it is to the limit, as the
     * event log says it (trainer_rewind_note); "" otherwise */
    char rewind[NS_EVENT_TEXT];
    /* the same for the snapshot the a key's fix rewinds to, when that is
     * another than b's ("step 50, headroom 3.2 (layer 3)"); "" otherwise */
    char fix_rewind[NS_EVENT_TEXT];
    int fix_reinit; /* no snapshot that old (and still healthy) is kept: the fix re-inits */
    /* live, with the fix's target: every candidate finding's commands as
     * the fix runs them ("fp32-norms on; lr x0.1"); "" when not known */
    char fix_cmds[160];
    /* the questions behind a verdict, as of the latest step (diag_checks):
     * "healthy" is said only when every one answered ok (healthy) */
    int n_checks;
    diag_check checks[DIAG_CHECKS];
    int healthy;
    /* a fix applied and not yet proven ("fix 1 is checked at step 382"),
     * or one that did not help: either keeps the verdict from "healthy",
     * whatever the checks say; "" when neither */
    char fix_note[NS_EVENT_TEXT];
    /* the latest fix, once its check passed: "fix 1 (fp32-norms on) helped:
     * loss 2.788 at step 150, below 3.007"; "" when none has */
    char fix_proven[NS_EVENT_TEXT];
} trainer_diagnosis;

/* The order an episode's findings are given in, the cause first: the
 * diagnoses of a divergence or a blow-up (0), then a stall's, not
 * learning's or overfitting's (1: a run
 * that blew up after stalling blew up for the later finding's reason),
 * then the attention's collapse (2: in a run also stalled it is a
 * symptom of what the stall names), then the warnings (3); oldest first
 * within each. */
enum { TRAINER_RANKS = 4 };
int snapshot_finding_rank(const diag_finding *f);
/* The cause: the first finding in that order (the status line's mark and
 * the D panel's first line); NULL for none. */
const diag_finding *snapshot_diagnosis_cause(const trainer_diagnosis *d);
/* The finding whose fix the a key and --on-diverge fix apply: the first
 * in that order with one; NULL for none. */
const diag_finding *snapshot_diagnosis_fix(const trainer_diagnosis *d);
/* Keep f in the episode's list d (oldest first) and set its alert: the
 * trainer and a stream reader keep their runs' findings so. */
void snapshot_diagnosis_add(trainer_diagnosis *d, const diag_finding *f);
/* A check (diag_checks) as one line, "is it learning? ok: loss 2.10 ...",
 * and the verdict of a diagnosis' checks, "verdict: healthy (every check
 * answered ok)" only when each did: the summaries and the D panels. */
void snapshot_check_text(const diag_check *c, char *buf, size_t n);
void snapshot_verdict_text(const trainer_diagnosis *d, char *buf, size_t n);
/* The checks' counts: how many answered no, how many are not yet known. */
void snapshot_check_counts(const trainer_diagnosis *d, int *bad, int *unknown);
/* Of runs' diagnoses (n: 1, or 2 under --compare), the run whose fix the
 * a key applies: the one that diverged (diverged_run), else a before b;
 * -1 when neither has a fix. */
int snapshot_fix_run(const trainer_diagnosis *const *runs, int n, int diverged_run);

/* A line of the event log: the engine's (ns_event, typed where it is
 * made) and the trainer's own (pause, resume, validation, DIVERGED, a
 * refused command), one type, so a front end reads the kind and the
 * layer and never the words. */
typedef ns_event trainer_event;

/* One step of the history. */
typedef struct {
    long step;
    float lr;
    int nonfinite;
    /* run a's at [0]; the --compare twin b's at [1] (NaN losses without one) */
    struct {
        float loss;
        float val_loss;          /* NaN when not measured at this step */
        float out_change;        /* metrics.h's, when oc_known (measured at this step) */
        int oc_known;
        char mark[TRAINER_MARK]; /* settings changed just before this step; "" if none */
    } run[2];
} trainer_point;

/* Point from a step of run a and, with a twin, run b's (NULL without
 * one); mark and mark_b are the markers' labels (NULL or "" = none). Any
 * snapshot source (the trainer, a followed stream) fills its points so. */
void snapshot_point_set(trainer_point *pt, const step_metrics *a, const step_metrics *b,
                       const char *mark, const char *mark_b);

/* One run's part of the status: run a at [0], --compare's twin b at [1]. */
typedef struct {
    step_metrics last; /* the latest step taken; after a rewind the snapshot's
                        * step's (engine_last_metrics), have_metrics 0 when the
                        * engine has none (a rewind to step 0) */
    /* The loss of the step the run is at (steps_done): the latest step's,
     * or after a rewind the step rewound to's, from the history. 0 when
     * there is none: before the first step, after a re-init, after a
     * rewind to step 0 or to a step the history no longer holds. */
    float loss;
    float last_val;    /* the latest validation loss (NaN before the first) */
    ns_config cfg;     /* the settings in force now (after any command) */
    int warmup_on;
    float lr_peak;
    float lr_next;     /* the LR the next step will use */
    /* the run's current settings, differences first (twin_label):
     * "a: fp32-norms=off  norm=pre ..." */
    char label[160];
} trainer_run_status;

/* The small part of a snapshot, copied whole each time it changed. */
typedef struct {
    unsigned long seq; /* publications so far; unchanged seq = nothing new */
    trainer_state state;
    long steps_done;
    int have_metrics;  /* run[].last is a real step of this generation */
    int have_loss;     /* run[].loss is (see trainer_run) */
    long last_val_step;
    /* run a at [0]; --compare's twin b at [1], stepped in lockstep with a */
    trainer_run_status run[2];
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
    int compare;       /* --compare: run[1] is the twin b */
    long joined; /* the step since which a's settings equal b's, after they
                  * differed (twin_run.joined); 0 = they differ */
    char was[2][64]; /* what set a and b apart before they joined (twin_run.was) */
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
    int fixes;           /* fixes applied so far (at most TRAINER_FIX_MAX) */
    /* The curve the latest rewind abandoned, so the chart can keep it grey
     * behind the replay: the losses (a's, b's) of steps ghost_first ..
     * ghost_first + ghost_n - 1, in the snapshot's ghost arrays; ghost_seq
     * changes when it is replaced (a rewind) or dropped (a re-init). */
    long ghost_first;
    int ghost_n;
    unsigned ghost_seq;
} trainer_status;

/* Run r (0 = a, 1 = b) of a status as twin_label reads it: its settings
 * now, the step the runs joined and what set it apart before. */
twin_run snapshot_status_twin(const trainer_status *s, int r);

/* The run ended diverged: stopped on it (DIVERGED), or its latest step (a's
 * or b's) was not finite, as --on-diverge continue leaves it. */
int snapshot_ended_diverged(const trainer_status *s);

/* Which run diverged (0 = a, 1 = b), or -1: none, or no step yet. */
static inline int trainer_diverged_run(const trainer_status *s)
{
    return s->have_metrics ? s->diverged_run : -1;
}

/* A front end's copy. Point i of this generation (0-based) is kept at
 * hist[i % TRAINER_HIST] while i >= trainer_hist_first(); event i at
 * ev[i % TRAINER_EVENTS] while i >= ev_total - TRAINER_EVENTS. About 4.5 MiB:
 * allocate it (snapshot_new), do not put it on a stack. */
typedef struct {
    trainer_status s;
    trainer_point hist[TRAINER_HIST];
    trainer_event ev[TRAINER_EVENTS];
    /* run a at [0], the twin b at [1] (zeros without one) */
    struct {
        /* per-layer gradient norm sqrt(attn^2+mlp^2+ln^2) */
        float heat[TRAINER_HIST][NS_MAX_LAYERS];
        float ghost[TRAINER_HIST]; /* (ghost_n): see trainer_status */
    } run[2];
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

trainer_snapshot *snapshot_new(void); /* zeroed; free() it */

/* The prompt a sample continues when none was given. */
extern const char snapshot_default_prompt[];

#endif
