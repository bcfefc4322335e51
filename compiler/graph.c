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
    if (pa->frozen != pb->frozen) return pa->frozen - pb->frozen;  /* frozen ones last (buckets.c) */
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

/* What each op's backward computes (weft.vlm's freeze): parameters'
 * gradients where it has a trainable parameter, input gradients where an
 * input depends on one.  A frozen encoder before any trainable part thus has
 * no backward at all; a frozen language model still passes gradients back
 * to a trainable projector, without computing its own weights'.  The
 * partition pass marks them first too (its balance prices each op's
 * backward); nothing between the two changes what they depend on. */
int graph_mark_gradients(Program *p) {
    char *needs = wf_checked(calloc((size_t)p->n_tensors + 1, 1), "gradient marks");
    for (int i = 0; i < p->n_ops; i++) {
        ir_op *o = &p->ops[i];
        int frozen = -1;  /* one of its parameters that is */
        o->grad_w = o->grad_in = 0;
        for (int k = 0; k < o->n_param; k++) {
            if (p->params[o->param[k]].frozen) frozen = o->param[k];
            o->grad_w |= !p->params[o->param[k]].frozen;
        }
        if (frozen >= 0 && o->grad_w) {  /* its backward computes all its parameters' gradients or none */
            free(needs);
            return wf_op_error(p, i, "%s: parameter %s is frozen but another of the op's is not",
                               op_name(o->kind), p->params[frozen].name);
        }
        for (int k = 0; k < o->n_in; k++) o->grad_in |= needs[o->in[k]];
        needs[o->out] = (char)(o->grad_w || o->grad_in);
        const op_row *r = op_row_of(o->kind);  /* a half of its backward alone: the row's call for it */
        if (!op_full_backward(o) && (o->grad_in || o->grad_w) && !(o->grad_in ? r->emit_bwd_input : r->emit_bwd_weight)) {
            free(needs);
            return wf_op_error(p, i, "%s has no separate %s gradient call, which freezing its %s needs",
                               op_name(o->kind), o->grad_in ? "input" : "parameter",
                               o->grad_in ? "parameters" : "inputs");
        }
    }
    free(needs);
    return 0;
}

int pass_graph(Program *p) {
    if (graph_mark_gradients(p) != 0) return -1;
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

