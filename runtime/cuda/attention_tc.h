/* attention_tc.h: the tensor-core causal attention (attention_tc.cu), which
 * attention.cu's wf_attention_* and wf_gqa_attention_* try first, and the
 * description of where the heads are that both files' kernels take. */
#ifndef WEFT_ATTENTION_TC_H
#define WEFT_ATTENTION_TC_H

#include "storage.cuh"
#include "weft/rt.h"

/* Where the heads are: GPT-2's packed qkv and LLaMA's grouped-query layout
 * in one form.  Head h of q (b's rows start b*T*ldq floats after q) is
 * columns [h*hs, (h+1)*hs) of its rows; query head h reads key/value head
 * h / group, columns [kv*hs, (kv+1)*hs) of k's and v's rows.  The gradients
 * dq, dk, dv have the layouts (and row strides) of q, k, v; out and dout are
 * (B*T, H*hs).  GPT-2: k = q + C, v = q + 2C, strides 3C, group 1.
 * Under act16 the pointers carry the addresses of 16-bit tensors (storage.cuh)
 * and every offset and stride counts their elements, not floats. */
struct flash_heads {
    const float *q, *k, *v;
    float *dq, *dk, *dv;
    long ldq, ldk, ldv;
    int H, group, hs;
};

/* Batch b's T rows of query head h in q and dout, and of key/value head kv
 * in k and v: where a kernel's rows start (both files' kernels), as elements
 * of the activation storage S. */
template <class S = wf_st_f32>
__device__ __forceinline__ const typename S::raw *flash_q(const flash_heads &a, int b, int h, int T) {
    return reinterpret_cast<const typename S::raw *>(a.q) + (long)b * T * a.ldq + (long)h * a.hs;
}
template <class S = wf_st_f32>
__device__ __forceinline__ const typename S::raw *flash_k(const flash_heads &a, int b, int kv, int T) {
    return reinterpret_cast<const typename S::raw *>(a.k) + (long)b * T * a.ldk + (long)kv * a.hs;
}
template <class S = wf_st_f32>
__device__ __forceinline__ const typename S::raw *flash_v(const flash_heads &a, int b, int kv, int T) {
    return reinterpret_cast<const typename S::raw *>(a.v) + (long)b * T * a.ldv + (long)kv * a.hs;
}
template <class S = wf_st_f32>
__device__ __forceinline__ const typename S::raw *flash_dout(const flash_heads &a, const typename S::raw *dout,
                                                             int b, int h, int T) {
    return dout + (long)b * T * ((long)a.H * a.hs) + (long)h * a.hs;
}

/* Whether the tensor-core kernels take this call: a bf16 or fp16 plan
 * (wf_ctx_precision) and a head size hs that is a multiple of 16, at most
 * 128.  Otherwise the fp32 kernels of attention.cu run. */
int wf_attention_tc_takes(wf_ctx *c, int hs);

/* The contracts of wf_attention_fwd / wf_attention_bwd (the same base-2
 * log-sum-exp per query row and head in lse, B*H*T floats; dq, dk, dv
 * accumulate), launched on the stream; backward reads D = dout . out per
 * (b, query head, t) from dsum (B*H*T floats), which attention.cu's D kernel
 * writes before it on the same stream.  The caller checks the shape and the
 * launch. */
void wf_attention_tc_fwd(wf_ctx *c, float *out, float *lse, const flash_heads &a, int B, int T);
void wf_attention_tc_bwd(wf_ctx *c, const float *dsum, const float *dout, const float *lse, const flash_heads &a,
                         int B, int T);

#endif
