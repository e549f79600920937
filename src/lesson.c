/* lesson.c - the compiled-in lessons, a teacher's lesson file, their
 * parser and checker, and the choice of a lesson's lines that hold for
 * the run's settings ("if layers=24: ...").
 * Not here: running a lesson (main.c, the trainer's script). */
#include "lesson.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "settings.h"
#include "sweep_spec.h"

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

/* Where a lesson's flags, compare and reveal were written, so that what
 * the command line's parser says of them points into the file. */
#define LESSON_FLAG_LINES 32
typedef struct {
    int n;                             /* flags lines */
    int line[LESSON_FLAG_LINES];       /* each one's number */
    size_t end[LESSON_FLAG_LINES];     /* l->flags's length after it */
    int compare_line, reveal_line, sweep_line;
} lesson_lines;

/* "reveal: N" (N > 0: hidden until the run passes step N) or "reveal:
 * key". 0, or -1 with the reason. */
static int reveal_value(const char *v, long *out, char *why, size_t n)
{
    if (!strcmp(v, "key")) {
        *out = LESSON_REVEAL_KEY;
        return 0;
    }
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (end == v || *end || errno || x < 1 || x > 1000000000L) {
        snprintf(why, n, "reveal '%s': expected a step (1 or more) or 'key'", v);
        return -1;
    }
    *out = x;
    return 0;
}

/* One "key: value" line (t, blanks trimmed at its start) into l. 0, or -1
 * with "NAME:LINE: reason" in err. */
static int lesson_key(ns_lesson *l, lesson_lines *ll, char *t, const char *name, int lineno,
                      char *err, size_t errlen)
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
    char why[160];
    /* one twin, one grid, one reveal: a second line would replace the
     * first without a word */
    const int *once = !strcmp(t, "compare") ? &ll->compare_line
                      : !strcmp(t, "sweep") ? &ll->sweep_line
                      : !strcmp(t, "reveal") ? &ll->reveal_line
                                              : NULL;
    if (once && *once) {
        snprintf(err, errlen, "%s:%d: a second %s line (the first is line %d; a lesson has one)",
                 name, lineno, t, *once);
        return -1;
    }
    if (!strcmp(t, "title"))
        snprintf(l->title, sizeof l->title, "%s", v);
    else if (!strcmp(t, "flags")) {
        if (ll->n == LESSON_FLAG_LINES || strlen(l->flags) + strlen(v) + 2 > sizeof l->flags) {
            snprintf(err, errlen, "%s:%d: too many flags (at most %zu characters in %d lines)",
                     name, lineno, sizeof l->flags - 1, LESSON_FLAG_LINES);
            return -1;
        }
        append(l->flags, sizeof l->flags, v);
        ll->line[ll->n] = lineno;
        ll->end[ll->n++] = strlen(l->flags);
    } else if (!strcmp(t, "compare")) {
        snprintf(l->compare, sizeof l->compare, "%s", v);
        ll->compare_line = lineno;
    } else if (!strcmp(t, "sweep")) {
        snprintf(l->sweep, sizeof l->sweep, "%s", v);
        ll->sweep_line = lineno;
    } else if (!strcmp(t, "reveal")) {
        if (reveal_value(v, &l->reveal, why, sizeof why) != 0) {
            snprintf(err, errlen, "%s:%d: %s", name, lineno, why);
            return -1;
        }
        ll->reveal_line = lineno;
    } else if (!strcmp(t, "text"))
        append(l->text, sizeof l->text, v);
    else if (!strcmp(t, "cite"))
        append(l->cite, sizeof l->cite, v);
    else {
        snprintf(err, errlen,
                 "%s:%d: unknown key '%s' (expected title, flags, compare, sweep, reveal, "
                 "text, cite, at or every)",
                 name, lineno, t);
        return -1;
    }
    return 0;
}

