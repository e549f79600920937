# shellcheck shell=sh
# results_lib.sh - a sweep's results.csv as rows two sweeps of the same
# grid must agree on. Sourced, not run; POSIX sh.
#
# results_rows FILE: FILE's rows, sorted, with the columns of time and
# place blanked (found by name in the header): wall_s (empty when
# collected), train_s, time, host, and command (it holds the paths of the
# binary and the sweep's directory). Every other column (the settings,
# the losses, the state) is kept as written.
results_rows() {
    awk -F, -v OFS=, 'NR == 1 { for (i = 1; i <= NF; i++)
                                    if ($i ~ /^(wall_s|train_s|time|host|command)$/) w[i] = 1 }
                      { for (i in w) $i = ""; print }' "$1" | sort
}
