/* stream.c - the metrics stream reader (stream.h): a parser of one JSON
 * object per line, a follower of a growing file (tail -f), and the
 * trainer_snapshot it builds for the dashboard, with no engine behind it.
 *
 * Not here: drawing and keys (tui_follow.c), the writer of a stream
 * (metrics.c writes --jsonl; the Python probe writes the rest).
 */
#include "stream.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "atomicio.h"
#include "jsonl.h"
#include "tail.h"
#include "config.h"
#include "metrics.h"
#include "nsmath.h"
#include "nstext.h"
#include "nstime.h"
#include "numfmt.h"

static int dig(char ch) { return ch >= '0' && ch <= '9'; }

/* ---- the reader's state ------------------------------------------------------ */

/* What a step row has besides the history point and its layers (for the
 * replay: the box and the status show the step viewed). */
typedef struct {
    float grad_norm, loss_scale;
    int skipped;
    char fault[64];
} step_extra;

/* The line being parsed: fields land here, and are used only if the
 * whole line parses. */
typedef struct {
    int is_event, is_header, has_step, has_loss, loss_null, run_b, blocks;
    long step;
    int max_layer; /* highest l<i>_ index seen, -1 = none */
    int header_layers;
    char bad[80];  /* a known field of the wrong type */
    char event[16], text[NS_EVENT_TEXT], loss_nonfinite[8], val_nonfinite[8];
    char state[16];    /* the lab's rows' own state ("exploded", ...); "" = not said */
    char said[METRICS_STEP_MAX][16]; /* a setting column's value as the row spelled it
                                      * ("" = not said) */
    char source[32], model[64], dtype[16], host[64], reason[16], norm_class[32];
    double version, world_size, every, pid;
    double t;          /* the writer's clock (Unix seconds), NaN if not said */
    long nf_step;      /* first_nonfinite_step: 0 = not said */
    int nf_layer;      /* first_nonfinite_layer: -1 = not said or none */
    long seq;          /* an ack's command sequence number: 0 = none */
    int lr_undone;
    int vocab;         /* the header's vocabulary size: 0 = not said */
    int probe;         /* a header came: null is a value measured and not finite
                        * (the lab's --jsonl rows also write an unmeasured
                        * val_loss so) */
    int rank;          /* an end line's failed rank: -1 = not said */
    long nf_count;     /* nonfinite_steps: the watch's count so far; -1 = not said */
    step_metrics m;
    /* the header's block names, [0, blocks) of this line (not cleared
     * between lines: only a header's are used) */
    char block[NS_MAX_LAYERS][STREAM_NAME];
    metrics_digits dig; /* each number's token; cleared up to dig_layers */
    int dig_layers;
} row_state;

struct stream_reader {
    char path[ATOMIC_PATH_MAX];
    tail tl;      /* the file, followed; its lines come to process_line */
    long line_no;
    row_state row;
    trainer_snapshot *snap;
    unsigned long seen_seq; /* the seq of the last poll's answer */
    layer_metrics *rows;    /* (TRAINER_HIST, n_alloc) layer rows of each point */
    int n_alloc;
    step_extra extra[TRAINER_HIST];
    char mark[TRAINER_MARK]; /* a setting changed: marks the next point */
    char block[NS_MAX_LAYERS][STREAM_NAME]; /* the header's block names */
    int n_block;
    char cur[METRICS_STEP_MAX][16]; /* the setting columns' values in force, as spelled */
    int paused, beyond_said;
    metrics_spike spike_loss, spike_gnorm;
    char host[64];          /* the writer's, from the header ("" = not said) */
    long pid;
    double last_step_at;    /* nstime_now() when the last step line was read; 0 = none */
    double step_gap;        /* mean seconds between step lines, as they arrived */
    double quiet_min;       /* "no new step" needs at least this many seconds */
    long acked[STREAM_ACKS]; /* the sequence numbers of the newest acks */
    int n_acked;
    char run_fault[64];     /* the run's first non-finite: where, its layer */
    int run_fault_layer;
    stream_summary sum;
    /* the lab's rules over the steps read (diagnose.h), and what they
     * need that a stream says once or not at all */
    diag dg;
    step_metrics dg_in;     /* the step as the rules get it (diag_input) */
    float lr_max;           /* the largest LR read: the rules' peak LR */
    int lr_said;            /* a setting event came since the last step */
    int scale_moved;        /* the loss scale was other than 1: a dynamic scaler */
    int vocab;              /* the header's; 0 = not said */
    float entropy;          /* the latest data_entropy said; NaN = none yet */
    struct {
        long updates;
        char name[STREAM_NAME];
    } ckpt[STREAM_CKPTS];   /* the run's checkpoints, by "checkpoint" events */
    int n_ckpt;
    void (*on_step)(void *ctx, const step_metrics *m);
    void *on_ctx;
};

static void add_event(stream_reader *r, long step, ns_event_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void add_event(stream_reader *r, long step, ns_event_kind kind, const char *fmt, ...)
{
    trainer_snapshot *s = r->snap;
    trainer_event *e = &s->ev[s->s.ev_total % TRAINER_EVENTS];
    e->step = step;
    e->kind = kind;
    e->layer = -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->text, sizeof e->text, fmt, ap);
    va_end(ap);
    s->s.ev_total++;
    s->s.seq++;
}

void stream_note(stream_reader *r, ns_event_kind kind, const char *text)
{
    add_event(r, r->snap->s.steps_done, kind, "%s", text);
}

/* The rules start over (a new run, or the same one gone back). Their
 * plateau is each step's data_entropy (data_of); a stream that never
 * says it has none, and the rules that need one say "not known". */
static void diag_start(stream_reader *r)
{
    diag_init(&r->dg, NAN);
    memset(&r->snap->s.diag[0], 0, sizeof r->snap->s.diag[0]);
    r->lr_max = 0;
    r->scale_moved = 0;
}

/* Forget the run read so far (a truncated, replaced or restarted file):
 * the history is cut as a rewind cuts it; events and the file's counters
 * stay. */
static void reset_run(stream_reader *r)
{
    trainer_status *s = &r->snap->s;
    s->generation++;
    s->hist_first = s->hist_total;
    s->have_metrics = s->have_loss = 0;
    s->steps_done = 0;
    s->run[0].last_val = NAN;
    s->last_val_step = 0;
    s->state = TRAINER_RUNNING;
    s->seq++;
    stream_summary keep = r->sum;
    memset(&r->sum, 0, sizeof r->sum);
    r->sum.n_lines = keep.n_lines;
    r->sum.malformed = keep.malformed;
    r->sum.first_malformed_line = keep.first_malformed_line;
    r->sum.truncations = keep.truncations;
    r->sum.replacements = keep.replacements;
    r->sum.restarts = keep.restarts;
    r->sum.recognized = keep.recognized;
    r->sum.last_val = NAN;
    r->sum.nonfinite_said = -1;
    r->sum.end_rank = -1;
    r->sum.data_entropy = keep.data_entropy;
    r->sum.vocab = keep.vocab;
    r->run_fault[0] = 0;
    r->run_fault_layer = -1;
    r->last_step_at = r->step_gap = 0;
    metrics_spike_reset(&r->spike_loss, METRICS_SPIKE_LOSS);
    metrics_spike_reset(&r->spike_gnorm, METRICS_SPIKE_GNORM);
    r->mark[0] = 0;
    memset(r->cur, 0, sizeof r->cur);
    r->paused = r->beyond_said = 0;
    r->n_block = 0;
    r->n_ckpt = 0;
    diag_start(r);
}

/* The layer count is known (a header, or the first step): the ring of
 * layer rows is sized for it. More than NS_MAX_LAYERS are clamped. */
static void set_layers(stream_reader *r, int n)
{
    r->sum.n_layer_stream = n;
    if (n > NS_MAX_LAYERS) {
        add_event(r, r->sum.last_step, NS_EV_NOTE,
                  "the stream has %d layers: the first %d are shown", n, NS_MAX_LAYERS);
        n = NS_MAX_LAYERS;
    }
    if (n > r->n_alloc) {
        layer_metrics *nr = calloc((size_t)TRAINER_HIST * (size_t)n, sizeof *nr);
        if (!nr) { /* keep the old ring; the layers past it are not kept */
            add_event(r, r->sum.last_step, NS_EV_NOTE, "out of memory for %d layers", n);
            n = r->n_alloc;
        } else {
            free(r->rows);
            r->rows = nr;
            r->n_alloc = n;
        }
    }
    r->sum.n_layer = n;
    r->snap->s.n_layer = n;
    r->snap->s.run[0].cfg.n_layer = n;
    r->snap->s.seq++;
}

static void process_line(stream_reader *r, char *line, size_t n);
static void malformed(stream_reader *r, const char *why);

/* A file rewritten or replaced: its lines are counted from the start, and
 * the run read so far is forgotten. */
