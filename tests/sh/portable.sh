#!/bin/sh
# portable.sh - the same bits from the builds a packager or a contributor
# makes, each in its own BUILD directory (-j2) and compared byte for byte
# with ./normscope's run (bits_lib.sh: three configurations, 20 steps):
#   make CFLAGS=-O2     a packager's CFLAGS replaces the Makefile's; the
#                       flags the numbers depend on come after it
#   make CC=clang       (skipped, saying so, without clang)
#   make normscope-headless   the build without curses, whose live view
#                       says in one line that it has none (exit 2)
# and the gcc and clang builds print no warning (-Wall -Wextra).
# Usage: NS_BIN=./normscope sh tests/sh/portable.sh (from the top of the
# tree). Prints "N passed, N failed"; exits non-zero on any failure.
ROOT=${ROOT:-$(dirname "$0")/../..}
cd "$ROOT" || exit 2
. tests/lib/bits_lib.sh
BIN=${NS_BIN:-./normscope}
T=$(mktemp -d /tmp/ns_portable.XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
no() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }

# build DIR MAKE-ARGS...: a fresh build of DIR/normscope, its output in
# $T/DIR.log
build() {
    d=$1
    shift
    bits_build "$d" "$T/$(basename "$d").log" "$@"
}
warnings() { grep -c 'warning:' "$T/$(basename "$1").log"; }

bits_run "$T/ref" "$BIN" && ok || no "the default build's runs failed"

if build build/port-o2 CFLAGS=-O2; then
    ok
    bits_run "$T/o2" build/port-o2/normscope && bits_same "$T/ref" "$T/o2" "make CFLAGS=-O2" && ok ||
        no "make CFLAGS=-O2: not the default build's bits"
    [ "$(warnings build/port-o2)" = 0 ] && ok ||
        no "gcc -Wall -Wextra: $(grep 'warning:' "$T/port-o2.log" | head -5)"
else
    no "make CFLAGS=-O2 failed: $(tail -5 "$T/port-o2.log")"
fi

if command -v clang >/dev/null 2>&1; then
    if build build/port-clang CC=clang; then
        ok
        bits_run "$T/clang" build/port-clang/normscope &&
            bits_same "$T/ref" "$T/clang" "make CC=clang" && ok || no "make CC=clang: not gcc's bits"
        [ "$(warnings build/port-clang)" = 0 ] && ok ||
            no "clang -Wall -Wextra: $(grep 'warning:' "$T/port-clang.log" | head -5)"
    else
        no "make CC=clang failed: $(tail -5 "$T/port-clang.log")"
    fi
else
    echo "portable.sh: clang is not installed: make CC=clang not tried (apt-get install clang)"
fi

# without curses: the headless runs are the same; the live view says it
# is not there, in one line, exit 2, before anything trains
if env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL nice make -j2 --no-print-directory normscope-headless \
    >"$T/headless.log" 2>&1; then
    ok
    ldd ./normscope-headless 2>/dev/null | grep -q curses && no "normscope-headless links curses" || ok
    bits_run "$T/nc" ./normscope-headless && bits_same "$T/ref" "$T/nc" "normscope-headless" && ok ||
        no "normscope-headless: not the default build's bits"
    ./normscope-headless --steps 5 >"$T/live.out" 2>"$T/live.err" </dev/null
    rc=$?
    [ "$rc" = 2 ] && [ "$(wc -l <"$T/live.err")" = 1 ] && grep -q 'built without curses.*add --headless' "$T/live.err" &&
        ok || no "the live view without curses: exit $rc, $(cat "$T/live.err")"
    ./normscope-headless --follow "$T/none.nsj" 2>"$T/follow.err" </dev/null
    [ $? = 2 ] && grep -q 'built without curses' "$T/follow.err" && ok ||
        no "--follow without curses: $(cat "$T/follow.err")"
else
    no "make normscope-headless failed: $(tail -5 "$T/headless.log")"
fi

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
