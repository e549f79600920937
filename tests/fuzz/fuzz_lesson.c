/* fuzz_lesson.c - libFuzzer harness for lesson files. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lesson.h"
#include "settings.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = 0;
    ns_lesson l;
    char err[256];
    /* without a run's settings, then with the defaults' ("if" lines kept),
     * not the lesson's own and its own */
    ns_config c;
    settings_defaults(&c);
    for (int k = 0; k < 3; k++) {
        if (lesson_parse_for(text, "x.lesson", k ? &c : NULL, k ? &c : NULL, k == 2, &l, err,
                             sizeof err) == 0)
            lesson_free(&l);
        else if (strncmp(err, "x.lesson", 8) != 0)
            abort();
    }
    free(text);
    return 0;
}
