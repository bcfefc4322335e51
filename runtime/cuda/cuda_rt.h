/* cuda_rt.h: what the CUDA backend's files share: the stream every kernel
 * runs on, error checks that name the rank and the call,
 * and the row-major GEMM the kernels are written with (cuBLASLt, gemm.cu).
 *
 * Kernels run asynchronously on one compute stream per rank (its context's);
 * the host code in runtime/common/ waits for it (wf_backend_sync, async.c)
 * before it touches the managed-memory arenas.  NCCL runs on comm streams ordered
 * against it by events (coll_nccl.c); graph.c replays a captured step.
 * What the backend keeps between calls is the context's (wf_cuda_ctx). */
#ifndef WEFT_CUDA_RT_H
#define WEFT_CUDA_RT_H

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <stdlib.h>

#include "weft/rt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The CUDA backend's state, one part per file, hung off the execution
 * context (wf_ctx's `cuda`, runtime/common/internal.h) rather than kept in
 * file statics, so that two contexts of one process keep apart.  A file
 * creates its part (zeroed, wf_cuda_zalloc) at its first call on the
 * context: in setup or the eager warm-up step, before any capture. */
typedef struct wf_cuda_ctx {
    struct wf_cuda_device *device; /* device.c: the GPU, the compute stream, the allocation list */
    struct wf_cuda_gemm *gemm;     /* gemm.cu: cuBLASLt's handle, workspace, plans, GEMM timing */
    struct wf_cuda_cast *cast;     /* cast.c: the cast buffer, act16's weight copies */
    struct wf_cuda_nccl *nccl;     /* coll_nccl.c: communicators, comm streams and events */
    struct wf_cuda_graph *graph;   /* graph.c: the captured steps */
    struct wf_cuda_xent *xent;     /* xent.cu: the token losses' sums on the device */
    struct wf_cuda_optim *optim;   /* optim.cu: the range table on the device, norm scratch */
    struct wf_cuda_tc *tc;         /* attention_tc.cu: kernels given their shared memory */
    float *colsum_scratch;         /* colsum.cu: the partial column sums */
    float *dgelu_rows;             /* linear.cu: the DGELU fallback's float rows */
    long dgelu_rows_floats;
} wf_cuda_ctx;

/* c's state (cuda_ctx.c).  Contexts no rank set up (c NULL: generated
 * code's wf_copy, kernel tests; wf_storage_ctx's) share the process's own,
 * which the first rank context of the process adopts (wf_cuda_attach), so
 * that a rank's NULL calls act on its stream as before. */
wf_cuda_ctx *wf_cuda_of(const wf_ctx *c);
/* Gives c its state (device.c's wf_blas_threads, a rank's first backend
 * call): the process's own for the first context, a new one after. */
void wf_cuda_attach(wf_ctx *c);
/* The first rank context (NULL before wf_cuda_attach): calls without a
 * context report their errors as its rank. */
const wf_ctx *wf_cuda_rank_ctx(void);

/* The compute stream (created on first use, on the device wf_blas_threads
 * chose for this rank).  c may be NULL (kernel tests). */
cudaStream_t wf_cuda_stream(wf_ctx *c);

/* Reports "rank R: CALL failed (WHERE): MSG" and brings the job down. */
void wf_cuda_fail(wf_ctx *c, const char *call, const char *where, const char *msg)
    __attribute__((noreturn));
/* A file's part of the state (wf_cuda_ctx): `bytes` zeroed host bytes, or
 * the job goes down with `what` (the part, as "gemm.cu's state") as the site. */
static inline void *wf_cuda_zalloc(wf_ctx *c, size_t bytes, const char *what) {
    void *p = calloc(1, bytes);
    if (!p) wf_cuda_fail(c, "calloc", what, "out of host memory for the CUDA backend's state");
    return p;
}
/* End of every kernel wrapper: launch errors (no wait: kernels are async). */
void wf_cuda_sync(wf_ctx *c, const char *kernel);

/* cudaDevAttrConcurrentManagedAccess of the rank's device (device.c): 0
 * where host code may not touch managed memory while any kernel runs. */
int wf_cuda_concurrent_managed(wf_ctx *c);

/* Every allocation of runtime/cuda goes through these (device.c), which
 * count what the runtime itself holds for c (metrics.c compares it with the
 * plan): device memory (cudaMalloc and cudaMallocManaged) apart from pinned
 * host memory (cudaMallocHost).  They return CUDA's error, for WF_CUDA. */
cudaError_t wf_cuda_malloc(wf_ctx *c, void **p, size_t bytes);
cudaError_t wf_cuda_malloc_managed(wf_ctx *c, void **p, size_t bytes);
cudaError_t wf_cuda_malloc_host(wf_ctx *c, void **p, size_t bytes);
cudaError_t wf_cuda_free(wf_ctx *c, void *p);

/* Row-major, as wf_sgemm on the CPU, batched with element strides sA, sB, sC:
 *   C[i] (M,N) = alpha * op(A[i]) (M,K) @ op(B[i]) (K,N) + beta * C[i]. */
void wf_cuda_sgemm(wf_ctx *c, int transA, int transB, int M, int N, int K, float alpha,
                   const float *A, int lda, long sA, const float *B, int ldb, long sB,
                   float beta, float *C, int ldc, long sC, int batch);
/* The same with cuBLASLt's bias epilogue: C[i] += bias broadcast over the
 * rows (bias has N floats, one per column; NULL: none), in the same kernel. */
void wf_cuda_sgemm_bias(wf_ctx *c, int transA, int transB, int M, int N, int K, float alpha,
                        const float *A, int lda, long sA, const float *B, int ldb, long sB,
                        float beta, float *C, int ldc, long sC, int batch, const float *bias);

/* The typed GEMM (gemm.cu), row-major, batch 1, fp32 accumulation:
 *   C (M,N) = alpha * op(A) (M,K) @ op(B) (K,N) + beta * C + bias,
 * each matrix of its own cuBLASLt type: CUDA_R_32F, CUDA_R_16BF or
 * CUDA_R_16F, A and B of one type (cuBLASLt's rule), C fp32 or A's type.
 * A 16-bit C is read, and written rounded to nearest even, once.  bias (N
 * floats, NULL: none) holds values of C's type where C is 16-bit (a
 * parameter of a 16-bit plan: the conversion is exact).  All fp32: the
 * same as wf_cuda_sgemm_bias, bit for bit. */
void wf_cuda_gemm(wf_ctx *c, int transA, int transB, int M, int N, int K, float alpha,
                  const void *A, cudaDataType_t typeA, int lda, const void *B, cudaDataType_t typeB,
                  int ldb, float beta, void *C, cudaDataType_t typeC, int ldc, const float *bias);

/* A GEMM on activations (linear.cu, xent.cu; convert.cu), row-major, batch 1:
 *   C (M,N) = op(A) (M,K) @ op(B) (K,N) + beta * C + bias,
 * each matrix named by its role: WF_ACT, in c's activation storage (weft/rt.h);
 * WF_WEIGHT, a float parameter; WF_GRAD, a float gradient.  Without act16
 * every matrix is float: wf_cuda_sgemm_bias.  Under act16 a typed GEMM: a
 * weight is taken as c's 16-bit type (wf_cuda_weight16; exact: parameters
 * are rounded; one weight per call), so A and B are 16-bit and C 16-bit (an
 * activation) or float (a gradient). */
enum wf_gemm_role { WF_ACT, WF_WEIGHT, WF_GRAD };
/* n floats (values of `type`, CUDA_R_16BF or CUDA_R_16F: parameters of a
 * 16-bit plan are rounded) as that type at dst, on the stream (convert.cu;
 * act16's weights, and the biases of GEMMs with 16-bit D). */
void wf_cuda_to16(wf_ctx *c, void *dst, cudaDataType_t type, const float *src, long n);
void wf_cuda_act_gemm(wf_ctx *c, int transA, int transB, int M, int N, int K, const float *A,
                      enum wf_gemm_role roleA, int lda, const float *B, enum wf_gemm_role roleB, int ldb,
                      float beta, float *C, enum wf_gemm_role roleC, int ldc, const float *bias);

/* An activation pointer moved by n elements of c's activation storage
 * (floats, or 16-bit values under act16): a chunk of rows of a tensor. */
static inline const float *wf_cuda_act_at(wf_ctx *c, const float *x, long n) {
    return wf_ctx_act16(c) ? (const float *)((const unsigned short *)x + n) : x + n;
}

/* The fused linear + GELU's GEMM (gemm.cu, cuBLASLt's GELU_AUX(_BIAS)
 * epilogue), row-major, no transposes, batch 1:
 *   aux (M,N) = A (M,K) @ B (K,N) + bias (NULL: none), C = gelu(aux),
 * both with leading dimension ldc.  Returns 0, having launched nothing, where
 * the epilogue cannot serve (bf16 / fp16 plans, ldc not a multiple of 8, no
 * algorithm for it): the caller then computes the two another way. */
int wf_cuda_sgemm_bias_gelu(wf_ctx *c, int M, int N, int K, const float *A, int lda, const float *B,
                            int ldb, float *C, int ldc, const float *bias, float *aux);

/* The input gradient with the gelu's backward (gemm.cu, cuBLASLt's DGELU
 * epilogue), row-major, batch 1, B transposed:
 *   D (M,N) = gelu'(aux) * (A (M,K) @ B (N,K)^T),
 * A, B, D and aux of one type (fp32, or bf16 / fp16 with fp32 accumulation
 * and D rounded once), D and aux with leading dimension ldd; D is written,
 * not accumulated.  Returns 0, having launched nothing, where the epilogue
 * cannot serve (float operands of a bf16 / fp16 plan, ldd not a multiple of
 * 8, no algorithm for it): the caller then computes it another way. */
int wf_cuda_gemm_dgelu(wf_ctx *c, int M, int N, int K, const void *A, int lda, const void *B, int ldb,
                       cudaDataType_t typeAB, void *D, cudaDataType_t typeD, int ldd, const void *aux);

/* db[j] += column sums of dout (rows, C), launched on the stream (no sync):
 * colsum.cuh's two passes over chunks of rows, in a fixed order, so the
 * result does not depend on scheduling. */
void wf_cuda_colsum_add(wf_ctx *c, float *db, const float *dout, long rows, long C);

/* act16 under ZeRO-3 (and kernel tests): device memory of at least
 * `floats` floats for a weight converted to 16-bit values before a GEMM with
 * 16-bit activations (convert.cu), reused call after call on the compute
 * stream, so one conversion at a time.  The program's cast_numel (planned
 * by the compiler) is allocated at the first request, in the eager warm-up
 * step (graph.c captures later steps: no cudaMalloc inside a capture);
 * kernel tests (c NULL) get a buffer that grows.  A request past the plan
 * fails naming the call. */
float *wf_cuda_cast_buffer(wf_ctx *c, long floats);
/* act16 otherwise: the 16-bit copy of the GEMM weight w (n values, a whole
 * parameter's or its first n) in the plan's weight16_numel floats (cast.c),
 * allocated at the first request (the warm-up step, as above).  *convert
 * is 1 where the copy must be converted first: the parameters were written
 * since its last conversion (wf_params_changed, runtime/common/internal.h),
 * or it held another version of w (PipeDream-2BW).  NULL (and *convert 1)
 * where the plan keeps no copies: ZeRO-3, kernel tests.  A weight that is
 * not a parameter of the arena, or a layout past the plan, fails. */
void *wf_cuda_weight16_slot(wf_ctx *c, const float *w, long n, int *convert);
/* 16-bit working parameters (wf_program.param16): the stored 16-bit values
 * of the GEMM weight whose scratch slot w (n values from it) points into,
 * as the last wf_widen_params left it (a negative count, weft/rt.h); NULL
 * without param16 (and kernel tests).  A weight GEMM on any other address
 * under param16 fails: its floats were never written. */
const void *wf_cuda_weight16_in_place(wf_ctx *c, const float *w, long n);
/* Every copy is stale from here on (graph.c: a captured step converts each
 * weight at its first use, whatever the host recorded before; a replay's
 * conversions are not the host's record). */
void wf_cuda_weight16_forget(wf_ctx *c);
/* act16: the float weight w (n values of c's 16-bit type) as that type,
 * converted on the stream where needed (convert.cu): its copy, valid until
 * the parameters are written, or under ZeRO-3 the cast buffer, valid until
 * the next conversion. */
const void *wf_cuda_weight16(wf_ctx *c, const float *w, long n);

/* Token losses summed on the device (xent.cu) instead of returned to the
 * host: graph.c turns this on while it captures a step; wf_backend_loss_take
 * (async.c) reads and clears the sum. */
double *wf_cuda_loss_acc(wf_ctx *c);
void wf_cuda_loss_on_device(wf_ctx *c, int on);

/* The vocabulary-parallel head's pieces for its chunked form (xent.cu,
 * xent_vocab.c): wf_vocab_dlogits without the sum of the token losses, and
 * that sum over N losses as every head takes it (on the device when
 * wf_cuda_loss_on_device is on, then 0; else returned), `kernel` naming the
 * caller in errors. */
void wf_cuda_vocab_dlogits_rows(wf_ctx *c, float *dlogits, float *losses, const float *rowmax,
                                const double *stats, const int32_t *targets, float scale, int N, int VL,
                                int v_begin, int precision);
double wf_cuda_loss_sum(wf_ctx *c, const float *losses, int N, const char *kernel);

#ifdef __cplusplus
}
#endif

