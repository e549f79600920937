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

/* Layers a step can carry: the lab trains at most 64 (--layers), a followed
 * stream (--follow) may have more; 128 keeps a trainer_snapshot's heatmap
 * at 2 MiB (TRAINER_HIST x 128 floats). */
#define NS_MAX_LAYERS 128

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
    float headroom;     /* log2(format max / act_max): doublings left */
} layer_metrics;

typedef struct {
    long step;          /* steps completed, 1 for the first */
    float loss;         /* mean cross-entropy of this step's batch (nats) */
    float val_loss;     /* validation loss after this step, when has_val */
    int has_val;
    float lr;           /* learning rate used by this step */
    float grad_norm;    /* global gradient norm before clipping */
    double tokens_per_s;
    /* settings in force for this step */
    norm_place norm;
    norm_kind norm_kind;
    int warmup_on;
    int in_warmup;      /* the LR ramp was below its peak */
    float clip;         /* 0 = off */
    float lr_peak;
    int nonfinite;      /* diverged: a forward value, the loss or (without
                           dynamic scaling) a gradient was not finite; no update */
    numfmt precision;
    int fp32_norms;
    float loss_scale;   /* in force for this step; 1 in fp32 or when off */
    int loss_scale_dynamic;
    int skipped;        /* the dynamic loss scaler skipped this step */
    char fault[64];     /* first non-finite: "backward, layer 3, MLP fc2", or "" */
    int fault_layer;    /* the block of that first non-finite op, or -1 (none,
                         * or outside the blocks: embeddings, head, loss) */
    int n_layer;
    layer_metrics layer[NS_MAX_LAYERS];
} step_metrics;

/* CSV header and one row; floats with enough digits to round-trip,
 * non-finite values as nan, inf, -inf; val_loss empty when not measured. */
void metrics_csv_header(FILE *f, int n_layer);
void metrics_csv_row(FILE *f, const step_metrics *m);
/* One number as the CSV writes it: %.9g round-trips a float; non-finite
 * values get fixed spellings (nan, inf, -inf) so a reader never sees a
 * platform's "-nan" or "infinity". */
void metrics_csv_float(FILE *f, double x);
/* One JSON object per line with the same names; non-finite as null. */
void metrics_jsonl_row(FILE *f, const step_metrics *m);
/* The same with "run":"a" or "b" first (twin runs of --compare). */
void metrics_jsonl_run(FILE *f, const step_metrics *m, const char *run);
/* Without the newline, and with a prefix on every column name: twin runs
 * put "b_" columns after the first run's on the same row. */
void metrics_csv_header_fields(FILE *f, int n_layer, const char *prefix);
void metrics_csv_fields(FILE *f, const step_metrics *m);

/* The per-layer columns by name ("grad_attn", ... "headroom", as the CSV and
 * JSONL call them after "l<i>_"): the index of a name (len bytes), or -1;
 * and a column set by index, so a reader fills what the writers wrote. */
enum { METRICS_LAYER_COLS = 10 };
int metrics_layer_col_find(const char *name, size_t len);
void metrics_layer_col_set(layer_metrics *l, int k, float v);

/* A layer's gradient norm over all its parameters, sqrt(attn^2 + mlp^2 +
 * norm^2): the heatmap's value. */
float metrics_layer_gnorm(const layer_metrics *l);

/* The loss-spike rule: a value more than METRICS_SPIKE_Z standard deviations
 * above the mean of the last METRICS_SPIKE_WINDOW values (and 5% above that
 * mean), judged once METRICS_SPIKE_MIN values are in, at most one warning
 * every METRICS_SPIKE_QUIET steps. Non-finite values are not judged and not
 * kept (divergence is reported on its own). */
#define METRICS_SPIKE_WINDOW 128
#define METRICS_SPIKE_MIN 32
#define METRICS_SPIKE_Z 6.0
#define METRICS_SPIKE_QUIET 16
typedef struct {
    double v[METRICS_SPIKE_WINDOW];
    long n; /* values seen */
    long last_warn;
} metrics_spike;
/* Add x, the value of step `step`; returns 1 on a spike, with the warning
 * ("warning: loss spike at step 12: ...", what = "loss") in msg. */
int metrics_spike_check(metrics_spike *w, long step, double x, const char *what, char *msg,
                        size_t msglen);

#endif
