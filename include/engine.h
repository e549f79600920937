/* engine.h - one training run: model, optimizer, schedule, data and RNG,
 * stepped one update at a time, with the settings that may change between
 * steps and a log of those changes.
 *
 * Deterministic: the same config, data and calls give the same metrics
 * bit for bit, whatever the thread count. The trainer thread of the live
 * view owns an engine; nothing else touches it. A step may split its
 * kernels over the engine's own pool of worker threads
 * (engine_set_threads), which only ever run inside engine calls.
 */
#ifndef NS_ENGINE_H
#define NS_ENGINE_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "data.h"
#include "metrics.h"
#include "settings.h"

typedef struct engine engine;

/* What an event is, said by whoever made it (the engine, or the trainer
 * for its own lines), so that no reader has to tell it from the words. */
typedef enum {
    NS_EV_INFO = 0,     /* start, resume from a file, snapshot limits, scale growth;
                         * the trainer's pause, resume and --steps lines */
    NS_EV_SETTING = 1,  /* a setting or the run's course changed (norm, LR, rewind,
                         * re-init): also a marker on the chart */
    NS_EV_VAL = 2,      /* a validation result (the trainer's) */
    NS_EV_DIVERGED = 3, /* a step was not finite */
    NS_EV_WARNING = 4,  /* a loss or gradient-norm spike; the diagnosis (trainer) */
    NS_EV_SKIPPED = 5,  /* the dynamic loss scaler skipped a step */
    NS_EV_REFUSED = 6,  /* a command that could not be applied */
    NS_EV_NOTE = 7,     /* words of a script, a lesson or a key's note */
    NS_EV_COUNT
} ns_event_kind;

#define NS_EVENT_TEXT 256 /* a finding (DIAG_TEXT) and its run prefix fit in one */
typedef struct {
    long step; /* steps completed when it happened */
    ns_event_kind kind;
    int layer; /* the block it is about (a divergence's first op), or -1 */
    char text[NS_EVENT_TEXT];
} ns_event;

/* Create a run from cfg (validated by the caller) on data (which must
 * outlive the engine). NULL with a one-line reason in err on failure. */
engine *engine_create(const ns_config *cfg, const dataset *data, char *err, size_t errlen);
void engine_free(engine *e);

/* out_change (metrics.h) is measured on the first ENGINE_OC_STEPS steps
 * and at each validation, on a fixed batch of ENGINE_OC_BATCH sequences
 * of the held-out bytes (fewer when --batch is smaller). */
#define ENGINE_OC_STEPS 100
#define ENGINE_OC_BATCH 4

/* One training step; fills out. Returns 0, or 1 when the run diverged: a
 * forward value or the loss was not finite, or the gradients were and no
 * dynamic loss scaling was in force. The update is then skipped and the
 * weights stay as they were; out->fault names the first non-finite op.
 * With dynamic scaling, non-finite gradients skip the step and halve the
 * scale (out->skipped), as GradScaler does; that is not a divergence. */
int engine_step(engine *e, step_metrics *out);

/* Threads for the kernels of each step, 1..POOL_MAX_THREADS (pool.h),
 * counting the caller; a new engine has 1 (no worker threads). The pool
 * is made here, once, never inside a step; its workers block the signals
 * in *block (NULL: none more than the caller's). Returns 0, or -1 when n
 * is out of range or a thread could not be started (the old count
 * stays). */
int engine_set_threads(engine *e, int n, const sigset_t *block);

/* Which build of the kernels every engine runs: "generic" (portable C),
 * "avx2", or NULL / "" for AVX2 where the CPU has it. Both give the same
 * bits. Returns 0, -1 for an unknown name, -2 for avx2 on a CPU without
 * it. Call before any engine steps. engine_kernels names the build. */
int engine_select_kernels(const char *name);
const char *engine_kernels(void);
int engine_threads(const engine *e);

/* Mean validation loss over cfg.val_batches fixed batches. */
float engine_validate(engine *e);

