/* tui_lesson.c - the lesson panel of the live view: the lesson's title and
 * text from the start, and the question of its latest "pause PROMPT" (in
 * the lesson's script) while the run waits for the teacher's space.
 *
 * It takes the rows of the sample line and the event log (layout.lesson).
 * When those do not hold its title and question, or the layers would
 * scroll, the layout ranks the rows (tui_layout_compute_lesson): the
 * question first, so a projector-sized screen still shows it. L hides it
 * and gives its rows back; L again, or the next prompt, shows it.
 *
 * A lesson may hide run b (its "reveal" line) so a class predicts before
 * it sees: until the run passes the lesson's step, or until B, the front
 * end's copy of the snapshot is made a one-run snapshot (run b's curve,
 * rows and status go, its lines in the event log are masked) and the
 * panel says b is hidden; once shown, the next copy is whole again. The
 * trainer, the CSV and the headless output are untouched.
 *
 * Not here: the pause itself (trainer.c), the key table (tui_keys.c).
 */
#include "tui.h"

#include <stdio.h>
#include <string.h>

/* The length of the first line of at most w columns of text, broken at a
 * space when one is there; *next is where the following line starts. */
static size_t wrap(const char *t, size_t len, int w, size_t *next)
{
    if (len <= (size_t)w) {
        *next = len;
        return len;
    }
    size_t cut = (size_t)w;
    while (cut > 0 && t[cut] != ' ')
        cut--;
    if (cut == 0)
        cut = (size_t)w; /* one long word: cut it */
    size_t n = cut;
    while (n < len && t[n] == ' ')
        n++;
    *next = n;
    return cut;
}

int tui_put_wrapped(tui_grid *g, int *r, int end, int c, int w, tui_style s, const char *text)
{
    /* a lesson's lines are prose broken near 80 columns: one paragraph,
     * rewrapped to the width (a narrower panel would leave a word alone on
     * every second line); a blank line still parts two */
    char flow[4096];
    size_t tl = strlen(text);
    if (tl < sizeof flow) {
        memcpy(flow, text, tl + 1);
        for (size_t i = 0; i < tl; i++)
            if (flow[i] == '\n' && (i + 1 == tl || flow[i + 1] != '\n') && (i == 0 || flow[i - 1] != '\n'))
                flow[i] = ' ';
        text = flow;
    }
    const char *p = text;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        size_t off = 0;
        do {
            if (*r >= end)
                return 0;
            char line[512];
            size_t next, n = wrap(p + off, len - off, w < (int)sizeof line ? w : (int)sizeof line - 1,
                                  &next);
            memcpy(line, p + off, n);
            line[n] = 0;
            if (g)
                tui_puts(g, *r, c, w, s, line);
            (*r)++;
            off += next;
        } while (off < len);
        p += len + (nl != NULL);
    }
    return 1;
}

int tui_lesson_visible(tui_ui *ui, const trainer_snapshot *s)
{
    if (!ui->lesson_text && !s->s.ask_seq) /* a --script's prompt shows it too */
        return 0;
    if (s->s.ask_seq != ui->lesson_seen) { /* a new prompt brings it back */
        ui->lesson_seen = s->s.ask_seq;
        ui->lesson_hidden = 0;
    }
    return !ui->lesson_hidden;
}

/* Is run b hidden now? Once the run passes the lesson's step, or run b
 * stopped the run (its divergence is the news), it is shown for good. */
static int b_hidden(tui_ui *ui, const trainer_snapshot *s)
{
    int passed = ui->reveal > 0 && s->s.steps_done > ui->reveal;
    if (ui->reveal && (passed || trainer_diverged_run(&s->s) == 1)) {
        ui->reveal = 0;
        ui->reveal_stale = 1;
    }
    return ui->reveal != 0;
}

void tui_lesson_hide_b(tui_ui *ui, trainer_snapshot *s)
{
    if (!s->s.compare || !b_hidden(ui, s))
        return;
    s->s.compare = 0;
    long lo = s->s.ev_total > TRAINER_EVENTS ? s->s.ev_total - TRAINER_EVENTS : 0;
    for (long i = lo; i < s->s.ev_total; i++) {
        trainer_event *e = &s->ev[i % TRAINER_EVENTS];
        if (!strncmp(e->text, "b: ", 3))
            snprintf(e->text, sizeof e->text, "b: (hidden until the reveal)");
    }
}

