/* cast.c: the cast buffer of 16-bit activation storage (cuda_rt.h,
 * wf_cuda_cast_buffer): device memory for one conversion at a time (a
 * weight as 16-bit values before a GEMM on 16-bit activations), reused in
 * stream order.
 *
 * A program allocates its plan's cast_numel floats at the first request
 * (an eager step: graph.c captures only after a warm-up step, so no
 * allocation happens inside a capture) and fails on a request past it.
 * Kernel tests have no plan: c NULL, or a wf_storage_ctx context, whose
 * cast_numel is 0, get a buffer that grows (cudaFree waits for the device,
 * so no kernel still reads the old one).  The emulated kernel build
 * (WF_CAST_NO_PLAN, tests/cuda_emu/emu.cmake) has no wf_ctx layout: there
 * every request is unplanned. */
#include <stdio.h>

#include "cuda_rt.h"
#ifndef WF_CAST_NO_PLAN
#include "internal.h"
#endif

static float *planned, *grown;
static long grown_floats;

static long planned_floats(wf_ctx *c) {
#ifdef WF_CAST_NO_PLAN
    (void)c;
    return 0;
#else
    return c ? c->p->cast_numel : 0;
#endif
}

float *wf_cuda_cast_buffer(wf_ctx *c, long floats) {
    long plan = planned_floats(c);
    if (plan > 0) {
        if (floats > plan) {
            char msg[160];
            snprintf(msg, sizeof msg, "%ld floats requested, the plan's cast_numel is %ld", floats, plan);
            wf_cuda_fail(c, "wf_cuda_cast_buffer", WF_CUDA_WHERE, msg);
        }
        if (!planned) WF_CUDA(c, wf_cuda_malloc((void **)&planned, sizeof(float) * (size_t)plan));
        return planned;
    }
    if (floats > grown_floats) {
        if (grown) WF_CUDA(c, wf_cuda_free(grown));
        grown = NULL;
        WF_CUDA(c, wf_cuda_malloc((void **)&grown, sizeof(float) * (size_t)(floats > 0 ? floats : 1)));
        grown_floats = floats;
    }
    return grown;
}
