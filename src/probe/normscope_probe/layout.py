"""layout.py - where a model's blocks are and what each parameter is.

Finds the stack of blocks (a ModuleList whose children are alike: one
class, the same parameter shapes; or a run of such blocks in an
nn.Sequential) and sorts each block's parameters into attention, MLP and norm by the
names of the modules that hold them and, when the names say nothing, by
their structure (a norm or attention class, a Linear's shape). A parameter
no rule and no user mapping claims is reported once and left out of the
per-layer groups (it still counts in the global gradient norm); a group
with no parameter is not measured (null), never 0.
Also here: what the module order says of the norm placement (Pre-LN or
Post-LN) and the norm's class.
"""
import fnmatch
import warnings

import torch

GROUPS = ("attn", "ffn", "ln")

# Paths tried first, in this order, before any other ModuleList.
KNOWN_STACKS = ("transformer.h", "model.layers", "model.decoder.layers", "encoder.layer",
                "bert.encoder.layer", "layers", "h", "blocks", "encoder.layers")

# Module names common codebases give the parts of a block (nanoGPT, GPT-2,
# LLaMA, BERT, fairseq, torch.nn): matched as whole names or "_"-separated
# tokens (digits dropped: fc1 -> fc), so "c_attn" and "q_proj" are attention.
_ATTN_NAMES = {"attn", "attention", "self_attn", "qkv", "q_proj", "k_proj", "v_proj", "o_proj",
               "out_proj", "c_attn", "query", "key", "value", "wq", "wk", "wv", "wo",
               "in_proj", "in_proj_weight", "in_proj_bias"}
_FFN_NAMES = {"mlp", "ffn", "feed_forward", "feedforward", "linear1", "linear2", "fc1", "fc2",
              "up", "down", "gate", "up_proj", "down_proj", "gate_proj", "w1", "w2", "w3",
              "c_fc", "fc", "intermediate"}
_NORM_TOKENS = {"ln", "rms", "norm", "rmsnorm", "layernorm"}


def unwrap(model):
    """The user's module under DDP / FSDP / DataParallel wrappers (whose
    parameter names carry a "module." prefix the stream does not want)."""
    while type(model).__name__ in ("DistributedDataParallel", "DataParallel",
                                   "FullyShardedDataParallel") and \
            isinstance(getattr(model, "module", None), torch.nn.Module):
        model = model.module
    return model


def _signature(mod):
    """What makes two blocks alike: their class and their parameters'
    names and shapes (two heads Linear(d, V) and Linear(d, 2) are not)."""
    return type(mod), tuple((n, tuple(p.shape)) for n, p in mod.named_parameters())


def _composite(mod):
    return any(True for _ in mod.children())


def _stack_run(mod):
    """The blocks a container holds, as [(child name, module)], or None: a
    ModuleList whose children are all alike, or the longest run (two or
    more) of alike modules that have submodules in an nn.Sequential
    (Sequential(block, block, ..., LayerNorm) holds a run)."""
    kids = list(mod.named_children())
    if isinstance(mod, torch.nn.ModuleList):
        if kids and len({_signature(k) for _, k in kids}) == 1:
            return kids
        return None
    if not isinstance(mod, torch.nn.Sequential):
        return None
    best, i = None, 0
    while i < len(kids):
        j = i + 1
        while j < len(kids) and _signature(kids[j][1]) == _signature(kids[i][1]):
            j += 1
        if j - i >= 2 and _composite(kids[i][1]) and (best is None or j - i > len(best)):
            best = kids[i:j]
        i = j
    return best


def _n_params(mod):
    return sum(p.numel() for p in mod.parameters())


def _describe(mods):
    """'Linear(32->256), Linear(32->2)': what a refused container holds."""
    out = []
    for m in mods[:4]:
        if isinstance(m, torch.nn.Linear):
            out.append("Linear(%d->%d)" % (m.in_features, m.out_features))
        else:
            out.append(type(m).__name__)
    return ", ".join(out) + (", ..." if len(mods) > 4 else "")


