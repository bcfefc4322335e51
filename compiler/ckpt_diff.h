/* ckpt_diff.h: `weft ckpt diff`, tensor-by-tensor comparison of checkpoints. */
#ifndef WEFT_CKPT_DIFF_H
#define WEFT_CKPT_DIFF_H
#include <stdio.h>

/* Compares every tensor of two safetensors files.  With tol = atol = 0 they
 * must be bit-identical; otherwise each tensor must satisfy
 * max|a - b| <= atol + tol * max|a|.  Prints one line per tensor that differs and a
 * summary; returns 0 when they match, -1 otherwise. */
int ckpt_diff(const char *path_a, const char *path_b, double tol, double atol, FILE *out);
#endif
