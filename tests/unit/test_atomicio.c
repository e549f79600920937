/* test_atomicio.c - the one implementation of temp file + fsync + rename:
 * a committed file replaces the old one whole, an aborted or failed one
 * leaves it as it was and no temp file behind, devices are written in
 * place (never renamed over), symlinks are written through, the startup
 * probe finds unwritable places, and stale temp files of dead processes are
 * swept (this user's and this machine's only). In a sticky world-writable
 * directory a link another user planted is not followed. Kill -9 in the
 * middle of a save is tests/sh/harden.sh's job. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "atomicio.h"
#include "testutil.h"

static char dir[] = "/tmp/ns_test_atomicio_XXXXXX";

static const char *at(const char *name)
{
    static char buf[4][256];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

static void put_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* The whole file, or "" (a static buffer). */
static const char *get_text(const char *path)
{
    static char buf[256];
    buf[0] = 0;
    FILE *f = fopen(path, "r");
    if (f) {
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        buf[n] = 0;
        fclose(f);
    }
    return buf;
}

/* Any temp file of ours (NAME.tmp.PID...) in dir? */
static int tmp_exists(const char *name)
{
    char pre[300];
    int n = snprintf(pre, sizeof pre, "%s.tmp.%ld.", name, (long)getpid()), found = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)))
        found |= !strncmp(e->d_name, pre, (size_t)n);
    if (d)
        closedir(d);
    return found;
}

static void test_commit_abort(void)
{
    char err[512];
    atomic_file a;
    put_text(at("x"), "old\n");
    CHECK(atomicio_open(&a, at("x"), err, sizeof err) == 0);
    fputs("new\n", a.f);
    CHECK(tmp_exists("x"));
    CHECK(strcmp(get_text(at("x")), "old\n") == 0); /* untouched until commit */
    CHECK(atomicio_commit(&a, err, sizeof err) == 0);
    CHECK(strcmp(get_text(at("x")), "new\n") == 0);
    CHECK(!tmp_exists("x"));

    CHECK(atomicio_open(&a, at("x"), err, sizeof err) == 0);
    fputs("half", a.f);
    atomicio_abort(&a);
    CHECK(strcmp(get_text(at("x")), "new\n") == 0);
    CHECK(!tmp_exists("x"));

    /* a replaced file keeps its mode */
    chmod(at("x"), 0640);
    CHECK(atomicio_write_file(at("x"), "m\n", 2, err, sizeof err) == 0);
    struct stat st;
    CHECK(stat(at("x"), &st) == 0 && (st.st_mode & 0777) == 0640);
}

static void test_refusals(void)
{
    char err[512];
    atomic_file a;
    put_text(at("file"), "f\n");
    CHECK(atomicio_open(&a, at("nodir/x"), err, sizeof err) == -1 && strstr(err, "nodir/x") &&
          strstr(err, "No such file"));
    CHECK(atomicio_open(&a, at("file/x"), err, sizeof err) == -1 && strstr(err, "Not a directory"));
    CHECK(atomicio_open(&a, dir, err, sizeof err) == -1 && strstr(err, "is a directory"));
    CHECK(atomicio_probe(at("nodir/x"), err, sizeof err) == -1 && strstr(err, "nodir/x"));
    CHECK(atomicio_probe(at("file/x"), err, sizeof err) == -1);
    CHECK(atomicio_probe(dir, err, sizeof err) == -1 && strstr(err, "is a directory"));
    CHECK(atomicio_probe(at("fresh"), err, sizeof err) == 0);
    CHECK(access(at("fresh"), F_OK) != 0 && !tmp_exists("fresh")); /* the probe leaves nothing */
    CHECK(atomicio_probe("-", err, sizeof err) == 0);
}

/* A character device to write to: as root a private node in dir (made by
 * mknod(1)), so that a regression renaming over it cannot replace the
 * system's /dev/null or /dev/full; otherwise the system's, which a process
 * that is not root cannot replace. NULL when neither is possible. */
static const char *device(const char *name, int major, int minor)
{
    static char path[2][300];
    static int k;
    k ^= 1;
    char cmd[400];
    struct stat st;
    if (geteuid() != 0) {
        snprintf(path[k], sizeof path[k], "/dev/%s", name);
    } else {
        snprintf(path[k], sizeof path[k], "%s/%s", dir, name);
        snprintf(cmd, sizeof cmd, "mknod '%s' c %d %d 2>/dev/null", path[k], major, minor);
        if (system(cmd) != 0)
            return NULL;
    }
    return stat(path[k], &st) == 0 && S_ISCHR(st.st_mode) ? path[k] : NULL;
}

/* Devices are written in place: null takes it, full reports ENOSPC at
 * commit, and both stay devices. */
static void test_devices(void)
{
    char err[512];
    struct stat st;
    const char *null = device("null", 1, 3), *full = device("full", 1, 7);
    if (null) {
        CHECK(atomicio_write_file(null, "x", 1, err, sizeof err) == 0);
        CHECK(stat(null, &st) == 0 && S_ISCHR(st.st_mode));
        CHECK(atomicio_probe(null, err, sizeof err) == 0);
    } else {
        fprintf(stderr, "test_atomicio: skipped a null device: mknod failed\n");
    }
    if (full) {
        CHECK(atomicio_write_file(full, "x", 1, err, sizeof err) == -1 &&
              strstr(err, "full: No space left"));
        CHECK(stat(full, &st) == 0 && S_ISCHR(st.st_mode));
    } else {
        fprintf(stderr, "test_atomicio: skipped a full device: mknod failed\n");
    }
}

