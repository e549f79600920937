/* plot_data.c - the rows a figure is drawn from: a run's --csv or --jsonl
 * read line by line into columns per run (a --compare file holds two), or
 * a live view's snapshot.
 *
 * Only the columns a figure uses are kept: step, loss, val_loss, the
 * settings (to mark where one changed), the loss scale, the state, and
 * every per-layer column of the table (metrics_layer_cols, by index). A
 * line that is neither a header nor a row is skipped and counted, never
 * fatal: a followed stream's "event" and "format" lines are skipped on
 * purpose.
 *
 * Column names come from the table the writers walk (metrics.h), JSON
 * lines through the one JSONL reader (jsonl.h).
 * Not here: drawing (plot.c), the writers of these files (metrics.c).
 */
#include "plot.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>

#include "csv.h"
#include "jsonl.h"
#include "metrics.h"

/* Settings whose change between two rows is marked on the loss chart:
 * the step columns that are a setting's (metrics.h), set[k] and has_set[k]
 * at their column k. */
static int is_set(int k)
{
    return k >= 0 && k < metrics_step_ncols() && metrics_step_col(k)->setting;
}

static const char *set_name(int k) { return metrics_step_col(k)->name; }

enum {
    FLD_NONE = -1, FLD_STEP, FLD_LOSS, FLD_VAL, FLD_SCALE, FLD_STATE, FLD_FAULT, FLD_OC,
    FLD_LC0, /* layer column k of metrics_layer_cols is FLD_LC0 + k */
    FLD_SET0 = FLD_LC0 + METRICS_LAYER_COLS
};

/* One line's values for one run, before they become a row. */
typedef struct {
    int has_step;
    long step;
    float loss, val, oc;
    int maxl; /* highest layer index seen, -1 = none */
    float lc[METRICS_LAYER_COLS][NS_MAX_LAYERS];
    int seen_lc[METRICS_LAYER_COLS];
    char set[PLOT_NSET][PLOT_SETLEN];
    int has_set[PLOT_NSET];
    char scale[PLOT_SETLEN]; /* loss_scale as written; "" = none */
    int bad;                 /* state: diverged */
    char fault[64];          /* first_nonfinite */
    int seen_loss, seen_val, seen_oc;
} stage;

void plot_data_init(plot_data *d) { memset(d, 0, sizeof *d); }

static void run_free(plot_run *r)
{
    free(r->step);
    free(r->loss);
    free(r->val);
    free(r->oc);
    free(r->gn);
    for (int k = 0; k < METRICS_LAYER_COLS; k++)
        free(r->lc[k]);
    free(r->mark);
    free(r->live);
    free(r->bad);
}

void plot_data_free(plot_data *d)
{
    run_free(&d->run[0]);
    run_free(&d->run[1]);
    free(d->col_run);
    free(d->col_field);
    free(d->col_layer);
    free(d->ghost_step);
    free(d->ghost_loss[0]);
    free(d->ghost_loss[1]);
    memset(d, 0, sizeof *d);
}

static void stage_reset(stage *s)
{
    s->has_step = s->seen_loss = s->seen_val = s->seen_oc = 0;
    s->loss = s->val = NAN;
    s->oc = -INFINITY;
    s->maxl = -1;
    for (int k = 0; k < METRICS_LAYER_COLS; k++)
        for (int l = 0; l < NS_MAX_LAYERS; l++)
            s->lc[k][l] = NAN;
    memset(s->seen_lc, 0, sizeof s->seen_lc);
    memset(s->has_set, 0, sizeof s->has_set);
    s->scale[0] = 0;
    s->bad = 0;
    s->fault[0] = 0;
}

/* "b_loss" -> run 1, FLD_LOSS; "l3_grad_ffn" -> FLD_LC0 + METRICS_LC_GRAD_FFN,
 * layer 3: by the
 * column table the writers walk (metrics.h). */
