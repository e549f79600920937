/* fuzz_sweep.c - libFuzzer harness for --sweep SPECs: parse, respell the
 * values one way (integers for seed and layers, floats for lr and eps,
 * text for the rest), then walk the grid's first runs. A refusal must
 * start "--sweep"; an accepted spec has sorted, distinct axis names,
 * non-empty values, distinct values per axis, and run indexes inside
 * every axis; respelling keeps that and a second respelling changes
 * nothing. The same input as --loss-at's steps: accepted, 1 to 16 steps
 * in range, strictly increasing, whose one spelling reads back as the
 * same steps; refused, one line starting "--loss-at" and no step. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sweep.h"

static int cmp_str(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

static void check_axes(const sweep_spec *s)
{
    if (s->n_axes < 1 || s->n_axes > SWEEP_MAX_AXES)
        abort();
    for (int i = 0; i < s->n_axes; i++) {
        const sweep_axis *a = &s->axis[i];
        if (!a->name[0] || a->n < 1 || a->n > SWEEP_MAX_VALUES)
            abort();
        if (i && strcmp(s->axis[i - 1].name, a->name) >= 0)
            abort(); /* sorted, no name twice */
        for (int k = 0; k < a->n; k++)
            if (!a->v[k][0] || strchr(a->v[k], ',') || strchr(a->v[k], ' '))
                abort();
        char **v = malloc((size_t)a->n * sizeof *v);
        memcpy(v, a->v, (size_t)a->n * sizeof *v);
        qsort(v, (size_t)a->n, sizeof *v, cmp_str);
        for (int k = 1; k < a->n; k++)
            if (!strcmp(v[k - 1], v[k]))
                abort(); /* one value twice: two runs with one ID */
        free(v);
    }
}

static sweep_kind kind_of(const char *name)
{
    if (!strcmp(name, "seed") || !strcmp(name, "layers"))
        return SWEEP_KIND_INT;
    return !strcmp(name, "lr") || !strcmp(name, "eps") ? SWEEP_KIND_F32 : SWEEP_KIND_TEXT;
}

/* Respelling is a fixed point: a second pass changes no value. */
static void check_canon_again(const sweep_spec *s)
{
    sweep_spec t = {.n_axes = s->n_axes};
    char err[256];
    for (int i = 0; i < s->n_axes; i++) {
        t.axis[i] = s->axis[i];
        t.axis[i].v = malloc((size_t)s->axis[i].n * sizeof *t.axis[i].v);
        for (int k = 0; k < s->axis[i].n; k++)
            t.axis[i].v[k] = strdup(s->axis[i].v[k]);
    }
    if (sweep_spec_canon(&t, kind_of, err, sizeof err) != 0)
        abort();
    for (int i = 0; i < s->n_axes; i++)
        for (int k = 0; k < s->axis[i].n; k++)
            if (strcmp(t.axis[i].v[k], s->axis[i].v[k]))
                abort();
    sweep_spec_free(&t);
}

static void check_loss_at(const char *text)
{
    sweep_spec s = {.n_axes = 0}, again = {.n_axes = 0};
    char err[256], spelled[SWEEP_MAX_LOSS_AT * 12], respelled[sizeof spelled];
    if (sweep_spec_loss_at_parse(text, &s, err, sizeof err) != 0) {
        if (strncmp(err, "--loss-at", 9) != 0 || strchr(err, '\n') || s.n_loss_at != 0)
            abort();
        return;
    }
    if (s.n_loss_at < 1 || s.n_loss_at > SWEEP_MAX_LOSS_AT)
        abort();
    for (int j = 0; j < s.n_loss_at; j++)
        if (s.loss_at[j] < 1 || s.loss_at[j] > SWEEP_LOSS_AT_MAX ||
            (j && s.loss_at[j] <= s.loss_at[j - 1]))
            abort();
    sweep_spec_loss_at_text(&s, spelled, sizeof spelled);
    if (sweep_spec_loss_at_parse(spelled, &again, err, sizeof err) != 0 ||
        again.n_loss_at != s.n_loss_at ||
        memcmp(again.loss_at, s.loss_at, (size_t)s.n_loss_at * sizeof *s.loss_at) != 0)
        abort();
    sweep_spec_loss_at_text(&again, respelled, sizeof respelled);
    if (strcmp(spelled, respelled) != 0)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = 0;
    check_loss_at(text);
    sweep_spec s;
    char err[256];
    int parsed = sweep_spec_parse(text, &s, err, sizeof err) == 0;
    if (parsed && sweep_spec_canon(&s, kind_of, err, sizeof err) != 0) {
        if (strncmp(err, "--sweep", 7) != 0)
            abort();
        sweep_spec_free(&s);
        parsed = 0;
        s.n_axes = 0;
    }
    if (parsed) {
        check_axes(&s);
        check_canon_again(&s);
        long n = sweep_spec_runs(&s);
        if (n == 0 || n < -1)
            abort();
        for (long k = 0; k < (n < 0 ? 100 : n < 100 ? n : 100); k++) {
            int idx[SWEEP_MAX_AXES];
            char id[13];
            sweep_spec_run_index(&s, k, idx);
            for (int i = 0; i < s.n_axes; i++)
                if (idx[i] < 0 || idx[i] >= s.axis[i].n)
                    abort();
            sweep_spec_run_id(&s, idx, id);
            if (strlen(id) != 12)
                abort();
        }
        sweep_spec_free(&s);
    } else if (strncmp(err, "--sweep", 7) != 0 || s.n_axes != 0) {
        abort(); /* every refusal names --sweep, and leaves nothing behind */
    }
    free(text);
    return 0;
}
