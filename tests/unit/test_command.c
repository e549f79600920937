/* test_command.c - mid-run commands and --script files: parsing (errors
 * name the line), when entries fire (once per pass, never looping after a
 * rewind), and what applying them does to an engine. */
#include <string.h>

#include "command.h"
#include "lesson.h"
#include "settings.h"
#include "testutil.h"

static void test_parse(void)
{
    enum { S = CMDH_SET, T = CMDH_TOGGLE, C = CMDH_CYCLE, X = CMDH_SCALE };
    enum { N = CMDV_NONE, I = CMDV_INT, R = CMDV_REAL };
    struct {
        const char *s;
        command_kind k;
        const char *row; /* a setting's command word */
        int how, vtype;
        double arg;
    } ok[] = {
        {"norm post", CMD_SETTING, "norm", S, I, NORM_POST},   {"norm deepnorm", CMD_SETTING, "norm", S, I, NORM_DEEPNORM},
        {"norm toggle", CMD_SETTING, "norm", T, N, 0},         {"norm next", CMD_SETTING, "norm", C, N, 0},
        {"kind rmsnorm", CMD_SETTING, "kind", S, I, NORMK_RMSNORM}, {"warmup on", CMD_SETTING, "warmup", S, I, 1},
        {"warmup off", CMD_SETTING, "warmup", S, I, 0},        {"warmup toggle", CMD_SETTING, "warmup", T, N, 0},
        {"precision fp16", CMD_SETTING, "precision", S, I, FMT_FP16}, {"precision next", CMD_SETTING, "precision", C, N, 0},
        {"fp32-norms off", CMD_SETTING, "fp32-norms", S, I, 0}, {"loss-scale dynamic", CMD_SETTING, "loss-scale", S, R, 0},
        {"loss-scale off", CMD_SETTING, "loss-scale", S, R, -1}, {"loss-scale 128", CMD_SETTING, "loss-scale", S, R, 128},
        {"loss-scale toggle", CMD_SETTING, "loss-scale", T, N, 0}, {"lr 3e-3", CMD_SETTING, "lr", S, R, 3e-3},
        {"lr x2", CMD_SETTING, "lr", X, R, 2},                 {"lr /2", CMD_SETTING, "lr", X, R, 0.5},
        {"lr 20", CMD_SETTING, "lr", S, R, 20},                {"clip 1.0", CMD_SETTING, "clip", S, R, 1},
        {"clip off", CMD_SETTING, "clip", S, R, 0},            {"clip toggle", CMD_SETTING, "clip", T, N, 0},
        {"final-norm auto", CMD_SETTING, "final-norm", S, I, -1}, {"  snapshot  ", CMD_SNAPSHOT, NULL, S, N, 0},
        {"rewind", CMD_REWIND, NULL, S, N, 0},            {"reinit", CMD_REINIT, NULL, S, N, 0},
        {"pause", CMD_PAUSE, NULL, S, N, 0},              {"stop", CMD_STOP, NULL, S, N, 0},
    };
    char err[256];
    int good = 1;
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        ns_command c;
        int r = command_parse(ok[i].s, &c, err, sizeof err);
        if (r != 0 || c.kind != ok[i].k ||
            (ok[i].row && command_row(&c) != settings_find_cmd(ok[i].row)) ||
            (int)c.how != ok[i].how ||
            (int)c.v.type != ok[i].vtype || command_number(&c) != ok[i].arg) {
            fprintf(stderr, "  '%s': r=%d kind=%d how=%d arg=%g (%s)\n", ok[i].s, r, c.kind,
                    c.how, command_number(&c), r ? err : "");
            good = 0;
        }
    }
    CHECK(good);
    ns_command c;
    CHECK(command_parse("note watch the bottom layers", &c, err, sizeof err) == 0 &&
          c.kind == CMD_NOTE && !strcmp(c.text, "watch the bottom layers"));
    const char *bad[] = {"nrom post", "norm", "norm sideways", "lr -1", "lr x0", "clip -3",
                         "snapshot now", "warmup maybe", "precision fp8", "loss-scale 0", "",
                         "kind toggle", "final-norm toggle", "lr nan", "clip x2", "warmup 5"};
    int refused = 1;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        refused &= command_parse(bad[i], &c, err, sizeof err) != 0 && err[0];
    CHECK(refused);
    /* a refused value says what the row takes, and the words of its
     * mid-run behaviour */
    CHECK(command_parse("norm sideways", &c, err, sizeof err) != 0 && strstr(err, "post") &&
          strstr(err, "or toggle, next"));
    CHECK(command_parse("clip -3", &c, err, sizeof err) != 0 && strstr(err, "at least 0") &&
          strstr(err, "toggle, off"));
    /* past a float, the value would be stored as inf, which no checkpoint
     * header takes back */
    CHECK(command_parse("clip 1e300", &c, err, sizeof err) != 0 &&
          strstr(err, "at most 3.4e+38"));
    CHECK(command_parse("loss-scale 1e39", &c, err, sizeof err) != 0);
    CHECK(command_parse("clip 1e38", &c, err, sizeof err) == 0);
    CHECK(command_parse("lr x0", &c, err, sizeof err) != 0 && strstr(err, "factor above 0"));
    CHECK(command_parse("kind toggle", &c, err, sizeof err) != 0 && strstr(err, "or next") &&
          !strstr(err, "toggle,"));
}

