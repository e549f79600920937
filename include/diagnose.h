/* diagnose.h - rules over a run's recent metrics that say why a run
 * diverged or stalled, and warn before it does.
 *
 * The run loop hands every step's metrics to diag_observe, which keeps a
 * bounded history (DIAG_WINDOW steps, inside the diag value: nothing is
 * allocated per step) and returns typed findings: early warnings (once per
 * episode) and diagnoses (at a divergence or a stall). Setting changes and
 * rewinds are seen in the metrics themselves (the settings in force, a
 * step number that goes back), so the caller needs no other hook.
 *
 * Not here: printing, events, the trainer's state (the caller turns
 * findings into events and STALLED), the numbers themselves (engine.c).
 * The thresholds are documented in man/normscope.1, DIAGNOSIS.
 */
#ifndef NS_DIAGNOSE_H
#define NS_DIAGNOSE_H

#include <stddef.h>
#include <stdint.h>

#include "metrics.h"

#define DIAG_WINDOW 64          /* steps of history the rules look at */
#define DIAG_TEXT 192           /* a finding's line, with its NUL (an event's size) */
#define DIAG_FIX_TEXT 48        /* a finding's fix: script commands, ';'-separated */
#define DIAG_MAX_FINDINGS 8     /* at most this many from one step */

/* Thresholds (man/normscope.1, DIAGNOSIS). */
#define DIAG_HEADROOM_WARN 1.0  /* doublings left before the limit */
#define DIAG_TREND_MIN 32       /* points a headroom forecast needs since the start
                                   or a change of precision or norm: the first
                                   steps' growth is the initialization's transient
                                   (fp16-layernorm: act max 7 -> 132 in 22 steps,
                                   then 132 -> 256 in 395) */
#define DIAG_SLOWING 0.5        /* the newest quarter's rate under this share of
                                   the window's: the growth slows, and the crossing
                                   is "at step X or later", X at the newer rate */
#define DIAG_SCALE_DROP 8.0     /* loss scale fallen this factor within the window */
#define DIAG_STALL_TOL 0.15     /* nats around the unigram plateau */
#define DIAG_STALL_GRAD 1e-2    /* bottom layers' gradient / top's below this */
#define DIAG_STALL_STEPS 48     /* steps both hold (the mean over them) */
#define DIAG_UPDATE_VANISH 1e-6 /* a layer's update ratio below this ... */
#define DIAG_UPDATE_ALIVE 1e-4  /* ... while the top's is above this */
#define DIAG_LR_RECENT 500      /* an LR raise this many steps before counts */
#define DIAG_LR_HELD 50         /* steps at an LR that make it tolerated */
#define DIAG_WARMUP_EARLY 100   /* without warmup, a divergence this early counts
                                   (the ramp's length: later, warmup only delays it) */
#define DIAG_GROWTH_MIN 0.05    /* doublings per 100 steps that count as growth */
#define DIAG_BLOWUP_FACTOR 4.0  /* a finite blow-up: the loss this many times ... */
#define DIAG_BLOWUP_STEPS 32    /* ... the larger of its start and the plateau, on
                                   average over this many steps */
#define DIAG_STALL_ACT 100.0    /* a plateau with act max above this ... */
#define DIAG_STALL_UPD 3e-3     /* ... and the top's update ratio above this: the LR's */
#define DIAG_STALL_ABOVE 0.4    /* nats above the plateau still on it, when ... */
#define DIAG_STALL_LONG 200     /* ... it lasts this many steps (a healthy run passes
                                   the plateau sooner; a vanishing bottom gradient
                                   says stall after DIAG_STALL_STEPS) ... */
#define DIAG_STALL_BACK 100     /* ... and its mean loss fell less than ... */
#define DIAG_STALL_FALL 0.03    /* ... this in the last DIAG_STALL_BACK steps (a
                                   run crossing the plateau slowly is learning:
                                   gamma-init 8 falls over 0.05 in 100 steps there) */
#define DIAG_UPDATE_LOW 1e-4    /* top layer's mean update ratio below this on the
                                   plateau: the LR is too low */
#define DIAG_UPDATE_HIGH 5e-3   /* mean update ratio of the top layer above this, on
                                   a plateau, in a snapshot, or where the first
                                   update's is not said: the LR's (healthy runs at LR
                                   1e-3: about the LR) */
