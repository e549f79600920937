#!/bin/sh
# schemes.sh - what each norm placement and each precision costs: steps/s
# of --headless on the default model, as a ratio to Pre-LN (placements) and
# to fp32 (precisions), all measured in this run, one thread (the cost of
# the work itself; two threads on a shared machine add their own noise).
# Each run of a setting is paired with a run of the reference just before
# it, and the median of the REPS pairs' ratios is the figure, so a drift
# in the machine's speed hits both sides of a pair.
# The targets: no placement costs more
# than 15% over Pre-LN, except Sandwich-LN (two more norms per block) at
# most 30%; bf16 and fp16 emulation at most 2x the fp32 step time. A miss
# is printed as such; the script exits non-zero when a target is missed.
# Usage: sh tests/bench/schemes.sh ./normscope
BIN=${1:-./normscope}
REPS=${REPS:-5}
STEPS=${STEPS:-60}

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
one() { # args...: tokens/s of one run
    "$BIN" --headless --threads 1 --val-every 0 --steps "$STEPS" "$@" 2>&1 >/dev/null |
        sed -n 's/.* in [0-9.]* s ([0-9.]* steps\/s, \([0-9.]*\) tokens\/s.*/\1/p'
}
# pairs "REF ARGS" ARGS...: sets R (median tokens/s of ARGS) and REL
# (median of the pairs' step-time ratios, ARGS over REF)
pairs() {
    ref=$1
    shift
    : >"$TMP.r"
    : >"$TMP.x"
    for i in $(seq "$REPS"); do
        b=$(one $ref)
        r=$(one "$@")
        echo "$r" >>"$TMP.r"
        awk -v b="$b" -v r="$r" 'BEGIN { if (r > 0) printf "%.4f\n", b / r }' >>"$TMP.x"
    done
    R=$(median <"$TMP.r")
    REL=$(median <"$TMP.x" | awk '{ printf "%.2f", $1 }')
}
TMP=${TMPDIR:-/tmp}/ns_schemes.$$
trap 'rm -f "$TMP.r" "$TMP.x"' EXIT

miss=0
printf '%-22s %12s %12s %8s\n' "default model" "tokens/s" "step time" "target"
for p in pre post sandwich deepnorm rezero none mix; do
    pairs "--norm pre" --norm $p
    limit=1.15
    [ $p = sandwich ] && limit=1.30
    verdict=$(awk -v x="$REL" -v l="$limit" 'BEGIN { print (x <= l) ? "ok" : "MISSED" }')
    [ "$verdict" = ok ] || miss=1
    printf '%-22s %12s %10sx %8s\n' "--norm $p" "$R" "$REL" "<= ${limit}x $verdict"
done
for f in fp32 bf16 fp16; do
    pairs "--precision fp32" --precision $f
    verdict=$(awk -v x="$REL" 'BEGIN { print (x <= 2) ? "ok" : "MISSED" }')
    [ "$verdict" = ok ] || miss=1
    printf '%-22s %12s %10sx %8s\n' "--precision $f" "$R" "$REL" "<= 2x $verdict"
done
echo "(step time relative to Pre-LN, and to fp32; one thread; medians of $REPS pairs of $STEPS-step runs)"
exit $miss
