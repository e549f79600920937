/* optim.c - AdamW (Loshchilov & Hutter 2019), matching torch.optim.AdamW's
 * arithmetic: decay first, then the bias-corrected Adam step. */
#include "optim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int adamw_create(adamw *o, size_t n)
{
    o->n = n;
    o->t = 0;
    o->m = calloc(n, sizeof(float));
    o->v = calloc(n, sizeof(float));
    if (!o->m || !o->v) {
        adamw_free(o);
        return -1;
    }
    return 0;
}

void adamw_free(adamw *o)
{
    free(o->m);
    free(o->v);
    o->m = o->v = NULL;
}

void adamw_reset(adamw *o)
{
    memset(o->m, 0, o->n * sizeof(float));
    memset(o->v, 0, o->n * sizeof(float));
    o->t = 0;
}

void adamw_update(adamw *o, model *m, const adamw_hparams *h, double *layer_upd_sq)
{
    o->t++;
    /* scalars in double, as torch computes them in Python floats */
    double bc1 = 1.0 - pow((double)h->beta1, (double)o->t);
    double bc2 = 1.0 - pow((double)h->beta2, (double)o->t);
    float step = (float)((double)h->lr / bc1);
    float bc2_sqrt = (float)sqrt(bc2);
    if (layer_upd_sq)
        memset(layer_upd_sq, 0, (size_t)m->L * sizeof(double));
    for (int k = 0; k < m->n_tensors; k++) {
        const model_tensor *t = &m->tensors[k];
        float decay = t->is_matrix ? 1.0f - h->lr * h->weight_decay : 1.0f;
        float *p = m->params + t->offset;
        const float *g = m->grads + t->offset;
        float *mm = o->m + t->offset, *vv = o->v + t->offset;
        double usq = 0.0;
        for (size_t i = 0; i < t->size; i++) {
            float gi = g[i] * h->grad_scale;
            mm[i] = h->beta1 * mm[i] + (1.0f - h->beta1) * gi;
            vv[i] = h->beta2 * vv[i] + (1.0f - h->beta2) * gi * gi;
            float old = p[i];
            float np = old * decay;
            np -= step * mm[i] / (sqrtf(vv[i]) / bc2_sqrt + h->eps);
            p[i] = np;
            double d = (double)np - old;
            usq += d * d;
        }
        if (layer_upd_sq && t->layer >= 0)
            layer_upd_sq[t->layer] += usq;
    }
}
