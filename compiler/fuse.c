/* fuse.c: the end of the graph pass: fused residual add + layernorm, and
 * fused linear + GELU (below).
 *
 * GPT-2 normalizes the residual stream right after each add: x = x + attn(..)
 * is followed by ln_2(x), and x = x + mlp(..) by the next block's ln_1 (or
 * ln_f).  One kernel that forms the sum and normalizes it while the row is
 * in registers saves a write and a read of the stream per pair, forward and
 * backward (wf_residual_layernorm_*).
 *
 * A pair is fused when the layernorm is the op right after the add and reads
 * its output: nothing (no tensor-parallel collective, no sequence-parallel
 * scatter) lies between them, and they are in the same pipeline chunk.  The
 * add's output stays the residual stream: the fused kernel still writes it.
 * Under full recompute a block is rebuilt from its input alone, so a pair
 * that straddles two blocks (the add ending one, the layernorm starting the
 * next) stays unfused: rebuilding the next block would need the previous
 * block's dropped activations.  LLaMA's RMSNorm is left unfused.
 *
 * The ops stay in the list (program.h's FUSED_*), so memory planning, the
 * schedule, ZeRO gathers, simulate and inspect see the same graph; emit
 * writes the fused call at the layernorm's place, in forward and backward
 * and in zero-bubble's B half (whole there: a layernorm's parameter
 * gradients do not wait for W, ops.h's op_weight_grad_in_w). */
#include "program.h"

/* Frozen parameters (weft.vlm's freeze, graph.c's marks): a pair is fused
 * when neither op has a backward (a frozen encoder: only the forward runs
 * fused), or when both pass their input gradients whole: the fused
 * backward's input half (the calls zero-bubble's B half makes) then runs
 * alone where the parameters are frozen, and their gradients are left out
 * (emit_ops.c).  A trained op on frozen inputs (no input gradient) is in no
 * pair: no fused call computes parameter gradients without input ones. */
static int backward_pairs(const ir_op *a, const ir_op *b) {
    if (!a->grad_in && !a->grad_w && !b->grad_in && !b->grad_w) return 1;
    return (a->n_in == 0 || a->grad_in) && (b->n_in == 0 || b->grad_in);
}

static int fusable(const Program *p, int i) {
    const ir_op *add = &p->ops[i], *ln = &p->ops[i + 1];
    if (!backward_pairs(add, ln)) return 0;
    return add->kind == OP_ADD && ln->kind == OP_LAYERNORM && add->n_in == 2 &&
           add->in[0] != add->in[1] && ln->n_in == 1 && ln->in[0] == add->out && ln->n_param == 2 &&
           add->chunk == ln->chunk && add->fused == FUSED_NONE &&
           p->tensors[add->out].rows_div == p->tensors[ln->out].rows_div &&
           (p->recompute != RECOMPUTE_FULL || add->layer == ln->layer);
}

void fuse_residual_layernorm(Program *p) {
    for (int i = 0; i < p->n_ops; i++) p->ops[i].fused = FUSED_NONE;
    for (int i = 0; i + 1 < p->n_ops; i++) {
        if (!fusable(p, i)) continue;
        p->ops[i].fused = FUSED_ADD_LN_ADD;
        p->ops[i + 1].fused = FUSED_ADD_LN_NORM;
        i++;
    }
}

int count_fused(const Program *p) {
    int n = 0;
    for (int i = 0; i < p->n_ops; i++) n += p->ops[i].fused == FUSED_ADD_LN_NORM;
    return n;
}

/* ---- fused linear + GELU ---------------------------------------------------
 * GPT-2's MLP: c_fc (a column-parallel linear) and the GELU of its output.
 * One call computes both (wf_linear_gelu_*): on CUDA the GELU is cuBLASLt's
 * epilogue of the GEMM (fp32 plans) or one elementwise kernel that also does
 * the 16-bit rounding (bf16 / fp16); on the CPU one pass adds the bias and
 * applies the GELU.  The pre-activation (the gelu's input tensor) is still
 * written: backward reads it.
 *
 * A pair is fused when the gelu is the op right after the linear and reads
 * its output, in the same pipeline chunk, on all N rows (the fused call,
 * like wf_linear_fwd, covers the whole microbatch); under full
 * recompute also in the same block (always so for c_fc; said for the rule's
 * sake, as for the pairs above).  With or without the linear's bias.
 * LLaMA's swiglu is left alone. */
