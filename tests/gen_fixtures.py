#!/usr/bin/env python3
"""gen_fixtures.py - PyTorch reference fixtures for the normscope C tests.

Writes tests/fixtures/<placement>_<kind>.bin for every placement in
PLACEMENTS and every norm kind in KINDS. Each file holds the initial weights,
a batch, the logits, loss and gradients of the model at those weights, and
the losses of 10 AdamW steps on that batch, all computed by PyTorch autograd
(fp32, CPU) with a model written to mirror src/model.c exactly.

Run with Debian's torch (the pyenv python3 has none):

    /usr/bin/python3 tests/gen_fixtures.py

The output is committed so CI does not need torch; the output is
deterministic (fixed seeds, deterministic algorithms, one thread).

Fixture format (little-endian):
    magic "NSFX", uint32 version = 1, uint32 record_count,
    then per record: uint32 name_len, name bytes (no NUL),
                     uint64 n, float32 data[n].
Records, in order: config, params, tokens, targets, logits, loss, grads,
losses10 (see write_fixture). fp16_pre_layernorm.bin has no losses10; its
config adds precision (2 = fp16), fp32_norms (1) and the loss scale.
"""
import math
import os
import struct
import sys

import torch
import torch.nn.functional as F

# --- sizes and hyperparameters ---------------------------------------------
L, C, NH, T, B, V = 2, 16, 2, 8, 2, 256
EPS = 1e-5
LR, BETA1, BETA2, ADAM_EPS, WEIGHT_DECAY = 1e-2, 0.9, 0.98, 1e-8, 0.1
N_STEPS = 10
SEED = 1234
VERSION = 1

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")

# Per-layer tensors in layout order (src/internal/model.h), with their shapes.
LAYER_TENSORS = [
    ("ln1w", (C,)), ("ln1b", (C,)), ("ln2w", (C,)), ("ln2b", (C,)),
    ("ln1ow", (C,)), ("ln1ob", (C,)), ("ln2ow", (C,)), ("ln2ob", (C,)),
    ("ln1a", (1,)), ("ln2a", (1,)), ("ln1oa", (1,)), ("ln2oa", (1,)),
    ("rzg", (1,)),
    ("qkvw", (3 * C, C)), ("qkvb", (3 * C,)),
    ("attprojw", (C, C)), ("attprojb", (C,)),
    ("fcw", (4 * C, C)), ("fcb", (4 * C,)),
    ("fcprojw", (C, 4 * C)), ("fcprojb", (C,)),
]
# Weight decay applies to these (model_tensor.is_matrix in src/model.c).
MATRICES = {"wte", "wpe", "qkvw", "attprojw", "fcw", "fcprojw", "headw"}


def layout():
    """[(name, layer or -1, shape)] in the flat parameter order."""
    t = [("wte", -1, (V, C)), ("wpe", -1, (T, C))]
    for l in range(L):
        t += [(n, l, s) for n, s in LAYER_TENSORS]
    t += [("lnfw", -1, (C,)), ("lnfb", -1, (C,)), ("lnfa", -1, (1,)),
          ("headw", -1, (V, C)), ("headb", -1, (V,))]
    return t


def expected_param_count():
    per_layer = (8 * C + 5 + 3 * C * C + 3 * C + C * C + C + 4 * C * C + 4 * C + 4 * C * C
                 + C)
    return V * C + T * C + L * per_layer + 2 * C + 1 + V * C + V


# --- the model (mirrors src/model.c) ----------------------------------------
def layernorm(x, w, b, a):
    return F.layer_norm(x, (C,), w, b, EPS)


def rmsnorm(x, w, b, a):  # b exists in the layout but is unused
    return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * w


def dyt(x, w, b, a):  # Dynamic Tanh: w * tanh(a x) + b, a learnable scalar
    return w * torch.tanh(a * x) + b


KINDS = {"layernorm": (0, layernorm), "rmsnorm": (1, rmsnorm), "dyt": (2, dyt)}


def attention(x, p):
    Bx, Tx, _ = x.shape
    hs = C // NH
    qkv = F.linear(x, p["qkvw"], p["qkvb"])
    q, k, v = qkv.split(C, dim=-1)
    # head h uses columns h*hs .. (h+1)*hs
    q = q.view(Bx, Tx, NH, hs).transpose(1, 2)
    k = k.view(Bx, Tx, NH, hs).transpose(1, 2)
    v = v.view(Bx, Tx, NH, hs).transpose(1, 2)
    att = (q @ k.transpose(-2, -1)) / math.sqrt(hs)
    mask = torch.ones(Tx, Tx, dtype=torch.bool).tril()
    att = att.masked_fill(~mask, float("-inf")).softmax(-1)
    y = (att @ v).transpose(1, 2).reshape(Bx, Tx, C)
    return F.linear(y, p["attprojw"], p["attprojb"])


