/* ops_kern.h - the hot kernels, written once over eight float lanes.
 *
 * Included by ops_avx2.c (v8 = an AVX2 register, compiled for avx2,fma)
 * and by ops_generic.c (v8 = eight floats in plain C), after ops_v8.h and
 * after each has defined the two packing routines the tiled attention
 * uses:
 *     pack_tr(dst, src, rs, kc, nc)   B(k, j) = src[j * rs + k]
 *     pack_cp(dst, src, rs, kc, nc)   B(k, j) = src[k * rs + j]
 * (panels of kc x OPS_NR, zero past nc: see ops_simd.h), and
 * OPS_KERN_TABLE, the name of the ops_kernels table this file fills in.
 * Both builds run the same operations in the same order on every lane,
 * so they give the same bits (tests/unit/test_ops.c, tests/sh/kernels.sh).
 *
 * Every sum has an order fixed by the code (lanes, then a fixed
 * reduction tree), so the same inputs give the same bits on every run.
 * Tails use masked loads (which never touch the masked-off memory) and
 * masked stores, so no kernel reads or writes past its arrays.
 * Not a header to include anywhere else.
 */

#define KERN_INLINE V8_INLINE
#ifndef KERN_FN
#define KERN_FN
#endif

/* A maximum of |x| taken while a kernel writes x: the largest so far in
 * each lane and the lanes that saw a NaN. The maximum is exact whatever
 * the order, so it equals kern_absmax over what was written. */
typedef struct {
    v8 m, bad;
} amax8;

KERN_INLINE amax8 amax_init(void) { return (amax8){v8_zero(), v8_zero()}; }

/* take in the first k (1..8) lanes of v */
KERN_INLINE void amax_add(amax8 *a, v8 v, int k)
{
    v8 x = v8_abs(v);
    if (k < 8)
        x = v8_and(x, v8_first((k)));
    a->bad = v8_or(a->bad, v8_unord(x, x));
    a->m = v8_max(a->m, x);
}

KERN_INLINE float amax_result(amax8 a) { return v8_any_sign(a.bad) ? NAN : v8_hmax(a.m); }

/* exp(x) within about 2 ulp (Cephes expf: x = n ln2 + r, its degree-7
 * polynomial in r, times 2^n). Below -87 it returns 0 (the true value is
 * under the smallest normal float); above 88.3 it returns exp(88.3), a
 * finite 2.2e38, not inf (softmax never gets there; GELU's backward relies
 * on it: it multiplies e by a vanishing s^2); NaN stays NaN. ns_expf
 * (nsmath.c) is its scalar twin, bit for bit. */
#define EXP8_HI 88.3f
KERN_INLINE v8 exp8(v8 x)
{
    const v8 lo = v8_set1(-87.0f), hi = v8_set1(EXP8_HI);
    v8 under = v8_lt(x, lo);
    /* max/min return their second operand when either is NaN: NaN passes */
    v8 xc = v8_min(hi, v8_max(lo, x));
    v8 fn = v8_round(v8_mul(xc, v8_set1(1.44269504088896341f)));
    v8 r = v8_fnma(fn, v8_set1(0.693359375f), xc);
    r = v8_fnma(fn, v8_set1(-2.12194440e-4f), r);
    /* 1 + r + r^2 q(r), q of degree 5 by Estrin's scheme (a shorter
     * chain of dependent operations than Horner's) */
    v8 r2 = v8_mul(r, r), r4 = v8_mul(r2, r2);
    v8 e0 =
        v8_fma(v8_set1(1.6666665459e-1f), r, v8_set1(5.0000001201e-1f));
    v8 e1 =
        v8_fma(v8_set1(8.3334519073e-3f), r, v8_set1(4.1665795894e-2f));
    v8 e2 =
        v8_fma(v8_set1(1.9875691500e-4f), r, v8_set1(1.3981999507e-3f));
    v8 p = v8_fma(e2, r4, v8_fma(e1, r2, e0));
    p = v8_add(v8_fma(p, r2, r), v8_set1(1.0f));
    return v8_andnot(under, v8_mul(p, v8_pow2n(fn)));
}

/* out (n) = exp8 of x (n): the kernels' exp, for tests and scalar twins */
KERN_FN static void kern_exp(float *out, const float *x, long n)
{
    for (long i = 0; i < n; i += 8) {
        int k = n - i < 8 ? (int)(n - i) : 8;
        v8_store_n(out + i, exp8(v8_load_n(x + i, k)), k);
    }
}

/* ---- gemm micro-kernel ------------------------------------------------ */

/* lanes (m: 8 maxima, then 8 NaN marks) take in the tile's rows 0..mr-1,
 * columns 0..nr-1 (the rest of the registers is never stored) */
KERN_INLINE void tile_amax(float *lanes, int mr, int nr, v8 c00, v8 c01, v8 c10, v8 c11, v8 c20,
                           v8 c21, v8 c30, v8 c31, v8 c40, v8 c41, v8 c50, v8 c51)
{
    amax8 a = {v8_loadu(lanes), v8_loadu(lanes + 8)};
    const v8 r[OPS_MR][2] = {{c00, c01}, {c10, c11}, {c20, c21},
                             {c30, c31}, {c40, c41}, {c50, c51}};
    for (int i = 0; i < mr; i++) {
        amax_add(&a, r[i][0], nr < 8 ? nr : 8);
        if (nr > 8)
            amax_add(&a, r[i][1], nr - 8);
    }
    v8_storeu(lanes, a.m);
    v8_storeu(lanes + 8, a.bad);
}

