/* xent.cu: the tied LM head with softmax cross-entropy fused with its
 * gradient, whole and vocabulary-parallel (the local pieces
 * runtime/common/tp.c and xent_vocab.c put together with all-reduces), and
 * its backward halves, which only multiply: the forward writes
 * dlogits = (softmax - onehot(target)) * scale over the logits.  Generated
 * programs call the fused, chunked form (wf_lmhead_xent_chunked below,
 * wf_vocab_xent_chunked in xent_vocab.c), made of these same kernels a
 * chunk of token rows at a time.
 *
 * One block per row.  The whole row: one read for the maximum and the sum of
 * exponentials together (online softmax: each thread keeps a running maximum
 * and rescales its sum when the maximum grows; the threads' pairs are then
 * combined), one read and one write for dlogits.  Exponentials in float, sums
 * in double, the loss from the log-sum-exp in double, as
 * runtime/cpu/xent.c (the rescaled sum differs from the CPU's in rounding
 * only).  The token losses are summed in row order in double, so the
 * total is the CPU's sum of the same floats, into a managed accumulator
 * on the device that wf_backend_loss_take reads once per step (eager and
 * captured steps alike, 2BW's too: async.c switches it on), or for the
 * host (kernel tests, which have no backend).
 *
 * bf16 / fp16 plans keep the logits and dlogits in the plan's 16-bit type,
 * as Megatron-LM and llm.c do (and as runtime/cpu rounds them): logits =
 * round16(x @ wte^T), the softmax and loss arithmetic in fp32 / double from
 * those, dlogits = round16((p - onehot) * scale).  fp16: the dlogits of tiny
 * probabilities may become subnormals or 0, as in Megatron-LM.
 *
 * 16-bit activation storage (weft/rt.h): x, dx and dlogits are
 * bf16 / fp16, wte and the losses float.  The forward GEMM takes x as it
 * is and wte converted to 16 bits in the cast buffer (exact: wte holds
 * values of the type) and writes 16-bit logits (fp32 accumulation, one rounding); the
 * backward GEMMs are native 16-bit ones: dx = round(dx + dlogits @ wte16)
 * (beta 1, 16-bit C/D) and dwte (float) += dlogits^T @ x; the
 * vocabulary-parallel pieces alike, on this rank's slice.  Without act16
 * (fp32 plans, the CPU's layouts) dlogits are floats, holding 16-bit values
 * in 16-bit plans: the kernels round the logits as they read them and the
 * dlogits as they write them (the vocabulary-parallel pieces: the logits
 * once, in vocab_rowmax_kernel). */
#include "cuda_rt.h"
#include "kernels_tp.h"
#include "reduce.cuh"
#include "storage.cuh"
#include "storage_vec.cuh"

/* This file's part of a context's state (cuda_rt.h's wf_cuda_ctx). */
struct wf_cuda_xent {
    double *loss_acc;    /* managed: the device's sum of token losses */
    int loss_on_device;
    double *eager_sum;   /* managed: one microbatch's sum for the host (kernel tests) */
};

static struct wf_cuda_xent *xent_of(wf_ctx *c) {
    wf_cuda_ctx *x = wf_cuda_of(c);
    if (!x->xent) x->xent = (struct wf_cuda_xent *)wf_cuda_zalloc(c, sizeof *x->xent, "xent.cu's state");
    return x->xent;
}

/* The accumulator is allocated before any capture (async.c's setup calls
 * this, and switches the device sum on). */
extern "C" double *wf_cuda_loss_acc(wf_ctx *c) {
    struct wf_cuda_xent *s = xent_of(c);
    if (!s->loss_acc) {
        WF_CUDA(c, wf_cuda_malloc_managed(c, (void **)&s->loss_acc, sizeof(double)));
        *s->loss_acc = 0.0;
    }
    return s->loss_acc;
}

extern "C" void wf_cuda_loss_on_device(wf_ctx *c, int on) { xent_of(c)->loss_on_device = on; }

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

