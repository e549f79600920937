/* test_stream.c - the metrics stream reader (stream.c) and follow mode
 * (tui_follow.c): the JSON line parser, lines split anywhere, 100 lines at
 * once, malformed lines with their numbers, unknown fields, null and
 * non-finite values, normscope's own --jsonl rows read back exactly, 96 and
 * more layers, a followed file truncated, replaced and removed, the
 * control file, the spike rule, the replay, the headless summary's exit
 * status, and the keys of follow mode. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "csv.h"
#include "jsonl.h"
#include "metrics.h"
#include "nstext.h"
#include "stream.h"
#include "testutil.h"
#include "tui.h"
#include "tui_follow.h"

/* ---- the JSON parser ------------------------------------------------------- */

typedef struct {
    int n;
    char keys[16][32];
    jsonl_value v[16];
    char strs[16][64];
} fields;

static void collect(void *ctx, const char *key, size_t kl, const jsonl_value *v)
{
    fields *f = ctx;
    if (f->n >= 16)
        return;
    snprintf(f->keys[f->n], sizeof f->keys[f->n], "%.*s", (int)kl, key);
    f->v[f->n] = *v;
    if (v->type == JSONL_STR)
        snprintf(f->strs[f->n], sizeof f->strs[f->n], "%s", v->str);
    f->n++;
}

static int parse(const char *text, fields *f, char *err, size_t errlen)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", text);
    memset(f, 0, sizeof *f);
    return jsonl_parse(buf, strlen(buf), collect, f, err, errlen);
}

static void test_json(void)
{
    fields f;
    char err[128];
    CHECK(parse("{\"a\":1.5,\"b\":\"x\\u00e9\\n\",\"c\":null,\"d\":true,\"e\":[\"p\",\"q\"],"
                "\"f\":{\"g\":[1,{\"h\":2}]},\"i\":-2e3,\"j\":NaN,\"k\":-Infinity}",
                &f, err, sizeof err) == 0);
    CHECK(f.n == 9); /* a b c d e[0] e[1] i j k: the object f is skipped */
    CHECK(!strcmp(f.keys[0], "a") && f.v[0].type == JSONL_NUM && f.v[0].num == 1.5);
    CHECK(f.v[1].type == JSONL_STR && !strcmp(f.strs[1], "x\xc3\xa9\n"));
    CHECK(f.v[2].type == JSONL_NULL && f.v[2].index == -1);
    CHECK(f.v[3].type == JSONL_BOOL && f.v[3].num == 1);
    CHECK(!strcmp(f.keys[4], "e") && f.v[4].index == 0 && !strcmp(f.strs[4], "p"));
    CHECK(f.v[5].index == 1 && !strcmp(f.strs[5], "q"));
    CHECK(!strcmp(f.keys[6], "i") && f.v[6].num == -2000);
    CHECK(!strcmp(f.keys[7], "j") && isnan(f.v[7].num));
    CHECK(!strcmp(f.keys[8], "k") && isinf(f.v[8].num) && f.v[8].num < 0);
    CHECK(parse("{\"s\":\"\\ud83d\\ude00\",\"t\":\"\\u0000\"}", &f, err, sizeof err) == 0);
    CHECK(!strcmp(f.strs[0], "\xf0\x9f\x98\x80") && !strcmp(f.strs[1], "?"));
    CHECK(parse(" {} ", &f, err, sizeof err) == 0 && f.n == 0);
    static const char *const bad[] = {
        "",           "[1]",         "{\"a\":1",     "{\"a\":1}x",   "{\"a\":01}",
        "{\"a\":1.}", "{\"a\":-}",   "{\"a\":\"x}",  "{\"a\":\"\\q\"}", "{\"a\" 1}",
        "{a:1}",      "{\"a\":tru}", "{\"a\":[1,}",  "{\"a\":1,}",   "{\"a\":\"\x01\"}",
    };
    int refused = 0, named = 0;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        refused += parse(bad[i], &f, err, sizeof err) != 0;
        named += strstr(err, "column") != NULL;
    }
    CHECK(refused == (int)(sizeof bad / sizeof bad[0]));
    CHECK(named == refused);
    /* deep nesting is refused, not a stack overflow */
    char deep[300] = "{\"a\":";
    for (int i = 0; i < 100; i++)
        strcat(deep, "[");
    CHECK(parse(deep, &f, err, sizeof err) != 0 && strstr(err, "deep"));
}

/* ---- lines into a snapshot ------------------------------------------------------ */

/* A CSV's cells by column name, not by place (the layout is the program's
 * header, which a new column changes): row k (1 = the first after the
 * header) split into f[0..n), the header into h; 0, or -1 when the text
 * has no such row. */
enum { CSV_MAX_COLS = 1024 };
typedef struct {
    char head[16384], row[16384];
    char *h[CSV_MAX_COLS], *f[CSV_MAX_COLS];
    int nh, nf;
} csv_rows;

static int csv_row_of(const char *text, int k, csv_rows *c)
{
    const char *l = text;
    for (int i = 0; i < k && l; i++)
        l = (l = strchr(l, '\n')) ? l + 1 : NULL;
    if (!l || !*l)
        return -1;
    snprintf(c->head, sizeof c->head, "%.*s", (int)strcspn(text, "\n"), text);
    snprintf(c->row, sizeof c->row, "%.*s", (int)strcspn(l, "\n"), l);
    c->nh = csv_split(c->head, c->h, CSV_MAX_COLS);
    c->nf = csv_split(c->row, c->f, CSV_MAX_COLS);
    return c->nh == c->nf ? 0 : -1;
}

/* Does row k hold exactly the cells given as "name=value" pairs, NULL
 * ended, and every other column empty? The first cell that differs is
 * said. */
static int csv_row_is(const char *text, int k, const char *const *cells)
{
    static csv_rows c;
    if (csv_row_of(text, k, &c) != 0)
        return 0;
    for (int i = 0; i < c.nh; i++) {
        const char *want = "";
        size_t n = strlen(c.h[i]);
        for (const char *const *p = cells; *p; p++)
            if (!strncmp(*p, c.h[i], n) && (*p)[n] == '=')
                want = *p + n + 1;
        if (strcmp(c.f[i], want)) {
            fprintf(stderr, "  row %d, column %s: '%s', not '%s'\n", k, c.h[i], c.f[i], want);
            return 0;
        }
    }
    return 1;
}

static const char *row3(long step, double loss)
{
    static char b[512];
    snprintf(b, sizeof b,
             "{\"step\":%ld,\"loss\":%g,\"lr\":0.001,\"grad_norm\":1.5,"
             "\"l0_grad_attn\":0.1,\"l0_grad_ffn\":0.2,\"l0_grad_ln\":0.01,"
             "\"l1_grad_attn\":0.3,\"l1_grad_ffn\":0.4,\"l1_grad_ln\":0.02,"
             "\"l2_grad_attn\":%g,\"l2_grad_ffn\":0.6,\"l2_grad_ln\":0.03,\"l2_act_max\":7}\n",
             step, loss, 0.5 + step * 0.001);
    return b;
}

static int feed_str(stream_reader *r, const char *s) { return stream_feed(r, s, strlen(s)); }

static int has_event(const trainer_snapshot *s, ns_event_kind kind, const char *text)
{
    for (long i = s->s.ev_total - TRAINER_EVENTS; i < s->s.ev_total; i++)
        if (i >= 0 && s->ev[i % TRAINER_EVENTS].kind == kind &&
            strstr(s->ev[i % TRAINER_EVENTS].text, text))
            return 1;
    return 0;
}

static void test_partial_lines(void)
{
    stream_reader *r = stream_open("/nonexistent/x.nsj");
    const char *l = row3(1, 2.5);
    size_t n = strlen(l);
    feed_str(r, ""); /* nothing */
    stream_feed(r, l, n / 2);
    CHECK(stream_summary_of(r)->rows == 0); /* half a line is not read */
    CHECK(stream_summary_of(r)->partial_bytes == (long)(n / 2));
    CHECK(stream_feed(r, l + n / 2, n - n / 2) == 1);
    const trainer_snapshot *s = stream_snapshot(r);
    CHECK(stream_summary_of(r)->rows == 1 && s->s.n_layer == 3);
    CHECK(s->s.have_metrics && s->s.run[0].last.step == 1 && s->s.run[0].last.loss == 2.5f);
    CHECK(s->s.run[0].last.layer[2].act_max == 7.0f && isnan(s->s.run[0].last.layer[0].act_max));
    CHECK(s->hist[0].step == 1 && s->s.hist_total == 1);
    CHECK(t_close(s->run[0].heat[0][1], sqrt(0.09 + 0.16 + 0.0004), 1e-6, 0));
    /* byte by byte gives the same as at once */
    stream_reader *b = stream_open("/nonexistent/y.nsj");
    char many[8192] = "";
    for (int i = 2; i <= 9; i++)
        strcat(many, row3(i, 2.0 + i));
    for (size_t i = 0; many[i]; i++)
        stream_feed(b, many + i, 1);
    feed_str(r, many);
    CHECK(stream_summary_of(b)->rows == 8 && stream_summary_of(r)->rows == 9);
    CHECK(stream_snapshot(b)->s.run[0].last.loss == stream_snapshot(r)->s.run[0].last.loss);
    CHECK(stream_snapshot(b)->s.run[0].last.layer[2].grad_attn == stream_snapshot(r)->s.run[0].last.layer[2].grad_attn);
    /* CRLF lines and blank lines are fine */
    feed_str(b, "\r\n\n{\"step\":10,\"loss\":1}\r\n");
    CHECK(stream_summary_of(b)->rows == 9 && stream_summary_of(b)->malformed == 0);
    stream_free(r);
    stream_free(b);
}