#define DIAG_UPDATE_KEEP 0.1     /* the top layer's update per unit LR (ratio / LR, its
                                   mean over the window) under this share of its first
                                   update's: the LR's steps have inflated the weights,
                                   the LR is too high for this model (Adam's first step
                                   moves each weight by the LR: ratio / LR is then
                                   1 / rms(W), the model's own unit. Runs that train
                                   well settle at 0.2-0.25 at LR 1e-3, 0.1-0.2 at 1e-2
                                   or 3e-2 where those train well (2-12 blocks of width
                                   32-64, no norm or Pre-LN, 300 steps); the LRs that
                                   end 0.1 nats worse than a lower one, 0.002-0.083 in
                                   16 of 17. Not known: the ratio alone, against
                                   DIAG_UPDATE_HIGH) */
#define DIAG_UPDATE_HUGE 3e-2   /* ... or its update ratio above this, whatever its
                                   first: the LR is simply big, before the weights
                                   inflate (runs that blew up within 32 steps, no norm
                                   on 2-12 blocks at LR 1e-2 to 0.3: 0.031-0.49; the
                                   largest of a run that trained well, 0.018) */
#define DIAG_UPDATE_GOAL 3e-3   /* an LR fix divides the LR by the power of ten that
                                   brings the update ratio to this or below */
#define DIAG_REWARN 0.5         /* a headroom warning again when the steps left
                                   fell to this fraction of the last warning's */
#define DIAG_CLIP_SHARE 0.9     /* a stall is the clip's when at least this share
                                   of its steps were clipped and the update ratio
                                   is below DIAG_UPDATE_LOW */
#define DIAG_CLIP_CUT 1e-2       /* ... or, whatever the update ratio, when the clip
                                   left at most this fraction of the mean gradient
                                   norm on that share of steps: a cut that large is
                                   named before "cause unknown" */
#define DIAG_FLOOR_MARGIN 0.3   /* nats: a plateau (the data's unigram entropy) this
                                   close to the floor of 0 is the optimum, or near it:
                                   a loss there is no stall (one repeated byte: 0) */
#define DIAG_LEARN_STEPS 200    /* steps after the start (or a change) before "is it
                                   learning" is answered: a healthy 4-block run falls
                                   2 nats by step 100, LR 1e-6 0.05 nats by step 200 */
#define DIAG_LEARN_FRAC 0.1     /* ... it must have fallen this share of the way from
                                   its first loss to the plateau (to 0 when the
                                   plateau is not known) */
#define DIAG_LEARN_MEAN 16      /* steps averaged for the loss "now" */
#define DIAG_UNDERFLOW_SHARE 0.5 /* not learning, with the gradient norm exactly 0 on
                                   this share of the window's updates and values
                                   rounded to 0 counted: the gradients underflowed
                                   (fp16 at --loss-scale 1e-5: 0 on every step) */
#define DIAG_OVERFIT_MARGIN 0.1 /* nats of validation loss above its own minimum ... */
#define DIAG_OVERFIT_EVALS 3    /* ... on this many evaluations in a row, while the
                                   training loss fell below its value at that minimum */
#define DIAG_START_LOSS 1.0     /* nats above ln(vocab) at step 1: an init that predicts
                                   confidently wrong (a uniform guess gives ln(vocab)) */
#define DIAG_START_GNORM 1e3    /* gradient norm at step 1: healthy lab starts have
                                   1-10, norm gains of 8 about 130 */
#define DIAG_BAND_STEPS 1       /* the run's early band: its first update, whose
                                   forward ran on the init's weights (an LR of 1.0
                                   without warmup has done damage by step 2) */
#define DIAG_ACT_GROW 32.0      /* act max this many times its largest over the early
                                   steps is growth (LR 3e-2, 8 blocks: 100x by step
                                   600; LR 1e-2, 4 blocks, training well: 18x by
                                   step 600) ... */
#define DIAG_ACT_UNIT 1.0       /* growth is measured from the larger of the first
                                   step's act max and this, the scale a norm sets:
                                   a run without norms starts below it (no norms,
                                   4 blocks: 0.27 at step 1, 6 by step 50, 15 by
                                   step 1000 at LR 1e-2, its best run) and its
                                   rise to it is its scale settling, not growth */
#define DIAG_BAND_ACT 4.0       /* ... and a snapshot whose act max is within this many
                                   times it (and loss, update ratio in the band) is
                                   still healthy: the fix goes back to it (healthy
                                   runs: 1.5x by step 700) */
#define DIAG_EXC_AFTER 64       /* steps after the latest of a run of setting changes
                                   (each within this many of the one before) when
                                   their effect is judged against the loss before
                                   the first of them ... */
