/* gelu_erf.c: the exact (erf) GELU of weft/rt.h on the CPU, the
 * activation of Hugging Face's activation_function = "gelu" models; the
 * formula is gelu_erf_value.h's, which the CUDA kernels compile too.  Same
 * conventions as wf_gelu_fwd / wf_gelu_bwd (kernels.c): activations are
 * floats (the generated code rounds them under a bf16 / fp16 plan), the
 * backward accumulates, the context is not needed and may be NULL. */
#include "weft/rt.h"

#include "gelu_erf_value.h"

void wf_gelu_erf_fwd(wf_ctx *c, float *out, const float *inp, long n)
{
    (void)c;
#pragma omp parallel for schedule(static) if (n > 65536)
    for (long i = 0; i < n; i++) {
        out[i] = wf_gelu_erf_value(inp[i]);
    }
}

void wf_gelu_erf_bwd(wf_ctx *c, float *dinp, const float *inp, const float *dout, long n)
{
    (void)c;
#pragma omp parallel for schedule(static) if (n > 65536)
    for (long i = 0; i < n; i++) {
        dinp[i] += wf_gelu_erf_grad(inp[i]) * dout[i];
    }
}
