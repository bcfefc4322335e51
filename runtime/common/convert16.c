/* convert16.c: floats to and from the plan's 16-bit type, n at a time, on
 * the host (precision_bits.h's rounding).  Each element is converted on its
 * own, so the result is the same on any thread count; the branch on the
 * type is outside the loops, which then vectorize.  The CPU backend's
 * conversion hooks (runtime/cpu/backend_host.c) are these. */
#include "convert16.h"

#include "precision_bits.h"

void wf_widen16(int precision, float *dst, const uint16_t *src, long n) {
    if (precision == WF_BF16)
#pragma omp parallel for simd schedule(static) if (n > 65536)
        for (long i = 0; i < n; i++) dst[i] = wf_hd_bf16_value(src[i]);
    else
#pragma omp parallel for simd schedule(static) if (n > 65536)
        for (long i = 0; i < n; i++) dst[i] = wf_hd_fp16_value(src[i]);
}

void wf_narrow16(int precision, uint16_t *dst, const float *src, long n) {
    if (precision == WF_BF16)
#pragma omp parallel for simd schedule(static) if (n > 65536)
        for (long i = 0; i < n; i++) dst[i] = wf_hd_bf16_bits(src[i]);
    else
#pragma omp parallel for simd schedule(static) if (n > 65536)
        for (long i = 0; i < n; i++) dst[i] = wf_hd_fp16_bits(src[i]);
}

/* From the end, so that no value is overwritten before it is read: element
 * i's float covers the bits of elements 2i and 2i + 1, which are >= i. */
void wf_widen16_in_place(int precision, float *x, long n) {
    const uint16_t *src = (const uint16_t *)(const void *)x;
    for (long i = n - 1; i >= 0; i--) x[i] = wf_hd_16_value(precision, src[i]);
}

void wf_add_into16(int precision, uint16_t *dst, const float *src, long n) {
    if (precision == WF_BF16)
        for (long i = 0; i < n; i++) dst[i] = wf_hd_bf16_bits(wf_hd_bf16_value(dst[i]) + src[i]);
    else
        for (long i = 0; i < n; i++) dst[i] = wf_hd_fp16_bits(wf_hd_fp16_value(dst[i]) + src[i]);
}
