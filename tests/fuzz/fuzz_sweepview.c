/* fuzz_sweepview.c - libFuzzer harness for what the live view of a sweep
 * parses: a run's CSV read while it grows (tui_sweep_tail_feed: the bytes in
 * chunks whose sizes the input chooses, complete lines only, then
 * plot_data) and rows of results.csv (sweep_row_parse), folded into one
 * cell (sweep_cell_add). The same bytes fed whole and in chunks must give
 * the same rows; a row has one status; the cell's counts add up and its
 * losses' range is ordered. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tui_sweep.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static sweep_spec spec;
    static int have_spec;
    char err[256];
    if (!have_spec)
        have_spec = sweep_spec_parse("norm=pre,post lr=1e-3,1e-2 seed=1,2", &spec, err,
                                     sizeof err) == 0;
    if (size < 1 || !have_spec)
        return 0;
    /* the first byte: the chunk size (1..256) */
    size_t chunk = (size_t)data[0] + 1;
    const char *p = (const char *)data + 1;
    size_t n = size - 1;
    sv_tail whole, parts;
    tui_sweep_tail_init(&whole);
    tui_sweep_tail_init(&parts);
    tui_sweep_tail_feed(&whole, p, n);
    for (size_t a = 0; a < n; a += chunk)
        tui_sweep_tail_feed(&parts, p + a, n - a < chunk ? n - a : chunk);
    if (!whole.bad && !parts.bad && whole.d.run[0].n != parts.d.run[0].n)
        abort(); /* chunking changed what was read */
    size_t left_w, left_p; /* the same unterminated last line either way */
    const char *pw = tail_partial(&whole.tl, &left_w), *pp = tail_partial(&parts.tl, &left_p);
    if (!whole.bad && !parts.bad && (left_w != left_p || (left_w && memcmp(pw, pp, left_w) != 0)))
        abort();
    long step;
    double loss;
    if ((tui_sweep_tail_last(&whole, &step, &loss) == 0) != (whole.d.run[0].n > 0))
        abort();
    tui_sweep_tail_free(&whole);
    tui_sweep_tail_free(&parts);
    /* each line as a results.csv row */
    char *copy = malloc(n + 1);
    if (!copy)
        return 0;
    memcpy(copy, p, n);
    copy[n] = 0;
    sweep_cell cell = {0};
    int rows = 0, numbered = 0;
    for (char *line = copy; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = 0;
        sweep_result r;
        if (sweep_row_parse(&spec, line, &r) == 0) {
            /* at most one of these; stalled, exploded or a state not known
               by name is none of them, and has numbers */
            if (r.ok + r.diverged + r.failed > 1)
                abort();
            sweep_cell_add(&cell, &r);
            rows++;
            numbered += !r.diverged && !r.failed;
        }
        line = nl ? nl + 1 : NULL;
    }
    free(copy);
    if (cell.runs != rows || cell.runs != numbered + cell.diverged + cell.failed ||
        cell.final.n > numbered)
        abort();
    if (cell.final.n && !(cell.final.lo <= cell.final.hi))
        abort();
    return 0;
}
