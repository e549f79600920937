#!/bin/sh
# tui_diag.sh - the D overlay in a tmux pane: an fp16 run whose norm
# variance overflows (near step 176) pauses DIVERGED; D shows the
# diagnosis with its numbers, the layer's numbers now, what to try and the
# keys for it; any key closes it, D again too; a applies its fix and the
# run trains on, marked "fix" on the chart, and once its check passes D
# and the exit's verdict say it helped; q on a diverged run prints
# its cause. At 80x24 the panel says where b rewinds to and how close that
# snapshot is to the limit, as --save does. A finite blow-up (LR 1.0)
# pauses DIVERGED too and says it is finite. A healthy run's D says so with its headroom; under --compare, where only run b diverges, it gives
# both runs' diagnoses, b's naming its layer. Under --compare at 80x24
# and 100x30 with an alert on a row, both runs' status rows keep the loss
# and |grad|.
#
# Usage: NS_BIN=./normscope sh tests/sh/tui_diag.sh
# Prints "N passed, N failed"; exits non-zero on any failure.
# shellcheck source-path=SCRIPTDIR source=../lib/tmux_lib.sh
. "$(dirname "$0")/../lib/tmux_lib.sh"
tmux_init tui_diag.sh diag
watchdog "${NS_E2E_LIMIT:-600}"
need_tmux_bin
sanitizer_env
W=diag
# 4 blocks of width 32: the final norm's variance overflows fp16 near step 176
F="-L 4 -d 32 -T 16 -B 4 --warmup 0 --val-every 25 --precision fp16 --fp32-norms off"
run() {
    key "clear; LC_ALL=C $* 2>$T/err; echo NS_\"\"EXIT=\$?" Enter
}
# panel TEXT: the overlay's rows (between its border lines) hold TEXT
panel() { screen | grep -qF -- "$1"; }
# open_d STATE ARGS...: run normscope until the status line shows STATE,
# then press D and wait for the panel
open_d() {
    state=$1
    shift
    run "$*"
    wait_for "$state" 120 && ok || no "$*: no $state: $(cat "$T/err")"
    key D
    wait_for ' diagnosis ' 10 && ok || no "$*: D shows no panel: $(screen)"
}
new_session

# ---- a diverged run: the diagnosis, its evidence, the keys -------------
open_d DIVERGED "$BIN $F --lr 2e-2"
# the status line's mark is the panel's first cause
screen | grep -qF '! norm-variance' && ok || no "no cause mark on the status line: $(screen | head -2)"
panel 'DIAGNOSIS at step' && panel 'overflowed in fp16' && panel '(limit 256)' && ok ||
    no "D: no cause line: $(screen)"
panel 'now (step' && panel 'headroom' && ok || no "D: no evidence: $(screen)"
# past the ramp's length warmup is not blamed; the fix key's line is there
! panel 'no warmup' && panel 'a applies the fix: rewinds to step' &&
    panel 'then fp32-norms on' && ok || no "D: the fix line, or warmup blamed: $(screen)"
panel 'i (fp32 norms)' && ok || no "D: no fp32-norms key: $(screen)"
panel 'warning at step' && ok || no "D: the early warning is missing: $(screen)"
key x # unbound: closes it, does nothing else
wait_gone 'DIAGNOSIS at step' 10 && ok || no "x did not close the panel"
key D
wait_for 'DIAGNOSIS at step' 10 && ok || no "D: the panel did not open again"
key D
wait_gone 'DIAGNOSIS at step' 10 && ok || no "D again did not close it"
screen | grep -q DIVERGED && ok || no "closing the panel changed the state: $(screen | head -1)"
key q
check_exited "the diverged run" 3
grep -q "^normscope: cause: forward, final norm variance overflowed" "$T/err" &&
    grep -q "^normscope: try: " "$T/err" && ok || no "q on a diverged run: no cause line: $(cat "$T/err")"

