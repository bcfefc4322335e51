/* simulate.h: `weft simulate`. */
#ifndef WEFT_SIMULATE_H
#define WEFT_SIMULATE_H
#include <stdio.h>

#include "program.h"

/* format: "text" (iteration time, throughput, MFU, bubble, communication,
 * memory per rank), or "chrome" / "svg" for the predicted timeline. */
int simulate_plan(const Program *p, const char *format, FILE *out);
#endif
