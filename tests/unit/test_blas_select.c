/* test_blas_select: the runtime overrides OpenBLAS's kernel choice exactly
 * when the library's guess is weaker than the CPU's feature flags allow. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

static int failures, checks;

static void expect(const char *core, const char *want) {
    const char *flags = "";
    const char *got = wf_blas_better_core(core, &flags);
    checks++;
    int ok = (got == NULL && want == NULL) || (got && want && strcmp(got, want) == 0);
    if (!ok) failures++;
    printf("%s library guess %-12s -> %s (flags %s)\n", ok ? "ok  " : "FAIL", core,
           got ? got : "keep", flags);
}

int main(void) {
    __builtin_cpu_init();
    int avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                 __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
    int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    const char *best = avx512 ? "SkylakeX" : avx2 ? "Haswell" : NULL;
    /* a mis-detected virtual CPU: old SSE kernels are replaced */
    expect("Prescott", best);
    expect("Core2", best);
    expect("Nehalem", best);
    /* a guess that already uses the flags is kept, whatever its case */
    if (avx512) {
        expect("SkylakeX", NULL);
        expect("COOPERLAKE", NULL);
        expect("Haswell", "SkylakeX");   /* AVX2 kernels on an AVX-512 CPU */
    } else if (avx2) {
        expect("Haswell", NULL);
        expect("Zen", NULL);
    }
    printf("%d passed, %d failed\n", checks - failures, failures);
    return failures != 0;
}
