/* test_sysdep.c - what differs between systems (sysdep.h), checked where
 * it can be on this one: a name found in PATH as execvp finds it (what a
 * sweep started as a bare `normscope` runs where there is no /proc), this
 * binary's own path, the CPU's AVX2 answers agreeing, the kernel's
 * parent-death signal and its override, and the portable way a run dies
 * with its sweep: a process that watches its parent (sysdep_parent_watch)
 * is gone soon after that parent exits. */
#define _XOPEN_SOURCE 700 /* realpath */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sysdep.h"
#include "testutil.h"

static char dir[] = "/tmp/ns_test_sysdep_XXXXXX";

static const char *at(const char *name)
{
    static char buf[4][256];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

static void touch(const char *path, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
    if (fd >= 0)
        close(fd);
    chmod(path, mode);
}

static void test_which(void)
{
    char buf[4096], path[1024], want[4096];
    mkdir(at("a"), 0755);
    mkdir(at("b"), 0755);
    mkdir(at("c"), 0755);
    touch(at("a/tool"), 0644); /* not executable: skipped */
    touch(at("b/tool"), 0755);
    touch(at("c/tool"), 0755);
    mkdir(at("a/dirtool"), 0755); /* a directory: skipped */
    touch(at("c/dirtool"), 0755);
    CHECK(realpath(at("b/tool"), want) != NULL);
    snprintf(path, sizeof path, "%s:%s:%s", at("a"), at("b"), at("c"));
    setenv("PATH", path, 1);
    CHECK(sysdep_which(buf, sizeof buf, "tool") == 0 && !strcmp(buf, want));
    CHECK(realpath(at("c/dirtool"), want) != NULL);
    CHECK(sysdep_which(buf, sizeof buf, "dirtool") == 0 && !strcmp(buf, want));
    CHECK(sysdep_which(buf, sizeof buf, "no-such-tool") == -1);
    /* a name with a slash is that file, made absolute */
    CHECK(realpath(at("a/tool"), want) != NULL);
    CHECK(sysdep_which(buf, sizeof buf, at("a/tool")) == 0 && !strcmp(buf, want));
    /* an empty PATH entry is the current directory */
    char cwd[4096];
    CHECK(getcwd(cwd, sizeof cwd) != NULL);
    CHECK(chdir(at("c")) == 0);
    snprintf(path, sizeof path, "%s:", at("a"));
    setenv("PATH", path, 1);
    CHECK(realpath("tool", want) != NULL);
    CHECK(sysdep_which(buf, sizeof buf, "tool") == 0 && !strcmp(buf, want));
    CHECK(chdir(cwd) == 0);
    /* too small a buffer is no answer, never a cut path */
    setenv("PATH", at("b"), 1);
    CHECK(sysdep_which(buf, 8, "tool") == -1);
}

static void test_exe(const char *argv0)
{
    char buf[4096];
    struct stat st;
    CHECK(sysdep_exe_path(buf, sizeof buf, argv0) == 0);
    CHECK(buf[0] == '/' && stat(buf, &st) == 0 && S_ISREG(st.st_mode));
    const char *base = strrchr(buf, '/');
    CHECK(base && !strcmp(base + 1, "test_sysdep"));
}

static void test_cpu(void)
{
    /* AVX2 and FMA implies AVX2; asked twice, the same */
    CHECK(!sysdep_cpu_avx2_fma() || sysdep_cpu_avx2());
    CHECK(sysdep_cpu_avx2() == sysdep_cpu_avx2());
}

static void test_kernel_pdeath(void)
{
    unsetenv("NORMSCOPE_PARENT_WATCH");
#if defined(__linux__)
    CHECK(sysdep_kernel_pdeath() == 1);
#else
    CHECK(sysdep_kernel_pdeath() == 0);
#endif
    setenv("NORMSCOPE_PARENT_WATCH", "poll", 1);
    CHECK(sysdep_kernel_pdeath() == 0);
    unsetenv("NORMSCOPE_PARENT_WATCH");
}

/* A middle process starts a watcher with SYSDEP_PARENT_ENV naming it and
 * exits; the watcher, reparented, must end within a few seconds. Its end
 * is seen as the end of file on a pipe only it still holds. */
static void test_parent_watch(void)
{
    int p[2], ready[2];
    CHECK(pipe(p) == 0 && pipe(ready) == 0);
    pid_t mid = fork();
    if (mid == 0) {
        close(p[0]);
        pid_t w = fork();
        if (w == 0) {
            close(ready[0]);
            char v[32];
            snprintf(v, sizeof v, "%ld", (long)getppid());
            setenv(SYSDEP_PARENT_ENV, v, 1);
            sysdep_parent_watch();
            if (write(ready[1], "x", 1) != 1)
                _exit(3);
            close(ready[1]);
            const struct timespec tick = {0, 100 * 1000 * 1000};
            for (int i = 0; i < 100; i++) /* 10 s at most: it should be killed long before */
                nanosleep(&tick, NULL);
            _exit(4);
        }
        close(p[1]);
        char c;
        close(ready[1]);
        /* the middle waits until its watcher watches, then dies */
        _exit(w > 0 && read(ready[0], &c, 1) == 1 ? 0 : 2);
    }
    close(p[1]);
    close(ready[0]);
    close(ready[1]);
    int st = -1;
    CHECK(mid > 0 && waitpid(mid, &st, 0) == mid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    struct pollfd pf = {.fd = p[0], .events = POLLIN};
    int r = poll(&pf, 1, 5000);
    char c;
    /* end of file: the watcher is gone, 5 s before its own end */
    CHECK(r == 1 && read(p[0], &c, 1) == 0);
    close(p[0]);
}

int main(int argc, char **argv)
{
    (void)argc;
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_exe(argv[0]);
    test_cpu();
    test_kernel_pdeath();
    test_parent_watch();
    char *old = getenv("PATH") ? strdup(getenv("PATH")) : NULL;
    test_which();
    if (old) {
        setenv("PATH", old, 1);
        free(old);
    }
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "test_sysdep: could not remove %s\n", dir);
    return test_summary();
}
