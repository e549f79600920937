#!/bin/sh
# layers.sh - the include graph runs one way. Every source and header
# belongs to a layer, and a file includes only headers of its own layer or
# a lower one:
#
#   1 engine    the numbers (model, ops, optim, schedule, data, metrics,
#               engine), its formats and files (numfmt, atomicio, csv,
#               jsonl, tail, nstime, pool, rng, sysdep), the settings table and the command line's loop
#               over it (settings, cli_opts, cli), commands and lessons,
#               the diagnosis' rules
#   2 runtime   the trainer thread, the snapshot it publishes, the --compare
#               rule (twin), --load's flags (resume), the stop flag
#   3 sources   the other snapshot sources: a metrics stream, a sweep and
#               its map layout
#   4 front     the live view (tui*), the figures (plot*) and their scales
#   5 main      main.c
#
# Also: a public header (include/) includes only public headers; the
# engine's own headers (src/internal/) are included by the engine's files
# only; and no two modules include each other, directly or through others
# (a module: a header and the source named after it; ops_simd.h,
# ops_kern.h, ops_v8.h, ops_avx2.c and ops_generic.c are ops'; sweep_int.h,
# sweep_results.c and sweep_run.c are sweep's; plot_int.h and plot_*.c are
# plot's; trainer_int.h and trainer_*.c are trainer's). A file in no layer
# fails the test: a new module is placed here.
# Usage: sh tests/sh/layers.sh (from the top of the tree, or ROOT=DIR)
# Prints "N passed, N failed"; exits non-zero on any failure.
ROOT=${ROOT:-$(dirname "$0")/../..}
cd "$ROOT" || exit 2

# module -> layer; trainer_* are the trainer's files, tui_* and plot_* the
# front end's
layer_of() {
    case $1 in
    atomicio | cli | cli_opts | command | config | csv | data | diagnose | diagnose_state | engine | lesson | \
        jsonl | metrics | model | nsmath | nstext | nstime | numfmt | ops | ops_avx2 | ops_generic | ops_kern | \
        ops_simd | ops_v8 | optim | pool | rng | sysdep | tail | \
        schedule | settings | sweep_spec) echo 1 ;;
    resume | snapshot | stopsig | trainer | trainer_* | twin) echo 2 ;;
    stream | sweep | sweep_int | sweep_map | sweep_results | sweep_run) echo 3 ;;
    plot | plot_* | scale | tui | tui_*) echo 4 ;;
    main) echo 5 ;;
    *) echo 0 ;;
    esac
}

FILES=$(ls include/*.h src/*.c src/*.h src/internal/*.h 2>/dev/null)
# one line per include: "FILE HEADER"
EDGES=$(for f in $FILES; do
    sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f" | while read -r h; do echo "$f $h"; done
done)

pass=0
fail=0
no() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }

# every file has a layer
for f in $FILES; do
    m=$(basename "$f" | sed 's/\.[ch]$//')
    if [ "$(layer_of "$m")" = 0 ]; then no "$f: in no layer (place module $m in tests/sh/layers.sh)"; fi
done
[ "$fail" = 0 ] && pass=$((pass + 1))

# lower layers never include higher ones; public headers only public ones;
# the internal headers only from the engine
echo "$EDGES" | {
    n=0
    while read -r f h; do
        [ -n "$f" ] || continue
        m=$(basename "$f" | sed 's/\.[ch]$//')
        hm=$(echo "$h" | sed 's/\.h$//')
        lf=$(layer_of "$m")
        lh=$(layer_of "$hm")
        if [ -f "include/$h" ]; then where=public
        elif [ -f "src/internal/$h" ]; then where=internal
        elif [ -f "src/$h" ]; then where=src
        else where=missing; fi
        if [ "$where" = missing ]; then
            echo "FAIL: $f includes $h, which is in no header directory" >&2; n=$((n + 1))
        elif [ "$lh" -gt "$lf" ]; then
            echo "FAIL: $f (layer $lf) includes $h (layer $lh)" >&2; n=$((n + 1))
        fi
        case $f in include/*)
            if [ "$where" != public ]; then
                echo "FAIL: public header $f includes $h ($where)" >&2; n=$((n + 1))
            fi ;;
        esac
        if [ "$where" = internal ] && [ "$lf" != 1 ]; then
            echo "FAIL: $f (layer $lf) includes the engine's own $h" >&2; n=$((n + 1))
        fi
    done
    echo "$n" >"${TMPDIR:-/tmp}/ns_layers.$$"
}
n=$(cat "${TMPDIR:-/tmp}/ns_layers.$$")
rm -f "${TMPDIR:-/tmp}/ns_layers.$$"
if [ "$n" = 0 ]; then pass=$((pass + 1)); else fail=$((fail + n)); fi

# no cycle between modules: the transitive closure of "module includes
# module" has no pair both ways
cycles=$(echo "$EDGES" | awk '
    NF == 2 {
        a = $1; sub(/.*\//, "", a); sub(/\.[ch]$/, "", a)
        b = $2; sub(/\.h$/, "", b)
        # both builds of the kernels and their private headers are part of ops
        if (a ~ /^ops_(simd|avx2|generic|kern|v8)$/) a = "ops"
        if (b ~ /^ops_(simd|avx2|generic|kern|v8)$/) b = "ops"
        # the sweep is one module in four files and their private header
        if (a ~ /^sweep_(int|spec|results|run)$/) a = "sweep"
        if (b ~ /^sweep_(int|spec|results|run)$/) b = "sweep"
        # the trainer is one module in several files and their private header
        if (a ~ /^trainer_/) a = "trainer"
        if (b ~ /^trainer_/) b = "trainer"
        # the figures are one module in many files and their private header
        if (a ~ /^plot_/) a = "plot"
        if (b ~ /^plot_/) b = "plot"
        if (a != b) { e[a, b] = 1; m[a] = 1; m[b] = 1 }
    }
    END {
        for (k in m) for (i in m) if ((i, k) in e) for (j in m) if ((k, j) in e) e[i, j] = 1
        for (i in m) for (j in m) if (i < j && (i, j) in e && (j, i) in e) print i " <-> " j
    }')
if [ -z "$cycles" ]; then
    pass=$((pass + 1))
else
    echo "$cycles" | while read -r c; do echo "FAIL: include cycle: $c" >&2; done
    fail=$((fail + $(echo "$cycles" | wc -l)))
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
