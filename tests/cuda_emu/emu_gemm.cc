/* emu_gemm.cc: runtime/cuda/gemm.cu for the emulated build: the same
 * row-major, batched contract as cuda_rt.h states, as a plain loop summed in
 * double (no cuBLAS on the CPU).  beta == 0 ignores C, as cuBLAS does.
 * Each call is a device operation like a kernel launch: under WF_EMU_ASYNC it
 * is queued behind the kernels before it (wf_emu::enqueue), so it reads what
 * they wrote and a host read without a wait still shows.  gemm.cu itself
 * runs in the test cuda_emu_gemm, over emu_cublaslt.cc's fake cuBLASLt. */
#include <stdint.h>

#include <vector>

#include "cuda_rt.h"
#include "gelu_value.h"
#include "precision_bits.h"
#include "weft/runtime_buffers.h"

static double gemm_flops;

/* The device memory gemm.cu takes, taken here too, so the emulated runtime
 * holds what the plan counts (weft/runtime_buffers.h): cuBLASLt's workspace
 * at the first GEMM, and bias_as's 16-bit copy of a bias, grown, never freed. */
static void workspace(wf_ctx *c) {
    static void *ws;
    if (!ws) WF_CUDA(c, wf_cuda_malloc(c, &ws, WF_CUBLASLT_WORKSPACE_BYTES));
}
static void bias16_buffer(wf_ctx *c, cudaDataType_t type, const float *bias, int n) {
    static void *buf;
    static int cap;
    if (!bias || type == CUDA_R_32F || n <= cap) return;
    WF_CUDA(c, wf_cuda_malloc(c, &buf, sizeof(uint16_t) * (size_t)n));
    cap = n;
}

/* gemm.cu runs an fp32 GEMM of a bf16 / fp16 plan with the compute type
 * CUBLAS_COMPUTE_32F_FAST_16BF / _16F: the library converts A and B to the
 * 16-bit type (round to nearest even) and sums exact products in fp32.  So
 * here too: exact for operands the plan already rounded, a rounding for the
 * fp32 ones (the LM head's dlogits); identity for fp32 plans. */
static float operand(int precision, float x) {
    if (precision == WF_BF16) return wf_hd_bf16_value(wf_hd_bf16_bits(x));
    if (precision == WF_FP16) return wf_hd_fp16_value(wf_hd_fp16_bits(x));
    return x;
}

/* s[j] = sum over k of x[k] * y_j[k] in double, k in order, for the n <= 4
 * columns y_j = b + j K (contiguous): each sum is the plain loop's, the
 * four independent ones only keep the CPU's adder busy. */
static void dots(const float *x, const float *b, int K, int n, double *s) {
    if (n == 4) {
        const float *y0 = b, *y1 = b + K, *y2 = b + 2L * K, *y3 = b + 3L * K;
        double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
        for (int k = 0; k < K; k++) {
            double xk = x[k];
            s0 += xk * y0[k];
            s1 += xk * y1[k];
            s2 += xk * y2[k];
            s3 += xk * y3[k];
        }
        s[0] = s0, s[1] = s1, s[2] = s2, s[3] = s3;
        return;
    }
    for (int j = 0; j < n; j++) {
        const float *y = b + (long)j * K;
        double t = 0.0;
        for (int k = 0; k < K; k++) t += (double)x[k] * y[k];
        s[j] = t;
    }
}

/* An operand read once as floats, each of its `rows` rows of K contiguous
 * (a row of A, a column of B: the sums read them M N K times); element
 * (r, k) is load(k * ld + r) when stored transposed, else load(r * ld + k). */
template <class Load>
static std::vector<float> packed(int rows, int K, int transposed, int ld, Load load) {
    std::vector<float> p((size_t)rows * K);
    for (int r = 0; r < rows; r++)
        for (int k = 0; k < K; k++)
            p[(size_t)r * K + k] = load(transposed ? (long)k * ld + r : (long)r * ld + k);
    return p;
}

/* store(i, j, sum over k of a[i][k] b[j][k]) for the M x N products of two
 * packed operands, four columns at a time (dots) */