static void map_name(const char *name, size_t len, int *run, int *field, int *layer)
{
    *run = 0;
    *field = FLD_NONE;
    *layer = 0;
    if (len > 2 && !strncmp(name, "b_", 2)) {
        *run = 1;
        name += 2;
        len -= 2;
    }
    int k = metrics_step_col_find(name, len);
    if (k == METRICS_COL_STEP || k == METRICS_COL_LOSS || k == METRICS_COL_VAL) {
        *field = k == METRICS_COL_STEP ? FLD_STEP : k == METRICS_COL_LOSS ? FLD_LOSS : FLD_VAL;
        return;
    }
    if (k == METRICS_COL_SCALE || k == METRICS_COL_OUT_CHANGE) {
        *field = k == METRICS_COL_SCALE ? FLD_SCALE : FLD_OC;
        return;
    }
    /* the state columns the writers put after all others (metrics.h) */
    if (len == 5 && !strncmp(name, "state", 5)) {
        *field = FLD_STATE;
        return;
    }
    if (len == 15 && !strncmp(name, "first_nonfinite", 15)) {
        *field = FLD_FAULT;
        return;
    }
    if (is_set(k))
        *field = FLD_SET0 + k;
    if (*field != FLD_NONE || len < 3 || name[0] != 'l' || name[1] < '0' || name[1] > '9')
        return;
    int l = 0;
    size_t i = 1;
    while (i < len && name[i] >= '0' && name[i] <= '9' && l < 1000)
        l = l * 10 + (name[i++] - '0');
    if (l >= NS_MAX_LAYERS || i >= len || name[i] != '_')
        return;
    int c = metrics_layer_col_find(name + i + 1, len - i - 1);
    *field = c >= 0 ? FLD_LC0 + c : FLD_NONE;
    *layer = l;
}

/* A number as the writers spell it: %.9g, nan, inf, -inf; empty or null
 * (val_loss not measured) is NaN. */
static float cell_num(const char *v, size_t len)
{
    char b[64];
    if (len == 0 || len >= sizeof b)
        return NAN;
    memcpy(b, v, len);
    b[len] = 0;
    char *end;
    double x = strtod(b, &end);
    return end == b || *end ? NAN : (float)x;
}

static void stage_put(stage *s, int field, int layer, const char *v, size_t len)
{
    if (field >= FLD_LC0 && field < FLD_LC0 + METRICS_LAYER_COLS) {
        s->lc[field - FLD_LC0][layer] = cell_num(v, len);
        s->seen_lc[field - FLD_LC0] |= layer == 0;
        if (layer > s->maxl)
            s->maxl = layer;
        return;
    }
    switch (field) {
    case FLD_STEP: {
        float x = cell_num(v, len);
        if (isfinite(x) && x >= 0) {
            s->has_step = 1;
            s->step = strtol(v, NULL, 10);
        }
        break;
    }
    case FLD_LOSS: s->loss = cell_num(v, len); s->seen_loss = 1; break;
    case FLD_VAL: /* empty (CSV) or null (JSON): not measured at this step */
        s->val = len == 0 || (len == 4 && !strncmp(v, "null", 4)) ? -INFINITY : cell_num(v, len);
        s->seen_val = 1;
        break;
    case FLD_OC: /* as val: empty or null where not measured */
        s->oc = len == 0 || (len == 4 && !strncmp(v, "null", 4)) ? -INFINITY : cell_num(v, len);
        s->seen_oc = 1;
        break;
    case FLD_NONE: break;
    case FLD_STATE: s->bad = len == 8 && !strncmp(v, "diverged", 8); break;
    case FLD_FAULT: {
        size_t n = len < sizeof s->fault - 1 ? len : sizeof s->fault - 1;
        memcpy(s->fault, v, n);
        s->fault[n] = 0;
        break;
    }
    case FLD_SCALE: {
        size_t n = len < PLOT_SETLEN - 1 ? len : PLOT_SETLEN - 1;
        memcpy(s->scale, v, n);
        s->scale[n] = 0;
        break;
    }
    default: {
        int k = field - FLD_SET0;
        size_t n = len < PLOT_SETLEN - 1 ? len : PLOT_SETLEN - 1;
        memcpy(s->set[k], v, n);
        s->set[k][n] = 0;
        s->has_set[k] = 1;
    }
    }
}

static int grow(void **p, size_t elem, long cap)
{
    void *q = realloc(*p, elem * (size_t)cap);
    if (!q)
        return -1;
    *p = q;
    return 0;
}

static int run_reserve(plot_run *r)
{
    if (r->n < r->cap)
        return 0;
    long cap = r->cap ? r->cap * 2 : 256;
    size_t per = (size_t)(r->L > 0 ? r->L : 1);
    if (grow((void **)&r->step, sizeof(long), cap) || grow((void **)&r->loss, sizeof(float), cap) ||
        grow((void **)&r->val, sizeof(float), cap) || grow((void **)&r->oc, sizeof(float), cap) ||
        grow((void **)&r->gn, sizeof(float) * per, cap) ||
        grow((void **)&r->bad, 1, cap))
        return -1;
    for (int k = 0; k < METRICS_LAYER_COLS; k++)
        if (grow((void **)&r->lc[k], sizeof(float) * per, cap))
            return -1;
    r->cap = cap;
    return 0;
}

