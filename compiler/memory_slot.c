/* memory_slot.c: the activation slot, packed by live interval.
 *
 * A slot holds one (microbatch, chunk) of a stage from its FWD to its BWD
 * (the schedule counts slots per (microbatch, chunk), so under the
 * interleaved schedule a slot holds one chunk, not all v of the stage: the
 * slot is the largest chunk's layout, every chunk's from offset 0; one stage
 * without a pipeline keeps its one chunk).  Within it every activation and
 * saved buffer has a live interval in forward op indices:
 *   - from the op that writes it (a fused pair's kernel writes both ops'
 *     outputs at the pair's first op) to its last forward reader, when no
 *     backward reads it: the row-parallel linear's partial sums before
 *     their all-reduce or reduce-scatter, the bias and residual adds'
 *     operands, the embedding's partials, the sequence-parallel gather's
 *     output under selective recompute (regathered, memory.c), ...;
 *   - to the end of the chunk (kept for its backward) when some op's
 *     backward reads it (memory_bwd_reads), a recomputed op reads or writes
 *     it (full recompute reruns each block from its inputs, selective its
 *     attention and gathers), it leaves the chunk (the pipeline send, the
 *     loss), or it is a saved buffer (norm statistics, the LM head's
 *     dlogits); the chunk's received input likewise.
 * Those intervals are packed by first-fit by decreasing size
 * (memory_pack.c), so the slot is what backward keeps plus the largest
 * forward working set at one op, and memory_check.c re-checks them.  The
 * stage's region (once per stage: forward transients, full recompute's
 * block internals, selective's buffers) is packed on its own clock (below),
 * where in-place ops take their dying inputs' places (memory_inplace.c). */
#include <stdlib.h>
#include <string.h>

#include "emit.h"
#include "memory_pack.h"
#include "ops.h"

/* Whether op i's backward (its row's kernels as emit_ops.c calls them,
 * fused pairs included) reads activation t from the slot.  A kind not
 * listed reads all its operands (the safe answer for an op added later). */
int memory_bwd_reads(const Program *p, int i, int t) {
    const ir_op *o = &p->ops[i];
    int in0 = o->n_in > 0 && o->in[0] == t, in1 = o->n_in > 1 && o->in[1] == t;
    switch (o->kind) {
    case OP_LINEAR:  /* dW reads the input; the fused gelu's backward its pre-activation */
        if (in0) return 1;
        if (o->fused == FUSED_LIN_GELU_LINEAR && o->out == t) return 1;
        return o->dgelu == DGELU_LINEAR && i > 0 && p->ops[i - 1].n_in > 0 && p->ops[i - 1].in[0] == t;
    case OP_GELU:
    case OP_GELU_ERF:
    case OP_LAYERNORM:  /* with its saved mean and rstd */
    case OP_RMSNORM:
    case OP_LMHEAD_XENT:
        return in0;
    case OP_SWIGLU:
        return in0 || in1;
    case OP_ATTENTION:  /* q, k, v and the output (with the saved log-sum-exp) */
        return in0 || in1 || o->out == t;
    case OP_ADD:  /* gradients only */
    case OP_BIAS_ADD:
    case OP_POS_ADD:
    case OP_EMBED:
    case OP_VOCAB_EMBED:
    case OP_ROPE:
    case OP_TP_COPY:
    case OP_TP_REDUCE:
    case OP_TP_GATHER:
    case OP_TP_SCATTER:
        return 0;
    default:
        return in0 || in1 || o->out == t;
    }
}

/* The op whose kernel also runs op i (a fused pair's other half), or i. */
static int pair_of(const Program *p, int i) {
    const ir_op *o = &p->ops[i];
    if (o->fused == FUSED_ADD_LN_ADD || o->fused == FUSED_LIN_GELU_LINEAR) return i + 1;
    if (o->fused == FUSED_ADD_LN_NORM || o->fused == FUSED_LIN_GELU_GELU) return i - 1;
    return i;
}

/* Whether backward reruns op i: a block op under full recompute (its block
 * is rebuilt before its backward), an op selective recompute reruns. */
