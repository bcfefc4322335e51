/* test_emu.cc: the CUDA emulator's own checks: block reductions through
 * shared memory and shuffles (runtime/cuda/reduce.cuh), warp shuffles and
 * votes, atomics, dynamic shared memory and its limit, a multi-block
 * grid-stride loop, 2D indices, 16-bit conversions, WMMA (tensor-core)
 * fragments against a plain loop, a captured and replayed CUDA graph (with
 * a fork to a second stream and its join, and the stream rules), and
 * that broken barriers, partial warp masks and WMMA memory the hardware
 * refuses are reported (in a forked child, which must exit 1 naming them). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "reduce.cuh"

static int failures;

#define CHECK(cond, ...)                                          \
    do {                                                          \
        if (cond) {                                               \
            printf("ok   ");                                      \
        } else {                                                  \
            printf("FAIL ");                                      \
            failures++;                                           \
        }                                                         \
        printf(__VA_ARGS__);                                      \
        printf("\n");                                             \
    } while (0)

static uint64_t rng = 0x2545f4914f6cdd1dull;
static float uniform() {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((rng >> 40) / 8388608.0 - 1.0);
}

/* ---- block reductions -------------------------------------------------------- */

__global__ static void block_reduce_kernel(double *sums, float *maxes, const float *x, int n) {
    const float *row = x + (long)blockIdx.x * n;
    double s = 0.0;
    float m = -INFINITY;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        s += row[i];
        m = fmaxf(m, row[i]);
    }
    s = wf_block_sum(s);
    m = wf_block_max(m);
    if (threadIdx.x == 0) {
        sums[blockIdx.x] = s;
        maxes[blockIdx.x] = m;
    }
}

static bool block_reduce_ok(int threads) {
    const int rows = 5, n = 1000;
    std::vector<float> x((size_t)rows * n);
    for (float &v : x) v = uniform();
    std::vector<double> sums(rows);
    std::vector<float> maxes(rows);
    WF_LAUNCH(block_reduce_kernel, rows, threads, 0, 0)(sums.data(), maxes.data(), x.data(), n);
    for (int r = 0; r < rows; r++) {
        double s = 0.0;
        float m = -INFINITY;
        for (int i = 0; i < n; i++) {
            s += x[(size_t)r * n + i];
            m = fmaxf(m, x[(size_t)r * n + i]);
        }
        if (fabs(sums[r] - s) > 1e-9 * (fabs(s) + 1.0) || maxes[r] != m) return false;
    }
    return cudaGetLastError() == cudaSuccess;
}

/* ---- warp shuffles and votes --------------------------------------------------- */

__global__ static void shuffle_kernel(int *out) {
    int lane = threadIdx.x % 32, base = threadIdx.x * 6;
    out[base + 0] = __shfl_sync(0xffffffffu, lane * 10, 3);          /* broadcast lane 3 */
    out[base + 1] = __shfl_up_sync(0xffffffffu, lane, 1);            /* lane - 1, lane 0 keeps */
    out[base + 2] = __shfl_down_sync(0xffffffffu, lane, 4, 16);      /* within halves of 16 */
    int s = lane; /* butterfly: every lane gets the warp's sum */
    for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
    out[base + 3] = s;
    out[base + 4] = (int)__ballot_sync(0xffffffffu, lane % 3 == 0);
    out[base + 5] = __all_sync(0xffffffffu, lane < 32) + 2 * __any_sync(0xffffffffu, lane == 7);
}

static bool shuffles_ok() {
    std::vector<int> out(64 * 6);
    WF_LAUNCH(shuffle_kernel, 1, 64, 0, 0)(out.data());
    unsigned third = 0;
    for (int l = 0; l < 32; l += 3) third |= 1u << l;
    for (int t = 0; t < 64; t++) {
        int lane = t % 32, *o = &out[t * 6];
        int down = lane % 16 + 4 < 16 ? lane + 4 : lane;
        if (o[0] != 30 || o[1] != (lane ? lane - 1 : 0) || o[2] != down || o[3] != 496 ||
            (unsigned)o[4] != third || o[5] != 3)
            return false;
    }
    return true;
}

