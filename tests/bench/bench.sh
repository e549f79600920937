#!/bin/sh
# bench.sh - normscope's training speed, and PyTorch's on the same model in
# the same run, as a ratio, and both as model GFLOP/s against one core's
# sgemm peak measured in the same run. Usage:
#     sh tests/bench/bench.sh ./normscope        (make bench does this)
#
# Each configuration runs REPS times (default 5); the median steps/s is
# reported. normscope's runs with 1 and 2 threads alternate, and the
# two-thread speedup is the median of those pairs' ratios. Both sides time their training steps after 3 untimed warm-up
# steps (normscope: from the per-step tokens_per_s of its CSV; the peer,
# tests/bench/torch_peer.py: its own timer), each configuration with 1
# and with 2 threads (column "thr": normscope's --threads, the peer's
# torch.set_num_threads and BLAS threads). The peer runs when a python3
# with torch is found (Debian: python3-torch, plus libopenblas0-pthread so
# torch does not use the slow reference BLAS).
#
# Model FLOPs per step as tests/bench/flops.sh counts them (6 x parameters
# x tokens + PaLM's attention term). GFLOP/s = that x steps/s; "% peak"
# divides by the peak below times the thread count (one core's peak per
# thread).
#
# Peak: tests/bench/sgemm.c times normscope's own matmul kernel on a
# 1024 x 1024 x 1024 product (one thread, best of several; CPU time of the
# thread, so another process on the machine does not lower it), built
# against the library of this build (NS_LIB, default build/libnormscope.a).
# With torch present, OpenBLAS's sgemm on the same product is shown too.
#
# Where the step's time goes (default model, one thread, fp32; shares of
# perf samples over 100 steps), before / after the fused kernels of
# src/ops.c (LayerNorm, GELU and the residual take their output's max |x|
# as they write it, gradient buffers are set instead of zeroed and then
# accumulated, the inf/NaN watch rides in the kernels that read or write
# the values anyway):
#     matmul 63.2 / 66.1 %        attention, its small gemms too 12.7 / 13.1
#     GELU fwd + bwd 7.8 / 8.9    LayerNorm fwd + bwd 2.5 / 3.0
#     max |x|, sums of squares 2.5 / 1.3    inf/NaN watch 2.1 / 1.2
#     zeroing 2.9 / 1.0           residual add 1.3 / 1.3
#     softmax + loss 1.9 / 1.5    AdamW 1.1 / 1.0    other 1.9 / 1.7
# Instructions a step (callgrind): 381M / 357M, the part outside the
# matmuls 33% / 29% (zeroing 6.9 / 2.2 %, max |x| 1.2 / 0.8 %, inf/NaN
# watch 1.0 / 0.5 %). The step's CPU time fell by about 2.5%: what is
# left is the matmuls, the attention and GELU's arithmetic, not passes
# over memory.
BIN=${1:-./normscope}
REPS=${REPS:-5}
DIR=$(dirname "$0")
LIB=${NS_LIB:-build/libnormscope.a}
CC=${CC:-cc}
TMP=${TMPDIR:-/tmp}/ns_bench.$$
trap 'rm -rf "$TMP"' EXIT
trap 'exit 130' INT TERM # an interrupt ends the run; the EXIT trap cleans up
mkdir -p "$TMP"

