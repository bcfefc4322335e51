/* check_act16.h: kernel cases under 16-bit activation storage (weft/rt.h,
 * "Activation storage") in tests/gpu/check_kernels.c, which is built for
 * both backends.  A case gives a kernel its activations through act16_in and
 * reads them back through act16_out:
 *   - the CUDA builds (CHECK_ACT16_PACKED) pack the values as the plan's
 *     16-bit bits, run the kernel under a context with act16 set, and unpack;
 *   - the CPU build, which never stores 16 bits, keeps floats and rounds
 *     each output as the generated code's rounding call does.
 * Both then write the same floats, so the usual comparison applies. */
#ifndef CHECK_ACT16_H
#define CHECK_ACT16_H

#include <stdint.h>
#include <string.h>

#include "weft/rt.h"

void *wf_backend_alloc(const wf_ctx *c, size_t bytes);
void wf_backend_sync(wf_ctx *c);
wf_ctx *wf_storage_ctx(int precision, int act16);

/* The context an act16 case runs its kernels under. */
static inline wf_ctx *act16_ctx(int precision) {
#ifdef CHECK_ACT16_PACKED
    return wf_storage_ctx(precision, 1);
#else
    return wf_storage_ctx(precision, 0);
#endif
}

static inline float act16_round(int precision, float x) {
    return precision == WF_BF16 ? wf_bf16(x) : wf_fp16(x);
}

/* A kernel argument holding x's n values rounded to the 16-bit type (its
 * own allocation; x is left as it is). */
static inline float *act16_in(int precision, const float *x, long n) {
#ifdef CHECK_ACT16_PACKED
    uint16_t *h = (uint16_t *)wf_backend_alloc(NULL, sizeof(uint16_t) * (size_t)(n + 2));
    for (long i = 0; i < n; i++)
        h[i] = precision == WF_BF16 ? wf_bf16_bits(x[i]) : wf_fp16_bits(x[i]);
    return (float *)h;
#else
    float *y = (float *)wf_backend_alloc(NULL, sizeof(float) * (size_t)n);
    for (long i = 0; i < n; i++) y[i] = act16_round(precision, x[i]);
    return y;
#endif
}

/* The n values a kernel argument holds after the call, as floats, into dst
 * (the host waits for the device first). */
static inline void act16_out(int precision, float *dst, const float *arg, long n) {
    wf_backend_sync(NULL);
#ifdef CHECK_ACT16_PACKED
    const uint16_t *h = (const uint16_t *)arg;
    for (long i = 0; i < n; i++)
        dst[i] = precision == WF_BF16 ? wf_bf16_value(h[i]) : wf_fp16_value(h[i]);
#else
    for (long i = 0; i < n; i++) dst[i] = act16_round(precision, arg[i]);
#endif
}

#endif
