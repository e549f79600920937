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
#include "metrics.h"
#include "settings.h"

#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- a run's CSV, summarized ------------------------------------------- */

/* What a field of a run's CSV must hold, by its column (metrics.c). */
enum { FK_ANY, FK_NUM, FK_NUM_OR_EMPTY, FK_STEP, FK_NAME, FK_WORD };

/* Column positions in a run's CSV header (metrics.c), and each field's kind. */
typedef struct {
    int step, loss, val, gnorm, skipped, state, tps, n;
    int n_layer;        /* layers the l<i>_ columns hold */
    int g0[3], gtop[3]; /* grad_attn, grad_ffn, grad_ln of layer 0 and L-1 */
    int *fk;            /* n kinds (FK_*); step columns' table index in col_k */
    int *col_k;
    int *upd;           /* the n_layer l<i>_update_ratio columns */
} step_cols;

/* A field's kind from its column's name. */
static int field_kind(const char *name, int *col_k)
{
    int layer, off;
    *col_k = metrics_step_col_find(name, strlen(name));
    if (*col_k >= 0)
        switch (metrics_step_col(*col_k)->type) {
        case METRICS_T_LONG: return FK_STEP;
        case METRICS_T_VAL:
        case METRICS_T_SPARSE: return FK_NUM_OR_EMPTY;
        default: return metrics_step_col_named(*col_k) ? FK_NAME : FK_NUM;
        }
    if (sscanf(name, "l%d_%n", &layer, &off) == 1 && off > 0 &&
        metrics_layer_col_find(name + off, strlen(name + off)) >= 0)
        return FK_NUM;
    return !strcmp(name, "state") ? FK_WORD : FK_ANY;
}

/* The per-layer columns: gradients of the bottom and top layers, update
 * ratios, the layer count. 0, or -1 when a layer's columns are missing. */
static int layer_cols(char **f, step_cols *h)
{
    static const char *const g[3] = {"grad_attn", "grad_ffn", "grad_ln"};
    char name[64];
    for (int i = 0; i < h->n; i++) {
        int layer, off;
        if (sscanf(f[i], "l%d_%n", &layer, &off) == 1 && off > 0 && layer >= h->n_layer &&
            layer < NS_MAX_LAYERS)
            h->n_layer = layer + 1;
    }
    if (h->n_layer < 1 || !(h->upd = malloc((size_t)h->n_layer * sizeof *h->upd)))
        return -1;
    for (int i = 0; i < h->n_layer; i++) {
        snprintf(name, sizeof name, "l%d_update_ratio", i);
        if ((h->upd[i] = csv_find(f, h->n, name)) < 0)
            return -1;
    }
    for (int j = 0; j < 3; j++) {
        snprintf(name, sizeof name, "l0_%s", g[j]);
        h->g0[j] = csv_find(f, h->n, name);
        snprintf(name, sizeof name, "l%d_%s", h->n_layer - 1, g[j]);
        h->gtop[j] = csv_find(f, h->n, name);
        if (h->g0[j] < 0 || h->gtop[j] < 0)
            return -1;
    }
    return 0;
}

static void step_cols_free(step_cols *h)
{
    free(h->fk);
    free(h->col_k);
    free(h->upd);
}

/* The columns of a run's CSV header line (split in place); returns the
 * fields array for its rows (h->n long, the caller frees it and h), or
 * NULL when a column is missing or out of memory. */
static char **step_header(char *line, step_cols *h)
{
    int max = 1;
    for (const char *p = line; *p; p++)
        max += *p == ',';
    char **f = malloc((size_t)max * sizeof *f);
    memset(h, -1, sizeof *h);
    h->fk = h->col_k = h->upd = NULL;
    h->n_layer = 0;
    if (!f)
        return NULL;
    h->n = csv_split(line, f, max);
    h->step = csv_find(f, h->n, "step");
    h->loss = csv_find(f, h->n, "loss");
    h->val = csv_find(f, h->n, "val_loss");
    h->gnorm = csv_find(f, h->n, "grad_norm");
    h->skipped = csv_find(f, h->n, "skipped");
    h->state = csv_find(f, h->n, "state");
    h->tps = csv_find(f, h->n, "tokens_per_s");
    h->fk = malloc((size_t)h->n * sizeof *h->fk);
    h->col_k = malloc((size_t)h->n * sizeof *h->col_k);
    int ok = h->fk && h->col_k && h->step >= 0 && h->loss >= 0 && h->val >= 0 &&
             h->gnorm >= 0 && h->skipped >= 0 && layer_cols(f, h) == 0;
    for (int i = 0; ok && i < h->n; i++)
        h->fk[i] = field_kind(f[i], &h->col_k[i]);
    if (!ok) {
        free(f);
        return NULL;
    }
    return f;
}

