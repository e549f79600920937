/* command.c - applying mid-run commands to an engine, and parsing them
 * from script lines. No threads, no curses. */
#include "command.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int command_apply(engine *e, const ns_command *c)
{
    const ns_config *cfg = engine_config(e);
    switch (c->kind) {
    case CMD_NORM:
        engine_set_norm(e, (norm_place)(int)c->arg);
        return CMD_APPLIED;
    case CMD_NORM_TOGGLE:
        engine_set_norm(e, cfg->norm == NORM_PRE ? NORM_POST : NORM_PRE);
        return CMD_APPLIED;
    case CMD_NORM_CYCLE:
        engine_set_norm(e, (norm_place)((cfg->norm + 1) % NORM_PLACE_COUNT));
        return CMD_APPLIED;
    case CMD_KIND:
        engine_set_norm_kind(e, (norm_kind)(int)c->arg);
        return CMD_APPLIED;
    case CMD_KIND_CYCLE:
        engine_set_norm_kind(e, (norm_kind)((cfg->norm_kind + 1) % NORM_KIND_COUNT));
        return CMD_APPLIED;
    case CMD_FINAL_NORM:
        engine_set_final_norm(e, (int)c->arg);
        return CMD_APPLIED;
    case CMD_WARMUP: {
        int on = c->arg < 0 ? !engine_warmup_on(e) : c->arg > 0;
        engine_set_warmup(e, on);
        return CMD_APPLIED;
    }
    case CMD_PRECISION: {
        int f = c->arg < 0 ? ((int)cfg->precision + 1) % (int)FMT_COUNT : (int)c->arg;
        engine_set_precision(e, (numfmt)f);
        return CMD_APPLIED;
    }
    case CMD_FP32_NORMS:
        engine_set_fp32_norms(e, c->arg < 0 ? !cfg->fp32_norms : c->arg > 0);
        return CMD_APPLIED;
    case CMD_LOSS_SCALE:
        if (isnan(c->arg))
            engine_set_loss_scale(e, cfg->loss_scale == 0.0f ? -1.0f : 0.0f);
        else
            engine_set_loss_scale(e, (float)c->arg);
        return CMD_APPLIED;
    case CMD_LR: {
        double lr = c->arg;
        engine_set_lr(e, (float)(lr < 1e-9 ? 1e-9 : (lr > 1e30 ? 1e30 : lr)));
        return CMD_APPLIED;
    }
    case CMD_LR_SCALE: {
        /* no clamp at 10: pressing + many times is how a class sees the
         * LR blow a run up, and the numbers must stay something to show */
        double lr = (double)engine_current_peak(e) * c->arg;
        engine_set_lr(e, (float)(lr < 1e-9 ? 1e-9 : (lr > 1e30 ? 1e30 : lr)));
        return CMD_APPLIED;
    }
    case CMD_CLIP:
        if (isnan(c->arg))
            engine_set_clip(e, cfg->clip > 0.0f ? 0.0f : 1.0f);
        else
            engine_set_clip(e, (float)c->arg);
        return CMD_APPLIED;
    case CMD_REINIT:
        engine_reinit(e);
        return CMD_APPLIED;
    case CMD_SNAPSHOT:
        if (engine_snapshot(e) != 0)
            return CMD_FAILED;
        engine_note(e, "snapshot at step %ld", engine_steps_done(e));
        return CMD_APPLIED;
    case CMD_REWIND:
        return engine_rewind(e) < 0 ? CMD_FAILED : CMD_APPLIED;
    case CMD_NOTE:
        engine_note(e, "%s", c->text);
        return CMD_APPLIED;
    default:
        return CMD_FLOW;
    }
}

/* ---- parsing ----------------------------------------------------------- */

static int num(const char *s, double *x)
{
    char *end;
    errno = 0;
    *x = strtod(s, &end);
    return end != s && !*end && errno != ERANGE && isfinite(*x) ? 0 : -1;
}

static int onoff(const char *s)
{
    if (!strcmp(s, "on"))
        return 1;
    if (!strcmp(s, "off"))
        return 0;
    if (!strcmp(s, "toggle"))
        return -1;
    return -2;
}

