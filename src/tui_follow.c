/* tui_follow.c - the dashboard's follow mode (tui_follow.h): the replay's
 * view step, the keys while following, follow mode's status lines, and
 * its D panel (the lab's rules on the followed run, their fixes sent
 * through the control file). No curses; the frame itself is tui_draw's,
 * from the reader's snapshot.
 */
#include "tui_follow.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nstime.h"
#include "tail.h"

int tui_follow_init(tui_follow_state *f, const char *path)
{
    memset(f, 0, sizeof *f);
    f->path = path;
    f->view = -1;
    f->last_state = TRAINER_RUNNING;
    f->r = stream_open(path);
    return f->r ? 0 : -1;
}

void tui_follow_free(tui_follow_state *f)
{
    stream_free(f->r);
    f->r = NULL;
}

/* The stream said paused or resumed: space sends the other one. */
static void sync_paused(tui_follow_state *f, const trainer_status *s)
{
    if (s->state == f->last_state)
        return;
    if (s->state == TRAINER_PAUSED || f->last_state == TRAINER_PAUSED)
        f->paused = s->state == TRAINER_PAUSED;
    f->last_state = s->state;
}

/* The commands the run acknowledged leave the pending list. */
static void drop_acked(tui_follow_state *f)
{
    int n = 0;
    for (int i = 0; i < f->n_pending; i++)
        if (!stream_acked(f->r, f->pending[i].seq))
            f->pending[n++] = f->pending[i];
    if (n != f->n_pending)
        f->changed = 1;
    f->n_pending = n;
}

int tui_follow_update(tui_follow_state *f, trainer_snapshot *dst, tui_ui *ui)
{
    int changed = stream_poll(f->r, TUI_FOLLOW_READ, NULL);
    const trainer_status *s = &stream_snapshot(f->r)->s;
    sync_paused(f, s);
    drop_acked(f);
    char live[96];
    stream_live st = stream_liveness(f->r, nstime_now(), live, sizeof live);
    if (st != f->live || strcmp(live, f->live_text)) { /* "no new step for N s" counts up */
        f->live = st;
        snprintf(f->live_text, sizeof f->live_text, "%s", live);
        f->changed = 1;
    }
    if (s->n_layer != f->n_layer) { /* the top layer, as the lab starts */
        f->n_layer = s->n_layer;
        ui->selected = -1;
        ui->scroll = 0;
    }
    if (s->generation != f->generation) { /* a new run: back to its newest step */
        f->generation = s->generation;
        f->view = -1;
        changed = 1;
    }
    if (f->view >= 0 && f->view < stream_hist_first(f->r)) {
        f->view = stream_hist_first(f->r); /* the ring moved past it */
        changed = 1;
    }
    if (!changed && !f->changed)
        return 0;
    f->changed = 0;
    stream_snapshot_at(f->r, f->view, dst);
    if (f->view >= 0) { /* the chart's marker shows which step the panels show */
        char *mk = dst->hist[f->view % TRAINER_HIST].run[0].mark;
        char old[TRAINER_MARK];
        memcpy(old, mk, sizeof old);
        snprintf(mk, TRAINER_MARK, ">%.*s", TRAINER_MARK - 2, old[0] ? old : "view");
    }
    return 1;
}

/* Append a command to the control file; the event log says it was sent,
 * and it is pending until the run acknowledges it. Nothing is sent to a
 * run that has ended or whose writer is gone: no one would read it. A
 * command sent before any run began is marked for the run to come. */
