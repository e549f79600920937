#!/bin/sh
# settings.sh - the settings table against the outside: checkpoints written
# by earlier formats still load and resume to the same numbers.
# Usage: NS_BIN=./normscope sh tests/sh/settings.sh
# Prints "N passed, N failed"; exits non-zero on any failure.
BIN=${NS_BIN:-./normscope}
FIX=$(dirname "$0")/../fixtures
T=$(mktemp -d /tmp/ns_settings.XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
no() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }

# --- a version-1 checkpoint (made by 0.1.0 after 3 steps) resumes exactly ---
# v1_resume.csv is the CSV of resuming it to step 6 with the kernels that
# give the same bits on every CPU (made with NORMSCOPE_KERNELS=generic;
# the AVX2 build gives these bits too), in 0.1.0's columns: without
# tokens_per_s (a wall-clock rate) and the state columns that came after
# 0.1.0, last (state, first_nonfinite: empty on a finite run).
# colnum FILE NAME: the 1-based index of a CSV column
colnum() { head -1 "$1" | tr ',' '\n' | grep -nx "$2" | cut -d: -f1; }
# (ln_gamma_init came after 0.1.0 and after v2.ckpt's binary: not in either fixture)
if "$BIN" --headless -q --load "$FIX/v1.ckpt" --steps 6 --csv "$T/r.csv" 2>"$T/err"; then
    g=$(colnum "$T/r.csv" ln_gamma_init)
    cut -d, -f6,"$g" --complement "$T/r.csv" | sed -e '1s/,state,first_nonfinite$//' -e '2,$s/,,$//' >"$T/r6.csv"
    if cmp -s "$T/r6.csv" "$FIX/v1_resume.csv"; then ok; else
        no "v1.ckpt resumed to other numbers:"; diff "$T/r6.csv" "$FIX/v1_resume.csv" | head -5 >&2
    fi
else
    no "v1.ckpt does not load: $(cat "$T/err")"
fi

# --- a version-2 checkpoint (made before the data was recorded, with
# --lr-layer-decay 0.9, its field 33) resumes exactly, and as its data is
# not known nothing is said about it ---
if "$BIN" --headless -q --load "$FIX/v2.ckpt" --steps 6 --csv "$T/r2.csv" 2>"$T/err" && [ ! -s "$T/err" ]; then
    cut -d, -f6,"$(colnum "$T/r2.csv" ln_gamma_init)" --complement "$T/r2.csv" >"$T/r2x.csv"
    cut -d, -f6 --complement "$FIX/v2_resume.csv" >"$T/f2x.csv"
    if cmp -s "$T/r2x.csv" "$T/f2x.csv"; then ok; else
        no "v2.ckpt resumed to other numbers:"; diff "$T/r2x.csv" "$T/f2x.csv" | head -5 >&2
    fi
else
    no "v2.ckpt does not load, or says something: $(cat "$T/err")"
fi

# --- a version-3 checkpoint (the last without a count of its settings,
# with --lr-layer-decay 0.9 and --lr 2e-3) resumes exactly ---
if "$BIN" --headless -q --load "$FIX/v3.ckpt" --steps 6 --csv "$T/r3.csv" 2>"$T/err" && [ ! -s "$T/err" ]; then
    cut -d, -f6 --complement "$T/r3.csv" >"$T/r3x.csv"
    cut -d, -f6 --complement "$FIX/v3_resume.csv" >"$T/f3x.csv"
    if cmp -s "$T/r3x.csv" "$T/f3x.csv"; then ok; else
        no "v3.ckpt resumed to other numbers:"; diff "$T/r3x.csv" "$T/f3x.csv" | head -5 >&2
    fi
else
    no "v3.ckpt does not load, or says something: $(cat "$T/err")"
fi

# --- a version-4 checkpoint (the last without the QK-norm tensors, which
# load at their initial values, QK-norm off; with --norm-kind dyt
# --dyt-alpha 0.7 --lr 2e-3) resumes exactly ---
if "$BIN" --headless -q --load "$FIX/v4.ckpt" --steps 6 --csv "$T/r4.csv" 2>"$T/err" && [ ! -s "$T/err" ]; then
    cut -d, -f6 --complement "$T/r4.csv" >"$T/r4x.csv"
    cut -d, -f6 --complement "$FIX/v4_resume.csv" >"$T/f4x.csv"
    if cmp -s "$T/r4x.csv" "$T/f4x.csv"; then ok; else
        no "v4.ckpt resumed to other numbers:"; diff "$T/r4x.csv" "$T/f4x.csv" | head -5 >&2
    fi
else
    no "v4.ckpt does not load, or says something: $(cat "$T/err")"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
