/* ops_linear.c: the linear family's rows (ops.c): a linear layer (weight
 * (in, out), optional bias) and the bias add tensor parallelism moves after
 * a row-parallel linear's reduction. */
#include <string.h>

#include "ops.h"

const char *linear_check(const Program *p, int i) {
    const ir_op *o = &p->ops[i];
    const ir_param *w = &p->params[o->param[0]], *b = o->n_param > 1 ? &p->params[o->param[1]] : NULL;
    long out = op_out_width(p, o);
    if (w->shape[0] != op_in_width(p, o, 0) || w->shape[1] != out || (b && b->numel != out))
        return "linear weight does not match its input and output";
    return NULL;
}

/* Megatron's split by the linear's role (shard.c's header):
 *   column: weight (and bias) split by output columns, in blocks of 3 when
 *     the output is attention's fused (q,k,v); its input through tp_copy
 *     (tp_gather under sp), shared by the linears that read the same tensor;
 *   row: weight split by input rows; its partial output through tp_reduce
 *     (tp_scatter under sp), and only then the replicated bias. */
int linear_shard(shard_ctx *r, const ir_op *o) {
    Program *p = shard_program(r);
    long width = op_out_width(p, o);
    int bias = o->n_param > 1 ? o->param[1] : -1, seq_div = p->sp ? p->tp : 1;
    if (strcmp(o->parallel, "column") == 0) {
        const ir_op *next = shard_consumer(p, o->out);
        int sections = next && next->kind == OP_ATTENTION && next->n_in == 1 ? 3 : 1;
        shard_split_param(p, o->param[0], SPLIT_COLS, sections);
        if (bias >= 0) shard_split_param(p, bias, SPLIT_COLS, sections);
        return shard_add(r, OP_LINEAR, o, shard_gather_input(r, o), 0, o->param[0], bias, width / p->tp, 1);
    }
    shard_split_param(p, o->param[0], SPLIT_ROWS, 1);
    int partial = shard_add(r, OP_LINEAR, o, shard_in(r, o, 0), 0, o->param[0], -1, width, 1);
    int whole = shard_add(r, p->sp ? OP_TP_SCATTER : OP_TP_REDUCE, o, partial, 0, -1, -1, width, seq_div);
    if (bias < 0) return whole;
    p->params[bias].tp_partial = p->sp;
    return shard_add(r, OP_BIAS_ADD, o, whole, 0, bias, -1, width, seq_div);
}

double linear_flops(const Program *p, const ir_op *o) {
    return 2.0 * (double)op_in_width(p, o, 0) * op_out_width(p, o);
}

/* ---- linear: on all N rows (a sequence-parallel input is gathered first) ---- */
void linear_emit_fwd(writer *wr, const Program *p, int i, const operands *x, const op_kernels *k) {
    emit(wr, "    %s(c, a + %s, a + %s, w + %s, %s%s, N, %ld, %ld);\n", k->fwd, x->out, x->in0, x->w0,
         p->ops[i].n_param > 1 ? "w + " : "NULL", x->w1, x->in_width, x->width);
}

void linear_emit_bwd(writer *wr, const Program *p, int i, const operands *x, const op_kernels *k) {
    emit(wr, "    %s(c, d + D_%s, g + %s, %s%s, d + D_%s, a + %s, w + %s, N, %ld, %ld);\n", k->bwd, x->in0, x->g0,
         p->ops[i].n_param > 1 ? "g + " : "NULL", x->g1, x->out, x->in0, x->w0, x->in_width, x->width);
}

void linear_emit_bwd_input(writer *wr, const Program *p, int i, const operands *x, const op_kernels *k) {
    (void)p, (void)i;
    emit(wr, "    %s(c, d + D_%s, d + D_%s, w + %s, N, %ld, %ld);\n", k->bwd_input, x->in0, x->out, x->w0,
         x->in_width, x->width);
}

void linear_emit_bwd_weight(writer *wr, const Program *p, int i, const operands *x, const op_kernels *k) {
    emit(wr, "    %s(c, g + %s, %s%s, d + D_%s, a + %s, N, %ld, %ld);\n", k->bwd_weight, x->g0,
         p->ops[i].n_param > 1 ? "g + " : "NULL", x->g1, x->out, x->in0, x->in_width, x->width);
}

/* ---- bias_add: + bias on this rank's rows ---- */
void bias_add_emit_fwd(writer *wr, const Program *p, int i, const operands *x, const op_kernels *k) {
    (void)p, (void)i;
    emit(wr, "    %s(c, a + %s, a + %s, w + %s, %s, %ld);\n", k->fwd, x->out, x->in0, x->w0, x->rows, x->width);
}

void bias_add_emit_bwd(writer *wr, const Program *p, int i, const operands *x, const op_kernels *k) {
    if (op_dinput_shared(p, &p->ops[i], 0)) {  /* memory_grads.c */
        emit(wr, "    /* d + D_%s is d + D_%s (one place) */\n", x->in0, x->out);
        emit(wr, "    %s(c, g + %s, d + D_%s, %s, %ld);\n", k->bwd_weight, x->g0, x->out, x->rows, x->width);
        return;
    }
    emit(wr, "    %s(c, d + D_%s, g + %s, d + D_%s, %s, %ld);\n", k->bwd, x->in0, x->g0, x->out, x->rows, x->width);
}

void bias_add_emit_bwd_input(writer *wr, const Program *p, int i, const operands *x, const op_kernels *k) {
    if (op_dinput_shared(p, &p->ops[i], 0)) {  /* memory_grads.c */
        emit(wr, "    /* d + D_%s is d + D_%s (one place) */\n", x->in0, x->out);
        return;
    }
    emit(wr, "    %s(c, d + D_%s, d + D_%s, %s, %ld);\n", k->bwd_input, x->in0, x->out, x->rows, x->width);  /* din += dout */
}

void bias_add_emit_bwd_weight(writer *wr, const Program *p, int i, const operands *x, const op_kernels *k) {
    (void)p, (void)i;
    emit(wr, "    %s(c, g + %s, d + D_%s, %s, %ld);\n", k->bwd_weight, x->g0, x->out, x->rows, x->width);
}
