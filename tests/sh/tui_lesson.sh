#!/bin/sh
# tui_lesson.sh - lessons that wait, from the outside (tmux, as
# tui_e2e.sh): a lesson's "pause PROMPT" pauses the live view and shows the
# prompt and the lesson's text in the lesson panel; L hides and shows it;
# space goes on; --no-pause runs straight through with the prompt logged;
# a --script's prompt shows without a lesson; at 80x24 the panel leaves the
# layer panel its rows; the projector layout keeps layer 0 of a 12-layer run
# on an 80x24 screen and of a 24-layer run on 100x30; the event log scrolls
# back with [ and { and returns with ] and }, and with the wheel over it;
# a lesson file's "reveal" hides run b until its step or B.
# Usage: NS_BIN=./normscope sh tests/sh/tui_lesson.sh
# Prints "N passed, N failed"; exits non-zero on any failure.
# shellcheck source-path=SCRIPTDIR source=../lib/tmux_lib.sh
. "$(dirname "$0")/../lib/tmux_lib.sh"
tmux_init tui_lesson.sh lesson
watchdog "${NS_E2E_LIMIT:-600}"
need_tmux_bin
sanitizer_env
SMALL="-L 4 -d 32 -H 2 -T 32 -B 8 --val-every 20 --val-batches 1"
W=lesson
run() {
    rm -f "$T/err"
    key "clear; $* 2>$T/err; echo NS_\"\"EXIT=\$?" Enter
}
new_session

# --- a lesson pauses at its prompt; the panel shows it and the text --------
# (gradient-profile: "at 1: pause Step 1, nothing learned yet: ..."; the
# command line's -d 64 over the lesson's 256: the pause and the panel are
# the same, and a step of the 19M-parameter pair took 15 s under TSan)
run "LC_ALL=C $BIN --lesson gradient-profile -d 64"
wait_for 'nothing learned yet' 90 && ok || no "the prompt is not on the screen: $(cat "$T/err" 2>/dev/null)"
screen | sed -n 1p | grep -qF PAUSED && ok || no "the lesson did not pause at its prompt: $(screen | sed -n 1p)"
screen | grep -qF 'Gradient norms at initialization' && ok || no "no lesson title in the panel"
screen | grep -qF 'space goes on, L hides' && ok || no "the panel does not say space goes on"
# hidden, the event log is back under it (the prompt is logged there too)
key L
wait_gone 'space goes on, L hides' 10 && ok || no "L did not hide the panel"
screen | grep -qF 'nothing learned yet' && ok || no "hidden: the prompt is not in the event log"
key L
wait_for 'space goes on, L hides' 10 && ok || no "L did not show the panel again"
key Space
wait_for RUNNING 20 && ok || no "space did not go on"
wait_counter -gt 1 60 && ok || no "the step counter did not move after space"
key q
check_exited "lesson q" 0

# --- --no-pause: straight through, the prompt still logged -----------------
run "LC_ALL=C $BIN --lesson gradient-profile -d 64 --no-pause"
wait_counter -gt 2 120 && ok || no "--no-pause: the run stopped at the prompt: $(screen | sed -n 1p)"
screen | sed -n 1p | grep -qF PAUSED && no "--no-pause: paused" || ok
screen | grep -qF 'nothing learned yet' && ok || no "--no-pause: the prompt was not shown"
key q
check_exited "--no-pause q" 0

# --- a --script's prompt, no lesson; the panel at 80x24 ---------------------
printf 'at 3: pause Why does the loss fall fastest at the start?\n' >"$T/s.txt"
$TM resize-window -t "$W" -x 80 -y 24 2>/dev/null
run "LC_ALL=C $BIN $SMALL --script $T/s.txt"
wait_for 'step 3: Why does the loss fall' 60 && ok || no "--script: the prompt is not in the panel"
screen | sed -n 1p | grep -qF PAUSED && ok || no "--script: not paused at the prompt"
screen | grep -q '^ *> *3 ' && ok || no "80x24: the top layer's row is gone under the panel"
key q
check_exited "script q" 0

# --- the projector: every layer at 80x24 with -L 12, at 100x30 with -L 24 ---
run "LC_ALL=C $BIN -L 12 -d 32 -H 2 -T 32 -B 8"
wait_for RUNNING 30 && ok || no "-L 12 at 80x24 did not start: $(cat "$T/err" 2>/dev/null)"
wait_counter -gt 0 30
screen | grep -Eq '^>11( |$)' && ok || no "80x24 -L 12: layer 11 is not on the screen"
screen | grep -Eq '^  0( |$)' && ok || no "80x24 -L 12: layer 0 is not on the screen"
screen | sed -n 2p | grep -qF 'layer 11/12' && ok || no "80x24: the selected layer is not in the status line"
key q
check_exited "-L 12 q" 0
$TM resize-window -t "$W" -x 100 -y 30 2>/dev/null
run "LC_ALL=C $BIN -L 24 -d 32 -H 2 -T 32 -B 4"
wait_for RUNNING 30 && ok || no "-L 24 at 100x30 did not start: $(cat "$T/err" 2>/dev/null)"
wait_counter -gt 0 60
# (two columns of compact rows: the chart keeps its rows)
[ "$(layers_seen | sort -un | wc -l)" -eq 24 ] && ok || no "100x30 -L 24: not every layer on the screen"
screen | grep -q '^ loss \[' && ok || no "100x30 -L 24: no loss chart"
key q
check_exited "-L 24 q" 0

