/* inspect.h: `weft inspect`. */
#ifndef WEFT_INSPECT_H
#define WEFT_INSPECT_H
#include <stdio.h>

#include "program.h"

/* format: "text" (instruction streams and Gantt), "chrome" or "svg";
 * only_rank < 0 shows every rank. */
int inspect_plan(const Program *p, int only_rank, const char *format, FILE *out);
#endif
