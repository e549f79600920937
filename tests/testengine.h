/* testengine.h - an engine for the unit tests, with the reason on stderr
 * when it cannot be made (the tests then fail on the NULL). */
#ifndef NS_TESTENGINE_H
#define NS_TESTENGINE_H

#include <stdio.h>

#include "engine.h"

static inline engine *test_engine_create(const ns_config *c, const dataset *d)
{
    char err[256];
    engine *e = engine_create(c, d, err, sizeof err);
    if (!e)
        fprintf(stderr, "engine_create: %s\n", err);
    return e;
}

#endif
