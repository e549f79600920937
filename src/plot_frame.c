/* plot_frame.c - the words around a figure: its title (a comparison's
 * says what the runs differ in), the caption line of each run's settings
 * and the source file, a comparison's panel titles; and the steps a
 * figure shows.
 *
 * Not here: the panels (plot_fig_*.c).
 */
#include "plot_int.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "settings.h"

/* ---- captions -------------------------------------------------------------------- */

/* Setting k as the run had it: "on", or "off \u2192 on" when the last row's
 * differs from the first's (a change by key or script, a rewind's replay). */
static const char *run_setting(const plot_run *r, int k, char *b, size_t n)
{
    if (strcmp(r->set[k], r->cur[k]))
        snprintf(b, n, "%s \xe2\x86\x92 %s", r->set[k], r->cur[k]);
    else
        snprintf(b, n, "%s", r->set[k]);
    return b;
}

/* Is setting column k's value v its row's default (as the row reads v)? */
static int at_default(const ns_setting *row, const char *v)
{
    ns_config d;
    double x, y;
    settings_defaults(&d);
    x = settings_get(row, &d);
    char why[64];
    return settings_parse_number(row, v, &y, why, sizeof why) == 0 && x == y;
}

/* A setting's value as its chart marker says it ("qk-norm", "z-loss
 * 0.0001"), "a \u2192 b" when it changed; "NAME VALUE" for a row without
 * a marker or a value the row does not read. */
static void mark_words(const ns_setting *row, const char *first, const char *last, char *b,
                       size_t n)
{
    double x, y;
    char why[64], m1[48] = "", m2[48] = "";
    if (settings_parse_number(row, first, &x, why, sizeof why) == 0)
        settings_mark(row, x, m1, sizeof m1);
    if (settings_parse_number(row, last, &y, why, sizeof why) == 0)
        settings_mark(row, y, m2, sizeof m2);
    if (!m1[0] || !m2[0])
        snprintf(b, n, "%s %s%s%s", row->name, first, strcmp(first, last) ? " \xe2\x86\x92 " : "",
                 strcmp(first, last) ? last : "");
    else if (strcmp(m1, m2))
        snprintf(b, n, "%s \xe2\x86\x92 %s", m1, m2);
    else
        snprintf(b, n, "%s", m1);
}

/* After the caption's own settings, every other setting column of the
 * table whose value is not its row's default or changed in the run, as
 * "qk-norm on" (a row added later is there without a word here). */
static void frame_other_settings(const plot_run *r, const char *const *own, int n_own, char *b,
                                 size_t n)
{
    size_t used = strlen(b);
    for (int k = 0; k < metrics_step_ncols() && used + 1 < n; k++) {
        const ns_setting *row = metrics_step_col(k)->setting;
        const char *name = metrics_step_col(k)->name;
        int mine = 0;
        for (int i = 0; i < n_own; i++)
            mine |= !strcmp(own[i], name);
        if (!row || mine || !r->set[k][0] || (!strcmp(r->set[k], r->cur[k]) &&
                                              at_default(row, r->set[k])))
            continue;
        char v[2 * PLOT_SETLEN + 8];
        mark_words(row, r->set[k], r->cur[k], v, sizeof v);
        int w = snprintf(b + used, n - used, ", %s", v);
        used = w > 0 && used + (size_t)w < n ? used + (size_t)w : n - 1;
    }
}

/* "pre layernorm, warmup off -> on, clip 0, fp32, 6 layers" */
static void frame_run_settings(const plot_run *r, char *b, size_t n)
{
    if (!r->have_set) {
        snprintf(b, n, "%d layers", r->L);
        return;
    }
    /* the caption's settings, by column: norm, norm_kind, warmup, clip,
     * precision, fp32_norms */
    static const char *const col[] = {"norm", "norm_kind", "warmup", "clip", "precision",
                                       "fp32_norms"};
    char s[6][2 * PLOT_SETLEN + 8];
    const char *cur[6];
    for (int i = 0; i < 6; i++) {
        int k = metrics_step_col_find(col[i], strlen(col[i]));
        run_setting(r, k, s[i], sizeof s[i]);
        cur[i] = r->cur[k];
    }
    snprintf(b, n, "%s %s, warmup %s, clip %s, %s%s, %d layers", s[0], s[1], s[2], s[3], s[4],
             strcmp(cur[4], "fp32") ? (strcmp(cur[5], "on") ? " (norms too)" : " (fp32 norms)")
                                    : "",
             r->L);
    frame_other_settings(r, col, 6, b, n);
}

/* A comparison's panel title: the run and the settings it differs in, or
 * that the file does not say what they are. */
void plot_frame_run_title(const plot_data *d, int r, char *b, size_t n)
{
    if (d->nruns < 2)
        snprintf(b, n, "%s", "");
    else if (d->unnamed)
        snprintf(b, n, "%s: differs from %s in a setting the file does not record", r ? "b" : "a",
                 r ? "a" : "b");
    else
        snprintf(b, n, "%s", d->run[r].label);
}

