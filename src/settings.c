/* settings.c - the table of every flag and setting, and the loops over it:
 * defaults, value parsing with range errors, --help, value spelling and
 * the range checks of loaded values. It is not the command line's driver
 * (cli.c walks argv), the command parser (command.c) or the checkpoint
 * writer (engine.c): those call in here for every row. */
#include "settings.h"

#include "cli_opts.h"
#include "pool.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A row's home and the offset of its field; its value names and their
 * count. */
#define CFG(f) .home = SET_IN_CFG, .off = offsetof(ns_config, f)
#define OPT(f) .home = SET_IN_OPTS, .off = offsetof(cli_opts, f)
#define NOWHERE .home = SET_IN_NONE
#define NAMES(a) .names = a, .n_names = (int)(sizeof a / sizeof a[0])

/* --on-stall's values, index = cli_opts.on_stall */
static const char *const on_stall_names[] = {"continue", "stop", "fix"};
/* A placement as the status line says it, index = norm_place */
static const char *const place_words[] = {
    "Post-LN", "Pre-LN", "Sandwich-LN", "DeepNorm", "ReZero", "no norm", "Mix-LN", "Res-Post-LN"};
_Static_assert(sizeof place_words / sizeof place_words[0] == NORM_PLACE_COUNT,
               "a status word for every placement");
/* The live view's gradient bars (cli_opts.bars_rel is the index). */
static const char *const bars_names[] = {"absolute", "relative"};

/* Where a row's flag does something (setting_applies). Most are warnings:
 * the deciding setting can change mid-run (keys f, k; a script), and a
 * sweep may cross them on purpose. */
static int in_low_precision(const ns_config *c, const void *o)
{
    (void)o;
    return c->precision != FMT_FP32;
}
static int with_dyt(const ns_config *c, const void *o)
{
    (void)o;
    return c->norm_kind == NORMK_DYT;
}
/* noam's peak is d^-0.5 w^-0.5; a resumed run's --lr is a mid-run change
 * of the peak, which noam takes as any schedule does */
static int lr_in_force(const ns_config *c, const void *o)
{
    return c->schedule != SCHED_NOAM || ((const cli_opts *)o)->load;
}
/* headless, nothing can resume a paused run: it stops, as stop does */
static int pause_resumable(const ns_config *c, const void *o)
{
    return c->on_div != ONDIV_PAUSE || !((const cli_opts *)o)->headless;
}
#define IN_LOW_PRECISION .applies = {.holds = in_low_precision, .under = "precision", \
                                     .when = "bf16 or fp16, also when "\
                                     "switched to mid-run"}

/* Order is --help's. ckpt is the field's place in the checkpoint header:
 * version 1 holds fields 1..32, version 2 adds 33, and a new field takes
 * the next number. */
