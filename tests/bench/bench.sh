#!/bin/sh
# bench.sh - normscope's training speed, and PyTorch's on the same model in
# the same run, as a ratio. Usage: sh tests/bench/bench.sh ./normscope
#
# Each configuration runs REPS times (default 3); the median steps/s is
# reported. normscope's figure is its own summary line (training steps only,
# no start-up); the peer (tests/bench/torch_peer.py) times its training
# steps the same way, single-threaded, after untimed warm-up steps. The peer
# runs when a python3 with torch is found (Debian: python3-torch, plus
# libopenblas0-pthread so torch does not use the slow reference BLAS).
BIN=${1:-./normscope}
REPS=${REPS:-3}
DIR=$(dirname "$0")

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

PY=
for p in /usr/bin/python3 python3; do
    if "$p" -c 'import torch' >/dev/null 2>&1; then PY=$p; break; fi
done

ns_rate() { # args...: median steps/s of normscope
    for i in $(seq "$REPS"); do
        "$BIN" --headless --val-every 0 "$@" 2>&1 >/dev/null |
            sed -n 's/.* in [0-9.]* s (\([0-9.]*\) steps\/s.*/\1/p'
    done | median
}

torch_rate() {
    for i in $(seq "$REPS"); do
        "$PY" "$DIR/torch_peer.py" --threads 1 "$@" | sed -n 's/.*steps_per_s=\([0-9.]*\).*/\1/p'
    done | median
}

printf '%-34s %12s %12s %12s %8s\n' configuration "steps/s" "tokens/s" "torch st/s" ratio
run() { # label steps normscope-args -- torch-args
    label=$1 steps=$2 tokens=$3
    shift 3
    ns_args= torch_args= side=ns
    for a in "$@"; do
        if [ "$a" = -- ]; then side=torch; continue; fi
        if [ $side = ns ]; then ns_args="$ns_args $a"; else torch_args="$torch_args $a"; fi
    done
    # shellcheck disable=SC2086
    r=$(ns_rate --steps "$steps" $ns_args)
    t=-
    ratio=-
    if [ -n "$PY" ]; then
        # shellcheck disable=SC2086
        t=$(torch_rate --steps "$steps" $torch_args)
        ratio=$(awk -v a="$r" -v b="$t" 'BEGIN {if (b > 0) printf "%.2fx", a / b; else print "-"}')
    fi
    printf '%-34s %12s %12.0f %12s %8s\n' "$label" "$r" "$(awk -v r="$r" -v k="$tokens" 'BEGIN {print r * k}')" "$t" "$ratio"
}

run "default L=6 d=64 H=4 T=64 B=16" 40 1024 -- -L 6 -d 64 -H 4 -T 64 -B 16
run "L=12 d=128 H=4 T=64 B=16" 10 1024 -L 12 -d 128 -- -L 12 -d 128 -H 4 -T 64 -B 16
[ -n "$PY" ] || echo "(PyTorch peer skipped: no python3 with torch; apt-get install python3-torch libopenblas0-pthread)"
echo "machine: $(nproc) cores, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1); medians of $REPS runs"
