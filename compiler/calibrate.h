/* calibrate.h: `weft calibrate`, this machine measured for CPU-backend predictions. */
#ifndef WEFT_CALIBRATE_H
#define WEFT_CALIBRATE_H

#include "program.h"

/* Measures and writes the cluster file `out`; 0, or -1 after reporting. */
int calibrate_machine(const char *runtime_dir, const char *out);

#endif
