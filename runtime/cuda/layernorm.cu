/* layernorm.cu: LayerNorm forward and backward, one block per row (fused:
 * statistics and output in one kernel).  Statistics are summed in double as
 * in runtime/cpu/layernorm.c; backward accumulates.  The fused residual +
 * layernorm (wf_residual_layernorm_*) is at the end.  Activations and their
 * gradients are in c's storage (storage.cuh: a template argument S of each
 * kernel); mean, rstd, weights and their gradients are floats.
 *
 * The row kernels (forward, dx, and their residual versions) are templates
 * on an access A (storage_vec.cuh): each thread takes chunks of A::width
 * consecutive elements of the row, 16 bytes per load and store where the
 * wrappers find C a multiple of the vector width and the activation pointers
 * 16-byte aligned, single elements otherwise.  The per-element arithmetic is
 * the same on both paths; the double row sums add the same terms with
 * another split over the threads (they never followed the CPU's order). */
#include "colsum.cuh"
#include "cuda_rt.h"
#include "reduce.cuh"
#include "precision_bits.h"
#include "storage.cuh"
#include "storage_vec.cuh"

#define LN_EPS 1e-5

/* the row's sum and sum of squared deviations (in double) to mean and rstd */
template <class A>
__device__ static void row_stats(const typename A::raw *x, int C, double *m_out, double *r_out) {
    enum { W = A::width };
    float xv[W];
    double s = 0.0;
    WF_ROW_CHUNKS(i, C, W) {
        A::load(x, i, xv);
#pragma unroll
        for (int e = 0; e < W; e++) s += xv[e];
    }
    double m = wf_block_sum(s) / C;
    double v = 0.0;
    WF_ROW_CHUNKS(i, C, W) {
        A::load(x, i, xv);
#pragma unroll
        for (int e = 0; e < W; e++) v += (xv[e] - m) * (xv[e] - m);
    }
    v = wf_block_sum(v) / C; /* biased, as PyTorch */
    *m_out = m;
    *r_out = 1.0 / sqrt(v + LN_EPS);
}

/* y = xhat * w + b for the row x (mean m, rstd r) */
template <class A>
__device__ static void row_normalize(typename A::raw *y, const typename A::raw *x, const float *w, const float *b,
                                     double m, double r, int C) {
    enum { W = A::width };
    WF_ROW_CHUNKS(i, C, W) {
        float xv[W], yv[W];
        A::load(x, i, xv);
#pragma unroll
        for (int e = 0; e < W; e++) yv[e] = (float)((xv[e] - m) * r) * w[i + e] + b[i + e];
        A::store(y, i, yv);
    }
}

template <class A>
__global__ static void layernorm_fwd_kernel(typename A::raw *out, float *mean, float *rstd,
                                            const typename A::raw *inp, const float *w, const float *b, int C) {
    long n = blockIdx.x;
    const typename A::raw *x = inp + n * C;
    typename A::raw *y = out + n * C;
    double m, r;
    row_stats<A>(x, C, &m, &r);
    row_normalize<A>(y, x, w, b, m, r, C);
    if (threadIdx.x == 0) {
        mean[n] = (float)m;
        rstd[n] = (float)r;
    }
}

/* The block's row means of g = dout * w and of g * xhat (sums in double). */
template <class A>
__device__ static void dx_means(const typename A::raw *x, const typename A::raw *d, const float *w, float m,
                                float s, int C, float *g_mean, float *gx_mean) {
    enum { W = A::width };
    double g = 0.0, gx = 0.0;
    WF_ROW_CHUNKS(i, C, W) {
        float xv[W], dv[W];
        A::load(x, i, xv);
        A::load(d, i, dv);
#pragma unroll
        for (int e = 0; e < W; e++) {
            float xhat = (xv[e] - m) * s, gi = dv[e] * w[i + e];
            g += gi;
            gx += gi * xhat;
        }
    }
    *g_mean = (float)(wf_block_sum(g) / C);
    *gx_mean = (float)(wf_block_sum(gx) / C);
}

/* dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dout * w */
template <class A>
__global__ static void layernorm_dx_kernel(typename A::raw *dinp, const typename A::raw *dout,
                                           const typename A::raw *inp, const float *w, const float *mean,
                                           const float *rstd, int C) {
    enum { W = A::width };
    long n = blockIdx.x;
    const typename A::raw *x = inp + n * C, *d = dout + n * C;
    typename A::raw *dx = dinp + n * C;
    float m = mean[n], s = rstd[n];
    float g_mean, gx_mean;
    dx_means<A>(x, d, w, m, s, C, &g_mean, &gx_mean);
    WF_ROW_CHUNKS(i, C, W) {
        float xv[W], dv[W], gv[W];
        A::load(x, i, xv);
        A::load(d, i, dv);
        A::load(dx, i, gv);
#pragma unroll
        for (int e = 0; e < W; e++) {
            float xhat = (xv[e] - m) * s;
            gv[e] = gv[e] + s * (dv[e] * w[i + e] - g_mean - xhat * gx_mean);
        }
        A::store(dx, i, gv);
    }
}

/* dw and db's terms, colsum.cuh sums them over the rows: dout * xhat and dout */
template <class A> struct layernorm_dw_terms {
    enum { sums = 2 };
    const typename A::raw *dout, *inp;
    const float *mean, *rstd;
    __device__ void add(long n, long at, float (*acc)[A::width]) const {
        float d[A::width], x[A::width], m = mean[n], r = rstd[n];
        A::load(dout, at, d);
        A::load(inp, at, x);
#pragma unroll
        for (int e = 0; e < A::width; e++) {
            acc[0][e] += d[e] * (x[e] - m) * r;
            acc[1][e] += d[e];
        }
    }
};

extern "C" void wf_layernorm_fwd(wf_ctx *c, float *out, float *mean, float *rstd, const float *inp,
                                 const float *w, const float *b, int N, int C) {
    WF_BY_STORAGE(c, S, WF_BY_WIDTH(S, A, wf_vec_ok<S>(C, out, inp),
                                    WF_LAUNCH(layernorm_fwd_kernel<A>, N, wf_row_threads(C, A::width), 0,
                                              wf_cuda_stream(c))(wf_act<S>(out), mean, rstd, wf_act<S>(inp), w, b,
                                                                 C)));
    wf_cuda_sync(c, "wf_layernorm_fwd");
}

extern "C" void wf_layernorm_bwd_input(wf_ctx *c, float *dinp, const float *dout, const float *inp,
                                       const float *w, const float *mean, const float *rstd, int N,
                                       int C) {
    WF_BY_STORAGE(c, S, WF_BY_WIDTH(S, A, wf_vec_ok<S>(C, dinp, dout, inp),
                                    WF_LAUNCH(layernorm_dx_kernel<A>, N, wf_row_threads(C, A::width), 0,
                                              wf_cuda_stream(c))(wf_act<S>(dinp), wf_act<S>(dout), wf_act<S>(inp), w,
                                                                 mean, rstd, C)));
    wf_cuda_sync(c, "wf_layernorm_bwd_input");
}

