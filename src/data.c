/* data.c - loading bytes, splitting them, and cutting batches. */
#include "data.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void split(dataset *d)
{
    size_t nv = d->n / 10;
    d->n_train = d->n - nv;
}

void data_builtin(dataset *d)
{
    memset(d, 0, sizeof *d);
    d->bytes = ns_corpus;
    d->n = ns_corpus_len;
    snprintf(d->name, sizeof d->name, "built-in corpus");
    split(d);
}

int data_load_file(dataset *d, const char *path, char *err, size_t errlen)
{
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "%s", path);
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(err, errlen, "--data %s: %s", path, strerror(errno));
        return -1;
    }
    if (S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "--data %s: is a directory, not a file", path);
        return -1;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "--data %s: %s", path, strerror(errno));
        return -1;
    }
    /* read in chunks: works for FIFOs and devices whose size stat cannot tell */
    size_t cap = S_ISREG(st.st_mode) && st.st_size > 0 ? (size_t)st.st_size + 1 : 1 << 16;
    size_t n = 0;
    uint8_t *buf = malloc(cap);
    while (buf) {
        if (n == cap) {
            uint8_t *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    int rerr = ferror(f);
    fclose(f);
    if (!buf) {
        snprintf(err, errlen, "--data %s: out of memory reading the file", path);
        return -1;
    }
    if (rerr) {
        free(buf);
        snprintf(err, errlen, "--data %s: read error", path);
        return -1;
    }
    if (n == 0) {
        free(buf);
        snprintf(err, errlen, "--data %s: the file is empty", path);
        return -1;
    }
    d->owned = buf;
    d->bytes = buf;
    d->n = n;
    split(d);
    return 0;
}

void data_free(dataset *d)
{
    free(d->owned);
    memset(d, 0, sizeof *d);
}

int data_check(const dataset *d, int T, char *err, size_t errlen)
{
    /* both parts must hold one window of T + 1 bytes */
    size_t need = (size_t)(T + 1) * 10;
    if (d->n_train < (size_t)T + 1 || d->n - d->n_train < (size_t)T + 1) {
        snprintf(err, errlen,
                 "%s: %zu bytes is too short for --context %d (needs at least %zu: "
                 "10%% is held out for validation)",
                 d->name, d->n, T, need);
        return -1;
    }
    return 0;
}

void data_train_batch(const dataset *d, ns_rng *r, int B, int T, uint8_t *x, uint8_t *y)
{
    size_t span = d->n_train - (size_t)T; /* offsets 0 .. n_train - T - 1 */
    for (int b = 0; b < B; b++) {
        size_t o = (size_t)rng_below(r, span);
        memcpy(x + (size_t)b * T, d->bytes + o, (size_t)T);
        memcpy(y + (size_t)b * T, d->bytes + o + 1, (size_t)T);
    }
}

void data_val_batch(const dataset *d, int k, int nb, int B, int T, uint8_t *x, uint8_t *y)
{
    size_t lo = d->n_train, span = d->n - d->n_train - (size_t)T; /* >= 1 */
    size_t windows = (size_t)nb * B;
    for (int b = 0; b < B; b++) {
        size_t w = (size_t)k * B + b;
        size_t o = lo + (windows > 1 ? (span - 1) * w / (windows - 1) : 0);
        memcpy(x + (size_t)b * T, d->bytes + o, (size_t)T);
        memcpy(y + (size_t)b * T, d->bytes + o + 1, (size_t)T);
    }
}
