/* llama.cu: the LLaMA family's kernels on the GPU (weft/rt.h): RMSNorm,
 * rotary position embedding and SwiGLU.  Same semantics and formulas as
 * runtime/cpu/kernels_llama.c: forwards write, backwards accumulate (+=);
 * RMSNorm's row statistics are summed in double as there.  Grouped-query
 * attention is in attention.cu, beside the flash kernels it shares.
 * Activations and their gradients are in c's storage (storage.cuh: each
 * kernel is a template on it); rstd, weights and their gradients are floats.
 * RMSNorm's row kernels and SwiGLU are templates on an access A instead
 * (storage_vec.cuh): 16-byte loads and stores where the wrappers find the
 * activation pointers aligned and the row width (or count) a multiple of
 * the vector width, single elements otherwise; the same per-element
 * arithmetic either way (the row sums add the same terms over another split
 * of the row between the threads). */
#include "cuda_rt.h"
#include "reduce.cuh"
#include "rope_value.h"
#include "storage.cuh"
#include "storage_vec.cuh"

#define GRID_STRIDE(i, n) \
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < (n); i += (long)gridDim.x * blockDim.x)

/* ---- RMSNorm: one block per row ------------------------------------------ */

template <class A>
__global__ static void rmsnorm_fwd_kernel(typename A::raw *out, float *rstd, const typename A::raw *inp,
                                          const float *w, int C, float eps) {
    enum { W = A::width };
    long n = blockIdx.x;
    const typename A::raw *x = inp + n * C;
    typename A::raw *y = out + n * C;
    float xv[W], yv[W];
    double ms = 0.0;
    WF_ROW_CHUNKS(i, C, W) {
        A::load(x, i, xv);
#pragma unroll
        for (int e = 0; e < W; e++) ms += (double)xv[e] * xv[e];
    }
    double r = 1.0 / sqrt(wf_block_sum(ms) / C + eps);
    WF_ROW_CHUNKS(i, C, W) {
        A::load(x, i, xv);
#pragma unroll
        for (int e = 0; e < W; e++) yv[e] = (float)(xv[e] * r) * w[i + e];
        A::store(y, i, yv);
    }
    if (threadIdx.x == 0) rstd[n] = (float)r;
}

/* dx += r * g - x * r^3 * mean(g * x), g = dout * w (kernels_llama.c) */
template <class A>
__global__ static void rmsnorm_dx_kernel(typename A::raw *dinp, const typename A::raw *dout,
                                         const typename A::raw *inp, const float *w, const float *rstd, int C) {
    enum { W = A::width };
    long n = blockIdx.x;
    const typename A::raw *x = inp + n * C, *dy = dout + n * C;
    typename A::raw *dx = dinp + n * C;
    float xv[W], dv[W], gv[W];
    double r = rstd[n], gx = 0.0;
    WF_ROW_CHUNKS(i, C, W) {
        A::load(dy, i, dv);
        A::load(x, i, xv);
#pragma unroll
        for (int e = 0; e < W; e++) gx += (double)dv[e] * w[i + e] * xv[e];
    }
    double k = r * r * r * wf_block_sum(gx) / C;
    WF_ROW_CHUNKS(i, C, W) {
        A::load(dy, i, dv);
        A::load(x, i, xv);
        A::load(dx, i, gv);
#pragma unroll
        for (int e = 0; e < W; e++) gv[e] = gv[e] + (float)(r * dv[e] * w[i + e] - k * xv[e]);
        A::store(dx, i, gv);
    }
}

/* dw[i] += sum_n dout[n, i] * x[n, i] * rstd[n]: as layernorm.cu's dw, a
 * block of 32 x DW_ROWS threads owns 32 columns, each thread sums every
 * DW_ROWS-th row in order and the block adds the partial sums in a fixed
 * tree (deterministic, no atomics). */
#define DW_ROWS 32

