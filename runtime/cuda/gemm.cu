/* gemm.cu: the row-major matrix products of the CUDA kernels, on cuBLAS.
 *
 * A row-major X (r, c) with leading dimension ld is, to column-major cuBLAS,
 * X^T (c, r) with the same ld.  So row-major C = op(A) op(B) is column-major
 * C^T = op(B)^T op(A)^T: swap the operands and the sizes M and N, keep the
 * transposes. */
#include <time.h>

#include "cuda_rt.h"

static double gemm_flops, gemm_seconds;

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void wf_cuda_sgemm(wf_ctx *c, int transA, int transB, int M, int N, int K, float alpha,
                   const float *A, int lda, long sA, const float *B, int ldb, long sB,
                   float beta, float *C, int ldc, long sC, int batch) {
    cublasOperation_t opA = transA ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t opB = transB ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasHandle_t h = wf_cuda_blas(c);
    /* Timed from the host between two stream synchronizations: the kernels
     * are synchronous anyway in this first step, so this costs little and
     * the summary's GEMM share is measured, not guessed. */
    WF_CUDA(c, cudaStreamSynchronize(wf_cuda_stream(c)));
    double t0 = now_s();
    if (batch == 1)
        WF_CUBLAS(c, cublasSgemm(h, opB, opA, N, M, K, &alpha, B, ldb, A, lda, &beta, C, ldc));
    else
        WF_CUBLAS(c, cublasSgemmStridedBatched(h, opB, opA, N, M, K, &alpha, B, ldb, sB, A, lda,
                                               sA, &beta, C, ldc, sC, batch));
    WF_CUDA(c, cudaStreamSynchronize(wf_cuda_stream(c)));
    gemm_seconds += now_s() - t0;
    gemm_flops += 2.0 * M * N * K * batch;
}

/* train.c's summary reads these. */
extern "C" void wf_gemm_stats(double *seconds, double *flops) {
    *seconds = gemm_seconds;
    *flops = gemm_flops;
}

extern "C" void wf_gemm_stats_reset(void) { gemm_flops = gemm_seconds = 0.0; }