static int rerun(const Program *p, int i) {
    if (p->recompute == RECOMPUTE_FULL) return p->ops[i].layer >= 0;
    return p->recompute == RECOMPUTE_SELECTIVE && memory_selective_op(p, i);
}

typedef struct {
    pack_item *items;
    int *kind, *id;  /* PLACE_ACT tensor / PLACE_SAVED op / PLACE_CHUNK_IN chunk */
    char *exact;     /* its interval ends at its last reader (an in-place op may take its place) */
    int n;
} place_items;

static void add_item(place_items *s, int kind, int id, int begin, int end, long size, int exact) {
    s->items[s->n].begin = begin;
    s->items[s->n].end = end;
    s->items[s->n].size = size;
    s->kind[s->n] = kind;
    s->exact[s->n] = (char)exact;
    s->id[s->n++] = id;
}

static void items_alloc(place_items *s, size_t cap) {
    s->items = wf_checked(calloc(cap, sizeof *s->items), "memory pass");
    s->kind = wf_checked(calloc(cap, sizeof(int)), "memory pass");
    s->id = wf_checked(calloc(cap, sizeof(int)), "memory pass");
    s->exact = wf_checked(calloc(cap, 1), "memory pass");
    s->n = 0;
}

static void items_free(place_items *s) {
    free(s->items);
    free(s->kind);
    free(s->id);
    free(s->exact);
}

/* The region's clock.  Slot places count forward op indices.  Under full
 * recompute the region counts ticks: block l's ops lo..hi (n of them) take
 * 2n ticks, its forward (or its recompute) lo..hi and then its backward
 * hi..lo (emit_step.c rebuilds a block just before its backward), every
 * other op one tick.  So a block-internal tensor lives from its writer to
 * its last reader, forward or backward (memory_bwd_reads), and a block's
 * working set is what is live at one of its ticks, not all its tensors side
 * by side.  A split backward (zero-bubble) rebuilds the block again before
 * its W half, which walks the same ticks and reads a subset of what the
 * whole backward reads.  Not with a block's ops not contiguous: then ticks
 * are op indices and an internal tensor lives over its whole block. */
typedef struct {
    int *fwd, *bwd;  /* op i's forward tick, its backward's (a block op's; else its forward's) */
    int ticks;       /* the step's */
    int blocks;      /* the two-phase block ticks apply */
} region_clock;

static void clock_build(const Program *p, region_clock *c) {
    int n = p->n_ops > 0 ? p->n_ops : 1;
    c->fwd = wf_checked(malloc(sizeof(int) * (size_t)n), "memory pass");
    c->bwd = wf_checked(malloc(sizeof(int) * (size_t)n), "memory pass");
    c->blocks = p->recompute == RECOMPUTE_FULL;
    char *seen = wf_checked(calloc((size_t)p->layers + 1, 1), "memory pass");
    for (int i = 0; i < p->n_ops && c->blocks; i++) {  /* each block's ops one run */
        int l = p->ops[i].layer;
        if (l < 0 || l >= p->layers || (i > 0 && p->ops[i - 1].layer == l)) continue;
        if (seen[l]) c->blocks = 0;
        seen[l] = 1;
    }
    free(seen);
    int now = 0;
    for (int i = 0; i < p->n_ops;) {
        int l = p->ops[i].layer, j = i + 1;
        if (!c->blocks || l < 0 || l >= p->layers) {
            c->fwd[i] = c->bwd[i] = c->blocks ? now++ : i;
            i++;
            continue;
        }
        while (j < p->n_ops && p->ops[j].layer == l) j++;
        for (int q = i; q < j; q++) {
            c->fwd[q] = now + (q - i);
            c->bwd[q] = now + 2 * (j - i) - 1 - (q - i);
        }
        now += 2 * (j - i);
        i = j;
    }
    c->ticks = c->blocks ? now : p->n_ops;
}

static void clock_free(region_clock *c) {
    free(c->fwd);
    free(c->bwd);
}

