/* ckpt_diff.h: `weft ckpt diff`, tensor-by-tensor comparison of checkpoints. */
#ifndef WEFT_CKPT_DIFF_H
#define WEFT_CKPT_DIFF_H
#include <stdio.h>

/* What two checkpoints may differ by.  All zero: bit identity.  Otherwise
 * every criterion that is set (> 0) must hold for every tensor:
 *   tol / atol:  max|a - b| <= atol + tol * max|a|   (element-wise, legacy)
 *   bound:       max|a - b| <= bound                 (a hard per-element limit)
 *   norm_tol:    ||a - b||_2 <= norm_tol * ||a||_2   (the tensor as a whole),
 *                or, given `from` (the checkpoint both runs started from),
 *                ||a - b||_2 <= norm_tol * ||a - from||_2: the difference of the
 *                two runs' updates against the updates themselves. */
typedef struct {
    double tol, atol, bound, norm_tol;
    const char *from;  /* NULL: norms relative to ||a|| */
} ckpt_tolerance;

/* Compares every tensor of two safetensors files.  Prints one line per tensor
 * that differs and a summary (the worst max|a-b| and relative norm, and which
 * tensors); returns 0 when they match, -1 otherwise. */
int ckpt_diff(const char *path_a, const char *path_b, const ckpt_tolerance *t, FILE *out);
#endif
