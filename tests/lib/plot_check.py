"""plot_check.py - read a --plot SVG back and compare it with the rows it
was drawn from. Used by tests/sh/plot.sh; each command prints one line saying
what it found and exits 1 when the figure disagrees with the input.

  svg FILE                      parses as XML with an <svg> root
  loss SVG CSV                  series, points and gaps of each loss line (the
                                train loss faint under its smoothed line, a
                                debiased EMA of weight 0.9): the
                                rows a rewind abandoned as a dashed line of
                                their own in their run's color, distinct colors (dashes in
                                --mono) per run
  markers SVG CSV               a marker at each step where a setting changed
                                (a rewind: where the replay branches off, or
                                where the abandoned rows end when that is
                                the axis), at that step's x, inside the plot
                                area, its color 20 CIEDE2000 from every line's
  layers SVG CSV STEP           2 bars per layer per run, each the CSV's value,
                                its length that value on one scale shared by
                                every panel; the legend over no panel, on the
                                canvas
  profile SVG CSV S1,S2..       an MLP and an attention line per step (and
                                run), one point per finite layer, each run and
                                step its own color (its own dash in --mono)
  heatmap SVG CSV               layers x rows cells per run (the rows on the
                                timeline the run ended on), fills from one
                                ramp whose lightness rises with the value,
                                step ticks in order
  precision SVG CSV KIND        KIND headroom (act_max, headroom) or overflow,
                                or series:COLUMN (any per-layer column, one row)
                                (overflow, underflow): a line per layer, run
                                and quantity with the CSV's points and gaps
                                (the rows on the timeline the run ended on),
                                the runs' panels of a quantity on one y range
                                and every panel on one step range; headroom's
                                range holds its 0 and a limit line is drawn
  titles SVG WORD...            the panel titles, in order, hold the words
  map SVG RESULTS ROWS COLS [METRIC]
                                (ROWS - : one row) one cell per combination of the sweep's axes,
                                seeds folded, or with ROWS or COLS seed
                                one cell per run (runs, mean over the runs that
                                neither diverged nor failed, diverged,
                                stalled, exploded), each cell's fill the
                                color bar's bin of its value (lower loss =
                                the scale's low end; exploded cells off the
                                scale, hatched), diverged and stalled cells
                                marked, rows and columns laid out in the
                                axes' value order, every axis title on the
                                canvas and over no cell
                                METRIC (default loss: best_val,
                                update_ratio_end, stalled) is the value: the
                                column's mean over the trained runs, stalled
                                the share of them; a gradient color bar
                                (--scale continuous): each fill the gradient's
                                color at the value, the bar from the lowest to
                                the highest (0..1 for stalled), its ticks at
                                their values' heights
  decimated SVG                 no line has more than 2 points per pixel column
  png FILE.png                  decodes, and is not one flat color
  extents SVG                   every text's box (DejaVu Sans advance widths,
                                bold where bold, rotations and tspans
                                applied, 2% wider than the font says) lies
                                inside the canvas; the title and caption
                                lines overlap no other text
  states SVG DE                  the layer figure's gradient states (normal,
                                vanishing, exploding: the legend's swatches,
                                the MLP's the attention's color, every bar's
                                fill one of them) at least DE apart
                                (CIEDE2000) from each other and the ground in
                                normal vision and simulated protanopia,
                                deuteranopia and tritanopia (Machado et al.
                                2009)
  tui_states SRC DE             the same for the live view's state colors in
                                tui_curses.c, as xterm shows the 8 colors
  type SVG PX                   every text at least PX px (a decade label's
                                raised exponent, 75% of its tick label, is
                                the one exception)
  map_scale SVG VMIN VMAX       the map's color bar runs VMIN..VMAX and each
                                finite cell sits in the bin its value gives
                                (the ends' beyond them); with a gradient,
                                each fill is the gradient's color at the
                                value, its stops darkening from the low end

Only the standard library (xml.etree, csv, zlib, struct).
"""
import csv
import math
import re
import statistics
import struct
import sys
import xml.etree.ElementTree as ET
import zlib

NS = "{http://www.w3.org/2000/svg}"
SETTINGS = ["norm", "norm_kind", "warmup", "clip", "precision", "fp32_norms", "ln_gamma_init"]


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def ok(msg):
    print("ok: " + msg)


def root_of(path):
    try:
        return ET.parse(path).getroot()
    except ET.ParseError as e:
        fail("%s does not parse: %s" % (path, e))


def by_class(root, tag, cls):
    return [e for e in root.iter(NS + tag) if cls in (e.get("class") or "").split()]


def num(s):
    try:
        return float(s) if s != "" else None
    except ValueError:
        return None


def runs_of(path):
    """The CSV's rows per run: run a, and run b from the b_ columns."""
    with open(path) as f:
        rows = list(csv.DictReader(f))
    runs = [[{k: v for k, v in r.items() if not k.startswith("b_")} for r in rows]]
    if rows and "b_step" in rows[0]:
        runs.append([{k[2:]: v for k, v in r.items() if k.startswith("b_")} for r in rows])
    return runs


def live_rows(rows):
    """The rows on the timeline a run ended on: a row is abandoned when a
    later row has the same or an earlier step (a rewind replayed it)."""
    keep, lo = [], None
    for r in reversed(rows):
        s = int(r["step"])
        keep.append(lo is None or s < lo)
        if lo is None or s < lo:
            lo = s
    keep.reverse()
    return [r for r, k in zip(rows, keep) if k], [r for r, k in zip(rows, keep) if not k]


def subpaths(d):
    return d.count("M")


def expected_line(rows, col, skip_empty):
    """(points, subpaths) of a column drawn with gaps at non-finite values."""
    points = subs = 0
    pen = False
    prev = None
    for r in rows:
        if skip_empty and r[col] == "":
            continue
        step = int(r["step"])
        if prev is not None and step <= prev:
            pen = False
        prev = step
        v = num(r[col])
        if v is None or not math.isfinite(v):
            pen = False
            continue
        if not pen:
            subs += 1
            pen = True
        points += 1
    return points, subs


def cmd_svg(path):
    root = root_of(path)
    if root.tag != NS + "svg":
        fail("root is %s, not svg" % root.tag)
    ok("%s is SVG %sx%s" % (path, root.get("width"), root.get("height")))


def series_named(root, prefix):
    return [p for p in by_class(root, "path", "series") if p.get("data-name").startswith(prefix)]


