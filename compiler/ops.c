/* ops.c: the op table (ops.h), one row per op_kind in its order.  The
 * columns a row leaves out are 0 / NULL: no saved state, no scratch, not
 * tensor-parallel, not audited for 16-bit storage, no FLOPs of note. */
#include <stddef.h>

#include "ops.h"
#include "schedule.h"

#define BOTH (BACKEND_CPU | BACKEND_CUDA)
#define FWD_BWD(f, b) { { f, b, NULL, NULL }, { NULL, NULL, NULL, NULL } }

static const op_row table[OP__COUNT] = {
    /* ---- the model graph (the Lua prelude writes these) ---- */
    [OP_EMBED] = {
        .name = "embed", .graph = 1, .in_min = 0, .in_max = 0, .param_min = 1, .param_max = 2,
        .check = embed_check, .shard = embed_shard, .act16 = op_act16_always, .backends = BOTH,
        .lookup = 1, .cost = COST_ADD,
        /* no input gradient: its whole backward (a scatter into the table)
         * is a weight half that no earlier stage waits for, so W takes it */
        .defer_weight_grad = 1,
        /* token + position embeddings; tokens only (llama) looks up the whole vocabulary */
        .k = { { "wf_embed_fwd", "wf_embed_bwd", NULL, NULL },
               { "wf_vocab_embed_fwd", "wf_vocab_embed_bwd", NULL, NULL } },
        .variant = embed_variant, .emit_fwd = embed_emit_fwd, .emit_bwd = embed_emit_bwd,
        .label = "A_EMBED" },
    [OP_LAYERNORM] = {
        .name = "layernorm", .graph = 1, .in_min = 1, .in_max = 1, .param_min = 2, .param_max = 2,
        .check = layernorm_check, .saved = layernorm_saved, .shard = norm_shard,
        .act16 = op_act16_always, .backends = BOTH, .keeps_shape = 1, .cost = COST_NORM,
        .k = { { "wf_layernorm_fwd", "wf_layernorm_bwd", "wf_layernorm_bwd_input", "wf_layernorm_bwd_weight" } },
        .emit_fwd = layernorm_emit_fwd, .emit_bwd = layernorm_emit_bwd,
        .emit_bwd_input = layernorm_emit_bwd_input, .emit_bwd_weight = layernorm_emit_bwd_weight },
    [OP_LINEAR] = {
        .name = "linear", .graph = 1, .in_min = 1, .in_max = 1, .param_min = 1, .param_max = 2,
        .check = linear_check, .shard = linear_shard, .act16 = op_act16_always, .backends = BOTH,
        .gemm_weight = 1, .defer_weight_grad = 1, .cost = COST_GEMM, .flops = linear_flops,
        .k = { { "wf_linear_fwd", "wf_linear_bwd", "wf_linear_bwd_input", "wf_linear_bwd_weight" } },
        .emit_fwd = linear_emit_fwd, .emit_bwd = linear_emit_bwd,
        .emit_bwd_input = linear_emit_bwd_input, .emit_bwd_weight = linear_emit_bwd_weight },
    [OP_ATTENTION] = {
        .name = "attention", .graph = 1, .in_min = 1, .in_max = 2, .param_min = 0, .param_max = 0,
        .check = attention_check, .saved = attention_saved, .scratch = attention_scratch,
        .selective = 1, .shard = heads_shard, .act16 = op_act16_always, .backends = BOTH,
        .cost = COST_ATTENTION, .flops = attention_flops,
        /* fused (q,k,v); or grouped-query (rotated q|k, v) */
        .k = { { "wf_attention_fwd", "wf_attention_bwd", NULL, NULL },
               { "wf_gqa_attention_fwd", "wf_gqa_attention_bwd", NULL, NULL } },
        .variant = attention_variant, .emit_fwd = attention_emit_fwd, .emit_bwd = attention_emit_bwd },
    [OP_GELU] = {
        .name = "gelu", .graph = 1, .in_min = 1, .in_max = 1, .param_min = 0, .param_max = 0,
        .check = gelu_check, .shard = pointwise_shard, .act16 = op_act16_always, .backends = BOTH, .keeps_shape = 1,
        .hf_activation = "gelu_new",
        .cost = COST_POINTWISE, .k = FWD_BWD("wf_gelu_fwd", "wf_gelu_bwd"),
        .emit_fwd = unary_emit_fwd, .emit_bwd = unary_emit_bwd },
    [OP_GELU_ERF] = {  /* not fused with its linear: cuBLASLt's epilogues are the tanh form */
        .name = "gelu_erf", .graph = 1, .in_min = 1, .in_max = 1, .param_min = 0, .param_max = 0,
        .check = gelu_check, .shard = pointwise_shard, .act16 = op_act16_always, .backends = BOTH,
        .keeps_shape = 1, .hf_activation = "gelu",
        .cost = COST_POINTWISE, .k = FWD_BWD("wf_gelu_erf_fwd", "wf_gelu_erf_bwd"),
        .emit_fwd = unary_emit_fwd, .emit_bwd = unary_emit_bwd },
    [OP_KERNEL] = {  /* a user kernel: its C functions, copied into the program (not audited for act16) */
        .name = "kernel", .graph = 1, .in_min = 1, .in_max = 2, .param_min = 0, .param_max = 1,
        .check = kernel_check, .shard = kernel_shard, .backends = BOTH, .keeps_shape = 1,
        .cost = COST_KERNEL, .flops = kernel_flops,
        .emit_fwd = kernel_emit_fwd, .emit_bwd = kernel_emit_bwd },
    [OP_ADD] = {
        .name = "add", .graph = 1, .in_min = 2, .in_max = 2, .param_min = 0, .param_max = 0,
        .check = add_check, .shard = pointwise_shard, .act16 = op_act16_always, .backends = BOTH, .keeps_shape = 1,
        .inplace = 1, .cost = COST_ADD, .k = FWD_BWD("wf_add_fwd", "wf_add_bwd"),
        .emit_fwd = binary_emit_fwd, .emit_bwd = add_emit_bwd, .stem = "residual" },
    [OP_LMHEAD_XENT] = {
        .name = "lmhead_xent", .graph = 1, .in_min = 1, .in_max = 1, .param_min = 1, .param_max = 1,
        .check = lmhead_check, .saved = lmhead_saved, .scratch = lmhead_scratch, .shard = lmhead_shard, .act16 = op_act16_always,
        .backends = BOTH, .gemm_weight = 1, .loss = 1, .cost = COST_XENT, .flops = lmhead_flops,
        /* the whole vocabulary; or this rank's part of it (tp > 1): the
         * kernels the fused, chunked call generated programs make from the
         * backward (wf_lmhead_xent_chunked, wf_vocab_xent_chunked: ops_loss.c)
         * is made of, chunk by chunk */
        .k = { { "wf_lmhead_xent_fwd", "wf_lmhead_xent_bwd", "wf_lmhead_xent_bwd_input", "wf_lmhead_xent_bwd_weight" },
               { "wf_vocab_xent_fwd", "wf_vocab_xent_bwd", "wf_lmhead_xent_bwd_input", "wf_lmhead_xent_bwd_weight" } },
        .variant = lmhead_variant, .emit_fwd = lmhead_emit_fwd, .emit_bwd = lmhead_emit_bwd,
        .emit_bwd_input = lmhead_emit_bwd_input, .emit_bwd_weight = lmhead_emit_bwd_weight,
        .label = "A_LOSS" },
    [OP_RMSNORM] = {
        .name = "rmsnorm", .graph = 1, .in_min = 1, .in_max = 1, .param_min = 1, .param_max = 1,
        .check = rmsnorm_check, .saved = rmsnorm_saved, .shard = norm_shard, .act16 = op_act16_always,
        .backends = BOTH, .keeps_shape = 1, .cost = COST_NORM,
        .k = { { "wf_rmsnorm_fwd", "wf_rmsnorm_bwd", "wf_rmsnorm_bwd_input", "wf_rmsnorm_bwd_weight" } },
        .emit_fwd = rmsnorm_emit_fwd, .emit_bwd = rmsnorm_emit_bwd,
        .emit_bwd_input = rmsnorm_emit_bwd_input, .emit_bwd_weight = rmsnorm_emit_bwd_weight },
    [OP_ROPE] = {
        .name = "rope", .graph = 1, .in_min = 2, .in_max = 2, .param_min = 0, .param_max = 0,
        .check = rope_check, .shard = heads_shard, .act16 = rope_act16, .backends = BOTH,
        .cost = COST_POINTWISE, .k = FWD_BWD("wf_rope_fwd", "wf_rope_bwd"),
        .emit_fwd = rope_emit_fwd, .emit_bwd = rope_emit_bwd },
    [OP_SWIGLU] = {
        .name = "swiglu", .graph = 1, .in_min = 2, .in_max = 2, .param_min = 0, .param_max = 0,
        .check = swiglu_check, .shard = pointwise_shard, .act16 = op_act16_always, .backends = BOTH,
        .cost = COST_POINTWISE, .k = FWD_BWD("wf_swiglu_fwd", "wf_swiglu_bwd"),
        .emit_fwd = binary_emit_fwd, .emit_bwd = swiglu_emit_bwd },

    /* ---- a VLM's vision encoder and its hand-off (ops_vision.c; runtime/cpu/vision.c, runtime/cuda/vision.cu) ---- */
    [OP_PATCH_EMBED] = {
        .name = "patch_embed", .graph = 1, .in_min = 0, .in_max = 0, .param_min = 2, .param_max = 2,
        .check = patch_embed_check, .scratch = patch_embed_scratch, .shard = vision_shard,
        .act16 = vision_act16, .backends = BOTH, .cost = COST_GEMM, .flops = patch_embed_flops,
        .defer_weight_grad = 1,  /* its whole backward is a GEMM's dW (no input gradient) */
        /* all rows; or this tp rank's under sequence parallelism (both
         * backends: runtime/cpu/vision.c, runtime/cuda/vision.cu) */
        .k = { { "wf_patch_embed_fwd", "wf_patch_embed_bwd", NULL, NULL },
               { "wf_patch_embed_rows_fwd", "wf_patch_embed_rows_bwd", NULL, NULL } },
        .variant = vision_variant, .emit_fwd = patch_embed_emit_fwd, .emit_bwd = patch_embed_emit_bwd, .label = "A_PATCHES" },
    [OP_IMAGE_MERGE] = {
        .name = "image_merge", .graph = 1, .in_min = 2, .in_max = 2, .param_min = 0, .param_max = 0,
        .check = image_merge_check, .shard = vision_shard, .act16 = vision_act16, .backends = BOTH, .cost = COST_ADD,
        .k = { { "wf_image_merge_fwd", "wf_image_merge_bwd", NULL, NULL },
               { "wf_image_merge_rows_fwd", "wf_image_merge_rows_bwd", NULL, NULL } },
        .variant = vision_variant, .emit_fwd = image_merge_emit_fwd, .emit_bwd = image_merge_emit_bwd, .label = "A_IMAGE_MERGE" },

    /* ---- added by the shard pass (tensor parallelism; never sharded again) ---- */
    [OP_VOCAB_EMBED] = {
        .name = "vocab_embed", .in_min = 0, .in_max = 0, .param_min = 1, .param_max = 1,
        .act16 = op_act16_always, .backends = BOTH, .lookup = 1, .cost = COST_ADD,
        .defer_weight_grad = 1,  /* as the embedding's */
        .k = FWD_BWD("wf_vocab_embed_fwd", "wf_vocab_embed_bwd"),
        .emit_fwd = vocab_embed_emit_fwd, .emit_bwd = vocab_embed_emit_bwd, .label = "A_EMBED_PARTIAL" },
    [OP_POS_ADD] = {  /* also a graph op: Graph:position_add (a GPT-2 VLM) */
        .name = "pos_add", .graph = 1, .in_min = 1, .in_max = 1, .param_min = 1, .param_max = 1,
        /* as a graph op it follows the merged stream: this tp rank's rows under sp */
        .check = pos_add_check, .shard = vision_shard,
        .act16 = op_act16_always, .backends = BOTH, .keeps_shape = 1, .inplace = 1, .cost = COST_ADD,
        .grad_alias = 1,  /* backward: din += dout (its emitters skip it where shared) */
        .k = { { "wf_pos_add_fwd", "wf_pos_add_bwd", "wf_pos_add_bwd_input", "wf_pos_add_bwd_weight" } },
        .emit_fwd = pos_add_emit_fwd, .emit_bwd = pos_add_emit_bwd,
        .emit_bwd_input = pos_add_emit_bwd_input, .emit_bwd_weight = pos_add_emit_bwd_weight,
        .label = "A_EMBED" },
    [OP_BIAS_ADD] = {
        .name = "bias_add", .in_min = 1, .in_max = 1, .param_min = 1, .param_max = 1,
        .act16 = op_act16_always, .backends = BOTH, .keeps_shape = 1, .inplace = 1, .cost = COST_ADD,
        /* its B half is pos_add's: din += dout, skipped where din shares
         * dout's place (grad_alias) */
        .grad_alias = 1,
        .k = { { "wf_bias_add_fwd", "wf_bias_add_bwd", "wf_pos_add_bwd_input", "wf_bias_add_bwd_weight" } },
        .emit_fwd = bias_add_emit_fwd, .emit_bwd = bias_add_emit_bwd,
        .emit_bwd_input = bias_add_emit_bwd_input, .emit_bwd_weight = bias_add_emit_bwd_weight,
        .label_param = 1 },  /* named after the whole bias: h.0.attn.c_proj.bias */
    [OP_TP_COPY] = {
        .name = "tp_copy", .in_min = 1, .in_max = 1, .act16 = op_act16_always, .backends = BOTH, .keeps_shape = 1,
        .inplace = 1,
        .cost = COST_COMM, .coll_fwd = COLL_NONE, .coll_bwd = COLL_ALLREDUCE,
        .k = FWD_BWD("wf_tp_copy_fwd", "wf_tp_copy_bwd"), .emit_fwd = tp_emit_fwd, .emit_bwd = tp_emit_bwd },
    [OP_TP_REDUCE] = {
        .name = "tp_reduce", .in_min = 1, .in_max = 1, .act16 = op_act16_always, .backends = BOTH, .keeps_shape = 1,
        .inplace = 1, .grad_alias = 1,  /* backward: din += dout */
        .cost = COST_COMM, .coll_fwd = COLL_ALLREDUCE, .coll_bwd = COLL_NONE,
        .k = FWD_BWD("wf_tp_reduce_fwd", "wf_tp_reduce_bwd"), .emit_fwd = tp_emit_fwd, .emit_bwd = tp_emit_bwd },
    [OP_TP_GATHER] = {
        .name = "tp_gather", .in_min = 1, .in_max = 1, .act16 = op_act16_always, .backends = BOTH,
        .cost = COST_COMM, .coll_fwd = COLL_ALLGATHER, .coll_bwd = COLL_REDUCE_SCATTER,
        .k = FWD_BWD("wf_tp_gather_fwd", "wf_tp_gather_bwd"), .emit_fwd = tp_emit_fwd, .emit_bwd = tp_emit_bwd },
    [OP_TP_SCATTER] = {
        .name = "tp_scatter", .in_min = 1, .in_max = 1, .act16 = op_act16_always, .backends = BOTH,
        .cost = COST_COMM, .coll_fwd = COLL_REDUCE_SCATTER, .coll_bwd = COLL_ALLGATHER,
        .k = FWD_BWD("wf_tp_scatter_fwd", "wf_tp_scatter_bwd"), .emit_fwd = tp_emit_fwd, .emit_bwd = tp_emit_bwd },
};

