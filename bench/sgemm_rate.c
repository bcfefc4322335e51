/* sgemm_rate: the sgemm rate OpenBLAS reaches here, for the GEMM shapes of a
 * GPT step, with the same kernel selection the runtime makes.
 * Usage: sgemm_rate N C V   (tokens per microbatch, hidden width, vocab) */
#include <stdio.h>
#include <stdlib.h>

#include "blas.h"
#include "internal.h"


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
        double r = wf_sgemm_rate(shapes[i].M, shapes[i].N, shapes[i].K, 5);
        if (i + 1 < sizeof shapes / sizeof *shapes) sum += r;
        printf("sgemm %s %5d x %5d x %5d: %6.1f GFLOP/s\n", shapes[i].what, shapes[i].M,
               shapes[i].N, shapes[i].K, r);
    }
    printf("sgemm mean over the model's shapes: %.1f GFLOP/s\n", sum / 5);
    return 0;
}
