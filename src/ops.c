/* ops.c - forward and backward of each Transformer operation, in fp32.
 *
 * Plain loops written so the compiler can vectorize the inner ones without
 * reassociating anything it should not (no -ffast-math). The speed work of
 * a later issue replaces the hot ones; the contracts in ops.h stay.
 */
#include "ops.h"

#include <math.h>
#include <string.h>

void encoder_forward(float *out, const uint8_t *tokens, const float *wte, const float *wpe,
                     int B, int T, int C)
{
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            float *o = out + ((long)b * T + t) * C;
            const float *te = wte + (long)tokens[b * T + t] * C;
            const float *pe = wpe + (long)t * C;
            for (int i = 0; i < C; i++)
                o[i] = te[i] + pe[i];
        }
    }
}

void encoder_backward(float *dwte, float *dwpe, const float *dout, const uint8_t *tokens,
                      int B, int T, int C)
{
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            const float *d = dout + ((long)b * T + t) * C;
            ops_axpy(dwte + (long)tokens[b * T + t] * C, 1.0f, d, C);
            ops_axpy(dwpe + (long)t * C, 1.0f, d, C);
        }
    }
}

void layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w,
                       const float *b, int N, int C, float eps)
{
    for (int n = 0; n < N; n++) {
        const float *x = inp + (long)n * C;
        float *o = out + (long)n * C;
        float m = 0.0f;
        for (int i = 0; i < C; i++)
            m += x[i];
        m /= (float)C;
        float v = 0.0f;
        for (int i = 0; i < C; i++) {
            float d = x[i] - m;
            v += d * d;
        }
        v /= (float)C;
        float s = 1.0f / sqrtf(v + eps);
        for (int i = 0; i < C; i++)
            o[i] = (x[i] - m) * s * w[i] + b[i];
        mean[n] = m;
        rstd[n] = s;
    }
}

void layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                        const float *w, const float *mean, const float *rstd, int N, int C)
{
    for (int n = 0; n < N; n++) {
        const float *x = inp + (long)n * C;
        const float *d = dout + (long)n * C;
        float *dx = dinp + (long)n * C;
        float m = mean[n], s = rstd[n];
        /* dxhat = d * w; dx = s * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)) */
        float dmean = 0.0f, dnorm_mean = 0.0f;
        for (int i = 0; i < C; i++) {
            float xhat = (x[i] - m) * s;
            float dxhat = d[i] * w[i];
            dmean += dxhat;
            dnorm_mean += dxhat * xhat;
        }
        dmean /= (float)C;
        dnorm_mean /= (float)C;
        for (int i = 0; i < C; i++) {
            float xhat = (x[i] - m) * s;
            float dxhat = d[i] * w[i];
            db[i] += d[i];
            dw[i] += xhat * d[i];
            dx[i] += s * (dxhat - dmean - xhat * dnorm_mean);
        }
    }
}

void rmsnorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w,
                     int N, int C, float eps)
{
    for (int n = 0; n < N; n++) {
        const float *x = inp + (long)n * C;
        float *o = out + (long)n * C;
        float ss = 0.0f;
        for (int i = 0; i < C; i++)
            ss += x[i] * x[i];
        float s = 1.0f / sqrtf(ss / (float)C + eps);
        for (int i = 0; i < C; i++)
            o[i] = x[i] * s * w[i];
        mean[n] = 0.0f;
        rstd[n] = s;
    }
}

void rmsnorm_backward(float *dinp, float *dw, const float *dout, const float *inp,
                      const float *w, const float *rstd, int N, int C)
{
    for (int n = 0; n < N; n++) {
        const float *x = inp + (long)n * C;
        const float *d = dout + (long)n * C;
        float *dx = dinp + (long)n * C;
        float s = rstd[n];
        /* xhat = x*s; dx = s * (dxhat - xhat * mean(dxhat * xhat)) */
        float dnorm_mean = 0.0f;
        for (int i = 0; i < C; i++)
            dnorm_mean += d[i] * w[i] * x[i] * s;
        dnorm_mean /= (float)C;
        for (int i = 0; i < C; i++) {
            float xhat = x[i] * s;
            dw[i] += xhat * d[i];
            dx[i] += s * (d[i] * w[i] - xhat * dnorm_mean);
        }
    }
}

void dyt_forward(float *out, const float *inp, const float *w, const float *b, float a, int N,
                 int C)
{
    for (int n = 0; n < N; n++) {
        const float *x = inp + (long)n * C;
        float *o = out + (long)n * C;
        for (int i = 0; i < C; i++)
            o[i] = w[i] * tanhf(a * x[i]) + b[i];
    }
}

