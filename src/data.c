/* data.c - loading bytes, splitting them, and cutting batches. */
#include "data.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* A regular file is mapped, not copied: a 1 GiB corpus costs only the
 * pages batches touch. Returns 0, or -1 with errno set (the caller then
 * reads it instead: some file systems cannot map). */
static int map_file(dataset *d, int fd, size_t n)
{
    void *p = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED)
        return -1;
    /* batches start at random offsets: read-ahead would be wasted */
    (void)posix_madvise(p, n, POSIX_MADV_RANDOM);
    d->bytes = p;
    d->mapped = n;
    d->n = n;
    return 0;
}

/* A FIFO, a device, or a file whose size stat cannot tell (/proc): read to
 * the end, at most max bytes. Returns 0 or -1 with the reason in err. */
static int read_stream(dataset *d, int fd, size_t max, const char *path, char *err,
                       size_t errlen)
{
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        snprintf(err, errlen, "--data %s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    uint8_t *buf = NULL;
    size_t n = 0;
    errno = 0;
    int r = data_read_all(f, max, &buf, &n);
    int e = errno;
    fclose(f);
    if (r == -2)
        snprintf(err, errlen,
                 "--data %s: more than %zu MiB from a pipe or a device, the limit for input "
                 "held in memory (save it to a regular file: those are mapped, at any size)",
                 path, max >> 20);
    else if (r == -3)
        snprintf(err, errlen, "--data %s: out of memory reading it", path);
    else if (r != 0)
        snprintf(err, errlen, "--data %s: read error: %s", path, e ? strerror(e) : "unknown");
    if (r != 0)
        return -1;
    d->owned = buf;
    d->bytes = buf;
    d->n = n;
    return 0;
}

int data_load_file(dataset *d, const char *path, char *err, size_t errlen)
{
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "%s", path);
    d->from_file = 1;
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(err, errlen, "--data %s: %s", path, strerror(errno));
        return -1;
    }
    if (S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "--data %s: is a directory, not a file", path);
        return -1;
    }
    /* a FIFO blocks here until a writer opens it, as it would for cat */
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(err, errlen, "--data %s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    int regular = S_ISREG(st.st_mode);
    if (regular && st.st_size > 0 && (uintmax_t)st.st_size <= SIZE_MAX &&
        map_file(d, fd, (size_t)st.st_size) == 0) {
        close(fd); /* the mapping stays valid */
    } else if (read_stream(d, fd, DATA_STREAM_MAX, path, err, errlen) != 0) {
        return -1;
    }
    if (d->n == 0) {
        data_free(d);
        snprintf(err, errlen, "--data %s: the file is empty", path);
        return -1;
    }
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
            if (len > max) {
                free(p);
                return -2;
            }
            /* the last step grows only to max + 2: an endless stream costs
             * about max bytes, not twice that */
            size_t ncap = cap > max / 2 ? max + 2 : cap * 2;
            uint8_t *np = realloc(p, ncap);
            if (!np) {
                free(p);
                return -3;
            }
            p = np;
            cap = ncap;
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
    if (d->mapped)
        munmap((void *)d->bytes, d->mapped);
    free(d->owned);
    memset(d, 0, sizeof *d);
}

int data_check(const dataset *d, int T, char *err, size_t errlen)
{
    /* both parts must hold one window of T + 1 bytes; the validation part
     * is the last tenth (n / 10 bytes), so n >= 10 (T + 1) */
    size_t need = (size_t)(T + 1) * 10;
    if (d->n_train < (size_t)T + 1 || d->n - d->n_train < (size_t)T + 1) {
        snprintf(err, errlen,
                 "%s%s: %zu byte%s is too short for --context %d: it needs at least %zu bytes "
                 "(%d in the training part and %d in the validation part, the last 10%%)",
                 d->from_file ? "--data " : "", d->name, d->n, d->n == 1 ? "" : "s", T, need,
                 T + 1, T + 1);
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
