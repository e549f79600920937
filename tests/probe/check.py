"""check.py - the probe tests' small harness: named checks, a stream
reader that refuses NaN/Infinity tokens, and the PYTHONPATH set-up."""
import json
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "src", "probe"))
sys.path.insert(0, HERE)


class Check:
    def __init__(self, name):
        self.name, self.passed, self.failed = name, 0, 0
        self.dirs = []

    def tmpdir(self):
        """A scratch directory, removed by close()."""
        d = tempfile.mkdtemp(prefix="nsprobe.")
        self.dirs.append(d)
        return d

    def ok(self, cond, what):
        if cond:
            self.passed += 1
        else:
            self.failed += 1
            print("FAIL %s: %s" % (self.name, what), flush=True)
        return bool(cond)

    def close(self):
        for d in self.dirs:
            shutil.rmtree(d, ignore_errors=True)
        print("%s: %d passed, %d failed" % (self.name, self.passed, self.failed), flush=True)
        sys.exit(1 if self.failed else 0)


def _no_constant(tok):
    raise ValueError("non-JSON number token %s" % tok)


def read_stream(path):
    """(header, [step lines], [event lines]); raises on any bad line."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if text and not text.endswith("\n"):
        raise ValueError("%s: last line has no newline" % path)
    objs = [json.loads(line, parse_constant=_no_constant) for line in text.splitlines()]
    if not objs:
        raise ValueError("%s: empty" % path)
    return objs[0], [o for o in objs[1:] if "step" in o and "event" not in o], \
        [o for o in objs[1:] if "event" in o]


def stream_module():
    """The probe's stream.py, loaded by its path: it needs no torch (the
    package's __init__ does), so its lists can be checked anywhere."""
    import importlib.util
    path = os.path.join(HERE, "..", "..", "src", "probe", "normscope_probe", "stream.py")
    spec = importlib.util.spec_from_file_location("normscope_probe_stream", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# on every step line of a run with an optimizer, in fp32: the probe's
# per-block columns (the lab's table) but update_ratio, which comes on its
# steps only, headroom, in fp16/bf16 only, and those it does not measure
_STREAM = stream_module()
LAYER_KEYS = tuple(k for k in _STREAM.LAYER_COLS
                   if k not in ("update_ratio", "headroom") and k not in _STREAM.LAYER_UNKNOWN)
STEP_KEYS = ("step", "loss", "lr", "grad_norm", "loss_scale", "skipped")


def rel(a, b):
    return abs(a - b) / max(abs(a), abs(b), 1e-30)
