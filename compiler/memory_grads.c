/* memory_grads.c: the activation-gradient sets of the memory pass.
 *
 * A gradient lives from its first touch to its last in its chunk's backward
 * (each op's backward touches the gradients of its output and inputs, a
 * fused pair's op those of both), so one chunk's gradients are packed by
 * those intervals (memory_pack.c): a block's internal gradients die with its
 * backward and the next block's reuse the place.  Each is zeroed just before
 * its first touch (kernels accumulate into gradients), except the gradient
 * of the chunk's output on a pipeline stage, which the receive writes whole
 * before the backward starts.  The chunk input's gradient lives to the end
 * (it is copied out to be sent after the backward).  Under a split backward
 * (zero-bubble) the gradients W reads (the output gradient of each op whose
 * parameter gradients wait for W, a GEMM's: dW needs dy) live to the end
 * too, as W runs after the whole B; every other gradient dies at its last
 * touch in B, and later ones take its place.  Under ZeRO >= 2 the other
 * ops' parameter gradients, computed in B, wait in the set for W to add
 * them into their bucket (ops.h's op_weight_grad_staged).  An input
 * gradient equal to its output gradient (a bias add's, the position
 * add's, a partial sum's all-reduce's: grad_alias_of) takes that
 * gradient's place.
 *
 * A set holds one (microbatch, chunk) backward at a time: from its first
 * gradient receive or its BWD (zero-bubble: B) to the end of its BWD (or W).
 * Those intervals are coloured over each stage's instruction list, in order,
 * lowest free set first; the sets a stage reserves are the most in use at
 * once (1 for a schedule whose backward is one instruction after its
 * receive).  Frozen parameters (weft.vlm's freeze) leave gradients out: an
 * op without a backward touches none, one without input gradients only its
 * output's. */
#include <stdlib.h>
#include <string.h>

#include "memory_pack.h"
#include "ops.h"
#include "program.h"
#include "schedule.h"

/* The op whose backward is fused with op i's (it emits both), or -1. */
static void partners(const Program *p, int i, int out[3]) {
    const ir_op *o = &p->ops[i];
    out[0] = out[1] = out[2] = -1;
    if (o->fused == FUSED_ADD_LN_ADD || o->fused == FUSED_LIN_GELU_LINEAR) out[0] = i + 1;
    if (o->fused == FUSED_ADD_LN_NORM || o->fused == FUSED_LIN_GELU_GELU) out[0] = i - 1;
    if (o->dgelu == DGELU_GELU) out[1] = i + 1;
    if (o->dgelu == DGELU_LINEAR) out[1] = i - 1;
    /* a gelu in both pairs reaches both linears: so does each linear */
    if (out[0] >= 0 && p->ops[out[0]].dgelu == DGELU_GELU) out[2] = out[0] + 1;
    if (out[1] >= 0 && p->ops[out[1]].fused == FUSED_LIN_GELU_GELU) out[2] = out[1] - 1;
}

/* Whether op o's W half (zero-bubble) reads its output's gradient: a W half
 * runs where the op's parameter gradients wait for W (ops.h's
 * op_weight_grad_in_w: the GEMMs' dW from dy and x, and an op without
 * inputs, the embedding, whose whole backward is there); the others'
 * parameter gradients run in B with the input gradient. */
static int w_reads_output_grad(const Program *p, const ir_op *o) {
    return op_weight_grad_in_w(p, o);
}

/* The tensor whose gradient place op i's input gradient may share (a bias
 * add's, the position add's or a partial sum's all-reduce's output, ops.h's
 * grad_alias), or 0.  Only where the two are one value: op i is the
 * input's only reader (no other op adds into its gradient, and no other
 * chunk or stage sends one), the input is made in
 * chunk k and is not its input, both have the same size and storage type,
 * and op i is in no fused pair.  The output gradient must be one the
 * backward builds, not the received one (a receive writes it whole; not a
 * case that occurs, as a residual add follows every bias add).  A
 * sequence-parallel reduce-scatter (tp_scatter) changes the rows: not one. */
