/* model.h - the byte-level decoder-only Transformer: parameters, forward,
 * backward, and the per-layer statistics the dashboard shows.
 * Engine-internal; engine_bytes_needed asks model_param_count and
 * model_buffer_floats for its sizes (README, Layout).
 *
 * All parameters live in one float array carved into named tensors by a
 * size table (as in llm.c); the gradients use the same layout, so zeroing
 * is one memset and a layer's attention, MLP or norm parameters are one
 * contiguous slice. Layout, in order (C = dim, V = 256, T = context):
 *
 *   wte   (V, C)     token embedding
 *   wpe   (T, C)     position embedding
 *   for each layer l = 0..L-1, one contiguous block:
 *     ln1w ln1b ln2w ln2b (C each)    norms of sublayer 1 (attention), 2 (MLP)
 *     ln1ow ln1ob ln2ow ln2ob (C)     output norms (Sandwich-LN and res-post)
 *     ln1a ln2a ln1oa ln2oa (1 each)  DyT's scalar a of each of those norms
 *     rzg (1)                         ReZero's gate g       -- all: norm slice
 *     qkvw (3C, C) qkvb (3C) attprojw (C, C) attprojb (C)
 *     qnw qnb knw knb (hd each)       QK-norm of the queries, of the keys
 *     qna kna (1 each)                their DyT a           -- attention slice
 *     fcw (4C, C) fcb (4C) fcprojw (C, 4C) fcprojb (C)    -- MLP slice
 *   lnfw (C) lnfb (C) lnfa (1)   final norm
 *   headw (V, C) headb (V)   untied output head
 * (hd = C / NH, a head's width.)
 *
 * The QK-norm's parameters are the attention slice's, not the norm
 * slice's: the norm slice holds the norms the placement puts around the
 * sublayers (on the residual stream, switched by --norm), while QK-norm
 * is part of F itself, used under every placement (none and ReZero too),
 * and acts on what the attention logits are made of (Dehghani et al.
 * 2023), so its gradient belongs with grad_attn. They come last in that
 * slice, after attprojb: with QK-norm off their gradients are zeros
 * appended to the slice, which leave every lane of its sum of squares
 * (ops_sumsq) as it was, so the group norms keep their bits. Checkpoints
 * before format 5 have no QK-norm tensors (model_param_count_noqk).
 *
 * Linear weights are (out, in), as torch.nn.Linear stores them.
 *
 * Every placement uses the same parameters, so the placement (and the norm
 * kind) can change between steps without reallocating or touching a
 * weight. Each of a block's two sublayers (F = attention, then MLP) is
 *   post      y = N(x + F(x))
 *   pre       y = x + F(N(x))
 *   sandwich  y = x + N_out(F(N(x)))   (Peri-LN, Kim et al. 2025)
 *   res-post  y = x + N_out(F(x))      (Swin v2; OLMo 2), N_out being
 *                                       Sandwich-LN's output norm
 *   deepnorm  y = N(alpha x + F(x)),  alpha = (2L)^(1/4)
 *   rezero    y = x + g F(x)
 *   none      y = x + F(x)
 *   mix       post in blocks l < k, pre above
 * and the final norm is applied when config_final_norm() says so.
 * With qk_norm, attention normalizes each head's queries and keys over
 * hd before q.k / sqrt(hd), with the run's norm kind and one set of
 * parameters for the queries and one for the keys, shared by the heads
 * (as nn.LayerNorm(hd) on q and k of shape (B, NH, T, hd)). With z_loss,
 * the optimized loss is CE + z_loss mean((log Z)^2), log Z the logsumexp
 * of a position's logits (PaLM, Chowdhery et al. 2022); the reported loss
 * stays the cross-entropy.
 *
 * Not here: the optimizer (optim.c), the schedule, data, the threads
 * themselves (the engine owns the pool the kernels are split over).
 */
#ifndef NS_MODEL_H
#define NS_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "numfmt.h"
#include "pool.h"
#include "rng.h"