/* Packs the items, sets their offsets, records their places; returns the
 * size.  The region's items (clock: its ticks) take in-place ops. */
static long place(Program *p, int stage, int chunk, int region, place_items *s, const region_clock *clock) {
    long top = clock ? memory_pack_in_place(p, s->items, s->kind, s->id, s->exact, s->n, clock->fwd)
                     : pack_first_fit(s->items, s->n);
    for (int it = 0; it < s->n; it++) {
        long off = s->items[it].offset;
        if (s->kind[it] == PLACE_ACT) p->tensors[s->id[it]].offset = off;
        else if (s->kind[it] == PLACE_SAVED) p->ops[s->id[it]].saved_offset = off;
        else p->chunk_in_offset[s->id[it]] = off;
        mem_place pl;
        memset(&pl, 0, sizeof pl);
        pl.kind = s->kind[it];
        pl.stage = stage;
        pl.chunk = chunk;
        pl.region = region;
        pl.zero_op = -1;
        pl.id = s->id[it];
        pl.begin = s->items[it].begin;
        pl.end = s->items[it].end;
        pl.numel = s->items[it].size;
        memory_add_place(p, &pl);
    }
    return top;
}

/* In the region by the recompute mode: full recompute's block internals,
 * selective's regathered tensors. */
static int recompute_region(const Program *p, int t) {
    return memory_block_internal(p, t) || memory_regathered(p, p->tensors[t].producer);
}

/* Whether chunk k is the loss chunk and its stage holds at most one of its
 * microbatches at a time (its FWD to its BWD or W, in the verified list):
 * then what it keeps for backward lies in the region once (whole-step
 * interval) instead of in every slot, where it would size every slot of
 * the stage (the LM head's input and dlogits).  Not under PipeDream-2BW
 * (three lists). */
static int lone_chunk(const Program *p, int k) {
    if (p->pp == 1 || !p->sched || p->sched->pro || k != p->n_chunks - 1) return 0;
    int stage = k % p->pp, live = 0, most = 0;
    for (int i = 0; i < p->sched->n[stage]; i++) {
        const sched_instr *in = &p->sched->ins[stage][i];
        if (in->chunk != k) continue;
        if (in->op == SI_FWD && ++live > most) most = live;
        if (in->op == SI_BWD || in->op == SI_BWD_WEIGHT) live--;
    }
    return most <= 1;
}

/* One unit's slot items (chunk k, or every chunk of a stage without a
 * pipeline: ops [first, end), `end - 1` standing for the end of the
 * forward); its forward transients go to the region's items (flagged). */