/* Is v wholly a number (nan, inf and -inf included, as the CSV spells them)? */
static int num_text_ok(const char *v)
{
    char *end;
    if (!*v)
        return 0;
    (void)strtod(v, &end);
    return !*end;
}

/* A row's fields each as their columns write them. 0, or -1 with the
 * first bad field named in why. */
static int row_whole(char **fl, const step_cols *h, char *const *names, char *why, size_t n)
{
    for (int i = 0; i < h->n; i++) {
        const char *v = fl[i];
        step_metrics m;
        int ok;
        switch (h->fk[i]) {
        case FK_NUM: ok = num_text_ok(v); break;
        case FK_NUM_OR_EMPTY: ok = !*v || num_text_ok(v); break;
        case FK_STEP: ok = *v && strspn(v, "0123456789") == strlen(v) && strlen(v) < 16; break;
        case FK_NAME: ok = metrics_step_col_set_name(&m, h->col_k[i], v) == 0; break;
        case FK_WORD: ok = strspn(v, "abcdefghijklmnopqrstuvwxyz_") == strlen(v); break;
        default: ok = 1;
        }
        if (!ok) {
            snprintf(why, n, "%s '%.24s' is not what the column holds", names[i], v);
            return -1;
        }
    }
    return 0;
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
    const sweep_spec *at; /* its --loss-at steps (NULL: none) */
} summary_acc;

static void summary_row(sweep_summary *s, summary_acc *acc, char **fl, const step_cols *h)
{
    long step = strtol(fl[h->step], NULL, 10);
    double loss = csv_num(fl[h->loss]), gn = csv_num(fl[h->gnorm]);
    int skipped = atoi(fl[h->skipped]);
    const char *state = h->state >= 0 ? fl[h->state] : "";
    if (acc->rows == 0) {
        s->first_step = step;
        s->first_loss = loss;
        s->ratio_first = grad_ratio(fl, h);
        for (int i = 0; i < h->n; i++) /* the settings it started with */
            if (h->col_k[i] >= 0 && metrics_step_col(h->col_k[i])->setting)
                snprintf(s->set[h->col_k[i]], sizeof s->set[0], "%s", fl[i]);
    }
    s->last_step = step;
    s->ratio_last = grad_ratio(fl, h);
    if (!s->div_step && (!isfinite(loss) || (!isfinite(gn) && !skipped) ||
                         !strcmp(state, "diverged")))
        s->div_step = step;
    s->blown_step = !strcmp(state, "exploded") ? step : 0;
    snprintf(s->state, sizeof s->state, "%s", state);
    double upd = 0;
    for (int i = 0; i < h->n_layer; i++)
        upd += csv_num(fl[h->upd[i]]);
    s->update_last = upd / h->n_layer;
    double tps = h->tps >= 0 ? csv_num(fl[h->tps]) : NAN;
    s->inv_tps += tps > 0 ? 1.0 / tps : 0; /* a step's time over its tokens */
    acc->loss[acc->rows++ % SWEEP_LAST_K] = loss;
    if (*fl[h->val]) {
        double v = csv_num(fl[h->val]);
        acc->val[acc->vals % SWEEP_LAST_K] = v;
        acc->val_step[acc->vals++ % SWEEP_LAST_K] = step;
        if (isfinite(v) && !(v >= s->best_val)) {
            s->best_val = v;
            s->best_val_step = step;
        }
    }
}

/* The loss field of a row whose step is one of --loss-at's, as written
 * (a field too long to keep: its value, as the run writes a loss). */