static const ns_setting table[] = {
    {.name = "layers", .short_name = 'L', .type = SET_INT, .arg = "N", .lo = 1, .hi = 64, .def = 6,
     .help = "Transformer blocks", CFG(n_layer), .ckpt = 1},
    {.name = "dim", .short_name = 'd', .type = SET_INT, .arg = "N", .lo = 16, .hi = 1024, .def = 64,
     .help = "model width, divisible by --heads", CFG(dim), .ckpt = 2},
    {.name = "heads", .short_name = 'H', .type = SET_INT, .arg = "N", .lo = 1, .hi = 1024, .def = 4,
     .help = "attention heads, at most --dim", CFG(n_head), .ckpt = 3},
    {.name = "context", .short_name = 'T', .type = SET_INT, .arg = "N", .lo = 8, .hi = 1024,
     .def = 64, .help = "context length in bytes", CFG(context), .ckpt = 4},
    {.name = "batch", .short_name = 'B', .type = SET_INT, .arg = "N", .lo = 1, .hi = 512, .def = 16,
     .help = "sequences per step", CFG(batch), .ckpt = 5},
    {.name = "norm", .type = SET_ENUM, NAMES(config_norm_place_names), .def = NORM_PRE,
     .aliases = config_norm_place_aliases,
     .help = "norm placement: post x=N(x+F(x)), pre x=x+F(N(x)), ... (peri: sandwich)",
     .flags = SETF_COMPARE,
     .cmd = "norm", CFG(norm), .ckpt = 6, .step_col = 6, .live = SETL_TOGGLE | SETL_CYCLE,
     .toggle = {NORM_PRE, NORM_POST}, .hook = SETH_NORM, .mark = {.names = 1},
     .status = {.words = place_words},
     .keys = {{'p', 0, "toggle", "Pre-LN / Post-LN placement (weights untouched)"},
              {'P', 0, "next", "next placement, in --norm's order (post ... res-post)"}}},
    {.name = "norm-kind", .type = SET_ENUM, NAMES(config_norm_kind_names), .def = NORMK_LAYERNORM,
     .help = "normalization", .flags = SETF_COMPARE, .cmd = "kind", CFG(norm_kind), .ckpt = 7,
     .step_col = 7, .live = SETL_CYCLE, .hook = SETH_NORM_KIND, .mark = {.names = 1},
     .keys = {{'k', 0, "next", "next norm kind: layernorm rmsnorm dyt"}}},
    {.name = "eps", .type = SET_REAL, .arg = "X", .lo = 1e-12, .hi = 1, .def = 1e-5,
     .help = "norm epsilon", .flags = SETF_COMPARE, CFG(eps), .ckpt = 8},
    {.name = "final-norm", .type = SET_AUTO, .def = -1,
     .help = "norm before the head; auto = on for pre, sandwich, mix, res-post",
     .flags = SETF_COMPARE,
     .cmd = "final-norm", CFG(final_norm), .ckpt = 9, .hook = SETH_FINAL_NORM,
     .mark = {.zero = "final off", .one = "final on"}},
    {.name = "mix-k", .type = SET_INT, .arg = "N", .hi = 64, .def = -1, .def_text = "L/4",
     .help = "Post-LN blocks at the bottom under --norm mix", .flags = SETF_COMPARE, CFG(mix_k),
     .ckpt = 10},
    {.name = "dyt-alpha", .type = SET_REAL, .arg = "X", .lo = 1e-6, .hi = 100, .def = 0.5,
     .help = "initial a of DyT norms", .flags = SETF_COMPARE, CFG(dyt_alpha), .ckpt = 11,
     .applies = {.holds = with_dyt, .under = "norm-kind",
                 .when = "dyt, also when switched to mid-run"}},
    {.name = "ln-gamma-init", .type = SET_REAL, .arg = "X", .lo = -100, .hi = 100, .def = 1,
     .help = "initial norm gains", .flags = SETF_COMPARE, CFG(ln_gamma_init), .ckpt = 12,
     .step_col = 14},
    {.name = "ln-beta-init", .type = SET_REAL, .arg = "X", .lo = -100, .hi = 100,
     .help = "initial norm biases", .flags = SETF_COMPARE, CFG(ln_beta_init), .ckpt = 13},
    {.name = "post-init-scale", .type = SET_PRESENCE,
     .help = "scale block output weights by 1/sqrt(2L) at init", CFG(post_init_scale), .ckpt = 14},
    {.name = "init", .type = SET_ENUM, NAMES(config_init_kind_names), .def = INIT_XAVIER,
     .help = "block weights: uniform Glorot, or normal(--init-std) as GPT-2", .flags = SETF_COMPARE,
     CFG(init), .ckpt = 20},
    {.name = "init-std", .type = SET_REAL, .arg = "X", .lo = 1e-6, .hi = 10, .def = 0.02,
     .help = "std of normal init and of the embeddings", .flags = SETF_COMPARE, CFG(init_std),
     .ckpt = 21},
    {.name = "lr", .type = SET_REAL, .arg = "X", .lo = 1e-9, .hi = 10, .def = 1e-3,
     .help = "peak learning rate; noam sets its own", .flags = SETF_COMPARE, .cmd = "lr",
     CFG(lr), .ckpt = 22,
     .applies = {.holds = lr_in_force, .under = "schedule",
                 .when = "constant, cosine or invsqrt; noam's peak is "
                 "d^-0.5*warmup^-0.5"},
     .live = SETL_SCALE | SETL_UNBOUNDED | SETL_REMOTE, .hook = SETH_LR,
     .mark = {.fmt = "lr %.0e"},
     .keys = {{'+', '=', "x2", "peak learning rate x2 / /2"}, {'-', '_', "x0.5", NULL}}},
    {.name = "lr-layer-decay", .type = SET_REAL, .arg = "X", .lo = 0.1, .hi = 10, .def = 1,
     .help = "peak LR of block i of L times X^(L-1-i), embeddings X^L, final norm and head 1; 1 = "
         "off", .flags = SETF_COMPARE, .cmd = "lr-layer-decay", CFG(lr_layer_decay), .ckpt = 33},
    {.name = "betas", .type = SET_BETAS, .arg = "B1,B2", .hi = 0.999999, .def = 0.9, .def2 = 0.98,
     .help = "AdamW betas", .flags = SETF_COMPARE, CFG(beta1), .ckpt = 23},
    {.name = "adam-eps", .type = SET_REAL, .arg = "X", .lo = 1e-30, .hi = 1, .def = 1e-8,
     .help = "AdamW epsilon", .flags = SETF_COMPARE, CFG(adam_eps), .ckpt = 24},
    {.name = "weight-decay", .type = SET_REAL, .arg = "X", .hi = 10,
     .help = "decoupled weight decay on matrices and embeddings", .flags = SETF_COMPARE,
     CFG(weight_decay), .ckpt = 25},
    {.name = "clip", .type = SET_REAL, .arg = "X", .hi = 1e6,
     .help = "clip the global gradient norm to X, 0 = off", .flags = SETF_COMPARE, .cmd = "clip",
     CFG(clip), .ckpt = 26, .step_col = 9, .live = SETL_TOGGLE | SETL_OFF | SETL_UNBOUNDED,
     .toggle = {0, 1}, .hook = SETH_CLIP, .mark = {.zero = "no clip", .fmt = "clip %g"},
     .status = {.zero = "clip off", .fmt = "clip %g"},
     .keys = {{'c', 0, "toggle", "gradient clipping at 1.0 on / off"}}},
    {.name = "warmup", .type = SET_INT, .arg = "N", .hi = 1e7, .def = 100,
     .help = "linear LR warmup steps, 0 = none", .flags = SETF_COMPARE, CFG(warmup), .ckpt = 27},
    /* the ramp itself, on or off mid-run (a key, a script): not a flag; a
     * fresh ramp of --warmup steps, or 100 when --warmup is 0 */
    {.name = "warmup-ramp", .type = SET_ONOFF, .help = "LR warmup on (a fresh ramp) or off",
     .flags = SETF_NOFLAG, .cmd = "warmup", NOWHERE, .step_col = 8, .column = "warmup",
     .live = SETL_TOGGLE, .toggle = {1, 0},
     .hook = SETH_WARMUP, .mark = {.zero = "no warmup", .one = "warmup"},
     .status = {.zero = "warmup off", .one = "warmup on"},
     .keys = {{'w', 0, "toggle", "LR warmup on (a fresh ramp from now) / off"}}},
    {.name = "schedule", .type = SET_ENUM, NAMES(config_sched_kind_names), .def = SCHED_CONSTANT,
     .help = "LR after warmup; noam = d^-0.5*min(s^-0.5, s*w^-1.5)", .flags = SETF_COMPARE,
     CFG(schedule), .ckpt = 28},
    {.name = "steps", .type = SET_LONG, .arg = "N", .hi = 1e9, .def_text = "1000 headless, 0 live",
     .help = "steps to train; 0 = until stopped", .flags = SETF_FOLLOW, CFG(steps), .ckpt = 29},
    {.name = "precision", .type = SET_ENUM, NAMES(numfmt_names), .def = FMT_FP32,
     .help = "arithmetic format, emulated exactly; fp32 master weights", .flags = SETF_COMPARE,
     .cmd = "precision", CFG(precision), .ckpt = 15, .step_col = 10, .live = SETL_CYCLE,
     .hook = SETH_PRECISION, .mark = {.names = 1},
     .keys = {{'f', 0, "next", "next precision: fp32 bf16 fp16"}}},
    {.name = "fp32-norms", .type = SET_ONOFF, .def = 1,
     .help = "bf16/fp16: norms, softmax and loss in fp32 (on, as autocast) or in the format",
     .flags = SETF_COMPARE, .cmd = "fp32-norms", CFG(fp32_norms), .ckpt = 16, .step_col = 11,
     .live = SETL_TOGGLE, .toggle = {1, 0}, .hook = SETH_FP32_NORMS,
     .mark = {.zero = "low norms", .one = "fp32 norms"},
     .keys = {{'i', 0, "toggle", "norms, softmax and loss in fp32 / in the low format"}},
     IN_LOW_PRECISION},
    {.name = "loss-scale", .type = SET_LOSS_SCALE, .arg = "dynamic|off|X", .lo = 1e-30, .hi = 1e30,
     .help = "loss scaling in bf16/fp16: GradScaler rule from 65536, none, or X",
     .flags = SETF_COMPARE, .cmd = "loss-scale", CFG(loss_scale), .ckpt = 17,
     .live = SETL_TOGGLE | SETL_UNBOUNDED, .toggle = {0, -1}, .hook = SETH_LOSS_SCALE,
     .mark = {.zero = "scale dyn", .neg = "scale off", .fmt = "scale %g"},
     .keys = {{'l', 0, "toggle", "loss scaling dynamic / off (bf16, fp16)"}},
     IN_LOW_PRECISION},
    /* QK-norm: Dehghani et al. 2023 (ViT-22B), Wortsman et al. 2023; OLMo 2, Gemma 3 */
    {.name = "qk-norm", .type = SET_ONOFF, .def = 0,
     .help = "a norm of --norm-kind on each head's queries and keys before their dot product",
     .flags = SETF_COMPARE, .cmd = "qk-norm", CFG(qk_norm), .ckpt = 34, .step_col = 15,
     .live = SETL_TOGGLE, .toggle = {0, 1}, .mark = {.zero = "no qk-norm", .one = "qk-norm"},
     .keys = {{'Q', 0, "toggle", "QK-norm on / off: each head's queries and keys normalized"}}},
    /* z-loss: Chowdhery et al. 2022 (PaLM), 1e-4 there and in Wortsman et al. 2023 */
    {.name = "z-loss", .type = SET_REAL, .arg = "X", .hi = 1, .def = 0,
     .help = "add X mean(log Z)^2 of the output softmax to the optimized loss (the loss column "
         "stays the cross-entropy), 0 = off", .flags = SETF_COMPARE, .cmd = "z-loss",
     CFG(z_loss), .ckpt = 35, .step_col = 16, .live = SETL_TOGGLE | SETL_OFF,
     .toggle = {0, 1e-4}, .mark = {.zero = "no z-loss", .fmt = "z-loss %g"},
     .keys = {{'Z', 0, "toggle", "z-loss 1e-4 / off, on the output's log Z (PaLM)"}}},
    {.name = "on-diverge", .type = SET_ENUM, NAMES(config_on_diverge_names), .def = ONDIV_DEFAULT,
     .def_text = "pause live, stop headless: exit 3",
     .help = "on a non-finite loss or gradient, or a finite blow-up; fix: apply the diagnosis' "
             "fixes from a healthy snapshot, checked 150 steps later (3 at most, then exit 3)",
     CFG(on_div), .applies = {.holds = pause_resumable, .under = "headless",
                              .when = "the live view; headless, a "
                              "divergence stops the run as stop does: exit 3"}},
    {.name = "on-stall", .type = SET_ENUM, NAMES(on_stall_names), .def_text = "continue",
     .help = "on a stall (see DIAGNOSIS in the man page): go on, stop (exit 4), or apply the "
             "diagnosis' fixes, checked as --on-diverge fix's", OPT(on_stall)},
    {.name = "snapshot-every", .type = SET_INT, .arg = "N", .hi = 1e9, .def = 50,
     .help = "keep an in-memory snapshot every N steps, 0 = none", CFG(snapshot_every), .ckpt = 18},
    {.name = "snapshots", .type = SET_INT, .arg = "K", .lo = 1, .hi = 1000, .def = 8,
     .help = "snapshots kept for rewinding", CFG(snapshots), .ckpt = 19},
    {.name = "val-every", .type = SET_INT, .arg = "N", .hi = 1e9, .def = 50,
     .help = "validation loss every N steps, 0 = never", CFG(val_every), .ckpt = 30},
    {.name = "val-batches", .type = SET_INT, .arg = "N", .lo = 1, .hi = 1000, .def = 4,
     .help = "batches per validation", CFG(val_batches), .ckpt = 31},
    {.name = "seed", .type = SET_U64, .arg = "N", .def = 1337,
     .help = "seed of weights and batches", .flags = SETF_COMPARE, CFG(seed), .ckpt = 32},
    {.name = "data", .type = SET_PATH, .arg = "FILE", .def_text = "the built-in corpus",
     .help = "train on this file's bytes", .flags = SETF_FILE, OPT(data)},
    {.name = "lesson", .type = SET_PATH, .arg = "NAME|FILE|list",
     .help = "run a classroom lesson (its settings, script and notes): a built-in NAME, or a "
             "FILE (a path with a '/', or ending in .lesson); list names the built-in ones",
     .flags = SETF_FILE, OPT(lesson)},
    {.name = "check-lesson", .type = SET_PATH, .arg = "NAME|FILE",
     .help = "check a lesson whole (keys, flags, compare, script lines, conditions) and exit, "
             "running nothing: 'FILE:LINE: what' and exit 2 on the first error",
     .flags = SETF_FILE, OPT(check_lesson)},
    {.name = "compare", .type = SET_ASSIGN, .arg = "SETTING=VALUE",
     .help = "train a twin run in lockstep that differs in one setting, e.g. norm=post",
     OPT(compare)},
    {.name = "follow", .type = SET_PATH, .arg = "FILE",
     .help = "show a metrics stream (a PyTorch run's probe, a --jsonl file) instead of training",
     .flags = SETF_FOLLOW | SETF_FILE, OPT(follow)},
    {.name = "script", .type = SET_PATH, .arg = "FILE",
     .help = "apply commands at set steps: lines 'at N: CMD' or 'every N: CMD'",
     .flags = SETF_FILE, OPT(script)},
    {.name = "save", .type = SET_PATH, .arg = "FILE",
     .help = "write a checkpoint at the end (atomically); diverged: the last good snapshot",
     .flags = SETF_FILE, OPT(save)},
    {.name = "load", .type = SET_PATH, .arg = "FILE",
     .help = "resume from a checkpoint (its shape and settings)", .flags = SETF_FILE, OPT(load)},
    {.name = "threads", .type = SET_INT, .arg = "N", .lo = 1, .hi = POOL_MAX_THREADS,
     .def_text = "online cores",
     .help = "threads of the step (a --compare twin shares them); same results", OPT(threads)},
    {.name = "sweep", .type = SET_PATH, .arg = "SPEC",
     .help = "run a grid of headless runs, e.g. 'norm=post,pre layers=2,6 seed=1..3', shown live "
         "on a terminal unless --headless (see SWEEPS; keys: arrows Enter Esc Tab PgUp PgDn x r c t "
         "? q)", OPT(sweep)},
    {.name = "sweep-out", .type = SET_PATH, .arg = "DIR", .def_text = "sweep-YYYYmmdd-HHMMSS",
     .help = "the sweep's directory: run CSVs, results.csv", .flags = SETF_FILE, OPT(sweep_out)},
    {.name = "jobs", .type = SET_INT, .arg = "N", .lo = 1, .hi = 1024, .def_text = "online cores",
     .help = "sweep runs at once", OPT(jobs)},
    {.name = "list", .type = SET_PRESENCE,
     .help = "with --sweep: print one command line per run, run none; with --sweep-collect: "
             "those of the runs not complete",
     OPT(list)},
    {.name = "list-range", .type = SET_PATH, .arg = "A..B", .def_text = "all",
     .help = "with --list: only its lines A to B (1-based), e.g. to fit a job array's size limit",
     OPT(list_range)},
    {.name = "sweep-collect", .type = SET_PATH, .arg = "DIR",
     .help = "build DIR/results.csv and the table from the run CSVs in DIR; exit 1 unless every "
             "run is complete",
     .flags = SETF_FILE, OPT(sweep_collect)},
    {.name = "retry", .type = SET_PATH, .arg = "failed",
     .help = "with --sweep: run again the runs results.csv records as failed, killed or corrupt",
     OPT(retry)},
    {.name = "yes", .type = SET_PRESENCE, .help = "allow a sweep of more than 10000 runs",
     OPT(yes)},
    {.name = "per-seed", .type = SET_PRESENCE,
     .help = "with --sweep or --sweep-collect: the table has a line per run (its seed a column), "
             "not per cell",
     OPT(per_seed)},
    {.name = "loss-at", .type = SET_PATH, .arg = "N[,N...]",
     .help = "with --sweep, --list or --sweep-collect: results.csv and the table hold the train "
             "loss at these steps (at most 16, strictly increasing), a loss_at_N column each",
     OPT(loss_at)},
    {.name = "headless", .type = SET_PRESENCE, .help = "train without the terminal UI",
     .flags = SETF_FOLLOW, OPT(headless)},
    {.name = "ascii", .type = SET_PRESENCE,
     .help = "live view in plain ASCII: no braille or block glyphs", .flags = SETF_FOLLOW,
     OPT(ascii)},
    {.name = "no-color", .type = SET_PRESENCE,
     .help = "live view without colors (as NO_COLOR=1 does)", .flags = SETF_FOLLOW,
     OPT(no_color)},
    {.name = "bars", .type = SET_ENUM, NAMES(bars_names), .def_text = "absolute",
     .help = "gradient bars on 1e-5..1e+2, or each run's own top decade (key v)",
     .flags = SETF_FOLLOW, OPT(bars_rel)},
    {.name = "csv", .type = SET_PATH, .arg = "FILE",
     .help = "write one CSV row of metrics per step (- = stdout)", .flags = SETF_FOLLOW | SETF_FILE,
     OPT(csv)},
    {.name = "jsonl", .type = SET_PATH, .arg = "FILE",
     .help = "write one JSON object of metrics per step (- = stdout)", .flags = SETF_FILE,
     OPT(jsonl)},
    {.name = "no-pause", .type = SET_PRESENCE,
     .help = "run a lesson's or --script's pauses straight through (their prompts are logged)",
     OPT(no_pause)},
    {.name = "plot", .type = SET_PATH, .arg = "INPUT",
     .help = "draw an SVG figure from a run's --csv/--jsonl (- = stdin) or a sweep's DIR and "
         "exit; needs --out", .flags = SETF_FILE, OPT(plot)},
    {.name = "out", .type = SET_PATH, .arg = "FILE.svg",
     .help = "where --plot writes its figure (atomically)", .flags = SETF_PLOT | SETF_FILE,
     OPT(out)},
    {.name = "kind", .type = SET_PATH,
     .arg = "loss|layers|profile|heatmap|headroom|overflow|series|change|map",
     .def_text = "loss", .help = "the --plot figure", .flags = SETF_PLOT, OPT(kind)},
    {.name = "size", .type = SET_PATH, .arg = "WxH", .def_text = "1600x900",
     .help = "--plot figure size in pixels", .flags = SETF_PLOT, OPT(size)},
    {.name = "step", .type = SET_PATH, .arg = "N[,N...]",
     .help = "--plot steps: layers at N (default last), profile lines at each (up to 8)",
     .flags = SETF_PLOT, OPT(step)},
    {.name = "rows", .type = SET_PATH, .arg = "AXIS",
     .help = "--kind map: the sweep axis drawn as rows (default: the one with the most values; "
             "seed: each run a cell)",
     .flags = SETF_PLOT, OPT(rows)},
    {.name = "cols", .type = SET_PATH, .arg = "AXIS",
     .help = "--kind map: the axis drawn as columns (default: the next most values)",
     .flags = SETF_PLOT, OPT(cols)},
    {.name = "metric", .type = SET_PATH, .arg = "NAME",
     .def_text = "loss",
     .help = "--kind series: the per-layer column drawn (required: any l<i>_ column's name, "
             "act_max, update_ratio, ...); --kind map: what colors a cell "
             "(loss|best_val|update_ratio_end|stalled): the final loss, the best validation loss, "
             "the update ratio at the last step, or the share of its runs that stalled",
     .flags = SETF_PLOT, OPT(metric)},
    {.name = "scale", .type = SET_PATH, .arg = "binned|continuous", .def_text = "binned",
     .help = "--kind map: the color scale in 9 bins, or a smooth gradient giving each cell its "
             "exact value's color",
     .flags = SETF_PLOT, OPT(scale)},
    {.name = "vmin", .type = SET_PATH, .arg = "X",
     .help = "--kind map: the value at the color scale's low end (default: the best cell's; "
             "0 for --metric stalled)",
     .flags = SETF_PLOT, OPT(vmin)},
    {.name = "vmax", .type = SET_PATH, .arg = "X",
     .help = "--kind map: the value at its high end (default: the worst trained cell's; 1 for "
             "--metric stalled); with --vmin, one scale for maps to compare",
     .flags = SETF_PLOT, OPT(vmax)},
    {.name = "mono", .type = SET_PRESENCE,
     .help = "--plot in black and white: dashes and marker shapes", .flags = SETF_PLOT, OPT(mono)},
    {.name = "light", .type = SET_PRESENCE,
     .help = "colours for a white background: the live view's (a projector, a light "
             "theme; key t switches), --plot's for print (not with --mono)",
     .flags = SETF_FOLLOW, OPT(light)},
    {.name = "log", .type = SET_PRESENCE, .help = "--plot the loss on a log axis",
     .flags = SETF_PLOT, OPT(logy)},
    {.name = "smooth", .type = SET_REAL, .arg = "W", .lo = 0, .hi = 0.999, .def = 0.9,
     .help = "the loss's smoothing weight, live and in --plot, as TensorBoard's (0: none)",
     .flags = SETF_FOLLOW, OPT(smooth)},
    {.name = "quiet", .short_name = 'q', .type = SET_PRESENCE,
     .help = "no progress line or summary on stderr", .flags = SETF_FOLLOW, OPT(quiet)},
    {.name = "help", .short_name = 'h', .type = SET_ACTION, .help = "show this help and exit",
     NOWHERE},
    {.name = "version", .short_name = 'V', .type = SET_ACTION, .help = "print the version and exit",
     NOWHERE},
};
enum { N_ROWS = sizeof table / sizeof table[0] };
/* SET_BETAS stores two floats: beta1, then beta2 right after it */
_Static_assert(offsetof(ns_config, beta2) == offsetof(ns_config, beta1) + sizeof(float),
               "beta2 must follow beta1");
