/* tui_follow.h - the dashboard's follow mode (--follow FILE): the view's
 * state over a stream reader (stream.h), what its keys do, and the lines
 * of the frame that differ from the lab's (the status lines, the row
 * under the chart).
 *
 * The keys that would change the lab's model are refused with a note and
 * an event; space, + and - and C append to the run's control file
 * (stream_control_send), show "sent: ..." as an event and the command as
 * pending until the run acknowledges it ("applied at step N"); a run that
 * ended or whose writer is gone is sent nothing. Left/Right (Home/End)
 * move the view's step through the history: the replay. The status line
 * says ENDED, "no new step for N s" or "writer gone" (stream_liveness).
 * D shows the lab's rules on the run (the reader runs them), and a there
 * sends the fix.
 *
 * No curses (tui_curses.c calls these), so the tests drive it whole.
 */
#ifndef NS_TUI_FOLLOW_H
#define NS_TUI_FOLLOW_H

#include "stream.h"
#include "tui.h"

#define TUI_FOLLOW_READ (4 << 20) /* bytes read per frame at most: a big
                                   * file loads over a few frames, keys
                                   * stay answered */

#define TUI_FOLLOW_PENDING 8 /* commands shown as pending at once */

typedef struct {
    stream_reader *r;
    const char *path;
    long view;               /* the history point shown; -1 = the newest (live) */
    unsigned generation;     /* the reader's, when view was set */
    int changed;             /* a key changed the view since the last copy */
    int paused;              /* what space sends next: resume when 1 */
    trainer_state last_state; /* the stream's, when paused was last synced */
    int n_layer;             /* the stream's, when the selection was last set */
    struct {
        long seq;
        char cmd[16];
    } pending[TUI_FOLLOW_PENDING]; /* sent, not yet acknowledged by the run */
    int n_pending;
    stream_live live;        /* the writer's state at the last update */
    char live_text[96];      /* and its phrase ("no new step for 12 s") */
} tui_follow_state;

/* 0, or -1 when out of memory. */
int tui_follow_init(tui_follow_state *f, const char *path);
void tui_follow_free(tui_follow_state *f);

/* Read what is new (at most TUI_FOLLOW_READ bytes) and, when anything
 * changed, copy the snapshot as viewed into dst. When the layer count
 * changes (known at last, a new run), ui's selection goes back to the top
 * layer. Returns 1 when dst changed. */
int tui_follow_update(tui_follow_state *f, trainer_snapshot *dst, tui_ui *ui);

/* One action in follow mode. Returns 1 when the frame must be redrawn (it
 * always is after a key; the return says whether dst must be copied again). */
int tui_follow_action(tui_follow_state *f, tui_ui *ui, tui_action a);

/* The D panel's lines (unwrapped): the lab's rules on the followed run
 * (the stream reader's diag_observe), each finding with what to try and
 * its fix as the run can take it (an LR factor through the control file,
 * or how to resume from the run's own checkpoint), and the panel's keys:
 * a applies the fix, space, + - and C act and leave the panel open.
 * Returns how many. */
int tui_follow_diag_lines(const tui_follow_state *f, char (*line)[TUI_DIAG_LINE], int max);

/* Over a frame tui_draw drew from s: follow mode's status lines (its
 * clickable keys replace the lab's toggles) and the row under the chart. */
void tui_follow_draw(tui_grid *g, const trainer_snapshot *s, tui_ui *ui,
                     const tui_follow_state *f);

#endif
