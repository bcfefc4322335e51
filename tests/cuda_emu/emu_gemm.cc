/* emu_gemm.cc: runtime/cuda/gemm.cu for the emulated build: the same
 * row-major, batched contract as cuda_rt.h states, as a plain loop summed in
 * double (no cuBLAS on the CPU).  beta == 0 ignores C, as cuBLAS does. */
#include "cuda_rt.h"

static double gemm_flops;

extern "C" void wf_cuda_sgemm(wf_ctx *c, int transA, int transB, int M, int N, int K, float alpha,
                              const float *A, int lda, long sA, const float *B, int ldb, long sB,
                              float beta, float *C, int ldc, long sC, int batch) {
    (void)c;
    for (int b = 0; b < batch; b++) {
        const float *a = A + b * sA, *bm = B + b * sB;
        float *cm = C + b * sC;
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                double s = 0.0;
                for (int k = 0; k < K; k++) {
                    float x = transA ? a[(long)k * lda + i] : a[(long)i * lda + k];
                    float y = transB ? bm[(long)j * ldb + k] : bm[(long)k * ldb + j];
                    s += (double)x * y;
                }
                float *out = &cm[(long)i * ldc + j];
                *out = beta == 0.0f ? (float)(alpha * s) : (float)(alpha * s + (double)beta * *out);
            }
    }
    gemm_flops += 2.0 * M * N * K * batch;
}

extern "C" void wf_gemm_stats(double *seconds, double *flops) {
    *seconds = 0.0;
    *flops = gemm_flops;
}

extern "C" void wf_gemm_stats_reset(void) { gemm_flops = 0.0; }
