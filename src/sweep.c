/* sweep.c - --sweep SPEC: a grid of headless runs; --list prints the runs
 * as command lines for other schedulers; --sweep-collect rebuilds the
 * results from the runs' CSVs. This file holds the sweep itself: its
 * flags, every run's command line checked by the flag parser, its
 * directory (DIR/sweep.spec says which sweep it holds), --list,
 * --sweep-collect and the entry point.
 *
 * Every run's settings go through cli_parse, so a sweep accepts exactly
 * what the command line accepts, with its messages.
 * Not here: the SPEC grammar (sweep_spec.c), a run's summary and
 * results.csv (sweep_results.c), spawning and reaping (sweep_run.c),
 * training, the live view of a grid (tui_sweep.c, through a sweep_watch).
 */
#define _GNU_SOURCE /* getline */
#include "sweep_int.h"

#include "atomicio.h"
#include "nstext.h"
#include "cli.h"
#include "csv.h"
#include "settings.h"
#include "sysdep.h"

#include <ctype.h>
#include <dirent.h>
#include <sys/file.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <limits.h>

/* macOS has no HOST_NAME_MAX (its hostnames are at most 255 bytes too) */
#ifndef HOST_NAME_MAX
#define HOST_NAME_MAX 255
#endif

/* ---- one sweep: its settings, directory and runs ----------------------- */

/* Flags that belong to the sweep itself, with whether they take a value:
 * they are not passed to the runs. --headless and --quiet: the runs get
 * them anyway (so a resume without -q is the same sweep). */
static const struct {
    const char *name;
    int value;
} own_flags[] = {{"sweep", 1}, {"sweep-out", 1}, {"sweep-collect", 1}, {"jobs", 1},
                 {"list", 0},  {"list-range", 1}, {"retry", 1},        {"yes", 0},
                 {"per-seed", 0}, {"loss-at", 1},
                 {"headless", 0}, {"quiet", 0}};
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

/* An axis that a common flag sets too (--sweep 'lr=1e-2' --lr 1e-3): one
 * of the two would be dropped without a word, so both are refused. The
 * common flags are parsed as every run's are, so -L4, -L 4 and --layers 4
 * are one flag. 0, or 2 after one line. */
static int ctx_axis_given(const sweep_ctx *c)
{
    char **argv = calloc((size_t)c->n_common + 2, sizeof *argv);
    FILE *quiet = fopen("/dev/null", "w");
    cli_opts co;
    int r = 0;
    if (argv && quiet) {
        argv[0] = "normscope";
        for (int i = 0; i < c->n_common; i++)
            argv[i + 1] = (char *)c->common[i];
        /* a flag the parser refuses is the runs' to report, with its reason */
        int parsed = cli_parse(&co, c->n_common + 1, argv, quiet, quiet) == 0;
        for (int i = 0; parsed && !r && i < c->spec.n_axes; i++)
            if (settings_find(c->spec.axis[i].name, strlen(c->spec.axis[i].name)) &&
                cli_given(&co, c->spec.axis[i].name)) {
                fprintf(stderr, "normscope: --sweep: axis '%s' and the flag --%s set the same "
                                "setting: give it in SPEC or as a flag, not both\n",
                        c->spec.axis[i].name, c->spec.axis[i].name);
                r = 2;
            }
    }
    if (quiet)
        fclose(quiet);
    free(argv);
    return r;
}

