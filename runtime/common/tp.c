/* tp.c: the tensor-parallel group's collectives, as the generated code calls
 * them around column- and row-parallel layers, and the vocabulary-parallel
 * cross-entropy that needs collectives between its local kernels.
 * Collectives here are blocking: the next kernel needs their result (coll.h:
 * with NCCL the compute stream waits, not the host). */
#include <stdint.h>
#include <string.h>

#include "convert16.h"
#include "internal.h"
#include "kernels_tp.h"
#include "precision_bits.h"
#include "vocab_chunk.h"

int wf_tp_rank(wf_ctx *c) { return c->tp_rank; }

/* Counts n are activation values.  Two kinds of message (weft/rt.h,
 * tp_comm16; the compiler's wire.c counts their bytes):
 *
 * tp_comm16 = 1 (bf16 / fp16 plans by default): the collectives carry the
 * plan's 16-bit type and sum in it (coll.h: each add rounds to the type),
 * as Megatron's do.  Under act16 the activations are those 16-bit values
 * already and the collectives work on them in place; float activations (the
 * CPU backend's float storage, WEFT_ACT16=0, whose values the generated code
 * has rounded to the type) are packed into 16 bits in c->comm around each
 * collective, exactly.  So both backends and storages, over MPI, compute the
 * same sums.  An input gradient is its old value plus the 16-bit sum,
 * rounded once more (by the add under act16, by the generated code with
 * float storage).
 *
 * tp_comm16 = 0 (fp32 plans, and plan.tp_comm = "fp32"): sums in fp32.  With
 * float activations the collectives work on the tensors in place.  Under
 * act16 every sum goes through floats in c->comm, as float storage sums the
 * same rounded values in fp32 and rounds once after: widen, collective in
 * fp32, then narrow (or add the floats into a gradient) with one rounding
 * (kernels_tp.h).
 *
 * All-gathers only move values: under act16 they move the 16-bit values
 * either way.  c->comm holds a whole tensor (n * tp floats) from its start,
 * and after it one rank's piece (compiler/memory.c sizes it). */

/* dst += src on the device that holds them (rt.h's residual kernel: in
 * 16-bit storage under act16, rounding the sum once) */
static void add_into(wf_ctx *c, float *dst, const float *src, long n) { wf_add_fwd(c, dst, dst, src, n); }

static int comm16(wf_ctx *c) { return c->p->tp_comm16; }
static wf_dtype type16(wf_ctx *c) { return wf_ctx_precision(c) == WF_BF16 ? WF_B16 : WF_F16; }
/* the type the storage holds: what all-gathers move */
static wf_dtype storage_type(wf_ctx *c) { return wf_ctx_act16(c) ? type16(c) : WF_F32; }

static void allreduce(wf_ctx *c, float *buf, long n) {
    c->coll->allreduce(c, WF_GROUP_TP, buf, n, WF_F32, WF_SUM, NULL);
}

static void allreduce16(wf_ctx *c, float *buf, long n) {
    c->coll->allreduce(c, WF_GROUP_TP, buf, n, type16(c), WF_SUM, NULL);
}

/* where a rank's piece of n values waits in c->comm: after the whole tensor
 * (as floats; as 16-bit values on the CPU's 16-bit path) */
static float *comm_piece(wf_ctx *c, long n) { return c->comm + ((n * c->p->tp + 15) & ~15L); }
static float *comm_piece16(wf_ctx *c, long n) { return c->comm + (((n * c->p->tp + 1) / 2 + 15) & ~15L); }

/* Float activations (the CPU backend) to and from the 16-bit wire, on the
 * host: the compiler asks for tp_comm16 without act16 only where the
 * activations are in host memory.  The values are rounded to the type
 * already, so packing is exact. */
static void pack16(wf_ctx *c, float *dst, const float *src, long n) {
    wf_narrow16(wf_ctx_precision(c), (uint16_t *)dst, src, n);
}

/* dst = the values (add: dst += them; the generated code rounds dst after) */
static void unpack16(wf_ctx *c, float *dst, const float *src, long n, int add) {
    const uint16_t *h = (const uint16_t *)src;
    int prec = wf_ctx_precision(c);
    for (long i = 0; i < n; i++) {
        float v = wf_hd_16_value(prec, h[i]);
        dst[i] = add ? dst[i] + v : v;
    }
}

/* out (n * tp values) = every rank's n values of in, in rank order, in
 * activation storage; out is not c->comm on the CPU's 16-bit path */
static void gather(wf_ctx *c, float *out, const float *in, long n) {
    if (!wf_ctx_act16(c) && comm16(c)) {
        float *piece = comm_piece16(c, n);
        pack16(c, piece, in, n);
        c->coll->allgather(c, WF_GROUP_TP, c->comm, piece, n, type16(c));
        unpack16(c, out, c->comm, n * c->p->tp, 0);
        return;
    }
    c->coll->allgather(c, WF_GROUP_TP, out, in, n, storage_type(c));
}

/* act16, fp32 sums: the fp32 sum over the group of this rank's n of in's
 * n * tp values, as floats in c->comm (after the widened whole) */
static float *reduce_scatter_floats(wf_ctx *c, const float *in, long n) {
    float *piece = comm_piece(c, n);
    wf_tp_widen(c, c->comm, in, n * c->p->tp);
    c->coll->reduce_scatter(c, WF_GROUP_TP, piece, c->comm, n, WF_F32);
    return piece;
}

