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

A difference of two noisy step times cannot resolve a cost of 1% when
the machine's noise is 5%. So the probe's own time is also clocked
directly: every hook it installs and its step() run under a timer (two
clock reads a call), and "in probe" is that time over the rest of the
step. What it leaves out is torch's dispatch of the hooks (measured
alone, and printed as "left out") and any cache the probe's reads evict,
which the interleaved difference includes. --direct runs only the two
probed copies and reports only that.

    /usr/bin/python3 tests/bench/probe_overhead.py [--shape L4d64] [--windows 9] [--direct]
        [--signature loss|logits] [--vocab 256] [--rss] [--loop plain|nanogpt]

--signature logits trains nanoGPT's own signature, a forward returning
(logits, loss); --loop nanogpt trains as nanoGPT's train.py does (a hand-set
LR, an evaluation under no_grad every 10 steps, 4 micro-batches
accumulated); --rss compares peak RSS (each variant in its own process).
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# OpenBLAS's own thread pool ignores torch.set_num_threads, and its idle
# workers spin: counted as the process's CPU time, they double a step's.
# Set before torch loads it; --threads N gives it N.
_THREADS = sys.argv[sys.argv.index("--threads") + 1] if "--threads" in sys.argv[:-1] else "1"
os.environ.setdefault("OPENBLAS_NUM_THREADS", _THREADS)
sys.path.insert(0, os.path.join(HERE, "..", "..", "src", "probe"))
sys.path.insert(0, os.path.join(HERE, "..", "probe"))

import models  # noqa: E402
import torch  # noqa: E402

import normscope_probe  # noqa: E402
from normscope_probe import probe as probe_mod  # noqa: E402

# layers, width, the batch's sequences (T is --seq)
SHAPES = {"L4d64": (4, 64, 16), "L6d256": (6, 256, 16), "L12d384": (12, 384, 4)}
WINDOW = 10