static void test_script_errors(void)
{
    ns_script s;
    char err[256];
    CHECK(command_script_parse("# a lesson\n\nat 10: norm post\nevery 5: snapshot # keep\n", "x", &s, err,
                       sizeof err) == 0);
    CHECK(s.n == 2 && s.e[0].at == 10 && s.e[1].every == 5 && s.e[1].at == -1);
    command_script_free(&s);
    struct {
        const char *text, *want;
    } cases[] = {
        {"at 10: norm post\nat 20 norm pre\n", "f.txt:2: expected"},
        {"at 10: norm post\n\nat 30: nrom pre\n", "f.txt:3: unknown command 'nrom'"},
        {"every 0: snapshot\n", "f.txt:1: 'every 0'"},
        {"at -4: snapshot\n", "f.txt:1: 'at -4'"},
        {"sometimes 4: snapshot\n", "f.txt:1: expected"},
        {"at 4: lr fast\n", "f.txt:1: 'lr fast'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        err[0] = 0;
        int r = command_script_parse(cases[i].text, "f.txt", &s, err, sizeof err);
        if (!t_check(r != 0 && strstr(err, cases[i].want) == err, __FILE__, __LINE__,
                     cases[i].want))
            fprintf(stderr, "  got: %s\n", err);
    }
    CHECK(command_script_load("/nonexistent/script", &s, err, sizeof err) != 0 && strstr(err, "--script"));
}

static int fired[64];
static int n_fired;
static void record(void *ctx, const ns_command *c, int target)
{
    (void)ctx;
    (void)target;
    if (n_fired < 64) {
        fired[n_fired++] = c->kind;
    }
}

static void test_due(void)
{
    ns_script s;
    char err[256];
    CHECK(command_script_parse("at 0: norm post\nevery 3: snapshot\nat 6: rewind\n", "x", &s, err,
                       sizeof err) == 0);
    n_fired = 0;
    long steps[] = {0, 1, 2, 3, 4, 5, 6, /* rewind back to 3: */ 3, 4, 5, 6, 7, 8, 9};
    int counts[16] = {0};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        int before = n_fired;
        command_script_due(&s, steps[i], record, NULL);
        counts[i] = n_fired - before;
    }
    /* 0: norm; 3: snapshot; 6: snapshot + rewind; the second pass over
     * 3..6 is silent; 9: snapshot */
    CHECK(counts[0] == 1 && fired[0] == CMD_SETTING);
    CHECK(counts[3] == 1 && counts[6] == 2);
    CHECK(counts[7] == 0 && counts[8] == 0 && counts[9] == 0 && counts[10] == 0);
    CHECK(counts[13] == 1 && n_fired == 5);
    command_script_free(&s);
}

static void test_apply(void)
{
    dataset d;
    data_builtin(&d);
    ns_config c;
    settings_defaults(&c);
    c.n_layer = 2;
    c.dim = 16;
    c.n_head = 2;
    c.context = 16;
    c.batch = 2;
    char err[256];
    engine *e = engine_create(&c, &d, err, sizeof err);
    ns_command cmd;
    command_parse("norm toggle", &cmd, err, sizeof err);
    CHECK(command_apply(e, &cmd) == CMD_APPLIED && engine_config(e)->norm == NORM_POST);
    command_parse("norm next", &cmd, err, sizeof err);
    command_apply(e, &cmd);
    CHECK(engine_config(e)->norm == NORM_PRE);
    command_parse("precision next", &cmd, err, sizeof err);
    command_apply(e, &cmd);
    CHECK(engine_config(e)->precision == FMT_BF16);
    command_parse("lr x4", &cmd, err, sizeof err);
    command_apply(e, &cmd);
    CHECK(t_close(engine_current_peak(e), 4e-3, 1e-6, 0));
    /* + pressed many times: no cap at 10, the numbers go where they go */
    for (int i = 0; i < 200; i++)
        command_apply(e, &cmd);
    CHECK(engine_current_peak(e) == 1e30f);
    command_parse("clip toggle", &cmd, err, sizeof err);
    command_apply(e, &cmd);
    CHECK(engine_config(e)->clip == 1.0f);
    command_apply(e, &cmd);
    CHECK(engine_config(e)->clip == 0.0f);
    command_parse("pause", &cmd, err, sizeof err);
    CHECK(command_apply(e, &cmd) == CMD_FLOW && cmd.text[0] == 0);
    /* a lesson's question rides on its pause */
    CHECK(command_parse("pause  Why can it not move? ", &cmd, err, sizeof err) == 0 &&
          cmd.kind == CMD_PAUSE && !strcmp(cmd.text, "Why can it not move?"));
    CHECK(command_parse("resume now", &cmd, err, sizeof err) != 0); /* the others take none */
    command_parse("note hello", &cmd, err, sizeof err);
    command_apply(e, &cmd);
    ns_event ev;
    CHECK(engine_event_get(e, engine_event_count(e) - 1, &ev) == 0 && !strcmp(ev.text, "hello"));
    engine_free(e);
}

