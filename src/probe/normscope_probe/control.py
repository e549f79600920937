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

The file steers a run, so only the run's own user may write it: it is
opened without following a symlink (O_NOFOLLOW), and one that is not a
regular file, not owned by this process's user, or writable by group or
others is not read; `refused` then says why, once. A line that is not a
command is refused without being echoed (the file may be a link to a
secret), and each poll reads at most READ_MAX bytes.
"""
import enum
import math
import os
import stat

READ_MAX = 1 << 16  # bytes a poll reads; the rest waits for the next


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
        return None, Code.BAD, 0.0, "a control line is not '<seq> <command>'"
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
        return seq, Code.BAD, 0.0, "control %d: lr factor must be a number in (0, 1e6]" % seq
    return seq, Code.BAD, 0.0, ("control %d: not a command (allowed: pause, resume, lr xF, "
                                "checkpoint)" % seq)


def untrusted(st):
    """Why a control file with this fstat may not steer the run, or None."""
    if not stat.S_ISREG(st.st_mode):
        return "it is not a regular file"
    if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
        return "it is owned by uid %d, not by this run's user (uid %d)" % (st.st_uid, os.geteuid())
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return "it is writable by %s" % ("group and others" if st.st_mode & stat.S_IWGRP and
                                         st.st_mode & stat.S_IWOTH else
                                         "its group" if st.st_mode & stat.S_IWGRP else "others")
    return None


def open_checked(path, flags, mode=0o600):
    """(fd, None) for path opened without following a symlink and trusted
    as a control file; (None, reason) else; (None, None) when it does not
    exist (and flags do not create it)."""
    flags |= getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | \
        getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags, mode)
    except FileNotFoundError:
        return None, None
    except OSError as e:
        if os.path.islink(path):
            return None, "it is a symbolic link"
        return None, e.strerror or str(e)
    why = untrusted(os.fstat(fd))
    if why is not None:
        os.close(fd)
        return None, why
    return fd, None


class Reader:
    def __init__(self, path):
        self.path = path
        self.offset = 0
        self.last_seq = 0
        self.sig = None
        self.early = []  # at-start commands no run acknowledged, applied first
        self.refused = None  # why the file is not read, while it is not
        self._said = None    # the refusal take_refusal returned last
        self._more = False   # the last read stopped at READ_MAX
        self._create()
        st = self._stat()
        if st is not None:  # commands left from an earlier run are not ours
            self.offset = st.st_size
            self.sig = (st.st_size, st.st_mtime_ns)
            self._scan_old()

    def _create(self):
        """Make the file, ours and 0600, unless it exists: then it is
        checked as it is read."""
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL |
                         getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0), 0o600)
            os.close(fd)
        except OSError:
            pass

    def _stat(self):
        try:
            return os.lstat(self.path)
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
        """Whole lines from offset, at most READ_MAX bytes, of a file that
        passes open_checked; ([], 0) from any other."""
        fd, why = open_checked(self.path, os.O_RDONLY)
        if fd is None:
            if why is not None and self.refused is None:
                self.refused = "control file %s ignored: %s" % (os.path.basename(self.path), why)
            return [], 0
        self.refused = None
        try:
            data = os.pread(fd, READ_MAX, offset)
        except OSError:
            data = b""
        finally:
            os.close(fd)
        self._more = len(data) == READ_MAX
        end = data.rfind(b"\n") + 1  # whole lines only
        return data[:end].split(b"\n")[:-1], end

    def take_refusal(self):
        """The reason the file is ignored, the first time it is (and again
        after it was trusted in between); None otherwise."""
        if self.refused == self._said:
            return None
        self._said = self.refused
        return self.refused

    def ack(self, seq, step):
        """Record in the file that command seq was dealt with at step."""
        if seq is None:
            return
        fd, _ = open_checked(self.path, os.O_WRONLY | os.O_APPEND)
        if fd is None:
            return  # the stream's ack event still says it
        try:
            os.write(fd, b"ack %d %d\n" % (seq, step))  # one write: never half a line
        except OSError:
            pass
        finally:
            os.close(fd)

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
        if not lines and self._more:  # a "line" of READ_MAX bytes: not a command
            self.offset += READ_MAX
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
        self.sig = (st2.st_size, st2.st_mtime_ns) \
            if st2 is not None and len(out) < limit and not self._more else None
        return out
