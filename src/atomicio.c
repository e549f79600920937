/* atomicio.c - temp file + fsync + rename + directory fsync, in one place
 * (see atomicio.h for the contract). */
/* realpath() is X/Open in glibc's headers, beyond the POSIX base */
#define _XOPEN_SOURCE 700
#include "atomicio.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

static int fail(char *err, size_t errlen, const char *path, int e)
{
    snprintf(err, errlen, "%s: %s", path, e == EISDIR ? "is a directory" : strerror(e));
    return -1;
}

/* The directory part of path ("." when there is none). */
static void dir_of(const char *path, char *out, size_t n)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(out, n, ".");
    else if (slash == path)
        snprintf(out, n, "/");
    else
        snprintf(out, n, "%.*s", (int)(slash - path), path);
}

/* Where the rename must land: renaming over a symlink would replace the
 * link with a file, so write beside the file it points to. A dangling link
 * is replaced, as there is nothing to keep. */
static void resolve(atomic_file *a)
{
    struct stat st;
    char buf[PATH_MAX];
    if (lstat(a->path, &st) == 0 && S_ISLNK(st.st_mode) && realpath(a->path, buf) &&
        strlen(buf) < sizeof a->real)
        snprintf(a->real, sizeof a->real, "%s", buf);
    else
        snprintf(a->real, sizeof a->real, "%s", a->path);
}

/* Create the temp file, exclusively. A file already under our own name can
 * only be left by an earlier process that had our PID and was killed:
 * remove it and try once more. Returns the fd or -1 (errno set). */
static int create_tmp(const char *tmp)
{
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno == EEXIST && unlink(tmp) == 0)
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    return fd;
}

static int tmp_name(atomic_file *a)
{
    int n = snprintf(a->tmp, sizeof a->tmp, "%s.tmp.%ld", a->real, (long)getpid());
    return n > 0 && (size_t)n < sizeof a->tmp ? 0 : -1;
}

int atomic_open(atomic_file *a, const char *path, char *err, size_t errlen)
{
    memset(a, 0, sizeof *a);
    if (strlen(path) >= sizeof a->path)
        return fail(err, errlen, "output path", ENAMETOOLONG);
    snprintf(a->path, sizeof a->path, "%s", path);
    if (!strcmp(path, "-")) {
        a->f = stdout;
        a->direct = 1;
        return 0;
    }
    struct stat st;
    int exists = stat(path, &st) == 0;
    if (exists && S_ISDIR(st.st_mode))
        return fail(err, errlen, path, EISDIR);
    if (exists && !S_ISREG(st.st_mode)) {
        a->direct = 1;
        a->f = fopen(path, "w");
        return a->f ? 0 : fail(err, errlen, path, errno);
    }
    resolve(a);
    if (tmp_name(a) != 0)
        return fail(err, errlen, path, ENAMETOOLONG);
    int fd = create_tmp(a->tmp);
    if (fd < 0)
        return fail(err, errlen, path, errno);
    /* a replaced file keeps its permissions (best effort: the bytes matter more) */
    if (exists && fchmod(fd, st.st_mode & 07777) != 0) {
        /* ignored: the new file has the default mode */
    }
    a->f = fdopen(fd, "w");
    if (!a->f) {
        int e = errno;
        close(fd);
        unlink(a->tmp);
        return fail(err, errlen, path, e);
    }
    return 0;
}

int atomic_failed(atomic_file *a)
{
    if (!a->f || !ferror(a->f))
        return 0;
    if (!a->err)
        a->err = errno ? errno : EIO;
    return 1;
}

/* Make the rename durable. Best effort: some file systems refuse fsync on a
 * directory, and the file itself is already safe by then. */
