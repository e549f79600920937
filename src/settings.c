/* settings.c - the table of every flag and setting, and the loops over it:
 * defaults, value parsing with range errors, --help, value spelling and
 * the range checks of loaded values. It is not the command line's driver
 * (cli.c walks argv), the command parser (command.c) or the checkpoint
 * writer (engine.c): those call in here for every row. */
#include "settings.h"

#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CFG(f) SET_IN_CFG, offsetof(ns_config, f)
#define OPT(f) SET_IN_OPTS, offsetof(cli_opts, f)
#define NOWHERE SET_IN_NONE, 0
#define NAMES(a) a, (int)(sizeof a / sizeof a[0])

/* --on-stall's values, index = cli_opts.on_stall */
static const char *const on_stall_names[] = {"continue", "stop"};
/* The live view's gradient bars (cli_opts.bars_rel is the index). */
static const char *const bars_names[] = {"absolute", "relative"};

/* Order is --help's. ckpt is the field's place in the checkpoint header:
 * version 1 holds fields 1..32, version 2 adds 33, and a new field takes
 * the next number. */
static const ns_setting table[] = {
    {"layers", 'L', SET_INT, "N", 1, 64, NULL, 0, 6, 0, NULL, "Transformer blocks", 0, NULL,
     CFG(n_layer), 1},
    {"dim", 'd', SET_INT, "N", 16, 1024, NULL, 0, 64, 0, NULL, "model width, divisible by --heads",
     0, NULL, CFG(dim), 2},
    {"heads", 'H', SET_INT, "N", 1, 1024, NULL, 0, 4, 0, NULL, "attention heads, at most --dim", 0,
     NULL, CFG(n_head), 3},
    {"context", 'T', SET_INT, "N", 8, 1024, NULL, 0, 64, 0, NULL, "context length in bytes", 0,
     NULL, CFG(context), 4},
    {"batch", 'B', SET_INT, "N", 1, 512, NULL, 0, 16, 0, NULL, "sequences per step", 0, NULL,
     CFG(batch), 5},
    {"norm", 0, SET_ENUM, NULL, 0, 0, NAMES(norm_place_names), NORM_PRE, 0, NULL,
     "norm placement: post x=N(x+F(x)), pre x=x+F(N(x)), ...", SETF_COMPARE, "norm", CFG(norm),
     6},
    {"norm-kind", 0, SET_ENUM, NULL, 0, 0, NAMES(norm_kind_names), NORMK_LAYERNORM, 0, NULL,
     "normalization", SETF_COMPARE, "kind", CFG(norm_kind), 7},
    {"eps", 0, SET_REAL, "X", 1e-12, 1, NULL, 0, 1e-5, 0, NULL, "norm epsilon", SETF_COMPARE, NULL,
     CFG(eps), 8},
    {"final-norm", 0, SET_AUTO, NULL, 0, 0, NULL, 0, -1, 0, NULL,
     "norm before the head; auto = on for pre, sandwich, mix", SETF_COMPARE, "final-norm",
     CFG(final_norm), 9},
    {"mix-k", 0, SET_INT, "N", 0, 64, NULL, 0, -1, 0, "L/4",
     "Post-LN blocks at the bottom under --norm mix", SETF_COMPARE, NULL, CFG(mix_k), 10},
    {"dyt-alpha", 0, SET_REAL, "X", 1e-6, 100, NULL, 0, 0.5, 0, NULL, "initial a of DyT norms",
     SETF_COMPARE, NULL, CFG(dyt_alpha), 11},
    {"ln-gamma-init", 0, SET_REAL, "X", -100, 100, NULL, 0, 1, 0, NULL, "initial norm gains",
     SETF_COMPARE, NULL, CFG(ln_gamma_init), 12},
    {"ln-beta-init", 0, SET_REAL, "X", -100, 100, NULL, 0, 0, 0, NULL, "initial norm biases",
     SETF_COMPARE, NULL, CFG(ln_beta_init), 13},
    {"post-init-scale", 0, SET_PRESENCE, NULL, 0, 0, NULL, 0, 0, 0, NULL,
     "scale block output weights by 1/sqrt(2L) at init", 0, NULL, CFG(post_init_scale), 14},
    {"init", 0, SET_ENUM, NULL, 0, 0, NAMES(init_kind_names), INIT_XAVIER, 0, NULL,
     "block weights: uniform Glorot, or normal(--init-std) as GPT-2", SETF_COMPARE, NULL,
     CFG(init), 20},
    {"init-std", 0, SET_REAL, "X", 1e-6, 10, NULL, 0, 0.02, 0, NULL,
     "std of normal init and of the embeddings", SETF_COMPARE, NULL, CFG(init_std), 21},
    {"lr", 0, SET_REAL, "X", 1e-9, 10, NULL, 0, 1e-3, 0, NULL, "peak learning rate", SETF_COMPARE,
     "lr", CFG(lr), 22},
    {"lr-layer-decay", 0, SET_REAL, "X", 0.1, 10, NULL, 0, 1, 0, NULL,
     "peak LR of block i of L times X^(L-1-i), embeddings X^L, final norm and head 1; 1 = off",
     SETF_COMPARE, "lr-layer-decay", CFG(lr_layer_decay), 33},
    {"betas", 0, SET_BETAS, "B1,B2", 0, 0.999999, NULL, 0, 0.9, 0.98, NULL, "AdamW betas",
     SETF_COMPARE, NULL, CFG(beta1), 23},
    {"adam-eps", 0, SET_REAL, "X", 1e-30, 1, NULL, 0, 1e-8, 0, NULL, "AdamW epsilon",
     SETF_COMPARE, NULL, CFG(adam_eps), 24},
    {"weight-decay", 0, SET_REAL, "X", 0, 10, NULL, 0, 0, 0, NULL,
     "decoupled weight decay on matrices and embeddings", SETF_COMPARE, NULL,
     CFG(weight_decay), 25},
    {"clip", 0, SET_REAL, "X", 0, 1e6, NULL, 0, 0, 0, NULL,
     "clip the global gradient norm to X, 0 = off", SETF_COMPARE, "clip", CFG(clip), 26},
    {"warmup", 0, SET_INT, "N", 0, 1e7, NULL, 0, 100, 0, NULL, "linear LR warmup steps, 0 = none",
     SETF_COMPARE, NULL, CFG(warmup), 27},
    {"schedule", 0, SET_ENUM, NULL, 0, 0, NAMES(sched_kind_names), SCHED_CONSTANT, 0, NULL,
     "LR after warmup; noam = d^-0.5*min(s^-0.5, s*w^-1.5)", SETF_COMPARE, NULL, CFG(schedule),
     28},
    {"steps", 0, SET_LONG, "N", 0, 1e9, NULL, 0, 0, 0, "1000 headless, 0 live",
     "steps to train; 0 = until stopped", 0, NULL, CFG(steps), 29},
    {"precision", 0, SET_ENUM, NULL, 0, 0, NAMES(numfmt_names), FMT_FP32, 0, NULL,
     "arithmetic format, emulated exactly; fp32 master weights", SETF_COMPARE, "precision",
     CFG(precision), 15},
    {"fp32-norms", 0, SET_ONOFF, NULL, 0, 0, NULL, 0, 1, 0, NULL,
     "norms, softmax and loss in fp32 (on, as autocast) or in the format", SETF_COMPARE,
     "fp32-norms", CFG(fp32_norms), 16},
    {"loss-scale", 0, SET_LOSS_SCALE, "dynamic|off|X", 1e-30, 1e30, NULL, 0, 0, 0, NULL,
     "loss scaling in bf16/fp16: GradScaler rule from 65536, none, or X", SETF_COMPARE,
     "loss-scale", CFG(loss_scale), 17},
    {"on-diverge", 0, SET_ENUM, NULL, 0, 0, NAMES(on_diverge_names), ONDIV_DEFAULT, 0,
     "pause live, stop headless: exit 3", "on a non-finite loss or gradient", 0, NULL,
     CFG(on_div), 0},
    {"on-stall", 0, SET_ENUM, NULL, 0, 0, NAMES(on_stall_names), 0, 0, "continue",
     "on a stall (see DIAGNOSIS in the man page): go on, or stop: exit 4", 0, NULL,
     OPT(on_stall), 0},
    {"snapshot-every", 0, SET_INT, "N", 0, 1e9, NULL, 0, 50, 0, NULL,
     "keep an in-memory snapshot every N steps, 0 = none", 0, NULL, CFG(snapshot_every), 18},
    {"snapshots", 0, SET_INT, "K", 1, 1000, NULL, 0, 8, 0, NULL, "snapshots kept for rewinding", 0,
     NULL, CFG(snapshots), 19},
    {"val-every", 0, SET_INT, "N", 0, 1e9, NULL, 0, 50, 0, NULL,
     "validation loss every N steps, 0 = never", 0, NULL, CFG(val_every), 30},
    {"val-batches", 0, SET_INT, "N", 1, 1000, NULL, 0, 4, 0, NULL, "batches per validation", 0,
     NULL, CFG(val_batches), 31},
    {"seed", 0, SET_U64, "N", 0, 0, NULL, 0, 1337, 0, NULL, "seed of weights and batches",
     SETF_COMPARE, NULL, CFG(seed), 32},
    {"data", 0, SET_PATH, "FILE", 0, 0, NULL, 0, 0, 0, "the built-in corpus",
     "train on this file's bytes", 0, NULL, OPT(data), 0},
    {"lesson", 0, SET_PATH, "NAME|list", 0, 0, NULL, 0, 0, 0, NULL,
     "run a classroom lesson (its settings, script and notes); list names them", 0, NULL,
     OPT(lesson), 0},
    {"compare", 0, SET_ASSIGN, "SETTING=VALUE", 0, 0, NULL, 0, 0, 0, NULL,
     "train a twin run in lockstep that differs in one setting, e.g. norm=post", 0, NULL,
     OPT(compare), 0},
    {"follow", 0, SET_PATH, "FILE", 0, 0, NULL, 0, 0, 0, NULL,
     "show a metrics stream (a PyTorch run's probe, a --jsonl file) instead of training", 0, NULL,
     OPT(follow), 0},
    {"script", 0, SET_PATH, "FILE", 0, 0, NULL, 0, 0, 0, NULL,
     "apply commands at set steps: lines 'at N: CMD' or 'every N: CMD'", 0, NULL, OPT(script), 0},
    {"save", 0, SET_PATH, "FILE", 0, 0, NULL, 0, 0, 0, NULL,
     "write a checkpoint at the end (atomically); diverged: the last good snapshot", 0, NULL,
     OPT(save), 0},
    {"load", 0, SET_PATH, "FILE", 0, 0, NULL, 0, 0, 0, NULL,
     "resume from a checkpoint (its shape and settings)", 0, NULL, OPT(load), 0},
    {"threads", 0, SET_INT, "N", 1, 64, NULL, 0, 0, 0, "online cores",
     "threads of the step (a --compare twin shares them); same results", 0, NULL, OPT(threads), 0},
    {"sweep", 0, SET_PATH, "SPEC", 0, 0, NULL, 0, 0, 0, NULL,
     "run a grid of headless runs, e.g. 'norm=post,pre layers=2,6 seed=1..3', shown live on a "
     "terminal unless --headless (see SWEEPS; keys: arrows Enter Esc Tab PgUp PgDn x r c ? q)", 0,
     NULL, OPT(sweep), 0},
    {"sweep-out", 0, SET_PATH, "DIR", 0, 0, NULL, 0, 0, 0, "sweep-YYYYmmdd-HHMMSS",
     "the sweep's directory: run CSVs, results.csv", 0, NULL, OPT(sweep_out), 0},
    {"jobs", 0, SET_INT, "N", 1, 1024, NULL, 0, 0, 0, "online cores", "sweep runs at once", 0,
     NULL, OPT(jobs), 0},
    {"list", 0, SET_PRESENCE, NULL, 0, 0, NULL, 0, 0, 0, NULL,
     "with --sweep: print one command line per run, run none; with --sweep-collect: those of "
     "the runs not complete", 0, NULL, OPT(list), 0},
    {"list-range", 0, SET_PATH, "A..B", 0, 0, NULL, 0, 0, 0, "all",
     "with --list: only its lines A to B (1-based), e.g. to fit a job array's size limit", 0,
     NULL, OPT(list_range), 0},
    {"sweep-collect", 0, SET_PATH, "DIR", 0, 0, NULL, 0, 0, 0, NULL,
     "build DIR/results.csv and the table from the run CSVs in DIR; exit 1 unless every run "
     "is complete", 0, NULL, OPT(sweep_collect), 0},
    {"retry", 0, SET_PATH, "failed", 0, 0, NULL, 0, 0, 0, NULL,
     "with --sweep: run again the runs results.csv records as failed (exit N, signal N)", 0,
     NULL, OPT(retry), 0},
    {"yes", 0, SET_PRESENCE, NULL, 0, 0, NULL, 0, 0, 0, NULL, "allow a sweep of more than 10000 runs",
     0, NULL, OPT(yes), 0},
    {"headless", 0, SET_PRESENCE, NULL, 0, 0, NULL, 0, 0, 0, NULL, "train without the terminal UI",
     0, NULL, OPT(headless), 0},
    {"ascii", 0, SET_PRESENCE, NULL, 0, 0, NULL, 0, 0, 0, NULL,
     "live view in plain ASCII: no braille or block glyphs", 0, NULL, OPT(ascii), 0},
    {"no-color", 0, SET_PRESENCE, NULL, 0, 0, NULL, 0, 0, 0, NULL,
     "live view without colors (as NO_COLOR=1 does)", 0, NULL, OPT(no_color), 0},
    {"bars", 0, SET_ENUM, NULL, 0, 0, NAMES(bars_names), 0, 0, "absolute",
     "gradient bars on 1e-5..1e+2, or each run's own top decade (key v)", 0, NULL,
     OPT(bars_rel), 0},
    {"csv", 0, SET_PATH, "FILE", 0, 0, NULL, 0, 0, 0, NULL,
     "write one CSV row of metrics per step (- = stdout)", 0, NULL, OPT(csv), 0},
    {"jsonl", 0, SET_PATH, "FILE", 0, 0, NULL, 0, 0, 0, NULL,
     "write one JSON object of metrics per step (- = stdout)", 0, NULL, OPT(jsonl), 0},
    {"no-pause", 0, SET_PRESENCE, NULL, 0, 0, NULL, 0, 0, 0, NULL,
     "run a lesson's or --script's pauses straight through (their prompts are logged)", 0, NULL,
     OPT(no_pause), 0},
    {"plot", 0, SET_PATH, "INPUT", 0, 0, NULL, 0, 0, 0, NULL,
     "draw an SVG figure from a run's --csv/--jsonl (- = stdin) or a sweep's DIR and exit; needs --out", 0, NULL,
     OPT(plot), 0},
    {"out", 0, SET_PATH, "FILE.svg", 0, 0, NULL, 0, 0, 0, NULL,
     "where --plot writes its figure (atomically)", SETF_PLOT, NULL, OPT(out), 0},
    {"kind", 0, SET_PATH, "loss|layers|profile|heatmap|map", 0, 0, NULL, 0, 0, 0, "loss",
     "the --plot figure", SETF_PLOT, NULL, OPT(kind), 0},
    {"size", 0, SET_PATH, "WxH", 0, 0, NULL, 0, 0, 0, "1600x900", "--plot figure size in pixels",
     SETF_PLOT, NULL, OPT(size), 0},
    {"step", 0, SET_PATH, "N[,N...]", 0, 0, NULL, 0, 0, 0, NULL,
     "--plot steps: layers at N (default last), profile lines at each (up to 8)", SETF_PLOT, NULL,
     OPT(step), 0},
    {"rows", 0, SET_PATH, "AXIS", 0, 0, NULL, 0, 0, 0, NULL,
     "--kind map: the sweep axis drawn as rows (default: the one with the most values)",
     SETF_PLOT, NULL, OPT(rows), 0},
    {"cols", 0, SET_PATH, "AXIS", 0, 0, NULL, 0, 0, 0, NULL,
     "--kind map: the axis drawn as columns (default: the next most values)", SETF_PLOT,
     NULL, OPT(cols), 0},
    {"mono", 0, SET_PRESENCE, NULL, 0, 0, NULL, 0, 0, 0, NULL,
     "--plot in black and white: dashes and marker shapes", SETF_PLOT, NULL, OPT(mono), 0},
    {"log", 0, SET_PRESENCE, NULL, 0, 0, NULL, 0, 0, 0, NULL, "--plot the loss on a log axis",
     SETF_PLOT, NULL, OPT(logy), 0},
    {"quiet", 'q', SET_PRESENCE, NULL, 0, 0, NULL, 0, 0, 0, NULL,
     "no progress line or summary on stderr", 0, NULL, OPT(quiet), 0},
    {"help", 'h', SET_ACTION, NULL, 0, 0, NULL, 0, 0, 0, NULL, "show this help and exit", 0, NULL,
     NOWHERE, 0},
    {"version", 'V', SET_ACTION, NULL, 0, 0, NULL, 0, 0, 0, NULL, "print the version and exit", 0,
     NULL, NOWHERE, 0},
};
enum { N_ROWS = sizeof table / sizeof table[0] };
/* SET_BETAS stores two floats: beta1, then beta2 right after it */
_Static_assert(offsetof(ns_config, beta2) == offsetof(ns_config, beta1) + sizeof(float),
               "beta2 must follow beta1");
