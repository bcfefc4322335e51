/* emu.h: a small CUDA-on-CPU emulator, so the CUDA backend's kernel source
 * (the .cu files of runtime/cuda) runs and is tested on machines without a GPU.
 *
 *   g++ -std=c++17 -x c++ -include tests/cuda_emu/emu.h -I<cuda>/include file.cu
 *
 * What is emulated:
 *   - the CUDA keywords (__global__ and __device__ are nothing, __shared__ is
 *     `static`: blocks run one after another in one OS thread, so a
 *     function-static is exactly one block's shared memory; it keeps the
 *     previous block's values, where a GPU's would be undefined);
 *   - WF_LAUNCH(kernel, grid, block, smem, stream)(args...): runs the whole grid
 *     before it returns, block after block; in a block every thread runs on
 *     a fiber (a 64 KiB stack above a guard page; fiber.h switches them)
 *     until it finishes or waits at a barrier, blocks and the block's
 *     threads in order (a thread that finishes hands its fiber to the next
 *     one, so threads that never wait share one stack and switch nothing;
 *     WF_EMU_ORDER=reverse: last to first, so a barrier
 *     missing between one thread's write and another's read, or a block
 *     reading what another block of the same launch writes, shows in one of
 *     the two orders); threadIdx/blockIdx/blockDim/gridDim are set per fiber;
 *   - __syncthreads, __syncwarp, __shfl{,_up,_down,_xor}_sync, __ballot_sync,
 *     __any_sync, __all_sync: real barriers among the block's / warp's
 *     threads.  A barrier that cannot complete (threads waiting at different
 *     barriers, or after some threads of the block or warp exited, which CUDA
 *     leaves undefined) is reported and the program exits 1, never hangs;
 *   - a segmentation fault in a kernel names the kernel, block and thread, and
 *     whether the thread overflowed its stack (guard pages below each);
 *   - dynamic shared memory through WF_DYNAMIC_SHARED(type, name) (kernels
 *     must use it: `extern __shared__` cannot be emulated; a per-launch
 *     buffer of the launch's smem bytes, filled with 0xff bytes (NaN floats)
 *     per block so reads before writes show), and the 48 KiB limit unless
 *     cudaFuncSetAttribute(MaxDynamicSharedMemorySize) raised it;
 *   - launch checks (threads per block, grid and block sizes, shared memory):
 *     a bad launch sets the error cudaGetLastError returns, as CUDA does;
 *   - tensor cores: nvcuda::wmma's 16x16x16 fragments of __half /
 *     __nv_bfloat16 with float accumulators (emu_wmma.h: every lane holds the
 *     whole tile; misaligned pointers and bad ldm are reported);
 *   - atomics (trivially atomic: fibers switch only at barriers), __ldg, the
 *     fast-math intrinsics as their exact libm versions, bf16/fp16 through
 *     the toolkit's own <cuda_bf16.h>/<cuda_fp16.h> host code;
 *   - the CUDA runtime calls the host wrappers make (errors, streams, events,
 *     memory, memcpy/memset, device queries: one device, or WF_EMU_DEVICES
 *     of them, names only), in emu.cc, synchronous: no libcudart is linked;
 *   - CUDA graphs as graph.c uses them: a stream capture records launches,
 *     asynchronous copies and memsets (a host wait, cudaMalloc or cudaFree
 *     during it is refused and invalidates it), a graph launch issues them
 *     again in order; which streams the capture holds (a stream joins by
 *     waiting on an event recorded in the capture; an operation on a stream
 *     that did not is reported; one that joined and was not joined back
 *     makes cudaStreamEndCapture return cudaErrorStreamCaptureUnjoined);
 *   - misaligned vector accesses (uint4, float4, bf16x2 ... off their
 *     alignment), which fault on a GPU: emu.cmake builds the kernels with
 *     UBSan's alignment check, which stops the process naming the line.
 * What is not:
 *   - warp operations with a partial mask (only masks naming every lane of
 *     the warp that exists; reported otherwise), warp-divergent shuffles;
 *   - launches from several host threads at once (reported), device-side
 *     launches (reported), cooperative groups;
 *   - timing, concurrency between streams or blocks, any memory model beyond
 *     sequential execution (so races that need real parallelism go unseen,
 *     although threads interleave at every barrier; a missing
 *     cudaStreamWaitEvent between two streams goes unseen unless it breaks
 *     a capture's stream rules above); graph
 *     nodes other than captured ones; cuBLAS and NCCL (the emulated build
 *     replaces gemm.cu with tests/cuda_emu/emu_gemm.cc, cuda_emu_gemm runs
 *     gemm.cu over emu_cublaslt.cc, and the kernel tests' library device.c with
 *     emu_device.cc: functions of those two that kernel files call need an
 *     emulated version there; the whole runtime, emu_runtime.cmake, runs
 *     device.c itself and NCCL as tests/nccl_fake's).
 *
 * Fault injection for the tests that must fail: WF_EMU_FAULT=shfl_down makes
 * __shfl_down_sync return the caller's own value; WF_EMU_FAULT=syncthreads
 * makes __syncthreads return without waiting. */
