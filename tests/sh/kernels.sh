#!/bin/sh
# kernels.sh - the same bits on every machine: whole runs under the
# portable kernels (NORMSCOPE_KERNELS=generic) and the AVX2 ones give the
# same CSV, byte for byte (the wall-clock tokens_per_s column aside),
# over the formats, placements, norm kinds, a --compare twin and thread
# counts; and the binary holds no instruction whose result the CPU vendor
# chooses (the rcp/rsqrt estimates). The portable kernels use only
# operations IEEE 754 fixes, so runs equal to theirs are the same on any
# CPU. On a machine without AVX2 the comparisons are reported skipped.
# Usage: NS_BIN=./normscope sh tests/sh/kernels.sh
# Prints "N passed, N failed"; exits non-zero on any failure.
BIN=${NS_BIN:-./normscope}
T=$(mktemp -d /tmp/ns_kernels.XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0
fail=0
skip=0
ok() { pass=$((pass + 1)); }
no() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }

# csv_without_rate IN OUT: IN without its wall-clock rate columns
# (tokens_per_s, and b_tokens_per_s of a --compare twin)
csv_without_rate() {
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) drop[i] = $i ~ /(^|_)tokens_per_s$/ }
        { o = ""; for (i = 1; i <= NF; i++) if (!drop[i]) o = o (o == "" ? "" : ",") $i; print o }' \
        "$1" >"$2"
}

# same NAME ARGS...: the run's CSV is the same under both builds
same() {
    name=$1
    shift
    NORMSCOPE_KERNELS=avx2 "$BIN" --headless "$@" --csv "$T/a.csv" >/dev/null 2>"$T/a.err"
    ra=$?
    NORMSCOPE_KERNELS=generic "$BIN" --headless "$@" --csv "$T/g.csv" >/dev/null 2>"$T/g.err"
    rg=$?
    csv_without_rate "$T/a.csv" "$T/a2.csv"
    csv_without_rate "$T/g.csv" "$T/g2.csv"
    rows=$(wc -l <"$T/a2.csv")
    if [ "$ra" -ne "$rg" ]; then
        no "$name: exit $ra under avx2, $rg under generic"
    elif [ "$rows" -lt 10 ]; then
        no "$name: only $rows CSV rows: $(head -c 300 "$T/a.err")"
    elif cmp -s "$T/a2.csv" "$T/g2.csv"; then
        ok
    else
        no "$name: the builds differ:"
        diff "$T/a2.csv" "$T/g2.csv" | head -3 | cut -c1-240 >&2
    fi
}

# --- the binary: no hardware estimates (their bits differ by vendor) ---
if command -v objdump >/dev/null 2>&1; then
    est=$(objdump -d "$BIN" | grep -c -E '\s(v?rcp|v?rsqrt)(14|28)?[ps][sd]\s')
    if [ "$est" -eq 0 ]; then ok; else no "$est estimate instructions (rcp/rsqrt) in $BIN"; fi
    # the check can fail: a vrcpps assembled here is found
    printf '.text\nvrcpps %%ymm0, %%ymm1\nrsqrtss %%xmm0, %%xmm1\n' >"$T/e.s"
    if cc -c -o "$T/e.o" "$T/e.s" 2>/dev/null; then
        n=$(objdump -d "$T/e.o" | grep -c -E '\s(v?rcp|v?rsqrt)(14|28)?[ps][sd]\s')
        if [ "$n" -eq 2 ]; then ok; else no "the estimate check misses planted ones ($n of 2)"; fi
    fi
else
    skip=$((skip + 2))
    echo "skipped: no objdump" >&2
fi

# --- a bad NORMSCOPE_KERNELS is refused with one line ---
NORMSCOPE_KERNELS=sse9 "$BIN" --headless --steps 1 >"$T/o" 2>"$T/e"
r=$?
if [ "$r" -eq 2 ] && [ "$(wc -l <"$T/e")" -eq 1 ] && grep -q 'NORMSCOPE_KERNELS=sse9' "$T/e"; then ok; else
    no "NORMSCOPE_KERNELS=sse9: exit $r, $(cat "$T/e")"
fi

# --- whole runs, both builds ---
if ! NORMSCOPE_KERNELS=avx2 "$BIN" --headless --steps 1 -L 1 -d 16 -H 1 -T 8 -B 1 >/dev/null 2>&1; then
    skip=$((skip + 1))
    echo "skipped: this CPU has no AVX2 build to compare with" >&2
    echo "$pass passed, $fail failed, $skip skipped"
    [ "$fail" -eq 0 ]
    exit
fi
S="-L 3 -d 32 -H 2 -T 32 -B 4 --steps 40 --warmup 10 --val-every 20 --val-batches 1"
for p in fp32 bf16 fp16; do
    for n in post pre sandwich res-post; do
        for k in layernorm rmsnorm; do
            # fp16 with the norms in fp16 too: the format's overflow paths
            same "$p $n $k" $S --precision $p --norm $n --norm-kind $k --fp32-norms off --threads 1
        done
    done
done
same "dyt, deepnorm" $S --norm deepnorm --norm-kind dyt --threads 1
same "--compare twin, 2 threads" $S --compare norm=post --threads 2
same "2 threads, row blocks" -L 2 -d 32 -H 2 -T 64 -B 16 --steps 12 --threads 2
same "fp16 diverging, first non-finite named" -L 4 -d 32 -T 16 -B 4 --precision fp16 \
    --norm none --lr 3e-2 --warmup 0 --steps 400 --threads 2
same "default model" --steps 10 --val-every 5 --val-batches 1 --threads 2

echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
