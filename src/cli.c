/* cli.c - parse the command line against one flag table; print --help
 * from the same table. Every value is range-checked; a bad one gets one
 * line naming the flag and what is allowed. */
#include "cli.h"

#include "numfmt.h"
#include "pool.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef enum {
    F_LAYERS, F_DIM, F_HEADS, F_CONTEXT, F_BATCH, F_NORM, F_NORMKIND, F_EPS, F_INIT, F_INITSTD,
    F_LR, F_BETAS, F_ADAMEPS, F_WD, F_CLIP, F_WARMUP, F_SCHEDULE, F_STEPS, F_VALEVERY,
    F_VALBATCHES, F_SEED, F_DATA, F_SAVE, F_LOAD, F_HEADLESS, F_CSV, F_JSONL, F_QUIET, F_HELP,
    F_VERSION, F_FINALNORM, F_MIXK, F_DYTALPHA, F_GAMMAINIT, F_BETAINIT, F_POSTINITSCALE,
    F_PRECISION, F_FP32NORMS, F_LOSSSCALE, F_ONDIVERGE, F_SNAPEVERY, F_SNAPS, F_SCRIPT, F_ASCII, F_NOCOLOR,
    F_LESSON, F_COMPARE, F_THREADS, F_BARS
} flag_id;

typedef struct {
    flag_id id;
    char short_name; /* 0 = none */
    const char *long_name;
    const char *arg;  /* NULL = takes no value */
    double lo, hi;    /* numeric range, inclusive */
    const char *help; /* one line; the default and range are appended */
} flag_spec;