static int grad_alias_of(const Program *p, int k, int i, int received) {
    const ir_op *o = &p->ops[i];
    const op_row *r = op_row_of(o->kind);
    if (!r || !r->grad_alias || !o->grad_in || o->n_in != 1 || o->fused != FUSED_NONE || o->dgelu != DGELU_NONE)
        return 0;
    int a = o->in[0], out = o->out;
    if (a <= 0 || out <= 0 || out == received || p->ops[p->tensors[a].producer].chunk != k ||
        !memory_carries_grad(p, a) || !memory_carries_grad(p, out))
        return 0;
    for (int c = 0; c < p->n_chunks; c++)
        if (p->chunk_in[c] == a) return 0;
    if (memory_tensor_numel(p, a) != memory_tensor_numel(p, out) || p->tensors[a].dtype != p->tensors[out].dtype)
        return 0;
    for (int j = 0; j < p->n_ops; j++)
        for (int n = 0; n < p->ops[j].n_in; n++)
            if (p->ops[j].in[n] == a && j != i) return 0;
    return out;
}

/* Floats of op o's staged parameter gradients: the first parameter's, then
 * the second's at the next multiple of 16 (as emit_ops.c spells them). */
long memory_staged_numel(const Program *p, const ir_op *o) {
    long n = align16(p->params[o->param[0]].numel);
    if (o->n_param > 1) n += align16(p->params[o->param[1]].numel);
    return n;
}

/* The place a shared gradient item lies in: its chain's last item (a tensor
 * shares with one made after it, so the chain ends). */
static int root_of(const int *shares, int it) {
    while (shares[it] >= 0) it = shares[it];
    return it;
}

/* Chunk k's gradient places: index into items, by tensor (0: none); the
 * chunk input's is slot n_tensors. */
typedef struct {
    int *item_of;  /* n_tensors + 1 */
    pack_item *items;
    int *id;       /* the tensor of each item (n_tensors: the chunk input; -1 - i: op i's
                      staged parameter gradients) */
    int n;
} chunk_grads;

static void touch(const Program *p, int k, chunk_grads *g, int t, int step) {
    if (t <= 0) return;
    int slot = t == p->chunk_in[k] ? p->n_tensors : t;
    if (slot == t && (p->ops[p->tensors[t].producer].chunk != k || !memory_carries_grad(p, t))) return;
    int it = g->item_of[slot];
    if (it < 0) {
        it = g->item_of[slot] = g->n++;
        g->items[it].begin = g->items[it].end = step;
        g->items[it].size = memory_tensor_numel(p, slot == t ? t : p->chunk_in[k]);
        g->id[it] = slot;
    }
    if (step < g->items[it].begin) g->items[it].begin = step;
    if (step > g->items[it].end) g->items[it].end = step;
}