static void restart_file(stream_reader *r)
{
    r->line_no = 0;
    reset_run(r);
}

static void tail_line(void *ctx, char *line, size_t n) { process_line(ctx, line, n); }

/* What the tail saw happen to the file, as events and counters */
static void tail_said(void *ctx, tail_event ev, const char *text)
{
    stream_reader *r = ctx;
    long step = r->snap->s.steps_done;
    switch (ev) {
    case TAIL_WAITING: case TAIL_BACK: add_event(r, step, NS_EV_INFO, "%s", text); break;
    case TAIL_TRUNCATED:
        add_event(r, step, NS_EV_NOTE, "%s", text);
        r->sum.truncations++;
        restart_file(r);
        break;
    case TAIL_REPLACED:
        add_event(r, step, NS_EV_NOTE, "%s", text);
        r->sum.replacements++;
        restart_file(r);
        break;
    case TAIL_TOO_LONG:
        r->line_no++;
        r->sum.n_lines++;
        malformed(r, "longer than 1 MiB: skipped");
        break;
    case TAIL_NOMEM: malformed(r, text); break;
    default: add_event(r, step, NS_EV_NOTE, "%s", text);
    }
}

stream_reader *stream_open(const char *path)
{
    stream_reader *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->snap = snapshot_new();
    if (!r->snap) {
        free(r);
        return NULL;
    }
    snprintf(r->path, sizeof r->path, "%s", path);
    tail_sink sink = {tail_line, tail_said, r};
    tail_init(&r->tl, path, STREAM_LINE_MAX, &sink);
    trainer_status *s = &r->snap->s;
    settings_defaults(&s->run[0].cfg);
    s->run[0].cfg.n_layer = 0;
    s->state = TRAINER_RUNNING;
    s->run[0].last_val = NAN;
    s->prompt = "";
    r->sum.last_val = NAN;
    r->sum.nonfinite_said = -1;
    r->sum.end_rank = -1;
    r->sum.data_entropy = NAN;
    r->run_fault_layer = -1;
    r->quiet_min = STREAM_QUIET_MIN;
    metrics_spike_reset(&r->spike_loss, METRICS_SPIKE_LOSS);
    metrics_spike_reset(&r->spike_gnorm, METRICS_SPIKE_GNORM);
    r->entropy = NAN;
    diag_start(r);
    return r;
}

void stream_free(stream_reader *r)
{
    if (!r)
        return;
    tail_free(&r->tl);
    free(r->rows);
    free(r->snap);
    free(r);
}

const trainer_snapshot *stream_snapshot(const stream_reader *r) { return r->snap; }
const stream_summary *stream_summary_of(const stream_reader *r) { return &r->sum; }
long stream_hist_first(const stream_reader *r) { return trainer_hist_first(&r->snap->s); }
long stream_hist_total(const stream_reader *r) { return r->snap->s.hist_total; }
int stream_found(const stream_reader *r) { return tail_found(&r->tl); }

const char *stream_block_name(const stream_reader *r, int layer)
{
    return layer >= 0 && layer < r->n_block ? r->block[layer] : "";
}

const metrics_digits *stream_digits(const stream_reader *r) { return &r->row.dig; }

void stream_on_step(stream_reader *r, void (*fn)(void *ctx, const step_metrics *m), void *ctx)
{
    r->on_step = fn;
    r->on_ctx = ctx;
}

/* ---- one line's fields --------------------------------------------------------- */

static int keyis(const char *k, size_t kl, const char *name)
{
    return strlen(name) == kl && !memcmp(k, name, kl);
}

static void bad_type(row_state *w, const char *key, const char *want)
{
    if (!w->bad[0])
        snprintf(w->bad, sizeof w->bad, "\"%.40s\" is not %s", key, want);
}

/* A number field: a number, or null (not measured, or not finite) */
static float num_field(row_state *w, const char *key, const jsonl_value *v)
{
    if (v->type == JSONL_NUM)
        return (float)v->num;
    if (v->type != JSONL_NULL)
        bad_type(w, key, "a number or null");
    return NAN;
}

/* A string of the stream, kept escaped: another program wrote it, and it
 * goes to a terminal (nstext.h) */
static void str_field(row_state *w, const char *key, const jsonl_value *v, char *dst, size_t n)
{
    if (v->type == JSONL_STR)
        nstext_escape(v->str, v->len, dst, n);
    else if (v->type != JSONL_NULL)
        bad_type(w, key, "a string");
}

/* The token of a number, for a conversion that keeps its digits */
static void keep_digits(char *dst, const jsonl_value *v)
{
    if (v->type == JSONL_NUM && v->rawlen < METRICS_DIGITS) {
        memcpy(dst, v->raw, v->rawlen);
        dst[v->rawlen] = 0;
    }
}

/* A step column (metrics_step_col). In a probe's stream (a header came)
 * null is a value measured and not finite, and a column not on the line
 * is unknown (val_loss: null is not measured, as the lab's --jsonl rows
 * and older probes write it, unless val_loss_nonfinite says its value).
 * The lab's rows write null for a loss or gradient norm not finite; null
 * is unknown for their other columns. */
static void step_col(row_state *w, int k, const jsonl_value *v)
{
    step_metrics *m = &w->m;
    const char *name = metrics_step_col(k)->name;
    if (k == METRICS_COL_STEP) {
        if (v->type != JSONL_NUM || !(v->num >= 0 && v->num < 1e15) || v->num != floor(v->num))
            bad_type(w, "step", "a whole number >= 0");
        else
            w->has_step = 1, w->step = (long)v->num, m->unknown &= ~1u;
        return;
    }
    if (k == METRICS_COL_LOSS) {
        w->has_loss = 1;
        w->loss_null = v->type == JSONL_NULL;
    }
    int measured = k == METRICS_COL_LOSS || k == METRICS_COL_GNORM || k == METRICS_COL_VAL;
    if (metrics_step_col_named(k)) {
        if (v->type == JSONL_STR) {
            if (metrics_step_col_set_name(m, k, v->str) == 0)
                m->unknown &= ~(1u << k);
            snprintf(w->said[k], sizeof w->said[k], "%s", v->str);
        } else if (v->type != JSONL_NULL) {
            bad_type(w, name, "a string");
        }
        return;
    }
    switch (metrics_step_col(k)->type) {
    default:
        if (v->type == JSONL_NUM || (v->type == JSONL_BOOL && k == METRICS_COL_SKIPPED)) {
            metrics_step_col_set_num(m, k, v->num);
            keep_digits(w->dig.step[k], v);
            m->unknown &= ~(1u << k);
        } else if (v->type == JSONL_NULL) {
            /* a validation not given was null before probes left it out: a NaN
             * one says so with val_loss_nonfinite (step_line) */
            int value = w->probe && metrics_step_col(k)->type != METRICS_T_INT &&
                        k != METRICS_COL_VAL;
            metrics_step_col_set_num(m, k, NAN);
            if (measured || value)
                m->unknown &= ~(1u << k);
        } else {
            bad_type(w, name, "a number or null");
        }
    }
}

/* "l<i>_<column>": a layer's number; unknown columns are ignored */
static void layer_field(row_state *w, const char *key, size_t kl, const jsonl_value *v)
{
    size_t i = 1;
    long idx = 0;
    while (i < kl && dig(key[i]) && idx < 100000)
        idx = idx * 10 + (key[i++] - '0');
    if (i >= kl || key[i] != '_' || i > 7)
        return;
    int col = metrics_layer_col_find(key + i + 1, kl - i - 1);
    if (col < 0)
        return;
    float x = num_field(w, "l<i>_ column", v);
    if (idx > w->max_layer)
        w->max_layer = (int)idx;
    if (idx < NS_MAX_LAYERS) {
        metrics_layer_col_set(&w->m.layer[idx], col, x);
        w->m.layer[idx].unknown &= ~(1u << col); /* said: a number, or null (not finite) */
        keep_digits(w->dig.layer[idx][col], v);
        if (idx + 1 > w->dig_layers)
            w->dig_layers = (int)idx + 1;
    }
}

static void header_field(row_state *w, const char *key, size_t kl, const jsonl_value *v)
{
    if (keyis(key, kl, "source"))
        str_field(w, "source", v, w->source, sizeof w->source);
    else if (keyis(key, kl, "model"))
        str_field(w, "model", v, w->model, sizeof w->model);
    else if (keyis(key, kl, "dtype"))
        str_field(w, "dtype", v, w->dtype, sizeof w->dtype);
    else if (keyis(key, kl, "version"))
        w->version = num_field(w, "version", v);
    else if (keyis(key, kl, "n_layer"))
        w->header_layers = v->type == JSONL_NUM && v->num >= 0 && v->num < 1e6 ? (int)v->num : 0;
    else if (keyis(key, kl, "world_size"))
        w->world_size = num_field(w, "world_size", v);
    else if (keyis(key, kl, "every"))
        w->every = num_field(w, "every", v);
    else if (keyis(key, kl, "host"))
        str_field(w, "host", v, w->host, sizeof w->host);
    else if (keyis(key, kl, "pid"))
        w->pid = v->type == JSONL_NUM ? v->num : 0;
    else if (keyis(key, kl, "norm_class"))
        str_field(w, "norm_class", v, w->norm_class, sizeof w->norm_class);
    else if (keyis(key, kl, "vocab"))
        w->vocab = v->type == JSONL_NUM && v->num >= 1 && v->num < 1e9 ? (int)v->num : 0;
}

