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

/* The help's rows of keys, in order: a key's (its index in the key
 * table) from byte `off` of its help, wrapped at a space to the box's
 * width; or the --follow row of the keys it does not take (key HELP_OFF). */
enum { HELP_OFF = -1 };
#define HELP_MAX_LINES 128
typedef struct {
    int key, off, len;
} help_row;

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

static int help_lines(const tui_ui *ui, int w, help_row *out)
{
    int n_lines = 0, off_said = 0, n;
    const tui_key *keys = tui_key_table(&n);
    for (int i = 0; i < n && n_lines < HELP_MAX_LINES; i++) {
        if (!keys[i].name || (!ui->follow && tui_action_follow_only(keys[i].act)))
            continue;
        if (ui->follow && tui_action_changes_model(keys[i].act)) {
            /* --follow: the lab's model is not there to change; one line */
            if (!off_said++)
                out[n_lines++] = (help_row){HELP_OFF, 0, 0};
            continue;
        }
        const char *t = keys[i].help;
        for (int off = 0; t[off] && n_lines < HELP_MAX_LINES;) {
            int len = help_wrap(t + off, w);
            out[n_lines++] = (help_row){i, off, len};
            off += len;
            while (t[off] == ' ')
                off++;
        }
    }
    return n_lines;
}

int tui_help_height(int w)
{
    help_row lines[HELP_MAX_LINES];
    tui_ui ui = {0}; /* the lab's keys: --follow's are fewer */
    return help_lines(&ui, w - 15, lines) + 1 + TUI_HELP_LEGEND + 2;
}

/* The page of the line list each line goes on, for pages of h rows: the
 * keys fill pages in order; the legend (a blank line, then its lines)
 * stays whole, on the keys' last page when it fits, else on a page of
 * its own, else (h too short for it) not at all: half a legend misleads.
 * Returns the page count. */
static int help_paginate(int n_keys, int h, int *legend_page)
{
    int pages = n_keys > 0 ? (n_keys + h - 1) / h : 1, used = n_keys - (pages - 1) * h;
    int n_leg = (int)(sizeof help_legend / sizeof help_legend[0]);
    *legend_page = -1;
    if (used + 1 + n_leg <= h)
        *legend_page = pages - 1;
    else if (n_leg <= h)
        *legend_page = pages++;
    return pages;
}

static void help_line(tui_grid *g, tui_rect r, int rr, help_row line, const tui_key *keys)
{
    if (line.key == HELP_OFF) {
        help_off_line(g, r, rr);
        return;
    }
    if (line.off == 0) /* a wrapped line's rest goes under its text */
        tui_puts(g, rr, r.c + 2, 10, TUI_S_KEY, keys[line.key].name);
    tui_puts(g, rr, r.c + 13, line.len, TUI_S_TEXT, keys[line.key].help + line.off);
}

/* The help: the keys in the key table's order, then the legend, in pages
 * of the rows the box holds (PgDn / PgUp turn them: tui_apply), so a
 * small terminal loses no key. The closing hint is on the bottom border,
 * as the title on the top. */
void tui_draw_help(tui_grid *g, tui_rect r, tui_ui *ui)
{
    if (r.w < 20 || r.h < 4)
        return;
    tui_fill(g, r.r, r.c, r.h, r.w, ' ', TUI_S_TEXT);
    tui_box(g, r, ui->unicode, TUI_S_BORDER);
    tui_puts(g, r.r, r.c + 2, r.w - 4, TUI_S_TITLE, " normscope keys ");
    help_row lines[HELP_MAX_LINES];
    int n;
    const tui_key *keys = tui_key_table(&n);
    int n_lines = help_lines(ui, r.w - 15, lines), h = r.h - 2, legend_page;
    ui->help_pages = help_paginate(n_lines, h, &legend_page);
    ui->help_page = clampi(ui->help_page, 0, ui->help_pages - 1);
    int rr = r.r + 1, last = r.r + r.h - 1;
    for (int i = ui->help_page * h; i < n_lines && rr < last && i < (ui->help_page + 1) * h; i++)
        help_line(g, r, rr++, lines[i], keys);
    if (legend_page == ui->help_page) {
        int n_leg = (int)(sizeof help_legend / sizeof help_legend[0]);
        if (rr > r.r + 1)
            rr++; /* the blank line after the keys */
        for (int i = 0; i < n_leg && rr < last; i++, rr++)
            tui_puts(g, rr, r.c + 2, r.w - 4, TUI_S_DIM, help_legend[i]);
    }
    char hint[80];
    if (ui->help_pages > 1)
        snprintf(hint, sizeof hint, " %d/%d %s; any other key closes this help ", ui->help_page + 1,
                 ui->help_pages, ui->help_page + 1 < ui->help_pages ? "PgDn: more" : "PgUp: back");
    else
        snprintf(hint, sizeof hint, " any key closes this help; q quits ");
    tui_puts(g, last, r.c + 2, r.w - 4, TUI_S_LABEL, hint);
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

