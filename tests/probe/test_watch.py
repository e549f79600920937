"""test_watch.py - what a run's stream says when it goes wrong or ends:
with every=10 an inf injected at step 15, in a module's output or in its
input gradient, is named at its true step and module (in the next
measured step, or in the end line at close), by the CPU's watch and by
the accelerator's (NORMSCOPE_PROBE_WATCH=device); the CPU watch's replay
of a step leaves the random state, the buffers and the gradients as they
were, passes keyword arguments, and no module hook runs between measured
steps; a module
shared by all blocks books each call to the block running it; the end line
at close, at normal exit, on an uncaught exception and on SIGTERM, none
when the writer is killed; and the placement, norm class, precision and
tokens/s the probe can know; and a long run's memory stays flat. Also:
a loss scaled for one step's backward (the replay starts from the
gradient it got), and gradients finite but too large for float32's sums
and squares (not called non-finite; their norms written as they are)."""
import math
import os
import signal
import subprocess
import sys
import textwrap
import time

import check
import models
import torch

import normscope_probe

C = check.Check("probe watch")
torch.set_num_threads(1)
TMP = C.tmpdir()
BAD = 15


def faulty_gpt():
    torch.manual_seed(0)
    m = models.GPT(n_layer=4)
    ca = m.transformer.h[2].attn.c_attn
    f = models.Faulty(ca.in_features, ca.out_features)
    f.load_state_dict(ca.state_dict())
    m.transformer.h[2].attn.c_attn = f
    return m, f


def train(m, path, steps, every, arm=None, opt=True, scale=None):
    """steps of SGD under the probe; arm(s) before step s's forward, and
    scale(s) multiplies its loss for the backward (as a loss scaler does)."""
    o = torch.optim.SGD(m.parameters(), lr=1e-3) if opt else None
    gen = torch.Generator().manual_seed(3)
    with normscope_probe.attach(m, o, path=path, every=every) as probe:
        for s in range(1, steps + 1):
            if arm:
                arm(s)
            x, y = models.batch(gen)
            loss = m(x, y)
            (loss * scale(s) if scale else loss).backward()
            probe.step(loss)
            if o:
                o.step()
                o.zero_grad()
    return check.read_stream(path)


def every_ten():
    m, f = faulty_gpt()

    def arm(s):
        f.armed = s == BAD
    _, rows, ev = train(m, os.path.join(TMP, "e10.nsj"), 25, 10, arm)
    C.ok([r["step"] for r in rows] == [1, 11, 21], "every=10 writes steps 1, 11, 21")
    got = [(r["step"], r.get("first_nonfinite_step"), r["first_nonfinite"]) for r in rows
           if "first_nonfinite" in r]
    C.ok(got == [(21, BAD, "transformer.h.2.attn.c_attn, forward")],
         "step 21's line names the true first: step 15, h.2.attn.c_attn (%s)" % got)
    C.ok([r.get("first_nonfinite_layer") for r in rows if "first_nonfinite" in r] == [2],
         "and its layer, 2")
    end = [e for e in ev if e["event"] == "end"]
    C.ok(len(end) == 1 and end[0]["reason"] == "close" and "first_nonfinite" not in end[0],
         "one end line, reason close, nothing left to say")
    # closed at step 18: no measured step after 15, the end line says it
    m, f = faulty_gpt()
    _, rows, ev = train(m, os.path.join(TMP, "e10b.nsj"), 18, 10, arm)
    end = [e for e in ev if e["event"] == "end"]
    C.ok(not any("first_nonfinite" in r for r in rows) and len(end) == 1 and
         end[0].get("first_nonfinite_step") == BAD and
         end[0].get("first_nonfinite") == "transformer.h.2.attn.c_attn, forward",
         "a run closed before the next measured step: the end line names step 15 (%s)" % end)
    # healthy: nothing is named
    torch.manual_seed(0)
    _, rows, ev = train(models.GPT(n_layer=2), os.path.join(TMP, "ok.nsj"), 12, 5)
    C.ok(not any("first_nonfinite" in x for x in rows + ev), "a healthy run names nothing")


class InfGrad(torch.autograd.Function):
    """The identity, whose backward puts an inf in the gradient."""
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        g = g.clone()
        g.view(-1)[0] = float("inf")
        return g


