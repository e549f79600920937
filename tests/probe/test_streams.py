"""test_streams.py - a nanoGPT-style model and nn.TransformerEncoder (post-norm
and norm_first) trained a few dozen steps write valid streams: every line
parses as strict JSON, the header names the blocks, every step line has the
lab's keys, and the grad norms equal ones computed here from the grads."""
import math
import os
import warnings

import check
import models
import torch

import normscope_probe

C = check.Check("probe streams")
torch.set_num_threads(1)
TMP = C.tmpdir()


def group_norm(params):
    sq = sum(float(p.grad.pow(2).sum()) for p in params if p.grad is not None)
    return math.sqrt(sq)


def train(model, path, steps, every=1, autocast=False, **opts):
    """Train; return the per-step expected [grad_norm, l0 attn, l0 ffn, l0 ln]."""
    torch.manual_seed(0)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    gen = torch.Generator().manual_seed(5)
    x, y = models.batch(gen)  # one batch again and again: the loss must fall
    want = []
    with normscope_probe.attach(model, opt, path=path, every=every, **opts) as probe:
        for _ in range(steps):
            opt.zero_grad()
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
                loss = model(x, y)
            loss.backward()
            probe.step(loss)
            want.append([group_norm(model.parameters())] + block0_norms(model))
            before = [q.detach().double().clone() for q in block0(model).parameters()]
            opt.step()
            after = [q.detach().double() for q in block0(model).parameters()]
            want[-1].append(math.sqrt(sum(float((a - b).pow(2).sum()) for a, b in
                                          zip(after, before))) /
                            math.sqrt(sum(float(a.pow(2).sum()) for a in after)))
    return want


def block0(model):
    return model.transformer.h[0] if hasattr(model, "transformer") else model.encoder.layers[0]


def block0_norms(model):
    b = block0(model)
    if hasattr(model, "transformer"):
        return [group_norm(b.attn.parameters()), group_norm(b.mlp.parameters()),
                group_norm(list(b.ln_1.parameters()) + list(b.ln_2.parameters()))]
    return [group_norm(b.self_attn.parameters()),
            group_norm(list(b.linear1.parameters()) + list(b.linear2.parameters())),
            group_norm(list(b.norm1.parameters()) + list(b.norm2.parameters()))]


def check_stream(name, path, n_layer, steps, want, blocks, every=1, update_every=10):
    head, rows, _ = check.read_stream(path)
    C.ok(head.get("format") == "normscope-stream" and head.get("version") == 1, name + " header")
    C.ok(head.get("blocks") == blocks and head.get("n_layer") == n_layer, name + " blocks")
    C.ok(len(head.get("block_params", [])) == n_layer and head.get("world_size") == 1,
         name + " block_params, world_size")
    C.ok([r["step"] for r in rows] == list(range(1, steps + 1, every)), name + " step numbers")
    unknown = set(head.get("unknown", []))  # what the header says the model does not show
    missing = [k for r in rows for k in check.STEP_KEYS if k not in r] + \
        ["l%d_%s" % (i, k) for r in rows for i in range(n_layer) for k in check.LAYER_KEYS
         if "l%d_%s" % (i, k) not in r and not {k, "l%d_%s" % (i, k)} & unknown]
    C.ok(not missing, "%s keys present (missing %s)" % (name, missing[:4]))
    C.ok(rows[-1]["loss"] < rows[0]["loss"] - 0.5, name + " loss falls")
    worst = max(check.rel(r[k], w[j]) for r in rows for j, k in enumerate(
        ("grad_norm", "l0_grad_attn", "l0_grad_ffn", "l0_grad_ln")) for w in [want[r["step"] - 1]])
    C.ok(worst < 1e-5, "%s grad norms match the grads (worst rel %.2g)" % (name, worst))
    ok = all(r["l%d_resid_max" % i] <= r["l%d_act_max" % i] and r["l%d_resid_rms" % i] > 0
             for r in rows for i in range(n_layer))
    C.ok(ok, name + " resid_max <= act_max, resid_rms > 0")
    C.ok(not [r for r in rows if "l0_headroom" in r or "val_loss" in r],
         name + " no headroom in fp32, no val_loss when none was given")
    ratios = [r.get("l0_update_ratio") for r in rows]
    C.ok(any(v is None for v in ratios) == (update_every > every) and all(
        (v is not None and v > 0) == ((r["step"] - 1) % update_every == 0)
             for v, r in zip(ratios, rows)), name + " update ratio on its steps only")
    worst = max(check.rel(v, want[r["step"] - 1][4]) for v, r in zip(ratios, rows) if v)
    C.ok(worst < 1e-5, "%s update ratios match the weights' change on every such step (worst "
         "rel %.2g)" % (name, worst))
    return rows


