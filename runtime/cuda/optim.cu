/* optim.cu: the optimizer's per-element work on the device (opt_backend.h):
 * AdamW over every range this rank owns in one launch, the squared gradient
 * norm and the fp16 overflow check, so that the arenas never travel to the
 * host for the step.
 *
 * The ranges lie end to end in one element space; a thread finds the range of
 * its element by binary search over their starts (the table is small and
 * every thread of a block reads the same few entries).  The table is copied
 * to device memory on its first use and kept: it never changes after setup.  AdamW is the CPU
 * loop's formula in its order of operations, and this file is compiled with
 * --fmad=false (CMakeLists.txt), so no multiply-add is fused and the update
 * matches the CPU backend's bit for bit where the inputs do.
 *
 * Under 16-bit weight gradients (grad16) each reads the bf16 / fp16 value
 * the float arena held: AdamW by its grads16, the norm and the check by
 * their 16-bit entries (storage.cuh's loads, the CPU's values).
 *
 * The sum of squares is deterministic: each thread adds its elements (a
 * fixed grid-stride set) in double, blocks reduce with a fixed tree
 * (wf_block_sum), and one block adds the block sums in index order. */
#include "cuda_rt.h"
#include "opt_backend.h"
#include "precision_bits.h"
#include "reduce.cuh"
#include "storage.cuh"
#include "weft/runtime_buffers.h"

#define GRID_STRIDE(i, n) \
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < (n); i += (long)gridDim.x * blockDim.x)

enum { SUMSQ_BLOCKS = WF_SUMSQ_BLOCKS };  /* partial sums: a fixed grid, so a fixed order */

/* The last range starting at or before element i. */
__device__ static const wf_opt_range *range_of(wf_opt_table t, long i) {
    int lo = 0, hi = t.n - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (t.r[mid].start <= i) lo = mid;
        else hi = mid - 1;
    }
    return &t.r[lo];
}

__global__ static void adamw_kernel(wf_adamw_args a) {
    GRID_STRIDE(i, a.t.total) {
        const wf_opt_range *r = range_of(a.t, i);
        if (a.skip_tied_copy && r->tied_copy) continue;
        long j = i - r->start;
        float g = a.grads16 ? wf_hd_16_value(a.precision, reinterpret_cast<const uint16_t *>(a.grads)[r->g + j])
                            : a.grads[r->g + j];
        float gi = g * a.grad_scale;
        float m = a.b1 * a.m[r->mom + j] + (1.0f - a.b1) * gi;
        float v = a.b2 * a.v[r->mom + j] + (1.0f - a.b2) * gi * gi;
        a.m[r->mom + j] = m;
        a.v[r->mom + j] = v;
        float denom = sqrtf(v) * a.inv_bc2_sqrt + a.eps;
        float decay = r->decay ? a.decay : 0.0f;
        /* 16-bit modes update the fp32 master, and store it rounded in the same pass */
        float *x = a.master ? a.master + r->mom + j : a.weights + r->w + j;
        float xi = *x;
        xi -= a.step_size * m / denom + decay * xi;
        *x = xi;
        if (a.master && a.param16)  /* 16-bit working parameters: the rounded bits */
            reinterpret_cast<uint16_t *>(a.weights)[r->w + j] =
                a.precision == WF_BF16 ? wf_hd_bf16_bits(xi) : wf_hd_fp16_bits(xi);
        else if (a.master) a.weights[r->w + j] = wf_hd_round(a.precision, xi);
    }
}

/* This file's part of a context's state (cuda_rt.h's wf_cuda_ctx): the
 * device copy of the table (the rank's, or a test's), counted by the
 * compiler at this size (weft/runtime_buffers.h), and the norm's scratch. */
static_assert(sizeof(wf_opt_range) == WF_OPT_RANGE_BYTES, "WF_OPT_RANGE_BYTES is sizeof(wf_opt_range)");
struct wf_cuda_optim {
    const wf_opt_range *table_src;
    wf_opt_range *table_dev;
    int table_n;
    double *sumsq_scratch; /* SUMSQ_BLOCKS partial sums, then the total */
    int *nonfinite_flag;
};

static struct wf_cuda_optim *optim_of(wf_ctx *c) {
    wf_cuda_ctx *x = wf_cuda_of(c);
    if (!x->optim) x->optim = (struct wf_cuda_optim *)wf_cuda_zalloc(c, sizeof *x->optim, "optim.cu's state");
    return x->optim;
}

static wf_opt_table on_device(wf_ctx *c, const wf_opt_table *t) {
    struct wf_cuda_optim *o = optim_of(c);
    if (t->r != o->table_src || t->n != o->table_n) {
        cudaStream_t s = wf_cuda_stream(c);
        if (o->table_dev) WF_CUDA(c, wf_cuda_free(c, o->table_dev));
        WF_CUDA(c, wf_cuda_malloc(c, (void **)&o->table_dev, sizeof(wf_opt_range) * (size_t)t->n));
        WF_CUDA(c, cudaMemcpyAsync(o->table_dev, t->r, sizeof(wf_opt_range) * (size_t)t->n,
                                   cudaMemcpyDefault, s));
        wf_cuda_sync(c, "cudaMemcpyAsync (optimizer range table)");
        o->table_src = t->r;
        o->table_n = t->n;
    }
    wf_opt_table d = *t;
    d.r = o->table_dev;
    return d;
}

extern "C" void wf_backend_sync(wf_ctx *c); /* async.c: the host waits for the stream */

