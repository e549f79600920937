/* sweep_run.c - running a sweep's grid here: each run a child process of
 * this binary, --jobs at a time, started with fork and exec (so that it
 * can be tied to the sweep's life) and reaped with waitpid; its row appended to DIR/results.csv as it ends; progress on
 * standard error, or told to a watcher (the live view).
 *
 * Not here: what a run's command line is (sweep.c), what its row says
 * (sweep_results.c), other schedulers (--list).
 */
#include "sweep_int.h"

#include "nstime.h"
#include "stopsig.h"
#include "sysdep.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

typedef struct {
    pid_t pid;
    long k;
    double t0;
} slot;

/* In the child, between fork and exec (async-signal-safe calls only):
 * it dies with the sweep (SIGTERM when the sweep ends, kill -9 of the
 * sweep included, so no orphan runs on beside a resumed sweep): on Linux
 * the kernel sends it (PR_SET_PDEATHSIG, kernel != 0); elsewhere env
 * names the sweep's pid and the run watches for it (sysdep.h). With no
 * signal blocked, stdin and stdout on /dev/null and stderr to its log. */
static void child_exec(const char *exe, char **argv, char **env, const char *log, pid_t parent,
                       int kernel)
{
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (sysdep_die_with_parent(kernel) < 0 || getppid() != parent)
        _exit(127); /* the sweep is already gone */
    int in = open("/dev/null", O_RDONLY), out = open("/dev/null", O_WRONLY),
        err = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (in < 0 || out < 0 || err < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
        _exit(127);
    execve(exe, argv, env);
    _exit(127);
}

/* The run's environment: this one, and where the kernel does not tie the
 * run to the sweep, SYSDEP_PARENT_ENV=parent (var holds it). A malloc'd
 * array of borrowed strings, or NULL. */
static char **child_env(pid_t parent, int kernel, char *var, size_t n)
{
    size_t k = 0, len = strlen(SYSDEP_PARENT_ENV);
    while (environ[k])
        k++;
    char **env = malloc((k + 2) * sizeof *env);
    if (!env)
        return NULL;
    size_t j = 0;
    for (size_t i = 0; i < k; i++)
        if (strncmp(environ[i], SYSDEP_PARENT_ENV, len) || environ[i][len] != '=')
            env[j++] = environ[i];
    if (!kernel) {
        snprintf(var, n, "%s=%ld", SYSDEP_PARENT_ENV, (long)parent);
        env[j++] = var;
    }
    env[j] = NULL;
    return env;
}

/* Start run k. An old CSV of the run (an interrupted attempt) is removed
 * first, so what is read afterwards is this attempt's. Returns the pid,
 * or -1 (errno). */
static pid_t run_spawn(const sweep_ctx *c, long k)
{
    sweep_args ra;
    char log[4300], var[64];
    if (sweep_args_make(c, k, &ra) != 0)
        return -1;
    unlink(ra.csv);
    snprintf(log, sizeof log, "%s/run-%s.log", c->dir, ra.id);
    pid_t parent = getpid(), pid = -1;
    int kernel = sysdep_kernel_pdeath();
    char **env = child_env(parent, kernel, var, sizeof var);
    if (env) {
        pid = fork();
        if (pid == 0)
            child_exec(c->exe, ra.argv, env, log, parent, kernel);
    }
    int e = env ? errno : ENOMEM;
    free(env);
    free(ra.argv);
    errno = e;
    return pid;
}

/* Why a child that left no usable CSV failed, into why; its status:
 * "killed" (a signal, or a stop signal this sweep did not send: exit 130),
 * else "failed". */
static const char *failure(int wstatus, long last, long steps, char *why, size_t n)
{
    int code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
    if (WIFSIGNALED(wstatus)) {
        snprintf(why, n, "signal %d", WTERMSIG(wstatus));
        return "killed";
    }
    if (code == 130) {
        snprintf(why, n, "exit 130: stopped by a signal this sweep did not send");
        return "killed";
    }
    if (code == 0 || code == 3 || code == 4)
        snprintf(why, n, "exit %d, its CSV ends at step %ld of %ld", code, last, steps);
    else
        snprintf(why, n, "exit %d", code);
    return "failed";
}

/* A child has ended: its row (also into row[SWEEP_ROW_MAX], "" when
 * none), unless this sweep stopped it (ours: it sent the stop). Its CSV
 * is judged as --sweep-collect judges it (sweep_run_judge). A run that
 * failed is said on standard error (unless a watcher shows it). Returns 1
 * when it failed (no complete CSV), else 0. */
static int run_finish(sweep_ctx *c, const sweep_watch *w, long k, int wstatus, double wall,
                      int ours, int *recorded, char *row)
{
    sweep_args ra;
    sweep_facts rf;
    char why[200], log[4300];
    const char *status = "corrupt";
    size_t len = 0;
    *recorded = 0;
    row[0] = 0;
    if (sweep_args_make(c, k, &ra) != 0)
        return 1;
    snprintf(log, sizeof log, "%s/run-%s.log", c->dir, ra.id);
    int code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
    /* 0 it ran its steps, 3 it diverged, 4 it stalled (--on-stall stop) */
    int st = code == 0 || code == 3 || code == 4 ? sweep_run_judge(c, k, wall, row, &len)
                                                 : RUN_MISSING;
    if (st != RUN_COMPLETE && st != RUN_CORRUPT && !(ours && code == 130)) {
        sweep_summary s;
        memset(&s, 0, sizeof s);
        memset(&rf, 0, sizeof rf);
        sweep_run_parse(c, k, 0, &rf);
        long last = sweep_summary_read(ra.csv, NULL, &s) == SWEEP_CSV_READ ? s.last_step : 0;
        status = failure(wstatus, last, rf.steps, why, sizeof why);
        len = sweep_results_row(&c->spec, k, &rf, NULL, wall, status, why, (long)time(NULL), row,
                                SWEEP_ROW_MAX);
        st = RUN_FAILED;
    }
    if (code == 0) { /* a quiet run that went well leaves an empty log */
        struct stat lst;
        if (stat(log, &lst) == 0 && lst.st_size == 0)
            unlink(log);
    }
    if ((st == RUN_FAILED || st == RUN_CORRUPT) && !w)
        fprintf(stderr, "normscope: run %s %s (%s); its log: %s\n", ra.id, status,
                st == RUN_FAILED ? why : "its CSV is not whole or not the run's", log);
    free(ra.argv);
    if (len && sweep_results_append(c->dir, row, len) == 0)
        *recorded = 1;
    else
        row[0] = 0;
    return len && st != RUN_COMPLETE;
}

static void progress(const sweep_ctx *c, const sweep_watch *w, long done, long total,
                     int running, long failed, double t0, int final)
{
    if (c->quiet || w || !isatty(2))
        return;
    double t = nstime_now() - t0, eta = done ? t / done * (total - done) : 0;
    fprintf(stderr, "\rsweep: %ld/%ld runs done, %d running, %ld failed, ETA %d:%02d   %s",
            done, total, running, failed, (int)eta / 60, (int)eta % 60, final ? "\n" : "");
}

/* Stop now: a stop signal (headless), or the watcher says so. */
static int want_stop(const sweep_watch *w)
{
    return stopsig_requested || (w && w->stop(w->ctx));
}

/* Start runs in the free slots while there are runs to do. Returns how
 * many started; *failed = 1 when one could not be (then the sweep stops:
 * stopsig_requested). */
static int fill_slots(const sweep_ctx *c, const sweep_watch *w, slot *run, int jobs,
                      const long *todo, long n_todo, long *next, int *failed)
{
    int started = 0;
    for (int j = 0; j < jobs && *next < n_todo && !want_stop(w); j++) {
        if (run[j].pid != 0)
            continue;
        run[j].k = todo[(*next)++];
        run[j].t0 = nstime_now();
        run[j].pid = run_spawn(c, run[j].k);
        if (run[j].pid < 0) {
            fprintf(stderr, "normscope: cannot start %s: %s\n", c->exe, strerror(errno));
            run[j].pid = 0;
            stopsig_requested = 1;
            *failed = 1;
            break;
        }
        if (w)
            w->started(w->ctx, run[j].k, (long)run[j].pid);
        started++;
    }
    return started;
}

/* Ask every running child to stop (once). */
static void stop_runs(const slot *run, int jobs)
{
    for (int j = 0; j < jobs; j++)
        if (run[j].pid > 0)
            kill(run[j].pid, SIGTERM);
}

/* The next child that ended, or 0 when none has yet and a watcher needs
 * the thread back (it polls: its stop comes from another thread, not as
 * a signal), or -1 (errno EINTR: a stop signal). */
static pid_t wait_child(const sweep_watch *w, int *ws)
{
    if (!w)
        return waitpid(-1, ws, 0);
    pid_t p = waitpid(-1, ws, WNOHANG);
    if (p == 0)
        nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL); /* 20 ms */
    return p;
}

