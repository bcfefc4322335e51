/* gemm.cu: the row-major matrix products of the CUDA kernels, on cuBLASLt.
 *
 * A row-major X (r, c) with leading dimension ld is, to column-major cuBLAS,
 * X^T (c, r) with the same ld.  So row-major C = op(A) op(B) is column-major
 * C^T = op(B)^T op(A)^T: swap the operands and the sizes M and N, keep the
 * transposes.  In that column-major view D has N rows (the row-major
 * columns), which is what a bias epilogue broadcasts along: one bias value
 * per row-major column, as nn.Linear's bias.
 *
 * Compute type, by the plan's precision:
 *   fp32  CUBLAS_COMPUTE_32F: fp32 FMA, no TF32 (cuBLASLt uses reduced
 *         precision only where the compute type asks for it), so the two
 *         backends agree to fp32 reduction-order noise;
 *   bf16  CUBLAS_COMPUTE_32F_FAST_16BF, fp16 CUBLAS_COMPUTE_32F_FAST_16F
 *         (float activations: tensor parallelism; with act16, the typed
 *         GEMM below serves the linears and the LM head's forward):
 *         the operands stay fp32 in the arenas, but the generated code has
 *         already rounded every 16-bit tensor to a bf16 / fp16 value, so the
 *         library's down-conversion to 16 bits is exact and the product is a
 *         true bf16 / fp16 tensor-core GEMM with fp32 accumulation (the
 *         LM head's float dlogits included: its kernel rounds them).  The
 *         one exception is an operand kept in fp32 on purpose (the
 *         attention probabilities): that one is rounded by the conversion,
 *         as it would be by a framework storing it in 16 bits.  A frozen
 *         weight (weft.vlm's freeze: fp32 values, no master) is not:
 *         a GEMM reading one computes in fp32 (CUBLAS_COMPUTE_32F), as the
 *         CPU backend does (wf_frozen_weight).
 *
 * Typed operands (wf_cuda_gemm, for 16-bit activation storage: weft/rt.h):
 * A and B bf16 or fp16 (one type), C/D that type or fp32, CUBLAS_COMPUTE_32F
 * with fp32 scale type: exact products, fp32 accumulation, and a 16-bit D
 * rounded once (to nearest even), after alpha, beta * C and the bias, as
 * the CPU backend's sgemm and rounding call.  These are rows of
 * cublasLtMatmul's table of supported types (cuBLAS documentation,
 * docs.nvidia.com/cuda/cublas, "cublasLtMatmul()": computeType
 * CUBLAS_COMPUTE_32F, scaleType CUDA_R_32F, Atype/Btype CUDA_R_16BF with
 * Ctype CUDA_R_16BF or CUDA_R_32F, and the same with CUDA_R_16F); the
 * heuristic refuses any other (a clear failure below).  The bias epilogue
 * takes a bias of D's type, so a 16-bit D gets its float bias converted
 * (exactly: it is a parameter of a 16-bit plan, rounded) by a small kernel.
 *
 * GELU epilogue (wf_cuda_sgemm_bias_gelu, for the fused linear + GELU of
 * compiler/fuse.c): CUBLASLT_EPILOGUE_GELU_AUX_BIAS (GELU_AUX without a
 * bias) writes D = gelu(op(A) op(B) + bias) and the pre-activation, the
 * GELU's input that backward needs, to the aux matrix
 * (CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, same type as D: fp32 here).
 * Its GELU is the tanh approximation GPT-2 uses (PyTorch's fallback for this
 * epilogue is gelu(approximate="tanh")), evaluated with the library's own
 * tanh: agreement with runtime/cpu's tanhf is to fp32 rounding, not bit for
 * bit.  cublasLt.h's rules for the aux matrix: its leading dimension
 * (CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, in elements) is a multiple of 8 and
 * at least D's rows; the heuristic reads the aux pointer's alignment (so it
 * is part of the key below).  Used for fp32 plans only: under bf16 / fp16
 * the pre-activation must be rounded to 16 bits BEFORE the GELU reads it (the
 * CPU backend and the unfused ops do so), which no epilogue can; those
 * plans, and any call where the aux LD rule fails or the heuristic has no
 * algorithm for the epilogue (the FAST_16BF / FAST_16F compute types and
 * some shapes may have none), return 0 and the caller (linear.cu) runs the
 * BIAS epilogue and one elementwise kernel (round pre, gelu, round out).
 *
 * DGELU epilogue (wf_cuda_gemm_dgelu, for the linear input gradient that
 * takes the gelu's backward along, compiler/fuse.c): CUBLASLT_EPILOGUE_DGELU
 * writes D = gelu'(aux) * (alpha op(A) op(B) + beta C), aux the GELU's input
 * (the pre-activation), read with the same layout rules as the forward's aux
 * (an LD a multiple of 8, at least D's rows) and of D's type
 * (CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, said explicitly): fp32 for
 * fp32 plans, bf16 / fp16 under act16, where the 16-bit D is rounded once,
 * after gelu', from the fp32 accumulator, which is the CPU backend's
 * arithmetic (runtime/cpu/linear.c).  beta is 0 (gelu' would scale
 * C too): D is written, not accumulated.  Its derivative is that of the
 * tanh approximation (the forward epilogue's GELU), evaluated with the
 * library's own tanh: agreement with wf_gelu_grad is to fp32 rounding.
 * Returns 0 where it cannot serve (the FAST_16BF / FAST_16F compute types
 * of float operands, the aux LD rule, no algorithm): linear.cu falls back.
 *
 * Each distinct call (sizes, strides, transposes, batch, bias or not, GELU
 * / DGELU or not, compute type, types, pointer alignments) gets its descriptors and the
 * heuristic's best algorithm once, cached in a small table; later calls
 * only set the bias (and aux) pointer and launch.  The workspace (32 MiB) is allocated once.
 *
 * Timing: nothing here waits for the GPU (kernels are asynchronous): each
 * eager GEMM is bracketed by a pair of CUDA events, kept in a ring and read
 * once the ring is full, by then long finished.  GEMMs inside a captured CUDA
 * graph are neither timed nor counted, so the summary's GEMM share covers the
 * eager steps; bench/gpu_gpt2.sh's kernel profile covers every step. */
