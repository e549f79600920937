"""test_replay.py - the CPU watch's replay has no side effects the user can
see: a forward hook of the user's runs once a step (also on the step
replayed), Python's random and numpy's random streams go on as without
the probe, and a hook that changes an output cannot make the probe name
the wrong module (the stream says the replay differed). And
on_nonfinite='raise' / 'pause' act at the first non-finite step."""
import os
import random
import threading
import time

import check
import models
import numpy
import torch

import normscope_probe

C = check.Check("probe replay")
torch.set_num_threads(1)
TMP = C.tmpdir()
FAULT = 7


class Drawing(models.GPT):
    """Draws from Python's random and numpy's in its forward (a stochastic
    depth or augmentation a user wrote), scaling its loss by the draws."""

    def forward(self, idx, targets):
        s = 1.0 + 0.01 * random.random() + 0.01 * float(numpy.random.rand())
        return super().forward(idx, targets) * s


def run(probed, hook_fault=False, every=10, steps=12, **opts):
    """(per-step losses, hook calls, next Python and numpy draws, stream
    path) of a run with an inf in h.2.mlp.c_fc's output at step FAULT
    (by the model, or by a forward hook of the user's keyed on its call
    count)."""
    torch.manual_seed(0)
    random.seed(5)
    numpy.random.seed(5)
    m = Drawing()
    fc = m.transformer.h[2].mlp.c_fc
    calls = [0]

    def hook(mod, inp, out):
        calls[0] += 1
        if hook_fault and calls[0] == FAULT:
            out = out.clone()
            out[0, 0, 0] = float("inf")
            return out
        return None
    fc.register_forward_hook(hook)
    if not hook_fault:
        orig = fc.forward
        fc.forward = lambda x: orig(x) * (float("inf") if step[0] == FAULT else 1.0)
    opt = torch.optim.SGD(m.parameters(), lr=0.01)
    gen = torch.Generator().manual_seed(2)
    path = os.path.join(TMP, "r%d%d.nsj" % (probed, hook_fault))
    probe = normscope_probe.attach(m, opt, path=path, every=every, overwrite=True, **opts) \
        if probed else None
    losses, step = [], [0]
    for s in range(1, steps + 1):
        step[0] = s
        x, y = models.batch(gen)
        opt.zero_grad()
        loss = m(x, y)
        loss.backward()
        if probe is not None:
            probe.step(loss)
        losses.append(float(loss))
        if s < FAULT:
            opt.step()
    if probe is not None:
        probe.close()
    return losses, calls[0], (random.random(), float(numpy.random.rand())), path


def side_effects():
    base = run(False)
    got = run(True)
    C.ok(got[1] == base[1] == 12, "a user's forward hook ran once a step, replay or not "
         "(%d, unprobed %d)" % (got[1], base[1]))
    C.ok(got[2] == base[2], "Python's and numpy's random streams go on as unprobed (%s vs %s)"
         % (got[2], base[2]))
    C.ok(got[0][:FAULT - 1] == base[0][:FAULT - 1], "the losses are the unprobed run's")
    rows = check.read_stream(got[3])[1]
    first = [r["first_nonfinite"] for r in rows if "first_nonfinite" in r]
    C.ok(first == ["transformer.h.2.mlp.c_fc, forward"],
         "the replay, with the draws put back, names the module (%s)" % first)
    hooked = run(True, hook_fault=True)
    rows = check.read_stream(hooked[3])[1]
    first = [(r["first_nonfinite"], r.get("first_nonfinite_layer")) for r in rows
             if "first_nonfinite" in r]
    C.ok(hooked[1] == 12 and len(first) == 1 and first[0][0].startswith("not named: the "
         "step's replay did not compute what the step did") and first[0][1] is None,
         "an inf a user's hook made: the hook is not run again, and nothing is named "
         "wrongly (%s, %d calls)" % (first, hooked[1]))


def raise_and_pause():
    try:
        run(True, on_nonfinite="raise")
        C.ok(False, "on_nonfinite='raise' raises")
    except FloatingPointError as e:
        C.ok("first non-finite at step %d: transformer.h.2.mlp.c_fc, forward" % FAULT in str(e),
             "on_nonfinite='raise' raises at step %d, naming the module (%s)" % (FAULT, e))
    path = os.path.join(TMP, "r10.nsj")
    rows = check.read_stream(path)[1]
    C.ok([r["step"] for r in rows] == [1], "raised on an unwritten step: the lines before it")
    done = []

    def resume():
        for _ in range(100):
            time.sleep(0.05)
            if os.path.exists(path) and '"nonfinite":1' in open(path).read():
                done.append(len(done))
                with open(path + ".ctl", "a") as f:
                    f.write("1 resume\n")
                return
    t = threading.Thread(target=resume)
    t.start()
    run(True, on_nonfinite="pause")
    t.join()
    ev = [(e["event"], e["step"]) for e in check.read_stream(path)[2]
          if e["event"] in ("paused", "resumed")]
    C.ok(done and ev == [("paused", FAULT), ("resumed", FAULT)],
         "on_nonfinite='pause' holds the run at step %d until resumed (%s)" % (FAULT, ev))


def counts():
    """Every step counted, written or not: with every=10 and the loss
    non-finite from step FAULT on, the line of step 11 says 5 non-finite
    steps and the end line 6 of 12, under both watches."""
    for watch in ("replay", "device"):
        os.environ["NORMSCOPE_PROBE_WATCH"] = watch
        torch.manual_seed(0)
        m = models.GPT(n_layer=1)
        fc = m.transformer.h[0].mlp.c_fc
        orig = fc.forward
        step = [0]
        fc.forward = lambda x: orig(x) * (float("inf") if step[0] >= FAULT else 1.0)
        opt = torch.optim.SGD(m.parameters(), lr=0.01)
        gen = torch.Generator().manual_seed(2)
        path = os.path.join(TMP, "count_%s.nsj" % watch)
        with normscope_probe.attach(m, opt, path=path, every=10) as probe:
            for s in range(1, 13):
                step[0] = s
                models.train_step(m, opt, probe, *models.batch(gen))
        del os.environ["NORMSCOPE_PROBE_WATCH"]
        _, rows, ev = check.read_stream(path)
        end = [e for e in ev if e["event"] == "end"][0]
        C.ok([(r["step"], r.get("nonfinite_steps")) for r in rows] == [(1, 0), (11, 5)] and
             (end.get("steps"), end.get("nonfinite_steps")) == (12, 6),
             "%s watch: non-finite steps counted on every step (%s; end %s)"
             % (watch, [(r["step"], r.get("nonfinite_steps")) for r in rows], end))


side_effects()
raise_and_pause()
counts()
C.close()
