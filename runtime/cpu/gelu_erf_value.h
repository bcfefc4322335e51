/* gelu_erf_value.h: the exact GELU, x Phi(x) with Phi the standard normal
 * CDF (Hugging Face's activation_function = "gelu", PyTorch's
 * torch.nn.functional.gelu default), and its derivative for one value, as
 * inline functions that the CPU kernels (elementwise.c) and the CUDA ones
 * (runtime/cuda/elementwise.cu) both compile: one float expression in one
 * order on every path, as gelu_value.h does for the tanh approximation.
 *
 * Phi(x) = 0.5 (1 + erf(x / sqrt 2)) = 0.5 erfc(-x / sqrt 2).  The erfc form
 * is the one evaluated: for x < 0, 1 + erf(x / sqrt 2) subtracts two numbers
 * near 1 and keeps only the absolute accuracy of erf (3e-8, half an ulp
 * of 1), so in fp32 gelu(-4) would be 3e-4 off in relative terms, gelu(-5)
 * 4% off and every x below about -5.5 exactly -0; erfc returns the small
 * tail value itself to a few ulps.  Where x >= 0 the two forms agree to an ulp or two (erfc
 * of a negative argument is 2 - erfc(|t|), no cancellation), so this is
 * PyTorch's gelu up to fp32 rounding, and more accurate in the left tail. */
#ifndef WEFT_GELU_ERF_VALUE_H
#define WEFT_GELU_ERF_VALUE_H

#include <math.h>

#include "host_device.h"

#define WF_GELU_ERF_RSQRT2 0.7071067811865476f   /* 1 / sqrt(2) */
#define WF_GELU_ERF_RSQRT2PI 0.3989422804014327f /* 1 / sqrt(2 pi) */

/* gelu(x) = x Phi(x) = 0.5 x erfc(-x / sqrt 2) */
static inline WF_HD float wf_gelu_erf_value(float x) {
    return 0.5f * x * erfcf(-WF_GELU_ERF_RSQRT2 * x);
}

/* gelu'(x) = Phi(x) + x phi(x), phi(x) = exp(-x^2 / 2) / sqrt(2 pi) */
static inline WF_HD float wf_gelu_erf_grad(float x) {
    float cdf = 0.5f * erfcf(-WF_GELU_ERF_RSQRT2 * x);
    float pdf = WF_GELU_ERF_RSQRT2PI * expf(-0.5f * x * x);
    return cdf + x * pdf;
}

#endif
