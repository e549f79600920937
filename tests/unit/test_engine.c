/* test_engine.c - the engine's contracts: determinism, checkpoint round
 * trip bit for bit, refusal of bad checkpoints, schedules, mid-run changes
 * that must not touch the weights, and non-finite steps that skip the
 * update instead of corrupting the model. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"
#include "model.h"
#include "numfmt.h"
#include "rng.h"
#include "schedule.h"
#include "testengine.h"
#include "testutil.h"

static ns_config small_cfg(void)
{
    ns_config c;
    settings_defaults(&c);
    c.n_layer = 2;
    c.dim = 16;
    c.n_head = 2;
    c.context = 16;
    c.batch = 4;
    c.warmup = 5;
    c.val_every = 4;
    c.val_batches = 2;
    c.steps = 20;
    return c;
}

static dataset D;

static engine *make(const ns_config *c) { return test_engine_create(c, &D); }

/* Compare two step_metrics on everything but the timing. */
static int same_metrics(const step_metrics *a, const step_metrics *b)
{
    step_metrics x = *a, y = *b;
    x.tokens_per_s = y.tokens_per_s = 0;
    return memcmp(&x, &y, sizeof x) == 0;
}

static void test_determinism(void)
{
    ns_config c = small_cfg();
    engine *a = make(&c), *b = make(&c);
    c.seed = 7;
    engine *d = make(&c);
    int same = 1, differs = 0;
    step_metrics ma, mb, md;
    memset(&ma, 0, sizeof ma), memset(&mb, 0, sizeof mb), memset(&md, 0, sizeof md);
    for (int i = 0; i < 12; i++) {
        engine_step(a, &ma);
        engine_step(b, &mb);
        engine_step(d, &md);
        same &= same_metrics(&ma, &mb);
        differs |= ma.loss != md.loss;
    }
    CHECK(same);
    CHECK(differs);
    CHECK(ma.has_val && ma.step == 12);
    CHECK(ma.loss < 5.6f && ma.loss > 0.0f);
    engine_free(a), engine_free(b), engine_free(d);
}

/* 20 steps == 10 steps + save + load + 10 steps, bit for bit. */
static void test_checkpoint_roundtrip(void)
{
    ns_config c = small_cfg();
    c.schedule = SCHED_COSINE;
    c.weight_decay = 0.1f;
    c.clip = 0.5f;
    char path[] = "/tmp/ns_test_ckpt_XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    char err[256];

    engine *ref = make(&c);
    step_metrics mref[20], m;
    for (int i = 0; i < 20; i++)
        engine_step(ref, &mref[i]);

    engine *a = make(&c);
    for (int i = 0; i < 10; i++)
        engine_step(a, &m);
    engine_set_norm(a, NORM_POST); /* settings in force travel too */
    engine_set_norm(a, NORM_PRE);
    CHECK(engine_save(a, path, err, sizeof err) == 0);
    engine_free(a);
    ns_config lc;
    engine *b = engine_load(path, &D, &lc, err, sizeof err);
    CHECK(b != NULL);
    if (!b) {
        fprintf(stderr, "load: %s\n", err);
        return;
    }
    CHECK(engine_steps_done(b) == 10);
    CHECK(lc.n_layer == c.n_layer && lc.schedule == SCHED_COSINE && lc.clip == c.clip);
    int same = 1;
    for (int i = 10; i < 20; i++) {
        engine_step(b, &m);
        same &= same_metrics(&m, &mref[i]);
    }
    CHECK(same);
    size_t n1, n2;
    float *p1 = engine_params(ref, &n1), *p2 = engine_params(b, &n2);
    CHECK(n1 == n2 && memcmp(p1, p2, n1 * sizeof(float)) == 0);
    engine_free(b);

    /* refusals: truncated, flipped byte, bad magic, a broken header, missing file */
    FILE *f = fopen(path, "rb");
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc((size_t)len);
    CHECK(fread(buf, 1, (size_t)len, f) == (size_t)len);
    fclose(f);
    struct {
        const char *what, *expect;
        long cut;
        long flip;
    } cases[] = {
        {"truncated", "truncated", len - 100, -1},
        {"flipped", "checksum", len, len / 2},
        {"magic", "magic", len, 0},
        {"tiny", "magic", 5, -1},
        /* the header: where it went wrong, by byte and by field */
        {"header cut", "truncated header: the file ends at byte 40", 40, -1},
        {"header length", "its length at byte 12 says", len, 12},
        {"count", "the header holds", len, 16},
        {"layers", "header field 'layers' out of range", len, 20},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        unsigned char *cp = malloc((size_t)len);
        memcpy(cp, buf, (size_t)len);
        if (cases[k].flip >= 0)
            cp[cases[k].flip] ^= 0x40;
        f = fopen(path, "wb");
        fwrite(cp, 1, (size_t)cases[k].cut, f);
        fclose(f);
        err[0] = 0;
        engine *bad = engine_load(path, &D, &lc, err, sizeof err);
        CHECK(bad == NULL);
        if (!t_check(strstr(err, cases[k].expect) != NULL, __FILE__, __LINE__, cases[k].what))
            fprintf(stderr, "  got: %s\n", err);
        engine_free(bad);
        free(cp);
    }
    free(buf);
    unlink(path);
    err[0] = 0;
    CHECK(engine_load("/nonexistent/ckpt", &D, &lc, err, sizeof err) == NULL && err[0]);
    /* an unwritable place is an error, not a crash */
    CHECK(engine_save(ref, "/nonexistent-dir/x.ckpt", err, sizeof err) != 0);
    engine_free(ref);
}

