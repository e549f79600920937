/* model.h - the byte-level decoder-only Transformer: parameters, forward,
 * backward, and the per-layer statistics the dashboard shows.
 *
 * All parameters live in one float array carved into named tensors by a
 * size table (as in llm.c); the gradients use the same layout, so zeroing
 * is one memset and a layer's attention, MLP or norm parameters are one
 * contiguous slice. Layout, in order (C = dim, V = 256, T = context):
 *
 *   wte   (V, C)     token embedding
 *   wpe   (T, C)     position embedding
 *   for each layer l = 0..L-1, one contiguous block:
 *     ln1w (C) ln1b (C) ln2w (C) ln2b (C)               -- norm slice
 *     qkvw (3C, C) qkvb (3C) attprojw (C, C) attprojb (C) -- attention slice
 *     fcw (4C, C) fcb (4C) fcprojw (C, 4C) fcprojb (C)    -- MLP slice
 *   lnfw  (C) lnfb (C)   final norm (used by Pre-LN only)
 *   headw (V, C) headb (V)   untied output head
 *
 * Linear weights are (out, in), as torch.nn.Linear stores them.
 * The same parameters serve every placement: Post-LN uses ln1/ln2 after
 * each residual add and ignores lnf; Pre-LN uses them before each sublayer.
 *
 * Not here: the optimizer (optim.c), the schedule, data, threads.
 */
#ifndef NS_MODEL_H
#define NS_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "rng.h"

enum {
    /* per-layer tensors, in layout order */
    PT_LN1W, PT_LN1B, PT_LN2W, PT_LN2B,
    PT_QKVW, PT_QKVB, PT_ATTPROJW, PT_ATTPROJB,
    PT_FCW, PT_FCB, PT_FCPROJW, PT_FCPROJB,
    PT_LAYER_COUNT
};

typedef struct {
    const char *name;
    size_t offset; /* into params/grads */
    size_t size;   /* elements */
    int layer;     /* -1 for embeddings, final norm and head */
    int is_matrix; /* weight decay applies to matrices and embeddings */
} model_tensor;

/* Per-layer forward statistics, filled by model_forward. */
typedef struct {
    float act_max;   /* max |x| over every activation made inside the block */
    float resid_max; /* max |x| of the residual stream leaving the block */
    float resid_rms; /* RMS of the residual stream leaving the block */
} model_layer_stats;

typedef struct {
    /* shape */
    int L, C, NH, T, B, V;
    norm_place norm;
    norm_kind kind;
    float eps;

    /* parameters: one allocation, and the same layout for the gradients */
    size_t n_params;
    float *params;
    float *grads;
    size_t wte, wpe, lnfw, lnfb, headw, headb; /* offsets */
    size_t layer0, layer_stride;               /* offset of layer 0, size of one layer */
    size_t layer_off[PT_LAYER_COUNT];          /* offsets inside a layer block */
    int n_tensors;
    model_tensor *tensors;

    /* activations of the last forward, one allocation */
    float *acts;
    size_t n_acts;
    float *encoded;              /* (B, T, C) */
    float *ln1, *ln1_mean, *ln1_rstd; /* (L, B, T, C), (L, B, T), (L, B, T) */
    float *qkv;                  /* (L, B, T, 3C) */
    float *atty;                 /* (L, B, T, C) */
    float *att;                  /* (L, B, NH, T, T) softmax probabilities */
    float *attproj;              /* (L, B, T, C) */
    float *res1;                 /* (L, B, T, C) */
    float *ln2, *ln2_mean, *ln2_rstd;
    float *fch, *fch_gelu;       /* (L, B, T, 4C) */
    float *fcproj;               /* (L, B, T, C) */
    float *res2;                 /* (L, B, T, C) */
    float *lnf, *lnf_mean, *lnf_rstd; /* (B, T, C), (B, T), (B, T) */
    float *logits;               /* (B, T, V) */
    float *probs;                /* (B, T, V) */
    float *losses;               /* (B, T) */

    /* backward scratch, one allocation */
    float *scratch;
    size_t n_scratch;
    float *dresid, *dtmp, *datty, *dqkv, *dfch, *dfch_gelu, *dlogits, *drow; /* drow: (T) */

    const uint8_t *last_tokens;  /* inputs of the last forward (B*T) */
    const uint8_t *last_targets; /* NULL when the forward had no targets */
    int last_B;                  /* batch rows used by the last forward */

    model_layer_stats *stats;    /* (L) */
} model;

/* Bytes the model would need (params, grads, activations, scratch);
 * lets the caller refuse a size that does not fit before allocating. */
double model_bytes_needed(const ns_config *cfg);

/* Allocate for the shape in cfg. Returns 0, or -1 if memory ran out. */
int model_create(model *m, const ns_config *cfg);
void model_free(model *m);

/* Initialize the parameters from rng (deterministic for a given seed).
 * xavier: uniform Glorot on block and head matrices, normal(init_std) on
 * embeddings; normal: normal(init_std) on every matrix (GPT-2 style).
 * Norm gains 1, every bias 0. */
void model_init(model *m, const ns_config *cfg, ns_rng *rng);

/* Forward over the first `B` rows (B <= the allocated batch). tokens and
 * targets are (B, T) bytes. With targets, returns the mean cross-entropy;
 * without, returns 0 and leaves logits/probs. */
float model_forward(model *m, const uint8_t *tokens, const uint8_t *targets, int B);

/* Backward of the last forward (which must have had targets): sets grads
 * to d(mean loss)/d(params). */
void model_backward(model *m);

/* Change the norm placement or kind between steps; weights are untouched. */
void model_set_norm(model *m, norm_place p);
void model_set_norm_kind(model *m, norm_kind k);

/* L2 norm of a slice of the gradient (or of any float array). */
double model_l2(const float *x, size_t n);

/* The slice of layer l's parameters of one group. */
typedef enum { GROUP_LN = 0, GROUP_ATTN = 1, GROUP_FFN = 2, GROUP_ALL = 3 } model_group;
void model_group_slice(const model *m, int l, model_group g, size_t *off, size_t *n);

#endif
