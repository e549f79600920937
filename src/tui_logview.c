/* tui_logview.c - the event log's scroll state: which events the log
 * shows, following the newest or held where the user scrolled back to.
 *
 * The state is the index of the newest event shown (ui->log_newest), or
 * -1 while following. An index, not a distance from the end: events that
 * arrive while the user reads an older one do not move the view (as a
 * pager's, or tmux's copy mode). Scrolling newer past the newest event
 * follows again. The keys act on what the last frame showed (its event
 * count and rows), so a key means what the user saw.
 *
 * No curses, no drawing: tui_draw_events draws what tui_log_newest says.
 */
#include "tui.h"

/* The oldest event the snapshot's ring still holds. */
static long oldest_kept(long total)
{
    long lo = total - TRAINER_EVENTS;
    return lo > 0 ? lo : 0;
}

long tui_log_newest(const tui_ui *ui, long total, int lines)
{
    if (total <= 0)
        return -1;
    if (ui->log_newest < 0 || ui->log_newest >= total - 1)
        return total - 1;
    /* the ring overwrote what was held: the view moves to the oldest page kept */
    long lowest = oldest_kept(total) + (lines > 0 ? lines : 1) - 1;
    if (lowest > total - 1)
        lowest = total - 1;
    return ui->log_newest < lowest ? lowest : ui->log_newest;
}

long tui_log_newer(const tui_ui *ui, long total, int lines)
{
    long n = tui_log_newest(ui, total, lines);
    return n < 0 ? 0 : total - 1 - n;
}

void tui_log_scroll(tui_ui *ui, long delta)
{
    long total = ui->log_total;
    int lines = ui->log_rows > 0 ? ui->log_rows : 1;
    long cur = tui_log_newest(ui, total, lines);
    if (cur < 0) {
        ui->log_newest = -1;
        return;
    }
    long want = cur + delta;
    long lowest = oldest_kept(total) + lines - 1; /* a full page at the oldest */
    if (want < lowest)
        want = lowest;
    ui->log_newest = want >= total - 1 ? -1 : want; /* past the newest: follow */
}

long tui_log_page(const tui_ui *ui)
{
    return ui->log_rows > 1 ? ui->log_rows - 1 : 1; /* a page keeps one line of context */
}

int tui_log_at_row(const tui_ui *ui, int r)
{
    return ui->log_rows > 0 && r >= ui->log_top - 1 && r < ui->log_top + ui->log_rows;
}

void tui_log_frame(tui_ui *ui, tui_rect events, long total)
{
    ui->log_total = total;
    ui->log_rows = events.h > 1 && events.w > 0 ? events.h - 1 : 0;
    ui->log_top = events.r + 1;
}
