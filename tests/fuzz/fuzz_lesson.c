/* fuzz_lesson.c - libFuzzer harness for lesson files. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lesson.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = 0;
    ns_lesson l;
    char err[256];
    if (lesson_parse(text, "x.lesson", &l, err, sizeof err) == 0)
        lesson_free(&l);
    else if (strncmp(err, "x.lesson", 8) != 0)
        abort();
    free(text);
    return 0;
}
