/* metrics.h - what one training step measured, and its CSV/JSONL forms.
 *
 * A step_metrics is plain data of fixed size (no pointers), so the trainer
 * can publish it and a front end can copy it whole. Layer 0 is the block
 * next to the embeddings.
 */
#ifndef NS_METRICS_H
#define NS_METRICS_H

#include <stdio.h>

#include "config.h"
#include "settings.h"

/* Layers a step can carry: the lab trains at most 64 (--layers), a followed
 * stream (--follow) may have more; 128 keeps a trainer_snapshot's heatmap
 * at 2 MiB (TRAINER_HIST x 128 floats). */
#define NS_MAX_LAYERS 128

/* Step columns a step can carry: one bit each of step_metrics.unknown.
 * Building the column table checks the settings table against it. */
#define METRICS_STEP_MAX 32

typedef struct {
    float grad_attn;    /* ||d loss / d attention params|| (qkv, proj, biases) */
    float grad_ffn;     /* ||d loss / d MLP params|| */
    float grad_ln;      /* ||d loss / d norm params|| (ln1, ln2) */
    float act_max;      /* max |x| of any activation made inside the block */
    float resid_max;    /* max |x| of the residual stream leaving the block */
    float resid_rms;    /* RMS of the residual stream leaving the block */
    float update_ratio; /* ||delta W|| / ||W|| of the block's parameters */
    float overflow;     /* values rounded to inf this step (forward + backward) */
    float underflow;    /* nonzero values rounded to zero or a subnormal */
    float headroom;     /* log2(limit / act_max): doublings left; the limit is the
                           format max, or its square root (256 in fp16) when norms
                           square their inputs in the format (--fp32-norms off) */
    float attn_logit_max; /* max |q.k|/sqrt(d_head) over heads and causal pairs, before
                             the softmax (after QK-norm when it is on) */
    float attn_entropy;   /* the attention's entropy in nats, mean over heads and queries */
    float branch_ratio;   /* RMS of what the sublayers add to the residual stream over RMS
                             of the stream entering the block */
    float norm_in_rms;    /* RMS of the block's first norm's input; NaN without one */
    unsigned unknown;   /* bit k: metrics_layer_cols[k] was not said (a followed
                           stream's: an empty group, an update ratio between its
                           measurements); 0 for the lab's own rows. Unknown is not
                           NaN: NaN is a value measured and not finite */
} layer_metrics;

typedef struct {
    long step;          /* steps completed, 1 for the first */
    float loss;         /* mean cross-entropy of this step's batch (nats) */
    float val_loss;     /* validation loss after this step, when has_val */
    int has_val;
    float lr;           /* learning rate used by this step */
    float grad_norm;    /* global gradient norm before clipping */
    double tokens_per_s;
    int in_warmup;      /* the LR ramp was below its peak */
    float lr_peak;
    int nonfinite;      /* diverged: a forward value, the loss or (without
                           dynamic scaling) a gradient was not finite; no update */
    float loss_scale;   /* in force for this step; 1 in fp32 or when off */
    int loss_scale_dynamic;
    int skipped;        /* the dynamic loss scaler skipped this step */
    float logz_mean;    /* mean log Z of the output softmax over the step's batch: the
                           drift z-loss holds near 0 (PaLM) */
    float logit_max;    /* the largest output logit of the step's batch */
    float z_loss_term;  /* --z-loss's term of the optimized loss: X mean(log Z)^2; 0 off */
    float out_change;   /* ||f(x; w_t) - f(x; w_t-1)|| / ||f(x; w_t-1)||: how far this step's
                           update moved the logits of one fixed batch (Liu et al. 2020,
                           Wang et al. 2022); measured on the first ENGINE_OC_STEPS steps
                           and at each validation, unknown (bit METRICS_COL_OUT_CHANGE of
                           unknown) elsewhere */
    char fault[64];     /* first non-finite: "backward, layer 3, MLP fc2", or "" */
    int stalled;        /* the run loop's diagnosis (diagnose.c) says STALLED;
                           not set by the engine */
    int exploded;       /* the run loop's diagnosis says the loss blew up, finite
                           (state "exploded"); not set by the engine */
    int fixed;          /* the first step after the run loop applied a fix
                           (state "fixed"); not set by the engine */
    int fault_layer;    /* the block of that first non-finite op, or -1 (none,
                         * or outside the blocks: embeddings, head, loss) */
    unsigned unknown;   /* bit k: metrics_step_col(k) was not said (a followed
                           stream's); for the lab's own rows only out_change
                           between its measurements */
    /* what the diagnosis needs to know of the data, carried with every
     * step so the rules never read engine state (diagnose.h): the lab's
     * trainer and a stream reader fill them alike */
    int vocab;          /* the output vocabulary's size; 0 = not known */
    float data_entropy; /* unigram entropy of the training targets, nats (the
                           loss of a model that knows only which tokens are
                           common); NaN = not known */
    /* the settings in force for this step: set[k] is step column k's
     * value when the column is a setting's (metrics_step_col(k)->setting),
     * as its row holds it (an enum's index, on/off 1/0, a number); the
     * engine fills them with one loop over the columns */
    double set[METRICS_STEP_MAX];
    int n_layer;
    layer_metrics layer[NS_MAX_LAYERS];
} step_metrics;

