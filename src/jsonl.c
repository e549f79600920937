/* jsonl.c - the JSONL line parser (jsonl.h): one flat JSON object, its
 * strings decoded in place, its numbers as doubles (and their tokens).
 * Not here: what the fields mean, files. */
#include "jsonl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


typedef struct {
    char *p, *end, *base;
    char *err;
    size_t errlen;
} jcur;

static int jfail(jcur *c, const char *what)
{
    snprintf(c->err, c->errlen, "%s at column %ld", what, (long)(c->p - c->base) + 1);
    return -1;
}

static int at(const jcur *c, char ch) { return c->p < c->end && *c->p == ch; }
static int dig(char ch) { return ch >= '0' && ch <= '9'; }

static void jws(jcur *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\r' || *c->p == '\n'))
        c->p++;
}

static int hex4(jcur *c, unsigned *out)
{
    if (c->end - c->p < 4)
        return jfail(c, "short \\u escape");
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char h = c->p[i];
        int d = dig(h) ? h - '0' : (h >= 'a' && h <= 'f') ? h - 'a' + 10
                                 : (h >= 'A' && h <= 'F') ? h - 'A' + 10 : -1;
        if (d < 0)
            return jfail(c, "bad \\u escape");
        v = v * 16 + (unsigned)d;
    }
    c->p += 4;
    *out = v;
    return 0;
}

static size_t put_utf8(char *o, unsigned cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* \uXXXX (and a surrogate pair); what cannot be a character becomes '?',
 * NUL included, so a decoded string is one C string */
static int junicode(jcur *c, unsigned *cp)
{
    if (hex4(c, cp))
        return -1;
    if (*cp >= 0xD800 && *cp < 0xDC00) {
        unsigned lo = 0;
        if (c->end - c->p >= 6 && c->p[0] == '\\' && c->p[1] == 'u') {
            c->p += 2;
            if (hex4(c, &lo))
                return -1;
        }
        *cp = lo >= 0xDC00 && lo < 0xE000 ? 0x10000 + ((*cp - 0xD800) << 10) + (lo - 0xDC00) : '?';
    } else if ((*cp >= 0xDC00 && *cp < 0xE000) || *cp == 0) {
        *cp = '?';
    }
    return 0;
}

/* The string at c->p, decoded in place: never longer than its escaped
 * form, so the NUL fits where the closing quote was at the latest. */
static int jstring(jcur *c, char **out, size_t *len)
{
    if (!at(c, '"'))
        return jfail(c, "expected a string");
    char *o = ++c->p, *start = o;
    for (;;) {
        if (c->p >= c->end)
            return jfail(c, "unterminated string");
        unsigned char ch = (unsigned char)*c->p;
        if (ch == '"')
            break;
        if (ch < 0x20)
            return jfail(c, "control character in a string");
        if (ch != '\\') {
            *o++ = *c->p++;
            continue;
        }
        if (c->end - c->p < 2)
            return jfail(c, "unterminated string");
        char e = c->p[1];
        c->p += 2;
        static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
        const char *k = e ? strchr(from, e) : NULL;
        if (k) {
            *o++ = to[k - from];
        } else if (e == 'u') {
            unsigned cp;
            if (junicode(c, &cp))
                return -1;
            o += put_utf8(o, cp);
        } else {
            c->p--;
            return jfail(c, "bad escape in a string");
        }
    }
    *o = 0;
    c->p++;
    *out = start;
    *len = (size_t)(o - start);
    return 0;
}

/* A JSON number, or NaN / Infinity / -Infinity (what Python's json module
 * writes unless told not to: read rather than refused). */
static int jnumber(jcur *c, double *out)
{
    static const struct {
        const char *w;
        double v;
    } lit[] = {{"NaN", NAN}, {"Infinity", INFINITY}, {"-Infinity", -INFINITY}};
    for (int i = 0; i < 3; i++) {
        size_t n = strlen(lit[i].w);
        if ((size_t)(c->end - c->p) >= n && !memcmp(c->p, lit[i].w, n)) {
            c->p += n;
            *out = lit[i].v;
            return 0;
        }
    }
    char *q = c->p;
    if (q < c->end && *q == '-')
        q++;
    if (q >= c->end || !dig(*q))
        return jfail(c, "expected a value");
    if (*q == '0')
        q++;
    else
        while (q < c->end && dig(*q))
            q++;
    if (q < c->end && *q == '.') {
        if (++q >= c->end || !dig(*q))
            return jfail(c, "bad number");
        while (q < c->end && dig(*q))
            q++;
    }
    if (q < c->end && (*q == 'e' || *q == 'E')) {
        q++;
        if (q < c->end && (*q == '+' || *q == '-'))
            q++;
        if (q >= c->end || !dig(*q))
            return jfail(c, "bad number");
        while (q < c->end && dig(*q))
            q++;
    }
    char buf[64];
    size_t n = (size_t)(q - c->p);
    if (n >= sizeof buf)
        return jfail(c, "number too long");
    memcpy(buf, c->p, n);
    buf[n] = 0;
    *out = strtod(buf, NULL); /* 1e999 is inf: data, as NaN is */
    c->p = q;
    return 0;
}

static int jword(jcur *c, const char *w)
{
    size_t n = strlen(w);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, w, n))
        return jfail(c, "expected a value");
    c->p += n;
    return 0;
}

