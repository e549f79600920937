#!/usr/bin/env python3
"""probe_overhead.py - what the probe costs: the step time of nanoGPT-style
models on the CPU without the probe, with it every step, and with it every
10th step.

Three copies of one model train side by side, a step each in turn (off,
every=1, every=10, off, ...), so a change in the machine's load falls on
all three alike. Steps are timed in windows of 10 (every=10's window holds
one measured step and nine watched ones); each window's time is divided by
the same window of the copy without the probe, and the median of those
ratios is the overhead. CPU time of the process by default: on a shared
machine the wall clock also counts other processes' turns. Not a test.

    /usr/bin/python3 tests/bench/probe_overhead.py [--shape L4d64] [--windows 9]
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

SHAPES = {"L4d64": (4, 64), "L6d256": (6, 256)}
WINDOW = 10


def make(layers, dim, seq):
    torch.manual_seed(0)
    m = models.GPT(n_layer=layers, c=dim, nh=max(1, dim // 64), t=seq, v=256)
    return m, torch.optim.AdamW(m.parameters(), lr=1e-4)


def one_step(model, opt, x, y, probe, clock):
    t0 = clock()
    opt.zero_grad(set_to_none=True)
    loss = model(x, y)
    loss.backward()
    if probe is not None:
        probe.step(loss)
    opt.step()
    return clock() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", choices=sorted(SHAPES), default="L4d64")
    ap.add_argument("--windows", type=int, default=9, help="windows of 10 steps per variant")
    ap.add_argument("--seq", type=int, default=128, help="tokens per sequence (T)")
    ap.add_argument("--batch", type=int, default=16, help="sequences per batch (B)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--wall", action="store_true", help="time the wall clock, not CPU time")
    a = ap.parse_args()
    clock = time.perf_counter if a.wall else time.process_time
    torch.set_num_threads(a.threads)
    layers, dim = SHAPES[a.shape]
    tmp = tempfile.mkdtemp(prefix="nsbench.")
    x, y = models.batch(torch.Generator().manual_seed(1), b=a.batch, t=a.seq)
    runs = {}
    for name, every in (("off", None), ("every=1", 1), ("every=10", 10)):
        m, opt = make(layers, dim, a.seq)
        p = None if every is None else normscope_probe.attach(
            m, opt, path=os.path.join(tmp, "%d.nsj" % every), every=every)
        runs[name] = (m, opt, p, [])
    n_params = sum(q.numel() for q in runs["off"][0].parameters())
    for m, opt, p, _ in runs.values():  # warm up (step 1 of each probe is a measured one)
        one_step(m, opt, x, y, p, clock)
    for _ in range(a.windows * WINDOW):
        for m, opt, p, times in runs.values():
            times.append(one_step(m, opt, x, y, p, clock))
    for _, _, p, _ in runs.values():
        if p is not None:
            p.close()
    win = {k: [sum(v[3][i:i + WINDOW]) for i in range(0, len(v[3]), WINDOW)]
           for k, v in runs.items()}
    print("model %s: %.2fM parameters, batch %d x %d, %d thread(s), %d windows of %d steps, "
          "%s time" % (a.shape, n_params / 1e6, a.batch, a.seq, a.threads, a.windows, WINDOW,
                       "wall" if a.wall else "CPU"))
    print("%-9s %12s %10s %8s" % ("", "step (ms)", "overhead", "spread"))
    for k, w in win.items():
        ratios = [t / b for t, b in zip(w, win["off"])]
        q = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [ratios[0]] * 3
        print("%-9s %12.1f %+9.1f%% %7.1f%%" % (k, 1e3 * statistics.median(w) / WINDOW,
                                               100 * (statistics.median(ratios) - 1),
                                               100 * (q[2] - q[0])))


if __name__ == "__main__":
    main()
