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

/* C (M,N) = A (M,K) @ B (N,K)^T (beta 0), in panels of `panel` columns of C
 * over the OpenMP threads (static schedule), each a single-threaded
 * cblas_sgemm; after each panel's product, on the same thread and while the
 * panel is still in cache, fn(arg, col0, cols) (a row pass of the caller's:
 * the classifier's row maxima, xent.c).  Each element of C is the same sum
 * over K as wf_sgemm's, on any thread count.  Timed and counted as wf_sgemm.
 * Small panels keep OpenBLAS's beta pass (the zeroing of C) and the
 * caller's pass in cache instead of two more trips through memory; each
 * panel repacks A, so K x M floats of A should be small beside a panel. */
typedef void wf_panel_fn(void *arg, int col0, int cols);
void wf_sgemm_nt_panels(int M, int N, int K, const float *A, int lda, const float *B, int ldb, float *C,
                        int ldc, int panel, wf_panel_fn *fn, void *arg);

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
