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

#define NS_MAX_LAYERS 64

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
    int stalled;        /* the run loop's diagnosis (diagnose.c) says STALLED;
                           not set by the engine */
    int n_layer;
    layer_metrics layer[NS_MAX_LAYERS];
} step_metrics;

/* CSV header and one row (with the state columns); floats with enough digits to round-trip,
 * non-finite values as nan, inf, -inf; val_loss empty when not measured. */
void metrics_csv_header(FILE *f, int n_layer);
void metrics_csv_row(FILE *f, const step_metrics *m);
/* One number as the CSV writes it: %.9g round-trips a float; non-finite
 * values get fixed spellings (nan, inf, -inf) so a reader never sees a
 * platform's "-nan" or "infinity". */
void metrics_csv_float(FILE *f, double x);
/* The state columns, written after all the others (so every older column
 * keeps its place): ",state,first_nonfinite" with the prefix on each name;
 * state is "diverged", "stalled" or empty, first_nonfinite the fault with
 * its commas written as ';' (no CSV field is quoted), or empty. Headless
 * and --compare rows put a's and b's after both runs' other columns. */
void metrics_csv_state_header(FILE *f, const char *prefix);
void metrics_csv_state_fields(FILE *f, const step_metrics *m);
/* "diverged", "stalled" or "" */
const char *metrics_state_name(const step_metrics *m);
/* One JSON object per line with the same names; non-finite as null. */
void metrics_jsonl_row(FILE *f, const step_metrics *m);
/* The same with "run":"a" or "b" first (twin runs of --compare). */
void metrics_jsonl_run(FILE *f, const step_metrics *m, const char *run);
/* Without the newline, and with a prefix on every column name: twin runs
 * put "b_" columns after the first run's on the same row. */
void metrics_csv_header_fields(FILE *f, int n_layer, const char *prefix);
void metrics_csv_fields(FILE *f, const step_metrics *m);

#endif