static double host_sum(wf_ctx *c, const float *losses, int N, const char *kernel) {
    struct wf_cuda_xent *s = xent_of(c);
    if (s->loss_on_device) {
        WF_LAUNCH(loss_sum_kernel, 1, LOSS_SUM_THREADS, 0, wf_cuda_stream(c))(wf_cuda_loss_acc(c), losses,
                                                                              N, 1);
        wf_cuda_sync(c, kernel);
        return 0.0;  /* the sum is on the device */
    }
    if (!s->eager_sum)  /* only without a backend: never inside a captured step */
        WF_CUDA(c, wf_cuda_malloc_managed(c, (void **)&s->eager_sum, sizeof(double)));
    WF_LAUNCH(loss_sum_kernel, 1, LOSS_SUM_THREADS, 0, wf_cuda_stream(c))(s->eager_sum, losses, N, 0);
    wf_cuda_sync(c, kernel);
    /* managed memory: readable once the stream is done (or, where managed
     * memory cannot be shared with running kernels, once the whole device
     * is: NCCL's streams may be busy) */
    if (wf_cuda_concurrent_managed(c)) WF_CUDA(c, cudaStreamSynchronize(wf_cuda_stream(c)));
    else WF_CUDA(c, cudaDeviceSynchronize());
    return *s->eager_sum;
}

/* Rows are read and written 16 bytes at a time (wf_vec: 4 floats or 8
 * 16-bit values) where they allow it (GPT-2's padded vocabulary 50304 does);
 * the per-element arithmetic is the same either way. */
template <class S> __device__ static bool row_vec(const typename S::raw *row, int V) {
    return V % wf_vec<S>::width == 0 && ((unsigned long long)row & 15) == 0;
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
 * the CPU's order (wf_dlogits_row); j == t is the target.  prec (here and
 * below): the 16-bit type a float row holds in a 16-bit plan without act16
 * (the logit x is rounded to it as read, the dlogit as written), else
 * WF_FP32 (fp32 plans; 16-bit storage, which rounds as it stores). */
__device__ static float dlogit(float x, int j, float max, float inv, int t, float scale, int prec) {
    float p = expf(wf_hd_round(prec, x) - max) * inv;
    if (j == t) p -= 1.0f;
    return wf_hd_round(prec, p * scale);
}

/* The row's pass 2, in place; t outside [0, V) subtracts nothing. */
template <class S>
__device__ static void dlogits_pass(typename S::raw *row, float max, float inv, int t, float scale, int V,
                                    int prec) {
    enum { W = wf_vec<S>::width };
    if (row_vec<S>(row, V)) {
        for (int q = threadIdx.x; q < V / W; q += blockDim.x) {
            float v[W];
            wf_vec<S>::load(row, (long)q * W, v);
#pragma unroll
            for (int k = 0; k < W; k++) v[k] = dlogit(v[k], q * W + k, max, inv, t, scale, prec);
            wf_vec<S>::store(row, (long)q * W, v);
        }
        return;
    }
    for (int j = threadIdx.x; j < V; j += blockDim.x)
        S::store(row, j, dlogit(S::load(row, j), j, max, inv, t, scale, prec));
}

/* A position without loss (target < 0: a VLM's image and pad positions, as
 * the CPU's xent.c): its dlogits row is 0 and so is its loss.  The whole
 * block takes this branch or none. */
template <class S>
__device__ static bool no_loss_row(typename S::raw *row, float *losses, long n, int t, int V) {
    if (t >= 0) return false;
    for (int j = threadIdx.x; j < V; j += blockDim.x) S::store(row, j, 0.0f);
    if (threadIdx.x == 0) losses[n] = 0.0f;
    return true;
}

