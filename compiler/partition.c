/* partition.c: the `partition` pass.  Cuts the op list into pp * virt
 * pipeline chunks of whole transformer blocks (the embedding joins the first
 * chunk, the final norm, LM head and loss the last), either as the plan's
 * pipeline.stages says or balanced by compute cost: each op's forward and
 * backward seconds as `weft simulate` prices them (simulate_op_seconds, so
 * a frozen encoder's missing backward is left out here as there; recompute's
 * second forward is not counted: it adds about the same to every block, and
 * which ops it repeats depends on the chunks).  Chunk k runs on stage
 * k % pp.  A parameter used on two stages (the tied wte: embedding on the
 * first, LM head on the last) gets a copy on the second; the runtime sums
 * their gradients so both stay equal. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"
#include "partition.h"
#include "simulate.h"

void partition_balance(const double *cost, int L, int K, int *out) {
    /* best[k][i]: the smallest maximum for the first i layers in k chunks */
    double *best = wf_checked(malloc(sizeof(double) * (size_t)(K + 1) * (size_t)(L + 1)), "partition pass");
    int *cut = wf_checked(calloc((size_t)(K + 1) * (size_t)(L + 1), sizeof(int)), "partition pass");
    double *prefix = wf_checked(malloc(sizeof(double) * (size_t)(L + 1)), "partition pass");
    prefix[0] = 0;
    for (int i = 1; i <= L; i++) prefix[i] = prefix[i - 1] + cost[i];
#define BEST(k, i) best[(size_t)(k) * (L + 1) + (i)]
#define CUT(k, i) cut[(size_t)(k) * (L + 1) + (i)]
    for (int k = 0; k <= K; k++)
        for (int i = 0; i <= L; i++) BEST(k, i) = 1e300;
    BEST(0, 0) = 0;
    for (int k = 1; k <= K; k++)
        for (int i = k; i <= L; i++)
            for (int j = k - 1; j < i; j++) {
                double part = prefix[i] - prefix[j] + (k == 1 ? cost[0] : 0) + (i == L ? cost[L + 1] : 0);
                double m = BEST(k - 1, j) > part ? BEST(k - 1, j) : part;
                if (m < BEST(k, i)) {
                    BEST(k, i) = m;
                    CUT(k, i) = j;
                }
            }
    for (int k = K, i = L; k > 0; k--) {
        int j = CUT(k, i);
        out[k - 1] = i - j;
        i = j;
    }
#undef BEST
#undef CUT
    free(best);
    free(cut);
    free(prefix);
}

int partition_costs(Program *p, double *cost) {
    int L = p->layers;
    /* what each op's backward computes, as the graph pass will mark it */
    if (graph_mark_gradients(p) != 0) return -1;
    for (int i = 0; i < L + 2; i++) cost[i] = 0;
    int seen_block = 0;
    for (int i = 0; i < p->n_ops; i++) {
        const ir_op *o = &p->ops[i];
        if (o->layer >= 0) seen_block = 1;
        int slot = o->layer >= 0 ? o->layer + 1 : (seen_block ? L + 1 : 0);
        double s = simulate_op_seconds(p, i);
        /* a NaN would compare false everywhere and leave cuts unset: refuse it */
        if (!isfinite(s) || s < 0) {
            wf_error("%s: internal: the partition pass priced op %d (%s) at %g s, which it cannot balance; "
                     "set pipeline.stages to split the layers by hand",
                     p->plan_path, i, op_name(o->kind), s);
            return -1;
        }
        cost[slot] += s;
    }
    return 0;
}

