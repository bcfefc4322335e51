/* xent.cu: the tied LM head with softmax cross-entropy, whole and
 * vocabulary-parallel (the local pieces runtime/common/tp.c puts together
 * with all-reduces), and its split backward halves.
 *
 * Per row: the maximum in float, exponentials in float, their sum in double,
 * the loss from the log-sum-exp in double, as runtime/cpu/kernels.c.  The
 * token losses are summed in row order in double, so the total is the CPU's
 * sum of the same floats: on the host for an eager step (the one place a
 * step waits for the device), on the device into a managed accumulator while
 * a CUDA graph captures the step (graph.c; wf_backend_loss_take reads it). */
#include "cuda_rt.h"
#include "kernels_tp.h"
#include "reduce.cuh"

static double *loss_acc; /* managed: the device's sum of token losses */
static int loss_on_device;

/* The accumulator is allocated before any capture (async.c's setup calls
 * this); graph.c switches the device sum on around its capture. */
extern "C" double *wf_cuda_loss_acc(wf_ctx *c) {
    if (!loss_acc) {
        WF_CUDA(c, cudaMallocManaged((void **)&loss_acc, sizeof(double), cudaMemAttachGlobal));
        *loss_acc = 0.0;
    }
    return loss_acc;
}

extern "C" void wf_cuda_loss_on_device(int on) { loss_on_device = on; }

/* one thread, row order: the host's additions, bit for bit */
__global__ static void loss_sum_kernel(double *acc, const float *losses, int N) {
    double total = 0.0;
    for (int n = 0; n < N; n++) total += losses[n];
    *acc += total;
}

static double host_sum(wf_ctx *c, const float *losses, int N, const char *kernel) {
    if (loss_on_device) {
        WF_LAUNCH(loss_sum_kernel, 1, 1, 0, wf_cuda_stream(c))(wf_cuda_loss_acc(c), losses, N);
        wf_cuda_sync(c, kernel);
        return 0.0;  /* the sum is on the device */
    }
    wf_cuda_sync(c, kernel);
    /* losses are managed memory: readable once the stream is done */
    WF_CUDA(c, cudaStreamSynchronize(wf_cuda_stream(c)));
    double total = 0.0;
    for (int n = 0; n < N; n++) total += losses[n];
    return total;
}

__global__ static void softmax_xent_kernel(float *probs, float *losses, const int32_t *targets,
                                           int V) {
    long n = blockIdx.x;
    float *row = probs + n * V;
    float m = -INFINITY;
    for (int j = threadIdx.x; j < V; j += blockDim.x) m = fmaxf(m, row[j]);
    m = wf_block_max(m);
    double target_logit = (double)row[targets[n]] - m;
    __syncthreads(); /* every thread has read the target's logit before it is overwritten */
    double s = 0.0;
    for (int j = threadIdx.x; j < V; j += blockDim.x) {
        float e = expf(row[j] - m);
        row[j] = e;
        s += e;
    }
    double sum = wf_block_sum(s);
    float inv = (float)(1.0 / sum);
    for (int j = threadIdx.x; j < V; j += blockDim.x) row[j] *= inv;
    if (threadIdx.x == 0) losses[n] = (float)(log(sum) - target_logit);
}

extern "C" double wf_lmhead_xent_fwd(wf_ctx *c, float *probs, float *losses, const float *x,
                                     const float *wte, const int32_t *targets, int N, int C,
                                     int V) {
    wf_cuda_sgemm(c, 0, 1, N, V, C, 1.0f, x, C, 0, wte, C, 0, 0.0f, probs, V, 0, 1);
    WF_LAUNCH(softmax_xent_kernel, N, WF_THREADS, 0, wf_cuda_stream(c))(probs, losses, targets, V);
    return host_sum(c, losses, N, "wf_lmhead_xent_fwd");
}

/* probs -> dlogits = (probs - onehot) * scale, in place */
__global__ static void dlogits_kernel(float *probs, const int32_t *targets, float scale, long N,
                                      int V, int v_begin) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < N * V;
         i += (long)gridDim.x * blockDim.x) {
        long n = i / V;
        int j = (int)(i % V);
        float p = probs[i];
        if (j == targets[n] - v_begin) p -= 1.0f;
        probs[i] = p * scale;
    }
}

