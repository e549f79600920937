/* plot_map.c - the grid a --kind map figure is drawn from: a sweep's
 * DIR/results.csv read line by line into its axes (the columns between
 * "id" and "seed"), each axis's values in order (numbers as numbers), and
 * one cell per combination of values with the seeds folded: the count,
 * mean, sd and spread of the runs' final validation loss (the train loss
 * where a run has none; sweep_stat), and how many of its runs diverged, stalled or failed;
 * or, with the seed made one more axis (plot_map_with_seeds), one run per
 * cell.
 *
 * The columns are found by name and a row read and folded as the sweep's
 * own table does it (sweep.h); a row with another number of fields is
 * skipped and counted, never fatal. What the file cannot give
 * (no header, a missing column, too many values to draw) is kept as one
 * line for plot_map_finish to report.
 *
 * Not here: drawing (plot.c), writing the file (sweep_results.c).
 */
#include "plot.h"

#include "csv.h"
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void plot_map_init(plot_map *m) { memset(m, 0, sizeof *m); }

void plot_map_free(plot_map *m)
{
    free(m->row);
    free(m->cell);
    memset(m, 0, sizeof *m);
}

static void map_fail(plot_map *m, const char *fmt, ...)
{
    if (m->bad[0])
        return; /* the first problem is the one reported */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->bad, sizeof m->bad, fmt, ap);
    va_end(ap);
}

/* The header: axes from column 1 up to "seed", then the result columns
 * (found by name: sweep.h). */
static void map_header(plot_map *m, char **f, int n)
{
    const char *missing;
    if (sweep_cols_find(&m->cols, f, n, &missing) != 0) {
        if (!strcmp(missing, "id") || !strcmp(missing, "seed"))
            map_fail(m, "not a sweep's results.csv (expected a header id,AXES...,seed,...)");
        else
            map_fail(m, "no '%s' column: not a sweep's results.csv", missing);
        return;
    }
    m->n_axes = m->cols.n_axes;
    if (m->n_axes > PLOT_MAP_AXES) {
        map_fail(m, "%d axes: a map draws at most %d", m->n_axes, PLOT_MAP_AXES);
        return;
    }
    for (int a = 0; a < m->n_axes; a++)
        snprintf(m->axis[a].name, sizeof m->axis[a].name, "%s", f[1 + a]);
    snprintf(m->seed.name, sizeof m->seed.name, "seed");
    m->have_header = 1;
}

/* The index of value v on axis x, added when new; -1 when too many. */
static int value_id(plot_map *m, plot_map_axis *x, const char *v)
{
    for (int i = 0; i < x->n; i++)
        if (!strcmp(x->val[i], v))
            return i;
    if (x->n == PLOT_MAP_VALUES) {
        map_fail(m, "axis %s has more than %d values: too many to draw", x->name,
                 PLOT_MAP_VALUES);
        return -1;
    }
    snprintf(x->val[x->n], sizeof x->val[0], "%s", v);
    return x->n++;
}

static int map_row(plot_map *m, char **f)
{
    if (m->nrows == m->caprows) {
        long cap = m->caprows ? m->caprows * 2 : 64;
        plot_map_row *g = realloc(m->row, (size_t)cap * sizeof *g);
        if (!g)
            return -1;
        m->row = g;
        m->caprows = cap;
    }
    plot_map_row *r = &m->row[m->nrows];
    for (int a = 0; a < m->n_axes; a++)
        if ((r->idx[a] = value_id(m, &m->axis[a], f[1 + a])) < 0)
            return 0;
    if ((r->seed = value_id(m, &m->seed, f[m->cols.col[SWEEP_COL_SEED]])) < 0)
        return 0;
    sweep_result_fields(&m->cols, f, &r->res);
    m->nrows++;
    return 0;
}