extern "C" void wf_backend_adamw(wf_ctx *c, const wf_adamw_args *a) {
    if (a->t.total <= 0) return;
    if (a->on_host) {
        /* offload (DeepSpeed's CPU Adam): moments and masters are pinned host
         * memory; the host waits for the gradients and updates there */
        wf_backend_sync(c);
        wf_adamw_host(a);
        return;
    }
    wf_adamw_args d = *a;
    d.t = on_device(c, &a->t);
    WF_LAUNCH(adamw_kernel, wf_blocks(d.t.total), WF_THREADS, 0, wf_cuda_stream(c))(d);
    wf_cuda_sync(c, "adamw_kernel");
}

/* ---- squared norm and overflow check: device scratch kept for the context ---- */

/* S: the gradients' storage (storage.cuh: floats, or grad16's bits) */
template <class S> __global__ static void sumsq_blocks_kernel(wf_opt_table t, const typename S::raw *grads, double *partial) {
    double s = 0;
    GRID_STRIDE(i, t.total) {
        const wf_opt_range *r = range_of(t, i);
        if (!r->in_norm) continue;
        double g = S::load(grads, r->g + (i - r->start));
        s += g * g;
    }
    s = wf_block_sum(s);
    if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

__global__ static void sumsq_total_kernel(const double *partial, int n, double *total) {
    double s = 0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) s += partial[i];
    s = wf_block_sum(s);
    if (threadIdx.x == 0) *total = s;
}

template <class S> static double sumsq(wf_ctx *c, const wf_opt_table *t, const typename S::raw *grads) {
    if (t->total <= 0) return 0.0;
    cudaStream_t s = wf_cuda_stream(c);
    double *&sumsq_scratch = optim_of(c)->sumsq_scratch;
    if (!sumsq_scratch)
        WF_CUDA(c, wf_cuda_malloc(c, (void **)&sumsq_scratch, sizeof(double) * (SUMSQ_BLOCKS + 1)));
    int blocks = wf_blocks(t->total);
    if (blocks > SUMSQ_BLOCKS) blocks = SUMSQ_BLOCKS;
    WF_LAUNCH(sumsq_blocks_kernel<S>, blocks, WF_THREADS, 0, s)(on_device(c, t), grads, sumsq_scratch);
    WF_LAUNCH(sumsq_total_kernel, 1, WF_THREADS, 0, s)(sumsq_scratch, blocks, sumsq_scratch + SUMSQ_BLOCKS);
    double total = 0;
    WF_CUDA(c, cudaMemcpyAsync(&total, sumsq_scratch + SUMSQ_BLOCKS, sizeof total, cudaMemcpyDeviceToHost, s));
    wf_cuda_sync(c, "sumsq_blocks_kernel / sumsq_total_kernel");
    WF_CUDA(c, cudaStreamSynchronize(s));  /* the host reads it now, whatever wf_cuda_sync waits for */
    return total;
}

extern "C" double wf_backend_sumsq(wf_ctx *c, const wf_opt_table *t, const float *grads) {
    return sumsq<wf_st_f32>(c, t, grads);
}

extern "C" double wf_backend_sumsq16(wf_ctx *c, const wf_opt_table *t, const void *grads, int precision) {
    const uint16_t *h = static_cast<const uint16_t *>(grads);
    return precision == WF_BF16 ? sumsq<wf_st_bf16>(c, t, h) : sumsq<wf_st_fp16>(c, t, h);
}

/* Every thread that meets an inf or NaN writes 1: the same value, so the
 * races do not matter. */
template <class S> __global__ static void nonfinite_kernel(wf_opt_table t, const typename S::raw *grads, int *flag) {
    GRID_STRIDE(i, t.total) {
        const wf_opt_range *r = range_of(t, i);
        if (!isfinite(S::load(grads, r->g + (i - r->start)))) *flag = 1;
    }
}

template <class S> static int nonfinite(wf_ctx *c, const wf_opt_table *t, const typename S::raw *grads) {
    if (t->total <= 0) return 0;
    cudaStream_t s = wf_cuda_stream(c);
    int *&nonfinite_flag = optim_of(c)->nonfinite_flag;
    if (!nonfinite_flag) WF_CUDA(c, wf_cuda_malloc(c, (void **)&nonfinite_flag, sizeof(int)));
    WF_CUDA(c, cudaMemsetAsync(nonfinite_flag, 0, sizeof(int), s));
    WF_LAUNCH(nonfinite_kernel<S>, wf_blocks(t->total), WF_THREADS, 0, s)(on_device(c, t), grads, nonfinite_flag);
    int bad = 0;
    WF_CUDA(c, cudaMemcpyAsync(&bad, nonfinite_flag, sizeof bad, cudaMemcpyDeviceToHost, s));
    wf_cuda_sync(c, "nonfinite_kernel");
    WF_CUDA(c, cudaStreamSynchronize(s));  /* the host reads it now */
    return bad != 0;
}

extern "C" int wf_backend_nonfinite(wf_ctx *c, const wf_opt_table *t, const float *grads) {
    return nonfinite<wf_st_f32>(c, t, grads);
}

extern "C" int wf_backend_nonfinite16(wf_ctx *c, const wf_opt_table *t, const void *grads, int precision) {
    const uint16_t *h = static_cast<const uint16_t *>(grads);
    return precision == WF_BF16 ? nonfinite<wf_st_bf16>(c, t, h) : nonfinite<wf_st_fp16>(c, t, h);
}
