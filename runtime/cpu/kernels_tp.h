/* kernels_tp.h: the local pieces of the vocabulary-parallel cross-entropy,
 * and the conversions around the tensor-parallel collectives under 16-bit
 * activation storage, put together with collectives by runtime/common/tp.c. */
#ifndef WEFT_KERNELS_TP_H
#define WEFT_KERNELS_TP_H
#include "weft/rt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* precision (enum wf_precision, wf_ctx_precision): under WF_BF16 / WF_FP16
 * the logits are rounded to that type before the maximum, and the dlogits
 * after, in the places the whole head (wf_lmhead_xent_fwd) rounds them, so
 * that every tensor-parallel layout gives the single-rank numbers.  x and
 * logits / dlogits are in c's activation storage (weft/rt.h: 16-bit values
 * under act16 on CUDA; the CPU stages x as floats, stage16.h, and keeps its
 * logits / dlogits float; c NULL: floats). */
void wf_vocab_logits(wf_ctx *c, float *logits, float *rowmax, const float *x, const float *wte_part,
                     int N, int C, int VL, int valid, int precision);
/* reads the logits: per row the local sum of exp(logit - global max) and the
 * target's logit - max where this rank holds the target (stats, 2N doubles) */
void wf_vocab_exp(wf_ctx *c, const float *logits, double *stats, const float *rowmax,
                  const int32_t *targets, int N, int VL, int v_begin, int valid);
/* logits -> dlogits = (softmax with the global max and sum - onehot) * scale,
 * padding columns 0; losses from the global stats; returns their sum. */
double wf_vocab_dlogits(wf_ctx *c, float *dlogits, float *losses, const float *rowmax, const double *stats,
                        const int32_t *targets, float scale, int N, int VL, int v_begin,
                        int precision);

/* The tensor-parallel collectives sum in fp32 (runtime/common/tp.c).  Under
 * act16 they go through floats: n activation values (c's storage) widened
 * into floats, floats narrowed into storage (rounded to nearest even, the
 * CPU's wf_to_bf16 / wf_to_fp16), and floats added into storage with one
 * rounding of the float sum (dst = round(dst + src)).  With float storage
 * (fp32, or the CPU's WEFT_ACT16=0) they copy and add. */
void wf_tp_widen(wf_ctx *c, float *dst, const float *src, long n);
void wf_tp_narrow(wf_ctx *c, float *dst, const float *src, long n);
void wf_tp_add_floats(wf_ctx *c, float *dst, const float *src, long n);
#ifdef __cplusplus
}
#endif
#endif
