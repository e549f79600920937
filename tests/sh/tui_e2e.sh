#!/bin/sh
# tui_e2e.sh - the live view from the outside, as tmux's own regress tests
# do it: the real binary in a detached tmux session (a 120x40 pane on a
# private server, tmux -L), keys sent with send-keys, the screen read back
# with capture-pane. Checks the counter runs, then p, w, f, space, n, +,
# m, M, ?, q one at a time; --compare's two panels (M in both) and the d
# and e files; --light's colours (capture-pane -e) and t switching them;
# resizing below the minimum and back; a click on
# a status-line toggle; braille in a UTF-8 locale and none with --ascii;
# SIGTERM, Ctrl-C and a crash (SIGSEGV) restore the terminal; a diverging
# run pauses, names the first non-finite op and keeps answering keys; and
# a stress run that presses
# every key many times (run against the ThreadSanitizer build by
# `make tsan`, whose report, if any, fails the test).
#
# Usage: NS_BIN=./normscope sh tests/sh/tui_e2e.sh
# Prints "N passed, N failed"; exits non-zero on any failure. Every wait
# has a timeout; the tmux server is killed on exit.
# shellcheck source=../lib/posix_lib.sh
. "$(dirname "$0")/../lib/posix_lib.sh"
# shellcheck source-path=SCRIPTDIR source=../lib/tmux_lib.sh
. "$(dirname "$0")/../lib/tmux_lib.sh"
tmux_init tui_e2e.sh e2e
watchdog "${NS_E2E_LIMIT:-600}"
need_tmux_bin
sanitizer_env
# a small model: fast even under ThreadSanitizer
SMALL="-L 4 -d 32 -H 2 -T 32 -B 8 --val-every 20 --val-batches 1"

W=e2e # the session that screen, key and new_session use
# run ARGS...: start normscope in the pane's shell, its status echoed after
run() {
    rm -f "$T/err"
    # NS_""EXIT: the typed line must not match what the wait looks for
    key "clear; $* 2>$T/err; echo NS_\"\"EXIT=\$?" Enter
}
# the terminal is usable again: the shell is back, full screen left,
# canonical mode and echo on
check_restored() {
    check_exited "$1" "$2"
    check_modes "$1"
}

new_session

# --- the basic walk: counter, p, w, f, space, n, +, m, ?, q ---------------
run "LC_ALL=C $BIN $SMALL"
wait_for RUNNING 30 && ok || no "the dashboard did not start: $(cat "$T/err" 2>/dev/null)"
wait_counter -gt 0 30 && ok || no "the step counter did not start"
a=$(counter)
wait_counter -gt "${a:-0}" 30 && ok || no "the step counter did not advance from $a"

screen | grep -qF '[p] Pre-LN' && ok || no "placement label: $(screen | sed -n 2p)"
# paused around p, so its event stays in the log's four rows: running, at
# a few hundred steps/s the validation lines push it out within a second,
# sooner than a loaded machine's capture may come
key Space
wait_for PAUSED 20 && ok || no "p: no PAUSED before it"
key p
wait_for '[p] Post-LN' 20 && ok || no "p: the placement label did not change"
key n
wait_for 'norm pre -> post' 20 && ok || no "p: no event"
key Space
wait_gone PAUSED 20 && ok || no "p: did not run again after the second space"
# the chart marks the change once it has drawn steps past it
wait_for ':post' 30 && ok || no "p: no marker on the chart"

key w
wait_for '[w] warmup off' 20 && ok || no "w: warmup label did not change"
key f
wait_for '[f] bf16' 20 && ok || no "f: precision did not go to bf16"
key f f
wait_for '[f] fp32' 20 && ok || no "f f: precision did not cycle back to fp32"

key Space
wait_for PAUSED 20 && ok || no "space: no PAUSED"
a=$(counter)
sleep 1
b=$(counter)
[ -n "$a" ] && [ "$a" = "$b" ] && ok || no "space: the counter moved while paused ($a -> $b)"
key n
wait_counter -eq $((a + 1)) 20 && ok || no "n: counter not $((a + 1)): $(counter)"
sleep 1
[ "$(counter)" = $((a + 1)) ] && ok || no "n: moved by more than one: $a -> $(counter)"
screen | grep -q PAUSED && ok || no "n: no longer paused"

key +
wait_for 'peak LR 0.001 -> 0.002' 20 && ok || no "+: no event"
wait_for 'lr 2.00e-03' 10 && ok || no "+: the status line does not show the new LR"

