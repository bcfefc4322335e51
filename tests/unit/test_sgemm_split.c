/* test_sgemm_split: wf_sgemm with GEMMs cut over the OpenMP threads (blas.c's
 * one-pool mode) against a float64 product, for every transpose pair, on
 * shapes cut along the rows (the only side blas.c cuts), with sizes that
 * are not multiples of its 24-row blocks, leading dimensions wider than the
 * matrices (sub-blocks, as attention passes them) and beta = 1
 * (accumulation).  The bound is the standard one for a float dot product of
 * length K: |c - c64| <= gamma_K * (|alpha| sum |a||b| + |beta c0|) with
 * gamma_K = K u / (1 - K u), u = 2^-24, plus one rounding of the result; a
 * part that computed the wrong rows or columns, or none, is off by O(1). */
#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blas.h"
#include "sgemm_case.h"

static int run(int ta, int tb, int M, int N, int K, float beta) {
    sgemm_case c = sgemm_case_make(ta, tb, M, N, K, 7u);
    const float *A = c.A, *B = c.B, *C0 = c.C0;
    int lda = c.lda, ldb = c.ldb, ldc = c.ldc;
    float *C = malloc(sizeof(float) * c.nc);
    if (!C) abort();
    memcpy(C, C0, sizeof(float) * c.nc);
    float alpha = 0.75f;
    wf_sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    double u = ldexp(1.0, -24), gamma = K * u / (1 - K * u), worst = 0;
    int bad = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double sum = 0, mag = 0;
            for (int k = 0; k < K; k++) {
                double a = ta ? A[(long)k * lda + i] : A[(long)i * lda + k];
                double b = tb ? B[(long)j * ldb + k] : B[(long)k * ldb + j];
                sum += a * b;
                mag += fabs(a * b);
            }
            double ref = alpha * sum + beta * C0[(long)i * ldc + j];
            double bound = gamma * (fabs(alpha) * mag + fabs(beta * C0[(long)i * ldc + j])) + u * fabs(ref) + 1e-30;
            double err = fabs(C[(long)i * ldc + j] - ref);
            if (err / bound > worst) worst = err / bound;
            if (err > bound) bad++;
        }
    /* the padding columns of C are not C's: untouched */
    for (int i = 0; i < M; i++)
        for (int j = N; j < ldc; j++)
            if (C[(long)i * ldc + j] != C0[(long)i * ldc + j]) bad++;
    printf("sgemm split  ta %d tb %d  M %4d N %4d K %3d beta %g: worst err / bound %.3f  %s\n", ta, tb, M, N, K,
           beta, worst, bad ? "FAIL" : "ok");
    free(C);
    sgemm_case_free(&c);
    return bad == 0;
}

/* wf_sgemm_pair: two products at once, each whole on its own thread, must
 * give the bits of one thread computing each whole (wf_sgemm without the
 * cut, OpenBLAS on one thread, as the runtime runs it under the cut), for the
 * LM head's pair of shapes (dx += dlogits @ w, dw += dlogits^T @ x, both
 * accumulating); with a NULL second product, those of wf_sgemm on the
 * first.  Exact equality: the same calls on the same operands. */
static int pair(int N, int C, int V) {
    float *s = malloc(sizeof(float) * (size_t)N * V), *w = malloc(sizeof(float) * (size_t)V * C);
    float *x = malloc(sizeof(float) * (size_t)N * C);
    float *dx[2], *dw[2];
    unsigned r = 11u;
    for (long i = 0; i < (long)N * V; i++) s[i] = sgemm_case_rnd(&r);
    for (long i = 0; i < (long)V * C; i++) w[i] = sgemm_case_rnd(&r);
    for (long i = 0; i < (long)N * C; i++) x[i] = sgemm_case_rnd(&r);
    for (int k = 0; k < 2; k++) {
        dx[k] = malloc(sizeof(float) * (size_t)N * C), dw[k] = malloc(sizeof(float) * (size_t)V * C);
        unsigned q = 5u;  /* the same starting gradients in both */
        for (long i = 0; i < (long)N * C; i++) dx[k][i] = sgemm_case_rnd(&q);
        for (long i = 0; i < (long)V * C; i++) dw[k][i] = sgemm_case_rnd(&q);
    }
    openblas_set_num_threads(1);
    wf_sgemm_split(0);  /* the reference: each product whole, on one thread */
    wf_sgemm(0, 0, N, C, V, 1.0f, s, V, w, C, 1.0f, dx[0], C);
    wf_sgemm(1, 0, V, C, N, 1.0f, s, V, x, C, 1.0f, dw[0], C);
    wf_sgemm_split(1);
    wf_gemm gx = { 0, 0, N, C, V, 1.0f, s, V, w, C, 1.0f, dx[1], C };
    wf_gemm gw = { 1, 0, V, C, N, 1.0f, s, V, x, C, 1.0f, dw[1], C };
    wf_sgemm_pair(&gx, &gw);
    long bad = 0;
    for (long i = 0; i < (long)N * C; i++) bad += dx[0][i] != dx[1][i];
    for (long i = 0; i < (long)V * C; i++) bad += dw[0][i] != dw[1][i];
    wf_sgemm(0, 0, N, C, V, 1.0f, s, V, w, C, 1.0f, dx[0], C);  /* y NULL: wf_sgemm on x */
    wf_sgemm_pair(&gx, NULL);
    for (long i = 0; i < (long)N * C; i++) bad += dx[0][i] != dx[1][i];
    printf("sgemm pair   N %d C %d V %d: %ld elements differ  %s\n", N, C, V, bad, bad ? "FAIL" : "ok");
    for (int k = 0; k < 2; k++) free(dx[k]), free(dw[k]);
    free(s), free(w), free(x);
    return bad == 0;
}

int main(void) {
    omp_set_num_threads(2);
    wf_sgemm_split(1);
    int ok = 1;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            /* above blas.c's 8 MFLOP per part, so cut in two */
            ok &= run(ta, tb, 301, 267, 129, 1.0f);  /* cut along the rows */
            ok &= run(ta, tb, 50, 1517, 197, 0.0f);  /* N over M: 24 and 26 rows */
        }
    ok &= run(0, 1, 8, 8, 8, 1.0f);  /* too small to cut */
    ok &= pair(301, 67, 1517);       /* each product over 16 MFLOP: run at once */
    printf(ok ? "test_sgemm_split: all passed\n" : "test_sgemm_split: FAILED\n");
    return !ok;
}