static void row_field(void *ctx, const char *key, size_t kl, const jsonl_value *v)
{
    row_state *w = ctx;
    if (v->index >= 0) { /* arrays: only the header's block names are kept */
        if (keyis(key, kl, "blocks") && v->index + 1 > w->blocks) {
            w->blocks = v->index + 1;
            if (v->index < NS_MAX_LAYERS)
                nstext_escape(v->type == JSONL_STR ? v->str : "",
                              v->type == JSONL_STR ? v->len : 0, w->block[v->index], STREAM_NAME);
        }
        return;
    }
    if (kl > 2 && key[0] == 'l' && dig(key[1])) {
        layer_field(w, key, kl, v);
        return;
    }
    step_metrics *m = &w->m;
    int k = metrics_step_col_find(key, kl);
    if (k >= 0) {
        step_col(w, k, v);
    } else if (keyis(key, kl, "t")) {
        w->t = v->type == JSONL_NUM ? v->num : NAN;
    } else if (keyis(key, kl, "first_nonfinite_step")) {
        w->nf_step = v->type == JSONL_NUM && v->num >= 1 && v->num < 1e15 ? (long)v->num : 0;
    } else if (keyis(key, kl, "first_nonfinite_layer")) {
        w->nf_layer = v->type == JSONL_NUM && v->num >= 0 && v->num < NS_MAX_LAYERS
                          ? (int)v->num : -1;
    } else if (keyis(key, kl, "seq")) {
        w->seq = v->type == JSONL_NUM && v->num >= 1 && v->num < 1e15 ? (long)v->num : 0;
    } else if (keyis(key, kl, "reason")) {
        str_field(w, "reason", v, w->reason, sizeof w->reason);
    } else if (keyis(key, kl, "data_entropy")) {
        m->data_entropy = num_field(w, "data_entropy", v);
    } else if (keyis(key, kl, "nonfinite_steps")) {
        w->nf_count = v->type == JSONL_NUM && v->num >= 0 && v->num < 1e15 ? (long)v->num : -1;
    } else if (keyis(key, kl, "rank")) {
        w->rank = v->type == JSONL_NUM && v->num >= 0 && v->num < 1e6 ? (int)v->num : -1;
    } else if (keyis(key, kl, "lr_undone")) {
        w->lr_undone = v->type == JSONL_NUM && v->num != 0;
    } else if (keyis(key, kl, "state")) {
        str_field(w, "state", v, w->state, sizeof w->state);
    } else if (keyis(key, kl, "val_loss_nonfinite")) {
        str_field(w, "val_loss_nonfinite", v, w->val_nonfinite, sizeof w->val_nonfinite);
    } else if (keyis(key, kl, "loss_nonfinite")) {
        str_field(w, "loss_nonfinite", v, w->loss_nonfinite, sizeof w->loss_nonfinite);
    } else if (keyis(key, kl, "first_nonfinite")) {
        str_field(w, "first_nonfinite", v, m->fault, sizeof m->fault);
    } else if (keyis(key, kl, "event")) {
        w->is_event = 1;
        str_field(w, "event", v, w->event, sizeof w->event);
    } else if (keyis(key, kl, "text")) {
        str_field(w, "text", v, w->text, sizeof w->text);
    } else if (keyis(key, kl, "run")) {
        w->run_b = v->type == JSONL_STR && strcmp(v->str, "a") != 0;
    } else if (keyis(key, kl, "format")) {
        w->is_header = v->type == JSONL_STR && !strcmp(v->str, "normscope-stream");
    } else {
        header_field(w, key, kl, v);
    }
}

static void row_reset(row_state *w)
{
    memset(w, 0, offsetof(row_state, m));
    w->max_layer = -1;
    w->nf_layer = -1;
    w->rank = -1;
    w->nf_count = -1;
    w->t = NAN;
    step_metrics *m = &w->m;
    memset(m, 0, offsetof(step_metrics, layer));
    m->loss = m->val_loss = m->lr = m->grad_norm = NAN;
    m->loss_scale = 1;
    m->fault_layer = -1;
    m->data_entropy = NAN;
    m->unknown = ~0u >> (32 - metrics_step_ncols()); /* every column */
    memset(w->dig.step, 0, sizeof w->dig.step);
    for (int l = 0; l < w->dig_layers && l < NS_MAX_LAYERS; l++)
        memset(w->dig.layer[l], 0, sizeof w->dig.layer[l]);
    w->dig_layers = 0;
    /* a layer column the row does not have is not known */
    layer_metrics none;
    for (int k = 0; k < METRICS_LAYER_COLS; k++)
        metrics_layer_col_set(&none, k, NAN);
    none.unknown = (1u << METRICS_LAYER_COLS) - 1;
    for (int l = 0; l < NS_MAX_LAYERS; l++)
        m->layer[l] = none;
}

/* ---- what a line does to the snapshot -------------------------------------------- */

static void malformed(stream_reader *r, const char *why)
{
    r->sum.malformed++;
    if (!r->sum.first_malformed_line)
        r->sum.first_malformed_line = r->line_no;
    add_event(r, r->snap->s.steps_done, NS_EV_NOTE, "line %ld: malformed (%s)", r->line_no, why);
}

static void header_line(stream_reader *r)
{
    row_state *w = &r->row;
    stream_summary *u = &r->sum;
    if (u->rows > 0 || u->have_header) {
        add_event(r, u->last_step, NS_EV_INFO, "line %ld: a new run's header: the history restarts",
                  r->line_no);
        u->restarts++;
        reset_run(r);
    }
    u->have_header = 1;
    snprintf(u->source, sizeof u->source, "%s", w->source);
    snprintf(u->model, sizeof u->model, "%s", w->model);
    snprintf(u->dtype, sizeof u->dtype, "%s", w->dtype);
    u->world_size = w->world_size >= 1 && w->world_size < 1e6 ? (int)w->world_size : 1;
    u->every = w->every >= 1 && w->every < 1e9 ? (long)w->every : 1;
    int n = w->header_layers > 0 ? w->header_layers : w->blocks;
    /* the format's dtype names torch's; the lab's precision names ours */
    int f = numfmt_parse(!strcmp(w->dtype, "bfloat16") ? "bf16"
                         : !strcmp(w->dtype, "float16") ? "fp16" : "fp32");
    r->snap->s.run[0].cfg.precision = f >= 0 ? (numfmt)f : FMT_FP32;
    add_event(r, 0, NS_EV_INFO, "stream: %s %s, %d layers, world size %d, %s",
              u->source[0] ? u->source : "?", u->model[0] ? u->model : "model", n,
              u->world_size, u->dtype[0] ? u->dtype : "float32");
    r->n_block = w->blocks < NS_MAX_LAYERS ? w->blocks : NS_MAX_LAYERS;
    memcpy(r->block, w->block, sizeof r->block[0] * (size_t)r->n_block);
    snprintf(r->host, sizeof r->host, "%s", w->host);
    r->pid = w->pid >= 1 && w->pid < 1e9 ? (long)w->pid : 0;
    snprintf(u->norm_class, sizeof u->norm_class, "%s", w->norm_class);
    r->vocab = u->vocab = w->vocab;
    r->entropy = u->data_entropy = NAN; /* a new run's data says its own */
    diag_start(r);
    if (w->version > 1)
        add_event(r, 0, NS_EV_NOTE, "stream format version %g (this reader knows 1): "
                  "unknown fields are ignored", w->version);
    if (n > 0)
        set_layers(r, n);
}

/* The writer's end line: how the run ended, and a first non-finite the
 * watch saw after the last step line. */
static void end_line(stream_reader *r, long step)
{
    row_state *w = &r->row;
    stream_summary *u = &r->sum;
    u->ended = 1;
    u->end_step = step;
    u->end_rank = w->rank;
    if (w->nf_count > u->nonfinite_said)
        u->nonfinite_said = w->nf_count;
    snprintf(u->end_reason, sizeof u->end_reason, "%s", w->reason[0] ? w->reason : "close");
    snprintf(u->end_text, sizeof u->end_text, "%s", w->text);
    r->snap->s.state = TRAINER_DONE;
    add_event(r, step, !strcmp(u->end_reason, "close") || !strcmp(u->end_reason, "exit")
                            ? NS_EV_INFO : NS_EV_WARNING,
              "%s", w->text[0] ? w->text : "the run ended");
    if (w->m.fault[0] && !u->nonfinite_step) {
        u->nonfinite_step = w->nf_step ? w->nf_step : step;
        snprintf(u->nonfinite_where, sizeof u->nonfinite_where, "%s", w->m.fault);
        add_event(r, u->nonfinite_step, NS_EV_DIVERGED, "first non-finite: step %ld, %s",
                  u->nonfinite_step, w->m.fault);
    }
    r->snap->s.seq++;
}

