/* optim.h - AdamW with decoupled weight decay, as torch.optim.AdamW.
 * Engine-internal: only the engine's sources include it (README, Layout).
 *
 * The moments m and v have the model's parameter layout, so a checkpoint
 * writes them as three equal arrays. Weight decay applies to the tensors
 * the model marks as matrices (block weights, embeddings, head), not to
 * biases or norm parameters.
 */
#ifndef NS_OPTIM_H
#define NS_OPTIM_H

#include <stddef.h>

#include "model.h"

typedef struct {
    size_t n;
    float *m, *v; /* (n_params) each */
    long t;       /* updates taken so far (for bias correction) */
} adamw;

typedef struct {
    float lr, beta1, beta2, eps, weight_decay;
    float grad_scale; /* multiplies every gradient first (clipping); 1 = none */
    /* layer-wise LR decay X: block l of L learns at lr X^(L-1-l), the
     * embeddings at lr X^L, the final norm and head at lr (the deeper,
     * the faster for X < 1, as advised for Post-LN). 1 or 0 = off. */
    float layer_decay;
} adamw_hparams;

int optim_adamw_create(adamw *o, size_t n);
void optim_adamw_free(adamw *o);
void optim_adamw_reset(adamw *o);

/* One update of m->params from m->grads (ops_adamw, tensor by tensor).
 * If layer_sq is not NULL it receives, per layer l, the sum of squared
 * parameter changes at [2 l] and the sum of squares of the new
 * parameters at [2 l + 1] (2 L entries), from which the update-to-weight
 * ratio follows without another pass over the weights. Split over
 * m->pool by whole layers (and the tensors outside them): the same bits
 * for any thread count. */
void optim_adamw_update(adamw *o, model *m, const adamw_hparams *h, double *layer_sq);

#endif
