/* test_gemm.cc: runtime/cuda/gemm.cu itself on the emulator, over the fake
 * cuBLASLt of emu_cublaslt.cc (which refuses what the real library refuses):
 * every GEMM entry point against a row-major reference with the fake's
 * arithmetic, so the results must agree bit for bit, and a wrong operand
 * swap, transpose, leading dimension, bias conversion or fallback shows.
 *   - fp32 (CUBLAS_COMPUTE_32F), all four transposes, padded leading
 *     dimensions, beta, bias, a strided batch; a bf16 plan's fp32 GEMM
 *     (FAST_16BF: the operands rounded to bf16);
 *   - the typed GEMM (act16): bf16 / fp16 A and B, C of their type or fp32
 *     (a 16-bit C rounded once: the fake splits K, rounding the halves to
 *     C's type, unless gemm.cu's reduction scheme mask forbids it),
 *     with the bias converted to C's type, with c NULL too (cuda_rt.h allows
 *     any c: the conversion must follow typeC, not c's plan);
 *   - the same call first with aligned then with 2-byte-aligned operands
 *     (a plan per alignment: the fake refuses pointers less aligned than
 *     the heuristic was told);
 *   - the GELU_AUX_BIAS epilogue (aux and C), and its refusals;
 *   - the DGELU epilogue (D = gelu'(aux) times the product, D's prior
 *     contents ignored) in fp32, bf16 and fp16, and its refusals;
 *   - WF_EMU_LT_REFUSE=bias / gelu / dgelu: gemm.cu's fallbacks (a bias
 *     kernel after an fp32 GEMM; C = bias with beta 1 for a 16-bit one; 0
 *     from the GELU and DGELU entry points);
 *   - a typed GEMM with bias captured into a CUDA graph after a warm-up call
 *     (nothing the capture refuses, cudaMalloc included) and replayed. */
#include <stdio.h>
#include <stdlib.h>

#include <vector>

#include "cuda_rt.h"
#include "gelu_value.h"
#include "precision_bits.h"

extern "C" wf_ctx *wf_storage_ctx(int precision, int act16); /* emu_device.cc */

static int failures;

#define CHECK(cond, ...)                          \
    do {                                          \
        bool ok_ = (cond);                        \
        fputs(ok_ ? "ok   " : "FAIL ", stdout);   \
        if (!ok_) failures++;                     \
        printf(__VA_ARGS__);                      \
        printf("\n");                             \
    } while (0)

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float uniform() {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((rng >> 40) / 8388608.0 - 1.0);
}

/* a matrix of `type` in device memory (the emulator's is the host's), held
 * as floats too (the values the type stores) */
struct Mat {
    cudaDataType_t type;
    std::vector<float> v;
    char *mem = nullptr;
    long offset = 0; /* elements: a less aligned start */

    Mat(cudaDataType_t t, long n, long off = 0) : type(t), v(n), offset(off) {
        cudaMalloc((void **)&mem, (size_t)(n + off) * 4);
        for (long i = 0; i < n; i++) set(i, uniform());
    }
    long bytes() const { return type == CUDA_R_32F ? 4 : 2; }
    void *ptr() const { return mem + offset * bytes(); }
    void set(long i, float x) {
        if (type == CUDA_R_32F) {
            v[i] = x;
            ((float *)ptr())[i] = x;
        } else {
            uint16_t h = type == CUDA_R_16BF ? wf_hd_bf16_bits(x) : wf_hd_fp16_bits(x);
            v[i] = type == CUDA_R_16BF ? wf_hd_bf16_value(h) : wf_hd_fp16_value(h);
            ((uint16_t *)ptr())[i] = h;
        }
    }
    float get(long i) const {
        if (type == CUDA_R_32F) return ((const float *)ptr())[i];
        uint16_t h = ((const uint16_t *)ptr())[i];
        return type == CUDA_R_16BF ? wf_hd_bf16_value(h) : wf_hd_fp16_value(h);
    }
    float round(float x) const {
        if (type == CUDA_R_32F) return x;
        return type == CUDA_R_16BF ? wf_hd_bf16_value(wf_hd_bf16_bits(x)) : wf_hd_fp16_value(wf_hd_fp16_bits(x));
    }
};