def cmd_loss(svg, path):
    root = root_of(svg)
    runs = runs_of(path)
    ghosts = series_named(root, "before the rewind: train loss")
    want_ghosts = [i for i, rows in enumerate(runs) if live_rows(rows)[1]]
    if len(ghosts) != len(want_ghosts):
        fail("%d lines of abandoned rows, want %d" % (len(ghosts), len(want_ghosts)))
    for g in ghosts:
        if not g.get("stroke-dasharray"):
            fail("the abandoned rows' line is not dashed")
    series = [p for p in by_class(root, "path", "series")
              if not p.get("data-name").startswith(("before", "smoothed"))]
    colors = set((p.get("stroke"), p.get("stroke-dasharray") or "") for p in series)
    if len(colors) != len(series):
        fail("%d loss lines in %d distinct strokes (color, dash)" % (len(series), len(colors)))
    trains = series_named(root, "train loss")
    for n, i in enumerate(want_ghosts):
        # the evidence a replay is judged against: in its run's color, dashed
        if n < len(ghosts) and i < len(trains) and ghosts[n].get("stroke") != trains[i].get("stroke"):
            fail("the abandoned rows of run %d are not in its color (%s, its train loss %s)"
                 % (i, ghosts[n].get("stroke"), trains[i].get("stroke")))
    for n, i in enumerate(want_ghosts):
        dead = live_rows(runs[i])[1]
        want_pts, want_subs = expected_line(dead, "loss", False)
        if int(ghosts[n].get("data-points")) != want_pts:
            fail("abandoned rows of run %d: %s points, want %d" % (i, ghosts[n].get("data-points"), want_pts))
    for i, all_rows in enumerate(runs):
        rows = live_rows(all_rows)[0]
        for prefix, col, skip in (("train loss", "loss", False), ("validation loss", "val_loss", True)):
            want_pts, want_subs = expected_line(rows, col, skip)
            found = series_named(root, prefix)
            if len(found) != len(runs):
                fail("%d '%s' lines, want %d" % (len(found), prefix, len(runs)))
            p = found[i]
            pts, d = int(p.get("data-points")), p.get("d")
            if pts != want_pts or subpaths(d) != want_subs:
                fail("%s run %d: %d points in %d pieces, want %d in %d"
                     % (prefix, i, pts, subpaths(d), want_pts, want_subs))
            if "nan" in d.lower() or "inf" in d.lower():
                fail("%s: a non-finite coordinate in the path" % prefix)
            coords = d.replace("M", " ").replace("L", " ").split()
            if len(coords) != 2 * pts:
                fail("%s: %d coordinates for %d points" % (prefix, len(coords), pts))
    # a tick where the loss is not finite, or where the row's state says the
    # step diverged (a non-finite inside the step can leave the loss finite)
    want_nf = sorted(set(int(r["step"]) for rows in runs for r in rows
                         if not math.isfinite(num(r["loss"]) or float("nan"))
                         or r.get("state") == "diverged"))
    got_nf = sorted(set(int(p.get("data-step")) for p in by_class(root, "path", "nonfinite")))
    if got_nf != want_nf:
        fail("non-finite ticks at %s, want %s" % (got_nf, want_nf))
    smoothed_lines(root, runs)
    legend_corner(root)
    ok("%d run(s): loss lines with the CSV's points and gaps (non-finite at %s), %d abandoned, "
       "each smoothed over its faint raw line" % (len(runs), want_nf, len(ghosts)))


def smoothed_lines(root, runs):
    """Each run's train loss drawn faint (in a group of opacity < 1), and
    over it the smoothed loss in the same stroke, with the same points and
    gaps, ending at TensorBoard's debiased EMA of the rows (weight 0.9)."""
    raw_ids = set(id(p) for g in by_class(root, "g", "raw") if float(g.get("opacity")) < 1
                  for p in g.iter(NS + "path"))
    raws = series_named(root, "train loss")
    aband = set(id(x) for g in by_class(root, "g", "abandoned") for x in g.iter())
    smooth = [(g, p) for g in by_class(root, "g", "smoothed") if id(g) not in aband for p in g.iter(NS + "path")]
    if len(smooth) != len(runs):
        fail("%d smoothed lines, want %d" % (len(smooth), len(runs)))
    for i, rows in enumerate(runs):
        raw, (g, sm) = raws[i], smooth[i]
        if id(raw) not in raw_ids:
            fail("run %d's raw train loss is not faint" % i)
        if sm.get("stroke") != raw.get("stroke") or sm.get("data-name") != "smoothed " + raw.get("data-name"):
            fail("run %d: the smoothed line is not its raw line's (%s, %s)" % (i, sm.get("data-name"), sm.get("stroke")))
        if sm.get("data-points") != raw.get("data-points") or subpaths(sm.get("d")) != subpaths(raw.get("d")):
            fail("run %d: the smoothed line's points differ from the raw line's" % i)
        w, avg, k, last = float(g.get("data-weight")), 0.0, 0, None
        for r in live_rows(rows)[0]:
            x = num(r["loss"])
            if x is not None and math.isfinite(x):
                avg, k = w * avg + (1 - w) * x, k + 1
                last = avg / (1 - w ** k)
        if w != 0.9 or last is None or abs(float(g.get("data-last")) - last) > 1e-4 * abs(last):
            fail("run %d: smoothed to %s (weight %s), want %s (weight 0.9, debiased)" % (i, g.get("data-last"), w, last))


def legend_corner(root):
    """The loss legend hides no more of the lines' points than it would in
    any other corner of the plot."""
    area = by_class(root, "rect", "plot-area")[0]
    ax, ay, aw, ah = (float(area.get(k)) for k in ("x", "y", "width", "height"))
    r = by_class(root, "g", "legend")[0].find(NS + "rect")
    x, y, w, h = (float(r.get(k)) for k in ("x", "y", "width", "height"))
    pts = []
    for p in by_class(root, "path", "series"):
        c = p.get("d").replace("M", " ").replace("L", " ").split()
        pts += [(float(c[i]), float(c[i + 1])) for i in range(0, len(c) - 1, 2)]
    def inside(x0, y0):
        return sum(1 for px, py in pts if x0 <= px <= x0 + w and y0 <= py <= y0 + h)
    m = min(x - ax, y - ay, ax + aw - x - w, ay + ah - y - h)
    corners = [(ax + m, ay + m), (ax + aw - w - m, ay + m), (ax + m, ay + ah - h - m),
               (ax + aw - w - m, ay + ah - h - m)]
    here = inside(x, y)
    best = min(inside(cx, cy) for cx, cy in corners)
    if here > best + 2:  # the decimated line's points, not the C's, are counted
        fail("the legend hides %d points where another corner would hide %d" % (here, best))


def expected_marks(rows):
    """A setting's change at its row; a rewind from step F to T at T, where
    the replay branches off, or at F when T is left of the plot's first step
    (a rewind to step 0)."""
    marks = []
    first = int(rows[0]["step"])
    for prev, r in zip(rows, rows[1:]):
        if int(r["step"]) <= int(prev["step"]):
            to = int(r["step"]) - 1
            marks.append(to if to > first else int(prev["step"]))
        elif any(r.get(k) != prev.get(k) for k in SETTINGS):  # older files lack ln_gamma_init
            marks.append(int(r["step"]))
    return marks


def cmd_markers(svg, path):
    root = root_of(svg)
    runs = runs_of(path)
    want = sorted(set(s for rows in runs for s in expected_marks(rows)))
    groups = by_class(root, "g", "marker")
    got = sorted(set(int(g.get("data-step")) for g in groups))
    if got != want:
        fail("markers at %s, want %s" % (got, want))
    area = by_class(root, "rect", "plot-area")[0]
    x, w = float(area.get("x")), float(area.get("width"))
    x0, x1 = float(area.get("data-x0")), float(area.get("data-x1"))
    for g in groups:
        step = int(g.get("data-step"))
        lx = float(g.find(NS + "line").get("x1"))
        want_x = x + (step - x0) / (x1 - x0) * w
        if abs(lx - want_x) > 0.2:
            fail("marker at step %d drawn at x=%.1f, want %.1f" % (step, lx, want_x))
        if not x + 1 < lx < x + w - 1:
            fail("marker at step %d on the plot area's edge (x=%.1f, area %.1f..%.1f)" % (step, lx, x, x + w))
    strokes = set(p.get("stroke") for p in by_class(root, "path", "series"))
    for g in groups:  # a marker looks like no line: its color 20 CIEDE2000 from theirs
        m = g.find(NS + "line").get("stroke")
        for c in strokes:
            d = ciede2000(lab_seen(m, "normal vision"), lab_seen(c, "normal vision"))
            if d < 20:
                fail("the marker's %s is %.1f (CIEDE2000) from a line's %s" % (m, d, c))
    ok("markers at steps %s, each at its step's x, in a color no line has" % got)


