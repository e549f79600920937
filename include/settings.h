/* settings.h - the one table of normscope's settings and flags.
 *
 * Every command-line flag is one row: its names, value type, range,
 * default, help words, whether it can change mid-run (its command word,
 * how the command may change it, the engine's hook for what else
 * changes, its chart marker and its keys in the live view), whether
 * --compare may vary it, where it lives (a field of ns_config or of
 * cli_opts) and its place in the checkpoint header. The defaults, flag
 * parsing and range errors, --help, the --compare names, the command
 * words, the keys and their help, and the checkpoint header are loops
 * over this table, so they cannot drift apart. Adding a setting, or a
 * mid-run setting with its key, is adding a row.
 *
 * This is data and value conversion only: no I/O but the FILE given to
 * settings_help, no engine, no allocation.
 */
#ifndef NS_SETTINGS_H
#define NS_SETTINGS_H

#include <stddef.h>
#include <stdio.h>

#include "config.h"

typedef enum {
    SET_INT,        /* int in lo..hi */
    SET_LONG,       /* long in lo..hi */
    SET_REAL,       /* float in lo..hi */
    SET_ENUM,       /* int: an index into names (def may be -1: "unset") */
    SET_ONOFF,      /* int 0/1 spelled on|off */
    SET_AUTO,       /* int 1/0/-1 spelled on|off|auto */
    SET_PRESENCE,   /* int set to 1 by the flag alone (no value) */
    SET_PATH,       /* const char *: a file name or a word, kept as given */
    SET_ASSIGN,     /* const char *: "SETTING=VALUE", kept as given */
    SET_U64,        /* uint64_t, 0..2^64-1 */
    SET_BETAS,      /* two floats (this field and the next) "B1,B2", each in lo..hi */
    SET_LOSS_SCALE, /* float: dynamic (0) | off (-1) | X in lo..hi */
    SET_ACTION,     /* --help, --version: no value, handled by the parser */
    SET_TYPE_COUNT
} setting_type;

/* Where a row's value lives. */
typedef enum { SET_IN_CFG, SET_IN_OPTS, SET_IN_NONE } setting_home;

/* Row flags. */
enum {
    SETF_COMPARE = 1 << 0, /* --compare may vary it (it leaves the shape alone) */
    SETF_PLOT = 1 << 1,    /* a --plot option: refused without --plot */
    SETF_NOFLAG = 1 << 2,  /* a mid-run setting only: no flag, no --help line */
    SETF_FOLLOW = 1 << 3,  /* applies to --follow, which trains nothing: the others are
                            * refused with it */
};

/* How a row's command may change it mid-run (the row has a command word):
 * to a value is always allowed; these add the words after it. */
enum {
    SETL_TOGGLE = 1 << 0, /* "WORD toggle": to toggle[1] from toggle[0], else to toggle[0] */
    SETL_CYCLE = 1 << 1,  /* "WORD next": to the next of its names */
    SETL_SCALE = 1 << 2,  /* "WORD xF", "*F", "/F": times a factor */
    SETL_OFF = 1 << 3,    /* "WORD off": 0 (a number whose 0 means off) */
    SETL_UNBOUNDED = 1 << 4, /* a number may pass the flag's upper bound (lr x2 by
                              * lr x2 is what a class watches) */
    SETL_REMOTE = 1 << 5,    /* a followed run takes its keys' commands too (the
                              * probe's control file, --follow) */
};

/* The engine's hook of a mid-run row: what else changes with the value
 * (engine.c, one function each). A row without one only has its field
 * set. Their order is the order of a chart marker's labels. */
typedef enum {
    SETH_NONE = 0,
    SETH_NORM,
    SETH_NORM_KIND,
    SETH_FINAL_NORM,
    SETH_WARMUP,
    SETH_PRECISION,
    SETH_FP32_NORMS,
    SETH_LOSS_SCALE,
    SETH_LR,
    SETH_CLIP,
    SETH_COUNT
} setting_hook;

/* The chart marker's label of a row's value (settings_mark): the words
 * of the values 0, 1 and below 0 when given, else fmt of the value, else
 * (names) the value's name. A row without any has no marker. */
