/* ops_tp.c: the tensor-parallel collectives' rows (ops.c), added by the
 * shard pass: tp_copy (identity forward, all-reduce backward), tp_reduce
 * (all-reduce forward), and under sequence parallelism tp_gather
 * (all-gather forward, reduce-scatter backward) and tp_scatter (the
 * converse).  runtime/common/tp.c runs them; under act16 in fp32 staging. */
#include "ops.h"

/* copy and reduce move whole (N, width) tensors; gather and scatter count
 * the NL rows one rank holds */
static const char *tp_rows(const Program *p, int i) {
    const op_row *r = op_row_of(p->ops[i].kind);
    return r->coll_fwd == COLL_ALLGATHER || r->coll_fwd == COLL_REDUCE_SCATTER ? "NL" : "N";
}

void tp_emit_fwd(writer *wr, const Program *p, int i, const operands *x, const op_kernels *k) {
    emit(wr, "    %s(c, a + %s, a + %s, %s * %ldL);\n", k->fwd, x->out, x->in0, tp_rows(p, i), x->width);
}

void tp_emit_bwd(writer *wr, const Program *p, int i, const operands *x, const op_kernels *k) {
    if (op_dinput_shared(p, &p->ops[i], 0)) {  /* tp_reduce's din = dout, one place (memory_grads.c) */
        emit(wr, "    /* d + D_%s is d + D_%s (one place) */\n", x->in0, x->out);
        return;
    }
    emit(wr, "    %s(c, d + D_%s, d + D_%s, %s * %ldL);\n", k->bwd, x->in0, x->out, tp_rows(p, i), x->width);
}
