/* sweep.c - --sweep SPEC: a grid of headless runs, each a child process of
 * this binary, scheduled --jobs at a time; --list prints the runs as
 * command lines for other schedulers; --sweep-collect rebuilds the results
 * from the runs' CSVs.
 *
 * Every run's settings go through cli_parse, so a sweep accepts exactly
 * what the command line accepts, with its messages. The results table
 * (DIR/results.csv) is computed from each run's CSV by one function,
 * whether the run was started here or by GNU parallel on another machine.
 * Not here: training, the flag table, the live view of a grid (it watches
 * through a sweep_watch: tui_sweep.c).
 */
#define _GNU_SOURCE /* posix_spawn file actions; getline */
#include "sweep.h"

#include "atomicio.h"
#include "cli.h"
#include "data.h"
#include "nstime.h"
#include "stopsig.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

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

void sweep_run_index(const sweep_spec *s, long k, int idx[SWEEP_MAX_AXES])
{
    for (int i = s->n_axes - 1; i >= 0; i--) {
        idx[i] = (int)(k % s->axis[i].n);
        k /= s->axis[i].n;
    }
}

void sweep_run_id(const sweep_spec *s, const int idx[SWEEP_MAX_AXES], char id[13])
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

/* ---- one sweep: its settings, directory and runs ----------------------- */

typedef struct {
    char id[13];
    long k;
} run_key;

struct sweep_ctx {
    sweep_spec spec;
    char spec_text[8192]; /* as given, newlines made spaces */
    char exe[4096];       /* this binary, for the children and --list */
    char dir[4096];
    int n_common;
    char **common; /* the flags outside SPEC, as given */
    long n_runs;
    run_key *keys;   /* sorted by id */
    dataset data;    /* the last --data loaded, for checks and the entropy */
    char data_name[4096];
    int have_data;
    double entropy;  /* unigram entropy of data's training bytes, nats */
    int quiet;
    unsigned char *done; /* done[k]: run k has a row in results.csv */
    char **rows;     /* for a live view: that row (as read at the start), else NULL */
    int jobs;
    int view_only;   /* --sweep-collect's view: nothing to run */
};

/* Flags that belong to the sweep itself, with whether they take a value:
 * they are not passed to the runs. --headless and --quiet: the runs get
 * them anyway (so a resume without -q is the same sweep). */
static const struct {
    const char *name;
    int value;
} own_flags[] = {{"sweep", 1}, {"sweep-out", 1}, {"sweep-collect", 1}, {"jobs", 1},
                 {"list", 0},  {"yes", 0},       {"headless", 0},      {"quiet", 0}};
enum { N_OWN = sizeof own_flags / sizeof own_flags[0] };

/* Settings the sweep sets for every run, so they cannot be an axis. */
static const char *const fixed_names[] = {"csv", "jsonl", "save", "compare", "lesson"};

static int own_flag(const char *a, int *takes_value)
{
    *takes_value = 0;
    if (!strcmp(a, "-q"))
        return 1;
    for (int i = 0; i < N_OWN; i++) {
        size_t n = strlen(own_flags[i].name);
        if (a[0] == '-' && a[1] == '-' && !strncmp(a + 2, own_flags[i].name, n) &&
            (a[2 + n] == 0 || a[2 + n] == '=')) {
            *takes_value = own_flags[i].value && a[2 + n] == 0;
            return 1;
        }
    }
    return 0;
}

/* The flags outside SPEC, in their order, pointing into argv. */
static int ctx_common(sweep_ctx *c, int argc, char **argv)
{
    c->common = calloc((size_t)argc + 1, sizeof *c->common);
    if (!c->common) {
        fprintf(stderr, "normscope: out of memory\n");
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        int skip;
        if (own_flag(argv[i], &skip)) {
            i += skip;
            continue;
        }
        if (strchr(argv[i], '\n')) {
            fprintf(stderr, "normscope: --sweep: a flag's value holds a newline: '%s'\n", argv[i]);
            return 2;
        }
        c->common[c->n_common++] = argv[i];
    }
    return 0;
}

/* Axis names the sweep sets itself. */
static int ctx_check_axes(const sweep_ctx *c)
{
    for (int i = 0; i < c->spec.n_axes; i++) {
        int dummy;
        char flag[SWEEP_NAME_MAX + 3];
        snprintf(flag, sizeof flag, "--%s", c->spec.axis[i].name);
        int fixed = own_flag(flag, &dummy);
        for (size_t j = 0; j < sizeof fixed_names / sizeof fixed_names[0]; j++)
            fixed |= !strcmp(c->spec.axis[i].name, fixed_names[j]);
        if (fixed) {
            fprintf(stderr, "normscope: --sweep: axis '%s': set by the sweep for every run, "
                            "it cannot vary\n", c->spec.axis[i].name);
            return 2;
        }
    }
    return 0;
}

/* A run's command line: this binary, --headless --threads 1 --quiet, the
 * common flags (a --threads there wins), one --NAME=VALUE per axis, and
 * --csv DIR/run-ID.csv. One allocation; free(r->argv). */
typedef struct {
    char **argv;
    int argc;
    char id[13];
    char csv[4200];
} run_args;

static int run_args_make(const sweep_ctx *c, long k, run_args *r)
{
    int idx[SWEEP_MAX_AXES];
    sweep_run_index(&c->spec, k, idx);
    sweep_run_id(&c->spec, idx, r->id);
    sweep_run_csv(&c->spec, c->dir, k, r->csv, sizeof r->csv);
    size_t text = 0;
    for (int i = 0; i < c->spec.n_axes; i++)
        text += strlen(c->spec.axis[i].name) + strlen(c->spec.axis[i].v[idx[i]]) + 4;
    int n = 5 + c->n_common + c->spec.n_axes + 2;
    r->argv = malloc((size_t)(n + 1) * sizeof *r->argv + text);
    if (!r->argv)
        return -1;
    char *store = (char *)(r->argv + n + 1);
    static const char *const head[] = {"--headless", "--threads", "1", "--quiet"};
    r->argc = 0;
    r->argv[r->argc++] = (char *)c->exe;
    for (int i = 0; i < 4; i++)
        r->argv[r->argc++] = (char *)head[i];
    for (int i = 0; i < c->n_common; i++)
        r->argv[r->argc++] = c->common[i];
    for (int i = 0; i < c->spec.n_axes; i++) {
        r->argv[r->argc++] = store;
        store += sprintf(store, "--%s=%s", c->spec.axis[i].name, c->spec.axis[i].v[idx[i]]) + 1;
    }
    r->argv[r->argc++] = "--csv";
    r->argv[r->argc++] = r->csv;
    r->argv[r->argc] = NULL;
    return 0;
}

/* The unigram entropy of the training bytes, in nats: the loss of a model
 * that has learned the byte frequencies and nothing else (the plateau a
 * stalled run sits on). */
static double unigram_entropy(const dataset *d)
{
    double count[256] = {0}, h = 0;
    for (size_t i = 0; i < d->n_train; i++)
        count[d->bytes[i]] += 1;
    for (int b = 0; b < 256; b++)
        if (count[b] > 0) {
            double p = count[b] / (double)d->n_train;
            h -= p * log(p);
        }
    return h;
}