static int send_command(tui_follow_state *f, tui_ui *ui, const char *cmd)
{
    long seq = 0;
    char err[160], t[NS_EVENT_TEXT], live[96];
    stream_live st = stream_liveness(f->r, nstime_now(), live, sizeof live);
    if (st == STREAM_LIVE_ENDED || st == STREAM_LIVE_GONE || st == STREAM_LIVE_NOT_STREAM) {
        snprintf(t, sizeof t, "not sent: %s (%s)", cmd, live);
        stream_note(f->r, NS_EV_NOTE, t);
        snprintf(ui->note, sizeof ui->note, "not sent: %s ",
                 st == STREAM_LIVE_ENDED  ? "the run ended"
                 : st == STREAM_LIVE_GONE ? "writer gone"
                                          : "not a stream");
        return -1;
    }
    char line[32];
    int early = !stream_summary_of(f->r)->have_header;
    snprintf(line, sizeof line, "%s%s", early ? "at-start " : "", cmd);
    if (stream_control_send(f->path, line, &seq, err, sizeof err) == 0) {
        snprintf(t, sizeof t, "sent: %s (command %ld in %.40s.ctl)%s; pending", cmd, seq,
                 tail_base_name(f->path), early ? " for the run to come" : "");
        stream_note(f->r, NS_EV_INFO, t);
        snprintf(ui->note, sizeof ui->note, "sent: %s ", cmd);
        if (f->n_pending == TUI_FOLLOW_PENDING) /* the oldest goes from view, not from the run */
            memmove(f->pending, f->pending + 1, sizeof f->pending[0] * (TUI_FOLLOW_PENDING - 1)),
                f->n_pending--;
        f->pending[f->n_pending].seq = seq;
        snprintf(f->pending[f->n_pending].cmd, sizeof f->pending[0].cmd, "%s", cmd);
        f->n_pending++;
        return 0;
    } else {
        snprintf(t, sizeof t, "could not send %s: %.80s", cmd, err);
        stream_note(f->r, NS_EV_NOTE, t);
        snprintf(ui->note, sizeof ui->note, "could not send %s ", cmd);
        return -1;
    }
}

/* Left/Right, Home/End: the history point shown (-1: the newest) */
static void move_view(tui_follow_state *f, tui_action a)
{
    long first = stream_hist_first(f->r), last = stream_hist_total(f->r) - 1;
    if (last < first)
        return;
    long v = f->view < 0 ? last : f->view;
    if (a == TUI_ACT_STEP_BACK)
        v = v > first ? v - 1 : first;
    else if (a == TUI_ACT_STEP_FWD)
        v = v + 1;
    else if (a == TUI_ACT_TOP)
        v = first;
    else
        v = last;
    f->view = v >= last ? -1 : v;
    f->changed = 1;
}

/* ---- the D panel: the lab's rules on the followed run ------------------------------ */

/* The finding whose fix a applies: the episode's (snapshot_diagnosis_fix),
 * else the run's first diagnosis once its episode ended. NULL: none. */
static const diag_finding *fix_finding(const tui_follow_state *f)
{
    const diag_finding *x = snapshot_diagnosis_fix(&stream_snapshot(f->r)->s.diag[0]);
    const stream_summary *u = stream_summary_of(f->r);
    return x ? x : u->diagnoses && u->cause.fix[0] ? &u->cause : NULL;
}

/* a: the fix through the control file. One from this step is its LR
 * factor; one that needs older weights pauses the run, which the panel
 * tells how to resume from its checkpoint. */
static void apply_fix(tui_follow_state *f, tui_ui *ui)
{
    const diag_finding *x = fix_finding(f);
    char cmd[64], text[TUI_DIAG_LINE];
    if (!x) {
        snprintf(ui->note, sizeof ui->note, "no finding has a fix ");
        return;
    }
    if (stream_fix(f->r, x, cmd, sizeof cmd, text, sizeof text)) {
        if (!f->paused && send_command(f, ui, "pause") == 0)
            f->paused = 1;
        return;
    }
    if (!cmd[0]) {
        snprintf(ui->note, sizeof ui->note, "the fix is the training script's (D says it) ");
        return;
    }
    for (char *save = NULL, *p = strtok_r(cmd, ";", &save); p; p = strtok_r(NULL, ";", &save))
        send_command(f, ui, p);
}

/* A key while the panel is shown: a applies the fix, and the run's own
 * keys (space, + -, C) act and leave it open; 0 for the others (they
 * close it, as in the lab). */
static int diag_key(tui_follow_state *f, tui_ui *ui, tui_action a)
{
    char text[64];
    if (ui->help)
        return 0;
    if (a == TUI_ACT_FIX) {
        apply_fix(f, ui);
    } else if (a == TUI_ACT_PAUSE) {
        if (send_command(f, ui, f->paused ? "resume" : "pause") == 0)
            f->paused = !f->paused;
    } else if (a == TUI_ACT_CHECKPOINT) {
        send_command(f, ui, "checkpoint");
    } else if (tui_bind_command(a, text, sizeof text) == 0 && !tui_action_changes_model(a)) {
        send_command(f, ui, text);
    } else {
        return 0;
    }
    return 1;
}