/* Lesson files: keys, script lines with their line numbers, and text
 * that does not end in a newline (a fuzzer found an off-by-one there:
 * under ASan this test fails without the fix). */
static void test_lesson_parse(void)
{
    ns_lesson l;
    char err[256];
    CHECK(lesson_parse("title: t\nflags: -L 2\nflags: --norm post\ntext: a\ntext: b\nat 1: stop",
                       "x", &l, err, sizeof err) == 0);
    CHECK(!strcmp(l.flags, "-L 2 --norm post") && !strcmp(l.text, "a\nb"));
    CHECK(l.script.n == 1 && l.script.e[0].at == 1 && l.script.e[0].cmd.kind == CMD_STOP);
    lesson_free(&l);
    CHECK(lesson_parse("title: t\n\nat 1: nrom post\n", "x.lesson", &l, err, sizeof err) != 0 &&
          strstr(err, "x.lesson:3:") == err);
    CHECK(lesson_parse("title: t\ncolour: red\n", "x.lesson", &l, err, sizeof err) != 0 &&
          strstr(err, "x.lesson:2: unknown key 'colour'") == err);
    CHECK(lesson_parse("text: no title\n", "x.lesson", &l, err, sizeof err) != 0 &&
          strstr(err, "no title"));
    /* only script lines, no final newline: the fuzzer's case */
    CHECK(lesson_parse("at 1: stop", "x.lesson", &l, err, sizeof err) != 0 && strstr(err, "no title"));
    /* a sweep lesson: its SPEC kept, no twin and no script beside it */
    CHECK(lesson_parse("title: t\nsweep: norm=post,pre lr=1e-3,1e-2\nflags: --steps 5\n", "x.lesson", &l,
                       err, sizeof err) == 0 &&
          !strcmp(l.sweep, "norm=post,pre lr=1e-3,1e-2") && !strcmp(l.flags, "--steps 5"));
    lesson_free(&l);
    CHECK(lesson_parse("title: t\n", "x.lesson", &l, err, sizeof err) == 0 && l.sweep[0] == 0);
    lesson_free(&l);
    CHECK(lesson_parse("title: t\nsweep: lr=1e-3\ncompare: norm=pre\n", "x.lesson", &l, err, sizeof err) != 0 &&
          strstr(err, "x.lesson:3: a sweep lesson takes no compare") == err);
    /* its only script lines: notes and questions at a count of ended runs */
    static const char *const not_for_sweeps[] = {"at 5: stop\n", "every 2: note x\n", "at 1: pause\n",
                                                 "at 1: b: note x\n", "at 1: warmup on\n"};
    for (size_t i = 0; i < sizeof not_for_sweeps / sizeof not_for_sweeps[0]; i++) {
        char text[128];
        snprintf(text, sizeof text, "title: t\nsweep: lr=1e-3\n%s", not_for_sweeps[i]);
        CHECK(lesson_parse(text, "x.lesson", &l, err, sizeof err) != 0 &&
              strstr(err, "x.lesson:3: a sweep lesson's lines are 'at N: note TEXT'") == err);
    }
    CHECK(lesson_parse("title: t\nsweep: lr=1e-3\nat 0: pause Which stalls?\nat 2: note done\n", "x.lesson",
                       &l, err, sizeof err) == 0 &&
          l.script.n == 2 && l.script.e[0].cmd.kind == CMD_PAUSE && l.script.e[1].at == 2);
    lesson_free(&l);
    /* lines that depend on a setting: kept when it holds for the run's
     * settings, checked always, refused on what makes the settings */
    ns_config c;
    settings_defaults(&c);
    c.n_layer = 2;
    c.lr = 3e-3f;
    const char *cond = "title: t\nif layers=2,6: at 1: stop\nif layers!=2: text: deep\n"
                       "if lr=1e-3: text: slow\n";
    CHECK(lesson_parse_for(cond, "x", &c, NULL, 1, &l, err, sizeof err) == 0 && l.script.n == 1 &&
          l.text[0] == 0);
    lesson_free(&l);
    c.n_layer = 3;
    c.lr = 1e-3f;
    CHECK(lesson_parse_for(cond, "x", &c, NULL, 1, &l, err, sizeof err) == 0 && l.script.n == 0 &&
          !strcmp(l.text, "deep\nslow"));
    lesson_free(&l);
    CHECK(lesson_parse(cond, "x", &l, err, sizeof err) == 0 && l.script.n == 0 && !l.text[0]);
    lesson_free(&l);
    /* the lesson's own settings, or others: "if own:", "if !own:" */
    const char *own = "title: t\nif own: text: measured\nif !own: text: yours\n"
                      "if  !own : at 2: stop\n";
    CHECK(lesson_parse_for(own, "x", &c, NULL, 1, &l, err, sizeof err) == 0 &&
          !strcmp(l.text, "measured") && l.script.n == 0);
    lesson_free(&l);
    CHECK(lesson_parse_for(own, "x", &c, NULL, 0, &l, err, sizeof err) == 0 &&
          !strcmp(l.text, "yours") && l.script.n == 1);
    lesson_free(&l);
    CHECK(lesson_parse(own, "x", &l, err, sizeof err) == 0 && !l.text[0] && l.script.n == 0);
    lesson_free(&l);
    CHECK(lesson_parse_for("title: t\nif owned: text: x\n", "x", &c, NULL, 1, &l, err,
                           sizeof err) != 0 && strstr(err, "x:2: 'if owned'") == err);
    /* run b's settings: "b." */
    ns_config cb = c;
    cb.norm = NORM_DEEPNORM;
    const char *twin = "title: t\nif b.norm=deepnorm: text: dn\nif b.norm!=deepnorm: text: other\n";
    CHECK(lesson_parse_for(twin, "x", &c, &cb, 1, &l, err, sizeof err) == 0 && !strcmp(l.text, "dn"));
    lesson_free(&l);
    cb.norm = NORM_REZERO;
    CHECK(lesson_parse_for(twin, "x", &c, &cb, 1, &l, err, sizeof err) == 0 && !strcmp(l.text, "other"));
    lesson_free(&l);
    CHECK(lesson_parse_for(twin, "x", &c, NULL, 1, &l, err, sizeof err) == 0 && !l.text[0]);
    lesson_free(&l);
    CHECK(lesson_parse_for("title: t\nif layrs=2: text: x\n", "x", &c, NULL, 1, &l, err, sizeof err) != 0 &&
          strstr(err, "x:2: 'if layrs'") == err);
    CHECK(lesson_parse_for("title: t\nif layers=two: text: x\n", "x", &c, NULL, 1, &l, err, sizeof err) != 0 &&
          strstr(err, "x:2: 'if layers=two'") == err);
    CHECK(lesson_parse_for("title: t\nif layers=3: flags: -L 4\n", "x", &c, NULL, 1, &l, err, sizeof err) != 0 &&
          strstr(err, "only title, text, at and every"));
    /* a title for a setting replaces the one before it; the listing's is
     * the unconditional one */
    const char *tt = "title: fp16 overflows\nif precision!=fp16: title: other formats\n";
    c.precision = FMT_BF16;
    CHECK(lesson_parse_for(tt, "x", &c, NULL, 1, &l, err, sizeof err) == 0 &&
          !strcmp(l.title, "other formats"));
    lesson_free(&l);
    c.precision = FMT_FP16;
    CHECK(lesson_parse_for(tt, "x", &c, NULL, 1, &l, err, sizeof err) == 0 &&
          !strcmp(l.title, "fp16 overflows"));
    lesson_free(&l);
    CHECK(lesson_parse(tt, "x", &l, err, sizeof err) == 0 && !strcmp(l.title, "fp16 overflows"));
    lesson_free(&l);
    c.precision = FMT_FP32;
    CHECK(lesson_parse_for("title: t\nif layers=2: at 1: nrom post\n", "x", &c, NULL, 1, &l, err, sizeof err) != 0 &&
          strstr(err, "x:2:") == err); /* not kept for -L 3, yet checked */
    CHECK(lesson_parse_for("title: t\nif layers 2: text: x\n", "x", &c, NULL, 1, &l, err, sizeof err) != 0 &&
          strstr(err, "expected 'if SETTING=VALUE"));
    /* every compiled-in lesson parses */
    int all = lesson_count() > 0;
    for (int i = 0; i < lesson_count(); i++) {
        all &= lesson_load(lesson_name(i), &l, err, sizeof err) == 0;
        lesson_free(&l);
    }
    CHECK(all);
    CHECK(lesson_load("nope", &l, err, sizeof err) != 0 && strstr(err, "warmup"));
}

int main(void)
{
    test_parse();
    test_script_errors();
    test_due();
    test_apply();
    test_lesson_parse();
    return test_summary();
}
