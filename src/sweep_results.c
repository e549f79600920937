/* sweep_results.c - what a sweep knows of its runs: a run's CSV
 * summarized (the mean of its last steps' losses, where it diverged, its
 * gradient ratios), the rows of DIR/results.csv written and read back by
 * their columns' names, the seeds of a cell folded, and the text table.
 *
 * One function makes a run's row from its CSV, whether the run was started
 * by this sweep or by another scheduler (--list), so the two agree.
 * Not here: the SPEC (sweep_spec.c), running the grid (sweep_run.c), the
 * figures (plot_map.c and plot.c read results.csv through sweep.h).
 */
#define _GNU_SOURCE /* getline */
#include "sweep_int.h"

#include "csv.h"
#include "diagnose.h"

#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- a run's CSV, summarized ------------------------------------------- */

/* Column positions in a run's CSV header (metrics.c). */
typedef struct {
    int step, loss, val, gnorm, skipped, state, n; /* state: -1 in older CSVs */
    int g0[3], gtop[3]; /* grad_attn, grad_ffn, grad_ln of layer 0 and L-1 */
} step_cols;

/* The columns of a run's CSV header line (split in place); returns the
 * fields array for its rows (h->n long, the caller frees it), or NULL
 * when a column is missing or out of memory. */
static char **step_header(char *line, step_cols *h)
{
    static const char *const g[3] = {"grad_attn", "grad_ffn", "grad_ln"};
    int top = -1, max = 1;
    for (const char *p = line; *p; p++)
        max += *p == ',';
    char **f = malloc((size_t)max * sizeof *f);
    if (!f)
        return NULL;
    memset(h, -1, sizeof *h);
    h->n = csv_split(line, f, max);
    h->step = csv_find(f, h->n, "step");
    h->loss = csv_find(f, h->n, "loss");
    h->val = csv_find(f, h->n, "val_loss");
    h->gnorm = csv_find(f, h->n, "grad_norm");
    h->skipped = csv_find(f, h->n, "skipped");
    h->state = csv_find(f, h->n, "state");
    for (int i = 0; i < h->n; i++) {
        int layer, off;
        if (sscanf(f[i], "l%d_%n", &layer, &off) == 1 && off > 0)
            for (int j = 0; j < 3; j++)
                if (!strcmp(f[i] + off, g[j])) {
                    if (layer == 0)
                        h->g0[j] = i;
                    if (layer >= top) {
                        top = layer;
                        h->gtop[j] = i;
                    }
                }
    }
    int ok = h->step >= 0 && h->loss >= 0 && h->val >= 0 && h->gnorm >= 0 && h->skipped >= 0;
    for (int j = 0; j < 3; j++)
        ok &= h->g0[j] >= 0 && h->gtop[j] >= 0;
    if (!ok) {
        free(f);
        return NULL;
    }
    return f;
}

static double grad_ratio(char **fl, const step_cols *h)
{
    double a = 0, b = 0;
    for (int j = 0; j < 3; j++) {
        double x = csv_num(fl[h->g0[j]]), y = csv_num(fl[h->gtop[j]]);
        a += x * x;
        b += y * y;
    }
    return sqrt(a) / sqrt(b);
}

/* Fold one CSV row into the summary. loss ring: the last K train losses
 * with their steps; vals likewise for the validation losses. */
typedef struct {
    double loss[SWEEP_LAST_K], val[SWEEP_LAST_K];
    long val_step[SWEEP_LAST_K];
    long rows, vals;
} summary_acc;