static int run_mark(plot_run *r, long step, long rewind_to, const char *text)
{
    if (r->nmark == r->capmark) {
        int cap = r->capmark ? r->capmark * 2 : 16;
        if (grow((void **)&r->mark, sizeof(plot_mark), cap))
            return -1;
        r->capmark = cap;
    }
    plot_mark *m = &r->mark[r->nmark++];
    m->step = step;
    m->rewind_to = rewind_to;
    snprintf(m->text, sizeof m->text, "%s", text);
    return 0;
}

/* Where a rewind from step `from` back to step `to` is marked, inside a
 * plot whose steps start at `first`: at the step the replay branches off
 * the abandoned curve, or where that curve ends when the branch is the
 * axis itself (a rewind to step 0). */
static long rewind_at(long from, long to, long first) { return to > first ? to : from; }

/* A setting that differs from the previous row's becomes a marker at this
 * row's step; a step that went back (a rewind, to the step before this
 * row's) a marker at rewind_at. */
static int run_changes(plot_run *r, const stage *s)
{
    char text[PLOT_MARKLEN] = "";
    long at = s->step, to = -1;
    if (r->n > 0 && s->step <= r->step[r->n - 1]) {
        to = s->step - 1;
        at = rewind_at(r->step[r->n - 1], to, r->step[0]);
        snprintf(text, sizeof text, "rewind %ld \xe2\x86\x92 %ld", r->step[r->n - 1], to);
    }
    for (int k = 0; k < PLOT_NSET; k++) {
        if (!s->has_set[k] || !is_set(k))
            continue;
        if (r->have_set && strcmp(r->cur[k], s->set[k])) {
            size_t used = strlen(text);
            snprintf(text + used, sizeof text - used, "%s%s=%s", used ? ", " : "", set_name(k),
                     s->set[k]);
        }
        if (!r->have_set)
            memcpy(r->set[k], s->set[k], PLOT_SETLEN);
        memcpy(r->cur[k], s->set[k], PLOT_SETLEN);
    }
    if (!r->have_set)
        memcpy(r->scale0, s->scale, PLOT_SETLEN);
    r->have_set = 1;
    /* a rewind marked where the abandoned curve ends (to the axis's
     * start) stands across a replay that had the settings it changed
     * from its first step: its label says they are the replay's */
    size_t rw = strcspn(text, ",");
    if (to >= 0 && at != s->step && text[rw]) {
        char all[PLOT_MARKLEN];
        snprintf(all, sizeof all, "%.*s; the replay: %s", (int)rw, text, text + rw + 2);
        return run_mark(r, at, to, all);
    }
    return text[0] ? run_mark(r, at, to, text) : 0;
}

static int run_add(plot_run *r, const stage *s)
{
    if (r->n == 0 && r->cap == 0)
        r->L = s->maxl + 1;
    if (run_reserve(r) || run_changes(r, s))
        return -1;
    long i = r->n++;
    r->step[i] = s->step;
    r->loss[i] = s->loss;
    r->val[i] = s->val;
    r->oc[i] = s->oc;
    r->bad[i] = (char)s->bad;
    if (s->bad && !r->fault[0]) {
        snprintf(r->fault, sizeof r->fault, "%s", s->fault[0] ? s->fault : "not finite");
        r->fault_step = s->step;
    }
    r->has_loss |= s->seen_loss;
    r->has_val |= s->seen_val;
    r->has_oc |= s->seen_oc;
    for (int l = 0; l < r->L; l++) {
        double a = s->lc[METRICS_LC_GRAD_ATTN][l], f = s->lc[METRICS_LC_GRAD_FFN][l],
               n = s->lc[METRICS_LC_GRAD_LN][l];
        r->gn[i * r->L + l] = (float)sqrt(a * a + f * f + (isnan(n) ? 0 : n * n));
        for (int k = 0; k < METRICS_LAYER_COLS; k++)
            r->lc[k][i * r->L + l] = s->lc[k][l];
    }
    for (int k = 0; k < METRICS_LAYER_COLS; k++)
        r->has_lc[k] |= s->seen_lc[k];
    return 0;
}

