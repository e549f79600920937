/* sweep.h - grids of headless runs: the SPEC parser, the run IDs, and
 * --sweep / --list / --sweep-collect.
 *
 * A sweep runs each cell of the grid as a child process of this same
 * binary (--headless --threads 1), so a run's numbers are those of the same
 * settings run alone, and a crash of one run stays in that run. Settings
 * are checked by the command line's own parser (cli_parse), never here.
 * Not here: training (main.c, engine.c), the flag table (cli.c).
 */
#ifndef NS_SWEEP_H
#define NS_SWEEP_H

#include <stddef.h>

#include "cli.h"

enum {
    SWEEP_MAX_AXES = 16,
    SWEEP_MAX_VALUES = 10000,   /* values on one axis */
    SWEEP_ASK_RUNS = 10000,     /* more runs than this need --yes */
    SWEEP_MAX_RUNS = 1000000,   /* never more, --yes or not */
    SWEEP_NAME_MAX = 32,        /* an axis name: a long flag's name */
    SWEEP_VALUE_MAX = 256,      /* one value's text */
    SWEEP_LAST_K = 20,          /* train_loss: mean of the last K steps */
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
} sweep_spec;

/* Parse SPEC: space-separated axes NAME=ITEM,ITEM,... where an ITEM is a
 * value, an integer range A..B, or a geometric range A..B*F (F > 1, or
 * F written X^Y). Checks syntax only (names and values are the flag
 * parser's business). Returns 0, or -1 with one line starting "--sweep"
 * in err and s left empty. */
int sweep_spec_parse(const char *text, sweep_spec *s, char *err, size_t errlen);
void sweep_spec_free(sweep_spec *s);
/* Runs in the grid (the product of the axes' sizes), or -1 past
 * SWEEP_MAX_RUNS. */
long sweep_spec_runs(const sweep_spec *s);
/* Run k's value index on every axis (the last axis varies fastest). */
void sweep_run_index(const sweep_spec *s, long k, int idx[SWEEP_MAX_AXES]);
/* A run's ID: 12 hex digits of a hash of its "name=value" pairs, so the
 * same settings get the same ID in any sweep with the same axes. */
void sweep_run_id(const sweep_spec *s, const int idx[SWEEP_MAX_AXES], char id[13]);

/* Is any sweep flag given (--sweep, --sweep-collect, --sweep-out, --jobs,
 * --list, --yes)? */
int sweep_requested(const cli_opts *o);
/* Run the sweep, --list or --sweep-collect that o asks for; argv is the
 * whole command line (the flags outside SPEC are common to every run).
 * Returns the exit status: 0, 1 a run failed or an output could not be
 * written, 2 bad input (nothing written), 130 interrupted. */
int sweep_main(const cli_opts *o, int argc, char **argv);

#endif