#include <cublasLt.h>
#include <stdint.h>
#include <string.h>

#include "cuda_rt.h"
#include "precision_bits.h"
#include "reduce.cuh"
#include "weft/runtime_buffers.h"

#define WORKSPACE_BYTES WF_CUBLASLT_WORKSPACE_BYTES
#define MAX_PLANS 256

typedef struct {
    /* the key */
    int transA, transB, M, N, K, lda, ldb, ldc, batch, has_bias;
    int gelu;           /* GELU_AUX(_BIAS) epilogue, the pre-activation to aux (ld ldc) */
    int dgelu;          /* DGELU epilogue, gelu' of aux (ld ldc, D's type) times the product */
    long sA, sB, sC;
    cublasComputeType_t compute;
    cudaDataType_t ta, tb, tc;  /* row-major A's, B's and C's (= D's) types */
    unsigned align[5];  /* A, B, C, bias, aux: the largest power of two (<= 256) dividing the address */
    /* what the key gets */
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatmulAlgo_t algo;
    const float *bias;  /* the first call's: the heuristic reads its alignment */
    float *aux;         /* the same for the GELU / DGELU epilogues' aux matrix */
    int separate_bias;  /* no algorithm takes the epilogue here: bias_rows_kernel after */
    int no_gelu;        /* no algorithm takes the GELU / DGELU epilogue here: the caller falls back */
} gemm_plan;

enum { RING = 64 };  /* GEMM timing's event pairs (below) */

/* This file's part of a context's state (cuda_rt.h's wf_cuda_ctx). */
struct wf_cuda_gemm {
    cublasLtHandle_t lt;
    void *workspace;
    gemm_plan plans[MAX_PLANS];
    int n_plans, next_evict;
    double flops, seconds;              /* the eager GEMMs' (see the top) */
    cudaEvent_t ev_start[RING], ev_end[RING];
    int ring_next, ring_used;
    uint16_t *bias16;                   /* bias_as's 16-bit bias */
    int bias16_cap;
};

