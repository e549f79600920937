/* tui_diag.c - the D overlay: each run's diagnosis in words. For every
 * finding of the run's current episode (trainer_diagnosis): what was
 * found, with its numbers; the layer's numbers now; what to try, and the
 * keys of this view that make those changes. Then the checks behind the
 * verdict (diag_checks): "healthy" only when every one answered ok, with
 * how much headroom it has; a question not yet answerable says why. The text is built apart
 * from the drawing (tui_diag_lines), so the tests read it without a grid;
 * no curses here either.
 */
#include "tui.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "twin.h"

void tui_say(tui_diag_text *t, const char *fmt, ...)
{
    if (t->n >= t->max)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->line[t->n++], TUI_DIAG_LINE, fmt, ap);
    va_end(ap);
}

/* A run's settings, metrics and findings, as the status holds them. */
typedef struct {
    const ns_config *cfg;
    const step_metrics *m;
    const trainer_diagnosis *d;
    int warmup_on;
    int run; /* 0 = a, 1 = b */
} run_view;

static run_view view_of(const trainer_status *s, int run)
{
    run_view v = {&s->run[run].cfg, &s->run[run].last, &s->diag[run],
                  s->run[run].warmup_on, run};
    return v;
}

static const char *key(tui_action a)
{
    static char b[8][8];
    static int next;
    char *k = b[next++ % 8];
    tui_key_name(a, k, sizeof b[0]);
    return k;
}

/* The key of a setting's command ("norm", "toggle"): the settings row's. */
static const char *bkey(const char *word, const char *how)
{
    return key(tui_bind_action(word, how));
}

/* The Post-LN family: the norms sit after the residual sum. */
static int post_like(int norm)
{
    return norm == NORM_POST || norm == NORM_DEEPNORM || norm == NORM_MIX;
}

/* Presses of the precision key from the format in force to bf16 (the
 * cycle is fp32 bf16 fp16). */
static int presses_to_bf16(numfmt p)
{
    return ((int)FMT_BF16 - (int)p + FMT_COUNT) % FMT_COUNT;
}

/* The keys that make the finding's suggested changes, as one line. */
/* A stall's keys: those of its own fix; none without one. */
static void stall_keys(tui_diag_text *t, const diag_finding *f, const run_view *v)
{
    if (!strcmp(f->fix, "clip 0"))
        tui_say(t, "    keys: %s turns clipping off", bkey("clip", "toggle"));
    else if (!strcmp(f->fix, "kind layernorm"))
        tui_say(t, "    keys: %s goes on to the next norm kind, layernorm", bkey("kind", "next"));
    else if (!strcmp(f->fix, "lr x10"))
        tui_say(t, "    keys: %s doubles the LR (3 presses: x8)", bkey("lr", "x2"));
    else if (post_like(v->cfg->norm) && f->fix[0])
        tui_say(t, "    keys: %s switches to Pre-LN; else %s re-inits, then %s turns warmup on",
                bkey("norm", "toggle"), key(TUI_ACT_REINIT), bkey("warmup", "toggle"));
    else if (f->fix[0])
        tui_say(t, "    keys: %s re-inits, then %s halves the LR", key(TUI_ACT_REINIT),
                bkey("lr", "x0.5"));
}

