#!/usr/bin/env python3
"""lesson_claims.py - the numbers the lesson texts quote, read from the
texts themselves and compared with the runs tests/sh/lessons.sh just made.

Usage: python3 tests/lib/lesson_claims.py DIR [NAME...]
  DIR holds lessons.sh's files (w.csv, d24.csv, map/results.csv, ...);
  NAME limits the check to the lessons lessons.sh ran (its own arguments).

Each claim is a pattern that finds a quoted number in a text (a lesson
file, normscope-lessons(7) or the README), a function of the runs that
measures the same thing, and a rule with its tolerance:
  round  the run's value, rounded to the digits the text quotes, is the
         quoted number ("3.09" holds for 3.0850..3.0949)
  about  within a stated fraction of the quoted number ("about 2.5")
  le/ge  the run's value at most / at least the quoted one ("within 0.05",
         "passes 2.62")
  exact  equal (a step number: the same bits on every CPU)
A text edited without a new run fails here: its pattern no longer finds
the number, or the number no longer matches the run.

Completeness: every decimal number (one with a point) in a lesson file's
comment, text and script (at, every) lines, in the LESSONS, A LARGER
MAP and WRITING A LESSON sections of the page, in normscope(1)'s LESSONS,
and in the README's parts about lessons (its
figure of the warmup lesson, the stability-map lesson and the stall rule
of sweeps), must be found by a claim or be listed below: as not a
measurement (a flag's value, a constant of the number formats), as
checked by another suite against its own runs, or as not re-run here
(a run too long for CI), each with the reason. A new decimal in a text
without a check fails the suite.
Prints "N passed, N failed"; exits non-zero on any failure.
"""
import csv
import math
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
DIR = sys.argv[1] if len(sys.argv) > 1 else "."
ONLY = set(sys.argv[2:])
passed = failed = skipped = 0


def ok(msg):
    global passed
    passed += 1
    print("  ok: " + msg)


def no(msg):
    global failed
    failed += 1
    print("FAIL: " + msg, file=sys.stderr)


def text_of(src):
    """A text as one string; roff requests of the page turned into plain
    words (".Ic f ," reads "f ,") so a pattern can span its lines."""
    with open(os.path.join(ROOT, src), encoding="utf-8") as f:
        t = f.read()
    if src.endswith(".lesson"):  # a line for some settings reads as any other
        t = re.sub(r"^if [^:]*: ", "", t, flags=re.M)
    if src.endswith((".7", ".1")):
        t = re.sub(r"^\.(?:Ic|Fl|Cm|Ql|Em|Sy|It|Dl|Pa|Ar|Xr|Ss|Sh|No|Pp)\b ?", "", t, flags=re.M)
        t = re.sub(r"\b(?:No|Ic|Cm|Fl) ", "", t)
    return t


def section(t, start, end):
    """The part of t from a line starting `start` to one starting `end`."""
    i = t.find("\n" + start)
    j = t.find("\n" + end, i + 1)
    return t[i:j] if i >= 0 else ""


# ---- the runs ---------------------------------------------------------------

_csv = {}


def rows(name):
    """The rows of DIR/name as dicts; None when lessons.sh did not make it."""
    if name not in _csv:
        p = os.path.join(DIR, name)
        if not os.path.exists(p):
            _csv[name] = None
        else:
            with open(p, newline="") as f:
                _csv[name] = list(csv.DictReader(f))
    return _csv[name]


def at(name, colname, step=None):
    """A column at a step (its first row with that step), or its last
    non-empty value."""
    r = rows(name)
    if step is not None:
        for row in r:
            if int(row["step"]) == step and row[colname] != "":
                return float(row[colname])
        raise KeyError("%s: no %s at step %d" % (name, colname, step))
    vals = [row[colname] for row in r if row[colname] != ""]
    return float(vals[-1])


def cell(layers, lr, norm):
    for row in rows("map/results.csv"):
        if int(row["layers"]) == layers and abs(float(row["lr"]) - lr) < 1e-12 and row["norm"] == norm:
            return float(row["val_loss"])
    raise KeyError("map: no cell %d %g %s" % (layers, lr, norm))


def best(norm, layers):
    """The largest lr at which the cell trained (finished, no stall), or 0."""
    good = [float(r["lr"]) for r in rows("map/results.csv") if r["norm"] == norm and int(r["layers"]) == layers
            and r["status"] == "ok" and r["stalled"] == "0"]
    return max(good) if good else 0


def first_stall(norm, layers):
    """The smallest lr at which the cell stalled, or 0."""
    bad = [float(r["lr"]) for r in rows("map/results.csv") if r["norm"] == norm and int(r["layers"]) == layers
           and r["stalled"] == "1"]
    return min(bad) if bad else 0