def gnorm(r, l):
    a, f, n = (num(r["l%d_grad_%s" % (l, k)]) for k in ("attn", "ffn", "ln"))
    return math.sqrt(a * a + f * f + n * n)


def layers_of(rows):
    return len([k for k in rows[0] if k.endswith("_grad_attn")])


def cmd_layers(svg, path, step):
    root = root_of(svg)
    runs = runs_of(path)
    bars = [e for e in root.iter(NS + "rect") if e.get("class") in ("bar", "nan")]
    L = layers_of(runs[0])
    if len(bars) != 2 * L * len(runs):
        fail("%d bars, want %d (2 per layer per run)" % (len(bars), 2 * L * len(runs)))
    for i, rows in enumerate(runs):
        row = [r for r in rows if r["step"] == step][-1]
        mine = bars[i * 2 * L:(i + 1) * 2 * L]
        for b in mine:
            col = "l%s_grad_%s" % (b.get("data-layer"), "attn" if b.get("data-part") == "attn" else "ffn")
            want = num(row[col])
            got = num(b.get("data-value") or "nan")
            if math.isfinite(want) and abs(got - want) > 1e-5 * abs(want):
                fail("run %d %s: bar of %g, want %g" % (i, col, got, want))
    shared_bars(root, bars, L)
    swatches_match(root, bars)
    legend_clear(root)
    ok("%d bars with the values of step %s on one scale, the legend clear of them" % (len(bars), step))


def swatches_match(root, bars):
    """The legend's part swatches are filled as the bars of a normal
    state are (in --mono too), the MLP's hatched where its bars are."""
    hatch = set((r.get("x"), r.get("y")) for r in root.iter(NS + "rect") if r.get("fill") == "url(#hatch)")
    for part, name in (("attn", "attention"), ("mlp", "MLP")):
        mine = [b for b in bars if b.get("data-part") == part and b.get("class") == "bar"]
        if not mine:
            continue
        fills = [b.get("fill") for b in mine]
        common = max(set(fills), key=fills.count)
        hatched = sum((b.get("x"), b.get("y")) in hatch for b in mine) * 2 > len(mine)
        for g in by_class(root, "g", "legend"):
            rects, texts = [r for r in g.findall(NS + "rect")[1:]], g.findall(NS + "text")
            sw = [r for r in rects if r.get("fill") != "url(#hatch)"]
            for r, t in zip(sw, texts):
                if not t.text.startswith(name):
                    continue
                if r.get("fill") != common or (r.get("fill-opacity") or "1") not in ("1", "1.00"):
                    fail("the %s swatch is %s at %s, its bars %s" % (name, r.get("fill"), r.get("fill-opacity"), common))
                if ((r.get("x"), r.get("y")) in hatch) != hatched:
                    fail("the %s swatch is%s hatched, its bars are%s" % (name, "" if not hatched else " not",
                                                                       "" if hatched else " not"))


def shared_bars(root, bars, L):
    """Every panel draws the same decades, and each bar's length is its
    value on that scale: equal bars are equal gradients in every panel."""
    areas = by_class(root, "rect", "plot-area")
    scales = set((a.get("data-x0"), a.get("data-x1"), a.get("data-xlog"), a.get("width")) for a in areas)
    if len(scales) != 1:
        fail("the panels draw different x ranges: %s" % sorted(scales))
    for i, b in enumerate(bars):
        a = areas[i // (2 * L)]
        x0, x1, w = float(a.get("data-x0")), float(a.get("data-x1")), float(a.get("width"))
        g = num(b.get("data-value") or "nan")
        if g is None or not math.isfinite(g) or g <= 0:
            continue
        want = max(0.0, (math.log10(g) - x0) / (x1 - x0) * w)
        if abs(float(b.get("width")) - want) > 1.0:
            fail("a bar of %g is %.1f px long, want %.1f on its panel's scale" % (g, float(b.get("width")), want))


def legend_clear(root):
    """Each legend's box overlaps no plot area and stays on the canvas."""
    width = float(root.get("width"))
    areas = [tuple(float(a.get(k)) for k in ("x", "y", "width", "height"))
             for a in by_class(root, "rect", "plot-area")]
    for g in by_class(root, "g", "legend"):
        r = g.find(NS + "rect")
        x, y, w, h = (float(r.get(k)) for k in ("x", "y", "width", "height"))
        if x < 0 or x + w > width:
            fail("legend at x=%.1f..%.1f: off the canvas (width %g)" % (x, x + w, width))
        for ax, ay, aw, ah in areas:
            if x < ax + aw and ax < x + w and y < ay + ah and ay < y + h:
                fail("legend %.1f..%.1f over the panel %.1f..%.1f" % (x, x + w, ax, ax + aw))


def cmd_profile(svg, path, steps):
    root = root_of(svg)
    runs = runs_of(path)
    steps = steps.split(",")
    groups = by_class(root, "g", "profile")
    if len(groups) != 2 * len(steps) * len(runs):
        fail("%d lines, want %d (MLP and attention per step per run)" % (len(groups), 2 * len(steps) * len(runs)))
    L = layers_of(runs[0])
    mono = root.find(NS + "rect").get("fill") == "#ffffff"
    k = 0
    looks = {}
    for i, rows in enumerate(runs):
        for s in steps:
            row = [r for r in rows if r["step"] == s][-1]
            for part, col in (("mlp", "ffn"), ("attn", "attn")):
                g = groups[k]
                k += 1
                line = g.find(NS + "path")
                if (g.get("data-run"), g.get("data-step"), g.get("data-part")) != (str(i), s, part):
                    fail("line %d is run %s step %s %s, want run %d step %s %s" % (
                        k, g.get("data-run"), g.get("data-step"), g.get("data-part"), i, s, part))
                vals = [num(row["l%d_grad_%s" % (l, col)]) for l in range(L)]
                want = sum(1 for v in vals if v is not None and math.isfinite(v) and v > 0)
                if int(line.get("data-points")) != want:
                    fail("line %s: %s points, want %d" % (line.get("data-name"), line.get("data-points"), want))
                # a line's look: its color and dash; in --mono its dash and
                # its markers' shape (two runs of many steps share dashes)
                marks = [c.tag.split("}")[-1] for c in g if c is not line]
                looks.setdefault((i, s), set()).add(
                    (line.get("stroke-dasharray") or "", marks[0] if mono and marks else line.get("stroke")))
    if len(set(frozenset(v) for v in looks.values())) != len(looks):
        fail("two runs or steps drawn alike: %s" % looks)
    ok("%d lines, one point per finite layer, each run and step apart by %s"
       % (len(groups), "dash" if mono else "color"))


def lightness(color):
    """CIE L* of an sRGB "#rrggbb"."""
    lin = []
    for i in (1, 3, 5):
        c = int(color[i:i + 2], 16) / 255.0
        lin.append(c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4)
    y = 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]
    return 116 * y ** (1 / 3.0) - 16 if y > 0.008856 else 903.3 * y


