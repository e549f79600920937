/* cli.h - the command line: argv walked against the settings table
 * (settings.h), which drives parsing, range checks and --help, so the
 * three cannot drift apart. */
#ifndef NS_CLI_H
#define NS_CLI_H

#include <stdio.h>

#include "command.h"
#include "config.h"
#include "settings.h"

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
    int on_stall; /* --on-stall: 0 continue, 1 stop (headless exit 4) */
    const char *data, *csv, *jsonl, *save, *load, *script, *lesson, *compare;
    const char *follow; /* --follow FILE: show a metrics stream, train nothing */
    /* sweeps (sweep.c): the SPEC, --sweep-out, --sweep-collect, --jobs
     * (0 = online cores), --list, --list-range A..B, --retry, --yes */
    const char *sweep, *sweep_out, *sweep_collect, *list_range, *retry;
    int jobs, list, yes;
    /* --plot INPUT --out FILE [--kind --size --step --rows --cols --mono --log] */
    const char *plot, *out, *kind, *size, *step, *rows, *cols;
    int mono, logy;
    int no_pause; /* --no-pause: a script's pauses are skipped (lessons run through) */
    ns_script script_s; /* parsed --script (main fills it) */
    int script_loaded;
    unsigned char given[NS_SETTINGS_MAX]; /* by settings row: the user gave the flag */
} cli_opts;

/* 1 if the user passed the flag named long_name ("lr", "layers"), else 0. */
int cli_given(const cli_opts *o, const char *long_name);

/* Parse argv. Returns 0 to run, 1 when --help/--version was printed (exit
 * 0), 2 after printing one line naming the bad flag to err (exit 2). */
int cli_parse(cli_opts *o, int argc, char **argv, FILE *out, FILE *err);
void cli_usage(FILE *f);
/* Did the command line (or a lesson's flags) give --LONG_NAME? 0 or 1. */
int cli_given(const cli_opts *o, const char *long_name);

/* Apply "SETTING=VALUE" (a flag's long name and value) to c, as --compare
 * does for its twin. 0, or 2 after printing one line to err. */
int cli_apply_setting(ns_config *c, const char *spec, FILE *err);
/* "SETTING=VALUE" with c's value of the setting named in spec: the label
 * of the first run of a --compare pair. */
void cli_setting_label(const ns_config *c, const char *spec, char *buf, size_t len);

#endif