#define DIAG_EXC_WORSE 0.05     /* ... worse: the mean loss (DIAG_LEARN_MEAN steps)
                                   above it by this and by more than their noise,
                                   two standard errors of the two means (LR 1e-3 ->
                                   0.3 -> 1e-3 on 4 blocks: 0.6 above at step 279) */
#define DIAG_FIX_CHECK 150      /* a fix must beat the state it replaced within this
                                   many steps, or "the fix did not help" ... */
#define DIAG_FIX_FALL 0.05      /* ... and its mean loss be this far below the loss
                                   where it went back to (nats) */
#define DIAG_ATTN_GROW 100.0    /* a layer's attention logit max this many times its
                                   value at the first step seen ... */
#define DIAG_ATTN_LOGIT 100.0   /* ... and at least this (logits 20 apart already
                                   give a one-hot softmax, to 2e-9; healthy runs,
                                   LR 1e-3 and 3e-3 at 2-6 blocks, QK-norm's at
                                   3e-2: under 45, and 35x at most) ... */
#define DIAG_ATTN_ENTROPY 0.1   /* ... while that layer's attention entropy fell
                                   below this share of its first step's: the
                                   attention collapsed onto one key a query
                                   (Pre-LN at lr 3e-2: 2.46 -> 0.11 nats by step
                                   100, logits 2 -> 405) */
#define DIAG_SPARSE_MIN 4       /* update ratios a mean needs when a stream says them
                                   on some steps only (the probe's update_every=10:
                                   6 or 7 in the window), over at least DIAG_WINDOW/2
                                   steps observed */

typedef enum { DIAG_WARNING = 0, DIAG_DIAGNOSIS = 1 } diag_kind;

typedef enum {
    DIAG_R_HEADROOM = 0, /* warning: headroom low and falling */
    DIAG_R_VAL_NAN,      /* warning: the validation loss is not finite */
    DIAG_R_SCALE,        /* warning + diagnosis: the loss scale collapsed */
    DIAG_R_UPDATE,       /* warning: a layer's update ratio vanished */
    DIAG_R_RESUMED,      /* warning: resumed after a rewind with nothing changed */
    DIAG_R_STALL,        /* diagnosis: the Post-LN stall on the unigram plateau */
    DIAG_R_NORM_VAR,     /* diagnosis: a norm's variance overflowed the format */
    DIAG_R_GROWTH,       /* diagnosis: activations grew toward the limit */
    DIAG_R_LR,           /* diagnosis: LR above what the run tolerated */
    DIAG_R_BLOWUP,       /* diagnosis: the loss rose far above its start, finite */
    DIAG_R_LR_HIGH,      /* diagnosis: the weights move too far a step for the LR */
    DIAG_R_LOSS,         /* diagnosis: the loss computed in the format is inf */
    DIAG_R_NOT_LEARNING, /* diagnosis: no real fall from the first loss */
    DIAG_R_OVERFIT,      /* diagnosis: validation rises from its minimum as train falls */
    DIAG_R_LR_WARN,      /* warning: update per unit LR under DIAG_UPDATE_KEEP and the
                            activations grown, while finite */
    DIAG_R_GROWTH_WARN,  /* warning: act max grown DIAG_ACT_GROW-fold and growing */
    DIAG_R_START,        /* warning: step 1's loss or gradient norm is not sane */
    DIAG_R_CHANGE,       /* diagnosis: a setting change the run did not survive */
    DIAG_R_ATTN_LOGITS,  /* diagnosis: attention logits grew by orders of magnitude
                            and the attention entropy collapsed */
    DIAG_R_UNDERFLOW,    /* diagnosis: not learning, its gradients lost to underflow */
    DIAG_R_EXCURSION,    /* diagnosis: setting changes left the run worse than before them */
    DIAG_R_SPIKE,        /* diagnosis: the loss rose above its start mid-run and came back */
    DIAG_R_COUNT
} diag_rule;

typedef struct {
    diag_kind kind;
    diag_rule rule;
    int layer;        /* the layer concerned, or -1 */
    long step;        /* the step it was found at */
    double value[4];  /* the rule's numbers (see each rule in diagnose.c) */
    char text[DIAG_TEXT]; /* the finding, one line */
    char hint[DIAG_TEXT]; /* what to try, one line */
    /* the first next step as script commands ("lr 0.002", "fp32-norms on;
     * lr x0.5"), "" for none; applied (the a key, --on-diverge fix) after
     * going back as fix_from says: a rewind to the latest snapshot at or
     * before fix_before, a re-init, or nothing */
    char fix[DIAG_FIX_TEXT];
    int fix_from;
    long fix_before;
} diag_finding;

