/* err_text.h: how a function that fails fills its caller's error buffer
 * (char *err, size_t errlen), shared by the runtime's readers and the
 * compiler's writers.  A NULL or empty buffer takes nothing. */
#ifndef WF_ERR_TEXT_H
#define WF_ERR_TEXT_H

#include <stdarg.h>
#include <stdio.h>

static inline void set_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static inline void set_err(char *err, size_t errlen, const char *fmt, ...) {
    if (!err || errlen == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

#endif