def cmd_heatmap(svg, path):
    root = root_of(svg)
    runs = [live_rows(rows)[0] for rows in runs_of(path)]
    cells = by_class(root, "rect", "cell")
    want = sum(layers_of(rows) * len(rows) for rows in runs)
    if len(cells) != want:
        fail("%d cells, want %d" % (len(cells), want))
    nan = [c for c in cells if c.get("fill") == "url(#nan)"]
    want_nan = sum(1 for rows in runs for r in rows for l in range(layers_of(rows))
                   if not math.isfinite(gnorm(r, l)))
    if len(nan) != want_nan:
        fail("%d non-finite cells, want %d" % (len(nan), want_nan))
    ramp = {}
    for c in cells:
        if c.get("fill") == "url(#nan)":
            continue
        lv = int(c.get("data-level"))
        if ramp.setdefault(lv, c.get("fill")) != c.get("fill"):
            fail("level %d drawn as %s and %s" % (lv, ramp[lv], c.get("fill")))
    finite = sorted((float(c.get("data-value")), lightness(c.get("fill"))) for c in cells
                    if c.get("fill") != "url(#nan)")
    for (v1, l1), (v2, l2) in zip(finite, finite[1:]):
        if l2 < l1 - 1e-9:  # in --mono too: its greys keep viridis's order
            fail("a gradient norm of %g is darker than one of %g" % (v2, v1))
    swatches = [e.get("fill") for g in by_class(root, "g", "legend") for e in g.iter(NS + "rect")][1:]
    scale = [lightness(f) for f in swatches if f.startswith("#")]
    if len(scale) != 7 or any(abs(a - b) < 5 for a, b in zip(scale, scale[1:])) or \
            sorted(scale, reverse=True) != scale:
        fail("the legend's 7 steps are not one ramp of lightness: %s" % ["%.0f" % l for l in scale])
    for t in by_class(root, "g", "heat-ticks"):
        steps = [int(x.text) for x in t.iter(NS + "text")]
        if steps != sorted(steps):
            fail("step ticks out of order: %s" % steps)
    ok("%d cells, %d of them non-finite, lightness rising with the value (%d levels)"
       % (len(cells), len(nan), len(ramp)))



def series_log(runs, q):
    """--kind series draws a column on a log axis when every finite value
    is > 0 and they span two decades or more (plot_fig_precision.c)."""
    xs = [num(row[k]) for rows in runs for row in rows for k in row
          if k.startswith("l") and k.endswith("_" + q) and k[1:-len(q) - 1].isdigit()]
    xs = [x for x in xs if x is not None and math.isfinite(x)]
    return bool(xs) and min(xs) > 0 and max(xs) >= 100 * min(xs)

def cmd_precision(svg, path, kind):
    root = root_of(svg)
    runs = [live_rows(rows)[0] for rows in runs_of(path)]
    if kind.startswith("series:"):
        quantities = (kind[7:],)
        logs = (kind[7:],) if series_log(runs, kind[7:]) else ()
    else:
        quantities = ("act_max", "headroom") if kind == "headroom" else ("overflow", "underflow")
        logs = ("act_max",) if kind == "headroom" else ()
    groups = by_class(root, "g", "precision")
    if len(groups) != len(quantities) * len(runs):
        fail("%d panels of lines, want %d (%d quantities x %d runs)" % (
            len(groups), len(quantities) * len(runs), len(quantities), len(runs)))
    for g in groups:
        r, q = int(g.get("data-run")), g.get("data-quantity")
        if q not in quantities:
            fail("a panel of %s in a %s figure" % (q, kind))
        rows, L = runs[r], layers_of(runs[r])
        lines = [p for p in g.iter(NS + "path") if p.get("class") == "series"]
        if len(lines) != L:
            fail("run %d %s: %d lines, want one per layer (%d)" % (r, q, len(lines), L))
        for l, p in enumerate(lines):
            want_pts, want_subs = expected_line(rows, "l%d_%s" % (l, q), False)
            if q in logs:  # a log axis: no point at 0 or below
                c = "l%d_%s" % (l, q)
                want_pts, want_subs = expected_line([dict(x, **{c: x[c] if (num(x[c]) or 0) > 0 else "nan"})
                                                     for x in rows], c, False)
            if int(p.get("data-points")) != want_pts or subpaths(p.get("d")) != want_subs:
                fail("run %d layer %d %s: %s points in %d pieces, want %d in %d" % (
                    r, l, q, p.get("data-points"), subpaths(p.get("d")), want_pts, want_subs))
    areas = by_class(root, "rect", "plot-area")
    if len(set((a.get("data-x0"), a.get("data-x1")) for a in areas)) != 1:
        fail("the panels draw different step ranges")
    for row in [areas[j * len(runs):(j + 1) * len(runs)] for j in range(len(quantities))]:
        if len(set((a.get("data-y0"), a.get("data-y1")) for a in row)) != 1:
            fail("a quantity's panels draw different y ranges: %s" % [(a.get("data-y0"), a.get("data-y1")) for a in row])
    if kind == "headroom":
        for a in areas[len(runs):]:
            if not float(a.get("data-y0")) < 0 < float(a.get("data-y1")):
                fail("the headroom's range %s..%s leaves out 0, where it overflows" % (a.get("data-y0"), a.get("data-y1")))
        if not series_named(root, "the format's limit"):
            fail("no limit line over act max")
    ok("%s: %d panels, a line per layer with the CSV's points, shared axes" % (kind, len(groups)))

def cmd_titles(svg, *words):
    root = root_of(svg)
    titles = [t.text for t in by_class(root, "text", "panel-title")]
    if len(titles) != len(words):
        fail("panel titles %s, want %d" % (titles, len(words)))
    for t, w in zip(titles, words):
        if w not in t:
            fail("panel title '%s' lacks '%s'" % (t, w))
    ok("panel titles %s" % titles)


def sort_key(v):
    f = num(v)
    return (0, f, "") if f is not None else (1, 0.0, v)


def trained(status):
    """A run with numbers: it neither diverged nor failed (a stalled or
    exploded run trained to its end)."""
    return status not in ("diverged", "failed", "killed", "corrupt") \
        and not status.startswith(("exit ", "signal "))


# --metric NAME: the results.csv column a cell's value is read from (the
# loss: val_loss, else train_loss; stalled: a share of runs), and whether an
# exploded run puts the cell off the scale (a value at the run's end)
MAP_METRICS = {"loss": True, "best_val": False, "update_ratio_end": True, "stalled": False}


def map_cells_of(path, metric="loss", seeds=False):
    """results.csv folded as the map folds it: {key: [runs, values, div,
    stalled, exploded, trained]}, values the metric's finite ones over the
    runs that neither diverged nor failed; with seeds, the seed one more
    axis (the last), so each cell is one run."""
    with open(path) as f:
        rows = list(csv.DictReader(f))
    head = list(rows[0].keys())
    axes = head[1:head.index("seed")] + (["seed"] if seeds else [])
    cells = {}
    for r in rows:
        key = ",".join("%s=%s" % (a, r[a]) for a in axes)
        c = cells.setdefault(key, [0, [], 0, 0, 0, 0])
        c[0] += 1
        if metric == "loss":
            x = num(r["val_loss"] if r["val_loss"] != "" else r["train_loss"])
        else:
            x = num(r.get(metric, ""))
        if trained(r["status"]):
            c[5] += 1
            if metric != "stalled" and x is not None and math.isfinite(x):
                c[1].append(x)
        c[2] += r["status"] == "diverged"
        c[3] += r["stalled"] == "1"
        c[4] += r.get("exploded") == "1"
    if metric == "stalled":  # the share of the trained runs
        for c in cells.values():
            c[1] = [c[3] / float(c[5])] if c[5] else []
    values = {a: sorted(set(r[a] for r in rows), key=sort_key) for a in axes}
    return axes, values, cells


