/* blas.c: wf_sgemm, a timed wrapper around OpenBLAS's cblas_sgemm.
 *
 * One thread pool per rank: OpenBLAS's own (pthreads) pool and OpenMP's
 * (every other kernel) would otherwise take turns on the same cores, each
 * spinning while the other works.  When wf_sgemm_split is on (wf_blas_threads
 * sets OpenBLAS to one thread), a large product is cut into one part per
 * OpenMP thread, each a single-threaded cblas_sgemm on its own rows of C.
 *
 * The cut must give the whole product's bits, or results would depend on the
 * thread count.  Each element of C is the same sum over K either way, but
 * OpenBLAS's micro-kernels round some elements differently by where a tile
 * falls relative to the edges of the call (tests/unit/test_sgemm_cut.c
 * checks every kernel set this CPU runs):
 *  - columns of C (OpenBLAS's column-major M, the packed-A side): with the
 *    Haswell/Zen (AVX2) kernels the 8 columns either side of every edge of
 *    a call, and of every GEMM_P block inside it, come out differently from
 *    the interior, and the blocks depend on the call's width: no cut of the
 *    columns (8 to 1152 tried) gave the whole product's bits;
 *  - rows of C (OpenBLAS's N, the packed-B side): exact where every cut
 *    falls on a multiple of 24 rows, with the Haswell/Zen kernels (8, 16 and
 *    32 were not) and the SkylakeX ones (whose small-matrix path rounds
 *    differently: parts of 8 to 48 rows of a 1000x300x64 product, under
 *    1 M multiply-adds, took it; every part here is over 8 MFLOP).
 * So only rows are cut, at multiples of CUT_ROWS = 24 from the first row;
 * then the bits do not depend on how many parts there are. */
#define _POSIX_C_SOURCE 199309L /* clock_gettime under -std=c11 */

#include "blas.h"

#include <cblas.h>
#include <omp.h>
#include <stdlib.h>
#include <time.h>

static double gemm_seconds;
static double gemm_flops;
static int split_on;

/* rows of C per block of a cut (header) */
enum { CUT_ROWS = 24 };

void wf_sgemm_split(int on) { split_on = on; }

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double gemm_flops_of(const wf_gemm *g) { return 2.0 * (double)g->M * (double)g->N * (double)g->K; }

static void gemm_whole(const wf_gemm *g) {
    cblas_sgemm(CblasRowMajor, g->transA ? CblasTrans : CblasNoTrans, g->transB ? CblasTrans : CblasNoTrans,
                g->M, g->N, g->K, g->alpha, g->A, g->lda, g->B, g->ldb, g->beta, g->C, g->ldc);
}

/* One product, cut into parts of whole blocks of rows when splitting is on
 * (header); timed and counted. */
static void gemm_cut(const wf_gemm *g)
{
    if (g->M <= 0 || g->N <= 0)
        return; /* empty output: nothing to compute, nothing to count */

    double t0 = now_seconds();
    /* a part under 8 MFLOP (~0.1 ms) is not worth waking a thread for: on a
     * busy machine the wake-up alone can cost more (the smallest part has
     * blocks / parts blocks) */
    int blocks = g->M / CUT_ROWS, parts = split_on && !omp_in_parallel() ? omp_get_max_threads() : 1;
    if (parts > blocks) parts = blocks;
    while (parts > 1 && 2.0 * (blocks / parts) * CUT_ROWS * g->N * g->K < 8e6) parts--;
    if (parts > 1) {
#pragma omp parallel for schedule(static, 1) num_threads(parts)
        for (int k = 0; k < parts; k++) {
            /* the last part, which takes the rows past the last block, has the fewer blocks */
            int lo = (k * blocks + parts - 1) / parts * CUT_ROWS;
            int hi = k + 1 == parts ? g->M : ((k + 1) * blocks + parts - 1) / parts * CUT_ROWS;
            /* op(A) rows lo..hi, C rows lo..hi */
            wf_gemm part = *g;
            part.M = hi - lo;
            part.A = g->transA ? g->A + lo : g->A + (long)lo * g->lda;
            part.C = g->C + (long)lo * g->ldc;
            gemm_whole(&part);
        }
    } else {
        gemm_whole(g);
    }
    gemm_seconds += now_seconds() - t0;
    gemm_flops += gemm_flops_of(g);
}

void wf_sgemm(int transA, int transB, int M, int N, int K, float alpha,
              const float *A, int lda, const float *B, int ldb, float beta,
              float *C, int ldc)
{
    const wf_gemm g = { transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc };
    gemm_cut(&g);
}

void wf_sgemm_pair(const wf_gemm *x, const wf_gemm *y) {
    /* whole or cut, each element of C is the same sum over K (above); each
     * product at least what wf_sgemm would cut in two (8 MFLOP a part), or
     * waking the second thread costs more than it saves */
    if (!y || !split_on || omp_in_parallel() || omp_get_max_threads() != 2 || x->M <= 0 || x->N <= 0 ||
        y->M <= 0 || y->N <= 0 || gemm_flops_of(x) < 16e6 || gemm_flops_of(y) < 16e6) {
        gemm_cut(x);
        if (y)
            gemm_cut(y);
        return;
    }
    double t0 = now_seconds();
#pragma omp parallel sections num_threads(2)
    {
#pragma omp section
        gemm_whole(x);
#pragma omp section
        gemm_whole(y);
    }
    gemm_seconds += now_seconds() - t0;
    gemm_flops += gemm_flops_of(x) + gemm_flops_of(y);
}

void wf_gemm_stats(double *seconds, double *flops)
{
    if (seconds)
        *seconds = gemm_seconds;
    if (flops)
        *flops = gemm_flops;
}

void wf_gemm_stats_add(double flops) { gemm_flops += flops; }

void wf_gemm_stats_reset(void)
{
    gemm_seconds = 0.0;
    gemm_flops = 0.0;
}

double wf_sgemm_rate(int M, int N, int K, int reps)
{
    float *a = malloc(sizeof(float) * (size_t)M * K), *b = malloc(sizeof(float) * (size_t)K * N);
    float *c = malloc(sizeof(float) * (size_t)M * N);
    for (long i = 0; i < (long)M * K; i++) a[i] = (float)(i % 7) * 0.1f;
    for (long i = 0; i < (long)K * N; i++) b[i] = (float)(i % 5) * 0.1f;
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        wf_sgemm(0, 0, M, N, K, 1.0f, a, K, b, N, 0.0f, c, N);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double t = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
        if (t < best) best = t;
    }
    free(a);
    free(b);
    free(c);
    return 2.0 * M * N * K / best / 1e9;
}
