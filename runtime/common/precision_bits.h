/* precision_bits.h: rounding fp32 to bf16 / fp16 bits and back, ties to
 * even, as inline functions that both host code (precision_scalar.c,
 * runtime/cpu/precision.c, optim_cpu.c) and device kernels
 * (runtime/cuda/precision.cu, optim.cu: WF_HD makes them __host__ __device__)
 * compile, so the two backends round bit for bit alike.
 *
 * fp16: 1 sign, 5 exponent, 10 mantissa bits; the largest finite value is
 * 65504 and anything from 65520 up (the halfway point to 2^16) becomes inf;
 * below 2^-14 values are subnormal, in steps of 2^-24.  bf16: the top 16
 * bits of an fp32, so it has fp32's range and overflows only near FLT_MAX.
 * NaN stays NaN (quiet) in both. */
#ifndef WEFT_PRECISION_BITS_H
#define WEFT_PRECISION_BITS_H

#include <stdint.h>
#include <string.h>

#include "weft/rt.h"

#include "host_device.h"

static inline WF_HD uint16_t wf_hd_bf16_bits(float x) {
    uint32_t u = wf_hd_f32_bits(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u);  /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);  /* ties to even; a carry moves into the exponent */
    return (uint16_t)(u >> 16);
}

static inline WF_HD float wf_hd_bf16_value(uint16_t h) { return wf_hd_f32_from((uint32_t)h << 16); }

static inline WF_HD uint16_t wf_hd_fp16_bits(float x) {
    uint32_t u = wf_hd_f32_bits(x);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    u &= 0x7fffffffu;
    if (u > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((u >> 13) & 0x3ffu));  /* NaN */
    if (u >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);  /* >= 65520, or inf: inf */
    if (u < 0x38800000u) {  /* below 2^-14: a subnormal, counted in units of 2^-24 */
        int e = (int)(u >> 23);
        if (e < 102) return sign;  /* below 2^-25, the halfway point to 2^-24 */
        uint32_t m = (u & 0x7fffffu) | 0x800000u;
        int shift = 126 - e;  /* m * 2^(e - 150) in units of 2^-24 */
        uint32_t q = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1u))) q++;  /* may become the smallest normal */
        return (uint16_t)(sign | q);
    }
    uint32_t h = (((u >> 23) - 112u) << 10) | ((u & 0x7fffffu) >> 13), rem = u & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;  /* a carry moves into the exponent */
    return (uint16_t)(sign | h);
}

static inline WF_HD float wf_hd_fp16_value(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f) return wf_hd_f32_from(sign | 0x7f800000u | (m << 13));  /* inf, NaN */
    if (e == 0) {  /* zero or subnormal: m * 2^-24, exact in fp32 */
        float v = (float)m * 0x1p-24f;
        return sign ? -v : v;
    }
    return wf_hd_f32_from(sign | ((e + 112u) << 23) | (m << 13));
}

/* The plan's 16-bit type (enum wf_precision: WF_BF16, else fp16): h's
 * value, and x's bits */
static inline WF_HD float wf_hd_16_value(int precision, uint16_t h) {
    return precision == WF_BF16 ? wf_hd_bf16_value(h) : wf_hd_fp16_value(h);
}

static inline WF_HD uint16_t wf_hd_16_bits(int precision, float x) {
    return precision == WF_BF16 ? wf_hd_bf16_bits(x) : wf_hd_fp16_bits(x);
}

/* x rounded to the precision (enum wf_precision; fp32: x itself) */
static inline WF_HD float wf_hd_round(int precision, float x) {
    if (precision == WF_BF16) return wf_hd_bf16_value(wf_hd_bf16_bits(x));
    if (precision == WF_FP16) return wf_hd_fp16_value(wf_hd_fp16_bits(x));
    return x;
}

#endif
