/* gelu_value.h: GPT-2's GELU (tanh approximation) and its derivative for one
 * value, as inline functions that the CPU kernels (elementwise.c, linear.c)
 * and the CUDA ones (runtime/cuda/elementwise.cu, and the emulator's fake
 * cuBLASLt epilogue) all compile, so every path evaluates the same float
 * expression in the same order: a fused and an unfused GELU agree bit for bit
 * wherever the compiler does not contract them differently (the CPU build and
 * the emulator make no fused multiply-adds). */
#ifndef WEFT_GELU_VALUE_H
#define WEFT_GELU_VALUE_H

#include <math.h>

#include "host_device.h"

#define WF_GELU_A 0.7978845608028654f /* sqrt(2 / pi) */
#define WF_GELU_B 0.044715f

/* 0.5 x (1 + tanh u), u = sqrt(2/pi) (x + 0.044715 x^3) */
static inline WF_HD float wf_gelu_value(float x) {
    float u = WF_GELU_A * (x + WF_GELU_B * x * x * x);
    return 0.5f * x * (1.0f + tanhf(u));
}

/* d/dx [0.5 x (1 + tanh u)] = 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) du/dx,
 * with du/dx = sqrt(2/pi) (1 + 3 * 0.044715 x^2). */
static inline WF_HD float wf_gelu_grad(float x) {
    float th = tanhf(WF_GELU_A * (x + WF_GELU_B * x * x * x));
    float du = WF_GELU_A * (1.0f + 3.0f * WF_GELU_B * x * x);
    return 0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * du;
}

#endif
