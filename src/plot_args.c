/* plot_args.c - --plot's command line: --kind, --size and --step parsed
 * and checked, the input read, the figure written.
 *
 * Not here: drawing (plot.c and the files it names).
 */
#include "plot_int.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the command line ------------------------------------------------------------ */

int plot_parse_kind(const char *s, plot_kind *k)
{
    static const struct {
        const char *name;
        plot_kind kind;
    } names[] = {{"loss", PLOT_LOSS},       {"layers", PLOT_LAYERS},     {"profile", PLOT_PROFILE},
                 {"heatmap", PLOT_HEATMAP}, {"headroom", PLOT_HEADROOM}, {"overflow", PLOT_OVERFLOW},
                 {"series", PLOT_SERIES}, {"map", PLOT_MAP}, {"change", PLOT_CHANGE}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(s, names[i].name)) {
            *k = names[i].kind;
            return 0;
        }
    return -1;
}

int plot_parse_size(const char *s, int *w, int *h)
{
    char *end;
    errno = 0;
    long a = strtol(s, &end, 10);
    if (end == s || (*end != 'x' && *end != 'X'))
        return -1;
    const char *p = end + 1;
    long b = strtol(p, &end, 10);
    if (end == p || *end || errno || a < 320 || a > 8000 || b < 180 || b > 8000)
        return -1;
    *w = (int)a;
    *h = (int)b;
    return 0;
}

int plot_parse_steps(const char *s, long *steps, int *n)
{
    *n = 0;
    const char *p = s;
    for (;;) {
        char *end;
        errno = 0;
        long x = strtol(p, &end, 10);
        if (end == p || errno || x < 0 || *n == PLOT_MAX_STEPS || (*end && *end != ','))
            return -1;
        steps[(*n)++] = x;
        if (!*end)
            return 0;
        p = end + 1;
    }
}

/* --kind, --size, --step into o: 0, or 2 after one line on err. */
static int plot_options(plot_opts *o, const char *kind, const char *size, const char *steps,
                        FILE *err)
{
    o->kind = PLOT_LOSS;
    o->w = 1600;
    o->h = 900;
    if (kind && plot_parse_kind(kind, &o->kind)) {
        fprintf(err, "normscope: --kind '%s': expected "
                     "loss|layers|profile|heatmap|headroom|overflow|series|change|map\n", kind);
        return 2;
    }
    if (size && plot_parse_size(size, &o->w, &o->h)) {
        fprintf(err, "normscope: --size '%s': expected WxH, W 320..8000, H 180..8000 (e.g. 1600x900)\n",
                size);
        return 2;
    }
    if (steps && plot_parse_steps(steps, o->steps, &o->nsteps)) {
        fprintf(err, "normscope: --step '%s': expected up to %d steps N[,N...], each >= 0\n", steps,
                PLOT_MAX_STEPS);
        return 2;
    }
    return 0;
}

/* --vmin, --vmax: finite numbers, the first below the second. 0, or 2
 * after one line. */
static int scale_ends(plot_opts *o, const char *vmin, const char *vmax, FILE *err)
{
    const char *given[2] = {vmin, vmax}, *name[2] = {"vmin", "vmax"};
    double *to[2] = {&o->vmin, &o->vmax};
    for (int i = 0; i < 2; i++) {
        if (!given[i])
            continue;
        char *end;
        errno = 0;
        double x = strtod(given[i], &end);
        if (end == given[i] || *end || errno || !isfinite(x)) {
            fprintf(err, "normscope: --%s '%s': expected a finite number (on --metric's scale)\n",
                    name[i], given[i]);
            return 2;
        }
        *to[i] = x;
        o->vset |= 1 << i;
    }
    if (o->vset == 3 && !(o->vmin < o->vmax)) {
        fprintf(err, "normscope: --vmin %s is not below --vmax %s\n", vmin, vmax);
        return 2;
    }
    return 0;
}

/* --metric, --scale: a name each. 0, or 2 after one line. */
static int map_coloring(plot_opts *o, const char *metric, const char *scale, FILE *err)
{
    char names[256];
    if (metric && plot_parse_metric(metric, &o->metric, names, sizeof names)) {
        fprintf(err, "normscope: --metric '%s': expected one of %s\n", metric, names);
        return 2;
    }
    if (scale && strcmp(scale, "binned") && strcmp(scale, "continuous")) {
        fprintf(err, "normscope: --scale '%s': expected binned or continuous\n", scale);
        return 2;
    }
    o->continuous = scale && !strcmp(scale, "continuous");
    return 0;
}