/* ---- atomics --------------------------------------------------------------------- */

__global__ static void atomic_kernel(int *count, float *fsum, double *dsum, int *best) {
    int id = blockIdx.x * blockDim.x + threadIdx.x;
    atomicAdd(count, 1);
    atomicAdd(fsum, 0.5f);
    atomicAdd(dsum, (double)id);
    atomicMax(best, (id * 37) % 1001);
}

static bool atomics_ok() {
    int count = 0, best = -1;
    float fsum = 0.0f;
    double dsum = 0.0;
    WF_LAUNCH(atomic_kernel, 8, 128, 0, 0)(&count, &fsum, &dsum, &best);
    int expect_best = 0;
    for (int id = 0; id < 1024; id++) expect_best = (id * 37) % 1001 > expect_best ? (id * 37) % 1001 : expect_best;
    return count == 1024 && fsum == 512.0f && dsum == 1023.0 * 1024 / 2 && best == expect_best;
}

/* ---- dynamic shared memory ----------------------------------------------------- */

/* each block reverses its slice of x through shared memory */
__global__ static void reverse_kernel(float *y, const float *x) {
    WF_DYNAMIC_SHARED(float, tile);
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    tile[threadIdx.x] = x[i];
    __syncthreads();
    y[i] = tile[blockDim.x - 1 - threadIdx.x];
}

static bool dynamic_smem_ok() {
    const int threads = 96, blocks = 3;
    std::vector<float> x(threads * blocks), y(threads * blocks);
    for (float &v : x) v = uniform();
    WF_LAUNCH(reverse_kernel, blocks, threads, threads * sizeof(float), 0)(y.data(), x.data());
    for (int b = 0; b < blocks; b++)
        for (int t = 0; t < threads; t++)
            if (y[b * threads + t] != x[b * threads + threads - 1 - t]) return false;
    return cudaGetLastError() == cudaSuccess;
}

/* 64 KiB needs cudaFuncSetAttribute first, as on a GPU */
__global__ static void big_smem_kernel(float *out) {
    WF_DYNAMIC_SHARED(float, big);
    big[16383] = 1.0f;
    __syncthreads();
    if (threadIdx.x == 0) *out = big[16383] + 1.0f;
}

static bool smem_limit_ok() {
    float out = 0.0f;
    size_t bytes = 64 * 1024;
    WF_LAUNCH(big_smem_kernel, 1, 32, bytes, 0)(&out);
    bool refused = cudaGetLastError() == cudaErrorInvalidValue && out == 0.0f;
    bool set = cudaFuncSetAttribute((const void *)big_smem_kernel,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes) == cudaSuccess;
    WF_LAUNCH(big_smem_kernel, 1, 32, bytes, 0)(&out);
    return refused && set && cudaGetLastError() == cudaSuccess && out == 2.0f;
}

/* ---- grid-stride loop over several blocks, 2D indices -------------------------------- */

__global__ static void grid_stride_kernel(float *y, int *visits, const float *x, long n) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        y[i] = 2.0f * x[i] + (float)i;
        atomicAdd(&visits[i], 1);
    }
}

static bool grid_stride_ok() {
    const long n = 1000;
    std::vector<float> x(n), y(n);
    std::vector<int> visits(n, 0);
    for (float &v : x) v = uniform();
    WF_LAUNCH(grid_stride_kernel, 3, 64, 0, 0)(y.data(), visits.data(), x.data(), n);
    for (long i = 0; i < n; i++)
        if (visits[i] != 1 || y[i] != 2.0f * x[i] + (float)i) return false;
    return true;
}

