/* testengine.h - an engine for the unit tests, with the reason on stderr
 * when it cannot be made (the tests then fail on the NULL), and commands
 * from their text. */
#ifndef NS_TESTENGINE_H
#define NS_TESTENGINE_H

#include <stdio.h>

#include "command.h"
#include "engine.h"

static inline engine *test_engine_create(const ns_config *c, const dataset *d)
{
    char err[256];
    engine *e = engine_create(c, d, err, sizeof err);
    if (!e)
        fprintf(stderr, "engine_create: %s\n", err);
    return e;
}

/* A command from its text, as a script line or a key gives it ("norm
 * post", "lr x2"); CMD_NONE, said on stderr, when it does not parse. */
static inline ns_command test_command(const char *text)
{
    ns_command c;
    char err[200];
    if (command_parse(text, &c, err, sizeof err) != 0) {
        fprintf(stderr, "  '%s': %s\n", text, err);
        c = command_make(CMD_NONE);
    }
    return c;
}

#endif