/* "checkpoint NAME after N updates": a checkpoint a fix may resume from */
static void checkpoint_event(stream_reader *r, const char *t)
{
    char name[STREAM_NAME];
    long n;
    if (sscanf(t, "checkpoint %63s after %ld updates", name, &n) != 2 || n < 0)
        return;
    int i = r->n_ckpt++ % STREAM_CKPTS;
    r->ckpt[i].updates = n;
    snprintf(r->ckpt[i].name, sizeof r->ckpt[i].name, "%s", name);
}

static void event_line(stream_reader *r)
{
    row_state *w = &r->row;
    trainer_status *s = &r->snap->s;
    long step = w->has_step ? w->step : s->steps_done;
    const char *t = w->text;
    if (!strcmp(w->event, "setting")) {
        r->lr_said = 1;
        add_event(r, step, NS_EV_SETTING, "%s", t[0] ? t : "a setting changed");
        snprintf(r->mark, sizeof r->mark, "%.*s", TRAINER_MARK - 1, t[0] ? t : "setting");
        return;
    }
    if (!strcmp(w->event, "end")) {
        end_line(r, step);
        return;
    }
    if (!strcmp(w->event, "checkpoint"))
        checkpoint_event(r, t);
    if (!strcmp(w->event, "ack") && w->seq > 0) {
        r->acked[r->n_acked++ % STREAM_ACKS] = w->seq;
        add_event(r, step, NS_EV_INFO, "%s", t[0] ? t : "a command was applied");
        s->seq++;
        return;
    }
    ns_event_kind k = !strcmp(w->event, "note") ? NS_EV_NOTE : NS_EV_INFO;
    if (!strcmp(w->event, "paused"))
        r->paused = 1, s->state = TRAINER_PAUSED;
    else if (!strcmp(w->event, "resumed"))
        r->paused = 0, s->state = TRAINER_RUNNING;
    add_event(r, step, k, "%s%s%s", w->event, t[0] ? ": " : "", t);
}

/* normscope's own rows carry the settings in force: a change is a marker
 * and an event, as in the live lab */
static void settings_change(stream_reader *r, long step, const char *name, char *cur,
                            const char *now)
{
    if (!now[0] || !strcmp(cur, now))
        return;
    if (cur[0]) {
        add_event(r, step, NS_EV_SETTING, "%s %.15s -> %.15s", name, cur, now);
        snprintf(r->mark, sizeof r->mark, "%s=%s", name, now);
    }
    snprintf(cur, 16, "%.15s", now);
}

/* Setting column k's value as spelled in text (a name, or a number):
 * 1, or 0 when text says none. */
static int setting_value(int k, const char *text, double *x)
{
    char why[8], *end;
    if (metrics_step_col_named(k))
        return settings_parse_number(metrics_step_col(k)->setting, text, x, why, sizeof why) == 0;
    *x = strtod(text, &end);
    return end != text && !*end;
}

/* Every setting column, as the settings table has them: a change said
 * is an event and a marker; the value in force is the run's setting and
 * the step's (a row that does not say it keeps the last one said). */
static void apply_settings(stream_reader *r, long step)
{
    row_state *w = &r->row;
    ns_config *cfg = &r->snap->s.run[0].cfg;
    for (int k = 0; k < metrics_step_ncols(); k++) {
        const metrics_col *c = metrics_step_col(k);
        if (!c->setting)
            continue;
        if (metrics_known(&w->m, k) && !w->said[k][0])
            metrics_step_col_text(&w->m, k, w->said[k], sizeof w->said[k]);
        settings_change(r, step, c->name, r->cur[k], w->said[k]);
        double x;
        int said = setting_value(k, r->cur[k], &x);
        if (said && c->setting->home == SET_IN_CFG)
            settings_put(c->setting, cfg, x);
        else if (!said)
            x = c->setting->home == SET_IN_CFG ? settings_get(c->setting, cfg) : w->m.set[k];
        metrics_step_col_set_value(&w->m, k, x);
    }
}

/* The point, its heat row and its layer row at the next history slot */
static void push_point(stream_reader *r, const step_metrics *m)
{
    trainer_snapshot *p = r->snap;
    long i = p->s.hist_total % TRAINER_HIST;
    snapshot_point_set(&p->hist[i], m, NULL, r->mark, NULL);
    r->mark[0] = 0;
    for (int l = 0; l < m->n_layer; l++) {
        p->run[0].heat[i][l] = metrics_layer_gnorm(&m->layer[l]);
        r->rows[(size_t)i * (size_t)r->n_alloc + (size_t)l] = m->layer[l];
    }
    step_extra *x = &r->extra[i];
    x->grad_norm = m->grad_norm;
    x->loss_scale = m->loss_scale;
    x->skipped = m->skipped;
    memcpy(x->fault, m->fault, sizeof x->fault);
    p->s.hist_total++;
}

static void update_status(stream_reader *r, const step_metrics *m)
{
    trainer_status *s = &r->snap->s;
    s->steps_done = m->step;
    s->have_metrics = 1;
    s->run[0].last = *m;
    s->have_loss = 1;
    s->run[0].loss = m->loss;
    if (m->has_val) {
        s->run[0].last_val = m->val_loss;
        s->last_val_step = m->step;
    }
    s->run[0].lr_next = s->run[0].lr_peak = m->lr;
    s->state = m->nonfinite ? TRAINER_DIVERGED : r->paused ? TRAINER_PAUSED : TRAINER_RUNNING;
    s->seq++;
}

/* Events a step brings: validation, the first non-finite step of a
 * stretch (with the module), spikes by the lab's own rule. */
static void step_events(stream_reader *r, const step_metrics *m, int was_nonfinite)
{
    stream_summary *u = &r->sum;
    if (m->has_val)
        add_event(r, m->step, NS_EV_VAL, "validation loss %.4f", (double)m->val_loss);
    if (m->nonfinite && !was_nonfinite) {
        const char *lt = r->row.loss_nonfinite[0] ? r->row.loss_nonfinite
                         : isnan(m->loss)        ? "nan"
                         : isinf(m->loss)        ? (m->loss > 0 ? "inf" : "-inf")
                                                 : NULL;
        char loss[32];
        if (lt)
            snprintf(loss, sizeof loss, "%s", lt);
        else
            snprintf(loss, sizeof loss, "%.4g", (double)m->loss);
        long first = r->row.nf_step ? r->row.nf_step : m->step;
        if (first != m->step)
            add_event(r, m->step, NS_EV_DIVERGED,
                      "non-finite at step %ld: loss %s; first non-finite: step %ld, %s", m->step,
                      loss, first, m->fault[0] ? m->fault : "not named");
        else
            add_event(r, m->step, NS_EV_DIVERGED,
                      "non-finite at step %ld: loss %s; first non-finite: %s", m->step, loss,
                      m->fault[0] ? m->fault : "not named");
        if (!u->nonfinite_step) {
            u->nonfinite_step = first;
            snprintf(u->nonfinite_where, sizeof u->nonfinite_where, "%s", m->fault);
            snprintf(u->nonfinite_loss, sizeof u->nonfinite_loss, "%s", lt ? lt : "");
        }
    }
    char msg[NS_EVENT_TEXT];
    int sp = metrics_spike_check(&r->spike_loss, m->step, m->loss, "loss", msg, sizeof msg);
    if (sp)
        add_event(r, m->step, NS_EV_WARNING, "%s", msg);
    if (metrics_spike_check(&r->spike_gnorm, m->step, m->grad_norm, "gradient norm", msg,
                            sizeof msg)) {
        add_event(r, m->step, NS_EV_WARNING, "%s", msg);
        sp = 1;
    }
    if (sp) {
        if (u->spikes < STREAM_SPIKES)
            u->spike_step[u->spikes] = m->step;
        u->spikes++;
    }
}

static void update_summary(stream_reader *r, const step_metrics *m)
{
    stream_summary *u = &r->sum;
    if (u->rows++ == 0)
        u->first_step = m->step;
    u->last_step = m->step;
    u->last_loss = m->loss;
    if (m->has_val) {
        u->last_val = m->val_loss;
        u->last_val_step = m->step;
    }
    u->nonfinite_rows += m->nonfinite;
    if (r->row.nf_count > u->nonfinite_said)
        u->nonfinite_said = r->row.nf_count;
    /* every layer's norm (over its groups said) known and finite */
    int finite = m->n_layer > 0, said = 0;
    for (int l = 0; l < m->n_layer && finite; l++) {
        said |= metrics_layer_gnorm_known(&m->layer[l]);
        finite = !metrics_layer_gnorm_known(&m->layer[l]) ||
                 isfinite(metrics_layer_gnorm(&m->layer[l]));
    }
    u->layer_grads_said |= said;
    if (finite && said) {
        u->have_finite = 1;
        u->last_finite = *m;
    }
}