static void summary_row(sweep_summary *s, summary_acc *acc, char **fl, const step_cols *h)
{
    long step = strtol(fl[h->step], NULL, 10);
    double loss = csv_num(fl[h->loss]), gn = csv_num(fl[h->gnorm]);
    int skipped = atoi(fl[h->skipped]);
    if (acc->rows == 0) {
        s->first_step = step;
        s->first_loss = loss;
        s->ratio_first = grad_ratio(fl, h);
    }
    s->last_step = step;
    s->ratio_last = grad_ratio(fl, h);
    if (!s->div_step && (!isfinite(loss) || (!isfinite(gn) && !skipped)))
        s->div_step = step;
    s->blown_step = h->state >= 0 && !strcmp(fl[h->state], "exploded") ? step : 0;
    acc->loss[acc->rows++ % SWEEP_LAST_K] = loss;
    if (*fl[h->val]) {
        acc->val[acc->vals % SWEEP_LAST_K] = csv_num(fl[h->val]);
        acc->val_step[acc->vals++ % SWEEP_LAST_K] = step;
    }
}

/* train: the mean of the last K losses. val: the mean of the validation
 * losses measured in the last K steps, or the last one measured when none
 * was (validation is every --val-every steps). */
static void summary_finish(sweep_summary *s, const summary_acc *acc)
{
    long n = acc->rows < SWEEP_LAST_K ? acc->rows : SWEEP_LAST_K;
    double sum = 0;
    for (long i = 0; i < n; i++)
        sum += acc->loss[i];
    s->train = n ? sum / n : NAN;
    long nv = acc->vals < SWEEP_LAST_K ? acc->vals : SWEEP_LAST_K, used = 0;
    sum = 0;
    for (long i = 0; i < nv; i++)
        if (acc->val_step[i] > s->last_step - SWEEP_LAST_K) {
            sum += acc->val[i];
            used++;
        }
    s->has_val = acc->vals > 0;
    s->val = used ? sum / used : s->has_val ? acc->val[(acc->vals - 1) % SWEEP_LAST_K] : NAN;
}

int sweep_summary_read(const char *path, sweep_summary *s)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char *line = NULL, **fl = NULL;
    size_t cap = 0;
    step_cols h;
    summary_acc acc;
    memset(s, 0, sizeof *s);
    memset(&acc, 0, sizeof acc);
    int ok = getline(&line, &cap, f) > 0 && (fl = step_header(line, &h)) != NULL;
    while (ok && getline(&line, &cap, f) > 0)
        if (csv_split(line, fl, h.n) == h.n)
            summary_row(s, &acc, fl, &h);
    fclose(f);
    free(line);
    free(fl);
    if (!ok || acc.rows == 0)
        return -1;
    summary_finish(s, &acc);
    return 0;
}


const char *sweep_summary_status(const sweep_summary *s, long steps)
{
    if (s->div_step)
        return "diverged";
    /* a run stopped at its finite blow-up ran what it could: its row says
     * exploded (sweep_results_row) */
    return s->last_step >= steps || s->blown_step ? "ok" : NULL;
}

/* ---- DIR/results.csv ----------------------------------------------------- */

/* The result columns, in the order written (SWEEP_COL_*). */
static const char *const result_names[SWEEP_COLS] = {
    "seed", "steps", "train_loss", "val_loss", "diverged_step", "stalled", "exploded",
    "ratio_first", "ratio_last", "wall_s", "status"};

static int is_seed_axis(const sweep_axis *a) { return !strcmp(a->name, "seed"); }

void sweep_results_header(const sweep_spec *s, char *buf, size_t n)
{
    size_t k = (size_t)snprintf(buf, n, "id");
    for (int i = 0; i < s->n_axes && k < n; i++)
        if (!is_seed_axis(&s->axis[i]))
            k += (size_t)snprintf(buf + k, n - k, ",%s", s->axis[i].name);
    for (int j = 0; j < SWEEP_COLS && k < n; j++)
        k += (size_t)snprintf(buf + k, n - k, ",%s", result_names[j]);
    if (k < n)
        snprintf(buf + k, n - k, "\n");
}

