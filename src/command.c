/* command.c - applying mid-run commands to an engine, and parsing them
 * from script lines. No threads, no curses. */
#include "command.h"

#include "settings.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
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

static int whole_values(setting_type t)
{
    return t == SET_INT || t == SET_ENUM || t == SET_ONOFF || t == SET_AUTO || t == SET_PRESENCE;
}

ns_command command_setting(const ns_setting *s, command_how how, double x)
{
    ns_command c = command_make(CMD_SETTING);
    c.setting = settings_index(s);
    c.how = how;
    if (how == CMDH_SET && whole_values(s->type)) {
        c.v.type = CMDV_INT;
        c.v.u.i = (int)x;
    } else if (how == CMDH_SET || how == CMDH_SCALE) {
        c.v.type = CMDV_REAL;
        c.v.u.x = x;
    }
    return c;
}

double command_number(const ns_command *c)
{
    return c->v.type == CMDV_INT ? c->v.u.i : c->v.type == CMDV_REAL ? c->v.u.x : 0.0;
}

const ns_setting *command_row(const ns_command *c)
{
    const ns_setting *s = c->kind == CMD_SETTING ? settings_row(c->setting) : NULL;
    return s && s->cmd ? s : NULL;
}

/* The value c gives its row in e, from the one in force: a toggle's other
 * value, the next name, a factor times the value, or the value itself. */
static double new_value(const engine *e, const ns_setting *s, const ns_command *c)
{
    double now = engine_setting_value(e, s);
    switch (c->how) {
    case CMDH_TOGGLE: return now == s->toggle[0] ? s->toggle[1] : s->toggle[0];
    case CMDH_CYCLE: return s->n_names > 0 ? (double)(((int)now + 1) % s->n_names) : now;
    case CMDH_SCALE: return now * command_number(c);
    default: return command_number(c);
    }
}

