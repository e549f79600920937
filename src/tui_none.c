/* tui_none.c - the live view's entry points in a build without curses
 * (make CURSES=0, make normscope-headless): a headless target, or a cross
 * build for a machine whose ncurses is not at hand. They start nothing
 * and say why; main.c asks tui_live_available() first, so a run that
 * wants the live view stops before it trains, with one line and exit 2.
 * Everything headless (--headless, --plot, a sweep's table) is the same
 * library as in the usual binary.
 */
#include "tui.h"
#include "tui_sweep.h"

#include <stdio.h>

int tui_live_available(void) { return 0; }

static tui_end no_live(char *err, size_t errlen)
{
    snprintf(err, errlen, "%s", TUI_NO_LIVE);
    return TUI_END_ERROR;
}

tui_end tui_run(trainer *t, const tui_options *o, char *err, size_t errlen)
{
    (void)t, (void)o;
    return no_live(err, errlen);
}

tui_end tui_follow(const char *path, const tui_options *o, char *err, size_t errlen)
{
    (void)path, (void)o;
    return no_live(err, errlen);
}

int tui_sweep_live(sweep_ctx *c, void *arg)
{
    (void)c, (void)arg;
    fprintf(stderr, "normscope: %s\n", TUI_NO_LIVE);
    return 2;
}