_Static_assert(N_ROWS <= NS_SETTINGS_MAX, "raise NS_SETTINGS_MAX");

int settings_count(void) { return N_ROWS; }
const ns_setting *settings_row(int i) { return i >= 0 && i < N_ROWS ? &table[i] : NULL; }
int settings_index(const ns_setting *s) { return (int)(s - table); }

const ns_setting *settings_find(const char *name, size_t len)
{
    for (int i = 0; i < N_ROWS; i++)
        if (strlen(table[i].name) == len && !strncmp(table[i].name, name, len))
            return &table[i];
    return NULL;
}

const ns_setting *settings_find_short(char c)
{
    for (int i = 0; c && i < N_ROWS; i++)
        if (table[i].short_name == c)
            return &table[i];
    return NULL;
}

const ns_setting *settings_find_cmd(const char *word)
{
    for (int i = 0; i < N_ROWS; i++)
        if (table[i].cmd && !strcmp(table[i].cmd, word))
            return &table[i];
    return NULL;
}

/* ---- raw access -------------------------------------------------------- */

static void *field(const ns_setting *s, ns_config *c, void *opts)
{
    if (s->home == SET_IN_CFG && c)
        return (char *)c + s->off;
    if (s->home == SET_IN_OPTS && opts)
        return (char *)opts + s->off;
    return NULL;
}

