/* linear.cu: y = x @ W + b with row-major (in, out) weights, on cuBLAS fp32;
 * backward accumulates (beta = 1).  The bias is a separate kernel for now
 * (a cuBLASLt bias epilogue is the obvious next step). */
#include "cuda_rt.h"
#include "reduce.cuh"

__global__ static void add_bias_kernel(float *out, const float *b, long n, int M) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
        out[i] += b[i % M];
}

extern "C" void wf_linear_fwd(wf_ctx *c, float *out, const float *inp, const float *w,
                              const float *b, int N, int K, int M) {
    wf_cuda_sgemm(c, 0, 0, N, M, K, 1.0f, inp, K, 0, w, M, 0, 0.0f, out, M, 0, 1);
    if (b) {
        long n = (long)N * M;
        WF_LAUNCH(add_bias_kernel, wf_blocks(n), WF_THREADS, 0, wf_cuda_stream(c))(out, b, n, M);
    }
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
