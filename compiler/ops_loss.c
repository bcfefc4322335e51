/* ops_loss.c: the loss head's row (ops.c): the LM head's matmul over the
 * vocabulary fused with softmax cross-entropy, per token; vocabulary-
 * parallel under tensor parallelism (logits are never gathered). */
#include "ops.h"

const char *lmhead_check(const Program *p, int i) {
    const ir_op *o = &p->ops[i];
    const ir_param *w = &p->params[o->param[0]];
    if (w->shape[0] != p->vocab || w->shape[1] != op_in_width(p, o, 0)) return "LM head weight must be (vocab, width)";
    if (i != p->n_ops - 1) return "the loss must be the last op";
    return NULL;
}

/* dlogits of this rank's vocabulary: the plan's 16-bit type under act16 on
 * CUDA; floats on the CPU, whose float kernel reads them whole (staging
 * them would take as many floats again) */
long lmhead_saved(const Program *p, const ir_op *o) {
    (void)o;
    long n = (long)p->micro * p->seq * (p->vocab_padded / p->tp);
    return backend_of(p)->act16_staged ? n : act_storage(p, n);
}

/* this rank's vocab_padded / tp rows of the (tied or own) weight, on the
 * whole input (tp_copy; tp_gather of the rows under sp) */
int lmhead_shard(shard_ctx *r, const ir_op *o) {
    Program *p = shard_program(r);
    if (p->params[o->param[0]].split == SPLIT_NONE) {  /* untied (llama): split here */
        p->params[o->param[0]].shape[0] = p->vocab_padded;
        shard_split_param(p, o->param[0], SPLIT_ROWS, 1);
    }
    int in = shard_in(r, o, 0);
    int full = shard_add(r, p->sp ? OP_TP_GATHER : OP_TP_COPY, o, in, 0, -1, -1, shard_width(r, in), 1);
    return shard_add(r, OP_LMHEAD_XENT, o, full, 0, o->param[0], -1, 1, 1);
}

/* vocabulary-parallel: this rank's share of the vocabulary, as the linears' widths are */
double lmhead_flops(const Program *p, const ir_op *o) {
    return 2.0 * (double)op_in_width(p, o, 0) * p->vocab_padded / p->tp;
}

int lmhead_variant(const Program *p, const ir_op *o) {
    (void)o;
    return p->tp > 1;
}

void lmhead_emit_fwd(writer *wr, const Program *p, int i, const operands *x, const op_kernels *k) {
    (void)i;
    if (p->tp == 1)
        emit(wr, "    wf_add_loss(c, %s(c, a + %s, wf_losses(c), a + %s, w + %s,\n"
             "                                     wf_targets(c), wf_loss_scale(c), N, %ld, V));\n",
             k->fwd, x->s, x->in0, x->w0, x->in_width);
    else
        emit(wr, "    wf_add_loss(c, %s(c, a + %s, wf_losses(c), a + %s, w + %s,\n"
             "                                    wf_targets(c), wf_loss_scale(c), N, %ld, VL,\n"
             "                                    wf_tp_rank(c) * VL, V));\n",
             k->fwd, x->s, x->in0, x->w0, x->in_width);
}

void lmhead_emit_bwd(writer *wr, const Program *p, int i, const operands *x, const op_kernels *k) {
    (void)i;
    emit(wr, "    %s(c, d + D_%s, g + %s, a + %s, a + %s, w + %s, N, %ld, %s);\n", k->bwd, x->in0, x->g0, x->s,
         x->in0, x->w0, x->in_width, p->tp > 1 ? "VL" : "V");
}

void lmhead_emit_bwd_input(writer *wr, const Program *p, int i, const operands *x, const op_kernels *k) {
    (void)i;
    emit(wr, "    %s(c, d + D_%s, a + %s, w + %s, N, %ld, %s);\n", k->bwd_input, x->in0, x->s, x->w0, x->in_width,
         p->tp > 1 ? "VL" : "V");
}

void lmhead_emit_bwd_weight(writer *wr, const Program *p, int i, const operands *x, const op_kernels *k) {
    (void)i;
    emit(wr, "    %s(c, g + %s, a + %s, a + %s, N, %ld, %s);\n", k->bwd_weight, x->g0, x->s, x->in0, x->in_width,
         p->tp > 1 ? "VL" : "V");
}
