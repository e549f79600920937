"""test_layout.py - block discovery and parameter classification on the
module layouts of common models (built here as bare module trees with the
same names: Llama-style model.layers, BERT-style encoder.layer, GPT-2's
transformer.h, nn.TransformerEncoder), and blocks= overrides."""
import warnings

import check
import torch
import torch.nn as nn

from normscope_probe import layout

C = check.Check("probe layout")


def tree(spec):
    """nn.Module tree from {'name': Linear/LayerNorm size or nested dict}."""
    m = nn.Module()
    for k, v in spec.items():
        m.add_module(k, tree(v) if isinstance(v, dict) else (
            nn.LayerNorm(4) if v == "ln" else nn.Linear(*v) if isinstance(v, tuple)
            else nn.Linear(4, 4)))
    return m


def stack(path, block_spec, n=2, extra=None):
    root = tree(extra or {})
    parent = root
    parts = path.split(".")
    for p in parts[:-1]:
        if not hasattr(parent, p):
            parent.add_module(p, nn.Module())
        parent = getattr(parent, p)
    parent.add_module(parts[-1], nn.ModuleList([tree(block_spec) for _ in range(n)]))
    return root


def groups_of(model, blocks=None):
    found = layout.find_blocks(model, blocks)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        groups, uncl = layout.classify(found)
    names = {g: sorted(n for n, p in found[0][1].named_parameters()
                       if any(p is q for q in groups[0][g])) for g in layout.GROUPS}
    return [n for n, _ in found], names, uncl, len(w)


LLAMA = {"self_attn": {"q_proj": 1, "k_proj": 1, "v_proj": 1, "o_proj": 1},
         "mlp": {"gate_proj": 1, "up_proj": 1, "down_proj": 1},
         "input_layernorm": "ln", "post_attention_layernorm": "ln"}
m = stack("model.layers", LLAMA, extra={"lm_head": 1})
blocks, g, uncl, nwarn = groups_of(m)
C.ok(blocks == ["model.layers.0", "model.layers.1"], "Llama-style model.layers found")
C.ok(len(g["attn"]) == 8 and len(g["ffn"]) == 6 and len(g["ln"]) == 4 and not uncl,
     "Llama-style: attention, MLP, norms (post_attention_layernorm is a norm)")

BERT = {"attention": {"self": {"query": (8, 8), "key": (8, 8), "value": (8, 8)},
                      "output": {"dense": (8, 8), "LayerNorm": "ln"}},
        "intermediate": {"dense": (8, 32)}, "output": {"dense": (32, 8), "LayerNorm": "ln"}}
m = stack("encoder.layer", BERT)
blocks, g, uncl, nwarn = groups_of(m)
C.ok(blocks == ["encoder.layer.0", "encoder.layer.1"], "BERT-style encoder.layer found")
C.ok(g["ln"] == sorted(["attention.output.LayerNorm.weight", "attention.output.LayerNorm.bias",
                        "output.LayerNorm.weight", "output.LayerNorm.bias"]),
     "BERT-style: the LayerNorm inside attention counts as a norm")
C.ok(len(g["attn"]) == 8 and g["ffn"] == ["intermediate.dense.bias", "intermediate.dense.weight",
                                          "output.dense.bias", "output.dense.weight"]
     and not uncl and nwarn == 0,
     "BERT-style: intermediate by its name, output.dense (4d -> d) by its shape: the MLP "
     "(%d unclassified, %d warnings)" % (len(uncl), nwarn))

GPT2 = {"ln_1": "ln", "attn": {"c_attn": 1, "c_proj": 1}, "ln_2": "ln",
        "mlp": {"c_fc": 1, "c_proj": 1}}
m = stack("transformer.h", GPT2, n=3, extra={"lm_head": 1})
blocks, g, uncl, _ = groups_of(m)
C.ok(len(blocks) == 3 and len(g["attn"]) == 4 and len(g["ffn"]) == 4 and len(g["ln"]) == 4,
     "GPT-2 transformer.h classified")

enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16), 2, enable_nested_tensor=False)
blocks, g, uncl, _ = groups_of(enc)
C.ok(blocks == ["layers.0", "layers.1"] and not uncl, "TransformerEncoder.layers")
C.ok(sorted(g["attn"]) == sorted(["self_attn.in_proj_weight", "self_attn.in_proj_bias",
                                  "self_attn.out_proj.weight", "self_attn.out_proj.bias"]) and
     len(g["ffn"]) == 4 and len(g["ln"]) == 4, "TransformerEncoderLayer's groups")

