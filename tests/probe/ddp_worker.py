"""ddp_worker.py - run by test_torchrun.py: a tiny GPT trained with DDP over
gloo on the CPU (or, with --single, in one process on the same global
batch). Rank 0 asks for "lr x2" through the control file at step LR_STEP,
as normscope --follow would; each rank saves its final parameters. With
--fault, rank 0's h.1.attn.c_attn makes an inf at step FAULT_STEP (every=4:
an unwritten step), and nothing is asked through the control file. With
--die, rank 1 is killed at step DIE_STEP: rank 0's collective fails."""
import argparse
import faulthandler
import os
import signal
import threading
import time

import check  # noqa: F401  (sets sys.path)
import models
import torch
import torch.distributed as dist

import normscope_probe
import normscope_probe.mechanism

STEPS, LR_STEP, PAUSE_STEP, GLOBAL_B, FAULT_STEP, DIE_STEP = 6, 3, 5, 8, 4, 3


def append(path, text):
    with open(path, "a") as f:
        f.write(text)


def resume_later(path):
    """As a user would: see the run paused, wait a second, resume it."""
    while '"paused"' not in open(path).read():
        time.sleep(0.05)
    time.sleep(1.0)
    append(path + ".ctl", "3 resume\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--single", action="store_true")
    ap.add_argument("--early", action="store_true",
                    help="attach() before init_process_group (the stream opens at step 1)")
    ap.add_argument("--fault", action="store_true",
                    help="an inf on rank 0 at step FAULT_STEP; every=4; no controls")
    ap.add_argument("--die", action="store_true",
                    help="rank 1 is killed (SIGKILL) before step DIE_STEP; no controls")
    a = ap.parse_args()
    # a worker stuck for minutes prints where, and ends, rather than hang the test
    stuck = open(os.path.join(a.out, "stuck%s.txt" % os.environ.get("LOCAL_RANK", "")), "w")
    faulthandler.dump_traceback_later(60, exit=True, file=stuck)
    torch.set_num_threads(1)
    if a.single:  # the sampled statistics (log Z, attention) read each rank's first
        normscope_probe.mechanism.ATTN_ROWS *= 2  # ATTN_ROWS sequences: 2 ranks' worth
    if a.early:
        torch.manual_seed(0)
        early = models.GPTLogits(n_layer=2)
        probe = normscope_probe.attach(early, torch.optim.AdamW(early.parameters()),
                                       path=os.path.join(a.out, "early.nsj"))
    if not a.single:
        dist.init_process_group("gloo")
    rank = dist.get_rank() if not a.single else 0
    world = dist.get_world_size() if not a.single else 1
    torch.manual_seed(0)
    model = models.GPTLogits(n_layer=2)  # (logits, loss): the output logits measured
    faulty = None
    if a.fault:
        ca = model.transformer.h[1].attn.c_attn
        faulty = models.Faulty(ca.in_features, ca.out_features)
        faulty.load_state_dict(ca.state_dict())
        model.transformer.h[1].attn.c_attn = faulty
    net = torch.nn.parallel.DistributedDataParallel(model) if not a.single else model
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(9)
    path = os.path.join(a.out, "single.nsj" if a.single else "ddp.nsj")
    if a.early:  # the same model, hooked before the group existed
        model = early
        net = torch.nn.parallel.DistributedDataParallel(model)
        opt = probe.optimizer
        path = os.path.join(a.out, "early.nsj")
    elif a.fault:
        path = os.path.join(a.out, "fault%s.nsj" % os.environ.get("NORMSCOPE_PROBE_WATCH", ""))
        probe = normscope_probe.attach(net, opt, path=path, every=4)
    elif a.die:
        path = os.path.join(a.out, "die.nsj")
        probe = normscope_probe.attach(net, opt, path=path)
    else:
        probe = normscope_probe.attach(net, opt, path=path)
    per = GLOBAL_B // world
    for step in range(1, STEPS + 1):
        x, y = models.batch(gen, b=GLOBAL_B)  # every rank draws the global batch
        x, y = x[rank * per:(rank + 1) * per], y[rank * per:(rank + 1) * per]
        if faulty is not None:
            faulty.armed = step == FAULT_STEP and rank == 0
        if a.die and step == DIE_STEP and rank == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        if step == LR_STEP and rank == 0 and not (a.fault or a.die):
            append(path + ".ctl", "1 lr x2\n")
        if step == PAUSE_STEP and rank == 0 and not (a.fault or a.die):  # paused, then resumed
            append(path + ".ctl", "2 pause\n")
            threading.Thread(target=resume_later, args=(path,), daemon=True).start()
        opt.zero_grad()
        loss = net(x, y)[1]
        loss.backward()
        t0 = time.monotonic()
        probe.step(loss)
        if step == PAUSE_STEP:
            held = time.monotonic() - t0
        opt.step()
    probe.close()
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    torch.save({"params": flat, "lr": opt.param_groups[0]["lr"], "held": held},
               os.path.join(a.out, "%s%d.pt" % ("single" if a.single else "rank", rank)))
    if not a.single:
        del probe, net, opt
        dist.barrier()
        dist.destroy_process_group()
    stuck.close()


if __name__ == "__main__":
    main()