/* A sweep's runs are headless children: no twin, and no command reaches
 * them. Its at lines are what its view shows, "at N" once N of its runs
 * have ended: notes, and questions (pause PROMPT), which stop nothing.
 * all: every script line of the file on its own line number (the others
 * empty), whatever its condition. */
static int lesson_sweep_mixed(const ns_lesson *l, const lesson_lines *ll, const char *all,
                              const char *name, char *err, size_t errlen)
{
    if (!l->sweep[0])
        return 0;
    if (l->compare[0] || l->reveal) {
        snprintf(err, errlen, "%s:%d: a sweep lesson takes no %s line (its runs are headless, "
                 "one per cell)", name, l->compare[0] ? ll->compare_line : ll->reveal_line,
                 l->compare[0] ? "compare" : "reveal");
        return -1;
    }
    int lineno = 0;
    for (const char *p = all; *p; p += strcspn(p, "\n") + (p[strcspn(p, "\n")] == '\n')) {
        lineno++;
        size_t len = strcspn(p, "\n");
        char line[2048];
        if (len == 0 || len >= sizeof line)
            continue;
        memcpy(line, p, len);
        line[len] = 0;
        ns_script one;
        if (command_script_parse(line, name, &one, err, errlen) != 0)
            return -1;
        const script_entry *e = one.n ? &one.e[0] : NULL;
        int shown = e && (e->cmd.kind == CMD_NOTE || (e->cmd.kind == CMD_PAUSE && e->cmd.text[0]));
        int bad = e && (e->every > 0 || e->target != 0 || !shown);
        command_script_free(&one);
        if (bad) {
            snprintf(err, errlen, "%s:%d: a sweep lesson's lines are 'at N: note TEXT' and 'at N: "
                     "pause QUESTION' (N: runs ended), shown by its view", name, lineno);
            return -1;
        }
    }
    return 0;
}

/* The words of flags (NUL-ended, cut in place) after av[0] = argv0, then
 * extra (NULL-ended, may be NULL); the count. av has room for
 * LESSON_MAX_WORDS. */
int lesson_words(char *argv0, char *words, char **av, const char *const *extra)
{
    int n = 0;
    av[n++] = argv0;
    for (char *t = strtok(words, " \t\n"); t && n < LESSON_MAX_WORDS - 3; t = strtok(NULL, " \t\n"))
        av[n++] = t;
    for (int i = 0; extra && extra[i] && n < LESSON_MAX_WORDS - 1; i++)
        av[n++] = (char *)extra[i];
    av[n] = NULL;
    return n;
}

/* Flags a lesson's flags line cannot hold, and why. */
static const char *const not_flags[][2] = {
    {"lesson", "a lesson cannot start another"},
    {"check-lesson", "a lesson cannot start another"},
    {"compare", "write it as a compare: line"},
    {"sweep", "write it as a sweep: line"},
    {"sweep-collect", "it trains nothing"},
    {"plot", "it trains nothing"},
    {"follow", "it trains nothing"},
};

/* What a lesson from someone else must not do: name a file to read or
 * write (a row marked SETF_FILE: a classmate's lesson could overwrite
 * ~/thesis.txt with a CSV), or start more sweep runs at once than this
 * machine has cores. 0, or 2 with the line in e. */
static int untrusted_flag(const cli_opts *o, FILE *e)
{
    for (int i = 0; i < settings_count(); i++) {
        const ns_setting *s = settings_row(i);
        if ((s->flags & SETF_FILE) && cli_given(o, s->name)) {
            fprintf(e, "--%s is not a lesson's flag: it names a file, and a lesson holds settings, "
                    "never paths (give --%s on the command line)\n", s->name, s->name);
            return 2;
        }
    }
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cli_given(o, "jobs") && cores > 0 && o->jobs > cores) {
        fprintf(e, "--jobs %d is more than this machine's %ld cores: not a lesson's flag above "
                "that (give it on the command line)\n", o->jobs, cores);
        return 2;
    }
    return 0;
}

