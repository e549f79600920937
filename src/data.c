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
    uint8_t *buf = NULL;
    size_t n = 0;
    int r = data_read_all(f, (size_t)-1 / 2, &buf, &n);
    fclose(f);
    if (r == -3) {
        snprintf(err, errlen, "--data %s: out of memory reading the file", path);
        return -1;
    }
    if (r != 0) {
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

int data_read_all(FILE *f, size_t max, uint8_t **out, size_t *n)
{
    /* in chunks that double: stat cannot tell a FIFO's or a device's size */
    size_t cap = 1 << 16, len = 0;
    uint8_t *p = malloc(cap);
    if (!p)
        return -3;
    for (;;) {
        if (len + 1 >= cap) {
            if (cap > max) {
                free(p);
                return -2;
            }
            uint8_t *np = realloc(p, cap * 2);
            if (!np) {
                free(p);
                return -3;
            }
            p = np;
            cap *= 2;
        }
        size_t got = fread(p + len, 1, cap - 1 - len, f);
        len += got;
        if (got == 0)
            break;
    }
    if (ferror(f)) {
        free(p);
        return -1;
    }
    if (len > max) {
        free(p);
        return -2;
    }
    p[len] = 0;
    *out = p;
    *n = len;
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
