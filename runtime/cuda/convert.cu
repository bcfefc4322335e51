/* convert.cu: the GEMMs on activations of linear.cu and xent.cu
 * (wf_cuda_act_gemm, cuda_rt.h) and, under 16-bit activation storage, the
 * conversion of their weight to 16 bits (the weight's own copy, or under
 * ZeRO-3 the cast buffer: cast.c).
 * cuBLASLt takes A and B of one type: a float weight meets a 16-bit
 * activation as the activation's type (the weight holds values of that
 * type, so the conversion is exact).  Activations are never converted to
 * floats: every GEMM operand that is not a weight is 16-bit (the LM head's
 * dlogits too). */
#include "cuda_rt.h"
#include "reduce.cuh"
#include "storage.cuh"
#include "storage_vec.cuh"

static cudaDataType_t act_type(wf_ctx *c) {
    return wf_ctx_precision(c) == WF_BF16 ? CUDA_R_16BF : CUDA_R_16F;
}

/* floats to a 16-bit type (rounded: exact for values of that type), 16
 * bytes a store where dst and n allow (storage_vec.cuh) */
extern "C" void wf_cuda_to16(wf_ctx *c, void *dst, cudaDataType_t type, const float *src, long n) {
    float *d = static_cast<float *>(dst);
    cudaStream_t s = wf_cuda_stream(c);
    if (type == CUDA_R_16BF) wf_narrow_launch<wf_st_bf16>(d, src, n, s);
    else if (type == CUDA_R_16F) wf_narrow_launch<wf_st_fp16>(d, src, n, s);
    else wf_cuda_fail(c, "wf_cuda_to16", WF_CUDA_WHERE, "the type must be CUDA_R_16BF or CUDA_R_16F");
    wf_cuda_sync(c, "wf_cuda_to16");
}

/* w's n floats as c's 16-bit type: under 16-bit working parameters the
 * stored values themselves; else its copy, converted on the stream unless it
 * is current; without copies (ZeRO-3, kernel tests) in the cast buffer,
 * which the next conversion reuses */
extern "C" const void *wf_cuda_weight16(wf_ctx *c, const float *w, long n) {
    const void *stored = wf_cuda_weight16_in_place(c, w, n);  /* 16-bit parameters: no copy */
    if (stored) return stored;
    int convert;
    void *dst = wf_cuda_weight16_slot(c, w, n, &convert);
    if (!dst) dst = wf_cuda_cast_buffer(c, (n + 1) / 2);
    if (convert) wf_cuda_to16(c, dst, act_type(c), w, n);
    return dst;
}

extern "C" void wf_cuda_act_gemm(wf_ctx *c, int transA, int transB, int M, int N, int K, const float *A,
                                 enum wf_gemm_role roleA, int lda, const float *B, enum wf_gemm_role roleB,
                                 int ldb, float beta, float *C, enum wf_gemm_role roleC, int ldc,
                                 const float *bias) {
    if (!wf_ctx_act16(c)) {
        wf_cuda_sgemm_bias(c, transA, transB, M, N, K, 1.0f, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1, bias);
        return;
    }
    if ((roleA == WF_WEIGHT && roleB == WF_WEIGHT) || roleA == WF_GRAD || roleB == WF_GRAD ||
        roleC == WF_WEIGHT)
        wf_cuda_fail(c, "wf_cuda_act_gemm", WF_CUDA_WHERE,
                     "under act16 A and B are activations or one weight, C an activation or a gradient");
    cudaDataType_t t = act_type(c);
    const void *a = roleA == WF_WEIGHT ? wf_cuda_weight16(c, A, (long)M * K) : A;
    const void *b = roleB == WF_WEIGHT ? wf_cuda_weight16(c, B, (long)K * N) : B;
    wf_cuda_gemm(c, transA, transB, M, N, K, 1.0f, a, t, lda, b, t, ldb, beta, C,
                 roleC == WF_GRAD ? CUDA_R_32F : t, ldc, bias);
}
