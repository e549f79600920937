/* tui.h - the live view: an in-memory cell grid, the layout as a pure
 * function of (rows, cols, layers), the widgets that draw a trainer
 * snapshot into the grid, the key table, and the curses front end.
 *
 * Everything except tui_run is curses-free and lives in the library, so
 * the tests can draw a frame and compare grid rows as strings (as vis and
 * tmux do). Only src/tui_curses.c calls curses: it copies the grid to the
 * screen, reads keys and the mouse, and handles resizing in one place.
 *
 * Not here: the training (trainer.h, engine.h), files and flags (main.c).
 */
#ifndef NS_TUI_H
#define NS_TUI_H

#include <stddef.h>
#include <stdint.h>

#include "scale.h"
#include "trainer.h"

/* ---- shared by the drawing files -----------------------------------------
 * The code points the widgets draw with (each one column wide; ASCII
 * stand-ins are chosen where they are drawn), and a clamp: one copy for
 * every tui_*.c. */
enum {
    G_BRAILLE = 0x2800, /* the empty braille cell: its dots are bits added to it */
    G_FULL = 0x2588,    /* █ */
    G_LIGHT = 0x2591,   /* ░ */
    G_MED = 0x2592,     /* ▒ */
    G_DARK = 0x2593,    /* ▓ */
    G_HLINE = 0x2500,   /* ─ */
    G_VLINE = 0x2502,   /* │ */
    G_TL = 0x250C, G_TR = 0x2510, G_BL = 0x2514, G_BR = 0x2518, /* ┌ ┐ └ ┘ */
    G_DOTV = 0x250A,    /* ┊ */
    G_RIGHT = 0x25B6,   /* ▶ */
    G_BULLET = 0x2022,  /* • */
    G_WHITE_BULLET = 0x25E6, /* ◦ */
    G_MIDDOT = 0x00B7,  /* · */
    G_BOTH = '*',       /* a chart cell both runs' curves pass through */
};

static inline int clampi(int x, int lo, int hi) { return x < lo ? lo : (x > hi ? hi : x); }

/* ---- the cell grid --------------------------------------------------------
 * One Unicode code point and one semantic style per cell; every glyph used
 * is one column wide. The curses layer maps styles to colors per scheme. */
typedef enum {
    TUI_S_TEXT = 0,
    TUI_S_DIM,
    TUI_S_TITLE,
    TUI_S_BORDER,
    TUI_S_STATUS,     /* the status line's background */
    TUI_S_LABEL,      /* names of values in the status line and boxes */
    TUI_S_KEY,        /* a key name in the footer and the help */
    TUI_S_TOGGLE,     /* a clickable toggle in the status line */
    TUI_S_RUN,        /* states */
    TUI_S_PAUSE,
    TUI_S_DIVERGED,
    TUI_S_DONE,
    TUI_S_FROZEN,
    TUI_S_NORMAL,     /* bar states */
    TUI_S_VANISH,
    TUI_S_EXPLODE,
    TUI_S_WARN,       /* activations past the LN-variance mark (256) */
    TUI_S_BAD,        /* past fp16's maximum, or not finite */
    TUI_S_TRAIN,      /* chart series */
    TUI_S_VAL,
    TUI_S_MARK,       /* chart markers */
    TUI_S_SELECT,     /* the selected layer's row */
    TUI_S_HEAT0,      /* heatmap levels, cold to hot */
    TUI_S_HEAT1,
    TUI_S_HEAT2,
    TUI_S_HEAT3,
    TUI_S_HEAT4,
    TUI_S_HEAT5,
    TUI_S_HEAT6,
    TUI_S_EV_SETTING, /* event log kinds */
    TUI_S_EV_VAL,
    TUI_S_EV_NOTE,
    TUI_S_TWIN,       /* the --compare run b's loss on the chart */
    TUI_S_COUNT
} tui_style;

/* ---- colours per scheme (tui_palette.c) ----------------------------------
 * A style's colours: ANSI's eight (curses' COLOR_* have the same values),
 * -1 the terminal's default; attributes added to the colour pair, and
 * used alone without colour. */
enum { TUI_C_BLACK, TUI_C_RED, TUI_C_GREEN, TUI_C_YELLOW, TUI_C_BLUE, TUI_C_MAGENTA, TUI_C_CYAN,
       TUI_C_WHITE };
enum { TUI_A_BOLD = 1, TUI_A_DIM = 2, TUI_A_REVERSE = 4, TUI_A_UNDERLINE = 8 };
typedef struct {
    short fg, bg;
    unsigned color_attr, mono_attr;
} tui_style_spec;
/* The table of TUI_S_COUNT entries: light_bg (--light) for a white
 * background, else a dark or default one. */