# an unknown stack name is still found (the largest ModuleList of one class)
m = stack("backbone.stages", GPT2, n=4, extra={"heads": {"a": 1}})
C.ok(groups_of(m)[0] == ["backbone.stages.%d" % i for i in range(4)], "any stack found")
C.ok(groups_of(m, "backbone.stages")[0][0] == "backbone.stages.0", "blocks= by name")
C.ok(groups_of(m, ["backbone.stages.1", "backbone.stages.3"])[0] ==
     ["backbone.stages.1", "backbone.stages.3"], "blocks= as a list")
for bad in ("nope", ["backbone.nope"]):
    try:
        layout.find_blocks(m, bad)
        C.ok(False, "blocks=%r refused" % (bad,))
    except ValueError as e:
        C.ok("names no module" in str(e), "blocks=%r refused: %s" % (bad, e))
try:
    layout.find_blocks(nn.Linear(2, 2))
    C.ok(False, "a model without blocks refused")
except ValueError as e:
    C.ok("blocks=" in str(e), "a model without blocks: says to pass blocks=")


class RMSNorm(nn.Module):
    """Hand-written, as LLaMA codebases write it: a weight, no Linear."""

    def __init__(self, c):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(c))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight


class OddBlock(nn.Module):
    """Names no codebase rule of the old kind knew: qkv, out, up, down, n1, n2."""

    def __init__(self, c=8):
        super().__init__()
        self.n1, self.n2 = RMSNorm(c), nn.LayerNorm(c)
        self.qkv, self.out = nn.Linear(c, 3 * c), nn.Linear(c, c)
        self.up, self.down = nn.Linear(c, 4 * c), nn.Linear(4 * c, c)


odd = nn.Sequential(nn.Embedding(4, 8), nn.ModuleList([OddBlock(), OddBlock()]))
blocks, g, uncl, nwarn = groups_of(odd)
C.ok(blocks == ["1.0", "1.1"], "blocks in an nn.Sequential found (%s)" % blocks)
C.ok(g["attn"] == ["out.bias", "out.weight", "qkv.bias", "qkv.weight"] and
     g["ffn"] == ["down.bias", "down.weight", "up.bias", "up.weight"] and
     g["ln"] == ["n1.weight", "n2.bias", "n2.weight"] and not uncl and nwarn == 0,
     "qkv and up/down by name, out by its shape, n1/n2 by their norm classes (%s, %s)"
     % (g, uncl))
for name, want in (("q_proj.weight", "attn"), ("o_proj.weight", "attn"),
                   ("out_proj.weight", "attn"), ("c_attn.weight", "attn"),
                   ("fc1.weight", "ffn"), ("fc2.bias", "ffn"), ("gate.weight", "ffn"),
                   ("w3.weight", "ffn"), ("c_fc.weight", "ffn"), ("ffn.lin.weight", "ffn"),
                   ("rms.weight", "ln"), ("ln.bias", "ln"), ("attn.c_proj.weight", "attn"),
                   ("mlp.c_proj.weight", "ffn"), ("foo.weight", None)):
    C.ok(layout.classify_name(name) == want, "classify_name(%r) == %r (got %r)"
         % (name, want, layout.classify_name(name)))
b = OddBlock()
C.ok(layout.placement(b, [b.n1, b.qkv, b.out, b.n2, b.up, b.down]) == "pre" and
     layout.placement(b, [b.qkv, b.out, b.n1, b.up, b.down, b.n2]) == "post" and
     layout.placement(b, [b.qkv, b.down]) is None, "placement from the module order")
C.ok(layout.placement(nn.TransformerEncoderLayer(8, 2, norm_first=True), []) == "pre" and
     layout.placement(nn.TransformerEncoderLayer(8, 2), []) == "post",
     "placement from norm_first")
C.ok(layout.norm_kind(layout.norm_modules(b)) == ("RMSNorm", "rmsnorm") and
     layout.norm_kind([nn.LayerNorm(2)]) == ("LayerNorm", "layernorm"), "norm class and kind")
C.close()