def map_value(values, metric):
    """A cell's value: the mean of its runs' (the share itself)."""
    return sum(values) / len(values) if values else None


def ramp_of(root):
    """The continuous color bar: (lo, hi, [(offset, "#rrggbb")]) or None."""
    bars = by_class(root, "rect", "colorbar-ramp")
    if not bars:
        return None
    stops = [(float(e.get("offset")), e.get("stop-color")) for e in root.iter(NS + "stop")]
    if len(stops) < 2 or bars[0].get("fill") != "url(#mapramp)":
        fail("the color bar's gradient: %d stops, fill %s" % (len(stops), bars[0].get("fill")))
    return float(bars[0].get("data-lo")), float(bars[0].get("data-hi")), sorted(stops)


def ramp_color(ramp, x):
    """The gradient's color at x (clamped to its ends), mixed in sRGB between
    the stops on either side, as an SVG renderer draws it."""
    lo, hi, stops = ramp
    t = min(1.0, max(0.0, (x - lo) / (hi - lo)))
    for (o1, c1), (o2, c2) in zip(stops, stops[1:]):
        if o1 <= t <= o2:
            f = (t - o1) / (o2 - o1) if o2 > o1 else 0
            return tuple(int(c1[i:i + 2], 16) + f * (int(c2[i:i + 2], 16) - int(c1[i:i + 2], 16))
                         for i in (1, 3, 5))
    fail("no stop around %g" % t)


def ramp_matches(ramp, x, fill):
    """The cell's fill is the gradient's color at x, to one level per channel."""
    want = ramp_color(ramp, x)
    got = tuple(int(fill[i:i + 2], 16) for i in (1, 3, 5)) if fill and fill.startswith("#") else None
    return got is not None and all(abs(g - w) <= 1.0 for g, w in zip(got, want)), want


def ramp_ticks(root, ramp):
    """Each tick of the gradient at its value's height, inside the bar, in
    1-2-5 steps: at least 3."""
    lo, hi, _ = ramp
    bar = by_class(root, "rect", "colorbar-ramp")[0]
    y0, h = float(bar.get("y")), float(bar.get("height"))
    ticks = sorted(float(t.get("data-value")) for t in by_class(root, "line", "colorbar-tick"))
    if len(ticks) < 3:
        fail("the gradient has %d ticks" % len(ticks))
    for t in by_class(root, "line", "colorbar-tick"):
        v, y = float(t.get("data-value")), float(t.get("y1"))
        want = y0 + h - (v - lo) / (hi - lo) * h
        if not lo - 1e-9 <= v <= hi + 1e-9 or abs(y - want) > 0.11:
            fail("tick %g at y=%.1f, want %.1f on %g..%g" % (v, y, want, lo, hi))
    return ticks


def t975(df):
    """Student's t quantile t(0.975, df), from its density integrated by
    Simpson's rule and bisected: computed here, not read off a table."""
    c = math.exp(math.lgamma((df + 1) / 2.0) - math.lgamma(df / 2.0)) / math.sqrt(df * math.pi)

    def cdf(x, n=4000):
        h = x / n
        f = [c * (1 + (i * h) ** 2 / df) ** (-(df + 1) / 2.0) for i in range(n + 1)]
        return 0.5 + h / 3 * (f[0] + f[-1] + 4 * sum(f[1:-1:2]) + 2 * sum(f[2:-1:2]))
    lo, hi = 1.0, 20.0
    for _ in range(50):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if cdf(mid) < 0.975 else (lo, mid)
    return (lo + hi) / 2


def shown_close(key, what, shown, want):
    """A number as printed, to its last digit (and the table's 3 decimals
    of t), against the value it stands for."""
    digits = len(shown.split(".")[1]) if "." in shown and "e" not in shown else None
    tol = 0.5 * 10 ** -digits + 2e-3 * abs(want) + 1e-12 if digits is not None else 0.05 * abs(want)
    if abs(float(shown) - want) > tol:
        fail("%s: %s %s, want %.6g" % (key, what, shown, want))


def ci_check(key, g, vals):
    """A cell's "95%: ±X", where it has one: t(0.975, n-1) sd / sqrt(n)."""
    for t in by_class(g, "text", "cell-ci"):
        m = re.match(r"95%: \u00b1([-+0-9.e]+)$", t.text or "")
        if not m or len(vals) < 2:
            fail("%s: a 95%% line %r over %d runs" % (key, t.text, len(vals)))
        n = len(vals)
        shown_close(key, "95% interval", m.group(1), t975(n - 1) * statistics.stdev(vals) / math.sqrt(n))


def spread_check(key, g, vals, metric):
    """A cell of two runs or more prints "±SD (N)": the sample standard
    deviation of its runs' values to the digits shown, and their count (a
    share has none)."""
    texts = [t.text or "" for t in by_class(g, "text", "cell-spread")]
    if metric == "stalled" or len(vals) < 2:
        if texts:
            fail("%s: a spread %s where there is none" % (key, texts))
        return
    m = re.match(r"\u00b1([-+0-9.e]+) \((\d+)\)$", texts[0]) if texts else None
    if not m:
        fail("%s: no '\u00b1SD (N)' spread: %s" % (key, texts))
    if int(m.group(2)) != len(vals):
        fail("%s: spread %s over %d runs" % (key, texts[0], len(vals)))
    shown_close(key, "spread", m.group(1), statistics.stdev(vals))
    ci_check(key, g, vals)


def map_cell_checks(want, got, ramp, bins, metric):
    """Each cell's counts, marks and fill against its folded runs: the
    marks drawn, and (value, bin, key) of each cell on the scale."""
    marks = 0
    finite = []
    for key, (runs, vals, div, stalled, exploded, _) in want.items():
        c, g = got[key]
        if int(c.get("data-runs")) != runs or int(c.get("data-diverged")) != div \
                or int(c.get("data-stalled")) != stalled:
            fail("%s: runs/diverged/stalled %s/%s/%s, want %d/%d/%d" % (
                key, c.get("data-runs"), c.get("data-diverged"), c.get("data-stalled"), runs, div, stalled))
        has_x = bool(by_class(g, "path", "diverged-mark"))
        has_dash = bool(by_class(g, "rect", "stalled-mark"))
        if has_x != (div > 0) or has_dash != (stalled > 0):
            fail("%s: marked diverged %s stalled %s, want %s %s" % (key, has_x, has_dash, div > 0, stalled > 0))
        marks += has_x + has_dash
        if int(c.get("data-exploded")) != exploded:
            fail("%s: exploded %s, want %d" % (key, c.get("data-exploded"), exploded))
        if exploded and MAP_METRICS[metric]:
            if c.get("fill") != "url(#exploded)":
                fail("%s: exploded but filled %s" % (key, c.get("fill")))
            continue
        if not vals:
            if c.get("fill") != "url(#nan)":
                fail("%s: no value but filled %s" % (key, c.get("fill")))
            continue
        mean = map_value(vals, metric)
        if abs(float(c.get("data-value")) - mean) > 1e-4 * abs(mean):
            fail("%s: value %s, want %g" % (key, c.get("data-value"), mean))
        spread_check(key, g, vals, metric)
        if ramp:
            same, col = ramp_matches(ramp, mean, c.get("fill"))
            if not same:
                fail("%s: fill %s, the gradient at %g is #%02x%02x%02x" % ((key, c.get("fill"), mean) + tuple(
                    int(round(x)) for x in col)))
            finite.append((mean, 0, key))
            continue
        b = int(c.get("data-bin"))
        if c.get("fill") != bins[b]:
            fail("%s: fill %s is not its bin's %s" % (key, c.get("fill"), bins[b]))
        finite.append((mean, b, key))
    return marks, finite


