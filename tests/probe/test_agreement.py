"""test_agreement.py - the probe agrees with the lab.

normscope trains one step of a Pre-LN model and saves a checkpoint; a second
identical run writes its CSV for step 2. Here a PyTorch twin of the lab's
model (written as modules, so the probe's hooks see every activation the
lab's act_max takes in), loaded with the checkpoint's weights and fed step
2's batch (cut with the lab's SplitMix64 batch generator), reports through
the probe the per-layer numbers normscope's CSV has for step 2, to 1e-4."""
import csv
import math
import os
import struct
import subprocess

import check
import torch
import torch.nn as nn
import torch.nn.functional as F

import normscope_probe

C = check.Check("probe agreement")
torch.set_num_threads(1)
TMP = C.tmpdir()
NS = os.environ.get("NS_BIN", os.path.join(check.HERE, "..", "..", "normscope"))
L, D, NH, T, B, SEED, V = 3, 32, 2, 16, 4, 7, 256
M64 = (1 << 64) - 1


# --- the lab's batch generator (include/rng.h, src/data.c, src/engine.c) ----
def splitmix(state):
    state = (state + 0x9E3779B97F4A7C15) & M64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return state, z ^ (z >> 31)


def batches(data, n):
    """The first n training batches: offsets rng_below(n_train - T), the
    generator seeded with seed ^ "data"."""
    n_train = len(data) - len(data) // 10
    s, out = SEED ^ 0x64617461, []
    for _ in range(n):
        xs, ys = [], []
        for _ in range(B):
            s, z = splitmix(s)
            o = (z * (n_train - T)) >> 64
            xs.append(list(data[o:o + T]))
            ys.append(list(data[o + 1:o + T + 1]))
        out.append((torch.tensor(xs), torch.tensor(ys)))
    return out


# --- the twin (Pre-LN, LayerNorm, final norm: src/model.c) -------------------
class Add(nn.Module):  # a module so the residual sum is an output the probe sees
    def forward(self, a, b):
        return a + b


class Core(nn.Module):  # causal softmax attention over the packed q, k, v
    def forward(self, qkv):
        b, t, c3 = qkv.shape
        c, hs = c3 // 3, c3 // 3 // NH
        q, k, v = (z.view(b, t, NH, hs).transpose(1, 2) for z in qkv.split(c, dim=-1))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(hs)
        mask = torch.ones(t, t, dtype=torch.bool).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(-1)
        return (att @ v).transpose(1, 2).reshape(b, t, c)


