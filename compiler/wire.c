/* wire.c: the bytes on the wire.  What each message of a step carries (its
 * dtype and bytes: tensor-parallel collectives, pipeline sends, bucket
 * reductions, the tied embedding's sum) and how many bytes a step sends
 * inside a node and across nodes, for `weft check` and `weft inspect`.
 *
 * Collectives are counted as rings, as NCCL and Open MPI run them at these
 * sizes: over a group of g ranks an all-reduce of S bytes sends
 * 2 (g - 1) / g S from every member to its ring successor, an all-gather or
 * reduce-scatter of a whole of S bytes (g - 1) / g S.  A member's bytes cross
 * nodes when its successor (the next group index, the last to the first)
 * lies on another node; ranks fill nodes in order, devices_per_node each,
 * and mesh.order's strides say who the neighbours are.  A pipeline message
 * goes from one rank to one rank; with scatter/gather each tp rank sends its
 * 1/tp slice to its peer and the receiving stage all-gathers the slices in
 * its tp group (a ring all-gather of the whole message). */
#include <stdlib.h>
#include <string.h>

#include "memory_pack.h"
#include "ops.h"

/* The tensor-parallel collectives carry the plan's 16-bit type (plan.tp_comm
 * "auto" or the type itself, under bf16 / fp16) where the runtime can send
 * it: activations stored in 16 bits (act16), or floats in host memory that
 * runtime/common/tp.c packs (the CPU backend). */
int tp_comm16(const Program *p) {
    if (strcmp(p->precision, "bf16") != 0 && strcmp(p->precision, "fp16") != 0) return 0;
    if (strcmp(p->tp_comm, "fp32") == 0) return 0;
    return p->act16 || !backend_of(p)->separate_memory;
}

/* bytes of one value in a tensor-parallel sum / all-gather */
int tp_sum_bytes(const Program *p) { return tp_comm16(p) ? 2 : 4; }
int tp_gather_bytes(const Program *p) { return tp_comm16(p) || p->act16 ? 2 : 4; }

const char *tp_sum_dtype(const Program *p) { return tp_comm16(p) ? p->precision : "fp32"; }
const char *tp_gather_dtype(const Program *p) { return tp_gather_bytes(p) == 2 ? p->precision : "fp32"; }

/* A pipeline message: the boundary tensor in activation storage (16-bit
 * under act16; floats on the CPU) */
long pipe_message_bytes(const Program *p) {
    for (int k = 1; k < p->n_chunks; k++)
        if (p->chunk_in[k]) return 4L * tensor_storage(p, p->chunk_in[k]);
    return 0;
}

/* plan.dp_comm: the bucket all-reduce in the plan's 16-bit type (the
 * prelude allows it under bf16 / fp16 without ZeRO) */
int dp_comm16(const Program *p) { return p->dp_comm[0] && strcmp(p->dp_comm, "fp32") != 0; }

/* runtime/common/dp_comm.c's staging for one bucket's packed gradients (2
 * bytes each): the stage's largest bucket, in floats; 0 without 16-bit sums,
 * or where the gradients are stored in 16 bits already (grad16.c) */
long dp16_staging_numel(const Program *p, int stage) {
    if (p->dp < 2 || !dp_comm16(p) || grad16(p)) return 0;
    long most = 0;
    for (int b = 0; b < p->n_buckets; b++)
        if (p->buckets[b].stage == stage && p->buckets[b].numel > most) most = p->buckets[b].numel;
    return align16((most + 1) / 2);
}

/* What one tp rank sends of a pipeline message: all of it, or its slice
 * under scatter/gather (the compiler checks that tp divides it) */
long pipe_send_bytes(const Program *p) {
    return p->scatter_gather ? pipe_message_bytes(p) / p->tp : pipe_message_bytes(p);
}

/* The whole tensor op i's collective moves (all tp ranks' rows), bytes. */
long tp_op_bytes(const Program *p, int i, int backward) {
    const op_row *r = op_row_of(p->ops[i].kind);
    op_coll coll = backward ? r->coll_bwd : r->coll_fwd;
    if (coll == COLL_NONE) return 0;
    long values = (long)p->micro * p->seq * p->tensors[p->ops[i].out].width;
    return values * (coll == COLL_ALLGATHER ? tp_gather_bytes(p) : tp_sum_bytes(p));
}

static int node_of(const Program *p, int rank) { return rank / (p->devices_per_node > 0 ? p->devices_per_node : 1); }

