/* precision_scalar.c: the scalar bf16 / fp16 conversions of rt.h, for the
 * host code of both backends (the CPU backend's loops are
 * runtime/cpu/precision.c, the CUDA backend's kernels runtime/cuda/precision.cu). */
#include "precision_bits.h"
#include "weft/rt.h"

uint16_t wf_bf16_bits(float x) { return wf_hd_bf16_bits(x); }
float wf_bf16_value(uint16_t h) { return wf_hd_bf16_value(h); }
uint16_t wf_fp16_bits(float x) { return wf_hd_fp16_bits(x); }
float wf_fp16_value(uint16_t h) { return wf_hd_fp16_value(h); }
float wf_bf16(float x) { return wf_hd_round(WF_BF16, x); }
float wf_fp16(float x) { return wf_hd_round(WF_FP16, x); }