static void test_hundred_at_once(void)
{
    stream_reader *r = stream_open("/nonexistent/z.nsj");
    size_t cap = 100 * 600, n = 0;
    char *all = malloc(cap);
    for (int i = 1; i <= 100; i++)
        n += (size_t)snprintf(all + n, cap - n, "%s", row3(i, 3.0 - i * 0.01));
    CHECK(stream_feed(r, all, n) == 1);
    const trainer_snapshot *s = stream_snapshot(r);
    CHECK(stream_summary_of(r)->rows == 100 && s->s.hist_total == 100);
    CHECK(s->hist[99].step == 100 && s->s.steps_done == 100);
    CHECK(t_close(s->hist[49].run[0].loss, 2.5, 1e-6, 0));
    free(all);
    stream_free(r);
}

static void test_malformed(void)
{
    stream_reader *r = stream_open("/nonexistent/m.nsj");
    feed_str(r, row3(1, 2.0));
    feed_str(r, "not json\n");                                   /* line 2 */
    feed_str(r, "{\"step\":\"two\",\"loss\":1}\n");             /* line 3: a string step */
    feed_str(r, "{\"loss\":1}\n");                              /* line 4: no step */
    feed_str(r, "{\"step\":2,\"loss\":\"x\"}\n");               /* line 5: loss a string */
    feed_str(r, "{\"step\":3,\"loss\":1.5,\"zzz\":{\"a\":[1]},\"l0_newcol\":4,\"l0_grad_attn\":0.5}\n");
    const trainer_snapshot *s = stream_snapshot(r);
    const stream_summary *u = stream_summary_of(r);
    CHECK(u->malformed == 4 && u->first_malformed_line == 2);
    CHECK(has_event(s, NS_EV_NOTE, "line 2: malformed"));
    CHECK(has_event(s, NS_EV_NOTE, "line 3: malformed"));
    CHECK(has_event(s, NS_EV_NOTE, "line 4: malformed"));
    CHECK(has_event(s, NS_EV_NOTE, "line 5: malformed (\"loss\""));
    CHECK(u->rows == 2 && s->s.run[0].last.step == 3 && s->s.run[0].last.loss == 1.5f); /* unknowns ignored */
    CHECK(s->s.run[0].last.layer[0].grad_attn == 0.5f);
    /* a line over STREAM_LINE_MAX is malformed, the next one is read */
    size_t big = STREAM_LINE_MAX + 100;
    char *huge = malloc(big + 1);
    memset(huge, 'x', big);
    huge[big - 1] = '\n';
    stream_feed(r, huge, big);
    feed_str(r, "{\"step\":4,\"loss\":1.25}\n");
    CHECK(u->malformed == 5 && has_event(s, NS_EV_NOTE, "line 7: malformed (longer"));
    CHECK(s->s.run[0].last.step == 4 && u->rows == 3);
    free(huge);
    stream_free(r);
}

static void test_nonfinite(void)
{
    stream_reader *r = stream_open("/nonexistent/n.nsj");
    feed_str(r, row3(1, 2.0));
    feed_str(r, "{\"step\":2,\"loss\":null,\"loss_nonfinite\":\"inf\",\"grad_norm\":null,"
                "\"first_nonfinite\":\"transformer.h.3.mlp.c_proj, forward\",\"l0_grad_attn\":null}\n");
    feed_str(r, "{\"step\":3,\"loss\":null}\n");
    const trainer_snapshot *s = stream_snapshot(r);
    const stream_summary *u = stream_summary_of(r);
    CHECK(u->nonfinite_step == 2 && u->nonfinite_rows == 2);
    CHECK(!strcmp(u->nonfinite_where, "transformer.h.3.mlp.c_proj, forward"));
    CHECK(!strcmp(u->nonfinite_loss, "inf"));
    CHECK(s->hist[1].nonfinite && isinf(s->hist[1].run[0].loss) && s->hist[1].run[0].loss > 0);
    CHECK(s->s.state == TRAINER_DIVERGED && isnan(s->s.run[0].last.loss));
    CHECK(has_event(s, NS_EV_DIVERGED, "transformer.h.3.mlp.c_proj, forward"));
    CHECK(u->have_finite && u->last_finite.step == 1); /* the last finite layer norms */
    feed_str(r, row3(4, 2.0));
    CHECK(s->s.state == TRAINER_RUNNING && u->nonfinite_step == 2);
    /* the summary names the module, the layers and the ratio */
    char out[2048] = "";
    FILE *f = fmemopen(out, sizeof out - 1, "w");
    stream_print_summary(f, r, "n.nsj");
    fclose(f);
    CHECK(strstr(out, "first non-finite: step 2, transformer.h.3.mlp.c_proj, forward") != NULL);
    CHECK(strstr(out, "smallest layer 0") && strstr(out, "largest layer 2"));
    CHECK(strstr(out, "steps: 4 (steps 1..4)") != NULL);
    stream_free(r);
}

/* normscope's own writer, read back: every column as written */
static void test_jsonl_roundtrip(void)
{
    step_metrics m;
    memset(&m, 0, sizeof m);
    m.step = 7, m.loss = 3.25f, m.lr = 1e-3f, m.grad_norm = 0.75f, m.has_val = 1;
    m.val_loss = 3.5f, m.loss_scale = 1, m.n_layer = 5;
    metrics_set_setting(&m, "clip", 1);
    metrics_set_setting(&m, "warmup", 1);
    metrics_set_setting(&m, "precision", FMT_BF16);
    for (int l = 0; l < 5; l++)
        for (int k = 0; k < METRICS_LAYER_COLS; k++)
            metrics_layer_col_set(&m.layer[l], k, (float)(l * 10 + k) * 0.125f + 0.001f);
    m.layer[3].act_max = NAN; /* written as null */
    char buf[8192] = "";
    FILE *f = fmemopen(buf, sizeof buf - 1, "w");
    metrics_jsonl_row(f, &m);
    m.step = 8;
    metrics_jsonl_row(f, &m);
    fclose(f);
    stream_reader *r = stream_open("/nonexistent/j.nsj");
    feed_str(r, buf);
    const trainer_snapshot *s = stream_snapshot(r);
    const step_metrics *g = &s->s.run[0].last;
    CHECK(s->s.n_layer == 5 && g->n_layer == 5 && g->step == 8);
    CHECK(g->loss == m.loss && g->lr == m.lr && g->grad_norm == m.grad_norm);
    CHECK(g->has_val && g->val_loss == m.val_loss && metrics_clip(g) == 1 && metrics_warmup_on(g));
    CHECK(metrics_precision(g) == FMT_BF16 && s->s.run[0].cfg.precision == FMT_BF16);
    int same = 0;
    for (int l = 0; l < 5; l++)
        same += !memcmp(&g->layer[l], &m.layer[l], sizeof m.layer[l]) || l == 3;
    CHECK(same == 5);
    CHECK(isnan(g->layer[3].act_max) && g->layer[3].resid_max == m.layer[3].resid_max);
    CHECK(!stream_summary_of(r)->have_header && stream_summary_of(r)->malformed == 0);
    stream_free(r);
}

/* Every setting column of normscope's own rows: a change between two
 * rows is the followed run's event ("COLUMN a -> b") and its setting in
 * force on the step read back. */