template <class S>
__global__ static void fused_xent_kernel(typename S::raw *logits, float *losses, const int32_t *targets,
                                         float scale, int V, int prec) {
    enum { W = wf_vec<S>::width };
    long n = blockIdx.x;
    typename S::raw *row = logits + n * V;
    if (no_loss_row<S>(row, losses, n, targets[n], V)) return;
    /* pass 1: this thread's running maximum m and its sum of exp(x - m) */
    float m = -INFINITY;
    double s = 0.0;
    if (row_vec<S>(row, V)) {
        for (int q = threadIdx.x; q < V / W; q += blockDim.x) {
            float v[W];
            wf_vec<S>::load(row, (long)q * W, v);
#pragma unroll
            for (int k = 0; k < W; k++) online_add(wf_hd_round(prec, v[k]), m, s);
        }
    } else {
        for (int j = threadIdx.x; j < V; j += blockDim.x) online_add(wf_hd_round(prec, S::load(row, j)), m, s);
    }
    float max = wf_block_max(m);
    /* a thread that saw no element has s = 0 and m = -inf: it adds nothing */
    double sum = wf_block_sum(s == 0.0 ? 0.0 : s * exp((double)m - (double)max));
    int t = targets[n];
    double target_logit = (double)wf_hd_round(prec, S::load(row, t)) - max;
    __syncthreads(); /* every thread has read the target's logit before it is overwritten */
    dlogits_pass<S>(row, max, (float)(1.0 / sum), t, scale, V, prec);
    if (threadIdx.x == 0) losses[n] = (float)(log(sum) - target_logit);
}

/* The precision the kernels round a float row to (see prec above). */
static int row_prec(wf_ctx *c) { return wf_ctx_act16(c) ? WF_FP32 : wf_ctx_precision(c); }

extern "C" double wf_lmhead_xent_fwd(wf_ctx *c, float *dlogits, float *losses, const float *x,
                                     const float *wte, const int32_t *targets, float scale, int N,
                                     int C, int V) {
    /* logits (N,V) = x @ wte^T, written into dlogits, which the kernel turns over in place */
    /* under act16, 16-bit logits straight from the GEMM */
    wf_cuda_act_gemm(c, 0, 1, N, V, C, x, WF_ACT, C, wte, WF_WEIGHT, C, 0.0f, dlogits, WF_ACT, V, NULL);
    int prec = row_prec(c);
    cudaStream_t st = wf_cuda_stream(c);
    WF_BY_STORAGE(c, S, WF_LAUNCH(fused_xent_kernel<S>, N, WF_THREADS, 0, st)(wf_act<S>(dlogits), losses,
                                                                                targets, scale, V, prec));
    return host_sum(c, losses, N, "wf_lmhead_xent_fwd");
}

/* The head fused and chunked (weft/rt.h; the compiler emits it for every
 * backend, from the backward): per chunk of `chunk` token rows the logits
 * go into scratch (chunk x V in c's activation storage: 16-bit under
 * act16), the row kernel above turns them into dlogits and losses in place,
 * and the two backward GEMMs consume them, so at most chunk x V logits
 * exist at once.  Each row's arithmetic is wf_lmhead_xent_fwd's and
 * wf_lmhead_xent_bwd's; only dwte's sum over tokens is split into per-chunk
 * partial sums (cuBLASLt's beta 1), as runtime/cpu/xent.c splits it.
 * Unlike the CPU, no chunk is skipped for having no loss position (targets
 * all < 0): the targets are on the device and a captured step replays the
 * same launches every step; such a chunk's dlogits are zeros (no_loss_row),
 * which add nothing to dx and dwte.  The token losses are summed once,
 * over all N, as the unchunked head sums them.  dwte NULL: a frozen head. */
extern "C" double wf_lmhead_xent_chunked(wf_ctx *c, float *dx, float *dwte, float *losses, float *scratch,
                                         const float *x, const float *wte, const int32_t *targets,
                                         float scale, int N, int C, int V, int chunk) {
    if (chunk < 1 || chunk > N) chunk = N;
    int prec = row_prec(c);
    cudaStream_t st = wf_cuda_stream(c);
    for (int r0 = 0; r0 < N; r0 += chunk) {
        int n = N - r0 < chunk ? N - r0 : chunk;
        const float *xc = wf_cuda_act_at(c, x, (long)r0 * C);
        wf_cuda_act_gemm(c, 0, 1, n, V, C, xc, WF_ACT, C, wte, WF_WEIGHT, C, 0.0f, scratch, WF_ACT, V, NULL);
        WF_BY_STORAGE(c, S, WF_LAUNCH(fused_xent_kernel<S>, n, WF_THREADS, 0, st)(
                                wf_act<S>(scratch), losses + r0, targets + r0, scale, V, prec));
        wf_cuda_act_gemm(c, 0, 0, n, C, V, scratch, WF_ACT, V, wte, WF_WEIGHT, C, 1.0f,
                         (float *)wf_cuda_act_at(c, dx, (long)r0 * C), WF_ACT, C, NULL);
        if (dwte)
            wf_cuda_act_gemm(c, 1, 0, V, C, n, scratch, WF_ACT, V, xc, WF_ACT, C, 1.0f, dwte, WF_GRAD, C, NULL);
    }
    return host_sum(c, losses, N, "wf_lmhead_xent_chunked");
}