#ifndef WEFT_CUDA_EMU_H
#define WEFT_CUDA_EMU_H

#include <cuda_runtime.h>  /* types (dim3, uint3, cudaError_t...) and declarations only */
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

/* ---- keywords --------------------------------------------------------------- */
#undef __global__
#undef __device__
#undef __host__
#undef __shared__
#undef __constant__
#undef __managed__
#undef __forceinline__
#undef __noinline__
#undef __launch_bounds__
#define __global__
#define __device__
#define __host__
#define __shared__ static
#define __constant__
#define __managed__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)

/* ---- built-in variables (set by the scheduler for the running fiber) ------- */
inline uint3 threadIdx, blockIdx;
inline dim3 blockDim, gridDim;
constexpr int warpSize = 32;

namespace wf_emu {

/* Runs the grid; body() is one thread of the kernel with its arguments. */
void launch(const char *name, const void *kernel, dim3 grid, dim3 block, size_t smem,
            cudaStream_t stream, const std::function<void()> &body);
void *dynamic_smem();  /* this launch's dynamic shared memory */
void syncthreads();
/* Warp exchange: every lane of the calling thread's warp deposits `mine`; once
 * all have, returns the 32 deposits (indexed by lane; absent lanes hold 0). */
const uint64_t *warp_exchange(unsigned mask, uint64_t mine, const char *op);
int lane();            /* the calling thread's lane in its warp */
int warp_lanes();      /* lanes that exist in the calling thread's warp */
bool fault(const char *name);  /* WF_EMU_FAULT names this fault */
/* WF_EMU_ASYNC (emu.cc): run what is queued; queue op (or run it now) */
void drain();
void enqueue(std::function<void()> op);
/* the same for an operation issued on `stream`: during a capture the stream
 * must be one the capture holds (emu.cc, "which streams a capture holds") */
void enqueue_on(cudaStream_t stream, std::function<void()> op);
[[noreturn]] void kernel_error(const char *what);  /* names the kernel, block, thread; exits 1 */
bool pinned_host(const void *p);  /* p lies in a cudaMallocHost / cudaHostAlloc block */

template <class... P>
struct Launch {
    void (*kernel)(P...);
    const char *name;
    dim3 grid, block;
    size_t smem;
    cudaStream_t stream;
    template <class... A>
    void operator()(A &&...a) const {
        static_assert(sizeof...(A) == sizeof...(P), "kernel launched with the wrong argument count");
        /* the kernel's parameters, converted once; each thread gets its own
         * copies.  Held by the closure: under WF_EMU_ASYNC the grid runs later */
        auto args = std::make_shared<std::tuple<std::decay_t<P>...>>(
            static_cast<std::decay_t<P>>(std::forward<A>(a))...);
        auto k = kernel;
        launch(name, (const void *)kernel, grid, block, smem, stream,
               [args, k] { std::apply(k, *args); });
    }
};

template <class... P>
Launch<P...> make_launch(void (*kernel)(P...), const char *name, dim3 grid, dim3 block,
                         size_t smem, cudaStream_t stream) {
    return Launch<P...>{kernel, name, grid, block, smem, stream};
}

template <class T>
uint64_t bits_of(T v) {
    static_assert(sizeof(T) <= 8 && std::is_trivially_copyable<T>::value,
                  "warp shuffles of values up to 8 bytes");
    uint64_t b = 0;
    memcpy(&b, &v, sizeof v);
    return b;
}

template <class T>
T from_bits(uint64_t b) {
    T v;
    memcpy(&v, &b, sizeof v);
    return v;
}

/* lane src's value, or the caller's own where src is outside its width-wide
 * section of the warp or does not exist */
template <class T>
T shuffle(unsigned mask, T v, int src, int width, const char *op) {
    const uint64_t *all = warp_exchange(mask, bits_of(v), op);
    int me = lane(), base = me - me % width;
    if (src < base || src >= base + width || src >= warp_lanes()) return v;
    return from_bits<T>(all[src]);
}

}  // namespace wf_emu

