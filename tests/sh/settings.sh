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

# samecols FIXTURE OUT [EMPTY...]: every column of FIXTURE is OUT's column of
# the same name, row by row, value by value, and OUT has FIXTURE's rows; a
# column OUT has and FIXTURE has not (one that came after the fixture) is
# not compared, tokens_per_s (a wall-clock rate) is skipped, and a fixture
# column OUT lacks fails. Each column named in EMPTY must be in OUT and
# empty on every row. Prints what differs (the first 5 values); exits
# non-zero when anything does. Plain CSV (no quoted commas), as the fixtures.
samecols() {
    fix=$1
    out=$2
    shift 2
    awk -F, -v empty="$*" '
        NR == FNR && FNR == 1 { nf = NF; for (i = 1; i <= NF; i++) fc[i] = $i; next }
        NR == FNR { nfix = FNR - 1; row[nfix] = $0; next }
        FNR == 1 {
            for (i = 1; i <= NF; i++) oc[$i] = i
            for (i = 1; i <= nf; i++)
                if (fc[i] != "tokens_per_s" && !(fc[i] in oc)) { print "column " fc[i] " is not in the output"; bad++ }
            ne = split(empty, en, " ")
            for (k = 1; k <= ne; k++)
                if (!(en[k] in oc)) { print "column " en[k] " is not in the output"; bad++ }
            next
        }
        {
            nout = FNR - 1
            for (k = 1; k <= ne; k++)
                if ((en[k] in oc) && $(oc[en[k]]) != "" && shown++ < 5) {
                    print "row " nout " " en[k] ": " $(oc[en[k]]) " where it should be empty"; bad++
                }
            if (nout > nfix) next
            split(row[nout], f, ",")
            for (i = 1; i <= nf; i++) {
                c = fc[i]
                if (c == "tokens_per_s" || !(c in oc) || $(oc[c]) == f[i]) continue
                bad++
                if (shown++ < 5) print "row " nout " " c ": " $(oc[c]) " where the fixture has " f[i]
            }
        }
        END {
            if (nout != nfix) { print "the output has " nout + 0 " rows, the fixture " nfix + 0; bad++ }
            exit bad > 0
        }' "$fix" "$out"
}

# --- a version-1 checkpoint (made by 0.1.0 after 3 steps) resumes exactly ---
# v1_resume.csv is the CSV of resuming it to step 6 with the kernels that
# give the same bits on every CPU (made with NORMSCOPE_KERNELS=generic;
# the AVX2 build gives these bits too), in 0.1.0's columns: without
# tokens_per_s (a wall-clock rate), ln_gamma_init and the state columns
# that came after 0.1.0 (state, first_nonfinite: empty on a finite run).
if "$BIN" --headless -q --load "$FIX/v1.ckpt" --steps 6 --csv "$T/r.csv" 2>"$T/err"; then
    if samecols "$FIX/v1_resume.csv" "$T/r.csv" state first_nonfinite >"$T/diff"; then ok; else
        no "v1.ckpt resumed to other numbers:"; cat "$T/diff" >&2
    fi
else
    no "v1.ckpt does not load: $(cat "$T/err")"
fi

# --- a version-2 checkpoint (made before the data was recorded, with
# --lr-layer-decay 0.9, its field 33) resumes exactly, and as its data is
# not known nothing is said about it (ln_gamma_init came after v2.ckpt's
# binary: not in its fixture) ---
if "$BIN" --headless -q --load "$FIX/v2.ckpt" --steps 6 --csv "$T/r2.csv" 2>"$T/err" && [ ! -s "$T/err" ]; then
    if samecols "$FIX/v2_resume.csv" "$T/r2.csv" >"$T/diff"; then ok; else
        no "v2.ckpt resumed to other numbers:"; cat "$T/diff" >&2
    fi
else
    no "v2.ckpt does not load, or says something: $(cat "$T/err")"
fi

# --- a version-3 checkpoint (the last without a count of its settings,
# with --lr-layer-decay 0.9 and --lr 2e-3) resumes exactly ---
if "$BIN" --headless -q --load "$FIX/v3.ckpt" --steps 6 --csv "$T/r3.csv" 2>"$T/err" && [ ! -s "$T/err" ]; then
    if samecols "$FIX/v3_resume.csv" "$T/r3.csv" >"$T/diff"; then ok; else
        no "v3.ckpt resumed to other numbers:"; cat "$T/diff" >&2
    fi
else
    no "v3.ckpt does not load, or says something: $(cat "$T/err")"
fi

# --- a version-4 checkpoint (the last without the QK-norm tensors, which
# load at their initial values, QK-norm off; with --norm-kind dyt
# --dyt-alpha 0.7 --lr 2e-3) resumes exactly ---
if "$BIN" --headless -q --load "$FIX/v4.ckpt" --steps 6 --csv "$T/r4.csv" 2>"$T/err" && [ ! -s "$T/err" ]; then
    if samecols "$FIX/v4_resume.csv" "$T/r4.csv" >"$T/diff"; then ok; else
        no "v4.ckpt resumed to other numbers:"; cat "$T/diff" >&2
    fi
else
    no "v4.ckpt does not load, or says something: $(cat "$T/err")"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