extern "C" void wf_lmhead_xent_bwd_input(wf_ctx *c, float *dx, const float *dlogits,
                                         const float *wte, int N, int C, int V) {
    /* dx (N,C) += dlogits (N,V) @ wte (V,C); act16: all three 16-bit, one
     * rounding of dx + product (the CPU's sgemm with beta 1, then its rounding call) */
    wf_cuda_act_gemm(c, 0, 0, N, C, V, dlogits, WF_ACT, V, wte, WF_WEIGHT, C, 1.0f, dx, WF_ACT, C, NULL);
    wf_cuda_sync(c, "wf_lmhead_xent_bwd_input");
}

extern "C" void wf_lmhead_xent_bwd_weight(wf_ctx *c, float *dwte, const float *dlogits,
                                          const float *x, int N, int C, int V) {
    /* dwte (V,C) += dlogits^T @ x; act16: 16-bit dlogits and x, float dwte */
    wf_cuda_act_gemm(c, 1, 0, V, C, N, dlogits, WF_ACT, V, x, WF_ACT, C, 1.0f, dwte, WF_GRAD, C, NULL);
    wf_cuda_sync(c, "wf_lmhead_xent_bwd_weight");
}

extern "C" void wf_lmhead_xent_bwd(wf_ctx *c, float *dx, float *dwte, const float *dlogits,
                                   const float *x, const float *wte, int N, int C, int V) {
    wf_lmhead_xent_bwd_input(c, dx, dlogits, wte, N, C, V);
    wf_lmhead_xent_bwd_weight(c, dwte, dlogits, x, N, C, V);
}

/* ---- vocabulary-parallel pieces (kernels_tp.h) ---------------------------- */
/* The rows are this rank's VL logits, in c's activation storage like the
 * whole head's (16-bit under act16, where prec is WF_FP32). */

/* padding columns (j >= valid) -> -inf, the others rounded to prec (a
 * 16-bit plan's float logits); rowmax = local maximum */
template <class S>
__global__ static void vocab_rowmax_kernel(typename S::raw *logits, float *rowmax, int VL, int valid, int prec) {
    long n = blockIdx.x;
    typename S::raw *row = logits + n * VL;
    float m = -INFINITY;
    for (int j = threadIdx.x; j < VL; j += blockDim.x) {
        if (j >= valid) {
            S::store(row, j, -INFINITY);
        } else {
            float x = wf_hd_round(prec, S::load(row, j));
            if (prec != WF_FP32) S::store(row, j, x);
            m = fmaxf(m, x);
        }
    }
    m = wf_block_max(m);
    if (threadIdx.x == 0) rowmax[n] = m;
}

extern "C" void wf_vocab_logits(wf_ctx *c, float *logits, float *rowmax, const float *x,
                                const float *wte_part, int N, int C, int VL, int valid, int precision) {
    /* under act16 16-bit logits straight from the GEMM (one rounding) */
    wf_cuda_act_gemm(c, 0, 1, N, VL, C, x, WF_ACT, C, wte_part, WF_WEIGHT, C, 0.0f, logits, WF_ACT, VL, NULL);
    int prec = wf_ctx_act16(c) ? WF_FP32 : precision;
    WF_BY_STORAGE(c, S, WF_LAUNCH(vocab_rowmax_kernel<S>, N, WF_THREADS, 0, wf_cuda_stream(c))(
                            wf_act<S>(logits), rowmax, VL, valid, prec));
    wf_cuda_sync(c, "wf_vocab_logits");
}