extern "C" void wf_lmhead_xent_bwd_input(wf_ctx *c, float *dx, float *probs, const float *wte,
                                         const int32_t *targets, float scale, int N, int C, int V,
                                         int v_begin) {
    WF_LAUNCH(dlogits_kernel, wf_blocks((long)N * V), WF_THREADS, 0, wf_cuda_stream(c))(
        probs, targets, scale, N, V, v_begin);
    /* dx (N,C) += dlogits (N,V) @ wte (V,C) */
    wf_cuda_sgemm(c, 0, 0, N, C, V, 1.0f, probs, V, 0, wte, C, 0, 1.0f, dx, C, 0, 1);
    wf_cuda_sync(c, "wf_lmhead_xent_bwd_input");
}

extern "C" void wf_lmhead_xent_bwd_weight(wf_ctx *c, float *dwte, const float *dlogits,
                                          const float *x, int N, int C, int V) {
    /* dwte (V,C) += dlogits^T @ x */
    wf_cuda_sgemm(c, 1, 0, V, C, N, 1.0f, dlogits, V, 0, x, C, 0, 1.0f, dwte, C, 0, 1);
    wf_cuda_sync(c, "wf_lmhead_xent_bwd_weight");
}

extern "C" void wf_lmhead_xent_bwd(wf_ctx *c, float *dx, float *dwte, float *probs, const float *x,
                                   const float *wte, const int32_t *targets, float scale, int N,
                                   int C, int V) {
    wf_lmhead_xent_bwd_input(c, dx, probs, wte, targets, scale, N, C, V, 0);
    wf_lmhead_xent_bwd_weight(c, dwte, probs, x, N, C, V);
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

__global__ static void vocab_exp_kernel(float *logits, double *stats, const float *rowmax,
                                        const int32_t *targets, int VL, int v_begin, int valid) {
    long n = blockIdx.x;
    float *row = logits + n * VL;
    int t = targets[n] - v_begin;
    if (threadIdx.x == 0) stats[2 * n + 1] = (t >= 0 && t < valid) ? (double)row[t] - rowmax[n] : 0.0;
    __syncthreads(); /* the target's logit is read before it becomes an exponential */
    double s = 0.0;
    for (int j = threadIdx.x; j < VL; j += blockDim.x) {
        float e = j < valid ? expf(row[j] - rowmax[n]) : 0.0f;
        row[j] = e;
        s += e;
    }
    s = wf_block_sum(s);
    if (threadIdx.x == 0) stats[2 * n] = s;
}

extern "C" void wf_vocab_exp(float *logits, double *stats, const float *rowmax,
                             const int32_t *targets, int N, int VL, int v_begin, int valid) {
    WF_LAUNCH(vocab_exp_kernel, N, WF_THREADS, 0, wf_cuda_stream(NULL))(logits, stats, rowmax, targets, VL,
                                                                  v_begin, valid);
    wf_cuda_sync(NULL, "wf_vocab_exp");
}

__global__ static void vocab_normalize_kernel(float *probs, float *losses, const double *stats,
                                              int VL) {
    long n = blockIdx.x;
    float inv = (float)(1.0 / stats[2 * n]);
    float *row = probs + n * VL;
    for (int j = threadIdx.x; j < VL; j += blockDim.x) row[j] *= inv;
    if (threadIdx.x == 0) losses[n] = (float)(log(stats[2 * n]) - stats[2 * n + 1]);
}

extern "C" double wf_vocab_normalize(float *probs, float *losses, const double *stats, int N,
                                     int VL) {
    WF_LAUNCH(vocab_normalize_kernel, N, WF_THREADS, 0, wf_cuda_stream(NULL))(probs, losses, stats, VL);
    return host_sum(NULL, losses, N, "wf_vocab_normalize");
}

extern "C" void wf_vocab_xent_bwd(wf_ctx *c, float *dx, float *dwte_part, float *probs,
                                  const float *x, const float *wte_part, const int32_t *targets,
                                  float scale, int N, int C, int VL, int v_begin) {
    /* dx is partial over the vocabulary; the tp_copy before the head sums it */
    wf_lmhead_xent_bwd_input(c, dx, probs, wte_part, targets, scale, N, C, VL, v_begin);
    wf_lmhead_xent_bwd_weight(c, dwte_part, probs, x, N, C, VL);
}
