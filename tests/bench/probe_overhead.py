#!/usr/bin/env python3
"""probe_overhead.py - what the probe costs: step time of a ~10M-parameter
nanoGPT-style model on the CPU without the probe, with it every step, and
with it every 10th step. Runs alternate (off, every=1, every=10, repeated)
so drift in the machine's load falls on all three alike; medians and means
of the per-step times are compared (with every=10 only one step in ten
pays for a measurement: the mean counts it, the median mostly not). Not a test: run it on a quiet machine.

    /usr/bin/python3 tests/bench/probe_overhead.py [--rounds 5] [--steps 10]
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "src", "probe"))
sys.path.insert(0, os.path.join(HERE, "..", "probe"))

import models  # noqa: E402
import torch  # noqa: E402

import normscope_probe  # noqa: E402


def steps(model, opt, x, y, n, probe):
    """CPU seconds of each step: on a shared machine the process's CPU time
    is what the probe adds; wall time also counts other processes' turns."""
    times = []
    for _ in range(n):
        t0 = CLOCK()
        opt.zero_grad(set_to_none=True)
        loss = model(x, y)
        loss.backward()
        if probe is not None:
            probe.step(loss)
        opt.step()
        times.append(CLOCK() - t0)
    return times


CLOCK = time.process_time


def main():
    global CLOCK
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=10,
                    help="steps per run; a multiple of 10 keeps every=10's share of measured steps")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--wall", action="store_true", help="time the wall clock, not CPU time")
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--dim", type=int, default=320)
    ap.add_argument("--seq", type=int, default=64, help="tokens per sequence (T)")
    ap.add_argument("--batch", type=int, default=8, help="sequences per batch (B)")
    a = ap.parse_args()
    if a.wall:
        CLOCK = time.perf_counter
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    # 8 layers of width 320: 12 C^2 L = 9.8M in the blocks, ~10M in all
    model = models.GPT(n_layer=a.layers, c=a.dim, nh=max(1, a.dim // 64), t=a.seq, v=256)
    n = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x, y = models.batch(torch.Generator().manual_seed(1), b=a.batch, t=a.seq)
    tmp = tempfile.mkdtemp(prefix="nsbench.")
    steps(model, opt, x, y, 3, None)  # warm up
    res = {"off": [], "every=1": [], "every=10": []}
    for r in range(a.rounds):
        res["off"] += steps(model, opt, x, y, a.steps, None)
        for every in (1, 10):
            path = os.path.join(tmp, "b%d_%d.nsj" % (r, every))
            with normscope_probe.attach(model, opt, path=path, every=every) as p:
                res["every=%d" % every] += steps(model, opt, x, y, a.steps, p)
    base = statistics.median(res["off"])
    print("model: L%d d%d, %.2fM parameters, batch %d x %d, %d thread(s), %d rounds x %d steps, "
          "%s time" % (a.layers, a.dim, n / 1e6, a.batch, a.seq, a.threads, a.rounds, a.steps,
                       "wall" if a.wall else "CPU"))
    mbase = statistics.mean(res["off"])
    for k, v in res.items():
        m, mean = statistics.median(v), statistics.mean(v)
        print("%-9s median step %.1f ms (x%.3f, %+.1f%%), mean %.1f ms (%+.1f%%)"
              % (k, 1e3 * m, m / base, 100 * (m / base - 1), 1e3 * mean,
                 100 * (mean / mbase - 1)))


if __name__ == "__main__":
    main()
