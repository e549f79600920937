/* tui_frame.c - the whole frame (tui_draw: the layout's panels, each
 * drawn by its own file: tui_status.c, tui_layers.c, tui_chart.c) and the
 * small widgets: the sample line, the event log, the footer, the help
 * overlay and the too-small message.
 *
 * Only draws: it reads the snapshot and the UI state, and records
 * clickable places in ui->hits. No curses, no trainer calls.
 */
#include "tui.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nstext.h"
#include "numfmt.h"
#include "twin.h"

void tui_add_hit(tui_ui *ui, int r, int c0, int c1, tui_action a, int layer)
{
    if (ui->n_hits < TUI_MAX_HITS && c1 > c0)
        ui->hits[ui->n_hits++] = (tui_hit){r, c0, c1, a, layer};
}

/* ---- sample, events, footer ------------------------------------------------------ */

void tui_draw_sample(tui_grid *g, tui_rect r, const trainer_snapshot *snap)
{
    const trainer_status *s = &snap->s;
    int c = r.c + 1;
    if (s->sample_len <= 0) {
        tui_puts(g, r.r, c, r.w - 2, TUI_S_DIM,
                 "sample: a continuation of a fixed prompt appears here every few seconds");
        return;
    }
    char b[48];
    snprintf(b, sizeof b, "sample @%ld: ", s->sample_step);
    c += tui_puts(g, r.r, c, r.w - 2, TUI_S_LABEL, b);
    char esc[TRAINER_SAMPLE * 4 + 64];
    const char *prompt = s->prompt ? s->prompt : "";
    nstext_escape_str(prompt, esc, sizeof esc);
    c += tui_puts(g, r.r, c, r.c + r.w - 1 - c, TUI_S_DIM, esc);
    nstext_escape(s->sample, (size_t)s->sample_len, esc, sizeof esc);
    tui_puts(g, r.r, c, r.c + r.w - 1 - c, TUI_S_TEXT, esc);
}

static tui_style event_style(ns_event_kind k)
{
    switch (k) {
    case NS_EV_SETTING: case NS_EV_NOTE: return TUI_S_EV_SETTING;
    case NS_EV_VAL: return TUI_S_EV_VAL;
    case NS_EV_DIVERGED: return TUI_S_BAD;
    case NS_EV_WARNING: case NS_EV_SKIPPED: case NS_EV_REFUSED: return TUI_S_EV_NOTE;
    default: return TUI_S_TEXT;
    }
}

enum { EV_STEP_W = 10 }; /* "%8ld  ": an event's step, then its text */

/* The oldest event the log shows with `newest` at its bottom: events wrap
 * at the text's width (a long one takes rows and never loses its end),
 * so as many as fit in `lines` rows, and at least the newest. */
static long first_shown(const trainer_snapshot *snap, long newest, int lines, int tw)
{
    long lo = snap->s.ev_total - TRAINER_EVENTS, first = newest;
    int used = 0;
    if (lo < 0)
        lo = 0;
    for (long i = newest; i >= lo; i--) {
        int n = 0;
        if (tw > 0)
            tui_put_wrapped(NULL, &n, INT_MAX, 0, tw, TUI_S_DIM, snap->ev[i % TRAINER_EVENTS].text);
        n = n > 0 ? n : 1;
        if (used + n > lines && used > 0)
            break;
        used += n, first = i;
    }
    return first;
}

