/* check.h: the one-line-per-check reporting the unit tests share: check()
 * prints "ok" or "FAIL" and counts; a test ends by printing the counts as
 * "N passed, M failed" (the line ctest's log is read for) and returning
 * failed != 0. */
#ifndef WEFT_TEST_CHECK_H
#define WEFT_TEST_CHECK_H
#include <stdarg.h>
#include <stdio.h>

static int passed, failed;

static void check(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3), unused));
static void check(int ok, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("%s ", ok ? "ok  " : "FAIL");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    if (ok) passed++;
    else failed++;
}
#endif
