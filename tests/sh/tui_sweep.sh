#!/bin/sh
# tui_sweep.sh - the live view of a sweep from the outside, in a tmux pane
# of 80x24 (tmux_lib.sh): a small sweep fills its grid, a cell opens its
# run's curves and comes back, q leaves the table on the terminal, and
# results.csv is the one a headless sweep writes (timing aside). Then q
# in the middle of a sweep: the running runs stop, the rows written are
# whole, no child is left, and the same command resumes to the same
# results.
#
# Usage: NS_BIN=./normscope sh tests/sh/tui_sweep.sh
# Prints "N passed, N failed"; exits non-zero on any failure.
# shellcheck source=../lib/posix_lib.sh
. "$(dirname "$0")/../lib/posix_lib.sh"
# shellcheck source-path=SCRIPTDIR source=../lib/tmux_lib.sh
. "$(dirname "$0")/../lib/tmux_lib.sh"
# shellcheck source=../lib/results_lib.sh
. "$(dirname "$0")/../lib/results_lib.sh"
tmux_init tui_sweep.sh sweepview
watchdog "${NS_SWEEPVIEW_LIMIT:-600}"
need_tmux_bin
sanitizer_env
W=sv
C="-L 2 -d 16 -H 2 -T 8 -B 2 --steps 30 --val-every 5 --val-batches 1"
SPEC='norm=pre,post lr=1e-3,1e-2'

$TM new-session -d -s "$W" -x 80 -y 24 sh || { echo "0 passed, 1 failed"; exit 1; }
$TM set-option -t "$W" -g status off >/dev/null 2>&1
run() { key "clear; $* 2>$T/err; echo NS_\"\"EXIT=\$?" Enter; }

# --- a small sweep, watched ------------------------------------------------
run "LC_ALL=C $BIN --sweep '$SPEC' $C --jobs 2 --sweep-out $T/live"
wait_for 'rows lr  columns norm' 30 && ok || no "the map did not show: $(cat "$T/err")"
screen | grep -q '^lr.norm *pre *post' && ok || no "column header: $(screen | sed -n 3p)"
wait_for '4/4 ended, 0 running' 120 && ok || no "the grid did not fill: $(screen | head -1)"
# every cell holds a final loss (or a diverged mark); the scale is shown
n=$(screen | sed -n '4,5p' | grep -o -E '(^| )[ XS!] [0-9]+\.[0-9]{3}|X diverged' | wc -l)
[ "$n" -eq 4 ] && ok || no "4 finished cells, saw $n: $(screen | sed -n '4,5p')"
screen | grep -q 'final loss [0-9.]* 0123456 [0-9.]*' && ok || no "no color scale in the legend"
screen | grep -qF 'S stalled: ran 48+ steps, final loss not 0.1 nats below' && ok ||
    no "the stalled rule is not stated"
# select lr=1e-2 (spelled 0.01), norm=post and open it: its curve and its layers
key Down Right Enter
wait_for 'lr=0.01 norm=post' 10 && ok || no "Enter did not open the run: $(screen | head -2)"
screen | grep -q 'ended at step 30\|DIVERGED at step' && ok || no "run state: $(screen | sed -n 2p)"
screen | grep -qF 'loss [linear]' && ok || no "no loss chart in the run view"
screen | grep -qF 'gradient norm per layer over time' && ok || no "no layer heatmap in the run view"
screen | grep -q '^ *[0-9.]*|' && ok || no "the chart has no axis: $(screen | sed -n 4,6p)"
key Escape
wait_for 'rows lr  columns norm' 10 && ok || no "Esc did not return to the map"
key Enter
wait_for 'lr=0.01 norm=post' 10 && ok || no "Enter again: no run"
key BSpace
wait_for 'rows lr  columns norm' 10 && ok || no "Backspace did not return to the map"
key x
wait_for 'rows norm  columns lr' 10 && ok || no "x did not swap the axes: $(screen | sed -n 2p)"
key '?'
wait_for "swap the rows' and the columns' axes" 10 && ok || no "? shows no help"
screen | grep -q "^ *t  *the other palette" && ok || no "the help does not list t"
key Escape
# t: the other palette, as in the live view: from the dark one's cyan to
# --light's blue with no pale text, and back
wait_sgr() {
    i=0
    while [ $i -lt 50 ]; do
        s=$(sgr)
        if [ "$1" = light ]; then echo "$s" | grep -q '\[34m' && ! pale "$s" && return 0
        else echo "$s" | grep -q '\[36m' && return 0; fi
        sleep 0.1
        i=$((i + 1))
    done
    return 1
}
wait_sgr dark && ok || no "the map in the dark palette has no cyan: $(sgr)"
key t
wait_sgr light && ok || no "t: the map is not in the light palette: $(sgr)"
key t
wait_sgr dark && ok || no "t again: not back to the dark palette: $(sgr)"
key q
check_exited "q" 0
# the table stays on the terminal after the view
screen | grep -q '^lr  *norm  *runs  *n  *final' && ok || no "no table after q: $(screen | head -5)"
[ "$(screen | grep -c -E '^0\.0?01  +p')" -eq 4 ] && ok || no "the table lacks cells"
check_modes "q"