template <class Store>
static void products(const std::vector<float> &a, const std::vector<float> &b, int M, int N, int K, Store store) {
    for (int i = 0; i < M; i++)
        for (int j0 = 0; j0 < N; j0 += 4) {
            double s[4];
            int n = N - j0 < 4 ? N - j0 : 4;
            dots(&a[(size_t)i * K], &b[(size_t)j0 * K], K, n, s);
            for (int j = j0; j < j0 + n; j++) store(i, j, s[j - j0]);
        }
}

static void sgemm_now(int precision, int transA, int transB, int M, int N, int K, float alpha, const float *A,
                      int lda, long sA, const float *B, int ldb, long sB, float beta, float *C, int ldc, long sC,
                      int batch) {
    for (int bi = 0; bi < batch; bi++) {
        const float *am = A + bi * sA, *bm = B + bi * sB;
        float *cm = C + bi * sC;
        /* the operands as the library reads them (operand) */
        auto a = packed(M, K, transA, lda, [&](long e) { return operand(precision, am[e]); });
        auto b = packed(N, K, !transB, ldb, [&](long e) { return operand(precision, bm[e]); });
        products(a, b, M, N, K, [&](int i, int j, double s) {
            float *out = &cm[(long)i * ldc + j];
            *out = beta == 0.0f ? (float)(alpha * s) : (float)(alpha * s + (double)beta * *out);
        });
    }
}

static void bias_now(int M, int N, float *C, int ldc, long sC, int batch, const float *bias) {
    for (int b = 0; bias && b < batch; b++)
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) C[b * sC + (long)i * ldc + j] += bias[j];
}

extern "C" void wf_cuda_sgemm(wf_ctx *c, int transA, int transB, int M, int N, int K, float alpha,
                              const float *A, int lda, long sA, const float *B, int ldb, long sB,
                              float beta, float *C, int ldc, long sC, int batch) {
    /* gemm.cu's compute type: fp32 for a frozen weight (wf_frozen_weight) */
    int precision = wf_frozen_weight(c, A) || wf_frozen_weight(c, B) ? WF_FP32 : wf_ctx_precision(c);
    workspace(c);
    wf_emu::enqueue([=] {
        sgemm_now(precision, transA, transB, M, N, K, alpha, A, lda, sA, B, ldb, sB, beta, C, ldc, sC, batch);
    });
    gemm_flops += 2.0 * M * N * K * batch;
}

/* gemm.cu's bias epilogue: the product, then bias[j] added to every row's column j */
extern "C" void wf_cuda_sgemm_bias(wf_ctx *c, int transA, int transB, int M, int N, int K, float alpha,
                                   const float *A, int lda, long sA, const float *B, int ldb, long sB,
                                   float beta, float *C, int ldc, long sC, int batch, const float *bias) {
    wf_cuda_sgemm(c, transA, transB, M, N, K, alpha, A, lda, sA, B, ldb, sB, beta, C, ldc, sC, batch);
    wf_emu::enqueue([=] { bias_now(M, N, C, ldc, sC, batch, bias); });
}

/* gemm.cu's typed GEMM (cuBLASLt with 16-bit operands, CUBLAS_COMPUTE_32F):
 * the elements read as floats, the products summed in double, alpha and
 * beta * C applied and the result made a float, then the bias added in
 * float and the value stored in C's type, a 16-bit one rounded to nearest
 * even (precision_bits.h) once, as the library rounds D. */
static float load_typed(const void *p, cudaDataType_t t, long i) {
    if (t == CUDA_R_32F) return static_cast<const float *>(p)[i];
    uint16_t h = static_cast<const uint16_t *>(p)[i];
    return t == CUDA_R_16BF ? wf_hd_bf16_value(h) : wf_hd_fp16_value(h);
}

static void store_typed(void *p, cudaDataType_t t, long i, float v) {
    if (t == CUDA_R_32F) static_cast<float *>(p)[i] = v;
    else static_cast<uint16_t *>(p)[i] = t == CUDA_R_16BF ? wf_hd_bf16_bits(v) : wf_hd_fp16_bits(v);
}

static bool known_type(cudaDataType_t t) { return t == CUDA_R_32F || t == CUDA_R_16BF || t == CUDA_R_16F; }