struct Shape {
    int transA, transB, M, N, K, lda, ldb, ldc;
};

/* lds a few past the widths: padded rows */
static Shape shape(int transA, int transB, int M, int N, int K, int pad) {
    return Shape{ transA, transB, M, N, K, (transA ? M : K) + pad, (transB ? K : N) + pad, N + pad };
}

enum Bias { EPILOGUE, AFTER, IN_C }; /* how the bias is added: see expected() */

/* Row-major C (M, N) as the fake computes it: exact products summed in
 * double, alpha and beta * C0 made a float; the bias then added in float
 * (the epilogue, or gemm.cu's kernel after an fp32 GEMM), or (IN_C: gemm.cu's
 * 16-bit fallback, C = bias with beta 1) as C0 inside the double sum; the
 * result rounded to C's type.  round16: the FAST_16BF operand rounding. */
static std::vector<float> expected(const Shape &s, float alpha, const Mat &A, const Mat &B, float beta,
                                   const Mat &C0, const std::vector<float> &bias, Bias how, int round16, long batch = 0,
                                   long sA = 0, long sB = 0, long sC = 0) {
    std::vector<float> out(C0.v);
    for (int i = 0; i < s.M; i++)
        for (int j = 0; j < s.N; j++) {
            double sum = 0.0;
            for (int k = 0; k < s.K; k++) {
                float a = A.v[batch * sA + (s.transA ? (long)k * s.lda + i : (long)i * s.lda + k)];
                float b = B.v[batch * sB + (s.transB ? (long)j * s.ldb + k : (long)k * s.ldb + j)];
                if (round16) a = wf_hd_round(WF_BF16, a), b = wf_hd_round(WF_BF16, b);
                sum += (double)a * b;
            }
            long at = batch * sC + (long)i * s.ldc + j;
            float c0 = how == IN_C ? bias[j] : C0.v[at], bt = how == IN_C ? 1.0f : beta;
            float v = bt == 0.0f ? (float)(alpha * sum) : (float)(alpha * sum + (double)bt * c0);
            if (!bias.empty() && how != IN_C) v += bias[j];
            out[at] = C0.round(v);
        }
    return out;
}

static bool same(const Mat &C, const std::vector<float> &want, long from = 0, long to = -1) {
    if (to < 0) to = (long)want.size();
    for (long i = from; i < to; i++)
        if (C.get(i) != want[i]) {
            printf("     element %ld: %.9g, expected %.9g\n", i, C.get(i), want[i]);
            return false;
        }
    return true;
}

static void sync() { cudaStreamSynchronize(wf_cuda_stream(NULL)); }

/* a bias of n values of `type` (the typed GEMM's contract), as floats */
static std::vector<float> bias_of(cudaDataType_t type, int n) {
    Mat b(type, n);
    return b.v;
}

