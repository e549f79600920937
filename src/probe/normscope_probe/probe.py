"""probe.py - the Probe: hooks on a PyTorch model that write a normscope stream.

What it measures, per block and measured step (every `every` steps), with
the lab's names (normscope(1), METRICS):
  - grad_attn / grad_ffn / grad_ln: L2 norms of the gradients of the
    block's parameters, sorted by layout.classify (null for a group with
    no parameter);
  - act_max: the largest |x| among the outputs of the modules that ran
    while the block ran (a module shared by all blocks is booked to the
    block calling it), and the block's own output;
  - resid_max / resid_rms: max |x| and RMS of the block's output;
  - update_ratio: ||W_after - W_before|| / ||W_after|| over the block's
    parameters, every `update_every` steps (it needs a copy of the block
    parameters between probe.step and optimizer.step);
  - overflow / underflow / headroom when the modules compute in fp16/bf16.

The non-finite watch runs on every step, measured or not, and records the
first (step, module) whose output or input gradient was not finite; it is
written with the next measured step's numbers and at close(), so `every`
only thins the per-layer numbers: the step and module reported are the
true first ones. How it watches depends on where the model is:

  - On the CPU (a host read costs nothing there) it reads one number:
    the loss plus the sum of every gradient's values (the small
    gradients summed in one buffer). Only when that is not finite, and an
    inf or a NaN is really there, does it look for the module: it runs the
    step's forward calls again, from the same inputs, random state and
    autocast, and their backward from the same output gradients, with a
    sum on every module's output and input gradient, and takes the first
    that is not finite (the model's buffers are put back after). Between
    measured steps no module hook is installed at all. A value that
    reaches neither the loss nor a gradient is not reported.
  - On an accelerator (a host read would wait for the device) every
    module's output and input gradient gets one reduction on every step
    (a sum on unmeasured steps, the aminmax the measurement needs on
    measured ones), folded into a small tensor on the device that keeps
    the first (step, module); it is read only with a measured step.

Costs are kept to the cheapest reductions: amin and amax for maxima,
foreach norms for gradient sums, one buffer per block for the update
ratio, and one concatenated tensor read to the host per measured step.

It is not a trainer: it never changes the model, except the learning rate
and pauses asked for through the control file (control.py).
"""
import atexit
import copy
import datetime
import math
import os
import random
import signal
import socket
import sys
import tempfile
import threading
import time
import types
import warnings
import weakref

import torch

from . import control, layout, mechanism
from .control import Code
from .stream import FORMAT, LAYER_COLS, LAYER_UNKNOWN, VERSION, Clock, Writer, nonfinite_word
from .version import __version__

# mechanism records kept as maxima (the largest attention and output
# logit); the others are sums, divided by their counts when written
MECH_MAX = ("amax", "lmax")
LOWP = {torch.float16: 65504.0, torch.bfloat16: 3.3895313892515355e38}
DTYPE_NAME = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16",
              torch.float64: "float64"}
PRECISION = {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16",
             torch.float64: "fp32"}
# a gradient smaller than this is summed inside one buffer with the others
# (_grad_check): 64K values take ~10 us to reduce, a reduction's own cost ~4 us
FLAT_MAX = 1 << 16
MAX_COMMANDS = 8  # commands carried by one broadcast; the rest wait a step
# out_change: the fixed batch's sequences (the first training batch's
# first ones), and the steps it is measured on (then at validations): a
# forward of its own each, 12% of a step of 16 sequences (L4 d64), so the first
# steps only, where an update's reach tells Post-LN from DeepNorm
OUT_ROWS, OUT_STEPS = 4, 10
# what the watch's record codes say besides a module: code = 4 * module + pass
PASS_FORWARD, PASS_BACKWARD, PASS_LOSS, PASS_GRADS = 0, 1, 2, 3
END_SIGNALS = ("SIGTERM", "SIGHUP")  # ended by the default action: the end line first
# Modules that cannot make a non-finite value from finite ones, forward or
# backward (elementwise activations, dropout, identity): on unmeasured
# steps the watch skips one whose input is the output just checked (what
# it passes on was checked where it was made), so the answer is the same.
# They are measured on measured steps.
# NORMSCOPE_PROBE_WATCH=device makes a CPU model use the accelerator's watch
# (the tests run both on the CPU); replay is the CPU's own
WATCH_ENV = "NORMSCOPE_PROBE_WATCH"
PASSIVE = (torch.nn.GELU, torch.nn.ReLU, torch.nn.SiLU, torch.nn.Tanh, torch.nn.Sigmoid,
           torch.nn.Dropout, torch.nn.Identity, torch.nn.LeakyReLU, torch.nn.ELU,
           torch.nn.Hardtanh, torch.nn.ReLU6)


def _contracting(mod):
    """|f(x)| <= |x| for every x, elementwise: its output's largest |x| is
    never above its input's (GELU and SiLU are x times a factor in [0, 1];
    ReLU, tanh, clamps; LeakyReLU and ELU with slope and alpha up to 1;
    dropout only outside training, where it is the identity). One
    exception: GELU and SiLU take -inf to NaN, where the input's maximum
    says inf; the stream writes either as null (not finite). The classes
    themselves only: a subclass may compute something else."""
    nn, kind = torch.nn, type(mod)
    if kind in (nn.GELU, nn.ReLU, nn.SiLU, nn.Tanh, nn.Identity):
        return True
    if kind in (nn.Hardtanh, nn.ReLU6):  # a clamp to bounds around 0
        return mod.min_val <= 0 <= mod.max_val
    if kind is nn.LeakyReLU:
        return abs(mod.negative_slope) <= 1
    if kind is nn.ELU:
        return 0 <= mod.alpha <= 1
    return kind is nn.Dropout and not mod.training


def _order(pass_, i):
    """Where a record lies in its step, as a number ranks can compare (they
    run the same model): forward, the loss, backward, the parameters'
    gradients, each record i of its pass in the order it ran."""
    rank = {PASS_FORWARD: 0, PASS_LOSS: 1, PASS_BACKWARD: 2, PASS_GRADS: 3}[pass_]
    return float(rank * (1 << 20) + min(i, (1 << 20) - 1))


def _first_tensor(x):
    if isinstance(x, torch.Tensor):
        return x
    if isinstance(x, (tuple, list)) and x and isinstance(x[0], torch.Tensor):
        return x[0]
    return None


def _targets_like(x, y):
    """Is y the batch's targets, as nanoGPT's forward(idx, targets) takes
    them: an integer tensor of the inputs' shape, the inputs integers too?"""
    return isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor) and \
        not x.is_floating_point() and not y.is_floating_point() and \
        y.dtype != torch.bool and y.shape == x.shape


def _find_scaler():
    """The process's one enabled GradScaler (among the objects the
    collector tracks), or None when there is none or more than one; the
    second value says which: "none" or "several"."""
    import gc
    kinds = tuple(k for k in (getattr(torch.cuda.amp, "GradScaler", None),
                              getattr(getattr(torch, "amp", None), "GradScaler", None))
                  if isinstance(k, type))
    # type(), not isinstance(): a proxy object (torch.distributed.reduce_op) warns
    # when its __class__ is read
    found = [o for o in gc.get_objects() if kinds and issubclass(type(o), kinds)]
    found = [o for o in found if getattr(o, "is_enabled", lambda: False)()]
    if len(found) == 1:
        return found[0], None
    return None, "several" if found else "none"


def _minmax(t):
    """(min, max) of t as 0-d tensors on its device; NaN when t holds one.
    amin and amax, two passes: in torch 1.13 on the CPU they take 10% less
    time than one aminmax. Older torch has no half kernels on the CPU:
    those go through float."""
    t = t.detach()
    if t.dtype in LOWP and t.device.type == "cpu":
        t = t.float()
    return t.amin(), t.amax()


def _watch_sum(t):
    """The cheapest reduction that is not finite when t holds an inf or a
    NaN: its sum (in float32 for fp16/bf16, whose range a sum would leave).
    A finite fp32 tensor whose sum passes 3.4e38 also trips it: values that
    large are a divergence in all but name."""
    t = t.detach()
    return t.sum(dtype=torch.float32) if t.dtype in LOWP else t.sum()


def _float_tensors(x):
    """The floating-point tensors of a forward's result (a tensor, or a
    tuple, list or dict of them, one level deep), in order."""
    if isinstance(x, torch.Tensor):
        return [x] if x.is_floating_point() else []
    vals = x.values() if isinstance(x, dict) else x if isinstance(x, (tuple, list)) else ()
    return [t for t in vals if isinstance(t, torch.Tensor) and t.is_floating_point()]


def _buffer_views(ps):
    """A float32 buffer the size of the tensors ps together, on the first
    one's device, and a view of it shaped as each."""
    buf = torch.empty(sum(p.numel() for p in ps), dtype=torch.float32, device=ps[0].device)
    views, at = [], 0
    for p in ps:
        views.append(buf[at:at + p.numel()].view(p.shape))
        at += p.numel()
    return buf, views


def _norms(ts, dev, dtype=torch.float32):
    """The L2 norm of each tensor (a sparse one's stored values), computed
    in dtype, as one tensor on dev: one foreach call where the tensors
    allow it (dense float32 on dev, norms in float32), as per-tensor
    calls are most of the cost of small ones."""
    if dtype == torch.float32 and hasattr(torch, "_foreach_norm") and all(
            t.dtype == torch.float32 and not t.is_sparse and t.device == dev for t in ts):
        return torch.stack(torch._foreach_norm(ts))
    return torch.stack([torch.linalg.vector_norm(_dense(t), 2, dtype=dtype).to(dev) for t in ts])


def _flatten(ts):
    """The tensors' values in one new 1-D buffer, in order (torch's own
    flattening returns a lone tensor as a view of itself: copied here)."""
    flat = getattr(torch._utils, "_flatten_dense_tensors", None)
    if len(ts) == 1 or flat is None:
        return torch.cat([t.reshape(-1) for t in ts])
    return flat(ts)


def _first_value(loss):
    """A tensor loss's first value, detached (0-d)."""
    return loss.detach() if loss.dim() == 0 else loss.detach().reshape(-1)[0]


def _read_sum(loss, t):
    """One host read: the loss plus the 0-d tensor t, not finite when
    either is (or when their sum passes t's range)."""
    if isinstance(loss, torch.Tensor):
        return float(torch.add(t, _first_value(loss)))
    return float(t) + float(loss)


def _loss_value(loss):
    """The loss as a Python float (a tensor's first value)."""
    return float(_first_value(loss) if isinstance(loss, torch.Tensor) else loss)