KERN_FN static void kern_gemm_ukr(int kc, const float *a, long rsa, long csa, int mr, const float *bp,
                               float *c, long ldc, int nr, const float *bias, int accumulate,
                               float *amax)
{
    /* rows past mr repeat row 0: computed, never stored */
    const float *a0 = a, *a1 = mr > 1 ? a + rsa : a, *a2 = mr > 2 ? a + 2 * rsa : a,
                *a3 = mr > 3 ? a + 3 * rsa : a, *a4 = mr > 4 ? a + 4 * rsa : a,
                *a5 = mr > 5 ? a + 5 * rsa : a;
    _Alignas(32) float tile[OPS_MR * OPS_NR];
    int full = mr == OPS_MR && nr == OPS_NR;
    v8 c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51;
    v8 i0 = v8_zero(), i1 = v8_zero(); /* initial row */
    if (accumulate == 1) {
        /* C is added after the products: fetch it meanwhile */
        for (int i = 0; i < mr; i++) {
            v8_prefetch((c + i * ldc));
            v8_prefetch((c + i * ldc + nr - 1));
        }
    } else if (bias) {
        i0 = v8_load_n(bias, nr);
        if (nr > 8)
            i1 = v8_load_n(bias + 8, nr - 8);
    }
    c00 = c10 = c20 = c30 = c40 = c50 = i0;
    c01 = c11 = c21 = c31 = c41 = c51 = i1;
    long off = 0;
#pragma GCC unroll 4
    for (int k = 0; k < kc; k++) {
        v8 b0 = v8_load(bp), b1 = v8_load(bp + 8);
        bp += OPS_NR;
        v8 av = v8_bcast(a0 + off);
        c00 = v8_fma(av, b0, c00), c01 = v8_fma(av, b1, c01);
        av = v8_bcast(a1 + off);
        c10 = v8_fma(av, b0, c10), c11 = v8_fma(av, b1, c11);
        av = v8_bcast(a2 + off);
        c20 = v8_fma(av, b0, c20), c21 = v8_fma(av, b1, c21);
        av = v8_bcast(a3 + off);
        c30 = v8_fma(av, b0, c30), c31 = v8_fma(av, b1, c31);
        av = v8_bcast(a4 + off);
        c40 = v8_fma(av, b0, c40), c41 = v8_fma(av, b1, c41);
        av = v8_bcast(a5 + off);
        c50 = v8_fma(av, b0, c50), c51 = v8_fma(av, b1, c51);
        off += csa;
    }
    float *dst = full ? c : tile;
    long ld = full ? ldc : OPS_NR;
    if (accumulate == 2) {
        /* C is taken as +0 (its memory is not read): +0 + sum, the bits of
         * accumulating onto a zeroed C (a sum of -0 becomes +0 there too) */
        const v8 z = v8_zero();
        c00 = v8_add(z, c00), c01 = v8_add(z, c01), c10 = v8_add(z, c10);
        c11 = v8_add(z, c11), c20 = v8_add(z, c20), c21 = v8_add(z, c21);
        c30 = v8_add(z, c30), c31 = v8_add(z, c31), c40 = v8_add(z, c40);
        c41 = v8_add(z, c41), c50 = v8_add(z, c50), c51 = v8_add(z, c51);
    } else if (accumulate) {
        const float *src = c;
        if (!full) {
            memset(tile, 0, sizeof tile);
            for (int i = 0; i < mr; i++)
                memcpy(tile + i * OPS_NR, c + i * ldc, sizeof(float) * (size_t)nr);
            src = tile;
        }
        c00 = v8_add(v8_loadu(src), c00);
        c01 = v8_add(v8_loadu(src + 8), c01);
        c10 = v8_add(v8_loadu(src + ld), c10);
        c11 = v8_add(v8_loadu(src + ld + 8), c11);
        c20 = v8_add(v8_loadu(src + 2 * ld), c20);
        c21 = v8_add(v8_loadu(src + 2 * ld + 8), c21);
        c30 = v8_add(v8_loadu(src + 3 * ld), c30);
        c31 = v8_add(v8_loadu(src + 3 * ld + 8), c31);
        c40 = v8_add(v8_loadu(src + 4 * ld), c40);
        c41 = v8_add(v8_loadu(src + 4 * ld + 8), c41);
        c50 = v8_add(v8_loadu(src + 5 * ld), c50);
        c51 = v8_add(v8_loadu(src + 5 * ld + 8), c51);
    }
    if (amax)
        tile_amax(amax, mr, nr, c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51);
    v8_storeu(dst, c00), v8_storeu(dst + 8, c01);
    v8_storeu(dst + ld, c10), v8_storeu(dst + ld + 8, c11);
    v8_storeu(dst + 2 * ld, c20), v8_storeu(dst + 2 * ld + 8, c21);
    v8_storeu(dst + 3 * ld, c30), v8_storeu(dst + 3 * ld + 8, c31);
    v8_storeu(dst + 4 * ld, c40), v8_storeu(dst + 4 * ld + 8, c41);
    v8_storeu(dst + 5 * ld, c50), v8_storeu(dst + 5 * ld + 8, c51);
    if (!full)
        for (int i = 0; i < mr; i++)
            memcpy(c + i * ldc, tile + i * OPS_NR, sizeof(float) * (size_t)nr);
}

/* db (n) += column sums of d (N rows of n, row stride ld), each column
 * summed over the rows in order with plain adds: the same bits as the
 * portable loop in ops.c. 64 columns at a time stay in registers. */
KERN_FN static void kern_colsum(float *db, const float *d, long ld, int N, int n)
{
    for (int j0 = 0; j0 < n; j0 += 64) {
        int m = n - j0 < 64 ? n - j0 : 64;
        v8 acc[8];
        for (int v = 0; v < 8; v++)
            acc[v] = v8_zero();
        if (m == 64) {
            for (int r = 0; r < N; r++) {
                const float *row = d + r * ld + j0;
#pragma GCC unroll 8
                for (int v = 0; v < 8; v++)
                    acc[v] = v8_add(acc[v], v8_loadu(row + 8 * v));
            }
        } else {
            for (int r = 0; r < N; r++)
                for (int v = 0; v * 8 < m; v++)
                    acc[v] = v8_add(acc[v], v8_load_n(d + r * ld + j0 + 8 * v, m - 8 * v));
        }
        for (int v = 0; v * 8 < m; v++)
            v8_store_n(db + j0 + 8 * v, v8_add(v8_load_n(db + j0 + 8 * v, m - 8 * v), acc[v]),
                    m - 8 * v);
    }
}

/* ---- attention, a row at a time --------------------------------------------
 * The fallback for shapes whose panels do not fit the tiled kernels'
 * stack buffers (further below): no scratch beyond 4 rows of T floats. */

/* Lane j = q . k[j] over hs. Per key the products go to 8 lanes by
 * position mod 8, which are then added in the tree of hsum. */
KERN_INLINE v8 dot8(const float *q, const float *const k[8], int hs)
{
    v8 s0 = v8_zero(), s1 = s0, s2 = s0, s3 = s0, s4 = s0, s5 = s0, s6 = s0, s7 = s0;
    for (int d = 0; d < hs; d += 8) {
        int n = hs - d;
        v8 qv = v8_load_n(q + d, n);
        s0 = v8_fma(qv, v8_load_n(k[0] + d, n), s0);
        s1 = v8_fma(qv, v8_load_n(k[1] + d, n), s1);
        s2 = v8_fma(qv, v8_load_n(k[2] + d, n), s2);
        s3 = v8_fma(qv, v8_load_n(k[3] + d, n), s3);
        s4 = v8_fma(qv, v8_load_n(k[4] + d, n), s4);
        s5 = v8_fma(qv, v8_load_n(k[5] + d, n), s5);
        s6 = v8_fma(qv, v8_load_n(k[6] + d, n), s6);
        s7 = v8_fma(qv, v8_load_n(k[7] + d, n), s7);
    }
    /* transpose-and-add: lane j ends as ((s_j0+s_j1)+(s_j2+s_j3)) + ((s_j4+s_j5)+(s_j6+s_j7)) */
    const v8 s[8] = {s0, s1, s2, s3, s4, s5, s6, s7};
    return v8_sum8(s);
}

/* row[t2] = (q . key(t2)) * scale for t2 = 0..n-1, keys rows ks floats apart */
KERN_INLINE void dot_row(float *row, const float *q, const float *key0, long ks, int n, int hs,
                            float scale)
{
    v8 sc = v8_set1(scale);
    for (int t2 = 0; t2 < n; t2 += 8) {
        int m = n - t2;
        const float *k[8];
        for (int j = 0; j < 8; j++)
            k[j] = key0 + (t2 + (j < m ? j : 0)) * ks; /* past n: a valid row, result unused */
        v8_store_n(row + t2, v8_mul(dot8(q, k, hs), sc), m);
    }
}

