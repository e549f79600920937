"""mechanism.py - the quantities papers explain instabilities by, computed
from tensors the probe's hooks see: the attention's logits and entropy
(Dehghani et al. 2023; Wortsman et al. 2023), the residual branch's share
and a norm's input (Liu et al. 2020; Wang et al. 2022), the output's log Z
(Chowdhery et al. 2022). Each is computed as the lab computes it
(src/model.c attn_stats, branch_stats; model_forward's log Z); this module
holds no state and installs nothing.
"""
import math

import torch

# the attention's statistics look at the batch's first sequences, as the
# lab's do (ATTN_STAT_ROWS in src/model.c): a logit that runs away does so
# in every sequence, and the scores are T^2 products a head
ATTN_ROWS = 4


def attn_stats(s, allowed=None, add=None):
    """Of scores s (..., L, S), q.k times the scale, before any mask: the
    largest |s| over the pairs that take part (allowed, a bool mask that
    broadcasts to s, True = takes part; None: all), and the sum over
    query rows of the softmax's entropy (nats) with the additive mask add
    (a float mask, or None), and the count of rows that have a pair; 0-d
    tensors, no gradient. A row's entropy is lse - sum_j p_j z_j."""
    with torch.no_grad():
        s = s.float()
        z = s if add is None else s + add.float()
        if add is not None:  # a pair the float mask sets to -inf takes no part
            allowed = _combine(allowed, torch.isfinite(z) | torch.isnan(z))
        if allowed is None:
            amax = s.abs().amax()
            logp = torch.log_softmax(z, -1)
            ent = -(logp.exp() * logp).sum(-1)
            return amax, ent.sum(), torch.tensor(float(ent.numel()), device=s.device)
        allowed = allowed.expand_as(s)
        amax = s.abs().masked_fill(~allowed, 0.0).amax()
        z = z.masked_fill(~allowed, float("-inf"))
        rows = allowed.any(-1)
        logp = torch.log_softmax(z.masked_fill(~rows.unsqueeze(-1), 0.0), -1)
        terms = (logp.exp() * logp).masked_fill(~allowed, 0.0)
        ent = (-terms.sum(-1)).masked_fill(~rows, 0.0)
        return amax, ent.sum(), rows.sum().float()


def _first_rows(m, n):
    """Mask m cut to the first ATTN_ROWS of the batch's n sequences when
    its first size is the batch's (a mask that broadcasts is left)."""
    if m is not None and m.dim() >= 3 and m.shape[0] == n:
        return m[:ATTN_ROWS]
    return m


def _as_masks(m, true_takes_part):
    """(allowed, add) from one mask: a bool one says which pairs take part
    (SDPA: True = takes part; nn.MultiheadAttention: True = masked out), a
    float one is added to the scores (-inf: masked out)."""
    if m is None:
        return None, None
    if m.dtype == torch.bool:
        return (m if true_takes_part else ~m), None
    return None, m


def _combine(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return a & b


def _plus(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return a + b


def mha_stats(mha, scores, args, kwargs):
    """attn_stats of an nn.MultiheadAttention's call: scores (n, heads, L,
    S) from _mha_scores, its masks (attn_mask (L, S) or (n * heads, L, S),
    key_padding_mask (n, S), is_causal without a mask: the causal one), on
    the first ATTN_ROWS sequences."""
    n, h, L, S = scores.shape
    names = ("key_padding_mask", "need_weights", "attn_mask", "average_attn_weights",
             "is_causal")
    got = dict(zip(names, args[3:]))
    got.update(kwargs)
    am, kpm = got.get("attn_mask"), got.get("key_padding_mask")
    allowed, add = None, None
    if am is not None:
        if am.dim() == 3:
            am = am.reshape(n, h, L, S)
        a, d = _as_masks(_first_rows(am, n), False)
        allowed, add = _combine(allowed, a), _plus(add, d)
    elif got.get("is_causal"):
        allowed = torch.ones(L, S, dtype=torch.bool, device=scores.device).tril()
    if kpm is not None:
        a, d = _as_masks(kpm[:ATTN_ROWS].reshape(-1, 1, 1, S), False)
        allowed, add = _combine(allowed, a), _plus(add, d)
    return attn_stats(scores[:ATTN_ROWS], allowed, add)


def sdpa_stats(q, k, attn_mask=None, is_causal=False, scale=None):
    """attn_stats of a scaled_dot_product_attention call (torch 2's
    semantics: a bool mask's True takes part, a float mask is added,
    is_causal is the top-left causal mask, scale defaults to
    1/sqrt(E)), on the first ATTN_ROWS sequences; None when the shapes
    are not the plain (batch, ..., L, E) ones (grouped heads are
    repeated to the queries' count)."""
    if q.dim() < 3 or k.dim() != q.dim() or q.shape[-1] != k.shape[-1]:
        return None
    with torch.no_grad():
        n = q.shape[0]
        qs, ks = q[:ATTN_ROWS].detach(), k[:ATTN_ROWS].detach()
        if qs.dim() == 4 and ks.shape[1] != qs.shape[1]:
            if ks.shape[1] == 0 or qs.shape[1] % ks.shape[1]:
                return None
            ks = ks.repeat_interleave(qs.shape[1] // ks.shape[1], dim=1)
        sc = scale if scale is not None else 1.0 / math.sqrt(q.shape[-1])
        s = (qs.float() @ ks.float().transpose(-2, -1)) * sc
        L, S = s.shape[-2], s.shape[-1]
        allowed, add = _as_masks(_first_rows(attn_mask, n), True)
        if is_causal:
            allowed = _combine(allowed, torch.ones(L, S, dtype=torch.bool,
                                                   device=s.device).tril())
        return attn_stats(s, allowed, add)


def logits_stats(t):
    """(sum over rows of log Z, the rows' count, the largest logit) of
    logits t (..., V), as 0-d tensors and an int. log Z is taken on the
    first ATTN_ROWS sequences of (batch, T, V) logits (a logsumexp over
    the whole batch's is 1% of a small model's step), the maximum on all."""
    with torch.no_grad():
        t = t.detach()
        z = (t[:ATTN_ROWS] if t.dim() >= 3 else t).float()
        return torch.logsumexp(z, -1).sum(), z.numel() // z.shape[-1], t.amax().float()