static void keys_line(tui_diag_text *t, const diag_finding *f, const run_view *v)
{
    int low = v->cfg->precision != FMT_FP32;
    const char *lr = bkey("lr", "x0.5"), *rw = key(TUI_ACT_REWIND), *sp = key(TUI_ACT_PAUSE);
    int bf = presses_to_bf16(v->cfg->precision);
    switch (f->rule) {
    case DIAG_R_HEADROOM:
        if (low && !v->cfg->fp32_norms)
            tui_say(t, "    keys: %s halves the LR; %s puts the norms in fp32", lr,
                    bkey("fp32-norms", "toggle"));
        else
            tui_say(t, "    keys: %s halves the LR", lr);
        break;
    case DIAG_R_VAL_NAN:
        tui_say(t, "    keys: %s pauses; %s halves the LR, then %s rewinds", sp, lr, rw);
        break;
    case DIAG_R_SCALE:
        if (bf)
            tui_say(t, "    keys: %s halves the LR; or %s pressed %d time%s: bf16", lr,
                    bkey("precision", "next"), bf, bf == 1 ? "" : "s");
        else
            tui_say(t, "    keys: %s halves the LR", lr);
        break;
    case DIAG_R_UPDATE:
        if (post_like(v->cfg->norm))
            tui_say(t, "    keys: %s switches to Pre-LN", bkey("norm", "toggle"));
        else
            tui_say(t, "    keys: %s halves the LR", lr);
        break;
    case DIAG_R_RESUMED:
        tui_say(t, "    keys: %s pauses; %s halves the LR or %s turns warmup on; then %s rewinds",
                sp, lr, bkey("warmup", "toggle"), rw);
        break;
    case DIAG_R_STALL:
        stall_keys(t, f, v);
        break;
    case DIAG_R_NORM_VAR:
        if (bf)
            tui_say(t,
                    "    keys: %s (fp32 norms) or %s x%d (bf16), and %s halves the LR; then %s "
                    "rewinds",
                    bkey("fp32-norms", "toggle"), bkey("precision", "next"), bf, lr, rw);
        else
            tui_say(t, "    keys: %s (fp32 norms) and %s halves the LR; then %s rewinds",
                    bkey("fp32-norms", "toggle"), lr, rw);
        break;
    case DIAG_R_LOSS:
        tui_say(t, "    keys: %s (softmax and loss in fp32), then %s rewinds",
                bkey("fp32-norms", "toggle"), rw);
        break;
    case DIAG_R_BLOWUP:
    case DIAG_R_LR_HIGH:
        if (f == snapshot_diagnosis_fix(v->d)) /* its fix line follows */
            tui_say(t, "    keys: %s halves the LR, then %s rewinds; %s (the fix below) does both",
                    lr, rw, key(TUI_ACT_FIX));
        else
            tui_say(t, "    keys: %s halves the LR, then %s rewinds", lr, rw);
        break;
    case DIAG_R_GROWTH:
        tui_say(t, "    keys: %s halves the LR, then %s rewinds (%s, clipping, will not help)", lr,
                rw, bkey("clip", "toggle"));
        break;
    case DIAG_R_LR:
        if (f->value[3] == 1) {
            tui_say(t, "    keys: press %s then %s: warmup on, rewind", bkey("warmup", "toggle"),
                    rw);
        } else {
            int n = f->value[0] > 0 ? (int)ceil(log2(f->value[1] / f->value[0]) - 1e-9) : 1;
            tui_say(t, "    keys: %s pressed %d time%s (LR back to %g or below), then %s rewinds",
                    lr, n, n == 1 ? "" : "s", f->value[0], rw);
        }
        break;
    default:
        break;
    }
}

/* What the fix key does for finding f, as one line: where it goes back
 * to (with that snapshot's headroom when the trainer gave it). */
static void fix_line(tui_diag_text *t, const diag_finding *f, const trainer_status *s,
                     const run_view *v)
{
    char back[NS_EVENT_TEXT + 16];
    if (f->fix_from == DIAG_FROM_SNAPSHOT && v->d->fix_reinit)
        snprintf(back, sizeof back, "re-inits (no snapshot at or before step %ld is kept and "
                 "still healthy)",
                 f->fix_before > 0 ? f->fix_before : 0);
    else if (f->fix_from == DIAG_FROM_SNAPSHOT && v->d->fix_rewind[0])
        snprintf(back, sizeof back, "rewinds to %s", v->d->fix_rewind);
    else if (f->fix_from == DIAG_FROM_SNAPSHOT)
        snprintf(back, sizeof back, "rewinds to the snapshot at or before step %ld",
                 f->fix_before > 0 ? f->fix_before : 0);
    else if (f->fix_from == DIAG_FROM_START)
        snprintf(back, sizeof back, "re-inits (step 0)");
    else
        snprintf(back, sizeof back, "stays at this step");
    const char *cmds = v->d->fix_cmds[0] ? v->d->fix_cmds : f->fix; /* every candidate's */
    const trainer_diagnosis *runs[2] = {&s->diag[0], &s->diag[1]};
    int fr = snapshot_fix_run(runs, s->compare ? 2 : 1, trainer_diverged_run(s));
    if (s->compare && fr != v->run) /* a takes the other run's: say this one's as what it is */
        tui_say(t, "    its fix: %s, then %s (%s applies run %c's: the run that diverged, else a)",
                back, cmds, key(TUI_ACT_FIX), fr == 1 ? 'b' : 'a');
    else if (s->fixes >= TRAINER_FIX_MAX)
        tui_say(t, "    %s: %d fixes applied, the most: no more", key(TUI_ACT_FIX), s->fixes);
    else
        tui_say(t,
                "    %s applies the fix: %s, then %s, and trains on (fix %d of %d; it must beat "
                "this state within %d steps)",
                key(TUI_ACT_FIX), back, cmds, s->fixes + 1, TRAINER_FIX_MAX, DIAG_FIX_CHECK);
}

