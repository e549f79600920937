/* sweep_spec.c - the --sweep SPEC grammar and the runs' identity: a SPEC
 * parsed into sorted axes of values, the grid's size, run k's value on
 * each axis, its ID and the CSV that ID names.
 *
 * Syntax only: whether a name is a flag and a value is in its range is
 * the flag parser's (cli_parse, through sweep.c). Not here: the sweep's
 * directory, its runs, its results.
 */
#include "sweep_spec.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the SPEC parser --------------------------------------------------- */

static int spec_fail(char *err, size_t n, const char *fmt, ...)
{
    va_list ap;
    int k = snprintf(err, n, "--sweep: ");
    va_start(ap, fmt);
    if (k > 0 && (size_t)k < n)
        vsnprintf(err + k, n - (size_t)k, fmt, ap);
    va_end(ap);
    return -1;
}

static int axis_push(sweep_axis *a, const char *v, char *err, size_t errlen)
{
    if (a->n >= SWEEP_MAX_VALUES)
        return spec_fail(err, errlen, "axis %s: more than %d values", a->name, SWEEP_MAX_VALUES);
    if (a->n % 64 == 0) {
        char **nv = realloc(a->v, (size_t)(a->n + 64) * sizeof *nv);
        if (!nv)
            return spec_fail(err, errlen, "out of memory");
        a->v = nv;
    }
    if (!(a->v[a->n] = strdup(v)))
        return spec_fail(err, errlen, "out of memory");
    a->n++;
    return 0;
}

/* A whole-string number (finite) or integer. */
static int num_full(const char *s, double *x)
{
    char *end;
    errno = 0;
    *x = strtod(s, &end);
    return end != s && !*end && errno != ERANGE && isfinite(*x) ? 0 : -1;
}

static int long_full(const char *s, long *x)
{
    char *end;
    errno = 0;
    *x = strtol(s, &end, 10);
    return end != s && !*end && errno != ERANGE ? 0 : -1;
}

/* A..B: every integer from A to B. */
static int range_int(sweep_axis *a, const char *lo, const char *hi, char *err, size_t errlen)
{
    long x, y;
    if (long_full(lo, &x) || long_full(hi, &y) || x > y)
        return spec_fail(err, errlen, "axis %s: '%s..%s': expected integers A..B with A <= B",
                         a->name, lo, hi);
    if (y - x >= SWEEP_MAX_VALUES)
        return spec_fail(err, errlen, "axis %s: more than %d values", a->name, SWEEP_MAX_VALUES);
    for (long v = x; v <= y; v++) {
        char buf[32];
        snprintf(buf, sizeof buf, "%ld", v);
        if (axis_push(a, buf, err, errlen))
            return -1;
    }
    return 0;
}

/* A..B*F: A, A*F, A*F^2, ... while <= B (within rounding), as "%.6g";
 * F may be written X^Y (10^0.5: two values a decade). */
static int range_geo(sweep_axis *a, const char *lo, const char *hi, const char *fs, char *err,
                     size_t errlen)
{
    double x, y, f, base, ex;
    char fb[SWEEP_VALUE_MAX];
    snprintf(fb, sizeof fb, "%s", fs);
    char *caret = strchr(fb, '^');
    if (caret)
        *caret = 0;
    int bad_f = caret ? num_full(fb, &base) || num_full(caret + 1, &ex) || base <= 0
                      : num_full(fb, &base);
    f = caret && !bad_f ? pow(base, ex) : base;
    if (num_full(lo, &x) || num_full(hi, &y) || x <= 0 || x > y)
        return spec_fail(err, errlen, "axis %s: '%s..%s': expected numbers 0 < A <= B", a->name,
                         lo, hi);
    if (bad_f || !isfinite(f) || f <= 1.000001)
        return spec_fail(err, errlen, "axis %s: step '*%s': expected a factor above 1 (F or X^Y)",
                         a->name, fs);
    double steps = floor(log(y / x) / log(f) + 1e-9);
    if (!(steps < SWEEP_MAX_VALUES))
        return spec_fail(err, errlen, "axis %s: more than %d values", a->name, SWEEP_MAX_VALUES);
    for (int k = 0; k <= (int)steps; k++) {
        char buf[32];
        snprintf(buf, sizeof buf, "%.6g", x * pow(f, k));
        if (axis_push(a, buf, err, errlen))
            return -1;
    }
    return 0;
}

