/* kernels_fused.c: the fused residual add + layernorm of weft/rt.h.
 *
 * Row by row: the residual row is formed, rounded to the plan's 16-bit type
 * and normalized while it is still in cache, so the sum is written once and
 * never read back.  The arithmetic is that of wf_layernorm_fwd and
 * wf_layernorm_bwd_input (kernels.c, kernels_split.c) operation for
 * operation, so the fused op gives bit for bit what the unfused pair does
 * (test_kernels checks this). */
#include "weft/rt.h"

#include <math.h>

#include "layernorm_row.h"

#define LN_EPS 1e-5

/* The value a 16-bit tensor of the plan would store. */
static float stored(int precision, float x) {
    if (precision == WF_BF16) return wf_bf16(x);
    if (precision == WF_FP16) return wf_fp16(x);
    return x;
}

void wf_residual_layernorm_fwd(wf_ctx *c, float *res_out, float *ln_out, float *mean, float *rstd,
                               const float *a, const float *b, const float *w, const float *bias,
                               int N, int C) {
    int precision = wf_ctx_precision(c);
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const float *xa = a + (long)n * C, *xb = b + (long)n * C;
        float *x = res_out + (long)n * C, *y = ln_out + (long)n * C;
        double m = 0.0;
        for (int i = 0; i < C; i++) {
            x[i] = stored(precision, xa[i] + xb[i]);
            m += x[i];
        }
        m /= C;
        double v = 0.0;  /* two passes in double, as wf_layernorm_fwd */
        for (int i = 0; i < C; i++) v += (x[i] - m) * (x[i] - m);
        v /= C;
        double s = 1.0 / sqrt(v + LN_EPS);
        for (int i = 0; i < C; i++) y[i] = (float)((x[i] - m) * s) * w[i] + bias[i];
        mean[n] = (float)m;
        rstd[n] = (float)s;
    }
}

void wf_residual_layernorm_bwd_input(wf_ctx *c, float *da, float *db, const float *dres,
                                     const float *dln, const float *res, const float *w,
                                     const float *mean, const float *rstd, int N, int C) {
    int precision = wf_ctx_precision(c);
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const float *x = res + (long)n * C, *d = dln + (long)n * C, *r = dres + (long)n * C;
        float *ga = da + (long)n * C, *gb = db + (long)n * C, m = mean[n], s = rstd[n];
        float g_mean, gx_mean;
        wf_ln_bwd_means(x, d, w, m, s, C, &g_mean, &gx_mean);
        for (int i = 0; i < C; i++) {
            float xhat = (x[i] - m) * s;
            float t = r[i];
            t += s * (d[i] * w[i] - g_mean - xhat * gx_mean);
            t = stored(precision, t);
            ga[i] += t;
            gb[i] += t;
        }
    }
}

void wf_residual_layernorm_bwd(wf_ctx *c, float *da, float *db, float *dw, float *dbias,
                               const float *dres, const float *dln, const float *res,
                               const float *w, const float *mean, const float *rstd, int N, int C) {
    wf_residual_layernorm_bwd_input(c, da, db, dres, dln, res, w, mean, rstd, N, C);
    wf_layernorm_bwd_weight(c, dw, dbias, dln, res, mean, rstd, N, C);
}