def _mha_scores(mha, q, k):
    """(batch, heads, target, source) scores q.k / sqrt(d_head) of an
    nn.MultiheadAttention for inputs q, k (batch first or not, as the
    module says), without gradients."""
    e, h = mha.embed_dim, mha.num_heads
    with torch.no_grad():
        if mha._qkv_same_embed_dim:
            wq, wk = mha.in_proj_weight[:e], mha.in_proj_weight[e:2 * e]
        else:
            wq, wk = mha.q_proj_weight, mha.k_proj_weight
        b = mha.in_proj_bias
        bq, bk = (b[:e], b[e:2 * e]) if b is not None else (None, None)
        if not getattr(mha, "batch_first", False):
            q, k = q.transpose(0, 1), k.transpose(0, 1)
        qp = torch.nn.functional.linear(q, wq, bq)
        kp = torch.nn.functional.linear(k, wk, bk)
        n, t, s = qp.shape[0], qp.shape[1], kp.shape[1]
        qp = qp.reshape(n, t, h, e // h).transpose(1, 2)
        kp = kp.reshape(n, s, h, e // h).transpose(1, 2)
        return (qp @ kp.transpose(-2, -1)) / math.sqrt(e // h)


def _same_value(a, b):
    """A replayed one-value output against the step's: equal to a part in
    1e5, or both not finite."""
    x, y = float(a.detach().reshape(-1)[0]), float(b.detach().reshape(-1)[0])
    if not (math.isfinite(x) and math.isfinite(y)):
        return not math.isfinite(x) and not math.isfinite(y)
    return abs(x - y) <= 1e-5 * max(abs(x), abs(y), 1e-30)


def _dense(g):
    """A gradient's values as a dense tensor (a sparse one's stored values)."""
    return g.coalesce().values() if g.is_sparse else g


def _random_states():
    """torch's CPU generator, Python's random and numpy's global one (when
    numpy is loaded): what a forward may draw from."""
    np = sys.modules.get("numpy")
    return (torch.get_rng_state(), random.getstate(),
            np.random.get_state() if np is not None else None)


def _set_random_states(st):
    torch.set_rng_state(st[0])
    random.setstate(st[1])
    np = sys.modules.get("numpy")
    if st[2] is not None and np is not None:
        np.random.set_state(st[2])





# where step() is called, said once each in the stream (and the follow view)
_LATE_STEP = ("step() is called after optimizer.step() (a callback after the update?): the "
              "gradients it reads are the ones the update already used, after any clipping, "
              "and each update ratio is the step before's; call it after loss.backward(), "
              "before clipping and optimizer.step()")
_CLIPPED = ("the gradient norm is %.4g on 8 steps in a row: step() reads the gradients after "
            "they were clipped (clip_grad_norm_), so grad_norm and the layers' norms are the "
            "clipped ones; call it before clipping to see what the model made")
_LATE_ATTACH = ("attached after training began (the optimizer holds state for %d parameters): "
                "steps count from here, and the start of the run is not in the stream")

def _model_part(hook):
    """Is a module hook part of the model's computation rather than an
    observer: torch's weight_norm and spectral_norm pre-hooks, which
    compute the weight the forward uses from its parameters?"""
    kinds = []
    for mod, name in (("torch.nn.utils.weight_norm", "WeightNorm"),
                      ("torch.nn.utils.spectral_norm", "SpectralNorm")):
        k = getattr(sys.modules.get(mod), name, None)
        if isinstance(k, type):
            kinds.append(k)
    return any(isinstance(hook, k) for k in kinds)


def _save_private(state, path):
    """torch.save state to path through a temp file of a random name beside
    it, created 0600 with O_EXCL (never through a planted file or link),
    renamed over path; None, or the OSError's words (a training run is not
    stopped by a checkpoint it could not write)."""
    d, base = os.path.split(os.path.abspath(path))
    fd, tmp = None, None
    try:
        fd, tmp = tempfile.mkstemp(prefix=".%s." % base, suffix=".tmp", dir=d)
        with os.fdopen(fd, "wb") as f:
            fd = None
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        return None
    except OSError as e:
        if fd is not None:
            os.close(fd)
        if tmp is not None and os.path.lexists(tmp):
            try:
                os.unlink(tmp)
            except OSError:
                pass
        return e.strerror or str(e)

class _Hook:
    """A module hook that calls the probe. A copy of the model
    (copy.deepcopy: an EMA model, averaged weights) gets a hook that does
    nothing: the copy is not the run the probe follows, and the probe (its
    stream file) is not copied."""
    __slots__ = ("fn",)

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, *args):
        return self.fn(*args) if self.fn is not None else None

    def __deepcopy__(self, memo):
        return _Hook(None)


class _Forward:
    """The model's forward wrapped on the instance (the CPU watch keeps
    each call). A copy of the model gets its own forward, unwrapped: the
    original's bound method copied with the module it is bound to."""

    def __init__(self, probe, orig):
        self.probe, self.orig = probe, orig

    def __call__(self, *args, **kwargs):
        call = self.probe._call_begin(args, kwargs)
        out = self.orig(*args, **kwargs)
        if call is not None:
            self.probe._call_end(call, out)
        return out

    def __deepcopy__(self, memo):
        return copy.deepcopy(self.orig, memo)


class _Call:
    """One forward of the model with gradients on, as the CPU watch needs
    it to run it again: its arguments, random states and autocast, and
    its one-value outputs (a loss), whose .grad keeps the gradient the
    backward gave them (Probe._call_end). Nothing the size of an output
    is kept: the backward is replayed from the loss."""

    def __init__(self, args, kwargs):
        self.args, self.kwargs = args, kwargs
        self.rng = _random_states()
        self.autocast = (torch.is_autocast_cpu_enabled(), torch.get_autocast_cpu_dtype())
        self.kept = []  # per floating output: itself if it is a one-value one, else None

    def out_grads(self):
        return [None if t is None else t.grad for t in self.kept]


def _lowp_counts(t):
    """(overflow, underflow) counts of a fp16/bf16 tensor: infinities, and
    nonzero values below the smallest normal number (subnormals)."""
    t = t.detach()
    tiny = torch.finfo(t.dtype).tiny
    a = t.abs()
    return torch.isinf(a).sum(), ((a < tiny) & (a != 0)).sum()


class _Records:
    """What the hooks saw during one step, all on the device. Measured
    steps keep (min, max) per record; the others one watch sum."""

    def __init__(self, measuring, watching=False):
        self.measuring = measuring
        self.watching = watching  # the CPU watch's replay: a sum on everything
        self.calls = []  # the step's forward calls (the CPU watch)
        self.fwd_lo, self.fwd_hi, self.fwd_val, self.fwd_code, self.fwd_block = [], [], [], [], []
        self.bwd_lo, self.bwd_hi, self.bwd_val, self.bwd_code, self.bwd_block = [], [], [], [], []
        # the same lists by side, for _record (a hook's path: one lookup)
        self.sides = {"fwd": (self.fwd_lo, self.fwd_hi, self.fwd_val, self.fwd_code, self.fwd_block),
                      "bwd": (self.bwd_lo, self.bwd_hi, self.bwd_val, self.bwd_code, self.bwd_block)}
        self.lohi = {}  # side -> its minima then maxima, one tensor (_stack_lohi)
        self.resid = []  # [(block, record index, L2 norm, numel)]
        self.lowp_cnt, self.lowp_block = [], []
        self.lowp = None  # the lowest-precision dtype seen inside a block
        self.hooked = {}
        self.last_out, self.last_rec, self.last_block = None, -1, -1
        self.order = []  # block 0's modules, in the order their calls ended (first step)
        self.tokens = None
        self.targets = None  # the batch's targets, seen in the model's call (data_entropy)
        # the first step, for vocab: (Linear outside the blocks, a weak reference
        # to its output: kept alive here, logits would raise the peak memory),
        # the one whose output the model returned, and that output's last size
        self.heads, self.out_head, self.out_width = [], None, None
        # block -> the most calls in one forward of the model with gradients on,
        # in the first step (a shared block: several; an evaluation under
        # no_grad, accumulation's micro-batches or a checkpointed block's
        # recomputation in the backward are not sharing)
        self.block_calls = {}
        self.fwd_block_calls = {}  # the same, in the model's forward running now
        # the mechanisms (mechanism.py) of a measured step: (block, key, 0-d
        # tensor), block -1 for the output's; the counts their means divide by
        self.mech, self.mech_n = [], {}

    def add(self, block, key, t, n=0):
        """One mechanism value of block (a 0-d tensor: maxima are taken,
        the rest summed) and the count its mean divides by."""
        self.mech.append((block, key, t))
        if n:
            self.mech_n[(block, key)] = self.mech_n.get((block, key), 0) + n

    def release(self):
        """Drop the step's tensors. Each tensor in hooked carries a backward
        hook whose closure holds this record, a cycle through autograd
        that Python's collector does not see: without this every step's
        activations stay alive (tens of MB a step on a small GPT)."""
        self.hooked.clear()
        self.last_out = None
        self.mech, self.mech_n = [], {}
        self.calls = []
        self.targets, self.heads, self.out_head, self.out_width = None, [], None, None


class Probe:
    """Made by normscope_probe.attach(), whose docstring says the arguments."""

    def __init__(self, model, optimizer=None, path="run.nsj", every=1, blocks=None, *,
                 mapping=None, overwrite=False, update_every=10, scaler=None, scheduler=None,
                 on_checkpoint=None, sharded=None, norm=None, vocab=None, on_nonfinite=None):
        if not isinstance(model, torch.nn.Module):
            raise TypeError("normscope_probe: model must be a torch.nn.Module")
        if int(every) < 1 or int(update_every) < 1:
            raise ValueError("normscope_probe: every and update_every must be >= 1")
        if norm not in (None, "pre", "post", "sandwich", "deepnorm", "rezero", "none"):
            raise ValueError("normscope_probe: norm=%r: allowed pre, post, sandwich, deepnorm, "
                             "rezero, none" % (norm,))
        if vocab is not None and (isinstance(vocab, bool) or not isinstance(vocab, int) or
                                  vocab < 1):
            raise ValueError("normscope_probe: vocab=%r: a whole number >= 1" % (vocab,))
        if on_nonfinite not in (None, "warn", "pause", "raise"):
            raise ValueError("normscope_probe: on_nonfinite=%r: allowed None, 'warn', 'pause', "
                             "'raise'" % (on_nonfinite,))
        self.model = layout.unwrap(model)
        self.vocab_arg, self.on_nonfinite, self.acted = vocab, on_nonfinite, False
        self.optimizer, self.scaler, self.scheduler = optimizer, scaler, scheduler
        self.path, self.every, self.update_every = path, int(every), int(update_every)
        self.on_checkpoint, self.norm_arg, self.overwrite = on_checkpoint, norm, overwrite
        self.sharded = (type(model).__name__ == "FullyShardedDataParallel") if sharded is None \
            else bool(sharded)
        self.blocks = layout.find_blocks(self.model, blocks)
        self.groups, self.unclassified = layout.classify(self.blocks, mapping)
        self.shared = self._shared_modules()
        self._index_params()
        self.writer, self.ctl, self.dist, self.rank, self.world = None, None, False, 0, 1
        self.peers = []
        self.deferred = self._torchrun_waiting()
        if not self.deferred:
            self._init_dist()
            self._open(overwrite)
        self.n = 0
        self.paused = False
        self.pending = None
        self.before = None  # the update ratio's buffers (_keep_before)
        self.reported_nonfinite = False
        self.header_written = False
        self.stack = []  # the blocks running now, innermost last
        self.bctx = []  # per running block: its call's branch context (_block_enter), or None
        self.side = False  # the probe's own forward on the fixed batch runs (out_change)
        self.in_mha = 0  # an nn.MultiheadAttention runs (its SDPA call is not counted again)
        # out_change: the fixed batch's positional arguments, the logits on
        # it after the last update with that update's count, the updates done
        self.fixed, self.out_prev, self.updates = None, None, 0
        self.out_failed = None  # why the fixed batch's forward failed, once
        # per block: how its output is made of its branches ('pre': x + sum F,
        # 'post': the first norm's input is x + F), False when neither, None
        # before the first measured step decides
        self.branch_form = [None] * len(self.blocks)
        self.unknown = []  # the columns the header says are never measured
        self.in_model = 0  # the model's forward is running (block calls count inside it)
        self.rec = _Records(True)
        # the watch: [step, code, order] of the first non-finite, on the device
        # (order: where in the step, _order; ranks compare it)
        self.first = None
        self.code_cache = {}
        self.lr_check = None  # LR commands watched for a scheduler undoing them (_lr_undone)
        # LR commands a script's own schedule undid, applied again at every step
        # on top of what it sets (_lr_keep): their factor, and the LRs last set
        self.lr_keep = None
        self.val_next = None  # a validation loss for the next step line (validation())
        # steps whose loss or gradients held an inf or a NaN, every step counted
        # (written or not): an int, or under the accelerator's watch a device count
        self.nonfinite_steps = 0
        self.found_scaler, self.scaler_found = None, None  # _scale's search, once
        self.vocab = None  # the output vocabulary's size, once the first forward shows it
        self.tcounts = None  # the written steps' target counts, by token (data_entropy)
        self.t_prev = None
        self.closed = False
        self.end_reason = None
        self.replay = self._replay_watch()
        self.replaying = False
        self.hooks_twice_said = False  # the note that a replay ran the user's hooks
        self.first_param = None  # a parameter already non-finite at the first fault (_bad_param)
        # where step() is called: notes to write with the next step, the
        # forwards since the last step(), wrong-order updates in a row, the
        # gradient norms of the last measured steps (_place_checks)
        self.place_notes, self.fwd_since_step, self.late_updates = [], 0, 0
        self.place_said, self.gnorms = set(), []
        if optimizer is not None and any(len(v) for v in optimizer.state.values()):
            self.place_notes.append(("late_attach", _LATE_ATTACH % sum(
                1 for v in optimizer.state.values() if len(v))))
        self._install_hooks()
        self._hook_optimizer()
        self._warn_scheduler()
        self._chain_exit()

    # -- setup ---------------------------------------------------------------
    @staticmethod
    def _torchrun_waiting():
        """torchrun started this process but the process group is not there
        yet: opening now would make every rank write the file as rank 0.
        The stream is opened at the first step, when the group exists."""
        d = torch.distributed
        try:
            world = int(os.environ.get("WORLD_SIZE", "1"))
        except ValueError:
            world = 1
        return world > 1 and not (d.is_available() and d.is_initialized())

    def _init_dist(self):
        d = torch.distributed
        self.dist = d.is_available() and d.is_initialized()
        self.rank = d.get_rank() if self.dist else 0
        self.world = d.get_world_size() if self.dist else 1
        self.cdev = torch.device("cpu")
        if self.dist and d.get_backend() == "nccl":
            self.cdev = torch.device("cuda", torch.cuda.current_device())
        # every rank's (host, pid): the end line names a peer that died first
        self.peers = [None] * self.world
        if self.dist:
            d.all_gather_object(self.peers, (socket.gethostname(), os.getpid()))

    def _undefer(self):
        if not self._torchrun_waiting():
            self.deferred = False
            self._init_dist()
            self._open(self.overwrite)
            return
        raise RuntimeError(
            "normscope_probe: torchrun started this process (WORLD_SIZE=%s, RANK=%s) but "
            "torch.distributed is not initialized at the first probe.step(): call "
            "torch.distributed.init_process_group() before training (attach() may come before "
            "it; the stream opens at the first step)"
            % (os.environ.get("WORLD_SIZE"), os.environ.get("RANK", "?")))

    def _shared_modules(self):
        """Modules reached from more than one block (one nn.Dropout used by
        all): their calls are booked to the block running at the time."""
        owner, shared = {}, []
        for b, (_, bm) in enumerate(self.blocks):
            for n, m in bm.named_modules():
                if m is bm:
                    continue
                if id(m) in owner and owner[id(m)] != b:
                    shared.append(m)
                owner.setdefault(id(m), b)
        return shared

    def _index_params(self):
        """Group id per parameter: 3 * block + (0 attn, 1 ffn, 2 ln), or -1;
        and which groups hold no parameter (not measured: null)."""
        self.params = list(self.model.parameters())  # shared ones once
        self.gid = {}
        self.gmats = {}  # _group_matrix's, by the gradients missing
        self.empty = []
        for b, groups in enumerate(self.groups):
            for g, name in enumerate(layout.GROUPS):
                for p in groups[name]:
                    self.gid[id(p)] = 3 * b + g
                self.empty.append(not groups[name])
        # the watch's gradient check copies the small ones into one buffer
        self.small_params = [p for p in self.params if p.numel() < FLAT_MAX]
        self.big_params = [p for p in self.params if p.numel() >= FLAT_MAX]
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

    def _replay_watch(self):
        """The CPU's watch (replay) when every parameter is on the CPU,
        the accelerator's (device) otherwise; NORMSCOPE_PROBE_WATCH names
        one."""
        want = os.environ.get(WATCH_ENV, "")
        if want in ("device", "replay"):
            return want == "replay"
        return all(p.device.type == "cpu" for p in self.params)

    def _install_hooks(self):
        """A forward hook on every module (a module reached under two names
        once), knowing its index and whether it is a block, and a pre-hook
        on each block, so calls are booked to the block that runs them:
        made once, registered while they are needed (_sync_hooks), with
        the model's own pre-hook. Under the CPU watch the model's forward
        is wrapped to keep each call (_Call)."""
        names = dict((m, n) for n, m in self.model.named_modules())
        self.block_ids = {id(bm): b for b, (_, bm) in enumerate(self.blocks)}
        self.block0_mods = {id(m) for m in self.blocks[0][1].modules()
                            if m is not self.blocks[0][1]} if self.blocks else set()
        self.mod_names, self.mod_hooks, self.mod_handles, self.mod_list = [], [], None, []
        for m, n in names.items():
            idx = len(self.mod_names)
            self.mod_names.append(n or type(self.model).__name__)
            self.mod_list.append(m)
            fn = self._forward_hook(idx, self.block_ids.get(id(m), -1), m)
            self.mod_hooks.append((m.register_forward_hook, fn))
        self._branch_modules()
        self.mha_wrapped = []
        for idx, m in enumerate(self.mod_list):
            if isinstance(m, torch.nn.MultiheadAttention) and self._layer_of(idx) is not None:
                self._wrap_mha(idx, m)
        self._wrap_sdpa()
        for b, (_, bm) in enumerate(self.blocks):
            self.mod_hooks.append((bm.register_forward_pre_hook, self._block_enter(b)))
        self.mod_hooks.append((self.model.register_forward_pre_hook, self._model_enter))
        self.mod_hooks.append((self.model.register_forward_hook, self._model_exit))
        self.fwd_fn = None
        if self.replay:
            self._wrap_forward()
        self._sync_hooks()

    def _hooks_on(self, on):
        if on and self.mod_handles is None:
            self.mod_handles = [reg(_Hook(fn)) for reg, fn in self.mod_hooks]
        elif not on and self.mod_handles is not None:
            for h in self.mod_handles:
                h.remove()
            self.mod_handles = None

    def _sync_hooks(self):
        """The module hooks are on for a measured step, and always under the
        accelerator's watch; off between measured steps under the CPU's."""
        self._hooks_on(self.rec.measuring or not self.replay)

    def _wrap_forward(self):
        """The model's forward, wrapped on the instance (hooks of this torch
        may not see keyword arguments): each call with gradients on is kept
        for the watch to run again."""
        m = self.model
        self.had_forward_attr = "forward" in m.__dict__
        self.orig_forward = m.forward
        self.fwd_fn = m.forward = _Forward(self, self.orig_forward)

    def _call_begin(self, args, kwargs):
        if not torch.is_grad_enabled() or self.replaying or self.closed:
            return None
        self.fwd_since_step += 1
        call = _Call(args, kwargs)
        self.rec.calls.append(call)
        return call

    def _call_end(self, call, out):
        """Keep the gradient a one-value output (a loss) gets in the
        backward, in its .grad (retain_grad, a hook torch runs without
        Python). A larger output (logits) keeps nothing: its gradient is
        the size of the output, and a model that returns (logits, loss)
        is replayed from the loss. A model whose loss is computed outside
        it gets its forward replayed, not its backward (_replay)."""
        for t in _float_tensors(out):
            keep = t.requires_grad and t.numel() == 1 and t.grad_fn is not None
            if keep:
                t.retain_grad()
            call.kept.append(t if keep else None)

    def _unwrap_forward(self):
        m = self.model
        if self.fwd_fn is None or m.__dict__.get("forward") is not self.fwd_fn:
            return  # not wrapped, or wrapped again since: left as it is
        if self.had_forward_attr:
            m.forward = self.orig_forward
        else:
            del m.__dict__["forward"]

    def _hook_optimizer(self):
        """After optimizer.step: register_step_post_hook where torch has it
        (2.0 on), else a wrapper that keeps the LR scheduler's step counter
        attribute, so schedulers made earlier do not warn."""
        self.orig_step, self.post_handle = None, None
        if self.optimizer is None:
            return
        if hasattr(self.optimizer, "register_step_post_hook"):
            self.post_handle = self.optimizer.register_step_post_hook(
                lambda opt, args, kwargs: self._after_optimizer_step())
            return
        self.had_step_attr = "step" in self.optimizer.__dict__
        self.orig_step = self.optimizer.step
        orig, probe = self.orig_step, self

        def stepped(opt, *a, **kw):
            out = orig(*a, **kw)
            probe._after_optimizer_step()
            return out
        for attr in ("_with_counter", "_wrapped_by_lr_sched"):
            if getattr(orig, attr, False):
                setattr(stepped, attr, True)
        self.step_fn = stepped
        self.optimizer.step = types.MethodType(stepped, self.optimizer)

    def _warn_scheduler(self):
        """An LR scheduler sets the LR at every step from its own base: an
        lr x2 it does not know about is undone at its next step."""
        opt = self.optimizer
        if opt is None or self.scheduler is not None:
            return
        has = hasattr(opt, "_step_count") or getattr(opt.step, "_with_counter", False) or \
            getattr(opt.step, "_wrapped_by_lr_sched", False)
        if has:
            warnings.warn("normscope_probe: the optimizer has an LR scheduler that was not passed "
                          "to attach(scheduler=...): an lr x2 / x0.5 from the follow view is "
                          "undone by its next step, then applied again (the stream will say so)",
                          stacklevel=4)

    def _chain_exit(self):
        """The end line at normal exit, on an uncaught exception and on
        SIGTERM/SIGHUP: atexit and sys.excepthook are chained, and a signal
        handler is installed only where the default one was (the user's
        own handlers are left alone)."""
        atexit.register(self._atexit)
        self.prev_excepthook = sys.excepthook
        probe = self

        def excepthook(tp, value, tb):
            if not probe.closed:
                probe._end("exception", "%s: %s" % (tp.__name__, str(value)[:200]))
            probe.prev_excepthook(tp, value, tb)
        self.excepthook = excepthook
        sys.excepthook = excepthook
        self.sig_handlers = {}
        if threading.current_thread() is not threading.main_thread():
            return
        for name in END_SIGNALS:
            sig = getattr(signal, name, None)
            if sig is not None and signal.getsignal(sig) == signal.SIG_DFL:
                signal.signal(sig, self._on_signal)
                self.sig_handlers[sig] = self._on_signal

    def _on_signal(self, signum, frame):
        self._end("signal", signal.Signals(signum).name)
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    def _atexit(self):
        if not self.closed:
            self._end("exit", "")

    def _unchain_exit(self):
        atexit.unregister(self._atexit)
        if sys.excepthook is self.excepthook:
            sys.excepthook = self.prev_excepthook
        if threading.current_thread() is threading.main_thread():
            for sig, h in self.sig_handlers.items():
                if signal.getsignal(sig) == h:
                    signal.signal(sig, signal.SIG_DFL)

    # -- hooks -----------------------------------------------------------------
    def _block_enter(self, b):
        def pre(mod, inp):
            self.stack.append(b)
            x = _first_tensor(inp)
            ctx = None
            if self._measuring_now() and x is not None and x.is_floating_point():
                ctx = {"x": x, "F": [], "nin": None}
            self.bctx.append(ctx)
            rec = self.rec
            if self.n == 0 and self.in_model and torch.is_grad_enabled() and not self.replaying:
                # the first step: how often each block runs in one forward
                n = rec.fwd_block_calls[b] = rec.fwd_block_calls.get(b, 0) + 1
                rec.block_calls[b] = max(rec.block_calls.get(b, 0), n)
        return pre

    def _measuring_now(self):
        """A measured step's training forward runs (not a replay, not the
        probe's own forward, the hooks on)."""
        rec = self.rec
        return rec.measuring and not rec.watching and not self.side and \
            self.mod_handles is not None and torch.is_grad_enabled()

    def _wrap_mha(self, idx, mha):
        """An nn.MultiheadAttention's forward, wrapped on the instance (a
        pre-hook of torch 1.13 does not see keyword arguments, where its
        masks come): on a measured step, its scores q.k / sqrt(d_head) for
        every head and pair of positions before masking and softmax,
        computed again from its query and key inputs and its projections,
        as a record of the module (so act_max covers them: they have no
        module of their own whose output a hook could read), and the
        attention's logit maximum and entropy over the pairs its masks
        let take part (mechanism.mha_stats)."""
        if "forward" in mha.__dict__:  # replaced by the user already: left alone, unknown
            return
        _MHA_PROBES[mha] = (self, idx)
        fn = types.MethodType(_mha_forward, mha)
        mha.forward = fn
        self.mha_wrapped.append((mha, fn))

    def _mha_call(self, idx, mha, args, kwargs):
        q, k = args[0], args[1]
        if not isinstance(q, torch.Tensor) or not isinstance(k, torch.Tensor) or \
                q.dim() != 3 or k.dim() != 3:
            return
        rec, block = self.rec, self.stack[-1] if self.stack else -1
        scores = _mha_scores(mha, q, k)
        self._record(rec, "fwd", 4 * idx + PASS_FORWARD, block, scores)
        if block >= 0:
            self._attn_add(block, mechanism.mha_stats(mha, scores, args, kwargs))

    def _attn_add(self, block, got):
        amax, ent, rows = got
        self.rec.add(block, "amax", amax)
        self.rec.add(block, "ent", ent)
        self.rec.add(block, "rows", rows)

    def _wrap_sdpa(self):
        """torch.nn.functional.scaled_dot_product_attention (torch 2 on),
        wrapped while the probe is attached: on a measured step, a call
        from inside a block (not from an nn.MultiheadAttention, counted
        already) adds its logit maximum and entropy to the block's
        (mechanism.sdpa_stats). A script that imported the function by
        name before attach() keeps the unwrapped one: not seen."""
        F = torch.nn.functional
        self.sdpa_orig = getattr(F, "scaled_dot_product_attention", None)
        if self.sdpa_orig is None:
            self.sdpa_fn = None
            return
        orig, probe = self.sdpa_orig, self

        def sdpa(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, *args,
                 **kwargs):
            if probe.in_mha == 0 and probe.stack and probe._measuring_now():
                got = mechanism.sdpa_stats(query, key, attn_mask, is_causal,
                                           kwargs.get("scale"))
                if got is not None:
                    probe._attn_add(probe.stack[-1], got)
            return orig(query, key, value, attn_mask, dropout_p, is_causal, *args, **kwargs)
        self.sdpa_fn = sdpa
        F.scaled_dot_product_attention = sdpa

    def _unwrap_mechanisms(self):
        """Put back what _wrap_mha and _wrap_sdpa replaced, unless
        something replaced it again since (then it stays and passes
        through)."""
        for mha, fn in self.mha_wrapped:
            _MHA_PROBES.pop(mha, None)
            if mha.__dict__.get("forward") is fn:
                del mha.__dict__["forward"]
        F = torch.nn.functional
        if self.sdpa_fn is not None and getattr(F, "scaled_dot_product_attention", None) \
                is self.sdpa_fn:
            F.scaled_dot_product_attention = self.sdpa_orig

    def _branch_modules(self):
        """Per block, the ids of its branches' modules (its children that
        hold attention or MLP parameters, norms not) and of its norms: what
        the branch ratio and the norm's input are read from."""
        self.branch_ids, self.norm_ids = [], []
        for b, (_, bm) in enumerate(self.blocks):
            grouped = {id(p) for g in ("attn", "ffn") for p in self.groups[b][g]}
            self.branch_ids.append({id(c) for c in bm.children() if not layout._norm_module(c)
                                    and any(id(p) in grouped for p in c.parameters())})
            self.norm_ids.append({id(m) for m in layout.norm_modules(bm)})

    def _model_exit(self, mod, inp, out):
        self.in_model = 0
        if self._measuring_now():
            t = self._logits_of(out)
            if t is not None:
                lse, n, lmax = mechanism.logits_stats(t)
                self.rec.add(-1, "lse", lse, n)
                self.rec.add(-1, "lmax", lmax)

    def _logits_of(self, out):
        """The logits among a forward's outputs: the first floating tensor
        of 2 or more dimensions whose last size is the vocabulary's (the
        header's, else the head Linear's whose output the first forward
        returned), or None."""
        rec = self.rec
        width = self.vocab or self.vocab_arg or \
            (rec.out_head.out_features if rec.out_head is not None else None)
        if width is None:
            return None
        return next((t for t in _float_tensors(out) if t.dim() >= 2 and t.shape[-1] == width),
                    None)

    def _keep_fixed(self, inp):
        """out_change's fixed batch: the first training forward's
        positional tensors, the first OUT_ROWS sequences of each that has
        the batch's first size, copied."""
        x = _first_tensor(inp)
        if x is None or x.dim() < 1 or not isinstance(inp, tuple):
            self.fixed = ()
            return
        n = x.shape[0]
        self.fixed = tuple(a.detach()[:OUT_ROWS].clone() if isinstance(a, torch.Tensor) and
                           a.dim() >= 1 and a.shape[0] == n else a for a in inp)

    def _model_enter(self, mod, inp):
        """A new forward: no block runs yet (an exception may have left one
        on the stack); the batch's token count, from its shape."""
        if self.side:
            return
        if self.fixed is None and torch.is_grad_enabled() and not self.replaying:
            self._keep_fixed(inp)
        self.stack, self.bctx = [], []
        self.in_model = 1  # an exception may have skipped the last exit
        self.rec.fwd_block_calls = {}
        x = _first_tensor(inp)
        if x is not None and x.dim() >= 1:
            n = x.numel() if not x.is_floating_point() else x.numel() // max(1, x.shape[-1])
            self.rec.tokens = n
        y = inp[1] if isinstance(inp, tuple) and len(inp) > 1 else None
        if _targets_like(x, y):
            self.rec.targets = y

    def _forward_hook(self, idx, is_block, mod):
        in0 = id(mod) in self.block0_mods
        passive = isinstance(mod, PASSIVE)
        contracting = _contracting(mod)
        dropout = type(mod) is torch.nn.Dropout  # contracting while not training

        def hook(m, inp, out):
            ctx = None
            if is_block >= 0 and self.stack and self.stack[-1] == is_block:
                self.stack.pop()
                ctx = self.bctx.pop() if self.bctx else None
            if not torch.is_grad_enabled():
                return
            t = _first_tensor(out)
            if t is None or not t.is_floating_point():
                return
            rec = self.rec
            block = is_block if is_block >= 0 else (self.stack[-1] if self.stack else -1)
            if ctx is not None:
                self._branch_end(is_block, ctx, t)
            elif block >= 0 and self.bctx and self.bctx[-1] is not None:
                self._branch_part(block, self.bctx[-1], m, inp, t)
            if self.n == 0:
                self._first_forward(rec, m, block, in0, t, out)
            if block < 0 and self.replay and not rec.watching:
                # outside the blocks a written step's numbers take nothing
                # (the device's watch did; the CPU's replays the step)
                rec.last_out = None
                return
            if t is rec.last_out and rec.last_rec >= 0:  # a container hands on its child's
                k = rec.last_rec
            elif (passive and not rec.measuring or
                  (not m.training if dropout else contracting) and rec.measuring and
                  t.dtype not in LOWP and
                  block == rec.last_block) and \
                    _first_tensor(inp) is rec.last_out and rec.last_out is not None:
                # its input was the record just made: the watch learns
                # nothing new (it cannot make a non-finite value from finite
                # ones), nor, when it contracts, the block's largest |x|
                rec.last_out, rec.last_rec = t, -1
                return
            else:
                k = self._record(rec, "fwd", 4 * idx + PASS_FORWARD, block, t)
                rec.last_out, rec.last_rec, rec.last_block = t, k, block
            if is_block >= 0 and rec.measuring:  # squared in float64 (_collect)
                norm = torch.linalg.vector_norm(t.detach(), 2, dtype=torch.float32)
                rec.resid.append((is_block, k, norm, t.numel()))
            x = _first_tensor(inp)
            # the backward's records: the watch's (the device's, or the CPU's
            # replay), and a measured step's low-precision counts
            want = not self.replay or rec.watching or t.dtype in LOWP
            if want and x is not None and x.requires_grad and id(x) not in rec.hooked:
                rec.hooked[id(x)] = x  # kept, so its id is not reused this step
                x.register_hook(self._backward_hook(idx, block, rec))
        return hook

    def _first_forward(self, rec, m, block, in0, t, out):
        """What the first forward shows of the model: block 0's modules in
        the order their calls ended (the placement), and the Linears outside the
        blocks with their outputs and the model's output (the vocabulary)."""
        if in0 and block == 0:
            rec.order.append(m)
        if block < 0 and isinstance(m, torch.nn.Linear) and not rec.watching:
            rec.heads.append((m, weakref.ref(t)))
        if m is self.model and not rec.watching:
            outs = [x for x in _float_tensors(out) if x.dim() >= 2]
            rec.out_width = int(outs[0].shape[-1]) if outs else None
            rec.out_head = next((h for h, ref in rec.heads
                                 if any(ref() is x for x in outs)), None)

    def _branch_part(self, block, ctx, m, inp, t):
        """In a measured call of block: a branch's output (its modules'
        outputs of the stream's shape), the first norm's input."""
        if id(m) in self.branch_ids[block] and t.shape == ctx["x"].shape:
            ctx["F"].append(t)
        elif ctx["nin"] is None and id(m) in self.norm_ids[block]:
            x = _first_tensor(inp)
            if x is not None and x.is_floating_point():
                ctx["nin"] = x

    def _branch_end(self, b, ctx, y):
        """The end of a measured call of block b (input x, output y): the
        branch ratio's sums, RMS of what the branches add over RMS of x, as
        the lab's (the branches' outputs together), when the first such
        call showed the block made of them (_branch_form); and the first
        norm's input's sum of squares."""
        x, fs, nin, rec = ctx["x"], ctx["F"], ctx["nin"], self.rec
        if self.branch_form[b] is None and y.shape == x.shape:
            self.branch_form[b] = _branch_form(x, fs, nin, y)
        ts = [x] + (fs if self.branch_form[b] else []) + \
            ([nin] if nin is not None and nin is not x else [])
        sq = _norms([t.detach() for t in ts], x.device).double() ** 2  # one call a block
        if self.branch_form[b] and fs:
            rec.add(b, "xsq", sq[0], x.numel())
            rec.add(b, "fsq", sq[1:1 + len(fs)].sum(), sum(f.numel() for f in fs))
        if nin is not None:
            rec.add(b, "nsq", sq[0] if nin is x else sq[-1], nin.numel())

    def _backward_hook(self, idx, block, rec):
        def hook(g):
            if g is not None and rec is self.rec:
                self._record(rec, "bwd", 4 * idx + PASS_BACKWARD, block, g)
            return None
        return hook

    @staticmethod
    def _record(rec, side, code, block, t):
        """One record: its code and block, (min, max) when measuring, else
        the watch's sum. Returns its index."""
        los, his, vals, codes, blocks = rec.sides[side]
        if rec.measuring:
            lo, hi = _minmax(t)
            los.append(lo)
            his.append(hi)
            if t.dtype in LOWP and block >= 0:
                if rec.lowp is None or t.dtype == torch.float16:
                    rec.lowp = t.dtype
                rec.lowp_cnt.extend(_lowp_counts(t))
                rec.lowp_block.append(block)
        else:
            vals.append(_watch_sum(t))
        codes.append(code)
        blocks.append(block)
        return len(codes) - 1

    # -- the step ----------------------------------------------------------------
    def step(self, loss, val_loss=None, targets=None):
        """Call after loss.backward() (and scaler.unscale_(optimizer)) and
        before optimizer.step(). Applies the control file's commands, and
        on measured steps records the step's numbers.

        val_loss: as validation(val_loss), for this step's line.
        targets: the batch's target token ids (integers; negative ones,
        an ignore_index, are left out), for data_entropy; without them the
        model's call is looked at (a second positional argument of the
        inputs' shape, as nanoGPT's forward(idx, targets))."""
        if self.closed:
            raise RuntimeError("normscope_probe: step() after close()")
        if self.deferred:
            self._undefer()
        if val_loss is not None:
            self.validation(val_loss)
        if targets is not None:
            if not isinstance(targets, torch.Tensor) or targets.is_floating_point():
                raise TypeError("normscope_probe: step(targets=...) takes an integer tensor of "
                                "token ids, not %s" % type(targets).__name__)
            self.rec.targets = targets
        self.n += 1
        self.fwd_since_step = 0
        # the clock is read for a measured step and the one before it (tokens/s)
        now = time.time() if self.rec.measuring or self._measured(self.n + 1) else None
        if self.pending is not None:  # optimizer.step was not called: skipped
            row, self.pending = self.pending, None
            self._write(row, skipped=1)
        if self.rank == 0 and not self.header_written:
            self._header()
        elif self.vocab is None and self.n == 1:  # as rank 0's header finds it: every
            self.vocab = self.vocab_arg or self._find_vocab()  # rank records the same logits
        # the CPU's watch reads an unmeasured step's loss as it is
        lossv = self._loss_tensor(loss) if self.rec.measuring or not self.replay else loss
        gsq = self._grad_sums() if self.rec.measuring else self._grad_check()
        if self.rec.measuring:
            self._stack_lohi(self.rec)
        if self.replay:
            self._watch_cpu(lossv, gsq)
        else:
            self._watch(lossv, gsq)
        first = self._nonfinite_now()
        if first is not None and self.on_nonfinite == "raise":
            self._raise_nonfinite(lossv, gsq, now, first)
        self._controls()  # before the line: an LR a command set is this step's
        self._place_notes()
        if self.rec.measuring:
            row = self._collect(lossv, gsq, now)
            if self.optimizer is not None:
                self.pending = row
            else:
                self._write(row, skipped=0)
        self.t_prev = now
        self.rec.release()
        self.rec = _Records(self._measured(self.n + 1))
        self._sync_hooks()

    def _clipped_check(self, g):
        """The same global gradient norm on 8 written steps in a row (within
        1e-5): the gradients were clipped before step() read them."""
        if not isinstance(g, float) or not math.isfinite(g) or g <= 0:
            self.gnorms = []
            return
        self.gnorms = (self.gnorms + [g])[-8:]
        if len(self.gnorms) == 8 and max(self.gnorms) - min(self.gnorms) <= 1e-5 * g and \
                "clipped" not in self.place_said:
            self.place_notes.append(("clipped", _CLIPPED % g))

    def _place_notes(self):
        """Say each finding about where step() is called, once."""
        for key, text in self.place_notes:
            if key not in self.place_said:
                self.place_said.add(key)
                self._event("note", text)
        self.place_notes = []

    def _nonfinite_now(self):
        """With on_nonfinite: at the first step the watch found non-finite,
        (step, code) of what it found, once; the warning or the pause
        happen here, the raise in _raise_nonfinite. The accelerator's
        watch keeps its flag on the device: on_nonfinite reads it every
        step (a wait for the device a step)."""
        if self.on_nonfinite is None or self.acted or self.first is None:
            return None
        step, code, _ = self.first.tolist()
        if step <= 0:
            return None
        self.acted = True
        where, _ = self._where(int(code))
        text = "first non-finite at step %d: %s" % (int(step), where)
        if self.on_nonfinite == "warn":
            warnings.warn("normscope_probe: " + text, RuntimeWarning, stacklevel=3)
            self._event("note", text)
        elif self.on_nonfinite == "pause":
            self.paused = True
            self._event("paused", "paused before the optimizer's step %d: %s (resume from the "
                        "follow view)" % (self.n, text), [("nonfinite", 1)])
        return int(step), int(code)

    def _raise_nonfinite(self, lossv, gsq, now, first):
        """on_nonfinite='raise': the step's line first (its optimizer step
        will not come: skipped), then FloatingPointError out of step()."""
        if self.rec.measuring:
            self._write(self._collect(lossv, gsq, now), skipped=1)
        self.t_prev = now
        self.rec.release()
        self.rec = _Records(self._measured(self.n + 1))
        self._sync_hooks()
        raise FloatingPointError("normscope_probe: first non-finite at step %d: %s"
                                 % (first[0], self._where(first[1])[0]))

    def validation(self, loss):
        """A validation loss (a number or a tensor's first value), written
        as val_loss on the next step line (with every > 1, the next one
        written); a later call before that line replaces it."""
        v = _loss_value(loss)
        self.val_next = v

    def _measured(self, step):
        return (step - 1) % self.every == 0

    def _loss_tensor(self, loss):
        dev = self._device()
        if isinstance(loss, torch.Tensor):
            if loss.dim() == 0 and loss.dtype == torch.float32 and loss.device == dev:
                return loss.detach()  # the usual case, in one call
            return loss.detach().float().reshape(-1)[0].to(dev)
        return torch.tensor(float(loss), device=dev)

    def _watch(self, lossv, gsq):
        """Fold this step's records into the device flag: the first record,
        in execution order (forward, the loss, backward, the parameters'
        gradients), that is not finite, if no earlier step had one."""
        rec, dev = self.rec, lossv.device
        vecs = []
        for side in ("fwd", "bwd"):
            vals = rec.sides[side][2]
            if side in rec.lohi:
                lo, hi = rec.lohi[side].chunk(2)
                vecs.append(torch.maximum(-lo, hi))
            elif vals:
                vecs.append(torch.stack(vals).float())
            if side == "fwd":
                nf_at = sum(len(v) for v in vecs)  # the loss's place
                vecs.append(lossv.reshape(1).float())
        vecs.append(gsq[-1:].float())
        codes = tuple(rec.fwd_code) + (PASS_LOSS,) + tuple(rec.bwd_code) + (PASS_GRADS,)
        ct = self.code_cache.get(codes)
        if ct is None:  # each record's code and order
            nf, nb = len(rec.fwd_code), len(rec.bwd_code)
            order = [_order(PASS_FORWARD, i) for i in range(nf)] + [_order(PASS_LOSS, 0)] + \
                [_order(PASS_BACKWARD, j) for j in range(nb)] + [_order(PASS_GRADS, 0)]
            ct = torch.tensor([codes, order], dtype=torch.float64, device=dev)
            if len(self.code_cache) < 64:
                self.code_cache[codes] = ct
        bad = ~torch.isfinite(torch.cat(vecs))
        # the step counts as non-finite by its loss and gradients, as the CPU's watch counts
        step_bad = (bad[nf_at] | bad[-1]).to(torch.float64)
        self.nonfinite_steps = step_bad if isinstance(self.nonfinite_steps, int) else \
            self.nonfinite_steps + step_bad
        at = torch.argmax(bad.to(torch.uint8))
        cand = torch.cat([torch.full((1,), float(self.n), dtype=torch.float64, device=dev),
                          ct[:, at]])
        if self.first is None:
            self.first = torch.zeros(3, dtype=torch.float64, device=dev)
        self.first = torch.where(bad.any() & (self.first[0] == 0), cand, self.first)

    @staticmethod
    def _stack_lohi(rec):
        """A measured step's (min, max) records, each side as one tensor:
        the minima, then the maxima."""
        for side in ("fwd", "bwd"):
            los, his = rec.sides[side][:2]
            if rec.measuring and los:
                rec.lohi[side] = torch.stack(los + his).float()

    def _watch_cpu(self, lossv, gsq):
        """The CPU's watch: the loss and the gradients' total read on the
        host; only when one is not finite, and an inf or a NaN is really
        there, is the step run again to find the first module (_replay).
        Finite gradients whose squares passed float32's range have their
        norms computed again in float64, when the step is written."""
        measuring = self.rec.measuring
        if math.isfinite(_read_sum(lossv, gsq[-1])):
            return
        lossf = _loss_value(lossv)
        if math.isfinite(lossf) and self._grads_finite():
            # no inf, no NaN: gradients whose sum or squares passed float32's range
            if measuring and not (self.dist and self.sharded):
                gsq.copy_(self._grad_sums(exact=True))
            return
        self.nonfinite_steps += 1
        if self.first is not None:
            return
        found, ran = self._replay(self.rec.calls, lossf) if self.rec.calls else (None, [])
        if found is None:
            code = PASS_LOSS if not math.isfinite(lossf) else 4 * self._bad_grad_module(ran) + \
                PASS_GRADS
            found = (code, _order(code % 4, 0))
        self.first = torch.tensor([float(self.n), float(found[0]), float(found[1])],
                                  dtype=torch.float64, device=self._device())
        self.first_param = self._bad_param(int(found[0]))

    def _bad_param(self, code):
        """The name of a parameter of the module a forward record names that
        held a non-finite value before the step's update (the fault was
        in the weights already, not made by the forward), or None."""
        mod, pass_ = divmod(code, 4)
        if pass_ != PASS_FORWARD or mod <= 0:
            return None
        with torch.no_grad():
            for name, p in self.mod_list[mod].named_parameters(recurse=False):
                if not bool(torch.isfinite(_dense(p.detach())).all()):
                    return name
        return None

    def _bad_grad_module(self, ran):
        """When the backward could not be replayed (a loss computed outside
        the model): of the modules whose own parameters got a non-finite
        gradient, the one that ran last in the forward (ran: module
        indices in the order the replay's forward ran them), as the
        backward makes it first; 0 (the model: not named) when none."""
        bad = set()
        with torch.no_grad():
            for idx, m in enumerate(self.mod_list):
                if any(p.grad is not None and not bool(torch.isfinite(_dense(p.grad)).all())
                       for p in m.parameters(recurse=False)):
                    bad.add(idx)
        return next((idx for idx in reversed(ran) if idx in bad), 0)

    def _grads_finite(self):
        """Every gradient holds only finite values (each checked alone)."""
        with torch.no_grad():
            return all(bool(torch.isfinite(_dense(p.grad)).all())
                       for p in self.params if p.grad is not None)

    def _replay(self, calls, lossf):
        """The step's first non-finite record, by replaying its forward
        calls (_replay_pass): first with the user's hooks muted but those
        that are part of the model (weight_norm's and spectral_norm's
        pre-hooks set the weight the forward uses), so a counter or a
        logger of the user's runs once a step; when that replay raises or
        does not compute what the step did (a hook that returns a new
        output, one of a kind the probe does not know), again with every
        hook, and a note says the user's hooks may have run twice.
        (code, order) or None, and the modules in the order they ran."""
        found, ran, ok = self._replay_pass(calls, lossf, mute=True)
        if ok:
            return found, ran
        again, ran2, ok2 = self._replay_pass(calls, lossf, mute=False)
        if not self.hooks_twice_said:
            self.hooks_twice_said = True
            self._event("note", "the step whose first non-finite is sought was replayed with "
                        "your hooks too (the replay without them %s): a hook of yours that "
                        "counts or logs its calls may have run twice in step %d"
                        % ("failed" if found is None else "computed something else", self.n))
        if ok2:
            return again, ran2
        return (found, ran) if found is not None else (again, ran2)

    def _replay_pass(self, calls, lossf, mute):
        """Run the step's forward calls again with a sum on every module's
        output, then their backward from the output gradients they got
        (into the parameters by torch.autograd.grad: their .grad is not
        touched), with a sum on every input gradient; the first record
        that is not finite, in the order of the step (forward, the loss,
        backward), as (code, order), or None; the modules in the order
        they ran; and whether the replay ran and computed what the step
        did. The random state, the model's buffers and the step's records
        are put back; a replay that fails says nothing."""
        rec = _Records(False, watching=True)
        step_rec, stack, hooks_were_on = self.rec, self.stack, self.mod_handles is not None
        rng = _random_states()
        bufs = [(b, b.detach().clone()) for b in self.model.buffers()]
        self.rec, self.replaying = rec, True
        hidden = None
        try:
            self._hooks_on(True)
            hidden = self._hide_user_hooks() if mute else None
            outs, grads = [], []
            with torch.enable_grad():
                for c in calls:
                    _set_random_states(c.rng)
                    with torch.autocast("cpu", enabled=c.autocast[0], dtype=c.autocast[1]):
                        out = self.model(*c.args, **c.kwargs)
                    faithful = True
                    for t, k, g in zip(_float_tensors(out), c.kept, c.out_grads()):
                        faithful = faithful and (k is None or _same_value(t, k))
                        if g is not None and t.requires_grad:
                            outs.append(t)
                            grads.append(g)
                    if not faithful:  # not the step's computation: nothing it says is named
                        return (PASS_LOSS + 4, _order(PASS_LOSS, 0)), [], False
                params = [p for p in self.params if p.requires_grad]
                if outs and params:
                    torch.autograd.grad(outs, params, grads, allow_unused=True)
            ran = [code // 4 for code in rec.fwd_code]
            return self._first_record(rec, lossf), ran, True
        except Exception:  # noqa: BLE001 - the step is not ours to break
            return None, [], False
        finally:
            if hidden is not None:
                self._show_user_hooks(hidden)
            self.rec, self.stack = step_rec, stack
            self.replaying = False
            self._hooks_on(hooks_were_on)
            _set_random_states(rng)
            with torch.no_grad():
                for b, v in bufs:
                    b.copy_(v)
            rec.release()

    _HOOK_DICTS = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks",
                   "_backward_pre_hooks", "_forward_hooks_with_kwargs",
                   "_forward_pre_hooks_with_kwargs", "_forward_hooks_always_called")
    _GLOBAL_HOOKS = ("_global_forward_hooks", "_global_forward_pre_hooks",
                     "_global_backward_hooks", "_global_backward_pre_hooks")

    def _hide_user_hooks(self):
        """For a replay: every module's hook tables hold only the probe's
        hooks and those that are part of the model (_model_part), and
        torch's global module hooks none, so no other hook of the user's
        runs twice in a step (a counter, a logger). Returns what to put
        back (_show_user_hooks)."""
        ours = {h.id for h in self.mod_handles or ()}
        saved = []
        for m in self.mod_list:
            for name in self._HOOK_DICTS:
                d = m.__dict__.get(name)
                if isinstance(d, dict) and d:
                    saved.append((m.__dict__, name, d))
                    m.__dict__[name] = type(d)((k, v) for k, v in d.items()
                                               if k in ours or _model_part(v))
        mod = torch.nn.modules.module
        for name in self._GLOBAL_HOOKS:
            d = getattr(mod, name, None)
            if isinstance(d, dict) and d:
                saved.append((mod.__dict__, name, d))
                setattr(mod, name, type(d)())
        return saved

    @staticmethod
    def _show_user_hooks(saved):
        for owner, name, d in saved:
            owner[name] = d

    @staticmethod
    def _first_record(rec, lossf):
        """(code, order) of the first record of a replay that is not
        finite, in the step's order (forward, the loss, backward), or
        None (also when the backward was not replayed, and the forward
        and the loss were finite)."""
        fwd = torch.stack(rec.fwd_val).float().tolist() if rec.fwd_val else []
        bwd = torch.stack(rec.bwd_val).float().tolist() if rec.bwd_val else []
        for i, (v, code) in enumerate(zip(fwd, rec.fwd_code)):
            if not math.isfinite(v):
                return code, _order(PASS_FORWARD, i)
        if not math.isfinite(lossf):
            return PASS_LOSS, _order(PASS_LOSS, 0)
        for j, (v, code) in enumerate(zip(bwd, rec.bwd_code)):
            if not math.isfinite(v):
                return code, _order(PASS_BACKWARD, j)
        return None

    def _after_optimizer_step(self):
        # a training forward since the last step(): this update comes before
        # step() in the iteration (a callback after optimizer.step(), as
        # minGPT's on_batch_end); three in a row, one step() between each
        self.late_updates = self.late_updates + 1 if self.fwd_since_step > 0 else 0
        if self.late_updates >= 3 and "late_step" not in self.place_said:
            self.place_notes.append(("late_step", _LATE_STEP))
        self.updates += 1
        row, self.pending = self.pending, None
        if row is None:
            return
        if row["oc_before"] is not None and self.late_updates == 0:
            row["oc"] = self._out_after(row)
        if row["before"] is not None:
            row["ratio"] = self._ratios(row["before"])
            row["before"] = None
        self._write(row, skipped=0)

    def _keep_before(self):
        """Each block's parameters before the optimizer's step, copied into
        the block's float32 buffer: made at the first update ratio and
        refilled after. A new buffer each time costs the CPU a page fault
        every 4 KB (glibc hands blocks this large back to the system), ten
        times the copy's own time at 20M parameters. Per block: (buffer,
        views into it, one per parameter), or None for a block without
        parameters."""
        if self.before is None:
            self.before = [_buffer_views(ps) if ps else None for ps in self.block_params]
        with torch.no_grad():
            for ps, b in zip(self.block_params, self.before):
                if b is not None:
                    torch.cat([p.detach().reshape(-1) for p in ps], out=b[0])
        return self.before

    def _ratios(self, before):
        """Per block ||W_after - W_before|| / ||W_after||: the difference
        made in place in the block's buffer (_keep_before), ||W_after||
        from the parameters' own norms."""
        out, dev = [], self._device()
        with torch.no_grad():
            for ps, b in zip(self.block_params, before):
                if b is None:
                    out.append(torch.tensor(float("nan"), device=dev))
                    continue
                buf, views = b
                for v, p in zip(views, ps):
                    v.sub_(p.detach())
                wn = torch.linalg.vector_norm(_norms([p.detach() for p in ps], buf.device))
                out.append((torch.linalg.vector_norm(buf) / wn).to(dev))
        return torch.stack(out)

    # -- collecting ----------------------------------------------------------------
    def _grad_sums(self, exact=False):
        """Squared gradient norms: 3 per block, then the total (device,
        float64). One foreach call where the gradients allow (dense
        float32 on the model's device): per-tensor calls are most of its
        cost. Its float32 norms square without scaling, so a norm past
        1.8e19 comes out inf; exact computes each in float64 (twice the
        time), for the step where that happened (_watch_cpu). The sums
        are one product with a 0/1 matrix, group by gradient
        (_group_matrix)."""
        grads = [p.grad for p in self.params]
        have = [g for g in grads if g is not None]
        dev = self._device()
        if not have:
            return torch.zeros(3 * len(self.blocks) + 1, dtype=torch.float64, device=dev)
        with torch.no_grad():
            sq = _norms(have, dev, torch.float64 if exact else torch.float32).double() ** 2
            sums = self._group_matrix(grads, len(have) < len(grads), dev) @ sq
        if self.dist and self.sharded and not exact:
            torch.distributed.all_reduce(sums)
        return sums

    def _group_matrix(self, grads, some_missing, dev):
        """(3 * blocks + 1) x (gradients present): row 3 * b + g sums
        group g of block b (self.gid), the last row every gradient. Made
        once for the usual step, where every parameter has its gradient;
        for others, once per set of missing ones (a few kept)."""
        key = tuple(g is not None for g in grads) if some_missing else None
        m = self.gmats.get(key)
        if m is None:
            nb = 3 * len(self.blocks)
            cols = [self.gid.get(id(p), -1) for p, g in zip(self.params, grads)
                    if g is not None]
            m = torch.zeros(nb + 1, len(cols), dtype=torch.float64)
            for j, row in enumerate(cols):
                if row >= 0:
                    m[row, j] = 1.0
            m[nb] = 1.0
            m = m.to(dev)
            if len(self.gmats) < 8:
                self.gmats[key] = m
        return m

    def _grad_check(self):
        """The watch's unmeasured steps: one value (device) that is not
        finite when a gradient holds an inf or a NaN, the sum of all their
        values (a sum past float32's range trips it too: _grads_finite
        tells the two apart). The small gradients are copied into one
        buffer first: a reduction's own cost, a few microseconds, is most
        of the time of one over a few thousand values."""
        small = [g for g in (p.grad for p in self.small_params) if g is not None]
        big = [g for g in (p.grad for p in self.big_params) if g is not None]
        with torch.no_grad():
            try:
                vals = ([_watch_sum(_flatten(small))] if small else []) + \
                    [_watch_sum(g) for g in big]
                total = vals[0] if len(vals) == 1 else torch.stack(vals).sum() if vals else None
            except RuntimeError:  # sparse gradients, or on several devices
                dev = self._device()
                total = torch.stack([_watch_sum(_dense(g)).to(dev) for g in small + big]).sum() \
                    if small or big else None
        return total.reshape(1) if total is not None else torch.zeros(1, device=self._device())

    def _device(self):
        for p in self.params:
            return p.device
        return torch.device("cpu")

    def _collect(self, lossv, gsq, now):
        """The step's numbers as one flat device tensor, and how to read it."""
        rec, dev = self.rec, lossv.device
        val_loss, self.val_next = self.val_next, None
        parts = [lossv.reshape(1), gsq]  # float64: the squares pass float32's range early
        scale = self._scale()
        if isinstance(scale, torch.Tensor):
            parts.append(scale.reshape(1).to(dev))
        for side in ("fwd", "bwd"):
            if side in rec.lohi:
                parts.append(rec.lohi[side])
        if rec.resid:  # sums of squares (float64: a norm past 1.8e19 squares past float32)
            parts.append(torch.stack([n for _, _, n, _ in rec.resid]).to(dev).double() ** 2)
        if rec.lowp_cnt:
            parts.append(torch.stack(rec.lowp_cnt).float().to(dev))
        ent = self._entropy(rec.targets)
        if ent is not None:
            parts.append(ent.reshape(1).to(dev))
        nfs = self.nonfinite_steps  # an int (the CPU's watch) or a device count
        if isinstance(nfs, torch.Tensor):
            parts.append(nfs.reshape(1).float().to(dev))
        mech = [(b, k) for b, k, _ in rec.mech]
        if rec.mech:  # float64: sums of squares of large activations
            parts.append(torch.stack([t.reshape(()).to(dev).double() for _, _, t in rec.mech]))
        before = None
        if (self.n - 1) % self.update_every == 0 and self.optimizer is not None:
            before = self._keep_before()
        oc_before = self._out_before() if self._out_wanted(val_loss) else None
        dt = now - self.t_prev if self.t_prev is not None else None
        tps = rec.tokens * self.world / dt if rec.tokens and dt and dt > 0 else None
        return {"step": self.n, "parts": parts, "scale": scale, "val_loss": val_loss,
                "lr": self._lr(), "before": before, "ratio": None, "time": now, "tps": tps,
                "nf": len(rec.fwd_lo), "nb": len(rec.bwd_lo),
                "fwd_block": rec.fwd_block, "bwd_block": rec.bwd_block, "resid": rec.resid,
                "lowp_block": rec.lowp_block, "lowp": rec.lowp, "ent": ent is not None,
                "nfs": nfs, "mech": mech, "mech_n": dict(rec.mech_n), "oc_before": oc_before,
                "oc": None}

    @staticmethod
    def _mech_values(row, vals):
        """{(block, key): value} from the mechanism records' values: maxima
        over a block's records, sums of the rest; and each key's mean
        (key + '_mean') where a count was kept."""
        got = {}
        for (b, k), v in zip(row["mech"], vals):
            if (b, k) not in got:
                got[(b, k)] = v
            elif k in MECH_MAX:
                got[(b, k)] = _nanmax(got[(b, k)], v)
            else:
                got[(b, k)] += v
        return got

    def _out_wanted(self, val_loss):
        """Is out_change measured at this (written) step: one of the first
        OUT_STEPS or one with a validation loss, with an optimizer whose
        steps the probe follows, step() called before it (the order is
        known), one process (a forward of its own on one rank would stall
        a sharded model), and a fixed batch whose forward gave logits."""
        return self.optimizer is not None and not self.dist and bool(self.fixed) and \
            "out_change" not in self.unknown and self.out_failed is None and \
            "late_step" not in self.place_said and self.late_updates == 0 and \
            (self.n <= OUT_STEPS or val_loss is not None)

    def _out_before(self):
        """The logits on the fixed batch before this step's update: kept
        from the last update's measurement when no update came since,
        else a forward now."""
        if self.out_prev is not None and self.out_prev[0] == self.updates:
            return self.out_prev[1]
        return self._fixed_logits()

    def _fixed_logits(self):
        """The model's logits on the fixed batch, under no_grad, in eval
        mode (dropout off; each module's mode put back), the random states
        and buffers put back, none of the probe's hooks recording; float32,
        or None (the failure said once in a note)."""
        modes = [(m, m.training) for m in self.model.modules()]
        rng = _random_states()
        bufs = [(b, b.detach().clone()) for b in self.model.buffers()]
        stack, bctx = self.stack, self.bctx
        self.side, self.stack, self.bctx = True, [], []
        try:
            self.model.eval()
            with torch.no_grad():
                t = self._logits_of(self.model(*self.fixed))
            if t is None:
                raise ValueError("its output holds no logits")
            return t.detach().float().clone()
        except Exception as e:  # noqa: BLE001 - the run is not ours to break
            self.out_failed = "%s: %s" % (type(e).__name__, str(e)[:160])
            self._event("note", "out_change is not measured: the model's forward on the fixed "
                        "batch (the first batch's first %d sequences) failed (%s)"
                        % (OUT_ROWS, self.out_failed))
            return None
        finally:
            self.side, self.stack, self.bctx = False, stack, bctx
            for m, mode in modes:
                m.training = mode
            _set_random_states(rng)
            with torch.no_grad():
                for b, v in bufs:
                    b.copy_(v)

    def _out_after(self, row):
        """After this step's update: ||f(after) - f(before)|| / ||f(before)||
        of the logits on the fixed batch (0-d), kept as the next step's
        before when that one is measured too."""
        before, row["oc_before"] = row["oc_before"], None
        after = self._fixed_logits()
        if after is None or before is None or after.shape != before.shape:
            return None
        if self._measured(self.n + 1) and self.n + 1 <= OUT_STEPS:
            self.out_prev = (self.updates, after)
        else:
            self.out_prev = None
        return torch.linalg.vector_norm(after - before) / torch.linalg.vector_norm(before)

    def _entropy(self, targets):
        """The unigram entropy (nats, a 0-d tensor) of the targets of every
        written step so far, this one's added; None before any. A bincount
        of the batch's targets (negative ones, an ignore_index, all fall
        in bin 0, dropped) into the running counts: a pass over the
        targets and one over the vocabulary."""
        if targets is not None and targets.numel():
            t = targets.detach().reshape(-1)
            n = len(self.tcounts) if self.tcounts is not None else (self.vocab or 0)
            c = torch.bincount(t.clamp(min=-1) + 1, minlength=n + 1)[1:]
            if self.tcounts is None or self.tcounts.device != c.device:
                self.tcounts = c.double()
            else:
                if len(c) > len(self.tcounts):  # a token past the vocabulary seen so far
                    self.tcounts = torch.nn.functional.pad(self.tcounts,
                                                           (0, len(c) - len(self.tcounts)))
                self.tcounts += c
        if self.tcounts is None:
            return None
        return torch.special.entr(self.tcounts / self.tcounts.sum()).sum().float()

    def _read(self, row):
        """The one host read of a measured step: every number, the update
        ratios and the watch, concatenated; then split on the host."""
        dev = row["parts"][0].device
        parts = list(row["parts"])
        if row["ratio"] is not None:
            parts.append(row["ratio"].float().to(dev))
        if row["oc"] is not None:
            parts.append(row["oc"].reshape(1).to(dev))
        parts.append(self.first.to(dev).float() if self.first is not None
                     else torch.zeros(3, device=dev))
        first = self.first.to(dev) if self.first is not None else None
        vals = torch.cat(parts).tolist()
        if first is not None:  # float32 holds steps exactly only to 2^24
            vals = vals[:-3] + first.tolist() if row["step"] >= 1 << 24 else vals
        return vals

    def _split(self, row, vals):
        """Per-block lists from the flat values (Python, on a few hundred
        floats): maxima over each block's records, sums of squares, counts."""
        nb = len(self.blocks)
        nan = float("nan")
        pos = 0

        def take(k):
            nonlocal pos
            out = vals[pos:pos + k]
            pos += k
            return out
        loss, = take(1)
        gsq = take(3 * nb + 1)
        scale = take(1)[0] if isinstance(row["scale"], torch.Tensor) else row["scale"]
        act = [None] * nb
        rmax = [None] * nb
        for side, blocks_of in (("fwd", row["fwd_block"]), ("bwd", row["bwd_block"])):
            n = row["nf" if side == "fwd" else "nb"]
            if not n:
                continue
            lo, hi = take(n), take(n)
            amax = [max(-a, b) if a == a and b == b else nan for a, b in zip(lo, hi)]
            if side == "fwd":
                fwd_amax = amax
                for k, b in enumerate(blocks_of):
                    if b >= 0:
                        act[b] = amax[k] if act[b] is None else _nanmax(act[b], amax[k])
        rsq, rn = [None] * nb, [0] * nb
        for b, k, _, numel in row["resid"]:
            v = take(1)[0]
            rsq[b] = v if rsq[b] is None else rsq[b] + v
            rn[b] += numel
            rmax[b] = fwd_amax[k] if rmax[b] is None else _nanmax(rmax[b], fwd_amax[k])
        ovf, udf = [0.0] * nb, [0.0] * nb
        for b in row["lowp_block"]:
            o, u = take(2)
            ovf[b] += o
            udf[b] += u
        ent = take(1)[0] if row["ent"] else None
        nfs = take(1)[0] if isinstance(row["nfs"], torch.Tensor) else row["nfs"]
        mech = self._mech_values(row, take(len(row["mech"])))
        ratio = take(nb) if row["ratio"] is not None else [None] * nb
        ratio = [None if not ps else r for r, ps in zip(ratio, self.block_params)]
        oc = take(1)[0] if row["oc"] is not None else None
        first = take(3)
        return {"mech": mech, "out_change": oc,
                "loss": loss, "gsq": gsq, "scale": scale, "act": act, "rmax": rmax,
                "rsq": rsq, "rn": rn, "ovf": ovf, "udf": udf, "ratio": ratio, "first": first,
                "ent": ent, "nfs": int(nfs)}

    def _reduce(self, v):
        """Under torch.distributed the statistics are those of the global
        batch: the loss and sums all-reduced, maxima too (ranks hold
        equal-size shards, as DDP's sampler gives them); the watch takes the
        earliest any rank saw: by step, then by where in the step (a rank's
        forward comes before the all-reduce that makes every rank's
        gradients non-finite), then the lowest code."""
        if not self.dist:
            return v
        nb, nan = len(self.blocks), float("nan")
        f = lambda x: nan if x is None else x  # noqa: E731
        mech = v["mech"]  # every rank records the same keys, in the same order
        msum = [k for k in mech if k[1] not in MECH_MAX]
        mmax = [k for k in mech if k[1] in MECH_MAX]
        s = torch.tensor([v["loss"]] + [f(x) for x in v["rsq"]] + v["ovf"] + v["udf"] +
                         [float(n) for n in v["rn"]] + [f(mech[k]) for k in msum],
                         dtype=torch.float64, device=self.cdev)
        m = torch.tensor([f(x) for x in v["act"]] + [f(x) for x in v["rmax"]] +
                         [f(mech[k]) for k in mmax], dtype=torch.float64, device=self.cdev)
        step, code, order = v["first"]
        key = torch.tensor([step * 2.0 ** 24 + order if step > 0 else float("inf")],
                           dtype=torch.float64, device=self.cdev)
        d = torch.distributed
        d.all_reduce(s)
        d.all_reduce(m, op=d.ReduceOp.MAX)
        d.all_reduce(key, op=d.ReduceOp.MIN)
        s, m, k = s.tolist(), m.tolist(), key.item()
        v["loss"] = s[0] / self.world
        v["rsq"], v["ovf"], v["udf"] = s[1:1 + nb], s[1 + nb:1 + 2 * nb], s[1 + 2 * nb:1 + 3 * nb]
        v["rn"] = s[1 + 3 * nb:1 + 4 * nb]
        v["act"], v["rmax"] = m[:nb], m[nb:2 * nb]
        # a mechanism's sums over the global batch, per rank's share (its
        # counts are one rank's), as the loss; its maxima over all ranks
        mech.update(zip(msum, (x / self.world for x in s[1 + 4 * nb:])))
        mech.update(zip(mmax, m[2 * nb:]))
        mine = torch.tensor([code if step > 0 and step * 2.0 ** 24 + order == k
                             else float("inf")], dtype=torch.float64, device=self.cdev)
        d.all_reduce(mine, op=d.ReduceOp.MIN)  # the code, of the rank(s) that saw it first
        v["first"] = [0.0, 0.0, 0.0] if math.isinf(k) else \
            [float(int(k // 2 ** 24)), mine.item(), k % 2 ** 24]
        return v

    def _scale(self):
        """The scaler's scale (a tensor or a float); 1.0 when there is no
        scaler (the loss is not scaled), None when that is not known
        (several GradScalers, none passed)."""
        s = self.scaler
        if s is None:
            if self.scaler_found is None:
                self.found_scaler, self.scaler_found = _find_scaler()
            s = self.found_scaler
            if s is None:
                return 1.0 if self.scaler_found == "none" else None
        if not getattr(s, "is_enabled", lambda: False)():
            return 1.0
        t = getattr(s, "_scale", None)
        return t.detach().float().reshape(-1)[0] if isinstance(t, torch.Tensor) \
            else float(s.get_scale())

    def _lr(self):
        if self.optimizer is None or not self.optimizer.param_groups:
            return None
        return float(self.optimizer.param_groups[0]["lr"])

    # -- writing ---------------------------------------------------------------------
    def _write(self, row, skipped):
        """Read (every rank: the collectives need them all), reduce, and on
        rank 0 format the step line."""
        v = self._reduce(self._split(row, self._read(row)))
        if self.rank != 0:
            return
        pairs = self._row_pairs(row, v, skipped)
        self._clipped_check(dict(pairs).get("grad_norm"))
        self.writer.line(pairs)

    def _row_pairs(self, row, v, skipped):
        nb = len(self.blocks)
        fmax = LOWP.get(row["lowp"])
        gsq, loss = v["gsq"], v["loss"]
        gnorm = math.sqrt(gsq[3 * nb]) if math.isfinite(gsq[3 * nb]) else float("nan")
        pairs = [("step", row["step"]), ("t", Clock(row["time"])), ("loss", loss),
                 ("val_loss", row["val_loss"]), ("lr", row["lr"]), ("grad_norm", gnorm),
                 ("loss_scale", v["scale"]), ("skipped", skipped),
                 ("precision", PRECISION.get(row["lowp"] or self._param_dtype(), "fp32")),
                 ("data_entropy", v["ent"]), ("nonfinite_steps", v["nfs"])]
        mech, nn = v["mech"], row["mech_n"]
        if (-1, "lse") in mech:
            pairs += [("logz_mean", mech[(-1, "lse")] / nn[(-1, "lse")]),
                      ("logit_max", mech[(-1, "lmax")])]
        pairs.append(("out_change", v["out_change"]))
        if self.placement is not None:
            pairs.append(("norm", self.placement))
        if self.kind is not None:
            pairs.append(("norm_kind", self.kind))
        if row["tps"] is not None:
            pairs.append(("tokens_per_s", round(row["tps"], 1)))
        for i in range(nb):
            gn = [None if self.empty[3 * i + g] else
                  (math.sqrt(x) if x >= 0 else x) for g, x in enumerate(gsq[3 * i:3 * i + 3])]
            act = v["act"][i]
            head = None
            if fmax is not None and act is not None and act > 0 and math.isfinite(act):
                head = math.log2(fmax / act)
            rms = None
            if v["rsq"][i] is not None and v["rn"][i] > 0:
                rms = math.sqrt(v["rsq"][i] / v["rn"][i]) if v["rsq"][i] >= 0 else v["rsq"][i]
            got = {"grad_attn": gn[0], "grad_ffn": gn[1], "grad_ln": gn[2], "act_max": act,
                   "resid_max": v["rmax"][i], "resid_rms": rms, "update_ratio": v["ratio"][i],
                   "overflow": _count(v["ovf"][i]), "underflow": _count(v["udf"][i]),
                   "headroom": head}
            got.update(_layer_mech(i, mech, nn))
            pairs += _layer_pairs(i, got)
        for key, x in (("loss_nonfinite", loss), ("val_loss_nonfinite", row["val_loss"])):
            if nonfinite_word(x):
                pairs.append((key, nonfinite_word(x)))
        # not measured is left out (a reader shows it as unknown); null is
        # a measured value that is not finite
        pairs = [(k, x) for k, x in pairs if x is not None]
        return pairs + self._first_pairs(v["first"])

    def _first_pairs(self, first):
        """first_nonfinite (where) and first_nonfinite_step, once: the
        watch's record, named."""
        step, code = int(first[0]), int(first[1])
        if step <= 0 or self.reported_nonfinite:
            return []
        self.reported_nonfinite = True
        where, layer = self._where(code)
        return [("first_nonfinite", where), ("first_nonfinite_step", step),
                ("first_nonfinite_layer", layer)]

    def _where(self, code):
        """(text, block or None) of a watch record's code."""
        mod, pass_ = divmod(code, 4)
        named = pass_ < PASS_LOSS or (pass_ == PASS_GRADS and mod > 0)
        if pass_ == PASS_LOSS and mod > 0:
            where = "not named: the step's replay did not compute what the step did (a hook " \
                "of the user's that acts on its calls or the time, or state a replay does not " \
                "restore)"
        elif pass_ == PASS_LOSS:
            where = "loss"
        elif pass_ == PASS_GRADS:
            # a module here: its own parameters' gradient, when the backward
            # could not be replayed (the loss was computed outside the model)
            where = "%s, parameter gradient" % self.mod_names[mod] if mod > 0 else \
                "parameter gradients, backward"
        else:
            where = "%s, %s" % (self.mod_names[mod], "forward" if pass_ == PASS_FORWARD
                                else "backward")
        bad = getattr(self, "first_param", None)
        if bad is not None and pass_ == PASS_FORWARD and self.first is not None and \
                int(self.first.tolist()[1]) == code:
            where += " (its %s was not finite before the step)" % bad
        return where, self._layer_of(mod) if named else None

    def _layer_of(self, mod):
        """The block a module's name lies in, or None (embeddings, head)."""
        name = self.mod_names[mod]
        for b, (bn, _) in enumerate(self.blocks):
            if name == bn or name.startswith(bn + "."):
                return b
        return None

    def _param_dtype(self):
        for p in self.params:
            if p.is_floating_point():
                return p.dtype
        return torch.float32

    def _header(self, first_forward=True):
        """The header line. Without a whole first forward (first_forward
        False: the run ended before its first step) the placement comes
        from norm_first or attach(norm=) alone: the leaves of a forward cut
        short would say nothing true of the order."""
        self.header_written = True
        dtype = self.rec.lowp or self._param_dtype()
        order = self.rec.order if first_forward else []
        self.placement = self.norm_arg or (layout.placement(self.blocks[0][1], order)
                                           if self.blocks else None)
        self.norm_class, self.kind = layout.norm_kind(layout.norm_modules(self.blocks[0][1])) \
            if self.blocks else (None, None)
        pairs = [
            ("format", FORMAT), ("version", VERSION), ("source", "pytorch"),
            ("probe", __version__),
            ("model", type(self.model).__name__), ("blocks", [n for n, _ in self.blocks]),
            ("n_layer", len(self.blocks)), ("params", sum(p.numel() for p in self.params)),
            ("block_params", [sum(p.numel() for p in ps) for ps in self.block_params]),
            ("world_size", self.world), ("dtype", DTYPE_NAME.get(dtype, str(dtype))),
            ("every", self.every), ("update_every", self.update_every),
            ("start", datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")),
            ("torch", torch.__version__), ("host", socket.gethostname()), ("pid", os.getpid())]
        if self.placement is not None:
            pairs.append(("norm", self.placement))
        if self.norm_class is not None:
            pairs.append(("norm_class", self.norm_class))
        self.vocab = self.vocab_arg or (self._find_vocab() if first_forward else None)
        if self.vocab is not None:
            pairs.append(("vocab", self.vocab))
        if self.shared:
            pairs.append(("shared_modules", sorted({n for n, m in self.model.named_modules()
                                                    if any(m is s for s in self.shared)})))
        calls = [self.rec.block_calls.get(b, 0) for b in range(len(self.blocks))]
        if first_forward and any(c > 1 for c in calls):
            pairs.append(("block_calls", calls))
        notes = self._unknown() if first_forward else []
        if self.unknown:
            pairs.append(("unknown", self.unknown))
        self.writer.line(pairs)
        if notes:  # one note, with the header's list: the view says it once
            self._event("note", "not measured on this model (unknown, never 0): " +
                        "; ".join(notes), [("unknown", self.unknown)])
        for b, c in enumerate(calls if first_forward else []):
            if c > 1:  # one block, its weights shared by the layers that call it
                self._event("note", "block %s ran %d times in a forward (shared weights): its "
                            "row l%d covers every call (act_max and resid over all of them, its "
                            "gradients their sum); rows per call are not written"
                            % (self.blocks[b][0], c, b))

    def _unknown(self):
        """What the first step showed the probe cannot see, for the header's
        'unknown' (a column name, l<i>_ and the name when only some blocks
        lack it) and one note each saying why; a column never written."""
        nb, got = len(self.blocks), {(b, k) for b, k, _ in self.rec.mech}
        why = {
            "attn_logit_max": "no nn.MultiheadAttention or scaled_dot_product_attention call "
                              "ran in %s (a hand-written softmax attention shows no scores)",
            "branch_ratio": "the output of %s is not its input plus its branches' outputs "
                            "(x + F, or a first norm's input x + F) as the probe found them",
            "norm_in_rms": "no norm module ran in %s"}
        keys = {"attn_logit_max": "amax", "branch_ratio": "xsq", "norm_in_rms": "nsq"}
        notes = []
        for col, key in keys.items():
            miss = [b for b in range(nb) if (b, key) not in got]
            cols = [col, "attn_entropy"] if col == "attn_logit_max" else [col]
            if not miss:
                continue
            if len(miss) == nb:
                self.unknown += cols
                where = "any block"
            else:
                self.unknown += ["l%d_%s" % (b, c) for b in miss for c in cols]
                where = "block%s %s" % ("s" if len(miss) > 1 else "",
                                        ", ".join(self.blocks[b][0] for b in miss))
            notes.append("%s: %s" % (" and ".join(cols), why[col] % where))
        if (-1, "lse") not in got:
            self.unknown += ["logz_mean", "logit_max", "out_change"]
            notes.append("logz_mean, logit_max and out_change: the model's output holds no "
                         "logits (a tensor whose last size is the vocabulary's)")
        elif self.optimizer is None or self.dist or not self.fixed:
            self.unknown.append("out_change")
            notes.append("out_change: it needs the optimizer passed to attach() and one process")
        return notes

    def _find_vocab(self):
        """The output vocabulary's size, from the first forward: the
        out_features of the Linear outside the blocks whose output the
        model returned (its logits), else the widest Linear outside the
        blocks that ran (a lm_head among smaller heads), else the returned
        tensor's last size when an Embedding of that many rows says it is
        a tied head's logits; None when nothing says."""
        rec = self.rec
        if rec.out_head is not None:
            return rec.out_head.out_features
        if rec.heads:
            return max(m.out_features for m, _ in rec.heads)
        if rec.out_width is not None and any(isinstance(e, torch.nn.Embedding) and
                                             e.num_embeddings == rec.out_width
                                             for e in self.model.modules()):
            return rec.out_width
        return None

    # -- controls ------------------------------------------------------------------------
    def _commands(self):
        """New commands, the same on every rank: rank 0 reads the control
        file and broadcasts what it found (one fixed-size tensor)."""
        cmds = self.ctl.poll(MAX_COMMANDS) if self.rank == 0 else []
        refusal = self.ctl.take_refusal() if self.rank == 0 else None
        if refusal is not None:
            self._event("note", refusal + "; commands from it are not obeyed (see normscope(1), "
                        "SECURITY CONSIDERATIONS)")
        if not self.dist:
            return cmds
        buf = torch.zeros(1 + 2 * MAX_COMMANDS, dtype=torch.float64, device=self.cdev)
        if self.rank == 0:
            buf[0] = len(cmds)
            for k, (_, code, f, _) in enumerate(cmds):
                buf[1 + 2 * k], buf[2 + 2 * k] = int(code), f
        torch.distributed.broadcast(buf, 0)
        if self.rank == 0:
            return cmds
        v = buf.tolist()
        return [(None, Code(int(v[1 + 2 * k])), v[2 + 2 * k], "") for k in range(int(v[0]))]

    def _controls(self):
        self._lr_undone()
        for cmd in self._commands():
            self._apply(cmd)
        while self.paused:
            time.sleep(0.1)
            for cmd in self._commands():
                self._apply(cmd)

    def _event(self, kind, text, extra=()):
        if self.rank == 0:
            self.writer.line([("event", kind), ("step", self.n), ("text", text)] + list(extra))

    def _ack(self, seq, what):
        """The view shows a command as pending until this: an ack event
        with its sequence number, and an ack line in the control file."""
        if self.rank != 0 or seq is None:
            return
        self._event("ack", "%s at step %d" % (what, self.n), [("seq", seq)])
        self.ctl.ack(seq, self.n)

    def _apply(self, cmd):
        seq, code, f, text = cmd
        if code == Code.BAD:
            self._event("note", "ignored: " + text)
            self._ack(seq, "ignored")
        elif code == Code.PAUSE:
            if not self.paused:
                self.paused = True
                self._event("paused", "paused before step %d" % self.n)
            self._ack(seq, "pause applied")
        elif code == Code.RESUME:
            if self.paused:
                self.paused = False
                self._event("resumed", "resumed at step %d" % self.n)
            self._ack(seq, "resume applied")
        elif code == Code.LR:
            ok = self._scale_lr(f, text)
            self._ack(seq, ("%s applied" % (text or "lr x%g" % f)) if ok else "ignored")
        elif code == Code.CHECKPOINT:
            self._ack(seq, "checkpoint %s written" % os.path.basename(self._checkpoint()))

    def _scale_lr(self, f, text):
        """Scale the LR and every base a schedule computes it from: the
        groups' initial_lr / max_lr / min_lr (OneCycleLR, CyclicLR keep
        theirs there) and a passed scheduler's base_lrs / max_lrs / min_lrs."""
        if self.optimizer is None:
            self._event("note", "ignored: %s (attach() was given no optimizer)" % text)
            return False
        before = self._lr()
        for g in self.optimizer.param_groups:
            for k in ("lr", "initial_lr", "max_lr", "min_lr"):
                if isinstance(g.get(k), (int, float)):
                    g[k] *= f
        sch = self.scheduler
        for attr in ("base_lrs", "max_lrs", "min_lrs"):
            if sch is not None and isinstance(getattr(sch, attr, None), list):
                setattr(sch, attr, [b * f for b in getattr(sch, attr)])
        if sch is not None and isinstance(getattr(sch, "_last_lr", None), list):
            sch._last_lr = [b * f for b in sch._last_lr]
        if self.lr_keep is not None:  # the factor kept on the script's LR grows
            self.lr_keep["f"] *= f
            self.lr_keep["set"] = [g["lr"] for g in self.optimizer.param_groups]
        elif self.scheduler is None and before:  # watched until undone or superseded
            f_all = f * (self.lr_check["f"] if self.lr_check is not None else 1.0)
            self.lr_check = {"step": self.n, "text": text or "lr x%g" % f, "f": f_all,
                             "seen": self._lr()}
        self._event("setting", "%s (lr %.6g)" % (text or "lr x%g" % f, self._lr()))
        return True

    def _lr_undone(self):
        """After LR commands (F their product) with no scheduler passed: at
        every later step, an LR that something else changed (a scheduler
        attach() was not given, stepped at any interval; a script that sets
        the LR itself, as nanoGPT's get_lr() does every iteration) by a jump
        nearer to 1/F than to 1 (within a factor sqrt(F)) undid them; a
        smaller move is the schedule going on, and is watched from there.
        An undone factor is applied again, and kept from then on (_lr_keep):
        the commands, and the diagnosis' fixes sent the same way, hold
        whatever sets the LR."""
        self._lr_keep()
        chk = self.lr_check
        if chk is None or self.optimizer is None:
            return
        now = self._lr()
        if now is None or now == chk["seen"]:
            return
        logf = math.log(chk["f"]) if chk["f"] > 0 else 0.0
        if now <= 0 or chk["seen"] <= 0 or logf == 0:
            self.lr_check = None
            return
        scheds = self._sched_undid(chk["f"], now)
        undone = bool(scheds) if scheds is not None else \
            abs(math.log(now / chk["seen"]) + logf) < 0.5 * abs(logf)  # judged from the jump
        if undone:
            self.lr_check = None
            self._lr_reapply(chk, scheds or [])
        else:
            chk["seen"] = now

    def _lr_reapply(self, chk, scheds):
        """The commands' factor again, on top of the LR that undid it: a
        scheduler found that computes from its bases gets them scaled (it
        then keeps the factor itself); else the factor is applied at every
        step from here to whatever the script sets."""
        f = chk["f"]
        for sch in scheds:
            sch.base_lrs = [b * f for b in sch.base_lrs]
        for g in self.optimizer.param_groups:
            g["lr"] *= f
        how = "its bases are scaled"
        if not scheds:
            self.lr_keep = {"f": f, "set": [g["lr"] for g in self.optimizer.param_groups]}
            how = "the factor is applied again at every step to the LR the script sets"
        self._event("setting", "lr changed back: %s at step %d was undone at step %d by the "
                    "script's schedule; %s (lr %.6g)" % (chk["text"], chk["step"], self.n, how,
                                                         self._lr()), [("lr_undone", 1)])

    def _lr_keep(self):
        """A kept factor: every group whose LR something else set since the
        last step gets it again."""
        keep = self.lr_keep
        if keep is None or self.optimizer is None:
            return
        groups = self.optimizer.param_groups
        if len(keep["set"]) != len(groups):  # a group was added: it starts from here
            keep["set"] = [g["lr"] for g in groups]
            return
        for g, was in zip(groups, keep["set"]):
            if g["lr"] != was:
                g["lr"] *= keep["f"]
        keep["set"] = [g["lr"] for g in groups]

    def _sched_undid(self, f, now):
        """The optimizer's LR schedulers (found among the collector's
        objects) that set the LR from bases the command did not scale. Each
        one's get_lr(), a pure function of its state, is asked with its
        base_lrs scaled by f: a scheduler that computes from them
        (LambdaLR, StepLR's closed form) then says f times the LR now; one
        that scales the LR it finds (ExponentialLR) or reads the groups'
        bases, already scaled (OneCycleLR), says something else. None when
        no scheduler of this optimizer is found."""
        import gc
        base = getattr(torch.optim.lr_scheduler, "LRScheduler",
                       getattr(torch.optim.lr_scheduler, "_LRScheduler", None))
        if not isinstance(base, type):
            return None
        found = [o for o in gc.get_objects() if issubclass(type(o), base) and
                 getattr(o, "optimizer", None) is self.optimizer]
        if not found:
            return None
        undid, answered = [], False
        for sch in found:
            saved = list(sch.base_lrs)
            try:
                sch.base_lrs = [b * f for b in saved]
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    want = float(sch.get_lr()[0])
            except Exception:  # noqa: BLE001 - a scheduler of the user's: no verdict
                continue
            finally:
                sch.base_lrs = saved
            answered = True
            if abs(want - f * now) <= 1e-6 * abs(f * now):
                undid.append(sch)
        return undid if answered else None

    def _checkpoint(self):
        """Named and stamped with the optimizer updates done: controls are
        applied before this step's optimizer.step, so n - 1."""
        updates = self.n - 1
        path = "%s.step%d.pt" % (self.path, updates)
        if self.on_checkpoint is not None:
            self.on_checkpoint(path)
        elif self.rank == 0:
            state = {"step": updates, "updates": updates, "model": self.model.state_dict()}
            if self.optimizer is not None:
                state["optimizer"] = self.optimizer.state_dict()
            err = _save_private(state, path)
            if err is not None:
                self._event("note", "checkpoint %s not written: %s" % (os.path.basename(path), err))
                return path
        self._event("checkpoint", "checkpoint %s after %d updates" % (os.path.basename(path),
                                                                         updates))
        return path

    # -- extras and the end -------------------------------------------------------------
    def note(self, text):
        """Write a note event (shown in the follow view's events)."""
        self._event("note", str(text))

    def _end(self, reason, detail):
        """The end line: how the run ended, and the watch's first
        non-finite when no step line carried it yet. A run that ends before
        its first step (an exception in its first forward) writes the
        header first, so a follower learns that it ended and how, where an
        empty file would read as a run yet to start."""
        if self.end_reason is not None:
            return
        if self.rank == 0 and not self.header_written:
            if self.writer is None:
                return
            try:
                self._header(first_forward=False)
            except (OSError, ValueError):
                return
        self.end_reason = reason
        nfs = self.nonfinite_steps
        extra = [("reason", reason), ("steps", self.n),
                 ("nonfinite_steps", int(nfs.item()) if isinstance(nfs, torch.Tensor) else nfs)]
        if self.first is not None and not self.reported_nonfinite:
            extra += self._first_pairs(self.first.tolist())
        dead = self._dead_peers() if reason in ("exception", "signal") else []
        if dead:
            extra.append(("dead_ranks", dead))
            detail = "rank %s ended first (%s)%s" % (
                ", ".join(str(r) for r in dead),
                ", ".join("pid %d" % self.peers[r][1] for r in dead),
                "; " + detail if detail else "")
        text = "run ended at step %d: %s%s" % (self.n, reason, ": " + detail if detail else "")
        try:
            self._event("end", text, extra)
        except (OSError, ValueError):
            pass  # a closed or broken file: nothing more can be said

    def _dead_peers(self):
        """The ranks on this host whose process is gone or a zombie (killed,
        or crashed, before this one ended: the collective it left is what
        failed here). Peers on other hosts cannot be asked."""
        host = socket.gethostname()
        dead = []
        for r, peer in enumerate(getattr(self, "peers", None) or []):
            if r == self.rank or peer is None or peer[0] != host:
                continue
            try:
                with open("/proc/%d/stat" % peer[1]) as f:
                    state = f.read().rsplit(")", 1)[-1].split()[0]
            except OSError:
                state = "gone"
            if state in ("gone", "Z", "X"):
                dead.append(r)
        return dead

    def close(self, reason="close"):
        if self.closed:
            return
        if self.pending is not None:
            row, self.pending = self.pending, None
            self._write(row, skipped=1)
        if not self.deferred:
            self._end(reason, "")
        self.closed = True
        self.rec.release()
        self._unchain_exit()
        self._hooks_on(False)
        self._unwrap_forward()
        self._unwrap_mechanisms()
        if self.post_handle is not None:
            self.post_handle.remove()
        # put optimizer.step back unless something (an LR scheduler made after
        # attach) wrapped it since: then the wrapper stays and passes through
        elif self.optimizer is not None and \
                getattr(self.optimizer.step, "__func__", None) is self.step_fn:
            if self.had_step_attr:
                self.optimizer.step = self.orig_step
            else:
                del self.optimizer.step
        if self.writer is not None:
            self.writer.close()

    def __enter__(self):
        return self

    def __exit__(self, tp, value, tb):
        if tp is not None and not self.closed and not self.deferred:
            self._end("exception", "%s: %s" % (tp.__name__, str(value)[:200]))
        self.close()
        return False


# nn.MultiheadAttention -> (the probe watching it, its module index); a
# deep copy of the model (an EMA copy) gets a forward bound to its own
# module, which is not here: it computes as the class does, unmeasured
_MHA_PROBES = weakref.WeakKeyDictionary()


def _mha_forward(mha, *args, **kwargs):
    """An nn.MultiheadAttention's forward while a probe watches it
    (Probe._wrap_mha): the class's own forward, the scores measured first."""
    probe, idx = _MHA_PROBES.get(mha, (None, 0))
    if probe is None:
        return type(mha).forward(mha, *args, **kwargs)
    if probe._measuring_now() and len(args) >= 2:
        probe._mha_call(idx, mha, args, kwargs)
    probe.in_mha += 1
    try:
        return type(mha).forward(mha, *args, **kwargs)
    finally:
        probe.in_mha -= 1


def _layer_mech(i, mech, nn):
    """Block i's mechanism columns from the step's sums (Probe._mech_values),
    None where not measured."""
    def mean(k):
        return mech[(i, k)] / nn[(i, k)] if (i, k) in mech and nn.get((i, k)) else None
    got = {"attn_logit_max": mech.get((i, "amax")), "attn_entropy": None,
           "branch_ratio": None, "norm_in_rms": None}
    if (i, "rows") in mech and mech[(i, "rows")] > 0:
        got["attn_entropy"] = mech[(i, "ent")] / mech[(i, "rows")]
    fsq, xsq, nsq = mean("fsq"), mean("xsq"), mean("nsq")
    if fsq is not None and xsq is not None:
        got["branch_ratio"] = math.sqrt(fsq) / math.sqrt(xsq) if xsq > 0 else float("nan")
    if nsq is not None:
        got["norm_in_rms"] = math.sqrt(nsq)
    return got


def _branch_form(x, fs, nin, y):
    """How a block's output y is made from its input x and its branches'
    outputs fs, checked on its values (a part in 1e4): 'pre' for y = x +
    sum F (Pre-LN and its kin), 'post' for a first norm whose input nin is
    x + F_1 (Post-LN), False for anything else (DeepNorm's scaled x,
    dropout after a branch, a branch the names did not find): the branch
    ratio is then not measured."""
    if not fs:
        return False
    with torch.no_grad():
        ssum = x.detach().double() + sum(f.detach().double() for f in fs)
        if float((y.detach().double() - ssum).norm()) <= 1e-4 * float(y.detach().double().norm()):
            return "pre"
        if nin is not None and nin.shape == x.shape:
            n1 = nin.detach().double()
            if float((n1 - x.detach().double() - fs[0].detach().double()).norm()) <= \
                    1e-4 * float(n1.norm()):
                return "post"
    return False


def _nanmax(a, b):
    return a if a != a else b if b != b else max(a, b)


def _layer_pairs(i, got):
    """Block i's keys in the order of LAYER_COLS (the lab's table), from
    got, name -> value (None: not measured this step); a column in
    LAYER_UNKNOWN is never written. A column of LAYER_COLS neither
    measured nor unknown is a KeyError naming it, not a silent gap."""
    return [("l%d_%s" % (i, c), got[c]) for c in LAYER_COLS if c not in LAYER_UNKNOWN]


def _count(x):
    return int(x) if x is not None and math.isfinite(x) else None
