"""test_control.py - commands through the control file: "1 pause" stops the
stream's step counter until "2 resume", "3 lr x2" doubles the stream's lr,
a checkpoint is saved and loads, a bad line becomes a note, a half-written
line waits for its newline, and every applied command is an event line."""
import os
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
    return [e for e in stream()[2] if e["event"] == kind]


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
C.close()
