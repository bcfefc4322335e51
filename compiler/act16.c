/* act16.c: 16-bit activation storage (weft/rt.h, "Activation storage").
 *
 * Under bf16 / fp16 activations and their gradients are stored as 16-bit
 * values, two a float: the arenas, messages and copies shrink to half.  On
 * CUDA the kernels store rounded bits themselves.  The CPU's kernels compute
 * in floats: each entry point widens its 16-bit operands into float staging,
 * runs, and rounds what it wrote back (runtime/cpu/stage16.h), so a CPU
 * program computes exactly what its float-storage form computes, where the
 * arenas hold floats and the generated code rounds each activation to the
 * 16-bit type after the kernel that wrote it (emit_ops.c).
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
 * added later keeps activations in floats until someone audits its rounding.
 * A VLM's patch embedding and image hand-off qualify too, but on CUDA not
 * with frozen parameters (ops_vision.c, vision_act16). */
#include <stdlib.h>
#include <string.h>

#include "memory_pack.h"
#include "ops.h"

/* act16 at bf16 / fp16 on either backend, any layout; never under fp32.
 * WEFT_ACT16=0 in the compiler's environment keeps the CPU's float storage
 * (and its rounding calls): the form the equivalence tests compare the
 * 16-bit storage with (tests/e2e/act16_cpu.sh). */
int act16_decide(const Program *p) {
    const wf_backend *b = backend_of(p);
    if (!b->act16) return 0;
    if (b->act16_staged && getenv("WEFT_ACT16") && strcmp(getenv("WEFT_ACT16"), "0") == 0) return 0;
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
 * none: its gather buffers hold different parameters in turn.  Neither has
 * 16-bit working parameters (param16.c), whose stored bits the GEMMs read:
 * the zero pass zeroes this and the cast buffer once it decides them. */
long act16_weight16_numel(const Program *p, int stage) {
    if (!p->act16 || p->zero >= 3 || backend_of(p)->act16_staged) return 0;
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
    if (!p->act16 || p->zero < 3 || backend_of(p)->act16_staged) return 0;
    long widest = 0;
    for (int k = 0; k < p->n_params; k++)
        if (p->params[k].stage == stage && (p->params[k].numel + 1) / 2 > widest)
            widest = (p->params[k].numel + 1) / 2;
    return align16(widest);
}

/* ---- the CPU's float staging (runtime/cpu/stage16.h) ---------------------- */

/* The op a fused op's kernel call spans with op i (fuse.c), or -1: the add
 * before a fused layernorm, the gelu after a fused linear, the gelu before a
 * linear whose input gradient does the gelu's backward. */
static int fused_partner(const Program *p, int i) {
    const ir_op *o = &p->ops[i];
    if (o->fused == FUSED_ADD_LN_NORM || o->dgelu == DGELU_LINEAR) return i - 1;
    if (o->fused == FUSED_LIN_GELU_LINEAR) return i + 1;
    return -1;
}

/* align16 of the values of the distinct tensors of op i and its fused
 * partner that pass `want` (0: every one) */
static long tensors_numel(const Program *p, int i, int (*want)(const Program *, int, int)) {
    int seen[8], n_seen = 0, partner = fused_partner(p, i);
    long sum = 0;
    for (int pass = 0; pass < 2; pass++) {
        const ir_op *o = &p->ops[pass ? partner : i];
        if (pass && partner < 0) break;
        for (int k = 0; k <= o->n_in; k++) {
            int t = k < o->n_in ? o->in[k] : o->out, dup = 0;
            for (int j = 0; j < n_seen; j++) dup |= seen[j] == t;
            if (t <= 0 || t >= p->n_tensors || dup || (want && !want(p, i, t))) continue;
            seen[n_seen++] = t;
            sum += align16(tensor_rows(p, t) * p->tensors[t].width);
        }
    }
    return sum;
}

static long values(const Program *p, int t) { return align16(tensor_rows(p, t) * p->tensors[t].width); }
static long max_of(long a, long b) { return a > b ? a : b; }

static int carries_grad(const Program *p, int i, int t) { (void)i; return memory_carries_grad(p, t); }

static int bwd_reads(const Program *p, int i, int t) {
    int partner = fused_partner(p, i);
    return memory_bwd_reads(p, i, t) || (partner >= 0 && memory_bwd_reads(p, partner, t));
}

static long largest(const Program *p, int i) {
    const ir_op *o = &p->ops[i];
    long most = 0;
    for (int k = 0; k <= o->n_in; k++) {
        int t = k < o->n_in ? o->in[k] : o->out;
        long n = align16(tensor_rows(p, t) * p->tensors[t].width);
        if (n > most) most = n;
    }
    return most;
}

/* Floats one kernel call of op i may stage, each staged buffer align16 of
 * its values, over the tensors of the op and its fused partner: a forward
 * call their values; a backward call the gradients they carry and the
 * values the backward reads (memory_bwd_reads: what the slot keeps for it),
 * each once (stage16.c reuses a staged pointer), plus for a collective the
 * message it adds into the input gradient (runtime/common/tp.c: a whole
 * tensor, or one rank's piece).  A rope call stages a strided span inside
 * one tensor: within the same count.  The fused linears' backward is two
 * calls (emit_ops.c), whose operands never meet: a linear + gelu's B half
 * (dout, pre, d(pre), d(in); without the gelu's backward, which the next
 * linear does, d(pre) and d(in)) and W half (d(pre), in); a linear doing
 * its gelu's backward (DGELU_LINEAR) makes d(pre) from dout and pre, then
 * its W half reads dout and its input. */
static long op_stage_numel(const Program *p, int i) {
    const ir_op *o = &p->ops[i];
    long fwd = tensors_numel(p, i, NULL);
    long bwd = tensors_numel(p, i, carries_grad) + tensors_numel(p, i, bwd_reads);
    long in = o->n_in ? values(p, o->in[0]) : 0, out = values(p, o->out);
    if (o->dgelu == DGELU_LINEAR) {
        long pre = values(p, p->ops[i - 1].in[0]);
        bwd = max_of(2 * pre + out, in + out);
    } else if (o->fused == FUSED_LIN_GELU_LINEAR) {
        bwd = max_of(p->ops[i + 1].dgelu == DGELU_GELU ? out + in : 3 * out + in, out + in);
    }
    if (op_row_of(p->ops[i].kind)->coll_bwd != COLL_NONE) bwd += largest(p, i);
    return fwd > bwd ? fwd : bwd;
}

/* The stage's staging: the most any of its ops' calls stages (0 unless
 * act16 on a staged backend). */
long act16_stage_numel(const Program *p, int stage) {
    if (!p->act16 || !backend_of(p)->act16_staged) return 0;
    long most = 0;
    for (int i = 0; i < p->n_ops; i++) {
        if (p->ops[i].chunk % p->pp != stage) continue;
        long n = op_stage_numel(p, i);
        if (n > most) most = n;
    }
    return most;
}