/* Load --data path (NULL: the built-in corpus) unless it is the one loaded. */
static int ctx_data(sweep_ctx *c, const char *path)
{
    const char *name = path ? path : "";
    if (c->have_data && !strcmp(c->data_name, name))
        return 0;
    if (c->have_data)
        data_free(&c->data);
    c->have_data = 0;
    char err[512];
    if (path && data_load_file(&c->data, path, err, sizeof err) != 0) {
        fprintf(stderr, "normscope: %s\n", err);
        return 2;
    }
    if (!path)
        data_builtin(&c->data);
    snprintf(c->data_name, sizeof c->data_name, "%s", name);
    c->have_data = 1;
    c->entropy = unigram_entropy(&c->data);
    return 0;
}

/* What a row needs to know of a run's settings, from the flag parser. */
typedef struct {
    uint64_t seed;
    long steps;
    double entropy;
} run_facts;

/* Parse run k's command line as the run itself will; with check, also its
 * data (as main does before training). 0, or 2 after one line. */
static int run_parse(sweep_ctx *c, long k, int check, run_facts *f)
{
    run_args ra;
    cli_opts ro;
    char err[512];
    if (run_args_make(c, k, &ra) != 0) {
        fprintf(stderr, "normscope: out of memory\n");
        return 2;
    }
    int r = cli_parse(&ro, ra.argc, ra.argv, stderr, stderr) ? 2 : 0;
    if (!r && ro.cfg.steps == 0) {
        fprintf(stderr, "normscope: --sweep: --steps 0 trains until stopped; a sweep's runs need "
                        "an end (--steps N)\n");
        r = 2;
    }
    if (!r)
        r = ctx_data(c, ro.data);
    if (!r && check && !ro.load && data_check(&c->data, ro.cfg.context, err, sizeof err) != 0) {
        fprintf(stderr, "normscope: %s\n", err);
        r = 2;
    }
    if (!r && f) {
        f->seed = ro.cfg.seed;
        f->steps = ro.cfg.steps;
        f->entropy = c->entropy;
    }
    free(ra.argv);
    return r;
}

static int cmp_key(const void *x, const void *y)
{
    return strcmp(((const run_key *)x)->id, ((const run_key *)y)->id);
}

/* Every run checked by the flag parser; the IDs sorted for lookups. */
static int ctx_expand(sweep_ctx *c, int yes)
{
    c->n_runs = sweep_spec_runs(&c->spec);
    if (c->n_runs < 0 || (c->n_runs > SWEEP_ASK_RUNS && !yes)) {
        if (c->n_runs < 0)
            fprintf(stderr, "normscope: --sweep: more than %d runs\n", SWEEP_MAX_RUNS);
        else
            fprintf(stderr, "normscope: --sweep: %ld runs; more than %d need --yes\n", c->n_runs,
                    SWEEP_ASK_RUNS);
        return 2;
    }
    c->keys = malloc((size_t)c->n_runs * sizeof *c->keys);
    if (!c->keys) {
        fprintf(stderr, "normscope: out of memory\n");
        return 2;
    }
    for (long k = 0; k < c->n_runs; k++) {
        int idx[SWEEP_MAX_AXES];
        if (run_parse(c, k, 1, NULL) != 0)
            return 2;
        sweep_run_index(&c->spec, k, idx);
        sweep_run_id(&c->spec, idx, c->keys[k].id);
        c->keys[k].k = k;
    }
    qsort(c->keys, (size_t)c->n_runs, sizeof *c->keys, cmp_key);
    for (long k = 1; k < c->n_runs; k++)
        if (!strcmp(c->keys[k - 1].id, c->keys[k].id)) {
            fprintf(stderr, "normscope: --sweep: two runs share the ID %s\n", c->keys[k].id);
            return 2;
        }
    return 0;
}

/* Run k with this ID, or -1. */
static long ctx_find(const sweep_ctx *c, const char *id)
{
    run_key key;
    snprintf(key.id, sizeof key.id, "%.12s", id);
    const run_key *hit = bsearch(&key, c->keys, (size_t)c->n_runs, sizeof key, cmp_key);
    return hit ? hit->k : -1;
}

static void ctx_free(sweep_ctx *c)
{
    sweep_spec_free(&c->spec);
    free(c->common);
    free(c->keys);
    if (c->have_data)
        data_free(&c->data);
    for (long k = 0; c->rows && k < c->n_runs; k++)
        free(c->rows[k]);
    free(c->rows);
    free(c->done);
}

/* ---- DIR: sweep.spec says which sweep it holds ------------------------- */

/* The identity of a sweep: the axes' names and the common flags. Two
 * sweeps with the same identity may share DIR (a resumed or a widened
 * grid: their common runs have the same IDs and the same settings). */
static void spec_identity(const sweep_ctx *c, char *buf, size_t n)
{
    size_t k = (size_t)snprintf(buf, n, "axes:");
    for (int i = 0; i < c->spec.n_axes && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, " %s", c->spec.axis[i].name);
    for (int i = 0; i < c->n_common && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "\narg: %s", c->common[i]);
    if (k < n)
        snprintf(buf + k, n - k, "\n");
}

/* sweep.spec minus its "spec:" line and first line: the identity. */
static void file_identity(const char *text, char *buf, size_t n)
{
    size_t k = 0;
    const char *p = strchr(text, '\n');
    buf[0] = 0;
    for (p = p ? p + 1 : text + strlen(text); *p;) {
        size_t len = strcspn(p, "\n");
        if (strncmp(p, "spec: ", 6) != 0 && k < n)
            k += (size_t)snprintf(buf + k, n - k, "%.*s\n", (int)len, p);
        p += len + (p[len] == '\n');
    }
}

static char *read_text(const char *path, size_t max)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = malloc(max + 1);
    size_t n = buf ? fread(buf, 1, max, f) : 0;
    fclose(f);
    if (buf)
        buf[n] = 0;
    return buf;
}

enum { SPEC_FILE_MAX = 1 << 20 };

/* DIR may be new, empty, or hold a sweep of the same identity. 0, or 2. */
static int dir_check(const sweep_ctx *c)
{
    struct stat st;
    char path[4300];
    if (stat(c->dir, &st) != 0)
        return 0; /* made later (a missing parent is reported then) */
    if (!S_ISDIR(st.st_mode)) {
        fprintf(stderr, "normscope: --sweep-out %s: not a directory\n", c->dir);
        return 2;
    }
    snprintf(path, sizeof path, "%s/sweep.spec", c->dir);
    char *text = read_text(path, SPEC_FILE_MAX);
    if (!text) {
        DIR *d = opendir(c->dir);
        struct dirent *e;
        int empty = d != NULL;
        while (d && (e = readdir(d)))
            empty &= !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
        if (d)
            closedir(d);
        if (empty)
            return 0;
        fprintf(stderr, "normscope: --sweep-out %s: not empty and holds no sweep.spec (not a "
                        "sweep's directory)\n", c->dir);
        return 2;
    }
    char *mine = malloc(SPEC_FILE_MAX), *theirs = malloc(SPEC_FILE_MAX);
    int same = mine && theirs;
    if (same) {
        spec_identity(c, mine, SPEC_FILE_MAX);
        file_identity(text, theirs, SPEC_FILE_MAX);
        same = !strcmp(mine, theirs);
    }
    free(mine);
    free(theirs);
    free(text);
    if (!same) {
        fprintf(stderr, "normscope: --sweep-out %s holds another sweep's results (other axes "
                        "or other common flags; see %s)\n", c->dir, path);
        return 2;
    }
    return 0;
}

