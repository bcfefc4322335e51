/* coll_nccl.c: comm = "nccl", the collectives of coll.h on NCCL.
 *
 * One communicator per group of the mesh (dp, tp, pp, and the tied first/
 * last-stage pair), made over the MPI groups groups.c split from the mesh:
 * group rank 0 makes the unique id and broadcasts it over the group's MPI
 * communicator.  Each group has its own comm stream.  Ordering against the
 * compute stream uses events only, never a host wait:
 *   - an operation starts after everything the compute stream has issued so
 *     far (an event recorded on compute, waited on by the comm stream), so a
 *     bucket's reduction starts once backward has written it and overlaps
 *     the rest of backward;
 *   - with a request, an event recorded on the comm stream after it; the
 *     wait makes the compute stream wait on that event;
 *   - without one, the compute stream waits at once (kernels after the call
 *     see the result);
 *   - a pipeline send does not hold compute back: the next pipeline
 *     operation waits for it (a slot is rewritten only after its microbatch
 *     came back through a receive, so the buffer is free by then).
 * NCCL matches point-to-point messages between two ranks in issue order; the
 * tags of the MPI path are not needed because the verified schedule issues
 * sends and receives of each pair in the same order on both sides. */
#include <nccl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda_rt.h"
#include "internal.h"

typedef struct nccl_group {
    ncclComm_t comm;       /* NULL: a group of one, or none */
    cudaStream_t stream;
    cudaEvent_t ready;     /* on compute: what the next operation waits for */
    cudaEvent_t done;      /* on the comm stream: for blocking operations and joins */
    int size, rank;
    int joined;            /* 0: work issued since the last join (a capture must join it) */
} nccl_group;

/* This file's part of a context's state (cuda_rt.h's wf_cuda_ctx). */
struct wf_cuda_nccl {
    nccl_group groups[WF_GROUPS];
    cudaEvent_t send_done;   /* the last pipeline send */
    int send_pending;
};

static struct wf_cuda_nccl *nccl_of(wf_ctx *c) {
    wf_cuda_ctx *x = wf_cuda_of(c);
    if (!x->nccl) x->nccl = wf_cuda_zalloc(c, sizeof *x->nccl, "coll_nccl.c's state");
    return x->nccl;
}

/* A failing NCCL call: abort every communicator (peers blocked in a
 * collective with this rank are released) and report rank and call. */
static void nccl_fail(wf_ctx *c, const char *call, const char *where, ncclResult_t r) {
    nccl_group *groups = nccl_of(c)->groups;
    char msg[768];
    const char *last = NULL;
    for (int g = 0; g < WF_GROUPS && !last; g++)
        if (groups[g].comm) last = ncclGetLastError(groups[g].comm);
    snprintf(msg, sizeof msg, "%s%s%s", ncclGetErrorString(r), last && *last ? ": " : "", last ? last : "");
    for (int g = 0; g < WF_GROUPS; g++)
        if (groups[g].comm) ncclCommAbort(groups[g].comm);
    wf_cuda_fail(c, call, where, msg);
}

