/* micro_weights: what small microbatches cost the CPU runtime's linear
 * layers, in one run, side by side.  A small GPT's linears (LAYERS layers of
 * qkv C -> 3C, proj C -> C, fc1 C -> 4C, fc2 4C -> C), forward then
 * backward over MICRO sequences of T tokens: once as MICRO microbatches of
 * one sequence (batch.micro 1), once as one microbatch of all of them, in
 * alternating rounds; the process's CPU time, medians.  The same FLOPs, so
 * the difference per extra microbatch is what a microbatch costs beyond
 * them; printed next to the weight traffic compiler/simulate.c charges for
 * it (16 bytes a weight a microbatch: read forward, read backward, the
 * gradient read and written) at the given copy bandwidth (weft calibrate's
 * hbm_gbs; 0: not printed).  In a step the other ops (attention's scores,
 * the norms) pass between two uses of a weight; EVICT_MB of memory written
 * between linear calls stands for them (not timed: only the calls are).
 * Usage: micro_weights [LAYERS C T MICRO ROUNDS HBM_GBS EVICT_MB]  (4 128 128 16 5 0 0) */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_clock.h"
#include "blas.h"
#include "internal.h"



enum { SHAPES = 4 };

/* EVICT_MB of memory written before each timed call (the other ops' traffic) */
static char *evict;
static size_t evict_n;

/* the CPU time of one call, after the other ops' traffic */
#define TIMED(call)                                \
    do {                                           \
        if (evict_n) memset(evict, 1, evict_n);    \
        double t0_ = bench_cpu_s();                \
        call;                                      \
        *spent += bench_cpu_s() - t0_;             \
    } while (0)

/* one step's linears: MICRO / per microbatches of per sequences each;
 * each layer and shape its own weights and activations (an arena, as a step's) */
static void step(double *spent, int L, const int (*kn)[2], float **w, float **dw, float **b, float **db, float **x,
                 float **y, float **dx, float **dy, int T, int micro, int per) {
    for (int m = 0; m < micro / per; m++) {
        long rows = (long)T * per, off = m * rows;
        for (int i = 0; i < L * SHAPES; i++) {
            int K = kn[i % SHAPES][0], N = kn[i % SHAPES][1];
            TIMED(wf_linear_fwd(NULL, y[i] + off * N, x[i] + off * K, w[i], b[i], (int)rows, K, N));
        }
        for (int i = L * SHAPES - 1; i >= 0; i--) {
            int K = kn[i % SHAPES][0], N = kn[i % SHAPES][1];
            TIMED(wf_linear_bwd(NULL, dx[i] + off * K, dw[i], db[i], dy[i] + off * N, x[i] + off * K, w[i],
                                (int)rows, K, N));
        }
    }
}

int main(int argc, char **argv) {
    wf_blas_select(argc, argv);
    if (!getenv("OPENBLAS_NUM_THREADS")) {  /* as a generated rank with a core of its own */
        openblas_set_num_threads(1);
        wf_sgemm_split(1);
    }
    int L = argc > 1 ? atoi(argv[1]) : 4, C = argc > 2 ? atoi(argv[2]) : 128;
    int T = argc > 3 ? atoi(argv[3]) : 128, micro = argc > 4 ? atoi(argv[4]) : 16;
    int rounds = argc > 5 ? atoi(argv[5]) : 5;
    double hbm = argc > 6 ? atof(argv[6]) : 0;
    evict_n = argc > 7 ? (size_t)(atof(argv[7]) * (1 << 20)) : 0;
    if (evict_n && !(evict = malloc(evict_n))) return 1;
    if (L < 1 || C < 1 || T < 1 || micro < 2 || rounds < 1 || rounds > 99) {
        fprintf(stderr, "usage: micro_weights [LAYERS C T MICRO ROUNDS HBM_GBS EVICT_MB]\n");
        return 2;
    }
    const int kn[SHAPES][2] = { { C, 3 * C }, { C, C }, { C, 4 * C }, { 4 * C, C } };
    int n = L * SHAPES;
    float **a[8];
    for (int k = 0; k < 8; k++)
        if (!(a[k] = calloc((size_t)n, sizeof(float *)))) return 1;
    double params = 0, flops = 0;
    long rows = (long)T * micro;
    for (int i = 0; i < n; i++) {
        size_t K = (size_t)kn[i % SHAPES][0], N = (size_t)kn[i % SHAPES][1];
        size_t sz[8] = { K * N, K * N, N, N, rows * K, rows * N, rows * K, rows * N };
        for (int k = 0; k < 8; k++) {
            a[k][i] = malloc(sizeof(float) * sz[k]);
            if (!a[k][i]) return 1;
            for (size_t j = 0; j < sz[k]; j++) a[k][i][j] = (float)((j * 7 + i) % 13) * 0.01f;
        }
        params += (double)K * N;
        flops += 6.0 * rows * K * N;
    }
    double t[2][99];
    for (int r = 0; r < rounds; r++)
        for (int v = 0; v < 2; v++) {  /* v 0: MICRO microbatches of one sequence; 1: one of MICRO */
            t[v][r] = 0;
            step(&t[v][r], L, kn, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], T, micro, v ? micro : 1);
        }
    qsort(t[0], (size_t)rounds, sizeof(double), bench_cmp_double);
    qsort(t[1], (size_t)rounds, sizeof(double), bench_cmp_double);
    double small = t[0][rounds / 2], big = t[1][rounds / 2], extra = (small - big) / (micro - 1);
    printf("%d layers, C %d, %d sequences of %d tokens (%.1f GFLOP), %.0f MiB between calls, CPU s medians of %d "
           "rounds:\n", L, C, micro, T, flops / 1e9, evict_n / 1048576.0, rounds);
    printf("  %d microbatches of 1: %.4f s   1 microbatch of %d: %.4f s   ratio %.3f\n", micro, small, micro, big,
           small / big);
    printf("  an extra microbatch costs %.3f ms (%.1f us a linear)", extra * 1e3, extra * 1e6 / n);
    if (hbm > 0) printf("; its weights' traffic at %.2f GB/s: %.3f ms", hbm, 16.0 * params / (hbm * 1e9) * 1e3);
    printf("\n");
    return 0;
}
