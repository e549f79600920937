/* test_tui.c - the dashboard without a terminal: the layout over many
 * terminal sizes (inside the screen, no overlaps, the space used), the
 * layer-row columns, scrolling, the log scales, and widgets drawn into the
 * cell grid with rows compared as strings (a bar for 1e-2 ends where the
 * scale's "1e-2" label starts; chart markers land on their step's column;
 * a spike does not flatten the chart). Also the key table and the help
 * overlay. No curses, no threads: snapshots are built by hand.
 * Not here: the trainer (test_trainer.c), a real terminal (tui_e2e.sh). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "nstext.h"
#include "testutil.h"
#include "cli.h"
#include "settings.h"
#include "tui.h"

static char row_buf[8192];

static const char *row(const tui_grid *g, int r)
{
    tui_row_utf8(g, r, row_buf, sizeof row_buf);
    return row_buf;
}

static uint32_t ch_at(tui_grid *g, int r, int c)
{
    tui_cell *x = tui_at(g, r, c);
    return x ? x->ch : 0;
}

static int style_at(tui_grid *g, int r, int c)
{
    tui_cell *x = tui_at(g, r, c);
    return x ? x->style : -1;
}

/* Column (in cells, ASCII grids only) of needle in row r, or -1. */
static int col_of(const tui_grid *g, int r, const char *needle)
{
    const char *s = row(g, r), *p = strstr(s, needle);
    return p ? (int)(p - s) : -1;
}

static int inside(tui_rect r, int rows, int cols)
{
    return r.r >= 0 && r.c >= 0 && r.h > 0 && r.w > 0 && r.r + r.h <= rows && r.c + r.w <= cols;
}

static int overlap(tui_rect a, tui_rect b)
{
    return a.r < b.r + b.h && b.r < a.r + a.h && a.c < b.c + b.w && b.c < a.c + a.w;
}

/* Bounds, overlap and cover of one layout; the rects that may be absent
 * (h or w 0) are skipped. Returns the faults. */
static int layout_faults(const tui_layout *l, int rows, int cols, int cmp, long *area_out)
{
    tui_rect p[11] = {l->status, l->layers, l->chart, l->footer, l->layers_b,
                      l->side,   l->sample, l->events, l->fold,  l->ratio, l->lesson};
    int required = cmp && l->layer_cols == 1 ? 5 : 4, bad = 0;
    if (cmp && l->layer_cols == 2)
        bad += l->layers_b.w == 0; /* two columns each: b still has its panel */
    /* the classic layout's lesson lies over the sample and events */
    int np = l->projector ? 11 : 10;
    long area = 0;
    for (int i = 0; i < np; i++) {
        if (i >= required && (p[i].h == 0 || p[i].w == 0))
            continue;
        bad += !inside(p[i], rows, cols);
        area += (long)p[i].h * p[i].w;
        for (int j = i + 1; j < np; j++)
            if (p[j].h && p[j].w)
                bad += overlap(p[i], p[j]);
    }
    *area_out = area;
    return bad;
}

static void test_layout(void)
{
    static const int layers[] = {1, 2, 6, 12, 24, 64};
    int bad_inside = 0, bad_cover = 0, bad_rows = 0, cases = 0;
    for (int rows = TUI_MIN_ROWS; rows <= 90; rows += 3)
        for (int cols = TUI_MIN_COLS; cols <= 300; cols += 7)
            for (size_t k = 0; k < sizeof layers / sizeof layers[0]; k++) {
                int L = layers[k];
              for (int cmp = 0; cmp < 2; cmp++) {
                tui_layout l = tui_layout_compute_cmp(rows, cols, L, cmp);
                cases++;
                long area;
                bad_inside += layout_faults(&l, rows, cols, cmp, &area);
                /* side by side: the same rows, a at the left, b at the right */
                if (cmp)
                    bad_rows += l.layers_b.h != l.layers.h || l.layers_b.r != l.layers.r ||
                                l.layers.c != 0 || l.layers_b.c + l.layers_b.w != cols ||
                                l.layers.w < 35 || l.layers_b.w < 35 ||
                                (l.layer_cols == 1 && l.ratio.r != l.layers.r);
                else
                    bad_rows += l.ratio.w != 0 || l.layers_b.w != 0;
                bad_inside += !inside(l.help, rows, cols);
                /* every cell belongs to a panel: a 200x60 screen is used */
                bad_cover += area != (long)rows * cols;
                /* all layers when they fit with a readable chart, else a window */
                int want = L < l.layer_rows ? L : l.layer_rows;
                bad_rows += l.too_small || l.layer_rows < 1 || l.layers.h != want + 2;
                /* or, on a projector-sized screen, all layers (in two columns
                 * when one does not hold them) at the cost of the sample,
                 * events and side box; else a chart to read and the event log */
                int vals = cmp ? 2 : 1;
                if (l.projector)
                    bad_rows += rows > TUI_PROJECTOR_ROWS || l.status.h < vals ||
                                l.status.h > vals + 1 || l.events.h || l.sample.h || l.lesson.h ||
                                l.chart.h < TUI_CHART_MIN ||
                                ((L + 1) / 2 + 2 + TUI_CHART_MIN <= rows - 1 - vals &&
                                 l.layer_rows * l.layer_cols < L);
                else
                    bad_rows += l.chart.h < 8 || l.events.h < 3 || l.fold.h || l.layer_cols != 1 ||
                                (rows <= TUI_PROJECTOR_ROWS && l.layer_rows < L);
              }
            }
    CHECK(cases > 1000);
    CHECK(bad_inside == 0);
    CHECK(bad_cover == 0);
    CHECK(bad_rows == 0);

    /* a common terminal, a large one and a deep model at a middling one */
    tui_layout a = tui_layout_compute(30, 100, 6);
    CHECK(!a.too_small && a.layer_rows >= 6); /* every layer of the default model */
    tui_layout b = tui_layout_compute(60, 200, 6);
    CHECK(b.chart.h > a.chart.h && b.events.h > a.events.h && b.chart.w > a.chart.w);
    tui_layout c = tui_layout_compute(40, 120, 64);
    CHECK(c.layer_rows < 64 && c.layer_rows >= 10); /* scrolls */
    /* the projector: every layer of 12 at 80x24 (a chart of a few rows), of
     * 24 at 100x30, of 32 in two columns, one run or two; beyond that the
     * panel scrolls */
    for (int cmp = 0; cmp < 2; cmp++) {
        tui_layout p = tui_layout_compute_cmp(24, 80, 12, cmp);
        CHECK(p.projector && p.layer_rows * p.layer_cols >= 12 && p.chart.h >= 4 && p.events.h == 0);
        p = tui_layout_compute_cmp(30, 100, 24, cmp);
        CHECK(p.projector && p.layer_rows * p.layer_cols >= 24 && p.chart.h >= TUI_CHART_MIN);
        p = tui_layout_compute_cmp(30, 100, 32, cmp);
        CHECK(p.projector && p.layer_rows == 16 && p.layer_cols == 2);
        p = tui_layout_compute_cmp(30, 100, 64, cmp);
        CHECK(p.projector && p.layer_rows < 64 && p.layer_cols == 1); /* scrolls */
    }
    CHECK(!tui_layout_compute(60, 200, 24).projector); /* a tall screen keeps its event log */
    /* below the minimum: only the message */
    CHECK(tui_layout_compute(TUI_MIN_ROWS - 1, 200, 6).too_small);
    CHECK(tui_layout_compute(60, TUI_MIN_COLS - 1, 6).too_small);
    CHECK(tui_layout_compute(0, 0, 6).too_small);
}

/* A lesson's moment ranks its rows: at every size its question, both
 * runs' values rows and every layer (two columns of compact rows when
 * need be) before the chart grows or the text shows. */
static void test_layout_lesson(void)
{
    static const int layers[] = {6, 12, 24};
    int bad = 0, ranked = 0, two = 0, cases = 0;
    for (int rows = TUI_MIN_ROWS; rows <= 60; rows += 2)
        for (int cols = TUI_MIN_COLS; cols <= 200; cols += 9)
            for (size_t k = 0; k < sizeof layers / sizeof layers[0]; k++)
                for (int q = 2; q <= 3; q++) {
                    int L = layers[k];
                    tui_layout l = tui_layout_compute_lesson(rows, cols, L, 1, q, q + 6);
                    long area;
                    cases++;
                    bad += layout_faults(&l, rows, cols, 1, &area);
                    if (l.projector)
                        bad += area != (long)rows * cols;
                    bad += l.lesson.h < q || l.lesson.w != cols || l.status.h < 2;
                    bad += l.layer_rows * l.layer_cols < L;
                    bad += l.chart.h < TUI_CHART_FLOOR;
                    /* 4 plotted rows wherever they leave every layer on screen */
                    bad += l.chart.h < TUI_CHART_MIN && (L + 1) / 2 + 2 + TUI_CHART_MIN <= rows - 1 - 2 - q;
                    ranked += l.projector;
                    two += l.layer_cols == 2;
                }
    CHECK(cases > 500);
    CHECK(bad == 0);
    CHECK(ranked > 0 && two > 0);
    /* the sizes of a classroom: 24 layers at 80x24 in two columns, at
     * 100x30 and 120x40 the question and every layer too */
    tui_layout l = tui_layout_compute_lesson(24, 80, 24, 1, 3, 10);
    CHECK(l.layer_cols == 2 && l.layer_rows == 12 && l.lesson.h == 3 && l.status.h == 2);
    /* a 12-layer lesson at 80x24 (warmup): every layer and 4 plotted chart rows */
    l = tui_layout_compute_lesson(24, 80, 12, 1, 3, 10);
    CHECK(l.layer_rows * l.layer_cols >= 12 && l.chart.h >= TUI_CHART_MIN && TUI_CHART_MIN - 2 >= 4);
    l = tui_layout_compute_lesson(40, 120, 24, 1, 2, 10);
    CHECK(l.layer_cols == 1 && l.layer_rows == 24 && l.lesson.h >= 2);
    /* hidden (L), the panel gives its rows back */
    tui_layout h = tui_layout_compute_lesson(40, 120, 24, 1, 0, 0);
    CHECK(h.lesson.h == 0 || !h.projector);
}

static void test_layer_columns(void)
{
    int bad = 0;
    for (int w = TUI_MIN_COLS; w <= 400; w++) {
        tui_layer_cols k = tui_layer_columns(w);
        int end = k.extra >= 0 ? k.extra + 18 : k.rms + 10;
        bad += !(k.idx == 0 && k.attn == 4 && k.bar >= 4 && k.ffn == k.attn + k.bar + 1 &&
                 k.nums == k.ffn + k.bar + 1 && k.act == k.nums + 16 && k.act_w >= 4 &&
                 k.act_num == k.act + k.act_w + 1 && k.rms == k.act_num + 8 && end <= w);
    }
    CHECK(bad == 0);
    CHECK(tui_layer_columns(200).extra >= 0 && tui_layer_columns(120).extra < 0);
    CHECK(tui_layer_columns(200).bar > tui_layer_columns(100).bar);
}

static void test_prec_columns(void)
{
    int bad = 0;
    for (int w = TUI_MIN_COLS; w <= 400; w++) {
        tui_layer_cols k = tui_layer_columns_prec(w, 1);
        int end = k.extra >= 0 ? k.extra + 18 : k.rms + 10;
        if (k.prec < 0) /* no room: only on narrow screens */
            bad += w >= 100 || k.rms != k.act_num + 8;
        else
            bad += !(k.prec == k.act_num + 8 && k.rms == k.prec + 9 && k.act_w >= 4 && end <= w);
        bad += tui_layer_columns_prec(w, 0).prec != -1;
    }
    CHECK(bad == 0);
}

static void test_scroll(void)
{
    CHECK(tui_scroll_fit(0, 5, 3, 20) == 0);  /* visible: stays */
    CHECK(tui_scroll_fit(0, 5, 7, 20) == 3);  /* below: just enough */
    CHECK(tui_scroll_fit(10, 5, 4, 20) == 4); /* above: to it */
    CHECK(tui_scroll_fit(18, 5, 19, 20) == 15); /* never past the end */
    CHECK(tui_scroll_fit(3, 10, 2, 4) == 0);  /* everything fits */
}

static void test_scales(void)
{
    /* 7 decades over 14 cells: two cells per decade, eight eighths each */
    CHECK(tui_log_eighths(1e-5, -5, 2, 14) == 0);
    CHECK(tui_log_eighths(1e-2, -5, 2, 14) == 48);
    CHECK(tui_log_eighths(1e+2, -5, 2, 14) == 112);
    CHECK(tui_log_eighths(1e+9, -5, 2, 14) == 112); /* clamped */
    CHECK(tui_log_eighths(1e-9, -5, 2, 14) == 0);
    CHECK(tui_log_eighths(0, -5, 2, 14) == 0);
    CHECK(tui_log_eighths(NAN, -5, 2, 14) == 0);
    CHECK(tui_log_eighths(sqrt(10.0) * 1e-2, -5, 2, 14) == 56); /* half a decade on */
    CHECK(tui_decade_col(-2, -5, 2, 14) == 5);
    CHECK(tui_decade_col(-5, -5, 2, 14) == 0);
    CHECK(tui_decade_col(2, -5, 2, 14) == 13);

    CHECK(scale_grad_state_of(0.5, 1.0) == SCALE_G_NORMAL);
    CHECK(scale_grad_state_of(0.9e-3, 1.0) == SCALE_G_VANISH);
    CHECK(scale_grad_state_of(1.1e-3, 1.0) == SCALE_G_NORMAL);
    CHECK(scale_grad_state_of(12.0, 12.0) == SCALE_G_EXPLODE);
    CHECK(scale_grad_state_of(NAN, 1.0) == SCALE_G_NONFINITE);
    CHECK(scale_grad_state_of(INFINITY, 1.0) == SCALE_G_NONFINITE);
}

static void test_grid(void)
{
    tui_grid g = {0};
    CHECK(tui_grid_resize(&g, 3, 10) == 0);
    CHECK(tui_puts(&g, 0, 0, 20, TUI_S_TEXT, "h\xc3\xa9llo") == 5); /* é: one cell */
    CHECK(!strcmp(row(&g, 0), "h\xc3\xa9llo     "));
    CHECK(tui_puts(&g, 1, 0, 4, TUI_S_TEXT, "a\xff\x01zzzz") == 4); /* bad byte, control */
    CHECK(!strcmp(row(&g, 1), "a??z      "));
    tui_puts(&g, 2, 8, 5, TUI_S_TEXT, "abcde"); /* clipped at the edge, no overflow */
    CHECK(!strcmp(row(&g, 2), "        ab"));
    tui_put(&g, 5, 5, 'x', TUI_S_TEXT); /* outside: ignored */
    CHECK(tui_at(&g, 3, 0) == NULL && tui_at(&g, 0, -1) == NULL);
    char b[8];
    CHECK(tui_utf8_encode(0x28FF, b) == 3 && (unsigned char)b[0] == 0xE2);

    char e[64];
    const uint8_t raw[] = {'a', '\n', 1, 0xC3, 0xA9, '\\', '\t'};
    nstext_escape(raw, sizeof raw, e, sizeof e);
    CHECK(!strcmp(e, "a\\n\\x01\\xC3\\xA9\\\\\\t"));
    nstext_escape(raw, sizeof raw, e, 6); /* cut at an escape boundary, terminated */
    CHECK(!strcmp(e, "a\\n"));
    tui_grid_free(&g);
}

static trainer_snapshot *snap_new(int L)
{
    trainer_snapshot *s = snapshot_new();
    settings_defaults(&s->s.run[0].cfg);
    s->s.run[0].cfg.n_layer = L;
    s->s.n_layer = L;
    s->s.run[0].last.n_layer = L;
    s->s.generation = 1;
    return s;
}

/* n points, steps 1..n, loss falling linearly from 5 to 2 */
static void fill_history(trainer_snapshot *s, long n)
{
    for (long i = 0; i < n; i++) {
        trainer_point *p = &s->hist[i % TRAINER_HIST];
        memset(p, 0, sizeof *p);
        p->step = i + 1;
        p->run[0].loss = (float)(5.0 - 3.0 * (double)i / (double)(n > 1 ? n - 1 : 1));
        p->run[0].val_loss = NAN;
        for (int l = 0; l < s->s.n_layer; l++)
            s->run[0].heat[i % TRAINER_HIST][l] = 0.1f;
    }
    s->s.hist_total = n;
    s->s.steps_done = n;
}

/* The bar of 1e-2 ends where the scale row's "1e-2" begins; 1e-4 and
 * 1e+1 both show; colors, or without them glyphs, name the states. */
