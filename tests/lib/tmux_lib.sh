# shellcheck shell=sh
# tmux_lib.sh - the harness shared by the tests that drive normscope in a
# tmux pane (tui_e2e.sh, tui_signals.sh, soak.sh, valgrind.sh). Not run on
# its own: each sources it with
#   . "$(dirname "$0")/../lib/tmux_lib.sh"
# and then calls tmux_init first. POSIX sh.
#
# What a script sets, for the functions here:
#   W   the tmux target that screen, key and new_session use (a session
#       name; tui_signals.sh points it at a window for a while)
# What tmux_init sets: BIN (absolute), T (a temporary directory, removed
# on exit), SOCK and TM (tmux on a private server, tmux -L, killed on
# exit), ME (the script's name, for messages), pass and fail (the counts
# that ok and no keep).

# tmux_init NAME TAG: the script NAME (tui_e2e.sh) with its temporary
# directory /tmp/ns_TAG.XXXXXX and its tmux server ns_TAG_PID
tmux_init() {
    ME=$1
    BIN=${NS_BIN:-./normscope}
    case $BIN in /*) ;; *) BIN=$(pwd)/$BIN ;; esac
    T=$(mktemp -d "/tmp/ns_$2.XXXXXX")
    SOCK=ns_${2}_$$
    TM="tmux -L $SOCK -f /dev/null"
    WATCHDOG=
    pass=0
    fail=0
    trap finish EXIT
}
ok() { pass=$((pass + 1)); }
no() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
finish() {
    $TM kill-server 2>/dev/null
    [ -n "$WATCHDOG" ] && kill "$WATCHDOG" 2>/dev/null
    rm -rf "$T"
}

# watchdog SECONDS: the script is stopped (exit 1) after SECONDS, so
# nothing here can hang a build forever; its output goes nowhere, so it
# holds no pipe open after the test ends, and it takes its sleep with it
# when killed
watchdog() {
    LIMIT=$1
    trap 'echo "$ME: stopped (interrupted, or over the time limit of $LIMIT s)" >&2; exit 1' INT TERM
    (
        trap 'kill "$sp" 2>/dev/null; exit 0' TERM
        sleep "$LIMIT" &
        sp=$!
        wait "$sp"
        kill -TERM $$
    ) </dev/null >/dev/null 2>&1 &
    WATCHDOG=$!
}

# need_tmux_bin: tmux is installed and $BIN is an executable, or the
# script ends here, failed
need_tmux_bin() {
    if ! command -v tmux >/dev/null 2>&1; then
        echo "$ME: tmux is not installed (apt-get install tmux)" >&2
        echo "0 passed, 1 failed"
        exit 1
    fi
    if [ ! -x "$BIN" ]; then
        echo "$ME: $BIN is not an executable" >&2
        echo "0 passed, 1 failed"
        exit 1
    fi
}

# sanitizer_env: sanitizer reports go to files in $T, checked at the end by
# check_reports (halt_on_error: the first race ends the run with exit code
# 66); colours on
sanitizer_env() {
    export TSAN_OPTIONS="halt_on_error=1 exitcode=66 log_path=$T/tsan"
    export ASAN_OPTIONS="log_path=$T/asan"
    export UBSAN_OPTIONS="log_path=$T/ubsan"
    unset NO_COLOR
}
# check_reports LINES: no sanitizer wrote a report (else its first LINES
# lines go to stderr)
check_reports() {
    if ls "$T"/tsan.* "$T"/asan.* "$T"/ubsan.* >/dev/null 2>&1; then
        no "sanitizer reports:"
        cat "$T"/tsan.* "$T"/asan.* "$T"/ubsan.* 2>/dev/null | head -"$1" >&2
    else
        ok
    fi
}

# new_session: the session $W, a 120x40 pane running sh, no status line
# (or the script ends here, failed)
new_session() {
    $TM new-session -d -s "$W" -x 120 -y 40 sh || { echo "0 passed, 1 failed"; exit 1; }
    $TM set-option -t "$W" -g status off >/dev/null 2>&1
}
screen() { $TM capture-pane -p -t "$W" 2>/dev/null; }
key() { $TM send-keys -t "$W" "$@"; }
alt_screen() { $TM display -p -t "$W" '#{alternate_on}'; }
# sgr: the screen's distinct colour sequences (SGR), on one line
sgr() { $TM capture-pane -p -e -t "$W" | LC_ALL=C grep -o "$(printf '\033')\[[0-9;]*m" | sort -u | tr '\n' ' '; }
# pale SGR: a yellow, cyan or dim sequence among them, which --light's
# palette (for a white background) never uses
pale() { echo "$1" | grep -Eq '\[((1|22);)?(2|33|93|36|96)m'; }
# wait_for TEXT SECONDS: until the screen shows TEXT (a fixed string;
# "NS_EXIT=[0-9]" is the one pattern)
wait_for() {
    i=0
    while [ "$i" -lt $(($2 * 10)) ]; do
        case $1 in
        *'[0-9]') screen | grep -q -- "$1" && return 0 ;;
        *) screen | grep -qF -- "$1" && return 0 ;;
        esac
        sleep 0.1
        i=$((i + 1))
    done
    return 1
}
# wait_gone TEXT SECONDS: until the screen no longer shows TEXT
wait_gone() {
    i=0
    while [ "$i" -lt $(($2 * 10)) ]; do
        screen | grep -qF -- "$1" || return 0
        sleep 0.1
        i=$((i + 1))
    done
    return 1
}
# the step counter on the status line
counter() { screen | sed -n '1s/.*step \([0-9][0-9]*\).*/\1/p'; }
# wait_counter OP N SECONDS: until the step counter is OP (-gt, -eq) N
wait_counter() {
    i=0
    while [ "$i" -lt $(($3 * 10)) ]; do
        c=$(counter)
        # test, not [: shellcheck cannot parse [ with the operator in $1
        [ -n "$c" ] && test "$c" "$1" "$2" && return 0
        sleep 0.1
        i=$((i + 1))
    done
    return 1
}
alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null; }