static void keep_header(stream_summary *u, const stream_summary *h)
{
    u->have_header = h->have_header;
    memcpy(u->source, h->source, sizeof u->source);
    memcpy(u->model, h->model, sizeof u->model);
    memcpy(u->dtype, h->dtype, sizeof u->dtype);
    u->world_size = h->world_size;
    u->every = h->every;
    u->n_layer = h->n_layer;
    u->n_layer_stream = h->n_layer_stream;
}

/* Where the run first went non-finite: the row's own first_nonfinite
 * (its layer from first_nonfinite_layer or the block names), kept for the
 * later non-finite rows, whose status then still names it. */
static void fault_of(stream_reader *r, step_metrics *m)
{
    row_state *w = &r->row;
    if (m->fault[0] && !r->run_fault[0]) {
        snprintf(r->run_fault, sizeof r->run_fault, "%s", m->fault);
        r->run_fault_layer = w->nf_layer;
        for (int b = 0; b < r->n_block && r->run_fault_layer < 0; b++) {
            size_t n = strlen(r->block[b]);
            if (n && !strncmp(m->fault, r->block[b], n) &&
                (m->fault[n] == '.' || m->fault[n] == ','))
                r->run_fault_layer = b;
        }
    }
    if (m->nonfinite && r->run_fault[0]) {
        if (!m->fault[0])
            snprintf(m->fault, sizeof m->fault, "%s", r->run_fault);
        m->fault_layer = r->run_fault_layer;
    }
}

/* "inf", "-inf", else NaN: a loss_nonfinite's value */
static float nonfinite_value(const char *t)
{
    return !strcmp(t, "inf") ? INFINITY : !strcmp(t, "-inf") ? -INFINITY : NAN;
}

/* The step as the rules get it: what the stream does not say is what
 * blames nothing. A probe cannot know warmup (on: a divergence is not
 * put on a warmup that may be there) nor clipping (off); autocast keeps
 * norms in fp32, as fp32-norms on does; the peak LR is the largest read
 * (a scheduler's every step is not a setting change, a raise is); the
 * scale is dynamic once it moved from 1. */
static void diag_input(stream_reader *r, const step_metrics *m, step_metrics *in)
{
    *in = *m;
    if (!metrics_setting_known(m, "warmup"))
        metrics_set_setting(in, "warmup", 1);
    if (!metrics_setting_known(m, "fp32_norms"))
        metrics_set_setting(in, "fp32_norms", 1);
    if (!metrics_setting_known(m, "clip"))
        metrics_set_setting(in, "clip", 0);
    if (isfinite(m->lr) && m->lr > r->lr_max)
        r->lr_max = m->lr;
    in->lr_peak = r->lr_max;
    if (metrics_known(m, METRICS_COL_SCALE) && isfinite(m->loss_scale) && m->loss_scale != 1)
        r->scale_moved = 1;
    in->loss_scale_dynamic = r->scale_moved;
    /* headroom a stream leaves out (the probe's in fp32) is its definition's,
     * log2(format max / act max), as the lab's engine computes it: a rule's
     * crossing step is then a forecast, not "at the limit now" */
    double lim = ns_log2(numfmt_max(metrics_precision(m)));
    for (int l = 0; l < m->n_layer; l++) {
        layer_metrics *lm = &in->layer[l];
        if (!metrics_layer_known(lm, METRICS_LC_HEADROOM) && isfinite(lm->act_max) &&
            lm->act_max > 0)
            lm->headroom = (float)(lim - ns_log2(lm->act_max));
        /* a group not said adds nothing to the layer's norm (an empty one has none) */
        for (int k = METRICS_LC_GRAD_ATTN; k <= METRICS_LC_GRAD_LN; k++)
            if (!metrics_layer_known(lm, k) && metrics_layer_gnorm_known(lm))
                metrics_layer_col_set(lm, k, 0);
    }
}

/* A finding as the lab's run loop gives it: its line and what to try, as
 * warnings in the log (on its layer), kept for the D panel and the
 * summary. */
static void finding_events(stream_reader *r, const diag_finding *f)
{
    trainer_snapshot *p = r->snap;
    add_event(r, f->step, NS_EV_WARNING, "%s", f->text);
    p->ev[(p->s.ev_total - 1) % TRAINER_EVENTS].layer = f->layer;
    add_event(r, f->step, NS_EV_WARNING, "  try: %s", f->hint);
    snapshot_diagnosis_add(&p->s.diag[0], f);
    stream_summary *u = &r->sum;
    int diagnosis = f->kind == DIAG_DIAGNOSIS;
    if ((diagnosis ? u->diagnoses++ : u->warnings++) == 0)
        *(diagnosis ? &u->cause : &u->first_warning) = *f;
    if (diagnosis && f->rule == DIAG_R_BLOWUP)
        u->blew_up = 1;
}

/* The row's state (the CSV's state column): the one the lab's own rows
 * say (its run loop's diagnosis, so a conversion keeps it), else the
 * rules' here. */
static void state_of(stream_reader *r, step_metrics *m)
{
    const char *st = r->row.state;
    if (!st[0]) {
        m->exploded = diag_exploded(&r->dg);
        m->stalled = diag_stalled(&r->dg);
        return;
    }
    m->exploded = !strcmp(st, "exploded");
    m->stalled = !strcmp(st, "stalled");
    m->fixed = !strcmp(st, "fixed");
}

/* The lab's rules on the step: its findings, and the states they give
 * the row (exploded, stalled: the CSV's state column). */
static void diagnose_step(stream_reader *r, step_metrics *m)
{
    if (m->n_layer < 1) /* the rules read a top and a bottom layer: none to read */
        return;
    diag_finding out[DIAG_MAX_FINDINGS];
    diag_input(r, m, &r->dg_in);
    /* a rise of the largest LR read that no setting event announced is the
     * schedule's (a warmup ramp): the rules take it as the peak they had,
     * so it neither starts a new episode nor counts as a raise */
    if (r->dg.have_set && !r->lr_said)
        r->dg.set.lr_peak = r->dg_in.lr_peak;
    r->lr_said = 0;
    int n = diag_observe(&r->dg, &r->dg_in, out, DIAG_MAX_FINDINGS);
    trainer_diagnosis *v = &r->snap->s.diag[0];
    if (!diag_episode_open(&r->dg)) /* a setting change or a rewind ended it */
        memset(v, 0, sizeof *v);
    for (int i = 0; i < n; i++)
        finding_events(r, &out[i]);
    v->n_checks = diag_checks(&r->dg, v->checks, DIAG_CHECKS);
    v->healthy = diag_healthy(&r->dg);
    char over[DIAG_TEXT];
    if (diag_stall_over(&r->dg, over, sizeof over))
        add_event(r, m->step, NS_EV_INFO, "%s", over);
}

/* What the data is, as the stream says it: the header's vocabulary, and
 * the targets' entropy, which holds until a line says another (the
 * rules' plateau from then on). */
static void data_of(stream_reader *r, step_metrics *m)
{
    m->vocab = r->vocab;
    if (isfinite(m->data_entropy) && m->data_entropy >= 0)
        r->entropy = r->sum.data_entropy = m->data_entropy;
    m->data_entropy = r->entropy;
}

/* When step lines arrive: the liveness check's clock */
static void step_timing(stream_reader *r)
{
    double now = nstime_now();
    if (r->last_step_at > 0) {
        double gap = now - r->last_step_at;
        r->step_gap = r->step_gap > 0 ? 0.8 * r->step_gap + 0.2 * gap : gap;
    }
    r->last_step_at = now;
}