static struct wf_cuda_gemm *gemm_of(wf_ctx *c) {
    wf_cuda_ctx *x = wf_cuda_of(c);
    if (!x->gemm) x->gemm = (struct wf_cuda_gemm *)wf_cuda_zalloc(c, sizeof *x->gemm, "gemm.cu's state");
    return x->gemm;
}

/* (a frozen weight, fp32 under a 16-bit plan, is read as it is: fp32) */
static cublasComputeType_t compute_type(wf_ctx *c, const void *A, const void *B) {
    if (wf_frozen_weight(c, A) || wf_frozen_weight(c, B)) return CUBLAS_COMPUTE_32F;
    switch (wf_ctx_precision(c)) {
    case WF_BF16: return CUBLAS_COMPUTE_32F_FAST_16BF;
    case WF_FP16: return CUBLAS_COMPUTE_32F_FAST_16F;
    default: return CUBLAS_COMPUTE_32F;
    }
}

static unsigned alignment(const void *p) {
    uintptr_t a = (uintptr_t)p;
    if (!a) return 256;
    a &= ~a + 1;  /* lowest set bit */
    return a > 256 ? 256 : (unsigned)a;
}

/* The alignment every matrix of a strided batch has: the first one's, or
 * less where the stride is less aligned (an odd head size, say). */
static unsigned batched_alignment(const void *p, int batch, long stride, long elem_bytes) {
    unsigned a = alignment(p);
    if (batch > 1) {
        unsigned s = alignment((const void *)(uintptr_t)(stride * elem_bytes));
        if (s < a) a = s;
    }
    return a;
}

static void ensure_lt(wf_ctx *c) {
    struct wf_cuda_gemm *G = gemm_of(c);
    if (G->lt) return;
    (void)wf_cuda_stream(c);  /* picks this rank's device first */
    WF_CUBLAS(c, cublasLtCreate(&G->lt));
    WF_CUDA(c, wf_cuda_malloc(c, &G->workspace, WORKSPACE_BYTES));
}

/* A column-major rows x cols layout of `type`, batched with stride `stride`. */
static cublasLtMatrixLayout_t layout(wf_ctx *c, cudaDataType_t type, int rows, int cols, int ld, int batch,
                                     long stride) {
    cublasLtMatrixLayout_t l;
    WF_CUBLAS(c, cublasLtMatrixLayoutCreate(&l, type, (uint64_t)rows, (uint64_t)cols, (int64_t)ld));
    if (batch > 1) {
        int32_t count = batch;
        int64_t offset = stride;
        WF_CUBLAS(c, cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                                      sizeof count));
        WF_CUBLAS(c, cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                      &offset, sizeof offset));
    }
    return l;
}

static void plan_free(wf_ctx *c, gemm_plan *g) {
    WF_CUBLAS(c, cublasLtMatrixLayoutDestroy(g->la));
    WF_CUBLAS(c, cublasLtMatrixLayoutDestroy(g->lb));
    WF_CUBLAS(c, cublasLtMatrixLayoutDestroy(g->lc));
    WF_CUBLAS(c, cublasLtMatmulDescDestroy(g->op));
}

/* The operation descriptor; with_bias: cuBLASLt's bias epilogue; g->gelu:
 * the GELU one (with the bias if with_bias), g->dgelu the DGELU one, aux at
 * g->aux. */
