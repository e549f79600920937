/* fuzz_data.c - libFuzzer harness for --data files. The first two bytes
 * pick the context and batch size, the rest is the file. Whatever the
 * bytes, loading either refuses with a reason that names the file or gives
 * a dataset whose every batch lies inside it with y = x shifted by one. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char path[64];
    if (!path[0])
        snprintf(path, sizeof path, "/tmp/ns_fuzz_data.%ld", (long)getpid());
    if (size < 2)
        return 0;
    int T = 1 + data[0] % 64, B = 1 + data[1] % 8;
    FILE *f = fopen(path, "wb");
    if (!f)
        return 0;
    fwrite(data + 2, 1, size - 2, f);
    fclose(f);

    dataset d;
    char err[512] = "";
    if (data_load_file(&d, path, err, sizeof err) != 0) {
        if (!strstr(err, path))
            abort(); /* a refusal names the file */
        return 0;
    }
    if (d.n != size - 2 || memcmp(d.bytes, data + 2, d.n) != 0)
        abort(); /* the bytes are the file's, all of them */
    if (data_check(&d, T, err, sizeof err) != 0) {
        if (!strstr(err, path))
            abort();
        data_free(&d);
        return 0;
    }
    uint8_t *x = malloc((size_t)B * T), *y = malloc((size_t)B * T);
    ns_rng r;
    rng_seed(&r, size);
    data_train_batch(&d, &r, B, T, x, y);
    for (int i = 0; i + 1 < B * T; i++)
        if ((i + 1) % T && y[i] != x[i + 1])
            abort();
    for (int k = 0; k < 3; k++) {
        data_val_batch(&d, k, 3, B, T, x, y);
        for (int i = 0; i + 1 < B * T; i++)
            if ((i + 1) % T && y[i] != x[i + 1])
                abort();
    }
    free(x);
    free(y);
    data_free(&d);
    return 0;
}
