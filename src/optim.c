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

typedef struct {
    adamw *o;
    model *m;
    const adamw_hparams *h;
    double *layer_upd_sq;
    float step, bc2_sqrt;
} adamw_job;

/* Tensors k0..k1-1 of the update, in order. */
static void update_tensors(const adamw_job *j, int k0, int k1)
{
    const adamw_hparams *h = j->h;
    model *m = j->m;
    for (int k = k0; k < k1; k++) {
        const model_tensor *t = &m->tensors[k];
        float decay = t->is_matrix ? 1.0f - h->lr * h->weight_decay : 1.0f;
        float *p = m->params + t->offset;
        const float *g = m->grads + t->offset;
        float *mm = j->o->m + t->offset, *vv = j->o->v + t->offset;
        double usq = 0.0;
        for (size_t i = 0; i < t->size; i++) {
            float gi = g[i] * h->grad_scale;
            mm[i] = h->beta1 * mm[i] + (1.0f - h->beta1) * gi;
            vv[i] = h->beta2 * vv[i] + (1.0f - h->beta2) * gi * gi;
            float old = p[i];
            float np = old * decay;
            np -= j->step * mm[i] / (sqrtf(vv[i]) / j->bc2_sqrt + h->eps);
            p[i] = np;
            double d = (double)np - old;
            usq += d * d;
        }
        if (j->layer_upd_sq && t->layer >= 0)
            j->layer_upd_sq[t->layer] += usq;
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
void adamw_update(adamw *o, model *m, const adamw_hparams *h, double *layer_upd_sq)
{
    o->t++;
    /* scalars in double, as torch computes them in Python floats */
    double bc1 = 1.0 - pow((double)h->beta1, (double)o->t);
    double bc2 = 1.0 - pow((double)h->beta2, (double)o->t);
    adamw_job j = {o, m, h, layer_upd_sq, (float)((double)h->lr / bc1), (float)sqrt(bc2)};
    if (layer_upd_sq)
        memset(layer_upd_sq, 0, (size_t)m->L * sizeof(double));
    if (pool_threads(m->pool) == 1 || m->n_params < (1u << 16)) {
        update_tensors(&j, 0, m->n_tensors);
        return;
    }
    int k0, k1;
    pool_run(m->pool, segment(m, -1, &k0, &k1), update_task, &j);
}