static void test_every_setting_followed(void)
{
    int cols = 0;
    for (int k = 0; k < metrics_step_ncols(); k++) {
        const ns_setting *s = metrics_step_col(k)->setting;
        if (!s)
            continue;
        step_metrics m;
        memset(&m, 0, sizeof m);
        m.loss = 3.0f, m.lr = 1e-3f, m.grad_norm = 1.0f, m.loss_scale = 1, m.n_layer = 1;
        ns_config c;
        settings_defaults(&c);
        for (int j = 0; j < metrics_step_ncols(); j++)
            if (metrics_step_col(j)->setting)
                metrics_step_col_set_value(&m, j, settings_get(metrics_step_col(j)->setting, &c));
        double x = m.set[k];
        double y = s->type == SET_ENUM ? (double)(((int)x + 1) % s->n_names)
                   : metrics_step_col_named(k) ? (double)(x == 0)
                                                : (x != 0 ? x * 2 : 1);
        char a[32], b[32], want[96], buf[4096] = "";
        metrics_setting_text(k, x, a, sizeof a);
        metrics_setting_text(k, y, b, sizeof b);
        FILE *f = fmemopen(buf, sizeof buf - 1, "w");
        m.step = 1;
        metrics_jsonl_row(f, &m);
        m.step = 2;
        metrics_step_col_set_value(&m, k, y);
        metrics_jsonl_row(f, &m);
        fclose(f);
        stream_reader *r = stream_open("/nonexistent/s.nsj");
        feed_str(r, buf);
        const trainer_snapshot *t = stream_snapshot(r);
        snprintf(want, sizeof want, "%s %s -> %s", metrics_step_col(k)->name, a, b);
        int said = has_event(t, NS_EV_SETTING, want), now = t->s.run[0].last.set[k] == m.set[k];
        if (!said || !now)
            fprintf(stderr, "%s: event '%s' %s, value read back %g (written %g)\n",
                    metrics_step_col(k)->name, want, said ? "said" : "not said",
                    t->s.run[0].last.set[k], m.set[k]);
        CHECK(said && now);
        stream_free(r);
        cols++;
    }
    CHECK(cols >= 7);
}

static void test_many_layers(void)
{
    stream_reader *r = stream_open("/nonexistent/l.nsj");
    feed_str(r, "{\"format\":\"normscope-stream\",\"version\":1,\"source\":\"pytorch\","
                "\"model\":\"GPT\",\"blocks\":[\"h.0\",\"h.1\"],\"n_layer\":96,\"world_size\":2,"
                "\"dtype\":\"bfloat16\",\"every\":1,\"future\":{\"x\":1}}\n");
    char *line = malloc(96 * 40 + 64);
    int n = sprintf(line, "{\"step\":1,\"loss\":2");
    for (int l = 0; l < 96; l++)
        n += sprintf(line + n, ",\"l%d_grad_attn\":%d", l, l + 1);
    strcpy(line + n, "}\n");
    feed_str(r, line);
    const trainer_snapshot *s = stream_snapshot(r);
    const stream_summary *u = stream_summary_of(r);
    CHECK(u->have_header && !strcmp(u->model, "GPT") && u->world_size == 2);
    CHECK(!strcmp(stream_block_name(r, 1), "h.1") && !stream_block_name(r, 2)[0]);
    CHECK(!stream_block_name(r, -1)[0]);
    CHECK(s->s.n_layer == 96 && s->s.run[0].last.layer[95].grad_attn == 96.0f);
    CHECK(s->s.run[0].cfg.precision == FMT_BF16);
    CHECK(u->malformed == 0 && u->rows == 1);
    feed_str(r, line); /* step 1 again: the history restarts, the header holds */
    CHECK(u->restarts == 1 && u->have_header && !strcmp(u->model, "GPT"));
    CHECK(s->s.n_layer == 96 && s->s.run[0].last.layer[95].grad_attn == 96.0f && u->rows == 1);
    /* the layer panel scrolls: the top layer is drawn, not all */
    tui_grid g = {0};
    tui_grid_resize(&g, 40, 120);
    tui_ui ui;
    tui_ui_init(&ui, 0, 0);
    tui_draw(&g, s, &ui);
    char row[1024];
    int found95 = 0, said = 0;
    for (int i = 0; i < g.rows; i++) {
        tui_row_utf8(&g, i, row, sizeof row);
        found95 |= strstr(row, ">95") != NULL;
        said |= strstr(row, "of 96") != NULL;
    }
    CHECK(found95 && said);
    tui_grid_free(&g);
    /* more than NS_MAX_LAYERS: clamped, and said */
    stream_reader *c = stream_open("/nonexistent/c.nsj");
    feed_str(c, "{\"format\":\"normscope-stream\",\"version\":1,\"n_layer\":200}\n");
    CHECK(stream_snapshot(c)->s.n_layer == NS_MAX_LAYERS);
    CHECK(has_event(stream_snapshot(c), NS_EV_NOTE, "the stream has 200 layers"));
    feed_str(c, "{\"step\":1,\"loss\":2,\"l199_grad_attn\":1,\"l127_grad_attn\":3}\n");
    CHECK(stream_snapshot(c)->s.run[0].last.layer[127].grad_attn == 3.0f);
    free(line);
    stream_free(r);
    stream_free(c);
}

static void test_events_and_spikes(void)
{
    stream_reader *r = stream_open("/nonexistent/e.nsj");
    for (int i = 1; i <= 40; i++)
        feed_str(r, row3(i, 2.0 + 0.01 * (i % 3)));
    feed_str(r, "{\"event\":\"setting\",\"step\":40,\"text\":\"lr x2\"}\n");
    feed_str(r, "{\"event\":\"paused\",\"step\":40,\"text\":\"from the control file\"}\n");
    const trainer_snapshot *s = stream_snapshot(r);
    CHECK(s->s.state == TRAINER_PAUSED);
    CHECK(has_event(s, NS_EV_SETTING, "lr x2") && has_event(s, NS_EV_INFO, "paused"));
    feed_str(r, "{\"event\":\"resumed\",\"step\":40}\n");
    CHECK(s->s.state == TRAINER_RUNNING);
    feed_str(r, row3(41, 9.0)); /* a spike, by the lab's rule */
    CHECK(!strcmp(s->hist[40].run[0].mark, "lr x2")); /* the marker on the next point */
    CHECK(stream_summary_of(r)->spikes == 1 && stream_summary_of(r)->spike_step[0] == 41);
    CHECK(has_event(s, NS_EV_WARNING, "warning: loss spike at step 41"));
    /* the lab's rows: a setting changed between rows is an event and a marker */
    feed_str(r, "{\"step\":42,\"loss\":2,\"norm\":\"pre\"}\n{\"step\":43,\"loss\":2,\"norm\":\"post\"}\n");
    CHECK(has_event(s, NS_EV_SETTING, "norm pre -> post") && !strcmp(s->hist[42].run[0].mark, "norm=post"));
    CHECK(s->s.run[0].cfg.norm == NORM_POST);
    /* a step lower than the last: the history starts again */
    unsigned gen = s->s.generation;
    feed_str(r, row3(5, 2.0));
    CHECK(s->s.generation == gen + 1 && trainer_hist_first(&s->s) == 43);
    CHECK(s->s.n_layer == 3 && s->s.run[0].last.n_layer == 3);
    CHECK(has_event(s, NS_EV_INFO, "the run went back") && stream_summary_of(r)->rows == 1);
    /* --compare's run b is skipped */
    feed_str(r, "{\"run\":\"b\",\"step\":6,\"loss\":1}\n{\"run\":\"a\",\"step\":6,\"loss\":1.75}\n");
    CHECK(s->s.run[0].last.loss == 1.75f && stream_summary_of(r)->rows == 2);
    stream_free(r);
}

static void test_replay(void)
{
    stream_reader *r = stream_open("/nonexistent/r.nsj");
    for (int i = 1; i <= 20; i++)
        feed_str(r, row3(i, 3.0 - 0.1 * i));
    trainer_snapshot *d = snapshot_new();
    stream_snapshot_at(r, 4, d); /* the fifth point: step 5 */
    CHECK(d->s.run[0].last.step == 5 && d->s.steps_done == 5);
    CHECK(t_close(d->s.run[0].last.layer[2].grad_attn, 0.505, 1e-6, 0));
    CHECK(t_close(d->s.run[0].last.loss, 2.5, 1e-6, 0) && d->s.run[0].last.grad_norm == 1.5f);
    stream_snapshot_at(r, -1, d);
    CHECK(d->s.run[0].last.step == 20);
    /* the view's keys */
    tui_follow_state fw;
    CHECK(tui_follow_init(&fw, "/nonexistent/r.nsj") == 0);
    stream_free(fw.r);
    fw.r = r;
    tui_ui ui;
    tui_ui_init(&ui, 0, 0);
    ui.follow = 1;
    tui_follow_action(&fw, &ui, TUI_ACT_STEP_BACK);
    tui_follow_update(&fw, d, &ui);
    CHECK(fw.view == 18 && d->s.run[0].last.step == 19 && d->hist[18].run[0].mark[0] == '>');
    tui_follow_action(&fw, &ui, TUI_ACT_TOP);
    tui_follow_update(&fw, d, &ui);
    CHECK(d->s.run[0].last.step == 1);
    tui_follow_action(&fw, &ui, TUI_ACT_STEP_FWD);
    tui_follow_update(&fw, d, &ui);
    CHECK(d->s.run[0].last.step == 2);
    tui_follow_action(&fw, &ui, TUI_ACT_BOTTOM);
    tui_follow_update(&fw, d, &ui);
    CHECK(fw.view == -1 && d->s.run[0].last.step == 20);
    tui_follow_free(&fw);
    free(d);
}

