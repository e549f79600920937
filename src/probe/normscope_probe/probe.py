"""probe.py - the Probe: hooks on a PyTorch model that write a normscope stream.

What it measures, per block and measured step (every `every` steps), with
the lab's names (normscope(1), METRICS):
  - grad_attn / grad_ffn / grad_ln: L2 norms of the gradients of the
    block's parameters, sorted by layout.classify;
  - act_max: the largest |x| among the outputs of the block's modules
    (every submodule whose forward runs, and the block itself);
  - resid_max / resid_rms: max |x| and RMS of the block's output;
  - update_ratio: ||W_after - W_before|| / ||W_after|| over the block's
    parameters, every `update_every` steps (it needs a copy of the block
    parameters between probe.step and optimizer.step);
  - overflow / underflow / headroom when the modules compute in fp16/bf16.
All of a step's numbers are stacked on the device and read with one
.tolist(): one host synchronization per measured step. Hooks keep their
values on the device, so a healthy step never waits on them; the per-module
records are read back only on the step whose loss or gradient norm is not
finite, to name the first module that went non-finite.

It is not a trainer: it never changes the model, except the learning rate
and pauses asked for through the control file (control.py).
"""
import datetime
import math
import os
import time
import types

import torch

from . import control, layout
from .stream import FORMAT, VERSION, Writer, nonfinite_word

LOWP = {torch.float16: 65504.0, torch.bfloat16: 3.3895313892515355e38}
DTYPE_NAME = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16",
              torch.float64: "float64"}
MAX_COMMANDS = 8  # commands carried by one broadcast; the rest wait a step


def _first_tensor(x):
    if isinstance(x, torch.Tensor):
        return x
    if isinstance(x, (tuple, list)) and x and isinstance(x[0], torch.Tensor):
        return x[0]
    return None


def _amax(t):
    """max |t| as a float32 0-d tensor on t's device; NaN if t holds NaN."""
    return torch.linalg.vector_norm(t.detach(), float("inf")).float()


def _lowp_counts(t):
    """(overflow, underflow) counts of a fp16/bf16 tensor: infinities, and
    nonzero values below the smallest normal number (subnormals)."""
    t = t.detach()
    tiny = torch.finfo(t.dtype).tiny
    a = t.abs()
    return torch.isinf(a).sum(), ((a < tiny) & (a != 0)).sum()


class _Records:
    """What the hooks saw during one measured step, all on the device."""

    def __init__(self, n_blocks):
        self.fwd = []  # [(module index, max |output|)] in completion order
        self.bwd = []  # [(module index, max |grad of input|)] in backward order
        self.act = [[] for _ in range(n_blocks)]
        self.resid_max = [None] * n_blocks
        self.resid_sq = [None] * n_blocks
        self.resid_n = [0] * n_blocks
        self.ovf = [[] for _ in range(n_blocks)]
        self.udf = [[] for _ in range(n_blocks)]
        self.lowp = None  # the lowest-precision dtype seen inside a block
        self.hooked = {}
        self.last_out, self.last_amax = None, None