key m
wait_for 'gradient norm per layer over time' 10 && ok || no "m: no heatmap"
key m
wait_for 'attention |grad|' 10 && ok || no "m m: the bars did not come back"
# M: the layer rows show the mechanisms (same layers, same rows); M again
key M
wait_for 'att entrpy' 10 && ok || no "M: no mechanisms rows"
wait_for 'q.k/sqrt(d)' 10 && ok || no "M: no logit unit under the titles: $(screen | sed -n 3,5p)"
key M
wait_for 'attention |grad|' 10 && ok || no "M M: the gradients did not come back"

key '?'
wait_for 'normscope keys' 10 && ok || no "?: no help"
screen | grep -q 'one step while paused' && ok || no "?: help lacks n"
screen | grep -q 'key closes this help' && ok || no "?: help lacks its closing hint"

# a click on the clip toggle acts like c (X10 mouse report: ESC [ M b x y,
# each +32, 1-based); first close the help with Escape
key Escape
wait_gone 'normscope keys' 10 && ok || no "Escape: help did not close"
col=$(screen | sed -n 2p | awk '{print index($0, "[c] clip off")}')
if [ "${col:-0}" -gt 0 ] && [ "$col" -lt 90 ]; then
    x=$(printf "\\$(printf %o $((col + 32 + 1)))")
    key -l "$(printf '\033[M ')$x\"" # press: b=0 (' '), row 2 ('"' = 32+2)
    key -l "$(printf '\033[M#')$x\"" # release
    wait_for '[c] clip 1' 10 && ok || no "a click on [c] did not toggle clipping"
else
    no "no '[c] clip off' toggle on the status line"
fi

# below the minimum size: the message with both sizes; and back
$TM resize-window -t e2e -x 70 -y 20 2>/dev/null
wait_for 'needs at least 80x24' 10 && ok || no "resize: no too-small message"
screen | grep -q 'this terminal is 70x20' && ok || no "resize: the size now is not shown"
$TM resize-window -t e2e -x 120 -y 40 2>/dev/null
wait_for '[p] Post-LN' 10 && ok || no "resize back: the dashboard did not return"

key q
check_restored q 0
grep -q 'steps in .* s (.* steps/s' "$T/err" && ok || no "q: no summary line: $(cat "$T/err")"
screen | grep -qF '[p] Post-LN' && no "q: the dashboard is still on the screen" || ok

# --- --compare side by side; d and e write the screen and the metrics ---------
run "(cd $T && LC_ALL=C $BIN $SMALL --compare norm=post --csv $T/live.csv)"
wait_for 'b: norm=post' 30 && ok || no "--compare: no panel for run b: $(cat "$T/err" 2>/dev/null)"
screen | grep -q '^a: norm=pre ' && ok || no "--compare: no panel for run a"
screen | grep -qF 'a/b' && ok || no "--compare: no a/b ratio column"
key M # the mechanisms in both panels, on one header row
wait_for 'entrpy' 10 && ok || no "--compare M: no mechanisms rows"
screen | grep -q 'logit.*entrpy.*|grad|.*logit.*entrpy' && ok ||
    no "--compare M: not in both panels: $(screen | grep entrpy)"
key M
wait_for 'attn abs' 10 && ok || no "--compare M M: the gradients did not come back"
screen | grep -qF -- '+ b: norm=post' && ok || no "--compare: the chart's legend lacks run b"
wait_counter -gt 5 30 && ok || no "--compare: the counter did not move"
key Space
wait_for PAUSED 20 && ok || no "--compare: space did not pause"
key d
wait_for 'wrote normscope-screen-' 20 && ok || no "d: no event naming the file"
f=$(ls "$T"/normscope-screen-*.txt 2>/dev/null | head -1)
[ -n "$f" ] && grep -q 'step [0-9]*.* loss' "$f" && grep -qF 'b: norm=post' "$f" && ok ||
    no "d: no screen file with the status line: $f"
key e
wait_for 'wrote normscope-metrics-' 20 && ok || no "e: no event naming the file"
f=$(ls "$T"/normscope-metrics-*.csv 2>/dev/null | head -1)
[ -n "$f" ] && [ "$(head -1 "$f")" = "$(cat "$T"/live.csv.tmp.* | head -1)" ] && [ "$(wc -l <"$f")" -gt 5 ] &&
    ok || no "e: no metrics file with --csv's header: $f"
ls "$T"/normscope-*.tmp.* >/dev/null 2>&1 && no "d/e: a temporary file was left behind: $(ls "$T")" || ok
# d and e in one burst (within one frame): both files, neither lost
rm -f "$T"/normscope-screen-*.txt "$T"/normscope-metrics-*.csv
key d e
i=0
while [ $i -lt 100 ] && ! { ls "$T"/normscope-screen-*.txt && ls "$T"/normscope-metrics-*.csv; } >/dev/null 2>&1; do
    sleep 0.2
    i=$((i + 1))
