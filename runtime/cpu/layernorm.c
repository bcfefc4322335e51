/* layernorm.c: LayerNorm on the CPU (weft/rt.h), as runtime/cuda/layernorm.cu
 * has it: forward, backward and its B / W halves (zero-bubble schedules: the
 * input gradient the previous stage waits for, the weight gradient deferred
 * into the pipeline's bubbles), and the fused residual add + layernorm.
 *
 * The fused op works row by row: the residual row is formed, rounded to the
 * plan's 16-bit type and normalized while it is still in cache, so the sum is
 * written once and never read back.  Its arithmetic is that of
 * wf_layernorm_fwd and wf_layernorm_bwd_input operation for operation, so it
 * gives bit for bit what the unfused pair does (test_kernels checks this).
 *
 * All tensors are row-major.  Activations are (N, width) with N = B * T.
 * Every backward kernel accumulates (+=) into its gradient outputs.  The
 * execution context is not needed on the CPU; it may be NULL.  Matrix
 * products go through wf_sgemm (blas.h) so they are timed and counted;
 * everything else is plain loops.
 */
#include "weft/rt.h"

#include <math.h>

#include "layernorm_row.h"
#include "stage16.h"

#define LN_EPS 1e-5

/* ---- layernorm ------------------------------------------------------------- */

void wf_layernorm_fwd(wf_ctx *c, float *out, float *mean, float *rstd,
                      const float *inp, const float *w, const float *b, int N, int C)
{
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        inp = wf_stage16_in(&s, inp, (long)N * C);
        out = wf_stage16_out(&s, out, (long)N * C);
        wf_layernorm_fwd(c, out, mean, rstd, inp, w, b, N, C);
        wf_stage16_end(&s);
        return;
    }
#pragma omp parallel for schedule(static) if ((long)N * C > 65536)
    for (int n = 0; n < N; n++) {
        const float *x = inp + (long)n * C;
        float *y = out + (long)n * C;

        /* Two passes in double: the variance of nearly constant rows would
         * lose most of its digits to cancellation in a one-pass float sum. */
        double m = 0.0;
        for (int i = 0; i < C; i++)
            m += x[i];
        m /= C;
        double v = 0.0;
        for (int i = 0; i < C; i++)
            v += (x[i] - m) * (x[i] - m);
        v /= C; /* biased variance, as in PyTorch's LayerNorm */
        double s = 1.0 / sqrt(v + LN_EPS);

        for (int i = 0; i < C; i++)
            y[i] = (float)((x[i] - m) * s) * w[i] + b[i];
        mean[n] = (float)m;
        rstd[n] = (float)s;
    }
}

/* With xhat = (x - mean) * rstd and g = dout * w, the input gradient is
 *     dx = rstd * (g - mean(g) - xhat * mean(g * xhat)). */
/* The input and the weight halves (below), one after the other. */
void wf_layernorm_bwd(wf_ctx *c, float *dinp, float *dw, float *db,
                      const float *dout, const float *inp, const float *w,
                      const float *mean, const float *rstd, int N, int C)
{
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        dout = wf_stage16_in(&s, dout, (long)N * C);
        inp = wf_stage16_in(&s, inp, (long)N * C);
        dinp = wf_stage16_acc(&s, dinp, (long)N * C);
        wf_layernorm_bwd(c, dinp, dw, db, dout, inp, w, mean, rstd, N, C);
        wf_stage16_end(&s);
        return;
    }
    wf_layernorm_bwd_input(c, dinp, dout, inp, w, mean, rstd, N, C);
    wf_layernorm_bwd_weight(c, dw, db, dout, inp, mean, rstd, N, C);
}

void wf_layernorm_bwd_input(wf_ctx *c, float *dinp, const float *dout, const float *inp,
                            const float *w, const float *mean, const float *rstd, int N, int C) {
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        dout = wf_stage16_in(&s, dout, (long)N * C);
        inp = wf_stage16_in(&s, inp, (long)N * C);
        dinp = wf_stage16_acc(&s, dinp, (long)N * C);
        wf_layernorm_bwd_input(c, dinp, dout, inp, w, mean, rstd, N, C);
        wf_stage16_end(&s);
        return;
    }