static void test_layer_bars(void)
{
    trainer_snapshot *s = snap_new(3);
    s->s.have_metrics = 1;
    s->s.run[0].last.layer[2].grad_attn = 1e-2f;
    s->s.run[0].last.layer[2].grad_ffn = 1.0f;   /* the largest */
    s->s.run[0].last.layer[1].grad_attn = 1e-4f; /* vanishing: below 1e-3 of 1.0 */
    s->s.run[0].last.layer[1].grad_ffn = 1.0f;
    s->s.run[0].last.layer[0].grad_attn = NAN;
    s->s.run[0].last.layer[0].grad_ffn = 0.5f;
    for (int l = 0; l < 3; l++)
        s->s.run[0].last.layer[l].act_max = 300.0f, s->s.run[0].last.layer[l].resid_rms = 1.0f;
    tui_grid g = {0};
    tui_grid_resize(&g, 5, 80);
    tui_ui ui;
    tui_ui_init(&ui, 0, 1); /* ASCII, color */
    tui_rect r = {0, 0, 5, 80};
    tui_draw_layers(&g, r, s, &ui);
    tui_layer_cols k = tui_layer_columns(80);
    CHECK(k.bar == 14); /* the case computed by hand below */
    /* header: the attention scale's labels start at their ticks */
    CHECK(col_of(&g, 1, "1e-5") == k.attn + 0);
    CHECK(col_of(&g, 1, "1e-2") == k.attn + 5);
    /* row 2 = layer 2 (the top layer is drawn first) */
    const char *r2 = row(&g, 2);
    CHECK(!strncmp(r2, "> 2 ", 4)); /* the top layer is selected by default */
    CHECK(!strncmp(r2 + k.attn, "######        ", 14)); /* 6 cells: ends at col 5 */
    CHECK(r2[k.attn + 5] == '#' && r2[k.attn + 6] == ' ');
    CHECK(style_at(&g, 2, k.attn) == TUI_S_NORMAL);
    CHECK(!strncmp(r2 + k.ffn, "##########    ", 14)); /* 1.0: 10 cells */
    CHECK(strstr(r2, "1.0e-02 1.0e+00") != NULL);
    /* 1e-4: two cells, vanishing (colored, and '.' in ASCII) */
    const char *r3 = row(&g, 3);
    CHECK(!strncmp(r3 + k.attn, "..            ", 14));
    CHECK(style_at(&g, 3, k.attn) == TUI_S_VANISH);
    CHECK(style_at(&g, 3, k.ffn) == TUI_S_NORMAL);
    /* 1e+1 is an exploding bar: 12 cells of '!' */
    s->s.run[0].last.layer[2].grad_ffn = 1e+1f;
    tui_grid_clear(&g);
    tui_draw_layers(&g, r, s, &ui);
    CHECK(!strncmp(row(&g, 2) + k.ffn, "!!!!!!!!!!!!  ", 14));
    CHECK(style_at(&g, 2, k.ffn) == TUI_S_EXPLODE);
    CHECK(strstr(row(&g, 2), "1.0e-02 1.0e+01") != NULL);
    s->s.run[0].last.layer[2].grad_ffn = 1.0f;
    tui_grid_clear(&g);
    tui_draw_layers(&g, r, s, &ui);
    /* not finite: said in words */
    CHECK(!strncmp(row(&g, 4) + k.attn, "NaN", 3));
    CHECK(style_at(&g, 4, k.attn) == TUI_S_BAD);
    /* activation 300: past the 256 mark, before 65504; warned */
    int e256 = tui_log_eighths(256, SCALE_AMAX_LO, SCALE_AMAX_HI, k.act_w);
    CHECK(col_of(&g, 1, "256") == k.act + (e256 + 7) / 8 - 1);
    CHECK(style_at(&g, 2, k.act) == TUI_S_WARN);

    /* Unicode without color: distinct glyphs per state */
    tui_ui_init(&ui, 1, 0);
    tui_grid_clear(&g);
    tui_draw_layers(&g, r, s, &ui);
    CHECK(ch_at(&g, 3, k.attn) == 0x2591); /* ░ vanishing */
    CHECK(ch_at(&g, 2, k.attn) == 0x2588); /* █ normal */
    CHECK(ch_at(&g, 3, k.ffn) == 0x2588);
    s->s.run[0].last.layer[2].grad_ffn = 1e+1f;
    tui_grid_clear(&g);
    tui_draw_layers(&g, r, s, &ui);
    CHECK(ch_at(&g, 2, k.ffn) == 0x2593); /* ▓ exploding */
    s->s.run[0].last.layer[2].grad_ffn = 1.0f;
    /* with color the normal glyphs carry eighths: 1e-2 on 14 cells is
     * exactly 6 cells, 10^-1.5 is 7 cells: no partial; 0.5 has one */
    tui_ui_init(&ui, 1, 1);
    s->s.run[0].last.layer[0].grad_attn = 0.5f;
    tui_grid_clear(&g);
    tui_draw_layers(&g, r, s, &ui);
    int e = tui_log_eighths(0.5, SCALE_GRAD_LO, SCALE_GRAD_HI, 14);
    CHECK(e % 8 != 0);
    CHECK(ch_at(&g, 4, k.attn + e / 8) == (uint32_t)(0x2590 - e % 8));
    CHECK(ch_at(&g, 4, k.attn + e / 8 + 1) == ' ');

    /* more layers than rows: the selected one stays visible */
    trainer_snapshot *big = snap_new(40);
    big->s.have_metrics = 1;
    tui_grid_resize(&g, 12, 100);
    tui_rect rb = {0, 0, 12, 100};
    tui_ui_init(&ui, 0, 0);
    ui.selected = 3;
    tui_draw_layers(&g, rb, big, &ui);
    int found = 0;
    for (int i = 2; i < 12; i++)
        found |= !strncmp(row(&g, i), ">  3 ", 4) || !strncmp(row(&g, i), "> 3 ", 4);
    CHECK(found);
    CHECK(strstr(row(&g, 0), "of 40") != NULL);
    CHECK(ui.layer_rows == 10);
    free(big);
    tui_grid_free(&g);
    free(s);
}

/* A loss that jumps between 2 and 4 each step: each step's dots are dim
 * on the top and bottom rows, the smoothed line (TensorBoard's EMA) is
 * bright and, past the first steps, on neither. */
static void test_chart_smoothed(void)
{
    trainer_snapshot *s = snap_new(2);
    fill_history(s, 100);
    for (int i = 0; i < 100; i++)
        s->hist[i].run[0].loss = i % 2 ? 4.0f : 2.0f;
    tui_grid g = {0};
    tui_grid_resize(&g, 12, 60);
    tui_rect r = {0, 0, 12, 60};
    tui_ui ui;
    tui_ui_init(&ui, 1, 1);
    tui_draw_chart(&g, r, s, &ui);
    tui_chart_geom cg = tui_chart_geometry(r, s, 1);
    int dim_edge = 0, bright_edge = 0, bright_mid = 0;
    for (int c = cg.left + cg.w / 4; c < cg.left + cg.w; c++)
        for (int y = 0; y < cg.h; y++) {
            const tui_cell *cell = tui_at(&g, cg.top + y, c);
            int edge = y == 0 || y == cg.h - 1;
            dim_edge += edge && cell->style == TUI_S_DIM;
            bright_edge += edge && cell->style == TUI_S_TRAIN;
            bright_mid += !edge && cell->style == TUI_S_TRAIN;
        }
    CHECK(dim_edge > cg.w / 2 && bright_edge == 0 && bright_mid > cg.w / 2);
    /* --smooth 0: the bright line is each step's loss, on the edges; the
       legend no longer speaks of smoothing */
    ui.smooth = 0;
    tui_grid_clear(&g);
    tui_draw_chart(&g, r, s, &ui);
    bright_edge = 0;
    for (int c = cg.left + cg.w / 4; c < cg.left + cg.w; c++)
        bright_edge += tui_at(&g, cg.top, c)->style == TUI_S_TRAIN;
    CHECK(bright_edge > cg.w / 2);
    /* the legend says which, where it has the room */
    tui_rect wide = {0, 0, 12, 120};
    tui_grid_resize(&g, 12, 120);
    tui_draw_chart(&g, wide, s, &ui);
    CHECK(!strstr(row(&g, 0), "smoothed") && strstr(row(&g, 0), "each step") != NULL);
    ui.smooth = 0.6;
    tui_grid_clear(&g);
    tui_draw_chart(&g, wide, s, &ui);
    CHECK(strstr(row(&g, 0), "smoothed 0.6, dim: each step") != NULL);
    free(s);
    tui_grid_free(&g);
}

/* Markers on the step's column, the label beside; y fitted so a spike
 * does not flatten the rest; validation points where they belong. */
static void test_chart(void)
{
    trainer_snapshot *s = snap_new(2);
    fill_history(s, 100);
    snprintf(s->hist[39].run[0].mark, TRAINER_MARK, "post"); /* step 40 */
    s->hist[79].run[0].val_loss = s->hist[79].run[0].loss;          /* step 80 */
    tui_grid g = {0};
    tui_grid_resize(&g, 12, 60);
    tui_rect r = {0, 0, 12, 60};
    tui_ui ui;

    /* braille: plot from column 8, 51 cells = 102 dots >= 100 steps: one
     * dot per step, two per cell: step 40 is dot 39, cell 19 */
    tui_ui_init(&ui, 1, 1);
    tui_draw_chart(&g, r, s, &ui);
    tui_chart_geom cg = tui_chart_geometry(r, s, 1);
    CHECK(cg.left == 8 && cg.w == 51 && cg.top == 1 && cg.h == 10);
    CHECK(tui_chart_col(&cg, 40) == 8 + 19);
    CHECK(ch_at(&g, 1, 27) == 0x250A); /* ┊ on the top row */
    char lab[5] = {0};
    for (int i = 0; i < 4; i++)
        lab[i] = (char)ch_at(&g, 1, 28 + i);
    CHECK(!strcmp(lab, "post"));
    int marks = 0, data = 0;
    for (int y = 0; y < cg.h; y++) {
        uint32_t c = ch_at(&g, 1 + y, 27);
        marks += c == 0x250A;
        data += c >= 0x2800 && c <= 0x28FF;
    }
    CHECK(marks >= cg.h - 3 && marks + data == cg.h); /* a line, broken only by data */
    CHECK(ch_at(&g, 1, 26) != 0x250A && ch_at(&g, 5, 28) != 0x250A);
    /* the validation point at step 80: dot 79, cell 39 */
    int val_row = -1;
    for (int y = 0; y < cg.h; y++)
        if (ch_at(&g, 1 + y, 8 + 39) == 0x2022)
            val_row = y;
    CHECK(val_row >= 0);
    /* x labels: first and last step; the last under its own column */
    CHECK(col_of(&g, 11, "1 ") == 8);
    CHECK(col_of(&g, 11, "100") == 8 + 49 + 1 - 3);

    /* ASCII: 51 dots < 99 steps: squeezed, x = (step-1)*50/99 */
    tui_ui_init(&ui, 0, 1);
    tui_grid_clear(&g);
    tui_draw_chart(&g, r, s, &ui);
    cg = tui_chart_geometry(r, s, 0);
    CHECK(tui_chart_col(&cg, 40) == 8 + 39 * 50 / 99);
    CHECK(ch_at(&g, 1, 8 + 19) == ':' && col_of(&g, 1, "post") == 8 + 19 + 1);
    CHECK(tui_chart_col(&cg, 100) == 8 + 50 && tui_chart_col(&cg, 101) == -1);

    /* one spike of 1000 among 200 losses near 2: the top label stays near 2 */
    trainer_snapshot *sp = snap_new(2);
    fill_history(sp, 200);
    for (int i = 0; i < 200; i++)
        sp->hist[i].run[0].loss = 2.0f + 0.001f * (float)(i % 7);
    sp->hist[100].run[0].loss = 1000.0f;
    tui_grid_clear(&g);
    tui_draw_chart(&g, r, sp, &ui);
    double top = atof(row(&g, 1));
    CHECK(top > 2.0 && top < 2.1);
    /* and the spike is drawn on the top edge, not lost */
    cg = tui_chart_geometry(r, sp, 0);
    int col = tui_chart_col(&cg, 101);
    CHECK(ch_at(&g, 1, col) != ' ');
    /* a short window keeps its highest value in range: three points (a
     * followed stream at every=10), the first step's loss above the rest:
     * the top label is at least that loss, not the second's */
    trainer_snapshot *few = snap_new(2);
    fill_history(few, 3);
    few->hist[0].run[0].loss = 5.70f;
    few->hist[1].run[0].loss = 4.15f;
    few->hist[2].run[0].loss = 4.10f;
    tui_grid_clear(&g);
    tui_draw_chart(&g, r, few, &ui);
    top = atof(row(&g, 1));
    CHECK(top >= 5.70 && top < 6.0);
    free(few);
    /* log-y: the same data, labelled in real values */
    ui.logy = 1;
    tui_grid_clear(&g);
    tui_draw_chart(&g, r, s, &ui);
    top = atof(row(&g, 1));
    CHECK(top > 4.9 && top < 5.6);
    CHECK(strstr(row(&g, 0), "[log-y]") != NULL);

    /* no history yet: a message, no crash */
    trainer_snapshot *empty = snap_new(2);
    tui_grid_clear(&g);
    tui_draw_chart(&g, r, empty, &ui);
    int waiting = 0;
    for (int y = 0; y < g.rows; y++)
        waiting |= strstr(row(&g, y), "waiting for the first step") != NULL;
    CHECK(waiting);
    free(empty);
    free(sp);
    free(s);
    tui_grid_free(&g);
}

static void test_heatmap(void)
{
    trainer_snapshot *s = snap_new(3);
    fill_history(s, 30);
    for (int i = 0; i < 30; i++) {
        s->run[0].heat[i][2] = 50.0f; /* exploding top */
        s->run[0].heat[i][1] = 0.05f;
        s->run[0].heat[i][0] = i == 20 ? NAN : 1e-6f; /* frozen bottom, one NaN */
    }
    tui_grid g = {0};
    tui_grid_resize(&g, 5, 80);
    tui_ui ui;
    tui_ui_init(&ui, 0, 0);
    tui_rect r = {0, 0, 5, 80};
    tui_draw_heatmap(&g, r, s, &ui);
    CHECK(strstr(row(&g, 0), "steps 1-30, 1 per column") != NULL);
    CHECK(!strncmp(row(&g, 2) + 4, "@@@@@@@@@@", 10)); /* layer 2: >= 10 */
    CHECK(!strncmp(row(&g, 3) + 4, "----------", 10)); /* layer 1: 0.01..0.1 */
    CHECK(row(&g, 4)[4] == ' ' && row(&g, 4)[4 + 20] == 'X');
    CHECK(style_at(&g, 2, 4) == TUI_S_HEAT6 && style_at(&g, 4, 24) == TUI_S_BAD);
    CHECK(row(&g, 2)[4 + 30] == ' '); /* nothing past the newest step */
    /* more steps than columns: buckets of several steps, newest included */
    fill_history(s, 300);
    for (int i = 0; i < 300; i++)
        s->run[0].heat[i][2] = i == 299 ? 50.0f : 0.05f;
    tui_grid_clear(&g);
    tui_draw_heatmap(&g, r, s, &ui);
    long per = (300 + 75 - 1) / 75; /* 75 columns */
    char want[64];
    snprintf(want, sizeof want, "%ld per column", per);
    CHECK(strstr(row(&g, 0), want) != NULL);
    int last = 4 + (int)(299 / per);
    CHECK(row(&g, 2)[last] == '@' && row(&g, 2)[last - 1] == '-');
    free(s);
    tui_grid_free(&g);
}

static void test_status_and_clicks(void)
{
    trainer_snapshot *s = snap_new(6);
    s->s.state = TRAINER_PAUSED;
    s->s.steps_done = 1234;
    s->s.run[0].cfg.norm = NORM_PRE;
    s->s.run[0].warmup_on = 1;
    tui_grid g = {0};
    tui_grid_resize(&g, 2, 120);
    tui_ui ui;
    tui_ui_init(&ui, 0, 1);
    tui_rect r = {0, 0, 2, 120};
    tui_draw_status(&g, r, s, &ui);
    CHECK(strstr(row(&g, 0), "step 1234") != NULL);
    CHECK(strstr(row(&g, 0), "PAUSED") != NULL);
    CHECK(strstr(row(&g, 1), "[p] Pre-LN") != NULL);
    CHECK(strstr(row(&g, 1), "[w] warmup on") != NULL);
    CHECK(strstr(row(&g, 1), "[f] fp32") != NULL);
    CHECK(strstr(row(&g, 1), "[k] layernorm") != NULL); /* the norm kind */
    CHECK(strstr(row(&g, 1), "[space] resume") != NULL);
    /* the toggles are clickable like their keys */
    int sel, c = col_of(&g, 1, "[w]");
    CHECK(tui_click(&ui, 1, c + 2, &sel) == tui_bind_action("warmup", "toggle") && !sel);
    CHECK(tui_click(&ui, 1, col_of(&g, 1, "Pre-LN"), &sel) == tui_bind_action("norm", "toggle"));
    CHECK(tui_click(&ui, 0, 3, &sel) == TUI_ACT_NONE);
    s->s.run[0].cfg.norm = NORM_POST;
    s->s.state = TRAINER_DIVERGED;
    s->s.have_metrics = 1;
    snprintf(s->s.run[0].last.fault, sizeof s->s.run[0].last.fault, "backward, layer 3, MLP fc2");
    tui_draw_status(&g, r, s, &ui);
    CHECK(strstr(row(&g, 1), "[p] Post-LN") != NULL);
    CHECK(strstr(row(&g, 0), "DIVERGED") != NULL);
    CHECK(strstr(row(&g, 0), "backward, layer 3, MLP fc2") != NULL);
    /* narrow: the state and the step survive, less important items go */
    tui_grid_resize(&g, 2, 80);
    r.w = 80;
    s->s.state = TRAINER_RUNNING;
    s->s.run[0].last.fault[0] = 0;
    s->s.steps_per_s = 123.4;
    tui_draw_status(&g, r, s, &ui);
    CHECK(strstr(row(&g, 0), "RUNNING") != NULL && strstr(row(&g, 0), "step 1234") != NULL);
    free(s);
    tui_grid_free(&g);
}

