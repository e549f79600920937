/* test_diagnose.c - each rule of diagnose.c on a synthetic metric sequence
 * that triggers it, and on a healthy one that must stay silent. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "command.h"
#include "diagnose.h"
#include "numfmt.h"
#include "testutil.h"

#define L 8
#define PLATEAU 3.08

static diag *dg;
static diag_finding found[64];
static int fixes_checked, texts_checked;
static int n_found;

/* A healthy fp32 step: loss going down, every layer alike. */
static void healthy(step_metrics *m, long step)
{
    memset(m, 0, sizeof *m);
    m->step = step;
    m->loss = 2.5f - 0.001f * (float)step;
    m->lr = m->lr_peak = 1e-3f;
    metrics_set_setting(m, "warmup", 1);
    metrics_set_setting(m, "precision", FMT_FP32);
    metrics_set_setting(m, "fp32_norms", 1);
    m->loss_scale = 1;
    m->grad_norm = 1; /* a first update with none is no sane start */
    metrics_set_setting(m, "norm", NORM_PRE);
    m->n_layer = L;
    m->data_entropy = NAN; /* the plateau diag_init was given */
    m->vocab = 256;
    metrics_set_setting(m, "ln_gamma_init", 1);
    for (int l = 0; l < L; l++) {
        layer_metrics *lm = &m->layer[l];
        lm->grad_attn = lm->grad_ffn = lm->grad_ln = 0.1f;
        lm->act_max = 10;
        lm->headroom = log2f(numfmt_max(FMT_FP32) / 10);
        lm->update_ratio = 1e-3f;
    }
}

static void reset(void)
{
    diag_init(dg, PLATEAU);
    n_found = 0;
}

/* Observe m; keep what was found. */
static int feed(const step_metrics *m)
{
    diag_finding f[DIAG_MAX_FINDINGS];
    int k = diag_observe(dg, m, f, DIAG_MAX_FINDINGS);
    for (int i = 0; i < k; i++) {
        /* a finding is never cut (its numbers whole), and its fix is
         * commands the script parser takes */
        CHECK(strlen(f[i].text) < DIAG_TEXT - 1 && strlen(f[i].hint) < DIAG_TEXT - 1);
        texts_checked++;
        char list[DIAG_FIX_TEXT], *save = NULL, err[128];
        snprintf(list, sizeof list, "%s", f[i].fix);
        for (char *w = strtok_r(list, ";", &save); w; w = strtok_r(NULL, ";", &save)) {
            ns_command c;
            while (*w == ' ')
                w++;
            CHECK(command_parse(w, &c, err, sizeof err) == 0 && c.kind == CMD_SETTING);
            fixes_checked++;
        }
        if (n_found < 64)
            found[n_found++] = f[i];
    }
    return k;
}

static int count(diag_rule r)
{
    int c = 0;
    for (int i = 0; i < n_found; i++)
        c += found[i].rule == r;
    return c;
}

static const diag_finding *first(diag_rule r)
{
    for (int i = 0; i < n_found; i++)
        if (found[i].rule == r)
            return &found[i];
    return NULL;
}

static void test_healthy_is_silent(void)
{
    reset();
    step_metrics m;
    for (long s = 1; s <= 400; s++) {
        healthy(&m, s);
        m.has_val = s % 50 == 0;
        m.val_loss = m.loss;
        feed(&m);
    }
    CHECK(n_found == 0);
    CHECK(!diag_stalled(dg));
}

/* fp16 with norms in the format: layer 2's act max grows 2x per 100 steps
 * toward 256 from 40; the warning comes well before the crossing, and
 * again as the steps left halve, each range holding the crossing. */
static void test_headroom(void)
{
    reset();
    step_metrics m;
    long crossed = 0, warned = 0;
    for (long s = 1; s <= 300; s++) {
        healthy(&m, s);
        metrics_set_setting(&m, "precision", FMT_FP16);
        metrics_set_setting(&m, "fp32_norms", 0);
        for (int l = 0; l < L; l++) {
            float a = l == 2 ? 40.0f * exp2f((float)s / 100) : 20.0f;
            m.layer[l].act_max = a;
            m.layer[l].headroom = log2f(256 / a);
        }
        if (!crossed && m.layer[2].act_max > 256)
            crossed = s;
        if (feed(&m) && !warned && first(DIAG_R_HEADROOM))
            warned = s;
    }
    const diag_finding *f = first(DIAG_R_HEADROOM);
    CHECK(count(DIAG_R_HEADROOM) >= 2);
    CHECK(f && f->layer == 2 && f->kind == DIAG_WARNING);
    CHECK(crossed > 0 && warned > 0 && crossed - warned >= 20);
    /* each predicted range (value[2] .. value[3]) within 10 steps of the
     * true crossing; each warning with at most half the steps left */
    double left = 1e9;
    for (int i = 0; i < n_found; i++) {
        if (found[i].rule != DIAG_R_HEADROOM)
            continue;
        CHECK(found[i].value[2] <= found[i].value[3]);
        CHECK(found[i].value[2] - 10 <= crossed && crossed <= found[i].value[3] + 10);
        CHECK(found[i].value[3] - found[i].step <= DIAG_REWARN * left + 1);
        left = found[i].value[3] - found[i].step;
    }
    CHECK(f && strstr(f->text, "layer 2") && strstr(f->text, "256") && strstr(f->text, "between"));

    /* low but steady: not falling, no warning */
    reset();
    for (long s = 1; s <= 300; s++) {
        healthy(&m, s);
        for (int l = 0; l < L; l++) {
            m.layer[l].act_max = 200 + (float)(s % 3);
            m.layer[l].headroom = log2f(256 / m.layer[l].act_max);
        }
        feed(&m);
    }
    CHECK(count(DIAG_R_HEADROOM) == 0);
}

/* fp16, norms in fp16, no warmup: the final norm's variance overflows at
 * step 141 after the top layer grew; three causes are named. */
static void test_norm_variance_divergence(void)
{
    reset();
    step_metrics m;
    for (long s = 1; s <= 141; s++) {
        healthy(&m, s);
        metrics_set_setting(&m, "precision", FMT_FP16);
        metrics_set_setting(&m, "fp32_norms", 0);
        metrics_set_setting(&m, "warmup", 0);
        m.lr = m.lr_peak = 2e-2f;
        m.loss_scale = 32768;
        m.loss_scale_dynamic = 1;
        for (int l = 0; l < L; l++) {
            m.layer[l].act_max = (float)(l + 1) * 4 * expf((float)s / 100);
            m.layer[l].headroom = log2f(256 / m.layer[l].act_max);
        }
        if (s == 141) {
            m.nonfinite = 1;
            m.loss = NAN;
            m.layer[L - 1].act_max = 262;
            strcpy(m.fault, "forward, final norm variance");
        }
        feed(&m);
    }
    const diag_finding *nv = first(DIAG_R_NORM_VAR), *gr = first(DIAG_R_GROWTH),
                       *lr = first(DIAG_R_LR);
    CHECK(nv && nv->kind == DIAG_DIAGNOSIS && strstr(nv->text, "262") &&
          strstr(nv->text, "layer 7") && strstr(nv->text, "256"));
    CHECK(nv && strstr(nv->hint, "fp32-norms") && strstr(nv->hint, "growth"));
    CHECK(gr && gr->layer == L - 1 && gr->value[2] > 1.0 && gr->value[2] < 2.0);
    /* past the ramp's length warmup is not the cause (it only delays this) */
    CHECK(lr == NULL);
    CHECK(dg->last_diagnosis.rule == DIAG_R_NORM_VAR);
    CHECK(nv && !strcmp(nv->fix, "fp32-norms on") && nv->fix_from == DIAG_FROM_SNAPSHOT);
    /* --on-diverge continue: later non-finite steps say nothing new */
    int before = n_found;
    m.step = 142;
    feed(&m);
    CHECK(n_found == before);
    /* a setting changed while diverged, resumed without a rewind: no news */
    m.step = 143;
    m.lr = m.lr_peak = 1e-3f;
    feed(&m);
    CHECK(n_found == before);

    /* every act max NaN (the overflow spread): "nan", never "-nan" */
    reset();
    healthy(&m, 1);
    metrics_set_setting(&m, "precision", FMT_FP16);
    m.nonfinite = 1;
    strcpy(m.fault, "forward, layer 2, MLP norm variance");
    for (int l = 0; l < L; l++)
        m.layer[l].act_max = -NAN;
    feed(&m);
    nv = first(DIAG_R_NORM_VAR);
    CHECK(nv && nv->layer == 2 && strstr(nv->text, "act max nan") && !strstr(nv->text, "-nan"));

    /* an fp32 divergence with nothing growing and warmup on: none of them */
    reset();
    for (long s = 1; s <= 141; s++) {
        healthy(&m, s);
        if (s == 141) {
            m.nonfinite = 1;
            strcpy(m.fault, "forward, layer 1, MLP residual");
        }
        feed(&m);
    }
    CHECK(n_found == 0);
}

/* The dynamic scale halving every 4 steps: one warning when it has fallen
 * 8x within the window; a single halving says nothing. */