const tui_style_spec *tui_palette(int light_bg);
/* A style's colour as the glossary names it: "bright blue", "white on
 * red", or without colour its attribute ("reversed", "plain"). */
void tui_palette_name(tui_style s, int light_bg, int color, char *b, size_t n);

/* What the key that switches the palette says (the footer, the event
 * log): "palette: light (t: dark)". */
void tui_palette_note(int light, char *b, size_t n);

typedef struct {
    uint32_t ch; /* a code point; ' ' when empty */
    uint8_t style;
} tui_cell;

typedef struct {
    int rows, cols;
    tui_cell *cells; /* (rows, cols) */
} tui_grid;

/* 0, or -1 when out of memory (the grid is then empty). */
int tui_grid_resize(tui_grid *g, int rows, int cols);
void tui_grid_free(tui_grid *g);
void tui_grid_clear(tui_grid *g);
tui_cell *tui_at(tui_grid *g, int r, int c); /* NULL outside */
void tui_put(tui_grid *g, int r, int c, uint32_t ch, tui_style s);
/* Draw UTF-8 text at (r, c), at most maxw columns (clipped to the grid);
 * returns the columns used. Invalid bytes show as '?'. */
int tui_puts(tui_grid *g, int r, int c, int maxw, tui_style s, const char *utf8);
void tui_fill(tui_grid *g, int r, int c, int h, int w, uint32_t ch, tui_style s);
/* Row r as UTF-8 (trailing spaces kept), NUL-terminated; returns the bytes
 * written. For tests and the curses layer. */
size_t tui_row_utf8(const tui_grid *g, int r, char *out, size_t cap);
/* Encode one code point; returns the bytes (1..4) written to out[4]. */
int tui_utf8_encode(uint32_t cp, char out[4]);

/* ---- layout: a pure function of (rows, cols, layers) ---------------------- */
#define TUI_MIN_ROWS 24
#define TUI_MIN_COLS 80
/* Up to this many rows, layers that would scroll get the ranked layout
 * (tui_layout_compute_lesson): every layer, in two columns when need be,
 * before the sample and the event log. Taller screens keep the event log
 * unless a lesson's question needs the rows. */
#define TUI_PROJECTOR_ROWS 32

typedef struct {
    int r, c, h, w; /* top row, left column, height, width; h or w 0 = absent */
} tui_rect;
/* A border around r: line glyphs with unicode, else -, | and +. */
void tui_box(tui_grid *g, tui_rect r, int unicode, tui_style s);

typedef struct {
    int too_small; /* below TUI_MIN_ROWS x TUI_MIN_COLS: only the message is drawn */
    tui_rect status; /* 2 rows: values; clickable toggles */
    tui_rect layers; /* 2 header rows + one row per visible layer (or the heatmap) */
    tui_rect chart;  /* the loss chart */
    tui_rect side;   /* the selected layer's numbers, right of the chart */
    tui_rect sample; /* 1 row */
    tui_rect events; /* a title row + the newest events */
    tui_rect footer; /* 1 row of key hints */
    tui_rect help;   /* the help overlay: drawn over the others when shown */
    tui_rect lesson; /* the lesson panel: the sample and event rows, when shown */
    /* the ranked layout (a large font on 80x24 or 100x30, or a lesson's
     * question that would not fit): every layer stays on screen when they
     * fit, in two columns if need be; sample and events are absent, the
     * lesson has its own rows above the footer, side is absent when the
     * chart is too short for it, and then fold (a row under the values
     * rows) holds the selected layer's numbers */
    int projector;
    tui_rect fold;
    int layer_rows;  /* layers visible at once (the rest scroll) */
    /* the layers in this many columns side by side in each panel (1, or 2
     * when one column of full rows would not leave the lesson its rows) */
    int layer_cols;
    /* --compare: layers holds run a (left), layers_b run b (right) and
     * ratio the a/b gradient-norm column between them; else w = 0 */
    tui_rect ratio, layers_b;
} tui_layout;