/* --compare at 80 columns in warmup: run a's row, which also holds the
 * step and the target, keeps its learning rate and gives up how far
 * warmup is; b's row, with the room, shows both. One run at 80 columns
 * gives up the speed first. */
static void test_status_narrow_lr(void)
{
    trainer_snapshot *s = snap_new(2);
    s->s.state = TRAINER_PAUSED;
    s->s.compare = 1;
    s->s.limit = 50;
    s->s.steps_done = 1;
    s->s.have_metrics = s->s.have_loss = 1;
    for (int k = 0; k < 2; k++) {
        s->s.run[k].loss = 6.0868f;
        s->s.run[k].last_val = NAN;
        s->s.run[k].warmup_on = 1;
        s->s.run[k].last.in_warmup = 1;
        s->s.run[k].lr_next = 2e-5f;
        s->s.run[k].lr_peak = 8e-5f;
    }
    tui_grid g = {0};
    tui_grid_resize(&g, 3, 80);
    tui_ui ui;
    tui_ui_init(&ui, 0, 0);
    tui_rect r = {0, 0, 3, 80};
    tui_draw_status(&g, r, s, &ui);
    CHECK(strstr(row(&g, 0), "TARGET") != NULL && strstr(row(&g, 0), "lr 2.00e-05") != NULL);
    CHECK(strstr(row(&g, 0), "warmup") == NULL);
    CHECK(strstr(row(&g, 1), "lr 2.00e-05 (warmup 25%)") != NULL);
    /* one run at 80 columns: the speed goes first, warmup's progress stays */
    s->s.compare = 0;
    s->s.limit = 0;
    s->s.steps_done = 115;
    s->s.steps_per_s = 34.6;
    s->s.threads = 2;
    s->s.run[0].cfg.batch = 16;
    s->s.run[0].cfg.context = 64;
    tui_draw_status(&g, r, s, &ui);
    CHECK(strstr(row(&g, 0), "lr 2.00e-05 (warmup 25%)") != NULL);
    CHECK(strstr(row(&g, 0), "steps/s") == NULL && strstr(row(&g, 0), "tok/s") == NULL);
    tui_grid_resize(&g, 3, 120); /* wide: everything */
    r.w = 120;
    tui_draw_status(&g, r, s, &ui);
    CHECK(strstr(row(&g, 0), "(warmup 25%)  ") != NULL && strstr(row(&g, 0), "steps/s") != NULL);
    free(s);
    tui_grid_free(&g);
}

/* --compare at 80 and 100 columns with an alert on a run's row: each
 * row keeps its loss (never dropped) and its |grad|, the alert too;
 * a's row, which holds the step and the target, shortens the rest. */
static void test_status_compare_alert(void)
{
    static const char *const alerts[] = {"overfit", "norm-variance"};
    static const long steps[][2] = {{176, 0}, {12345, 20000}};
    static const trainer_state states[] = {TRAINER_RUNNING, TRAINER_PAUSED};
    trainer_snapshot *s = snap_new(4);
    s->s.compare = 1;
    s->s.have_metrics = s->s.have_loss = 1;
    for (int k = 0; k < 2; k++) {
        s->s.run[k].loss = 3.0667f + (float)k;
        s->s.run[k].last_val = 3.0199f;
        s->s.run[k].lr_next = s->s.run[k].lr_peak = 1e-3f;
        s->s.run[k].last.grad_norm = 0.0123f;
    }
    for (int w = 0; w < 2; w++)
        for (int c = 0; c < 8; c++) {
            int cols = w ? 100 : 80, run = c & 1;
            s->s.state = states[(c >> 2) & 1];
            s->s.steps_done = steps[(c >> 1) & 1][0];
            s->s.limit = steps[(c >> 1) & 1][1];
            s->s.last_val_step = s->s.steps_done - 1;
            snprintf(s->s.diag[run].alert, sizeof s->s.diag[run].alert, "%s", alerts[run]);
            s->s.diag[!run].alert[0] = 0;
            tui_grid g = {0};
            tui_grid_resize(&g, 3, cols);
            tui_ui ui;
            tui_ui_init(&ui, 0, 1);
            tui_draw_status(&g, (tui_rect){0, 0, 3, cols}, s, &ui);
            char want[32];
            snprintf(want, sizeof want, "! %s", alerts[run]);
            int ok = strstr(row(&g, run), want) != NULL;
            for (int r = 0; r < 2; r++)
                ok &= strstr(row(&g, r), r ? "b: loss 4.0667" : "a: loss 3.0667") &&
                      strstr(row(&g, r), "|grad| 0.0123");
            if (!CHECK(ok)) { /* row() has one buffer */
                fprintf(stderr, "  %d columns:\n  %s\n", cols, row(&g, 0));
                fprintf(stderr, "  %s\n", row(&g, 1));
            }
            tui_grid_free(&g);
        }
    free(s);
}

/* The stall rule watches run a: a stalled comparison says STALLED on a's
 * row only, not on run b's, which trains on. */
static void test_status_stalled_twin(void)
{
    trainer_snapshot *s = snap_new(2);
    s->s.state = TRAINER_STALLED;
    s->s.compare = 1;
    tui_grid g = {0};
    tui_grid_resize(&g, 3, 120);
    tui_ui ui;
    tui_ui_init(&ui, 0, 0);
    tui_rect r = {0, 0, 3, 120};
    tui_draw_status(&g, r, s, &ui);
    CHECK(strstr(row(&g, 0), "STALLED") != NULL);
    CHECK(strstr(row(&g, 1), " b:") != NULL && strstr(row(&g, 1), "STALLED") == NULL);
    CHECK(strstr(row(&g, 1), "RUNNING") != NULL);
    free(s);
    tui_grid_free(&g);
}

/* The status line's loss is the one at the step the run is at
 * (have_loss, loss), not the last step taken's: after a rewind from a
 * diverged step, the step rewound to's; with none, "loss -". */
static void test_status_loss(void)
{
    trainer_snapshot *s = snap_new(2);
    s->s.state = TRAINER_PAUSED;
    s->s.steps_done = 10;
    s->s.have_metrics = 1;
    s->s.run[0].last.step = 12;
    s->s.run[0].last.loss = NAN; /* the diverged step, rewound from */
    s->s.have_loss = 1;
    s->s.run[0].loss = 2.5f;
    tui_grid g = {0};
    tui_grid_resize(&g, 2, 120);
    tui_ui ui;
    tui_ui_init(&ui, 0, 0);
    tui_rect r = {0, 0, 2, 120};
    tui_draw_status(&g, r, s, &ui);
    CHECK(strstr(row(&g, 0), "loss 2.5000") != NULL);
    CHECK(strstr(row(&g, 0), "nan") == NULL);
    CHECK(style_at(&g, 0, col_of(&g, 0, "loss 2.5")) == TUI_S_STATUS);
    s->s.have_loss = 0; /* rewound to step 0, or re-initialized */
    s->s.steps_done = 0;
    tui_draw_status(&g, r, s, &ui);
    CHECK(strstr(row(&g, 0), "loss -") != NULL);
    s->s.have_loss = 1; /* a non-finite loss now: marked */
    s->s.run[0].loss = INFINITY;
    tui_draw_status(&g, r, s, &ui);
    CHECK(style_at(&g, 0, col_of(&g, 0, "loss inf")) == TUI_S_BAD);
    free(s);
    tui_grid_free(&g);
}

/* A setting command of the row with command word w. */
static int is_setting(const ns_command *c, const char *w)
{
    return c->kind == CMD_SETTING && command_row(c) == settings_find_cmd(w);
}

static void test_keys(void)
{
    /* every action has a key, and so has every settings row's key; no key
     * has two actions */
    enum { MAX_ACT = TUI_ACT_BIND + 64 };
    int has[MAX_ACT] = {0}, dup = 0, n_keys, n_bound = 0;
    const tui_key *tui_keys = tui_key_table(&n_keys);
    for (int i = 0; i < n_keys; i++) {
        if ((int)tui_keys[i].act < (int)MAX_ACT)
            has[tui_keys[i].act] = 1;
        for (int k = 0; k < 3 && tui_keys[i].keys[k]; k++)
            for (int j = 0; j < n_keys; j++)
                for (int m = 0; m < 3 && tui_keys[j].keys[m]; m++)
                    dup += (i != j || k != m) && tui_keys[i].keys[k] == tui_keys[j].keys[m];
    }
    while (tui_bind_row((tui_action)(TUI_ACT_BIND + n_bound)))
        n_bound++;
    CHECK(n_bound >= 10); /* p P k w f i l + - c */
    int missing = 0;
    for (int a = 1; a < TUI_ACT_BIND + n_bound && a < MAX_ACT; a++)
        missing += a != (int)TUI_ACT_COUNT && !has[a];
    for (int r = 0; r < settings_count(); r++) /* each row's key is its own */
        for (int k = 0; k < SET_KEYS; k++) {
            const setting_key *sk = &settings_row(r)->keys[k];
            const ns_setting *s = tui_bind_row(tui_key_action(sk->key));
            missing += sk->key && s != settings_row(r);
        }
    CHECK(missing == 0);
    CHECK(dup == 0);
    /* the keys the man page gives these actions */
    CHECK(tui_key_action('p') == tui_bind_action("norm", "toggle"));
    CHECK(tui_key_action('w') == tui_bind_action("warmup", "toggle"));
    CHECK(tui_key_action('f') == tui_bind_action("precision", "next"));
    CHECK(tui_key_action(' ') == TUI_ACT_PAUSE);
    CHECK(tui_key_action('n') == TUI_ACT_STEP);
    CHECK(tui_key_action('+') == tui_bind_action("lr", "x2") && tui_key_action('-') == tui_bind_action("lr", "x0.5"));
    CHECK(tui_key_action('c') == tui_bind_action("clip", "toggle") && tui_key_action('r') == TUI_ACT_REINIT);
    CHECK(tui_key_action(TUI_KEY_TAB) == TUI_ACT_TARGET && tui_key_action('m') == TUI_ACT_VIEW);
    CHECK(tui_key_action('v') == TUI_ACT_BARS);
    CHECK(tui_key_action(TUI_KEY_UP) == TUI_ACT_UP && tui_key_action(TUI_KEY_DOWN) == TUI_ACT_DOWN);
    CHECK(tui_key_action('z') == TUI_ACT_FREEZE);
    CHECK(tui_key_action('?') == TUI_ACT_HELP && tui_key_action('h') == TUI_ACT_HELP &&
          tui_key_action(TUI_KEY_F1) == TUI_ACT_HELP);
    CHECK(tui_key_action('q') == TUI_ACT_QUIT && tui_key_action(TUI_KEY_F10) == TUI_ACT_QUIT);
    CHECK(tui_key_action('j') == TUI_ACT_NONE);

    /* actions: the same commands a --script line gives */
    tui_ui ui;
    tui_ui_init(&ui, 0, 0);
    ns_command c;
    CHECK(tui_apply(&ui, tui_bind_action("norm", "toggle"), 6, &c) == 1 && is_setting(&c, "norm") &&
          c.how == CMDH_TOGGLE);
    CHECK(tui_apply(&ui, tui_bind_action("lr", "x2"), 6, &c) == 1 && is_setting(&c, "lr") &&
          c.how == CMDH_SCALE && command_number(&c) == 2.0);
    CHECK(tui_apply(&ui, tui_bind_action("lr", "x0.5"), 6, &c) == 1 && command_number(&c) == 0.5);
    CHECK(tui_apply(&ui, TUI_ACT_PAUSE, 6, &c) == 1 && c.kind == CMD_PAUSE_TOGGLE);
    CHECK(tui_apply(&ui, TUI_ACT_STEP, 6, &c) == 1 && c.kind == CMD_STEP);
    CHECK(tui_apply(&ui, tui_bind_action("clip", "toggle"), 6, &c) == 1 && is_setting(&c, "clip") &&
          c.how == CMDH_TOGGLE);
    CHECK(tui_apply(&ui, tui_bind_action("precision", "next"), 6, &c) == 1 && is_setting(&c, "precision") &&
          c.how == CMDH_CYCLE);
    /* UI-only actions */
    CHECK(ui.selected == 5);
    CHECK(tui_apply(&ui, TUI_ACT_UP, 6, &c) == 0 && ui.selected == 5); /* at the top */
    tui_apply(&ui, TUI_ACT_DOWN, 6, &c);
    tui_apply(&ui, TUI_ACT_DOWN, 6, &c);
    CHECK(ui.selected == 3);
    tui_apply(&ui, TUI_ACT_BOTTOM, 6, &c);
    CHECK(ui.selected == 0);
    CHECK(tui_apply(&ui, TUI_ACT_VIEW, 6, &c) == 0 && ui.view == TUI_VIEW_HEATMAP);
    tui_apply(&ui, TUI_ACT_FREEZE, 6, &c);
    CHECK(ui.frozen);
    /* t: the other palette, and the footer says which; again: back */
    CHECK(tui_key_action('t') == TUI_ACT_PALETTE);
    CHECK(tui_apply(&ui, TUI_ACT_PALETTE, 6, &c) == 0 && ui.light &&
          !strcmp(ui.note, "palette: light (t: dark) "));
    CHECK(tui_apply(&ui, TUI_ACT_PALETTE, 6, &c) == 0 && !ui.light && strstr(ui.note, "dark (t: light)"));
    /* help: any key closes it and does nothing else; q still quits */
    tui_apply(&ui, TUI_ACT_HELP, 6, &c);
    CHECK(ui.help);
    CHECK(tui_apply(&ui, tui_bind_action("norm", "toggle"), 6, &c) == 0 && !ui.help);
    tui_apply(&ui, TUI_ACT_HELP, 6, &c);
    CHECK(tui_apply(&ui, TUI_ACT_QUIT, 6, &c) == 0 && ui.quit);
}

/* A finding as the trainer keeps it for the D panel. */
static diag_finding finding(diag_kind kind, diag_rule rule, int layer, long step,
                            const double v[4], const char *text, const char *hint)
{
    diag_finding f;
    memset(&f, 0, sizeof f);
    f.kind = kind;
    f.rule = rule;
    f.layer = layer;
    f.step = step;
    memcpy(f.value, v, sizeof f.value);
    snprintf(f.text, sizeof f.text, "%s", text);
    snprintf(f.hint, sizeof f.hint, "%s", hint);
    return f;
}

/* Does one of lines[0..n) contain want? */
static int has_line(char (*lines)[TUI_DIAG_LINE], int n, const char *want)
{
    for (int i = 0; i < n; i++)
        if (strstr(lines[i], want))
            return i + 1;
    return 0;
}

/* The D panel: healthy says so with the lowest headroom; findings come
 * diagnoses first, each with its layer's numbers now, what to try and the
 * keys for it; under --compare both runs; D opens it, any key closes it. */
