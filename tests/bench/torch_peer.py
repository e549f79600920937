#!/usr/bin/env python3
"""torch_peer.py - the PyTorch peer for `make bench`.

Trains the same byte-level Transformer as normscope (src/model.c: same
module structure and parameter count, Pre-LN by default, LayerNorm, untied
head with bias, GELU tanh, AdamW with decay on matrices and embeddings) in
eager mode, fp32, on the CPU, and reports its training throughput so the C
engine has a reference to compare against.

Output, one line on stdout:
    torch steps_per_s=<float> tokens_per_s=<float> params=<int>
Exit status 0; 3 (with "torch unavailable" on stderr) if torch cannot be
imported.

Run it with an interpreter that has torch, e.g. Debian's python3-torch:
    /usr/bin/python3 tests/bench/torch_peer.py -L 6 -d 64
Debian's python3-torch does its matmuls through the system BLAS
(libblas.so.3); install libopenblas0-pthread so that resolves to OpenBLAS
instead of the slow reference BLAS, or the comparison is not fair.
--threads sets torch's intra-op threads and, through OMP_NUM_THREADS and
OPENBLAS_NUM_THREADS set before torch is imported, the BLAS thread pool too.
Batch sampling is inside the timed step, as in a real training loop.
"""
import argparse
import math
import os
import sys
import time

V = 256  # byte-level vocabulary
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def parse_args():
    ap = argparse.ArgumentParser(description="PyTorch peer for make bench")
    ap.add_argument("-L", type=int, default=6, help="layers")
    ap.add_argument("-d", type=int, default=64, help="model dim")
    ap.add_argument("-H", type=int, default=4, help="heads")
    ap.add_argument("-T", type=int, default=64, help="context")
    ap.add_argument("-B", type=int, default=16, help="batch")
    ap.add_argument("--norm", choices=("post", "pre"), default="pre")
    ap.add_argument("--steps", type=int, default=30, help="timed steps")
    ap.add_argument("--warmup-steps", type=int, default=3, help="untimed steps first")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--data", default=None,
                    help="file of bytes to sample batches from "
                         "(default: assets/corpus.txt if present, else random bytes)")
    ap.add_argument("--seed", type=int, default=1337)
    a = ap.parse_args()
    if a.d % a.H:
        ap.error("-d must be divisible by -H")
    if a.steps < 1 or a.threads < 1 or a.warmup_steps < 0:
        ap.error("--steps and --threads must be >= 1, --warmup-steps >= 0")
    return a


# Thread pools are sized when torch (and the BLAS under it) loads, and
# torch.set_num_threads does not reach OpenBLAS's own pthread pool: pin both
# to --threads before the import so "--threads 1" really is one thread.
ARGS = parse_args()
os.environ["OMP_NUM_THREADS"] = str(ARGS.threads)
os.environ["OPENBLAS_NUM_THREADS"] = str(ARGS.threads)
os.environ["MKL_NUM_THREADS"] = str(ARGS.threads)

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except Exception:  # ImportError, or a broken install
    print("torch unavailable", file=sys.stderr)
    sys.exit(3)


class Attention(nn.Module):
    def __init__(self, C, NH):
        super().__init__()
        self.C, self.NH = C, NH
        self.qkv = nn.Linear(C, 3 * C)
        self.proj = nn.Linear(C, C)

    def forward(self, x):
        B, T, C = x.shape
        hs = C // self.NH
        q, k, v = self.qkv(x).split(C, dim=-1)
        q = q.view(B, T, self.NH, hs).transpose(1, 2)
        k = k.view(B, T, self.NH, hs).transpose(1, 2)
        v = v.view(B, T, self.NH, hs).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        return self.proj(y)


class MLP(nn.Module):
    def __init__(self, C):
        super().__init__()
        self.fc = nn.Linear(C, 4 * C)
        self.proj = nn.Linear(4 * C, C)

    def forward(self, x):
        return self.proj(F.gelu(self.fc(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self, C, NH, norm, eps):
        super().__init__()
        self.norm = norm
        self.ln1 = nn.LayerNorm(C, eps=eps)
        self.attn = Attention(C, NH)
        self.ln2 = nn.LayerNorm(C, eps=eps)
        self.mlp = MLP(C)

    def forward(self, x):
        if self.norm == "pre":
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))
        x = self.ln1(x + self.attn(x))
        return self.ln2(x + self.mlp(x))


class GPT(nn.Module):
    def __init__(self, L, C, NH, T, norm, eps=1e-5):
        super().__init__()
        self.norm = norm
        self.wte = nn.Embedding(V, C)
        self.wpe = nn.Embedding(T, C)
        self.blocks = nn.ModuleList(Block(C, NH, norm, eps) for _ in range(L))
        self.lnf = nn.LayerNorm(C, eps=eps)  # Pre-LN only; kept so params match
        self.head = nn.Linear(C, V)
        self.register_buffer("pos", torch.arange(T), persistent=False)

    def forward(self, idx, targets):
        x = self.wte(idx) + self.wpe(self.pos[: idx.shape[1]])
        for b in self.blocks:
            x = b(x)
        if self.norm == "pre":
            x = self.lnf(x)
        logits = self.head(x)
        return F.cross_entropy(logits.view(-1, V), targets.reshape(-1))


def load_data(path):
    if path is None:
        for cand in ("assets/corpus.txt", os.path.join(REPO, "assets", "corpus.txt")):
            if os.path.isfile(cand):
                path = cand
                break
    if path is not None:
        with open(path, "rb") as f:
            raw = f.read()
        return torch.tensor(list(raw), dtype=torch.long) if len(raw) else None
    return None


def main():
    a = ARGS
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)

    data = load_data(a.data)
    if data is None or data.numel() < a.T + 2:
        data = torch.randint(0, V, (1 << 20,), dtype=torch.long)

    model = GPT(a.L, a.d, a.H, a.T, a.norm)
    n_params = sum(p.numel() for p in model.parameters())
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        # decay on embeddings and 2-D weight matrices, as normscope
        (decay if p.dim() == 2 else no_decay).append(p)
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=1e-3, betas=(0.9, 0.98))
    offs = torch.arange(a.T + 1)

    def step():
        starts = torch.randint(0, data.numel() - a.T - 1, (a.B, 1))
        chunk = data[starts + offs]
        loss = model(chunk[:, :-1], chunk[:, 1:])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    for _ in range(a.warmup_steps):
        step()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        loss = step()
    loss.item()
    dt = time.perf_counter() - t0
    sps = a.steps / dt
    print("torch steps_per_s=%.4f tokens_per_s=%.1f params=%d" % (sps, sps * a.B * a.T, n_params))
    return 0


if __name__ == "__main__":
    sys.exit(main())