_Static_assert(N_ROWS <= NS_SETTINGS_MAX, "raise NS_SETTINGS_MAX");

int settings_count(void) { return N_ROWS; }
const ns_setting *settings_row(int i) { return i >= 0 && i < N_ROWS ? &table[i] : NULL; }
int settings_index(const ns_setting *s) { return (int)(s - table); }

/* Flags are looked up by name; a row that is no flag is found by its
 * command word only. */
const ns_setting *settings_find(const char *name, size_t len)
{
    for (int i = 0; i < N_ROWS; i++)
        if (!(table[i].flags & SETF_NOFLAG) && strlen(table[i].name) == len &&
            !strncmp(table[i].name, name, len))
            return &table[i];
    return NULL;
}

const ns_setting *settings_find_short(char c)
{
    for (int i = 0; c && i < N_ROWS; i++)
        if (table[i].short_name == c)
            return &table[i];
    return NULL;
}

const ns_setting *settings_find_cmd(const char *word)
{
    for (int i = 0; i < N_ROWS; i++)
        if (table[i].cmd && !strcmp(table[i].cmd, word))
            return &table[i];
    return NULL;
}

void settings_column(const ns_setting *s, char *buf, size_t len)
{
    snprintf(buf, len, "%s", s->column ? s->column : s->name);
    for (char *p = buf; *p; p++)
        *p = *p == '-' ? '_' : *p;
}