/* a[0..n) = softmax(a[0..n)) in place */
KERN_INLINE void softmax_row(float *a, int n)
{
    v8 vm = v8_set1(-INFINITY);
    for (int i = 0; i < n; i += 8) {
        int m = n - i;
        v8 x = v8_load_n(a + i, m);
        if (m < 8)
            x = v8_blend(v8_set1(-INFINITY), x, v8_first((m)));
        vm = v8_max(vm, x);
    }
    v8 mx = v8_set1(v8_hmax(vm)), vs = v8_zero();
    for (int i = 0; i < n; i += 8) {
        int m = n - i;
        v8 e = exp8(v8_sub(v8_load_n(a + i, m), mx));
        if (m < 8)
            e = v8_and(e, v8_first((m)));
        vs = v8_add(vs, e);
        v8_store_n(a + i, e, m);
    }
    v8 inv = v8_set1(1.0f / v8_hsum(vs));
    for (int i = 0; i < n; i += 8) {
        int m = n - i;
        v8_store_n(a + i, v8_mul(v8_load_n(a + i, m), inv), m);
    }
}

/* out row t0+r (r < R) = sum_{t2 <= t0+r} p_r[t2] v(t2), R query rows at
 * once so each v row is loaded once for all of them; each output sums
 * over t2 in increasing order. */
KERN_INLINE void pv_rows(float *out, long os, const float *const p[4], const float *v, long vs,
                            int t0, int hs, int R)
{
    for (int d = 0; d < hs; d += 8) {
        int n = hs - d;
        v8 acc[4] = {v8_zero(), v8_zero(), v8_zero(),
                         v8_zero()};
        for (int t2 = 0; t2 <= t0; t2++) {
            v8 vv = v8_load_n(v + t2 * vs + d, n);
#pragma GCC unroll 4
            for (int r = 0; r < R; r++)
                acc[r] = v8_fma(v8_bcast(p[r] + t2), vv, acc[r]);
        }
#pragma GCC unroll 4
        for (int j = 1; j < R; j++) { /* t2 = t0 + j: rows r >= j only */
            v8 vv = v8_load_n(v + (t0 + j) * vs + d, n);
#pragma GCC unroll 4
            for (int r = j; r < R; r++)
                acc[r] = v8_fma(v8_bcast(p[r] + t0 + j), vv, acc[r]);
        }
#pragma GCC unroll 4
        for (int r = 0; r < R; r++)
            v8_store_n(out + r * os + d, acc[r], n);
    }
}

/* The row-at-a-time forward: for shapes whose (b, h) panels do not fit
 * the stack buffers of the tiled one below. */
KERN_FN static void attention_forward_rows(float *out, float *att, const float *qkv, int B, int T,
                                           int C, int NH)
{
    int hs = C / NH;
    long C3 = 3L * C;
    float scale = 1.0f / sqrtf((float)hs);
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < NH; h++) {
            const float *q0 = qkv + (long)b * T * C3 + h * hs;
            const float *k0 = q0 + C, *v0 = q0 + 2 * C;
            float *a0 = att + ((long)b * NH + h) * T * T;
            float *o0 = out + (long)b * T * C + h * hs;
            for (int t0 = 0; t0 < T; t0 += 4) {
                int R = T - t0 < 4 ? T - t0 : 4;
                const float *p[4];
                for (int r = 0; r < 4; r++) {
                    int t = t0 + (r < R ? r : R - 1);
                    float *a = a0 + (long)t * T;
                    p[r] = a;
                    if (r < R) {
                        dot_row(a, q0 + t * C3, k0, C3, t + 1, hs, scale);
                        softmax_row(a, t + 1);
                    }
                }
                float *o = o0 + (long)t0 * C;
                switch (R) {
                case 4: pv_rows(o, C, p, v0, C3, t0, hs, 4); break;
                case 3: pv_rows(o, C, p, v0, C3, t0, hs, 3); break;
                case 2: pv_rows(o, C, p, v0, C3, t0, hs, 2); break;
                default: pv_rows(o, C, p, v0, C3, t0, hs, 1); break;
                }
            }
        }
    }
}

/* For R query rows t0+r: dk(t2) += ds_r[t2] q_r and dq_r += ds_r[t2] k(t2)
 * over t2 <= t0+r; then dv(t2) += p_r[t2] dy_r. Each dk and dv row takes
 * its terms in increasing t, the order a row-at-a-time loop would give. */
KERN_INLINE void attn_bwd_rows(float *dq0, float *dk0, float *dv0, const float *q0,
                                  const float *k0, const float *dy0, long rs, long dys,
                                  const float *const ds[4], const float *const p[4], int t0, int hs,
                                  int R)
{
    for (int d = 0; d < hs; d += 8) {
        int n = hs - d;
        v8 qr[4], acc[4];
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            qr[r] = v8_load_n(q0 + (t0 + r) * rs + d, n);
            acc[r] = v8_zero();
        }
        for (int t2 = 0; t2 <= t0; t2++) {
            v8 kv = v8_load_n(k0 + t2 * rs + d, n);
            v8 dk = v8_load_n(dk0 + t2 * rs + d, n);
#pragma GCC unroll 4
            for (int r = 0; r < R; r++) {
                v8 s = v8_bcast(ds[r] + t2);
                dk = v8_fma(s, qr[r], dk);
                acc[r] = v8_fma(s, kv, acc[r]);
            }
            v8_store_n(dk0 + t2 * rs + d, dk, n);
        }
#pragma GCC unroll 4
        for (int j = 1; j < R; j++) {
            int t2 = t0 + j;
            v8 kv = v8_load_n(k0 + t2 * rs + d, n);
            v8 dk = v8_load_n(dk0 + t2 * rs + d, n);
#pragma GCC unroll 4
            for (int r = j; r < R; r++) {
                v8 s = v8_bcast(ds[r] + t2);
                dk = v8_fma(s, qr[r], dk);
                acc[r] = v8_fma(s, kv, acc[r]);
            }
            v8_store_n(dk0 + t2 * rs + d, dk, n);
        }
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            float *dq = dq0 + (t0 + r) * rs + d;
            v8_store_n(dq, v8_add(v8_load_n(dq, n), acc[r]), n);
        }
    }
    for (int d = 0; d < hs; d += 8) {
        int n = hs - d;
        v8 dy[4];
#pragma GCC unroll 4
        for (int r = 0; r < R; r++)
            dy[r] = v8_load_n(dy0 + (t0 + r) * dys + d, n);
        for (int t2 = 0; t2 <= t0; t2++) {
            v8 dv = v8_load_n(dv0 + t2 * rs + d, n);
#pragma GCC unroll 4
            for (int r = 0; r < R; r++)
                dv = v8_fma(v8_bcast(p[r] + t2), dy[r], dv);
            v8_store_n(dv0 + t2 * rs + d, dv, n);
        }
#pragma GCC unroll 4
        for (int j = 1; j < R; j++) {
            int t2 = t0 + j;
            v8 dv = v8_load_n(dv0 + t2 * rs + d, n);
#pragma GCC unroll 4
            for (int r = j; r < R; r++)
                dv = v8_fma(v8_bcast(p[r] + t2), dy[r], dv);
            v8_store_n(dv0 + t2 * rs + d, dv, n);
        }
    }
}

