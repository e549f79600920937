#!/bin/sh
# diag_grid.sh - the wrong-advice search: does the diagnosis' advice help?
#
# Runs a grid (LR x placement x precision x depth) twice per cell, from the
# same seed on the same batches: once with the diagnosis' fixes applied
# (--on-diverge fix --on-stall fix) and once left alone (continue), and
# compares their final validation loss at the same last step. A cell where
# a fix was applied is "helped" when the fixed run ends more than TOL nats
# below the run left alone, "hurt" when more than TOL above, else "did
# nothing"; a non-finite validation loss counts as worse than any finite
# one. Cells where no fix was applied are counted apart.
#
# Not part of `make test`: it is long (`make diag-grid`). Its table is the
# one in normscope(1), DIAGNOSIS.
#
# usage: sh tests/bench/diag_grid.sh [BIN]   (env: DIAG_GRID_OUT dir,
#        DIAG_GRID_JOBS parallel runs (2), DIAG_GRID_STEPS (600), TOL (0.05),
#        DIAG_GRID_LRS, _NORMS, _PRECS, _DEPTHS: the axes' values)
set -u
# one run (the script calls itself through xargs -P): --run OUT BIN NAME MODE ARGS...
if [ "${1:-}" = --run ]; then
    out=$2 bin=$3 name=$4 mode=$5; shift 5
    log="$out/$name.$mode.log"
    [ -s "$log.done" ] && exit 0
    "$bin" --headless "$@" > "$log" 2>&1
    echo $? > "$log.done"
    exit 0
fi
BIN=${1:-./normscope}
OUT=${DIAG_GRID_OUT:-diag-grid-out}
JOBS=${DIAG_GRID_JOBS:-2}
STEPS=${DIAG_GRID_STEPS:-600}
TOL=${TOL:-0.05}
LRS=${DIAG_GRID_LRS:-"1e-3 1e-2 3e-2 0.1 0.3"}
NORMS=${DIAG_GRID_NORMS:-"post pre none"}
PRECS=${DIAG_GRID_PRECS:-"fp32 bf16 fp16"}
DEPTHS=${DIAG_GRID_DEPTHS:-"2 6"}
# small: d 32, 2 heads, context 32, batch 8, no warmup (the failures are
# the search's point; warmup is one of the fixes)
SHAPE="-d 32 -H 2 -T 32 -B 8 --warmup 0 --val-every 100 --threads 1 --seed 1337"

started=$(date +%s)
[ -x "$BIN" ] || { echo "diag_grid: no binary $BIN (make first)" >&2; exit 2; }
mkdir -p "$OUT" || exit 2

# one line per run: "NAME MODE ARGS..."
: > "$OUT/runs.txt"
for lr in $LRS; do for n in $NORMS; do for p in $PRECS; do for L in $DEPTHS; do
    name="lr=$lr,norm=$n,prec=$p,L=$L"
    args="-L $L --lr $lr --norm $n --precision $p --steps $STEPS $SHAPE"
    echo "$name fix --on-diverge fix --on-stall fix $args" >> "$OUT/runs.txt"
    echo "$name alone --on-diverge continue --on-stall continue $args" >> "$OUT/runs.txt"
done; done; done; done
sed "s|^|--run $OUT $BIN |" "$OUT/runs.txt" | xargs -P "$JOBS" -L 1 sh "$0"

secs=$(( $(date +%s) - started ))

# the final validation loss of a run's summary line ("loss X, val Y;"),
# "-" when none was taken since the last re-init (a fixed run stopped early)
final_val() {
    v=$(grep -o 'steps/s, [0-9]* tokens/s); loss [^,]*, val [^;]*' "$1" | tail -1 | sed 's/.*val //')
    [ -n "$v" ] && echo "$v" || echo -
}
# its final training loss ("loss X")
final_loss() {
    v=$(grep -o 'steps/s, [0-9]* tokens/s); loss [^,]*' "$1" | tail -1 | sed 's/.*loss //')
    [ -n "$v" ] && echo "$v" || echo -
}
# is it a finite number?
finite() { echo "$1" | grep -Eq '^-?[0-9.]+(e[-+]?[0-9]+)?$'; }