class FaultyGrad(torch.nn.Linear):
    """A Linear whose gradient holds one inf while `armed`: its input
    gradient is the first thing the backward makes that is not finite."""
    armed = False

    def forward(self, x):
        y = super().forward(x)
        return InfGrad.apply(y) if self.armed else y


def gpt_fc(cls):
    """A 3-layer GPT whose h.1.mlp.c_fc is a cls (a Linear) with its
    weights; the model and that module."""
    torch.manual_seed(0)
    m = models.GPT(n_layer=3)
    fc = m.transformer.h[1].mlp.c_fc
    f = cls(fc.in_features, fc.out_features)
    f.load_state_dict(fc.state_dict())
    m.transformer.h[1].mlp.c_fc = f
    return m, f


def backward_fault():
    """every=10, an inf made in the backward of h.1.mlp.c_fc at step 15:
    named with its step and module, as the backward's, by both watches."""
    for watch in ("replay", "device"):
        os.environ["NORMSCOPE_PROBE_WATCH"] = watch
        m, f = gpt_fc(FaultyGrad)

        def arm(s):
            f.armed = s == BAD
        _, rows, _ = train(m, os.path.join(TMP, "bwd_%s.nsj" % watch), 25, 10, arm)
        got = [(r.get("first_nonfinite_step"), r["first_nonfinite"],
                r.get("first_nonfinite_layer")) for r in rows if "first_nonfinite" in r]
        C.ok(got == [(BAD, "transformer.h.1.mlp.c_fc, backward", 1)],
             "%s watch: an inf made in a backward is named: step 15, h.1.mlp.c_fc, layer 1 (%s)"
             % (watch, got))
    os.environ.pop("NORMSCOPE_PROBE_WATCH", None)


class HalfGrad(torch.autograd.Function):
    """The identity, whose backward rounds the gradient to float16, as a
    half-precision backward does: beyond 65504 it is inf."""
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        return g.half().float()


class HalfGradLinear(torch.nn.Linear):
    def forward(self, x):
        return HalfGrad.apply(super().forward(x))


def scaled_backward():
    """every=10, the loss scaled by 2^30 for step 15's backward only (a
    loss scaler's first step, say) in a model whose h.1.mlp.c_fc has a
    float16 backward: its gradient overflows there and nowhere else.
    Named with step and module by both watches: the CPU's replay runs the
    backward from the gradient the step's loss got, not from 1."""
    for watch in ("replay", "device"):
        os.environ["NORMSCOPE_PROBE_WATCH"] = watch
        m, _ = gpt_fc(HalfGradLinear)
        _, rows, _ = train(m, os.path.join(TMP, "scaled_%s.nsj" % watch), 25, 10,
                           scale=lambda s: 2.0 ** 30 if s == BAD else 1.0)
        got = [(r.get("first_nonfinite_step"), r["first_nonfinite"]) for r in rows
               if "first_nonfinite" in r]
        C.ok(got == [(BAD, "transformer.h.1.mlp.c_fc, backward")],
             "%s watch: a scaled backward's overflow is named: step 15, h.1.mlp.c_fc (%s)"
             % (watch, got))
    os.environ.pop("NORMSCOPE_PROBE_WATCH", None)


def norm64(params):
    """The L2 norm of the parameters' gradients, in float64."""
    return math.sqrt(sum(float((p.grad.double() ** 2).sum()) for p in params))


