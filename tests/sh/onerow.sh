#!/bin/sh
# onerow.sh - a setting and a per-layer column are one row each, for real:
# a scratch copy of the tree gets a dummy setting (--dummy-knob: a row of
# the settings table, with its step column, and its config field) and a
# dummy per-layer column (l{i}_dummy = 2 x act_max: its index and row in
# the column table, its field, one line of maths, a row of the layer
# panel's display table and its entry in the man page's list), and the
# man page its entry and list words, and nothing else. Built, that copy's
# unit suites pass (the man page's lists, --help, the checkpoint layout
# are read off the tables; test_diagnose sees every column of the table
# reach the diagnosis' input), and the program has the setting as a flag
# with its range, in --help, as a script command, in --compare (its CSV
# columns, both panels' headers and the chart's legend), in each step's
# CSV and JSONL, in the checkpoint (saved, loaded, changed on --load), in
# the event log, in a lesson (flags, compare, conditions, script), in
# --follow of its --jsonl (the CSV back, the log), in --plot (a change's
# marker, a pair's names), in a sweep (results.csv, the runs' CSVs), as a
# key (its toggle on the status line, its line on a page of the help at
# 80x24); and the column in the CSV, the JSONL, a --plot figure (--kind
# series), --follow of the --jsonl (converted back and in its layer box)
# and the live layer box; without its display row test_tui fails naming
# it, and the probe's column test names it until the probe lists it (here
# as unknown).
# Usage: sh tests/sh/onerow.sh (from the top of the tree; takes a minute)
# Prints "N passed, N failed"; exits non-zero on any failure.
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/lib/tmux_lib.sh"
tmux_init onerow.sh onerow
S=$T/tree
mkdir -p "$S"
(cd "$ROOT" && cp -R Makefile src include assets man tests "$S/") || { no "copy the tree"; exit 1; }
rm -rf "$S/tests/fixtures/plot"
[ -n "$NS_ONEROW_KEEP" ] && S=$NS_ONEROW_KEEP && rm -rf "$S" && mkdir -p "$S" && (cd "$ROOT" && cp -R Makefile src include assets man tests "$S/")

# patch FILE ANCHOR-REGEX TEXT: insert TEXT (one line, \n for more) after
# the first line matching ANCHOR; a patch that no longer finds its anchor
# fails here, by name, rather than testing a tree it did not change
patch_after() {
    awk -v re="$2" -v text="$3" '
        !done && $0 ~ re { print; gsub(/\\n/, "\n", text); print text; done = 1; next }
        { print }
        END { exit !done }' "$S/$1" >"$S/$1.new" && mv "$S/$1.new" "$S/$1" ||
        { no "the dummy no longer applies to $1 (anchor /$2/)"; rm -f "$S/$1.new"; }
}
patch_before() {
    awk -v re="$2" -v text="$3" '
        !done && $0 ~ re { gsub(/\\n/, "\n", text); print text; done = 1 }
        { print }
        END { exit !done }' "$S/$1" >"$S/$1.new" && mv "$S/$1.new" "$S/$1" ||
        { no "the dummy no longer applies to $1 (anchor /$2/)"; rm -f "$S/$1.new"; }
}

# --- the setting: its field, its row (the next checkpoint field, the next step column) ---
NEXT=$(grep -o '\.ckpt = [0-9]*' "$S/src/settings.c" | awk '{ if ($3 > m) m = $3 } END { print m + 1 }')
# the next free step column: after the settings' and the measured ones (metrics.h)
NEXTCOL=$( (grep -o '\.step_col = [0-9]*' "$S/src/settings.c"; grep -o 'METRICS_COL_[A-Z_]* = [0-9]*' "$S/include/metrics.h") |
    awk '{ if ($3 > m) m = $3 } END { print m + 1 }')
