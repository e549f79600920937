/* sysdep.c - what differs between Linux (glibc, musl) and macOS, behind
 * one interface (sysdep.h): this binary's path, a run that dies with its
 * sweep, the CPU's AVX2.
 *
 * Not here: feature-test macros (Makefile), CPU dispatch (ops.c). */
#define _XOPEN_SOURCE 700 /* realpath */
#include "sysdep.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#if defined(__linux__)
#include <sys/prctl.h>
#endif
#if defined(__APPLE__)
#include <mach-o/dyld.h>
#include <sys/sysctl.h>
#endif

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif

/* path made absolute and resolved into buf (realpath); 0 or -1 */
static int resolve(char *buf, size_t n, const char *path)
{
    char real[PATH_MAX];
    if (!realpath(path, real) || strlen(real) >= n)
        return -1;
    memcpy(buf, real, strlen(real) + 1);
    return 0;
}

/* a regular file this user may execute (a directory has X_OK too) */
static int executable_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

int sysdep_which(char *buf, size_t n, const char *argv0)
{
    if (strchr(argv0, '/'))
        return resolve(buf, n, argv0);
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/bin:/bin";
    char cand[PATH_MAX];
    for (const char *p = path;; p++) {
        const char *end = strchr(p, ':');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        /* an empty entry is the current directory, as for execvp */
        int w = len ? snprintf(cand, sizeof cand, "%.*s/%s", (int)len, p, argv0)
                    : snprintf(cand, sizeof cand, "./%s", argv0);
        if (w > 0 && (size_t)w < sizeof cand && executable_file(cand) && resolve(buf, n, cand) == 0)
            return 0;
        if (!end)
            return -1;
        p = end;
    }
}

int sysdep_exe_path(char *buf, size_t n, const char *argv0)
{
    if (n == 0)
        return -1;
#if defined(__linux__)
    ssize_t len = readlink("/proc/self/exe", buf, n - 1);
    if (len > 0 && (size_t)len < n - 1) {
        buf[len] = 0;
        return 0;
    }
#elif defined(__APPLE__)
    char raw[PATH_MAX];
    uint32_t size = sizeof raw;
    if (_NSGetExecutablePath(raw, &size) == 0 && resolve(buf, n, raw) == 0)
        return 0;
#endif
    /* no /proc (a chroot, another system): argv[0] as the shell ran it */
    if (argv0 && sysdep_which(buf, n, argv0) == 0)
        return 0;
    snprintf(buf, n, "%s", argv0 ? argv0 : "normscope");
    return -1;
}

int sysdep_kernel_pdeath(void)
{
#if defined(__linux__)
    const char *w = getenv("NORMSCOPE_PARENT_WATCH");
    return !(w && !strcmp(w, "poll"));
#else
    return 0;
#endif
}

int sysdep_die_with_parent(int use_kernel)
{
#if defined(__linux__)
    if (use_kernel)
        return prctl(PR_SET_PDEATHSIG, SIGTERM) == 0 ? 1 : -1;
#else
    (void)use_kernel;
#endif
    return 0;
}

#if (defined(__x86_64__) || defined(__i386__)) && defined(__APPLE__)
/* a hw.optional sysctl: 1 when the CPU has the feature */
static int hw_optional(const char *name)
{
    int v = 0;
    size_t len = sizeof v;
    return sysctlbyname(name, &v, &len, NULL, 0) == 0 && v == 1;
}
#endif

int sysdep_cpu_avx2(void)
{
#if (defined(__x86_64__) || defined(__i386__)) && defined(__APPLE__)
    return hw_optional("hw.optional.avx2_0");
#elif (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
    return __builtin_cpu_supports("avx2");
#else
    return 0;
#endif
}

int sysdep_cpu_avx2_fma(void)
{
#if (defined(__x86_64__) || defined(__i386__)) && defined(__APPLE__)
    return hw_optional("hw.optional.avx2_0") && hw_optional("hw.optional.fma");
#elif (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return 0;
#endif
}

static pid_t watched;

static void *watch_main(void *arg)
{
    (void)arg;
    const struct timespec tick = {0, 100 * 1000 * 1000};
    while (getppid() == watched)
        nanosleep(&tick, NULL);
    kill(getpid(), SIGTERM);
    return NULL;
}

void sysdep_parent_watch(void)
{
    const char *v = getenv(SYSDEP_PARENT_ENV);
    char *end;
    if (!v || !*v)
        return;
    errno = 0;
    long pid = strtol(v, &end, 10);
    if (errno || *end || pid <= 1)
        return;
    watched = (pid_t)pid;
    if (getppid() != watched) { /* already gone between fork and exec */
        kill(getpid(), SIGTERM);
        return;
    }
    /* the watcher takes no signal: those are for the threads that wait
     * for them (the trainer's UI thread, stopsig's handlers) */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    pthread_attr_t a;
    pthread_t t;
    if (pthread_attr_init(&a) == 0) {
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &a, watch_main, NULL) != 0)
            fprintf(stderr, "normscope: cannot watch the sweep that started this run: "
                            "it may outlive a killed sweep\n");
        pthread_attr_destroy(&a);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}