__global__ static void index_kernel(int *out, int width) {
    int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;
    out[row * width + col] = row * 1000 + col + (int)(gridDim.x * 100000 * (blockDim.y == 4));
}

static bool indices_ok() {
    const int width = 16, height = 12;
    std::vector<int> out(width * height, -1);
    WF_LAUNCH(index_kernel, dim3(2, 3), dim3(8, 4), 0, 0)(out.data(), width);
    for (int r = 0; r < height; r++)
        for (int c = 0; c < width; c++)
            if (out[r * width + c] != r * 1000 + c + 200000) return false;
    return true;
}

/* ---- a missing barrier: each scheduling order shows one direction of race ---- */

/* y[t] = x[t - 1] through shared memory, WITHOUT the __syncthreads between the
 * write and the read: correct only if thread t - 1 happens to run first */
__global__ static void racy_shift_kernel(float *y, const float *x) {
    __shared__ float tile[64];
    tile[threadIdx.x] = x[threadIdx.x];
    y[threadIdx.x] = threadIdx.x ? tile[threadIdx.x - 1] : 0.0f;
}

static bool racy_shift_right(const char *order) {
    std::vector<float> x(64), y(64);
    for (int i = 0; i < 64; i++) x[i] = uniform(); /* new values: tile keeps the last launch's */
    setenv("WF_EMU_ORDER", order, 1);
    WF_LAUNCH(racy_shift_kernel, 1, 64, 0, 0)(y.data(), x.data());
    unsetenv("WF_EMU_ORDER");
    for (int i = 1; i < 64; i++)
        if (y[i] != x[i - 1]) return false;
    return true;
}

/* block b reads block b - 1's output of the same launch: no order between
 * blocks is promised, so this is right only if block b - 1 ran first */
__global__ static void racy_blocks_kernel(float *y, const float *x) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = x[i];
    if (blockIdx.x > 0) y[i] += y[i - blockDim.x];
}

static bool racy_blocks_right(const char *order) {
    std::vector<float> x(4 * 32), y(4 * 32, 0.0f);
    for (float &v : x) v = uniform();
    setenv("WF_EMU_ORDER", order, 1);
    WF_LAUNCH(racy_blocks_kernel, 4, 32, 0, 0)(y.data(), x.data());
    unsetenv("WF_EMU_ORDER");
    for (int i = 32; i < 4 * 32; i++)  /* a running sum down the blocks */
        if (fabsf(y[i] - (y[i - 32] + x[i])) > 1e-6f) return false;
    return true;
}

/* ---- 16-bit types: the toolkit's host code under g++ ------------------------------ */

__global__ static void bf16_round_kernel(__nv_bfloat16 *b, __half *h, const float *x, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        b[i] = __float2bfloat16(x[i]);
        h[i] = __float2half(x[i]);
    }
}

static bool sixteen_bit_ok() {
    const int n = 300;
    std::vector<float> x(n);
    for (float &v : x) v = 100.0f * uniform();
    std::vector<__nv_bfloat16> b(n);
    std::vector<__half> h(n);
    WF_LAUNCH(bf16_round_kernel, 2, 64, 0, 0)(b.data(), h.data(), x.data(), n);
    for (int i = 0; i < n; i++) {
        float fb = __bfloat162float(b[i]), fh = __half2float(h[i]);
        /* round to nearest: within half a unit of the last place (8 and 11 bits) */
        if (fabsf(fb - x[i]) > fabsf(x[i]) * 0x1p-8f || fabsf(fh - x[i]) > fabsf(x[i]) * 0x1p-11f + 0x1p-24f)
            return false;
    }
    /* bf16 keeps float's exponent: 2^100 survives, fp16 overflows to inf */
    return __bfloat162float(__float2bfloat16(0x1p100f)) == 0x1p100f &&
           isinf(__half2float(__float2half(0x1p100f)));
}

/* ---- tensor cores (nvcuda::wmma, emu_wmma.h) ------------------------------------- */

