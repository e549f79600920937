#!/bin/sh
# plot.sh - --plot from the outside: each kind drawn from the committed
# inputs in tests/fixtures/plot/ and, for the map, tests/fixtures/sweepmap/
# (made by the program: see make.sh there),
# read back as XML and compared with the rows (tests/lib/plot_check.py), and
# rendered to PNG with rsvg-convert; gaps, one row, 10^5 rows, bad input.
# Usage: NS_BIN=./normscope sh tests/sh/plot.sh
# Prints "N passed, N failed"; exits non-zero on any failure.
BIN=${NS_BIN:-./normscope}
PY=${PYTHON:-/usr/bin/python3}
D=$(dirname "$0")/..
F=$D/fixtures/plot
CHECK="$PY $D/lib/plot_check.py"
T=$(mktemp -d /tmp/ns_plot.XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
no() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }

# check DESC CMD...: the command succeeds (its output shown on failure)
check() {
    desc=$1
    shift
    if "$@" >"$T/log" 2>&1; then ok; else no "$desc: $(cat "$T/log")"; fi
}

# plot OUT ARGS...: draw, then it must parse as SVG and render to a PNG
# that is not blank
plot() {
    out=$1
    shift
    if ! "$BIN" --plot "$@" --out "$T/$out" 2>"$T/err"; then
        no "--plot $*: exit $?: $(cat "$T/err")"
        return 1
    fi
    check "$out is SVG" $CHECK svg "$T/$out"
    if rsvg-convert "$T/$out" -o "$T/$out.png" 2>"$T/err"; then
        check "$out renders" $CHECK png "$T/$out.png"
    else
        no "rsvg-convert $out: $(cat "$T/err")"
    fi
}

# expect_bad NEEDLE ARGS...: exit 2, one line on stderr naming NEEDLE, no file
expect_bad() {
    needle=$1
    shift
    rm -f "$T/bad.svg"
    "$BIN" "$@" >"$T/out" 2>"$T/err" </dev/null
    rc=$?
    if [ "$rc" -ne 2 ]; then no "$*: exit $rc, want 2"; return; fi
    if [ "$(wc -l <"$T/err")" -ne 1 ]; then no "$*: not one line on stderr: $(cat "$T/err")"; return; fi
    if ! grep -q -- "$needle" "$T/err"; then no "$*: stderr lacks '$needle': $(cat "$T/err")"; return; fi
    if [ -e "$T/bad.svg" ]; then no "$*: left $T/bad.svg behind"; return; fi
    ok
}

# --- each kind from one run: NaN rows (gaps), a rewind, settings changed ---
plot loss.svg "$F/run.csv" && {
    check "loss lines: points and gaps" $CHECK loss "$T/loss.svg" "$F/run.csv"
    check "loss markers" $CHECK markers "$T/loss.svg" "$F/run.csv"
}
plot layers.svg "$F/run.csv" --kind layers --step 20 &&
    check "layer bars" $CHECK layers "$T/layers.svg" "$F/run.csv" 20
plot layers_nan.svg "$F/run.csv" --kind layers --step 12 &&
    check "layer bars at a NaN step" $CHECK layers "$T/layers_nan.svg" "$F/run.csv" 12
plot profile.svg "$F/run.csv" --kind profile --step 1,12,30 &&
    check "profile lines" $CHECK profile "$T/profile.svg" "$F/run.csv" 1,12,30
plot heatmap.svg "$F/run.csv" --kind heatmap &&
    check "heatmap cells" $CHECK heatmap "$T/heatmap.svg" "$F/run.csv"
plot profile_default.svg "$F/run.csv" --kind profile
grep -c 'class="profile"' "$T/profile_default.svg" | grep -qx 8 && ok || no "profile: not 4 default steps (MLP and attention each)"

# --- the precision figures: act max and headroom, overflow and underflow,
# of each layer over the run (run.csv: fp16 at lr 10, NaN rows, a rewind) ---
for k in headroom overflow; do
    plot $k.svg "$F/run.csv" --kind $k && check "$k lines" $CHECK precision "$T/$k.svg" "$F/run.csv" $k
    plot cmp_$k.svg "$F/compare.csv" --kind $k &&
        check "compare $k lines" $CHECK precision "$T/cmp_$k.svg" "$F/compare.csv" $k
done
grep -q 'class="nonfinite"' "$T/headroom.svg" && ok || no "headroom: the diverged steps not ticked"
# --- --kind series: any per-layer column of the table over the run, named
# by --metric (a log axis for update_ratio's decades, linear for resid_rms) ---
for c in update_ratio resid_rms grad_ln; do
    plot series_$c.svg "$F/run.csv" --kind series --metric $c &&
        check "series $c lines" $CHECK precision "$T/series_$c.svg" "$F/run.csv" series:$c
done
plot cmp_series.svg "$F/compare.csv" --kind series --metric resid_max &&
    check "compare series lines" $CHECK precision "$T/cmp_series.svg" "$F/compare.csv" series:resid_max
grep -q 'resid_rms of each layer over the run' "$T/series_resid_rms.svg" && ok ||
    no "series: the title does not name the column"
expect_bad "--kind series needs --metric, a per-layer column: grad_attn, grad_ffn" \
    --plot "$F/run.csv" --kind series --out "$T/bad.svg"
expect_bad "--metric 'best_val': expected a per-layer column: grad_attn," \
    --plot "$F/run.csv" --kind series --metric best_val --out "$T/bad.svg"
expect_bad "--scale goes with --kind map" --plot "$F/run.csv" --kind series --metric act_max --scale continuous \
    --out "$T/bad.svg"
expect_bad "--rows and --cols go with --kind map" --plot "$F/run.csv" --kind series --metric act_max --rows lr \
    --out "$T/bad.svg"
for size in 800x450 1600x900; do
    for m in "" --mono --light; do
        out="$T/fit_series_$size$m.svg"
        "$BIN" --plot "$F/compare.csv" --kind series --metric update_ratio --size $size $m --out "$out" \
            2>"$T/err" || { no "series $size$m: $(cat "$T/err")"; continue; }
        check "series $size$m: texts inside" $CHECK extents "$out"
    done