# ---- at 80x24: where b goes and its headroom, as --save says it ----------
# the headless run's --save line and the panel come from one source: the
# same snapshot, the same headroom, the same earlier one offered
$BIN --headless $F --lr 2e-2 --save "$T/ck" >/dev/null 2>"$T/save.err" </dev/null
room=$(sed -n 's/.*wrote the snapshot of \(step [0-9]*, headroom [0-9.]* (layer [0-9]*)\).*/\1/p' "$T/save.err")
had=$(sed -n 's/.*wrote the snapshot of step.*; \(step [0-9]* had [0-9.]*\) .*/\1/p' "$T/save.err")
$TM resize-window -t "$W" -x 80 -y 24 2>/dev/null
open_d DIVERGED "$BIN $F --lr 2e-2"
[ -n "$room" ] && [ -n "$had" ] && panel "b rewinds to $room" && screen | tr -s ' \n' ' ' | grep -qF "$had (b " &&
    ok || no "D at 80x24: no 'b rewinds to $room', '$had' ($(cat "$T/save.err")): $(screen)"
key x
wait_gone 'DIAGNOSIS at step' 10
key q
check_exited "the diverged run at 80x24" 3
$TM resize-window -t "$W" -x 120 -y 40 2>/dev/null

# ---- a in the panel: the fix applied, the run trains on -------------------
open_d DIVERGED "$BIN $F --lr 2e-2"
key a
wait_for 'RUNNING' 30 && ok || no "a: the run does not train on: $(screen | head -n 2)"
wait_for 'fix,rewind' 30 && screen | grep -qF '[i] fp32 norms' && ok ||
    no "a: no fix mark on the chart, or norms not in fp32: $(screen)"
# fix 1 is the cause's alone (fp32 norms): the LR stays too high, and its
# warning comes (once the update per unit LR is under 0.1 of the first
# update's, 0.097 at step 69; the growth warning may come a few steps
# before it), its fix the next a's
wait_for '! lr-warn' 60 && ok || no "a: no LR warning after fix 1: $(screen | head -n 2)"
# the open warning does not hide fix 1: the panel's first row says it, in
# progress or done, whichever the step is
key D
wait_for ' diagnosis ' 10 && screen | sed -n '/ diagnosis /{n;p;q}' | grep -Eq '\| fix 1 (is checked at step|\(fp32-norms on\) )' &&
    ok || no "D after fix 1 and a warning: fix 1 is not the panel's first row: $(screen)"
key Escape
# (a second fix by a, its check and the verdict that quotes it are
# fixbank.sh's, headless)
key q
check_exited "the fixed run" 0
! grep -q -- "--on-diverge continue" "$T/err" && ok ||
    no "a fixed run's exit cites --on-diverge continue: $(cat "$T/err")"

# ---- a finite blow-up pauses the live view as a divergence does ----------
# (a snapshot every 5 steps: the fix goes back to before the rise, b to
# the newest, and the panel says where each goes)
open_d DIVERGED "$BIN -L 4 -d 32 -T 16 -B 4 --warmup 0 --val-every 25 --lr 1.0 --snapshot-every 5"
panel 'DIAGNOSIS at step' && panel 'blew up, finite: loss' && panel 'update ratio' && ok ||
    no "D on a blow-up: $(screen)"
rise=$(screen | sed -n 's/.*rising since step \([0-9]*\).*/\1/p' | head -n 1)
fa=$(screen | sed -n 's/.*a applies the fix: rewinds to step \([0-9]*\)[ ,].*/\1/p' | head -n 1)
fb=$(screen | sed -n 's/.*b rewinds to step \([0-9]*\), headroom .*/\1/p' | head -n 1)
[ -n "$rise" ] && [ -n "$fa" ] && [ -n "$fb" ] && [ "$fa" -lt "$rise" ] && [ "$fa" -lt "$fb" ] &&
    [ $((fa % 5)) -eq 0 ] && [ $((fb % 5)) -eq 0 ] && ok ||
    no "D on a blow-up: the fix's snapshot '$fa' (rise '$rise'), b's '$fb': $(screen)"
