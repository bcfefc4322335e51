/* precision.c: 16-bit storage emulated on the CPU.
 *
 * Under precision = "bf16" or "fp16" the arenas stay float, but every value
 * written to a 16-bit tensor (parameters the kernels read, activations,
 * activation and parameter gradients) is rounded to the nearest bf16 / fp16
 * value, ties to even: numerically the same as storing it in 16 bits, while
 * the kernels keep accumulating in fp32 as tensor cores do.  The rounding
 * itself (ranges, subnormals, NaN) is runtime/common/precision_bits.h, which
 * the CUDA kernels share. */
#include <string.h>

#include "opt_backend.h"
#include "precision_bits.h"

void wf_to_bf16(wf_ctx *c, float *x, long n) {
    (void)c;
    for (long i = 0; i < n; i++) x[i] = wf_hd_round(WF_BF16, x[i]);
}

void wf_to_fp16(wf_ctx *c, float *x, long n) {
    (void)c;
    for (long i = 0; i < n; i++) x[i] = wf_hd_round(WF_FP16, x[i]);
}

void wf_backend_round_copy(wf_ctx *c, int precision, float *dst, const float *src, long n) {
    (void)c;
    if (precision == WF_BF16)
        for (long i = 0; i < n; i++) dst[i] = wf_hd_round(WF_BF16, src[i]);
    else if (precision == WF_FP16)
        for (long i = 0; i < n; i++) dst[i] = wf_hd_round(WF_FP16, src[i]);
    else if (dst != src)
        memcpy(dst, src, sizeof(float) * (size_t)n);
}

void wf_backend_add_floats(wf_ctx *c, float *dst, const float *src, long n) {
    (void)c;
    for (long i = 0; i < n; i++) dst[i] += src[i];
}

void wf_round_copy(int precision, float *dst, const float *src, long n) {
    wf_backend_round_copy(NULL, precision, dst, src, n);
}
