/* ops_attention.c: the attention family's rows (ops.c): causal attention,
 * on a fused (q,k,v) input (GPT-2) or grouped-query on (rotated q|k, v)
 * (LLaMA), and the rotary embedding that rotates LLaMA's q and k.  Both run
 * on heads / tp local heads under tensor parallelism. */
#include <string.h>

#include "ops.h"

/* ---- attention ---- */
const char *attention_check(const Program *p, int i) {
    const ir_op *o = &p->ops[i];
    long out = op_out_width(p, o);
    if (o->n_in == 2) {  /* grouped-query: rotated q|k, and v */
        long hd = o->heads > 0 ? out / o->heads : 0;
        if (hd < 1 || out % o->heads || o->kv_heads < 1 || o->heads % o->kv_heads ||
            op_in_width(p, o, 0) != (o->heads + o->kv_heads) * hd || op_in_width(p, o, 1) != o->kv_heads * hd)
            return "grouped-query attention needs (q|k, v) inputs of heads and kv_heads heads, "
                   "kv_heads dividing heads";
        return NULL;
    }
    if (op_in_width(p, o, 0) != 3 * out || o->heads < 1 || out % o->heads != 0)
        return "attention needs (q,k,v) input and heads dividing width";
    return NULL;
}

int attention_saves_lse(const Program *p, const ir_op *o) {
    return o->kind == OP_ATTENTION && backend_of(p)->attention_lse;  /* GPT-2's and GQA's */
}

/* log-sum-exp per query row (CPU and CUDA), or the (T, T) probabilities per head */
long attention_saved(const Program *p, const ir_op *o) {
    if (attention_saves_lse(p, o)) return (long)p->micro * o->heads * p->seq;
    return (long)p->micro * o->heads * p->seq * p->seq;
}

/* the rowsum(P * dP) of every query row (flash style), else one head's (T, T) dP */
long attention_scratch(const Program *p, const ir_op *o) {
    return attention_saves_lse(p, o) ? attention_saved(p, o) : (long)p->seq * p->seq;
}

/* attention and rope: this rank's heads / tp (and kv_heads / tp) heads */
int heads_shard(shard_ctx *r, const ir_op *o) {
    Program *p = shard_program(r);
    int out = shard_add(r, o->kind, o, shard_in(r, o, 0), shard_in(r, o, 1), -1, -1, op_out_width(p, o) / p->tp, 1);
    ir_op *n = shard_last(r);
    n->heads = o->heads / p->tp;
    n->kv_heads = o->kv_heads / p->tp;
    n->theta = o->theta;
    n->prefix = o->prefix;
    return out;
}

/* QK^T and PV: 2 * 2 * T * width per token */
double attention_flops(const Program *p, const ir_op *o) {
    return 4.0 * (double)p->seq * op_out_width(p, o);
}

int attention_variant(const Program *p, const ir_op *o) {
    (void)p;
    return o->n_in == 2;  /* grouped-query */
}

void attention_emit_fwd(writer *wr, const Program *p, int i, const operands *x, const op_kernels *k) {
    const ir_op *op = &p->ops[i];
    if (op->n_in == 2)
        emit(wr, "    %s(c, a + %s, a + %s, a + %s, a + %s, B, T, %d, %d, %ld);\n", k->fwd, x->out, x->s, x->in0,
             x->in1, op->heads, op->kv_heads, x->width / op->heads);
    else if (op->prefix > 0)  /* bidirectional over the first prefix positions (a vision encoder) */
        emit(wr, "    wf_attention_prefix_fwd(c, a + %s, a + %s, a + %s, B, T, %ld, %d, %d);\n", x->out, x->s, x->in0,
             x->width, op->heads, op->prefix);
    else
        emit(wr, "    %s(c, a + %s, a + %s, a + %s, B, T, %ld, %d);\n", k->fwd, x->out, x->s, x->in0, x->width,
             op->heads);
}

/* out: the forward's output (recomputed with its block under full recompute) */
void attention_emit_bwd(writer *wr, const Program *p, int i, const operands *x, const op_kernels *k) {
    const ir_op *op = &p->ops[i];
    if (op->n_in == 2)
        emit(wr, "    %s(c, d + D_%s, d + D_%s, wf_scratch(c), d + D_%s, a + %s, a + %s, a + %s,\n"
             "                         a + %s, B, T, %d, %d, %ld);\n", k->bwd, x->in0, x->in1, x->out, x->in0,
             x->in1, x->out, x->s, op->heads, op->kv_heads, x->width / op->heads);
    else if (op->prefix > 0)
        emit(wr, "    wf_attention_prefix_bwd(c, d + D_%s, wf_scratch(c), d + D_%s, a + %s, a + %s, a + %s, B, T, %ld, %d,\n"
             "                            %d);\n", x->in0, x->out, x->in0, x->out, x->s, x->width, op->heads, op->prefix);
    else
        emit(wr, "    %s(c, d + D_%s, wf_scratch(c), d + D_%s, a + %s, a + %s, a + %s, B, T, %ld, %d);\n", k->bwd,
             x->in0, x->out, x->in0, x->out, x->s, x->width, op->heads);
}

/* ---- rope: q (heads) and k (kv_heads) rotated into one row, k after q ---- */
const char *rope_check(const Program *p, int i) {
    const ir_op *o = &p->ops[i];
    long hd = o->heads > 0 && o->kv_heads > 0 ? op_in_width(p, o, 0) / o->heads : 0;
    if (o->n_in != 2 || hd < 2 || hd % 2 || op_in_width(p, o, 0) != o->heads * hd ||
        op_in_width(p, o, 1) != o->kv_heads * hd || op_out_width(p, o) != (o->heads + o->kv_heads) * hd)
        return "rope needs q and k of heads and kv_heads even-sized heads";
    return NULL;
}

/* k starts after q inside the output row: under act16 that offset must be
 * a whole number of floats (check's even head size guarantees it) */
int rope_act16(const Program *p, const ir_op *o) {
    return p->tensors[o->in[0]].width % 2 == 0;
}

/* in_width values on (storage floats) */
void rope_emit_fwd(writer *wr, const Program *p, int i, const operands *x, const op_kernels *k) {
    const ir_op *op = &p->ops[i];
    long hd = x->in_width / op->heads;
    emit(wr, "    %s(c, a + %s, %ld, a + %s, %ld, N, T, %d, %ld, %.9g);\n", k->fwd, x->out, x->width, x->in0,
         x->in_width, op->heads, hd, op->theta);
    emit(wr, "    %s(c, a + %s + %ld, %ld, a + %s, %ld, N, T, %d, %ld, %.9g);\n", k->fwd, x->out,
         act_storage(p, x->in_width), x->width, x->in1, hd * op->kv_heads, op->kv_heads, hd, op->theta);
}

void rope_emit_bwd(writer *wr, const Program *p, int i, const operands *x, const op_kernels *k) {
    const ir_op *op = &p->ops[i];
    long hd = x->in_width / op->heads;
    emit(wr, "    %s(c, d + D_%s, %ld, d + D_%s, %ld, N, T, %d, %ld, %.9g);\n", k->bwd, x->in0, x->in_width, x->out,
         x->width, op->heads, hd, op->theta);
    emit(wr, "    %s(c, d + D_%s, %ld, d + D_%s + %ld, %ld, N, T, %d, %ld, %.9g);\n", k->bwd, x->in1,
         hd * op->kv_heads, x->out, act_storage(p, x->in_width), x->width, op->kv_heads, hd, op->theta);
}