static void test_scale_collapse(void)
{
    reset();
    step_metrics m;
    for (long s = 1; s <= 60; s++) {
        healthy(&m, s);
        metrics_set_setting(&m, "precision", FMT_FP16);
        m.loss_scale_dynamic = 1;
        m.loss_scale = 65536.0f / exp2f((float)(s / 4));
        m.skipped = s % 4 == 0;
        feed(&m);
    }
    const diag_finding *f = first(DIAG_R_SCALE);
    CHECK(count(DIAG_R_SCALE) == 1);
    CHECK(f && f->kind == DIAG_WARNING && f->value[0] == 65536 && f->value[1] <= 8192);
    CHECK(f && f->step <= 16);

    reset();
    for (long s = 1; s <= 60; s++) {
        healthy(&m, s);
        metrics_set_setting(&m, "precision", FMT_FP16);
        m.loss_scale_dynamic = 1;
        m.loss_scale = s < 10 ? 65536 : 32768;
        feed(&m);
    }
    CHECK(count(DIAG_R_SCALE) == 0);
}

/* LR raised 10x at step 100, divergence at 150: named with the old LR. The
 * same raise 600 steps before a divergence is not blamed. */
static void test_lr_raise(void)
{
    for (int far = 0; far < 2; far++) {
        reset();
        step_metrics m;
        long div = far ? 700 : 150;
        for (long s = 1; s <= div; s++) {
            healthy(&m, s);
            if (s > 100)
                m.lr = m.lr_peak = 1e-2f;
            if (s == div) {
                m.nonfinite = 1;
                strcpy(m.fault, "forward, layer 3, MLP residual");
            }
            feed(&m);
        }
        const diag_finding *f = first(DIAG_R_LR);
        if (!far) {
            CHECK(f && strstr(f->text, "0.001 -> 0.01") && strstr(f->text, "step 100"));
            CHECK(f && strstr(f->hint, "lr 0.001"));
            /* the fix goes back to before the raise */
            CHECK(f && !strcmp(f->fix, "lr 0.001") && f->fix_from == DIAG_FROM_SNAPSHOT &&
                  f->fix_before == 100);
            CHECK(dg->last_diagnosis.rule == DIAG_R_LR);
        } else {
            CHECK(f == NULL);
        }
    }
}

/* Raised twice in a row: the LR the run trained at for a while is the one
 * named, not the short-lived step between. */
static void test_lr_tolerated(void)
{
    reset();
    step_metrics m;
    for (long s = 1; s <= 120; s++) {
        healthy(&m, s);
        if (s > 100)
            m.lr = m.lr_peak = 2e-3f;
        if (s > 105)
            m.lr = m.lr_peak = 1e-2f;
        m.nonfinite = s == 120;
        feed(&m);
    }
    const diag_finding *f = first(DIAG_R_LR);
    CHECK(f && strstr(f->text, "0.001 -> 0.01 at step 105") && strstr(f->hint, "lr 0.001,"));
}

/* Post-LN on the plateau with the bottom layers' gradient 1e-8 of the
 * top's: STALLED, one diagnosis suggesting Pre-LN first. Gradients alive:
 * a stall only after DIAG_STALL_LONG steps, its cause from the numbers,
 * and only when the loss is flat there: one falling 0.15 nats per 100
 * steps through the plateau is learning (gamma-init 8 falls over 0.05), one
 * falling 0.015 is not. */
static void test_stall(void)
{
    for (int variant = 0; variant < 5; variant++) {
        reset();
        step_metrics m;
        long stalled_at = 0;
        for (long s = 1; s <= 200; s++) {
            healthy(&m, s);
            metrics_set_setting(&m, "norm", NORM_POST);
            m.loss = (float)(PLATEAU + 0.05 * sin((double)s)); /* noisy, on the plateau */
            if (variant == 2)
                m.loss = 2.4f; /* learning: not on the plateau */
            if (variant >= 3) /* descending through it, fast or slowly */
                m.loss += (float)(variant == 3 ? 0.3 - 0.0015 * s : 0.15 - 0.00015 * s);
            for (int l = 0; l < L; l++) {
                float g = variant == 1 || variant >= 3 ? 0.1f : 0.2f * powf(1e-3f, (float)(L - 1 - l));
                m.layer[l].grad_attn = m.layer[l].grad_ffn = m.layer[l].grad_ln = g;
            }
            feed(&m);
            if (!stalled_at && diag_stalled(dg))
                stalled_at = s;
        }
        const diag_finding *f = first(DIAG_R_STALL);
        if (variant == 0) {
            /* then it learns off the plateau: after a window below it the
             * stall is over, and nothing else keeps the episode open */
            CHECK(diag_episode_open(dg));
            char over[DIAG_TEXT] = "";
            long over_at = 0;
            int overs = 0;
            for (long s = 201; s <= 200 + DIAG_STALL_STEPS + 10; s++) {
                healthy(&m, s);
                metrics_set_setting(&m, "norm", NORM_POST); /* the same settings: no new episode */
                m.loss = (float)(PLATEAU - 0.5);
                feed(&m);
                if (diag_stall_over(dg, over, sizeof over))
                    over_at = s, overs++;
            }
            CHECK(!diag_stalled(dg) && !diag_episode_open(dg));
            /* the log says so once, at the step the window's mean passed
             * 0.15 below the plateau, naming the stall's step (the mean
             * then: the window's 48 steps, so many of them at -0.5 that it
             * is 0.15 or more below) */
            char want[128];
            snprintf(want, sizeof want, "the stall diagnosed at step %ld is over", stalled_at);
            CHECK(overs == 1 && over_at > 200 && over_at <= 200 + DIAG_STALL_STEPS);
            CHECK(strstr(over, want) != NULL && strstr(over, "off the plateau at step ") == over);
            CHECK(stalled_at == DIAG_STALL_STEPS);
            CHECK(count(DIAG_R_STALL) == 1);
            CHECK(f && f->kind == DIAG_DIAGNOSIS && strstr(f->text, "3.080") &&
                  strstr(f->hint, "Pre-LN first") && strstr(f->hint, "warmup"));
            CHECK(f && f->value[3] < DIAG_STALL_GRAD);
            CHECK(f && !strcmp(f->fix, "norm pre") && f->fix_from == DIAG_FROM_START);
        } else if (variant == 1 || variant == 4) { /* gradients alive: the plateau held long */
            CHECK(stalled_at == DIAG_STALL_LONG - 1);
            CHECK(f && strstr(f->text, "cause unknown") && !f->fix[0]);
        } else {
            CHECK(stalled_at == 0 && f == NULL); /* below the plateau, or learning through it */
        }
    }
    /* Pre-LN on the plateau with act max grown to 5000 (the LR's), or with
     * an update ratio of 1e-6 (an LR too low); the same clipped at 1e-7 on
     * every step (the clip's), or on every other step only (the LR's
     * still): each cause and its fix */
    for (int variant = 0; variant < 4; variant++) {
        reset();
        step_metrics m;
        for (long s = 1; s <= 260; s++) {
            healthy(&m, s);
            m.loss = (float)(PLATEAU + 0.3 + 0.05 * sin((double)s)); /* 0.3 above */
            m.grad_norm = 2.0f;
            metrics_set_setting(&m, "clip", variant >= 2 ? 1e-7f : 0.0f);
            if (variant == 3 && s % 2)
                m.grad_norm = 1e-8f; /* under the clip */
            for (int l = 0; l < L; l++) {
                if (variant == 0) {
                    m.layer[l].act_max = 5000.0f * exp2f((float)s / 100);
                    m.layer[l].update_ratio = 8e-3f;
                } else
                    m.layer[l].update_ratio = 1e-6f;
            }
            feed(&m);
        }
        const diag_finding *f = first(DIAG_R_STALL);
        CHECK(count(DIAG_R_STALL) == 1);
        if (variant == 0)
            CHECK(f && strstr(f->text, "the LR 0.001: act max") && strstr(f->text, "+1.00") &&
                  !strcmp(f->fix, "lr x0.1") && f->fix_from == DIAG_FROM_START); /* 8e-4 */
        else if (variant == 2)
            CHECK(f && strstr(f->text, "the clip 1e-07: 48 of 48 steps clipped, the gradient "
                                       "norm 2 (mean) cut to 5e-08 of it; update ratio 1e-06") &&
                  strstr(f->hint, "clip 0") && !strcmp(f->fix, "clip 0") &&
                  f->fix_from == DIAG_FROM_HERE);
        else
            CHECK(f && strstr(f->text, "too low: update ratio 1e-06") &&
                  !strcmp(f->fix, "lr x10"));
    }
    /* on the plateau, the update ratio in range (Adam's step does not see
     * the gradient's size), every step clipped at 1e-3 from a norm of 4:
     * cut 4000x, the clip is named, not "cause unknown"; at a clip of 1
     * (cut 4x) the cause stays unknown */
    for (int cut = 0; cut < 2; cut++) {
        reset();
        step_metrics m;
        for (long s = 1; s <= 260; s++) {
            healthy(&m, s);
            m.loss = (float)(PLATEAU + 0.3 + 0.05 * sin((double)s));
            m.grad_norm = 4.0f;
            metrics_set_setting(&m, "clip", cut ? 1e-3f : 1.0f);
            feed(&m);
        }
        const diag_finding *f = first(DIAG_R_STALL);
        CHECK(count(DIAG_R_STALL) == 1);
        if (cut)
            CHECK(f && strstr(f->text, "the clip 0.001: 48 of 48 steps clipped, the gradient norm "
                                       "4 (mean) cut 4000x") && !strcmp(f->fix, "clip 0"));
        else
            CHECK(f && strstr(f->text, "cause unknown") && !f->fix[0]);
    }
    /* every block's gradient 1e-6 of the whole model's (the embeddings'
     * and the head's alive), the LR in range: no gradient reaches the
     * blocks, not an LR too low; DyT's fix is a LayerNorm from here (the
     * bank's dyt scenario trains after it), another kind has none */
    for (int dyt = 0; dyt < 2; dyt++) {
        reset();
        step_metrics m;
        for (long s = 1; s <= 260; s++) {
            healthy(&m, s);
            metrics_set_setting(&m, "norm_kind", dyt ? NORMK_DYT : NORMK_LAYERNORM);
            m.loss = (float)(PLATEAU + 0.05 * sin((double)s));
            m.grad_norm = 0.5f;
            for (int l = 0; l < L; l++) {
                m.layer[l].grad_attn = m.layer[l].grad_ffn = m.layer[l].grad_ln = 3e-7f;
                m.layer[l].update_ratio = 1e-6f;
            }
            feed(&m);
        }
        const diag_finding *f = first(DIAG_R_STALL);
        CHECK(count(DIAG_R_STALL) == 1);
        CHECK(f && strstr(f->text, "no gradient reaches the blocks: the largest (layer ") &&
              strstr(f->text, "e-06 of the whole model's; update ratio 1e-06 a step") &&
              !strstr(f->text, "too low"));
        if (dyt)
            CHECK(f && !strcmp(f->fix, "kind layernorm") && f->fix_from == DIAG_FROM_HERE);
        else
            CHECK(f && !f->fix[0] && strstr(f->hint, "no rule names a fix"));
    }
    /* a setting change (norm pre) ends the stall and judges anew */
    reset();
    step_metrics m;
    for (long s = 1; s <= 120; s++) {
        healthy(&m, s);
        metrics_set_setting(&m, "norm", s <= 60 ? NORM_POST : NORM_PRE);
        m.loss = (float)PLATEAU;
        for (int l = 0; l < L; l++)
            m.layer[l].grad_attn = m.layer[l].grad_ffn = m.layer[l].grad_ln =
                s <= 60 && l < 2 ? 1e-9f : 0.1f;
        feed(&m);
        if (s == 60)
            CHECK(diag_stalled(dg));
    }
    CHECK(!diag_stalled(dg));
}