tui_layout tui_layout_compute(int rows, int cols, int n_layer);
/* The same with the side-by-side panels of --compare when compare != 0. */
#define TUI_RATIO_W 9
tui_layout tui_layout_compute_cmp(int rows, int cols, int n_layer, int compare);
/* The same with a lesson panel that needs lesson_min rows (its title and
 * the question: 0 = no panel) and would use lesson_want (its text too).
 * What a lesson's moment needs is ranked first: the question, each run's
 * values row (loss, val), every layer (in two columns of compact rows when
 * one column of full rows does not fit), a chart of TUI_CHART_MIN rows;
 * then the toggles or the selected layer's numbers, the lesson's text, and
 * the rest to the chart. Taller screens keep the classic layout while it
 * holds every layer and the question. The chart's minimum is its title,
 * its x labels and 4 plotted rows (with 2, a plateau and a descent both
 * drew one row of '*': the warmup lesson at 80x24); 2 plotted rows
 * (TUI_CHART_FLOOR) only where every layer would not fit otherwise (24
 * layers at 80x24). */
#define TUI_CHART_MIN 6
#define TUI_CHART_FLOOR 4
tui_layout tui_layout_compute_lesson(int rows, int cols, int n_layer, int compare, int lesson_min,
                                     int lesson_want);

/* ---- the per-layer numbers: one table (tui_layers.c) -----------------------
 * Every number a layer shows, once: its metric (a name of
 * metrics_layer_cols), how it is written and styled, and where it shows:
 * a cell of the single view's rows, a cell of the compact rows (--compare,
 * the ranked layout's two columns), a row of the selected layer's box, an
 * item of the fold line. The layouts below place the cells; the layer
 * rows, the compact rows, the box and the fold walk the table, so a new
 * per-layer number is a row here (and its metric's row in metrics.c). */
enum { TUI_FMT_FIX, TUI_FMT_E, TUI_FMT_COUNT }; /* 0.123 / 1.2e-03 / 1234 */
enum {
    TUI_COL_BEFORE_ACT = 1, /* single view: between the gradient bars and the act bar */
    TUI_COL_WIDE = 2,       /* single view: only on TUI_WIDE_COLS columns and more */
    TUI_COL_LOWP = 4,       /* rows and fold: only in bf16/fp16 (the box: always) */
    TUI_COL_BOX_LAST = 8,   /* the box: after the layer's gradients and rule lines, the
                             * first to go when it is short */
    TUI_COL_MECH = 16,      /* the mechanisms rows (key M): a cell, in the table's order */
};
#define TUI_WIDE_COLS 150
typedef struct {
    int w;             /* cell width; 0 = not in these rows */
    int pad;           /* the value's offset in the cell */
    const char *title; /* over the cell, from its first column (NULL = none) */
    const char *under_title; /* compact rows showing underflow counts instead */
} tui_col_cell;
typedef struct tui_layer_col {
    const char *metric; /* metrics_layer_cols' name: "act_max" */
    int fmt;            /* TUI_FMT_* */
    unsigned flags;     /* TUI_COL_* */
    tui_col_cell row, twin; /* the single view's cell, the compact rows' */
    int twin_drop;      /* compact rows drop cells by this rank, lowest first (the
                         * act bar's: TUI_TWIN_ACT_DROP) */
    const char *side, *brief; /* the box's name (10 columns), and in 6 */
    const char *fold;   /* the fold line's name; NULL = not there */
    /* the value's style, gmax the largest layer gradient ("vanishing") */
    tui_style (*style)(double v, double gmax);
    /* a cell of its own (8 columns at c): NULL = the value as fmt says;
     * under: the compact rows show underflow counts */
    void (*cell)(tui_grid *g, int r, int c, const layer_metrics *lm, int under);
    /* its line in the help's glossary: what it is, its unit, what a
     * healthy value looks like (every row has one: test_tui) */
    const char *gloss;
    const char *unit; /* the mechanisms rows' second header row: "nats" */
} tui_layer_col;
#define TUI_LAYER_COLS_MAX 16
#define TUI_TWIN_ACT_DROP 20
/* The table and its length. */
const tui_layer_col *tui_layer_col_table(int *n);
/* Column i's value in lm (its metric's field). */
double tui_layer_col_value(const tui_layer_col *c, const layer_metrics *lm);

/* Columns of one layer row, from its width (pure, like the layout). */
typedef struct {
    int idx;          /* layer index, 4 columns */
    int attn, ffn, bar; /* starts of the attention and MLP bars, and their width */
    int act, act_w;   /* the activation-max bar */
    int x[TUI_LAYER_COLS_MAX]; /* column i of the table's cell start; -1 = absent */
    /* named cells of x, for the tests and the header's spans */
    int nums;         /* the two gradient norms, 16 columns */
    int act_num;      /* its number, 8 columns */
    int rms;          /* residual RMS, 10 columns */
    int extra;        /* update ratio and norm-gradient columns; -1 when narrow */
    int prec;         /* precision counters (headroom or overflows), 9
                       * columns after act_num; -1 when absent */
} tui_layer_cols;
tui_layer_cols tui_layer_columns(int width);
/* With prec != 0 (precision not fp32), a precision cell (TUI_COL_LOWP) is
 * taken from the activation bar when the bar keeps >= 4 cells. */