/* ---- the step columns: one table --------------------------------------------
 * Every column of a step row, in the order the CSV and JSONL write them:
 * the measured ones below, and between and after them the settings
 * table's rows with a step_col (settings.h), at those indices. The
 * writers below and every reader (stream.c, plot_data.c, the sweep's
 * results) walk it, so a setting's column is its row. */
typedef enum {
    METRICS_T_LONG,   /* long: step */
    METRICS_T_FLOAT,  /* float: %.9g; nan/inf/-inf in CSV, null in JSON */
    METRICS_T_VAL,    /* float measured when has_val; empty (CSV) / null (JSON) else */
    METRICS_T_SPARSE, /* float measured on some steps of the lab's own runs: empty (CSV) /
                         left out (JSON) where its bit of unknown is set */
    METRICS_T_RATE,   /* double: %.1f */
    METRICS_T_INT,    /* int */
    METRICS_T_SETTING /* set[k], spelled by its row: names, on/off, or %.9g */
} metrics_type;

typedef struct {
    const char *name;
    size_t offset;     /* in step_metrics (measured), or in layer_metrics for a layer column */
    metrics_type type;
    const ns_setting *setting; /* a setting in force (its value in set[k]): a change marks
                                * the loss chart; NULL for a measured column */
} metrics_col;

/* The measured step columns' indices (and bits of unknown); the others
 * are the settings' step_col: 6..11 (norm .. fp32_norms), 14..16. A new
 * column, measured or a setting's, takes the next free index. */
enum {
    METRICS_COL_STEP, METRICS_COL_LOSS, METRICS_COL_VAL, METRICS_COL_LR, METRICS_COL_GNORM,
    METRICS_COL_TPS, METRICS_COL_SCALE = 12, METRICS_COL_SKIPPED,
    METRICS_COL_LOGZ = 17, METRICS_COL_LOGIT_MAX = 18, METRICS_COL_ZTERM = 19,
    METRICS_COL_OUT_CHANGE = 20
};
/* The number of step columns, and column k (0 <= k < that). */
int metrics_step_ncols(void);
const metrics_col *metrics_step_col(int k);
/* Whether column k's values are names (an enum's, on/off), not numbers. */
int metrics_step_col_named(int k);
/* The value of the setting column named col in m (an enum's index, on/off
 * 1/0, a number), and setting it (a float row's rounded as its field). */
