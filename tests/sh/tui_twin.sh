#!/bin/sh
# tui_twin.sh - the two-run view in a real terminal (tmux, as tui_e2e.sh):
#  1. --lesson fp16-layernorm: run a diverges; the tour's repair keys (i,
#     b, space) under the default target (both) turn fp32 norms on for run
#     a and leave run b's on (no swap), both runs train on past the
#     divergence with run b never diverging, and run b's validation loss is
#     on its own status row; the headers, now alike, say since which step;
#  2. --lesson gradient-profile at step 1 in the relative view (v): the
#     Pre-LN run's (b's) bottom and top MLP bars differ by at least a third
#     of the bar's width;
#  3. Tab moves the target, and a toggle under target b changes run b's
#     panel header only.
# Usage: NS_BIN=./normscope sh tests/sh/tui_twin.sh
# Prints "N passed, N failed"; exits non-zero on any failure. Every wait
# has a timeout; the tmux server is killed on exit.
# shellcheck source-path=SCRIPTDIR source=../lib/tmux_lib.sh
. "$(dirname "$0")/../lib/tmux_lib.sh"
tmux_init tui_twin.sh twin
watchdog "${NS_TWIN_LIMIT:-1500}"
need_tmux_bin
sanitizer_env
W=twin
run() {
    rm -f "$T/err"
    key "clear; $* 2>$T/err; echo NS_\"\"EXIT=\$?" Enter
}
new_session

# --- 1. fp16-layernorm: diverge, repair with i b space, train on ---------------
run "LC_ALL=C $BIN --lesson fp16-layernorm --no-pause --steps 0"
wait_for RUNNING 60 && ok || no "the lesson did not start: $(cat "$T/err" 2>/dev/null)"
screen | grep -q 'TARGET both' && ok || no "no TARGET on the status line: $(screen | head -1)"
screen | grep -q '^a: fp32-norms=off ' && ok || no "run a's header: $(screen | grep '^a: ')"
screen | grep -q 'b: fp32-norms=on ' && ok || no "run b's header: $(screen | sed -n 4p)"
# the state, not the words: the lesson's own text, in the event log at the
# start, says "read the first non-finite:" too
if wait_for 'DIVERGED' 900 && wait_for 'first non-finite: ' 10; then
    ok
    screen | grep -q 'first non-finite (b)' && no "run b diverged too: $(screen | sed -n 2p)" || ok
    at=$(counter)
    # the lesson panel (back with the step-40 question) covers the event
    # log, which this test reads: hide it
    if screen | grep -q ' L hides '; then key L; sleep 0.3; fi
    key i
    wait_for 'b: norms, softmax and loss in fp32' 20 && ok || no "i: no event naming run b"
    wait_for 'a: norms, softmax and loss in fp32' 20 && ok || no "i: no event naming run a"
    # the runs now agree: a, which changed, says what it was until when,
    # b keeps its words, then the settings (fp32 norms on for both)
    wait_for "a: fp32-norms=off until step $at  pre layernorm fp16" 20 && ok ||
        no "i: run a's header: $(screen | grep '^a: ')"
    screen | grep -q "b: fp32-norms=on  pre layernorm fp16" && ok || no "i: run b's header: $(screen | grep 'b: ')"
    key b
    wait_for 'rewound' 30 && ok || no "b: no rewind: $(screen | tail -12)"
    key Space
    wait_counter -gt $((at + 40)) 600 && ok || no "the runs did not train on past step $at: $(counter)"
    screen | grep -q 'DIVERGED' && no "a run diverged again: $(screen | sed -n 1,2p)" || ok
    screen | grep -q 'first non-finite (b)' && no "run b diverged: $(screen | sed -n 2p)" || ok
    screen | sed -n 2p | grep -Eq '^ b: .*val [0-9]+\.[0-9]{4}' && ok ||
        no "run b's validation loss is not on its status row: $(screen | sed -n 2p)"
    screen | grep -qF '[i] fp32 norms' && ok || no "the toggle does not read fp32 norms"
    # a's "fp32-norms=off until step N" is history; none says it is off now
    screen | sed 's/fp32-norms=off until step [0-9]*//g' | grep -q 'fp32-norms=off' &&
        no "a run still says fp32-norms=off: $(screen | grep fp32-norms=off)" || ok
