/* test_twin.c - the two-run (--compare) rule and what the two-run view
 * says about it. Two small real engines stand for runs a and b; every key
 * of the key table is applied in turn (Tab among them, so the target
 * moves), each through tui_apply and twin_apply as the live view does,
 * and after each key:
 *   - no setting in which the runs differed has been swapped between them;
 *   - a toggle under `both` left the runs equal in that setting, one under
 *     `a` or `b` changed only that run;
 *   - a frame drawn at 100x30, 120x40 and 200x60 shows the target, each
 *     panel's header shows its own run's settings (not the other's), the
 *     toggles show the target run's values, and run b has a status row.
 * Also the relative view of the gradient bars (a 3x bottom/top profile is
 * at least a third of a bar), the panels' stated drop order, and the
 * script prefix "b:"; and through the trainer thread, a command sent to
 * run b changes b only and is an event and a chart marker of run b's.
 * No curses.
 * Not here: the rest of the trainer (test_trainer.c), the real binary
 * (tests/sh/twin.sh, tests/sh/tui_twin.sh). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "data.h"
#include "numfmt.h"
#include "settings.h"
#include "testengine.h"
#include "testutil.h"
#include "tui.h"
#include "twin.h"

static dataset D;
static char row_buf[8192];

static const char *row(const tui_grid *g, int r)
{
    tui_row_utf8(g, r, row_buf, sizeof row_buf);
    return row_buf;
}

/* Columns c0..c0+w of row r, trailing spaces cut. */
static const char *span(const tui_grid *g, int r, int c0, int w)
{
    static char out[1024];
    const char *s = row(g, r);
    int n = (int)strlen(s);
    if (c0 > n)
        c0 = n;
    if (c0 + w > n)
        w = n - c0;
    memcpy(out, s + c0, (size_t)w);
    out[w] = 0;
    while (w > 0 && out[w - 1] == ' ')
        out[--w] = 0;
    return out;
}

static ns_config small_cfg(void)
{
    ns_config c;
    settings_defaults(&c);
    c.n_layer = 3;
    c.dim = 16;
    c.n_head = 2;
    c.context = 16;
    c.batch = 2;
    c.val_every = 0;
    c.precision = FMT_FP16;
    c.fp32_norms = 0;
    return c;
}

static engine *make(const ns_config *c) { return test_engine_create(c, &D); }

/* The settings a key can change, one number each, to compare runs. */
enum { S_NORM, S_KIND, S_WARM, S_PREC, S_FP32N, S_SCALE, S_CLIP, S_LR, N_SET };

static void settings_of(const engine *e, double v[N_SET])
{
    const ns_config *c = engine_config(e);
    v[S_NORM] = c->norm;
    v[S_KIND] = c->norm_kind;
    v[S_WARM] = engine_warmup_on(e);
    v[S_PREC] = c->precision;
    v[S_FP32N] = c->fp32_norms;
    v[S_SCALE] = c->loss_scale;
    v[S_CLIP] = c->clip;
    v[S_LR] = engine_current_peak(e);
}

/* The setting a settings command changes, or -1. */
static int setting_of(const ns_command *c)
{
    static const char *const words[N_SET] = {
        [S_NORM] = "norm",        [S_KIND] = "kind",         [S_WARM] = "warmup",
        [S_PREC] = "precision",   [S_FP32N] = "fp32-norms",  [S_SCALE] = "loss-scale",
        [S_CLIP] = "clip",        [S_LR] = "lr"};
    const ns_setting *s = command_row(c);
    for (int i = 0; s && i < N_SET; i++)
        if (words[i] && !strcmp(s->cmd, words[i]))
            return i;
    return -1;
}

static ns_command cmd(const char *text) { return test_command(text); }