def mlp(x, p):
    h = F.gelu(F.linear(x, p["fcw"], p["fcb"]), approximate="tanh")
    return F.linear(h, p["fcprojw"], p["fcprojb"])


def N(norm, p, name, x):
    """The norm whose parameters are name+w, name+b, name+a."""
    return norm(x, p[name + "w"], p[name + "b"], p[name + "a"])


def block(x, p, norm, rule):
    """One block as two sublayers, each following the placement's rule:
    h = N(x) if pre; f = F(h); f = N_out(f) if out; r = a x + (g f if gate);
    y = N(r) if post (see src/model.c)."""
    for F_, n_in, n_out in ((attention, "ln1", "ln1o"), (mlp, "ln2", "ln2o")):
        h = N(norm, p, n_in, x) if rule["pre"] else x
        f = F_(h, p)
        if rule["out"]:
            f = N(norm, p, n_out, f)
        if rule["gate"]:
            f = p["rzg"] * f
        r = rule["a"] * x + f
        x = N(norm, p, n_in, r) if rule["post"] else r
    return x


def rule_of(placement, l):
    r = {"pre": False, "out": False, "post": False, "gate": False, "a": 1.0}
    if placement == "post" or (placement == "mix" and l < MIX_K):
        r["post"] = True
    elif placement in ("pre", "mix"):
        r["pre"] = True
    elif placement == "sandwich":
        r["pre"] = r["out"] = True
    elif placement == "deepnorm":
        r["post"] = True
        r["a"] = (2.0 * L) ** 0.25
    elif placement == "rezero":
        r["gate"] = True
    return r


MIX_K = 1  # post in block 0, pre in block 1
# placement name -> (code in norm_place, final norm before head?, kinds tested)
ALL_KINDS = ("layernorm", "rmsnorm", "dyt")
PLACEMENTS = {
    "post": (0, False, ALL_KINDS),
    "pre": (1, True, ALL_KINDS),
    "sandwich": (2, True, ALL_KINDS),
    "deepnorm": (3, False, ALL_KINDS),
    "rezero": (4, False, ("layernorm",)),  # no norms: the kind does not matter
    "none": (5, False, ("layernorm",)),
    "mix": (6, True, ALL_KINDS),
}


def forward(params, tokens, targets, placement, kind):
    """params: {name: tensor} for the globals, {(l, name): tensor} per layer."""
    _, final_norm, _ = PLACEMENTS[placement]
    _, norm = KINDS[kind]
    x = params["wte"][tokens] + params["wpe"][torch.arange(T)]
    for l in range(L):
        p = {n: params[(l, n)] for n, _ in LAYER_TENSORS}
        x = block(x, p, norm, rule_of(placement, l))
    if final_norm:
        x = N(norm, params, "lnf", x)
    logits = F.linear(x, params["headw"], params["headb"])
    loss = F.cross_entropy(logits.view(-1, V), targets.view(-1))
    return logits, loss


# --- weights and data -------------------------------------------------------
GAINS = {"ln1w", "ln2w", "ln1ow", "ln2ow", "lnfw"}
NORM_BIASES = {"ln1b", "ln2b", "ln1ob", "ln2ob", "lnfb"}
DYT_A = {"ln1a", "ln2a", "ln1oa", "ln2oa", "lnfa"}


def init_params(kind, gen):
    """Random, non-trivial weights so every gradient term matters."""
    def normal(shape, std):
        return torch.randn(shape, generator=gen, dtype=torch.float32) * std

    params, order = {}, []
    for name, l, shape in layout():
        if name in ("wte", "wpe"):
            t = normal(shape, 0.5)
        elif name in MATRICES:
            t = normal(shape, 0.2)
        elif name in GAINS:
            t = 1.0 + normal(shape, 0.1)
        elif name in NORM_BIASES:
            # RMSNorm has no bias: keep the unused slot at 0
            t = normal(shape, 0.1) if kind != "rmsnorm" else torch.zeros(shape)
        elif name in DYT_A:
            t = 0.5 + normal(shape, 0.1)
        elif name == "rzg":
            t = 0.5 + normal(shape, 0.1)  # nonzero, so F's gradients flow
        else:  # linear biases
            t = normal(shape, 0.1)
        key = name if l < 0 else (l, name)
        params[key] = t.clone().requires_grad_(True)
        order.append(key)
    return params, order


def flatten(tensors):
    return torch.cat([t.detach().reshape(-1) for t in tensors])


def grads_of(params, order):
    return flatten([params[k].grad if params[k].grad is not None else torch.zeros_like(params[k])
                    for k in order])


