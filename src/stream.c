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
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "atomicio.h"
#include "config.h"
#include "metrics.h"
#include "numfmt.h"

/* ---- JSON: one flat object per line ---------------------------------------- */

typedef struct {
    char *p, *end, *base;
    char *err;
    size_t errlen;
} jcur;

static int jfail(jcur *c, const char *what)
{
    snprintf(c->err, c->errlen, "%s at column %ld", what, (long)(c->p - c->base) + 1);
    return -1;
}

static int at(const jcur *c, char ch) { return c->p < c->end && *c->p == ch; }
static int dig(char ch) { return ch >= '0' && ch <= '9'; }

static void jws(jcur *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\r' || *c->p == '\n'))
        c->p++;
}

static int hex4(jcur *c, unsigned *out)
{
    if (c->end - c->p < 4)
        return jfail(c, "short \\u escape");
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char h = c->p[i];
        int d = dig(h) ? h - '0' : (h >= 'a' && h <= 'f') ? h - 'a' + 10
                                 : (h >= 'A' && h <= 'F') ? h - 'A' + 10 : -1;
        if (d < 0)
            return jfail(c, "bad \\u escape");
        v = v * 16 + (unsigned)d;
    }
    c->p += 4;
    *out = v;
    return 0;
}

static size_t put_utf8(char *o, unsigned cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* \uXXXX (and a surrogate pair); what cannot be a character becomes '?',
 * NUL included, so a decoded string is one C string */
static int junicode(jcur *c, unsigned *cp)
{
    if (hex4(c, cp))
        return -1;
    if (*cp >= 0xD800 && *cp < 0xDC00) {
        unsigned lo = 0;
        if (c->end - c->p >= 6 && c->p[0] == '\\' && c->p[1] == 'u') {
            c->p += 2;
            if (hex4(c, &lo))
                return -1;
        }
        *cp = lo >= 0xDC00 && lo < 0xE000 ? 0x10000 + ((*cp - 0xD800) << 10) + (lo - 0xDC00) : '?';
    } else if ((*cp >= 0xDC00 && *cp < 0xE000) || *cp == 0) {
        *cp = '?';
    }
    return 0;
}

/* The string at c->p, decoded in place: never longer than its escaped
 * form, so the NUL fits where the closing quote was at the latest. */
static int jstring(jcur *c, char **out, size_t *len)
{
    if (!at(c, '"'))
        return jfail(c, "expected a string");
    char *o = ++c->p, *start = o;
    for (;;) {
        if (c->p >= c->end)
            return jfail(c, "unterminated string");
        unsigned char ch = (unsigned char)*c->p;
        if (ch == '"')
            break;
        if (ch < 0x20)
            return jfail(c, "control character in a string");
        if (ch != '\\') {
            *o++ = *c->p++;
            continue;
        }
        if (c->end - c->p < 2)
            return jfail(c, "unterminated string");
        char e = c->p[1];
        c->p += 2;
        static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
        const char *k = e ? strchr(from, e) : NULL;
        if (k) {
            *o++ = to[k - from];
        } else if (e == 'u') {
            unsigned cp;
            if (junicode(c, &cp))
                return -1;
            o += put_utf8(o, cp);
        } else {
            c->p--;
            return jfail(c, "bad escape in a string");
        }
    }
    *o = 0;
    c->p++;
    *out = start;
    *len = (size_t)(o - start);
    return 0;
}

/* A JSON number, or NaN / Infinity / -Infinity (what Python's json module
 * writes unless told not to: read rather than refused). */
static int jnumber(jcur *c, double *out)
{
    static const struct {
        const char *w;
        double v;
    } lit[] = {{"NaN", NAN}, {"Infinity", INFINITY}, {"-Infinity", -INFINITY}};
    for (int i = 0; i < 3; i++) {
        size_t n = strlen(lit[i].w);
        if ((size_t)(c->end - c->p) >= n && !memcmp(c->p, lit[i].w, n)) {
            c->p += n;
            *out = lit[i].v;
            return 0;
        }
    }
    char *q = c->p;
    if (q < c->end && *q == '-')
        q++;
    if (q >= c->end || !dig(*q))
        return jfail(c, "expected a value");
    if (*q == '0')
        q++;
    else
        while (q < c->end && dig(*q))
            q++;
    if (q < c->end && *q == '.') {
        if (++q >= c->end || !dig(*q))
            return jfail(c, "bad number");
        while (q < c->end && dig(*q))
            q++;
    }
    if (q < c->end && (*q == 'e' || *q == 'E')) {
        q++;
        if (q < c->end && (*q == '+' || *q == '-'))
            q++;
        if (q >= c->end || !dig(*q))
            return jfail(c, "bad number");
        while (q < c->end && dig(*q))
            q++;
    }
    char buf[64];
    size_t n = (size_t)(q - c->p);
    if (n >= sizeof buf)
        return jfail(c, "number too long");
    memcpy(buf, c->p, n);
    buf[n] = 0;
    *out = strtod(buf, NULL); /* 1e999 is inf: data, as NaN is */
    c->p = q;
    return 0;
}

static int jword(jcur *c, const char *w)
{
    size_t n = strlen(w);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, w, n))
        return jfail(c, "expected a value");
    c->p += n;
    return 0;
}