/* The layer with the least headroom now (finite), or -1. */
static int least_headroom(const step_metrics *m)
{
    int lo = -1;
    for (int l = 0; l < m->n_layer && l < NS_MAX_LAYERS; l++)
        if (isfinite(m->layer[l].headroom) &&
            (lo < 0 || m->layer[l].headroom < m->layer[lo].headroom))
            lo = l;
    return lo;
}

/* "%.4g", or "nan"/"inf" without a sign */
static const char *num(double x)
{
    static char b[8][24];
    static int next;
    char *p = b[next++ % 8];
    if (isnan(x))
        snprintf(p, sizeof b[0], "nan");
    else if (isinf(x))
        snprintf(p, sizeof b[0], "inf");
    else
        snprintf(p, sizeof b[0], "%.4g", x);
    return p;
}

/* The evidence in the latest step: the finding's layer as it is now. */
static void layer_now(tui_diag_text *t, int l, const run_view *v, int have)
{
    if (!have || l < 0 || l >= v->m->n_layer || l >= NS_MAX_LAYERS)
        return;
    const layer_metrics *lm = &v->m->layer[l];
    tui_say(t,
            "    now (step %ld): layer %d act max %s, headroom %s doublings, gradient %s, "
            "update ratio %s",
            v->m->step, l, num(lm->act_max), num(lm->headroom), num(metrics_layer_gnorm(lm)),
            num(lm->update_ratio));
}

/* Where b goes and how close that snapshot is to the limit, the words
 * the event log gave at the divergence (trainer_diagnosis.rewind). */
static void rewind_line(tui_diag_text *t, const run_view *v)
{
    if (v->d->rewind[0])
        tui_say(t, "    %s rewinds to %s", key(TUI_ACT_REWIND), v->d->rewind);
}

/* The latest fix's result, once its check passed. */
static void proven_line(tui_diag_text *t, const run_view *v, const char *ind)
{
    if (v->d->fix_proven[0])
        tui_say(t, "%s%s", ind, v->d->fix_proven);
}

/* With no finding: the verdict, which is "healthy" only when every check
 * answered ok (diag_healthy), with the lowest headroom; else what keeps
 * it from being said. */
static void verdict_line(tui_diag_text *t, const run_view *v, const char *ind)
{
    int bad, unknown, lo = least_headroom(v->m);
    snapshot_check_counts(v->d, &bad, &unknown);
    if (v->d->fix_note[0])
        tui_say(t, "%sno warnings, but not %shealthy: %s", ind,
                strstr(v->d->fix_note, "did not help") ? "" : "yet known to be ", v->d->fix_note);
    else if (v->d->healthy && lo >= 0)
        tui_say(t,
                "%sno warnings; the run is healthy: headroom %.2f doublings at its lowest "
                "(layer %d, act max %s); loss scale %g",
                ind, (double)v->m->layer[lo].headroom, lo, num(v->m->layer[lo].act_max),
                (double)v->m->loss_scale);
    else if (v->d->healthy)
        tui_say(t, "%sno warnings; the run is healthy: every check answered ok", ind);
    else if (v->d->n_checks == 0)
        tui_say(t, "%sno warnings; not known to be healthy: no check was made", ind);
    else if (bad)
        tui_say(t, "%sno warnings, but not healthy: %d check%s answered no", ind, bad,
                bad == 1 ? "" : "s");
    else
        tui_say(t, "%sno warnings; not yet known to be healthy: %d check%s not yet known", ind,
                unknown, unknown == 1 ? "" : "s");
    proven_line(t, v, ind);
}

/* Above findings: the fix in progress or the latest one's result, which
 * a newer finding does not hide, first (the panel is cut at its foot on a
 * short screen; the verdict line says them when no finding is open). */
static void fix_story_lines(tui_diag_text *t, const run_view *v, const char *ind)
{
    if (v->d->fix_note[0])
        tui_say(t, "%s%s", ind, v->d->fix_note);
    proven_line(t, v, ind);
}

/* The questions behind the verdict, each with its answer and numbers. */
static void check_lines(tui_diag_text *t, const trainer_diagnosis *d, const char *ind)
{
    if (d->n_checks > 0)
        tui_say(t, "%schecks:", ind);
    for (int i = 0; i < d->n_checks; i++) {
        const diag_check *c = &d->checks[i];
        if (c->answer == DIAG_Q_UNKNOWN) /* its text says "not yet known: why" */
            tui_say(t, "%s  %s? %s", ind, c->question, c->text);
        else
            tui_say(t, "%s  %s? %s: %s", ind, c->question, diag_answer_name(c->answer), c->text);
    }
}