/* Lays out chunk k's gradients; returns their set's size in floats. */
static long lay_out_chunk(Program *p, int k) {
    int first = p->chunk_first_op[k], end = p->chunk_end_op[k], steps = end - first;
    int split = p->sched && p->sched->split_backward;
    int received = p->pp > 1 && k + 1 < p->n_chunks ? p->chunk_in[k + 1] : 0;
    chunk_grads g;
    g.n = 0;
    g.item_of = wf_checked(malloc(sizeof(int) * (size_t)(p->n_tensors + 1)), "memory pass");
    g.items = wf_checked(calloc((size_t)(3 * steps + 4) * 3, sizeof *g.items), "memory pass");
    g.id = wf_checked(calloc((size_t)(3 * steps + 4) * 3, sizeof(int)), "memory pass");
    for (int t = 0; t <= p->n_tensors; t++) g.item_of[t] = -1;
    if (received) touch(p, k, &g, received, 0);
    for (int j = 0; j < steps; j++) {
        int i = end - 1 - j, ops[4] = { i, -1, -1, -1 };
        partners(p, i, ops + 1);
        for (int q = 0; q < 4; q++) {
            if (ops[q] < 0) continue;
            const ir_op *o = &p->ops[ops[q]];
            if (!o->grad_in && !o->grad_w) continue;  /* frozen: it has no backward (graph.c) */
            touch(p, k, &g, o->out, j);
            if (!o->grad_in) continue;                /* nor input gradients */
            for (int n = 0; n < o->n_in; n++) touch(p, k, &g, o->in[n], j);
        }
    }
    for (int it = 0; it < g.n; it++)
        if (g.id[it] == p->n_tensors) g.items[it].end = steps - 1;
    /* zero-bubble: what W reads lives past the last B step, to W */
    for (int i = first; split && i < end; i++) {
        int it = w_reads_output_grad(p, &p->ops[i]) && p->ops[i].out > 0 ? g.item_of[p->ops[i].out] : -1;
        if (it >= 0) g.items[it].end = steps - 1;
    }
    /* parameter gradients staged in B (op_weight_grad_staged): from the
     * op's B step, where they are zeroed and written, to W, which adds them
     * into their bucket */
    for (int i = first; split && i < end; i++) {
        const ir_op *o = &p->ops[i];
        if (!op_weight_grad_staged(p, o)) continue;
        int it = g.n++;
        g.items[it].begin = end - 1 - i;
        g.items[it].end = steps - 1;
        g.items[it].size = memory_staged_numel(p, o);
        g.id[it] = -1 - i;
    }
    /* an input gradient in its output gradient's place (grad_alias_of): the
     * two are packed as one item over both intervals (they meet at the op's
     * step), and the places keep their own intervals.  Chains (a row-
     * parallel linear's partial sums all-reduced, then the bias added) share
     * one place: root_of follows them. */
    int *shares = wf_checked(malloc(sizeof(int) * (size_t)(g.n + 1)), "memory pass");
    pack_item *packed = wf_checked(calloc((size_t)g.n + 1, sizeof *packed), "memory pass");
    for (int it = 0; it < g.n; it++) shares[it] = -1;
    for (int i = first; i < end; i++) {
        int out = grad_alias_of(p, k, i, received), a = p->ops[i].in[0];
        if (!out) continue;
        if (!out || g.item_of[a] < 0 || g.item_of[out] < 0) continue;
        shares[g.item_of[a]] = g.item_of[out];
        p->tensors[a].dalias = out;
    }
    int n_packed = 0, *packed_of = wf_checked(malloc(sizeof(int) * (size_t)(g.n + 1)), "memory pass");
    for (int it = 0; it < g.n; it++)
        if (shares[it] < 0) packed_of[it] = n_packed, packed[n_packed++] = g.items[it];
    for (int it = 0; it < g.n; it++) {
        pack_item *to = &packed[packed_of[root_of(shares, it)]];
        if (g.items[it].begin < to->begin) to->begin = g.items[it].begin;
        if (g.items[it].end > to->end) to->end = g.items[it].end;
    }
    long size = pack_first_fit(packed, n_packed);
    for (int it = 0; it < g.n; it++) g.items[it].offset = packed[packed_of[root_of(shares, it)]].offset;
    for (int it = 0; it < g.n; it++) {
        mem_place pl;
        memset(&pl, 0, sizeof pl);
        if (g.id[it] < 0) {  /* staged parameter gradients */
            int i = -1 - g.id[it];
            pl.kind = PLACE_DPARAM;
            pl.stage = k % p->pp;
            pl.chunk = k;
            pl.id = i;
            pl.begin = g.items[it].begin;
            pl.end = g.items[it].end;
            pl.numel = g.items[it].size;
            pl.zero_op = i;
            p->ops[i].wg_doffset = g.items[it].offset;
            memory_add_place(p, &pl);
            continue;
        }
        int in = g.id[it] == p->n_tensors;
        pl.kind = in ? PLACE_DCHUNK_IN : PLACE_DACT;
        pl.stage = k % p->pp;
        pl.chunk = k;
        pl.id = in ? k : g.id[it];
        pl.begin = g.items[it].begin;
        pl.end = g.items[it].end;
        pl.numel = g.items[it].size;
        /* not zeroed: received whole, or sharing a place built before it */
        pl.zero_op = !in && (g.id[it] == received || shares[it] >= 0) ? -1 : end - 1 - pl.begin;
        if (in) p->chunk_in_doffset[k] = g.items[it].offset;
        else p->tensors[g.id[it]].doffset = g.items[it].offset;
        memory_add_place(p, &pl);
    }
    free(g.item_of);
    free(g.items);
    free(g.id);
    free(shares);
    free(packed);
    free(packed_of);
    return size;
}

