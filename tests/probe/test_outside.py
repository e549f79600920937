"""test_outside.py - the probe on models it was not written for
(tests/probe/models.py): a LLaMA-style model (hand-written RMSNorm, SwiGLU,
q/k/v/o_proj, RoPE, its stack under an unknown name), blocks in an
nn.Sequential beside a heads ModuleList of unlike Linears, an ALBERT-style
shared block, an nn.TransformerEncoder classifier whose loss is the
caller's, nanoGPT returning (logits, loss), and an EMA copy made with
copy.deepcopy. Each: the blocks found (or refused with one line), every
group classified, the gradient norms equal to ones computed here, the
vocabulary, and a fault named where it was made."""
import math
import os
import warnings

import check
import models
import torch
import torch.nn.functional as F

import normscope_probe
from normscope_probe import layout

C = check.Check("probe outside")
torch.set_num_threads(1)
TMP = C.tmpdir()


def norm_of(params):
    return math.sqrt(sum(float(p.grad.double().pow(2).sum()) for p in params
                         if p.grad is not None))


def train(model, name, steps=3, loss_of=None, every=1, fault=None, **opts):
    """Train steps steps with the probe; returns (header, rows, events,
    warnings, the grad norm of every step computed here). fault: (step,
    callable arming it) for an injected inf."""
    torch.manual_seed(0)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    gen = torch.Generator().manual_seed(3)
    path = os.path.join(TMP, name + ".nsj")
    norms = []
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with normscope_probe.attach(model, opt, path=path, every=every, **opts) as probe:
            for s in range(1, steps + 1):
                x, y = models.batch(gen)
                if fault is not None:
                    fault[1](s == fault[0])
                opt.zero_grad()
                out = loss_of(model, x, y) if loss_of else model(x, y)
                loss = out[1] if isinstance(out, tuple) else out
                loss.backward()
                probe.step(loss)
                norms.append(norm_of(model.parameters()))
                opt.step()
    head, rows, ev = check.read_stream(path)
    return head, rows, ev, [str(x.message) for x in w if "normscope_probe" in str(x.message)], \
        norms


def agrees(name, rows, norms, n_layer):
    worst = max(check.rel(r["grad_norm"], norms[r["step"] - 1]) for r in rows)
    full = all("l%d_%s" % (i, k) in r for r in rows for i in range(n_layer)
               for k in ("grad_attn", "grad_ffn", "grad_ln", "act_max", "resid_rms"))
    C.ok(worst < 1e-5 and full, "%s: grad norms agree (worst rel %.2g), every group measured"
         % (name, worst))


def llama():
    m = models.Llama()
    head, rows, _, warns, norms = train(m, "llama")
    C.ok(head["blocks"] == ["decoder.0", "decoder.1"] and not warns,
         "llama: its stack found by structure, every parameter classified (%s, %s)"
         % (head["blocks"], warns))
    C.ok(head.get("norm") == "pre" and rows[0].get("norm_kind") == "rmsnorm" and
         head.get("vocab") == 256, "llama: Pre-LN, rmsnorm, vocab 256 (%s, %s, %s)"
         % (head.get("norm"), rows[0].get("norm_kind"), head.get("vocab")))
    b = m.decoder[0]
    g = b.self_attn.parameters()
    C.ok(check.rel(rows[-1]["l0_grad_attn"], norm_of(g)) < 1e-5,
         "llama: l0_grad_attn is q/k/v/o_proj's gradient norm")
    agrees("llama", rows, norms, 2)


def seq_heads():
    m = models.SeqHeads()
    head, rows, _, warns, norms = train(m, "seqheads")
    C.ok(head["blocks"] == ["body.0", "body.1", "body.2"] and not warns,
         "blocks in an nn.Sequential found, the heads list is not them (%s, %s)"
         % (head["blocks"], warns))
    C.ok(head.get("vocab") == 256, "the vocabulary is the widest head's (%s)" % head.get("vocab"))
    agrees("sequential", rows, norms, 3)
    for blocks, want in (("heads", "holds no run of alike blocks (Linear(32->256), "
                                   "Linear(32->2))"),
                         ("body.0", "is a Block, not a ModuleList or nn.Sequential"),
                         (["body.0", "body.0"], "names 'body.0' 2 times"),
                         (["heads.0"], "is not a block: it has no submodules"),
                         (["body.0", "body.0.attn"], "holds the entry 'body.0.attn'"),
                         (["heads"], "is a ModuleList, a container"),
                         (3, "blocks= is a int")):
        try:
            layout.find_blocks(m, blocks)
            C.ok(False, "blocks=%r refused" % (blocks,))
        except ValueError as e:
            C.ok(want in str(e) and "\n" not in str(e), "blocks=%r refused in one line: %s"
                 % (blocks, e))


