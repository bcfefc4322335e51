/* linear.cu: y = x @ W + b with row-major (in, out) weights, on cuBLASLt
 * (gemm.cu): the bias is the GEMM's epilogue, one kernel; backward
 * accumulates (beta = 1), but for the input gradient that takes the gelu's
 * backward along (wf_linear_dgelu_bwd_input, at the end), which writes.
 *
 * 16-bit activation storage (weft/rt.h): inp, out, dinp, dout and pre are
 * bf16 / fp16, weights float holding values of that type.  The weight is
 * converted into the cast buffer (exact), and the GEMMs run on 16-bit A and
 * B with fp32 accumulation: forward and input gradient into 16-bit D,
 * rounded once (the input gradient reads the old 16-bit dinp as C, beta 1),
 * the weight gradient into float dw. */
#include "cuda_rt.h"
#include "weft/runtime_buffers.h"
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

/* dpre = round(gelu'(pre) * (dout @ w^T)) (weft/rt.h): cuBLASLt's DGELU
 * epilogue (gemm.cu) where it serves, fp32 plans and act16, whose 16-bit D
 * the library rounds once, after gelu', from its fp32 accumulator.  Where it
 * does not, the same numbers in two steps: the GEMM into fp32, then
 * wf_dgelu_round (elementwise.cu).  Activations in floats (fp32, or bf16 /
 * fp16 without act16): the GEMM into dpre itself, rounded in place.  Under
 * act16 dpre holds 16 bits: the GEMM goes into a float buffer a block of rows
 * at a time (at most FALLBACK_FLOATS, allocated at the first call, in the
 * eager warm-up step: a captured step allocates nothing), then the kernel
 * rounds each block into dpre. */
enum { FALLBACK_FLOATS = WF_DGELU_FALLBACK_FLOATS };

/* One per context (cuda_rt.h's wf_cuda_ctx). */
static float *fallback_buffer(wf_ctx *c, long floats) {
    wf_cuda_ctx *x = wf_cuda_of(c);
    if (floats > x->dgelu_rows_floats) {  /* a smaller one is kept, not freed: a captured graph may read it */
        WF_CUDA(c, wf_cuda_malloc(c, (void **)&x->dgelu_rows, sizeof(float) * (size_t)floats));
        x->dgelu_rows_floats = floats;
    }
    return x->dgelu_rows;
}

extern "C" void wf_linear_dgelu_bwd_input(wf_ctx *c, float *dpre, const float *dout, const float *pre,
                                          const float *w, int N, int K, int M) {
    int precision = wf_ctx_precision(c);
    if (!wf_ctx_act16(c)) {
        if (precision == WF_FP32 &&
            wf_cuda_gemm_dgelu(c, N, K, M, dout, M, w, M, CUDA_R_32F, dpre, CUDA_R_32F, K, pre)) {
            wf_cuda_sync(c, "wf_linear_dgelu_bwd_input");
            return;
        }
        wf_cuda_act_gemm(c, 0, 1, N, K, M, dout, WF_ACT, M, w, WF_WEIGHT, M, 0.0f, dpre, WF_ACT, K, NULL);
        wf_dgelu_round(c, precision, dpre, pre, dpre, (long)N * K);
        return;
    }
    cudaDataType_t t = precision == WF_BF16 ? CUDA_R_16BF : CUDA_R_16F;
    const void *w16 = wf_cuda_weight16(c, w, (long)K * M);
    if (wf_cuda_gemm_dgelu(c, N, K, M, dout, M, w16, M, t, dpre, t, K, pre)) {
        wf_cuda_sync(c, "wf_linear_dgelu_bwd_input");
        return;
    }
    int rows = K >= FALLBACK_FLOATS ? 1 : FALLBACK_FLOATS / K;
    if (rows > N) rows = N;
    float *acc = fallback_buffer(c, (long)rows * K);
    for (int r0 = 0; r0 < N; r0 += rows) {
        int r = N - r0 < rows ? N - r0 : rows;
        wf_cuda_gemm(c, 0, 1, r, K, M, 1.0f, wf_cuda_act_at(c, dout, (long)r0 * M), t, M, w16, t, M, 0.0f, acc,
                     CUDA_R_32F, K, NULL);
        wf_dgelu_round(c, precision, (float *)wf_cuda_act_at(c, dpre, (long)r0 * K), wf_cuda_act_at(c, pre, (long)r0 * K), acc,
                       (long)r * K);
    }
}
