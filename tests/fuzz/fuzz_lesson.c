/* fuzz_lesson.c - libFuzzer harness for lesson files: the parser and its
 * checks (keys, flags through the command line's parser, compare, reveal,
 * script lines, conditions), and a teacher's file read from disk. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lesson.h"
#include "settings.h"

/* The input as a file, loaded the way --lesson PATH loads it: 0 or an
 * error naming the file. */
static void from_file(const uint8_t *data, size_t size)
{
    static char path[64];
    if (!path[0])
        snprintf(path, sizeof path, "/tmp/fuzz_lesson_%ld.lesson", (long)getpid());
    FILE *f = fopen(path, "wb");
    int written = f && fwrite(data, 1, size, f) == size;
    if ((f && fclose(f) != 0) || !written)
        return; /* no room in /tmp: nothing to load */
    ns_lesson l;
    char err[512];
    if (lesson_load(path, &l, err, sizeof err) == 0)
        lesson_free(&l);
    else if (!strstr(err, path))
        abort();
    remove(path);
}

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
    from_file(data, size);
    return 0;
}
