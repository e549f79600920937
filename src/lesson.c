/* lesson.c - the compiled-in lessons and their parser, and the choice of
 * a lesson's lines that hold for the run's settings ("if layers=24: ...").
 * Not here: running a lesson (main.c, the trainer's script). */
#include "lesson.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "settings.h"

extern const struct {
    const char *name;
    const unsigned char *data;
    size_t len;
} ns_lessons[];
extern const int ns_lessons_count;

int lesson_count(void) { return ns_lessons_count; }
const char *lesson_name(int i) { return i >= 0 && i < ns_lessons_count ? ns_lessons[i].name : NULL; }

static void append(char *dst, size_t cap, const char *line)
{
    size_t n = strlen(dst);
    if (n && n + 1 < cap)
        dst[n++] = '\n';
    snprintf(dst + n, cap - n, "%s", line);
}

/* One "key: value" line (t, blanks trimmed at its start) into l. 0, or -1
 * with "NAME:LINE: reason" in err. */
static int lesson_key(ns_lesson *l, char *t, const char *name, int lineno, char *err,
                      size_t errlen)
{
    char *colon = strchr(t, ':');
    if (!colon) {
        snprintf(err, errlen, "%s:%d: expected 'key: value'", name, lineno);
        return -1;
    }
    *colon = 0;
    char *v = colon + 1;
    while (isspace((unsigned char)*v))
        v++;
    if (!strcmp(t, "title"))
        snprintf(l->title, sizeof l->title, "%s", v);
    else if (!strcmp(t, "flags"))
        append(l->flags, sizeof l->flags, v);
    else if (!strcmp(t, "compare"))
        snprintf(l->compare, sizeof l->compare, "%s", v);
    else if (!strcmp(t, "sweep"))
        snprintf(l->sweep, sizeof l->sweep, "%s", v);
    else if (!strcmp(t, "text"))
        append(l->text, sizeof l->text, v);
    else if (!strcmp(t, "cite"))
        append(l->cite, sizeof l->cite, v);
    else {
        snprintf(err, errlen,
                 "%s:%d: unknown key '%s' (expected title, flags, compare, sweep, text, "
                 "cite, at or every)",
                 name, lineno, t);
        return -1;
    }
    return 0;
}

/* A sweep's runs are headless children: no twin, and no command reaches
 * them. Its at lines are what its view shows, "at N" once N of its runs
 * have ended: notes, and questions (pause PROMPT), which stop nothing. */
static int lesson_sweep_mixed(const ns_lesson *l, const char *name, char *err, size_t errlen)
{
    if (!l->sweep[0])
        return 0;
    if (l->compare[0]) {
        snprintf(err, errlen, "%s: a sweep lesson takes no compare line (its runs are headless, "
                 "one per cell)", name);
        return -1;
    }
    for (int i = 0; i < l->script.n; i++) {
        const script_entry *e = &l->script.e[i];
        int shown = e->cmd.kind == CMD_NOTE || (e->cmd.kind == CMD_PAUSE && e->cmd.text[0]);
        if (e->every > 0 || e->target != 0 || !shown) {
            snprintf(err, errlen, "%s: a sweep lesson's lines are 'at N: note TEXT' and 'at N: "
                     "pause QUESTION' (N: runs ended), shown by its view", name);
            return -1;
        }
    }
    return 0;
}

/* Does the run's value of a row equal the value v? A real is compared as
 * the float the config keeps. */
static int cond_value(const ns_setting *s, const ns_config *cfg, double v)
{
    double now = settings_get(s, cfg);
    return s->type == SET_REAL ? (float)now == (float)v : now == v;
}

/* "SETTING=V1,V2" or "SETTING!=V1,V2" (c, NUL-ended, blanks trimmed),
 * "b.SETTING..." for run b's: 1 when it holds for run[0] (run a) or
 * run[1] (b), 0 when not (and when that run's settings are NULL: the
 * lesson's lines without a condition alone), -1 with the reason in why. */