static void fmt_num(char *buf, size_t n, double x)
{
    if (isnan(x))
        snprintf(buf, n, "nan");
    else if (isinf(x))
        snprintf(buf, n, x > 0 ? "inf" : "-inf");
    else
        snprintf(buf, n, "%.6g", x);
}

void sweep_fmt_loss(char *buf, size_t n, double x, int width)
{
    if (!isfinite(x)) {
        fmt_num(buf, n, x);
        return;
    }
    snprintf(buf, n, "%.3f", x);
    for (int d = 2; d >= 1 && (int)strlen(buf) > width; d--) /* fewer decimals */
        snprintf(buf, n, "%.*f", d, x);
    for (int p = 3; p >= 1 && (int)strlen(buf) > width; p--) /* fewer digits */
        snprintf(buf, n, "%.*g", p, x);
}

size_t sweep_results_row(const sweep_spec *sp, long k, const sweep_facts *f,
                         const sweep_summary *s, double wall, const char *status, char *buf,
                         size_t n)
{
    int idx[SWEEP_MAX_AXES];
    sweep_run_index(sp, k, idx);
    char id[13], num[8][32];
    sweep_run_id(sp, idx, id);
    size_t len = (size_t)snprintf(buf, n, "%s", id);
    for (int i = 0; i < sp->n_axes && len < n; i++)
        if (!is_seed_axis(&sp->axis[i]))
            len += (size_t)snprintf(buf + len, n - len, ",%s", sp->axis[i].v[idx[i]]);
    for (int j = 0; j < 8; j++)
        num[j][0] = 0;
    if (s) {
        double final = s->has_val ? s->val : s->train;
        /* exploded: a finite blow-up, not the plateau: more than the
         * plateau's tolerance above the first step's loss (a 20-step run's
         * mean 0.02 above its first step is noise, not a blow-up);
         * stalled: the plateau rule (see SWEEPS in normscope(1)), for a run
         * that had the steps the diagnosis needs to call a plateau one (a
         * 20-step run above it has not stalled: it has barely started) */
        int exploded = !s->div_step && (s->blown_step || (isfinite(final) &&
                                                          final > s->first_loss + DIAG_STALL_TOL));
        int judged = s->last_step - s->first_step + 1 >= DIAG_STALL_STEPS;
        snprintf(num[0], 32, "%ld", s->last_step);
        fmt_num(num[1], 32, s->train);
        if (s->has_val)
            fmt_num(num[2], 32, s->val);
        if (s->div_step)
            snprintf(num[3], 32, "%ld", s->div_step);
        snprintf(num[4], 32, "%d",
                 judged && !s->div_step && !exploded && !(final < f->entropy - 0.1));
        snprintf(num[5], 32, "%d", exploded);
        fmt_num(num[6], 32, s->ratio_first);
        fmt_num(num[7], 32, s->ratio_last);
    }
    char w[32] = "";
    if (!isnan(wall))
        snprintf(w, sizeof w, "%.2f", wall);
    if (len < n)
        len += (size_t)snprintf(buf + len, n - len, ",%llu,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n",
                                (unsigned long long)f->seed, num[0], num[1], num[2], num[3],
                                num[4], num[5], num[6], num[7], w, status);
    return len < n ? len : n - 1;
}

int sweep_results_append(const char *dir, const char *row, size_t len)
{
    char path[4300];
    snprintf(path, sizeof path, "%s/results.csv", dir);
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0666);
    if (fd < 0)
        return -1;
    ssize_t w = write(fd, row, len);
    int r = close(fd);
    return w == (ssize_t)len && r == 0 ? 0 : -1;
}

int sweep_cols_find(sweep_cols *c, char *const *f, int n, const char **missing)
{
    memset(c, 0, sizeof *c);
    c->n = n;
    if (n < 1 || strcmp(f[0], "id") != 0) {
        *missing = "id";
        return -1;
    }
    for (int j = 0; j < SWEEP_COLS; j++)
        if ((c->col[j] = csv_find(f, n, result_names[j])) < 0 && j != SWEEP_COL_EXPLODED) {
            *missing = result_names[j];
            return -1;
        }
    c->n_axes = c->col[SWEEP_COL_SEED] - 1;
    if (c->n_axes < 0) {
        *missing = "seed";
        return -1;
    }
    return 0;
}

