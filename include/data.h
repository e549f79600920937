/* data.h - the bytes a model trains on, their train/validation split, and
 * seeded batches.
 *
 * The last 10% of the bytes are held out for validation. Training batches
 * start at offsets drawn from the run's generator; validation batches are
 * fixed windows spread evenly over the held-out tail, so every validation
 * sees the same bytes.
 */
#ifndef NS_DATA_H
#define NS_DATA_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "rng.h"

typedef struct {
    const uint8_t *bytes;
    size_t n;       /* all bytes */
    size_t n_train; /* bytes [0, n_train) train, [n_train, n) validate */
    uint8_t *owned; /* non-NULL when read into memory (a pipe, a device) */
    size_t mapped;  /* length of the mapping when a regular file is mapped */
    int from_file;  /* messages name --data */
    char name[4096]; /* for messages: the path, or "built-in corpus" */
} dataset;

/* Bytes read from --data input that is not a regular file (a FIFO, a
 * device): it is read into memory, so it has a limit. A regular file of any
 * size is mapped instead, its pages read as batches touch them. */
#define DATA_STREAM_MAX ((size_t)1 << 30)

/* The corpus compiled into the binary (assets/corpus.txt). */
void data_builtin(dataset *d);
/* Load --data path: a regular file is mapped read-only (it must not be
 * truncated while the run uses it); a FIFO or a device is read to its end,
 * at most DATA_STREAM_MAX bytes (opening a FIFO waits for a writer, as cat
 * does). Returns 0, or -1 with one line naming --data and the path in err. */
int data_load_file(dataset *d, const char *path, char *err, size_t errlen);
void data_free(dataset *d);

/* Read all of an open stream (a regular file, a FIFO or a device) into a
 * new buffer with one spare byte after the data (room for a NUL). Returns
 * 0; -1 on a read error; -2 past max bytes; -3 out of memory. The caller
 * frees *out. Shared by --data, --load and --script. */
int data_read_all(FILE *f, size_t max, uint8_t **out, size_t *n);
/* Is there enough data for a context of T? 0, or -1 with a reason. */
int data_check(const dataset *d, int T, char *err, size_t errlen);

/* x, y (B, T): y is x shifted by one byte. */
void data_train_batch(const dataset *d, ns_rng *r, int B, int T, uint8_t *x, uint8_t *y);
/* Validation batch k of nb (B rows each): windows spread evenly over the tail. */
void data_val_batch(const dataset *d, int k, int nb, int B, int T, uint8_t *x, uint8_t *y);

extern const unsigned char *const ns_corpus;
extern const size_t ns_corpus_len;

#endif
