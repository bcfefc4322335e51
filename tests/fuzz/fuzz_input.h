/* fuzz_input.h: the fuzzers' one helper.  The readers under test take a path,
 * so each input is written to a file of this process's own, made once. */
#ifndef WEFT_FUZZ_INPUT_H
#define WEFT_FUZZ_INPUT_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Writes data to a file named `suffix` ("plan.lua") in a private folder
 * under $TMPDIR (run.sh removes it) and returns its path, the same on every
 * call. */
static const char *fuzz_input_file(const char *suffix, const uint8_t *data, size_t size) {
    static char dir[4096], path[4200];
    if (!dir[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/weft-fuzz.XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(dir)) abort();
    }
    snprintf(path, sizeof path, "%s/%s", dir, suffix);
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    if (size && fwrite(data, 1, size, f) != size) abort();
    if (fclose(f) != 0) abort();
    return path;
}

#endif
