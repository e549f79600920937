/* plot_svg.c - the SVG a figure is written in: the palettes (the live
 * view's colors on its dark ground; --light color on white for print;
 * --mono black on white), text with its characters escaped, lines, marker
 * shapes, the document's head, and legends.
 *
 * Not here: what is drawn (plot_fig_*.c), scales (plot_axes.c).
 */
#include "plot_int.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

/* viridis (van der Walt and Smith 2015) at 7 even steps: lightness rises
 * with the value, so the order reads in any color vision and in grey */
#define VIRIDIS_7 {"#440154", "#443983", "#31688e", "#21918c", "#35b779", "#90d743", "#fde725"}
/* viridis at 9, bright for a low loss; from bin 5 on it is dark enough for
 * white type, on either ground (each cell is filled, the ground unseen) */
#define VIRIDIS_9_DOWN {"#fde725", "#addc30", "#5ec962", "#28ae80", "#21918c", "#2c728e", \
                        "#3b528b", "#472d7b", "#440154"}
/* The screen palette: the live view's curses colors (tui_curses.c), as a
 * terminal shows them. The gradient states (normal pale teal, vanishing
 * blue, exploding red-orange, as the live view's cyan, blue and red) stay
 * apart in every common color vision: at least 30 CIEDE2000 between any
 * two, and from the ground, under Machado, Oliveira and Fernandes 2009's
 * simulation of protanopia, deuteranopia and tritanopia (plot_check.py's
 * states);
 * green against red, the old pair, was under 4 for a deuteranope. */
static const palette pal_screen = {
    "#121417", "#e6e6e6", "#33383d", "#9aa0a6", "#2ec4d6", "#e05ad8", "#5fd35f", "#b7f29b",
    "#f0c419", "#a0e0d0", "#4a5fd0", "#f0502f", "#f0502f", "6 5", 2,
    VIRIDIS_7,
    {"#2ec4d6", "#f0c419", "#e05ad8", "#5fd35f", "#ff4d4d", "#5c7cfa", "#e6e6e6", "#ff922b"},
    VIRIDIS_9_DOWN,
    5};
/* --light, for print: near-black type on white, a pale grid, series dark
 * enough to read on white (the screen's cyan and yellow are not). The
 * states (normal teal, vanishing navy, exploding red, as the screen's) are
 * as far apart, and from white, as the screen's from its ground: at least
 * 30 CIEDE2000 under the same simulations (Machado, Oliveira and Fernandes
 * 2009; tests/lib/plot_check.py states); a paler teal came within 15 of
 * white for a protanope, the Okabe-Ito green and blue within 13 of each
 * other for a tritanope. The not-finite hatching is the exploding red on
 * white. The maps' and heatmaps' viridis is the screen's. */
static const palette pal_light = {
    "#ffffff", "#1a1a1a", "#e3e3e3", "#5f6368", "#0b62a4", "#b8368f", "#1b7f3a", "#5f9a4f",
    "#9a6b00", "#168c9b", "#171646", "#f9280f", "#f9280f", "6 5", 2,
    VIRIDIS_7,
    {"#0b62a4", "#b35900", "#b8368f", "#1b7f3a", "#c62828", "#5a3fa8", "#1a1a1a", "#8c6d00"},
    VIRIDIS_9_DOWN,
    5};
/* Grey: the heatmap's lightness rises with the value as viridis's does; a
 * setting's marker is a wide solid grey line, unlike the black series
 * (dashed, it looked like run b's dotted loss) and the thin light grid. */
static const palette pal_mono = {
    "#ffffff", "#000000", "#d0d0d0", "#555555", "#000000", "#000000", "#000000", "#000000",
    "#8c8c8c", "#000000", "#000000", "#000000", "#000000", "", 4,
    {"#252525", "#4d4d4d", "#737373", "#969696", "#bdbdbd", "#d9d9d9", "#f4f4f4"},
    {"#000000", "#000000", "#000000", "#000000", "#000000", "#000000", "#000000", "#000000"},
    {"#ffffff", "#eeeeee", "#dddddd", "#cccccc", "#bbbbbb", "#aaaaaa", "#888888", "#666666",
     "#444444"},
    6};
/* --mono: series told apart by dashes and marker shapes */
const char *const plot_svg_mono_dash[8] = {"", "14 7", "4 5", "14 5 3 5", "24 6", "2 3", "8 3 8 9",
                                      "18 4 4 4 4 4"};

