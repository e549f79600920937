/* tui_palette.c - the colours of the live view's styles, per scheme (a
 * dark or default background, and --light's white one), as htop maps
 * semantic colour names per scheme. Curses-free: the curses layer turns
 * an entry into a colour pair (tui_curses.c); the tests read the table
 * and the help's glossary names the colours from it.
 */
#include "tui.h"

#include <stdio.h>

/* The 8-colour palette of a dark (or the terminal's default)
 * background: every pair is readable on a dark or a light default
 * background but the yellow markers and dim labels (--light has none);
 * states are reversed blocks. -1 = the terminal's default colour. */
static const tui_style_spec dark[TUI_S_COUNT] = {
    [TUI_S_TEXT] = {-1, -1, 0, 0},
    [TUI_S_DIM] = {-1, -1, TUI_A_DIM, TUI_A_DIM},
    [TUI_S_TITLE] = {TUI_C_CYAN, -1, TUI_A_BOLD, TUI_A_BOLD},
    [TUI_S_BORDER] = {TUI_C_CYAN, -1, 0, 0},
    [TUI_S_STATUS] = {-1, -1, 0, 0},
    [TUI_S_LABEL] = {TUI_C_CYAN, -1, 0, 0},
    [TUI_S_KEY] = {TUI_C_BLACK, TUI_C_CYAN, 0, TUI_A_REVERSE},
    [TUI_S_TOGGLE] = {-1, -1, TUI_A_BOLD, TUI_A_BOLD},
    [TUI_S_RUN] = {TUI_C_BLACK, TUI_C_GREEN, TUI_A_BOLD, TUI_A_REVERSE},
    [TUI_S_PAUSE] = {TUI_C_BLACK, TUI_C_YELLOW, TUI_A_BOLD, TUI_A_REVERSE},
    [TUI_S_DIVERGED] = {TUI_C_WHITE, TUI_C_RED, TUI_A_BOLD, TUI_A_REVERSE | TUI_A_BOLD},
    [TUI_S_DONE] = {TUI_C_BLACK, TUI_C_CYAN, TUI_A_BOLD, TUI_A_REVERSE},
    [TUI_S_FROZEN] = {TUI_C_BLACK, TUI_C_MAGENTA, TUI_A_BOLD, TUI_A_REVERSE},
    /* the bar states: cyan, bright blue, bright red (bold is bright in
     * most terminals) stay apart in every common color vision, green and
     * red did not (tests/lib/plot_check.py tui_states) */
    [TUI_S_NORMAL] = {TUI_C_CYAN, -1, 0, 0},
    [TUI_S_VANISH] = {TUI_C_BLUE, -1, TUI_A_BOLD, TUI_A_DIM},
    [TUI_S_EXPLODE] = {TUI_C_RED, -1, TUI_A_BOLD, TUI_A_BOLD},
    [TUI_S_WARN] = {TUI_C_YELLOW, -1, TUI_A_BOLD, TUI_A_BOLD},
    [TUI_S_BAD] = {TUI_C_WHITE, TUI_C_RED, TUI_A_BOLD, TUI_A_REVERSE | TUI_A_BOLD},
    [TUI_S_TRAIN] = {TUI_C_CYAN, -1, 0, 0},
    [TUI_S_VAL] = {TUI_C_MAGENTA, -1, TUI_A_BOLD, TUI_A_BOLD},
    [TUI_S_MARK] = {TUI_C_YELLOW, -1, 0, TUI_A_UNDERLINE},
    [TUI_S_SELECT] = {TUI_C_BLACK, TUI_C_WHITE, 0, TUI_A_REVERSE},
    [TUI_S_HEAT0] = {TUI_C_BLUE, -1, 0, TUI_A_DIM},
    [TUI_S_HEAT1] = {TUI_C_BLUE, -1, TUI_A_BOLD, 0},
    [TUI_S_HEAT2] = {TUI_C_CYAN, -1, 0, 0},
    [TUI_S_HEAT3] = {TUI_C_GREEN, -1, 0, 0},
    [TUI_S_HEAT4] = {TUI_C_YELLOW, -1, TUI_A_BOLD, TUI_A_BOLD},
    [TUI_S_HEAT5] = {TUI_C_RED, -1, TUI_A_BOLD, TUI_A_BOLD},
    [TUI_S_HEAT6] = {TUI_C_MAGENTA, -1, TUI_A_BOLD, TUI_A_BOLD | TUI_A_REVERSE},
    [TUI_S_EV_SETTING] = {TUI_C_CYAN, -1, TUI_A_BOLD, TUI_A_BOLD},
    [TUI_S_EV_VAL] = {-1, -1, TUI_A_DIM, TUI_A_DIM},
    [TUI_S_EV_NOTE] = {TUI_C_YELLOW, -1, 0, TUI_A_UNDERLINE},
    [TUI_S_TWIN] = {TUI_C_GREEN, -1, TUI_A_BOLD, TUI_A_BOLD},
};

