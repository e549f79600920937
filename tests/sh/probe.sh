#!/bin/sh
# probe.sh - the PyTorch probe's tests (tests/probe/test_*.py), each run with
# a Python that has torch (Debian's /usr/bin/python3 with python3-torch, or
# $PYTHON). Usage: NS_BIN=./normscope sh tests/sh/probe.sh
# Prints "N passed, N failed" over all the scripts; exits non-zero on any failure.
PY=${PYTHON:-/usr/bin/python3}
DIR=$(dirname "$0")/../probe
NS_BIN=${NS_BIN:-./normscope}
export NS_BIN OMP_NUM_THREADS=1
if ! "$PY" -c "import torch" 2>/dev/null; then
    echo "FAIL: $PY cannot import torch (apt-get install python3-torch, or set PYTHON)" >&2
    echo "0 passed, 1 failed"
    exit 1
fi
pass=0
fail=0
out=$(mktemp /tmp/ns_probe.XXXXXX)
trap 'rm -f "$out"' EXIT
for t in "$DIR"/test_*.py; do
    "$PY" "$t" >"$out" 2>&1
    rc=$?
    cat "$out"
    line=$(grep -E '^[^:]+: [0-9]+ passed, [0-9]+ failed$' "$out" | tail -1)
    p=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed.*/\1/')
    f=$(echo "$line" | sed -E 's/.* ([0-9]+) failed$/\1/')
    [ -n "$line" ] || { p=0; f=1; echo "FAIL: $t printed no count" >&2; }
    [ "$rc" -eq 0 ] || [ "$f" -gt 0 ] || { f=1; echo "FAIL: $t exited $rc" >&2; }
    pass=$((pass + p))
    fail=$((fail + f))
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