/* One warp per block: D (16 x 32) = A (16 x 48) B (48 x 32) + C.  Block 0
 * reads B row-major and stores D row-major, block 1 reads the same B stored
 * column-major (bt) and stores D column-major (into dt). */
template <class T16>
__global__ static void wmma_kernel(float *d, float *dt, const T16 *a, const T16 *b, const T16 *bt,
                                   const float *c) {
    using namespace nvcuda;
    for (int n0 = 0; n0 < 32; n0 += 16) {
        wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
        wmma::load_matrix_sync(acc, c + n0, 32, wmma::mem_row_major);
        for (int k0 = 0; k0 < 48; k0 += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, T16, wmma::row_major> fa;
            wmma::load_matrix_sync(fa, a + k0, 48);
            if (blockIdx.x == 0) {
                wmma::fragment<wmma::matrix_b, 16, 16, 16, T16, wmma::row_major> fb;
                wmma::load_matrix_sync(fb, b + k0 * 32 + n0, 32);
                wmma::mma_sync(acc, fa, fb, acc);
            } else {
                wmma::fragment<wmma::matrix_b, 16, 16, 16, T16, wmma::col_major> fb;
                wmma::load_matrix_sync(fb, bt + n0 * 48 + k0, 48);
                wmma::mma_sync(acc, fa, fb, acc);
            }
        }
        if (blockIdx.x == 0) wmma::store_matrix_sync(d + n0, acc, 32, wmma::mem_row_major);
        else wmma::store_matrix_sync(dt + n0 * 16, acc, 16, wmma::mem_col_major);
    }
}

template <class T>
static T *aligned(size_t n) { return (T *)aligned_alloc(256, (n * sizeof(T) + 255) / 256 * 256); }

/* against a plain loop in double: the products are exact, the fp32 sums
 * within a few ulps */
template <class T16>
static bool wmma_ok(T16 (*round16)(float)) {
    T16 *a = aligned<T16>(16 * 48), *b = aligned<T16>(48 * 32), *bt = aligned<T16>(48 * 32);
    float *c = aligned<float>(16 * 32), *d = aligned<float>(16 * 32), *dt = aligned<float>(16 * 32);
    for (int i = 0; i < 16 * 48; i++) a[i] = round16(uniform());
    for (int k = 0; k < 48; k++)
        for (int n = 0; n < 32; n++) bt[n * 48 + k] = b[k * 32 + n] = round16(uniform());
    for (int i = 0; i < 16 * 32; i++) c[i] = uniform();
    WF_LAUNCH(wmma_kernel<T16>, 2, 32, 0, 0)(d, dt, a, b, bt, c);
    bool ok = true;
    for (int m = 0; m < 16; m++)
        for (int n = 0; n < 32; n++) {
            double want = c[m * 32 + n];
            for (int k = 0; k < 48; k++) want += (double)(float)a[m * 48 + k] * (double)(float)b[k * 32 + n];
            ok = ok && fabs(d[m * 32 + n] - want) < 1e-5 && fabs(dt[n * 16 + m] - want) < 1e-5;
        }
    free(a), free(b), free(bt), free(c), free(d), free(dt);
    return ok;
}

static __nv_bfloat16 to_bf16(float x) { return __float2bfloat16_rn(x); }
static __half to_fp16(float x) { return __float2half_rn(x); }

/* Lane 0 reads an element lane 1 stored: without __syncwarp it is not there
 * yet (store_matrix_sync writes a lane's share only, and does not wait). */
__global__ static void wmma_store_race_kernel(float *out, int sync) {
    using namespace nvcuda;
    WF_DYNAMIC_SHARED(float, tile);
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 2.0f);
    wmma::store_matrix_sync(tile, acc, 16, wmma::mem_row_major);
    if (sync) __syncwarp();
    out[threadIdx.x] = tile[(threadIdx.x + 1) % 32];
}