static void run_lines(tui_diag_text *t, const trainer_status *s, int run)
{
    run_view v = view_of(s, run);
    if (s->compare)
        tui_say(t, "%s", s->run[run].label);
    if (s->compare && run == 1) /* before b's findings: a short screen cuts the last */
        tui_say(t, "    (keys act on the target: Tab until it reads b, or both)");
    const char *ind = s->compare ? "  " : "";
    if (!s->have_metrics) {
        tui_say(t, "%sno steps yet: nothing to report", ind);
        return;
    }
    if (v.d->n == 0 && v.d->rewind[0]) { /* diverged, and no rule named it */
        tui_say(t, "%sdiverged at step %ld: no rule names a cause", ind, v.m->step);
        rewind_line(t, &v);
        return;
    }
    if (v.d->n == 0) {
        verdict_line(t, &v, ind);
        check_lines(t, v.d, ind);
        return;
    }
    fix_story_lines(t, &v, ind);
    /* the cause first (a divergence's or a blow-up's, then a stall's; where
     * b goes follows it), then the warnings that came before; each rank
     * oldest first (snapshot_finding_rank) */
    int rewind_said = 0;
    for (int rank = 0; rank < TRAINER_RANKS; rank++)
        for (int i = 0; i < v.d->n; i++) {
            const diag_finding *f = &v.d->f[i];
            if (snapshot_finding_rank(f) != rank)
                continue;
            tui_say(t, "%s%s at step %ld: %s", ind,
                    f->kind == DIAG_WARNING ? "warning" : "DIAGNOSIS", f->step, f->text);
            layer_now(t, f->layer, &v, s->have_metrics);
            tui_say(t, "    try: %s", f->hint);
            keys_line(t, f, &v);
            if (f == snapshot_diagnosis_fix(v.d))
                fix_line(t, f, s, &v);
            if (!rewind_said++)
                rewind_line(t, &v);
        }
    check_lines(t, v.d, ind);
}

int tui_diag_lines(const trainer_status *s, char (*line)[TUI_DIAG_LINE], int max)
{
    tui_diag_text t = {line, 0, max};
    run_lines(&t, s, 0);
    if (s->compare) {
        tui_say(&t, "%s", "");
        run_lines(&t, s, 1);
    }
    return t.n;
}

/* Draw one logical line wrapped at word boundaries to w columns, the
 * continuation indented 6; returns the rows used (at most to row `last`). */
static int draw_wrapped(tui_grid *g, int r, int c, int w, int last, tui_style st, const char *s)
{
    int rows = 0, first = 1;
    size_t len = strlen(s);
    while (len > 0 && r + rows < last) {
        int ind = first ? 0 : 6, room = w - ind;
        size_t take = len;
        if ((int)take > room) {
            take = (size_t)room;
            while (take > 0 && s[take] != ' ')
                take--;
            if (take == 0)
                take = (size_t)room;
        }
        char part[TUI_DIAG_LINE];
        snprintf(part, sizeof part, "%.*s", (int)take, s);
        tui_puts(g, r + rows, c + ind, room, st, part);
        rows++;
        s += take;
        len -= take;
        while (*s == ' ')
            s++, len--;
        first = 0;
    }
    return rows;
}

static tui_style line_style(const char *l)
{
    if (strstr(l, "DIAGNOSIS at"))
        return TUI_S_BAD;
    if (strstr(l, "warning at") || strstr(l, "? no: "))
        return TUI_S_WARN;
    if (strncmp(l, "    keys:", 9) == 0)
        return TUI_S_KEY;
    return TUI_S_TEXT;
}

void tui_draw_diag(tui_grid *g, tui_rect r, const trainer_snapshot *s, const tui_ui *ui)
{
    if (r.w < 20 || r.h < 4)
        return;
    static char lines[TUI_DIAG_MAX][TUI_DIAG_LINE];
    int n = tui_diag_lines(&s->s, lines, TUI_DIAG_MAX);
    tui_fill(g, r.r, r.c, r.h, r.w, ' ', TUI_S_TEXT);
    tui_box(g, r, ui->unicode, TUI_S_BORDER);
    tui_puts(g, r.r, r.c + 2, r.w - 4, TUI_S_TITLE, " diagnosis ");
    int rr = r.r + 1, last = r.r + r.h - 1, i = 0;
    for (; i < n && rr < last; i++)
        rr += lines[i][0] ? draw_wrapped(g, rr, r.c + 2, r.w - 4, last, line_style(lines[i]),
                                         lines[i])
                          : 1;
    /* the warnings come last: on a short screen they are what is cut */
    tui_puts(g, last, r.c + 2, r.w - 4, TUI_S_LABEL,
             i < n ? " more on a taller terminal; any key closes this "
                   : " any key closes this; q quits ");
}