static void fp32_cases() {
    for (int t = 0; t < 4; t++) {
        Shape s = shape(t & 1, t >> 1, 5, 7, 9, 3);
        Mat A(CUDA_R_32F, (long)(s.transA ? s.K : s.M) * s.lda), B(CUDA_R_32F, (long)(s.transB ? s.N : s.K) * s.ldb);
        Mat C(CUDA_R_32F, (long)s.M * s.ldc);
        std::vector<float> bias = bias_of(CUDA_R_32F, s.N), none;
        std::vector<float> want = expected(s, 0.5f, A, B, 1.0f, C, bias, EPILOGUE, 0);
        wf_cuda_sgemm_bias(NULL, s.transA, s.transB, s.M, s.N, s.K, 0.5f, (float *)A.ptr(), s.lda, 0,
                           (float *)B.ptr(), s.ldb, 0, 1.0f, (float *)C.ptr(), s.ldc, 0, 1, bias.data());
        sync();
        CHECK(same(C, want), "fp32 transA %d transB %d, beta 1, bias epilogue", s.transA, s.transB);
        want = expected(s, 1.0f, A, B, 0.0f, C, none, EPILOGUE, 0);
        wf_cuda_sgemm(NULL, s.transA, s.transB, s.M, s.N, s.K, 1.0f, (float *)A.ptr(), s.lda, 0, (float *)B.ptr(),
                      s.ldb, 0, 0.0f, (float *)C.ptr(), s.ldc, 0, 1);
        sync();
        CHECK(same(C, want), "fp32 transA %d transB %d, beta 0, no bias", s.transA, s.transB);
    }
    /* a strided batch of 3 (attention's products), transB */
    Shape s = shape(0, 1, 4, 6, 8, 0);
    long sA = 4L * 8 + 5, sB = 6L * 8 + 3, sC = 4L * 6 + 1;
    Mat A(CUDA_R_32F, 3 * sA), B(CUDA_R_32F, 3 * sB), C(CUDA_R_32F, 3 * sC);
    std::vector<float> none, want(C.v);
    for (long q = 0; q < 3; q++) {
        std::vector<float> w = expected(s, 1.0f, A, B, 0.0f, C, none, EPILOGUE, 0, q, sA, sB, sC);
        for (int i = 0; i < s.M * s.ldc; i++) want[q * sC + i] = w[q * sC + i];
    }
    wf_cuda_sgemm(NULL, 0, 1, s.M, s.N, s.K, 1.0f, (float *)A.ptr(), s.lda, sA, (float *)B.ptr(), s.ldb, sB, 0.0f,
                  (float *)C.ptr(), s.ldc, sC, 3);
    sync();
    CHECK(same(C, want), "fp32 strided batch of 3");
    /* a bf16 plan's fp32 GEMM: CUBLAS_COMPUTE_32F_FAST_16BF rounds the operands */
    s = shape(1, 0, 6, 5, 7, 1);
    Mat A2(CUDA_R_32F, (long)s.K * s.lda), B2(CUDA_R_32F, (long)s.K * s.ldb), C2(CUDA_R_32F, (long)s.M * s.ldc);
    want = expected(s, 1.0f, A2, B2, 0.0f, C2, none, EPILOGUE, 1);
    wf_cuda_sgemm(wf_storage_ctx(WF_BF16, 0), 1, 0, s.M, s.N, s.K, 1.0f, (float *)A2.ptr(), s.lda, 0,
                  (float *)B2.ptr(), s.ldb, 0, 0.0f, (float *)C2.ptr(), s.ldc, 0, 1);
    sync();
    CHECK(same(C2, want), "bf16 plan's fp32 GEMM: operands rounded to bf16 (FAST_16BF)");
}

/* one typed GEMM: t16 A and B (offset elements off 256-byte alignment), C of
 * type tc, bias of tc's values; checked against `how` */
static void typed_case(wf_ctx *c, cudaDataType_t t16, cudaDataType_t tc, int transA, int transB, float beta,
                       bool with_bias, long offset, Bias how, const char *what) {
    Shape s = shape(transA, transB, 6, 8, 5, 2);
    Mat A(t16, (long)(transA ? s.K : s.M) * s.lda, offset), B(t16, (long)(transB ? s.N : s.K) * s.ldb, offset);
    Mat C(tc, (long)s.M * s.ldc, offset);
    std::vector<float> bias = with_bias ? bias_of(tc, s.N) : std::vector<float>();
    std::vector<float> want = expected(s, 1.0f, A, B, beta, C, bias, how, 0);
    wf_cuda_gemm(c, transA, transB, s.M, s.N, s.K, 1.0f, A.ptr(), t16, s.lda, B.ptr(), t16, s.ldb, beta, C.ptr(), tc,
                 s.ldc, with_bias ? bias.data() : NULL);
    sync();
    CHECK(same(C, want), "%s: %s A/B, %s C, transA %d transB %d, beta %g%s, %ld-element offset", what,
          t16 == CUDA_R_16BF ? "bf16" : "fp16", tc == CUDA_R_32F ? "fp32" : "16-bit", transA, transB, beta,
          with_bias ? ", bias" : "", offset);
}