static cublasLtMatmulDesc_t make_op(wf_ctx *c, const gemm_plan *g, int with_bias) {
    cublasLtMatmulDesc_t op;
    cublasOperation_t opA = g->transA ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t opB = g->transB ? CUBLAS_OP_T : CUBLAS_OP_N;
    WF_CUBLAS(c, cublasLtMatmulDescCreate(&op, g->compute, CUDA_R_32F));
    /* the first operand is row-major B, the second row-major A (see the top) */
    WF_CUBLAS(c, cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &opB, sizeof opB));
    WF_CUBLAS(c, cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &opA, sizeof opA));
    if (g->gelu || g->dgelu || with_bias) {
        uint32_t epilogue = g->dgelu ? CUBLASLT_EPILOGUE_DGELU
                            : !g->gelu ? CUBLASLT_EPILOGUE_BIAS
                            : with_bias ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_AUX;
        WF_CUBLAS(c, cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                                    sizeof epilogue));
    }
    if (g->gelu || g->dgelu) {
        int64_t aux_ld = g->ldc;  /* aux is laid out as D (see the top for the rules) */
        WF_CUBLAS(c, cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &g->aux,
                                                    sizeof g->aux));
        WF_CUBLAS(c, cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &aux_ld,
                                                    sizeof aux_ld));
    }
    if (g->dgelu) {  /* D's type, the default, said explicitly */
        int32_t aux_type = g->tc;
        WF_CUBLAS(c, cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, &aux_type,
                                                    sizeof aux_type));
    }
    if (with_bias) {
        /* the bias is of D's type (cublasLt.h, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE:
         * "the same type as the elements of output matrix (Dtype)", the
         * exceptions being integer and fp8 kernels; the default, said
         * explicitly), one per row of column-major D, packed */
        int32_t bias_type = g->tc;
        WF_CUBLAS(c, cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type,
                                                    sizeof bias_type));
        WF_CUBLAS(c, cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g->bias,
                                                    sizeof g->bias));
    }
    return op;
}

/* The heuristic's best algorithm for g->op; 0 if it has none. */
static int best_algo(wf_ctx *c, gemm_plan *g) {
    cublasLtMatmulPreference_t pref;
    uint64_t ws = WORKSPACE_BYTES;
    WF_CUBLAS(c, cublasLtMatmulPreferenceCreate(&pref));
    WF_CUBLAS(c, cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                                      sizeof ws));
    /* the algorithm must suit the pointers of every later call with this key */
    static const cublasLtMatmulPreferenceAttributes_t aligns[4] = {
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES };
    const uint32_t values[4] = { g->align[1], g->align[0], g->align[2], g->align[2] };  /* Lt's A is our B */
    for (int k = 0; k < 4; k++)
        WF_CUBLAS(c, cublasLtMatmulPreferenceSetAttribute(pref, aligns[k], &values[k], sizeof values[k]));
    if (g->tc != CUDA_R_32F) {
        /* a 16-bit D is rounded once: no split-K that sums its partial
         * products in D's type (the INPLACE and OUTPUT_TYPE reduction
         * schemes would round each partial sum to 16 bits first) */
        uint32_t schemes = CUBLASLT_REDUCTION_SCHEME_NONE | CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
        WF_CUBLAS(c, cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
                                                          &schemes, sizeof schemes));
    }
    cublasLtMatmulHeuristicResult_t result;
    int found = 0;
    /* NOT_SUPPORTED: no algorithm for this configuration (an epilogue the
     * library does not offer here): as found == 0, the caller falls back */
    cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(gemm_of(c)->lt, g->op, g->la, g->lb, g->lc, g->lc, pref, 1,
                                                       &result, &found);
    if (st != CUBLAS_STATUS_SUCCESS && st != CUBLAS_STATUS_NOT_SUPPORTED)
        wf_cuda_fail(c, "cublasLtMatmulAlgoGetHeuristic", WF_CUDA_WHERE, cublasGetStatusString(st));
    if (st != CUBLAS_STATUS_SUCCESS) found = 0;
    WF_CUBLAS(c, cublasLtMatmulPreferenceDestroy(pref));
    if (found > 0) g->algo = result.algo;
    return found > 0;
}

/* Descriptors and algorithm for g's key (column-major:
 * D (N, M) = op(B) (N, K) op(A) (K, M), see the top).  Should no algorithm
 * take the bias epilogue for this shape, the plan is built without it and
 * the bias is added by a kernel after the GEMM (separate_bias). */
