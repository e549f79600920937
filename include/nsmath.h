/* nsmath.h - exp, log, tanh, cos and powers from IEEE-exact operations.
 *
 * glibc picks some libm routines (exp, log, pow, sin, cos, expf, logf,
 * ...) per CPU at load time, with FMA builds whose last bits can differ
 * from the others', and other C libraries differ again. The engine's
 * numbers must be the same on every machine, so everything a run computes
 * goes through these instead: each is a fixed sequence of add, sub, mul,
 * div, sqrt, fma, rint and exponent arithmetic, whose results IEEE 754
 * fixes, so each returns the same bits everywhere. Accuracy is a few ulp,
 * not correct rounding. Display code (plot.c, the TUI's scales) may use
 * libm: it computes nothing a run depends on.
 *
 * Not here: the vector exp of the kernels (ops_kern.h); ns_expf is its
 * scalar twin and gives its bits (tests/unit/test_ops.c checks).
 */
#ifndef NS_NSMATH_H
#define NS_NSMATH_H

/* exp(x) in float by the kernels' recipe (Cephes expf: x = n ln2 + r, a
 * degree-7 polynomial in r, times 2^n): 0 below -87, exp(88.3) (finite)
 * above 88.3, NaN for NaN */
float ns_expf(float x);
/* tanh(x) (Cephes tanhf: an odd polynomial below |x| = 0.625, else
 * 1 - 2 / (exp(2|x|) + 1)) */
float ns_tanhf(float x);
/* natural log: 2 atanh(f / (2 + f)) as a series, plus k ln2; NaN for
 * x < 0 or NaN, -inf at 0, inf at inf */
double ns_log(double x);
float ns_logf(float x); /* (float)ns_log(x) */
double ns_log2(double x);
/* e^x (a Taylor polynomial of r = x - n ln2, |r| <= ln2 / 2, times 2^n);
 * inf above 709.78, 0 below -745.2 */
double ns_exp(double x);
double ns_exp2(double x);
/* cos(pi x) for finite x (reduced exactly to [0, 1], then a polynomial) */
double ns_cospi(double x);
/* x^n for n >= 0 by repeated squaring (x^0 = 1) */
double ns_powi(double x, long n);

#endif
