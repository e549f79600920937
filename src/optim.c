/* optim.c - AdamW (Loshchilov & Hutter 2019), matching torch.optim.AdamW's
 * arithmetic: decay first, then the bias-corrected Adam step. */
#include "optim.h"
#include "nsmath.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"

int optim_adamw_create(adamw *o, size_t n)
{
    o->n = n;
    o->t = 0;
    o->m = calloc(n, sizeof(float));
    o->v = calloc(n, sizeof(float));
    if (!o->m || !o->v) {
        optim_adamw_free(o);
        return -1;
    }
    return 0;
}

void optim_adamw_free(adamw *o)
{
    free(o->m);
    free(o->v);
    o->m = o->v = NULL;
}

void optim_adamw_reset(adamw *o)
{
    memset(o->m, 0, o->n * sizeof(float));
    memset(o->v, 0, o->n * sizeof(float));
    o->t = 0;
}

typedef struct {
    adamw *o;
    model *m;
    const adamw_hparams *h;
    double *layer_sq; /* (L x 2): squared update, squared new weights */
    float step, bc2_sqrt;
} adamw_job;

/* The LR factor of tensor t under layer-wise decay: X^(L-1-l) in block
 * l, X^L for the embeddings (before the blocks), 1 after the blocks. */
static float layer_factor(const model *m, const model_tensor *t, float x)
{
    if (x <= 0.0f || x == 1.0f)
        return 1.0f;
    int depth = t->layer >= 0 ? m->L - 1 - t->layer : t->offset < m->layer0 ? m->L : 0;
    return (float)ns_powi((double)x, depth);
}

/* Tensors k0..k1-1 of the update, in order. */
static void update_tensors(const adamw_job *j, int k0, int k1)
{
    const adamw_hparams *h = j->h;
    model *m = j->m;
    for (int k = k0; k < k1; k++) {
        const model_tensor *t = &m->tensors[k];
        float f = layer_factor(m, t, h->layer_decay);
        ops_adamw_args a = {h->grad_scale, h->beta1,    h->beta2, 1.0f, j->step * f,
                            j->bc2_sqrt,   h->eps};
        if (t->is_matrix)
            a.decay = 1.0f - h->lr * f * h->weight_decay;
        double sums[2] = {0.0, 0.0};
        ops_adamw(m->params + t->offset, m->grads + t->offset, j->o->m + t->offset,
                  j->o->v + t->offset, t->size, &a, sums);
        /* the QK-norm's tensors count in their layer's update ratio only
         * while QK-norm is on: off they are not part of the model's
         * function, and a run without them keeps the ratio (to the bit)
         * of the layout before them */
        if (j->layer_sq && t->layer >= 0 && (m->qk_norm || !model_tensor_qk(t))) {
            j->layer_sq[2 * t->layer] += sums[0];
            j->layer_sq[2 * t->layer + 1] += sums[1];
        }
    }
}

/* Segment `seg` of the tensors: all of one layer's (so its squared update
 * sums in the same order as in one pass), or one tensor outside the
 * layers. Returns the number of segments; sets k0..k1 for seg. */
static int segment(const model *m, int seg, int *k0, int *k1)
{
    int n = 0;
    for (int k = 0; k < m->n_tensors;) {
        int e = k + 1;
        if (m->tensors[k].layer >= 0)
            while (e < m->n_tensors && m->tensors[e].layer == m->tensors[k].layer)
                e++;
        if (n == seg)
            *k0 = k, *k1 = e;
        n++;
        k = e;
    }
    return n;
}

static void update_task(void *ctx, int seg, int thread)
{
    (void)thread;
    const adamw_job *j = ctx;
    int k0 = 0, k1 = 0;
    segment(j->m, seg, &k0, &k1);
    update_tensors(j, k0, k1);
}

/* elementwise, so split over m->pool by segments of whole tensors (a
 * layer's usq stays one sum in one order): the same bits for any count */
void optim_adamw_update(adamw *o, model *m, const adamw_hparams *h, double *layer_sq)
{
    o->t++;
    /* scalars in double, as torch computes them in Python floats */
    double bc1 = 1.0 - ns_powi((double)h->beta1, o->t);
    double bc2 = 1.0 - ns_powi((double)h->beta2, o->t);
    adamw_job j = {o, m, h, layer_sq, (float)((double)h->lr / bc1), (float)sqrt(bc2)};
    if (layer_sq)
        memset(layer_sq, 0, 2 * (size_t)m->L * sizeof(double));
    if (pool_threads(m->pool) == 1 || m->n_params < (1u << 16)) {
        update_tensors(&j, 0, m->n_tensors);
        return;
    }
    int k0, k1;
    pool_run(m->pool, segment(m, -1, &k0, &k1), update_task, &j);
}