tui_layer_cols tui_layer_columns_prec(int width, int prec);
/* Columns of one run's panel in the two-run view (--compare), from its
 * width: the single view's per-layer columns, compact. What does not fit
 * is dropped (-1) by the cells' twin_drop ranks: resid rms first, then
 * the activation bar with its 256 and 65504 marks, then the precision
 * counter (bf16, fp16: headroom, or the underflow count when a run does
 * not scale its loss), then the activation-max number: the numbers a
 * lesson names stay longest. The attention and MLP gradient bars always
 * stay. */
typedef struct {
    int idx;            /* 4 columns */
    int attn, ffn, bar; /* the two gradient bars and their width */
    int act, act_w;     /* the activation-max bar, -1 when dropped */
    int x[TUI_LAYER_COLS_MAX]; /* column i of the table's cell start; -1 = absent */
    int act_num;        /* its number, 8 columns, or -1 */
    int prec;           /* precision counter, 9 columns, or -1 */
    int rms;            /* resid rms, 8 columns, or -1 */
} tui_twin_cols;
tui_twin_cols tui_twin_columns(int width, int prec);
/* Columns of the mechanisms rows (key M: the TUI_COL_MECH cells in the
 * table's order, after the largest attention logit's bar on 1..1e4),
 * from the width; compact: --compare's panels and the ranked layout's
 * columns (7-column names). Cells that do not fit are dropped from the
 * right (-1), then the bar (bar_w 0). */
typedef struct {
    int idx;          /* 4 columns */
    int bar, bar_w;   /* the logit bar */
    int cell_w;       /* each cell's width */
    int x[TUI_LAYER_COLS_MAX]; /* column i of the table's cell start; -1 = absent */
} tui_mech_cols;
tui_mech_cols tui_mech_columns(int width, int compact);
#define TUI_MECH_LOGIT_LO 0 /* the logit bar's decades: 1 .. 1e4 */
#define TUI_MECH_LOGIT_HI 4
#define TUI_TWIN_BAR_MIN 6 /* gradient bars keep this many cells */
#define TUI_TWIN_ACT_MIN 10 /* the activation bar needs this for its two marks */

/* Fit a run's label (twin_label: "b: norm=pre precision=bf16  ...") to w
 * columns in place: the named kinds by their value alone ("pre", "bf16")
 * and long names shortened ("gamma=0"), then low precision's defaults
 * left out (fp32-norms=on, scale=dyn: they say only "not fp32"), then
 * whole words, with " +N" when N of the settings that differ were left
 * out. Returns how many of those N were not low precision's defaults:
 * 0 when the label still says every setting that matters. */
int tui_label_fit(char *b, int w);
/* The short forms of tui_label_fit, in place, whatever the width: the
 * values of the named kinds alone, the long names shortened. */
void tui_label_brief(char *b);

/* The first display row (0 = the top layer) that keeps display row `pos`
 * visible in a window of `visible` rows over `count`, moving `first` as
 * little as possible. */
int tui_scroll_fit(int first, int visible, int pos, int count);

/* ---- bars (pure) --------------------------------------------------------- */
/* Eighths of a cell filled by a bar of value v on a log scale lo..hi
 * decades over w cells: round(8 w (log10 v - lo) / (hi - lo)), clamped to
 * 0..8w; 0 for v <= 0 or not finite. */
int tui_log_eighths(double v, int lo, int hi, int w);
double tui_log_eighths_d(double v, double lo, double hi, int w); /* lo, hi any reals */

/* The relative view of the gradient bars (v, --bars relative): each run's
 * bars on a log axis of TUI_REL_DECADES decades ending at its own largest
 * layer, so a 3x difference between two layers is log10(3) / 1 = 48% of
 * the bar (on the fixed 7-decade axis it is 7%, under one cell). */
#define TUI_REL_DECADES 1.0
/* The axis of a run's bars: [lo, hi] in decades (log10), absolute or
 * relative to gmax (the run's largest finite attention or MLP norm). */
void tui_bar_axis(int relative, double gmax, double *lo, double *hi);
/* The column (0-based, inside the bar) where a bar of exactly 10^d ends:
 * the tick under the decade label d. */
int tui_decade_col(int d, int lo, int hi, int w);