void tui_draw_events(tui_grid *g, tui_rect r, const trainer_snapshot *snap, const tui_ui *ui)
{
    const trainer_status *s = &snap->s;
    if (r.h < 1)
        return;
    uint32_t h = ui->unicode ? G_HLINE : '-';
    tui_fill(g, r.r, r.c, 1, r.w, h, TUI_S_BORDER);
    tui_puts(g, r.r, r.c + 2, r.w - 4, TUI_S_TITLE, " events ");
    int lines = r.h - 1, tw = r.w - EV_STEP_W;
    long newest = tui_log_newest(ui, s->ev_total, lines), newer = tui_log_newer(ui, s->ev_total, lines);
    long first = first_shown(snap, newest, lines, tw);
    if (newer > 0) { /* scrolled back: new events wait below, and say so */
        char b[64];
        snprintf(b, sizeof b, " -- %ld newer: ] or } -- ", newer);
        int len = (int)strlen(b);
        if (r.w > len + 12)
            tui_puts(g, r.r, r.c + r.w - len - 2, len, TUI_S_EV_NOTE, b);
    }
    int rr = r.r + 1, end = r.r + r.h;
    for (long i = first; i >= 0 && i <= newest && rr < end; i++) {
        const trainer_event *e = &snap->ev[i % TRAINER_EVENTS];
        char b[24];
        snprintf(b, sizeof b, "%8ld  ", e->step);
        tui_puts(g, rr, r.c, r.w, TUI_S_DIM, b);
        int r0 = rr;
        if (tw > 0)
            tui_put_wrapped(g, &rr, end, r.c + EV_STEP_W, tw, event_style(e->kind), e->text);
        if (rr == r0)
            rr++;
    }
}

void tui_draw_footer(tui_grid *g, tui_rect r, tui_ui *ui)
{
    int c = r.c, n;
    const tui_key *keys = tui_key_table(&n);
    for (int i = 0; i < n; i++) {
        const tui_key *k = &keys[i];
        if (!k->foot)
            continue;
        int kl = (int)strlen(k->foot), hl = (int)strlen(k->hint);
        if (c + kl + hl + 1 > r.c + r.w)
            break;
        int c0 = c;
        c += tui_puts(g, r.r, c, kl, TUI_S_KEY, k->foot);
        c += tui_puts(g, r.r, c, hl, TUI_S_STATUS, k->hint);
        tui_add_hit(ui, r.r, c0, c, k->act, -1);
        c += 1;
    }
    int len = (int)strlen(ui->note);
    if (len && c + len < r.c + r.w)
        tui_puts(g, r.r, r.c + r.w - len, len, TUI_S_EV_NOTE, ui->note);
}

/* ---- help overlay and the too-small message ------------------------------------- */

static const char *const help_legend[] = {
    "Bars: |gradient| on one log scale, 1e-5 .. 1e+2 (v: each run's own",
    "  max/10 .. max); vanishing < 1e-3 of the largest, exploding >= 10.",
    "Activation max: marks at 256 (the LN variance overflows fp16) and",
    "  65504 (fp16's largest value). Layer 0 is next to the embeddings.",
    "Chart: loss smoothed (--smooth W) over each step's, dim; y: lowest to",
    "  98th pct; a marker where a setting changed. Heatmap (m): by decade.",
    "--compare: Tab sets the TARGET; under both a toggle takes a's new",
    "  value and sets both runs to it. Chart: a line, b '+', both '*'.",
};

/* --follow: the keys that change the lab's model, named in one line */
static void help_off_line(tui_grid *g, tui_rect r, int rr)
{
    char names[64] = "";
    size_t n = 0;
    int nk;
    const tui_key *keys = tui_key_table(&nk);
    for (int i = 0; i < nk; i++)
        if (keys[i].name && tui_action_changes_model(keys[i].act) && n + 8 < sizeof names)
            n += (size_t)snprintf(names + n, sizeof names - n, "%s%s", n ? " " : "", keys[i].name);
    int c = r.c + 2 + tui_puts(g, rr, r.c + 2, r.w - 4, TUI_S_DIM, names);
    tui_puts(g, rr, c, r.c + r.w - 2 - c, TUI_S_DIM, ": not available while following");
}

_Static_assert(sizeof help_legend / sizeof help_legend[0] == TUI_HELP_LEGEND,
               "TUI_HELP_LEGEND counts the legend's lines");

/* ---- the glossary: every number and colour on screen, a line each ------------- */

/* The view's own numbers and marks (the per-layer numbers' lines are the
 * layer column table's, tui_layers.c): what, unit, a healthy value. */