int plot_map_line(plot_map *m, const char *line, size_t len, char *err, size_t errlen)
{
    char buf[4096], *f[PLOT_MAP_AXES + 64];
    while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
        len--;
    if (len == 0 || m->bad[0])
        return 0;
    if (len >= sizeof buf) {
        m->skipped++;
        return 0;
    }
    memcpy(buf, line, len);
    buf[len] = 0;
    int n = csv_split(buf, f, (int)(sizeof f / sizeof f[0]));
    if (!m->have_header) {
        if (n > (int)(sizeof f / sizeof f[0]))
            map_fail(m, "a header of more than %d columns: not a sweep's results.csv",
                     (int)(sizeof f / sizeof f[0]));
        else
            map_header(m, f, n);
        return 0;
    }
    if (n != m->cols.n) {
        m->skipped++;
        return 0;
    }
    if (map_row(m, f)) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

static int cmp_value(const void *x, const void *y) { return sweep_value_cmp(x, y); }

/* Sort axis x's values (a: its index in a row's idx, -1 for the seed);
 * the rows' indices follow. */
static void sort_axis(plot_map *m, plot_map_axis *x, int a)
{
    char old[PLOT_MAP_VALUES][PLOT_MAP_VALLEN];
    int to[PLOT_MAP_VALUES];
    memcpy(old, x->val, sizeof old);
    qsort(x->val, (size_t)x->n, sizeof x->val[0], cmp_value);
    for (int i = 0; i < x->n; i++)
        for (int j = 0; j < x->n; j++)
            if (!strcmp(old[i], x->val[j]))
                to[i] = j;
    for (long r = 0; r < m->nrows; r++) {
        int *i = a < 0 ? &m->row[r].seed : &m->row[r].idx[a];
        *i = to[*i];
    }
}

static void sort_axes(plot_map *m)
{
    for (int a = 0; a < m->n_axes; a++)
        sort_axis(m, &m->axis[a], a);
    sort_axis(m, &m->seed, -1);
}

long plot_map_cell_of(const plot_map *m, const int *idx)
{
    long c = 0;
    for (int a = 0; a < m->n_axes; a++)
        c = c * m->axis[a].n + idx[a];
    return c;
}

/* Fold the rows (the seeds) into one cell per combination of values. */
static int fold(plot_map *m)
{
    m->ncells = 1;
    for (int a = 0; a < m->n_axes; a++) {
        m->ncells *= m->axis[a].n;
        if (m->ncells > PLOT_MAP_CELLS) {
            map_fail(m, "more than %d cells: too many to draw (a smaller grid, or fewer axes)",
                     PLOT_MAP_CELLS);
            return 0;
        }
    }
    m->cell = calloc((size_t)m->ncells, sizeof *m->cell);
    if (!m->cell)
        return -1;
    for (long r = 0; r < m->nrows; r++) {
        const plot_map_row *w = &m->row[r];
        sweep_cell_add(&m->cell[plot_map_cell_of(m, w->idx)], &w->res);
        m->val_missing |= isnan(w->res.val) && isfinite(w->res.final);
    }
    for (long i = 0; i < m->ncells; i++)
        m->seeds = m->cell[i].runs > m->seeds ? m->cell[i].runs : m->seeds;
    return 0;
}

int plot_map_finish(plot_map *m, char *err, size_t errlen)
{
    if (!m->bad[0] && !m->have_header)
        map_fail(m, "no rows: expected a sweep's results.csv (normscope --sweep ... --sweep-out DIR)");
    if (!m->bad[0] && m->nrows == 0)
        map_fail(m, "no rows: the sweep has no finished run yet");
    if (!m->bad[0]) {
        sort_axes(m);
        if (fold(m)) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    }
    if (m->bad[0]) {
        snprintf(err, errlen, "%s", m->bad);
        return -1;
    }
    return 0;
}

int plot_map_with_seeds(const plot_map *m, plot_map *dst, char *err, size_t errlen)
{
    plot_map_init(dst);
    if (m->seed.n < 2) {
        snprintf(err, errlen, "the sweep ran one seed: nothing to draw as an axis");
        return -1;
    }
    if (m->n_axes == PLOT_MAP_AXES) {
        snprintf(err, errlen, "%d axes already, the most a map draws", m->n_axes);
        return -1;
    }
    *dst = *m;
    dst->row = malloc((size_t)(m->nrows ? m->nrows : 1) * sizeof *dst->row);
    dst->cell = NULL;
    dst->caprows = m->nrows;
    dst->seeds = 0;
    dst->seed_drawn = 1;
    dst->axis[dst->n_axes++] = m->seed;
    int rc = dst->row ? 0 : -1;
    for (long r = 0; !rc && r < m->nrows; r++) {
        dst->row[r] = m->row[r];
        dst->row[r].idx[m->n_axes] = m->row[r].seed;
    }
    if (!rc)
        rc = fold(dst);
    if (rc || dst->bad[0]) {
        snprintf(err, errlen, "%s", rc ? "out of memory" : dst->bad);
        plot_map_free(dst);
        return -1;
    }
    return 0;
}

/* sweep.spec's "arg:" lines (the flags common to every run), if DIR has it. */
static void read_common(plot_map *m, const char *dir)
{
    char path[4300], line[1024];
    snprintf(path, sizeof path, "%s/sweep.spec", dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    size_t k = 0;
    while (fgets(line, sizeof line, f) && k < sizeof m->common) {
        line[strcspn(line, "\r\n")] = 0;
        if (!strncmp(line, "arg: ", 5))
            k += (size_t)snprintf(m->common + k, sizeof m->common - k, "%s%s", k ? " " : "",
                                  line + 5);
    }
    fclose(f);
}

static int map_line(void *m, const char *line, size_t len, char *err, size_t errlen)
{
    return plot_map_line(m, line, len, err, errlen);
}

int plot_map_read(plot_map *m, const char *input, char *err, size_t errlen)
{
    char path[4200], dir[4200];
    struct stat st;
    int is_dir = stat(input, &st) == 0 && S_ISDIR(st.st_mode);
    snprintf(path, sizeof path, is_dir ? "%s/results.csv" : "%s", input);
    snprintf(dir, sizeof dir, "%s", is_dir ? input : path);
    if (!is_dir) { /* the directory the file is in */
        char *slash = strrchr(dir, '/');
        if (!slash)
            snprintf(dir, sizeof dir, ".");
        else
            slash[slash == dir] = 0;
    }
    int rc = plot_read_lines(path, map_line, m, err, errlen);
    if (rc == 0 && strcmp(input, "-")) /* standard input has no directory */
        read_common(m, dir);
    return rc ? rc : plot_map_finish(m, err, errlen);
}