def find_blocks(model, blocks=None):
    """[(qualified name, module)] of the blocks, in order.

    blocks: None (discover), a ModuleList or nn.Sequential of the model,
    its qualified name, or a list of qualified block names. Anything else,
    or a container whose children are not alike, a name given twice, a
    block inside another, a container or a module with no submodules in
    the list, is refused with one line naming what was given."""
    named = dict(model.named_modules())
    if blocks is None:
        return _discover(model, named)
    if isinstance(blocks, torch.nn.Module):
        path = next((n for n, m in named.items() if m is blocks), None)
        if path is None:
            raise ValueError("normscope_probe: blocks= is a %s that is not part of the model"
                             % type(blocks).__name__)
        return _given_stack(path, blocks)
    if isinstance(blocks, str):
        if blocks not in named:
            raise ValueError("normscope_probe: blocks=%r names no module of the model" % blocks)
        return _given_stack(blocks, named[blocks])
    if not isinstance(blocks, (list, tuple)):
        raise ValueError("normscope_probe: blocks= is a %s; give None, a ModuleList or "
                         "nn.Sequential of the model, its name, or a list of block names"
                         % type(blocks).__name__)
    return _given_list(list(blocks), named)


def _discover(model, named):
    """The blocks by structure: a known path first (nanoGPT's
    transformer.h, Hugging Face's model.layers, ...), else the container
    of alike blocks with the most parameters, blocks with submodules
    before leaves."""
    for path in KNOWN_STACKS:
        run = _stack_run(named[path]) if path in named else None
        if run:
            return _named(path, run)
    stacks = [(n, run) for n, m in named.items() for run in [_stack_run(m)] if run]
    if not stacks:
        raise ValueError("normscope_probe: found no ModuleList or nn.Sequential of alike blocks "
                         "in %s; pass blocks= (a container of blocks, or a list of block names; "
                         "a block shared by every layer, called in a loop: blocks=['its name'])"
                         % type(model).__name__)
    name, run = max(stacks, key=lambda nr: (_composite(nr[1][0][1]),
                                            sum(_n_params(k) for _, k in nr[1])))
    return _named(name, run)


def _named(path, run):
    return [("%s.%s" % (path, k) if path else k, m) for k, m in run]


def _given_stack(path, mod):
    if not isinstance(mod, (torch.nn.ModuleList, torch.nn.Sequential)):
        raise ValueError("normscope_probe: blocks=%r is a %s, not a ModuleList or nn.Sequential "
                         "of blocks; for one block (a block shared by every layer) pass a list: "
                         "blocks=[%r]" % (path, type(mod).__name__, path))
    run = _stack_run(mod)
    if not run:
        raise ValueError("normscope_probe: blocks=%r holds no run of alike blocks (%s)"
                         % (path, _describe([m for m in mod.children()]) or "nothing"))
    return _named(path, run)


def _given_list(names, named):
    if not names:
        raise ValueError("normscope_probe: blocks= is empty")
    out = []
    for n in names:
        if not isinstance(n, str) or n not in named:
            raise ValueError("normscope_probe: blocks= entry %r names no module of the model" % (n,))
        m = named[n]
        if names.count(n) > 1:
            raise ValueError("normscope_probe: blocks= names %r %d times; a block called several "
                             "times a forward (shared weights) is given once: blocks=[%r]"
                             % (n, names.count(n), n))
        if isinstance(m, (torch.nn.ModuleList, torch.nn.ModuleDict)):
            raise ValueError("normscope_probe: blocks= entry %r is a %s, a container, not a "
                             "block: pass it alone, blocks=%r" % (n, type(m).__name__, n))
        if not _n_params(m) or not _composite(m):
            raise ValueError("normscope_probe: blocks= entry %r (a %s) is not a block: %s"
                             % (n, type(m).__name__, "it has no parameters" if not _n_params(m)
                                else "it has no submodules"))
        out.append((n, m))
    for n, _ in out:
        inner = [o for o, _ in out if o != n and o.startswith(n + ".")]
        if inner:
            raise ValueError("normscope_probe: blocks= entry %r holds the entry %r: blocks "
                             "do not nest" % (n, inner[0]))
    return out


def _tokens(component):
    return [t.rstrip("0123456789") for t in component.lower().split("_")]


def _is_norm_token(t):
    return t in _NORM_TOKENS or t.endswith("norm")