typedef struct {
    const char *name, *text;
} gloss_entry;
static const gloss_entry gloss_view[] = {
    {"loss", "cross-entropy of the next byte, nats per byte (/ln 2: bits); a random guess: "
             "ln 256 = 5.55; the chart: smoothed, over each step's (dim; --light: plain)"},
    {"val", "the same on held-out bytes every --val-every steps; 'val 2.50@400': measured "
            "at step 400"},
    {"|grad|", "the step's global gradient norm before clipping (what c clips to 1.0; CSV "
               "grad_norm); the default run: about 1-2 after warmup"},
    {"lr", "the next step's learning rate; (warmup N%): N% of the peak, ramping up"},
    {"steps/s", "training speed; tok/s: bytes a second (steps/s x batch x context)"},
    {"\xce\x94out", "how far one update moved the logits of a fixed batch, ||df||/||f|| "
                    "(Liu et al. 2020): Post-LN ~1 in its first steps, DeepNorm ~0.2; the first "
                    "100 steps and at validations"},
    {"sample", "'sample @N': the model's continuation of a fixed prompt (dim) at step N; "
               "\\xNN: a byte it cannot print"},
    {"!", "a warning of the diagnosis (D: whole, and what to try); after a layer's index: "
          "its first non-finite op; atop the chart: a non-finite loss"},
    {"XX", "in the heatmap (m): a step whose value was not finite (NaN or Inf)"},
    {"a/b", "--compare: run a's layer gradient norm / run b's, sqrt(attn^2 + mlp^2 + "
            "g(norms)^2); under 0.1 or over 10 stand out"},
    {"L= d= ...", "the model: L blocks, width d, H heads, context T bytes, B sequences a step"},
    {"--light", "start with it, or press t, for a white background (a projector): no yellow, "
                "cyan or dim text; the colours below then read as it names them"},
};
enum { N_GLOSS_VIEW = sizeof gloss_view / sizeof gloss_view[0] };
#define GLOSS_MAX (N_GLOSS_VIEW + TUI_LAYER_COLS_MAX + 4)
#define GLOSS_TEXT 320

/* The colour lines, named from the palette in force (tui_palette.c). */
static int gloss_colors(const tui_ui *ui, char (*name)[16], char (*text)[GLOSS_TEXT])
{
    char nn[24], vn[24], en[24], bn[24], wn[24];
    tui_palette_name(TUI_S_NORMAL, ui->light, ui->color, nn, sizeof nn);
    tui_palette_name(TUI_S_VANISH, ui->light, ui->color, vn, sizeof vn);
    tui_palette_name(TUI_S_EXPLODE, ui->light, ui->color, en, sizeof en);
    tui_palette_name(TUI_S_BAD, ui->light, ui->color, bn, sizeof bn);
    tui_palette_name(TUI_S_WARN, ui->light, ui->color, wn, sizeof wn);
    if (!ui->color) { /* without colour the bars' glyphs say it (tui_layers.c log_bar) */
        snprintf(nn, sizeof nn, "%s", ui->unicode ? "\xe2\x96\x88" : "#"); /* █ */
        snprintf(vn, sizeof vn, "%s", ui->unicode ? "\xe2\x96\x91" : "."); /* ░ */
        snprintf(en, sizeof en, "%s", ui->unicode ? "\xe2\x96\x93" : "!"); /* ▓ */
    }
    snprintf(name[0], 16, "bars");
    snprintf(text[0], GLOSS_TEXT,
             "|grad| on a log scale: %s normal, %s vanishing (< 1e-3 of the largest layer's), "
             "%s exploding (>= 10), %s NaN/Inf", nn, vn, en, bn);
    snprintf(name[1], 16, "act bar");
    snprintf(text[1], GLOSS_TEXT, "act max on 1..1e6: %s past the 256 mark (the LN variance "
             "overflows fp16), %s past 65504 (fp16's largest)", wn, bn);
    snprintf(name[2], 16, "logit bar");
    snprintf(text[2], GLOSS_TEXT, "M's rows: the largest attention logit on a log scale "
             "1..1e4, uncoloured: its length is the news");
    return 3;
}

/* Every glossary line, in the help's order: the view's, the colours,
 * then each per-layer number under its box name (and the names it has
 * elsewhere). Returns the count. */
