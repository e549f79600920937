#!/bin/sh
# scaling.sh - how speed and memory grow with the model: steps/s, tokens/s
# and model GFLOP/s (tests/bench/flops.sh), and the peak resident memory
# measured against the man page's MEMORY formula (the "estimated" figure of
# normscope's summary line), for -L 6, 12, 24, 48 x -d 64, 128, 256, 512
# at the default -T 64 -B 16 -H 4. Usage:
#     sh tests/bench/scaling.sh ./normscope        (make bench does this)
#
# The subset: every L at d = 64, 128 and 256, and L = 6 and 12 at d = 512.
# L = 24 and 48 at d = 512 are 476 and 951 model GFLOP a step (24 and 48 s
# at the 20 GFLOP/s one busy core gave) and about 2.9 and 4.0 GiB of
# memory, so the default table leaves them out (it ran in 3 minutes on a
# busy 2-core machine); SCALE_ALL=1 runs the whole grid.
#
# Each configuration is one headless run of STEPS steps (default 3), one
# thread (SCALE_THREADS), no validation. The speed is over the steps after
# the first, which pays for touching fresh memory (the per-step
# tokens_per_s of the CSV); the memory is the run's peak resident set size
# (tests/bench/peak.sh: /usr/bin/time -v, from Debian's time package, or
# the summary line's own getrusage figure without it). "ratio" is measured
# over estimated; the formula promises it within 10%, and the script exits
# non-zero past that (tests/sh/memory.sh checks four small models in make
# test).
BIN=${1:-./normscope}
STEPS=${STEPS:-3}
THREADS=${SCALE_THREADS:-1}
T=64
B=16
DIR=$(dirname "$0")
TMP=$(mktemp -d /tmp/ns_scaling.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
trap 'exit 130' INT TERM
. "$DIR/flops.sh"
. "$DIR/peak.sh"

run() { # L d: one run; sets RATE (steps/s), EST and RSS (MiB)
    peak_run "$TMP" "$BIN" --threads "$THREADS" --val-every 0 --steps "$STEPS" -L "$1" -d "$2" \
        -T "$T" -B "$B" --csv "$TMP/csv"
    RATE=$(awk -F, -v k=$((B * T)) 'NR > 2 && $6 > 0 {t += k / $6; n++}
        END {if (n) printf "%.3f", n / t}' "$TMP/csv")
}

echo "scaling: -T $T -B $B -H 4, $STEPS steps a run, $THREADS thread(s);" \
    "peak memory from $(peak_source)"
[ -n "$SCALE_ALL" ] || echo "subset: every L at d = 64, 128, 256; L = 6, 12 at d = 512" \
    "(L = 24, 48 there: 476, 951 GFLOP a step, 2.9, 4.0 GiB; SCALE_ALL=1 runs all 16)"
printf '%4s %4s %10s %10s %8s %9s %8s %9s %9s %6s\n' L d params "GFLOP/st" "st/s" \
    "tokens/s" "GFLOP/s" "est MiB" "RSS MiB" ratio
worst=0
for d in 64 128 256 512; do
    for L in 6 12 24 48; do
        if [ -z "$SCALE_ALL" ] && [ "$d" -eq 512 ] && [ "$L" -gt 12 ]; then
            continue
        fi
        run "$L" "$d"
        if [ -z "$RATE" ] || [ -z "$EST" ] || [ -z "$RSS" ]; then
            printf '%4s %4s  run failed: %s\n' "$L" "$d" "$(tail -1 "$TMP/err")"
            worst=100
            continue
        fi
        g=$(gflop "$L" "$d" "$T" "$B")
        awk -v L="$L" -v d="$d" -v p="$(params "$L" "$d" "$T")" -v g="$g" -v r="$RATE" -v k=$((B * T)) \
            -v e="$EST" -v m="$RSS" 'BEGIN {
            printf "%4d %4d %9.2fM %10.2f %8.3f %9.0f %8.1f %9.1f %9.1f %6.3f\n",
                L, d, p / 1e6, g, r, r * k, r * g, e, m, m / e }'
        worst=$(awk -v w="$worst" -v e="$EST" -v m="$RSS" \
            'BEGIN {x = 100 * (m / e - 1); if (x < 0) x = -x; print (x > w ? x : w)}')
    done
done
awk -v w="$worst" 'BEGIN {printf "largest deviation of the measured peak from the estimate: %.1f%% (promised: 10%%)\n", w}'
awk -v w="$worst" 'BEGIN {exit !(w <= 10)}'
