/* test_sweepview.c - the live view of a sweep without a terminal: the
 * map's layout (axes to rows, columns and pages; seeds folded), the cells
 * (mean and spread over seeds, diverged and stalled marks), the color
 * scale, the reading of a growing CSV (complete lines only), and frames
 * drawn into the cell grid compared as strings, a sweep lesson's lines
 * under the cells.
 * Not here: the real sweep in a terminal (tui_sweep.sh). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "csv.h"
#include "lesson.h"
#include "testutil.h"
#include "tui_sweep.h"

static void test_map_default(void)
{
    /* lr 3 values, norm 2, seed 4: rows lr, columns norm, seeds folded */
    const char *names[] = {"lr", "norm", "seed"};
    int count[] = {3, 2, 4};
    sweep_map m;
    CHECK(sweep_map_make(&m, 3, names, count, -1, -1) == 0);
    CHECK(m.row == 0 && m.col == 1 && m.seed == 2);
    CHECK(m.rows == 3 && m.cols == 2 && m.pages == 1 && m.n_page == 0);
    long p;
    int r, c;
    sweep_map_place(&m, (int[]){2, 1, 3}, &p, &r, &c);
    CHECK(p == 0 && r == 2 && c == 1);
    sweep_map_place(&m, (int[]){2, 1, 0}, &p, &r, &c); /* another seed: the same cell */
    CHECK(p == 0 && r == 2 && c == 1);
    /* the widest axis goes to rows even when it is not first */
    const char *n2[] = {"layers", "lr", "norm"};
    int c2[] = {2, 2, 5};
    CHECK(sweep_map_make(&m, 3, n2, c2, -1, -1) == 0);
    CHECK(m.row == 2 && m.col == 0 && m.n_page == 1 && m.page_axis[0] == 1 && m.pages == 2);
    sweep_map_place(&m, (int[]){1, 1, 4}, &p, &r, &c);
    CHECK(p == 1 && r == 4 && c == 1);
}

static void test_map_pages(void)
{
    /* four axes: two paged, the first slowest */
    const char *names[] = {"a", "b", "c", "d"};
    int count[] = {2, 3, 4, 5};
    sweep_map m;
    CHECK(sweep_map_make(&m, 4, names, count, -1, -1) == 0);
    CHECK(m.row == 3 && m.col == 2 && m.n_page == 2 && m.pages == 6);
    long p;
    int r, c;
    sweep_map_place(&m, (int[]){1, 2, 0, 0}, &p, &r, &c);
    CHECK(p == 1 * 3 + 2);
    int idx[4] = {0, 0, 7, 7};
    sweep_map_page_values(&m, 5, idx);
    CHECK(idx[0] == 1 && idx[1] == 2 && idx[2] == 7 && idx[3] == 7);
    /* every run lands on a distinct (page, row, col) */
    int seen[6][5][4] = {{{0}}}, dup = 0;
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 3; b++)
            for (int cc = 0; cc < 4; cc++)
                for (int d = 0; d < 5; d++) {
                    sweep_map_place(&m, (int[]){a, b, cc, d}, &p, &r, &c);
                    dup += seen[p][r][c]++ != 0;
                }
    CHECK(dup == 0);
}

static void test_map_choose(void)
{
    const char *names[] = {"lr", "norm", "seed", "warmup"};
    int count[] = {3, 2, 3, 2};
    sweep_map m;
    CHECK(sweep_map_make(&m, 4, names, count, 3, 1) == 0); /* asked: warmup x norm */
    CHECK(m.row == 3 && m.col == 1 && m.n_page == 1 && m.page_axis[0] == 0 && m.pages == 3);
    CHECK(sweep_map_make(&m, 4, names, count, 2, 1) == -1); /* seed cannot be an axis */
    CHECK(m.row == 0 && m.col == 1);                        /* the default instead */
    CHECK(sweep_map_make(&m, 4, names, count, 1, 1) == -1);
    CHECK(sweep_map_make(&m, 4, names, count, -1, 0) == 0); /* rows chosen for columns lr */
    CHECK(m.col == 0 && m.row == 1);
    /* one axis but seed: one column; only seed: one cell */
    const char *n1[] = {"norm", "seed"};
    int c1[] = {3, 4};
    CHECK(sweep_map_make(&m, 2, n1, c1, -1, -1) == 0);
    CHECK(m.row == 0 && m.col == -1 && m.rows == 3 && m.cols == 1 && m.pages == 1);
    CHECK(sweep_map_make(&m, 1, n1 + 1, c1 + 1, -1, -1) == 0);
    CHECK(m.row == -1 && m.col == -1 && m.rows == 1 && m.cols == 1);
    long p;
    int r, c;
    sweep_map_place(&m, (int[]){2}, &p, &r, &c);
    CHECK(p == 0 && r == 0 && c == 0);
}

