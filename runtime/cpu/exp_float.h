/* exp_float.h: e^y in float arithmetic only (no libm call), inline for the
 * host and CUDA device code alike, so that the loops calling it vectorise:
 * the GELU (gelu_value.h) and the CPU cross-entropy's softmax (xent.c).
 * Within 4 units of float rounding of e^y on [-87, 88] (test_gelu_fast.c's
 * bound, and test_kernels.c's cross-entropy against float64). */
#ifndef WEFT_EXP_FLOAT_H
#define WEFT_EXP_FLOAT_H

#include <stdint.h>

#include "host_device.h"

/* e^y for y in [-87, 88] (the caller clamps): y = k ln 2 + r with k the
 * nearest integer (1.5 * 2^23 added and taken away rounds to it) and |r| <=
 * ln2 / 2 (ln 2 in two parts, Cody and Waite's reduction: k * the first part
 * is exact); e^r by its Taylor polynomial to r^7 (the remainder is below
 * (ln2/2)^8 / 8! = 5.2e-9, under float's unit roundoff 6e-8); 2^k from its
 * exponent bits (k in [-126, 127]: a normal float). */
static inline WF_HD float wf_exp_float(float y) {
    const float shift = 12582912.0f; /* 1.5 * 2^23 */
    float k = (y * 1.44269504f + shift) - shift;
    float r = y - k * 0.693145752f; /* ln 2's leading 16 bits */
    r = r - k * 1.42860677e-06f;    /* the rest of ln 2 */
    float p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    return p * wf_hd_f32_from((uint32_t)((int32_t)k + 127) << 23);
}

#endif