: > "$OUT/table.txt"
for name in $(cut -d' ' -f1 "$OUT/runs.txt" | sort -u); do
    fix="$OUT/$name.fix.log" alone="$OUT/$name.alone.log"
    # "fix 1 of 3 (--on-stall fix): went back to step 0, then lr x0.1 (cause: stall at ...)"
    # -> "stall: lr x0.1"
    applied=$(grep 'fix [0-9] of [0-9] (' "$fix" | head -1 |
        sed -n 's/.*, then \(.*\) (cause: \([a-z-]*\) .*/\2: \1/p')
    fv=$(final_val "$fix") av=$(final_val "$alone") by=val
    # a fixed run stopped before a validation (the fix did not help: exit 3)
    # is compared by the final training loss, both runs'
    if ! finite "$fv" && [ "$fv" = - ]; then
        fv=$(final_loss "$fix") av=$(final_loss "$alone") by=train
    fi
    said=$(grep -o 'the fix helped\|did not help' "$fix" | head -1)
    if [ -z "$applied" ]; then
        out=nofix
    else
        out=$(awk -v f="$fv" -v a="$av" -v t="$TOL" 'BEGIN {
            ff = (f ~ /^-?[0-9.]+(e[-+]?[0-9]+)?$/) ? f + 0 : 1e30
            aa = (a ~ /^-?[0-9.]+(e[-+]?[0-9]+)?$/) ? a + 0 : 1e30
            if (ff < aa - t) print "helped"; else if (ff > aa + t) print "hurt"; else print "nothing" }')
        # stopped before a validation: counted apart, with how its loss compares
        [ "$by" = train ] && out="stopped-$out"
    fi
    printf '%s %s %s fixed=%s alone=%s fix="%s" said="%s" rc=%s/%s\n' "$out" "$name" "$by" "$fv" "$av" \
        "$applied" "$said" "$(cat "$fix.done")" "$(cat "$alone.done")" >> "$OUT/table.txt"
done

cells=$(wc -l < "$OUT/table.txt")
count() { grep -c "^$1 " "$OUT/table.txt"; }
echo "diag_grid: $cells cells ($LRS) x ($NORMS) x ($PRECS) x L ($DEPTHS), $STEPS steps, d 32," \
     "seed 1337, warmup 0; $((cells * 2)) runs in ${secs} s"
echo "  fix applied: $((cells - $(count nofix))) cells: helped $(count helped)," \
     "did nothing $(count nothing), hurt $(count hurt) (final val, tolerance $TOL nats)"
echo "  fix applied, then the run stopped before a validation (compared by the final" \
     "training loss): $(grep -c '^stopped' "$OUT/table.txt") cells: lower $(count stopped-helped)," \
     "the same $(count stopped-nothing), higher $(count stopped-hurt)"
echo "  fixed runs stopped (exit 3: the fix did not help, none left):" \
     "$(grep -v '^nofix' "$OUT/table.txt" | grep -c 'rc=3/')"
echo "  no fix applied: $(count nofix) cells"
echo "  by the first fix applied (helped/nothing/hurt/stopped):"
grep -v '^nofix' "$OUT/table.txt" | sed 's/.*fix="\([^"]*\)".*/\1/' | \
    sort | uniq | while read -r f; do
    h=$(grep -v '^nofix' "$OUT/table.txt" | grep -F "fix=\"$f\"" | grep -c '^helped')
    z=$(grep -v '^nofix' "$OUT/table.txt" | grep -F "fix=\"$f\"" | grep -c '^nothing')
    u=$(grep -v '^nofix' "$OUT/table.txt" | grep -F "fix=\"$f\"" | grep -c '^hurt')
    s=$(grep -v '^nofix' "$OUT/table.txt" | grep -F "fix=\"$f\"" | grep -c '^stopped')
    echo "    $f: $h/$z/$u/$s"
done
if grep -q '^hurt\|^stopped\|^nothing' "$OUT/table.txt"; then
    echo "  hurt, stopped, did nothing:"
    grep '^hurt\|^stopped\|^nothing' "$OUT/table.txt" | sed 's/^/    /'
fi