static bool wmma_store_race(int sync) {
    static float out[32];
    WF_LAUNCH(wmma_store_race_kernel, 1, 32, 256 * sizeof(float), 0)(out, sync);
    return out[0] == 2.0f;
}

/* what the hardware does not take: misaligned fragment pointers, ldm not a
 * multiple of 16 bytes */
__global__ static void wmma_misaligned_kernel(const __nv_bfloat16 *a) {
    nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, __nv_bfloat16, nvcuda::wmma::row_major> fa;
    nvcuda::wmma::load_matrix_sync(fa, a + 8, 16); /* 16 bytes past a 256-byte boundary */
}
__global__ static void wmma_bad_ldm_kernel(const __nv_bfloat16 *a) {
    nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, __nv_bfloat16, nvcuda::wmma::row_major> fa;
    nvcuda::wmma::load_matrix_sync(fa, a, 20); /* 40 bytes */
}
static __nv_bfloat16 *wmma_input() { return aligned<__nv_bfloat16>(16 * 64); }
static void launch_wmma_misaligned() { WF_LAUNCH(wmma_misaligned_kernel, 1, 32, 0, 0)(wmma_input()); }
static void launch_wmma_bad_ldm() { WF_LAUNCH(wmma_bad_ldm_kernel, 1, 32, 0, 0)(wmma_input()); }

/* ---- errors the emulator must report (in a child: they end the process) ----------- */

/* eight 16-bit values as one uint4, 2 bytes past a 16-byte boundary: a GPU
 * faults (misaligned address); the emulated build's alignment check stops */
__global__ static void misaligned_uint4_kernel(const uint16_t *x, uint4 *out) {
    out[threadIdx.x] = *reinterpret_cast<const uint4 *>(x + 1 + 8 * threadIdx.x);
}
static void launch_misaligned_uint4() {
    static uint4 buf[8], out[2];
    WF_LAUNCH(misaligned_uint4_kernel, 1, 2, 0, 0)(reinterpret_cast<const uint16_t *>(buf), out);
}

__global__ static void early_exit_kernel(int *out) {
    if (threadIdx.x >= 16) return;
    __syncthreads(); /* only the first 16 threads come here */
    out[threadIdx.x] = 1;
}

__global__ static void split_barrier_kernel(int *out) {
    if (threadIdx.x < 16) __syncwarp(); /* half of warp 0 waits here ... */
    else __syncthreads();                /* ... the rest of the block here */
    out[threadIdx.x] = 1;
}

__global__ static void partial_mask_kernel(int *out) {
    out[threadIdx.x] = __shfl_sync(0x0000ffffu, (int)threadIdx.x, 0);
}

/* a thread that needs far more than its 64 KiB of stack */
__device__ static int deep(int n) {
    volatile char pad[512];
    pad[0] = (char)n;
    return n ? deep(n - 1) + pad[0] : 0;
}

__global__ static void deep_stack_kernel(int *out) { out[threadIdx.x] = deep(1000); }

/* Runs launch() in a child; true if it exited 1 with `expect` on stderr. */
static bool reported(void (*launch)(), const char *expect) {
    int fd[2];
    if (pipe(fd) != 0) return false;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], 2);
        close(fd[0]);
        alarm(20); /* a hang would be the bug this checks for */
        launch();
        _exit(0);
    }
    close(fd[1]);
    std::string err;
    char buf[512];
    ssize_t got;
    while ((got = read(fd[0], buf, sizeof buf)) > 0) err.append(buf, (size_t)got);
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    printf("     child said: %s", err.empty() ? "(nothing)\n" : err.c_str());
    return WIFEXITED(status) && WEXITSTATUS(status) == 1 && err.find(expect) != std::string::npos;
}

/* ---- CUDA graphs: a capture records, a graph launch replays ------------------ */

__global__ static void add_one_kernel(int *x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += 1;
}

