/* lesson.h - classroom lessons: a configuration, a timed script and a
 * short text, kept as files in assets/lessons/ and compiled in, or read
 * from a teacher's own file (--lesson PATH: an argument with a '/' or
 * ending in ".lesson" is a file, any other a built-in name).
 *
 * A lesson file is text, one item a line ('#' starts a comment):
 *   title: a one-line title
 *   flags: command-line flags the lesson sets (the user's own flags win)
 *   compare: SETTING=VALUE   a twin run differing in one setting (optional)
 *   sweep: SPEC      the lesson is a grid of headless runs, SPEC as --sweep
 *                    takes it, flags common to every run (optional; such a
 *                    lesson has no compare, and its only script lines are
 *                    "at N: note TEXT" and "at N: pause QUESTION", shown by
 *                    the sweep's view once N of its runs have ended; a
 *                    question there stops no run)
 *   reveal: N | key  run b (the compare's twin) is hidden in the live view
 *                    until the run passes step N, or until the B key (with
 *                    N too, B shows it sooner): the class predicts, then
 *                    sees; headless output is not hidden
 *   text: a line of what to watch (repeatable)
 *   cite: a line of what the literature says (repeatable)
 *   at N: COMMAND / every N: COMMAND   script lines, as in --script
 *   if SETTING=V[,V...]: ITEM   (or !=) a text or script line that holds
 *                    only for those values of run a's setting ("if
 *                    b.SETTING=...": run b's): a question about 24 layers
 *                    is not asked at -L 6
 *   if own: ITEM / if !own: ITEM   a line that holds only when the runs'
 *                    settings are the lesson's own (own: the user's flags
 *                    change none that a checkpoint records, nor the data),
 *                    or only when they are not: what a lesson says of its
 *                    results was measured with its own flags
 *
 * The whole file is checked when it loads, before anything runs: every
 * key, every flags line (by the command line's parser: a typo is named
 * with its line), the compare, every script line and every condition,
 * whatever the settings; an error reads "FILE:LINE: what".
 */
#ifndef NS_LESSON_H
#define NS_LESSON_H

#include <stdio.h>

#include "command.h"
#include "config.h"

/* reveal: key (hidden until the B key) */
#define LESSON_REVEAL_KEY (-1L)

typedef struct {
    char name[32];   /* a built-in's name, or a file's base name without .lesson */
    char src[512];   /* what --lesson named: the built-in's name or the file's path */
    char title[128];
    char flags[512];
    char compare[64];
    char sweep[512];  /* "" = one run (or a comparison), else --sweep's SPEC */
    char text[2048]; /* lines joined with '\n' */
    char cite[1024];
    /* 0: run b shown; N > 0: hidden until the run passes step N;
     * LESSON_REVEAL_KEY: until the B key */
    long reveal;
    int lines; /* the file's lines that are not blank or a comment: all checked */
    ns_script script;
} ns_lesson;

/* Is ARG a lesson file (a path: it holds a '/' or ends in ".lesson")
 * rather than a built-in lesson's name? */
int lesson_is_file(const char *arg);
/* Find a compiled-in lesson by name, or read the file ARG names
 * (lesson_is_file), and parse it. 0, or -1 with a reason (an unknown
 * name lists the known ones; an unreadable file says why). */
int lesson_load(const char *name, ns_lesson *l, char *err, size_t errlen);
/* The same, keeping the "if" lines whose condition holds for cfg (run
 * a's settings, the user's flags applied), cfg_b (run b's, with the
 * compare applied; NULL: none) and own (1: those settings are the
 * lesson's own); lesson_load keeps none. */
int lesson_load_for(const char *name, const ns_config *cfg, const ns_config *cfg_b, int own,
                    ns_lesson *l, char *err, size_t errlen);
/* Parse lesson text; name is used in messages. Every line is checked
 * (keys, flags, compare, reveal, script lines, each "if" line's setting,
 * values and item); with cfg NULL no "if" line is kept. */
int lesson_parse(const char *text, const char *name, ns_lesson *l, char *err, size_t errlen);
int lesson_parse_for(const char *text, const char *name, const ns_config *cfg,
                     const ns_config *cfg_b, int own, ns_lesson *l, char *err, size_t errlen);
void lesson_free(ns_lesson *l);
/* The words of a lesson's flags (NUL-ended text, cut in place: it must
 * outlive av) after av[0] = argv0, then extra (NULL-ended, or NULL), and
 * a NULL; the count. av has room for LESSON_MAX_WORDS. */
#define LESSON_MAX_WORDS 272
int lesson_words(char *argv0, char *words, char **av, const char *const *extra);
/* A sweep lesson's note or question as its views say it, once e->at of
 * its n runs have ended: "at the start: TEXT", "18 of 18 ended: TEXT". */
void lesson_sweep_line(const script_entry *e, long n, char *buf, size_t len);
/* --check-lesson ARG: load the lesson ARG names and check all of it,
 * running nothing; one line on out ("FILE: ok: TITLE ...") and 0, or one
 * line on err ("normscope: FILE:LINE: what") and 2. */
int lesson_check(const char *arg, FILE *out, FILE *err);
/* Print "NAME  title" for every lesson. */
void lesson_list(FILE *f);
int lesson_count(void);
const char *lesson_name(int i);

#endif
