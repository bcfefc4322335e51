/* xent.cu: the tied LM head with softmax cross-entropy fused with its
 * gradient, whole and vocabulary-parallel (the local pieces
 * runtime/common/tp.c puts together with all-reduces), and its split
 * backward halves, which only multiply: the forward writes
 * dlogits = (softmax - onehot(target)) * scale over the logits.
 *
 * One block per row.  The whole row: one read for the maximum and the sum of
 * exponentials together (online softmax: each thread keeps a running maximum
 * and rescales its sum when the maximum grows; the threads' pairs are then
 * combined), one read and one write for dlogits.  Exponentials in float, sums
 * in double, the loss from the log-sum-exp in double, as
 * runtime/cpu/kernels.c (the rescaled sum differs from the CPU's in rounding
 * only).  The token losses are summed in row order in double, so the
 * total is the CPU's sum of the same floats, into a managed accumulator
 * on the device that wf_backend_loss_take reads once per step (eager and
 * captured steps alike: async.c switches it on), or for the host (2BW, and
 * kernel tests, which have no backend).
 *
 * 16-bit activation storage (weft/rt.h; tp 1 only): x and dx are bf16 /
 * fp16, wte, dlogits and the losses float.  The logits come from 16-bit x and
 * wte converted into the cast buffer (exact: wte holds values of the type),
 * fp32 accumulation into float dlogits.  The backward GEMMs meet float
 * dlogits, so they are float GEMMs (which gemm.cu runs with the plan's
 * FAST_16BF / FAST_16F compute type: dlogits is rounded to 16 bits inside,
 * as without act16): dx's product into the cast buffer, then one kernel
 * dx = round(dx + product); x converted to floats in the cast buffer for
 * dwte.  The vocabulary-parallel pieces (tp > 1) keep float
 * activations and refuse 16-bit storage. */
#include "cuda_rt.h"
#include "kernels_tp.h"
#include "reduce.cuh"
#include "storage.cuh"

static double *loss_acc; /* managed: the device's sum of token losses */
static int loss_on_device;

/* The accumulator is allocated before any capture (async.c's setup calls
 * this, and switches the device sum on). */
extern "C" double *wf_cuda_loss_acc(wf_ctx *c) {
    if (!loss_acc) {
        WF_CUDA(c, cudaMallocManaged((void **)&loss_acc, sizeof(double), cudaMemAttachGlobal));
        *loss_acc = 0.0;
    }
    return loss_acc;
}

extern "C" void wf_cuda_loss_on_device(int on) { loss_on_device = on; }

/* The microbatch's token losses summed in double by one block in a fixed
 * order (each thread a fixed strided share, then wf_block_sum's tree), into
 * *out, or added to it (add: the step's running sum on the device).  The
 * host path sums with this same kernel, and a replayed graph and --no-graph
 * add the same microbatch sums in the same order: the same bits.  (One thread adding the N losses in row order, as before,
 * took a dependent L2 round trip per loss: ~1 ms per GPT-2 microbatch.) */
enum { LOSS_SUM_THREADS = 1024 };

__global__ static void loss_sum_kernel(double *out, const float *losses, int N, int add) {
    double s = 0.0;
    for (int n = threadIdx.x; n < N; n += blockDim.x) s += losses[n];
    s = wf_block_sum(s);
    if (threadIdx.x == 0) *out = add ? *out + s : s;
}

static double *eager_sum; /* managed: one microbatch's sum for the host (2BW, kernel tests) */