def huge_finite():
    """Gradients that are finite but past what float32 sums and squares
    hold: two values of 1e20 in h.1's c_fc at step 1 (written: its norm
    squared passes 3.4e38) and of 3e38 at step 5 (not written: their sum
    passes it). The CPU watch's one read trips on both, and the stream
    names nothing non-finite; step 1's ffn gradient norm of layer 1 and
    the total are the float64 ones, not inf."""
    torch.manual_seed(0)
    m = models.GPT(n_layer=2)
    gen = torch.Generator().manual_seed(3)
    path = os.path.join(TMP, "huge.nsj")
    big = {1: 1e20, 5: 3e38}
    with normscope_probe.attach(m, None, path=path, every=10) as probe:
        for s in range(1, 9):
            x, y = models.batch(gen)
            loss = m(x, y)
            loss.backward()
            if s in big:
                m.transformer.h[1].mlp.c_fc.weight.grad.view(-1)[:2] = big[s]
            if s == 1:
                want = (norm64(m.transformer.h[1].mlp.parameters()), norm64(m.parameters()))
            probe.step(loss)
            m.zero_grad()
    _, rows, ev = check.read_stream(path)
    C.ok(len(rows) == 1 and not any("first_nonfinite" in r for r in rows + ev),
         "gradients of 1e20 and 3e38 (squares and sum past float32) are not called non-finite")
    got = (rows[0]["l1_grad_ffn"], rows[0]["grad_norm"]) if rows else (None, None)
    C.ok(all(g is not None and check.rel(g, w) < 1e-6 for g, w in zip(got, want)),
         "step 1's gradient norms are the float64 ones: %s (want %s)" % (got, want))


