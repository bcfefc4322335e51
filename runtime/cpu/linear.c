/* linear.c: the linear layer on the CPU (weft/rt.h), as runtime/cuda/linear.cu
 * has it: forward, backward and its B / W halves (zero-bubble schedules),
 * the fused linear + GELU and the input gradient with the gelu's backward.
 *
 * Fused forward: the sgemm, then one pass over the rows that adds the bias,
 * rounds the pre-activation to the plan's 16-bit type (if any), applies GELU
 * and rounds its output; the unfused pair makes three or five passes (bias,
 * gelu, and the rounding calls).  Each value goes through the same float
 * operations as in wf_linear_fwd, wf_gelu_fwd and wf_to_bf16 / wf_to_fp16, so
 * the results are bit for bit those of the unfused pair (test_kernels and
 * test_fused_16bit check it).  Backward: the gelu's backward with its
 * rounding in one pass (elementwise.c), then the linear's input gradient;
 * the weight gradient is wf_linear_bwd_weight on the rounded d(pre).
 *
 * The next linear's input gradient with the gelu's backward
 * (wf_linear_dgelu_bwd_input): the sgemm into dpre itself (beta 0), then one
 * pass applies gelu' and rounds, as cuBLASLt's DGELU epilogue does from its
 * fp32 accumulator.  Under fp32 this is the unfused pair's arithmetic (its
 * sgemm adds into a zero d(gelu out), the gelu's backward into a zero d(pre)),
 * so the results are the same bits.
 *
 * All tensors are row-major.  Activations are (N, width) with N = B * T.
 * Every backward kernel accumulates (+=) into its gradient outputs.  The
 * execution context is not needed on the CPU; it may be NULL.  Matrix
 * products go through wf_sgemm (blas.h) so they are timed and counted;
 * everything else is plain loops.
 */
#include "weft/rt.h"

#include "blas.h"
#include "gelu_value.h"
#include "linear_gelu.h"
#include "precision_bits.h"
#include "stage16.h"
#include "vector_clones.h"

/* ---- linear ---------------------------------------------------------------- */

void wf_linear_fwd(wf_ctx *c, float *out, const float *inp, const float *w,
                   const float *b, int N, int K, int M)
{
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        inp = wf_stage16_in(&s, inp, (long)N * K);
        out = wf_stage16_out(&s, out, (long)N * M);
        wf_linear_fwd(c, out, inp, w, b, N, K, M);
        wf_stage16_end(&s);
        return;
    }
    wf_sgemm(0, 0, N, M, K, 1.0f, inp, K, w, M, 0.0f, out, M);
    if (!b)
        return;
    for (int n = 0; n < N; n++) {
        float *o = out + (long)n * M;
        for (int j = 0; j < M; j++)
            o[j] += b[j];
    }
}

/* dinp (N,K) += dout (N,M) @ w^T;  dw (K,M) += inp^T @ dout;  db += column sums */
void wf_linear_bwd(wf_ctx *c, float *dinp, float *dw, float *db, const float *dout,
                   const float *inp, const float *w, int N, int K, int M)
{
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        dout = wf_stage16_in(&s, dout, (long)N * M);
        inp = wf_stage16_in(&s, inp, (long)N * K);
        dinp = wf_stage16_acc(&s, dinp, (long)N * K);
        wf_linear_bwd(c, dinp, dw, db, dout, inp, w, N, K, M);
        wf_stage16_end(&s);
        return;
    }
    wf_linear_bwd_input(c, dinp, dout, w, N, K, M);
    wf_linear_bwd_weight(c, dw, db, dout, inp, N, K, M);
}

void wf_linear_bwd_input(wf_ctx *c, float *dinp, const float *dout, const float *w, int N, int K,
                         int M) {
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        dout = wf_stage16_in(&s, dout, (long)N * M);
        dinp = wf_stage16_acc(&s, dinp, (long)N * K);
        wf_linear_bwd_input(c, dinp, dout, w, N, K, M);
        wf_stage16_end(&s);
        return;
    }
    wf_sgemm(0, 1, N, K, M, 1.0f, dout, M, w, M, 1.0f, dinp, K);
}

