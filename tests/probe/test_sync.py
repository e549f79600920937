"""test_sync.py - under the accelerator's watch, at most one host
synchronization per measured step and none on the others; under the CPU's
(where a read costs nothing) one scalar per step on top of that: every way
a tensor's value reaches Python (item, tolist, bool, float, int, numpy) is
counted while the probe's own code runs. Both watches run here, on the CPU
(NORMSCOPE_PROBE_WATCH names one)."""
import os

import check
import models
import torch

import normscope_probe

C = check.Check("probe sync")
torch.set_num_threads(1)
TMP = C.tmpdir()
COUNT = {"on": False, "n": 0}
READS = ("item", "tolist", "__bool__", "__float__", "__int__", "numpy")


def counting(name):
    orig = getattr(torch.Tensor, name)

    def f(self, *a, **kw):
        if COUNT["on"]:
            COUNT["n"] += 1
        return orig(self, *a, **kw)
    return orig, f


def counted(fn):
    def f(*a, **kw):
        was, COUNT["on"] = COUNT["on"], True
        try:
            return fn(*a, **kw)
        finally:
            COUNT["on"] = was
    return f


def run(every, autocast):
    m = models.GPT(n_layer=3)
    opt = torch.optim.SGD(m.parameters(), lr=0.01)
    gen = torch.Generator().manual_seed(1)
    path = os.path.join(TMP, "s%d%d%s.nsj" % (every, autocast,
                                              os.environ.get("NORMSCOPE_PROBE_WATCH")))
    per_step = []
    with normscope_probe.attach(m, opt, path=path, every=every, update_every=2) as probe:
        probe.step = counted(probe.step)
        probe._after_optimizer_step = counted(probe._after_optimizer_step)
        for _ in range(8):
            x, y = models.batch(gen)
            opt.zero_grad()
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
                loss = m(x, y)
            COUNT["n"] = 0
            COUNT["on"] = True  # the tensor hooks run inside backward
            loss.backward()
            COUNT["on"] = False
            probe.step(loss)
            opt.step()
            per_step.append(COUNT["n"])
    return per_step


saved = {}
for name in READS:
    saved[name], f = counting(name)
    setattr(torch.Tensor, name, f)
try:
    for watch, extra in (("device", 0), ("replay", 1)):
        os.environ["NORMSCOPE_PROBE_WATCH"] = watch
        got = run(1, False)
        C.ok(got == [1 + extra] * 8, "%s watch, fp32, every step: %d read(s) a step (%s)"
             % (watch, 1 + extra, got))
        got = run(3, False)
        want = [1 + extra if k % 3 == 0 else extra for k in range(8)]
        C.ok(got == want, "%s watch, every=3: %s (%s)" % (watch, want, got))
        got = run(1, True)
        C.ok(got == [1 + extra] * 8, "%s watch, bf16 autocast: %d read(s) a step (%s)"
             % (watch, 1 + extra, got))
finally:
    os.environ.pop("NORMSCOPE_PROBE_WATCH", None)
    for name, orig in saved.items():
        setattr(torch.Tensor, name, orig)
C.close()
