/* tui_grid.c - the in-memory cell grid the widgets draw into, and UTF-8
 * in and out of it. No curses here: the curses layer copies rows out with
 * tui_row_utf8, and the tests compare the same rows as strings. */
#include "tui.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tui_grid_resize(tui_grid *g, int rows, int cols)
{
    if (rows < 0)
        rows = 0;
    if (cols < 0)
        cols = 0;
    size_t n = (size_t)rows * (size_t)cols;
    tui_cell *c = realloc(g->cells, (n ? n : 1) * sizeof *c);
    if (!c) {
        free(g->cells);
        g->cells = NULL;
        g->rows = g->cols = 0;
        return -1;
    }
    g->cells = c;
    g->rows = rows;
    g->cols = cols;
    tui_grid_clear(g);
    return 0;
}

void tui_grid_free(tui_grid *g)
{
    free(g->cells);
    g->cells = NULL;
    g->rows = g->cols = 0;
}

void tui_grid_clear(tui_grid *g)
{
    size_t n = (size_t)g->rows * (size_t)g->cols;
    for (size_t i = 0; i < n; i++) {
        g->cells[i].ch = ' ';
        g->cells[i].style = TUI_S_TEXT;
    }
}

tui_cell *tui_at(tui_grid *g, int r, int c)
{
    if (r < 0 || c < 0 || r >= g->rows || c >= g->cols)
        return NULL;
    return &g->cells[(size_t)r * (size_t)g->cols + (size_t)c];
}

void tui_put(tui_grid *g, int r, int c, uint32_t ch, tui_style s)
{
    tui_cell *x = tui_at(g, r, c);
    if (x) {
        x->ch = ch;
        x->style = (uint8_t)s;
    }
}

void tui_fill(tui_grid *g, int r, int c, int h, int w, uint32_t ch, tui_style s)
{
    for (int i = 0; i < h; i++)
        for (int j = 0; j < w; j++)
            tui_put(g, r + i, c + j, ch, s);
}

/* Decode one code point from s; *len gets the bytes used (>= 1). Invalid,
 * overlong or truncated sequences decode as '?', one byte at a time. */
static uint32_t utf8_decode(const unsigned char *s, int *len)
{
    unsigned char b = s[0];
    int n;
    uint32_t cp;
    if (b < 0x80) {
        *len = 1;
        return b;
    } else if ((b & 0xE0) == 0xC0) {
        n = 2, cp = b & 0x1F;
    } else if ((b & 0xF0) == 0xE0) {
        n = 3, cp = b & 0x0F;
    } else if ((b & 0xF8) == 0xF0) {
        n = 4, cp = b & 0x07;
    } else {
        *len = 1;
        return '?';
    }
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) {
            *len = 1;
            return '?';
        }
        cp = cp << 6 | (s[i] & 0x3F);
    }
    static const uint32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
        *len = 1;
        return '?';
    }
    *len = n;
    return cp;
}

int tui_puts(tui_grid *g, int r, int c, int maxw, tui_style s, const char *utf8)
{
    const unsigned char *p = (const unsigned char *)utf8;
    int used = 0;
    while (*p && used < maxw) {
        int len;
        uint32_t cp = utf8_decode(p, &len);
        p += len;
        if (cp < 0x20 || cp == 0x7F)
            cp = '?'; /* a control code would move the terminal's cursor */
        tui_put(g, r, c + used, cp, s);
        used++;
    }
    return used;
}

int tui_utf8_encode(uint32_t cp, char out[4])
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | cp >> 6);
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | cp >> 12);
        out[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | cp >> 18);
    out[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    out[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

size_t tui_row_utf8(const tui_grid *g, int r, char *out, size_t cap)
{
    size_t n = 0;
    if (cap == 0)
        return 0;
    if (r >= 0 && r < g->rows) {
        const tui_cell *row = &g->cells[(size_t)r * (size_t)g->cols];
        for (int c = 0; c < g->cols; c++) {
            char b[4];
            int k = tui_utf8_encode(row[c].ch, b);
            if (n + (size_t)k + 1 > cap)
                break;
            memcpy(out + n, b, (size_t)k);
            n += (size_t)k;
        }
    }
    out[n] = 0;
    return n;
}

void tui_box(tui_grid *g, tui_rect r, int unicode, tui_style s)
{
    if (r.h < 2 || r.w < 2)
        return;
    uint32_t h = unicode ? G_HLINE : '-', v = unicode ? G_VLINE : '|';
    for (int c = 1; c < r.w - 1; c++) {
        tui_put(g, r.r, r.c + c, h, s);
        tui_put(g, r.r + r.h - 1, r.c + c, h, s);
    }
    for (int i = 1; i < r.h - 1; i++) {
        tui_put(g, r.r + i, r.c, v, s);
        tui_put(g, r.r + i, r.c + r.w - 1, v, s);
    }
    tui_put(g, r.r, r.c, unicode ? G_TL : '+', s);
    tui_put(g, r.r, r.c + r.w - 1, unicode ? G_TR : '+', s);
    tui_put(g, r.r + r.h - 1, r.c, unicode ? G_BL : '+', s);
    tui_put(g, r.r + r.h - 1, r.c + r.w - 1, unicode ? G_BR : '+', s);
}
