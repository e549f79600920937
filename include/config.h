/* config.h - every setting of a normscope run, with defaults and names.
 *
 * This is plain data: no allocation, no I/O. The command line (cli.c) fills
 * it; the engine reads it; checkpoints store it. Settings that can change
 * between steps (placement, warmup, peak LR, clipping) live here too, and
 * the engine keeps its own copy of the ones in force.
 */
#ifndef NS_CONFIG_H
#define NS_CONFIG_H

#include <stdint.h>

#include "numfmt.h"

#define NS_VERSION "0.1.0"
#define NS_VOCAB 256 /* byte-level: one token per byte value */

/* Where the norms sit in a block (see model.h for the formulas). */
typedef enum {
    NORM_POST = 0,     /* x = N(x + F(x)), original Transformer */
    NORM_PRE = 1,      /* x = x + F(N(x)), GPT-2 */
    NORM_SANDWICH = 2, /* x = x + N_out(F(N_in(x))), CogView's Sandwich-LN */
    NORM_DEEPNORM = 3, /* x = N(alpha x + F(x)), DeepNet */
    NORM_REZERO = 4,   /* x = x + g F(x), g = 0 at init, no norm */
    NORM_NONE = 5,     /* x = x + F(x), no norm */
    NORM_MIX = 6,      /* Post-LN in the bottom k blocks, Pre-LN above (Mix-LN) */
    NORM_RESPOST = 7,  /* x = x + N(F(x)): Swin v2's res-post-norm, OLMo 2's order */
    NORM_PLACE_COUNT   /* checkpoints store the index: new placements go here */
} norm_place;
typedef enum {
    NORMK_LAYERNORM = 0,
    NORMK_RMSNORM = 1,
    NORMK_DYT = 2, /* g tanh(a x) + b, learnable scalar a (Zhu et al. 2025) */
    NORM_KIND_COUNT
} norm_kind;
typedef enum { INIT_XAVIER = 0, INIT_NORMAL = 1, INIT_KIND_COUNT } init_kind;
typedef enum {
    SCHED_CONSTANT = 0,
    SCHED_COSINE = 1,
    SCHED_INVSQRT = 2,
    SCHED_NOAM = 3,
    SCHED_KIND_COUNT
} sched_kind;

typedef enum {
    ONDIV_DEFAULT = -1, /* pause in the live view, stop headless */
    ONDIV_PAUSE = 0,
    ONDIV_STOP = 1,
    ONDIV_CONTINUE = 2,
    ONDIV_FIX = 3, /* rewind and apply the diagnosis' first next step (trainer.c) */
    ONDIV_COUNT
} on_diverge;

typedef struct {
    /* model shape */
    int n_layer;   /* L: 1..64 */
    int dim;       /* C: 16..1024, divisible by n_head */
    int n_head;    /* H */
    int context;   /* T: 8..1024 */
    int batch;     /* B: 1..512 */
    /* normalization */
    norm_place norm;
    norm_kind norm_kind;
    float eps;
    int final_norm;      /* -1 = by placement (on for pre, sandwich, mix, res-post), 0, 1 */
    int mix_k;           /* Post-LN blocks at the bottom under mix; -1 = L/4 */
    float dyt_alpha;     /* initial a of every DyT norm */
    float ln_gamma_init; /* initial norm gains */
    float ln_beta_init;  /* initial norm biases */
    int post_init_scale; /* scale block output weights by 1/sqrt(2L) at init */
    int qk_norm;         /* 0/1: a norm of the run's kind on each head's queries and
                          * keys before q.k (Dehghani et al. 2023); mid-run */
    /* initialization */
    init_kind init;
    float init_std; /* std of the normal init (also embeddings under xavier) */
    /* optimizer */
    float lr;           /* peak learning rate */
    float lr_layer_decay; /* layer i of L at lr X^(L-1-i), embeddings X^L; 1 = off */
    float beta1, beta2;
    float adam_eps;
    float weight_decay; /* decoupled, on weight matrices and embeddings only */
    float clip;         /* global grad-norm clip; 0 = off */
    float z_loss;       /* coefficient of mean (log Z)^2 added to the optimized loss
                         * (PaLM's z-loss, 1e-4); 0 = off; mid-run */
    /* schedule */
    int warmup;         /* warmup steps; 0 = none */
    sched_kind schedule;
    long steps;         /* total steps to train (0 = until stopped) */
    /* precision */
    numfmt precision;   /* fp32, bf16, fp16 */
    int fp32_norms;     /* norms and the loss softmax in fp32 (autocast-like) */
    float loss_scale;   /* 0 = dynamic, < 0 = off, > 0 = that constant */
    /* divergence */
    on_diverge on_div;  /* default: pause in the live view, stop headless */
    int snapshot_every; /* steps between in-memory snapshots; 0 = none */
    int snapshots;      /* how many are kept */
    /* data and evaluation */
    int val_every;      /* validation every N steps; 0 = never */
    int val_batches;    /* batches per validation */
    uint64_t seed;
} ns_config;

/* The documented defaults are the settings table's: settings_defaults
 * (settings.h). */

/* The most rows that table may have (cli_opts keeps one byte per row). */
#define NS_SETTINGS_MAX 96

/* The value names of the enums, index = value, as used on the command
 * line, in the CSV and in scripts. */
extern const char *const config_norm_place_names[NORM_PLACE_COUNT];
extern const char *const config_norm_kind_names[NORM_KIND_COUNT];
extern const char *const config_init_kind_names[INIT_KIND_COUNT];
extern const char *const config_sched_kind_names[SCHED_KIND_COUNT];
extern const char *const config_on_diverge_names[ONDIV_COUNT];

/* Names as used on the command line, in the CSV and in checkpoints. */
const char *config_norm_place_name(norm_place p);
const char *config_norm_kind_name(norm_kind k);
const char *config_init_kind_name(init_kind k);
const char *config_sched_kind_name(sched_kind k);

/* Reverse lookups; return -1 for an unknown name. config_norm_place_parse also
 * takes "peri" for sandwich (Kim et al. 2025's Peri-LN is x + N(F(N(x))),
 * what normscope calls sandwich); the name printed stays "sandwich". */
int config_norm_place_parse(const char *s);
/* Other names of placements, pairs (alias, name), NULL-ended: "peri",
 * "sandwich" (the --norm row takes them too). */
extern const char *const config_norm_place_aliases[];
int config_norm_kind_parse(const char *s);
int config_init_kind_parse(const char *s);
int config_sched_kind_parse(const char *s);

/* Is the final norm used, given the placement and --final-norm? */
int config_final_norm(const ns_config *c);
/* The number of Post-LN blocks at the bottom under mix. */
int config_mix_k(const ns_config *c);
/* The warmup ramp's length: --warmup, or 100 when it is 0 (warmup turned
 * on mid-run by a key or a script). */
int config_ramp_steps(const ns_config *c);

/* Check cross-field constraints (ranges are checked by the parser).
 * Returns NULL when valid, else a one-line reason (static storage). */
const char *config_check(const ns_config *c);

#endif
