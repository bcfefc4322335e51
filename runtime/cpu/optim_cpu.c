/* optim_cpu.c: the optimizer's per-element loops on the host (opt_backend.h),
 * range by range in parameter order.  AdamW's are the same operations in the
 * same order as they always ran; the gradient norm's sum of squares is
 * summed in fixed blocks and lanes (the same on any thread count). */
#include <math.h>

#include "opt_backend.h"
#include "precision_bits.h"
#include "vector_clones.h"

void wf_backend_adamw(wf_ctx *c, const wf_adamw_args *a) {
    (void)c;
    wf_adamw_host(a);
}

/* The squares of a block of at most SUMSQ_BLOCK gradients, in SUMSQ_LANES
 * partial sums (independent vector additions, not one chain of dependent
 * ones) added in a fixed order. */
enum { SUMSQ_LANES = 8, SUMSQ_BLOCK = 1 << 16, SUMSQ_GROUP = 64 };

WF_VECTOR_CLONES static double block_sumsq(const float *g, long n) {
    double part[SUMSQ_LANES] = { 0 }, sum = 0;
    long i = 0;
    for (; i + SUMSQ_LANES <= n; i += SUMSQ_LANES)
        for (int l = 0; l < SUMSQ_LANES; l++) part[l] += (double)g[i + l] * g[i + l];
    for (; i < n; i++) sum += (double)g[i] * g[i];
    for (int l = 0; l < SUMSQ_LANES; l++) sum += part[l];
    return sum;
}

/* The same on 16-bit values (grad16): the same sums of the same values in
 * the same order, so the same norm as the float arena's, bit for bit */
WF_VECTOR_CLONES static double block_sumsq16(const uint16_t *g, long n, int precision) {
    double part[SUMSQ_LANES] = { 0 }, sum = 0;
    long i = 0;
    for (; i + SUMSQ_LANES <= n; i += SUMSQ_LANES)
        for (int l = 0; l < SUMSQ_LANES; l++) {
            double v = wf_hd_16_value(precision, g[i + l]);
            part[l] += v * v;
        }
    for (; i < n; i++) {
        double v = wf_hd_16_value(precision, g[i]);
        sum += v * v;
    }
    for (int l = 0; l < SUMSQ_LANES; l++) sum += part[l];
    return sum;
}

/* Blocks of fixed size, summed over the threads and then in block order:
 * the same number on any thread count (a single running double sum was one
 * dependent addition per element, ~4 cycles each: 25 ms a step for 16M
 * gradients).  g16: the gradients are 16-bit bits of `precision` at grads. */
static double sumsq(const wf_opt_table *t, const void *grads, int g16, int precision) {
    double sum = 0;
    for (int k = 0; k < t->n; k++) {
        if (!t->r[k].in_norm) continue;
        long off = t->r[k].g, n = t->r[k].n, blocks = (n + SUMSQ_BLOCK - 1) / SUMSQ_BLOCK;
        for (long b0 = 0; b0 < blocks; b0 += SUMSQ_GROUP) {
            double part[SUMSQ_GROUP];
            int nb = blocks - b0 < SUMSQ_GROUP ? (int)(blocks - b0) : SUMSQ_GROUP;
#pragma omp parallel for schedule(static) if (nb > 1)
            for (int b = 0; b < nb; b++) {
                long lo = (b0 + b) * SUMSQ_BLOCK, len = n - lo < SUMSQ_BLOCK ? n - lo : SUMSQ_BLOCK;
                part[b] = g16 ? block_sumsq16((const uint16_t *)grads + off + lo, len, precision)
                              : block_sumsq((const float *)grads + off + lo, len);
            }
            for (int b = 0; b < nb; b++) sum += part[b];
        }
    }
    return sum;
}

double wf_backend_sumsq(wf_ctx *c, const wf_opt_table *t, const float *grads) {
    (void)c;
    return sumsq(t, grads, 0, WF_FP32);
}

double wf_backend_sumsq16(wf_ctx *c, const wf_opt_table *t, const void *grads, int precision) {
    (void)c;
    return sumsq(t, grads, 1, precision);
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


int wf_backend_nonfinite16(wf_ctx *c, const wf_opt_table *t, const void *grads, int precision) {
    (void)c;
    for (int k = 0; k < t->n; k++) {
        const uint16_t *x = (const uint16_t *)grads + t->r[k].g;
        for (long i = 0; i < t->r[k].n; i++)
            if (!isfinite(wf_hd_16_value(precision, x[i]))) return 1;
    }
    return 0;
}