static int gloss_lines(const tui_ui *ui, char (*name)[16], char (*text)[GLOSS_TEXT])
{
    int n = 0, nc;
    for (int i = 0; i < N_GLOSS_VIEW; i++, n++) {
        snprintf(name[n], 16, "%s", gloss_view[i].name);
        snprintf(text[n], GLOSS_TEXT, "%s", gloss_view[i].text);
    }
    n += gloss_colors(ui, name + n, text + n);
    const tui_layer_col *t = tui_layer_col_table(&nc);
    for (int i = 0; i < nc && n < GLOSS_MAX; i++) {
        if (!t[i].gloss)
            continue;
        const char *alias[] = {t[i].brief, t[i].row.title, t[i].twin.title, t[i].fold};
        char also[64] = "";
        for (int a = 0; a < 4; a++) {
            const char *al = alias[a];
            while (al && *al == ' ')
                al++;
            if (al && *al && !strstr(t[i].side, al) && !strstr(also, al))
                snprintf(also + strlen(also), sizeof also - strlen(also), "%s'%s'",
                         also[0] ? ", " : "(also ", al);
        }
        snprintf(name[n], 16, "%s", t[i].side);
        snprintf(text[n], GLOSS_TEXT, "%s%s%s", also, also[0] ? ") " : "", t[i].gloss);
        n++;
    }
    return n;
}

/* ---- the help's rows -------------------------------------------------------------
 * A key's (its index in the key table) from byte `off` of its help,
 * wrapped at a space to the box's width; the --follow row of the keys it
 * does not take; a legend line; a glossary line's piece. Rows of one
 * block (a key, the legend, a glossary entry) stay on one page. */
enum { HELP_KEY, HELP_OFF, HELP_LEGEND, HELP_GLOSS_TITLE, HELP_GLOSS };
#define HELP_MAX_LINES 256
typedef struct {
    int kind, key, off, len;
    int block; /* the first row of a block; gap: a blank row before it */
    int gap;
    int page, at; /* paginated: its page and row there */
} help_row;
typedef struct {
    help_row row[HELP_MAX_LINES];
    int n;
    char gname[GLOSS_MAX][16];
    char gtext[GLOSS_MAX][GLOSS_TEXT];
} help_doc;

/* The bytes of text that fit w columns, cut after a word (ASCII help). */
static int help_wrap(const char *text, int w)
{
    int n = (int)strlen(text);
    if (n <= w)
        return n;
    int cut = w;
    while (cut > 0 && text[cut] != ' ')
        cut--;
    return cut > 0 ? cut : w;
}

static void add_row(help_doc *d, int kind, int key, int off, int len, int block, int gap)
{
    if (d->n < HELP_MAX_LINES)
        d->row[d->n++] = (help_row){kind, key, off, len, block, gap, 0, 0};
}

/* A text wrapped to w into rows of one block. */
static void add_wrapped(help_doc *d, int kind, int key, const char *t, int w, int gap)
{
    for (int off = 0, first = 1; t[off] && d->n < HELP_MAX_LINES; first = 0) {
        int len = help_wrap(t + off, w);
        add_row(d, kind, key, off, len, first, first && gap);
        off += len;
        while (t[off] == ' ')
            off++;
    }
}

static void help_keys(help_doc *d, const tui_ui *ui, int w)
{
    int off_said = 0, n;
    const tui_key *keys = tui_key_table(&n);
    for (int i = 0; i < n; i++) {
        if (!keys[i].name || (!ui->follow && tui_action_follow_only(keys[i].act)))
            continue;
        if (ui->follow && tui_action_changes_model(keys[i].act)) {
            /* --follow: the lab's model is not there to change; one line */
            if (!off_said++)
                add_row(d, HELP_OFF, 0, 0, 0, 1, 0);
            continue;
        }
        add_wrapped(d, HELP_KEY, i, keys[i].help, w, 0);
    }
}