static void unit_items(Program *p, int stage, int k, place_items *s, place_items *r, const region_clock *clock) {
    int whole = p->pp == 1, first = whole ? 0 : p->chunk_first_op[k], end = whole ? p->n_ops : p->chunk_end_op[k];
    int last = end - 1;
    int *b = wf_checked(malloc(sizeof(int) * (size_t)(p->n_tensors + 1)), "memory pass");
    int *e = wf_checked(malloc(sizeof(int) * (size_t)(p->n_tensors + 1)), "memory pass");
    char *kept = wf_checked(calloc((size_t)p->n_tensors + 1, 1), "memory pass");
    for (int t = 0; t <= p->n_tensors; t++) b[t] = e[t] = -1;
    /* the chunk's output, staged for its send at the end of the FWD (emit_step.c) */
    int out = !whole && staged_sends(p) && k + 1 < p->n_chunks ? p->chunk_in[k + 1] : 0;
    int lone = !whole && lone_chunk(p, k), all = clock->ticks - 1;
    for (int i = first; i < end; i++) {
        const ir_op *o = &p->ops[i];
        if (o->chunk % p->pp != stage) continue;
        int j = pair_of(p, i), lo = i < j ? i : j, hi = i < j ? j : i;
        int ts[3] = { o->out, o->n_in > 0 ? o->in[0] : 0, o->n_in > 1 ? o->in[1] : 0 };
        for (int n = 0; n < 3; n++) {
            int t = ts[n];
            if (t <= 0 || t >= p->n_tensors) continue;
            if (b[t] < 0 || lo < b[t]) b[t] = lo;
            if (hi > e[t]) e[t] = hi;
            /* read by backward, or by a rerun (its output it writes again within
             * its own interval: a place of the region or the slot is live then) */
            if ((n > 0 && rerun(p, i)) || memory_bwd_reads(p, i, t)) kept[t] = 1;
        }
        /* a dgelu linear's backward reads its gelu's input (the op before) */
        if (o->dgelu == DGELU_LINEAR && i > 0 && p->ops[i - 1].n_in > 0) {
            int t = p->ops[i - 1].in[0];
            if (t > 0 && t < p->n_tensors && b[t] >= 0) kept[t] = 1;
        }
    }
    /* read outside the unit (another chunk's ops): kept to the end */
    for (int i = 0; i < p->n_ops && !whole; i++) {
        if (i >= first && i < end) continue;
        for (int n = 0; n < p->ops[i].n_in; n++) {
            int t = p->ops[i].in[n];
            if (t > 0 && t < p->n_tensors && t != out && p->tensors[t].producer >= first && p->tensors[t].producer < end)
                kept[t] = 1;
        }
    }
    for (int t = 1; t < p->n_tensors; t++) {
        const ir_op *w = &p->ops[p->tensors[t].producer];
        if (w->chunk % p->pp != stage || (!whole && w->chunk != k) || recompute_region(p, t)) continue;
        int begin = b[t] >= 0 ? b[t] : p->tensors[t].producer, stop = e[t];
        /* no reader after it in the unit (the chunk's output, the loss): kept,
         * but a staged output only to its copy at the end of the forward */
        if (t == out) stop = last;
        else if (stop <= p->tensors[t].producer) kept[t] = 1;
        if (!kept[t]) {  /* dead once the forward ends: the stage's region */
            p->block_internal[t] |= 2;
            add_item(r, PLACE_ACT, t, clock->fwd[begin], clock->fwd[stop], memory_tensor_numel(p, t), 1);
        } else if (lone) {
            p->block_internal[t] |= 2;
            add_item(r, PLACE_ACT, t, 0, all, memory_tensor_numel(p, t), 0);
        } else {
            add_item(s, PLACE_ACT, t, begin, last, memory_tensor_numel(p, t), 0);
        }
    }
    for (int i = first; i < end; i++) {
        const ir_op *o = &p->ops[i];
        if (o->chunk % p->pp != stage || !o->saved_numel || memory_saved_in_region(p, o)) continue;
        int j = pair_of(p, i);
        if (lone) {
            p->block_internal[o->out] |= 4;
            add_item(r, PLACE_SAVED, i, 0, all, align16(o->saved_numel), 0);
        } else {
            add_item(s, PLACE_SAVED, i, j < i ? j : i, last, align16(o->saved_numel), 0);
        }
    }
    for (int c = 0; c < p->n_chunks; c++) {
        if (!p->chunk_in[c] || c % p->pp != stage || (!whole && c != k)) continue;
        add_item(s, PLACE_CHUNK_IN, c, whole ? 0 : first, last, memory_tensor_numel(p, p->chunk_in[c]), 0);
    }
    free(b);
    free(e);
    free(kept);
}

/* Block-internal tensor t, written by op g of the block at ops [lo, hi]:
 * its interval on the region's two-phase clock, from its writer (a fused
 * pair's first op) to its last reader in the block's forward or, later,
 * its backward (a fused pair's backward counted at its earlier op, whose
 * tick is later). */
static void internal_interval(const Program *p, const region_clock *clock, int g, int lo, int hi, int *begin,
                              int *end) {
    int t = p->ops[g].out, pg = pair_of(p, g);
    *begin = clock->fwd[pg < g ? pg : g];
    *end = clock->fwd[pg > g ? pg : g];
    for (int j = lo; j <= hi; j++) {
        int pj = pair_of(p, j), a = pj < j ? pj : j, z = pj > j ? pj : j;
        for (int n = 0; n < p->ops[j].n_in; n++)
            if (p->ops[j].in[n] == t && clock->fwd[z] > *end) *end = clock->fwd[z];
        if (memory_bwd_reads(p, j, t) && clock->bwd[a] > *end) *end = clock->bwd[a];
    }
}