KERN_FN static void attention_backward_rows(float *dqkv, const float *dout, const float *qkv,
                                            const float *att, int B, int T, int C, int NH)
{
    int hs = C / NH;
    long C3 = 3L * C;
    float scale = 1.0f / sqrtf((float)hs);
    float dsb[4][OPS_ATT_TMAX];
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < NH; h++) {
            const float *q0 = qkv + (long)b * T * C3 + h * hs;
            const float *k0 = q0 + C, *v0 = q0 + 2 * C;
            float *dq0 = dqkv + (long)b * T * C3 + h * hs;
            float *dk0 = dq0 + C, *dv0 = dq0 + 2 * C;
            const float *dy0 = dout + (long)b * T * C + h * hs;
            const float *a0 = att + ((long)b * NH + h) * T * T;
            for (int t0 = 0; t0 < T; t0 += 4) {
                int R = T - t0 < 4 ? T - t0 : 4;
                const float *p[4], *ds[4];
                for (int r = 0; r < R; r++) {
                    int t = t0 + r, n = t + 1;
                    const float *a = a0 + (long)t * T;
                    float *s = dsb[r];
                    p[r] = a, ds[r] = s;
                    /* datt[t2] = dy . v(t2), then the softmax backward:
                     * ds = a (datt - sum_t2 a datt) * scale */
                    dot_row(s, dy0 + (long)t * C, v0, C3, n, hs, 1.0f);
                    v8 acc = v8_zero();
                    for (int i = 0; i < n; i += 8)
                        acc = v8_fma(v8_load_n(a + i, n - i), v8_load_n(s + i, n - i), acc);
                    v8 dsum = v8_set1(v8_hsum(acc)), sc = v8_set1(scale);
                    for (int i = 0; i < n; i += 8) {
                        v8 g = v8_sub(v8_load_n(s + i, n - i), dsum);
                        v8_store_n(s + i, v8_mul(v8_mul(v8_load_n(a + i, n - i), g), sc),
                                n - i);
                    }
                }
                for (int r = R; r < 4; r++)
                    p[r] = p[0], ds[r] = ds[0]; /* unused */
                switch (R) {
                case 4: attn_bwd_rows(dq0, dk0, dv0, q0, k0, dy0, C3, C, ds, p, t0, hs, 4); break;
                case 3: attn_bwd_rows(dq0, dk0, dv0, q0, k0, dy0, C3, C, ds, p, t0, hs, 3); break;
                case 2: attn_bwd_rows(dq0, dk0, dv0, q0, k0, dy0, C3, C, ds, p, t0, hs, 2); break;
                default: attn_bwd_rows(dq0, dk0, dv0, q0, k0, dy0, C3, C, ds, p, t0, hs, 1); break;
                }
            }
        }
    }
}

/* ---- attention, tiled ----------------------------------------------------
 *
 * Per (b, h) the six products of attention are small gemms, run through
 * the gemm micro-kernel: S = Q K^T and dP = dY V^T (depth hs), O = P V and
 * dQ = dS K (depth: keys), dK = dS^T Q and dV = P^T dY (depth: queries).
 * Causality stays exact: no product ever reads a masked entry. The square
 * part of each tile goes through the micro-kernel; the triangle on the
 * diagonal is finished (or, for dK and dV, started) by plain FMAs that
 * continue the same chain in the same increasing order, so each element
 * is one FMA chain over its terms in order, whatever the tiling.
 * The buffers are on the stack: the fast path takes T <= ATT_T and
 * (hs, T) panels of at most ATT_PANEL floats; other shapes use the
 * row-at-a-time kernels above. */
enum { ATT_T = 128, ATT_PANEL = 8192 };

static inline int up16(int n) { return (n + 15) & ~15; }

KERN_FN static int att_tiled_fits(int T, int hs) { return T <= ATT_T && up16(hs) * up16(T) <= ATT_PANEL; }

/* z (n) += sum_{j < m} c[j * cs] y(j), y rows ys apart: each element one
 * FMA chain over j in order, kept in a register */
KERN_INLINE void fma_chain(float *z, const float *c, long cs, const float *y, long ys, int m,
                              int n)
{
    if (m <= 0)
        return;
    for (int d = 0; d < n; d += 8) {
        v8 acc = v8_load_n(z + d, n - d);
        for (int j = 0; j < m; j++)
            acc = v8_fma(v8_bcast(c + j * cs), v8_load_n(y + j * ys + d, n - d),
                                  acc);
        v8_store_n(z + d, acc, n - d);
    }
}

/* The triangle of a full 6-row tile of Z (zs apart) += P Y, in registers:
 * row r (r = 0..5) takes the terms j = 0..r-1 (colmix: j = r..4), in
 * order of j, coefficient c(r, j) = p[r * prs + j * pjs], Y(j) = y + j * ys.
 * lower: terms j < r (rowmix, rows t0+1..); else terms j >= r (colmix). */
KERN_INLINE void tri6(float *z, long zs, const float *p, long prs, long pjs, const float *y,
                         long ys, int hs, int lower)
{
    for (int d = 0; d < hs; d += 8) {
        int n = hs - d;
        v8 acc[6];
#pragma GCC unroll 6
        for (int r = 0; r < 6; r++)
            acc[r] = v8_load_n(z + r * zs + d, n);
#pragma GCC unroll 5
        for (int j = 0; j < 5; j++) {
            v8 yj = v8_load_n(y + j * ys + d, n);
#pragma GCC unroll 6
            for (int r = 0; r < 6; r++)
                if (lower ? j < r : j >= r)
                    acc[r] =
                        v8_fma(v8_bcast(p + r * prs + j * pjs), yj, acc[r]);
        }
#pragma GCC unroll 6
        for (int r = 0; r < 6; r++)
            v8_store_n(z + r * zs + d, acc[r], n);
    }
}

/* Z rows t0..t0+mr-1 (zs apart) += or = sum_{k <= t} P[t][k] Y(k): P rows
 * ps apart, Y as copy panels yp (depth T), y its rows (ys apart) */
KERN_INLINE void att_rowmix(float *z, long zs, const float *P, long ps, int T, const float *yp,
                               const float *y, long ys, int hs, int t0, int mr, int accumulate)
{
    /* keys 0..t0 are visible to every row of the tile */
    for (int d0 = 0; d0 < hs; d0 += 16)
        kern_gemm_ukr(t0 + 1, P + t0 * ps, ps, 1, mr, yp + (long)d0 * T, z + t0 * zs + d0, zs,
                          hs - d0 < 16 ? hs - d0 : 16, NULL, accumulate, NULL);
    /* the triangle: row t0+r also sees keys t0+1..t0+r, continuing each chain */
    if (mr == 6)
        tri6(z + t0 * zs, zs, P + t0 * ps + t0 + 1, ps, 1, y + (t0 + 1) * ys, ys, hs, 1);
    else
        for (int r = 1; r < mr; r++)
            fma_chain(z + (t0 + r) * zs, P + (t0 + r) * ps + t0 + 1, 1, y + (t0 + 1) * ys, ys, r,
                      hs);
}

/* Z rows (keys) k0..k0+mr-1 (zs apart) += sum_{t >= key} P[t][key] Y(t):
 * P rows ps apart (T of them, each T long), Y as copy panels yp (depth T),
 * y its rows (ys apart) */