enum { DIAG_FROM_SNAPSHOT = 0, DIAG_FROM_START = 1, DIAG_FROM_HERE = 2 };

/* One step as the rules keep it. */
typedef struct {
    long step;
    int updated;               /* the step changed the weights (finite, not skipped) */
    float loss, lr, scale;
    float gnorm, clip;         /* global gradient norm (before clipping), --clip */
    float out_change;          /* metrics.h's; NaN where not measured (not said) */
    float grad[NS_MAX_LAYERS]; /* per-layer gradient norm, sqrt(attn^2 + mlp^2 + ln^2) */
    /* every per-layer column of the table (metrics_layer_cols) by its
     * index: lc[METRICS_LC_ACT_MAX][l] is layer l's act max. Copied by a
     * loop over the table, so a new column reaches the rules without a
     * line of copy code (diag_point_lc reads one) */
    float lc[METRICS_LAYER_COLS][NS_MAX_LAYERS];
} diag_point;

/* Layer l's column k (METRICS_LC_*) at point p. */
static inline float diag_point_lc(const diag_point *p, int k, int l) { return p->lc[k][l]; }

/* The settings the rules compare between steps: every step column that
 * is a setting in force (metrics_step_col(k)->setting: norm, its kind,
 * warmup, clip, precision, fp32 norms, the gains' init), as its text,
 * with the two a step carries outside the columns (the peak LR, dynamic
 * loss scaling); the numbers the rules read are kept as numbers too. */
#define DIAG_SET_TEXT 16
typedef struct {
    float lr_peak, clip;
    int warmup_on, precision, fp32_norms, norm, norm_kind, scale_dynamic;
    char col[METRICS_STEP_MAX][DIAG_SET_TEXT]; /* "" for a column not a setting or not said */
} diag_settings;