static char row_buf[8192];

static const char *row(const tui_grid *g, int r)
{
    tui_row_utf8(g, r, row_buf, sizeof row_buf);
    return row_buf;
}

/* The grid of the tests: lr x norm, two seeds a cell. Run k of (lr i,
 * norm j, seed s) is (i * 2 + j) * 2 + s (axes in name order). */
static const char *const SPEC = "norm=pre,post lr=1e-3,1e-2 seed=1,2";

static long run_k(int i, int j, int s) { return (i * 2 + j) * 2 + s; }

/* A results.csv row: id, lr, norm, then the result columns. */
static void make_row(char *b, size_t n, const char *status, const char *train, const char *val,
                     const char *div, const char *stalled)
{
    snprintf(b, n, "0123456789ab,1e-3,pre,1,30,%s,%s,%s,%s,0,1.5,1.2,0.40,%s\n", train, val, div,
             stalled, status);
}

static void test_row_parse(void)
{
    sweep_spec sp;
    char err[256], b[512];
    CHECK(sweep_spec_parse(SPEC, &sp, err, sizeof err) == 0);
    sweep_result r;
    make_row(b, sizeof b, "ok", "2.5", "2.75", "", "0");
    CHECK(sweep_row_parse(&sp, b, &r) == 0);
    CHECK(r.ok && !r.diverged && !r.failed && r.steps == 30 && r.train == 2.5 && r.final == 2.75);
    CHECK(r.div_step == 0 && !r.stalled);
    make_row(b, sizeof b, "ok", "3.05", "", "", "1"); /* no validation: train judges */
    CHECK(sweep_row_parse(&sp, b, &r) == 0 && r.final == 3.05 && r.stalled && isnan(r.val));
    make_row(b, sizeof b, "diverged", "nan", "", "7", "0");
    CHECK(sweep_row_parse(&sp, b, &r) == 0 && r.diverged && r.div_step == 7 && isnan(r.final));
    snprintf(b, sizeof b, "0123456789ab,1e-3,pre,1,,,,,,,,,0.1,exit 1\n");
    CHECK(sweep_row_parse(&sp, b, &r) == 0 && r.failed && !r.ok);
    /* a status not known by name (a newer version's state) ran: its numbers count */
    make_row(b, sizeof b, "s/ignal 9", "2.5", "", "", "0");
    CHECK(sweep_row_parse(&sp, b, &r) == 0 && !r.failed && !r.ok && !r.diverged);
    sweep_cell cell = {0};
    sweep_cell_add(&cell, &r);
    CHECK(cell.runs == 1 && cell.failed == 0 && cell.final.n == 1);
    CHECK(sweep_row_parse(&sp, "0123456789ab,1e-3,pre,1,30\n", &r) == -1); /* short */
    sweep_spec_free(&sp);
}

/* --loss-at: its steps parsed and spelled one way, bad ones refused in
 * one line; results.csv's loss_at_N columns found by name, read (empty:
 * NaN) and folded per cell, a run that diverged later included. */
static void test_loss_at(void)
{
    sweep_spec sp = {.n_axes = 0};
    char err[256], text[64];
    CHECK(sweep_spec_loss_at_parse(" 10, 30 ,1000000000", &sp, err, sizeof err) == 0);
    CHECK(sp.n_loss_at == 3 && sp.loss_at[0] == 10 && sp.loss_at[1] == 30 &&
          sp.loss_at[2] == 1000000000);
    sweep_spec_loss_at_text(&sp, text, sizeof text);
    CHECK(!strcmp(text, "10,30,1000000000"));
    static const char *const bad[] = {"", "0", "-5", "x", "10,", ",10", "10,10", "30,10",
                                      "1000000001", "1e3", "10 20",
                                      "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sp.n_loss_at = 5;
        int r = sweep_spec_loss_at_parse(bad[i], &sp, err, sizeof err);
        if (!t_check(r == -1 && sp.n_loss_at == 0 && !strncmp(err, "--loss-at '", 11),
                     __FILE__, __LINE__, "a bad --loss-at refused"))
            fprintf(stderr, "  '%s': %d, %s\n", bad[i], r, err);
    }
    char head[] = "id,lr,norm,seed,last_step,train_loss,val_loss,diverged_step,stalled,exploded,"
                  "ratio_first,ratio_last,wall_s,status,loss_at_10,loss_at_x,loss_at_30,layers";
    char *f[32], *g[32];
    const char *missing;
    sweep_cols c;
    int n = csv_split(head, f, 32);
    CHECK(sweep_cols_find(&c, f, n, &missing) == 0);
    CHECK(c.n_at == 2 && c.at_step[0] == 10 && c.at_step[1] == 30 && c.at_col[0] == 14 &&
          c.at_col[1] == 16);
    char diverged[] = "0123456789ab,1e-3,pre,1,40,nan,,35,0,0,1,1,,diverged,3.5,9,,2";
    char fine[] = "0123456789ab,1e-3,pre,2,60,2.5,,,0,0,1,1,,ok,4.5,9,4.25,2";
    sweep_result r;
    sweep_cell cell = {0};
    CHECK(csv_split(diverged, g, 32) == n);
    sweep_result_fields(&c, g, &r);
    CHECK(r.n_at == 2 && r.loss_at[0] == 3.5 && isnan(r.loss_at[1]));
    sweep_cell_add(&cell, &r);
    CHECK(csv_split(fine, g, 32) == n);
    sweep_result_fields(&c, g, &r);
    CHECK(r.loss_at[0] == 4.5 && r.loss_at[1] == 4.25);
    sweep_cell_add(&cell, &r);
    CHECK(cell.final.n == 1 && cell.at[0].n == 2 && sweep_stat_mean(&cell.at[0]) == 4.0);
    CHECK(cell.at[1].n == 1 && sweep_stat_mean(&cell.at[1]) == 4.25);
}

