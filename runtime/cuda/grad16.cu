/* grad16.cu: the device's part of 16-bit weight gradients
 * (runtime/common/grad16.c) beyond dp_comm.cu's conversions: a ZeRO-1
 * shard's 16-bit sums widened in place, ZeRO-2's 16-bit sums added into
 * its float shard, and floats added into 16-bit gradients (2BW's tied wte).
 * Each value is widened exactly (storage.cuh's loads, the CPU's
 * wf_hd_*_value) and rounded to nearest even (its stores, the CPU's
 * wf_hd_*_bits), so all three match the CPU backend bit for bit. */
#include "cuda_rt.h"
#include "reduce.cuh"
#include "storage.cuh"

/* x's elements [lo, hi) widened from the 16-bit values in its first half */
template <class S> __global__ static void widen_range_kernel(float *x, long lo, long hi) {
    const typename S::raw *h = reinterpret_cast<const typename S::raw *>(x);
    for (long i = lo + blockIdx.x * (long)blockDim.x + threadIdx.x; i < hi; i += (long)gridDim.x * blockDim.x)
        x[i] = S::load(h, i);
}

template <class S> static void widen_in_place(float *x, long n, cudaStream_t s) {
    /* Element i's float covers the bits of elements 2i and 2i + 1.  The
     * upper half [ceil(hi / 2), hi) writes bytes [2 hi, 4 hi) at or past
     * all it reads ([hi, 2 hi)), so its threads race with nobody; the values
     * below it are still unread.  Halving down to element 0 (which its one
     * thread reads before writing): about log2(n) launches. */
    for (long hi = n; hi > 0;) {
        long lo = hi == 1 ? 0 : (hi + 1) / 2;
        WF_LAUNCH(widen_range_kernel<S>, wf_blocks(hi - lo), WF_THREADS, 0, s)(x, lo, hi);
        hi = lo;
    }
}

extern "C" void wf_backend_from16_in_place(wf_ctx *c, float *x, long n) {
    if (n <= 0) return;
    WF_BY_16BIT(c, S, widen_in_place<S>(x, n, wf_cuda_stream(c)));
    wf_cuda_sync(c, "widen_range_kernel");
}

template <class S> __global__ static void add16_kernel(float *dst, const typename S::raw *src, long n) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
        dst[i] += S::load(src, i);
}

extern "C" void wf_backend_add16(wf_ctx *c, float *dst, const void *src, long n) {
    if (n <= 0) return;
    const uint16_t *h = static_cast<const uint16_t *>(src);
    WF_BY_16BIT(c, S, WF_LAUNCH(add16_kernel<S>, wf_blocks(n), WF_THREADS, 0, wf_cuda_stream(c))(dst, h, n));
    wf_cuda_sync(c, "add16_kernel");
}

template <class S> __global__ static void add_into16_kernel(typename S::raw *dst, const float *src, long n) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
        S::store(dst, i, S::load(dst, i) + src[i]);
}

extern "C" void wf_backend_add_into16(wf_ctx *c, void *dst, const float *src, long n) {
    if (n <= 0) return;
    uint16_t *h = static_cast<uint16_t *>(dst);
    WF_BY_16BIT(c, S, WF_LAUNCH(add_into16_kernel<S>, wf_blocks(n), WF_THREADS, 0, wf_cuda_stream(c))(h, src, n));
    wf_cuda_sync(c, "add_into16_kernel");
}
