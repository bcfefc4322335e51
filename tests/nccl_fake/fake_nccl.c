/* fake_nccl.c (test double): NCCL's semantics over host MPI, so that
 * runtime/cuda/coll_nccl.c runs unchanged with the CPU kernels (ctest
 * e2e_nccl_fake).  What it checks: how coll_nccl.c maps the runtime's
 * collectives onto NCCL's (ZeRO's equal parts as one ncclReduceScatter, in
 * place as NCCL defines it, recv = send + rank x count, and one
 * ncclAllGather, in place when send = recv + rank x count; unequal
 * all-gathers as grouped broadcasts; a buffer that overlaps the other in any
 * other way is refused, as NCCL leaves it undefined)
 * and that pipeline messages, which NCCL matches by issue order and not by
 * tag, arrive in the order the schedule expects (here MPI matches them in
 * order too: one tag).  What it cannot check: streams and events, which the
 * fake CUDA runtime (fake_cuda.c) makes synchronous.
 *
 * Operations run when called (a rank's calls are in program order, and every
 * rank issues the same collectives in the same order); point-to-point calls
 * inside ncclGroupStart/End are posted non-blocking and completed at the end,
 * as NCCL does. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl.h"
#include "precision_bits.h"

struct ncclComm {
    MPI_Comm comm;
    int rank, size;
};

/* WEFT_FAKE_NCCL_CALLS=PREFIX: at exit each rank writes how many of each
 * collective it issued to PREFIX.<world rank>, one "name count" a line, so a
 * test can assert how the runtime's collectives map onto NCCL's; also how
 * many of the reduce-scatters were in place (ReduceScatterInPlace, not an
 * NCCL call: ZeRO reduces in its gradient buffers, no receive buffer) */
enum { C_ALLREDUCE, C_REDUCE, C_BROADCAST, C_REDUCE_SCATTER, C_REDUCE_SCATTER_IN_PLACE, C_ALLGATHER, C_KINDS };
static const char *const call_names[C_KINDS] = { "ncclAllReduce", "ncclReduce", "ncclBroadcast",
                                                 "ncclReduceScatter", "ReduceScatterInPlace", "ncclAllGather" };
static long calls[C_KINDS];
static int world_rank = -1;

static void write_calls(void) {
    const char *prefix = getenv("WEFT_FAKE_NCCL_CALLS");
    if (!prefix || !*prefix || world_rank < 0) return;
    char path[4096];
    snprintf(path, sizeof path, "%s.%d", prefix, world_rank);
    FILE *f = fopen(path, "w");
    if (!f) return;
    for (int k = 0; k < C_KINDS; k++) fprintf(f, "%s %ld\n", call_names[k], calls[k]);
    fclose(f);
}

/* [a, a + na) and [b, b + nb) share a byte */
static int overlap(const void *a, size_t na, const void *b, size_t nb) {
    const char *x = a, *y = b;
    return x < y + nb && y < x + na;
}

static int group_depth;
static MPI_Request pending[64];
static int n_pending;

const char *ncclGetErrorString(ncclResult_t r) { return r == ncclSuccess ? "no error" : "fake NCCL error"; }
const char *ncclGetLastError(ncclComm_t comm) {
    (void)comm;
    return "";
}

/* the id names the group's rank 0 (its world rank) and its how-manieth id */
ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
    static int serial;
    int world = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &world);
    memset(id, 0, sizeof *id);
    snprintf(id->internal, sizeof id->internal, "%d %d", world, serial++);
    return ncclSuccess;
}

/* NCCL's init is collective over the group only; MPI_Comm_split is over the
 * world: the plans tested make every group kind span all ranks (pp <= 2). */
ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank) {
    int root = 0, serial = 0;
    if (sscanf(id.internal, "%d %d", &root, &serial) != 2) return ncclInvalidArgument;
    struct ncclComm *c = calloc(1, sizeof *c);
    if (!c) return ncclSystemError;
    if (MPI_Comm_split(MPI_COMM_WORLD, root * 64 + serial % 64, rank, &c->comm) != MPI_SUCCESS)
        return ncclSystemError;
    MPI_Comm_rank(c->comm, &c->rank);
    MPI_Comm_size(c->comm, &c->size);
    if (world_rank < 0) {
        MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
        atexit(write_calls);
    }
    if (c->size != nranks || c->rank != rank) return ncclInvalidUsage;
    *comm = c;
    return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
    (void)comm;
    return ncclSuccess;
}

ncclResult_t ncclGroupStart(void) {
    group_depth++;
    return ncclSuccess;
}

ncclResult_t ncclGroupEnd(void) {
    if (--group_depth > 0) return ncclSuccess;
    int rc = MPI_Waitall(n_pending, pending, MPI_STATUSES_IGNORE);
    n_pending = 0;
    return rc == MPI_SUCCESS ? ncclSuccess : ncclSystemError;
}

/* 16-bit values travel as MPI_UINT16_T; their sum adds each pair in fp32
 * and rounds it to the type, as NCCL's reduction steps do */
static int half(ncclDataType_t t) { return t == ncclFloat16 || t == ncclBfloat16; }
static MPI_Datatype type_of(ncclDataType_t t) {
    return t == ncclFloat64 ? MPI_DOUBLE : half(t) ? MPI_UINT16_T : MPI_FLOAT;
}
static size_t bytes_of(ncclDataType_t t) { return t == ncclFloat64 ? 8 : half(t) ? 2 : 4; }