/* A snapshot as the trainer publishes it, from the two engines. */
static void fill(trainer_snapshot *s, engine *a, engine *b)
{
    trainer_status *st = &s->s;
    st->compare = 1;
    st->run[0].cfg = *engine_config(a);
    st->run[1].cfg = *engine_config(b);
    st->n_layer = st->run[0].cfg.n_layer;
    st->run[0].warmup_on = engine_warmup_on(a);
    st->run[1].warmup_on = engine_warmup_on(b);
    st->run[0].lr_peak = engine_current_peak(a);
    st->run[1].lr_peak = engine_current_peak(b);
    st->run[0].lr_next = engine_current_lr(a);
    st->run[1].lr_next = engine_current_lr(b);
    st->generation = 1;
}

static const char *place_label(norm_place p)
{
    static const char *const n[] = {"Post-LN", "Pre-LN", "Sandwich-LN", "DeepNorm",
                                    "ReZero",  "no norm", "Mix-LN"};
    return (unsigned)p < sizeof n / sizeof n[0] ? n[p] : "?";
}

/* A word of a panel header: the value alone, or as name=value. */
static int header_has(const char *h, const char *name, const char *value)
{
    char a[64], b[64];
    snprintf(a, sizeof a, " %s=%s", name, value);
    snprintf(b, sizeof b, " %s ", value);
    char padded[1100];
    snprintf(padded, sizeof padded, "%s ", h);
    return strstr(padded, a) != NULL || strstr(padded, b) != NULL;
}

static int label_fails; /* frames whose labels disagreed with the state */

/* Each panel's header says its run's placement, kind and precision (all
 * of them when it is not cut at the panel's width, else the first setting
 * in which the runs differ), and never the other run's differing value. */
static void check_header(const char *h, const ns_config *mine, const ns_config *other, int w,
                         int whole)
{
    int full = whole <= w, first = 1;
    const char *pm = config_norm_place_name(mine->norm), *po = config_norm_place_name(other->norm);
    const char *km = config_norm_kind_name(mine->norm_kind), *ko = config_norm_kind_name(other->norm_kind);
    const char *fm = numfmt_name(mine->precision), *fo = numfmt_name(other->precision);
    int ok = 1;
    if (full)
        ok &= header_has(h, "norm", pm) && header_has(h, "norm-kind", km) &&
              header_has(h, "precision", fm);
    if (strcmp(pm, po)) {
        ok &= header_has(h, "norm", pm) && !header_has(h, "norm", po);
        first = 0;
    }
    if (strcmp(km, ko)) {
        ok &= !header_has(h, "norm-kind", ko) && (header_has(h, "norm-kind", km) || !first);
        first = 0;
    }
    if (strcmp(fm, fo)) {
        ok &= !header_has(h, "precision", fo) && (header_has(h, "precision", fm) || !first);
        first = 0;
    }
    if (mine->precision != FMT_FP32 && other->precision != FMT_FP32 &&
        mine->fp32_norms != other->fp32_norms)
        ok &= header_has(h, "fp32-norms", mine->fp32_norms ? "on" : "off") || (!full && !first);
    if (!ok) {
        fprintf(stderr, "header '%s' does not match its run (other: %s %s %s %d)\n", h, po, ko, fo, other->fp32_norms);
        label_fails++;
    }
}

/* One frame at rows x cols: the target, both headers, the toggles of the
 * target run, and run b's status row. */