static void sync_dir(const char *real)
{
    char dir[ATOMIC_PATH_MAX];
    dir_of(real, dir, sizeof dir);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

/* Is name "BASE.tmp.PID" for a PID that is not running? */
static int stale_tmp(const char *name, const char *base, size_t blen)
{
    if (strncmp(name, base, blen) != 0 || strncmp(name + blen, ".tmp.", 5) != 0)
        return 0;
    const char *d = name + blen + 5;
    size_t nd = strlen(d);
    if (nd == 0 || nd > 9)
        return 0;
    for (size_t i = 0; i < nd; i++)
        if (!isdigit((unsigned char)d[i]))
            return 0;
    long pid = strtol(d, NULL, 10);
    if (pid <= 0 || pid == (long)getpid())
        return 0;
    /* EPERM means the process exists (another user's): leave its file */
    return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

/* Remove temp files of this target left by killed processes, so they do not
 * pile up beside a checkpoint that is saved over and over. */
static void sweep_stale(const char *real)
{
    char dir[ATOMIC_PATH_MAX], victim[2 * ATOMIC_PATH_MAX];
    dir_of(real, dir, sizeof dir);
    const char *slash = strrchr(real, '/');
    const char *base = slash ? slash + 1 : real;
    size_t blen = strlen(base);
    DIR *dp = opendir(dir);
    if (!dp)
        return;
    struct dirent *de;
    while ((de = readdir(dp)) != NULL) {
        if (!stale_tmp(de->d_name, base, blen))
            continue;
        snprintf(victim, sizeof victim, "%s/%s", dir, de->d_name);
        (void)unlink(victim);
    }
    closedir(dp);
}

int atomic_commit(atomic_file *a, char *err, size_t errlen)
{
    if (!a->f)
        return 0;
    atomic_failed(a);
    int e = a->err;
    if (fflush(a->f) != 0 && !e)
        e = errno ? errno : EIO;
    /* a device or FIFO has no storage to sync (fsync says EINVAL) */
    if (!e && !a->direct && fsync(fileno(a->f)) != 0)
        e = errno;
    if (a->f != stdout && fclose(a->f) != 0 && !e)
        e = errno ? errno : EIO;
    a->f = NULL;
    if (!a->direct) {
        if (!e && rename(a->tmp, a->real) != 0)
            e = errno;
        if (e) {
            unlink(a->tmp);
        } else {
            sync_dir(a->real);
            sweep_stale(a->real);
        }
    }
    return e ? fail(err, errlen, a->path, e) : 0;
}

void atomic_abort(atomic_file *a)
{
    if (!a->f)
        return;
    if (a->f == stdout)
        fflush(stdout);
    else
        fclose(a->f);
    a->f = NULL;
    if (!a->direct)
        unlink(a->tmp);
}

int atomic_probe(const char *path, char *err, size_t errlen)
{
    if (!strcmp(path, "-"))
        return 0;
    struct stat st;
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return fail(err, errlen, path, EISDIR);
        if (!S_ISREG(st.st_mode)) /* opening a FIFO could block: ask only */
            return access(path, W_OK) == 0 ? 0 : fail(err, errlen, path, errno);
    }
    atomic_file *a = malloc(sizeof *a); /* 12 KiB: not on a caller's stack */
    if (!a)
        return fail(err, errlen, path, ENOMEM);
    memset(a, 0, sizeof *a);
    int r = -1;
    if (strlen(path) >= sizeof a->path) {
        fail(err, errlen, "output path", ENAMETOOLONG);
    } else {
        snprintf(a->path, sizeof a->path, "%s", path);
        resolve(a);
        int fd = -1;
        if (tmp_name(a) != 0)
            errno = ENAMETOOLONG;
        else
            fd = create_tmp(a->tmp);
        if (fd < 0) {
            fail(err, errlen, path, errno);
        } else {
            close(fd);
            unlink(a->tmp);
            r = 0;
        }
    }
    free(a);
    return r;
}

int atomic_write_file(const char *path, const void *p, size_t n, char *err, size_t errlen)
{
    atomic_file *a = malloc(sizeof *a);
    if (!a)
        return fail(err, errlen, path, ENOMEM);
    int r = atomic_open(a, path, err, errlen);
    if (r == 0) {
        if (n && fwrite(p, 1, n, a->f) != n)
            atomic_failed(a);
        r = atomic_commit(a, err, errlen);
    }
    free(a);
    return r;
}