static int jscalar(jcur *c, jsonl_value *v)
{
    memset(v, 0, sizeof *v);
    if (c->p >= c->end)
        return jfail(c, "expected a value");
    switch (*c->p) {
    case '"': {
        char *s;
        v->type = JSONL_STR;
        if (jstring(c, &s, &v->len))
            return -1;
        v->str = s;
        return 0;
    }
    case 't': v->type = JSONL_BOOL, v->num = 1; return jword(c, "true");
    case 'f': v->type = JSONL_BOOL, v->num = 0; return jword(c, "false");
    case 'n': v->type = JSONL_NULL, v->num = NAN; return jword(c, "null");
    default:
        v->type = JSONL_NUM;
        v->raw = c->p;
        if (jnumber(c, &v->num))
            return -1;
        v->rawlen = (size_t)(c->p - v->raw);
        return 0;
    }
}

/* A nested object or array: checked, not reported */
static int jskip(jcur *c, int depth)
{
    if (depth > 32)
        return jfail(c, "nested too deeply");
    char open = *c->p, close = open == '{' ? '}' : ']';
    c->p++;
    jws(c);
    if (at(c, close)) {
        c->p++;
        return 0;
    }
    for (;;) {
        jws(c);
        if (open == '{') {
            char *k;
            size_t kl;
            if (jstring(c, &k, &kl))
                return -1;
            jws(c);
            if (!at(c, ':'))
                return jfail(c, "expected ':'");
            c->p++;
            jws(c);
        }
        jsonl_value v;
        if (at(c, '{') || at(c, '[')) {
            if (jskip(c, depth + 1))
                return -1;
        } else if (jscalar(c, &v)) {
            return -1;
        }
        jws(c);
        if (at(c, ',')) {
            c->p++;
            continue;
        }
        if (at(c, close)) {
            c->p++;
            return 0;
        }
        return jfail(c, open == '{' ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

/* A top-level field's value: a scalar, or an array of them (each reported
 * with its index); anything deeper is skipped. */
static int jfield(jcur *c, const char *key, size_t kl, jsonl_field cb, void *ctx)
{
    jsonl_value v;
    if (at(c, '{'))
        return jskip(c, 1);
    if (!at(c, '[')) {
        if (jscalar(c, &v))
            return -1;
        v.index = -1;
        cb(ctx, key, kl, &v);
        return 0;
    }
    c->p++;
    jws(c);
    if (at(c, ']')) {
        c->p++;
        return 0;
    }
    for (int idx = 0;; idx++) {
        jws(c);
        if (at(c, '{') || at(c, '[')) {
            if (jskip(c, 2))
                return -1;
        } else {
            if (jscalar(c, &v))
                return -1;
            v.index = idx;
            cb(ctx, key, kl, &v);
        }
        jws(c);
        if (at(c, ',')) {
            c->p++;
            continue;
        }
        if (at(c, ']')) {
            c->p++;
            return 0;
        }
        return jfail(c, "expected ',' or ']'");
    }
}

int jsonl_parse(char *line, size_t n, jsonl_field cb, void *ctx, char *err,
                      size_t errlen)
{
    jcur c = {line, line + n, line, err, errlen};
    jws(&c);
    if (!at(&c, '{'))
        return jfail(&c, "expected '{'");
    c.p++;
    jws(&c);
    if (at(&c, '}'))
        c.p++;
    else
        for (;;) {
            char *key;
            size_t kl;
            jws(&c);
            if (jstring(&c, &key, &kl))
                return -1;
            jws(&c);
            if (!at(&c, ':'))
                return jfail(&c, "expected ':'");
            c.p++;
            jws(&c);
            if (jfield(&c, key, kl, cb, ctx))
                return -1;
            jws(&c);
            if (at(&c, ',')) {
                c.p++;
                continue;
            }
            if (at(&c, '}')) {
                c.p++;
                break;
            }
            return jfail(&c, "expected ',' or '}'");
        }
    jws(&c);
    if (c.p != c.end)
        return jfail(&c, "text after the object");
    return 0;
}