def albert():
    m = models.Albert()
    try:
        normscope_probe.attach(m, path=os.path.join(TMP, "albert0.nsj"))
        C.ok(False, "albert: no stack: refused")
    except ValueError as e:
        C.ok("blocks=['its name']" in str(e), "albert: no stack found, says how to name the "
             "shared block (%s)" % e)
    head, rows, ev, warns, norms = train(m, "albert", blocks=["shared"])
    notes = [e["text"] for e in ev if e["event"] == "note" and "unknown" not in e]
    C.ok(head["n_layer"] == 1 and head.get("block_calls") == [4] and len(notes) == 1 and
         "ran 4 times" in notes[0] and "rows per call are not written" in notes[0],
         "albert: one row, and the stream says plainly the block ran 4 times (%s, %s)"
         % (head.get("block_calls"), notes))
    agrees("albert", rows, norms, 1)


def nanogpt_eval_and_accumulation():
    """nanoGPT's loop: an evaluation under no_grad before the first step,
    then gradient accumulation over 4 micro-batches, and a model whose
    blocks are checkpointed (recomputed in the backward): no block is
    shared, and the stream says none is."""
    import torch.utils.checkpoint as cp

    class Checkpointed(models.GPT):
        def logits(self, idx):
            t = idx.shape[1]
            x = self.transformer.wte(idx) + self.transformer.wpe(torch.arange(t))
            for blk in self.transformer.h:
                x = cp.checkpoint(blk, x, use_reentrant=False) if self.training else blk(x)
            return self.lm_head(self.transformer.ln_f(x))

    for name, m in (("evalacc", models.GPT(n_layer=2)), ("ckpt", Checkpointed(n_layer=2))):
        opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
        gen = torch.Generator().manual_seed(5)
        path = os.path.join(TMP, name + ".nsj")
        with normscope_probe.attach(m, opt, path=path) as probe:
            for _ in range(3):
                m.eval()
                with torch.no_grad():  # estimate_loss() before the first step
                    for _ in range(5):
                        m(*models.batch(gen))
                m.train()
                for _ in range(4):  # gradient_accumulation_steps
                    x, y = models.batch(gen)
                    loss = m(x, y) / 4
                    loss.backward()
                probe.step(loss)
                opt.step()
                opt.zero_grad(set_to_none=True)
        head, rows, ev = check.read_stream(path)
        notes = [e["text"] for e in ev if e["event"] == "note" and "shared weights" in e["text"]]
        C.ok("block_calls" not in head and not notes and len(rows) == 3,
             "%s: no block is said to be shared (%s, %s)" % (name, head.get("block_calls"), notes))


def ema_copy():
    """An EMA model made with copy.deepcopy after attach() (timm's ModelEma,
    many scripts' own): the copy is made, runs its own weights (all zero:
    the uniform loss, log 256), and its forwards leave the stream as a run
    without it, under both watches."""
    import copy
    for watch in ("replay", "device"):
        os.environ["NORMSCOPE_PROBE_WATCH"] = watch
        runs, ema_loss, err = [], [], None
        for with_ema in (False, True):
            torch.manual_seed(0)
            m = models.GPT(n_layer=2)
            opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
            gen = torch.Generator().manual_seed(7)
            path = os.path.join(TMP, "ema%s%d.nsj" % (watch, with_ema))
            with normscope_probe.attach(m, opt, path=path) as probe:
                ema = None
                for _ in range(3):
                    x, y = models.batch(gen)
                    opt.zero_grad()
                    loss = m(x, y)
                    loss.backward()
                    probe.step(loss)
                    opt.step()
                    if with_ema and ema is None:
                        try:
                            ema = copy.deepcopy(m)
                        except Exception as e:  # noqa: BLE001 (the failure is the finding)
                            err = e
                            break
                        for q in ema.parameters():
                            q.data.zero_()
                    if ema is not None:
                        with torch.no_grad():
                            ema_loss.append(float(ema(x, y)))
            runs.append(check.read_stream(path)[1])
        del os.environ["NORMSCOPE_PROBE_WATCH"]
        keys = ["loss", "grad_norm"] + ["l%d_%s" % (i, k) for i in range(2)
                                        for k in ("act_max", "resid_rms", "grad_attn")]
        same = err is None and len(runs[0]) == len(runs[1]) == 3 and \
            all(a[k] == b[k] for a, b in zip(*runs) for k in keys)
        C.ok(same and len(ema_loss) == 3 and
             all(abs(v - math.log(256)) < 1e-5 for v in ema_loss),
             "%s watch: a deepcopy of the model runs its own weights (%s) and leaves the "
             "stream unchanged (%s)" % (watch, ema_loss or err, same))