/* One finding: what was found, what to try, its fix as the followed run
 * takes it, and (for the one a applies) what a does. */
static void finding_lines(tui_diag_text *t, const tui_follow_state *f, const diag_finding *x)
{
    tui_say(t, "%s at step %ld: %s", x->kind == DIAG_WARNING ? "warning" : "DIAGNOSIS", x->step,
            x->text);
    tui_say(t, "    try: %s", x->hint);
    char cmd[64], fix[TUI_DIAG_LINE];
    int rewind = stream_fix(f->r, x, cmd, sizeof cmd, fix, sizeof fix);
    if (!fix[0])
        return;
    tui_say(t, "    fix: %s", fix);
    if (x != fix_finding(f))
        return;
    if (rewind)
        tui_say(t, "    keys: a pauses the run, to resume it from its checkpoint as the fix says");
    else if (cmd[0])
        tui_say(t, "    keys: a sends %s to the run", cmd);
}

int tui_follow_diag_lines(const tui_follow_state *f, char (*line)[TUI_DIAG_LINE], int max)
{
    tui_diag_text t = {line, 0, max};
    const trainer_status *s = &stream_snapshot(f->r)->s;
    const stream_summary *u = stream_summary_of(f->r);
    const trainer_diagnosis *d = &s->diag[0];
    if (!s->have_metrics) {
        tui_say(&t, "no steps yet: nothing to report");
    } else if (s->n_layer < 1) {
        tui_say(&t, "no diagnosis: the lab's rules read layers, and the stream has none");
    } else if (d->n > 0) { /* the cause first, then the warnings, oldest first */
        for (int rank = 0; rank < TRAINER_RANKS; rank++)
            for (int i = 0; i < d->n; i++)
                if (snapshot_finding_rank(&d->f[i]) == rank)
                    finding_lines(&t, f, &d->f[i]);
    } else if (u->diagnoses) { /* a setting change ended its episode: still the cause */
        finding_lines(&t, f, &u->cause);
    } else if (u->nonfinite_step) {
        tui_say(&t, "diverged at step %ld: no rule names a cause (first non-finite: %s)",
                u->nonfinite_step, u->nonfinite_where[0] ? u->nonfinite_where : "not named");
    } else {
        tui_say(&t, "no finding: no rule named a cause or gave a warning in the %ld steps read",
                u->rows);
    }
    if (s->have_metrics && s->n_layer > 0) { /* the questions behind a verdict, with answers */
        char l[TUI_DIAG_LINE];
        snapshot_verdict_text(d, l, sizeof l);
        tui_say(&t, "%s", l);
        for (int i = 0; i < d->n_checks; i++) {
            snapshot_check_text(&d->checks[i], l, sizeof l);
            tui_say(&t, "  %s", l);
        }
    }
    tui_say(&t, "%s", "");
    tui_say(&t,
            "keys: a the fix; space %s, + - the LR x2 / x0.5, C a checkpoint: sent to the run "
            "(%s.ctl); any other key closes this",
            f->paused ? "resumes" : "pauses", tail_base_name(f->path));
    return t.n;
}

static tui_style diag_style(const char *l)
{
    return !strncmp(l, "DIAGNOSIS", 9) || strstr(l, "? no:") ? TUI_S_BAD
           : !strncmp(l, "warning", 7) ? TUI_S_WARN
           : strstr(l, "? not yet known") ? TUI_S_DIM
           : !strncmp(l, "    keys:", 9) || !strncmp(l, "keys:", 5) ? TUI_S_KEY
                                                                   : TUI_S_TEXT;
}

/* The panel in the help's place (the lab's D overlay, drawn under it, is
 * covered whole) */
