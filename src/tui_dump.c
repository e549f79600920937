/* tui_dump.c - the files of the d and e keys: the screen as text and the
 * loss history as CSV, each written atomically (a temp file next to the
 * target, then rename), so a crash never leaves half a file under the
 * name. Called on the UI thread, which owns the grid and its snapshot
 * copy: the trainer never waits for it.
 * Not here: choosing the names (tui_curses.c), curses. */
#include "metrics.h"
#include "tui.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Open "path.tmp.PID" for writing; tmp gets its name. */
static FILE *open_tmp(const char *path, char *tmp, size_t n, char *err, size_t errlen)
{
    snprintf(tmp, n, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f)
        snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
    return f;
}

/* Close f and move tmp over path; on any error remove tmp. */
static int commit(FILE *f, const char *tmp, const char *path, char *err, size_t errlen)
{
    int bad = ferror(f);
    if (fclose(f) != 0)
        bad = 1;
    if (bad) {
        snprintf(err, errlen, "%s: write failed", tmp);
        remove(tmp);
        return -1;
    }
    if (rename(tmp, path) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        remove(tmp);
        return -1;
    }
    return 0;
}

int tui_write_screen(const tui_grid *g, const char *path, char *err, size_t errlen)
{
    char tmp[4096];
    FILE *f = open_tmp(path, tmp, sizeof tmp, err, errlen);
    if (!f)
        return -1;
    size_t cap = (size_t)(g->cols > 0 ? g->cols : 1) * 4 + 1;
    char *line = malloc(cap);
    if (!line) {
        fclose(f);
        remove(tmp);
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
    return commit(f, tmp, path, err, errlen);
}

int tui_write_metrics(const trainer_snapshot *s, const char *path, char *err, size_t errlen)
{
    char tmp[4096];
    FILE *f = open_tmp(path, tmp, sizeof tmp, err, errlen);
    if (!f)
        return -1;
    int cmp = s->s.compare;
    fputs(cmp ? "step,loss,val_loss,lr,b_loss\n" : "step,loss,val_loss,lr\n", f);
    long total = s->s.hist_total;
    long from = total > TRAINER_HIST ? total - TRAINER_HIST : 0;
    for (long i = from; i < total; i++) {
        const trainer_point *p = &s->hist[i % TRAINER_HIST];
        fprintf(f, "%ld,", p->step);
        metrics_csv_float(f, p->loss);
        fputc(',', f);
        if (!isnan(p->val_loss))
            metrics_csv_float(f, p->val_loss);
        fputc(',', f);
        metrics_csv_float(f, p->lr);
        if (cmp) {
            fputc(',', f);
            metrics_csv_float(f, p->loss_b);
        }
        fputc('\n', f);
    }
    return commit(f, tmp, path, err, errlen);
}
