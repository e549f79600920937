#!/bin/sh
# valgrind.sh - the real binary under valgrind's memcheck: a short headless
# run with every output (--csv, --jsonl, --save), a resumed one (--load), a
# refused input and a failing output, and the live view driven in tmux by
# --script and key presses (the d and e files included). Each must report
# no invalid read or write, no use of uninitialized values and no block
# definitely or indirectly lost ("ERROR SUMMARY: 0 errors"). ncurses keeps
# memory reachable until exit by design; "still reachable" is not an error.
#
# Usage: NS_BIN=./normscope sh tests/sh/valgrind.sh (make valgrind). Needs
# valgrind (apt-get install valgrind) and, for the live view, tmux.
# Prints "N passed, N failed"; exits non-zero on any failure.
# shellcheck source-path=SCRIPTDIR source=../lib/tmux_lib.sh
. "$(dirname "$0")/../lib/tmux_lib.sh"
tmux_init valgrind.sh vg

if ! command -v valgrind >/dev/null 2>&1; then
    echo "valgrind.sh: valgrind is not installed (apt-get install valgrind)" >&2
    echo "0 passed, 1 failed"
    exit 1
fi
# --errors-for-leak-kinds: a definite or indirect leak is an error, counted in
# ERROR SUMMARY and in the exit status; reachable blocks are not
VG="valgrind --leak-check=full --show-leak-kinds=definite,indirect"
VG="$VG --errors-for-leak-kinds=definite,indirect --error-exitcode=99 --track-origins=yes"
# valgrind runs one thread at a time; its default lock is unfair, and the
# trainer thread, never idle while training, can hold it for minutes while
# the UI thread waits to draw a frame or read q. --fair-sched=yes hands the
# lock round in turn.
VG="$VG --fair-sched=yes"
SMALL="-L 2 -d 16 -H 2 -T 16 -B 4 --val-every 3 --val-batches 1 -q"

# clean NAME WANT_EXIT RC: the log of run NAME says 0 errors, and the
# program exited as it should (99 would be valgrind's own verdict)
clean() {
    log=$T/$1.vg
    if [ "$3" -ne "$2" ]; then no "$1: exit $3, want $2: $(tail -3 "$T/$1.err" 2>/dev/null)"; return; fi
    if grep -q "ERROR SUMMARY: 0 errors" "$log"; then ok; else
        no "$1: valgrind found errors:"
        grep -E "Invalid|uninitialised|definitely lost|indirectly lost|ERROR SUMMARY" "$log" | head -20 >&2
        return
    fi
    grep -E "definitely lost|indirectly lost|still reachable|ERROR SUMMARY|All heap blocks" "$log" |
        sed "s/^==[0-9]*==/  $1:/" >&2
}
# vg NAME WANT_EXIT ARGS...: one headless run under valgrind
vg() {
    name=$1 want=$2
    shift 2
    timeout 600 $VG --log-file="$T/$name.vg" "$BIN" "$@" >"$T/$name.out" 2>"$T/$name.err" </dev/null
    clean "$name" "$want" $?
}

vg headless 0 --headless $SMALL --steps 6 --csv "$T/a.csv" --jsonl "$T/a.jsonl" --save "$T/a.ck"
vg resume 0 --headless -q --load "$T/a.ck" --steps 9 --csv "$T/b.csv"
vg compare 0 --headless $SMALL --steps 3 --compare norm=post --csv "$T/c.csv"
# the worker threads of --threads, where this build has them
if "$BIN" --help 2>/dev/null | grep -q -- --threads; then
    vg threads 0 --headless $SMALL --steps 4 --threads 2 --csv "$T/t.csv"
fi
vg diverged 3 --headless $SMALL --steps 20 --lr 10 --warmup 0 --precision fp16 --loss-scale off
vg baddata 2 --headless $SMALL --steps 3 --data "$T/missing"
vg badsave 1 --headless $SMALL --steps 3 --save "$T/nodir/x.ck"
# a full device; as root a private node, so a regression that renames over
# it cannot replace the system's /dev/full
FULL=/dev/full
if [ "$(id -u)" -eq 0 ]; then
    FULL=$T/full
    mknod "$FULL" c 1 7 2>/dev/null || FULL=
fi
if [ -n "$FULL" ] && [ -c "$FULL" ]; then
    vg fullcsv 1 --headless $SMALL --steps 3 --csv "$FULL"
fi
head -c 100 "$T/a.ck" >"$T/trunc.ck"
vg badload 2 --headless -q --load "$T/trunc.ck" --steps 9

# --- the live view, in a tmux pane, under valgrind ---
if ! command -v tmux >/dev/null 2>&1; then
    no "tmux is not installed: the live view was not checked (apt-get install tmux)"
else
    cat >"$T/script" <<'EOF'
at 2: norm toggle
at 3: precision bf16
at 4: snapshot
at 6: rewind
at 8: note valgrind
EOF
    $TM new-session -d -s vg -x 120 -y 40 -c "$T" \
        "LC_ALL=C.UTF-8 $VG --log-file=$T/live.vg $BIN $SMALL --script $T/script --csv $T/live.csv 2>$T/live.err; echo \$? >$T/live.rc; sleep 600" ||
        no "tmux did not start"
    # wait for the dashboard (valgrind is slow), then press keys
    i=0
    while [ $i -lt 600 ] && ! $TM capture-pane -p -t vg 2>/dev/null | grep -q "step [1-9]"; do
        sleep 0.2
        i=$((i + 1))
    done
    $TM capture-pane -p -t vg | grep -q "step [1-9]" && ok || no "live view under valgrind did not start: $(cat "$T/live.err")"
    for k in p w f Tab m v '?' x space n space; do
        $TM send-keys -t vg "$k"
        sleep 1
    done
    # d and e, each awaited: under valgrind a frame can take seconds, and a
    # second dump key pressed within one frame replaces the first
    wait_file() {
        i=0
        while [ $i -lt 300 ] && ! ls "$T"/$1 >/dev/null 2>&1; do
            sleep 0.2
            i=$((i + 1))
        done
    }
    $TM send-keys -t vg d
    wait_file 'normscope-screen-*.txt'
    $TM send-keys -t vg e
    wait_file 'normscope-metrics-*.csv'
    $TM send-keys -t vg q
    i=0
    while [ $i -lt 600 ] && ! [ -s "$T/live.rc" ]; do
        sleep 0.2
        i=$((i + 1))
    done
    rc=$(cat "$T/live.rc" 2>/dev/null)
    case $rc in '' | *[!0-9]*) rc=255 ;; esac # never exited
    clean live 0 "$rc"
    ls "$T"/normscope-screen-*.txt >/dev/null 2>&1 && ok || no "live: d wrote no screen file"
    ls "$T"/normscope-metrics-*.csv >/dev/null 2>&1 && ok || no "live: e wrote no metrics file"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
