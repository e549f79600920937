/* ops.h - forward/backward pairs of the Transformer's operations.
 * Engine-internal: only the engine's sources include it (README, Layout).
 *
 * Conventions (after llm.c): outputs first; gradients are prefixed `d` and
 * ACCUMULATED with += (callers zero them); shapes are in the comments, with
 * N = B*T rows. Everything is fp32; no allocation. Every sum has a fixed
 * order, so the same inputs give the same bits each run.
 *
 * The plain functions run on the calling thread. The _mt variants split
 * the same work over a thread pool (pool.h; NULL = the caller alone) at
 * boundaries that keep every element's order of operations, so their
 * results are bit-identical to the plain ones for any thread count;
 * problems too small to repay a dispatch stay on the caller.
 */
#ifndef NS_OPS_H
#define NS_OPS_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "pool.h"

/* out (N, C) = wte[tokens] + wpe[t]; tokens (B, T) */
void ops_encoder_forward(float *out, const uint8_t *tokens, const float *wte, const float *wpe,
                     int B, int T, int C);
void ops_encoder_backward(float *dwte, float *dwpe, const float *dout, const uint8_t *tokens,
                      int B, int T, int C);

/* LayerNorm over the last dim: out = (x - mean) * rstd * w + b.
 * mean, rstd (N) are saved for the backward. */
void ops_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w,
                       const float *b, int N, int C, float eps);
void ops_layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                        const float *w, const float *mean, const float *rstd, int N, int C);

/* RMSNorm: out = x * rstd * w, rstd = 1/sqrt(mean(x^2) + eps); no centering,
 * no bias. mean is written as 0 so both kinds share the saved-state shape. */
void ops_rmsnorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w,
                     int N, int C, float eps);
void ops_rmsnorm_backward(float *dinp, float *dw, const float *dout, const float *inp,
                      const float *w, const float *rstd, int N, int C);

/* Dynamic Tanh (Zhu et al. 2025, "Transformers without Normalization"):
 * out = w * tanh(a * x) + b with one learnable scalar a; da accumulates
 * into *da. Saves nothing: the backward recomputes tanh from inp. */
void ops_dyt_forward(float *out, const float *inp, const float *w, const float *b, float a, int N,
                 int C);
void ops_dyt_backward(float *dinp, float *dw, float *db, float *da, const float *dout,
                  const float *inp, const float *w, float a, int N, int C);

/* out (N, OC) = inp (N, C) @ w^T (OC, C) + b (OC); b may be NULL */
void ops_matmul_forward(float *out, const float *inp, const float *w, const float *b, int N, int C,
                    int OC);
void ops_matmul_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                     const float *w, int N, int C, int OC);
/* ops_matmul_forward, returning max |out| (NaN if any is NaN), taken from the
 * micro-kernel's registers as it stores out: ops_absmax's value, without
 * another pass over out */
float ops_matmul_forward_absmax(float *out, const float *inp, const float *w, const float *b, int N,
                            int C, int OC);

/* Causal multi-head self-attention. qkv (B, T, 3C) holds q, k, v side by
 * side; out (B, T, C); att (B, NH, T, T) keeps the softmax probabilities
 * (only t2 <= t is written and read). drow is no longer read (the kernels
 * keep their scratch on the stack; T <= 1024) and may be NULL. */
void ops_attention_forward(float *out, float *att, const float *qkv, int B, int T, int C, int NH);
void ops_attention_backward(float *dqkv, float *drow, const float *dout, const float *qkv,
                        const float *att, int B, int T, int C, int NH);

/* GELU, tanh approximation (as GPT-2, and torch's approximate='tanh'). */
void ops_gelu_forward(float *out, const float *inp, int n);
void ops_gelu_backward(float *dinp, const float *inp, const float *dout, int n);

/* Softmax over V and per-position cross-entropy; targets may be NULL. */
void ops_softmax_forward(float *probs, const float *logits, int N, int V);
/* losses (N) = logsumexp(logits) - logits[target], computed from the logits
 * so a tiny probability does not round to a zero and an infinite loss. */
void ops_crossentropy_forward(float *losses, const float *logits, const uint8_t *targets, int N,
                          int V);
/* ops_crossentropy_forward that also writes each row's logsumexp (log Z) to
 * logz and its largest logit to lmax (N each; either may be NULL), which
 * it computes anyway. */
void ops_crossentropy_forward_z(float *losses, float *logz, float *lmax, const float *logits,
                            const uint8_t *targets, int N, int V);
/* dlogits (N, V) = d (CE + z mean (log Z)^2) / d logits, times scale:
 * (probs (1 + 2 z logz[row]) - onehot(target)) * scale, the z-loss's
 * gradient 2 z log Z softmax (Chowdhery et al. 2022) added to the
 * cross-entropy's. Set, not accumulated; returns whether any of dlogits
 * is inf or NaN. */