static void test_update_vanish(void)
{
    for (int alive = 0; alive < 2; alive++) {
        reset();
        step_metrics m;
        for (long s = 1; s <= 100; s++) {
            healthy(&m, s);
            m.layer[0].update_ratio = alive ? 5e-4f : 1e-9f;
            feed(&m);
        }
        const diag_finding *f = first(DIAG_R_UPDATE);
        if (alive) {
            CHECK(f == NULL);
        } else {
            CHECK(count(DIAG_R_UPDATE) == 1);
            CHECK(f && f->layer == 0 && strstr(f->text, "layer 0"));
        }
    }
}

/* Diverge at 100, rewind to 50, resume unchanged: it says step 100. With
 * the LR lowered before resuming, it says nothing. */
static void test_resumed(void)
{
    for (int change = 0; change < 2; change++) {
        reset();
        step_metrics m;
        for (long s = 1; s <= 100; s++) {
            healthy(&m, s);
            m.nonfinite = s == 100;
            feed(&m);
        }
        healthy(&m, 51);
        if (change)
            m.lr = m.lr_peak = 5e-4f;
        feed(&m);
        const diag_finding *f = first(DIAG_R_RESUMED);
        if (change) {
            CHECK(f == NULL);
        } else {
            CHECK(f && strstr(f->text, "step 50") && strstr(f->text, "step 100"));
        }
    }
}

/* The loss rises from 2.5 to 60, finite: exploded after DIAG_BLOWUP_STEPS
 * steps above 4x the start, once; the fix goes back before the rise. A
 * rewind ends the state. */
static void test_blowup(void)
{
    reset();
    step_metrics m;
    long at = 0;
    for (long s = 1; s <= 200; s++) {
        healthy(&m, s);
        if (s > 100) {
            m.loss = 60.0f;
            m.layer[L - 1].update_ratio = 2e-2f;
        }
        feed(&m);
        if (!at && diag_exploded(dg))
            at = s;
    }
    const diag_finding *f = first(DIAG_R_BLOWUP);
    CHECK(count(DIAG_R_BLOWUP) == 1);
    /* 32 points' mean over 10.0 (4x 2.5): the 5th step at 60 */
    CHECK(at > 100 && at <= 100 + DIAG_BLOWUP_STEPS);
    CHECK(f && f->kind == DIAG_DIAGNOSIS && strstr(f->text, "rising since step 101") &&
          strstr(f->text, "update ratio"));
    CHECK(f && !strcmp(f->fix, "lr x0.1") && f->fix_before == 100); /* ratio 2e-2 -> 2e-3 */
    CHECK(dg->last_diagnosis.rule == DIAG_R_BLOWUP);
    /* the LR halved without a rewind: still blown up, no news */
    for (long s = 201; s <= 210; s++) {
        healthy(&m, s);
        m.loss = 60.0f;
        m.lr = m.lr_peak = 5e-4f;
        feed(&m);
    }
    CHECK(count(DIAG_R_BLOWUP) == 1 && diag_exploded(dg) && diag_episode_open(dg));
    healthy(&m, 90); /* a rewind */
    feed(&m);
    CHECK(!diag_exploded(dg));

    /* healthy noise far below 4x: never */
    reset();
    for (long s = 1; s <= 200; s++) {
        healthy(&m, s);
        m.loss = 2.5f + 3.0f * (s % 7 == 0);
        feed(&m);
    }
    CHECK(count(DIAG_R_BLOWUP) == 0 && !diag_exploded(dg));
}

/* A divergence at step 60 without warmup is warmup's; with the top
 * layer's update ratio 3e-2 after a first update of 0.5 (0.577 against
 * the weights before it: 19.2 per unit LR; the 59 steps' mean 0.038,
 * 1.27 per unit LR: 0.0658 of it, the weights inflated) it is the LR's,
 * named by its numbers, and the fix brings the ratio to 3e-3 or below
 * (x0.01); so it is with 0.1 a step from the first (its share 0.995:
 * the LR simply big, the ratio above 3e-2). */
static void test_warmup_early(void)
{
    for (int high = 0; high < 4; high++) { /* 2: the first non-finite is the loss */
        reset();
        step_metrics m;
        for (long s = 1; s <= 60; s++) {
            healthy(&m, s);
            metrics_set_setting(&m, "warmup", 0);
            m.lr = m.lr_peak = 3e-2f;
            m.layer[L - 1].update_ratio = high == 1 ? (s == 1 ? 0.5f : 3e-2f)
                                          : high == 3 ? 0.1f : 1e-3f;
            m.nonfinite = s == 60;
            if (s == 60 && high == 2)
                strcpy(m.fault, "forward, loss");
            feed(&m);
        }
        const diag_finding *w = first(DIAG_R_LR), *h = first(DIAG_R_LR_HIGH);
        if (high == 2) {
            CHECK(!w && !h); /* the loss computed in the format is not warmup's */
        } else if (!high) {
            CHECK(w && strstr(w->text, "no warmup") && !strcmp(w->fix, "warmup on") && !h);
        } else if (high == 3) {
            CHECK(!w && h && !strcmp(h->fix, "lr x0.01"));
            CHECK(h && strstr(h->text, "LR 0.03 too high: the top layer's weights move 0.1 of their "
                                       "norm a step (mean of 59 steps), per unit LR 0.995 of its "
                                       "first update's 3.35 (too high: under 0.1, or a ratio "
                                       "above 0.03)"));
            CHECK(dg->last_diagnosis.rule == DIAG_R_LR_HIGH);
        } else {
            CHECK(!w);
            CHECK(h && strstr(h->text, "LR 0.03 too high: the top layer's weights move 0.038 of "
                                       "their norm a step (mean of 59 steps), per unit LR 0.0658 "
                                       "of its first update's 19.2 (too high: under 0.1, or a "
                                       "ratio above 0.03)") &&
                  !strcmp(h->fix, "lr x0.01"));
            CHECK(dg->last_diagnosis.rule == DIAG_R_LR_HIGH);
        }
    }
}

static void test_val_nan(void)
{
    reset();
    step_metrics m;
    for (long s = 1; s <= 10; s++) {
        healthy(&m, s);
        m.has_val = s >= 5;
        /* NaN, then finite at step 7, then NaN again: one warning */
        m.val_loss = s >= 5 && s != 7 ? NAN : 2.0f;
        feed(&m);
    }
    const diag_finding *f = first(DIAG_R_VAL_NAN);
    CHECK(count(DIAG_R_VAL_NAN) == 1);
    CHECK(f && f->step == 5 && strstr(f->text, "nan") && !strstr(f->text, "-nan"));
}

static void test_entropy(void)
{
    uint8_t b[512];
    for (int i = 0; i < 512; i++)
        b[i] = (uint8_t)i;
    CHECK(t_close(diag_unigram_entropy(b, 512), log(256.0), 1e-12, 0));
    memset(b, 'a', sizeof b);
    CHECK(diag_unigram_entropy(b, 512) == 0);
    /* sampled past 4 MiB: a periodic 8 MiB buffer still gives log(256) */
    size_t big = (size_t)8 << 20;
    uint8_t *p = malloc(big);
    if (p) {
        for (size_t i = 0; i < big; i++)
            p[i] = (uint8_t)i;
        CHECK(t_close(diag_unigram_entropy(p, big), log(256.0), 1e-9, 0));
        free(p);
    }
    CHECK(strcmp(diag_rule_name(DIAG_R_STALL), "stall") == 0);
}