/* ---- a followed file ------------------------------------------------------------- */

static char dir[64];

static void append(const char *path, const char *text)
{
    FILE *f = fopen(path, "a");
    fputs(text, f);
    fclose(f);
}

static void test_follow_file(void)
{
    char path[128], other[128];
    snprintf(path, sizeof path, "%s/run.nsj", dir);
    snprintf(other, sizeof other, "%s/new.nsj", dir);
    stream_reader *r = stream_open(path);
    int eof = 0;
    stream_poll(r, 0, &eof);
    const trainer_snapshot *s = stream_snapshot(r);
    CHECK(!stream_found(r) && eof && has_event(s, NS_EV_INFO, "waiting for run.nsj"));
    append(path, row3(1, 2.0));
    append(path, "{\"step\":2,\"lo");
    stream_poll(r, 0, &eof);
    CHECK(stream_found(r) && stream_summary_of(r)->rows == 1); /* the half line waits */
    append(path, "ss\":1.9}\n");
    stream_poll(r, 0, &eof);
    CHECK(stream_summary_of(r)->rows == 2 && s->s.run[0].last.loss == 1.9f);
    /* truncated and rewritten: said, read again from the start, layers too */
    FILE *f = fopen(path, "w");
    fputs(row3(1, 5.0), f);
    fclose(f);
    stream_poll(r, 0, &eof);
    CHECK(stream_summary_of(r)->truncations == 1 && has_event(s, NS_EV_NOTE, "was truncated"));
    CHECK(stream_summary_of(r)->rows == 1 && s->s.run[0].last.loss == 5.0f);
    CHECK(s->s.n_layer == 3 && s->s.run[0].last.n_layer == 3 && s->s.run[0].last.layer[2].act_max == 7.0f);
    /* replaced by another file (a rename over it) */
    f = fopen(other, "w");
    fputs(row3(1, 6.0), f);
    fputs(row3(2, 5.5), f);
    fclose(f);
    rename(other, path);
    stream_poll(r, 0, &eof);
    CHECK(stream_summary_of(r)->replacements == 1 && has_event(s, NS_EV_NOTE, "was replaced"));
    CHECK(stream_summary_of(r)->rows == 2 && s->s.run[0].last.loss == 5.5f);
    /* removed: said once, and a new file is read when it comes */
    unlink(path);
    stream_poll(r, 0, &eof);
    CHECK(has_event(s, NS_EV_NOTE, "was removed"));
    append(path, row3(1, 7.0));
    stream_poll(r, 0, &eof);
    CHECK(s->s.run[0].last.loss == 7.0f && stream_summary_of(r)->rows == 1);
    /* a poll reads at most what it is allowed; the rest comes next time */
    char many[4096] = "";
    for (int i = 2; i <= 8; i++)
        strcat(many, row3(i, 1.0));
    append(path, many);
    stream_poll(r, 10, &eof);
    CHECK(!eof);
    stream_poll(r, 0, &eof);
    CHECK(eof && stream_summary_of(r)->rows == 8);
    stream_free(r);
    unlink(path);
}

static char *slurp(const char *path)
{
    static char b[4096];
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(b, 1, sizeof b - 1, f) : 0;
    if (f)
        fclose(f);
    b[n] = 0;
    return b;
}

static void test_control(void)
{
    char path[128], ctl[160], err[256];
    snprintf(path, sizeof path, "%s/c.nsj", dir);
    CHECK(stream_control_path(path, ctl, sizeof ctl) == 0);
    CHECK(!strcmp(ctl + strlen(ctl) - 9, "c.nsj.ctl"));
    unlink(ctl);
    long seq = 0;
    CHECK(stream_control_send(path, "pause", &seq, err, sizeof err) == 0 && seq == 1);
    CHECK(stream_control_send(path, "lr x2", &seq, err, sizeof err) == 0 && seq == 2);
    CHECK(!strcmp(slurp(ctl), "1 pause\n2 lr x2\n"));
    append(ctl, "17 resume\n5 pause\n");
    CHECK(stream_control_send(path, "checkpoint", &seq, err, sizeof err) == 0 && seq == 18);
    CHECK(stream_control_send("/nonexistent/dir/x", "pause", &seq, err, sizeof err) != 0 &&
          strstr(err, "/nonexistent/dir/x.ctl"));
    /* the keys of follow mode, once the run's header is there */
    unlink(ctl);
    unlink(path);
    append(path, "{\"format\":\"normscope-stream\",\"version\":1,\"n_layer\":3}\n");
    tui_follow_state fw;
    CHECK(tui_follow_init(&fw, path) == 0);
    tui_ui ui;
    tui_ui_init(&ui, 0, 0);
    ui.follow = 1;
    trainer_snapshot *d = snapshot_new();
    tui_follow_update(&fw, d, &ui);
    tui_follow_action(&fw, &ui, TUI_ACT_PAUSE);
    tui_follow_action(&fw, &ui, tui_bind_action("lr", "x2"));
    tui_follow_action(&fw, &ui, tui_bind_action("lr", "x0.5"));
    tui_follow_action(&fw, &ui, TUI_ACT_CHECKPOINT);
    tui_follow_action(&fw, &ui, TUI_ACT_PAUSE);
    CHECK(!strcmp(slurp(ctl), "1 pause\n2 lr x2\n3 lr x0.5\n4 checkpoint\n5 resume\n"));
    const trainer_snapshot *s = stream_snapshot(fw.r);
    CHECK(has_event(s, NS_EV_INFO, "sent: lr x2"));
    /* keys that change the lab's model: refused, said, nothing sent */
    const tui_action lab[] = {tui_bind_action("norm", "toggle"),
                              tui_bind_action("precision", "next"),
                              tui_bind_action("warmup", "toggle"), TUI_ACT_REWIND, TUI_ACT_REINIT,
                              TUI_ACT_STEP};
    int said = 0;
    for (size_t i = 0; i < sizeof lab / sizeof lab[0]; i++) {
        ui.note[0] = 0;
        tui_follow_action(&fw, &ui, lab[i]);
        said += strstr(ui.note, "not available while following") != NULL;
    }
    CHECK(said == (int)(sizeof lab / sizeof lab[0]));
    CHECK(has_event(s, NS_EV_NOTE, "not available while following: Pre-LN"));
    CHECK(strlen(slurp(ctl)) == strlen("1 pause\n2 lr x2\n3 lr x0.5\n4 checkpoint\n5 resume\n"));
    /* the stream's paused event decides what space sends next */
    append(path, "{\"event\":\"paused\",\"step\":3}\n");
    tui_follow_update(&fw, d, &ui);
    tui_follow_action(&fw, &ui, TUI_ACT_PAUSE);
    CHECK(strstr(slurp(ctl), "6 resume\n") != NULL);
    free(d);
    tui_follow_free(&fw);
    unlink(ctl);
    unlink(path);
}

/* The row text of a grid, all rows */
static void grid_text(const tui_grid *g, char *all, size_t n)
{
    char row[400];
    all[0] = 0;
    for (int i = 0; i < g->rows; i++) {
        tui_row_utf8(g, i, row, sizeof row);
        if (strlen(all) + strlen(row) + 2 < n) {
            strcat(all, row);
            strcat(all, "\n");
        }
    }
}

/* Commands are pending until the run acknowledges them; one sent before
 * the run began is marked for it; the status line says ENDED, "no new
 * step for N s" and "writer gone"; nothing is sent to a run that ended. */
/* The control file steers a run: made 0600, and one another user could
 * have planted (a symbolic link, another uid's file, a file group or
 * others may write) gets no command, and a file it links to is not
 * touched. */
