/* command.h - one value for every change a user can make mid-run, whether
 * it comes from a key, a --script line or a lesson; the parser of script
 * files; and the engine half of applying a command.
 *
 * Commands that concern the run's flow (pause, one step, stop) are not the
 * engine's: command_apply returns CMD_FLOW for them and the runtime (the
 * trainer thread, or the headless loop) handles them.
 */
#ifndef NS_COMMAND_H
#define NS_COMMAND_H

#include <stddef.h>

#include "engine.h"

typedef enum {
    CMD_NONE = 0,
    /* engine */
    CMD_SETTING,      /* the settings row `setting`, changed as `how` says (a row
                       * with a command word: norm, lr, warmup, ...) */
    CMD_REINIT,
    CMD_SNAPSHOT,
    CMD_REWIND,       /* to the newest snapshot before now; with a value (CMDV_REAL),
                       * to the newest at or before that step */
    CMD_NOTE,         /* text: a line for the event log */
    CMD_FIX,          /* the diagnosis' first next step (the runtime's: trainer.c) */
    /* flow (runtime) */
    CMD_PAUSE,
    CMD_RESUME,
    CMD_PAUSE_TOGGLE,
    CMD_STEP,         /* one step while paused */
    CMD_STOP,         /* end the run */
    CMD_COUNT
} command_kind;

/* How a command changes its setting (the row's SETL_* allow all but SET). */
typedef enum {
    CMDH_SET = 0, /* to the value */
    CMDH_TOGGLE,  /* between the row's two toggle values (no value) */
    CMDH_CYCLE,   /* to the next of its names (no value) */
    CMDH_SCALE,   /* multiply by the value (a real factor) */
} command_how;

/* A command's value, tagged with its type. */
typedef enum { CMDV_NONE = 0, CMDV_INT, CMDV_REAL } command_vtype;
typedef struct {
    command_vtype type;
    union {
        int i;    /* CMDV_INT: an enum index, 1/0 on/off, -1 auto */
        double x; /* CMDV_REAL: a number, or a factor for CMDH_SCALE */
    } u;
} command_value;

#define NS_CMD_TEXT 96

typedef struct {
    command_kind kind;
    command_how how;
    command_value v;
    int setting;            /* CMD_SETTING: the settings row's index */
    char text[NS_CMD_TEXT]; /* CMD_NOTE; CMD_PAUSE's prompt ("" = none) */
} ns_command;

/* Commands as values: one with no value (flow, reinit, ...); one that
 * changes the settings row s as how says, with x the value (CMDH_SET,
 * tagged an int for the rows of whole values) or the factor (CMDH_SCALE). */
ns_command command_make(command_kind k);
ns_command command_setting(const ns_setting *s, command_how how, double x);
/* The value as a double, whatever its tag (0 without one). */
double command_number(const ns_command *c);
/* The row a setting command changes (NULL for the others). */
const ns_setting *command_row(const ns_command *c);

/* What command_apply did. */
enum { CMD_APPLIED = 0, CMD_FLOW = 1, CMD_FAILED = 2 };

/* Apply a settings command to e (between steps). Flow commands are left to
 * the caller (CMD_FLOW). Everything applied is logged as an engine event. */
int command_apply(engine *e, const ns_command *c);

/* Parse one command ("norm post", "lr x2", "snapshot", ...). A command
 * that sets a setting takes its settings row's command word, the row's
 * values and the words of its mid-run behaviour (toggle, next, xF, off:
 * settings.h). The live view's keys send such text. 0, or -1 with the
 * reason in err. */
int command_parse(const char *s, ns_command *c, char *err, size_t errlen);

/* A script: lines "at N: COMMAND" (after N steps, before step N+1) and
 * "every N: COMMAND" (after every N steps); '#' starts a comment. Under
 * --compare a command may name its run: "at 200: b: lr 1e-3" (twin.h). */
typedef struct {
    long at;    /* >= 0 for "at" */
    long every; /* > 0 for "every" */
    int target; /* 0 both runs (no prefix), 1 "a:", 2 "b:" (a twin_target) */
    ns_command cmd;
} script_entry;

typedef struct ns_script {
    int n;
    script_entry *e;
    long high; /* the most steps done at which the script ran (-1: never) */
} ns_script;

/* Parse a script's text; name is used in messages ("FILE:LINE: reason").
 * 0, or -1 with the reason in err. */
int command_script_parse(const char *text, const char *name, ns_script *s, char *err, size_t errlen);
/* Read and parse a file. */
int command_script_load(const char *path, ns_script *s, char *err, size_t errlen);
void command_script_free(ns_script *s);
/* The commands due when `done` steps are completed, in file order: calls
 * fn for each, with the entry's target. A script speaks only on the run's first pass over a step:
 * after a rewind it stays silent until the run passes where it was, so
 * "at 30: rewind" cannot loop. */
void command_script_due(ns_script *s, long done,
                void (*fn)(void *ctx, const ns_command *c, int target), void *ctx);

#endif