void *settings_field(const ns_setting *s, ns_config *c) { return field(s, c, NULL); }

static int is_int_type(setting_type t)
{
    return t == SET_INT || t == SET_ENUM || t == SET_ONOFF || t == SET_AUTO || t == SET_PRESENCE;
}

double settings_get(const ns_setting *s, const ns_config *c)
{
    const void *p = field(s, (ns_config *)c, NULL);
    if (!p)
        return 0;
    if (is_int_type(s->type))
        return *(const int *)p;
    if (s->type == SET_LONG)
        return (double)*(const long *)p;
    if (s->type == SET_U64)
        return (double)*(const uint64_t *)p;
    if (s->type == SET_REAL || s->type == SET_BETAS || s->type == SET_LOSS_SCALE)
        return *(const float *)p;
    return 0;
}

static void store(const ns_setting *s, void *p, double x)
{
    if (!p)
        return;
    if (is_int_type(s->type))
        *(int *)p = (int)x;
    else if (s->type == SET_LONG)
        *(long *)p = (long)x;
    else if (s->type == SET_U64)
        *(uint64_t *)p = (uint64_t)x;
    else if (s->type == SET_REAL || s->type == SET_BETAS || s->type == SET_LOSS_SCALE)
        *(float *)p = (float)x;
}

