/* layernorm.cu: LayerNorm forward and backward, one block per row (fused:
 * statistics and output in one kernel).  Statistics are summed in double as
 * in runtime/cpu/kernels.c; backward accumulates.  The fused residual +
 * layernorm (wf_residual_layernorm_*) is at the end.  Activations and their
 * gradients are in c's storage (storage.cuh: a template argument S of each
 * kernel); mean, rstd, weights and their gradients are floats. */
#include "cuda_rt.h"
#include "reduce.cuh"
#include "precision_bits.h"
#include "storage.cuh"

#define LN_EPS 1e-5

template <class S>
__global__ static void layernorm_fwd_kernel(typename S::raw *out, float *mean, float *rstd,
                                            const typename S::raw *inp, const float *w, const float *b, int C) {
    long n = blockIdx.x;
    const typename S::raw *x = inp + n * C;
    typename S::raw *y = out + n * C;
    double s = 0.0;
    for (int i = threadIdx.x; i < C; i += blockDim.x) s += S::load(x, i);
    double m = wf_block_sum(s) / C;
    double v = 0.0;
    for (int i = threadIdx.x; i < C; i += blockDim.x) v += (S::load(x, i) - m) * (S::load(x, i) - m);
    v = wf_block_sum(v) / C; /* biased, as PyTorch */
    double r = 1.0 / sqrt(v + LN_EPS);
    for (int i = threadIdx.x; i < C; i += blockDim.x)
        S::store(y, i, (float)((S::load(x, i) - m) * r) * w[i] + b[i]);
    if (threadIdx.x == 0) {
        mean[n] = (float)m;
        rstd[n] = (float)r;
    }
}

/* The block's row means of g = dout * w and of g * xhat (sums in double). */
template <class S>
__device__ static void dx_means(const typename S::raw *x, const typename S::raw *d, const float *w, float m,
                                float s, int C, float *g_mean, float *gx_mean) {
    double g = 0.0, gx = 0.0;
    for (int i = threadIdx.x; i < C; i += blockDim.x) {
        float xhat = (S::load(x, i) - m) * s, gi = S::load(d, i) * w[i];
        g += gi;
        gx += gi * xhat;
    }
    *g_mean = (float)(wf_block_sum(g) / C);
    *gx_mean = (float)(wf_block_sum(gx) / C);
}

/* dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dout * w */
template <class S>
__global__ static void layernorm_dx_kernel(typename S::raw *dinp, const typename S::raw *dout,
                                           const typename S::raw *inp, const float *w, const float *mean,
                                           const float *rstd, int C) {
    long n = blockIdx.x;
    const typename S::raw *x = inp + n * C, *d = dout + n * C;
    typename S::raw *dx = dinp + n * C;
    float m = mean[n], s = rstd[n];
    float g_mean, gx_mean;
    dx_means<S>(x, d, w, m, s, C, &g_mean, &gx_mean);
    for (int i = threadIdx.x; i < C; i += blockDim.x) {
        float xhat = (S::load(x, i) - m) * s;
        S::store(dx, i, S::load(dx, i) + s * (S::load(d, i) * w[i] - g_mean - xhat * gx_mean));
    }
}

/* A block of 32 x DW_ROWS threads owns 32 columns: thread (x, y) adds rows
 * y, y + DW_ROWS, ... of column x in order, the block adds the partial sums
 * in a fixed tree (deterministic).  One thread per column walking all N rows
 * kept only C/32 warps busy: milliseconds per layernorm at GPT-2's sizes. */
#define DW_ROWS 32