#define WF_LAUNCH(kernel, grid, block, smem, stream) \
    ::wf_emu::make_launch(kernel, #kernel, grid, block, smem, stream)
#define WF_DYNAMIC_SHARED(type, name) type *name = reinterpret_cast<type *>(::wf_emu::dynamic_smem())

/* ---- barriers and warp operations ----------------------------------------------- */
inline void __syncthreads() { wf_emu::syncthreads(); }
inline void __syncwarp(unsigned mask = 0xffffffffu) { wf_emu::warp_exchange(mask, 0, "__syncwarp"); }
inline void __threadfence() {}
inline void __threadfence_block() {}

template <class T>
T __shfl_sync(unsigned mask, T v, int src, int width = warpSize) {
    int base = wf_emu::lane() - wf_emu::lane() % width;
    return wf_emu::shuffle(mask, v, base + ((src % width) + width) % width, width, "__shfl_sync");
}
template <class T>
T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = warpSize) {
    int src = wf_emu::fault("shfl_down") ? -1 : wf_emu::lane() + (int)delta;
    return wf_emu::shuffle(mask, v, src, width, "__shfl_down_sync");
}
template <class T>
T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = warpSize) {
    return wf_emu::shuffle(mask, v, wf_emu::lane() - (int)delta, width, "__shfl_up_sync");
}
template <class T>
T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = warpSize) {
    return wf_emu::shuffle(mask, v, wf_emu::lane() ^ lane_mask, width, "__shfl_xor_sync");
}
inline unsigned __ballot_sync(unsigned mask, int pred) {
    const uint64_t *all = wf_emu::warp_exchange(mask, pred != 0, "__ballot_sync");
    unsigned r = 0;
    for (int l = 0; l < wf_emu::warp_lanes(); l++) r |= (all[l] ? 1u : 0u) << l;
    return r;
}
inline int __any_sync(unsigned mask, int pred) { return __ballot_sync(mask, pred) != 0; }
inline int __all_sync(unsigned mask, int pred) {
    int n = wf_emu::warp_lanes();
    unsigned every = n == 32 ? 0xffffffffu : (1u << n) - 1;
    return __ballot_sync(mask, pred) == every;
}
/* no divergence is modelled: every lane that exists is active */
inline unsigned __activemask() {
    int n = wf_emu::warp_lanes();
    return n == 32 ? 0xffffffffu : (1u << n) - 1;
}

/* ---- atomics (fibers switch only at barriers, so plain read-modify-write) --- */
template <class T, class U>
T atomicAdd(T *p, U v) { T old = *p; *p = old + (T)v; return old; }
template <class T, class U>
T atomicSub(T *p, U v) { T old = *p; *p = old - (T)v; return old; }
template <class T, class U>
T atomicMax(T *p, U v) { T old = *p; if ((T)v > old) *p = (T)v; return old; }
template <class T, class U>
T atomicMin(T *p, U v) { T old = *p; if ((T)v < old) *p = (T)v; return old; }
template <class T, class U>
T atomicExch(T *p, U v) { T old = *p; *p = (T)v; return old; }
template <class T, class U, class V>
T atomicCAS(T *p, U cmp, V v) { T old = *p; if (old == (T)cmp) *p = (T)v; return old; }

/* ---- loads and math intrinsics ------------------------------------------------ */
template <class T>
T __ldg(const T *p) { return *p; }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float __expf(float x) { return expf(x); }
inline float __logf(float x) { return logf(x); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __tanf(float x) { return tanf(x); }
inline float __powf(float x, float y) { return powf(x, y); }
inline float __fdividef(float x, float y) { return x / y; }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fsqrt_rn(float x) { return sqrtf(x); }
inline float __frsqrt_rn(float x) { return 1.0f / sqrtf(x); }
inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __saturatef(float x) { return x < 0.0f ? 0.0f : x > 1.0f ? 1.0f : x; }
inline int __float_as_int(float x) { int i; memcpy(&i, &x, 4); return i; }
inline float __int_as_float(int i) { float x; memcpy(&x, &i, 4); return x; }
inline unsigned __float_as_uint(float x) { unsigned i; memcpy(&i, &x, 4); return i; }
inline float __uint_as_float(unsigned i) { float x; memcpy(&x, &i, 4); return x; }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __clz(int x) { return x ? __builtin_clz((unsigned)x) : 32; }
inline int __ffs(int x) { return __builtin_ffs(x); }

/* ---- tensor cores: nvcuda::wmma (emu_wmma.h) ----------------------------------- */
#include "emu_wmma.h"

#endif