static double host_sum(wf_ctx *c, const float *losses, int N, const char *kernel) {
    if (loss_on_device) {
        WF_LAUNCH(loss_sum_kernel, 1, LOSS_SUM_THREADS, 0, wf_cuda_stream(c))(wf_cuda_loss_acc(c), losses,
                                                                              N, 1);
        wf_cuda_sync(c, kernel);
        return 0.0;  /* the sum is on the device */
    }
    if (!eager_sum)  /* 2BW never captures a step */
        WF_CUDA(c, cudaMallocManaged((void **)&eager_sum, sizeof(double), cudaMemAttachGlobal));
    WF_LAUNCH(loss_sum_kernel, 1, LOSS_SUM_THREADS, 0, wf_cuda_stream(c))(eager_sum, losses, N, 0);
    wf_cuda_sync(c, kernel);
    /* managed memory: readable once the stream is done (or, where managed
     * memory cannot be shared with running kernels, once the whole device
     * is: NCCL's streams may be busy) */
    if (wf_cuda_concurrent_managed()) WF_CUDA(c, cudaStreamSynchronize(wf_cuda_stream(c)));
    else WF_CUDA(c, cudaDeviceSynchronize());
    return *eager_sum;
}

/* Rows are read and written as float4 where they allow it (GPT-2's padded
 * vocabulary 50304 does); the per-element arithmetic is the same either way. */
__device__ static bool row_vec4(const float *row, int V) {
    return V % 4 == 0 && ((unsigned long long)row & 15) == 0;
}

/* x into this thread's running maximum m and its sum s of exp(x - m) */
__device__ static void online_add(float x, float &m, double &s) {
    if (x > m) {
        s = s * exp((double)m - (double)x) + 1.0; /* 0 * exp(-inf) = 0 at the first */
        m = x;
    } else {
        s += expf(x - m);
    }
}

/* (expf(x - max) * inv - onehot) * scale, each product rounded to float in
 * the CPU's order (wf_dlogits_row); j == t is the target */
__device__ static float dlogit(float x, int j, float max, float inv, int t, float scale) {
    float p = expf(x - max) * inv;
    if (j == t) p -= 1.0f;
    return p * scale;
}

/* The row's pass 2, in place; t outside [0, V) subtracts nothing. */
__device__ static void dlogits_pass(float *row, float max, float inv, int t, float scale, int V) {
    if (row_vec4(row, V)) {
        float4 *r4 = (float4 *)row;
        for (int q = threadIdx.x; q < V / 4; q += blockDim.x) {
            float4 v = r4[q];
            int j = 4 * q;
            v.x = dlogit(v.x, j, max, inv, t, scale);
            v.y = dlogit(v.y, j + 1, max, inv, t, scale);
            v.z = dlogit(v.z, j + 2, max, inv, t, scale);
            v.w = dlogit(v.w, j + 3, max, inv, t, scale);
            r4[q] = v;
        }
        return;
    }
    for (int j = threadIdx.x; j < V; j += blockDim.x) row[j] = dlogit(row[j], j, max, inv, t, scale);
}

__global__ static void fused_xent_kernel(float *logits, float *losses, const int32_t *targets,
                                         float scale, int V) {
    long n = blockIdx.x;
    float *row = logits + n * V;
    /* pass 1: this thread's running maximum m and its sum of exp(x - m) */
    float m = -INFINITY;
    double s = 0.0;
    if (row_vec4(row, V)) {
        const float4 *r4 = (const float4 *)row;
        for (int q = threadIdx.x; q < V / 4; q += blockDim.x) {
            float4 v = r4[q];
            online_add(v.x, m, s);
            online_add(v.y, m, s);
            online_add(v.z, m, s);
            online_add(v.w, m, s);
        }
    } else {
        for (int j = threadIdx.x; j < V; j += blockDim.x) online_add(row[j], m, s);
    }
    float max = wf_block_max(m);
    /* a thread that saw no element has s = 0 and m = -inf: it adds nothing */
    double sum = wf_block_sum(s == 0.0 ? 0.0 : s * exp((double)m - (double)max));
    int t = targets[n];
    double target_logit = (double)row[t] - max;
    __syncthreads(); /* every thread has read the target's logit before it is overwritten */
    dlogits_pass(row, max, (float)(1.0 / sum), t, scale, V);
    if (threadIdx.x == 0) losses[n] = (float)(log(sum) - target_logit);
}