template <class S>
__global__ static void layernorm_dw_kernel(float *dw, float *db, const typename S::raw *dout,
                                           const typename S::raw *inp, const float *mean, const float *rstd,
                                           long N, int C) {
    __shared__ float pw[DW_ROWS][33], pb[DW_ROWS][33];  /* padded: no bank conflicts */
    int i = blockIdx.x * 32 + threadIdx.x;
    float aw = 0.0f, ab = 0.0f;
    if (i < C)
        for (long n = threadIdx.y; n < N; n += DW_ROWS) {
            float d = S::load(dout, n * C + i);
            ab += d;
            aw += d * (S::load(inp, n * C + i) - mean[n]) * rstd[n];
        }
    pw[threadIdx.y][threadIdx.x] = aw;
    pb[threadIdx.y][threadIdx.x] = ab;
    __syncthreads();
    for (int h = DW_ROWS / 2; h > 0; h /= 2) {
        if ((int)threadIdx.y < h) {
            pw[threadIdx.y][threadIdx.x] += pw[threadIdx.y + h][threadIdx.x];
            pb[threadIdx.y][threadIdx.x] += pb[threadIdx.y + h][threadIdx.x];
        }
        __syncthreads();
    }
    if (threadIdx.y == 0 && i < C) {
        dw[i] += pw[0][threadIdx.x];
        db[i] += pb[0][threadIdx.x];
    }
}

extern "C" void wf_layernorm_fwd(wf_ctx *c, float *out, float *mean, float *rstd, const float *inp,
                                 const float *w, const float *b, int N, int C) {
    WF_BY_STORAGE(c, S, WF_LAUNCH(layernorm_fwd_kernel<S>, N, WF_THREADS, 0, wf_cuda_stream(c))(
                            wf_act<S>(out), mean, rstd, wf_act<S>(inp), w, b, C));
    wf_cuda_sync(c, "wf_layernorm_fwd");
}

extern "C" void wf_layernorm_bwd_input(wf_ctx *c, float *dinp, const float *dout, const float *inp,
                                       const float *w, const float *mean, const float *rstd, int N,
                                       int C) {
    WF_BY_STORAGE(c, S, WF_LAUNCH(layernorm_dx_kernel<S>, N, WF_THREADS, 0, wf_cuda_stream(c))(
                            wf_act<S>(dinp), wf_act<S>(dout), wf_act<S>(inp), w, mean, rstd, C));
    wf_cuda_sync(c, "wf_layernorm_bwd_input");
}

extern "C" void wf_layernorm_bwd_weight(wf_ctx *c, float *dw, float *db, const float *dout,
                                        const float *inp, const float *mean, const float *rstd,
                                        int N, int C) {
    WF_BY_STORAGE(c, S, WF_LAUNCH(layernorm_dw_kernel<S>, dim3((unsigned)((C + 31) / 32)), dim3(32, DW_ROWS), 0,
                                  wf_cuda_stream(c))(dw, db, wf_act<S>(dout), wf_act<S>(inp), mean, rstd, N, C));
    wf_cuda_sync(c, "wf_layernorm_bwd_weight");
}

extern "C" void wf_layernorm_bwd(wf_ctx *c, float *dinp, float *dw, float *db, const float *dout,
                                 const float *inp, const float *w, const float *mean,
                                 const float *rstd, int N, int C) {
    wf_layernorm_bwd_input(c, dinp, dout, inp, w, mean, rstd, N, C);
    wf_layernorm_bwd_weight(c, dw, db, dout, inp, mean, rstd, N, C);
}

/* ---- fused residual add + layernorm (rt.h; the compiler's fuse.c) -------
 * One block per row, as layernorm_fwd_kernel: each thread forms, rounds and
 * stores its own elements of the residual row and keeps reading them back
 * from that store (no other thread touches them, so no barrier is needed
 * beyond the reductions'), so the stream is written once and read from
 * cache.  The arithmetic is the unfused kernels', so fusing changes no bit. */