static void draw_diag(tui_grid *g, tui_rect r, const tui_ui *ui, const tui_follow_state *f)
{
    if (r.w < 20 || r.h < 4)
        return;
    static char lines[TUI_DIAG_MAX][TUI_DIAG_LINE];
    int n = tui_follow_diag_lines(f, lines, TUI_DIAG_MAX), rr = r.r + 1, last = r.r + r.h - 1, i;
    tui_fill(g, r.r, r.c, r.h, r.w, ' ', TUI_S_TEXT);
    tui_box(g, r, ui->unicode, TUI_S_BORDER);
    tui_puts(g, r.r, r.c + 2, r.w - 4, TUI_S_TITLE, " diagnosis of the followed run ");
    for (i = 0; i < n && rr < last; i++) {
        const char *l = lines[i];
        int ind = 0;
        while (l[ind] == ' ')
            ind++;
        if (!l[0])
            rr++;
        else if (!tui_put_wrapped(g, &rr, last, r.c + 2 + ind, r.w - 4 - ind, diag_style(l),
                                  l + ind))
            break;
    }
    /* the keys on the border too: on a short screen the last lines are cut */
    tui_puts(g, last, r.c + 2, r.w - 4, TUI_S_LABEL,
             i < n ? " more on a taller terminal; a: the fix; other keys close "
                   : " a: the fix; space + - C: to the run; other keys close ");
}

int tui_follow_action(tui_follow_state *f, tui_ui *ui, tui_action a)
{
    ns_command unused;
    if (ui->help || a == TUI_ACT_NONE) /* the key that closes help does nothing else */
        return tui_apply(ui, a, stream_snapshot(f->r)->s.n_layer, &unused), 0;
    if (ui->diag && diag_key(f, ui, a))
        return 1;
    if (a == TUI_ACT_FIX) /* outside the panel: the lab's note ("press D first") */
        return tui_apply(ui, a, stream_snapshot(f->r)->s.n_layer, &unused), 1;
    if (tui_action_changes_model(a)) {
        char t[NS_EVENT_TEXT];
        const char *what = "that key";
        int n;
        const tui_key *keys = tui_key_table(&n);
        for (int i = 0; i < n; i++)
            if (keys[i].act == a && keys[i].help) {
                what = keys[i].help;
                break;
            }
        snprintf(t, sizeof t, "not available while following: %.80s", what);
        stream_note(f->r, NS_EV_NOTE, t);
        snprintf(ui->note, sizeof ui->note, "not available while following ");
        return 1;
    }
    char text[64];
    if (tui_bind_command(a, text, sizeof text) == 0) { /* lr x2, lr x0.5: the followed run's */
        send_command(f, ui, text);
        return 1;
    }
    switch (a) {
    case TUI_ACT_PAUSE:
        if (send_command(f, ui, f->paused ? "resume" : "pause") == 0)
            f->paused = !f->paused;
        return 1;
    case TUI_ACT_CHECKPOINT: send_command(f, ui, "checkpoint"); return 1;
    case TUI_ACT_STEP_BACK: case TUI_ACT_STEP_FWD: case TUI_ACT_TOP: case TUI_ACT_BOTTOM:
        move_view(f, a);
        return 1;
    default:
        tui_apply(ui, a, stream_snapshot(f->r)->s.n_layer, &unused);
        return 0;
    }
}

/* ---- follow mode's lines of the frame ------------------------------------------ */

static tui_style state_style(trainer_state st)
{
    return st == TRAINER_RUNNING    ? TUI_S_RUN
           : st == TRAINER_PAUSED   ? TUI_S_PAUSE
           : st == TRAINER_DIVERGED ? TUI_S_DIVERGED
                                    : TUI_S_DONE;
}