int ops_crossentropy_zloss_backward_set(float *dlogits, const float *probs, const float *logz,
                                    const uint8_t *targets, int N, int V, float scale, float z);
/* dlogits (N, V) += (probs - onehot(target)) * scale */
void ops_crossentropy_softmax_backward(float *dlogits, const float *probs, const uint8_t *targets,
                                   int N, int V, float scale);
/* the same set (=) instead of accumulated; returns whether any of dlogits
 * is inf or NaN, each row checked as it is written */
int ops_crossentropy_softmax_backward_set(float *dlogits, const float *probs,
                                      const uint8_t *targets, int N, int V, float scale);

/* y (n) += a * x (n) */
void ops_axpy(float *restrict y, float a, const float *restrict x, int n);
/* max |x| over n values; NaN if any value is NaN */
float ops_absmax(const float *x, long n);
/* the larger of two such maxima, NaN if either is NaN: how the maxima of
 * parts fold into the whole's */
static inline float ops_max_nan(float a, float b)
{
    return (a != a || b != b) ? NAN : (a > b ? a : b);
}

/* out (n) = a x + g f: each product rounded, then their sum (no fused
 * multiply-add, so both paths give the same bits); returns max |out|
 * (NaN if any is NaN), taken while writing it */
float ops_residual(float *out, const float *x, float a, const float *f, float g, long n);

/* Fused forms for the forward's and backward's watch (the largest |x| of
 * an output, whether it holds inf or NaN), taken while the kernel writes
 * the output instead of in another pass over it. Each gives the bits of
 * its plain kernel and, for the maximum, of ops_absmax on the same path:
 *   ops_layernorm_forward_absmax, ops_gelu_forward_absmax: the plain forward,
 *     returning max |out| (NaN if any is NaN);
 *   ops_gelu_backward_set: dinp = dout * gelu'(inp) (set, not accumulated),
 *     returning GELU_BAD_DINP if any of dinp is infinite or NaN, or'd
 *     with GELU_BAD_DOUT if any of dout is (the watch of the op that made
 *     dout, which the kernel reads anyway). */
enum { GELU_BAD_DINP = 1, GELU_BAD_DOUT = 2 };
float ops_layernorm_forward_absmax(float *out, float *mean, float *rstd, const float *inp,
                               const float *w, const float *b, int N, int C, float eps);
float ops_gelu_forward_absmax(float *out, const float *inp, int n);
/* ops_layernorm_backward, returning whether any of dinp is inf or NaN after
 * it (each row checked as it is written) */
int ops_layernorm_backward_watch(float *dinp, float *dw, float *db, const float *dout,
                             const float *inp, const float *w, const float *mean,
                             const float *rstd, int N, int C);
int ops_gelu_backward_set(float *dinp, const float *inp, const float *dout, int n);
/* The GELU's derivative made once, by the forward: ops_gelu_forward_grad_absmax
 * is ops_gelu_forward_absmax that also writes grad (n) = gelu'(inp), which may
 * be inp itself (overwritten in place: the backward needs no more of x);
 * ops_gelu_backward_grad_set is ops_gelu_backward_set reading that grad instead of
 * x. Together they give the bits of the plain pair with one exp a value,
 * not two. */
float ops_gelu_forward_grad_absmax(float *out, float *grad, const float *inp, int n);
int ops_gelu_backward_grad_set(float *dinp, const float *grad, const float *dout, int n);

/* out (n) = exp(x) by the kernels' vector exp, whose bits ns_expf
 * (nsmath.h) gives one value at a time */
void ops_exp(float *out, const float *x, long n);

/* Is any of x (n) infinite or NaN? */
int ops_any_nonfinite(const float *x, size_t n);

/* The sum of x[i]^2 (n values) in double. A float's square is exact in
 * double, so the only roundings are the adds, and their order is fixed:
 * 16 lanes (value i of the whole blocks of 16, and of the tail, to lane
 * i mod 16), then lane j + lane j+4 + lane j+8 + lane j+12 as
 * (j + (j+4)) + ((j+8) + (j+12)), then (0 + 2) + (1 + 3). Both paths give
 * these bits. */
double ops_sumsq(const float *x, size_t n);

/* One AdamW step (torch.optim.AdamW's algorithm: decay, then the
 * bias-corrected Adam step) over n values:
 *     gi = g * grad_scale
 *     m  = beta1 m + (1 - beta1) gi          v = beta2 v + (1 - beta2) gi gi
 *     p  = p decay - step m / (sqrt(v) / bc2_sqrt + eps)
 * each operation rounded to float, no fused multiply-add, so both paths
 * give the same p, m and v. sums[0] += the squared changes of p, sums[1]
 * += the squares of the new p, both in double over 8 lanes (value i to
 * lane i mod 8; then (j + (j+4)), j = 0..3, then (0 + 2) + (1 + 3)). */