static int fusable_linear_gelu(const Program *p, int i) {
    const ir_op *lin = &p->ops[i], *g = &p->ops[i + 1];
    if (!backward_pairs(lin, g)) return 0;
    return lin->kind == OP_LINEAR && g->kind == OP_GELU && lin->n_in == 1 && g->n_in == 1 &&
           g->in[0] == lin->out && lin->chunk == g->chunk && lin->fused == FUSED_NONE &&
           g->fused == FUSED_NONE && p->tensors[lin->out].rows_div == 1 && p->tensors[g->out].rows_div == 1 &&
           p->tensors[lin->out].width == p->tensors[g->out].width &&
           (p->recompute != RECOMPUTE_FULL || lin->layer == g->layer);
}

/* Runs after fuse_residual_layernorm (which clears every mark first). */
void fuse_linear_gelu(Program *p) {
    for (int i = 0; i + 1 < p->n_ops; i++) {
        if (!fusable_linear_gelu(p, i)) continue;
        p->ops[i].fused = FUSED_LIN_GELU_LINEAR;
        p->ops[i + 1].fused = FUSED_LIN_GELU_GELU;
        i++;
    }
}

int count_fused_linear_gelu(const Program *p) {
    int n = 0;
    for (int i = 0; i < p->n_ops; i++) n += p->ops[i].fused == FUSED_LIN_GELU_LINEAR;
    return n;
}

/* ---- backward: a linear's input gradient with the gelu's before it ----------
 * GPT-2's c_proj reads the gelu's output.  Its input gradient d(gelu out)
 * is a GEMM whose result the gelu's backward only multiplies by gelu'(pre):
 * one call (wf_linear_dgelu_bwd_input; on CUDA cuBLASLt's DGELU epilogue)
 * writes d(pre) straight from the GEMM, and d(gelu out) is never stored.
 *
 * The fused call writes d(pre) rather than adding to it (the epilogue
 * applies gelu' to the whole sum), so it must be d(pre)'s only contribution,
 * made while d(pre) is still the zero each microbatch's backward starts from
 * (step.c zeroes the gradient slot; a recomputed block's shared gradients are
 * zeroed with it): pre is read by the gelu alone and made in the same chunk.
 * And the gelu's backward needs all of d(gelu out) from this one GEMM: the
 * gelu's output is read by the linear alone, the op right after it, so in
 * backward (and in zero-bubble's B halves, where the pair stays in the
 * linear's B half) nothing lies between the two, no tensor-parallel
 * collective either (c_proj is row-parallel: its input gradient is local).
 * All N rows, as the linear's kernels take them; under full recompute one
 * block, as the pairs above. */
static int readers(const Program *p, int t) {
    int n = 0;
    for (int i = 0; i < p->n_ops; i++)
        for (int k = 0; k < p->ops[i].n_in; k++) n += p->ops[i].in[k] == t;
    return n;
}

static int fusable_linear_dgelu(const Program *p, int i) {
    const ir_op *g = &p->ops[i], *lin = &p->ops[i + 1];
    if (g->kind != OP_GELU || lin->kind != OP_LINEAR || g->n_in != 1 || lin->n_in != 1 ||
        lin->in[0] != g->out || lin->fused != FUSED_NONE || g->chunk != lin->chunk ||
        !g->grad_in || !lin->grad_in)  /* (only backward pairs here: both pass input gradients) */
        return 0;
    int pre = g->in[0];
    if (pre <= 0 || p->ops[p->tensors[pre].producer].chunk != g->chunk) return 0;
    return readers(p, pre) == 1 && readers(p, g->out) == 1 && p->tensors[pre].rows_div == 1 &&
           p->tensors[g->out].rows_div == 1 && p->tensors[pre].width == p->tensors[g->out].width &&
           (p->recompute != RECOMPUTE_FULL || g->layer == lin->layer);
}

/* Runs after fuse_linear_gelu (c_proj is in no forward pair). */
void fuse_linear_dgelu(Program *p) {
    for (int i = 0; i < p->n_ops; i++) p->ops[i].dgelu = DGELU_NONE;
    for (int i = 0; i + 1 < p->n_ops; i++) {
        if (!fusable_linear_dgelu(p, i)) continue;
        p->ops[i].dgelu = DGELU_GELU;
        p->ops[i + 1].dgelu = DGELU_LINEAR;
        i++;
    }
}

int count_fused_linear_dgelu(const Program *p) {
    int n = 0;
    for (int i = 0; i < p->n_ops; i++) n += p->ops[i].dgelu == DGELU_LINEAR;
    return n;
}