static void plan_build(wf_ctx *c, gemm_plan *g) {
    g->la = g->transB ? layout(c, g->tb, g->K, g->N, g->ldb, g->batch, g->sB)
                      : layout(c, g->tb, g->N, g->K, g->ldb, g->batch, g->sB);
    g->lb = g->transA ? layout(c, g->ta, g->M, g->K, g->lda, g->batch, g->sA)
                      : layout(c, g->ta, g->K, g->M, g->lda, g->batch, g->sA);
    g->lc = layout(c, g->tc, g->N, g->M, g->ldc, g->batch, g->sC);
    g->op = make_op(c, g, g->has_bias);
    if (best_algo(c, g)) return;
    if (g->gelu || g->dgelu) {  /* the caller computes it another way (see the top) */
        g->no_gelu = 1;
        return;
    }
    if (g->has_bias) {
        WF_CUBLAS(c, cublasLtMatmulDescDestroy(g->op));
        g->op = make_op(c, g, 0);
        g->separate_bias = 1;
        if (best_algo(c, g)) return;
    }
    char msg[200];
    snprintf(msg, sizeof msg, "no cuBLASLt algorithm for M %d N %d K %d batch %d", g->M, g->N, g->K, g->batch);
    wf_cuda_fail(c, "cublasLtMatmulAlgoGetHeuristic", WF_CUDA_WHERE, msg);
}

static int same_key(const gemm_plan *a, const gemm_plan *b) {
    return a->transA == b->transA && a->transB == b->transB && a->M == b->M && a->N == b->N &&
           a->K == b->K && a->lda == b->lda && a->ldb == b->ldb && a->ldc == b->ldc &&
           a->batch == b->batch && a->has_bias == b->has_bias && a->sA == b->sA && a->sB == b->sB &&
           a->sC == b->sC && a->gelu == b->gelu && a->dgelu == b->dgelu && a->compute == b->compute && a->ta == b->ta &&
           a->tb == b->tb && a->tc == b->tc && memcmp(a->align, b->align, sizeof a->align) == 0;
}

static gemm_plan *plan_for(wf_ctx *c, const gemm_plan *key) {
    struct wf_cuda_gemm *G = gemm_of(c);
    for (int i = 0; i < G->n_plans; i++)
        if (same_key(&G->plans[i], key)) return &G->plans[i];
    gemm_plan *g;
    if (G->n_plans < MAX_PLANS) {
        g = &G->plans[G->n_plans++];
    } else {  /* more shapes than a program has: recycle, oldest first */
        g = &G->plans[G->next_evict];
        G->next_evict = (G->next_evict + 1) % MAX_PLANS;
        plan_free(c, g);
    }
    *g = *key;
    plan_build(c, g);
    return g;
}

/* ---- GEMM time from a ring of event pairs (see the top) ---- */

static void read_oldest(wf_ctx *c) {
    struct wf_cuda_gemm *G = gemm_of(c);
    int i = (G->ring_next - G->ring_used + RING) % RING;
    float ms = 0.0f;
    WF_CUDA(c, cudaEventSynchronize(G->ev_end[i]));
    WF_CUDA(c, cudaEventElapsedTime(&ms, G->ev_start[i], G->ev_end[i]));
    G->seconds += 1e-3 * ms;
    G->ring_used--;
}

/* 1 (and the start event recorded) unless the stream is being captured */
static int timing_begin(wf_ctx *c, cudaStream_t s) {
    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    WF_CUDA(c, cudaStreamIsCapturing(s, &capturing));
    if (capturing != cudaStreamCaptureStatusNone) return 0;
    struct wf_cuda_gemm *G = gemm_of(c);
    if (!G->ev_start[0])
        for (int i = 0; i < RING; i++) {
            WF_CUDA(c, cudaEventCreate(&G->ev_start[i]));
            WF_CUDA(c, cudaEventCreate(&G->ev_end[i]));
        }
    if (G->ring_used == RING) read_oldest(c);
    WF_CUDA(c, cudaEventRecord(G->ev_start[G->ring_next], s));
    return 1;
}