const ns_setting *settings_of_column(const char *col)
{
    char name[64];
    for (int i = 0; i < N_ROWS; i++) {
        if (!table[i].step_col)
            continue;
        settings_column(&table[i], name, sizeof name);
        if (!strcmp(name, col))
            return &table[i];
    }
    return NULL;
}

const ns_setting *settings_find_hook(setting_hook h)
{
    for (int i = 0; h != SETH_NONE && i < N_ROWS; i++)
        if (table[i].hook == h)
            return &table[i];
    return NULL;
}

const ns_setting *settings_find_key(int key, const setting_key **k)
{
    for (int i = 0; key && i < N_ROWS; i++)
        for (int j = 0; j < SET_KEYS; j++)
            if (table[i].keys[j].key == key || table[i].keys[j].alt == key) {
                if (k)
                    *k = &table[i].keys[j];
                return &table[i];
            }
    return NULL;
}

/* ---- raw access -------------------------------------------------------- */

static void *field(const ns_setting *s, ns_config *c, void *opts)
{
    if (s->home == SET_IN_CFG && c)
        return (char *)c + s->off;
    if (s->home == SET_IN_OPTS && opts)
        return (char *)opts + s->off;
    return NULL;
}

void *settings_field(const ns_setting *s, ns_config *c) { return field(s, c, NULL); }

