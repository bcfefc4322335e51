/* tp.c: the tensor-parallel group's collectives, as the generated code calls
 * them around column- and row-parallel layers, and the vocabulary-parallel
 * cross-entropy that needs collectives between its local kernels.
 * Collectives here are blocking: the next kernel needs their result (coll.h:
 * with NCCL the compute stream waits, not the host). */
#include <string.h>

#include "internal.h"
#include "kernels_tp.h"

int wf_tp_rank(wf_ctx *c) { return c->tp_rank; }

/* Counts n are activation values.  With float activations they are floats
 * and the collectives work on the tensors in place.  Under act16 (16-bit
 * values two a float, weft/rt.h) every sum goes through floats in c->comm,
 * as the CPU backend sums the same rounded values in fp32 and rounds once
 * after: widen, collective in fp32, then narrow (or add the floats into a
 * gradient) with one rounding (kernels_tp.h).  NCCL's 16-bit sums would
 * round differently.  All-gathers move the 16-bit values themselves where a
 * rank's piece is a whole number of floats; an odd piece goes through
 * floats too.  c->comm holds a whole tensor (n * tp floats) from its start,
 * and after it one rank's piece (compiler/memory.c sizes it). */

/* dst += src on the device that holds them (rt.h's residual kernel) */
static void add_into(wf_ctx *c, float *dst, const float *src, long n) { wf_add_fwd(c, dst, dst, src, n); }

static void allreduce(wf_ctx *c, float *buf, long n) {
    c->coll->allreduce(c, WF_GROUP_TP, buf, n, WF_F32, WF_SUM, NULL);
}

/* where a rank's piece of n values waits in c->comm: after the whole tensor */
static float *comm_piece(wf_ctx *c, long n) { return c->comm + ((n * c->p->tp + 15) & ~15L); }

/* act16: every rank's n values of in, in rank order, as floats in c->comm */
static float *gather_floats(wf_ctx *c, const float *in, long n) {
    float *piece = comm_piece(c, n);
    wf_tp_widen(c, piece, in, n);
    c->coll->allgather(c, WF_GROUP_TP, c->comm, piece, n);
    return c->comm;
}

/* out (n * tp values) = every rank's n values of in, in rank order: the
 * storage as it is, where a piece is whole floats */
static void gather(wf_ctx *c, float *out, const float *in, long n) {
    if (!wf_ctx_act16(c)) c->coll->allgather(c, WF_GROUP_TP, out, in, n);
    else if (n % 2 == 0) c->coll->allgather(c, WF_GROUP_TP, out, in, n / 2);
    else wf_tp_narrow(c, out, gather_floats(c, in, n), n * c->p->tp);
}

/* act16: the fp32 sum over the group of this rank's n of in's n * tp
 * values, as floats in c->comm (after the widened whole) */
static float *reduce_scatter_floats(wf_ctx *c, const float *in, long n) {
    float *piece = comm_piece(c, n);
    wf_tp_widen(c, c->comm, in, n * c->p->tp);
    c->coll->reduce_scatter(c, WF_GROUP_TP, piece, c->comm, n);
    return piece;
}

void wf_tp_copy_fwd(wf_ctx *c, float *out, const float *in, long n) {
    long floats = wf_ctx_act16(c) ? (n + 1) / 2 : n;
    wf_backend_copy(c, out, in, sizeof(float) * (size_t)floats);
}

void wf_tp_copy_bwd(wf_ctx *c, float *din, float *dout, long n) {
    if (!wf_ctx_act16(c)) {
        allreduce(c, dout, n);
        add_into(c, din, dout, n);
        return;
    }
    wf_tp_widen(c, c->comm, dout, n);
    allreduce(c, c->comm, n);
    wf_tp_add_floats(c, din, c->comm, n);
}

void wf_tp_reduce_fwd(wf_ctx *c, float *out, const float *in, long n) {
    if (!wf_ctx_act16(c)) {
        wf_backend_copy(c, out, in, sizeof(float) * (size_t)n);
        allreduce(c, out, n);
        return;
    }
    wf_tp_widen(c, c->comm, in, n);
    allreduce(c, c->comm, n);
    wf_tp_narrow(c, out, c->comm, n);
}

void wf_tp_reduce_bwd(wf_ctx *c, float *din, float *dout, long n) { add_into(c, din, dout, n); }

void wf_tp_gather_fwd(wf_ctx *c, float *out, const float *in, long n) { gather(c, out, in, n); }

void wf_tp_gather_bwd(wf_ctx *c, float *din, float *dout, long n) {
    if (wf_ctx_act16(c)) {
        wf_tp_add_floats(c, din, reduce_scatter_floats(c, dout, n), n);
        return;
    }
    c->coll->reduce_scatter(c, WF_GROUP_TP, c->comm, dout, n);
    add_into(c, din, c->comm, n);
}

void wf_tp_scatter_fwd(wf_ctx *c, float *out, const float *in, long n) {
    if (wf_ctx_act16(c)) wf_tp_narrow(c, out, reduce_scatter_floats(c, in, n), n);
    else c->coll->reduce_scatter(c, WF_GROUP_TP, out, in, n);
}

void wf_tp_scatter_bwd(wf_ctx *c, float *din, float *dout, long n) {
    if (wf_ctx_act16(c) && n % 2) {
        wf_tp_add_floats(c, din, gather_floats(c, dout, n), n * c->p->tp);
        return;
    }
    gather(c, c->comm, dout, n);  /* the whole gradient, in activation storage */
    add_into(c, din, c->comm, n * c->p->tp);
}

double wf_vocab_xent_fwd(wf_ctx *c, float *dlogits, float *losses, const float *x,
                         const float *wte_part, const int32_t *targets, float scale, int N, int C,
                         int VL, int v_begin, int vocab) {
    int valid = vocab - v_begin;
    valid = valid < 0 ? 0 : valid > VL ? VL : valid;
    /* x and dlogits in activation storage (16-bit under act16) */
    /* comm holds N row maxima (floats), then 2N doubles of sums and target logits */
    float *rowmax = c->comm;
    double *stats = (double *)(c->comm + ((N + 1) & ~1));
    int precision = wf_ctx_precision(c);  /* 16-bit plans: rounded logits and dlogits */
    wf_vocab_logits(c, dlogits, rowmax, x, wte_part, N, C, VL, valid, precision);
    c->coll->allreduce(c, WF_GROUP_TP, rowmax, N, WF_F32, WF_MAX, NULL);
    wf_vocab_exp(c, dlogits, stats, rowmax, targets, N, VL, v_begin, valid);
    c->coll->allreduce(c, WF_GROUP_TP, stats, 2L * N, WF_F64, WF_SUM, NULL);
    return wf_vocab_dlogits(c, dlogits, losses, rowmax, stats, targets, scale, N, VL, v_begin, precision);
}