/* memset to 0, then +1, captured: nothing runs during the capture; each of
 * two launches gives 1; a host wait inside a capture is refused and the
 * capture comes back invalidated */
static bool graph_ok() {
    int x[100];
    for (int &v : x) v = -1;
    cudaStream_t s;
    cudaGraph_t g = nullptr;
    cudaGraphExec_t exec = nullptr;
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    bool ok = cudaStreamCreate(&s) == cudaSuccess && cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess &&
              cudaStreamIsCapturing(s, &status) == cudaSuccess && status == cudaStreamCaptureStatusActive &&
              cudaMemsetAsync(x, 0, sizeof x, s) == cudaSuccess;
    WF_LAUNCH(add_one_kernel, 2, 64, 0, s)(x, 100);
    size_t nodes = 0;
    ok = ok && x[0] == -1 && x[99] == -1 && cudaStreamEndCapture(s, &g) == cudaSuccess &&
         cudaGraphGetNodes(g, nullptr, &nodes) == cudaSuccess && nodes == 2 &&
         cudaGraphInstantiate(&exec, g, 0) == cudaSuccess && x[0] == -1;
    for (int launch = 0; ok && launch < 2; launch++) {
        ok = cudaGraphLaunch(exec, s) == cudaSuccess && cudaStreamSynchronize(s) == cudaSuccess;
        for (int v : x) ok = ok && v == 1;
    }
    cudaGraph_t bad = nullptr;
    ok = ok && cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess &&
         cudaStreamSynchronize(s) == cudaErrorStreamCaptureUnsupported &&
         cudaStreamEndCapture(s, &bad) == cudaErrorStreamCaptureInvalidated && bad == nullptr;
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(g);
    cudaStreamDestroy(s);
    return ok;
}

/* cudaMemGetInfo: device and managed blocks are in use until freed; pinned
 * host memory is not device memory */
static bool mem_info_counts_allocations() {
    size_t free0, total, free1, free2, free3;
    void *d = nullptr, *m = nullptr, *h = nullptr;
    bool ok = cudaMemGetInfo(&free0, &total) == cudaSuccess && cudaMalloc(&d, 1 << 20) == cudaSuccess &&
              cudaMallocManaged(&m, 3 << 20, cudaMemAttachGlobal) == cudaSuccess &&
              cudaMallocHost(&h, 5 << 20) == cudaSuccess && cudaMemGetInfo(&free1, &total) == cudaSuccess &&
              free0 - free1 == (4u << 20) && cudaFree(d) == cudaSuccess &&
              cudaMemGetInfo(&free2, &total) == cudaSuccess && free0 - free2 == (3u << 20) &&
              cudaFree(m) == cudaSuccess && cudaFreeHost(h) == cudaSuccess &&
              cudaMemGetInfo(&free3, &total) == cudaSuccess && free3 == free0;
    return ok;
}

/* cudaMalloc and cudaFree while a stream is captured: refused, and the
 * capture comes back invalidated (CUDA's thread-local mode); before and
 * after the capture both work */
static bool alloc_in_capture_refused() {
    cudaStream_t s;
    cudaGraph_t g = nullptr;
    void *before = nullptr, *during = nullptr;
    bool ok = cudaStreamCreate(&s) == cudaSuccess && cudaMalloc(&before, 64) == cudaSuccess &&
              cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess &&
              cudaMalloc(&during, 64) == cudaErrorStreamCaptureUnsupported && during == nullptr &&
              cudaFree(before) == cudaErrorStreamCaptureUnsupported &&
              cudaStreamEndCapture(s, &g) == cudaErrorStreamCaptureInvalidated && g == nullptr &&
              cudaFree(before) == cudaSuccess;
    cudaStreamDestroy(s);
    return ok;
}

