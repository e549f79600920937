/* nstime.c - the monotonic clock in seconds (nstime.h). */
#include "nstime.h"

#include <time.h>

double nstime_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}