/* Make DIR and write sweep.spec (atomically). 0, or 1 after one line. */
static int dir_write_spec(const sweep_ctx *c)
{
    char path[4300], err[ATOMIC_PATH_MAX + 128];
    if (mkdir(c->dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "normscope: --sweep-out %s: %s\n", c->dir, strerror(errno));
        return 1;
    }
    char *text = malloc(SPEC_FILE_MAX);
    if (!text) {
        fprintf(stderr, "normscope: out of memory\n");
        return 1;
    }
    int k = snprintf(text, SPEC_FILE_MAX, "normscope sweep 1\nspec: %s\n", c->spec_text);
    spec_identity(c, text + k, SPEC_FILE_MAX - (size_t)k);
    snprintf(path, sizeof path, "%s/sweep.spec", c->dir);
    int r = atomic_write_file(path, text, strlen(text), err, sizeof err);
    if (r)
        fprintf(stderr, "normscope: --sweep-out %s\n", err);
    free(text);
    return r ? 1 : 0;
}

/* ---- a run's CSV, summarized ------------------------------------------- */

typedef struct {
    long first_step, last_step;
    double train;    /* mean loss of the last SWEEP_LAST_K steps */
    double val;      /* see summary_val */
    int has_val;
    long div_step;   /* first non-finite loss or (unskipped) gradient; 0 = none */
    double ratio_first, ratio_last; /* block 0 / top block gradient norm */
} run_summary;

/* Column positions in a run's CSV header (metrics.c). */
typedef struct {
    int step, loss, val, gnorm, skipped, n;
    int g0[3], gtop[3]; /* grad_attn, grad_ffn, grad_ln of layer 0 and L-1 */
} csv_cols;

static int csv_header(char *line, csv_cols *h)
{
    static const char *const g[3] = {"grad_attn", "grad_ffn", "grad_ln"};
    int top = -1;
    memset(h, -1, sizeof *h);
    h->n = 0;
    for (char *f = strtok(line, ",\r\n"); f; f = strtok(NULL, ",\r\n"), h->n++) {
        int layer, off;
        if (!strcmp(f, "step")) h->step = h->n;
        else if (!strcmp(f, "loss")) h->loss = h->n;
        else if (!strcmp(f, "val_loss")) h->val = h->n;
        else if (!strcmp(f, "grad_norm")) h->gnorm = h->n;
        else if (!strcmp(f, "skipped")) h->skipped = h->n;
        else if (sscanf(f, "l%d_%n", &layer, &off) == 1 && off > 0)
            for (int j = 0; j < 3; j++)
                if (!strcmp(f + off, g[j])) {
                    if (layer == 0)
                        h->g0[j] = h->n;
                    if (layer >= top) {
                        top = layer;
                        h->gtop[j] = h->n;
                    }
                }
    }
    int ok = h->step >= 0 && h->loss >= 0 && h->val >= 0 && h->gnorm >= 0 && h->skipped >= 0;
    for (int j = 0; j < 3; j++)
        ok &= h->g0[j] >= 0 && h->gtop[j] >= 0;
    return ok ? 0 : -1;
}

/* Split a row in place; fields[i] for i < h->n. Empty fields are "". */
static int csv_split(char *line, char **fields, int n)
{
    int k = 0;
    line[strcspn(line, "\r\n")] = 0;
    for (char *p = line; k < n;) {
        fields[k++] = p;
        char *c = strchr(p, ',');
        if (!c)
            break;
        *c = 0;
        p = c + 1;
    }
    return k;
}

static double field_num(const char *f)
{
    return *f ? strtod(f, NULL) : NAN;
}

static double grad_ratio(char **fl, const csv_cols *h)
{
    double a = 0, b = 0;
    for (int j = 0; j < 3; j++) {
        double x = field_num(fl[h->g0[j]]), y = field_num(fl[h->gtop[j]]);
        a += x * x;
        b += y * y;
    }
    return sqrt(a) / sqrt(b);
}

/* Fold one CSV row into the summary. loss ring: the last K train losses
 * with their steps; vals likewise for the validation losses. */
typedef struct {
    double loss[SWEEP_LAST_K], val[SWEEP_LAST_K];
    long val_step[SWEEP_LAST_K];
    long rows, vals;
} summary_acc;

static void summary_row(run_summary *s, summary_acc *acc, char **fl, const csv_cols *h)
{
    long step = strtol(fl[h->step], NULL, 10);
    double loss = field_num(fl[h->loss]), gn = field_num(fl[h->gnorm]);
    int skipped = atoi(fl[h->skipped]);
    if (acc->rows == 0) {
        s->first_step = step;
        s->ratio_first = grad_ratio(fl, h);
    }
    s->last_step = step;
    s->ratio_last = grad_ratio(fl, h);
    if (!s->div_step && (!isfinite(loss) || (!isfinite(gn) && !skipped)))
        s->div_step = step;
    acc->loss[acc->rows++ % SWEEP_LAST_K] = loss;
    if (*fl[h->val]) {
        acc->val[acc->vals % SWEEP_LAST_K] = field_num(fl[h->val]);
        acc->val_step[acc->vals++ % SWEEP_LAST_K] = step;
    }
}

/* train: the mean of the last K losses. val: the mean of the validation
 * losses measured in the last K steps, or the last one measured when none
 * was (validation is every --val-every steps). */
static void summary_finish(run_summary *s, const summary_acc *acc)
{
    long n = acc->rows < SWEEP_LAST_K ? acc->rows : SWEEP_LAST_K;
    double sum = 0;
    for (long i = 0; i < n; i++)
        sum += acc->loss[i];
    s->train = n ? sum / n : NAN;
    long nv = acc->vals < SWEEP_LAST_K ? acc->vals : SWEEP_LAST_K, used = 0;
    sum = 0;
    for (long i = 0; i < nv; i++)
        if (acc->val_step[i] > s->last_step - SWEEP_LAST_K) {
            sum += acc->val[i];
            used++;
        }
    s->has_val = acc->vals > 0;
    s->val = used ? sum / used : s->has_val ? acc->val[(acc->vals - 1) % SWEEP_LAST_K] : NAN;
}

/* Read a run's CSV. 0, or -1 when it is missing, unreadable or has no
 * step rows. */
static int summary_read(const char *path, run_summary *s)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char *line = NULL, **fl = NULL;
    size_t cap = 0;
    csv_cols h;
    summary_acc acc;
    memset(s, 0, sizeof *s);
    memset(&acc, 0, sizeof acc);
    int ok = getline(&line, &cap, f) > 0 && csv_header(line, &h) == 0 &&
             (fl = malloc((size_t)h.n * sizeof *fl)) != NULL;
    while (ok && getline(&line, &cap, f) > 0)
        if (csv_split(line, fl, h.n) == h.n)
            summary_row(s, &acc, fl, &h);
    fclose(f);
    free(line);
    free(fl);
    if (!ok || acc.rows == 0)
        return -1;
    summary_finish(s, &acc);
    return 0;
}

