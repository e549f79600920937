/* jsonl.h - the one JSONL reader: a parser of one flat JSON object per line
 * (a metrics stream's lines, normscope's own --jsonl rows), with no
 * dependency. Fields are handed to a callback as they are read; the caller
 * decides what they mean (stream.c builds a snapshot, plot_data.c a
 * figure's columns). Not here: files, following them (tail.h), CSV.
 */
#ifndef NS_JSONL_H
#define NS_JSONL_H

#include <stddef.h>

typedef enum { JSONL_NUM, JSONL_STR, JSONL_NULL, JSONL_BOOL } jsonl_type;

typedef struct {
    jsonl_type type;
    double num;      /* NUM (NaN, Infinity, -Infinity accepted), BOOL 0/1 */
    const char *str; /* STR: decoded UTF-8, NUL-terminated; valid during the call */
    size_t len;
    const char *raw; /* NUM: the token as written (not NUL-terminated), rawlen bytes */
    size_t rawlen;
    int index;       /* -1: the key's own value; >= 0: that element of an array */
} jsonl_value;

typedef void (*jsonl_field)(void *ctx, const char *key, size_t keylen, const jsonl_value *v);

/* Parse line[0..n) as one JSON object whose values are numbers, strings,
 * true/false/null or arrays of those; nested objects and arrays deeper
 * down are checked and skipped (the format may grow). Strings are decoded
 * in place, so line is modified. cb sees each field as it is read: a line
 * that fails may have shown some fields first. Returns 0, or -1 with the
 * reason and its column (1-based) in err. */
int jsonl_parse(char *line, size_t n, jsonl_field cb, void *ctx, char *err,
                      size_t errlen);

#endif
