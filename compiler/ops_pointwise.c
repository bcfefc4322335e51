/* ops_pointwise.c: rows (ops.c) of the elementwise ops: GPT-2's GELU (tanh
 * form) and residual add, LLaMA's SwiGLU.  They keep the width and rows of
 * their input under tensor parallelism (a column-parallel linear's local
 * width, or this rank's rows under sp).  A further activation (an erf GELU)
 * is one more row here with its own kernels: the same check, shard and
 * emit functions. */
#include "ops.h"

const char *gelu_check(const Program *p, int i) {
    const ir_op *o = &p->ops[i];
    return op_out_width(p, o) != op_in_width(p, o, 0) ? "gelu changes width" : NULL;
}

const char *add_check(const Program *p, int i) {
    const ir_op *o = &p->ops[i];
    long out = op_out_width(p, o);
    return out != op_in_width(p, o, 0) || out != op_in_width(p, o, 1) ? "residual add of different widths" : NULL;
}

const char *swiglu_check(const Program *p, int i) {
    const ir_op *o = &p->ops[i];
    long out = op_out_width(p, o);
    if (o->n_in != 2 || out != op_in_width(p, o, 0) || out != op_in_width(p, o, 1))
        return "swiglu needs gate and up of its output width";
    return NULL;
}

int pointwise_shard(shard_ctx *r, const ir_op *o) {
    int in = shard_in(r, o, 0);
    return shard_add(r, o->kind, o, in, shard_in(r, o, 1), -1, -1, shard_width(r, in), shard_rows(r, o));
}

/* out = f(in) */
void unary_emit_fwd(writer *wr, const Program *p, int i, const operands *x, const op_kernels *k) {
    (void)p, (void)i;
    emit(wr, "    %s(c, a + %s, a + %s, %s * %ldL);\n", k->fwd, x->out, x->in0, x->rows, x->width);
}

/* din += f'(in) * dout */
void unary_emit_bwd(writer *wr, const Program *p, int i, const operands *x, const op_kernels *k) {
    (void)p, (void)i;
    emit(wr, "    %s(c, d + D_%s, a + %s, d + D_%s, %s * %ldL);\n", k->bwd, x->in0, x->in0, x->out, x->rows, x->width);
}

/* out = f(in0, in1) */
void binary_emit_fwd(writer *wr, const Program *p, int i, const operands *x, const op_kernels *k) {
    (void)p, (void)i;
    emit(wr, "    %s(c, a + %s, a + %s, a + %s, %s * %ldL);\n", k->fwd, x->out, x->in0, x->in1, x->rows, x->width);
}

void add_emit_bwd(writer *wr, const Program *p, int i, const operands *x, const op_kernels *k) {
    (void)p, (void)i;
    emit(wr, "    %s(c, d + D_%s, d + D_%s, d + D_%s, %s * %ldL);\n", k->bwd, x->in0, x->in1, x->out, x->rows, x->width);
}

void swiglu_emit_bwd(writer *wr, const Program *p, int i, const operands *x, const op_kernels *k) {
    (void)p, (void)i;
    emit(wr, "    %s(c, d + D_%s, d + D_%s, a + %s, a + %s, d + D_%s, %s * %ldL);\n", k->bwd, x->in0, x->in1, x->in0,
         x->in1, x->out, x->rows, x->width);
}