def classify_name(rel):
    """'attn', 'ffn', 'ln' or None for a parameter name relative to its
    block (e.g. 'mlp.c_fc.weight', 'self_attn.in_proj_weight', 'norm1.bias').
    Norms win over the rest, since norms often live inside an attention or
    MLP module (BERT's attention.output.LayerNorm); then the innermost
    module whose name says attention or MLP."""
    parts = rel.split(".")
    modules, last = parts[:-1], parts[-1]
    comps = modules if modules else [last]
    if any(_is_norm_token(t) for c in comps for t in _tokens(c)):
        return "ln"
    if last in ("in_proj_weight", "in_proj_bias"):  # nn.MultiheadAttention's own
        return "attn"
    for c in reversed(comps):
        low = c.lower()
        toks = set(_tokens(c)) | {low.rstrip("0123456789")}
        if low in _ATTN_NAMES or toks & {"attn", "attention", "qkv"}:
            return "attn"
        if low in _FFN_NAMES or toks & {"mlp", "ffn"}:
            return "ffn"
    return None


def _norm_module(mod):
    """Is mod a normalization layer, by its class (nn.LayerNorm, a
    hand-written RMSNorm, GroupNorm...)?"""
    return "norm" in type(mod).__name__.lower()


def _attn_module(mod):
    n = type(mod).__name__.lower()
    return isinstance(mod, torch.nn.MultiheadAttention) or "attention" in n or "attn" in n


def classify_structure(bmod, rel):
    """When the names say nothing: the group of parameter rel by the
    modules that hold it. A norm class or an attention class among its
    owners decides; a Linear alone goes by its shape against the block's
    width d (the most common in_features of its Linears): d -> d, d -> 3d
    and d -> less than d are attention projections (q, k, v, out, fused
    qkv, grouped k/v); d -> h and h -> d with another h are the MLP."""
    parts = rel.split(".")[:-1]
    owners, m = [], bmod
    for p in parts:
        m = getattr(m, p, None)
        if m is None:
            return None
        owners.append(m)
    for o in reversed(owners):
        if _norm_module(o):
            return "ln"
        if _attn_module(o):
            return "attn"
    lin = owners[-1] if owners else None
    if not isinstance(lin, torch.nn.Linear):
        return None
    ins = [x.in_features for x in bmod.modules() if isinstance(x, torch.nn.Linear)]
    d = max(set(ins), key=ins.count)
    i, o = lin.in_features, lin.out_features
    if i == d and (o == d or o == 3 * d or o < d):
        return "attn"
    if (i == d and o > d) or (o == d and i > d):
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
            g = _mapped(mapping, rel) or classify_name(rel) or classify_structure(bmod, rel)
            if g is None:
                unclassified.append("%s.%s" % (bname, rel))
            else:
                groups[g].append(p)
        out.append(groups)
    if unclassified:
        shown = ", ".join(unclassified[:6]) + (" ..." if len(unclassified) > 6 else "")
        warnings.warn("normscope_probe: %d block parameter%s not classified as attention, MLP "
                      "or norm (%s); they count in grad_norm only, and a group left with no parameter is written as null. Pass mapping={'pattern': "
                      "'attn'|'ffn'|'ln'} to attach() to place them."
                      % (len(unclassified), "" if len(unclassified) == 1 else "s", shown),
                      stacklevel=3)
    return out, unclassified


def norm_modules(bmod):
    """The block's normalization layers, in registration order."""
    return [m for m in bmod.modules() if m is not bmod and _norm_module(m)]


def _ran_leaves(order):
    """Of the modules that ran (in the order their calls ended), those none
    of whose own modules ran: the leaves of the forward as it ran. An
    nn.MultiheadAttention is one, though it has a child: its out_proj's
    weight is used, the module never called."""
    ran = {id(m) for m in order}
    return [m for m in order if not any(id(c) in ran for c in m.modules() if c is not m)]


def placement(bmod, order):
    """'pre', 'post' or None for a block, from its norm_first attribute
    (nn.TransformerEncoderLayer) or the order its modules ran in (order:
    block 0's modules of one forward, in the order their calls ended):
    Pre-LN runs a norm first, Post-LN ends with one. Anything else is not
    said."""
    nf = getattr(bmod, "norm_first", None)
    if isinstance(nf, bool):
        return "pre" if nf else "post"
    order = _ran_leaves(order)
    if not order:
        return None
    first, last = _norm_module(order[0]), _norm_module(order[-1])
    if first and not last:
        return "pre"
    if last and not first:
        return "post"
    return None


def norm_kind(mods):
    """(class name, the lab's norm kind or None) of the first norm layer."""
    if not mods:
        return None, None
    m = mods[0]
    name = type(m).__name__
    if isinstance(m, torch.nn.LayerNorm):
        return name, "layernorm"
    if "rms" in name.lower():
        return name, "rmsnorm"
    return name, None
