/* coll.h: the communication seam.  runtime/common/ calls these backend-
 * neutral collectives; the backend picks the implementation once at startup
 * (wf_backend_setup): host MPI (coll_mpi.c; the CPU backend's only one, and
 * the CUDA backend's comm = "mpi") or NCCL on dedicated streams
 * (runtime/cuda/coll_nccl.c, comm = "nccl").
 *
 * Semantics every implementation keeps: an operation whose request is NULL is
 * complete for everything that runs after the call (host code on the MPI
 * path; later kernels on the compute stream for NCCL, without a host wait);
 * with a request it is complete after wf_coll_wait on it.  Scalars the host
 * reads (losses, norms) are not here: they stay host MPI. */
#ifndef WEFT_COLL_H
#define WEFT_COLL_H

#include <mpi.h>

#include "weft/mesh.h"
#include "weft/runtime_buffers.h"

typedef struct wf_ctx wf_ctx;

/* The groups of the mesh (groups.c says which ranks share one): one per mesh
 * axis (weft/mesh.h), then the tied pair of pipeline ends. */
typedef enum {
#define WF_GROUP_ENUM(id, name, max, what) WF_GROUP_##id = WF_AXIS_##id,
    WF_MESH_AXES(WF_GROUP_ENUM)
#undef WF_GROUP_ENUM
    WF_GROUP_TIED = WF_AXES,  /* the first and last stage of one pipeline (the tied wte) */
    WF_GROUPS
} wf_group;
/* WF_B16 (bf16) / WF_F16 (fp16): 16-bit values, n counts values; their sum adds each
 * pair in fp32 and rounds it to the type (ties to even), so a sum of k
 * values rounds k - 1 times, in the implementation's order (coll_mpi.c's
 * op, NCCL's own); only WF_SUM. */
typedef enum { WF_F32, WF_F64, WF_B16, WF_F16 } wf_dtype;  /* B16: bf16 */
typedef enum { WF_SUM, WF_MAX } wf_redop;

/* An operation in flight.  mpi: its MPI request (MPI_REQUEST_NULL when none);
 * event: the NCCL path's completion event on its comm stream (created on
 * first use), pending while the compute stream has not been told to wait. */
typedef struct wf_req {
    MPI_Request mpi;
    void *event;
    int pending;
} wf_req;
/* the compiler counts the runtime's request arrays at this size */
#ifndef __cplusplus
_Static_assert(sizeof(wf_req) == WF_REQ_BYTES, "WF_REQ_BYTES (weft/runtime_buffers.h) is sizeof(wf_req)");
#endif

typedef struct wf_coll_ops {
    const char *name;  /* "mpi" or "nccl", for the log */
    /* buf (n values) summed or maximised over the group, in place */
    void (*allreduce)(wf_ctx *c, wf_group g, void *buf, long n, wf_dtype t, wf_redop op, wf_req *r);
    /* send holds the group's whole vector: group-size parts of `part` values
     * of type t (WF_F32 or 16-bit, summed as above), laid end to end; group
     * rank r receives the sum of part r (ZeRO's buckets are padded so that
     * the parts are equal, compiler/buckets.c: one collective on either
     * backend).  recv != send: into recv.  recv == send: in place, the sum
     * left in send where in_place_at_own_part says */
    void (*reduce_scatter_parts)(wf_ctx *c, wf_group g, const void *send, void *recv, long part, wf_dtype t,
                                 wf_req *r);
    /* where an in-place reduce-scatter leaves group rank r's sum: 1, at its
     * own part (r x part values from the start: NCCL's ncclReduceScatter in
     * place, no copy), 0, at the start (MPI_IN_PLACE's, no copy either) */
    int in_place_at_own_part;
    /* recv + displs[r] receives rank r's counts[r] values of type t (WF_F32,
     * or 16-bit copied as they are: 16-bit working parameters); send NULL:
     * this rank's part is in recv already */
    void (*allgatherv)(wf_ctx *c, wf_group g, const void *send, void *recv, const int *counts,
                       const int *displs, wf_dtype t, wf_req *r);
    /* equal parts of n values of type t (WF_F32 or 16-bit): out holds
     * group-size x n / receives n */
    void (*allgather)(wf_ctx *c, wf_group g, float *out, const float *in, long n, wf_dtype t);
    void (*reduce_scatter)(wf_ctx *c, wf_group g, float *out, const float *in, long n, wf_dtype t);
    /* pipeline point-to-point over the pp group (peer: its stage) */
    void (*send)(wf_ctx *c, const float *buf, long n, int peer, int tag);
    void (*recv)(wf_ctx *c, float *buf, long n, int peer, int tag);
    void (*sendrecv)(wf_ctx *c, const float *sbuf, long sn, int speer, int stag, float *rbuf, long rn,
                     int rpeer, int rtag);
    void (*wait)(wf_ctx *c, wf_req *r, int n);  /* the n requests from r on */
    int (*test)(wf_ctx *c, wf_req *r, int n);   /* drives them; 1 when all are done */
    /* every operation issued so far is complete for later kernels (a CUDA
     * graph's capture must end with its comm streams joined) */
    void (*join)(wf_ctx *c);
} wf_coll_ops;

extern const wf_coll_ops wf_coll_mpi;

/* Requests start empty (MPI_REQUEST_NULL is not all zero bits). */
void wf_req_init(wf_req *r, int n);

#endif
