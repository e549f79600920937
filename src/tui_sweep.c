/* tui_sweep.c - the live view of a sweep, without curses: the
 * board the scheduler reports on, the cells and their color scale, the
 * keys, and the frames drawn into the cell grid.
 *
 * Not here: the runs themselves (sweep.c), the terminal (tui_curses.c).
 */
#include "tui_sweep.h"

#include "atomicio.h"
#include "lesson.h"

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum {
    SV_CELL_W = 14,     /* a cell's columns, with the gap after it */
    SV_FIT_DEFAULT = 4, /* cells across before a frame says (80 columns) */
};

/* ---- the board ------------------------------------------------------------------ */

int tui_sweep_board_init(sv_board *b, long n_runs)
{
    memset(b, 0, sizeof *b);
    b->n = n_runs;
    b->phase = calloc((size_t)n_runs, 1);
    b->row = calloc((size_t)n_runs, sizeof *b->row);
    b->pid = calloc((size_t)n_runs, sizeof *b->pid);
    if (!b->phase || !b->row || !b->pid) {
        free(b->phase);
        free(b->row);
        free(b->pid);
        return -1;
    }
    pthread_mutex_init(&b->mu, NULL);
    return 0;
}

void tui_sweep_board_free(sv_board *b)
{
    for (long k = 0; k < b->n; k++)
        free(b->row[k]);
    free(b->row);
    free(b->phase);
    free(b->pid);
    pthread_mutex_destroy(&b->mu);
    memset(b, 0, sizeof *b);
}

static void board_started(void *ctx, long k, long pid)
{
    sv_board *b = ctx;
    pthread_mutex_lock(&b->mu);
    b->phase[k] = SV_RUNNING;
    b->pid[k] = pid;
    b->seq++;
    pthread_mutex_unlock(&b->mu);
}

/* An interrupted run (no row) is pending again: a resume runs it. */
static void board_ended(void *ctx, long k, const char *row)
{
    sv_board *b = ctx;
    char *copy = row ? strdup(row) : NULL;
    pthread_mutex_lock(&b->mu);
    b->phase[k] = copy ? SV_ENDED : SV_PENDING;
    free(b->row[k]);
    b->row[k] = copy;
    b->seq++;
    pthread_mutex_unlock(&b->mu);
}

static int board_stop(void *ctx)
{
    sv_board *b = ctx;
    pthread_mutex_lock(&b->mu);
    int s = b->stop;
    pthread_mutex_unlock(&b->mu);
    return s;
}

sweep_watch tui_sweep_board_watch(sv_board *b)
{
    return (sweep_watch){b, board_started, board_ended, board_stop};
}

void tui_sweep_board_stop(sv_board *b)
{
    pthread_mutex_lock(&b->mu);
    b->stop = 1;
    pthread_mutex_unlock(&b->mu);
}

void tui_sweep_board_done(sv_board *b, int status)
{
    pthread_mutex_lock(&b->mu);
    b->finished = 1;
    b->status = status;
    b->seq++;
    pthread_mutex_unlock(&b->mu);
}

/* ---- a growing CSV ----------------------------------------------------------------- */

/* The lines come from tail.h, the one line follower; what they mean is
 * plot_data's (the rows of a run's CSV, read as --plot reads them). */
static void csv_line(void *ctx, char *line, size_t n)
{
    sv_tail *t = ctx;
    char err[64];
    if (!t->bad)
        t->bad = plot_data_line(&t->d, line, n, err, sizeof err) != 0;
}

/* Another attempt of the run (its CSV cut, replaced or back after being
 * removed) starts its rows anew; a line no CSV row is that long stops. */
static void csv_event(void *ctx, tail_event ev, const char *text)
{
    sv_tail *t = ctx;
    (void)text;
    if (ev == TAIL_TRUNCATED || ev == TAIL_REPLACED || ev == TAIL_BACK) {
        plot_data_free(&t->d);
        plot_data_init(&t->d);
        t->bad = 0;
        t->restarted = 1;
    } else if (ev == TAIL_TOO_LONG || ev == TAIL_NOMEM) {
        t->bad = 1;
    }
}

static void follow_path(sv_tail *t, const char *path)
{
    tail_free(&t->tl);
    tail_init(&t->tl, path, SV_LINE_MAX, &(tail_sink){csv_line, csv_event, t});
    t->open = 1;
}

void tui_sweep_tail_init(sv_tail *t)
{
    memset(t, 0, sizeof *t);
    t->tl.fd = -1;
    plot_data_init(&t->d);
}

void tui_sweep_tail_free(sv_tail *t)
{
    plot_data_free(&t->d);
    tail_free(&t->tl);
    memset(t, 0, sizeof *t);
    t->tl.fd = -1;
}

int tui_sweep_tail_feed(sv_tail *t, const char *bytes, size_t n)
{
    if (!t->open)
        follow_path(t, "");
    long rows = t->d.run[0].n;
    tail_feed(&t->tl, bytes, n);
    return t->d.run[0].n > rows;
}

int tui_sweep_tail_last(const sv_tail *t, long *step, double *loss)
{
    const plot_run *r = &t->d.run[0];
    if (r->n == 0)
        return -1;
    *step = r->step[r->n - 1];
    *loss = r->loss[r->n - 1];
    return 0;
}

int tui_sweep_tail_poll(sv_tail *t, const char *path)
{
    if (!t->open || strcmp(t->tl.path, path) != 0)
        follow_path(t, path);
    long rows = t->d.run[0].n;
    t->restarted = 0;
    tail_poll(&t->tl, SV_READ_MAX, NULL);
    return t->restarted || t->d.run[0].n > rows;
}

/* ---- the view's model --------------------------------------------------------------- */

