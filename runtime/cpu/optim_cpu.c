/* optim_cpu.c: the optimizer's per-element loops on the host (opt_backend.h),
 * range by range in parameter order: the same operations in the same order
 * as they always ran, so CPU results are unchanged bit for bit. */
#include <math.h>

#include "opt_backend.h"
#include "precision_bits.h"

void wf_backend_adamw(wf_ctx *c, const wf_adamw_args *a) {
    (void)c;
    wf_adamw_host(a);
}

double wf_backend_sumsq(wf_ctx *c, const wf_opt_table *t, const float *grads) {
    (void)c;
    double sum = 0;
    for (int k = 0; k < t->n; k++) {
        if (!t->r[k].in_norm) continue;
        const float *g = grads + t->r[k].g;
        for (long i = 0; i < t->r[k].n; i++) sum += (double)g[i] * g[i];
    }
    return sum;
}

int wf_backend_nonfinite(wf_ctx *c, const wf_opt_table *t, const float *grads) {
    (void)c;
    for (int k = 0; k < t->n; k++) {
        const float *g = grads + t->r[k].g;
        for (long i = 0; i < t->r[k].n; i++)
            if (!isfinite(g[i])) return 1;
    }
    return 0;
}