KERN_INLINE void att_colmix(float *z, long zs, const float *P, long ps, int T, const float *yp,
                               const float *y, long ys, int hs, int k0, int mr)
{
    _Alignas(32) float ap[OPS_MR * ATT_T + 8];
    int last = k0 + mr - 1;
    /* the triangle first: key k0+i sees queries k0+i..last-1 */
    if (mr == 6)
        tri6(z + k0 * zs, zs, P + k0 * ps + k0, 1, ps, y + k0 * ys, ys, hs, 0);
    else
        for (int i = 0; i < mr; i++)
            fma_chain(z + (k0 + i) * zs, P + (k0 + i) * ps + k0 + i, ps, y + (k0 + i) * ys, ys,
                      last - (k0 + i), hs);
    /* then queries last..T-1, which see every key of the tile: A (keys x
     * queries) = P^T, packed 6 keys per query (8-float stores, the last two
     * lanes rewritten by the next query or left in the slack) */
    int kc = T - last;
    if (mr == 6) {
        int m = T - k0 < 8 ? T - k0 : 8;
        for (int t = last; t < T; t++)
            v8_storeu(ap + (t - last) * OPS_MR, v8_load_n(P + t * ps + k0, m));
    } else {
        for (int t = last; t < T; t++)
            for (int i = 0; i < OPS_MR; i++)
                ap[(t - last) * OPS_MR + i] = P[t * ps + k0 + (i < mr ? i : 0)];
    }
    for (int d0 = 0; d0 < hs; d0 += 16)
        kern_gemm_ukr(kc, ap, 1, OPS_MR, mr, yp + (long)d0 * T + last * 16, z + k0 * zs + d0,
                          zs, hs - d0 < 16 ? hs - d0 : 16, NULL, 1, NULL);
}

/* rows 0..mr-1 of sb (ss apart, room for up16(nk)) = X(r) . Y(k) for all
 * k < up16(nk): X rows xs apart, Y as transposed panels yp (depth hs).
 * Callers use only k <= their row's t; the other lanes are scratch,
 * computed from zero padding or later keys. */
KERN_INLINE void att_scores(float *sb, long ss, const float *x, long xs, const float *yp, int hs,
                               int nk, int mr)
{
    for (int k0 = 0; k0 < nk; k0 += 16)
        kern_gemm_ukr(hs, x, xs, 1, mr, yp + (long)k0 * hs, sb + k0, ss, 16, NULL, 0, NULL);
}

KERN_FN static void attention_forward_tiled(float *out, float *att, const float *qkv, int B, int T,
                                            int C, int NH)
{
    int hs = C / NH;
    long C3 = 3L * C;
    float scale = 1.0f / sqrtf((float)hs);
    v8 sc = v8_set1(scale), ninf = v8_set1(-INFINITY);
    _Alignas(32) float pb[ATT_PANEL];
    _Alignas(32) float sb[OPS_MR * ATT_T];
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < NH; h++) {
            const float *q0 = qkv + (long)b * T * C3 + h * hs;
            const float *k0 = q0 + C, *v0 = q0 + 2 * C;
            float *P = att + ((long)b * NH + h) * T * T;
            float *o0 = out + (long)b * T * C + h * hs;
            pack_tr(pb, k0, C3, hs, T);
            for (int t0 = 0; t0 < T; t0 += OPS_MR) {
                int mr = T - t0 < OPS_MR ? T - t0 : OPS_MR;
                att_scores(sb, ATT_T, q0 + t0 * C3, C3, pb, hs, t0 + mr, mr);
                /* softmax of (scores * scale) over k <= t, from the scratch
                 * rows into att (where only k <= t is written) */
                for (int r = 0; r < mr; r++) {
                    int n = t0 + r + 1;
                    float *s = sb + r * ATT_T, *a = P + (long)(t0 + r) * T;
                    v8 vm = ninf;
                    for (int i = 0; i < n; i += 8) {
                        v8 x = v8_mul(v8_load(s + i), sc);
                        if (n - i < 8)
                            x = v8_blend(ninf, x, v8_first((n - i)));
                        vm = v8_max(vm, x);
                    }
                    v8 mx = v8_set1(v8_hmax(vm)), vs = v8_zero();
                    for (int i = 0; i < n; i += 8) {
                        v8 e =
                            exp8(v8_sub(v8_mul(v8_load(s + i), sc), mx));
                        if (n - i < 8)
                            e = v8_and(e, v8_first((n - i)));
                        vs = v8_add(vs, e);
                        v8_store(s + i, e);
                    }
                    v8 inv = v8_set1(1.0f / v8_hsum(vs));
                    for (int i = 0; i < n; i += 8)
                        v8_store_n(a + i, v8_mul(v8_load(s + i), inv), n - i);
                }
            }
            pack_cp(pb, v0, C3, T, hs);
            for (int t0 = 0; t0 < T; t0 += OPS_MR)
                att_rowmix(o0, C, P, T, T, pb, v0, C3, hs, t0, T - t0 < OPS_MR ? T - t0 : OPS_MR,
                           0);
        }
    }
}

/* Ask for the slices the next head will read (its q, k, v and dy rows):
 * in the backward they come back from memory, and a head's own reads
 * start too soon for the hardware to fetch ahead. */
KERN_INLINE void prefetch_head(const float *q0, long C3, long C, const float *dy0, int T, int hs)
{
    for (int t = 0; t < T; t++)
        for (int d = 0; d < hs; d += 16) {
            const float *r = q0 + t * C3 + d;
            v8_prefetch(r);
            v8_prefetch((r + C));
            v8_prefetch((r + 2 * C));
            v8_prefetch((dy0 + t * C + d));
        }
}

