/* sgemm.c - GFLOP/s of normscope's own matmul kernels (src/ops.c), for
 * `make bench`: a large square product gives the peak the model's FLOPs
 * are measured against; the other options are for tuning the kernels.
 *
 *   sgemm [-n SIZE]            out = x W^T + b, all SIZE x SIZE
 *         [--shapes N C]       also every matmul of one Transformer layer
 *                              (forward, dinp + dw, dw + db) at these sizes
 *         [--one KIND N C OC]  only that one (KIND 0 forward, 1 dinp + dw,
 *                              2 dw + db)
 *         [--step L d H T B]   the bound of one training step of that model:
 *                              every matmul of the step (each block's four
 *                              linears and the head, forward and dinp + dw;
 *                              the attention's two products per sequence
 *                              and head as full T x T squares, PaLM's
 *                              count) at the kernel's best rate on its own
 *                              shape, summed: "step bound_ms=... gflop=..."
 *         [--cold]             evict the caches before each timed call
 *         [--generic]          the portable kernels, not AVX2
 *
 * Prints "sgemm n=<SIZE> gflops=<float> isa=<path>" (best of the runs in
 * about a second, one thread), then a line per shape when asked. Exit 0;
 * 2 on bad usage. Built by tests/bench/bench.sh against the library. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ops.h"

/* CPU time of this thread by default: other processes on the machine do
 * not count against the kernel; -DNS_CLOCK=CLOCK_MONOTONIC for wall time */
#ifndef NS_CLOCK
#define NS_CLOCK CLOCK_THREAD_CPUTIME_ID
#endif

static double now(void)
{
    struct timespec ts;
    clock_gettime(NS_CLOCK, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static float *buf(long n)
{
    float *p = malloc(sizeof(float) * (size_t)n);
    if (!p) {
        fprintf(stderr, "sgemm: out of memory\n");
        exit(1);
    }
    for (long i = 0; i < n; i++)
        p[i] = (float)((i * 7919 % 2003) - 1001) / 1001.0f;
    return p;
}

/* --cold: evict the caches before each timed call, as in a training step
 * where a layer's activations come back from memory */
static int cold;
static void evict(void)
{
    static float *junk;
    enum { JUNK = 16 << 20 }; /* 64 MB, twice the L3 */
    if (!junk)
        junk = buf(JUNK);
    for (long i = 0; i < JUNK; i += 16)
        junk[i] += 1.0f;
}

/* best GFLOP/s of forward (kind 0), dinp (1), dw + db (2) over reps */
static double rate(int kind, int N, int C, int OC, double min_s)
{
    float *x = buf((long)N * C), *w = buf((long)OC * C), *b = buf(OC), *y = buf((long)N * OC);
    float *dw = buf((long)OC * C), *db = buf(OC), *dx = buf((long)N * C);
    double best = 0, flops = 2.0 * N * C * OC, t_all = now();
    int reps = 0;
    do {
        if (cold)
            evict();
        double t = now();
        if (kind == 0)
            ops_matmul_forward(y, x, w, b, N, C, OC);
        else if (kind == 1) /* dinp only: dw into a scratch with the same cost is kind 2 */
            ops_matmul_backward(dx, dw, NULL, y, x, w, N, C, OC), flops = 4.0 * N * C * OC;
        else
            ops_matmul_backward(NULL, dw, db, y, x, w, N, C, OC);
        double dt = now() - t;
        if (flops / dt > best)
            best = flops / dt;
        reps++;
    } while (now() - t_all < min_s * (cold ? 4 : 1) || reps < 3);
    free(x), free(w), free(b), free(y), free(dw), free(db), free(dx);
    return best * 1e-9;
}

/* seconds of count products of shape (N, C, OC), forward and dinp + dw,
 * at the kernel's best rate on that shape; *flop takes in their FLOPs */
static double shape_s(long count, int N, int C, int OC, double *flop)
{
    double f = 2.0 * N * C * OC;
    *flop += 3 * f * (double)count;
    return (double)count * (f / (rate(0, N, C, OC, 0.2) * 1e9) + 2 * f / (rate(1, N, C, OC, 0.2) * 1e9));
}

/* the step's matmuls at their shapes' best rates (--step) */
static void step_bound(int L, int d, int H, int T, int B)
{
    int N = B * T, hs = d / H, V = 256;
    double flop = 0, t = 0;
    static const int lin[4][2] = {{1, 3}, {1, 1}, {1, 4}, {4, 1}}; /* C, OC in units of d */
    for (int s = 0; s < 4; s++)
        t += shape_s(L, N, lin[s][0] * d, lin[s][1] * d, &flop);
    t += shape_s(1, N, d, V, &flop);                       /* the head */
    t += shape_s((long)L * B * H, T, hs, T, &flop);       /* scores q k^T */
    t += shape_s((long)L * B * H, T, T, hs, &flop);       /* mix p v */
    printf("step L=%d d=%d H=%d T=%d B=%d bound_ms=%.4f gflop=%.4f isa=%s\n", L, d, H, T, B,
           t * 1e3, flop * 1e-9, ops_isa());
}

int main(int argc, char **argv)
{
    int n = 1024, sN = 0, sC = 0, one[4] = {-1, 0, 0, 0}, step[5] = {0};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc)
            n = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--shapes") && i + 2 < argc)
            sN = atoi(argv[i + 1]), sC = atoi(argv[i + 2]), i += 2;
        else if (!strcmp(argv[i], "--one") && i + 4 < argc) /* kind N C OC: only that */
            for (int k = 0; k < 4; k++)
                one[k] = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--step") && i + 5 < argc)
            for (int k = 0; k < 5; k++)
                step[k] = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--cold"))
            cold = 1;
        else if (!strcmp(argv[i], "--generic"))
            ops_force_generic(1);
        else {
            fprintf(
                stderr,
                "usage: sgemm [-n SIZE] [--shapes N C] [--one KIND N C OC] [--step L d H T B] "
                "[--cold] [--generic]\n");
            return 2;
        }
    }
    if (n < 1 || n > 8192) {
        fprintf(stderr, "sgemm: -n must be 1..8192\n");
        return 2;
    }
    if (one[0] >= 0 && one[0] <= 2 && one[1] > 0 && one[2] > 0 && one[3] > 0) {
        printf("kind %d N=%d C=%d OC=%d %.1f GFLOP/s\n", one[0], one[1], one[2], one[3],
               rate(one[0], one[1], one[2], one[3], 1.0));
        return 0;
    }
    if (step[0] > 0) {
        if (step[1] < 1 || step[2] < 1 || step[1] % step[2] || step[3] < 1 || step[4] < 1) {
            fprintf(stderr, "sgemm: --step needs L d H T B, d divisible by H\n");
            return 2;
        }
        step_bound(step[0], step[1], step[2], step[3], step[4]);
        return 0;
    }
    printf("sgemm n=%d gflops=%.1f isa=%s\n", n, rate(0, n, n, n, 1.0), ops_isa());
    if (sN > 0 && sC > 0) {
        static const char *kinds[] = {"forward", "dinp+dw", "dw+db"};
        int shapes[4][2] = {{sC, 3 * sC}, {sC, sC}, {sC, 4 * sC}, {4 * sC, sC}};
        for (int s = 0; s < 4; s++)
            for (int k = 0; k < 3; k++)
                printf("  N=%d C=%d OC=%d %-8s %.1f GFLOP/s\n", sN, shapes[s][0], shapes[s][1],
                       kinds[k], rate(k, sN, shapes[s][0], shapes[s][1], 0.3));
    }
    return 0;
}