/* Type >= 20 px at 1600 wide (24 body, 20 captions), never under 9-10 px. */
void plot_svg_init(svg *v, FILE *f, const plot_opts *o)
{
    *v = (svg){.f = f, .o = o, .p = o->mono ? &pal_mono : o->light ? &pal_light : &pal_screen, .s = o->w / 1600.0};
    v->fs = fmax(10, 24 * v->s);
    v->fs_small = fmax(9, 20 * v->s);
}

/* ---- SVG primitives -------------------------------------------------------------- */

void plot_svg_esc(FILE *f, const char *t)
{
    for (; *t; t++) {
        switch (*t) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        default:
            if ((unsigned char)*t >= 0x20 || *t == '\t')
                fputc(*t, f);
        }
    }
}

/* anchor: 's'tart, 'm'iddle, 'e'nd */
void plot_svg_text(svg *v, double x, double y, double size, char anchor, const char *fill,
                 const char *extra, const char *fmt, ...)
{
    char b[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b, sizeof b, fmt, ap);
    va_end(ap);
    fprintf(v->f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%.1f\" fill=\"%s\" text-anchor=\"%s\"%s%s>",
            x, y, size, fill, anchor == 'm' ? "middle" : anchor == 'e' ? "end" : "start",
            extra ? " " : "", extra ? extra : "");
    plot_svg_esc(v->f, b);
    fputs("</text>\n", v->f);
}

void plot_svg_line(svg *v, double x1, double y1, double x2, double y2, const char *stroke,
                 double width, const char *dash)
{
    fprintf(v->f,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"%.1f\"",
            x1, y1, x2, y2, stroke, width);
    if (dash && dash[0])
        fprintf(v->f, " stroke-dasharray=\"%s\"", dash);
    fputs("/>\n", v->f);
}

void plot_svg_shape(svg *v, int sh, double x, double y, double r, const char *color)
{
    const char *fill = v->o->mono ? v->p->bg : color;
    switch (sh) {
    case SH_CIRCLE:
        fprintf(v->f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" fill=\"%s\" stroke=\"%s\" stroke-width=\"2\"/>\n",
                x, y, r, fill, color);
        break;
    case SH_SQUARE:
        fprintf(v->f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" stroke=\"%s\" stroke-width=\"2\"/>\n",
                x - r, y - r, 2 * r, 2 * r, fill, color);
        break;
    case SH_TRIANGLE:
    case SH_TRIANGLE_DOWN:
    case SH_DIAMOND:
        if (sh != SH_DIAMOND) {
            double k = sh == SH_TRIANGLE ? 1 : -1;
            fprintf(v->f, "<path d=\"M%.1f %.1fL%.1f %.1fL%.1f %.1fZ\"", x, y - k * r, x + r, y + k * r,
                    x - r, y + k * r);
        }
        else
            fprintf(v->f, "<path d=\"M%.1f %.1fL%.1f %.1fL%.1f %.1fL%.1f %.1fZ\"", x, y - r, x + r, y, x,
                    y + r, x - r, y);
        fprintf(v->f, " fill=\"%s\" stroke=\"%s\" stroke-width=\"2\"/>\n", fill, color);
        break;
    default:
        break;
    }
}

void plot_svg_begin(svg *v)
{
    const plot_opts *o = v->o;
    fprintf(v->f,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "viewBox=\"0 0 %d %d\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n"
            "<defs><pattern id=\"nan\" width=\"10\" height=\"10\" patternUnits=\"userSpaceOnUse\">"
            "<rect width=\"10\" height=\"10\" fill=\"%s\"/><path d=\"M0 10L10 0\" stroke=\"%s\" "
            "stroke-width=\"3\"/></pattern>"
            /* a map's exploded cell: off the loss scale, cross-hatched */
            "<pattern id=\"exploded\" width=\"12\" height=\"12\" patternUnits=\"userSpaceOnUse\">"
            "<rect width=\"12\" height=\"12\" fill=\"%s\"/><path d=\"M0 12L12 0M0 0L12 12\" "
            "stroke=\"%s\" stroke-width=\"2\"/></pattern>"
            /* an MLP bar: its state's color under stripes of the ground */
            "<pattern id=\"hatch\" width=\"9\" height=\"9\" patternUnits=\"userSpaceOnUse\">"
            "<path d=\"M0 9L9 0M-2 2L2 -2M7 11L11 7\" stroke=\"%s\" stroke-width=\"2.5\"/></pattern></defs>\n"
            "<rect class=\"background\" width=\"%d\" height=\"%d\" fill=\"%s\"/>\n",
            o->w, o->h, o->w, o->h, v->p->bg, v->p->nan, v->p->bg, v->p->explode, v->p->bg, o->w,
            o->h, v->p->bg);
}