else
    no "run a did not diverge (or the status line did not say so): $(screen | head -2)"
fi
key q
check_exited fp16-layernorm 0

# --- 2. gradient-profile at step 1, relative bars ----------------------------
# bar_cells ROW COL W: cells a bar fills (ASCII '#', ':' and the like) in
# columns COL..COL+W-1 of screen row ROW (1-based)
bar_cells() {
    screen | sed -n "${1}p" | cut -c"$2"-"$(($2 + $3 - 1))" | tr -cd '#:.!' | wc -c
}
run "LC_ALL=C $BIN --lesson gradient-profile --bars relative"
if wait_for 'step 1/' 300 && wait_for PAUSED 60; then
    ok
    # run b's panel: its column titles row holds "mlp rel"; layer 11 is the
    # first row under it, layer 0 the last
    hdr=$(screen | grep -n 'lyr attn rel' | head -1 | cut -d: -f1)
    # the second "lyr" on that row starts run b's panel (1-based columns):
    # its attention bar at +4, its MLP bar under "mlp rel"
    set -- $(screen | sed -n "${hdr}p" | awk '{
        p = index($0, "lyr"); q = index(substr($0, p + 3), "lyr"); b = p + 2 + q
        m = index(substr($0, b), "mlp rel"); print b + 4, b + m - 1 }')
    acol=$1 mcol=$2
    bw=$((mcol - acol - 1))
    top=$((hdr + 1))     # layer 11, the output side
    bot=$((hdr + 12))    # layer 0, next to the embeddings
    t=$(bar_cells "$top" "$mcol" "$bw")
    b=$(bar_cells "$bot" "$mcol" "$bw")
    d=$((t > b ? t - b : b - t))
    [ "$bw" -ge 8 ] && [ $((d * 3)) -ge "$bw" ] && ok ||
        no "relative view: Pre-LN's MLP bars top $t, bottom $b cells of $bw (rows $top, $bot; col $mcol)"
    screen | grep -q 'lyr attn rel *mlp rel' && ok || no "the panels' column titles do not say relative"
    # the absolute axis, for contrast: the same bars within a third of each other
    key v
    wait_for 'lyr attn abs' 10 && ok || no "v: the panels do not say absolute"
    t=$(bar_cells "$top" "$mcol" "$bw")
    b=$(bar_cells "$bot" "$mcol" "$bw")
    d=$((t > b ? t - b : b - t))
    [ $((d * 3)) -lt "$bw" ] && ok || no "absolute view: already $d cells apart of $bw"

    # --- 3. Tab: the target moves; a toggle under b changes b only -----------
    key Tab
    wait_for 'TARGET a' 10 && ok || no "Tab: the target is not a"
    key Tab
    wait_for 'TARGET b' 10 && ok || no "Tab Tab: the target is not b"
    key k
    wait_for 'b: norm=pre norm-kind=rmsnorm' 20 && ok || no "k under b: b's header: $(screen | grep 'b: ' | head -3)"
    screen | grep -q '^a: norm=post norm-kind=layernorm' && ok ||
        no "k under b: run a changed too: $(screen | grep '^a: ')"
    # the lesson panel (the step-1 question) covers the event log: hide it
    if screen | grep -q ' L hides '; then key L; sleep 0.3; fi
    wait_for 'b: norm kind layernorm -> rmsnorm' 10 && ok || no "k under b: no event naming b: $(screen | tail -8)"
else
    no "gradient-profile did not pause at step 1: $(screen | head -2)"
fi
key q
check_exited gradient-profile 0
check_reports 20

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
