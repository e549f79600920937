# claims_lib.sh - the papers' claims read from a sweep's results.csv, by
# column name (sourced by tests/sh/sweep.sh and tests/sh/lessons.sh).
#
# claim_gap FILE LAYERS RUNS [LR]: the mean val_loss of the Post-LN runs
#   minus that of the Pre-LN runs at LAYERS (and at lr LR), each side of
#   exactly RUNS runs; "none" otherwise.
# claim_best FILE NORM RUNS [LAYERS]: the largest lr at which all RUNS runs
#   of NORM (at LAYERS) finished ok and did not stall; 0 when none did.
claim_gap() {
    awk -F, -v L="$2" -v K="$3" -v LR="${4:-}" '
        NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        $c["layers"] == L && (LR == "" || $c["lr"] == LR) {
            if ($c["norm"] == "post") { p += $c["val_loss"]; np++ }
            if ($c["norm"] == "pre") { q += $c["val_loss"]; nq++ }
        }
        END { if (np == K && nq == K) printf "%.4f", p / np - q / nq; else print "none" }' "$1"
}
claim_best() {
    awk -F, -v N="$2" -v K="$3" -v L="${4:-}" '
        NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        $c["norm"] == N && (L == "" || $c["layers"] == L) {
            n[$c["lr"]]++
            if ($c["stalled"] == "0" && $c["status"] == "ok") good[$c["lr"]]++
        }
        END { b = 0; for (lr in n) if (n[lr] == K && good[lr] == K && lr + 0 > b) b = lr + 0; print b }' "$1"
}