static const flag_spec flags[] = {
    {F_LAYERS, 'L', "layers", "N", 1, 64, "Transformer blocks, 1..64 (default 6)"},
    {F_DIM, 'd', "dim", "N", 16, 1024, "model width, 16..1024, divisible by --heads (default 64)"},
    {F_HEADS, 'H', "heads", "N", 1, 1024, "attention heads, 1..dim (default 4)"},
    {F_CONTEXT, 'T', "context", "N", 8, 1024, "context length in bytes, 8..1024 (default 64)"},
    {F_BATCH, 'B', "batch", "N", 1, 512, "sequences per step, 1..512 (default 16)"},
    {F_NORM, 0, "norm", "post|pre|sandwich|deepnorm|rezero|none|mix", 0, 0,
     "norm placement: post x=N(x+F(x)), pre x=x+F(N(x)), ... (default pre)"},
    {F_NORMKIND, 0, "norm-kind", "layernorm|rmsnorm|dyt", 0, 0, "normalization (default layernorm)"},
    {F_EPS, 0, "eps", "X", 1e-12, 1, "norm epsilon, 1e-12..1 (default 1e-5)"},
    {F_FINALNORM, 0, "final-norm", "on|off", 0, 0,
     "norm before the head (default: on for pre, sandwich, mix)"},
    {F_MIXK, 0, "mix-k", "N", 0, 64, "Post-LN blocks at the bottom under --norm mix (default L/4)"},
    {F_DYTALPHA, 0, "dyt-alpha", "X", 1e-6, 100, "initial a of DyT norms, 1e-6..100 (default 0.5)"},
    {F_GAMMAINIT, 0, "ln-gamma-init", "X", -100, 100, "initial norm gains, -100..100 (default 1)"},
    {F_BETAINIT, 0, "ln-beta-init", "X", -100, 100, "initial norm biases, -100..100 (default 0)"},
    {F_POSTINITSCALE, 0, "post-init-scale", NULL, 0, 0,
     "scale block output weights by 1/sqrt(2L) at init"},
    {F_INIT, 0, "init", "xavier|normal", 0, 0,
     "block weights: uniform Glorot, or normal(--init-std) as GPT-2 (default xavier)"},
    {F_INITSTD, 0, "init-std", "X", 1e-6, 10,
     "std of normal init and of the embeddings, 1e-6..10 (default 0.02)"},
    {F_LR, 0, "lr", "X", 1e-9, 10, "peak learning rate, 1e-9..10 (default 1e-3)"},
    {F_BETAS, 0, "betas", "B1,B2", 0, 0.999999, "AdamW betas, each 0..0.999999 (default 0.9,0.98)"},
    {F_ADAMEPS, 0, "adam-eps", "X", 1e-30, 1, "AdamW epsilon, 1e-30..1 (default 1e-8)"},
    {F_WD, 0, "weight-decay", "X", 0, 10,
     "decoupled weight decay on matrices and embeddings, 0..10 (default 0)"},
    {F_CLIP, 0, "clip", "X", 0, 1e6, "clip the global gradient norm to X, 0 = off (default 0)"},
    {F_WARMUP, 0, "warmup", "N", 0, 1e7, "linear LR warmup steps, 0 = none (default 100)"},
    {F_SCHEDULE, 0, "schedule", "constant|cosine|invsqrt|noam", 0, 0,
     "LR after warmup; noam = d^-0.5*min(s^-0.5, s*w^-1.5) (default constant)"},
    {F_STEPS, 0, "steps", "N", 0, 1e9,
     "steps to train; 0 = until stopped (default 1000 headless, 0 live)"},
    {F_PRECISION, 0, "precision", "fp32|bf16|fp16", 0, 0,
     "arithmetic format, emulated exactly; fp32 master weights (default fp32)"},
    {F_FP32NORMS, 0, "fp32-norms", "on|off", 0, 0,
     "norms, softmax and loss in fp32 (on, as autocast) or in the format (default on)"},
    {F_LOSSSCALE, 0, "loss-scale", "dynamic|off|X", 1e-30, 1e30,
     "loss scaling in bf16/fp16: GradScaler rule from 65536, none, or X (default dynamic)"},
    {F_ONDIVERGE, 0, "on-diverge", "pause|stop|continue", 0, 0,
     "on a non-finite loss or gradient (default pause live, stop headless: exit 3)"},
    {F_SNAPEVERY, 0, "snapshot-every", "N", 0, 1e9,
     "keep an in-memory snapshot every N steps, 0 = none (default 50)"},
    {F_SNAPS, 0, "snapshots", "K", 1, 1000, "snapshots kept for rewinding, 1..1000 (default 8)"},
    {F_VALEVERY, 0, "val-every", "N", 0, 1e9, "validation loss every N steps, 0 = never (default 50)"},
    {F_VALBATCHES, 0, "val-batches", "N", 1, 1000, "batches per validation, 1..1000 (default 4)"},
    {F_SEED, 0, "seed", "N", 0, 0, "seed of weights and batches, 0..2^64-1 (default 1337)"},
    {F_DATA, 0, "data", "FILE", 0, 0, "train on this file's bytes (default: the built-in corpus)"},
    {F_LESSON, 0, "lesson", "NAME|list", 0, 0,
     "run a classroom lesson (its settings, script and notes); list names them"},
    {F_COMPARE, 0, "compare", "SETTING=VALUE", 0, 0,
     "train a twin run in lockstep that differs in one setting, e.g. norm=post"},
    {F_SCRIPT, 0, "script", "FILE", 0, 0,
     "apply commands at set steps: lines 'at N: CMD' or 'every N: CMD'"},
    {F_SAVE, 0, "save", "FILE", 0, 0, "write a checkpoint at the end (atomically)"},
    {F_LOAD, 0, "load", "FILE", 0, 0, "resume from a checkpoint (its shape and settings)"},
    {F_THREADS, 0, "threads", "N", 1, 64,
     "threads per run for the kernels, 1..64; same results (default: online cores)"},
    {F_HEADLESS, 0, "headless", NULL, 0, 0, "train without the terminal UI"},
    {F_ASCII, 0, "ascii", NULL, 0, 0, "live view in plain ASCII: no braille or block glyphs"},
    {F_NOCOLOR, 0, "no-color", NULL, 0, 0, "live view without colors (as NO_COLOR=1 does)"},
    {F_BARS, 0, "bars", "absolute|relative", 0, 0,
     "gradient bars on 1e-5..1e+2, or each run's own top decade (key v) (default absolute)"},
    {F_CSV, 0, "csv", "FILE", 0, 0, "write one CSV row of metrics per step (- = stdout)"},
    {F_JSONL, 0, "jsonl", "FILE", 0, 0, "write one JSON object of metrics per step (- = stdout)"},
    {F_QUIET, 'q', "quiet", NULL, 0, 0, "no progress line or summary on stderr"},
    {F_HELP, 'h', "help", NULL, 0, 0, "show this help and exit"},
    {F_VERSION, 'V', "version", NULL, 0, 0, "print the version and exit"},
};
enum { N_FLAGS = sizeof flags / sizeof flags[0] };