extern "C" double wf_lmhead_xent_fwd(wf_ctx *c, float *dlogits, float *losses, const float *x,
                                     const float *wte, const int32_t *targets, float scale, int N,
                                     int C, int V) {
    /* logits (N,V) = x @ wte^T, written into dlogits, which the kernel turns over in place */
    if (wf_ctx_act16(c)) {
        cudaDataType_t t = wf_cuda_act_type(c);
        wf_cuda_gemm(c, 0, 1, N, V, C, 1.0f, x, t, C, wf_cuda_weight16(c, wte, (long)V * C), t, C, 0.0f,
                     dlogits, CUDA_R_32F, V, NULL);
    } else {
        wf_cuda_sgemm(c, 0, 1, N, V, C, 1.0f, x, C, 0, wte, C, 0, 0.0f, dlogits, V, 0, 1);
    }
    WF_LAUNCH(fused_xent_kernel, N, WF_THREADS, 0, wf_cuda_stream(c))(dlogits, losses, targets,
                                                                      scale, V);
    return host_sum(c, losses, N, "wf_lmhead_xent_fwd");
}

/* dx = round(dx + t), dx in storage S: the CPU's sgemm with beta 1, then its
 * rounding call */
template <class S> __global__ static void add_rounded_kernel(typename S::raw *dx, const float *t, long n) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
        S::store(dx, i, S::load(dx, i) + t[i]);
}

extern "C" void wf_lmhead_xent_bwd_input(wf_ctx *c, float *dx, const float *dlogits,
                                         const float *wte, int N, int C, int V) {
    /* dx (N,C) += dlogits (N,V) @ wte (V,C) */
    if (wf_ctx_act16(c)) {
        long n = (long)N * C;
        float *t = wf_cuda_cast_buffer(c, n);
        wf_cuda_sgemm(c, 0, 0, N, C, V, 1.0f, dlogits, V, 0, wte, C, 0, 0.0f, t, C, 0, 1);
        cudaStream_t s = wf_cuda_stream(c);
        WF_BY_STORAGE(c, S, WF_LAUNCH(add_rounded_kernel<S>, wf_blocks(n), WF_THREADS, 0, s)(wf_act<S>(dx), t, n));
    } else {
        wf_cuda_sgemm(c, 0, 0, N, C, V, 1.0f, dlogits, V, 0, wte, C, 0, 1.0f, dx, C, 0, 1);
    }
    wf_cuda_sync(c, "wf_lmhead_xent_bwd_input");
}

extern "C" void wf_lmhead_xent_bwd_weight(wf_ctx *c, float *dwte, const float *dlogits,
                                          const float *x, int N, int C, int V) {
    /* dwte (V,C) += dlogits^T @ x */
    if (wf_ctx_act16(c)) x = wf_cuda_act_floats(c, x, (long)N * C);
    wf_cuda_sgemm(c, 1, 0, V, C, N, 1.0f, dlogits, V, 0, x, C, 0, 1.0f, dwte, C, 0, 1);
    wf_cuda_sync(c, "wf_lmhead_xent_bwd_weight");
}

extern "C" void wf_lmhead_xent_bwd(wf_ctx *c, float *dx, float *dwte, const float *dlogits,
                                   const float *x, const float *wte, int N, int C, int V) {
    wf_lmhead_xent_bwd_input(c, dx, dlogits, wte, N, C, V);
    wf_lmhead_xent_bwd_weight(c, dwte, dlogits, x, N, C, V);
}

/* ---- vocabulary-parallel pieces (kernels_tp.h) ---------------------------- */