static void check_frame(int rows, int cols, trainer_snapshot *s, tui_ui *ui)
{
    tui_grid g = {0};
    tui_grid_resize(&g, rows, cols);
    tui_draw(&g, s, ui);
    tui_layout L = tui_layout_compute_cmp(rows, cols, s->s.n_layer, 1);
    char want[64];
    snprintf(want, sizeof want, "TARGET %s", twin_target_name((twin_target)ui->target));
    int ok = strstr(row(&g, 0), want) != NULL;
    ok &= strncmp(row(&g, 1), " b: ", 4) == 0;
    /* the whole label's length says whether the header was cut */
    char la[160], lb[160];
    twin_run ra = snapshot_status_twin(&s->s, 0), rb = snapshot_status_twin(&s->s, 1);
    twin_label("a", ra, rb, la, sizeof la);
    twin_label("b", rb, ra, lb, sizeof lb);
    check_header(span(&g, L.layers.r, L.layers.c, L.layers.w), &s->s.run[0].cfg, &s->s.run[1].cfg,
                 L.layers.w, (int)strlen(la));
    check_header(span(&g, L.layers_b.r, L.layers_b.c, L.layers_b.w), &s->s.run[1].cfg, &s->s.run[0].cfg,
                 L.layers_b.w, (int)strlen(lb));
    const ns_config *t = &s->s.run[ui->target == TWIN_B].cfg;
    int warm = s->s.run[ui->target == TWIN_B].warmup_on;
    const char *tg = row(&g, 2);
    snprintf(want, sizeof want, "[p] %s ", place_label(t->norm));
    ok &= strstr(tg, want) != NULL;
    snprintf(want, sizeof want, "[k] %s ", config_norm_kind_name(t->norm_kind));
    ok &= strstr(tg, want) != NULL;
    snprintf(want, sizeof want, "[w] warmup %s ", warm ? "on" : "off");
    ok &= strstr(tg, want) != NULL;
    snprintf(want, sizeof want, "[f] %s ", numfmt_name(t->precision));
    ok &= strstr(tg, want) != NULL;
    if (t->precision != FMT_FP32) {
        snprintf(want, sizeof want, "[i] %s norms", t->fp32_norms ? "fp32" : "low");
        ok &= strstr(tg, want) != NULL;
    }
    if (!ok) {
        fprintf(stderr, "%dx%d, target %d:\n%s\n", cols, rows, ui->target, row(&g, 0));
        fprintf(stderr, "%s\n", row(&g, 1));
        fprintf(stderr, "%s\n", row(&g, 2));
        label_fails++;
    }
    tui_grid_free(&g);
}

/* Every key of the table in turn, twice (the target moves with Tab), the
 * runs' settings checked after each, and the frame at three sizes. */
static void test_keys_in_turn(void)
{
    ns_config ca = small_cfg(), cb = small_cfg();
    cb.fp32_norms = 1; /* the fp16-layernorm lesson's pair */
    cb.norm = NORM_POST;
    engine *a = make(&ca), *b = make(&cb);
    CHECK(a && b);
    if (!a || !b)
        return;
    trainer_snapshot *s = snapshot_new();
    tui_ui ui;
    tui_ui_init(&ui, 0, 0);
    int swaps = 0, both_unequal = 0, leaked = 0, applied = 0, frames = 0, n_keys;
    const tui_key *keys = tui_key_table(&n_keys);
    for (int pass = 0; pass < 3; pass++)
        for (int i = 0; i < n_keys; i++) {
            tui_action act = keys[i].act;
            if (act == TUI_ACT_QUIT || act == TUI_ACT_HELP || act == TUI_ACT_DIAG ||
                act == TUI_ACT_REINIT || act == TUI_ACT_REWIND || act == TUI_ACT_DUMP_SCREEN ||
                act == TUI_ACT_DUMP_METRICS || act == TUI_ACT_VIEW)
                continue; /* no setting, or nothing on these rows (an overlay covers them) */
            ns_command c;
            double va[N_SET], vb[N_SET], wa[N_SET], wb[N_SET];
            settings_of(a, va);
            settings_of(b, vb);
            int target = ui.target, sent = tui_apply(&ui, act, 3, &c);
            if (sent) {
                twin_apply(a, b, &c, (twin_target)target);
                applied++;
            }
            settings_of(a, wa);
            settings_of(b, wb);
            int k = sent ? setting_of(&c) : -1;
            for (int j = 0; j < N_SET; j++)
                swaps += va[j] != vb[j] && wa[j] == vb[j] && wb[j] == va[j];
            if (k >= 0) {
                if (target == TWIN_BOTH && k != S_LR) /* a ratio keeps the runs' own rates */
                    both_unequal += wa[k] != wb[k];
                if (target == TWIN_A)
                    leaked += wb[k] != vb[k];
                if (target == TWIN_B)
                    leaked += wa[k] != va[k];
            }
            fill(s, a, b);
            check_frame(30, 100, s, &ui);
            check_frame(40, 120, s, &ui);
            check_frame(60, 200, s, &ui);
            frames += 3;
        }
    CHECK(applied >= 30);
    CHECK(frames >= 90);
    CHECK(swaps == 0);
    CHECK(both_unequal == 0);
    CHECK(leaked == 0);
    CHECK(label_fails == 0);
    free(s);
    engine_free(a);
    engine_free(b);
}

