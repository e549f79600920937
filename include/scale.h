/* scale.h - the scales and states the live view and the figures share:
 * the gradient and activation bars' log ranges, the marks on the
 * activation bar, when a gradient counts as exploding or vanishing, and
 * the heatmap's decade levels, the loss's smoothing. Pure functions of a number, so a figure
 * (plot.c) says what the screen says without including the view.
 *
 * Not here: drawing (tui_*.c, plot.c).
 */
#ifndef NS_SCALE_H
#define NS_SCALE_H

/* Gradient bars share one fixed log scale, 1e-5 .. 1e+2: a vanishing 1e-4
 * and an exploding 1e+1 are both visible and comparable across frames. */
#define SCALE_GRAD_LO (-5)
#define SCALE_GRAD_HI 2
/* Activation bars: 1 .. 1e+6, with marks at 256 (its square overflows fp16
 * in the LN variance) and 65504 (fp16's largest finite value). */
#define SCALE_AMAX_LO 0
#define SCALE_AMAX_HI 6
#define SCALE_MARK_LNVAR 256.0
#define SCALE_MARK_FP16 65504.0
/* A gradient is "exploding" from here; "vanishing" below 1e-3 of the
 * largest layer's. */
#define SCALE_EXPLODE 10.0
#define SCALE_VANISH_RATIO 1e-3

typedef enum { SCALE_G_NORMAL, SCALE_G_VANISH, SCALE_G_EXPLODE, SCALE_G_NONFINITE } scale_grad_state;
scale_grad_state scale_grad_state_of(double v, double layer_max);
/* The heatmap's level of a gradient norm: 0 below 1e-4, 1..5 for one
 * decade each up to 10, 6 from 10; -1 when not finite. */
int scale_heat_level(double v);

/* The smoothed loss the chart and the figures draw over the raw one (kept
 * faint), as TensorBoard smooths a scalar: an exponential moving average
 * of weight w in 0..1 (--smooth; by default 0.9, about the last 10
 * steps: the settings table's row), debiased as Adam's moments are
 * (divided by 1 - w^k after k values), so its first values are not pulled
 * toward 0. Weight 0 is no smoothing: the value itself. A value that is
 * not finite is not averaged in: its point is NaN (a gap, as the raw
 * line's) and the average goes on. */
typedef struct {
    double avg;
    long k;
    double w;
} scale_ema;
scale_ema scale_ema_start(double w);
double scale_ema_add(scale_ema *e, double x);

#endif