enum {
    /* per-layer tensors, in layout order */
    PT_LN1W, PT_LN1B, PT_LN2W, PT_LN2B,
    PT_LN1OW, PT_LN1OB, PT_LN2OW, PT_LN2OB,
    PT_LN1A, PT_LN2A, PT_LN1OA, PT_LN2OA,
    PT_RZG,
    PT_QKVW, PT_QKVB, PT_ATTPROJW, PT_ATTPROJB,
    PT_QNW, PT_QNB, PT_KNW, PT_KNB, PT_QNA, PT_KNA, /* QK-norm (end of attention slice) */
    PT_FCW, PT_FCB, PT_FCPROJW, PT_FCPROJB,
    PT_LAYER_COUNT
};

typedef struct {
    const char *name;
    size_t offset; /* into params/grads */
    size_t size;   /* elements */
    int layer;     /* -1 for embeddings, final norm and head */
    int is_matrix; /* weight decay applies to matrices and embeddings */
    int pt;        /* its PT_ index inside a layer; -1 outside the layers */
} model_tensor;

/* Is t one of the QK-norm tensors (qnw .. kna)? */
static inline int model_tensor_qk(const model_tensor *t)
{
    return t->pt >= PT_QNW && t->pt <= PT_KNA;
}

/* Per-layer forward statistics, filled by model_forward. */
typedef struct {
    float act_max;   /* max |x| over every activation made inside the block */
    float resid_max; /* max |x| of the residual stream leaving the block */
    float resid_rms; /* RMS of the residual stream leaving the block */
    /* the mechanisms (Dehghani et al. 2023, Wortsman et al. 2023; Admin,
     * DeepNet, Peri-LN): what the papers explain instabilities by, from
     * the forward's buffers, over the batch (model_forward with targets) */
    float attn_logit_max; /* max |q.k| / sqrt(d_head) over heads and causal pairs,
                             the q and k the softmax saw (after QK-norm) */
    float attn_entropy;   /* the attention's entropy in nats, mean over heads and
                             queries (ln(t+1) for uniform attention at query t) */
    float branch_ratio;   /* RMS of what the two sublayers add to the residual
                             stream over RMS of the stream entering the block */
    float norm_in_rms;    /* RMS of the block's first norm's input; NaN without one
                             (rezero, none) */
} model_layer_stats;

/* The first non-finite value of a pass: where it appeared. */
typedef struct {
    int set;
    int backward;   /* 0 forward, 1 backward */
    int layer;      /* -1: embeddings, final norm, head or loss */
    const char *op; /* static string, e.g. "MLP fc2" */
    int seq;        /* the pass's fault point it was seen at (row blocks) */
} model_fault;

