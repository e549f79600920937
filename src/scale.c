/* scale.c - the shared scales' functions (scale.h): a gradient's state
 * and the heatmap's level of a norm.
 *
 * Not here: the bars' geometry (tui_layout.c), drawing (tui_*.c, plot.c).
 */
#include "scale.h"

#include <math.h>

scale_grad_state scale_grad_state_of(double v, double layer_max)
{
    if (!isfinite(v))
        return SCALE_G_NONFINITE;
    if (v >= SCALE_EXPLODE)
        return SCALE_G_EXPLODE;
    if (layer_max > 0 && v < SCALE_VANISH_RATIO * layer_max)
        return SCALE_G_VANISH;
    return SCALE_G_NORMAL;
}

/* Decade levels: 0 below 1e-4, 1..5 for [1e-4,1e-3) .. [1,10), 6 from 10
 * (exploding); -1 when not finite. */
int scale_heat_level(double v)
{
    if (!isfinite(v))
        return -1;
    if (!(v > 0))
        return 0;
    int lv = (int)floor(log10(v)) + 5;
    return lv < 0 ? 0 : lv > 6 ? 6 : lv;
}


scale_ema scale_ema_start(double w)
{
    return (scale_ema){0, 0, w > 0 && w < 1 ? w : 0};
}

double scale_ema_add(scale_ema *e, double x)
{
    if (!isfinite(x))
        return NAN;
    if (e->w == 0)
        return x;
    e->avg = e->w * e->avg + (1 - e->w) * x;
    e->k++;
    return e->avg / (1 - pow(e->w, (double)e->k));
}
