#!/bin/sh
# tui_signals.sh - the live view under job control, hang-ups, resize storms
# and non-finite numbers, driven in tmux as tui_e2e.sh does (a private
# server with tmux -L, keys with send-keys, the screen read back with
# capture-pane):
#   - Ctrl-Z leaves the terminal usable (shell prompt, echo, canonical
#     mode) with the process stopped; fg re-enters the live view, redrawn,
#     and training and its steps/s come back;
#   - SIGSTOP from outside, the shell's "Stopped" line written over the
#     dashboard, then fg: every cell is repainted (no trace of the shell);
#   - SIGHUP (kill -HUP, and tmux kill-pane: the terminal goes away as when
#     an ssh session closes) and SIGINT by kill: the process ends within
#     seconds and the --csv file holds every step done;
#   - a resize storm (hundreds of random sizes from 10x3 to 250x80 while
#     training), then 120x40 draws the whole dashboard and 20x5 the
#     too-small message;
#   - the peak LR pushed to 1e30 with + pressed over a hundred times: the
#     dashboard shows NaN and where it started, keys still work, b rewinds.
#
# Usage: NS_BIN=./normscope sh tests/sh/tui_signals.sh
# Prints "N passed, N failed"; exits non-zero on any failure. Every wait
# polls with a generous timeout (sanitizer builds on a busy machine); the
# tmux server is killed on exit. Sanitizer reports fail the test.
# shellcheck source-path=SCRIPTDIR source=../lib/tmux_lib.sh
. "$(dirname "$0")/../lib/tmux_lib.sh"
tmux_init tui_signals.sh sig
watchdog "${NS_SIG_LIMIT:-400}"
need_tmux_bin
sanitizer_env
SMALL="-L 2 -d 32 -H 2 -T 32 -B 8 --val-every 20 --val-batches 1"

W=e2e # the target of screen/key; the kill-pane test points it elsewhere
rate() { screen | sed -n '1s/.* \([0-9][0-9]*\)\.[0-9] steps\/s.*/\1/p'; }
# run ARGS...: normscope under an inner sh that writes its pid and echoes
# the exit status
run() {
    rm -f "$T/err" "$T/pid"
    key "clear; sh -c 'echo \$\$ >$T/pid; $* 2>$T/err; echo NS_\"\"EXIT=\$?'" Enter
}
# the normscope process: the inner sh's child
nspid() {
    i=0
    while [ "$i" -lt 100 ]; do
        if [ -s "$T/pid" ]; then
            p=$(pgrep -P "$(cat "$T/pid")" 2>/dev/null | head -1)
            [ -n "$p" ] && { echo "$p"; return 0; }
        fi
        sleep 0.1
        i=$((i + 1))
    done
    return 1
}
# run_job ARGS...: normscope alone as the shell's foreground job (the sh
# execs it), as a user starts it; for Ctrl-Z, which stops the whole job:
# a job-control shell that sees its job stop goes on to the rest of the
# line, so the status is asked for after the exit (job_status)
run_job() {
    rm -f "$T/err" "$T/pid"
    key "clear; sh -c 'echo \$\$ >$T/pid; exec $* 2>$T/err'" Enter
    i=0
    while [ "$i" -lt 100 ] && [ ! -s "$T/pid" ]; do sleep 0.1; i=$((i + 1)); done
    pid=$(cat "$T/pid" 2>/dev/null)
}
job_status() { key "echo NS_\"\"EXIT=\$?" Enter; }
# wait_dead PID SECONDS
wait_dead() {
    i=0
    while [ "$i" -lt $(($2 * 10)) ]; do
        alive "$1" || return 0
        sleep 0.1
        i=$((i + 1))
    done
    return 1
}
# the process state letter (T = stopped)
pstate() { ps -o stat= -p "$1" 2>/dev/null | cut -c1; }
# the shell has the terminal: it runs what is typed, and its output shows
shell_usable() {
    what=$1
    key "echo SHELL_\"\"OK" Enter
    wait_for SHELL_OK 10 && ok || no "$what: the shell did not run a typed command: $(screen | tail -3)"
    check_modes "$what"
}
check_restored() {
    check_exited "$1" "$2"
    shell_usable "$1"
}
# the whole dashboard at 120x40: the status line (its title the first item
# to go when the values need the row), the layer header, the
# chart, the events box and the footer, each on the row it belongs to
dashboard_whole() {
    s=$(screen)
    [ "$(printf '%s\n' "$s" | wc -l)" -ge 39 ] &&
        printf '%s\n' "$s" | sed -n 1p | grep -Eq '^ (normscope  )?step [0-9]' &&
        printf '%s\n' "$s" | sed -n 2p | grep -qF '[p] ' &&
        printf '%s\n' "$s" | sed -n 3p | grep -qF 'attention |grad|' &&
        printf '%s\n' "$s" | grep -qF ' loss [' &&
        printf '%s\n' "$s" | grep -q '^[^a-z]* events [^a-z]*$' &&
        printf '%s\n' "$s" | tail -1 | grep -qF 'F10Quit'
}
# wait_whole SECONDS: until the dashboard is whole (a frame may be half sent)
wait_whole() {
    k=0
    while [ "$k" -lt $(($1 * 10)) ]; do
        dashboard_whole && return 0
        sleep 0.1
        k=$((k + 1))
    done
    return 1
}