/* A CSV line's fields (csv_split, the one splitter of normscope's CSV)
 * in a copy of it: *fields[0..return) point into *copy; the caller frees
 * both. -1 when out of memory. */
static int csv_fields(const char *p, size_t len, char **copy, char ***fields)
{
    int n = 1;
    for (size_t i = 0; i < len; i++)
        n += p[i] == ',';
    *copy = malloc(len + 1);
    *fields = malloc(sizeof(char *) * (size_t)n);
    if (!*copy || !*fields) {
        free(*copy);
        free(*fields);
        return -1;
    }
    memcpy(*copy, p, len);
    (*copy)[len] = 0;
    return csv_split(*copy, *fields, n);
}

/* The CSV header: where each column goes. */
static int csv_header(plot_data *d, const char *p, size_t len)
{
    char *copy, **f;
    int n = csv_fields(p, len, &copy, &f);
    if (n < 0)
        return -1;
    d->col_run = malloc(sizeof(short) * (size_t)n);
    d->col_field = malloc(sizeof(short) * (size_t)n);
    d->col_layer = malloc(sizeof(short) * (size_t)n);
    int rc = !d->col_run || !d->col_field || !d->col_layer ? -1 : 0;
    for (int c = 0; c < n && rc == 0; c++) {
        int run, field, layer;
        map_name(f[c], strlen(f[c]), &run, &field, &layer);
        d->col_run[c] = (short)run;
        d->col_field[c] = (short)field;
        d->col_layer[c] = (short)layer;
    }
    if (rc == 0)
        d->ncol = n;
    free(copy);
    free(f);
    return rc;
}

/* A row of as many fields as the header into the stages; another is
 * skipped and counted. -1 when out of memory. */
static int csv_row(plot_data *d, const char *p, size_t len, stage st[2])
{
    char *copy, **f;
    int n = csv_fields(p, len, &copy, &f);
    if (n < 0)
        return -1;
    if (n != d->ncol)
        d->skipped++;
    for (int c = 0; c < d->ncol && n == d->ncol; c++)
        stage_put(&st[d->col_run[c]], d->col_field[c], d->col_layer[c], f[c], strlen(f[c]));
    free(copy);
    free(f);
    return 0;
}

static const char *skip_ws(const char *p, const char *e)
{
    while (p < e && (*p == ' ' || *p == '\t'))
        p++;
    return p;
}

/* One JSON line's fields into the stages (jsonl.h, the one JSONL reader) */
typedef struct {
    stage *st;
    int run_b, skip;
} json_ctx;

static void json_field(void *ctx, const char *key, size_t kl, const jsonl_value *v)
{
    json_ctx *c = ctx;
    if (v->index >= 0 || c->skip)
        return;
    if ((kl == 5 && !memcmp(key, "event", 5)) || (kl == 6 && !memcmp(key, "format", 6))) {
        c->skip = 1; /* a followed stream's event and header lines */
        return;
    }
    if (kl == 3 && !memcmp(key, "run", 3)) {
        c->run_b = v->type == JSONL_STR && !strcmp(v->str, "b");
        return;
    }
    int run, field, layer;
    map_name(key, kl, &run, &field, &layer);
    if (field == FLD_NONE)
        return;
    const char *t = v->type == JSONL_STR ? v->str : v->type == JSONL_NUM ? v->raw
                    : v->type == JSONL_BOOL ? (v->num ? "1" : "0") : "null";
    size_t n = v->type == JSONL_STR ? v->len : v->type == JSONL_NUM ? v->rawlen : strlen(t);
    stage_put(&c->st[run], field, layer, t, n);
}

/* Returns 1 for a row, 0 for a line to skip quietly (an event, a header),
 * -1 for one that is not read. */
static int json_row(const char *p, size_t len, stage st[2], int *run_b)
{
    char *line = malloc(len + 1);
    if (!line)
        return -1;
    memcpy(line, p, len);
    line[len] = 0;
    json_ctx c = {st, 0, 0};
    char err[96];
    int rc = jsonl_parse(line, len, json_field, &c, err, sizeof err);
    free(line);
    *run_b = c.run_b;
    return rc != 0 ? -1 : c.skip ? 0 : 1;
}