/* --kind series --metric NAME: a per-layer column of the table the
 * writers walk (metrics_layer_cols), so a new column is drawn by name
 * without a line here. 0, or 2 after one line naming the columns. */
static int series_column(plot_opts *o, const char *metric, FILE *err)
{
    int k = metric ? metrics_layer_col_find(metric, strlen(metric)) : -1;
    if (k >= 0) {
        o->column = k;
        return 0;
    }
    if (metric)
        fprintf(err, "normscope: --metric '%s': expected a per-layer column:", metric);
    else
        fprintf(err, "normscope: --kind series needs --metric, a per-layer column:");
    for (int c = 0; c < METRICS_LAYER_COLS; c++)
        fprintf(err, "%s %s", c ? "," : "", metrics_layer_cols[c].name);
    fputc('\n', err);
    return 2;
}

/* The map's own flags: refused with another kind, else parsed; --metric
 * also names --kind series' column. 0, or 2 after one line. */
static int map_flags(const plot_args *a, plot_opts *o, FILE *err)
{
    int series = o->kind == PLOT_SERIES;
    static const char *const pairs[] = {"--rows and --cols go", "--vmin and --vmax go",
                                        "--metric and --scale go", "--scale goes"};
    const char *given[][2] = {{a->rows, a->cols}, {a->vmin, a->vmax},
                              {series ? NULL : a->metric, series ? NULL : a->scale},
                              {NULL, series ? a->scale : NULL}};
    for (int i = 0; i < 4 && o->kind != PLOT_MAP; i++)
        if (given[i][0] || given[i][1]) {
            fprintf(err, "normscope: %s with --kind map\n", pairs[i]);
            return 2;
        }
    if (series)
        return series_column(o, a->metric, err);
    if (scale_ends(o, a->vmin, a->vmax, err))
        return 2;
    return map_coloring(o, a->metric, a->scale, err);
}

/* --kind map: DIR or DIR/results.csv. */
static int plot_main_map(const plot_args *a, plot_opts *o, FILE *err)
{
    plot_map m;
    char e[512];
    int rc = 0;
    plot_map_init(&m);
    if (plot_map_read(&m, a->input, e, sizeof e) || plot_write_map(a->out, &m, o, e, sizeof e)) {
        fprintf(err, "normscope: --plot %s: %s\n", a->input, e);
        rc = 2;
    }
    plot_map_free(&m);
    return rc;
}

/* --out may replace a figure (a slide made again), never another file: a
 * run's CSV named by mistake, the input itself. 0, or 2 after one line. */
static int out_replaceable(const char *out, FILE *err)
{
    FILE *f = fopen(out, "rb");
    if (!f)
        return 0; /* none yet (or unreadable: the write will say so) */
    char head[6] = "";
    size_t n = fread(head, 1, sizeof head - 1, f);
    fclose(f);
    head[n] = 0;
    if (n == 0 || !strncmp(head, "<?xml", 5) || !strncmp(head, "<svg", 4))
        return 0;
    fprintf(err, "normscope: --out %s: exists and is not an SVG figure; not replaced\n", out);
    return 2;
}

int plot_main(const plot_args *a, FILE *err)
{
    if (a->mono && a->light) {
        fprintf(err, "normscope: --light and --mono are two palettes: give one\n");
        return 2;
    }
    plot_opts o = {.mono = a->mono, .light = a->light, .logy = a->logy, .smooth = a->smooth, .source = a->input,
                   .rows = a->rows, .cols = a->cols};
    int rc = plot_options(&o, a->kind, a->size, a->steps, err);
    if (rc)
        return rc;
    if (!a->out) {
        fprintf(err, "normscope: --plot needs --out FILE.svg\n");
        return 2;
    }
    if (map_flags(a, &o, err))
        return 2;
    if (out_replaceable(a->out, err))
        return 2;
    if (o.kind == PLOT_MAP)
        return plot_main_map(a, &o, err);
    plot_data d;
    char e[512];
    plot_data_init(&d);
    if (plot_data_read(&d, a->input, e, sizeof e) || plot_write(a->out, &d, &o, e, sizeof e)) {
        fprintf(err, "normscope: --plot %s: %s\n", a->input, e);
        rc = 2;
    }
    plot_data_free(&d);
    return rc;
}