typedef struct {
    const char *zero, *one, *neg;
    const char *fmt;
    int names;
    const char *const *words; /* the value's words, index = value (an enum's n_names) */
} setting_mark;

/* A key of the live view bound to a row's command: the key sends
 * "WORD how" ("norm toggle", "lr x2"), as the command parser reads it. */
#define SET_KEYS 2
typedef struct {
    int key;           /* the key, 0 = none */
    int alt;           /* another key for the same, 0 = none ('=' for '+') */
    const char *how;   /* the words after the command word */
    const char *help;  /* the help overlay's line; NULL: shares the line before */
} setting_key;

/* When a row's flag does anything. Given where holds() says it does
 * nothing, the flag is said in one line (a warning: the deciding setting
 * may change mid-run, or the case is a sweep's), or refused (exit 2). */
typedef struct {
    /* c: the settings in force (a resumed run's: the checkpoint's with the
     * flags applied); opts: the command line's cli_opts. A row whose key
     * toggles or cycles it reads c only: the status line asks with opts
     * NULL whether to show its toggle. */
    int (*holds)(const ns_config *c, const void *opts);
    const char *under; /* the deciding flag ("precision") */
    const char *when;  /* where it applies, after "it applies with " */
    int refuse;
} setting_applies;

typedef struct {
    const char *name;  /* long flag, --compare SETTING, checkpoint field name */
    char short_name;   /* 0 = none */
    setting_type type;
    const char *arg;   /* the value's placeholder in --help; enums: NULL = the names */
    double lo, hi;     /* inclusive range of numbers (SET_INT/LONG/REAL/BETAS/LOSS_SCALE) */
    const char *const *names; /* SET_ENUM: the value names, index = value */
    int n_names;
    double def, def2;  /* default (enum index, 0/1, -1 auto); def2: the second beta */
    const char *def_text; /* the default as --help says it, when not def; "" = none */
    const char *help;  /* the help words; the range and default are appended */
    unsigned flags;    /* SETF_* */
    const char *cmd;   /* the command/script word if it can change mid-run, else NULL */
    setting_home home;
    size_t off;        /* offsetof into ns_config (SET_IN_CFG) or cli_opts (SET_IN_OPTS) */
    int ckpt;          /* position in the checkpoint header, 1.. ; 0 = not stored */
    /* Recorded with every step: the index of its column among the step
     * columns (metrics.h; the CSV's and JSONL's order), 0 = not recorded
     * (index 0 is "step"). As ckpt, a new row takes the next free index
     * after the last one, so every older column keeps its place. The
     * value recorded is the engine's (engine_setting_value), which is the
     * field's except where a hook says otherwise; the one place for the
     * special cases:
     *  - "warmup" is the ramp in force on/off (the warmup-ramp row), not
     *    --warmup N;
     *  - the lr and loss_scale columns are measured, not rows' columns:
     *    the LR this step used and the scale in force;
     *  - ln_gamma_init is fixed at the start (no command word). */
    int step_col;
    const char *column; /* the column's name; NULL: the row's name, '_' for '-' */
    /* mid-run (rows with a command word) */
    unsigned live;     /* SETL_*: how the command may change it besides to a value */
    double toggle[2];  /* SETL_TOGGLE's two values */
    setting_hook hook; /* the engine's side effects; SETH_NONE: the field alone */
    setting_mark mark; /* its chart marker's label */
    setting_key keys[SET_KEYS]; /* the live view's keys for it */
    /* its toggle on the live view's status line ("[p] Pre-LN"), when a key
     * toggles or cycles it: the value said as a marker says it, from this
     * or, when this is empty, from mark (settings_status) */
    setting_mark status;
    setting_applies applies; /* holds NULL: wherever it is given */
} ns_setting;

int settings_count(void);
const ns_setting *settings_row(int i);
int settings_index(const ns_setting *s);
/* By long name (len bytes of name), by short name, by command word: NULL if none. */
const ns_setting *settings_find(const char *name, size_t len);
const ns_setting *settings_find_short(char c);
const ns_setting *settings_find_cmd(const char *word);
/* The name of a row's step column (step_col), and the row of a step
 * column's name ("norm_kind", "warmup"), or NULL. */
