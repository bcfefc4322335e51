/* dp_comm.cu: the conversions of runtime/common/dp_comm.c (16-bit
 * data-parallel gradient sums, plan.dp_comm) and of grad16.c's 16-bit
 * weight gradients (widened per op and for their sums, stored rounded) on
 * the device, in stream order:
 * gradients to the plan's 16-bit type (rounded to nearest even, as the CPU's
 * wf_hd_*_bits) and 16-bit values back to floats.  The same rounding
 * functions as the CPU backend's (precision_bits.h), so both give the same
 * bits. */
#include "cuda_rt.h"
#include "reduce.cuh"
#include "storage.cuh"
#include "storage_vec.cuh"

template <class S> __global__ static void from16_kernel(float *dst, const typename S::raw *src, long n) {
    WF_GRID_CHUNKS(i, n, 1) dst[i] = S::load(src, i);
}

extern "C" void wf_backend_to16(wf_ctx *c, void *dst, const float *src, long n) {
    if (n <= 0) return;
    float *d = static_cast<float *>(dst);
    WF_BY_16BIT(c, S, wf_narrow_launch<S>(d, src, n, wf_cuda_stream(c)));
    wf_cuda_sync(c, "wf_backend_to16");
}

extern "C" void wf_backend_from16(wf_ctx *c, float *dst, const void *src, long n) {
    if (n <= 0) return;
    const uint16_t *h = static_cast<const uint16_t *>(src);
    WF_BY_16BIT(c, S, WF_LAUNCH(from16_kernel<S>, wf_blocks(n), WF_THREADS, 0, wf_cuda_stream(c))(dst, h, n));
    wf_cuda_sync(c, "wf_backend_from16");
}