done
check "series 1600x900: type >= 20 px" $CHECK type "$T/fit_series_1600x900.svg" 20

# --- --kind change: out_change of both runs of a comparison on one axis,
# a point at each measured step (the first 100, then the validations: 102
# of 110), none where the CSV's cell is empty; a file without the column
# refused ---
"$BIN" --headless -q -L 2 -d 16 -H 2 -T 8 -B 2 --steps 110 --val-every 5 --compare norm=post \
    --csv "$T/oc.csv" >/dev/null 2>"$T/err" || no "the out_change run: $(cat "$T/err")"
plot change.svg "$T/oc.csv" --kind change && {
    pts=$(grep -o 'class="series" data-name="out_change [ab]: [^"]*"[^>]*data-points="[0-9]*"' "$T/change.svg" |
        sed 's/.*data-points="//; s/"//' | tr '\n' ' ')
    [ "$pts" = "102 102 " ] && ok || no "change: points of runs a and b: '$pts', want 102 each"
    grep -q 'b: norm=post' "$T/change.svg" && ok || no "change: run b not named by its setting"
}
expect_bad "no 'out_change' column: --kind change needs it" --plot "$F/run.csv" --kind change \
    --out "$T/bad.svg"

# --- a comparison: both runs, one marker for a change sent to both ---
plot cmp_loss.svg "$F/compare.csv" && {
    check "compare loss lines" $CHECK loss "$T/cmp_loss.svg" "$F/compare.csv"
    check "compare markers" $CHECK markers "$T/cmp_loss.svg" "$F/compare.csv"
}
[ "$(grep -c 'class="marker"' "$T/cmp_loss.svg")" -eq 1 ] && ok || no "compare: a shared change marked twice"
plot cmp_layers.svg "$F/compare.csv" --kind layers &&
    check "compare bars" $CHECK layers "$T/cmp_layers.svg" "$F/compare.csv" 20
plot cmp_profile.svg "$F/compare.csv" --kind profile --step 5,20 &&
    check "compare profile" $CHECK profile "$T/cmp_profile.svg" "$F/compare.csv" 5,20
plot cmp_heat.svg "$F/compare.csv" --kind heatmap &&
    check "compare heatmap" $CHECK heatmap "$T/cmp_heat.svg" "$F/compare.csv"
grep -q 'b: norm=post' "$T/cmp_loss.svg" && ok || no "compare: run b not named by its setting"
# each panel titled by the setting its run differs in
check "compare bars: panel titles" $CHECK titles "$T/cmp_layers.svg" "a: norm=pre" "b: norm=post"
check "compare heatmap: panel titles" $CHECK titles "$T/cmp_heat.svg" "a: norm=pre" "b: norm=post"
# two runs of six steps, more pairs than colors: no two lines share a
# color and a dash (each run's step apart, and each run apart)
plot cmp_profile6.svg "$F/compare.csv" --kind profile --step 1,4,8,12,16,20 &&
    check "compare profile of 6 steps" $CHECK profile "$T/cmp_profile6.svg" "$F/compare.csv" 1,4,8,12,16,20