/* ---- UI state, keys and actions -------------------------------------------- */
enum {
    TUI_KEY_TAB = 9,
    TUI_KEY_ESC = 27,
    TUI_KEY_UP = 0x110000, /* past Unicode: no clash with a character */
    TUI_KEY_DOWN,
    TUI_KEY_PGUP,
    TUI_KEY_PGDN,
    TUI_KEY_HOME,
    TUI_KEY_END,
    TUI_KEY_BTAB,
    TUI_KEY_F1,
    TUI_KEY_F10,
    TUI_KEY_LEFT,
    TUI_KEY_RIGHT,
};

typedef enum {
    TUI_ACT_NONE = 0,
    TUI_ACT_REWIND,
    TUI_ACT_PAUSE,
    TUI_ACT_STEP,
    TUI_ACT_REINIT,
    TUI_ACT_VIEW,
    TUI_ACT_TARGET,   /* --compare: the run(s) keys act on: both -> a -> b */
    TUI_ACT_BARS,     /* gradient bars: absolute / relative to each run's largest */
    TUI_ACT_UP,
    TUI_ACT_DOWN,
    TUI_ACT_PGUP,
    TUI_ACT_PGDN,
    TUI_ACT_TOP,
    TUI_ACT_BOTTOM,
    TUI_ACT_LOGY,
    TUI_ACT_FREEZE,
    TUI_ACT_DUMP_SCREEN,
    TUI_ACT_DUMP_METRICS,
    TUI_ACT_DUMP_FIGURE,
    TUI_ACT_LESSON,
    TUI_ACT_REVEAL,   /* --lesson with reveal: show the hidden run b now */
    TUI_ACT_LOG_OLDER, /* the event log: a line older / newer, a page */
    TUI_ACT_LOG_NEWER,
    TUI_ACT_LOG_PGOLDER,
    TUI_ACT_LOG_PGNEWER,
    TUI_ACT_HELP,
    TUI_ACT_DIAG,       /* the runs' diagnosis (tui_diag.c) */
    TUI_ACT_FIX,        /* in the D panel: apply the diagnosis' first next step */
    TUI_ACT_QUIT,
    TUI_ACT_STEP_BACK,  /* --follow: the replay's step back / forward */
    TUI_ACT_STEP_FWD,
    TUI_ACT_CHECKPOINT, /* --follow: ask the followed run for a checkpoint */
    TUI_ACT_MECH,       /* the layer rows: gradients / mechanisms */
    TUI_ACT_PALETTE,    /* the palette: a dark background's / a white one's (--light) */
    TUI_ACT_COUNT,
    /* TUI_ACT_BIND + i: the i-th key bound to a settings row's command
     * (the rows' keys in table order: tui_bind_*) */
    TUI_ACT_BIND = TUI_ACT_COUNT
} tui_action;

/* The key table: drives input, the help overlay and the footer. The keys
 * of the settings come from the settings table (a row's keys, bound to
 * its command text, as tmux binds keys to commands); tui_keys.c places
 * them among the view's own keys. */
typedef struct {
    int keys[3];      /* 0-terminated when fewer */
    const char *name; /* as shown in the help: "space", "up/down"; NULL: the
                       * second of a pair, shown on the line before */
    const char *foot; /* the key as shown in the footer; NULL = not there */
    const char *hint; /* the footer's word for it */
    const char *help; /* one line in the help overlay (NULL with name) */
    tui_action act;
    /* a place for a settings row's key: its command word and how ("norm",
     * "toggle"); keys, name, help and act come from the row */
    const char *row, *how;
} tui_key;
/* The table, settings keys resolved, in the help's order; n its length. */
const tui_key *tui_key_table(int *n);
tui_action tui_key_action(int key);
/* The key that does a, from the key table: "p", "space", "Tab" ("?" if none). */
void tui_key_name(tui_action a, char *b, size_t n);
/* The action of the key bound to "WORD HOW" ("norm", "toggle"), or
 * TUI_ACT_NONE. */
tui_action tui_bind_action(const char *word, const char *how);
/* A bound key's command text ("lr x2") into buf: 0, or -1 when a is no
 * bound key. */
int tui_bind_command(tui_action a, char *buf, size_t n);
/* Its settings row, or NULL. */
const ns_setting *tui_bind_row(tui_action a);
/* Does the action change the lab's model or its training (placement,
 * precision, warmup, LR schedule, rewind, re-init, a step)? Those keys are
 * not available while following a stream (--follow). */
int tui_action_changes_model(tui_action a);
/* Is it a key of --follow only (the replay, a checkpoint of the run)? */
int tui_action_follow_only(tui_action a);