/* ---- DIR/results.csv ----------------------------------------------------- */

static const char *const result_cols =
    "seed,steps,train_loss,val_loss,diverged_step,stalled,ratio_first,ratio_last,wall_s,status";

static int is_seed_axis(const sweep_axis *a) { return !strcmp(a->name, "seed"); }

static void results_header(const sweep_ctx *c, char *buf, size_t n)
{
    size_t k = (size_t)snprintf(buf, n, "id");
    for (int i = 0; i < c->spec.n_axes && k < n; i++)
        if (!is_seed_axis(&c->spec.axis[i]))
            k += (size_t)snprintf(buf + k, n - k, ",%s", c->spec.axis[i].name);
    if (k < n)
        snprintf(buf + k, n - k, ",%s\n", result_cols);
}

static void fmt_num(char *buf, size_t n, double x)
{
    if (isnan(x))
        snprintf(buf, n, "nan");
    else if (isinf(x))
        snprintf(buf, n, x > 0 ? "inf" : "-inf");
    else
        snprintf(buf, n, "%.6g", x);
}

/* The row of run k. s: its CSV's summary (NULL when it left none); wall:
 * seconds (NAN: unknown, the field is empty); status: "ok", "diverged",
 * or how it failed. Returns the row's length. */
static size_t results_row(sweep_ctx *c, long k, const run_summary *s, double wall,
                          const char *status, char *buf, size_t n)
{
    int idx[SWEEP_MAX_AXES];
    run_facts rf = {0, 0, NAN};
    sweep_run_index(&c->spec, k, idx);
    run_parse(c, k, 0, &rf);
    char id[13], num[7][32];
    sweep_run_id(&c->spec, idx, id);
    size_t len = (size_t)snprintf(buf, n, "%s", id);
    for (int i = 0; i < c->spec.n_axes && len < n; i++)
        if (!is_seed_axis(&c->spec.axis[i]))
            len += (size_t)snprintf(buf + len, n - len, ",%s", c->spec.axis[i].v[idx[i]]);
    for (int j = 0; j < 7; j++)
        num[j][0] = 0;
    if (s) {
        double final = s->has_val ? s->val : s->train;
        snprintf(num[0], 32, "%ld", s->last_step);
        fmt_num(num[1], 32, s->train);
        if (s->has_val)
            fmt_num(num[2], 32, s->val);
        if (s->div_step)
            snprintf(num[3], 32, "%ld", s->div_step);
        /* stalled: the plateau rule (see SWEEPS in normscope(1)) */
        snprintf(num[4], 32, "%d", !s->div_step && !(final < rf.entropy - 0.1));
        fmt_num(num[5], 32, s->ratio_first);
        fmt_num(num[6], 32, s->ratio_last);
    }
    char w[32] = "";
    if (!isnan(wall))
        snprintf(w, sizeof w, "%.2f", wall);
    if (len < n)
        len += (size_t)snprintf(buf + len, n - len, ",%llu,%s,%s,%s,%s,%s,%s,%s,%s,%s\n",
                                (unsigned long long)rf.seed, num[0], num[1], num[2], num[3],
                                num[4], num[5], num[6], w, status);
    return len < n ? len : n - 1;
}

/* The status a run's CSV shows: diverged, ok (all its steps), or NULL
 * (it stopped short: interrupted, not finished). */
static const char *summary_status(sweep_ctx *c, long k, const run_summary *s)
{
    run_facts rf = {0, 0, NAN};
    run_parse(c, k, 0, &rf);
    if (s->div_step)
        return "diverged";
    return s->last_step >= rf.steps ? "ok" : NULL;
}

/* Append one row with one write(): O_APPEND puts it whole at the end, so
 * a sweep killed at any point leaves whole rows. */
static int results_append(const sweep_ctx *c, const char *row, size_t len)
{
    char path[4300];
    snprintf(path, sizeof path, "%s/results.csv", c->dir);
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0666);
    if (fd < 0)
        return -1;
    ssize_t w = write(fd, row, len);
    int r = close(fd);
    return w == (ssize_t)len && r == 0 ? 0 : -1;
}

/* The runs DIR/results.csv has rows for: done[k] = 1. Creates the file
 * with its header when it is missing. 0, or 1 after one line. */
static int results_load(sweep_ctx *c, unsigned char *done)
{
    char path[4300], header[4096];
    snprintf(path, sizeof path, "%s/results.csv", c->dir);
    FILE *f = fopen(path, "r");
    if (!f) {
        results_header(c, header, sizeof header);
        if (results_append(c, header, strlen(header)) != 0) {
            fprintf(stderr, "normscope: %s: %s\n", path, strerror(errno));
            return 1;
        }
        return 0;
    }
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
        long k = strlen(line) > 12 && line[12] == ',' ? ctx_find(c, line) : -1;
        if (k >= 0)
            done[k] = 1;
        if (k >= 0 && c->rows && !c->rows[k])
            c->rows[k] = strdup(line);
    }
    free(line);
    fclose(f);
    return 0;
}

/* ---- running the grid ---------------------------------------------------- */

typedef struct {
    pid_t pid;
    long k;
    double t0;
} slot;

/* Start run k: stdout to /dev/null, stderr to DIR/run-ID.log. An old CSV
 * of the run (an interrupted attempt) is removed first, so what is read
 * afterwards is this attempt's. Returns the pid, or -1. */
