/* storage_vec.cuh: activations read and written 16 bytes at a time (8 bf16 /
 * fp16 values in a uint4, or 4 floats in a float4) in the memory-bound
 * kernels, with storage.cuh's scalar access as the fallback.
 *
 * A kernel is a template on an access A = wf_io<S, W>: S the storage
 * (storage.cuh), W how many consecutive elements one A::load / A::store moves,
 * either 1 (S::load / S::store, any pointer and count) or wf_vec<S>::width
 * (one 16-byte access: the pointer plus the index must be 16-byte aligned).
 * Each element still goes through S's own conversion, so the values stored
 * are bit for bit the scalar path's.  The host wrapper picks W:
 *
 *   WF_BY_STORAGE(c, S, WF_BY_WIDTH(S, A, wf_vec_ok<S>(n, out, inp),
 *       WF_LAUNCH(gelu_fwd_kernel<A>, wf_blocks(n / A::width), ...)(...)));
 *
 * wf_vec_ok: the count (or a row's width) a multiple of the vector width and
 * every activation pointer 16-byte aligned; then every chunk of W elements
 * starting at a multiple of W is one aligned access.  Float parameters
 * (weights, tables) are read one float at a time on either path: their
 * offsets in the parameter buffers carry no alignment promise. */
#ifndef WEFT_STORAGE_VEC_CUH
#define WEFT_STORAGE_VEC_CUH

#include <stdint.h>

#include "reduce.cuh"
#include "storage.cuh"

/* The emulator (tests/cuda_emu) runs the kernels on a CPU, where a
 * misaligned 16-byte access works: it reports one instead, as a GPU would
 * fault, so a wrong host-side choice of the vector path shows in its tests. */
#ifdef WEFT_CUDA_EMU_H
#define WF_VEC_ALIGNED(p) \
    ((uintptr_t)(p) % 16 == 0 ? (void)0 : wf_emu::kernel_error("a misaligned 16-byte activation access"))
#else
#define WF_VEC_ALIGNED(p) ((void)0)
#endif

/* 16-byte access of S's elements: width, load (into width floats), store */
template <class S> struct wf_vec;

template <> struct wf_vec<wf_st_f32> {
    enum { width = 4 };
    static __device__ __forceinline__ void load(const float *p, long i, float *v) {
        WF_VEC_ALIGNED(p + i);
        float4 q = *reinterpret_cast<const float4 *>(p + i);
        v[0] = q.x;
        v[1] = q.y;
        v[2] = q.z;
        v[3] = q.w;
    }
    static __device__ __forceinline__ void store(float *p, long i, const float *v) {
        WF_VEC_ALIGNED(p + i);
        *reinterpret_cast<float4 *>(p + i) = make_float4(v[0], v[1], v[2], v[3]);
    }
};

/* 8 16-bit values in a uint4: element 2k in the low half of word k (the
 * lower address on a little-endian GPU), 2k + 1 in the high half */
template <class S> struct wf_vec_16bit {
    enum { width = 8 };
    static __device__ __forceinline__ float half_value(uint32_t word, int hi) {
        uint16_t h = (uint16_t)(hi ? word >> 16 : word & 0xffffu);
        return S::load(&h, 0);
    }
    static __device__ __forceinline__ uint32_t pair_bits(float lo, float hi) {
        uint16_t h[2];
        S::store(h, 0, lo);
        S::store(h, 1, hi);
        return (uint32_t)h[0] | (uint32_t)h[1] << 16;
    }
    static __device__ __forceinline__ void load(const uint16_t *p, long i, float *v) {
        WF_VEC_ALIGNED(p + i);
        uint4 q = *reinterpret_cast<const uint4 *>(p + i);
        uint32_t word[4] = { q.x, q.y, q.z, q.w };
#pragma unroll
        for (int k = 0; k < 4; k++) {
            v[2 * k] = half_value(word[k], 0);
            v[2 * k + 1] = half_value(word[k], 1);
        }
    }
    static __device__ __forceinline__ void store(uint16_t *p, long i, const float *v) {
        WF_VEC_ALIGNED(p + i);
        *reinterpret_cast<uint4 *>(p + i) =
            make_uint4(pair_bits(v[0], v[1]), pair_bits(v[2], v[3]), pair_bits(v[4], v[5]), pair_bits(v[6], v[7]));
    }
};