static void step_line(stream_reader *r)
{
    row_state *w = &r->row;
    stream_summary *u = &r->sum;
    if (w->run_b) /* --compare's second run: the view follows the first */
        return;
    if (u->rows > 0 && w->step <= u->last_step) {
        add_event(r, u->last_step, NS_EV_INFO,
                  "line %ld: step %ld after step %ld: the run went back (a rewind or a restart)",
                  r->line_no, w->step, u->last_step);
        u->restarts++;
        stream_summary hdr = *u; /* the same stream: its header still holds */
        reset_run(r);
        keep_header(u, &hdr);
    }
    if (u->n_layer == 0 && w->max_layer >= 0) /* no header said: the first row does */
        set_layers(r, w->max_layer + 1);
    if (w->max_layer >= u->n_layer_stream && !r->beyond_said && r->n_alloc > 0) {
        add_event(r, u->last_step, NS_EV_NOTE, "line %ld: layer %d past the stream's %d: ignored",
                  r->line_no, w->max_layer, u->n_layer_stream);
        r->beyond_said = 1;
    }
    step_metrics *m = &w->m;
    m->step = w->step;
    m->n_layer = r->n_alloc < u->n_layer ? r->n_alloc : u->n_layer;
    if (w->loss_nonfinite[0])
        m->loss = nonfinite_value(w->loss_nonfinite);
    if (w->val_nonfinite[0]) /* measured, not finite */
        m->has_val = 1, m->val_loss = nonfinite_value(w->val_nonfinite);
    m->nonfinite = (w->has_loss && w->loss_null) || w->loss_nonfinite[0] || m->fault[0] ||
                   (w->has_loss && !isfinite(m->loss));
    int was_nonfinite = r->snap->s.have_metrics && r->snap->s.run[0].last.nonfinite;
    apply_settings(r, m->step);
    int prec = metrics_step_col_find("precision", strlen("precision"));
    if (!metrics_known(m, prec) && u->have_header && u->dtype[0])
        m->unknown &= ~(1u << prec); /* the header's dtype says it */
    fault_of(r, m);
    data_of(r, m);
    diagnose_step(r, m);
    state_of(r, m);
    step_timing(r);
    push_point(r, m);
    update_status(r, m);
    step_events(r, m, was_nonfinite);
    update_summary(r, m);
    if (r->on_step)
        r->on_step(r->on_ctx, m);
}

