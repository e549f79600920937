"""test_sched.py - controls that stick: lr x2 under OneCycleLR (passed or
not) and LambdaLR (passed) stays doubled through the schedule; a LambdaLR
not passed warns at attach, the stream says when the LR changed back, and
the factor is kept from there; a hand-written schedule (nanoGPT's get_lr()
every iteration) keeps an lr x0.5 command and a fix at every step;
no PyTorch "optimizer.step() has been overridden" warning; commands are
acknowledged with their step; a pause sent before the run started is
applied at its first step."""
import math
import os
import threading
import time
import warnings

import check
import models
import torch

import normscope_probe

C = check.Check("probe sched")
torch.set_num_threads(1)
TMP = C.tmpdir()
STEPS, AT = 8, 3


def run(name, make_sched, passed):
    """lrs of every step with lr x2 sent before step AT, and of the same run
    without it; the stream's events; the warnings."""
    out = []
    for send in (False, True):
        torch.manual_seed(0)
        m = models.GPT(n_layer=1)
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        sch = make_sched(opt)
        path = os.path.join(TMP, "%s_%d.nsj" % (name, send))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            p = normscope_probe.attach(m, opt, path=path, scheduler=sch if passed else None)
            gen = torch.Generator().manual_seed(1)
            lrs = []
            for s in range(1, STEPS + 1):
                if send and s == AT:
                    with open(path + ".ctl", "a") as f:
                        f.write("1 lr x2\n")
                x, y = models.batch(gen)
                m(x, y).backward()
                p.step(0.0)
                lrs.append(opt.param_groups[0]["lr"])
                opt.step()
                opt.zero_grad()
                sch.step()
            p.close()
        ev = check.read_stream(path)[2]
        out.append((lrs, ev, [str(x.message) for x in w]))
    return out


def onecycle(opt):
    return torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=STEPS + 1)


def lam(opt):
    return torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0 / (1 + s))


def sticks(name, make, passed):
    (base, _, _), (lrs, ev, warns) = run(name, make, passed)
    ok = all(check.rel(a, 2 * b) < 1e-9 for a, b in zip(lrs[AT - 1:], base[AT - 1:])) and \
        lrs[:AT - 1] == base[:AT - 1]
    C.ok(ok, "%s: lr x2 holds through the schedule (%s vs %s)" % (name, lrs, base))
    C.ok(not [e for e in ev if e.get("lr_undone")], "%s: no 'changed back' event" % name)
    C.ok(not [x for x in warns if "overridden" in x] and
         len([x for x in warns if "normscope_probe" in x]) == (0 if passed else 1),
         "%s: no PyTorch warning; the probe's only when not passed (%s)" % (name, warns))
    acks = [e for e in ev if e["event"] == "ack"]
    C.ok([(a["seq"], a["step"]) for a in acks] == [(1, AT)] and
         acks[0]["text"] == "lr x2 applied at step %d" % AT, "%s: acknowledged (%s)" % (name, acks))


sticks("onecycle passed", onecycle, True)
sticks("onecycle not passed", onecycle, False)
sticks("lambda passed", lam, True)
(base, _, _), (lrs, ev, warns) = run("lambda", lam, False)
C.ok(len([x for x in warns if "scheduler" in x and "normscope_probe" in x]) == 1,
     "LambdaLR not passed: attach() warns (%s)" % warns)
undone = [e for e in ev if e.get("lr_undone")]
C.ok(len(undone) == 1 and undone[0]["step"] == AT + 1 and "changed back" in undone[0]["text"] and
     "its bases are scaled" in undone[0]["text"],
     "LambdaLR not passed: the stream says the LR changed back and the factor is kept (%s)" % undone)
C.ok(all(check.rel(a, 2 * b) < 1e-9 for a, b in zip(lrs[AT - 1:], base[AT - 1:])),
     "and lr x2 holds through the schedule from there (%s vs %s)" % (lrs, base))


