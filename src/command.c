/* command.c - applying mid-run commands to an engine, and parsing them
 * from script lines. No threads, no curses. */
#include "command.h"

#include "settings.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

ns_command command_make(command_kind k)
{
    ns_command c;
    memset(&c, 0, sizeof c);
    c.kind = k;
    return c;
}

ns_command command_set_int(command_kind k, int i)
{
    ns_command c = command_make(k);
    c.v.type = CMDV_INT;
    c.v.u.i = i;
    return c;
}

ns_command command_set_real(command_kind k, double x)
{
    ns_command c = command_make(k);
    c.v.type = CMDV_REAL;
    c.v.u.x = x;
    return c;
}

ns_command command_toggle(command_kind k)
{
    ns_command c = command_make(k);
    c.how = CMDH_TOGGLE;
    return c;
}

ns_command command_cycle(command_kind k)
{
    ns_command c = command_make(k);
    c.how = CMDH_CYCLE;
    return c;
}

ns_command command_scale(command_kind k, double factor)
{
    ns_command c = command_set_real(k, factor);
    c.how = CMDH_SCALE;
    return c;
}

ns_command command_set_setting(const ns_setting *s, double x)
{
    ns_command c = command_set_real(CMD_SETTING, x);
    c.setting = settings_index(s);
    return c;
}

double command_number(const ns_command *c)
{
    return c->v.type == CMDV_INT ? c->v.u.i : c->v.type == CMDV_REAL ? c->v.u.x : 0.0;
}

static int cmd_int(const ns_command *c) { return (int)command_number(c); }

/* Peak LRs stay finite and positive whatever a script or a key asks:
 * no cap at 10, since pressing + many times is how a class sees the LR
 * blow a run up, and the numbers must stay something to show. */
static float lr_clamp(double lr) { return (float)(lr < 1e-9 ? 1e-9 : lr > 1e30 ? 1e30 : lr); }

/* The settings commands whose new value depends on the one in force. */
static int apply_relative(engine *e, const ns_command *c)
{
    const ns_config *cfg = engine_config(e);
    int toggle = c->how == CMDH_TOGGLE;
    switch (c->kind) {
    case CMD_NORM:
        if (toggle)
            engine_set_norm(e, cfg->norm == NORM_PRE ? NORM_POST : NORM_PRE);
        else
            engine_set_norm(e, (norm_place)((cfg->norm + 1) % NORM_PLACE_COUNT));
        return 0;
    case CMD_KIND:
        engine_set_norm_kind(e, (norm_kind)((cfg->norm_kind + 1) % NORM_KIND_COUNT));
        return 0;
    case CMD_WARMUP: engine_set_warmup(e, !engine_warmup_on(e)); return 0;
    case CMD_PRECISION:
        engine_set_precision(e, (numfmt)(((int)cfg->precision + 1) % (int)FMT_COUNT));
        return 0;
    case CMD_FP32_NORMS: engine_set_fp32_norms(e, !cfg->fp32_norms); return 0;
    case CMD_LOSS_SCALE: engine_set_loss_scale(e, cfg->loss_scale == 0.0f ? -1.0f : 0.0f); return 0;
    case CMD_CLIP: engine_set_clip(e, cfg->clip > 0.0f ? 0.0f : 1.0f); return 0;
    case CMD_LR:
        if (c->how == CMDH_SCALE) {
            engine_set_lr(e, lr_clamp((double)engine_current_peak(e) * command_number(c)));
            return 0;
        }
        break;
    default:
        break;
    }
    return -1;
}