patch_after include/config.h 'float lr_layer_decay;' '    float dummy_knob;'
patch_after src/settings.c 'CFG\(lr_layer_decay\), \.ckpt' \
    '    {.name = "dummy-knob", .type = SET_REAL, .arg = "X", .lo = 0, .hi = 1, .def = 0.25,\n     .help = "a knob of the one-row test", .flags = SETF_COMPARE, .cmd = "dummy-knob",\n     CFG(dummy_knob), .ckpt = '"$NEXT"', .step_col = '"$NEXTCOL"', .mark = {.fmt = "knob %g"},\n     .live = SETL_TOGGLE, .toggle = {0.25, 1},\n     .keys = {{'"'K'"', 0, "toggle", "the one-row knob: 0.25 / 1"}}},'
# --- the column: its index and row in the table, its field, its maths, its
# display row in the layer panel, its entry in the man page's list; nothing
# else (the figures, the diagnosis, the stream reader and --follow walk the
# table). A missing display row fails test_tui by name (shown below), a
# missing man page entry test_settings.
patch_before include/metrics.h '^ *METRICS_LAYER_COLS$' '    METRICS_LC_DUMMY,'
patch_before include/metrics.h '^} layer_metrics;' '    float dummy;'
patch_after src/metrics.c 'LAYER\("headroom"' '    [METRICS_LC_DUMMY] = LAYER("dummy", dummy),'
patch_after src/engine.c 'lm->headroom = engine_headroom' '        lm->dummy = 2.0f * lm->act_max;'
DISPLAY_ROW='    {.metric = "dummy", .fmt = TUI_FMT_FIX, .side = "dummy col", .brief = "dummy",\n     .style = finite_style, .gloss = "twice act max: the one-row test column"},'
patch_after src/tui_layers.c '\.brief = "unf"' "$DISPLAY_ROW"
# the per-layer list's last entry: before the .El that closes it
awk '/^\.It Li l\{i\}_/ { in_list = 1 } in_list && !done && /^\.El$/ {
        print ".It Li l{i}_dummy"; print "Twice l{i}_act_max: the one-row test'"'"'s column."; done = 1 }
    { print } END { exit !done }' "$S/man/normscope.1" >"$S/man.new" && mv "$S/man.new" "$S/man/normscope.1" ||
    no "the dummy's METRICS entry did not apply"
# METRICS lists the step columns too (test_settings reads it row by row
# against the table): the knob's column after the last setting's
patch_before man/normscope.1 "^[.]It Em a setting's column$" '.It Li dummy_knob\nThe one-row knob in force.'
# --- the docs: its OPTIONS entry, the words of the man page's lists ---
patch_before man/normscope.1 '^\.It Fl -betas ' \
    '.It Fl -dummy-knob Ar X\nA knob of the one-row test, 0 to 1 (default 0.25).'
sed -e 's/ ln-beta-init, seed\.$/ ln-beta-init, dummy-knob, seed./' \
    -e 's/^\.Fl -lr-layer-decay )$/.Fl -lr-layer-decay ,\n.Fl -dummy-knob )/' \
    -e 's/^on: an older file reads as off); then the run state/on: an older file reads as off); f32 dummy-knob; then the run state/' \
    "$S/man/normscope.1" >"$S/man.new" && mv "$S/man.new" "$S/man/normscope.1"
grep -q 'dummy-knob, seed\.' "$S/man/normscope.1" && grep -q '^.Fl -dummy-knob )' "$S/man/normscope.1" &&
    grep -q 'f32 dummy-knob; then' "$S/man/normscope.1" || no "the dummy's man page words did not apply"

patch_before man/normscope.1 '^\.It Ic w$' '.It Ic K\nThe one-row knob: 0.25 or 1.'
patch_before man/normscope.1 '^\.It Cm clip ' '.It Cm dummy-knob Ar X\nSet the knob of the one-row test.'

# --- the scratch build, and its unit suites ---
B=$S/build
if ! (cd "$S" && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL nice make -j2 --no-print-directory \
        normscope build/test_settings build/test_engine build/test_stream build/test_command \
        build/test_diagnose build/test_tui build/test_trainer build/test_twin build/test_plot \
        >"$T/make.log" 2>&1); then
    no "the tree with a dummy row does not build:"; grep -m5 -E "error|warning|make:" "$T/make.log" >&2
    echo "$pass passed, $fail failed"
    exit 1