class Attn(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_attn, self.core, self.c_proj = nn.Linear(D, 3 * D), Core(), nn.Linear(D, D)

    def forward(self, x):
        return self.c_proj(self.core(self.c_attn(x)))


class MHAAttn(nn.Module):  # the same attention through nn.MultiheadAttention
    def __init__(self, attn):
        super().__init__()
        self.mha = nn.MultiheadAttention(D, NH, batch_first=True)
        with torch.no_grad():
            self.mha.in_proj_weight.copy_(attn.c_attn.weight)
            self.mha.in_proj_bias.copy_(attn.c_attn.bias)
            self.mha.out_proj.weight.copy_(attn.c_proj.weight)
            self.mha.out_proj.bias.copy_(attn.c_proj.bias)

    def forward(self, x):
        mask = ~torch.ones(T, T, dtype=torch.bool).tril()  # True: masked out
        return self.mha(x, x, x, attn_mask=mask, need_weights=False)[0]


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_fc, self.gelu = nn.Linear(D, 4 * D), nn.GELU(approximate="tanh")
        self.c_proj = nn.Linear(4 * D, D)

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1, self.attn, self.res_1 = nn.LayerNorm(D), Attn(), Add()
        self.ln_2, self.mlp, self.res_2 = nn.LayerNorm(D), MLP(), Add()

    def forward(self, x):
        x = self.res_1(x, self.attn(self.ln_1(x)))
        return self.res_2(x, self.mlp(self.ln_2(x)))


class Twin(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(V, D), nn.Embedding(T, D)
        self.h = nn.ModuleList([Block() for _ in range(L)])
        self.ln_f, self.head = nn.LayerNorm(D), nn.Linear(D, V)

    def forward(self, x, y):  # nanoGPT's signature: (logits, loss)
        z = self.wte(x) + self.wpe(torch.arange(T))
        for blk in self.h:
            z = blk(z)
        logits = self.head(self.ln_f(z))
        return logits, F.cross_entropy(logits.view(-1, V), y.reshape(-1))


# --- the checkpoint's weights (normscope(1), CHECKPOINT FORMAT) ---------------
HS = D // NH
# the QK-norm's tensors close the attention's slice (format 5 on; unused here)
LAYER = [("ln1w", D), ("ln1b", D), ("ln2w", D), ("ln2b", D), ("ln1ow", D), ("ln1ob", D),
         ("ln2ow", D), ("ln2ob", D), ("ln1a", 1), ("ln2a", 1), ("ln1oa", 1), ("ln2oa", 1),
         ("rzg", 1), ("qkvw", 3 * D * D), ("qkvb", 3 * D), ("attprojw", D * D),
         ("attprojb", D), ("qnw", HS), ("qnb", HS), ("knw", HS), ("knb", HS), ("qna", 1),
         ("kna", 1), ("fcw", 4 * D * D), ("fcb", 4 * D), ("fcprojw", 4 * D * D),
         ("fcprojb", D)]


def load_weights(path, twin):
    """The shape is the header's first settings (after the count of them,
    from format version 4); the weights follow the header (its length at
    byte 12): u64 P, P weights, 2P moments, then (version 6) the
    diagnosis' state and the CRC."""
    buf = open(path, "rb").read()
    ver = struct.unpack_from("<I", buf, 8)[0]
    dims = struct.unpack_from("<5I", buf, 20 if ver >= 4 else 16)
    C.ok(dims == (L, D, NH, T, B), "checkpoint shape %s" % (dims,))
    # wte wpe, the layers, then lnfw lnfb lnfa headw headb
    n = V * D + T * D + L * sum(s for _, s in LAYER) + 2 * D + 1 + V * D + V
    off = 16 + struct.unpack_from("<I", buf, 12)[0] if ver >= 4 else len(buf) - 4 - 12 * n - 8
    C.ok(struct.unpack_from("<Q", buf, off)[0] == n, "parameter count %d" % n)
    w = torch.tensor(struct.unpack_from("<%df" % n, buf, off + 8))
    take = iter(torch.split(w, [V * D, T * D] + [s for _ in range(L) for _, s in LAYER] +
                            [D, D, 1, V * D, V]))
    with torch.no_grad():
        twin.wte.weight.copy_(next(take).view(V, D))
        twin.wpe.weight.copy_(next(take).view(T, D))
        for blk in twin.h:
            t = {name: next(take) for name, _ in LAYER}
            pairs = [(blk.ln_1.weight, "ln1w"), (blk.ln_1.bias, "ln1b"), (blk.ln_2.weight, "ln2w"),
                     (blk.ln_2.bias, "ln2b"), (blk.attn.c_attn.weight, "qkvw"),
                     (blk.attn.c_attn.bias, "qkvb"), (blk.attn.c_proj.weight, "attprojw"),
                     (blk.attn.c_proj.bias, "attprojb"), (blk.mlp.c_fc.weight, "fcw"),
                     (blk.mlp.c_fc.bias, "fcb"), (blk.mlp.c_proj.weight, "fcprojw"),
                     (blk.mlp.c_proj.bias, "fcprojb")]
            for p, name in pairs:
                p.copy_(t[name].view_as(p))
        twin.ln_f.weight.copy_(next(take))
        twin.ln_f.bias.copy_(next(take))
        next(take)  # lnfa: DyT only
        twin.head.weight.copy_(next(take).view(V, D))
        twin.head.bias.copy_(next(take))


def lab(args):
    base = [NS, "--headless", "-q", "--threads", "1", "-L", str(L), "-d", str(D), "-H", str(NH),
            "-T", str(T), "-B", str(B), "--seed", str(SEED), "--norm", "pre",
            "--data", os.path.join(TMP, "corpus.txt")]
    r = subprocess.run(base + args, capture_output=True, text=True, timeout=120)
    C.ok(r.returncode == 0, "normscope %s (%s)" % (" ".join(args), r.stderr.strip()[:200]))


def probe_step(twin, x, y, name):
    """The stream's header and step line of one step of twin on (x, y)."""
    path = os.path.join(TMP, name)
    with normscope_probe.attach(twin, path=path) as probe:
        loss = twin(x, y)[1]
        loss.backward()
        probe.step(loss)
    head, rows, _ = check.read_stream(path)
    return head, rows[0]


def main():
    words = ["the", "layer", "norm", "gradient", "step", "loss", "of", "a", "and", "model"]
    text = " ".join(words[(i * 7 + i // 3) % len(words)] for i in range(3000)).encode()
    with open(os.path.join(TMP, "corpus.txt"), "wb") as f:
        f.write(text)
    ckpt, out = os.path.join(TMP, "a.ckpt"), os.path.join(TMP, "b.csv")
    lab(["--steps", "1", "--save", ckpt])
    lab(["--steps", "2", "--csv", out])
    row = list(csv.DictReader(open(out)))[1]
    C.ok(row["step"] == "2", "the lab's row of step 2")
    twin = Twin()
    load_weights(ckpt, twin)
    x, y = batches(text, 2)[1]
    _, got = probe_step(twin, x, y, "twin.nsj")
    # the attention's logits and entropy, with the twin's attention an
    # nn.MultiheadAttention (whose scores the probe sees) of the same weights
    for blk in twin.h:
        blk.attn = MHAAttn(blk.attn)
    head, mrow = probe_step(twin, x, y, "mha.nsj")
    C.ok(head.get("unknown") == ["out_change"], "the MHA twin's header declares %s unknown "
         "(only out_change: no optimizer)" % head.get("unknown"))
    C.ok(check.rel(mrow["loss"], float(row["loss"])) < 1e-4, "the MHA twin's loss %.9g, lab %s"
         % (mrow["loss"], row["loss"]))
    for k in ["l%d_%s" % (i, c) for i in range(L) for c in ("attn_logit_max", "attn_entropy")]:
        C.ok(check.rel(mrow[k], float(row[k])) < 1e-4,
             "%s: probe %.9g, lab %s" % (k, mrow[k], row[k]))
    keys = ["loss", "grad_norm", "logz_mean", "logit_max"] + ["l%d_%s" % (i, k) for i in range(L)
                                                            for k in (
        "grad_attn", "grad_ffn", "grad_ln", "act_max", "resid_max", "resid_rms", "branch_ratio",
        "norm_in_rms")]
    for k in keys:
        C.ok(k in got and check.rel(got[k], float(row[k])) < 1e-4,
             "%s: probe %.9g, lab %s" % (k, got[k], row[k]))


main()
C.close()