#define WF_NCCL(c, call)                                                  \
    do {                                                                  \
        ncclResult_t wf_r_ = (call);                                      \
        if (wf_r_ != ncclSuccess) nccl_fail((c), #call, WF_CUDA_WHERE, wf_r_); \
    } while (0)

/* NCCL refuses two ranks of one communicator on one device: say so plainly
 * (comm = "mpi" lets ranks share a GPU). */
enum { KEY = 160 };
static void check_devices(wf_ctx *c, wf_group g, MPI_Comm comm, int size) {
    char *keys = wf_host_alloc(c, (size_t)size * KEY, "device keys");
    int *worlds = wf_host_alloc(c, sizeof(int) * (size_t)size, "device keys");
    char mine[KEY], host[64] = "?", bus[32] = "?";
    int dev = 0;
    WF_CUDA(c, cudaGetDevice(&dev));
    gethostname(host, sizeof host - 1);
    WF_CUDA(c, cudaDeviceGetPCIBusId(bus, sizeof bus, dev));
    memset(mine, 0, sizeof mine);
    snprintf(mine, sizeof mine, "GPU %d (%s) on %s", dev, bus, host);
    WF_MPI(c, MPI_Allgather(mine, KEY, MPI_CHAR, keys, KEY, MPI_CHAR, comm));
    WF_MPI(c, MPI_Allgather(&c->rank, 1, MPI_INT, worlds, 1, MPI_INT, comm));
    for (int i = 0; i < size; i++)
        for (int j = i + 1; j < size; j++)
            if (strncmp(keys + (size_t)i * KEY, keys + (size_t)j * KEY, KEY) == 0)
                wf_fatal(c, "ncclCommInitRank", WF_WHERE,
                         "ranks %d and %d of a %s group both use %.*s: NCCL needs one device per rank "
                         "of a communicator (comm = \"nccl\"); compile with comm = \"mpi\" to share devices",
                         worlds[i], worlds[j], wf_group_name(g), KEY, keys + (size_t)i * KEY);
    free(keys);
    free(worlds);
}

static void setup_group(wf_ctx *c, wf_group g) {
    nccl_group *s = &nccl_of(c)->groups[g];
    MPI_Comm comm = wf_group_comm(c, g);
    s->joined = 1;
    if (comm == MPI_COMM_NULL) return;
    WF_MPI(c, MPI_Comm_size(comm, &s->size));
    WF_MPI(c, MPI_Comm_rank(comm, &s->rank));
    if (s->size < 2) return;
    check_devices(c, g, comm, s->size);
    ncclUniqueId id;
    if (s->rank == 0) WF_NCCL(c, ncclGetUniqueId(&id));
    WF_MPI(c, MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, comm));
    /* blocks until every member joins: a dead one is the watchdog's */
    wf_watch_what(c, (int)g, "NCCL communicator set-up");
    wf_watch_enter("ncclCommInitRank", WF_WHERE);
    WF_NCCL(c, ncclCommInitRank(&s->comm, s->size, id, s->rank));
    wf_watch_leave();
    wf_watch_done();
    /* comm streams run ahead of compute kernels queued behind them */
    int least = 0, greatest = 0;
    WF_CUDA(c, cudaDeviceGetStreamPriorityRange(&least, &greatest));
    WF_CUDA(c, cudaStreamCreateWithPriority(&s->stream, cudaStreamNonBlocking, greatest));
    WF_CUDA(c, cudaEventCreateWithFlags(&s->ready, cudaEventDisableTiming));
    WF_CUDA(c, cudaEventCreateWithFlags(&s->done, cudaEventDisableTiming));
}

void wf_nccl_setup(wf_ctx *c) {
    /* the same order on every rank: each init waits only for its own group */
    for (int g = 0; g < WF_GROUPS; g++) setup_group(c, (wf_group)g);
    WF_CUDA(c, cudaEventCreateWithFlags(&nccl_of(c)->send_done, cudaEventDisableTiming));
}

/* ---- ordering against the compute stream ---------------------------------- */

static nccl_group *begin(wf_ctx *c, wf_group g) {
    struct wf_cuda_nccl *n = nccl_of(c);
    nccl_group *s = &n->groups[g];
    if (!s->comm)
        wf_fatal(c, "wf_coll", WF_WHERE, "no NCCL communicator for the %s group", wf_group_name(g));
    cudaStream_t compute = wf_cuda_stream(c);
    if (g == WF_GROUP_PP && n->send_pending) {  /* the last send's buffer may be reused from here */
        WF_CUDA(c, cudaStreamWaitEvent(compute, n->send_done, 0));
        n->send_pending = 0;
    }
    WF_CUDA(c, cudaEventRecord(s->ready, compute));
    WF_CUDA(c, cudaStreamWaitEvent(s->stream, s->ready, 0));
    s->joined = 0;
    return s;
}