/* reads the row only: the local sum of exponentials with the global maximum */
template <class S>
__global__ static void vocab_exp_kernel(const typename S::raw *logits, double *stats, const float *rowmax,
                                        const int32_t *targets, int VL, int v_begin, int valid) {
    long n = blockIdx.x;
    const typename S::raw *row = logits + n * VL;
    int t = targets[n] - v_begin;
    if (threadIdx.x == 0) stats[2 * n + 1] = (t >= 0 && t < valid) ? (double)S::load(row, t) - rowmax[n] : 0.0;
    double s = 0.0;
    for (int j = threadIdx.x; j < valid; j += blockDim.x) s += expf(S::load(row, j) - rowmax[n]);
    s = wf_block_sum(s);
    if (threadIdx.x == 0) stats[2 * n] = s;
}

extern "C" void wf_vocab_exp(wf_ctx *c, const float *logits, double *stats, const float *rowmax,
                             const int32_t *targets, int N, int VL, int v_begin, int valid) {
    WF_BY_STORAGE(c, S, WF_LAUNCH(vocab_exp_kernel<S>, N, WF_THREADS, 0, wf_cuda_stream(c))(
                            wf_act<S>(logits), stats, rowmax, targets, VL, v_begin, valid));
    wf_cuda_sync(c, "wf_vocab_exp");
}

/* padding logits are -inf: expf gives 0, so their dlogits are 0 */
template <class S>
__global__ static void vocab_dlogits_kernel(typename S::raw *logits, float *losses, const float *rowmax,
                                            const double *stats, const int32_t *targets,
                                            float scale, int VL, int v_begin, int prec) {
    long n = blockIdx.x;
    if (no_loss_row<S>(logits + n * VL, losses, n, targets[n], VL)) return;
    dlogits_pass<S>(logits + n * VL, rowmax[n], (float)(1.0 / stats[2 * n]), targets[n] - v_begin, scale, VL,
                    prec);
    if (threadIdx.x == 0) losses[n] = (float)(log(stats[2 * n]) - stats[2 * n + 1]);
}

extern "C" void wf_cuda_vocab_dlogits_rows(wf_ctx *c, float *dlogits, float *losses, const float *rowmax,
                                           const double *stats, const int32_t *targets, float scale, int N,
                                           int VL, int v_begin, int precision) {
    int prec = wf_ctx_act16(c) ? WF_FP32 : precision;
    WF_BY_STORAGE(c, S, WF_LAUNCH(vocab_dlogits_kernel<S>, N, WF_THREADS, 0, wf_cuda_stream(c))(
                            wf_act<S>(dlogits), losses, rowmax, stats, targets, scale, VL, v_begin, prec));
    wf_cuda_sync(c, "wf_vocab_dlogits");
}

extern "C" double wf_vocab_dlogits(wf_ctx *c, float *dlogits, float *losses, const float *rowmax,
                                   const double *stats, const int32_t *targets, float scale, int N,
                                   int VL, int v_begin, int precision) {
    wf_cuda_vocab_dlogits_rows(c, dlogits, losses, rowmax, stats, targets, scale, N, VL, v_begin, precision);
    return host_sum(c, losses, N, "wf_vocab_dlogits");
}

extern "C" double wf_cuda_loss_sum(wf_ctx *c, const float *losses, int N, const char *kernel) {
    return host_sum(c, losses, N, kernel);
}

extern "C" void wf_vocab_xent_bwd(wf_ctx *c, float *dx, float *dwte_part, const float *dlogits,
                                  const float *x, const float *wte_part, int N, int C, int VL) {
    /* dx is partial over the vocabulary; the tp_copy before the head sums it */
    wf_lmhead_xent_bwd_input(c, dx, dlogits, wte_part, N, C, VL);
    wf_lmhead_xent_bwd_weight(c, dwte_part, dlogits, x, N, C, VL);
}