/* --light: a white background (a projector, a light terminal theme).
 * Text on the default background is in a dark colour: no yellow, cyan
 * or white (they vanish on white), no dim (grey on white) and no bold
 * with a colour (bold selects the bright variant in most terminals,
 * paler still). States and keys stay coloured blocks. The bar states
 * are black, blue and red: apart in every colour vision, and from the
 * white ground (tests/lib/plot_check.py tui_states). */
static const tui_style_spec light[TUI_S_COUNT] = {
    [TUI_S_TEXT] = {-1, -1, 0, 0},
    [TUI_S_DIM] = {-1, -1, 0, 0},
    [TUI_S_TITLE] = {TUI_C_BLUE, -1, 0, TUI_A_BOLD},
    [TUI_S_BORDER] = {TUI_C_BLUE, -1, 0, 0},
    [TUI_S_STATUS] = {-1, -1, 0, 0},
    [TUI_S_LABEL] = {TUI_C_BLUE, -1, 0, 0},
    [TUI_S_KEY] = {TUI_C_WHITE, TUI_C_BLUE, 0, TUI_A_REVERSE},
    [TUI_S_TOGGLE] = {-1, -1, TUI_A_BOLD, TUI_A_BOLD},
    [TUI_S_RUN] = {TUI_C_WHITE, TUI_C_GREEN, 0, TUI_A_REVERSE},
    [TUI_S_PAUSE] = {TUI_C_BLACK, TUI_C_YELLOW, 0, TUI_A_REVERSE},
    [TUI_S_DIVERGED] = {TUI_C_WHITE, TUI_C_RED, 0, TUI_A_REVERSE | TUI_A_BOLD},
    [TUI_S_DONE] = {TUI_C_WHITE, TUI_C_BLUE, 0, TUI_A_REVERSE},
    [TUI_S_FROZEN] = {TUI_C_WHITE, TUI_C_MAGENTA, 0, TUI_A_REVERSE},
    [TUI_S_NORMAL] = {TUI_C_BLACK, -1, 0, 0},
    [TUI_S_VANISH] = {TUI_C_BLUE, -1, 0, TUI_A_DIM},
    [TUI_S_EXPLODE] = {TUI_C_RED, -1, 0, TUI_A_BOLD},
    [TUI_S_WARN] = {TUI_C_RED, -1, 0, TUI_A_BOLD},
    [TUI_S_BAD] = {TUI_C_WHITE, TUI_C_RED, 0, TUI_A_REVERSE | TUI_A_BOLD},
    [TUI_S_TRAIN] = {TUI_C_BLUE, -1, 0, 0},
    [TUI_S_VAL] = {TUI_C_MAGENTA, -1, 0, TUI_A_BOLD},
    [TUI_S_MARK] = {TUI_C_BLACK, -1, TUI_A_UNDERLINE, TUI_A_UNDERLINE},
    [TUI_S_SELECT] = {TUI_C_WHITE, TUI_C_BLUE, 0, TUI_A_REVERSE},
    [TUI_S_HEAT0] = {TUI_C_BLUE, -1, 0, TUI_A_DIM},
    [TUI_S_HEAT1] = {TUI_C_BLUE, -1, 0, 0},
    [TUI_S_HEAT2] = {TUI_C_GREEN, -1, 0, 0},
    [TUI_S_HEAT3] = {TUI_C_BLACK, TUI_C_GREEN, 0, 0},
    [TUI_S_HEAT4] = {TUI_C_MAGENTA, -1, 0, TUI_A_BOLD},
    [TUI_S_HEAT5] = {TUI_C_RED, -1, 0, TUI_A_BOLD},
    [TUI_S_HEAT6] = {TUI_C_WHITE, TUI_C_MAGENTA, 0, TUI_A_BOLD | TUI_A_REVERSE},
    [TUI_S_EV_SETTING] = {TUI_C_BLUE, -1, 0, TUI_A_BOLD},
    [TUI_S_EV_VAL] = {-1, -1, 0, 0},
    [TUI_S_EV_NOTE] = {TUI_C_MAGENTA, -1, 0, TUI_A_UNDERLINE},
    [TUI_S_TWIN] = {TUI_C_GREEN, -1, 0, TUI_A_BOLD},
};

const tui_style_spec *tui_palette(int light_bg)
{
    return light_bg ? light : dark;
}

void tui_palette_name(tui_style s, int light_bg, int color, char *b, size_t n)
{
    static const char *const names[] = {"black", "red", "green", "yellow",
                                        "blue", "magenta", "cyan", "white"};
    const tui_style_spec *e = &tui_palette(light_bg)[s];
    if (!color) { /* no colours: the glyphs and attributes say it */
        snprintf(b, n, "%s", e->mono_attr & TUI_A_REVERSE ? "reversed"
                             : e->mono_attr & TUI_A_BOLD  ? "bold"
                             : e->mono_attr & TUI_A_DIM   ? "dim"
                                                          : "plain");
        return;
    }
    const char *fg = e->fg >= 0 && e->fg < 8 ? names[e->fg] : "plain";
    if (e->bg >= 0 && e->bg < 8)
        snprintf(b, n, "%s on %s", fg, names[e->bg]);
    else
        snprintf(b, n, "%s%s", e->color_attr & TUI_A_BOLD ? "bright " : "", fg);
}
