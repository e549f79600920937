"""layout.py - where a model's blocks are and what each parameter is.

Finds the stack of identical blocks (a ModuleList whose children share one
class) and sorts each block's parameters into attention, MLP and norm by the
names of the modules that hold them. It does not guess: a parameter no rule
and no user mapping claims is reported once and left out of the per-layer
groups (it still counts in the global gradient norm).
"""
import fnmatch
import warnings

import torch

GROUPS = ("attn", "ffn", "ln")

# Paths tried first, in this order, before any other ModuleList.
KNOWN_STACKS = ("transformer.h", "model.layers", "model.decoder.layers", "encoder.layer",
                "bert.encoder.layer", "layers", "h", "blocks", "encoder.layers")

_FFN_COMPONENTS = {"mlp", "ffn", "feed_forward", "feedforward", "linear1", "linear2"}


def unwrap(model):
    """The user's module under DDP / FSDP / DataParallel wrappers (whose
    parameter names carry a "module." prefix the stream does not want)."""
    while type(model).__name__ in ("DistributedDataParallel", "DataParallel",
                                   "FullyShardedDataParallel") and \
            isinstance(getattr(model, "module", None), torch.nn.Module):
        model = model.module
    return model


def _identical_stack(mod):
    kids = list(mod.children())
    return (isinstance(mod, torch.nn.ModuleList) and len(kids) > 0 and
            len({type(k) for k in kids}) == 1)


def _n_params(mod):
    return sum(p.numel() for p in mod.parameters())


def find_blocks(model, blocks=None):
    """[(qualified name, module)] of the blocks, in order.

    blocks: None (discover), a ModuleList, a qualified name of one, or a list
    of qualified module names."""
    named = dict(model.named_modules())
    if blocks is None:
        for path in KNOWN_STACKS:
            if path in named and _identical_stack(named[path]):
                return _children(path, named[path])
        stacks = [(n, m) for n, m in named.items() if _identical_stack(m)]
        if not stacks:
            raise ValueError("normscope_probe: found no ModuleList of identical blocks in %s; "
                             "pass blocks= (a ModuleList or module names)" % type(model).__name__)
        name, mod = max(stacks, key=lambda nm: _n_params(nm[1]))
        return _children(name, mod)
    if isinstance(blocks, torch.nn.ModuleList):
        for n, m in named.items():
            if m is blocks:
                return _children(n, m)
        raise ValueError("normscope_probe: blocks= is a ModuleList that is not part of the model")
    if isinstance(blocks, str):
        if blocks not in named:
            raise ValueError("normscope_probe: blocks=%r names no module of the model" % blocks)
        return _children(blocks, named[blocks])
    out = []
    for n in blocks:
        if n not in named:
            raise ValueError("normscope_probe: blocks= entry %r names no module of the model" % n)
        out.append((n, named[n]))
    if not out:
        raise ValueError("normscope_probe: blocks= is empty")
    return out


def _children(path, mod):
    return [("%s.%s" % (path, k) if path else k, m) for k, m in mod.named_children()]


def _tokens(component):
    return [t.rstrip("0123456789") for t in component.lower().split("_")]


def classify_name(rel):
    """'attn', 'ffn', 'ln' or None for a parameter name relative to its
    block (e.g. 'mlp.c_fc.weight', 'self_attn.in_proj_weight', 'norm1.bias').
    Norms win over the rest, since norms often live inside an attention or
    MLP module (BERT's attention.output.LayerNorm)."""
    parts = rel.split(".")
    modules, last = parts[:-1], parts[-1]
    comps = modules if modules else [last]
    toks = [t for c in comps for t in _tokens(c)]
    if any(t == "ln" or t.endswith("norm") for t in toks):
        return "ln"
    if any(t in ("attn", "attention") for t in toks):
        return "attn"
    if any(c.lower() in _FFN_COMPONENTS for c in comps) or any(t in ("mlp", "ffn") for t in toks):
        return "ffn"
    return None


def _mapped(mapping, rel):
    if mapping is None:
        return None
    if callable(mapping):
        g = mapping(rel)
    else:
        g = next((v for pat, v in mapping.items() if fnmatch.fnmatchcase(rel, pat)), None)
    if g is not None and g not in GROUPS:
        raise ValueError("normscope_probe: mapping gave %r for %r; allowed: %s"
                         % (g, rel, ", ".join(GROUPS)))
    return g


def classify(blocks, mapping=None):
    """Per block, {'attn': [params], 'ffn': [...], 'ln': [...]}; warns once
    about the parameters nothing claimed."""
    out, unclassified, seen = [], [], set()
    for bname, bmod in blocks:
        groups = {g: [] for g in GROUPS}
        for rel, p in bmod.named_parameters():
            if id(p) in seen:
                continue
            seen.add(id(p))
            g = _mapped(mapping, rel) or classify_name(rel)
            if g is None:
                unclassified.append("%s.%s" % (bname, rel))
            else:
                groups[g].append(p)
        out.append(groups)
    if unclassified:
        shown = ", ".join(unclassified[:6]) + (" ..." if len(unclassified) > 6 else "")
        warnings.warn("normscope_probe: %d block parameter%s not classified as attention, MLP "
                      "or norm (%s); they count in grad_norm only. Pass mapping={'pattern': "
                      "'attn'|'ffn'|'ln'} to attach() to place them."
                      % (len(unclassified), "" if len(unclassified) == 1 else "s", shown),
                      stacklevel=3)
    return out, unclassified