fi
grep -q 'warning:' "$T/make.log" && no "the dummy row builds with warnings: $(grep -m1 warning: "$T/make.log")"
for u in settings engine stream command diagnose tui trainer twin plot; do
    if (cd "$S" && NS_FIXTURES=tests/fixtures "build/test_$u" >"$T/u_$u.log" 2>&1); then ok; else
        no "test_$u fails with the dummy row: $(grep -m3 -A1 FAIL "$T/u_$u.log" | tr '\n' ' ')"
    fi
done
X=$S/normscope
SMALL="-L 2 -d 16 -H 2 -T 8 -B 2"

# --- without its display row, test_tui fails and names the column ---
cp "$S/src/tui_layers.c" "$T/tui_layers.c"
awk '/\.metric = "dummy"/ { skip = 2 } skip > 0 { skip--; next } { print }' "$T/tui_layers.c" >"$S/src/tui_layers.c"
if (cd "$S" && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL nice make --no-print-directory build/test_tui \
        >"$T/make_norow.log" 2>&1); then
    (cd "$S" && NS_FIXTURES=tests/fixtures build/test_tui >"$T/u_norow.log" 2>&1) &&
        no "test_tui passes with no display row for the dummy" ||
        { grep -q '0 display rows for l{i}_dummy' "$T/u_norow.log" && ok ||
            no "test_tui fails without the display row but does not name l{i}_dummy: $(grep -m2 -B1 FAIL "$T/u_norow.log")"; }
else
    no "the tree without the dummy's display row does not build: $(grep -m3 -E 'error|make:' "$T/make_norow.log")"
fi
cp "$T/tui_layers.c" "$S/src/tui_layers.c"
(cd "$S" && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL nice make --no-print-directory build/test_tui \
    normscope >"$T/make_row.log" 2>&1) || no "the tree with the display row back does not build"

# --- the flag: --help with its range and default, a range error ---
"$X" --help | grep -q -- '--dummy-knob X .*a knob of the one-row test.*0\.\.1.*0\.25' && ok ||
    no "--help has no --dummy-knob line with its range and default: $("$X" --help | grep dummy)"
"$X" --headless --dummy-knob 2 --steps 1 2>"$T/err" >/dev/null
r=$?
[ "$r" -eq 2 ] && [ "$(wc -l <"$T/err")" -eq 1 ] && grep -q 'dummy-knob' "$T/err" && ok ||
    no "--dummy-knob 2: exit $r, $(cat "$T/err")"

# col FILE NAME: the 1-based index of a CSV column
col() { head -1 "$1" | tr ',' '\n' | grep -nx "$2" | cut -d: -f1; }
# --- each step's CSV: the setting in force, the column = 2 x act_max ---
printf 'at 3: dummy-knob 0.5\n' >"$T/s.txt"
"$X" --headless $SMALL --steps 6 --script "$T/s.txt" --csv "$T/a.csv" --jsonl "$T/a.jsonl" 2>"$T/a.err"
k=$(col "$T/a.csv" dummy_knob) a0=$(col "$T/a.csv" l0_act_max) d0=$(col "$T/a.csv" l0_dummy)
d1=$(col "$T/a.csv" l1_dummy)
if [ -n "$k" ] && [ -n "$d0" ] && [ -n "$d1" ]; then
    got=$(awk -F, -v k="$k" 'NR > 1 { printf "%s ", $k }' "$T/a.csv")
    [ "$got" = "0.25 0.25 0.25 0.5 0.5 0.5 " ] && ok || no "dummy_knob by step: $got (the script sets 0.5 at 3)"
    # each printed to 9 digits: the double of a float, within its rounding
    awk -F, -v a="$a0" -v d="$d0" 'NR > 1 { r = $d / (2 * $a) - 1; if (r > 1e-8 || r < -1e-8) bad = 1 }
        END { exit bad }' "$T/a.csv" && ok ||
        no "l0_dummy is not 2 x l0_act_max"
