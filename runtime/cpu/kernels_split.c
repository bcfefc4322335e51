/* kernels_split.c: backward kernels split in two for zero-bubble pipeline
 * schedules: "B" computes the input gradient (what the previous stage waits
 * for), "W" the weight gradient (deferred into the pipeline's bubbles).  Each
 * pair adds up to the combined kernel of the same name in kernels.c. */
#include "blas.h"
#include "kernels_tp.h"
#include "layernorm_row.h"

void wf_linear_bwd_input(wf_ctx *c, float *dinp, const float *dout, const float *w, int N, int K,
                         int M) {
    (void)c;
    wf_sgemm(0, 1, N, K, M, 1.0f, dout, M, w, M, 1.0f, dinp, K);
}

void wf_linear_bwd_weight(wf_ctx *c, float *dw, float *db, const float *dout, const float *inp,
                          int N, int K, int M) {
    (void)c;
    wf_sgemm(1, 0, K, M, N, 1.0f, inp, K, dout, M, 1.0f, dw, M);
    if (!db) return;
    for (int n = 0; n < N; n++)
        for (int j = 0; j < M; j++) db[j] += dout[(long)n * M + j];
}

void wf_layernorm_bwd_input(wf_ctx *c, float *dinp, const float *dout, const float *inp,
                            const float *w, const float *mean, const float *rstd, int N, int C) {
    (void)c;
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
    (void)c;
    for (int n = 0; n < N; n++) {
        const float *x = inp + (long)n * C, *d = dout + (long)n * C;
        for (int i = 0; i < C; i++) {
            db[i] += d[i];
            dw[i] += d[i] * (x[i] - mean[n]) * rstd[n];
        }
    }
}

/* B of the LM head: dx += dlogits @ wte (the forward wrote dlogits). */
void wf_lmhead_xent_bwd_input(wf_ctx *c, float *dx, const float *dlogits, const float *wte, int N,
                              int C, int V) {
    (void)c;
    wf_sgemm(0, 0, N, C, V, 1.0f, dlogits, V, wte, C, 1.0f, dx, C);
}

void wf_lmhead_xent_bwd_weight(wf_ctx *c, float *dwte, const float *dlogits, const float *x, int N,
                               int C, int V) {
    (void)c;
    wf_sgemm(1, 0, V, C, N, 1.0f, dlogits, V, x, C, 1.0f, dwte, C);
}

void wf_pos_add_bwd_input(wf_ctx *c, float *din, const float *dout, int rows, int C) {
    (void)c;
    for (long i = 0; i < (long)rows * C; i++) din[i] += dout[i];
}

void wf_pos_add_bwd_weight(wf_ctx *c, float *dwpe, const float *dout, long row0, int rows, int T,
                           int C) {
    (void)c;
    for (int r = 0; r < rows; r++) {
        float *g = dwpe + ((row0 + r) % T) * C;
        for (int j = 0; j < C; j++) g[j] += dout[(long)r * C + j];
    }
}

void wf_bias_add_bwd_weight(wf_ctx *c, float *db, const float *dout, int rows, long C) {
    (void)c;
    for (int r = 0; r < rows; r++)
        for (long j = 0; j < C; j++) db[j] += dout[r * C + j];
}