/* Numbers fit their column: fewer digits, never a wider field. */
static void test_fmt_loss(void)
{
    static const struct {
        double x;
        int width;
        const char *want;
    } cases[] = {{2.3456, 7, "2.346"},     {74.0, 7, "74.000"},  {0.1, 4, "0.10"},
                 {2794610000000.0, 7, "2.8e+12"}, {4.4e7, 7, "4.4e+07"}, {2.8e18, 5, "3e+18"},
                 {NAN, 5, "nan"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char b[64];
        sweep_fmt_loss(b, sizeof b, cases[i].x, cases[i].width);
        CHECK(!strcmp(b, cases[i].want));
    }
}

static void test_level(void)
{
    CHECK(tui_sweep_level(2.0, 2.0, 4.0) == 0);
    CHECK(tui_sweep_level(4.0, 2.0, 4.0) == SV_LEVELS - 1);
    CHECK(tui_sweep_level(3.0, 2.0, 4.0) == (SV_LEVELS - 1) / 2);
    CHECK(tui_sweep_level(9.0, 2.0, 4.0) == SV_LEVELS - 1); /* clamped */
    CHECK(tui_sweep_level(NAN, 2.0, 4.0) == -1);
    CHECK(tui_sweep_level(INFINITY, 2.0, 4.0) == -1);
    CHECK(tui_sweep_level(3.0, 3.0, 3.0) == 0); /* one cell: the scale has no width */
}

/* A view of SPEC with rows for some runs:
 *   lr=1e-3 norm=post: seeds 2.5 and 2.7 (mean 2.6, spread 0.1)
 *   lr=1e-3 norm=pre : seed 1 stalled at 3.1, seed 2 ok at 2.9
 *   lr=1e-2 norm=post: both diverged
 *   lr=1e-2 norm=pre : pending
 * (norm's values in the order given: pre is 0, post 1) */
static void view_with_rows(sweepview *v, sweep_spec *sp)
{
    char err[256], b[512];
    CHECK(sweep_spec_parse(SPEC, sp, err, sizeof err) == 0);
    CHECK(tui_sweep_init(v, sp, "/nonexistent", 0, 1) == 0);
    make_row(b, sizeof b, "ok", "2.4", "2.5", "", "0");
    tui_sweep_set_row(v, run_k(0, 1, 0), b);
    make_row(b, sizeof b, "ok", "2.6", "2.7", "", "0");
    tui_sweep_set_row(v, run_k(0, 1, 1), b);
    make_row(b, sizeof b, "ok", "3.0", "3.1", "", "1");
    tui_sweep_set_row(v, run_k(0, 0, 0), b);
    make_row(b, sizeof b, "ok", "2.8", "2.9", "", "0");
    tui_sweep_set_row(v, run_k(0, 0, 1), b);
    make_row(b, sizeof b, "diverged", "nan", "", "4", "0");
    tui_sweep_set_row(v, run_k(1, 1, 0), b);
    tui_sweep_set_row(v, run_k(1, 1, 1), b);
    tui_sweep_update(v, NULL);
}

/* An outlier (a finite blow-up to 2.8e12) is exploded: marked E, in few
 * enough digits for its cell, and off the color scale, which stays from
 * the best cell to the plateau. */
static void test_outliers(void)
{
    sweepview v;
    sweep_spec sp;
    char b[512];
    view_with_rows(&v, &sp);
    snprintf(b, sizeof b, "0123456789ab,1e-2,pre,1,30,2.8e12,2.8e12,,0,1,1.5,1.2,0.40,ok\n");
    tui_sweep_set_row(&v, run_k(1, 0, 0), b);
    make_row(b, sizeof b, "ok", "2.8", "2.9", "", "0");
    tui_sweep_set_row(&v, run_k(1, 0, 1), b);
    tui_sweep_update(&v, NULL);
    sv_cell c;
    tui_sweep_cell_of(&v, 0, 1, 0, &c); /* lr=1e-2 norm=pre */
    CHECK(c.fold.exploded == 1 && c.fold.stalled == 0);
    CHECK(fabs(v.lo - 2.6) < 1e-12 && fabs(v.hi - 3.0) < 1e-12);
    tui_style st;
    tui_sweep_cell_text(&v, &c, 13, b, sizeof b, &st);
    CHECK(!strncmp(b, "1/2 E ", 6) && strstr(b, "e+12") && strlen(b) <= 13 && st == TUI_S_BAD);
    tui_grid g = {0};
    CHECK(tui_grid_resize(&g, 24, 80) == 0);
    tui_sweep_draw(&g, &v);
    int marked = 0, legend = 0;
    for (int r = 0; r < 24; r++) {
        marked += strstr(row(&g, r), "1/2 E 1.4e+12") != NULL;
        legend += strstr(row(&g, r), "E exploded") != NULL;
    }
    CHECK(marked == 1 && legend == 1);
    tui_grid_free(&g);
    tui_sweep_free(&v);
    sweep_spec_free(&sp);
}

/* Three axes at 80 columns: the placements share a page, as blocks of
 * columns ("post 2 .. pre 6"), when they fit; else they are pages. */
static void test_groups(void)
{
    sweepview v;
    sweep_spec sp;
    char err[256], b[512];
    CHECK(sweep_spec_parse("norm=post,pre layers=2,6 lr=1e-3,1e-2,3e-2 seed=1,2", &sp, err,
                           sizeof err) == 0);
    CHECK(tui_sweep_init(&v, &sp, "/nonexistent", 0, 1) == 0);
    /* axes in name order: layers, lr, norm, seed; lr=1e-3 layers=6 norm=pre seed 1 */
    long k = ((1 * 3 + 0) * 2 + 1) * 2 + 0;
    snprintf(b, sizeof b, "0123456789ab,6,1e-3,pre,1,30,2.5,2.75,,0,0,1.5,1.2,0.40,ok\n");
    tui_sweep_set_row(&v, k, b);
    tui_sweep_update(&v, NULL);
    tui_grid g = {0};
    CHECK(tui_grid_resize(&g, 24, 80) == 0);
    tui_sweep_draw(&g, &v);
    CHECK(strstr(row(&g, 1), "rows lr  columns layers by norm") && !strstr(row(&g, 1), "page"));
    const char *h = row(&g, 2);
    CHECK(strstr(h, "post 2") && strstr(h, "post 6") && strstr(h, "pre 2") && strstr(h, "pre 6"));
    CHECK(strstr(h, "pre 6") - h == strstr(row(&g, 3), ". 1/2") - row(&g, 3)); /* under its head */
    long page;
    int r, c, idx[SWEEP_MAX_AXES];
    sweep_spec_run_index(&sp, k, idx);
    sweep_map_place(&v.map, idx, &page, &r, &c);
    CHECK(page == 0 && r == 0 && c == 3);
    sweep_map m;
    const char *names[4] = {"layers", "lr", "norm", "seed"};
    int count[4] = {2, 3, 2, 2};
    sweep_map_make(&m, 4, names, count, -1, -1);
    sweep_map_group(&m, 3); /* 4 columns do not fit 3: pages */
    CHECK(m.group < 0 && m.pages == 2 && m.cols == 2);
    sweep_map_group(&m, 4);
    CHECK(m.group == 2 && m.pages == 1 && m.cols == 4 && m.n_page == 0);
    tui_grid_free(&g);
    tui_sweep_free(&v);
    sweep_spec_free(&sp);
}

static void test_cells(void)
{
    sweepview v;
    sweep_spec sp;
    view_with_rows(&v, &sp);
    CHECK(v.map.row == 0 && v.map.col == 1 && v.map.seed == 2); /* rows lr, columns norm */
    sv_cell c;
    tui_sweep_cell_of(&v, 0, 0, 1, &c); /* lr=1e-3 norm=post */
    CHECK(c.runs == 2 && c.ended == 2 && c.fold.final.n == 2);
    CHECK(fabs(c.mean - 2.6) < 1e-12 && c.fold.final.lo == 2.5 && c.fold.final.hi == 2.7);
    CHECK(c.fold.stalled == 0 && c.fold.diverged == 0);
    tui_sweep_cell_of(&v, 0, 0, 0, &c); /* lr=1e-3 norm=pre */
    CHECK(c.fold.final.n == 2 && c.fold.stalled == 1 && fabs(c.mean - 3.0) < 1e-12);
    tui_sweep_cell_of(&v, 0, 1, 1, &c); /* lr=1e-2 norm=post */
    CHECK(c.fold.diverged == 2 && c.fold.final.n == 0);
    tui_sweep_cell_of(&v, 0, 1, 0, &c);
    CHECK(c.pending == 2 && c.ended == 0);
    /* one scale: from the lowest finished cell to the highest */
    CHECK(fabs(v.lo - 2.6) < 1e-12 && fabs(v.hi - 3.0) < 1e-12);
    char b[64];
    tui_style st;
    tui_sweep_cell_of(&v, 0, 0, 1, &c);
    tui_sweep_cell_text(&v, &c, 13, b, sizeof b, &st);
    CHECK(strcmp(b, "  2.600+-0.100") != 0); /* 14 columns do not fit 13 */
    CHECK(!strncmp(b, "  2.600+-0.10", 13) && strlen(b) <= 13);
    CHECK(st == TUI_S_HEAT0);
    tui_sweep_cell_of(&v, 0, 0, 0, &c);
    tui_sweep_cell_text(&v, &c, 13, b, sizeof b, &st);
    /* one of two seeds stalled: "1/2 S", as the figure's "1/2 stalled" */
    CHECK(!strncmp(b, "1/2 S 3.000", 11) && st == TUI_S_HEAT0 + SV_LEVELS - 1);
    tui_sweep_cell_of(&v, 0, 1, 1, &c);
    tui_sweep_cell_text(&v, &c, 13, b, sizeof b, &st);
    CHECK(!strcmp(b, "X diverged") && st == TUI_S_BAD);
    tui_sweep_cell_of(&v, 0, 1, 0, &c);
    tui_sweep_cell_text(&v, &c, 13, b, sizeof b, &st);
    CHECK(b[0] == '.' && st == TUI_S_DIM);
    tui_sweep_free(&v);
    sweep_spec_free(&sp);
}

static const char *const HEAD = "step,loss,val_loss,l0_grad_attn,l0_grad_ffn,l0_grad_ln\n";

static void test_tail(void)
{
    sv_tail t;
    tui_sweep_tail_init(&t);
    long step;
    double loss;
    CHECK(tui_sweep_tail_feed(&t, HEAD, strlen(HEAD)) == 0);
    CHECK(tui_sweep_tail_last(&t, &step, &loss) == -1);
    const char *a = "1,4.5,,0.1,0.2,0.01\n2,3.";
    CHECK(tui_sweep_tail_feed(&t, a, strlen(a)) == 1); /* row 1; row 2 waits for its end */
    CHECK(tui_sweep_tail_last(&t, &step, &loss) == 0 && step == 1 && loss == 4.5);
    CHECK(t.d.run[0].n == 1);
    CHECK(tui_sweep_tail_feed(&t, "25", 2) == 0); /* still no newline */
    CHECK(t.d.run[0].n == 1);
    CHECK(tui_sweep_tail_feed(&t, ",,0.1,0.2,0.01\n", 15) == 1);
    CHECK(tui_sweep_tail_last(&t, &step, &loss) == 0 && step == 2 && loss == 3.25); /* not 3 */
    size_t left;
    tail_partial(&t.tl, &left);
    CHECK(left == 0); /* every byte fed was a complete line */
    tui_sweep_tail_free(&t);

    /* a file that grows, then is replaced (the run's next attempt) */
    char path[] = "/tmp/ns_sweepview_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "%s1,4.5,,0.1,0.2,0.01\n2,4.", HEAD);
    fflush(f);
    tui_sweep_tail_init(&t);
    CHECK(tui_sweep_tail_poll(&t, path) == 1 && tui_sweep_tail_last(&t, &step, &loss) == 0 && step == 1);
    CHECK(tui_sweep_tail_poll(&t, path) == 0); /* nothing new */
    fprintf(f, "0,,0.1,0.2,0.01\n");
    fclose(f);
    CHECK(tui_sweep_tail_poll(&t, path) == 1 && tui_sweep_tail_last(&t, &step, &loss) == 0 && step == 2 &&
          loss == 4.0);
    f = fopen(path, "w"); /* cut short and written anew */
    fprintf(f, "%s7,2.5,,0.1,0.2,0.01\n", HEAD);
    fclose(f);
    CHECK(tui_sweep_tail_poll(&t, path) == 1 && t.d.run[0].n == 1);
    CHECK(tui_sweep_tail_last(&t, &step, &loss) == 0 && step == 7 && loss == 2.5);
    CHECK(tui_sweep_tail_poll(&t, "/tmp/ns_sweepview_missing") == 0); /* not there yet */
    tui_sweep_tail_free(&t);
    remove(path);
}

/* The scheduler's reports reach the view through the board. */
static void test_board(void)
{
    sweep_spec sp;
    char err[256], b[512];
    CHECK(sweep_spec_parse(SPEC, &sp, err, sizeof err) == 0);
    sweepview v;
    sv_board bd;
    CHECK(tui_sweep_init(&v, &sp, "/nonexistent", 0, 1) == 0);
    CHECK(tui_sweep_board_init(&bd, v.n_runs) == 0);
    make_row(b, sizeof b, "ok", "2.4", "2.5", "", "0");
    tui_sweep_set_row(&v, 0, b); /* a row from before: the board never touches run 0 */
    sweep_watch w = tui_sweep_board_watch(&bd);
    CHECK(w.stop(w.ctx) == 0);
    w.started(w.ctx, 1, 4242);
    w.started(w.ctx, 2, 4243);
    CHECK(tui_sweep_update(&v, &bd) == 1);
    CHECK(v.runs[0].phase == SV_ENDED && v.runs[1].phase == SV_RUNNING && v.runs[1].pid == 4242);
    CHECK(tui_sweep_update(&v, &bd) == 0); /* nothing new */
    w.ended(w.ctx, 1, b);
    w.ended(w.ctx, 2, NULL); /* interrupted: pending again */
    CHECK(tui_sweep_update(&v, &bd) == 1);
    CHECK(v.runs[1].phase == SV_ENDED && v.runs[1].have && v.runs[1].res.final == 2.5);
    CHECK(v.runs[2].phase == SV_PENDING && v.runs[0].phase == SV_ENDED);
    tui_sweep_board_stop(&bd);
    CHECK(w.stop(w.ctx) == 1);
    tui_sweep_board_done(&bd, 130);
    tui_sweep_update(&v, &bd);
    CHECK(v.finished && v.status == 130);
    tui_grid g = {0};
    CHECK(tui_grid_resize(&g, 24, 80) == 0);
    tui_sweep_draw(&g, &v);
    CHECK(strstr(row(&g, 0), "2/8 ended, 0 running, 0 failed  - none left to run (q") != NULL);
    tui_grid_free(&g);
    tui_sweep_board_free(&bd);
    tui_sweep_free(&v);
    sweep_spec_free(&sp);
}

/* Frames at 80x24: the map, the keys, the run view. */
static void test_frames(void)
{
    sweepview v;
    sweep_spec sp;
    tui_grid g = {0};
    view_with_rows(&v, &sp);
    CHECK(tui_grid_resize(&g, 24, 80) == 0);
    tui_sweep_draw(&g, &v);
    CHECK(strstr(row(&g, 0), "6/8 ended, 0 running, 0 failed") != NULL);
    CHECK(strstr(row(&g, 1), "rows lr") && strstr(row(&g, 1), "columns norm"));
    CHECK(strstr(row(&g, 1), "2 seeds a cell") != NULL);
    CHECK(strstr(row(&g, 2), "post") && strstr(row(&g, 2), "pre"));
    const char *r3 = row(&g, 3);
    CHECK(!strncmp(r3, "1e-3", 4) && strstr(r3, "1/2 S 3.000") && strstr(r3, "2.600+-0.10"));
    CHECK(strstr(row(&g, 4), "X diverged") != NULL);
    int legend = 0;
    for (int r = 5; r < 24; r++)
        legend += strstr(row(&g, r), "not 0.1 nats below unigram entropy") != NULL;
    CHECK(legend == 1); /* the stalled rule, stated */
    int info = 0; /* the selected cell in words */
    for (int r = 5; r < 24; r++)
        info += strstr(row(&g, r), " lr=1e-3 norm=pre: 2 runs, 2 ended (final 3.000, "
                                   "2.900..3.100), 1 stalled") != NULL;
    CHECK(info == 1);
    CHECK(strstr(row(&g, 23), "Enter") != NULL);
    /* keys: down, right; x swaps the axes and keeps the cell selected */
    CHECK(tui_sweep_key(&v, TUI_KEY_DOWN) && v.sel_r == 1);
    CHECK(tui_sweep_key(&v, TUI_KEY_DOWN) && v.sel_r == 1); /* the last row */
    CHECK(tui_sweep_key(&v, TUI_KEY_RIGHT) && v.sel_c == 1);
    CHECK(tui_sweep_key(&v, 'x') && v.map.row == 1 && v.map.col == 0 && v.sel_r == 1 && v.sel_c == 1);
    tui_sweep_draw(&g, &v);
    CHECK(strstr(row(&g, 1), "rows norm") != NULL);
    CHECK(!strncmp(row(&g, 4), "post", 4) && strstr(row(&g, 4), "X diverged"));
    CHECK(tui_sweep_key(&v, 'D') == 0 && tui_sweep_key(&v, '[') == 0); /* not ours */
    /* Enter opens the cell's run; Esc, Backspace and Enter come back */
    CHECK(tui_sweep_key(&v, '\r') && v.open && v.open_run == run_k(1, 1, 0));
    tui_sweep_draw(&g, &v);
    CHECK(strstr(row(&g, 0), "lr=1e-2 norm=post seed=1") != NULL);
    CHECK(strstr(row(&g, 1), "DIVERGED at step 4") != NULL);
    CHECK(tui_sweep_key(&v, TUI_KEY_TAB) && v.open_run == run_k(1, 1, 1));
    CHECK(tui_sweep_key(&v, TUI_KEY_ESC) && !v.open);
    CHECK(tui_sweep_key(&v, '\r') && v.open && tui_sweep_key(&v, SV_KEY_BACKSPACE) && !v.open);
    CHECK(tui_sweep_key(&v, '\r') && tui_sweep_key(&v, '\r') && !v.open);
    CHECK(tui_sweep_key(&v, '?') && v.help);
    tui_sweep_draw(&g, &v);
    int help = 0;
    for (int r = 0; r < 24; r++)
        help += strstr(row(&g, r), "swap the rows' and the columns' axes") != NULL;
    CHECK(help == 1);
    CHECK(tui_sweep_key(&v, 'x') && !v.help && v.map.row == 1); /* closing the help did nothing else */
    CHECK(tui_sweep_key(&v, 'q') && v.quit);
    tui_grid_free(&g);
    tui_sweep_free(&v);
    sweep_spec_free(&sp);
}

/* A grid larger than the screen: pages and scrolling keep the selection
 * in view at 80x24. */
static void test_small_screen(void)
{
    sweep_spec sp;
    char err[256];
    CHECK(sweep_spec_parse("lr=1..30 layers=1..9 warmup=0,1", &sp, err, sizeof err) == 0);
    sweepview v;
    tui_grid g = {0};
    CHECK(tui_sweep_init(&v, &sp, "d", 0, 0) == 0);
    CHECK(tui_grid_resize(&g, 24, 80) == 0);
    CHECK(v.map.rows == 30 && v.map.cols == 9 && v.map.pages == 2);
    for (int i = 0; i < 29; i++)
        tui_sweep_key(&v, TUI_KEY_DOWN);
    for (int i = 0; i < 8; i++)
        tui_sweep_key(&v, TUI_KEY_RIGHT);
    tui_sweep_draw(&g, &v);
    CHECK(v.vis_rows < 30 && v.vis_cols < 9);
    int seen = 0;
    for (int r = 3; r < 24; r++)
        seen += !strncmp(row(&g, r), "30 ", 3);
    CHECK(seen == 1);                           /* the last row is on screen */
    CHECK(strstr(row(&g, 2), "9 ") != NULL);    /* and the last column */
    CHECK(strstr(row(&g, 1), "page 1/2: warmup=0") != NULL);
    CHECK(tui_sweep_key(&v, TUI_KEY_PGDN) && v.page == 1);
    tui_sweep_draw(&g, &v);
    CHECK(strstr(row(&g, 1), "page 2/2: warmup=1") != NULL);
    CHECK(tui_sweep_key(&v, TUI_KEY_PGDN) && v.page == 0); /* wraps */
    /* r: the next axis for rows (warmup; lr is paged now), the selected
     * run's cell kept: lr=30 (index 29) layers=9 (index 8) warmup=0 */
    CHECK(v.sel_r == 29 && v.sel_c == 8 && v.page == 0);
    CHECK(tui_sweep_key(&v, 'r') && v.map.row == 2 && v.map.col == 0 && v.map.pages == 30);
    CHECK(v.page == 29 && v.sel_r == 0 && v.sel_c == 8);
    CHECK(tui_sweep_key(&v, 'c') && v.map.col == 1 && v.map.pages == 9); /* columns lr, layers paged */
    CHECK(v.page == 8 && v.sel_r == 0 && v.sel_c == 29);
    tui_sweep_draw(&g, &v);
    CHECK(strstr(row(&g, 1), "rows warmup  columns lr") && strstr(row(&g, 1), "page 9/9: layers=9"));
    tui_grid_free(&g);
    tui_sweep_free(&v);
    sweep_spec_free(&sp);
}

/* The run view from a real CSV: the state, the chart, the heatmap, the
 * last step's layer profile. */
static void test_run_view(void)
{
    char dir[] = "/tmp/ns_sweepview_dir_XXXXXX", path[4400], err[256], b[512];
    CHECK(mkdtemp(dir) != NULL);
    sweep_spec sp;
    CHECK(sweep_spec_parse(SPEC, &sp, err, sizeof err) == 0);
    sweepview v;
    CHECK(tui_sweep_init(&v, &sp, dir, 0, 1) == 0);
    long k = run_k(0, 0, 0); /* lr=1e-3 norm=pre seed=1: the first cell */
    sweep_spec_run_csv(&sp, dir, k, path, sizeof path);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fprintf(f, "step,loss,val_loss,l0_grad_attn,l0_grad_ffn,l0_grad_ln,l1_grad_attn,l1_grad_ffn,"
               "l1_grad_ln\n");
    for (int i = 1; i <= 5; i++)
        fprintf(f, "%d,%g,%s,0,0,2,0.3,0.4,0\n", i, 5.0 - 0.5 * i, i == 5 ? "2.6" : "");
    fclose(f);
    make_row(b, sizeof b, "ok", "2.5", "2.6", "", "0");
    tui_sweep_set_row(&v, k, b);
    tui_sweep_update(&v, NULL);
    tui_grid g = {0};
    CHECK(tui_grid_resize(&g, 24, 80) == 0);
    CHECK(tui_sweep_key(&v, '\r') && v.open && v.open_run == k);
    CHECK(v.snap->s.hist_total == 5 && v.snap->s.n_layer == 2);
    tui_sweep_draw(&g, &v);
    CHECK(strstr(row(&g, 0), "lr=1e-3 norm=pre seed=1") != NULL);
    CHECK(strstr(row(&g, 1), "ended at step 30: final loss 2.6000") != NULL);
    int chart = 0, heat = 0;
    for (int r = 2; r < 22; r++) {
        chart += strstr(row(&g, r), "loss [linear]") != NULL;
        heat += strstr(row(&g, r), "gradient norm per layer over time") != NULL;
    }
    CHECK(chart == 1 && heat == 1);
    CHECK(strstr(row(&g, 22), "step 5, top first:  1:0.5  0:2") != NULL);
    tui_grid_free(&g);
    tui_sweep_free(&v);
    sweep_spec_free(&sp);
    remove(path);
    rmdir(dir);
}

/* A sweep lesson's lines under the cells: those whose count of ended
 * runs is reached, the latest first and of equals the question first,
 * then its text; a line not reached yet is not shown. */
static void test_lesson_lines(void)
{
    sweepview v;
    sweep_spec sp;
    view_with_rows(&v, &sp); /* 6 of 8 ended */
    ns_lesson l;
    char err[256];
    CHECK(lesson_parse("title: t\nsweep: lr=1e-3\ntext: the text\nat 0: pause first question\n"
                       "at 6: note six are in\nat 6: pause second question\nat 8: note all are in\n",
                       "x.lesson", &l, err, sizeof err) == 0);
    v.lesson_lines = &l.script;
    v.ui.lesson_title = "the title";
    v.ui.lesson_text = l.text;
    tui_grid g = {0};
    CHECK(tui_grid_resize(&g, 24, 80) == 0);
    tui_sweep_draw(&g, &v);
    int q6 = -1, n6 = -1, q0 = -1, text = -1, n8 = 0;
    for (int r = 0; r < 24; r++) {
        const char *t = row(&g, r);
        q6 = strstr(t, " 6 of 8 ended: second question") ? r : q6;
        n6 = strstr(t, " 6 of 8 ended: six are in") ? r : n6;
        q0 = strstr(t, " at the start: first question") ? r : q0;
        text = strstr(t, " the text") ? r : text;
        n8 += strstr(t, "all are in") != NULL;
    }
    CHECK(q6 > 0 && n6 == q6 + 1 && q0 == n6 + 1 && text == q0 + 1 && n8 == 0);
    tui_grid_free(&g);
    lesson_free(&l);
    tui_sweep_free(&v);
    sweep_spec_free(&sp);
}

int main(void)
{
    test_map_default();
    test_map_pages();
    test_map_choose();
    test_row_parse();
    test_loss_at();
    test_fmt_loss();
    test_level();
    test_cells();
    test_outliers();
    test_groups();
    test_tail();
    test_board();
    test_frames();
    test_small_screen();
    test_run_view();
    test_lesson_lines();
    return test_summary();
}