/* The first line of what the parser wrote, without its "normscope: ". */
static void parser_said(char *buf, size_t len, char *msg, size_t n)
{
    const char *m = buf && len ? buf : "refused";
    if (!strncmp(m, "normscope: ", 11))
        m += 11;
    snprintf(msg, n, "%.*s", (int)strcspn(m, "\n"), m);
}

/* The first len bytes of flags, and extra (NULL-ended), through the
 * command line's parser as a run would take them, into o (which points
 * into nothing that lasts: read its cfg only). 0, or -1 with what the
 * parser said in msg. */
static int flags_parse(const char *flags, size_t len, const char *const *extra, cli_opts *o,
                       char *msg, size_t n)
{
    char words[sizeof ((ns_lesson *)0)->flags], *av[LESSON_MAX_WORDS];
    snprintf(words, sizeof words, "%.*s", (int)len, flags);
    lesson_words("normscope", words, av, extra);
    int ac = 0;
    while (av[ac])
        ac++;
    char *buf = NULL, *obuf = NULL;
    size_t blen = 0, olen = 0;
    FILE *e = open_memstream(&buf, &blen), *out = open_memstream(&obuf, &olen);
    if (!e || !out) {
        snprintf(msg, n, "out of memory");
        if (e)
            fclose(e);
        if (out)
            fclose(out);
        free(buf);
        free(obuf);
        return -1;
    }
    int r = cli_parse(o, ac, av, out, e);
    for (size_t i = 0; r == 0 && i < sizeof not_flags / sizeof not_flags[0]; i++)
        if (cli_given(o, not_flags[i][0])) {
            fprintf(e, "--%s is not a lesson's flag: %s\n", not_flags[i][0], not_flags[i][1]);
            r = 2;
        }
    if (r == 0)
        r = untrusted_flag(o, e);
    if (r == 0)
        r = cli_check_applies(o, &o->cfg, e) == 2 ? 2 : 0;
    if (r == 1)
        fprintf(e, "--help and --version print and exit: not a lesson's flags\n");
    fclose(out);
    fclose(e);
    if (r)
        parser_said(buf, blen, msg, n);
    free(buf);
    free(obuf);
    return r ? -1 : 0;
}

/* A twin that differs in nothing (the compare's value is run a's own,
 * a default the flags do not change) compares a run with itself. */
static int compare_same(const char *spec, const ns_config *a, const ns_config *b,
                        const char *name, int line, char *err, size_t errlen)
{
    const ns_setting *s = settings_find(spec, strcspn(spec, "="));
    char va[96], vb[96];
    settings_format(s, a, va, sizeof va);
    settings_format(s, b, vb, sizeof vb);
    if (strcmp(va, vb))
        return 0;
    snprintf(err, errlen, "%s:%d: compare: %s: run a's %s is %s already (its flags or the "
             "default), so the two runs would not differ", name, line, spec, s->name, va);
    return -1;
}

/* The flags, the compare and the sweep's values as the command line's
 * parser takes them, each error on its own line of the file: a flag's on
 * the first flags line that, with those before it, makes the parser say
 * what it says of them all. */
