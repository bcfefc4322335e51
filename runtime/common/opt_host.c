/* opt_host.c: AdamW's per-element loop on the host, range by range in
 * parameter order.  The CPU backend's optimizer hook is this loop; the CUDA
 * backend runs it too when the optimizer is offloaded (its moments and
 * masters then live in pinned host memory, as DeepSpeed's CPU Adam). */
#include <math.h>

#include "convert16.h"
#include "opt_backend.h"
#include "precision_bits.h"
#include "vector_clones.h"

/* one element's update, gi its (scaled) gradient */
static inline void adamw_element(float gi, float *m, float *v, float *x, float b1, float b2, float eps,
                                 float step_size, float inv_bc2_sqrt, float decay) {
    *m = b1 * *m + (1.0f - b1) * gi;
    *v = b2 * *v + (1.0f - b2) * gi * gi;
    float denom = sqrtf(*v) * inv_bc2_sqrt + eps;
    *x -= step_size * *m / denom + decay * *x;
}

WF_VECTOR_CLONES void wf_adamw_host(const wf_adamw_args *a) {
    float b1 = a->b1, b2 = a->b2, eps = a->eps, step_size = a->step_size;
    float inv_bc2_sqrt = a->inv_bc2_sqrt, grad_scale = a->grad_scale;
    for (int k = 0; k < a->t.n; k++) {
        const wf_opt_range *r = &a->t.r[k];
        if (a->skip_tied_copy && r->tied_copy) continue;
        float decay = r->decay ? a->decay : 0.0f;
        float *w = a->param16 ? NULL : a->weights + r->w, *m = a->m + r->mom, *v = a->v + r->mom;
        const float *g = a->grads16 ? NULL : a->grads + r->g;
        const uint16_t *g16 = a->grads16 ? (const uint16_t *)(const void *)a->grads + r->g : NULL;
        /* 16-bit modes update the fp32 master copy, then store it rounded */
        float *x = a->master ? a->master + r->mom : w;
        /* each element on its own: the same numbers on any thread count;
         * float gradients in a loop of their own, which vectorises (a load
         * from g or g16 chosen per element does not) */
        if (!g16)
#pragma omp parallel for simd schedule(static) if (r->n > 65536)
            for (long i = 0; i < r->n; i++)
                adamw_element(g[i] * grad_scale, m + i, v + i, x + i, b1, b2, eps, step_size, inv_bc2_sqrt,
                              decay);
        else
#pragma omp parallel for simd schedule(static) if (r->n > 65536)
            for (long i = 0; i < r->n; i++)  /* 16-bit gradients: the value the float arena held */
                adamw_element(wf_hd_16_value(a->precision, g16[i]) * grad_scale, m + i, v + i, x + i, b1, b2,
                              eps, step_size, inv_bc2_sqrt, decay);
        if (a->master && a->param16) {  /* stored as bits: the same rounding */
            wf_narrow16(a->precision, (uint16_t *)(void *)a->weights + r->w, x, r->n);
        } else if (a->master)
#pragma omp parallel for simd schedule(static) if (r->n > 65536)
            for (long i = 0; i < r->n; i++) w[i] = wf_hd_round(a->precision, x[i]);
    }
}

