/* metrics.c - CSV and JSONL forms of a step's metrics, the step and
 * per-layer column tables (metrics_step_col, metrics_layer_cols) every
 * writer and reader walks, and the loss-spike rule shared by the engine
 * and the stream reader. */
#include "metrics.h"

#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define STEP(n, field, t) {n, offsetof(step_metrics, field), t, NULL}
/* The measured columns at their indices; the holes are the settings'. */
static const metrics_col measured[] = {
    [METRICS_COL_STEP] = STEP("step", step, METRICS_T_LONG),
    [METRICS_COL_LOSS] = STEP("loss", loss, METRICS_T_FLOAT),
    [METRICS_COL_VAL] = STEP("val_loss", val_loss, METRICS_T_VAL),
    [METRICS_COL_LR] = STEP("lr", lr, METRICS_T_FLOAT),
    [METRICS_COL_GNORM] = STEP("grad_norm", grad_norm, METRICS_T_FLOAT),
    [METRICS_COL_TPS] = STEP("tokens_per_s", tokens_per_s, METRICS_T_RATE),
    [METRICS_COL_SCALE] = STEP("loss_scale", loss_scale, METRICS_T_FLOAT),
    [METRICS_COL_SKIPPED] = STEP("skipped", skipped, METRICS_T_INT),
    [METRICS_COL_LOGZ] = STEP("logz_mean", logz_mean, METRICS_T_FLOAT),
    [METRICS_COL_LOGIT_MAX] = STEP("logit_max", logit_max, METRICS_T_FLOAT),
    [METRICS_COL_ZTERM] = STEP("z_loss_term", z_loss_term, METRICS_T_FLOAT),
    [METRICS_COL_OUT_CHANGE] = STEP("out_change", out_change, METRICS_T_SPARSE),
};
#undef STEP
#define N_MEASURED ((int)(sizeof measured / sizeof measured[0]))
_Static_assert(N_MEASURED <= METRICS_STEP_MAX, "more measured columns than bits of unknown");
_Static_assert(METRICS_STEP_MAX <= sizeof(unsigned) * 8, "a bit of unknown per step column");

/* The step columns, built once from measured[] and the settings table. */
static struct {
    pthread_once_t once;
    int n;
    metrics_col col[METRICS_STEP_MAX];
    char name[METRICS_STEP_MAX][32];
} steps = {.once = PTHREAD_ONCE_INIT};

/* A table that does not fit (two columns at one index, a hole, an index
 * past METRICS_STEP_MAX) is a programming error of a new row: said at
 * once, by name, on the first use (every test and run). */
static void steps_fail(const char *what, const char *name)
{
    fprintf(stderr, "normscope: the step columns: %s (%s)\n", what, name);
    abort();
}

static void steps_build(void)
{
    int last = N_MEASURED - 1;
    for (int i = 0; i < settings_count(); i++) {
        const ns_setting *s = settings_row(i);
        int k = s->step_col;
        if (!k)
            continue;
        if (k < 0 || k >= METRICS_STEP_MAX)
            steps_fail("step_col past METRICS_STEP_MAX", s->name);
        if ((k < N_MEASURED && measured[k].name) || steps.col[k].setting)
            steps_fail("two columns at one step_col", s->name);
        settings_column(s, steps.name[k], sizeof steps.name[k]);
        steps.col[k] = (metrics_col){steps.name[k], 0, METRICS_T_SETTING, s};
        last = k > last ? k : last;
    }
    for (int k = 0; k <= last; k++) {
        if (k < N_MEASURED && measured[k].name)
            steps.col[k] = measured[k];
        else if (!steps.col[k].setting)
            steps_fail("no column at an index before the last", "a hole");
    }
    steps.n = last + 1;
}

int metrics_step_ncols(void)
{
    pthread_once(&steps.once, steps_build);
    return steps.n;
}

const metrics_col *metrics_step_col(int k)
{
    pthread_once(&steps.once, steps_build);
    return &steps.col[k];
}

int metrics_step_col_named(int k)
{
    const ns_setting *s = metrics_step_col(k)->setting;
    return s && (s->type == SET_ENUM || s->type == SET_ONOFF || s->type == SET_AUTO ||
                 s->type == SET_PRESENCE);
}

