/* shard.c: the `shard` pass, Megatron-style tensor parallelism.
 *
 * Each linear's parallel role decides how its weight is split and which
 * conjugate collectives surround it:
 *   column-parallel (c_attn, c_fc): weight split by output columns; its input
 *     goes through tp_copy (identity forward, all-reduce of the gradient
 *     backward), or with sequence parallelism tp_gather (all-gather forward,
 *     reduce-scatter backward);
 *   row-parallel (attn.c_proj, mlp.c_proj): weight split by input rows; its
 *     partial output goes through tp_reduce (all-reduce forward) or tp_scatter
 *     (reduce-scatter forward), and only then is the (replicated) bias added.
 * The token embedding and the tied LM head are vocabulary-parallel: each rank
 * holds vocab_padded / tp rows of wte; logits are never gathered.  Attention
 * runs on heads / tp local heads (and kv_heads / tp key/value heads with
 * grouped-query attention).  Replicated parameters (layer and RMS norms,
 * row-parallel biases, wpe) stay whole; with sequence parallelism each rank
 * sees only its tokens, so their gradients are partial and marked tp_partial.
 */
#include <stdlib.h>
#include <string.h>

#include "program.h"

typedef struct {
    Program *p;
    ir_op *ops;
    int n_ops;
    ir_tensor *tensors;
    int n_tensors;
} rewrite;

static int new_tensor(rewrite *r, long width, int rows_div) {
    int id = r->n_tensors++;
    r->tensors[id].width = width;
    r->tensors[id].rows_div = rows_div;
    return id;
}

/* Appends an op reading `in` (and `in2`, or 0) and returns its output tensor. */
static int add_op(rewrite *r, op_kind kind, const ir_op *like, int in, int in2, int p0, int p1,
                  long width, int rows_div) {
    ir_op *o = &r->ops[r->n_ops];
    memset(o, 0, sizeof *o);
    o->kind = kind;
    o->layer = like->layer;
    o->in[0] = in;
    o->in[1] = in2;
    o->n_in = in2 ? 2 : (in ? 1 : 0);
    o->param[0] = p0;
    o->param[1] = p1;
    o->n_param = p1 >= 0 ? 2 : (p0 >= 0 ? 1 : 0);
    o->out = new_tensor(r, width, rows_div);
    r->tensors[o->out].producer = r->n_ops;
    r->n_ops++;
    return o->out;
}

static void split_param(Program *p, int k, int split, int sections) {
    ir_param *q = &p->params[k];
    q->split = split;
    q->sections = sections;
    int dim = (split == SPLIT_ROWS || q->ndim == 1) ? 0 : 1;
    q->shape[dim] /= p->tp;
    q->numel = 1;
    for (int d = 0; d < q->ndim; d++) q->numel *= q->shape[d];
}

/* The consumer of tensor t in the original graph (first op reading it). */
static const ir_op *consumer(const Program *p, int t) {
    for (int i = 0; i < p->n_ops; i++)
        for (int k = 0; k < p->ops[i].n_in; k++)
            if (p->ops[i].in[k] == t) return &p->ops[i];
    return NULL;
}

