/* round16.cuh: on the device, the value a bf16 / fp16 tensor would store
 * (round to nearest, ties to even), bit for bit as runtime/cpu/precision.c
 * rounds on the host: for kernels that round inside (the fused residual +
 * layernorm), so both backends agree exactly on what is stored. */
#ifndef WEFT_CUDA_ROUND16_CUH
#define WEFT_CUDA_ROUND16_CUH

#include "weft/rt.h"

__device__ inline float wf_dev_bf16(float x) {
    unsigned u = __float_as_uint(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return __uint_as_float((u | 0x00400000u) & 0xffff0000u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return __uint_as_float(u & 0xffff0000u);
}

__device__ inline float wf_dev_fp16(float x) {
    unsigned u = __float_as_uint(x), sign = u & 0x80000000u, h;
    u &= 0x7fffffffu;
    if (u > 0x7f800000u) return x;                              /* NaN stays NaN */
    if (u >= 0x477ff000u) return __uint_as_float(sign | 0x7f800000u);  /* >= 65520: inf */
    if (u < 0x38800000u) {  /* subnormal fp16: a multiple of 2^-24 */
        int e = (int)(u >> 23);
        if (e < 102) return __uint_as_float(sign);
        unsigned m = (u & 0x7fffffu) | 0x800000u;
        int shift = 126 - e;
        unsigned q = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1u))) q++;
        return __uint_as_float(sign | __float_as_uint((float)q * 5.9604644775390625e-8f));
    }
    h = (u >> 13) << 13;  /* keep 10 mantissa bits */
    unsigned rem = u & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && ((u >> 13) & 1u))) h += 0x2000u;  /* carries into the exponent */
    return __uint_as_float(sign | h);
}

__device__ inline float wf_dev_stored(int precision, float x) {
    return precision == WF_BF16 ? wf_dev_bf16(x) : precision == WF_FP16 ? wf_dev_fp16(x) : x;
}

#endif