template <class S>
__global__ static void rmsnorm_dw_kernel(float *dw, const typename S::raw *dout, const typename S::raw *inp,
                                         const float *rstd, long N, int C) {
    __shared__ float part[DW_ROWS][33];  /* padded: no bank conflicts */
    int i = blockIdx.x * 32 + threadIdx.x;
    float acc = 0.0f;
    if (i < C)
        for (long n = threadIdx.y; n < N; n += DW_ROWS)
            acc += S::load(dout, n * C + i) * S::load(inp, n * C + i) * rstd[n];
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
    WF_BY_STORAGE(c, S, WF_BY_WIDTH(S, A, wf_vec_ok<S>(C, out, inp),
                                    WF_LAUNCH(rmsnorm_fwd_kernel<A>, N, wf_row_threads(C, A::width), 0,
                                              wf_cuda_stream(c))(wf_act<S>(out), rstd, wf_act<S>(inp), w, C, eps)));
    wf_cuda_sync(c, "wf_rmsnorm_fwd");
}

extern "C" void wf_rmsnorm_bwd_input(wf_ctx *c, float *dinp, const float *dout, const float *inp,
                                     const float *w, const float *rstd, int N, int C) {
    WF_BY_STORAGE(c, S, WF_BY_WIDTH(S, A, wf_vec_ok<S>(C, dinp, dout, inp),
                                    WF_LAUNCH(rmsnorm_dx_kernel<A>, N, wf_row_threads(C, A::width), 0,
                                              wf_cuda_stream(c))(wf_act<S>(dinp), wf_act<S>(dout), wf_act<S>(inp), w,
                                                                 rstd, C)));
    wf_cuda_sync(c, "wf_rmsnorm_bwd_input");
}

