"""test_replay.py - the CPU watch's replay has no side effects the user can
see: a forward hook of the user's runs once a step (also on the step
replayed), Python's random and numpy's random streams go on as without
the probe, and a hook that changes an output cannot make the probe name
the wrong module (the stream says the replay differed, and that the
user's hooks ran again). Hooks that are part of the model run in the
replay: a weight_norm model and a model whose forward hook injects the
fault at a step that is not written get the module named. And
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
    _, rows, ev = check.read_stream(hooked[3])
    first = [(r["first_nonfinite"], r.get("first_nonfinite_layer")) for r in rows
             if "first_nonfinite" in r]
    notes = [e["text"] for e in ev if e["event"] == "note" and "run twice" in e["text"]]
    # keyed on its call count, the hook cannot make the inf again: the
    # replay without it, then with it, differ from the step
    C.ok(hooked[1] == 13 and len(first) == 1 and first[0][0].startswith("not named: the "
         "step's replay did not compute what the step did") and first[0][1] is None,
         "an inf a hook keyed on its call count made: nothing is named wrongly (%s, %d calls)"
         % (first, hooked[1]))
    C.ok(len(notes) == 1 and "step %d" % FAULT in notes[0],
         "the stream says the user's hooks ran again in that step (%s)" % notes)


def model_hooks():
    """weight_norm's pre-hook computes fc1's weight from weight_g and
    weight_v: an inf put into blocks.1.fc1.weight_g at step 15 (not a
    written step: every=10) is named at blocks.1.fc1 in the forward, as
    it is without weight_norm, and the parameter that held it is said; and
    an inf a forward hook returns at step 15 (keyed on the step, as a fault
    injector is) is named at its module."""
    class Blocks(torch.nn.Module):
        def __init__(self, wn):
            super().__init__()
            self.emb = torch.nn.Embedding(256, 16)
            self.blocks = torch.nn.ModuleList()
            for _ in range(3):
                b = torch.nn.Module()
                b.fc1, b.fc2 = torch.nn.Linear(16, 32), torch.nn.Linear(32, 16)
                if wn:
                    b.fc1 = torch.nn.utils.weight_norm(b.fc1)
                self.blocks.append(b)
            self.head = torch.nn.Linear(16, 256)

        def forward(self, idx, targets):
            x = self.emb(idx)
            for b in self.blocks:
                x = x + b.fc2(torch.relu(b.fc1(x)))
            return torch.nn.functional.cross_entropy(self.head(x).view(-1, 256),
                                                     targets.reshape(-1))
    for name in ("plain", "weight_norm", "hook"):
        torch.manual_seed(0)
        m = Blocks(name == "weight_norm")
        step = [0]
        if name == "hook":
            def hook(mod, inp, out):
                return out * float("inf") if step[0] == 15 else None
            m.blocks[1].fc1.register_forward_hook(hook)
        opt = torch.optim.SGD(m.parameters(), lr=0.01)
        gen = torch.Generator().manual_seed(2)
        path = os.path.join(TMP, "mh_%s.nsj" % name)
        with normscope_probe.attach(m, opt, path=path, every=10) as probe:
            for s in range(1, 18):
                step[0] = s
                if s == 15 and name != "hook":
                    with torch.no_grad():
                        w = m.blocks[1].fc1.weight_g if name == "weight_norm" else \
                            m.blocks[1].fc1.weight
                        w[0].fill_(float("inf"))
                x, y = models.batch(gen)
                opt.zero_grad()
                loss = m(x, y)
                loss.backward()
                probe.step(loss)
                if s < 15:
                    opt.step()
        # not a written step: the end line names it
        ev = check.read_stream(path)[2]
        first = [(e.get("first_nonfinite_step"), e.get("first_nonfinite")) for e in ev
                 if e["event"] == "end"]
        want = "blocks.1.fc1, forward" + {"plain": " (its weight was not finite before the step)",
                                          "weight_norm": " (its weight_g was not finite before "
                                                         "the step)", "hook": ""}[name]
        C.ok(first == [(15, want)],
             "%s: the fault at step 15 is named at blocks.1.fc1 (%s)" % (name, first))


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
model_hooks()
raise_and_pause()
counts()
C.close()
