/* async.c: the CUDA backend's hooks around the common code (internal.h).
 * Kernels are asynchronous on the compute stream (wf_cuda_stream); the host
 * waits only where it reads or writes device data itself (wf_backend_sync:
 * the host-side optimizer, checkpoints, 2BW's tied wte, host MPI
 * under comm = "mpi"); copies and zeroing the common code does on the arenas
 * go on the stream, in order with the kernels. */
#include "cuda_rt.h"
#include "internal.h"

extern const wf_coll_ops wf_coll_nccl;  /* coll_nccl.c */
void wf_nccl_setup(wf_ctx *c);
void wf_cuda_graph_decide(wf_ctx *c);  /* graph.c */

void wf_backend_setup(wf_ctx *c) {
    wf_cuda_loss_acc(c);  /* allocated here, never inside a captured step */
    /* token losses summed on the device, eager steps and captured ones alike,
     * and read once per step (wf_backend_loss_take, by the optimizer): no
     * host wait per microbatch */
    wf_cuda_loss_on_device(c, 1);
    if (c->p->comm == WF_COMM_NCCL && c->world > 1) {
        wf_nccl_setup(c);
        c->coll = &wf_coll_nccl;
        wf_log(c, "comm: nccl, one communicator per dp / tp / pp / tied group, each on its own stream\n");
    } else {
        c->coll = &wf_coll_mpi;
        if (c->world > 1)
            wf_log(c, "comm: mpi (host-staged: the device is synchronized before each MPI call)\n");
    }
    wf_cuda_graph_decide(c);
}

void wf_backend_sync(wf_ctx *c) {
    if (c && c->graph_capture)  /* graph.c's verdict should have kept this step eager */
        wf_fatal(c, "wf_backend_sync", WF_WHERE, "host work inside a captured CUDA graph step "
                 "(run with --no-graph, and report this plan)");
    if (c && c->coll) c->coll->join(c);  /* comm streams too: the host may read their results */
    /* with NCCL a dead or stopped peer hangs the stream: the watchdog times
     * this wait like an MPI one */
    wf_watch_enter("cudaStreamSynchronize (the device's queued kernels and NCCL collectives)", WF_CUDA_WHERE);
    WF_CUDA(c, cudaStreamSynchronize(wf_cuda_stream(c)));
    wf_watch_leave();
}

void wf_backend_copy(wf_ctx *c, void *dst, const void *src, size_t bytes) {
    if (bytes) WF_CUDA(c, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, wf_cuda_stream(c)));
}

void wf_backend_zero(wf_ctx *c, void *dst, size_t bytes) {
    if (bytes) WF_CUDA(c, cudaMemsetAsync(dst, 0, bytes, wf_cuda_stream(c)));
}

double wf_backend_loss_take(wf_ctx *c) {
    wf_watch_enter("cudaStreamSynchronize (the device's queued kernels and NCCL collectives)", WF_CUDA_WHERE);
    WF_CUDA(c, cudaStreamSynchronize(wf_cuda_stream(c)));
    wf_watch_leave();
    double *acc = wf_cuda_loss_acc(c), sum = *acc;
    *acc = 0.0;
    return sum;
}
