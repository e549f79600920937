/* nstime.h - the one monotonic clock every module reads (seconds as a
 * double): step timing in the engine, the trainer's run clock, the live
 * view's frames. Not wall-clock time, and not the trainer's held clock
 * (trainer.c stands that still over a Ctrl-Z on top of this one).
 */
#ifndef NS_NSTIME_H
#define NS_NSTIME_H

/* CLOCK_MONOTONIC in seconds: only differences mean anything. */
double nstime_now(void);

#endif