/* The rule's cases one by one, on the fp16-layernorm lesson's pair: the
 * tour's repair key i under both leaves both on (b is not turned off). */
static void test_rule(void)
{
    ns_config ca = small_cfg(), cb = small_cfg();
    cb.fp32_norms = 1;
    engine *a = make(&ca), *b = make(&cb);
    if (!a || !b)
        return;
    ns_command c = cmd("fp32-norms toggle");
    twin_apply(a, b, &c, TWIN_BOTH);
    CHECK(engine_config(a)->fp32_norms == 1 && engine_config(b)->fp32_norms == 1);
    twin_apply(a, b, &c, TWIN_B);
    CHECK(engine_config(a)->fp32_norms == 1 && engine_config(b)->fp32_norms == 0);
    twin_apply(a, b, &c, TWIN_A);
    CHECK(engine_config(a)->fp32_norms == 0 && engine_config(b)->fp32_norms == 0);
    /* a ratio scales each run's own rate */
    ns_command lr = cmd("lr 1e-3");
    twin_apply(a, b, &lr, TWIN_B);
    ns_command x2 = cmd("lr x2");
    float pa = engine_current_peak(a);
    twin_apply(a, b, &x2, TWIN_BOTH);
    CHECK(t_close(engine_current_peak(a), 2 * pa, 1e-6, 0));
    CHECK(t_close(engine_current_peak(b), 2e-3, 1e-6, 0));
    /* under a, the factor is run a's alone */
    twin_apply(a, b, &x2, TWIN_A);
    CHECK(t_close(engine_current_peak(a), 4 * pa, 1e-6, 0));
    CHECK(t_close(engine_current_peak(b), 2e-3, 1e-6, 0));
    CHECK(twin_acts_on(&x2, TWIN_A, 0) && !twin_acts_on(&x2, TWIN_A, 1));
    /* the target set: a cycle under both is computed from a */
    ns_command p = cmd("norm next");
    twin_apply(a, b, &p, TWIN_B);
    twin_apply(a, b, &p, TWIN_BOTH);
    CHECK(engine_config(a)->norm == engine_config(b)->norm);
    CHECK(engine_config(a)->norm == (norm_place)((ca.norm + 1) % NORM_PLACE_COUNT));
    /* a note is said once: by the run it names ("b: note"), else by a */
    long na = engine_event_count(a), nb = engine_event_count(b);
    ns_command note = command_make(CMD_NOTE);
    snprintf(note.text, sizeof note.text, "hello");
    twin_apply(a, b, &note, TWIN_B);
    CHECK(engine_event_count(a) == na && engine_event_count(b) == nb + 1);
    CHECK(twin_acts_on(&note, TWIN_B, 1) && !twin_acts_on(&note, TWIN_B, 0));
    twin_apply(a, b, &note, TWIN_BOTH);
    CHECK(engine_event_count(a) == na + 1 && engine_event_count(b) == nb + 1);
    CHECK(twin_acts_on(&note, TWIN_BOTH, 0) && !twin_acts_on(&note, TWIN_BOTH, 1));
    CHECK(twin_acts_on(&c, TWIN_B, 1) && !twin_acts_on(&c, TWIN_B, 0));
    CHECK(twin_acts_on(&c, TWIN_BOTH, 0) && twin_acts_on(&c, TWIN_BOTH, 1));
    ns_command rw = command_make(CMD_REWIND);
    CHECK(twin_acts_on(&rw, TWIN_A, 1)); /* the shared clock */
    engine_free(a);
    engine_free(b);
}