int plot_data_line(plot_data *d, const char *line, size_t len, char *err, size_t errlen)
{
    stage st[2];
    d->lineno++;
    while (len && (line[len - 1] == '\r' || line[len - 1] == '\n'))
        len--;
    const char *p = skip_ws(line, line + len);
    if (p == line + len)
        return 0;
    stage_reset(&st[0]);
    stage_reset(&st[1]);
    int run_b = 0;
    if (*p == '{') {
        int r = json_row(p, (size_t)(line + len - p), st, &run_b);
        if (r <= 0) {
            d->skipped += r < 0;
            return 0;
        }
    } else if (d->ncol == 0) {
        if (csv_header(d, p, (size_t)(line + len - p))) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        return 0;
    } else if (csv_row(d, p, (size_t)(line + len - p), st)) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int r = 0; r < 2; r++) {
        if (!st[r].has_step)
            continue;
        if (run_add(&d->run[run_b ? 1 : r], &st[r])) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    }
    return 0;
}

/* Which rows are on the timeline the run ended on: a row is abandoned
 * when a later row has the same or an earlier step (a rewind replayed
 * it). 0, or -1 when out of memory. */
static int run_timeline(plot_run *r)
{
    free(r->live);
    r->live = malloc((size_t)(r->n > 0 ? r->n : 1));
    if (!r->live)
        return -1;
    r->abandoned = 0;
    long lo = 0;
    for (long i = r->n - 1; i >= 0; i--) {
        r->live[i] = i == r->n - 1 || r->step[i] < lo;
        r->abandoned += !r->live[i];
        if (i == r->n - 1 || r->step[i] < lo)
            lo = r->step[i];
    }
    return 0;
}

/* "a: " and what run r's first row says for each recorded setting the
 * runs differ in ("norm=pre, warmup=on"); the loss scale in force when no
 * setting differs (the loss-scale setting itself is not a column). */
static int run_name(const plot_run *r, const plot_run *o, const char *who, char *b, size_t n)
{
    int w = snprintf(b, n, "%s", who), any = 0;
    size_t used = w > 0 && (size_t)w < n ? (size_t)w : n - 1;
    for (int k = 0; k < PLOT_NSET && used < n - 1; k++)
        if (is_set(k) && strcmp(r->set[k], o->set[k])) {
            char flag[32]; /* spelled as the flag and the live view's label: fp32-norms */
            snprintf(flag, sizeof flag, "%s", set_name(k));
            for (char *c = flag; *c; c++)
                *c = *c == '_' ? '-' : *c;
            w = snprintf(b + used, n - used, "%s%s=%s", any ? ", " : ": ", flag, r->set[k]);
            used = w > 0 && used + (size_t)w < n ? used + (size_t)w : n - 1;
            any = 1;
        }
    if (!any && strcmp(r->scale0, o->scale0)) {
        snprintf(b + used, n - used, ": loss scale %s", r->scale0);
        any = 1;
    }
    return any;
}

/* Each run's timeline; a comparison's runs named by the settings they
 * differ in. */
void plot_data_finish(plot_data *d)
{
    d->nruns = d->run[1].n > 0 ? 2 : 1;
    for (int r = 0; r < d->nruns; r++)
        if (run_timeline(&d->run[r]))
            d->run[r].n = 0; /* out of memory: no rows to draw, said as such */
    if (d->nruns < 2)
        return;
    plot_run *a = &d->run[0], *b = &d->run[1];
    int named = run_name(a, b, "a", a->label, sizeof a->label);
    run_name(b, a, "b", b->label, sizeof b->label);
    d->unnamed = !named;
}

int plot_read_lines(const char *path, plot_line_fn fn, void *r, char *err, size_t errlen)
{
    int std = !strcmp(path, "-");
    FILE *f = std ? stdin : fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int rc = 0;
    while (rc == 0 && (n = getline(&line, &cap, f)) >= 0)
        rc = fn(r, line, (size_t)n, err, errlen);
    if (rc == 0 && ferror(f)) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        rc = -1;
    }
    free(line);
    if (!std)
        fclose(f);
    return rc;
}

static int data_line(void *d, const char *line, size_t len, char *err, size_t errlen)
{
    return plot_data_line(d, line, len, err, errlen);
}

int plot_data_read(plot_data *d, const char *path, char *err, size_t errlen)
{
    int rc = plot_read_lines(path, data_line, d, err, errlen);
    plot_data_finish(d);
    return rc;
}

/* The settings a step ran with, as the writers spell them. */
static void stage_settings(stage *s, const step_metrics *m)
{
    for (int k = 0; k < metrics_step_ncols(); k++)
        if (is_set(k)) {
            metrics_step_col_text(m, k, s->set[k], PLOT_SETLEN);
            s->has_set[k] = 1;
        }
}

