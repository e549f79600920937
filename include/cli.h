/* cli.h - the command line: argv walked against the settings table
 * (settings.h), which drives parsing, range checks and --help, so the
 * three cannot drift apart. */
#ifndef NS_CLI_H
#define NS_CLI_H

#include <stdio.h>

#include "cli_opts.h"
#include "config.h"
#include "settings.h"

/* 1 if the user passed the flag named long_name ("lr", "layers"), else 0. */
int cli_given(const cli_opts *o, const char *long_name);

/* Parse argv. Returns 0 to run, 1 when --help/--version was printed (exit
 * 0), 2 after printing one line naming the bad flag to err (exit 2). */
int cli_parse(cli_opts *o, int argc, char **argv, FILE *out, FILE *err);
void cli_usage(FILE *f);

/* The flags given that do nothing with the settings c in force (a resumed
 * run's: after its flags are applied), from the settings table's "applies"
 * of each row: one warning line each on err, 0; or 2 after one line for a
 * refused one. */
int cli_check_applies(const cli_opts *o, const ns_config *c, FILE *err);
/* The same check, each flag given that does nothing passed to each: its
 * settings row's index, 1 (a warning) or 2 (refused), and the line
 * ("--X V does nothing with --Y W (it applies with ...)"). */
typedef void cli_applies_fn(void *ctx, int row, int verdict, const char *line);
void cli_each_inapplicable(const cli_opts *o, const ns_config *c, cli_applies_fn *each, void *ctx);

/* Apply "SETTING=VALUE" (a flag's long name and value) to c, as --compare
 * does for its twin. 0, or 2 after printing one line to err. */
int cli_apply_setting(ns_config *c, const char *spec, FILE *err);

#endif