KERN_FN static void attention_backward_tiled(float *dqkv, const float *dout, const float *qkv,
                                             const float *att, int B, int T, int C, int NH)
{
    int hs = C / NH;
    long C3 = 3L * C, ds = up16(T);
    float scale = 1.0f / sqrtf((float)hs);
    v8 sc = v8_set1(scale);
    _Alignas(32) float pb[ATT_PANEL];
    _Alignas(32) float dS[ATT_T * ATT_T]; /* rows ds apart; k > t is scratch */
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < NH; h++) {
            const float *q0 = qkv + (long)b * T * C3 + h * hs;
            const float *k0 = q0 + C, *v0 = q0 + 2 * C;
            float *dq0 = dqkv + (long)b * T * C3 + h * hs;
            float *dk0 = dq0 + C, *dv0 = dq0 + 2 * C;
            const float *dy0 = dout + (long)b * T * C + h * hs;
            const float *P = att + ((long)b * NH + h) * T * T;
            if (h + 1 < NH)
                prefetch_head(q0 + hs, C3, C, dy0 + hs, T, hs);
            else if (b + 1 < B)
                prefetch_head(qkv + (b + 1L) * T * C3, C3, C, dout + (b + 1L) * T * C, T, hs);
            /* dP = dY V^T, then the softmax backward in place:
             * dS = P (dP - sum_k P dP) * scale */
            pack_tr(pb, v0, C3, hs, T);
            for (int t0 = 0; t0 < T; t0 += OPS_MR) {
                int mr = T - t0 < OPS_MR ? T - t0 : OPS_MR;
                /* the next tile's probabilities come from the forward,
                 * long out of cache: ask for them now */
                for (int t = t0 + OPS_MR; t < t0 + 2 * OPS_MR && t < T; t++)
                    for (int k = 0; k <= t; k += 16)
                        v8_prefetch((P + (long)t * T + k));
                att_scores(dS + t0 * ds, ds, dy0 + (long)t0 * C, C, pb, hs, t0 + mr, mr);
                for (int r = 0; r < mr; r++) {
                    int n = t0 + r + 1;
                    const float *a = P + (long)(t0 + r) * T;
                    float *s = dS + (t0 + r) * ds;
                    v8 acc0 = v8_zero(), acc1 = acc0;
                    int i = 0;
                    for (; i + 16 <= n; i += 16) {
                        acc0 = v8_fma(v8_loadu(a + i), v8_load(s + i), acc0);
                        acc1 = v8_fma(v8_loadu(a + i + 8),
                                               v8_load(s + i + 8), acc1);
                    }
                    for (; i < n; i += 8)
                        acc0 = v8_fma(v8_load_n(a + i, n - i), v8_load_n(s + i, n - i), acc0);
                    v8 dsum = v8_set1(v8_hsum(v8_add(acc0, acc1)));
                    for (i = 0; i < n; i += 8) {
                        v8 g = v8_sub(v8_load(s + i), dsum);
                        v8_store(s + i,
                                        v8_mul(v8_mul(v8_load_n(a + i, n - i), g), sc));
                    }
                }
            }
            /* dQ += dS K */
            pack_cp(pb, k0, C3, T, hs);
            for (int t0 = 0; t0 < T; t0 += OPS_MR)
                att_rowmix(dq0, C3, dS, ds, T, pb, k0, C3, hs, t0,
                           T - t0 < OPS_MR ? T - t0 : OPS_MR, 1);
            /* dK += dS^T Q */
            pack_cp(pb, q0, C3, T, hs);
            for (int t0 = 0; t0 < T; t0 += OPS_MR)
                att_colmix(dk0, C3, dS, ds, T, pb, q0, C3, hs, t0,
                           T - t0 < OPS_MR ? T - t0 : OPS_MR);
            /* dV += P^T dY */
            pack_cp(pb, dy0, C, T, hs);
            for (int t0 = 0; t0 < T; t0 += OPS_MR)
                att_colmix(dv0, C3, P, T, T, pb, dy0, C, hs, t0, T - t0 < OPS_MR ? T - t0 : OPS_MR);
        }
    }
}

KERN_FN static void kern_attention_forward(float *out, float *att, const float *qkv, int B, int T,
                                        int C, int NH)
{
    if (att_tiled_fits(T, C / NH))
        attention_forward_tiled(out, att, qkv, B, T, C, NH);
    else
        attention_forward_rows(out, att, qkv, B, T, C, NH);
}

KERN_FN static void kern_attention_backward(float *dqkv, const float *dout, const float *qkv,
                                         const float *att, int B, int T, int C, int NH)
{
    if (att_tiled_fits(T, C / NH))
        attention_backward_tiled(dqkv, dout, qkv, att, B, T, C, NH);
    else
        attention_backward_rows(dqkv, dout, qkv, att, B, T, C, NH);
}

/* ---- GELU (tanh form) --------------------------------------------------- */

/* 0.5 x (1 + tanh(u)) = x * sigmoid(2u) = x / (1 + exp(-2u)), u =
 * sqrt(2/pi) (x + 0.044715 x^3): one exp and one exact division, with no
 * cancellation where tanhf's 1 + tanh would lose digits for negative x.
 * (A reciprocal estimate would be cheaper, but its bits differ between
 * CPU vendors.) */
#define GELU_S 0.7978845608028654f
#define GELU_C 0.044715f

/* gelu'(x) = s + 2 x s (1 - s) u', s = 1 / (1 + e), e = exp(-2u), 1 - s =
 * e s; x2 = x x. The forward (which has e anyway) and the backward
 * reach it by this one sequence of operations, so either may make it. */
KERN_INLINE v8 gelu_grad8(v8 x, v8 x2, v8 e)
{
    const v8 one = v8_set1(1.0f), s0 = v8_set1(GELU_S), s3c = v8_set1(3.0f * GELU_C * GELU_S),
             two = v8_set1(2.0f);
    v8 s = v8_div(one, v8_add(one, e));
    v8 du = v8_fma(s3c, x2, s0);
    v8 q = v8_mul(v8_mul(v8_mul(two, x), du), v8_mul(e, s));
    return v8_fma(q, s, s);
}

/* out = gelu(inp); grad NULL, or gelu'(inp) goes there (it may be inp
 * itself: each value is read before its slot is written), so the backward
 * need not compute exp again; amax NULL or *amax = max |out| */
KERN_FN static void kern_gelu_forward(float *out, float *grad, const float *inp, int n,
                                      float *amax)
{
    const v8 m2s = v8_set1(-2.0f * GELU_S), c = v8_set1(GELU_C), one = v8_set1(1.0f),
             cap = v8_set1(EXP8_HI);
    amax8 mx = amax_init();
    for (int i = 0; i < n; i += 8) {
        int m = n - i;
        v8 x = v8_load_n(inp + i, m);
        v8 x2 = v8_mul(x, x);
        v8 t = v8_mul(v8_fma(c, v8_mul(x2, x), x), m2s);
        v8 e = exp8(t);
        v8 y = v8_div(x, v8_add(one, e));
        /* past exp8's cap the true value is below |x| 2^-127: x * 0 (-0
         * for negative x, NaN for -inf), not x over the capped exp */
        y = v8_blend(y, v8_mul(x, v8_zero()), v8_lt(cap, t));
        if (grad)
            v8_store_n(grad + i, gelu_grad8(x, x2, e), m);
        v8_store_n(out + i, y, m);
        amax_add(&mx, y, m);
    }
    if (amax)
        *amax = amax_result(mx);
}

/* dinp = (set) or += dout * gelu'(inp); with is_grad, inp already holds
 * gelu'(x) (kern_gelu_forward's grad): the same bits without the exp */
KERN_FN static int kern_gelu_backward(float *dinp, const float *inp, const float *dout, int n,
                                     int set, int is_grad)
{
    const v8 m2s = v8_set1(-2.0f * GELU_S), c = v8_set1(GELU_C);
    v8 bad = v8_zero(), bad_d = bad;
    for (int i = 0; i < n; i += 8) {
        int m = n - i;
        v8 g;
        if (is_grad) {
            g = v8_load_n(inp + i, m);
        } else {
            v8 x = v8_load_n(inp + i, m);
            v8 x2 = v8_mul(x, x);
            g = gelu_grad8(x, x2, exp8(v8_mul(v8_fma(c, v8_mul(x2, x), x), m2s)));
        }
        v8 dy = v8_load_n(dout + i, m);
        v8 d = set ? v8_mul(dy, g) : v8_fma(dy, g, v8_load_n(dinp + i, m));
        v8_store_n(dinp + i, d, m);
        /* d - d is +0 for finite d, NaN otherwise (masked lanes: 0) */
        bad = v8_or(bad, v8_sub(d, d));
        bad_d = v8_or(bad_d, v8_sub(dy, dy));
    }
    return (v8_any_bit(bad) ? GELU_BAD_DINP : 0) | (v8_any_bit(bad_d) ? GELU_BAD_DOUT : 0);
}

/* ---- softmax and the cross-entropy's sum -------------------------------- */

KERN_FN static void kern_softmax_forward(float *probs, const float *logits, int N, int V)
{
    for (int n = 0; n < N; n++) {
        const float *l = logits + (long)n * V;
        float *p = probs + (long)n * V;
        if (p != l)
            memcpy(p, l, sizeof(float) * (size_t)V);
        softmax_row(p, V);
    }
}

