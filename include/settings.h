/* settings.h - the one table of normscope's settings and flags.
 *
 * Every command-line flag is one row: its names, value type, range,
 * default, help words, whether it can change mid-run (its command word,
 * how the command may change it, the engine's hook for what else
 * changes, its chart marker and its keys in the live view), whether
 * --compare may vary it, where it lives (a field of ns_config or of
 * cli_opts), its place in the checkpoint header and among each step's
 * columns. The defaults, flag parsing and range errors, --help, the
 * --compare names and labels, the command words, the keys and their
 * help, the checkpoint header and the step columns (metrics.h) are loops
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
    SET_ENUM,       /* int index into names (def -1: "unset") */
    SET_ONOFF,      /* int 0/1: on|off */
    SET_AUTO,       /* int 1/0/-1: on|off|auto */
    SET_PRESENCE,   /* int, 1 by the flag alone */
    SET_PATH,       /* const char *, kept as given */
    SET_ASSIGN,     /* const char * "SETTING=VALUE", kept as given */
    SET_U64,        /* uint64_t */
    SET_BETAS,      /* two floats (this field and the next): "B1,B2" */
    SET_LOSS_SCALE, /* float: dynamic (0) | off (-1) | X in lo..hi */
    SET_ACTION,     /* --help, --version: handled by the parser */
    SET_TYPE_COUNT
} setting_type;

typedef enum { SET_IN_CFG, SET_IN_OPTS, SET_IN_NONE } setting_home;

enum {
    SETF_COMPARE = 1 << 0, /* --compare may vary it: it leaves the shape alone */
    SETF_PLOT = 1 << 1,    /* refused without --plot */
    SETF_NOFLAG = 1 << 2,  /* mid-run only: no flag, no --help line */
    SETF_FOLLOW = 1 << 3,  /* allowed with --follow, which trains nothing */
    SETF_FILE = 1 << 4,    /* names a file or directory to read or write: never from a
                            * lesson, which may come from anyone (settings, never paths) */
};

/* How a row's command may change it mid-run, besides to a value. */
enum {
    SETL_TOGGLE = 1 << 0, /* "WORD toggle": toggle[1] from toggle[0], else toggle[0] */
    SETL_CYCLE = 1 << 1,  /* "WORD next" */
    SETL_SCALE = 1 << 2,  /* "WORD xF", "*F", "/F" */
    SETL_OFF = 1 << 3,    /* "WORD off": 0 */
    SETL_UNBOUNDED = 1 << 4, /* may pass the flag's upper bound: lr x2 pressed until
                              * it blows up is what a class watches */
    SETL_REMOTE = 1 << 5,    /* a followed run takes its keys' commands too (the
                              * probe's control file) */
};

/* What else changes with a mid-run row's value (engine.c, one function
 * each); SETH_NONE: the field alone. The order is a chart marker's. */
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

/* A value's words (settings_mark): zero, one, neg for those values, else
 * fmt, else (names) the enum's name; none of them: no marker. */
typedef struct {
    const char *zero, *one, *neg;
    const char *fmt;
    int names;
    const char *const *words; /* by value, an enum's n_names */
} setting_mark;

/* A live-view key: it sends "WORD how" ("norm toggle", "lr x2"), so a key
 * and a script line are the same command. */
#define SET_KEYS 2
typedef struct {
    int key, alt;      /* 0 = none; alt: '=' for '+' */
    const char *how;
    const char *help;  /* the help overlay's line; NULL: shares the line before */
} setting_key;

/* Where a flag does something. Elsewhere it is said in one line: a
 * warning (the deciding setting may change mid-run, or a sweep crosses
 * it on purpose), or refused (exit 2). */
typedef struct {
    /* c: the settings in force (a resumed run's: the checkpoint's with the
     * flags applied); opts: the cli_opts. Rows a key toggles or cycles
     * read c only: the status line and the twin labels ask with opts NULL. */
    int (*holds)(const ns_config *c, const void *opts);
    const char *under; /* the deciding flag ("precision") */
    const char *when;  /* after "it applies with " */
    int refuse;
} setting_applies;

typedef struct {
    const char *name;  /* long flag, --compare SETTING, checkpoint field */
    char short_name;
    setting_type type;
    const char *arg;   /* --help's placeholder; enums: NULL = the names */
    double lo, hi;     /* inclusive */
    const char *const *names;
    int n_names;
    const char *const *aliases; /* SET_ENUM: other names, pairs (alias, name), NULL-ended */
    double def, def2;  /* def2: the second beta */
    const char *def_text; /* --help's default when not def; "" = none */
    const char *help;  /* the range and default are appended */
    unsigned flags;    /* SETF_* */
    const char *cmd;   /* the command/script word of a mid-run row */
    setting_home home;
    size_t off;        /* in ns_config or cli_opts */
    int ckpt;          /* place in the checkpoint header, 1..; 0 = not stored */
    /* Recorded with every step: its index among the step columns
     * (metrics.h; the CSV's and JSONL's order), 0 = not recorded. As
     * ckpt, a new row takes the next index, so older files keep their
     * columns. The value is the engine's (engine_setting_value): the
     * field's but where a hook keeps it. The special cases, here only:
     *  - "warmup" is the ramp in force on/off (the warmup-ramp row), not
     *    --warmup N;
     *  - the lr and loss_scale columns are measured, not the rows': the
     *    LR the step used, the scale in force;
     *  - ln_gamma_init is fixed at the start (no command word). */
    int step_col;
    const char *column; /* the column's name; NULL: the row's, '_' for '-' */
    /* mid-run rows */
    unsigned live;     /* SETL_* */
    double toggle[2];
    setting_hook hook;
    setting_mark mark; /* its chart marker */
    setting_key keys[SET_KEYS];
    /* its status-line toggle ("[p] Pre-LN"); empty: mark's words */
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
