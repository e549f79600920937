/* twin.h - the rule for a command in a two-run (--compare) view, and the
 * label that says what each run is running now.
 *
 * The rule: a command acts on a TARGET, both runs (the default), run a or
 * run b. Under `both`, a toggle or a cycle computes the new value once,
 * from run a's current value, and sets both runs to it, so two runs that
 * differ in a setting can be made equal but never swapped; a setting
 * given outright ("norm post") is set on both. The LR factor (+, -, "lr
 * x2") scales each run's own peak: a ratio, the runs keep their
 * difference. Under `a` or `b` a command acts on that run only. Rewind,
 * re-init and snapshot act on both runs whatever the target: the two runs
 * share one step count (they are stepped in lockstep), and a note is said
 * once.
 *
 * Not here: the queue and the thread (trainer.c), parsing (command.c).
 */
#ifndef NS_TWIN_H
#define NS_TWIN_H

#include <stddef.h>

#include "command.h"
#include "engine.h"

typedef enum { TWIN_BOTH = 0, TWIN_A = 1, TWIN_B = 2, TWIN_TARGET_COUNT } twin_target;

/* "both", "a", "b" */
const char *twin_target_name(twin_target t);

/* Apply c under the rule above; b = NULL is one run (the target is then
 * ignored). Returns command_apply's result for run a, or for run b when
 * only b was acted on. */
int twin_apply(engine *a, engine *b, const ns_command *c, twin_target t);

/* Whether c under target t changes run `run` (0 = a, 1 = b) of a pair:
 * for the chart's markers and the event log. */
int twin_acts_on(const ns_command *c, twin_target t, int run);

/* One run's settings as a label shows them: the config, and the two
 * things that live in the engine's schedule rather than its config. */
typedef struct {
    const ns_config *cfg;
    int warmup_on;
    float lr_peak;
    /* the step since which the runs' settings have been the same, after
     * they differed (a switch that made a equal to b); 0 = they differ */
    long joined;
    /* what set this run apart before they joined, as its label said it
     * ("norm-kind=layernorm", twin_label_differs); NULL or "": not known */
    const char *was;
} twin_run;

/* Whether a and b differ in any setting a label names. */
int twin_differ(twin_run a, twin_run b);

/* "a: fp32-norms=off  norm=pre layernorm fp16 ... warmup=off lr=0.01":
 * the run's name, the settings in which it differs from `other` (as
 * name=value, the way --compare spells them), then the rest of the
 * mid-run settings. With other.cfg == NULL, no difference is looked for.
 * Runs that no longer differ ("a" and "b" only) still tell themselves
 * apart: the one that changed says what it was until when, "a:
 * norm-kind=layernorm until step 300", the one that did not keeps its
 * words, "b: norm-kind=rmsnorm"; without self.was, "a: as b since step
 * 300". */
void twin_label(const char *name, twin_run self, twin_run other, char *buf, size_t n);

/* The part of a twin_label that says how the run differs ("a:
 * norm-kind=layernorm  pre ..." gives "norm-kind=layernorm"), in out;
 * "" when it names no difference. */
void twin_label_differs(const char *label, char *out, size_t n);

#endif
