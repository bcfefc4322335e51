/* layernorm.cu: LayerNorm forward and backward, one block per row (fused:
 * statistics and output in one kernel).  Statistics are summed in double as
 * in runtime/cpu/kernels.c; backward accumulates.  The fused residual +
 * layernorm (wf_residual_layernorm_*) is at the end. */
#include "cuda_rt.h"
#include "reduce.cuh"
#include "precision_bits.h"

#define LN_EPS 1e-5

__global__ static void layernorm_fwd_kernel(float *out, float *mean, float *rstd, const float *inp,
                                            const float *w, const float *b, int C) {
    long n = blockIdx.x;
    const float *x = inp + n * C;
    float *y = out + n * C;
    double s = 0.0;
    for (int i = threadIdx.x; i < C; i += blockDim.x) s += x[i];
    double m = wf_block_sum(s) / C;
    double v = 0.0;
    for (int i = threadIdx.x; i < C; i += blockDim.x) v += (x[i] - m) * (x[i] - m);
    v = wf_block_sum(v) / C; /* biased, as PyTorch */
    double r = 1.0 / sqrt(v + LN_EPS);
    for (int i = threadIdx.x; i < C; i += blockDim.x) y[i] = (float)((x[i] - m) * r) * w[i] + b[i];
    if (threadIdx.x == 0) {
        mean[n] = (float)m;
        rstd[n] = (float)r;
    }
}

/* The block's row means of g = dout * w and of g * xhat (sums in double). */
__device__ static void dx_means(const float *x, const float *d, const float *w, float m, float s,
                                int C, float *g_mean, float *gx_mean) {
    double g = 0.0, gx = 0.0;
    for (int i = threadIdx.x; i < C; i += blockDim.x) {
        float xhat = (x[i] - m) * s, gi = d[i] * w[i];
        g += gi;
        gx += gi * xhat;
    }
    *g_mean = (float)(wf_block_sum(g) / C);
    *gx_mean = (float)(wf_block_sum(gx) / C);
}

/* dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dout * w */
__global__ static void layernorm_dx_kernel(float *dinp, const float *dout, const float *inp,
                                           const float *w, const float *mean, const float *rstd,
                                           int C) {
    long n = blockIdx.x;
    const float *x = inp + n * C, *d = dout + n * C;
    float *dx = dinp + n * C, m = mean[n], s = rstd[n];
    float g_mean, gx_mean;
    dx_means(x, d, w, m, s, C, &g_mean, &gx_mean);
    for (int i = threadIdx.x; i < C; i += blockDim.x) {
        float xhat = (x[i] - m) * s;
        dx[i] += s * (d[i] * w[i] - g_mean - xhat * gx_mean);
    }
}

/* A block of 32 x DW_ROWS threads owns 32 columns: thread (x, y) adds rows
 * y, y + DW_ROWS, ... of column x in order, the block adds the partial sums
 * in a fixed tree (deterministic).  One thread per column walking all N rows
 * kept only C/32 warps busy: milliseconds per layernorm at GPT-2's sizes. */
#define DW_ROWS 32

