/* blas.h: the one place the CPU runtime calls BLAS.
 *
 * wf_sgemm computes, on row-major matrices,
 *     C (M,N) = alpha * op(A) (M,K) @ op(B) (K,N) + beta * C
 * where op(X) is X, or X transposed when transX is nonzero.  lda, ldb and ldc
 * are the row strides (in floats) of A, B and C as stored, so a sub-block of a
 * wider matrix can be passed without copying.
 *
 * Every call also adds its wall time and 2*M*N*K FLOPs to process-global
 * counters, so the runtime can report how much of a step is GEMM.  The
 * counters are plain globals: not safe to update from several threads at once.
 */
#ifndef WEFT_CPU_BLAS_H
#define WEFT_CPU_BLAS_H

void wf_sgemm(int transA, int transB, int M, int N, int K, float alpha,
              const float *A, int lda, const float *B, int ldb, float beta,
              float *C, int ldc);

/* One product's operands, in wf_sgemm's order. */
typedef struct {
    int transA, transB, M, N, K;
    float alpha;
    const float *A;
    int lda;
    const float *B;
    int ldb;
    float beta;
    float *C;
    int ldc;
} wf_gemm;

/* Two independent products (neither writes what the other reads or writes);
 * y may be NULL: wf_sgemm on x, then on y.  When wf_sgemm would cut both over
 * exactly two threads, each runs whole on a thread of its own instead: an
 * operand that both halves of a cut pack (the LM head's weight in its input
 * gradient) is packed once, and neither product waits for the slower half of
 * its cut.  Each product's bits are then those of one thread computing it
 * whole (test_sgemm_split), as are those of wf_sgemm's cut (blas.c cuts only
 * where the whole product's bits survive, on every kernel set tried:
 * test_sgemm_cut). */
void wf_sgemm_pair(const wf_gemm *x, const wf_gemm *y);

/* on: OpenBLAS runs one thread and wf_sgemm cuts large products over the
 * OpenMP threads (blas.c); off (the default): OpenBLAS threads itself. */
void wf_sgemm_split(int on);

/* Seconds spent in and FLOPs done by wf_sgemm since start or the last reset. */
void wf_gemm_stats(double *seconds, double *flops);
void wf_gemm_stats_reset(void);
/* FLOPs of products run outside wf_sgemm (threads' own cblas_sgemm calls,
 * attention.c), from one thread after they are done; their time is not counted. */
void wf_gemm_stats_add(double flops);

/* GFLOP/s of out(M,N) = A(M,K) @ B(K,N) through wf_sgemm, best of `reps`
 * (for benchmarks and weft-calibrate). */
double wf_sgemm_rate(int M, int N, int K, int reps);

#endif
