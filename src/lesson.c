/* lesson.c - the compiled-in lessons and their parser. */
#include "lesson.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

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

/* A sweep's runs are headless children: no twin, no script to drive. */
static int lesson_sweep_mixed(const ns_lesson *l, const char *name, char *err, size_t errlen)
{
    if (!l->sweep[0] || (!l->compare[0] && l->script.n == 0))
        return 0;
    snprintf(err, errlen, "%s: a sweep lesson takes no %s (its runs are headless, one per cell)",
             name, l->compare[0] ? "compare line" : "at or every lines");
    return -1;
}

int lesson_parse(const char *text, const char *name, ns_lesson *l, char *err, size_t errlen)
{
    memset(l, 0, sizeof *l);
    snprintf(l->name, sizeof l->name, "%s", name);
    /* the script lines go to the script parser together, keeping their
     * line numbers so its messages point into the lesson file */
    size_t tl = strlen(text);
    /* each line of the text comes out as at most itself plus a newline,
     * the last one too when the text does not end in one; then a NUL */
    char *script = malloc(tl + 2);
    if (!script) {
        snprintf(err, errlen, "%s: out of memory", name);
        return -1;
    }
    size_t sn = 0;
    int lineno = 0;
    const char *p = text;
    while (*p) {
        lineno++;
        size_t len = strcspn(p, "\n");
        char line[2048];
        if (len >= sizeof line) {
            snprintf(err, errlen, "%s:%d: line too long", name, lineno);
            free(script);
            return -1;
        }
        memcpy(line, p, len);
        line[len] = 0;
        const char *next = p + len + (p[len] == '\n');
        char *t = line;
        while (isspace((unsigned char)*t))
            t++;
        int is_script = !strncmp(t, "at ", 3) || !strncmp(t, "every ", 6);
        if (is_script) {
            memcpy(script + sn, p, len);
            sn += len;
        } else if (*t && *t != '#' && lesson_key(l, t, name, lineno, err, errlen) != 0) {
            free(script);
            return -1;
        }
        script[sn++] = '\n'; /* one line out, one line in: numbers stay */
        p = next;
    }
    script[sn] = 0;
    /* flags are one line for the command line: newlines become spaces */
    for (char *f = l->flags; *f; f++)
        if (*f == '\n')
            *f = ' ';
    int r = script_parse(script, name, &l->script, err, errlen);
    free(script);
    if (r == 0 && (!l->title[0] || lesson_sweep_mixed(l, name, err, errlen))) {
        if (!l->title[0])
            snprintf(err, errlen, "%s: no title", name);
        script_free(&l->script);
        return -1;
    }
    return r;
}

int lesson_load(const char *name, ns_lesson *l, char *err, size_t errlen)
{
    for (int i = 0; i < ns_lessons_count; i++) {
        if (strcmp(ns_lessons[i].name, name))
            continue;
        char path[64];
        snprintf(path, sizeof path, "lessons/%s.lesson", name);
        int r = lesson_parse((const char *)ns_lessons[i].data, path, l, err, errlen);
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