/* Advance widths of DejaVu Sans (the first font the figures ask for, and
 * wider than Helvetica or Arial, the fallbacks) for ' '..'~', in 1/1000
 * em, read from the font's hmtx table: regular, then bold. */
static const short dejavu_w[2][95] = {{
    318, 401, 460, 838, 636, 950, 780, 275, 390, 390, 500, 838, 318, 361, 318, 337, 636, 636,
    636, 636, 636, 636, 636, 636, 636, 636, 337, 337, 838, 838, 838, 531, 1000, 684, 686, 698,
    770, 632, 575, 775, 752, 295, 295, 656, 557, 863, 748, 787, 603, 787, 695, 635, 611, 732,
    684, 989, 685, 611, 685, 390, 337, 390, 838, 500, 500, 613, 635, 550, 635, 615, 352, 635,
    634, 278, 278, 579, 278, 974, 634, 612, 635, 635, 411, 521, 392, 634, 592, 818, 592, 592,
    525, 636, 337, 636, 838,
}, {
    348, 456, 521, 838, 696, 1002, 872, 306, 457, 457, 523, 838, 380, 415, 380, 365, 696, 696,
    696, 696, 696, 696, 696, 696, 696, 696, 400, 400, 838, 838, 838, 580, 1000, 774, 762, 734,
    830, 683, 683, 821, 837, 372, 372, 775, 637, 995, 837, 850, 733, 850, 770, 720, 682, 812,
    774, 1103, 771, 724, 725, 457, 365, 457, 838, 500, 500, 675, 716, 593, 716, 678, 435, 716,
    712, 343, 343, 665, 343, 1042, 712, 687, 716, 716, 493, 595, 478, 712, 652, 924, 645, 652,
    582, 712, 365, 712, 838,
}};

double plot_svg_text_width(const char *t, double size, int bold)
{
    double em = 0;
    for (const unsigned char *c = (const unsigned char *)t; *c; c++) {
        if (*c >= 0x20 && *c < 0x7f)
            em += dejavu_w[bold != 0][*c - 0x20] / 1000.0;
        else if (*c >= 0xc0) /* a non-ASCII character (its first byte): an em, the widest */
            em += 1;
    }
    return em * size * SVG_WIDTH_MARGIN;
}

/* Text of at most maxw pixels: the type made smaller for a long one. */
void plot_svg_text_fit(svg *v, double x, double y, double maxw, double size, const char *fill,
                  const char *extra, const char *t)
{
    double wide = plot_svg_text_width(t, size, 0);
    plot_svg_text(v, x, y, wide > maxw ? size * maxw / wide : size, 's', fill, extra, "%s", t);
}

/* The line being filled, and w's lines so far. */
static void wrap_emit(svg_wrapped *w, const char *line)
{
    if (w->n < SVG_LINES)
        snprintf(w->line[w->n], SVG_LINELEN, "%s", line);
    w->n++;
}

/* Pieces of t[0..len) between seps[0]s, joined again while the line fits;
 * a piece too wide alone is broken at seps[1] (and so on). A line broken
 * at a separator keeps its mark ("," of ", "); the last line is left in
 * cur for what follows. */
static void wrap_pack(svg_wrapped *w, char *cur, const char *t, size_t len, double size, int bold,
                      double maxw, const char *const *seps)
{
    const char *sep = seps[0];
    size_t sl = strlen(sep), keep = strcspn(sep, " ");
    for (const char *p = t, *end = t + len; p < end;) {
        const char *q = sep ? strstr(p, sep) : NULL;
        size_t pl = q && q < end ? (size_t)(q - p) : (size_t)(end - p);
        char cand[SVG_LINELEN];
        snprintf(cand, sizeof cand, "%s%s%.*s", cur, cur[0] ? sep : "", (int)pl, p);
        if (!cur[0] || plot_svg_text_width(cand, size, bold) <= maxw) {
            snprintf(cur, SVG_LINELEN, "%s", cand);
        } else {
            snprintf(cand, sizeof cand, "%s%.*s", cur, (int)keep, sep);
            wrap_emit(w, cand);
            snprintf(cur, SVG_LINELEN, "%.*s", (int)pl, p);
        }
        if (plot_svg_text_width(cur, size, bold) > maxw && seps[1]) { /* too wide alone */
            char piece[SVG_LINELEN];
            snprintf(piece, sizeof piece, "%s", cur);
            cur[0] = 0;
            wrap_pack(w, cur, piece, strlen(piece), size, bold, maxw, seps + 1);
        }
        p += pl + (q && q < end ? sl : 0);
    }
}