/* The whole help: keys (w: their text's width), the legend, the glossary. */
static void help_build(help_doc *d, const tui_ui *ui, int w, int with_gloss)
{
    d->n = 0;
    help_keys(d, ui, w);
    for (int i = 0; i < TUI_HELP_LEGEND; i++)
        add_row(d, HELP_LEGEND, i, 0, 0, i == 0, i == 0);
    if (!with_gloss)
        return;
    int ng = gloss_lines(ui, d->gname, d->gtext);
    add_row(d, HELP_GLOSS_TITLE, 0, 0, 0, 1, 1);
    for (int i = 0; i < ng; i++)
        add_wrapped(d, HELP_GLOSS, i, d->gtext[i], w, 0);
}

/* Pages of h rows: rows flow in order, a block whole on one page (moved
 * to the next when it does not fit the rest of this one; one taller than
 * a page is cut), a gap not at a page's top. Returns the page count. */
static int help_paginate(help_doc *d, int h)
{
    int page = 0, used = 0;
    for (int i = 0; i < d->n; i++) {
        help_row *r = &d->row[i];
        if (r->block) {
            int k = 1;
            while (i + k < d->n && !d->row[i + k].block)
                k++;
            int gap = r->gap && used > 0;
            if (used > 0 && used + gap + k > h)
                page++, used = 0, gap = 0;
            used += gap;
        }
        if (used >= h)
            page++, used = 0;
        r->page = page;
        r->at = used++;
    }
    return page + 1;
}

int tui_help_height(int w)
{
    help_doc *d = calloc(1, sizeof *d);
    tui_ui ui = {0}; /* the lab's keys: --follow's are fewer */
    if (!d)
        return 40;
    help_build(d, &ui, w - 15, 0);
    int n = d->n + 1; /* and the legend's blank line */
    free(d);
    return n + 2;
}

static void help_line(tui_grid *g, tui_rect r, int rr, const help_row *line, const help_doc *d,
                      const tui_key *keys)
{
    switch (line->kind) {
    case HELP_OFF: help_off_line(g, r, rr); return;
    case HELP_LEGEND: tui_puts(g, rr, r.c + 2, r.w - 4, TUI_S_DIM, help_legend[line->key]); return;
    case HELP_GLOSS_TITLE:
        tui_puts(g, rr, r.c + 2, r.w - 4, TUI_S_TITLE,
                 "What the numbers mean: what, unit, a healthy value");
        return;
    case HELP_GLOSS:
        if (line->off == 0)
            tui_puts(g, rr, r.c + 2, 10, TUI_S_LABEL, d->gname[line->key]);
        tui_puts(g, rr, r.c + 13, line->len, TUI_S_TEXT, d->gtext[line->key] + line->off);
        return;
    default:
        if (line->off == 0) /* a wrapped line's rest goes under its text */
            tui_puts(g, rr, r.c + 2, 10, TUI_S_KEY, keys[line->key].name);
        tui_puts(g, rr, r.c + 13, line->len, TUI_S_TEXT, keys[line->key].help + line->off);
    }
}

/* The help: the keys in the key table's order, the legend, then the
 * glossary, in pages of the rows the box holds (PgDn / PgUp turn them:
 * tui_apply), so a small terminal loses no key. The closing hint is on
 * the bottom border, as the title on the top. */
void tui_draw_help(tui_grid *g, tui_rect r, tui_ui *ui)
{
    if (r.w < 20 || r.h < 4)
        return;
    tui_fill(g, r.r, r.c, r.h, r.w, ' ', TUI_S_TEXT);
    tui_box(g, r, ui->unicode, TUI_S_BORDER);
    static help_doc d; /* the UI thread's only */
    int n;
    const tui_key *keys = tui_key_table(&n);
    int h = r.h - 2;
    help_build(&d, ui, r.w - 15, 1);
    ui->help_pages = help_paginate(&d, h);
    ui->help_page = clampi(ui->help_page, 0, ui->help_pages - 1);
    int gloss_page = ui->help_pages; /* the glossary's first page */
    for (int i = 0; i < d.n; i++)
        if (d.row[i].kind == HELP_GLOSS_TITLE)
            gloss_page = d.row[i].page;
    /* the keys' pages say which palette is in force (t flips it) */
    tui_puts(g, r.r, r.c + 2, r.w - 4, TUI_S_TITLE,
             ui->help_page > gloss_page ? " normscope: what the numbers mean "
             : ui->light                ? " normscope keys (palette: light) "
                                        : " normscope keys (palette: dark) ");
    for (int i = 0; i < d.n; i++)
        if (d.row[i].page == ui->help_page)
            help_line(g, r, r.r + 1 + d.row[i].at, &d.row[i], &d, keys);
    char hint[80];
    if (ui->help_pages > 1)
        snprintf(hint, sizeof hint, " %d/%d %s; any other key closes this help ", ui->help_page + 1,
                 ui->help_pages, ui->help_page + 1 < ui->help_pages ? "PgDn: more" : "PgUp: back");
    else
        snprintf(hint, sizeof hint, " any key closes this help; q quits ");
    tui_puts(g, r.r + r.h - 1, r.c + 2, r.w - 4, TUI_S_LABEL, hint);
}

