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
/* noise: element ranges whose gradient is zero in exact arithmetic (GPT-2's
 * key bias: softmax ignores a shift shared by all keys), so that what they
 * hold is rounding noise AdamW amplified; norm_tol leaves them out of both
 * norms and only `bound` holds them. */
#define CKPT_MAX_NOISE 8
typedef struct {
    const char *pattern;  /* tensor names, fnmatch(3) */
    long lo, hi;          /* elements [lo, hi) of each, in storage order */
} ckpt_noise;

typedef struct {
    double tol, atol, bound, norm_tol;
    const char *from;  /* NULL: norms relative to ||a|| */
    ckpt_noise noise[CKPT_MAX_NOISE];
    int n_noise;
} ckpt_tolerance;

/* Compares every tensor of two safetensors files.  Prints one line per tensor
 * that differs and a summary (the worst max|a-b| and relative norm, and which
 * tensors); returns 0 when they match, -1 otherwise. */
int ckpt_diff(const char *path_a, const char *path_b, const ckpt_tolerance *t, FILE *out);
#endif
