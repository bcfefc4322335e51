/* attention_tc.h: the tensor-core causal attention (attention_tc.cu), which
 * attention.cu's wf_attention_fwd / wf_attention_bwd try first. */
#ifndef WEFT_ATTENTION_TC_H
#define WEFT_ATTENTION_TC_H

#include "weft/rt.h"

/* Whether the tensor-core kernels take this call: a bf16 or fp16 plan
 * (wf_ctx_precision) and a head size C / H that is a multiple of 16, at
 * most 128.  Otherwise the fp32 kernels of attention.cu run. */
int wf_attention_tc_takes(wf_ctx *c, int C, int H);

/* The contracts of wf_attention_fwd / wf_attention_bwd (the same base-2
 * log-sum-exp in att, the same D in scratch), launched on the stream; the
 * caller checks the shape and the launch. */
void wf_attention_tc_fwd(wf_ctx *c, float *out, float *lse, const float *qkv, int B, int T, int C, int H);
void wf_attention_tc_bwd(wf_ctx *c, float *dqkv, float *dsum, const float *dout, const float *qkv,
                         const float *lse, int B, int T, int C, int H);

#endif