double metrics_setting(const step_metrics *m, const char *col);
void metrics_set_setting(step_metrics *m, const char *col, double v);
/* Whether m says the setting column named col (a stream's may not). */
int metrics_setting_known(const step_metrics *m, const char *col);
/* The settings the engine's rules and views read by name. */
static inline norm_place metrics_norm(const step_metrics *m)
{
    return (norm_place)(int)metrics_setting(m, "norm");
}
static inline norm_kind metrics_norm_kind(const step_metrics *m)
{
    return (norm_kind)(int)metrics_setting(m, "norm_kind");
}
static inline numfmt metrics_precision(const step_metrics *m)
{
    return (numfmt)(int)metrics_setting(m, "precision");
}
static inline int metrics_warmup_on(const step_metrics *m)
{
    return metrics_setting(m, "warmup") != 0;
}
static inline int metrics_fp32_norms(const step_metrics *m)
{
    return metrics_setting(m, "fp32_norms") != 0;
}
static inline float metrics_clip(const step_metrics *m)
{
    return (float)metrics_setting(m, "clip");
}
static inline float metrics_gamma0(const step_metrics *m)
{
    return (float)metrics_setting(m, "ln_gamma_init");
}
/* The layer columns' indices in metrics_layer_cols (and bits of unknown). */
enum {
    METRICS_LC_GRAD_ATTN, METRICS_LC_GRAD_FFN, METRICS_LC_GRAD_LN, METRICS_LC_ACT_MAX,
    METRICS_LC_RESID_MAX, METRICS_LC_RESID_RMS, METRICS_LC_UPDATE, METRICS_LC_OVERFLOW,
    METRICS_LC_UNDERFLOW, METRICS_LC_HEADROOM, METRICS_LC_ATTN_LOGIT, METRICS_LC_ATTN_ENTROPY,
    METRICS_LC_BRANCH, METRICS_LC_NORM_IN,
    METRICS_LAYER_COLS
};
/* Is layer column k known in l (said by its row)? */
static inline int metrics_layer_known(const layer_metrics *l, int k)
{
    return !(l->unknown & (1u << k));
}
/* Is column k known in m (said by its row)? */
static inline int metrics_known(const step_metrics *m, int k) { return !(m->unknown & (1u << k)); }
extern const metrics_col metrics_layer_cols[METRICS_LAYER_COLS];
/* The index of a step column's name (len bytes), or -1. */
int metrics_step_col_find(const char *name, size_t len);
/* Set column k of m from a number (the numeric types) or a name (the
 * enums, on/off): 0, or -1 when the name is not one the column takes. */
int metrics_step_col_set_num(step_metrics *m, int k, double v);
int metrics_step_col_set_name(step_metrics *m, int k, const char *s);
/* Set column k of m from a setting's value as its row holds it (an enum's
 * index, on/off as 1/0, a number): what the engine copies into each step. */
int metrics_step_col_set_value(step_metrics *m, int k, double v);
/* Setting column k's value v (as its row holds it) as the CSV spells it. */
void metrics_setting_text(int k, double v, char *buf, size_t n);
/* Column k of m as the CSV spells it ("" for val_loss not measured). */
void metrics_step_col_text(const step_metrics *m, int k, char *buf, size_t n);

/* The text each number had where it was read (a stream's JSON token), so a
 * conversion keeps its digits: "0.001" stays 0.001, not the float nearest
 * to it printed to 9 digits. "" = format the value. */
#define METRICS_DIGITS 24
typedef struct {
    char step[METRICS_STEP_MAX][METRICS_DIGITS];
    char layer[NS_MAX_LAYERS][METRICS_LAYER_COLS][METRICS_DIGITS];
} metrics_digits;

/* CSV header and one row (with the state columns); floats with enough digits to round-trip,
 * non-finite values as nan, inf, -inf; val_loss empty when not measured. */
void metrics_csv_header(FILE *f, int n_layer);
void metrics_csv_row(FILE *f, const step_metrics *m);
/* One number as the CSV writes it: %.9g round-trips a float; non-finite
 * values get fixed spellings (nan, inf, -inf) so a reader never sees a
 * platform's "-nan" or "infinity". */
void metrics_csv_float(FILE *f, double x);
/* x with `digits` significant digits, or nan, inf, -inf (no sign on a NaN,
 * whatever the platform's printf says). */
void metrics_print_num(FILE *f, double x, int digits);
/* The state columns, written after all the others (so every older column
 * keeps its place): ",state,first_nonfinite" with the prefix on each name;
 * state is "diverged", "exploded", "stalled", "fixed" or empty, first_nonfinite the fault with
 * its commas written as ';' (no CSV field is quoted), or empty. Headless
 * and --compare rows put a's and b's after both runs' other columns. */