static void test_control_hostile(void)
{
    char path[128], ctl[160], err[256], victim[160];
    long seq = 0;
    snprintf(path, sizeof path, "%s/h.nsj", dir);
    stream_control_path(path, ctl, sizeof ctl);
    snprintf(victim, sizeof victim, "%s/victim.txt", dir);
    unlink(ctl);
    CHECK(stream_control_send(path, "pause", &seq, err, sizeof err) == 0);
    struct stat st;
    CHECK(stat(ctl, &st) == 0 && (st.st_mode & 0777) == 0600);
    unlink(ctl);
    append(victim, "thesis\n");
    CHECK(symlink(victim, ctl) == 0);
    int r = stream_control_send(path, "pause", &seq, err, sizeof err);
    CHECK(r != 0 && strstr(err, "symbolic link") && !strcmp(slurp(victim), "thesis\n"));
    unlink(ctl);
    CHECK(symlink("/dev/zero", ctl) == 0);
    CHECK(stream_control_send(path, "pause", &seq, err, sizeof err) != 0);
    unlink(ctl);
    append(ctl, "1 pause\n");
    CHECK(chmod(ctl, 0666) == 0);
    r = stream_control_send(path, "resume", &seq, err, sizeof err);
    CHECK(r != 0 && strstr(err, "writable by group or others") &&
          !strcmp(slurp(ctl), "1 pause\n"));
    if (geteuid() == 0) { /* another user's file: root can make one */
        CHECK(chmod(ctl, 0644) == 0 && chown(ctl, 4242, 4242) == 0);
        r = stream_control_send(path, "resume", &seq, err, sizeof err);
        CHECK(r != 0 && strstr(err, "owned by another user (uid 4242)") &&
              !strcmp(slurp(ctl), "1 pause\n"));
    }
    unlink(ctl);
    unlink(victim);
}

static void test_pending_and_liveness(void)
{
    char path[128], ctl[160], all[24 * 400];
    snprintf(path, sizeof path, "%s/p.nsj", dir);
    stream_control_path(path, ctl, sizeof ctl);
    unlink(path);
    unlink(ctl);
    tui_follow_state fw;
    CHECK(tui_follow_init(&fw, path) == 0);
    tui_ui ui;
    tui_ui_init(&ui, 0, 0);
    ui.follow = 1;
    trainer_snapshot *d = snapshot_new();
    tui_grid g = {0};
    tui_grid_resize(&g, 30, 100);
    tui_follow_update(&fw, d, &ui);
    CHECK(fw.live == STREAM_LIVE_WAITING);
    append(path, ""); /* the file, empty: still waiting, never RUNNING */
    tui_follow_update(&fw, d, &ui);
    tui_draw(&g, d, &ui);
    tui_follow_draw(&g, d, &ui, &fw);
    grid_text(&g, all, sizeof all);
    CHECK(fw.live == STREAM_LIVE_WAITING && strstr(all, " WAITING") && !strstr(all, "RUNNING"));
    tui_follow_action(&fw, &ui, TUI_ACT_PAUSE); /* before the run: for the run to come */
    CHECK(!strcmp(slurp(ctl), "1 at-start pause\n") && fw.n_pending == 1);
    /* the run starts (its pid is this process: alive), acknowledges */
    char head[256], host[128] = "";
    gethostname(host, sizeof host - 1);
    snprintf(head, sizeof head, "{\"format\":\"normscope-stream\",\"version\":1,\"n_layer\":3,"
             "\"host\":\"%s\",\"pid\":%ld}\n", host, (long)getpid());
    append(path, head);
    append(path, row3(1, 2.0));
    tui_follow_update(&fw, d, &ui);
    tui_draw(&g, d, &ui);
    tui_follow_draw(&g, d, &ui, &fw);
    grid_text(&g, all, sizeof all);
    CHECK(strstr(all, "pending: pause") != NULL && strstr(all, "RUNNING") != NULL);
    CHECK(strstr(all, "rule       -") != NULL); /* the stream says no placement */
    append(path, "{\"event\":\"ack\",\"step\":2,\"seq\":1,\"text\":\"pause applied at step 2\"}\n");
    tui_follow_update(&fw, d, &ui);
    tui_draw(&g, d, &ui);
    tui_follow_draw(&g, d, &ui, &fw);
    grid_text(&g, all, sizeof all);
    CHECK(fw.n_pending == 0 && strstr(all, "pending:") == NULL);
    CHECK(has_event(stream_snapshot(fw.r), NS_EV_INFO, "pause applied at step 2"));
    /* quiet: no new step for longer than the (shortened) bound */
    stream_set_quiet(fw.r, 0.2);
    struct timespec ts = {0, 400 * 1000000L};
    nanosleep(&ts, NULL);
    tui_follow_update(&fw, d, &ui);
    CHECK(fw.live == STREAM_LIVE_QUIET && strstr(fw.live_text, "no new step for") != NULL);
    tui_follow_free(&fw);
    /* a writer that died without an end line: a child's pid, reaped */
    pid_t child = fork();
    if (child == 0)
        _exit(0);
    waitpid(child, NULL, 0);
    unlink(path);
    snprintf(head, sizeof head, "{\"format\":\"normscope-stream\",\"version\":1,\"n_layer\":3,"
             "\"host\":\"%s\",\"pid\":%ld}\n", host, (long)child);
    append(path, head);
    append(path, row3(1, 2.0));
    CHECK(tui_follow_init(&fw, path) == 0);
    tui_follow_update(&fw, d, &ui);
    tui_draw(&g, d, &ui);
    tui_follow_draw(&g, d, &ui, &fw);
    grid_text(&g, all, sizeof all);
    CHECK(fw.live == STREAM_LIVE_GONE && strstr(all, "writer gone") && strstr(all, " GONE "));
    size_t before = strlen(slurp(ctl));
    tui_follow_action(&fw, &ui, tui_bind_action("lr", "x2")); /* no one to read it */
    CHECK(strlen(slurp(ctl)) == before && strstr(ui.note, "writer gone"));
    append(path, "{\"event\":\"end\",\"step\":1,\"reason\":\"close\",\"text\":\"run ended\"}\n");
    tui_follow_update(&fw, d, &ui);
    tui_draw(&g, d, &ui);
    tui_follow_draw(&g, d, &ui, &fw);
    grid_text(&g, all, sizeof all);
    CHECK(fw.live == STREAM_LIVE_ENDED && strstr(all, " ENDED ") != NULL);
    tui_follow_action(&fw, &ui, TUI_ACT_PAUSE);
    CHECK(strlen(slurp(ctl)) == before && strstr(ui.note, "the run ended"));
    tui_follow_free(&fw);
    /* the fault mark goes on the named module's layer */
    unlink(path);
    append(path, "{\"format\":\"normscope-stream\",\"version\":1,\"n_layer\":3,"
                 "\"blocks\":[\"h.0\",\"h.1\",\"h.2\"]}\n");
    append(path, row3(1, 2.0));
    append(path, "{\"step\":11,\"loss\":null,\"loss_nonfinite\":\"nan\","
                 "\"first_nonfinite\":\"h.2.attn.qkv, forward\",\"first_nonfinite_step\":7}\n");
    append(path, "{\"step\":21,\"loss\":null,\"loss_nonfinite\":\"nan\"}\n");
    CHECK(tui_follow_init(&fw, path) == 0);
    tui_follow_update(&fw, d, &ui);
    CHECK(d->s.run[0].last.fault_layer == 2 && !strcmp(d->s.run[0].last.fault, "h.2.attn.qkv, forward"));
    CHECK(stream_summary_of(fw.r)->nonfinite_step == 7);
    tui_draw(&g, d, &ui);
    tui_follow_draw(&g, d, &ui, &fw);
    grid_text(&g, all, sizeof all);
    CHECK(strstr(all, "first non-finite: h.2.attn.qkv") != NULL && strstr(all, "not named") == NULL);
    CHECK(strstr(all, " 2!") != NULL && strstr(all, " 0!") == NULL);
    CHECK(strstr(all, "lr -") != NULL); /* the row says no LR: none is made up */
    tui_follow_free(&fw);
    tui_grid_free(&g);
    free(d);
    unlink(path);
    unlink(ctl);
}

/* The help of follow mode: its keys, and the lab's model keys summed up,
 * on the smallest screen */
static void test_follow_help(void)
{
    tui_grid g = {0};
    tui_grid_resize(&g, 24, 80);
    trainer_snapshot *s = snapshot_new();
    s->s.n_layer = 6;
    tui_ui ui;
    tui_ui_init(&ui, 0, 0);
    ui.follow = 1;
    ui.help = 1;
    tui_draw(&g, s, &ui);
    char all[24 * 400] = "", row[400];
    for (int i = 0; i < g.rows; i++) {
        tui_row_utf8(&g, i, row, sizeof row);
        strcat(all, row);
        strcat(all, "\n");
    }
    CHECK(strstr(all, "Left/Right replay") != NULL);
    CHECK(strstr(all, "C          ask the followed run for a checkpoint") != NULL);
    /* one line names every key that changes the lab's model (the key
     * table's) */
    const char *off = strstr(all, ": not available while following");
    const char *bol = off;
    while (bol && bol > all && bol[-1] != '\n')
        bol--;
    char names[400] = "";
    if (off)
        snprintf(names, sizeof names, "%.*s ", (int)(off - bol), bol);
    int nk, named = 0, want = 0;
    const tui_key *keys = tui_key_table(&nk);
    for (int i = 0; i < nk; i++) {
        char w[8];
        if (!keys[i].name || !tui_action_changes_model(keys[i].act))
            continue;
        snprintf(w, sizeof w, " %s ", keys[i].name);
        want++;
        named += strstr(names, w) != NULL;
    }
    CHECK(off && want >= 8 && named == want);
    CHECK(strstr(all, "Pre-LN / Post-LN placement") == NULL);
    CHECK(strstr(all, "key closes") != NULL);
    free(s);
    tui_grid_free(&g);
}

