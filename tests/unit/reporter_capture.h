/* reporter_capture.h: unit tests of compiler passes read what the reporter
 * (wf_error, which writes to stderr) said.  capture_start() points stderr
 * at a temporary file; captured(fn, p) runs fn(p) and leaves its messages in
 * last_error. */
#ifndef WEFT_REPORTER_CAPTURE_H
#define WEFT_REPORTER_CAPTURE_H

#include <stdio.h>
#include <unistd.h>

#include "program.h"

static char last_error[1024];
static FILE *errlog;

static int capture_start(void) {
    errlog = tmpfile();
    return errlog && dup2(fileno(errlog), 2) >= 0 ? 0 : -1;
}

static int captured(int (*fn)(Program *), Program *p) {
    fflush(stderr);
    if (ftruncate(2, 0) != 0 || lseek(2, 0, SEEK_SET) != 0) return -2;  /* shares errlog's offset */
    int rc = fn(p);
    fflush(stderr);
    ssize_t n = pread(fileno(errlog), last_error, sizeof last_error - 1, 0);
    last_error[n > 0 ? n : 0] = 0;
    return rc;
}

#endif