new_session

# --- Ctrl-Z: the shell gets a usable terminal; fg redraws and trains on --------
run_job env LC_ALL=C $BIN $SMALL
wait_counter -gt 20 60 && ok || no "the dashboard did not start: $(cat "$T/err" 2>/dev/null)"
# steps/s before the stop (0 until its first window closes)
i=0
while [ "$i" -lt 100 ]; do r0=$(rate); [ "${r0:-0}" -gt 0 ] && break; sleep 0.1; i=$((i + 1)); done
key C-z
wait_for Stopped 20 && ok || no "Ctrl-Z: the shell did not report a stopped job: $(screen | tail -3)"
[ "$(alt_screen)" = 0 ] && ok || no "Ctrl-Z: still on the alternate screen"
[ "$(pstate "$pid")" = T ] && ok || no "Ctrl-Z: normscope is not stopped (state $(pstate "$pid"))"
alive "$pid" && ok || no "Ctrl-Z: normscope exited"
shell_usable Ctrl-Z
sleep 2 # stopped a while: the steps/s window spans the stop
[ "$(pstate "$pid")" = T ] && ok || no "Ctrl-Z: normscope did not stay stopped"
# resized while stopped: no SIGWINCH reaches a stopped process
$TM resize-window -t e2e -x 100 -y 30 2>/dev/null
key fg Enter
wait_for RUNNING 30 && ok || no "fg: the dashboard was not redrawn: $(screen | tail -3)"
[ "$(alt_screen)" = 1 ] && ok || no "fg: not on the alternate screen"
k=0
while [ "$k" -lt 100 ] && ! screen | sed -n 30p | grep -qF F10Quit; do sleep 0.1; k=$((k + 1)); done
screen | sed -n 30p | grep -qF F10Quit && ok || no "fg: not drawn for the size set while stopped (100x30)"
screen | grep -qE 'SHELL_OK|STTY_DONE|Stopped' && no "fg: the shell's lines are still on the screen" || ok
$TM resize-window -t e2e -x 120 -y 40 2>/dev/null
wait_whole 10 && ok || no "fg: the dashboard is not whole: $(screen)"
a=$(counter)
wait_counter -gt "${a:-0}" 30 && ok || no "fg: training did not go on from step $a"
# the rate: the trainer's clock stands still while stopped, so steps/s
# is back to its old level (within 4x, for a loaded machine) soon after fg
ok_rate=0
i=0
while [ "$i" -lt 100 ]; do
    r=$(rate)
    if [ -n "$r" ] && [ -n "$r0" ] && [ $((r * 4)) -ge "$r0" ]; then ok_rate=1; break; fi
    sleep 0.1
    i=$((i + 1))