static pid_t run_spawn(const sweep_ctx *c, long k)
{
    run_args ra;
    char log[4300];
    if (run_args_make(c, k, &ra) != 0)
        return -1;
    unlink(ra.csv);
    snprintf(log, sizeof log, "%s/run-%s.log", c->dir, ra.id);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, log, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    pid_t pid;
    int r = posix_spawn(&pid, c->exe, &fa, NULL, ra.argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    free(ra.argv);
    return r == 0 ? pid : -1;
}

/* A child has ended: its row (also into row[SWEEP_ROW_MAX], "" when
 * none), unless it was interrupted. Returns 1 when it failed (no CSV, or
 * an exit other than 0 and 3), else 0. */
static int run_finish(sweep_ctx *c, long k, int wstatus, double wall, int *recorded, char *row)
{
    run_args ra;
    run_summary s;
    char why[32];
    *recorded = 0;
    row[0] = 0;
    if (run_args_make(c, k, &ra) != 0)
        return 1;
    int code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
    int have = (code == 0 || code == 3) && summary_read(ra.csv, &s) == 0;
    const char *status = have ? summary_status(c, k, &s) : NULL;
    size_t len = 0;
    if (have && status) {
        len = results_row(c, k, &s, wall, status, row, SWEEP_ROW_MAX);
    } else if (WIFSIGNALED(wstatus) || (code != 130 && !have)) {
        if (WIFSIGNALED(wstatus))
            snprintf(why, sizeof why, "signal %d", WTERMSIG(wstatus));
        else
            snprintf(why, sizeof why, "exit %d", code);
        len = results_row(c, k, NULL, wall, why, row, SWEEP_ROW_MAX);
    }
    if (code == 0) { /* a quiet run that went well leaves an empty log */
        char log[4300];
        snprintf(log, sizeof log, "%s/run-%s.log", c->dir, ra.id);
        struct stat st;
        if (stat(log, &st) == 0 && st.st_size == 0)
            unlink(log);
    }
    free(ra.argv);
    if (len && results_append(c, row, len) == 0)
        *recorded = 1;
    else
        row[0] = 0;
    return len && !have;
}

static void progress(const sweep_ctx *c, const sweep_watch *w, long done, long total,
                     int running, long failed, double t0, int final)
{
    if (c->quiet || w || !isatty(2))
        return;
    double t = nstime_now() - t0, eta = done ? t / done * (total - done) : 0;
    fprintf(stderr, "\rsweep: %ld/%ld runs done, %d running, %ld failed, ETA %d:%02d   %s",
            done, total, running, failed, (int)eta / 60, (int)eta % 60, final ? "\n" : "");
}

/* Stop now: a stop signal (headless), or the watcher says so. */
static int want_stop(const sweep_watch *w)
{
    return stopsig_requested || (w && w->stop(w->ctx));
}

/* Start runs in the free slots while there are runs to do. Returns how
 * many started; *failed = 1 when one could not be (then the sweep stops:
 * stopsig_requested). */
static int fill_slots(const sweep_ctx *c, const sweep_watch *w, slot *run, int jobs,
                      const long *todo, long n_todo, long *next, int *failed)
{
    int started = 0;
    for (int j = 0; j < jobs && *next < n_todo && !want_stop(w); j++) {
        if (run[j].pid != 0)
            continue;
        run[j].k = todo[(*next)++];
        run[j].t0 = nstime_now();
        run[j].pid = run_spawn(c, run[j].k);
        if (run[j].pid < 0) {
            fprintf(stderr, "normscope: cannot start %s: %s\n", c->exe, strerror(errno));
            run[j].pid = 0;
            stopsig_requested = 1;
            *failed = 1;
            break;
        }
        if (w)
            w->started(w->ctx, run[j].k, (long)run[j].pid);
        started++;
    }
    return started;
}

/* Ask every running child to stop (once). */
static void stop_runs(const slot *run, int jobs)
{
    for (int j = 0; j < jobs; j++)
        if (run[j].pid > 0)
            kill(run[j].pid, SIGTERM);
}

/* The next child that ended, or 0 when none has yet and a watcher needs
 * the thread back (it polls: its stop comes from another thread, not as
 * a signal), or -1 (errno EINTR: a stop signal). */
static pid_t wait_child(const sweep_watch *w, int *ws)
{
    if (!w)
        return waitpid(-1, ws, 0);
    pid_t p = waitpid(-1, ws, WNOHANG);
    if (p == 0)
        nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL); /* 20 ms */
    return p;
}

/* A child ended: its slot freed, its row recorded and told to w. */
static void reap(sweep_ctx *c, const sweep_watch *w, slot *run, int jobs, pid_t p, int ws,
                 long *finished, long *failed, int *n_running)
{
    char row[SWEEP_ROW_MAX];
    for (int j = 0; j < jobs; j++)
        if (run[j].pid == p) {
            int rec;
            *failed += run_finish(c, run[j].k, ws, nstime_now() - run[j].t0, &rec, row);
            *finished += rec;
            run[j].pid = 0;
            (*n_running)--;
            if (w)
                w->ended(w->ctx, run[j].k, row[0] ? row : NULL);
        }
}

/* Run the runs not done, jobs at a time; w (NULL: none) watches. Returns
 * the exit status. */
static int sweep_execute(sweep_ctx *c, const unsigned char *done, int jobs, const sweep_watch *w)
{
    long *todo = malloc((size_t)c->n_runs * sizeof *todo), n_todo = 0, next = 0;
    slot *run = calloc((size_t)jobs, sizeof *run);
    if (!todo || !run) {
        free(todo);
        free(run);
        fprintf(stderr, "normscope: out of memory\n");
        return 1;
    }
    for (long k = 0; k < c->n_runs; k++)
        if (!done[k])
            todo[n_todo++] = k;
    if (!c->quiet && !w)
        fprintf(stderr, "normscope: sweep %s: %ld runs, %ld to do, %d at a time\n", c->dir,
                c->n_runs, n_todo, jobs);
    if (!w) /* a watcher's front end has its own handlers */
        stopsig_catch();
    int n_running = 0, status = 0, signalled = 0;
    long finished = 0, failed = 0;
    double t0 = nstime_now();
    while (n_running > 0 || (next < n_todo && !want_stop(w))) {
        n_running += fill_slots(c, w, run, jobs, todo, n_todo, &next, &status);
        progress(c, w, finished, n_todo, n_running, failed, t0, 0);
        if (n_running == 0)
            break;
        int ws;
        pid_t p = wait_child(w, &ws);
        if (!signalled && want_stop(w)) {
            stop_runs(run, jobs);
            signalled = 1;
        }
        if (p > 0)
            reap(c, w, run, jobs, p, ws, &finished, &failed, &n_running);
        else if (p < 0 && errno != EINTR)
            break;
    }
    progress(c, w, finished, n_todo, 0, failed, t0, 1);
    free(todo);
    free(run);
    if (want_stop(w) && status == 0 && (signalled || next < n_todo)) {
        fprintf(stderr, "normscope: sweep interrupted: %ld of %ld runs recorded; run the same "
                        "command again to resume\n", finished, n_todo);
        return 130;
    }
    return status ? status : failed ? 1 : 0;
}

/* ---- what a watcher reads ------------------------------------------------- */

const sweep_spec *sweep_ctx_spec(const sweep_ctx *c) { return &c->spec; }
const char *sweep_ctx_dir(const sweep_ctx *c) { return c->dir; }

void sweep_run_csv(const sweep_spec *s, const char *dir, long k, char *path, size_t n)
{
    int idx[SWEEP_MAX_AXES];
    char id[13];
    sweep_run_index(s, k, idx);
    sweep_run_id(s, idx, id);
    snprintf(path, n, "%s/run-%s.csv", dir, id);
}

const char *sweep_ctx_row(const sweep_ctx *c, long k)
{
    return c->rows && k >= 0 && k < c->n_runs ? c->rows[k] : NULL;
}

int sweep_ctx_execute(sweep_ctx *c, const sweep_watch *w)
{
    return c->view_only ? 0 : sweep_execute(c, c->done, c->jobs, w);
}

/* ---- the text table: one line per cell, seeds folded ------------------- */

/* A cell: the runs that share every axis value but the seed. */
typedef struct {
    char *key;       /* the axis fields of its first row, comma-joined */
    int runs, diverged, stalled, failed;
    double sum[2], lo[2], hi[2]; /* train, val over runs with finite values */
    int n[2];
    double ratio[2];             /* summed over runs with a summary */
    int n_ratio;
} cell;