def cmd_map(svg, path, rows_axis, cols_axis, metric="loss"):
    root = root_of(svg)
    axes, values, want = map_cells_of(path, metric, "seed" in (rows_axis, cols_axis))
    combos = 1
    for a in axes:
        combos *= len(values[a])
    groups = by_class(root, "g", "map-cell")
    cells = [g.find(NS + "rect") for g in groups]
    got = {c.get("data-key"): (c, g) for c, g in zip(cells, groups)}
    if len(cells) != combos or len(got) != combos:
        fail("%d cells (%d distinct), want one per combination: %d" % (len(cells), len(got), combos))
    if set(got) != set(want):
        fail("cells %s, want %s" % (sorted(got), sorted(want)))
    ramp = ramp_of(root)
    bins = {int(b.get("data-bin")): b.get("fill") for b in by_class(root, "rect", "colorbar-bin")}
    if len(bins) < 2 and not ramp:
        fail("no color bar")
    marks, finite = map_cell_checks(want, got, ramp, bins, metric)
    finite.sort()
    for (m1, b1, k1), (m2, b2, k2) in zip(finite, finite[1:]):
        if b2 < b1:
            fail("%s (%g) in bin %d below %s (%g) in bin %d" % (k2, m2, b2, k1, m1, b1))
    lo, hi = (0.0, 1.0) if metric == "stalled" else (finite[0][0], finite[-1][0])
    if ramp and (abs(ramp[0] - lo) > 1e-5 * max(1, abs(lo)) or abs(ramp[1] - hi) > 1e-5 * max(1, abs(hi))):
        fail("the gradient runs %g..%g, want the cells' %g..%g" % (ramp[0], ramp[1], lo, hi))
    if ramp:
        ramp_ticks(root, ramp)
    elif metric != "stalled" and (finite[0][1] != 0 or finite[-1][1] != max(bins)):
        fail("lowest value in bin %d, highest in %d: want the scale's ends" % (finite[0][1], finite[-1][1]))
    # layout: within a panel, rows go down and columns right in value order
    others = [a for a in axes if a not in (rows_axis, cols_axis)]
    for key, (c, g) in got.items():
        kv = dict(p.split("=", 1) for p in key.split(","))
        for axis, coord in ((rows_axis, "y"), (cols_axis, "x")):
            if axis == "-":
                continue
            i = values[axis].index(kv[axis])
            if i == 0:
                continue
            prev = dict(kv)
            prev[axis] = values[axis][i - 1]
            pk = ",".join("%s=%s" % (a, prev[a]) for a in axes)
            if float(got[pk][0].get(coord)) >= float(c.get(coord)):
                fail("%s: not after %s along %s (%s)" % (key, pk, axis, coord))
    # every axis title on the canvas, and over no cell (of any panel)
    width = float(root.get("width"))
    rects = [(float(c.get("x")), float(c.get("y")), float(c.get("width")), float(c.get("height")))
             for c in cells]
    for t in by_class(root, "text", "axis-label"):
        x, y, fs = float(t.get("x")), float(t.get("y")), float(t.get("font-size") or 0)
        rotated = "rotate" in (t.get("transform") or "")
        half = 0.6 * fs if rotated else 0.3 * fs * len(t.text or "")  # its extent across x
        if x - half < 0 or x + half > width:
            fail("axis title '%s' at x=%.1f: off the canvas" % (t.text, x))
        if rotated:
            for rx, ry, rw, rh in rects:
                if rx - half < x < rx + rw + half and ry < y < ry + rh:
                    fail("axis title '%s' at x=%.1f over a cell at x=%.1f..%.1f" % (t.text, x, rx, rx + rw))
    per_panel = 1
    for a in (rows_axis, cols_axis):
        per_panel *= len(values[a]) if a != "-" else 1
    ok("%d cells (%d panels over %s), %s fills in %s order, %d marks" % (
        combos, combos // per_panel, others or "none", "gradient" if ramp else "binned", metric, marks))


def cmd_decimated(svg):
    root = root_of(svg)
    area = by_class(root, "rect", "plot-area")[0]
    width = float(area.get("width"))
    for p in by_class(root, "path", "series"):
        if int(p.get("data-points")) > 2 * (width + 2):
            fail("%s: %s points over %d pixels" % (p.get("data-name"), p.get("data-points"), width))
    ok("every line within 2 points per pixel column")


def cmd_png(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail("%s is not a PNG" % path)
    pos, idat = 8, b""
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        if kind == b"IDAT":
            idat += data[pos + 8:pos + 8 + n]
        pos += 12 + n
    raw = zlib.decompress(idat)
    distinct = len(set(raw))
    if distinct < 16:
        fail("%s looks blank: %d distinct byte values" % (path, distinct))
    ok("%s renders: %d distinct byte values" % (path, distinct))



# Advance widths of DejaVu Sans, the first font the figures ask for (wider
# than Helvetica and Arial, the fallbacks), in 1/1000 em, read from the
# font's hmtx table: ' '..'~' and a few other characters the figures use.
FONT_CHARS = "".join(chr(i) for i in range(32, 127)) + \
    "\u2192\u00d7\u2016\u2212\u2026\u00b1\u2264\u2265\u2248\u00b7\u2013\u2014"
FONT_W = [
    [int(x) for x in (
        "318 401 460 838 636 950 780 275 390 390 500 838 318 361 318 337 636 636 636 636 636 636 "
        "636 636 636 636 337 337 838 838 838 531 1000 684 686 698 770 632 575 775 752 295 295 656 "
        "557 863 748 787 603 787 695 635 611 732 684 989 685 611 685 390 337 390 838 500 500 613 "
        "635 550 635 615 352 635 634 278 278 579 278 974 634 612 635 635 411 521 392 634 592 818 "
        "592 592 525 636 337 636 838 838 838 500 838 1000 838 838 838 838 318 500 1000").split()],
    [int(x) for x in (
        "348 456 521 838 696 1002 872 306 457 457 523 838 380 415 380 365 696 696 696 696 696 696 "
        "696 696 696 696 400 400 838 838 838 580 1000 774 762 734 830 683 683 821 837 372 372 775 "
        "637 995 837 850 733 850 770 720 682 812 774 1103 771 724 725 457 365 457 838 500 500 675 "
        "716 593 716 678 435 716 712 343 343 665 343 1042 712 687 716 716 493 595 478 712 652 924 "
        "645 652 582 712 365 712 838 838 838 500 838 1000 838 838 838 838 380 500 1000").split()],
]
ASCENT, DESCENT, SLACK = 0.76, 0.24, 1.02  # of the em; widths 2% over the font's


def text_em(t, bold):
    w = 0.0
    for ch in t:
        i = FONT_CHARS.find(ch)
        w += (FONT_W[bold][i] if i >= 0 else 1000) / 1000.0
    return w


def text_runs(el):
    """(text, size) of each piece of a <text>: its own and its tspans'."""
    size = float(el.get("font-size"))
    runs = [(el.text or "", size)]
    for t in el:
        fs = t.get("font-size")
        sub = size * float(fs[:-1]) / 100 if fs and fs.endswith("%") else float(fs) if fs else size
        runs.append((t.text or "", sub))
        runs.append((t.tail or "", size))
    return runs


def text_box(el):
    """The box (x0, y0, x1, y1) a <text> covers, rotation applied."""
    bold = 1 if el.get("font-weight") == "bold" else 0
    runs = text_runs(el)
    w = sum(text_em(t, bold) * fs for t, fs in runs) * SLACK
    size = max(fs for t, fs in runs if t) if any(t for t, _ in runs) else float(el.get("font-size"))
    x, y = float(el.get("x")), float(el.get("y"))
    anchor = el.get("text-anchor") or "start"
    x0 = x - w if anchor == "end" else x - w / 2 if anchor == "middle" else x
    box = (x0, y - ASCENT * size * 1.3 if len(runs) > 1 else y - ASCENT * size, x0 + w, y + DESCENT * size)
    tr = el.get("transform") or ""
    if tr.startswith("rotate("):
        a, cx, cy = (float(v) for v in tr[7:-1].split())
        c, s = math.cos(math.radians(a)), math.sin(math.radians(a))
        pts = [(cx + (px - cx) * c - (py - cy) * s, cy + (px - cx) * s + (py - cy) * c)
               for px in (box[0], box[2]) for py in (box[1], box[3])]
        box = (min(p[0] for p in pts), min(p[1] for p in pts), max(p[0] for p in pts), max(p[1] for p in pts))
    return box


def texts_of(root):
    return [e for e in root.iter(NS + "text") if "".join(e.itertext()).strip()]


def overlap(a, b):
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def cmd_extents(svg):
    root = root_of(svg)
    W, H = float(root.get("width")), float(root.get("height"))
    texts = texts_of(root)
    for e in texts:
        x0, y0, x1, y1 = text_box(e)
        if x0 < 0 or y0 < 0 or x1 > W or y1 > H:
            fail("%s: '%s' (%s, %.1f px) covers %.0f..%.0f x %.0f..%.0f, off the %gx%g canvas"
                 % (svg, "".join(e.itertext()), e.get("class"), float(e.get("font-size")),
                    x0, x1, y0, y1, W, H))
    frame = [e for e in texts if (e.get("class") or "") in ("title", "caption")]
    for f in frame:
        for e in texts:
            if e is not f and overlap(text_box(f), text_box(e)):
                fail("%s: the %s '%s' overlaps '%s'" % (svg, f.get("class"), "".join(f.itertext()),
                                                        "".join(e.itertext())))
    ticks = [e for e in texts if e.get("class") == "tick"]
    for a in (e for e in texts if e.get("class") == "axis-label"):
        for e in ticks:
            if overlap(text_box(a), text_box(e)):
                fail("%s: the axis title '%s' overlaps the tick label '%s'" % (
                    svg, "".join(a.itertext()), "".join(e.itertext())))
    ok("%d texts inside the %gx%g canvas, title, caption and axis titles clear" % (len(texts), W, H))



# Color vision deficiency: Machado, Oliveira and Fernandes 2009, "A
# Physiologically-based Model for Simulation of Color Vision Deficiency"
# (IEEE TVCG 15(6)), severity 1.0, applied to linear sRGB.
CVD = {
    "normal vision": [[1, 0, 0], [0, 1, 0], [0, 0, 1]],
    "protanopia": [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216],
                   [-0.003882, -0.048116, 1.051998]],
    "deuteranopia": [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413],
                     [-0.011820, 0.042940, 0.968881]],
    "tritanopia": [[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602],
                   [0.004733, 0.691367, 0.303900]],
}


def srgb(color):
    return [int(color[i:i + 2], 16) / 255.0 for i in (1, 3, 5)]


def over(color, alpha, ground):
    """color at alpha over ground, as SVG composites (in sRGB)."""
    return "#" + "".join("%02x" % round(255 * (alpha * c + (1 - alpha) * g))
                         for c, g in zip(srgb(color), srgb(ground)))


def lab_seen(color, kind):
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in srgb(color)]
    m = CVD[kind]
    r, g, b = (min(1.0, max(0.0, sum(m[i][j] * lin[j] for j in range(3)))) for i in range(3))
    xyz = (0.4124564 * r + 0.3575761 * g + 0.1804375 * b,
           0.2126729 * r + 0.7151522 * g + 0.0721750 * b,
           0.0193339 * r + 0.1191920 * g + 0.9503041 * b)
    f = [t ** (1 / 3.0) if t > (6 / 29.0) ** 3 else t / (3 * (6 / 29.0) ** 2) + 4 / 29.0
         for t in (xyz[0] / 0.95047, xyz[1], xyz[2] / 1.08883)]
    return (116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2]))