void sweep_result_fields(const sweep_cols *c, char *const *f, sweep_result *r)
{
    const char *status = f[c->col[SWEEP_COL_STATUS]], *val = f[c->col[SWEEP_COL_VAL]];
    memset(r, 0, sizeof *r);
    r->ok = !strcmp(status, "ok");
    r->diverged = !strcmp(status, "diverged");
    r->failed = !r->ok && !r->diverged;
    r->steps = strtol(f[c->col[SWEEP_COL_STEPS]], NULL, 10);
    r->train = csv_num(f[c->col[SWEEP_COL_TRAIN]]);
    r->val = csv_num(val);
    r->final = *val ? r->val : r->train;
    r->div_step = strtol(f[c->col[SWEEP_COL_DIV]], NULL, 10);
    r->stalled = !strcmp(f[c->col[SWEEP_COL_STALLED]], "1");
    r->exploded = c->col[SWEEP_COL_EXPLODED] >= 0 && !strcmp(f[c->col[SWEEP_COL_EXPLODED]], "1");
    r->has_ratio = *f[c->col[SWEEP_COL_R1]] != 0;
    r->ratio_first = csv_num(f[c->col[SWEEP_COL_R1]]);
    r->ratio_last = csv_num(f[c->col[SWEEP_COL_RN]]);
}

/* The columns of a sweep over s, from the header it writes. */
static int spec_cols(const sweep_spec *s, sweep_cols *c)
{
    char head[SWEEP_ROW_MAX], *f[SWEEP_MAX_AXES + 1 + SWEEP_COLS];
    const char *missing;
    sweep_results_header(s, head, sizeof head);
    int n = csv_split(head, f, SWEEP_MAX_AXES + 1 + SWEEP_COLS);
    return n <= SWEEP_MAX_AXES + 1 + SWEEP_COLS ? sweep_cols_find(c, f, n, &missing) : -1;
}

/* Split a row of a sweep over s (a copy in buf). The fields, or NULL
 * when it is not such a row. */
static char **spec_row(const sweep_spec *s, const char *row, char *buf, size_t n, char **f,
                       sweep_cols *c)
{
    if (spec_cols(s, c) != 0)
        return NULL;
    snprintf(buf, n, "%s", row);
    return csv_split(buf, f, c->n) == c->n ? f : NULL;
}

int sweep_row_parse(const sweep_spec *s, const char *row, sweep_result *r)
{
    char buf[SWEEP_ROW_MAX], *f[SWEEP_MAX_AXES + 1 + SWEEP_COLS];
    sweep_cols c;
    memset(r, 0, sizeof *r);
    if (!spec_row(s, row, buf, sizeof buf, f, &c))
        return -1;
    sweep_result_fields(&c, f, r);
    return 0;
}

double sweep_row_wall(const sweep_spec *s, const char *row)
{
    char buf[SWEEP_ROW_MAX], *f[SWEEP_MAX_AXES + 1 + SWEEP_COLS];
    sweep_cols c;
    if (!spec_row(s, row, buf, sizeof buf, f, &c) || !*f[c.col[SWEEP_COL_WALL]])
        return NAN;
    return csv_num(f[c.col[SWEEP_COL_WALL]]);
}

/* ---- a cell: its seeds folded -------------------------------------------- */

static void stat_add(sweep_stat *s, double x)
{
    if (!isfinite(x))
        return;
    s->lo = s->n && s->lo < x ? s->lo : x;
    s->hi = s->n && s->hi > x ? s->hi : x;
    s->sum += x;
    s->n++;
}