class NetBlock(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.lin = models.Faulty(c, c)
        self.drop = torch.nn.Dropout(0.5)
        self.bn = torch.nn.BatchNorm1d(c)

    def forward(self, x):
        y = self.drop(self.lin(x))
        return x + self.bn(y.transpose(1, 2)).transpose(1, 2)


class Net(torch.nn.Module):
    """Dropout (random state), BatchNorm (buffers the forward changes) and
    a keyword-only argument: what a replay must get right."""

    def __init__(self, c=16):
        super().__init__()
        self.emb = torch.nn.Embedding(256, c)
        self.blocks = torch.nn.ModuleList([NetBlock(c) for _ in range(3)])
        self.head = torch.nn.Linear(c, 256)

    def forward(self, x, *, targets):
        h = self.emb(x)
        for b in self.blocks:
            h = b(h)
        return torch.nn.functional.cross_entropy(self.head(h).flatten(0, 1), targets.flatten())


def replay_no_trace():
    """The CPU watch's replay at the faulty step: blocks.1.lin named, and
    after probe.step the random state, BatchNorm's running statistics and
    every .grad are what they were before it; between measured steps no
    module of the model has a hook."""
    torch.manual_seed(0)
    m = Net()
    o = torch.optim.SGD(m.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(5)
    hooks = []
    same = True
    with normscope_probe.attach(m, o, path=os.path.join(TMP, "trace.nsj"), every=4) as probe:
        for s in range(1, 8):
            m.blocks[1].lin.armed = s == 6
            x, y = models.batch(gen)
            loss = m(x, targets=y)
            hooks.append(len(m.blocks[0].lin._forward_hooks))
            loss.backward()
            torch.rand(3)  # the state at step() is not the forward's
            before = (torch.get_rng_state(), [b.clone() for b in m.buffers()],
                      [p.grad.clone() for p in m.parameters()])
            probe.step(loss)
            after = (torch.get_rng_state(), list(m.buffers()), [p.grad for p in m.parameters()])
            same = same and torch.equal(before[0], after[0]) and all(
                torch.equal(a, b) or (a.isnan() == b.isnan()).all() and
                torch.equal(a.nan_to_num(), b.nan_to_num())
                for xs, ys in zip(before[1:], after[1:]) for a, b in zip(xs, ys))
            o.step()
            o.zero_grad()
    _, rows, ev = check.read_stream(os.path.join(TMP, "trace.nsj"))
    end = [e for e in ev if e["event"] == "end"]
    C.ok(len(end) == 1 and end[0].get("first_nonfinite_step") == 6 and
         end[0].get("first_nonfinite") == "blocks.1.lin, forward",
         "a model called with a keyword argument: step 6, blocks.1.lin (%s)" % end)
    C.ok(same, "the replay leaves the random state, the buffers and the gradients as they were")
    C.ok(hooks == [1, 0, 0, 0, 1, 0, 0], "module hooks on measured steps only (%s)" % hooks)


class Block(torch.nn.Module):
    def __init__(self, c, act, gain):
        super().__init__()
        self.lin = torch.nn.Linear(c, c)
        self.act = act  # one module object in every block
        with torch.no_grad():
            self.lin.weight.mul_(gain)

    def forward(self, x):
        return x + self.act(self.lin(x))


class Shared(torch.nn.Module):
    def __init__(self, c=16):
        super().__init__()
        act = torch.nn.GELU()
        self.blocks = torch.nn.ModuleList([Block(c, act, g) for g in (0.1, 1.0, 30.0)])

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return x.pow(2).mean()


def one_step(m, x, name):
    """The stream of one probed step: m on x, its output's backward."""
    path = os.path.join(TMP, name)
    p = normscope_probe.attach(m, path=path)
    m(x).backward()
    p.step(0.0)
    p.close()
    head, rows, _ = check.read_stream(path)
    return head, rows


def shared_module():
    torch.manual_seed(0)
    m = Shared()
    x = torch.randn(4, 16)
    want, h = [], x
    with torch.no_grad():  # the independent computation: every output made in block b
        for b in m.blocks:
            z = b.lin(h)
            a = torch.nn.functional.gelu(z)
            h2 = h + a
            want.append(max(z.abs().max().item(), a.abs().max().item(), h2.abs().max().item()))
            h = h2
    head, rows = one_step(m, x, "shared.nsj")
    got = [rows[0]["l%d_act_max" % i] for i in range(3)]
    C.ok(all(check.rel(a, b) < 1e-6 for a, b in zip(got, want)),
         "a shared module's calls go to the block running them (%s, want %s)" % (got, want))
    C.ok(head.get("shared_modules") == ["blocks.0.act"], "the header names the shared module (%s)"
         % head.get("shared_modules"))


def contracting():
    """The modules whose output the measured step skips for act_max (|f(x)|
    <= |x|): the claim holds on 200001 values over [-1e4, 1e4] and the
    infinities; modules it does not hold for are not skipped; and a block
    that ends in one (its output the skipped tensor) still gets its
    act_max and resid_max, as an independent computation finds them."""
    from normscope_probe import probe as pm
    nn = torch.nn
    x = torch.cat([torch.linspace(-1e4, 1e4, 200001), torch.linspace(-3, 3, 20001),
                   torch.tensor([float("inf"), -float("inf"), 0.0])])
    yes = [nn.GELU(), nn.GELU(approximate="tanh"), nn.ReLU(), nn.SiLU(), nn.Tanh(), nn.ReLU6(),
           nn.Hardtanh(-2, 3), nn.LeakyReLU(0.2), nn.ELU(), nn.Identity(), nn.Dropout(0.5).eval()]
    class Doubled(nn.ReLU):  # a subclass computes what it likes
        def forward(self, h):
            return 2 * h
    no = [nn.Sigmoid(), nn.LeakyReLU(2.0), nn.Hardtanh(0.5, 1.0), nn.ELU(alpha=2.0),
          nn.Dropout(0.5), nn.Softplus(), Doubled()]
    # |f(x)| <= |x|, but for GELU and SiLU at -inf (NaN; the stream writes
    # inf and NaN alike, as null)
    held = all(bool((m(x).abs() <= x.abs()).all()) or
               bool(m(x[-2:-1]).isnan().all()) and bool((m(x[:-2]).abs() <= x[:-2].abs()).all())
               for m in yes)
    C.ok(held and all(pm._contracting(m) for m in yes), "contracting: |f(x)| <= |x| for %s"
         % ", ".join(type(m).__name__ for m in yes))
    C.ok(not any(pm._contracting(m) for m in no), "not claimed: %s"
         % ", ".join(type(m).__name__ for m in no))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList([nn.Sequential(nn.Linear(8, 8), nn.GELU())
                                         for _ in range(2)])

        def forward(self, h):
            for b in self.blocks:
                h = b(h)
            return h.square().mean()
    torch.manual_seed(2)
    m = Net()
    x = torch.randn(5, 8) * 3
    want, h = [], x
    with torch.no_grad():
        for b in m.blocks:
            z = b[0](h)
            h = torch.nn.functional.gelu(z)
            want.append((max(z.abs().max().item(), h.abs().max().item()), h.abs().max().item()))
    _, rows = one_step(m, x, "contract.nsj")
    got = [(rows[0]["l%d_act_max" % i], rows[0]["l%d_resid_max" % i]) for i in range(2)]

    # a dropout attached in eval mode, then trained: it scales up, so it counts
    class Drop(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList([nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5),
                                                       nn.Linear(8, 8))])

        def forward(self, h):
            return self.blocks[0](h).square().mean()
    torch.manual_seed(4)
    d = Drop().eval()
    pd = normscope_probe.attach(d, path=os.path.join(TMP, "drop.nsj"))
    d.train()
    xd = torch.randn(6, 8) * 2
    torch.manual_seed(7)
    d(xd).backward()
    pd.step(0.0)
    pd.close()
    torch.manual_seed(7)
    with torch.no_grad():
        a = d.blocks[0][0](xd)
        b = d.blocks[0][1](a)
        c = d.blocks[0][2](b)
    want_d = max(a.abs().max().item(), b.abs().max().item(), c.abs().max().item())
    got_d = check.read_stream(os.path.join(TMP, "drop.nsj"))[1][0]["l0_act_max"]
    C.ok(check.rel(got_d, want_d) < 1e-6 and b.abs().max() > a.abs().max(),
         "a dropout attached in eval mode and then trained counts (%s, want %s)"
         % (got_d, want_d))
    C.ok(all(check.rel(a, c) < 1e-6 and check.rel(b, d) < 1e-6
             for (a, b), (c, d) in zip(got, want)),
         "blocks ending in a GELU: act_max and resid_max (%s, want %s)" % (got, want))


SCRIPT = textwrap.dedent("""
    import sys, os, signal, time
    sys.path[:0] = [%r, %r]
    import torch, models, normscope_probe
    torch.set_num_threads(1)
    how, path = sys.argv[1], sys.argv[2]
    m = models.GPT(n_layer=1)
    opt = torch.optim.SGD(m.parameters(), lr=1e-3)
    p = normscope_probe.attach(m, opt, path=path)
    gen = torch.Generator().manual_seed(0)
    if how == "raise0":  # the first forward fails: no step is made
        x, y = models.batch(gen)
        m(x, y[:, :-1])
    for s in range(3):
        x, y = models.batch(gen)
        m(x, y).backward()
        p.step(0.0)
        opt.step()
    if how == "raise":
        raise ValueError("bad batch")
    if how in ("term", "kill"):
        print("ready", flush=True)
        time.sleep(60)
    if how == "handler":  # the user's own handler is theirs: the probe leaves it
        signal.signal(signal.SIGTERM, lambda *a: sys.exit(7))
        print("ready", flush=True)
        time.sleep(60)
""") % (os.path.join(check.HERE, "..", "..", "src", "probe"), check.HERE)


def ends():
    script = os.path.join(TMP, "end.py")
    with open(script, "w") as f:
        f.write(SCRIPT)
    for how, want in (("exit", "exit"), ("raise", "exception"), ("term", "signal"),
                      ("kill", None), ("handler", "exit")):
        path = os.path.join(TMP, "end_%s.nsj" % how)
        pr = subprocess.Popen([sys.executable, script, how, path], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
        if how in ("term", "kill", "handler"):
            pr.stdout.readline()
            pr.send_signal(signal.SIGKILL if how == "kill" else signal.SIGTERM)
        out, err = pr.communicate(timeout=120)
        _, rows, ev = check.read_stream(path)
        end = [e for e in ev if e["event"] == "end"]
        C.ok(len(rows) == 3 and [e.get("reason") for e in end] == ([want] if want else []),
             "%s: end line %s (%s)" % (how, want, end))
        if how == "raise":
            C.ok("ValueError" in end[0]["text"] and "bad batch" in err,
                 "the exception is named and still reaches the user (%s)" % end[0]["text"])
        if how == "term":
            C.ok(pr.returncode == -signal.SIGTERM, "SIGTERM still ends the process by it (%d)"
                 % pr.returncode)
        if how == "handler":
            C.ok(pr.returncode == 7, "the user's SIGTERM handler ran (exit %d)" % pr.returncode)
    # a run that fails before its first step says so, where an empty file
    # would read as a run yet to start; the placement, which only a whole
    # forward shows for this model, is not guessed
    path = os.path.join(TMP, "end_raise0.nsj")
    pr = subprocess.run([sys.executable, script, "raise0", path], capture_output=True, text=True,
                        timeout=120)
    head, rows, ev = check.read_stream(path)
    end = [e for e in ev if e["event"] == "end"]
    C.ok(pr.returncode != 0 and head.get("n_layer") == 1 and not rows and len(end) == 1 and
         end[0].get("reason") == "exception" and end[0].get("step") == 0 and
         "run ended at step 0: exception" in end[0]["text"],
         "an exception before the first step: a header and its end line (%s, %s)" % (head, end))
    C.ok("norm" not in head and head.get("norm_class") == "LayerNorm",
         "before a whole forward: no placement guessed, the norm's class said (%s)" % head)


class PostLN(torch.nn.Module):
    def __init__(self, c=16):
        super().__init__()
        self.attn, self.mlp, self.norm = (torch.nn.Linear(c, c), torch.nn.Linear(c, c),
                                          torch.nn.LayerNorm(c))

    def forward(self, x):
        return self.norm(x + self.mlp(self.attn(x)))


def known_settings():
    m = torch.nn.Sequential(torch.nn.ModuleList([PostLN(), PostLN()]))

    def fwd(x):
        for b in m[0]:
            x = b(x)
        return x.sum()
    path = os.path.join(TMP, "post.nsj")
    p = normscope_probe.attach(m, path=path)
    for _ in range(3):
        fwd(torch.randn(4, 16)).backward()
        p.step(0.0)
    p.close()
    head, rows, _ = check.read_stream(path)
    C.ok(head.get("norm") == "post" and head.get("norm_class") == "LayerNorm" and
         rows[0].get("norm") == "post" and rows[0].get("norm_kind") == "layernorm" and
         rows[0].get("precision") == "fp32", "Post-LN from the module order, the norm class, "
         "fp32 (%s)" % {k: rows[0].get(k) for k in ("norm", "norm_kind", "precision")})
    now = time.time()  # the lines' times are rounded to the millisecond, maybe up
    C.ok(all(isinstance(r.get("t"), float) and -0.001 <= now - r["t"] < 120 for r in rows) and
         rows[-1]["t"] > rows[0]["t"], "every step line has a timestamp, to the millisecond (%s)"
         % [r.get("t") for r in rows])
    path = os.path.join(TMP, "pre.nsj")
    _, rows, _ = train(models.EncoderLM(norm_first=True), path, 3, 1)
    C.ok(rows[0].get("norm") == "pre" and "tokens_per_s" not in rows[0] and
         rows[1].get("tokens_per_s", 0) > 0 and "warmup" not in rows[1],
         "norm_first=True is pre; tokens/s from the batch shape from step 2; warmup unsaid")
    # a hand-written block on nn.MultiheadAttention: the attention module
    # runs without its out_proj being called, and counts as a leaf
    for post, want in ((True, "post"), (False, "pre")):
        path = os.path.join(TMP, "mha_%s.nsj" % want)
        _, rows, _ = train(models.MHALM(post=post), path, 2, 1)
        C.ok(rows[0].get("norm") == want, "Post-LN or Pre-LN on nn.MultiheadAttention is %s (%s)"
             % (want, rows[0].get("norm")))


def no_leak():
    """A long run holds its memory: each step's records hold its
    activations through the backward hooks, which must be let go when the
    step ends (the hook closures hold the records: a cycle through
    autograd that Python's collector does not see). Without that, this
    run grows by about 8 MB a step."""
    def rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    torch.manual_seed(0)
    m = models.GPT(n_layer=4, c=64, nh=1, t=64)
    o = torch.optim.AdamW(m.parameters(), lr=1e-4)
    x, y = models.batch(torch.Generator().manual_seed(1), b=8, t=64)
    grew = {}
    for every in (1, 10):
        with normscope_probe.attach(m, o, path=os.path.join(TMP, "leak%d.nsj" % every),
                                    every=every, overwrite=True) as probe:
            for s in range(1, 51):
                if s == 11:
                    at10 = rss()
                loss = m(x, y)
                loss.backward()
                probe.step(loss)
                o.step()
                o.zero_grad(set_to_none=True)
            grew[every] = rss() - at10
    C.ok(all(g < 40 for g in grew.values()),
         "40 steps hold their memory at every=1 and every=10: grew %s MiB"
         % {k: round(v) for k, v in grew.items()})


every_ten()
backward_fault()
scaled_backward()
huge_finite()
replay_no_trace()
shared_module()
contracting()
ends()
known_settings()
no_leak()
C.close()