def ciede2000(p, q):
    """Sharma, Wu and Dalal 2005, "The CIEDE2000 Color-Difference Formula"."""
    (L1, a1, b1), (L2, a2, b2) = p, q
    cb = (math.hypot(a1, b1) + math.hypot(a2, b2)) / 2
    g = 0.5 * (1 - math.sqrt(cb ** 7 / (cb ** 7 + 25.0 ** 7)))
    a1, a2 = (1 + g) * a1, (1 + g) * a2
    c1, c2 = math.hypot(a1, b1), math.hypot(a2, b2)
    h1 = math.degrees(math.atan2(b1, a1)) % 360 if c1 else 0.0
    h2 = math.degrees(math.atan2(b2, a2)) % 360 if c2 else 0.0
    dh = 0.0 if c1 * c2 == 0 else (h2 - h1 + 180) % 360 - 180
    dH = 2 * math.sqrt(c1 * c2) * math.sin(math.radians(dh / 2))
    lb, cbp = (L1 + L2) / 2, (c1 + c2) / 2
    if c1 * c2 == 0:
        hb = h1 + h2
    elif abs(h1 - h2) <= 180:
        hb = (h1 + h2) / 2
    else:
        hb = (h1 + h2 + 360) / 2 if h1 + h2 < 360 else (h1 + h2 - 360) / 2
    t = (1 - 0.17 * math.cos(math.radians(hb - 30)) + 0.24 * math.cos(math.radians(2 * hb))
         + 0.32 * math.cos(math.radians(3 * hb + 6)) - 0.20 * math.cos(math.radians(4 * hb - 63)))
    rt = -math.sin(math.radians(60 * math.exp(-((hb - 275) / 25) ** 2))) * 2 * math.sqrt(cbp ** 7 / (cbp ** 7 + 25.0 ** 7))
    sl = 1 + 0.015 * (lb - 50) ** 2 / math.sqrt(20 + (lb - 50) ** 2)
    sc, sh = 1 + 0.045 * cbp, 1 + 0.015 * cbp * t
    return math.sqrt(((L2 - L1) / sl) ** 2 + ((c2 - c1) / sc) ** 2 + (dH / sh) ** 2
                     + rt * ((c2 - c1) / sc) * (dH / sh))