def far_undo():
    """A scheduler not passed that steps every 50 steps: the LambdaLR
    undoes the lr x2 sent at step 61 at step 101, forty steps on, and the
    stream says so there; an ExponentialLR (which scales the LR it finds)
    stepped every 10 keeps it, and nothing is said."""
    for name, make in (("lambda", lambda o: torch.optim.lr_scheduler.LambdaLR(
            o, lambda k: 1.0 / (1 + k))),
            ("exponential", lambda o: torch.optim.lr_scheduler.ExponentialLR(o, 0.9))):
        m = torch.nn.Sequential(torch.nn.ModuleList([torch.nn.Linear(4, 4)]))
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        sch = make(opt)
        path = os.path.join(TMP, "far_%s.nsj" % name)
        interval = 50 if name == "lambda" else 10
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            p = normscope_probe.attach(m, opt, path=path, every=20)
        x = torch.randn(2, 4)
        lrs = []
        for s in range(1, 121):
            if s == 61:
                with open(path + ".ctl", "a") as f:
                    f.write("1 lr x2\n")
            m[0][0](x).sum().backward()
            p.step(0.0)
            lrs.append(opt.param_groups[0]["lr"])
            opt.step()
            opt.zero_grad()
            if s % interval == 0:
                sch.step()
        p.close()
        undone = [(e["step"], e["text"]) for e in check.read_stream(path)[2] if e.get("lr_undone")]
        if name == "lambda":
            C.ok(len(undone) == 1 and undone[0][0] == 101 and "at step 61" in undone[0][1] and
                 "at step 101" in undone[0][1],
                 "LambdaLR stepped every 50: the undo 40 steps on is said at step 101 (%s)"
                 % undone)
        else:
            C.ok(not undone and check.rel(lrs[-1], 2 * 0.1 * 0.9 ** 11) < 1e-9,
                 "ExponentialLR keeps lr x2 through its steps: nothing said (%s, lr %g)"
                 % (undone, lrs[-1]))


far_undo()


def call_order():
    """minGPT's trainer calls back after the update: forward, backward,
    clip_grad_norm_, optimizer.step(), then step() from on_batch_end. The
    stream says once that step() comes after the update and once that the
    gradients it reads are clipped; the right order says neither; a probe
    attached after training began says so."""
    def train(name, late, clip, before=0):
        torch.manual_seed(0)
        m = models.GPT(n_layer=1)
        opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
        gen = torch.Generator().manual_seed(4)
        for _ in range(before):  # steps before attach()
            m(*models.batch(gen)).backward()
            opt.step()
            opt.zero_grad()
        path = os.path.join(TMP, "order_%s.nsj" % name)
        with normscope_probe.attach(m, opt, path=path) as p:
            for _ in range(12):
                opt.zero_grad()
                loss = m(*models.batch(gen))
                loss.backward()
                if clip:
                    torch.nn.utils.clip_grad_norm_(m.parameters(), 0.05)
                if late:
                    opt.step()
                    p.step(loss)
                else:
                    p.step(loss)
                    opt.step()
        return [e["text"] for e in check.read_stream(path)[2]
                if e["event"] == "note" and "unknown" not in e]
    late = train("late", True, True)
    after = [n for n in late if "after optimizer.step()" in n]
    clipped = [n for n in late if "clipped" in n and "0.05" in n]
    C.ok(len(after) == 1 and len(clipped) == 1,
         "a callback after the update: said once, and the clipped gradients once (%s)" % late)
    right = train("right", False, False)
    C.ok(not right, "the right order says nothing (%s)" % right)
    attached = train("attached", False, False, before=2)
    C.ok(len(attached) == 1 and "attached after training began" in attached[0],
         "attached after two updates: said once (%s)" % attached)


call_order()


def hand_schedule():
    """nanoGPT's loop sets every group's LR by hand at each iteration
    (get_lr: a linear warmup, then cosine). lr x0.5 sent at step 5 and a
    fix's lr x0.1 at step 12 hold at every step after, on top of the LR
    the script sets: the stream says once that the script undid it and
    that the factor is applied again at every step."""
    def get_lr(it, warm=4, top=6e-3, low=6e-4, decay=30):
        if it < warm:
            return top * (it + 1) / (warm + 1)
        r = min(1.0, (it - warm) / (decay - warm))
        return low + 0.5 * (1.0 + math.cos(math.pi * r)) * (top - low)
    m = models.GPT(n_layer=1)
    opt = torch.optim.AdamW([{"params": list(m.parameters())[:3]},
                             {"params": list(m.parameters())[3:]}], lr=6e-3)
    path = os.path.join(TMP, "hand.nsj")
    gen = torch.Generator().manual_seed(1)
    got, want = [], []
    with normscope_probe.attach(m, opt, path=path) as p:
        for it in range(20):
            for g in opt.param_groups:
                g["lr"] = get_lr(it)
            if it == 4:
                with open(path + ".ctl", "a") as f:
                    f.write("1 lr x0.5\n")
            if it == 11:
                with open(path + ".ctl", "a") as f:
                    f.write("2 lr x0.1\n")
            x, y = models.batch(gen)
            loss = m(x, y)
            loss.backward()
            p.step(loss)
            got.append([g["lr"] for g in opt.param_groups])
            want.append(get_lr(it) * (1.0 if it < 4 else 0.5 if it < 11 else 0.05))
            opt.step()
            opt.zero_grad()
    ok = all(check.rel(a, w) < 1e-12 for lr, w in zip(got, want) for a in lr)
    C.ok(ok, "a hand-written schedule keeps lr x0.5 and then x0.1 at every step, in both groups "
         "(%s)" % [(round(a[0], 8), round(w, 8)) for a, w in zip(got, want)][3:8])
    ev = check.read_stream(path)[2]
    undone = [e for e in ev if e.get("lr_undone")]
    C.ok(len(undone) == 1 and undone[0]["step"] == 6 and
         "applied again at every step to the LR the script sets" in undone[0]["text"],
         "the stream says once that the script undid it and it is kept (%s)" % undone)
    rows = check.read_stream(path)[1]
    C.ok(all(check.rel(r["lr"], w) < 1e-6 for r, w in zip(rows, want)),
         "each step's lr in the stream is the LR in force (%s)" % [r["lr"] for r in rows][3:8])