done
[ "$ok_rate" = 1 ] && ok || no "fg: steps/s did not recover: $r0 before, $(rate) after"
key m
wait_for 'gradient norm per layer over time' 10 && ok || no "fg: keys do not work"
key m
key q
wait_dead "$pid" 30 && ok || no "Ctrl-Z, fg, q: normscope did not exit"
job_status
check_restored "Ctrl-Z, fg, q" 0
[ -s "$T/err" ] && grep -q 'steps in' "$T/err" && ok || no "Ctrl-Z: no summary: $(cat "$T/err")"

# --- SIGSTOP from outside: the shell writes over the dashboard; fg repaints ---
run_job env LC_ALL=C $BIN $SMALL
wait_counter -gt 20 60 && ok || no "run for SIGSTOP did not start"
kill -STOP "$pid"
wait_for Stopped 20 && ok || no "SIGSTOP: the shell did not report a stopped job"
# the terminal is still in the live view's modes (no echo, and no CR to NL:
# the shell needs a real newline), so fg is typed blind, ended by C-j
key fg C-j
wait_counter -gt 0 30 && ok || no "SIGCONT: no dashboard"
k=0
while [ "$k" -lt 50 ] && screen | grep -q Stopped; do sleep 0.1; k=$((k + 1)); done
screen | grep -q Stopped && no "SIGCONT: the shell's 'Stopped' line was not painted over" || ok
wait_whole 10 && ok || no "SIGCONT: the dashboard is not whole: $(screen)"
key q
wait_dead "$pid" 30 && ok || no "SIGSTOP, fg, q: normscope did not exit"
job_status
check_restored "SIGSTOP, fg, q" 0

# --- SIGHUP and SIGINT by kill: outputs written, terminal restored --------------
for sig in HUP INT; do
    run "LC_ALL=C $BIN $SMALL --csv $T/sig.csv"
    wait_counter -gt 20 60 && ok || no "run for SIG$sig did not start"
    pid=$(nspid)
    kill -"$sig" "$pid"
    wait_dead "$pid" 10 && ok || no "SIG$sig: normscope still running after 10 s"
    check_restored "SIG$sig" 130
    n=$(sed -n 's/.*interrupted at step \([0-9]*\).*/\1/p' "$T/err")
    rows=$(($(wc -l <"$T/sig.csv" 2>/dev/null || echo 0) - 1))
    [ -n "$n" ] && [ "$rows" = "$n" ] && ok || no "SIG$sig: --csv has $rows rows, stopped at step '$n': $(cat "$T/err")"
done

# --- the terminal goes away (tmux kill-pane: SIGHUP, as an ssh session's end) --
rm -f "$T/err" "$T/pid" "$T/sig.csv"
$TM new-window -d -t e2e -n hup \
    "sh -c 'echo \$\$ >$T/pid; exec env LC_ALL=C $BIN $SMALL --csv $T/sig.csv 2>$T/err'"
W=e2e:hup
wait_counter -gt 20 60 && ok || no "run for kill-pane did not start: $(cat "$T/err" 2>/dev/null)"
pid=$(cat "$T/pid" 2>/dev/null)
$TM kill-pane -t e2e:hup
W=e2e
wait_dead "$pid" 10 && ok || no "kill-pane: normscope still running after 10 s"
n=$(sed -n 's/.*interrupted at step \([0-9]*\).*/\1/p' "$T/err")
rows=$(($(wc -l <"$T/sig.csv" 2>/dev/null || echo 0) - 1))
[ -n "$n" ] && [ "$rows" = "$n" ] && ok || no "kill-pane: --csv has $rows rows, stopped at step '$n': $(cat "$T/err")"