/* A fork and a join inside a capture, as coll_nccl.c makes them: the side
 * stream joins by waiting on an event the origin recorded, the origin waits
 * on one the side recorded after its work; the replay runs both kernels.
 * Without that last wait the capture ends cudaErrorStreamCaptureUnjoined. */
static bool fork_join_ok(bool join_back) {
    int x[64] = { 0 };
    cudaStream_t s, side;
    cudaEvent_t fork, join;
    cudaGraph_t g = nullptr;
    cudaGraphExec_t exec = nullptr;
    cudaStreamCaptureStatus before = cudaStreamCaptureStatusActive, after = cudaStreamCaptureStatusNone;
    bool ok = cudaStreamCreate(&s) == cudaSuccess && cudaStreamCreate(&side) == cudaSuccess &&
              cudaEventCreate(&fork) == cudaSuccess && cudaEventCreate(&join) == cudaSuccess &&
              cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess &&
              cudaStreamIsCapturing(side, &before) == cudaSuccess && before == cudaStreamCaptureStatusNone;
    WF_LAUNCH(add_one_kernel, 1, 64, 0, s)(x, 64);
    ok = ok && cudaEventRecord(fork, s) == cudaSuccess && cudaStreamWaitEvent(side, fork, 0) == cudaSuccess &&
         cudaStreamIsCapturing(side, &after) == cudaSuccess && after == cudaStreamCaptureStatusActive;
    WF_LAUNCH(add_one_kernel, 1, 64, 0, side)(x, 64);
    if (join_back) ok = ok && cudaEventRecord(join, side) == cudaSuccess && cudaStreamWaitEvent(s, join, 0) == cudaSuccess;
    cudaError_t e = cudaStreamEndCapture(s, &g);
    if (!join_back) return ok && e == cudaErrorStreamCaptureUnjoined && g == nullptr && x[0] == 0;
    ok = ok && e == cudaSuccess && cudaGraphInstantiate(&exec, g, 0) == cudaSuccess && x[0] == 0 &&
         cudaGraphLaunch(exec, s) == cudaSuccess && cudaStreamSynchronize(s) == cudaSuccess;
    for (int v : x) ok = ok && v == 2;
    return ok;
}

/* a launch during a capture on a stream that never joined it */
static void launch_outside_capture() {
    static int x[64];
    cudaStream_t s, other;
    cudaStreamCreate(&s);
    cudaStreamCreate(&other);
    cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
    WF_LAUNCH(add_one_kernel, 1, 64, 0, other)(x, 64);
}

static int sink[256];
static void launch_early_exit() { WF_LAUNCH(early_exit_kernel, 1, 64, 0, 0)(sink); }
static void launch_split_barrier() { WF_LAUNCH(split_barrier_kernel, 1, 64, 0, 0)(sink); }
static void launch_deep_stack() { WF_LAUNCH(deep_stack_kernel, 1, 32, 0, 0)(sink); }
static void launch_partial_mask() { WF_LAUNCH(partial_mask_kernel, 1, 32, 0, 0)(sink); }