/* the CPU's 16-bit path: this rank's n of the 16-bit sum of in's n * tp
 * values, as 16-bit values in c->comm (after the packed whole) */
static float *reduce_scatter_packed(wf_ctx *c, const float *in, long n) {
    float *piece = comm_piece16(c, n);
    pack16(c, c->comm, in, n * c->p->tp);
    c->coll->reduce_scatter(c, WF_GROUP_TP, piece, c->comm, n, type16(c));
    return piece;
}

/* The memory pass may run copy and reduce in place (compiler/ops.c's
 * inplace: out == in when in dies here): no copy onto itself. */
static void copy_unless_same(wf_ctx *c, float *out, const float *in, long floats) {
    if (out != in) wf_backend_copy(c, out, in, sizeof(float) * (size_t)floats);
}

void wf_tp_copy_fwd(wf_ctx *c, float *out, const float *in, long n) {
    copy_unless_same(c, out, in, wf_ctx_act16(c) ? (n + 1) / 2 : n);
}

void wf_tp_copy_bwd(wf_ctx *c, float *din, float *dout, long n) {
    if (comm16(c) && wf_ctx_act16(c)) {
        allreduce16(c, dout, n);
        add_into(c, din, dout, n);
    } else if (comm16(c)) {
        pack16(c, c->comm, dout, n);
        allreduce16(c, c->comm, n);
        unpack16(c, din, c->comm, n, 1);
    } else if (!wf_ctx_act16(c)) {
        allreduce(c, dout, n);
        add_into(c, din, dout, n);
    } else {
        wf_tp_widen(c, c->comm, dout, n);
        allreduce(c, c->comm, n);
        wf_tp_add_floats(c, din, c->comm, n);
    }
}

void wf_tp_reduce_fwd(wf_ctx *c, float *out, const float *in, long n) {
    if (comm16(c) && wf_ctx_act16(c)) {
        copy_unless_same(c, out, in, (n + 1) / 2);
        allreduce16(c, out, n);
    } else if (comm16(c)) {
        pack16(c, c->comm, in, n);
        allreduce16(c, c->comm, n);
        unpack16(c, out, c->comm, n, 0);
    } else if (!wf_ctx_act16(c)) {
        copy_unless_same(c, out, in, n);
        allreduce(c, out, n);
    } else {
        wf_tp_widen(c, c->comm, in, n);
        allreduce(c, c->comm, n);
        wf_tp_narrow(c, out, c->comm, n);
    }
}

void wf_tp_reduce_bwd(wf_ctx *c, float *din, float *dout, long n) { add_into(c, din, dout, n); }

void wf_tp_gather_fwd(wf_ctx *c, float *out, const float *in, long n) { gather(c, out, in, n); }

void wf_tp_gather_bwd(wf_ctx *c, float *din, float *dout, long n) {
    if (comm16(c) && wf_ctx_act16(c)) {
        c->coll->reduce_scatter(c, WF_GROUP_TP, c->comm, dout, n, type16(c));
        add_into(c, din, c->comm, n);
    } else if (comm16(c)) {
        unpack16(c, din, reduce_scatter_packed(c, dout, n), n, 1);
    } else if (wf_ctx_act16(c)) {
        wf_tp_add_floats(c, din, reduce_scatter_floats(c, dout, n), n);
    } else {
        c->coll->reduce_scatter(c, WF_GROUP_TP, c->comm, dout, n, WF_F32);
        add_into(c, din, c->comm, n);
    }
}

void wf_tp_scatter_fwd(wf_ctx *c, float *out, const float *in, long n) {
    if (comm16(c) && wf_ctx_act16(c)) c->coll->reduce_scatter(c, WF_GROUP_TP, out, in, n, type16(c));
    else if (comm16(c)) unpack16(c, out, reduce_scatter_packed(c, in, n), n, 0);
    else if (wf_ctx_act16(c)) wf_tp_narrow(c, out, reduce_scatter_floats(c, in, n), n);
    else c->coll->reduce_scatter(c, WF_GROUP_TP, out, in, n, WF_F32);
}

void wf_tp_scatter_bwd(wf_ctx *c, float *din, float *dout, long n) {
    if (comm16(c) && !wf_ctx_act16(c)) {
        float *piece = comm_piece16(c, n);
        pack16(c, piece, dout, n);
        c->coll->allgather(c, WF_GROUP_TP, c->comm, piece, n, type16(c));
        unpack16(c, din, c->comm, n * c->p->tp, 1);
        return;
    }
    gather(c, c->comm, dout, n);  /* the whole gradient, in activation storage */
    add_into(c, din, c->comm, n * c->p->tp);
}

double wf_vocab_xent_fwd(wf_ctx *c, float *dlogits, float *losses, const float *x,
                         const float *wte_part, const int32_t *targets, float scale, int N, int C,
                         int VL, int v_begin, int vocab) {
    /* x and dlogits in activation storage (16-bit under act16); all N rows one chunk */
    wf_vocab_chunks k = wf_vocab_chunks_of(c, N, VL, v_begin, vocab, N);
    wf_vocab_chunk_stats(c, &k, dlogits, x, wte_part, targets, N, C, VL, v_begin);
    return wf_vocab_dlogits(c, dlogits, losses, k.rowmax, k.stats, targets, scale, N, VL, v_begin, k.precision);
}