int pass_shard(Program *p) {
    p->vocab_padded = (p->vocab + p->tp - 1) / p->tp * p->tp;
    if (p->tp == 1) return 0;
    int tp = p->tp, seq_div = p->sp ? tp : 1;
    /* at most 3 ops replace one */
    rewrite r = { p, calloc((size_t)p->n_ops * 3 + 1, sizeof(ir_op)), 0,
                  calloc((size_t)p->n_ops * 3 + 2, sizeof(ir_tensor)), 1 };
    int *map = calloc((size_t)p->n_tensors, sizeof(int));  /* old tensor -> new tensor */
    int *gathered = calloc((size_t)p->n_tensors, sizeof(int));  /* old tensor -> its tp_copy/gather */
    for (int i = 0; i < p->n_ops; i++) {
        const ir_op *o = &p->ops[i];
        int in = o->n_in > 0 ? map[o->in[0]] : 0, in2 = o->n_in > 1 ? map[o->in[1]] : 0;
        int rows = in ? r.tensors[in].rows_div : seq_div;
        long width = p->tensors[o->out].width;
        int out = 0;
        switch (o->kind) {
        case OP_EMBED: {
            int wte = o->param[0], wpe = o->n_param > 1 ? o->param[1] : -1;
            p->params[wte].shape[0] = p->vocab_padded;
            split_param(p, wte, SPLIT_ROWS, 1);
            int partial = add_op(&r, OP_VOCAB_EMBED, o, 0, 0, wte, -1, width, 1);
            int whole = add_op(&r, p->sp ? OP_TP_SCATTER : OP_TP_REDUCE, o, partial, 0, -1, -1,
                               width, seq_div);
            if (wpe < 0) {  /* llama: no position embedding */
                out = whole;
                break;
            }
            out = add_op(&r, OP_POS_ADD, o, whole, 0, wpe, -1, width, seq_div);
            p->params[wpe].tp_partial = p->sp;
            break;
        }
        case OP_LINEAR:
            if (strcmp(o->parallel, "column") == 0) {
                const ir_op *next = consumer(p, o->out);
                int fused_qkv = next && next->kind == OP_ATTENTION && next->n_in == 1;
                int bias = o->n_param > 1 ? o->param[1] : -1;
                split_param(p, o->param[0], SPLIT_COLS, fused_qkv ? 3 : 1);
                if (bias >= 0) split_param(p, bias, SPLIT_COLS, fused_qkv ? 3 : 1);
                /* column-parallel linears reading one tensor (llama's q, k, v
                 * and gate, up) share its gather; backward sums into it */
                if (!gathered[o->in[0]]) {
                    long in_width = r.tensors[in].width;
                    gathered[o->in[0]] = add_op(&r, p->sp ? OP_TP_GATHER : OP_TP_COPY, o, in, 0, -1, -1,
                                                in_width, 1);
                }
                out = add_op(&r, OP_LINEAR, o, gathered[o->in[0]], 0, o->param[0], bias, width / tp, 1);
            } else {
                split_param(p, o->param[0], SPLIT_ROWS, 1);
                int partial = add_op(&r, OP_LINEAR, o, in, 0, o->param[0], -1, width, 1);
                int whole = add_op(&r, p->sp ? OP_TP_SCATTER : OP_TP_REDUCE, o, partial, 0, -1, -1,
                                   width, seq_div);
                if (o->n_param < 2) {  /* no bias */
                    out = whole;
                    break;
                }
                out = add_op(&r, OP_BIAS_ADD, o, whole, 0, o->param[1], -1, width, seq_div);
                p->params[o->param[1]].tp_partial = p->sp;
            }
            break;
        case OP_ATTENTION:
            out = add_op(&r, OP_ATTENTION, o, in, in2, -1, -1, width / tp, 1);
            r.ops[r.n_ops - 1].heads = o->heads / tp;
            r.ops[r.n_ops - 1].kv_heads = o->kv_heads / tp;
            break;
        case OP_ROPE:
            out = add_op(&r, OP_ROPE, o, in, in2, -1, -1, width / tp, 1);
            r.ops[r.n_ops - 1].heads = o->heads / tp;
            r.ops[r.n_ops - 1].kv_heads = o->kv_heads / tp;
            r.ops[r.n_ops - 1].theta = o->theta;
            break;
        case OP_SWIGLU:
            out = add_op(&r, OP_SWIGLU, o, in, in2, -1, -1, r.tensors[in].width, rows);
            break;
        case OP_RMSNORM:
            out = add_op(&r, OP_RMSNORM, o, in, 0, o->param[0], -1, width, rows);
            r.ops[r.n_ops - 1].eps = o->eps;
            p->params[o->param[0]].tp_partial = p->sp;
            break;
        case OP_LAYERNORM:
            out = add_op(&r, OP_LAYERNORM, o, in, 0, o->param[0], o->param[1], width, rows);
            p->params[o->param[0]].tp_partial = p->params[o->param[1]].tp_partial = p->sp;
            break;
        case OP_GELU:
            out = add_op(&r, OP_GELU, o, in, 0, -1, -1, r.tensors[in].width, rows);
            break;
        case OP_ADD:
            out = add_op(&r, OP_ADD, o, in, in2, -1, -1, width, rows);
            break;
        case OP_LMHEAD_XENT: {
            if (p->params[o->param[0]].split == SPLIT_NONE) {  /* untied (llama): split here */
                p->params[o->param[0]].shape[0] = p->vocab_padded;
                split_param(p, o->param[0], SPLIT_ROWS, 1);
            }
            int full = add_op(&r, p->sp ? OP_TP_GATHER : OP_TP_COPY, o, in, 0, -1, -1,
                              r.tensors[in].width, 1);
            out = add_op(&r, OP_LMHEAD_XENT, o, full, 0, o->param[0], -1, 1, 1);
            break;
        }
        default:
            wf_error("%s: op %s cannot be tensor-parallel", p->plan_path, op_name(o->kind));
            free(map); free(gathered); free(r.ops); free(r.tensors);
            return -1;
        }
        r.ops[r.n_ops - 1].layer = o->layer;
        memcpy(r.ops[r.n_ops - 1].parallel, o->parallel, sizeof o->parallel);
        map[o->out] = out;
    }
    free(map);
    free(gathered);
    free(p->ops);
    free(p->tensors);
    p->ops = r.ops;
    p->n_ops = r.n_ops;
    p->tensors = r.tensors;
    p->n_tensors = r.n_tensors;
    return 0;
}