int main() {
    CHECK(block_reduce_ok(256), "wf_block_sum / wf_block_max, 256 threads (8 warps)");
    CHECK(block_reduce_ok(96), "wf_block_sum / wf_block_max, 96 threads (3 warps)");
    CHECK(shuffles_ok(), "__shfl_sync, __shfl_up/down/xor_sync (width 16 too), __ballot/__all/__any_sync");
    CHECK(atomics_ok(), "atomicAdd int/float/double, atomicMax over 8 blocks x 128 threads");
    CHECK(dynamic_smem_ok(), "dynamic shared memory (WF_DYNAMIC_SHARED), 3 blocks");
    CHECK(smem_limit_ok(), "64 KiB of dynamic shared memory: refused, then allowed by cudaFuncSetAttribute");
    CHECK(grid_stride_ok(), "grid-stride loop: 3 blocks x 64 threads cover 1000 elements once each");
    CHECK(indices_ok(), "2D grid and block: threadIdx/blockIdx/blockDim/gridDim .x and .y");
    CHECK(racy_shift_right("forward") && !racy_shift_right("reverse"),
          "a missing __syncthreads (read of thread t-1's write): hidden in thread order, caught by WF_EMU_ORDER=reverse");
    CHECK(racy_blocks_right("forward") && !racy_blocks_right("reverse"),
          "a block reading another block's output of the same launch: caught by WF_EMU_ORDER=reverse");
    CHECK(sixteen_bit_ok(), "__nv_bfloat16 and __half conversions in a kernel (cuda_bf16.h / cuda_fp16.h on the host)");
    CHECK(__bfloat162float(to_bf16(1.0f + 0x1p-8f)) == 1.0f &&
              __bfloat162float(to_bf16(1.0f + 3 * 0x1p-8f)) == 1.0f + 0x1p-6f &&
              __half2float(to_fp16(1.0f + 0x1p-11f)) == 1.0f,
          "__float2bfloat16_rn / __float2half_rn round ties to even");
    CHECK(wmma_ok<__nv_bfloat16>(to_bf16), "wmma 16x16x16 bf16: A row-major, B row- and col-major, C loaded, "
                                           "D stored row- and col-major, against a loop");
    CHECK(wmma_ok<__half>(to_fp16), "wmma 16x16x16 fp16, the same");
    CHECK(!wmma_store_race(0) && wmma_store_race(1),
          "wmma::store_matrix_sync then another lane's element: stale without __syncwarp, right with it");
    CHECK(graph_ok(), "a CUDA graph: capture records a memset and a launch without running them, two "
                      "launches replay them; a host wait while capturing invalidates the capture");
    CHECK(reported(launch_misaligned_uint4, "misaligned address"),
          "a uint4 load from a 16-bit array off its 16-byte boundary is reported (the build's alignment check)");
    CHECK(mem_info_counts_allocations(), "cudaMemGetInfo: cudaMalloc and cudaMallocManaged blocks in use "
                                          "until freed, pinned host memory not");
    CHECK(alloc_in_capture_refused(), "cudaMalloc / cudaFree while a stream is captured: refused, the capture "
                                       "invalidated");
    CHECK(fork_join_ok(true), "a capture forked to a second stream (an event wait) and joined back: the replay "
                              "runs both streams' kernels");
    CHECK(fork_join_ok(false), "a fork not joined back before cudaStreamEndCapture: cudaErrorStreamCaptureUnjoined");
    CHECK(reported(launch_outside_capture, "never joined"),
          "a launch during a capture on a stream that never joined it (a GPU runs it outside the graph) is reported");
    CHECK(reported(launch_wmma_misaligned, "not 256-bit"), "a wmma fragment load from a misaligned pointer is reported");
    CHECK(reported(launch_wmma_bad_ldm, "ldm 20"), "a wmma ldm that is not a multiple of 16 bytes is reported");
    CHECK(reported(launch_early_exit, "(undefined in CUDA)"),
          "a __syncthreads after some threads returned is reported");
    CHECK(reported(launch_split_barrier, "deadlock"),
          "threads split between __syncwarp and __syncthreads: deadlock reported, no hang");
    CHECK(reported(launch_partial_mask, "only masks naming every lane"),
          "a partial warp mask is reported as not emulated");
    CHECK(reported(launch_deep_stack, "stack guard"),
          "a thread overflowing its fiber stack is reported (kernel, block, thread), not silent");
    /* the barrier is real: without it, a block reduction comes out wrong */
    setenv("WF_EMU_FAULT", "syncthreads", 1);
    bool broken = !block_reduce_ok(256);
    unsetenv("WF_EMU_FAULT");
    CHECK(broken, "with __syncthreads disabled (WF_EMU_FAULT=syncthreads) the block sum is wrong");
    if (failures) printf("%d check(s) failed\n", failures);
    return failures ? 1 : 0;
}