long engine_steps_done(const engine *e);
/* The configuration with the settings now in force. */
const ns_config *engine_config(const engine *e);
float engine_current_lr(const engine *e);
float engine_current_peak(const engine *e);
int engine_warmup_on(const engine *e);
/* The warmup ramp's length in steps (--warmup, or 100 when it was 0). */
int engine_warmup_steps(const engine *e);
/* Add a line to the event log (NS_EV_NOTE: notes of scripts and lessons). */
void engine_note(engine *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Changes between steps; each is logged as an event. */
void engine_set_norm(engine *e, norm_place p);
void engine_set_norm_kind(engine *e, norm_kind k);
void engine_set_final_norm(engine *e, int on); /* -1: by placement */
void engine_set_warmup(engine *e, int on); /* on: a fresh ramp from this step */
/* The ramp's length for the next engine_set_warmup(e, 1): with a constant
 * or cosine schedule only (invsqrt and noam decay by it too); 0, or -1 and
 * nothing changed. */
int engine_set_warmup_steps(engine *e, int n);
void engine_set_lr(engine *e, float peak);
void engine_set_clip(engine *e, float clip); /* 0 = off */
void engine_set_precision(engine *e, numfmt f);
void engine_set_fp32_norms(engine *e, int on);
void engine_set_loss_scale(engine *e, float mode); /* 0 dynamic, < 0 off, > 0 constant */
/* QK-norm on or off (its parameters are kept either way), and the z-loss
 * coefficient (0 = off): from the next forward. A settings row without a
 * hook that sets cfg.qk_norm or cfg.z_loss works as well (the model reads
 * them at each forward); these log the change as a setting event. */
void engine_set_qk_norm(engine *e, int on);
void engine_set_z_loss(engine *e, float z);
/* Any mid-run setting by its settings row: x is the value as
 * settings_get gives it. The row's hook (settings.h: SETH_NORM is
 * engine_set_norm, ...) does what else changes with it; a row without one
 * has its field set. Logged as an event. */
void engine_set_setting(engine *e, const ns_setting *s, double x);
/* The value of the row in the run now: its field, or what its hook keeps
 * (the LR's current peak, whether the warmup ramp is on). */
double engine_setting_value(const engine *e, const ns_setting *s);
/* The same as the run uses it: an auto value resolved (the final norm). */
double engine_setting_shown(const engine *e, const ns_setting *s);

/* Resident bytes of one run of cfg once it has taken cfg->steps steps
 * (0: until stopped): weights, gradients, the bf16/fp16 copy, AdamW's
 * moments, activations, backward scratch and the snapshots held. Each term
 * is one line of the sum (man page, MEMORY); trainer_bytes_needed adds
 * the program's own. */
double engine_bytes_needed(const ns_config *cfg);
/* The machine's physical memory in bytes, 0 when it cannot be told: what a
 * run's need is checked against (a new run in main, a checkpoint's header
 * in engine_load). */
double engine_machine_bytes(void);

/* Snapshots: every cfg.snapshot_every steps the engine copies weights,
 * Adam moments, step, RNG and schedule into a ring of cfg.snapshots; step 0
 * is always taken. engine_snapshot takes one now (replacing the oldest):
 * 0, or -1 when snapshots are off (too big) or memory ran out. */
int engine_snapshot(engine *e);

/* The dynamic loss scaler's rule (GradScaler's, with a floor): after a step
 * whose gradients overflowed, halve the scale and skip the step, or give up
 * (a divergence) once the scale would fall below 1; after 2000 clean steps
 * in a row, double it. */
enum { SCALER_CLEAN = 0, SCALER_SKIPPED = 1, SCALER_GREW = 2, SCALER_GAVE_UP = 3 };
int engine_scaler_update(float *scale, long *good, int overflowed);

/* Back to the newest snapshot before the current step (so calling it again
 * goes further back), bit for bit, keeping the settings now in force.
 * Returns the step it went back to, or -1 if there is none. */
long engine_rewind(engine *e);
/* The newest kept snapshot before step `before`: its step in *step and
 * its step's metrics in *m; 1, or 0 when its metrics are not kept (a
 * loaded run's first), -1 when there is none. */
int engine_snapshot_before(const engine *e, long before, long *step, step_metrics *m);
/* The same to the newest snapshot at or before step `at` (a fix goes back
 * to before what it fixes began). */
long engine_rewind_before(engine *e, long at);
/* Doublings from act_max to limit: log2(limit / act_max), in double (the
 * float quotient overflows to inf for fp32's max over an act max below
 * 1); NaN when act_max is not a number, inf when it is 0. */
float engine_headroom(float limit, float act_max);
/* The metrics of the step the run is at (after a rewind: the snapshot's
 * step's, which the snapshot keeps). 1 and fills out, or 0 when the engine
 * has none for it (step 0, a loaded run before its first step). */
int engine_last_metrics(const engine *e, step_metrics *out);

/* Back to step 0 with fresh weights from the same seed. */
void engine_reinit(engine *e);
/* A copy of src's run as it stands (weights, Adam's moments, step, RNG,
 * schedule, loss scale, settings in force), made to step beside it: the
 * same batches and the same bits from here on. It keeps no snapshots and
 * takes no validations (a fix's twin left alone: trainer_fix.c). NULL
 * with a reason in err when memory runs out. */
engine *engine_clone(const engine *src, char *err, size_t errlen);
/* dst takes src's run as it stands (src a clone of dst or of the same
 * model's shape), keeping its own snapshot ring, validation and step
 * limit; dst's snapshots after step keep_until belong to the abandoned
 * run and are dropped. Logged on dst as an event. */
void engine_copy_run(engine *dst, const engine *src, long keep_until);

/* Events: a ring of the last NS_EVENT_RING; index i is the i-th event of the
 * run (0-based). Returns 0 and fills ev while event i is still kept. */
#define NS_EVENT_RING 256
long engine_event_count(const engine *e);
int engine_event_get(const engine *e, long i, ns_event *ev);

/* Checkpoints (format in man/normscope.1). Save writes a temp file and
 * renames it over path. Load creates a run from the file; the data must be
 * the data given by the caller. Both return 0/NULL with a reason in err. */
int engine_save(const engine *e, const char *path, char *err, size_t errlen);
engine *engine_load(const char *path, const dataset *data, ns_config *cfg_out, char *err,
                    size_t errlen);

/* The diagnosis' state a checkpoint carries (format version 6 on), as
 * bytes the engine never reads (diagnose.h, diag_state_save/_load): set
 * before engine_save (a copy; 0, or -1 out of memory), or the one
 * engine_load read (NULL and *n 0 when none). */
int engine_set_diag_state(engine *e, const void *p, size_t n);
const uint8_t *engine_diag_state(const engine *e, size_t *n);
/* The format version of the checkpoint the run was loaded from (0: a
 * new run). */
unsigned engine_loaded_version(const engine *e);

/* The data a run trains on, as a checkpoint records it (format version 3
 * on): where it came from, its length, and a CRC-32 of its bytes (all of
 * them up to 16 MiB; beyond that, 256 windows of 64 KiB spread evenly, so a
 * save of a huge mapped file stays quick). Two datasets with the same
 * length and print are taken to be the same bytes. */
typedef struct {
    int known;     /* 0: a new run, or a checkpoint older than version 3 */
    int from_file; /* --data FILE; else the built-in corpus */
    uint64_t n;    /* bytes */
    uint32_t print;
    char name[1024]; /* the --data path as given, for messages */
} engine_data_id;
void engine_data_id_of(const dataset *d, engine_data_id *id);
/* What the loaded checkpoint's run trained on (known 0 when the file does
 * not say, and for a run not loaded). */
const engine_data_id *engine_loaded_data(const engine *e);
/* The checkpoint's checksum, CRC-32 (IEEE) of n bytes: for tests that
 * write checkpoints of their own. */
uint32_t engine_crc32(const void *p, size_t n);

/* Continue prompt by n bytes with the current weights (between steps; it
 * reuses the activation buffers). Sampling uses temperature 0.8 from a
 * generator seeded by the run's seed and step, so it never disturbs the
 * training stream and the same step gives the same text. out gets n bytes
 * (not NUL-terminated). */
void engine_sample(engine *e, const char *prompt, int n, uint8_t *out);

/* The loss terms of the latest engine_step's forward (a rewind does not
 * restore them; a loaded run has none until its first step): the mean
 * over the batch's positions of log Z, the logsumexp of the logits; the
 * largest logit; and the z-loss term z_loss * mean (log Z)^2 added to the
 * optimized loss (0 with z_loss off; the step's loss stays the
 * cross-entropy). Returns known: 1 after a step, else 0. */
typedef struct {
    int known;
    float logz_mean, logit_max, zloss;
} engine_loss_terms;
int engine_last_loss_terms(const engine *e, engine_loss_terms *out);

/* For tests: the model's parameters and their count. */
float *engine_params(engine *e, size_t *n);

#endif