static void test_diag_panel(void)
{
    static char lines[TUI_DIAG_MAX][TUI_DIAG_LINE];
    trainer_snapshot *s = snap_new(3);
    s->s.have_metrics = 1;
    s->s.run[0].last.step = 7;
    s->s.run[0].last.loss_scale = 1024;
    for (int l = 0; l < 3; l++) {
        s->s.run[0].last.layer[l].headroom = 4.0f - (float)l;
        s->s.run[0].last.layer[l].act_max = 10.0f * (float)(l + 1);
    }
    /* no check made: not said to be healthy */
    int n = tui_diag_lines(&s->s, lines, TUI_DIAG_MAX);
    CHECK(n == 1 && has_line(lines, n, "not known to be healthy: no check was made"));
    /* a check not yet answerable: not healthy yet, and the list says why */
    trainer_diagnosis *d0 = &s->s.diag[0];
    d0->n_checks = 2;
    d0->checks[0] = (diag_check){"is it learning", DIAG_Q_OK, "loss 2.3 from 5.6 at step 1"};
    d0->checks[1] = (diag_check){"does validation follow training", DIAG_Q_UNKNOWN,
                                 "not yet known: no finite validation yet"};
    n = tui_diag_lines(&s->s, lines, TUI_DIAG_MAX);
    CHECK(has_line(lines, n, "not yet known to be healthy: 1 check not yet known") &&
          has_line(lines, n, "is it learning? ok: loss 2.3 from 5.6 at step 1") &&
          has_line(lines, n, "does validation follow training? not yet known: no finite"));
    CHECK(!has_line(lines, n, "the run is healthy"));
    d0->checks[1].answer = DIAG_Q_OK;
    d0->healthy = 1;
    n = tui_diag_lines(&s->s, lines, TUI_DIAG_MAX);
    CHECK(has_line(lines, n, "no warnings; the run is healthy: headroom 2.00 "
                             "doublings at its lowest (layer 2, act max 30)"));
    memset(d0, 0, sizeof *d0);

    s->s.run[0].cfg.precision = FMT_FP16;
    s->s.run[0].cfg.fp32_norms = 0;
    trainer_diagnosis *d = &s->s.diag[0];
    double hv[4] = {0.9, 120, 256, 44}, nv[4] = {261, 256, 65504, 2}, lv[4] = {0.02, 0, 0, 1};
    d->f[d->n++] = finding(DIAG_WARNING, DIAG_R_HEADROOM, 2, 5, hv, "layer 2 headroom 0.90",
                           "lower the LR");
    d->f[d->n++] = finding(DIAG_DIAGNOSIS, DIAG_R_NORM_VAR, 2, 7, nv, "final norm variance",
                           "fp32-norms on");
    d->f[d->n++] = finding(DIAG_DIAGNOSIS, DIAG_R_LR, -1, 7, lv, "no warmup", "warmup on");
    n = tui_diag_lines(&s->s, lines, TUI_DIAG_MAX);
    int cause = has_line(lines, n, "DIAGNOSIS at step 7: final norm variance");
    int warn = has_line(lines, n, "warning at step 5: layer 2 headroom 0.90");
    CHECK(cause && warn && cause < warn);
    CHECK(has_line(lines, n, "now (step 7): layer 2 act max 30, headroom 2 doublings"));
    CHECK(has_line(lines, n, "try: fp32-norms on"));
    /* fp16 -> fp32 -> bf16: two presses of f */
    CHECK(has_line(lines, n, "keys: i (fp32 norms) or f x2 (bf16), and - halves the LR"));
    CHECK(has_line(lines, n, "keys: press w then b: warmup on, rewind"));
    CHECK(has_line(lines, n, "keys: - halves the LR; i puts the norms in fp32"));
    CHECK(!has_line(lines, n, "the run is healthy"));
    double rv[4] = {0.002, 0.02, 60, 0};
    d->f[2] = finding(DIAG_DIAGNOSIS, DIAG_R_LR, -1, 7, rv, "LR raised", "set lr 0.002");
    n = tui_diag_lines(&s->s, lines, TUI_DIAG_MAX);
    CHECK(has_line(lines, n, "keys: - pressed 4 times (LR back to 0.002 or below), then b"));
    /* in bf16 already: no presses of f toward it */
    s->s.run[0].cfg.precision = FMT_BF16;
    n = tui_diag_lines(&s->s, lines, TUI_DIAG_MAX);
    CHECK(has_line(lines, n, "keys: i (fp32 norms) and - halves the LR; then b rewinds") &&
          !has_line(lines, n, "f x"));
    s->s.run[0].cfg.precision = FMT_FP16;
    /* at a divergence: where b goes and its headroom, right after the
     * cause (a short screen keeps it), before the next diagnosis */
    snprintf(d->rewind, sizeof d->rewind, "step 150, headroom 1.3 (layer 2); step 100 had 2.9 "
             "(b twice)");
    n = tui_diag_lines(&s->s, lines, TUI_DIAG_MAX);
    int rw = has_line(lines, n, "    b rewinds to step 150, headroom 1.3 (layer 2); step 100 had "
                                "2.9 (b twice)");
    int next = has_line(lines, n, "DIAGNOSIS at step 7: LR raised");
    cause = has_line(lines, n, "DIAGNOSIS at step 7: final norm variance");
    CHECK(rw && cause < rw && rw < next);
    /* the fix's own snapshot, when it is another than b's: on its line */
    d->f[1].fix_from = DIAG_FROM_SNAPSHOT;
    d->f[1].fix_before = 60;
    snprintf(d->f[1].fix, sizeof d->f[1].fix, "fp32-norms on");
    n = tui_diag_lines(&s->s, lines, TUI_DIAG_MAX);
    CHECK(has_line(lines, n, "a applies the fix: rewinds to the snapshot at or before step 60, "
                             "then fp32-norms on"));
    snprintf(d->fix_rewind, sizeof d->fix_rewind, "step 50, headroom 3.2 (layer 2)");
    n = tui_diag_lines(&s->s, lines, TUI_DIAG_MAX);
    CHECK(has_line(lines, n, "a applies the fix: rewinds to step 50, headroom 3.2 (layer 2), "
                             "then fp32-norms on, and trains on (fix 1 of 3; it must beat this "
                             "state within 150 steps)"));
    d->fix_rewind[0] = 0;
    d->fix_reinit = 1; /* none that old kept */
    n = tui_diag_lines(&s->s, lines, TUI_DIAG_MAX);
    CHECK(has_line(lines, n, "a applies the fix: re-inits (no snapshot at or before step 60 is "
                             "kept and still healthy), then fp32-norms on"));
    /* every candidate's commands, as the trainer worked them out */
    snprintf(d->fix_cmds, sizeof d->fix_cmds, "fp32-norms on; lr x0.1");
    n = tui_diag_lines(&s->s, lines, TUI_DIAG_MAX);
    CHECK(has_line(lines, n, "healthy), then fp32-norms on; lr x0.1, and trains on"));
    d->fix_cmds[0] = 0;
    d->fix_reinit = 0;
    /* a fix in progress, or the last one's result, beside newer findings:
     * first, above them (a short screen cuts the panel's foot) */
    snprintf(d->fix_note, sizeof d->fix_note, "fix 1 is checked at step 382");
    snprintf(d->fix_proven, sizeof d->fix_proven, "fix 1 (fp32-norms on) helped: loss 2.788");
    d->n_checks = 1;
    d->checks[0] = (diag_check){"is it learning", DIAG_Q_OK, "loss 2.3 from 5.6 at step 1"};
    n = tui_diag_lines(&s->s, lines, TUI_DIAG_MAX);
    int note = has_line(lines, n, "fix 1 is checked at step 382"),
        proven = has_line(lines, n, "fix 1 (fp32-norms on) helped: loss 2.788"),
        checks = has_line(lines, n, "checks:");
    CHECK(note == 1 && proven == 2 && proven < has_line(lines, n, "DIAGNOSIS at step 7") &&
          has_line(lines, n, "LR raised") < checks);
    d->fix_note[0] = d->fix_proven[0] = 0;
    d->n_checks = 0;
    d->f[1].fix[0] = 0;
    d->f[1].fix_before = 0;
    /* a divergence no rule names: said so, never "healthy" */
    int kept_n = d->n;
    d->n = 0;
    n = tui_diag_lines(&s->s, lines, TUI_DIAG_MAX);
    CHECK(has_line(lines, n, "diverged at step 7: no rule names a cause") &&
          has_line(lines, n, "b rewinds to step 150") && !has_line(lines, n, "healthy"));
    d->n = kept_n;
    d->rewind[0] = 0;
    /* an LR too high after the cause: its keys, and no "fix below" (the
     * cause's fix line is above it) */
    double uv[4] = {0.02, 0.02, 64, 0};
    diag_finding kept_h = d->f[2];
    d->f[2] = finding(DIAG_DIAGNOSIS, DIAG_R_LR_HIGH, 2, 7, uv, "LR 0.02 too high", "lower");
    snprintf(d->f[1].fix, sizeof d->f[1].fix, "fp32-norms on");
    snprintf(d->f[2].fix, sizeof d->f[2].fix, "lr x0.1");
    n = tui_diag_lines(&s->s, lines, TUI_DIAG_MAX);
    CHECK(has_line(lines, n, "keys: - halves the LR, then b rewinds") &&
          !has_line(lines, n, "the fix below"));
    d->f[1].fix[0] = 0; /* now the LR's is the fix */
    n = tui_diag_lines(&s->s, lines, TUI_DIAG_MAX);
    CHECK(has_line(lines, n, "then b rewinds; a (the fix below) does both") &&
          has_line(lines, n, "a applies the fix: rewinds") >
              has_line(lines, n, "the fix below"));
    d->f[2] = kept_h;
    /* the loss in fp16 and a stall of the clip's: their keys */
    diag_finding kept_f = d->f[2];
    d->f[2] = finding(DIAG_DIAGNOSIS, DIAG_R_LOSS, -1, 7, rv, "forward, loss is inf", "fp32");
    n = tui_diag_lines(&s->s, lines, TUI_DIAG_MAX);
    CHECK(has_line(lines, n, "keys: i (softmax and loss in fp32), then b rewinds"));
    d->f[2] = finding(DIAG_DIAGNOSIS, DIAG_R_STALL, 2, 7, rv, "stalled: the clip", "clip 0");
    snprintf(d->f[2].fix, sizeof d->f[2].fix, "clip 0");
    n = tui_diag_lines(&s->s, lines, TUI_DIAG_MAX);
    CHECK(has_line(lines, n, "keys: c turns clipping off"));
    /* the other stalls' keys follow their fixes: an LR too low raises it,
     * DyT's goes to a LayerNorm, the LR's re-inits lower; a stall with no
     * fix names no keys */
    static const struct {
        const char *fix, *keys;
    } stall_keys[] = {
        {"lr x10", "keys: + doubles the LR (3 presses: x8)"},
        {"kind layernorm", "keys: k goes on to the next norm kind, layernorm"},
        {"lr x0.1", "keys: r re-inits, then - halves the LR"},
    };
    for (size_t i = 0; i < sizeof stall_keys / sizeof stall_keys[0]; i++) {
        snprintf(d->f[2].fix, sizeof d->f[2].fix, "%s", stall_keys[i].fix);
        n = tui_diag_lines(&s->s, lines, TUI_DIAG_MAX);
        if (!CHECK(has_line(lines, n, stall_keys[i].keys)))
            fprintf(stderr, "  stall fix %s: no '%s'\n", stall_keys[i].fix, stall_keys[i].keys);
    }
    d->f[2].fix[0] = 0;
    n = tui_diag_lines(&s->s, lines, TUI_DIAG_MAX);
    int st = has_line(lines, n, "stalled: the clip"), keys_after = 0;
    for (int i = st; st && i < n && !strstr(lines[i], "DIAGNOSIS") && !strstr(lines[i], "warning");
         i++)
        keys_after += strstr(lines[i], "keys:") != NULL;
    CHECK(st && keys_after == 0);
    d->f[2] = kept_f;
    /* a finding as long as a finding gets is shown whole, its last number
     * too (a DyT stall's line lost "-06 a step" to a 192-byte line) */
    diag_finding kept_long = d->f[2];
    memset(d->f[2].text, 'x', DIAG_TEXT - 1);
    memcpy(d->f[2].text + DIAG_TEXT - 9, " 7.6e-06", 9);
    n = tui_diag_lines(&s->s, lines, TUI_DIAG_MAX);
    CHECK(has_line(lines, n, "xxx 7.6e-06"));
    d->f[2] = kept_long;
    /* a stall, then a blow-up in the same episode: the blow-up is the
     * cause (the mark, the first line, the fix a applies); the stall
     * follows it */
    trainer_diagnosis kept_d = *d;
    d->n = 2;
    d->f[0] = finding(DIAG_DIAGNOSIS, DIAG_R_STALL, 2, 5, rv, "stalled: loss 3.1", "raise");
    d->f[1] = finding(DIAG_DIAGNOSIS, DIAG_R_BLOWUP, -1, 7, rv, "blew up, finite", "lower");
    snprintf(d->f[0].fix, sizeof d->f[0].fix, "lr x10");
    snprintf(d->f[1].fix, sizeof d->f[1].fix, "lr x0.1");
    n = tui_diag_lines(&s->s, lines, TUI_DIAG_MAX);
    int blow = has_line(lines, n, "DIAGNOSIS at step 7: blew up"),
        stall = has_line(lines, n, "DIAGNOSIS at step 5: stalled");
    CHECK(blow && stall && blow < stall && has_line(lines, n, "then lr x0.1, and trains on") &&
          !has_line(lines, n, "then lr x10, and trains on"));
    CHECK(snapshot_diagnosis_cause(d) == &d->f[1] && snapshot_diagnosis_fix(d) == &d->f[1]);
    d->f[1].kind = DIAG_WARNING; /* a warning after the stall: the stall is the cause */
    CHECK(snapshot_diagnosis_cause(d) == &d->f[0] && snapshot_diagnosis_fix(d) == &d->f[0]);
    *d = kept_d;

    /* --compare: run a healthy, run b diagnosed; each under its label */
    memset(d, 0, sizeof *d);
    s->s.compare = 1;
    s->s.run[1].last = s->s.run[0].last;
    s->s.run[1].cfg = s->s.run[0].cfg;
    snprintf(s->s.run[0].label, sizeof s->s.run[0].label, "a: lr=0.002");
    snprintf(s->s.run[1].label, sizeof s->s.run[1].label, "b: lr=0.02");
    trainer_diagnosis *db = &s->s.diag[1];
    db->f[db->n++] = finding(DIAG_DIAGNOSIS, DIAG_R_NORM_VAR, 2, 7, nv, "b's overflow", "fp32");
    s->s.diag[0].healthy = 1; /* every check answered ok */
    n = tui_diag_lines(&s->s, lines, TUI_DIAG_MAX);
    int la = has_line(lines, n, "a: lr=0.002"), ha = has_line(lines, n, "the run is healthy");
    int lb = has_line(lines, n, "b: lr=0.02"), hb = has_line(lines, n, "b's overflow");
    CHECK(la && ha && lb && hb && la < ha && ha < lb && lb < hb);
    CHECK(has_line(lines, n, "Tab until it reads b"));
    /* both runs with a fix: a applies the diverged run's (else a's), and
     * only that one's line says a applies it; the other's names whose */
    trainer_diagnosis *da = &s->s.diag[0];
    da->f[da->n++] = finding(DIAG_DIAGNOSIS, DIAG_R_NORM_VAR, 2, 7, nv, "a's overflow", "fp32");
    snprintf(da->f[0].fix, sizeof da->f[0].fix, "fp32-norms on");
    snprintf(db->f[0].fix, sizeof db->f[0].fix, "precision bf16");
    for (int div = -1; div <= 1; div += 2) {
        s->s.diverged_run = div; /* -1: neither, 1: b */
        n = tui_diag_lines(&s->s, lines, TUI_DIAG_MAX);
        int applies = 0;
        for (int i = 0; i < n; i++)
            applies += strstr(lines[i], "a applies the fix") != NULL;
        int ours = has_line(lines, n, div == 1 ? "then precision bf16, and trains on"
                                                : "then fp32-norms on, and trains on");
        int theirs = has_line(lines, n, div == 1 ? "step 0, then fp32-norms on (a applies run "
                                                   "b's: the run that diverged, else a)"
                                                 : "step 0, then precision bf16 (a applies run "
                                                   "a's: the run that diverged, else a)");
        if (!CHECK(applies == 1 && ours && theirs))
            fprintf(stderr, "  --compare, diverged run %d: %d 'a applies' lines\n", div, applies);
    }
    s->s.diverged_run = -1;
    da->n = 0;
    db->f[0].fix[0] = 0;

    /* D opens it over the frame; any key closes it and does nothing else */
    tui_ui ui;
    ns_command c;
    tui_ui_init(&ui, 0, 0);
    CHECK(tui_key_action('D') == TUI_ACT_DIAG);
    tui_apply(&ui, tui_key_action('D'), 3, &c);
    CHECK(ui.diag);
    tui_grid g = {0};
    tui_grid_resize(&g, 30, 100);
    tui_draw(&g, s, &ui);
    int shown = 0;
    for (int r = 0; r < g.rows; r++)
        shown |= strstr(row(&g, r), "b's overflow") != NULL;
    CHECK(shown);
    /* more than an 80x24 screen holds: the bottom border says so */
    while (db->n < TRAINER_FINDINGS)
        db->f[db->n++] = finding(DIAG_WARNING, DIAG_R_HEADROOM, 1, 7, hv,
                                 "a long warning line that takes two rows of the panel at "
                                 "eighty columns, with its numbers", "lower the LR");
    int more = 0, before = 0;
    tui_grid_resize(&g, 24, 80);
    tui_draw(&g, s, &ui);
    for (int r = 0; r < g.rows; r++) {
        more |= strstr(row(&g, r), "more on a taller terminal") != NULL;
        before |= strstr(row(&g, r), "b's overflow") != NULL; /* diagnoses first */
    }
    CHECK(more && before);
    CHECK(tui_apply(&ui, tui_bind_action("norm", "toggle"), 3, &c) == 0 && !ui.diag);
    tui_apply(&ui, TUI_ACT_DIAG, 3, &c);
    CHECK(tui_apply(&ui, TUI_ACT_DIAG, 3, &c) == 0 && !ui.diag); /* D again closes it */
    /* a: in the panel it sends the fix and closes the panel; outside it,
     * only a note saying where it works */
    CHECK(tui_key_action('a') == TUI_ACT_FIX);
    tui_apply(&ui, TUI_ACT_DIAG, 3, &c);
    CHECK(tui_apply(&ui, TUI_ACT_FIX, 3, &c) == 1 && c.kind == CMD_FIX && !ui.diag);
    ui.note[0] = 0;
    CHECK(tui_apply(&ui, TUI_ACT_FIX, 3, &c) == 0 && strstr(ui.note, "press D"));
    /* the panel's fix line: the first diagnosis' fix, where from, n of 3 */
    snprintf(db->f[0].fix, sizeof db->f[0].fix, "fp32-norms on");
    db->f[0].fix_from = DIAG_FROM_SNAPSHOT;
    db->f[0].fix_before = 150;
    int nl = tui_diag_lines(&s->s, lines, TUI_DIAG_MAX), fl = 0;
    for (int i = 0; i < nl; i++)
        fl += strstr(lines[i], "a applies the fix: rewinds to the snapshot at or before step 150, "
                               "then fp32-norms on, and trains on (fix 1 of 3; it must beat "
                               "this state within 150 steps)") != NULL;
    CHECK(fl == 1);
    tui_grid_free(&g);
    free(s);
}