enum { TUI_VIEW_LAYERS = 0, TUI_VIEW_HEATMAP = 1, TUI_VIEW_COUNT };

/* A clickable place on the screen, recorded while drawing. */
typedef struct {
    int r, c0, c1; /* row, columns [c0, c1) */
    tui_action act;
    int layer;     /* >= 0: a layer row (click selects it) */
} tui_hit;
#define TUI_MAX_HITS 96

typedef struct {
    int view;
    int selected; /* layer index */
    int scroll;   /* first display row shown (display row 0 = the top layer) */
    int help, frozen, logy, quit;
    double smooth; /* the loss's smoothing weight (--smooth; scale.h) */
    /* the help's page shown and its page count (the last frame's) */
    int help_page, help_pages;
    int diag;     /* the diagnosis overlay (D) is shown */
    int target;   /* --compare: the run(s) a key acts on (a twin_target) */
    int bars_rel; /* gradient bars relative to each run's largest layer */
    int dump;     /* files the front end writes after the next frame:
                   * TUI_DUMP_SCREEN | TUI_DUMP_METRICS | TUI_DUMP_FIGURE */
    int layer_rows; /* layer rows visible in the last frame (a page) */
    int layer_cols; /* columns of layers in this frame's panels (the layout's) */
    int mech;       /* the layer rows show the mechanisms (M), not the gradients */
    int light;      /* the palette for a white background (--light; the key flips it, and
                     * the curses layer re-initialises its colour pairs to it) */
    char note[80];  /* a passing message at the footer's right; "" = none */
    int follow;   /* --follow: the help marks the keys that change the lab's model */
    /* --lesson: its title and text for the lesson panel (NULL = none), L
     * hides the panel, and the prompt count last shown (a new one shows it) */
    const char *lesson_title, *lesson_text;
    int lesson_hidden;
    unsigned lesson_seen;
    /* a lesson's reveal (lesson.h): 0 run b shown, N > 0 hidden until the
     * run passes step N, LESSON_REVEAL_KEY until B; reveal_stale: b was
     * just shown, so the next copy of the snapshot is whole again */
    long reveal;
    int reveal_stale;
    /* the event log's scroll state (tui_logview.c): the newest event shown,
     * -1 = following; and what the last frame showed, which the keys and
     * the wheel act on: its event count, event rows and their screen rows */
    long log_newest;
    long log_total;
    int log_rows, log_top;
    int unicode;  /* braille and block glyphs (UTF-8 locale, no --ascii) */
    int color;    /* colors, not just attributes (no NO_COLOR / --no-color) */
    int small_paused; /* the front end paused training while the terminal was too
                       * small, and resumes it when it is large enough again */
    tui_hit hits[TUI_MAX_HITS];
    int n_hits;
} tui_ui;
/* Record a clickable place (row r, columns [c0, c1)) while drawing; past
 * TUI_MAX_HITS, or empty, it is not kept. */
void tui_add_hit(tui_ui *ui, int r, int c0, int c1, tui_action a, int layer);

enum { TUI_DUMP_SCREEN = 1, TUI_DUMP_METRICS = 2, TUI_DUMP_FIGURE = 4 };

void tui_ui_init(tui_ui *ui, int unicode, int color);

/* Files the d and e keys write, atomically (a temp file in the same
 * directory, then rename). 0, or -1 with the reason in err.
 *   screen:  the grid as UTF-8 text, one line per row, trailing spaces cut;
 *   metrics: CSV "step,loss,val_loss,lr" for every point the snapshot's
 *            history holds (the newest TRAINER_HIST steps of this
 *            generation), val_loss empty when not measured, plus b_loss
 *            and b_val_loss with --compare (run b's own columns). */
int tui_write_screen(const tui_grid *g, const char *path, char *err, size_t errlen);
int tui_write_metrics(const trainer_snapshot *s, const char *path, char *err, size_t errlen);
/* The e key of a trainer's run: the whole rows of its spool (every --csv
 * column of both runs, trainer_opts.spool) so far, read through the
 * descriptor while the trainer appends. 0, or -1 with a reason in err. */
int tui_write_spool(FILE *spool, const char *path, char *err, size_t errlen);
/* A name for a file of the d, e and g keys that names no existing file:
 * "STEM-STEP.EXT", else "STEM-STEP-2.EXT", -3, ... 0, or -1 when 99 exist. */
int tui_unused_path(char *path, size_t n, const char *stem, long step, const char *ext);