# --- fixture file -----------------------------------------------------------
def write_fixture(path, records):
    with open(path, "wb") as f:
        f.write(b"NSFX")
        f.write(struct.pack("<II", VERSION, len(records)))
        for name, data in records:
            arr = data.detach().to(torch.float32).reshape(-1).contiguous()
            nb = name.encode("ascii")
            f.write(struct.pack("<I", len(nb)))
            f.write(nb)
            f.write(struct.pack("<Q", arr.numel()))
            f.write(struct.pack("<%df" % arr.numel(), *arr.tolist()))


def read_fixture(path):
    """Parse a fixture back (used to self-check what was written)."""
    with open(path, "rb") as f:
        buf = f.read()
    assert buf[:4] == b"NSFX", path
    version, count = struct.unpack_from("<II", buf, 4)
    assert version == VERSION
    off, out = 12, {}
    for _ in range(count):
        (nl,) = struct.unpack_from("<I", buf, off)
        off += 4
        name = buf[off:off + nl].decode("ascii")
        off += nl
        (n,) = struct.unpack_from("<Q", buf, off)
        off += 8
        out[name] = torch.tensor(struct.unpack_from("<%df" % n, buf, off), dtype=torch.float32)
        off += 4 * n
    assert off == len(buf), path
    return out


def make_fixture(placement, kind, index):
    place_code, final_norm, _ = PLACEMENTS[placement]
    kind_code = KINDS[kind][0]
    gen = torch.Generator().manual_seed(SEED + index)
    params, order = init_params(kind, gen)
    tokens = torch.randint(0, 256, (B, T), generator=gen)
    targets = torch.randint(0, 256, (B, T), generator=gen)

    n_params = expected_param_count()
    lay = layout()
    assert len(order) == len(lay)
    for key, (_, _, shape) in zip(order, lay):
        assert tuple(params[key].shape) == shape, (key, shape)
    init_flat = flatten(params[k] for k in order)
    assert init_flat.numel() == n_params, (init_flat.numel(), n_params)

    # forward + backward at the initial weights
    logits, loss = forward(params, tokens, targets, placement, kind)
    loss.backward()
    grads = grads_of(params, order)
    assert grads.numel() == n_params
    for key in order:  # every autograd grad has its tensor's size
        g = params[key].grad
        assert g is None or g.shape == params[key].shape, key
    # unused parameters get no grad here and zero grads in C
    if not PLACEMENTS[placement][1]:
        assert params["lnfw"].grad is None and params["lnfb"].grad is None
    assert torch.isfinite(grads).all() and torch.isfinite(loss)
    logits0 = logits.detach().clone()
    loss0 = loss.detach().clone()

    # 10 AdamW steps on the same batch, from the same weights
    for k in order:
        params[k].grad = None
    decay = [params[k] for k in order if (k if isinstance(k, str) else k[1]) in MATRICES]
    no_decay = [params[k] for k in order if (k if isinstance(k, str) else k[1]) not in MATRICES]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": WEIGHT_DECAY},
         {"params": no_decay, "weight_decay": 0.0}],
        lr=LR, betas=(BETA1, BETA2), eps=ADAM_EPS, foreach=False)
    losses = []
    for _ in range(N_STEPS):
        opt.zero_grad(set_to_none=False)
        _, l_step = forward(params, tokens, targets, placement, kind)
        losses.append(l_step.item())
        l_step.backward()
        # the C optimizer sees a zero grad for unused parameters (a no-op
        # for them: they are never matrices); give torch the same
        for k in order:
            if params[k].grad is None:
                params[k].grad = torch.zeros_like(params[k])
        opt.step()
    losses = torch.tensor(losses, dtype=torch.float32)
    assert losses[0].item() == loss0.item()
    assert torch.isfinite(losses).all()

    config = torch.tensor([L, C, NH, T, B, place_code, kind_code, EPS, LR, BETA1, BETA2,
                           ADAM_EPS, WEIGHT_DECAY, int(final_norm), MIX_K],
                          dtype=torch.float32)
    records = [
        ("config", config),
        ("params", init_flat),
        ("tokens", tokens.reshape(-1).float()),
        ("targets", targets.reshape(-1).float()),
        ("logits", logits0.reshape(-1)),
        ("loss", loss0.reshape(1)),
        ("grads", grads),
        ("losses10", losses),
    ]
    path = os.path.join(OUT_DIR, "%s_%s.bin" % (placement, kind))
    write_fixture(path, records)

    back = read_fixture(path)
    assert list(back) == [n for n, _ in records]
    for name, data in records:
        assert torch.equal(back[name], data.reshape(-1).float()), name
    print("%s: params=%d loss=%.6f |grad|=%.6f losses10 %.4f -> %.4f bytes=%d" % (
        os.path.relpath(path), n_params, loss0.item(), grads.norm().item(),
        losses[0].item(), losses[-1].item(), os.path.getsize(path)))