int pass_partition(Program *p) {
    int K = p->pp * p->virt, L = p->layers;
    p->n_chunks = K;
    int *layers = wf_checked(malloc(sizeof(int) * (size_t)K), "partition pass");
    if (p->chunk_layers) {
        memcpy(layers, p->chunk_layers, sizeof(int) * (size_t)K);
    } else if (K == 1) {
        layers[0] = L;
    } else {
        double *cost = wf_checked(calloc((size_t)L + 2, sizeof(double)), "partition pass");
        if (partition_costs(p, cost) != 0) {
            free(cost);
            free(layers);
            return -1;
        }
        partition_balance(cost, L, K, layers);
        free(cost);
    }
    /* block l goes to the chunk whose layer range holds it */
    int *chunk_of_layer = wf_checked(malloc(sizeof(int) * (size_t)L), "partition pass");
    for (int k = 0, l = 0; k < K; k++)
        for (int n = 0; n < layers[k]; n++) chunk_of_layer[l++] = k;
    int seen_block = 0;
    for (int i = 0; i < p->n_ops; i++) {
        ir_op *o = &p->ops[i];
        if (o->layer >= 0) seen_block = 1;
        o->chunk = o->layer >= 0 ? chunk_of_layer[o->layer] : (seen_block ? K - 1 : 0);
    }
    free(chunk_of_layer);
    free(p->chunk_layers);
    p->chunk_layers = layers;

    /* op ranges and boundary tensors: exactly one tensor (the residual
     * stream) may cross from one chunk into the next */
    p->chunk_first_op = wf_checked(calloc((size_t)K, sizeof(int)), "partition pass");
    p->chunk_end_op = wf_checked(calloc((size_t)K, sizeof(int)), "partition pass");
    p->chunk_in = wf_checked(calloc((size_t)K, sizeof(int)), "partition pass");
    p->chunk_out = wf_checked(calloc((size_t)K, sizeof(int)), "partition pass");
    p->chunk_in_offset = wf_checked(calloc((size_t)K, sizeof(long)), "partition pass");
    for (int i = p->n_ops - 1; i >= 0; i--) p->chunk_first_op[p->ops[i].chunk] = i;
    for (int i = 0; i < p->n_ops; i++) p->chunk_end_op[p->ops[i].chunk] = i + 1;
    for (int i = 0; i < p->n_ops; i++) {
        const ir_op *o = &p->ops[i];
        for (int k = 0; k < o->n_in; k++) {
            int t = o->in[k], from = p->ops[p->tensors[t].producer].chunk;
            if (from == o->chunk) continue;
            if (from != o->chunk - 1 || (p->chunk_in[o->chunk] && p->chunk_in[o->chunk] != t)) {
                wf_error("%s: pipeline chunk %d reads more than one tensor of chunk %d; "
                         "only the residual stream may cross a stage boundary",
                         p->plan_path, o->chunk, from);
                return -1;
            }
            p->chunk_in[o->chunk] = t;
            p->chunk_out[from] = t;
        }
    }

    /* parameters live on the stage of the ops that use them; a second stage
     * gets its own copy */
    int n = p->n_params;
    for (int k = 0; k < n; k++) {
        p->params[k].stage = -1;
        p->params[k].tied_to = -1;
    }
    for (int i = 0; i < p->n_ops; i++) {
        ir_op *o = &p->ops[i];
        int stage = o->chunk % p->pp;
        for (int j = 0; j < o->n_param; j++) {
            ir_param *q = &p->params[o->param[j]];
            if (q->stage < 0 || q->stage == stage) {
                q->stage = stage;
                continue;
            }
            /* find or make the copy on this stage */
            int copy = -1;
            for (int c = n; c < p->n_params; c++)
                if (p->params[c].tied_to == o->param[j] && p->params[c].stage == stage) copy = c;
            if (copy < 0) {
                p->params = wf_checked(realloc(p->params, sizeof(ir_param) * (size_t)(p->n_params + 1)), "partition pass");
                copy = p->n_params++;
                p->params[copy] = p->params[o->param[j]];
                p->params[copy].stage = stage;
                p->params[copy].tied_to = o->param[j];
            }
            o->param[j] = copy;
        }
    }
    return 0;
}