/* the rank one step along axis `kind` from rank r, wrapping (its ring successor) */
static int successor(const Program *p, int r, int kind) {
    int coord[WF_AXES];
    wf_mesh_coords(p->axes, p->n_axes, r, coord);
    coord[kind] = (coord[kind] + 1) % wf_mesh_size(p->axes, p->n_axes, kind);
    return wf_mesh_rank(p->axes, p->n_axes, coord);
}

static void add_to(wire_bytes *w, int inter, double bytes) {
    if (inter) w->inter += bytes;
    else w->intra += bytes;
}

/* rank r's share of a ring collective over axis `kind`: `parts` is 2 for an
 * all-reduce, 1 for an all-gather or reduce-scatter; whole: bytes */
static void ring(const Program *p, int r, int kind, int parts, double whole, wire_bytes *w) {
    int g = wf_mesh_size(p->axes, p->n_axes, kind);
    if (g < 2 || whole <= 0) return;
    add_to(w, node_of(p, r) != node_of(p, successor(p, r, kind)), parts * (g - 1) / (double)g * whole);
}

/* tp bytes one rank of `stage` sends in a microbatch's forward and backward
 * (forward twice for the blocks under full recompute and for selective
 * recompute's regathered gathers), as a whole: the
 * collectives of coll_fwd / coll_bwd by kind, and the vocabulary-parallel
 * loss's row maxima (floats) and sums (2 doubles a token). */
static void tp_stage(const Program *p, int stage, double reduce[1], double other[1]) {
    *reduce = *other = 0;
    double tokens = (double)p->micro * p->seq;
    for (int i = 0; i < p->n_ops; i++) {
        const ir_op *o = &p->ops[i];
        if (o->chunk % p->pp != stage) continue;
        const op_row *r = op_row_of(o->kind);
        if (r->loss) *reduce += tokens * (4 + 16);
        /* forward again: full recompute's blocks, selective's regathers (memory.c) */
        int forwards = 1 + ((p->recompute == RECOMPUTE_FULL && o->layer >= 0) || memory_selective_op(p, i));
        for (int b = 0; b < 2; b++) {
            op_coll coll = b ? r->coll_bwd : r->coll_fwd;
            double bytes = (double)tp_op_bytes(p, i, b) * (b ? 1 : forwards);
            if (coll == COLL_ALLREDUCE) *reduce += bytes;
            else if (coll != COLL_NONE) *other += bytes;
        }
    }
}

/* the tied embedding's gradient (the LM head's copy on the last stage) */
static long tied_numel(const Program *p) {
    for (int k = 0; k < p->n_params; k++)
        if (p->params[k].tied_to >= 0) return p->params[k].numel;
    return 0;
}