typedef struct {
    double plateau;        /* unigram entropy of the data, nats */
    diag_point hist[DIAG_WINDOW]; /* ring: step i at hist[i % DIAG_WINDOW] */
    long n;                /* points in the ring's episode (since a rewind) */
    long last_step;        /* the last step observed (0: none) */
    diag_settings set;     /* of the last step */
    int have_set;
    long changed_at;       /* step before which settings last changed (-1 never) */
    float lr_tolerated;    /* the latest peak LR the run trained at for
                              DIAG_LR_HELD steps or more (or its first) */
    long lr_since;         /* the step the peak LR in force began */
    long lr_raised_at;     /* the latest raise above lr_tolerated (-1: none) */
    long warmup_off_at;    /* the step warmup was turned off (-1: never; 0: from the start) */
    long diverged_at;      /* the first divergence since the start or the
                              latest rewind (0: none) */
    long finite_run;       /* finite steps in a row */
    diag_settings diverged_set; /* the settings in force then */
    int div_seen;          /* this divergence was diagnosed: until a rewind or
                              DIAG_WINDOW finite steps, another is no news (a
                              setting changed while diverged and resumed without
                              a rewind diverges again from the same weights) */
    long stall_run;        /* consecutive steps meeting the stall condition */
    double stall_mean[DIAG_STALL_BACK]; /* their mean losses, a ring by stall_run */
    int stalled;
    long stall_at;         /* the step the episode's stall was diagnosed (0: none) */
    long stall_over;       /* this step ended that stall, the run below the
                              plateau (0: it did not) */
    double stall_over_loss; /* its mean loss then */
    int exploded;          /* the blow-up holds now (the EXPLODED state) */
    double first_loss;     /* the first finite loss observed (0: none yet) */
    long blow_from;        /* the first step of the blow-up's window (0: none) */
    long head_left;        /* steps left at the last headroom warning */
    unsigned warned;       /* bit per rule: warned this episode */
    diag_finding last_diagnosis; /* the latest diagnosis (kind DIAG_DIAGNOSIS); step 0 = none */
    /* what the checks (diag_checks) read: the metrics' own, never engine state */
    double plateau_given;  /* diag_init's: the plateau when a step says none (NAN: none) */
    int vocab;             /* the latest step's vocabulary size (0: not known) */
    int n_layer;           /* the latest step's layers */
    long start_step;       /* the first step seen since the start or a rewind (0: none) */
    float start_loss;      /* its loss (NaN: not known) */
    float start_gnorm;     /* the first update's gradient norm (NaN: none yet) ... */
    long start_gnorm_step; /* ... and its step */
    long learn_from;       /* learning is judged since this step (the start, a change) */
    double learn_loss;     /* the first finite loss at or after it (NaN: none yet) */
    long band_n;           /* updated steps in the early band (DIAG_WINDOW at most) */
    long band_last;        /* the band's last step */
    float band_act, band_loss; /* their largest act max, loss */
    float first_upd_lr;    /* the top layer's first said update ratio / its step's LR (NaN: none) */
    float band_oc;         /* their largest out_change (NaN: not measured) */
    long val_n;            /* finite validations seen (since the start or a rewind) */
    float val_min, val_last, val_min_train, val_last_train; /* the train loss then: the
                                                               mean of DIAG_LEARN_MEAN steps */
    long val_min_step, val_last_step;
    int val_above;         /* validations in a row DIAG_OVERFIT_MARGIN above val_min while
                              train is below val_min_train */
    int last_nonfinite;    /* the latest step was not finite */
    long last_fault_step;  /* ... since this step (the episode's first), and its fault */
    char last_fault[64];
    /* the latest setting change, a candidate cause of what follows it */
    long change_at;        /* the step before which it took effect (0: none) */
    long change_held;      /* steps the settings before it were in force */
    double change_loss;    /* the mean loss just before it (NaN: not known) */
    char change_what[DIAG_TEXT / 2]; /* "norm pre -> post, lr 0.001 -> 0.01" */
    char change_undo[DIAG_FIX_TEXT]; /* the commands that undo it ("norm pre"), or "" */
    /* a run of setting changes (an excursion), judged against the loss before it */
    long exc_at;           /* the step before which the first took effect (0: none) */
    long exc_last;         /* ... the latest of them */
    double exc_loss;       /* the mean loss before the first (NaN: not known) */
    double exc_var;        /* ... the variance of its steps' losses */
    double exc_now;        /* the mean loss when it was judged worse (NaN: it was not) */
    int exc_judged;
    char exc_what[DIAG_TEXT / 2];  /* "lr 0.001 -> 0.3, lr 0.3 -> 0.001" */
    char exc_undo[DIAG_FIX_TEXT];  /* the first change's undo */
    /* a spike: the loss above the first update's mid-run, judged once it is back */
    long spike_at;         /* its first step above (0: none) */
    long spike_end;        /* ... its latest step above */
    long spike_peak_step;
    float spike_peak;
    double spike_from;     /* the mean loss of the DIAG_LEARN_MEAN steps before it */
    double spike_var;      /* ... their variance */
    int spike_judged;
    long trend_from;       /* trend fits use steps after this one: a change of the
                              precision or the norm makes the older rows another run's */
    /* each layer's attention logit max and entropy at the first step seen
     * (again after a rewind to before it); NaN where a stream does not say */
    long attn_base_step;   /* that step (0: none yet) */
    float attn_base[NS_MAX_LAYERS], attn_ent_base[NS_MAX_LAYERS];
    long resumed_blind;    /* a run resumed at this step from a checkpoint without the
                              diagnosis' state: what came before is not known (0: none) */
} diag;

/* Start with the data's unigram plateau (diag_unigram_entropy), used for
 * a step whose metrics do not carry one (step_metrics.data_entropy NaN);
 * NAN: none, the rules that need it say "not known". */
void diag_init(diag *d, double plateau);

/* The state as bytes, for a checkpoint (diagnose_state.c): every field a rule
 * or a check reads, so a resumed run is diagnosed as the run that did not
 * stop. save: 0 and a malloc'd buffer in *out (the caller frees it), or -1
 * (out of memory). load: 0, or -1 with why (the bytes are untrusted: a
 * malformed state is refused whole, d untouched). A new field of diag is
 * a line of diagnose_state.c's list. */
int diag_state_save(const diag *d, uint8_t **out, size_t *n);
int diag_state_load(diag *d, const uint8_t *p, size_t n, char *why, size_t len);
/* A run resumed at `step` from a checkpoint that does not carry the
 * state (one older than version 6): the checks say what is not known. */
void diag_state_unknown(diag *d, long step);

/* ---- the checks behind a verdict ---------------------------------------------
 * "Healthy" is a finding like any other: each question below is asked of
 * the metrics seen so far and answered with its numbers, or "not yet
 * known: why" (too few steps, no validation, a stream that does not say
 * the value). The order is fixed; the question strings are static. */