styles=$(awk '/class="profile"/ { g = 1; next } g && /stroke=/ { s = $0; c = d = ""
        if (match(s, /stroke="[^"]*"/)) c = substr(s, RSTART, RLENGTH)
        if (match(s, /stroke-dasharray="[^"]*"/)) d = substr(s, RSTART, RLENGTH)
        print c " " d; g = 0 }' "$T/cmp_profile6.svg")
[ "$(echo "$styles" | wc -l)" -eq 24 ] && [ "$(echo "$styles" | sort -u | wc -l)" -eq 24 ] && ok ||
    no "a profile of 2 runs x 6 steps x 2 parts: $(echo "$styles" | sort | uniq -c | sort -rn | head -3)"
# a rewind to step 0 that turns warmup on (the warmup lesson's): the
# rewind marked where the first pass ends, its label saying warmup=on is
# the replay's (which had it from its first step, not from there); the
# abandoned curves in their runs' colors, not greyed out
printf 'at 10: rewind\nat 10: warmup on\n' >"$T/rw.script"
"$BIN" --headless -q -L 2 -d 16 -H 2 -T 16 -B 4 --val-every 0 --warmup 0 --steps 20 --snapshot-every 0 \
    --compare norm=pre --script "$T/rw.script" --csv "$T/rw.csv" 2>"$T/err" &&
    plot rw.svg "$T/rw.csv" &&
    marks=$(grep -o 'class="marker" data-step="[0-9]*"\|marker-label">[^<]*' "$T/rw.svg" | sed 's/.*data-step="//; s/"$//; s/.*">//' | tr '\n' '|') &&
    [ "$marks" = "10|rewind 10 → 0; the replay: warmup=on|" ] && ok || no "rewind to 0 with warmup on: markers '$marks'"
check "rewind to 0: markers" $CHECK markers "$T/rw.svg" "$T/rw.csv"
check "rewind to 0: loss lines" $CHECK loss "$T/rw.svg" "$T/rw.csv"
n=$(awk '/<g class="abandoned">/ { g = 1 } g && /stroke="/ { if (match($0, /stroke="[^"]*"/)) print substr($0, RSTART, RLENGTH) } /<\/g>/ { g = 0 }' "$T/rw.svg" | sort -u | wc -l)
[ "$n" -eq 2 ] && ok || no "the abandoned curves of two runs: $n colors, want 2 (one per run)"
# --mono: the runs of a profile apart by their dashes, the heatmap grey
plot cmp_profile_mono.svg "$F/compare.csv" --kind profile --step 5,20 --mono &&
    check "compare profile --mono" $CHECK profile "$T/cmp_profile_mono.svg" "$F/compare.csv" 5,20
plot cmp_heat_mono.svg "$F/compare.csv" --kind heatmap --mono &&
    check "compare heatmap --mono" $CHECK heatmap "$T/cmp_heat_mono.svg" "$F/compare.csv"
# a comparison's panels on one scale: run a's attention gradient 1e-9 at
# the last step (a: 1e-9.., b: 1e-5..1e2 alone) stretches both panels
$PY - "$F/compare.csv" "$T/tiny.csv" <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
rows[-1]["l0_grad_attn"] = "1e-09"
with open(sys.argv[2], "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0].keys()), lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
EOF
plot tiny_layers.svg "$T/tiny.csv" --kind layers &&
    check "compare bars on one scale" $CHECK layers "$T/tiny_layers.svg" "$T/tiny.csv" 20
grep -o 'class="plot-area"[^>]*' "$T/tiny_layers.svg" | sed 's/.*data-x0="//; s/".*//' |
    awk '$1 <= -9 { n++ } END { exit n != 2 }' && ok ||
    no "the panels do not both reach 1e-9: $(grep -o 'class="plot-area"[^>]*' "$T/tiny_layers.svg")"
# runs that differ in no recorded setting: said so, not left as a bare "a";
# differing only in the loss scale in force: named by it
$PY - "$F/compare.csv" "$T/same.csv" "$T/scale.csv" <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
for out, scale in ((sys.argv[2], None), (sys.argv[3], "65536")):
    with open(out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()), lineterminator="\n")
        w.writeheader()
        for r in rows:
            r = dict(r)
            r["b_norm"] = r["norm"]
            if scale:
                r["b_loss_scale"] = scale
            w.writerow(r)
EOF
plot same_layers.svg "$T/same.csv" --kind layers &&
    check "unrecorded difference: said in the titles" $CHECK titles "$T/same_layers.svg" \
        "a: differs from b in a setting the file does not record" "b: differs from a"
plot scale_heat.svg "$T/scale.csv" --kind heatmap &&
    check "a loss-scale pair: titled by the scale" $CHECK titles "$T/scale_heat.svg" "a: loss scale 1" "b: loss scale 65536"
# a run that goes non-finite mid-run: a gap and red ticks, each run's
# its own, named in the legend
printf 'at 10: lr 30\n' >"$T/s.txt"
"$BIN" --headless -q -L 2 -d 32 -T 16 -B 4 --steps 24 --warmup 0 --precision fp16 --fp32-norms off \
    --loss-scale off --compare fp32-norms=on --script "$T/s.txt" --on-diverge continue --val-every 10 \
    --csv "$T/div.csv" 2>/dev/null
plot div.svg "$T/div.csv" && check "non-finite ticks of each run" $CHECK loss "$T/div.svg" "$T/div.csv"
grep -q '>train loss a: fp32-norms=off, smoothed<' "$T/div.svg" && ok || no "run a not named as its flag spells the setting"
for r in a b; do
    n=$([ $r = a ] && echo 0 || echo 1)
    grep -q "class=\"nonfinite\" data-run=\"$n\"" "$T/div.svg" && ok || no "run $r's non-finite ticks missing"
    grep -q "$r: a step not finite" "$T/div.svg" && ok || no "run $r's non-finite ticks not in the legend"
done
# a step that diverged inside (a norm's variance) with its loss still
# finite: ticked and labelled with the operation the row names
$PY - "$F/compare.csv" "$T/inside.csv" <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
names = list(rows[0].keys()) + [k for k in ("state", "first_nonfinite") if k not in rows[0]]
rows[-1]["state"], rows[-1]["first_nonfinite"] = "diverged", "forward; final norm variance"
with open(sys.argv[2], "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=names, restval="", lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
EOF
last=$(tail -1 "$F/compare.csv" | cut -d, -f1)
plot inside.svg "$T/inside.csv" && check "a divergence with a finite loss" $CHECK loss "$T/inside.svg" "$T/inside.csv"
grep -q "class=\"nonfinite\" data-run=\"0\" data-step=\"$last\"" "$T/inside.svg" && ok || no "no tick where the state says diverged"
grep -q ">a diverged at step $last: forward, final norm variance<" "$T/inside.svg" && ok ||
    no "the divergence not labelled with its operation"

# --- JSONL, and a followed stream's lines, draw the same figure as the CSV ---
for k in loss layers profile heatmap; do
    "$BIN" --plot "$F/run.csv" --kind $k --out "$T/c_$k.svg" 2>/dev/null
    for j in run.jsonl stream.jsonl; do
        "$BIN" --plot "$F/$j" --kind $k --out "$T/j_$k.svg" 2>"$T/err" || no "$j $k: $(cat "$T/err")"
        grep -v 'class="caption"' "$T/c_$k.svg" >"$T/a"
        grep -v 'class="caption"' "$T/j_$k.svg" >"$T/b"
        cmp -s "$T/a" "$T/b" && ok || no "$j --kind $k differs from the CSV's figure"
    done
done
"$BIN" --plot "$F/compare.jsonl" --out "$T/cj.svg" 2>/dev/null
grep -v 'class="caption"' "$T/cj.svg" >"$T/a"
grep -v 'class="caption"' "$T/cmp_loss.svg" >"$T/b"
cmp -s "$T/a" "$T/b" && ok || no "compare.jsonl differs from compare.csv"
cat "$F/run.csv" | "$BIN" --plot - --out "$T/stdin.svg" 2>/dev/null && $CHECK svg "$T/stdin.svg" >/dev/null && ok ||
    no "--plot - (standard input)"

# --- --mono: dashes, no color; --size; --log ---
plot mono.svg "$F/compare.csv" --mono
grep 'class="series"' "$T/mono.svg" | grep -v 'data-name="smoothed' | grep -c 'stroke-dasharray' | grep -qx 3 && ok ||
    no "--mono: the 3 lines after the first are not dashed"
grep -Eo '(stroke|fill)="#[0-9a-f]{6}"' "$T/mono.svg" | grep -Eqv '#([0-9a-f]{2})\1\1"' &&
    no "--mono: a color that is not grey" || ok
plot small.svg "$F/run.csv" --size 800x450
grep -q 'width="800" height="450"' "$T/small.svg" && ok || no "--size 800x450"
plot log.svg "$F/run.csv" --log
grep -q 'log scale' "$T/log.svg" && ok || no "--log: axis not labelled log"

# --- a loss that rises and stays up: the legend leaves the top right for an
# empty corner ---
$PY - "$F/run.csv" "$T/rising.csv" <<'EOF'
import csv, sys
row = next(csv.DictReader(open(sys.argv[1])))
with open(sys.argv[2], "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(row.keys()), lineterminator="\n")
    w.writeheader()
    for i in range(100):
        row["step"] = str(i + 1)
        row["loss"] = repr(min(2.0 + 0.2 * i, 5.0))  # up, then flat along the top
        row["val_loss"] = ""
        w.writerow(row)
EOF
plot rising.svg "$T/rising.csv" && check "rising loss: points and the legend's corner" $CHECK loss "$T/rising.svg" "$T/rising.csv"

# --- one row makes a figure of each kind ---
for k in loss layers profile heatmap; do
    plot one_$k.svg "$F/one.csv" --kind $k
done
grep 'class="series"' "$T/one_loss.svg" | grep -q 'data-points="1"' && ok || no "one row: not one point"
# its loss axis spans a few thousandths: ticks of 5 digits, clear of the axis title
check "one row: texts inside, the axis title clear of the ticks" $CHECK extents "$T/one_loss.svg"

# --- 10^5 rows: decimated to the pixel width, under 1 MB ---
$PY - "$F/run.csv" "$T/big.csv" <<'EOF'
import csv, math, sys
src, dst = sys.argv[1], sys.argv[2]
with open(src) as f:
    r = csv.reader(f)
    head = next(r)
    row = next(r)
with open(dst, "w") as f:
    f.write(",".join(head) + "\n")
    for i in range(1, 100001):
        row[0] = str(i)
        row[1] = repr(3 + math.sin(i / 500.0) + (i % 7) * 0.01)
        f.write(",".join(row) + "\n")
EOF
for k in loss heatmap; do
    plot big_$k.svg "$T/big.csv" --kind $k
    size=$(wc -c <"$T/big_$k.svg")
    [ "$size" -lt 1000000 ] && ok || no "10^5 rows --kind $k: $size bytes"
done
check "10^5 rows decimated" $CHECK decimated "$T/big_loss.svg"

# --- a sweep's map (tests/fixtures/sweepmap: a real 24-run sweep, seeds 1-2) ---
M=$D/fixtures/sweepmap
plot map.svg "$M" --kind map &&
    check "map: cells, fills, marks (default rows lr, columns layers)" $CHECK map "$T/map.svg" "$M/results.csv" lr layers
plot map_rc.svg "$M/results.csv" --kind map --rows norm --cols lr &&
    check "map --rows norm --cols lr" $CHECK map "$T/map_rc.svg" "$M/results.csv" norm lr
grep -c 'class="panel-title"' "$T/map_rc.svg" | grep -qx 2 && ok || no "map: not one panel per layers value"
grep -q 'common: -d 16 -H 2' "$T/map.svg" && ok || no "map: the common flags not in the caption"
# every cell of two trained runs has room at 1600x900 for its 95% interval
# (its value checked by the map command above)
[ "$(grep -c 'class="cell-ci"' "$T/map.svg")" -eq "$(grep -c 'class="cell-spread"' "$T/map.svg")" ] &&
    [ "$(grep -c 'class="cell-ci"' "$T/map.svg")" -ge 6 ] && ok ||
    no "map: $(grep -c 'class="cell-ci"' "$T/map.svg") cells with a 95% interval of $(grep -c 'class="cell-spread"' "$T/map.svg") with a spread"
plot map_mono.svg "$M" --kind map --mono &&
    check "map --mono" $CHECK map "$T/map_mono.svg" "$M/results.csv" lr layers
grep -Eo '(stroke|fill)="#[0-9a-f]{6}"' "$T/map_mono.svg" | grep -Eqv '#([0-9a-f]{2})\1\1"' &&
    no "map --mono: a color that is not grey" || ok
# a shared color scale: cells beyond it take its ends' colors
plot map_scale.svg "$M" --kind map --vmin 2.5 --vmax 2.9 &&
    check "map --vmin 2.5 --vmax 2.9: the bar and each cell's bin" $CHECK map_scale "$T/map_scale.svg" 2.5 2.9
grep -q 'color scale from --vmin/--vmax' "$T/map_scale.svg" && ok || no "map: the caption does not say the scale was set"
plot map_vmax.svg "$M" --kind map --vmax 9 &&
    check "map --vmax 9: from the best cell to 9" $CHECK map_scale "$T/map_vmax.svg" \
        "$(sed -n 's/.*class="colorbar-bin" data-bin="0" data-lo="\([^"]*\)".*/\1/p' "$T/map.svg")" 9
expect_bad "--vmin 3 is not below --vmax 2" --plot "$M" --kind map --vmin 3 --vmax 2 --out "$T/bad.svg"
expect_bad "--vmin 'x': expected a finite number" --plot "$M" --kind map --vmin x --out "$T/bad.svg"
expect_bad "--vmin and --vmax go with --kind map" --plot "$F/one.csv" --vmin 1 --out "$T/bad.svg"
expect_bad "would run from 50 to" --plot "$M" --kind map --vmin 50 --out "$T/bad.svg"
# --metric: each cell the metric's value computed from results.csv (the
# column's mean over the runs that neither diverged nor failed, or the
# share of them that stalled), the title, bar and caption naming it
for mt in best_val update_ratio_end stalled; do
    plot map_$mt.svg "$M" --kind map --metric $mt &&
        check "map --metric $mt: each cell the metric's value" $CHECK map "$T/map_$mt.svg" "$M/results.csv" lr layers $mt
done
"$BIN" --plot "$M" --kind map --metric loss --out "$T/map_loss.svg" && cmp -s "$T/map.svg" "$T/map_loss.svg" &&
    ok || no "--metric loss is not the map without --metric"
grep -q 'class="title" font-weight="bold">Stability map: best validation loss, mean over seeds<' "$T/map_best_val.svg" &&
    grep -q 'class="colorbar-title">best val, nats<' "$T/map_best_val.svg" &&
    grep -q 'lower is better (bright)' "$T/map_best_val.svg" && ok || no "--metric best_val: title, bar or caption"
# the color bar says which end is better where one is (a map cut into a
# slide loses its caption), and nothing where neither is
for mt in loss best_val stalled; do
    grep -q 'class="colorbar-better"[^>]*>lower (bright) is better<' "$T/map_$mt.svg" && ok ||
        no "--metric $mt: the color bar does not say lower is better"
done
! grep -q 'class="colorbar-better"' "$T/map_update_ratio_end.svg" && ok ||
    no "--metric update_ratio_end: the color bar calls an end better"
grep -q 'class="colorbar-title">update ratio<' "$T/map_update_ratio_end.svg" &&
    grep -q 'neither end is better' "$T/map_update_ratio_end.svg" &&
    ! grep -q 'is better (bright)' "$T/map_update_ratio_end.svg" && ok ||
    no "--metric update_ratio_end: its bar, or a caption that calls an end of it better"
# a cell with 1 of its 2 seeds stalled has a share of 0.5; with every run
# diverged, none (hatched, as a diverged cell's loss)
awk -F, -v OFS=, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; print; next }
    $c["layers"] == 1 && $c["lr"] == "0.003" && $c["norm"] == "pre" && $c["seed"] == 1 {
        $c["stalled"] = 1; $c["status"] = "stalled" } { print }' "$M/results.csv" >"$T/half.csv"
plot map_half.svg "$T/half.csv" --kind map --metric stalled --scale continuous &&
    check "map --metric stalled, a cell 1/2 stalled" $CHECK map "$T/map_half.svg" "$T/half.csv" lr layers stalled
grep -q 'data-key="layers=1,lr=0.003,norm=pre" data-value="0.5" ' "$T/map_half.svg" && ok ||
    no "1 of 2 runs stalled: not a share of 0.5"
grep -q 'data-key="layers=1,lr=10,norm=pre" data-value="nan" .*fill="url(#nan)"' "$T/map_half.svg" && ok ||
    no "every run diverged: a stalled share drawn"
expect_bad "--metric 'frob': expected one of loss, best_val, update_ratio_end, stalled" --plot "$M" --kind map --metric frob --out "$T/bad.svg"
expect_bad "--metric and --scale go with --kind map" --plot "$F/one.csv" --metric best_val --out "$T/bad.svg"
expect_bad "--metric and --scale go with --kind map" --plot "$F/run.csv" --kind layers --scale continuous --out "$T/bad.svg"
expect_bad "--scale 'log': expected binned or continuous" --plot "$M" --kind map --scale log --out "$T/bad.svg"
# --scale continuous: each fill the gradient's color at the cell's value,
# so cells one bin holds differ; in --mono, greys; with --vmin/--vmax the
# ends' colors beyond them
plot map_cont.svg "$M" --kind map --scale continuous &&
    check "map --scale continuous: fills on the gradient" $CHECK map "$T/map_cont.svg" "$M/results.csv" lr layers
fills() { grep -o 'class="cell" .*data-exploded="0".* fill="#[0-9a-f]*"' "$1" | grep -o 'fill="#[0-9a-f]*"' | sort -u | wc -l; }
[ "$(fills "$T/map_cont.svg")" -gt "$(fills "$T/map.svg")" ] && ok ||
    no "--scale continuous: $(fills "$T/map_cont.svg") fills, no more than the bins' $(fills "$T/map.svg")"
plot map_cont_mono.svg "$M" --kind map --scale continuous --mono --metric update_ratio_end &&
    check "map --scale continuous --mono" $CHECK map "$T/map_cont_mono.svg" "$M/results.csv" lr layers update_ratio_end
grep -Eo '(stroke|fill|stop-color)="#[0-9a-f]{6}"' "$T/map_cont_mono.svg" | grep -Eqv '#([0-9a-f]{2})\1\1"' &&
    no "map --scale continuous --mono: a color that is not grey" || ok
plot map_cont_scale.svg "$M" --kind map --scale continuous --vmin 2.5 --vmax 2.9 &&
    check "map --scale continuous --vmin 2.5 --vmax 2.9" $CHECK map_scale "$T/map_cont_scale.svg" 2.5 2.9
cut -d, -f1,3,5- "$M/results.csv" >"$T/lr_only.csv"
plot map_one_axis.svg "$T/lr_only.csv" --kind map &&
    check "map of one axis (lr), the others folded" $CHECK map "$T/map_one_axis.svg" "$T/lr_only.csv" - lr

# --- an outlier and long tick labels: a cell exploded to 2.8e12 is marked
# and hatched, and the scale still runs from the trained cells to the
# plateau (3.09); numbers are cut to their cell; the rows' title (lr, with
# values like 0.00316228) stays on the canvas and off the other panel
awk 'BEGIN {
    OFS = ","
    print "id,layers,lr,norm,seed,steps,train_loss,val_loss,diverged_step,stalled,exploded,ratio_first,ratio_last,wall_s,status"
    split("0.001 0.00316228 0.01", lr, " ")
    n = 0
    for (l = 2; l <= 6; l += 4) for (i = 1; i <= 3; i++) for (j = 1; j <= 2; j++) for (s = 1; s <= 2; s++) {
        norm = j == 1 ? "post" : "pre"
        loss = 2.4 + 0.05 * i + 0.02 * s; st = 0; ex = 0
        if (norm == "post" && l == 6 && i == 3) { loss = 3.09; st = 1 }
        if (norm == "post" && l == 2 && i == 3 && s == 2) { loss = 2794610000000; ex = 1 }
        printf "%012x,%d,%s,%s,%d,100,%s,%s,,%d,%d,1,1,,ok\n", ++n, l, lr[i], norm, s, loss, loss, st, ex
    } }' >"$T/outlier.csv"
plot map_outlier.svg "$T/outlier.csv" --kind map &&
    check "map with an outlier and 2 panels of long tick labels" $CHECK map "$T/map_outlier.svg" "$T/outlier.csv" lr layers
hi=$(grep -o 'class="colorbar-bin" data-bin="8" data-lo="[^"]*" data-hi="[^"]*"' "$T/map_outlier.svg" | sed 's/.*data-hi="//; s/"//')
awk -v h="$hi" 'BEGIN { exit !(h != "" && h < 3.2) }' && ok || no "the outlier set the scale: top $hi"
grep -c 'class="cell-tag">1/2 exploded<' "$T/map_outlier.svg" | grep -qx 1 && ok || no "the exploded cell's tag"
grep -Eq '>[^<]*[1-9][0-9]{6}[^<]*</text>' "$T/map_outlier.svg" && no "a long number in the figure: $(grep -Eo '>[^<]*[1-9][0-9]{6}[^<]*<' "$T/map_outlier.svg" | head -2)" || ok
# in --mono the exploded cell's hatching is black: each of its lines (the
# value, the spread, the 95% interval, the tag) has a box of the ground under it, and no cell
# on the scale has one
plot map_outlier_mono.svg "$T/outlier.csv" --kind map --mono &&
    check "map --mono with an outlier" $CHECK map "$T/map_outlier_mono.svg" "$T/outlier.csv" lr layers
awk '/<g class="map-cell"/ { g = ""; inside = 1 } inside { g = g $0 "\n" }
     /<\/g>/ && inside { inside = 0
        ex = g ~ /data-exploded="1"/; n = gsub(/class="text-ground"/, "&", g)
        t = gsub(/class="cell-(value|spread|ci|tag)"/, "&", g)
        if (ex && (t < 3 || n != t)) bad = bad " exploded cell: " n " grounds for " t " lines"
        if (!ex && g !~ /url\(#/ && n) bad = bad " a cell on the scale has a ground" }
     END { if (bad) { print bad; exit 1 } }' "$T/map_outlier_mono.svg" >"$T/ground.txt" && ok ||
    no "map --mono: $(cat "$T/ground.txt")"

# --- bad input: one line, exit 2, nothing written ---
head -1 "$M/results.csv" >"$T/header_only.csv"
expect_bad "no rows" --plot "$T/header_only.csv" --kind map --out "$T/bad.svg"
cut -d, -f1-9 "$M/results.csv" >"$T/short.csv"
expect_bad "no 'stalled' column" --plot "$T/short.csv" --kind map --out "$T/bad.svg"
expect_bad "--rows 'frob': not an axis" --plot "$M" --kind map --rows frob --out "$T/bad.svg"
# --rows seed / --cols seed: each run a cell of its own, its value the
# run's own; the title and caption say so; a sweep of one seed refused
plot map_seed_rows.svg "$M" --kind map --rows seed &&
    check "map --rows seed: one cell per run" $CHECK map "$T/map_seed_rows.svg" "$M/results.csv" seed lr
plot map_seed_cols.svg "$M/results.csv" --kind map --rows lr --cols seed --light &&
    check "map --rows lr --cols seed --light: one cell per run" $CHECK map "$T/map_seed_cols.svg" "$M/results.csv" lr seed
plot map_seed_cont.svg "$M" --kind map --cols seed --scale continuous --metric best_val &&
    check "map --cols seed --metric best_val --scale continuous" $CHECK map "$T/map_seed_cont.svg" "$M/results.csv" lr seed best_val
grep -q 'class="title" font-weight="bold">Stability map: final validation loss of each run<' "$T/map_seed_rows.svg" &&
    grep -q 'seeds drawn as an axis: one run per cell' "$T/map_seed_rows.svg" &&
    ! grep -q 'data-runs="2"' "$T/map_seed_rows.svg" && ok ||
    no "map --rows seed: the title, caption or a cell does not say one run"
for size in 800x450 1600x900; do
    "$BIN" --plot "$M" --kind map --rows seed --size $size --out "$T/fit_seed.svg" 2>"$T/err" || no "map --rows seed $size: $(cat "$T/err")"
    check "map --rows seed $size: texts inside" $CHECK extents "$T/fit_seed.svg"
done
awk -F, 'NR == 1 || $5 == 1' "$M/results.csv" >"$T/one_seed.csv"
expect_bad "--cols 'seed': the sweep ran one seed" --plot "$T/one_seed.csv" --kind map --cols seed --out "$T/bad.svg"
expect_bad "--rows 'seed': the sweep ran one seed" --plot "$T/one_seed.csv" --kind map --rows seed --out "$T/bad.svg"
expect_bad "the same axis 'seed'" --plot "$M" --kind map --rows seed --cols seed --out "$T/bad.svg"
expect_bad "the same axis" --plot "$M" --kind map --rows lr --cols lr --out "$T/bad.svg"
expect_bad "go with --kind map" --plot "$F/run.csv" --rows lr --out "$T/bad.svg"
expect_bad "results.csv: No such file" --plot "$T" --kind map --out "$T/bad.svg"
cut -d, -f1,3- "$F/run.csv" >"$T/noloss.csv"
expect_bad "loss" --plot "$T/noloss.csv" --out "$T/bad.svg"
cut -d, -f1-17 "$F/run.csv" >"$T/noact.csv"
expect_bad "no per-layer act_max and headroom columns" --plot "$T/noact.csv" --kind headroom --out "$T/bad.svg"
expect_bad "no per-layer overflow and underflow columns" --plot "$T/noact.csv" --kind overflow --out "$T/bad.svg"
expect_bad "no per-layer update_ratio column (l0_update_ratio, ...)" --plot "$T/noact.csv" --kind series \
    --metric update_ratio --out "$T/bad.svg"
cut -d, -f1-14 "$F/run.csv" >"$T/nolayers.csv"
expect_bad "per-layer" --plot "$T/nolayers.csv" --kind profile --out "$T/bad.svg"
expect_bad "No such file" --plot "$T/missing.csv" --out "$T/bad.svg"
expect_bad "Is a directory" --plot "$T" --out "$T/bad.svg"
: >"$T/empty.csv"
expect_bad "no rows" --plot "$T/empty.csv" --out "$T/bad.svg"
printf 'hello\nworld\n' >"$T/junk.csv"
expect_bad "no rows" --plot "$T/junk.csv" --out "$T/bad.svg"
expect_bad "--out" --plot "$F/run.csv"
expect_bad "--kind" --plot "$F/run.csv" --kind pie --out "$T/bad.svg"
expect_bad "sweep" --plot "$F/run.csv" --kind map --out "$T/bad.svg"
expect_bad "--size" --plot "$F/run.csv" --size 16x9 --out "$T/bad.svg"
expect_bad "--step" --plot "$F/run.csv" --step 1,x --out "$T/bad.svg"
expect_bad "--step 99" --plot "$F/run.csv" --kind layers --step 99 --out "$T/bad.svg"
expect_bad "No such file" --plot "$F/run.csv" --out "$T/nodir/bad.svg"
# a figure's options without --plot would shape nothing: refused, not dropped
expect_bad "--out is a --plot option" --headless --steps 2 --out "$T/bad.svg"
expect_bad "--mono is a --plot option" --headless --steps 2 --mono
# and a training or sweep flag with --plot would change nothing: refused
expect_bad "--lr does nothing with --plot" --plot "$F/run.csv" --lr 0.1 --out "$T/bad.svg"
expect_bad "--per-seed does nothing with --plot" --plot "$F/run.csv" --per-seed --out "$T/bad.svg"
# --out replaces a figure, never the input or another file
cp "$F/run.csv" "$T/keep.csv"
expect_bad "exists and is not an SVG figure" --plot "$T/keep.csv" --out "$T/keep.csv"
cmp -s "$F/run.csv" "$T/keep.csv" && ok || no "--out the input: the input was changed"
"$BIN" --plot "$F/run.csv" --out "$T/again.svg" && "$BIN" --plot "$F/run.csv" --kind layers --out "$T/again.svg" &&
    grep -q 'class="bar"' "$T/again.svg" && ok || no "--out an earlier figure: not replaced"
ls "$T" | grep -q '\.tmp\.' && no "a temporary file left behind" || ok

# a difference only a fixed setting makes (gamma-zero's --ln-gamma-init):
# the rows record it (ln_gamma_init, CSV and JSONL), so the figure's title
# and its panels name it, from either file
"$BIN" --headless -q -L 2 -d 16 -H 2 -T 8 -B 2 --steps 4 --norm post --ln-gamma-init 0 \
    --compare ln-gamma-init=1 --csv "$T/g.csv" --jsonl "$T/g.jsonl" 2>"$T/err" || no "gamma run: $(cat "$T/err")"
head -1 "$T/g.csv" | tr ',' '\n' | grep -qx ln_gamma_init && ok || no "no ln_gamma_init column: $(head -1 "$T/g.csv")"
head -1 "$T/g.csv" | tr ',' '\n' | grep -qx b_ln_gamma_init && ok || no "no b_ln_gamma_init column"
grep -q '"run":"b".*"ln_gamma_init":1[,}]' "$T/g.jsonl" && grep -q '"run":"a".*"ln_gamma_init":0[,}]' "$T/g.jsonl" &&
    ok || no "the JSONL rows lack ln_gamma_init: $(head -c 300 "$T/g.jsonl")"
for f in g.csv g.jsonl; do
    plot "gamma-$f.svg" "$T/$f" --kind heatmap || continue
    grep -qF 'class="panel-title">a: ln-gamma-init=0<' "$T/gamma-$f.svg" &&
        grep -qF 'class="panel-title">b: ln-gamma-init=1<' "$T/gamma-$f.svg" && ok ||
        no "$f: the panels do not name ln-gamma-init: $(grep -o 'class="panel-title">[^<]*' "$T/gamma-$f.svg")"
    title=$(grep -o 'class="title" font-weight="bold">[^<]*<' "$T/gamma-$f.svg" | sed 's/.*">//; s/<$//' | tr '\n' ' ')
    [ "$title" = "Gradient norm of each layer over the run: ln-gamma-init=0 against ln-gamma-init=1 " ] && ok ||
        no "$f: the title does not name it: $title"
done

# --- colors a color-blind student tells apart: the gradient states of the
# figures and of the live view at least 20 CIEDE2000 apart under simulated
# protanopia, deuteranopia and tritanopia; --mono's legend as its marks,
# its marker unlike run b's dotted line ---
check "states apart in every color vision" $CHECK states "$T/cmp_layers.svg" 20
check "the live view's states apart in every color vision" $CHECK tui_states "$D/../src/tui_palette.c" 20
plot mono_layers.svg "$F/compare.csv" --kind layers --mono &&
    check "--mono bars and their legend" $CHECK layers "$T/mono_layers.svg" "$F/compare.csv" 20
check "--mono marker unlike the lines" $CHECK markers "$T/mono.svg" "$F/compare.csv"

# --- --light, for print: each kind on white with near-black type, its texts
# inside at both sizes; its gradient states at least 30 CIEDE2000 apart and
# from white in every color vision; its map's cells as the runs'; refused
# with --mono (two palettes) ---
for size in 800x450 1600x900; do
    for k in loss layers profile heatmap headroom overflow map; do
        in=$F/compare.csv
        [ $k = map ] && in=$M
        out="$T/light_${k}_$size.svg"
        "$BIN" --plot "$in" --kind $k --size $size --light --out "$out" 2>"$T/err" ||
            { no "--light $k $size: $(cat "$T/err")"; continue; }
        grep -q '<rect class="background" width="[0-9]*" height="[0-9]*" fill="#ffffff"/>' "$out" &&
            grep -q 'class="title" font-weight="bold"' "$out" &&
            ! grep 'class="title" font-weight="bold"' "$out" | grep -qv 'fill="#1a1a1a"' &&
            ok || no "--light $k $size: not white with near-black titles"
        check "--light $k $size: texts inside" $CHECK extents "$out"
    done
done
plot light_layers.svg "$F/compare.csv" --kind layers --light &&
    check "--light states apart from each other and white in every color vision" $CHECK states "$T/light_layers.svg" 30
plot light_map.svg "$M" --kind map --light &&
    check "map --light" $CHECK map "$T/light_map.svg" "$M/results.csv" lr layers
plot light_map_cont.svg "$M" --kind map --light --scale continuous &&
    check "map --light --scale continuous" $CHECK map "$T/light_map_cont.svg" "$M/results.csv" lr layers
expect_bad "--light and --mono are two palettes" --plot "$F/compare.csv" --light --mono --out "$T/bad.svg"

# --- every text inside the canvas, at a projector's 800x450 and at
# 1600x900, where the type is 20 px or more: each kind, in color and mono,
# of a comparison whose labels are long (its titles wrap, its caption
# takes two lines, its legend needs a wide column) and of the fixtures ---
"$BIN" --headless -q -L 2 -d 16 -H 2 -T 8 -B 2 --steps 6 --val-every 3 --norm-kind layernorm \
    --compare norm-kind=rmsnorm --csv "$T/a_comparison_of_layernorm_and_rmsnorm_from_the_start.csv" \
    2>"$T/err" || no "long labels run: $(cat "$T/err")"
for in in "$T/a_comparison_of_layernorm_and_rmsnorm_from_the_start.csv" "$F/run.csv" "$F/compare.csv"; do
    for k in loss layers profile heatmap headroom overflow; do
        for size in 800x450 1600x900; do
            for m in "" --mono; do
                out="$T/fit_${k}_$size$m.svg"
                "$BIN" --plot "$in" --kind $k --size $size $m --out "$out" 2>"$T/err" || { no "$k $size: $(cat "$T/err")"; continue; }
                check "$(basename "$in") $k $size$m: texts inside" $CHECK extents "$out"
            done
        done
        check "$(basename "$in") $k 1600x900: type >= 20 px" $CHECK type "$T/fit_${k}_1600x900.svg" 20
    done
done
for size in 800x450 1600x900; do
    "$BIN" --plot "$M" --kind map --size $size --out "$T/fit_map.svg" 2>"$T/err" || no "map $size: $(cat "$T/err")"
    check "map $size: texts inside" $CHECK extents "$T/fit_map.svg"
    for mt in best_val update_ratio_end stalled; do
        "$BIN" --plot "$M" --kind map --metric $mt --scale continuous --size $size --out "$T/fit_map.svg" 2>"$T/err" ||
            no "map --metric $mt $size: $(cat "$T/err")"
        check "map --metric $mt --scale continuous $size: texts inside" $CHECK extents "$T/fit_map.svg"
    done
done

# --- --smooth: the smoothed line's weight and its last value, the debiased
# EMA of the CSV's own losses; 0 draws the loss itself and names no smoothing
plot smooth.svg "$F/one.csv" --smooth 0.5 && {
    want=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "loss") c = i; next }
        $c != "" && $c + 0 == $c { a = 0.5 * a + 0.5 * $c; k++; last = a / (1 - 0.5 ^ k) }
        END { printf "%.6g", last }' "$F/one.csv")
    got=$(sed -n 's/.*class="smoothed" data-weight="0.5" data-last="\([^"]*\)".*/\1/p' "$T/smooth.svg" | head -n 1)
    awk -v a="$got" -v b="$want" 'BEGIN { exit !(a != "" && (a - b) ^ 2 < (1e-5 * b) ^ 2) }' && ok ||
        no "--smooth 0.5: the smoothed line ends at '$got', the CSV's EMA at $want"
}
grep -q 'class="smoothed" data-weight="0.9"' "$T/loss.svg" && ok || no "--plot's default smoothing is not 0.9"
plot raw.svg "$F/one.csv" --smooth 0 && {
    ! grep -q 'class="smoothed"' "$T/raw.svg" && ! grep -q 'smoothed<\|faint: each' "$T/raw.svg" &&
        grep -q '>train loss<' "$T/raw.svg" && ok || no "--smooth 0: the figure still smooths"
}
expect_bad "--smooth '1'" --plot "$F/one.csv" --out "$T/bad.svg" --smooth 1

# --- the caption names every setting column off its default, from the table:
# a run with QK-norm and z-loss says them, one at the defaults does not ---
"$BIN" --headless -q --steps 4 -L 1 -d 16 -H 2 -T 8 -B 2 --qk-norm on --z-loss 1e-4 --csv "$T/qk.csv" &&
    "$BIN" --plot "$T/qk.csv" --out "$T/qk.svg" && grep -q 'class="caption">[^<]*, qk-norm, z-loss 0.0001 ' "$T/qk.svg" &&
    ok || no "the caption of a QK-norm, z-loss run: $(grep -o 'class="caption">[^<]*' "$T/qk.svg")"
printf 'at 2: qk-norm on\n' >"$T/qk.txt"
"$BIN" --headless -q --steps 4 -L 1 -d 16 -H 2 -T 8 -B 2 --script "$T/qk.txt" --csv "$T/qk2.csv" &&
    "$BIN" --plot "$T/qk2.csv" --out "$T/qk2.svg" && grep -q 'class="caption">[^<]*, no qk-norm → qk-norm ' "$T/qk2.svg" &&
    ! grep -q 'class="caption">[^<]*z-loss' "$T/qk2.svg" && ok ||
    no "the caption of a run that turned QK-norm on: $(grep -o 'class="caption">[^<]*' "$T/qk2.svg")"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
