#!/bin/sh
# symbols.sh - every global name the library defines carries its module's
# prefix, so a name says where it lives and two modules cannot collide.
#
# It reads the library's defined global symbols with nm (POSIX -P output,
# one "LIB[OBJ.o]: NAME TYPE ..." line each) and maps each object file to
# its module:
#
#   - a module is a header: include/M.h or src/internal/M.h;
#   - an object belongs to the module with the longest such name M that is
#     its own name or, followed by '_', starts it: plot_svg.o is plot's
#     (plot.h), tui_chart.o tui's, tui_sweep.o tui_sweep's (tui_sweep.h),
#     sweep_run.o sweep's, sweep_spec.o sweep_spec's, ops_avx2.o ops's
#     (src/internal/ops.h), trainer_fix.o trainer's;
#   - the module's prefix is "M_", but for: diagnose, whose prefix is "diag_"
#     (its rules' short name); nsmath, whose is "ns_" (the project's own
#     libm: ns_exp, ns_log); and the objects generated from assets/ by embed
#     (corpus.o, lessons.o), the project-wide data, whose is "ns_".
#
# A global name without its module's prefix fails, by name; so does an
# object in no module (a new module has a header, or is placed here).
# Names starting with "__" are the compiler's (sanitizers, stack
# protector) and are not checked. A helper used by one file is static: it
# then defines no global name at all.
# Usage: NS_LIB=build/libnormscope.a sh tests/sh/symbols.sh (from the top
# of the tree, or ROOT=DIR; the library must be built)
# Prints "N passed, N failed"; exits non-zero on any failure.
ROOT=${ROOT:-$(dirname "$0")/../..}
cd "$ROOT" || exit 2
LIB=${NS_LIB:-build/libnormscope.a}
NM=${NM:-nm}

if [ ! -f "$LIB" ]; then
    echo "FAIL: $LIB: no such library (make $LIB)" >&2
    echo "0 passed, 1 failed"
    exit 1
fi
HEADS=$(ls include/*.h src/internal/*.h | sed 's|.*/||; s|\.h$||' | tr '\n' ' ')
T=$(mktemp -d /tmp/ns_symbols.XXXXXX)
trap 'rm -rf "$T"' EXIT

# "OBJ NAME" for each defined global symbol (U: undefined, not ours)
if ! "$NM" -A -g -P "$LIB" >"$T/nm" 2>"$T/err"; then
    echo "FAIL: $NM $LIB: $(head -1 "$T/err")" >&2
    echo "0 passed, 1 failed"
    exit 1
fi
sed -n 's/^[^[]*\[\([^]]*\)\]: *\([^ ]*\) \([A-Za-z]\).*/\1 \2 \3/p' "$T/nm" |
    awk '$3 != "U" && $3 != "w" && $3 != "v" { print $1, $2 }' >"$T/syms"
if [ ! -s "$T/syms" ]; then
    echo "FAIL: $NM found no defined global symbol in $LIB" >&2
    echo "0 passed, 1 failed"
    exit 1
fi

awk -v heads="$HEADS" -v counts="$T/count" '
    BEGIN { n = split(heads, h, " "); for (i = 1; i <= n; i++) H[h[i]] = 1 }
    {
        o = $1; sub(/\.o$/, "", o); name = $2
        if (name ~ /^__/) next
        # the longest header name that is the object name or a "_" prefix of it
        m = ""; t = o
        while (t != "") {
            if (t in H) { m = t; break }
            if (t !~ /_/) break
            sub(/_[^_]*$/, "", t)
        }
        if (o == "corpus" || o == "lessons") m = "ns"
        if (m == "") {
            if (!(o in noted)) { print "FAIL: " o ".o is in no module (no header " o ".h): place it in tests/sh/symbols.sh"; bad++ }
            noted[o] = 1
            next
        }
        pre = m "_"
        if (m == "diagnose") pre = "diag_"
        if (m == "nsmath") pre = "ns_"
        if (index(name, pre) != 1) { print "FAIL: " name " (" o ".o, module " m ") does not start with " pre; bad++ }
        else good++
    }
    END { print bad + 0 >counts; print good + 0 >counts }' "$T/syms" >&2
fail=$(sed -n 1p "$T/count")
pass=$(sed -n 2p "$T/count")
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