KERN_FN static float kern_sumexp(const float *l, int n, float *maxv)
{
    v8 vm = v8_set1(-INFINITY);
    for (int i = 0; i < n; i += 8) {
        int m = n - i;
        v8 x = v8_load_n(l + i, m);
        if (m < 8)
            x = v8_blend(v8_set1(-INFINITY), x, v8_first((m)));
        vm = v8_max(vm, x);
    }
    float mx = v8_hmax(vm);
    v8 vmx = v8_set1(mx), vs = v8_zero();
    for (int i = 0; i < n; i += 8) {
        int m = n - i;
        v8 e = exp8(v8_sub(v8_load_n(l + i, m), vmx));
        if (m < 8)
            e = v8_and(e, v8_first((m)));
        vs = v8_add(vs, e);
    }
    *maxv = mx;
    return v8_hsum(vs);
}

/* ---- LayerNorm ----------------------------------------------------------
 * Row sums use four vector accumulators (lanes of i mod 32), added in a
 * fixed tree: one chain would make a row wait on its adds' latency. */

KERN_INLINE v8 row_sum4(v8 a0, v8 a1, v8 a2, v8 a3)
{
    return v8_add(v8_add(a0, a1), v8_add(a2, a3));
}

KERN_FN static void kern_layernorm_forward(float *out, float *mean, float *rstd, const float *inp,
                                        const float *w, const float *b, int N, int C, float eps,
                                        float *amax)
{
    amax8 mx = amax_init();
    for (int n = 0; n < N; n++) {
        const float *x = inp + (long)n * C;
        float *o = out + (long)n * C;
        v8 a0 = v8_zero(), a1 = a0, a2 = a0, a3 = a0;
        int i = 0;
        for (; i + 32 <= C; i += 32) {
            a0 = v8_add(a0, v8_loadu(x + i));
            a1 = v8_add(a1, v8_loadu(x + i + 8));
            a2 = v8_add(a2, v8_loadu(x + i + 16));
            a3 = v8_add(a3, v8_loadu(x + i + 24));
        }
        for (; i < C; i += 8)
            a0 = v8_add(a0, v8_load_n(x + i, C - i));
        float m = v8_hsum(row_sum4(a0, a1, a2, a3)) / (float)C;
        v8 vm = v8_set1(m);
        a0 = a1 = a2 = a3 = v8_zero();
        for (i = 0; i + 32 <= C; i += 32) {
            v8 d0 = v8_sub(v8_loadu(x + i), vm);
            v8 d1 = v8_sub(v8_loadu(x + i + 8), vm);
            v8 d2 = v8_sub(v8_loadu(x + i + 16), vm);
            v8 d3 = v8_sub(v8_loadu(x + i + 24), vm);
            a0 = v8_fma(d0, d0, a0), a1 = v8_fma(d1, d1, a1);
            a2 = v8_fma(d2, d2, a2), a3 = v8_fma(d3, d3, a3);
        }
        for (; i < C; i += 8) {
            int k = C - i;
            v8 d = v8_sub(v8_load_n(x + i, k), vm);
            if (k < 8)
                d = v8_and(d, v8_first((k)));
            a0 = v8_fma(d, d, a0);
        }
        float s = 1.0f / sqrtf(v8_hsum(row_sum4(a0, a1, a2, a3)) / (float)C + eps);
        v8 vs = v8_set1(s);
        for (i = 0; i < C; i += 8) {
            int k = C - i;
            v8 xh = v8_mul(v8_sub(v8_load_n(x + i, k), vm), vs);
            v8 y = v8_fma(xh, v8_load_n(w + i, k), v8_load_n(b + i, k));
            v8_store_n(o + i, y, k);
            if (amax)
                amax_add(&mx, y, k);
        }
        mean[n] = m;
        rstd[n] = s;
    }
    if (amax)
        *amax = amax_result(mx);
}

/* dinp's rows, and dw and db's columns [c0, c1) summed over the N rows in
 * order; dinp NULL: only dw and db (c0 a multiple of 8), dw NULL: only
 * dinp. Each value gets the same operations whichever parts a call
 * does, so a split over rows (dinp) and columns (dw, db) gives the bits
 * of one whole call. */
KERN_FN static int kern_layernorm_backward(float *dinp, float *dw, float *db, const float *dout,
                                        const float *inp, const float *w, const float *mean,
                                        const float *rstd, int N, int C, int c0, int c1)
{
    v8 bad = v8_zero(); /* or of dx - dx: +0 while every dx is finite */
    if (dinp)
        c0 = 0, c1 = C;
    for (int n = 0; n < N; n++) {
        const float *x = inp + (long)n * C;
        const float *d = dout + (long)n * C;
        v8 vm = v8_set1(mean[n]), vs = v8_set1(rstd[n]);
        v8 dmean = v8_zero(), dnm = dmean;
        if (dinp) {
            v8 a0 = v8_zero(), a1 = a0, b0 = a0, b1 = a0;
            int i = 0;
            for (; i + 16 <= C; i += 16) {
                v8 xh0 = v8_mul(v8_sub(v8_loadu(x + i), vm), vs);
                v8 xh1 = v8_mul(v8_sub(v8_loadu(x + i + 8), vm), vs);
                v8 g0 = v8_mul(v8_loadu(d + i), v8_loadu(w + i));
                v8 g1 = v8_mul(v8_loadu(d + i + 8), v8_loadu(w + i + 8));
                a0 = v8_add(a0, g0), a1 = v8_add(a1, g1);
                b0 = v8_fma(g0, xh0, b0), b1 = v8_fma(g1, xh1, b1);
            }
            for (; i < C; i += 8) {
                int k = C - i;
                v8 xh = v8_mul(v8_sub(v8_load_n(x + i, k), vm), vs);
                v8 g = v8_mul(v8_load_n(d + i, k), v8_load_n(w + i, k));
                a0 = v8_add(a0, g);
                b0 = v8_fma(g, xh, b0);
            }
            dmean = v8_set1(v8_hsum(v8_add(a0, a1)) / (float)C);
            dnm = v8_set1(v8_hsum(v8_add(b0, b1)) / (float)C);
        }
        for (int i = c0; i < c1; i += 8) {
            int k = c1 - i;
            v8 dv = v8_load_n(d + i, k);
            v8 xh = v8_mul(v8_sub(v8_load_n(x + i, k), vm), vs);
            if (dw) {
                v8_store_n(db + i, v8_add(v8_load_n(db + i, k), dv), k);
                v8_store_n(dw + i, v8_fma(xh, dv, v8_load_n(dw + i, k)), k);
            }
            if (dinp) {
                float *dx = dinp + (long)n * C;
                v8 dxh = v8_mul(dv, v8_load_n(w + i, k));
                v8 g = v8_fnma(xh, dnm, v8_sub(dxh, dmean));
                v8 y = v8_fma(vs, g, v8_load_n(dx + i, k));
                v8_store_n(dx + i, y, k);
                y = v8_sub(y, y);
                if (k < 8)
                    y = v8_and(y, v8_first((k)));
                bad = v8_or(bad, y);
            }
        }
    }
    return v8_any_bit(bad);
}

/* ---- absmax ------------------------------------------------------------- */

