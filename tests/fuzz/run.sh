#!/bin/sh
# tests/fuzz/run.sh SECONDS HARNESS... - run each built libFuzzer harness
# (build/fuzz/NAME) for SECONDS on a fresh copy of its seed corpus, print its
# executions, and fail on any finding: a crash, a sanitizer report, a leak,
# a timeout or an out-of-memory, each of which libFuzzer saves as a file
# build/fuzz/NAME-crash-..., -leak-..., -timeout-..., -oom-...
secs=$1
shift
total=0
fail=0
for f in "$@"; do
    rm -rf "build/fuzz/corpus_$f" build/fuzz/"$f"-*
    cp -r "tests/fuzz/seeds/$f" "build/fuzz/corpus_$f"
    echo "== fuzz $f ($secs s)"
    # -timeout: one input taking 10 s is a hang; -rss_limit_mb: a blow-up
    status=0
    "build/fuzz/$f" -max_total_time="$secs" -max_len=200000 -timeout=10 \
        -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="build/fuzz/$f-" \
        "build/fuzz/corpus_$f" >"build/fuzz/$f.log" 2>&1 || status=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "build/fuzz/$f.log")
    echo "fuzz $f: ${execs:-0} executions, exit $status"
    total=$((total + ${execs:-0}))
    if [ "$status" -ne 0 ] || ls build/fuzz/"$f"-* >/dev/null 2>&1; then
        grep -E 'ERROR|SUMMARY|Test unit written' "build/fuzz/$f.log" | head -20
        echo "fuzz $f: FINDING (build/fuzz/$f.log and the saved input beside it)"
        fail=1
    fi
done
echo "fuzz: $total executions in all"
exit $fail
