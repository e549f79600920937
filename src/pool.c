/* pool.c - the persistent thread pool of pool.h.
 *
 * One job at a time. A job is published as one 64-bit word, `claim` =
 * (generation << 32) | next task, and its fields (fn, ctx, n_tasks). A
 * thread takes task k of generation G by a compare-and-swap of (G, k) to
 * (G, k + 1). The caller, having claimed what was left, waits only for
 * the tasks others are running (`done`), never for a worker that has not
 * started: on a machine busier than the pool has cores, a descheduled
 * worker does not stall the step.
 *
 * A worker may read the word, be descheduled, and come back when the
 * fields already belong to the next job. So before it rewrites them the
 * caller closes the old generation: the word becomes (G + 1, CLOSED), an
 * odd generation no task can be claimed from, and any swap expecting
 * (G, k) fails; the new job opens as (G + 2, 0). Generations of open jobs
 * are even. All of this is sequentially consistent atomics (a handful per
 * job), which ThreadSanitizer understands. Idle workers spin for a while
 * on the word, then sleep on a condition variable; the caller opens a job
 * under the mutex, so a worker going to sleep cannot miss it.
 *
 * On a machine with fewer free cores than the pool has threads, a worker
 * is descheduled in the middle of a task now and then and the caller
 * waits a whole time slice for it, hundreds of times a step. The caller
 * notices (it waited longer than it worked, and long) and, after a few
 * such jobs, runs the next ones alone for a while (64 jobs, doubling
 * while it keeps happening), then tries the workers again. The tasks are
 * the same whoever runs them, so this changes the speed, never the bits.
 *
 * Not here: what the tasks do, or how work is cut (ops.c, model.c,
 * optim.c, engine.c).
 */
#include "pool.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* a spin-wait hint: lets the sibling hyperthread run, saves power */
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
static inline void cpu_relax(void) { __builtin_ia32_pause(); }
#else
static inline void cpu_relax(void) {}
#endif

enum {
    /* pauses a worker spins for before sleeping, ~50 us at ~50 ns a
     * pause: most gaps between two kernels of a step are shorter; and
     * no longer, as a spinning worker takes CPU time from its own caller
     * when the machine is busy (the scheduler shares a core between
     * processes, or sessions, first) */
    POOL_SPIN = 1 << 10,
    /* pauses the caller spins for a running task before yielding */
    POOL_CALLER_SPIN = 1 << 10,
    /* kernels keep up to ~200 KB of scratch on the stack */
    POOL_STACK = 4 << 20,
    /* a wait for a straggler this long (ns) is a descheduled worker, not
     * a slow wake-up (tens of microseconds) */
    POOL_STALL_NS = 200000,
    POOL_STRIKES = 3,      /* stalled jobs before the caller goes alone */
    POOL_SOLO_MIN = 64,    /* jobs it then runs alone, doubling ... */
    POOL_SOLO_MAX = 8192,  /* ... up to this while stalls go on */
    POOL_CLEAN_RESET = 64, /* clean jobs in a row that reset the doubling */
};

typedef struct {
    ns_pool *p;
    int index; /* 1..n-1; the caller is 0 */
} worker_arg;

struct ns_pool {
    int n; /* threads in all */
    pthread_t *tid;
    worker_arg *args;
    int started;

    pthread_mutex_t mu;
    pthread_cond_t wake;

    /* the job of the current generation */
    _Atomic(pool_fn) fn;
    _Atomic(void *) ctx;
    atomic_int n_tasks;

    atomic_ullong claim; /* generation << 32 | next task */
    atomic_int done;     /* tasks of this generation finished */
    atomic_int stop;

    /* the stall guard (the caller's only) */
    int strikes, clean, solo_left, solo_len;
};

static long long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* After a job: work = the caller's own share, wait = its wait for the
 * tasks others were still running. */
static void note_job(ns_pool *p, long long work, long long wait)
{
    if (wait > POOL_STALL_NS && wait > work) {
        p->clean = 0;
        if (++p->strikes >= POOL_STRIKES) {
            p->strikes = 0;
            p->solo_left = p->solo_len;
            p->solo_len = p->solo_len < POOL_SOLO_MAX ? 2 * p->solo_len : POOL_SOLO_MAX;
        }
    } else if (++p->clean >= POOL_CLEAN_RESET) {
        p->strikes = 0;
        p->solo_len = POOL_SOLO_MIN;
    }
}

static unsigned gen_of(unsigned long long w) { return (unsigned)(w >> 32); }
static const unsigned long long CLOSED = 0xffffffffu; /* next task of a closed job */

/* a generation a worker should join: open (even) and not the last seen */
static int joinable(unsigned g, unsigned seen) { return g != seen && !(g & 1); }

/* Claim and run tasks of generation gen while there are any. */
static void run_tasks(ns_pool *p, unsigned gen, int thread)
{
    unsigned long long w = atomic_load(&p->claim);
    for (;;) {
        if (gen_of(w) != gen)
            return;
        /* these may already be the next job's: then the job was closed
         * and the swap below fails */
        pool_fn fn = atomic_load(&p->fn);
        void *ctx = atomic_load(&p->ctx);
        int n = atomic_load(&p->n_tasks);
        unsigned k = (unsigned)w;
        if (k >= (unsigned)n)
            return;
        /* on failure w is reloaded: another thread took task k, or the
         * job was closed */
        if (!atomic_compare_exchange_weak(&p->claim, &w, w + 1))
            continue;
        fn(ctx, (int)k, thread);
        atomic_fetch_add(&p->done, 1);
        w = atomic_load(&p->claim);
    }
}

