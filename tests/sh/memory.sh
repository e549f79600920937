#!/bin/sh
# memory.sh - the man page's MEMORY formula against the memory a run really
# takes: the "estimated" figure of the summary line is within 10% of the
# run's peak resident set size (tests/bench/peak.sh: /usr/bin/time -v, or
# the summary line's own getrusage figure without it).
# First the program alone (a one-step run of a model of a few thousand
# parameters: the formula's first term, which grows as the program does),
# then four small models, each leaning on one term: the activations (the
# default model), the snapshot ring (eight snapshots of a small one), the
# history of the chart and heatmap with the bf16 copy of the weights (a
# tiny model for 4200 steps), and only the buffers a placement writes
# (ReZero: no norm buffers); last, a run resumed for more steps than its
# checkpoint's. Skipped under the sanitizers (NS_SANITIZED set), whose
# shadow memory is no part of the model's.
# Usage: NS_BIN=./normscope sh tests/sh/memory.sh
# Prints "N passed, N failed"; exits non-zero on any failure.
BIN=${NS_BIN:-./normscope}
T=$(mktemp -d /tmp/ns_memory.XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
no() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }

if [ -n "$NS_SANITIZED" ]; then
    echo "memory: skipped under the sanitizers"
    echo "$pass passed, $fail failed"
    exit 0
fi

. "$(dirname "$0")/../bench/peak.sh"

# args...: one headless run, its peak memory within 10% of the estimate
check() {
    peak_run "$T" "$BIN" --threads 1 --val-every 0 "$@"
    if [ -z "$EST" ] || [ -z "$RSS" ]; then
        no "$*: no figures: $(tail -1 "$T/err")"
    elif awk -v e="$EST" -v m="$RSS" 'BEGIN {exit !(m >= 0.9 * e && m <= 1.1 * e)}'; then
        ok
    else
        no "$*: estimated $EST MiB, measured $RSS MiB (more than 10% apart)"
    fi
}

check -L 1 -d 16 -T 8 -B 1 --steps 1
check --steps 3
check -L 2 -d 64 -B 2 --steps 120 --snapshot-every 10
check -L 1 -d 16 -T 8 -B 1 --steps 4200 --precision bf16
check --norm rezero --steps 3
# a resumed run: estimated for the --steps it is given (its snapshots and
# history), not the checkpoint's 50, which leaves out six snapshots
"$BIN" --headless -q --val-every 0 --steps 50 --save "$T/r.ck" 2>/dev/null
check --load "$T/r.ck" --steps 400

# the summary line ends with both figures
"$BIN" --headless --steps 1 -L 1 -d 16 2>"$T/err" >/dev/null
grep -q '^normscope: 1 steps in .*; memory [0-9.]* MiB, estimated [0-9.]* MiB$' "$T/err" && ok ||
    no "summary line without the memory figures: $(cat "$T/err")"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
