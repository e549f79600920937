"""control.py - reading commands from the control file beside a stream.

normscope --follow appends lines "<seq> <command>" to "<stream>.ctl"; a
command sent before any run had started is written "<seq> at-start
<command>". The probe appends "ack <seq> <step>" once it applied (or
refused) a command, so a later run knows what was done.

The reader remembers the byte offset it has consumed and the last sequence
number applied, looks at the file with one os.stat per call, and returns
only whole new lines (a line still being written waits for its newline).
A file that shrank was replaced: it is read again from the start, and lines
whose sequence number was already applied are skipped.

At open, commands already in the file belong to an earlier run and are not
replayed, except "at-start" ones that no run acknowledged: those were sent
for this run before it began.

It parses; it does not apply (the probe does, at a step boundary).
"""
import enum
import math
import os


class Code(enum.IntEnum):
    """Command codes; also what crosses a torch.distributed broadcast."""
    PAUSE = 1
    RESUME = 2
    LR = 3
    CHECKPOINT = 4
    BAD = 5


AT_START = "at-start "


def parse(line):
    """(seq, code, factor, text) for one control line; code BAD with the
    reason as text when the line is not a command; None for an ack line."""
    parts = line.strip().split(None, 1)
    if parts and parts[0] == "ack":
        return None
    if len(parts) != 2 or not parts[0].isdigit():
        return None, Code.BAD, 0.0, "control line %r is not '<seq> <command>'" % line.strip()[:60]
    seq, cmd = int(parts[0]), " ".join(parts[1].split())
    if cmd.startswith(AT_START):
        cmd = cmd[len(AT_START):]
    if cmd == "pause":
        return seq, Code.PAUSE, 0.0, cmd
    if cmd == "resume":
        return seq, Code.RESUME, 0.0, cmd
    if cmd == "checkpoint":
        return seq, Code.CHECKPOINT, 0.0, cmd
    if cmd.startswith("lr x"):
        try:
            f = float(cmd[4:])
        except ValueError:
            f = float("nan")
        if math.isfinite(f) and 0 < f <= 1e6:
            return seq, Code.LR, f, cmd
        return seq, Code.BAD, 0.0, "control %d: lr factor must be a number in (0, 1e6]: %r" % (seq, cmd)
    return seq, Code.BAD, 0.0, ("control %d: unknown command %r (allowed: pause, resume, lr xF, "
                                "checkpoint)" % (seq, cmd[:40]))


class Reader:
    def __init__(self, path):
        self.path = path
        self.offset = 0
        self.last_seq = 0
        self.sig = None
        self.early = []  # at-start commands no run acknowledged, applied first
        st = self._stat()
        if st is not None:  # commands left from an earlier run are not ours
            self.offset = st.st_size
            self.sig = (st.st_size, st.st_mtime_ns)
            self._scan_old()

    def _stat(self):
        try:
            return os.stat(self.path)
        except OSError:
            return None

    def _scan_old(self):
        acked, early = set(), []
        for raw in self._read_from(0)[0]:
            text = raw.decode("utf-8", "replace")
            words = text.split()
            if len(words) >= 2 and words[0] == "ack" and words[1].isdigit():
                acked.add(int(words[1]))
                continue
            cmd = parse(text)
            if cmd is None or cmd[0] is None:
                continue
            self.last_seq = max(self.last_seq, cmd[0])
            if text.split(None, 1)[1].startswith(AT_START):
                early.append(cmd)
        self.early = [c for c in early if c[0] not in acked]

    def _read_from(self, offset):
        try:
            with open(self.path, "rb") as f:
                f.seek(offset)
                data = f.read()
        except OSError:
            return [], 0
        end = data.rfind(b"\n") + 1  # whole lines only
        return data[:end].split(b"\n")[:-1], end

    def ack(self, seq, step):
        """Record in the file that command seq was dealt with at step."""
        if seq is None:
            return
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, b"ack %d %d\n" % (seq, step))  # one write: never half a line
            finally:
                os.close(fd)
        except OSError:
            pass  # the stream's ack event still says it

    def poll(self, limit):
        """Up to limit new commands [(seq, code, factor, text)]; the rest
        stay for the next call."""
        out = self.early[:limit]
        self.early = self.early[limit:]
        if len(out) >= limit:
            return out
        st = self._stat()
        if st is None:
            return out
        sig = (st.st_size, st.st_mtime_ns)
        if sig == self.sig:
            return out
        if st.st_size < self.offset:  # replaced or truncated
            self.offset = 0
        lines, _ = self._read_from(self.offset)
        used = 0
        for raw in lines:
            if len(out) >= limit:
                break
            used += len(raw) + 1
            text = raw.decode("utf-8", "replace")
            if not text.strip():
                continue
            cmd = parse(text)
            if cmd is None:  # an ack (ours, or a peer's)
                continue
            if cmd[0] is not None and cmd[0] <= self.last_seq:
                continue
            if cmd[0] is not None:
                self.last_seq = cmd[0]
            out.append(cmd)
        self.offset += used
        # the signature is the file's state with our own ack lines in it:
        # forget it when commands are left, so the next call reads on
        st2 = self._stat()
        self.sig = (st2.st_size, st2.st_mtime_ns) if st2 is not None and len(out) < limit \
            else None
        return out