template <class S>
__global__ static void residual_layernorm_fwd_kernel(typename S::raw *res, typename S::raw *out, float *mean,
                                                     float *rstd, const typename S::raw *a,
                                                     const typename S::raw *b, const float *w,
                                                     const float *bias, int C, int precision) {
    long n = blockIdx.x;
    const typename S::raw *xa = a + n * C, *xb = b + n * C;
    typename S::raw *x = res + n * C, *y = out + n * C;
    double s = 0.0;
    for (int i = threadIdx.x; i < C; i += blockDim.x) {
        float v = wf_hd_round(precision, S::load(xa, i) + S::load(xb, i));
        S::store(x, i, v);
        s += v;
    }
    double m = wf_block_sum(s) / C;
    double v = 0.0;
    for (int i = threadIdx.x; i < C; i += blockDim.x) v += (S::load(x, i) - m) * (S::load(x, i) - m);
    v = wf_block_sum(v) / C;
    double r = 1.0 / sqrt(v + LN_EPS);
    for (int i = threadIdx.x; i < C; i += blockDim.x)
        S::store(y, i, (float)((S::load(x, i) - m) * r) * w[i] + bias[i]);
    if (threadIdx.x == 0) {
        mean[n] = (float)m;
        rstd[n] = (float)r;
    }
}

/* t = dres + the layernorm's dx (as layernorm_dx_kernel), rounded; da += t, db += t */
template <class S>
__global__ static void residual_layernorm_dx_kernel(typename S::raw *da, typename S::raw *db,
                                                    const typename S::raw *dres, const typename S::raw *dln,
                                                    const typename S::raw *res, const float *w,
                                                    const float *mean, const float *rstd, int C,
                                                    int precision) {
    long n = blockIdx.x;
    const typename S::raw *x = res + n * C, *d = dln + n * C, *r = dres + n * C;
    typename S::raw *ga = da + n * C, *gb = db + n * C;
    float m = mean[n], s = rstd[n];
    float g_mean, gx_mean;
    dx_means<S>(x, d, w, m, s, C, &g_mean, &gx_mean);
    for (int i = threadIdx.x; i < C; i += blockDim.x) {
        float xhat = (S::load(x, i) - m) * s;
        float t = S::load(r, i);
        t += s * (S::load(d, i) * w[i] - g_mean - xhat * gx_mean);
        t = wf_hd_round(precision, t);
        S::store(ga, i, S::load(ga, i) + t);
        S::store(gb, i, S::load(gb, i) + t);
    }
}

extern "C" void wf_residual_layernorm_fwd(wf_ctx *c, float *res_out, float *ln_out, float *mean, float *rstd,
                                          const float *a, const float *b, const float *w, const float *bias,
                                          int N, int C) {
    WF_BY_STORAGE(c, S, WF_LAUNCH(residual_layernorm_fwd_kernel<S>, N, WF_THREADS, 0, wf_cuda_stream(c))(
                            wf_act<S>(res_out), wf_act<S>(ln_out), mean, rstd, wf_act<S>(a), wf_act<S>(b), w,
                            bias, C, wf_ctx_precision(c)));
    wf_cuda_sync(c, "wf_residual_layernorm_fwd");
}

extern "C" void wf_residual_layernorm_bwd_input(wf_ctx *c, float *da, float *db, const float *dres,
                                                const float *dln, const float *res, const float *w,
                                                const float *mean, const float *rstd, int N, int C) {
    WF_BY_STORAGE(c, S, WF_LAUNCH(residual_layernorm_dx_kernel<S>, N, WF_THREADS, 0, wf_cuda_stream(c))(
                            wf_act<S>(da), wf_act<S>(db), wf_act<S>(dres), wf_act<S>(dln), wf_act<S>(res), w,
                            mean, rstd, C, wf_ctx_precision(c)));
    wf_cuda_sync(c, "wf_residual_layernorm_bwd_input");
}

extern "C" void wf_residual_layernorm_bwd(wf_ctx *c, float *da, float *db, float *dw, float *dbias,
                                          const float *dres, const float *dln, const float *res,
                                          const float *w, const float *mean, const float *rstd, int N,
                                          int C) {
    wf_residual_layernorm_bwd_input(c, da, db, dres, dln, res, w, mean, rstd, N, C);
    wf_layernorm_bwd_weight(c, dw, dbias, dln, res, mean, rstd, N, C);
}