void settings_put(const ns_setting *s, ns_config *c, double x) { store(s, field(s, c, NULL), x); }

void settings_defaults(ns_config *c)
{
    memset(c, 0, sizeof *c);
    for (int i = 0; i < N_ROWS; i++) {
        const ns_setting *s = &table[i];
        settings_put(s, c, s->def);
        if (s->type == SET_BETAS)
            ((float *)field(s, c, NULL))[1] = (float)s->def2;
    }
}

/* ---- parsing ----------------------------------------------------------- */

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

static int parse_int(const char *v, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (end == v || *end || errno == ERANGE || (double)x < lo || (double)x > hi)
        return -1;
    *out = (double)x;
    return 0;
}

static int parse_u64(const char *v, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long u = strtoull(v, &end, 10);
    if (end == v || *end || errno == ERANGE || v[0] == '-')
        return -1;
    *out = (uint64_t)u;
    return 0;
}

/* A number as --help writes it: 64, 0.5, 1e-9, 1e30 (no "+" or leading
 * zeros in the exponent). */
static void num_text(double x, char *buf, size_t len)
{
    char t[32], *p = t;
    snprintf(t, sizeof t, "%g", x);
    char *e = strchr(t, 'e');
    size_t n = 0;
    for (; *p && n + 1 < len; p++) {
        if (e && p > e && (*p == '+' || (*p == '0' && (p[-1] == 'e' || p[-1] == '-' ||
                                                       p[-1] == '+'))))
            continue;
        buf[n++] = *p;
    }
    buf[n] = 0;
}