double metrics_setting(const step_metrics *m, const char *col)
{
    int k = metrics_step_col_find(col, strlen(col));
    return k >= 0 && metrics_step_col(k)->setting ? m->set[k] : NAN;
}

int metrics_setting_known(const step_metrics *m, const char *col)
{
    int k = metrics_step_col_find(col, strlen(col));
    return k >= 0 && metrics_known(m, k);
}

void metrics_set_setting(step_metrics *m, const char *col, double v)
{
    int k = metrics_step_col_find(col, strlen(col));
    if (k >= 0)
        metrics_step_col_set_value(m, k, v);
}

#define LAYER(n, field) {n, offsetof(layer_metrics, field), METRICS_T_FLOAT, 0}
const metrics_col metrics_layer_cols[METRICS_LAYER_COLS] = {
    [METRICS_LC_GRAD_ATTN] = LAYER("grad_attn", grad_attn),
    [METRICS_LC_GRAD_FFN] = LAYER("grad_ffn", grad_ffn),
    [METRICS_LC_GRAD_LN] = LAYER("grad_ln", grad_ln),
    [METRICS_LC_ACT_MAX] = LAYER("act_max", act_max),
    [METRICS_LC_RESID_MAX] = LAYER("resid_max", resid_max),
    [METRICS_LC_RESID_RMS] = LAYER("resid_rms", resid_rms),
    [METRICS_LC_UPDATE] = LAYER("update_ratio", update_ratio),
    [METRICS_LC_OVERFLOW] = LAYER("overflow", overflow),
    [METRICS_LC_UNDERFLOW] = LAYER("underflow", underflow),
    [METRICS_LC_HEADROOM] = LAYER("headroom", headroom),
    [METRICS_LC_ATTN_LOGIT] = LAYER("attn_logit_max", attn_logit_max),
    [METRICS_LC_ATTN_ENTROPY] = LAYER("attn_entropy", attn_entropy),
    [METRICS_LC_BRANCH] = LAYER("branch_ratio", branch_ratio),
    [METRICS_LC_NORM_IN] = LAYER("norm_in_rms", norm_in_rms),
};
#undef LAYER

static float layer_col(const layer_metrics *l, int k)
{
    float v;
    memcpy(&v, (const char *)l + metrics_layer_cols[k].offset, sizeof v);
    return v;
}

static int col_find(const metrics_col *t, int n, const char *name, size_t len)
{
    for (int k = 0; k < n; k++)
        if (strlen(t[k].name) == len && !memcmp(t[k].name, name, len))
            return k;
    return -1;
}

int metrics_layer_col_find(const char *name, size_t len)
{
    return col_find(metrics_layer_cols, METRICS_LAYER_COLS, name, len);
}

int metrics_step_col_find(const char *name, size_t len)
{
    return col_find(metrics_step_col(0), metrics_step_ncols(), name, len);
}

float metrics_layer_col_get(const layer_metrics *l, int k)
{
    return k >= 0 && k < METRICS_LAYER_COLS ? layer_col(l, k) : NAN;
}

void metrics_layer_col_set(layer_metrics *l, int k, float v)
{
    if (k >= 0 && k < METRICS_LAYER_COLS)
        memcpy((char *)l + metrics_layer_cols[k].offset, &v, sizeof v);
}

static void num_text(char *b, size_t n, double x);

static void *field_of(step_metrics *m, int k) { return (char *)m + metrics_step_col(k)->offset; }
static const void *cfield_of(const step_metrics *m, int k)
{
    return (const char *)m + metrics_step_col(k)->offset;
}

/* A number of a setting column as its row's field holds it: a float
 * row's rounded to a float, so a value read back prints as written. */
static double setting_number(const ns_setting *s, double v)
{
    return s->type == SET_REAL || s->type == SET_BETAS || s->type == SET_LOSS_SCALE
               ? (double)(float)v : v;
}