static void fmt_num(char *b, size_t n, const char *what, double v)
{
    if (!isfinite(v))
        snprintf(b, n, "%s %s", what, isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
    else if (fabs(v) < 1e5 && fabs(v) >= 1e-3)
        snprintf(b, n, "%s %.4f", what, v);
    else
        snprintf(b, n, "%s %.3e", what, v);
}

/* A step column's value, or "-" when the stream did not say it */
static void fmt_col(char *b, size_t n, const char *what, const step_metrics *m, int k)
{
    float v;
    memcpy(&v, (const char *)m + metrics_step_col(k)->offset, sizeof v);
    if (metrics_known(m, k))
        fmt_num(b, n, what, v);
    else
        snprintf(b, n, "%s -", what);
}

/* Row 0: the step shown, its loss, validation, LR, gradient norm, state */
static void draw_values(tui_grid *g, tui_rect r, const trainer_snapshot *snap,
                        const tui_follow_state *f, int unicode)
{
    const trainer_status *s = &snap->s;
    const step_metrics *m = &s->run[0].last;
    tui_fill(g, r.r, r.c, 1, r.w, ' ', TUI_S_STATUS);
    char state[32];
    const char *word = f->live == STREAM_LIVE_ENDED       ? "ENDED"
                       : f->live == STREAM_LIVE_GONE      ? "GONE"
                       : f->live == STREAM_LIVE_WAITING   ? "WAITING"
                       : f->live == STREAM_LIVE_NOT_STREAM ? "NOT A STREAM"
                                                          : snapshot_state_name(s->state);
    snprintf(state, sizeof state, " %s ", word);
    int sw = (int)strlen(state), end = r.c + r.w - sw - 1;
    tui_puts(g, r.r, end, sw,
             f->live == STREAM_LIVE_GONE || f->live == STREAM_LIVE_NOT_STREAM ? TUI_S_BAD
             : f->live == STREAM_LIVE_ENDED ? TUI_S_DONE : state_style(s->state), state);
    char it[11][96];
    tui_style st[11];
    int n = 0;
    if (f->live == STREAM_LIVE_QUIET || f->live == STREAM_LIVE_GONE ||
        f->live == STREAM_LIVE_NOT_STREAM || /* said first: why the numbers stand still */
        (f->live == STREAM_LIVE_ENDED && stream_summary_of(f->r)->end_rank >= 0))
        snprintf(it[n], sizeof it[n], "%.90s", f->live_text), st[n++] = TUI_S_WARN;
    if (f->n_pending > 0) { /* sent, not applied yet: said before the numbers */
        snprintf(it[n], sizeof it[n], "pending:");
        for (int i = 0; i < f->n_pending && strlen(it[n]) < 60; i++)
            snprintf(it[n] + strlen(it[n]), sizeof it[n] - strlen(it[n]), " %s", f->pending[i].cmd);
        st[n++] = TUI_S_WARN;
    } else if (!(s->have_metrics && m->nonfinite)) { /* the module's name matters more */
        snprintf(it[n], sizeof it[n], "normscope follow"), st[n++] = TUI_S_TITLE;
    }
    if (s->diag[0].alert[0]) /* the rules' mark, as the lab's status line has it */
        snprintf(it[n], sizeof it[n], "! %s (D)", s->diag[0].alert), st[n++] = TUI_S_WARN;
    if (f->view >= 0)
        snprintf(it[n], sizeof it[n], "replay step %ld", m->step);
    else
        snprintf(it[n], sizeof it[n], "step %ld", s->have_metrics ? m->step : 0L);
    st[n++] = TUI_S_STATUS;
    if (s->have_metrics) {
        fmt_num(it[n], sizeof it[n], "loss", m->loss),
            st[n++] = isfinite(m->loss) ? TUI_S_STATUS : TUI_S_BAD;
        if (m->nonfinite)
            snprintf(it[n], sizeof it[n], "first non-finite: %s",
                     m->fault[0] ? m->fault : "not named"),
                st[n++] = TUI_S_BAD;
        if (s->last_val_step > 0)
            fmt_num(it[n], sizeof it[n], "val", s->run[0].last_val), st[n++] = TUI_S_STATUS;
        fmt_col(it[n], sizeof it[n], "lr", m, METRICS_COL_LR), st[n++] = TUI_S_STATUS;
        tui_status_out_change(snap, 0, m->step, unicode, it[n], sizeof it[n]);
        if (it[n][0]) /* the lab's own stream, or a probe that measures it */
            st[n++] = TUI_S_STATUS;
        if (!m->nonfinite)
            fmt_col(it[n], sizeof it[n], "|grad|", m, METRICS_COL_GNORM), st[n++] = TUI_S_STATUS;
    }
    int c = r.c + 1;
    for (int i = 0; i < n; i++) { /* whole items only: a cut number misleads */
        int len = (int)strlen(it[i]);
        if (c + len > end - 1)
            continue;
        c += tui_puts(g, r.r, c, len, st[i], it[i]) + 2;
    }
}

static void add_hit(tui_ui *ui, int r, int c0, int c1, tui_action a)
{
    if (ui->n_hits < TUI_MAX_HITS)
        ui->hits[ui->n_hits++] = (tui_hit){r, c0, c1, a, -1};
}

/* Row 1: the keys of follow mode (clickable), and what the stream is */
static void draw_keys(tui_grid *g, tui_rect r, const trainer_snapshot *snap, tui_ui *ui,
                      const tui_follow_state *f)
{
    int rr = r.r + 1;
    tui_fill(g, rr, r.c, 1, r.w, ' ', TUI_S_STATUS);
    struct {
        const char *key;
        char text[24];
        tui_action act;
    } k[] = {
        {"[space]", "", TUI_ACT_PAUSE},  {"[+-]", " lr x2 / x0.5", tui_bind_action("lr", "x2")},
        {"[C]", " checkpoint", TUI_ACT_CHECKPOINT}, {"[<>]", " replay", TUI_ACT_STEP_BACK},
        {"[m]", "", TUI_ACT_VIEW},       {"[y]", "", TUI_ACT_LOGY},
        {"[z]", "", TUI_ACT_FREEZE},
    };
    snprintf(k[0].text, sizeof k[0].text, " %s", f->paused ? "resume" : "pause");
    snprintf(k[4].text, sizeof k[4].text, " %s", ui->view == TUI_VIEW_HEATMAP ? "heatmap" : "bars");
    snprintf(k[5].text, sizeof k[5].text, " %s", ui->logy ? "log-y" : "linear");
    snprintf(k[6].text, sizeof k[6].text, " %s", ui->frozen ? "frozen" : "live");
    int c = r.c + 1;
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        int kl = (int)strlen(k[i].key), tl = (int)strlen(k[i].text);
        if (c + kl + tl > r.c + r.w - 1)
            break;
        tui_puts(g, rr, c, kl, TUI_S_KEY, k[i].key);
        tui_puts(g, rr, c + kl, tl, TUI_S_TOGGLE, k[i].text);
        add_hit(ui, rr, c, c + kl + tl, k[i].act);
        c += kl + tl + 2;
    }
    const stream_summary *u = stream_summary_of(f->r);
    char b[96];
    snprintf(b, sizeof b, "%.24s L=%d %s", u->have_header && u->model[0] ? u->model : "--jsonl",
             snap->s.n_layer,
             u->have_header && u->dtype[0] ? u->dtype : numfmt_name(snap->s.run[0].cfg.precision));
    int len = (int)strlen(b);
    if (c + len <= r.c + r.w - 1)
        tui_puts(g, rr, r.c + r.w - 1 - len, len, TUI_S_LABEL, b);
}

