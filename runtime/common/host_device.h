/* host_device.h: WF_HD marks an inline function that both the host code and
 * CUDA device code compile (__host__ __device__ under nvcc, nothing in C), so
 * the two backends evaluate one expression (precision_bits.h, gelu_value.h,
 * rope_value.h); and the float <-> bits casts they share. */
#ifndef WEFT_HOST_DEVICE_H
#define WEFT_HOST_DEVICE_H

#if defined(__CUDACC__)
#define WF_HD __host__ __device__
#else
#define WF_HD
#endif

#include <stdint.h>
#include <string.h>

static inline WF_HD uint32_t wf_hd_f32_bits(float x) {
#if defined(__CUDA_ARCH__)
    return __float_as_uint(x);
#else
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
#endif
}

static inline WF_HD float wf_hd_f32_from(uint32_t u) {
#if defined(__CUDA_ARCH__)
    return __uint_as_float(u);
#else
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
#endif
}

#endif