/* The help's text column of every page: each row's text from column c,
 * trailing spaces cut, joined by one space (a wrapped line reads whole). */
static void help_text(tui_grid *g, trainer_snapshot *s, tui_ui *ui, char *out, size_t cap)
{
    tui_rect h = tui_layout_compute(g->rows, g->cols, 6).help;
    ns_command c;
    out[0] = 0;
    ui->help = 1, ui->help_page = 0;
    for (int page = 0; page < 16; page++) {
        tui_draw(g, s, ui);
        for (int rr = h.r + 1; rr < h.r + h.h - 1; rr++) {
            char t[400];
            snprintf(t, sizeof t, "%.*s", h.w - 3, row(g, rr) + h.c + 2); /* the box's (ASCII) */
            for (size_t n = strlen(t); n > 0 && (t[n - 1] == ' ' || t[n - 1] == '|'); n--)
                t[n - 1] = 0;
            if (rr > h.r + 1 && t[0] == ' ' && t[strspn(t, " ")] != 0 && strncmp(t, "  ", 2) == 0)
                memmove(t, t + strspn(t, " "), strlen(t + strspn(t, " ")) + 1); /* a wrapped rest */
            if (strlen(out) + strlen(t) + 2 < cap)
                strcat(strcat(out, " "), t);
        }
        if (ui->help_page + 1 >= ui->help_pages)
            break;
        tui_apply(ui, TUI_ACT_PGDN, 6, &c);
    }
}

/* The help overlay shows every key's whole line on every screen size: in
 * pages where the rows run out, wrapped where the width does. */
static void test_help(void)
{
    static const int sizes[][2] = {{24, 80}, {30, 100}, {60, 200}};
    for (int z = 0; z < 3; z++) {
        tui_grid g = {0};
        tui_grid_resize(&g, sizes[z][0], sizes[z][1]);
        trainer_snapshot *s = snap_new(6);
        tui_ui ui;
        tui_ui_init(&ui, 0, 0);
        static char all[65536];
        help_text(&g, s, &ui, all, sizeof all);
        int missing = 0, n_keys;
        const tui_key *tui_keys = tui_key_table(&n_keys);
        for (int i = 0; i < n_keys; i++) {
            if (!tui_keys[i].name || tui_action_follow_only(tui_keys[i].act))
                continue; /* --follow's keys: its help (test_stream.c) */
            char want[200];
            snprintf(want, sizeof want, "%-10s %s", tui_keys[i].name, tui_keys[i].help);
            want[30] = 0;
            missing += !strstr(all, want) || !strstr(all, tui_keys[i].help);
            if (!strstr(all, tui_keys[i].help))
                printf("  %dx%d: not whole: %s\n", sizes[z][0], sizes[z][1], tui_keys[i].help);
        }
        CHECK(missing == 0);
        CHECK(strstr(all, "Bars: |gradient| on one log scale") != NULL); /* the legend */
        /* the glossary after them: every per-layer number's line whole */
        int nc, gloss_missing = 0;
        const tui_layer_col *t = tui_layer_col_table(&nc);
        for (int i = 0; i < nc; i++)
            if (t[i].gloss && !strstr(all, t[i].gloss)) {
                printf("  %dx%d: glossary line not whole: %s\n", sizes[z][0], sizes[z][1],
                       t[i].gloss);
                gloss_missing++;
            }
        CHECK(gloss_missing == 0);
        CHECK(strstr(all, "nats per byte") && strstr(all, "global gradient norm"));
        /* pages, each saying so, the last turning back */
        CHECK(ui.help_pages > 1);
        int hint = 0;
        for (int rr = 0; rr < g.rows; rr++)
            hint |= strstr(row(&g, rr), "PgUp: back; any other key closes") != NULL;
        CHECK(hint);
        /* PgUp turns back to the first page; any other key then closes,
         * and does nothing else */
        ns_command c;
        int pages = ui.help_pages;
        for (int p = 1; p < pages; p++)
            CHECK(tui_apply(&ui, TUI_ACT_PGUP, 6, &c) == 0 && ui.help);
        CHECK(ui.help_page == 0);
        CHECK(tui_apply(&ui, TUI_ACT_PGUP, 6, &c) == 0 && !ui.help);
        /* the title says which palette is in force (t flips it) */
        tui_rect hr = tui_layout_compute(g.rows, g.cols, 6).help;
        for (int light = 1; light >= 0; light--) {
            ui.help = 1, ui.help_page = 0, ui.light = light;
            tui_draw(&g, s, &ui);
            CHECK(strstr(row(&g, hr.r), light ? "keys (palette: light)" : "keys (palette: dark)"));
        }
        free(s);
        tui_grid_free(&g);
    }
}

/* Every key of the table is in the man page's Keys section (cli.sh does
 * the same for the flags and --help). */
static void test_man_keys(void)
{
    FILE *f = fopen("man/normscope.1", "r");
    CHECK(f != NULL);
    if (!f)
        return;
    static char man[1 << 17];
    size_t n = fread(man, 1, sizeof man - 1, f);
    fclose(f);
    man[n] = 0;
    char *keys = strstr(man, ".Ss Keys\n");
    CHECK(keys != NULL);
    if (!keys)
        return;
    char *end = strstr(keys, "\n.Sh ");
    if (end)
        *end = 0;
    int missing = 0;
    int n_keys;
    const tui_key *tui_keys = tui_key_table(&n_keys);
    for (int i = 0; i < n_keys; i++) {
        if (!tui_keys[i].name)
            continue;
        char names[32];
        snprintf(names, sizeof names, "%s", tui_keys[i].name);
        /* "?/h/F1" is three keys; "+/-" two */
        for (char *tok = names, *next; tok && *tok; tok = next) {
            next = strchr(tok + 1, '/');
            if (next)
                *next++ = 0;
            const char *forms[] = {"Ic %s\n", "Ic %s ", ", %s\n", ", %s ", "Ic \\&%s"};
            int found = 0;
            for (int k = 0; k < 5 && !found; k++) {
                char want[48];
                snprintf(want, sizeof want, forms[k], tok);
                found = strstr(keys, want) != NULL;
            }
            if (!found)
                fprintf(stderr, "man page: key '%s' missing\n", tok);
            missing += !found;
        }
    }
    CHECK(missing == 0);
}

/* --compare: both panels side by side, each labelled, with the a/b ratio
 * of each layer's gradient norm between them; b's loss on the chart. */
static void test_compare_frame(void)
{
    trainer_snapshot *s = snap_new(3);
    fill_history(s, 40);
    for (long i = 0; i < 40; i++)
        s->hist[i].run[1].loss = s->hist[i].run[0].loss + 0.5f;
    s->s.have_metrics = 1;
    s->s.compare = 1;
    s->s.run[1].cfg = s->s.run[0].cfg;
    s->s.run[1].cfg.norm = NORM_POST; /* the labels come from each run's settings */
    s->s.run[1].last.n_layer = 3;
    for (int l = 0; l < 3; l++) {
        s->s.run[0].last.layer[l] = (layer_metrics){.grad_attn = 0.3f, .grad_ffn = 0.4f, .act_max = 2};
        s->s.run[1].last.layer[l] = (layer_metrics){.grad_attn = 0.03f, .grad_ffn = 0.04f,
                                               .act_max = 4};
    }
    s->s.run[1].last.layer[0].grad_attn = 0.6f, s->s.run[1].last.layer[0].grad_ffn = 0.8f;
    tui_grid g = {0};
    tui_ui ui;
    tui_ui_init(&ui, 0, 0);
    tui_grid_resize(&g, 30, 100);
    tui_draw(&g, s, &ui);
    tui_layout L = tui_layout_compute_cmp(30, 100, 3, 1);
    CHECK(col_of(&g, L.layers.r, "a: norm=pre ") == 0);
    CHECK(col_of(&g, L.layers.r, "b: norm=post") == L.layers_b.c);
    CHECK(col_of(&g, L.layers.r, "a/b") == L.ratio.c + 1);
    /* layer 2 at the top: 0.5 / 0.05 = 10; layer 0 at the bottom: 0.5 / 1 */
    const char *top = row(&g, L.layers.r + 2);
    CHECK(strstr(top, "     10 ") != NULL);
    CHECK(strncmp(top, "> 2 ", 4) == 0 && col_of(&g, L.layers.r + 2, "  2.000 ") > 4);
    CHECK(col_of(&g, L.layers.r + 2, "  4.000") > L.layers_b.c);
    CHECK(strstr(row(&g, L.layers.r + 4), "    0.5 ") != NULL);
    /* the selected layer's box: a column per run */
    int side_a = 0;
    for (int r = L.side.r; r < L.side.r + L.side.h; r++)
        side_a |= strstr(row(&g, r), "3.0e-01 3.0e-02") != NULL;
    CHECK(side_a);
    /* the chart: a legend naming both, and b's '+' points */
    CHECK(strstr(row(&g, L.chart.r), "- a: norm=pre") != NULL);
    CHECK(strstr(row(&g, L.chart.r), "+ b: norm=post") != NULL);
    int plus = 0;
    for (int r = L.chart.r + 1; r < L.chart.r + L.chart.h; r++)
        for (int c = 0; c < L.chart.w; c++)
            plus += ch_at(&g, r, c) == '+' && style_at(&g, r, c) == TUI_S_TWIN;
    CHECK(plus >= 20);
    /* the heatmap view is one run's: no side by side there */
    ui.view = TUI_VIEW_HEATMAP;
    tui_draw(&g, s, &ui);
    CHECK(strstr(row(&g, L.layers.r), "b: norm=post") == NULL);
    free(s);
    tui_grid_free(&g);
}

/* The precision column in bf16 / fp16, and the '!' on the layer a
 * divergence report names. */
static void test_prec_and_fault(void)
{
    trainer_snapshot *s = snap_new(3);
    s->s.have_metrics = 1;
    s->s.run[0].cfg.precision = FMT_FP16;
    for (int l = 0; l < 3; l++)
        s->s.run[0].last.layer[l] = (layer_metrics){.grad_attn = 0.1f, .grad_ffn = 0.1f,
                                             .act_max = 2, .headroom = 14.5f};
    s->s.run[0].last.layer[1].overflow = 7;
    s->s.run[0].last.nonfinite = 1;
    /* the layer comes from the engine's number, not from the words */
    snprintf(s->s.run[0].last.fault, sizeof s->s.run[0].last.fault, "backward, layer 2, MLP fc2");
    s->s.run[0].last.fault_layer = 1;
    tui_grid g = {0};
    tui_ui ui;
    tui_ui_init(&ui, 0, 0);
    tui_grid_resize(&g, 30, 100);
    tui_draw(&g, s, &ui);
    tui_layout L = tui_layout_compute(30, 100, 3);
    tui_layer_cols k = tui_layer_columns_prec(L.layers.w, 1);
    CHECK(k.prec > 0);
    CHECK(col_of(&g, L.layers.r, "headroom") == k.prec + 1);
    CHECK(strstr(row(&g, L.layers.r + 2), "    14.5") != NULL);  /* layer 2 */
    CHECK(strstr(row(&g, L.layers.r + 3), "ovf    7") != NULL);  /* layer 1 */
    CHECK(style_at(&g, L.layers.r + 3, k.prec + 1) == TUI_S_BAD);
    CHECK(strncmp(row(&g, L.layers.r + 3), "  1!", 4) == 0);
    CHECK(style_at(&g, L.layers.r + 3, 3) == TUI_S_BAD);
    CHECK(strncmp(row(&g, L.layers.r + 4), "  0 ", 4) == 0);
    /* an act max of 0 (headroom inf) or NaN: "-", never "inf" */
    s->s.run[0].last.layer[0].headroom = INFINITY;
    s->s.run[0].last.layer[2].headroom = NAN;
    tui_draw(&g, s, &ui);
    CHECK(strstr(row(&g, L.layers.r + 4), "       -") && !strstr(row(&g, L.layers.r + 4), "inf"));
    CHECK(strstr(row(&g, L.layers.r + 2), "       -") != NULL);
    CHECK(style_at(&g, L.layers.r + 2, k.prec + 7) == TUI_S_BAD);
    /* past the limit, a small negative headroom fits the selected layer's
       box whole ("-7e-03", not "-7.4e-0") */
    s->s.run[0].last.layer[2].headroom = -0.0074f;
    tui_draw(&g, s, &ui);
    int whole = 0, cut = 0;
    for (int r = L.side.r; r < L.side.r + L.side.h; r++) {
        whole |= strstr(row(&g, r), "headroom") && strstr(row(&g, r), " -7e-03 ");
        cut |= strstr(row(&g, r), "-7.4e-0") != NULL;
    }
    CHECK(L.side.h > 0 && whole && !cut);
    /* fp32: no column */
    s->s.run[0].cfg.precision = FMT_FP32;
    tui_draw(&g, s, &ui);
    CHECK(col_of(&g, L.layers.r, "headroom") < 0);
    free(s);
    tui_grid_free(&g);
}

/* d and e: the screen as text and the history as CSV, atomically. */
static void test_dumps(void)
{
    trainer_snapshot *s = snap_new(2);
    fill_history(s, 5);
    s->hist[3].run[0].val_loss = 2.5f;
    for (int i = 0; i < 5; i++)
        s->hist[i].lr = 0.001f;
    tui_grid g = {0};
    tui_grid_resize(&g, 3, 10);
    tui_puts(&g, 1, 0, 10, TUI_S_TEXT, "hello");
    char path[] = "build/test_dump_screen.txt", err[256], buf[512];
    CHECK(tui_write_screen(&g, path, err, sizeof err) == 0);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = 0;
    CHECK(!strcmp(buf, "\nhello\n\n"));
    remove(path);
    char mpath[] = "build/test_dump_metrics.csv";
    CHECK(tui_write_metrics(s, mpath, err, sizeof err) == 0);
    f = fopen(mpath, "r");
    n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = 0;
    CHECK(!strncmp(buf, "step,loss,val_loss,lr\n1,5,,0.00100000005\n", 41));
    CHECK(strstr(buf, "\n4,2.75,2.5,0.00100000005\n") != NULL);
    remove(mpath);
    /* d then e within one frame: both files are asked for, in either order */
    tui_ui ui;
    tui_ui_init(&ui, 1, 1);
    ns_command cmd;
    tui_apply(&ui, TUI_ACT_DUMP_SCREEN, 2, &cmd);
    tui_apply(&ui, TUI_ACT_DUMP_METRICS, 2, &cmd);
    CHECK(ui.dump == (TUI_DUMP_SCREEN | TUI_DUMP_METRICS));
    tui_ui_init(&ui, 1, 1);
    tui_apply(&ui, TUI_ACT_DUMP_METRICS, 2, &cmd);
    tui_apply(&ui, TUI_ACT_DUMP_SCREEN, 2, &cmd);
    CHECK(ui.dump == (TUI_DUMP_SCREEN | TUI_DUMP_METRICS));
    /* an unwritable place: refused with a reason, nothing left behind */
    CHECK(tui_write_screen(&g, "no/such/dir/x.txt", err, sizeof err) == -1 && err[0]);
    free(s);
    tui_grid_free(&g);
}

