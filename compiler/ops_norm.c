/* ops_norm.c: the normalization family's rows (ops.c): GPT-2's layernorm
 * (weight and bias; saves mean and rstd per row) and LLaMA's RMSNorm
 * (weight; saves rstd per row).  Both keep their parameters whole under
 * tensor parallelism. */
#include "ops.h"

const char *layernorm_check(const Program *p, int i) {
    const ir_op *o = &p->ops[i];
    long in = op_in_width(p, o, 0);
    if (p->params[o->param[0]].numel != in || op_out_width(p, o) != in)
        return "layernorm width differs from its input";
    return NULL;
}

const char *rmsnorm_check(const Program *p, int i) {
    const ir_op *o = &p->ops[i];
    long in = op_in_width(p, o, 0);
    if (o->n_param != 1 || p->params[o->param[0]].numel != in || op_out_width(p, o) != in || !(o->eps > 0))
        return "rmsnorm needs a weight as wide as its input and eps > 0";
    return NULL;
}

/* mean and rstd per row of this rank */
long layernorm_saved(const Program *p, const ir_op *o) {
    return 2 * ((long)p->micro * p->seq) / p->tensors[o->out].rows_div;
}

/* rstd per row */
long rmsnorm_saved(const Program *p, const ir_op *o) {
    return (long)p->micro * p->seq / p->tensors[o->out].rows_div;
}

/* Replicated parameters on the rows the input has (all, or this rank's
 * under sp, where their gradients are partial sums: tp_partial). */
int norm_shard(shard_ctx *r, const ir_op *o) {
    Program *p = shard_program(r);
    int b = o->n_param > 1 ? o->param[1] : -1;
    int out = shard_add(r, o->kind, o, shard_in(r, o, 0), 0, o->param[0], b, op_out_width(p, o), shard_rows(r, o));
    shard_last(r)->eps = o->eps;
    p->params[o->param[0]].tp_partial = p->sp;
    if (b >= 0) p->params[b].tp_partial = p->sp;
    return out;
}

/* ---- layernorm: saved S holds mean (rows values) then rstd ---- */
void layernorm_emit_fwd(writer *wr, const Program *p, int i, const operands *x, const op_kernels *k) {
    (void)p, (void)i;
    emit(wr, "    %s(c, a + %s, a + %s, a + %s + %s, a + %s, w + %s, w + %s, %s, %ld);\n", k->fwd,
         x->out, x->s, x->s, x->rows, x->in0, x->w0, x->w1, x->rows, x->width);
}

void layernorm_emit_bwd(writer *wr, const Program *p, int i, const operands *x, const op_kernels *k) {
    (void)p, (void)i;
    emit(wr, "    %s(c, d + D_%s, g + %s, g + %s, d + D_%s, a + %s, w + %s, a + %s, a + %s + %s,\n"
         "                     %s, %ld);\n", k->bwd, x->in0, x->g0, x->g1, x->out, x->in0, x->w0, x->s, x->s,
         x->rows, x->rows, x->width);
}

void layernorm_emit_bwd_input(writer *wr, const Program *p, int i, const operands *x, const op_kernels *k) {
    (void)p, (void)i;
    emit(wr, "    %s(c, d + D_%s, d + D_%s, a + %s, w + %s, a + %s, a + %s + %s, %s, %ld);\n", k->bwd_input,
         x->in0, x->out, x->in0, x->w0, x->s, x->s, x->rows, x->rows, x->width);
}

void layernorm_emit_bwd_weight(writer *wr, const Program *p, int i, const operands *x, const op_kernels *k) {
    (void)p, (void)i;
    emit(wr, "    %s(c, g + %s, g + %s, d + D_%s, a + %s, a + %s, a + %s + %s, %s, %ld);\n", k->bwd_weight,
         x->g0, x->g1, x->out, x->in0, x->s, x->s, x->rows, x->rows, x->width);
}

/* ---- rmsnorm ---- */
void rmsnorm_emit_fwd(writer *wr, const Program *p, int i, const operands *x, const op_kernels *k) {
    emit(wr, "    %s(c, a + %s, a + %s, a + %s, w + %s, %s, %ld, %.9g);\n", k->fwd, x->out, x->s, x->in0,
         x->w0, x->rows, x->width, p->ops[i].eps);
}

void rmsnorm_emit_bwd(writer *wr, const Program *p, int i, const operands *x, const op_kernels *k) {
    (void)p, (void)i;
    emit(wr, "    %s(c, d + D_%s, g + %s, d + D_%s, a + %s, w + %s, a + %s, %s, %ld);\n", k->bwd, x->in0, x->g0,
         x->out, x->in0, x->w0, x->s, x->rows, x->width);
}

void rmsnorm_emit_bwd_input(writer *wr, const Program *p, int i, const operands *x, const op_kernels *k) {
    (void)p, (void)i;
    emit(wr, "    %s(c, d + D_%s, d + D_%s, a + %s, w + %s, a + %s, %s, %ld);\n", k->bwd_input, x->in0, x->out,
         x->in0, x->w0, x->s, x->rows, x->width);
}

void rmsnorm_emit_bwd_weight(writer *wr, const Program *p, int i, const operands *x, const op_kernels *k) {
    (void)p, (void)i;
    emit(wr, "    %s(c, g + %s, d + D_%s, a + %s, a + %s, %s, %ld);\n", k->bwd_weight, x->g0, x->out, x->in0,
         x->s, x->rows, x->width);
}