void tui_draw_too_small(tui_grid *g, int rows, int cols, int paused)
{
    char a[64], b[64];
    snprintf(a, sizeof a, "normscope needs at least %dx%d", TUI_MIN_COLS, TUI_MIN_ROWS);
    snprintf(b, sizeof b, "this terminal is %dx%d", cols, rows);
    const char *lines[] = {a, b, "enlarge it, or press q to quit", "training paused until then"};
    int n = paused ? 4 : 3;
    if (cols < (int)strlen(lines[2])) {
        /* a tiny terminal (a pane of a split, a resize in passing): the
         * same facts in 10 columns, rather than cut mid-word */
        snprintf(a, sizeof a, "need %dx%d", TUI_MIN_COLS, TUI_MIN_ROWS);
        snprintf(b, sizeof b, "have %dx%d", cols, rows);
        lines[2] = "q quits";
        lines[3] = "paused";
    }
    int top = rows / 2 - 1;
    if (top < 0)
        top = 0;
    for (int i = 0; i < n; i++) {
        int len = (int)strlen(lines[i]);
        int c = (cols - len) / 2;
        tui_puts(g, top + i, c < 0 ? 0 : c, cols, i == 1 ? TUI_S_WARN : TUI_S_TEXT, lines[i]);
    }
}

void tui_draw(tui_grid *g, const trainer_snapshot *s, tui_ui *ui)
{
    tui_grid_clear(g);
    ui->n_hits = 0;
    int cmp = s->s.compare && ui->view == TUI_VIEW_LAYERS;
    int lesson_want, lesson_min = tui_lesson_rows(ui, s, g->cols, &lesson_want);
    tui_layout L = tui_layout_compute_lesson(g->rows, g->cols, s->s.n_layer, s->s.compare,
                                             lesson_min, lesson_want);
    ui->layer_cols = L.layer_cols;
    if (s->s.compare && !cmp) /* the heatmap takes the panels' whole width */
        L.layers.w = g->cols;
    if (L.too_small) {
        tui_draw_too_small(g, g->rows, g->cols, ui->small_paused);
        return;
    }
    tui_draw_status(g, L.status, s, ui);
    if (ui->view == TUI_VIEW_HEATMAP)
        tui_draw_heatmap(g, L.layers, s, ui);
    else if (cmp) {
        tui_draw_layers_twin(g, L.layers, s, ui, 0);
        tui_draw_ratio(g, L.ratio, s, ui);
        tui_draw_layers_twin(g, L.layers_b, s, ui, 1);
    } else
        tui_draw_layers(g, L.layers, s, ui);
    tui_draw_chart(g, L.chart, s, ui);
    tui_draw_side(g, L.side, s, ui);
    tui_draw_sample(g, L.sample, s);
    tui_log_frame(ui, L.events, s->s.ev_total);
    tui_draw_events(g, L.events, s, ui);
    tui_draw_footer(g, L.footer, ui);
    tui_draw_lesson(g, L.lesson, s, ui);
    tui_draw_fold(g, L.fold, s, ui);
    if (ui->help) {
        ui->n_hits = 0; /* the overlay covers what was clickable */
        tui_draw_help(g, L.help, ui);
    }
    if (ui->diag && !ui->help) {
        ui->n_hits = 0;
        tui_draw_diag(g, L.help, s, ui);
    }
}