/* Every kernel launch is written WF_LAUNCH(kernel, grid, block, smem, stream)(args):
 * nvcc sees the usual triple chevrons, and tests/cuda_emu (which defines its
 * own WF_LAUNCH first) runs the same kernel source on the CPU. */
#ifndef WF_LAUNCH
#define WF_LAUNCH(kernel, grid, block, smem, stream) kernel<<<grid, block, smem, stream>>>
#endif

/* Dynamic shared memory (the launch's smem bytes) as `type *name`, written
 * WF_DYNAMIC_SHARED(float, tile); in a kernel.  One untyped extern array
 * under every name, so kernels of one file may use different types; the
 * emulator defines its own (a per-launch buffer). */
#ifndef WF_DYNAMIC_SHARED
#define WF_DYNAMIC_SHARED(type, name)                                      \
    extern __shared__ __align__(16) unsigned char wf_dynamic_smem_[];      \
    type *name = reinterpret_cast<type *>(wf_dynamic_smem_)
#endif

#define WF_CUDA_STR2(x) #x
#define WF_CUDA_STR(x) WF_CUDA_STR2(x)
#define WF_CUDA_WHERE __FILE__ ":" WF_CUDA_STR(__LINE__)
#define WF_CUDA(c, call)                                                           \
    do {                                                                           \
        cudaError_t wf_e_ = (call);                                                \
        if (wf_e_ != cudaSuccess)                                                  \
            wf_cuda_fail((c), #call, WF_CUDA_WHERE, cudaGetErrorString(wf_e_));    \
    } while (0)
#define WF_CUBLAS(c, call)                                                         \
    do {                                                                           \
        cublasStatus_t wf_s_ = (call);                                             \
        if (wf_s_ != CUBLAS_STATUS_SUCCESS)                                        \
            wf_cuda_fail((c), #call, WF_CUDA_WHERE, cublasGetStatusString(wf_s_)); \
    } while (0)

#endif
