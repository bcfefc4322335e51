/* gelu_value.h: GPT-2's GELU (tanh approximation) and its derivative for one
 * value, as inline functions that the CPU kernels (elementwise.c, linear.c)
 * and the CUDA ones (runtime/cuda/elementwise.cu, and the emulator's fake
 * cuBLASLt epilogue) all compile, so every path evaluates the same float
 * expression in the same order: a fused and an unfused GELU agree bit for bit
 * wherever the compiler does not contract them differently (the CPU build and
 * the emulator make no fused multiply-adds).
 *
 * The formula is evaluated as x sigmoid(2u), equal to 0.5 x (1 + tanh u), with
 * the exponential in float arithmetic only (no libm call), so that a loop of
 * it vectorises.  It is also more accurate than 1 + tanhf(u), which cancels
 * for negative x (at x = -5 it keeps almost no correct bits).
 * tests/unit/test_gelu_fast.c measures the error against float64. */
#ifndef WEFT_GELU_VALUE_H
#define WEFT_GELU_VALUE_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "host_device.h"

#define WF_GELU_A 0.7978845608028654f /* sqrt(2 / pi) */
#define WF_GELU_B 0.044715f

/* the float whose bits are b */
static inline WF_HD float wf_float_of_bits(int32_t b) {
#ifdef __CUDA_ARCH__
    return __int_as_float(b);
#else
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
#endif
}

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
    return p * wf_float_of_bits(((int32_t)k + 127) << 23);
}

/* e^(-2u), u = sqrt(2/pi) (x + 0.044715 x^3), the argument clamped to
 * [-87, 87]: past it the GELU is x or 0 to within |x| e^-87.  One select on
 * |y| (two compares in a row keep gcc from vectorising the loop under the
 * default -ftrapping-math). */
static inline WF_HD float wf_gelu_e(float x) {
    float y = -2.0f * (WF_GELU_A * (x + WF_GELU_B * x * x * x));
    y = fabsf(y) > 87.0f ? copysignf(87.0f, y) : y;
    return wf_exp_float(y);
}

/* 0.5 x (1 + tanh u) = x / (1 + e^(-2u)) */
static inline WF_HD float wf_gelu_value(float x) {
    return x / (1.0f + wf_gelu_e(x));
}

/* d/dx [x s], s = 1 / (1 + e), e = e^(-2u): s + x s (1 - s) 2 du/dx, with
 * 1 - s = e s and du/dx = sqrt(2/pi) (1 + 3 * 0.044715 x^2). */
static inline WF_HD float wf_gelu_grad(float x) {
    float e = wf_gelu_e(x);
    float s = 1.0f / (1.0f + e);
    float du = WF_GELU_A * (1.0f + 3.0f * WF_GELU_B * x * x);
    return s + 2.0f * x * (e * s) * s * du;
}

#endif