static int lesson_check_flags(const ns_lesson *l, const lesson_lines *ll, const char *name,
                              long *steps, char *err, size_t errlen)
{
    cli_opts o;
    char msg[400], m2[400];
    *steps = 0;
    if (flags_parse(l->flags, strlen(l->flags), NULL, &o, msg, sizeof msg) != 0) {
        int at = ll->n ? ll->line[ll->n - 1] : 0;
        /* a prefix that ends in a flag whose value is on a later line is
         * cut there, not wrong: "--norm needs a value" of the whole text
         * is its last word's, on the last flags line */
        for (int k = 0; k < ll->n; k++)
            if (flags_parse(l->flags, ll->end[k], NULL, &o, m2, sizeof m2) != 0 && !strcmp(m2, msg) &&
                (k == ll->n - 1 || !strstr(m2, " needs a value"))) {
                at = ll->line[k];
                break;
            }
        snprintf(err, errlen, "%s:%d: flags: %s", name, at, msg);
        return -1;
    }
    *steps = cli_given(&o, "steps") ? o.cfg.steps : 0;
    if (l->compare[0]) {
        ns_config twin = o.cfg;
        char *buf = NULL;
        size_t blen = 0;
        FILE *e = open_memstream(&buf, &blen);
        int bad = !e || cli_apply_setting(&twin, l->compare, e) != 0;
        if (e)
            fclose(e);
        if (bad) {
            parser_said(buf, blen, msg, sizeof msg);
            snprintf(err, errlen, "%s:%d: compare: %s", name, ll->compare_line, msg);
        }
        free(buf);
        if (bad || compare_same(l->compare, &o.cfg, &twin, name, ll->compare_line, err, errlen))
            return -1;
    }
    if (l->reveal && !l->compare[0]) {
        snprintf(err, errlen, "%s:%d: reveal: the lesson has no compare line, so no run b to hide",
                 name, ll->reveal_line);
        return -1;
    }
    if (!l->sweep[0])
        return 0;
    sweep_spec sp;
    if (sweep_spec_parse(l->sweep, &sp, msg, sizeof msg) != 0) {
        snprintf(err, errlen, "%s:%d: sweep: %s", name, ll->sweep_line, msg);
        return -1;
    }
    int r = 0;
    for (int i = 0; !r && i < sp.n_axes; i++)
        for (int j = 0; !r && j < sp.axis[i].n; j++) {
            char flag[SWEEP_NAME_MAX + 2];
            snprintf(flag, sizeof flag, "--%s", sp.axis[i].name);
            const char *const ex[] = {flag, sp.axis[i].v[j], NULL};
            if (flags_parse(l->flags, strlen(l->flags), ex, &o, msg, sizeof msg) != 0) {
                snprintf(err, errlen, "%s:%d: sweep: %s", name, ll->sweep_line, msg);
                r = -1;
            }
        }
    sweep_spec_free(&sp);
    return r;
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

/* What the script parser accepts but a lesson cannot mean, each on its
 * line of all (every script line on its file line, whatever its
 * condition): a step past the lesson's own --steps (0: not given, a live
 * run goes on), which never comes, and a pause with no question, which
 * leaves the lesson panel empty. A sweep's "at N" counts ended runs. */
static int lesson_script_sense(const char *all, const char *name, long steps, int sweep,
                               char *err, size_t errlen)
{
    int lineno = 0;
    for (const char *p = all, *next; *p; p = next) {
        lineno++;
        size_t len = strcspn(p, "\n");
        next = p + len + (p[len] == '\n');
        char line[2048], why[256];
        snprintf(line, sizeof line, "%.*s", (int)len, p);
        ns_script one;
        if (!len || command_script_parse(line, name, &one, why, sizeof why) != 0)
            continue; /* lesson_scripts named what it refused */
        if (one.n != 1) {
            command_script_free(&one);
            continue;
        }
        script_entry e = one.e[0];
        command_script_free(&one);
        long n = e.at >= 0 ? e.at : e.every;
        if (!sweep && steps > 0 && n > steps) {
            snprintf(err, errlen, "%s:%d: %s %ld: past the lesson's last step (--steps %ld): it would "
                     "never happen", name, lineno, e.at >= 0 ? "at" : "every", n, steps);
            return -1;
        }
        if (e.cmd.kind == CMD_PAUSE && !e.cmd.text[0]) {
            snprintf(err, errlen, "%s:%d: a pause with no question: a lesson's pause shows its "
                     "question ('at %ld: pause QUESTION')", name, lineno, n);
            return -1;
        }
    }
    return 0;
}

/* Every script line checked (all), the kept ones (kept) parsed into s. */
static int lesson_scripts(const char *all, const char *kept, const char *name, ns_script *s,
                          char *err, size_t errlen)
{
    ns_script check;
    if (command_script_parse(all, name, &check, err, errlen) != 0)
        return -1;
    command_script_free(&check);
    return command_script_parse(kept, name, s, err, errlen);
}

int lesson_parse(const char *text, const char *name, ns_lesson *l, char *err, size_t errlen)
{
    return lesson_parse_for(text, name, NULL, NULL, 0, l, err, errlen);
}

/* The text line by line: each key line into l (lesson_key) where its
 * condition holds; the script lines into script (those whose condition
 * holds) and into all (every one, so that a line for another setting is
 * checked too), each buffer a line out for a line in so the script
 * parser's line numbers point into the lesson file. Both buffers hold
 * strlen(text) + 2 bytes: each line comes out as at most itself plus a
 * newline, the last one too when the text does not end in one; then a NUL. */
static int split_lines(const char *text, const char *name, const ns_config *const run[2],
                       int own, ns_lesson *l, lesson_lines *ll, char *script, char *all,
                       char *err, size_t errlen)
{
    size_t sn = 0, an = 0;
    int lineno = 0;
    for (const char *p = text; *p;) {
        lineno++;
        size_t len = strcspn(p, "\n");
        char line[2048];
        if (len >= sizeof line) {
            snprintf(err, errlen, "%s:%d: line too long", name, lineno);
            return -1;
        }
        memcpy(line, p, len);
        line[len] = 0;
        p += len + (p[len] == '\n');
        char *t = line;
        while (isspace((unsigned char)*t))
            t++;
        l->lines += *t && *t != '#';
        int keep = *t == '#' ? 1 : line_cond(t, &t, run, own, name, lineno, err, errlen);
        int is_script = !strncmp(t, "at ", 3) || !strncmp(t, "every ", 6);
        if (keep < 0 || (keep && !is_script && *t && *t != '#' &&
                         lesson_key(l, ll, t, name, lineno, err, errlen) != 0))
            return -1;
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
    }
    script[sn] = 0;
    all[an] = 0;
    /* flags are one line for the command line: newlines become spaces */
    for (char *f = l->flags; *f; f++)
        if (*f == '\n')
            *f = ' ';
    return 0;
}

int lesson_parse_for(const char *text, const char *name, const ns_config *cfg,
                     const ns_config *cfg_b, int own, ns_lesson *l, char *err, size_t errlen)
{
    const ns_config *const run[2] = {cfg, cfg_b};
    lesson_lines ll = {0};
    memset(l, 0, sizeof *l);
    snprintf(l->name, sizeof l->name, "%s", name);
    size_t tl = strlen(text);
    char *script = malloc(tl + 2), *all = malloc(tl + 2);
    int r = -1;
    if (!script || !all)
        snprintf(err, errlen, "%s: out of memory", name);
    else if (split_lines(text, name, run, own, l, &ll, script, all, err, errlen) == 0)
        r = lesson_scripts(all, script, name, &l->script, err, errlen);
    free(script);
    long steps = 0;
    if (r == 0 && (!l->title[0] || lesson_sweep_mixed(l, &ll, all, name, err, errlen) ||
                   lesson_check_flags(l, &ll, name, &steps, err, errlen) ||
                   lesson_script_sense(all, name, steps, l->sweep[0] != 0, err, errlen))) {
        if (!l->title[0])
            snprintf(err, errlen, "%s: no title", name);
        command_script_free(&l->script);
        r = -1;
    }
    free(all);
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

int lesson_is_file(const char *arg)
{
    size_t n = strlen(arg);
    return strchr(arg, '/') != NULL || (n > 7 && !strcmp(arg + n - 7, ".lesson"));
}

/* A lesson file's text (free it), or NULL with "PATH: why" in err. */
#define LESSON_FILE_MAX (64 * 1024)
static char *read_lesson_file(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "--lesson %s: %s", path, strerror(errno));
        return NULL;
    }
    char *text = malloc(LESSON_FILE_MAX + 1);
    size_t n = text ? fread(text, 1, LESSON_FILE_MAX + 1, f) : 0;
    int bad = ferror(f);
    fclose(f);
    const char *why = !text ? "out of memory" : bad ? "could not be read"
                      : n > LESSON_FILE_MAX ? "larger than 64 KiB: not a lesson"
                      : memchr(text, 0, n) ? "holds a NUL byte: not a text file" : NULL;
    if (why) {
        snprintf(err, errlen, "--lesson %s: %s", path, why);
        free(text);
        return NULL;
    }
    text[n] = 0;
    return text;
}