def apart(named, least, what):
    """Each pair of named colors (name -> (group, color)), of other groups,
    at least least apart in every vision; the closest pair's distance."""
    if abs(ciede2000((50, 2.6772, -79.7751), (50, 0, -82.7485)) - 2.0425) > 1e-4:
        fail("CIEDE2000 misses Sharma et al.'s first test pair")
    closest = None
    for kind in CVD:
        for i, (n1, (g1, c1)) in enumerate(sorted(named.items())):
            for n2, (g2, c2) in sorted(named.items())[i + 1:]:
                if g1 == g2:
                    continue
                d = ciede2000(lab_seen(c1, kind), lab_seen(c2, kind))
                if d < float(least):
                    fail("%s: %s %s and %s %s are %.1f apart (CIEDE2000) in %s, under %s"
                         % (what, n1, c1, n2, c2, d, kind, least))
                closest = d if closest is None else min(closest, d)
    return closest


def cmd_states(svg, least):
    root = root_of(svg)
    ground = root.find(NS + "rect").get("fill")
    swatch = {}
    for g in by_class(root, "g", "legend"):
        rects, texts = [r for r in g.findall(NS + "rect")[1:] if r.get("stroke")], g.findall(NS + "text")
        for r, t in zip(rects, texts):
            swatch[t.text.split(" (")[0]] = r.get("fill")
    for k in ("attention", "MLP", "vanishing", "exploding"):
        if k not in swatch:
            fail("no legend swatch for %s: %s" % (k, sorted(swatch)))
    if swatch["MLP"] != swatch["attention"]:
        fail("the MLP's swatch %s is not the attention's %s" % (swatch["MLP"], swatch["attention"]))
    named = {"ground": ("ground", ground)}
    for state, key in (("normal", "attention"), ("vanishing", "vanishing"), ("exploding", "exploding")):
        named[state] = (state, swatch[key])
    for b in by_class(root, "rect", "bar"):
        if b.get("fill") not in swatch.values() or b.get("fill-opacity") not in (None, "1", "1.00"):
            fail("a bar filled %s (opacity %s) that no legend swatch shows" % (b.get("fill"), b.get("fill-opacity")))
    d = apart(named, least, svg)
    ok("the states' colors at least %.1f apart (CIEDE2000) and from the ground in normal vision, "
       "protanopia, deuteranopia and tritanopia" % d)


# xterm's default colors, bold shown bright (its boldColors default)
XTERM = {"BLACK": ("#000000", "#7f7f7f"), "RED": ("#cd0000", "#ff0000"), "GREEN": ("#00cd00", "#00ff00"),
         "YELLOW": ("#cdcd00", "#ffff00"), "BLUE": ("#0000ee", "#5c5cff"),
         "MAGENTA": ("#cd00cd", "#ff00ff"), "CYAN": ("#00cdcd", "#00ffff"), "WHITE": ("#e5e5e5", "#ffffff")}


def cmd_tui_states(src, least):
    """Both palettes of the live view (tui_palette.c: the dark one, then
    --light's): the bar states apart in every vision, and --light's also
    from its white ground."""
    import re
    text = open(src).read()
    tables = re.split(r"static const tui_style_spec \w+\[TUI_S_COUNT\]", text)[1:]
    if len(tables) != 2:
        fail("%s: want two palettes (dark, light), found %d" % (src, len(tables)))
    said = []
    for name, table in zip(("dark", "light"), tables):
        named = {}
        for state in ("NORMAL", "VANISH", "EXPLODE"):
            m = re.search(r"\[TUI_S_%s\]\s*=\s*\{TUI_C_(\w+),\s*-1,\s*([^,]+)," % state, table)
            if not m:
                fail("%s: no %s color spec for TUI_S_%s" % (src, name, state))
            named[state.lower()] = (state, XTERM[m.group(1)]["TUI_A_BOLD" in m.group(2)])
        if name == "light":
            named["ground"] = ("ground", "#ffffff")
        d = apart(named, least, "%s (%s)" % (src, name))
        said.append("%s: %s, %.1f" % (name, ", ".join("%s %s" % (k, c) for k, (g, c) in sorted(named.items())), d))
    ok("the live view's states at least %s apart in every vision (%s)" % (least, "; ".join(said)))

def cmd_type(svg, px):
    root = root_of(svg)
    least = None
    for e in texts_of(root):
        size = float(e.get("font-size"))
        if size < float(px):
            fail("%s: '%s' (%s) at %.1f px, under %s" % (svg, "".join(e.itertext()), e.get("class"), size, px))
        least = size if least is None else min(least, size)
    ok("every text at %.1f px or more" % least)

def cmd_map_scale(svg, vmin, vmax):
    """--vmin/--vmax: the color bar runs from vmin to vmax, and every finite
    cell sits in the bin its value gives on that scale (clamped to the ends)."""
    root = root_of(svg)
    lo, hi = float(vmin), float(vmax)
    ramp = ramp_of(root)
    if ramp:
        return ramp_scale(root, ramp, lo, hi)
    bins = sorted(by_class(root, "rect", "colorbar-bin"), key=lambda b: int(b.get("data-bin")))
    if not bins or abs(float(bins[0].get("data-lo")) - lo) > 1e-9 * max(1, abs(lo)) \
            or abs(float(bins[-1].get("data-hi")) - hi) > 1e-9 * max(1, abs(hi)):
        fail("color bar %s..%s, want %g..%g" % (bins[0].get("data-lo") if bins else None,
                                               bins[-1].get("data-hi") if bins else None, lo, hi))
    n, checked = len(bins), 0
    for c in by_class(root, "rect", "cell"):
        if c.get("data-bin") is None or c.get("data-value") in (None, ""):
            continue
        x = float(c.get("data-value"))
        if x != x or c.get("data-exploded") not in (None, "0"):
            continue  # no finite loss, or hatched: off the scale
        want = min(n - 1, max(0, int((x - lo) / (hi - lo) * n // 1)))
        if int(c.get("data-bin")) != want:
            fail("cell %s (%g) in bin %s, want %d on %g..%g" % (c.get("data-key"), x, c.get("data-bin"), want, lo, hi))
        checked += 1
    if not checked:
        fail("no finite cell to check")
    ok("%d cells on the scale %g..%g" % (checked, lo, hi))

def ramp_scale(root, ramp, lo, hi):
    """The gradient runs lo..hi, its stops darken from the low end, and each
    finite cell's fill is its color at the cell's value (the ends' beyond)."""
    if abs(ramp[0] - lo) > 1e-9 * max(1, abs(lo)) or abs(ramp[1] - hi) > 1e-9 * max(1, abs(hi)):
        fail("the gradient runs %g..%g, want %g..%g" % (ramp[0], ramp[1], lo, hi))
    light = [lightness(c) for _, c in ramp[2]]
    if any(b >= a for a, b in zip(light, light[1:])):
        fail("the gradient's stops do not darken from its low end: L* %s" % light)
    checked = clamped = 0
    for c in by_class(root, "rect", "cell"):
        x = num(c.get("data-value") or "")
        if x is None or not math.isfinite(x) or c.get("data-on-ramp") != "1":
            continue  # no value, or off the scale
        same, col = ramp_matches(ramp, x, c.get("fill"))
        if not same:
            fail("cell %s (%g): fill %s, the gradient's %s" % (c.get("data-key"), x, c.get("fill"), col))
        checked += 1
        clamped += not lo <= x <= hi
    if not checked:
        fail("no finite cell to check")
    ramp_ticks(root, ramp)
    ok("%d cells on the gradient %g..%g (%d beyond it, at an end)" % (checked, lo, hi, clamped))


if __name__ == "__main__":
    cmd = globals().get("cmd_" + sys.argv[1])
    if not cmd:
        fail("unknown command " + sys.argv[1])
    cmd(*sys.argv[2:])
