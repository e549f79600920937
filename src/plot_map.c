/* plot_map.c - the grid a --kind map figure is drawn from: a sweep's
 * DIR/results.csv read line by line into its axes (the columns between
 * "id" and "seed"), each axis's values in order (numbers as numbers), and
 * one cell per combination of values with the seeds folded: the mean and
 * the half range of the runs' final validation loss (the train loss where
 * a run has none), and how many of its runs diverged, stalled or failed.
 *
 * The columns are those sweep.c writes; a row with another number of
 * fields is skipped and counted, never fatal. What the file cannot give
 * (no header, a missing column, too many values to draw) is kept as one
 * line for plot_map_finish to report.
 *
 * Not here: drawing (plot.c), writing the file (sweep.c).
 */
#include "plot.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Result columns a map needs, as sweep.c names them. */
static const char *const need[] = {"seed", "train_loss", "val_loss", "diverged_step", "stalled",
                                   "status"};
enum { N_NEED = sizeof need / sizeof need[0], F_SEED = 0, F_TRAIN, F_VAL, F_DIV, F_STALLED,
       F_STATUS };

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

/* Split a line at commas in place; at most max fields. */
static int split(char *p, char **f, int max)
{
    int n = 0;
    for (;;) {
        if (n == max)
            return max + 1;
        f[n++] = p;
        char *c = strchr(p, ',');
        if (!c)
            return n;
        *c = 0;
        p = c + 1;
    }
}

/* The header: axes from column 1 up to "seed", then the result columns. */
static void map_header(plot_map *m, char **f, int n)
{
    m->ncol = n;
    for (int k = 0; k < N_NEED; k++)
        m->col[k] = -1;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < N_NEED; k++)
            if (!strcmp(f[i], need[k]) && m->col[k] < 0)
                m->col[k] = i;
    if (strcmp(f[0], "id") || m->col[F_SEED] < 1) {
        map_fail(m, "not a sweep's results.csv (expected a header id,AXES...,seed,...)");
        return;
    }
    for (int k = 0; k < N_NEED; k++)
        if (m->col[k] < 0) {
            map_fail(m, "no '%s' column: not a sweep's results.csv", need[k]);
            return;
        }
    m->n_axes = m->col[F_SEED] - 1;
    if (m->n_axes > PLOT_MAP_AXES) {
        map_fail(m, "%d axes: a map draws at most %d", m->n_axes, PLOT_MAP_AXES);
        return;
    }
    for (int a = 0; a < m->n_axes; a++)
        snprintf(m->axis[a].name, sizeof m->axis[a].name, "%s", f[1 + a]);
    m->have_header = 1;
}

/* The index of value v on axis a, added when new; -1 when too many. */
static int value_id(plot_map *m, int a, const char *v)
{
    plot_map_axis *x = &m->axis[a];
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

static double num_or_nan(const char *s)
{
    char *end;
    if (!*s)
        return NAN;
    double x = strtod(s, &end);
    return end == s || *end ? NAN : x;
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
        if ((r->idx[a] = value_id(m, a, f[1 + a])) < 0)
            return 0;
    double val = num_or_nan(f[m->col[F_VAL]]);
    r->val_missing = !*f[m->col[F_VAL]];
    r->loss = r->val_missing ? num_or_nan(f[m->col[F_TRAIN]]) : val;
    r->diverged = !strcmp(f[m->col[F_STATUS]], "diverged");
    r->failed = !r->diverged && strcmp(f[m->col[F_STATUS]], "ok") != 0;
    r->stalled = !strcmp(f[m->col[F_STALLED]], "1");
    r->div_step = strtol(f[m->col[F_DIV]], NULL, 10);
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
    int n = split(buf, f, (int)(sizeof f / sizeof f[0]));
    if (!m->have_header) {
        if (n > (int)(sizeof f / sizeof f[0]))
            map_fail(m, "a header of more than %d columns: not a sweep's results.csv",
                     (int)(sizeof f / sizeof f[0]));
        else
            map_header(m, f, n);
        return 0;
    }
    if (n != m->ncol) {
        m->skipped++;
        return 0;
    }
    if (map_row(m, f)) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

/* Numbers compare as numbers, anything else as text (as the sweep's table). */
static int cmp_value(const void *x, const void *y)
{
    const char *a = x, *b = y;
    char *ea, *eb;
    double p = strtod(a, &ea), q = strtod(b, &eb);
    if (ea != a && !*ea && eb != b && !*eb && p != q)
        return p < q ? -1 : 1;
    return strcmp(a, b);
}

/* Sort each axis's values; the rows' indices follow. */
static void sort_axes(plot_map *m)
{
    for (int a = 0; a < m->n_axes; a++) {
        plot_map_axis *x = &m->axis[a];
        char old[PLOT_MAP_VALUES][PLOT_MAP_VALLEN];
        int to[PLOT_MAP_VALUES];
        memcpy(old, x->val, sizeof old);
        qsort(x->val, (size_t)x->n, sizeof x->val[0], cmp_value);
        for (int i = 0; i < x->n; i++)
            for (int j = 0; j < x->n; j++)
                if (!strcmp(old[i], x->val[j]))
                    to[i] = j;
        for (long r = 0; r < m->nrows; r++)
            m->row[r].idx[a] = to[m->row[r].idx[a]];
    }
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
        plot_map_cell *c = &m->cell[plot_map_cell_of(m, w->idx)];
        c->runs++;
        c->diverged += w->diverged;
        c->stalled += w->stalled;
        c->failed += w->failed;
        m->val_missing |= w->val_missing && isfinite(w->loss);
        if (w->diverged && (!c->div_step || (w->div_step > 0 && w->div_step < c->div_step)))
            c->div_step = w->div_step;
        if (!isfinite(w->loss))
            continue;
        c->lo = c->n && c->lo < w->loss ? c->lo : w->loss;
        c->hi = c->n && c->hi > w->loss ? c->hi : w->loss;
        c->sum += w->loss;
        c->n++;
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
