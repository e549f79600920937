/* resume.c - settings given with --load (resume.h). A change goes through
 * the same command value a --script line makes, so a resumed run with
 * --lr 0.01 is the run that "at N: lr 0.01" gives.
 */
#include "resume.h"

#include <string.h>

#include "command.h"

/* A flag a mid-run command can change, and the command's verb. */
typedef struct {
    const char *flag, *verb;
} settable;

static const settable settables[] = {
    {"lr", "lr"},           {"precision", "precision"}, {"fp32-norms", "fp32-norms"},
    {"norm", "norm"},       {"norm-kind", "kind"},      {"final-norm", "final-norm"},
    {"clip", "clip"},       {"loss-scale", "loss-scale"},
};

/* Settings no command changes: given with --load, they must agree. */
static const char *const fixed[] = {"eps",       "init",      "init-std",      "betas",
                                    "adam-eps",  "weight-decay", "schedule",   "mix-k",
                                    "dyt-alpha", "ln-gamma-init", "ln-beta-init", "seed"};

/* Apply "verb value" to e, as a script line. 0, or -1 (said on err). */
static int run_command(const cli_opts *o, engine *e, const char *flag, const char *line,
                       FILE *err)
{
    ns_command c;
    char why[160];
    if (command_parse(line, &c, why, sizeof why) != 0 || command_apply(e, &c) != CMD_APPLIED) {
        fprintf(err, "normscope: --load %s: --%s cannot be applied to the resumed run (%s)\n",
                o->load, flag, why);
        return -1;
    }
    return 0;
}

/* --warmup N on a resumed run: 0 turns warmup off; the checkpoint's own
 * length turns it on again (a fresh ramp); another length cannot be had. */
static int apply_warmup(const cli_opts *o, const ns_config *ckpt, engine *e, FILE *out,
                        FILE *err)
{
    int n = o->cfg.warmup, on = engine_warmup_on(e);
    if (n > 0 && n != ckpt->warmup) {
        fprintf(err,
                "normscope: --load %s: --warmup %d: the checkpoint's warmup is %d steps; a "
                "resumed run can only turn it off (--warmup 0) or on (--warmup %d)\n",
                o->load, n, ckpt->warmup, ckpt->warmup);
        return -1;
    }
    if ((n == 0) != on)
        return 0; /* already so */
    if (out)
        fprintf(out, "normscope: --load: warmup %s from step %ld\n", n ? "on" : "off",
                engine_steps_done(e));
    return run_command(o, e, "warmup", n ? "warmup on" : "warmup off", err);
}

/* Counts the checkpoint holds and no command changes. */
static int check_counts(const cli_opts *o, const ns_config *ckpt, FILE *err)
{
    const struct {
        const char *flag;
        int mine, theirs;
    } f[] = {
        {"val-every", o->cfg.val_every, ckpt->val_every},
        {"val-batches", o->cfg.val_batches, ckpt->val_batches},
        {"snapshot-every", o->cfg.snapshot_every, ckpt->snapshot_every},
        {"snapshots", o->cfg.snapshots, ckpt->snapshots},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (cli_given(o, f[i].flag) && f[i].mine != f[i].theirs) {
            fprintf(err, "normscope: --load %s: --%s %d cannot change on a resumed run "
                         "(the checkpoint has %d)\n",
                    o->load, f[i].flag, f[i].mine, f[i].theirs);
            return -1;
        }
    return 0;
}

int resume_apply_flags(const cli_opts *o, ns_config *ckpt, engine *e, FILE *out, FILE *err)
{
    char mine[96], theirs[96], line[128];
    if (check_counts(o, ckpt, err) != 0)
        return 2;
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        if (!cli_given(o, fixed[i]))
            continue;
        cli_setting_label(&o->cfg, fixed[i], mine, sizeof mine);
        cli_setting_label(ckpt, fixed[i], theirs, sizeof theirs);
        if (strcmp(mine, theirs) != 0) {
            fprintf(err, "normscope: --load %s: --%s cannot change on a resumed run "
                         "(the checkpoint has %s)\n",
                    o->load, mine, theirs);
            return 2;
        }
    }
    for (size_t i = 0; i < sizeof settables / sizeof settables[0]; i++) {
        const settable *s = &settables[i];
        if (!cli_given(o, s->flag))
            continue;
        cli_setting_label(&o->cfg, s->flag, mine, sizeof mine);
        cli_setting_label(engine_config(e), s->flag, theirs, sizeof theirs);
        if (!strcmp(mine, theirs))
            continue;
        const char *val = strchr(mine, '=') + 1;
        snprintf(line, sizeof line, "%s %s", s->verb, val);
        if (out)
            fprintf(out, "normscope: --load: %s from step %ld (the checkpoint had %s)\n", mine,
                    engine_steps_done(e), strchr(theirs, '=') + 1);
        if (run_command(o, e, s->flag, line, err) != 0)
            return 2;
    }
    if (cli_given(o, "warmup") && apply_warmup(o, ckpt, e, out, err) != 0)
        return 2;
    if (cli_given(o, "on-diverge")) /* not in a checkpoint: the run's own */
        ckpt->on_div = o->cfg.on_div;
    return 0;
}
