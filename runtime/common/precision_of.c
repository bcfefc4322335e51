/* precision_of.c: the plan's storage precision, for kernels that round
 * inside (the fused residual + layernorm) or pick their arithmetic by it
 * (CUDA's tensor-core attention); shared by both backends. */
#include "internal.h"

int wf_ctx_precision(wf_ctx *c) { return c ? c->p->precision : WF_FP32; }

/* 0 inside a staged CPU kernel call (cpu/stage16.h): its operands are floats */
int wf_ctx_act16(wf_ctx *c) { return c ? c->p->act16 && !c->staging : 0; }

/* weft.vlm's freeze under bf16 / fp16: frozen weights keep their fp32
 * values in the working copy (no master holds them; zero_params.c places
 * them), which the CPU's sgemm takes as they are.  A CUDA GEMM of float
 * operands rounds them to the 16-bit type (gemm.cu's FAST_16BF / FAST_16F
 * compute types, exact for every other operand, a rounded value): x among
 * the frozen weights, it computes in fp32 instead. */
int wf_frozen_weight(wf_ctx *c, const void *x) {
    if (!c || !c->params || c->p->precision == WF_FP32 || !c->p->params) return 0;
    const wf_program *p = c->p;
    const float *f = (const float *)x;
    for (int k = 0; k < p->n_params; k++) {
        if (p->params[k].bucket >= 0) continue;
        const float *at = c->params + wf_frozen_at(p, k);
        if (f >= at && f < at + p->params[k].numel) return 1;
    }
    return 0;
}

/* For kernel tests (tests/gpu/check_kernels.c), which have no plan: a
 * context that carries only a precision and the activation storage (rank 0,
 * everything else zero).  act16 needs a 16-bit precision. */
wf_ctx *wf_storage_ctx(int precision, int act16) {
    static wf_program prog[3][2];
    static wf_ctx ctx[3][2];
    if (precision < WF_FP32 || precision > WF_FP16 || (act16 && precision == WF_FP32)) return NULL;
    act16 = act16 != 0;
    prog[precision][act16].precision = precision;
    prog[precision][act16].act16 = act16;
    ctx[precision][act16].p = &prog[precision][act16];
    return &ctx[precision][act16];
}

wf_ctx *wf_precision_ctx(int precision) { return wf_storage_ctx(precision, 0); }
