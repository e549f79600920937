/* diagnose_state.c - the diagnosis' state as bytes, for a checkpoint
 * (diagnose.h: diag_state_save, diag_state_load). A resumed run goes on
 * with the baselines, the first steps, the window, the validations and
 * the warnings of the run it continues, as if it had not stopped.
 *
 * One list of fields (diag_fields) serves both ways, so save and load
 * cannot drift apart. Little-endian, field by field, never a struct dump.
 * Per-layer and setting columns are written under their names, so a
 * normscope with another column list loads what it knows and leaves the
 * rest not known (NaN, ""). A loaded state is checked before use: the
 * bytes are untrusted (a checkpoint is a file in a shared place).
 *
 * Not here: where the bytes travel (engine.c carries them opaquely in
 * the checkpoint), the rules (diagnose.c).
 */
#include "diagnose.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DIAG_STATE_MAGIC "NSDIAG\0\1"
#define DIAG_STATE_VERSION 2u
#define DIAG_STATE_MAX (4u << 20) /* bytes: far above any state's (64 layers: ~400 KiB) */

typedef struct {
    uint8_t *p;
    size_t n, cap, at;
    int load; /* 1: read into the fields; 0: write them */
    int bad;  /* out of memory (save) or the bytes ended (load) */
} dio;

static void io_raw(dio *x, void *v, size_t len)
{
    if (x->bad)
        return;
    if (x->load) {
        if (x->at + len > x->n) {
            x->bad = 1;
            return;
        }
        memcpy(v, x->p + x->at, len);
        x->at += len;
        return;
    }
    if (x->n + len > x->cap) {
        size_t cap = x->cap ? x->cap * 2 : 4096;
        while (cap < x->n + len)
            cap *= 2;
        uint8_t *q = realloc(x->p, cap);
        if (!q) {
            x->bad = 1;
            return;
        }
        x->p = q, x->cap = cap;
    }
    memcpy(x->p + x->n, v, len);
    x->n += len;
}

/* n bytes of *v, little-endian */
static void io_le(dio *x, uint64_t *v, int n)
{
    uint8_t b[8];
    for (int i = 0; i < n && !x->load; i++)
        b[i] = (uint8_t)(*v >> (8 * i));
    io_raw(x, b, (size_t)n);
    if (x->load && !x->bad) {
        *v = 0;
        for (int i = 0; i < n; i++)
            *v |= (uint64_t)b[i] << (8 * i);
    }
}

static void io_u64(dio *x, uint64_t *v)
{
    io_le(x, v, 8);
}

static void io_u32(dio *x, uint32_t *v)
{
    uint64_t u = *v;
    io_le(x, &u, 4);
    *v = (uint32_t)u;
}

static void io_long(dio *x, long *v)
{
    uint64_t u = (uint64_t)(int64_t)*v;
    io_u64(x, &u);
    if (x->load)
        *v = (long)(int64_t)u;
}

static void io_int(dio *x, int *v)
{
    uint32_t u = (uint32_t)*v;
    io_u32(x, &u);
    if (x->load)
        *v = (int)u;
}

static void io_f32(dio *x, float *v)
{
    uint32_t u;
    memcpy(&u, v, 4);
    io_u32(x, &u);
    if (x->load)
        memcpy(v, &u, 4);
}

static void io_f64(dio *x, double *v)
{
    uint64_t u;
    memcpy(&u, v, 8);
    io_u64(x, &u);
    if (x->load)
        memcpy(v, &u, 8);
}

/* A string of a field of `size` bytes: its length, then its bytes; a
 * length that does not fit is bad. */
static void io_str(dio *x, char *s, size_t size)
{
    uint32_t len = x->load ? 0 : (uint32_t)strnlen(s, size - 1);
    io_u32(x, &len);
    if (x->load && len >= size)
        x->bad = 1;
    if (x->bad)
        return;
    io_raw(x, s, len);
    if (x->load)
        s[x->bad ? 0 : len] = 0;
}

/* The settings in force: their numbers, then the setting columns said
 * ("" not written), each under its name. */
static void io_settings(dio *x, diag_settings *s)
{
    io_f32(x, &s->lr_peak);
    io_f32(x, &s->clip);
    int *ints[] = {&s->warmup_on, &s->precision, &s->fp32_norms, &s->norm, &s->norm_kind,
                   &s->scale_dynamic};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        io_int(x, ints[i]);
    uint32_t cnt = 0;
    for (int k = 0; !x->load && k < metrics_step_ncols(); k++)
        cnt += s->col[k][0] != 0;
    io_u32(x, &cnt);
    if (x->load && cnt > METRICS_STEP_MAX)
        x->bad = 1;
    for (int k = 0, i = 0; i < (int)cnt && !x->bad; k++) {
        char name[32], text[DIAG_SET_TEXT];
        if (!x->load && !s->col[k][0])
            continue;
        if (!x->load) {
            snprintf(name, sizeof name, "%s", metrics_step_col(k)->name);
            memcpy(text, s->col[k], sizeof text);
        }
        io_str(x, name, sizeof name);
        io_str(x, text, sizeof text);
        int at = x->load ? metrics_step_col_find(name, strlen(name)) : k;
        if (x->load && at >= 0 && at < METRICS_STEP_MAX && !x->bad)
            memcpy(s->col[at], text, sizeof text); /* a column this build lacks: dropped */
        i++;
    }
}

