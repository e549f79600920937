/* config.c - defaults, names and cross-field checks of ns_config. */
#include "config.h"

#include <string.h>

void config_defaults(ns_config *c)
{
    memset(c, 0, sizeof *c);
    c->n_layer = 6;
    c->dim = 64;
    c->n_head = 4;
    c->context = 64;
    c->batch = 16;
    c->norm = NORM_PRE;
    c->norm_kind = NORMK_LAYERNORM;
    c->eps = 1e-5f;
    c->final_norm = -1;
    c->mix_k = -1;
    c->dyt_alpha = 0.5f;
    c->ln_gamma_init = 1.0f;
    c->ln_beta_init = 0.0f;
    c->post_init_scale = 0;
    c->init = INIT_XAVIER;
    c->init_std = 0.02f;
    c->lr = 1e-3f;
    c->beta1 = 0.9f;
    c->beta2 = 0.98f;
    c->adam_eps = 1e-8f;
    c->weight_decay = 0.0f;
    c->clip = 0.0f;
    c->warmup = 100;
    c->schedule = SCHED_CONSTANT;
    c->steps = 0;
    c->precision = FMT_FP32;
    c->fp32_norms = 1;
    c->loss_scale = 0.0f;
    c->on_div = ONDIV_DEFAULT;
    c->snapshot_every = 50;
    c->snapshots = 8;
    c->val_every = 50;
    c->val_batches = 4;
    c->seed = 1337;
}

static const char *const place_names[] = {"post",   "pre",  "sandwich", "deepnorm",
                                          "rezero", "none", "mix"};
static const char *const kind_names[] = {"layernorm", "rmsnorm", "dyt"};
static const char *const init_names[] = {"xavier", "normal"};
static const char *const sched_names[] = {"constant", "cosine", "invsqrt", "noam"};

static int lookup(const char *const *names, int n, const char *s)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(names[i], s))
            return i;
    return -1;
}

const char *norm_place_name(norm_place p)
{
    return (unsigned)p < NORM_PLACE_COUNT ? place_names[p] : "?";
}
const char *norm_kind_name(norm_kind k) { return (unsigned)k < NORM_KIND_COUNT ? kind_names[k] : "?"; }
const char *init_kind_name(init_kind k) { return (unsigned)k < 2 ? init_names[k] : "?"; }
const char *sched_kind_name(sched_kind k) { return (unsigned)k < 4 ? sched_names[k] : "?"; }
int norm_place_parse(const char *s) { return lookup(place_names, NORM_PLACE_COUNT, s); }
int norm_kind_parse(const char *s) { return lookup(kind_names, NORM_KIND_COUNT, s); }

int config_final_norm(const ns_config *c)
{
    if (c->final_norm >= 0)
        return c->final_norm;
    return c->norm == NORM_PRE || c->norm == NORM_SANDWICH || c->norm == NORM_MIX;
}

int config_mix_k(const ns_config *c)
{
    int k = c->mix_k >= 0 ? c->mix_k : c->n_layer / 4;
    return k < c->n_layer ? k : c->n_layer;
}
int init_kind_parse(const char *s) { return lookup(init_names, 2, s); }
int sched_kind_parse(const char *s) { return lookup(sched_names, 4, s); }

const char *config_check(const ns_config *c)
{
    if (c->dim % c->n_head != 0)
        return "--dim must be divisible by --heads";
    if (c->schedule == SCHED_COSINE && c->steps <= 0)
        return "--schedule cosine needs --steps N (it decays over the run)";
    if (c->schedule == SCHED_NOAM && c->warmup <= 0)
        return "--schedule noam needs --warmup N >= 1 (its peak is at step N)";
    if (c->mix_k > c->n_layer)
        return "--mix-k must be at most --layers";
    return NULL;
}
