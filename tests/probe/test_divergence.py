"""test_divergence.py - the first non-finite is named at the right module,
pass and step: an inf injected into one module's forward output, and a NaN
made by one module's backward only."""
import os

import check
import models
import torch

import normscope_probe

C = check.Check("probe divergence")
torch.set_num_threads(1)
TMP = C.tmpdir()
BAD_STEP = 6


class NanGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        return g * float("nan")


class Boom(torch.nn.Module):
    """Identity forward; while `armed`, a NaN gradient on the way back."""
    armed = False

    def forward(self, x):
        return NanGrad.apply(x) if self.armed else x


def run(path, arm, steps=BAD_STEP + 2):
    torch.manual_seed(0)
    m = models.GPT(n_layer=4)
    fc = m.transformer.h[2].mlp.c_fc
    faulty = models.Faulty(fc.in_features, fc.out_features)
    faulty.load_state_dict(fc.state_dict())
    m.transformer.h[2].mlp.c_fc = faulty
    boom = Boom()
    mlp1 = m.transformer.h[1].mlp
    mlp1.gelu = torch.nn.Sequential(mlp1.gelu, boom)  # c_proj(boom(gelu(c_fc(x))))
    opt = torch.optim.SGD(m.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(3)
    with normscope_probe.attach(m, opt, path=path) as probe:
        for s in range(1, steps + 1):
            arm(faulty, boom, s == BAD_STEP)
            x, y = models.batch(gen)
            opt.zero_grad()
            loss = m(x, y)
            loss.backward()
            probe.step(loss)
            opt.step()
    return check.read_stream(path)


def first(rows):
    return [(r["step"], r["first_nonfinite"]) for r in rows if "first_nonfinite" in r]


def forward_inf():
    def arm(faulty, boom, on):
        faulty.armed = on
    _, rows, _ = run(os.path.join(TMP, "fwd.nsj"), arm)
    got = first(rows)
    C.ok(got == [(BAD_STEP, "transformer.h.2.mlp.c_fc, forward")],
         "forward inf named at module, pass and step (got %s)" % got)
    bad = rows[BAD_STEP - 1]
    C.ok(bad["loss"] is None and bad.get("loss_nonfinite") in ("nan", "inf"),
         "non-finite loss written as null plus loss_nonfinite")
    C.ok(all("loss_nonfinite" not in r for r in rows[:BAD_STEP - 1]), "healthy steps say nothing")


def backward_nan():
    def arm(faulty, boom, on):
        boom.armed = on
    _, rows, _ = run(os.path.join(TMP, "bwd.nsj"), arm)
    got = first(rows)
    C.ok(got == [(BAD_STEP, "transformer.h.1.mlp.gelu.1, backward")],
         "backward NaN named at module, pass and step (got %s)" % got)
    bad = rows[BAD_STEP - 1]
    C.ok(bad["loss"] is not None and bad["grad_norm"] is None,
         "finite loss, null grad_norm on the backward-only fault")


forward_inf()
backward_nan()


# --- a real overflow: Post-LN at a high LR, every Linear rounding to fp16 ----
class Round16(torch.autograd.Function):
    """Round to fp16 and back, on the way forward and back (CPU torch has no
    fp16 matmul, so the format is emulated as the lab's parity fixtures do)."""

    @staticmethod
    def forward(ctx, x):
        return x.half().float()

    @staticmethod
    def backward(ctx, g):
        return g.half().float()


FIRST = []  # (step, module name) of the first output that rounded to inf


class Linear16(torch.nn.Linear):
    name, step = "", 0

    def forward(self, x):
        y = Round16.apply(super().forward(x))
        if not FIRST and torch.is_grad_enabled() and not torch.isfinite(y).all():
            FIRST.append((Linear16.step, self.name))
        return y


class PostBlock(models.Block):
    def forward(self, x):
        x = self.ln_1(x + self.attn(x))
        return self.ln_2(x + self.mlp(x))


def to16(model):
    for name, mod in list(model.named_modules()):
        for k, child in list(mod.named_children()):
            if type(child) is torch.nn.Linear:
                new = Linear16(child.in_features, child.out_features, child.bias is not None)
                new.load_state_dict(child.state_dict())
                new.name = "%s.%s" % (name, k) if name else k
                setattr(mod, k, new)


def real_overflow():
    torch.manual_seed(1)
    m = models.GPT(n_layer=3)
    for i in range(3):
        m.transformer.h[i] = PostBlock(32, 2)
    to16(m)
    opt = torch.optim.Adam(m.parameters(), lr=1.0)
    gen = torch.Generator().manual_seed(2)
    x, y = models.batch(gen)
    path = os.path.join(TMP, "post16.nsj")
    with normscope_probe.attach(m, opt, path=path) as probe:
        for s in range(1, 301):
            Linear16.step = s
            opt.zero_grad()
            loss = m(x, y)
            loss.backward()
            probe.step(loss)
            opt.step()
            if FIRST and s > FIRST[0][0]:
                break
    _, rows, _ = check.read_stream(path)
    C.ok(bool(FIRST), "Post-LN at lr 1 overflowed fp16")
    got = first(rows)
    want = [(FIRST[0][0], FIRST[0][1] + ", forward")] if FIRST else []
    C.ok(got == want, "real fp16 overflow named where it happened: %s (the rounding saw %s)"
         % (got, FIRST))


real_overflow()
C.close()