static void typed_cases() {
    for (int p = 0; p < 2; p++) {
        int prec = p ? WF_FP16 : WF_BF16;
        cudaDataType_t t16 = p ? CUDA_R_16F : CUDA_R_16BF;
        wf_ctx *c = wf_storage_ctx(prec, 1);
        typed_case(c, t16, t16, 0, 0, 0.0f, true, 0, EPILOGUE, "act16 linear");
        typed_case(c, t16, t16, 0, 1, 1.0f, false, 0, EPILOGUE, "act16 dx += dy W");
        typed_case(c, t16, CUDA_R_32F, 1, 0, 1.0f, false, 0, EPILOGUE, "act16 dW += x^T dy");
        typed_case(c, t16, t16, 0, 0, 0.0f, true, 1, EPILOGUE, "act16 linear, less aligned");
        typed_case(NULL, t16, t16, 0, 0, 0.0f, true, 0, EPILOGUE, "typed GEMM with c NULL");
    }
    /* the other 16-bit type than the context's plan: the bias follows typeC */
    typed_case(wf_storage_ctx(WF_FP16, 1), CUDA_R_16BF, CUDA_R_16BF, 0, 0, 0.0f, true, 0, EPILOGUE,
               "bf16 GEMM under an fp16 context");
}

static void gelu_cases() {
    Shape s = shape(0, 0, 5, 8, 6, 0); /* ldc 8 */
    for (int with_bias = 0; with_bias < 2; with_bias++) {
        Mat A(CUDA_R_32F, (long)s.M * s.lda), B(CUDA_R_32F, (long)s.K * s.ldb), C(CUDA_R_32F, (long)s.M * s.ldc),
            aux(CUDA_R_32F, (long)s.M * s.ldc);
        std::vector<float> bias = with_bias ? bias_of(CUDA_R_32F, s.N) : std::vector<float>();
        std::vector<float> pre = expected(s, 1.0f, A, B, 0.0f, aux, bias, EPILOGUE, 0), want(pre);
        for (float &v : want) v = wf_gelu_value(v);
        int took = wf_cuda_sgemm_bias_gelu(NULL, s.M, s.N, s.K, (float *)A.ptr(), s.lda, (float *)B.ptr(), s.ldb,
                                           (float *)C.ptr(), s.ldc, with_bias ? bias.data() : NULL,
                                           (float *)aux.ptr());
        sync();
        CHECK(took == 1 && same(aux, pre) && same(C, want), "GELU_AUX%s epilogue: aux = the GELU's input, C its GELU",
              with_bias ? "_BIAS" : "");
    }
    Shape odd = shape(0, 0, 5, 7, 6, 0); /* ldc 7: the aux LD rule fails, nothing launched */
    Mat A(CUDA_R_32F, 5L * 6), B(CUDA_R_32F, 6L * 7), C(CUDA_R_32F, 5L * 7), aux(CUDA_R_32F, 5L * 7);
    CHECK(wf_cuda_sgemm_bias_gelu(NULL, odd.M, odd.N, odd.K, (float *)A.ptr(), odd.lda, (float *)B.ptr(), odd.ldb,
                                  (float *)C.ptr(), odd.ldc, NULL, (float *)aux.ptr()) == 0,
          "GELU epilogue with ldc 7 (not a multiple of 8): 0, the caller's fallback");
    CHECK(wf_cuda_sgemm_bias_gelu(wf_storage_ctx(WF_BF16, 0), s.M, s.N, s.K, (float *)A.ptr(), s.lda,
                                  (float *)B.ptr(), s.ldb, (float *)C.ptr(), s.ldc, NULL, (float *)aux.ptr()) == 0,
          "GELU epilogue in a bf16 plan: 0");
}

/* D (M, ldd) = gelu'(aux) * (A @ B^T), rounded once to D's type, whatever D
 * held before; A, B, D and aux of type t (fp32 under c NULL, an fp32 plan) */