/* The relative view: a 3x difference between the bottom and the top
 * layer is at least a third of the bar (on the absolute axis it is not). */
static void test_relative_bars(void)
{
    static const int widths[] = {45, 55, 95};
    for (int z = 0; z < 3; z++) {
        tui_twin_cols k = tui_twin_columns(widths[z], 0);
        double lo, hi, diff[2];
        for (int rel = 0; rel < 2; rel++) {
            tui_bar_axis(rel, 4.5, &lo, &hi);
            diff[rel] = tui_log_eighths_d(4.5, lo, hi, k.bar) - tui_log_eighths_d(1.5, lo, hi, k.bar);
        }
        CHECK(diff[1] >= 8.0 * k.bar / 3.0);
        CHECK(diff[0] < 8.0 * k.bar / 3.0);
    }
    /* not finite, or no gradient yet: the absolute axis */
    double lo, hi;
    tui_bar_axis(1, NAN, &lo, &hi);
    CHECK(lo == SCALE_GRAD_LO && hi == SCALE_GRAD_HI);
}

/* The panels drop columns in the stated order as the width shrinks: rms,
 * then the activation bar, then the headroom, then the activation number;
 * the two gradient bars always stay, and nothing runs past the width. */
static void test_drop_order(void)
{
    int bad = 0;
    for (int w = 120; w >= 21; w--) {
        tui_twin_cols k = tui_twin_columns(w, 1);
        int kept[4] = {k.rms >= 0, k.act >= 0, k.prec >= 0, k.act_num >= 0};
        int rank = 0; /* how many of the drop order are gone */
        while (rank < 4 && !kept[rank])
            rank++;
        for (int i = rank; i < 4; i++)
            bad += !kept[i]; /* a later one gone before an earlier */
        int end = k.rms >= 0 ? k.rms + 8 : k.prec >= 0 ? k.prec + 9 : k.act_num >= 0 ? k.act_num + 8
                  : k.ffn + k.bar;
        bad += end > w || k.bar < TUI_TWIN_BAR_MIN || k.ffn != k.attn + k.bar + 1;
        bad += k.act >= 0 && k.act_w < TUI_TWIN_ACT_MIN;
    }
    CHECK(bad == 0);
    CHECK(tui_twin_columns(120, 1).rms >= 0);  /* all of them at 120 */
    CHECK(tui_twin_columns(40, 0).rms < 0 && tui_twin_columns(40, 0).act >= 0);
    /* at 80 columns (35 a panel) the numbers stay, the bar goes */
    CHECK(tui_twin_columns(35, 1).prec >= 0 && tui_twin_columns(35, 1).act_num >= 0 &&
          tui_twin_columns(35, 1).act < 0);
}

/* Scripts: "b:" and "a:" name the run; no prefix is both. */
static void test_script_prefix(void)
{
    ns_script sc;
    char err[256];
    CHECK(command_script_parse("at 2: b: lr 1e-3\nat 3: a: fp32-norms on\nat 4: norm next\n", "t", &sc,
                       err, sizeof err) == 0);
    CHECK(sc.n == 3 && sc.e[0].target == TWIN_B && sc.e[1].target == TWIN_A &&
          sc.e[2].target == TWIN_BOTH);
    CHECK(setting_of(&sc.e[0].cmd) == S_LR && setting_of(&sc.e[1].cmd) == S_FP32N);
    command_script_free(&sc);
    CHECK(command_script_parse("at 2: c: lr 1e-3\n", "t", &sc, err, sizeof err) != 0);
}

/* Through the trainer: targets travel with the commands. */
static int has_event(const trainer_snapshot *s, const char *text)
{
    long first = s->s.ev_total > TRAINER_EVENTS ? s->s.ev_total - TRAINER_EVENTS : 0;
    for (long i = first; i < s->s.ev_total; i++)
        if (strstr(s->ev[i % TRAINER_EVENTS].text, text))
            return 1;
    return 0;
}

