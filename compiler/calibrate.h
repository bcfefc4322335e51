/* calibrate.h: `weft calibrate`, this machine measured for CPU-backend predictions. */
#ifndef WEFT_CALIBRATE_H
#define WEFT_CALIBRATE_H

#include "program.h"

/* Measures and writes the cluster file `out`; 0, or -1 after reporting. */
int calibrate_machine(const char *runtime_dir, const char *out);

/* Runs argv with stdout and stderr going to log (NULL: inherited); 0 when
 * it exits with 0. */
int calibrate_run(const char *const argv[], const char *log);

/* `weft calibrate --backend cuda`: runs weft-calibrate-cuda (runtime/cuda, or
 * $WEFT_CALIBRATE_CUDA) on `gpus` ranks, refuses a broken measurement and
 * writes the cluster file `out`; quick: the tool's tiny sizes (emulator).
 * 0, or -1 after reporting (out unchanged). */
int calibrate_cuda(const char *runtime_dir, int gpus, int quick, const char *out);

#endif
