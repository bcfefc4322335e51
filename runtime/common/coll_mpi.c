/* coll_mpi.c: the collectives by host MPI (the CPU backend's only
 * implementation; comm = "mpi" on CUDA).  These are the calls step.c, zero*.c,
 * tp.c and pipe.c made directly before the seam existed.  On CUDA the arenas
 * are managed memory that MPI reads and writes from the host, so every call
 * first waits for the device (wf_backend_sync, a no-op on the CPU). */
#include <stdint.h>

#include "coll.h"
#include "internal.h"
#include "precision_bits.h"

/* MPI counts are ints */
static int count(const wf_ctx *c, long n, const char *call) {
    if (n > 2147483647L) wf_fatal(c, call, WF_WHERE, "%ld values exceed MPI's int count", n);
    return (int)n;
}

/* The 16-bit sums (coll.h): MPI has no bf16 / fp16, so the values travel
 * as MPI_UINT16_T and a user op adds them.  MPI may apply it in any order
 * and grouping (the op is commutative); each add is round(a + b) in fp32,
 * symmetric, so every rank of an all-reduce gets the same bits. */
static void sum_bf16(void *in, void *inout, int *len, MPI_Datatype *type) {
    (void)type;
    const uint16_t *a = in;
    uint16_t *b = inout;
    for (int i = 0; i < *len; i++) b[i] = wf_hd_bf16_bits(wf_hd_bf16_value(a[i]) + wf_hd_bf16_value(b[i]));
}

static void sum_fp16(void *in, void *inout, int *len, MPI_Datatype *type) {
    (void)type;
    const uint16_t *a = in;
    uint16_t *b = inout;
    for (int i = 0; i < *len; i++) b[i] = wf_hd_fp16_bits(wf_hd_fp16_value(a[i]) + wf_hd_fp16_value(b[i]));
}

static MPI_Datatype type_of(wf_dtype t) {
    return t == WF_F64 ? MPI_DOUBLE : t == WF_F32 ? MPI_FLOAT : MPI_UINT16_T;
}

/* made at first use (after MPI_Init), kept for the process */
static MPI_Op op_of(wf_ctx *c, wf_dtype t, wf_redop op) {
    static MPI_Op sums[2] = { MPI_OP_NULL, MPI_OP_NULL };
    if (t == WF_F32 || t == WF_F64) return op == WF_MAX ? MPI_MAX : MPI_SUM;
    if (op != WF_SUM) wf_fatal(c, "MPI_Op_create", WF_WHERE, "a 16-bit maximum is not a collective weft runs");
    int k = t == WF_F16;
    if (sums[k] == MPI_OP_NULL) WF_MPI(c, MPI_Op_create(k ? sum_fp16 : sum_bf16, 1, &sums[k]));
    return sums[k];
}

void wf_req_init(wf_req *r, int n) {
    for (int i = 0; i < n; i++) {
        r[i].mpi = MPI_REQUEST_NULL;
        r[i].event = NULL;
        r[i].pending = 0;
    }
}

static void mpi_allreduce(wf_ctx *c, wf_group g, void *buf, long n, wf_dtype t, wf_redop op, wf_req *r) {
    wf_backend_sync(c);
    wf_watch_group(g);
    MPI_Datatype type = type_of(t);
    MPI_Op mop = op_of(c, t, op);
    if (r)
        WF_MPI(c, MPI_Iallreduce(MPI_IN_PLACE, buf, count(c, n, "MPI_Iallreduce"), type, mop,
                                 wf_group_comm(c, g), &r->mpi));
    else
        WF_MPI(c, MPI_Allreduce(MPI_IN_PLACE, buf, count(c, n, "MPI_Allreduce"), type, mop, wf_group_comm(c, g)));
    wf_watch_group(-1);
}

/* In place, MPI leaves this rank's sum at the start of the buffer (coll.h's
 * in_place_at_own_part = 0): the caller reads it there, nothing is copied. */
static void mpi_reduce_scatter_parts(wf_ctx *c, wf_group g, const void *send, void *recv, long part, wf_dtype t,
                                     wf_req *r) {
    wf_backend_sync(c);
    wf_watch_group(g);
    MPI_Request ignored, *req = r ? &r->mpi : &ignored;
    WF_MPI(c, MPI_Ireduce_scatter_block(send == recv ? MPI_IN_PLACE : send, recv,
                                        count(c, part, "MPI_Ireduce_scatter_block"), type_of(t),
                                        op_of(c, t, WF_SUM), wf_group_comm(c, g), req));
    if (!r) WF_MPI(c, MPI_Wait(req, MPI_STATUS_IGNORE));
    wf_watch_group(-1);
}