static void dgelu_case(wf_ctx *c, cudaDataType_t t, const char *what) {
    Shape s = shape(0, 1, 5, 8, 6, 0); /* ldc 8 */
    Mat A(t, (long)s.M * s.lda), B(t, (long)s.N * s.ldb), D(t, (long)s.M * s.ldc), aux(t, (long)s.M * s.ldc);
    Mat acc0(CUDA_R_32F, (long)s.M * s.ldc);
    std::vector<float> acc = expected(s, 1.0f, A, B, 0.0f, acc0, std::vector<float>(), EPILOGUE, 0), want(acc);
    for (size_t i = 0; i < want.size(); i++) want[i] = D.round(wf_gelu_grad(aux.v[i]) * acc[i]);
    int took = wf_cuda_gemm_dgelu(c, s.M, s.N, s.K, A.ptr(), s.lda, B.ptr(), s.ldb, t, D.ptr(), t, s.ldc, aux.ptr());
    sync();
    CHECK(took == 1 && same(D, want), "DGELU epilogue, %s: D = gelu'(aux) times the product", what);
}

static void dgelu_cases() {
    dgelu_case(NULL, CUDA_R_32F, "fp32");
    dgelu_case(wf_storage_ctx(WF_BF16, 1), CUDA_R_16BF, "bf16");
    dgelu_case(wf_storage_ctx(WF_FP16, 1), CUDA_R_16F, "fp16");
    Shape odd = shape(0, 1, 5, 7, 6, 0); /* ldd 7: the aux LD rule fails, nothing launched */
    Mat A(CUDA_R_32F, 5L * 6), B(CUDA_R_32F, 7L * 6), D(CUDA_R_32F, 5L * 8), aux(CUDA_R_32F, 5L * 8);
    std::vector<float> before(D.v);
    CHECK(wf_cuda_gemm_dgelu(NULL, odd.M, odd.N, odd.K, A.ptr(), odd.lda, B.ptr(), odd.ldb, CUDA_R_32F, D.ptr(),
                             CUDA_R_32F, odd.ldc, aux.ptr()) == 0 && (sync(), same(D, before)),
          "DGELU epilogue with ldd 7 (not a multiple of 8): 0, D untouched");
    Shape s = shape(0, 1, 5, 8, 6, 0);
    CHECK(wf_cuda_gemm_dgelu(wf_storage_ctx(WF_BF16, 0), s.M, s.N, s.K, A.ptr(), s.lda, B.ptr(), s.ldb, CUDA_R_32F,
                             D.ptr(), CUDA_R_32F, s.ldc, aux.ptr()) == 0,
          "DGELU epilogue on float operands of a bf16 plan (FAST_16BF): 0");
}

/* the heuristic refuses the bias (GELU) epilogues: new shapes (the plan
 * cache keeps the old ones' algorithms) reach gemm.cu's fallbacks */