static void finish(wf_ctx *c, nccl_group *s, wf_req *r) {
    if (r) {
        if (!r->event) {
            cudaEvent_t e;
            WF_CUDA(c, cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
            r->event = e;
        }
        WF_CUDA(c, cudaEventRecord((cudaEvent_t)r->event, s->stream));
        r->pending = 1;
        return;
    }
    WF_CUDA(c, cudaEventRecord(s->done, s->stream));
    WF_CUDA(c, cudaStreamWaitEvent(wf_cuda_stream(c), s->done, 0));
}

/* 16-bit sums are NCCL's own (coll.h): each step adds in fp32 or the
 * type's arithmetic and rounds to the type */
static ncclDataType_t nccl_type(wf_dtype t) {
    return t == WF_F64 ? ncclFloat64 : t == WF_B16 ? ncclBfloat16 : t == WF_F16 ? ncclFloat16 : ncclFloat32;
}

/* ---- the operations --------------------------------------------------------- */

static void nccl_allreduce(wf_ctx *c, wf_group g, void *buf, long n, wf_dtype t, wf_redop op, wf_req *r) {
    nccl_group *s = begin(c, g);
    WF_NCCL(c, ncclAllReduce(buf, buf, (size_t)n, nccl_type(t), op == WF_MAX ? ncclMax : ncclSum, s->comm,
                             s->stream));
    finish(c, s, r);
}

static int equal_counts(const int *counts, int size) {
    for (int i = 1; i < size; i++)
        if (counts[i] != counts[0]) return 0;
    return 1;
}

static size_t type_bytes(wf_dtype t) { return t == WF_F64 ? 8 : t == WF_B16 || t == WF_F16 ? 2 : 4; }

/* One ncclReduceScatter of equal parts.  In place it is NCCL's own in-place
 * form (recv = send + rank x part), which leaves this rank's sum at its own
 * part: coll.h's in_place_at_own_part = 1, so no scratch and no copy. */
static void nccl_reduce_scatter_parts(wf_ctx *c, wf_group g, const void *send, void *recv, long part, wf_dtype t,
                                      wf_req *r) {
    nccl_group *s = begin(c, g);
    void *into = send == recv ? (char *)recv + type_bytes(t) * (size_t)part * (size_t)s->rank : recv;
    WF_NCCL(c, ncclReduceScatter(send, into, (size_t)part, nccl_type(t), ncclSum, s->comm, s->stream));
    finish(c, s, r);
}

static void nccl_allgatherv(wf_ctx *c, wf_group g, const void *send, void *recv, const int *counts,
                            const int *displs, wf_dtype t, wf_req *r) {
    nccl_group *s = begin(c, g);
    size_t size = t == WF_F64 ? 8 : t == WF_F32 ? 4 : 2;  /* bytes a value */
    char *at = recv;
    const void *mine = send ? send : at + size * (size_t)displs[s->rank];
    int contiguous = equal_counts(counts, s->size);
    for (int i = 0; i < s->size && contiguous; i++) contiguous = displs[i] == i * counts[0];
    if (contiguous) {  /* in place when mine == recv + rank * count, as NCCL allows */
        WF_NCCL(c, ncclAllGather(mine, recv, (size_t)counts[0], nccl_type(t), s->comm, s->stream));
    } else {
        WF_NCCL(c, ncclGroupStart());
        for (int i = 0; i < s->size; i++)
            WF_NCCL(c, ncclBroadcast(i == s->rank ? mine : at + size * (size_t)displs[i], at + size * (size_t)displs[i],
                                     (size_t)counts[i], nccl_type(t), i, s->comm, s->stream));
        WF_NCCL(c, ncclGroupEnd());
    }
    finish(c, s, r);
}

static void nccl_allgather(wf_ctx *c, wf_group g, float *out, const float *in, long n, wf_dtype t) {
    nccl_group *s = begin(c, g);
    WF_NCCL(c, ncclAllGather(in, out, (size_t)n, nccl_type(t), s->comm, s->stream));
    finish(c, s, NULL);
}

static void nccl_reduce_scatter(wf_ctx *c, wf_group g, float *out, const float *in, long n, wf_dtype t) {
    nccl_group *s = begin(c, g);
    WF_NCCL(c, ncclReduceScatter(in, out, (size_t)n, nccl_type(t), ncclSum, s->comm, s->stream));
    finish(c, s, NULL);
}

static void nccl_send(wf_ctx *c, const float *buf, long n, int peer, int tag) {
    (void)tag;
    nccl_group *s = begin(c, WF_GROUP_PP);
    WF_NCCL(c, ncclSend(buf, (size_t)n, ncclFloat32, peer, s->comm, s->stream));
    WF_CUDA(c, cudaEventRecord(nccl_of(c)->send_done, s->stream));
    nccl_of(c)->send_pending = 1;
}

static void nccl_recv(wf_ctx *c, float *buf, long n, int peer, int tag) {
    (void)tag;
    nccl_group *s = begin(c, WF_GROUP_PP);  /* after the buffer's last reader */
    WF_NCCL(c, ncclRecv(buf, (size_t)n, ncclFloat32, peer, s->comm, s->stream));
    finish(c, s, NULL);
}

static void nccl_sendrecv(wf_ctx *c, const float *sbuf, long sn, int speer, int stag, float *rbuf, long rn,
                          int rpeer, int rtag) {
    (void)stag;
    (void)rtag;
    nccl_group *s = begin(c, WF_GROUP_PP);
    WF_NCCL(c, ncclGroupStart());
    WF_NCCL(c, ncclSend(sbuf, (size_t)sn, ncclFloat32, speer, s->comm, s->stream));
    WF_NCCL(c, ncclRecv(rbuf, (size_t)rn, ncclFloat32, rpeer, s->comm, s->stream));
    WF_NCCL(c, ncclGroupEnd());
    finish(c, s, NULL);  /* covers the send too */
}

static void nccl_wait(wf_ctx *c, wf_req *r, int n) {
    for (int i = 0; i < n; i++)
        if (r[i].pending) {
            WF_CUDA(c, cudaStreamWaitEvent(wf_cuda_stream(c), (cudaEvent_t)r[i].event, 0));
            r[i].pending = 0;
        }
}

/* NCCL progresses by itself: nothing to drive.  "Done" lets the caller stop
 * polling; it still calls wait before using the result. */
static int nccl_test(wf_ctx *c, wf_req *r, int n) {
    (void)c;
    (void)r;
    (void)n;
    return 1;
}

static void nccl_join(wf_ctx *c) {
    struct wf_cuda_nccl *n = nccl_of(c);
    cudaStream_t compute = wf_cuda_stream(c);
    for (int g = 0; g < WF_GROUPS; g++) {
        nccl_group *s = &n->groups[g];
        if (!s->comm || s->joined) continue;
        WF_CUDA(c, cudaEventRecord(s->done, s->stream));
        WF_CUDA(c, cudaStreamWaitEvent(compute, s->done, 0));
        s->joined = 1;
    }
    n->send_pending = 0;
}

const wf_coll_ops wf_coll_nccl = {
    .name = "nccl", .allreduce = nccl_allreduce, .reduce_scatter_parts = nccl_reduce_scatter_parts,
    .in_place_at_own_part = 1,
    .allgatherv = nccl_allgatherv, .allgather = nccl_allgather, .reduce_scatter = nccl_reduce_scatter,
    .send = nccl_send, .recv = nccl_recv, .sendrecv = nccl_sendrecv, .wait = nccl_wait, .test = nccl_test,
    .join = nccl_join,
};