static void mpi_allgatherv(wf_ctx *c, wf_group g, const void *send, void *recv, const int *counts,
                           const int *displs, wf_dtype t, wf_req *r) {
    wf_backend_sync(c);
    wf_watch_group(g);
    int me = 0;
    WF_MPI(c, MPI_Comm_rank(wf_group_comm(c, g), &me));
    MPI_Request ignored, *req = r ? &r->mpi : &ignored;
    if (send)
        WF_MPI(c, MPI_Iallgatherv(send, counts[me], type_of(t), recv, counts, displs, type_of(t),
                                  wf_group_comm(c, g), req));
    else
        WF_MPI(c, MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, counts, displs, type_of(t),
                                  wf_group_comm(c, g), req));
    if (!r) WF_MPI(c, MPI_Wait(req, MPI_STATUS_IGNORE));
    wf_watch_group(-1);
}

static void mpi_allgather(wf_ctx *c, wf_group g, float *out, const float *in, long n, wf_dtype t) {
    wf_backend_sync(c);
    wf_watch_group(g);
    int k = count(c, n, "MPI_Allgather");
    WF_MPI(c, MPI_Allgather(in, k, type_of(t), out, k, type_of(t), wf_group_comm(c, g)));
    wf_watch_group(-1);
}

static void mpi_reduce_scatter(wf_ctx *c, wf_group g, float *out, const float *in, long n, wf_dtype t) {
    wf_backend_sync(c);
    wf_watch_group(g);
    WF_MPI(c, MPI_Reduce_scatter_block(in, out, count(c, n, "MPI_Reduce_scatter_block"), type_of(t),
                                       op_of(c, t, WF_SUM), wf_group_comm(c, g)));
    wf_watch_group(-1);
}

static void mpi_send(wf_ctx *c, const float *buf, long n, int peer, int tag) {
    wf_backend_sync(c);
    WF_MPI(c, MPI_Send(buf, count(c, n, "MPI_Send"), MPI_FLOAT, peer, tag, c->group_comm[WF_GROUP_PP]));
}

static void mpi_recv(wf_ctx *c, float *buf, long n, int peer, int tag) {
    wf_backend_sync(c);
    WF_MPI(c, MPI_Recv(buf, count(c, n, "MPI_Recv"), MPI_FLOAT, peer, tag, c->group_comm[WF_GROUP_PP],
                       MPI_STATUS_IGNORE));
}

static void mpi_sendrecv(wf_ctx *c, const float *sbuf, long sn, int speer, int stag, float *rbuf, long rn,
                         int rpeer, int rtag) {
    wf_backend_sync(c);
    WF_MPI(c, MPI_Sendrecv(sbuf, count(c, sn, "MPI_Sendrecv"), MPI_FLOAT, speer, stag, rbuf,
                           count(c, rn, "MPI_Sendrecv"), MPI_FLOAT, rpeer, rtag, c->group_comm[WF_GROUP_PP],
                           MPI_STATUS_IGNORE));
}

static void mpi_wait(wf_ctx *c, wf_req *r, int n) {
    for (int i = 0; i < n; i++) WF_MPI(c, MPI_Wait(&r[i].mpi, MPI_STATUS_IGNORE));
}

/* Non-blocking collectives in Open MPI advance only inside MPI calls: the
 * caller pokes them between kernels so that they overlap compute. */
static int mpi_test(wf_ctx *c, wf_req *r, int n) {
    int all = 1;
    for (int i = 0; i < n; i++) {
        int done = 1;
        WF_MPI(c, MPI_Test(&r[i].mpi, &done, MPI_STATUS_IGNORE));
        all = all && done;
    }
    return all;
}

static void mpi_join(wf_ctx *c) { (void)c; }  /* host MPI calls complete before they return */

const wf_coll_ops wf_coll_mpi = {
    .name = "mpi", .allreduce = mpi_allreduce, .reduce_scatter_parts = mpi_reduce_scatter_parts,
    .in_place_at_own_part = 0,
    .allgatherv = mpi_allgatherv, .allgather = mpi_allgather, .reduce_scatter = mpi_reduce_scatter,
    .send = mpi_send, .recv = mpi_recv, .sendrecv = mpi_sendrecv, .wait = mpi_wait, .test = mpi_test,
    .join = mpi_join,
};
