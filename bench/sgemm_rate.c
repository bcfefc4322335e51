/* sgemm_rate: the sgemm rate OpenBLAS reaches here, for the GEMM shapes of a
 * GPT step, with the same kernel selection the runtime makes.
 * Usage: sgemm_rate N C V   (tokens per microbatch, hidden width, vocab) */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "blas.h"
#include "internal.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* GFLOP/s of out(M,N) = A(M,K) @ B(K,N), best of a few repetitions. */
static double rate(int M, int N, int K) {
    float *a = malloc(sizeof(float) * (size_t)M * K), *b = malloc(sizeof(float) * (size_t)K * N);
    float *c = malloc(sizeof(float) * (size_t)M * N);
    for (long i = 0; i < (long)M * K; i++) a[i] = (float)(i % 7) * 0.1f;
    for (long i = 0; i < (long)K * N; i++) b[i] = (float)(i % 5) * 0.1f;
    double best = 1e30;
    for (int rep = 0; rep < 5; rep++) {
        double t0 = now_s();
        wf_sgemm(0, 0, M, N, K, 1.0f, a, K, b, N, 0.0f, c, N);
        double t = now_s() - t0;
        if (t < best) best = t;
    }
    free(a); free(b); free(c);
    return 2.0 * M * N * K / best / 1e9;
}

int main(int argc, char **argv) {
    wf_blas_select(argc, argv);
    int N = argc > 1 ? atoi(argv[1]) : 1024, C = argc > 2 ? atoi(argv[2]) : 256;
    int V = argc > 3 ? atoi(argv[3]) : 50304;
    char desc[256];
    wf_blas_describe(desc, sizeof desc);
    printf("%s\n", desc);
    struct { const char *what; int M, N, K; } shapes[] = {
        { "qkv     ", N, 3 * C, C }, { "attn out", N, C, C }, { "mlp fc  ", N, 4 * C, C },
        { "mlp proj", N, C, 4 * C }, { "lm head ", N, V, C }, { "square  ", 1024, 1024, 1024 },
    };
    double sum = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        double r = rate(shapes[i].M, shapes[i].N, shapes[i].K);
        if (i + 1 < sizeof shapes / sizeof *shapes) sum += r;
        printf("sgemm %s %5d x %5d x %5d: %6.1f GFLOP/s\n", shapes[i].what, shapes[i].M,
               shapes[i].N, shapes[i].K, r);
    }
    printf("sgemm mean over the model's shapes: %.1f GFLOP/s\n", sum / 5);
    return 0;
}