#pragma omp parallel for schedule(static) if ((long)N * C > 65536)
    for (int n = 0; n < N; n++) {
        const float *x = inp + (long)n * C, *d = dout + (long)n * C;
        float *dx = dinp + (long)n * C, m = mean[n], s = rstd[n];
        float g_mean, gx_mean;
        wf_ln_bwd_means(x, d, w, m, s, C, &g_mean, &gx_mean);
        for (int i = 0; i < C; i++) {
            float xhat = (x[i] - m) * s;
            dx[i] += s * (d[i] * w[i] - g_mean - xhat * gx_mean);
        }
    }
}

void wf_layernorm_bwd_weight(wf_ctx *c, float *dw, float *db, const float *dout, const float *inp,
                             const float *mean, const float *rstd, int N, int C) {
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        dout = wf_stage16_in(&s, dout, (long)N * C);
        inp = wf_stage16_in(&s, inp, (long)N * C);
        wf_layernorm_bwd_weight(c, dw, db, dout, inp, mean, rstd, N, C);
        wf_stage16_end(&s);
        return;
    }
    /* threads take blocks of columns; each column still sums its rows in
     * order, so the result does not depend on the thread count */
    enum { COLS = 64 };
#pragma omp parallel for schedule(static) if ((long)N * C > 65536)
    for (int i0 = 0; i0 < C; i0 += COLS) {
        int i1 = i0 + COLS < C ? i0 + COLS : C;
        for (int n = 0; n < N; n++) {
            const float *x = inp + (long)n * C, *d = dout + (long)n * C;
            for (int i = i0; i < i1; i++) {
                db[i] += d[i];
                dw[i] += d[i] * (x[i] - mean[n]) * rstd[n];
            }
        }
    }
}

/* ---- fused residual add + layernorm ---------------------------------------- */

/* The value a 16-bit tensor of the plan would store. */
static float stored(int precision, float x) {
    if (precision == WF_BF16) return wf_bf16(x);
    if (precision == WF_FP16) return wf_fp16(x);
    return x;
}

void wf_residual_layernorm_fwd(wf_ctx *c, float *res_out, float *ln_out, float *mean, float *rstd,
                               const float *a, const float *b, const float *w, const float *bias,
                               int N, int C) {
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        a = wf_stage16_in(&s, a, (long)N * C);
        b = wf_stage16_in(&s, b, (long)N * C);
        res_out = wf_stage16_out(&s, res_out, (long)N * C);
        ln_out = wf_stage16_out(&s, ln_out, (long)N * C);
        wf_residual_layernorm_fwd(c, res_out, ln_out, mean, rstd, a, b, w, bias, N, C);
        wf_stage16_end(&s);
        return;
    }
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
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        dres = wf_stage16_in(&s, dres, (long)N * C);
        dln = wf_stage16_in(&s, dln, (long)N * C);
        res = wf_stage16_in(&s, res, (long)N * C);
        da = wf_stage16_acc(&s, da, (long)N * C);
        db = wf_stage16_acc(&s, db, (long)N * C);
        wf_residual_layernorm_bwd_input(c, da, db, dres, dln, res, w, mean, rstd, N, C);
        wf_stage16_end(&s);
        return;
    }
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
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        dres = wf_stage16_in(&s, dres, (long)N * C);
        dln = wf_stage16_in(&s, dln, (long)N * C);
        res = wf_stage16_in(&s, res, (long)N * C);
        da = wf_stage16_acc(&s, da, (long)N * C);
        db = wf_stage16_acc(&s, db, (long)N * C);
        wf_residual_layernorm_bwd(c, da, db, dw, dbias, dres, dln, res, w, mean, rstd, N, C);
        wf_stage16_end(&s);
        return;
    }
    wf_residual_layernorm_bwd_input(c, da, db, dres, dln, res, w, mean, rstd, N, C);
    wf_layernorm_bwd_weight(c, dw, dbias, dln, res, mean, rstd, N, C);
}
