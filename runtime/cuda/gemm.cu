/* gemm.cu: the row-major matrix products of the CUDA kernels, on cuBLAS.
 *
 * A row-major X (r, c) with leading dimension ld is, to column-major cuBLAS,
 * X^T (c, r) with the same ld.  So row-major C = op(A) op(B) is column-major
 * C^T = op(B)^T op(A)^T: swap the operands and the sizes M and N, keep the
 * transposes. */
#include "cuda_rt.h"

/* GEMM time for the run's summary, from events around each eager GEMM (a
 * host timer would need a synchronization per GEMM).  Pairs wait in a ring
 * and are read once the ring is full, by then long finished.  GEMMs inside a
 * captured CUDA graph are not timed (nor counted): the summary's GEMM share
 * then covers the eager steps only. */
enum { RING = 64 };
static cudaEvent_t ev_start[RING], ev_end[RING];
static int ring_next, ring_used;
static double gemm_flops, gemm_seconds;

static void read_oldest(wf_ctx *c) {
    int i = (ring_next - ring_used + RING) % RING;
    float ms = 0.0f;
    WF_CUDA(c, cudaEventSynchronize(ev_end[i]));
    WF_CUDA(c, cudaEventElapsedTime(&ms, ev_start[i], ev_end[i]));
    gemm_seconds += 1e-3 * ms;
    ring_used--;
}

void wf_cuda_sgemm(wf_ctx *c, int transA, int transB, int M, int N, int K, float alpha,
                   const float *A, int lda, long sA, const float *B, int ldb, long sB,
                   float beta, float *C, int ldc, long sC, int batch) {
    cublasOperation_t opA = transA ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t opB = transB ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasHandle_t h = wf_cuda_blas(c);
    cudaStream_t s = wf_cuda_stream(c);
    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    WF_CUDA(c, cudaStreamIsCapturing(s, &capturing));
    int timed = capturing == cudaStreamCaptureStatusNone;
    if (timed) {
        if (!ev_start[0])
            for (int i = 0; i < RING; i++) {
                WF_CUDA(c, cudaEventCreate(&ev_start[i]));
                WF_CUDA(c, cudaEventCreate(&ev_end[i]));
            }
        if (ring_used == RING) read_oldest(c);
        WF_CUDA(c, cudaEventRecord(ev_start[ring_next], s));
    }
    if (batch == 1)
        WF_CUBLAS(c, cublasSgemm(h, opB, opA, N, M, K, &alpha, B, ldb, A, lda, &beta, C, ldc));
    else
        WF_CUBLAS(c, cublasSgemmStridedBatched(h, opB, opA, N, M, K, &alpha, B, ldb, sB, A, lda,
                                               sA, &beta, C, ldc, sC, batch));
    if (timed) {
        WF_CUDA(c, cudaEventRecord(ev_end[ring_next], s));
        ring_next = (ring_next + 1) % RING;
        ring_used++;
        gemm_flops += 2.0 * M * N * K * batch;
    }
}

/* train.c's summary reads these (after the last step: every pair is done). */
extern "C" void wf_gemm_stats(double *seconds, double *flops) {
    while (ring_used > 0) read_oldest(NULL);
    *seconds = gemm_seconds;
    *flops = gemm_flops;
}

extern "C" void wf_gemm_stats_reset(void) {
    while (ring_used > 0) read_oldest(NULL);
    gemm_flops = gemm_seconds = 0.0;
}