/* One twin command sequence through the trainer thread: each of the n
 * commands (to its target) followed by one step, then the snapshot after
 * those n steps in s. 0, or -1 when the pair could not be made. */
typedef struct {
    const char *cmd;
    twin_target to;
} twin_send;

static int run_pair(ns_config ca, ns_config cb, const twin_send *c, int n, trainer_snapshot *s)
{
    engine *a = make(&ca), *b = make(&cb);
    trainer_opts o = {.start_paused = 1, .twin = b};
    char err[256];
    trainer *t = a && b ? trainer_create(a, &o, err, sizeof err) : NULL;
    CHECK(t != NULL);
    if (t) {
        ns_command step = command_make(CMD_STEP);
        for (int i = 0; i < n; i++) {
            ns_command k = cmd(c[i].cmd);
            CHECK(trainer_send_to(t, &k, c[i].to) == 0);
            CHECK(trainer_send(t, &step) == 0);
        }
        CHECK(trainer_start(t, err, sizeof err) == 0);
        for (int i = 0; i < 400 && s->s.steps_done < n; i++) {
            trainer_snapshot_copy(t, s);
            trainer_wait(t, s->s.seq, 0.05);
        }
        trainer_stop(t);
        trainer_snapshot_copy(t, s);
        CHECK(s->s.steps_done == n);
        trainer_free(t);
    }
    engine_free(a);
    engine_free(b);
    return t ? 0 : -1;
}

static void test_trainer_targets(void)
{
    ns_config ca = small_cfg(), cb = small_cfg();
    cb.fp32_norms = 1;
    trainer_snapshot *s = snapshot_new();
    /* b: on -> off; then from a: off -> on, both */
    const twin_send c[] = {{"fp32-norms toggle", TWIN_B}, {"fp32-norms toggle", TWIN_BOTH}};
    CHECK(s != NULL);
    if (!s || run_pair(ca, cb, c, 2, s) != 0) {
        free(s);
        return;
    }
    CHECK(s->s.run[0].cfg.fp32_norms == 1 && s->s.run[1].cfg.fp32_norms == 1);
    CHECK(has_event(s, "b: norms, softmax and loss in the low format"));
    CHECK(has_event(s, "a: norms, softmax and loss in fp32"));
    /* the markers: b's alone on the first step, both on the second */
    CHECK(!s->hist[0].run[0].mark[0] && !strcmp(s->hist[0].run[1].mark, "low norms"));
    CHECK(!strcmp(s->hist[1].run[0].mark, "fp32 norms") && !strcmp(s->hist[1].run[1].mark, "fp32 norms"));
    CHECK(!strncmp(s->s.run[0].label, "a: ", 3) && strstr(s->s.run[0].label, "fp32-norms=on"));
    free(s);
}

/* A switch under `both` that only run a needed ("kind rmsnorm" when b is
 * on RMSNorm already, as the rmsnorm-swap lesson's script does): a marker
 * on a's curve alone, and labels that still tell the runs apart. */