/* The LR raised at step 70, a divergence at 100, a rewind to 50 with the
 * raised LR still in force: the replay is another run (the raise acts from
 * 51 now), so no step is claimed. That replay diverging at 90 and rewound
 * to 50 again is replayed exactly: then step 90 is claimed. */
static void test_resumed_after_a_change(void)
{
    reset();
    step_metrics m;
    for (long s = 1; s <= 100; s++) {
        healthy(&m, s);
        if (s > 70)
            m.lr = m.lr_peak = 4e-3f;
        m.nonfinite = s == 100;
        feed(&m);
    }
    for (long s = 51; s <= 90; s++) {
        healthy(&m, s);
        m.lr = m.lr_peak = 4e-3f;
        m.nonfinite = s == 90;
        feed(&m);
        const diag_finding *f = first(DIAG_R_RESUMED);
        if (s == 51) {
            CHECK(f && strstr(f->text, "from step 50") && strstr(f->text, "step 70") &&
                  strstr(f->text, "may diverge again") && !strstr(f->text, "step 100"));
            CHECK(f && f->value[1] == -1);
        }
    }
    healthy(&m, 51);
    m.lr = m.lr_peak = 4e-3f;
    n_found = 0; /* the second rewind's findings only */
    feed(&m);
    const diag_finding *f = first(DIAG_R_RESUMED);
    CHECK(f && strstr(f->text, "will diverge again at step 90") && f->value[1] == 90);
}

/* A rewind target's closeness to the limit: its least headroom and layer;
 * an earlier snapshot offered only when it is near and the earlier has
 * more room; unknown metrics said as unknown. */
static void test_snapshot_text(void)
{
    step_metrics a, b;
    char buf[200];
    healthy(&a, 150);
    healthy(&b, 100);
    for (int l = 0; l < L; l++)
        a.layer[l].headroom = 5.0f, b.layer[l].headroom = 6.0f;
    a.layer[2].headroom = 0.17f;
    CHECK(diag_snapshot_text(150, &a, 100, &b, "b twice", buf, sizeof buf) == 1);
    CHECK(!strcmp(buf, "step 150, headroom 0.17 (layer 2); step 100 had 6 (b twice)"));
    b.layer[1].headroom = 0.1f; /* less room than the newest: not offered */
    CHECK(diag_snapshot_text(150, &a, 100, &b, "b twice", buf, sizeof buf) == 0);
    CHECK(!strcmp(buf, "step 150, headroom 0.17 (layer 2)"));
    a.layer[2].headroom = 3.0f; /* clear of the limit: nothing offered */
    b.layer[1].headroom = 6.0f;
    CHECK(diag_snapshot_text(150, &a, 100, &b, "b twice", buf, sizeof buf) == 0);
    CHECK(!strcmp(buf, "step 150, headroom 3 (layer 2)"));
    CHECK(diag_snapshot_text(150, NULL, 100, &b, "b twice", buf, sizeof buf) == 0);
    CHECK(!strcmp(buf, "step 150 (its headroom is not known)"));
    a.layer[2].headroom = 0.5f;
    CHECK(diag_snapshot_text(150, &a, 100, NULL, "b twice", buf, sizeof buf) == 1);
    CHECK(!strcmp(buf, "step 150, headroom 0.5 (layer 2); step 100 is earlier (b twice)"));
}

/* fp16 with the loss in fp16: the first non-finite value is the loss;
 * named first (before the LR's ratio), with fp16's least value and the
 * mean loss before; fp32 norms on is its fix. In fp32 norms, no. */
static void test_loss_overflow(void)
{
    for (int on = 0; on < 2; on++) {
        reset();
        step_metrics m;
        for (long s = 1; s <= 40; s++) {
            healthy(&m, s);
            metrics_set_setting(&m, "precision", FMT_FP16);
            metrics_set_setting(&m, "fp32_norms", on);
            m.loss = 3.5f;
            metrics_set_setting(&m, "warmup", 0);
            /* the LR's too: 43 per unit LR after 2065 at the first update */
            m.layer[L - 1].update_ratio = s == 1 ? 0.9f : 2e-2f;
            if (s == 40) {
                m.nonfinite = 1;
                m.loss = INFINITY;
                strcpy(m.fault, "forward, loss");
            }
            feed(&m);
        }
        const diag_finding *f = first(DIAG_R_LOSS);
        if (on) {
            CHECK(f == NULL);
            continue;
        }
        CHECK(f && dg->last_diagnosis.rule == DIAG_R_LOSS && f->kind == DIAG_DIAGNOSIS);
        CHECK(f && strstr(f->text, "forward, loss is inf in fp16: a token's probability rounded "
                                   "to 0 (the least fp16 holds is 5.96e-08: a loss of 16.6 "
                                   "nats); mean loss 3.500 over the 39 steps before"));
        CHECK(f && f->value[2] == ldexp(1.0, -24) && fabs(f->value[1] - 24 * log(2.0)) < 1e-9);
        CHECK(f && !strcmp(f->fix, "fp32-norms on") && f->fix_from == DIAG_FROM_SNAPSHOT);
        CHECK(first(DIAG_R_LR_HIGH) != NULL && first(DIAG_R_LR) == NULL);
        CHECK(f && strstr(f->hint, "in fp32") && strstr(f->hint, "the LR is high too"));
    }
}

/* The dynamic scale halving on every step, each skipped, from 65536 to 1,
 * then the gradients overflow at 1 (the scaler gives up): the scale is the
 * cause, named first, not the warmup (no step changed the weights); bf16
 * is its fix. The same at scale 2 (a divergence from the forward) is not
 * the scaler's giving up. */
static void test_scale_gave_up(void)
{
    for (int variant = 0; variant < 2; variant++) {
        reset();
        step_metrics m;
        for (long s = 1; s <= 17; s++) {
            healthy(&m, s);
            metrics_set_setting(&m, "precision", FMT_FP16);
            metrics_set_setting(&m, "warmup", 0);
            m.loss = 5.5f;
            m.loss_scale_dynamic = 1;
            m.loss_scale = 65536.0f / exp2f((float)(s - 1));
            m.skipped = s < 17;
            if (s == 17) {
                m.nonfinite = 1;
                m.grad_norm = NAN;
                strcpy(m.fault, variant ? "forward, layer 1, attn proj" :
                                          "backward, layer 3, attn out norm");
                if (variant)
                    m.loss = NAN;
            }
            feed(&m);
        }
        CHECK(first(DIAG_R_LR) == NULL); /* warmup: the LR never acted */
        const diag_finding *d = NULL;
        for (int i = 0; i < n_found; i++)
            if (found[i].rule == DIAG_R_SCALE && found[i].kind == DIAG_DIAGNOSIS)
                d = &found[i];
        if (variant) {
            CHECK(d && d->value[3] == 0 && !strstr(d->text, "at 1"));
            continue;
        }
        CHECK(d && dg->last_diagnosis.rule == DIAG_R_SCALE && d->value[3] == 1);
        CHECK(d && strstr(d->text, "loss scale collapsed 65536 -> 1 (65536x) within 16 steps "
                                   "(since step "));
        CHECK(d && strstr(d->text, "), and at 1 the backward, layer 3, attn out norm still "
                                   "overflowed: gradients at their true size pass fp16's max "
                                   "65504"));
        CHECK(d && strstr(d->hint, "bf16") && !strcmp(d->fix, "precision bf16"));
    }
}

/* ---- the checks behind a verdict, and the rules they brought --------------- */

/* The check q of the diagnosis now. */
static diag_check check_of(int q)
{
    diag_check c[DIAG_CHECKS];
    CHECK(diag_checks(dg, c, DIAG_CHECKS) == DIAG_CHECKS);
    return c[q];
}

/* A run from ln 256 falling to `to` with rate k a step (loss = to +
 * (5.6 - to) e^{-k s}), validated every 50 steps at the training loss. */
static void learning_step(step_metrics *m, long s, double to, double k)
{
    healthy(m, s);
    m->loss = (float)(to + (5.6 - to) * exp(-k * (double)s));
    m->data_entropy = (float)PLATEAU;
    m->has_val = s % 50 == 0;
    m->val_loss = m->loss + 0.02f;
}

/* "Healthy" is said only once every check is answered: not at step 10
 * (too few steps, no validation), and at step 400 of a healthy run; each
 * check's text has its numbers. */
static void test_checks_healthy(void)
{
    reset();
    step_metrics m;
    for (long s = 1; s <= 400; s++) {
        learning_step(&m, s, 2.0, 0.02);
        feed(&m);
        if (s == 10) {
            CHECK(!diag_healthy(dg));
            CHECK(check_of(DIAG_C_VAL).answer == DIAG_Q_UNKNOWN &&
                  strstr(check_of(DIAG_C_VAL).text, "not yet known: no finite validation"));
            CHECK(check_of(DIAG_C_LR).answer == DIAG_Q_UNKNOWN);
            CHECK(check_of(DIAG_C_START).answer == DIAG_Q_OK &&
                  strstr(check_of(DIAG_C_START).text, "ln 256 = 5.545"));
        }
    }
    CHECK(n_found == 0);
    CHECK(diag_healthy(dg));
    diag_check c[DIAG_CHECKS];
    diag_checks(dg, c, DIAG_CHECKS);
    for (int i = 0; i < DIAG_CHECKS; i++)
        CHECK(c[i].answer == DIAG_Q_OK && c[i].question && c[i].text[0]);
    CHECK(strstr(c[DIAG_C_LEARNING].text, "from 5.529 at step 1"));
    CHECK(strstr(c[DIAG_C_VAL].text, "at step 400"));
    /* a divergence makes it not healthy */
    m.step = 401;
    m.nonfinite = 1;
    m.loss = NAN;
    feed(&m);
    CHECK(!diag_healthy(dg) && check_of(DIAG_C_FINITE).answer == DIAG_Q_BAD);
    /* a followed run goes on writing non-finite steps: the check names the
     * episode's first, 401, not the latest */
    snprintf(m.fault, sizeof m.fault, "h.2.mlp, forward");
    for (long s = 402; s <= 417; s++) {
        m.step = s;
        feed(&m);
    }
    CHECK(strstr(check_of(DIAG_C_FINITE).text, "not finite since step 401") != NULL);
}