/* A whole frame at several sizes, and the too-small message. */
static void test_frame(void)
{
    trainer_snapshot *s = snap_new(6);
    fill_history(s, 50);
    s->s.have_metrics = 1;
    s->s.ev_total = 2;
    s->ev[0] = (trainer_event){.step = 0, .kind = NS_EV_INFO, .layer = -1, .text = "start: pre"};
    s->ev[1] = (trainer_event){.step = 50, .kind = NS_EV_SETTING, .layer = -1,
                               .text = "norm pre -> post"};
    s->s.sample_len = 3;
    memcpy(s->s.sample, "a\nb", 3);
    s->s.sample_step = 40;
    tui_grid g = {0};
    tui_ui ui;
    tui_ui_init(&ui, 0, 0);
    tui_grid_resize(&g, 30, 100);
    tui_draw(&g, s, &ui);
    CHECK(strstr(row(&g, 0), "step 50") != NULL);
    tui_layout L = tui_layout_compute(30, 100, 6);
    CHECK(strstr(row(&g, L.sample.r), "sample @40: The model a\\nb") != NULL);
    CHECK(strstr(row(&g, L.events.r), "events") != NULL);
    CHECK(strstr(row(&g, L.events.r + 2), "norm pre -> post") != NULL);
    CHECK(strstr(row(&g, L.footer.r), "F10Quit") != NULL);
    CHECK(strstr(row(&g, L.side.r), "layer 5 of 6") != NULL);
    /* the footer's keys are clickable too */
    int sel;
    CHECK(tui_click(&ui, L.footer.r, col_of(&g, L.footer.r, "F1Help"), &sel) == TUI_ACT_HELP);
    /* a click on a layer row selects it */
    CHECK(tui_click(&ui, L.layers.r + 2 + 3, 10, &sel) == TUI_ACT_NONE && sel &&
          ui.selected == 2);

    tui_grid_resize(&g, 20, 70);
    tui_draw(&g, s, &ui);
    int need = 0, now = 0;
    for (int r = 0; r < g.rows; r++) {
        need |= strstr(row(&g, r), "needs at least 80x24") != NULL;
        now |= strstr(row(&g, r), "this terminal is 70x20") != NULL;
    }
    CHECK(need && now);
    CHECK(ui.n_hits == 0);
    /* 20x5: the short form, whole words */
    tui_grid_resize(&g, 5, 20);
    tui_draw(&g, s, &ui);
    need = now = 0;
    for (int r = 0; r < g.rows; r++) {
        need |= strstr(row(&g, r), "need 80x24") != NULL;
        now |= strstr(row(&g, r), "have 20x5") != NULL;
    }
    CHECK(need && now);
    tui_grid_resize(&g, 1, 1); /* absurdly small: no crash, no write outside */
    tui_draw(&g, s, &ui);
    tui_grid_resize(&g, 0, 0);
    tui_draw(&g, s, &ui);
    free(s);
    tui_grid_free(&g);
}

/* Rows of g from r0 on that contain needle. */
static int rows_with(const tui_grid *g, int r0, const char *needle)
{
    int n = 0;
    for (int r = r0; r < g->rows; r++)
        n += strstr(row(g, r), needle) != NULL;
    return n;
}

/* The lesson panel takes the sample and event rows, at every size, so it
 * never takes a row from the layers or the chart; it shows the lesson's
 * text and the latest prompt, L hides it, a new prompt brings it back. */
static void test_lesson_panel(void)
{
    int bad = 0;
    for (int rows = TUI_MIN_ROWS; rows <= 90; rows += 3)
        for (int cols = TUI_MIN_COLS; cols <= 300; cols += 11)
            for (int cmp = 0; cmp < 2; cmp++) {
                tui_layout l = tui_layout_compute_cmp(rows, cols, 12, cmp);
                tui_rect keep[7] = {l.status, l.layers, l.chart, l.side, l.footer, l.ratio, l.layers_b};
                if (l.projector) { /* it yields to the layers */
                    bad += l.lesson.h != 0;
                    continue;
                }
                bad += !inside(l.lesson, rows, cols) || l.lesson.r != l.sample.r ||
                       l.lesson.h != l.sample.h + l.events.h || l.lesson.w != cols;
                for (int i = 0; i < (cmp ? 7 : 5); i++)
                    bad += overlap(l.lesson, keep[i]);
            }
    CHECK(bad == 0);

    trainer_snapshot *s = snap_new(6);
    fill_history(s, 10);
    s->s.state = TRAINER_PAUSED;
    tui_grid g = {0};
    tui_grid_resize(&g, 24, 80);
    tui_ui ui;
    tui_ui_init(&ui, 0, 0);
    tui_layout l = tui_layout_compute(24, 80, 6);
    tui_draw(&g, s, &ui); /* no lesson, no prompt: the event log */
    CHECK(rows_with(&g, l.events.r, " events ") == 1);
    ui.lesson_title = "Post-LN against Pre-LN";
    ui.lesson_text = "Run a: Post-LN.\nRun b: Pre-LN.";
    tui_draw(&g, s, &ui);
    CHECK(rows_with(&g, l.lesson.r, "Post-LN against Pre-LN") == 1);
    CHECK(rows_with(&g, l.lesson.r, "Run a: Post-LN.") == 1 && rows_with(&g, 0, "Run b: Pre-LN.") == 1);
    CHECK(rows_with(&g, l.events.r, " events ") == 0);
    snprintf(s->s.ask, sizeof s->s.ask, "Why can it not move?");
    s->s.ask_step = 5;
    s->s.ask_seq = 1;
    tui_draw(&g, s, &ui);
    CHECK(rows_with(&g, l.lesson.r, "step 5: Why can it not move?") == 1);
    CHECK(rows_with(&g, l.lesson.r, "space goes on") == 1);
    /* every layer's row is still there, layer 0 at the bottom */
    CHECK(strncmp(row(&g, l.layers.r + 2), "> 5", 3) == 0 &&
          strncmp(row(&g, l.layers.r + 2 + 5), "  0", 3) == 0);
    ns_command c;
    tui_apply(&ui, tui_key_action('L'), 6, &c);
    tui_draw(&g, s, &ui);
    CHECK(rows_with(&g, 0, "Why can it not move?") == 0 && rows_with(&g, l.events.r, " events ") == 1);
    s->s.ask_seq = 2; /* the next prompt shows it again */
    tui_draw(&g, s, &ui);
    CHECK(rows_with(&g, l.lesson.r, "Why can it not move?") == 1);
    ui.lesson_text = NULL; /* a --script's prompt, no lesson */
    tui_draw(&g, s, &ui);
    CHECK(rows_with(&g, l.lesson.r, "Why can it not move?") == 1);
    tui_grid_free(&g);
    free(s);
}

/* At 80x24 a 12-layer run shows layer 11 down to layer 0, the selected
 * layer's numbers folded into the status line's second row. */
/* The event log's scroll state: [ ] { } move it, new events do not, newer
 * than the newest follows again, and it stays inside what the ring holds. */
static void add_events(trainer_snapshot *s, long upto)
{
    for (long i = s->s.ev_total; i < upto; i++) {
        trainer_event *e = &s->ev[i % TRAINER_EVENTS];
        memset(e, 0, sizeof *e);
        e->step = i;
        snprintf(e->text, sizeof e->text, "event number %ld", i);
    }
    s->s.ev_total = upto;
}

static void test_log_scroll(void)
{
    tui_ui ui;
    tui_ui_init(&ui, 0, 0);
    tui_rect ev = {10, 0, 5, 80}; /* a title row and 4 event rows */
    tui_log_frame(&ui, ev, 30);
    CHECK(ui.log_rows == 4 && tui_log_at_row(&ui, 10) && tui_log_at_row(&ui, 14) &&
          !tui_log_at_row(&ui, 15) && !tui_log_at_row(&ui, 9));
    CHECK(tui_log_newest(&ui, 30, 4) == 29 && tui_log_newer(&ui, 30, 4) == 0);
    ns_command c;
    CHECK(tui_key_action('[') == TUI_ACT_LOG_OLDER && tui_key_action(']') == TUI_ACT_LOG_NEWER &&
          tui_key_action('{') == TUI_ACT_LOG_PGOLDER && tui_key_action('}') == TUI_ACT_LOG_PGNEWER);
    CHECK(tui_apply(&ui, TUI_ACT_LOG_OLDER, 6, &c) == 0);
    CHECK(tui_log_newest(&ui, 30, 4) == 28 && tui_log_newer(&ui, 30, 4) == 1);
    CHECK(ui.lesson_hidden); /* the lesson panel over the log gives way */
    /* new events arrive: the view stays on what it showed */
    tui_log_frame(&ui, ev, 35);
    CHECK(tui_log_newest(&ui, 35, 4) == 28 && tui_log_newer(&ui, 35, 4) == 6);
    tui_apply(&ui, TUI_ACT_LOG_PGOLDER, 6, &c); /* a page: rows less one */
    CHECK(tui_log_newest(&ui, 35, 4) == 25);
    tui_apply(&ui, TUI_ACT_LOG_PGNEWER, 6, &c);
    tui_apply(&ui, TUI_ACT_LOG_NEWER, 6, &c);
    CHECK(tui_log_newest(&ui, 35, 4) == 29);
    for (int i = 0; i < 5; i++) /* newer than the newest: following again */
        tui_apply(&ui, TUI_ACT_LOG_NEWER, 6, &c);
    CHECK(ui.log_newest == -1 && tui_log_newest(&ui, 40, 4) == 39);
    /* the oldest page is as far as it goes */
    for (int i = 0; i < 50; i++)
        tui_apply(&ui, TUI_ACT_LOG_OLDER, 6, &c);
    CHECK(tui_log_newest(&ui, 35, 4) == 3);
    /* the ring overwrote the events held: the oldest page it still keeps */
    long big = TRAINER_EVENTS + 500;
    CHECK(tui_log_newest(&ui, big, 4) == big - TRAINER_EVENTS + 3);
    /* everything fits: nothing to scroll, still following */
    tui_ui_init(&ui, 0, 0);
    tui_log_frame(&ui, ev, 3);
    tui_apply(&ui, TUI_ACT_LOG_OLDER, 6, &c);
    CHECK(ui.log_newest == -1 && tui_log_newer(&ui, 3, 4) == 0);
    /* no log on the screen (the projector layout): a note, no change */
    tui_log_frame(&ui, (tui_rect){0, 0, 0, 0}, 30);
    tui_apply(&ui, TUI_ACT_LOG_OLDER, 6, &c);
    CHECK(ui.log_newest == -1 && strstr(ui.note, "no event log") != NULL);

    /* drawn: a frame at 120x40 scrolled back one page shows older events
     * and the count of newer ones in the log's title */
    tui_grid g = {0};
    tui_grid_resize(&g, 40, 120);
    trainer_snapshot *s = snap_new(6);
    fill_history(s, 50);
    add_events(s, 60);
    tui_ui_init(&ui, 0, 0);
    tui_draw(&g, s, &ui);
    CHECK(rows_with(&g, 0, "event number 59") == 1 && rows_with(&g, 0, "newer") == 0);
    int rows = ui.log_rows;
    CHECK(rows >= 2);
    tui_apply(&ui, TUI_ACT_LOG_PGOLDER, 6, &c);
    add_events(s, 70); /* arriving meanwhile */
    tui_draw(&g, s, &ui);
    char want[32];
    snprintf(want, sizeof want, "event number %d", 59 - (rows - 1));
    CHECK(rows_with(&g, 0, want) == 1);
    CHECK(rows_with(&g, 0, "event number 59") == 0 && rows_with(&g, 0, "event number 69") == 0);
    snprintf(want, sizeof want, "-- %d newer", 10 + rows - 1);
    CHECK(rows_with(&g, 0, want) == 1);
    for (int i = 0; i < 20; i++)
        tui_apply(&ui, TUI_ACT_LOG_PGNEWER, 6, &c);
    tui_draw(&g, s, &ui);
    CHECK(rows_with(&g, 0, "event number 69") == 1 && rows_with(&g, 0, "newer") == 0);
    /* at 80 columns a long event wraps under its text: its last number is
     * on the screen, the event before it still shows */
    tui_grid_resize(&g, 30, 80);
    trainer_event *e = &s->ev[s->s.ev_total % TRAINER_EVENTS];
    memset(e, 0, sizeof *e);
    e->step = 70;
    snprintf(e->text, sizeof e->text, "layer 1 act max 3.178 -> 2.652e+06 in 31 steps (+33.32 "
             "doublings/100 steps): at the limit by step 98765");
    s->s.ev_total++;
    tui_ui_init(&ui, 0, 0);
    tui_draw(&g, s, &ui);
    CHECK(ui.log_rows >= 3);
    CHECK(rows_with(&g, 0, "by step 98765") == 1 && rows_with(&g, 0, "layer 1 act max") == 1);
    CHECK(rows_with(&g, 0, "event number 69") == 1);
    free(s);
    tui_grid_free(&g);
}

/* A comparison whose run a diverged, at 80x24 and 100x30: run a's row
 * keeps its loss and val, and the first non-finite op is shown whole (on
 * the toggles' row when the values row cannot hold it). */
static void test_diverged_status(void)
{
    static const int sizes[2][2] = {{24, 80}, {30, 100}};
    for (int k = 0; k < 2; k++) {
        trainer_snapshot *s = snap_new(6);
        fill_history(s, 20);
        s->s.compare = 1;
        s->s.run[1].cfg = s->s.run[0].cfg;
        s->s.run[1].last.n_layer = 6;
        s->s.have_metrics = s->s.have_loss = 1;
        s->s.state = TRAINER_DIVERGED;
        s->s.diverged_run = 0;
        s->s.limit = 450;
        s->s.steps_done = 417;
        s->s.last_val_step = 400;
        s->s.run[0].loss = 2.4543f;
        s->s.run[0].last_val = 2.5012f;
        s->s.run[1].loss = 2.4401f;
        s->s.run[1].last_val = 2.4999f;
        s->s.run[0].last.nonfinite = 1;
        snprintf(s->s.run[0].last.fault, sizeof s->s.run[0].last.fault, "forward, final norm variance");
        tui_grid g = {0};
        tui_grid_resize(&g, sizes[k][0], sizes[k][1]);
        tui_ui ui;
        tui_ui_init(&ui, 1, 0);
        tui_draw(&g, s, &ui);
        /* the validation is step 400's, the run at 417: said with its
         * step, but at 80 columns, where a's row is shortened for its
         * |grad| */
        if (!CHECK(strstr(row(&g, 0), "loss 2.4543") && strstr(row(&g, 0), "|grad| ") &&
                   strstr(row(&g, 0), k ? "val 2.5012@400" : "val 2.50")))
            fprintf(stderr, "  %dx%d: %s\n", sizes[k][1], sizes[k][0], row(&g, 0));
        CHECK(strstr(row(&g, 1), "loss 2.4401") && strstr(row(&g, 1), "|grad| "));
        CHECK(rows_with(&g, 0, "first non-finite: forward, final norm variance") == 1);
        free(s);
        tui_grid_free(&g);
    }
}

static void test_projector_frame(void)
{
    trainer_snapshot *s = snap_new(12);
    fill_history(s, 20);
    s->s.have_metrics = 1;
    for (int l = 0; l < 12; l++)
        s->s.run[0].last.layer[l] = (layer_metrics){.grad_attn = 0.5f, .grad_ffn = 0.25f, .act_max = 3,
                                             .resid_rms = 1};
    s->s.run[0].last.layer[11].grad_attn = NAN;
    tui_grid g = {0};
    tui_grid_resize(&g, 24, 80);
    tui_ui ui;
    tui_ui_init(&ui, 0, 0);
    tui_draw(&g, s, &ui);
    tui_layout l = tui_layout_compute(24, 80, 12);
    CHECK(strncmp(row(&g, l.layers.r + 2), ">11", 3) == 0);
    CHECK(strncmp(row(&g, l.layers.r + 2 + 11), "  0", 3) == 0);
    CHECK(strstr(row(&g, 1), "layer 11/12") && strstr(row(&g, 1), "attn nan") &&
          strstr(row(&g, 1), "mlp 2.50e-01"));
    int clickable = 0; /* the toggles the fold covers are gone */
    for (int i = 0; i < ui.n_hits; i++)
        clickable += ui.hits[i].r == 1;
    CHECK(clickable == 0);
    tui_grid_free(&g);
    free(s);
}

/* A two-run snapshot of L layers and n steps, measured */
static trainer_snapshot *twin_snap_new(int L, long n)
{
    trainer_snapshot *s = snap_new(L);
    fill_history(s, n);
    s->s.have_metrics = 1;
    s->s.have_loss = 1;
    s->s.compare = 1;
    return s;
}