static void timing_end(wf_ctx *c, cudaStream_t s) {
    struct wf_cuda_gemm *G = gemm_of(c);
    WF_CUDA(c, cudaEventRecord(G->ev_end[G->ring_next], s));
    G->ring_next = (G->ring_next + 1) % RING;
    G->ring_used++;
}

/* C (rows, cols) row-major with leading dimension ldc: C[r][j] += bias[j] */
__global__ static void bias_rows_kernel(float *C, const float *bias, int rows, int cols, int ldc) {
    long n = (long)rows * cols;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
        C[(i / cols) * ldc + i % cols] += bias[i % cols];
}

static long type_bytes(cudaDataType_t t) { return t == CUDA_R_32F ? 4 : 2; }

/* C (rows, cols) 16-bit, row-major with leading dimension ldc: every row
 * the bias's bits (the 16-bit D's fallback below: C = bias, then beta 1) */
__global__ static void bias_fill16_kernel(uint16_t *C, const uint16_t *bias, int rows, int cols, int ldc) {
    long n = (long)rows * cols;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
        C[(i / cols) * ldc + i % cols] = bias[i % cols];
}

/* bias (n floats, values of `type`) as `type` for the epilogue of a GEMM
 * with 16-bit D (the bias must be of D's type, see make_op), converted by
 * D's type, which need not be c's plan's (cuda_rt.h: c may be NULL), into a
 * buffer of its own (the cast buffer holds the weight then).  It grows in
 * the eager steps before any capture, as every size recurs each step; a
 * smaller one is kept, not freed, as a captured graph may still read it. */
static const void *bias_as(wf_ctx *c, cudaDataType_t type, const float *bias, int n) {
    if (!bias || type == CUDA_R_32F) return bias;
    struct wf_cuda_gemm *G = gemm_of(c);
    if (n > G->bias16_cap) {
        WF_CUDA(c, wf_cuda_malloc(c, (void **)&G->bias16, sizeof(uint16_t) * (size_t)n));
        G->bias16_cap = n;
    }
    wf_cuda_to16(c, G->bias16, type, bias, n);
    return G->bias16;
}

/* Every GEMM of this file but the GELU one: batched, typed, bias optional.
 * All fp32 takes the plan's compute type (see the top); 16-bit operands
 * CUBLAS_COMPUTE_32F, fp32 accumulation of exact products (cuBLASLt's
 * table of cublasLtMatmul's types: COMPUTE_32F with scale type fp32 takes
 * A/B bf16 or fp16 with C/D of the same type or fp32). */