/* A probe stream's end: 0 only for an end line saying close or exit; 4
 * without one, 5 for an exception; random bytes or text are refused. */
static void test_headless_ends(const char *path)
{
    const char *head = "{\"format\":\"normscope-stream\",\"version\":1,\"n_layer\":3}\n";
    append(path, head);
    append(path, row3(1, 2.0));
    CHECK(stream_headless(path, 0, NULL, 1, NULL) == STREAM_EXIT_NO_END);
    CHECK(stream_headless(path, 1, NULL, 1, NULL) == 0); /* --steps 1 reached */
    append(path, "{\"event\":\"end\",\"step\":1,\"reason\":\"exception\",\"text\":\"x\"}\n");
    CHECK(stream_headless(path, 0, NULL, 1, NULL) == STREAM_EXIT_ABNORMAL);
    unlink(path);
    append(path, head);
    append(path, row3(1, 2.0));
    append(path, "{\"event\":\"end\",\"step\":1,\"reason\":\"close\",\"text\":\"done\"}\n");
    CHECK(stream_headless(path, 0, NULL, 1, NULL) == 0);
    unlink(path);
    append(path, "just some text\nof two lines\n");
    CHECK(stream_headless(path, 0, NULL, 1, NULL) == 2);
    CHECK(stream_headless(path, 5, NULL, 1, NULL) == 2); /* not waited for either */
    unlink(path);
    char junk[300];
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (char)(i * 37 + 11) ? (char)(i * 37 + 11) : 1;
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (f) {
        fwrite(junk, 1, sizeof junk, f);
        fclose(f);
    }
    CHECK(stream_headless(path, 0, NULL, 1, NULL) == 2);
    unlink(path);
}

/* ---- the lab's rules on a followed stream ---------------------------------------- */

/* A probe's stream of a 2-layer GPT (vocab 256, targets' entropy 3.1
 * nats): a run that blows up (AdamW at lr 1.0: the loss x e^(s/45), 157
 * at step 150, act max growing, update ratio 0.05 after 0.9 at the
 * first update: 0.024 of its update per unit LR), one that trains (the
 * loss falls from 5.6 to 2, update ratio 1e-3 on every step, validation
 * every 50), or in fp16 one whose headroom falls from 2 to 0.5
 * doublings; the update ratio every 10th step and no headroom in fp32,
 * as the probe writes them (absent); a
 * checkpoint at step 50; the end line when `end`. */
enum { RUN_BLOW, RUN_OK, RUN_HEADROOM, RUN_RAMP };
static void probe_run(const char *path, int kind, int n, int end)
{
    FILE *f = fopen(path, "w");
    fprintf(f, "{\"format\":\"normscope-stream\",\"version\":1,\"source\":\"pytorch\",\"model\":"
               "\"GPT\",\"blocks\":[\"h.0\",\"h.1\"],\"n_layer\":2,\"world_size\":1,\"dtype\":"
               "\"%s\",\"every\":1,\"vocab\":256}\n", kind == RUN_HEADROOM ? "float16" : "float32");
    for (int s = 1; s <= n; s++) {
        double wig = 0.02 * sin(s * 1.7), loss, act, upd;
        double lr = kind == RUN_BLOW ? 1.0 : kind == RUN_RAMP ? fmin(1.0, s / 100.0) : 1e-3;
        if (kind == RUN_BLOW || kind == RUN_RAMP)
            loss = 5.6 * exp(s / 45.0) * (1 + wig), act = 4 * exp(s / 30.0),
            upd = s == 1 && kind == RUN_BLOW ? 0.9 : 0.05;
        else
            loss = 2.0 + 3.6 * exp(-s / 40.0) + wig, act = 4 + wig, upd = 1e-3;
        if (kind == RUN_HEADROOM)
            act = 65504.0 / pow(2, 2.0 - 1.5 * s / n);
        fprintf(f, "{\"step\":%d,\"loss\":%.6g,\"lr\":%g,\"grad_norm\":%.4g,\"loss_scale\":1,"
                   "\"data_entropy\":3.1", s, loss, lr, 1 + wig);
        if (kind == RUN_OK && s % 50 == 0) /* probe.validation(): a little above train */
            fprintf(f, ",\"val_loss\":%.6g", loss + 0.1);
        for (int l = 0; l < 2; l++) {
            fprintf(f, ",\"l%d_grad_attn\":0.1,\"l%d_grad_ffn\":0.2,\"l%d_grad_ln\":0.01,"
                       "\"l%d_act_max\":%.6g,\"l%d_resid_max\":%.6g,\"l%d_resid_rms\":1,"
                       "\"l%d_overflow\":0,\"l%d_underflow\":0", l, l, l, l, act, l, act, l, l, l);
            if (s % 10 == 1 || kind == RUN_OK) /* update_every=10, or 1 */
                fprintf(f, ",\"l%d_update_ratio\":%g", l, upd);
            if (kind == RUN_HEADROOM)
                fprintf(f, ",\"l%d_headroom\":%.6g", l, log2(65504.0 / act));
        }
        fputs("}\n", f);
        if (s == 50)
            fputs("{\"event\":\"checkpoint\",\"step\":50,\"text\":\"checkpoint run.nsj.step49.pt "
                  "after 49 updates\"}\n", f);
    }
    if (end)
        fprintf(f, "{\"event\":\"end\",\"step\":%d,\"reason\":\"close\",\"text\":\"run ended at "
                   "step %d: close\"}\n", n, n);
    fclose(f);
}

/* A reader of path that read all the file holds */
static stream_reader *read_file(const char *path)
{
    stream_reader *r = stream_open(path);
    int eof = 0;
    while (!eof)
        stream_poll(r, 0, &eof);
    return r;
}

/* The summary r prints (the buffer is reused by the next call) */
static const char *summary_text(const stream_reader *r)
{
    static char out[4096];
    memset(out, 0, sizeof out);
    FILE *f = fmemopen(out, sizeof out - 1, "w");
    stream_print_summary(f, r, "run.nsj");
    fclose(f);
    return out;
}

/* The summary a reader of path prints */
static const char *summary_of(const char *path)
{
    stream_reader *r = read_file(path);
    const char *out = summary_text(r);
    stream_free(r);
    return out;
}

/* A GPT at lr 1.0 whose loss reaches 157 is a blow-up, named with its
 * cause and fix (from the run's own checkpoint), exit 3; a run that
 * trains gets no finding and exit 0 */