/* The state through bytes (diagnose_state.c): a run saved at step 200 and
 * loaded goes on to say, step by step, what the run that did not stop
 * says; a divergence it carries warns a resume that repeats it; a
 * truncated or corrupted state is refused or loads into a state the rules
 * can read (the sanitizers watch), never read past. */
static void same_checks(const diag *a, const diag *b)
{
    diag_check ca[DIAG_CHECKS], cb[DIAG_CHECKS];
    diag_checks(a, ca, DIAG_CHECKS);
    diag_checks(b, cb, DIAG_CHECKS);
    for (int i = 0; i < DIAG_CHECKS; i++)
        CHECK(ca[i].answer == cb[i].answer && !strcmp(ca[i].text, cb[i].text));
}

static void test_state_bytes(void)
{
    reset();
    diag *b = malloc(sizeof *b);
    step_metrics m;
    uint8_t *p = NULL;
    size_t n = 0;
    char why[160];
    for (long s = 1; s <= 200; s++) {
        learning_step(&m, s, 2.0, 0.02);
        m.layer[L - 1].act_max = 10 + (float)s; /* a column that moves */
        feed(&m);
    }
    CHECK(diag_state_save(dg, &p, &n) == 0 && n > 1000);
    diag_init(b, NAN);
    CHECK(diag_state_load(b, p, n, why, sizeof why) == 0);
    int differ = 0;
    for (long s = 201; s <= 400; s++) {
        diag_finding fa[DIAG_MAX_FINDINGS], fb[DIAG_MAX_FINDINGS];
        learning_step(&m, s, 2.0, 0.02);
        m.layer[L - 1].act_max = 10 + (float)s;
        int ka = diag_observe(dg, &m, fa, DIAG_MAX_FINDINGS);
        int kb = diag_observe(b, &m, fb, DIAG_MAX_FINDINGS);
        differ += ka != kb;
        for (int i = 0; i < ka && i < kb; i++)
            differ += strcmp(fa[i].text, fb[i].text) != 0;
    }
    CHECK(differ == 0);
    same_checks(dg, b);
    CHECK(strstr(check_of(DIAG_C_LEARNING).text, "at step 1:") != NULL);
    /* every prefix is refused, with why; so is a byte too many */
    int refused = 0, tried = 0;
    for (size_t cut = 0; cut < n; cut += 1 + n / 300, tried++)
        refused += diag_state_load(b, p, cut, why, sizeof why) != 0 && why[0];
    CHECK(refused == tried);
    uint8_t *q = malloc(n + 1);
    memcpy(q, p, n);
    q[n] = 0;
    CHECK(diag_state_load(b, q, n + 1, why, sizeof why) != 0);
    /* a byte changed anywhere: refused, or a state the rules go on with */
    for (size_t at = 0; at < n; at += 1 + n / 200) {
        memcpy(q, p, n);
        q[at] ^= 0xa5;
        if (diag_state_load(b, q, n, why, sizeof why) == 0) {
            diag_finding f[DIAG_MAX_FINDINGS];
            learning_step(&m, 401, 2.0, 0.02);
            diag_observe(b, &m, f, DIAG_MAX_FINDINGS);
            diag_check c[DIAG_CHECKS];
            diag_checks(b, c, DIAG_CHECKS);
        }
    }
    free(q);
    free(p);
    /* a run that diverged at step 260, saved, resumed from step 150 with
     * the same settings: it will diverge again at 260 */
    reset();
    for (long s = 1; s <= 260; s++) {
        learning_step(&m, s, 2.0, 0.02);
        if (s == 260)
            m.nonfinite = 1, m.loss = NAN;
        feed(&m);
    }
    CHECK(diag_state_save(dg, &p, &n) == 0);
    diag_init(b, NAN);
    CHECK(diag_state_load(b, p, n, why, sizeof why) == 0);
    diag_finding f[DIAG_MAX_FINDINGS];
    learning_step(&m, 151, 2.0, 0.02);
    int k = diag_observe(b, &m, f, DIAG_MAX_FINDINGS), warned = 0;
    for (int i = 0; i < k; i++)
        warned += f[i].rule == DIAG_R_RESUMED && strstr(f[i].text, "diverge again at step 260");
    CHECK(warned == 1);
    free(p);
    /* a run resumed without the state says from where it knows nothing */
    reset();
    diag_state_unknown(dg, 200);
    learning_step(&m, 201, 2.0, 0.02);
    feed(&m);
    CHECK(check_of(DIAG_C_START).answer == DIAG_Q_UNKNOWN &&
          strstr(check_of(DIAG_C_START).text, "resumed after step 200"));
    CHECK(strstr(check_of(DIAG_C_LEARNING).text, "at step 1") == NULL);
    free(b);
}

/* A stream that says the update ratio on every 10th step only (the
 * probe's update_every=10): the LR check is answered from those points,
 * saying how many, as soon as the window spans DIAG_WINDOW/2 steps; and a
 * too-high LR on such a stream is named as in the lab. */
static void test_sparse_update_ratio(void)
{
    reset();
    step_metrics m;
    for (long s = 1; s <= 200; s++) {
        learning_step(&m, s, 2.0, 0.02);
        for (int l = 0; l < L; l++)
            m.layer[l].update_ratio = s % 10 ? NAN : 1e-3f;
        feed(&m);
        if (s == 20)
            CHECK(check_of(DIAG_C_LR).answer == DIAG_Q_UNKNOWN);
    }
    diag_check c = check_of(DIAG_C_LR);
    CHECK(c.answer == DIAG_Q_OK && strstr(c.text, "over 7 points"));
    /* too high: 1e-2 a step on the points said, act max grown 100x; the
     * first update's ratio is not said (the model's unit per LR), so the
     * ratio is judged alone, and the line says so */
    reset();
    for (long s = 1; s <= 200; s++) {
        learning_step(&m, s, 2.0, 0.02);
        for (int l = 0; l < L; l++) {
            m.layer[l].update_ratio = s % 10 ? NAN : 1e-2f;
            m.layer[l].act_max = s < 20 ? 10 : 1000;
        }
        feed(&m);
    }
    c = check_of(DIAG_C_LR);
    CHECK(c.answer == DIAG_Q_BAD && strstr(c.text, "over 7 points"));
    CHECK(strstr(c.text, "update ratio 0.01 a step over 7 points, its first update's not said: "
                         "the ratio judged alone (too high: above 0.005)"));
    CHECK(count(DIAG_R_LR_WARN) == 1);
    /* fewer than DIAG_SPARSE_MIN in the window: not known, and why */
    reset();
    for (long s = 1; s <= 200; s++) {
        learning_step(&m, s, 2.0, 0.02);
        for (int l = 0; l < L; l++)
            m.layer[l].update_ratio = s % 25 ? NAN : 1e-3f;
        feed(&m);
    }
    c = check_of(DIAG_C_LR);
    CHECK(c.answer == DIAG_Q_UNKNOWN && strstr(c.text, "on 3 of the last 64 steps"));
}

/* LR 1e-6: the loss 5.47 after 700 steps from 5.6 (ln 256 5.55), update
 * ratio 4.6e-6: not learning, the LR too low, lr x10; a run falling
 * slowly at LR 1e-5 (0.35 by step 200) learns. */
static void test_not_learning(void)
{
    reset();
    step_metrics m;
    for (long s = 1; s <= 700; s++) {
        learning_step(&m, s, 5.6, 0);
        m.loss = 5.6f - 0.13f * (float)s / 700;
        m.lr = m.lr_peak = 1e-6f;
        for (int l = 0; l < L; l++)
            m.layer[l].update_ratio = 4.6e-6f;
        feed(&m);
    }
    const diag_finding *f = first(DIAG_R_NOT_LEARNING);
    CHECK(f && f->kind == DIAG_DIAGNOSIS && f->step == DIAG_LEARN_STEPS);
    CHECK(f && strstr(f->text, "not learning: loss") && strstr(f->text, "too low") &&
          !strcmp(f->fix, "lr x10"));
    CHECK(count(DIAG_R_NOT_LEARNING) == 1 && !diag_stalled(dg));
    CHECK(check_of(DIAG_C_LEARNING).answer == DIAG_Q_BAD && !diag_healthy(dg));
    /* the control */
    reset();
    for (long s = 1; s <= 700; s++) {
        learning_step(&m, s, 5.6, 0);
        m.loss = 5.6f - 1.2f * (float)s / 700; /* LR 1e-5: slow, learning */
        feed(&m);
    }
    CHECK(count(DIAG_R_NOT_LEARNING) == 0 && check_of(DIAG_C_LEARNING).answer == DIAG_Q_OK);
    /* the same fall with the top layer's update ratio at 4e-5 (LR 1e-5):
     * still 2 nats above the plateau at step 200, learning too slowly for
     * its LR, not healthy; the fix raises the LR */
    reset();
    for (long s = 1; s <= 300; s++) {
        learning_step(&m, s, 5.6, 0);
        m.loss = 5.6f - 1.2f * (float)s / 700;
        m.lr = m.lr_peak = 1e-5f;
        for (int l = 0; l < L; l++)
            m.layer[l].update_ratio = 4e-5f;
        feed(&m);
    }
    f = first(DIAG_R_NOT_LEARNING);
    CHECK(f && f->step == DIAG_LEARN_STEPS && strstr(f->text, "learning too slowly: loss") &&
          strstr(f->text, "above the plateau") && strstr(f->text, "the LR 1e-05 is too low") &&
          !strcmp(f->fix, "lr x10"));
    CHECK(check_of(DIAG_C_LEARNING).answer == DIAG_Q_BAD && !diag_healthy(dg));
    /* an LR change starts the count again: no verdict 1 step after it */
    reset();
    for (long s = 1; s <= 300; s++) {
        learning_step(&m, s, 5.6, 0);
        if (s > 150)
            m.lr_peak = 1e-2f;
        feed(&m);
        if (s == 199)
            CHECK(count(DIAG_R_NOT_LEARNING) == 0);
    }
    CHECK(count(DIAG_R_NOT_LEARNING) == 0 &&
          check_of(DIAG_C_LEARNING).answer == DIAG_Q_UNKNOWN);
}