static int is_int_type(setting_type t)
{
    return t == SET_INT || t == SET_ENUM || t == SET_ONOFF || t == SET_AUTO || t == SET_PRESENCE;
}

double settings_get(const ns_setting *s, const ns_config *c)
{
    const void *p = field(s, (ns_config *)c, NULL);
    if (!p)
        return 0;
    if (is_int_type(s->type))
        return *(const int *)p;
    if (s->type == SET_LONG)
        return (double)*(const long *)p;
    if (s->type == SET_U64)
        return (double)*(const uint64_t *)p;
    if (s->type == SET_REAL || s->type == SET_BETAS || s->type == SET_LOSS_SCALE)
        return *(const float *)p;
    return 0;
}

static void store(const ns_setting *s, void *p, double x)
{
    if (!p)
        return;
    if (is_int_type(s->type))
        *(int *)p = (int)x;
    else if (s->type == SET_LONG)
        *(long *)p = (long)x;
    else if (s->type == SET_U64)
        *(uint64_t *)p = (uint64_t)x;
    else if (s->type == SET_REAL || s->type == SET_BETAS || s->type == SET_LOSS_SCALE)
        *(float *)p = (float)x;
}

void settings_put(const ns_setting *s, ns_config *c, double x) { store(s, field(s, c, NULL), x); }