double sweep_stat_mean(const sweep_stat *s) { return s->n ? s->sum / s->n : NAN; }

void sweep_cell_add(sweep_cell *c, const sweep_result *r)
{
    c->runs++;
    c->diverged += r->diverged;
    c->failed += r->failed;
    c->stalled += r->stalled;
    c->exploded += r->exploded;
    if (r->diverged && (!c->div_step || (r->div_step > 0 && r->div_step < c->div_step)))
        c->div_step = r->div_step;
    if (!r->diverged && !r->failed) { /* a diverged run's last losses describe no trained model */
        stat_add(&c->final, r->final);
        stat_add(&c->train, r->train);
        stat_add(&c->val, r->val);
    }
    if (r->has_ratio) {
        c->ratio[0] += r->ratio_first;
        c->ratio[1] += r->ratio_last;
        c->n_ratio++;
    }
}

/* ---- the text table: one line per cell, seeds folded ------------------- */

int sweep_value_cmp(const char *a, const char *b)
{
    char *ea, *eb;
    double x = strtod(a, &ea), y = strtod(b, &eb);
    if (ea != a && !*ea && eb != b && !*eb && x != y)
        return x < y ? -1 : 1;
    return strcmp(a, b);
}

/* A line of the table: the axis fields of its first row, comma-joined. */
typedef struct {
    char *key;
    sweep_cell fold;
} table_cell;

static int cmp_cell(const void *x, const void *y)
{
    const char *a = ((const table_cell *)x)->key, *b = ((const table_cell *)y)->key;
    while (*a || *b) {
        size_t la = strcspn(a, ","), lb = strcspn(b, ",");
        char fa[SWEEP_VALUE_MAX], fb[SWEEP_VALUE_MAX];
        snprintf(fa, sizeof fa, "%.*s", (int)la, a);
        snprintf(fb, sizeof fb, "%.*s", (int)lb, b);
        int r = sweep_value_cmp(fa, fb);
        if (r)
            return r;
        a += la + (a[la] == ',');
        b += lb + (b[lb] == ',');
    }
    return 0;
}

/* "mean+-spread" (spread: half the range), each in at most 7 characters,
 * or "-" without a value. */
static void fmt_stat(char *buf, size_t n, const sweep_stat *s)
{
    char m[32], h[32];
    if (!s->n) {
        snprintf(buf, n, "-");
        return;
    }
    sweep_fmt_loss(m, sizeof m, sweep_stat_mean(s), 7);
    sweep_fmt_loss(h, sizeof h, (s->hi - s->lo) / 2, 7);
    snprintf(buf, n, "%s+-%s", m, h);
}

/* Print rows of strings with each column as wide as its widest entry. */
static void print_aligned(FILE *out, char **text, int rows, int cols)
{
    int w[64] = {0};
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < cols && j < 64; j++) {
            int l = (int)strlen(text[r * cols + j]);
            w[j] = l > w[j] ? l : w[j];
        }
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < cols && j < 64; j++)
            if (j + 1 < cols)
                fprintf(out, "%-*s  ", w[j], text[r * cols + j]);
            else
                fprintf(out, "%s\n", text[r * cols + j]);
}

/* The cells' lines: the header row, then one row per cell. The columns
 * are few and short, so that a grid of three axes fits 80 columns: the
 * final loss (val_loss, else train_loss) of the runs that trained, the
 * counts of the states, and the gradient ratio at the end. */
