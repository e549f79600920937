"""test_mechanisms.py - the probe's mechanism columns on models it was not
written for: nn.TransformerEncoder (batch_first both ways, Post-LN and
norm_first, a causal float mask and a key padding mask) and a block on
nn.MultiheadAttention, its l{i}_attn_logit_max and l{i}_attn_entropy
against a direct recomputation from the same weights and batch (the
softmax of torch's own attention weights); attention through
scaled_dot_product_attention (a stand-in with torch 2's semantics where
this torch has none); a hand-written attention declared unknown once in
the header, never written as 0; logz_mean, logit_max and out_change
against the logits of the same model and fixed batch."""
import math
import os

import check
import models
import torch
import torch.nn as nn
import torch.nn.functional as F

import normscope_probe

C = check.Check("probe mechanisms")
torch.set_num_threads(1)
TMP = C.tmpdir()
T, V, D, NH, B = 12, 64, 32, 4, 6


def direct(layer, x, mask, kpm, batch_first):
    """The largest |q.k|/sqrt(d_head) over the pairs taking part and the mean
    entropy over heads and query rows, of the first 4 sequences, from the
    attention weights torch's own forward returns (need_weights, per head)."""
    mha = layer.self_attn
    with torch.no_grad():
        _, w = mha(x, x, x, attn_mask=mask, key_padding_mask=kpm, need_weights=True,
                   average_attn_weights=False)  # (n, heads, L, S)
        e, h = mha.embed_dim, mha.num_heads
        xb = x if batch_first else x.transpose(0, 1)
        q = F.linear(xb, mha.in_proj_weight[:e], mha.in_proj_bias[:e])
        k = F.linear(xb, mha.in_proj_weight[e:2 * e], mha.in_proj_bias[e:2 * e])
        n, t = q.shape[:2]
        q = q.reshape(n, t, h, e // h).transpose(1, 2)
        k = k.reshape(n, t, h, e // h).transpose(1, 2)
        s = (q @ k.transpose(-2, -1) / math.sqrt(e // h))[:4]
        w = w[:4].double()
        take = torch.isfinite(mask.expand_as(s)) if mask is not None else torch.ones_like(s).bool()
        if kpm is not None:
            take = take & ~kpm[:4].reshape(-1, 1, 1, t)
        ent = -(torch.where(w > 0, w * w.log(), torch.zeros_like(w))).sum(-1)
        return float(s.abs().masked_fill(~take, 0).amax()), float(ent.mean())


class Enc(nn.Module):
    def __init__(self, batch_first, norm_first):
        super().__init__()
        self.bf = batch_first
        self.emb = nn.Embedding(V, D)
        layer = nn.TransformerEncoderLayer(D, NH, 2 * D, dropout=0.0, batch_first=batch_first,
                                           norm_first=norm_first)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(D, V)
        self.mask = torch.triu(torch.full((T, T), float("-inf")), 1)
        self.kpm = None

    def hidden_in(self, idx):
        x = self.emb(idx)
        return x if self.bf else x.transpose(0, 1)

    def forward(self, idx, y):
        z = self.encoder(self.hidden_in(idx), mask=self.mask, src_key_padding_mask=self.kpm)
        logits = self.head(z if self.bf else z.transpose(0, 1))
        return logits, F.cross_entropy(logits.reshape(-1, V), y.reshape(-1))


def run(model, path, steps=1, opt=None, gen_seed=1):
    gen = torch.Generator().manual_seed(gen_seed)
    batches = [models.batch(gen, b=B, t=T, v=V) for _ in range(steps)]
    with normscope_probe.attach(model, opt, path=path) as probe:
        for x, y in batches:
            if opt is not None:
                opt.zero_grad()
            loss = model(x, y)
            loss = loss[1] if isinstance(loss, tuple) else loss
            loss.backward()
            probe.step(loss)
            if opt is not None:
                opt.step()
    head, rows, events = check.read_stream(path)
    return head, rows, events, batches


def encoder_case(batch_first, norm_first, padded):
    torch.manual_seed(3)
    m = Enc(batch_first, norm_first)
    if padded:
        m.kpm = torch.zeros(B, T, dtype=torch.bool)
        m.kpm[0, 9:] = True  # the first sequence's last 3 keys are padding
    name = "enc bf=%d nf=%d pad=%d" % (batch_first, norm_first, padded)
    head, rows, _, batches = run(m, os.path.join(TMP, "enc%d%d%d.nsj" % (batch_first, norm_first,
                                                                         padded)))
    C.ok("unknown" not in head or not any("attn" in u for u in head["unknown"]),
         "%s: the header says the attention is unknown: %s" % (name, head.get("unknown")))
    x, _ = batches[0]
    h = m.hidden_in(x).detach()
    for i, layer in enumerate(m.encoder.layers):
        lin = layer.norm1(h) if norm_first else h
        want_max, want_ent = direct(layer, lin, m.mask, m.kpm, batch_first)
        got_max = rows[0].get("l%d_attn_logit_max" % i)
        got_ent = rows[0].get("l%d_attn_entropy" % i)
        C.ok(got_max is not None and check.rel(got_max, want_max) < 1e-5,
             "%s: l%d_attn_logit_max %s, recomputed %.9g" % (name, i, got_max, want_max))
        C.ok(got_ent is not None and check.rel(got_ent, want_ent) < 1e-5,
             "%s: l%d_attn_entropy %s, recomputed %.9g" % (name, i, got_ent, want_ent))
        with torch.no_grad():
            h = layer(h, src_mask=m.mask, src_key_padding_mask=m.kpm)


for bf in (True, False):
    for nf in (False, True):
        encoder_case(bf, nf, padded=False)
encoder_case(True, False, padded=True)


# -- attention through scaled_dot_product_attention ------------------------------
def reference_sdpa(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None):
    """torch 2's documented semantics, written out (the stand-in where this
    torch has no F.scaled_dot_product_attention)."""
    s = q @ k.transpose(-2, -1) * (scale if scale is not None else 1 / math.sqrt(q.shape[-1]))
    if is_causal:
        s = s.masked_fill(~torch.ones(s.shape[-2], s.shape[-1], dtype=torch.bool).tril(),
                          float("-inf"))
    if attn_mask is not None:
        s = s.masked_fill(~attn_mask, float("-inf")) if attn_mask.dtype == torch.bool \
            else s + attn_mask
    return s.softmax(-1) @ v


class SDPAttention(models.CausalSelfAttention):
    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.c_attn(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.nh, c // self.nh).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).reshape(b, t, c))


def causal_stats(blk, x):
    """What the block's causal attention shows for x, the first 4 sequences."""
    with torch.no_grad():
        h = blk.ln_1(x)[:4]
        b, t, c = h.shape
        q, k, _ = blk.attn.c_attn(h).split(c, dim=2)
        q, k = (z.view(b, t, blk.attn.nh, c // blk.attn.nh).transpose(1, 2) for z in (q, k))
        s = q @ k.transpose(-2, -1) / math.sqrt(c // blk.attn.nh)
        keep = torch.ones(t, t, dtype=torch.bool).tril()
        p = s.masked_fill(~keep, float("-inf")).softmax(-1).double()
        ent = -(torch.where(p > 0, p * p.log(), torch.zeros_like(p))).sum(-1)
        return float(s.masked_fill(~keep, 0).abs().amax()), float(ent.mean())


stand_in = not hasattr(F, "scaled_dot_product_attention")
if stand_in:
    F.scaled_dot_product_attention = reference_sdpa
try:
    torch.manual_seed(4)
    g = models.GPTLogits(n_layer=2, c=D, nh=NH, t=T, v=V)
    for blk in g.transformer.h:
        old = blk.attn
        blk.attn = SDPAttention(D, NH)
        blk.attn.load_state_dict(old.state_dict())
    head, rows, _, batches = run(g, os.path.join(TMP, "sdpa.nsj"))
    x = g.transformer.wte(batches[0][0]) + g.transformer.wpe(torch.arange(T))
    for i, blk in enumerate(g.transformer.h):
        want_max, want_ent = causal_stats(blk, x)
        got = rows[0].get("l%d_attn_logit_max" % i), rows[0].get("l%d_attn_entropy" % i)
        C.ok(got[0] is not None and check.rel(got[0], want_max) < 1e-5 and
             check.rel(got[1], want_ent) < 1e-5,
             "SDPA%s: l%d attention %s, recomputed %.9g, %.9g"
             % (" (stand-in)" if stand_in else "", i, got, want_max, want_ent))
        with torch.no_grad():
            x = blk(x)
    C.ok(F.scaled_dot_product_attention is reference_sdpa or not stand_in,
         "close() did not put scaled_dot_product_attention back")
finally:
    if stand_in:
        del F.scaled_dot_product_attention

# -- a hand-written attention: unknown, said once, never 0 ------------------------
torch.manual_seed(5)
g = models.GPTLogits(n_layer=2, c=D, nh=NH, t=T, v=V)
opt = torch.optim.SGD(g.parameters(), lr=0.5)
head, rows, events, batches = run(g, os.path.join(TMP, "hand.nsj"), steps=4, opt=opt)
C.ok(head.get("unknown") == ["attn_logit_max", "attn_entropy"],
     "a hand-written attention: the header's unknown is %s" % head.get("unknown"))
said = [e for e in events if e.get("event") == "note" and "attn_logit_max" in e.get("text", "")]
C.ok(len(said) == 1, "the unknown attention is said in %d notes, not one" % len(said))
C.ok(not any(k.endswith(("attn_logit_max", "attn_entropy")) for r in rows for k in r),
     "a hand-written attention's columns are written")
C.ok(all("l1_branch_ratio" in r and "l1_norm_in_rms" in r for r in rows),
     "a Pre-LN GPT's branch ratio or norm input is missing")

# logz_mean (the first 4 sequences) and logit_max of step 1's batch; out_change against the logits
# of the fixed batch (the first batch's first 4 sequences) before and after
# each update, recomputed from the same weights
torch.manual_seed(5)
g2 = models.GPTLogits(n_layer=2, c=D, nh=NH, t=T, v=V)
opt2 = torch.optim.SGD(g2.parameters(), lr=0.5)
fixed = batches[0][0][:4]
with torch.no_grad():
    lg = g2.logits(batches[0][0])
    lz = float(torch.logsumexp(lg[:4], -1).mean())  # the first 4 sequences, as the lab's
    C.ok(check.rel(rows[0]["logz_mean"], lz) < 1e-5,
         "logz_mean %s against %.9g" % (rows[0]["logz_mean"], lz))
    C.ok(check.rel(rows[0]["logit_max"], float(lg.amax())) < 1e-6, "logit_max %s against %.9g"
         % (rows[0]["logit_max"], lg.amax()))
for n, (x, y) in enumerate(batches):
    with torch.no_grad():
        before = g2.logits(fixed)
    opt2.zero_grad()
    g2(x, y)[1].backward()
    opt2.step()
    with torch.no_grad():
        want = float((g2.logits(fixed) - before).norm() / before.norm())
    got = rows[n].get("out_change")
    C.ok(got is not None and check.rel(got, want) < 1e-4,
         "step %d: out_change %s, recomputed %.9g" % (n + 1, got, want))
C.close()
