/* gemm_beta: what a GEMM's first write into a gradient or output costs in
 * each of the forms a step could use, side by side in one run (issue 22's
 * "fewer passes over memory"):
 *   zero + add : memset C, then C += A B (beta 1): how the step writes a
 *                gradient today (wf_zero / wf_zero_grads_clear, then the
 *                backward kernels accumulate)
 *   beta 0     : C = A B in one call (what the first writer of a step could
 *                do instead of the memset)
 *   beta 0 cut : the same in slices of about 1 MiB of C each, so that
 *                OpenBLAS's zeroing of C (sgemm_beta, which it runs whenever
 *                beta != 1, beta 0 included) and the kernel's writes could
 *                meet in cache
 * for the GEMM shapes of the tiny GPT's step that write a large C (the LM
 * head's logits and weight gradient per chunk of rows, an MLP's output and
 * weight gradient).  Each through wf_sgemm with the runtime's thread split,
 * as a generated program runs them; rounds interleave the forms so that a
 * machine's load hits all alike; the process's CPU time (all threads), medians.
 * It also checks that the three forms give the same bits (OpenBLAS zeroes C
 * and adds into it for beta 0 too, so every form stores 0 + the product;
 * the sliced form only with kernels whose rounding does not depend on where
 * a slice starts: the AVX-512 ones, not always the Haswell ones, blas.c).
 * Usage: gemm_beta [N C V CHUNK [ROUNDS]]   (tokens per microbatch, hidden,
 * vocab, LM head rows per chunk; default 1024 256 50304 512, 7 rounds) */
#define _POSIX_C_SOURCE 199309L /* clock_gettime under -std=c11 */

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_clock.h"
#include "blas.h"
#include "internal.h"

enum { ZERO_ADD, BETA0, BETA0_CUT, FORMS };
static const char *const FORM_NAME[FORMS] = { "zero + add", "beta 0", "beta 0 cut" };

typedef struct {
    const char *what;
    int ta, tb, M, N, K;
} shape;



/* C (M, N) row-major from A and B as the shape reads them */
static void run_form(int form, const shape *s, const float *A, const float *B, float *C) {
    int lda = s->ta ? s->M : s->K, ldb = s->tb ? s->K : s->N;
    if (form == ZERO_ADD) {
        memset(C, 0, sizeof(float) * (size_t)s->M * s->N);
        wf_sgemm(s->ta, s->tb, s->M, s->N, s->K, 1.0f, A, lda, B, ldb, 1.0f, C, s->N);
    } else if (form == BETA0) {
        wf_sgemm(s->ta, s->tb, s->M, s->N, s->K, 1.0f, A, lda, B, ldb, 0.0f, C, s->N);
    } else {
        /* slices of C along its longer side (as wf_sgemm's thread split
         * cuts): about 1 MiB of C each, whole 16s */
        int rows = s->M >= s->N, len = rows ? s->M : s->N, other = rows ? s->N : s->M;
        int step = (int)((1L << 18) / other) / 16 * 16;
        if (step < 16) step = 16;
        for (int lo = 0; lo < len; lo += step) {
            int n = len - lo < step ? len - lo : step;
            if (rows)  /* op(A) rows lo.., C rows lo.. */
                wf_sgemm(s->ta, s->tb, n, s->N, s->K, 1.0f, s->ta ? A + lo : A + (long)lo * lda, lda, B, ldb,
                         0.0f, C + (long)lo * s->N, s->N);
            else       /* op(B) columns lo.., C columns lo.. */
                wf_sgemm(s->ta, s->tb, s->M, n, s->K, 1.0f, A, lda, s->tb ? B + (long)lo * ldb : B + lo, ldb,
                         0.0f, C + lo, s->N);
        }
    }
}

int main(int argc, char **argv) {
    wf_blas_select(argc, argv);
    if (!getenv("OPENBLAS_NUM_THREADS")) {  /* one pool, OpenMP's, as a generated program runs */
        openblas_set_num_threads(1);
        wf_sgemm_split(1);
    }
    int N = argc > 1 ? atoi(argv[1]) : 1024, C = argc > 2 ? atoi(argv[2]) : 256;
    int V = argc > 3 ? atoi(argv[3]) : 50304, chunk = argc > 4 ? atoi(argv[4]) : 512;
    int rounds = argc > 5 ? atoi(argv[5]) : 7;
    shape shapes[] = {
        { "LM head logits (chunk)", 0, 1, chunk, V, C },  /* written with beta 0 today */
        { "LM head dwte (chunk)  ", 1, 0, V, C, chunk },  /* zeroed each step today */
        { "MLP fc output         ", 0, 0, N, 4 * C, C },  /* beta 0 today */
        { "MLP fc weight grad    ", 1, 0, C, 4 * C, N },  /* zeroed each step today */
    };
    int n_shapes = (int)(sizeof shapes / sizeof *shapes);
    char desc[256];
    wf_blas_describe(desc, sizeof desc);
    printf("%s\n%d rounds, CPU ms per GEMM (all threads), medians; ratios against zero + add\n", desc, rounds);
    for (int i = 0; i < n_shapes; i++) {
        const shape *s = &shapes[i];
        long na = (long)s->M * s->K, nb = (long)s->K * s->N, nc = (long)s->M * s->N;
        float *A = malloc(sizeof(float) * (size_t)na), *B = malloc(sizeof(float) * (size_t)nb);
        float *out[FORMS];
        double *ms = malloc(sizeof(double) * FORMS * (size_t)rounds);
        if (!A || !B || !ms) return 1;
        for (int f = 0; f < FORMS; f++)
            if (!(out[f] = calloc((size_t)nc, sizeof(float)))) return 1;
        srand(i + 1);
        for (long k = 0; k < na; k++) A[k] = (float)rand() / RAND_MAX - 0.5f;
        for (long k = 0; k < nb; k++) B[k] = (float)rand() / RAND_MAX - 0.5f;
        for (int r = -1; r < rounds; r++)  /* round -1 warms up */
            for (int f = 0; f < FORMS; f++) {
                double t0 = bench_cpu_s();
                run_form(f, s, A, B, out[f]);
                if (r >= 0) ms[f * rounds + r] = 1e3 * (bench_cpu_s() - t0);
            }
        int same = memcmp(out[ZERO_ADD], out[BETA0], sizeof(float) * (size_t)nc) == 0 &&
                   memcmp(out[ZERO_ADD], out[BETA0_CUT], sizeof(float) * (size_t)nc) == 0;
        printf("%s %5d x %5d x %5d (C %6.1f MiB):", s->what, s->M, s->N, s->K, 4.0 * nc / 1048576);
        double base = 0;
        for (int f = 0; f < FORMS; f++) {
            qsort(ms + f * rounds, (size_t)rounds, sizeof(double), bench_cmp_double);
            double m = ms[f * rounds + rounds / 2];
            if (f == ZERO_ADD) base = m;
            printf("  %s %7.2f ms", FORM_NAME[f], m);
            if (f != ZERO_ADD) printf(" (x%.3f)", m / base);
        }
        printf("  %s\n", same ? "same bits" : "BITS DIFFER");
        for (int f = 0; f < FORMS; f++) free(out[f]);
        free(A), free(B), free(ms);
    }
    return 0;
}
