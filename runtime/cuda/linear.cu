/* linear.cu: y = x @ W + b with row-major (in, out) weights, on cuBLASLt
 * (gemm.cu): the bias is the GEMM's epilogue, one kernel; backward
 * accumulates (beta = 1).
 *
 * 16-bit activation storage (weft/rt.h): inp, out, dinp, dout and pre are
 * bf16 / fp16, weights float holding values of that type.  The weight is
 * converted into the cast buffer (exact), and the GEMMs run on 16-bit A and
 * B with fp32 accumulation: forward and input gradient into 16-bit D,
 * rounded once (the input gradient reads the old 16-bit dinp as C, beta 1),
 * the weight gradient into float dw. */
#include "cuda_rt.h"
#include "linear_gelu.h"
#include "reduce.cuh"

/* out (N,M) = inp (N,K) @ w (K,M) + b, out and inp in c's activation storage */
static void linear_gemm(wf_ctx *c, float *out, const float *inp, const float *w, const float *b, int N,
                        int K, int M) {
    wf_cuda_act_gemm(c, 0, 0, N, M, K, inp, WF_ACT, K, w, WF_WEIGHT, M, 0.0f, out, WF_ACT, M, b);
}

extern "C" void wf_linear_fwd(wf_ctx *c, float *out, const float *inp, const float *w,
                              const float *b, int N, int K, int M) {
    linear_gemm(c, out, inp, w, b, N, K, M);
    wf_cuda_sync(c, "wf_linear_fwd");
}

/* dinp (N,K) += dout (N,M) @ w^T */
extern "C" void wf_linear_bwd_input(wf_ctx *c, float *dinp, const float *dout, const float *w,
                                    int N, int K, int M) {
    wf_cuda_act_gemm(c, 0, 1, N, K, M, dout, WF_ACT, M, w, WF_WEIGHT, M, 1.0f, dinp, WF_ACT, K, NULL);
    wf_cuda_sync(c, "wf_linear_bwd_input");
}

/* dw (K,M) += inp^T @ dout;  db += column sums of dout */
extern "C" void wf_linear_bwd_weight(wf_ctx *c, float *dw, float *db, const float *dout,
                                     const float *inp, int N, int K, int M) {
    wf_cuda_act_gemm(c, 1, 0, K, M, N, inp, WF_ACT, K, dout, WF_ACT, M, 1.0f, dw, WF_GRAD, M, NULL);
    if (db) wf_cuda_colsum_add(c, db, dout, N, M);  /* dout in c's storage (elementwise.cu) */
    wf_cuda_sync(c, "wf_linear_bwd_weight");
}

extern "C" void wf_linear_bwd(wf_ctx *c, float *dinp, float *dw, float *db, const float *dout,
                              const float *inp, const float *w, int N, int K, int M) {
    wf_linear_bwd_input(c, dinp, dout, w, N, K, M);
    wf_linear_bwd_weight(c, dw, db, dout, inp, N, K, M);
}

/* Fused linear + GELU (weft/rt.h).  fp32: one GEMM whose epilogue adds the
 * bias, applies the GELU and writes the pre-activation to `pre` as well
 * (gemm.cu explains the epilogue and when it cannot serve).  bf16 / fp16, or
 * where it cannot: the bias epilogue into `pre`, then one kernel rounds pre,
 * applies the GELU and rounds out (elementwise.cu; under 16-bit storage pre
 * is already rounded by the GEMM, and the kernel reads and writes 16 bits). */
extern "C" void wf_linear_gelu_fwd(wf_ctx *c, float *pre, float *out, const float *inp, const float *w,
                                   const float *b, int N, int K, int M) {
    int precision = wf_ctx_precision(c);
    if (precision == WF_FP32 && wf_cuda_sgemm_bias_gelu(c, N, M, K, inp, K, w, M, out, M, b, pre)) {
        wf_cuda_sync(c, "wf_linear_gelu_fwd");
        return;
    }
    linear_gemm(c, pre, inp, w, b, N, K, M);
    wf_gelu_round_fwd(c, precision, pre, out, (long)N * M);
}

/* d(pre) from the gelu's backward (rounded in 16 bits), then dinp += d(pre) @ w^T */
extern "C" void wf_linear_gelu_bwd_input(wf_ctx *c, float *dinp, float *dpre, const float *dout,
                                         const float *pre, const float *w, int N, int K, int M) {
    wf_gelu_round_bwd(c, wf_ctx_precision(c), dpre, pre, dout, (long)N * M);
    wf_linear_bwd_input(c, dinp, dpre, w, N, K, M);
}
