#!/bin/sh
# cross.sh - the same bits on other architectures: the tree cross-built
# without curses (make CC=<triplet>-gcc CURSES=0, each in its own BUILD
# directory), its runs compared byte for byte with ./normscope's on this
# machine (bits_lib.sh: three configurations, 20 steps, 2 threads):
#   aarch64   under qemu-user (qemu-aarch64 -L /usr/aarch64-linux-gnu);
#             its own FMA-rich code generation is what -ffp-contract=off
#             has to hold back
#   i686      32-bit x86, SSE2 arithmetic (the Makefile's -msse2
#             -mfpmath=sse), run by this machine's kernel through the
#             cross libc's loader. Not under qemu-i386: its emulation of
#             the pool's 64-bit atomics (cmpxchg8b / movq) spins forever
#             with 2 threads where the real CPU does not.
# and a build that would keep x87's extra precision (-mfpmath=387) is
# refused at compile time, naming the reason. Each build warns of nothing.
# Needs gcc-aarch64-linux-gnu, libc6-dev-arm64-cross, gcc-i686-linux-gnu,
# libc6-dev-i386-cross and qemu-user; a missing one is said, and is a
# failure under NS_CROSS_REQUIRED=1 (CI).
# Usage: NS_BIN=./normscope sh tests/sh/cross.sh (from the top of the
# tree). Prints "N passed, N failed"; exits non-zero on any failure.
ROOT=${ROOT:-$(dirname "$0")/../..}
cd "$ROOT" || exit 2
. tests/lib/bits_lib.sh
BIN=${NS_BIN:-./normscope}
T=$(mktemp -d /tmp/ns_cross.XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
no() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
missing() {
    if [ "${NS_CROSS_REQUIRED:-0}" = 1 ]; then
        no "$1"
    else
        echo "cross.sh: $1: not tried"
    fi
}

# build DIR MAKE-ARGS...: a fresh build without curses of DIR/normscope,
# its output in $T/DIR.log
build() {
    d=$1
    shift
    bits_build "$d" "$T/$(basename "$d").log" CURSES=0 "$@"
}

# arch NAME CC RUNNER...: cross-build with CC, run with RUNNER, compare
arch() {
    name=$1 cc=$2
    shift 2
    if ! command -v "$cc" >/dev/null 2>&1; then
        missing "$cc is not installed"
        return
    fi
    if ! build "build/cross-$name" CC="$cc"; then
        no "make CC=$cc CURSES=0 failed: $(tail -5 "$T/cross-$name.log")"
        return
    fi
    ok
    [ "$(grep -c 'warning:' "$T/cross-$name.log")" = 0 ] && ok ||
        no "$cc -Wall -Wextra: $(grep 'warning:' "$T/cross-$name.log" | head -5)"
    # the ELF header's e_machine (little-endian, at byte 18): the target's
    machine=$(od -An -tx1 -j18 -N2 "build/cross-$name/normscope" | tr -d ' ')
    [ "$machine" = "$elf_machine" ] && ok ||
        no "build/cross-$name/normscope is not a $name binary (e_machine $machine)"
    "$@" "build/cross-$name/normscope" --version >/dev/null 2>&1
    rc=$?
    if [ "$rc" = 126 ]; then # a kernel built without 32-bit support: not an install step
        echo "cross.sh: this kernel cannot execute $name binaries (exit 126): its bits not compared"
        return
    elif [ "$rc" != 0 ]; then
        missing "$* cannot run build/cross-$name/normscope (exit $rc)"
        return
    fi
    bits_run "$T/$name" "$@" "build/cross-$name/normscope" && ok || no "$name: its runs failed"
    bits_same "$T/ref" "$T/$name" "$name" && ok || no "$name: not this machine's bits"
}

bits_run "$T/ref" "$BIN" && ok || no "this machine's runs failed"

elf_machine=b700 # EM_AARCH64, 183
if command -v qemu-aarch64 >/dev/null 2>&1; then
    arch aarch64 aarch64-linux-gnu-gcc qemu-aarch64 -L /usr/aarch64-linux-gnu
else
    missing "qemu-aarch64 is not installed (qemu-user)"
fi

elf_machine=0300 # EM_386, 3
arch i686 i686-linux-gnu-gcc /usr/i686-linux-gnu/lib/ld-linux.so.2 --library-path \
    /usr/i686-linux-gnu/lib

# x87 arithmetic, which the Makefile never asks for, is refused when a
# build does: rng.c sees FLT_EVAL_METHOD != 0 and stops, saying why
if command -v i686-linux-gnu-gcc >/dev/null 2>&1; then
    if i686-linux-gnu-gcc -std=c11 -mfpmath=387 -Iinclude -Isrc/internal -D_POSIX_C_SOURCE=200809L \
        -c src/rng.c -o "$T/rng.o" 2>"$T/x87.log"; then
        no "an x87 build of src/rng.c was not refused"
    else
        grep -q 'needs FLT_EVAL_METHOD 0' "$T/x87.log" && ok ||
            no "the x87 build failed, not saying why: $(head -3 "$T/x87.log")"
    fi
fi

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
