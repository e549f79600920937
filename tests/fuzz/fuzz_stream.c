/* fuzz_stream.c - libFuzzer harness for metrics streams (--follow). The
 * first byte picks where the bytes are split in two feeds (a line written
 * in two pieces); the rest is the stream. Whatever the bytes: no crash,
 * the same lines, steps and malformed lines as one feed of it all, layers
 * within NS_MAX_LAYERS, history points viewable (the replay), the same
 * findings of the lab's rules, each fix worded as the run can take it,
 * unknown bits only for columns that exist, and a summary that prints. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *text = (const char *)data + 1;
    size_t n = size - 1, cut = n ? data[0] * n / 255 : 0;
    stream_reader *a = stream_open("/nonexistent/fuzz_a.nsj");
    stream_reader *b = stream_open("/nonexistent/fuzz_b.nsj");
    static trainer_snapshot *view; /* 2 MiB: made once */
    if (!view)
        view = snapshot_new();
    if (!a || !b || !view)
        abort();
    stream_feed(a, text, cut);
    stream_feed(a, text + cut, n - cut);
    stream_feed(b, text, n);
    const stream_summary *ua = stream_summary_of(a), *ub = stream_summary_of(b);
    if (ua->n_lines != ub->n_lines || ua->rows != ub->rows || ua->malformed != ub->malformed ||
        ua->partial_bytes != ub->partial_bytes)
        abort(); /* where a line was split must not matter */
    if (ua->diagnoses != ub->diagnoses || ua->warnings != ub->warnings ||
        ua->blew_up != ub->blew_up || ua->nonfinite_said != ub->nonfinite_said)
        abort(); /* the rules see the same steps either way */
    const trainer_snapshot *s = stream_snapshot(a);
    if (s->s.n_layer < 0 || s->s.n_layer > NS_MAX_LAYERS || s->s.run[0].last.n_layer > NS_MAX_LAYERS)
        abort();
    const trainer_diagnosis *d = &s->s.diag[0];
    if (d->n < 0 || d->n > TRAINER_FINDINGS || d->n_checks < 0 || d->n_checks > DIAG_CHECKS)
        abort();
    char cmd[64], fix[320];
    for (int i = 0; i < d->n; i++)
        stream_fix(a, &d->f[i], cmd, sizeof cmd, fix, sizeof fix);
    if (ua->diagnoses)
        stream_fix(a, &ua->cause, cmd, sizeof cmd, fix, sizeof fix);
    stream_checkpoint_at(a, s->s.steps_done, fix, sizeof fix);
    for (int l = 0; l < s->s.run[0].last.n_layer; l++)
        if (s->s.run[0].last.layer[l].unknown >> METRICS_LAYER_COLS)
            abort();
    /* the ends and a few between (each view copies a whole snapshot) */
    long first = stream_hist_first(a), total = stream_hist_total(a);
    for (long i = first - 1; i <= total; i += (total - first) / 4 + 1)
        stream_snapshot_at(a, i, view);
    stream_snapshot_at(a, total - 1, view);
    FILE *f = fopen("/dev/null", "w");
    if (f) {
        stream_print_summary(f, a, "fuzz");
        fclose(f);
    }
    stream_free(a);
    stream_free(b);
    return 0;
}