int command_apply(engine *e, const ns_command *c)
{
    switch (c->kind) {
    case CMD_SETTING:
        if (!command_row(c))
            return CMD_FAILED;
        engine_set_setting(e, command_row(c), new_value(e, command_row(c), c));
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
        return (c->v.type == CMDV_REAL ? engine_rewind_before(e, (long)c->v.u.x)
                                       : engine_rewind(e)) < 0
                   ? CMD_FAILED
                   : CMD_APPLIED;
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
    TAKES_TEXT = 1 << 0,  /* the rest of the line */
    TAKES_MAYBE = 1 << 1, /* ... or nothing: the value may be left out */
};

/* The commands that are no setting; a setting's command is its row's
 * (settings.h: the row's command word and mid-run behaviour). */
static const struct {
    command_kind kind;
    const char *word;
    unsigned takes;
} commands[] = {
    {CMD_REINIT, "reinit", 0},
    {CMD_SNAPSHOT, "snapshot", 0},
    {CMD_REWIND, "rewind", 0},
    {CMD_FIX, "fix", 0},
    {CMD_NOTE, "note", TAKES_TEXT},
    {CMD_PAUSE, "pause", TAKES_TEXT | TAKES_MAYBE}, /* a lesson's question, or none */
    {CMD_RESUME, "resume", 0},
    {CMD_STEP, "step", 0},
    {CMD_STOP, "stop", 0},
};
enum { N_COMMANDS = sizeof commands / sizeof commands[0] };

static int num(const char *s, double *x)
{
    char *end;
    errno = 0;
    *x = strtod(s, &end);
    return end != s && !*end && errno != ERANGE && isfinite(*x) ? 0 : -1;
}

/* A setting's value after its word: the flag's values and range, but
 * for SETL_UNBOUNDED numbers the lower bound only. 0, or -1 with what is
 * allowed in why ("" when the row does not say). */
static int row_value(const ns_setting *s, const char *arg, double *x, char *why, size_t whylen)
{
    why[0] = 0;
    int number = s->type == SET_REAL ||
                 (s->type == SET_LOSS_SCALE && strcmp(arg, "dynamic") && strcmp(arg, "off"));
    if ((s->live & SETL_UNBOUNDED) && number) {
        if (num(arg, x) == 0 && *x >= s->lo && *x <= FLT_MAX) /* stored as a float */
            return 0;
        settings_allowed(s, why, whylen);
        return -1;
    }
    return settings_parse_number(s, arg, x, why, whylen);
}

/* The words a row's command takes besides a value, "; or toggle, next",
 * for its error line; "" for none. */
static void live_words(const ns_setting *s, char *buf, size_t len)
{
    static const struct {
        unsigned flag;
        const char *word;
    } words[] = {{SETL_TOGGLE, "toggle"}, {SETL_CYCLE, "next"}, {SETL_SCALE, "xF, /F"},
                 {SETL_OFF, "off"}};
    size_t at = 0;
    buf[0] = 0;
    for (size_t i = 0; i < sizeof words / sizeof words[0] && at < len; i++)
        if (s->live & words[i].flag) {
            int k = snprintf(buf + at, len - at, "%s%s", at ? ", " : "; or ", words[i].word);
            at += k > 0 ? (size_t)k : 0;
        }
}

/* "WORD ARG" for the settings row s into c. 0, or -1 with the reason. */
static int parse_setting(const ns_setting *s, const char *verb, const char *arg, ns_command *c,
                         char *err, size_t errlen)
{
    double x;
    char why[160];
    if (!arg[0]) {
        snprintf(err, errlen, "'%s' needs a value", verb);
        return -1;
    }
    if ((s->live & SETL_TOGGLE) && !strcmp(arg, "toggle"))
        return *c = command_setting(s, CMDH_TOGGLE, 0), 0;
    if ((s->live & SETL_CYCLE) && !strcmp(arg, "next"))
        return *c = command_setting(s, CMDH_CYCLE, 0), 0;
    if ((s->live & SETL_OFF) && !strcmp(arg, "off"))
        return *c = command_setting(s, CMDH_SET, 0), 0;
    if ((s->live & SETL_SCALE) && (arg[0] == 'x' || arg[0] == '*' || arg[0] == '/')) {
        if (num(arg + 1, &x) == 0 && x > 0)
            return *c = command_setting(s, CMDH_SCALE, arg[0] == '/' ? 1.0 / x : x), 0;
        snprintf(err, errlen, "'%s %s': expected a factor above 0", verb, arg);
        return -1;
    }
    if (row_value(s, arg, &x, why, sizeof why) == 0)
        return *c = command_setting(s, CMDH_SET, x), 0;
    char more[64];
    live_words(s, more, sizeof more);
    snprintf(err, errlen, "'%s %s': %s%s", verb, arg, why, more);
    return -1;
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

static void unknown(const char *verb, char *err, size_t errlen)
{
    char list[600];
    size_t at = 0;
    for (int i = 0; i < settings_count() && at < sizeof list; i++) {
        const ns_setting *s = settings_row(i);
        int k = s->cmd ? snprintf(list + at, sizeof list - at, "%s%s", at ? ", " : "", s->cmd) : 0;
        at += k > 0 ? (size_t)k : 0;
    }
    for (int i = 0; i < N_COMMANDS && at < sizeof list; i++) {
        int k = snprintf(list + at, sizeof list - at, ", %s", commands[i].word);
        at += k > 0 ? (size_t)k : 0;
    }
    snprintf(err, errlen, "unknown command '%s' (expected one of %s)", verb, list);
}

int command_parse(const char *line, ns_command *c, char *err, size_t errlen)
{
    char verb[32], arg[NS_CMD_TEXT];
    memset(c, 0, sizeof *c);
    if (split(line, verb, sizeof verb, arg, sizeof arg, err, errlen) != 0)
        return -1;
    const ns_setting *s = settings_find_cmd(verb);
    if (s)
        return parse_setting(s, verb, arg, c, err, errlen);
    int i = 0;
    while (i < N_COMMANDS && strcmp(commands[i].word, verb))
        i++;
    if (i == N_COMMANDS) {
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
    if (commands[i].takes & TAKES_TEXT)
        snprintf(c->text, sizeof c->text, "%s", arg);
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

int command_script_parse(const char *text, const char *name, ns_script *s, char *err, size_t errlen)
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
            command_script_free(s);
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
            command_script_free(s);
            return -1;
        }
        if (script_push(s, &cap, &en) != 0) {
            snprintf(err, errlen, "%s: out of memory", name);
            command_script_free(s);
            return -1;
        }
    }
    return 0;
}

int command_script_load(const char *path, ns_script *s, char *err, size_t errlen)
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
    r = command_script_parse((const char *)buf, path, s, err, errlen);
    free(buf);
    return r;
}

void command_script_free(ns_script *s)
{
    free(s->e);
    memset(s, 0, sizeof *s);
}

void command_script_due(ns_script *s, long done,
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
