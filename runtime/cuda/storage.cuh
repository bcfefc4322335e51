/* storage.cuh: how the CUDA kernels read and write activations (weft/rt.h,
 * "Activation storage"): floats, or under act16 the plan's bf16 / fp16 bits,
 * rounded with precision_bits.h so that a stored value is bit for bit the one
 * the CPU backend's rounding call makes.
 *
 * A kernel that touches activations is a template on one of the three
 * storage types; its host wrapper picks the instance with WF_BY_STORAGE:
 *
 *   WF_BY_STORAGE(c, S, WF_LAUNCH(gelu_kernel<S>, grid, block, 0, s)(
 *       wf_act<S>(out), wf_act<S>(inp), n));
 *
 * and the kernel reads S::load(inp, i) and writes S::store(out, i, v).
 * The memory-bound kernels move 16 bytes at a time instead where they can
 * (storage_vec.cuh: 8 16-bit values or 4 floats, the same conversions).
 * Saved state, parameters, gradients and scratch stay plain floats. */
#ifndef WEFT_STORAGE_CUH
#define WEFT_STORAGE_CUH

#include <stdint.h>

#include "precision_bits.h"
#include "weft/rt.h"

struct wf_st_f32 {
    typedef float raw;
    enum { bits = 32 };
    static __device__ __forceinline__ float load(const raw *p, long i) { return p[i]; }
    static __device__ __forceinline__ void store(raw *p, long i, float v) { p[i] = v; }
};

struct wf_st_bf16 {
    typedef uint16_t raw;
    enum { bits = 16 };
    static __device__ __forceinline__ float load(const raw *p, long i) { return wf_hd_bf16_value(p[i]); }
    static __device__ __forceinline__ void store(raw *p, long i, float v) { p[i] = wf_hd_bf16_bits(v); }
};

struct wf_st_fp16 {
    typedef uint16_t raw;
    enum { bits = 16 };
    static __device__ __forceinline__ float load(const raw *p, long i) { return wf_hd_fp16_value(p[i]); }
    static __device__ __forceinline__ void store(raw *p, long i, float v) { p[i] = wf_hd_fp16_bits(v); }
};

/* An rt.h activation pointer as the storage's element pointer. */
template <class S> static inline typename S::raw *wf_act(float *p) {
    return reinterpret_cast<typename S::raw *>(p);
}
template <class S> static inline const typename S::raw *wf_act(const float *p) {
    return reinterpret_cast<const typename S::raw *>(p);
}

/* Runs the statements after S with S naming the plan's 16-bit type (bf16 or
 * fp16), whatever the activations' storage: 16-bit gradients and dp sums
 * (grad16.cu, dp_comm.cu). */
#define WF_BY_16BIT(c, S, ...)                                                    \
    do {                                                                          \
        if (wf_ctx_precision(c) == WF_BF16) {                                     \
            typedef wf_st_bf16 S;                                                 \
            __VA_ARGS__;                                                          \
        } else {                                                                  \
            typedef wf_st_fp16 S;                                                 \
            __VA_ARGS__;                                                          \
        }                                                                         \
    } while (0)

/* ... with S naming the activation storage of c. */
#define WF_BY_STORAGE(c, S, ...)                                                  \
    do {                                                                          \
        if (!wf_ctx_act16(c)) {                                                   \
            typedef wf_st_f32 S;                                                  \
            __VA_ARGS__;                                                          \
        } else {                                                                  \
            WF_BY_16BIT(c, S, __VA_ARGS__);                                       \
        }                                                                         \
    } while (0)

#endif