int tui_sweep_level(double x, double lo, double hi)
{
    if (!isfinite(x))
        return -1;
    if (!(hi > lo))
        return 0;
    double f = (x - lo) / (hi - lo);
    return clampi((int)lround(f * (SV_LEVELS - 1)), 0, SV_LEVELS - 1);
}

/* The map of v's spec with rows and columns asked (-1: the default). */
static void view_map(sweepview *v, int row, int col)
{
    const char *names[SWEEP_MAX_AXES];
    int count[SWEEP_MAX_AXES];
    for (int i = 0; i < v->spec->n_axes; i++) {
        names[i] = v->spec->axis[i].name;
        count[i] = v->spec->axis[i].n;
    }
    sweep_map_make(&v->map, v->spec->n_axes, names, count, row, col);
    sweep_map_group(&v->map, v->fit_cols ? v->fit_cols : SV_FIT_DEFAULT);
}

int tui_sweep_init(sweepview *v, const sweep_spec *spec, const char *dir, int unicode, int color)
{
    memset(v, 0, sizeof *v);
    v->spec = spec;
    snprintf(v->dir, sizeof v->dir, "%s", dir);
    v->n_runs = sweep_spec_runs(spec);
    v->runs = v->n_runs > 0 ? calloc((size_t)v->n_runs, sizeof *v->runs) : NULL;
    v->snap = snapshot_new();
    if (!v->runs || !v->snap) {
        free(v->runs);
        free(v->snap);
        v->runs = NULL;
        v->snap = NULL;
        return -1;
    }
    view_map(v, -1, -1);
    tui_sweep_tail_init(&v->open_tail);
    tui_ui_init(&v->ui, unicode, color);
    v->lo = v->hi = NAN;
    return 0;
}

static void run_untail(sv_run *r)
{
    if (r->tail) {
        tui_sweep_tail_free(r->tail);
        free(r->tail);
        r->tail = NULL;
    }
}

void tui_sweep_free(sweepview *v)
{
    for (long k = 0; v->runs && k < v->n_runs; k++)
        run_untail(&v->runs[k]);
    free(v->runs);
    free(v->snap);
    tui_sweep_tail_free(&v->open_tail);
    memset(v, 0, sizeof *v);
}

/* Run k has ended with this row. */
static void run_row(sweepview *v, long k, const char *row)
{
    sv_run *r = &v->runs[k];
    r->phase = SV_ENDED;
    r->have = row && sweep_row_parse(v->spec, row, &r->res) == 0;
    run_untail(r);
    v->rescale = 1;
}

void tui_sweep_set_row(sweepview *v, long k, const char *row)
{
    if (k >= 0 && k < v->n_runs && row)
        run_row(v, k, row);
}

/* The run at (page p, row r, column c), seed s (value index; 0 without a
 * seed axis). */
static long run_at(const sweepview *v, long p, int r, int c, int s)
{
    int idx[SWEEP_MAX_AXES] = {0};
    const sweep_map *m = &v->map;
    sweep_map_page_values(m, p, idx);
    if (m->row >= 0)
        idx[m->row] = r;
    if (m->col >= 0)
        idx[m->col] = sweep_map_col_value(m, c);
    if (m->group >= 0)
        idx[m->group] = c / m->count[m->col];
    if (m->seed >= 0)
        idx[m->seed] = s;
    long k = 0;
    for (int i = 0; i < v->spec->n_axes; i++)
        k = k * v->spec->axis[i].n + idx[i];
    return k;
}

static int n_seeds(const sweepview *v)
{
    return v->map.seed >= 0 ? v->map.count[v->map.seed] : 1;
}

void tui_sweep_cell_of(const sweepview *v, long p, int r, int c, sv_cell *out)
{
    memset(out, 0, sizeof *out);
    double live = 0;
    for (int s = 0; s < n_seeds(v); s++) {
        const sv_run *run = &v->runs[run_at(v, p, r, c, s)];
        out->runs++;
        out->pending += run->phase == SV_PENDING;
        out->running += run->phase == SV_RUNNING;
        out->ended += run->phase == SV_ENDED;
        if (run->phase == SV_RUNNING && run->step > 0) {
            live += run->loss;
            out->live_step = out->n_live++ ? (run->step < out->live_step ? run->step : out->live_step)
                                           : run->step;
        }
        if (run->phase != SV_ENDED)
            continue;
        static const sweep_result unread = {.failed = 1};
        sweep_cell_add(&out->fold, run->have ? &run->res : &unread);
    }
    out->mean = sweep_stat_mean(&out->fold.final);
    out->live_loss = out->n_live ? live / out->n_live : NAN;
}

/* The color scale over every finished cell of every page but the
 * exploded ones: from the best trained cell to the plateau, where stalled
 * cells sit, whatever an outlier reached. */
static void view_scale(sweepview *v)
{
    /* (every cell: O(runs), once per frame in which runs ended) */
    v->lo = v->hi = NAN;
    const sweep_map *m = &v->map;
    for (long p = 0; p < m->pages; p++)
        for (int r = 0; r < m->rows; r++)
            for (int c = 0; c < m->cols; c++) {
                sv_cell cell;
                tui_sweep_cell_of(v, p, r, c, &cell);
                if (cell.ended < cell.runs || !cell.fold.final.n || cell.fold.exploded)
                    continue; /* an exploded cell is off the scale: it would flatten it */
                v->lo = isnan(v->lo) || cell.mean < v->lo ? cell.mean : v->lo;
                v->hi = isnan(v->hi) || cell.mean > v->hi ? cell.mean : v->hi;
            }
}

/* The board's phases and rows; 1 when anything changed. A run the board
 * has not touched keeps what the view knows (a row from before). */