/* The projector's chart, 2 plotted rows: both runs fall from 5.5 to 3.1
 * in the first 20 of 150 steps, then a stays on its plateau and b falls
 * to 2.6. Over the whole window's range both would share a row to the
 * end; fitted to the later half, the last third of the plot has a on the
 * top row and b on the bottom one, no cell of both, under a top label
 * just above the plateau. A chart of 6 rows keeps the whole window's
 * range: its top label is near the first losses. */
static void test_chart_short(void)
{
    trainer_snapshot *s = twin_snap_new(2, 150);
    for (long i = 0; i < 150; i++) {
        trainer_point *p = &s->hist[i];
        double fall = i < 20 ? 5.5 - 2.4 * (double)i / 20 : 3.1;
        p->run[0].loss = (float)fall;
        p->run[1].loss = (float)(i < 20 ? fall : 3.1 - 0.5 * (double)(i - 20) / 129);
        p->run[1].val_loss = NAN;
    }
    tui_grid g = {0};
    tui_grid_resize(&g, 4, 80);
    tui_rect r = {0, 0, 4, 80};
    tui_ui ui;
    tui_ui_init(&ui, 1, 0);
    ui.smooth = 0;
    tui_draw_chart(&g, r, s, &ui);
    tui_chart_geom cg = tui_chart_geometry(r, s, 1);
    int a_top = 0, b_bottom = 0, both = 0, n = 0;
    for (int c = cg.left + cg.w * 2 / 3; c < cg.left + cg.w; c++, n++) {
        uint32_t top = ch_at(&g, cg.top, c), bottom = ch_at(&g, cg.top + 1, c);
        a_top += top >= 0x2800 && top <= 0x28ff;
        b_bottom += bottom == '+';
        both += top == '*' || bottom == '*';
    }
    CHECK(cg.h == 2 && n > 10);
    CHECK(a_top == n && b_bottom == n && both == 0);
    double short_top = 0; /* the later half's top: a's plateau, padded */
    CHECK(sscanf(row(&g, 1), "%lf", &short_top) == 1 && short_top > 3.1 && short_top < 3.3);
    tui_grid_resize(&g, 8, 80);
    tui_rect tall = {0, 0, 8, 80};
    tui_draw_chart(&g, tall, s, &ui);
    double top = 0;
    CHECK(sscanf(row(&g, 1), "%lf", &top) == 1 && top > 5 && top < 5.5);
    tui_grid_free(&g);
    free(s);
}

/* tui_label_fit of label at w columns: does it return lost and read want? */
static int fits_as(const char *label, int w, int lost, const char *want)
{
    char b[160];
    snprintf(b, sizeof b, "%s", label);
    return tui_label_fit(b, w) == lost && strcmp(b, want) == 0;
}

/* A two-run frame's small things: the side box keeps a gap between a
 * name and its value at 80 columns; a run without loss scaling in fp16
 * puts its underflow count in each layer's row; the scale toggle shows no
 * number until a step ran in the new precision; the legend and the
 * headers say how many differing settings they left out. */
static void test_compare_details(void)
{
    trainer_snapshot *s = twin_snap_new(6, 20);
    s->s.run[0].cfg.precision = FMT_FP16;
    s->s.run[0].cfg.loss_scale = -1; /* off */
    s->s.run[1].cfg = s->s.run[0].cfg;
    s->s.run[1].cfg.loss_scale = 0; /* dynamic */
    /* the last step ran before the switch */
    metrics_set_setting(&s->s.run[0].last, "precision", FMT_FP32);
    s->s.run[0].last.loss_scale = 1;
    s->s.run[1].last = s->s.run[0].last;
    for (int l = 0; l < 6; l++) {
        s->s.run[0].last.layer[l] = (layer_metrics){.grad_attn = 0.086f, .grad_ffn = 0.05f, .act_max = 3,
                                             .underflow = 1072280 + l};
        s->s.run[1].last.layer[l] = s->s.run[0].last.layer[l];
        s->s.run[1].last.layer[l].underflow = 4136;
    }
    tui_grid g = {0};
    tui_ui ui;
    tui_ui_init(&ui, 0, 0);
    ui.target = 2; /* the toggles show run b's (dynamic) scale */
    tui_grid_resize(&g, 24, 80);
    tui_draw(&g, s, &ui);
    CHECK(rows_with(&g, 0, "g attn 8.6e-02") == 1 && rows_with(&g, 0, "|g|attn") == 0);
    CHECK(rows_with(&g, 0, " under") == 1);       /* the column, in both panels' header row */
    CHECK(rows_with(&g, 0, "1072285") == 1 && rows_with(&g, 0, "4136") == 6);
    tui_grid_resize(&g, 30, 100); /* the toggles row holds the scale at 100 columns */
    tui_draw(&g, s, &ui);
    CHECK(rows_with(&g, 0, "scale dyn ") == 1 && rows_with(&g, 0, "scale dyn 1") == 0);
    metrics_set_setting(&s->s.run[1].last, "precision", FMT_FP16);
    s->s.run[1].last.loss_scale = 32768, s->s.run[1].last.loss_scale_dynamic = 1;
    tui_draw(&g, s, &ui);
    CHECK(rows_with(&g, 0, "scale dyn 32768") == 1);
    /* labels: what differs first, the rest cut, " +N" for what was left out */
    CHECK(fits_as("a: norm=post  layernorm fp32 warmup=100 lr=0.001", 24, 0,
                  "a: norm=post  layernorm"));
    CHECK(fits_as("b: norm=pre precision=fp16 fp32-norms=on loss-scale=dynamic warmup=off  x", 40, 0,
                  "b: pre fp16 scale=dyn warmup=off +1"));
    /* the runs agree (no two spaces): the settings alone, cut, nothing left out */
    CHECK(fits_as("a: pre layernorm fp16 fp32-norms=on loss-scale=dynamic warmup=off", 40, 0,
                  "a: pre layernorm fp16 fp32-norms=on"));
    CHECK(fits_as("b: norm=pre precision=fp16 fp32-norms=off warmup=off clip=1  x", 22, 3,
                  "b: pre fp16 +3"));
    /* the legend of a 120-column chart: run b's differing settings, and
     * how many it left out */
    s->s.run[0].cfg = s->s.run[1].cfg;
    s->s.run[0].cfg.precision = FMT_FP32;
    s->s.run[1].cfg.norm = NORM_POST;
    tui_grid_resize(&g, 40, 120);
    tui_draw(&g, s, &ui);
    CHECK(rows_with(&g, 0, "+ b: post fp16 +2  ") == 1); /* fp32-norms=on, loss-scale=dynamic */
    tui_grid_free(&g);
    free(s);
}

/* At a projector's 80 columns both runs' legend entries stay on the loss
 * chart's title row, their labels shortened ("gamma=0") before the step
 * range or the y scale's name give theirs; the panel headers keep the
 * settings that differ (warmup), the bars' axis note given up for them. */
static void test_legend_fit(void)
{
    trainer_snapshot *s = twin_snap_new(6, 40);
    s->s.run[0].cfg.norm = NORM_POST;
    s->s.run[0].cfg.ln_gamma_init = 0;
    s->s.run[1].cfg = s->s.run[0].cfg;
    s->s.run[1].cfg.ln_gamma_init = 1;
    s->s.run[1].last = s->s.run[0].last;
    tui_grid g = {0};
    tui_ui ui;
    tui_ui_init(&ui, 0, 0);
    for (int big = 0; big < 2; big++) {
        tui_grid_resize(&g, big ? 40 : 24, big ? 120 : 80);
        tui_draw(&g, s, &ui);
        /* the chart's title row: the one with "loss " and run a's mark */
        int legend = -1;
        for (int r = 0; r < g.rows && legend < 0; r++)
            if (strncmp(row(&g, r), " loss ", 6) == 0)
                legend = r;
        CHECK(legend >= 0);
        const char *lr = legend >= 0 ? row(&g, legend) : "";
        CHECK(strstr(lr, big ? "a: ln-gamma-init=0" : "a: gamma=0") != NULL);
        CHECK(strstr(lr, big ? "b: ln-gamma-init=1" : "b: gamma=1") != NULL);
    }
    /* fp16 in both, only b scaling: b's default is what differs, and stays */
    s->s.run[0].cfg = s->s.run[1].cfg;
    s->s.run[0].cfg.precision = s->s.run[1].cfg.precision = FMT_FP16;
    s->s.run[0].cfg.loss_scale = -1;
    s->s.run[1].cfg.loss_scale = 0;
    tui_grid_resize(&g, 24, 80);
    tui_draw(&g, s, &ui);
    CHECK(rows_with(&g, 0, "- a: scale=off  + b: scale=dyn  ") == 1);
    /* twelve layers, a in Post-LN bf16 with warmup, b in Pre-LN fp32
     * without (warmup's lesson after Tab, w, f): headers and legend keep
     * warmup, and leave out only bf16's defaults (" +2") */
    trainer_snapshot *t = twin_snap_new(12, 40);
    t->s.run[1].cfg = t->s.run[0].cfg;
    t->s.run[0].cfg.norm = NORM_POST;
    t->s.run[0].cfg.precision = FMT_BF16;
    t->s.run[0].cfg.warmup = 100;
    t->s.run[0].warmup_on = 1;
    t->s.run[1].cfg.warmup = 0;
    t->s.run[1].warmup_on = 0;
    t->s.run[0].lr_peak = t->s.run[1].lr_peak = 1e-3f;
    t->s.run[1].last = t->s.run[0].last;
    tui_draw(&g, t, &ui);
    CHECK(rows_with(&g, 0, "a: post bf16 warmup=100 +2 ") >= 1);
    CHECK(rows_with(&g, 0, "b: pre fp32 warmup=off") >= 1);
    CHECK(rows_with(&g, 0, "- a: post bf16 warmup=100 +2  + b: pre fp32 warmup=off  ") == 1);
    /* labels: the long names shortened before any setting is left out,
     * low precision's defaults before a setting changed by hand */
    static const struct {
        const char *label;
        int w;
        const char *want;
    } fits[] = {
        {"b: norm=pre precision=fp16 fp32-norms=on loss-scale=dynamic warmup=off  x", 26,
         "b: pre fp16 warmup=off +2"},
        {"a: ln-gamma-init=0  post layernorm", 12, "a: gamma=0"},
        {"a: as b since step 300  pre", 17, "a: as b since 300"},
        {"a: norm-kind=layernorm until step 300  pre", 22, "a: layernorm until 300"},
    };
    for (size_t i = 0; i < sizeof fits / sizeof fits[0]; i++)
        CHECK(fits_as(fits[i].label, fits[i].w, 0, fits[i].want));
    tui_grid_free(&g);
    free(s);
    free(t);
}

/* Every per-layer column of the table has a display row in the layer
 * panel (tui_layers.c's layer_cols), and every display row shows a column
 * of the table. A new column gets no default display: its name in the
 * box's 10 and 6 columns, its format and the style that says when it is
 * bad are choices the 80x24 box has no room to get wrong, so a column
 * without a row fails here, by name. */
static void test_layer_col_rows(void)
{
    int n, bad = 0;
    const tui_layer_col *c = tui_layer_col_table(&n);
    for (int k = 0; k < METRICS_LAYER_COLS; k++) {
        int rows = 0;
        for (int i = 0; i < n; i++)
            rows += !strcmp(c[i].metric, metrics_layer_cols[k].name);
        if (rows != 1) {
            fprintf(stderr, "  the layer panel has %d display rows for l{i}_%s: give it one in "
                    "src/tui_layers.c's layer_cols (.metric = \"%s\", its .fmt, .side, .brief, "
                    ".style)\n", rows, metrics_layer_cols[k].name, metrics_layer_cols[k].name);
            bad++;
        }
    }
    for (int i = 0; i < n; i++) {
        int k = metrics_layer_col_find(c[i].metric, strlen(c[i].metric));
        if (k < 0 || !c[i].side || strlen(c[i].side) > 10 || !c[i].brief || strlen(c[i].brief) > 6 ||
            !c[i].style) {
            fprintf(stderr, "  the layer panel's row '%s' is not a column of metrics_layer_cols, or "
                    "lacks a .side (<= 10), a .brief (<= 6) or a .style\n", c[i].metric);
            bad++;
        }
    }
    CHECK(bad == 0);
    CHECK(n == METRICS_LAYER_COLS);
}

/* ---- every row --compare may vary, in both headers and the legend ------------ */

/* A value of row s other than c's, spelled as --compare takes it. */
static void other_value(const ns_setting *s, const ns_config *c, char *b, size_t n)
{
    double x = settings_get(s, c);
    const double cand[] = {x * 2, x / 2, x + 1, x - 1, s->lo, s->hi};
    switch (s->type) {
    case SET_ENUM: snprintf(b, n, "%s", s->names[((int)x + 1) % s->n_names]); return;
    case SET_ONOFF: snprintf(b, n, "%s", x ? "off" : "on"); return;
    case SET_AUTO: snprintf(b, n, "%s", x == 1 ? "off" : "on"); return;
    case SET_U64: snprintf(b, n, "%llu", (unsigned long long)x + 1); return;
    case SET_BETAS: snprintf(b, n, "0.8,0.9"); return;
    case SET_LOSS_SCALE: snprintf(b, n, "%s", x == 0 ? "off" : "dynamic"); return;
    default:
        for (size_t i = 0; i < sizeof cand / sizeof cand[0]; i++)
            if (cand[i] != x && cand[i] >= s->lo && cand[i] <= s->hi) {
                snprintf(b, n, "%g", cand[i]);
                return;
            }
        snprintf(b, n, "?");
    }
}

/* Both configs where the row applies: the deciding row's first value
 * that makes the row's holds true (fp32-norms, loss-scale: a low format). */
static void where_it_applies(const ns_setting *s, ns_config *a, ns_config *b)
{
    const ns_setting *u = s->applies.under ? settings_find(s->applies.under,
                                                           strlen(s->applies.under)) : NULL;
    if (!u || !(s->live & (SETL_TOGGLE | SETL_CYCLE)) || s->applies.holds(a, NULL))
        return;
    for (int v = 0; v < u->n_names && !s->applies.holds(a, NULL); v++) {
        settings_put(u, a, v);
        settings_put(u, b, v);
    }
}

/* For every row --compare may vary: run b given another value as
 * --compare gives it, both panels' headers and the chart's legend say
 * each run's value as "NAME=VALUE" (b's in the words of its --compare). */
static void test_compare_every_row(void)
{
    int rows = 0;
    for (int i = 0; i < settings_count(); i++) {
        const ns_setting *s = settings_row(i);
        if (!(s->flags & SETF_COMPARE))
            continue;
        trainer_snapshot *t = twin_snap_new(4, 40);
        ns_config *a = &t->s.run[0].cfg, *b = &t->s.run[1].cfg;
        *b = *a;
        where_it_applies(s, a, b);
        char v[64], spec[96], wa[128], wb[128], av[64];
        other_value(s, a, v, sizeof v);
        snprintf(spec, sizeof spec, "%s=%s", s->name, v);
        int applied = cli_apply_setting(b, spec, stderr) == 0;
        for (int r = 0; r < 2; r++) {
            t->s.run[r].warmup_on = t->s.run[r].cfg.warmup > 0;
            t->s.run[r].lr_peak = t->s.run[r].cfg.lr;
        }
        settings_format(s, a, av, sizeof av);
        snprintf(wa, sizeof wa, "a: %s=%s", s->name,
                 settings_is_off(s, settings_get(s, a)) ? "off" : av);
        snprintf(wb, sizeof wb, "b: %s", spec);
        tui_grid g = {0};
        tui_ui ui;
        tui_ui_init(&ui, 0, 0);
        tui_grid_resize(&g, 48, 200);
        tui_draw(&g, t, &ui);
        int na = rows_with(&g, 0, wa), nb = rows_with(&g, 0, wb);
        if (!applied || na < 2 || nb < 2) {
            fprintf(stderr, "--compare %s: '%s' on %d rows, '%s' on %d (headers and legend: 2)\n",
                    spec, wa, na, wb, nb);
            for (int r = 0; r < g.rows; r++)
                if (strstr(row(&g, r), "a: ") || strstr(row(&g, r), "b: "))
                    fprintf(stderr, "  %s\n", row(&g, r));
        }
        CHECK(applied && na >= 2 && nb >= 2);
        rows++;
        tui_grid_free(&g);
        free(t);
    }
    CHECK(rows >= 20); /* the table's --compare rows, norm to seed */
}

/* A snapshot of L layers whose layer l has attention logit 10^(l/2),
 * entropy 3 - l/10, branch/x 0.1 (l+1) and norm input RMS l + 1.5, and
 * gradients; run b (with compare) the logits x100. */
