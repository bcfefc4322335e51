/* sgemm_case.h: one GEMM test case's operands for the wf_sgemm tests: op(A)
 * M x K and op(B) K x N for a transpose pair, each with 3 columns of padding
 * past its leading dimension (sub-blocks, as attention passes them), and a
 * starting C0, filled with values in [-0.5, 0.5) from a seed. */
#ifndef SGEMM_CASE_H
#define SGEMM_CASE_H

#include <stdlib.h>

static inline float sgemm_case_rnd(unsigned *s) {
    *s = *s * 1103515245u + 12345u;
    return (float)((*s >> 8) & 0xffff) / 65536.0f - 0.5f;
}

typedef struct {
    int ta, tb, M, N, K, lda, ldb, ldc;
    float *A, *B, *C0;
    size_t nc; /* elements of C, padding included: M x ldc */
} sgemm_case;

static inline sgemm_case sgemm_case_make(int ta, int tb, int M, int N, int K, unsigned seed) {
    enum { PAD = 3 };
    sgemm_case c = { ta, tb, M, N, K, 0, 0, 0, NULL, NULL, NULL, 0 };
    int ra = ta ? K : M, ca = ta ? M : K, rb = tb ? N : K, cb = tb ? K : N;
    c.lda = ca + PAD, c.ldb = cb + PAD, c.ldc = N + PAD;
    c.nc = (size_t)M * c.ldc;
    c.A = malloc(sizeof(float) * (size_t)ra * c.lda), c.B = malloc(sizeof(float) * (size_t)rb * c.ldb);
    c.C0 = malloc(sizeof(float) * c.nc);
    if (!c.A || !c.B || !c.C0) abort();
    unsigned s = seed + (unsigned)(M * 31 + N * 7 + K + ta * 2 + tb);
    for (long i = 0; i < (long)ra * c.lda; i++) c.A[i] = sgemm_case_rnd(&s);
    for (long i = 0; i < (long)rb * c.ldb; i++) c.B[i] = sgemm_case_rnd(&s);
    for (size_t i = 0; i < c.nc; i++) c.C0[i] = sgemm_case_rnd(&s);
    return c;
}

static inline void sgemm_case_free(sgemm_case *c) { free(c->A), free(c->B), free(c->C0); }

#endif