static void add_bf16(void *in, void *inout, int *len, MPI_Datatype *type) {
    (void)type;
    uint16_t *b = inout;
    for (int i = 0; i < *len; i++)
        b[i] = wf_hd_bf16_bits(wf_hd_bf16_value(((const uint16_t *)in)[i]) + wf_hd_bf16_value(b[i]));
}

static void add_fp16(void *in, void *inout, int *len, MPI_Datatype *type) {
    (void)type;
    uint16_t *b = inout;
    for (int i = 0; i < *len; i++)
        b[i] = wf_hd_fp16_bits(wf_hd_fp16_value(((const uint16_t *)in)[i]) + wf_hd_fp16_value(b[i]));
}

static MPI_Op op_typed(ncclRedOp_t op, ncclDataType_t t) {
    static MPI_Op sums[2] = { MPI_OP_NULL, MPI_OP_NULL };
    if (!half(t)) return op == ncclMax ? MPI_MAX : MPI_SUM;
    int k = t == ncclFloat16;  /* (a 16-bit maximum: runtime/common runs none) */
    if (sums[k] == MPI_OP_NULL) MPI_Op_create(k ? add_fp16 : add_bf16, 1, &sums[k]);
    return sums[k];
}
static ncclResult_t ok(int rc) { return rc == MPI_SUCCESS ? ncclSuccess : ncclSystemError; }

ncclResult_t ncclAllReduce(const void *send, void *recv, size_t n, ncclDataType_t t, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream) {
    (void)stream;
    calls[C_ALLREDUCE]++;
    return ok(MPI_Allreduce(send == recv ? MPI_IN_PLACE : send, recv, (int)n, type_of(t), op_typed(op, t), comm->comm));
}

ncclResult_t ncclReduce(const void *send, void *recv, size_t n, ncclDataType_t t, ncclRedOp_t op, int root,
                        ncclComm_t comm, cudaStream_t stream) {
    (void)stream;
    calls[C_REDUCE]++;
    const void *from = comm->rank == root && send == recv ? MPI_IN_PLACE : send;
    return ok(MPI_Reduce(from, recv, (int)n, type_of(t), op_typed(op, t), root, comm->comm));
}

ncclResult_t ncclBroadcast(const void *send, void *recv, size_t n, ncclDataType_t t, int root, ncclComm_t comm,
                           cudaStream_t stream) {
    (void)stream;
    calls[C_BROADCAST]++;
    if (comm->rank == root && send != recv) memmove(recv, send, n * bytes_of(t));
    return ok(MPI_Bcast(recv, (int)n, type_of(t), root, comm->comm));
}

/* NCCL's result goes to recv (in place: recv = send + rank x n, the rank's
 * own part), MPI's in place to the start: go through a temporary */
ncclResult_t ncclReduceScatter(const void *send, void *recv, size_t n, ncclDataType_t t, ncclRedOp_t op,
                               ncclComm_t comm, cudaStream_t stream) {
    (void)stream;
    calls[C_REDUCE_SCATTER]++;
    size_t part = n * bytes_of(t);
    if (overlap(send, part * (size_t)comm->size, recv, part) &&
        (const char *)recv != (const char *)send + part * (size_t)comm->rank)
        return ncclInvalidArgument;  /* neither apart nor NCCL's in place */
    if ((const char *)recv == (const char *)send + part * (size_t)comm->rank) calls[C_REDUCE_SCATTER_IN_PLACE]++;
    void *tmp = malloc(part + 1);
    if (!tmp) return ncclSystemError;
    int rc = MPI_Reduce_scatter_block(send, tmp, (int)n, type_of(t), op_typed(op, t), comm->comm);
    memcpy(recv, tmp, part);
    free(tmp);
    return ok(rc);
}

ncclResult_t ncclAllGather(const void *send, void *recv, size_t n, ncclDataType_t t, ncclComm_t comm,
                           cudaStream_t stream) {
    (void)stream;
    calls[C_ALLGATHER]++;
    size_t part = n * bytes_of(t);
    int in_place = (const char *)send == (const char *)recv + (size_t)comm->rank * part;
    if (!in_place && overlap(send, part, recv, part * (size_t)comm->size)) return ncclInvalidArgument;
    return ok(MPI_Allgather(in_place ? MPI_IN_PLACE : send, (int)n, type_of(t), recv, (int)n, type_of(t),
                            comm->comm));
}

ncclResult_t ncclSend(const void *send, size_t n, ncclDataType_t t, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
    (void)stream;
    if (group_depth == 0) return ok(MPI_Send(send, (int)n, type_of(t), peer, 0, comm->comm));
    if (n_pending == 64) return ncclInternalError;
    return ok(MPI_Isend(send, (int)n, type_of(t), peer, 0, comm->comm, &pending[n_pending++]));
}

ncclResult_t ncclRecv(void *recv, size_t n, ncclDataType_t t, int peer, ncclComm_t comm, cudaStream_t stream) {
    (void)stream;
    if (group_depth == 0) return ok(MPI_Recv(recv, (int)n, type_of(t), peer, 0, comm->comm, MPI_STATUS_IGNORE));
    if (n_pending == 64) return ncclInternalError;
    return ok(MPI_Irecv(recv, (int)n, type_of(t), peer, 0, comm->comm, &pending[n_pending++]));
}
