/* ops_simd.h - private to the ops sources: the table of hot kernels.
 *
 * The kernels of ops_kern.h are built twice, with the same bits: over
 * AVX2+FMA registers (ops_avx2.c, x86 only) and over plain C
 * (ops_generic.c, any CPU). ops.c picks one table at run time: the
 * environment's NORMSCOPE_KERNELS (generic or avx2), else AVX2 when the
 * CPU has it (__builtin_cpu_supports). Contracts are those of ops.h; the
 * gemm micro-kernel's is below. Not a public header.
 */
#ifndef NS_OPS_SIMD_H
#define NS_OPS_SIMD_H

#include <stddef.h>

#include "ops.h"

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define NS_OPS_X86 1
#else
#define NS_OPS_X86 0
#endif

/* Register tile of the gemm micro-kernels: MR rows x NR columns of C.
 * A packed A block is a column of micro-panels, each kc x OPS_MR
 * (row i of A at [k * OPS_MR + i]) followed by OPS_APAD floats of slack,
 * so micro-panel p starts at p * (kc * OPS_MR + OPS_APAD). */
enum { OPS_MR = 6, OPS_NR = 16, OPS_APAD = 8 };

/* largest T the attention backward takes (its scratch is on the stack;
 * --context allows no more) */
enum { OPS_ATT_TMAX = 1024 };

typedef struct {
    /* The gemm micro-kernel. C (mr x nr, row stride ldc; mr <= OPS_MR,
     * nr <= OPS_NR) gets, with each sum taken in increasing k, one fused
     * multiply-add per term,
     *     accumulate:  C[i][j] = C[i][j] + (sum_{k < kc} A(i, k) * bp[k * OPS_NR + j])
     *     otherwise:   C[i][j] = bias[j] + A(i, 0) B(0, j) + A(i, 1) B(1, j) + ...
     * (bias may be NULL: 0). The accumulating form adds C last, so the old
     * C is read only after the products (its cache misses overlap them).
     * accumulate == 2 is that form on a C of +0 whose memory is not read
     * (+0 + sum: the bits of accumulating onto a zeroed C).
     * A(i, k) = a[i * rsa + k * csa]; bp is a packed panel of kc rows of
     * OPS_NR floats, zero past column nr. Rows i >= mr are never read or
     * written.
     * With amax (not NULL: 16 floats, zero to start), the tile's max |C|
     * as stored is taken in while C is in registers: amax[0..7] the lanes'
     * maxima, amax[8..15] nonzero bits in a lane that saw a NaN
     * (ops_amax_lanes folds them), so no pass over C is left for it. */
    void (*gemm_ukr)(int kc, const float *a, long rsa, long csa, int mr, const float *bp,
                     float *c, long ldc, int nr, const float *bias, int accumulate,
                     float *amax);
    /* db (n) += the column sums of d (N rows, row stride ld), each in row order */
    void (*colsum)(float *db, const float *d, long ld, int N, int n);
    void (*attention_forward)(float *out, float *att, const float *qkv, int B, int T, int C,
                              int NH);
    void (*attention_backward)(float *dqkv, const float *dout, const float *qkv,
                               const float *att, int B, int T, int C, int NH);
    /* grad NULL or gelu'(inp) (may be inp); amax NULL or *amax = max |out| */
    void (*gelu_forward)(float *out, float *grad, const float *inp, int n, float *amax);
    /* set: dinp = (else +=); is_grad: inp holds gelu'(x), not x; returns
     * the GELU_BAD_ flags of ops_gelu_backward_set */
    int (*gelu_backward)(float *dinp, const float *inp, const float *dout, int n, int set,
                         int is_grad);
    void (*softmax_forward)(float *probs, const float *logits, int N, int V);
    /* sum_i exp(l[i] - max) over a row of n, and its max in *maxv */
    float (*sumexp)(const float *l, int n, float *maxv);
    /* amax NULL or *amax = max |out| */
    void (*layernorm_forward)(float *out, float *mean, float *rstd, const float *inp,
                              const float *w, const float *b, int N, int C, float eps,
                              float *amax);
    /* dinp NULL: only dw, db for columns [c0, c1) (c0 a multiple of 8);
     * dw NULL: only dinp; returns whether any of dinp is inf or NaN */
    int (*layernorm_backward)(float *dinp, float *dw, float *db, const float *dout,
                              const float *inp, const float *w, const float *mean,
                              const float *rstd, int N, int C, int c0, int c1);
    float (*absmax)(const float *x, long n);
    float (*residual)(float *out, const float *x, float a, const float *f, float g, long n);
    int (*any_nonfinite)(const float *x, size_t n);
    double (*sumsq)(const float *x, size_t n);
    void (*adamw)(float *p, const float *g, float *m, float *v, size_t n,
                  const ops_adamw_args *a, double sums[2]);
    void (*exp)(float *out, const float *x, long n);
} ops_kernels;

extern const ops_kernels ops_kernels_generic;

/* B's kc x nc block (B(k, j) = b[k * rsb + j * csb]) as panels of
 * kc x OPS_NR, panel p at bp + p * OPS_NR * kc, zero past nc */
void ops_generic_pack_b(float *bp, const float *b, long rsb, long csb, int kc, int nc);

#if NS_OPS_X86
extern const ops_kernels ops_kernels_avx2;

/* the same packing for csb == 1 or rsb == 1 */
void ops_avx2_gemm_pack_b(float *bp, const float *b, long rsb, long csb, int kc, int nc);
/* A's mc x kc block, A(i, k) = a[i + k * csa], packed as above; rows past
 * mc repeat their micro-panel's first row */
void ops_avx2_gemm_pack_a(float *ap, const float *a, long csa, int mc, int kc);
#endif

#endif
