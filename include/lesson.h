/* lesson.h - classroom lessons: a configuration, a timed script and a
 * short text, kept as files in assets/lessons/ and compiled in.
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
 */
#ifndef NS_LESSON_H
#define NS_LESSON_H

#include <stdio.h>

#include "command.h"
#include "config.h"

typedef struct {
    char name[32];
    char title[128];
    char flags[512];
    char compare[64];
    char sweep[512];  /* "" = one run (or a comparison), else --sweep's SPEC */
    char text[2048]; /* lines joined with '\n' */
    char cite[1024];
    ns_script script;
} ns_lesson;

/* Find a compiled-in lesson by name and parse it. 0, or -1 with a reason
 * (an unknown name lists the known ones). */
int lesson_load(const char *name, ns_lesson *l, char *err, size_t errlen);
/* The same, keeping the "if" lines whose condition holds for cfg (run
 * a's settings, the user's flags applied), cfg_b (run b's, with the
 * compare applied; NULL: none) and own (1: those settings are the
 * lesson's own); lesson_load keeps none. */
int lesson_load_for(const char *name, const ns_config *cfg, const ns_config *cfg_b, int own,
                    ns_lesson *l, char *err, size_t errlen);
/* Parse lesson text; name is used in messages. Every "if" line is checked
 * (its setting, values and item); with cfg NULL none is kept. */
int lesson_parse(const char *text, const char *name, ns_lesson *l, char *err, size_t errlen);
int lesson_parse_for(const char *text, const char *name, const ns_config *cfg,
                     const ns_config *cfg_b, int own, ns_lesson *l, char *err, size_t errlen);
void lesson_free(ns_lesson *l);
/* A sweep lesson's note or question as its views say it, once e->at of
 * its n runs have ended: "at the start: TEXT", "18 of 18 ended: TEXT". */
void lesson_sweep_line(const script_entry *e, long n, char *buf, size_t len);
/* Print "NAME  title" for every lesson. */
void lesson_list(FILE *f);
int lesson_count(void);
const char *lesson_name(int i);

#endif
