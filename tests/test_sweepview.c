/* test_sweepview.c - the live view of a sweep without a terminal: the
 * map's layout (axes to rows, columns and pages; seeds folded), the cells
 * (mean and spread over seeds, diverged and stalled marks), the color
 * scale, the reading of a growing CSV (complete lines only), and frames
 * drawn into the cell grid compared as strings.
 * Not here: the real sweep in a terminal (tui_sweep.sh). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

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

int main(void)
{
    test_map_default();
    test_map_pages();
    test_map_choose();
    return test_summary();
}