__global__ static void layernorm_dw_kernel(float *dw, float *db, const float *dout,
                                           const float *inp, const float *mean, const float *rstd,
                                           long N, int C) {
    __shared__ float pw[DW_ROWS][33], pb[DW_ROWS][33];  /* padded: no bank conflicts */
    int i = blockIdx.x * 32 + threadIdx.x;
    float aw = 0.0f, ab = 0.0f;
    if (i < C)
        for (long n = threadIdx.y; n < N; n += DW_ROWS) {
            float d = dout[n * C + i];
            ab += d;
            aw += d * (inp[n * C + i] - mean[n]) * rstd[n];
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
    WF_LAUNCH(layernorm_fwd_kernel, N, WF_THREADS, 0, wf_cuda_stream(c))(out, mean, rstd, inp, w, b, C);
    wf_cuda_sync(c, "wf_layernorm_fwd");
}

extern "C" void wf_layernorm_bwd_input(wf_ctx *c, float *dinp, const float *dout, const float *inp,
                                       const float *w, const float *mean, const float *rstd, int N,
                                       int C) {
    WF_LAUNCH(layernorm_dx_kernel, N, WF_THREADS, 0, wf_cuda_stream(c))(dinp, dout, inp, w, mean, rstd, C);
    wf_cuda_sync(c, "wf_layernorm_bwd_input");
}

extern "C" void wf_layernorm_bwd_weight(wf_ctx *c, float *dw, float *db, const float *dout,
                                        const float *inp, const float *mean, const float *rstd,
                                        int N, int C) {
    WF_LAUNCH(layernorm_dw_kernel, dim3((unsigned)((C + 31) / 32)), dim3(32, DW_ROWS), 0,
              wf_cuda_stream(c))(dw, db, dout, inp, mean, rstd, N, C);
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
__global__ static void residual_layernorm_fwd_kernel(float *res, float *out, float *mean, float *rstd,
                                                     const float *a, const float *b, const float *w,
                                                     const float *bias, int C, int precision) {
    long n = blockIdx.x;
    const float *xa = a + n * C, *xb = b + n * C;
    float *x = res + n * C, *y = out + n * C;
    double s = 0.0;
    for (int i = threadIdx.x; i < C; i += blockDim.x) {
        float v = wf_hd_round(precision, xa[i] + xb[i]);
        x[i] = v;
        s += v;
    }
    double m = wf_block_sum(s) / C;
    double v = 0.0;
    for (int i = threadIdx.x; i < C; i += blockDim.x) v += (x[i] - m) * (x[i] - m);
    v = wf_block_sum(v) / C;
    double r = 1.0 / sqrt(v + LN_EPS);
    for (int i = threadIdx.x; i < C; i += blockDim.x) y[i] = (float)((x[i] - m) * r) * w[i] + bias[i];
    if (threadIdx.x == 0) {
        mean[n] = (float)m;
        rstd[n] = (float)r;
    }
}

/* t = dres + the layernorm's dx (as layernorm_dx_kernel), rounded; da += t, db += t */
__global__ static void residual_layernorm_dx_kernel(float *da, float *db, const float *dres,
                                                    const float *dln, const float *res, const float *w,
                                                    const float *mean, const float *rstd, int C,
                                                    int precision) {
    long n = blockIdx.x;
    const float *x = res + n * C, *d = dln + n * C, *r = dres + n * C;
    float *ga = da + n * C, *gb = db + n * C, m = mean[n], s = rstd[n];
    float g_mean, gx_mean;
    dx_means(x, d, w, m, s, C, &g_mean, &gx_mean);
    for (int i = threadIdx.x; i < C; i += blockDim.x) {
        float xhat = (x[i] - m) * s;
        float t = r[i];
        t += s * (d[i] * w[i] - g_mean - xhat * gx_mean);
        t = wf_hd_round(precision, t);
        ga[i] += t;
        gb[i] += t;
    }
}

extern "C" void wf_residual_layernorm_fwd(wf_ctx *c, float *res_out, float *ln_out, float *mean, float *rstd,
                                          const float *a, const float *b, const float *w, const float *bias,
                                          int N, int C) {
    WF_LAUNCH(residual_layernorm_fwd_kernel, N, WF_THREADS, 0, wf_cuda_stream(c))(
        res_out, ln_out, mean, rstd, a, b, w, bias, C, wf_ctx_precision(c));
    wf_cuda_sync(c, "wf_residual_layernorm_fwd");
}

extern "C" void wf_residual_layernorm_bwd_input(wf_ctx *c, float *da, float *db, const float *dres,
                                                const float *dln, const float *res, const float *w,
                                                const float *mean, const float *rstd, int N, int C) {
    WF_LAUNCH(residual_layernorm_dx_kernel, N, WF_THREADS, 0, wf_cuda_stream(c))(
        da, db, dres, dln, res, w, mean, rstd, C, wf_ctx_precision(c));
    wf_cuda_sync(c, "wf_residual_layernorm_bwd_input");
}

extern "C" void wf_residual_layernorm_bwd(wf_ctx *c, float *da, float *db, float *dw, float *dbias,
                                          const float *dres, const float *dln, const float *res,
                                          const float *w, const float *mean, const float *rstd, int N,
                                          int C) {
    wf_residual_layernorm_bwd_input(c, da, db, dres, dln, res, w, mean, rstd, N, C);
    wf_layernorm_bwd_weight(c, dw, dbias, dln, res, mean, rstd, N, C);
}