else
    no "the CSV has no dummy_knob or l{i}_dummy column: $(head -1 "$T/a.csv")"
fi
grep -q '"dummy_knob":0.25' "$T/a.jsonl" && grep -q '"l1_dummy":' "$T/a.jsonl" && ok ||
    no "the JSONL has no dummy_knob or l1_dummy: $(head -c 300 "$T/a.jsonl")"
grep -q 'dummy-knob 0.25 -> 0.5' "$T/a.err" && ok || no "the event log does not say the change: $(cat "$T/a.err")"

# --- the column in a figure: --kind series --metric dummy draws it over the run,
# a line per layer with the CSV's points ---
PY=${PYTHON:-/usr/bin/python3}
if "$X" --plot "$T/a.csv" --kind series --metric dummy --out "$T/dummy.svg" 2>"$T/p.err"; then
    $PY "$S/tests/lib/plot_check.py" precision "$T/dummy.svg" "$T/a.csv" series:dummy >"$T/p.log" 2>&1 && ok ||
        no "the dummy's figure: $(cat "$T/p.log")"
else
    no "--plot --kind series --metric dummy: $(cat "$T/p.err")"
fi
# --- --follow of the finished --jsonl: the column read back as written ---
"$X" --follow "$T/a.jsonl" --headless -q --csv "$T/back.csv" 2>"$T/f.err"
db=$(col "$T/back.csv" l1_dummy) d1=$(col "$T/a.csv" l1_dummy)
[ -n "$db" ] && [ -n "$d1" ] &&
    [ "$(cut -d, -f"$db" "$T/back.csv" | tail -n +2)" = "$(cut -d, -f"$d1" "$T/a.csv" | tail -n +2)" ] && ok ||
    no "--follow of the --jsonl does not give l1_dummy back: $(head -1 "$T/back.csv" | tr ',' '\n' | grep dummy) $(cat "$T/f.err")"
# --- the probe: its column list is checked against the table, and names the
# new column until the probe lists it (measured, or as unknown) ---
NS_BIN=$X $PY "$S/tests/probe/test_layer_cols.py" >"$T/probe.log" 2>&1 &&
    no "the probe's column test passes with l{i}_dummy not in its list" ||
    { grep -q "l{i}_dummy is not in the probe's LAYER_COLS" "$T/probe.log" && ok ||
        no "the probe's column test does not name l{i}_dummy: $(cat "$T/probe.log")"; }
# the probe cannot measure it: in its list, and in its list of unknowns
cat >>"$S/src/probe/normscope_probe/stream.py" <<'EOF'
LAYER_COLS = LAYER_COLS + ("dummy",)
LAYER_UNKNOWN = LAYER_UNKNOWN | {"dummy"}
EOF
NS_BIN=$X $PY "$S/tests/probe/test_layer_cols.py" >"$T/probe2.log" 2>&1 && ok ||
    no "the probe listing l{i}_dummy as unknown still fails: $(cat "$T/probe2.log")"

# --- --compare: run b with another value, in its own columns ---
"$X" --headless $SMALL --steps 3 --compare dummy-knob=0.75 --csv "$T/c.csv" 2>"$T/c.err"
kb=$(col "$T/c.csv" b_dummy_knob)
[ -n "$kb" ] && [ "$(awk -F, -v k="$kb" 'NR == 2 { print $k }' "$T/c.csv")" = 0.75 ] && ok ||
    no "--compare dummy-knob=0.75: $(head -1 "$T/c.csv" | tr ',' '\n' | grep dummy | tr '\n' ' ') $(cat "$T/c.err")"

