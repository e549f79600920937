/* fuzz_plot.c - libFuzzer harness for --plot's readers: whatever the lines
 * (CSV, JSONL, a followed stream, a sweep's results.csv, junk),
 * plot_data_line and plot_map_line read or skip each, and every kind of
 * figure, the map with its default or chosen axes, either draws or
 * refuses with a reason. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plot.h"

/* Feed each line to a reader; stop when it fails (out of memory). */
static void feed(const uint8_t *data, size_t size, void *r, int map)
{
    char err[256];
    size_t a = 0;
    while (a < size) {
        size_t b = a;
        while (b < size && data[b] != '\n')
            b++;
        const char *line = (const char *)data + a;
        if (map ? plot_map_line(r, line, b - a, err, sizeof err)
                : plot_data_line(r, line, b - a, err, sizeof err))
            break;
        a = b + 1;
    }
}

static void fuzz_runs(FILE *sink, const uint8_t *data, size_t size)
{
    plot_data d;
    char err[256];
    plot_data_init(&d);
    feed(data, size, &d, 0);
    plot_data_finish(&d);
    for (int k = PLOT_LOSS; k <= PLOT_SERIES; k++)
        for (int c = 0; c < (k == PLOT_SERIES ? METRICS_LAYER_COLS : 1); c++) { /* series: each column */
            plot_opts o = {.kind = (plot_kind)k, .w = 640, .h = 360, .mono = k & 1, .logy = k & 2,
                           .light = (k & 5) == 4, .column = c}; /* --light in color only */
            err[0] = 0;
            if (plot_render(sink, &d, &o, err, sizeof err) && !err[0])
                abort(); /* a refusal always says why */
        }
    plot_data_free(&d);
}

static void fuzz_map(FILE *sink, const uint8_t *data, size_t size)
{
    plot_map m;
    char err[256];
    plot_map_init(&m);
    feed(data, size, &m, 1);
    err[0] = 0;
    if (plot_map_finish(&m, err, sizeof err) == 0) {
        const char *names[] = {NULL, m.axis[0].name, m.n_axes > 1 ? m.axis[1].name : "x"};
        for (int k = 0; k < PLOT_METRICS; k++) { /* each metric, binned and continuous */
            plot_opts o = {.kind = PLOT_MAP, .w = 640, .h = 360, .mono = k & 1, .light = k == 2,
                           .rows = names[k % 3], .cols = k == 3 ? "seed" : names[(k + 1) % 3],
                           .metric = (plot_metric)k, .continuous = k >> 1 & 1};
            err[0] = 0;
            if (plot_render_map(sink, &m, &o, err, sizeof err) && !err[0])
                abort();
        }
    } else if (!err[0]) {
        abort();
    }
    plot_map_free(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *sink;
    if (!sink)
        sink = fopen("/dev/null", "w");
    fuzz_runs(sink, data, size);
    fuzz_map(sink, data, size);
    return 0;
}
