/* precision.c: 16-bit storage emulated on the CPU.
 *
 * Under precision = "bf16" or "fp16" the arenas stay float, but every value
 * written to a 16-bit tensor (parameters the kernels read, activations,
 * activation and parameter gradients) is rounded to the nearest bf16 / fp16
 * value, ties to even: numerically the same as storing it in 16 bits, while
 * the kernels keep accumulating in fp32 as tensor cores do.
 *
 * fp16: 1 sign, 5 exponent, 10 mantissa bits; the largest finite value is
 * 65504 and anything from 65520 up (the halfway point to 2^16) becomes inf;
 * below 2^-14 values are subnormal, in steps of 2^-24.  bf16: the top 16
 * bits of an fp32, so it has fp32's range and overflows only near FLT_MAX.
 * NaN stays NaN (quiet) in both. */
#include <string.h>

#include "weft/rt.h"

static uint32_t f32_bits(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static float f32_from(uint32_t u) {
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

uint16_t wf_bf16_bits(float x) {
    uint32_t u = f32_bits(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u);  /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);  /* ties to even; a carry moves into the exponent */
    return (uint16_t)(u >> 16);
}

float wf_bf16_value(uint16_t h) { return f32_from((uint32_t)h << 16); }

uint16_t wf_fp16_bits(float x) {
    uint32_t u = f32_bits(x);
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

float wf_fp16_value(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f) return f32_from(sign | 0x7f800000u | (m << 13));  /* inf, NaN */
    if (e == 0) {  /* zero or subnormal: m * 2^-24, exact in fp32 */
        float v = (float)m * 0x1p-24f;
        return sign ? -v : v;
    }
    return f32_from(sign | ((e + 112u) << 23) | (m << 13));
}

float wf_bf16(float x) { return wf_bf16_value(wf_bf16_bits(x)); }
float wf_fp16(float x) { return wf_fp16_value(wf_fp16_bits(x)); }

void wf_to_bf16(wf_ctx *c, float *x, long n) {
    (void)c;
    for (long i = 0; i < n; i++) x[i] = wf_bf16(x[i]);
}

void wf_to_fp16(wf_ctx *c, float *x, long n) {
    (void)c;
    for (long i = 0; i < n; i++) x[i] = wf_fp16(x[i]);
}

void wf_round_copy(int precision, float *dst, const float *src, long n) {
    if (precision == WF_BF16)
        for (long i = 0; i < n; i++) dst[i] = wf_bf16(src[i]);
    else if (precision == WF_FP16)
        for (long i = 0; i < n; i++) dst[i] = wf_fp16(src[i]);
    else
        memcpy(dst, src, sizeof(float) * (size_t)n);
}