typedef enum { DIAG_Q_UNKNOWN = 0, DIAG_Q_OK, DIAG_Q_BAD } diag_answer;
typedef struct {
    const char *question; /* "is it learning", ... (static) */
    diag_answer answer;
    char text[DIAG_TEXT]; /* the numbers, or "not yet known: ..." */
} diag_check;
enum {
    DIAG_C_START = 0, /* did it start sane: step 1's loss vs ln(vocab), gradient norm */
    DIAG_C_FINITE,    /* is every value finite (no divergence, no blow-up) */
    DIAG_C_LEARNING,  /* is it learning: the fall from the first loss */
    DIAG_C_VAL,       /* does validation follow training (overfitting) */
    DIAG_C_LR,        /* is the LR within what the run tolerates (update ratio) */
    DIAG_C_HEADROOM,  /* is there headroom before the format's limit */
    DIAG_C_GRADIENT,  /* does the gradient reach the bottom layers */
    DIAG_CHECKS
};
/* The checks of the run as observed so far, in that order: min(max,
 * DIAG_CHECKS) written, their count returned. */
int diag_checks(const diag *d, diag_check *out, int max);
/* 1 only when every check answered DIAG_Q_OK. */
int diag_healthy(const diag *d);
/* The mean loss of the newest DIAG_LEARN_MEAN finite steps that changed
 * the weights, since the start or the latest rewind (NaN: none). */
double diag_recent_loss(const diag *d);
/* The answer's word: "ok", "no", "not yet known". */
const char *diag_answer_name(diag_answer a);
/* Is a snapshot's step (its metrics m) still healthy, by the band of
 * the run's early steps: finite, loss at most DIAG_STALL_ABOVE above the
 * band's largest, act max within DIAG_BAND_ACT times the band's, top
 * update ratio at most DIAG_UPDATE_HIGH? 1 if so; else 0 with why
 * ("act max 2e4, 2000x the early 10"). -1 when the band is not known
 * (fewer than DIAG_BAND_STEPS early steps seen). */
int diag_snapshot_healthy(const diag *d, const step_metrics *m, char *why, size_t len);
/* Entropy in nats of the byte distribution of b[0..n): the loss of a model
 * that knows only which bytes are common. Past 4 MiB, estimated from 64
 * evenly spaced runs of 64 KiB. */
double diag_unigram_entropy(const uint8_t *b, size_t n);
/* Observe one step (in order; a step number at or below the last one is a
 * rewind). Writes up to max findings to out and returns their count. A
 * step with no layers (n_layer < 1: a stream that says only its loss) is
 * not observed: every rule reads a top and a bottom layer. */
int diag_observe(diag *d, const step_metrics *m, diag_finding *out, int max);
/* Is the run on the stall plateau now? (the STALLED state) */
int diag_stalled(const diag *d);
/* Did the last step observed end a stall diagnosed earlier, the run having
 * learned its way below the plateau? Then 1, and its line in buf: "off
 * the plateau at step 262: mean loss 2.931, 0.155 below it; the stall
 * diagnosed at step 199 is over" (a stall's hint is a guess that the run
 * has proved wrong: the log says so). */
int diag_stall_over(const diag *d, char *buf, size_t len);
/* Has the loss blown up, finite, now? (the exploded state) */
int diag_exploded(const diag *d);
/* Does a finding of this episode still hold (a warning given, a divergence
 * diagnosed)? 0 after a rewind or a setting change, until the next one. */
int diag_episode_open(const diag *d);
/* The rule's short name, for tests and exports ("headroom", "stall", ...). */
const char *diag_rule_name(diag_rule r);

/* A rewind target near the format's limit: a run resumed from it with a
 * lower LR can stay stuck there, so an earlier snapshot is offered. */
#define DIAG_SNAP_NEAR 2.0 /* doublings of headroom at the snapshot's step */
/* The least headroom over m's layers, and its layer; NAN without layers
 * or metrics (m NULL). */
double diag_least_headroom(const step_metrics *m, int *layer);
/* How close the snapshot of `step` is to the limit, from its step's
 * metrics m (NULL: not kept), and, when it is near and an earlier one is
 * kept (step2 > 0; m2 NULL when its metrics are not), that one with how to
 * reach it (`again`: "b twice"): "step 150, headroom 1.3 (layer 3); step
 * 100 had 2.9 (b twice)", headroom in doublings below the limit. 1 when
 * the earlier is offered. */
int diag_snapshot_text(long step, const step_metrics *m, long step2, const step_metrics *m2,
                       const char *again, char *buf, size_t len);

#endif
