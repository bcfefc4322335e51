/* optim_cpu.c: the optimizer's per-element loops on the host (opt_backend.h),
 * range by range in parameter order: the same operations in the same order
 * as they always ran, so CPU results are unchanged bit for bit. */
#include <math.h>

#include "opt_backend.h"
#include "precision_bits.h"

void wf_backend_adamw(wf_ctx *c, const wf_adamw_args *a) {
    (void)c;
    float b1 = a->b1, b2 = a->b2, eps = a->eps, step_size = a->step_size;
    float inv_bc2_sqrt = a->inv_bc2_sqrt, grad_scale = a->grad_scale;
    for (int k = 0; k < a->t.n; k++) {
        const wf_opt_range *r = &a->t.r[k];
        if (a->skip_tied_copy && r->tied_copy) continue;
        float decay = r->decay ? a->decay : 0.0f;
        float *w = a->weights + r->w, *m = a->m + r->mom, *v = a->v + r->mom;
        const float *g = a->grads + r->g;
        /* 16-bit modes update the fp32 master copy, then store it rounded */
        float *x = a->master ? a->master + r->mom : w;
        for (long i = 0; i < r->n; i++) {
            float gi = g[i] * grad_scale;
            m[i] = b1 * m[i] + (1.0f - b1) * gi;
            v[i] = b2 * v[i] + (1.0f - b2) * gi * gi;
            float denom = sqrtf(v[i]) * inv_bc2_sqrt + eps;
            x[i] -= step_size * m[i] / denom + decay * x[i];
        }
        if (a->master)
            for (long i = 0; i < r->n; i++) w[i] = wf_hd_round(a->precision, x[i]);
    }
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