KERN_FN static float kern_absmax(const float *x, long n)
{
    v8 m0 = v8_zero(), m1 = m0, bad = m0;
    long i = 0;
    for (; i + 16 <= n; i += 16) {
        v8 a = v8_abs(v8_loadu(x + i));
        v8 b = v8_abs(v8_loadu(x + i + 8));
        bad = v8_or(bad, v8_unord(a, b));
        m0 = v8_max(m0, a);
        m1 = v8_max(m1, b);
    }
    for (; i < n; i += 8) {
        int k = n - i < 8 ? (int)(n - i) : 8;
        v8 a = v8_abs(v8_load_n(x + i, k)); /* masked lanes read 0 */
        bad = v8_or(bad, v8_unord(a, a));
        m0 = v8_max(m0, a);
    }
    if (v8_any_sign(bad))
        return NAN;
    return v8_hmax(v8_max(m0, m1));
}

/* ---- the residual sum -----------------------------------------------------
 * a x + g f as two products and a sum, no FMA: the portable loop's bits */
KERN_FN static float kern_residual(float *out, const float *x, float a, const float *f, float g,
                                long n)
{
    const v8 va = v8_set1(a), vg = v8_set1(g);
    amax8 mx = amax_init();
    for (long i = 0; i < n; i += 8) {
        int k = n - i < 8 ? (int)(n - i) : 8;
        v8 y = v8_add(v8_mul(va, v8_load_n(x + i, k)),
                                 v8_mul(vg, v8_load_n(f + i, k)));
        v8_store_n(out + i, y, k);
        amax_add(&mx, y, k);
    }
    return amax_result(mx);
}

/* ---- sums of squares and AdamW -------------------------------------------
 * Lanes and reduction trees as ops.h describes; the portable loops in
 * ops.c give the same bits. */

/* x - x is +0 (all bits clear) for finite x and NaN otherwise: or the
 * differences together, four vectors at a time */
KERN_FN static int kern_any_nonfinite(const float *x, size_t n)
{
    v8 o0 = v8_zero(), o1 = o0, o2 = o0, o3 = o0;
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        v8 a = v8_loadu(x + i), b = v8_loadu(x + i + 8);
        v8 c = v8_loadu(x + i + 16), d = v8_loadu(x + i + 24);
        o0 = v8_or(o0, v8_sub(a, a)), o1 = v8_or(o1, v8_sub(b, b));
        o2 = v8_or(o2, v8_sub(c, c)), o3 = v8_or(o3, v8_sub(d, d));
    }
    for (; i < n; i += 8) { /* masked lanes read 0 */
        v8 a = v8_load_n(x + i, n - i < 8 ? (int)(n - i) : 8);
        o0 = v8_or(o0, v8_sub(a, a));
    }
    v8 o = v8_or(v8_or(o0, o1), v8_or(o2, o3));
    return v8_any_bit(o);
}

/* a[j] += (double)v[4 j .. 4 j + 3]^2 for the 16 floats lo, hi; a
 * float's square is exact in double, so the FMA rounds once, as the
 * portable multiply then add does */
KERN_INLINE void sumsq16(v4d a[4], v8 lo, v8 hi)
{
    v4d d[4] = {v4d_lo(lo), v4d_hi(lo), v4d_lo(hi), v4d_hi(hi)};
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++)
        a[j] = v4d_fma(d[j], d[j], a[j]);
}

KERN_FN static double kern_sumsq(const float *x, size_t n)
{
    v4d a[4] = {v4d_zero(), v4d_zero(), v4d_zero(), v4d_zero()};
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        sumsq16(a, v8_loadu(x + i), v8_loadu(x + i + 8));
    if (i < n) { /* masked lanes read 0 and add 0 */
        int k = (int)(n - i);
        sumsq16(a, v8_load_n(x + i, k), k > 8 ? v8_load_n(x + i + 8, k - 8) : v8_zero());
    }
    /* lanes j, j+4, j+8, j+12 are lane j of a[0..3] */
    return v4d_hsum2(v4d_add(a[0], a[1]), v4d_add(a[2], a[3]));
}

KERN_FN static void kern_adamw(float *p, const float *g, float *m, float *v, size_t n,
                            const ops_adamw_args *a, double sums[2])
{
    const v8 gs = v8_set1(a->grad_scale), b1 = v8_set1(a->beta1),
                 b2 = v8_set1(a->beta2), c1 = v8_set1(1.0f - a->beta1),
                 c2 = v8_set1(1.0f - a->beta2), decay = v8_set1(a->decay),
                 step = v8_set1(a->step), bc2 = v8_set1(a->bc2_sqrt),
                 eps = v8_set1(a->eps);
    v4d u0 = v4d_zero(), u1 = u0, w0 = u0, w1 = u0;
    for (size_t i = 0; i < n; i += 8) {
        int k = n - i < 8 ? (int)(n - i) : 8;
        /* masked-off lanes compute on zeros (0 / eps: no trap, no NaN) and
         * add exactly 0 to the sums */
        v8 gi = v8_mul(v8_load_n(g + i, k), gs);
        v8 mi = v8_add(v8_mul(b1, v8_load_n(m + i, k)), v8_mul(c1, gi));
        v8 vi = v8_add(v8_mul(b2, v8_load_n(v + i, k)),
                                  v8_mul(v8_mul(c2, gi), gi));
        v8 old = v8_load_n(p + i, k);
        v8 den = v8_add(v8_div(v8_sqrt(vi), bc2), eps);
        v8 np = v8_sub(v8_mul(old, decay),
                                  v8_div(v8_mul(step, mi), den));
        v8_store_n(m + i, mi, k);
        v8_store_n(v + i, vi, k);
        v8_store_n(p + i, np, k);
        if (k < 8) /* eps = 0 would make 0 / 0 of the masked-off lanes */
            np = v8_and(np, v8_first((k)));
        v4d n0 = v4d_lo(np);
        v4d n1 = v4d_hi(np);
        v4d d0 = v4d_sub(n0, v4d_lo(old));
        v4d d1 = v4d_sub(n1, v4d_hi(old));
        /* d * d rounds: multiply then add, as the portable loop */
        u0 = v4d_add(u0, v4d_mul(d0, d0));
        u1 = v4d_add(u1, v4d_mul(d1, d1));
        w0 = v4d_fma(n0, n0, w0); /* exact square: one rounding either way */
        w1 = v4d_fma(n1, n1, w1);
    }
    sums[0] += v4d_hsum2(u0, u1);
    sums[1] += v4d_hsum2(w0, w1);
}

const ops_kernels OPS_KERN_TABLE = {
    .gemm_ukr = kern_gemm_ukr,
    .colsum = kern_colsum,
    .attention_forward = kern_attention_forward,
    .attention_backward = kern_attention_backward,
    .gelu_forward = kern_gelu_forward,
    .gelu_backward = kern_gelu_backward,
    .softmax_forward = kern_softmax_forward,
    .sumexp = kern_sumexp,
    .layernorm_forward = kern_layernorm_forward,
    .layernorm_backward = kern_layernorm_backward,
    .absmax = kern_absmax,
    .residual = kern_residual,
    .any_nonfinite = kern_any_nonfinite,
    .sumsq = kern_sumsq,
    .adamw = kern_adamw,
    .exp = kern_exp,
};