/* The recompute region's own items, on the region's clock: a block-internal
 * tensor (full recompute) from its writer to its last reader, forward or
 * backward, its op's saved buffer from its forward to its backward (over
 * the whole block without the two-phase clock), selective's attention
 * buffer at its op, a regathered tensor from its gather to its last reader
 * (forward, or its rerun and that reader's backward: the mirror of its
 * forward interval, which the forward transients do not use). */
static void recompute_items(const Program *p, int stage, place_items *r, const region_clock *clock) {
    int *lo = wf_checked(malloc(sizeof(int) * (size_t)(p->layers + 1)), "memory pass");
    int *hi = wf_checked(malloc(sizeof(int) * (size_t)(p->layers + 1)), "memory pass");
    for (int l = 0; l <= p->layers; l++) lo[l] = hi[l] = -1;
    for (int i = 0; i < p->n_ops; i++) {
        int l = p->ops[i].layer;
        if (l < 0 || l >= p->layers) continue;
        if (lo[l] < 0) lo[l] = i;
        hi[l] = i;
    }
    for (int i = 0; i < p->n_ops; i++) {
        const ir_op *o = &p->ops[i];
        if (o->chunk % p->pp != stage) continue;
        int l = o->layer;
        if (memory_block_internal(p, o->out) && l >= 0 && l < p->layers) {
            int b, e, pi = pair_of(p, i), a = pi < i ? pi : i;
            if (clock->blocks) {
                internal_interval(p, clock, i, lo[l], hi[l], &b, &e);
                add_item(r, PLACE_ACT, o->out, b, e, memory_tensor_numel(p, o->out), 1);
                b = clock->fwd[a];
                e = clock->bwd[a];
            } else {
                add_item(r, PLACE_ACT, o->out, lo[l], hi[l], memory_tensor_numel(p, o->out), 0);
                b = lo[l];
                e = hi[l];
            }
            if (o->saved_numel) add_item(r, PLACE_SAVED, i, b, e, align16(o->saved_numel), 0);
        } else if (memory_regathered(p, i)) {
            int end = i;
            for (int q = i + 1; q < p->chunk_end_op[o->chunk]; q++)
                for (int n = 0; n < p->ops[q].n_in; n++)
                    if (p->ops[q].in[n] == o->out) end = q;
            add_item(r, PLACE_ACT, o->out, clock->fwd[i], clock->fwd[end], memory_tensor_numel(p, o->out), 0);
        } else if (o->saved_numel && memory_saved_in_region(p, o)) {  /* selective's attention */
            add_item(r, PLACE_SAVED, i, clock->fwd[i], clock->fwd[i], align16(o->saved_numel), 0);
        }
    }
    free(lo);
    free(hi);
}

void memory_lay_out_acts(Program *p, int stage) {
    int units = p->pp == 1 ? 1 : p->n_chunks;
    long size = 0;
    place_items s, r;
    size_t cap = (size_t)(p->n_tensors + p->n_ops + p->n_chunks + 1);
    items_alloc(&s, cap);
    items_alloc(&r, 2 * cap);
    region_clock clock;
    clock_build(p, &clock);
    recompute_items(p, stage, &r, &clock);
    for (int k = 0; k < units; k++) {
        if (p->pp > 1 && k % p->pp != stage) continue;
        s.n = 0;
        unit_items(p, stage, k, &s, &r, &clock);
        long top = place(p, stage, p->pp == 1 ? -1 : k, 0, &s, NULL);  /* a slot holds one chunk: only its places meet */
        if (top > size) size = top;
    }
    p->act_numel[stage] = size;
    p->region_numel[stage] = place(p, stage, -1, 1, &r, &clock);
    clock_free(&clock);
    items_free(&s);
    items_free(&r);
}
