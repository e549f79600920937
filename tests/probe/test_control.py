"""test_control.py - commands through the control file: "1 pause" stops the
stream's step counter until "2 resume", "3 lr x2" doubles the stream's lr,
a checkpoint is saved and loads, a bad line becomes a note, a half-written
line waits for its newline, and every applied command is an event line.
A control file another user could have planted (a symbolic link, another
uid's file, one writable by others) steers nothing, leaks nothing and is
said once; a checkpoint that cannot be written is a note, not an
exception out of step()."""
import os
import stat
import threading
import time

import check
import models
import torch

import normscope_probe

C = check.Check("probe control")
torch.set_num_threads(1)
TMP = C.tmpdir()
PATH = os.path.join(TMP, "run.nsj")
CTL = PATH + ".ctl"


def train(stop, errors):
    try:
        m = models.GPT(n_layer=2)
        opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
        gen = torch.Generator().manual_seed(1)
        with normscope_probe.attach(m, opt, path=PATH) as probe:
            while not stop.is_set():
                x, y = models.batch(gen)
                opt.zero_grad()
                loss = m(x, y)
                loss.backward()
                probe.step(loss)
                opt.step()
                time.sleep(0.01)
    except Exception as e:  # reported by the main thread
        errors.append(e)


def stream():
    try:
        return check.read_stream(PATH)
    except (OSError, ValueError):
        return None, [], []


def last_step():
    rows = stream()[1]
    return rows[-1]["step"] if rows else 0


def wait_for(cond, what, timeout=20.0):
    end = time.time() + timeout
    while time.time() < end:
        if cond():
            return True
        time.sleep(0.02)
    return C.ok(False, "timed out waiting for " + what)


def send(text):
    with open(CTL, "a") as f:
        f.write(text)


def events(kind):
    """The stream's events of a kind (not the header's note of what the
    model does not show: the commands' notes are counted)."""
    return [e for e in stream()[2] if e["event"] == kind and "unknown" not in e]


def pause_resume():
    wait_for(lambda: last_step() >= 3, "3 steps")
    send("1 pause\n")
    wait_for(lambda: events("paused"), "the paused event")
    held = last_step()
    time.sleep(0.6)
    C.ok(last_step() == held, "paused: the step counter stays at %d (now %d)" % (held, last_step()))
    C.ok(events("paused")[0]["step"] == held + 1, "paused before the next step")
    send("2 res")  # half a line: not applied until its newline
    time.sleep(0.4)
    C.ok(last_step() == held and not events("resumed"), "a half-written line waits")
    send("ume\n")
    wait_for(lambda: last_step() > held + 2, "steps after resume")
    C.ok(len(events("resumed")) == 1, "resumed event written")


def lr_double():
    before = stream()[1][-1]["lr"]
    send("3 lr x2\n")
    wait_for(lambda: events("setting"), "the setting event")
    ev = events("setting")[0]
    C.ok(ev["text"].startswith("lr x2"), "setting event says lr x2 (%s)" % ev["text"])
    wait_for(lambda: last_step() > ev["step"] + 1, "steps after lr x2")
    rows = stream()[1]
    after = [r["lr"] for r in rows if r["step"] >= ev["step"]]
    old = [r["lr"] for r in rows if r["step"] < ev["step"]]
    C.ok(all(check.rel(v, 2 * before) < 1e-12 for v in after) and
         all(v == before for v in old), "lr doubles from the event's step on")


def checkpoint_and_bad_line():
    send("4 checkpoint\nnonsense\n5 lr x-3\n")
    wait_for(lambda: len(events("note")) >= 2 and events("checkpoint"), "checkpoint and notes")
    ck = events("checkpoint")[0]
    # applied at probe.step of step N, before its optimizer.step: N - 1 updates done
    path = "%s.step%d.pt" % (PATH, ck["step"] - 1)
    state = torch.load(path) if os.path.exists(path) else {}
    C.ok(set(state) >= {"model", "optimizer", "updates"} and state["updates"] == ck["step"] - 1,
         "checkpoint saved next to the stream with model and optimizer state, named and "
         "stamped with the updates done")
    C.ok(len(events("note")) == 2 and len(events("setting")) == 1,
         "bad lines are notes and change nothing")