key x
wait_gone 'DIAGNOSIS at step' 10
screen | head -n 1 | grep -qF 'blew up, finite' && screen | head -n 1 | grep -qF '! blowup' &&
    ! screen | head -n 1 | grep -qF 'first non-finite' && ok ||
    no "status line of a blow-up: $(screen | head -n 1)"
key q
check_exited "the blown-up run" 3

# ---- a healthy run: nothing to report, with its headroom -----------------
open_d DONE "$BIN -L 2 -d 32 -T 16 -B 4 --val-every 25 --steps 300"
panel 'no warnings; the run is healthy: headroom' && panel 'is it learning? ok:' && ok ||
    no "D on a healthy run: $(screen)"
key q
check_exited "the healthy run" 0

# ---- --compare at 80x24 and 100x30 with an alert: both status rows keep
# the loss and |grad| (run a's, which holds the step and the target too,
# shortens the rest) -------------------------------------------------------
# rows_ok SIZE RUN: RUN's row (a or b) has its alert mark, both rows their
# loss and |grad|
rows_ok() {
    ra=$(screen | sed -n 1p) rb=$(screen | sed -n 2p)
    case $2 in a) alert=$ra ;; *) alert=$rb ;; esac
    case $ra in *'a: loss '*'|grad| '*) ;; *) no "$1: run a's status row: $ra" && return ;; esac
    case $rb in *'b: loss '*'|grad| '*) ;; *) no "$1: run b's status row: $rb" && return ;; esac
    case $alert in *'! '*) ok ;; *) no "$1: no alert on run $2's row: $alert" ;; esac
}
# resize COLS ROWS: the pane, then until a frame of that width is drawn
# (the state word at the first row's right end)
resize() {
    $TM resize-window -t "$W" -x "$1" -y "$2" 2>/dev/null
    i=0
    while [ "$i" -lt 100 ] && ! screen | sed -n 1p |
        awk -v c="$1" 'length($0) >= c - 3 && /(PAUSED|DIVERGED) *$/ { f = 1 } END { exit !f }'; do
        sleep 0.1
        i=$((i + 1))
    done
}
# run a (LR 2e-2) has a headroom warning by step 170, where the script
# pauses both (the plain run only: ThreadSanitizer takes 30 s to get
# there; the sanitizers' runs have run b's alert below)
if [ -z "${NS_SANITIZED:-}" ]; then
    echo 'at 170: pause' >"$T/pause.script"
    $TM resize-window -t "$W" -x 80 -y 24 2>/dev/null
    run "$BIN $F --lr 2e-2 --compare lr=2e-3 --script $T/pause.script"
    wait_for PAUSED 120 && ok || no "the paused comparison at 80x24: $(screen | head -n 2)"
    rows_ok 80x24 a
    resize 100 30
    rows_ok 100x30 a
    key q
    check_exited "the paused comparison" 0
    $TM resize-window -t "$W" -x 120 -y 40 2>/dev/null
fi

# ---- --compare where only b diverges: both runs' diagnoses ---------------
open_d DIVERGED "$BIN $F --lr 2e-3 --compare lr=2e-2"
panel 'a: ' && panel 'no warnings' && ok || no "D --compare: run a: $(screen)"
panel 'b: ' && panel 'DIAGNOSIS at step' && panel '(layer 3)' && ok ||
    no "D --compare: run b: $(screen)"
panel 'Tab until it reads b' && ok || no "D --compare: no target hint: $(screen)"
key x
wait_gone 'DIAGNOSIS at step' 10 && ok || no "D --compare: x did not close the panel"
# the alert mark on run b's status row, none on a's
screen | sed -n 2p | grep -qF '! ' && ! screen | sed -n 1p | grep -qF '! ' && ok ||
    no "D --compare: the alert marks: $(screen | head -n 2)"
resize 80 24
rows_ok "80x24, b diverged" b
resize 100 30
rows_ok "100x30, b diverged" b
key q
check_exited "the compare run" 3
check_reports 40

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