static void summary_loss_at(sweep_summary *s, const summary_acc *acc, char **fl,
                            const step_cols *h)
{
    long step = strtol(fl[h->step], NULL, 10);
    for (int j = 0; acc->at && j < acc->at->n_loss_at; j++)
        if (acc->at->loss_at[j] == step) {
            const char *v = fl[h->loss];
            if (strlen(v) < sizeof s->loss_at[j])
                snprintf(s->loss_at[j], sizeof s->loss_at[j], "%s", v);
            else
                snprintf(s->loss_at[j], sizeof s->loss_at[j], "%.9g", csv_num(v));
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

/* Every line after the header: split whole, each field as its column
 * writes it, steps rising. 0, or -1 with the reason in s->why. */
static int summary_rows(FILE *f, sweep_summary *s, summary_acc *acc, char **fl, char **names,
                        const step_cols *h)
{
    char *line = NULL, why[160];
    size_t cap = 0;
    ssize_t len;
    int r = 0;
    for (long nr = 2; r == 0 && (len = getline(&line, &cap, f)) > 0; nr++) {
        int got = line[len - 1] != '\n' ? -1 : csv_split(line, fl, h->n);
        why[0] = 0;
        if (got < 0)
            snprintf(why, sizeof why, "cut short (no newline)");
        else if (got != h->n)
            snprintf(why, sizeof why, "%s fields than the header's %d", got > h->n ? "more" : "fewer",
                     h->n);
        else if (row_whole(fl, h, names, why, sizeof why) == 0 && acc->rows &&
                 strtol(fl[h->step], NULL, 10) <= s->last_step)
            snprintf(why, sizeof why, "step %s after step %ld", fl[h->step], s->last_step);
        if (why[0]) {
            snprintf(s->why, sizeof s->why, "line %ld: %s", nr, why);
            r = -1;
        } else {
            summary_row(s, acc, fl, h);
            summary_loss_at(s, acc, fl, h);
        }
    }
    free(line);
    return r;
}

int sweep_summary_read(const char *path, const sweep_spec *at, sweep_summary *s)
{
    FILE *f = fopen(path, "r");
    memset(s, 0, sizeof *s);
    s->best_val = NAN;
    if (!f)
        return SWEEP_CSV_NONE;
    char *line = NULL, *head = NULL, **fl = NULL, **names = NULL;
    size_t cap = 0;
    step_cols h;
    summary_acc acc;
    memset(&acc, 0, sizeof acc);
    acc.at = at;
    memset(&h, 0, sizeof h);
    ssize_t len = getline(&line, &cap, f);
    int r = SWEEP_CSV_CORRUPT;
    if (len <= 0) {
        r = SWEEP_CSV_SHORT; /* made, nothing written yet */
    } else if (line[len - 1] != '\n' || !(head = strdup(line)) ||
               !(fl = step_header(line, &h)) || !(names = malloc((size_t)h.n * sizeof *names)) ||
               csv_split(head, names, h.n) != h.n) {
        snprintf(s->why, sizeof s->why, "line 1: not a run's CSV header");
    } else if (summary_rows(f, s, &acc, fl, names, &h) == 0) {
        r = acc.rows ? SWEEP_CSV_READ : SWEEP_CSV_SHORT;
    }
    fclose(f);
    free(line);
    free(head);
    free(fl);
    free(names);
    s->n_layer = h.n_layer;
    step_cols_free(&h);
    if (r == SWEEP_CSV_READ)
        summary_finish(s, &acc);
    return r;
}


int sweep_summary_matches(const sweep_summary *s, const sweep_facts *f, char *why, size_t n)
{
    char want[64];
    if (s->n_layer != f->cfg.n_layer) {
        snprintf(why, n, "it holds %d layers where the run's ID says --layers %d", s->n_layer,
                 f->cfg.n_layer);
        return -1;
    }
    /* the settings of its command line, each as its column spells it */
    for (int k = 0; k < metrics_step_ncols(); k++) {
        const ns_setting *row = metrics_step_col(k)->setting;
        if (!row || row->home != SET_IN_CFG || !s->set[k][0])
            continue;
        metrics_setting_text(k, settings_get(row, &f->cfg), want, sizeof want);
        if (strcmp(s->set[k], want) != 0) {
            snprintf(why, n, "its first row has %s %s where the run's ID says --%s %s",
                     metrics_step_col(k)->name, s->set[k], row->name, want);
            return -1;
        }
    }
    return 0;
}

const char *sweep_summary_status(const sweep_summary *s, long steps)
{
    if (s->div_step)
        return "diverged";
    /* a run stopped at its finite blow-up ran what it could */
    if (s->blown_step)
        return "exploded";
    if (!strcmp(s->state, "stalled")) /* at its end, whether it ran on or stopped there
                                         (--on-stall stop) */
        return "stalled";
    if (s->last_step < steps)
        return NULL;
    if (!s->state[0] || !strcmp(s->state, "fixed")) /* fixed: it recovered */
        return "ok";
    return s->state; /* a state this version does not know by name */
}

/* ---- DIR/results.csv ----------------------------------------------------- */

/* The result columns, in the order written (SWEEP_COL_*); "steps" is the
 * setting (--steps), "last_step" the step the run reached. */
static const char *const result_names[SWEEP_COLS] = {
    "seed", "last_step", "train_loss", "val_loss", "diverged_step", "stalled", "exploded",
    "ratio_first", "ratio_last", "wall_s", "status", "state", "reason", "best_val",
    "best_val_step", "update_ratio_end", "tokens", "train_s"};
/* --loss-at's columns: loss_at_N, the train loss at step N. */
#define LOSS_AT_PREFIX "loss_at_"
/* Columns an older results.csv may lack (read as empty). */
static int col_optional(int j) { return j == SWEEP_COL_EXPLODED || j >= SWEEP_COL_STATE; }
/* Where no column of a settings row, or of the sweep, is written twice:
 * the settings' columns follow, then these. */
static const char *const tail_names[] = {"data", "script", "load", "version", "command",
                                         "time", "host"};
enum { N_TAIL_COLS = sizeof tail_names / sizeof tail_names[0] };

static int is_seed_axis(const sweep_axis *a) { return !strcmp(a->name, "seed"); }

static int is_axis(const sweep_spec *sp, const char *name)
{
    for (int i = 0; i < sp->n_axes; i++)
        if (!strcmp(sp->axis[i].name, name))
            return 1;
    return 0;
}

/* Settings row i gets a column of its own: a setting of the model or its
 * training (ns_config), not an axis (those come first), not the seed (a
 * result column). */
static const ns_setting *config_col(const sweep_spec *sp, int i)
{
    const ns_setting *r = settings_row(i);
    if (!r || r->home != SET_IN_CFG || (r->flags & SETF_NOFLAG) || !strcmp(r->name, "seed") ||
        is_axis(sp, r->name))
        return NULL;
    return r;
}

void sweep_results_header(const sweep_spec *s, char *buf, size_t n)
{
    size_t k = (size_t)snprintf(buf, n, "id");
    for (int i = 0; i < s->n_axes && k < n; i++)
        if (!is_seed_axis(&s->axis[i]))
            k += (size_t)snprintf(buf + k, n - k, ",%s", s->axis[i].name);
    for (int j = 0; j < SWEEP_COLS && k < n; j++)
        k += (size_t)snprintf(buf + k, n - k, ",%s", result_names[j]);
    for (int j = 0; j < s->n_loss_at && k < n; j++)
        k += (size_t)snprintf(buf + k, n - k, ",%s%ld", LOSS_AT_PREFIX, s->loss_at[j]);
    for (int i = 0; i < settings_count() && k < n; i++)
        if (config_col(s, i))
            k += (size_t)snprintf(buf + k, n - k, ",%s", settings_row(i)->name);
    for (int j = 0; j < N_TAIL_COLS && k < n; j++)
        if (j >= 3 || !is_axis(s, tail_names[j]))
            k += (size_t)snprintf(buf + k, n - k, ",%s", tail_names[j]);
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

/* Append ",text" with its commas written ';' (no field is quoted). */
static size_t put_field(char *buf, size_t len, size_t n, const char *text)
{
    if (len + 1 < n)
        buf[len++] = ',';
    for (; *text && len + 1 < n; text++)
        buf[len++] = *text == ',' || *text == '\n' ? ';' : *text;
    buf[len < n ? len : n - 1] = 0;
    return len;
}

/* The result fields of a run that left a CSV (num[SWEEP_COLS][32], in
 * SWEEP_COL_* order; the others empty). */
static void summary_fields(const sweep_summary *s, const sweep_facts *f, const char *status,
                           char (*num)[32])
{
    snprintf(num[SWEEP_COL_STEPS], 32, "%ld", s->last_step);
    fmt_num(num[SWEEP_COL_TRAIN], 32, s->train);
    if (s->has_val)
        fmt_num(num[SWEEP_COL_VAL], 32, s->val);
    if (s->div_step)
        snprintf(num[SWEEP_COL_DIV], 32, "%ld", s->div_step);
    snprintf(num[SWEEP_COL_STALLED], 32, "%d", !strcmp(status, "stalled"));
    snprintf(num[SWEEP_COL_EXPLODED], 32, "%d", !strcmp(status, "exploded"));
    fmt_num(num[SWEEP_COL_R1], 32, s->ratio_first);
    fmt_num(num[SWEEP_COL_RN], 32, s->ratio_last);
    snprintf(num[SWEEP_COL_STATE], 32, "%s", s->state);
    if (!isnan(s->best_val)) {
        fmt_num(num[SWEEP_COL_BEST], 32, s->best_val);
        snprintf(num[SWEEP_COL_BEST_STEP], 32, "%ld", s->best_val_step);
    }
    fmt_num(num[SWEEP_COL_UPD], 32, s->update_last);
    double per_step = (double)f->cfg.batch * f->cfg.context;
    snprintf(num[SWEEP_COL_TOKENS], 32, "%.0f", per_step * (double)(s->last_step - s->first_step + 1));
    snprintf(num[SWEEP_COL_TRAIN_S], 32, "%.4g", s->inv_tps * per_step);
}

size_t sweep_results_row(const sweep_spec *sp, long k, const sweep_facts *f,
                         const sweep_summary *s, double wall, const char *status,
                         const char *reason, long ended, char *buf, size_t n)
{
    int idx[SWEEP_MAX_AXES];
    char id[13], num[SWEEP_COLS][32], text[1100];
    sweep_spec_run_index(sp, k, idx);
    sweep_spec_run_id(sp, idx, id);
    size_t len = (size_t)snprintf(buf, n, "%s", id);
    for (int i = 0; i < sp->n_axes && len < n; i++)
        if (!is_seed_axis(&sp->axis[i]))
            len = put_field(buf, len, n, sp->axis[i].v[idx[i]]);
    memset(num, 0, sizeof num);
    if (s)
        summary_fields(s, f, status, num);
    snprintf(num[SWEEP_COL_SEED], 32, "%llu", (unsigned long long)f->seed);
    if (!isnan(wall))
        snprintf(num[SWEEP_COL_WALL], 32, "%.2f", wall);
    snprintf(num[SWEEP_COL_STATUS], 32, "%s", status);
    snprintf(num[SWEEP_COL_REASON], 32, "%s", "");
    for (int j = 0; j < SWEEP_COLS; j++)
        len = put_field(buf, len, n, j == SWEEP_COL_REASON && reason ? reason : num[j]);
    for (int j = 0; j < sp->n_loss_at; j++)
        len = put_field(buf, len, n, s ? s->loss_at[j] : "");
    for (int i = 0; i < settings_count(); i++)
        if (config_col(sp, i)) {
            settings_format(settings_row(i), &f->cfg, text, sizeof text);
            len = put_field(buf, len, n, text);
        }
    const char *paths[3] = {f->data, f->script, f->load};
    for (int j = 0; j < 3; j++)
        if (!is_axis(sp, tail_names[j]))
            len = put_field(buf, len, n, paths[j]);
    time_t t = (time_t)ended;
    char when[32] = "", host[256] = "";
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
    if (gethostname(host, sizeof host - 1) != 0)
        host[0] = 0;
    len = put_field(buf, len, n, NS_VERSION);
    len = put_field(buf, len, n, f->command);
    len = put_field(buf, len, n, when);
    len = put_field(buf, len, n, host);
    if (len + 1 < n)
        buf[len++] = '\n';
    buf[len] = 0;
    return len;
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
    for (int j = 0; j < SWEEP_COLS; j++) {
        c->col[j] = csv_find(f, n, result_names[j]);
        if (j == SWEEP_COL_STEPS && c->col[j] < 0) /* older files: "steps" */
            c->col[j] = csv_find(f, n, "steps");
        if (c->col[j] < 0 && !col_optional(j)) {
            *missing = result_names[j];
            return -1;
        }
    }
    c->n_axes = c->col[SWEEP_COL_SEED] - 1;
    if (c->n_axes < 0) {
        *missing = "seed";
        return -1;
    }
    for (int i = 0; i < n && c->n_at < SWEEP_MAX_LOSS_AT; i++) {
        const char *d = f[i] + strlen(LOSS_AT_PREFIX);
        if (!strncmp(f[i], LOSS_AT_PREFIX, strlen(LOSS_AT_PREFIX)) && *d &&
            strspn(d, "0123456789") == strlen(d)) {
            c->at_col[c->n_at] = i;
            c->at_step[c->n_at++] = strtol(d, NULL, 10);
        }
    }
    return 0;
}

/* Is this status a run that left no numbers (older files: "exit N",
 * "signal N")? */
static int status_failed(const char *st)
{
    return !strcmp(st, "failed") || !strcmp(st, "killed") || !strcmp(st, "corrupt") ||
           !strncmp(st, "exit ", 5) || !strncmp(st, "signal ", 7);
}

/* Field j of a row, "" for a column the file lacks. */
static const char *col_text(const sweep_cols *c, char *const *f, int j)
{
    return c->col[j] >= 0 ? f[c->col[j]] : "";
}

void sweep_result_fields(const sweep_cols *c, char *const *f, sweep_result *r)
{
    const char *status = col_text(c, f, SWEEP_COL_STATUS), *val = col_text(c, f, SWEEP_COL_VAL);
    memset(r, 0, sizeof *r);
    r->ok = !strcmp(status, "ok");
    r->diverged = !strcmp(status, "diverged");
    r->failed = status_failed(status);
    r->steps = strtol(col_text(c, f, SWEEP_COL_STEPS), NULL, 10);
    r->train = csv_num(col_text(c, f, SWEEP_COL_TRAIN));
    r->val = csv_num(val);
    r->final = *val ? r->val : r->train;
    r->div_step = strtol(col_text(c, f, SWEEP_COL_DIV), NULL, 10);
    r->stalled = !strcmp(col_text(c, f, SWEEP_COL_STALLED), "1");
    r->exploded = !strcmp(col_text(c, f, SWEEP_COL_EXPLODED), "1");
    r->has_ratio = *col_text(c, f, SWEEP_COL_R1) != 0;
    r->ratio_first = csv_num(col_text(c, f, SWEEP_COL_R1));
    r->ratio_last = csv_num(col_text(c, f, SWEEP_COL_RN));
    r->best_val = csv_num(col_text(c, f, SWEEP_COL_BEST));
    r->best_step = strtol(col_text(c, f, SWEEP_COL_BEST_STEP), NULL, 10);
    r->update_end = csv_num(col_text(c, f, SWEEP_COL_UPD));
    r->n_at = c->n_at;
    for (int j = 0; j < c->n_at; j++)
        r->loss_at[j] = csv_num(f[c->at_col[j]]);
}

/* The columns of a sweep over s, from the header it writes. */
static int spec_cols(const sweep_spec *s, sweep_cols *c)
{
    char head[SWEEP_ROW_MAX], *f[SWEEP_MAX_FIELDS];
    const char *missing;
    sweep_results_header(s, head, sizeof head);
    int n = csv_split(head, f, SWEEP_MAX_FIELDS);
    return n <= SWEEP_MAX_FIELDS ? sweep_cols_find(c, f, n, &missing) : -1;
}

/* Split a row of a sweep over s (a copy in buf). The fields, or NULL
 * when it is not such a row. A row as an older normscope wrote it (the
 * axes, then seed to status, nothing after) is read by that layout. */
static char **spec_row(const sweep_spec *s, const char *row, char *buf, size_t n, char **f,
                       sweep_cols *c)
{
    if (spec_cols(s, c) != 0)
        return NULL;
    snprintf(buf, n, "%s", row);
    int got = csv_split(buf, f, c->n);
    if (got == c->n)
        return f;
    if (got != c->n_axes + 1 + SWEEP_COL_STATUS + 1)
        return NULL;
    for (int j = 0; j < SWEEP_COLS; j++)
        c->col[j] = j <= SWEEP_COL_STATUS ? c->n_axes + 1 + j : -1;
    c->n = got;
    c->n_at = 0;
    return f;
}

int sweep_row_parse(const sweep_spec *s, const char *row, sweep_result *r)
{
    char buf[SWEEP_ROW_MAX], *f[SWEEP_MAX_FIELDS];
    sweep_cols c;
    memset(r, 0, sizeof *r);
    if (!spec_row(s, row, buf, sizeof buf, f, &c))
        return -1;
    sweep_result_fields(&c, f, r);
    return 0;
}

double sweep_row_wall(const sweep_spec *s, const char *row)
{
    char buf[SWEEP_ROW_MAX], *f[SWEEP_MAX_FIELDS];
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
    double d = x - s->mean;
    s->mean += d / s->n;
    s->m2 += d * (x - s->mean);
}

double sweep_stat_mean(const sweep_stat *s) { return s->n ? s->mean : NAN; }

double sweep_stat_sd(const sweep_stat *s) { return s->n > 1 ? sqrt(s->m2 / (s->n - 1)) : NAN; }

/* Student's t quantile t(0.975, df): the standard table for df 1..30 (to
 * three decimals, as in Fisher and Yates's Statistical Tables), then the
 * normal quantile z = 1.959964 with the first two terms of the
 * Cornish-Fisher expansion in 1/df (Abramowitz and Stegun 26.7.5),
 * within 0.0002 of the exact value above 30. */
static double t975(int df)
{
    static const double t[30] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306,
                                 2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120,
                                 2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
                                 2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
    const double z = 1.959964;
    double z3 = z * z * z, z5 = z3 * z * z, d = df;
    return df <= 30 ? t[df - 1] : z + (z3 + z) / 4 / d + (5 * z5 + 16 * z3 + 3 * z) / 96 / (d * d);
}

double sweep_stat_ci95(const sweep_stat *s)
{
    return s->n > 1 ? t975(s->n - 1) * sweep_stat_sd(s) / sqrt(s->n) : NAN;
}

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
        stat_add(&c->best, r->best_val);
        stat_add(&c->update, r->update_end);
    }
    for (int j = 0; j < r->n_at; j++) /* empty (NaN) when the run never got there */
        stat_add(&c->at[j], r->loss_at[j]);
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

/* A stat's mean, sd or interval half-width in at most 7 characters (or
 * exact: %.6g, for a file), "-" without one. */
static void fmt_opt(char *buf, size_t n, double x, int exact)
{
    if (isnan(x))
        snprintf(buf, n, exact ? "" : "-");
    else if (exact)
        fmt_num(buf, n, x);
    else
        sweep_fmt_loss(buf, n, x, 7);
}

/* The table's columns after the axes: the runs, then the final loss
 * (val_loss, else train_loss) of those that neither diverged nor failed:
 * how many, their mean, sd and the half-width of the mean's 95% interval
 * (sweep_stat_ci95); the counts of the states; the gradient ratio at the
 * end. Few and short, so that a grid of three axes fits 80 columns. Then
 * the same four of the loss at each --loss-at step N: n@N loss@N sd@N
 * ci95@N. */
static const char *const cell_cols[] = {"runs", "n", "final", "sd", "ci95", "div", "stall",
                                        "expl", "fail", "ratio"};
static const char *const at_cols[] = {"n@", "loss@", "sd@", "ci95@"};
enum { N_CELL_COLS = sizeof cell_cols / sizeof cell_cols[0], N_AT_COLS = 4,
       CELL_W = SWEEP_VALUE_MAX };

/* The table's columns at most: the axes and the seed, the cell's, and
 * four per --loss-at step. */
enum { TABLE_COLS_MAX = SWEEP_MAX_AXES + 1 + N_CELL_COLS + N_AT_COLS * SWEEP_MAX_LOSS_AT };

/* Print rows of strings with each column as wide as its widest entry. */
static void print_aligned(FILE *out, char **text, int rows, int cols)
{
    int w[TABLE_COLS_MAX] = {0};
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < cols && j < TABLE_COLS_MAX; j++) {
            int l = (int)strlen(text[r * cols + j]);
            w[j] = l > w[j] ? l : w[j];
        }
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < cols && j < TABLE_COLS_MAX; j++)
            if (j + 1 < cols)
                fprintf(out, "%-*s  ", w[j], text[r * cols + j]);
            else
                fprintf(out, "%s\n", text[r * cols + j]);
}

