/* fuzz_checkpoint.c - libFuzzer harness for checkpoint files: whatever the
 * bytes, engine_load refuses with a reason or gives a run that can step,
 * and the diagnosis' state it carries (version 6) is refused with a reason
 * or loads into a state the rules can observe that step with.
 * Each input is tried as it is and again with its last four bytes made the
 * right checksum, so that mutated headers reach the range checks and the
 * loader behind them, not only the checksum's refusal. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "diagnose.h"
#include "engine.h"

/* The diagnosis' state the file carried, as main and the trainer read it. */
static void try_diag(const engine *e, const step_metrics *m)
{
    size_t n;
    const uint8_t *p = engine_diag_state(e, &n);
    diag *d = p ? malloc(sizeof *d) : NULL;
    char why[160] = "";
    if (!d)
        return;
    diag_init(d, NAN);
    if (diag_state_load(d, p, n, why, sizeof why) == 0) {
        diag_finding f[DIAG_MAX_FINDINGS];
        diag_check c[DIAG_CHECKS];
        diag_observe(d, m, f, DIAG_MAX_FINDINGS);
        diag_checks(d, c, DIAG_CHECKS);
    } else if (!why[0]) {
        abort(); /* a refusal always says why */
    }
    free(d);
}

static void try_load(const char *path, const dataset *d, const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return;
    fwrite(data, 1, size, f);
    fclose(f);
    ns_config c;
    char err[512] = "";
    engine *e = engine_load(path, d, &c, err, sizeof err);
    if (e) {
        step_metrics m;
        engine_step(e, &m);
        try_diag(e, &m);
        engine_free(e);
    } else if (!err[0]) {
        abort(); /* a refusal always says why */
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static dataset d;
    static char path[64];
    if (!path[0]) {
        data_builtin(&d);
        snprintf(path, sizeof path, "/tmp/ns_fuzz_ckpt.%ld", (long)getpid());
    }
    try_load(path, &d, data, size);
    if (size < 20)
        return 0;
    uint8_t *fixed = malloc(size);
    if (!fixed)
        return 0;
    memcpy(fixed, data, size);
    uint32_t crc = engine_crc32(fixed, size - 4);
    for (int i = 0; i < 4; i++)
        fixed[size - 4 + i] = (uint8_t)(crc >> (8 * i));
    try_load(path, &d, fixed, size);
    free(fixed);
    return 0;
}