/* An LR excursion: 1e-3, 0.3 at step 200, 1e-3 again at step 215; the
 * loss jumps from 2.6 to 8 and comes down to 3.4, above where it was:
 * named 64 steps after the last change, against the loss before the
 * first, with the snapshot to go back to and the LR to go back with; the
 * learning check does not count the fall from the spike. A change the run
 * learns on through (LR 5e-4: the loss goes on falling) is not named. */
static void test_excursion(void)
{
    for (int bad = 0; bad < 2; bad++) {
        reset();
        step_metrics m;
        for (long s = 1; s <= 400; s++) {
            learning_step(&m, s, 2.5, 0.02);
            m.loss += (float)(0.05 * sin((double)s));
            if (bad && s > 200) {
                m.lr_peak = s <= 215 ? 0.3f : 1e-3f;
                m.loss = (float)(3.4 + 4.6 * exp(-(double)(s - 200) / 15.0) + 0.05 * sin((double)s));
            } else if (s > 200) {
                m.lr_peak = 5e-4f;
            }
            feed(&m);
        }
        const diag_finding *f = first(DIAG_R_EXCURSION);
        if (bad) {
            CHECK(f && f->kind == DIAG_DIAGNOSIS && f->step == 215 + DIAG_EXC_AFTER);
            CHECK(f && strstr(f->text, "the changes at steps 200-215 (lr 0.001 -> 0.3, lr 0.3 -> "
                                       "0.001) left the run worse: loss 3.4") &&
                  !strcmp(f->fix, "lr 0.001") && f->fix_from == DIAG_FROM_SNAPSHOT &&
                  f->fix_before == 200);
            CHECK(check_of(DIAG_C_LEARNING).answer == DIAG_Q_BAD && !diag_healthy(dg));
        } else {
            CHECK(f == NULL && check_of(DIAG_C_LEARNING).answer != DIAG_Q_BAD);
        }
    }
}

/* fp16 at a loss scale of 1e-6: every gradient underflows to 0 (the
 * gradient norm 0, values rounded to 0 counted): the cause is the
 * underflow and its fix the loss scale, not an LR too low (the update
 * ratio is 0 because nothing reached the weights), and a first update
 * with no gradient is no sane start. The same flat loss with gradients
 * and no underflow stays the LR's. */
static void test_underflow(void)
{
    for (int lost = 0; lost < 2; lost++) {
        reset();
        step_metrics m;
        for (long s = 1; s <= 300; s++) {
            learning_step(&m, s, 5.6, 0);
            m.loss = (float)(5.7 + 0.05 * sin((double)s));
            metrics_set_setting(&m, "precision", FMT_FP16);
            m.loss_scale = 1e-6f;
            m.grad_norm = lost ? 0.0f : 1.0f;
            for (int l = 0; l < L; l++) {
                m.layer[l].update_ratio = lost ? 0.0f : 1e-6f;
                m.layer[l].underflow = lost ? 3.0f : 0.0f;
            }
            feed(&m);
        }
        const diag_finding *f = first(lost ? DIAG_R_UNDERFLOW : DIAG_R_NOT_LEARNING);
        CHECK(f && f->kind == DIAG_DIAGNOSIS && f->step == DIAG_LEARN_STEPS);
        if (lost) {
            CHECK(f && strstr(f->text, "gradients lost to underflow: the gradient norm is 0 on 64 "
                                       "of 64 steps, ") && f->value[2] == 3.0 * L &&
                  strstr(f->text, "values a step rounded to 0 in fp16 at loss scale 1e-06") &&
                  !strcmp(f->fix, "loss-scale dynamic") && strstr(f->hint, "bf16"));
            CHECK(count(DIAG_R_NOT_LEARNING) == 0 && count(DIAG_R_START) == 1);
            CHECK(check_of(DIAG_C_START).answer == DIAG_Q_BAD &&
                  strstr(check_of(DIAG_C_START).text, "gradient norm is 0"));
        } else {
            CHECK(f && strstr(f->text, "too low") && count(DIAG_R_UNDERFLOW) == 0);
        }
    }
}

/* A spike: the loss at 9 on steps 150-152 of a run at 2.2, above its
 * first update's 5.53, then back: a blow-up that recovered, named once,
 * DIAG_EXC_AFTER steps after its last step above, with its peak and the
 * loss before it; the finite check says no, not "no blow-up". Left 0.5
 * higher after it: it ended worse. A run without one: neither. */
static void test_spike(void)
{
    for (int worse = 0; worse <= 2; worse++) {
        reset();
        step_metrics m;
        for (long s = 1; s <= 300; s++) {
            learning_step(&m, s, 2.0, 0.02);
            if (worse < 2 && s >= 150 && s <= 152)
                m.loss = s == 151 ? 9.5f : 9.0f;
            if (worse == 1 && s > 152)
                m.loss += 0.5f;
            feed(&m);
            if (worse < 2 && s == 151)
                CHECK(check_of(DIAG_C_FINITE).answer == DIAG_Q_BAD &&
                      !strstr(check_of(DIAG_C_FINITE).text, "no blow-up"));
        }
        const diag_finding *f = first(DIAG_R_SPIKE);
        diag_check fc = check_of(DIAG_C_FINITE);
        if (worse == 2) {
            CHECK(!f && fc.answer == DIAG_Q_OK);
            continue;
        }
        CHECK(f && f->step == 152 + DIAG_EXC_AFTER && count(DIAG_R_SPIKE) == 1);
        double before = 0; /* the 16 steps before it, as learning_step makes them */
        for (long s = 150 - DIAG_LEARN_MEAN; s < 150; s++)
            before += (float)(2.0 + 3.6 * exp(-0.02 * (double)s)) / (double)DIAG_LEARN_MEAN;
        CHECK(f && f->value[0] == 9.5f && fabs(f->value[1] - before) < 1e-4);
        CHECK(f && strstr(f->text, "loss spike at step 150, peak 9.500 at step 151, above the "
                                   "first update's 5.529"));
        CHECK(f && strstr(f->text, worse ? "ended worse: 2.5" : "back to 2.0") && !f->fix[0]);
        CHECK(count(DIAG_R_BLOWUP) == 0 && fc.answer == DIAG_Q_BAD &&
              strstr(fc.text, "at step 150: 9.500 at step 151") && strstr(fc.text, "came back") &&
              !strstr(fc.text, "no blow-up"));
    }
}

/* One validation (a long --val-every): answered against the training
 * loss at its step, saying so; a second gives the answer over both. */
static void test_val_one(void)
{
    for (int far = 0; far <= 1; far++) {
        reset();
        step_metrics m;
        for (long s = 1; s <= 150; s++) {
            learning_step(&m, s, 2.0, 0.02);
            m.has_val = s == 100 || s == 150;
            m.val_loss = m.loss + (far ? 0.5f : 0.02f);
            feed(&m);
            diag_check v = check_of(DIAG_C_VAL);
            if (s == 100)
                CHECK(v.answer == (far ? DIAG_Q_BAD : DIAG_Q_OK) &&
                      strstr(v.text, "val 2.") && strstr(v.text, "at step 100, 0.") &&
                      strstr(v.text, far ? "above train 2.568"
                                         : "below train 2.568 there (not more than 0.1 above)") &&
                      strstr(v.text, "on 1 validation"));
        }
        diag_check v = check_of(DIAG_C_VAL);
        CHECK(!strstr(v.text, "on 1 validation") && strstr(v.text, "its minimum"));
    }
}

/* A 4 KB data file: validation lowest at step 200 (2.89), then rising
 * while train falls to 0.16: overfitting, naming the minimum's step; a
 * validation that follows train (noisy, within the margin) does not. */
static void test_overfit(void)
{
    reset();
    step_metrics m;
    for (long s = 1; s <= 600; s++) {
        learning_step(&m, s, 0.1, 0.008);
        if (m.has_val)
            m.val_loss = s <= 200 ? 2.89f + 0.01f * (float)(200 - s) / 50
                                  : 2.89f + 0.3f * (float)(s - 200) / 50;
        feed(&m);
    }
    const diag_finding *f = first(DIAG_R_OVERFIT);
    CHECK(f && f->step == 200 + 50 * DIAG_OVERFIT_EVALS && f->value[2] == 200);
    CHECK(f && strstr(f->text, "its minimum 2.890 at step 200"));
    CHECK(check_of(DIAG_C_VAL).answer == DIAG_Q_BAD);
    reset();
    for (long s = 1; s <= 600; s++) {
        learning_step(&m, s, 2.0, 0.008);
        m.val_loss += (s / 50) % 2 ? 0.08f : 0; /* noise under the margin */
        feed(&m);
    }
    CHECK(count(DIAG_R_OVERFIT) == 0 && check_of(DIAG_C_VAL).answer == DIAG_Q_OK);
}