int metrics_step_col_set_num(step_metrics *m, int k, double v)
{
    void *p = field_of(m, k);
    switch (metrics_step_col(k)->type) {
    case METRICS_T_LONG: *(long *)p = isfinite(v) && fabs(v) < 1e15 ? (long)v : 0; return 0;
    case METRICS_T_VAL: m->has_val = !isnan(v); /* fall through */
    case METRICS_T_FLOAT:
    case METRICS_T_SPARSE: *(float *)p = (float)v; return 0;
    case METRICS_T_RATE: *(double *)p = v; return 0;
    case METRICS_T_INT: *(int *)p = isfinite(v) && v != 0; return 0;
    case METRICS_T_SETTING:
        if (metrics_step_col_named(k))
            return -1;
        m->set[k] = setting_number(metrics_step_col(k)->setting, v);
        return 0;
    default: return -1;
    }
}

int metrics_step_col_set_value(step_metrics *m, int k, double v)
{
    const ns_setting *s = metrics_step_col(k)->setting;
    if (!s)
        return metrics_step_col_set_num(m, k, v);
    if (s->type == SET_ONOFF || s->type == SET_PRESENCE)
        v = v != 0;
    m->set[k] = metrics_step_col_named(k) ? (double)(int)v : setting_number(s, v);
    return 0;
}

int metrics_step_col_set_name(step_metrics *m, int k, const char *s)
{
    double v;
    char why[8];
    if (!metrics_step_col_named(k) ||
        settings_parse_number(metrics_step_col(k)->setting, s, &v, why, sizeof why) != 0)
        return -1;
    m->set[k] = v;
    return 0;
}

/* Setting column k's value v by name (the enums, on/off), or NULL for a
 * number */
static const char *setting_name(int k, double v)
{
    const ns_setting *s = metrics_step_col(k)->setting;
    if (!metrics_step_col_named(k))
        return NULL;
    if (s->type == SET_ENUM)
        return v >= 0 && v < s->n_names ? s->names[(int)v] : "?";
    return v < 0 ? "auto" : v ? "on" : "off";
}

/* A column's name value (the enums, on/off), or NULL for a number */
static const char *col_name_value(const step_metrics *m, int k)
{
    return metrics_step_col(k)->setting ? setting_name(k, m->set[k]) : NULL;
}

void metrics_setting_text(int k, double v, char *b, size_t n)
{
    const char *name = setting_name(k, v);
    if (name)
        snprintf(b, n, "%s", name);
    else
        num_text(b, n, setting_number(metrics_step_col(k)->setting, v));
}

int metrics_layer_gnorm_known(const layer_metrics *l)
{
    return metrics_layer_known(l, METRICS_LC_GRAD_ATTN) ||
           metrics_layer_known(l, METRICS_LC_GRAD_FFN) || metrics_layer_known(l, METRICS_LC_GRAD_LN);
}

float metrics_layer_gnorm(const layer_metrics *l)
{
    if (!metrics_layer_gnorm_known(l))
        return NAN;
    double sq = 0;
    for (int k = METRICS_LC_GRAD_ATTN; k <= METRICS_LC_GRAD_LN; k++)
        if (metrics_layer_known(l, k)) {
            double v = layer_col(l, k);
            sq += v * v;
        }
    return (float)sqrt(sq);
}