static void fallback_cases() {
    setenv("WF_EMU_LT_REFUSE", "bias", 1);
    Shape s = shape(0, 1, 3, 9, 4, 1);
    Mat A(CUDA_R_32F, (long)s.M * s.lda), B(CUDA_R_32F, (long)s.N * s.ldb), C(CUDA_R_32F, (long)s.M * s.ldc);
    std::vector<float> bias = bias_of(CUDA_R_32F, s.N);
    std::vector<float> want = expected(s, 1.0f, A, B, 1.0f, C, bias, AFTER, 0);
    wf_cuda_sgemm_bias(NULL, 0, 1, s.M, s.N, s.K, 1.0f, (float *)A.ptr(), s.lda, 0, (float *)B.ptr(), s.ldb, 0, 1.0f,
                       (float *)C.ptr(), s.ldc, 0, 1, bias.data());
    sync();
    CHECK(same(C, want), "no bias epilogue, fp32: the bias kernel after the GEMM");
    for (int p = 0; p < 2; p++)
        typed_case(wf_storage_ctx(p ? WF_FP16 : WF_BF16, 1), p ? CUDA_R_16F : CUDA_R_16BF, p ? CUDA_R_16F : CUDA_R_16BF,
                   1, 1, 0.0f, true, 0, IN_C, "no bias epilogue, 16-bit C = bias, beta 1");
    setenv("WF_EMU_LT_REFUSE", "gelu", 1);
    Shape g = shape(0, 0, 3, 16, 4, 0);
    Mat A2(CUDA_R_32F, 3L * 4), B2(CUDA_R_32F, 4L * 16), C2(CUDA_R_32F, 3L * 16), aux(CUDA_R_32F, 3L * 16);
    CHECK(wf_cuda_sgemm_bias_gelu(NULL, g.M, g.N, g.K, (float *)A2.ptr(), g.lda, (float *)B2.ptr(), g.ldb,
                                  (float *)C2.ptr(), g.ldc, bias.data(), (float *)aux.ptr()) == 0,
          "no GELU epilogue algorithm: 0, the caller's fallback");
    setenv("WF_EMU_LT_REFUSE", "dgelu", 1);
    Shape d = shape(0, 1, 3, 16, 4, 0);
    Mat A3(CUDA_R_16BF, 3L * 4), B3(CUDA_R_16BF, 16L * 4), D3(CUDA_R_16BF, 3L * 16), aux3(CUDA_R_16BF, 3L * 16);
    CHECK(wf_cuda_gemm_dgelu(wf_storage_ctx(WF_BF16, 1), d.M, d.N, d.K, A3.ptr(), d.lda, B3.ptr(), d.ldb, CUDA_R_16BF,
                             D3.ptr(), CUDA_R_16BF, d.ldc, aux3.ptr()) == 0,
          "no DGELU epilogue algorithm: 0, the caller's fallback");
    unsetenv("WF_EMU_LT_REFUSE");
}

/* the act16 linear's GEMM (bias converted on the stream) in a captured graph */
static void capture_case() {
    wf_ctx *c = wf_storage_ctx(WF_BF16, 1);
    cudaStream_t st = wf_cuda_stream(c);
    Shape s = shape(0, 0, 4, 24, 8, 0);
    Mat A(CUDA_R_16BF, 4L * 8), B(CUDA_R_16BF, 8L * 24), C(CUDA_R_16BF, 4L * 24);
    std::vector<float> bias = bias_of(CUDA_R_16BF, s.N), none;
    std::vector<float> want = expected(s, 1.0f, A, B, 0.0f, C, bias, EPILOGUE, 0);
    /* warm-up (eager), as graph.c's first step */
    wf_cuda_gemm(c, 0, 0, s.M, s.N, s.K, 1.0f, A.ptr(), CUDA_R_16BF, s.lda, B.ptr(), CUDA_R_16BF, s.ldb, 0.0f,
                 C.ptr(), CUDA_R_16BF, s.ldc, bias.data());
    sync();
    for (long i = 0; i < (long)C.v.size(); i++) C.set(i, 0.0f);
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal);
    wf_cuda_gemm(c, 0, 0, s.M, s.N, s.K, 1.0f, A.ptr(), CUDA_R_16BF, s.lda, B.ptr(), CUDA_R_16BF, s.ldb, 0.0f,
                 C.ptr(), CUDA_R_16BF, s.ldc, bias.data());
    cudaError_t e = cudaStreamEndCapture(st, &graph);
    bool untouched = same(C, std::vector<float>(C.v.size(), 0.0f));
    if (e == cudaSuccess) e = cudaGraphInstantiate(&exec, graph, 0);
    if (e == cudaSuccess) e = cudaGraphLaunch(exec, st);
    sync();
    CHECK(e == cudaSuccess && untouched && same(C, want),
          "typed GEMM with bias captured after a warm-up and replayed (%s)", cudaGetErrorString(e));
}

int main() {
    fp32_cases();
    typed_cases();
    gelu_cases();
    dgelu_cases();
    fallback_cases();
    capture_case();
    printf("%s\n", failures ? "FAILED" : "all passed");
    return failures ? 1 : 0;
}
