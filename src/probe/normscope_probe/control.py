"""control.py - reading commands from the control file beside a stream.

normscope --follow appends lines "<seq> <command>" to "<stream>.ctl". The
reader remembers the byte offset it has consumed and the last sequence
number applied, looks at the file with one os.stat per call, and returns
only whole new lines (a line still being written waits for its newline).
A file that shrank was replaced: it is read again from the start, and lines
whose sequence number was already applied are skipped.

It parses; it does not apply (the probe does, at a step boundary).
"""
import math
import os

# Command codes, also what crosses a torch.distributed broadcast.
PAUSE, RESUME, LR, CHECKPOINT, BAD = 1, 2, 3, 4, 5


def parse(line):
    """(seq, code, factor, text) for one control line; code BAD with the
    reason as text when the line is not a command."""
    parts = line.strip().split(None, 1)
    if len(parts) != 2 or not parts[0].isdigit():
        return None, BAD, 0.0, "control line %r is not '<seq> <command>'" % line.strip()[:60]
    seq, cmd = int(parts[0]), " ".join(parts[1].split())
    if cmd == "pause":
        return seq, PAUSE, 0.0, cmd
    if cmd == "resume":
        return seq, RESUME, 0.0, cmd
    if cmd == "checkpoint":
        return seq, CHECKPOINT, 0.0, cmd
    if cmd.startswith("lr x"):
        try:
            f = float(cmd[4:])
        except ValueError:
            f = float("nan")
        if math.isfinite(f) and 0 < f <= 1e6:
            return seq, LR, f, cmd
        return seq, BAD, 0.0, "control %d: lr factor must be a number in (0, 1e6]: %r" % (seq, cmd)
    return seq, BAD, 0.0, ("control %d: unknown command %r (allowed: pause, resume, lr xF, "
                           "checkpoint)" % (seq, cmd[:40]))


class Reader:
    def __init__(self, path):
        self.path = path
        self.offset = 0
        self.last_seq = 0
        self.sig = None
        st = self._stat()
        if st is not None:  # commands left from an earlier run are not ours
            self.offset = st.st_size
            self.sig = (st.st_size, st.st_mtime_ns)
            self.last_seq = self._last_seq_in_file()

    def _stat(self):
        try:
            return os.stat(self.path)
        except OSError:
            return None

    def _last_seq_in_file(self):
        seq = 0
        for raw in self._read_from(0)[0]:
            s = parse(raw.decode("utf-8", "replace"))[0]
            if s is not None:
                seq = max(seq, s)
        return seq

    def _read_from(self, offset):
        try:
            with open(self.path, "rb") as f:
                f.seek(offset)
                data = f.read()
        except OSError:
            return [], 0
        end = data.rfind(b"\n") + 1  # whole lines only
        return data[:end].split(b"\n")[:-1], end

    def poll(self, limit):
        """Up to limit new commands [(seq, code, factor, text)]; the rest
        stay for the next call."""
        st = self._stat()
        if st is None:
            return []
        sig = (st.st_size, st.st_mtime_ns)
        if sig == self.sig:
            return []
        if st.st_size < self.offset:  # replaced or truncated
            self.offset = 0
        lines, _ = self._read_from(self.offset)
        out, used = [], 0
        for raw in lines:
            if len(out) >= limit:
                break
            used += len(raw) + 1
            text = raw.decode("utf-8", "replace")
            if not text.strip():
                continue
            cmd = parse(text)
            if cmd[0] is not None and cmd[0] <= self.last_seq:
                continue
            if cmd[0] is not None:
                self.last_seq = cmd[0]
            out.append(cmd)
        self.offset += used
        # when commands are left, forget the signature so the next call reads on
        self.sig = sig if len(out) < limit else None
        return out