void settings_defaults(ns_config *c)
{
    memset(c, 0, sizeof *c);
    for (int i = 0; i < N_ROWS; i++) {
        const ns_setting *s = &table[i];
        settings_put(s, c, s->def);
        if (s->type == SET_BETAS)
            ((float *)field(s, c, NULL))[1] = (float)s->def2;
    }
}

void settings_opts_defaults(void *opts)
{
    for (int i = 0; i < N_ROWS; i++)
        if (table[i].home == SET_IN_OPTS) /* store() leaves paths and actions alone */
            store(&table[i], field(&table[i], NULL, opts), table[i].def);
}

/* ---- parsing ----------------------------------------------------------- */

/* A finite number spelled in full, inside [lo, hi]. */
static int parse_num(const char *v, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (end == v || *end || errno == ERANGE || !isfinite(x) || x < lo || x > hi)
        return -1;
    *out = x;
    return 0;
}

static int parse_int(const char *v, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (end == v || *end || errno == ERANGE || (double)x < lo || (double)x > hi)
        return -1;
    *out = (double)x;
    return 0;
}

static int parse_u64(const char *v, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long u = strtoull(v, &end, 10);
    if (end == v || *end || errno == ERANGE || v[0] == '-')
        return -1;
    *out = (uint64_t)u;
    return 0;
}

/* A number as --help writes it: 64, 0.5, 1e-9, 1e30 (no "+" or leading
 * zeros in the exponent). */
static void num_text(double x, char *buf, size_t len)
{
    char t[32], *p = t;
    snprintf(t, sizeof t, "%g", x);
    char *e = strchr(t, 'e');
    size_t n = 0;
    for (; *p && n + 1 < len; p++) {
        if (e && p > e && (*p == '+' || (*p == '0' && (p[-1] == 'e' || p[-1] == '-' ||
                                                       p[-1] == '+'))))
            continue;
        buf[n++] = *p;
    }
    buf[n] = 0;
}

void settings_names(const ns_setting *s, const char *sep, char *buf, size_t len)
{
    /* on/off rows spell 1/0, auto rows also -1: their names list "on" first */
    static const char *const words[] = {"on", "off", "auto"};
    int special = s->type == SET_ONOFF || s->type == SET_AUTO;
    const char *const *names = special ? words : s->names;
    int n = s->type == SET_ONOFF ? 2 : s->type == SET_AUTO ? 3 : s->n_names;
    size_t at = 0;
    buf[0] = 0;
    for (int i = 0; i < n && at < len; i++) {
        const char *j = i == 0 ? "" : strcmp(sep, "|") ? (i == n - 1 ? " or " : ", ") : "|";
        int k = snprintf(buf + at, len - at, "%s%s", j, names[i]);
        at += k > 0 ? (size_t)k : 0;
    }
}

static int lookup(const ns_setting *s, const char *v)
{
    if (s->type == SET_ONOFF || s->type == SET_AUTO) {
        if (!strcmp(v, "on"))
            return 1;
        if (!strcmp(v, "off"))
            return 0;
        return s->type == SET_AUTO && !strcmp(v, "auto") ? -1 : -2;
    }
    for (int i = 0; s->aliases && s->aliases[i]; i += 2)
        if (!strcmp(s->aliases[i], v))
            v = s->aliases[i + 1];
    for (int i = 0; i < s->n_names; i++)
        if (!strcmp(s->names[i], v))
            return i;
    return -2;
}

/* "expected ...": what the row allows. */
static void expected(const ns_setting *s, char *why, size_t len)
{
    char a[160], b[32];
    switch (s->type) {
    case SET_INT: case SET_LONG:
        snprintf(why, len, "expected an integer in %.0f..%.0f", s->lo, s->hi);
        return;
    case SET_REAL:
        snprintf(why, len, "expected a number in %g..%g", s->lo, s->hi);
        return;
    case SET_ENUM: case SET_ONOFF: case SET_AUTO:
        settings_names(s, ", ", a, sizeof a);
        snprintf(why, len, "expected %s", a);
        return;
    case SET_U64:
        snprintf(why, len, "expected an integer in 0..%llu", (unsigned long long)UINT64_MAX);
        return;
    case SET_BETAS:
        snprintf(why, len, "expected B1,B2 with each in %g..%g", s->lo, s->hi);
        return;
    case SET_LOSS_SCALE:
        num_text(s->lo, a, sizeof a);
        num_text(s->hi, b, sizeof b);
        snprintf(why, len, "expected dynamic, off or a number in %s..%s", a, b);
        return;
    case SET_ASSIGN:
        snprintf(why, len, "expected SETTING=VALUE, e.g. norm=post");
        return;
    default:
        snprintf(why, len, "takes no value");
        return;
    }
}

int settings_parse_number(const ns_setting *s, const char *v, double *x, char *why,
                          size_t whylen)
{
    int r = -1, k;
    switch (s->type) {
    case SET_INT: case SET_LONG: r = parse_int(v, s->lo, s->hi, x); break;
    case SET_REAL: r = parse_num(v, s->lo, s->hi, x); break;
    case SET_ENUM: case SET_ONOFF: case SET_AUTO:
        if ((k = lookup(s, v)) >= -1)
            *x = k, r = 0;
        break;
    case SET_LOSS_SCALE:
        if (!strcmp(v, "dynamic") || !strcmp(v, "off"))
            *x = v[0] == 'd' ? 0.0 : -1.0, r = 0;
        else
            r = parse_num(v, s->lo, s->hi, x);
        break;
    default:
        break;
    }
    if (r != 0)
        expected(s, why, whylen);
    return r;
}