static void io_finding(dio *x, diag_finding *f)
{
    int kind = (int)f->kind, rule = (int)f->rule;
    io_int(x, &kind);
    io_int(x, &rule);
    f->kind = (diag_kind)kind, f->rule = (diag_rule)rule;
    io_int(x, &f->layer);
    io_long(x, &f->step);
    for (int i = 0; i < 4; i++)
        io_f64(x, &f->value[i]);
    io_str(x, f->text, sizeof f->text);
    io_str(x, f->hint, sizeof f->hint);
    io_str(x, f->fix, sizeof f->fix);
    io_int(x, &f->fix_from);
    io_long(x, &f->fix_before);
}

/* The layer columns' names, in the writer's order; map[i]: this build's
 * index of the writer's column i (-1: not known here). */
static void io_layer_names(dio *x, int *map, uint32_t *ncols)
{
    *ncols = METRICS_LAYER_COLS;
    io_u32(x, ncols);
    if (x->load && *ncols > 4 * METRICS_LAYER_COLS + 64)
        x->bad = 1;
    for (uint32_t i = 0; i < *ncols && !x->bad; i++) {
        char name[32];
        if (!x->load)
            snprintf(name, sizeof name, "%s", metrics_layer_cols[i].name);
        io_str(x, name, sizeof name);
        if (i < (uint32_t)(4 * METRICS_LAYER_COLS + 64))
            map[i] = x->load ? metrics_layer_col_find(name, strlen(name)) : (int)i;
    }
}

/* The points kept, oldest first, L layers each. */
static void io_points(dio *x, diag *d, int L)
{
    int map[4 * METRICS_LAYER_COLS + 64];
    uint32_t ncols;
    io_layer_names(x, map, &ncols);
    long kept = d->n < DIAG_WINDOW ? d->n : DIAG_WINDOW;
    for (long age = kept - 1; age >= 0 && !x->bad; age--) {
        diag_point *p = &d->hist[(d->n - 1 - age) % DIAG_WINDOW];
        if (x->load)
            for (int k = 0; k < METRICS_LAYER_COLS; k++)
                for (int l = 0; l < NS_MAX_LAYERS; l++)
                    p->lc[k][l] = NAN; /* a column the writer lacked: not known */
        io_long(x, &p->step);
        io_int(x, &p->updated);
        float *f[] = {&p->loss, &p->lr, &p->scale, &p->gnorm, &p->clip, &p->out_change};
        for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
            io_f32(x, f[i]);
        for (int l = 0; l < L; l++)
            io_f32(x, &p->grad[l]);
        for (uint32_t i = 0; i < ncols; i++)
            for (int l = 0; l < L; l++) {
                float v = map[i] >= 0 ? p->lc[map[i]][l] : NAN;
                io_f32(x, &v);
                if (x->load && map[i] >= 0)
                    p->lc[map[i]][l] = v;
            }
    }
}

