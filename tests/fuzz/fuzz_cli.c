/* fuzz_cli.c - libFuzzer harness for the command-line parser: the input,
 * split at NUL bytes, is argv. Any input must end in "run", "printed
 * help/version" or "exit 2 with one line" - never a crash. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *null;
    if (!null)
        null = fopen("/dev/null", "w");
    if (size > 4096)
        return 0;
    char *buf = malloc(size + 1);
    memcpy(buf, data, size);
    buf[size] = 0;
    char *argv[256];
    int argc = 0;
    argv[argc++] = "normscope";
    for (size_t i = 0; i <= size && argc < 255;) {
        argv[argc++] = buf + i;
        i += strlen(buf + i) + 1;
    }
    argv[argc] = NULL;
    cli_opts o;
    int r = cli_parse(&o, argc, argv, null, null);
    if (r < 0 || r > 2)
        abort();
    if (r == 0 && config_check(&o.cfg) != NULL)
        abort(); /* a config the parser accepted must be valid */
    if (o.compare) {
        ns_config c = o.cfg;
        cli_apply_setting(&c, o.compare, null);
    }
    free(buf);
    return 0;
}
