/* tui_dump.c - the files of the d and e keys: the screen as text and the
 * metrics as CSV (a trainer's run: every --csv column of both runs, from
 * the trainer's spool; a followed stream: its loss history), each written
 * atomically (atomicio.c: a temp file
 * next to the target, fsync, rename), so a crash never leaves half a file
 * under the name. Called on the UI thread, which owns the grid and its snapshot
 * copy: the trainer never waits for it.
 * Not here: choosing the names (tui_curses.c), curses. */
#include "atomicio.h"
#include "metrics.h"
#include "tui.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The handle is 12 KiB: on the heap, not on the UI thread's stack. */
static atomic_file *open_out(const char *path, char *err, size_t errlen)
{
    atomic_file *a = malloc(sizeof *a);
    if (!a)
        snprintf(err, errlen, "%s: out of memory", path);
    else if (atomicio_open(a, path, err, errlen) != 0) {
        free(a);
        a = NULL;
    }
    return a;
}

/* Commit the file (renamed over its target) and free the handle. */
static int close_out(atomic_file *a, char *err, size_t errlen)
{
    int r = atomicio_commit(a, err, errlen);
    free(a);
    return r;
}

int tui_write_screen(const tui_grid *g, const char *path, char *err, size_t errlen)
{
    atomic_file *a = open_out(path, err, errlen);
    if (!a)
        return -1;
    FILE *f = a->f;
    size_t cap = (size_t)(g->cols > 0 ? g->cols : 1) * 4 + 1;
    char *line = malloc(cap);
    if (!line) {
        atomicio_abort(a);
        free(a);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int r = 0; r < g->rows; r++) {
        size_t n = tui_row_utf8(g, r, line, cap);
        while (n > 0 && line[n - 1] == ' ')
            n--;
        fwrite(line, 1, n, f);
        fputc('\n', f);
    }
    free(line);
    return close_out(a, err, errlen);
}

int tui_write_metrics(const trainer_snapshot *s, const char *path, char *err, size_t errlen)
{
    atomic_file *a = open_out(path, err, errlen);
    if (!a)
        return -1;
    FILE *f = a->f;
    int cmp = s->s.compare;
    fputs(cmp ? "step,loss,val_loss,lr,b_loss,b_val_loss\n" : "step,loss,val_loss,lr\n", f);
    long total = s->s.hist_total;
    for (long i = trainer_hist_first(&s->s); i < total; i++) {
        const trainer_point *p = &s->hist[i % TRAINER_HIST];
        fprintf(f, "%ld,", p->step);
        metrics_csv_float(f, p->run[0].loss);
        fputc(',', f);
        if (!isnan(p->run[0].val_loss))
            metrics_csv_float(f, p->run[0].val_loss);
        fputc(',', f);
        metrics_csv_float(f, p->lr);
        if (cmp) { /* run b's, as --csv's b_ columns */
            fputc(',', f);
            metrics_csv_float(f, p->run[1].loss);
            fputc(',', f);
            if (!isnan(p->run[1].val_loss))
                metrics_csv_float(f, p->run[1].val_loss);
        }
        fputc('\n', f);
    }
    return close_out(a, err, errlen);
}

int tui_write_spool(FILE *spool, const char *path, char *err, size_t errlen)
{
    int fd = fileno(spool);
    struct stat st;
    if (fstat(fd, &st) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    atomic_file *a = open_out(path, err, errlen);
    if (!a)
        return -1;
    /* up to the last newline: the trainer may be half-way through a row */
    char buf[8192];
    off_t at = 0, whole = 0;
    while (at < st.st_size) {
        ssize_t n = pread(fd, buf, sizeof buf, at);
        if (n <= 0)
            break;
        for (ssize_t i = n; i > 0; i--)
            if (buf[i - 1] == '\n') {
                whole = at + i;
                break;
            }
        at += n;
    }
    for (off_t o = 0; o < whole;) {
        size_t want = (size_t)(whole - o < (off_t)sizeof buf ? whole - o : (off_t)sizeof buf);
        ssize_t n = pread(fd, buf, want, o);
        if (n <= 0)
            break;
        fwrite(buf, 1, (size_t)n, a->f);
        o += n;
    }
    return close_out(a, err, errlen);
}

int tui_unused_path(char *path, size_t n, const char *stem, long step, const char *ext)
{
    struct stat st;
    for (int k = 1; k < 100; k++) {
        if (k == 1)
            snprintf(path, n, "%s-%ld.%s", stem, step, ext);
        else
            snprintf(path, n, "%s-%ld-%d.%s", stem, step, k, ext);
        if (stat(path, &st) != 0 && errno == ENOENT)
            return 0;
    }
    return -1;
}
