/* optim_rate: what the CPU runtime's optimizer step costs per parameter, next
 * to the memory copy rate weft-calibrate measures, in one run, side by side.
 * A GPT's parameters as ranges of 65536 values (the runtime's largest in a
 * small GPT; its loops go parallel only above that, so one thread), over
 * PARAMS values: AdamW (opt_host.c), the gradient norm's sum of squares
 * (optim_cpu.c) and the gradients zeroed (backend_host.c), each timed alone
 * in the thread's CPU time, the least of ROUNDS, with EVICT_MB written
 * between calls (the step's activations pass through the caches before the
 * optimizer runs), alternating with weft-calibrate's copy (64 MiB, read and
 * written).  Prints ns per parameter of each part and the bytes a parameter
 * the step moves at the copy rate would take as long: what
 * compiler/simulate.c charges (weft calibrate's optimizer_ns).
 * Usage: optim_rate [PARAMS ROUNDS EVICT_MB]   (defaults 480000 9 64) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_clock.h"
#include "internal.h"
#include "opt_backend.h"

/* this thread's CPU time */
static double cpu_now(void) { return bench_clock_s(CLOCK_THREAD_CPUTIME_ID); }

static char *evict;
static size_t evict_n;

#define LEAST(best, call)                        \
    do {                                         \
        if (evict_n) memset(evict, 1, evict_n);  \
        double t0_ = cpu_now();                  \
        call;                                    \
        double t_ = cpu_now() - t0_;             \
        if (t_ < (best)) (best) = t_;            \
    } while (0)

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 480000;
    int rounds = argc > 2 ? atoi(argv[2]) : 9;
    evict_n = (size_t)(argc > 3 ? atol(argv[3]) : 64) << 20;
    if (n < 1 || rounds < 1) {
        fprintf(stderr, "usage: optim_rate [PARAMS ROUNDS EVICT_MB]\n");
        return 2;
    }
    evict = evict_n ? malloc(evict_n) : NULL;
    enum { RANGE = 65536 };
    int nr = (int)((n + RANGE - 1) / RANGE);
    wf_opt_range *r = calloc((size_t)nr, sizeof *r);
    for (int k = 0; k < nr; k++) {
        long lo = (long)k * RANGE, len = n - lo < RANGE ? n - lo : RANGE;
        r[k] = (wf_opt_range){ .start = lo, .n = len, .w = lo, .g = lo, .mom = lo, .decay = 1, .in_norm = 1 };
    }
    float *w = calloc((size_t)n, 4), *g = calloc((size_t)n, 4), *m = calloc((size_t)n, 4), *v = calloc((size_t)n, 4);
    size_t cn = (size_t)64 << 20;
    char *ca = malloc(cn), *cb = malloc(cn);
    memset(ca, 1, cn);
    memset(cb, 2, cn);
    for (long i = 0; i < n; i++) w[i] = 0.01f * (float)(i % 7), g[i] = 1e-3f * (float)(i % 5);
    wf_adamw_args a = { .t = { r, nr, n }, .weights = w, .grads = g, .m = m, .v = v, .b1 = 0.9f, .b2 = 0.95f,
                        .eps = 1e-8f, .step_size = 1e-3f, .inv_bc2_sqrt = 1.0f, .grad_scale = 1.0f, .decay = 1e-4f };
    double adamw = 1e30, norm = 1e30, zero = 1e30, copy = 1e30, sink = 0;
    for (int k = 0; k < rounds; k++) {
        LEAST(adamw, wf_adamw_host(&a));
        LEAST(norm, sink += wf_backend_sumsq(NULL, &a.t, g));
        LEAST(zero, wf_backend_zero(NULL, g, sizeof(float) * (size_t)n));
        for (long i = 0; i < n; i += 1024) g[i] = 1e-3f;  /* not all zero for the next round */
        double t0 = cpu_now();
        memcpy(cb, ca, cn);
        double t = cpu_now() - t0;
        if (t < copy) copy = t;
    }
    double gbs = 2.0 * cn / copy / 1e9, ns = 1e9 / n;
    printf("%ld parameters, %d rounds, %zu MiB written between calls (sum %g)\n", n, rounds, evict_n >> 20,
           sink > 0 ? 1.0 : 0.0);
    printf("copy %.2f GB/s (weft-calibrate's hbm_gbs)\n", gbs);
    printf("ns per parameter: adamw %.3f, norm %.3f, zero %.3f, step %.3f\n", adamw * ns, norm * ns, zero * ns,
           (adamw + norm + zero) * ns);
    printf("bytes a parameter at the copy rate: adamw %.1f, norm %.1f, zero %.1f, step %.1f "
           "(the byte model: 24 + 4 + 4 + 4 = 36)\n", adamw * ns * gbs, norm * ns * gbs, zero * ns * gbs,
           (adamw + norm + zero) * ns * gbs);
    free(w); free(g); free(m); free(v); free(r); free(ca); free(cb); free(evict);
    return 0;
}
