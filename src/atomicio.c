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
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
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

/* Is path's directory sticky and world-writable (/tmp, a shared drop
 * directory)? Its owner's uid in *owner. */
static int in_shared_dir(const char *path, uid_t *owner)
{
    char dir[ATOMIC_PATH_MAX];
    struct stat ds;
    dir_of(path, dir, sizeof dir);
    if (stat(dir, &ds) != 0 || !(ds.st_mode & S_ISVTX) || !(ds.st_mode & S_IWOTH))
        return 0;
    *owner = ds.st_uid;
    return 1;
}

/* What another user may have planted at path in a shared directory: 0
 * when nothing, else -1 with the reason in err. The kernel's
 * protected_symlinks rule, applied whatever the sysctl says: a symbolic
 * link there is followed only when it is ours or the directory owner's
 * (else writing through it replaces a file of ours the planter chose).
 * And a file there that is neither ours nor the directory owner's cannot
 * be renamed over by anyone but root: the run would train to the end and
 * then lose the output, so it is said at once. */
static int planted(const char *path, char *err, size_t errlen)
{
    struct stat st;
    uid_t downer, me = geteuid();
    if (lstat(path, &st) != 0 || !in_shared_dir(path, &downer) || st.st_uid == me ||
        st.st_uid == downer)
        return 0;
    if (S_ISLNK(st.st_mode)) {
        snprintf(err, errlen, "%s: a symbolic link of another user (uid %ld) in a shared sticky "
                 "directory: not followed", path, (long)st.st_uid);
        return -1;
    }
    if (S_ISREG(st.st_mode) && me != 0) {
        snprintf(err, errlen, "%s: a file of another user (uid %ld) in a shared sticky "
                 "directory: it could not be replaced", path, (long)st.st_uid);
        return -1;
    }
    return 0;
}

/* This machine's name as a temp name carries it: its first label, letters,
 * digits and '-' only, at most 32 bytes ("host" when it has none). */
static void host_tag(char *out, size_t n)
{
    char h[256] = "";
    size_t k = 0;
    if (gethostname(h, sizeof h - 1) != 0)
        h[0] = 0;
    for (const char *p = h; *p && *p != '.' && k + 1 < n && k < 32; p++)
        if (isalnum((unsigned char)*p) || *p == '-')
            out[k++] = *p;
    if (k == 0)
        k = (size_t)snprintf(out, n, "host");
    out[k < n ? k : n - 1] = 0;
}

/* TMP_RAND letters and digits no other process can guess: from
 * /dev/urandom, else from the clock, the PID and a counter. */
enum { TMP_RAND = 8 };
static void rand_tag(char out[TMP_RAND + 1])
{
    static const char abc[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    static unsigned long counter;
    unsigned char b[TMP_RAND];
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    ssize_t got = fd >= 0 ? read(fd, b, sizeof b) : -1;
    if (fd >= 0)
        close(fd);
    if (got != (ssize_t)sizeof b) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        /* 64 bits also where long is 32 (i686): the shift takes bits 33.. */
        uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 16) ^
                     (uint64_t)ts.tv_sec * 2654435761ULL ^ ++counter * 40503ULL;
        for (int i = 0; i < TMP_RAND; i++, x = x * 6364136223846793005ULL + 1442695040888963407ULL)
            b[i] = (unsigned char)(x >> 33);
    }
    for (int i = 0; i < TMP_RAND; i++)
        out[i] = abc[b[i] % (sizeof abc - 1)];
    out[TMP_RAND] = 0;
}

/* Create the temp file, exclusively (O_EXCL: a name another process made
 * first, a planted file or link, is never opened). Its name cannot be
 * guessed, so a clash is a coincidence: try another. Returns the fd or -1
 * (errno set). */
static int create_tmp(atomic_file *a)
{
    char host[40], rnd[TMP_RAND + 1];
    host_tag(host, sizeof host);
    for (int tries = 0; tries < 8; tries++) {
        rand_tag(rnd);
        int n = snprintf(a->tmp, sizeof a->tmp, "%s.tmp.%ld.%ld.%s.%s", a->real, (long)getpid(),
                         (long)geteuid(), host, rnd);
        if (n < 0 || (size_t)n >= sizeof a->tmp) {
            errno = ENAMETOOLONG;
            return -1;
        }
        int fd = open(a->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    return -1;
}

int atomicio_tmp_parse(const char *name, const char *base, long *pid, int *ours)
{
    size_t blen = strlen(base);
    if (strncmp(name, base, blen) != 0 || strncmp(name + blen, ".tmp.", 5) != 0)
        return 0;
    const char *d = name + blen + 5;
    char *end;
    errno = 0;
    long p = strtol(d, &end, 10);
    if (end == d || !isdigit((unsigned char)*d) || p <= 0 || errno)
        return 0;
    *pid = p;
    if (!*end) { /* an older normscope's "BASE.tmp.PID" */
        *ours = -1;
        return 1;
    }
    char uid[24], host[40], tail[64];
    int n = snprintf(tail, sizeof tail, "%s", end);
    if (n < 0 || (size_t)n >= sizeof tail || tail[0] != '.')
        return 0;
    char *u = tail + 1, *h = strchr(u, '.'), *r = h ? strchr(h + 1, '.') : NULL;
    if (!h || !r || strlen(r + 1) != TMP_RAND)
        return 0;
    *h++ = 0;
    *r = 0;
    snprintf(uid, sizeof uid, "%ld", (long)geteuid());
    host_tag(host, sizeof host);
    *ours = !strcmp(u, uid) && !strcmp(h, host);
    return 1;
}

int atomicio_open(atomic_file *a, const char *path, char *err, size_t errlen)
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
    if (planted(path, err, errlen) != 0)
        return -1;
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
    int fd = create_tmp(a);
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

int atomicio_failed(atomic_file *a)
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

/* Is name a temp file of base made on this machine by this user, whose
 * process is gone? Another user's, another machine's (a directory shared
 * over NFS, a PID from another PID namespace) or an older normscope's
 * (no host, no user) is never judged: its PID means nothing here. */
static int stale_tmp(const char *name, const char *base)
{
    long pid;
    int ours;
    if (!atomicio_tmp_parse(name, base, &pid, &ours) || ours != 1 || pid == (long)getpid())
        return 0;
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
    DIR *dp = opendir(dir);
    if (!dp)
        return;
    struct dirent *de;
    while ((de = readdir(dp)) != NULL) {
        if (!stale_tmp(de->d_name, base))
            continue;
        snprintf(victim, sizeof victim, "%s/%s", dir, de->d_name);
        (void)unlink(victim);
    }
    closedir(dp);
}

int atomicio_commit(atomic_file *a, char *err, size_t errlen)
{
    if (!a->f)
        return 0;
    atomicio_failed(a);
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

void atomicio_abort(atomic_file *a)
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

int atomicio_probe(const char *path, char *err, size_t errlen)
{
    if (!strcmp(path, "-"))
        return 0;
    if (planted(path, err, errlen) != 0)
        return -1;
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
        int fd = create_tmp(a);
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

int atomicio_write_file(const char *path, const void *p, size_t n, char *err, size_t errlen)
{
    atomic_file *a = malloc(sizeof *a);
    if (!a)
        return fail(err, errlen, path, ENOMEM);
    int r = atomicio_open(a, path, err, errlen);
    if (r == 0) {
        if (n && fwrite(p, 1, n, a->f) != n)
            atomicio_failed(a);
        r = atomicio_commit(a, err, errlen);
    }
    free(a);
    return r;
}
