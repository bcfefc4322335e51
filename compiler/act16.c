/* act16.c: 16-bit activation storage (weft/rt.h, "Activation storage").
 *
 * Under bf16 / fp16 the CPU backend keeps activations in float arenas and the
 * generated code rounds each one to the 16-bit type after the kernel that
 * wrote it (emit_ops.c).  On the CUDA backend that rounding pass doubles the
 * memory traffic of every elementwise kernel, so there activations and their
 * gradients are stored as 16-bit values, two a float, and the kernels store
 * rounded bits themselves: the arenas, messages and copies shrink to half.
 *
 * The audit behind it: storing 16 bits changes no number only if every
 * activation (and activation gradient) a kernel writes is one the CPU emitter
 * rounds right after.  emit_ops.c rounds every forward output (the fused
 * residual + layernorm and linear + gelu kernels round theirs inside), every
 * input gradient after each backward op or B half, and keeps the saved state
 * (norm statistics, attention's log-sum-exp) in floats, as act16 does; the
 * LM head's kernel rounds its dlogits to the 16-bit type itself on both
 * backends, so act16 stores them in 16 bits.  The one unrounded output is
 * the loss head's (A_LOSS, width 1), which no kernel writes or reads: losses
 * go to wf_losses.
 *
 * Tensor parallelism (shard.c) adds ops the emitter rounds the same way:
 * the vocabulary-parallel lookup's partial embedding, the position and bias
 * adds' outputs and input gradients, and the collectives' outputs and input
 * gradients.  A row-parallel linear's partial output is rounded (it is a
 * linear's output), and the all-reduce or reduce-scatter sums those
 * rounded partials.  By default (tp_comm16, wire.c) the sum is the 16-bit
 * type's, each pairwise add rounded, on both backends (the CPU packs its
 * float activations into 16 bits for the message); with plan.tp_comm =
 * "fp32" the sum is fp32 and rounded once, and under act16
 * runtime/common/tp.c widens the 16-bit values into a float staging buffer,
 * runs the collective in fp32 and rounds once into 16-bit storage.  A copy's
 * or gather's input gradient is its old value plus the sum, rounded once.  The vocabulary-parallel LM head rounds
 * its logits and dlogits as the whole head does.  So every op of the model
 * graph qualifies; each op's row says so (ops.h, act16), so that an op
 * added later keeps activations in floats until someone audits its rounding. */
#include <string.h>

#include "memory_pack.h"
#include "ops.h"

/* act16 exactly for --backend cuda at bf16 / fp16, any tp.  The CPU backend
 * never uses it (its generated .c must not change), nor fp32. */
int act16_decide(const Program *p) {
    if (!backend_of(p)->act16) return 0;
    if (strcmp(p->precision, "bf16") != 0 && strcmp(p->precision, "fp16") != 0) return 0;
    for (int i = 0; i < p->n_ops; i++) {
        const op_row *r = op_row_of(p->ops[i].kind);
        if (!r || !r->act16 || !r->act16(p, &p->ops[i])) return 0;
    }
    return 1;
}

long act_storage(const Program *p, long n) {
    return p->act16 ? (n + 1) / 2 : n;
}

long tensor_rows(const Program *p, int t) {
    /* ROWS_TOKENS, the only kind yet: the microbatch's tokens, or this rank's share */
    return (long)p->micro * p->seq / p->tensors[t].rows_div;
}

/* floats of storage: 16-bit values two a float */
long tensor_storage(const Program *p, int t) {
    long n = tensor_rows(p, t) * p->tensors[t].width;
    return p->tensors[t].dtype == DTYPE_FP32 ? n : (n + 1) / 2;
}

const char *dtype_name(int dtype) {
    return dtype == DTYPE_BF16 ? "bf16" : dtype == DTYPE_FP16 ? "fp16" : "fp32";
}

/* Whether parameter k is a GEMM's weight on the CUDA backend: a linear's
 * weight or the LM head's wte (runtime/cuda/convert.cu converts it to 16
 * bits under act16). */
static int gemm_weight(const Program *p, int k) {
    for (int i = 0; i < p->n_ops; i++) {
        const ir_op *o = &p->ops[i];
        if (op_row_of(o->kind)->gemm_weight && o->n_param > 0 && o->param[0] == k)
            return 1;
    }
    return 0;
}

/* The runtime keeps each GEMM weight's 16-bit copy (runtime/cuda/cast.c,
 * wf_cuda_weight16): converted at its first use after the parameters were
 * written, reused by the other microbatches and the backward.  One slot of
 * align16((numel + 1) / 2) floats per GEMM weight of the stage.  ZeRO-3 has
 * none: its gather buffers hold different parameters in turn. */
long act16_weight16_numel(const Program *p, int stage) {
    if (!p->act16 || p->zero >= 3) return 0;
    long total = 0;
    for (int k = 0; k < p->n_params; k++)
        if (p->params[k].stage == stage && gemm_weight(p, k)) total += align16((p->params[k].numel + 1) / 2);
    return total;
}

/* ZeRO-3 converts one weight at a time into this buffer instead, before each
 * GEMM with 16-bit activations ((numel + 1) / 2 floats; the stage's largest
 * parameter).  Every GEMM with an activation operand is a 16-bit one (the LM
 * head's too: its dlogits are 16-bit), so no activation is ever converted to
 * floats here. */
long act16_cast_numel(const Program *p, int stage) {
    if (!p->act16 || p->zero < 3) return 0;
    long widest = 0;
    for (int k = 0; k < p->n_params; k++)
        if (p->params[k].stage == stage && (p->params[k].numel + 1) / 2 > widest)
            widest = (p->params[k].numel + 1) / 2;
    return align16(widest);
}
