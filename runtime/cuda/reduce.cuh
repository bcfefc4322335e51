/* reduce.cuh: block-wide reductions and launch sizes shared by the kernels. */
#ifndef WEFT_CUDA_REDUCE_CUH
#define WEFT_CUDA_REDUCE_CUH

#include <float.h>
#include <math.h>

#define WF_THREADS 256  /* threads per block everywhere; a multiple of 32 */

/* Blocks for a grid-stride loop over n elements (capped: the loop covers the rest). */
static inline int wf_blocks(long n) {
    long b = (n + WF_THREADS - 1) / WF_THREADS;
    return (int)(b < 1 ? 1 : b > 65535 ? 65535 : b);
}

/* Sum over the block in double (as the CPU kernels sum in double where it
 * matters); every thread gets the result.  Uses 32 doubles of shared memory. */
__device__ inline double wf_block_sum(double v) {
    __shared__ double part[32];
    __shared__ double total;
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
    if (lane == 0) part[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < (int)(blockDim.x / 32) ? part[lane] : 0.0;
        for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
        if (lane == 0) total = v;
    }
    __syncthreads();
    double r = total;
    __syncthreads(); /* the next call may overwrite part and total */
    return r;
}

__device__ inline float wf_block_max(float v) {
    __shared__ float part[32];
    __shared__ float total;
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_down_sync(0xffffffffu, v, o));
    if (lane == 0) part[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < (int)(blockDim.x / 32) ? part[lane] : -INFINITY;
        for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_down_sync(0xffffffffu, v, o));
        if (lane == 0) total = v;
    }
    __syncthreads();
    float r = total;
    __syncthreads();
    return r;
}

#endif