typedef struct {
    /* shape */
    int L, C, NH, T, B, V;
    norm_place norm;
    norm_kind kind;
    float eps;
    int final_norm; /* apply lnf (config_final_norm at the last change) */
    int mix_k;      /* Post-LN blocks at the bottom under mix */
    float alpha;    /* DeepNorm residual scale (2L)^(1/4) */
    int qk_norm;    /* QK-norm on (model_set_qk_norm) */
    float z_loss;   /* z-loss coefficient, 0 = off (model_set_z_loss) */

    /* precision: weights stay fp32 in params (the master copy); in bf16 or
     * fp16 the forward and backward read W, a copy rounded to the format,
     * and every activation and activation gradient is rounded to it */
    numfmt fmt;
    int fp32_norms;    /* norm statistics, softmax of the loss in fp32 */
    float loss_scale;  /* d loss is multiplied by this before the backward */
    float *W;          /* params (fp32) or wlow */
    float *wlow;       /* (n_params) params rounded to fmt */
    numfmt_counts *counts; /* (L + 1) per layer; [L]: outside the blocks */
    model_fault fault; /* first non-finite of the last forward + backward */

    /* parameters: one allocation, and the same layout for the gradients */
    size_t n_params;
    float *params;
    float *grads;
    size_t wte, wpe, lnfw, lnfb, lnfa, headw, headb; /* offsets */
    size_t layer0, layer_stride;               /* offset of layer 0, size of one layer */
    size_t layer_off[PT_LAYER_COUNT];          /* offsets inside a layer block */
    int n_tensors;
    model_tensor *tensors;

    /* activations of the last forward, one allocation. Per layer and
     * sublayer s (0 = attention, 1 = MLP): */
    float *acts;
    size_t n_acts;
    float *encoded;              /* (B, T, C) */
    float *nin[2];               /* (L, B, T, C) output of the sublayer's norm N */
    float *nin_mean[2], *nin_rstd[2]; /* (L, B, T) */
    float *nout[2];              /* (L, B, T, C) output of N_out (sandwich) */
    float *nout_mean[2], *nout_rstd[2];
    float *res[2];               /* (L, B, T, C) the residual sum */
    float *qkv;                  /* (L, B, T, 3C); under QK-norm q and k normalized */
    float *qkraw;                /* (L, B, T, 2C) q and k before the QK-norm */
    float *qk_mean, *qk_rstd;    /* (L, B, T, 2NH) its statistics, q's heads then k's */
    float *atty;                 /* (L, B, T, C) */
    float *att;                  /* (L, B, NH, T, T) softmax probabilities */
    float *attproj;              /* (L, B, T, C) F of sublayer 0 */
    float *fch, *fch_gelu;       /* (L, B, T, 4C); after the forward fch holds
                                  * gelu'(fc1 output), which the backward reads */
    float *fcproj;               /* (L, B, T, C) F of sublayer 1 */
    float *lnf, *lnf_mean, *lnf_rstd; /* (B, T, C), (B, T), (B, T) */
    float *logits;               /* (B, T, V) */
    float *probs;                /* (B, T, V) */
    float *losses;               /* (B, T) */
    float *logz;                 /* (B, T) log Z = logsumexp of the row's logits */
    float *lmax;                 /* (B, T) the row's largest logit */

    /* backward scratch, one allocation */
    float *scratch;
    size_t n_scratch;
    float *dresid, *dtmp, *dtmp2, *datty, *dqkv, *dfch, *dfch_gelu, *dlogits; /* (B, T, *) */
    float *drow; /* (B, T): a row block's attention scratch at its rows */

    /* the loss terms of the last forward with targets, over its rows */
    float logz_mean;  /* mean log Z */
    float logit_max;  /* largest logit (NaN if a row's maximum is) */
    float zloss;      /* z_loss * mean (log Z)^2: the term added to the optimized loss */

    const uint8_t *last_tokens;  /* inputs of the last forward (B*T) */
    const uint8_t *last_targets; /* NULL when the forward had no targets */
    int last_B;                  /* batch rows used by the last forward */

    model_layer_stats *stats;    /* (L) */

    /* threads for the kernels (pool.h): the engine's, NULL = the caller
     * alone; results are the same bits either way */
    ns_pool *pool;
    /* row blocks: the batch is cut into n_blocks blocks of whole sequences
     * (a function of the shape only, model_row_blocks); each block's
     * forward and backward runs on one thread over its own rows, and its
     * parameter gradients go to its own partial (block 0: grads), summed
     * into grads in block order. n_blocks = 1: one pass over every row,
     * its kernels split over the pool instead. */
    int n_blocks;
    float *partials;             /* (n_blocks - 1, n_params) */
    numfmt_counts *blk_counts;   /* (n_blocks, L + 1) */
    model_layer_stats *blk_stats; /* (n_blocks, L) */
    int fault_seq;               /* fault points passed in this pass */
} model;

/* The sizes behind engine_bytes_needed, before anything is allocated:
 * the parameters of the model cfg describes (model_create's n_params), and
 * the floats of its activations and backward scratch together. */