extern "C" void wf_layernorm_bwd_weight(wf_ctx *c, float *dw, float *db, const float *dout,
                                        const float *inp, const float *mean, const float *rstd,
                                        int N, int C) {
    wf_colsum_out out = { { dw, db } };
    WF_BY_STORAGE(c, S, WF_BY_WIDTH(S, A, wf_vec_ok<S>(C, dout, inp),
                                    wf_colsum<A>(c, layernorm_dw_terms<A>{ wf_act<S>(dout), wf_act<S>(inp), mean, rstd },
                                                 out, N, C)));
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
template <class A>
__global__ static void residual_layernorm_fwd_kernel(typename A::raw *res, typename A::raw *out, float *mean,
                                                     float *rstd, const typename A::raw *a,
                                                     const typename A::raw *b, const float *w,
                                                     const float *bias, int C, int precision) {
    enum { W = A::width };
    long n = blockIdx.x;
    const typename A::raw *xa = a + n * C, *xb = b + n * C;
    typename A::raw *x = res + n * C, *y = out + n * C;
    WF_ROW_CHUNKS(i, C, W) {
        float va[W], vb[W];
        A::load(xa, i, va);
        A::load(xb, i, vb);
#pragma unroll
        for (int e = 0; e < W; e++) va[e] = wf_hd_round(precision, va[e] + vb[e]);
        A::store(x, i, va);
    }
    /* the statistics read back this thread's own chunks (the same split of
     * the row over the threads), so no barrier is needed before them */
    double m, r;
    row_stats<A>(x, C, &m, &r);
    row_normalize<A>(y, x, w, bias, m, r, C);
    if (threadIdx.x == 0) {
        mean[n] = (float)m;
        rstd[n] = (float)r;
    }
}

/* t = dres + the layernorm's dx (as layernorm_dx_kernel), rounded; da += t, db += t */
template <class A>
__global__ static void residual_layernorm_dx_kernel(typename A::raw *da, typename A::raw *db,
                                                    const typename A::raw *dres, const typename A::raw *dln,
                                                    const typename A::raw *res, const float *w,
                                                    const float *mean, const float *rstd, int C,
                                                    int precision) {
    enum { W = A::width };
    long n = blockIdx.x;
    const typename A::raw *x = res + n * C, *d = dln + n * C, *r = dres + n * C;
    typename A::raw *ga = da + n * C, *gb = db + n * C;
    float m = mean[n], s = rstd[n];
    float g_mean, gx_mean;
    dx_means<A>(x, d, w, m, s, C, &g_mean, &gx_mean);
    WF_ROW_CHUNKS(i, C, W) {
        float xv[W], dv[W], t[W], g[W];
        A::load(x, i, xv);
        A::load(d, i, dv);
        A::load(r, i, t);
#pragma unroll
        for (int e = 0; e < W; e++) {
            float xhat = (xv[e] - m) * s;
            t[e] += s * (dv[e] * w[i + e] - g_mean - xhat * gx_mean);
            t[e] = wf_hd_round(precision, t[e]);
        }
        A::load(ga, i, g);
#pragma unroll
        for (int e = 0; e < W; e++) g[e] = g[e] + t[e];
        A::store(ga, i, g);
        A::load(gb, i, g);
#pragma unroll
        for (int e = 0; e < W; e++) g[e] = g[e] + t[e];
        A::store(gb, i, g);
    }
}

extern "C" void wf_residual_layernorm_fwd(wf_ctx *c, float *res_out, float *ln_out, float *mean, float *rstd,
                                          const float *a, const float *b, const float *w, const float *bias,
                                          int N, int C) {
    WF_BY_STORAGE(c, S, WF_BY_WIDTH(S, A, wf_vec_ok<S>(C, res_out, ln_out, a, b),
                                    WF_LAUNCH(residual_layernorm_fwd_kernel<A>, N, wf_row_threads(C, A::width), 0,
                                              wf_cuda_stream(c))(wf_act<S>(res_out), wf_act<S>(ln_out), mean, rstd,
                                                                 wf_act<S>(a), wf_act<S>(b), w, bias, C,
                                                                 wf_ctx_precision(c))));
    wf_cuda_sync(c, "wf_residual_layernorm_fwd");
}

extern "C" void wf_residual_layernorm_bwd_input(wf_ctx *c, float *da, float *db, const float *dres,
                                                const float *dln, const float *res, const float *w,
                                                const float *mean, const float *rstd, int N, int C) {
    WF_BY_STORAGE(c, S, WF_BY_WIDTH(S, A, wf_vec_ok<S>(C, da, db, dres, dln, res),
                                    WF_LAUNCH(residual_layernorm_dx_kernel<A>, N, wf_row_threads(C, A::width), 0,
                                              wf_cuda_stream(c))(wf_act<S>(da), wf_act<S>(db), wf_act<S>(dres),
                                                                 wf_act<S>(dln), wf_act<S>(res), w, mean, rstd, C,
                                                                 wf_ctx_precision(c))));
    wf_cuda_sync(c, "wf_residual_layernorm_bwd_input");
}

extern "C" void wf_residual_layernorm_bwd(wf_ctx *c, float *da, float *db, float *dw, float *dbias,
                                          const float *dres, const float *dln, const float *res,
                                          const float *w, const float *mean, const float *rstd, int N,
                                          int C) {
    wf_residual_layernorm_bwd_input(c, da, db, dres, dln, res, w, mean, rstd, N, C);
    wf_layernorm_bwd_weight(c, dw, dbias, dln, res, mean, rstd, N, C);
}
