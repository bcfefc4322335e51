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
 *
 * Each op's rule is its row's shard function (ops.h); this file is the
 * rewrite they build on.
 */
#include <stdlib.h>
#include <string.h>

#include "ops.h"

struct shard_ctx {
    Program *p;
    ir_op *ops;
    int n_ops;
    ir_tensor *tensors;
    int n_tensors;
    int *map;        /* old tensor -> new tensor */
    int *gathered;   /* old tensor -> its tp_copy / tp_gather */
};

Program *shard_program(shard_ctx *r) { return r->p; }

int shard_in(shard_ctx *r, const ir_op *o, int k) {
    return o->n_in > k ? r->map[o->in[k]] : 0;
}

int shard_rows(shard_ctx *r, const ir_op *o) {
    int in = shard_in(r, o, 0);
    return in ? r->tensors[in].rows_div : (r->p->sp ? r->p->tp : 1);
}

long shard_width(shard_ctx *r, int tensor) { return r->tensors[tensor].width; }

static int new_tensor(shard_ctx *r, long width, int rows_div) {
    int id = r->n_tensors++;
    r->tensors[id].width = width;
    r->tensors[id].rows_of = ROWS_TOKENS;
    r->tensors[id].rows_div = rows_div;
    return id;
}

int shard_add(shard_ctx *r, op_kind kind, const ir_op *like, int in, int in2, int p0, int p1,
              long width, int rows_div) {
    ir_op *o = &r->ops[r->n_ops];
    memset(o, 0, sizeof *o);
    o->kind = kind;
    o->layer = like->layer;
    o->line = like->line;
    o->kernel = like->kernel;  /* OP_KERNEL: the same user kernel */
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

ir_op *shard_last(shard_ctx *r) { return &r->ops[r->n_ops - 1]; }

int shard_gather_input(shard_ctx *r, const ir_op *o) {
    if (!r->gathered[o->in[0]]) {
        int in = shard_in(r, o, 0);
        r->gathered[o->in[0]] = shard_add(r, r->p->sp ? OP_TP_GATHER : OP_TP_COPY, o, in, 0, -1, -1,
                                          r->tensors[in].width, 1);
    }
    return r->gathered[o->in[0]];
}

void shard_split_param(Program *p, int k, int split, int sections) {
    ir_param *q = &p->params[k];
    q->split = split;
    q->sections = sections;
    int dim = (split == SPLIT_ROWS || q->ndim == 1) ? 0 : 1;
    q->shape[dim] /= p->tp;
    q->numel = 1;
    for (int d = 0; d < q->ndim; d++) q->numel *= q->shape[d];
}

const ir_op *shard_consumer(const Program *p, int t) {
    for (int i = 0; i < p->n_ops; i++)
        for (int k = 0; k < p->ops[i].n_in; k++)
            if (p->ops[i].in[k] == t) return &p->ops[i];
    return NULL;
}

int pass_shard(Program *p) {
    p->vocab_padded = (p->vocab + p->tp - 1) / p->tp * p->tp;
    if (p->tp == 1) return 0;
    /* at most 3 ops replace one */
    shard_ctx r = { p, calloc((size_t)p->n_ops * 3 + 1, sizeof(ir_op)), 0,
                    calloc((size_t)p->n_ops * 3 + 2, sizeof(ir_tensor)), 1,
                    calloc((size_t)p->n_tensors, sizeof(int)), calloc((size_t)p->n_tensors, sizeof(int)) };
    int failed = 0;
    for (int i = 0; i < p->n_ops && !failed; i++) {
        const ir_op *o = &p->ops[i];
        const op_row *row = op_row_of(o->kind);
        if (!row || !row->shard) {
            wf_op_error(p, i, "cannot be tensor-parallel (mesh.tp = %d)", p->tp);
            failed = 1;
            break;
        }
        int out = row->shard(&r, o);
        if (out < 0) {  /* the row's rule refused the op (reported) */
            failed = 1;
            break;
        }
        r.ops[r.n_ops - 1].layer = o->layer;
        memcpy(r.ops[r.n_ops - 1].parallel, o->parallel, sizeof o->parallel);
        r.map[o->out] = out;
    }
    free(r.map);
    free(r.gathered);
    if (failed) {
        free(r.ops);
        free(r.tensors);
        return -1;
    }
    free(p->ops);
    free(p->tensors);
    p->ops = r.ops;
    p->n_ops = r.n_ops;
    p->tensors = r.tensors;
    p->n_tensors = r.n_tensors;
    return 0;
}