def old_commands_ignored():
    """A control file left by an earlier run is not replayed."""
    p = os.path.join(TMP, "old.nsj")
    with open(p + ".ctl", "w") as f:
        f.write("1 pause\n")
    m = models.GPT(n_layer=1)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    gen = torch.Generator().manual_seed(2)
    with normscope_probe.attach(m, opt, path=p) as probe:
        for _ in range(2):
            x, y = models.batch(gen)
            m(x, y).backward()
            probe.step(0.0)
            opt.step()
        with open(p + ".ctl", "a") as f:
            f.write("1 lr x2\n2 lr x0.5\n")  # seq 1 was seen: only seq 2 applies
        probe.step(0.0)
        opt.step()
    C.ok(not probe.paused and abs(opt.param_groups[0]["lr"] - 0.05) < 1e-12,
         "old commands are not replayed; an old sequence number is skipped")


def short_run(path, steps=3, lr=0.1):
    """A few steps of a 1-block model streaming to path: (optimizer, the
    stream's events, an exception raised by step() or None)."""
    m = models.GPT(n_layer=1)
    opt = torch.optim.SGD(m.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(3)
    raised = None
    try:
        with normscope_probe.attach(m, opt, path=path) as probe:
            for _ in range(steps):
                x, y = models.batch(gen)
                m(x, y).backward()
                probe.step(0.0)
                opt.step()
    except Exception as e:
        raised = e
    return opt, check.read_stream(path)[2], raised


def hostile_control_files():
    """Each planted .ctl: the LR it asks for is not applied, one note says
    why, nothing of the file's text reaches the stream, and a file it
    links to is left as it was."""
    secret = os.path.join(TMP, "secret.txt")
    with open(secret, "w") as f:
        f.write("1 lr x1000000\naws_secret_access_key=AKIAXYZ\n")
    os.chmod(secret, 0o600)
    cases = [("link", "symbolic link")]
    if os.geteuid() == 0:
        cases.append(("other", "owned by uid 4242"))
    cases.append(("world", "writable by"))
    cases.append(("zero", "symbolic link"))
    for kind, words in cases:
        p = os.path.join(TMP, "hostile_%s.nsj" % kind)
        ctl = p + ".ctl"
        if kind == "link":
            os.symlink(secret, ctl)
        elif kind == "zero":
            os.symlink("/dev/zero", ctl)
        else:
            with open(ctl, "w") as f:
                f.write("")
            if kind == "other":
                os.chown(ctl, 4242, 4242)
            else:
                os.chmod(ctl, 0o666)
        # commands arrive after the probe opened the file, as an attacker's would
        orig = normscope_probe.probe.Probe._commands
        if kind in ("other", "world"):
            def late(self, _orig=orig, _ctl=ctl):
                if self.n == 2 and not getattr(self, "_planted", False):
                    self._planted = True
                    with open(_ctl, "a") as f:
                        f.write("1 lr x1000000\n2 checkpoint\n")
                return _orig(self)
            normscope_probe.probe.Probe._commands = late
        t0 = time.time()
        try:
            opt, evs, raised = short_run(p)
        finally:
            normscope_probe.probe.Probe._commands = orig
        notes = [e["text"] for e in evs if e["event"] == "note"]
        said = [n for n in notes if "control file" in n and words in n]
        C.ok(raised is None and abs(opt.param_groups[0]["lr"] - 0.1) < 1e-12,
             "%s .ctl: the run goes on and its lr stays 0.1 (%s)" % (kind, opt.param_groups[0]["lr"]))
        C.ok(len(said) == 1, "%s .ctl: one note says it is ignored (%s)" % (kind, notes))
        C.ok(not any("aws_secret" in e.get("text", "") or "AKIA" in e.get("text", "") for e in evs),
             "%s .ctl: nothing of the file's text is in the stream" % kind)
        C.ok(not [e for e in evs if e["event"] == "checkpoint"] and
             not [f for f in os.listdir(TMP) if f.startswith("hostile_%s.nsj.step" % kind)],
             "%s .ctl: no checkpoint written on its word" % kind)
        C.ok(time.time() - t0 < 60, "%s .ctl: the run did not hang" % kind)
    with open(secret) as f:
        C.ok(f.read() == "1 lr x1000000\naws_secret_access_key=AKIAXYZ\n" and
             stat.S_IMODE(os.stat(secret).st_mode) == 0o600,
             "the file the link points at is unchanged (no ack appended)")


def own_control_file_private():
    """The probe makes the control file itself, 0600, when there is none."""
    p = os.path.join(TMP, "own.nsj")
    short_run(p, steps=1)
    st = os.lstat(p + ".ctl")
    C.ok(stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600,
         "the control file is made 0600 (%o)" % stat.S_IMODE(st.st_mode))


def checkpoint_unwritable():
    """A checkpoint whose target cannot be replaced (a directory is in its
    place) is a note; step() raises nothing, and nothing is left behind."""
    p = os.path.join(TMP, "nock.nsj")
    with open(p + ".ctl", "w") as f:
        f.write("1 at-start checkpoint\n")
    os.chmod(p + ".ctl", 0o600)
    os.mkdir(p + ".step0.pt")
    opt, evs, raised = short_run(p, steps=2)
    notes = [e["text"] for e in evs if e["event"] == "note"]
    C.ok(raised is None, "a checkpoint that cannot be written raises nothing out of step() (%r)"
         % raised)
    C.ok(any(n.startswith("checkpoint nock.nsj.step0.pt not written:") for n in notes),
         "a note says the checkpoint was not written (%s)" % notes)
    C.ok(not [f for f in os.listdir(TMP) if f.startswith(".nock.nsj.step0.pt.")],
         "no temp file is left")


def checkpoint_ignores_planted_temp():
    """The temp name is random and made with O_EXCL: a link planted at the
    name an older probe used (path.tmp.PID) is never written through."""
    p = os.path.join(TMP, "plant.nsj")
    victim = os.path.join(TMP, "victim.txt")
    with open(victim, "w") as f:
        f.write("thesis\n")
    with open(p + ".ctl", "w") as f:
        f.write("1 at-start checkpoint\n")
    os.chmod(p + ".ctl", 0o600)
    os.symlink(victim, "%s.step0.pt.tmp.%d" % (p, os.getpid()))
    _, evs, raised = short_run(p, steps=2)
    with open(victim) as f:
        C.ok(f.read() == "thesis\n" and raised is None and os.path.isfile(p + ".step0.pt"),
             "a planted temp link is not written through; the checkpoint is written")


def planted_stream_link():
    """A link another user planted at the stream's name in a sticky
    directory: attach() refuses it in one line and writes nothing through
    it. Root can give a link away."""
    if os.geteuid() != 0:
        return
    shared = os.path.join(TMP, "shared")
    os.mkdir(shared)
    os.chmod(shared, 0o1777)
    victim = os.path.join(TMP, "thesis.txt")
    with open(victim, "w") as f:
        f.write("thesis\n")
    link = os.path.join(shared, "run.nsj")
    os.symlink(victim, link)
    os.lchown(link, 4242, 4242)
    m = models.GPT(n_layer=1)
    try:
        normscope_probe.attach(m, torch.optim.SGD(m.parameters(), lr=0.1), path=link)
        raised = None
    except ValueError as e:
        raised = str(e)
    with open(victim) as f:
        C.ok(raised is not None and "not followed" in raised and "uid 4242" in raised and
             "\n" not in raised and f.read() == "thesis\n",
             "a planted link at the stream's name is refused and not written through (%s)" % raised)


stop, errors = threading.Event(), []
th = threading.Thread(target=train, args=(stop, errors), daemon=True)
th.start()
try:
    pause_resume()
    lr_double()
    checkpoint_and_bad_line()
finally:
    stop.set()
    th.join(20)
C.ok(not errors, "training thread raised nothing (%s)" % errors[:1])
old_commands_ignored()
hostile_control_files()
own_control_file_private()
checkpoint_unwritable()
checkpoint_ignores_planted_temp()
planted_stream_link()
C.close()