# --sweep-collect on a terminal shows what DIR holds, then the table
run "LC_ALL=C $BIN --sweep-collect $T/live"
wait_for '4/4 ended, 0 running, 0 failed  - none left to run' 30 && ok ||
    no "--sweep-collect: no view: $(screen | head -1) $(cat "$T/err")"
key q
check_exited "--sweep-collect's view" 0
screen | grep -q '^lr  *norm  *runs  *n  *final' && ok || no "no table after --sweep-collect's view"

# the same sweep headless: the same results.csv, timing aside
"$BIN" --sweep "$SPEC" $C --jobs 2 --sweep-out "$T/headless" --headless >/dev/null 2>&1
[ "$(tail -n +2 "$T/live/results.csv" | wc -l)" -eq 4 ] && ok || no "live results.csv: not 4 rows"
results_rows "$T/live/results.csv" >"$T/a"
results_rows "$T/headless/results.csv" >"$T/b"
cmp -s "$T/a" "$T/b" && ok || { no "live and headless results.csv differ"; diff "$T/a" "$T/b" >&2; }

# --- q while runs are running: stopped, whole rows, resumable -------------
# runs long enough that q comes while they run on a free machine (about 4 s
# each; 1500 steps took under a second), and the sanitizers' slower builds
# fewer of them, as the resume and its reference below run them to the end
if [ -n "${NS_SANITIZED:-}" ]; then N=3000; else N=50000; fi
LONG="-L 2 -d 16 -H 2 -T 8 -B 2 --steps $N --val-every 50 --val-batches 1"
run "LC_ALL=C $BIN --sweep 'lr=1e-3,2e-3,3e-3' $LONG --jobs 2 --sweep-out $T/stop"
wait_for '2 running' 60 && ok || no "no runs running: $(screen | head -1)"
wait_for '~ [0-9.]*@[0-9]' 60 && ok || no "no loss@step of a running run: $(screen | sed -n 4,6p)"
key q
check_exited "q mid-sweep" 130
grep -q 'sweep interrupted' "$T/err" && ok || no "no resume hint: $(cat "$T/err")"
left=$(ns_find_pid "$T/stop/run-")
[ -z "$left" ] && ok || no "runs left running after q: $left"
# every row written is whole (12 fields: id, lr, 10 more; a status)
bad=$(tail -n +2 "$T/stop/results.csv" | awk -F, 'NF != 12 || $12 !~ /^(ok|diverged)$/' | wc -l)
[ "$bad" -eq 0 ] && ok || no "broken rows after q: $(cat "$T/stop/results.csv")"
if "$BIN" --sweep 'lr=1e-3,2e-3,3e-3' $LONG --jobs 2 --sweep-out "$T/stop" --headless -q \
    >/dev/null 2>"$T/err2"; then ok; else no "resume after q: $(cat "$T/err2")"; fi
"$BIN" --sweep 'lr=1e-3,2e-3,3e-3' $LONG --jobs 2 --sweep-out "$T/ref" --headless -q \
    >/dev/null 2>&1
results_rows "$T/stop/results.csv" >"$T/a"
results_rows "$T/ref/results.csv" >"$T/b"
cmp -s "$T/a" "$T/b" && ok || { no "resumed results differ from an uninterrupted sweep"; diff "$T/a" "$T/b" >&2; }

check_reports 40
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
