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

    def logits(self, idx):
        t = idx.shape[1]
        x = self.transformer.wte(idx) + self.transformer.wpe(torch.arange(t, device=idx.device))
        for blk in self.transformer.h:
            x = blk(x)
        return self.lm_head(self.transformer.ln_f(x))

    def forward(self, idx, targets):
        logits = self.logits(idx)
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


def train_step(model, opt, probe, x, y):
    """One step as a training loop writes it, the probe between backward
    and the optimizer; the loss (of a model returning it or (logits, loss))."""
    opt.zero_grad()
    out = model(x, y)
    loss = out[1] if isinstance(out, tuple) else out
    loss.backward()
    probe.step(loss)
    opt.step()
    return loss


def batch(gen, b=4, t=16, v=256):
    """A random batch: targets are the inputs shifted, so the loss falls."""
    seq = torch.randint(0, v, (b, t + 1), generator=gen)
    return seq[:, :-1], seq[:, 1:]


# -- models the probe was not written for (the shapes of the outside world) --

class GPTLogits(GPT):
    """nanoGPT's own signature: forward(idx, targets) returns (logits, loss)."""

    def forward(self, idx, targets):
        logits = self.logits(idx)
        return logits, F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1))


class RMSNorm(nn.Module):
    def __init__(self, c, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(c))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope(x, base=10000.0):
    """Rotary position embedding on (b, h, t, d): pairs (i, i + d/2) rotated
    by t * base^(-2i/d), as LLaMA's rotate_half form."""
    t, d = x.shape[-2], x.shape[-1]
    inv = base ** (-torch.arange(0, d, 2, dtype=torch.float32, device=x.device) / d)
    ang = torch.arange(t, dtype=torch.float32, device=x.device)[:, None] * inv[None, :]
    cos, sin = torch.cat([ang.cos()] * 2, -1), torch.cat([ang.sin()] * 2, -1)
    x1, x2 = x[..., :d // 2], x[..., d // 2:]
    return x * cos + torch.cat([-x2, x1], -1) * sin


class LlamaAttention(nn.Module):
    def __init__(self, c, nh):
        super().__init__()
        self.nh = nh
        self.q_proj, self.k_proj = nn.Linear(c, c, bias=False), nn.Linear(c, c, bias=False)
        self.v_proj, self.o_proj = nn.Linear(c, c, bias=False), nn.Linear(c, c, bias=False)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = (p(x).view(b, t, self.nh, c // self.nh).transpose(1, 2)
                   for p in (self.q_proj, self.k_proj, self.v_proj))
        q, k = rope(q), rope(k)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(c // self.nh)
        mask = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        y = att.masked_fill(~mask, float("-inf")).softmax(-1) @ v
        return self.o_proj(y.transpose(1, 2).reshape(b, t, c))


class SwiGLU(nn.Module):
    def __init__(self, c, h):
        super().__init__()
        self.gate_proj, self.up_proj = nn.Linear(c, h, bias=False), nn.Linear(c, h, bias=False)
        self.down_proj = nn.Linear(h, c, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaBlock(nn.Module):
    def __init__(self, c, nh):
        super().__init__()
        self.input_layernorm, self.post_attention_layernorm = RMSNorm(c), RMSNorm(c)
        self.self_attn, self.mlp = LlamaAttention(c, nh), SwiGLU(c, 3 * c)

    def forward(self, x):
        x = x + self.self_attn(self.input_layernorm(x))
        return x + self.mlp(self.post_attention_layernorm(x))


class Llama(nn.Module):
    """LLaMA-style: RMSNorm written by hand, SwiGLU gate/up/down, q/k/v/o_proj,
    RoPE, untied head; its stack under a name no list knows (decoder)."""

    def __init__(self, n_layer=2, c=32, nh=2, v=256):
        super().__init__()
        self.embed_tokens = nn.Embedding(v, c)
        self.decoder = nn.ModuleList([LlamaBlock(c, nh) for _ in range(n_layer)])
        self.norm = RMSNorm(c)
        self.lm_head = nn.Linear(c, v, bias=False)

    def forward(self, idx, targets):
        x = self.embed_tokens(idx)
        for blk in self.decoder:
            x = blk(x)
        logits = self.lm_head(self.norm(x))
        return logits, F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1))


class SeqHeads(nn.Module):
    """Blocks in an nn.Sequential, and an unrelated heads ModuleList of two
    unlike Linears (the LM head and a 2-way classifier)."""

    def __init__(self, n_layer=3, c=32, nh=2, t=16, v=256):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(v, c), nn.Embedding(t, c)
        self.body = nn.Sequential(*[Block(c, nh) for _ in range(n_layer)], nn.LayerNorm(c))
        self.heads = nn.ModuleList([nn.Linear(c, v), nn.Linear(c, 2)])

    def forward(self, idx, targets):
        x = self.body(self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device)))
        logits, cls = self.heads[0](x), self.heads[1](x[:, -1])
        aux = F.cross_entropy(cls, (targets[:, -1] % 2))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1)) + 0.1 * aux


class Albert(nn.Module):
    """ALBERT-style: one block whose weights every layer shares, called in
    a loop."""

    def __init__(self, n_layer=4, c=32, nh=2, t=16, v=256):
        super().__init__()
        self.n_layer = n_layer
        self.wte, self.wpe = nn.Embedding(v, c), nn.Embedding(t, c)
        self.shared = Block(c, nh)
        self.lm_head = nn.Linear(c, v)

    def forward(self, idx, targets):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
        for _ in range(self.n_layer):
            x = self.shared(x)
        logits = self.lm_head(x)
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1))


class EncoderClassifier(nn.Module):
    """nn.TransformerEncoder (Post-LN, norm_first=False) with a mean-pooled
    classification head; forward(x) returns logits and the loss is the
    caller's."""

    def __init__(self, n_layer=2, c=32, nh=2, v=256, classes=5):
        super().__init__()
        self.emb = nn.Embedding(v, c)
        layer = nn.TransformerEncoderLayer(c, nh, 4 * c, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, n_layer, enable_nested_tensor=False)
        self.classifier = nn.Linear(c, classes)

    def forward(self, idx):
        return self.classifier(self.encoder(self.emb(idx)).mean(1))


class MHABlock(nn.Module):
    """A block on nn.MultiheadAttention, written by hand: Post-LN
    (x = LN(x + attn(x)), then x = LN(x + mlp(x))) or Pre-LN. The attention
    module's out_proj is never called as a module (its weight is used)."""

    def __init__(self, c, nh, post):
        super().__init__()
        self.post = post
        self.attn = nn.MultiheadAttention(c, nh, batch_first=True)
        self.ln1, self.ln2 = nn.LayerNorm(c), nn.LayerNorm(c)
        self.mlp = nn.Sequential(nn.Linear(c, 4 * c), nn.GELU(), nn.Linear(4 * c, c))

    def forward(self, x):
        if self.post:
            x = self.ln1(x + self.attn(x, x, x, need_weights=False)[0])
            return self.ln2(x + self.mlp(x))
        h = self.ln1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class MHALM(nn.Module):
    def __init__(self, post=True, n_layer=2, c=32, nh=2, v=256):
        super().__init__()
        self.emb = nn.Embedding(v, c)
        self.blocks = nn.ModuleList([MHABlock(c, nh, post) for _ in range(n_layer)])
        self.head = nn.Linear(c, v)

    def forward(self, idx, targets):
        x = self.emb(idx)
        for b in self.blocks:
            x = b(x)
        logits = self.head(x)
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1))