/* One history point of run `which` (0 = a, 1 = the twin b). The layers'
 * columns are known only for the last step. */
static int snap_point(plot_run *r, const trainer_snapshot *s, long i, int which, stage *st)
{
    const trainer_point *p = &s->hist[i % TRAINER_HIST];
    const step_metrics *last = &s->s.run[which].last;
    stage_reset(st);
    st->has_step = 1;
    st->step = p->step;
    float val = p->run[which].val_loss;
    st->loss = p->run[which].loss;
    st->val = isnan(val) ? -INFINITY : val; /* -inf: not measured */
    st->seen_loss = st->seen_val = 1;
    st->oc = p->run[which].oc_known ? p->run[which].out_change : -INFINITY;
    st->seen_oc = 1;
    st->maxl = s->s.n_layer - 1;
    int is_last = s->s.have_metrics && last->step == p->step;
    st->bad = which ? is_last && last->nonfinite : p->nonfinite;
    if (st->bad)
        snprintf(st->fault, sizeof st->fault, "%s", last->step == p->step ? last->fault : "");
    if (is_last)
        for (int l = 0; l < s->s.n_layer; l++)
            for (int k = 0; k < METRICS_LAYER_COLS; k++)
                st->lc[k][l] = metrics_layer_col_get(&last->layer[l], k);
    if (r->n == 0)
        stage_settings(st, last);
    if (run_add(r, st))
        return -1;
    if (!is_last) /* the heatmap's history: sqrt(attn^2 + mlp^2 + ln^2) of each run */
        for (int l = 0; l < r->L; l++)
            r->gn[(r->n - 1) * r->L + l] = (s->run[which].heat)[i % TRAINER_HIST][l];
    const char *mark = p->run[which].mark;
    if (!strncmp(mark, "rewind", 6) && s->s.ghost_n > 0 && p->step == s->s.ghost_first) {
        /* the latest rewind: marked as a file's rewind is */
        long from = s->s.ghost_first + s->s.ghost_n - 1, to = p->step - 1;
        long at = rewind_at(from, to, r->step[0]);
        char text[PLOT_MARKLEN];
        snprintf(text, sizeof text, "rewind %ld \xe2\x86\x92 %ld%s%s", from, to, mark[6] ? ", " : "",
                 mark[6] ? mark + 7 : "");
        return run_mark(r, at, to, text);
    }
    return mark[0] ? run_mark(r, p->step, -1, mark) : 0;
}

/* The curve the snapshot's latest rewind abandoned. 0, or -1 (out of memory). */
static int snap_ghost(plot_data *d, const trainer_snapshot *s)
{
    long n = s->s.ghost_n < TRAINER_HIST ? s->s.ghost_n : TRAINER_HIST;
    if (n <= 0)
        return 0;
    d->ghost_step = malloc((size_t)n * sizeof *d->ghost_step);
    d->ghost_loss[0] = malloc((size_t)n * sizeof(float));
    d->ghost_loss[1] = malloc((size_t)n * sizeof(float));
    if (!d->ghost_step || !d->ghost_loss[0] || !d->ghost_loss[1])
        return -1;
    for (long i = 0; i < n; i++) {
        d->ghost_step[i] = s->s.ghost_first + i;
        d->ghost_loss[0][i] = s->run[0].ghost[i];
        d->ghost_loss[1][i] = s->run[1].ghost[i];
    }
    d->ghost_n = n;
    return 0;
}

int plot_data_snapshot(plot_data *d, const trainer_snapshot *s)
{
    if (snap_ghost(d, s) != 0)
        return -1;
    stage st;
    int runs = s->s.compare ? 2 : 1;
    for (int w = 0; w < runs; w++) {
        for (long i = trainer_hist_first(&s->s); i < s->s.hist_total; i++)
            if (snap_point(&d->run[w], s, i, w, &st))
                return -1;
        /* what differs comes first, the rest after two spaces (twin_label) */
        const char *label = s->s.run[w].label, *rest = strstr(label, "  ");
        int len = rest ? (int)(rest - label) : (int)strlen(label);
        snprintf(d->run[w].label, sizeof d->run[w].label, "%.*s", len < 63 ? len : 63, label);
        if (run_timeline(&d->run[w]))
            return -1;
    }
    d->nruns = d->run[1].n > 0 ? 2 : 1;
    if (d->nruns == 1)
        d->run[0].label[0] = 0;
    return 0;
}