# check_exited WHAT CODE: the shell echoed normscope's exit status CODE
# (see the scripts' run) and the alternate screen is left
check_exited() {
    what=$1 code=$2
    if wait_for "NS_EXIT=$code" 30; then ok; else no "$what: no NS_EXIT=$code: $(screen | grep NS_EXIT)"; fi
    [ "$(alt_screen)" = 0 ] && ok || no "$what: still on the alternate screen"
}
# check_modes WHAT: the terminal is back in canonical mode with echo on
check_modes() {
    what=$1
    key "stty -a | tr ' ;' '\\n\\n' | grep -x -e -icanon -e icanon -e -echo -e echo | tr '\\n' ' '; echo STTY_\"\"DONE" Enter
    if wait_for STTY_DONE 10 && screen | grep -q '^icanon echo'; then ok; else
        no "$what: terminal modes not restored: $(screen | grep -B1 STTY_DONE | head -1)"
    fi
}

# layers_seen: the layer indices of the live view's panels, one a line, as
# often as they show (twice with --compare: run a's and run b's): the index
# cells sit under each "lyr" title of the header row, down to the chart's
# title. Needs an ASCII screen (LC_ALL=C), so that a column is a byte.
layers_seen() {
    screen | awk '
        !hdr && /lyr/ { hdr = 1; n = 0; s = $0; off = 0
            while ((i = index(s, "lyr")) > 0) { pos[++n] = off + i; off += i + 2; s = substr(s, i + 3) }
            next }
        hdr && /^ loss \[/ { exit }
        hdr { for (k = 1; k <= n; k++) { c = substr($0, pos[k], 4)
                if (c ~ /^[> ] ?[0-9]+[ !]?$/) { gsub(/[^0-9]/, "", c); print c } } }'
}
