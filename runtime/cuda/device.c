/* device.c: the CUDA backend's host glue: which GPU a rank uses, the compute
 * stream, managed-memory arenas and pinned host arenas, errors, and the CPU backend's
 * BLAS hooks that train.c calls (here they pick and describe the device). */
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda_rt.h"
#include "internal.h"

/* What the runtime allocates, counted (cuda_rt.h): a few dozen blocks per
 * context, the arenas and the buffers of weft/runtime_buffers.h, so a plain
 * list is enough. */
typedef struct { void *p; size_t bytes; int pinned; } alloc_block;

/* This file's part of a context's state (cuda_rt.h's wf_cuda_ctx). */
struct wf_cuda_device {
    cudaStream_t stream;
    int device;              /* -1: not chosen yet */
    /* cudaDevAttrConcurrentManagedAccess of the device: 1 on Linux with a
     * Pascal or newer GPU; 0 where the host may not touch managed memory
     * while any kernel runs (it would fault), so host writes wait for the
     * device. */
    int concurrent_managed;
    alloc_block *blocks;
    int n_blocks, cap_blocks;
    size_t live[2];          /* [0] device and managed, [1] pinned host */
};

static struct wf_cuda_device *device_of(const wf_ctx *c) {
    wf_cuda_ctx *x = wf_cuda_of(c);
    if (!x->device) {
        x->device = wf_cuda_zalloc((wf_ctx *)c, sizeof *x->device, "device.c's state");
        x->device->device = -1;
        x->device->concurrent_managed = 1;
    }
    return x->device;
}

/* Calls made without a context (the vocabulary-parallel pieces tp.c calls)
 * still name the rank in their errors. */
void wf_cuda_fail(wf_ctx *c, const char *call, const char *where, const char *msg) {
    wf_fatal(c ? c : wf_cuda_rank_ctx(), call, where, "%s", msg);
}

static void ensure_device(wf_ctx *c) {
    struct wf_cuda_device *d = device_of(c);
    if (d->device < 0) {
        d->device = 0;
        WF_CUDA(c, cudaSetDevice(d->device));
    }
}

cudaStream_t wf_cuda_stream(wf_ctx *c) {
    struct wf_cuda_device *d = device_of(c);
    if (!d->stream) {
        ensure_device(c);
        WF_CUDA(c, cudaStreamCreateWithFlags(&d->stream, cudaStreamNonBlocking));
    }
    return d->stream;
}

/* Launch errors only: kernels stay asynchronous (the host waits in
 * wf_backend_sync, async.c, where it touches device data). */
void wf_cuda_sync(wf_ctx *c, const char *kernel) {
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) wf_cuda_fail(c, kernel, WF_CUDA_WHERE, cudaGetErrorString(e));
}

/* ---- what the runtime allocates, counted (cuda_rt.h) ------------------------ */

static void remember(wf_ctx *c, void *p, size_t bytes, int pinned) {
    if (!p) return;
    struct wf_cuda_device *d = device_of(c);
    if (d->n_blocks == d->cap_blocks) {
        int cap = d->cap_blocks ? 2 * d->cap_blocks : 64;
        alloc_block *b = realloc(d->blocks, sizeof *b * (size_t)cap);
        if (!b) wf_cuda_fail(c, "realloc", WF_CUDA_WHERE, "out of host memory for the allocation list");
        d->blocks = b;
        d->cap_blocks = cap;
    }
    d->blocks[d->n_blocks++] = (alloc_block){ p, bytes, pinned };
    d->live[pinned] += bytes;
}

cudaError_t wf_cuda_malloc(wf_ctx *c, void **p, size_t bytes) {
    cudaError_t e = cudaMalloc(p, bytes);
    if (e == cudaSuccess) remember(c, *p, bytes, 0);
    return e;
}

cudaError_t wf_cuda_malloc_managed(wf_ctx *c, void **p, size_t bytes) {
    cudaError_t e = cudaMallocManaged(p, bytes, cudaMemAttachGlobal);
    if (e == cudaSuccess) remember(c, *p, bytes, 0);
    return e;
}

cudaError_t wf_cuda_malloc_host(wf_ctx *c, void **p, size_t bytes) {
    cudaError_t e = cudaMallocHost(p, bytes);
    if (e == cudaSuccess) remember(c, *p, bytes, 1);
    return e;
}

cudaError_t wf_cuda_free(wf_ctx *c, void *p) {
    struct wf_cuda_device *d = device_of(c);
    for (int i = 0; i < d->n_blocks; i++)
        if (d->blocks[i].p == p) {
            cudaError_t e = d->blocks[i].pinned ? cudaFreeHost(p) : cudaFree(p);
            if (e != cudaSuccess) return e;
            d->live[d->blocks[i].pinned] -= d->blocks[i].bytes;
            d->blocks[i] = d->blocks[--d->n_blocks];
            return e;
        }
    return p ? cudaErrorInvalidValue : cudaSuccess;  /* not ours */
}

/* metrics.c: bytes allocated through them for c and not freed, device
 * (managed included) and pinned host */
int wf_backend_alloc_live(const wf_ctx *c, size_t *device, size_t *pinned) {
    const struct wf_cuda_device *d = device_of(c);
    *device = d->live[0];
    *pinned = d->live[1];
    return 0;
}

/* Kept free beside the arenas: the CUDA context's own growth, cuBLASLt's
 * workspace, NCCL's buffers, the optimizer's scratch. */
#define DEVICE_RESERVE_BYTES ((size_t)512 << 20)

