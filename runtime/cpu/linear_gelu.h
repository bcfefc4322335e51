/* linear_gelu.h: the elementwise halves of the fused linear + GELU
 * (weft/rt.h's wf_linear_gelu_*), with the 16-bit storage type explicit
 * rather than read from a context, so that tests/gpu/check_kernels.c can run
 * the bf16 / fp16 path of both backends without a plan.  The CPU backend
 * implements them in elementwise.c, the CUDA one in elementwise.cu. */
#ifndef WEFT_LINEAR_GELU_H
#define WEFT_LINEAR_GELU_H

#include "weft/rt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* pre = round(pre); out = round(gelu(pre)), round being the storage type of
 * `precision` (nothing under WF_FP32): the unfused gelu reads a rounded pre. */
void wf_gelu_round_fwd(wf_ctx *c, int precision, float *pre, float *out, long n);
/* dpre = round(dpre + gelu'(pre) * dout): the gelu's backward and the
 * rounding of its input gradient the compiler emits after it. */
void wf_gelu_round_bwd(wf_ctx *c, int precision, float *dpre, const float *pre, const float *dout,
                       long n);
/* dpre = round(gelu'(pre) * acc), acc a float matrix product (n values):
 * the elementwise half of wf_linear_dgelu_bwd_input where the GEMM cannot
 * apply gelu' itself (acc == dpre in place where activations are floats). */
void wf_dgelu_round(wf_ctx *c, int precision, float *dpre, const float *pre, const float *acc, long n);

#ifdef __cplusplus
}
#endif

#endif
