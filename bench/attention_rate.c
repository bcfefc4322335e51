/* attention_rate.c: milliseconds and TFLOP/s of the CUDA attention kernels
 * (runtime/cuda/attention.cu) on one shape, for a machine with a GPU:
 *
 *   build/bench/attention_rate [B T C H [REPEATS]]   (default: GPT-2 124M's
 *                                                     16 1024 768 12, 20)
 *
 * The kernel wrappers synchronize before they return, so wall time per call
 * is kernel time.  FLOPs count the useful causal work, the half of the T x T
 * score products on or below the diagonal: forward 2 products (QK^T, PV),
 * backward 5 (recomputed QK^T, dP, dV, dQ, dK); the kernels do a little more
 * (backward recomputes QK^T and dP in each of its two passes). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "weft/rt.h"

void *wf_backend_alloc(const wf_ctx *c, size_t bytes); /* runtime/common/internal.h; NULL: no context */

static float *random_buf(long n, unsigned *seed) {
    float *x = wf_backend_alloc(NULL, sizeof(float) * (size_t)n);
    if (!x) { fprintf(stderr, "attention_rate: out of memory\n"); exit(1); }
    for (long i = 0; i < n; i++) x[i] = (float)rand_r(seed) / RAND_MAX - 0.5f;
    return x;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

int main(int argc, char **argv) {
    int B = 16, T = 1024, C = 768, H = 12, reps = 20;
    if (argc >= 5) B = atoi(argv[1]), T = atoi(argv[2]), C = atoi(argv[3]), H = atoi(argv[4]);
    if (argc >= 6) reps = atoi(argv[5]);
    if (B < 1 || T < 1 || H < 1 || C % H || reps < 1) {
        fprintf(stderr, "usage: attention_rate [B T C H [REPEATS]]\n");
        return 2;
    }
    unsigned seed = 1;
    long n = (long)B * T;
    float *qkv = random_buf(n * 3 * C, &seed), *dout = random_buf(n * C, &seed);
    float *out = random_buf(n * C, &seed), *dqkv = random_buf(n * 3 * C, &seed);
    float *lse = random_buf((long)B * H * T, &seed), *scratch = random_buf((long)B * H * T, &seed);

    wf_attention_fwd(NULL, out, lse, qkv, B, T, C, H); /* warm-up */
    wf_attention_bwd(NULL, dqkv, scratch, dout, qkv, out, lse, B, T, C, H);
    double t0 = now();
    for (int r = 0; r < reps; r++) wf_attention_fwd(NULL, out, lse, qkv, B, T, C, H);
    double t1 = now();
    for (int r = 0; r < reps; r++) wf_attention_bwd(NULL, dqkv, scratch, dout, qkv, out, lse, B, T, C, H);
    double t2 = now();

    double fwd = (t1 - t0) / reps, bwd = (t2 - t1) / reps;
    double product = 2.0 * B * H * (T * (T + 1.0) / 2) * (C / H); /* one causal T x T x hs product */
    printf("attention B %d T %d C %d H %d (head size %d), %d repeats\n", B, T, C, H, C / H, reps);
    printf("forward  %9.3f ms  %7.2f TFLOP/s\n", 1e3 * fwd, 2 * product / fwd * 1e-12);
    printf("backward %9.3f ms  %7.2f TFLOP/s\n", 1e3 * bwd, 5 * product / bwd * 1e-12);
    printf("tokens/s through attention alone (one layer, forward + backward): %.0f\n", n / (fwd + bwd));
    return 0;
}