/* Every field of the state, in one order for both ways. */
static void diag_fields(dio *x, diag *d)
{
    io_f64(x, &d->plateau);
    io_f64(x, &d->plateau_given);
    io_int(x, &d->n_layer);
    if (x->load && (d->n_layer < 0 || d->n_layer > NS_MAX_LAYERS))
        x->bad = 1;
    io_long(x, &d->n);
    if (x->load && (d->n < 0 || (double)d->n > 1e12))
        x->bad = 1;
    if (x->bad)
        return;
    io_points(x, d, d->n_layer);
    long *longs[] = {&d->last_step, &d->changed_at, &d->lr_since, &d->lr_raised_at,
                     &d->warmup_off_at, &d->diverged_at, &d->finite_run, &d->stall_run,
                     &d->stall_at, &d->stall_over, &d->blow_from, &d->head_left, &d->start_step,
                     &d->start_gnorm_step, &d->learn_from, &d->band_n, &d->band_last, &d->val_n,
                     &d->val_min_step, &d->val_last_step, &d->last_fault_step, &d->change_at,
                     &d->change_held, &d->trend_from, &d->resumed_blind, &d->exc_at,
                     &d->exc_last, &d->attn_base_step};
    for (size_t i = 0; i < sizeof longs / sizeof longs[0]; i++)
        io_long(x, longs[i]);
    int *ints[] = {&d->have_set, &d->div_seen, &d->stalled, &d->exploded, &d->vocab,
                   &d->val_above, &d->last_nonfinite, &d->exc_judged};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        io_int(x, ints[i]);
    float *floats[] = {&d->lr_tolerated, &d->start_loss, &d->start_gnorm, &d->band_act,
                       &d->first_upd_lr, &d->band_loss, &d->band_oc, &d->val_min, &d->val_last,
                       &d->val_min_train, &d->val_last_train};
    for (size_t i = 0; i < sizeof floats / sizeof floats[0]; i++)
        io_f32(x, floats[i]);
    double *doubles[] = {&d->stall_over_loss, &d->first_loss, &d->learn_loss, &d->change_loss,
                         &d->exc_loss, &d->exc_var, &d->exc_now};
    for (size_t i = 0; i < sizeof doubles / sizeof doubles[0]; i++)
        io_f64(x, doubles[i]);
    for (int i = 0; i < DIAG_STALL_BACK; i++)
        io_f64(x, &d->stall_mean[i]);
    for (int l = 0; l < d->n_layer; l++) {
        io_f32(x, &d->attn_base[l]);
        io_f32(x, &d->attn_ent_base[l]);
    }
    uint32_t warned = d->warned;
    io_u32(x, &warned);
    d->warned = warned;
    io_settings(x, &d->set);
    io_settings(x, &d->diverged_set);
    io_finding(x, &d->last_diagnosis);
    io_str(x, d->last_fault, sizeof d->last_fault);
    io_str(x, d->change_what, sizeof d->change_what);
    io_str(x, d->change_undo, sizeof d->change_undo);
    io_str(x, d->exc_what, sizeof d->exc_what);
    io_str(x, d->exc_undo, sizeof d->exc_undo);
    long *spike_longs[] = {&d->spike_at, &d->spike_end, &d->spike_peak_step};
    for (size_t i = 0; i < sizeof spike_longs / sizeof spike_longs[0]; i++)
        io_long(x, spike_longs[i]);
    io_int(x, &d->spike_judged);
    io_f32(x, &d->spike_peak);
    io_f64(x, &d->spike_from);
    io_f64(x, &d->spike_var);
}

/* The values a rule indexes with, or divides by: the rest are numbers. */
static int state_bad(const diag *d)
{
    const diag_finding *f = &d->last_diagnosis;
    return d->stall_run < 0 || d->band_n < 0 || d->val_n < 0 || d->val_above < 0 ||
           d->finite_run < 0 || d->vocab < 0 || d->last_step < 0 || d->start_step < 0 ||
           (int)f->kind < 0 || (int)f->kind > DIAG_DIAGNOSIS || (int)f->rule < 0 ||
           (int)f->rule >= DIAG_R_COUNT || f->layer < -1 || f->layer >= NS_MAX_LAYERS ||
           f->fix_from < DIAG_FROM_SNAPSHOT || f->fix_from > DIAG_FROM_HERE;
}

void diag_state_unknown(diag *d, long step) { d->resumed_blind = step; }

int diag_state_save(const diag *d, uint8_t **out, size_t *n)
{
    dio x = {0};
    uint32_t ver = DIAG_STATE_VERSION;
    io_raw(&x, (void *)DIAG_STATE_MAGIC, 8);
    io_u32(&x, &ver);
    diag_fields(&x, (diag *)d); /* writing: d is only read */
    if (x.bad) {
        free(x.p);
        return -1;
    }
    *out = x.p, *n = x.n;
    return 0;
}

int diag_state_load(diag *d, const uint8_t *p, size_t n, char *why, size_t len)
{
    dio x = {(uint8_t *)p, n, n, 0, 1, 0}; /* reading: p is only read */
    char magic[8];
    uint32_t ver = 0;
    if (n > DIAG_STATE_MAX) {
        snprintf(why, len, "the diagnosis' state is %zu bytes, more than any run's", n);
        return -1;
    }
    io_raw(&x, magic, 8);
    io_u32(&x, &ver);
    if (x.bad || memcmp(magic, DIAG_STATE_MAGIC, 8) != 0 || ver != DIAG_STATE_VERSION) {
        snprintf(why, len, "the diagnosis' state is not one this normscope reads (version %u, "
                 "reads %u)", ver, DIAG_STATE_VERSION);
        return -1;
    }
    diag *t = malloc(sizeof *t); /* ~1 MiB: not on a thread's stack */
    if (!t) {
        snprintf(why, len, "out of memory");
        return -1;
    }
    diag_init(t, NAN);
    diag_fields(&x, t);
    int bad = x.bad || x.at != n || state_bad(t);
    if (bad)
        snprintf(why, len, "the diagnosis' state is malformed (%s at byte %zu of %zu)",
                 x.bad ? "it ends early or a field is too long" : x.at != n ?
                 "bytes after its fields" : "a field out of range", x.at, n);
    else
        *d = *t;
    free(t);
    return bad ? -1 : 0;
}
