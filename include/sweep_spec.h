/* sweep_spec.h - a sweep's SPEC: its axes, their values' one spelling,
 * the grid's runs and their IDs. Pure text and arithmetic (no runs, no
 * files), so a lesson's loader checks a sweep line with it before
 * anything runs. The rest of the sweep (running, results, the live
 * view's source) is sweep.h's.
 */
#ifndef NS_SWEEP_SPEC_H
#define NS_SWEEP_SPEC_H

#include <stddef.h>

enum {
    SWEEP_MAX_AXES = 16,
    SWEEP_MAX_VALUES = 10000,   /* values on one axis */
    SWEEP_ASK_RUNS = 10000,     /* more runs than this need --yes */
    SWEEP_MAX_RUNS = 1000000,   /* never more, --yes or not */
    SWEEP_NAME_MAX = 32,        /* an axis name: a long flag's name */
    SWEEP_VALUE_MAX = 256,      /* one value's text */
    SWEEP_LAST_K = 20,          /* train_loss: mean of the last K steps */
    SWEEP_MAX_LOSS_AT = 16,     /* --loss-at: steps at most */
    SWEEP_LOSS_AT_MAX = 1000000000, /* --loss-at: the largest step (--steps' bound) */
};

typedef struct {
    char name[SWEEP_NAME_MAX]; /* a long flag's name, without "--" */
    int n;                     /* values, >= 1 */
    char **v;                  /* n value texts, as the flag takes them */
} sweep_axis;

/* Axes sorted by name, so a grid and its run IDs do not depend on the
 * order the axes were written in. */
typedef struct {
    int n_axes;
    sweep_axis axis[SWEEP_MAX_AXES];
    /* --loss-at: the steps whose train loss results.csv holds, one
     * loss_at_N column each, strictly increasing (not SPEC's text: a
     * setting of the sweep, part of its results' layout) */
    int n_loss_at;
    long loss_at[SWEEP_MAX_LOSS_AT];
} sweep_spec;

/* Parse SPEC: space-separated axes NAME=ITEM,ITEM,... where an ITEM is a
 * value, an integer range A..B, or a geometric range A..B*F (F > 1, or
 * F written X^Y). Checks syntax only (names and values are the flag
 * parser's business). Returns 0, or -1 with one line starting "--sweep"
 * in err and s left empty. */
int sweep_spec_parse(const char *text, sweep_spec *s, char *err, size_t errlen);
void sweep_spec_free(sweep_spec *s);
/* How a value of an axis is spelled once: integers in decimal, float
 * settings as the shortest %.Pg (P >= 6) that reads back as the same
 * float, anything else as written. */
typedef enum { SWEEP_KIND_TEXT, SWEEP_KIND_INT, SWEEP_KIND_F32 } sweep_kind;
/* Respell every value in its one spelling (kind(name) says how), so that
 * a run's ID depends on its settings, not their spelling: 1e-3 and 0.001
 * are one run. Values the kind cannot read are left as written (the flag
 * parser refuses them). Two spellings of one value on an axis: -1 with one
 * line starting "--sweep" in err (s is kept, the caller frees it). */
int sweep_spec_canon(sweep_spec *s, sweep_kind (*kind)(const char *name), char *err,
                     size_t errlen);
/* Runs in the grid (the product of the axes' sizes), or -1 past
 * SWEEP_MAX_RUNS. */
long sweep_spec_runs(const sweep_spec *s);
/* Run k's value index on every axis (the last axis varies fastest). */
void sweep_spec_run_index(const sweep_spec *s, long k, int idx[SWEEP_MAX_AXES]);
/* A run's ID: 12 hex digits of a hash of its "name=value" pairs, so the
 * same settings get the same ID in any sweep with the same axes. */
void sweep_spec_run_id(const sweep_spec *s, const int idx[SWEEP_MAX_AXES], char id[13]);

/* Parse --loss-at's N[,N...] into s->loss_at: at most SWEEP_MAX_LOSS_AT
 * steps, each 1..SWEEP_LOSS_AT_MAX, strictly increasing; spaces around a
 * step are allowed ("100, 500" is "100,500"). Returns 0, or -1 with one
 * line starting "--loss-at" in err and no step set. */
int sweep_spec_loss_at_parse(const char *text, sweep_spec *s, char *err, size_t errlen);
/* The steps' one spelling, "100,500" ("" for none), which reads back
 * the same. */
void sweep_spec_loss_at_text(const sweep_spec *s, char *buf, size_t n);

/* Run k's CSV, DIR/run-ID.csv. */
void sweep_spec_run_csv(const sweep_spec *s, const char *dir, long k, char *path, size_t n);

#endif