void cli_usage(FILE *f)
{
    fputs("usage: normscope [options]            live view of a Transformer training\n"
          "       normscope --headless [options] train and write metrics, no UI\n\n"
          "Trains a small byte-level GPT and shows per-layer gradient norms,\n"
          "activation maxima and the loss while it trains.\n\noptions:\n",
          f);
    for (int i = 0; i < N_FLAGS; i++) {
        const flag_spec *s = &flags[i];
        char left[64];
        int n = s->short_name ? snprintf(left, sizeof left, "-%c, --%s", s->short_name, s->long_name)
                              : snprintf(left, sizeof left, "    --%s", s->long_name);
        if (s->arg && n < (int)sizeof left)
            snprintf(left + n, sizeof left - (size_t)n, " %s", s->arg);
        if (strlen(left) > 24)
            fprintf(f, "  %s\n  %-24s  %s\n", left, "", s->help);
        else
            fprintf(f, "  %-24s  %s\n", left, s->help);
    }
    fputs("\nexit status: 0 done, 1 runtime error, 2 bad usage or input, 3 diverged\n"
          "See normscope(1) for the metrics columns and the checkpoint format.\n",
          f);
}

static const flag_spec *find_long(const char *name, size_t len)
{
    for (int i = 0; i < N_FLAGS; i++)
        if (strlen(flags[i].long_name) == len && !strncmp(flags[i].long_name, name, len))
            return &flags[i];
    return NULL;
}

static const flag_spec *find_short(char c)
{
    for (int i = 0; i < N_FLAGS; i++)
        if (flags[i].short_name == c)
            return &flags[i];
    return NULL;
}

static int bad(FILE *err, const flag_spec *s, const char *val, const char *allowed)
{
    fprintf(err, "normscope: --%s '%s': %s\n", s->long_name, val, allowed);
    return 2;
}

/* A finite number spelled in full, inside [lo, hi]. */
static int parse_num(const char *v, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (end == v || *end || errno == ERANGE || !isfinite(x) || x < lo || x > hi)
        return -1;
    *out = x;
    return 0;
}

static int parse_int(const char *v, double lo, double hi, long *out)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (end == v || *end || errno == ERANGE || (double)x < lo || (double)x > hi)
        return -1;
    *out = x;
    return 0;
}

