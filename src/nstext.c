/* nstext.c - escaping text from outside before it reaches a terminal (see
 * nstext.h). */
#include "nstext.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

size_t nstext_escape(const void *b, size_t n, char *out, size_t cap)
{
    const uint8_t *p = b;
    size_t k = 0;
    if (cap == 0)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char e[5];
        int len;
        uint8_t x = p[i];
        if (x == '\n')
            len = snprintf(e, sizeof e, "\\n");
        else if (x == '\t')
            len = snprintf(e, sizeof e, "\\t");
        else if (x == '\\')
            len = snprintf(e, sizeof e, "\\\\");
        else if (x >= 0x20 && x < 0x7F)
            e[0] = (char)x, e[1] = 0, len = 1;
        else /* control bytes and every byte of a multi-byte sequence */
            len = snprintf(e, sizeof e, "\\x%02X", x);
        if (k + (size_t)len + 1 > cap)
            break;
        memcpy(out + k, e, (size_t)len);
        k += (size_t)len;
    }
    out[k] = 0;
    return k;
}

size_t nstext_escape_str(const char *s, char *out, size_t cap)
{
    return nstext_escape(s, strlen(s), out, cap);
}