/* A child ended: its slot freed, its row recorded and told to w. ours:
 * this sweep sent it the stop. */
static void reap(sweep_ctx *c, const sweep_watch *w, slot *run, int jobs, pid_t p, int ws,
                 int ours, long *finished, long *failed, int *n_running)
{
    char row[SWEEP_ROW_MAX];
    for (int j = 0; j < jobs; j++)
        if (run[j].pid == p) {
            int rec;
            *failed += run_finish(c, w, run[j].k, ws, nstime_now() - run[j].t0, ours, &rec, row);
            *finished += rec;
            run[j].pid = 0;
            (*n_running)--;
            if (w)
                w->ended(w->ctx, run[j].k, row[0] ? row : NULL);
        }
}

int sweep_execute(sweep_ctx *c, const unsigned char *done, int jobs, const sweep_watch *w)
{
    long *todo = malloc((size_t)c->n_runs * sizeof *todo), n_todo = 0, next = 0;
    slot *run = calloc((size_t)jobs, sizeof *run);
    if (!todo || !run) {
        free(todo);
        free(run);
        fprintf(stderr, "normscope: out of memory\n");
        return 1;
    }
    for (long k = 0; k < c->n_runs; k++)
        if (!done[k])
            todo[n_todo++] = k;
    if (!c->quiet && !w)
        fprintf(stderr, "normscope: sweep %s: %ld runs, %ld to do, %d at a time\n", c->dir,
                c->n_runs, n_todo, jobs);
    if (!w) /* a watcher's front end has its own handlers */
        stopsig_catch();
    int n_running = 0, status = 0, signalled = 0;
    long finished = 0, failed = 0;
    double t0 = nstime_now();
    while (n_running > 0 || (next < n_todo && !want_stop(w))) {
        n_running += fill_slots(c, w, run, jobs, todo, n_todo, &next, &status);
        progress(c, w, finished, n_todo, n_running, failed, t0, 0);
        if (n_running == 0)
            break;
        int ws;
        pid_t p = wait_child(w, &ws);
        if (!signalled && want_stop(w)) {
            stop_runs(run, jobs);
            signalled = 1;
        }
        if (p > 0)
            reap(c, w, run, jobs, p, ws, signalled, &finished, &failed, &n_running);
        else if (p < 0 && errno != EINTR)
            break;
    }
    progress(c, w, finished, n_todo, 0, failed, t0, 1);
    free(todo);
    free(run);
    if (want_stop(w) && status == 0 && (signalled || next < n_todo)) {
        fprintf(stderr, "normscope: sweep interrupted: %ld of %ld runs recorded; run the same "
                        "command again to resume\n", finished, n_todo);
        return 130;
    }
    return status ? status : failed ? 1 : 0;
}