typedef struct {
    float grad_scale, beta1, beta2, decay, step, bc2_sqrt, eps;
} ops_adamw_args;
void ops_adamw(float *p, const float *g, float *m, float *v, size_t n, const ops_adamw_args *a,
               double sums[2]);

/* The hot kernels come in two builds with the same bits on every CPU:
 * x86 AVX2+FMA, and portable C. By default the AVX2 one runs where the
 * CPU has AVX2 and FMA. ops_select_kernels(name) chooses: "generic",
 * "avx2", or NULL / "" for that default; it returns 0, or -1 for an
 * unknown name, -2 for "avx2" on a CPU without it. Until something
 * chooses, the first kernel call reads NORMSCOPE_KERNELS. ops_isa names
 * the build in use ("avx2+fma" or "generic"); ops_force_generic(1) makes
 * every kernel take the portable build whatever was chosen (tests compare
 * the two; neither is meant to be flipped while another thread is inside
 * a kernel). */
enum { OPS_KERNELS_GENERIC, OPS_KERNELS_AVX2 };
int ops_select_kernels(const char *name);
const char *ops_isa(void);
void ops_force_generic(int on);

/* The same operations, split over pool p (see the top of this file). */
void ops_layernorm_forward_mt(ns_pool *p, float *out, float *mean, float *rstd, const float *inp,
                          const float *w, const float *b, int N, int C, float eps);
void ops_layernorm_backward_mt(ns_pool *p, float *dinp, float *dw, float *db, const float *dout,
                           const float *inp, const float *w, const float *mean, const float *rstd,
                           int N, int C);
void ops_matmul_forward_mt(ns_pool *p, float *out, const float *inp, const float *w, const float *b,
                       int N, int C, int OC);
float ops_matmul_forward_absmax_mt(ns_pool *p, float *out, const float *inp, const float *w,
                               const float *b, int N, int C, int OC);
void ops_matmul_backward_mt(ns_pool *p, float *dinp, float *dw, float *db, const float *dout,
                        const float *inp, const float *w, int N, int C, int OC);
void ops_attention_forward_mt(ns_pool *p, float *out, float *att, const float *qkv, int B, int T,
                          int C, int NH);
/* drow: as ops_attention_backward's, unread */
void ops_attention_backward_mt(ns_pool *p, float *dqkv, float *drow, const float *dout,
                           const float *qkv, const float *att, int B, int T, int C, int NH);
void ops_gelu_forward_mt(ns_pool *p, float *out, const float *inp, int n);
void ops_gelu_backward_mt(ns_pool *p, float *dinp, const float *inp, const float *dout, int n);
float ops_absmax_mt(ns_pool *p, const float *x, long n);
/* dinp set to dout @ w (each element the same chain of products as
 * ops_matmul_backward's, started from 0 rather than added to dinp), dw and db
 * accumulated: saves zeroing dinp first */
void ops_matmul_backward_set_mt(ns_pool *p, float *dinp, float *dw, float *db, const float *dout,
                            const float *inp, const float *w, int N, int C, int OC);
/* ops_matmul_backward_mt with flags: MM_DINP_SET sets dinp as
 * ops_matmul_backward_set_mt does; MM_DW_ZERO takes dw's old value as +0
 * without reading it (the bits of += onto a zeroed dw, so dw's memory
 * need not be zeroed first); db is accumulated either way */
enum { MM_DINP_SET = 1, MM_DW_ZERO = 2 };
void ops_matmul_backward_flags_mt(ns_pool *p, float *dinp, float *dw, float *db, const float *dout,
                              const float *inp, const float *w, int N, int C, int OC, int flags);
float ops_layernorm_forward_absmax_mt(ns_pool *p, float *out, float *mean, float *rstd,
                                  const float *inp, const float *w, const float *b, int N, int C,
                                  float eps);
float ops_gelu_forward_absmax_mt(ns_pool *p, float *out, const float *inp, int n);
int ops_layernorm_backward_watch_mt(ns_pool *p, float *dinp, float *dw, float *db,
                                const float *dout, const float *inp, const float *w,
                                const float *mean, const float *rstd, int N, int C);
int ops_gelu_backward_set_mt(ns_pool *p, float *dinp, const float *inp, const float *dout, int n);
float ops_gelu_forward_grad_absmax_mt(ns_pool *p, float *out, float *grad, const float *inp, int n);
int ops_gelu_backward_grad_set_mt(ns_pool *p, float *dinp, const float *grad, const float *dout,
                              int n);
float ops_residual_mt(ns_pool *p, float *out, const float *x, float a, const float *f, float g,
                      long n);

#endif