static void test_diagnosis(void)
{
    char path[128];
    snprintf(path, sizeof path, "%s/run.nsj", dir);
    probe_run(path, RUN_BLOW, 150, 1);
    stream_reader *r = read_file(path);
    const trainer_snapshot *s = stream_snapshot(r);
    const stream_summary *u = stream_summary_of(r);
    CHECK(s->s.run[0].last.vocab == 256 && t_close(s->s.run[0].last.data_entropy, 3.1, 1e-6, 0));
    CHECK(u->blew_up && u->diagnoses >= 1 && u->cause.rule == DIAG_R_BLOWUP);
    CHECK(u->cause.step > 60 && u->cause.step < 100);
    CHECK(has_event(s, NS_EV_WARNING, "blew up, finite"));
    CHECK(!strcmp(s->s.diag[0].alert, "blowup") && s->s.run[0].last.exploded);
    char cmd[64], fix[320];
    CHECK(stream_fix(r, &u->cause, cmd, sizeof cmd, fix, sizeof fix) == 1);
    CHECK(strstr(fix, "resume from run.nsj.step49.pt (after 49 updates") && strstr(fix, "lr x0.01"));
    CHECK(stream_checkpoint_at(r, 48, fix, sizeof fix) == -1); /* none that old */
    stream_free(r);
    CHECK(stream_headless(path, 0, NULL, 1, NULL) == STREAM_EXIT_DIVERGED);
    const char *out = summary_of(path);
    CHECK(strstr(out, "diagnosis at step ") && strstr(out, ": blew up, finite: loss "));
    CHECK(strstr(out, "  fix: needs the weights of step ") != NULL);
    /* the same under a warmup ramp to lr 1.0 (a schedule the probe cannot
     * know): the ramp is not an LR raise, nor a new episode every step */
    probe_run(path, RUN_RAMP, 150, 1);
    r = read_file(path);
    CHECK(stream_summary_of(r)->cause.rule == DIAG_R_BLOWUP);
    CHECK(stream_summary_of(r)->warnings <= 2 && !has_event(stream_snapshot(r), NS_EV_WARNING, "LR raised"));
    /* an LR raise the stream announces (lr x2 from the view) is one */
    feed_str(r, "{\"event\":\"setting\",\"step\":151,\"text\":\"lr x2 (lr 2)\"}\n"
                "{\"step\":151,\"loss\":300,\"lr\":2}\n{\"step\":152,\"loss\":null,\"lr\":2}\n");
    CHECK(has_event(stream_snapshot(r), NS_EV_WARNING, "LR raised 1 -> 2 at step 150"));
    stream_free(r);
    probe_run(path, RUN_OK, 400, 1);
    CHECK(stream_headless(path, 0, NULL, 1, NULL) == 0);
    out = summary_of(path);
    CHECK(strstr(out, "diagnosis: none (no rule found a cause to name)\nwarnings: none\n") != NULL);
    CHECK(strstr(out, "verdict: healthy (every check answered ok)") != NULL);
    CHECK(strstr(out, "  is it learning? ok: ") != NULL);
    CHECK(strstr(out, "the rules read the") == NULL);
    /* metrics every 10 steps: the rules' counts are of the rows written */
    FILE *rw = fopen(path, "r+");
    char head[512];
    CHECK(rw && fgets(head, sizeof head, rw));
    char *ev = rw ? strstr(head, "\"every\":1,") : NULL;
    CHECK(ev != NULL);
    if (ev) {
        ev[8] = '9'; /* "every":9, : the same length */
        fseek(rw, 0, SEEK_SET);
        fputs(head, rw);
    }
    if (rw)
        fclose(rw);
    out = summary_of(path);
    CHECK(strstr(out, "  (metrics every 9 steps: the rules read the 400 steps written, and a count "
                      "or a mean \"of N steps\" above is of written steps)\n") != NULL);
    probe_run(path, RUN_OK, 40, 1); /* 40 steps, no validation yet: not called healthy */
    out = summary_of(path);
    CHECK(strstr(out, "verdict: not known to be healthy (0 answered no, ") != NULL);
    CHECK(strstr(out, "  does validation follow training? not yet known: ") != NULL);
    unlink(path);
}

/* The summary's counts count steps: with metrics every 10 steps, the
 * steps written are said as such, or the writer's own count is; a first
 * non-finite step that was not written is not "0 non-finite steps"; the
 * rank that ended a run is named */
static void test_honest_counts(void)
{
    const char *head = "{\"format\":\"normscope-stream\",\"version\":1,\"n_layer\":1,\"every\":10}\n";
    stream_reader *r = stream_open("/nonexistent/c10.nsj");
    feed_str(r, head);
    for (int s = 1; s <= 41; s += 10) {
        char l[160];
        snprintf(l, sizeof l, "{\"step\":%d,\"loss\":%s,\"l0_grad_ffn\":0.5}\n", s,
                 s >= 31 ? "null" : "2.5");
        feed_str(r, l);
    }
    const char *out = summary_text(r);
    CHECK(strstr(out, "first non-finite: step 31, the module is not named; loss nan (2 of the 5 "
                      "steps written were non-finite; metrics every 10 steps)") != NULL);
    feed_str(r, "{\"step\":51,\"loss\":null,\"nonfinite_steps\":24}\n");
    out = summary_text(r);
    CHECK(strstr(out, "(24 non-finite steps)") != NULL);
    stream_free(r);
    /* step 37 not written: the end line names it, every row was finite */
    char path[128];
    snprintf(path, sizeof path, "%s/c37.nsj", dir);
    unlink(path);
    append(path, head);
    for (int s = 1; s <= 31; s += 10) {
        char l[160];
        snprintf(l, sizeof l, "{\"step\":%d,\"loss\":2.5,\"l0_grad_ffn\":0.5}\n", s);
        append(path, l);
    }
    append(path, "{\"event\":\"end\",\"step\":37,\"reason\":\"exception\",\"rank\":1,\"text\":"
                "\"rank 1: connection closed by peer\",\"first_nonfinite\":\"h.0.mlp, forward\","
                "\"first_nonfinite_step\":37}\n");
    r = read_file(path);
    out = summary_text(r);
    CHECK(strstr(out, "first non-finite: step 37, h.0.mlp, forward (step 37 was not written; "
                      "none of the 4 steps written was non-finite)") != NULL);
    CHECK(strstr(out, "non-finite steps)") == NULL);
    CHECK(strstr(out, "end: rank 1: connection closed by peer (rank 1)") != NULL);
    char live[96];
    CHECK(stream_liveness(r, 0, live, sizeof live) == STREAM_LIVE_ENDED);
    CHECK(!strcmp(live, "ended at step 37 (exception, rank 1)"));
    stream_free(r);
    unlink(path);
}

/* Unknown is not NaN: a probe row's absent layer key (an empty group, an
 * update ratio between measurements, headroom in fp32) is unknown, null a
 * value not finite. The CSV leaves unknown cells empty and writes nan for
 * null; the layer panel and the box show '-'; the summary's layer norms
 * are over the groups said, and say when none was. */
static void test_unknown_layers(void)
{
    char path[128], csv[128];
    snprintf(path, sizeof path, "%s/u.nsj", dir);
    snprintf(csv, sizeof csv, "%s/u.csv", dir);
    unlink(path);
    append(path, "{\"format\":\"normscope-stream\",\"version\":1,\"n_layer\":2,\"dtype\":\"float32\"}\n");
    append(path, "{\"step\":1,\"loss\":2.5,\"l0_grad_ffn\":0.3,\"l0_grad_ln\":0.4,\"l0_act_max\":3,"
                 "\"l1_grad_attn\":0.5,\"l1_grad_ffn\":0.2,\"l1_act_max\":null}\n");
    stream_reader *r = read_file(path);
    const step_metrics *m = &stream_snapshot(r)->s.run[0].last;
    CHECK(!metrics_layer_known(&m->layer[0], METRICS_LC_GRAD_ATTN));
    CHECK(!metrics_layer_known(&m->layer[0], METRICS_LC_UPDATE));
    CHECK(metrics_layer_known(&m->layer[1], METRICS_LC_ACT_MAX) && isnan(m->layer[1].act_max));
    CHECK(t_close(metrics_layer_gnorm(&m->layer[0]), 0.5, 1e-6, 0)); /* 0.3, 0.4: the groups said */
    /* a validation: null alone is not given (older probes), val_loss_nonfinite says a value */
    CHECK(!m->has_val && !metrics_known(m, METRICS_COL_GNORM));
    const char *out = summary_text(r);
    CHECK(strstr(out, "gradient norms at step 1: smallest layer 0 5.000e-01") != NULL);
    /* the layer panel and the box: '-' for what was not said, nan for null */
    tui_grid g = {0};
    tui_grid_resize(&g, 30, 120);
    tui_ui ui;
    tui_ui_init(&ui, 0, 0);
    ui.selected = 0;
    trainer_snapshot *dst = snapshot_new();
    stream_snapshot_at(r, -1, dst);
    tui_draw(&g, dst, &ui);
    char all[30 * 400];
    grid_text(&g, all, sizeof all);
    CHECK(strstr(all, "upd/weight       -") && strstr(all, "headroom         -"));
    CHECK(strstr(all, "grad attn        -") && strstr(all, "grad mlp   3.0e-01"));
    CHECK(strstr(all, "      - 3.0e-01") != NULL); /* layer 0's row: attn not said */
    CHECK(strstr(all, "    nan") != NULL); /* layer 1's act max: null, not finite */
    tui_grid_free(&g);
    free(dst);
    stream_free(r);
    CHECK(stream_headless(path, 0, csv, 1, NULL) == STREAM_EXIT_NO_END);
    const char *c = slurp(csv);
    /* what the row said, by name: l0's grad_attn and l1's grad_ln not said
     * (empty), l1's act_max null (nan); the header's dtype; nothing else */
    static const char *const said[] = {"step=1", "loss=2.5", "precision=fp32", "l0_grad_ffn=0.3", "l0_grad_ln=0.4",
                                       "l0_act_max=3", "l1_grad_attn=0.5", "l1_grad_ffn=0.2",
                                       "l1_act_max=nan", NULL};
    CHECK(csv_row_is(c, 1, said));
    /* no layer gradient at all: not "no step with finite layer gradient norms" */
    unlink(path);
    append(path, "{\"format\":\"normscope-stream\",\"version\":1,\"n_layer\":1}\n");
    append(path, "{\"step\":1,\"loss\":2.5,\"l0_act_max\":3}\n");
    r = read_file(path);
    out = summary_text(r);
    CHECK(strstr(out, "gradient norms: not in the stream (no layer's gradient norm was said)"));
    feed_str(r, "{\"step\":2,\"loss\":2.4,\"val_loss\":null,\"lr\":null}\n");
    m = &stream_snapshot(r)->s.run[0].last;
    CHECK(!m->has_val && metrics_known(m, METRICS_COL_LR) && isnan(m->lr));
    feed_str(r, "{\"step\":3,\"loss\":2.3,\"val_loss\":null,\"val_loss_nonfinite\":\"inf\"}\n");
    CHECK(m->has_val && isinf(m->val_loss) && m->val_loss > 0);
    CHECK(strstr(out, "no step with finite") == NULL);
    /* no layer at all: the rules, which read layers, are not run, and say so */
    stream_reader *bare = stream_open("/nonexistent/bare.nsj");
    feed_str(bare, "{\"step\":1,\"loss\":2.5}\n{\"step\":2,\"loss\":2.4}\n");
    out = summary_text(bare);
    CHECK(strstr(out, "diagnosis: not made (the lab's rules read layers; the stream has none)"));
    CHECK(strstr(out, "verdict") == NULL);
    stream_free(bare);
    stream_free(r);
    unlink(path);
    unlink(csv);
}

