#!/bin/sh
# schemes.sh - what each norm placement and each precision costs: steps/s
# of --headless on the default model, as a ratio to Pre-LN (placements) and
# to fp32 (precisions), all measured in this run. Medians of REPS runs.
# The targets (issues [norms] and [precision]): no placement costs more
# than 15% over Pre-LN, except Sandwich-LN (two more norms per block) at
# most 30%; bf16 and fp16 emulation at most 2x the fp32 step time. A miss
# is printed as such; the script exits non-zero when a target is missed.
# Usage: sh tests/bench/schemes.sh ./normscope
BIN=${1:-./normscope}
REPS=${REPS:-3}
STEPS=${STEPS:-60}

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
rate() {
    for i in $(seq "$REPS"); do
        "$BIN" --headless --val-every 0 --steps "$STEPS" "$@" 2>&1 >/dev/null |
            sed -n 's/.* in [0-9.]* s ([0-9.]* steps\/s, \([0-9.]*\) tokens\/s.*/\1/p'
    done | median
}

miss=0
printf '%-22s %12s %12s %8s\n' "default model" "tokens/s" "step time" "target"
base=$(rate --norm pre)
for p in pre post sandwich deepnorm rezero none mix; do
    r=$(rate --norm $p)
    limit=1.15
    [ $p = sandwich ] && limit=1.30
    rel=$(awk -v b="$base" -v r="$r" 'BEGIN { printf "%.2f", b / r }')
    verdict=$(awk -v x="$rel" -v l="$limit" 'BEGIN { print (x <= l) ? "ok" : "MISSED" }')
    [ "$verdict" = ok ] || miss=1
    printf '%-22s %12s %10sx %8s\n' "--norm $p" "$r" "$rel" "<= ${limit}x $verdict"
done
base=$(rate --precision fp32)
for f in fp32 bf16 fp16; do
    r=$(rate --precision $f)
    rel=$(awk -v b="$base" -v r="$r" 'BEGIN { printf "%.2f", b / r }')
    verdict=$(awk -v x="$rel" 'BEGIN { print (x <= 2) ? "ok" : "MISSED" }')
    [ "$verdict" = ok ] || miss=1
    printf '%-22s %12s %10sx %8s\n' "--precision $f" "$r" "$rel" "<= 2x $verdict"
done
echo "(step time relative to Pre-LN, and to fp32; medians of $REPS runs of $STEPS steps)"
exit $miss