/* One comma-separated item: a value, A..B or A..B*F. */
static int spec_item(sweep_axis *a, const char *item, size_t len, char *err, size_t errlen)
{
    char buf[SWEEP_VALUE_MAX];
    if (len == 0)
        return spec_fail(err, errlen, "axis %s: an empty value (expected NAME=V1,V2,...)",
                         a->name);
    if (len >= sizeof buf)
        return spec_fail(err, errlen, "axis %s: a value longer than %d bytes", a->name,
                         SWEEP_VALUE_MAX - 1);
    memcpy(buf, item, len);
    buf[len] = 0;
    for (size_t i = 0; i < len; i++)
        if (!isgraph((unsigned char)buf[i]) || strchr("\"'\\=", buf[i]))
            return spec_fail(err, errlen, "axis %s: value '%s': quotes, backslashes, '=' and "
                             "control bytes are not allowed", a->name, buf);
    char *dots = strstr(buf, "..");
    if (!dots)
        return axis_push(a, buf, err, errlen);
    *dots = 0;
    char *hi = dots + 2, *star = strchr(hi, '*');
    if (!star)
        return range_int(a, buf, hi, err, errlen);
    *star = 0;
    return range_geo(a, buf, hi, star + 1, err, errlen);
}

static int cmp_str(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

/* The same value twice would be two runs with one ID. */
static int axis_unique(const sweep_axis *a, char *err, size_t errlen)
{
    char **s = malloc((size_t)a->n * sizeof *s);
    if (!s)
        return spec_fail(err, errlen, "out of memory");
    memcpy(s, a->v, (size_t)a->n * sizeof *s);
    qsort(s, (size_t)a->n, sizeof *s, cmp_str);
    int r = 0;
    for (int i = 1; i < a->n && !r; i++)
        if (!strcmp(s[i - 1], s[i]))
            r = spec_fail(err, errlen, "axis %s: value '%s' given twice", a->name, s[i]);
    free(s);
    return r;
}

/* NAME=ITEMS: one axis. */
static int spec_axis(sweep_spec *s, const char *tok, size_t len, char *err, size_t errlen)
{
    const char *eq = memchr(tok, '=', len);
    size_t nl = eq ? (size_t)(eq - tok) : len;
    if (!eq || nl == 0 || nl >= SWEEP_NAME_MAX)
        return spec_fail(err, errlen, "'%.*s': expected NAME=V1,V2,... with NAME a long flag",
                         (int)(len > 64 ? 64 : len), tok);
    for (size_t i = 0; i < nl; i++)
        if (!islower((unsigned char)tok[i]) && !isdigit((unsigned char)tok[i]) && tok[i] != '-')
            return spec_fail(err, errlen, "'%.*s': NAME is a long flag's name (a-z, 0-9, -)",
                             (int)nl, tok);
    for (int i = 0; i < s->n_axes; i++)
        if (strlen(s->axis[i].name) == nl && !strncmp(s->axis[i].name, tok, nl))
            return spec_fail(err, errlen, "axis %.*s given twice", (int)nl, tok);
    if (s->n_axes >= SWEEP_MAX_AXES)
        return spec_fail(err, errlen, "more than %d axes", SWEEP_MAX_AXES);
    sweep_axis *a = &s->axis[s->n_axes++];
    memcpy(a->name, tok, nl);
    const char *p = eq + 1, *end = tok + len;
    for (;;) {
        const char *c = memchr(p, ',', (size_t)(end - p));
        const char *stop = c ? c : end;
        if (spec_item(a, p, (size_t)(stop - p), err, errlen))
            return -1;
        if (!c)
            break;
        p = c + 1;
    }
    return axis_unique(a, err, errlen);
}

static int cmp_axis(const void *x, const void *y)
{
    return strcmp(((const sweep_axis *)x)->name, ((const sweep_axis *)y)->name);
}

int sweep_spec_parse(const char *text, sweep_spec *s, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    const char *p = text;
    for (;;) {
        while (*p && isspace((unsigned char)*p))
            p++;
        if (!*p)
            break;
        size_t len = 0;
        while (p[len] && !isspace((unsigned char)p[len]))
            len++;
        if (spec_axis(s, p, len, err, errlen)) {
            sweep_spec_free(s);
            return -1;
        }
        p += len;
    }
    if (s->n_axes == 0)
        return spec_fail(err, errlen, "no axes: expected NAME=V1,V2,... (e.g. 'norm=post,pre')");
    qsort(s->axis, (size_t)s->n_axes, sizeof s->axis[0], cmp_axis);
    return 0;
}

void sweep_spec_free(sweep_spec *s)
{
    for (int i = 0; i < s->n_axes; i++) {
        for (int k = 0; k < s->axis[i].n; k++)
            free(s->axis[i].v[k]);
        free(s->axis[i].v);
    }
    memset(s, 0, sizeof *s);
}

/* ---- one spelling per value ------------------------------------------------ */

/* An integer's one spelling: decimal, no sign for >= 0, no leading zeros.
 * 0, or -1 when v is not wholly an integer (the flag parser says why). */
static int canon_int(const char *v, char *out, size_t n)
{
    char *end;
    errno = 0;
    if (*v == '-') {
        long long x = strtoll(v, &end, 10);
        if (end == v || *end || errno == ERANGE)
            return -1;
        snprintf(out, n, "%lld", x);
    } else {
        unsigned long long x = strtoull(v + (*v == '+'), &end, 10);
        if (end == v + (*v == '+') || *end || errno == ERANGE || !isdigit((unsigned char)v[*v == '+']))
            return -1;
        snprintf(out, n, "%llu", x);
    }
    return 0;
}

/* A float setting's one spelling: the shortest "%.Pg" (P >= 6, the
 * spelling geometric ranges use) that reads back as the same float, the
 * type the setting is stored in. 0, or -1 when v is not a finite number. */
static int canon_f32(const char *v, char *out, size_t n)
{
    double x;
    if (num_full(v, &x))
        return -1;
    float f = (float)x;
    for (int p = 6; p <= 9; p++) {
        snprintf(out, n, "%.*g", p, (double)f);
        if ((float)strtod(out, NULL) == f)
            break;
    }
    if (!strcmp(out, "-0"))
        snprintf(out, n, "0");
    return 0;
}

static int cmp_canon(const void *x, const void *y)
{
    return strcmp(((char *const *)x)[0], ((char *const *)y)[0]);
}

/* Axis a's values respelled; two spellings of one value are refused. */
static int axis_canon(sweep_axis *a, sweep_kind kind, char *err, size_t errlen)
{
    char *(*pairs)[2] = calloc((size_t)a->n, sizeof *pairs); /* {canonical, as written} */
    if (!pairs)
        return spec_fail(err, errlen, "out of memory");
    int r = 0;
    for (int i = 0; i < a->n && !r; i++) {
        char buf[SWEEP_VALUE_MAX];
        int ok = kind == SWEEP_KIND_INT ? canon_int(a->v[i], buf, sizeof buf) == 0
                 : kind == SWEEP_KIND_F32 ? canon_f32(a->v[i], buf, sizeof buf) == 0
                                          : 0;
        pairs[i][0] = strdup(ok ? buf : a->v[i]);
        pairs[i][1] = a->v[i];
        if (!pairs[i][0])
            r = spec_fail(err, errlen, "out of memory");
    }
    if (!r) {
        char *(*sorted)[2] = malloc((size_t)a->n * sizeof *sorted);
        if (!sorted)
            r = spec_fail(err, errlen, "out of memory");
        else
            memcpy(sorted, pairs, (size_t)a->n * sizeof *sorted);
        if (sorted)
            qsort(sorted, (size_t)a->n, sizeof *sorted, cmp_canon);
        for (int i = 1; sorted && i < a->n && !r; i++)
            if (!strcmp(sorted[i - 1][0], sorted[i][0]))
                r = spec_fail(err, errlen, "axis %s: '%s' and '%s' are one value (%s): give it once",
                              a->name, sorted[i - 1][1], sorted[i][1], sorted[i][0]);
        free(sorted);
    }
    for (int i = 0; i < a->n; i++) {
        if (!r) {
            free(a->v[i]);
            a->v[i] = pairs[i][0];
        } else {
            free(pairs[i][0]);
        }
    }
    free(pairs);
    return r;
}

int sweep_spec_canon(sweep_spec *s, sweep_kind (*kind)(const char *name), char *err,
                     size_t errlen)
{
    for (int i = 0; i < s->n_axes; i++) {
        sweep_kind k = kind(s->axis[i].name);
        if (k != SWEEP_KIND_TEXT && axis_canon(&s->axis[i], k, err, errlen))
            return -1;
    }
    return 0;
}

long sweep_spec_runs(const sweep_spec *s)
{
    long n = 1;
    for (int i = 0; i < s->n_axes; i++) {
        n *= s->axis[i].n; /* each n <= 10^4 and n <= 10^6 before: no overflow */
        if (n > SWEEP_MAX_RUNS)
            return -1;
    }
    return n;
}

void sweep_spec_run_index(const sweep_spec *s, long k, int idx[SWEEP_MAX_AXES])
{
    for (int i = s->n_axes - 1; i >= 0; i--) {
        idx[i] = (int)(k % s->axis[i].n);
        k /= s->axis[i].n;
    }
}

void sweep_spec_run_id(const sweep_spec *s, const int idx[SWEEP_MAX_AXES], char id[13])
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a, 64 bits */
    for (int i = 0; i < s->n_axes; i++) {
        const char *parts[4] = {s->axis[i].name, "=", s->axis[i].v[idx[i]], "\n"};
        for (int j = 0; j < 4; j++)
            for (const unsigned char *c = (const unsigned char *)parts[j]; *c; c++)
                h = (h ^ *c) * 1099511628211ull;
    }
    snprintf(id, 13, "%012llx", (unsigned long long)((h ^ (h >> 48)) & 0xffffffffffffull));
}