hand_schedule()


def early_pause():
    """Space pressed while the view waited for the run: the command is
    written "at-start"; the run pauses before its first step."""
    path = os.path.join(TMP, "early.nsj")
    with open(path + ".ctl", "w") as f:
        f.write("1 at-start pause\n")
    m = models.GPT(n_layer=1)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    done = []

    def train():
        with normscope_probe.attach(m, opt, path=path) as p:
            gen = torch.Generator().manual_seed(1)
            for _ in range(3):
                x, y = models.batch(gen)
                m(x, y).backward()
                p.step(0.0)
                opt.step()
        done.append(1)
    th = threading.Thread(target=train, daemon=True)
    th.start()
    t0 = time.time()
    while '"paused"' not in (open(path).read() if os.path.exists(path) else "") and \
            time.time() - t0 < 30:
        time.sleep(0.05)
    time.sleep(0.3)
    C.ok(not done, "the run is held by the pause sent before it started")
    with open(path + ".ctl", "a") as f:
        f.write("2 resume\n")
    th.join(30)
    _, rows, ev = check.read_stream(path)
    C.ok(done and len(rows) == 3, "resumed, the run finished")
    C.ok([(e["event"], e["step"]) for e in ev if e["event"] in ("paused", "resumed")] ==
         [("paused", 1), ("resumed", 1)], "paused before step 1, resumed there")
    ctl = open(path + ".ctl").read().split("\n")
    C.ok("ack 1 1" in ctl and "ack 2 1" in ctl, "the control file records both acks (%s)" % ctl)
    # a later run to the same path does not replay the acknowledged pause
    p = normscope_probe.attach(m, opt, path=path, overwrite=True)
    x, y = models.batch(torch.Generator().manual_seed(1))
    m(x, y).backward()
    p.step(0.0)
    C.ok(not p.paused, "an acknowledged at-start command is not replayed")
    p.close()


class HookedSGD(torch.optim.SGD):
    """An optimizer with torch 2's register_step_post_hook (this torch may
    not have it): the probe must use it and leave step() alone."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.post = []

    def register_step_post_hook(self, fn):
        self.post.append(fn)

        class Handle:
            def remove(h):
                self.post.remove(fn)
        return Handle()

    def step(self, closure=None):
        out = super().step(closure)
        for fn in list(self.post):
            fn(self, (), {})
        return out


def post_hook():
    m = models.GPT(n_layer=1)
    opt = HookedSGD(m.parameters(), lr=0.1)
    path = os.path.join(TMP, "hooked.nsj")
    p = normscope_probe.attach(m, opt, path=path)
    C.ok("step" not in opt.__dict__ and len(opt.post) == 1,
         "register_step_post_hook used where it exists: step() not wrapped")
    gen = torch.Generator().manual_seed(1)
    for _ in range(3):
        x, y = models.batch(gen)
        m(x, y).backward()
        p.step(0.0)
        opt.step()
    p.close()
    rows = check.read_stream(path)[1]
    C.ok([r["step"] for r in rows] == [1, 2, 3] and all(r["skipped"] == 0 for r in rows) and
         rows[0]["l0_update_ratio"] is not None and not opt.post,
         "rows after each optimizer step, the update ratio measured, the hook removed at close")


early_pause()
post_hook()
C.close()