/* results.csv's columns: id, the axes, then result_cols. */
enum { RC_SEED, RC_STEPS, RC_TRAIN, RC_VAL, RC_DIV, RC_STALLED, RC_R1, RC_RN, RC_WALL, RC_STATUS,
       RC_N };

static void cell_add(cell *c, char **f)
{
    c->runs++;
    if (!strcmp(f[RC_STATUS], "diverged"))
        c->diverged++;
    else if (strcmp(f[RC_STATUS], "ok") != 0)
        c->failed++;
    c->stalled += !strcmp(f[RC_STALLED], "1");
    for (int j = 0; j < 2; j++) {
        double x = field_num(f[j ? RC_VAL : RC_TRAIN]);
        if (!isfinite(x))
            continue;
        c->lo[j] = c->n[j] && c->lo[j] < x ? c->lo[j] : x;
        c->hi[j] = c->n[j] && c->hi[j] > x ? c->hi[j] : x;
        c->sum[j] += x;
        c->n[j]++;
    }
    if (*f[RC_R1]) {
        c->ratio[0] += field_num(f[RC_R1]);
        c->ratio[1] += field_num(f[RC_RN]);
        c->n_ratio++;
    }
}

int sweep_row_parse(const sweep_spec *s, const char *row, sweep_result *r)
{
    char buf[SWEEP_ROW_MAX], *fl[SWEEP_MAX_AXES + 1 + RC_N];
    int n_axes = 0;
    for (int i = 0; i < s->n_axes; i++)
        n_axes += !is_seed_axis(&s->axis[i]);
    memset(r, 0, sizeof *r);
    snprintf(buf, sizeof buf, "%s", row);
    if (csv_split(buf, fl, n_axes + 1 + RC_N) != n_axes + 1 + RC_N)
        return -1;
    char **f = fl + 1 + n_axes;
    r->ok = !strcmp(f[RC_STATUS], "ok");
    r->diverged = !strcmp(f[RC_STATUS], "diverged");
    r->failed = !r->ok && !r->diverged;
    r->steps = strtol(f[RC_STEPS], NULL, 10);
    r->train = field_num(f[RC_TRAIN]);
    r->val = field_num(f[RC_VAL]);
    r->final = *f[RC_VAL] ? r->val : r->train;
    r->div_step = strtol(f[RC_DIV], NULL, 10);
    r->stalled = !strcmp(f[RC_STALLED], "1");
    return 0;
}

/* Numbers compare as numbers, anything else as text. */
static int cmp_field(const char *a, const char *b)
{
    char *ea, *eb;
    double x = strtod(a, &ea), y = strtod(b, &eb);
    if (ea != a && !*ea && eb != b && !*eb && x != y)
        return x < y ? -1 : 1;
    return strcmp(a, b);
}

static int cmp_cell(const void *x, const void *y)
{
    const char *a = ((const cell *)x)->key, *b = ((const cell *)y)->key;
    while (*a || *b) {
        size_t la = strcspn(a, ","), lb = strcspn(b, ",");
        char fa[SWEEP_VALUE_MAX], fb[SWEEP_VALUE_MAX];
        snprintf(fa, sizeof fa, "%.*s", (int)la, a);
        snprintf(fb, sizeof fb, "%.*s", (int)lb, b);
        int r = cmp_field(fa, fb);
        if (r)
            return r;
        a += la + (a[la] == ',');
        b += lb + (b[lb] == ',');
    }
    return 0;
}

/* "mean+-spread" (spread: half the range), or "-" without a value. */
static void fmt_stat(char *buf, size_t n, const cell *c, int j)
{
    if (!c->n[j])
        snprintf(buf, n, "-");
    else
        snprintf(buf, n, "%.3f+-%.3f", c->sum[j] / c->n[j], (c->hi[j] - c->lo[j]) / 2);
}

/* Print rows of strings with each column as wide as its widest entry. */
static void print_aligned(FILE *out, char **text, int rows, int cols)
{
    int w[64] = {0};
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < cols && j < 64; j++) {
            int l = (int)strlen(text[r * cols + j]);
            w[j] = l > w[j] ? l : w[j];
        }
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < cols && j < 64; j++)
            if (j + 1 < cols)
                fprintf(out, "%-*s  ", w[j], text[r * cols + j]);
            else
                fprintf(out, "%s\n", text[r * cols + j]);
}

/* The cells' lines: the header row, then one row per cell. */
static void table_print(FILE *out, char **names, const cell *cells, int n_cells, int n_axes)
{
    static const char *const tail[] = {"runs", "train", "val", "diverged", "stalled",
                                       "failed", "ratio@1", "ratio@end"};
    enum { W = SWEEP_VALUE_MAX };
    int cols = n_axes + 8, rows = n_cells + 1;
    char **text = calloc((size_t)rows * (size_t)cols, sizeof *text);
    char *store = malloc((size_t)rows * (size_t)cols * W);
    if (!text || !store) {
        free(text);
        free(store);
        return;
    }
    for (int i = 0; i < rows * cols; i++)
        text[i] = store + (size_t)i * W;
    for (int j = 0; j < cols; j++)
        snprintf(text[j], W, "%s", j < n_axes ? names[j] : tail[j - n_axes]);
    for (int r = 1; r < rows; r++) {
        const cell *c = &cells[r - 1];
        const char *p = c->key;
        for (int j = 0; j < n_axes; j++) {
            size_t l = strcspn(p, ",");
            snprintf(text[r * cols + j], W, "%.*s", (int)l, p);
            p += l + (p[l] == ',');
        }
        char **v = text + r * cols + n_axes;
        snprintf(v[0], W, "%d", c->runs);
        fmt_stat(v[1], W, c, 0);
        fmt_stat(v[2], W, c, 1);
        snprintf(v[3], W, "%d", c->diverged);
        snprintf(v[4], W, "%d", c->stalled);
        snprintf(v[5], W, "%d", c->failed);
        for (int j = 0; j < 2; j++)
            if (c->n_ratio)
                snprintf(v[6 + j], W, "%.3g", c->ratio[j] / c->n_ratio);
            else
                snprintf(v[6 + j], W, "-");
    }
    print_aligned(out, text, rows, cols);
    free(text);
    free(store);
}

/* The cell with this key, added when new. NULL: out of memory. */
static cell *cell_get(cell **cells, int *n, int *cap, const char *key)
{
    for (int i = 0; i < *n; i++)
        if (!strcmp((*cells)[i].key, key))
            return &(*cells)[i];
    if (*n == *cap) {
        int nc = *cap ? *cap * 2 : 64;
        cell *g = realloc(*cells, (size_t)nc * sizeof *g);
        if (!g)
            return NULL;
        *cells = g;
        *cap = nc;
    }
    cell *c = &(*cells)[*n];
    memset(c, 0, sizeof *c);
    if (!(c->key = strdup(key)))
        return NULL;
    (*n)++;
    return c;
}

