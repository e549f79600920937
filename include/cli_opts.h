/* cli_opts.h - the options the command line fills: the settings that
 * live outside ns_config (files, front-end switches, sweep and plot
 * flags) and which flags the user gave. The settings table (settings.c)
 * names each field's row; the parser (cli.c) fills it; main and the
 * modules it starts read it.
 *
 * Not here: parsing (cli.c), the table (settings.c). Data only.
 */
#ifndef NS_CLI_OPTS_H
#define NS_CLI_OPTS_H

#include "config.h"

/* Shape flags the user gave explicitly (compared against a checkpoint);
 * cli_given answers the same for any flag. */
enum {
    CLI_SET_LAYERS = 1 << 0,
    CLI_SET_DIM = 1 << 1,
    CLI_SET_HEADS = 1 << 2,
    CLI_SET_CONTEXT = 1 << 3,
    CLI_SET_BATCH = 1 << 4,
    CLI_SET_STEPS = 1 << 5,
};

typedef struct {
    ns_config cfg;
    unsigned set; /* CLI_SET_* */
    int headless;
    int ascii, no_color; /* live view: --ascii, --no-color */
    int bars_rel; /* live view: --bars relative */
    int quiet;    /* no progress line */
    int threads;  /* --threads: per run (each --compare run has its own) */
    int on_stall; /* --on-stall: 0 continue, 1 stop (headless exit 4), 2 fix */
    const char *data, *csv, *jsonl, *save, *load, *script, *lesson, *compare;
    const char *follow; /* --follow FILE: show a metrics stream, train nothing */
    const char *check_lesson; /* --check-lesson NAME|FILE: check it whole, run nothing */
    /* sweeps (sweep.c): the SPEC, --sweep-out, --sweep-collect, --jobs
     * (0 = online cores), --list, --list-range A..B, --retry, --yes */
    const char *sweep, *sweep_out, *sweep_collect, *list_range, *retry;
    int jobs, list, yes;
    int per_seed; /* --per-seed: the sweep's table a line per run */
    const char *loss_at; /* --loss-at N[,N...]: results.csv's loss_at_N columns (sweep.c) */
    /* --plot INPUT --out FILE [--kind --size --step --rows --cols --mono --light --log] */
    const char *plot, *out, *kind, *size, *step, *rows, *cols, *vmin, *vmax, *metric, *scale;
    int mono, light, logy;
    float smooth; /* --smooth: the loss's smoothing weight, live and --plot */
    int no_pause; /* --no-pause: a script's pauses are skipped (lessons run through) */
    /* the commands the run applies: --script's and a lesson's, merged
     * (main fills it); NULL = none */
    struct ns_script *script_run;
    unsigned char given[NS_SETTINGS_MAX]; /* by settings row: the user gave the flag */
} cli_opts;

#endif