def streams():
    for name, model, blocks in (
            ("nanoGPT", models.GPT(), ["transformer.h.%d" % i for i in range(3)]),
            ("encoder post-norm", models.EncoderLM(), ["encoder.layers.%d" % i for i in range(3)]),
            ("encoder norm_first", models.EncoderLM(norm_first=True),
             ["encoder.layers.%d" % i for i in range(3)])):
        path = os.path.join(TMP, name.replace(" ", "_") + ".nsj")
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            want = train(model, path, 40)
        C.ok(not [x for x in w if "normscope_probe" in str(x.message)], name + " all classified")
        check_stream(name, path, 3, 40, want, blocks)


def every_k():
    path = os.path.join(TMP, "every.nsj")
    want = train(models.GPT(), path, 25, every=4, update_every=4)
    check_stream("every=4", path, 3, 25, want, ["transformer.h.%d" % i for i in range(3)], 4, 4)


def frozen():
    """Parameters without a gradient (frozen, or unfrozen mid-run): every
    group's norm is over the gradients there are, a group with none
    is 0, and the sums follow when the set changes."""
    m = models.GPT()
    h = m.transformer.h
    h[0].ln_1.weight.requires_grad_(False)
    h[1].mlp.requires_grad_(False)
    opt = torch.optim.AdamW(m.parameters(), lr=3e-3)
    x, y = models.batch(torch.Generator().manual_seed(5))
    path = os.path.join(TMP, "frozen.nsj")
    want = []
    with normscope_probe.attach(m, opt, path=path) as probe:
        for s in range(1, 9):
            if s == 5:
                h[0].ln_1.weight.requires_grad_(True)
            opt.zero_grad(set_to_none=True)
            loss = m(x, y)
            loss.backward()
            probe.step(loss)
            want.append([group_norm(m.parameters()),
                         group_norm(list(h[0].ln_1.parameters()) + list(h[0].ln_2.parameters())),
                         group_norm(h[1].attn.parameters())])
            opt.step()
    rows = check.read_stream(path)[1]
    got = [[r["grad_norm"], r["l0_grad_ln"], r["l1_grad_attn"]] for r in rows]
    worst = max(check.rel(g, w) for gr, wr in zip(got, want) for g, w in zip(gr, wr))
    C.ok(len(rows) == 8 and worst < 1e-5 and want[3][1] != want[4][1],
         "frozen parameters: the norms are over the gradients there are, before and after "
         "one is unfrozen (worst rel %.2g)" % worst)
    C.ok([r["l1_grad_ffn"] for r in rows] == [0] * 8, "a frozen group's norm is 0 (%s)"
         % [r["l1_grad_ffn"] for r in rows])


def refusal():
    path = os.path.join(TMP, "nanoGPT.nsj")
    size = os.path.getsize(path)
    try:
        normscope_probe.attach(models.GPT(), path=path)
        C.ok(False, "a second run to an existing stream is refused")
    except ValueError as e:
        C.ok("overwrite=True" in str(e), "refusal says how to overwrite")
    C.ok(os.path.getsize(path) == size, "the refused stream is left as it was")
    p = normscope_probe.attach(models.GPT(), path=path, overwrite=True)
    p.close()
    _, rows, ev = check.read_stream(path)
    C.ok(not rows and [(e["event"], e["step"], e.get("reason")) for e in ev] == [("end", 0, "close")],
         "overwrite=True starts the stream again: closed before a step, a header and its end (%s)"
         % ev)