def make(layers, dim, seq, signature="loss", vocab=256):
    """A nanoGPT-style GPT returning its loss, or (logits, loss) as nanoGPT
    itself does (signature "logits")."""
    torch.manual_seed(0)
    kind = models.GPTLogits if signature == "logits" else models.GPT
    m = kind(n_layer=layers, c=dim, nh=max(1, dim // 64), t=seq, v=vocab)
    return m, torch.optim.AdamW(m.parameters(), lr=1e-4)


def blas():
    """The BLAS library torch's process mapped (Debian switches it with
    update-alternatives: the reference one or OpenBLAS)."""
    try:
        with open("/proc/self/maps") as f:
            libs = {line.split()[-1] for line in f if "blas" in line.lower()}
    except OSError:
        return "unknown"
    real = sorted({os.path.realpath(x) for x in libs if x.startswith("/") and
                   "lapack" not in os.path.basename(x)})
    return ", ".join(os.path.basename(x) for x in real) or "none mapped"


KINDS = ("step", "forward hooks", "backward hooks")


def clock_the_probe(clock):
    """Time every call into the probe: its step() (with the optimizer's
    post-step hook, the model's pre-hook and its forward wrapper's two
    calls), and each hook it installs
    (made by factories, so the hooks they return are wrapped). Each probe
    sums its own time in .bench_spent and, by KINDS, the time and calls in
    .bench_kind."""
    P = probe_mod.Probe
    P.bench_spent = 0.0

    def timed(f, owner, kind):
        def call(*a, **kw):
            t0 = clock()
            try:
                return f(*a, **kw)
            finally:
                dt = clock() - t0
                owner.bench_spent += dt
                k = owner.__dict__.setdefault("bench_kind", [[0.0, 0] for _ in KINDS])[kind]
                k[0] += dt
                k[1] += 1
        return call

    for name in ("step", "_after_optimizer_step", "_model_enter", "_call_begin", "_call_end"):
        def method(self, *a, _f=getattr(P, name), **kw):
            return timed(_f, self, 0)(self, *a, **kw)
        setattr(P, name, method)
    for name, kind in (("_forward_hook", 1), ("_backward_hook", 2), ("_block_enter", 1)):
        def factory(self, *a, _f=getattr(P, name), _k=kind, **kw):
            return timed(_f(self, *a, **kw), self, _k)
        setattr(P, name, factory)


def dispatch_cost(clock, n=20000):
    """What the in-probe clock leaves out: torch's dispatch of a module's
    forward hook (a call with a no-op hook against one without), and of a
    tensor hook (registered and called in backward, against none), in
    seconds, each the median of 5 alternating trials."""
    m = torch.nn.Linear(4, 4)
    x = torch.randn(2, 4, requires_grad=True)

    def forward(k):
        t0 = clock()
        for _ in range(k):
            m(x)
        return (clock() - t0) / k

    def backward(k, hook):
        t0 = clock()
        for _ in range(k):
            y = m(x)
            if hook:
                y.register_hook(lambda g: None)
            y.sum().backward()
        return (clock() - t0) / k
    fwd, bwd = [], []
    for _ in range(5):
        base = forward(n)
        h = m.register_forward_hook(lambda mod, i, o: None)
        fwd.append(forward(n) - base)
        h.remove()
        bwd.append(backward(n // 4, True) - backward(n // 4, False))
    return statistics.median(fwd), statistics.median(bwd)


def one_step(model, opt, x, y, probe, clock):
    t0 = clock()
    opt.zero_grad(set_to_none=True)
    out = model(x, y)
    loss = out[1] if isinstance(out, tuple) else out
    loss.backward()
    if probe is not None:
        probe.step(loss)
    opt.step()
    return clock() - t0


ACCUM, EVAL_EVERY, EVAL_ITERS = 4, 10, 2


def nanogpt_step(model, opt, x, y, probe, clock, it=[0]):
    """nanoGPT's train.py iteration: the LR set by hand (get_lr: warmup,
    then cosine), an evaluation under no_grad every EVAL_EVERY iterations
    (EVAL_ITERS forwards), gradient accumulation over ACCUM micro-batches
    of the batch, then step() and the update."""
    t0 = clock()
    k = it[0] = it[0] + 1
    lr = 1e-3 * min(1.0, k / 10) * (0.55 + 0.45 * __import__("math").cos(min(k, 1000) / 1000))
    for g in opt.param_groups:
        g["lr"] = lr
    if k % EVAL_EVERY == 0:
        model.eval()
        with torch.no_grad():
            for _ in range(EVAL_ITERS):
                model(x, y)
        model.train()
    opt.zero_grad(set_to_none=True)
    for xs, ys in zip(x.chunk(ACCUM), y.chunk(ACCUM)):
        out = model(xs, ys)
        loss = (out[1] if isinstance(out, tuple) else out) / ACCUM
        loss.backward()
    if probe is not None:
        probe.step(loss * ACCUM)
    opt.step()
    return clock() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", choices=sorted(SHAPES), default="L4d64")
    ap.add_argument("--windows", type=int, default=9, help="windows of 10 steps per variant")
    ap.add_argument("--seq", type=int, default=128, help="tokens per sequence (T)")
    ap.add_argument("--batch", type=int, help="sequences per batch (B; default the shape's)")
    ap.add_argument("--signature", choices=("loss", "logits"), default="loss",
                    help="the model returns its loss, or (logits, loss) as nanoGPT does")
    ap.add_argument("--vocab", type=int, default=256)
    ap.add_argument("--rss", action="store_true",
                    help="peak RSS of a run without the probe, every=1 and every=10, each "
                         "in its own process, instead of the time")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--wall", action="store_true", help="time the wall clock, not CPU time")
    ap.add_argument("--direct", action="store_true",
                    help="only the probed copies, and only the probe's own time")
    ap.add_argument("--loop", choices=("plain", "nanogpt"), default="plain",
                    help="nanogpt: train.py's iteration (a hand-set LR, an evaluation under "
                         "no_grad every %d steps, %d micro-batches accumulated)"
                    % (EVAL_EVERY, ACCUM))
    a = ap.parse_args()
    layers, dim, batch = SHAPES[a.shape]
    a.batch = a.batch or batch
    if a.child is not None:
        return rss_child(a, layers, dim)
    if a.rss:
        return rss(a)
    clock = time.perf_counter if a.wall else time.process_time
    clock_the_probe(clock)
    torch.set_num_threads(a.threads)
    tmp = tempfile.mkdtemp(prefix="nsbench.")
    x, y = models.batch(torch.Generator().manual_seed(1), b=a.batch, t=a.seq, v=a.vocab)
    runs = {}
    variants = (("off", None), ("every=1", 1), ("every=10", 10))
    for name, every in variants[1:] if a.direct else variants:
        m, opt = make(layers, dim, a.seq, a.signature, a.vocab)
        p = None if every is None else normscope_probe.attach(
            m, opt, path=os.path.join(tmp, "%d.nsj" % every), every=every)
        runs[name] = (m, opt, p, [])
    n_params = sum(q.numel() for q in next(iter(runs.values()))[0].parameters())
    if a.loop == "nanogpt":  # each copy keeps its own iteration count
        step = {k: (lambda *args, _c=[0]: nanogpt_step(*args, it=_c)) for k in runs}
    else:
        step = {k: one_step for k in runs}
    for k, (m, opt, p, _) in runs.items():  # warm up (step 1 of each probe is a measured one)
        step[k](m, opt, x, y, p, clock)
    spent = {k: [] for k in runs}
    for _ in range(a.windows * WINDOW):
        for k, (m, opt, p, times) in runs.items():
            before = p.bench_spent if p is not None else 0.0
            times.append(step[k](m, opt, x, y, p, clock))
            spent[k].append(p.bench_spent - before if p is not None else 0.0)
    for _, _, p, _ in runs.values():
        if p is not None:
            p.close()
    report(a, n_params, runs, spent)
    left_out(a, clock, runs)


def rss_child(a, layers, dim, steps=6):
    """One run of the --rss comparison, in this process: steps steps
    without the probe (--child 0) or with every=N; prints its peak RSS in
    MB (ru_maxrss)."""
    import resource
    torch.set_num_threads(a.threads)
    m, opt = make(layers, dim, a.seq, a.signature, a.vocab)
    x, y = models.batch(torch.Generator().manual_seed(1), b=a.batch, t=a.seq, v=a.vocab)
    every = int(a.child)
    p = None
    if every:
        p = normscope_probe.attach(m, opt, path=os.path.join(tempfile.mkdtemp(prefix="nsbench."),
                                                             "rss.nsj"), every=every)
    for _ in range(steps):
        one_step(m, opt, x, y, p, time.process_time)
    if p is not None:
        p.close()
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0)


def rss(a, trials=3):
    """Peak RSS without the probe, with every=1 and every=10, each in its
    own process (peak RSS is a process's), the three in turn, trials
    times: the medians (one process's peak varies by some 20 MB here),
    and their ratios."""
    import subprocess
    got = {0: [], 1: [], 10: []}
    for _ in range(trials):
        for every in got:
            cmd = [sys.executable, os.path.abspath(__file__), "--shape", a.shape, "--seq",
                   str(a.seq), "--batch", str(a.batch), "--signature", a.signature, "--vocab",
                   str(a.vocab), "--threads", str(a.threads), "--child", str(every)]
            got[every].append(float(subprocess.run(cmd, check=True, capture_output=True,
                                                   text=True).stdout.split()[-1]))
    med = {k: statistics.median(v) for k, v in got.items()}
    print("model %s, vocab %d, batch %d x %d, returns %s, BLAS %s: peak RSS, median of %d" % (
        a.shape, a.vocab, a.batch, a.seq, "(logits, loss)" if a.signature == "logits"
        else "the loss", blas(), trials))
    print("  without the probe %.0f MB, every=1 %.0f MB (x%.3f), every=10 %.0f MB (x%.3f)" % (
        med[0], med[1], med[1] / med[0], med[10], med[10] / med[0]))


def left_out(a, clock, runs):
    """Where each probed copy's time went, a step on average (the warm-up
    step included), and what the in-probe clock did not see: torch's
    dispatch of the hooks the copy called, a step."""
    fwd, bwd = dispatch_cost(clock)
    n = a.windows * WINDOW + 1
    for k, (_, _, p, times) in runs.items():
        if p is None:
            continue
        kinds = getattr(p, "bench_kind", [[0.0, 0] for _ in KINDS])
        print("%-9s a step: %s" % (k, ", ".join(
            "%s %.2f ms (%.0f calls)" % (name, 1e3 * t / n, c / n)
            for name, (t, c) in zip(KINDS, kinds))))
        cost = (kinds[1][1] * fwd + kinds[2][1] * bwd) / n
        print("%-9s left out: torch's dispatch, %.1f us a module hook and %.1f us a tensor "
              "hook: %.2f ms a step (%.3f%%)" % ("", 1e6 * fwd, 1e6 * bwd, 1e3 * cost,
                                                 100 * cost / statistics.median(times)))


def windows(v):
    return [sum(v[i:i + WINDOW]) for i in range(0, len(v), WINDOW)]


def iqr(v):
    q = statistics.quantiles(v, n=4) if len(v) > 1 else [v[0]] * 3
    return q[2] - q[0]


def report(a, n_params, runs, spent):
    """A row per copy: its median window, its overhead against the copy
    without the probe (when run), and the probe's own time over the rest
    of the step, window by window (median and spread)."""
    win = {k: windows(v[3]) for k, v in runs.items()}
    own = {k: windows(v) for k, v in spent.items()}
    print("model %s: %.2fM parameters, vocab %d, returns %s, batch %d x %d, %d thread(s), "
          "BLAS %s, %d windows of %d steps, %s time"
          % (a.shape, n_params / 1e6, a.vocab, "(logits, loss)" if a.signature == "logits"
             else "the loss", a.batch, a.seq, a.threads, blas(), a.windows, WINDOW,
             "wall" if a.wall else "CPU"))
    print("%-9s %12s %10s %8s %10s %8s" % ("", "step (ms)", "overhead", "spread", "in probe",
                                          "spread"))
    for k, w in win.items():
        diff = spread = "-"
        if "off" in win:
            ratios = [t / b for t, b in zip(w, win["off"])]
            diff = "%+.1f%%" % (100 * (statistics.median(ratios) - 1))
            spread = "%.1f%%" % (100 * iqr(ratios))
        share = [s / (t - s) for s, t in zip(own[k], w)]
        print("%-9s %12.1f %10s %8s %+9.2f%% %7.2f%%" % (
            k, 1e3 * statistics.median(w) / WINDOW, diff, spread,
            100 * statistics.median(share), 100 * iqr(share)))


if __name__ == "__main__":
    main()