static void test_switch_joins(void)
{
    ns_config ca = small_cfg(), cb = small_cfg();
    cb.norm_kind = NORMK_RMSNORM;
    trainer_snapshot *s = snapshot_new();
    const twin_send c[] = {{"note warm", TWIN_BOTH}, {"kind rmsnorm", TWIN_BOTH}};
    CHECK(s != NULL);
    if (!s || run_pair(ca, cb, c, 2, s) != 0) {
        free(s);
        return;
    }
    CHECK(s->s.run[0].cfg.norm_kind == NORMK_RMSNORM && s->s.run[1].cfg.norm_kind == NORMK_RMSNORM);
    CHECK(!strcmp(s->hist[1].run[0].mark, "rmsnorm") && s->hist[1].run[1].mark[0] == 0);
    CHECK(s->s.joined == 1);
    /* a, which changed, says what it was until when; b keeps its words */
    CHECK(!strncmp(s->s.run[0].label, "a: norm-kind=layernorm until step 1  ", 37));
    CHECK(!strncmp(s->s.run[1].label, "b: norm-kind=rmsnorm  ", 22));
    /* without the words before the join, whom it equals since when */
    char la[160];
    twin_run ra = {&s->s.run[0].cfg, 1, 1e-3f, 1, NULL}, rb = {&s->s.run[1].cfg, 1, 1e-3f, 1, ""};
    twin_label("a", ra, rb, la, sizeof la);
    CHECK(!strncmp(la, "a: as b since step 1  ", 22));
    char d[64];
    twin_label_differs("a: norm-kind=layernorm  pre fp32", d, sizeof d);
    CHECK(!strcmp(d, "norm-kind=layernorm"));
    twin_label_differs("a: pre layernorm fp32", d, sizeof d);
    CHECK(d[0] == 0);
    free(s);
}

/* A run whose warmup was turned on mid-run (--warmup 0, then w or a
 * script's "warmup on") ramps over 100 steps: its label says so, not 0. */
static void test_label_warmup(void)
{
    ns_config a, b;
    settings_defaults(&a);
    settings_defaults(&b);
    a.warmup = b.warmup = 0;
    char la[160];
    twin_label("a", (twin_run){&a, 1, 1e-3f, 0, NULL}, (twin_run){&b, 0, 1e-3f, 0, NULL}, la, sizeof la);
    CHECK(strstr(la, "warmup=100") != NULL);
    a.warmup = 40;
    twin_label("a", (twin_run){&a, 1, 1e-3f, 0, NULL}, (twin_run){&b, 0, 1e-3f, 0, NULL}, la, sizeof la);
    CHECK(strstr(la, "warmup=40") != NULL);
    twin_label("a", (twin_run){&a, 0, 1e-3f, 0, NULL}, (twin_run){&b, 1, 1e-3f, 0, NULL}, la, sizeof la);
    CHECK(strstr(la, "warmup=off") != NULL);
}

/* Whether label says want: the same words up to the two spaces (what
 * differs), then want's words after them in order, others between them
 * allowed (a row added to the table adds its word; no word of today's
 * may go). */
static int label_says(const char *label, const char *want)
{
    const char *lr = strstr(label, "  "), *wr = strstr(want, "  ");
    size_t lh = lr ? (size_t)(lr - label) : 0, wh = wr ? (size_t)(wr - want) : 0;
    if (lh != wh || strncmp(label, want, wh) != 0)
        return 0;
    char rest[256], word[64];
    snprintf(rest, sizeof rest, " %s ", lr ? lr + 2 : label);
    const char *at = rest;
    for (const char *w = wr ? wr + 2 : want; *w;) {
        size_t n = strcspn(w, " ");
        snprintf(word, sizeof word, " %.*s ", (int)n, w);
        if (!(at = strstr(at, word)))
            return 0;
        at += strlen(word) - 1;
        w += n + (w[n] == ' ');
    }
    return 1;
}

/* The labels' words, stated: defaults against --compare SPEC, each run's
 * label (what differs, two spaces, the rest), and one run alone. */