static int cond_holds(char *c, const ns_config *const run[2], int own, char *why,
                      size_t whylen)
{
    const ns_config *cfg = run[0];
    if (!strcmp(c, "own") || !strcmp(c, "!own")) /* the lesson's own settings (lesson.h) */
        return cfg ? own == (c[0] != '!') : 0;
    if (!strncmp(c, "b.", 2)) {
        cfg = run[1];
        c += 2;
    }
    char *eq = strchr(c, '=');
    if (!eq || eq == c) {
        snprintf(why, whylen, "'if %s': expected 'if SETTING=VALUE[,VALUE...]: '", c);
        return -1;
    }
    int negate = eq[-1] == '!';
    size_t nlen = (size_t)(eq - c) - (size_t)negate;
    while (nlen > 0 && isspace((unsigned char)c[nlen - 1]))
        nlen--;
    const ns_setting *s = settings_find(c, nlen);
    if (!s || s->home != SET_IN_CFG || s->type == SET_PATH || s->type == SET_BETAS ||
        s->type == SET_U64 || s->type == SET_ASSIGN) {
        snprintf(why, whylen, "'if %.*s': not a setting a lesson line can depend on", (int)nlen,
                 c);
        return -1;
    }
    int any = 0;
    for (char *v = eq + 1, *end; v; v = end) {
        end = strchr(v, ',');
        if (end)
            *end++ = 0;
        while (isspace((unsigned char)*v))
            v++;
        char *e = v + strlen(v);
        while (e > v && isspace((unsigned char)e[-1]))
            *--e = 0;
        double x;
        char w[160];
        if (settings_parse_number(s, v, &x, w, sizeof w) != 0) {
            snprintf(why, whylen, "'if %s=%s': %s", s->name, v, w);
            return -1;
        }
        any |= cfg && cond_value(s, cfg, x);
    }
    return cfg ? any != negate : 0;
}

/* A line "if COND: ITEM" (t, blanks trimmed at its start): *item is set
 * to ITEM and the result is cond_holds's; a line without "if " is 1. Only
 * the title, text and script lines may depend on a setting: the flags
 * make it. A kept title replaces the one before it, so a lesson gives an
 * unconditional title (the listing's) and then the ones for settings that
 * would make it untrue. */
static int line_cond(char *t, char **item, const ns_config *const run[2], int own,
                     const char *name, int lineno, char *err, size_t errlen)
{
    *item = t;
    if (strncmp(t, "if ", 3))
        return 1;
    char *colon = strchr(t + 3, ':');
    if (!colon) {
        snprintf(err, errlen, "%s:%d: expected 'if SETTING=VALUE: ITEM'", name, lineno);
        return -1;
    }
    *colon = 0;
    char *rest = colon + 1;
    while (isspace((unsigned char)*rest))
        rest++;
    if (strncmp(rest, "text:", 5) && strncmp(rest, "title:", 6) && strncmp(rest, "at ", 3) &&
        strncmp(rest, "every ", 6)) {
        snprintf(err, errlen, "%s:%d: only title, text, at and every lines may start with 'if'",
                 name, lineno);
        return -1;
    }
    char why[256];
    char *c = t + 3;
    while (isspace((unsigned char)*c))
        c++;
    for (char *e = c + strlen(c); e > c && isspace((unsigned char)e[-1]);)
        *--e = 0;
    int r = cond_holds(c, run, own, why, sizeof why);
    if (r < 0)
        snprintf(err, errlen, "%s:%d: %s", name, lineno, why);
    *item = rest;
    return r;
}

/* Every script line checked (all), the kept ones (kept) parsed into s. */
static int lesson_scripts(const char *all, const char *kept, const char *name, ns_script *s,
                          char *err, size_t errlen)
{
    ns_script check;
    if (script_parse(all, name, &check, err, errlen) != 0)
        return -1;
    script_free(&check);
    return script_parse(kept, name, s, err, errlen);
}

int lesson_parse(const char *text, const char *name, ns_lesson *l, char *err, size_t errlen)
{
    return lesson_parse_for(text, name, NULL, NULL, 0, l, err, errlen);
}

