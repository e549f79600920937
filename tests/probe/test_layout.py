"""test_layout.py - block discovery and parameter classification on the
module layouts of common models (built here as bare module trees with the
same names: Llama-style model.layers, BERT-style encoder.layer, GPT-2's
transformer.h, nn.TransformerEncoder), and blocks= overrides."""
import warnings

import check
import torch.nn as nn

from normscope_probe import layout

C = check.Check("probe layout")


def tree(spec):
    """nn.Module tree from {'name': Linear/LayerNorm size or nested dict}."""
    m = nn.Module()
    for k, v in spec.items():
        m.add_module(k, tree(v) if isinstance(v, dict) else (
            nn.LayerNorm(4) if v == "ln" else nn.Linear(4, 4)))
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

BERT = {"attention": {"self": {"query": 1, "key": 1, "value": 1},
                      "output": {"dense": 1, "LayerNorm": "ln"}},
        "intermediate": {"dense": 1}, "output": {"dense": 1, "LayerNorm": "ln"}}
m = stack("encoder.layer", BERT)
blocks, g, uncl, nwarn = groups_of(m)
C.ok(blocks == ["encoder.layer.0", "encoder.layer.1"], "BERT-style encoder.layer found")
C.ok(g["ln"] == sorted(["attention.output.LayerNorm.weight", "attention.output.LayerNorm.bias",
                        "output.LayerNorm.weight", "output.LayerNorm.bias"]),
     "BERT-style: the LayerNorm inside attention counts as a norm")
C.ok(len(g["attn"]) == 8 and len(uncl) == 8 and nwarn == 1,
     "BERT-style: intermediate/output dense unclassified, one warning (%d, %d)"
     % (len(uncl), nwarn))

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
C.close()