static int copy_board(sweepview *v, sv_board *b)
{
    int changed = 0;
    pthread_mutex_lock(&b->mu);
    if (b->seq != v->seq) {
        v->seq = b->seq;
        v->finished = b->finished;
        v->status = b->status;
        for (long k = 0; k < v->n_runs && k < b->n; k++) {
            sv_run *r = &v->runs[k];
            sv_phase bp = (sv_phase)b->phase[k];
            if (bp == SV_ENDED && r->phase != SV_ENDED)
                run_row(v, k, b->row[k]);
            else if (bp == SV_RUNNING && r->phase != SV_RUNNING)
                r->phase = SV_RUNNING, r->pid = b->pid[k], r->step = 0, r->loss = NAN;
            else if (bp == SV_PENDING && r->phase == SV_RUNNING)
                r->phase = SV_PENDING, run_untail(r);
        }
        changed = 1;
    }
    pthread_mutex_unlock(&b->mu);
    return changed;
}

/* Where run k's CSV is now: while it runs, the temporary file of its
 * process that atomicio.h renames into place at the end (DIR/run-ID.csv
 * .tmp.PID.UID.HOST.RAND: the same file, so a reader's offset stays
 * right), found in DIR by its writer's PID; else DIR/run-ID.csv. */
static void run_path(const sweepview *v, long k, char *path, size_t n)
{
    sweep_spec_run_csv(v->spec, v->dir, k, path, n);
    if (v->runs[k].phase != SV_RUNNING)
        return;
    const char *slash = strrchr(path, '/');
    char base[256];
    snprintf(base, sizeof base, "%s", slash ? slash + 1 : path);
    DIR *d = opendir(v->dir);
    struct dirent *e;
    long pid;
    int ours;
    while (d && (e = readdir(d)) != NULL)
        if (atomicio_tmp_parse(e->d_name, base, &pid, &ours) && ours == 1 &&
            pid == (long)v->runs[k].pid) {
            snprintf(path, n, "%s/%s", v->dir, e->d_name);
            break;
        }
    if (d)
        closedir(d);
}

/* The running runs' CSVs: what is new. */
static int read_running(sweepview *v)
{
    int changed = 0;
    char path[4400];
    for (long k = 0; k < v->n_runs; k++) {
        sv_run *r = &v->runs[k];
        if (r->phase != SV_RUNNING)
            continue;
        if (!r->tail && (r->tail = malloc(sizeof *r->tail)) != NULL)
            tui_sweep_tail_init(r->tail);
        if (!r->tail)
            continue;
        run_path(v, k, path, sizeof path);
        if (tui_sweep_tail_poll(r->tail, path) && tui_sweep_tail_last(r->tail, &r->step, &r->loss) == 0)
            changed = 1;
    }
    return changed;
}

/* The open run as a snapshot the chart and heatmap draw: its loss
 * history and its per-layer gradient norms (sqrt(attn^2+mlp^2+ln^2)). */
static void open_snapshot(sweepview *v)
{
    trainer_snapshot *s = v->snap;
    const plot_run *r = &v->open_tail.d.run[0];
    memset(&s->s, 0, sizeof s->s);
    s->s.diverged_run = -1;
    s->s.run[0].last_val = NAN;
    s->s.hist_total = r->n;
    int L = r->L < NS_MAX_LAYERS ? r->L : NS_MAX_LAYERS;
    s->s.n_layer = L;
    for (long i = r->n > TRAINER_HIST ? r->n - TRAINER_HIST : 0; i < r->n; i++) {
        trainer_point *pt = &s->hist[i % TRAINER_HIST];
        memset(pt, 0, sizeof *pt);
        pt->step = r->step[i];
        pt->run[0].loss = r->loss[i];
        pt->run[0].val_loss = isinf(r->val[i]) && r->val[i] < 0 ? NAN : r->val[i];
        pt->lr = NAN;
        pt->run[1].loss = pt->run[1].val_loss = NAN;
        pt->nonfinite = !isfinite(r->loss[i]);
        for (int l = 0; l < L; l++)
            s->run[0].heat[i % TRAINER_HIST][l] = r->gn[i * r->L + l];
        if (!isnan(pt->run[0].val_loss)) {
            s->s.run[0].last_val = pt->run[0].val_loss;
            s->s.last_val_step = pt->step;
        }
    }
    if (r->n > 0) {
        s->s.steps_done = r->step[r->n - 1];
        s->s.have_loss = 1;
        s->s.run[0].loss = r->loss[r->n - 1];
    }
}

static void open_path(const sweepview *v, char *path, size_t n)
{
    run_path(v, v->open_run, path, n);
}

int tui_sweep_update(sweepview *v, sv_board *b)
{
    int changed = b ? copy_board(v, b) : 0;
    if (v->rescale) {
        view_scale(v);
        v->rescale = 0;
        changed = 1;
    }
    changed |= read_running(v);
    if (v->open) {
        char path[4400];
        open_path(v, path, sizeof path);
        if (tui_sweep_tail_poll(&v->open_tail, path)) {
            open_snapshot(v);
            changed = 1;
        }
    }
    return changed;
}

/* ---- keys ----------------------------------------------------------------------------- */

/* Show run seed s of the selected cell. */
static void open_run(sweepview *v, int s)
{
    v->open = 1;
    v->open_seed = s;
    v->open_run = run_at(v, v->page, v->sel_r, v->sel_c, s);
    tui_sweep_tail_free(&v->open_tail);
    tui_sweep_tail_init(&v->open_tail);
    v->ui.selected = -1; /* the heatmap selects the top layer */
    v->ui.scroll = 0;
    char path[4400];
    open_path(v, path, sizeof path);
    tui_sweep_tail_poll(&v->open_tail, path);
    open_snapshot(v);
}

/* Enter: the cell's first run that has started (else its first). */
static void open_cell(sweepview *v)
{
    int first = 0;
    for (int s = n_seeds(v) - 1; s >= 0; s--)
        if (v->runs[run_at(v, v->page, v->sel_r, v->sel_c, s)].phase != SV_PENDING)
            first = s;
    open_run(v, first);
}

