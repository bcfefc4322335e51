/* blas_select.c: make OpenBLAS run the kernels this CPU can run.
 *
 * A DYNAMIC_ARCH OpenBLAS picks its kernels from CPUID when the library loads.
 * On some virtual CPUs it misreads the model and falls back to old SSE3
 * kernels (seen: an AVX-512 machine taken for a Prescott, 4-5x slower sgemm).
 * The library only reads OPENBLAS_CORETYPE at load time, so when its guess is
 * weaker than the CPU's feature flags allow, we set the variable and re-exec
 * this program once, before MPI is initialized.  The user's own
 * OPENBLAS_CORETYPE is always respected. */
#include <cblas.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "blas.h"
#include "internal.h"

static const char *const AVX512_CORES[] = { "skylakex", "cooperlake", "sapphirerapids", NULL };
static const char *const AVX2_CORES[] = { "haswell", "zen", "skylakex", "cooperlake",
                                          "sapphirerapids", NULL };

static int listed(const char *core, const char *const *list) {
    for (; *list; list++)
        if (strcasecmp(core, *list) == 0) return 1;
    return 0;
}

/* The best core type the feature flags allow, or NULL when the library's own
 * choice already uses them. */
const char *wf_blas_better_core(const char *core, const char **flags) {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")) {
        *flags = "avx512f/bw/vl/dq";
        return listed(core, AVX512_CORES) ? NULL : "SkylakeX";
    }
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        *flags = "avx2/fma";
        return listed(core, AVX2_CORES) ? NULL : "Haswell";
    }
    return NULL;
}

void wf_blas_select(int argc, char **argv) {
    (void)argc;
    if (getenv("OPENBLAS_CORETYPE") || getenv("WEFT_BLAS_GUESS")) return;
    const char *flags = "";
    const char *core = openblas_get_corename();
    const char *want = wf_blas_better_core(core ? core : "", &flags);
    if (!want) return;
    setenv("OPENBLAS_CORETYPE", want, 1);
    setenv("WEFT_BLAS_GUESS", core ? core : "unknown", 1);  /* for the log; stops loops */
    execv("/proc/self/exe", argv);
    /* exec failed: run on with the library's choice, and say so in the log */
    unsetenv("OPENBLAS_CORETYPE");
}

void wf_blas_describe(char *out, size_t n) {
    const char *guess = getenv("WEFT_BLAS_GUESS");
    const char *core = openblas_get_corename();
    if (guess)
        snprintf(out, n, "blas: OpenBLAS core %s (chosen from CPU flags; the library guessed %s)",
                 core, guess);
    else if (getenv("OPENBLAS_CORETYPE"))
        /* OpenBLAS ignores a name it does not know and runs its own choice */
        snprintf(out, n, "blas: OpenBLAS core %s (OPENBLAS_CORETYPE=%s from the environment%s)",
                 core, getenv("OPENBLAS_CORETYPE"),
                 strcasecmp(core, getenv("OPENBLAS_CORETYPE")) == 0
                     ? "" : ", which the library did not honour");
    else
        snprintf(out, n, "blas: OpenBLAS core %s (the library's own choice)", core);
    size_t len = strlen(out);
    if (getenv("OPENBLAS_NUM_THREADS"))
        snprintf(out + len, n - len, ", %d BLAS and %d OpenMP thread(s) per rank",
                 openblas_get_num_threads(), omp_get_max_threads());
    else
        snprintf(out + len, n - len, ", %d OpenMP thread(s) per rank, GEMMs split over them",
                 omp_get_max_threads());
    /* launch.sh's choice (compiler/omp_wait.c), or the user's */
    const char *wait = getenv("OMP_WAIT_POLICY");
    len = strlen(out);
    if (omp_get_max_threads() > 1 && wait && *wait)
        snprintf(out + len, n - len, ", idle threads %s (OMP_WAIT_POLICY=%s)",
                 strcasecmp(wait, "active") == 0 ? "spin" : strcasecmp(wait, "passive") == 0 ? "sleep" : "as OpenMP decides",
                 wait);
    len = strlen(out);
    snprintf(out + len, n - len, "%s", wf_bind_note());
}

/* Ranks on one node share its cores: give each an equal share of threads. */
void wf_blas_threads(const wf_ctx *c) {
    MPI_Comm node;
    int local = 1, me = 0, split = 0;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, c->rank, MPI_INFO_NULL, &node) ==
        MPI_SUCCESS) {
        MPI_Comm_size(node, &local);
        MPI_Comm_rank(node, &me);
        split = 1;
    }
    long cores = wf_bind_cpus();  /* those this process may run on (taskset, cpusets) */
    int threads = (int)(cores / local);
    if (threads < 1) threads = 1;
    /* the user's OPENBLAS_NUM_THREADS / OMP_NUM_THREADS win; without the
     * first, one pool (OpenMP's) runs GEMMs and everything else (blas.c) */
    if (!getenv("OMP_NUM_THREADS")) omp_set_num_threads(threads);
    if (!getenv("OPENBLAS_NUM_THREADS")) {
        openblas_set_num_threads(1);
        wf_sgemm_split(1);
    }
    /* more ranks than cores: a core each, a stage's ranks apart (bind.c) */
    if (split) {
        wf_bind_ranks(c, node, me, local);
        MPI_Comm_free(&node);
    }
}
