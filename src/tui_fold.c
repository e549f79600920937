/* tui_fold.c - the ranked layout's stand-in for the side box: the
 * selected layer's numbers on one row (the status line's second), so that
 * on a small terminal every layer keeps its row in the panel.
 *
 *   layer 5/12  attn 1.2e-01  mlp 3.4e-02  act max 4.12  [headroom 12.3]  rms 0.85  [over 0  under 1234]
 *   layer 5/12  a|b  attn 1.2e-01|8.0e-02  mlp ...      (--compare: both runs)
 *
 * The numbers are the layer column table's with a fold name, in its order
 * (tui.h); those that do not fit the width are left off from the right. Not here:
 * when the fold is used (tui_layout.c), the full box (tui_layers.c).
 */
#include "tui.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* "%.2e", or nan / inf without a sign (non-finite numbers are shown). */
static void num(char *b, size_t n, double v, int sci)
{
    if (isnan(v))
        snprintf(b, n, "nan");
    else if (isinf(v))
        snprintf(b, n, "inf");
    else
        snprintf(b, n, sci ? "%.2e" : "%.3g", v);
}

void tui_draw_fold(tui_grid *g, tui_rect r, const trainer_snapshot *snap, tui_ui *ui)
{
    if (r.h < 1 || r.w < 20)
        return;
    const trainer_status *s = &snap->s;
    int L = s->n_layer > 0 ? s->n_layer : 1;
    int l = ui->selected < 0 || ui->selected >= L ? L - 1 : ui->selected;
    /* the status line drew its toggles here: they are not clickable now */
    for (int i = 0; i < ui->n_hits; i++)
        if (ui->hits[i].r == r.r)
            ui->hits[i--] = ui->hits[--ui->n_hits];
    tui_fill(g, r.r, r.c, 1, r.w, ' ', TUI_S_STATUS);
    char b[64];
    snprintf(b, sizeof b, " layer %d/%d ", l, L);
    int c = r.c + tui_puts(g, r.r, r.c, r.w, TUI_S_SELECT, b) + 1;
    if (!s->have_metrics) {
        tui_puts(g, r.r, c, r.r + r.w - c, TUI_S_DIM, "no step yet");
        return;
    }
    const layer_metrics *lm = &s->run[0].last.layer[l], *lb = &s->run[1].last.layer[l];
    int lowp = s->run[0].cfg.precision != FMT_FP32 || (s->compare && s->run[1].cfg.precision != FMT_FP32);
    if (s->compare) /* two runs: each number as a|b */
        c += tui_puts(g, r.r, c, r.c + r.w - c, TUI_S_LABEL, "a|b ") + 1;
    int n;
    const tui_layer_col *t = tui_layer_col_table(&n);
    for (int i = 0; i < n; i++) {
        if (!t[i].fold || (!lowp && (t[i].flags & TUI_COL_LOWP)))
            continue;
        char v[48], va[24], vb[24], item[80];
        double xa = tui_layer_col_value(&t[i], lm), xb = tui_layer_col_value(&t[i], lb);
        num(va, sizeof va, xa, t[i].fmt == TUI_FMT_E);
        num(vb, sizeof vb, xb, t[i].fmt == TUI_FMT_E);
        snprintf(v, sizeof v, s->compare ? "%s|%s" : "%s", va, vb);
        int len = snprintf(item, sizeof item, "%s %s", t[i].fold, v);
        if (c + len > r.c + r.w)
            break;
        int w = tui_puts(g, r.r, c, len, TUI_S_LABEL, t[i].fold);
        tui_puts(g, r.r, c + w + 1, len - w - 1,
                 isfinite(xa) && (!s->compare || isfinite(xb)) ? TUI_S_STATUS : TUI_S_BAD, v);
        c += len + 2;
    }
}
