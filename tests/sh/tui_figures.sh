#!/bin/sh
# tui_figures.sh - the live view's files for slides and its projector
# sizes, from the outside (the real binary in a tmux pane, keys by
# send-keys, the screen by capture-pane): e writes every --csv column of
# both runs, and --plot of that export keeps run b and the settings; g and
# e pressed twice at one step write two files, never one over the other;
# training pauses while the terminal is too small and resumes after.
#
# Usage: NS_BIN=./normscope sh tests/sh/tui_figures.sh
# Prints "N passed, N failed"; exits non-zero on any failure.
# shellcheck source-path=SCRIPTDIR source=../lib/tmux_lib.sh
. "$(dirname "$0")/../lib/tmux_lib.sh"
tmux_init tui_figures.sh figs
watchdog "${NS_FIGS_LIMIT:-300}"
need_tmux_bin
PY=${PYTHON:-/usr/bin/python3}
CHECK="$PY $(dirname "$0")/../lib/plot_check.py"
SMALL="-L 3 -d 32 -H 2 -T 32 -B 8 --val-every 10 --val-batches 1"
W=figs
run() {
    rm -f "$T/err"
    key "clear; $* 2>$T/err; echo NS_\"\"EXIT=\$?" Enter
}
# wait_files GLOB N: until N files match GLOB in $T (10 s)
wait_files() {
    i=0
    while [ $i -lt 100 ] && [ "$(ls "$T"/$1 2>/dev/null | wc -l)" -lt "$2" ]; do
        sleep 0.1
        i=$((i + 1))
    done
    [ "$(ls "$T"/$1 2>/dev/null | wc -l)" -ge "$2" ]
}
new_session

# --- e and g: at one paused step, twice each ---
run "(cd $T && LC_ALL=C $BIN $SMALL --steps 40 --compare norm=post --csv $T/live.csv)"
wait_for 'DONE' 60 && ok || no "the run did not reach step 40: $(cat "$T/err" 2>/dev/null)"
key e
wait_files 'normscope-metrics-*.csv' 1 && ok || no "e: no file"
key e
wait_files 'normscope-metrics-*.csv' 2 && ok || no "e twice at one step: not two files: $(ls "$T")"
key g
wait_files 'normscope-[0-9]*.svg' 1 && ok || no "g: no figure"
key g
wait_files 'normscope-[0-9]*.svg' 2 && ok || no "g twice at one step: not two figures: $(ls "$T")"
key q
wait_for 'NS_EXIT=[0-9]' 20 && ok || no "q: the run did not end"
e=$(ls "$T"/normscope-metrics-40.csv 2>/dev/null)
# the export is the CSV: its header, and the rows --csv wrote
[ -n "$e" ] && [ "$(head -1 "$e")" = "$(head -1 "$T/live.csv")" ] && ok ||
    no "e: not --csv's columns: $(head -1 "$e" | cut -c1-200)"
cmp -s "$e" "$T/live.csv" && ok || no "e: its rows are not --csv's ($(wc -l <"$e") against $(wc -l <"$T/live.csv") lines)"
cmp -s "$e" "$T/normscope-metrics-40-2.csv" && ok || no "e twice: the second file differs at one step"
[ -s "$T/normscope-40.svg" ] && [ -s "$T/normscope-40-2.svg" ] && ok || no "g twice: $(ls "$T")"
# g's figure: every text on the canvas, 20 px or more
$CHECK extents "$T/normscope-40.svg" >"$T/log" 2>&1 && ok || no "g: $(cat "$T/log")"
$CHECK type "$T/normscope-40.svg" 20 >"$T/log" 2>&1 && ok || no "g: $(cat "$T/log")"
# a figure of the export keeps run b and the settings of each
"$BIN" --plot "$e" --out "$T/e.svg" 2>"$T/perr" || no "--plot of the export: $(cat "$T/perr")"
grep -q 'data-name="train loss b: norm=post"' "$T/e.svg" && ok || no "--plot of the export: no run b"
grep -q 'class="caption">a: norm=pre; pre layernorm, warmup on' "$T/e.svg" && ok ||
    no "--plot of the export: no settings caption: $(grep -o 'class="caption">[^<]*' "$T/e.svg")"
check_e() { $CHECK loss "$T/e.svg" "$e" >"$T/log" 2>&1 && ok || no "export's loss figure: $(cat "$T/log")"; }
check_e
ls "$T"/*.tmp.* >/dev/null 2>&1 && no "a temporary file left behind: $(ls "$T")" || ok

# --- too small: training waits, and says so; it resumes when the terminal
# is large enough again (steps counted in --csv's rows) ---
run "(cd $T && LC_ALL=C $BIN $SMALL --val-every 100000 --csv $T/small.csv)"
wait_for RUNNING 30 && ok || no "the small run did not start: $(cat "$T/err" 2>/dev/null)"
$TM resize-window -t $W -x 60 -y 20 2>/dev/null
wait_for 'training paused until then' 10 && ok || no "too small: no word of the pause: $(screen)"
sleep 0.5
n1=$(cat "$T"/small.csv.tmp.* | wc -l)
sleep 1.5
n2=$(cat "$T"/small.csv.tmp.* | wc -l)
[ "$n1" -eq "$n2" ] && ok || no "too small: training went on ($n1 -> $n2 rows)"
$TM resize-window -t $W -x 120 -y 40 2>/dev/null
wait_for 'RUNNING' 10 && ok || no "large again: not resumed: $(screen | head -1)"
screen | grep -q 'paused: the terminal is 60x20, under 80x24' && screen | grep -q 'resumed: the terminal is 120x40 again' &&
    ok || no "the event log does not say paused and resumed: $(screen | tail -12 | cut -c1-80)"
sleep 1
[ "$(cat "$T"/small.csv.tmp.* | wc -l)" -gt "$n2" ] && ok || no "large again: no new rows"
# paused by hand first: growing the terminal leaves it paused
key Space
wait_for PAUSED 10 && ok || no "space did not pause"
$TM resize-window -t $W -x 60 -y 20 2>/dev/null
wait_for 'this terminal is 60x20' 10
screen | grep -q 'training paused until then' && no "a pause by hand claimed as the small terminal's" || ok
$TM resize-window -t $W -x 120 -y 40 2>/dev/null
sleep 1
screen | head -1 | grep -q PAUSED && ok || no "a pause by hand resumed by a resize: $(screen | head -1)"
key q
wait_for 'NS_EXIT=[0-9]' 20 && ok || no "q: the small run did not end"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