class Probe:
    def __init__(self, model, optimizer=None, path="run.nsj", every=1, blocks=None, *,
                 mapping=None, overwrite=False, update_every=10, scaler=None, scheduler=None,
                 on_checkpoint=None, sharded=None):
        if not isinstance(model, torch.nn.Module):
            raise TypeError("normscope_probe: model must be a torch.nn.Module")
        if int(every) < 1 or int(update_every) < 1:
            raise ValueError("normscope_probe: every and update_every must be >= 1")
        self.model = layout.unwrap(model)
        self.optimizer, self.scaler, self.scheduler = optimizer, scaler, scheduler
        self.path, self.every, self.update_every = path, int(every), int(update_every)
        self.on_checkpoint = on_checkpoint
        self.sharded = (type(model).__name__ == "FullyShardedDataParallel") if sharded is None \
            else bool(sharded)
        self._init_dist()
        self.blocks = layout.find_blocks(self.model, blocks)
        self.groups, self.unclassified = layout.classify(self.blocks, mapping)
        self._index_params()
        self._open(overwrite)
        self.n = 0
        self.paused = False
        self.pending = None
        self.reported_nonfinite = False
        self.header_written = False
        self.rec = _Records(len(self.blocks))
        self.armed = True
        self.closed = False
        self._install_hooks()
        self._wrap_optimizer()

    # -- setup ---------------------------------------------------------------
    def _init_dist(self):
        d = torch.distributed
        self.dist = d.is_available() and d.is_initialized()
        self.rank = d.get_rank() if self.dist else 0
        self.world = d.get_world_size() if self.dist else 1
        self.cdev = torch.device("cpu")
        if self.dist and d.get_backend() == "nccl":
            self.cdev = torch.device("cuda", torch.cuda.current_device())

    def _index_params(self):
        """Group id per parameter: 3 * block + (0 attn, 1 ffn, 2 ln), or -1."""
        self.params = list(self.model.parameters())  # shared ones once
        self.gid = {}
        for b, groups in enumerate(self.groups):
            for g, name in enumerate(layout.GROUPS):
                for p in groups[name]:
                    self.gid[id(p)] = 3 * b + g
        # every parameter of a block, classified or not: the update ratio's set
        self.block_params = [list({id(p): p for p in bm.parameters()}.values())
                             for _, bm in self.blocks]

    def _open(self, overwrite):
        """Rank 0 opens the stream; every rank learns whether it could."""
        self.writer, self.ctl, err = None, None, None
        if self.rank == 0:
            try:
                self.writer = Writer(self.path, overwrite)
                self.ctl = control.Reader(self.path + ".ctl")
            except (ValueError, OSError) as e:
                err = e
        if self.dist:
            flag = torch.tensor([0.0 if err is None else 1.0], device=self.cdev)
            torch.distributed.broadcast(flag, 0)
            if flag.item() and err is None:
                err = ValueError("normscope_probe: rank 0 could not open %s (see its error)"
                                 % self.path)
        if err is not None:
            raise err

    def _install_hooks(self):
        """A forward hook on every module (a module reached under two names
        once), knowing its index, its block and whether it is a block."""
        names = dict((m, n) for n, m in self.model.named_modules())
        block_of = {}
        for b, (_, bmod) in enumerate(self.blocks):
            for m in bmod.modules():
                block_of.setdefault(id(m), b)
        self.block_ids = {id(bm): b for b, (_, bm) in enumerate(self.blocks)}
        self.mod_names, self.handles = [], []
        for m, n in names.items():
            idx = len(self.mod_names)
            self.mod_names.append(n or type(self.model).__name__)
            fn = self._forward_hook(idx, block_of.get(id(m), -1), self.block_ids.get(id(m), -1))
            self.handles.append(m.register_forward_hook(fn))

    def _wrap_optimizer(self):
        self.orig_step = None
        if self.optimizer is None:
            return
        self.had_step_attr = "step" in self.optimizer.__dict__
        self.orig_step = self.optimizer.step
        orig, probe = self.orig_step, self

        def step(opt, *a, **kw):
            out = orig(*a, **kw)
            probe._after_optimizer_step()
            return out
        self.step_fn = step
        self.optimizer.step = types.MethodType(step, self.optimizer)

    # -- hooks -----------------------------------------------------------------
    def _forward_hook(self, idx, block, is_block):
        def hook(mod, inp, out):
            if not self.armed or not torch.is_grad_enabled():
                return
            t = _first_tensor(out)
            if t is None or not t.is_floating_point():
                return
            rec = self.rec
            if t is rec.last_out:  # a container handing on its child's output
                a = rec.last_amax
            else:
                a = _amax(t)
                rec.fwd.append((idx, a))
                rec.last_out, rec.last_amax = t, a
                if block >= 0:
                    rec.act[block].append(a)
                    self._count_lowp(rec, block, t)
            if is_block >= 0:
                self._resid(rec, is_block, t, a)
            x = _first_tensor(inp)
            if x is not None and x.requires_grad and id(x) not in rec.hooked:
                rec.hooked[id(x)] = x  # kept, so its id is not reused this step
                x.register_hook(self._backward_hook(idx, block))
        return hook

    def _backward_hook(self, idx, block):
        def hook(g):
            if not self.armed or g is None:
                return None
            rec = self.rec
            rec.bwd.append((idx, _amax(g)))
            if block >= 0:
                self._count_lowp(rec, block, g)
            return None
        return hook

    @staticmethod
    def _count_lowp(rec, block, t):
        if t.dtype in LOWP:
            if rec.lowp is None or t.dtype == torch.float16:
                rec.lowp = t.dtype
            o, u = _lowp_counts(t)
            rec.ovf[block].append(o)
            rec.udf[block].append(u)

    @staticmethod
    def _resid(rec, b, t, a):
        sq = torch.linalg.vector_norm(t.detach(), 2, dtype=torch.float32) ** 2
        rec.resid_max[b] = a if rec.resid_max[b] is None else torch.maximum(rec.resid_max[b], a)
        rec.resid_sq[b] = sq if rec.resid_sq[b] is None else rec.resid_sq[b] + sq
        rec.resid_n[b] += t.numel()

    # -- the step ----------------------------------------------------------------
    def step(self, loss, val_loss=None):
        """Call after loss.backward() (and scaler.unscale_(optimizer)) and
        before optimizer.step(). Applies the control file's commands, and
        on measured steps records the step's numbers."""
        if self.closed:
            raise RuntimeError("normscope_probe: step() after close()")
        self.n += 1
        if self.pending is not None:  # optimizer.step was not called: skipped
            row, self.pending = self.pending, None
            self._write(row, skipped=1)
        if self.rank == 0 and not self.header_written:
            self._header()
        self._controls()
        if self._measured(self.n):
            row = self._collect(loss, val_loss)
            if self.optimizer is not None:
                self.pending = row
            else:
                self._write(row, skipped=0)
        self.rec = _Records(len(self.blocks))
        self.armed = self._measured(self.n + 1)

    def _measured(self, step):
        return (step - 1) % self.every == 0

    def _after_optimizer_step(self):
        row, self.pending = self.pending, None
        if row is None:
            return
        if row["before"] is not None:
            row["ratio"] = self._ratios(row["before"])
            row["before"] = None
        self._write(row, skipped=0)

    def _ratios(self, before):
        out = []
        for ps, bs in zip(self.block_params, before):
            if not ps:
                out.append(torch.tensor(float("nan")))
                continue
            d = torch.stack([torch.linalg.vector_norm(p.detach().float() - b.float()) for p, b in
                             zip(ps, bs)])
            w = torch.stack([torch.linalg.vector_norm(p.detach().float()) for p in ps])
            out.append(d.pow(2).sum().sqrt() / w.pow(2).sum().sqrt())
        return out

    # -- collecting ----------------------------------------------------------------
    def _grad_sums(self):
        """Squared gradient norms: 3 per block, then the total (device)."""
        gs = [(p.grad, self.gid.get(id(p), -1)) for p in self.params if p.grad is not None]
        dev = self._device()
        nb = 3 * len(self.blocks)
        if not gs:
            return torch.zeros(nb + 1, device=dev)
        grads = [g.detach() for g, _ in gs]
        if all(g.dtype == torch.float32 and not g.is_sparse for g in grads) and \
                hasattr(torch, "_foreach_norm"):
            norms = torch._foreach_norm(grads)
        else:
            norms = [torch.linalg.vector_norm(g.coalesce().values() if g.is_sparse else g, 2,
                                              dtype=torch.float32) for g in grads]
        sq = torch.stack([n.to(dev) for n in norms]).float() ** 2
        idx = torch.tensor([gid if gid >= 0 else nb for _, gid in gs], device=dev)
        sums = torch.zeros(nb + 1, device=dev).index_add_(0, idx, sq)
        sums[nb] = sq.sum()
        if self.dist and self.sharded:
            torch.distributed.all_reduce(sums)
        return sums

    def _device(self):
        for p in self.params:
            return p.device
        return torch.device("cpu")

    def _collect(self, loss, val_loss):
        """Every number of the step as device tensors, plus the module
        records kept for naming a non-finite."""
        dev, rec = self._device(), self.rec
        nan = torch.tensor(float("nan"), device=dev)
        zero = torch.zeros((), device=dev)
        lossv = loss.detach().float().reshape(-1)[0].to(dev) if isinstance(loss, torch.Tensor) \
            else torch.tensor(float(loss), device=dev)
        act = [torch.stack(a).max() if a else nan for a in rec.act]
        rmax = [r if r is not None else nan for r in rec.resid_max]
        rsq = [s if s is not None else nan for s in rec.resid_sq]
        rn = [float(n) for n in rec.resid_n]
        ovf = [torch.stack(o).sum().float() if o else zero for o in rec.ovf]
        udf = [torch.stack(u).sum().float() if u else zero for u in rec.udf]
        lossv, act, rmax, rsq, rn, ovf, udf = self._reduce(lossv, act, rmax, rsq, rn, ovf, udf)
        rms = [(s / n).sqrt() if n > 0 else nan for s, n in zip(rsq, rn)]
        before = None
        if (self.n - 1) % self.update_every == 0 and self.optimizer is not None:
            before = [[p.detach().clone() for p in ps] for ps in self.block_params]
        return {"step": self.n, "loss": lossv, "gsq": self._grad_sums(), "scale": self._scale(),
                "act": act, "rmax": rmax, "rms": rms, "ovf": ovf, "udf": udf,
                "lr": self._lr(), "val_loss": val_loss, "before": before, "ratio": None,
                "fwd": rec.fwd, "bwd": rec.bwd, "lowp": rec.lowp}

    def _reduce(self, lossv, act, rmax, rsq, rn, ovf, udf):
        """Under torch.distributed the activation statistics and the loss are
        those of the global batch: means and sums all-reduced, maxima too
        (ranks hold equal-size shards, as DDP's sampler gives them)."""
        if not self.dist:
            return lossv, act, rmax, rsq, rn, ovf, udf
        nb = len(self.blocks)
        s = torch.stack([lossv] + rsq + ovf + udf).to(self.cdev)
        m = torch.stack(act + rmax).to(self.cdev)
        torch.distributed.all_reduce(s)
        torch.distributed.all_reduce(m, op=torch.distributed.ReduceOp.MAX)
        s = s.to(lossv.device)
        m = m.to(lossv.device)
        lossv = s[0] / self.world
        rsq = list(s[1:1 + nb])
        ovf = list(s[1 + nb:1 + 2 * nb])
        udf = list(s[1 + 2 * nb:1 + 3 * nb])
        rn = [n * self.world for n in rn]
        return lossv, list(m[:nb]), list(m[nb:]), rsq, rn, ovf, udf

    def _scale(self):
        s = self.scaler
        if s is None or not getattr(s, "is_enabled", lambda: False)():
            return None
        t = getattr(s, "_scale", None)
        return t.detach().float().reshape(-1)[0] if isinstance(t, torch.Tensor) \
            else float(s.get_scale())

    def _lr(self):
        if self.optimizer is None or not self.optimizer.param_groups:
            return None
        return float(self.optimizer.param_groups[0]["lr"])

    # -- writing ---------------------------------------------------------------------
    def _write(self, row, skipped):
        """The step's one host synchronization: stack, .tolist(), format."""
        if self.rank != 0:  # the others took part in the collectives already
            return
        nb = len(self.blocks)
        parts = [row["loss"].reshape(1), row["gsq"].float()]
        scale = row["scale"]
        if isinstance(scale, torch.Tensor):
            parts.append(scale.reshape(1).to(row["loss"].device))
        per = [row["act"], row["rmax"], row["rms"], row["ovf"], row["udf"]]
        if row["ratio"] is not None:
            per.append([r.to(row["loss"].device) for r in row["ratio"]])
        parts.append(torch.stack([torch.as_tensor(v, device=row["loss"].device).float()
                                  for col in per for v in col]))
        vals = torch.cat([p.to(row["loss"].device) for p in parts]).tolist()
        loss, gsq = vals[0], vals[1:1 + 3 * nb + 1]
        rest = vals[2 + 3 * nb:]
        if isinstance(scale, torch.Tensor):
            scale, rest = rest[0], rest[1:]
        cols = [rest[k * nb:(k + 1) * nb] for k in range(len(per))]
        gnorm = math.sqrt(gsq[3 * nb]) if math.isfinite(gsq[3 * nb]) else float("nan")
        self.writer.line(self._row_pairs(row, skipped, loss, gnorm, scale, gsq, cols))

    def _row_pairs(self, row, skipped, loss, gnorm, scale, gsq, cols):
        nb = len(self.blocks)
        fmax = LOWP.get(row["lowp"])
        act, rmax, rms, ovf, udf = cols[:5]
        ratio = cols[5] if len(cols) > 5 else [None] * nb
        pairs = [("step", row["step"]), ("loss", loss), ("val_loss", row["val_loss"]),
                 ("lr", row["lr"]), ("grad_norm", gnorm),
                 ("loss_scale", 1.0 if scale is None else scale), ("skipped", skipped)]
        for i in range(nb):
            gn = [math.sqrt(v) if v >= 0 else v for v in gsq[3 * i:3 * i + 3]]
            head = None
            if fmax is not None and act[i] > 0 and math.isfinite(act[i]):
                head = math.log2(fmax / act[i])
            pairs += [("l%d_grad_attn" % i, gn[0]), ("l%d_grad_ffn" % i, gn[1]),
                      ("l%d_grad_ln" % i, gn[2]), ("l%d_act_max" % i, act[i]),
                      ("l%d_resid_max" % i, rmax[i]), ("l%d_resid_rms" % i, rms[i]),
                      ("l%d_update_ratio" % i, ratio[i]),
                      ("l%d_overflow" % i, int(ovf[i]) if math.isfinite(ovf[i]) else None),
                      ("l%d_underflow" % i, int(udf[i]) if math.isfinite(udf[i]) else None),
                      ("l%d_headroom" % i, head)]
        word = nonfinite_word(loss)
        if word:
            pairs.append(("loss_nonfinite", word))
        if (word or not math.isfinite(gnorm)) and not self.reported_nonfinite:
            self.reported_nonfinite = True
            pairs.append(("first_nonfinite", self._first_nonfinite(row)))
        return pairs

    def _first_nonfinite(self, row):
        """'<module>, forward|backward': the first module, in execution
        order, whose output and then whose input gradient held an inf or a
        NaN. Read back only on this (unhealthy) step."""
        for key, pass_ in (("fwd", "forward"), ("bwd", "backward")):
            recs = row[key]
            if recs:
                vals = torch.stack([a.to(recs[0][1].device) for _, a in recs]).tolist()
                for (idx, _), v in zip(recs, vals):
                    if not math.isfinite(v):
                        return "%s, %s" % (self.mod_names[idx], pass_)
        names = {id(p): n for n, p in self.model.named_parameters()}
        for p in reversed(self.params):  # backward meets the last parameters first
            if p.grad is not None and not torch.isfinite(p.grad).all():
                return "%s, backward" % names.get(id(p), "?").rsplit(".", 1)[0]
        return "unknown, forward"

    def _header(self):
        self.header_written = True
        first = self.block_params[0][0] if self.block_params and self.block_params[0] else None
        dtype = self.rec.lowp or (first.dtype if first is not None else torch.float32)
        self.writer.line([
            ("format", FORMAT), ("version", VERSION), ("source", "pytorch"),
            ("model", type(self.model).__name__), ("blocks", [n for n, _ in self.blocks]),
            ("n_layer", len(self.blocks)), ("params", sum(p.numel() for p in self.params)),
            ("block_params", [sum(p.numel() for p in ps) for ps in self.block_params]),
            ("world_size", self.world), ("dtype", DTYPE_NAME.get(dtype, str(dtype))),
            ("every", self.every), ("update_every", self.update_every),
            ("start", datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")),
            ("torch", torch.__version__)])

    # -- controls ------------------------------------------------------------------------
    def _commands(self):
        """New commands, the same on every rank: rank 0 reads the control
        file and broadcasts what it found (one fixed-size tensor)."""
        cmds = self.ctl.poll(MAX_COMMANDS) if self.rank == 0 else []
        if not self.dist:
            return cmds
        buf = torch.zeros(1 + 2 * MAX_COMMANDS, dtype=torch.float64, device=self.cdev)
        if self.rank == 0:
            buf[0] = len(cmds)
            for k, (_, code, f, _) in enumerate(cmds):
                buf[1 + 2 * k], buf[2 + 2 * k] = code, f
        torch.distributed.broadcast(buf, 0)
        if self.rank == 0:
            return cmds
        v = buf.tolist()
        return [(None, int(v[1 + 2 * k]), v[2 + 2 * k], "") for k in range(int(v[0]))]

    def _controls(self):
        for cmd in self._commands():
            self._apply(cmd)
        while self.paused:
            time.sleep(0.1)
            for cmd in self._commands():
                self._apply(cmd)

    def _event(self, kind, text):
        if self.rank == 0:
            self.writer.event(kind, self.n, text)

    def _apply(self, cmd):
        seq, code, f, text = cmd
        if code == control.BAD:
            self._event("note", "ignored: " + text)
        elif code == control.PAUSE:
            if not self.paused:
                self.paused = True
                self._event("paused", "paused before step %d" % self.n)
        elif code == control.RESUME:
            if self.paused:
                self.paused = False
                self._event("resumed", "resumed at step %d" % self.n)
        elif code == control.LR:
            self._scale_lr(f, text)
        elif code == control.CHECKPOINT:
            self._checkpoint()

    def _scale_lr(self, f, text):
        if self.optimizer is None:
            self._event("note", "ignored: %s (attach() was given no optimizer)" % text)
            return
        for g in self.optimizer.param_groups:
            g["lr"] *= f
            if "initial_lr" in g:
                g["initial_lr"] *= f
        if self.scheduler is not None and hasattr(self.scheduler, "base_lrs"):
            self.scheduler.base_lrs = [b * f for b in self.scheduler.base_lrs]
        self._event("setting", "%s (lr %.3g)" % (text or "lr x%g" % f, self._lr()))

    def _checkpoint(self):
        path = "%s.step%d.pt" % (self.path, self.n)
        if self.on_checkpoint is not None:
            self.on_checkpoint(path)
        elif self.rank == 0:
            state = {"step": self.n, "model": self.model.state_dict()}
            if self.optimizer is not None:
                state["optimizer"] = self.optimizer.state_dict()
            tmp = "%s.tmp.%d" % (path, os.getpid())
            torch.save(state, tmp)
            os.replace(tmp, path)
        self._event("checkpoint", "checkpoint %s" % os.path.basename(path))

    # -- extras and the end -------------------------------------------------------------
    def note(self, text):
        """Write a note event (shown in the follow view's events)."""
        self._event("note", str(text))

    def close(self):
        if self.closed:
            return
        if self.pending is not None:
            row, self.pending = self.pending, None
            self._write(row, skipped=1)
        self.closed = True
        for h in self.handles:
            h.remove()
        # put optimizer.step back unless something (an LR scheduler made after
        # attach) wrapped it since: then the wrapper stays and passes through
        if self.optimizer is not None and \
                getattr(self.optimizer.step, "__func__", None) is self.step_fn:
            if self.had_step_attr:
                self.optimizer.step = self.orig_step
            else:
                del self.optimizer.step
        if self.writer is not None:
            self.writer.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
