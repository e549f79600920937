/* resume.h - the settings given on the command line with --load: those a
 * mid-run command can change apply from the resumed step, as a script
 * line would; the others, when they differ from the checkpoint's, are
 * refused. Nothing given is silently ignored.
 *
 * Not here: the shape flags (main.c compares them), reading the file
 * (engine_load).
 */
#ifndef NS_RESUME_H
#define NS_RESUME_H

#include <stdio.h>

#include "cli_opts.h"
#include "engine.h"

/* e was loaded with its settings in *ckpt (engine_load's cfg_out). Apply
 * o's settings that differ, through command_parse/command_apply, saying
 * each in one line on out (NULL: silent); run settings the checkpoint does
 * not hold (--on-diverge) are copied into *ckpt. 0, or 2 after one line on
 * err naming the flag that cannot change. */
int resume_apply_flags(const cli_opts *o, ns_config *ckpt, engine *e, FILE *out, FILE *err);

/* Does --FLAG given with --load change the resumed run from its step on
 * (a row a mid-run command sets, and --warmup), rather than have to agree
 * with the checkpoint? What normscope(1)'s --load entry lists. */
int resume_changes(const ns_setting *s);

/* The data given (d) against the data the checkpoint says its run trained
 * on: other bytes than a --data file's, because --data was left out, are
 * refused (2, after one line on err); other bytes given with --data, or a
 * built-in corpus that changed, are said in one line and used (0). Silent
 * when they match or the checkpoint does not record its data. */
int resume_check_data(const cli_opts *o, const engine *e, const dataset *d, FILE *err);

#endif
