"""models.py - tiny models for the probe's tests: a nanoGPT-style GPT (the
layout of Karpathy's nanoGPT: transformer.h[i].attn.c_attn / c_proj,
mlp.c_fc / c_proj, ln_1 / ln_2) and a torch.nn.TransformerEncoder LM.
Written here for the tests; sizes are tiny so each test takes seconds."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class CausalSelfAttention(nn.Module):
    def __init__(self, c, nh):
        super().__init__()
        self.nh = nh
        self.c_attn = nn.Linear(c, 3 * c)
        self.c_proj = nn.Linear(c, c)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.c_attn(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.nh, c // self.nh).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(c // self.nh)
        mask = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, c)
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c_fc = nn.Linear(c, 4 * c)
        self.gelu = nn.GELU(approximate="tanh")
        self.c_proj = nn.Linear(4 * c, c)

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, c, nh):
        super().__init__()
        self.ln_1 = nn.LayerNorm(c)
        self.attn = CausalSelfAttention(c, nh)
        self.ln_2 = nn.LayerNorm(c)
        self.mlp = MLP(c)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, n_layer=3, c=32, nh=2, t=16, v=256):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(v, c), wpe=nn.Embedding(t, c),
            h=nn.ModuleList([Block(c, nh) for _ in range(n_layer)]),
            ln_f=nn.LayerNorm(c)))
        self.lm_head = nn.Linear(c, v, bias=False)

    def forward(self, idx, targets):
        t = idx.shape[1]
        x = self.transformer.wte(idx) + self.transformer.wpe(torch.arange(t, device=idx.device))
        for blk in self.transformer.h:
            x = blk(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1))


class EncoderLM(nn.Module):
    """nn.TransformerEncoder over byte embeddings, with a causal mask."""

    def __init__(self, n_layer=3, c=32, nh=2, t=16, v=256, norm_first=False):
        super().__init__()
        self.emb = nn.Embedding(v, c)
        self.pos = nn.Embedding(t, c)
        layer = nn.TransformerEncoderLayer(c, nh, 4 * c, dropout=0.0, batch_first=True,
                                           norm_first=norm_first)
        self.encoder = nn.TransformerEncoder(layer, n_layer, enable_nested_tensor=False)
        self.head = nn.Linear(c, v)

    def forward(self, idx, targets):
        t = idx.shape[1]
        x = self.emb(idx) + self.pos(torch.arange(t, device=idx.device))
        mask = torch.triu(torch.full((t, t), float("-inf")), 1)
        logits = self.head(self.encoder(x, mask=mask))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1))


class Faulty(torch.nn.Linear):
    """A Linear whose output holds one inf while `armed`."""
    armed = False

    def forward(self, x):
        y = super().forward(x)
        if self.armed:
            y = y.clone()
            y[0, 0, 0] = float("inf")
        return y


def batch(gen, b=4, t=16, v=256):
    """A random batch: targets are the inputs shifted, so the loss falls."""
    seq = torch.randint(0, v, (b, t + 1), generator=gen)
    return seq[:, :-1], seq[:, 1:]