template <> struct wf_vec<wf_st_bf16> : wf_vec_16bit<wf_st_bf16> {};
template <> struct wf_vec<wf_st_fp16> : wf_vec_16bit<wf_st_fp16> {};

/* A kernel's access to activations: W elements at a time (see the top). */
template <class S, int W> struct wf_io {
    typedef typename S::raw raw;
    typedef S storage;
    enum { width = W };
    static_assert(W == (int)wf_vec<S>::width, "wf_io: width 1 or the storage's vector width");
    static __device__ __forceinline__ void load(const raw *p, long i, float *v) { wf_vec<S>::load(p, i, v); }
    static __device__ __forceinline__ void store(raw *p, long i, const float *v) { wf_vec<S>::store(p, i, v); }
};

template <class S> struct wf_io<S, 1> {
    typedef typename S::raw raw;
    typedef S storage;
    enum { width = 1 };
    static __device__ __forceinline__ void load(const raw *p, long i, float *v) { v[0] = S::load(p, i); }
    static __device__ __forceinline__ void store(raw *p, long i, const float *v) { S::store(p, i, v[0]); }
};

/* Whether n elements (a count, or a row width) at each of the pointers can
 * take S's vector path (host side). */
static inline bool wf_aligned16() { return true; }
template <class... P> static inline bool wf_aligned16(const void *p, P... rest) {
    return (uintptr_t)p % 16 == 0 && wf_aligned16(rest...);
}
template <class S, class... P> static inline bool wf_vec_ok(long n, P... pointers) {
    return n % wf_vec<S>::width == 0 && wf_aligned16(pointers...);
}

/* Runs the statements after A with A the access to S's activations: the
 * vector one where ok, else one element at a time. */
#define WF_BY_WIDTH(S, A, ok, ...)                                   \
    do {                                                             \
        if (ok) {                                                    \
            typedef wf_io<S, wf_vec<S>::width> A;                    \
            __VA_ARGS__;                                             \
        } else {                                                     \
            typedef wf_io<S, 1> A;                                   \
            __VA_ARGS__;                                             \
        }                                                            \
    } while (0)

/* j over the first elements of this thread's chunks of W elements of n
 * (grid-stride; n a multiple of W) */
#define WF_GRID_CHUNKS(j, n, W)                                                                  \
    for (long j = (blockIdx.x * (long)blockDim.x + threadIdx.x) * (W); j < (n);                  \
         j += (long)gridDim.x * blockDim.x * (W))

/* floats to S's storage, rounded (exact where they hold S's values): the
 * stores 16 bytes at a time where dst and n allow; the floats are read one
 * at a time (no alignment promise: parameters, tp staging) */
template <class A> __global__ static void wf_narrow_kernel(typename A::raw *dst, const float *src, long n) {
    WF_GRID_CHUNKS(i, n, A::width) {
        float v[A::width];
#pragma unroll
        for (int e = 0; e < A::width; e++) v[e] = src[i + e];
        A::store(dst, i, v);
    }
}

/* launches it on the stream (cuda_rt.h's WF_LAUNCH; the caller checks) */
template <class S> static inline void wf_narrow_launch(float *dst, const float *src, long n, cudaStream_t s) {
    WF_BY_WIDTH(S, A, wf_vec_ok<S>(n, dst),
                WF_LAUNCH(wf_narrow_kernel<A>, wf_blocks(n / A::width), WF_THREADS, 0, s)(wf_act<S>(dst), src, n));
}

/* i over the first elements of this thread's chunks of W elements of a row
 * of C (one block per row: chunks t, t + blockDim.x, ...; C a multiple of W) */
#define WF_ROW_CHUNKS(i, C, W) for (int i = (int)threadIdx.x * (W); i < (C); i += (int)blockDim.x * (W))

/* Threads for a one-block-per-row kernel on rows of C elements, W at a time:
 * the vector path takes fewer warps where a row has fewer chunks than
 * WF_THREADS (GPT-2's C = 768 is 96 chunks of 8: three warps rather than
 * eight mostly idle); a multiple of 32, as wf_block_sum needs.  The scalar
 * path keeps WF_THREADS. */
static inline int wf_row_threads(int C, int W) {
    if (W == 1) return WF_THREADS;
    int chunks = (C + W - 1) / W, t = (chunks + 31) / 32 * 32;
    return t < 32 ? 32 : t > WF_THREADS ? WF_THREADS : t;
}

#endif
