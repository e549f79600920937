/* sweep_map.c - a sweep's map layout (sweep_map.h): the default rows and
 * columns, a run's place, a page's values.
 *
 * Not here: the runs (sweep.c), drawing (tui_sweep.c, plot.c).
 */
#include "sweep_map.h"

#include <string.h>

/* The axis, not seed and not `not`, with the most values (the first of
 * equals), or -1. */
static int widest_axis(const sweep_map *m, int not)
{
    int best = -1;
    for (int i = 0; i < m->n_axes; i++)
        if (i != m->seed && i != not && (best < 0 || m->count[i] > m->count[best]))
            best = i;
    return best;
}

static int axis_ok(const sweep_map *m, int a)
{
    return a >= 0 && a < m->n_axes && a != m->seed;
}

int sweep_map_make(sweep_map *m, int n_axes, const char *const *names, const int *count,
                   int row, int col)
{
    memset(m, 0, sizeof *m);
    m->n_axes = n_axes < 0 ? 0 : n_axes > SWEEP_MAX_AXES ? SWEEP_MAX_AXES : n_axes;
    m->seed = -1;
    m->group = -1;
    for (int i = 0; i < m->n_axes; i++) {
        m->count[i] = count[i] > 0 ? count[i] : 1;
        if (!strcmp(names[i], "seed"))
            m->seed = i;
    }
    int asked = row >= 0 || col >= 0;
    int bad = (row >= 0 && !axis_ok(m, row)) || (col >= 0 && !axis_ok(m, col)) ||
              (row >= 0 && row == col);
    if (bad || !asked) {
        row = widest_axis(m, -1);
        col = widest_axis(m, row);
    } else if (row < 0) {
        row = widest_axis(m, col);
    } else if (col < 0) {
        col = widest_axis(m, row);
    }
    m->row = row;
    m->col = col;
    m->rows = row >= 0 ? m->count[row] : 1;
    m->cols = col >= 0 ? m->count[col] : 1;
    m->pages = 1;
    for (int i = 0; i < m->n_axes; i++)
        if (i != m->seed && i != row && i != col) {
            m->page_axis[m->n_page++] = i;
            m->pages *= m->count[i];
        }
    return bad ? -1 : 0;
}

void sweep_map_group(sweep_map *m, int max_cols)
{
    int best = -1, at = -1;
    for (int j = 0; j < m->n_page; j++)
        if (best < 0 || m->count[m->page_axis[j]] < m->count[best]) {
            best = m->page_axis[j];
            at = j;
        }
    if (m->col < 0 || best < 0 || m->group >= 0 || (long)m->cols * m->count[best] > max_cols)
        return;
    m->group = best;
    m->cols *= m->count[best];
    m->pages /= m->count[best];
    for (int j = at; j + 1 < m->n_page; j++)
        m->page_axis[j] = m->page_axis[j + 1];
    m->n_page--;
}

int sweep_map_col_value(const sweep_map *m, int c)
{
    return m->group >= 0 ? c % m->count[m->col] : c;
}

void sweep_map_place(const sweep_map *m, const int *idx, long *page, int *r, int *c)
{
    long p = 0;
    for (int j = 0; j < m->n_page; j++)
        p = p * m->count[m->page_axis[j]] + idx[m->page_axis[j]];
    *page = p;
    *r = m->row >= 0 ? idx[m->row] : 0;
    *c = m->col >= 0 ? idx[m->col] : 0;
    if (m->group >= 0)
        *c += idx[m->group] * m->count[m->col];
}

void sweep_map_page_values(const sweep_map *m, long p, int *idx)
{
    for (int j = m->n_page - 1; j >= 0; j--) {
        int a = m->page_axis[j];
        idx[a] = (int)(p % m->count[a]);
        p /= m->count[a];
    }
}