void settings_names(const ns_setting *s, const char *sep, char *buf, size_t len)
{
    /* on/off rows spell 1/0, auto rows also -1: their names list "on" first */
    static const char *const words[] = {"on", "off", "auto"};
    int special = s->type == SET_ONOFF || s->type == SET_AUTO;
    const char *const *names = special ? words : s->names;
    int n = s->type == SET_ONOFF ? 2 : s->type == SET_AUTO ? 3 : s->n_names;
    size_t at = 0;
    buf[0] = 0;
    for (int i = 0; i < n && at < len; i++) {
        const char *j = i == 0 ? "" : strcmp(sep, "|") ? (i == n - 1 ? " or " : ", ") : "|";
        int k = snprintf(buf + at, len - at, "%s%s", j, names[i]);
        at += k > 0 ? (size_t)k : 0;
    }
}

static int lookup(const ns_setting *s, const char *v)
{
    if (s->type == SET_ONOFF || s->type == SET_AUTO) {
        if (!strcmp(v, "on"))
            return 1;
        if (!strcmp(v, "off"))
            return 0;
        return s->type == SET_AUTO && !strcmp(v, "auto") ? -1 : -2;
    }
    for (int i = 0; i < s->n_names; i++)
        if (!strcmp(s->names[i], v))
            return i;
    return -2;
}

