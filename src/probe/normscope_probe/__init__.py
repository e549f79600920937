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
`normscope --follow run.nsj` to show live. The follow view's commands
(pause, LR x2 / x0.5, checkpoint) come back through run.nsj.ctl and are
applied inside probe.step, at a step boundary. Pure Python; needs only torch.
"""
from .probe import Probe

__all__ = ["attach", "Probe"]
__version__ = "1.0"


def attach(model, optimizer=None, path="run.nsj", every=1, blocks=None, **options):
    """Hook model and start the stream at path.

    optimizer: its LR is reported and scaled by the controls; its step()
        is wrapped so the update ratio and the skipped flag can be measured.
    every: write a step line every `every` steps (1, 1+every, ...).
    blocks: None to find the stack of blocks, or a ModuleList, its name,
        or a list of block module names.
    Options: mapping ({'fnmatch pattern': 'attn'|'ffn'|'ln'} on parameter
    names relative to their block, or a function name -> group or None),
    overwrite (replace an existing stream; else ValueError), update_every
    (steps between update-ratio measurements, default 10), scaler (a
    torch.cuda.amp.GradScaler, for loss_scale), scheduler (its base_lrs are
    scaled with the LR), on_checkpoint (called with a path on every rank
    instead of the default save), sharded (all-reduce squared gradient sums:
    default on for FSDP).
    """
    return Probe(model, optimizer, path, every, blocks, **options)