void wf_linear_bwd_weight(wf_ctx *c, float *dw, float *db, const float *dout, const float *inp,
                          int N, int K, int M) {
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        dout = wf_stage16_in(&s, dout, (long)N * M);
        inp = wf_stage16_in(&s, inp, (long)N * K);
        wf_linear_bwd_weight(c, dw, db, dout, inp, N, K, M);
        wf_stage16_end(&s);
        return;
    }
    wf_sgemm(1, 0, K, M, N, 1.0f, inp, K, dout, M, 1.0f, dw, M);
    if (!db) return;
    for (int n = 0; n < N; n++)
        for (int j = 0; j < M; j++) db[j] += dout[(long)n * M + j];
}

/* ---- fused linear + GELU --------------------------------------------------- */

WF_VECTOR_CLONES void wf_linear_gelu_fwd(wf_ctx *c, float *pre, float *out, const float *inp, const float *w,
                        const float *b, int N, int K, int M) {
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        inp = wf_stage16_in(&s, inp, (long)N * K);
        pre = wf_stage16_out(&s, pre, (long)N * M);
        out = wf_stage16_out(&s, out, (long)N * M);
        wf_linear_gelu_fwd(c, pre, out, inp, w, b, N, K, M);
        wf_stage16_end(&s);
        return;
    }
    int precision = wf_ctx_precision(c);
    wf_sgemm(0, 0, N, M, K, 1.0f, inp, K, w, M, 0.0f, pre, M);
#pragma omp parallel for schedule(static) if ((long)N * M > 65536)
    for (int n = 0; n < N; n++) {
        float *p = pre + (long)n * M, *o = out + (long)n * M;
        if (precision == WF_FP32) {  /* nothing to round: loops that vectorise, the same values */
            if (b) {
#pragma omp simd
                for (int j = 0; j < M; j++) p[j] += b[j];
            }
#pragma omp simd
            for (int j = 0; j < M; j++) o[j] = wf_gelu_value(p[j]);
            continue;
        }
        for (int j = 0; j < M; j++) {
            float x = b ? p[j] + b[j] : p[j];
            x = wf_hd_round(precision, x);
            p[j] = x;
            o[j] = wf_hd_round(precision, wf_gelu_value(x));
        }
    }
}

void wf_linear_gelu_bwd_input(wf_ctx *c, float *dinp, float *dpre, const float *dout,
                              const float *pre, const float *w, int N, int K, int M) {
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        dout = wf_stage16_in(&s, dout, (long)N * M);
        pre = wf_stage16_in(&s, pre, (long)N * M);
        dpre = wf_stage16_acc(&s, dpre, (long)N * M);
        dinp = wf_stage16_acc(&s, dinp, (long)N * K);
        wf_linear_gelu_bwd_input(c, dinp, dpre, dout, pre, w, N, K, M);
        wf_stage16_end(&s);
        return;
    }
    wf_gelu_round_bwd(c, wf_ctx_precision(c), dpre, pre, dout, (long)N * M);
    wf_linear_bwd_input(c, dinp, dpre, w, N, K, M);
}

void wf_linear_dgelu_bwd_input(wf_ctx *c, float *dpre, const float *dout, const float *pre,
                               const float *w, int N, int K, int M) {
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        dout = wf_stage16_in(&s, dout, (long)N * M);
        pre = wf_stage16_in(&s, pre, (long)N * K);
        dpre = wf_stage16_out(&s, dpre, (long)N * K);
        wf_linear_dgelu_bwd_input(c, dpre, dout, pre, w, N, K, M);
        wf_stage16_end(&s);
        return;
    }
    wf_sgemm(0, 1, N, K, M, 1.0f, dout, M, w, M, 0.0f, dpre, K);
    wf_dgelu_round(c, wf_ctx_precision(c), dpre, pre, dpre, (long)N * K);
}
