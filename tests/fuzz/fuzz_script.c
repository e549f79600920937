/* fuzz_script.c - libFuzzer harness for --script files: parse, then run
 * the schedule over a few hundred steps. Errors must name a line. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "command.h"

static void count(void *ctx, const ns_command *c, int target)
{
    (void)c;
    (void)target;
    ++*(long *)ctx;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = 0;
    ns_script s;
    char err[256];
    if (command_script_parse(text, "f", &s, err, sizeof err) == 0) {
        long n = 0;
        for (long step = 0; step < 300; step++)
            command_script_due(&s, step, count, &n);
        command_script_free(&s);
    } else if (strncmp(err, "f:", 2) != 0) {
        abort(); /* every refusal names the file (and line) */
    }
    free(text);
    return 0;
}