/* The title at the top (two lines at most: broken after a colon first)
 * and the caption at the bottom (cap, with the source file's name added;
 * three lines at most, broken between runs first, then between settings),
 * each made smaller only when it cannot fit so. The lines past the first
 * are taken from the content area (plot_frame_content). */
void plot_frame_text(svg *v, const char *title, char *cap, size_t capn)
{
    static const char *const title_seps[] = {": ", " ", NULL};
    static const char *const cap_seps[] = {"  |  ", "; ", ", ", " ", NULL};
    const plot_opts *o = v->o;
    if (o->source) { /* the file's name: its directory says nothing on a slide */
        const char *base = strrchr(o->source, '/');
        size_t used = strlen(cap);
        snprintf(cap + used, capn - used, "  |  %s", base && base[1] ? base + 1 : o->source);
    }
    svg_wrapped t, c;
    double maxw = o->w - v->fs;
    plot_svg_wrap(&t, title, v->fs * 1.35, 1, maxw, 2, title_seps);
    plot_svg_wrap(&c, cap, v->fs_small, 0, maxw, 3, cap_seps);
    for (int i = 0; i < t.n; i++)
        plot_svg_text(v, o->w / 2.0, v->fs * 1.9 + i * t.size * 1.2, t.size, 'm', v->p->fg,
                 "class=\"title\" font-weight=\"bold\"", "%s", t.line[i]);
    for (int i = 0; i < c.n; i++)
        plot_svg_text(v, o->w / 2.0, o->h - v->fs * 0.7 - (c.n - 1 - i) * c.size * 1.25, c.size, 'm',
                 v->p->dim, "class=\"caption\"", "%s", c.line[i]);
    v->top = (t.n - 1) * t.size * 1.2;
    v->bottom = (c.n - 1) * c.size * 1.25;
}

/* A comparison's title says what the runs differ in, when the file
 * names it: "...: ln-gamma-init=0 against ln-gamma-init=1". */
static void frame_title(const plot_data *d, const char *title, char *t, size_t n)
{
    snprintf(t, n, "%s", title);
    if (d->nruns < 2 || d->unnamed)
        return;
    const char *a = strchr(d->run[0].label, ':'), *b = strchr(d->run[1].label, ':');
    if (a && b)
        snprintf(t, n, "%s: %s against %s", title, a + 2, b + 2);
}

void plot_frame_draw(svg *v, const plot_data *d, const char *title_in)
{
    char cap[1200], a[400], b[400], title[256];
    frame_title(d, title_in, title, sizeof title);
    frame_run_settings(&d->run[0], a, sizeof a);
    if (d->nruns > 1) {
        frame_run_settings(&d->run[1], b, sizeof b);
        const char *sep = d->unnamed ? ": " : "; "; /* "a: norm=post; post layernorm, ..." */
        snprintf(cap, sizeof cap, "%s%s%s  |  %s%s%s%s", d->run[0].label, sep, a, d->run[1].label, sep, b,
                 d->unnamed ? "  |  the setting a and b differ in is not in the file" : "");
    } else {
        snprintf(cap, sizeof cap, "%s", a);
    }
    plot_frame_text(v, title, cap, sizeof cap);
}

/* The row of the last occurrence of step (after a rewind, the replay's). */
static long frame_row_of(const plot_run *r, long step)
{
    for (long i = r->n - 1; i >= 0; i--)
        if (r->step[i] == step)
            return i;
    return -1;
}

/* The steps a figure shows: the chosen ones, or the kind's default (the
 * last; for a profile, four spread over the run). Each must be in every
 * run; rows[r * PLOT_MAX_STEPS + k] is where step k is in run r. */
int plot_frame_pick_steps(const plot_data *d, const plot_opts *o, int many, long *steps, long *rows,
                      char *err, size_t errlen)
{
    const plot_run *a = &d->run[0];
    int n = 0;
    if (o->nsteps)
        for (int k = 0; k < o->nsteps && k < (many ? PLOT_MAX_STEPS : 1); k++)
            steps[n++] = o->steps[k];
    else
        for (int k = many ? 0 : 3; k < 4; k++) {
            long s = a->step[(a->n - 1) * k / 3];
            if (n == 0 || steps[n - 1] != s)
                steps[n++] = s;
        }
    for (int r = 0; r < d->nruns; r++)
        for (int k = 0; k < n; k++) {
            rows[r * PLOT_MAX_STEPS + k] = frame_row_of(&d->run[r], steps[k]);
            if (rows[r * PLOT_MAX_STEPS + k] < 0) {
                const plot_run *p = &d->run[r];
                snprintf(err, errlen, "--step %ld: not in the %s rows (steps %ld..%ld)", steps[k],
                         r ? "b" : "input's", p->step[0], p->step[p->n - 1]);
                return -1;
            }
        }
    return n;
}