/* "expected ...": what the row allows. */
static void expected(const ns_setting *s, char *why, size_t len)
{
    char a[160], b[32];
    switch (s->type) {
    case SET_INT: case SET_LONG:
        snprintf(why, len, "expected an integer in %.0f..%.0f", s->lo, s->hi);
        return;
    case SET_REAL:
        snprintf(why, len, "expected a number in %g..%g", s->lo, s->hi);
        return;
    case SET_ENUM: case SET_ONOFF: case SET_AUTO:
        settings_names(s, ", ", a, sizeof a);
        snprintf(why, len, "expected %s", a);
        return;
    case SET_U64:
        snprintf(why, len, "expected an integer in 0..%llu", (unsigned long long)UINT64_MAX);
        return;
    case SET_BETAS:
        snprintf(why, len, "expected B1,B2 with each in %g..%g", s->lo, s->hi);
        return;
    case SET_LOSS_SCALE:
        num_text(s->lo, a, sizeof a);
        num_text(s->hi, b, sizeof b);
        snprintf(why, len, "expected dynamic, off or a number in %s..%s", a, b);
        return;
    case SET_ASSIGN:
        snprintf(why, len, "expected SETTING=VALUE, e.g. norm=post");
        return;
    default:
        snprintf(why, len, "takes no value");
        return;
    }
}