/* The next axis after a (cyclic) that may be rows or columns, not
 * `other`; a when there is none. */
static int next_axis(const sweep_map *m, int a, int other)
{
    for (int i = 1; i <= m->n_axes; i++) {
        int b = ((a < 0 ? -1 : a) + i) % m->n_axes;
        if (b != m->seed && b != other)
            return b;
    }
    return a;
}

/* New rows and columns; the selection stays on the cell it was on. */
static void relayout(sweepview *v, int row, int col)
{
    int idx[SWEEP_MAX_AXES];
    sweep_spec_run_index(v->spec, run_at(v, v->page, v->sel_r, v->sel_c, 0), idx);
    view_map(v, row, col);
    sweep_map_place(&v->map, idx, &v->page, &v->sel_r, &v->sel_c);
}

static int map_key(sweepview *v, int key)
{
    sweep_map *m = &v->map;
    switch (key) {
    case TUI_KEY_UP: v->sel_r -= v->sel_r > 0; break;
    case TUI_KEY_DOWN: v->sel_r += v->sel_r < m->rows - 1; break;
    case TUI_KEY_LEFT: v->sel_c -= v->sel_c > 0; break;
    case TUI_KEY_RIGHT: v->sel_c += v->sel_c < m->cols - 1; break;
    case TUI_KEY_PGUP: v->page = (v->page + m->pages - 1) % m->pages; break;
    case TUI_KEY_PGDN: v->page = (v->page + 1) % m->pages; break;
    case TUI_KEY_HOME: v->sel_r = v->sel_c = 0; break;
    case TUI_KEY_END: v->sel_r = m->rows - 1, v->sel_c = m->cols - 1; break;
    case '\r': case '\n': open_cell(v); break;
    case 'x': if (m->col >= 0) relayout(v, m->col, m->row); break;
    case 'r': if (m->row >= 0) relayout(v, next_axis(m, m->row, m->col), m->col); break;
    case 'c': if (m->col >= 0) relayout(v, m->row, next_axis(m, m->col, m->row)); break;
    default: return 0;
    }
    return 1;
}

static int run_key(sweepview *v, int key)
{
    switch (key) {
    case '\r': case '\n': case TUI_KEY_ESC: case SV_KEY_BACKSPACE: case 8:
        v->open = 0;
        return 1;
    case TUI_KEY_TAB:
        open_run(v, (v->open_seed + 1) % n_seeds(v));
        return 1;
    case TUI_KEY_UP: v->ui.selected++; return 1; /* the heatmap's layers: top first */
    case TUI_KEY_DOWN: v->ui.selected -= v->ui.selected > 0; return 1;
    default: return 0;
    }
}

int tui_sweep_key(sweepview *v, int key)
{
    if (key == 'q' || key == TUI_KEY_F10) {
        v->quit = 1;
        return 1;
    }
    if (v->help) { /* any key closes the help */
        v->help = 0;
        return 1;
    }
    if (key == '?' || key == TUI_KEY_F1) {
        v->help = 1;
        return 1;
    }
    return v->open ? run_key(v, key) : map_key(v, key);
}

/* ---- drawing --------------------------------------------------------------------------- */

/* The keys, for the help overlay (normscope(1) lists the same). */
static const char *const sv_help[][2] = {
    {"arrows", "select a cell (the grid scrolls to keep it on screen)"},
    {"Enter", "open the cell's run: its loss curve, its layers' gradient norms"},
    {"Enter, Esc, Backspace", "back from a run to the map"},
    {"Tab", "in a run: the cell's next seed"},
    {"up, down", "in a run: the selected layer of the heatmap"},
    {"PgUp, PgDn", "the previous or next page (the values of the other axes)"},
    {"Home, End", "the first or the last cell of the page"},
    {"x", "swap the rows' and the columns' axes"},
    {"r, c", "the next axis for the rows, for the columns"},
    {"t", "the other palette: dark, or light for a white background"},
    {"?, F1", "this help (any key closes it)"},
    {"q, F10", "quit: the running runs are stopped, finished rows stay"},
};
enum { SV_N_HELP = sizeof sv_help / sizeof sv_help[0] };

static const char *const sv_legend[] = {
    "X diverged: a non-finite loss or gradient   ! failed: see DIR/run-ID.log",
    "S stalled: ran 48+ steps, final loss not 0.1 nats below unigram entropy",
    "E exploded: finite, 0.15+ over its first loss   1/2 S: 1 of 2 seeds",
    "~ running: loss@step now   . pending   final loss: mean+-spread of seeds",
};
enum { SV_N_LEGEND = sizeof sv_legend / sizeof sv_legend[0] };

static tui_style mark_style(char m)
{
    return m == 'X' || m == '!' || m == 'E' ? TUI_S_BAD : m == 'S' ? TUI_S_WARN
           : m == '~'                       ? TUI_S_LABEL
                                            : TUI_S_TEXT;
}

/* A finished cell's mark, the worst state first, and how many of its runs
 * are in that state. */
static char cell_mark(const sweep_cell *f, int *count)
{
    *count = f->diverged ? f->diverged : f->exploded ? f->exploded : f->stalled ? f->stalled
                                                                                : f->failed;
    return f->diverged ? 'X' : f->exploded ? 'E' : f->stalled ? 'S' : f->failed ? '!' : ' ';
}

/* Where a cell's text has its mark: after "k/n " when only some seeds are
 * in that state, else first. */
static int mark_at(const char *text)
{
    return isdigit((unsigned char)text[0]) && strchr(text, ' ') ? (int)(strchr(text, ' ') - text) + 1
                                                                : 0;
}

