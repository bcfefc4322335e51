/* llama.cu: the LLaMA family's kernels on the GPU (weft/rt.h): RMSNorm,
 * rotary position embedding and SwiGLU.  Same semantics and formulas as
 * runtime/cpu/kernels_llama.c: forwards write, backwards accumulate (+=);
 * RMSNorm's row statistics are summed in double as there.  Grouped-query
 * attention is in attention.cu, beside the flash kernels it shares. */
#include "cuda_rt.h"
#include "reduce.cuh"
#include "rope_value.h"

#define GRID_STRIDE(i, n) \
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < (n); i += (long)gridDim.x * blockDim.x)

/* ---- RMSNorm: one block per row ------------------------------------------ */

__global__ static void rmsnorm_fwd_kernel(float *out, float *rstd, const float *inp, const float *w,
                                          int C, float eps) {
    long n = blockIdx.x;
    const float *x = inp + n * C;
    float *y = out + n * C;
    double ms = 0.0;
    for (int i = threadIdx.x; i < C; i += blockDim.x) ms += (double)x[i] * x[i];
    double r = 1.0 / sqrt(wf_block_sum(ms) / C + eps);
    for (int i = threadIdx.x; i < C; i += blockDim.x) y[i] = (float)(x[i] * r) * w[i];
    if (threadIdx.x == 0) rstd[n] = (float)r;
}

/* dx += r * g - x * r^3 * mean(g * x), g = dout * w (kernels_llama.c) */
__global__ static void rmsnorm_dx_kernel(float *dinp, const float *dout, const float *inp,
                                         const float *w, const float *rstd, int C) {
    long n = blockIdx.x;
    const float *x = inp + n * C, *dy = dout + n * C;
    float *dx = dinp + n * C;
    double r = rstd[n], gx = 0.0;
    for (int i = threadIdx.x; i < C; i += blockDim.x) gx += (double)dy[i] * w[i] * x[i];
    double k = r * r * r * wf_block_sum(gx) / C;
    for (int i = threadIdx.x; i < C; i += blockDim.x) dx[i] += (float)(r * dy[i] * w[i] - k * x[i]);
}

/* dw[i] += sum_n dout[n, i] * x[n, i] * rstd[n]: as layernorm.cu's dw, a
 * block of 32 x DW_ROWS threads owns 32 columns, each thread sums every
 * DW_ROWS-th row in order and the block adds the partial sums in a fixed
 * tree (deterministic, no atomics). */
#define DW_ROWS 32

