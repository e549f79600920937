"""test_torchrun.py - `python3 -m torch.distributed.run --nproc_per_node 2`
with gloo on the CPU: rank 0's stream has the gradient norms of one process
on the same global batch (1e-5 relative), and its mechanism columns (the
output logits, branch share, norm input) the global batch's, world_size 2, and an LR change
from the control file leaves the parameters identical on both ranks, and
a pause holds both ranks at the same step boundary; an inf made on one
rank is named as that rank's module, under both watches; a peer killed
mid-run is named by rank 0's end line."""
import os
import subprocess
import sys

import check
import torch

C = check.Check("probe torchrun")
TMP = C.tmpdir()
WORKER = os.path.join(check.HERE, "ddp_worker.py")
env = dict(os.environ, OMP_NUM_THREADS="1")


def run(args):
    r = subprocess.run([sys.executable] + args, env=env, capture_output=True, text=True,
                       timeout=240)
    C.ok(r.returncode == 0, "%s exits 0 (%s)" % (args[:3], r.stderr[-800:]))


# --redirects/--tee given: torch 1.13's parsing of their default "0" fails on
# Python 3.11 (Std.from_str finds no member), as Debian ships them
run(["-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
     "--redirects", "1", "--tee", "1", "--log_dir", os.path.join(TMP, "logs"),
     WORKER, "--out", TMP])
run([WORKER, "--single", "--out", TMP])
head, ddp, ev = check.read_stream(os.path.join(TMP, "ddp.nsj"))
_, one, _ = check.read_stream(os.path.join(TMP, "single.nsj"))
C.ok(head["world_size"] == 2, "header world_size 2")
C.ok(len(ddp) == len(one) == 6, "6 step lines each")
keys = ["grad_norm"] + ["l%d_%s" % (i, k) for i in range(2)
                        for k in ("grad_attn", "grad_ffn", "grad_ln")]
worst = max(check.rel(a[k], b[k]) for a, b in zip(ddp, one) for k in keys)
C.ok(worst < 1e-5, "DDP grad norms equal one process on the global batch (worst %.2g)" % worst)
acts = ["loss"] + ["l%d_%s" % (i, k) for i in range(2) for k in ("act_max", "resid_max",
                                                                "resid_rms")]
worst = max(check.rel(a[k], b[k]) for a, b in zip(ddp, one) for k in acts)
C.ok(worst < 1e-5, "loss and activation statistics are the global batch's (worst %.2g)" % worst)
# the mechanisms too: attention logits and entropy, branch share, the
# norm's input, the output logits, over the global batch, not rank 0's half
# (the model's attention is by hand, so its logits are unknown; the
# attention's records are sums and maxima reduced as these are)
mechs = ["logz_mean", "logit_max"] + ["l%d_%s" % (i, k) for i in range(2) for k in (
    "branch_ratio", "norm_in_rms")]
seen = [k for k in mechs if all(k in r for r in ddp + one)]
worst = max(check.rel(a[k], b[k]) for a, b in zip(ddp, one) for k in seen) if seen else 1
C.ok(len(seen) == len(mechs) and worst < 1e-5,
     "mechanism columns are the global batch's (%d of %d, worst %.2g)" % (len(seen), len(mechs),
                                                                          worst))
C.ok([e["step"] for e in ev if e["event"] == "setting"] == [3], "one lr event, at step 3")
C.ok([r["lr"] for r in ddp] == [1e-3] * 2 + [2e-3] * 4, "stream lr doubles at step 3")
r0, r1 = (torch.load(os.path.join(TMP, "rank%d.pt" % k)) for k in (0, 1))
C.ok(r0["lr"] == r1["lr"] == 2e-3, "both ranks' optimizers took lr x2")
C.ok(torch.equal(r0["params"], r1["params"]), "parameters identical on both ranks")
C.ok([(e["event"], e["step"]) for e in ev if e["event"] in ("paused", "resumed")] ==
     [("paused", 5), ("resumed", 5)], "paused and resumed at step 5")
C.ok(r0["held"] >= 0.9 and r1["held"] >= 0.9,
     "both ranks held at the step boundary (%.2f s, %.2f s)" % (r0["held"], r1["held"]))

# attach() before init_process_group: the stream opens at the first step,
# once the group exists: one writer, every step, world size 2
run(["-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
     "--redirects", "1", "--tee", "1", "--log_dir", os.path.join(TMP, "logs2"),
     WORKER, "--early", "--out", TMP])
head, early, _ = check.read_stream(os.path.join(TMP, "early.nsj"))  # raises on a bad line
C.ok(head["world_size"] == 2 and [r["step"] for r in early] == list(range(1, 7)),
     "early attach: world_size 2, steps 1..6 (%s)" % [r["step"] for r in early])
worst = max(check.rel(a[k], b[k]) for a, b in zip(early, ddp) for k in keys)
C.ok(worst < 1e-6, "early attach: the same numbers as attach after init (worst %.2g)" % worst)
# an inf made on rank 0 alone: its all-reduce makes rank 1's gradients
# non-finite too, but rank 0's forward came first, and is what is named
for watch in ("replay", "device"):
    env["NORMSCOPE_PROBE_WATCH"] = watch
    run(["-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
         "--redirects", "1", "--tee", "1", "--log_dir", os.path.join(TMP, "logs_" + watch),
         WORKER, "--fault", "--out", TMP])
    _, rows, _ = check.read_stream(os.path.join(TMP, "fault%s.nsj" % watch))
    got = [(r["step"], r.get("first_nonfinite_step"), r.get("first_nonfinite")) for r in rows
           if "first_nonfinite" in r]
    C.ok(got == [(5, 4, "transformer.h.1.attn.c_attn, forward")],
         "%s watch, DDP: rank 0's inf at step 4 named at step 5 (%s)" % (watch, got))
env.pop("NORMSCOPE_PROBE_WATCH")
# rank 1 killed at step 3: rank 0's end line names it, by rank and pid
r = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                    "--nproc_per_node", "2", "--redirects", "1", "--tee", "1", "--log_dir",
                    os.path.join(TMP, "logs_die"), WORKER, "--die", "--out", TMP],
                   env=env, capture_output=True, text=True, timeout=240)
_, rows, ev = check.read_stream(os.path.join(TMP, "die.nsj"))
end = [e for e in ev if e["event"] == "end"]
C.ok(r.returncode != 0 and [x["step"] for x in rows] == [1, 2] and len(end) == 1 and
     end[0].get("dead_ranks") == [1] and "rank 1 ended first (pid " in end[0]["text"] and
     end[0]["reason"] in ("exception", "signal"),
     "a killed peer: rank 0's end line names rank 1 (%s)" % end)
C.close()