/* ---- checkpoints whose checksum is right but whose header is not ------
 * The offsets follow the format in man/normscope.1 (written out here, not
 * asked of the engine, so the test checks the format too): 16 bytes of
 * magic, version and header length; the count of settings fields; the
 * settings table's checkpoint fields in their order, 8 bytes for a long, a
 * seed or the two betas, 4 for the others; then the run state. */
static size_t field_size(const ns_setting *s)
{
    return s->type == SET_LONG || s->type == SET_U64 || s->type == SET_BETAS ? 8 : 4;
}

static const ns_setting *row_at(int pos)
{
    for (int i = 0; i < settings_count(); i++)
        if (settings_row(i)->ckpt == pos)
            return settings_row(i);
    return NULL;
}

/* The fields a checkpoint holds: the table's highest field number. */
static int n_fields(void)
{
    int n = 0;
    for (int i = 0; i < settings_count(); i++)
        n = settings_row(i)->ckpt > n ? settings_row(i)->ckpt : n;
    return n;
}

static size_t field_offset(int pos)
{
    size_t at = 20;
    for (int p = 1; p < pos; p++)
        at += field_size(row_at(p));
    return at;
}

static void put_le(unsigned char *p, uint64_t v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put_float(unsigned char *p, float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    put_le(p, u, 4);
}

/* Write buf with one field changed and the checksum made right again;
 * load it: refused, with the field named. */
static void expect_refused(const unsigned char *buf, size_t len, size_t at, const void *val,
                           size_t n, const char *path, const char *field, const char *what)
{
    unsigned char *cp = malloc(len);
    memcpy(cp, buf, len);
    memcpy(cp + at, val, n);
    put_le(cp + len - 4, engine_crc32(cp, len - 4), 4);
    FILE *f = fopen(path, "wb");
    fwrite(cp, 1, len, f);
    fclose(f);
    char err[512] = "", want[96];
    ns_config lc;
    snprintf(want, sizeof want, "header field '%s' out of range", field);
    engine *e = engine_load(path, &D, &lc, err, sizeof err);
    int ok = e == NULL && strstr(err, want) != NULL && !strchr(err, '\n');
    if (!t_check(ok, __FILE__, __LINE__, what))
        fprintf(stderr, "  %s: got: %s\n", field, e ? "(loaded)" : err);
    engine_free(e);
    free(cp);
}

/* Save cp (its checksum made right) and load it: the engine, or NULL with
 * the reason in err. */
static engine *load_bytes(unsigned char *cp, size_t len, const char *path, ns_config *lc,
                          char *err, size_t errlen)
{
    put_le(cp + len - 4, engine_crc32(cp, len - 4), 4);
    FILE *f = fopen(path, "wb");
    fwrite(cp, 1, len, f);
    fclose(f);
    err[0] = 0;
    return engine_load(path, &D, lc, err, errlen);
}

/* The header's count of settings: more than this build knows is refused
 * in one line; once a field came after version 4 (33), a file saved
 * before it (the count one less, its bytes gone) loads, that setting at
 * its default. */
static void check_field_count(const unsigned char *buf, size_t len, const char *path, int nf)
{
    unsigned char *cp = malloc(len);
    char err[512];
    ns_config lc;
    memcpy(cp, buf, len);
    put_le(cp + 16, (uint64_t)nf + 1, 4);
    engine *e = load_bytes(cp, len, path, &lc, err, sizeof err);
    if (!t_check(!e && strstr(err, "the header holds") && !strchr(err, '\n'), __FILE__, __LINE__,
                 "a count past the table's refused"))
        fprintf(stderr, "  got: %s\n", e ? "(loaded)" : err);
    engine_free(e);
    if (nf == 33) { /* no field came after version 4: nothing saved without one */
        free(cp);
        return;
    }
    size_t at = field_offset(nf), gone = field_size(row_at(nf));
    uint32_t hlen = (uint32_t)buf[12] | (uint32_t)buf[13] << 8 | (uint32_t)buf[14] << 16 |
                    (uint32_t)buf[15] << 24;
    memcpy(cp, buf, at);
    memcpy(cp + at, buf + at + gone, len - at - gone);
    put_le(cp + 12, hlen - gone, 4);
    put_le(cp + 16, (uint64_t)nf - 1, 4);
    e = load_bytes(cp, len - gone, path, &lc, err, sizeof err);
    ns_config def;
    settings_defaults(&def);
    const ns_setting *last = row_at(nf);
    if (!t_check(e && settings_get(last, &lc) == settings_get(last, &def), __FILE__, __LINE__,
                 "a header without the last field loads with its default"))
        fprintf(stderr, "  --%s: %s\n", last->name, e ? "not the default" : err);
    engine_free(e);
    free(cp);
}

/* The bytes of a checkpoint of a new engine of c, saved at path (a
 * mkstemp template, filled in); NULL when it could not be made. */
static unsigned char *saved_bytes(const ns_config *c, char *path, size_t *len)
{
    engine *e = make(c);
    char err[512];
    int fd = mkstemp(path);
    if (fd >= 0)
        close(fd);
    int ok = e && fd >= 0 && engine_save(e, path, err, sizeof err) == 0;
    engine_free(e);
    FILE *f = ok ? fopen(path, "rb") : NULL;
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc(*len);
    if (buf && fread(buf, 1, *len, f) != *len) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    return buf;
}

/* A header whose shape a small file cannot show (the batch is not stored
 * in the weights; the heads are, since format 5, in the QK-norm's size):
 * a few hundred KB could describe a run that needs more memory than the
 * machine has. engine_load refuses it in one line before allocating. */
static void test_checkpoint_memory(void)
{
    ns_config c = small_cfg();
    c.n_layer = 4;
    c.context = 1024;
    c.batch = 1;
    c.n_head = 16; /* the file's own: the weights' count holds it */
    char path[] = "/tmp/ns_test_mem_XXXXXX", err[512];
    size_t len;
    unsigned char *buf = saved_bytes(&c, path, &len);
    if (!CHECK(buf != NULL))
        return;
    ns_config big = c;
    big.batch = 512;
    const ns_setting *bs = settings_find("batch", 5);
    put_le(buf + field_offset(bs->ckpt), 512, 4);
    ns_config lc;
    engine *g = load_bytes(buf, len, path, &lc, err, sizeof err);
    double need = engine_bytes_needed(&big), have = engine_machine_bytes();
    if (have > 0 && need > have) {
        if (!t_check(!g && strstr(err, "needs") && strstr(err, "GiB of memory") &&
                         !strchr(err, '\n'), __FILE__, __LINE__, "a header past memory refused"))
            fprintf(stderr, "  got: %s\n", g ? "(loaded)" : err);
    } else {
        printf("test_checkpoint_memory: this machine holds %.0f GiB: the refusal is not "
               "tested\n", have / 1073741824.0);
    }
    engine_free(g);
    free(buf);
    unlink(path);
}

/* Version 6 carries the diagnosis' state as bytes the engine does not
 * read: what was set before the save is what the load gives, a run that
 * set none loads with none, and a length past the file is refused. */
static void test_checkpoint_diag_state(void)
{
    ns_config c = small_cfg();
    char path[] = "/tmp/ns_test_dst_XXXXXX", err[512] = "";
    int fd = mkstemp(path);
    if (!CHECK(fd >= 0))
        return;
    close(fd);
    engine *e = make(&c);
    const char blob[] = "any bytes: the engine carries them";
    CHECK(e && engine_set_diag_state(e, blob, sizeof blob) == 0);
    CHECK(e && engine_save(e, path, err, sizeof err) == 0);
    engine_free(e);
    ns_config lc;
    engine *g = engine_load(path, &D, &lc, err, sizeof err);
    size_t n = 0;
    const uint8_t *p = g ? engine_diag_state(g, &n) : NULL;
    CHECK(p && n == sizeof blob && !memcmp(p, blob, n) && engine_loaded_version(g) == 6);
    engine_free(g);
    unlink(path);
    char path2[] = "/tmp/ns_test_dst_XXXXXX";
    size_t len;
    unsigned char *buf = saved_bytes(&c, path2, &len);
    if (!CHECK(buf != NULL))
        return;
    g = load_bytes(buf, len, path2, &lc, err, sizeof err);
    CHECK(g && !engine_diag_state(g, &n) && n == 0);
    engine_free(g);
    /* the length field sits just before the checksum when it is 0 */
    put_le(buf + len - 8, 1000, 4);
    g = load_bytes(buf, len, path2, &lc, err, sizeof err);
    CHECK(!g && strstr(err, "diagnosis' state says 1000 bytes"));
    engine_free(g);
    free(buf);
    unlink(path2);
}

static void test_checkpoint_bad_header(void)
{
    ns_config c = small_cfg();
    char path[] = "/tmp/ns_test_hdr_XXXXXX";
    size_t len;
    unsigned char *buf = saved_bytes(&c, path, &len);
    if (!CHECK(buf != NULL))
        return;
    const int nf = n_fields();
    CHECK(buf[8] == 6); /* the offsets of versions 4 to 6 (5 changed the weights only, 6
                           added the diagnosis' state after them) */
    CHECK(buf[16] == nf && nf >= 33); /* the count, then fields 1..nf */

    /* every setting of the header: a value its row does not allow */
    int tried = 0;
    for (int pos = 1; pos <= nf; pos++) {
        const ns_setting *s = row_at(pos);
        size_t at = field_offset(pos);
        unsigned char v[8];
        float nan = NAN;
        switch (s->type) {
        case SET_INT: case SET_LONG:
            put_le(v, (uint64_t)(long)(s->hi + 1), field_size(s));
            expect_refused(buf, len, at, v, field_size(s), path, s->name, "above the range");
            put_le(v, (uint64_t)(long)(s->lo - 1 > -1 ? s->lo - 1 : -2), field_size(s));
            expect_refused(buf, len, at, v, field_size(s), path, s->name, "below the range");
            break;
        case SET_ENUM: case SET_ONOFF: case SET_AUTO: case SET_PRESENCE:
            put_le(v, s->type == SET_ENUM ? (uint64_t)s->n_names : 2, 4);
            expect_refused(buf, len, at, v, 4, path, s->name, "not a value of the row");
            break;
        case SET_REAL: case SET_LOSS_SCALE: case SET_BETAS:
            put_float(v, nan);
            expect_refused(buf, len, at, v, 4, path, s->name, "NaN");
            put_float(v, s->type == SET_LOSS_SCALE ? -2.0f : (float)(s->lo - 1));
            expect_refused(buf, len, at, v, 4, path, s->name, "below the range");
            if (!(s->live & SETL_UNBOUNDED) && s->type == SET_REAL) {
                put_float(v, (float)(s->hi * 2 + 1));
                expect_refused(buf, len, at, v, 4, path, s->name, "above the range");
            }
            if (s->type == SET_BETAS) { /* the second beta */
                put_float(v, 1.5f);
                expect_refused(buf, len, at + 4, v, 4, path, s->name, "beta2 above 1");
            }
            break;
        default: /* the seed: any 64 bits */
            tried--;
            break;
        }
        tried++;
    }
    CHECK(tried == nf - 1);

    /* the run state after the settings */
    size_t st = field_offset(nf + 1);
    unsigned char v[8];
    put_le(v, (uint64_t)-1, 8);
    expect_refused(buf, len, st, v, 8, path, "step", "step -1");
    put_float(v, NAN);
    expect_refused(buf, len, st + 24, v, 4, path, "peak LR", "peak LR NaN");
    put_le(v, 0, 4);
    expect_refused(buf, len, st + 28, v, 4, path, "warmup ramp", "ramp of 0 steps");
    put_le(v, 2, 4);
    expect_refused(buf, len, st + 32, v, 4, path, "warmup on", "warmup on 2");
    put_float(v, 0.0f);
    expect_refused(buf, len, st + 56, v, 4, path, "loss scale", "loss scale 0");
    put_le(v, 7, 4);
    expect_refused(buf, len, st + 68, v, 4, path, "data", "data from_file 7");
    put_le(v, 5000, 4);
    expect_refused(buf, len, st + 84, v, 4, path, "data", "a data name past the file");

    check_field_count(buf, len, path, nf);

    /* and unchanged, with the checksum rewritten the same way, it loads:
     * the refusals above are the fields', not the rewriting's */
    put_le(buf + len - 4, engine_crc32(buf, len - 4), 4);
    FILE *f = fopen(path, "wb");
    fwrite(buf, 1, len, f);
    fclose(f);
    ns_config lc;
    char err[512];
    engine *e = engine_load(path, &D, &lc, err, sizeof err);
    CHECK(e != NULL);
    engine_free(e);
    free(buf);
    unlink(path);
}

/* Placement and kind switch without touching a weight, and change the
 * function the model computes. */
static void test_switch_placement(void)
{
    ns_config c = small_cfg();
    engine *e = make(&c);
    step_metrics m;
    for (int i = 0; i < 3; i++)
        engine_step(e, &m);
    size_t n;
    float *p = engine_params(e, &n);
    float *copy = malloc(n * sizeof(float));
    memcpy(copy, p, n * sizeof(float));
    float pre_val = engine_validate(e);
    engine_set_norm(e, NORM_POST);
    CHECK(memcmp(copy, p, n * sizeof(float)) == 0);
    CHECK(engine_config(e)->norm == NORM_POST);
    float post_val = engine_validate(e);
    CHECK(pre_val != post_val);
    engine_set_norm(e, NORM_PRE);
    CHECK(engine_validate(e) == pre_val);
    /* the change is logged with its step */
    ns_event ev;
    long k = engine_event_count(e);
    CHECK(engine_event_get(e, k - 2, &ev) == 0 && ev.step == 3 && strstr(ev.text, "post"));
    engine_step(e, &m);
    CHECK(metrics_norm(&m) == NORM_PRE);
    free(copy);
    engine_free(e);
}

static void test_schedule(void)
{
    ns_config c;
    settings_defaults(&c);
    c.lr = 1e-3f;
    c.warmup = 100;
    schedule s;
    schedule_init(&s, &c);
    CHECK(t_close(schedule_lr(&s, 1), 1e-5, 1e-6, 0));
    CHECK(t_close(schedule_lr(&s, 50), 5e-4, 1e-6, 0));
    CHECK(t_close(schedule_lr(&s, 100), 1e-3, 1e-6, 0));
    CHECK(t_close(schedule_lr(&s, 5000), 1e-3, 1e-6, 0));
    CHECK(schedule_in_warmup(&s, 99) && !schedule_in_warmup(&s, 100));

    /* noam: d^-0.5 * min(s^-0.5, s w^-1.5), peak at s = w */
    c.schedule = SCHED_NOAM;
    c.dim = 64;
    c.warmup = 400;
    schedule_init(&s, &c);
    double peak = 1.0 / 8.0 / 20.0;
    CHECK(t_close(schedule_lr(&s, 400), peak, 1e-6, 0));
    for (int st = 1; st < 2000; st += 37) {
        double want = (1.0 / 8.0) * fmin(pow(st, -0.5), st * pow(400, -1.5));
        if (!t_check(t_close(schedule_lr(&s, st), want, 1e-5, 0), __FILE__, __LINE__, "noam"))
            break;
    }
    CHECK(schedule_lr(&s, 399) < peak && schedule_lr(&s, 401) < peak);

    /* cosine: peak after warmup, 0 at the end, half way at the middle */
    c.schedule = SCHED_COSINE;
    c.lr = 1e-3f;
    c.warmup = 10;
    c.steps = 110;
    schedule_init(&s, &c);
    CHECK(t_close(schedule_lr(&s, 10), 1e-3, 1e-6, 0));
    CHECK(t_close(schedule_lr(&s, 60), 5e-4, 1e-5, 0));
    CHECK(schedule_lr(&s, 110) < 1e-9);

    /* invsqrt with warmup off: peak until w, then sqrt decay */
    c.schedule = SCHED_INVSQRT;
    c.warmup = 0;
    schedule_init(&s, &c);
    CHECK(t_close(schedule_lr(&s, 1), 1e-3, 1e-6, 0));
    CHECK(t_close(schedule_lr(&s, 400), 5e-4, 1e-6, 0));
}

/* Turning warmup on mid-run starts a fresh ramp at the current step. */
static void test_warmup_toggle(void)
{
    ns_config c = small_cfg();
    c.warmup = 0;
    engine *e = make(&c);
    step_metrics m;
    for (int i = 0; i < 6; i++)
        engine_step(e, &m);
    CHECK(t_close(m.lr, c.lr, 1e-7, 0) && !metrics_warmup_on(&m));
    engine_set_warmup(e, 1);
    engine_step(e, &m); /* step 7: first of a 100-step ramp from step 6 */
    CHECK(metrics_warmup_on(&m) && m.in_warmup && t_close(m.lr, c.lr / 100, 1e-5, 0));
    engine_set_warmup(e, 0);
    engine_step(e, &m);
    CHECK(t_close(m.lr, c.lr, 1e-7, 0));
    engine_set_lr(e, 4e-3f);
    engine_step(e, &m);
    CHECK(t_close(m.lr, 4e-3, 1e-7, 0));
    engine_set_clip(e, 0.25f);
    engine_step(e, &m);
    CHECK(metrics_clip(&m) == 0.25f);
    /* re-initialization gives step 1 of the same run again */
    engine_reinit(e);
    engine *f = make(&c);
    step_metrics a, b;
    engine_step(e, &a);
    engine_step(f, &b);
    a.lr_peak = b.lr_peak; /* the peak was changed above */
    metrics_set_setting(&a, "clip", metrics_clip(&b));
    a.lr = b.lr;
    CHECK(a.step == 1 && a.loss == b.loss && a.grad_norm == b.grad_norm);
    engine_free(e), engine_free(f);
}

/* A non-finite weight: the step reports it, skips the update, and the
 * other weights are untouched. */
static void test_nonfinite(void)
{
    ns_config c = small_cfg();
    engine *e = make(&c);
    step_metrics m;
    engine_step(e, &m);
    size_t n;
    float *p = engine_params(e, &n);
    p[n / 2] = NAN;
    float *copy = malloc(n * sizeof(float));
    memcpy(copy, p, n * sizeof(float));
    int r = engine_step(e, &m);
    CHECK(r == 1 && m.nonfinite);
    CHECK(isnan(m.loss) || isnan(m.grad_norm));
    /* the fixed batch's logits are NaN too: out_change says so */
    CHECK(metrics_known(&m, METRICS_COL_OUT_CHANGE) && isnan(m.out_change));
    CHECK(memcmp(copy, p, n * sizeof(float)) == 0);
    free(copy);
    engine_free(e);
}

/* out_change: a measured step's logits are the next one's "before", the
 * same bits as measuring them again; a setting change makes them stale
 * (the placement changes the logits of the same weights, and the next
 * step says the update's change, not the placement's); after the first
 * ENGINE_OC_STEPS steps only the validations are measured, the rest
 * unknown, not 0. */
static void test_out_change(void)
{
    ns_config c = small_cfg();
    c.steps = 0;
    engine *a = make(&c), *b = make(&c);
    step_metrics ma, mb;
    int same = 1, known = 1;
    for (int i = 0; i < 6; i++) {
        size_t n;
        engine_params(b, &n); /* b's held logits are dropped: measured again */
        engine_step(a, &ma);
        engine_step(b, &mb);
        same &= memcmp(&ma.out_change, &mb.out_change, sizeof ma.out_change) == 0;
        known &= metrics_known(&ma, METRICS_COL_OUT_CHANGE) && ma.out_change > 0 &&
                 ma.out_change < 1;
    }
    CHECK(same && known);
    /* the placement flipped: Post-LN's logits of the same weights are
     * another output altogether */
    engine_set_norm(a, NORM_POST);
    engine_step(a, &ma);
    CHECK(ma.out_change > 0 && ma.out_change < 0.2f);
    if (ma.out_change >= 0.2f)
        fprintf(stderr, "  out_change after a placement change: %g\n", (double)ma.out_change);
    engine_free(b);
    /* past ENGINE_OC_STEPS: the validations' steps only (every 4th) */
    int pattern = 1;
    while (engine_steps_done(a) < ENGINE_OC_STEPS + 9) {
        engine_step(a, &ma);
        int want = ma.step <= ENGINE_OC_STEPS || ma.step % c.val_every == 0;
        pattern &= metrics_known(&ma, METRICS_COL_OUT_CHANGE) == want;
        pattern &= !want || (isfinite(ma.out_change) && ma.out_change > 0);
    }
    CHECK(pattern);
    engine_free(a);
}

/* Events are typed where they are made: a reader needs the kind and the
 * layer, never the words. A poisoned block diverges with its layer in the
 * metrics and in the event, which agree with the report's text. */
static void test_event_kinds(void)
{
    ns_config c = small_cfg();
    engine *e = make(&c);
    ns_event ev;
    CHECK(engine_event_get(e, 0, &ev) == 0 && ev.kind == NS_EV_INFO && ev.layer == -1);
    engine_set_lr(e, 0.002f);
    CHECK(engine_event_get(e, engine_event_count(e) - 1, &ev) == 0 && ev.kind == NS_EV_SETTING);
    engine_note(e, "diverged at step 9 (only words)");
    CHECK(engine_event_get(e, engine_event_count(e) - 1, &ev) == 0 && ev.kind == NS_EV_NOTE);
    CHECK(engine_rewind(e) == -1); /* no snapshot before step 0 */
    CHECK(engine_event_get(e, engine_event_count(e) - 1, &ev) == 0 && ev.kind == NS_EV_REFUSED);
    step_metrics m;
    CHECK(engine_step(e, &m) == 0 && m.fault_layer == -1);
    engine_free(e);
    /* fp16 without loss scaling at LR 10 overflows inside a block */
    c.lr = 10;
    c.warmup = 0;
    c.precision = FMT_FP16;
    c.loss_scale = -1;
    e = make(&c);
    int bad = 0;
    for (int i = 0; i < 40 && !bad; i++)
        bad = engine_step(e, &m);
    CHECK(bad && m.fault_layer >= 0 && m.fault_layer < c.n_layer);
    CHECK(engine_event_get(e, engine_event_count(e) - 1, &ev) == 0);
    CHECK(ev.kind == NS_EV_DIVERGED && ev.layer == m.fault_layer && ev.step == m.step);
    char want[32];
    snprintf(want, sizeof want, "layer %d,", m.fault_layer);
    CHECK(strstr(m.fault, want) != NULL && strstr(ev.text, want) != NULL);
    engine_free(e);
}

/* Gradient metrics are slices of the true gradient: the squares of the
 * per-layer group norms never exceed the global norm's square. */
static void test_metric_slices(void)
{
    ns_config c = small_cfg();
    engine *e = make(&c);
    step_metrics m;
    engine_step(e, &m);
    double s = 0;
    for (int l = 0; l < c.n_layer; l++) {
        s += (double)m.layer[l].grad_attn * m.layer[l].grad_attn +
             (double)m.layer[l].grad_ffn * m.layer[l].grad_ffn +
             (double)m.layer[l].grad_ln * m.layer[l].grad_ln;
        CHECK(m.layer[l].grad_attn > 0 && m.layer[l].grad_ffn > 0 && m.layer[l].grad_ln > 0);
        CHECK(m.layer[l].update_ratio > 0 && m.layer[l].update_ratio < 1);
        CHECK(m.layer[l].act_max >= m.layer[l].resid_max && m.layer[l].resid_rms > 0);
    }
    CHECK(s < (double)m.grad_norm * m.grad_norm);
    engine_free(e);
}

static void test_data(void)
{
    char err[256];
    dataset d;
    CHECK(data_load_file(&d, "/nonexistent/file", err, sizeof err) != 0 && strstr(err, "No such"));
    CHECK(data_load_file(&d, "/tmp", err, sizeof err) != 0 && strstr(err, "directory"));
    char path[] = "/tmp/ns_test_data_XXXXXX";
    int fd = mkstemp(path);
    CHECK(data_load_file(&d, path, err, sizeof err) != 0 && strstr(err, "empty"));
    CHECK(write(fd, "0123456789abcdefghij", 20) == 20);
    close(fd);
    CHECK(data_load_file(&d, path, err, sizeof err) == 0 && d.n == 20 && d.n_train == 18);
    CHECK(data_check(&d, 8, err, sizeof err) != 0 && strstr(err, "too short"));
    data_free(&d);
    unlink(path);
    /* batches: y is x shifted by one, and inside the training part */
    data_builtin(&d);
    CHECK(d.n > 40000);
    uint8_t x[4 * 16], y[4 * 16];
    ns_rng r;
    rng_seed(&r, 3);
    data_train_batch(&d, &r, 4, 16, x, y);
    CHECK(memcmp(x + 1, y, 15) == 0);
    data_val_batch(&d, 1, 2, 4, 16, x, y);
    CHECK(memcmp(x + 17, y + 16, 15) == 0);
}

/* A skipped step's event carries the step its text names, and a rewind
 * gives back the snapshot's step's metrics. */
static void test_event_steps_and_rewind_metrics(void)
{
    ns_config c = small_cfg();
    c.precision = FMT_FP16; /* 65536 overflows the first backward: skipped */
    c.snapshot_every = 5;
    char err[256];
    engine *e = engine_create(&c, &D, err, sizeof err);
    if (!CHECK(e != NULL))
        return;
    step_metrics m, at5, back;
    memset(&at5, 0, sizeof at5);
    long first = engine_event_count(e);
    for (int i = 0; i < 7; i++) {
        engine_step(e, &m);
        if (m.step == 5)
            at5 = m;
    }
    int found = 0;
    for (long i = first; i < engine_event_count(e); i++) {
        ns_event ev;
        char want[32];
        if (engine_event_get(e, i, &ev) != 0 || !strstr(ev.text, "skipped"))
            continue;
        snprintf(want, sizeof want, "step %ld skipped", ev.step);
        found++;
        CHECK(strstr(ev.text, want) != NULL);
    }
    CHECK(found > 0);
    CHECK(engine_rewind(e) == 5);
    CHECK(engine_last_metrics(e, &back) == 1);
    CHECK(back.step == 5 && back.loss == at5.loss && back.grad_norm == at5.grad_norm);
    for (int l = 0; l < c.n_layer; l++)
        CHECK(back.layer[l].act_max == at5.layer[l].act_max &&
              back.layer[l].update_ratio == at5.layer[l].update_ratio);
    engine_free(e);
}

/* Headroom in doublings: a number for an act max below 1 against fp32's
 * max (the float quotient would be inf), NaN for NaN, inf for 0. */
static void test_headroom(void)
{
    float fmax = numfmt_max(FMT_FP32);
    float h = engine_headroom(fmax, 0.12f);
    CHECK(isfinite(h) && fabs(h - (log2(3.40282347e38) - log2(0.12))) < 1e-3);
    CHECK(isnan(engine_headroom(fmax, NAN)));
    CHECK(isinf(engine_headroom(fmax, 0.0f)) && engine_headroom(fmax, 0.0f) > 0);
    CHECK(fabs(engine_headroom(256.0f, 128.0f) - 1.0f) < 1e-6);
}

/* A rewind to at or before a step: the newest snapshot that old. */
static void test_rewind_before(void)
{
    ns_config c = small_cfg();
    c.snapshot_every = 5;
    char err[256];
    engine *e = engine_create(&c, &D, err, sizeof err);
    if (!CHECK(e != NULL))
        return;
    step_metrics m;
    for (int i = 0; i < 17; i++)
        engine_step(e, &m);
    CHECK(engine_rewind_before(e, 12) == 10);
    CHECK(engine_rewind_before(e, 100) == 5); /* before now, whatever was asked */
    CHECK(engine_rewind_before(e, 3) == 0);
    CHECK(engine_rewind_before(e, -1) == -1 && engine_steps_done(e) == 0);
    engine_free(e);
}

int main(void)
{
    data_builtin(&D);
    test_determinism();
    test_checkpoint_roundtrip();
    test_checkpoint_bad_header();
    test_checkpoint_diag_state();
    test_checkpoint_memory();
    test_switch_placement();
    test_schedule();
    test_warmup_toggle();
    test_nonfinite();
    test_out_change();
    test_event_kinds();
    test_metric_slices();
    test_data();
    test_event_steps_and_rewind_metrics();
    test_headroom();
    test_rewind_before();
    return test_summary();
}