static int apply(cli_opts *o, const flag_spec *s, const char *v, FILE *out, FILE *err)
{
    ns_config *c = &o->cfg;
    char range[160];
    long n = 0;
    double x = 0;
    switch (s->id) {
    case F_LAYERS: case F_DIM: case F_HEADS: case F_CONTEXT: case F_BATCH: case F_WARMUP:
    case F_STEPS: case F_VALEVERY: case F_VALBATCHES: case F_MIXK: case F_SNAPEVERY:
    case F_SNAPS: case F_THREADS:
        if (parse_int(v, s->lo, s->hi, &n)) {
            snprintf(range, sizeof range, "expected an integer in %.0f..%.0f", s->lo, s->hi);
            return bad(err, s, v, range);
        }
        break;
    case F_EPS: case F_INITSTD: case F_LR: case F_ADAMEPS: case F_WD: case F_CLIP:
    case F_DYTALPHA: case F_GAMMAINIT: case F_BETAINIT:
        if (parse_num(v, s->lo, s->hi, &x)) {
            snprintf(range, sizeof range, "expected a number in %g..%g", s->lo, s->hi);
            return bad(err, s, v, range);
        }
        break;
    default:
        break;
    }
    switch (s->id) {
    case F_LAYERS: c->n_layer = (int)n; o->set |= CLI_SET_LAYERS; break;
    case F_DIM: c->dim = (int)n; o->set |= CLI_SET_DIM; break;
    case F_HEADS: c->n_head = (int)n; o->set |= CLI_SET_HEADS; break;
    case F_CONTEXT: c->context = (int)n; o->set |= CLI_SET_CONTEXT; break;
    case F_BATCH: c->batch = (int)n; o->set |= CLI_SET_BATCH; break;
    case F_WARMUP: c->warmup = (int)n; break;
    case F_STEPS: c->steps = n; o->set |= CLI_SET_STEPS; break;
    case F_VALEVERY: c->val_every = (int)n; break;
    case F_VALBATCHES: c->val_batches = (int)n; break;
    case F_EPS: c->eps = (float)x; break;
    case F_INITSTD: c->init_std = (float)x; break;
    case F_LR: c->lr = (float)x; break;
    case F_ADAMEPS: c->adam_eps = (float)x; break;
    case F_WD: c->weight_decay = (float)x; break;
    case F_CLIP: c->clip = (float)x; break;
    case F_MIXK: c->mix_k = (int)n; break;
    case F_DYTALPHA: c->dyt_alpha = (float)x; break;
    case F_GAMMAINIT: c->ln_gamma_init = (float)x; break;
    case F_BETAINIT: c->ln_beta_init = (float)x; break;
    case F_POSTINITSCALE: c->post_init_scale = 1; break;
    case F_SNAPEVERY: c->snapshot_every = (int)n; break;
    case F_SNAPS: c->snapshots = (int)n; break;
    case F_THREADS: o->threads = (int)n; break;
    case F_PRECISION: {
        int k = numfmt_parse(v);
        if (k < 0)
            return bad(err, s, v, "expected fp32, bf16 or fp16");
        c->precision = (numfmt)k;
        break;
    }
    case F_FP32NORMS:
        if (!strcmp(v, "on"))
            c->fp32_norms = 1;
        else if (!strcmp(v, "off"))
            c->fp32_norms = 0;
        else
            return bad(err, s, v, "expected on or off");
        break;
    case F_LOSSSCALE:
        if (!strcmp(v, "dynamic"))
            c->loss_scale = 0.0f;
        else if (!strcmp(v, "off"))
            c->loss_scale = -1.0f;
        else if (parse_num(v, s->lo, s->hi, &x))
            return bad(err, s, v, "expected dynamic, off or a number in 1e-30..1e30");
        else
            c->loss_scale = (float)x;
        break;
    case F_ONDIVERGE:
        if (!strcmp(v, "pause"))
            c->on_div = ONDIV_PAUSE;
        else if (!strcmp(v, "stop"))
            c->on_div = ONDIV_STOP;
        else if (!strcmp(v, "continue"))
            c->on_div = ONDIV_CONTINUE;
        else
            return bad(err, s, v, "expected pause, stop or continue");
        break;
    case F_FINALNORM:
        if (!strcmp(v, "on"))
            c->final_norm = 1;
        else if (!strcmp(v, "off"))
            c->final_norm = 0;
        else
            return bad(err, s, v, "expected on or off");
        break;
    case F_NORM: {
        int k = norm_place_parse(v);
        if (k < 0)
            return bad(err, s, v, "expected post, pre, sandwich, deepnorm, rezero, none or mix");
        c->norm = (norm_place)k;
        break;
    }
    case F_NORMKIND: {
        int k = norm_kind_parse(v);
        if (k < 0)
            return bad(err, s, v, "expected layernorm, rmsnorm or dyt");
        c->norm_kind = (norm_kind)k;
        break;
    }
    case F_INIT: {
        int k = init_kind_parse(v);
        if (k < 0)
            return bad(err, s, v, "expected xavier or normal");
        c->init = (init_kind)k;
        break;
    }
    case F_SCHEDULE: {
        int k = sched_kind_parse(v);
        if (k < 0)
            return bad(err, s, v, "expected constant, cosine, invsqrt or noam");
        c->schedule = (sched_kind)k;
        break;
    }
    case F_BETAS: {
        const char *comma = strchr(v, ',');
        char b1[64];
        double x1, x2;
        size_t l1 = comma ? (size_t)(comma - v) : 0;
        if (!comma || l1 >= sizeof b1)
            return bad(err, s, v, "expected B1,B2 with each in 0..0.999999");
        memcpy(b1, v, l1);
        b1[l1] = 0;
        if (parse_num(b1, 0, s->hi, &x1) || parse_num(comma + 1, 0, s->hi, &x2))
            return bad(err, s, v, "expected B1,B2 with each in 0..0.999999");
        c->beta1 = (float)x1;
        c->beta2 = (float)x2;
        break;
    }
    case F_SEED: {
        char *end;
        errno = 0;
        unsigned long long u = strtoull(v, &end, 10);
        if (end == v || *end || errno == ERANGE || v[0] == '-')
            return bad(err, s, v, "expected an integer in 0..18446744073709551615");
        c->seed = (uint64_t)u;
        break;
    }
    case F_DATA: o->data = v; break;
    case F_SCRIPT: o->script = v; break;
    case F_LESSON: o->lesson = v; break;
    case F_COMPARE: {
        const char *eq = strchr(v, '=');
        if (!eq || eq == v || !eq[1])
            return bad(err, s, v, "expected SETTING=VALUE, e.g. norm=post");
        o->compare = v;
        break;
    }
    case F_SAVE: o->save = v; break;
    case F_LOAD: o->load = v; break;
    case F_CSV: o->csv = v; break;
    case F_JSONL: o->jsonl = v; break;
    case F_HEADLESS: o->headless = 1; break;
    case F_ASCII: o->ascii = 1; break;
    case F_NOCOLOR: o->no_color = 1; break;
    case F_BARS:
        if (strcmp(v, "absolute") && strcmp(v, "relative"))
            return bad(err, s, v, "expected absolute or relative");
        o->bars_rel = v[0] == 'r';
        break;
    case F_QUIET: o->quiet = 1; break;
    case F_HELP: cli_usage(out); return 1;
    case F_VERSION: fprintf(out, "normscope %s\n", NS_VERSION); return 1;
    }
    return 0;
}

