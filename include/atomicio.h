/* atomicio.h - writing a file so that a crash never leaves half of it under
 * its name. Used by --save, --csv, --jsonl and the live view's d and e keys.
 *
 * The bytes go to a temporary file beside the target, named
 * "TARGET.tmp.PID.UID.HOST.RAND" (the writing process, its user, this
 * machine's name, and letters no one can guess, so no one can plant a file
 * or link there first), created with O_EXCL, flushed, fsynced and renamed
 * over the target; then the directory is fsynced so that the rename itself
 * survives a power cut. A process killed mid-write leaves its temporary
 * file behind (nothing can prevent that) but never a partial target; the
 * next successful write to the same target removes the temporary files of
 * this user and machine whose process is gone.
 *
 * In a sticky world-writable directory (/tmp), a symbolic link or a file
 * that another user owns is refused with its reason, at open and at the
 * start check: the kernel's protected_symlinks rule, whatever the sysctl.
 *
 * Written in place instead: "-" (standard output) and an existing target
 * that is not a regular file (a FIFO, /dev/null, /dev/full, a terminal). A
 * device cannot be renamed over, and replacing /dev/full with a regular file
 * would be far worse than not being atomic.
 *
 * Errors are one line, "PATH: reason", for the caller to prefix with its flag.
 * Not here: what is written (metrics.c, engine.c, tui_dump.c).
 */
#ifndef NS_ATOMICIO_H
#define NS_ATOMICIO_H

#include <stddef.h>
#include <stdio.h>

enum { ATOMIC_PATH_MAX = 4096 };

typedef struct {
    FILE *f;                        /* write here between open and commit */
    char path[ATOMIC_PATH_MAX];     /* the target, as named (for messages) */
    char real[ATOMIC_PATH_MAX];     /* where the rename lands: a symlink's target */
    char tmp[ATOMIC_PATH_MAX + 96]; /* "real.tmp.PID.UID.HOST.RAND", or "" */
    int direct;                     /* written in place (stdout, a device, a FIFO) */
    int err;                        /* errno of the first failed write, 0 if none */
} atomic_file;

/* Open a temporary file for path (or path itself, see above). Returns 0, or
 * -1 with "PATH: reason" in err and nothing left on disk. Opening an
 * existing FIFO blocks until a reader opens it, as a shell's > does. */
int atomicio_open(atomic_file *a, const char *path, char *err, size_t errlen);
/* Has a write failed so far? Remembers the errno of the first failure, so
 * the final message names the cause (ENOSPC) rather than a later errno. */
int atomicio_failed(atomic_file *a);
/* Flush, fsync, close and rename into place; on any failure remove the
 * temporary file and leave the old target as it was. Returns 0 or -1 with
 * "PATH: reason" in err. The handle is closed either way. */
int atomicio_commit(atomic_file *a, char *err, size_t errlen);
/* Close and throw away what was written (the old target stays). */
void atomicio_abort(atomic_file *a);

/* Could path be written at the end of a run? Checked at startup so a
 * missing or unwritable directory is reported before minutes of training:
 * creates and removes the temporary file (honest even for root, where
 * permission bits say little). Opens nothing that is not a regular file.
 * Returns 0, or -1 with "PATH: reason" in err. */
int atomicio_probe(const char *path, char *err, size_t errlen);

/* Is name a temp file of the target whose file name is base? 1 with the
 * writer's PID in *pid and *ours 1 when it was made on this machine by
 * this user, 0 when elsewhere or by another user, -1 when it has an older
 * normscope's name ("BASE.tmp.PID": neither said); 0 when not a temp. */
int atomicio_tmp_parse(const char *name, const char *base, long *pid, int *ours);

/* open + one write of n bytes + commit. */
int atomicio_write_file(const char *path, const void *p, size_t n, char *err, size_t errlen);

#endif
