/* fuzz_plot.c - libFuzzer harness for --plot's reader: whatever the lines
 * (CSV, JSONL, a followed stream, junk), plot_data_line reads or skips each,
 * and every kind of figure either draws or refuses with a reason. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *sink;
    if (!sink)
        sink = fopen("/dev/null", "w");
    plot_data d;
    char err[256];
    plot_data_init(&d);
    size_t a = 0;
    while (a < size) {
        size_t b = a;
        while (b < size && data[b] != '\n')
            b++;
        if (plot_data_line(&d, (const char *)data + a, b - a, err, sizeof err))
            break;
        a = b + 1;
    }
    plot_data_finish(&d);
    for (int k = PLOT_LOSS; k <= PLOT_VIEW; k++) {
        plot_opts o = {.kind = (plot_kind)k, .w = 640, .h = 360, .mono = k & 1, .logy = k & 2};
        err[0] = 0;
        if (plot_render(sink, &d, &o, err, sizeof err) && !err[0])
            abort(); /* a refusal always says why */
    }
    plot_data_free(&d);
    return 0;
}
