/* graph.c: the `graph` pass: the backward op list is the forward one
 * reversed; it finds when each parameter's gradient is final, the order
 * gradients complete in, the model FLOPs, and (fuse.c) the fused pairs. */
#include <stdlib.h>

#include "ops.h"

/* Backward op j undoes forward op n-1-j.  A parameter's gradient is complete
 * after the backward of the earliest forward op that uses it (a tied
 * embedding gets gradients from the LM head first and the embedding last). */
static const Program *sort_ctx;

static int by_completion(const void *a, const void *b) {
    const ir_param *pa = &sort_ctx->params[*(const int *)a];
    const ir_param *pb = &sort_ctx->params[*(const int *)b];
    if (pa->last_grad_op != pb->last_grad_op) return pa->last_grad_op - pb->last_grad_op;
    return *(const int *)a - *(const int *)b;
}

/* Elements of a token embedding that only the lookup uses (0 when tied). */
long untied_embedding(const Program *p) {
    for (int i = 0; i < p->n_ops; i++) {
        const ir_op *o = &p->ops[i];
        if (!op_row_of(o->kind)->lookup) continue;
        for (int j = 0; j < p->n_ops; j++) {  /* the LM head's weight, or the copy of it */
            if (!op_row_of(p->ops[j].kind)->loss) continue;
            int w = p->ops[j].param[0];
            if (w == o->param[0] || p->params[w].tied_to == o->param[0]) return 0;
        }
        long whole = 1;
        for (int d = 0; d < p->params[o->param[0]].ndim; d++) whole *= p->params[o->param[0]].gshape[d];
        return whole < p->n_param_total ? whole : 0;
    }
    return 0;
}

int pass_graph(Program *p) {
    for (int i = 0; i < p->n_params; i++) p->params[i].last_grad_op = -1;
    for (int i = p->n_ops - 1; i >= 0; i--) {
        int bwd_index = p->n_ops - 1 - i;
        for (int k = 0; k < p->ops[i].n_param; k++)
            p->params[p->ops[i].param[k]].last_grad_op = bwd_index;
    }
    p->n_param_total = 0;
    for (int i = 0; i < p->n_params; i++) {
        if (p->params[i].last_grad_op < 0) {
            wf_error("%s: parameter %s is never used by the model graph",
                     p->plan_path, p->params[i].name);
            return -1;
        }
        long whole = 1;  /* the full tensor, whatever tensor parallelism splits */
        for (int d = 0; d < p->params[i].ndim; d++) whole *= p->params[i].gshape[d];
        if (p->params[i].tied_to < 0) p->n_param_total += whole;
    }
    p->grad_order = malloc(sizeof(int) * (size_t)p->n_params);
    for (int i = 0; i < p->n_params; i++) p->grad_order[i] = i;
    sort_ctx = p;
    qsort(p->grad_order, (size_t)p->n_params, sizeof(int), by_completion);
    /* Model FLOPs per token: 6N for the matmuls over all weights (the tied
     * embedding counts once, as the LM head) plus 12 L h s for attention.  An
     * untied token embedding (llama) is a lookup, not a matmul: left out. */
    p->flops_per_token = 6.0 * (double)(p->n_param_total - untied_embedding(p))
                       + 12.0 * p->layers * (double)p->hidden * p->seq;
    fuse_residual_layernorm(p);
    fuse_linear_gelu(p);
    fuse_linear_dgelu(p);
    return 0;
}

