/* emu_gemm.cc: runtime/cuda/gemm.cu for the emulated build: the same
 * row-major, batched contract as cuda_rt.h states, as a plain loop summed in
 * double (no cuBLAS on the CPU).  beta == 0 ignores C, as cuBLAS does.
 * Each call is a device operation like a kernel launch: under WF_EMU_ASYNC it
 * is queued behind the kernels before it (wf_emu::enqueue), so it reads what
 * they wrote and a host read without a wait still shows. */
#include "cuda_rt.h"
#include "gelu_value.h"

static double gemm_flops;

static void sgemm_now(int transA, int transB, int M, int N, int K, float alpha, const float *A, int lda,
                      long sA, const float *B, int ldb, long sB, float beta, float *C, int ldc, long sC,
                      int batch) {
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
}

static void bias_now(int M, int N, float *C, int ldc, long sC, int batch, const float *bias) {
    for (int b = 0; bias && b < batch; b++)
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) C[b * sC + (long)i * ldc + j] += bias[j];
}

extern "C" void wf_cuda_sgemm(wf_ctx *c, int transA, int transB, int M, int N, int K, float alpha,
                              const float *A, int lda, long sA, const float *B, int ldb, long sB,
                              float beta, float *C, int ldc, long sC, int batch) {
    (void)c;
    wf_emu::enqueue([=] { sgemm_now(transA, transB, M, N, K, alpha, A, lda, sA, B, ldb, sB, beta, C, ldc, sC, batch); });
    gemm_flops += 2.0 * M * N * K * batch;
}

/* gemm.cu's bias epilogue: the product, then bias[j] added to every row's column j */
extern "C" void wf_cuda_sgemm_bias(wf_ctx *c, int transA, int transB, int M, int N, int K, float alpha,
                                   const float *A, int lda, long sA, const float *B, int ldb, long sB,
                                   float beta, float *C, int ldc, long sC, int batch, const float *bias) {
    wf_cuda_sgemm(c, transA, transB, M, N, K, alpha, A, lda, sA, B, ldb, sB, beta, C, ldc, sC, batch);
    wf_emu::enqueue([=] { bias_now(M, N, C, ldc, sC, batch, bias); });
}

/* gemm.cu's GELU_AUX_BIAS epilogue: aux = the product plus the bias, C its
 * GELU in the CPU backend's formula.  Always available here, as on the GPU
 * for fp32 plans with ldc a multiple of 8; the bf16 / fp16 path (0) is
 * taken where the real one takes it. */
extern "C" int wf_cuda_sgemm_bias_gelu(wf_ctx *c, int M, int N, int K, const float *A, int lda,
                                       const float *B, int ldb, float *C, int ldc, const float *bias,
                                       float *aux) {
    if (wf_ctx_precision(c) != WF_FP32 || ldc % 8 != 0) return 0;
    wf_cuda_sgemm_bias(c, 0, 0, M, N, K, 1.0f, A, lda, 0, B, ldb, 0, 0.0f, aux, ldc, 0, 1, bias);
    wf_emu::enqueue([=] {
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) C[(long)i * ldc + j] = wf_gelu_value(aux[(long)i * ldc + j]);
    });
    return 1;
}

extern "C" void wf_gemm_stats(double *seconds, double *flops) {
    *seconds = 0.0;
    *flops = gemm_flops;
}

extern "C" void wf_gemm_stats_reset(void) { gemm_flops = 0.0; }