static void test_symlink(void)
{
    char err[512];
    put_text(at("target"), "t0\n");
    CHECK(symlink("target", at("link")) == 0);
    CHECK(atomicio_write_file(at("link"), "t1\n", 3, err, sizeof err) == 0);
    struct stat st;
    CHECK(lstat(at("link"), &st) == 0 && S_ISLNK(st.st_mode));
    CHECK(strcmp(get_text(at("target")), "t1\n") == 0);
}

/* The temp name's form, "BASE.tmp.PID.UID.HOST.RAND", with pid and uid
 * put in: the host and the letters of one this process made. */
static void tmp_like(char *out, size_t n, const char *base, long pid, long uid)
{
    atomic_file a;
    char err[512], tail[128] = "";
    if (atomicio_open(&a, at(base), err, sizeof err) == 0) {
        const char *t = strstr(a.tmp, ".tmp.");
        const char *host = t ? strchr(t + 5, '.') : NULL; /* after PID */
        host = host ? strchr(host + 1, '.') : NULL;       /* after UID */
        snprintf(tail, sizeof tail, "%s", host ? host : "");
        atomicio_abort(&a);
    }
    snprintf(out, n, "%s/%s.tmp.%ld.%ld%s", dir, base, pid, uid, tail);
}

/* A temp file of a dead process of this user on this machine is swept by
 * the next commit; one of a live process (ours, here under another name)
 * is left alone, and so are another user's, another machine's and an
 * older normscope's nameless ones, whose PID means nothing here. */
static void test_sweep(void)
{
    char err[512], dead[300], live[300], other_uid[300], other_host[300], old[300];
    pid_t child = fork();
    if (child == 0)
        _exit(0);
    waitpid(child, NULL, 0); /* now surely not running */
    long me = (long)geteuid();
    tmp_like(dead, sizeof dead, "s", (long)child, me);
    tmp_like(live, sizeof live, "s", (long)getppid(), me);
    tmp_like(other_uid, sizeof other_uid, "s", (long)child, me + 1);
    snprintf(other_host, sizeof other_host, "%s/s.tmp.%ld.%ld.elsewhere.abcdefgh", dir,
             (long)child, me);
    snprintf(old, sizeof old, "%s/s.tmp.%ld", dir, (long)child);
    const char *all[] = {dead, live, other_uid, other_host, old};
    for (int i = 0; i < 5; i++)
        put_text(all[i], "x");
    long pid;
    int ours = 9;
    CHECK(atomicio_tmp_parse(strrchr(dead, '/') + 1, "s", &pid, &ours) == 1 && ours == 1 &&
          pid == (long)child);
    CHECK(atomicio_tmp_parse(strrchr(other_host, '/') + 1, "s", &pid, &ours) == 1 && ours == 0);
    CHECK(atomicio_tmp_parse(strrchr(old, '/') + 1, "s", &pid, &ours) == 1 && ours == -1);
    CHECK(atomicio_tmp_parse("s.tmpx.1", "s", &pid, &ours) == 0);
    CHECK(atomicio_write_file(at("s"), "s\n", 2, err, sizeof err) == 0);
    CHECK(access(dead, F_OK) != 0);
    for (int i = 1; i < 5; i++) {
        if (!t_check(access(all[i], F_OK) == 0, __FILE__, __LINE__, "left alone"))
            fprintf(stderr, "  %s was removed\n", all[i]);
        unlink(all[i]);
    }
}

/* Two temp names of one target differ: no one can plant the next. */
static void test_tmp_unpredictable(void)
{
    atomic_file a, b;
    char err[512];
    CHECK(atomicio_open(&a, at("u"), err, sizeof err) == 0);
    CHECK(atomicio_open(&b, at("u"), err, sizeof err) == 0);
    CHECK(strcmp(a.tmp, b.tmp) != 0);
    atomicio_abort(&a);
    atomicio_abort(&b);
}

/* In a sticky world-writable directory, a link that another user owns is
 * not followed: refused at the start check and at open, in one line, and
 * the file it points to is left as it was. Root can give a link away. */
static void test_planted_link(void)
{
    if (geteuid() != 0)
        return;
    char shared[256], link[300], victim[300], err[512];
    snprintf(shared, sizeof shared, "%s/shared", dir);
    snprintf(link, sizeof link, "%s/run.csv", shared);
    snprintf(victim, sizeof victim, "%s/thesis.txt", dir);
    CHECK(mkdir(shared, 0777) == 0 && chmod(shared, 01777) == 0);
    put_text(victim, "thesis\n");
    CHECK(symlink(victim, link) == 0 && lchown(link, 4242, 4242) == 0);
    atomic_file a;
    CHECK(atomicio_probe(link, err, sizeof err) == -1 && strstr(err, "uid 4242") &&
          strstr(err, "not followed") && !strchr(err, '\n'));
    CHECK(atomicio_open(&a, link, err, sizeof err) == -1 && strstr(err, "not followed"));
    CHECK(strcmp(get_text(victim), "thesis\n") == 0);
    /* our own link there is followed, as before */
    CHECK(lchown(link, 0, 0) == 0 && atomicio_write_file(link, "t\n", 2, err, sizeof err) == 0);
    CHECK(strcmp(get_text(victim), "t\n") == 0);
    unlink(link);
    rmdir(shared);
}

int main(void)
{
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_commit_abort();
    test_refusals();
    test_devices();
    test_symlink();
    test_sweep();
    test_tmp_unpredictable();
    test_planted_link();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return test_summary();
}