/* The row under the chart (the lab's sample): the file and the replay */
static void draw_info(tui_grid *g, tui_rect r, const trainer_snapshot *snap, int sel,
                      const tui_follow_state *f)
{
    if (r.h < 1 || r.w < 4)
        return;
    tui_fill(g, r.r, r.c, 1, r.w, ' ', TUI_S_TEXT);
    const stream_summary *u = stream_summary_of(f->r);
    char b[256];
    int c = r.c + 1;
    if (!stream_found(f->r)) {
        snprintf(b, sizeof b, "waiting for %s to appear", f->path);
        tui_puts(g, r.r, c, r.w - 2, TUI_S_DIM, b);
        return;
    }
    if (f->live == STREAM_LIVE_NOT_STREAM) {
        snprintf(b, sizeof b, "%s is not a normscope stream (line %ld is not a JSON object of "
                 "the format)", f->path, u->first_malformed_line ? u->first_malformed_line : 1L);
        tui_puts(g, r.r, c, r.w - 2, TUI_S_BAD, b);
        return;
    }
    snprintf(b, sizeof b, "following %s: %ld lines, %ld steps, %ld malformed; ", f->path,
             u->n_lines, u->rows, u->malformed);
    c += tui_puts(g, r.r, c, r.w - 2, TUI_S_LABEL, b);
    const char *block = stream_block_name(f->r, sel < 0 ? snap->s.n_layer - 1 : sel);
    if (block[0]) { /* which module the selected layer is */
        snprintf(b, sizeof b, "layer %d = %s; ", sel < 0 ? snap->s.n_layer - 1 : sel, block);
        c += tui_puts(g, r.r, c, r.c + r.w - 1 - c, TUI_S_TEXT, b);
    }
    long first = stream_hist_first(f->r), total = stream_hist_total(f->r);
    if (f->view >= 0)
        snprintf(b, sizeof b, "replay: step %ld, %ld of %ld (Left/Right, End: newest)",
                 snap->s.run[0].last.step, f->view - first + 1, total - first);
    else
        snprintf(b, sizeof b, "newest step (Left: replay)");
    tui_puts(g, r.r, c, r.c + r.w - 1 - c, f->view >= 0 ? TUI_S_WARN : TUI_S_DIM, b);
}

