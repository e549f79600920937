/* config.c - names and cross-field checks of ns_config; its defaults are
 * the settings table's (settings_defaults, settings.c). */
#include "config.h"

#include <string.h>

const char *const config_norm_place_names[NORM_PLACE_COUNT] = {
    "post", "pre", "sandwich", "deepnorm", "rezero", "none", "mix", "res-post"};
const char *const config_norm_kind_names[NORM_KIND_COUNT] = {"layernorm", "rmsnorm", "dyt"};
const char *const config_init_kind_names[INIT_KIND_COUNT] = {"xavier", "normal"};
const char *const config_sched_kind_names[SCHED_KIND_COUNT] = {"constant", "cosine", "invsqrt", "noam"};
const char *const config_on_diverge_names[ONDIV_COUNT] = {"pause", "stop", "continue", "fix"};

static int lookup(const char *const *names, int n, const char *s)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(names[i], s))
            return i;
    return -1;
}

const char *config_norm_place_name(norm_place p)
{
    return (unsigned)p < NORM_PLACE_COUNT ? config_norm_place_names[p] : "?";
}
const char *config_norm_kind_name(norm_kind k)
{
    return (unsigned)k < NORM_KIND_COUNT ? config_norm_kind_names[k] : "?";
}
const char *config_init_kind_name(init_kind k)
{
    return (unsigned)k < INIT_KIND_COUNT ? config_init_kind_names[k] : "?";
}
const char *config_sched_kind_name(sched_kind k)
{
    return (unsigned)k < SCHED_KIND_COUNT ? config_sched_kind_names[k] : "?";
}
/* Peri-LN (Kim et al. 2025) normalizes a sublayer's input and output,
 * x + N(F(N(x))): Sandwich-LN's rule under its newer name */
const char *const config_norm_place_aliases[] = {"peri", "sandwich", NULL};

int config_norm_place_parse(const char *s)
{
    for (int i = 0; s && config_norm_place_aliases[i]; i += 2)
        if (!strcmp(s, config_norm_place_aliases[i]))
            s = config_norm_place_aliases[i + 1];
    return lookup(config_norm_place_names, NORM_PLACE_COUNT, s);
}
int config_norm_kind_parse(const char *s) { return lookup(config_norm_kind_names, NORM_KIND_COUNT, s); }

int config_final_norm(const ns_config *c)
{
    if (c->final_norm >= 0)
        return c->final_norm;
    return c->norm == NORM_PRE || c->norm == NORM_SANDWICH || c->norm == NORM_MIX ||
           c->norm == NORM_RESPOST;
}

int config_ramp_steps(const ns_config *c) { return c->warmup > 0 ? c->warmup : 100; }

int config_mix_k(const ns_config *c)
{
    int k = c->mix_k >= 0 ? c->mix_k : c->n_layer / 4;
    return k < c->n_layer ? k : c->n_layer;
}
int config_init_kind_parse(const char *s) { return lookup(config_init_kind_names, INIT_KIND_COUNT, s); }
int config_sched_kind_parse(const char *s) { return lookup(config_sched_kind_names, SCHED_KIND_COUNT, s); }

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
