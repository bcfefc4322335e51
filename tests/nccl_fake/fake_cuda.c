/* fake_cuda.c (test double): the CUDA runtime calls runtime/cuda/coll_nccl.c
 * makes, on the host and synchronous (streams and events are tokens; a copy
 * happens when it is issued), plus the stream and error glue of
 * runtime/cuda/device.c.  Rank r of a node sees device r, unless
 * WEFT_FAKE_ONE_DEVICE is set: then every rank sees device 0, as ranks that
 * share one GPU do. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_rt.h"
#include "internal.h"

static struct CUstream_st *token_stream(void) {
    static char token;
    return (struct CUstream_st *)&token;
}

cudaStream_t wf_cuda_stream(wf_ctx *c) {
    (void)c;
    return token_stream();
}

void wf_cuda_fail(wf_ctx *c, const char *call, const char *where, const char *msg) {
    wf_fatal(c, call, where, "%s", msg);
}

const char *cudaGetErrorString(cudaError_t e) { return e == cudaSuccess ? "no error" : "fake CUDA error"; }

cudaError_t cudaGetDevice(int *device) {
    int local = 0;
    MPI_Comm node;
    if (!getenv("WEFT_FAKE_ONE_DEVICE") &&
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
        MPI_Comm_rank(node, &local);
        MPI_Comm_free(&node);
    }
    *device = local;
    return cudaSuccess;
}

cudaError_t cudaDeviceGetPCIBusId(char *bus, int len, int device) {
    snprintf(bus, (size_t)len, "0000:%02x:00.0", device);
    return cudaSuccess;
}

cudaError_t cudaDeviceGetStreamPriorityRange(int *least, int *greatest) {
    *least = 0;
    *greatest = -5;
    return cudaSuccess;
}

cudaError_t cudaStreamCreateWithPriority(cudaStream_t *s, unsigned int flags, int priority) {
    (void)flags;
    (void)priority;
    *s = token_stream();
    return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned int flags) {
    static char token;
    (void)flags;
    *e = (cudaEvent_t)&token;
    return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
    (void)e;
    (void)s;
    return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int flags) {
    (void)s;
    (void)e;
    (void)flags;
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s) {
    (void)s;
    return cudaSuccess;
}

cudaError_t cudaMalloc(void **p, size_t bytes) {
    *p = calloc(1, bytes ? bytes : 1);
    return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaFree(void *p) {
    free(p);
    return cudaSuccess;
}

/* device.c's counting wrappers: nothing to count here */
cudaError_t wf_cuda_malloc(wf_ctx *c, void **p, size_t bytes) {
    (void)c;
    return cudaMalloc(p, bytes);
}
cudaError_t wf_cuda_free(wf_ctx *c, void *p) {
    (void)c;
    return cudaFree(p);
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind, cudaStream_t s) {
    (void)kind;
    (void)s;
    memmove(dst, src, bytes);
    return cudaSuccess;
}