/* Settings a --compare twin may differ in: everything that leaves the
 * shape (and so the batches and the parameter layout) alone. */
static const flag_id comparable[] = {
    F_NORM,    F_NORMKIND, F_FINALNORM, F_EPS,       F_INIT,      F_INITSTD,   F_LR,
    F_BETAS,   F_ADAMEPS,  F_WD,        F_CLIP,      F_WARMUP,    F_SCHEDULE,  F_PRECISION,
    F_FP32NORMS, F_LOSSSCALE, F_MIXK,   F_DYTALPHA,  F_GAMMAINIT, F_BETAINIT,  F_SEED,
};

void cli_setting_label(const ns_config *c, const char *spec, char *buf, size_t len)
{
    size_t n = strcspn(spec, "=");
    char name[32];
    snprintf(name, sizeof name, "%.*s", (int)(n < sizeof name ? n : sizeof name - 1), spec);
    char v[48];
    if (!strcmp(name, "norm"))
        snprintf(v, sizeof v, "%s", norm_place_name(c->norm));
    else if (!strcmp(name, "norm-kind"))
        snprintf(v, sizeof v, "%s", norm_kind_name(c->norm_kind));
    else if (!strcmp(name, "final-norm"))
        snprintf(v, sizeof v, "%s", c->final_norm < 0 ? "auto" : c->final_norm ? "on" : "off");
    else if (!strcmp(name, "init"))
        snprintf(v, sizeof v, "%s", init_kind_name(c->init));
    else if (!strcmp(name, "schedule"))
        snprintf(v, sizeof v, "%s", sched_kind_name(c->schedule));
    else if (!strcmp(name, "precision"))
        snprintf(v, sizeof v, "%s", numfmt_name(c->precision));
    else if (!strcmp(name, "fp32-norms"))
        snprintf(v, sizeof v, "%s", c->fp32_norms ? "on" : "off");
    else if (!strcmp(name, "loss-scale"))
        snprintf(v, sizeof v, c->loss_scale == 0 ? "dynamic" : c->loss_scale < 0 ? "off" : "%g",
                 (double)c->loss_scale);
    else if (!strcmp(name, "betas"))
        snprintf(v, sizeof v, "%g,%g", (double)c->beta1, (double)c->beta2);
    else if (!strcmp(name, "warmup"))
        snprintf(v, sizeof v, "%d", c->warmup);
    else if (!strcmp(name, "mix-k"))
        snprintf(v, sizeof v, "%d", c->mix_k);
    else if (!strcmp(name, "seed"))
        snprintf(v, sizeof v, "%llu", (unsigned long long)c->seed);
    else {
        double x = !strcmp(name, "eps")             ? c->eps
                   : !strcmp(name, "init-std")      ? c->init_std
                   : !strcmp(name, "lr")            ? c->lr
                   : !strcmp(name, "adam-eps")      ? c->adam_eps
                   : !strcmp(name, "weight-decay")  ? c->weight_decay
                   : !strcmp(name, "clip")          ? c->clip
                   : !strcmp(name, "dyt-alpha")     ? c->dyt_alpha
                   : !strcmp(name, "ln-gamma-init") ? c->ln_gamma_init
                                                    : c->ln_beta_init;
        snprintf(v, sizeof v, "%g", x);
    }
    snprintf(buf, len, "%s=%s", name, v);
}