/* 12 blocks at LR 3e-2: act max from 10 to 9772, the top layer's update
 * ratio 0.015 after 0.3 at the first update (0.05 of it per unit LR),
 * all finite: the LR warning while finite, with its fix; act max grown
 * with the update per unit LR what it was at the start: the growth
 * warning only; a high update ratio with act max steady: neither. The
 * ratio alone is not the judge: 1e-2 at 0.17 of the first update's (no
 * norms at LR 1e-2, training best) is no LR warning however the act max
 * grows; 2.7e-3 at 0.01 of it (Pre-LN at LR 0.3, ending above the
 * plateau) is one, and so is 0.04 a step from the first update on. */
static void test_lr_warn(void)
{
    step_metrics m;
    static const float at1[6] = {0.3f, 1e-3f, 0.3f, 0.0588f, 0.27f, 0.04f};
    static const float later[6] = {1.5e-2f, 1e-3f, 1.5e-2f, 1e-2f, 2.7e-3f, 0.04f};
    for (int kind = 0; kind < 6; kind++) {
        reset();
        for (long s = 1; s <= 500; s++) {
            learning_step(&m, s, 2.6, 0.02);
            for (int l = 0; l < L; l++) {
                m.layer[l].act_max = kind == 2 ? 10.0f : 10.0f * exp2f((float)s / 50);
                m.layer[l].update_ratio = s == 1 ? at1[kind] : later[kind];
            }
            feed(&m);
        }
        if (kind == 0) {
            const diag_finding *f = first(DIAG_R_LR_WARN);
            CHECK(f && f->kind == DIAG_WARNING && strstr(f->text, "too high for this run") &&
                  f->fix_from == DIAG_FROM_SNAPSHOT && !strcmp(f->fix, "lr x0.1"));
            CHECK(f && f->step > 250 && f->step <= 270 && count(DIAG_R_GROWTH_WARN) == 0);
            CHECK(check_of(DIAG_C_LR).answer == DIAG_Q_BAD);
        } else if (kind == 1 || kind == 3) {
            CHECK(count(DIAG_R_LR_WARN) == 0 && count(DIAG_R_GROWTH_WARN) == 1);
            CHECK(check_of(DIAG_C_LR).answer == DIAG_Q_OK);
            CHECK(kind == 1 || strstr(check_of(DIAG_C_LR).text, "update ratio 0.01 a step over 64 "
                                      "points, per unit LR 0.17 of its first update's"));
        } else if (kind == 5) { /* 0.04 a step from the first: the LR simply big */
            const diag_finding *f = first(DIAG_R_LR_WARN);
            CHECK(f && strstr(f->text, "LR 0.001 too high for this run: the top layer's update "
                                       "ratio is 0.04 a step (mean of 64; above 0.03), act max"));
        } else if (kind == 4) {
            const diag_finding *f = first(DIAG_R_LR_WARN);
            CHECK(f && strstr(f->text, "LR 0.001 too high for this run: the top layer's update per "
                                       "unit LR is 0.00963 of its first update's 280 (mean of 64; "
                                       "under 0.1)"));
            CHECK(check_of(DIAG_C_LR).answer == DIAG_Q_BAD);
        } else {
            CHECK(count(DIAG_R_LR_WARN) + count(DIAG_R_GROWTH_WARN) == 0);
        }
    }
}

/* Attention logit growth: layer 0's largest logit grows from 2 (x2 every
 * 25 steps) while its entropy falls from 2.4 nats toward 0, and the
 * diagnosis comes once, at the first step where the logit is 100x its
 * first and past 100 with the entropy under a tenth of its first, naming
 * the layer, QK-norm its fix from here (none when QK-norm is on). Growth
 * without the collapse, a collapse with logits of 50, logits from 0.01 to
 * 20 (a small init's), and a stream that does not say the columns: none. */
static void attn_run(int kind, long steps)
{
    step_metrics m;
    reset();
    for (long s = 1; s <= steps; s++) {
        learning_step(&m, s, 2.6, 0.02);
        if (kind == 4)
            metrics_set_setting(&m, "qk_norm", 1);
        for (int l = 0; l < L; l++) {
            layer_metrics *lm = &m.layer[l];
            double grow = exp2((double)(s - 1) / 25);
            lm->attn_logit_max = (float)(kind == 2   ? fmin(2 * grow, 50)
                                         : kind == 3 ? fmin(0.01 * grow, 20)
                                                     : 2 * grow);
            lm->attn_entropy = (float)(kind == 1 ? 2.0 : 2.4 / grow);
            if (l > 0) /* the other layers stay as they started */
                lm->attn_logit_max = 2, lm->attn_entropy = 2.4f;
            if (kind == 5)
                lm->attn_logit_max = lm->attn_entropy = NAN;
        }
        feed(&m);
    }
}
static void test_attn_logits(void)
{
    attn_run(0, 400);
    const diag_finding *f = first(DIAG_R_ATTN_LOGITS);
    /* 2 * 2^((s-1)/25) >= 200 from step 168 (205.1); 2.4 / 2^((s-1)/25) <= 0.24 from step 85 */
    CHECK(f && count(DIAG_R_ATTN_LOGITS) == 1 && f->kind == DIAG_DIAGNOSIS && f->step == 168 &&
          f->layer == 0 && f->fix_from == DIAG_FROM_HERE && !strcmp(f->fix, "qk-norm on"));
    CHECK(f && strstr(f->text, "attention logits grew 103x: layer 0's largest 205.1") &&
          strstr(f->text, "(2 at step 1)") && strstr(f->hint, "qk-norm on"));
    CHECK(!strcmp(diag_rule_name(DIAG_R_ATTN_LOGITS), "attn-logits"));
    for (int kind = 1; kind <= 5; kind++) {
        attn_run(kind, 400);
        f = first(DIAG_R_ATTN_LOGITS);
        CHECK(kind == 4 ? f && !f->fix[0] && strstr(f->hint, "lower the LR") : f == NULL);
    }
}

/* One repeated byte: the data's entropy is 0, the loss 0.0067 is the
 * optimum, the bottom gradient small: no stall. The same numbers on the
 * built-in corpus's plateau (its entropy in the metrics) are one. */
static void test_floor(void)
{
    step_metrics m;
    for (int k = 0; k < 2; k++) {
        reset();
        for (long s = 1; s <= 300; s++) {
            healthy(&m, s);
            m.data_entropy = k ? (float)PLATEAU : 0.0f;
            m.loss = (k ? (float)PLATEAU : 0.0067f) + (s < 20 ? 2.0f : 0.0f);
            metrics_set_setting(&m, "norm", NORM_POST);
            m.layer[0].grad_attn = m.layer[0].grad_ffn = m.layer[0].grad_ln = 1e-5f;
            m.layer[1].grad_attn = m.layer[1].grad_ffn = m.layer[1].grad_ln = 1e-5f;
            feed(&m);
        }
        CHECK(count(DIAG_R_STALL) == k && diag_stalled(dg) == k);
    }
}

/* Step 1's loss far above ln(vocab), or its gradient norm extreme: the
 * start warning; a start at ln(vocab) with norm 4: none. */
static void test_start(void)
{
    step_metrics m;
    for (int k = 0; k < 3; k++) {
        reset();
        healthy(&m, 1);
        m.loss = k == 0 ? 15.1f : 5.6f;
        m.grad_norm = k == 1 ? 5000.0f : 4.0f;
        feed(&m);
        CHECK(count(DIAG_R_START) == (k < 2));
        CHECK(check_of(DIAG_C_START).answer == (k < 2 ? DIAG_Q_BAD : DIAG_Q_OK));
    }
    CHECK(strstr(first(DIAG_R_START) ? first(DIAG_R_START)->text : "", "") != NULL);
    /* a run first seen at step 500 (a checkpoint, a stream joined late) */
    reset();
    healthy(&m, 500);
    feed(&m);
    CHECK(check_of(DIAG_C_START).answer == DIAG_Q_UNKNOWN &&
          strstr(check_of(DIAG_C_START).text, "first seen at step 500"));
}

/* A followed stream that says neither the loss nor the validation nor
 * the gradient norm, its layers' values NaN: nothing fires, nothing
 * passes; every check that needs them says "not yet known". */
static void test_unknown(void)
{
    reset();
    diag_init(dg, NAN);
    step_metrics m;
    for (long s = 1; s <= 400; s++) {
        learning_step(&m, s, 5.6, 0); /* a loss that, if read, is not learning */
        m.vocab = 0;
        m.data_entropy = NAN;
        m.unknown = 1u << METRICS_COL_LOSS | 1u << METRICS_COL_VAL | 1u << METRICS_COL_GNORM;
        for (int l = 0; l < L; l++) {
            layer_metrics *lm = &m.layer[l];
            lm->grad_attn = lm->grad_ffn = lm->grad_ln = NAN;
            lm->act_max = lm->update_ratio = lm->headroom = NAN;
        }
        feed(&m);
    }
    CHECK(n_found == 0 && !diag_healthy(dg));
    int q[] = {DIAG_C_START, DIAG_C_LEARNING, DIAG_C_VAL, DIAG_C_LR, DIAG_C_HEADROOM,
               DIAG_C_GRADIENT};
    for (size_t i = 0; i < sizeof q / sizeof q[0]; i++)
        CHECK(check_of(q[i]).answer == DIAG_Q_UNKNOWN &&
              !strncmp(check_of(q[i]).text, "not yet known: ", 15));
}