/* The event log's scroll state (tui_logview.c, pure). The newest event
 * index to show of total in a window of nrows rows (-1 when there is
 * none): the newest while following, else the one scrolled back to,
 * clamped to what the ring still holds; and how many events are newer
 * than it (0 while following). */
long tui_log_newest(const tui_ui *ui, long total, int nrows);
long tui_log_newer(const tui_ui *ui, long total, int nrows);
/* Scroll by delta events (negative: older) from what the last frame
 * showed; newer than the newest follows again. A page: tui_log_page. */
void tui_log_scroll(tui_ui *ui, long delta);
long tui_log_page(const tui_ui *ui);
/* Is screen row r one of the event log's rows in the last frame (the
 * mouse wheel scrolls the log there)? */
int tui_log_at_row(const tui_ui *ui, int r);
/* A frame records its event log (the rect, the snapshot's event count). */
void tui_log_frame(tui_ui *ui, tui_rect events, long total);

/* Apply an action to the UI state. Returns 1 and fills *cmd when the
 * trainer must be told (the same ns_command a --script line gives). While
 * help is shown, PgDn and Down turn to its next page and PgUp and Up to
 * the one before while there is one; any other key but quit closes it
 * and does nothing else.
 * n_layer bounds the selection. */
int tui_apply(tui_ui *ui, tui_action a, int n_layer, ns_command *cmd);
/* The action at a click, or TUI_ACT_NONE; a click on a layer row selects
 * that layer (returns TUI_ACT_NONE, *selected_changed = 1). */
tui_action tui_click(tui_ui *ui, int row, int col, int *selected_changed);

/* ---- widgets: each draws into a rect of the grid ---------------------------- */
void tui_draw_status(tui_grid *g, tui_rect r, const trainer_snapshot *s, tui_ui *ui);
/* Run run's latest out_change kept in the history at or before step upto,
 * as the status lines say it: "Δout 0.19" (ASCII "dout"), "@step" when
 * measured before upto; "" when none is kept. */
void tui_status_out_change(const trainer_snapshot *s, int run, long upto, int unicode, char *buf,
                           size_t n);
void tui_draw_layers(tui_grid *g, tui_rect r, const trainer_snapshot *s, tui_ui *ui);
/* --compare: one run's compact layer panel (which 0 = a, 1 = b), and the
 * per-layer a/b ratio of gradient norms sqrt(attn^2 + mlp^2 + norm^2). */
void tui_draw_layers_twin(tui_grid *g, tui_rect r, const trainer_snapshot *s, tui_ui *ui,
                          int which);
void tui_draw_ratio(tui_grid *g, tui_rect r, const trainer_snapshot *s, const tui_ui *ui);
void tui_draw_heatmap(tui_grid *g, tui_rect r, const trainer_snapshot *s, tui_ui *ui);
void tui_draw_chart(tui_grid *g, tui_rect r, const trainer_snapshot *s, const tui_ui *ui);
void tui_draw_side(tui_grid *g, tui_rect r, const trainer_snapshot *s, const tui_ui *ui);
void tui_draw_sample(tui_grid *g, tui_rect r, const trainer_snapshot *s);
void tui_draw_events(tui_grid *g, tui_rect r, const trainer_snapshot *s, const tui_ui *ui);
void tui_draw_footer(tui_grid *g, tui_rect r, tui_ui *ui);
/* The keys and the legend, in pages of the rows r holds (help_pages and
 * help_page of ui: PgDn, PgUp turn them). */
void tui_draw_help(tui_grid *g, tui_rect r, tui_ui *ui);
/* The rows a help box of w columns needs to show every key and the
 * legend on one page (its border included). */
int tui_help_height(int w);
/* --lesson: the panel over the sample and event rows (tui_lesson.c); is it
 * shown (a new prompt of the script un-hides it)? */
void tui_draw_lesson(tui_grid *g, tui_rect r, const trainer_snapshot *s, tui_ui *ui);
int tui_lesson_visible(tui_ui *ui, const trainer_snapshot *s);
/* Predict, then reveal: while a lesson hides run b, the front end's copy
 * of the snapshot (s, just copied) shows run a alone and b's events
 * masked; tui_lesson_unhide, before the next copy, makes that copy whole
 * again once b is shown (1: it will be). */
void tui_lesson_hide_b(tui_ui *ui, trainer_snapshot *s);
int tui_lesson_unhide(tui_ui *ui, trainer_snapshot *s);
/* The rows the panel needs at cols columns (its title and the question,
 * or before a question the title and the text's first line; 0 when it is
 * not shown) and, in *want, the rows of all of it. */
