"""stream.py - writing a normscope stream: one JSON object per line.

The format is documented in normscope(1), STREAM FORMAT. Numbers are written
with 9 significant digits as the lab's --jsonl; a non-finite number becomes
null (JSON has no NaN), so a reader never meets a token it cannot parse.
This module only formats and appends; it knows nothing of torch.
"""
import json
import math
import os
import stat

FORMAT = "normscope-stream"
VERSION = 1

# The per-block keys of a step line ("l<i>_" + name), in the order of the
# lab's one table of them (metrics_layer_cols in src/metrics.c), which its
# writers and every reader walk. tests/probe/test_layer_cols.py checks
# this list against the lab's own CSV header, name by name and in order,
# and fails on a name either side lacks: a new column of the lab is added
# here too, measured (probe.py's _layer_values) or in LAYER_UNKNOWN.
LAYER_COLS = ("grad_attn", "grad_ffn", "grad_ln", "act_max", "resid_max", "resid_rms",
              "update_ratio", "overflow", "underflow", "headroom", "attn_logit_max",
              "attn_entropy", "branch_ratio", "norm_in_rms")
# The columns of LAYER_COLS the probe never measures on any model (none
# now: what it cannot see on one model, such as a hand-written attention's
# scores, the header's "unknown" names): never written, so a reader shows
# them unknown. Unknown is not NaN: null is a value measured and not finite.
LAYER_UNKNOWN = frozenset()


def number(v):
    """A JSON number token, or null for None and non-finite values."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, int):
        return str(v)
    v = float(v)
    if not math.isfinite(v):
        return "null"
    return "%.9g" % v


def nonfinite_word(v):
    """'nan', 'inf' or '-inf' for a non-finite float, else None."""
    if v is None or math.isfinite(v):
        return None
    if math.isnan(v):
        return "nan"
    return "inf" if v > 0 else "-inf"


class Clock(float):
    """A Unix time in seconds: written with its milliseconds (9 significant
    digits would round a 2026 time to 10 s)."""


_KEYS = {}  # key -> its JSON token: a step line repeats the same few hundred


def _key(k):
    tok = _KEYS.get(k)
    if tok is None:
        tok = json.dumps(k)
        if len(_KEYS) < 4096:
            _KEYS[k] = tok
    return tok


def encode(pairs):
    """One line from (key, value) pairs, in order. Strings, lists and dicts
    go through json.dumps; numbers through number()."""
    out = []
    for k, v in pairs:
        if isinstance(v, Clock):
            tok = "%.3f" % v if math.isfinite(v) else "null"
        elif isinstance(v, (str, list, dict)):
            tok = json.dumps(v, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        else:
            tok = number(v)
        out.append(_key(k) + ":" + tok)
    return "{" + ",".join(out) + "}\n"


def planted(path):
    """Why path, in a sticky world-writable directory (/tmp), may have been
    put there by another user to have this run write a file of theirs
    choosing, or None: a symbolic link neither ours nor the directory
    owner's (the kernel's protected_symlinks rule, whatever the sysctl),
    or another user's file, which only root could replace."""
    try:
        st = os.lstat(path)
        ds = os.stat(os.path.dirname(os.path.abspath(path)))
    except OSError:
        return None
    me = os.geteuid()
    if not (ds.st_mode & stat.S_ISVTX and ds.st_mode & stat.S_IWOTH) or st.st_uid in (me, ds.st_uid):
        return None
    if stat.S_ISLNK(st.st_mode):
        return ("a symbolic link of another user (uid %d) in a shared sticky directory: not "
                "followed" % st.st_uid)
    if stat.S_ISREG(st.st_mode) and me != 0:
        return ("a file of another user (uid %d) in a shared sticky directory: it could not be "
                "replaced" % st.st_uid)
    return None


class Writer:
    """Appends lines to a stream file, flushing each one.

    A file that already holds data is refused unless overwrite is true, so
    two runs never interleave in one stream by accident; so is a file or
    link another user planted in a shared directory (planted)."""

    def __init__(self, path, overwrite=False):
        self.path = path
        why = planted(path)
        if why is not None:
            raise ValueError("normscope_probe: %s: %s" % (path, why))
        if not overwrite and os.path.exists(path) and os.path.getsize(path) > 0:
            raise ValueError("normscope_probe: %s already holds a stream; pass overwrite=True "
                             "to attach() to replace it, or choose another path" % path)
        self.f = open(path, "w", encoding="utf-8")

    def line(self, pairs):
        self.f.write(encode(pairs))
        self.f.flush()

    def event(self, kind, step, text):
        self.line([("event", kind), ("step", step), ("text", text)])

    def close(self):
        if self.f is not None:
            self.f.close()
            self.f = None