void dyt_backward(float *dinp, float *dw, float *db, float *da, const float *dout,
                  const float *inp, const float *w, float a, int N, int C)
{
    double dsum = 0.0;
    for (int n = 0; n < N; n++) {
        const float *x = inp + (long)n * C;
        const float *d = dout + (long)n * C;
        float *dx = dinp + (long)n * C;
        for (int i = 0; i < C; i++) {
            float t = tanhf(a * x[i]);
            float g = d[i] * w[i] * (1.0f - t * t); /* d out / d (a x) */
            dw[i] += d[i] * t;
            db[i] += d[i];
            dx[i] += g * a;
            dsum += (double)g * x[i];
        }
    }
    *da += (float)dsum;
}

/* Dot product with 8 independent partial sums: a fixed summation order
 * (so results do not depend on the compiler) that still pipelines. */
static inline float dot8(const float *a, const float *b, int n)
{
    float acc[8] = {0};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++)
            acc[k] += a[i + k] * b[i + k];
    float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    for (; i < n; i++)
        s += a[i] * b[i];
    return s;
}

void matmul_forward(float *out, const float *inp, const float *w, const float *b, int N, int C,
                    int OC)
{
    /* four input rows share each weight row while it is in cache */
    int n = 0;
    for (; n + 4 <= N; n += 4) {
        const float *x0 = inp + (long)n * C, *x1 = x0 + C, *x2 = x1 + C, *x3 = x2 + C;
        float *o = out + (long)n * OC;
        for (int j = 0; j < OC; j++) {
            const float *wj = w + (long)j * C;
            float bj = b ? b[j] : 0.0f;
            o[j] = bj + dot8(x0, wj, C);
            o[OC + j] = bj + dot8(x1, wj, C);
            o[2 * OC + j] = bj + dot8(x2, wj, C);
            o[3 * OC + j] = bj + dot8(x3, wj, C);
        }
    }
    for (; n < N; n++) {
        const float *x = inp + (long)n * C;
        float *o = out + (long)n * OC;
        for (int j = 0; j < OC; j++)
            o[j] = (b ? b[j] : 0.0f) + dot8(x, w + (long)j * C, C);
    }
}

/* y (n) += a0 x0 + a1 x1 + a2 x2 + a3 x3, one pass over y */
static void axpy4(float *restrict y, float a0, const float *restrict x0, float a1,
                  const float *restrict x1, float a2, const float *restrict x2, float a3,
                  const float *restrict x3, int n)
{
    for (int i = 0; i < n; i++)
        y[i] += ((a0 * x0[i] + a1 * x1[i]) + (a2 * x2[i] + a3 * x3[i]));
}

void matmul_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                     const float *w, int N, int C, int OC)
{
    /* dinp (N, C) += dout (N, OC) @ w (OC, C) */
    if (dinp) {
        for (int n = 0; n < N; n++) {
            const float *d = dout + (long)n * OC;
            float *dx = dinp + (long)n * C;
            int j = 0;
            for (; j + 4 <= OC; j += 4) {
                const float *wj = w + (long)j * C;
                axpy4(dx, d[j], wj, d[j + 1], wj + C, d[j + 2], wj + 2 * C, d[j + 3], wj + 3 * C,
                      C);
            }
            for (; j < OC; j++)
                ops_axpy(dx, d[j], w + (long)j * C, C);
        }
    }
    /* dw (OC, C) += dout^T (OC, N) @ inp (N, C); db (OC) += sum_n dout */
    for (int j = 0; j < OC; j++) {
        float *dwj = dw + (long)j * C;
        float bsum = 0.0f;
        int n = 0;
        for (; n + 4 <= N; n += 4) {
            const float *d = dout + (long)n * OC + j;
            const float *x = inp + (long)n * C;
            float d0 = d[0], d1 = d[OC], d2 = d[2 * OC], d3 = d[3 * OC];
            bsum += ((d0 + d1) + (d2 + d3));
            axpy4(dwj, d0, x, d1, x + C, d2, x + 2 * C, d3, x + 3 * C, C);
        }
        for (; n < N; n++) {
            float d = dout[(long)n * OC + j];
            bsum += d;
            ops_axpy(dwj, d, inp + (long)n * C, C);
        }
        if (db)
            db[j] += bsum;
    }
}

void attention_forward(float *out, float *att, const float *qkv, int B, int T, int C, int NH)
{
    int hs = C / NH;
    float scale = 1.0f / sqrtf((float)hs);
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            for (int h = 0; h < NH; h++) {
                const float *q = qkv + ((long)b * T + t) * 3 * C + h * hs;
                float *a = att + (((long)b * NH + h) * T + t) * T;
                float maxv = -INFINITY;
                for (int t2 = 0; t2 <= t; t2++) {
                    const float *k = qkv + ((long)b * T + t2) * 3 * C + C + h * hs;
                    float s = dot8(q, k, hs) * scale;
                    a[t2] = s;
                    if (s > maxv)
                        maxv = s;
                }
                float sum = 0.0f;
                for (int t2 = 0; t2 <= t; t2++) {
                    float e = expf(a[t2] - maxv);
                    a[t2] = e;
                    sum += e;
                }
                float inv = 1.0f / sum;
                float *o = out + ((long)b * T + t) * C + h * hs;
                memset(o, 0, sizeof(float) * hs);
                for (int t2 = 0; t2 <= t; t2++) {
                    a[t2] *= inv;
                    const float *v = qkv + ((long)b * T + t2) * 3 * C + 2 * C + h * hs;
                    ops_axpy(o, a[t2], v, hs);
                }
            }
        }
    }
}