size_t model_param_count(const ns_config *cfg);
/* The count of the layout before the QK-norm tensors (checkpoint formats
 * 1..4, the first fixtures): every tensor but qnw .. kna, in the same
 * order. */
size_t model_param_count_noqk(const ns_config *cfg);
size_t model_buffer_floats(const ns_config *cfg);

/* Row blocks of a model of n_params parameters and a batch of B
 * sequences of T: up to 8, at most B, each of at least 256 rows (B x T /
 * 256 blocks), and 1 when fewer than 2 blocks are left or 3 gradient
 * partials would not fit in 32 MiB (a wide model, whose kernels are large
 * enough to split). */
int model_row_blocks(size_t n_params, int B, int T);

/* Allocate for the shape in cfg. Returns 0, or -1 if memory ran out. */
int model_create(model *m, const ns_config *cfg);
void model_free(model *m);

/* Initialize the parameters from rng (deterministic for a given seed).
 * xavier: uniform Glorot on block and head matrices, normal(init_std) on
 * embeddings; normal: normal(init_std) on every matrix (GPT-2 style).
 * Block norm gains ln_gamma_init and biases ln_beta_init (the final norm:
 * 1 and 0), DyT a dyt_alpha,
 * ReZero gates 0, other biases 0, the QK-norm's as model_init_qk_norm.
 * Then, with post_init_scale, attprojw and
 * fcprojw are scaled by 1/sqrt(2L); under deepnorm, the value and output
 * projections and both MLP matrices by beta = (8L)^(-1/4) (DeepNet). */
void model_init(model *m, const ns_config *cfg, ns_rng *rng);
/* The QK-norm tensors of params at their initial values, which draw
 * nothing from the generator: gains 1, biases 0, DyT a dyt_alpha (a run
 * loaded from a checkpoint without them starts them there). */
void model_init_qk_norm(const model *m, float *params, float dyt_alpha);

/* Forward over the first `B` rows (B <= the allocated batch). tokens and
 * targets are (B, T) bytes. With targets, returns the mean cross-entropy
 * (without the z-loss term) and sets logz_mean, logit_max and zloss;
 * without, returns 0 and leaves logits/probs. */
float model_forward(model *m, const uint8_t *tokens, const uint8_t *targets, int B);

/* Backward of the last forward (which must have had targets): sets grads
 * to loss_scale * d(mean loss + zloss)/d(params), rounded to the format
 * (the caller unscales). */
void model_backward(model *m);

/* Change the norm placement, kind or final norm between steps; the
 * weights are untouched. final_norm and mix_k are resolved by the caller
 * (config_final_norm, config_mix_k). */
void model_set_norm(model *m, norm_place p, int final_norm);
void model_set_norm_kind(model *m, norm_kind k);

/* QK-norm on or off, and the z-loss coefficient, between steps: the
 * parameters exist either way (off: unused, zero gradients). */
void model_set_qk_norm(model *m, int on);
void model_set_z_loss(model *m, float z);

/* Precision of the next forward and backward. */
void model_set_precision(model *m, numfmt f, int fp32_norms);

/* DeepNorm's constants for a decoder-only stack of L blocks. */
double model_deepnorm_alpha(int L);
double model_deepnorm_beta(int L);

/* Is block l's sublayer rule Post-LN-like (norm after the residual add)? */
int model_block_is_post(const model *m, int l);

/* L2 norm of a slice of the gradient (or of any float array). */
double model_l2(const float *x, size_t n);
/* ||after - before|| / ||before|| over n values, summed in order in
 * double (out_change: the logits' relative change); NaN when a value is
 * not finite. */
double model_rel_change(const float *before, const float *after, size_t n);

/* The slice of layer l's parameters of one group. */
typedef enum { GROUP_LN = 0, GROUP_ATTN = 1, GROUP_FFN = 2, GROUP_ALL = 3 } model_group;
void model_group_slice(const model *m, int l, model_group g, size_t *off, size_t *n);

#endif