static void test_label_words(void)
{
    static const struct {
        const char *spec, *base, *a, *b;
    } t[] = {
        {"norm=post", NULL, "a: norm=pre  layernorm fp32 warmup=100 lr=0.001 clip=off",
         "b: norm=post  layernorm fp32 warmup=100 lr=0.001 clip=off"},
        {"precision=fp16", NULL, "a: precision=fp32  pre layernorm warmup=100 lr=0.001 clip=off",
         "b: precision=fp16 fp32-norms=on loss-scale=dynamic  pre layernorm warmup=100 lr=0.001 "
         "clip=off"},
        {"clip=1", NULL, "a: clip=off  pre layernorm fp32 warmup=100 lr=0.001",
         "b: clip=1  pre layernorm fp32 warmup=100 lr=0.001"},
        {"lr=0.01", NULL, "a: lr=0.001  pre layernorm fp32 warmup=100 clip=off",
         "b: lr=0.01  pre layernorm fp32 warmup=100 clip=off"},
        {"warmup=0", NULL, "a: warmup=100  pre layernorm fp32 lr=0.001 clip=off",
         "b: warmup=off  pre layernorm fp32 lr=0.001 clip=off"},
        {"seed=3", NULL, "a: seed=1337  pre layernorm fp32 warmup=100 lr=0.001 clip=off",
         "b: seed=3  pre layernorm fp32 warmup=100 lr=0.001 clip=off"},
        {"fp32-norms=off", "precision=fp16",
         "a: fp32-norms=on  pre layernorm fp16 loss-scale=dynamic warmup=100 lr=0.001 clip=off",
         "b: fp32-norms=off  pre layernorm fp16 loss-scale=dynamic warmup=100 lr=0.001 clip=off"},
        {"ln-gamma-init=0", NULL,
         "a: ln-gamma-init=1  pre layernorm fp32 warmup=100 lr=0.001 clip=off",
         "b: ln-gamma-init=0  pre layernorm fp32 warmup=100 lr=0.001 clip=off"},
        {"loss-scale=off", "precision=bf16",
         "a: loss-scale=dynamic  pre layernorm bf16 fp32-norms=on warmup=100 lr=0.001 clip=off",
         "b: loss-scale=off  pre layernorm bf16 fp32-norms=on warmup=100 lr=0.001 clip=off"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        ns_config ca, cb;
        settings_defaults(&ca);
        if (t[i].base)
            CHECK(cli_apply_setting(&ca, t[i].base, stderr) == 0);
        cb = ca;
        CHECK(cli_apply_setting(&cb, t[i].spec, stderr) == 0);
        twin_run ra = {&ca, ca.warmup > 0, ca.lr, 0, NULL};
        twin_run rb = {&cb, cb.warmup > 0, cb.lr, 0, NULL};
        char la[256], lb[256];
        twin_label("a", ra, rb, la, sizeof la);
        twin_label("b", rb, ra, lb, sizeof lb);
        if (!label_says(la, t[i].a) || !label_says(lb, t[i].b))
            fprintf(stderr, "--compare %s:\n  got  '%s'\n  want '%s'\n  got  '%s'\n  want '%s'\n",
                    t[i].spec, la, t[i].a, lb, t[i].b);
        CHECK(label_says(la, t[i].a) && label_says(lb, t[i].b));
    }
    ns_config c;
    settings_defaults(&c);
    char one[256];
    twin_label("run", (twin_run){&c, 1, c.lr, 0, NULL}, (twin_run){0}, one, sizeof one);
    CHECK(label_says(one, "run: pre layernorm fp32 warmup=100 lr=0.001 clip=off"));
    /* the check itself: a word gone, or moved before the two spaces, fails */
    CHECK(!label_says("a: norm=pre  layernorm fp32 warmup=100 lr=0.001",
                      "a: norm=pre  layernorm fp32 warmup=100 lr=0.001 clip=off"));
    CHECK(!label_says("a: norm=pre clip=off  layernorm fp32 warmup=100 lr=0.001",
                      "a: norm=pre  layernorm fp32 warmup=100 lr=0.001 clip=off"));
    CHECK(label_says("a: norm=pre  layernorm fp32 warmup=100 lr=0.001 clip=off knob=1",
                     "a: norm=pre  layernorm fp32 warmup=100 lr=0.001 clip=off"));
}

int main(void)
{
    data_builtin(&D);
    test_rule();
    test_keys_in_turn();
    test_relative_bars();
    test_drop_order();
    test_script_prefix();
    test_trainer_targets();
    test_switch_joins();
    test_label_warmup();
    test_label_words();
    return test_summary();
}