done
ls "$T"/normscope-screen-*.txt >/dev/null 2>&1 && ls "$T"/normscope-metrics-*.csv >/dev/null 2>&1 &&
    ok || no "d e in one burst: not both files: $(ls "$T")"
# g: the view as an SVG figure, from the snapshot: both loss lines, each run's 4 x 2 bars
key g
i=0
while [ $i -lt 100 ] && ! ls "$T"/normscope-[0-9]*.svg >/dev/null 2>&1; do
    sleep 0.2
    i=$((i + 1))
done
f=$(ls "$T"/normscope-[0-9]*.svg 2>/dev/null | head -1)
[ -n "$f" ] && ${PYTHON:-/usr/bin/python3} "$(dirname "$0")/../lib/plot_check.py" svg "$f" >/dev/null &&
    [ "$(grep -c 'class="series" data-name="train loss' "$f")" -eq 2 ] &&
    [ "$(grep -c 'class="bar"' "$f")" -eq 16 ] && ok ||
    no "g: no figure with both runs' loss and 2 bars for each of 4 layers of each run: $f"
wait_for 'wrote normscope-' 20 && ok || no "g: no event naming the figure"
key q
check_restored compare 0
head -1 "$T/live.csv" | grep -q ',b_loss,' && ok || no "--compare: the live CSV has no b_ columns"
grep -q 'normscope: b (norm=post): loss ' "$T/err" && ok || no "--compare: no summary line for b: $(cat "$T/err")"

# --- locale: braille with UTF-8, none with --ascii --------------------------
BRAILLE=$(printf '\342[\240-\243]')
run "LC_ALL=C.UTF-8 $BIN $SMALL"
wait_counter -gt 30 60 && ok || no "utf-8 run did not start"
sleep 0.5
screen | LC_ALL=C grep -q "$BRAILLE" && ok || no "UTF-8 locale: no braille in the chart"
key q
wait_for NS_EXIT=0 20 && ok || no "utf-8 run: q"
run "LC_ALL=C.UTF-8 NO_COLOR=1 $BIN $SMALL --ascii"
wait_counter -gt 30 60 && ok || no "--ascii run did not start"
sleep 0.5
screen | LC_ALL=C grep -q "$(printf '[\200-\377]')" && no "--ascii: non-ASCII bytes on screen" || ok
key q
wait_for NS_EXIT=0 20 && ok || no "--ascii run: q"

# --- --light: no yellow, cyan or dim text (SGR 33, 93, 36, 96, 2) on the
# screen or in the help's glossary; the default palette has cyan ---------
run "LC_ALL=C.UTF-8 $BIN $SMALL --light"
wait_counter -gt 5 60 && ok || no "--light run did not start: $(cat "$T/err" 2>/dev/null)"
s=$(sgr)
echo "$s" | grep -q '\[34m' && ok || no "--light: no blue on the screen: $s"
pale "$s" && no "--light: pale or dim text on the screen: $s" || ok
key '?'
wait_for 'normscope keys' 10 && ok || no "--light: ? shows no help"
i=1 # each page in turn (the frame that shows it, not the key, is waited for)
while [ $i -lt 8 ] && ! screen | grep -q 'blue normal' && screen | grep -q "$i/[0-9]* PgDn: more"; do
    key PgDn
    i=$((i + 1))
    wait_for " $i/" 10 || break
    s=$(sgr)
    pale "$s" && no "--light: pale or dim text on help page $i: $s"
done
screen | grep -q 'black normal' && ok || no "--light: the glossary does not name the light palette's colours"
key Escape
# t: the default palette's pairs (cyan) live, the help's title says so;
# t again: --light's, no pale text
key t
wait_for 'palette: dark (t: light)' 10 && s=$(sgr) && echo "$s" | grep -q '\[36m' && ok ||
    no "t: no cyan (the default palette) to tell it from --light's: $s"
key '?'
wait_for 'keys (palette: dark)' 10 && ok || no "t: the help's title does not name the palette"
key Escape t
wait_for 'palette: light (t: dark)' 10 && s=$(sgr) && echo "$s" | grep -q '\[34m' && ! pale "$s" && ok ||
    no "t again: not --light's palette: $s"
key q
wait_for NS_EXIT=0 20 && ok || no "--light run: q"

# --- --steps pauses as DONE; --csv rows come from the live run too ---------
run "LC_ALL=C $BIN $SMALL --steps 25 --csv $T/live.csv"
wait_for DONE 60 && ok || no "--steps 25: no DONE"
[ "$(counter)" = 25 ] && ok || no "--steps 25: stopped at $(counter)"
key q
wait_for NS_EXIT=0 20 && ok || no "--steps run: q"
[ "$(wc -l <"$T/live.csv" 2>/dev/null)" = 26 ] && ok || no "--csv in the live view: $(wc -l <"$T/live.csv" 2>/dev/null) lines, want 26"
grep -q '^normscope: 25 steps in' "$T/err" && ok || no "--steps run: summary: $(cat "$T/err")"
# the same numbers as headless: the trainer thread, its samples and the
# UI change nothing (only the timing column may differ)
"$BIN" --headless $SMALL --steps 25 -q --csv "$T/headless.csv" 2>/dev/null
ns_cut_out 6 "$T/live.csv" >"$T/live.cut"
ns_cut_out 6 "$T/headless.csv" >"$T/headless.cut"
[ -s "$T/live.cut" ] && cmp -s "$T/live.cut" "$T/headless.cut" && ok || no "live and headless metrics differ"
# a terminal curses cannot drive: one clear line, exit 1, the shell intact
run "TERM=bogus-terminal $BIN $SMALL"
wait_for NS_EXIT=1 20 && ok || no "TERM=bogus: exit status: $(screen | grep NS_EXIT)"
grep -q 'cannot use the terminal (TERM=bogus-terminal)' "$T/err" && ok || no "TERM=bogus: $(cat "$T/err")"

# --- signals restore the terminal -------------------------------------------
run "LC_ALL=C $BIN $SMALL"
wait_for RUNNING 30 && ok || no "run for SIGTERM did not start"
shpid=$($TM display -p -t e2e '#{pane_pid}')
nspid=$(pgrep -P "$shpid" 2>/dev/null | head -1)
if [ -n "$nspid" ]; then
    kill -TERM "$nspid"
    check_restored SIGTERM 130
    grep -q 'interrupted at step' "$T/err" && ok || no "SIGTERM: no message: $(cat "$T/err")"
else
    no "SIGTERM: cannot find the normscope process"
fi
run "LC_ALL=C $BIN $SMALL"
wait_for RUNNING 30 && ok || no "run for Ctrl-C did not start"
key C-c
check_restored Ctrl-C 130
# a crash: the handler restores the terminal, then dies of the signal
run "LC_ALL=C $BIN $SMALL"
wait_for RUNNING 30 && ok || no "run for SIGSEGV did not start"
nspid=$(pgrep -P "$($TM display -p -t e2e '#{pane_pid}')" 2>/dev/null | head -1)
if [ -n "$nspid" ]; then
    kill -SEGV "$nspid"
    check_restored SIGSEGV 139
else
    no "SIGSEGV: cannot find the normscope process"
fi

# --- a diverging run pauses and says so; the view keeps responding ------------
printf 'at 5: lr 1e30\n' >"$T/diverge"
run "LC_ALL=C $BIN $SMALL --warmup 0 --script $T/diverge --snapshot-every 2 --save $T/live.ck"
if wait_for DIVERGED 60; then
    ok
    wait_for 'first non-finite' 10 && ok || no "diverged: the status line does not say where"
    key m
    wait_for 'gradient norm per layer over time' 10 && ok || no "diverged: keys no longer work"
    key q
    check_restored diverged 3
    # --save of a run quit while diverged: the last good snapshot
    [ -s "$T/live.ck" ] && ok || no "diverged: --save wrote no checkpoint"
else
    no "lr 1e30 did not diverge (or the UI did not say so)"
    key q
fi

# --- stress: every key, many times (the ThreadSanitizer run of make tsan) ----
run "LC_ALL=C.UTF-8 $BIN $SMALL --snapshot-every 5"
wait_counter -gt 0 30 && ok || no "stress run did not start"
i=0
while [ "$i" -lt "${NS_E2E_ROUNDS:-12}" ]; do
    for k in p P k w f i l Space n + - c b Space r Tab m v m v Up Down PPage NPage Home End y z z L L \
        '?' h F1 Escape Space; do
        key "$k"
        sleep 0.01
    done
    i=$((i + 1))
done
wait_for 'F10Quit' 30 && ok || no "stress: the dashboard is gone: $(screen | tail -3)"
key F10
if wait_for NS_EXIT=[0-9] 60; then
    code=$(screen | sed -n 's/.*NS_EXIT=\([0-9]*\).*/\1/p' | tail -1)
    case $code in 0 | 3) ok ;; *) no "stress: exit status $code: $(tail -5 "$T/err")" ;; esac
else
    no "stress: F10 did not quit"
fi
check_reports 60

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