/* The number of a finished cell in what is left of w (at least 5). */
static int cell_number(char *buf, size_t n, int w, const sweep_cell *f, double mean,
                       const char *pm)
{
    char m[32], h[32];
    sweep_fmt_loss(m, sizeof m, mean, w < 5 ? 5 : w);
    int k = snprintf(buf, n, "%s", m);
    if (f->final.n > 1) {
        int room = w - k - (int)strlen("+-");
        sweep_fmt_loss(h, sizeof h, (f->final.hi - f->final.lo) / 2, room);
        if (room >= 4 && (int)strlen(h) <= room)
            k += snprintf(buf + k, n - (size_t)k, "%s%s", pm, h);
    }
    return k;
}

void tui_sweep_cell_text(const sweepview *v, const sv_cell *c, int w, char *buf, size_t n,
                  tui_style *st)
{
    const char *pm = v->ui.unicode ? "\xc2\xb1" : "+-";
    *st = TUI_S_DIM;
    const sweep_cell *f = &c->fold;
    int count;
    char mark = cell_mark(f, &count);
    if (c->ended == c->runs && f->final.n > 0) {
        int k = count && count < c->runs ? snprintf(buf, n, "%d/%d %c ", count, c->runs, mark)
                                         : snprintf(buf, n, "%c ", mark);
        cell_number(buf + k, n - (size_t)k, w - k, f, c->mean, pm);
        *st = f->exploded ? TUI_S_BAD
                          : (tui_style)(TUI_S_HEAT0 + tui_sweep_level(c->mean, v->lo, v->hi));
    } else if (c->ended == c->runs) {
        snprintf(buf, n, f->diverged ? "X diverged" : "! failed");
        *st = TUI_S_BAD;
    } else if (c->n_live > 0) {
        char l[32];
        sweep_fmt_loss(l, sizeof l, c->live_loss, 6);
        snprintf(buf, n, "~ %s@%ld", l, c->live_step);
        *st = TUI_S_LABEL;
    } else if (c->running > 0) {
        snprintf(buf, n, "~ starting");
    } else {
        snprintf(buf, n, c->ended ? ". %d/%d" : ".", c->ended, c->runs);
    }
}

/* "name=value" of axis a at value index i. */
static void axis_text(const sweepview *v, int a, int i, char *buf, size_t n)
{
    snprintf(buf, n, "%s=%s", v->spec->axis[a].name, v->spec->axis[a].v[i]);
}

/* Row 0: the sweep's progress; row 1: the axes and the page. */
static void draw_head(tui_grid *g, const sweepview *v)
{
    long n[3] = {0, 0, 0}, failed = 0;
    for (long k = 0; k < v->n_runs; k++) {
        n[v->runs[k].phase]++;
        failed += v->runs[k].phase == SV_ENDED && (!v->runs[k].have || v->runs[k].res.failed);
    }
    char b[512];
    snprintf(b, sizeof b, " %ld/%ld ended, %ld running, %ld failed%s   sweep %.300s",
             n[SV_ENDED], v->n_runs, n[SV_RUNNING], failed,
             v->finished ? "  - none left to run (q: leave, the table stays)" : "", v->dir);
    tui_fill(g, 0, 0, 1, g->cols, ' ', TUI_S_STATUS);
    tui_puts(g, 0, 0, g->cols, TUI_S_TITLE, b);
    const sweep_map *m = &v->map;
    int c = tui_puts(g, 1, 0, g->cols, TUI_S_LABEL, " rows ");
    c += tui_puts(g, 1, c, g->cols - c, TUI_S_TEXT, m->row >= 0 ? v->spec->axis[m->row].name : "-");
    c += tui_puts(g, 1, c, g->cols - c, TUI_S_LABEL, "  columns ");
    c += tui_puts(g, 1, c, g->cols - c, TUI_S_TEXT, m->col >= 0 ? v->spec->axis[m->col].name : "-");
    if (m->group >= 0) {
        c += tui_puts(g, 1, c, g->cols - c, TUI_S_LABEL, " by ");
        c += tui_puts(g, 1, c, g->cols - c, TUI_S_TEXT, v->spec->axis[m->group].name);
    }
    if (m->seed >= 0) {
        snprintf(b, sizeof b, "  %d seeds a cell", m->count[m->seed]);
        c += tui_puts(g, 1, c, g->cols - c, TUI_S_DIM, b);
    }
    if (m->pages > 1) {
        int idx[SWEEP_MAX_AXES] = {0};
        sweep_map_page_values(m, v->page, idx);
        snprintf(b, sizeof b, "  page %ld/%ld:", v->page + 1, m->pages);
        c += tui_puts(g, 1, c, g->cols - c, TUI_S_LABEL, b);
        for (int j = 0; j < m->n_page; j++) {
            char t[300];
            axis_text(v, m->page_axis[j], idx[m->page_axis[j]], t, sizeof t);
            snprintf(b, sizeof b, " %s", t);
            c += tui_puts(g, 1, c, g->cols - c, TUI_S_TEXT, b);
        }
    }
}


/* The first column of cells: the row axis's values. */
static int label_width(const sweepview *v)
{
    const sweep_map *m = &v->map;
    int a = m->row, w = (a >= 0 ? (int)strlen(v->spec->axis[a].name) : 0) + 1 +
                        (m->col >= 0 ? (int)strlen(v->spec->axis[m->col].name) : 0);
    for (int i = 0; a >= 0 && i < v->spec->axis[a].n; i++) {
        int l = (int)strlen(v->spec->axis[a].v[i]);
        w = l > w ? l : w;
    }
    return (w > 12 ? 12 : w) + 2;
}

