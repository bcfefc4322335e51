/* tp.c: the tensor-parallel group's collectives, as the generated code calls
 * them around column- and row-parallel layers, and the vocabulary-parallel
 * cross-entropy that needs collectives between its local kernels.
 * Collectives here are blocking: the next kernel needs their result. */
#include <string.h>

#include "internal.h"
#include "kernels_tp.h"

int wf_tp_rank(wf_ctx *c) { return c->tp_rank; }

static void add_into(float *dst, const float *src, long n) {
    for (long i = 0; i < n; i++) dst[i] += src[i];
}

static void check_count(const wf_ctx *c, long n, const char *call) {
    if (n > 2147483647L)
        wf_fatal(c, call, WF_WHERE, "%ld floats exceed MPI's int count", n);
}

static void allreduce(wf_ctx *c, float *buf, long n) {
    check_count(c, n, "MPI_Allreduce");
    WF_MPI(c, MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, c->tp_comm));
}

static void allgather(wf_ctx *c, float *out, const float *in, long n) {
    check_count(c, n, "MPI_Allgather");
    WF_MPI(c, MPI_Allgather(in, (int)n, MPI_FLOAT, out, (int)n, MPI_FLOAT, c->tp_comm));
}

static void reduce_scatter(wf_ctx *c, float *out, const float *in, long n) {
    check_count(c, n, "MPI_Reduce_scatter_block");
    WF_MPI(c, MPI_Reduce_scatter_block(in, out, (int)n, MPI_FLOAT, MPI_SUM, c->tp_comm));
}

void wf_tp_copy_fwd(wf_ctx *c, float *out, const float *in, long n) {
    (void)c;
    memcpy(out, in, sizeof(float) * (size_t)n);
}

void wf_tp_copy_bwd(wf_ctx *c, float *din, float *dout, long n) {
    allreduce(c, dout, n);
    add_into(din, dout, n);
}

void wf_tp_reduce_fwd(wf_ctx *c, float *out, const float *in, long n) {
    memcpy(out, in, sizeof(float) * (size_t)n);
    allreduce(c, out, n);
}

void wf_tp_reduce_bwd(wf_ctx *c, float *din, float *dout, long n) {
    (void)c;
    add_into(din, dout, n);
}

void wf_tp_gather_fwd(wf_ctx *c, float *out, const float *in, long n) { allgather(c, out, in, n); }

void wf_tp_gather_bwd(wf_ctx *c, float *din, float *dout, long n) {
    reduce_scatter(c, c->comm, dout, n);
    add_into(din, c->comm, n);
}

void wf_tp_scatter_fwd(wf_ctx *c, float *out, const float *in, long n) {
    reduce_scatter(c, out, in, n);
}

void wf_tp_scatter_bwd(wf_ctx *c, float *din, float *dout, long n) {
    allgather(c, c->comm, dout, n);
    add_into(din, c->comm, n * c->p->tp);
}

double wf_vocab_xent_fwd(wf_ctx *c, float *dlogits, float *losses, const float *x,
                         const float *wte_part, const int32_t *targets, float scale, int N, int C,
                         int VL, int v_begin, int vocab) {
    int valid = vocab - v_begin;
    valid = valid < 0 ? 0 : valid > VL ? VL : valid;
    /* comm holds N row maxima (floats), then 2N doubles of sums and target logits */
    float *rowmax = c->comm;
    double *stats = (double *)(c->comm + ((N + 1) & ~1));
    wf_vocab_logits(dlogits, rowmax, x, wte_part, N, C, VL, valid);
    WF_MPI(c, MPI_Allreduce(MPI_IN_PLACE, rowmax, N, MPI_FLOAT, MPI_MAX, c->tp_comm));
    wf_vocab_exp(dlogits, stats, rowmax, targets, N, VL, v_begin, valid);
    WF_MPI(c, MPI_Allreduce(MPI_IN_PLACE, stats, 2 * N, MPI_DOUBLE, MPI_SUM, c->tp_comm));
    return wf_vocab_dlogits(dlogits, losses, rowmax, stats, targets, scale, N, VL, v_begin);
}