/* The footer: follow mode's keys, and a passing note at the right */
static void draw_footer(tui_grid *g, tui_rect r, tui_ui *ui)
{
    const struct {
        const char *key, *hint;
        tui_action act;
    } k[] = {
        {"Spc", "Pause", TUI_ACT_PAUSE}, {"+-", "LR", tui_bind_action("lr", "x2")},
        {"C", "Checkpoint", TUI_ACT_CHECKPOINT}, {"Left", "Replay", TUI_ACT_STEP_BACK},
        {"m", "View", TUI_ACT_VIEW}, {"y", "Log-y", TUI_ACT_LOGY},
        {"z", "Freeze", TUI_ACT_FREEZE}, {"F1", "Help", TUI_ACT_HELP},
        {"F10", "Quit", TUI_ACT_QUIT},
    };
    tui_fill(g, r.r, r.c, 1, r.w, ' ', TUI_S_TEXT);
    int c = r.c;
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        int kl = (int)strlen(k[i].key), hl = (int)strlen(k[i].hint);
        if (c + kl + hl + 1 > r.c + r.w)
            break;
        tui_puts(g, r.r, c, kl, TUI_S_KEY, k[i].key);
        tui_puts(g, r.r, c + kl, hl, TUI_S_STATUS, k[i].hint);
        add_hit(ui, r.r, c, c + kl + hl, k[i].act);
        c += kl + hl + 1;
    }
    int len = (int)strlen(ui->note);
    if (len && c + len < r.c + r.w)
        tui_puts(g, r.r, r.c + r.w - len, len, TUI_S_EV_NOTE, ui->note);
}

/* Drop the clicks recorded on rows [r0, r0 + h): their widgets are redrawn */
static void drop_hits(tui_ui *ui, int r0, int h)
{
    int n = 0;
    for (int i = 0; i < ui->n_hits; i++)
        if (ui->hits[i].r < r0 || ui->hits[i].r >= r0 + h)
            ui->hits[n++] = ui->hits[i];
    ui->n_hits = n;
}

void tui_follow_draw(tui_grid *g, const trainer_snapshot *s, tui_ui *ui,
                     const tui_follow_state *f)
{
    int cmp = s->s.compare && ui->view == TUI_VIEW_LAYERS;
    tui_layout L = tui_layout_compute_cmp(g->rows, g->cols, s->s.n_layer, cmp);
    if (L.too_small || L.status.h < 1)
        return;
    /* the lab's toggles and footer are not there: nor are their clicks */
    drop_hits(ui, L.status.r, L.status.h);
    drop_hits(ui, L.footer.r, L.footer.h);
    draw_values(g, L.status, s, f, ui->unicode);
    if (L.status.h >= 2)
        draw_keys(g, L.status, s, ui, f);
    draw_info(g, L.sample, s, ui->selected, f);
    if (L.footer.h >= 1)
        draw_footer(g, L.footer, ui);
    if (ui->help) { /* over the lines just drawn, as tui_draw puts it over its own */
        ui->n_hits = 0;
        tui_draw_help(g, L.help, ui);
    } else if (ui->diag) {
        ui->n_hits = 0;
        draw_diag(g, L.help, ui, f);
    }
}