static trainer_snapshot *mech_snap(int L, int compare)
{
    trainer_snapshot *s = snap_new(L);
    fill_history(s, 40);
    s->s.have_metrics = 1;
    s->s.have_loss = 1;
    for (int r = 0; r < 2; r++)
        for (int l = 0; l < L; l++) {
            layer_metrics *lm = &s->s.run[r].last.layer[l];
            lm->grad_attn = lm->grad_ffn = 0.1f, lm->act_max = 4, lm->resid_rms = 1;
            lm->attn_logit_max = (float)(pow(10, l / 2.0) * (r ? 100 : 1));
            lm->attn_entropy = 3.0f - 0.1f * (float)l;
            lm->branch_ratio = 0.1f * (float)(l + 1);
            lm->norm_in_rms = (float)l + 1.5f;
        }
    s->s.run[0].last.grad_norm = 0.862f;
    if (compare) {
        s->s.compare = 1;
        s->s.run[1].cfg = s->s.run[0].cfg;
        s->s.run[1].cfg.norm = NORM_POST;
        s->s.run[1].last.n_layer = L;
        s->s.run[1].last.grad_norm = 1.5f;
    }
    return s;
}

/* The row of the grid (from r0) whose layer index cell reads " l" or ">l". */
static int layer_row_of(tui_grid *g, int r0, int c, int l)
{
    char want[8];
    snprintf(want, sizeof want, "%2d", l);
    for (int r = r0; r < g->rows; r++)
        if (!strncmp(row(g, r) + c + 1, want, 2) && (row(g, r)[c] == ' ' || row(g, r)[c] == '>'))
            return r;
    return -1;
}

/* M switches the layer rows to the mechanisms and back, in step with
 * them (each layer on the row it had), at 80x24 and 100x30, in the one
 * run's view and in --compare's two panels; the key is in the table, the
 * help, not one that changes the lab's model (so --follow keeps it). */
static void test_mech_view(void)
{
    CHECK(tui_key_action('M') == TUI_ACT_MECH);
    CHECK(!tui_action_changes_model(TUI_ACT_MECH) && !tui_action_follow_only(TUI_ACT_MECH));
    static const int sizes[][2] = {{24, 80}, {30, 100}};
    for (int z = 0; z < 2; z++)
        for (int cmp = 0; cmp < 2; cmp++) {
            trainer_snapshot *s = mech_snap(6, cmp);
            tui_grid g = {0};
            tui_grid_resize(&g, sizes[z][0], sizes[z][1]);
            tui_ui ui;
            tui_ui_init(&ui, 0, 1);
            tui_draw(&g, s, &ui);
            int rows_g[6];
            for (int l = 0; l < 6; l++)
                rows_g[l] = layer_row_of(&g, 2, 0, l);
            ns_command c;
            CHECK(tui_apply(&ui, tui_key_action('M'), 6, &c) == 0 && ui.mech);
            tui_draw(&g, s, &ui);
            int titles = 0, in_step = 0, values = 0;
            for (int r = 0; r < g.rows; r++)
                titles += strstr(row(&g, r), cmp ? "logit" : "att logit") != NULL &&
                          strstr(row(&g, r), cmp ? "entrpy" : "att entrpy") != NULL &&
                          strstr(row(&g, r), "branch") != NULL;
            for (int l = 0; l < 6; l++) {
                char v[16];
                snprintf(v, sizeof v, "%7.3f", 3.0 - 0.1 * l); /* the entropy, both runs */
                in_step += rows_g[l] >= 0 && layer_row_of(&g, 2, 0, l) == rows_g[l];
                values += rows_g[l] >= 0 && strstr(row(&g, rows_g[l]), v) != NULL;
                if (cmp && rows_g[l] >= 0) { /* b's logits: x100 of a's, in b's panel */
                    char vb[16];
                    snprintf(vb, sizeof vb, "%7.3f", pow(10, l / 2.0) * 100);
                    if (pow(10, l / 2.0) * 100 >= 1000)
                        snprintf(vb, sizeof vb, "%7.1e", pow(10, l / 2.0) * 100);
                    values += strstr(row(&g, rows_g[l]), vb) != NULL;
                }
            }
            if (titles != 1 || in_step != 6 || values != (cmp ? 12 : 6))
                for (int r = 0; r < g.rows; r++)
                    printf("  %dx%d%s |%s|\n", sizes[z][1], sizes[z][0], cmp ? " cmp" : "",
                           row(&g, r));
            CHECK(titles == 1);
            CHECK(in_step == 6);
            CHECK(values == (cmp ? 12 : 6));
            /* the logit bar: layer 5's 10^2.5 is longer than layer 1's 10^0.5 */
            if (!cmp) {
                tui_mech_cols k = tui_mech_columns(sizes[z][1], 0);
                CHECK(k.bar_w >= 8);
                int len5 = 0, len1 = 0;
                for (int x = k.bar; x < k.bar + k.bar_w; x++) {
                    len5 += ch_at(&g, rows_g[5], x) != ' ';
                    len1 += ch_at(&g, rows_g[1], x) != ' ';
                }
                CHECK(len5 > len1 && len1 > 0);
                /* and the gradients' selection moves the same rows */
                CHECK(tui_apply(&ui, TUI_ACT_DOWN, 6, &c) == 0 && ui.selected == 4);
                tui_draw(&g, s, &ui);
                CHECK(row(&g, rows_g[4])[0] == '>');
            }
            CHECK(tui_apply(&ui, TUI_ACT_MECH, 6, &c) == 0 && !ui.mech);
            tui_draw(&g, s, &ui);
            int grads = 0;
            for (int r = 0; r < g.rows; r++)
                grads += strstr(row(&g, r), cmp ? "attn abs" : "attention |grad|") != NULL ||
                         strstr(row(&g, r), "attn |grad|") != NULL;
            CHECK(grads >= 1);
            tui_grid_free(&g);
            free(s);
        }
    /* the compact cells fit both panels alike: four at 35 and 36 columns */
    tui_mech_cols a = tui_mech_columns(35, 1), b = tui_mech_columns(36, 1);
    int na = 0, nb = 0, nc;
    const tui_layer_col *t = tui_layer_col_table(&nc);
    for (int i = 0; i < nc; i++) {
        na += a.x[i] >= 0, nb += b.x[i] >= 0;
        CHECK(a.x[i] < 0 || a.x[i] + a.cell_w - 1 <= 35);
        CHECK(!(t[i].flags & TUI_COL_MECH) || t[i].unit); /* the single view's unit row */
    }
    CHECK(na == 4 && nb == 4);
}

/* Every per-layer number shown anywhere (a row's or the compact rows'
 * title, the box's name, the fold's) has its glossary line, so a new
 * column without one fails here; the norm parameters' gradient is never
 * called the layer's "grad norm"; the help shows each line under the
 * box's name, and the view's own numbers (loss, |grad|) too. */
static void test_glossary(void)
{
    int nc, missing = 0, misnamed = 0;
    const tui_layer_col *t = tui_layer_col_table(&nc);
    for (int i = 0; i < nc; i++) {
        int shown = t[i].row.title || t[i].twin.title || t[i].side || t[i].brief || t[i].fold ||
                    (t[i].flags & TUI_COL_MECH);
        if (shown && (!t[i].gloss || strlen(t[i].gloss) < 20)) {
            printf("  layer column %s: no glossary line\n", t[i].metric);
            missing++;
        }
        const char *labels[] = {t[i].row.title, t[i].twin.title, t[i].side, t[i].brief, t[i].fold};
        for (int k = 0; k < 5; k++)
            misnamed += labels[k] && !strcmp(t[i].metric, "grad_ln") &&
                        (strstr(labels[k], "grad norm") || strstr(labels[k], "norm|g|") ||
                         strstr(labels[k], "g norm"));
    }
    CHECK(missing == 0);
    CHECK(misnamed == 0);
    tui_grid g = {0};
    tui_grid_resize(&g, 24, 80);
    trainer_snapshot *s = mech_snap(6, 0);
    tui_ui ui;
    tui_ui_init(&ui, 0, 1);
    static char all[65536];
    help_text(&g, s, &ui, all, sizeof all);
    int unnamed = 0;
    for (int i = 0; i < nc; i++) {
        char want[64];
        snprintf(want, sizeof want, " %-10s ", t[i].side);
        if (t[i].gloss && !strstr(all, want)) {
            printf("  the glossary has no line for '%s'\n", t[i].side);
            unnamed++;
        }
    }
    CHECK(unnamed == 0);
    static const char *const view[] = {" loss ", " |grad| ", " val ", " sample ", " XX ",
                                       " bars ", " act bar ", " a/b ", "\xce\x94out"};
    for (size_t i = 0; i < sizeof view / sizeof view[0]; i++) {
        if (!strstr(all, view[i]))
            printf("  the glossary has no '%s'\n", view[i]);
        CHECK(strstr(all, view[i]) != NULL);
    }
    /* without colour, the bars' glyphs (ASCII here) */
    ui.color = 0;
    help_text(&g, s, &ui, all, sizeof all);
    CHECK(strstr(all, "# normal, . vanishing") != NULL && strstr(all, "! exploding") != NULL);
    ui.color = 1;
    help_text(&g, s, &ui, all, sizeof all);
    /* the colour line names the palette's colours: black on --light */
    CHECK(strstr(all, "cyan normal") != NULL);
    ui.light = 1;
    help_text(&g, s, &ui, all, sizeof all);
    CHECK(strstr(all, "black normal") != NULL && strstr(all, "blue vanishing") != NULL);
    tui_grid_free(&g);
    free(s);
}

/* The help's pages are full but the last: a block (a key, the legend, a
 * glossary entry) moves to the next page whole, leaving at most its
 * length less one row empty, never half a page. */
static void test_help_pages_full(void)
{
    static const int sizes[][2] = {{24, 80}, {30, 100}};
    for (int z = 0; z < 2; z++) {
        tui_grid g = {0};
        tui_grid_resize(&g, sizes[z][0], sizes[z][1]);
        trainer_snapshot *s = snap_new(6);
        tui_ui ui;
        tui_ui_init(&ui, 0, 0);
        ui.help = 1;
        tui_rect h = tui_layout_compute(g.rows, g.cols, 6).help;
        ns_command c;
        for (int page = 0; page < 16; page++) {
            tui_draw(&g, s, &ui);
            int empty = 0;
            for (int r = h.r + 1; r < h.r + h.h - 1; r++) {
                const char *t = row(&g, r) + h.c + 1;
                int blank = 1;
                for (int x = 0; x < h.w - 2; x++)
                    blank &= t[x] == ' ';
                empty += blank;
            }
            if (ui.help_page + 1 < ui.help_pages) {
                if (empty > 4)
                    printf("  %dx%d: help page %d has %d empty rows\n", sizes[z][1], sizes[z][0],
                           page + 1, empty);
                CHECK(empty <= 4);
            }
            if (ui.help_page + 1 >= ui.help_pages)
                break;
            tui_apply(&ui, TUI_ACT_PGDN, 6, &c);
        }
        tui_grid_free(&g);
        free(s);
    }
}

/* --light: every colour pair the view initialises is readable on a white
 * background: on the default background no yellow, cyan or white text,
 * no dim (grey) and no bold colour (the bright variant); a coloured
 * block's text differs from its block. The dark palette keeps its own
 * (the glossary names both). */
static void test_palette_light(void)
{
    const tui_style_spec *p = tui_palette(1);
    int bad = 0;
    for (int st = 0; st < TUI_S_COUNT; st++) {
        const tui_style_spec *e = &p[st];
        int on_white = e->bg < 0 || e->bg == TUI_C_WHITE;
        int pale = e->fg == TUI_C_YELLOW || e->fg == TUI_C_WHITE || e->fg == TUI_C_CYAN;
        int b = (on_white && pale) || (e->color_attr & TUI_A_DIM) ||
                (on_white && e->fg >= 0 && (e->color_attr & TUI_A_BOLD)) ||
                (e->bg >= 0 && e->fg == e->bg);
        if (b)
            printf("  --light: style %d is not readable on white (fg %d bg %d attr %u)\n", st,
                   e->fg, e->bg, e->color_attr);
        bad += b;
    }
    CHECK(bad == 0);
    /* the dark palette is the one before: yellow marks, cyan normal bars */
    CHECK(tui_palette(0)[TUI_S_MARK].fg == TUI_C_YELLOW);
    CHECK(tui_palette(0)[TUI_S_NORMAL].fg == TUI_C_CYAN);
    /* the bar states differ in each palette */
    for (int l = 0; l < 2; l++) {
        const tui_style_spec *q = tui_palette(l);
        CHECK(q[TUI_S_NORMAL].fg != q[TUI_S_VANISH].fg && q[TUI_S_VANISH].fg != q[TUI_S_EXPLODE].fg &&
              q[TUI_S_NORMAL].fg != q[TUI_S_EXPLODE].fg);
    }
    char b[32];
    tui_palette_name(TUI_S_BAD, 1, 1, b, sizeof b);
    CHECK(!strcmp(b, "white on red"));
    tui_palette_name(TUI_S_VANISH, 0, 1, b, sizeof b);
    CHECK(!strcmp(b, "bright blue"));
    tui_palette_name(TUI_S_BAD, 0, 0, b, sizeof b);
    CHECK(!strcmp(b, "reversed"));
    /* the chart's legend says what each step's loss looks like there */
    trainer_snapshot *sn = mech_snap(6, 0);
    tui_grid g = {0};
    tui_grid_resize(&g, 40, 120);
    tui_ui ui;
    tui_ui_init(&ui, 0, 1);
    ui.light = 1;
    tui_draw(&g, sn, &ui);
    CHECK(rows_with(&g, 0, "plain: each step") == 1 && rows_with(&g, 0, "dim: each step") == 0);
    ui.light = 0;
    tui_draw(&g, sn, &ui);
    CHECK(rows_with(&g, 0, "dim: each step") == 1);
    tui_grid_free(&g);
    free(sn);
    /* --light is a flag of the live view and of --follow, not only --plot's */
    const ns_setting *r = settings_find("light", 5);
    CHECK(r && !(r->flags & SETF_PLOT) && (r->flags & SETF_FOLLOW));
}

/* The global gradient norm (what c clips) on the status line at 80 and
 * 100 columns; not made up where a followed stream did not say it. */
static void test_status_grad_norm(void)
{
    static const int widths[] = {80, 100};
    for (int z = 0; z < 2; z++) {
        trainer_snapshot *s = mech_snap(6, 0);
        tui_grid g = {0};
        tui_grid_resize(&g, 24, widths[z]);
        tui_ui ui;
        tui_ui_init(&ui, 0, 1);
        tui_draw(&g, s, &ui);
        CHECK(strstr(row(&g, 0), "|grad| 0.862") != NULL);
        /* a crowded row as a long run has it: a validation and an
         * out_change of earlier steps ("@step") */
        s->s.limit = 100000;
        s->s.steps_done = 12345;
        s->s.last_val_step = 12300;
        s->s.run[0].last_val = 1.9f;
        s->hist[0].step = 12300;
        s->hist[0].run[0].oc_known = 1;
        s->hist[0].run[0].out_change = 0.0094f;
        tui_draw(&g, s, &ui);
        CHECK(strstr(row(&g, 0), "|grad| 0.862") != NULL && strstr(row(&g, 0), "val 1.9") != NULL);
        /* a fresh out_change (measured at the step shown) is kept first:
         * at 80 columns it may take the gradient norm's place */
        s->s.steps_done = 12300;
        tui_draw(&g, s, &ui);
        CHECK(strstr(row(&g, 0), "out 0.0094") != NULL &&
              (widths[z] == 80 || strstr(row(&g, 0), "|grad| 0.862") != NULL));
        s->s.run[0].last.unknown |= 1u << METRICS_COL_GNORM;
        tui_draw(&g, s, &ui);
        CHECK(strstr(row(&g, 0), "|grad|") == NULL);
        tui_grid_free(&g);
        free(s);
    }
}

int main(void)
{
    test_layout();
    test_layout_lesson();
    test_layer_columns();
    test_layer_col_rows();
    test_scroll();
    test_scales();
    test_grid();
    test_layer_bars();
    test_chart();
    test_heatmap();
    test_status_and_clicks();
    test_status_loss();
    test_status_stalled_twin();
    test_compare_every_row();
    test_status_narrow_lr();
    test_status_compare_alert();
    test_keys();
    test_help();
    test_diag_panel();
    test_man_keys();
    test_frame();
    test_prec_columns();
    test_compare_frame();
    test_prec_and_fault();
    test_dumps();
    test_lesson_panel();
    test_projector_frame();
    test_diverged_status();
    test_chart_smoothed();
    test_chart_short();
    test_compare_details();
    test_legend_fit();
    test_log_scroll();
    test_mech_view();
    test_glossary();
    test_help_pages_full();
    test_palette_light();
    test_status_grad_norm();
    return test_summary();
}
