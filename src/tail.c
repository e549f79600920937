/* tail.c - a file followed as tail -f does (tail.h): complete lines only,
 * a truncated, removed or replaced file noticed and said once.
 * Not here: what the lines mean. */
#include "tail.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *tail_base_name(const char *p)
{
    const char *b = strrchr(p, '/');
    return b && b[1] ? b + 1 : p;
}

static void say(tail *t, tail_event ev, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#include <stdarg.h>
static void say(tail *t, tail_event ev, const char *fmt, ...)
{
    char text[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (t->sink.event)
        t->sink.event(t->sink.ctx, ev, text);
}

void tail_init(tail *t, const char *path, size_t line_max, const tail_sink *sink)
{
    memset(t, 0, sizeof *t);
    snprintf(t->path, sizeof t->path, "%s", path);
    t->line_max = line_max;
    t->sink = *sink;
    t->fd = -1;
}

void tail_free(tail *t)
{
    if (t->fd >= 0)
        close(t->fd);
    t->fd = -1;
    free(t->buf);
    t->buf = NULL;
    t->len = t->cap = 0;
}

void tail_reset_line(tail *t)
{
    t->len = 0;
    t->skipping = 0;
}

/* Room for the partial line plus take bytes and a NUL: 0, or -1 */
static int reserve(tail *t, size_t take)
{
    if (t->len + take + 1 <= t->cap)
        return 0;
    size_t cap = t->cap ? t->cap : 4096;
    while (cap < t->len + take + 1)
        cap *= 2;
    char *nb = realloc(t->buf, cap);
    if (!nb)
        return -1;
    t->buf = nb;
    t->cap = cap;
    return 0;
}

/* Split into lines; the unterminated tail waits for its newline. */
void tail_feed(tail *t, const char *p, size_t n)
{
    while (n > 0) {
        const char *nl = memchr(p, '\n', n);
        size_t take = nl ? (size_t)(nl - p) : n, used = take + (nl != NULL);
        if (t->skipping) {
            t->skipping = !nl;
        } else if (t->len + take > t->line_max) {
            say(t, TAIL_TOO_LONG, "longer than %zu bytes: skipped", t->line_max);
            t->len = 0;
            t->skipping = !nl;
        } else if (reserve(t, take) != 0) {
            say(t, TAIL_NOMEM, "out of memory for a line");
            t->len = 0;
            t->skipping = !nl;
        } else {
            memcpy(t->buf + t->len, p, take);
            t->len += take;
            if (nl) {
                t->buf[t->len] = 0;
                size_t len = t->len;
                t->len = 0; /* before the call: the sink may reset the tail */
                if (t->sink.line)
                    t->sink.line(t->sink.ctx, t->buf, len);
            }
        }
        p += used, n -= used;
    }
}

static int open_file(tail *t)
{
    int fd = open(t->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        close(fd);
        fd = -1;
        errno = EISDIR;
    }
    if (fd < 0) {
        int e = errno;
        if (e != t->open_err) { /* say it once, not every frame */
            if (e == ENOENT)
                say(t, TAIL_WAITING, "waiting for %s to appear", tail_base_name(t->path));
            else
                say(t, TAIL_ERROR, "%s: %s", tail_base_name(t->path), strerror(e));
        }
        t->open_err = e;
        return -1;
    }
    if (t->found)
        say(t, TAIL_BACK, "%s is back: reading it from the start", tail_base_name(t->path));
    t->fd = fd;
    t->dev = st.st_dev;
    t->ino = st.st_ino;
    t->pos = 0;
    t->found = 1;
    t->open_err = 0;
    t->gone_said = 0;
    return 0;
}

/* A file cut shorter than what was read was rewritten: read it again. A
 * different file under the name is opened from its start. A removed file
 * is kept open until a new one appears. */
static void check_file(tail *t)
{
    struct stat fs, ps;
    const char *name = tail_base_name(t->path);
    if (fstat(t->fd, &fs) == 0 && S_ISREG(fs.st_mode) && fs.st_size < t->pos) {
        say(t, TAIL_TRUNCATED, "%s was truncated (%lld bytes, %lld read): reading it from the start",
            name, (long long)fs.st_size, (long long)t->pos);
        lseek(t->fd, 0, SEEK_SET);
        t->pos = 0;
        tail_reset_line(t);
    }
    if (stat(t->path, &ps) != 0) {
        if (!t->gone_said)
            say(t, TAIL_REMOVED, "%s was removed: waiting for a new one", name);
        t->gone_said = 1;
        return;
    }
    if (ps.st_ino == t->ino && ps.st_dev == t->dev)
        return;
    say(t, TAIL_REPLACED, "%s was replaced by a new file: reading that from the start", name);
    close(t->fd);
    t->fd = -1;
    t->found = 0; /* not "is back": the replacement is said */
    tail_reset_line(t);
    open_file(t);
}

size_t tail_poll(tail *t, size_t max_bytes, int *eof)
{
    if (eof)
        *eof = 1;
    if (t->fd >= 0)
        check_file(t);
    if (t->fd < 0)
        open_file(t);
    size_t got = 0;
    while (t->fd >= 0 && (max_bytes == 0 || got < max_bytes)) {
        char chunk[1 << 16];
        ssize_t k = read(t->fd, chunk, sizeof chunk);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        t->pos += k;
        got += (size_t)k;
        tail_feed(t, chunk, (size_t)k);
        if (eof && max_bytes && got >= max_bytes)
            *eof = 0;
    }
    return got;
}
