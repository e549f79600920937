#!/bin/sh
# tests/fuzz/run.sh SECONDS HARNESS... - run each built libFuzzer harness
# (build/fuzz/NAME) for SECONDS on a fresh copy of its seed corpus, print its
# executions, and fail on any finding: a crash, a sanitizer report, a leak,
# a timeout or an out-of-memory, each of which libFuzzer saves as a file
# build/fuzz/NAME-crash-..., -leak-..., -timeout-..., -oom-...
# FUZZ_JOBS harnesses run at once (default 2: each is one process on one
# core, so two on CI's two cores take half the wall time for the same
# seconds of fuzzing each).
secs=$1
shift
jobs=${FUZZ_JOBS:-2}
total=0
fail=0

# one_harness NAME: its run, its exit status into build/fuzz/NAME.status
one_harness() {
    rm -rf "build/fuzz/corpus_$1" build/fuzz/"$1"-*
    cp -r "tests/fuzz/seeds/$1" "build/fuzz/corpus_$1"
    # -timeout: one input taking 10 s is a hang; -rss_limit_mb: a blow-up
    status=0
    "build/fuzz/$1" -max_total_time="$secs" -max_len=200000 -timeout=10 \
        -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="build/fuzz/$1-" \
        "build/fuzz/corpus_$1" >"build/fuzz/$1.log" 2>&1 || status=$?
    echo "$status" >"build/fuzz/$1.status"
}

# report NAME: its executions, and its finding if it made one
report() {
    status=$(cat "build/fuzz/$1.status" 2>/dev/null || echo "none")
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "build/fuzz/$1.log")
    echo "fuzz $1: ${execs:-0} executions, exit $status"
    total=$((total + ${execs:-0}))
    if [ "$status" != 0 ] || ls build/fuzz/"$1"-* >/dev/null 2>&1; then
        grep -E 'ERROR|SUMMARY|Test unit written' "build/fuzz/$1.log" | head -20
        echo "fuzz $1: FINDING (build/fuzz/$1.log and the saved input beside it)"
        fail=1
    fi
}

# the harnesses in batches of $jobs, each batch reported once it ended
while [ $# -gt 0 ]; do
    batch=
    i=0
    while [ $# -gt 0 ] && [ $i -lt "$jobs" ]; do
        echo "== fuzz $1 ($secs s)"
        rm -f "build/fuzz/$1.status"
        one_harness "$1" &
        batch="$batch $1"
        i=$((i + 1))
        shift
    done
    wait
    for f in $batch; do
        report "$f"
    done
done
echo "fuzz: $total executions in all"
exit $fail
