/* metrics.c - CSV and JSONL forms of a step's metrics, the per-layer
 * column names, and the loss-spike rule shared by the engine and the
 * stream reader. */
#include "metrics.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const layer_cols[] = {"grad_attn", "grad_ffn",     "grad_ln",  "act_max",
                                         "resid_max", "resid_rms",    "update_ratio",
                                         "overflow",  "underflow",    "headroom"};
enum { N_LAYER_COLS = METRICS_LAYER_COLS };

static float layer_col(const layer_metrics *l, int k)
{
    switch (k) {
    case 0: return l->grad_attn;
    case 1: return l->grad_ffn;
    case 2: return l->grad_ln;
    case 3: return l->act_max;
    case 4: return l->resid_max;
    case 5: return l->resid_rms;
    case 6: return l->update_ratio;
    case 7: return l->overflow;
    case 8: return l->underflow;
    default: return l->headroom;
    }
}

int metrics_layer_col_find(const char *name, size_t len)
{
    for (int k = 0; k < N_LAYER_COLS; k++)
        if (strlen(layer_cols[k]) == len && !memcmp(layer_cols[k], name, len))
            return k;
    return -1;
}

void metrics_layer_col_set(layer_metrics *l, int k, float v)
{
    float *const field[N_LAYER_COLS] = {&l->grad_attn, &l->grad_ffn,     &l->grad_ln,
                                        &l->act_max,   &l->resid_max,    &l->resid_rms,
                                        &l->update_ratio, &l->overflow,  &l->underflow,
                                        &l->headroom};
    if (k >= 0 && k < N_LAYER_COLS)
        *field[k] = v;
}

float metrics_layer_gnorm(const layer_metrics *l)
{
    double a = l->grad_attn, f = l->grad_ffn, n = l->grad_ln;
    return (float)sqrt(a * a + f * f + n * n);
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

static const char *const main_cols[] = {
    "step",      "loss",  "val_loss", "lr",   "grad_norm",  "tokens_per_s", "norm",
    "norm_kind", "warmup", "clip",    "precision", "fp32_norms", "loss_scale", "skipped"};

void metrics_csv_header_fields(FILE *f, int n_layer, const char *prefix)
{
    for (size_t k = 0; k < sizeof main_cols / sizeof main_cols[0]; k++)
        fprintf(f, "%s%s%s", k ? "," : "", prefix, main_cols[k]);
    for (int i = 0; i < n_layer; i++)
        for (int k = 0; k < N_LAYER_COLS; k++)
            fprintf(f, ",%sl%d_%s", prefix, i, layer_cols[k]);
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
    return m->nonfinite ? "diverged" : m->stalled ? "stalled" : "";
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

void metrics_csv_float(FILE *f, double x) { metrics_print_num(f, x, 9); }

void metrics_csv_row(FILE *f, const step_metrics *m)
{
    metrics_csv_fields(f, m);
    metrics_csv_state_fields(f, m);
    fputc('\n', f);
}

void metrics_csv_fields(FILE *f, const step_metrics *m)
{
    fprintf(f, "%ld,", m->step);
    metrics_csv_float(f, m->loss);
    fputc(',', f);
    if (m->has_val)
        metrics_csv_float(f, m->val_loss);
    fputc(',', f);
    metrics_csv_float(f, m->lr);
    fputc(',', f);
    metrics_csv_float(f, m->grad_norm);
    fprintf(f, ",%.1f,%s,%s,%s,", m->tokens_per_s, norm_place_name(m->norm),
            norm_kind_name(m->norm_kind), m->warmup_on ? "on" : "off");
    metrics_csv_float(f, m->clip);
    fprintf(f, ",%s,%s,", numfmt_name(m->precision), m->fp32_norms ? "on" : "off");
    metrics_csv_float(f, m->loss_scale);
    fprintf(f, ",%d", m->skipped);
    for (int i = 0; i < m->n_layer; i++)
        for (int k = 0; k < N_LAYER_COLS; k++) {
            fputc(',', f);
            metrics_csv_float(f, layer_col(&m->layer[i], k));
        }
}

static void put_json_float(FILE *f, double x)
{
    if (!isfinite(x))
        fputs("null", f);
    else
        fprintf(f, "%.9g", x);
}

void metrics_jsonl_row(FILE *f, const step_metrics *m) { metrics_jsonl_run(f, m, NULL); }

void metrics_jsonl_run(FILE *f, const step_metrics *m, const char *run)
{
    fputc('{', f);
    if (run)
        fprintf(f, "\"run\":\"%s\",", run);
    fprintf(f, "\"step\":%ld,\"loss\":", m->step);
    put_json_float(f, m->loss);
    fputs(",\"val_loss\":", f);
    if (m->has_val)
        put_json_float(f, m->val_loss);
    else
        fputs("null", f);
    fputs(",\"lr\":", f);
    put_json_float(f, m->lr);
    fputs(",\"grad_norm\":", f);
    put_json_float(f, m->grad_norm);
    fprintf(f, ",\"tokens_per_s\":%.1f,\"norm\":\"%s\",\"norm_kind\":\"%s\",\"warmup\":\"%s\",\"clip\":",
            m->tokens_per_s, norm_place_name(m->norm), norm_kind_name(m->norm_kind),
            m->warmup_on ? "on" : "off");
    put_json_float(f, m->clip);
    fprintf(f, ",\"precision\":\"%s\",\"fp32_norms\":\"%s\",\"loss_scale\":",
            numfmt_name(m->precision), m->fp32_norms ? "on" : "off");
    put_json_float(f, m->loss_scale);
    fprintf(f, ",\"skipped\":%d,\"state\":\"%s\"", m->skipped, metrics_state_name(m));
    if (m->fault[0])
        fprintf(f, ",\"first_nonfinite\":\"%s\"", m->fault);
    for (int i = 0; i < m->n_layer; i++)
        for (int k = 0; k < N_LAYER_COLS; k++) {
            fprintf(f, ",\"l%d_%s\":", i, layer_cols[k]);
            put_json_float(f, layer_col(&m->layer[i], k));
        }
    fputs("}\n", f);
}
