# peak.sh - one headless run's peak memory beside the man page's MEMORY
# estimate, for tests/sh/memory.sh and tests/bench/scaling.sh (sourced:
# . tests/bench/peak.sh). The peak resident set size comes from
# /usr/bin/time -v (Debian's time package) or, without it, from the
# summary line's own getrusage figure; the estimate from the summary line.
# PEAK_TIME names another time(1) (one that does not exist: the fallback;
# so is BSD's time, macOS's, which has no -v).
PEAK_TIME=${PEAK_TIME:-/usr/bin/time}
PEAK_GNU=0
[ -x "$PEAK_TIME" ] && "$PEAK_TIME" -v true >/dev/null 2>&1 && PEAK_GNU=1

# dir bin args...: run bin --headless args... with stderr in dir/err; sets
# RSS and EST (MiB), empty when the run gave none
peak_run() {
    _dir=$1
    _bin=$2
    shift 2
    if [ "$PEAK_GNU" = 1 ]; then
        "$PEAK_TIME" -v -o "$_dir/time" "$_bin" --headless "$@" 2>"$_dir/err" >/dev/null
        RSS=$(sed -n 's/.*Maximum resident set size (kbytes): *\([0-9]*\).*/\1/p' "$_dir/time" |
            awk '{printf "%.1f", $1 / 1024}')
    else
        "$_bin" --headless "$@" 2>"$_dir/err" >/dev/null
        RSS=$(sed -n 's/.*; memory \([0-9.]*\) MiB.*/\1/p' "$_dir/err")
    fi
    EST=$(sed -n 's/.*, estimated \([0-9.]*\) MiB.*/\1/p' "$_dir/err")
}

# where the peak comes from, for a table's header
peak_source() {
    if [ "$PEAK_GNU" = 1 ]; then echo "$PEAK_TIME -v"; else echo "the summary line's getrusage"; fi
}
