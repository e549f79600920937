/* test_plot.c - the live view's g figures drawn from a snapshot (no
 * trainer: a snapshot filled as the trainer fills one), read back as text:
 * both runs' history (loss, validation, heatmap rows), both runs' layer
 * bars, panel titles naming what the runs differ in, nothing drawn as not
 * finite where the snapshot is finite and a hatched cell where it is not.
 *
 * Not here: figures from files (tests/sh/plot.sh), the trainer's own ghost
 * (test_trainer.c).
 */
#include "metrics.h"
#include "plot.h"
#include "settings.h"
#include "testutil.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { L = 4, N = 60 };

static trainer_snapshot *S;
static char svg[1 << 21];

/* A --compare pair at step N: run a's blocks silenced (gain 0: zero
 * gradients below the top), run b's training; validation every 10 steps. */
static void fill(void)
{
    memset(S, 0, sizeof *S);
    trainer_status *s = &S->s;
    s->compare = 1;
    s->n_layer = L;
    s->have_metrics = 1;
    s->hist_total = N;
    snprintf(s->run[0].label, sizeof s->run[0].label, "a: ln-gamma-init=0  post layernorm fp32 warmup=100");
    snprintf(s->run[1].label, sizeof s->run[1].label, "b: ln-gamma-init=1  post layernorm fp32 warmup=100");
    for (long i = 0; i < N; i++) {
        trainer_point *p = &S->hist[i];
        p->step = i + 1;
        p->run[0].loss = 5.5f - 0.01f * (float)i;
        p->run[1].loss = 5.5f - 0.04f * (float)i;
        p->run[0].val_loss = p->run[1].val_loss = NAN;
        if ((i + 1) % 10 == 0) {
            p->run[0].val_loss = p->run[0].loss + 0.02f;
            p->run[1].val_loss = p->run[1].loss + 0.05f;
        }
        for (int l = 0; l < L; l++) {
            S->run[0].heat[i][l] = l == L - 1 ? 0.3f : 0.0f;
            S->run[1].heat[i][l] = 0.5f + 0.1f * (float)l;
        }
    }
    s->run[0].last.step = s->run[1].last.step = N;
    for (int l = 0; l < L; l++) {
        s->run[0].last.layer[l].grad_attn = s->run[0].last.layer[l].grad_ffn = l == L - 1 ? 0.2f : 0.0f;
        s->run[1].last.layer[l].grad_attn = 0.4f + 0.1f * (float)l;
        s->run[1].last.layer[l].grad_ffn = 0.3f + 0.1f * (float)l;
    }
}

/* Draw the snapshot into svg[]: how bit 0 the heatmap (else the bars
 * view), bit 1 the loss on a log axis (the view's y key). 0 on success. */
static int draw(int how)
{
    char path[64], err[256];
    snprintf(path, sizeof path, "/tmp/ns_test_plot_%d.svg", (int)getpid());
    if (plot_write_snapshot(S, how & 1, how >> 1, 0.9, path, err, sizeof err)) {
        fprintf(stderr, "plot_write_snapshot: %s\n", err);
        return -1;
    }
    FILE *f = fopen(path, "r");
    size_t got = f ? fread(svg, 1, sizeof svg - 1, f) : 0;
    svg[got] = 0;
    if (f)
        fclose(f);
    remove(path);
    return got ? 0 : -1;
}