int settings_parse_number(const ns_setting *s, const char *v, double *x, char *why,
                          size_t whylen)
{
    int r = -1, k;
    switch (s->type) {
    case SET_INT: case SET_LONG: r = parse_int(v, s->lo, s->hi, x); break;
    case SET_REAL: r = parse_num(v, s->lo, s->hi, x); break;
    case SET_ENUM: case SET_ONOFF: case SET_AUTO:
        if ((k = lookup(s, v)) >= -1)
            *x = k, r = 0;
        break;
    case SET_LOSS_SCALE:
        if (!strcmp(v, "dynamic") || !strcmp(v, "off"))
            *x = v[0] == 'd' ? 0.0 : -1.0, r = 0;
        else
            r = parse_num(v, s->lo, s->hi, x);
        break;
    default:
        break;
    }
    if (r != 0)
        expected(s, why, whylen);
    return r;
}

static int parse_betas(const ns_setting *s, const char *v, float *dst)
{
    const char *comma = strchr(v, ',');
    char b1[64];
    double x1, x2;
    size_t l1 = comma ? (size_t)(comma - v) : 0;
    if (!comma || l1 >= sizeof b1)
        return -1;
    memcpy(b1, v, l1);
    b1[l1] = 0;
    if (parse_num(b1, s->lo, s->hi, &x1) || parse_num(comma + 1, s->lo, s->hi, &x2))
        return -1;
    dst[0] = (float)x1;
    dst[1] = (float)x2;
    return 0;
}

int settings_set(const ns_setting *s, ns_config *c, void *opts, const char *v, char *why,
                 size_t whylen)
{
    void *p = field(s, c, opts);
    double x;
    int r = 0;
    if (!p) {
        snprintf(why, whylen, "not a setting of a run");
        return -1;
    }
    switch (s->type) {
    case SET_PRESENCE: *(int *)p = 1; return 0;
    case SET_PATH: *(const char **)p = v; return 0;
    case SET_ASSIGN: {
        const char *eq = strchr(v, '=');
        r = !eq || eq == v || !eq[1] ? -1 : 0;
        if (!r)
            *(const char **)p = v;
        break;
    }
    case SET_U64: r = parse_u64(v, (uint64_t *)p); break;
    case SET_BETAS: r = parse_betas(s, v, (float *)p); break;
    case SET_ACTION: r = -1; break;
    default:
        if (settings_parse_number(s, v, &x, why, whylen) != 0)
            return -1;
        store(s, p, x);
        return 0;
    }
    if (r != 0)
        expected(s, why, whylen);
    return r;
}

/* ---- spelling values --------------------------------------------------- */

void settings_format(const ns_setting *s, const ns_config *c, char *buf, size_t len)
{
    const void *p = field(s, (ns_config *)c, NULL);
    double x = settings_get(s, c);
    if (!p) {
        snprintf(buf, len, "?");
        return;
    }
    switch (s->type) {
    case SET_ENUM:
        snprintf(buf, len, "%s", x >= 0 && x < s->n_names ? s->names[(int)x] : "default");
        return;
    case SET_ONOFF: case SET_PRESENCE: snprintf(buf, len, "%s", x ? "on" : "off"); return;
    case SET_AUTO: snprintf(buf, len, "%s", x < 0 ? "auto" : x ? "on" : "off"); return;
    case SET_U64:
        snprintf(buf, len, "%llu", (unsigned long long)*(const uint64_t *)p);
        return;
    case SET_BETAS:
        snprintf(buf, len, "%g,%g", x, (double)((const float *)p)[1]);
        return;
    case SET_LOSS_SCALE:
        snprintf(buf, len, x == 0 ? "dynamic" : x < 0 ? "off" : "%g", x);
        return;
    case SET_LONG: snprintf(buf, len, "%ld", *(const long *)p); return;
    default: snprintf(buf, len, "%g", x); return;
    }
}

