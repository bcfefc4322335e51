/* llama.cu: the LLaMA family's kernels on the GPU (weft/rt.h): RMSNorm,
 * rotary position embedding and SwiGLU.  Same semantics and formulas as
 * runtime/cpu/llama.c: forwards write, backwards accumulate (+=);
 * RMSNorm's row statistics are summed in double as there.  Grouped-query
 * attention is in attention.cu, beside the flash kernels it shares.
 * Activations and their gradients are in c's storage (storage.cuh: each
 * kernel is a template on it); rstd, weights and their gradients are floats.
 * RMSNorm's row kernels, RoPE and SwiGLU are templates on an access A instead
 * (storage_vec.cuh): 16-byte loads and stores where the wrappers find the
 * activation pointers aligned and the row width (or count) a multiple of
 * the vector width, single elements otherwise; the same per-element
 * arithmetic either way (the row sums add the same terms over another split
 * of the row between the threads). */
#include "colsum.cuh"
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

/* dx += r * g - x * r^3 * mean(g * x), g = dout * w (runtime/cpu/llama.c) */
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

/* dw[i] += sum_n dout[n, i] * x[n, i] * rstd[n]: the term, which colsum.cuh
 * sums over the rows (deterministic, no atomics) */
template <class A> struct rmsnorm_dw_terms {
    enum { sums = 1 };
    const typename A::raw *dout, *inp;
    const float *rstd;
    __device__ void add(long n, long at, float (*acc)[A::width]) const {
        float d[A::width], x[A::width], r = rstd[n];
        A::load(dout, at, d);
        A::load(inp, at, x);
#pragma unroll
        for (int e = 0; e < A::width; e++) acc[0][e] += d[e] * x[e] * r;
    }
};

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
    wf_colsum_out out = { { dw, NULL } };
    WF_BY_STORAGE(c, S, WF_BY_WIDTH(S, A, wf_vec_ok<S>(C, dout, inp),
                                    wf_colsum<A>(c, rmsnorm_dw_terms<A>{ wf_act<S>(dout), wf_act<S>(inp), rstd },
                                                 out, N, C)));
    wf_cuda_sync(c, "wf_rmsnorm_bwd_weight");
}

extern "C" void wf_rmsnorm_bwd(wf_ctx *c, float *dinp, float *dw, const float *dout, const float *inp,
                               const float *w, const float *rstd, int N, int C) {
    wf_rmsnorm_bwd_input(c, dinp, dout, inp, w, rstd, N, C);
    wf_rmsnorm_bwd_weight(c, dw, dout, inp, rstd, N, C);
}

/* ---- rotary position embedding ---------------------------------------------
 * One thread per (row n, chunk of A::width pairs i < hd/2), over every head of
 * the row, t = n % T: rope_value.h's angles and rotation, the CPU's own,
 * through a two-element copy of each pair.  inverse turns by -angle (the
 * backward); accumulate adds.  A pair's two elements are half a head apart,
 * so a chunk is two accesses of A::width elements: 16 bytes each where
 * half the head size and the row strides are multiples of the vector width
 * and the rows aligned (rope_vec_ok). */

template <class A>
__global__ static void rope_kernel(typename A::raw *out, int ld_out, const typename A::raw *in, int ld_in, long N,
                                   int T, int heads, int hd, float theta, int inverse, int accumulate) {
    enum { W = A::width };
    int half = hd / 2, chunks = half / W;
    GRID_STRIDE(idx, N * chunks) {
        long n = idx / chunks;
        int i0 = (int)(idx % chunks) * W, t = (int)(n % T);
        float cs[W], sn[W];
#pragma unroll
        for (int e = 0; e < W; e++) wf_rope_angle(t, i0 + e, hd, theta, inverse, &cs[e], &sn[e]);
        typename A::raw *y = out + n * ld_out;
        const typename A::raw *x = in + n * ld_in;
        for (int h = 0; h < heads; h++) {
            long a = (long)h * hd + i0, b = a + half;
            float xa[W], xb[W], ya[W], yb[W];
            A::load(x, a, xa);
            A::load(x, b, xb);
            if (accumulate) {
                A::load(y, a, ya);
                A::load(y, b, yb);
            }
#pragma unroll
            for (int e = 0; e < W; e++) {
                float xp[2] = { xa[e], xb[e] }, yp[2] = { 0.0f, 0.0f };
                if (accumulate) {
                    yp[0] = ya[e];
                    yp[1] = yb[e];
                }
                wf_rope_pair(yp, xp, 1, 2, 0, cs[e], sn[e], accumulate);
                ya[e] = yp[0];
                yb[e] = yp[1];
            }
            A::store(y, a, ya);
            A::store(y, b, yb);
        }
    }
}

/* the vector path: every chunk's two accesses 16-byte aligned in every row */
template <class S>
static bool rope_vec_ok(int hd, int ld_out, int ld_in, const float *out, const float *in) {
    int w = wf_vec<S>::width;
    return wf_vec_ok<S>(hd / 2, out, in) && ld_out % w == 0 && ld_in % w == 0;
}

template <class A>
static void rope_launch(wf_ctx *c, float *out, int ld_out, const float *in, int ld_in, int N, int T, int heads,
                        int hd, float theta, int inverse, int accumulate) {
    typedef typename A::storage S;
    WF_LAUNCH(rope_kernel<A>, wf_blocks((long)N * (hd / 2) / A::width), WF_THREADS, 0, wf_cuda_stream(c))(
        wf_act<S>(out), ld_out, wf_act<S>(in), ld_in, N, T, heads, hd, theta, inverse, accumulate);
}

extern "C" void wf_rope_fwd(wf_ctx *c, float *out, int ld_out, const float *in, int ld_in, int N, int T,
                            int heads, int hd, float theta) {
    WF_BY_STORAGE(c, S, WF_BY_WIDTH(S, A, rope_vec_ok<S>(hd, ld_out, ld_in, out, in),
                                    rope_launch<A>(c, out, ld_out, in, ld_in, N, T, heads, hd, theta, 0, 0)));
    wf_cuda_sync(c, "wf_rope_fwd");
}

/* A rotation's transpose is its inverse: din += R(-angle) dout. */
extern "C" void wf_rope_bwd(wf_ctx *c, float *din, int ld_in, const float *dout, int ld_out, int N, int T,
                            int heads, int hd, float theta) {
    WF_BY_STORAGE(c, S, WF_BY_WIDTH(S, A, rope_vec_ok<S>(hd, ld_in, ld_out, din, dout),
                                    rope_launch<A>(c, din, ld_in, dout, ld_out, N, T, heads, hd, theta, 1, 1)));
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
