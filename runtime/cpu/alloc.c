/* alloc.c: the CPU backend's arena allocator (wf_alloc in step.c calls it). */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE /* madvise under -std=c11 */
#endif
#include <stdlib.h>
#include <sys/mman.h>

#include "internal.h"

/* An arena of at least 2 MiB is aligned to 2 MiB and asks for transparent
 * huge pages (taken where /sys/kernel/mm/transparent_hugepage/enabled is
 * "madvise" or "always"; a hint, ignored elsewhere): the GEMMs' packing and
 * the classifier stream tens of MiB (the tied wte, the logits) through the
 * TLB, one entry per 4 KiB page otherwise.  step.c's arena() zeroes every
 * arena once at setup, which faults its pages in before the first step. */
enum { HUGE_PAGE = 2 << 20 };

void *wf_backend_alloc(const wf_ctx *c, size_t bytes) {
    (void)c;
    void *q = NULL;
    /* 64-byte lines: the vector kernels and MPI like aligned buffers */
    size_t align = bytes >= HUGE_PAGE ? HUGE_PAGE : 64;
    if (posix_memalign(&q, align, bytes) != 0) return NULL;
#ifdef MADV_HUGEPAGE
    if (align == HUGE_PAGE) (void)madvise(q, bytes / HUGE_PAGE * HUGE_PAGE, MADV_HUGEPAGE);
#endif
    return q;
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