extern "C" void wf_cuda_gemm(wf_ctx *c, int transA, int transB, int M, int N, int K, float alpha,
                             const void *A, cudaDataType_t typeA, int lda, const void *B, cudaDataType_t typeB,
                             int ldb, float beta, void *C, cudaDataType_t typeC, int ldc, const float *bias) {
    /* the combinations gemm.cu (and cuBLASLt) take */
    if (!known_type(typeA) || typeA != typeB || (typeC != CUDA_R_32F && typeC != typeA))
        wf_cuda_fail(c, "wf_cuda_gemm", WF_CUDA_WHERE,
                     "A and B must have one type, and C fp32 or theirs (cuBLASLt's supported types)");
    workspace(c);
    bias16_buffer(c, typeC, bias, N);
    wf_emu::enqueue([=] {
        auto a = packed(M, K, transA, lda, [&](long e) { return load_typed(A, typeA, e); });
        auto b = packed(N, K, !transB, ldb, [&](long e) { return load_typed(B, typeB, e); });
        products(a, b, M, N, K, [&](int i, int j, double s) {
            long at = (long)i * ldc + j;
            float v = beta == 0.0f ? (float)(alpha * s) : (float)(alpha * s + (double)beta * load_typed(C, typeC, at));
            if (bias) v += bias[j];
            store_typed(C, typeC, at, v);
        });
    });
    gemm_flops += 2.0 * M * N * K;
}

/* gemm.cu's GELU_AUX_BIAS epilogue: aux = the product plus the bias, C its
 * GELU in the CPU backend's formula.  Always available here, as on the GPU
 * for fp32 plans with ldc a multiple of 8; the bf16 / fp16 path (0) is
 * taken where the real one takes it. */
extern "C" int wf_cuda_sgemm_bias_gelu(wf_ctx *c, int M, int N, int K, const float *A, int lda,
                                       const float *B, int ldb, float *C, int ldc, const float *bias,
                                       float *aux) {
    if (wf_ctx_precision(c) != WF_FP32 || ldc % 8 != 0) return 0;
    wf_cuda_sgemm_bias(c, 0, 0, M, N, K, 1.0f, A, lda, 0, B, ldb, 0, 0.0f, aux, ldc, 0, 1, bias);
    wf_emu::enqueue([=] {
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) C[(long)i * ldc + j] = wf_gelu_value(aux[(long)i * ldc + j]);
    });
    return 1;
}

/* gemm.cu's DGELU epilogue: D = gelu'(aux) times the product (summed in
 * double, made a float, as wf_cuda_gemm's), stored in D's type, rounded
 * once.  Refused (0) where gemm.cu refuses before asking the library: float
 * operands of a bf16 / fp16 plan, ldd not a multiple of 8. */
extern "C" int wf_cuda_gemm_dgelu(wf_ctx *c, int M, int N, int K, const void *A, int lda, const void *B,
                                  int ldb, cudaDataType_t typeAB, void *D, cudaDataType_t typeD, int ldd,
                                  const void *aux) {
    if (!known_type(typeAB) || typeAB != typeD)
        wf_cuda_fail(c, "wf_cuda_gemm_dgelu", WF_CUDA_WHERE, "A, B, D and aux must have one type");
    if ((typeAB == CUDA_R_32F && wf_ctx_precision(c) != WF_FP32) || ldd % 8 != 0) return 0;
    workspace(c);
    wf_emu::enqueue([=] {
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                double s = 0.0;
                for (int k = 0; k < K; k++)
                    s += (double)load_typed(A, typeAB, (long)i * lda + k) * load_typed(B, typeAB, (long)j * ldb + k);
                long at = (long)i * ldd + j;
                store_typed(D, typeD, at, wf_gelu_grad(load_typed(aux, typeD, at)) * (float)s);
            }
    });
    gemm_flops += 2.0 * M * N * K;
    return 1;
}

extern "C" void wf_gemm_stats(double *seconds, double *flops) {
    *seconds = 0.0;
    *flops = gemm_flops;
}

extern "C" void wf_gemm_stats_reset(void) { gemm_flops = 0.0; }
