/* plot_series.c - a line of n points as one SVG path: non-finite values
 * break it (a new subpath, never a point at NaN), a step that goes back
 * (a rewind) starts a new one, and more rows than pixel columns are
 * reduced to each column's minimum and maximum in the order they came, so
 * the file stays small whatever the run's length; marker shapes on a
 * sparse series.
 *
 * Not here: axes (plot_axes.c), which series a figure draws (plot_fig_*.c).
 */
#include "plot_int.h"

#include <math.h>

/* ---- a line series, with gaps and decimation -------------------------------------- */

typedef struct {
    svg *v;
    const axis *ax, *ay;
    int pen;             /* a subpath is open */
    long px;             /* the pixel column being reduced */
    int have;            /* the bucket holds a point */
    double xmin_, ymin, xmax_, ymax; /* its extremes, in order of arrival */
    int min_first;
    long points;
} series;

static void series_point(series *s, double x, double y)
{
    fprintf(s->v->f, "%c%.1f %.1f", s->pen ? 'L' : 'M', plot_ax_map(s->ax, x), plot_ax_map(s->ay, y));
    s->pen = 1;
    s->points++;
}

/* A pixel column's points: its minimum and maximum, in the order they came. */
static void series_flush(series *s)
{
    if (!s->have)
        return;
    double x1 = s->min_first ? s->xmin_ : s->xmax_, y1 = s->min_first ? s->ymin : s->ymax;
    double x2 = s->min_first ? s->xmax_ : s->xmin_, y2 = s->min_first ? s->ymax : s->ymin;
    series_point(s, x1, y1);
    if (y2 != y1 || x2 != x1)
        series_point(s, x2, y2);
    s->have = 0;
}

/* x, y of n rows (y with a stride). NaN and inf break the line; -inf means
 * "not measured" (a validation loss between measurements) and is skipped;
 * a step that goes back (a rewind) starts a new subpath. */
long plot_series_draw(svg *v, const axis *ax, const axis *ay, const long *x, const float *y,
                        long n, long stride, const char *name, const char *color, const char *dash,
                        double width)
{
    series s = {.v = v, .ax = ax, .ay = ay, .px = -1};
    fprintf(v->f, "<path class=\"series\" data-name=\"");
    plot_svg_esc(v->f, name);
    fprintf(v->f, "\" fill=\"none\" stroke=\"%s\" stroke-width=\"%.1f\" stroke-linejoin=\"round\"", color,
            width);
    if (dash && dash[0])
        fprintf(v->f, " stroke-dasharray=\"%s\"", dash);
    fputs(" d=\"", v->f);
    long prev = 0;
    int started = 0;
    for (long i = 0; i < n; i++) {
        double yy = y[i * stride];
        if (isinf(yy) && yy < 0)
            continue;
        if (started && x[i] <= prev) { /* a rewind */
            series_flush(&s);
            s.pen = 0;
        }
        prev = x[i];
        started = 1;
        if (!isfinite(yy) || (ay->log && yy <= 0)) {
            series_flush(&s);
            s.pen = 0;
            continue;
        }
        long px = (long)floor(plot_ax_map(ax, (double)x[i]));
        if (px != s.px || !s.have) {
            series_flush(&s);
            s.px = px;
            s.have = 1;
            s.xmin_ = s.xmax_ = (double)x[i];
            s.ymin = s.ymax = yy;
            s.min_first = 1;
            continue;
        }
        if (yy < s.ymin) {
            s.ymin = yy;
            s.xmin_ = (double)x[i];
            s.min_first = 0;
        }
        if (yy > s.ymax) {
            s.ymax = yy;
            s.xmax_ = (double)x[i];
            s.min_first = 1;
        }
    }
    series_flush(&s);
    fprintf(v->f, "\" data-points=\"%ld\"/>\n", s.points);
    return s.points;
}

/* Marker shapes on the measured points of a sparse series (validation). */
void plot_series_draw_points(svg *v, const axis *ax, const axis *ay, const long *x, const float *y,
                        long n, int sh, const char *color)
{
    long count = 0;
    for (long i = 0; i < n; i++)
        count += isfinite(y[i]) && (!ay->log || y[i] > 0);
    if (count > 200 || sh == SH_NONE)
        return;
    for (long i = 0; i < n; i++)
        if (isfinite(y[i]) && (!ay->log || y[i] > 0))
            plot_svg_shape(v, sh, plot_ax_map(ax, (double)x[i]), plot_ax_map(ay, y[i]), v->fs * 0.22, color);
}
