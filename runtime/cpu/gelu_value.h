/* gelu_value.h: GPT-2's GELU (tanh approximation) and its derivative for one
 * value, as inline functions that the CPU kernels (elementwise.c, linear.c)
 * and the CUDA ones (runtime/cuda/elementwise.cu, and the emulator's fake
 * cuBLASLt epilogue) all compile, so every path evaluates the same float
 * expression in the same order: a fused and an unfused GELU agree bit for bit
 * wherever the compiler does not contract them differently (the CPU build and
 * the emulator make no fused multiply-adds).
 *
 * The formula is evaluated as x sigmoid(2u), equal to 0.5 x (1 + tanh u), with
 * the exponential in float arithmetic only (exp_float.h, no libm call), so
 * that a loop of it vectorises.  It is also more accurate than 1 + tanhf(u), which cancels
 * for negative x (at x = -5 it keeps almost no correct bits).
 * tests/unit/test_gelu_fast.c measures the error against float64. */
#ifndef WEFT_GELU_VALUE_H
#define WEFT_GELU_VALUE_H

#include <math.h>

#include "exp_float.h"
#include "host_device.h"

#define WF_GELU_A 0.7978845608028654f /* sqrt(2 / pi) */
#define WF_GELU_B 0.044715f

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
