/* nstext.h - text that came from a file or a stream, made safe to show.
 *
 * A string another program or user wrote (a followed stream's model name,
 * an event's text, a block's name, a value given for a file name) may hold
 * an escape sequence that would move the cursor, retitle the terminal or
 * worse: before it reaches a terminal, its bytes outside printable ASCII
 * are written as C escapes. Not here: XML escaping of figures (plot_svg.c).
 */
#ifndef NS_NSTEXT_H
#define NS_NSTEXT_H

#include <stddef.h>

/* n bytes of b with every byte outside printable ASCII as a C escape (\n,
 * \t, \\, \xNN), NUL-terminated in out, cut at an escape's boundary to fit
 * cap; returns the length written. */
size_t nstext_escape(const void *b, size_t n, char *out, size_t cap);
/* The same of a NUL-terminated string. */
size_t nstext_escape_str(const char *s, char *out, size_t cap);

#endif