void sweep_spec_run_csv(const sweep_spec *s, const char *dir, long k, char *path, size_t n)
{
    int idx[SWEEP_MAX_AXES];
    char id[13];
    sweep_spec_run_index(s, k, idx);
    sweep_spec_run_id(s, idx, id);
    snprintf(path, n, "%s/run-%s.csv", dir, id);
}

/* ---- --loss-at N[,N...] -------------------------------------------------- */

/* One step of --loss-at at *p: digits, spaces either side; *p moves past
 * them. The step (past SWEEP_LOSS_AT_MAX: SWEEP_LOSS_AT_MAX + 1), 0 for
 * "0", or -1 when no digits are there. */
static long loss_at_step(const char **p)
{
    long long v = 0;
    const char *q = *p;
    while (*q == ' ')
        q++;
    const char *digits = q;
    for (; *q >= '0' && *q <= '9'; q++)
        v = v > SWEEP_LOSS_AT_MAX ? v : v * 10 + (*q - '0');
    int none = q == digits;
    while (*q == ' ')
        q++;
    *p = q;
    return none ? -1 : v > SWEEP_LOSS_AT_MAX ? SWEEP_LOSS_AT_MAX + 1L : (long)v;
}

int sweep_spec_loss_at_parse(const char *text, sweep_spec *s, char *err, size_t errlen)
{
    long at[SWEEP_MAX_LOSS_AT];
    int n = 0;
    const char *why = NULL;
    s->n_loss_at = 0;
    for (const char *p = text; !why;) {
        long v = loss_at_step(&p);
        if (v < 0 || (*p && *p != ','))
            why = "expected steps N[,N...], positive integers (e.g. 100,500,1000)";
        else if (v < 1 || v > SWEEP_LOSS_AT_MAX)
            why = "a step is 1 to 1000000000";
        else if (n == SWEEP_MAX_LOSS_AT)
            why = "at most 16 steps";
        else if (n && v <= at[n - 1])
            why = "the steps must increase, each given once (e.g. 100,500)";
        else
            at[n++] = v;
        if (!why && !*p++)
            break;
    }
    if (why) {
        char shown[65];
        size_t k = 0;
        for (; text[k] && k + 1 < sizeof shown; k++) /* one line, whatever text holds */
            shown[k] = text[k] >= ' ' && text[k] < 127 ? text[k] : '?';
        shown[k] = 0;
        snprintf(err, errlen, "--loss-at '%s%s': %s", shown, text[k] ? "..." : "", why);
        return -1;
    }
    memcpy(s->loss_at, at, (size_t)n * sizeof *at);
    s->n_loss_at = n;
    return 0;
}

void sweep_spec_loss_at_text(const sweep_spec *s, char *buf, size_t n)
{
    size_t k = 0;
    buf[0] = 0;
    for (int j = 0; j < s->n_loss_at && k < n; j++)
        k += (size_t)snprintf(buf + k, n - k, "%s%ld", j ? "," : "", s->loss_at[j]);
}