int cli_apply_setting(ns_config *c, const char *spec, FILE *err)
{
    const char *eq = strchr(spec, '=');
    size_t len = eq ? (size_t)(eq - spec) : strlen(spec);
    const flag_spec *s = find_long(spec, len);
    int ok = 0;
    for (size_t i = 0; s && i < sizeof comparable / sizeof comparable[0]; i++)
        ok |= s->id == comparable[i];
    if (!eq || !ok) {
        fprintf(err,
                "normscope: --compare '%s': expected SETTING=VALUE with SETTING one of norm, "
                "norm-kind, final-norm, eps, init, init-std, lr, betas, adam-eps, weight-decay, "
                "clip, warmup, schedule, precision, fp32-norms, loss-scale, mix-k, dyt-alpha, "
                "ln-gamma-init, ln-beta-init, seed\n",
                spec);
        return 2;
    }
    cli_opts tmp;
    memset(&tmp, 0, sizeof tmp);
    tmp.cfg = *c;
    if (apply(&tmp, s, eq + 1, stdout, err) != 0)
        return 2;
    *c = tmp.cfg;
    return 0;
}

int cli_parse(cli_opts *o, int argc, char **argv, FILE *out, FILE *err)
{
    memset(o, 0, sizeof *o);
    config_defaults(&o->cfg);
    o->threads = pool_default_threads();
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const flag_spec *s = NULL;
        const char *val = NULL;
        if (a[0] == '-' && a[1] == '-' && a[2]) {
            const char *eq = strchr(a + 2, '=');
            size_t len = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
            s = find_long(a + 2, len);
            if (!s) {
                fprintf(err, "normscope: unknown option '%.*s' (see --help)\n", (int)len + 2, a);
                return 2;
            }
            if (eq) {
                if (!s->arg) {
                    fprintf(err, "normscope: --%s takes no value\n", s->long_name);
                    return 2;
                }
                val = eq + 1;
            }
        } else if (a[0] == '-' && a[1] && a[1] != '-') {
            s = find_short(a[1]);
            if (!s) {
                fprintf(err, "normscope: unknown option '-%c' (see --help)\n", a[1]);
                return 2;
            }
            if (a[2]) {
                if (!s->arg) {
                    fprintf(err, "normscope: -%c takes no value\n", a[1]);
                    return 2;
                }
                val = a + 2;
            }
        } else {
            fprintf(err, "normscope: unexpected argument '%s' (see --help)\n", a);
            return 2;
        }
        if (s->arg && !val) {
            if (i + 1 >= argc) {
                fprintf(err, "normscope: --%s needs a value: %s\n", s->long_name, s->arg);
                return 2;
            }
            val = argv[++i];
        }
        int r = apply(o, s, val, out, err);
        if (r)
            return r;
    }
    if (o->cfg.n_head > o->cfg.dim || o->cfg.dim % o->cfg.n_head) {
        fprintf(err, "normscope: --heads %d: must divide --dim %d\n", o->cfg.n_head, o->cfg.dim);
        return 2;
    }
    if (o->headless && !(o->set & CLI_SET_STEPS))
        o->cfg.steps = 1000;
    const char *why = config_check(&o->cfg);
    if (why) {
        fprintf(err, "normscope: %s\n", why);
        return 2;
    }
    return 0;
}