/* Wait for a generation other than seen (or stop): spin, then sleep. */
static unsigned wait_job(ns_pool *p, unsigned seen)
{
    for (int i = 0; i < POOL_SPIN; i++) {
        unsigned g = gen_of(atomic_load(&p->claim));
        if (joinable(g, seen) || atomic_load(&p->stop))
            return g;
        cpu_relax();
    }
    pthread_mutex_lock(&p->mu);
    unsigned g;
    while (!joinable(g = gen_of(atomic_load(&p->claim)), seen) && !atomic_load(&p->stop))
        pthread_cond_wait(&p->wake, &p->mu);
    pthread_mutex_unlock(&p->mu);
    return g;
}

static void *worker_main(void *arg)
{
    worker_arg *w = arg;
    ns_pool *p = w->p;
    unsigned seen = 0;
    for (;;) {
        seen = wait_job(p, seen);
        if (atomic_load(&p->stop))
            break;
        run_tasks(p, seen, w->index);
    }
    return NULL;
}

static void stop_workers(ns_pool *p)
{
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->stop, 1);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->started; i++)
        pthread_join(p->tid[i], NULL);
    p->started = 0;
}

ns_pool *pool_create(int n, const sigset_t *block)
{
    if (n < 1 || n > POOL_MAX_THREADS)
        return NULL;
    ns_pool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->n = n;
    atomic_init(&p->fn, NULL);
    atomic_init(&p->ctx, NULL);
    atomic_init(&p->n_tasks, 0);
    atomic_init(&p->claim, 0);
    atomic_init(&p->done, 0);
    atomic_init(&p->stop, 0);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    p->solo_len = POOL_SOLO_MIN;
    if (n == 1)
        return p;
    p->tid = calloc((size_t)n - 1, sizeof *p->tid);
    p->args = calloc((size_t)n - 1, sizeof *p->args);
    pthread_attr_t attr;
    if (!p->tid || !p->args || pthread_attr_init(&attr) != 0) {
        pool_free(p);
        return NULL;
    }
    pthread_attr_setstacksize(&attr, POOL_STACK);
    /* workers inherit the creating thread's mask: block the caller's set
     * for the while */
    sigset_t old;
    pthread_sigmask(SIG_BLOCK, block, &old);
    int ok = 1;
    for (int i = 0; i < n - 1 && ok; i++) {
        p->args[i].p = p;
        p->args[i].index = i + 1;
        ok = pthread_create(&p->tid[i], &attr, worker_main, &p->args[i]) == 0;
        if (ok)
            p->started++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (!ok) {
        pool_free(p);
        return NULL;
    }
    return p;
}

void pool_free(ns_pool *p)
{
    if (!p)
        return;
    stop_workers(p);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->wake);
    free(p->tid);
    free(p->args);
    free(p);
}

int pool_threads(const ns_pool *p) { return p ? p->n : 1; }

void pool_run(ns_pool *p, int n_tasks, pool_fn fn, void *ctx)
{
    if (n_tasks <= 0)
        return;
    int alone = !p || p->n == 1 || n_tasks == 1;
    if (!alone && p->solo_left > 0) { /* the stall guard's pause */
        p->solo_left--;
        alone = 1;
    }
    if (alone) {
        for (int i = 0; i < n_tasks; i++)
            fn(ctx, i, 0);
        return;
    }
    /* close the last job (every task of it is done) before its fields
     * change, so a late worker's swap fails; then open the new one */
    long long t0 = now_ns();
    unsigned gen = gen_of(atomic_load(&p->claim)) + 2;
    atomic_store(&p->claim, (unsigned long long)(gen - 1) << 32 | CLOSED);
    atomic_store(&p->fn, fn);
    atomic_store(&p->ctx, ctx);
    atomic_store(&p->n_tasks, n_tasks);
    atomic_store(&p->done, 0);
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->claim, (unsigned long long)gen << 32);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);

    run_tasks(p, gen, 0);
    long long t1 = now_ns();
    /* what is left runs on workers that claimed it before us */
    for (int i = 0; atomic_load(&p->done) != n_tasks; i++) {
        if (i < POOL_CALLER_SPIN)
            cpu_relax();
        else
            sched_yield();
    }
    note_job(p, t1 - t0, now_ns() - t1);
}

void pool_split(int n, int parts, int align, int part, int *lo, int *hi)
{
    if (align < 1)
        align = 1;
    long units = ((long)n + align - 1) / align;
    long a = units * part / parts * align, b = units * (part + 1) / parts * align;
    *lo = (int)(a < n ? a : n);
    *hi = (int)(b < n ? b : n);
}

int pool_default_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        return 1;
    return n > POOL_MAX_THREADS ? POOL_MAX_THREADS : (int)n;
}
