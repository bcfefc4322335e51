/* emu_nccl.cc: the NCCL stream operations runtime/cuda/coll_nccl.c issues,
 * for the emulated runtime: each is queued on the emulator's device like a
 * kernel (wf_emu::enqueue), so it runs in issue order with the kernels around
 * it (at the host's next wait under WF_EMU_ASYNC), and a CUDA graph capture
 * records it and every replay runs it again, as NCCL's kernels are captured
 * on a GPU.  The operation itself is tests/nccl_fake's over MPI
 * (emu_nccl_ops.c); ranks issue the same collectives in the same order, so
 * their queues match.  Group calls are queued too: the point-to-point calls
 * between them post in the queue and complete at the queued group end. */
#include <stdio.h>
#include <stdlib.h>

extern "C" {
#include "nccl.h"  /* tests/nccl_fake's, which declares C functions without extern "C" */

ncclResult_t wf_fake_ncclGroupStart(void);
ncclResult_t wf_fake_ncclGroupEnd(void);
ncclResult_t wf_fake_ncclAllReduce(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                                   cudaStream_t);
ncclResult_t wf_fake_ncclReduce(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, int, ncclComm_t,
                                cudaStream_t);
ncclResult_t wf_fake_ncclBroadcast(const void *, void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
ncclResult_t wf_fake_ncclReduceScatter(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                                       cudaStream_t);
ncclResult_t wf_fake_ncclAllGather(const void *, void *, size_t, ncclDataType_t, ncclComm_t, cudaStream_t);
ncclResult_t wf_fake_ncclSend(const void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
ncclResult_t wf_fake_ncclRecv(void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
}

/* NCCL's buffers are device memory: pinned host memory (an offloaded
 * parameter shard, say) is refused when the call is made, naming it */
static void device_buffers(const char *call, const void *send, const void *recv) {
    for (const void *b : {send, recv})
        if (b && wf_emu::pinned_host(b)) {
            fprintf(stderr, "emulated NCCL: %s given a buffer in pinned host memory (%p): NCCL reads and "
                            "writes device memory only\n", call, b);
            exit(1);
        }
}

/* a queued operation has no caller left to return its error to: it ends the
 * rank, naming the call, as an asynchronous NCCL error would.  Issued on
 * stream s (a capture checks that s joined it); group calls have none. */
template <class F>
static ncclResult_t queue(const char *call, cudaStream_t s, F op) {
    auto run = [call, op] {
        ncclResult_t r = op();
        if (r != ncclSuccess) {
            fprintf(stderr, "emulated NCCL: %s failed: %s\n", call, ncclGetErrorString(r));
            exit(1);
        }
    };
    if (s) wf_emu::enqueue_on(s, run);
    else wf_emu::enqueue(run);
    return ncclSuccess;
}

extern "C" {

ncclResult_t ncclGroupStart(void) {
    return queue("ncclGroupStart", nullptr, [] { return wf_fake_ncclGroupStart(); });
}
ncclResult_t ncclGroupEnd(void) { return queue("ncclGroupEnd", nullptr, [] { return wf_fake_ncclGroupEnd(); }); }

ncclResult_t ncclAllReduce(const void *send, void *recv, size_t n, ncclDataType_t t, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t s) {
    device_buffers("ncclAllReduce", send, recv);
    return queue("ncclAllReduce", s, [=] { return wf_fake_ncclAllReduce(send, recv, n, t, op, comm, s); });
}
ncclResult_t ncclReduce(const void *send, void *recv, size_t n, ncclDataType_t t, ncclRedOp_t op, int root,
                        ncclComm_t comm, cudaStream_t s) {
    device_buffers("ncclReduce", send, recv);
    return queue("ncclReduce", s, [=] { return wf_fake_ncclReduce(send, recv, n, t, op, root, comm, s); });
}
ncclResult_t ncclBroadcast(const void *send, void *recv, size_t n, ncclDataType_t t, int root, ncclComm_t comm,
                           cudaStream_t s) {
    device_buffers("ncclBroadcast", send, recv);
    return queue("ncclBroadcast", s, [=] { return wf_fake_ncclBroadcast(send, recv, n, t, root, comm, s); });
}
ncclResult_t ncclReduceScatter(const void *send, void *recv, size_t n, ncclDataType_t t, ncclRedOp_t op,
                               ncclComm_t comm, cudaStream_t s) {
    device_buffers("ncclReduceScatter", send, recv);
    return queue("ncclReduceScatter", s, [=] { return wf_fake_ncclReduceScatter(send, recv, n, t, op, comm, s); });
}
ncclResult_t ncclAllGather(const void *send, void *recv, size_t n, ncclDataType_t t, ncclComm_t comm,
                           cudaStream_t s) {
    device_buffers("ncclAllGather", send, recv);
    return queue("ncclAllGather", s, [=] { return wf_fake_ncclAllGather(send, recv, n, t, comm, s); });
}
ncclResult_t ncclSend(const void *send, size_t n, ncclDataType_t t, int peer, ncclComm_t comm, cudaStream_t s) {
    device_buffers("ncclSend", send, nullptr);
    return queue("ncclSend", s, [=] { return wf_fake_ncclSend(send, n, t, peer, comm, s); });
}
ncclResult_t ncclRecv(void *recv, size_t n, ncclDataType_t t, int peer, ncclComm_t comm, cudaStream_t s) {
    device_buffers("ncclRecv", nullptr, recv);
    return queue("ncclRecv", s, [=] { return wf_fake_ncclRecv(recv, n, t, peer, comm, s); });
}

}  // extern "C"