void metrics_spike_reset(metrics_spike *w, metrics_spike_kind kind)
{
    memset(w, 0, sizeof *w);
    w->ratio = kind == METRICS_SPIKE_LOSS ? METRICS_SPIKE_LOSS_RATIO : METRICS_SPIKE_GNORM_RATIO;
    w->sustain = kind == METRICS_SPIKE_LOSS ? 1 : 2;
    w->last_warn = -METRICS_SPIKE_QUIET; /* the quiet is between warnings: the
                                          * first may come at METRICS_SPIKE_MIN */
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of the n values kept (a copy on the stack is sorted). */
static double window_median(const metrics_spike *w, long n)
{
    double v[METRICS_SPIKE_WINDOW];
    memcpy(v, w->v, (size_t)n * sizeof v[0]);
    qsort(v, (size_t)n, sizeof v[0], cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* How far x is above the window: its z-score, and the median (computed
 * only when z passes: the one sort). */
static double spike_z(const metrics_spike *w, long n, double x, double *med)
{
    double mean = 0, var = 0;
    for (long i = 0; i < n; i++)
        mean += w->v[i];
    mean /= n;
    for (long i = 0; i < n; i++)
        var += (w->v[i] - mean) * (w->v[i] - mean);
    double sd = sqrt(var / n);
    double z = sd > 0 ? (x - mean) / sd : 0;
    *med = z > METRICS_SPIKE_Z ? window_median(w, n) : 0;
    return z;
}

int metrics_spike_check(metrics_spike *w, long step, double x, const char *what, char *msg,
                        size_t msglen)
{
    if (!isfinite(x))
        return 0;
    int spike = 0;
    long n = w->n < METRICS_SPIKE_WINDOW ? w->n : METRICS_SPIKE_WINDOW;
    if (w->cand) { /* the step after a first one: still high? */
        spike = x > w->cand_med * w->ratio;
        if (spike) {
            snprintf(msg, msglen,
                     "warning: %s spike at step %ld: %.4g (%.1f sd, %.1fx the median of %ld "
                     "steps), then %.4g",
                     what, w->cand, w->cand_x, w->cand_z, w->cand_x / w->cand_med, n, x);
            w->last_warn = step;
        }
        w->cand = 0;
    } else if (n >= METRICS_SPIKE_MIN && step - w->last_warn >= METRICS_SPIKE_QUIET) {
        double med, z = spike_z(w, n, x, &med);
        if (z > METRICS_SPIKE_Z && x > med * w->ratio) {
            w->cand = step, w->cand_x = x, w->cand_z = z, w->cand_med = med;
            if (w->sustain <= 1) {
                snprintf(msg, msglen,
                         "warning: %s spike at step %ld: %.4g (%.1f sd, %.1fx the median of %ld "
                         "steps)",
                         what, step, x, z, x / med, n);
                w->last_warn = step;
                w->cand = 0;
                spike = 1;
            }
        }
    }
    w->v[w->n % METRICS_SPIKE_WINDOW] = x;
    w->n++;
    return spike;
}

void metrics_csv_header_fields(FILE *f, int n_layer, const char *prefix)
{
    for (int k = 0; k < metrics_step_ncols(); k++)
        fprintf(f, "%s%s%s", k ? "," : "", prefix, metrics_step_col(k)->name);
    for (int i = 0; i < n_layer; i++)
        for (int k = 0; k < METRICS_LAYER_COLS; k++)
            fprintf(f, ",%sl%d_%s", prefix, i, metrics_layer_cols[k].name);
}

void metrics_csv_header(FILE *f, int n_layer)
{
    metrics_csv_header_fields(f, n_layer, "");
    metrics_csv_state_header(f, "");
    fputc('\n', f);
}

void metrics_csv_state_header(FILE *f, const char *prefix)
{
    fprintf(f, ",%sstate,%sfirst_nonfinite", prefix, prefix);
}

const char *metrics_state_name(const step_metrics *m)
{
    return m->nonfinite  ? "diverged"
           : m->exploded ? "exploded"
           : m->stalled  ? "stalled"
           : m->fixed    ? "fixed"
                         : "";
}

void metrics_csv_state_fields(FILE *f, const step_metrics *m)
{
    fprintf(f, ",%s,", metrics_state_name(m));
    for (const char *p = m->fault; *p && p < m->fault + sizeof m->fault; p++)
        fputc(*p == ',' ? ';' : *p, f);
}

void metrics_print_num(FILE *f, double x, int digits)
{
    if (isnan(x))
        fputs("nan", f);
    else if (isinf(x))
        fputs(x > 0 ? "inf" : "-inf", f);
    else
        fprintf(f, "%.*g", digits, x);
}

void metrics_csv_float(FILE *f, double x)
{
    char b[32];
    num_text(b, sizeof b, x);
    fputs(b, f);
}

void metrics_csv_row(FILE *f, const step_metrics *m)
{
    metrics_csv_fields(f, m);
    metrics_csv_state_fields(f, m);
    fputc('\n', f);
}

/* A number as the CSV writes it, into b */
static void num_text(char *b, size_t n, double x)
{
    if (isnan(x))
        snprintf(b, n, "nan");
    else if (isinf(x))
        snprintf(b, n, "%s", x > 0 ? "inf" : "-inf");
    else
        snprintf(b, n, "%.9g", x);
}

void metrics_step_col_text(const step_metrics *m, int k, char *b, size_t n)
{
    const void *p = cfield_of(m, k);
    const char *name = col_name_value(m, k);
    b[0] = 0;
    if (name) {
        snprintf(b, n, "%s", name);
        return;
    }
    switch (metrics_step_col(k)->type) {
    case METRICS_T_LONG: snprintf(b, n, "%ld", *(const long *)p); break;
    case METRICS_T_VAL:
        if (m->has_val)
            num_text(b, n, *(const float *)p);
        break;
    case METRICS_T_RATE: snprintf(b, n, "%.1f", *(const double *)p); break;
    case METRICS_T_INT: snprintf(b, n, "%d", *(const int *)p); break;
    case METRICS_T_SETTING: num_text(b, n, m->set[k]); break;
    default: num_text(b, n, *(const float *)p);
    }
}

/* One step column as a CSV cell (no separator) */
static void csv_cell(FILE *f, const step_metrics *m, int k)
{
    char b[64];
    metrics_step_col_text(m, k, b, sizeof b);
    fputs(b, f);
}

static void csv_cells(FILE *f, const step_metrics *m, const metrics_digits *d)
{
    for (int k = 0; k < metrics_step_ncols(); k++) {
        if (k)
            fputc(',', f);
        if (m->unknown & (1u << k))
            continue;
        if (d && d->step[k][0])
            fputs(d->step[k], f);
        else
            csv_cell(f, m, k);
    }
    for (int i = 0; i < m->n_layer; i++)
        for (int k = 0; k < METRICS_LAYER_COLS; k++) {
            fputc(',', f);
            if (!metrics_layer_known(&m->layer[i], k))
                continue; /* not said: empty, as an unknown step column */
            if (d && d->layer[i][k][0])
                fputs(d->layer[i][k], f);
            else
                metrics_csv_float(f, layer_col(&m->layer[i], k));
        }
}

void metrics_csv_fields(FILE *f, const step_metrics *m) { csv_cells(f, m, NULL); }

void metrics_csv_row_as_read(FILE *f, const step_metrics *m, const metrics_digits *d)
{
    csv_cells(f, m, d);
    metrics_csv_state_fields(f, m);
    fputc('\n', f);
}

static void put_json_float(FILE *f, double x)
{
    if (!isfinite(x))
        fputs("null", f);
    else
        fprintf(f, "%.9g", x);
}

void metrics_jsonl_row(FILE *f, const step_metrics *m) { metrics_jsonl_run(f, m, NULL); }

/* One step column as a JSON value */
static void json_cell(FILE *f, const step_metrics *m, int k)
{
    const void *p = cfield_of(m, k);
    const char *name = col_name_value(m, k);
    if (name) {
        fprintf(f, "\"%s\"", name);
        return;
    }
    switch (metrics_step_col(k)->type) {
    case METRICS_T_LONG: fprintf(f, "%ld", *(const long *)p); break;
    case METRICS_T_VAL:
        if (m->has_val)
            put_json_float(f, *(const float *)p);
        else
            fputs("null", f);
        break;
    case METRICS_T_RATE: fprintf(f, "%.1f", *(const double *)p); break;
    case METRICS_T_INT: fprintf(f, "%d", *(const int *)p); break;
    case METRICS_T_SETTING: put_json_float(f, m->set[k]); break;
    default: put_json_float(f, *(const float *)p);
    }
}

void metrics_jsonl_run(FILE *f, const step_metrics *m, const char *run)
{
    fputc('{', f);
    if (run)
        fprintf(f, "\"run\":\"%s\",", run);
    int first = 1;
    for (int k = 0; k < metrics_step_ncols(); k++) {
        if (m->unknown & (1u << k))
            continue;
        fprintf(f, "%s\"%s\":", first ? "" : ",", metrics_step_col(k)->name);
        json_cell(f, m, k);
        first = 0;
    }
    fprintf(f, ",\"state\":\"%s\"", metrics_state_name(m));
    if (m->fault[0])
        fprintf(f, ",\"first_nonfinite\":\"%s\"", m->fault);
    for (int i = 0; i < m->n_layer; i++)
        for (int k = 0; k < METRICS_LAYER_COLS; k++) {
            if (!metrics_layer_known(&m->layer[i], k))
                continue;
            fprintf(f, ",\"l%d_%s\":", i, metrics_layer_cols[k].name);
            put_json_float(f, layer_col(&m->layer[i], k));
        }
    fputs("}\n", f);
}
