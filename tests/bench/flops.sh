# flops.sh - the model's size and FLOPs per step, for the bench scripts
# (sourced: . tests/bench/flops.sh). Both count as src/model.c and
# tests/bench/torch_peer.py do.

# parameters: embeddings, L blocks of 12 d^2 + 13 d, final norm, head with
# bias (V = 256 byte values)
params() { # L d T
    awk -v L="$1" -v d="$2" -v T="$3" 'BEGIN {V = 256; printf "%d", V*d + T*d + L*(12*d*d + 13*d) + 2*d + V*d + V}'
}

# model GFLOP per step: 6 x parameters x tokens (forward + backward of every
# weight) + 12 x L x T x d x tokens for attention (PaLM's convention: both
# attention matmuls, forward and backward, counted without the causal half)
gflop() { # L d T B
    awk -v p="$(params "$1" "$2" "$3")" -v L="$1" -v d="$2" -v T="$3" -v B="$4" \
        'BEGIN {n = B * T; printf "%.4f", (6 * p * n + 12 * L * T * d * n) / 1e9}'
}