static int parse_betas(const ns_setting *s, const char *v, float *dst)
{
    const char *comma = strchr(v, ',');
    char b1[64];
    double x1, x2;
    size_t l1 = comma ? (size_t)(comma - v) : 0;
    if (!comma || l1 >= sizeof b1)
        return -1;
    memcpy(b1, v, l1);
    b1[l1] = 0;
    if (parse_num(b1, s->lo, s->hi, &x1) || parse_num(comma + 1, s->lo, s->hi, &x2))
        return -1;
    dst[0] = (float)x1;
    dst[1] = (float)x2;
    return 0;
}

/* Has v a control character (a byte below 0x20, or DEL)? */
static int has_control(const char *v)
{
    for (; *v; v++)
        if ((unsigned char)*v < 0x20 || *v == 0x7f)
            return 1;
    return 0;
}

int settings_set(const ns_setting *s, ns_config *c, void *opts, const char *v, char *why,
                 size_t whylen)
{
    void *p = field(s, c, opts);
    double x;
    int r = 0;
    if (!p) {
        snprintf(why, whylen, "not a setting of a run");
        return -1;
    }
    if ((s->flags & SETF_FILE) && has_control(v)) {
        /* a newline would split a --list line a scheduler runs, an escape
         * would reach a terminal in every message that names the file */
        snprintf(why, whylen, "expected a file name without control characters");
        return -1;
    }
    switch (s->type) {
    case SET_PRESENCE: *(int *)p = 1; return 0;
    case SET_PATH: *(const char **)p = v; return 0;
    case SET_ASSIGN: {
        const char *eq = strchr(v, '=');
        r = !eq || eq == v || !eq[1] ? -1 : 0;
        if (!r)
            *(const char **)p = v;
        break;
    }
    case SET_U64: r = parse_u64(v, (uint64_t *)p); break;
    case SET_BETAS: r = parse_betas(s, v, (float *)p); break;
    case SET_ACTION: r = -1; break;
    default:
        if (settings_parse_number(s, v, &x, why, whylen) != 0)
            return -1;
        store(s, p, x);
        return 0;
    }
    if (r != 0)
        expected(s, why, whylen);
    return r;
}

/* ---- spelling values --------------------------------------------------- */

void settings_format(const ns_setting *s, const ns_config *c, char *buf, size_t len)
{
    const void *p = field(s, (ns_config *)c, NULL);
    double x = settings_get(s, c);
    if (!p) {
        snprintf(buf, len, "?");
        return;
    }
    switch (s->type) {
    case SET_ENUM:
        snprintf(buf, len, "%s", x >= 0 && x < s->n_names ? s->names[(int)x] : "default");
        return;
    case SET_ONOFF: case SET_PRESENCE: snprintf(buf, len, "%s", x ? "on" : "off"); return;
    case SET_AUTO: snprintf(buf, len, "%s", x < 0 ? "auto" : x ? "on" : "off"); return;
    case SET_U64:
        snprintf(buf, len, "%llu", (unsigned long long)*(const uint64_t *)p);
        return;
    case SET_BETAS:
        snprintf(buf, len, "%g,%g", x, (double)((const float *)p)[1]);
        return;
    case SET_LOSS_SCALE:
        snprintf(buf, len, x == 0 ? "dynamic" : x < 0 ? "off" : "%g", x);
        return;
    case SET_LONG: snprintf(buf, len, "%ld", *(const long *)p); return;
    default: snprintf(buf, len, "%g", x); return;
    }
}

/* " (LO..HI, default D)": what --help appends to a row's words. */
static void help_tail(const ns_setting *s, char *buf, size_t len)
{
    char lo[32], hi[32], range[80] = "", def[80] = "";
    num_text(s->lo, lo, sizeof lo);
    num_text(s->hi, hi, sizeof hi);
    if (s->type == SET_INT || s->type == SET_LONG || s->type == SET_REAL)
        snprintf(range, sizeof range, "%s..%s", lo, hi);
    else if (s->type == SET_BETAS)
        snprintf(range, sizeof range, "each %s..%s", lo, hi);
    else if (s->type == SET_LOSS_SCALE)
        snprintf(range, sizeof range, "X in %s..%s", lo, hi);
    else if (s->type == SET_U64)
        snprintf(range, sizeof range, "0..2^64-1");
    if (s->def_text) {
        snprintf(def, sizeof def, "default: %s", s->def_text);
    } else if (s->type != SET_PATH && s->type != SET_ASSIGN && s->type != SET_ACTION &&
               s->type != SET_PRESENCE) {
        ns_config c;
        char v[48];
        settings_defaults(&c);
        settings_format(s, &c, v, sizeof v);
        if (s->type == SET_INT || s->type == SET_REAL)
            num_text(s->def, v, sizeof v);
        snprintf(def, sizeof def, "default %s", v);
    }
    buf[0] = 0;
    if (range[0] || def[0])
        snprintf(buf, len, " (%s%s%s)", range, range[0] && def[0] ? ", " : "", def);
}

void settings_help(FILE *f)
{
    for (int i = 0; i < N_ROWS; i++) {
        const ns_setting *s = &table[i];
        char left[128], arg[96], tail[192]; /* room for the longest row */
        if (s->flags & SETF_NOFLAG)
            continue;
        if (s->arg)
            snprintf(arg, sizeof arg, " %s", s->arg);
        else if (s->type == SET_ENUM || s->type == SET_ONOFF || s->type == SET_AUTO)
            arg[0] = ' ', settings_names(s, "|", arg + 1, sizeof arg - 1);
        else
            arg[0] = 0;
        if (s->short_name)
            snprintf(left, sizeof left, "-%c, --%s%s", s->short_name, s->name, arg);
        else
            snprintf(left, sizeof left, "    --%s%s", s->name, arg);
        help_tail(s, tail, sizeof tail);
        if (strlen(left) > 24)
            fprintf(f, "  %s\n  %-24s  %s%s\n", left, "", s->help, tail);
        else
            fprintf(f, "  %-24s  %s%s\n", left, s->help, tail);
    }
}