# --- the checkpoint: saved, loaded, and a flag given with --load applies from its step ---
"$X" --headless $SMALL -q --steps 3 --dummy-knob 0.4 --save "$T/k.ckpt" 2>"$T/k.err" || no "--save: $(cat "$T/k.err")"
"$X" --headless $SMALL --load "$T/k.ckpt" --steps 5 --csv "$T/l.csv" 2>"$T/l.err"
awk -F, -v k="$(col "$T/l.csv" dummy_knob)" 'NR == 2 { exit !($k == 0.400000006) }' "$T/l.csv" && ok ||
    no "the checkpoint did not keep dummy-knob 0.4: $(cat "$T/l.err")"
"$X" --headless --load "$T/k.ckpt" --steps 5 --dummy-knob 0.6 --csv /dev/null 2>"$T/m.err"
grep -q 'dummy-knob=0.6 from step 3 (the checkpoint had 0.4)' "$T/m.err" && ok ||
    no "--load with --dummy-knob 0.6: $(cat "$T/m.err")"

# --- --follow of the finished --jsonl: its CSV back (the live view's log below) ---
"$X" --follow "$T/a.jsonl" --headless --csv "$T/back.csv" -q 2>"$T/f.err"
cmp -s "$T/a.csv" "$T/back.csv" && ok ||
    no "--follow of the --jsonl does not give its CSV back: $(cmp "$T/a.csv" "$T/back.csv" 2>&1) $(cat "$T/f.err")"

# --- --plot: a marker where the knob changes; a pair's runs named by it ---
"$X" --plot "$T/a.csv" --out "$T/a.svg" 2>"$T/p.err" && grep -q 'dummy_knob=0.5' "$T/a.svg" && ok ||
    no "--plot of a CSV where the knob changes has no 'dummy_knob=0.5' marker: $(cat "$T/p.err")"
"$X" --plot "$T/c.csv" --out "$T/c.svg" 2>"$T/p.err" && grep -q 'a: dummy-knob=0.25' "$T/c.svg" &&
    grep -q 'b: dummy-knob=0.75' "$T/c.svg" && ok ||
    no "--plot of the --compare CSV does not name the runs by the knob: $(grep -o '[ab]: [^<]*' "$T/c.svg" | head -3) $(cat "$T/p.err")"

# --- a lesson: its flags, its compare, its conditions and script lines ---
printf '%s\n' 'title: the one-row knob' \
    'flags: -L 2 -d 16 -H 2 -T 8 -B 2 --steps 4 --dummy-knob 0.5' 'compare: dummy-knob=0.75' \
    'if b.dummy-knob=0.75: text: run b has the knob at 0.75' \
    'if b.dummy-knob!=0.75: text: run b has the knob elsewhere' 'at 2: dummy-knob 0.25' >"$T/knob.lesson"
"$X" --check-lesson "$T/knob.lesson" >"$T/cl.out" 2>&1 && ok || no "--check-lesson: $(cat "$T/cl.out")"
"$X" --lesson "$T/knob.lesson" --headless --no-pause --csv "$T/les.csv" >"$T/les.out" 2>&1
got=$(awk -F, -v a="$(col "$T/les.csv" dummy_knob)" -v b="$(col "$T/les.csv" b_dummy_knob)" \
    'NR > 1 { printf "%s/%s ", $a, $b }' "$T/les.csv")
[ "$got" = "0.5/0.75 0.5/0.75 0.25/0.25 0.25/0.25 " ] && ok ||
    no "the lesson's knob by step (a/b): '$got' $(tail -3 "$T/les.out")"
grep -q 'run b has the knob at 0.75' "$T/les.out" && ! grep -q 'knob elsewhere' "$T/les.out" && ok ||
    no "the lesson's condition on b.dummy-knob: $(head -5 "$T/les.out")"

# --- a sweep over it: a results.csv column, each run's CSV ---
"$X" --sweep 'dummy-knob=0.25,0.5' $SMALL --steps 2 --jobs 1 --headless --sweep-out "$T/sw" \
    >"$T/sw.out" 2>&1 </dev/null