/* Managed memory: the kernels and the host code in common/ share the arenas.
 * cudaMallocManaged returns memory aligned far beyond the 64 bytes wf_alloc
 * promises.  Managed memory can be asked for beyond what the device holds
 * (pages then migrate to and fro, and oversubscribing can stall the whole
 * GPU), so a request past the device's free memory is refused here; wf_alloc
 * zeroes each arena on the device at once, which places its pages there, so
 * the next request sees them gone from the free memory. */
void *wf_backend_alloc(const wf_ctx *c, size_t bytes) {
    ensure_device((wf_ctx *)c);
    size_t free_bytes = 0, total = 0;
    if (cudaMemGetInfo(&free_bytes, &total) == cudaSuccess &&
        (free_bytes < DEVICE_RESERVE_BYTES || bytes > free_bytes - DEVICE_RESERVE_BYTES)) {
        fprintf(stderr, "weft: CUDA device %d has %.1f MiB free; an arena of %.1f MiB (and %.0f MiB "
                "kept for the CUDA context, cuBLASLt and NCCL) does not fit: refused rather than "
                "oversubscribing managed memory\n", device_of(c)->device, free_bytes / 1048576.0,
                bytes / 1048576.0, DEVICE_RESERVE_BYTES / 1048576.0);
        return NULL;
    }
    cudaGetLastError();
    void *q = NULL;
    if (wf_cuda_malloc_managed((wf_ctx *)c, &q, bytes) != cudaSuccess) {
        cudaGetLastError(); /* clear it: wf_alloc reports the failure */
        return NULL;
    }
    return q;
}

/* See concurrent_managed: common/ calls this before host code writes managed
 * memory that kernels issued earlier do not read (the next microbatch's
 * tokens).  Waits for every stream (NCCL's too) where the device cannot
 * share managed memory with running kernels; elsewhere nothing. */
void wf_backend_host_write(wf_ctx *c) {
    if (!device_of(c)->concurrent_managed) WF_CUDA(c, cudaDeviceSynchronize());
}
int wf_cuda_concurrent_managed(wf_ctx *c) { return device_of(c)->concurrent_managed; }

/* Offloaded state: pinned host memory (page-locked, so copies to and from
 * the device run at full speed), touched only by host code (the offloaded
 * AdamW); NULL on failure, as wf_backend_alloc. */
void *wf_backend_alloc_host(const wf_ctx *c, size_t bytes) {
    ensure_device((wf_ctx *)c);
    void *q = NULL;
    if (wf_cuda_malloc_host((wf_ctx *)c, &q, bytes) != cudaSuccess) {
        cudaGetLastError();
        return NULL;
    }
    return q;
}

/* The whole device's memory in use (every process on it, the CUDA context
 * included), next to what this rank's arenas take. */
int wf_backend_mem_info(size_t *used, size_t *total) {
    size_t free_bytes = 0, all = 0;
    if (cudaMemGetInfo(&free_bytes, &all) != cudaSuccess) {
        cudaGetLastError();
        *used = *total = 0;
        return -1;
    }
    *used = all - free_bytes;
    *total = all;
    return 0;
}

/* ---- the hooks train.c calls (CPU: OpenBLAS selection and threads) -------- */

void wf_blas_select(int argc, char **argv) {
    (void)argc;
    (void)argv;
}

/* After MPI is up: rank r of a node uses GPU r mod (GPUs on the node); the
 * host code (optimizer, data) gets an equal share of the node's cores.  The
 * rank's first backend call: its context gets its state here (train.c's
 * context is not const; this hook's signature is the CPU backend's). */
void wf_blas_threads(const wf_ctx *c) {
    wf_cuda_attach((wf_ctx *)c);
    struct wf_cuda_device *d = device_of(c);
    MPI_Comm node;
    int local = 0, local_n = 1, count = 0;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, c->rank, MPI_INFO_NULL, &node) ==
        MPI_SUCCESS) {
        MPI_Comm_rank(node, &local);
        MPI_Comm_size(node, &local_n);
        MPI_Comm_free(&node);
    }
    WF_CUDA((wf_ctx *)c, cudaGetDeviceCount(&count));
    if (count < 1) wf_fatal(c, "cudaGetDeviceCount", WF_WHERE, "no CUDA device on this node");
    d->device = local % count;
    WF_CUDA((wf_ctx *)c, cudaSetDevice(d->device));
    WF_CUDA((wf_ctx *)c, cudaDeviceGetAttribute(&d->concurrent_managed, cudaDevAttrConcurrentManagedAccess,
                                                d->device));
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int threads = (int)(cores / local_n);
    if (!getenv("OMP_NUM_THREADS")) omp_set_num_threads(threads < 1 ? 1 : threads);
}

/* The rank's device (no context here: the process's state, which the rank's
 * context adopted). */
void wf_blas_describe(char *out, size_t n) {
    const struct wf_cuda_device *d = device_of(NULL);
    struct cudaDeviceProp prop;
    int dev = d->device < 0 ? 0 : d->device;
    if (cudaGetDeviceProperties(&prop, dev) != cudaSuccess) {
        cudaGetLastError();
        snprintf(out, n, "device: CUDA device %d (properties unavailable)", dev);
        return;
    }
    snprintf(out, n, "device: CUDA %d: %s (sm_%d%d, %.0f GiB); cuBLASLt (fp32 plans without TF32); "
             "kernels asynchronous on one compute stream, arenas in managed memory%s; %d OpenMP thread(s)",
             dev, prop.name, prop.major, prop.minor, (double)prop.totalGlobalMem / 1073741824.0,
             d->concurrent_managed ? "" : " (no concurrent managed access: host writes wait for the device)",
             omp_get_max_threads());
}