extern "C" void wf_rmsnorm_bwd_weight(wf_ctx *c, float *dw, const float *dout, const float *inp,
                                      const float *rstd, int N, int C) {
    WF_BY_STORAGE(c, S, WF_LAUNCH(rmsnorm_dw_kernel<S>, dim3((unsigned)((C + 31) / 32)), dim3(32, DW_ROWS), 0,
                                  wf_cuda_stream(c))(dw, wf_act<S>(dout), wf_act<S>(inp), rstd, N, C));
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

/* rope_value.h's pair i of every head of one row: on the floats in place,
 * or in 16 bits through a two-element copy of each head's pair (the same
 * arithmetic), stored rounded. */
template <class S>
__device__ static void rope_pair_stored(typename S::raw *y, const typename S::raw *x, int heads, int hd, int i,
                                        float cs, float sn, int accumulate) {
    if (S::bits == 32) {
        wf_rope_pair((float *)y, (const float *)x, heads, hd, i, cs, sn, accumulate);
        return;
    }
    int half = hd / 2;
    for (int h = 0; h < heads; h++) {
        float xp[2] = { S::load(x, h * hd + i), S::load(x, h * hd + i + half) };
        float yp[2] = { 0.0f, 0.0f };
        if (accumulate) {
            yp[0] = S::load(y, h * hd + i);
            yp[1] = S::load(y, h * hd + i + half);
        }
        wf_rope_pair(yp, xp, 1, 2, 0, cs, sn, accumulate);
        S::store(y, h * hd + i, yp[0]);
        S::store(y, h * hd + i + half, yp[1]);
    }
}

template <class S>
__global__ static void rope_kernel(typename S::raw *out, int ld_out, const typename S::raw *in, int ld_in, long N,
                                   int T, int heads, int hd, float theta, int inverse, int accumulate) {
    int half = hd / 2;
    GRID_STRIDE(idx, N * half) {
        long n = idx / half;
        int i = (int)(idx % half), t = (int)(n % T);
        float cs, sn;
        wf_rope_angle(t, i, hd, theta, inverse, &cs, &sn);
        rope_pair_stored<S>(out + n * ld_out, in + n * ld_in, heads, hd, i, cs, sn, accumulate);
    }
}

extern "C" void wf_rope_fwd(wf_ctx *c, float *out, int ld_out, const float *in, int ld_in, int N, int T,
                            int heads, int hd, float theta) {
    WF_BY_STORAGE(c, S, WF_LAUNCH(rope_kernel<S>, wf_blocks((long)N * (hd / 2)), WF_THREADS, 0, wf_cuda_stream(c))(
                            wf_act<S>(out), ld_out, wf_act<S>(in), ld_in, N, T, heads, hd, theta, 0, 0));
    wf_cuda_sync(c, "wf_rope_fwd");
}

/* A rotation's transpose is its inverse: din += R(-angle) dout. */
extern "C" void wf_rope_bwd(wf_ctx *c, float *din, int ld_in, const float *dout, int ld_out, int N, int T,
                            int heads, int hd, float theta) {
    WF_BY_STORAGE(c, S, WF_LAUNCH(rope_kernel<S>, wf_blocks((long)N * (hd / 2)), WF_THREADS, 0, wf_cuda_stream(c))(
                            wf_act<S>(din), ld_in, wf_act<S>(dout), ld_out, N, T, heads, hd, theta, 1, 1));
    wf_cuda_sync(c, "wf_rope_bwd");
}

/* ---- SwiGLU: out = silu(gate) * up, elementwise ----------------------------- */

__device__ static inline float sigmoidf(float x) { return 1.0f / (1.0f + expf(-x)); }

template <class A>
__global__ static void swiglu_fwd_kernel(typename A::raw *out, const typename A::raw *gate,
                                         const typename A::raw *up, long n) {
    WF_GRID_CHUNKS(i, n, A::width) {
        float g[A::width], u[A::width];
        A::load(gate, i, g);
        A::load(up, i, u);
#pragma unroll
        for (int e = 0; e < A::width; e++) u[e] = g[e] * sigmoidf(g[e]) * u[e];
        A::store(out, i, u);
    }
}

/* silu'(g) = s (1 + g (1 - s)) with s = sigmoid(g) */
template <class A>
__global__ static void swiglu_bwd_kernel(typename A::raw *dgate, typename A::raw *dup, const typename A::raw *gate,
                                         const typename A::raw *up, const typename A::raw *dout, long n) {
    WF_GRID_CHUNKS(i, n, A::width) {
        float g[A::width], u[A::width], d[A::width], dg[A::width];
        A::load(gate, i, g);
        A::load(up, i, u);
        A::load(dout, i, d);
        A::load(dgate, i, dg);
#pragma unroll
        for (int e = 0; e < A::width; e++) {
            float s = sigmoidf(g[e]);
            dg[e] = dg[e] + d[e] * u[e] * s * (1.0f + g[e] * (1.0f - s));
        }
        A::store(dgate, i, dg);
        A::load(dup, i, u);
#pragma unroll
        for (int e = 0; e < A::width; e++) u[e] = u[e] + d[e] * g[e] * sigmoidf(g[e]);
        A::store(dup, i, u);
    }
}

extern "C" void wf_swiglu_fwd(wf_ctx *c, float *out, const float *gate, const float *up, long n) {
    WF_BY_STORAGE(c, S, WF_BY_WIDTH(S, A, wf_vec_ok<S>(n, out, gate, up),
                                    WF_LAUNCH(swiglu_fwd_kernel<A>, wf_blocks(n / A::width), WF_THREADS, 0,
                                              wf_cuda_stream(c))(wf_act<S>(out), wf_act<S>(gate), wf_act<S>(up), n)));
    wf_cuda_sync(c, "wf_swiglu_fwd");
}

extern "C" void wf_swiglu_bwd(wf_ctx *c, float *dgate, float *dup, const float *gate, const float *up,
                              const float *dout, long n) {
    WF_BY_STORAGE(c, S, WF_BY_WIDTH(S, A, wf_vec_ok<S>(n, dgate, dup, gate, up, dout),
                                    WF_LAUNCH(swiglu_bwd_kernel<A>, wf_blocks(n / A::width), WF_THREADS, 0,
                                              wf_cuda_stream(c))(wf_act<S>(dgate), wf_act<S>(dup), wf_act<S>(gate),
                                                                 wf_act<S>(up), wf_act<S>(dout), n)));
    wf_cuda_sync(c, "wf_swiglu_bwd");
}
