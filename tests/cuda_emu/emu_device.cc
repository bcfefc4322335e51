/* emu_device.cc: runtime/cuda/device.c for the kernel tests' emulated
 * library (weftrt_cuda_emu): one stream handle, host memory for the arenas,
 * and errors that name the call (the kernel tests run without a rank: c is
 * NULL there), and fake plan contexts.  The whole emulated runtime
 * (emu_runtime.cmake) has device.c, async.c and precision_of.c instead. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "cuda_rt.h"

extern "C" {

/* cuda_rt.h's state: one for every context, as the kernel tests' contexts
 * (c NULL, wf_storage_ctx's) all share the process's in the real runtime */
wf_cuda_ctx *wf_cuda_of(const wf_ctx *c) {
    (void)c;
    static wf_cuda_ctx state;
    return &state;
}

cudaStream_t wf_cuda_stream(wf_ctx *c) {
    static cudaStream_t stream;
    if (!stream) WF_CUDA(c, cudaStreamCreate(&stream));
    return stream;
}

void wf_cuda_fail(wf_ctx *c, const char *call, const char *where, const char *msg) {
    fprintf(stderr, "rank %s: %s failed (%s): %s\n", c ? "?" : "0 (emulated)", call, where, msg);
    exit(1);
}

/* launch errors only, as device.c: the host does not wait (under
 * WF_EMU_ASYNC the kernel has not run yet when this returns) */
void wf_cuda_sync(wf_ctx *c, const char *kernel) {
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) wf_cuda_fail(c, kernel, WF_CUDA_WHERE, cudaGetErrorString(e));
}

/* the host and the emulated kernels share memory like a Linux GPU does */
int wf_cuda_concurrent_managed(wf_ctx *c) {
    (void)c;
    return 1;
}

/* async.c: the host waits for the stream (the emulator's kernels are done
 * when their launch returns, unless WF_EMU_ASYNC queued them) */
void wf_backend_sync(wf_ctx *c) { WF_CUDA(c, cudaStreamSynchronize(wf_cuda_stream(c))); }

/* cuda_rt.h's counted allocations; the kernel tests count nothing (the
 * whole emulated runtime has device.c's) */
cudaError_t wf_cuda_malloc(wf_ctx *, void **p, size_t bytes) { return cudaMalloc(p, bytes); }
cudaError_t wf_cuda_malloc_managed(wf_ctx *, void **p, size_t bytes) {
    return cudaMallocManaged(p, bytes, cudaMemAttachGlobal);
}
cudaError_t wf_cuda_malloc_host(wf_ctx *, void **p, size_t bytes) { return cudaMallocHost(p, bytes); }
cudaError_t wf_cuda_free(wf_ctx *, void *p) { return cudaFree(p); }

/* 64-byte alignment is what wf_alloc promises; 256 is what cudaMalloc gives */
void *wf_backend_alloc(const wf_ctx *, size_t bytes) { return aligned_alloc(256, (bytes + 255) / 256 * 256); }

/* runtime/common/precision_of.c reads the plan from the full context; the
 * emulated build has no wf_ctx layout, so wf_storage_ctx's contexts are the
 * addresses of six bytes, the offset being precision + 3 * act16.  c NULL
 * (most kernel tests): fp32 floats, as there. */
static char storage_ctx[6];

wf_ctx *wf_storage_ctx(int precision, int act16) {
    if (precision < WF_FP32 || precision > WF_FP16 || (act16 && precision == WF_FP32)) return NULL;
    return (wf_ctx *)&storage_ctx[precision + 3 * (act16 != 0)];
}

wf_ctx *wf_precision_ctx(int precision) { return wf_storage_ctx(precision, 0); }

static int storage_of(wf_ctx *c) {
    uintptr_t at = (uintptr_t)c, base = (uintptr_t)storage_ctx;
    if (at < base || at >= base + sizeof storage_ctx)
        wf_cuda_fail(c, "wf_ctx_precision", WF_CUDA_WHERE, "not a wf_storage_ctx context");
    return (int)(at - base);
}

int wf_ctx_precision(wf_ctx *c) { return c ? storage_of(c) % 3 : WF_FP32; }

int wf_ctx_act16(wf_ctx *c) { return c ? storage_of(c) / 3 : 0; }

int wf_frozen_weight(wf_ctx *, const void *) { return 0; }  /* kernel tests have no parameters */

int wf_backend_mem_info(size_t *used, size_t *total) {
    *used = *total = 0;
    return -1;
}

}  // extern "C"