void settings_compare_names(char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = 0;
    for (int i = 0; i < N_ROWS && at < len; i++)
        if (table[i].flags & SETF_COMPARE) {
            int k = snprintf(buf + at, len - at, "%s%s", at ? ", " : "", table[i].name);
            at += k > 0 ? (size_t)k : 0;
        }
}

/* ---- checks of loaded values ------------------------------------------- */

/* A stored float of the row: finite (a NaN never passes), at least lo,
 * and at most hi unless a command may pass it (SETL_UNBOUNDED: lr x2
 * pressed often), compared in float as it was stored. */
static int real_ok(const ns_setting *s, double x)
{
    if (!isfinite(x) || x < (float)s->lo)
        return -1;
    return (s->live & SETL_UNBOUNDED) || x <= (float)s->hi ? 0 : -1;
}

int settings_check(const ns_setting *s, const ns_config *c)
{
    double x = settings_get(s, c);
    const float *b = field(s, (ns_config *)c, NULL);
    if (x == s->def && s->type != SET_BETAS)
        return 0;
    switch (s->type) {
    case SET_INT: case SET_LONG: return x >= s->lo && x <= s->hi ? 0 : -1;
    case SET_ENUM: return x >= 0 && x < s->n_names ? 0 : -1;
    case SET_ONOFF: case SET_PRESENCE: return x == 0 || x == 1 ? 0 : -1;
    case SET_AUTO: return x >= -1 && x <= 1 ? 0 : -1;
    case SET_REAL: return real_ok(s, x);
    case SET_BETAS: return real_ok(s, b[0]) || real_ok(s, b[1]) ? -1 : 0;
    case SET_LOSS_SCALE: return x == 0 || x == -1 ? 0 : real_ok(s, x);
    default: return 0;
    }
}

void settings_allowed(const ns_setting *s, char *buf, size_t len)
{
    int number = s->type == SET_REAL || s->type == SET_LOSS_SCALE;
    if ((s->live & SETL_UNBOUNDED) && number)
        snprintf(buf, len, "expected %sa number of at least %g (a float: at most %.3g)",
                 s->type == SET_LOSS_SCALE ? "dynamic, off or " : "", s->lo, (double)FLT_MAX);
    else
        expected(s, buf, len);
}

void settings_label(const ns_config *c, const char *spec, char *buf, size_t len)
{
    size_t n = strcspn(spec, "=");
    const ns_setting *s = settings_find(spec, n);
    char v[64] = "?";
    if (s)
        settings_format(s, c, v, sizeof v);
    snprintf(buf, len, "%.*s=%s", (int)(n < 32 ? n : 31), spec, v);
}

/* "--NAME VALUE" of the row in c, or "--NAME" for a flag without a value */
static void flag_text(const ns_setting *s, const ns_config *c, const void *opts, char *buf,
                      size_t len)
{
    char v[64] = "";
    if (s->type == SET_PRESENCE) {
        snprintf(buf, len, "--%s", s->name);
        return;
    }
    if (s->home == SET_IN_CFG)
        settings_format(s, c, v, sizeof v);
    else if (s->home == SET_IN_OPTS && s->type == SET_PATH && opts)
        snprintf(v, sizeof v, "%s", *(const char *const *)field(s, NULL, (void *)opts));
    snprintf(buf, len, "--%s %s", s->name, v);
}

int settings_applies(const ns_setting *s, const ns_config *c, const void *opts, char *buf,
                     size_t len)
{
    const setting_applies *a = &s->applies;
    if (!a->holds || a->holds(c, opts))
        return 0;
    const ns_setting *u = settings_find(a->under, strlen(a->under));
    const cli_opts *o = opts;
    char mine[96], theirs[96];
    flag_text(s, &o->cfg, opts, mine, sizeof mine);
    if (u)
        flag_text(u, c, opts, theirs, sizeof theirs);
    else
        snprintf(theirs, sizeof theirs, "--%s", a->under);
    snprintf(buf, len, "%s does nothing with %s (it applies with %s)", mine, theirs, a->when);
    return a->refuse ? 2 : 1;
}

/* A value's label by the rules of m (setting_mark); "" when m has none. */
static void mark_text(const ns_setting *s, const setting_mark *m, double x, char *buf, size_t len)
{
    buf[0] = 0;
    if (m->words && x >= 0 && x < s->n_names)
        snprintf(buf, len, "%s", m->words[(int)x]);
    else if (x < 0 && m->neg)
        snprintf(buf, len, "%s", m->neg);
    else if (x == 0 && m->zero)
        snprintf(buf, len, "%s", m->zero);
    else if (x == 1 && m->one)
        snprintf(buf, len, "%s", m->one);
    else if (m->fmt)
        snprintf(buf, len, m->fmt, x);
    else if (m->names && s->names && x >= 0 && x < s->n_names)
        snprintf(buf, len, "%s", s->names[(int)x]);
}

void settings_mark(const ns_setting *s, double x, char *buf, size_t len)
{
    mark_text(s, &s->mark, x, buf, len);
}

static int mark_empty(const setting_mark *m)
{
    return !m->zero && !m->one && !m->neg && !m->fmt && !m->names && !m->words;
}

void settings_status(const ns_setting *s, double x, char *buf, size_t len)
{
    mark_text(s, mark_empty(&s->status) ? &s->mark : &s->status, x, buf, len);
    if (buf[0])
        return;
    /* a row that says nothing of its own: its command word and value */
    const char *w = s->cmd ? s->cmd : s->name;
    if (s->type == SET_ONOFF || s->type == SET_AUTO || s->type == SET_PRESENCE)
        snprintf(buf, len, "%s %s", w, x < 0 ? "auto" : x ? "on" : "off");
    else if (s->names && x >= 0 && x < s->n_names)
        snprintf(buf, len, "%s", s->names[(int)x]);
    else
        snprintf(buf, len, "%s %g", w, x);
}

int settings_is_off(const ns_setting *s, double x)
{
    if (s->type == SET_ONOFF)
        return x == 0;
    if (s->type == SET_LOSS_SCALE)
        return x < 0;
    return (s->live & SETL_OFF) && x == 0;
}