int tui_lesson_rows(tui_ui *ui, const trainer_snapshot *s, int cols, int *want);
/* Draw text (lines split at '\n') wrapped at spaces to w columns, from
 * row *r while *r < end; returns 0 when it did not all fit. With g NULL
 * it only counts the rows (*r advances as if drawn). */
int tui_put_wrapped(tui_grid *g, int *r, int end, int c, int w, tui_style s, const char *text);
/* The projector layout's one-row stand-in for the side box (tui_fold.c). */
void tui_draw_fold(tui_grid *g, tui_rect r, const trainer_snapshot *s, tui_ui *ui);
/* The D overlay (tui_diag.c), in the help's place: each run's findings of
 * its episode, the newest first, each with the layer's numbers now, what
 * to try and the keys that do it; "no warnings; the run is healthy" and
 * the least headroom when there are none; both runs under --compare.
 * tui_diag_lines writes its logical lines (unwrapped) and returns how many.
 * A line holds a finding whole with its prefix, or a fix with the
 * snapshot it rewinds to. */
#define TUI_DIAG_LINE (DIAG_TEXT + NS_EVENT_TEXT)
#define TUI_DIAG_MAX 64
int tui_diag_lines(const trainer_status *s, char (*line)[TUI_DIAG_LINE], int max);
/* Lines of the D overlay's kind being written: tui_say appends one
 * (printf's format), and drops it once max are written. The follow view
 * writes its own run's lines with it. */
typedef struct {
    char (*line)[TUI_DIAG_LINE];
    int n, max;
} tui_diag_text;
void tui_say(tui_diag_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tui_draw_diag(tui_grid *g, tui_rect r, const trainer_snapshot *s, const tui_ui *ui);
#define TUI_HELP_LEGEND 8 /* lines of legend under the keys, when they fit */
/* The too-small message: the size needed, the size now, and with paused
 * that training waits for the larger size. */
void tui_draw_too_small(tui_grid *g, int rows, int cols, int paused);

/* Geometry of the chart's plot area inside a chart rect, and the column of
 * a step in it (-1 outside the window). Exposed for the tests. */
typedef struct {
    int top, left, h, w;   /* plot cells */
    int xdots, ydots;      /* dots: 2x4 per cell (braille) or 1x3 (ASCII) */
    long first, last;      /* steps at the left and right edges */
} tui_chart_geom;
tui_chart_geom tui_chart_geometry(tui_rect r, const trainer_snapshot *s, int unicode);
int tui_chart_col(const tui_chart_geom *cg, long step);

/* A whole frame: layout, every widget, the help overlay; fills ui->hits. */
void tui_draw(tui_grid *g, const trainer_snapshot *s, tui_ui *ui);

/* ---- the curses front end (src/tui_curses.c, not in the library) ---------- */
typedef struct {
    int ascii;    /* --ascii: no braille or block glyphs */
    int no_color; /* --no-color (NO_COLOR is read too) */
    const char *lesson_title, *lesson_text; /* --lesson, for its panel; or NULL */
    int bars_rel; /* --bars relative */
    double smooth; /* --smooth: the loss's smoothing weight */
    const ns_script *lesson_lines; /* a sweep lesson's notes and questions; or NULL */
    FILE *spool; /* the trainer's copy of the CSV (trainer_opts.spool) for e; or NULL */
    long lesson_reveal; /* a lesson's reveal: run b hidden until then (tui_ui.reveal) */
    int light; /* --light: the palette for a white background (tui_palette) */
} tui_options;

typedef enum { TUI_END_QUIT = 0, TUI_END_SIGNAL = 1, TUI_END_ERROR = 2 } tui_end;

/* Set up the terminal, start t (created, not started: training begins
 * when there is a screen to show it) and run the dashboard until q, F10 or
 * a signal; the terminal is restored on every way out. On TUI_END_ERROR,
 * err says why (the trainer may not have started). */
tui_end tui_run(trainer *t, const tui_options *o, char *err, size_t errlen);
/* The same dashboard on a metrics stream (--follow FILE, tui_follow.h):
 * no trainer; the keys that would change the lab's model say they are not
 * available, space, + and - and C go to the run through its control file. */
tui_end tui_follow(const char *path, const tui_options *o, char *err, size_t errlen);
/* 1 in the usual binary; 0 in a build without curses (make CURSES=0,
 * tui_none.c), whose live view entry points only say TUI_NO_LIVE. */
int tui_live_available(void);
#define TUI_NO_LIVE "this normscope was built without curses (make CURSES=0): no live view; " \
                    "add --headless"

#endif