# --- the event log scrolls back: [ and { older, ] and } newer ----------------
$TM resize-window -t "$W" -x 120 -y 40 2>/dev/null
printf 'at 1: note FIRSTLINE of the run\nevery 2: note tick\nat 40: pause look back\n' >"$T/log.txt"
run "LC_ALL=C $BIN $SMALL --script $T/log.txt"
wait_for 'step 40: look back' 60 && ok || no "log: the run did not stop at step 40"
key L
wait_gone 'FIRSTLINE' 10 && ok || no "log: the first line is still on the screen (nothing to scroll)"
key '{'
i=0
while [ "$i" -lt 20 ] && ! screen | grep -qF FIRSTLINE; do key '['; sleep 0.1; i=$((i + 1)); done
screen | grep -qF FIRSTLINE && ok || no "log: [ did not bring the first line back"
screen | grep -qE -- '-- [0-9]+ newer' && ok || no "log: no 'newer' marker while scrolled back"
# new events do not move the view
key Space
wait_counter -gt 46 60
screen | grep -qF FIRSTLINE && ok || no "log: new events moved the view off the first line"
key Space
i=0
while [ "$i" -lt 40 ] && screen | grep -qE -- '-- [0-9]+ newer'; do key '}'; sleep 0.1; i=$((i + 1)); done
screen | grep -qE -- '-- [0-9]+ newer' && no "log: } did not return to the newest" || ok
screen | grep -qF FIRSTLINE && no "log: following again, yet the first line still shows" || ok
# the wheel: tmux passes a raw X10 mouse report (ESC [ M, button+32,
# column+33, row+33; 64 wheel up, 65 down) to the pane as the terminal would
wheel() { # wheel ROW(0-based) up|down
    b=$([ "$2" = up ] && echo 96 || echo 97)
    key -l "$(printf '\033[M%b%b%b' "\\0$(printf %o "$b")" "\\0$(printf %o 43)" \
        "\\0$(printf %o $(($1 + 33)))")"
}
# still paused (the second space above): no new events race the wheel
wait_for PAUSED 10 && ok || no "log: not paused before the wheel"
log_row=$(($(screen | grep -n -- '-- events' | head -1 | cut -d: -f1) + 1)) # 0-based: title + 1
wheel "$log_row" up
wheel "$log_row" up
wait_for ' newer: ' 10 && ok || no "log: the wheel over the log did not scroll it back"
for _ in 1 2 3 4 5 6 7 8; do wheel "$log_row" down; done
wait_gone ' newer: ' 10 && ok || no "log: the wheel down did not return to the newest"
sel=$(screen | grep -o 'layer [0-9] of 4' | head -1)
wheel 6 down
wait_gone "$sel" 10 && ok || no "the wheel over the layers did not move the selection ($sel)"
screen | grep -qF ' newer: ' && no "the wheel over the layers scrolled the log" || ok
key q
check_exited "log q" 0

# --- predict, then reveal: normscope-lessons(7)'s complete example (its
# WRITING A LESSON), from the page, hides run b until after step 50 ------
$TM resize-window -t "$W" -x 80 -y 24 2>/dev/null
awk '/^\.Ss A complete example/ { on = 1 } on && /^\.Bd -literal/ { p = 1; next } p && /^\.Ed/ { exit } p' \
    "$(dirname "$0")/../../man/normscope-lessons.7" >"$T/reveal.lesson"
grep -q '^reveal: 50$' "$T/reveal.lesson" && ok || no "the page's example does not reveal at 50: $(cat "$T/reveal.lesson")"
run "LC_ALL=C $BIN --lesson $T/reveal.lesson"
wait_for 'step 50: Run b shows' 60 && ok || no "reveal: the question is not on the screen: $(cat "$T/err" 2>/dev/null)"
screen | grep -qF 'Run b is hidden until after step 50' && ok || no "reveal: the panel does not say run b is hidden"
screen | grep -qE '^ b: |b: norm=pre' && no "reveal: run b is on the screen before its step: $(screen | sed -n 2p)" || ok
# the event log, under the panel, masks run b's lines (its validations):
# scrolled back to a validation, a's shows and b's is masked
key L
wait_gone 'L hides' 10
back_to() { i=0; while [ "$i" -lt 12 ] && ! screen | grep -qF -- "$1"; do key '['; sleep 0.1; i=$((i + 1)); done; }
back_to 'a: validation loss'
screen | grep -qF 'a: validation loss' && ok || no "reveal: run a's validation is not in the event log"
screen | grep -qF 'b: (hidden until the reveal)' && ok || no "reveal: run b's validation is not masked: $(screen | grep -A4 -- '-- events')"
screen | grep -qF 'b: validation loss' && no "reveal: run b's validation is in the event log" || ok
key B
wait_for 'b: norm=pre' 10 && ok || no "reveal: B did not show run b"
screen | sed -n 2p | grep -q '^ b: ' && ok || no "reveal: after B run b's status row is missing: $(screen | sed -n 2p)"
back_to 'b: validation loss'
screen | grep -qF 'b: validation loss' && ok || no "reveal: after B run b's events are still masked: $(screen | grep -A4 -- '-- events')"
key q
check_exited "reveal B q" 0
# without B: shown once the run goes past step 50, as the page says
run "LC_ALL=C $BIN --lesson $T/reveal.lesson"
wait_for 'step 50: Run b shows' 60 && ok || no "reveal 2: no question"
key Space
wait_counter -gt 50 30
wait_for 'b: norm=pre' 10 && ok || no "reveal: run b not shown after step 50: $(screen | sed -n 1,2p)"
key q
check_exited "reveal step q" 0

check_reports 60

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
