#!/bin/sh
# soak.sh - the live view left running in tmux for SOAK_SECONDS (default
# 1200, 20 minutes; CI runs 120) while random keys and random resizes come
# every 100-500 ms. Fails if:
#   - the process dies, or does not quit cleanly on q at the end;
#   - a sanitizer writes a report (ASan, UBSan, TSan builds: NS_BIN=...);
#   - resident memory grows: every VmRSS sample (read from /proc/PID/status
#     every SOAK_SAMPLE seconds) after the baseline must stay within
#     baseline + max(2048 kB, 5% of baseline). The baseline is the first
#     sample at 60 s (30 s when SOAK_SECONDS < 300), counted, like
#     SOAK_SECONDS, from when the history ring is full (step 4200, at most
#     120 s in; the random keys start then). Each
#     sample is taken at 120x40, 0.3 s after resizing to it: curses' own
#     screens for 250x80 are ~1.7 MB more than for 120x40, which is not a
#     leak. SOAK_RSS=0 turns the check (and the wait for the ring) off:
#     ASan's quarantine and TSan's shadow memory grow by design.
#
# Why memory can stay flat: every history the live view keeps is bounded
# (include/trainer.h, include/engine.h): the chart and heatmap keep the
# newest TRAINER_HIST = 4096 steps in a ring (about 256 KiB of points and
# 2 MiB of per-layer gradient norms a run, allocated once per snapshot copy), the
# event log the newest TRAINER_EVENTS = 128 lines, the command queue
# TRAINER_QUEUE = 64 commands (more are refused), the engine's own event
# ring NS_EVENT_RING = 256, and rewinding --snapshots = 8 copies of the
# weights. The small model used here fills the 4096-step ring well inside
# the first minute, so after it nothing is left to grow.
#
# Keys are drawn from the real key table without q and F10 (quitting ends
# the soak) plus an unbound one and mouse clicks; d and e write their
# files into a temporary directory, emptied as the run goes.
#
# Usage: NS_BIN=./normscope SOAK_SECONDS=120 sh tests/sh/soak.sh
# Prints the RSS samples' summary and "N passed, N failed"; exits non-zero
# on a failure. The tmux server (tmux -L, private) is killed on exit.
# shellcheck source-path=SCRIPTDIR source=../lib/tmux_lib.sh
. "$(dirname "$0")/../lib/tmux_lib.sh"
tmux_init soak.sh soak
SECS=${SOAK_SECONDS:-1200}
SAMPLE=${SOAK_SAMPLE:-5}
CHECK_RSS=${SOAK_RSS:-1}
if [ -n "$SOAK_BASE" ]; then BASE=$SOAK_BASE
elif [ "$SECS" -lt 300 ]; then BASE=30
else BASE=60; fi
watchdog "$((SECS + 180))"
need_tmux_bin
sanitizer_env
# a small model: fast under the sanitizers, and it fills the history ring
# within the first minute (above)
SMALL="-L 2 -d 32 -H 2 -T 32 -B 8 --val-every 20 --val-batches 1 --snapshot-every 20"