int command_apply(engine *e, const ns_command *c)
{
    if (c->how != CMDH_SET && apply_relative(e, c) == 0)
        return CMD_APPLIED;
    switch (c->kind) {
    case CMD_NORM: engine_set_norm(e, (norm_place)cmd_int(c)); return CMD_APPLIED;
    case CMD_KIND: engine_set_norm_kind(e, (norm_kind)cmd_int(c)); return CMD_APPLIED;
    case CMD_FINAL_NORM: engine_set_final_norm(e, cmd_int(c)); return CMD_APPLIED;
    case CMD_WARMUP: engine_set_warmup(e, cmd_int(c) > 0); return CMD_APPLIED;
    case CMD_PRECISION: engine_set_precision(e, (numfmt)cmd_int(c)); return CMD_APPLIED;
    case CMD_FP32_NORMS: engine_set_fp32_norms(e, cmd_int(c) > 0); return CMD_APPLIED;
    case CMD_LOSS_SCALE: engine_set_loss_scale(e, (float)command_number(c)); return CMD_APPLIED;
    case CMD_LR: engine_set_lr(e, lr_clamp(command_number(c))); return CMD_APPLIED;
    case CMD_CLIP: engine_set_clip(e, (float)command_number(c)); return CMD_APPLIED;
    case CMD_SETTING:
        if (!settings_row(c->setting))
            return CMD_FAILED;
        engine_set_setting(e, settings_row(c->setting), command_number(c));
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

/* What a command's word may be followed by. */
enum {
    TAKES_VALUE = 1 << 0,  /* its settings row's value */
    TAKES_TOGGLE = 1 << 1, /* "toggle" */
    TAKES_NEXT = 1 << 2,   /* "next" */
    TAKES_SCALE = 1 << 3,  /* "xF", "*F", "/F" */
    TAKES_OFF = 1 << 4,    /* "off" = 0 (a number whose 0 means off) */
    TAKES_ONOFF = 1 << 5,  /* "on", "off" (no settings row) */
    TAKES_TEXT = 1 << 6,   /* the rest of the line */
    TAKES_MAYBE = 1 << 7,  /* ... or nothing: the value may be left out */
};

/* Every command once. A command that sets a setting names its row, and
 * its word is the row's command word; the others carry their own word. */
static const struct {
    command_kind kind;
    const char *row;  /* settings row, or NULL */
    const char *word; /* when row is NULL */
    unsigned takes;
} commands[] = {
    {CMD_NORM, "norm", NULL, TAKES_VALUE | TAKES_TOGGLE | TAKES_NEXT},
    {CMD_KIND, "norm-kind", NULL, TAKES_VALUE | TAKES_NEXT},
    {CMD_FINAL_NORM, "final-norm", NULL, TAKES_VALUE},
    {CMD_WARMUP, NULL, "warmup", TAKES_ONOFF | TAKES_TOGGLE},
    {CMD_PRECISION, "precision", NULL, TAKES_VALUE | TAKES_NEXT},
    {CMD_FP32_NORMS, "fp32-norms", NULL, TAKES_VALUE | TAKES_TOGGLE},
    {CMD_LOSS_SCALE, "loss-scale", NULL, TAKES_VALUE | TAKES_TOGGLE},
    {CMD_LR, "lr", NULL, TAKES_VALUE | TAKES_SCALE},
    {CMD_CLIP, "clip", NULL, TAKES_VALUE | TAKES_TOGGLE | TAKES_OFF},
    {CMD_REINIT, NULL, "reinit", 0},
    {CMD_SNAPSHOT, NULL, "snapshot", 0},
    {CMD_REWIND, NULL, "rewind", 0},
    {CMD_NOTE, NULL, "note", TAKES_TEXT},
    {CMD_PAUSE, NULL, "pause", TAKES_TEXT | TAKES_MAYBE}, /* a lesson's question, or none */
    {CMD_RESUME, NULL, "resume", 0},
    {CMD_STEP, NULL, "step", 0},
    {CMD_STOP, NULL, "stop", 0},
};
enum { N_COMMANDS = sizeof commands / sizeof commands[0] };

static const ns_setting *command_row(int i)
{
    return commands[i].row ? settings_find(commands[i].row, strlen(commands[i].row)) : NULL;
}

static const char *command_word(int i)
{
    const ns_setting *s = command_row(i);
    return s ? s->cmd : commands[i].word;
}

static int num(const char *s, double *x)
{
    char *end;
    errno = 0;
    *x = strtod(s, &end);
    return end != s && !*end && errno != ERANGE && isfinite(*x) ? 0 : -1;
}

/* A setting's value after its word. Mid-run numbers have the row's lower
 * bound but no upper one (pushing a setting past the flag's range, lr x2
 * by lr x2, is what a class watches). 0 or -1. */
static int row_value(const ns_setting *s, const char *arg, ns_command *c)
{
    double x;
    char why[160];
    if (s->type == SET_REAL || (s->type == SET_LOSS_SCALE && strcmp(arg, "dynamic") &&
                                strcmp(arg, "off"))) {
        if (num(arg, &x) || x < s->lo)
            return -1;
        *c = command_set_real(c->kind, x);
        return 0;
    }
    if (settings_parse_number(s, arg, &x, why, sizeof why) != 0)
        return -1;
    if (s->type == SET_LOSS_SCALE)
        *c = command_set_real(c->kind, x);
    else
        *c = command_set_int(c->kind, (int)x);
    return 0;
}

/* The value after command i's word into c. 0 or -1. */
static int command_value_of(int i, const char *arg, ns_command *c)
{
    unsigned t = commands[i].takes;
    double x;
    if ((t & TAKES_TOGGLE) && !strcmp(arg, "toggle"))
        return *c = command_toggle(c->kind), 0;
    if ((t & TAKES_NEXT) && !strcmp(arg, "next"))
        return *c = command_cycle(c->kind), 0;
    if ((t & (TAKES_OFF | TAKES_ONOFF)) && !strcmp(arg, "off"))
        return *c = (t & TAKES_OFF) ? command_set_real(c->kind, 0) : command_set_int(c->kind, 0), 0;
    if ((t & TAKES_ONOFF) && !strcmp(arg, "on"))
        return *c = command_set_int(c->kind, 1), 0;
    if ((t & TAKES_SCALE) && (arg[0] == 'x' || arg[0] == '*' || arg[0] == '/')) {
        if (num(arg + 1, &x) || !(x > 0))
            return -1;
        return *c = command_scale(c->kind, arg[0] == '/' ? 1.0 / x : x), 0;
    }
    if (t & TAKES_TEXT)
        return snprintf(c->text, sizeof c->text, "%s", arg), 0;
    return (t & TAKES_VALUE) ? row_value(command_row(i), arg, c) : -1;
}

/* Split "verb arg" (blanks trimmed). 0, or -1 with the reason in err. */
static int split(const char *line, char *verb, size_t vl, char *arg, size_t al, char *err,
                 size_t errlen)
{
    while (isspace((unsigned char)*line))
        line++;
    size_t n = strcspn(line, " \t");
    if (n == 0 || n >= vl) {
        snprintf(err, errlen, "expected a command");
        return -1;
    }
    memcpy(verb, line, n);
    verb[n] = 0;
    const char *rest = line + n;
    while (isspace((unsigned char)*rest))
        rest++;
    size_t rl = strlen(rest);
    while (rl > 0 && isspace((unsigned char)rest[rl - 1]))
        rl--;
    if (rl >= al) {
        snprintf(err, errlen, "'%s': argument too long (at most %zu bytes)", verb, al - 1);
        return -1;
    }
    memcpy(arg, rest, rl);
    arg[rl] = 0;
    return 0;
}

/* A settings row with a command word but no command of its own above:
 * set by CMD_SETTING. */
static const ns_setting *generic_row(const char *word)
{
    const ns_setting *s = settings_find_cmd(word);
    for (int i = 0; s && i < N_COMMANDS; i++)
        if (command_row(i) == s)
            return NULL;
    return s;
}

static void unknown(const char *verb, char *err, size_t errlen)
{
    char list[600];
    size_t at = 0;
    for (int i = 0; i < N_COMMANDS && at < sizeof list; i++) {
        int k = snprintf(list + at, sizeof list - at, "%s%s", i ? ", " : "", command_word(i));
        at += k > 0 ? (size_t)k : 0;
    }
    for (int i = 0; i < settings_count() && at < sizeof list; i++) {
        const ns_setting *s = settings_row(i);
        int k = 0;
        if (s->cmd && generic_row(s->cmd))
            k = snprintf(list + at, sizeof list - at, ", %s", s->cmd);
        at += k > 0 ? (size_t)k : 0;
    }
    snprintf(err, errlen, "unknown command '%s' (expected one of %s)", verb, list);
}

/* "WORD VALUE" for a settings row set by CMD_SETTING: the flag's values
 * and range. 0 or -1. */
static int parse_generic(const ns_setting *s, const char *verb, const char *arg, ns_command *c,
                         char *err, size_t errlen)
{
    double x;
    char why[160];
    if (!arg[0]) {
        snprintf(err, errlen, "'%s' needs a value", verb);
        return -1;
    }
    if (settings_parse_number(s, arg, &x, why, sizeof why) != 0) {
        snprintf(err, errlen, "'%s %s': %s", verb, arg, why);
        return -1;
    }
    *c = command_set_setting(s, x);
    return 0;
}

int command_parse(const char *line, ns_command *c, char *err, size_t errlen)
{
    char verb[32], arg[NS_CMD_TEXT];
    memset(c, 0, sizeof *c);
    if (split(line, verb, sizeof verb, arg, sizeof arg, err, errlen) != 0)
        return -1;
    int i = 0;
    while (i < N_COMMANDS && strcmp(command_word(i), verb))
        i++;
    if (i == N_COMMANDS) {
        const ns_setting *s = generic_row(verb);
        if (s)
            return parse_generic(s, verb, arg, c, err, errlen);
        unknown(verb, err, errlen);
        return -1;
    }
    if (commands[i].takes && !(commands[i].takes & TAKES_MAYBE) && !arg[0]) {
        snprintf(err, errlen, "'%s' needs a value", verb);
        return -1;
    }
    if (!commands[i].takes && arg[0]) {
        snprintf(err, errlen, "'%s' takes no value", verb);
        return -1;
    }
    c->kind = commands[i].kind;
    if (commands[i].takes && command_value_of(i, arg, c) != 0) {
        snprintf(err, errlen, "'%s %s': bad value (see normscope(1), SCRIPTS)", verb, arg);
        return -1;
    }
    return 0;
}

/* One script line t (comment cut, blanks trimmed, not empty) into en.
 * 0, or -1 with "NAME:LINE: reason" in err. */
static int script_line(const char *t, const char *name, int lineno, script_entry *en, char *err,
                       size_t errlen)
{
    memset(en, 0, sizeof *en);
    en->at = -1;
    char kw[8];
    long val;
    int used = 0;
    if (sscanf(t, "%7[a-z] %ld :%n", kw, &val, &used) < 2 || used == 0 ||
        (strcmp(kw, "at") && strcmp(kw, "every"))) {
        snprintf(err, errlen, "%s:%d: expected 'at N: COMMAND' or 'every N: COMMAND'", name,
                 lineno);
        return -1;
    }
    if (!strcmp(kw, "at") && val < 0) {
        snprintf(err, errlen, "%s:%d: 'at %ld': the step must be 0 or more", name, lineno, val);
        return -1;
    }
    if (!strcmp(kw, "every") && val <= 0) {
        snprintf(err, errlen, "%s:%d: 'every %ld': the interval must be 1 or more", name,
                 lineno, val);
        return -1;
    }
    if (!strcmp(kw, "at"))
        en->at = val;
    else
        en->every = val;
    const char *cmd = t + used;
    while (isspace((unsigned char)*cmd))
        cmd++;
    if ((cmd[0] == 'a' || cmd[0] == 'b') && cmd[1] == ':') { /* the run it acts on */
        en->target = cmd[0] == 'a' ? 1 : 2;
        cmd += 2;
    }
    char why[256];
    if (command_parse(cmd, &en->cmd, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s:%d: %s", name, lineno, why);
        return -1;
    }
    return 0;
}

/* Append en to s, growing it. 0, or -1 (out of memory). */
static int script_push(ns_script *s, int *cap, const script_entry *en)
{
    if (s->n == *cap) {
        int nc = *cap ? *cap * 2 : 16;
        script_entry *ne = realloc(s->e, (size_t)nc * sizeof *ne);
        if (!ne)
            return -1;
        s->e = ne;
        *cap = nc;
    }
    s->e[s->n++] = *en;
    return 0;
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
        if (script_line(t, name, lineno, &en, err, errlen) != 0) {
            script_free(s);
            return -1;
        }
        if (script_push(s, &cap, &en) != 0) {
            snprintf(err, errlen, "%s: out of memory", name);
            script_free(s);
            return -1;
        }
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