void metrics_csv_state_header(FILE *f, const char *prefix);
void metrics_csv_state_fields(FILE *f, const step_metrics *m);
/* "diverged", "exploded", "stalled", "fixed" or "" */
const char *metrics_state_name(const step_metrics *m);
/* One JSON object per line with the same names; non-finite as null. */
void metrics_jsonl_row(FILE *f, const step_metrics *m);
/* The same with "run":"a" or "b" first (twin runs of --compare). */
void metrics_jsonl_run(FILE *f, const step_metrics *m, const char *run);
/* Without the newline, and with a prefix on every column name: twin runs
 * put "b_" columns after the first run's on the same row. */
void metrics_csv_header_fields(FILE *f, int n_layer, const char *prefix);
void metrics_csv_fields(FILE *f, const step_metrics *m);
/* A row as read from a stream: the numbers with the digits they had (d may
 * be NULL), the columns the stream did not say (m->unknown) empty. */
void metrics_csv_row_as_read(FILE *f, const step_metrics *m, const metrics_digits *d);

/* The per-layer columns by name ("grad_attn", ... "headroom", as the CSV and
 * JSONL call them after "l<i>_"): the index of a name (len bytes), or -1;
 * and a column set by index, so a reader fills what the writers wrote. */
int metrics_layer_col_find(const char *name, size_t len);
void metrics_layer_col_set(layer_metrics *l, int k, float v);
/* Layer column k's value in l (NaN past the last). */
float metrics_layer_col_get(const layer_metrics *l, int k);

/* A layer's gradient norm over all its parameters, sqrt(attn^2 + mlp^2 +
 * norm^2): the heatmap's value. A group not known (a stream's empty
 * group) adds nothing; NaN when none is known (metrics_layer_gnorm_known). */
float metrics_layer_gnorm(const layer_metrics *l);
int metrics_layer_gnorm_known(const layer_metrics *l);

/* The spike rule, shared by the engine and the stream reader: a value more
 * than METRICS_SPIKE_Z standard deviations above the mean of the last
 * METRICS_SPIKE_WINDOW values and a multiple of their median, judged once
 * METRICS_SPIKE_MIN values are in, at most one warning every
 * METRICS_SPIKE_QUIET steps. The z-score alone fired on healthy runs: a
 * value with a narrow spread (DeepNorm's gradient norm at step 277 of the
 * deep-stable lesson: 11 sd, only 2.5x the median) is many sd above its
 * mean by a small factor. Gradient norms are heavy-tailed besides: a
 * healthy Pre-LN run has single steps at 10x the median that Adam absorbs
 * (its update does not grow with the gradient), so a gradient-norm spike
 * must last two steps (the warning comes on the second and names the
 * first); a loss spike counts at once. Non-finite values are not judged
 * and not kept (divergence is reported on its own). */
#define METRICS_SPIKE_WINDOW 128
#define METRICS_SPIKE_MIN 32
#define METRICS_SPIKE_Z 6.0
#define METRICS_SPIKE_QUIET 64
#define METRICS_SPIKE_LOSS_RATIO 1.5  /* a loss this many times the median, at once */
#define METRICS_SPIKE_GNORM_RATIO 4.0 /* a gradient norm, on two steps in a row */
typedef enum { METRICS_SPIKE_LOSS, METRICS_SPIKE_GNORM } metrics_spike_kind;
typedef struct {
    double v[METRICS_SPIKE_WINDOW];
    long n; /* values seen */
    long last_warn;
    double ratio; /* a spike is also this many times the window's median */
    int sustain;  /* steps it must last: 1, or 2 (the next step too) */
    long cand;    /* a first step over both bounds waiting for the next (0: none) */
    double cand_x, cand_z, cand_med;
} metrics_spike;
/* Empty, with the rule of a loss or of a gradient norm. */
void metrics_spike_reset(metrics_spike *w, metrics_spike_kind kind);
/* Add x, the value of step `step`; returns 1 on a spike, with the warning
 * ("warning: loss spike at step 12: ...", what = "loss") in msg. */
int metrics_spike_check(metrics_spike *w, long step, double x, const char *what, char *msg,
                        size_t msglen);

#endif