W=soak # the session that screen, key and new_session use
# key as tmux_lib.sh has it, but with tmux's own errors hidden
key() { $TM send-keys -t "$W" "$@" 2>/dev/null; }
rss_kb() { sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$1/status" 2>/dev/null; }
now() { date +%s; }
# a linear congruential generator: POSIX sh has no $RANDOM
seed=$(($$ + $(date +%s) % 100000))
rnd() { # rnd N: 0..N-1 in $r
    seed=$(((seed * 1103515245 + 12345) % 2147483648))
    r=$((seed / 65536 % $1))
}

new_session
mkdir "$T/files"
key "cd $T/files && sh -c 'echo \$\$ >$T/pid; LC_ALL=C.UTF-8 $BIN $SMALL 2>$T/err; echo NS_\"\"EXIT=\$?'" Enter
i=0
while [ "$i" -lt 100 ] && [ ! -s "$T/pid" ]; do sleep 0.1; i=$((i + 1)); done
pid=
i=0
while [ "$i" -lt 100 ] && [ -z "$pid" ]; do
    pid=$(pgrep -P "$(cat "$T/pid" 2>/dev/null)" 2>/dev/null | head -1)
    sleep 0.1
    i=$((i + 1))
done
if wait_for RUNNING 60 && alive "$pid"; then ok; else
    no "the live view did not start: $(cat "$T/err" 2>/dev/null)"
    echo "$pass passed, $fail failed"
    exit 1
fi

# the history ring filled first (see above), so what the baseline sees
# is the steady state
if [ "$CHECK_RSS" != 0 ]; then
    i=0
    while [ "$i" -lt 1200 ]; do
        c=$(counter)
        [ -n "$c" ] && [ "$c" -ge 4200 ] && break
        sleep 0.1
        i=$((i + 1))
    done
    echo "soak: the history ring is full (step ${c:-?}) after $((i / 10)) s"
fi

# the key table (src/tui_keys.c) less q and F10, plus x (unbound)
KEYS="p P k w f i l Space n + - = _ c b r Tab BTab m v Up Down PPage NPage Home End y z d e ? h F1 Escape x"
NKEYS=$(echo $KEYS | wc -w)
start=$(now)
next_sample=$start
base=
base_t=
max_after=0
last_rss=
nkeys=0
nresize=0
nclick=0
died=0
w=120
h=40
echo "soak: $BIN for $SECS s; RSS baseline at $BASE s; samples every $SAMPLE s"
while :; do
    t=$(($(now) - start))
    [ "$t" -ge "$SECS" ] && break
    if ! alive "$pid"; then
        died=1
        break
    fi
    if [ "$(now)" -ge "$next_sample" ]; then
        next_sample=$(($(now) + SAMPLE))
        $TM resize-window -t soak -x 120 -y 40 2>/dev/null
        w=120 h=40
        sleep 0.3
        last_rss=$(rss_kb "$pid")
        if [ -n "$last_rss" ]; then
            if [ -z "$base" ] && [ "$t" -ge "$BASE" ]; then
                base=$last_rss
                base_t=$t
            elif [ -n "$base" ] && [ "$last_rss" -gt "$max_after" ]; then
                max_after=$last_rss
            fi
            echo "$t $last_rss" >>"$T/rss"
        fi
        # d and e files: keep the directory small on a long run
        rm -f "$T"/files/normscope-*
        [ $((t % 60)) -lt "$SAMPLE" ] && [ "$t" -ge 60 ] &&
            echo "soak: ${t} s, RSS ${last_rss} kB, $nkeys keys, $nresize resizes, $nclick clicks"
    fi
    rnd 10
    if [ "$r" -lt 3 ]; then
        # a resize: mostly sizes the dashboard fits, some too small, some tiny
        rnd 4
        if [ "$r" -lt 2 ]; then
            rnd 121; w=$((80 + r)); rnd 37; h=$((24 + r))
        else
            rnd 241; w=$((10 + r)); rnd 78; h=$((3 + r))
        fi
        $TM resize-window -t soak -x "$w" -y "$h" 2>/dev/null
        nresize=$((nresize + 1))
    elif [ "$r" -lt 4 ] && [ "$h" -gt 1 ]; then
        # a click (X10 report, 1-based, +32) anywhere but the bottom row,
        # where the footer's F10Quit would end the soak
        rnd "$w"; x=$((r + 33)); rnd $((h - 1)); y=$((r + 33))
        cx=$(printf "\\$(printf %o "$x")")
        cy=$(printf "\\$(printf %o "$y")")
        key -l "$(printf '\033[M ')$cx$cy"
        key -l "$(printf '\033[M#')$cx$cy"
        nclick=$((nclick + 1))
    else
        rnd "$NKEYS"
        k=$(echo $KEYS | cut -d' ' -f$((r + 1)))
        key "$k"
        nkeys=$((nkeys + 1))
    fi
    rnd 401
    sleep "0.$(printf %03d $((100 + r)))" # 100..500 ms
done
t=$(($(now) - start))

if [ "$died" = 1 ]; then
    no "normscope died after $t s ($nkeys keys, $nresize resizes): $(tail -5 "$T/err" 2>/dev/null)"
else
    ok
    last_rss=$(rss_kb "$pid")
    [ -n "$base" ] && [ -n "$last_rss" ] && [ "$last_rss" -gt "$max_after" ] && max_after=$last_rss
    # the end: a usable size, help closed, then q
    $TM resize-window -t soak -x 120 -y 40 2>/dev/null
    key Escape
    sleep 0.5
    key q
    if wait_for 'NS_EXIT=[0-9]' 60; then
        code=$(screen | sed -n 's/.*NS_EXIT=\([0-9]*\).*/\1/p' | tail -1)
        # 3: the random + keys left it diverged, which is a normal state
        case $code in 0 | 3) ok ;; *) no "exit status $code: $(tail -5 "$T/err")" ;; esac
    else
        no "q did not quit at the end: $(screen | tail -3)"
    fi
fi
echo "soak: $t s, $nkeys keys, $nresize resizes, $nclick clicks; $(tail -1 "$T/err" 2>/dev/null)"

if [ -n "$base" ]; then
    margin=$((base / 20))
    [ "$margin" -lt 2048 ] && margin=2048
    echo "soak: RSS ${base} kB at ${base_t} s (baseline), ${last_rss:-?} kB at the end, max after the baseline ${max_after} kB; limit $((base + margin)) kB"
    if [ "$CHECK_RSS" = 0 ]; then
        echo "soak: RSS not checked (SOAK_RSS=0)"
    elif [ "$died" = 0 ]; then
        [ "$max_after" -le $((base + margin)) ] && ok ||
            no "RSS grew from $base kB to $max_after kB (more than $margin kB): $(tr '\n' ' ' <"$T/rss")"
    fi
else
    echo "soak: no RSS baseline (the run was shorter than $BASE s)"
    [ "$CHECK_RSS" = 0 ] || [ "$died" = 1 ] ||
        no "no RSS baseline: SOAK_SECONDS=$SECS is shorter than the baseline time $BASE s"
fi

check_reports "${SOAK_REPORT_LINES:-80}"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