static void draw_cell(tui_grid *g, const sweepview *v, int row, int col, int r, int c)
{
    sv_cell cell;
    char buf[64];
    tui_style st;
    int sel = r == v->sel_r && c == v->sel_c;
    tui_sweep_cell_of(v, v->page, r, c, &cell);
    tui_sweep_cell_text(v, &cell, SV_CELL_W - 1, buf, sizeof buf, &st);
    int at = mark_at(buf);
    if (sel)
        tui_fill(g, row, col, 1, SV_CELL_W - 1, ' ', TUI_S_SELECT);
    tui_puts(g, row, col, at, sel ? TUI_S_SELECT : mark_style(buf[at]), buf);
    tui_put(g, row, col + at, (uint32_t)(unsigned char)buf[at], mark_style(buf[at]));
    if (buf[0] == '.' && v->ui.unicode)
        tui_put(g, row, col, G_MIDDOT, sel ? TUI_S_SELECT : TUI_S_DIM);
    tui_puts(g, row, col + at + 1, SV_CELL_W - 2 - at, sel ? TUI_S_SELECT : st, buf + at + 1);
}

/* The cells: a header row of the columns' values, then a row per row
 * value, scrolled to keep the selection on screen. */
static void draw_cells(tui_grid *g, sweepview *v, int top, int h)
{
    const sweep_map *m = &v->map;
    int lw = label_width(v);
    v->vis_rows = h - 1 > 1 ? h - 1 : 1;
    v->vis_cols = (g->cols - lw) / SV_CELL_W > 1 ? (g->cols - lw) / SV_CELL_W : 1;
    v->top = tui_scroll_fit(v->top, v->vis_rows, v->sel_r, m->rows);
    v->left = tui_scroll_fit(v->left, v->vis_cols, v->sel_c, m->cols);
    char b[300];
    snprintf(b, sizeof b, "%s%s%s", m->row >= 0 ? v->spec->axis[m->row].name : "",
             m->col >= 0 ? "\\" : "", m->col >= 0 ? v->spec->axis[m->col].name : "");
    tui_puts(g, top, 0, lw - 1, TUI_S_LABEL, b);
    for (int j = 0; j < v->vis_cols && v->left + j < m->cols; j++) {
        int c = v->left + j;
        if (m->group >= 0) /* "pre 6": the group's value, then the column's */
            snprintf(b, sizeof b, "%s %s", v->spec->axis[m->group].v[c / m->count[m->col]],
                     v->spec->axis[m->col].v[sweep_map_col_value(m, c)]);
        else
            snprintf(b, sizeof b, "%s", m->col >= 0 ? v->spec->axis[m->col].v[c] : "");
        tui_puts(g, top, lw + j * SV_CELL_W, SV_CELL_W - 1, TUI_S_LABEL, b);
    }
    if (v->left > 0)
        tui_put(g, top, lw - 1, '<', TUI_S_KEY);
    if (v->left + v->vis_cols < m->cols)
        tui_put(g, top, g->cols - 1, '>', TUI_S_KEY);
    for (int i = 0; i < v->vis_rows && v->top + i < m->rows; i++) {
        int r = v->top + i, row = top + 1 + i;
        tui_puts(g, row, 0, lw - 1, r == v->sel_r ? TUI_S_SELECT : TUI_S_LABEL,
                 m->row >= 0 ? v->spec->axis[m->row].v[r] : "");
        for (int j = 0; j < v->vis_cols && v->left + j < m->cols; j++)
            draw_cell(g, v, row, lw + j * SV_CELL_W, r, v->left + j);
    }
    if (v->top > 0)
        tui_put(g, top + 1, lw - 1, '^', TUI_S_KEY);
    if (v->top + v->vis_rows < m->rows)
        tui_put(g, top + v->vis_rows, lw - 1, 'v', TUI_S_KEY);
}

/* The selected cell in words. */
static void draw_info(tui_grid *g, const sweepview *v, int row)
{
    const sweep_map *m = &v->map;
    sv_cell c;
    tui_sweep_cell_of(v, v->page, v->sel_r, v->sel_c, &c);
    char b[600], t[300];
    int k = 0;
    b[0] = 0;
    if (m->row >= 0) {
        axis_text(v, m->row, v->sel_r, t, sizeof t);
        k += snprintf(b + k, sizeof b - (size_t)k, " %s", t);
    }
    if (m->col >= 0) {
        axis_text(v, m->col, sweep_map_col_value(m, v->sel_c), t, sizeof t);
        k += snprintf(b + k, sizeof b - (size_t)k, " %s", t);
    }
    if (m->group >= 0) {
        axis_text(v, m->group, v->sel_c / m->count[m->col], t, sizeof t);
        k += snprintf(b + k, sizeof b - (size_t)k, " %s", t);
    }
    k += snprintf(b + k, sizeof b - (size_t)k, ": %d run%s, %d ended", c.runs,
                  c.runs == 1 ? "" : "s", c.ended);
    if (c.fold.final.n) {
        char x[3][32];
        sweep_fmt_loss(x[0], sizeof x[0], c.mean, 9);
        sweep_fmt_loss(x[1], sizeof x[1], c.fold.final.lo, 9);
        sweep_fmt_loss(x[2], sizeof x[2], c.fold.final.hi, 9);
        k += snprintf(b + k, sizeof b - (size_t)k, " (final %s, %s..%s)", x[0], x[1], x[2]);
    }
    const int count[5] = {c.fold.diverged, c.fold.exploded, c.fold.stalled, c.fold.failed,
                          c.running};
    static const char *const what[5] = {"diverged", "exploded", "stalled", "failed", "running"};
    for (int i = 0; i < 5 && k < (int)sizeof b; i++)
        if (count[i])
            k += snprintf(b + k, sizeof b - (size_t)k, ", %d %s", count[i], what[i]);
    tui_puts(g, row, 0, g->cols, TUI_S_TEXT, b);
}

