/* colsum.cuh: deterministic column sums over many rows, shared by the bias
 * gradients (elementwise.cu), LayerNorm's dw and db (layernorm.cu) and
 * RMSNorm's dw (llama.cu).
 *
 * out_k[j] += sum over rows n of term_k(n, j), for K = 1 or 2 sums at once.
 * A kernel states its terms as a struct T (the sums it fills, and how one row
 * adds into them):
 *
 *   struct T {
 *       enum { sums = K };
 *       __device__ void add(long n, long at, float acc[][A::width]) const;
 *   };
 *
 * add reads A::width consecutive elements at offset at = n * C + j of its
 * activations (one A::load each, storage_vec.cuh) and adds each term into
 * acc[k][e].
 *
 * Two passes, no atomics, the same result every run: the rows are split
 * into R chunks of fixed length; pass 1 (a grid of column tiles x chunks)
 * sums each chunk's rows in order per thread and the block's threads in a
 * fixed order, writing one partial row per chunk to a float scratch
 * [K][R][C]; pass 2 (colsum.cu) adds each column's R partials in a fixed
 * order, in double, into out.  R depends on the call's shape only (N, C,
 * the sums, the access width), not on the device, so every GPU gives the
 * same bits; with R = 1 pass 1 adds into out itself.  (One block per 32
 * columns walking all N rows left most of an H200 idle: GPT-2's C = 768 is
 * 24 blocks for 132 multiprocessors.) */
#ifndef WEFT_CUDA_COLSUM_CUH
#define WEFT_CUDA_COLSUM_CUH

#include "cuda_rt.h"
#include "weft/runtime_buffers.h"
#include "storage_vec.cuh"

#define COLSUM_Y 8                /* rows of threads per pass-1 block (x: 32 column chunks) */
#define COLSUM_TARGET_BLOCKS 1024 /* pass-1 blocks to aim for: several per SM of a large GPU */
#define COLSUM_MIN_CHUNK WF_COLSUM_MIN_CHUNK /* rows per chunk at least: 8 rows per thread */

/* The K output vectors (floats, added to). */
struct wf_colsum_out {
    float *sum[2];
};

/* sum[k] without indexing the kernel parameter by a variable (which would
 * copy it to local memory) */
__device__ static inline float *wf_colsum_pick(const wf_colsum_out &out, int k) {
    return k == 0 ? out.sum[0] : out.sum[1];
}

/* colsum.cu: the scratch (COLSUM_SCRATCH_FLOATS, allocated at the first
 * request: the eager warm-up step, before any graph capture) and pass 2 */
extern "C" float *wf_cuda_colsum_scratch(wf_ctx *c);
extern "C" void wf_cuda_colsum_partials(wf_ctx *c, wf_colsum_out out, int sums, const float *part, long R,
                                        long C);
extern "C" long wf_cuda_colsum_chunk(long N, long tiles, int sums, long C);

/* Pass 1: block (tile, chunk) sums rows [chunk * rows, +rows) of the tile's
 * 32 * W columns; thread (x, y) takes columns x * W.. and the chunk's rows y,
 * y + COLSUM_Y, ... in order, then the block adds its COLSUM_Y rows of
 * threads in order y = 0, 1, ...  part NULL: into out (R = 1). */
template <class A, class T>
__global__ static void colsum_rows_kernel(T terms, wf_colsum_out out, float *part, long N, long C, long rows) {
    enum { W = A::width, K = T::sums, TILE = 32 * W };
    __shared__ float sh[K][COLSUM_Y][TILE];
    long tile0 = (long)blockIdx.x * TILE, j = tile0 + (long)threadIdx.x * W;
    long n0 = (long)blockIdx.y * rows, n1 = n0 + rows < N ? n0 + rows : N;
    float acc[K][W];
#pragma unroll
    for (int k = 0; k < K; k++)
#pragma unroll
        for (int e = 0; e < W; e++) acc[k][e] = 0.0f;
    if (j < C) {
#pragma unroll 4 /* several rows' loads in flight; the additions keep their order */
        for (long n = n0 + threadIdx.y; n < n1; n += COLSUM_Y) terms.add(n, n * C + j, acc);
    }
#pragma unroll
    for (int k = 0; k < K; k++)
#pragma unroll
        for (int e = 0; e < W; e++) sh[k][threadIdx.y][threadIdx.x * W + e] = acc[k][e];
    __syncthreads();
    for (int o = threadIdx.y * 32 + threadIdx.x; o < K * TILE; o += 32 * COLSUM_Y) {
        int k = o / TILE, col = o % TILE;
        if (tile0 + col >= C) continue;
        float s = sh[k][0][col];
        for (int y = 1; y < COLSUM_Y; y++) s += sh[k][y][col];
        if (part)
            part[((long)k * gridDim.y + blockIdx.y) * C + tile0 + col] = s;
        else
            wf_colsum_pick(out, k)[tile0 + col] += s;
    }
}

/* out += the column sums of terms over N rows of C columns (A the access:
 * C a multiple of A::width and the activations aligned where it is wider
 * than 1), launched on c's stream. */
template <class A, class T>
static void wf_colsum(wf_ctx *c, const T &terms, wf_colsum_out out, long N, long C) {
    if (N <= 0 || C <= 0) return;
    long tiles = (C + 32 * A::width - 1) / (32 * A::width);
    long rows = wf_cuda_colsum_chunk(N, tiles, T::sums, C), R = (N + rows - 1) / rows;
    float *part = R > 1 ? wf_cuda_colsum_scratch(c) : NULL;
    /* a pointer: WF_LAUNCH takes no comma in the kernel's name */
    void (*colsum_rows)(T, wf_colsum_out, float *, long, long, long) = colsum_rows_kernel<A, T>;
    WF_LAUNCH(colsum_rows, dim3((unsigned)tiles, (unsigned)R), dim3(32, COLSUM_Y), 0,
              wf_cuda_stream(c))(terms, out, part, N, C, rows);
    if (R > 1) wf_cuda_colsum_partials(c, out, T::sums, part, R, C);
}

#endif