void settings_column(const ns_setting *s, char *buf, size_t len);
const ns_setting *settings_of_column(const char *col);

/* The row's defaults into c (rows that live in ns_config), the rest zero. */
void settings_defaults(ns_config *c);
/* The numeric defaults of the rows that live in cli_opts, into opts. */
void settings_opts_defaults(void *opts);

/* Parse v as the row's value and store it in c (SET_IN_CFG) or opts (a
 * cli_opts *, SET_IN_OPTS; may be NULL for config-only use). 0, or -1
 * with "expected ..." (what is allowed) in why. */
int settings_set(const ns_setting *s, ns_config *c, void *opts, const char *v, char *why,
                 size_t whylen);
/* Parse v as the row's value without storing it: the value as a double
 * (an enum's index, 0/1, -1 auto, 0 dynamic), for command values. Betas,
 * paths and seeds are not single doubles: -1 for them. */
int settings_parse_number(const ns_setting *s, const char *v, double *x, char *why,
                          size_t whylen);
/* The row's value in c, spelled as the flag takes it ("post", "on", "1e-3"). */
void settings_format(const ns_setting *s, const ns_config *c, char *buf, size_t len);
/* The row's value in c as a double (betas: beta1; seed may lose bits). */
double settings_get(const ns_setting *s, const ns_config *c);
/* The row's field in c (SET_IN_CFG rows; NULL for the others). */
void *settings_field(const ns_setting *s, ns_config *c);
/* Store x (already range-checked) into the row's field of c. */
void settings_put(const ns_setting *s, ns_config *c, double x);

/* "SETTING=VALUE" with c's value of the setting named in spec (the
 * value "?" when no row has that name): the label of the first run of a
 * --compare pair, and a twin's fixed settings. */
void settings_label(const ns_config *c, const char *spec, char *buf, size_t len);

/* The row's mid-run value x as its chart marker says it ("lr 1e-03",
 * "no clip", "post"); "" for a row without a marker. */
void settings_mark(const ns_setting *s, double x, char *buf, size_t len);
/* The row's value x on the status line's toggle: status's words, else
 * the marker's (settings_mark), else the command word and the value
 * ("final-norm on"). */
void settings_status(const ns_setting *s, double x, char *buf, size_t len);
/* Whether x is the row's "off": 0 of an on/off row or of a number whose 0
 * means off (SETL_OFF), a loss scale's off (-1). The status line dims it. */
int settings_is_off(const ns_setting *s, double x);
/* The row whose engine hook is h, or NULL. */
const ns_setting *settings_find_hook(setting_hook h);
/* The row and binding of a live-view key, or NULL. */
const ns_setting *settings_find_key(int key, const setting_key **k);

/* 0 when the row's flag does something with the settings c in force and
 * the command line opts (a cli_opts *); else 1 (a warning) or 2 (refused),
 * the line saying so in buf: "--X V does nothing with --Y W (it applies
 * with ...)". The flag's value is opts'; the deciding one c's. */
int settings_applies(const ns_setting *s, const ns_config *c, const void *opts, char *buf,
                     size_t len);

/* The value names joined, "a|b|c" (sep "|") or "a, b or c" (sep ", "). */
void settings_names(const ns_setting *s, const char *sep, char *buf, size_t len);

/* --help's option lines, one row each, range and default appended. */
void settings_help(FILE *f);

/* The --compare names ("norm, norm-kind, ..."). */
void settings_compare_names(char *buf, size_t len);

/* Range check of a loaded value: 0 when c's value of the row is allowed
 * (inside the range, a valid enum index, or the row's default; never a
 * NaN or an infinity; a row whose command may pass the flag's upper bound,
 * SETL_UNBOUNDED, only its lower bound). */
int settings_check(const ns_setting *s, const ns_config *c);
/* What settings_check allows, "expected ...", for its error line. */
void settings_allowed(const ns_setting *s, char *buf, size_t len);

#endif