/* Read results.csv and print its table. 0, or -1 (unreadable). */
static int table_from_results(const char *path, FILE *out)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char *line = NULL, *head = NULL, *names[SWEEP_MAX_AXES + 1], *fl[SWEEP_MAX_AXES + 1 + RC_N];
    size_t cap = 0;
    int n_axes = -1, n_cells = 0, cap_cells = 0;
    cell *cells = NULL;
    if (getline(&line, &cap, f) > 0 && (head = strdup(line)) != NULL) {
        int n = csv_split(head, fl, SWEEP_MAX_AXES + 1 + RC_N);
        for (int i = 1; i < n && n_axes < 0; i++)
            if (!strcmp(fl[i], "seed"))
                n_axes = i - 1;
        for (int i = 0; i < n_axes; i++)
            names[i] = fl[i + 1];
    }
    while (n_axes >= 0 && getline(&line, &cap, f) > 0) {
        if (csv_split(line, fl, n_axes + 1 + RC_N) != n_axes + 1 + RC_N)
            continue;
        char key[SWEEP_MAX_AXES * SWEEP_VALUE_MAX] = "";
        size_t k = 0;
        for (int i = 0; i < n_axes && k < sizeof key; i++)
            k += (size_t)snprintf(key + k, sizeof key - k, "%s%s", i ? "," : "", fl[1 + i]);
        cell *c = cell_get(&cells, &n_cells, &cap_cells, key);
        if (c)
            cell_add(c, fl + 1 + n_axes);
    }
    fclose(f);
    free(line);
    if (n_cells)
        qsort(cells, (size_t)n_cells, sizeof *cells, cmp_cell);
    if (n_axes >= 0)
        table_print(out, names, cells, n_cells, n_axes);
    for (int i = 0; i < n_cells; i++)
        free(cells[i].key);
    free(cells);
    free(head);
    return n_axes >= 0 ? 0 : -1;
}

/* ---- --list, --sweep-collect, and the entry point ------------------------ */

/* One word for sh: as is when plain, else in single quotes. */
static void put_word(FILE *out, const char *w)
{
    if (*w && strspn(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                        "_@%+=:,./-") == strlen(w)) {
        fputs(w, out);
        return;
    }
    fputc('\'', out);
    for (; *w; w++)
        fputs(*w == '\'' ? "'\\''" : (char[]){*w, 0}, out);
    fputc('\'', out);
}

/* One command line per run, in grid order (line k+1 is run k, for a Slurm
 * array's index). Each writes DIR/run-ID.csv; --sweep-collect makes the
 * rows. */
static int sweep_list(const sweep_ctx *c)
{
    for (long k = 0; k < c->n_runs; k++) {
        run_args ra;
        if (run_args_make(c, k, &ra) != 0) {
            fprintf(stderr, "normscope: out of memory\n");
            return 1;
        }
        for (int i = 0; i < ra.argc; i++) {
            if (i)
                fputc(' ', stdout);
            put_word(stdout, ra.argv[i]);
        }
        fputc('\n', stdout);
        free(ra.argv);
    }
    return fflush(stdout) == 0 ? 0 : 1;
}

static int results_print(const sweep_ctx *c)
{
    char path[4300];
    snprintf(path, sizeof path, "%s/results.csv", c->dir);
    if (table_from_results(path, stdout) != 0) {
        fprintf(stderr, "normscope: %s: cannot read the results\n", path);
        return 1;
    }
    return 0;
}

/* The old row of a run (from results.csv) and the wall time it holds. */
static double old_wall(const sweep_ctx *c, const char *row)
{
    char *copy = strdup(row), *fl[SWEEP_MAX_AXES + 1 + RC_N];
    int n_axes = 0;
    for (int i = 0; i < c->spec.n_axes; i++)
        n_axes += !is_seed_axis(&c->spec.axis[i]);
    double w = NAN;
    if (copy && csv_split(copy, fl, n_axes + 1 + RC_N) == n_axes + 1 + RC_N &&
        *fl[1 + n_axes + RC_WALL])
        w = field_num(fl[1 + n_axes + RC_WALL]);
    free(copy);
    return w;
}

/* Append n bytes to a growing buffer. 0, or -1 out of memory. */
static int buf_add(char **text, size_t *len, size_t *cap, const char *p, size_t n)
{
    if (*len + n + 1 > *cap) {
        size_t nc = 2 * *cap + n + 1;
        char *g = realloc(*text, nc);
        if (!g)
            return -1;
        *text = g;
        *cap = nc;
    }
    memcpy(*text + *len, p, n);
    *len += n;
    return 0;
}

/* results.csv's rows by run (NULL: none), read before it is rebuilt; rows
 * of runs outside this grid (an earlier sweep over other values of the
 * same axes) go to *others, kept as they are. */
static char **old_rows(const sweep_ctx *c, char **others, size_t *n_others, size_t *cap_others)
{
    char path[4300], *line = NULL;
    size_t cap = 0;
    char **rows = calloc((size_t)c->n_runs, sizeof *rows);
    snprintf(path, sizeof path, "%s/results.csv", c->dir);
    FILE *f = rows ? fopen(path, "r") : NULL;
    for (long nr = 0; f && getline(&line, &cap, f) > 0; nr++) {
        size_t n = strlen(line);
        long k = nr > 0 && n > 12 && line[12] == ',' ? ctx_find(c, line) : -1;
        if (k >= 0 && !rows[k])
            rows[k] = strdup(line);
        else if (k < 0 && nr > 0 && line[n - 1] == '\n')
            buf_add(others, n_others, cap_others, line, n);
    }
    if (f)
        fclose(f);
    free(line);
    return rows;
}

/* Rebuild results.csv from the runs' CSVs (in grid order); a run without
 * a finished CSV keeps the row it had (a crash's). Written atomically. */
static int collect_write(sweep_ctx *c)
{
    char header[4096], path[4300], err[ATOMIC_PATH_MAX + 128], *others = NULL;
    size_t cap = 1 << 16, len = 0, n_others = 0, cap_others = 0;
    char **old = old_rows(c, &others, &n_others, &cap_others), *text = malloc(cap);
    if (!old || !text) {
        free(old);
        free(text);
        free(others);
        fprintf(stderr, "normscope: out of memory\n");
        return 1;
    }
    results_header(c, header, sizeof header);
    int bad = buf_add(&text, &len, &cap, header, strlen(header));
    for (long k = 0; k < c->n_runs && !bad; k++) {
        run_args ra;
        run_summary s;
        char row[8192];
        size_t n = 0;
        if ((bad = run_args_make(c, k, &ra)) != 0)
            break;
        const char *st = summary_read(ra.csv, &s) == 0 ? summary_status(c, k, &s) : NULL;
        if (st)
            n = results_row(c, k, &s, old[k] ? old_wall(c, old[k]) : NAN, st, row, sizeof row);
        else if (old[k])
            n = (size_t)snprintf(row, sizeof row, "%s", old[k]);
        free(ra.argv);
        bad = buf_add(&text, &len, &cap, row, n);
    }
    if (!bad && n_others)
        bad = buf_add(&text, &len, &cap, others, n_others);
    for (long k = 0; k < c->n_runs; k++)
        free(old[k]);
    free(others);
    free(old);
    snprintf(path, sizeof path, "%s/results.csv", c->dir);
    int r = bad ? -1 : atomic_write_file(path, text, len, err, sizeof err);
    if (bad)
        fprintf(stderr, "normscope: --sweep-collect: out of memory (results.csv left as it was)\n");
    else if (r)
        fprintf(stderr, "normscope: --sweep-collect %s\n", err);
    free(text);
    return r ? 1 : 0;
}

