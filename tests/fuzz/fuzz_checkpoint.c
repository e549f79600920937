/* fuzz_checkpoint.c - libFuzzer harness for checkpoint files: whatever the
 * bytes, engine_load refuses with a reason or gives a run that can step. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static dataset d;
    static char path[64];
    if (!path[0]) {
        data_builtin(&d);
        snprintf(path, sizeof path, "/tmp/ns_fuzz_ckpt.%ld", (long)getpid());
    }
    FILE *f = fopen(path, "wb");
    if (!f)
        return 0;
    fwrite(data, 1, size, f);
    fclose(f);
    ns_config c;
    char err[512] = "";
    engine *e = engine_load(path, &d, &c, err, sizeof err);
    if (e) {
        step_metrics m;
        engine_step(e, &m);
        engine_free(e);
    } else if (!err[0]) {
        abort(); /* a refusal always says why */
    }
    return 0;
}