/* " (LO..HI, default D)": what --help appends to a row's words. */
static void help_tail(const ns_setting *s, char *buf, size_t len)
{
    char lo[32], hi[32], range[80] = "", def[80] = "";
    num_text(s->lo, lo, sizeof lo);
    num_text(s->hi, hi, sizeof hi);
    if (s->type == SET_INT || s->type == SET_LONG || s->type == SET_REAL)
        snprintf(range, sizeof range, "%s..%s", lo, hi);
    else if (s->type == SET_BETAS)
        snprintf(range, sizeof range, "each %s..%s", lo, hi);
    else if (s->type == SET_LOSS_SCALE)
        snprintf(range, sizeof range, "X in %s..%s", lo, hi);
    else if (s->type == SET_U64)
        snprintf(range, sizeof range, "0..2^64-1");
    if (s->def_text) {
        snprintf(def, sizeof def, "default: %s", s->def_text);
    } else if (s->type != SET_PATH && s->type != SET_ASSIGN && s->type != SET_ACTION &&
               s->type != SET_PRESENCE) {
        ns_config c;
        char v[48];
        settings_defaults(&c);
        settings_format(s, &c, v, sizeof v);
        if (s->type == SET_INT || s->type == SET_REAL)
            num_text(s->def, v, sizeof v);
        snprintf(def, sizeof def, "default %s", v);
    }
    buf[0] = 0;
    if (range[0] || def[0])
        snprintf(buf, len, " (%s%s%s)", range, range[0] && def[0] ? ", " : "", def);
}

void settings_help(FILE *f)
{
    for (int i = 0; i < N_ROWS; i++) {
        const ns_setting *s = &table[i];
        char left[128], arg[96], tail[192]; /* room for the longest row */
        if (s->arg)
            snprintf(arg, sizeof arg, " %s", s->arg);
        else if (s->type == SET_ENUM || s->type == SET_ONOFF || s->type == SET_AUTO)
            arg[0] = ' ', settings_names(s, "|", arg + 1, sizeof arg - 1);
        else
            arg[0] = 0;
        if (s->short_name)
            snprintf(left, sizeof left, "-%c, --%s%s", s->short_name, s->name, arg);
        else
            snprintf(left, sizeof left, "    --%s%s", s->name, arg);
        help_tail(s, tail, sizeof tail);
        if (strlen(left) > 24)
            fprintf(f, "  %s\n  %-24s  %s%s\n", left, "", s->help, tail);
        else
            fprintf(f, "  %-24s  %s%s\n", left, s->help, tail);
    }
}

void settings_compare_names(char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = 0;
    for (int i = 0; i < N_ROWS && at < len; i++)
        if (table[i].flags & SETF_COMPARE) {
            int k = snprintf(buf + at, len - at, "%s%s", at ? ", " : "", table[i].name);
            at += k > 0 ? (size_t)k : 0;
        }
}

/* ---- checks of loaded values ------------------------------------------- */

int settings_check(const ns_setting *s, const ns_config *c)
{
    double x = settings_get(s, c);
    if (x == s->def)
        return 0;
    switch (s->type) {
    case SET_INT: case SET_LONG: return x >= s->lo && x <= s->hi ? 0 : -1;
    case SET_ENUM: return x >= 0 && x < s->n_names ? 0 : -1;
    case SET_ONOFF: case SET_PRESENCE: return x == 0 || x == 1 ? 0 : -1;
    case SET_AUTO: return x >= -1 && x <= 1 ? 0 : -1;
    case SET_REAL:
        /* a mid-run setting may have left the flag's range (lr x2 pressed
         * often); the others are compared in float, as they were stored */
        if (s->cmd)
            return 0;
        return x >= (float)s->lo && x <= (float)s->hi ? 0 : -1;
    default: return 0;
    }
}