/* padding columns (j >= valid) -> -inf; rowmax = local maximum */
__global__ static void vocab_rowmax_kernel(float *logits, float *rowmax, int VL, int valid) {
    long n = blockIdx.x;
    float *row = logits + n * VL;
    float m = -INFINITY;
    for (int j = threadIdx.x; j < VL; j += blockDim.x) {
        if (j >= valid) row[j] = -INFINITY;
        else m = fmaxf(m, row[j]);
    }
    m = wf_block_max(m);
    if (threadIdx.x == 0) rowmax[n] = m;
}

extern "C" void wf_vocab_logits(float *logits, float *rowmax, const float *x,
                                const float *wte_part, int N, int C, int VL, int valid) {
    wf_cuda_sgemm(NULL, 0, 1, N, VL, C, 1.0f, x, C, 0, wte_part, C, 0, 0.0f, logits, VL, 0, 1);
    WF_LAUNCH(vocab_rowmax_kernel, N, WF_THREADS, 0, wf_cuda_stream(NULL))(logits, rowmax, VL, valid);
    wf_cuda_sync(NULL, "wf_vocab_logits");
}

/* reads the row only: the local sum of exponentials with the global maximum */
__global__ static void vocab_exp_kernel(const float *logits, double *stats, const float *rowmax,
                                        const int32_t *targets, int VL, int v_begin, int valid) {
    long n = blockIdx.x;
    const float *row = logits + n * VL;
    int t = targets[n] - v_begin;
    if (threadIdx.x == 0) stats[2 * n + 1] = (t >= 0 && t < valid) ? (double)row[t] - rowmax[n] : 0.0;
    double s = 0.0;
    for (int j = threadIdx.x; j < valid; j += blockDim.x) s += expf(row[j] - rowmax[n]);
    s = wf_block_sum(s);
    if (threadIdx.x == 0) stats[2 * n] = s;
}

extern "C" void wf_vocab_exp(const float *logits, double *stats, const float *rowmax,
                             const int32_t *targets, int N, int VL, int v_begin, int valid) {
    WF_LAUNCH(vocab_exp_kernel, N, WF_THREADS, 0, wf_cuda_stream(NULL))(logits, stats, rowmax,
                                                                       targets, VL, v_begin, valid);
    wf_cuda_sync(NULL, "wf_vocab_exp");
}

/* padding logits are -inf: expf gives 0, so their dlogits are 0 */
__global__ static void vocab_dlogits_kernel(float *logits, float *losses, const float *rowmax,
                                            const double *stats, const int32_t *targets,
                                            float scale, int VL, int v_begin) {
    long n = blockIdx.x;
    dlogits_pass(logits + n * VL, rowmax[n], (float)(1.0 / stats[2 * n]), targets[n] - v_begin,
                 scale, VL);
    if (threadIdx.x == 0) losses[n] = (float)(log(stats[2 * n]) - stats[2 * n + 1]);
}

extern "C" double wf_vocab_dlogits(float *dlogits, float *losses, const float *rowmax,
                                   const double *stats, const int32_t *targets, float scale, int N,
                                   int VL, int v_begin) {
    WF_LAUNCH(vocab_dlogits_kernel, N, WF_THREADS, 0, wf_cuda_stream(NULL))(
        dlogits, losses, rowmax, stats, targets, scale, VL, v_begin);
    return host_sum(NULL, losses, N, "wf_vocab_dlogits");
}

extern "C" void wf_vocab_xent_bwd(wf_ctx *c, float *dx, float *dwte_part, const float *dlogits,
                                  const float *x, const float *wte_part, int N, int C, int VL) {
    if (wf_ctx_act16(c))  /* the compiler keeps act16 off with tp > 1 (rt.h) */
        wf_cuda_fail(c, "wf_vocab_xent_bwd", WF_CUDA_WHERE, "vocabulary-parallel pieces keep float activations");
    /* dx is partial over the vocabulary; the tp_copy before the head sums it */
    wf_lmhead_xent_bwd_input(c, dx, dlogits, wte_part, N, C, VL);
    wf_lmhead_xent_bwd_weight(c, dwte_part, dlogits, x, N, C, VL);
}
