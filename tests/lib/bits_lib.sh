# shellcheck shell=sh
# bits_lib.sh - the run that portable.sh and cross.sh compare between
# builds: a small model trained 20 steps headless, in three configurations
# whose arithmetic differs (fp32 Pre-LN, fp16 with the dynamic loss
# scaler, Post-LN in bf16), its CSV kept but for the speed columns (the
# only ones a machine may change). Sourced, not run; POSIX sh.
#
# bits_run OUT CMD...: CMD (a binary, or qemu-aarch64 -L DIR BINARY) with
# the run's flags and each configuration's; OUT.1, OUT.2, OUT.3 get the
# CSVs without their speed columns. The speed columns are found by name
# in the CSV's own header (tokens_per_s, b_tokens_per_s). 0, or 1 when a
# run failed.
# (sourced from the top of the tree)
# shellcheck source=tests/lib/posix_lib.sh
. tests/lib/posix_lib.sh
BITS_FLAGS="--headless -q --layers 2 --dim 32 --heads 2 --context 16 --batch 4 --steps 20 \
--val-every 10 --val-batches 1 --threads 2"
BITS_CONFIGS="default|--precision fp16|--norm post --precision bf16"

bits_run() {
    out=$1
    shift
    i=0
    rc=0
    old_ifs=$IFS
    IFS='|'
    set -- "$@" -- $BITS_CONFIGS
    IFS=$old_ifs
    # the command, then "--", then the configurations
    cmd=
    while [ "$1" != -- ]; do
        cmd="$cmd '$1'"
        shift
    done
    shift
    for cfg in "$@"; do
        i=$((i + 1))
        [ "$cfg" = default ] && cfg=
        # shellcheck disable=SC2086
        if eval "$cmd" $BITS_FLAGS $cfg --csv "'$out.raw'"; then
            cols=$(head -1 "$out.raw" | tr , '\n' | grep -n 'tokens_per_s$' | cut -d: -f1 | paste -sd, -)
            ns_cut_out "$cols" "$out.raw" >"$out.$i"
        else
            rc=1
        fi
        rm -f "$out.raw"
    done
    return $rc
}

# bits_same A B WHAT: the three CSVs of A and B are the same bytes; says
# which configuration differs, and where
bits_same() {
    same=0
    n=0
    for cfg in 1 2 3; do
        n=$((n + 1))
        if ! cmp -s "$1.$cfg" "$2.$cfg"; then
            same=1
            echo "$3: configuration $cfg ($(echo "$BITS_CONFIGS" | cut -d'|' -f$cfg)) differs: $(cmp "$1.$cfg" "$2.$cfg" 2>&1 | head -1)" >&2
        fi
    done
    return $same
}

# bits_build DIR LOG MAKE-ARGS...: a fresh build of DIR/normscope (-j2,
# niced), make's output in LOG. The make that runs a suite passes its own
# command line down in MAKEFLAGS: it is not this build's.
bits_build() {
    dir=$1 log=$2
    shift 2
    rm -rf "$dir"
    env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL nice make -j2 --no-print-directory BUILD="$dir" \
        BIN="$dir/normscope" "$@" "$dir/normscope" >"$log" 2>&1
}
