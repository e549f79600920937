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
    /* settings (engine) */
    CMD_NORM,         /* arg: a norm_place */
    CMD_NORM_TOGGLE,  /* pre <-> post; any other placement -> pre */
    CMD_NORM_CYCLE,   /* the next placement */
    CMD_KIND,         /* arg: a norm_kind */
    CMD_KIND_CYCLE,
    CMD_FINAL_NORM,   /* arg: 1, 0, -1 (by placement) */
    CMD_WARMUP,       /* arg: 1 on, 0 off, -1 toggle */
    CMD_PRECISION,    /* arg: a numfmt, or -1 to cycle fp32 -> bf16 -> fp16 */
    CMD_FP32_NORMS,   /* arg: 1, 0, -1 toggle */
    CMD_LOSS_SCALE,   /* arg: 0 dynamic, < 0 off, > 0 constant; NaN toggles dynamic/off */
    CMD_LR,           /* arg: the new peak LR */
    CMD_LR_SCALE,     /* arg: factor on the peak LR */
    CMD_CLIP,         /* arg: threshold, 0 = off; NaN toggles off <-> 1.0 */
    CMD_REINIT,
    CMD_SNAPSHOT,
    CMD_REWIND,
    CMD_NOTE,         /* text: a line for the event log */
    /* flow (runtime) */
    CMD_PAUSE,
    CMD_RESUME,
    CMD_PAUSE_TOGGLE,
    CMD_STEP,         /* one step while paused */
    CMD_STOP,         /* end the run */
    CMD_COUNT
} command_kind;

#define NS_CMD_TEXT 96

typedef struct {
    command_kind kind;
    double arg;
    char text[NS_CMD_TEXT]; /* CMD_NOTE only */
} ns_command;

/* What command_apply did. */
enum { CMD_APPLIED = 0, CMD_FLOW = 1, CMD_FAILED = 2 };

/* Apply a settings command to e (between steps). Flow commands are left to
 * the caller (CMD_FLOW). Everything applied is logged as an engine event. */
int command_apply(engine *e, const ns_command *c);

/* Parse one command ("norm post", "lr x2", "snapshot", ...). 0, or -1 with
 * the reason in err. */
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

typedef struct {
    int n;
    script_entry *e;
    long high; /* the most steps done at which the script ran (-1: never) */
} ns_script;

/* Parse a script's text; name is used in messages ("FILE:LINE: reason").
 * 0, or -1 with the reason in err. */
int script_parse(const char *text, const char *name, ns_script *s, char *err, size_t errlen);
/* Read and parse a file. */
int script_load(const char *path, ns_script *s, char *err, size_t errlen);
void script_free(ns_script *s);
/* The commands due when `done` steps are completed, in file order: calls
 * fn for each, with the entry's target. A script speaks only on the run's first pass over a step:
 * after a rewind it stays silent until the run passes where it was, so
 * "at 30: rewind" cannot loop. */
void script_due(ns_script *s, long done,
                void (*fn)(void *ctx, const ns_command *c, int target), void *ctx);

#endif