/* The color scale, then what the marks mean, as far as rows allow. */
static void draw_legend(tui_grid *g, const sweepview *v, int row, int h)
{
    char b[96];
    int c = tui_puts(g, row, 0, g->cols, TUI_S_LABEL, " final loss ");
    if (isnan(v->lo)) {
        tui_puts(g, row, c, g->cols - c, TUI_S_DIM, "(no cell finished yet)");
    } else {
        char x[32];
        sweep_fmt_loss(x, sizeof x, v->lo, 9);
        snprintf(b, sizeof b, "%s ", x);
        c += tui_puts(g, row, c, g->cols - c, TUI_S_TEXT, b);
        for (int lv = 0; lv < SV_LEVELS; lv++)
            tui_put(g, row, c++, v->ui.unicode ? G_FULL : '0' + (uint32_t)lv,
                    (tui_style)(TUI_S_HEAT0 + lv));
        sweep_fmt_loss(x, sizeof x, v->hi, 9);
        snprintf(b, sizeof b, " %s  (one scale for every page; E: off it)", x);
        tui_puts(g, row, c, g->cols - c, TUI_S_TEXT, b);
    }
    for (int i = 0; i < SV_N_LEGEND && i + 1 < h; i++)
        tui_puts(g, row + 1 + i, 1, g->cols - 1, TUI_S_DIM, sv_legend[i]);
}

static void draw_footer(tui_grid *g, int row, const char *const (*keys)[2], int n)
{
    int c = 0;
    tui_fill(g, row, 0, 1, g->cols, ' ', TUI_S_STATUS);
    for (int i = 0; i < n && c < g->cols; i++) {
        c += tui_puts(g, row, c, g->cols - c, TUI_S_KEY, keys[i][0]);
        c += tui_puts(g, row, c, g->cols - c, TUI_S_STATUS, keys[i][1]);
    }
}

static const char *const map_foot[][2] = {
    {"arrows", " select "}, {"Enter", " run "}, {"PgDn", " page "}, {"x", " swap "},
    {"r", "/"}, {"c", " axes "}, {"?", " help "}, {"q", " quit"}};
static const char *const run_foot[][2] = {
    {"Enter", "/"}, {"Esc", " map "}, {"Tab", " next seed "}, {"up/down", " layer "},
    {"?", " help "}, {"q", " quit"}};

static void draw_help(tui_grid *g)
{
    int w = g->cols - 4, h = g->rows - 4;
    if (w < 20 || h < 4)
        return;
    tui_fill(g, 2, 2, h, w, ' ', TUI_S_TEXT);
    tui_puts(g, 2, 4, w - 2, TUI_S_TITLE, "keys of the sweep's view (any key closes this)");
    int r = 4;
    for (int i = 0; i < SV_N_HELP && r < 2 + h; i++, r++) {
        tui_puts(g, r, 4, 22, TUI_S_KEY, sv_help[i][0]);
        tui_puts(g, r, 27, w - 25, TUI_S_TEXT, sv_help[i][1]);
    }
    for (int i = 0; i < SV_N_LEGEND && ++r < 2 + h; i++)
        tui_puts(g, r, 4, w - 2, TUI_S_DIM, sv_legend[i]);
}

/* A sweep lesson's at lines that hold now ("at N": N runs have ended),
 * the latest first, of equals the questions first (then the file's
 * order), into at most max indices of v->lesson_lines. Returns how many. */
static int lesson_before(const script_entry *x, const script_entry *y)
{
    return x->at != y->at ? x->at > y->at : x->cmd.kind == CMD_PAUSE && y->cmd.kind != CMD_PAUSE;
}

static int lesson_reached(const sweepview *v, int *idx, int max)
{
    if (!v->lesson_lines)
        return 0;
    long ended = 0;
    for (long k = 0; k < v->n_runs; k++)
        ended += v->runs[k].phase == SV_ENDED;
    int n = 0;
    for (int i = 0; i < v->lesson_lines->n && n < max; i++) {
        if (v->lesson_lines->e[i].at > ended)
            continue;
        int j = n++;
        for (; j > 0 && lesson_before(&v->lesson_lines->e[i], &v->lesson_lines->e[idx[j - 1]]); j--)
            idx[j] = idx[j - 1];
        idx[j] = i;
    }
    return n;
}

/* The lesson panel's rows from row to end, w columns: the notes and
 * questions that hold now, then the text (g NULL: only counted). Returns
 * the rows used. */
static int lesson_body(tui_grid *g, const sweepview *v, int row, int end, int w)
{
    int r = row, idx[16];
    int n = lesson_reached(v, idx, 16);
    for (int i = 0; i < n; i++) {
        const script_entry *e = &v->lesson_lines->e[idx[i]];
        char b[NS_CMD_TEXT + 64];
        lesson_sweep_line(e, v->n_runs, b, sizeof b);
        tui_put_wrapped(g, &r, end, 1, w, TUI_S_EV_NOTE, b);
    }
    if (v->ui.lesson_text)
        tui_put_wrapped(g, &r, end, 1, w, TUI_S_TEXT, v->ui.lesson_text);
    return r - row;
}

/* A sweep lesson's title, its notes and questions, and its text, in the
 * rows under the cells: the class reads what the grid is asking while it
 * fills. A question stops no run (the runs are processes of their own). */
static void draw_lesson(tui_grid *g, const sweepview *v, int row, int h)
{
    if (h < 2)
        return;
    tui_fill(g, row, 0, 1, g->cols, v->ui.unicode ? G_HLINE : '-', TUI_S_BORDER);
    char t[160];
    snprintf(t, sizeof t, " %s ", v->ui.lesson_title ? v->ui.lesson_title : "lesson");
    tui_puts(g, row, 1, g->cols - 2, TUI_S_TITLE, t);
    lesson_body(g, v, row + 1, row + h, g->cols - 2);
}