const op_row *op_row_of(op_kind k) {
    return (unsigned)k < OP__COUNT && table[k].name ? &table[k] : NULL;
}

const char *op_name(op_kind k) {
    const op_row *r = op_row_of(k);
    return r ? r->name : "?";
}

const op_kernels *op_kernels_of(const Program *p, const ir_op *o) {
    const op_row *r = op_row_of(o->kind);
    return &r->k[r->variant ? r->variant(p, o) : 0];
}

int op_has_backend(op_kind k, unsigned backend) {
    const op_row *r = op_row_of(k);
    return r && (r->backends & backend) != 0;
}

int op_act16_always(const Program *p, const ir_op *o) {
    (void)p, (void)o;
    return 1;
}

int op_weight_grad_in_w(const Program *p, const ir_op *o) {
    (void)p;
    return o->grad_w && o->n_param > 0 && op_row_of(o->kind)->defer_weight_grad;
}

int op_weight_grad_staged(const Program *p, const ir_op *o) {
    const op_row *r = op_row_of(o->kind);
    return p->zero >= 2 && p->pp > 1 && p->sched && p->sched->split_backward && o->grad_w && o->n_param > 0 &&
           !r->defer_weight_grad && !r->loss;
}

int op_weight_grad_in_b(const Program *p, const ir_op *o) {
    return o->grad_w && o->n_param > 0 && !op_weight_grad_in_w(p, o) && !op_weight_grad_staged(p, o);
}

int op_dinput_shared(const Program *p, const ir_op *o, int k) {
    return k < o->n_in && o->in[k] > 0 && p->tensors[o->in[k]].dalias == o->out;
}