int command_parse(const char *line, ns_command *c, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    char verb[32] = "", arg[NS_CMD_TEXT] = "";
    while (isspace((unsigned char)*line))
        line++;
    size_t n = strcspn(line, " \t");
    if (n == 0 || n >= sizeof verb) {
        snprintf(err, errlen, "expected a command");
        return -1;
    }
    memcpy(verb, line, n);
    const char *rest = line + n;
    while (isspace((unsigned char)*rest))
        rest++;
    size_t rl = strlen(rest);
    while (rl > 0 && isspace((unsigned char)rest[rl - 1]))
        rl--;
    if (rl >= sizeof arg) {
        snprintf(err, errlen, "'%s': argument too long (at most %d bytes)", verb, NS_CMD_TEXT - 1);
        return -1;
    }
    memcpy(arg, rest, rl);
    int needs_arg = strcmp(verb, "reinit") && strcmp(verb, "snapshot") && strcmp(verb, "rewind") &&
                    strcmp(verb, "pause") && strcmp(verb, "resume") && strcmp(verb, "step") &&
                    strcmp(verb, "stop");
    if (needs_arg && !arg[0]) {
        snprintf(err, errlen, "'%s' needs a value", verb);
        return -1;
    }
    if (!needs_arg && arg[0]) {
        snprintf(err, errlen, "'%s' takes no value", verb);
        return -1;
    }
    double x;
    int k;
    if (!strcmp(verb, "norm")) {
        if (!strcmp(arg, "toggle"))
            c->kind = CMD_NORM_TOGGLE;
        else if (!strcmp(arg, "next"))
            c->kind = CMD_NORM_CYCLE;
        else if ((k = norm_place_parse(arg)) >= 0)
            c->kind = CMD_NORM, c->arg = k;
        else
            goto bad_value;
    } else if (!strcmp(verb, "kind")) {
        if (!strcmp(arg, "next"))
            c->kind = CMD_KIND_CYCLE;
        else if ((k = norm_kind_parse(arg)) >= 0)
            c->kind = CMD_KIND, c->arg = k;
        else
            goto bad_value;
    } else if (!strcmp(verb, "final-norm")) {
        c->kind = CMD_FINAL_NORM;
        if (!strcmp(arg, "auto"))
            c->arg = -1;
        else if ((k = onoff(arg)) >= 0)
            c->arg = k;
        else
            goto bad_value;
    } else if (!strcmp(verb, "warmup") || !strcmp(verb, "fp32-norms")) {
        c->kind = verb[0] == 'w' ? CMD_WARMUP : CMD_FP32_NORMS;
        if ((k = onoff(arg)) < -1)
            goto bad_value;
        c->arg = k;
    } else if (!strcmp(verb, "precision")) {
        c->kind = CMD_PRECISION;
        if (!strcmp(arg, "next"))
            c->arg = -1;
        else if ((k = numfmt_parse(arg)) >= 0)
            c->arg = k;
        else
            goto bad_value;
    } else if (!strcmp(verb, "loss-scale")) {
        c->kind = CMD_LOSS_SCALE;
        if (!strcmp(arg, "dynamic"))
            c->arg = 0;
        else if (!strcmp(arg, "off"))
            c->arg = -1;
        else if (!strcmp(arg, "toggle"))
            c->arg = NAN;
        else if (!num(arg, &x) && x > 0)
            c->arg = x;
        else
            goto bad_value;
    } else if (!strcmp(verb, "lr")) {
        if ((arg[0] == 'x' || arg[0] == '*') && !num(arg + 1, &x) && x > 0)
            c->kind = CMD_LR_SCALE, c->arg = x;
        else if (arg[0] == '/' && !num(arg + 1, &x) && x > 0)
            c->kind = CMD_LR_SCALE, c->arg = 1.0 / x;
        else if (!num(arg, &x) && x > 0)
            c->kind = CMD_LR, c->arg = x;
        else
            goto bad_value;
    } else if (!strcmp(verb, "clip")) {
        c->kind = CMD_CLIP;
        if (!strcmp(arg, "off"))
            c->arg = 0;
        else if (!strcmp(arg, "toggle"))
            c->arg = NAN;
        else if (!num(arg, &x) && x >= 0)
            c->arg = x;
        else
            goto bad_value;
    } else if (!strcmp(verb, "note")) {
        c->kind = CMD_NOTE;
        snprintf(c->text, sizeof c->text, "%s", arg);
    } else if (!strcmp(verb, "reinit")) {
        c->kind = CMD_REINIT;
    } else if (!strcmp(verb, "snapshot")) {
        c->kind = CMD_SNAPSHOT;
    } else if (!strcmp(verb, "rewind")) {
        c->kind = CMD_REWIND;
    } else if (!strcmp(verb, "pause")) {
        c->kind = CMD_PAUSE;
    } else if (!strcmp(verb, "resume")) {
        c->kind = CMD_RESUME;
    } else if (!strcmp(verb, "step")) {
        c->kind = CMD_STEP;
    } else if (!strcmp(verb, "stop")) {
        c->kind = CMD_STOP;
    } else {
        snprintf(err, errlen,
                 "unknown command '%s' (expected norm, kind, final-norm, warmup, precision, "
                 "fp32-norms, loss-scale, lr, clip, reinit, snapshot, rewind, note, pause, "
                 "resume, step or stop)",
                 verb);
        return -1;
    }
    return 0;
bad_value:
    snprintf(err, errlen, "'%s %s': bad value (see normscope(1), SCRIPTS)", verb, arg);
    return -1;
}