static int count(const char *needle)
{
    int n = 0;
    for (const char *p = strstr(svg, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* The number in attribute attr of the element holding `at`. */
static long attr_after(const char *at, const char *attr)
{
    const char *p = strstr(svg, at);
    p = p ? strstr(p, attr) : NULL;
    return p ? strtol(p + strlen(attr), NULL, 10) : -1;
}

static void test_heatmap_both_runs(void)
{
    fill();
    CHECK(draw(1) == 0);
    /* every cell of both runs, none hatched: the snapshot is finite */
    CHECK(count("class=\"cell\"") == 2 * L * N);
    CHECK(count("fill=\"url(#nan)\"/>") == 0);
    /* the panels name the setting, not the rest of the label */
    CHECK(strstr(svg, "class=\"panel-title\">a: ln-gamma-init=0<") != NULL);
    CHECK(strstr(svg, "class=\"panel-title\">b: ln-gamma-init=1<") != NULL);
    /* a step of b that was not finite: its cells, and only those, hatched */
    S->run[1].heat[30][2] = NAN;
    CHECK(draw(1) == 0);
    CHECK(count("fill=\"url(#nan)\"/>") == 1);
    CHECK(strstr(svg, "data-step=\"31\" data-layer=\"2\" data-value=\"nan\"") != NULL);
}

static void test_view_both_runs(void)
{
    fill();
    CHECK(draw(0) == 0);
    /* both runs' bars: two a layer, each run */
    CHECK(count("class=\"bar\"") == 2 * 2 * L);
    /* a's zero gradients said as 0, not left blank */
    CHECK(count("class=\"zero\"") == 2 * (L - 1));
    /* both runs' loss and validation, b's measured points as a's */
    CHECK(attr_after("data-name=\"validation loss a: ln-gamma-init=0\"", "data-points=\"") == N / 10);
    CHECK(attr_after("data-name=\"validation loss b: ln-gamma-init=1\"", "data-points=\"") == N / 10);
    CHECK(attr_after("data-name=\"train loss b: ln-gamma-init=1\"", "data-points=\"") == N);
    CHECK(count("class=\"nonfinite\"") == 0);
    /* each bar panel titled by its run */
    CHECK(strstr(svg, "class=\"panel-title\">a: ln-gamma-init=0<") != NULL);
    CHECK(strstr(svg, "class=\"panel-title\">b: ln-gamma-init=1<") != NULL);
    /* the legend starts on the canvas (a long label once pushed it off the left) */
    const char *lg = strstr(svg, "<g class=\"legend\"><rect x=\"");
    CHECK(lg && strtod(lg + strlen("<g class=\"legend\"><rect x=\""), NULL) >= 0);
    /* runs apart in many settings: the legend shrinks to the chart, its
     * left edge inside the chart's */
    snprintf(S->s.run[0].label, sizeof S->s.run[0].label,
             "a: fp32-norms=off norm=pre precision=fp16 warmup=0 clip=1 lr=0.01  rest");
    CHECK(draw(0) == 0);
    lg = strstr(svg, "<g class=\"legend\"><rect x=\"");
    const char *area = strstr(svg, "class=\"plot-area\" x=\"");
    double lx = 0, lw = 0, ax = 0, aw = 0;
    CHECK(lg && area &&
          sscanf(lg, "<g class=\"legend\"><rect x=\"%lf\" y=\"%*f\" width=\"%lf\"", &lx, &lw) == 2 &&
          sscanf(area, "class=\"plot-area\" x=\"%lf\" y=\"%*f\" width=\"%lf\"", &ax, &aw) == 2);
    CHECK(lx >= ax && lx + lw <= ax + aw);
    fill();
    /* a loss b did not finish: its tick, on b's (top) edge */
    S->hist[40].run[1].loss = NAN;
    CHECK(draw(0) == 0);
    CHECK(count("class=\"nonfinite\" data-run=\"1\" data-step=\"41\"") == 1);
    CHECK(count("class=\"nonfinite\" data-run=\"0\"") == 0);
    /* the view's log-y: the figure's loss axis too */
    CHECK(draw(0) == 0 && strstr(svg, "loss (nats per byte)") != NULL);
    CHECK(draw(2) == 0 && strstr(svg, "loss (nats, log scale)") != NULL);
    /* a step of a that went non-finite inside, its loss finite: ticked too */
    S->hist[20].nonfinite = 1;
    CHECK(draw(0) == 0);
    CHECK(count("class=\"nonfinite\" data-run=\"0\" data-step=\"21\"") == 1);
}

/* fill(), then a rewind that abandoned steps first .. first + n - 1 (the
 * snapshot's ghost) */
static void rewound(long first, int n)
{
    fill();
    S->s.ghost_first = first;
    S->s.ghost_n = n;
    for (int i = 0; i < n; i++)
        S->run[0].ghost[i] = S->run[1].ghost[i] = 3.0f;
}

/* After a rewind to step 0: the abandoned curve grey and dashed, the
 * rewind marked where it ends, inside the plot, not on the y axis; after
 * one to a later step, where the replay branches off. */
static void test_view_rewind(void)
{
    rewound(1, 30);
    snprintf(S->hist[0].run[0].mark, sizeof S->hist[0].run[0].mark, "rewind,warmup");
    snprintf(S->hist[0].run[1].mark, sizeof S->hist[0].run[1].mark, "rewind,warmup");
    CHECK(draw(0) == 0);
    CHECK(count("data-name=\"before the rewind: train loss") == 2);
    CHECK(count("class=\"marker\"") == 1); /* the same change of both runs: once */
    const char *m = strstr(svg, "<g class=\"marker\" data-step=\"30\"><line x1=\"");
    const char *area = strstr(svg, "class=\"plot-area\" x=\"");
    CHECK(m && area);
    if (m && area) {
        double x = strtod(m + strlen("<g class=\"marker\" data-step=\"30\"><line x1=\""), NULL);
        double x0 = strtod(area + strlen("class=\"plot-area\" x=\""), NULL);
        CHECK(x > x0 + 10);
    }
    CHECK(strstr(svg, "rewind 30 \xe2\x86\x92 0, warmup<") != NULL);
    /* a rewind from 40 to 20: marked where the replay branches off (20) */
    rewound(21, 20);
    snprintf(S->hist[20].run[0].mark, sizeof S->hist[20].run[0].mark, "rewind");
    CHECK(draw(0) == 0);
    CHECK(strstr(svg, "<g class=\"marker\" data-step=\"20\">") != NULL);
    CHECK(strstr(svg, ">a: rewind 40 \xe2\x86\x92 20<") != NULL);
}

/* A step of n_layer 1 whose setting columns hold the defaults' values
 * (the ramp on), and column k the value x. */
static void setting_step(step_metrics *m, long step, int k, double x)
{
    ns_config c;
    settings_defaults(&c);
    memset(m, 0, sizeof *m);
    m->step = step;
    m->loss = m->grad_norm = 1.0f;
    m->lr = 1e-3f;
    m->loss_scale = 1;
    m->n_layer = 1;
    for (int j = 0; j < metrics_step_ncols(); j++) {
        const ns_setting *s = metrics_step_col(j)->setting;
        if (s)
            metrics_step_col_set_value(m, j, s->home == SET_IN_CFG ? settings_get(s, &c) : 1);
    }
    metrics_step_col_set_value(m, k, x);
}

/* Another value of setting column k than x: an enum's next, on/off's
 * other, a number's double (or 1 for 0). */
static double other_setting(int k, double x)
{
    const ns_setting *s = metrics_step_col(k)->setting;
    if (s->type == SET_ENUM)
        return (double)(((int)x + 1) % s->n_names);
    if (s->type == SET_ONOFF || s->type == SET_AUTO)
        return x == 1 ? 0 : 1;
    return x != 0 ? x * 2 : 1;
}

/* Every setting column --plot reads: a CSV where it changes at step 3
 * gives a marker there with its words ("COLUMN=VALUE"); a --compare CSV
 * where the runs differ in it names each run by it ("a: NAME=VALUE",
 * the flag's spelling). */
static void test_every_setting_marked(void)
{
    char path[] = "/tmp/ns_plotsetXXXXXX";
    int fd = mkstemp(path), cols = 0;
    CHECK(fd >= 0);
    close(fd);
    for (int k = 0; k < metrics_step_ncols(); k++) {
        if (!metrics_step_col(k)->setting)
            continue;
        const char *col = metrics_step_col(k)->name;
        step_metrics m[2];
        setting_step(&m[0], 1, k, 0);
        double x = m[0].set[k];
        setting_step(&m[0], 1, k, x);
        setting_step(&m[1], 1, k, other_setting(k, x));
        char va[32], vb[32], want[96], wa[96], wb[96];
        metrics_step_col_text(&m[0], k, va, sizeof va);
        metrics_step_col_text(&m[1], k, vb, sizeof vb);
        /* one run, changed at step 3 */
        FILE *f = fopen(path, "w");
        metrics_csv_header(f, 1);
        for (long s = 1; s <= 4; s++) {
            step_metrics r = m[s >= 3];
            r.step = s;
            metrics_csv_row(f, &r);
        }
        fclose(f);
        plot_data d;
        char err[128];
        plot_data_init(&d);
        int marked = 0;
        snprintf(want, sizeof want, "%s=%s", col, vb);
        if (plot_data_read(&d, path, err, sizeof err) == 0)
            for (int i = 0; i < d.run[0].nmark; i++)
                marked |= d.run[0].mark[i].step == 3 && strstr(d.run[0].mark[i].text, want) != NULL;
        if (!marked)
            fprintf(stderr, "%s: no marker '%s' at step 3 (%d markers)\n", col, want,
                    d.run[0].nmark);
        CHECK(marked);
        plot_data_free(&d);
        /* a pair that differs in it */
        f = fopen(path, "w");
        metrics_csv_header_fields(f, 1, "");
        fputc(',', f);
        metrics_csv_header_fields(f, 1, "b_");
        metrics_csv_state_header(f, "");
        metrics_csv_state_header(f, "b_");
        fputc('\n', f);
        for (long s = 1; s <= 2; s++) {
            m[0].step = m[1].step = s;
            metrics_csv_fields(f, &m[0]);
            fputc(',', f);
            metrics_csv_fields(f, &m[1]);
            metrics_csv_state_fields(f, &m[0]);
            metrics_csv_state_fields(f, &m[1]);
            fputc('\n', f);
        }
        fclose(f);
        char flag[40];
        snprintf(flag, sizeof flag, "%s", col);
        for (char *p = flag; *p; p++)
            *p = *p == '_' ? '-' : *p;
        snprintf(wa, sizeof wa, "a: %s=%s", flag, va);
        snprintf(wb, sizeof wb, "b: %s=%s", flag, vb);
        plot_data_init(&d);
        int named = plot_data_read(&d, path, err, sizeof err) == 0 && d.nruns == 2 &&
                    !strcmp(d.run[0].label, wa) && !strcmp(d.run[1].label, wb);
        if (!named)
            fprintf(stderr, "%s: runs named '%s' and '%s', want '%s' and '%s'\n", col,
                    d.run[0].label, d.run[1].label, wa, wb);
        CHECK(named);
        plot_data_free(&d);
        cols++;
    }
    unlink(path);
    CHECK(cols >= 7); /* norm .. fp32_norms, ln_gamma_init */
}

int main(void)
{
    S = snapshot_new();
    if (!S)
        return 1;
    test_heatmap_both_runs();
    test_view_both_runs();
    test_view_rewind();
    test_every_setting_marked();
    free(S);
    return test_summary();
}