static int jscalar(jcur *c, stream_jvalue *v)
{
    memset(v, 0, sizeof *v);
    if (c->p >= c->end)
        return jfail(c, "expected a value");
    switch (*c->p) {
    case '"': {
        char *s;
        v->type = STREAM_J_STR;
        if (jstring(c, &s, &v->len))
            return -1;
        v->str = s;
        return 0;
    }
    case 't': v->type = STREAM_J_BOOL, v->num = 1; return jword(c, "true");
    case 'f': v->type = STREAM_J_BOOL, v->num = 0; return jword(c, "false");
    case 'n': v->type = STREAM_J_NULL, v->num = NAN; return jword(c, "null");
    default: v->type = STREAM_J_NUM; return jnumber(c, &v->num);
    }
}

/* A nested object or array: checked, not reported */
static int jskip(jcur *c, int depth)
{
    if (depth > 32)
        return jfail(c, "nested too deeply");
    char open = *c->p, close = open == '{' ? '}' : ']';
    c->p++;
    jws(c);
    if (at(c, close)) {
        c->p++;
        return 0;
    }
    for (;;) {
        jws(c);
        if (open == '{') {
            char *k;
            size_t kl;
            if (jstring(c, &k, &kl))
                return -1;
            jws(c);
            if (!at(c, ':'))
                return jfail(c, "expected ':'");
            c->p++;
            jws(c);
        }
        stream_jvalue v;
        if (at(c, '{') || at(c, '[')) {
            if (jskip(c, depth + 1))
                return -1;
        } else if (jscalar(c, &v)) {
            return -1;
        }
        jws(c);
        if (at(c, ',')) {
            c->p++;
            continue;
        }
        if (at(c, close)) {
            c->p++;
            return 0;
        }
        return jfail(c, open == '{' ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

/* A top-level field's value: a scalar, or an array of them (each reported
 * with its index); anything deeper is skipped. */
static int jfield(jcur *c, const char *key, size_t kl, stream_jfield cb, void *ctx)
{
    stream_jvalue v;
    if (at(c, '{'))
        return jskip(c, 1);
    if (!at(c, '[')) {
        if (jscalar(c, &v))
            return -1;
        v.index = -1;
        cb(ctx, key, kl, &v);
        return 0;
    }
    c->p++;
    jws(c);
    if (at(c, ']')) {
        c->p++;
        return 0;
    }
    for (int idx = 0;; idx++) {
        jws(c);
        if (at(c, '{') || at(c, '[')) {
            if (jskip(c, 2))
                return -1;
        } else {
            if (jscalar(c, &v))
                return -1;
            v.index = idx;
            cb(ctx, key, kl, &v);
        }
        jws(c);
        if (at(c, ',')) {
            c->p++;
            continue;
        }
        if (at(c, ']')) {
            c->p++;
            return 0;
        }
        return jfail(c, "expected ',' or ']'");
    }
}

int stream_json_parse(char *line, size_t n, stream_jfield cb, void *ctx, char *err,
                      size_t errlen)
{
    jcur c = {line, line + n, line, err, errlen};
    jws(&c);
    if (!at(&c, '{'))
        return jfail(&c, "expected '{'");
    c.p++;
    jws(&c);
    if (at(&c, '}'))
        c.p++;
    else
        for (;;) {
            char *key;
            size_t kl;
            jws(&c);
            if (jstring(&c, &key, &kl))
                return -1;
            jws(&c);
            if (!at(&c, ':'))
                return jfail(&c, "expected ':'");
            c.p++;
            jws(&c);
            if (jfield(&c, key, kl, cb, ctx))
                return -1;
            jws(&c);
            if (at(&c, ',')) {
                c.p++;
                continue;
            }
            if (at(&c, '}')) {
                c.p++;
                break;
            }
            return jfail(&c, "expected ',' or '}'");
        }
    jws(&c);
    if (c.p != c.end)
        return jfail(&c, "text after the object");
    return 0;
}

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
    char event[16], text[NS_EVENT_TEXT], loss_nonfinite[8];
    char norm[16], norm_kind[16], precision[16];
    char source[32], model[64], dtype[16];
    double version, world_size, every;
    step_metrics m;
    /* the header's block names, [0, blocks) of this line (not cleared
     * between lines: only a header's are used) */
    char block[NS_MAX_LAYERS][STREAM_NAME];
} row_state;

struct stream_reader {
    char path[ATOMIC_PATH_MAX];
    int fd, found, open_err, gone_said;
    dev_t dev;
    ino_t ino;
    off_t pos;
    char *buf; /* the unterminated tail: never read until its newline */
    size_t len, cap;
    int skipping; /* inside a line longer than STREAM_LINE_MAX */
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
    char cur_norm[16], cur_kind[16], cur_prec[16]; /* settings strings in force */
    int paused, beyond_said;
    metrics_spike spike_loss, spike_gnorm;
    stream_summary sum;
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

/* The file's name for messages: its last component */
static const char *base_name(const char *p)
{
    const char *b = strrchr(p, '/');
    return b && b[1] ? b + 1 : p;
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
    s->last_val = NAN;
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
    r->sum.last_val = NAN;
    metrics_spike_reset(&r->spike_loss, METRICS_SPIKE_LOSS);
    metrics_spike_reset(&r->spike_gnorm, METRICS_SPIKE_GNORM);
    r->mark[0] = r->cur_norm[0] = r->cur_kind[0] = r->cur_prec[0] = 0;
    r->paused = r->beyond_said = 0;
    r->n_block = 0;
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
    r->snap->s.cfg.n_layer = n;
    r->snap->s.seq++;
}

stream_reader *stream_open(const char *path)
{
    stream_reader *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->snap = trainer_snapshot_new();
    if (!r->snap) {
        free(r);
        return NULL;
    }
    snprintf(r->path, sizeof r->path, "%s", path);
    r->fd = -1;
    trainer_status *s = &r->snap->s;
    settings_defaults(&s->cfg);
    s->cfg.n_layer = 0;
    s->state = TRAINER_RUNNING;
    s->last_val = NAN;
    s->prompt = "";
    r->sum.last_val = NAN;
    metrics_spike_reset(&r->spike_loss, METRICS_SPIKE_LOSS);
    metrics_spike_reset(&r->spike_gnorm, METRICS_SPIKE_GNORM);
    return r;
}

void stream_free(stream_reader *r)
{
    if (!r)
        return;
    if (r->fd >= 0)
        close(r->fd);
    free(r->buf);
    free(r->rows);
    free(r->snap);
    free(r);
}

const trainer_snapshot *stream_snapshot(const stream_reader *r) { return r->snap; }
const stream_summary *stream_summary_of(const stream_reader *r) { return &r->sum; }
long stream_hist_first(const stream_reader *r) { return trainer_hist_first(&r->snap->s); }
long stream_hist_total(const stream_reader *r) { return r->snap->s.hist_total; }
int stream_found(const stream_reader *r) { return r->found; }

const char *stream_block_name(const stream_reader *r, int layer)
{
    return layer >= 0 && layer < r->n_block ? r->block[layer] : "";
}

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
static float num_field(row_state *w, const char *key, const stream_jvalue *v)
{
    if (v->type == STREAM_J_NUM)
        return (float)v->num;
    if (v->type != STREAM_J_NULL)
        bad_type(w, key, "a number or null");
    return NAN;
}

static void str_field(row_state *w, const char *key, const stream_jvalue *v, char *dst, size_t n)
{
    if (v->type == STREAM_J_STR)
        snprintf(dst, n, "%s", v->str);
    else if (v->type != STREAM_J_NULL)
        bad_type(w, key, "a string");
}

/* "l<i>_<column>": a layer's number; unknown columns are ignored */
static void layer_field(row_state *w, const char *key, size_t kl, const stream_jvalue *v)
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
    if (idx < NS_MAX_LAYERS)
        metrics_layer_col_set(&w->m.layer[idx], col, x);
}

static void header_field(row_state *w, const char *key, size_t kl, const stream_jvalue *v)
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
        w->header_layers = v->type == STREAM_J_NUM && v->num >= 0 && v->num < 1e6 ? (int)v->num : 0;
    else if (keyis(key, kl, "world_size"))
        w->world_size = num_field(w, "world_size", v);
    else if (keyis(key, kl, "every"))
        w->every = num_field(w, "every", v);
}

static void row_field(void *ctx, const char *key, size_t kl, const stream_jvalue *v)
{
    row_state *w = ctx;
    if (v->index >= 0) { /* arrays: only the header's block names are kept */
        if (keyis(key, kl, "blocks") && v->index + 1 > w->blocks) {
            w->blocks = v->index + 1;
            if (v->index < NS_MAX_LAYERS)
                snprintf(w->block[v->index], STREAM_NAME, "%s",
                         v->type == STREAM_J_STR ? v->str : "");
        }
        return;
    }
    if (kl > 2 && key[0] == 'l' && dig(key[1])) {
        layer_field(w, key, kl, v);
        return;
    }
    step_metrics *m = &w->m;
    if (keyis(key, kl, "step")) {
        if (v->type != STREAM_J_NUM || !(v->num >= 0 && v->num < 1e15) || v->num != floor(v->num))
            bad_type(w, "step", "a whole number >= 0");
        else
            w->has_step = 1, w->step = (long)v->num;
    } else if (keyis(key, kl, "loss")) {
        w->has_loss = 1;
        w->loss_null = v->type == STREAM_J_NULL;
        m->loss = num_field(w, "loss", v);
    } else if (keyis(key, kl, "val_loss")) {
        m->val_loss = num_field(w, "val_loss", v);
        m->has_val = v->type == STREAM_J_NUM;
    } else if (keyis(key, kl, "lr")) {
        m->lr = num_field(w, "lr", v);
    } else if (keyis(key, kl, "grad_norm")) {
        m->grad_norm = num_field(w, "grad_norm", v);
    } else if (keyis(key, kl, "loss_scale")) {
        m->loss_scale = num_field(w, "loss_scale", v);
    } else if (keyis(key, kl, "tokens_per_s")) {
        m->tokens_per_s = num_field(w, "tokens_per_s", v);
    } else if (keyis(key, kl, "skipped")) {
        m->skipped = (v->type == STREAM_J_NUM || v->type == STREAM_J_BOOL) && v->num != 0;
    } else if (keyis(key, kl, "clip")) {
        m->clip = num_field(w, "clip", v);
    } else if (keyis(key, kl, "warmup")) {
        m->warmup_on = v->type == STREAM_J_STR && !strcmp(v->str, "on");
    } else if (keyis(key, kl, "fp32_norms")) {
        m->fp32_norms = v->type == STREAM_J_STR && !strcmp(v->str, "on");
    } else if (keyis(key, kl, "loss_nonfinite")) {
        str_field(w, "loss_nonfinite", v, w->loss_nonfinite, sizeof w->loss_nonfinite);
    } else if (keyis(key, kl, "first_nonfinite")) {
        str_field(w, "first_nonfinite", v, m->fault, sizeof m->fault);
    } else if (keyis(key, kl, "norm")) {
        str_field(w, "norm", v, w->norm, sizeof w->norm);
    } else if (keyis(key, kl, "norm_kind")) {
        str_field(w, "norm_kind", v, w->norm_kind, sizeof w->norm_kind);
    } else if (keyis(key, kl, "precision")) {
        str_field(w, "precision", v, w->precision, sizeof w->precision);
    } else if (keyis(key, kl, "event")) {
        w->is_event = 1;
        str_field(w, "event", v, w->event, sizeof w->event);
    } else if (keyis(key, kl, "text")) {
        str_field(w, "text", v, w->text, sizeof w->text);
    } else if (keyis(key, kl, "run")) {
        w->run_b = v->type == STREAM_J_STR && strcmp(v->str, "a") != 0;
    } else if (keyis(key, kl, "format")) {
        w->is_header = v->type == STREAM_J_STR && !strcmp(v->str, "normscope-stream");
    } else {
        header_field(w, key, kl, v);
    }
}

static void row_reset(row_state *w)
{
    memset(w, 0, offsetof(row_state, m));
    w->max_layer = -1;
    step_metrics *m = &w->m;
    memset(m, 0, offsetof(step_metrics, layer));
    m->loss = m->val_loss = m->lr = m->grad_norm = NAN;
    m->loss_scale = 1;
    /* a layer column the row does not have is not measured */
    layer_metrics none;
    for (int k = 0; k < METRICS_LAYER_COLS; k++)
        metrics_layer_col_set(&none, k, NAN);
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
    r->snap->s.cfg.precision = f >= 0 ? (numfmt)f : FMT_FP32;
    add_event(r, 0, NS_EV_INFO, "stream: %s %s, %d layers, world size %d, %s",
              u->source[0] ? u->source : "?", u->model[0] ? u->model : "model", n,
              u->world_size, u->dtype[0] ? u->dtype : "float32");
    r->n_block = w->blocks < NS_MAX_LAYERS ? w->blocks : NS_MAX_LAYERS;
    memcpy(r->block, w->block, sizeof r->block[0] * (size_t)r->n_block);
    if (w->version > 1)
        add_event(r, 0, NS_EV_NOTE, "stream format version %g (this reader knows 1): "
                  "unknown fields are ignored", w->version);
    if (n > 0)
        set_layers(r, n);
}

static void event_line(stream_reader *r)
{
    row_state *w = &r->row;
    trainer_status *s = &r->snap->s;
    long step = w->has_step ? w->step : s->steps_done;
    const char *t = w->text;
    if (!strcmp(w->event, "setting")) {
        add_event(r, step, NS_EV_SETTING, "%s", t[0] ? t : "a setting changed");
        snprintf(r->mark, sizeof r->mark, "%.*s", TRAINER_MARK - 1, t[0] ? t : "setting");
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

static void apply_settings(stream_reader *r, long step)
{
    row_state *w = &r->row;
    ns_config *cfg = &r->snap->s.cfg;
    settings_change(r, step, "norm", r->cur_norm, w->norm);
    settings_change(r, step, "norm_kind", r->cur_kind, w->norm_kind);
    settings_change(r, step, "precision", r->cur_prec, w->precision);
    int p = norm_place_parse(r->cur_norm), k = norm_kind_parse(r->cur_kind),
        f = numfmt_parse(r->cur_prec);
    if (p >= 0)
        cfg->norm = (norm_place)p;
    if (k >= 0)
        cfg->norm_kind = (norm_kind)k;
    if (f >= 0)
        cfg->precision = (numfmt)f;
    r->row.m.norm = cfg->norm;
    r->row.m.norm_kind = cfg->norm_kind;
    r->row.m.precision = cfg->precision;
}

/* The point, its heat row and its layer row at the next history slot */
static void push_point(stream_reader *r, const step_metrics *m)
{
    trainer_snapshot *p = r->snap;
    long i = p->s.hist_total % TRAINER_HIST;
    trainer_point_set(&p->hist[i], m, NULL, r->mark, NULL);
    r->mark[0] = 0;
    for (int l = 0; l < m->n_layer; l++) {
        p->heat[i][l] = metrics_layer_gnorm(&m->layer[l]);
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
    s->last = *m;
    s->have_loss = 1;
    s->loss = m->loss;
    if (m->has_val) {
        s->last_val = m->val_loss;
        s->last_val_step = m->step;
    }
    s->lr_next = s->lr_peak = m->lr;
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
        add_event(r, m->step, NS_EV_DIVERGED, "non-finite at step %ld: loss %s; first non-finite: %s",
                  m->step, loss, m->fault[0] ? m->fault : "not named");
        if (!u->nonfinite_step) {
            u->nonfinite_step = m->step;
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
    int finite = m->n_layer > 0;
    for (int l = 0; l < m->n_layer && finite; l++)
        finite = isfinite(metrics_layer_gnorm(&m->layer[l]));
    if (finite) {
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
        m->loss = !strcmp(w->loss_nonfinite, "inf") ? INFINITY
                  : !strcmp(w->loss_nonfinite, "-inf") ? -INFINITY : NAN;
    m->nonfinite = (w->has_loss && w->loss_null) || w->loss_nonfinite[0] || m->fault[0] ||
                   (w->has_loss && !isfinite(m->loss));
    int was_nonfinite = r->snap->s.have_metrics && r->snap->s.last.nonfinite;
    apply_settings(r, m->step);
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
    char err[96];
    if (stream_json_parse(line, n, row_field, w, err, sizeof err) != 0)
        malformed(r, err);
    else if (w->bad[0])
        malformed(r, w->bad);
    else if (w->is_event)
        event_line(r);
    else if (w->is_header)
        header_line(r);
    else if (w->has_step)
        step_line(r);
    else
        malformed(r, "not a step, an event or a header");
}

/* Split into lines; the unterminated tail waits for its newline. */
static void feed(stream_reader *r, const char *p, size_t n)
{
    while (n > 0) {
        const char *nl = memchr(p, '\n', n);
        size_t take = nl ? (size_t)(nl - p) : n, used = take + (nl != NULL);
        if (r->skipping) {
            r->skipping = !nl;
        } else if (r->len + take > STREAM_LINE_MAX) {
            r->line_no++;
            r->sum.n_lines++;
            malformed(r, "longer than 1 MiB: skipped");
            r->len = 0;
            r->skipping = !nl;
        } else {
            if (r->len + take + 1 > r->cap) {
                size_t cap = r->cap ? r->cap : 4096;
                while (cap < r->len + take + 1)
                    cap *= 2;
                char *nb = realloc(r->buf, cap);
                if (!nb) {
                    malformed(r, "out of memory for a line");
                    r->len = 0;
                    r->skipping = !nl;
                    p += used, n -= used;
                    continue;
                }
                r->buf = nb;
                r->cap = cap;
            }
            memcpy(r->buf + r->len, p, take);
            r->len += take;
            if (nl) {
                process_line(r, r->buf, r->len);
                r->len = 0;
            }
        }
        p += used, n -= used;
    }
    r->sum.partial_bytes = (long)r->len;
}

int stream_feed(stream_reader *r, const char *data, size_t n)
{
    feed(r, data, n);
    int changed = r->snap->s.seq != r->seen_seq;
    r->seen_seq = r->snap->s.seq;
    return changed;
}

/* ---- following the file ---------------------------------------------------------- */

static int open_file(stream_reader *r)
{
    int fd = open(r->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        close(fd);
        fd = -1;
        errno = EISDIR;
    }
    if (fd < 0) {
        if (errno != r->open_err) /* say it once, not every frame */
            add_event(r, r->snap->s.steps_done, errno == ENOENT ? NS_EV_INFO : NS_EV_NOTE,
                      errno == ENOENT ? "waiting for %s to appear" : "%s: %s",
                      base_name(r->path), strerror(errno));
        r->open_err = errno;
        return -1;
    }
    if (r->found)
        add_event(r, r->snap->s.steps_done, NS_EV_INFO, "%s is back: reading it from the start",
                  base_name(r->path));
    r->fd = fd;
    r->dev = st.st_dev;
    r->ino = st.st_ino;
    r->pos = 0;
    r->found = 1;
    r->open_err = 0;
    r->gone_said = 0;
    return 0;
}

static void restart_file(stream_reader *r)
{
    r->len = 0;
    r->skipping = 0;
    r->line_no = 0;
    reset_run(r);
}

/* A file cut shorter than what was read was rewritten: read it again. A
 * different file under the name (a new run, a rename over it) is opened
 * from its start. A removed file is kept open until a new one appears. */
static void check_file(stream_reader *r)
{
    struct stat fs, ps;
    const char *name = base_name(r->path);
    if (fstat(r->fd, &fs) == 0 && S_ISREG(fs.st_mode) && fs.st_size < r->pos) {
        add_event(r, r->snap->s.steps_done, NS_EV_NOTE,
                  "%s was truncated (%lld bytes, %lld read): reading it from the start", name,
                  (long long)fs.st_size, (long long)r->pos);
        r->sum.truncations++;
        lseek(r->fd, 0, SEEK_SET);
        r->pos = 0;
        restart_file(r);
    }
    if (stat(r->path, &ps) != 0) {
        if (!r->gone_said)
            add_event(r, r->snap->s.steps_done, NS_EV_NOTE, "%s was removed: waiting for a new one",
                      name);
        r->gone_said = 1;
        return;
    }
    if (ps.st_ino == r->ino && ps.st_dev == r->dev)
        return;
    add_event(r, r->snap->s.steps_done, NS_EV_NOTE,
              "%s was replaced by a new file: reading that from the start", name);
    r->sum.replacements++;
    close(r->fd);
    r->fd = -1;
    r->found = 0; /* not "is back": the replacement is said */
    restart_file(r);
    open_file(r);
}

int stream_poll(stream_reader *r, size_t max_bytes, int *eof)
{
    if (eof)
        *eof = 1;
    if (r->fd >= 0)
        check_file(r);
    if (r->fd < 0)
        open_file(r);
    size_t got = 0;
    while (r->fd >= 0 && (max_bytes == 0 || got < max_bytes)) {
        char chunk[1 << 16];
        ssize_t k = read(r->fd, chunk, sizeof chunk);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        r->pos += k;
        got += (size_t)k;
        feed(r, chunk, (size_t)k);
        if (eof && max_bytes && got >= max_bytes)
            *eof = 0;
    }
    int changed = r->snap->s.seq != r->seen_seq;
    r->seen_seq = r->snap->s.seq;
    return changed;
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
    step_metrics *m = &s->last;
    m->step = pt->step;
    m->loss = pt->loss;
    m->has_val = !isnan(pt->val_loss);
    m->val_loss = pt->val_loss;
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
    s->loss = pt->loss;
    s->lr_next = s->lr_peak = pt->lr;
    s->state = pt->nonfinite ? TRAINER_DIVERGED : s->state == TRAINER_DIVERGED ? TRAINER_RUNNING
                                                                               : s->state;
}

/* ---- the summary ------------------------------------------------------------------ */

/* The layers with the smallest and largest gradient norm at the last step
 * whose layer norms were all finite, and their ratio. */
static void print_gradients(FILE *f, const stream_summary *u)
{
    if (!u->have_finite) {
        fputs("gradient norms: no step with finite layer gradient norms\n", f);
        return;
    }
    const step_metrics *m = &u->last_finite;
    int lo = 0, hi = 0;
    for (int l = 1; l < m->n_layer; l++) {
        if (metrics_layer_gnorm(&m->layer[l]) < metrics_layer_gnorm(&m->layer[lo]))
            lo = l;
        if (metrics_layer_gnorm(&m->layer[l]) > metrics_layer_gnorm(&m->layer[hi]))
            hi = l;
    }
    double a = metrics_layer_gnorm(&m->layer[lo]), b = metrics_layer_gnorm(&m->layer[hi]);
    fprintf(f, "gradient norms at step %ld: smallest layer %d %.3e, largest layer %d %.3e, ratio ",
            m->step, lo, a, hi, b);
    metrics_print_num(f, a > 0 ? b / a : INFINITY, 4);
    fputc('\n', f);
}

void stream_print_summary(FILE *f, const stream_reader *r, const char *path)
{
    const stream_summary *u = &r->sum;
    fprintf(f, "stream: %s", path);
    if (u->have_header)
        fprintf(f, " (%s %s, world size %d, %s, metrics every %ld steps)",
                u->source[0] ? u->source : "?", u->model[0] ? u->model : "model", u->world_size,
                u->dtype[0] ? u->dtype : "float32", u->every);
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
    if (u->nonfinite_step)
        fprintf(f, "first non-finite: step %ld, %s%s%s (%ld non-finite steps)\n", u->nonfinite_step,
                u->nonfinite_where[0] ? u->nonfinite_where : "the module is not named",
                u->nonfinite_loss[0] ? "; loss " : "", u->nonfinite_loss, u->nonfinite_rows);
    else
        fputs("first non-finite: none\n", f);
    if (u->rows > 0)
        print_gradients(f, u);
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
}

/* ---- the control file ------------------------------------------------------------- */

int stream_control_path(const char *stream_path, char *out, size_t n)
{
    int k = snprintf(out, n, "%s.ctl", stream_path);
    return k < 0 || (size_t)k >= n ? -1 : 0;
}

/* The highest "<seq> " at the start of a line of fd, 0 if none */
static long highest_seq(int fd)
{
    char b[4096];
    long best = 0, cur = 0;
    int state = 0; /* 0 at a line start, 1 in its digits, 2 in the rest */
    off_t off = 0;
    for (;;) {
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
            } else if (state < 2 && dig(ch) && cur < 100000000000L) {
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

int stream_control_send(const char *stream_path, const char *command, long *seq, char *err,
                        size_t errlen)
{
    char path[ATOMIC_PATH_MAX + 8];
    if (stream_control_path(stream_path, path, sizeof path) != 0) {
        snprintf(err, errlen, "%.60s...: path too long", stream_path);
        return -1;
    }
    int fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
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
} csv_out;

static void csv_row(void *ctx, const step_metrics *m)
{
    csv_out *c = ctx;
    if (!c->header_done) {
        metrics_csv_header(c->af.f, m->n_layer);
        c->header_done = 1;
    }
    metrics_csv_row(c->af.f, m);
}

static void nap_ms(int ms)
{
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

/* Read to the end; with steps > 0, follow until that step is read. */
static int read_stream(stream_reader *r, const char *path, long steps, volatile sig_atomic_t *stop)
{
    int eof = 0;
    for (;;) {
        stream_poll(r, 0, &eof);
        if (stop && *stop)
            return 130;
        int missing = !stream_found(r) && (r->open_err == ENOENT || !r->open_err);
        if (!stream_found(r) && (steps <= 0 || !missing)) {
            /* only a file yet to come is waited for */
            fprintf(stderr, "normscope: --follow %s: %s%s\n", path,
                    strerror(missing ? ENOENT : r->open_err),
                    missing ? " (with --steps N it waits for the file)" : "");
            return 2;
        }
        if (steps <= 0)
            return 0;
        if (r->sum.rows > 0 && r->sum.last_step >= steps)
            return 0;
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
        if (atomic_open(&csv.af, csv_path, err, sizeof err) != 0) {
            fprintf(stderr, "normscope: --csv %s\n", err);
            stream_free(r);
            return 2;
        }
        stream_on_step(r, csv_row, &csv);
    }
    int status = read_stream(r, path, steps, stop);
    if (csv_path) {
        if (status == 2)
            atomic_abort(&csv.af);
        else if (atomic_commit(&csv.af, err, sizeof err) != 0) {
            fprintf(stderr, "normscope: --csv %s\n", err);
            status = status ? status : 1;
        }
    }
    if (status != 2 && !quiet)
        stream_print_summary(stdout, r, path);
    if (status == 0 && r->sum.nonfinite_step)
        status = 3;
    if (status == 130)
        fprintf(stderr, "normscope: interrupted at step %ld\n", r->sum.last_step);
    stream_free(r);
    return status;
}
