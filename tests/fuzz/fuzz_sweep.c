/* fuzz_sweep.c - libFuzzer harness for --sweep SPECs: parse, then walk the
 * grid's first runs. A refusal must start "--sweep"; an accepted spec has
 * sorted, distinct axis names, non-empty values, distinct values per axis,
 * and run indexes inside every axis. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sweep.h"

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
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = 0;
    sweep_spec s;
    char err[256];
    if (sweep_spec_parse(text, &s, err, sizeof err) == 0) {
        check_axes(&s);
        long n = sweep_spec_runs(&s);
        if (n == 0 || n < -1)
            abort();
        for (long k = 0; k < (n < 0 ? 100 : n < 100 ? n : 100); k++) {
            int idx[SWEEP_MAX_AXES];
            char id[13];
            sweep_run_index(&s, k, idx);
            for (int i = 0; i < s.n_axes; i++)
                if (idx[i] < 0 || idx[i] >= s.axis[i].n)
                    abort();
            sweep_run_id(&s, idx, id);
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