static void gemm(wf_ctx *c, int transA, int transB, int M, int N, int K, float alpha, const void *A,
                 cudaDataType_t ta, int lda, long sA, const void *B, cudaDataType_t tb, int ldb, long sB,
                 float beta, void *C, cudaDataType_t tc, int ldc, long sC, int batch, const float *bias) {
    if (ta != tb || (tc != CUDA_R_32F && tc != ta))
        wf_cuda_fail(c, "wf_cuda_gemm", WF_CUDA_WHERE,
                     "A and B must have one type, and C fp32 or theirs (cuBLASLt's supported types)");
    ensure_lt(c);
    cudaStream_t s = wf_cuda_stream(c);
    const void *bias_d = bias_as(c, tc, bias, N);
    gemm_plan key;
    memset(&key, 0, sizeof key);
    key.transA = transA, key.transB = transB, key.M = M, key.N = N, key.K = K;
    key.lda = lda, key.ldb = ldb, key.ldc = ldc, key.batch = batch, key.has_bias = bias != NULL;
    key.sA = batch > 1 ? sA : 0, key.sB = batch > 1 ? sB : 0, key.sC = batch > 1 ? sC : 0;
    key.ta = ta, key.tb = tb, key.tc = tc;
    key.compute = ta == CUDA_R_32F && tc == CUDA_R_32F ? compute_type(c, A, B) : CUBLAS_COMPUTE_32F;
    key.align[0] = batched_alignment(A, batch, sA, type_bytes(ta));
    key.align[1] = batched_alignment(B, batch, sB, type_bytes(tb));
    key.align[2] = batched_alignment(C, batch, sC, type_bytes(tc)), key.align[3] = alignment(bias_d);
    key.bias = (const float *)bias_d;
    gemm_plan *g = plan_for(c, &key);
    if (bias && g->separate_bias && tc != CUDA_R_32F) {
        /* a bias kernel after the GEMM would round twice; instead C = the
         * bias (exact: its values are of C's type) and beta 1, which the
         * library rounds once after adding, as the epilogue would */
        if (beta != 0.0f || batch != 1)
            wf_cuda_fail(c, "wf_cuda_gemm", WF_CUDA_WHERE,
                         "no cuBLASLt algorithm takes the bias epilogue with 16-bit D, and C is not free (beta != 0)");
        WF_LAUNCH(bias_fill16_kernel, wf_blocks((long)M * N), WF_THREADS, 0, s)((uint16_t *)C,
                                                                               (const uint16_t *)bias_d, M, N, ldc);
        WF_CUDA(c, cudaGetLastError());
        beta = 1.0f;
        bias = NULL;  /* added by the product's beta C */
    }
    if (bias && !g->separate_bias)
        WF_CUBLAS(c, cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_d,
                                                    sizeof bias_d));
    int timed = timing_begin(c, s);
    struct wf_cuda_gemm *G = gemm_of(c);
    WF_CUBLAS(c, cublasLtMatmul(G->lt, g->op, &alpha, B, g->la, A, g->lb, &beta, C, g->lc, C, g->lc, &g->algo,
                                G->workspace, WORKSPACE_BYTES, s));
    if (bias && g->separate_bias) {
        if (batch != 1) wf_cuda_fail(c, "wf_cuda_sgemm_bias", WF_CUDA_WHERE, "a bias needs batch 1");
        WF_LAUNCH(bias_rows_kernel, wf_blocks((long)M * N), WF_THREADS, 0, s)((float *)C, bias, M, N, ldc);
        WF_CUDA(c, cudaGetLastError());
    }
    if (!timed) return;
    timing_end(c, s);
    G->flops += 2.0 * M * N * K * batch;
}

void wf_cuda_sgemm_bias(wf_ctx *c, int transA, int transB, int M, int N, int K, float alpha,
                        const float *A, int lda, long sA, const float *B, int ldb, long sB,
                        float beta, float *C, int ldc, long sC, int batch, const float *bias) {
    gemm(c, transA, transB, M, N, K, alpha, A, CUDA_R_32F, lda, sA, B, CUDA_R_32F, ldb, sB, beta, C, CUDA_R_32F,
         ldc, sC, batch, bias);
}

void wf_cuda_gemm(wf_ctx *c, int transA, int transB, int M, int N, int K, float alpha,
                  const void *A, cudaDataType_t typeA, int lda, const void *B, cudaDataType_t typeB,
                  int ldb, float beta, void *C, cudaDataType_t typeC, int ldc, const float *bias) {
    gemm(c, transA, transB, M, N, K, alpha, A, typeA, lda, 0, B, typeB, ldb, 0, beta, C, typeC, ldc, 0, 1,
         bias);
}

/* The GELU and DGELU epilogue GEMMs' launch: D = epilogue(A @ B (+ bias)),
 * alpha 1, beta 0, the aux operand (pre-activation) at aux. */
static void matmul_with_aux(wf_ctx *c, gemm_plan *g, int M, int N, int K, const void *A, const void *B,
                            void *D, const float *bias, const void *aux) {
    if (bias)
        WF_CUBLAS(c, cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                                    sizeof bias));
    WF_CUBLAS(c, cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux,
                                                sizeof aux));
    const float alpha = 1.0f, beta = 0.0f;
    cudaStream_t s = wf_cuda_stream(c);
    int timed = timing_begin(c, s);
    struct wf_cuda_gemm *G = gemm_of(c);
    WF_CUBLAS(c, cublasLtMatmul(G->lt, g->op, &alpha, B, g->la, A, g->lb, &beta, D, g->lc, D, g->lc, &g->algo,
                                G->workspace, WORKSPACE_BYTES, s));
    if (timed) {
        timing_end(c, s);
        G->flops += 2.0 * M * N * K;
    }
}