def classifier():
    """The loss is computed outside the model: the forward is replayed,
    not the backward, and an inf made in a forward is still named, at
    every=10 on an unwritten step."""
    m = models.EncoderClassifier()

    def loss_of(model, x, y):
        return F.cross_entropy(model(x), y[:, 0] % 5)
    lin = m.encoder.layers[1].linear2
    orig = lin.forward
    armed = [False]

    def faulty(x):
        y = orig(x)
        if armed[0]:
            y = y.clone()
            y[0, 0, 0] = float("inf")
        return y
    lin.forward = faulty
    head, rows, _, warns, norms = train(
        m, "classifier", steps=12, loss_of=loss_of, every=10,
        fault=(7, lambda on: armed.__setitem__(0, on)), on_nonfinite="warn")
    C.ok(head["blocks"] == ["encoder.layers.0", "encoder.layers.1"] and
         head.get("norm") == "post" and head.get("vocab") == 5,
         "classifier: encoder layers, Post-LN, 5 classes as its vocab (%s, %s, %s)"
         % (head["blocks"], head.get("norm"), head.get("vocab")))
    first = [(r.get("first_nonfinite"), r.get("first_nonfinite_step")) for r in rows
             if "first_nonfinite" in r]
    C.ok(first == [("encoder.layers.1.linear2, forward", 7)],
         "classifier: the inf of step 7 is named at its module (%s)" % first)
    C.ok(len([x for x in warns if "first non-finite at step 7" in x]) == 1,
         "on_nonfinite='warn' warns once, at step 7 (%s)" % warns)


def logits_loss():
    """nanoGPT's (logits, loss): the replay keeps no output-sized tensor
    (only the loss, a one-value output) and still names an inf made in a
    backward, seeded from the loss's gradient."""
    m = models.GPTLogits()
    probe = normscope_probe.attach(m, path=os.path.join(TMP, "kept.nsj"), every=10)
    x, y = models.batch(torch.Generator().manual_seed(1))
    for s in range(2):
        logits, loss = m(x, y)
        sizes = [t.numel() for c in probe.rec.calls for t in c.kept if t is not None]
        loss.backward()
        probe.step(loss)
    probe.close()
    C.ok(sizes == [1], "(logits, loss): a replay keeps the loss only (kept sizes %s)" % sizes)

    class InfBackward(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.view_as(x)

        @staticmethod
        def backward(ctx, g):
            g = g.clone()
            g.view(-1)[0] = float("inf")
            return g
    fc = m.transformer.h[1].mlp.c_fc
    orig = fc.forward
    armed = [False]
    fc.forward = lambda z: orig(InfBackward.apply(z) if armed[0] else z)
    _, rows, _, _, _ = train(m, "logits", steps=12, every=10,
                             fault=(5, lambda on: armed.__setitem__(0, on)))
    first = [(r.get("first_nonfinite"), r.get("first_nonfinite_step")) for r in rows
             if "first_nonfinite" in r]
    C.ok(first == [("transformer.h.1.mlp.c_fc, backward", 5)],
         "(logits, loss): an inf made in a backward is named (%s)" % first)


def attention_scores():
    """act_max covers nn.MultiheadAttention's scores, q.k / sqrt(d_head)
    before masking and softmax: with q and k projections scaled up, the
    scores are the block's largest |x|, equal to ones computed here from
    the attention's inputs."""
    m = models.EncoderClassifier(n_layer=1)
    mha = m.encoder.layers[0].self_attn
    with torch.no_grad():
        mha.in_proj_weight[:64] *= 6.0
    seen = []
    mha.register_forward_pre_hook(lambda mod, inp: seen.append(inp[0].detach()))
    path = os.path.join(TMP, "scores.nsj")
    x, y = models.batch(torch.Generator().manual_seed(4))
    with normscope_probe.attach(m, path=path) as probe:
        loss = F.cross_entropy(m(x), y[:, 0] % 5)
        loss.backward()
        probe.step(loss)
    q = F.linear(seen[0], mha.in_proj_weight[:32], mha.in_proj_bias[:32])
    k = F.linear(seen[0], mha.in_proj_weight[32:64], mha.in_proj_bias[32:64])
    q, k = (z.reshape(4, 16, 2, 16).transpose(1, 2) for z in (q, k))
    want = float(((q @ k.transpose(-2, -1)) / 4.0).abs().max())
    outs = float(m.encoder.layers[0](m.emb(x)).abs().max())
    got = check.read_stream(path)[1][0]["l0_act_max"]
    C.ok(want > 2 * outs and check.rel(got, want) < 1e-5,
         "act_max is the attention scores' max when they are the largest (%.4g, want %.4g; "
         "outputs %.4g)" % (got, want, outs))


llama()
attention_scores()
seq_heads()
albert()
nanogpt_eval_and_accumulation()
ema_copy()
classifier()
logits_loss()
C.close()