/* The D panel of a followed run: the findings, and a sends the fix
 * through the control file (an LR factor from here; a fix that needs
 * older weights pauses the run) */
static void test_follow_diag(void)
{
    char path[128], ctl[160];
    snprintf(path, sizeof path, "%s/d.nsj", dir);
    snprintf(ctl, sizeof ctl, "%s.ctl", path);
    static char lines[TUI_DIAG_MAX][TUI_DIAG_LINE];
    for (int kind = RUN_BLOW; kind <= RUN_HEADROOM; kind++) {
        unlink(ctl);
        probe_run(path, kind, kind == RUN_OK ? 300 : 150, 0); /* still running: no end line */
        tui_follow_state f;
        tui_ui ui;
        tui_ui_init(&ui, 0, 0);
        ui.follow = 1;
        CHECK(tui_follow_init(&f, path) == 0);
        trainer_snapshot *dst = snapshot_new();
        for (int i = 0; i < 8; i++)
            tui_follow_update(&f, dst, &ui);
        tui_follow_action(&f, &ui, TUI_ACT_DIAG);
        CHECK(ui.diag == 1);
        int n = tui_follow_diag_lines(&f, lines, TUI_DIAG_MAX);
        char all[TUI_DIAG_MAX * 64] = "";
        for (int i = 0; i < n; i++)
            snprintf(all + strlen(all), sizeof all - strlen(all), "%.300s\n", lines[i]);
        tui_follow_action(&f, &ui, TUI_ACT_FIX);
        CHECK(ui.diag == 1); /* the panel stays: it says what comes next */
        const char *c = slurp(ctl);
        if (kind == RUN_BLOW) {
            CHECK(strstr(all, "DIAGNOSIS at step ") && strstr(all, "blew up, finite"));
            CHECK(strstr(all, "keys: a pauses the run") != NULL);
            CHECK(strstr(all, "verdict: not healthy (2 answered no") && strstr(all, "is every value finite? no:") &&
                  strstr(all, "is the LR within what the run tolerates? no: update ratio"));
            CHECK(!strcmp(c, "1 pause\n"));
        } else if (kind == RUN_OK) {
            CHECK(strstr(all, "no finding: no rule named a cause or gave a warning in the 300 "
                              "steps read") != NULL);
            CHECK(!strcmp(c, "")); /* nothing to send */
            CHECK(strstr(all, "is it learning? ok:") && strstr(all, "verdict: healthy"));
        } else {
            CHECK(strstr(all, "warning at step ") && strstr(all, "headroom"));
            CHECK(strstr(all, "fix: lr x0.5, from this step") != NULL);
            CHECK(!strcmp(c, "1 lr x0.5\n"));
        }
        tui_follow_action(&f, &ui, TUI_ACT_CHECKPOINT); /* the run's own keys act in the panel */
        CHECK(ui.diag == 1 && strstr(slurp(ctl), " checkpoint\n"));
        tui_follow_action(&f, &ui, TUI_ACT_VIEW); /* another key closes it */
        CHECK(ui.diag == 0);
        free(dst);
        tui_follow_free(&f);
    }
    unlink(ctl);
    unlink(path);
}

/* A stream is another program's output: an escape sequence in its model
 * name, an event's text or a fault (a retitled terminal, a cleared
 * screen) reaches the summary as visible escapes, never as the bytes. */
static void test_hostile_strings(void)
{
    char path[128];
    snprintf(path, sizeof path, "%s/esc.nsj", dir);
    unlink(path);
    append(path, "{\"format\":\"normscope-stream\",\"version\":1,\"n_layer\":1,"
                 "\"model\":\"\\u001b]0;pwned\\u0007GPT\",\"source\":\"x\\u001b[2J\"}\n");
    append(path, "{\"event\":\"note\",\"step\":1,\"text\":\"\\u001b[31mred\"}\n");
    append(path, "{\"step\":1,\"loss\":null,\"first_nonfinite\":\"h.0\\u001b[H, forward\"}\n");
    stream_reader *r = stream_open(path);
    int eof = 0;
    for (int i = 0; i < 10 && !eof; i++)
        stream_poll(r, 0, &eof);
    FILE *f = tmpfile();
    stream_print_summary(f, r, path);
    rewind(f);
    int c, ctl = 0, n = 0;
    while ((c = fgetc(f)) != EOF) {
        n++;
        ctl += c < 0x20 && c != '\n';
    }
    fclose(f);
    CHECK(n > 0 && ctl == 0);
    char buf[64];
    CHECK(nstext_escape_str("a\x1b[2Jb\n", buf, sizeof buf) == 11 && !strcmp(buf, "a\\x1B[2Jb\\n"));
    stream_free(r);
    unlink(path);
}

static void test_headless(void)
{
    char path[128], csv[128];
    snprintf(path, sizeof path, "%s/h.nsj", dir);
    snprintf(csv, sizeof csv, "%s/h.csv", dir);
    unlink(path);
    CHECK(stream_headless(path, 0, NULL, 1, NULL) == 2); /* missing, no --steps */
    CHECK(stream_headless(dir, 5, NULL, 1, NULL) == 2);  /* a directory: not waited for */
    append(path, row3(1, 2.0));
    append(path, row3(2, 1.9));
    CHECK(stream_headless(path, 0, csv, 1, NULL) == 0);
    const char *c = slurp(csv);
    /* the numbers keep the digits they had (0.001, not 0.00100000005);
     * what the rows do not say (tokens/s, the settings, loss_scale, ln_gamma_init) is empty */
    static const char *const said[] = {
        "step=2", "loss=1.9", "lr=0.001", "grad_norm=1.5", "l0_grad_attn=0.1", "l0_grad_ffn=0.2",
        "l0_grad_ln=0.01", "l1_grad_attn=0.3", "l1_grad_ffn=0.4", "l1_grad_ln=0.02",
        "l2_grad_attn=0.502", "l2_grad_ffn=0.6", "l2_grad_ln=0.03", "l2_act_max=7", NULL};
    CHECK(!strncmp(c, "step,loss,val_loss,lr", 21) && csv_row_is(c, 2, said));
    append(path, "{\"step\":3,\"loss\":null,\"first_nonfinite\":\"h.1.attn, backward\"}\n");
    CHECK(stream_headless(path, 0, NULL, 1, NULL) == 3);
    CHECK(stream_headless(path, 3, NULL, 1, NULL) == 3); /* step 3 is there: no wait */
    unlink(path);
    unlink(csv);
    test_headless_ends(path);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/ns_stream.XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_json();
    test_partial_lines();
    test_hundred_at_once();
    test_malformed();
    test_nonfinite();
    test_jsonl_roundtrip();
    test_every_setting_followed();
    test_many_layers();
    test_events_and_spikes();
    test_replay();
    test_follow_file();
    test_control();
    test_control_hostile();
    test_hostile_strings();
    test_follow_help();
    test_pending_and_liveness();
    test_headless();
    test_diagnosis();
    test_follow_diag();
    test_honest_counts();
    test_unknown_layers();
    rmdir(dir);
    return test_summary();
}