/* Axis names the sweep sets itself. */
static int ctx_check_axes(const sweep_ctx *c)
{
    if (ctx_axis_given(c))
        return 2;
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

int sweep_args_make(const sweep_ctx *c, long k, sweep_args *r)
{
    int idx[SWEEP_MAX_AXES];
    sweep_spec_run_index(&c->spec, k, idx);
    sweep_spec_run_id(&c->spec, idx, r->id);
    sweep_spec_run_csv(&c->spec, c->dir, k, r->csv, sizeof r->csv);
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
    return 0;
}

/* A flag (a settings row) that does nothing in some of the grid's runs
 * (the table's "applies"): in how many, the first one's ID and its line.
 * The runs are --quiet children: said once here, or nobody sees it. */
struct sweep_inapp {
    long runs;
    int verdict; /* 2: refused in a run */
    char first_id[13];
    char line[400];
};

typedef struct {
    struct sweep_inapp *rows;
    const char *id;
} inapp_run;

static void inapp_add(void *ctx, int row, int verdict, const char *line)
{
    inapp_run *ir = ctx;
    struct sweep_inapp *a = &ir->rows[row];
    if (!a->runs++) {
        snprintf(a->first_id, sizeof a->first_id, "%s", ir->id);
        snprintf(a->line, sizeof a->line, "%s", line);
    }
    if (verdict > a->verdict)
        a->verdict = verdict;
}

/* Say each flag that does nothing, once: 0, or 2 when a run refuses one
 * (its child would exit 2 at its start). */
static int inapp_report(const sweep_ctx *c)
{
    for (int i = 0; c->inapp && i < settings_count(); i++) {
        const struct sweep_inapp *a = &c->inapp[i];
        if (!a->runs)
            continue;
        if (a->verdict == 2) {
            fprintf(stderr, "normscope: --sweep: run %s: %s\n", a->first_id, a->line);
            return 2;
        }
        if (a->runs == c->n_runs)
            fprintf(stderr, "normscope: warning: --sweep: in every run, %s\n", a->line);
        else
            fprintf(stderr, "normscope: warning: --sweep: in %ld of %ld runs (%s first), %s\n",
                    a->runs, c->n_runs, a->first_id, a->line);
    }
    return 0;
}

/* What a row says of a run's settings: every setting as parsed, its
 * files, its command line. */
static void facts_fill(sweep_facts *f, const cli_opts *ro, const sweep_args *ra)
{
    size_t n = 0;
    f->seed = ro->cfg.seed;
    f->steps = ro->cfg.steps;
    f->cfg = ro->cfg;
    snprintf(f->data, sizeof f->data, "%s", ro->data ? ro->data : "");
    snprintf(f->script, sizeof f->script, "%s", ro->script ? ro->script : "");
    snprintf(f->load, sizeof f->load, "%s", ro->load ? ro->load : "");
    f->command[0] = 0;
    for (int i = 0; i < ra->argc && n < sizeof f->command; i++)
        n += (size_t)snprintf(f->command + n, sizeof f->command - n, "%s%s", i ? " " : "",
                              ra->argv[i]);
}

int sweep_run_parse(sweep_ctx *c, long k, int check, sweep_facts *f)
{
    sweep_args ra;
    cli_opts ro;
    char err[512];
    if (sweep_args_make(c, k, &ra) != 0) {
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
    if (!r && check && c->inapp && !ro.load) { /* a resumed run's settings are its checkpoint's */
        inapp_run ir = {c->inapp, ra.id};
        cli_each_inapplicable(&ro, &ro.cfg, inapp_add, &ir);
    }
    if (!r && f)
        facts_fill(f, &ro, &ra);
    free(ra.argv);
    return r;
}

static int cmp_key(const void *x, const void *y)
{
    return strcmp(((const sweep_key *)x)->id, ((const sweep_key *)y)->id);
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
        if (sweep_run_parse(c, k, 1, NULL) != 0)
            return 2;
        sweep_spec_run_index(&c->spec, k, idx);
        sweep_spec_run_id(&c->spec, idx, c->keys[k].id);
        c->keys[k].k = k;
    }
    if (inapp_report(c) != 0)
        return 2;
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
    sweep_key key;
    snprintf(key.id, sizeof key.id, "%.12s", id);
    const sweep_key *hit = bsearch(&key, c->keys, (size_t)c->n_runs, sizeof key, cmp_key);
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
    free(c->failed);
    free(c->inapp);
    if (c->lock_fd >= 0)
        close(c->lock_fd); /* the lock goes with it */
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

/* sweep.spec minus its "spec:" and "loss-at:" lines and first line: the
 * identity (--loss-at is checked against results.csv: loss_at_check). */
static void file_identity(const char *text, char *buf, size_t n)
{
    size_t k = 0;
    const char *p = strchr(text, '\n');
    buf[0] = 0;
    for (p = p ? p + 1 : text + strlen(text); *p;) {
        size_t len = strcspn(p, "\n");
        if (strncmp(p, "spec: ", 6) != 0 && strncmp(p, "loss-at: ", 9) != 0 && k < n)
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
        while (d && (e = readdir(d))) /* a lock left by a sweep killed before sweep.spec */
            empty &= !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
                     !strcmp(e->d_name, "sweep.lock");
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

/* Make DIR (a missing parent is bad input: 2). 0, or 2 after one line. */
static int dir_make(const sweep_ctx *c)
{
    if (mkdir(c->dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "normscope: --sweep-out %s: %s\n", c->dir, strerror(errno));
        return 2;
    }
    return 0;
}

/* Hold DIR/sweep.lock for as long as this process lives: flock, so the
 * kernel releases it when the holder dies (kill -9 included), and two
 * sweeps never write one directory. The file holds the holder's pid, for
 * the message. 0, or 1 after one line. */
/* Who holds a sweep's lock, from the text its holder wrote, "PID UID
 * HOST": "pid 123 of alice on node7" (or what of it is there: an older
 * normscope wrote the PID alone; "unknown" when nothing). */
static void lock_holder(int fd, char *out, size_t n)
{
    char text[128];
    ssize_t got = pread(fd, text, sizeof text - 1, 0);
    text[got > 0 ? got : 0] = 0;
    long pid = 0, uid = -1;
    char host[64] = "";
    int k = sscanf(text, "%ld %ld %63s", &pid, &uid, host);
    if (k < 1 || pid <= 0) {
        snprintf(out, n, "unknown");
        return;
    }
    char who[64] = "";
    const struct passwd *pw = k >= 2 && uid >= 0 ? getpwuid((uid_t)uid) : NULL;
    if (pw)
        snprintf(who, sizeof who, " of %.40s", pw->pw_name);
    else if (k >= 2 && uid >= 0)
        snprintf(who, sizeof who, " of uid %ld", uid);
    char esc[80] = "";
    if (k >= 3)
        nstext_escape_str(host, esc, sizeof esc);
    snprintf(out, n, "pid %ld%s%s%s", pid, who, k >= 3 ? " on " : "", esc);
}

/* DIR/sweep.lock, held (flock) while this sweep runs: one sweep a
 * directory. The file is 0644, so another user's sweep still takes the
 * lock (read-only) and learns who holds it; it says PID, user and host,
 * as a PID alone means nothing to a user on another node. */
static int dir_lock(sweep_ctx *c, const char *flag)
{
    char path[4300], line[128];
    snprintf(path, sizeof path, "%s/sweep.lock", c->dir);
    int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 && errno == EACCES)
        fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "normscope: %s %s: %s: %s\n", flag, c->dir, path, strerror(errno));
        return 1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        lock_holder(fd, line, sizeof line);
        fprintf(stderr, "normscope: %s %s: another sweep (%s) is using this directory; wait "
                        "for it or stop it\n", flag, c->dir, line);
        close(fd);
        return 1;
    }
    char host[HOST_NAME_MAX + 1] = "";
    if (gethostname(host, sizeof host - 1) != 0 || !host[0])
        snprintf(host, sizeof host, "?");
    int n = snprintf(line, sizeof line, "%ld %ld %.60s\n", (long)getpid(), (long)geteuid(), host);
    if (ftruncate(fd, 0) != 0 || pwrite(fd, line, (size_t)n, 0) != n)
        fprintf(stderr, "normscope: %s: %s (the lock holds; only its holder is not written)\n",
                path, strerror(errno));
    c->lock_fd = fd;
    return 0;
}

/* Write DIR/sweep.spec (atomically). 0, or 1 after one line. */
static int dir_write_spec(const sweep_ctx *c)
{
    char path[4300], err[ATOMIC_PATH_MAX + 128];
    char *text = malloc(SPEC_FILE_MAX);
    if (!text) {
        fprintf(stderr, "normscope: out of memory\n");
        return 1;
    }
    char at[SWEEP_MAX_LOSS_AT * 12];
    sweep_spec_loss_at_text(&c->spec, at, sizeof at);
    int k = snprintf(text, SPEC_FILE_MAX, "normscope sweep 1\nspec: %s\n%s%s%s", c->spec_text,
                     at[0] ? "loss-at: " : "", at, at[0] ? "\n" : "");
    spec_identity(c, text + k, SPEC_FILE_MAX - (size_t)k);
    snprintf(path, sizeof path, "%s/sweep.spec", c->dir);
    int r = atomicio_write_file(path, text, strlen(text), err, sizeof err);
    if (r)
        fprintf(stderr, "normscope: --sweep-out %s\n", err);
    free(text);
    return r ? 1 : 0;
}

/* ---- DIR/results.csv: what it holds ---------------------------------------- */

/* Is this results.csv row a failed run's (exit N, signal N)? */
static int row_failed(const sweep_ctx *c, const char *row)
{
    sweep_result r;
    return sweep_row_parse(&c->spec, row, &r) == 0 && r.failed;
}

/* The runs DIR/results.csv has rows for: done[k] = 1, and failed[k] = 1
 * when that row records a failure. Creates the file with its header when
 * it is missing. 0, or 1 after one line. */
static int results_load(sweep_ctx *c)
{
    char path[4300], header[4096];
    snprintf(path, sizeof path, "%s/results.csv", c->dir);
    FILE *f = fopen(path, "r");
    if (!f) {
        sweep_results_header(&c->spec, header, sizeof header);
        if (sweep_results_append(c->dir, header, strlen(header)) != 0) {
            fprintf(stderr, "normscope: %s: %s\n", path, strerror(errno));
            return 1;
        }
        return 0;
    }
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
        long k = strlen(line) > 12 && line[12] == ',' ? ctx_find(c, line) : -1;
        if (k >= 0 && !c->done[k])
            c->failed[k] = (unsigned char)row_failed(c, line);
        if (k >= 0)
            c->done[k] = 1;
        if (k >= 0 && c->rows && !c->rows[k])
            c->rows[k] = strdup(line);
    }
    free(line);
    fclose(f);
    return 0;
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

/* --retry failed: the failed runs' rows leave results.csv (rewritten
 * atomically, under the lock), so that they run again and their new rows
 * are the only ones. 0, or 1 after one line. */
static int results_drop_failed(sweep_ctx *c)
{
    char path[4300], err[ATOMIC_PATH_MAX + 128], *line = NULL, *text = NULL;
    size_t cap = 0, len = 0, tcap = 0;
    long n = 0;
    for (long k = 0; k < c->n_runs; k++)
        n += c->failed[k];
    if (n == 0)
        return 0;
    snprintf(path, sizeof path, "%s/results.csv", c->dir);
    FILE *f = fopen(path, "r");
    int bad = !f;
    for (long nr = 0; f && !bad && getline(&line, &cap, f) > 0; nr++) {
        long k = nr > 0 && strlen(line) > 12 && line[12] == ',' ? ctx_find(c, line) : -1;
        if (k < 0 || !c->failed[k])
            bad = buf_add(&text, &len, &tcap, line, strlen(line));
    }
    if (f)
        fclose(f);
    free(line);
    int r = bad ? -1 : atomicio_write_file(path, text ? text : "", len, err, sizeof err);
    free(text);
    if (r) {
        fprintf(stderr, "normscope: --retry: %s\n", bad ? "cannot rewrite results.csv" : err);
        return 1;
    }
    for (long k = 0; k < c->n_runs; k++)
        if (c->failed[k]) {
            c->done[k] = c->failed[k] = 0;
            if (c->rows) {
                free(c->rows[k]);
                c->rows[k] = NULL;
            }
        }
    if (!c->quiet)
        fprintf(stderr, "normscope: --retry failed: %ld run%s to run again\n", n, n == 1 ? "" : "s");
    return 0;
}

/* --loss-at (text: NULL none) into the spec. 0, or 2 after one line. */
static int ctx_loss_at(sweep_ctx *c, const char *text)
{
    char err[512];
    if (text && sweep_spec_loss_at_parse(text, &c->spec, err, sizeof err) != 0) {
        fprintf(stderr, "normscope: %s\n", err);
        return 2;
    }
    return 0;
}

/* The --loss-at steps of the header of DIR/results.csv into at (""
 * none). 0, or -1 when there is no such file or it is not a results.csv
 * (nothing to keep consistent). */
static int results_loss_at(const sweep_ctx *c, char *at, size_t n)
{
    char path[4300], *line = NULL, *f[SWEEP_MAX_FIELDS + 1];
    const char *missing;
    size_t cap = 0;
    sweep_cols cols;
    sweep_spec steps = {.n_axes = 0};
    snprintf(path, sizeof path, "%s/results.csv", c->dir);
    FILE *fp = fopen(path, "r");
    int nf = fp && getline(&line, &cap, fp) > 0 ? csv_split(line, f, SWEEP_MAX_FIELDS) : 0;
    int r = nf > 0 && nf <= SWEEP_MAX_FIELDS && sweep_cols_find(&cols, f, nf, &missing) == 0
                ? 0 : -1;
    if (fp)
        fclose(fp);
    free(line);
    steps.n_loss_at = r == 0 ? cols.n_at : 0;
    memcpy(steps.loss_at, cols.at_step, (size_t)steps.n_loss_at * sizeof *steps.loss_at);
    sweep_spec_loss_at_text(&steps, at, n);
    return r;
}

/* results.csv's header has the loss_at_N columns of this sweep's
 * --loss-at (rows are appended or rebuilt to the header's columns):
 * else 2 after one line naming both and what to do. flag: "--sweep-out"
 * or "--sweep-collect". */
static int loss_at_check(const sweep_ctx *c, const char *flag)
{
    char have[SWEEP_MAX_LOSS_AT * 12], want[SWEEP_MAX_LOSS_AT * 12];
    if (results_loss_at(c, have, sizeof have) != 0)
        return 0;
    sweep_spec_loss_at_text(&c->spec, want, sizeof want);
    if (!strcmp(have, want))
        return 0;
    const char *h = have[0] ? "--loss-at " : "no --loss-at";
    const char *w = want[0] ? "--loss-at " : "no --loss-at";
    fprintf(stderr, "normscope: %s %s: its results.csv has the columns of %s%s, not of %s%s; "
                    "give %s%s, or move results.csv aside and --sweep-collect %s%s%s rebuilds "
                    "it from the runs' CSVs\n", flag, c->dir, h, have, w, want, h, have, c->dir,
            want[0] ? " --loss-at " : "", want);
    return 2;
}

/* ---- what a watcher reads ------------------------------------------------- */

const sweep_spec *sweep_ctx_spec(const sweep_ctx *c) { return &c->spec; }
const char *sweep_ctx_dir(const sweep_ctx *c) { return c->dir; }


const char *sweep_ctx_row(const sweep_ctx *c, long k)
{
    return c->rows && k >= 0 && k < c->n_runs ? c->rows[k] : NULL;
}

int sweep_ctx_execute(sweep_ctx *c, const sweep_watch *w)
{
    return c->view_only ? 0 : sweep_execute(c, c->done, c->jobs, w);
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

/* --list-range A..B: lines A to B of the list, 1-based, both included
 * (B past the end: to the end). 0, or 2 after one line. */
static int list_range_parse(sweep_ctx *c, const char *text)
{
    char *end, *dots = text ? strstr(text, "..") : NULL;
    c->list_lo = 1;
    c->list_hi = SWEEP_MAX_RUNS;
    if (!text)
        return 0;
    errno = 0;
    long lo = dots ? strtol(text, &end, 10) : 0, hi = 0;
    int ok = dots && end == dots && isdigit((unsigned char)text[0]) &&
             isdigit((unsigned char)dots[2]);
    if (ok) {
        hi = strtol(dots + 2, &end, 10);
        ok = !*end && errno != ERANGE && lo >= 1 && lo <= hi;
    }
    if (!ok) {
        fprintf(stderr, "normscope: --list-range '%s': expected A..B, lines of the list with "
                        "1 <= A <= B (e.g. 1..1000, 1001..2000)\n", text);
        return 2;
    }
    c->list_lo = lo;
    c->list_hi = hi;
    return 0;
}

/* Run k's command line, as sh reads it, then " # note" when note is not
 * NULL. 0, or 1 after one line. */
static int list_line(const sweep_ctx *c, long k, const char *note, FILE *out)
{
    sweep_args ra;
    if (sweep_args_make(c, k, &ra) != 0) {
        fprintf(stderr, "normscope: out of memory\n");
        return 1;
    }
    for (int i = 0; i < ra.argc; i++) {
        if (i)
            fputc(' ', out);
        put_word(out, ra.argv[i]);
    }
    fprintf(out, "%s%s\n", note ? "  # " : "", note ? note : "");
    free(ra.argv);
    return 0;
}

/* One command line per run, in grid order, of the runs pick[k] (NULL:
 * every run): line i (1-based) is the i-th of them, for a job array's
 * index; only lines --list-range allows. Each writes DIR/run-ID.csv;
 * --sweep-collect makes the rows. 0, or 1 after one line. */
static int sweep_list(const sweep_ctx *c, const unsigned char *pick, FILE *out)
{
    long line = 0;
    for (long k = 0; k < c->n_runs && line < c->list_hi; k++) {
        if (pick && !pick[k])
            continue;
        if (++line >= c->list_lo && list_line(c, k, NULL, out) != 0)
            return 1;
    }
    return fflush(out) == 0 ? 0 : 1;
}

/* Is this ID one of the grid's runs (the table shows only those)? */
static int ctx_has(void *ctx, const char *id) { return ctx_find(ctx, id) >= 0; }

/* Print the table of the grid's runs (a line per cell, or with
 * --per-seed per run), and write the cells' as DIR/summary.csv
 * (atomically). 0, or 1 after one line. */
static int results_print(const sweep_ctx *c)
{
    char path[4300], sum[4300], err[ATOMIC_PATH_MAX + 128], *text = NULL;
    size_t len = 0;
    FILE *csv = open_memstream(&text, &len);
    sweep_table_opts cells = {0, ctx_has, (void *)c, csv}, runs = {1, ctx_has, (void *)c, NULL};
    snprintf(path, sizeof path, "%s/results.csv", c->dir);
    snprintf(sum, sizeof sum, "%s/summary.csv", c->dir);
    int r = sweep_table_print(path, c->per_seed ? NULL : stdout, &cells);
    if (!r && c->per_seed)
        r = sweep_table_print(path, stdout, &runs);
    if (csv)
        fclose(csv);
    if (r != 0)
        fprintf(stderr, "normscope: %s: cannot read the results\n", path);
    else if (text && atomicio_write_file(sum, text, len, err, sizeof err) != 0)
        fprintf(stderr, "normscope: %s\n", err);
    else
        r = fflush(stdout) == 0 ? 0 : -1;
    free(text);
    return r ? 1 : 0;
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

enum { COLLECT_SHOW = 20 }; /* not-complete runs listed on standard error */

static const char *const run_state_name[RUN_STATES] = {"complete", "missing", "truncated",
                                                       "running",  "corrupt", "failed"};

/* tmp[k] = 1 when DIR holds run k's CSV in the making (its atomicio temp
 * file: a run killed, or cancelled, before it ended), 2 when its writer
 * still lives (a task of another scheduler still running on this machine)
 * or ran on another machine or as another user (whose PID this machine
 * cannot judge). One pass over DIR. */
static void runs_in_making(const sweep_ctx *c, unsigned char *tmp)
{
    DIR *d = opendir(c->dir);
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (!strncmp(e->d_name, "run-", 4) && strlen(e->d_name) > 4 + 12 + 9 &&
            !strncmp(e->d_name + 16, ".csv.tmp.", 9)) {
            char base[4 + 12 + 4 + 1];
            long pid;
            int ours;
            snprintf(base, sizeof base, "%.20s", e->d_name);
            if (!atomicio_tmp_parse(e->d_name, base, &pid, &ours))
                continue;
            long k = ctx_find(c, e->d_name + 4);
            int alive = !ours || kill((pid_t)pid, 0) == 0 || errno == EPERM;
            if (k >= 0 && tmp[k] < 1 + alive)
                tmp[k] = (unsigned char)(1 + alive);
        }
    if (d)
        closedir(d);
}

int sweep_run_judge(sweep_ctx *c, long k, double wall, char *row, size_t *n)
{
    sweep_args ra;
    sweep_summary s;
    sweep_facts rf;
    char why[sizeof s.why + 16];
    struct stat st;
    memset(&rf, 0, sizeof rf);
    memset(&s, 0, sizeof s);
    *n = 0;
    if (sweep_args_make(c, k, &ra) != 0)
        return RUN_MISSING;
    sweep_run_parse(c, k, 0, &rf);
    int got = sweep_summary_read(ra.csv, &c->spec, &s);
    long ended = stat(ra.csv, &st) == 0 ? (long)st.st_mtime : (long)time(NULL);
    free(ra.argv);
    if (got == SWEEP_CSV_READ && sweep_summary_matches(&s, &rf, s.why, sizeof s.why) != 0)
        got = SWEEP_CSV_CORRUPT;
    if (got == SWEEP_CSV_CORRUPT) {
        snprintf(why, sizeof why, "its CSV: %s", s.why);
        *n = sweep_results_row(&c->spec, k, &rf, NULL, wall, "corrupt", why, ended, row,
                               SWEEP_ROW_MAX);
        return RUN_CORRUPT;
    }
    const char *status = got == SWEEP_CSV_READ ? sweep_summary_status(&s, rf.steps) : NULL;
    if (!status)
        return got == SWEEP_CSV_NONE ? RUN_MISSING : RUN_TRUNCATED;
    *n = sweep_results_row(&c->spec, k, &rf, &s, wall, status, NULL, ended, row, SWEEP_ROW_MAX);
    return RUN_COMPLETE;
}

/* Rows kept from results.csv whose CSV is gone (the row stands alone) or
 * damaged (the row is all that is left of the run's numbers). */
typedef struct {
    long gone, damaged;
    char gone_ids[COLLECT_SHOW * 13 + 1]; /* the first gone ones' IDs, space-separated */
} kept_rows;

/* Run k's row (into row, n: its length) and its state. A CSV that reads
 * whole and holds the run makes the row. Else an old row is kept: a
 * failure's stays failed; one whose CSV is gone stays complete, one whose
 * CSV is damaged or cut short is corrupt (both counted in kept). A run
 * whose CSV in the making has a live writer is running. Without an old
 * row: a corrupt CSV gets a "corrupt" row; else truncated (a CSV, or one
 * in the making) or missing. */
static int collect_run(sweep_ctx *c, long k, const char *old, int in_making, char *row,
                       size_t *n, kept_rows *kept)
{
    int st = sweep_run_judge(c, k, old ? sweep_row_wall(&c->spec, old) : NAN, row, n);
    if (st == RUN_COMPLETE || (st == RUN_CORRUPT && !old))
        return st;
    if (old)
        *n = (size_t)snprintf(row, SWEEP_ROW_MAX, "%s", old);
    else
        *n = 0;
    if (in_making == 2) /* running again: its old row stands until it ends */
        return RUN_RUNNING;
    if (old && !row_failed(c, old)) {
        if (st == RUN_MISSING) {
            if (kept->gone++ < COLLECT_SHOW)
                snprintf(kept->gone_ids + strlen(kept->gone_ids), 14, " %.12s", old);
            return RUN_COMPLETE;
        }
        kept->damaged++;
        return RUN_CORRUPT;
    }
    if (old)
        return RUN_FAILED;
    return st == RUN_TRUNCATED || in_making ? RUN_TRUNCATED : st;
}

/* Rebuild results.csv from the runs' CSVs (in grid order); a run without
 * a finished CSV keeps the row it had (a crash's). Written atomically.
 * state[k]: what was found of run k. 0, or 1 after one line. */
static int collect_write(sweep_ctx *c, unsigned char *state, kept_rows *kept)
{
    char header[4096], path[4300], err[ATOMIC_PATH_MAX + 128], *others = NULL;
    char *row = malloc(SWEEP_ROW_MAX);
    size_t cap = 1 << 16, len = 0, n_others = 0, cap_others = 0;
    char **old = old_rows(c, &others, &n_others, &cap_others), *text = malloc(cap);
    unsigned char *tmp = calloc((size_t)c->n_runs, 1);
    if (!old || !text || !tmp || !row) {
        free(old);
        free(text);
        free(others);
        free(tmp);
        free(row);
        fprintf(stderr, "normscope: out of memory\n");
        return 1;
    }
    runs_in_making(c, tmp);
    sweep_results_header(&c->spec, header, sizeof header);
    int bad = buf_add(&text, &len, &cap, header, strlen(header));
    for (long k = 0; k < c->n_runs && !bad; k++) {
        size_t n;
        int st = collect_run(c, k, old[k], tmp[k], row, &n, kept);
        bad = buf_add(&text, &len, &cap, row, n);
        state[k] = (unsigned char)st;
    }
    if (!bad && n_others)
        bad = buf_add(&text, &len, &cap, others, n_others);
    for (long k = 0; k < c->n_runs; k++)
        free(old[k]);
    free(others);
    free(old);
    free(tmp);
    free(row);
    snprintf(path, sizeof path, "%s/results.csv", c->dir);
    int r = bad ? -1 : atomicio_write_file(path, text, len, err, sizeof err);
    if (bad)
        fprintf(stderr, "normscope: --sweep-collect: out of memory (results.csv left as it was)\n");
    else if (r)
        fprintf(stderr, "normscope: --sweep-collect %s\n", err);
    free(text);
    return r ? 1 : 0;
}

/* The counts on standard error after what (the sweep's "sweep DIR", or
 * "--sweep-collect DIR"), and the first runs not complete as their
 * --list lines; pick[k] = 1 for those runs. Returns how many are not
 * complete. */
static long runs_report(const sweep_ctx *c, const char *what, const unsigned char *state,
                        unsigned char *pick)
{
    long count[RUN_STATES] = {0};
    for (long k = 0; k < c->n_runs; k++) {
        count[state[k]]++;
        pick[k] = state[k] != RUN_COMPLETE;
    }
    long bad = c->n_runs - count[RUN_COMPLETE];
    if (bad == 0 && what[0] != '-')
        return 0; /* a sweep that went well says nothing more */
    fprintf(stderr, "normscope: %s %s: %ld expected, %ld complete, %ld missing, %ld truncated, "
                    "%ld running, %ld corrupt, %ld failed\n", what, c->dir, c->n_runs,
            count[RUN_COMPLETE], count[RUN_MISSING], count[RUN_TRUNCATED], count[RUN_RUNNING],
            count[RUN_CORRUPT], count[RUN_FAILED]);
    if (bad == 0)
        return 0;
    fprintf(stderr, "normscope: not complete (%s), as --list lines to run again%s:\n",
            bad > COLLECT_SHOW ? "the first 20" : "all", bad > COLLECT_SHOW
            ? "; --sweep-collect DIR --list prints them all" : "");
    for (long k = 0, shown = 0; k < c->n_runs && shown < COLLECT_SHOW; k++)
        if (pick[k] && !list_line(c, k, run_state_name[state[k]], stderr))
            shown++;
    return bad;
}

/* The rows kept from results.csv that no CSV backs, said and named (the
 * first of them by their --list lines' IDs). */
static void kept_report(const sweep_ctx *c, const kept_rows *kept)
{
    if (kept->gone)
        fprintf(stderr, "normscope: --sweep-collect %s: %ld row%s kept from results.csv whose "
                        "CSV is gone (the row is all there is of the run):%s%s\n", c->dir,
                kept->gone, kept->gone == 1 ? "" : "s", kept->gone_ids,
                kept->gone > COLLECT_SHOW ? " ..." : "");
    if (kept->damaged)
        fprintf(stderr, "normscope: --sweep-collect %s: %ld row%s kept from results.csv whose "
                        "CSV is damaged or cut short (listed as corrupt)\n", c->dir,
                kept->damaged, kept->damaged == 1 ? "" : "s");
}

/* This binary, by its absolute path: the children run it, and --list's
 * lines name it for another machine with the same file system. A bare
 * name from PATH is found there, as the shell found it (sysdep.h). */
static void find_exe(sweep_ctx *c, const char *argv0)
{
    sysdep_exe_path(c->exe, sizeof c->exe, argv0);
}

/* How the flag named name spells a value once (sweep_spec_canon). */
static sweep_kind axis_kind(const char *name)
{
    const ns_setting *s = settings_find(name, strlen(name));
    switch (s ? s->type : SET_PATH) {
    case SET_INT: case SET_LONG: case SET_U64: return SWEEP_KIND_INT;
    case SET_REAL: case SET_LOSS_SCALE: return SWEEP_KIND_F32;
    default: return SWEEP_KIND_TEXT;
    }
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
    if (sweep_spec_parse(spec, &c->spec, err, sizeof err) != 0 ||
        sweep_spec_canon(&c->spec, axis_kind, err, sizeof err) != 0) {
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

int sweep_refuse_common(const cli_opts *o, const char *what)
{
    const char *flag = o->csv ? "csv" : o->jsonl ? "jsonl" : o->save ? "save"
                       : o->compare ? "compare" : o->lesson ? "lesson" : NULL;
    if (!flag)
        return 0;
    fprintf(stderr, "normscope: --%s cannot be used with %s (each run writes "
                    "DIR/run-ID.csv; vary settings with SPEC)\n", flag, what);
    return 2;
}

/* A live view: asked for (not --headless) and on a terminal. */
static int live_wanted(const cli_opts *o, sweep_live_fn live)
{
    return live && !o->headless && isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
}

/* What results.csv holds: done[k] and failed[k], and with rows (for a
 * view) the rows. 0, or 1 after one line. */
static int ctx_results(sweep_ctx *c, int rows)
{
    c->done = calloc((size_t)c->n_runs, 1);
    c->failed = calloc((size_t)c->n_runs, 1);
    c->rows = rows ? calloc((size_t)c->n_runs, sizeof *c->rows) : NULL;
    if (!c->done || !c->failed || (rows && !c->rows)) {
        fprintf(stderr, "normscope: out of memory\n");
        return 1;
    }
    return results_load(c);
}

/* The sweep's own flags that go together. 0, or 2 after one line. */
static int check_own_flags(sweep_ctx *c, const cli_opts *o)
{
    if (o->retry && strcmp(o->retry, "failed") != 0) {
        fprintf(stderr, "normscope: --retry '%s': expected 'failed' (the runs results.csv records "
                        "as failed: exit N, signal N)\n", o->retry);
        return 2;
    }
    if (o->retry && (o->list || o->sweep_collect)) {
        fprintf(stderr, "normscope: --retry runs the failed runs again: it goes with --sweep, "
                        "not --list or --sweep-collect (--sweep-collect DIR --list prints them)\n");
        return 2;
    }
    if (o->list_range && !o->list) {
        fprintf(stderr, "normscope: --list-range goes with --list\n");
        return 2;
    }
    return list_range_parse(c, o->list_range);
}

/* After the grid ran: every run's state as --sweep-collect finds it (a
 * row of results.csv stands for its run; a run without one is judged by
 * what it left), the runs not complete said with their --list lines, and
 * failures of an earlier attempt named. The exit status: status, or 1
 * when a run is not complete (never 0 then). */
static int sweep_end(sweep_ctx *c, int status)
{
    long earlier = 0, n = c->n_runs;
    for (long k = 0; k < n; k++)
        earlier += c->failed[k];
    unsigned char *state = calloc((size_t)n, 1), *pick = calloc((size_t)n, 1),
                  *tmp = calloc((size_t)n, 1);
    char *row = malloc(SWEEP_ROW_MAX);
    kept_rows kept = {0, 0, ""};
    int r = state && pick && tmp && row ? 0 : 1;
    if (r)
        fprintf(stderr, "normscope: out of memory\n");
    memset(c->done, 0, (size_t)n);
    memset(c->failed, 0, (size_t)n);
    if (!r)
        r = results_load(c);
    if (!r) {
        runs_in_making(c, tmp);
        for (long k = 0; k < n; k++) {
            size_t len;
            state[k] = (unsigned char)(c->done[k] ? (c->failed[k] ? RUN_FAILED : RUN_COMPLETE)
                                                  : collect_run(c, k, NULL, tmp[k], row, &len, &kept));
        }
        r = runs_report(c, "sweep", state, pick) ? 1 : 0;
    }
    if (earlier && !status)
        fprintf(stderr, "normscope: sweep %s: %ld run%s failed in an earlier attempt "
                        "(results.csv); --retry failed runs %s again\n", c->dir, earlier,
                earlier == 1 ? "" : "s", earlier == 1 ? "it" : "them");
    free(state);
    free(pick);
    free(tmp);
    free(row);
    return status ? status : r;
}

static int sweep_go(sweep_ctx *c, const cli_opts *o, int argc, char **argv, sweep_live_fn live,
                    void *live_arg)
{
    int r = sweep_refuse_common(o, "--sweep");
    if (!r)
        r = ctx_common(c, argc, argv);
    if (!r && o->sweep_out) {
        snprintf(c->dir, sizeof c->dir, "%s", o->sweep_out);
    } else if (!r) {
        time_t t = time(NULL);
        strftime(c->dir, sizeof c->dir, "sweep-%Y%m%d-%H%M%S", localtime(&t));
    }
    if (!r && !(c->inapp = calloc((size_t)settings_count(), sizeof *c->inapp))) {
        fprintf(stderr, "normscope: out of memory\n");
        r = 2;
    }
    if (!r)
        r = ctx_prepare(c, o->sweep, o->yes);
    if (!r)
        r = ctx_loss_at(c, o->loss_at);
    if (!r)
        r = dir_make(c);
    if (!r)
        r = dir_lock(c, "--sweep-out");
    if (!r)
        r = loss_at_check(c, "--sweep-out");
    if (!r)
        r = dir_write_spec(c);
    if (r || o->list)
        return r ? r : sweep_list(c, NULL, stdout);
    int show = live_wanted(o, live);
    r = ctx_results(c, show);
    if (!r && o->retry)
        r = results_drop_failed(c);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    c->jobs = o->jobs ? o->jobs : cores > 0 ? (int)cores : 1;
    if (r)
        return r;
    r = show ? live(c, live_arg) : sweep_execute(c, c->done, c->jobs, NULL);
    /* after a live view too: the terminal keeps the table (as htop's) */
    if ((r != 130 || show) && results_print(c) != 0)
        r = 1;
    return sweep_end(c, r);
}

/* sweep.spec's spec, --loss-at (NULL: none) and common flags; the
 * strings are owned by *store. */
static int collect_read_spec(sweep_ctx *c, char **store, const char **spec, const char **loss_at)
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
        else if (!strncmp(p, "loss-at: ", 9))
            *loss_at = p + 9;
        else if (!strncmp(p, "arg: ", 5))
            c->common[c->n_common++] = p + 5;
        p += len + more;
    }
    return 0;
}

/* Rebuild DIR/results.csv, say what is not complete, show it (live, on a
 * terminal: the view of a sweep with nothing left to run), print the
 * table; with --list, print the not-complete runs' lines instead. Exit 1
 * when a run is not complete. */
static int sweep_collect(sweep_ctx *c, const cli_opts *o, sweep_live_fn live, void *live_arg)
{
    char *store = NULL;
    const char *spec = NULL, *loss_at = NULL;
    unsigned char *state = NULL, *pick = NULL;
    long incomplete = 0;
    kept_rows kept = {0, 0, ""};
    snprintf(c->dir, sizeof c->dir, "%s", o->sweep_collect);
    int r = collect_read_spec(c, &store, &spec, &loss_at);
    if (!r)
        r = ctx_prepare(c, spec, 1);
    if (!r)
        r = ctx_loss_at(c, o->loss_at ? o->loss_at : loss_at);
    if (!r)
        r = dir_lock(c, "--sweep-collect");
    if (!r)
        r = loss_at_check(c, "--sweep-collect");
    if (!r && o->loss_at) /* sweep.spec says the --loss-at results.csv is built with */
        r = dir_write_spec(c);
    if (!r && (!(state = calloc((size_t)c->n_runs, 1)) || !(pick = calloc((size_t)c->n_runs, 1)))) {
        fprintf(stderr, "normscope: out of memory\n");
        r = 1;
    }
    if (!r)
        r = collect_write(c, state, &kept);
    if (!r) {
        kept_report(c, &kept);
        incomplete = runs_report(c, "--sweep-collect", state, pick);
    }
    if (!r && o->list) {
        r = sweep_list(c, pick, stdout);
    } else {
        if (!r && live_wanted(o, live)) {
            c->view_only = 1;
            r = ctx_results(c, 1);
            if (!r)
                r = live(c, live_arg);
        }
        if (!r)
            r = results_print(c);
    }
    free(store);
    free(state);
    free(pick);
    return r ? r : incomplete ? 1 : 0;
}

int sweep_requested(const cli_opts *o)
{
    return o->sweep || o->sweep_collect || o->sweep_out || o->jobs || o->list || o->yes ||
           o->list_range || o->retry || o->per_seed || o->loss_at;
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
    c->per_seed = o->per_seed;
    c->lock_fd = -1;
    if (o->sweep_collect && (o->sweep || o->sweep_out)) {
        fprintf(stderr, "normscope: --sweep-collect DIR reads DIR/sweep.spec: it takes no "
                        "--sweep or --sweep-out\n");
        r = 2;
    } else if ((r = check_own_flags(c, o)) != 0) {
        /* said */
    } else if (o->sweep_collect) {
        r = sweep_collect(c, o, live, live_arg);
    } else if (!o->sweep) {
        fprintf(stderr, "normscope: --sweep-out, --jobs, --list, --retry, --per-seed, --loss-at "
                        "and --yes go with --sweep SPEC (--list, --per-seed and --loss-at also "
                        "with --sweep-collect DIR)\n");
        r = 2;
    } else {
        r = sweep_go(c, o, argc, argv, live, live_arg);
    }
    ctx_free(c);
    free(c);
    return r;
}