/* The same rows as CSV (DIR/summary.csv). */
static void print_csv(FILE *out, char **text, int rows, int cols)
{
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < cols; j++)
            fprintf(out, "%s%s", text[r * cols + j], j + 1 < cols ? "," : "\n");
}

/* A stat's count, mean, sd and interval half-width into v[0..3]. */
static void stat_text(char **v, const sweep_stat *s, int exact)
{
    snprintf(v[0], CELL_W, "%d", s->n);
    fmt_opt(v[1], CELL_W, sweep_stat_mean(s), exact);
    fmt_opt(v[2], CELL_W, sweep_stat_sd(s), exact);
    fmt_opt(v[3], CELL_W, sweep_stat_ci95(s), exact);
}

static void cell_text(char **v, const sweep_cell *c, int n_at, int exact)
{
    snprintf(v[0], CELL_W, "%d", c->runs);
    stat_text(v + 1, &c->final, exact);
    snprintf(v[5], CELL_W, "%d", c->diverged);
    snprintf(v[6], CELL_W, "%d", c->stalled);
    snprintf(v[7], CELL_W, "%d", c->exploded);
    snprintf(v[8], CELL_W, "%d", c->failed);
    if (c->n_ratio)
        snprintf(v[9], CELL_W, exact ? "%.6g" : "%.2g", c->ratio[1] / c->n_ratio);
    else
        snprintf(v[9], CELL_W, exact ? "" : "-");
    for (int j = 0; j < n_at; j++)
        stat_text(v + N_CELL_COLS + N_AT_COLS * j, &c->at[j], exact);
}