# --- a resize storm while training; then a whole dashboard, then too small ------
run "LC_ALL=C.UTF-8 $BIN $SMALL"
wait_counter -gt 20 60 && ok || no "run for the resize storm did not start"
pid=$(nspid)
seed=$$
i=0
died=0
while [ "$i" -lt "${NS_SIG_RESIZES:-200}" ]; do
    seed=$(((seed * 1103515245 + 12345) % 2147483648))
    $TM resize-window -t e2e -x $((10 + seed % 241)) -y $((3 + seed / 241 % 78)) 2>/dev/null
    # a pause now and then: the storm lasts seconds, with frames drawn
    # between sizes as well as sizes coming faster than frames
    [ $((i % 4)) = 0 ] && sleep 0.05
    [ $((i % 20)) = 0 ] && { alive "$pid" || { died=1; break; }; }
    i=$((i + 1))
done
[ "$died" = 0 ] && alive "$pid" && ok || no "resize storm: normscope died after $i resizes: $(tail -5 "$T/err")"
$TM resize-window -t e2e -x 120 -y 40 2>/dev/null
wait_whole 10 && ok || no "after the storm: the dashboard at 120x40 is not whole: $(screen)"
a=$(counter)
wait_counter -gt "${a:-0}" 30 && ok || no "after the storm: training does not go on"
$TM resize-window -t e2e -x 20 -y 5 2>/dev/null
wait_for 'need 80x24' 10 && ok || no "20x5: no too-small message: $(screen)"
screen | grep -qF 'have 20x5' && ok || no "20x5: the size is not shown: $(screen)"
$TM resize-window -t e2e -x 120 -y 40 2>/dev/null
wait_for 'F10Quit' 10 && ok || no "back to 120x40: no dashboard"
key q
check_restored "resize storm" 0

# --- the LR pushed to 1e30: NaN shown, no crash, keys work, b rewinds -----------
run "LC_ALL=C $BIN $SMALL --snapshot-every 10"
wait_counter -gt 20 60 && ok || no "run for + did not start"
pid=$(nspid)
i=0
while [ "$i" -lt 13 ]; do # 130 presses: 1e-3 x 2^130 is far past the cap
    key + + + + + + + + + +
    sleep 0.05
    i=$((i + 1))
done
wait_for DIVERGED 60 && ok || no "+ x130: the run did not diverge: $(screen | head -1)"
wait_for 'peak LR 1e+30 -> 1e+30' 30 && ok || no "+ x130: the peak LR did not reach its cap 1e30: $(screen | tail -3)"
# at the cap the run blows up while finite (the diagnosis' blow-up state)
# or goes straight to a non-finite value: the status line says which
screen | grep -qE 'blew up, finite|first non-finite: ' && ok ||
    no "+ x130: the status line does not say how the run diverged: $(screen | head -1)"
s0=$(counter)
key + + + + + + + + + + Space
# resumed at that LR, it steps on and goes non-finite: the status line
# names where, the numbers show it
wait_counter -gt "${s0:-0}" 20 && ok || no "diverged: space did not resume"
wait_for 'first non-finite: ' 30 && ok || no "diverged again: the status line does not say where NaN began: $(screen | head -1)"
screen | grep -qE 'NaN|nan|inf' && ok || no "+ x130: no non-finite value on the screen"
wait_for DIVERGED 30 && ok || no "diverged again: not shown"
key m
wait_for 'gradient norm per layer over time' 10 && ok || no "diverged: m did not work"
key m
alive "$pid" && ok || no "+ x140: normscope died: $(tail -5 "$T/err")"
key b
wait_for 'rewound from step' 20 && ok || no "b: no rewind after the divergence"
wait_for PAUSED 10 && ok || no "b: not paused after the rewind"
key q
check_restored "LR 1e30" 0

check_reports 60

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