# --- one fp16 step (mixed precision with fp32 norms) -------------------------
class Q(torch.autograd.Function):
    """Round to fp16 on the way forward and the gradient on the way back:
    the rounding points of src/model.c (an op's output, and the gradient
    that flows into it)."""

    @staticmethod
    def forward(ctx, x):
        return x.half().float()

    @staticmethod
    def backward(ctx, g):
        return g.half().float()


FP16_LOSS_SCALE = 1024.0


def forward_fp16(params, tokens, targets):
    """Pre-LN, LayerNorm in fp32 on rounded inputs, fp16 everywhere else;
    attention scores and softmax in fp32 (as the fused C kernel)."""
    q = Q.apply
    W = {k: q(v) for k, v in params.items()}  # fp32 masters rounded per step

    def lin(x, w, b):
        return q(F.linear(x, w, b))

    def attn(x, p):
        Bx, Tx, _ = x.shape
        hs = C // NH
        qkv = lin(x, p["qkvw"], p["qkvb"])
        qq, k, v = qkv.split(C, dim=-1)
        qq = qq.view(Bx, Tx, NH, hs).transpose(1, 2)
        k = k.view(Bx, Tx, NH, hs).transpose(1, 2)
        v = v.view(Bx, Tx, NH, hs).transpose(1, 2)
        att = (qq @ k.transpose(-2, -1)) / math.sqrt(hs)
        mask = torch.ones(Tx, Tx, dtype=torch.bool).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(-1)
        y = q((att @ v).transpose(1, 2).reshape(Bx, Tx, C))
        return lin(y, p["attprojw"], p["attprojb"])

    def ffn(x, p):
        h = q(F.gelu(lin(x, p["fcw"], p["fcb"]), approximate="tanh"))
        return lin(h, p["fcprojw"], p["fcprojb"])

    def ln(x, w, b):
        return q(F.layer_norm(x, (C,), w, b, EPS))

    x = q(W["wte"][tokens] + W["wpe"][torch.arange(T)])
    for l in range(L):
        p = {n: W[(l, n)] for n, _ in LAYER_TENSORS}
        x = q(x + attn(ln(x, p["ln1w"], p["ln1b"]), p))
        x = q(x + ffn(ln(x, p["ln2w"], p["ln2b"]), p))
    x = ln(x, W["lnfw"], W["lnfb"])
    logits = lin(x, W["headw"], W["headb"])
    loss = F.cross_entropy(logits.view(-1, V), targets.view(-1))
    return logits, loss


def make_fp16_fixture(index):
    gen = torch.Generator().manual_seed(SEED + index)
    params, order = init_params("layernorm", gen)
    tokens = torch.randint(0, 256, (B, T), generator=gen)
    targets = torch.randint(0, 256, (B, T), generator=gen)
    logits, loss = forward_fp16(params, tokens, targets)
    # the scaled loss gradient starts the backward in fp16, as in C
    (loss * FP16_LOSS_SCALE).backward()
    grads = []
    for k in order:
        g = params[k].grad if params[k].grad is not None else torch.zeros_like(params[k])
        # parameter gradients rounded to fp16 (scaled), then unscaled in fp32
        grads.append(g.half().float() / FP16_LOSS_SCALE)
    grads = flatten(grads)
    assert torch.isfinite(grads).all() and torch.isfinite(loss)
    config = torch.tensor([L, C, NH, T, B, 1, 0, EPS, LR, BETA1, BETA2, ADAM_EPS, WEIGHT_DECAY,
                           1, MIX_K, 2, 1, FP16_LOSS_SCALE], dtype=torch.float32)
    records = [
        ("config", config),
        ("params", flatten(params[k] for k in order)),
        ("tokens", tokens.reshape(-1).float()),
        ("targets", targets.reshape(-1).float()),
        ("logits", logits.detach().reshape(-1)),
        ("loss", loss.detach().reshape(1)),
        ("grads", grads),
    ]
    path = os.path.join(OUT_DIR, "fp16_pre_layernorm.bin")
    write_fixture(path, records)
    print("%s: fp16 step, loss=%.6f |grad|=%.6f" % (os.path.relpath(path), loss.item(),
                                                    grads.norm().item()))


def main():
    torch.manual_seed(SEED)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    os.makedirs(OUT_DIR, exist_ok=True)
    index = 0
    for placement in PLACEMENTS:
        for kind in PLACEMENTS[placement][2]:
            make_fixture(placement, kind, index)
            index += 1
    make_fp16_fixture(index)
    return 0


if __name__ == "__main__":
    sys.exit(main())
