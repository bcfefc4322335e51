/* tp.c: the tensor-parallel group's collectives, as the generated code calls
 * them around column- and row-parallel layers, and the vocabulary-parallel
 * cross-entropy that needs collectives between its local kernels.
 * Collectives here are blocking: the next kernel needs their result (coll.h:
 * with NCCL the compute stream waits, not the host). */
#include <string.h>

#include "internal.h"
#include "kernels_tp.h"

int wf_tp_rank(wf_ctx *c) { return c->tp_rank; }

/* dst += src on the device that holds them (rt.h's residual kernel) */
static void add_into(wf_ctx *c, float *dst, const float *src, long n) { wf_add_fwd(c, dst, dst, src, n); }

static void allreduce(wf_ctx *c, float *buf, long n) {
    c->coll->allreduce(c, WF_GROUP_TP, buf, n, WF_F32, WF_SUM, NULL);
}

void wf_tp_copy_fwd(wf_ctx *c, float *out, const float *in, long n) {
    wf_backend_copy(c, out, in, sizeof(float) * (size_t)n);
}

void wf_tp_copy_bwd(wf_ctx *c, float *din, float *dout, long n) {
    allreduce(c, dout, n);
    add_into(c, din, dout, n);
}

void wf_tp_reduce_fwd(wf_ctx *c, float *out, const float *in, long n) {
    wf_backend_copy(c, out, in, sizeof(float) * (size_t)n);
    allreduce(c, out, n);
}

void wf_tp_reduce_bwd(wf_ctx *c, float *din, float *dout, long n) { add_into(c, din, dout, n); }

void wf_tp_gather_fwd(wf_ctx *c, float *out, const float *in, long n) {
    c->coll->allgather(c, WF_GROUP_TP, out, in, n);
}

void wf_tp_gather_bwd(wf_ctx *c, float *din, float *dout, long n) {
    c->coll->reduce_scatter(c, WF_GROUP_TP, c->comm, dout, n);
    add_into(c, din, c->comm, n);
}

void wf_tp_scatter_fwd(wf_ctx *c, float *out, const float *in, long n) {
    c->coll->reduce_scatter(c, WF_GROUP_TP, out, in, n);
}

void wf_tp_scatter_bwd(wf_ctx *c, float *din, float *dout, long n) {
    c->coll->allgather(c, WF_GROUP_TP, c->comm, dout, n);
    add_into(c, din, c->comm, n * c->p->tp);
}

double wf_vocab_xent_fwd(wf_ctx *c, float *dlogits, float *losses, const float *x,
                         const float *wte_part, const int32_t *targets, float scale, int N, int C,
                         int VL, int v_begin, int vocab) {
    int valid = vocab - v_begin;
    valid = valid < 0 ? 0 : valid > VL ? VL : valid;
    /* comm holds N row maxima (floats), then 2N doubles of sums and target logits */
    float *rowmax = c->comm;
    double *stats = (double *)(c->comm + ((N + 1) & ~1));
    int precision = wf_ctx_precision(c);  /* 16-bit plans: rounded logits and dlogits */
    wf_vocab_logits(dlogits, rowmax, x, wte_part, N, C, VL, valid, precision);
    c->coll->allreduce(c, WF_GROUP_TP, rowmax, N, WF_F32, WF_MAX, NULL);
    wf_vocab_exp(dlogits, stats, rowmax, targets, N, VL, v_begin, valid);
    c->coll->allreduce(c, WF_GROUP_TP, stats, 2L * N, WF_F64, WF_SUM, NULL);
    return wf_vocab_dlogits(dlogits, losses, rowmax, stats, targets, scale, N, VL, v_begin, precision);
}
