/* gemm_pair: the LM head's two backward products of a chunk (dx += dlogits
 * @ wte, dwte += dlogits^T @ x) one after the other, each cut over the
 * threads (wf_sgemm twice), against both at once, each whole on its own
 * thread (wf_sgemm_pair, what wf_lmhead_xent_chunked runs), in one run:
 * every round runs both forms back to back, in alternating order, so that a
 * machine's load hits both alike.  Prints the medians of CPU time (all
 * threads) and wall time, and the median of the rounds' pair / cut ratios;
 * and whether the two forms gave the same bits (run twice from the same
 * gradients).  Two OpenMP threads (wf_sgemm_pair runs its products at once
 * with exactly two; with other counts both forms are the same calls).
 * Usage: gemm_pair [ROWS C V [ROUNDS]]   (chunk rows, hidden, vocab;
 * default 512 256 50304, 15 rounds) */
#define _POSIX_C_SOURCE 199309L /* clock_gettime under -std=c11 */

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_clock.h"
#include "blas.h"
#include "internal.h"

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return v[n / 2];
}

int main(int argc, char **argv) {
    wf_blas_select(argc, argv);
    openblas_set_num_threads(1);  /* as a generated program runs: one pool, OpenMP's */
    wf_sgemm_split(1);
    int n = argc > 1 ? atoi(argv[1]) : 512, C = argc > 2 ? atoi(argv[2]) : 256;
    int V = argc > 3 ? atoi(argv[3]) : 50304, rounds = argc > 4 ? atoi(argv[4]) : 15;
    if (rounds > 99) rounds = 99;
    float *s = malloc(sizeof(float) * (size_t)n * V), *w = malloc(sizeof(float) * (size_t)V * C);
    float *x = malloc(sizeof(float) * (size_t)n * C);
    float *dx[2], *dw[2];
    if (!s || !w || !x) return 1;
    srand(1);
    for (long i = 0; i < (long)n * V; i++) s[i] = 1e-4f * ((float)rand() / RAND_MAX - 0.5f);
    for (long i = 0; i < (long)V * C; i++) w[i] = (float)rand() / RAND_MAX - 0.5f;
    for (long i = 0; i < (long)n * C; i++) x[i] = (float)rand() / RAND_MAX - 0.5f;
    for (int k = 0; k < 2; k++)
        if (!(dx[k] = calloc((size_t)n * C, sizeof(float))) || !(dw[k] = calloc((size_t)V * C, sizeof(float))))
            return 1;
    double cpu[2][99], wall[2][99], ratio[99];
    for (int r = -1; r < rounds; r++)  /* round -1 warms up */
        for (int o = 0; o < 2; o++) {
            int k = (r & 1) ? 1 - o : o;  /* 0: cut, 1: pair; the order alternates */
            double c0 = bench_clock_s(CLOCK_PROCESS_CPUTIME_ID), t0 = bench_clock_s(CLOCK_MONOTONIC);
            if (k == 0) {
                wf_sgemm(0, 0, n, C, V, 1.0f, s, V, w, C, 1.0f, dx[0], C);
                wf_sgemm(1, 0, V, C, n, 1.0f, s, V, x, C, 1.0f, dw[0], C);
            } else {
                wf_gemm gx = { 0, 0, n, C, V, 1.0f, s, V, w, C, 1.0f, dx[1], C };
                wf_gemm gw = { 1, 0, V, C, n, 1.0f, s, V, x, C, 1.0f, dw[1], C };
                wf_sgemm_pair(&gx, &gw);
            }
            if (r >= 0)
                cpu[k][r] = 1e3 * (bench_clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0), wall[k][r] = 1e3 * (bench_clock_s(CLOCK_MONOTONIC) - t0);
        }
    for (int r = 0; r < rounds; r++) ratio[r] = cpu[1][r] / cpu[0][r];
    int same = memcmp(dx[0], dx[1], sizeof(float) * (size_t)n * C) == 0 &&
               memcmp(dw[0], dw[1], sizeof(float) * (size_t)V * C) == 0;
    char desc[256];
    wf_blas_describe(desc, sizeof desc);
    printf("%s\nLM head backward products, %d rows x C %d x V %d (%.1f GFLOP), %d rounds, medians:\n", desc, n, C, V,
           4.0 * n * C * (double)V / 1e9, rounds);
    double cc = median(cpu[0], rounds), cw = median(wall[0], rounds);
    double pc = median(cpu[1], rounds), pw = median(wall[1], rounds);
    printf("cut, in turn (wf_sgemm x2): CPU %8.1f ms  wall %8.1f ms\n", cc, cw);
    printf("at once (wf_sgemm_pair)   : CPU %8.1f ms  wall %8.1f ms\n", pc, pw);
    printf("pair / cut: CPU x%.3f (median of the rounds' ratios x%.3f), wall x%.3f; %s\n", pc / cc,
           median(ratio, rounds), pw / cw, same ? "same bits" : "bits differ");
    return 0;
}