/* Column j's name after the axes. */
static void cell_col_name(char *buf, int j, const sweep_cols *cols)
{
    if (j < N_CELL_COLS)
        snprintf(buf, CELL_W, "%s", cell_cols[j]);
    else
        snprintf(buf, CELL_W, "%s%ld", at_cols[(j - N_CELL_COLS) % N_AT_COLS],
                 cols->at_step[(j - N_CELL_COLS) / N_AT_COLS]);
}

/* The cells' lines: the header row, then one row per cell (a run's seed
 * its last axis when the table is per seed), aligned to out, or with
 * exact as CSV. */
static void table_print(FILE *out, int exact, char **names, const table_cell *cells, int n_cells,
                        int n_axes, const sweep_cols *at)
{
    int cols = n_axes + N_CELL_COLS + N_AT_COLS * at->n_at, rows = n_cells + 1;
    char **text = calloc((size_t)rows * (size_t)cols, sizeof *text);
    char *store = malloc((size_t)rows * (size_t)cols * CELL_W);
    if (!text || !store) {
        free(text);
        free(store);
        return;
    }
    for (int i = 0; i < rows * cols; i++)
        text[i] = store + (size_t)i * CELL_W;
    for (int j = 0; j < cols; j++)
        if (j < n_axes)
            snprintf(text[j], CELL_W, "%s", names[j]);
        else
            cell_col_name(text[j], j - n_axes, at);
    for (int r = 1; r < rows; r++) {
        const char *p = cells[r - 1].key;
        for (int j = 0; j < n_axes; j++) {
            size_t l = strcspn(p, ",");
            snprintf(text[r * cols + j], CELL_W, "%.*s", (int)l, p);
            p += l + (p[l] == ',');
        }
        cell_text(text + r * cols + n_axes, &cells[r - 1].fold, at->n_at, exact);
    }
    if (exact)
        print_csv(out, text, rows, cols);
    else
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

/* A row's cell key: its axis fields comma-joined, and with per_seed its
 * seed. */
static void row_key(const sweep_cols *cols, char **rf, int per_seed, char *key, size_t n)
{
    size_t k = 0;
    key[0] = 0;
    for (int i = 0; i < cols->n_axes && k < n; i++)
        k += (size_t)snprintf(key + k, n - k, "%s%s", i ? "," : "", rf[1 + i]);
    if (per_seed && k < n)
        snprintf(key + k, n - k, "%s%s", cols->n_axes ? "," : "", rf[cols->col[SWEEP_COL_SEED]]);
}

int sweep_table_print(const char *path, FILE *out, const sweep_table_opts *o)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char *line = NULL, *head = NULL, *fl[SWEEP_MAX_FIELDS + 1];
    const char *missing;
    size_t cap = 0;
    int n_cells = 0, cap_cells = 0, ok = 0;
    sweep_cols cols;
    table_cell *cells = NULL;
    if (getline(&line, &cap, f) > 0 && (head = strdup(line)) != NULL) {
        int n = csv_split(head, fl, SWEEP_MAX_FIELDS);
        ok = n <= SWEEP_MAX_FIELDS && sweep_cols_find(&cols, fl, n, &missing) == 0;
    }
    while (ok && getline(&line, &cap, f) > 0) {
        char *rf[SWEEP_MAX_FIELDS + 1], key[SWEEP_MAX_AXES * SWEEP_VALUE_MAX];
        if (csv_split(line, rf, cols.n) != cols.n || (o->keep && !o->keep(o->ctx, rf[0])))
            continue;
        row_key(&cols, rf, o->per_seed, key, sizeof key);
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
    if (ok && out)
        table_print(out, 0, fl + 1, cells, n_cells, cols.n_axes + (o->per_seed != 0), &cols);
    if (ok && o->csv)
        table_print(o->csv, 1, fl + 1, cells, n_cells, cols.n_axes + (o->per_seed != 0), &cols);
    for (int i = 0; i < n_cells; i++)
        free(cells[i].key);
    free(cells);
    free(head);
    return ok ? 0 : -1;
}
