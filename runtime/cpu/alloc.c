/* alloc.c: the CPU backend's arena allocator (wf_alloc in step.c calls it). */
#include <stdlib.h>

#include "internal.h"

void *wf_backend_alloc(const wf_ctx *c, size_t bytes) {
    (void)c;
    void *q = NULL;
    /* 64-byte lines: the vector kernels and MPI like aligned buffers */
    return posix_memalign(&q, 64, bytes) == 0 ? q : NULL;
}

void *wf_backend_alloc_host(const wf_ctx *c, size_t bytes) { return wf_backend_alloc(c, bytes); }

/* Host memory has no device figure to report: the metrics say null. */
int wf_backend_mem_info(size_t *used, size_t *total) {
    *used = *total = 0;
    return -1;
}

/* Nothing beside the arenas: the metrics keep their CPU keys only. */
int wf_backend_alloc_live(const wf_ctx *c, size_t *device, size_t *pinned) {
    (void)c;
    *device = *pinned = 0;
    return -1;
}