static void table_print(FILE *out, char **names, const table_cell *cells, int n_cells, int n_axes)
{
    static const char *const tail[] = {"runs", "final", "div", "stall", "expl", "fail",
                                       "ratio@end"};
    enum { W = SWEEP_VALUE_MAX, N_TAIL = sizeof tail / sizeof tail[0] };
    int cols = n_axes + N_TAIL, rows = n_cells + 1;
    char **text = calloc((size_t)rows * (size_t)cols, sizeof *text);
    char *store = malloc((size_t)rows * (size_t)cols * W);
    if (!text || !store) {
        free(text);
        free(store);
        return;
    }
    for (int i = 0; i < rows * cols; i++)
        text[i] = store + (size_t)i * W;
    for (int j = 0; j < cols; j++)
        snprintf(text[j], W, "%s", j < n_axes ? names[j] : tail[j - n_axes]);
    for (int r = 1; r < rows; r++) {
        const sweep_cell *c = &cells[r - 1].fold;
        const char *p = cells[r - 1].key;
        for (int j = 0; j < n_axes; j++) {
            size_t l = strcspn(p, ",");
            snprintf(text[r * cols + j], W, "%.*s", (int)l, p);
            p += l + (p[l] == ',');
        }
        char **v = text + r * cols + n_axes;
        snprintf(v[0], W, "%d", c->runs);
        fmt_stat(v[1], W, &c->final);
        snprintf(v[2], W, "%d", c->diverged);
        snprintf(v[3], W, "%d", c->stalled);
        snprintf(v[4], W, "%d", c->exploded);
        snprintf(v[5], W, "%d", c->failed);
        if (c->n_ratio)
            snprintf(v[6], W, "%.2g", c->ratio[1] / c->n_ratio);
        else
            snprintf(v[6], W, "-");
    }
    print_aligned(out, text, rows, cols);
    free(text);
    free(store);
}

/* The cell with this key, added when new. NULL: out of memory. */
static table_cell *cell_get(table_cell **cells, int *n, int *cap, const char *key)
{
    for (int i = 0; i < *n; i++)
        if (!strcmp((*cells)[i].key, key))
            return &(*cells)[i];
    if (*n == *cap) {
        int nc = *cap ? *cap * 2 : 64;
        table_cell *g = realloc(*cells, (size_t)nc * sizeof *g);
        if (!g)
            return NULL;
        *cells = g;
        *cap = nc;
    }
    table_cell *c = &(*cells)[*n];
    memset(c, 0, sizeof *c);
    if (!(c->key = strdup(key)))
        return NULL;
    (*n)++;
    return c;
}

int sweep_table_print(const char *path, FILE *out)
{
    enum { MAXF = SWEEP_MAX_AXES + 1 + SWEEP_COLS };
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char *line = NULL, *head = NULL, *fl[MAXF + 1];
    const char *missing;
    size_t cap = 0;
    int n_cells = 0, cap_cells = 0, ok = 0;
    sweep_cols cols;
    table_cell *cells = NULL;
    if (getline(&line, &cap, f) > 0 && (head = strdup(line)) != NULL) {
        int n = csv_split(head, fl, MAXF);
        ok = n <= MAXF && sweep_cols_find(&cols, fl, n, &missing) == 0;
    }
    while (ok && getline(&line, &cap, f) > 0) {
        char *rf[MAXF + 1];
        if (csv_split(line, rf, cols.n) != cols.n)
            continue;
        char key[SWEEP_MAX_AXES * SWEEP_VALUE_MAX] = "";
        size_t k = 0;
        for (int i = 0; i < cols.n_axes && k < sizeof key; i++)
            k += (size_t)snprintf(key + k, sizeof key - k, "%s%s", i ? "," : "", rf[1 + i]);
        table_cell *c = cell_get(&cells, &n_cells, &cap_cells, key);
        sweep_result r;
        sweep_result_fields(&cols, rf, &r);
        if (c)
            sweep_cell_add(&c->fold, &r);
    }
    fclose(f);
    free(line);
    if (n_cells)
        qsort(cells, (size_t)n_cells, sizeof *cells, cmp_cell);
    if (ok)
        table_print(out, fl + 1, cells, n_cells, cols.n_axes);
    for (int i = 0; i < n_cells; i++)
        free(cells[i].key);
    free(cells);
    free(head);
    return ok ? 0 : -1;
}