int tui_lesson_unhide(tui_ui *ui, trainer_snapshot *s)
{
    if (!ui->reveal_stale)
        return 0;
    ui->reveal_stale = 0;
    s->s.seq = 0;      /* copy again, though the trainer published nothing new */
    s->s.ev_total = 0; /* and every event, unmasked */
    return 1;
}

/* The panel's line while run b is hidden; "" when it is not. */
static void hidden_line(char *b, size_t n, const tui_ui *ui)
{
    if (ui->reveal > 0)
        snprintf(b, n, "Run b is hidden until after step %ld: predict it first (B shows it now).",
                 ui->reveal);
    else
        snprintf(b, n, "%s", ui->reveal ? "Run b is hidden: predict it first (B shows it)." : "");
}

/* The question as the panel shows it: "step N: ...". */
static void question(char *q, size_t n, const trainer_snapshot *s)
{
    snprintf(q, n, "step %ld: %s", s->s.ask_step, s->s.ask);
}

int tui_lesson_rows(tui_ui *ui, const trainer_snapshot *s, int cols, int *want)
{
    *want = 0;
    if (cols < 20 || !tui_lesson_visible(ui, s))
        return 0;
    int w = cols - 2, row = 1; /* the title row */
    if (s->s.ask_seq) {
        char q[NS_CMD_TEXT + 32];
        question(q, sizeof q, s);
        tui_put_wrapped(NULL, &row, 1 << 20, 0, w, TUI_S_TEXT, q);
    }
    char hid[96];
    hidden_line(hid, sizeof hid, ui);
    if (hid[0]) /* what the class does not see is said */
        tui_put_wrapped(NULL, &row, 1 << 20, 0, w, TUI_S_TEXT, hid);
    /* before the first question: the title (and the hidden run's line) and
     * the text's first line */
    int need = s->s.ask_seq ? row : row + (ui->lesson_text ? 1 : 0);
    if (ui->lesson_text)
        tui_put_wrapped(NULL, &row, 1 << 20, 0, w, TUI_S_TEXT, ui->lesson_text);
    *want = row;
    return need;
}

void tui_draw_lesson(tui_grid *g, tui_rect r, const trainer_snapshot *s, tui_ui *ui)
{
    if (r.h < 2 || r.w < 20 || !tui_lesson_visible(ui, s))
        return;
    tui_fill(g, r.r, r.c, r.h, r.w, ' ', TUI_S_TEXT);
    tui_fill(g, r.r, r.c, 1, r.w, ui->unicode ? 0x2500 : '-', TUI_S_BORDER);
    const char *hint = s->s.state == TRAINER_PAUSED ? " space goes on, L hides " : " L hides ";
    int hl = (int)strlen(hint);
    if (r.w <= hl + 24)
        hl = 0;
    else
        tui_puts(g, r.r, r.c + r.w - hl - 1, hl, TUI_S_KEY, hint);
    /* the title in whole words before the hint: a word cut in half misreads */
    char title[160];
    int tw = r.w - 2 - (hl ? hl + 1 : 0);
    snprintf(title, sizeof title, " %s ", ui->lesson_title ? ui->lesson_title : "lesson");
    if ((int)strlen(title) > tw && tw > 4 && tw < (int)sizeof title) {
        title[tw - 1] = 0;
        char *sp = strrchr(title + 1, ' ');
        if (sp && sp > title + 1)
            strcpy(sp, " ~ ");
    }
    tui_puts(g, r.r, r.c + 1, tw, TUI_S_TITLE, title);
    int row = r.r + 1, end = r.r + r.h, w = r.w - 2;
    if (s->s.ask_seq) {
        char q[NS_CMD_TEXT + 32];
        question(q, sizeof q, s);
        tui_put_wrapped(g, &row, end, r.c + 1, w, TUI_S_EV_NOTE, q);
    }
    char hid[96];
    hidden_line(hid, sizeof hid, ui);
    if (hid[0])
        tui_put_wrapped(g, &row, end, r.c + 1, w, TUI_S_WARN, hid);
    if (ui->lesson_text)
        tui_put_wrapped(g, &row, end, r.c + 1, w, TUI_S_TEXT, ui->lesson_text);
}
