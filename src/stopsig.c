/* stopsig.c - one flag for the stop signals of a headless run or a sweep
 * (stopsig.h). */
#include "stopsig.h"

#include <string.h>

volatile sig_atomic_t stopsig_requested;

static void on_stop(int sig)
{
    (void)sig;
    stopsig_requested = 1;
}

void stopsig_catch(void)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = on_stop;
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
            sigaction(sigs[i], &sa, NULL);
}
