# shellcheck shell=sh
# headroom_lib.sh - a run's headroom warnings, read off its log, and
# whether they close in on its divergence. Sourced, not run; POSIX sh.
#
# headroom_warnings LOG: one line a headroom warning before the first fix
# (if any): "STEP A B" for "at these rates it crosses between step A and
# B", "STEP A later"
# for "crosses at step A or later" (the growth slowing).
headroom_warnings() {
    sed -n '/fix 1 of 3/q
            s/.*warning at step \([0-9]*\): layer [0-9]* headroom.*crosses between step \([0-9]*\) and \([0-9]*\)$/\1 \2 \3/p
            s/.*warning at step \([0-9]*\): layer [0-9]* headroom.*crosses at step \([0-9]*\) or later$/\1 \2 later/p' "$1"
}

# headroom_tightens DIV FILE: FILE (headroom_warnings' lines) has two
# warnings or more, each with fewer steps left than the one before (to
# B, or to A for an open range), and the last range holds the divergence
# at step DIV within 20 steps: A - 20 <= DIV, and DIV <= B + 20.
headroom_tightens() {
    awk -v d="$1" '{ end = $3 == "later" ? $2 : $3; left = end - $1
                     if (NR > 1 && left >= prev) bad = 1
                     prev = left; lo = $2; hi = $3 }
        END { exit !(NR >= 2 && !bad && d >= lo - 20 && (hi == "later" || d <= hi + 20)) }' "$2"
}