class Odd(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = torch.nn.Linear(8, 8)
        self.mystery = torch.nn.Parameter(torch.ones(8))  # no name, no module, no shape says

    def forward(self, x):
        return self.attn(x) * self.mystery


def unclassified():
    m = torch.nn.Sequential(torch.nn.ModuleList([Odd(), Odd()]))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        p = normscope_probe.attach(m, path=os.path.join(TMP, "odd.nsj"))
        p.close()
    msgs = [str(x.message) for x in w if "normscope_probe" in str(x.message)]
    C.ok(len(msgs) == 1 and "0.0.mystery" in msgs[0], "unclassified parameters warned once")
    path = os.path.join(TMP, "odd2.nsj")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = normscope_probe.attach(m, path=path)
    x = torch.randn(2, 8, requires_grad=True)
    m[0][1](m[0][0](x)).sum().backward()
    p.step(0.0)
    p.close()
    row = check.read_stream(path)[1][0]
    C.ok(row["l0_grad_attn"] > 0 and "l0_grad_ffn" not in row and "l0_grad_ln" not in row,
         "groups with no parameter are left out, not 0 or null (%s)" % row)
    C.ok("lr" not in row, "no lr without an optimizer (%s)" % row.get("lr"))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        p = normscope_probe.attach(m, path=os.path.join(TMP, "odd.nsj"), overwrite=True,
                                   mapping={"mystery": "ffn"})
        C.ok(len(p.groups[1]["ffn"]) == 1, "mapping= places them")
        p.close()
    C.ok(not [x for x in w if "normscope_probe" in str(x.message)], "mapping= silences the warning")


def autocast_bf16():
    path = os.path.join(TMP, "bf16.nsj")
    train(models.GPT(), path, 3, autocast=True)
    head, rows, _ = check.read_stream(path)
    C.ok(head["dtype"] == "bfloat16", "autocast bf16 run says dtype bfloat16")
    h = rows[0]["l0_headroom"]
    want = math.log2(3.3895313892515355e38 / rows[0]["l0_act_max"])
    C.ok(h is not None and check.rel(h, want) < 1e-6, "bf16 headroom is log2(max / act_max)")
    C.ok(all(isinstance(r["l0_overflow"], int) for r in rows), "bf16 overflow counted")


def skipped():
    """A step whose optimizer.step() never came (as a GradScaler that found
    an inf does) is written with skipped 1, at the next probe.step."""
    m = models.GPT(n_layer=2)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    gen = torch.Generator().manual_seed(4)
    path = os.path.join(TMP, "skip.nsj")
    with normscope_probe.attach(m, opt, path=path, update_every=1) as probe:
        for s in range(1, 6):
            x, y = models.batch(gen)
            opt.zero_grad()
            m(x, y).backward()
            probe.step(0.0)
            if s != 3:
                opt.step()
    _, rows, _ = check.read_stream(path)
    C.ok([r["skipped"] for r in rows] == [0, 0, 1, 0, 0], "skipped marks the skipped step only")
    C.ok("l0_update_ratio" not in rows[2] and rows[3]["l0_update_ratio"] > 0,
         "no update ratio for a skipped step")


def scheduler_after_attach():
    """An LR scheduler made after attach() wraps the wrapped step; both
    keep working, and close() leaves the scheduler's wrapper in place."""
    m = models.GPT(n_layer=1)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    gen = torch.Generator().manual_seed(6)
    path = os.path.join(TMP, "sched.nsj")
    probe = normscope_probe.attach(m, opt, path=path)
    sched = torch.optim.lr_scheduler.StepLR(opt, 1, gamma=0.5)
    for _ in range(3):
        x, y = models.batch(gen)
        opt.zero_grad()
        m(x, y).backward()
        probe.step(0.0)
        opt.step()
        sched.step()
    probe.close()
    opt.step()  # still callable after close
    _, rows, _ = check.read_stream(path)
    C.ok([r["lr"] for r in rows] == [0.1, 0.05, 0.025], "scheduler's lr in the stream")
    C.ok(opt._step_count == 4, "the scheduler's step counter still counts")


def entropy_of(ys):
    c = torch.bincount(torch.cat([y.reshape(-1) for y in ys]).clamp(min=0),
                       weights=torch.cat([(y.reshape(-1) >= 0).double() for y in ys]))
    p = c[c > 0] / c.sum()
    return float(-(p * p.log()).sum())


class Scaler(torch.cuda.amp.GradScaler):
    """A GradScaler that says it is enabled (a CPU-only torch disables a
    real one): what the probe finds by itself."""

    def is_enabled(self):
        return True

    def get_scale(self):
        return 1024.0


def diagnosis_keys():
    """What the lab's rules need, in the stream: vocab in the header (the
    lm_head's out_features), data_entropy of the written steps' targets
    (found as forward(idx, targets)'s second argument, or given to step()
    with an ignore_index), val_loss on the line after validation(), lr,
    and a GradScaler found without being passed."""
    for how in ("found", "given"):
        m = models.GPT(n_layer=1, v=200)
        opt = torch.optim.SGD(m.parameters(), lr=0.01)
        gen = torch.Generator().manual_seed(8)
        path = os.path.join(TMP, "diag_%s.nsj" % how)
        seen = []
        with normscope_probe.attach(m, opt, path=path, every=3) as probe:
            for s in range(1, 8):
                x, y = models.batch(gen, v=200)
                y = y % (7 * s)  # the counts change step by step
                opt.zero_grad()
                if how == "given":
                    y[0, :3] = -100
                    loss = m(x, y.clamp(min=0))
                else:
                    loss = m(x, y)
                loss.backward()
                if s == 2:
                    probe.validation(torch.tensor(4.25))
                probe.step(loss, targets=y) if how == "given" else probe.step(loss)
                if (s - 1) % 3 == 0:
                    seen.append(y)
                opt.step()
        head, rows, _ = check.read_stream(path)
        C.ok(head.get("vocab") == 200, "%s: header vocab is the lm_head's 200 (%s)"
             % (how, head.get("vocab")))
        got = [r.get("data_entropy") for r in rows]
        want = [entropy_of(seen[:k + 1]) for k in range(len(seen))]
        C.ok(len(got) == 3 and all(g is not None and abs(g - w) < 1e-5 for g, w in zip(got, want)),
             "%s: data_entropy is the written steps' targets' entropy (%s, want %s)"
             % (how, got, want))
        C.ok([r.get("val_loss") for r in rows] == [None, 4.25, None],
             "%s: val_loss on the line after validation() only (%s)"
             % (how, [r.get("val_loss") for r in rows]))
        C.ok([r.get("lr") for r in rows] == [0.01] * 3 and
             [r.get("loss_scale") for r in rows] == [1] * 3,
             "%s: lr, and loss_scale 1 with no GradScaler in the process" % how)
    m = models.GPT(n_layer=1)
    scaler = Scaler(enabled=False)
    path = os.path.join(TMP, "scaler.nsj")
    with normscope_probe.attach(m, path=path, vocab=77) as probe:
        x, y = models.batch(gen)
        m(x, y).backward()
        probe.step(0.0)
    head, rows, _ = check.read_stream(path)
    C.ok(rows[0].get("loss_scale") == 1024 and head.get("vocab") == 77,
         "a GradScaler not passed is found; vocab= is written as given (%s, %s)"
         % (rows[0].get("loss_scale"), head.get("vocab")))
    del scaler


streams()
diagnosis_keys()
every_k()
frozen()
scheduler_after_attach()
skipped()
refusal()
unclassified()
autocast_bf16()
C.close()
