/* precision.cu: 16-bit storage on the device.  The arenas stay float (as on
 * the CPU backend) and values stored in 16-bit tensors are rounded in place,
 * with the same scalar code as the host (precision_bits.h), so the two
 * backends round bit for bit alike: ties to even, fp16 subnormals, overflow
 * to inf, NaN kept quiet. */
#include "cuda_rt.h"
#include "opt_backend.h"
#include "precision_bits.h"
#include "reduce.cuh"

__global__ static void round_kernel(int precision, float *dst, const float *src, long n) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
        dst[i] = wf_hd_round(precision, src[i]);
}

extern "C" void wf_backend_round_copy(wf_ctx *c, int precision, float *dst, const float *src, long n) {
    if (n <= 0) return;
    cudaStream_t s = wf_cuda_stream(c);
    if (precision == WF_BF16 || precision == WF_FP16) {
        WF_LAUNCH(round_kernel, wf_blocks(n), WF_THREADS, 0, s)(precision, dst, src, n);
        wf_cuda_sync(c, "round_kernel");
    } else if (dst != src) {
        WF_CUDA(c, cudaMemcpyAsync(dst, src, sizeof(float) * (size_t)n, cudaMemcpyDefault, s));
        wf_cuda_sync(c, "cudaMemcpyAsync (fp32 copy)");
    }
}

__global__ static void add_floats_kernel(float *dst, const float *src, long n) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
        dst[i] += src[i];
}

extern "C" void wf_backend_add_floats(wf_ctx *c, float *dst, const float *src, long n) {
    if (n <= 0) return;
    WF_LAUNCH(add_floats_kernel, wf_blocks(n), WF_THREADS, 0, wf_cuda_stream(c))(dst, src, n);
    wf_cuda_sync(c, "add_floats_kernel");
}

extern "C" void wf_to_bf16(wf_ctx *c, float *x, long n) { wf_backend_round_copy(c, WF_BF16, x, x, n); }
extern "C" void wf_to_fp16(wf_ctx *c, float *x, long n) { wf_backend_round_copy(c, WF_FP16, x, x, n); }

extern "C" void wf_round_copy(int precision, float *dst, const float *src, long n) {
    wf_backend_round_copy(NULL, precision, dst, src, n);
}
