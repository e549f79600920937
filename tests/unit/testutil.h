/* testutil.h - the smallest test harness: CHECK records a pass or a
 * failure with its place; test_summary prints "N passed, N failed" and
 * gives the exit status. */
#ifndef NS_TESTUTIL_H
#define NS_TESTUTIL_H

#include <math.h>
#include <stdio.h>

static int t_pass, t_fail;

static inline int t_check(int ok, const char *file, int line, const char *what)
{
    if (ok)
        t_pass++;
    else {
        t_fail++;
        fprintf(stderr, "FAIL %s:%d: %s\n", file, line, what);
    }
    return ok;
}
#define CHECK(cond) t_check(!!(cond), __FILE__, __LINE__, #cond)

/* |a - b| <= rtol * max(|a|, |b|) + atol */
static inline int t_close(double a, double b, double rtol, double atol)
{
    return fabs(a - b) <= rtol * fmax(fabs(a), fabs(b)) + atol;
}

static inline int test_summary(void)
{
    printf("%d passed, %d failed\n", t_pass, t_fail);
    return t_fail ? 1 : 0;
}

#endif
