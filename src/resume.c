/* resume.c - settings given with --load (resume.h). A change goes through
 * the same command value a --script line makes, so a resumed run with
 * --lr 0.01 is the run that "at N: lr 0.01" gives. Which settings a
 * command changes, and which a checkpoint holds, is the settings table's
 * (settings.c: a row's command word and checkpoint field).
 */
#include "resume.h"

#include <string.h>

#include "cli.h"
#include "command.h"

/* Rows a resumed run handles elsewhere: the shape and --steps (main.c
 * compares and takes them), and warmup, whose command is on/off
 * (apply_warmup). */
static int handled_elsewhere(const ns_setting *s)
{
    static const char *const names[] = {"layers", "dim",   "heads", "context",
                                        "batch",  "steps", "warmup"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(s->name, names[i]))
            return 1;
    return 0;
}

int resume_changes(const ns_setting *s)
{
    if (s->home != SET_IN_CFG || !s->ckpt || (s->flags & SETF_NOFLAG))
        return 0;
    if (!strcmp(s->name, "warmup")) /* apply_warmup: on, off or a fresh ramp */
        return 1;
    return s->cmd != NULL && !handled_elsewhere(s);
}

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

/* --warmup N on a resumed run: 0 turns warmup off; N > 0 turns it on, a
 * fresh ramp of N steps from the resumed step. A ramp of another length
 * than the run's cannot be had under invsqrt and noam, whose decay the
 * length sets too. */
static int apply_warmup(const cli_opts *o, const ns_config *ckpt, engine *e, FILE *out,
                        FILE *err)
{
    int n = o->cfg.warmup, on = engine_warmup_on(e), ramp = engine_warmup_steps(e);
    if (n > 0 && n != ramp && engine_set_warmup_steps(e, n) != 0) {
        fprintf(err,
                "normscope: --load %s: --warmup %d: under --schedule %s the ramp's length also "
                "sets the decay, and this run's is %d steps: a resumed run can turn warmup off "
                "(--warmup 0) or on (--warmup %d)\n",
                o->load, n, config_sched_kind_names[ckpt->schedule], ramp, ramp);
        return -1;
    }
    if ((n == 0) != on && (n == 0 || n == ramp))
        return 0; /* already so */
    if (out && n)
        fprintf(out, "normscope: --load: warmup on from step %ld, a fresh ramp of %d steps\n",
                engine_steps_done(e), n);
    else if (out)
        fprintf(out, "normscope: --load: warmup off from step %ld\n", engine_steps_done(e));
    return run_command(o, e, "warmup", n ? "warmup on" : "warmup off", err);
}

/* A row no command changes, given with a value the checkpoint does not
 * have: refused. 0 or -1 (said on err). */
static int check_fixed(const cli_opts *o, const ns_setting *s, const ns_config *ckpt, FILE *err)
{
    char mine[96], theirs[96];
    settings_format(s, &o->cfg, mine, sizeof mine);
    settings_format(s, ckpt, theirs, sizeof theirs);
    if (!strcmp(mine, theirs))
        return 0;
    fprintf(err, "normscope: --load %s: --%s %s cannot change on a resumed run (the checkpoint "
                 "has %s)\n",
            o->load, s->name, mine, theirs);
    return -1;
}

/* A row a mid-run command changes ("WORD VALUE", the row's command word),
 * given with a value the run does not have: applied from the resumed step.
 * 0 or -1 (said on err). */
static int apply_settable(const cli_opts *o, const ns_setting *s, engine *e, FILE *out,
                          FILE *err)
{
    char mine[96], theirs[96], line[160];
    settings_format(s, &o->cfg, mine, sizeof mine);
    settings_format(s, engine_config(e), theirs, sizeof theirs);
    if (!strcmp(mine, theirs))
        return 0;
    snprintf(line, sizeof line, "%s %s", s->cmd, mine);
    if (out)
        fprintf(out, "normscope: --load: %s=%s from step %ld (the checkpoint had %s)\n", s->name,
                mine, engine_steps_done(e), theirs);
    return run_command(o, e, s->name, line, err);
}

/* "FILE (N bytes)" or "the built-in corpus (N bytes)" */
static void data_words(const engine_data_id *id, char *buf, size_t len)
{
    snprintf(buf, len, "%s%s (%llu bytes)", id->from_file ? "" : "the built-in corpus",
             id->from_file ? id->name : "", (unsigned long long)id->n);
}

int resume_check_data(const cli_opts *o, const engine *e, const dataset *d, FILE *err)
{
    const engine_data_id *was = engine_loaded_data(e);
    engine_data_id now;
    char theirs[1200], mine[1200];
    if (was->known != 1)
        return 0; /* a checkpoint from before the data was recorded */
    engine_data_id_of(d, &now);
    if (now.n == was->n && now.print == was->print)
        return 0;
    data_words(was, theirs, sizeof theirs);
    data_words(&now, mine, sizeof mine);
    if (was->from_file && !o->data) {
        fprintf(err, "normscope: --load %s: the run trained on %s; give --data %s to resume it "
                     "(or --data with the bytes it should train on now)\n",
                o->load, theirs, was->name);
        return 2;
    }
    if (!strcmp(mine, theirs)) /* the same name and length: its bytes changed */
        fprintf(err, "normscope: --load %s: from step %ld it trains on %s, whose bytes differ "
                     "from those it trained on before (fingerprint %08x, was %08x)\n",
                o->load, engine_steps_done(e), mine, (unsigned)now.print, (unsigned)was->print);
    else
        fprintf(err, "normscope: --load %s: from step %ld it trains on %s, not on %s as before\n",
                o->load, engine_steps_done(e), mine, theirs);
    return 0;
}

/* A value a mid-run command took past its flag's range (lr x2 pressed
 * often) loads, as the run had it; a resumed run is told so, once, unless
 * the flag given replaces it. */
static void note_past_range(const cli_opts *o, const ns_config *ckpt, FILE *err)
{
    for (int i = 0; i < settings_count(); i++) {
        const ns_setting *s = settings_row(i);
        double x = settings_get(s, ckpt);
        char v[48], hi[32];
        if (!(s->live & SETL_UNBOUNDED) || !s->ckpt || o->given[i] || x <= (float)s->hi)
            continue;
        settings_format(s, ckpt, v, sizeof v);
        snprintf(hi, sizeof hi, "%g", s->hi);
        fprintf(err, "normscope: --load %s: %s %s is above --%s's range (at most %s): a mid-run "
                     "change made it; the run resumes with it\n",
                o->load, s->name, v, s->name, hi);
    }
}

int resume_apply_flags(const cli_opts *o, ns_config *ckpt, engine *e, FILE *out, FILE *err)
{
    note_past_range(o, ckpt, err);
    /* every row of the checkpoint's the user gave: the table says which a
     * command changes (its command word) and which are fixed */
    for (int i = 0; i < settings_count(); i++) {
        const ns_setting *s = settings_row(i);
        if (!o->given[i] || s->home != SET_IN_CFG || s->ckpt == 0 || handled_elsewhere(s))
            continue;
        if (resume_changes(s) ? apply_settable(o, s, e, out, err) : check_fixed(o, s, ckpt, err))
            return 2;
    }
    if (cli_given(o, "warmup") && apply_warmup(o, ckpt, e, out, err) != 0)
        return 2;
    if (cli_given(o, "on-diverge")) /* not in a checkpoint: the run's own */
        ckpt->on_div = o->cfg.on_div;
    return 0;
}