kc=$(col "$T/sw/results.csv" dummy-knob)
got=$(awk -F, -v k="$kc" 'NR > 1 { print $k }' "$T/sw/results.csv" 2>/dev/null | sort | tr '\n' ' ')
[ -n "$kc" ] && [ "$got" = "0.25 0.5 " ] && ok ||
    no "the sweep's results.csv has no dummy-knob column of 0.25 and 0.5: $(head -2 "$T/sw/results.csv" 2>&1) $(tail -2 "$T/sw.out")"
got=$(for f in "$T"/sw/run-*.csv; do awk -F, -v k="$(col "$f" dummy_knob)" 'NR == 2 { print $k }' "$f"; done |
    sort | tr '\n' ' ')
[ "$got" = "0.25 0.5 " ] && ok || no "the sweep's run CSVs' dummy_knob: '$got'"

# --- the live view: the layer box shows the column, the log the setting ---
BIN=$X
need_tmux_bin
watchdog 90
W=onerow
new_session
key "$X -L 2 -d 16 -H 2 -T 8 -B 2 --dummy-knob 0.3; echo NS_EXIT=\$?" Enter
if wait_for 'dummy col' 20; then ok; else no "the layer box has no 'dummy col' row:"; screen | head -40 >&2; fi
# the key: its toggle on the status line, from 0.3 to the row's first value, then its second
screen | head -3 | grep -q 'knob 0.3' && ok || no "the status line has no 'knob 0.3': $(screen | head -3)"
key K
wait_for 'knob 0.25' 5 && ok || no "K did not toggle the knob to 0.25: $(screen | head -3)"
key K
wait_for 'knob 1' 5 && ok || no "K did not toggle the knob to 1: $(screen | head -3)"
# at 80x24 the help has more keys than rows: its pages hold the new one
$TM resize-window -t "$W" -x 80 -y 24 2>/dev/null
sleep 0.5
key '?'
seen=0
for p in 1 2 3 4 5; do
    sleep 0.3
    screen | grep -q 'the one-row knob: 0.25 / 1' && { seen=1; break; }
    key NPage
done
[ "$seen" -eq 1 ] && ok || no "no page of the help at 80x24 lists K: $(screen | tail -3)"
key Escape
key q
wait_for 'NS_EXIT=[0-9]' 10 || no "the live view did not quit"
# --- the followed --jsonl in the live view: its layer box has the column ---
key "$X --follow $T/a.jsonl; echo NS_FEXIT=\$?" Enter
if wait_for 'dummy col' 20; then ok; else no "following the --jsonl, the layer box has no 'dummy col' row:"; screen | head -40 >&2; fi
key q
wait_for 'NS_FEXIT=[0-9]' 10 || no "--follow did not quit"
# --compare in the live view: both panels' headers and the chart's legend
# say the runs' knobs in the words --compare has
$TM resize-window -t "$W" -x 160 -y 48 2>/dev/null
key "clear; $X $SMALL --compare dummy-knob=0.75; echo NS_EXIT=\$?" Enter
if wait_for 'b: dummy-knob=0.75' 20; then
    sleep 1
    na=$(screen | grep -c 'a: dummy-knob=0.25') nb=$(screen | grep -c 'b: dummy-knob=0.75')
    [ "$na" -ge 2 ] && [ "$nb" -ge 2 ] && ok ||
        no "--compare dummy-knob=0.75: a's words on $na rows, b's on $nb (headers and legend: 2 each):"
    [ "$na" -ge 2 ] && [ "$nb" -ge 2 ] || screen | grep 'dummy' >&2
else
    no "--compare dummy-knob=0.75: no header says b: dummy-knob=0.75:"; screen | head -12 >&2
fi
key q
wait_for 'NS_EXIT=[0-9]' 10 || no "the --compare live view did not quit"
# --follow of the finished --jsonl in the live view: its log says the change
key "clear; $X --follow $T/a.jsonl; echo NS_EXIT=\$?" Enter
wait_for 'dummy_knob 0.25 -> 0.5' 20 && ok ||
    { no "--follow's log does not say the knob's change:"; screen | tail -12 >&2; }
key q
wait_for 'NS_EXIT=[0-9]' 10 || no "the --follow live view did not quit"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