/* The rows of a sweep lesson's panel: its title and all it says. */
static int lesson_rows(const tui_grid *g, const sweepview *v)
{
    if ((!v->ui.lesson_text && !v->lesson_lines) || g->cols < 20)
        return 0;
    return 1 + lesson_body(NULL, v, 0, 1 << 20, g->cols - 2);
}

static void draw_map(tui_grid *g, sweepview *v)
{
    int legend = g->rows >= 20 ? 1 + SV_N_LEGEND : 1;
    int cells = g->rows - 2 - 1 - legend - 1; /* head, info, legend, footer */
    /* a lesson: the cells take the rows they need, its text the rest (and
     * the legend's lines when the text needs them) */
    int lesson = lesson_rows(g, v), need = v->map.rows + 1;
    if (lesson > 0) {
        int avail = g->rows - 2 - 1 - 1 - 1; /* head, info, footer, the legend's scale */
        cells = need < avail - 2 ? need : (avail - 2 > 2 ? avail - 2 : 2);
        int rest = avail - cells;
        lesson = lesson < rest ? lesson : rest;
        legend = 1 + clampi(rest - lesson, 0, SV_N_LEGEND);
        cells = g->rows - 2 - 1 - legend - lesson - 1;
    }
    int fit = (g->cols - label_width(v)) / SV_CELL_W;
    if (fit != v->fit_cols) { /* a page of groups side by side, when they fit */
        v->fit_cols = fit;
        relayout(v, v->map.row, v->map.col);
    }
    draw_head(g, v);
    draw_cells(g, v, 2, cells);
    draw_info(g, v, 2 + cells);
    draw_lesson(g, v, 3 + cells, lesson);
    draw_legend(g, v, 3 + cells + lesson, legend);
    draw_footer(g, g->rows - 1, map_foot, (int)(sizeof map_foot / sizeof map_foot[0]));
}

/* The layer profile of the open run's last step: each layer's gradient
 * norm, the top layer first (as the heatmap's rows). */
static void draw_profile(tui_grid *g, const sweepview *v, int row)
{
    const trainer_snapshot *s = v->snap;
    long last = s->s.hist_total - 1;
    char b[64];
    snprintf(b, sizeof b, " step %ld, top first:", s->hist[last % TRAINER_HIST].step);
    int c = tui_puts(g, row, 0, g->cols, TUI_S_LABEL, b);
    for (int l = s->s.n_layer - 1; l >= 0 && c < g->cols; l--) {
        snprintf(b, sizeof b, "  %d:%.3g", l, s->run[0].heat[last % TRAINER_HIST][l]);
        c += tui_puts(g, row, c, g->cols - c, TUI_S_TEXT, b);
    }
}

/* The open run: its settings and state, the loss chart, the heatmap. */
static void draw_run(tui_grid *g, sweepview *v)
{
    const sv_run *r = &v->runs[v->open_run];
    int idx[SWEEP_MAX_AXES];
    char id[13], b[1024], t[300];
    sweep_spec_run_index(v->spec, v->open_run, idx);
    sweep_spec_run_id(v->spec, idx, id);
    int k = snprintf(b, sizeof b, " run %s:", id);
    for (int i = 0; i < v->spec->n_axes && k < (int)sizeof b; i++) {
        axis_text(v, i, idx[i], t, sizeof t);
        k += snprintf(b + k, sizeof b - (size_t)k, " %s", t);
    }
    tui_fill(g, 0, 0, 1, g->cols, ' ', TUI_S_STATUS);
    tui_puts(g, 0, 0, g->cols, TUI_S_TITLE, b);
    const sweep_result *res = &r->res;
    if (r->phase == SV_PENDING)
        snprintf(b, sizeof b, " pending: not started yet");
    else if (r->phase == SV_RUNNING)
        snprintf(b, sizeof b, " running: step %ld, loss %.4f", r->step, r->loss);
    else if (!r->have || res->failed)
        snprintf(b, sizeof b, " failed: no results; see %.300s/run-%s.log", v->dir, id);
    else if (res->diverged)
        snprintf(b, sizeof b, " DIVERGED at step %ld", res->div_step);
    else
        snprintf(b, sizeof b, " ended at step %ld: final loss %.4f%s", res->steps, res->final,
                 res->stalled ? "  STALLED (not 0.1 nats below the unigram entropy)" : "");
    tui_style st = r->phase == SV_ENDED && (!r->have || res->failed || res->diverged) ? TUI_S_BAD
                   : r->phase == SV_ENDED && res->stalled                            ? TUI_S_WARN
                                                                                     : TUI_S_TEXT;
    tui_puts(g, 1, 0, g->cols, st, b);
    int body = g->rows - 4, ch = body / 2;
    if (v->snap->s.hist_total == 0) {
        sweep_spec_run_csv(v->spec, v->dir, v->open_run, t, sizeof t);
        snprintf(b, sizeof b, " no rows yet in %s", t);
        tui_puts(g, 3, 0, g->cols, TUI_S_DIM, b);
    } else {
        tui_draw_chart(g, (tui_rect){2, 0, ch, g->cols}, v->snap, &v->ui);
        tui_draw_heatmap(g, (tui_rect){2 + ch, 0, body - ch, g->cols}, v->snap, &v->ui);
        draw_profile(g, v, g->rows - 2);
    }
    draw_footer(g, g->rows - 1, run_foot, (int)(sizeof run_foot / sizeof run_foot[0]));
}

void tui_sweep_draw(tui_grid *g, sweepview *v)
{
    tui_grid_clear(g);
    v->ui.n_hits = 0;
    if (g->rows < TUI_MIN_ROWS || g->cols < TUI_MIN_COLS) {
        tui_draw_too_small(g, g->rows, g->cols, 0);
        return;
    }
    if (v->open)
        draw_run(g, v);
    else
        draw_map(g, v);
    if (v->help)
        draw_help(g);
}