int script_parse(const char *text, const char *name, ns_script *s, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->high = -1;
    int cap = 0, lineno = 0;
    const char *p = text;
    while (*p) {
        lineno++;
        size_t len = strcspn(p, "\n");
        char line[256];
        if (len >= sizeof line) {
            snprintf(err, errlen, "%s:%d: line too long (at most %zu bytes)", name, lineno,
                     sizeof line - 1);
            script_free(s);
            return -1;
        }
        memcpy(line, p, len);
        line[len] = 0;
        p += len + (p[len] == '\n');
        char *hash = strchr(line, '#');
        if (hash)
            *hash = 0;
        char *t = line;
        while (isspace((unsigned char)*t))
            t++;
        if (!*t)
            continue;
        script_entry en;
        memset(&en, 0, sizeof en);
        en.at = -1;
        char kw[8];
        long val;
        int used = 0;
        if (sscanf(t, "%7[a-z] %ld :%n", kw, &val, &used) < 2 || used == 0 ||
            (strcmp(kw, "at") && strcmp(kw, "every"))) {
            snprintf(err, errlen, "%s:%d: expected 'at N: COMMAND' or 'every N: COMMAND'", name,
                     lineno);
            script_free(s);
            return -1;
        }
        if (!strcmp(kw, "at")) {
            if (val < 0) {
                snprintf(err, errlen, "%s:%d: 'at %ld': the step must be 0 or more", name, lineno,
                         val);
                script_free(s);
                return -1;
            }
            en.at = val;
        } else {
            if (val <= 0) {
                snprintf(err, errlen, "%s:%d: 'every %ld': the interval must be 1 or more", name,
                         lineno, val);
                script_free(s);
                return -1;
            }
            en.every = val;
        }
        const char *cmd = t + used;
        while (isspace((unsigned char)*cmd))
            cmd++;
        if ((cmd[0] == 'a' || cmd[0] == 'b') && cmd[1] == ':') { /* the run it acts on */
            en.target = cmd[0] == 'a' ? 1 : 2;
            cmd += 2;
        }
        char why[256];
        if (command_parse(cmd, &en.cmd, why, sizeof why) != 0) {
            snprintf(err, errlen, "%s:%d: %s", name, lineno, why);
            script_free(s);
            return -1;
        }
        if (s->n == cap) {
            cap = cap ? cap * 2 : 16;
            script_entry *ne = realloc(s->e, (size_t)cap * sizeof *ne);
            if (!ne) {
                snprintf(err, errlen, "%s: out of memory", name);
                script_free(s);
                return -1;
            }
            s->e = ne;
        }
        s->e[s->n++] = en;
    }
    return 0;
}

int script_load(const char *path, ns_script *s, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "--script %s: %s", path, strerror(errno));
        return -1;
    }
    uint8_t *buf;
    size_t n;
    int r = data_read_all(f, 1u << 24, &buf, &n);
    fclose(f);
    if (r != 0) {
        snprintf(err, errlen, "--script %s: %s", path,
                 r == -2 ? "larger than 16 MiB" : r == -3 ? "out of memory" : "read error");
        return -1;
    }
    const uint8_t *nul = memchr(buf, 0, n);
    if (nul) {
        snprintf(err, errlen, "--script %s: byte %zu is NUL: not a text file", path,
                 (size_t)(nul - buf));
        free(buf);
        return -1;
    }
    r = script_parse((const char *)buf, path, s, err, errlen);
    free(buf);
    return r;
}

void script_free(ns_script *s)
{
    free(s->e);
    memset(s, 0, sizeof *s);
}

void script_due(ns_script *s, long done,
                void (*fn)(void *ctx, const ns_command *c, int target), void *ctx)
{
    if (done <= s->high)
        return;
    s->high = done;
    for (int i = 0; i < s->n; i++) {
        const script_entry *en = &s->e[i];
        if ((en->at >= 0 && en->at == done) || (en->every > 0 && done > 0 && done % en->every == 0))
            fn(ctx, &en->cmd, en->target);
    }
}
