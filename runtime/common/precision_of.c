/* precision_of.c: the plan's storage precision, for kernels that round
 * inside (the fused residual + layernorm) or pick their arithmetic by it
 * (CUDA's tensor-core attention); shared by both backends. */
#include "internal.h"

int wf_ctx_precision(wf_ctx *c) { return c ? c->p->precision : WF_FP32; }

/* For kernel tests (tests/gpu/check_kernels.c), which have no plan: a
 * context that carries only a precision (rank 0, everything else zero). */
wf_ctx *wf_precision_ctx(int precision) {
    static wf_program prog[3];
    static wf_ctx ctx[3];
    if (precision < WF_FP32 || precision > WF_FP16) return NULL;
    prog[precision].precision = precision;
    ctx[precision].p = &prog[precision];
    return &ctx[precision];
}
