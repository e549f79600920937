/* pool.h - a small persistent thread pool for the kernels of one step.
 * Public for the runtime (trainer.h: the --compare pair's pool) and for
 * POOL_MAX_THREADS and pool_default_threads, --threads' range in the
 * settings table (settings.c) and its default (cli.c).
 *
 * Made once per engine (never inside a step): n - 1 worker threads plus
 * the caller, which always takes tasks too. pool_run hands out task
 * indices 0..n_tasks-1 on a first-come basis and returns when every task
 * has run, exactly once. Idle workers spin briefly, then sleep on a
 * condition variable, so a dispatch right after another is cheap and an
 * idle pool costs nothing. Workers block the signals their creator says
 * (pool_create), so a front end's signals reach the front end.
 *
 * Which task runs on which thread varies from run to run: callers split
 * work so that each output element is computed by one task, in an order
 * that does not depend on the split (see ops.c), so results never depend
 * on the thread count. One caller at a time; a task must not call
 * pool_run. A NULL pool is valid everywhere and means "the caller alone".
 */
#ifndef NS_POOL_H
#define NS_POOL_H

#include <signal.h>

typedef struct ns_pool ns_pool;

/* task: 0..n_tasks-1; thread: 0 (the caller) .. pool_threads()-1, for
 * per-thread scratch */
typedef void (*pool_fn)(void *ctx, int task, int thread);

enum { POOL_MAX_THREADS = 64 };

/* A pool of n threads in all (the caller included), 1..POOL_MAX_THREADS.
 * n == 1 starts no thread. NULL when a thread could not be started. The
 * workers start with the signals in *block blocked, on top of the creating
 * thread's mask, so that those reach the thread that handles them (a front
 * end's); NULL: the creating thread's mask as it is. The pool knows no
 * signal by name: the caller says which. */
ns_pool *pool_create(int n, const sigset_t *block);
/* Stops and joins the workers; NULL is fine. */
void pool_free(ns_pool *p);

/* Threads in all (1 for NULL). */
int pool_threads(const ns_pool *p);

/* Run fn(ctx, i, thread) for every i in 0..n_tasks-1; returns when all
 * have finished. With one task or one thread, the caller runs them in
 * order without touching another thread. */
void pool_run(ns_pool *p, int n_tasks, pool_fn fn, void *ctx);

/* Part `part` of `parts` of the range [0, n), cut at multiples of align
 * (the last part takes the rest): [*lo, *hi), possibly empty. */
void pool_split(int n, int parts, int align, int part, int *lo, int *hi);

/* The number of online cores, clamped to 1..POOL_MAX_THREADS. */
int pool_default_threads(void);

#endif
