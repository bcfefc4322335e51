/* colsum.cu: the host side of colsum.cuh's two-pass column sums: how many
 * rows a chunk takes, the scratch of partial sums, and pass 2. */
#include "colsum.cuh"
#include "weft/runtime_buffers.h"

/* The partials [K][R][C] of one call at a time (calls are in stream order).
 * A fixed size, so the buffer never grows: the chunk count R is capped to
 * fit it (4 MiB: GPT-2's largest request, LayerNorm's two sums of C = 768 in
 * 256 chunks, takes 0.4 M floats). */
#define COLSUM_SCRATCH_FLOATS WF_COLSUM_SCRATCH_FLOATS

/* One per context (cuda_rt.h's wf_cuda_ctx). */
extern "C" float *wf_cuda_colsum_scratch(wf_ctx *c) {
    float *&scratch = wf_cuda_of(c)->colsum_scratch;
    if (!scratch)
        WF_CUDA(c, wf_cuda_malloc(c, (void **)&scratch, sizeof(float) * (size_t)COLSUM_SCRATCH_FLOATS));
    return scratch;
}

/* Rows per chunk for N rows, tiles column tiles and sums x C partials per
 * chunk: about COLSUM_TARGET_BLOCKS pass-1 blocks, at least COLSUM_MIN_CHUNK
 * rows each, no more chunks than the scratch holds or a grid's y allows.
 * N itself (R = 1, no scratch) where the scratch holds fewer than 2 chunks. */
extern "C" long wf_cuda_colsum_chunk(long N, long tiles, int sums, long C) {
    long fit = COLSUM_SCRATCH_FLOATS / ((long)sums * C), max_chunks = fit < 65535 ? fit : 65535;
    if (max_chunks < 2) return N;
    long rows = (N * tiles + COLSUM_TARGET_BLOCKS - 1) / COLSUM_TARGET_BLOCKS;
    if (rows < COLSUM_MIN_CHUNK) rows = COLSUM_MIN_CHUNK;
    if ((N + rows - 1) / rows > max_chunks) rows = (N + max_chunks - 1) / max_chunks;
    return rows;
}

/* Pass 2: a block of 32 x 32 threads owns 32 columns of one sum k; thread
 * (x, y) adds partials y, y + 32, ... of column x in order (in double), the
 * block adds its 32 rows of threads in a fixed tree, and the total into out
 * with one rounding. */
#define PASS2_Y 32

__global__ static void colsum_partials_kernel(wf_colsum_out out, const float *part, long R, long C) {
    __shared__ double sh[PASS2_Y][33]; /* padded: no bank conflicts */
    int k = blockIdx.y;
    long j = blockIdx.x * 32L + threadIdx.x;
    double acc = 0.0;
    if (j < C)
        for (long r = threadIdx.y; r < R; r += PASS2_Y) acc += part[((long)k * R + r) * C + j];
    sh[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    for (int h = PASS2_Y / 2; h > 0; h /= 2) {
        if ((int)threadIdx.y < h) sh[threadIdx.y][threadIdx.x] += sh[threadIdx.y + h][threadIdx.x];
        __syncthreads();
    }
    if (threadIdx.y == 0 && j < C) {
        float *o = wf_colsum_pick(out, k);
        o[j] = (float)(o[j] + sh[0][threadIdx.x]);
    }
}

extern "C" void wf_cuda_colsum_partials(wf_ctx *c, wf_colsum_out out, int sums, const float *part, long R,
                                        long C) {
    WF_LAUNCH(colsum_partials_kernel, dim3((unsigned)((C + 31) / 32), (unsigned)sums), dim3(32, PASS2_Y), 0,
              wf_cuda_stream(c))(out, part, R, C);
}