/* A lesson file's name: its base name without ".lesson". */
static void file_lesson_name(const char *path, char *name, size_t n)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t len = strlen(base);
    if (len > 7 && !strcmp(base + len - 7, ".lesson"))
        len -= 7;
    snprintf(name, n, "%.*s", (int)len, base);
}

int lesson_load_for(const char *name, const ns_config *cfg, const ns_config *cfg_b, int own,
                    ns_lesson *l, char *err, size_t errlen)
{
    if (lesson_is_file(name)) {
        char *text = read_lesson_file(name, err, errlen);
        if (!text)
            return -1;
        int r = lesson_parse_for(text, name, cfg, cfg_b, own, l, err, errlen);
        free(text);
        file_lesson_name(name, l->name, sizeof l->name);
        snprintf(l->src, sizeof l->src, "%s", name);
        return r;
    }
    for (int i = 0; i < ns_lessons_count; i++) {
        if (strcmp(ns_lessons[i].name, name))
            continue;
        char path[64];
        snprintf(path, sizeof path, "lessons/%s.lesson", name);
        int r = lesson_parse_for((const char *)ns_lessons[i].data, path, cfg, cfg_b, own, l,
                                 err, errlen);
        snprintf(l->name, sizeof l->name, "%s", name);
        snprintf(l->src, sizeof l->src, "%s", name);
        return r;
    }
    size_t n = (size_t)snprintf(err, errlen, "--lesson '%s': no such lesson (", name);
    for (int i = 0; i < ns_lessons_count && n < errlen; i++)
        n += (size_t)snprintf(err + n, errlen - n, "%s%s", i ? ", " : "", ns_lessons[i].name);
    if (n < errlen)
        snprintf(err + n, errlen - n, "; a file: a path with a '/' or a name ending in .lesson)");
    return -1;
}

int lesson_check(const char *arg, FILE *out, FILE *err)
{
    ns_lesson l;
    char why[512];
    if (lesson_load(arg, &l, why, sizeof why) != 0) {
        /* the loader names --lesson, the flag that usually reads a lesson;
         * here the user typed --check-lesson */
        int flag = !strncmp(why, "--lesson ", 9);
        fprintf(err, "normscope: %s%s\n", flag ? "--check-lesson " : "", flag ? why + 9 : why);
        return 2;
    }
    char what[160] = "one run";
    if (l.sweep[0])
        snprintf(what, sizeof what, "a sweep: %.140s", l.sweep);
    else if (l.compare[0])
        snprintf(what, sizeof what, "two runs, b: %s", l.compare);
    char hid[64] = "";
    if (l.reveal == LESSON_REVEAL_KEY)
        snprintf(hid, sizeof hid, "; run b hidden until B");
    else if (l.reveal)
        snprintf(hid, sizeof hid, "; run b hidden until step %ld", l.reveal);
    fprintf(out, "%s: ok: %s (%.160s%s; %d lines checked)\n", arg, l.title, what, hid,
            l.lines);
    lesson_free(&l);
    return 0;
}

void lesson_free(ns_lesson *l) { command_script_free(&l->script); }

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