__global__ static void rmsnorm_dw_kernel(float *dw, const float *dout, const float *inp,
                                         const float *rstd, long N, int C) {
    __shared__ float part[DW_ROWS][33];  /* padded: no bank conflicts */
    int i = blockIdx.x * 32 + threadIdx.x;
    float acc = 0.0f;
    if (i < C)
        for (long n = threadIdx.y; n < N; n += DW_ROWS) acc += dout[n * C + i] * inp[n * C + i] * rstd[n];
    part[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    for (int h = DW_ROWS / 2; h > 0; h /= 2) {
        if ((int)threadIdx.y < h) part[threadIdx.y][threadIdx.x] += part[threadIdx.y + h][threadIdx.x];
        __syncthreads();
    }
    if (threadIdx.y == 0 && i < C) dw[i] += part[0][threadIdx.x];
}

extern "C" void wf_rmsnorm_fwd(wf_ctx *c, float *out, float *rstd, const float *inp, const float *w,
                               int N, int C, float eps) {
    WF_LAUNCH(rmsnorm_fwd_kernel, N, WF_THREADS, 0, wf_cuda_stream(c))(out, rstd, inp, w, C, eps);
    wf_cuda_sync(c, "wf_rmsnorm_fwd");
}

extern "C" void wf_rmsnorm_bwd_input(wf_ctx *c, float *dinp, const float *dout, const float *inp,
                                     const float *w, const float *rstd, int N, int C) {
    WF_LAUNCH(rmsnorm_dx_kernel, N, WF_THREADS, 0, wf_cuda_stream(c))(dinp, dout, inp, w, rstd, C);
    wf_cuda_sync(c, "wf_rmsnorm_bwd_input");
}

extern "C" void wf_rmsnorm_bwd_weight(wf_ctx *c, float *dw, const float *dout, const float *inp,
                                      const float *rstd, int N, int C) {
    WF_LAUNCH(rmsnorm_dw_kernel, dim3((unsigned)((C + 31) / 32)), dim3(32, DW_ROWS), 0,
              wf_cuda_stream(c))(dw, dout, inp, rstd, N, C);
    wf_cuda_sync(c, "wf_rmsnorm_bwd_weight");
}

extern "C" void wf_rmsnorm_bwd(wf_ctx *c, float *dinp, float *dw, const float *dout, const float *inp,
                               const float *w, const float *rstd, int N, int C) {
    wf_rmsnorm_bwd_input(c, dinp, dout, inp, w, rstd, N, C);
    wf_rmsnorm_bwd_weight(c, dw, dout, inp, rstd, N, C);
}

/* ---- rotary position embedding ---------------------------------------------
 * One thread per (row n, pair i < hd/2), over every head of the row, t = n % T:
 * rope_value.h's angles and rotation, the CPU's own.  inverse turns by -angle
 * (the backward); accumulate adds. */
__global__ static void rope_kernel(float *out, int ld_out, const float *in, int ld_in, long N, int T,
                                   int heads, int hd, float theta, int inverse, int accumulate) {
    int half = hd / 2;
    GRID_STRIDE(idx, N * half) {
        long n = idx / half;
        int i = (int)(idx % half), t = (int)(n % T);
        float cs, sn;
        wf_rope_angle(t, i, hd, theta, inverse, &cs, &sn);
        wf_rope_pair(out + n * ld_out, in + n * ld_in, heads, hd, i, cs, sn, accumulate);
    }
}

extern "C" void wf_rope_fwd(wf_ctx *c, float *out, int ld_out, const float *in, int ld_in, int N, int T,
                            int heads, int hd, float theta) {
    WF_LAUNCH(rope_kernel, wf_blocks((long)N * (hd / 2)), WF_THREADS, 0, wf_cuda_stream(c))(
        out, ld_out, in, ld_in, N, T, heads, hd, theta, 0, 0);
    wf_cuda_sync(c, "wf_rope_fwd");
}

/* A rotation's transpose is its inverse: din += R(-angle) dout. */
extern "C" void wf_rope_bwd(wf_ctx *c, float *din, int ld_in, const float *dout, int ld_out, int N, int T,
                            int heads, int hd, float theta) {
    WF_LAUNCH(rope_kernel, wf_blocks((long)N * (hd / 2)), WF_THREADS, 0, wf_cuda_stream(c))(
        din, ld_in, dout, ld_out, N, T, heads, hd, theta, 1, 1);
    wf_cuda_sync(c, "wf_rope_bwd");
}

/* ---- SwiGLU: out = silu(gate) * up, elementwise ----------------------------- */

__device__ static inline float sigmoidf(float x) { return 1.0f / (1.0f + expf(-x)); }

__global__ static void swiglu_fwd_kernel(float *out, const float *gate, const float *up, long n) {
    GRID_STRIDE(i, n) out[i] = gate[i] * sigmoidf(gate[i]) * up[i];
}

/* silu'(g) = s (1 + g (1 - s)) with s = sigmoid(g) */
__global__ static void swiglu_bwd_kernel(float *dgate, float *dup, const float *gate, const float *up,
                                         const float *dout, long n) {
    GRID_STRIDE(i, n) {
        float g = gate[i], s = sigmoidf(g);
        dgate[i] += dout[i] * up[i] * s * (1.0f + g * (1.0f - s));
        dup[i] += dout[i] * g * s;
    }
}

extern "C" void wf_swiglu_fwd(wf_ctx *c, float *out, const float *gate, const float *up, long n) {
    WF_LAUNCH(swiglu_fwd_kernel, wf_blocks(n), WF_THREADS, 0, wf_cuda_stream(c))(out, gate, up, n);
    wf_cuda_sync(c, "wf_swiglu_fwd");
}

extern "C" void wf_swiglu_bwd(wf_ctx *c, float *dgate, float *dup, const float *gate, const float *up,
                              const float *dout, long n) {
    WF_LAUNCH(swiglu_bwd_kernel, wf_blocks(n), WF_THREADS, 0, wf_cuda_stream(c))(dgate, dup, gate, up,
                                                                                dout, n);
    wf_cuda_sync(c, "wf_swiglu_bwd");
}