void plot_svg_wrap(svg_wrapped *w, const char *t, double size, int bold, double maxw, int maxl,
              const char *const *seps)
{
    for (int tries = 0;; tries++, size *= 0.92) {
        char cur[SVG_LINELEN] = "";
        w->n = 0;
        w->size = size;
        wrap_pack(w, cur, t, strlen(t), size, bold, maxw, seps);
        wrap_emit(w, cur);
        int fits = w->n <= maxl;
        for (int i = 0; i < w->n && i < SVG_LINES && fits; i++)
            fits = plot_svg_text_width(w->line[i], size, bold) <= maxw;
        if (fits || tries == 40) {
            w->n = w->n < maxl ? w->n : maxl;
            return;
        }
    }
}

/* ---- legend ---------------------------------------------------------------------- */

void plot_legend_add(legend *lg, const char *color, const char *dash, int shape_, int swatch,
                       double opacity, const char *fmt, ...)
{
    if (lg->n >= LEGEND_MAX)
        return;
    legend_entry *e = &lg->e[lg->n++];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->text, sizeof e->text, fmt, ap);
    va_end(ap);
    e->color = color;
    e->dash = dash;
    e->shape = shape_;
    e->swatch = swatch;
    e->opacity = opacity;
}

/* A legend's box at type size fs: w, h. */
void plot_legend_size(const legend *lg, double fs, double *w, double *h)
{
    double longest = 0;
    for (int i = 0; i < lg->n; i++)
        longest = fmax(longest, plot_svg_text_width(lg->e[i].text, fs, 0));
    *w = fs * 2.2 + fs * 0.8 + longest + fs;
    *h = fs * 1.35 * lg->n + fs * 0.6;
}

/* The legend with its box's top left at x, y, type size fs, on a box that
 * hides the grid. */
void plot_legend_draw_at(svg *v, double x, double y, double fs, const legend *lg)
{
    double rowh = fs * 1.35, sw = fs * 2.2, w, h;
    plot_legend_size(lg, fs, &w, &h);
    fprintf(v->f, "<g class=\"legend\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                  "fill=\"%s\" fill-opacity=\"0.85\" stroke=\"%s\"/>\n",
            x, y, w, h, v->p->bg, v->p->dim);
    for (int i = 0; i < lg->n; i++) {
        const legend_entry *e = &lg->e[i];
        double cy = y + fs * 0.3 + rowh * (i + 0.5), lx = x + fs * 0.5;
        if (e->swatch) /* filled as its bars are (plot_fig_layers.c): a hatched one
                        * hatched, in --mono the ground, framed */
            fprintf(v->f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" "
                          "fill-opacity=\"%.2f\" stroke=\"%s\"/>\n",
                    lx, cy - fs * 0.4, sw, fs * 0.8,
                    v->o->mono && e->swatch == 2 ? v->p->bg : e->color, e->opacity, v->p->fg);
        if (e->swatch == 2 && !v->o->mono)
            fprintf(v->f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                          "fill=\"url(#hatch)\"/>\n", lx, cy - fs * 0.4, sw, fs * 0.8);
        else
            plot_svg_line(v, lx, cy, lx + sw, cy, e->color, 3 * v->s, e->dash);
        plot_svg_shape(v, e->shape, lx + sw / 2, cy, fs * 0.25, e->color);
        plot_svg_text(v, lx + sw + fs * 0.5, cy + fs * 0.35, fs, 's', v->p->fg, NULL, "%s", e->text);
    }
    fputs("</g>\n", v->f);
}

/* In a column of its own beside the panels (col): its left edge at the
 * column's, the type made smaller when the longest entry would reach past
 * the column (over a panel, or off the canvas) or the last below it. */
void plot_legend_draw_beside(svg *v, box col, const legend *lg)
{
    if (lg->n == 0)
        return;
    double fs = v->fs, w, h;
    plot_legend_size(lg, fs, &w, &h);
    fs *= fmin(1, fmin(col.w / w, (col.h - v->fs * 0.5) / h));
    plot_legend_draw_at(v, col.x, col.y + v->fs * 0.5, fs, lg);
}