void attention_backward(float *dqkv, float *drow, const float *dout, const float *qkv,
                        const float *att, int B, int T, int C, int NH)
{
    int hs = C / NH;
    float scale = 1.0f / sqrtf((float)hs);
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            for (int h = 0; h < NH; h++) {
                const float *a = att + (((long)b * NH + h) * T + t) * T;
                const float *dy = dout + ((long)b * T + t) * C + h * hs;
                const float *q = qkv + ((long)b * T + t) * 3 * C + h * hs;
                float *dq = dqkv + ((long)b * T + t) * 3 * C + h * hs;
                /* datt[t2] = dy . v[t2]; dv[t2] += a[t2] * dy */
                float dsum = 0.0f;
                for (int t2 = 0; t2 <= t; t2++) {
                    long row = ((long)b * T + t2) * 3 * C;
                    drow[t2] = dot8(dy, qkv + row + 2 * C + h * hs, hs);
                    ops_axpy(dqkv + row + 2 * C + h * hs, a[t2], dy, hs);
                    dsum += a[t2] * drow[t2];
                }
                /* softmax backward, then the scaled dot product */
                for (int t2 = 0; t2 <= t; t2++) {
                    long row = ((long)b * T + t2) * 3 * C;
                    float ds = a[t2] * (drow[t2] - dsum) * scale;
                    ops_axpy(dq, ds, qkv + row + C + h * hs, hs);
                    ops_axpy(dqkv + row + C + h * hs, ds, q, hs);
                }
            }
        }
    }
}

#define GELU_SCALE 0.7978845608028654f /* sqrt(2/pi) */

void gelu_forward(float *out, const float *inp, int n)
{
    for (int i = 0; i < n; i++) {
        float x = inp[i];
        float u = GELU_SCALE * (x + 0.044715f * x * x * x);
        out[i] = 0.5f * x * (1.0f + tanhf(u));
    }
}

void gelu_backward(float *dinp, const float *inp, const float *dout, int n)
{
    for (int i = 0; i < n; i++) {
        float x = inp[i];
        float u = GELU_SCALE * (x + 0.044715f * x * x * x);
        float th = tanhf(u);
        float sech2 = 1.0f - th * th;
        float du = GELU_SCALE * (1.0f + 3.0f * 0.044715f * x * x);
        dinp[i] += dout[i] * (0.5f * (1.0f + th) + 0.5f * x * sech2 * du);
    }
}

void softmax_forward(float *probs, const float *logits, int N, int V)
{
    for (int n = 0; n < N; n++) {
        const float *l = logits + (long)n * V;
        float *p = probs + (long)n * V;
        float maxv = -INFINITY;
        for (int i = 0; i < V; i++)
            if (l[i] > maxv)
                maxv = l[i];
        float sum = 0.0f;
        for (int i = 0; i < V; i++) {
            p[i] = expf(l[i] - maxv);
            sum += p[i];
        }
        float inv = 1.0f / sum;
        for (int i = 0; i < V; i++)
            p[i] *= inv;
    }
}

void crossentropy_forward(float *losses, const float *logits, const uint8_t *targets, int N,
                          int V)
{
    for (int n = 0; n < N; n++) {
        const float *l = logits + (long)n * V;
        float maxv = -INFINITY;
        for (int i = 0; i < V; i++)
            if (l[i] > maxv)
                maxv = l[i];
        double sum = 0.0;
        for (int i = 0; i < V; i++)
            sum += exp((double)l[i] - maxv);
        losses[n] = (float)(log(sum) + maxv - l[targets[n]]);
    }
}

void crossentropy_softmax_backward(float *dlogits, const float *probs, const uint8_t *targets,
                                   int N, int V, float scale)
{
    for (int n = 0; n < N; n++) {
        const float *p = probs + (long)n * V;
        float *d = dlogits + (long)n * V;
        for (int i = 0; i < V; i++)
            d[i] += (p[i] - (i == targets[n] ? 1.0f : 0.0f)) * scale;
    }
}

void ops_axpy(float *restrict y, float a, const float *restrict x, int n)
{
    for (int i = 0; i < n; i++)
        y[i] += a * x[i];
}

float ops_absmax(const float *x, long n)
{
    float m = 0.0f;
    int nan = 0;
    for (long i = 0; i < n; i++) {
        float a = fabsf(x[i]);
        nan |= a != a;
        m = a > m ? a : m;
    }
    return nan ? NAN : m;
}