/* A setting change is a candidate cause: Pre-LN at LR 1e-2 trained to
 * 2.4 for 300 steps, then norm post, then the plateau: the change is
 * named, its fix goes back before it and undoes it; the same plateau
 * with no change names no change. A precision change that the run
 * diverges after is named with its undo. */
static void test_change_cause(void)
{
    step_metrics m;
    for (int changed = 1; changed >= 0; changed--) {
        reset();
        for (long s = 1; s <= 560; s++) {
            learning_step(&m, s, 2.4, 0.03);
            m.lr = m.lr_peak = 1e-2f;
            metrics_set_setting(&m, "norm", !changed || s > 300 ? NORM_POST : NORM_PRE);
            if (s > 300)
                m.loss = (float)PLATEAU + 0.01f * (float)(s % 3);
            feed(&m);
        }
        const diag_finding *f = first(DIAG_R_STALL);
        CHECK(f != NULL);
        if (changed)
            CHECK(f && strstr(f->text, "the change at step 300 (norm pre -> post): loss 2.4") &&
                  !strcmp(f->fix, "norm pre") && f->fix_from == DIAG_FROM_SNAPSHOT &&
                  f->fix_before == 300);
        else
            CHECK(f && !strstr(f->text, "change"));
    }
    reset();
    for (long s = 1; s <= 240; s++) {
        learning_step(&m, s, 2.4, 0.03);
        if (s > 200) {
            metrics_set_setting(&m, "precision", FMT_FP16), m.loss_scale = 1024;
            metrics_set_setting(&m, "fp32_norms", 0);
        }
        if (s == 240) {
            m.nonfinite = 1;
            m.loss = NAN;
            strcpy(m.fault, "backward, layer 2, MLP fc");
        }
        feed(&m);
    }
    const diag_finding *f = first(DIAG_R_CHANGE);
    CHECK(f && f->kind == DIAG_DIAGNOSIS &&
          strstr(f->text, "40 steps after the change at step 200 (precision fp32 -> fp16, "
                          "fp32_norms on -> off)") &&
          !strcmp(f->fix, "precision fp32; fp32-norms on") && f->fix_before == 200);
}

/* After a change to fp16, the headroom's trend is fitted on fp16 rows
 * only: fp32's 120 doublings before it are another run's, and a steady
 * 0.4 doublings after it is no fall (the fit across the change said
 * "crosses between step 308 and 308"). */
static void test_trend_restart(void)
{
    reset();
    step_metrics m;
    for (long s = 1; s <= 400; s++) {
        healthy(&m, s);
        if (s > 300) {
            metrics_set_setting(&m, "precision", FMT_FP16);
            metrics_set_setting(&m, "fp32_norms", 0);
            for (int l = 0; l < L; l++) {
                m.layer[l].act_max = 190 + (float)(s % 2);
                m.layer[l].headroom = log2f(256 / m.layer[l].act_max);
            }
        }
        feed(&m);
    }
    CHECK(count(DIAG_R_HEADROOM) == 0);
}

/* Post-LN with norm gains of 0: the gains are the cause, not the depth,
 * and warmup is not suggested. */
static void test_gains_zero(void)
{
    reset();
    step_metrics m;
    for (long s = 1; s <= 120; s++) {
        healthy(&m, s);
        metrics_set_setting(&m, "norm", NORM_POST);
        metrics_set_setting(&m, "ln_gamma_init", 0);
        m.loss = (float)PLATEAU;
        for (int l = 0; l < L - 1; l++)
            m.layer[l].grad_attn = m.layer[l].grad_ffn = m.layer[l].grad_ln = 0;
        feed(&m);
    }
    const diag_finding *f = first(DIAG_R_STALL);
    CHECK(f && strstr(f->text, "the norms' gains start at 0") && !strstr(f->hint, "warmup") &&
          !strcmp(f->fix, "norm pre"));
}

/* An initialization's transient, then a growth that slows (act max as
 * fp16-layernorm's: 7 -> 130 in 20 steps, then like log(step), crossing
 * 256 at step 400): no forecast before DIAG_TREND_MIN points, and no
 * range that ends before the true crossing: "at step X or later". */
static void test_headroom_slowing(void)
{
    reset();
    step_metrics m;
    long crossed = 0, first_at = 0;
    for (long s = 1; s <= 450; s++) {
        healthy(&m, s);
        metrics_set_setting(&m, "precision", FMT_FP16);
        metrics_set_setting(&m, "fp32_norms", 0);
        /* 7 at step 1, 130 at 20, 256 at 400: log-linear in log(step) past 20 */
        double a = s <= 20 ? 7.0 * pow(130.0 / 7.0, (double)(s - 1) / 19)
                           : 130.0 * pow(256.0 / 130.0, log((double)s / 20) / log(20.0));
        for (int l = 0; l < L; l++) {
            m.layer[l].act_max = l == L - 1 ? (float)a : 20.0f;
            m.layer[l].headroom = log2f(256 / m.layer[l].act_max);
        }
        if (!crossed && m.layer[L - 1].act_max > 256)
            crossed = s;
        if (feed(&m) && !first_at && first(DIAG_R_HEADROOM))
            first_at = s;
    }
    CHECK(crossed >= 399 && crossed <= 401);
    CHECK(first_at >= DIAG_TREND_MIN);
    for (int i = 0; i < n_found; i++) {
        const diag_finding *f = &found[i];
        if (f->rule != DIAG_R_HEADROOM)
            continue;
        /* an open range (value[3] < 0) begins at or before the crossing;
         * a closed one holds it */
        CHECK(f->value[2] <= crossed);
        CHECK(f->value[3] < 0 ? strstr(f->text, "or later") != NULL
                              : f->value[3] + 10 >= crossed);
    }
    CHECK(count(DIAG_R_HEADROOM) >= 1 && strstr(first(DIAG_R_HEADROOM)->text, "slowing"));
}

/* A run whose rows say no layers (a stream of its loss only): nothing is
 * observed, so nothing is found and nothing is called healthy, however
 * the loss goes (the rules index the top and bottom layers). */
static void test_no_layers(void)
{
    reset();
    step_metrics m;
    for (long s = 1; s <= 400; s++) {
        learning_step(&m, s, 2.0, 0.02);
        m.n_layer = 0;
        if (s > 300)
            m.loss = s > 350 ? NAN : 50.0f * (float)(s - 300);
        m.nonfinite = s > 350;
        feed(&m);
    }
    CHECK(n_found == 0);
    CHECK(!diag_healthy(dg));
    diag_check c[DIAG_CHECKS];
    CHECK(diag_checks(dg, c, DIAG_CHECKS) == DIAG_CHECKS);
    for (int i = 0; i < DIAG_CHECKS; i++)
        CHECK(c[i].answer != DIAG_Q_OK);
}

/* Every per-layer column of the table reaches the point the rules read,
 * by its index: a new column is there without a line of diagnose.c (the
 * one-row test adds one and runs this). Each column of each layer gets a
 * value of its own, k + l / 100, so a column copied from another or to
 * another layer shows. */
static void test_point_columns(void)
{
    reset();
    step_metrics m;
    healthy(&m, 1);
    for (int l = 0; l < L; l++)
        for (int k = 0; k < METRICS_LAYER_COLS; k++)
            metrics_layer_col_set(&m.layer[l], k, (float)k + (float)l / 100);
    feed(&m);
    const diag_point *p = &dg->hist[0];
    int bad = 0;
    for (int k = 0; k < METRICS_LAYER_COLS; k++)
        for (int l = 0; l < L; l++)
            if (diag_point_lc(p, k, l) != (float)k + (float)l / 100) {
                fprintf(stderr, "  the diagnosis' point has l%d_%s = %g, the step said %g\n", l,
                        metrics_layer_cols[k].name, (double)diag_point_lc(p, k, l),
                        (double)((float)k + (float)l / 100));
                bad++;
            }
    CHECK(dg->n == 1 && bad == 0);
    CHECK(METRICS_LAYER_COLS >= 10);
}

int main(void)
{
    dg = malloc(sizeof *dg);
    if (!dg)
        return 1;
    test_healthy_is_silent();
    test_headroom();
    test_norm_variance_divergence();
    test_scale_collapse();
    test_lr_raise();
    test_lr_tolerated();
    test_stall();
    test_update_vanish();
    test_resumed();
    test_resumed_after_a_change();
    test_snapshot_text();
    test_val_nan();
    test_blowup();
    test_warmup_early();
    test_loss_overflow();
    test_scale_gave_up();
    test_entropy();
    test_checks_healthy();
    test_state_bytes();
    test_sparse_update_ratio();
    test_not_learning();
    test_underflow();
    test_excursion();
    test_overfit();
    test_spike();
    test_val_one();
    test_lr_warn();
    test_floor();
    test_start();
    test_unknown();
    test_change_cause();
    test_trend_restart();
    test_gains_zero();
    test_no_layers();
    test_headroom_slowing();
    test_point_columns();
    test_attn_logits();
    /* the checks in feed ran */
    CHECK(texts_checked > 20 && fixes_checked > 8);
    free(dg);
    return test_summary();
}