/* This binary, by its absolute path: the children run it, and --list's
 * lines name it for another machine with the same file system. */
static void find_exe(sweep_ctx *c, const char *argv0)
{
    ssize_t n = readlink("/proc/self/exe", c->exe, sizeof c->exe - 1);
    if (n > 0)
        c->exe[n] = 0;
    else
        snprintf(c->exe, sizeof c->exe, "%s", argv0);
}

/* Parse and check everything (the spec, every run's flags, the data,
 * DIR) before anything is written. 0, or 2 after one line. */
static int ctx_prepare(sweep_ctx *c, const char *spec, int yes)
{
    char err[512];
    if (strlen(spec) >= sizeof c->spec_text) {
        fprintf(stderr, "normscope: --sweep: SPEC longer than %zu bytes\n",
                sizeof c->spec_text - 1);
        return 2;
    }
    snprintf(c->spec_text, sizeof c->spec_text, "%s", spec);
    for (char *p = c->spec_text; *p; p++)
        if (*p == '\n' || *p == '\r' || *p == '\t')
            *p = ' ';
    if (sweep_spec_parse(spec, &c->spec, err, sizeof err) != 0) {
        fprintf(stderr, "normscope: %s\n", err);
        return 2;
    }
    int r = ctx_check_axes(c);
    if (!r)
        r = ctx_expand(c, yes);
    if (!r)
        r = dir_check(c);
    return r;
}

/* Flags that would make every run write the same file, or a second run. */
static int refuse_common(const cli_opts *o)
{
    const char *flag = o->csv ? "csv" : o->jsonl ? "jsonl" : o->save ? "save"
                       : o->compare ? "compare" : o->lesson ? "lesson" : NULL;
    if (!flag)
        return 0;
    fprintf(stderr, "normscope: --%s cannot be used with --sweep (each run writes "
                    "DIR/run-ID.csv; vary settings with SPEC)\n", flag);
    return 2;
}

/* A live view: asked for (not --headless) and on a terminal. */
static int live_wanted(const cli_opts *o, sweep_live_fn live)
{
    return live && !o->headless && isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
}

/* What results.csv holds: done[k], and with rows (for a view) the rows.
 * 0, or 1 after one line. */
static int ctx_results(sweep_ctx *c, int rows)
{
    c->done = calloc((size_t)c->n_runs, 1);
    c->rows = rows ? calloc((size_t)c->n_runs, sizeof *c->rows) : NULL;
    if (!c->done || (rows && !c->rows)) {
        fprintf(stderr, "normscope: out of memory\n");
        return 1;
    }
    return results_load(c, c->done);
}

static int sweep_go(sweep_ctx *c, const cli_opts *o, int argc, char **argv, sweep_live_fn live,
                    void *live_arg)
{
    int r = refuse_common(o);
    if (!r)
        r = ctx_common(c, argc, argv);
    if (!r && o->sweep_out) {
        snprintf(c->dir, sizeof c->dir, "%s", o->sweep_out);
    } else if (!r) {
        time_t t = time(NULL);
        strftime(c->dir, sizeof c->dir, "sweep-%Y%m%d-%H%M%S", localtime(&t));
    }
    if (!r)
        r = ctx_prepare(c, o->sweep, o->yes);
    if (!r)
        r = dir_write_spec(c);
    if (r || o->list)
        return r ? r : sweep_list(c);
    int show = live_wanted(o, live);
    r = ctx_results(c, show);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    c->jobs = o->jobs ? o->jobs : cores > 0 ? (int)cores : 1;
    if (!r)
        r = show ? live(c, live_arg) : sweep_execute(c, c->done, c->jobs, NULL);
    /* after a live view too: the terminal keeps the table (as htop's) */
    if ((r != 130 || show) && results_print(c) != 0)
        r = 1;
    return r;
}

/* sweep.spec's spec and common flags; the strings are owned by *store. */
static int collect_read_spec(sweep_ctx *c, char **store, const char **spec)
{
    char path[4300];
    snprintf(path, sizeof path, "%s/sweep.spec", c->dir);
    char *text = *store = read_text(path, SPEC_FILE_MAX);
    if (!text || strncmp(text, "normscope sweep 1\n", 18) != 0) {
        fprintf(stderr, "normscope: --sweep-collect %s: %s\n", path,
                text ? "not a normscope sweep.spec" : strerror(errno));
        return 2;
    }
    c->common = calloc(strlen(text) / 5 + 1, sizeof *c->common);
    if (!c->common) {
        fprintf(stderr, "normscope: out of memory\n");
        return 2;
    }
    *spec = "";
    for (char *p = text; *p;) {
        size_t len = strcspn(p, "\n");
        int more = p[len] == '\n';
        p[len] = 0;
        if (!strncmp(p, "spec: ", 6))
            *spec = p + 6;
        else if (!strncmp(p, "arg: ", 5))
            c->common[c->n_common++] = p + 5;
        p += len + more;
    }
    return 0;
}

/* Rebuild DIR/results.csv, show it (live, on a terminal: the view of a
 * sweep with nothing left to run), print the table. */
static int sweep_collect(sweep_ctx *c, const cli_opts *o, sweep_live_fn live, void *live_arg)
{
    char *store = NULL;
    const char *spec = NULL;
    snprintf(c->dir, sizeof c->dir, "%s", o->sweep_collect);
    int r = collect_read_spec(c, &store, &spec);
    if (!r)
        r = ctx_prepare(c, spec, 1);
    if (!r)
        r = collect_write(c);
    if (!r && live_wanted(o, live)) {
        c->view_only = 1;
        r = ctx_results(c, 1);
        if (!r)
            r = live(c, live_arg);
    }
    if (!r)
        r = results_print(c);
    free(store);
    return r;
}

int sweep_requested(const cli_opts *o)
{
    return o->sweep || o->sweep_collect || o->sweep_out || o->jobs || o->list || o->yes;
}

int sweep_main(const cli_opts *o, int argc, char **argv, sweep_live_fn live, void *live_arg)
{
    sweep_ctx *c = calloc(1, sizeof *c);
    if (!c) {
        fprintf(stderr, "normscope: out of memory\n");
        return 1;
    }
    int r;
    find_exe(c, argv[0]);
    c->quiet = o->quiet;
    if (o->sweep_collect && (o->sweep || o->sweep_out || o->list)) {
        fprintf(stderr, "normscope: --sweep-collect DIR reads DIR/sweep.spec: it takes no "
                        "--sweep, --sweep-out or --list\n");
        r = 2;
    } else if (o->sweep_collect) {
        r = sweep_collect(c, o, live, live_arg);
    } else if (!o->sweep) {
        fprintf(stderr, "normscope: --sweep-out, --jobs, --list and --yes go with --sweep SPEC\n");
        r = 2;
    } else {
        r = sweep_go(c, o, argc, argv, live, live_arg);
    }
    ctx_free(c);
    free(c);
    return r;
}