int wf_cuda_sgemm_bias_gelu(wf_ctx *c, int M, int N, int K, const float *A, int lda, const float *B,
                            int ldb, float *C, int ldc, const float *bias, float *aux) {
    if (compute_type(c, NULL, NULL) != CUBLAS_COMPUTE_32F || ldc % 8 != 0) return 0;  /* see the top */
    ensure_lt(c);
    gemm_plan key;
    memset(&key, 0, sizeof key);
    key.M = M, key.N = N, key.K = K, key.lda = lda, key.ldb = ldb, key.ldc = ldc, key.batch = 1;
    key.has_bias = bias != NULL, key.gelu = 1;
    key.compute = CUBLAS_COMPUTE_32F;
    key.ta = key.tb = key.tc = CUDA_R_32F;
    key.align[0] = alignment(A), key.align[1] = alignment(B), key.align[2] = alignment(C);
    key.align[3] = alignment(bias), key.align[4] = alignment(aux);
    key.bias = bias, key.aux = aux;
    gemm_plan *g = plan_for(c, &key);
    if (g->no_gelu) return 0;
    matmul_with_aux(c, g, M, N, K, A, B, C, bias, aux);
    return 1;
}

int wf_cuda_gemm_dgelu(wf_ctx *c, int M, int N, int K, const void *A, int lda, const void *B, int ldb,
                       cudaDataType_t typeAB, void *D, cudaDataType_t typeD, int ldd, const void *aux) {
    if (typeAB != typeD)
        wf_cuda_fail(c, "wf_cuda_gemm_dgelu", WF_CUDA_WHERE, "A, B, D and aux must have one type");
    /* (the plan's, not a frozen weight's: fp32 plans only, see the top) */
    cublasComputeType_t compute = typeAB == CUDA_R_32F ? compute_type(c, NULL, NULL) : CUBLAS_COMPUTE_32F;
    if (compute != CUBLAS_COMPUTE_32F || ldd % 8 != 0) return 0;  /* see the top */
    ensure_lt(c);
    gemm_plan key;
    memset(&key, 0, sizeof key);
    key.transA = 0, key.transB = 1, key.M = M, key.N = N, key.K = K;
    key.lda = lda, key.ldb = ldb, key.ldc = ldd, key.batch = 1, key.dgelu = 1;
    key.compute = compute;
    key.ta = key.tb = key.tc = typeAB;
    key.align[0] = alignment(A), key.align[1] = alignment(B), key.align[2] = alignment(D);
    key.align[3] = alignment(NULL), key.align[4] = alignment(aux);
    key.aux = (float *)aux;
    gemm_plan *g = plan_for(c, &key);
    if (g->no_gelu) return 0;
    matmul_with_aux(c, g, M, N, K, A, B, D, NULL, aux);
    return 1;
}

void wf_cuda_sgemm(wf_ctx *c, int transA, int transB, int M, int N, int K, float alpha,
                   const float *A, int lda, long sA, const float *B, int ldb, long sB,
                   float beta, float *C, int ldc, long sC, int batch) {
    wf_cuda_sgemm_bias(c, transA, transB, M, N, K, alpha, A, lda, sA, B, ldb, sB, beta, C, ldc, sC, batch,
                       NULL);
}

/* train.c's summary reads these (after the last step: every pair is done).
 * No context: the process's state, which the rank's context adopted
 * (cuda_ctx.c); the CPU backend's signature. */
extern "C" void wf_gemm_stats(double *seconds, double *flops) {
    struct wf_cuda_gemm *G = gemm_of(NULL);
    while (G->ring_used > 0) read_oldest(NULL);
    *seconds = G->seconds;
    *flops = G->flops;
}

extern "C" void wf_gemm_stats_reset(void) {
    struct wf_cuda_gemm *G = gemm_of(NULL);
    while (G->ring_used > 0) read_oldest(NULL);
    G->flops = G->seconds = 0.0;
}