static void process_line(stream_reader *r, char *line, size_t n)
{
    r->line_no++;
    r->sum.n_lines++;
    size_t i = 0;
    while (i < n && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r'))
        i++;
    if (i == n)
        return; /* a blank line: nothing, not malformed */
    row_state *w = &r->row;
    row_reset(w);
    w->probe = r->sum.have_header;
    char err[96];
    if (jsonl_parse(line, n, row_field, w, err, sizeof err) != 0)
        malformed(r, err);
    else if (w->bad[0])
        malformed(r, w->bad);
    else if (w->is_event)
        r->sum.recognized++, event_line(r);
    else if (w->is_header)
        r->sum.recognized++, header_line(r);
    else if (w->has_step)
        r->sum.recognized++, step_line(r);
    else
        malformed(r, "not a step, an event or a header");
}

int stream_feed(stream_reader *r, const char *data, size_t n)
{
    tail_feed(&r->tl, data, n);
    size_t partial;
    tail_partial(&r->tl, &partial);
    r->sum.partial_bytes = (long)partial;
    int changed = r->snap->s.seq != r->seen_seq;
    r->seen_seq = r->snap->s.seq;
    return changed;
}

int stream_poll(stream_reader *r, size_t max_bytes, int *eof)
{
    tail_poll(&r->tl, max_bytes, eof);
    return stream_feed(r, NULL, 0);
}

/* ---- is it a stream, and is its writer there --------------------------------------- */

int stream_is_stream(const stream_reader *r)
{
    if (r->sum.recognized > 0)
        return 1;
    size_t i = 0, len;
    const char *p = tail_partial(&r->tl, &len);
    while (i < len && (p[i] == ' ' || p[i] == '\t'))
        i++;
    /* a first line still being written may yet be one; anything else is not */
    int partial_bad = len > 0 && (i == len || p[i] != '{');
    return !(r->sum.malformed > 0 || partial_bad);
}

void stream_set_quiet(stream_reader *r, double seconds) { r->quiet_min = seconds; }

int stream_acked(const stream_reader *r, long seq)
{
    int n = r->n_acked < STREAM_ACKS ? r->n_acked : STREAM_ACKS;
    for (int i = 0; i < n; i++)
        if (r->acked[i] == seq)
            return 1;
    return 0;
}

/* The header's writer runs no more: its host is this one, and its pid is
 * not a process (a pid reused since would read as alive: never a false
 * "gone"). */
static int writer_gone(const stream_reader *r)
{
    char host[256];
    if (!r->host[0] || r->pid <= 0 || gethostname(host, sizeof host) != 0)
        return 0;
    host[sizeof host - 1] = 0;
    if (strcmp(host, r->host))
        return 0;
    return kill((pid_t)r->pid, 0) != 0 && errno == ESRCH;
}

stream_live stream_liveness(const stream_reader *r, double now, char *text, size_t n)
{
    const stream_summary *u = &r->sum;
    if (!stream_found(r)) {
        snprintf(text, n, "waiting for %s to appear", tail_base_name(r->path));
        return STREAM_LIVE_WAITING;
    }
    if (!stream_is_stream(r)) {
        snprintf(text, n, "not a normscope stream");
        return STREAM_LIVE_NOT_STREAM;
    }
    if (u->n_lines == 0) { /* a probe's first line comes with its first step */
        snprintf(text, n, "waiting for the first line of %s", tail_base_name(r->path));
        return STREAM_LIVE_WAITING;
    }
    if (u->ended && u->end_rank >= 0) {
        snprintf(text, n, "ended at step %ld (%s, rank %d)", u->end_step, u->end_reason,
                 u->end_rank);
        return STREAM_LIVE_ENDED;
    }
    if (u->ended) {
        snprintf(text, n, "ended at step %ld (%s)", u->end_step, u->end_reason);
        return STREAM_LIVE_ENDED;
    }
    if (u->have_header && writer_gone(r)) {
        snprintf(text, n, "writer gone (pid %ld ended without an end line)", r->pid);
        return STREAM_LIVE_GONE;
    }
    double since = r->last_step_at > 0 ? now - r->last_step_at : 0;
    double bound = 4 * r->step_gap > r->quiet_min ? 4 * r->step_gap : r->quiet_min;
    if (r->last_step_at > 0 && since > bound && r->snap->s.state != TRAINER_PAUSED) {
        snprintf(text, n, "no new step for %.0f s", since);
        return STREAM_LIVE_QUIET;
    }
    text[0] = 0;
    return STREAM_LIVE_RUNNING;
}

/* ---- the replay ------------------------------------------------------------------ */

void stream_snapshot_at(const stream_reader *r, long at, trainer_snapshot *dst)
{
    memcpy(dst, r->snap, sizeof *dst);
    trainer_status *s = &dst->s;
    if (at < 0 || at < trainer_hist_first(s) || at >= s->hist_total || r->n_alloc == 0)
        return;
    long i = at % TRAINER_HIST;
    const trainer_point *pt = &r->snap->hist[i];
    const step_extra *x = &r->extra[i];
    step_metrics *m = &s->run[0].last;
    m->step = pt->step;
    m->loss = pt->run[0].loss;
    m->has_val = !isnan(pt->run[0].val_loss);
    m->val_loss = pt->run[0].val_loss;
    m->lr = pt->lr;
    m->nonfinite = pt->nonfinite;
    m->grad_norm = x->grad_norm;
    m->loss_scale = x->loss_scale;
    m->skipped = x->skipped;
    memcpy(m->fault, x->fault, sizeof m->fault);
    int L = m->n_layer < r->n_alloc ? m->n_layer : r->n_alloc;
    for (int l = 0; l < L; l++)
        m->layer[l] = r->rows[(size_t)i * (size_t)r->n_alloc + (size_t)l];
    s->steps_done = pt->step;
    s->run[0].loss = pt->run[0].loss;
    s->run[0].lr_next = s->run[0].lr_peak = pt->lr;
    s->state = pt->nonfinite ? TRAINER_DIVERGED : s->state == TRAINER_DIVERGED ? TRAINER_RUNNING
                                                                               : s->state;
}

/* ---- the summary ------------------------------------------------------------------ */

/* The layers with the smallest and largest gradient norm at the last step
 * whose layer norms were all finite, and their ratio. */
static void print_gradients(FILE *f, const stream_summary *u)
{
    if (!u->layer_grads_said) {
        fputs("gradient norms: not in the stream (no layer's gradient norm was said)\n", f);
        return;
    }
    if (!u->have_finite) {
        fputs("gradient norms: no step with finite layer gradient norms\n", f);
        return;
    }
    const step_metrics *m = &u->last_finite;
    int lo = -1, hi = -1; /* over the layers whose norm is known */
    for (int l = 0; l < m->n_layer; l++) {
        if (!metrics_layer_gnorm_known(&m->layer[l]))
            continue;
        if (lo < 0 || metrics_layer_gnorm(&m->layer[l]) < metrics_layer_gnorm(&m->layer[lo]))
            lo = l;
        if (hi < 0 || metrics_layer_gnorm(&m->layer[l]) > metrics_layer_gnorm(&m->layer[hi]))
            hi = l;
    }
    double a = metrics_layer_gnorm(&m->layer[lo]), b = metrics_layer_gnorm(&m->layer[hi]);
    fprintf(f, "gradient norms at step %ld: smallest layer %d %.3e, largest layer %d %.3e, ratio ",
            m->step, lo, a, hi, b);
    metrics_print_num(f, a > 0 ? b / a : INFINITY, 4);
    fputc('\n', f);
}

/* The rules' word on the run: the cause (the first diagnosis) with what
 * to try and its fix, and the warnings. No finding is said as that, not
 * as "healthy": a verdict needs its questions asked. */
static void print_diagnosis(FILE *f, const stream_reader *r)
{
    const stream_summary *u = &r->sum;
    if (u->n_layer < 1) {
        fputs("diagnosis: not made (the lab's rules read layers; the stream has none)\n", f);
        return;
    }
    if (u->diagnoses) {
        char cmd[64], fix[320];
        fprintf(f, "diagnosis at step %ld: %s\n  try: %s\n", u->cause.step, u->cause.text,
                u->cause.hint);
        stream_fix(r, &u->cause, cmd, sizeof cmd, fix, sizeof fix);
        if (fix[0])
            fprintf(f, "  fix: %s\n", fix);
        if (u->diagnoses > 1)
            fprintf(f, "  (%ld diagnoses in all)\n", u->diagnoses);
    } else if (u->nonfinite_step) {
        fputs("diagnosis: no rule names a cause of the non-finite step\n", f);
    } else {
        fputs("diagnosis: none (no rule found a cause to name)\n", f);
    }
    if (u->warnings)
        fprintf(f, "warnings: %ld (the first at step %ld: %s)\n", u->warnings,
                u->first_warning.step, u->first_warning.text);
    else
        fputs("warnings: none\n", f);
    const trainer_diagnosis *v = &r->snap->s.diag[0];
    char line[DIAG_TEXT + 64];
    snapshot_verdict_text(v, line, sizeof line);
    fprintf(f, "%s\n", line);
    for (int i = 0; i < v->n_checks; i++) {
        snapshot_check_text(&v->checks[i], line, sizeof line);
        fprintf(f, "  %s\n", line);
    }
    long every = u->have_header ? u->every : 1;
    if (every > 1) /* the rules' windows are rows: say what a row is */
        fprintf(f, "  (metrics every %ld steps: the rules read the %ld steps written, and a "
                "count or a mean \"of N steps\" above is of written steps)\n", every, u->rows);
}


/* How many steps were not finite, as counted: the writer's own count
 * (nonfinite_steps: its watch sees every step), else the steps written,
 * which with metrics every N steps are not all the steps. */
static void print_nonfinite_count(FILE *f, const stream_summary *u)
{
    long every = u->have_header ? u->every : 1;
    if (u->nonfinite_said >= 0)
        fprintf(f, "%ld non-finite step%s", u->nonfinite_said, u->nonfinite_said == 1 ? "" : "s");
    else if (every <= 1 && u->nonfinite_rows > 0)
        fprintf(f, "%ld non-finite step%s", u->nonfinite_rows, u->nonfinite_rows == 1 ? "" : "s");
    else if (u->nonfinite_rows > 0)
        fprintf(f, "%ld of the %ld steps written were non-finite; metrics every %ld steps",
                u->nonfinite_rows, u->rows, every);
    else
        fprintf(f, "step %ld was not written; none of the %ld steps written was non-finite",
                u->nonfinite_step, u->rows);
}

/* Is an end line due? A header's stream (a probe's) has one at its end,
 * and so will an empty file's (nothing written yet); normscope's own
 * --jsonl rows have none. */
static int end_expected(const stream_summary *u)
{
    return u->have_header || u->n_lines == 0;
}

void stream_print_summary(FILE *f, const stream_reader *r, const char *path)
{
    const stream_summary *u = &r->sum;
    fprintf(f, "stream: %s", path);
    if (u->have_header)
        fprintf(f, " (%s %s, world size %d, %s, metrics every %ld steps)",
                u->source[0] ? u->source : "?", u->model[0] ? u->model : "model", u->world_size,
                u->dtype[0] ? u->dtype : "float32", u->every);
    else if (u->n_lines == 0)
        fputs(" (empty: no line written yet)", f);
    else
        fputs(" (no header: normscope --jsonl rows)", f);
    fputc('\n', f);
    fprintf(f, "layers: %d", u->n_layer);
    if (u->n_layer_stream > u->n_layer)
        fprintf(f, " shown of %d", u->n_layer_stream);
    fputc('\n', f);
    if (u->rows == 0)
        fputs("steps: 0\n", f);
    else
        fprintf(f, "steps: %ld (steps %ld..%ld)\n", u->rows, u->first_step, u->last_step);
    if (u->rows > 0) {
        fputs("last loss: ", f);
        metrics_print_num(f, u->last_loss, 4);
        fprintf(f, " at step %ld\n", u->last_step);
    }
    if (u->last_val_step > 0) {
        fputs("validation loss: ", f);
        metrics_print_num(f, u->last_val, 4);
        fprintf(f, " at step %ld\n", u->last_val_step);
    }
    if (u->nonfinite_step) {
        fprintf(f, "first non-finite: step %ld, %s%s%s (", u->nonfinite_step,
                u->nonfinite_where[0] ? u->nonfinite_where : "the module is not named",
                u->nonfinite_loss[0] ? "; loss " : "", u->nonfinite_loss);
        print_nonfinite_count(f, u);
        fputs(")\n", f);
    } else {
        fputs("first non-finite: none\n", f);
    }
    if (u->rows > 0) {
        print_gradients(f, u);
        print_diagnosis(f, r);
    }
    fprintf(f, "spikes: %ld", u->spikes);
    for (long i = 0; i < u->spikes && i < STREAM_SPIKES; i++)
        fprintf(f, "%s%ld", i ? ", " : " (steps ", u->spike_step[i]);
    fputs(u->spikes > STREAM_SPIKES ? ", ...)\n" : u->spikes ? ")\n" : "\n", f);
    fprintf(f, "malformed lines: %ld", u->malformed);
    if (u->malformed)
        fprintf(f, " (the first: line %ld)", u->first_malformed_line);
    fputc('\n', f);
    if (u->truncations || u->replacements || u->restarts)
        fprintf(f, "restarts: %ld truncated, %ld replaced, %ld went back or a new header\n",
                u->truncations, u->replacements, u->restarts);
    if (u->partial_bytes)
        fprintf(f, "unfinished last line: %ld bytes without a newline, not read\n",
                u->partial_bytes);
    if (u->ended && u->end_rank >= 0)
        fprintf(f, "end: %s (rank %d)\n", u->end_text[0] ? u->end_text : u->end_reason,
                u->end_rank);
    else if (u->ended)
        fprintf(f, "end: %s\n", u->end_text[0] ? u->end_text : u->end_reason);
    else if (end_expected(u))
        fputs("end: no end line (the run is still writing, or its writer was killed)\n", f);
}

/* ---- a finding's fix, for a run outside the lab ------------------------------------ */

long stream_checkpoint_at(const stream_reader *r, long step, char *name, size_t n)
{
    long best = -1;
    int k = r->n_ckpt < STREAM_CKPTS ? r->n_ckpt : STREAM_CKPTS;
    for (int i = 0; i < k; i++)
        if (r->ckpt[i].updates <= step && r->ckpt[i].updates > best) {
            best = r->ckpt[i].updates;
            snprintf(name, n, "%s", r->ckpt[i].name);
        }
    return best;
}

/* The lab's settings a fix names, as a PyTorch script says them */
static const struct {
    const char *lab, *torch;
} fix_words[] = {
    {"precision bf16", "train in bfloat16 (autocast dtype=torch.bfloat16)"},
    {"fp32-norms on", "compute the norms and the loss in float32"},
    {"warmup on", "an LR warmup"},
    {"norm pre", "Pre-LN (norm_first=True)"},
    {"clip 0", "no gradient clipping"},
    {"kind layernorm", "nn.LayerNorm for its norms"},
};

/* One command of a fix: an LR change becomes the control file's factor
 * (an absolute LR over the one in force); the rest is the script's. */
static void fix_part(const stream_reader *r, const char *part, char *cmd, size_t cn, char *words,
                     size_t wn)
{
    double x;
    float lr = r->snap->s.run[0].last.lr;
    char tail;
    if (sscanf(part, "lr x%lf%c", &x, &tail) == 1 && x > 0) {
        snprintf(cmd + strlen(cmd), cn - strlen(cmd), "%slr x%g", cmd[0] ? ";" : "", x);
        return;
    }
    if (sscanf(part, "lr %lf%c", &x, &tail) == 1 && x > 0 && isfinite(lr) && lr > 0) {
        snprintf(cmd + strlen(cmd), cn - strlen(cmd), "%slr x%.3g", cmd[0] ? ";" : "", x / lr);
        return;
    }
    const char *say = NULL;
    for (size_t i = 0; i < sizeof fix_words / sizeof fix_words[0]; i++)
        if (!strcmp(part, fix_words[i].lab))
            say = fix_words[i].torch;
    snprintf(words + strlen(words), wn - strlen(words), "%s%s", words[0] ? ", " : "",
             say ? say : part);
}

int stream_fix(const stream_reader *r, const diag_finding *f, char *cmd, size_t cn, char *text,
               size_t tn)
{
    char words[160] = "", parts[DIAG_FIX_TEXT];
    cmd[0] = text[0] = 0;
    snprintf(parts, sizeof parts, "%s", f->fix);
    for (char *save = NULL, *p = strtok_r(parts, ";", &save); p; p = strtok_r(NULL, ";", &save)) {
        while (*p == ' ')
            p++;
        if (*p)
            fix_part(r, p, cmd, cn, words, sizeof words);
    }
    if (!cmd[0] && !words[0])
        return 0;
    char what[256];
    snprintf(what, sizeof what, "%s%s%s%s", cmd[0] ? cmd : "", cmd[0] && words[0] ? "; " : "",
             words[0] ? "in the training script: " : "", words);
    if (f->fix_from == DIAG_FROM_HERE) {
        snprintf(text, tn, "%s, from this step", what);
        return 0;
    }
    char name[STREAM_NAME];
    long k = f->fix_from == DIAG_FROM_SNAPSHOT ? stream_checkpoint_at(r, f->fix_before, name,
                                                                      sizeof name) : -1;
    if (k >= 0)
        snprintf(text, tn, "needs the weights of step %ld or earlier: stop the run and resume from "
                 "%s (after %ld updates; torch.load it, then load_state_dict its model and "
                 "optimizer) with %s", f->fix_before, name, k, what);
    else if (f->fix_from == DIAG_FROM_SNAPSHOT)
        snprintf(text, tn, "needs the weights of step %ld or earlier, and the run announced no "
                 "checkpoint that old: restart from step 0 with %s", f->fix_before, what);
    else
        snprintf(text, tn, "restart from step 0 (a fresh init) with %s", what);
    return 1;
}

/* ---- the control file ------------------------------------------------------------- */

int stream_control_path(const char *stream_path, char *out, size_t n)
{
    int k = snprintf(out, n, "%s.ctl", stream_path);
    return k < 0 || (size_t)k >= n ? -1 : 0;
}

/* The highest "<seq> " at the start of a line of fd, 0 if none; reads at
 * most STREAM_CONTROL_MAX bytes (a control file is a few lines a command) */
static long highest_seq(int fd)
{
    char b[4096];
    long best = 0, cur = 0;
    int state = 0; /* 0 at a line start, 1 in its digits, 2 in the rest */
    off_t off = 0;
    while (off < STREAM_CONTROL_MAX) {
        ssize_t k = pread(fd, b, sizeof b, off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        off += k;
        for (ssize_t i = 0; i < k; i++) {
            char ch = b[i];
            if (ch == '\n') {
                state = 0, cur = 0;
            } else if (state < 2 && dig(ch) && cur <= (LONG_MAX - 9) / 10) {
                cur = cur * 10 + (ch - '0'), state = 1;
            } else {
                if (state == 1 && ch == ' ' && cur > best)
                    best = cur;
                state = 2;
            }
        }
    }
    return best;
}

/* path opened to append without following a link, created 0600 when new;
 * refused (-1, the reason in err) unless it is a regular file of ours
 * that neither group nor others may write: the file steers a run */
static int control_open(const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
    if (fd < 0) {
        int e = errno;
        struct stat ls;
        int link = lstat(path, &ls) == 0 && S_ISLNK(ls.st_mode);
        snprintf(err, errlen, "%s: %s", path, link ? "a symbolic link: not followed" : strerror(e));
        return -1;
    }
    struct stat st;
    char why[64] = "";
    if (fstat(fd, &st) != 0)
        snprintf(why, sizeof why, "%s", strerror(errno));
    else if (!S_ISREG(st.st_mode))
        snprintf(why, sizeof why, "not a regular file");
    else if (st.st_uid != geteuid())
        snprintf(why, sizeof why, "owned by another user (uid %ld)", (long)st.st_uid);
    else if (st.st_mode & (S_IWGRP | S_IWOTH))
        snprintf(why, sizeof why, "writable by group or others");
    if (why[0]) {
        snprintf(err, errlen, "%s: %s: not sending commands through it", path, why);
        close(fd);
        return -1;
    }
    return fd;
}

int stream_control_send(const char *stream_path, const char *command, long *seq, char *err,
                        size_t errlen)
{
    char path[ATOMIC_PATH_MAX + 8];
    if (stream_control_path(stream_path, path, sizeof path) != 0) {
        snprintf(err, errlen, "%.60s...: path too long", stream_path);
        return -1;
    }
    int fd = control_open(path, err, errlen);
    if (fd < 0)
        return -1;
    long n = highest_seq(fd) + 1;
    char line[128];
    int len = snprintf(line, sizeof line, "%ld %s\n", n, command);
    /* one write: the probe reads whole lines, never half a command */
    ssize_t w = len > 0 && (size_t)len < sizeof line ? write(fd, line, (size_t)len) : -1;
    int e = errno;
    close(fd);
    if (w != len) {
        snprintf(err, errlen, "%s: %s", path, w < 0 ? strerror(e) : "short write");
        return -1;
    }
    if (seq)
        *seq = n;
    return 0;
}

/* ---- --follow --headless ------------------------------------------------------------ */

typedef struct {
    atomic_file af;
    int header_done;
    const stream_reader *r;
} csv_out;

static void csv_row(void *ctx, const step_metrics *m)
{
    csv_out *c = ctx;
    if (!c->header_done) {
        metrics_csv_header(c->af.f, m->n_layer);
        c->header_done = 1;
    }
    metrics_csv_row_as_read(c->af.f, m, stream_digits(c->r));
}

static void nap_ms(int ms)
{
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

/* Read to the end; with steps > 0, follow until that step is read. */
static int read_stream(stream_reader *r, const char *path, long steps, volatile sig_atomic_t *stop)
{
    int eof = 0, said = 0;
    for (;;) {
        stream_poll(r, 0, &eof);
        if (stop && *stop)
            return 130;
        int err = tail_open_err(&r->tl);
        int missing = !stream_found(r) && (err == ENOENT || !err);
        if (!stream_found(r) && (steps <= 0 || !missing)) {
            /* only a file yet to come is waited for */
            fprintf(stderr, "normscope: --follow %s: %s%s\n", path, strerror(missing ? ENOENT : err),
                    missing ? " (with --steps N it waits for the file)" : "");
            return 2;
        }
        if (stream_found(r) && eof && !stream_is_stream(r)) {
            fprintf(stderr, "normscope: --follow %s: not a normscope stream", path);
            if (r->sum.first_malformed_line)
                fprintf(stderr, " (line %ld is not a JSON object of the format)",
                        r->sum.first_malformed_line);
            fputc('\n', stderr);
            return 2;
        }
        if (steps <= 0)
            return 0;
        if (r->sum.rows > 0 && r->sum.last_step >= steps)
            return 0;
        if (!stream_found(r) && !said) {
            fprintf(stderr, "normscope: --follow %s: waiting for the file to appear\n", path);
            said = 1;
        }
        nap_ms(100);
    }
}

int stream_headless(const char *path, long steps, const char *csv_path, int quiet,
                    volatile sig_atomic_t *stop)
{
    stream_reader *r = stream_open(path);
    if (!r) {
        fprintf(stderr, "normscope: out of memory\n");
        return 1;
    }
    csv_out csv;
    memset(&csv, 0, sizeof csv);
    char err[ATOMIC_PATH_MAX + 128];
    if (csv_path) {
        if (atomicio_open(&csv.af, csv_path, err, sizeof err) != 0) {
            fprintf(stderr, "normscope: --csv %s\n", err);
            stream_free(r);
            return 2;
        }
        csv.r = r;
        stream_on_step(r, csv_row, &csv);
    }
    int status = read_stream(r, path, steps, stop);
    if (csv_path) {
        if (status == 2)
            atomicio_abort(&csv.af);
        else if (atomicio_commit(&csv.af, err, sizeof err) != 0) {
            fprintf(stderr, "normscope: --csv %s\n", err);
            status = status ? status : 1;
        }
    }
    if (status != 2 && !quiet)
        stream_print_summary(stdout, r, path);
    if (status == 0 && (r->sum.nonfinite_step || r->sum.blew_up))
        status = STREAM_EXIT_DIVERGED;
    else if (status == 0 && steps <= 0 && end_expected(&r->sum))
        status = !r->sum.ended ? STREAM_EXIT_NO_END
                 : strcmp(r->sum.end_reason, "close") && strcmp(r->sum.end_reason, "exit")
                     ? STREAM_EXIT_ABNORMAL : 0;
    if (status == 130)
        fprintf(stderr, "normscope: interrupted at step %ld\n", r->sum.last_step);
    stream_free(r);
    return status;
}
