/* lmhead_chunk: the CPU LM head's time against its chunk size, in one run,
 * side by side: the unchunked pair (wf_lmhead_xent_fwd + _bwd, the (N, V)
 * dlogits whole) and the fused, chunked head (wf_lmhead_xent_chunked) at
 * several chunks, interleaved round by round so that a machine's load hits
 * all alike; medians, and each against the unchunked pair.  It is what the
 * compiler's chunk rule (compiler/ops_loss.c, lmhead_chunk_rows) rests on.
 * Usage: lmhead_chunk N C V [ROUNDS [CHUNK...]]   (tokens per microbatch, hidden,
 * vocab; the chunks to time, 0 the unchunked pair: 0 64 128 256 512 N unless given) */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench_clock.h"
#include "blas.h"
#include "internal.h"

static double now(void) { return bench_clock_s(CLOCK_MONOTONIC); }
/* the process's CPU time, every thread's: what a machine shared with other
 * jobs changes least (run with OMP_WAIT_POLICY=PASSIVE, as launch.sh does,
 * or OpenMP's spinning counts too) */
static double cpu_now(void) { return bench_cpu_s(); }


int main(int argc, char **argv) {
    wf_blas_select(argc, argv);
    /* as a generated program runs (blas_select.c's wf_blas_threads): one
     * pool, OpenMP's, unless OPENBLAS_NUM_THREADS gives OpenBLAS its own */
    if (!getenv("OPENBLAS_NUM_THREADS")) {
        openblas_set_num_threads(1);
        wf_sgemm_split(1);
    }
    int N = argc > 1 ? atoi(argv[1]) : 1024, C = argc > 2 ? atoi(argv[2]) : 256;
    int V = argc > 3 ? atoi(argv[3]) : 50304, rounds = argc > 4 ? atoi(argv[4]) : 5;
    int chunks[16] = { 0, 64, 128, 256, 512, N }, K = 6;  /* 0: the unchunked pair */
    if (argc > 5) {  /* the chunks to time, the first the others' reference */
        K = argc - 5 < 16 ? argc - 5 : 16;
        for (int k = 0; k < K; k++) chunks[k] = atoi(argv[5 + k]);
    }
    float *x = malloc(sizeof(float) * (size_t)N * C), *w = malloc(sizeof(float) * (size_t)V * C);
    float *dx = calloc((size_t)N * C, sizeof(float)), *dw = calloc((size_t)V * C, sizeof(float));
    float *big = malloc(sizeof(float) * (size_t)N * V), *losses = malloc(sizeof(float) * (size_t)N);
    int32_t *t = malloc(sizeof(int32_t) * (size_t)N);
    if (!x || !w || !dx || !dw || !big || !losses || !t) return 1;
    srand(1);
    for (long i = 0; i < (long)N * C; i++) x[i] = (float)rand() / RAND_MAX - 0.5f;
    for (long i = 0; i < (long)V * C; i++) w[i] = 0.1f * ((float)rand() / RAND_MAX - 0.5f);
    for (int i = 0; i < N; i++) t[i] = rand() % V;
    double *ms = malloc(sizeof(double) * K * (size_t)rounds), *cpu = malloc(sizeof(double) * K * (size_t)rounds);
    for (int r = -1; r < rounds; r++)  /* round -1 warms up */
        for (int k = 0; k < K; k++) {
            double t0 = now(), c0 = cpu_now();
            if (chunks[k] == 0) {
                wf_lmhead_xent_fwd(NULL, big, losses, x, w, t, 1.0f / N, N, C, V);
                wf_lmhead_xent_bwd(NULL, dx, dw, big, x, w, N, C, V);
            } else {
                wf_lmhead_xent_chunked(NULL, dx, dw, losses, big, x, w, t, 1.0f / N, N, C, V, chunks[k]);
            }
            if (r >= 0) ms[k * rounds + r] = 1e3 * (now() - t0), cpu[k * rounds + r] = 1e3 * (cpu_now() - c0);
        }
    printf("LM head N %d C %d V %d, %d rounds, medians (3 GEMMs: %.1f GFLOP)\n", N, C, V, rounds,
           6.0 * N * C * (double)V / 1e9);
    double base = 0;
    for (int k = 0; k < K; k++) {
        qsort(ms + k * rounds, (size_t)rounds, sizeof(double), bench_cmp_double);
        qsort(cpu + k * rounds, (size_t)rounds, sizeof(double), bench_cmp_double);
        double m = ms[k * rounds + rounds / 2], mc = cpu[k * rounds + rounds / 2];
        if (k == 0) base = m;
        if (chunks[k] == 0)
            printf("unchunked pair      : %8.1f ms (CPU %8.1f ms)  logits buffer %7.1f MiB\n", m, mc,
                   4.0 * N * V / 1048576);
        else
            printf("chunked, %5d rows : %8.1f ms (CPU %8.1f ms)  logits buffer %7.1f MiB  x%.2f of the first's time\n",
                   chunks[k], m, mc, 4.0 * chunks[k] * V / 1048576, m / base);
    }
    return 0;
}
