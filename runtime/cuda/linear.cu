/* linear.cu: y = x @ W + b with row-major (in, out) weights, on cuBLASLt
 * (gemm.cu): the bias is the GEMM's epilogue, one kernel; backward
 * accumulates (beta = 1). */
#include "cuda_rt.h"
#include "reduce.cuh"

extern "C" void wf_linear_fwd(wf_ctx *c, float *out, const float *inp, const float *w,
                              const float *b, int N, int K, int M) {
    wf_cuda_sgemm_bias(c, 0, 0, N, M, K, 1.0f, inp, K, 0, w, M, 0, 0.0f, out, M, 0, 1, b);
    wf_cuda_sync(c, "wf_linear_fwd");
}

/* dinp (N,K) += dout (N,M) @ w^T */
extern "C" void wf_linear_bwd_input(wf_ctx *c, float *dinp, const float *dout, const float *w,
                                    int N, int K, int M) {
    wf_cuda_sgemm(c, 0, 1, N, K, M, 1.0f, dout, M, 0, w, M, 0, 1.0f, dinp, K, 0, 1);
    wf_cuda_sync(c, "wf_linear_bwd_input");
}

/* dw (K,M) += inp^T @ dout;  db += column sums of dout */
extern "C" void wf_linear_bwd_weight(wf_ctx *c, float *dw, float *db, const float *dout,
                                     const float *inp, int N, int K, int M) {
    wf_cuda_sgemm(c, 1, 0, K, M, N, 1.0f, inp, K, 0, dout, M, 0, 1.0f, dw, M, 0, 1);
    if (db) wf_cuda_colsum_add(c, db, dout, N, M);
    wf_cuda_sync(c, "wf_linear_bwd_weight");
}

extern "C" void wf_linear_bwd(wf_ctx *c, float *dinp, float *dw, float *db, const float *dout,
                              const float *inp, const float *w, int N, int K, int M) {
    wf_linear_bwd_input(c, dinp, dout, w, N, K, M);
    wf_linear_bwd_weight(c, dw, db, dout, inp, N, K, M);
}
