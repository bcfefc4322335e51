/* convert.cu: the conversions of 16-bit activation storage into the cast
 * buffer (cast.c) around the GEMMs of linear.cu and xent.cu (cuda_rt.h).
 * cuBLASLt takes A and B of one type: a float weight meets a 16-bit
 * activation as the activation's type (the weight holds values of that
 * type, so the conversion is exact).  Activations are never converted to
 * floats: every GEMM operand that is not a weight is 16-bit (the LM head's
 * dlogits too). */
#include "cuda_rt.h"
#include "reduce.cuh"
#include "storage.cuh"

extern "C" cudaDataType_t wf_cuda_act_type(wf_ctx *c) {
    if (!wf_ctx_act16(c)) return CUDA_R_32F;
    return wf_ctx_precision(c) == WF_BF16 ? CUDA_R_16BF : CUDA_R_16F;
}

/* floats to storage S (rounded: exact for values of S's type) */
template <class S> __global__ static void to_storage_kernel(typename S::raw *dst, const float *src, long n) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
        S::store(dst, i, src[i]);
}

static void require_act16(wf_ctx *c, const char *call) {
    if (!wf_ctx_act16(c)) wf_cuda_fail(c, call, WF_CUDA_WHERE, "called without 16-bit activation storage");
}

extern "C" const void *wf_cuda_weight16(wf_ctx *c, const float *w, long n) {
    require_act16(c, "wf_cuda_weight16");
    float *buf = wf_cuda_cast_buffer(c, (n + 1) / 2);
    cudaStream_t s = wf_cuda_stream(c);
    WF_BY_STORAGE(c, S, WF_LAUNCH(to_storage_kernel<S>, wf_blocks(n), WF_THREADS, 0, s)(
                            wf_act<S>(buf), w, n));
    wf_cuda_sync(c, "wf_cuda_weight16");
    return buf;
}