wire_step wire_per_step(const Program *p) {
    wire_step w;
    memset(&w, 0, sizeof w);
    double accum = p->accum;
    double *reduce = calloc((size_t)p->pp, sizeof(double)), *other = calloc((size_t)p->pp, sizeof(double));
    if (!reduce || !other) {
        free(reduce);
        free(other);
        return w;
    }
    for (int s = 0; s < p->pp; s++) tp_stage(p, s, &reduce[s], &other[s]);
    long pipe = pipe_send_bytes(p);
    for (int r = 0; r < p->world; r++) {
        int coord[WF_AXES];
        wf_mesh_coords(p->axes, p->n_axes, r, coord);
        int stage = coord[WF_AXIS_PP];
        ring(p, r, WF_AXIS_TP, 2, accum * reduce[stage], &w.tp);
        ring(p, r, WF_AXIS_TP, 1, accum * other[stage], &w.tp);
        /* pipeline: every chunk boundary this rank sends across, forward
         * (chunk k - 1 to k) and backward (k to k - 1), each microbatch */
        for (int k = 1; k < p->n_chunks; k++) {
            int from = (k - 1) % p->pp, to = k % p->pp;
            if (stage != from && stage != to) continue;
            int peer[WF_AXES];
            memcpy(peer, coord, sizeof peer);
            peer[WF_AXIS_PP] = stage == from ? to : from;
            int other_rank = wf_mesh_rank(p->axes, p->n_axes, peer);
            int inter = node_of(p, r) != node_of(p, other_rank);
            if (stage == from) add_to(&w.pp, inter, accum * (double)pipe);
            if (stage == to) add_to(&w.pp, inter, accum * (double)pipe);
            /* scatter/gather: the receiver's all-gather, the activation on
             * stage `to`, its gradient on `from` */
            if (p->scatter_gather)
                ring(p, r, WF_AXIS_TP, 1, accum * (double)pipe_message_bytes(p), &w.pp_gather);
        }
        /* data parallel: the stage's buckets, fp32 gradients (step.c,
         * zero*.c; 16-bit under plan.dp_comm): all-reduced once a step; ZeRO reduce-scatters them (each
         * microbatch from ZeRO-2 on) and all-gathers the updated parameters
         * (ZeRO-3: before each use instead) */
        for (int b = 0; b < p->n_buckets; b++) {
            const ir_bucket *bk = &p->buckets[b];
            if (bk->stage != stage) continue;
            double bytes = (dp_comm16(p) ? 2.0 : 4.0) * (double)bk->numel;
            if (!p->zero) {
                ring(p, r, WF_AXIS_DP, 2, bytes, &w.dp);
                continue;
            }
            ring(p, r, WF_AXIS_DP, 1, (p->zero >= 2 ? accum : 1) * bytes, &w.dp);
            /* the parameters travel as stored (16 bits under param16.c),
             * whatever the gradients' type */
            if (p->zero < 3) ring(p, r, WF_AXIS_DP, 1, (param16(p) ? 2.0 : 4.0) * (double)bk->numel, &w.dp);
        }
        if (p->zero >= 3)
            for (int g = 0; g < p->n_gathers; g++)
                if (p->gathers[g].stage == stage)
                    ring(p, r, WF_AXIS_DP, 1, accum * (param16(p) ? 2.0 : 4.0) * (double)p->buckets[p->gathers[g].bucket].numel,
                         &w.dp);
        /* the tied wte: first and last stage sum their gradients, each
         * sending its whole copy to the other once a step */
        if (p->pp > 1 && (stage == 0 || stage == p->pp - 1)) {
            int peer[WF_AXES];
            memcpy(peer, coord, sizeof peer);
            peer[WF_AXIS_PP] = stage == 0 ? p->pp - 1 : 0;
            add_to(&w.tied, node_of(p, r) != node_of(p, wf_mesh_rank(p->axes, p->n_axes, peer)),
                   4.0 * (double)tied_numel(p));
        }
    }
    free(reduce);
    free(other);
    w.total.intra = w.tp.intra + w.pp.intra + w.pp_gather.intra + w.dp.intra + w.tied.intra;
    w.total.inter = w.tp.inter + w.pp.inter + w.pp_gather.inter + w.dp.inter + w.tied.inter;
    return w;
}

/* `weft check`: the table of bytes per step by link class */
void wire_report(const Program *p, FILE *out) {
    if (p->world < 2) return;
    wire_step w = wire_per_step(p);
    const char *what[] = { "tp", "pp", "pp gather", "dp", "tied wte", "all" };  /* ("total" is the memory table's) */
    const wire_bytes *rows[] = { &w.tp, &w.pp, &w.pp_gather, &w.dp, &w.tied, &w.total };
    fprintf(out, "wire      bytes sent per step by all %d ranks (ring collectives; %d devices a node):\n",
            p->world, p->devices_per_node);
    fprintf(out, "  %-12s %14s %14s\n", "", "inside a node", "across nodes");
    for (int i = 0; i < 6; i++) {
        if (i < 5 && rows[i]->intra == 0 && rows[i]->inter == 0) continue;
        char a[32], b[32];
        program_human_bytes(rows[i]->intra, a, sizeof a);
        program_human_bytes(rows[i]->inter, b, sizeof b);
        fprintf(out, "  %-12s %14s %14s", what[i], a, b);
        if (i == 0) fprintf(out, "  (sums %s, gathers %s)", tp_sum_dtype(p), tp_gather_dtype(p));
        if (i == 1) fprintf(out, "  (%s%s)", p->act16 ? p->precision : "fp32",
                            p->scatter_gather ? ", 1/tp slices: scatter/gather" : "");
        if (i == 2) fprintf(out, "  (the slices all-gathered in the tp group)");
        if (i == 3) fprintf(out, "  (%s gradients%s%s%s)", dp_comm16(p) ? p->dp_comm : "fp32",
                            p->zero ? ", " : "", p->zero ? (param16(p) ? p->precision : "fp32") : "",
                            p->zero ? " parameters" : "");
        if (i == 4) fprintf(out, "  (fp32 gradients)");
        fputc('\n', out);
    }
}