median() { sort -g | awk '{a[NR]=$1} END {if (NR == 0) print "-"; else print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

PY=
for p in /usr/bin/python3 python3; do
    if "$p" -c 'import torch' >/dev/null 2>&1; then PY=$p; break; fi
done

# ---- the peak ----
PEAK=
if [ -f "$LIB" ] && $CC -O2 -std=c11 -D_POSIX_C_SOURCE=200809L -I"$DIR/../../include" -I"$DIR/../../src/internal" \
    -o "$TMP/sgemm" "$DIR/sgemm.c" "$LIB" -lm -lpthread 2>"$TMP/cc.err"; then
    line=$("$TMP/sgemm" -n 1024)
    PEAK=$(echo "$line" | sed -n 's/.*gflops=\([0-9.]*\).*/\1/p')
    ISA=$(echo "$line" | sed -n 's/.*isa=\([^ ]*\).*/\1/p')
    echo "sgemm peak (normscope kernel, $ISA, n=1024, 1 thread): $PEAK GFLOP/s"
else
    echo "(sgemm peak skipped: could not build tests/bench/sgemm.c against $LIB)"
    cat "$TMP/cc.err" 2>/dev/null
fi
if [ -n "$PY" ]; then
    tline=$(OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "$PY" -c '
import time, torch
torch.set_num_threads(1)
a = torch.randn(1024, 1024); b = torch.randn(1024, 1024)
for _ in range(3): a @ b
best = 0
for _ in range(10):
    t = time.perf_counter(); a @ b; t = time.perf_counter() - t
    best = max(best, 2 * 1024**3 / t / 1e9)
print("%.1f" % best)' 2>/dev/null)
    if [ -n "$tline" ]; then
        echo "sgemm of torch (its BLAS, n=1024, 1 thread): $tline GFLOP/s"
        # "% peak" is against the faster of the two: the machine's peak as
        # best known, not our own kernel's
        PEAK=$(awk -v a="${PEAK:-0}" -v b="$tline" 'BEGIN { print (b > a ? b : a) }')
    fi
fi
[ -n "$PEAK" ] && echo "peak used for % peak: $PEAK GFLOP/s a thread"
echo

WARM=3 # untimed warm-up steps on both sides (the peer's default)

ns_once() { # tokens-per-step steps args...: steps/s of one normscope run
    # over its steps after the first WARM (the first pays for touching fresh
    # memory), from the per-step tokens_per_s of its CSV (column 6)
    k=$1 steps=$2
    shift 2
    "$BIN" --headless -q --val-every 0 --steps $((steps + WARM)) --csv - "$@" 2>/dev/null |
        awk -F, -v k="$k" -v w="$WARM" 'NR > 1 && $1 > w && $6 > 0 {t += k / $6; n++}
            END {if (n) printf "%.3f\n", n / t}'
}

torch_rate() { # threads args...
    thr=$1
    shift
    for i in $(seq "$REPS"); do
        "$PY" "$DIR/torch_peer.py" --threads "$thr" --warmup-steps "$WARM" "$@" |
            sed -n 's/.*steps_per_s=\([0-9.]*\).*/\1/p'
    done | median
}

# params and gflop: the model's size and FLOPs per step
. "$DIR/flops.sh"

# "% bound": the step's own bound, measured in this run for each shape:
# every matmul of the step (forward and backward of each linear and the
# head, the attention's products as full squares) timed alone with the
# same kernel at its best on that shape (sgemm --step), summed; the share
# is that time over the step's (per thread: two threads halve the bound).
# What the bound leaves out (norms, GELU, softmax, AdamW, the statistics)
# is what keeps a step under 100%.
bound_ms() { # L d H T B: the step's bound in ms, or empty
    [ -x "$TMP/sgemm" ] && "$TMP/sgemm" --step "$@" | sed -n 's/.*bound_ms=\([0-9.]*\).*/\1/p'
}
printf '%-40s %4s %9s %9s %7s %8s %7s %7s\n' configuration thr "st/s" "torch" ratio "GFLOP/s" "% peak" "% bound"
row() { # threads rate L d H T B steps [normscope extra args]: one row of the table
    thr=$1 r=$2 L=$3 d=$4 H=$5 T=$6 B=$7 steps=$8
    shift 8
    t=- ratio=-
    if [ -n "$PY" ] && [ $# -eq 0 ]; then
        t=$(torch_rate "$thr" --steps "$steps" -L "$L" -d "$d" -H "$H" -T "$T" -B "$B" |
            awk '{printf "%.3f", $1}')
        ratio=$(awk -v a="$r" -v b="$t" 'BEGIN {if (b > 0) printf "%.2fx", a / b; else print "-"}')
    fi
    g=$(awk -v r="$r" -v f="$(gflop "$L" "$d" "$T" "$B")" 'BEGIN {printf "%.1f", r * f}')
    pk=$(awk -v g="$g" -v p="$PEAK" -v n="$thr" 'BEGIN {if (p > 0) printf "%.0f%%", 100 * g / (p * n); else print "-"}')
    bd=$(awk -v r="$r" -v b="${BOUND:-0}" -v n="$thr" 'BEGIN {if (b > 0 && r > 0) printf "%.0f%%", 100 * r * b / 1000 / n; else print "-"}')
    label="L=$L d=$d H=$H T=$T B=$B${*:+ $*}"
    printf '%-40s %4s %9s %9s %7s %8s %7s %7s\n' "$label" "$thr" "$r" "$t" "$ratio" "$g" "$pk" "$bd"
}

# each configuration with 1 thread, then 2, in REPS alternating pairs (a
# drift in the machine's speed hits both of a pair): the rows show the
# median steps/s of each, the line under them the median of the pairs'
# ratios. Sets ONE (the one-thread median).
both() { # L d H T B steps [normscope extra args]
    L=$1 d=$2 H=$3 T=$4 B=$5 steps=$6
    shift 6
    BOUND=
    [ $# -eq 0 ] && BOUND=$(bound_ms "$L" "$d" "$H" "$T" "$B") # fp32 only: the kernels are fp32
    : >"$TMP/one"
    : >"$TMP/two"
    : >"$TMP/pair"
    for i in $(seq "$REPS"); do
        a=$(ns_once $((B * T)) "$steps" --threads 1 -L "$L" -d "$d" -H "$H" -T "$T" -B "$B" "$@")
        b=$(ns_once $((B * T)) "$steps" --threads 2 -L "$L" -d "$d" -H "$H" -T "$T" -B "$B" "$@")
        echo "$a" >>"$TMP/one"
        echo "$b" >>"$TMP/two"
        awk -v a="$a" -v b="$b" 'BEGIN {if (a > 0) printf "%.4f\n", b / a}' >>"$TMP/pair"
    done
    ONE=$(median <"$TMP/one")
    row 1 "$ONE" "$L" "$d" "$H" "$T" "$B" "$steps" "$@"
    row 2 "$(median <"$TMP/two")" "$L" "$d" "$H" "$T" "$B" "$steps" "$@"
    awk -v x="$(median <"$TMP/pair")" -v p="$(sort -g "$TMP/pair" | tr '\n' ' ')" \
        'BEGIN {printf "%40s 2 threads: %.2fx 1 thread (median of the pairs: %s)\n", "", x, p}'
}

both 6 64 4 64 16 40
fp32=$ONE
both 12 128 4 64 16 12
both 12 256 4 128 8 6
both 6 64 4 64 16 40 --precision bf16
bf16=$ONE
both 6 64 4 64 16 40 --precision fp16
fp16=$ONE
awk -v a="$fp32" -v b="$bf16" -v c="$fp16" 'BEGIN {if (b > 0 && c > 0)
    printf "step time of the emulated formats (default model): bf16 %.2fx fp32, fp16 %.2fx fp32\n", a / b, a / c}'
[ -n "$PY" ] || echo "(PyTorch peer skipped: no python3 with torch; apt-get install python3-torch libopenblas0-pthread)"
echo "machine: $(nproc) cores, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1); medians of $REPS runs"

# ---- a lesson's two runs: wall seconds of `--lesson warmup --headless`
# with 1 and with 2 threads, in REPS alternating pairs; with more than one
# thread the two runs step side by side (man page, --threads)
lesson_s() { # threads: wall seconds of one run of the lesson
    s=$(date +%s.%N)
    "$BIN" --headless -q --lesson warmup --threads "$1" >/dev/null 2>&1
    awk -v s="$s" -v e="$(date +%s.%N)" 'BEGIN {printf "%.3f\n", e - s}'
}
: >"$TMP/l1"
: >"$TMP/l2"
: >"$TMP/lp"
for i in $(seq "$REPS"); do
    a=$(lesson_s 1)
    b=$(lesson_s 2)
    echo "$a" >>"$TMP/l1"
    echo "$b" >>"$TMP/l2"
    awk -v a="$a" -v b="$b" 'BEGIN {if (a > 0) printf "%.4f\n", b / a}' >>"$TMP/lp"
done
awk -v a="$(median <"$TMP/l1")" -v b="$(median <"$TMP/l2")" -v r="$(median <"$TMP/lp")" \
    'BEGIN {printf "lesson warmup (two runs in lockstep), wall: 1 thread %.2f s, 2 threads %.2f s; 2 threads %.2fx the time of 1 (median of the pairs)\n", a, b, r}'