/* Colours the (microbatch, chunk) backwards of one instruction list; returns
 * the sets used, or -1 when a backward does not end in the list. */
static int colour_list(sched_instr *ins, int n) {
    int open_m[64], open_c[64], open_set[64], n_open = 0, used = 0;
    for (int i = 0; i < n; i++) {
        sched_instr *in = &ins[i];
        int m = in->m, c = in->chunk, on = 0;
        in->dslot = -1;
        if (in->op == SI_BWD || in->op == SI_BWD_INPUT || in->op == SI_BWD_WEIGHT || in->op == SI_RECV_GRAD)
            on = 1;
        if (in->op == SI_SENDRECV && in->recv.kind == MSG_GRAD) {
            on = 1;
            m = in->recv.m;
            c = in->recv.chunk;
        }
        if (!on) continue;
        int at = 0;
        while (at < n_open && (open_m[at] != m || open_c[at] != c)) at++;
        if (at == n_open) {
            if (in->op == SI_BWD_WEIGHT || n_open == 64) return -1;
            int set = 0;
            for (;; set++) {
                int taken = 0;
                for (int q = 0; q < n_open; q++) taken |= open_set[q] == set;
                if (!taken) break;
            }
            open_m[n_open] = m;
            open_c[n_open] = c;
            open_set[n_open++] = set;
            if (set + 1 > used) used = set + 1;
        }
        in->dslot = open_set[at];
        if (in->op == SI_BWD || in->op == SI_BWD_WEIGHT) {
            open_m[at] = open_m[n_open - 1];
            open_c[at] = open_c[n_open - 1];
            open_set[at] = open_set[--n_open];
        }
    }
    return n_open ? -1 : used;
}

int memory_lay_out_grads(Program *p) {
    p->dact_sets = wf_checked(calloc((size_t)p->pp, sizeof(int)), "memory pass");
    p->chunk_in_doffset = wf_checked(calloc((size_t)(p->n_chunks > 0 ? p->n_chunks : 1), sizeof(long)), "memory pass");
    for (int t = 0; t < p->n_tensors; t++) p->tensors[t].doffset = -1;
    for (int i = 0; i < p->n_ops; i++) p->ops[i].wg_doffset = -1;
    for (int k = 0; k < p->n_chunks; k++) {
        long size = lay_out_chunk(p, k);
        if (size > p->dact_numel[k % p->pp]) p->dact_numel[k % p->pp] = size;
    }
    for (int s = 0; s < p->pp; s++) {
        p->dact_sets[s] = 1;
        if (!p->sched) continue;
        int lists = p->sched->pro ? 3 : 1;
        for (int l = 0; l < lists; l++) {
            sched_instr *ins = l == 0 ? p->sched->ins[s] : l == 1 ? p->sched->pro[s] : p->sched->epi[s];
            int n = l == 0 ? p->sched->n[s] : l == 1 ? p->sched->npro[s] : p->sched->nepi[s];
            int used = colour_list(ins, n);
            if (used < 0) {
                wf_error("internal: memory pass: stage %d: a backward's gradient receive or B half is in "
                         "another instruction list than its end", s);
                return -1;
            }
            if (used > p->dact_sets[s]) p->dact_sets[s] = used;
        }
    }
    return 0;
}

int program_dact_sets(const Program *p, int stage) {
    return p->dact_sets ? p->dact_sets[stage] : 1;
}
