/* ops_embed.c: the embedding family's rows (ops.c): the token (+ position)
 * lookup of the model graph, and the two ops tensor parallelism splits it
 * into, the lookup of this rank's vocabulary rows and the position add. */
#include "ops.h"

/* ---- embed: tokens (and positions: GPT-2) -> (N, C) ---- */
const char *embed_check(const Program *p, int i) {
    const ir_op *o = &p->ops[i];
    const ir_param *w = &p->params[o->param[0]], *b = o->n_param > 1 ? &p->params[o->param[1]] : NULL;
    long out = op_out_width(p, o);
    if (w->shape[0] != p->vocab || w->shape[1] != out || (b && (b->shape[1] != out || b->shape[0] != p->seq)))
        return "embedding shapes disagree with the model width";
    return NULL;
}

/* Vocabulary-parallel: each rank looks up its vocab_padded / tp rows of
 * wte (zeros elsewhere), the partial lookups are summed (reduce-scattered
 * under sp), and the replicated wpe is added after. */
int embed_shard(shard_ctx *r, const ir_op *o) {
    Program *p = shard_program(r);
    int wte = o->param[0], wpe = o->n_param > 1 ? o->param[1] : -1, seq_div = p->sp ? p->tp : 1;
    long width = op_out_width(p, o);
    p->params[wte].shape[0] = p->vocab_padded;
    shard_split_param(p, wte, SPLIT_ROWS, 1);
    int partial = shard_add(r, OP_VOCAB_EMBED, o, 0, 0, wte, -1, width, 1);
    int whole = shard_add(r, p->sp ? OP_TP_SCATTER : OP_TP_REDUCE, o, partial, 0, -1, -1, width, seq_div);
    if (wpe < 0) return whole;  /* llama: no position embedding */
    p->params[wpe].tp_partial = p->sp;
    return shard_add(r, OP_POS_ADD, o, whole, 0, wpe, -1, width, seq_div);
}

/* 1: tokens only (llama), the whole vocabulary this rank's */
int embed_variant(const Program *p, const ir_op *o) {
    (void)p;
    return o->n_param == 1;
}

void embed_emit_fwd(writer *wr, const Program *p, int i, const operands *x, const op_kernels *k) {
    if (p->ops[i].n_param == 1)
        emit(wr, "    %s(c, a + %s, wf_tokens(c), w + %s, 0, V, N, C);\n", k->fwd, x->out, x->w0);
    else
        emit(wr, "    %s(c, a + %s, wf_tokens(c), w + %s, w + %s, B, T, C);\n", k->fwd, x->out, x->w0, x->w1);
}

void embed_emit_bwd(writer *wr, const Program *p, int i, const operands *x, const op_kernels *k) {
    if (p->ops[i].n_param == 1)
        emit(wr, "    %s(c, g + %s, d + D_%s, wf_tokens(c), 0, V, N, C);\n", k->bwd, x->g0, x->out);
    else
        emit(wr, "    %s(c, g + %s, g + %s, d + D_%s, wf_tokens(c), B, T, C);\n", k->bwd, x->g0, x->g1, x->out);
}

/* ---- vocab_embed: this rank's VL vocabulary rows, zeros for the others ---- */
void vocab_embed_emit_fwd(writer *wr, const Program *p, int i, const operands *x, const op_kernels *k) {
    (void)p, (void)i;
    emit(wr, "    %s(c, a + %s, wf_tokens(c), w + %s, wf_tp_rank(c) * VL, VL, N, C);\n", k->fwd, x->out, x->w0);
}

void vocab_embed_emit_bwd(writer *wr, const Program *p, int i, const operands *x, const op_kernels *k) {
    (void)p, (void)i;
    emit(wr, "    %s(c, g + %s, d + D_%s, wf_tokens(c), wf_tp_rank(c) * VL, VL, N, C);\n", k->bwd, x->g0, x->out);
}

/* ---- pos_add: + the position embedding of this rank's rows ---- */
/* In a graph (Graph:position_add, a GPT-2 VLM's positions added after the
 * image rows are merged in, as transformers' GPT-2 inside LLaVA adds them):
 * a [seq, width] table.  The shard pass makes it too (embed_shard). */
const char *pos_add_check(const Program *p, int i) {
    const ir_op *o = &p->ops[i];
    const ir_param *w = &p->params[o->param[0]];
    long out = op_out_width(p, o);
    if (w->ndim != 2 || w->shape[0] != p->seq || w->shape[1] != out || op_in_width(p, o, 0) != out)
        return "position embedding needs a [seq, width] table and an input of its width";
    return NULL;
}

void pos_add_emit_fwd(writer *wr, const Program *p, int i, const operands *x, const op_kernels *k) {
    (void)p, (void)i;
    emit(wr, "    %s(c, a + %s, a + %s, w + %s, %s, %s, T, C);\n", k->fwd, x->out, x->in0, x->w0, x->row0, x->rows);
}

/* din += dout, skipped where din shares dout's place (op_dinput_shared,
 * memory_grads.c): only the table's gradient is left to sum */
void pos_add_emit_bwd(writer *wr, const Program *p, int i, const operands *x, const op_kernels *k) {
    if (op_dinput_shared(p, &p->ops[i], 0)) {
        emit(wr, "    /* d + D_%s is d + D_%s (one place) */\n", x->in0, x->out);
        emit(wr, "    %s(c, g + %s, d + D_%s, %s, %s, T, C);\n", k->bwd_weight, x->g0, x->out, x->row0, x->rows);
        return;
    }
    emit(wr, "    %s(c, d + D_%s, g + %s, d + D_%s, %s, %s, T, C);\n", k->bwd, x->in0, x->g0, x->out, x->row0, x->rows);
}

void pos_add_emit_bwd_input(writer *wr, const Program *p, int i, const operands *x, const op_kernels *k) {
    if (op_dinput_shared(p, &p->ops[i], 0)) {
        emit(wr, "    /* d + D_%s is d + D_%s (one place) */\n", x->in0, x->out);
        return;
    }
    emit(wr, "    %s(c, d + D_%s, d + D_%s, %s, C);\n", k->bwd_input, x->in0, x->out, x->rows);
}

void pos_add_emit_bwd_weight(writer *wr, const Program *p, int i, const operands *x, const op_kernels *k) {
    (void)p, (void)i;
    emit(wr, "    %s(c, g + %s, d + D_%s, %s, %s, T, C);\n", k->bwd_weight, x->g0, x->out, x->row0, x->rows);
}
