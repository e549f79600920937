#!/bin/sh
# ui_overhead.sh - the live view's training speed against --headless on
# the same settings: the dashboard must keep >= 95% of headless steps/s.
# Usage: sh tests/bench/ui_overhead.sh ./normscope
#
# Both figures are normscope's own summary line ("N steps in S s (R
# steps/s"): headless times its training loop; the live view times the
# trainer thread while it trains (pauses excluded), with the dashboard
# drawing at its normal rate in a detached tmux pane of 120x40. The live
# run has --steps N, so it pauses (DONE) there; then q quits and prints
# the line. Runs alternate (headless, live, headless, ...) and each live
# run is set against the mean of its two neighbours, so drift in the
# machine's speed hits both sides; the median of UI_REPS (default 5) such
# ratios is the figure.
# Exits non-zero when the ratio is below 95%.
BIN=${1:-./normscope}
case $BIN in /*) ;; *) BIN=$(pwd)/$BIN ;; esac
REPS=${UI_REPS:-5}
T=$(mktemp -d /tmp/ns_uio.XXXXXX)
SOCK=ns_uio_$$
TM="tmux -L $SOCK -f /dev/null"
trap '$TM kill-server 2>/dev/null; rm -rf "$T"' EXIT
if ! command -v tmux >/dev/null 2>&1; then
    echo "ui overhead: skipped (tmux is not installed)"
    exit 0
fi

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
rate() { sed -n 's/.* in [0-9.]* s (\([0-9.]*\) steps\/s.*/\1/p' "$1" | tail -1; }

headless() { # args...: steps/s of one run
    "$BIN" --headless "$@" 2>"$T/h.err" >/dev/null
    rate "$T/h.err"
}

live() { # args...: steps/s of one run, or nothing on a failure
    rm -f "$T/l.err"
    $TM kill-server 2>/dev/null
    $TM new-session -d -s b -x 120 -y 40 "$BIN $* 2>$T/l.err; sleep 30" || return
    i=0
    while [ $i -lt 1200 ]; do # 120 s at most
        $TM capture-pane -p -t b 2>/dev/null | grep -q 'DONE' && break
        sleep 0.1
        i=$((i + 1))
    done
    $TM send-keys -t b q
    i=0
    while [ $i -lt 100 ] && ! grep -q 'steps/s' "$T/l.err" 2>/dev/null; do
        sleep 0.1
        i=$((i + 1))
    done
    $TM kill-server 2>/dev/null
    rate "$T/l.err"
}

status=0
compare() { # label, then normscope args
    label=$1
    shift
    : >"$T/hs"
    : >"$T/ls"
    : >"$T/rs"
    # h l h l ... h: each live run is compared with the mean of the
    # headless runs just before and after it, so a machine whose speed
    # drifts (a shared VM) biases neither side
    prev=$(headless "$@")
    echo "$prev" >>"$T/hs"
    for i in $(seq "$REPS"); do
        l=$(live "$@")
        next=$(headless "$@")
        echo "$next" >>"$T/hs"
        [ -n "$l" ] && echo "$l" >>"$T/ls"
        if [ -n "$l" ] && [ -n "$prev" ] && [ -n "$next" ]; then
            awk -v l="$l" -v a="$prev" -v b="$next" 'BEGIN {printf "%.1f\n", 200 * l / (a + b)}' >>"$T/rs"
        fi
        prev=$next
    done
    h=$(median <"$T/hs")
    l=$(median <"$T/ls")
    if [ "$(wc -l <"$T/rs")" -ne "$REPS" ]; then
        echo "$label: a run failed (headless: $(tr '\n' ' ' <"$T/hs"); live: $(tr '\n' ' ' <"$T/ls"))"
        status=1
        return
    fi
    ratio=$(median <"$T/rs")
    verdict=$(awk -v r="$ratio" 'BEGIN {print (r >= 95) ? "ok" : "BELOW 95%"}')
    printf '%-34s %10s %10s %8s%%  %s  (pairs: %s)\n' "$label" "$h" "$l" "$ratio" "$verdict" \
        "$(sort -g "$T/rs" | tr '\n' ' ' | sed 's/ $//')"
    [ "$verdict" = ok ] || status=1
}

echo
echo "live view against --headless (steps/s medians; ratio: median of $REPS live runs, each against its neighbours)"
printf '%-34s %10s %10s %9s\n' configuration headless live ratio
compare "default L=6 d=64 H=4 T=64 B=16" --val-every 0 --steps 150
compare "small L=2 d=32 H=2 T=32 B=8" -L 2 -d 32 -H 2 -T 32 -B 8 --val-every 0 --steps 6000
exit $status
