/* stopsig.h - the stop signals of a run without a terminal: SIGINT,
 * SIGTERM and SIGHUP set one flag that the run checks between steps (or a
 * sweep between children), so its outputs hold everything finished.
 *
 * Not here: the live view's signals (tui_curses.c installs its own, which
 * also restore the terminal). */
#ifndef NS_STOPSIG_H
#define NS_STOPSIG_H

#include <signal.h>

/* Set by the handlers stopsig_catch installs; 0 until a stop signal. */
extern volatile sig_atomic_t stopsig_requested;

/* Install the handlers for SIGINT, SIGTERM and SIGHUP. A signal ignored
 * when the process started stays ignored: `nohup normscope --headless &`
 * must outlive the session, and a shell starts background jobs with
 * SIGINT ignored. No SA_RESTART: a blocking waitpid or read returns, so
 * the caller notices at once. */
void stopsig_catch(void);

#endif