int lesson_parse_for(const char *text, const char *name, const ns_config *cfg,
                     const ns_config *cfg_b, int own, ns_lesson *l, char *err, size_t errlen)
{
    const ns_config *const run[2] = {cfg, cfg_b};
    memset(l, 0, sizeof *l);
    snprintf(l->name, sizeof l->name, "%s", name);
    /* the script lines go to the script parser together, keeping their
     * line numbers so its messages point into the lesson file */
    size_t tl = strlen(text);
    /* each line of the text comes out as at most itself plus a newline,
     * the last one too when the text does not end in one; then a NUL */
    char *script = malloc(tl + 2), *all = malloc(tl + 2);
    if (!script || !all) {
        snprintf(err, errlen, "%s: out of memory", name);
        free(script);
        free(all);
        return -1;
    }
    /* all: every script line, whatever its condition, so that a line for
     * another setting is checked too */
    size_t sn = 0, an = 0;
    int lineno = 0;
    const char *p = text;
    while (*p) {
        lineno++;
        size_t len = strcspn(p, "\n");
        char line[2048];
        if (len >= sizeof line) {
            snprintf(err, errlen, "%s:%d: line too long", name, lineno);
            free(script);
            free(all);
            return -1;
        }
        memcpy(line, p, len);
        line[len] = 0;
        const char *next = p + len + (p[len] == '\n');
        char *t = line;
        while (isspace((unsigned char)*t))
            t++;
        int keep = *t == '#' ? 1 : line_cond(t, &t, run, own, name, lineno, err, errlen);
        int is_script = !strncmp(t, "at ", 3) || !strncmp(t, "every ", 6);
        if (keep < 0 || (keep && !is_script && *t && *t != '#' &&
                         lesson_key(l, t, name, lineno, err, errlen) != 0)) {
            free(script);
            free(all);
            return -1;
        }
        if (is_script) {
            size_t n = strlen(t);
            memcpy(all + an, t, n);
            an += n;
            if (keep) {
                memcpy(script + sn, t, n);
                sn += n;
            }
        }
        script[sn++] = '\n'; /* one line out, one line in: numbers stay */
        all[an++] = '\n';
        p = next;
    }
    script[sn] = 0;
    all[an] = 0;
    /* flags are one line for the command line: newlines become spaces */
    for (char *f = l->flags; *f; f++)
        if (*f == '\n')
            *f = ' ';
    int r = lesson_scripts(all, script, name, &l->script, err, errlen);
    free(script);
    free(all);
    if (r == 0 && (!l->title[0] || lesson_sweep_mixed(l, name, err, errlen))) {
        if (!l->title[0])
            snprintf(err, errlen, "%s: no title", name);
        script_free(&l->script);
        return -1;
    }
    return r;
}

void lesson_sweep_line(const script_entry *e, long n, char *buf, size_t len)
{
    if (e->at == 0)
        snprintf(buf, len, "at the start: %s", e->cmd.text);
    else
        snprintf(buf, len, "%ld of %ld ended: %s", e->at, n, e->cmd.text);
}

int lesson_load(const char *name, ns_lesson *l, char *err, size_t errlen)
{
    return lesson_load_for(name, NULL, NULL, 0, l, err, errlen);
}

int lesson_load_for(const char *name, const ns_config *cfg, const ns_config *cfg_b, int own,
                    ns_lesson *l, char *err, size_t errlen)
{
    for (int i = 0; i < ns_lessons_count; i++) {
        if (strcmp(ns_lessons[i].name, name))
            continue;
        char path[64];
        snprintf(path, sizeof path, "lessons/%s.lesson", name);
        int r = lesson_parse_for((const char *)ns_lessons[i].data, path, cfg, cfg_b, own, l,
                                 err, errlen);
        snprintf(l->name, sizeof l->name, "%s", name);
        return r;
    }
    size_t n = (size_t)snprintf(err, errlen, "--lesson '%s': no such lesson (", name);
    for (int i = 0; i < ns_lessons_count && n < errlen; i++)
        n += (size_t)snprintf(err + n, errlen - n, "%s%s", i ? ", " : "", ns_lessons[i].name);
    if (n < errlen)
        snprintf(err + n, errlen - n, ")");
    return -1;
}

void lesson_free(ns_lesson *l) { script_free(&l->script); }

void lesson_list(FILE *f)
{
    for (int i = 0; i < ns_lessons_count; i++) {
        ns_lesson l;
        char err[256];
        if (lesson_parse((const char *)ns_lessons[i].data, ns_lessons[i].name, &l, err,
                         sizeof err) == 0) {
            fprintf(f, "%-18s %s\n", l.name, l.title);
            lesson_free(&l);
        } else {
            fprintf(f, "%-18s (%s)\n", ns_lessons[i].name, err);
        }
    }
}
