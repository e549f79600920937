/* fuzz_checkpoint.c - libFuzzer harness for checkpoint files: whatever the
 * bytes, engine_load refuses with a reason or gives a run that can step.
 * Each input is tried as it is and again with its last four bytes made the
 * right checksum, so that mutated headers reach the range checks and the
 * loader behind them, not only the checksum's refusal. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"

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
