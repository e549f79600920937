"""normscope_probe - watch a PyTorch training run in normscope's dashboard.

    probe = normscope_probe.attach(model, optimizer, path="run.nsj")
    ...
    loss.backward()
    probe.step(loss)          # before optimizer.step()
    optimizer.step()
    ...
    probe.close()

The probe writes a normscope stream (normscope(1), STREAM FORMAT): per block
and step the lab's metrics, appended and flushed line by line, for
`normscope --follow run.nsj` to show live, and an end line when the run
ends (close(), normal exit, an uncaught exception, SIGTERM). The follow
view's commands (pause, LR x2 / x0.5, checkpoint) come back through
run.nsj.ctl, are applied inside probe.step, at a step boundary, and are
acknowledged in the stream. Pure Python; needs only torch.

attach() is the one entry point.
"""
import importlib.util
import sys

from .version import __version__

NO_TORCH = ("normscope_probe needs torch, which %s (Python %d.%d) cannot import: make the venv "
            "from a Python that has it, e.g. /usr/bin/python3 -m venv --system-site-packages "
            "~/venv" % ((sys.executable,) + sys.version_info[:2]))


def _one_line(prev):
    """sys.excepthook while torch is missing: the ImportError below, left
    uncaught by a script run as a program, is said in its one line (no
    traceback; the exit status stays 1); anything else goes to the hook
    that was there. A library that catches it gets the ImportError."""
    def hook(tp, value, tb):
        if isinstance(value, ImportError) and str(value) == NO_TORCH:
            sys.stderr.write(NO_TORCH + "\n")
            return
        prev(tp, value, tb)
    return hook


if importlib.util.find_spec("torch") is None:  # found at import, not at attach()
    sys.excepthook = _one_line(sys.excepthook)
    raise ImportError(NO_TORCH)

__all__ = ["attach", "__version__"]


def attach(model, optimizer=None, path="run.nsj", every=1, blocks=None, **options):
    """Hook model and start the stream at path; returns the probe (also a
    context manager: leaving the block closes it).

    optimizer: its LR is reported and scaled by the controls; its steps are
        followed (register_step_post_hook, or a wrapper on older torch) so
        the update ratio and the skipped flag can be measured.
    every: write a step line every `every` steps (1, 1+every, ...). The
        non-finite watch runs on every step whatever `every` is.
    blocks: None to find the stack of blocks by structure (a ModuleList of
        alike blocks, or a run of them in an nn.Sequential; a list of
        unlike modules, such as heads, never), or a ModuleList /
        nn.Sequential, its name, or a list of block module names (each
        once; a block shared by every layer and called in a loop is one
        block, blocks=['shared'], and the stream says how often it ran).
        Anything else is refused with a ValueError naming it.
    Options: mapping ({'fnmatch pattern': 'attn'|'ffn'|'ln'} on parameter
    names relative to their block, or a function name -> group or None),
    norm ('pre', 'post', ...: the placement, when neither norm_first nor
    the module order says it), overwrite (replace an existing stream; else
    ValueError), update_every (steps between update-ratio measurements,
    default 10), scaler (a torch.cuda.amp.GradScaler, for loss_scale),
    scheduler (scaled with the LR, so it keeps an lr x2; attach() warns
    when the optimizer has one that was not passed), on_checkpoint (called
    with a path on every rank instead of the default save), sharded
    (all-reduce squared gradient sums: default on for FSDP), vocab (the
    output vocabulary's size, for the header, when the head Linear does
    not say it), on_nonfinite ('warn', 'pause' or 'raise': what to do at
    the first step the watch finds non-finite: a RuntimeWarning, a pause
    the follow view resumes, a FloatingPointError out of probe.step;
    default None, only the stream says).

    In the loop: probe.step(loss, targets=y) (targets optional: for
    data_entropy), probe.validation(val_loss) after an evaluation.

    Under torchrun, attach() may come before init_process_group(): the
    stream is opened at the first step, once the process group exists.
    """
    from .probe import Probe
    return Probe(model, optimizer, path, every, blocks, **options)