def unigram_entropy():
    """The stall rule's plateau: the entropy in nats of the built-in
    corpus's training bytes (all but the last tenth, as data.c splits it),
    the loss of a model that knows only how often each byte occurs."""
    with open(os.path.join(ROOT, "assets/corpus.txt"), "rb") as f:
        b = f.read()
    b = b[:len(b) - len(b) // 10]
    counts = [b.count(bytes([i])) for i in range(256)]
    return -sum(c / len(b) * math.log(c / len(b)) for c in counts if c)


def gap(layers, lr):
    return cell(layers, lr, "post") - cell(layers, lr, "pre")


def gp_seeds():
    """The seeds lessons.sh ran the gradient-profile lesson with
    (gp_SEED_12.csv: five, or one under the sanitizers)."""
    out = []
    for f in os.listdir(DIR):
        m = re.fullmatch(r"gp_(\d+)_12\.csv", f)
        if m:
            out.append(int(m.group(1)))
    if not out:
        raise KeyError("no gp_SEED_12.csv")
    return sorted(out)


def gp(seed, layers, col, run=""):
    """A column of a gradient-profile run at step 1: run a ("") or b
    ("b_"); col may name a layer as TOP (the last one)."""
    name = "gp_%d_%d.csv" % (seed, layers) if layers else "gpn_%d.csv" % seed
    return at(name, run + col.replace("TOP", str((layers or 12) - 1)), 1)


def span(f):
    """[min, max] over the seeds of f(seed)."""
    v = [f(s) for s in gp_seeds()]
    return [min(v), max(v)]


def attn0_share(seed):
    """Post-LN's layer 0 attention gradient over the other layers' mean."""
    return gp(seed, 12, "l0_grad_attn") / others_attn(seed)


def others_attn(seed):
    """Post-LN's mean attention gradient over layers 1 to 11."""
    return sum(gp(seed, 12, "l%d_grad_attn" % i) for i in range(1, 12)) / 11


def init_ratios(seed):
    """Post-LN's MLP gradient at step 1 with Xavier over that with std
    0.02, layer by layer."""
    return [gp(seed, 12, "l%d_grad_ffn" % i) / gp(seed, 0, "l%d_grad_ffn" % i) for i in range(12)]


def map_table():
    """A LARGER MAP's table as the page prints it: (layers, lr) -> (post,
    pre). The runs are too long for CI; what the page says of its gaps is
    checked against its own table, to its rounding."""
    t = text_of(MAN)
    m = re.search(r'Bl -column "layers" "lr 1e-3"[\s\S]*?\.El', t)
    cells = {}
    for ln in m.group(0).splitlines():
        f = [x.strip() for x in ln.split(" Ta ")]
        if len(f) == 4 and re.fullmatch(r"\d+", f[0]):
            cells[(int(f[0]), float(f[1]))] = (float(f[2]), float(f[3]))
    return cells


def positions(err):
    """Tokens a step, B x T, from the run's summary line."""
    with open(os.path.join(DIR, err)) as f:
        m = re.search(r" T=(\d+) B=(\d+)", f.read())
    return int(m.group(1)) * int(m.group(2))


def rewound_at(name):
    """The step after which the step column starts again (a rewind)."""
    steps = [int(r["step"]) for r in rows(name)]
    return next(a for a, b in zip(steps, steps[1:]) if b <= a)


def out_change_1(prefix):
    """out_change at step 1 of run a ("") or b ("b_") of each seed's
    deep-stable run (oc<seed>.csv, five seeds; one under the sanitizers)."""
    names = sorted(n for n in os.listdir(DIR) if re.fullmatch(r"oc\d+\.csv", n))
    return [at(n, prefix + "out_change", 1) for n in names]


def seed_nums(prefix):
    """The seeds of the runs lessons.sh made as PREFIX<seed>.csv (six, or
    one under the sanitizers)."""
    out = sorted(int(m.group(1)) for m in (re.fullmatch(re.escape(prefix) + r"(\d+)\.csv", f) for f in os.listdir(DIR)) if m)
    if not out:
        raise KeyError("no %s<seed>.csv" % prefix)
    return out


def seed_runs(prefix):
    return ["%s%d.csv" % (prefix, s) for s in seed_nums(prefix)]


def seeds_at(prefix, colname, step):
    """A column at a step, on every seed's run."""
    return [at(n, colname, step) for n in seed_runs(prefix)]


def minmax(vals):
    return [min(vals), max(vals)]


def layers(name, col, step):
    """Run a's col over its layers at a step."""
    r = next(x for x in rows(name) if int(x["step"]) == step)
    return [float(r[c]) for c in r if re.fullmatch(r"l\d+_" + col, c)]


def underflows(prefix):
    """Gradient values underflowed at each step of run a ("") or b ("b_"),
    summed over the layers, every step of every seed's run (l<seed>.csv)."""
    out = []
    for n in seed_runs("l"):
        r = rows(n)
        cols = [c for c in r[0] if re.fullmatch(prefix + r"l\d+_underflow", c)]
        out += [sum(float(row[c]) for c in cols) for row in r]
    return out


def most_underflow_steps():
    """Per seed, the step with run b's most underflowed values."""
    out = []
    for n in seed_runs("l"):
        cols = [c for c in rows(n)[0] if re.fullmatch(r"b_l\d+_underflow", c)]
        out.append(int(max(rows(n), key=lambda row: sum(float(row[c]) for c in cols))["step"]))
    return out


def val_gap_max(prefix):
    """The largest |run a - run b| validation loss over every validation of
    every seed's run."""
    return max(abs(float(r["val_loss"]) - float(r["b_val_loss"])) for n in seed_runs(prefix) for r in rows(n)
               if r["val_loss"] != "" and r["b_val_loss"] != "")


def swap_cost(seed, other):
    """rmsnorm-swap: run a's training loss over the 10 steps after the
    switch (301-310), minus run b's ("b") or the run left alone's ("ra"),
    on the mean (the same batches)."""
    a = {int(r["step"]): float(r["loss"]) for r in rows("r%d.csv" % seed)}
    if other == "b":
        o = {int(r["step"]): float(r["b_loss"]) for r in rows("r%d.csv" % seed)}
    else:
        o = {int(r["step"]): float(r["loss"]) for r in rows("ra%d.csv" % seed)}
    return sum(a[s] - o[s] for s in range(301, 311)) / 10


def boundary6():
    """The 6-layer Post-LN runs of seeds 1-5 (map6/results.csv): the lr at
    which every seed trained and the one at which every seed stalled."""
    r = rows("map6/results.csv")
    lrs = sorted({float(x["lr"]) for x in r})
    trains = [lr for lr in lrs if all(x["status"] == "ok" and x["stalled"] == "0" for x in r if float(x["lr"]) == lr)]
    stalls = [lr for lr in lrs if all(x["stalled"] == "1" for x in r if float(x["lr"]) == lr)]
    return [max(trains) if trains else 0, min(stalls) if stalls else 0]


def w_runs(kind="w"):
    """The warmup lesson's runs, one per seed lessons.sh ran: the lesson
    (w<seed>.csv), its run a left alone (wa: no rewind, no warmup, to the
    same step 700) and with warmup on at step 200 without the rewind (wl)."""
    return ["%s%d.csv" % (kind, s) for s in seed_nums("w")]


def w_seeds(col, step=None, kind="w"):
    """A column on every seed's run at a step (the first pass) or its end."""
    return [at(n, col, step) for n in w_runs(kind)]


def one(vals):
    """The value every seed's run gives, or -1 when they differ."""
    s = set(vals)
    return s.pop() if len(s) == 1 else -1


def d_seeds(layers, f):
    """f(name) of every seed's depth run at that many layers (d<L>_<seed>.csv)."""
    return [f(n) for n in seed_runs("d%d_" % layers)]


def end_gap(name):
    """Run b's final validation loss minus run a's: Post-LN's lead."""
    return at(name, "b_val_loss") - at(name, "val_loss")


def al_runs():
    """The attn-logits lesson's runs, one per seed (al<seed>.csv)."""
    names = sorted(f for f in os.listdir(DIR) if re.fullmatch(r"al\d+\.csv", f))
    if not names:
        raise KeyError("no attn-logits runs (al<seed>.csv)")
    return names


def al_layers(name, run, col, step):
    """Run a's (run "") or b's ("b_") column col over the layers at a step:
    the largest for the attention logit, the least for the entropy."""
    r = next(x for x in rows(name) if int(x["step"]) == step)
    vals = [float(r[c]) for c in r if re.fullmatch(run + r"l\d+_" + col, c)]
    return max(vals) if col == "attn_logit_max" else min(vals)


def al_seeds(run, col, step):
    """That value on every seed."""
    return [al_layers(n, run, col, step) for n in al_runs()]


def al_over(run, col, first, last):
    """Per seed, the largest logit (least entropy) over steps first..last."""
    agg = max if col == "attn_logit_max" else min
    return [agg(al_layers(n, run, col, s) for s in range(first, last + 1)) for n in al_runs()]


def al_val(run, step):
    return [at(n, run + "val_loss", step) for n in al_runs()]


def farthest(vals, q):
    """Of values, the one farthest from q: a claim 'about q' holds on every seed when it holds for it."""
    return max(vals, key=lambda v: abs(v - q))


# ---- the claims ---------------------------------------------------------------
# (lesson, sources, pattern with one group per quoted number, measure: a
# function of the runs giving one value per group, rule, tolerance)
LF = "assets/lessons/%s.lesson"
MAN = "man/normscope-lessons.7"
MAN1 = "man/normscope.1"
README = "README.md"
STALLED_POST = [(6, 1e-2), (18, 1e-3), (18, 3e-3), (18, 1e-2)]
CLAIMS = [
    # the lessons compiled in (DIR/list.txt: --lesson list)
    ("", ["README.md"], r"(Ten) classroom lessons", lambda: [len(open(os.path.join(DIR, "list.txt")).readlines())],
     "exact", 0),
    ("", [MAN], r"walks a teacher through the (ten) lessons",
     lambda: [len(open(os.path.join(DIR, "list.txt")).readlines())], "exact", 0),
    ("", [MAN], r"the (ten) files there are the examples",
     lambda: [len(open(os.path.join(DIR, "list.txt")).readlines())], "exact", 0),
    ("stability-map", ["README.md"], r"a lesson that is a grid: (\d+) runs", lambda: [len(rows("map/results.csv"))],
     "exact", 0),
    ("stability-map", ["README.md"], r"three\s+learning rates \((\d+) runs", lambda: [len(rows("map/results.csv"))],
     "exact", 0),
    # WRITING A LESSON's complete example, run from the page (own.csv)
    ("own-file", [MAN], r"at step 100 Post-LN's validation loss is (\d\.\d+) nats and\s+Pre-LN's (\d\.\d+);",
     lambda: [at("own.csv", "val_loss", 100), at("own.csv", "b_val_loss", 100)], "round", 0),
    ("own-file", [MAN], r"At step (50) the run stops at the question with run b still hidden",
     lambda: [int(re.search(r"^at (\d+): pause", open(os.path.join(DIR, "home/class/depth4.lesson")).read(),
                            re.M).group(1))], "exact", 0),
    ("own-file", [MAN], r"and from step (51) both runs are on the screen",
     lambda: [int(re.search(r"^reveal: (\d+)", open(os.path.join(DIR, "home/class/depth4.lesson")).read(),
                            re.M).group(1)) + 1], "exact", 0),
    # warmup, over the seeds lessons.sh ran: the lesson (w<seed>.csv), its
    # run a left alone (wa) and with warmup on at step 200 without the rewind (wl)
    ("warmup", [LF % "warmup"], r"plateau \(validation (\d\.\d+) to (\d\.\d+) nats\) by step 150",
     lambda: minmax(w_seeds("val_loss", 150)), "span", 0),
    ("warmup", [LF % "warmup"], r"Pre-LN reaches (\d\.\d+) to (\d\.\d+) at step 200",
     lambda: minmax(w_seeds("b_val_loss", 200)), "span", 0),
    ("warmup", [MAN], r"while Pre-LN's is (\d\.\d+) to (\d\.\d+) and going down",
     lambda: minmax(w_seeds("b_val_loss", 150)), "span", 0),
    # the status line's lr at the pause after the rewind: the replay's first step's
    ("warmup", [MAN], r"step 0\s+and lr (\d\.\d+e-\d+), warmup's first rate",
     lambda: [farthest([float(rows(n)[rewound_at(n)]["lr"]) for n in w_runs()], 1e-5)], "about", 0.01),
    ("warmup", [MAN], r"at (\d\.\d+) to (\d\.\d+) nats of\s+validation loss",
     lambda: minmax(w_seeds("val_loss", 150)), "span", 0),
    ("warmup", [LF % "warmup", MAN], r"ending within (\d\.\d+) nats of Pre-LN|ends within (\d\.\d+) nats of Pre-LN",
     lambda: [max(abs(a - b) for a, b in zip(w_seeds("val_loss"), w_seeds("b_val_loss")))] * 2, "le", 0),
    # the rescue against the same run left alone, at the same step
    ("warmup", [LF % "warmup", MAN], r"and (\d\.\d+) to (\d\.\d+) nats below the same run left\s+alone",
     lambda: minmax([b - a for a, b in zip(w_seeds("val_loss"), w_seeds("val_loss", kind="wa"))]), "span", 0),
    ("warmup", [LF % "warmup", MAN], r"no warmup: still (\d\.\d+) to (\d\.\d+) at step 700",
     lambda: minmax(w_seeds("val_loss", kind="wa")), "span", 0),
    ("warmup", [LF % "warmup", MAN], r"still on the plateau at step 400 \((\d\.\d+) to (\d\.\d+)\)",
     lambda: minmax(w_seeds("val_loss", 400, "wl")), "span", 0),
    ("warmup", [LF % "warmup"], r"Post-LN stops near (\d\.\d+) nats",
     lambda: [farthest(w_seeds("val_loss", 150), 3.1)], "about", 0.03),
    ("warmup", [MAN], r"which bytes are common sits near (\d\.\d+)",
     lambda: [farthest(w_seeds("val_loss", 150), 3.1)], "about", 0.03),
    ("warmup", [LF % "warmup"], r"Post-LN sits near (\d\.\d+) nats",
     lambda: [farthest(w_seeds("val_loss", 150), 3.1)], "about", 0.03),
    ("warmup", [LF % "warmup"], r"At step (\d+) both runs rewind to step 0", lambda: [one(rewound_at(n) for n in w_runs())],
     "exact", 0),
    ("warmup", [MAN], r"At step (\d+) the script rewinds both runs to step 0",
     lambda: [one(rewound_at(n) for n in w_runs())], "exact", 0),
    ("warmup", ["README.md"], r"both runs rewind at step (\d+)", lambda: [one(rewound_at(n) for n in w_runs())],
     "exact", 0),
    ("warmup", [README], r"Post-LN without warmup stalls near (\d\.\d+) nats while Pre-LN trains",
     lambda: [farthest(w_seeds("val_loss", 150), 3.1)], "about", 0.03),
    # the stall rule's plateau, the unigram entropy of the corpus the runs train on
    ("", [README], r"unigram entropy\s+\((\d\.\d+) nats on the built-in corpus\)", lambda: [unigram_entropy()],
     "round", 0),
    ("", [MAN], r"on the unigram plateau \((\d\.\d+) nats: the loss of", lambda: [unigram_entropy()], "round", 0),
    ("warmup", [MAN], r"A uniform guess over 256 bytes costs (\d\.\d+) nats", lambda: [math.log(256)], "round", 0),
    # depth, over the seeds lessons.sh ran (d<layers>_<seed>.csv)
    ("depth", [LF % "depth"], r"the two end within (\d\.\d+) nats",
     lambda: [max(map(abs, d_seeds(2, end_gap)))], "le", 0),
    ("depth", [LF % "depth"], r"end at most (\d\.\d+) nats apart",
     lambda: [max(map(abs, d_seeds(2, end_gap)))], "le", 0),
    ("depth", [MAN], r"losses differ by at\s+most (\d\.\d+) nats",
     lambda: [max(map(abs, d_seeds(2, end_gap)))], "le", 0),
    # early on the 2-layer curves are apart: Post-LN leads at step 50
    ("depth", [LF % "depth"], r"Post-LN leads by (\d\.\d+) to (\d\.\d+) nats of\s+validation loss at step 50",
     lambda: minmax(d_seeds(2, lambda n: at(n, "b_val_loss", 50) - at(n, "val_loss", 50))), "span", 0),
    ("depth", [MAN], r"Post-LN starts ahead, by (\d\.\d+) to (\d\.\d+) nats of validation loss at\s+step 50",
     lambda: minmax(d_seeds(2, lambda n: at(n, "b_val_loss", 50) - at(n, "val_loss", 50))), "span", 0),
    ("depth", [LF % "depth"], r"at 6 layers Post-LN ends ahead by (\d\.\d+) to (\d\.\d+)",
     lambda: minmax(d_seeds(6, end_gap)), "span", 0),
    ("depth", [MAN], r"At 6 layers Post-LN trains and ends ahead, by (\d\.\d+) to (\d\.\d+)",
     lambda: minmax(d_seeds(6, end_gap)), "span", 0),
    ("depth", [LF % "depth"], r"Post-LN sits on the unigram plateau \((\d\.\d+) to (\d\.\d+)\)",
     lambda: minmax(d_seeds(24, lambda n: at(n, "val_loss"))), "span", 0),
    ("depth", [LF % "depth"], r"while Pre-LN reaches (\d\.\d+) to (\d\.\d+)",
     lambda: minmax(d_seeds(24, lambda n: at(n, "b_val_loss"))), "span", 0),
    ("depth", [MAN], r"At 24 layers Post-LN stays on the plateau at (\d\.\d+) to (\d\.\d+) nats",
     lambda: minmax(d_seeds(24, lambda n: at(n, "val_loss"))), "span", 0),
    ("depth", [MAN], r"nats; Pre-LN reaches\s+(\d\.\d+) to (\d\.\d+)",
     lambda: minmax(d_seeds(24, lambda n: at(n, "b_val_loss"))), "span", 0),
    ("depth", [LF % "depth"], r"stalls at about (\d\.\d+) nats",
     lambda: [farthest(d_seeds(24, lambda n: at(n, "val_loss")), 3.1)], "about", 0.03),
    # gradient-profile, over the seeds lessons.sh ran: each quoted range
    # holds every seed's value (span: the first number at most the least,
    # the second at least the greatest, to the digits quoted)
    ("gradient-profile", [LF % "gradient-profile", MAN], r"falls about (3) times from 3 to 24 layers",
     lambda: [sum(span(lambda s: gp(s, 3, "l2_grad_ffn", "b_") / gp(s, 24, "lTOP_grad_ffn", "b_"))) / 2],
     "about", 0.25),
    ("gradient-profile", [LF % "gradient-profile", MAN], r"\((\d\.\d) to (\d\.\d)\s+times by\s+seed\)",
     lambda: span(lambda s: gp(s, 3, "l2_grad_ffn", "b_") / gp(s, 24, "lTOP_grad_ffn", "b_")), "span", 0),
    ("gradient-profile", [LF % "gradient-profile", MAN], r"\(sqrt 8 = (\d\.\d)\)", lambda: [math.sqrt(8)], "round", 0),
    ("gradient-profile", [LF % "gradient-profile", MAN], r"\((\d\.\d) to (\d\.\d) at 3 layers,",
     lambda: span(lambda s: gp(s, 3, "l2_grad_ffn")), "span", 0),
    ("gradient-profile", [LF % "gradient-profile", MAN], r"at 3 layers, (\d\.\d) to (\d\.\d) at 24\)",
     lambda: span(lambda s: gp(s, 24, "lTOP_grad_ffn")), "span", 0),
    ("gradient-profile", [LF % "gradient-profile", MAN], r"24\s+layers (?:it is|Post-LN's is) (\d\.\d) to (\d\.\d) times Pre-LN's",
     lambda: span(lambda s: gp(s, 24, "lTOP_grad_ffn") / gp(s, 24, "lTOP_grad_ffn", "b_")), "span", 0),
    ("gradient-profile", [LF % "gradient-profile", MAN], r"top over (?:its )?bottom (?:is )?(\d\.\d+) to (\d\.\d+) by\s+seed",
     lambda: span(lambda s: gp(s, 12, "lTOP_grad_ffn") / gp(s, 12, "l0_grad_ffn")), "span", 0),
    ("gradient-profile", [LF % "gradient-profile", MAN], r"falls?,? (\d\.\d) to (\d\.\d) times from (?:the )?bottom",
     lambda: span(lambda s: gp(s, 12, "l0_grad_ffn", "b_") / gp(s, 12, "lTOP_grad_ffn", "b_")), "span", 0),
    ("gradient-profile", [LF % "gradient-profile", MAN], r"flat and (\d+) to (\d+)\s+times smaller",
     lambda: [min(min(init_ratios(s)) for s in gp_seeds()), max(max(init_ratios(s)) for s in gp_seeds())], "span", 0),
    ("gradient-profile", [LF % "gradient-profile"], r"at 12 layers is (\d+) to (\d+),",
     lambda: span(lambda s: gp(s, 12, "l0_grad_attn")), "span", 0),
    ("gradient-profile", [MAN], r"stands out, (\d+) to (\d+) against",
     lambda: span(lambda s: gp(s, 12, "l0_grad_attn")), "span", 0),
    ("gradient-profile", [MAN], r"against (\d) to (\d)\s+elsewhere",
     lambda: span(others_attn), "span", 0),
    ("gradient-profile", [LF % "gradient-profile"], r"(\d\.\d) to (\d\.\d) times the other layers' mean",
     lambda: span(attn0_share), "span", 0),
    ("gradient-profile", [LF % "gradient-profile", MAN], r"what attention adds to it,\s+rms (\d\.\d+)",
     lambda: span(lambda s: gp(s, 12, "l0_norm_in_rms")), "span1", 0),
    # deep-stable: Post-LN, and run b of the three twins
    ("deep-stable", [LF % "deep-stable"],
     r"plateau \(validation (\d\.\d+)\) while DeepNorm \((\d\.\d+)\), Pre-LN \((\d\.\d+)\) and\s+ReZero \((\d\.\d+)\)",
     lambda: [at("s.csv", "val_loss"), at("s.csv", "b_val_loss"), at("sp.csv", "b_val_loss"),
              at("sr.csv", "b_val_loss")], "round", 0),
    ("deep-stable", [MAN], r"Post-LN stays on the plateau at (\d\.\d+) nats; DeepNorm reaches (\d\.\d+)",
     lambda: [at("s.csv", "val_loss"), at("s.csv", "b_val_loss")], "round", 0),
    # deep-stable: out_change at step 1, every seed lessons.sh ran (oc<seed>.csv)
    ("deep-stable", [LF % "deep-stable"], r"step 1 it is above (\d\.\d+) for Post-LN",
     lambda: [min(out_change_1(""))], "ge", 0),
    ("deep-stable", [LF % "deep-stable"], r"output more than remade, and\s+below (\d\.\d+) for DeepNorm",
     lambda: [max(out_change_1("b_"))], "le", 0),
    ("deep-stable", [LF % "deep-stable"], r"out_change is above\s+#?\s*(\d\.\d+) for Post-LN",
     lambda: [min(out_change_1(""))], "ge", 0),
    ("deep-stable", [LF % "deep-stable"], r"for Post-LN and below (\d\.\d+) for DeepNorm \(asserted",
     lambda: [max(out_change_1("b_"))], "le", 0),
    ("deep-stable", [MAN], r"under Post-LN \(above (\d\.\d+) on each of five seeds\)",
     lambda: [min(out_change_1(""))], "ge", 0),
    ("deep-stable", [MAN], r"under DeepNorm \(below (\d\.\d+)\)",
     lambda: [max(out_change_1("b_"))], "le", 0),
    ("deep-stable", [MAN], r"Pre-LN reaches (\d\.\d+), ReZero (\d\.\d+)",
     lambda: [at("sp.csv", "b_val_loss"), at("sr.csv", "b_val_loss")], "round", 0),
    # gamma-zero: every seed's run (z<seed>.csv, Post-LN to step 200;
    # zp<seed>.csv, Pre-LN to step 30)
    ("gamma-zero", [LF % "gamma-zero"], r"\(act max (\d\.\d+) at step 200\)",
     lambda: seeds_at("z", "l5_act_max", 200), "span1", 0),
    ("gamma-zero", [MAN], r"at step 200 its act max is (\d\.\d+) and",
     lambda: seeds_at("z", "l5_act_max", 200), "span1", 0),
    ("gamma-zero", [LF % "gamma-zero"], r"the validation loss, (\d\.\d+) to (\d\.\d+) at\s+step 200",
     lambda: minmax(seeds_at("z", "val_loss", 200)), "span", 0),
    ("gamma-zero", [MAN], r"the validation loss (\d\.\d+) to (\d\.\d+) nats \(run b's",
     lambda: minmax(seeds_at("z", "val_loss", 200)), "span", 0),
    ("gamma-zero", [LF % "gamma-zero", MAN], r"(?:validation loss|run b's is) (\d\.\d+) nats or\s+more lower",
     lambda: [min(a - b for a, b in zip(seeds_at("z", "val_loss", 200), seeds_at("z", "b_val_loss", 200)))],
     "ge", 0),
    ("gamma-zero", [LF % "gamma-zero", MAN], r"goes from (0) at step 1 to over",
     lambda: [max(max(layers(n, "branch_ratio", 1)) for n in seed_runs("zp"))], "le", 0),
    ("gamma-zero", [LF % "gamma-zero"], r"to over a (twentieth) of it by step 30",
     lambda: [min(min(layers(n, "branch_ratio", 30)) for n in seed_runs("zp"))], "ge", 0),
    ("gamma-zero", [MAN], r"at step 1 to over (\d\.\d+) by\s+step 30",
     lambda: [min(min(layers(n, "branch_ratio", 30)) for n in seed_runs("zp"))], "ge", 0),
    # rmsnorm-swap: every seed's lesson run (r<seed>.csv) and its run a left
    # alone, on LayerNorm (ra<seed>.csv)
    ("rmsnorm-swap", [LF % "rmsnorm-swap"], r"over the next 10\s+steps is up by less than (\d\.\d+) nats",
     lambda: [max(abs(swap_cost(s, "ra")) for s in seed_nums("r"))], "le", 0),
    ("rmsnorm-swap", [LF % "rmsnorm-swap", MAN], r"the switch costs less than (\d\.\d+) nats",
     lambda: [max(abs(swap_cost(s, "ra")) for s in seed_nums("r"))], "le", 0),
    ("rmsnorm-swap", [LF % "rmsnorm-swap", MAN], r"validation loss\s+ends within (\d\.\d+) of that run's",
     lambda: [max(abs(at("r%d.csv" % s, "val_loss") - at("ra%d.csv" % s, "val_loss")) for s in seed_nums("r"))],
     "le", 0),
    ("rmsnorm-swap", [LF % "rmsnorm-swap"], r"it stays within (\d\.\d+) of the\s+RMSNorm-from-scratch twin",
     lambda: [max(abs(swap_cost(s, "b")) for s in seed_nums("r"))], "le", 0),
    ("rmsnorm-swap", [MAN], r"it stays within (\d\.\d+) of its twin's",
     lambda: [max(abs(swap_cost(s, "b")) for s in seed_nums("r"))], "le", 0),
    ("rmsnorm-swap", [LF % "rmsnorm-swap", MAN], r"the two end within (\d\.\d+) of\s+each other",
     lambda: [max(abs(at("r%d.csv" % s, "val_loss") - at("r%d.csv" % s, "b_val_loss")) for s in seed_nums("r"))],
     "le", 0),
    # loss-scaling: every seed's first 100 steps (l<seed>.csv), per step,
    # summed over the layers
    ("loss-scaling", [LF % "loss-scaling", MAN], r"[Rr]un a loses (millions) of\s+gradient values a step",
     lambda: [underflows("")], "in", 0),
    ("loss-scaling", [LF % "loss-scaling", MAN], r"to subnormals, run b (thousands to tens of\s+thousands)",
     lambda: [underflows("b_")], "in", 0),
    ("loss-scaling", [LF % "loss-scaling"], r"scaling \(from 65536\) (thousands to tens\s+of thousands) do",
     lambda: [underflows("b_")], "in", 0),
    ("loss-scaling", [LF % "loss-scaling", MAN], r"a (hundred) times fewer or better at every step",
     lambda: [min(a / b for a, b in zip(underflows(""), underflows("b_")))], "ge", 0),
    ("loss-scaling", [LF % "loss-scaling", MAN], r"(?:most run b underflows, near step|the most near step) (\d+)",
     lambda: [farthest(most_underflow_steps(), 60)], "about", 0.1),
    ("loss-scaling", [LF % "loss-scaling"], r"the\s+validation losses stay within (\d\.\d+) nats",
     lambda: [val_gap_max("l")], "le", 0),
    ("loss-scaling", [LF % "loss-scaling"], r"The loss curves stay close here \(within (\d\.\d+) nats\)",
     lambda: [val_gap_max("l")], "le", 0),
    ("loss-scaling", [MAN], r"\(the validation\s+losses within (\d\.\d+) nats of each other\)",
     lambda: [val_gap_max("l")], "le", 0),
    ("loss-scaling", [LF % "loss-scaling", MAN], r"(?:mean loss over|a mean over) (\d+)\s+positions",
     lambda: [positions("l1337.err")], "exact", 0),
    ("loss-scaling", [LF % "loss-scaling"], r"with dynamic scaling \(from\s+(\d+)\)",
     lambda: [at("l1337.csv", "b_loss_scale", 1)], "exact", 0),
    # fp16-layernorm: every seed's run to its divergence (f<seed>.csv)
    ("fp16-layernorm", [LF % "fp16-layernorm"], r"residual stream climbs from under (\d+) at step 1",
     lambda: [max(seeds_at("f", "l5_resid_max", 1))], "le", 0),
    ("fp16-layernorm", [LF % "fp16-layernorm"], r"from under \d+ at step 1 past (\d+) by step 40",
     lambda: [min(seeds_at("f", "l5_resid_max", 40))], "ge", 0),
    ("fp16-layernorm", [MAN], r"act max goes from under (\d+) at step 1",
     lambda: [max(seeds_at("f", "l5_act_max", 1))], "le", 0),
    ("fp16-layernorm", [MAN], r"at step 1 past (\d+) by step 40",
     lambda: [min(seeds_at("f", "l5_act_max", 40))], "ge", 0),
    ("fp16-layernorm", [LF % "fp16-layernorm"], r"The top layer's act max is past (\d+) already",
     lambda: [min(seeds_at("f", "l5_act_max", 40))], "ge", 0),
    ("fp16-layernorm", [LF % "fp16-layernorm"], r"depends on the seed \((\d+) to (\d+) over those six;",
     lambda: minmax([at(n, "step") for n in seed_runs("f")]), "span", 0),
    ("fp16-layernorm", [MAN], r"and the default between step (\d+) and\s+step (\d+)",
     lambda: minmax([at(n, "step") for n in seed_runs("f")]), "span", 0),
    ("fp16-layernorm", [LF % "fp16-layernorm"], r"over those six;\s+(\d+) on the default seed",
     lambda: [at("f1337.csv", "step")], "exact", 0),
    ("fp16-layernorm", [MAN], r"on the default seed at step (\d+) \(the same on", lambda: [at("f1337.csv", "step")],
     "exact", 0),
    ("fp16-layernorm", [LF % "fp16-layernorm", MAN], r"fp16's (?:largest value is|largest value,) (\d+)",
     lambda: [65504], "exact", 0),
    # attn-logits: every seed's run (al<seed>.csv), the worst seed against the quote
    ("attn-logits", [LF % "attn-logits"], r"logit goes from about (\d+) at step 1",
     lambda: [farthest(al_seeds("", "attn_logit_max", 1), 2)], "about", 0.25),
    ("attn-logits", [LF % "attn-logits", MAN], r"past (\d+) by step 100",
     lambda: [min(al_seeds("", "attn_logit_max", 100))], "ge", 0),
    ("attn-logits", [LF % "attn-logits", MAN], r"past ([\d,]+) by\s+step 300",
     lambda: [min(al_seeds("", "attn_logit_max", 300))], "ge", 0),
    ("attn-logits", [LF % "attn-logits", MAN], r"entropy from (\d\.\d+) nats",
     lambda: [farthest(al_seeds("", "attn_entropy", 1), 2.45)], "near", 0.02),
    ("attn-logits", [LF % "attn-logits", MAN], r"nats to under (\d\.\d+) and then under (\d\.\d+)",
     lambda: [max(al_seeds("", "attn_entropy", 100)), max(al_seeds("", "attn_entropy", 300))], "le", 0),
    ("attn-logits", [LF % "attn-logits", MAN], r"still falls \(by (\d\.\d+) nats or\s+more from step 100 to step 300\)",
     lambda: [min(a - b for a, b in zip(al_val("", 100), al_val("", 300)))], "ge", 0),
    ("attn-logits", [LF % "attn-logits", MAN], r"keeps its logits\s+under (\d+)",
     lambda: [max(al_over("b_", "attn_logit_max", 1, 300))], "le", 0),
    ("attn-logits", [LF % "attn-logits", MAN], r"keeps its logits\s+under \d+ and its entropy above (\d+)",
     lambda: [min(al_over("b_", "attn_entropy", 1, 300))], "ge", 0),
    ("attn-logits", [LF % "attn-logits", MAN], r"is ahead by (\d\.\d+) nats or more at\s+step 300",
     lambda: [min(a - b for a, b in zip(al_val("", 300), al_val("b_", 300)))], "ge", 0),
    ("attn-logits", [LF % "attn-logits", MAN], r"by step 350 its logits are\s+under (\d+)",
     lambda: [max(al_seeds("", "attn_logit_max", 350))], "le", 0),
    ("attn-logits", [LF % "attn-logits", MAN], r"by step 350 its logits are\s+under \d+ and its entropy above (\d+)",
     lambda: [min(al_seeds("", "attn_entropy", 350))], "ge", 0),
    # the switch at step 300 against run a left alone (ala<seed>.csv)
    ("attn-logits", [LF % "attn-logits", MAN], r"by step 450 its validation loss is\s+(\d\.\d+) nats or more below that of run a left alone",
     lambda: [min(at("ala%d.csv" % s, "val_loss", 450) - at("al%d.csv" % s, "val_loss", 450)
                  for s in seed_nums("al"))], "ge", 0),
    ("attn-logits", [LF % "attn-logits"], r"attention logits passed (\d+), its entropy fell",
     lambda: [min(al_seeds("", "attn_logit_max", 100))], "ge", 0),
    ("attn-logits", [LF % "attn-logits"], r"its entropy fell under (\d\.\d+) nats",
     lambda: [max(al_seeds("", "attn_entropy", 100))], "le", 0),
    ("attn-logits", [LF % "attn-logits"], r"Run a's logits passed ([\d,]+); b is ahead",
     lambda: [min(al_seeds("", "attn_logit_max", 300))], "ge", 0),
    ("attn-logits", [LF % "attn-logits"], r"Run a's logits passed [\d,]+; (b is ahead)",
     lambda: [min(a - b for a, b in zip(al_val("", 300), al_val("b_", 300)))], "in", 0),
    # A LARGER MAP: its gaps against its own table (to the table's rounding)
    ("", [MAN], r"wherever Post-LN trains it ends ahead, by (\d\.\d+)\s+to (\d\.\d+) nats",
     lambda: [min(b - a for a, b in map_table().values() if a < b),
              max(b - a for a, b in map_table().values() if a < b)], "near", 0.01),
    ("", [MAN], r"the gap at lr 1e-2 goes from (-\d\.\d+) at 2 layers to \+(\d\.\d+) at 6",
     lambda: [map_table()[(2, 1e-2)][0] - map_table()[(2, 1e-2)][1],
              map_table()[(6, 1e-2)][0] - map_table()[(6, 1e-2)][1]], "near", 0.01),
    # stability-map: the grid's cells
    ("stability-map", [LF % "stability-map"], r"2 layers at every lr \((\d\.\d+)-(\d\.\d+)\s+nats\)",
     lambda: [min(cell(2, lr, "post") for lr in (1e-3, 3e-3, 1e-2)),
              max(cell(2, lr, "post") for lr in (1e-3, 3e-3, 1e-2))], "round", 0),
    ("stability-map", [LF % "stability-map"], r"unigram plateau \((\d\.\d+)-\s+(\d\.\d+)\)",
     lambda: [min(cell(L, lr, "post") for L, lr in STALLED_POST),
              max(cell(L, lr, "post") for L, lr in STALLED_POST)], "round", 0),
    ("stability-map", [LF % "stability-map"], r"Pre-LN trains in every cell \((\d\.\d+)-(\d\.\d+)\)",
     lambda: [min(cell(L, lr, "pre") for L in (2, 6, 18) for lr in (1e-3, 3e-3, 1e-2)),
              max(cell(L, lr, "pre") for L in (2, 6, 18) for lr in (1e-3, 3e-3, 1e-2))], "round", 0),
    ("stability-map", [LF % "stability-map"], r"plateau \(about (\d\.\d+)\s+text: nats",
     lambda: [sum(cell(L, lr, "post") for L, lr in STALLED_POST) / 4], "about", 0.01),
    ("stability-map", [LF % "stability-map"], r"at 6 layers up to (\d+e-\d+), and stalls on the unigram plateau",
     lambda: [best("post", 6)], "exact", 0),
    ("stability-map", [LF % "stability-map"], r"\(\d\.\d+-\s+\d\.\d+\) at 6 layers and (\d+e-\d+) and at 18",
     lambda: [first_stall("post", 6)], "exact", 0),
    ("stability-map", [LF % "stability-map"], r"Post-LN stalls at 6 layers with (\d+e-\d+)",
     lambda: [first_stall("post", 6)], "exact", 0),
    ("stability-map", [MAN], r"At 6 layers Post-LN trains up to (\d+e-\d+) and stalls at (\d+e-\d+)",
     lambda: [best("post", 6), first_stall("post", 6)], "exact", 0),
    ("stability-map", [MAN], r"larger for Pre-LN \((\d+e-\d+) against (\d+e-\d+) at 6 layers, and none at 18\)",
     lambda: [best("pre", 6), best("post", 6)], "exact", 0),
    ("stability-map", [MAN], r"and none at (18)\)", lambda: [18 if best("post", 18) == 0 else -1], "exact", 0),
    ("stability-map", [MAN], r"Post-LN a little ahead \((\d\.\d+) to (\d\.\d+) nats\)",
     lambda: [min(-gap(2, lr) for lr in (1e-3, 3e-3, 1e-2)), max(-gap(2, lr) for lr in (1e-3, 3e-3, 1e-2))],
     "round", 0),
    ("stability-map", [MAN], r"unigram plateau \((\d\.\d+) nats: knowing only",
     lambda: [sum(cell(L, lr, "post") for L, lr in STALLED_POST) / 4], "round", 0),
    # the ranges measured once over seeds 1-5 and the default, re-checked
    # on the default seed's grid (every seed's: too long for CI)
    ("stability-map", [LF % "stability-map", MAN], r"end on the plateau\s+\((\d\.\d+) to (\d\.\d+)",
     lambda: minmax([cell(L, lr, "post") for L, lr in STALLED_POST]), "span", 0),
    ("stability-map", [LF % "stability-map", MAN], r"at 2 layers at every (?:lr|rate) \((\d\.\d+) to (\d\.\d+)\)",
     lambda: minmax([cell(2, lr, "post") for lr in (1e-3, 3e-3, 1e-2)]), "span", 0),
    ("stability-map", [LF % "stability-map", MAN], r"Pre-LN (?:trains )?in every cell \((\d\.\d+) to (\d\.\d+)\)",
     lambda: minmax([cell(L, lr, "pre") for L in (2, 6, 18) for lr in (1e-3, 3e-3, 1e-2)]), "span", 0),
    ("stability-map", [MAN], r"2 layers at every\s+rate \(\d\.\d+ to \d\.\d+\), ahead of Pre-LN there, and at 6 layers up to (\d+e-\d+);",
     lambda: [best("post", 6)], "exact", 0),
    # the 6-layer boundary, re-run on seeds 1-5 (map6/results.csv)
    ("stability-map", [MAN], r"the 6-layer boundary \(trains at (\d+e-\d+), stalls at (\d+e-\d+)\) on seeds 1 to 5",
     lambda: boundary6(), "exact", 0),
    ("stability-map", [MAN], r"gap at 1e-3 grows with depth: (-?\d\.\d+) nats at 2 layers, (-?\d\.\d+) at 6, \+(\d\.\d+)\s+at 18",
     lambda: [gap(2, 1e-3), gap(6, 1e-3), gap(18, 1e-3)], "round", 0),
]

# Decimals in the texts that are not measurements, each with its reason:
# the pattern finds them where they stand.
NOT_MEASURED = [
    (r"std 0\.02|\(std 0\.02", "a flag's value: --init normal's standard deviation"),
    (r"1e-5\.\.1e2|1e-5 to 1e2", "the gradient bars' absolute scale, a constant of the view"),
    (r"init-std 0\.02", "a flag's value"),
    (r"init-std 0\.7", "a flag's value (its effect: lessons.sh's --init-std 0.7 run)"),
    (r"(?:lr|rate|rates) \d(?:\.\d+)?e-\d+", "a flag's value (--lr)"),
    (r"rates \d+e-\d+, \d+e-\d+ and \d+e-\d+", "the sweep's values of --lr"),
    (r"lr=\d+e-\d+(?:,\d+e-\d+)*", "a sweep SPEC's values of --lr"),
    (r"smallest normal \((6\.1e-5)\)|smallest normal number, (6\.1e-5)", "fp16's smallest normal, 2^-14"),
    (r"\d\.\d+-\d\.\d+|\(\d\.\d+ S\b", "checked above, as a range"),
    (r"not (0\.1) nats below", "the stall rule's margin, a constant of the rule"),
    (r"more than (0\.15)\s+nats\s+above its first", "the exploded rule's margin, a constant of the rule"),
]
# Decimals a measurement stands behind that this suite does not re-run,
# with the reason; reported (not passed) so that the gap stays visible.
NOT_RERUN = [
    (r"gradient is about (1e-6)", "arithmetic on the loss's mean, not a run's output"),
    (r"seed 1's 18-layer\s+Post-LN run at 1e-3 ends on\s+the plateau without it",
     "stability-map on seeds 1-5: five more grids, too long for CI (the 6-layer boundary is re-run on them)"),
    # A LARGER MAP: eight runs of the default model, 75 s of processor time
    (r"\.Bl -column \"layers\" \"lr 1e-3\"[\s\S]*?\.El",
     "the larger map's table: eight runs of the default model, 75 s of processor time, too long for CI"),
    (r"gradient ratio at the end is (1e-8)", "the larger map's 6-layer Post-LN run at lr 1e-2: too long for CI"),
    (r"seed 1337\s+\((2\.51)\) but still stalls for seeds 1 and 2 \((3\.07), (3\.08)\)",
     "the default model with 100 warmup steps over three seeds: too long for CI"),
    # wall-clock times: the reference machine's, not a quantity a run on another machine reproduces
    (r"75 seconds of\s+processor time in all, so about 40 seconds", "wall-clock time of the reference machine"),
    (r"31 seconds of processor time in all, measured: about 16 seconds", "wall-clock time of the reference machine"),
    (r"\(21 seconds of processor time\)", "wall-clock time of the reference machine"),
    (r"\(18 runs, about 16 s on two free cores\)", "wall-clock time of the reference machine"),
]
# Decimals another suite checks against its own runs at every make test
# (the page quotes them from those runs), with the suite.
CHECKED_BY = [
    (r"gap grows with depth \(-0\.13 nats at 2 layers, \+0\.28 at 8",
     "tests/sh/sweep.sh, from its 8-run grid (width 32, 120 steps, seeds 1-2)"),
    (r"larger for\s+Pre-LN \(1e-2\) than for Post-LN \(3e-3\)", "tests/sh/sweep.sh, from its 4-layer grid"),
    (r"stalls for every seed \(3\.08 to 3\.11\s+nats, seeds 1 to 3\)", "tests/sh/sweep.sh, from its warmup grid"),
    (r"off the plateau\s+\(2\.54 to 2\.66\)", "tests/sh/sweep.sh, from its warmup grid"),
]


def spaced(pat):
    """A claim's pattern with each space free to break a line, where a
    lesson file's next line starts again with "#" or "text:"."""
    ws = r"(?:\s+(?:#|text:)?)+\s*"
    return pat.replace(r"\s+", " ").replace(" ", ws)


WORDS = {"hundred": 100, "twentieth": 0.05, "two": 2, "three": 3, "five": 5, "eight": 8, "nine": 9, "Nine": 9, "ten": 10, "Ten": 10}


# words for a size, as the ranges they claim
RANGES = {"millions": (1e6, 1e9), "thousands to tens of thousands": (1e3, 1e5), "b is ahead": (0, float("inf"))}


def quoted_decimal(s):
    return float(WORDS[s]) if s in WORDS else float(s.replace(",", ""))


def verdict(rule, tol, want, got, text):
    if rule == "exact":
        good = float(got) == float(want)
        how = "exact"
    elif rule == "round":
        digits = len(text.split(".")[1].split("e")[0]) if "." in text else 0
        good = abs(round(got, digits) - want) < 0.5 * 10 ** -digits + 1e-9 or \
            abs(got - want) <= 0.5 * 10 ** -digits + 1e-9
        how = "to %d decimals" % digits
    elif rule == "about":
        good = abs(got - want) <= tol * abs(want)
        how = "within %g%%" % (100 * tol)
    elif rule == "near":
        good = abs(got - want) <= tol + 1e-9
        how = "within %g" % tol
    elif rule == "le":
        good = got <= want + tol
        how = "at most"
    else:
        good = got >= want - tol
        how = "at least"
    return good, how


covered = {}  # source -> list of (start, end) spans a claim or a reason covers


def cover(src, m):
    covered.setdefault(src, []).append((m.start(), m.end()))


def check_claims():
    global skipped
    for lesson, sources, pat, measure, rule, tol in CLAIMS:
        if ONLY and lesson and lesson not in ONLY:
            skipped += 1
            continue
        for src in sources:
            t = text_of(src)
            m = re.search(spaced(pat), t)
            if not m:
                no("%s: the text no longer says /%s/: measure it again and fix the claim here" % (src, pat))
                continue
            cover(src, m)
            try:
                values = measure()
            except (KeyError, TypeError, IndexError, ValueError, ZeroDivisionError, OSError, StopIteration) as e:
                no("%s: %s: the run lessons.sh made has no such value (%s)" % (src, lesson, e))
                continue
            groups = [g for g in m.groups()]
            for k, (g, got) in enumerate(zip(groups, values)):
                if g is None:
                    continue
                if rule == "in":
                    lo, hi = RANGES[re.sub(r"(?:\s+(?:#|text:)?)+\s*", " ", g)]
                    # a list: every value in the range (every step, every seed)
                    vs = got if isinstance(got, list) else [got]
                    good, how = all(lo <= v < hi for v in vs), "in %g..%g" % (lo, hi)
                    got = min(vs) if not all(lo <= v for v in vs) else max(vs)
                elif rule in ("span", "span1"):
                    # a range over seeds: its low end at most the least value, its
                    # high end at least the greatest, to the quoted digits; span1:
                    # one number, every seed's value rounds to it
                    half = 0.5 * 10 ** -(len(g.split(".")[1]) if "." in g else 0) + 1e-9
                    want = quoted_decimal(g)
                    if rule == "span1":
                        good = all(abs(v - want) <= half for v in values)
                        how, got = "every seed", max(values, key=lambda v: abs(v - want))
                    elif k == 0:
                        good, how = got >= want - half, "the least seed's, at least"
                    else:
                        good, how = got <= want + half, "the greatest seed's, at most"
                else:
                    good, how = verdict(rule, tol, quoted_decimal(g), got, g)
                msg = "%s: %s quotes %s, the run gives %.4g (%s)" % (src, lesson, g, got, how)
                ok(msg) if good else no(msg)


def check_complete():
    """Every decimal in the texts' claims parts is found by a claim or a
    reason above."""
    parts = [(LF % n, None) for n in sorted(os.path.splitext(f)[0] for f in os.listdir(os.path.join(ROOT, "assets/lessons")))]
    parts.append((MAN, ("\nLESSONS\n", "\nA LARGER MAP\n")))  # its .Sh lines, read as text_of reads them
    parts.append((MAN, ("\nA LARGER MAP\n", "\nAFTER CLASS\n")))
    parts.append((MAN, ("\nWRITING A LESSON\n", "\nSEE ALSO\n")))
    parts.append((MAN1, ("\nLESSONS\n", "\nSEE ALSO\n")))  # the reference's lesson text
    parts += [(README, ("### Figures for slides", "### Two runs")),
              (README, ("- `DIR` (`--sweep-out`", "- At the end, stdout")),
              (README, ("- The `stability-map` lesson is a sweep", "On other machines"))]
    dec = re.compile(r"(?<![\w.])[-+]?\d+\.\d+(?:e[-+]?\d+)?|\b\d(?:\.\d+)?e-\d+")
    for src, sec in parts:
        if ONLY and os.path.basename(src).split(".")[0] not in ONLY and src not in (MAN, MAN1):
            continue
        t = text_of(src)
        for pat, _why in NOT_MEASURED + NOT_RERUN + CHECKED_BY:
            for m in re.finditer(spaced(pat), t):
                cover(src, m)
        lo, hi = 0, len(t)
        if sec:
            lo = t.find(sec[0])
            hi = t.find(sec[1], lo)
            if lo < 0 or hi < 0:
                no("%s: no section from %r to %r" % (src, sec[0], sec[1]))
                continue
            # the stability map's table is lessons.sh's own check, cell by cell
            if sec[0] == "\nLESSONS\n":
                tb = t.find("Bl -column", lo)
                te = t.find(".El", tb)
                covered.setdefault(src, []).append((tb, te))
        lines = t.splitlines(keepends=True)
        pos = 0
        missing = []
        for ln in lines:
            claimable = ln.startswith(("#", "text:", "at ", "every ")) or src in (MAN, MAN1, README)
            if claimable and lo <= pos < hi:
                for m in dec.finditer(ln):
                    a = pos + m.start()
                    if not any(s <= a < e for s, e in covered.get(src, [])):
                        missing.append(m.group())
            pos += len(ln)
        if ONLY and src in (MAN, MAN1, README):
            continue  # the page's claims of the lessons not run were skipped
        where = src + (" (%s)" % sec[0].strip("\n#- ") if sec else "")
        if missing:
            no("%s: decimals no check claims: %s (add a claim to tests/lib/lesson_claims.py)" % (where, " ".join(missing)))
        else:
            ok("%s: every decimal in its claims is checked or a stated non-measurement" % where)
    for pat, why in NOT_RERUN:
        print("  not re-run: /%s/: %s" % (pat, why))
    for pat, why in CHECKED_BY:
        print("  checked by another suite: /%s/: %s" % (pat, why))


check_claims()
check_complete()
print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
