/* check_line.h: the unit tests' one-line checks ("ok  : ..." / "FAIL: ...",
 * an empty " ()" error suffix dropped), counted in n_pass and n_fail. */
#ifndef WEFT_TEST_CHECK_LINE_H
#define WEFT_TEST_CHECK_LINE_H
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int n_pass, n_fail;

static void check(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check(int ok, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    size_t n = strlen(msg); /* drop an empty "(error)" suffix */
    if (n >= 3 && !strcmp(msg + n - 3, " ()"))
        msg[n - 3] = '\0';
    printf("%s: %s\n", ok ? "ok  " : "FAIL", msg);
    if (ok)
        n_pass++;
    else
        n_fail++;
}

#endif
