/* test_sgemm_cut: wf_sgemm cut over 2 to 5 OpenMP threads (blas.c's one-pool
 * mode) must give the bits of one cblas_sgemm computing the whole product,
 * so that results do not depend on the thread count.  OpenBLAS's kernels
 * round by where a tile falls relative to a call's edges, and each kernel set
 * differently, so the check runs under every kernel set this CPU can run:
 * the library's own choice in this process, then one child process per
 * forced OPENBLAS_CORETYPE (read only when the library loads), whose log line
 * must name the core it asked for (OpenBLAS ignores a name it does not take).
 * Shapes: every transpose pair; rows that are and are not multiples of the
 * cut's blocks; products just over the gate (small parts); K over OpenBLAS's
 * K block (several passes over C); N over M (the cut used to take the
 * columns there); beta = 1 and 0.  Exact equality: the same sums. */
#include <cblas.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include "blas.h"
#include "sgemm_case.h"

/* elements of C (padding included) where the cut over 2..5 threads differs
 * from the whole product */
static long differ(int ta, int tb, int M, int N, int K, float beta) {
    sgemm_case c = sgemm_case_make(ta, tb, M, N, K, 3u);
    float *W = malloc(sizeof(float) * c.nc), *P = malloc(sizeof(float) * c.nc);
    if (!W || !P) abort();
    memcpy(W, c.C0, sizeof(float) * c.nc);
    wf_sgemm_split(0);  /* the whole product, OpenBLAS on one thread */
    wf_sgemm(ta, tb, M, N, K, 0.75f, c.A, c.lda, c.B, c.ldb, beta, W, c.ldc);
    wf_sgemm_split(1);
    long bad = 0;
    for (int t = 2; t <= 5; t++) {
        omp_set_num_threads(t);
        memcpy(P, c.C0, sizeof(float) * c.nc);
        wf_sgemm(ta, tb, M, N, K, 0.75f, c.A, c.lda, c.B, c.ldb, beta, P, c.ldc);
        for (size_t i = 0; i < c.nc; i++) bad += memcmp(&W[i], &P[i], sizeof(float)) != 0;
    }
    sgemm_case_free(&c);
    free(W), free(P);
    return bad;
}

/* every shape and transpose pair under the kernels this process loaded */
static int check_all(void) {
    static const int shapes[][4] = {
        { 301, 267, 129, 1 },   /* rows not a multiple of the blocks */
        { 200, 1517, 197, 0 },  /* N over M: one block a part at most */
        { 512, 256, 600, 1 },   /* K over OpenBLAS's K block */
        { 1000, 300, 64, 1 },
        { 4100, 40, 300, 0 },
        { 780, 100, 110, 1 },   /* just over the 8 MFLOP gate for two parts, not three */
        { 50, 1000, 400, 0 },   /* two blocks of rows and a remainder */
    };
    openblas_set_num_threads(1);
    const char *core = openblas_get_corename();
    int ok = 1;
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++) {
                const int *s = shapes[k];
                long bad = differ(ta, tb, s[0], s[1], s[2], (float)s[3]);
                if (bad)
                    printf("sgemm cut  core %s  ta %d tb %d  M %4d N %4d K %3d: %ld elements differ  FAIL\n", core,
                           ta, tb, s[0], s[1], s[2], bad);
                ok &= bad == 0;
            }
    printf("sgemm cut  core %s: the cut over 2-5 threads %s the whole product's bits on every shape\n", core,
           ok ? "gives" : "does NOT give");
    return ok;
}

int main(int argc, char **argv) {
    if (argc == 2) {  /* child: the core asked for must be the one loaded */
        const char *core = openblas_get_corename();
        if (!core || strcasecmp(core, argv[1]) != 0) {
            printf("sgemm cut  OPENBLAS_CORETYPE=%s but the library runs %s  FAIL\n", argv[1], core ? core : "?");
            return 1;
        }
        return !check_all();
    }
    int ok = check_all();
    __builtin_cpu_init();
    int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    int avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                 __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
    const char *cores[] = { avx2 ? "Haswell" : NULL, avx2 ? "Zen" : NULL, avx512 ? "SkylakeX" : NULL };
    for (int c = 0; c < 3; c++) {
        if (!cores[c]) continue;
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            setenv("OPENBLAS_CORETYPE", cores[c], 1);
            execl("/proc/self/exe", argv[0], cores[c], (char *)NULL);
            _exit(127);
        }
        int st = 0;
        ok &= pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
    }
    printf(ok ? "test_sgemm_cut: all passed\n" : "test_sgemm_cut: FAILED\n");
    return !ok;
}
