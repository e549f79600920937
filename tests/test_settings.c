/* test_settings.c - settings that act inside the engine, checked by what
 * they do to the numbers: the layer-wise LR decay scales each block's
 * update as X^(L-1-l), set mid-run by its script word. */
#include <stdlib.h>
#include <string.h>

#include "command.h"
#include "engine.h"
#include "model.h"
#include "testutil.h"

static dataset D;

static ns_config small_cfg(int layers)
{
    ns_config c;
    config_defaults(&c);
    c.n_layer = layers;
    c.dim = 16;
    c.n_head = 2;
    c.context = 16;
    c.batch = 4;
    c.warmup = 0;
    c.val_every = 0;
    return c;
}

static engine *make(const ns_config *c)
{
    char err[256];
    engine *e = engine_create(c, &D, err, sizeof err);
    if (!e)
        fprintf(stderr, "engine_create: %s\n", err);
    return e;
}

/* One step of a fresh engine with decay x, set mid-run (after creation,
 * before the first step) by the script command; the update ratios into
 * ratio[L] and the relative change of the token embeddings into *emb. */
static int step_with(double x, int layers, double *ratio, double *emb)
{
    ns_config c = small_cfg(layers);
    engine *e = make(&c);
    if (!e)
        return -1;
    char line[64], err[256];
    ns_command cmd;
    snprintf(line, sizeof line, "lr-layer-decay %g", x);
    int ok = command_parse(line, &cmd, err, sizeof err) == 0 && command_apply(e, &cmd) == CMD_APPLIED &&
             engine_config(e)->lr_layer_decay == (float)x;
    size_t n;
    float *p = engine_params(e, &n);
    size_t nw = (size_t)NS_VOCAB * (size_t)c.dim; /* wte comes first */
    float *before = malloc(nw * sizeof *before);
    memcpy(before, p, nw * sizeof *before);
    step_metrics m;
    memset(&m, 0, sizeof m);
    engine_step(e, &m);
    double d = 0, w = 0;
    for (size_t i = 0; i < nw; i++)
        d += (double)(p[i] - before[i]) * (p[i] - before[i]), w += (double)before[i] * before[i];
    *emb = sqrt(d / w);
    for (int l = 0; l < layers; l++)
        ratio[l] = m.layer[l].update_ratio;
    free(before);
    engine_free(e);
    return ok ? 0 : -1;
}

/* With Adam, a first step moves each parameter by about lr, so block l's
 * update ratio under decay X is X^(L-1-l) times the one without: the top
 * block as before, the bottom slower (X < 1) or faster (X > 1). */
static void test_lr_layer_decay(void)
{
    enum { L = 4 };
    double off[L], half[L], twice[L], e_off, e_half, e_twice;
    CHECK(step_with(1.0, L, off, &e_off) == 0);
    CHECK(step_with(0.5, L, half, &e_half) == 0);
    CHECK(step_with(2.0, L, twice, &e_twice) == 0);
    int follows = 1;
    for (int l = 0; l < L; l++) {
        double want_h = pow(0.5, L - 1 - l), want_t = pow(2.0, L - 1 - l);
        int ok = off[l] > 0 && t_close(half[l] / off[l], want_h, 0.03, 0) &&
                 t_close(twice[l] / off[l], want_t, 0.03, 0);
        if (!ok)
            fprintf(stderr, "  layer %d: ratio x0.5 %g, x2 %g, want %g, %g\n", l,
                    half[l] / off[l], twice[l] / off[l], want_h, want_t);
        follows &= ok;
    }
    CHECK(follows);
    CHECK(half[0] < 0.2 * half[L - 1] && off[0] > 0.5 * off[L - 1]);
    /* the embeddings sit below block 0: X^L */
    CHECK(t_close(e_half / e_off, pow(0.5, L), 0.03, 0));
    /* out of the flag's range: refused, with the range */
    ns_command c;
    char err[256];
    CHECK(command_parse("lr-layer-decay 11", &c, err, sizeof err) != 0 && strstr(err, "0.1..10"));
    CHECK(command_parse("lr-layer-decay", &c, err, sizeof err) != 0);
}

int main(void)
{
    data_builtin(&D);
    test_lr_layer_decay();
    return test_summary();
}
