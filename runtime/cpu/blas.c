/* blas.c: wf_sgemm, a timed wrapper around OpenBLAS's cblas_sgemm. */
#define _POSIX_C_SOURCE 199309L /* clock_gettime under -std=c11 */

#include "blas.h"

#include <cblas.h>
#include <time.h>

static double gemm_seconds;
static double gemm_flops;

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void wf_sgemm(int transA, int transB, int M, int N, int K, float alpha,
              const float *A, int lda, const float *B, int ldb, float beta,
              float *C, int ldc)
{
    if (M <= 0 || N <= 0)
        return; /* empty output: nothing to compute, nothing to count */

    double t0 = now_seconds();
    cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
                transB ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda, B,
                ldb, beta, C, ldc);
    gemm_seconds += now_seconds() - t0;
    gemm_flops += 2.0 * (double)M * (double)N * (double)K;
}

void wf_gemm_stats(double *seconds, double *flops)
{
    if (seconds)
        *seconds = gemm_seconds;
    if (flops)
        *flops = gemm_flops;
}

void wf_gemm_stats_reset(void)
{
    gemm_seconds = 0.0;
    gemm_flops = 0.0;
}
