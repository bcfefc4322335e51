/* zero_params.c: ZeRO-3, parameters sharded over the data-parallel group.
 * Each rank stores only its compact parameter shard (laid out like the AdamW
 * moments, and updated in place by AdamW).  The generated code all-gathers a
 * bucket's parameters into the gather buffer the compiler assigned it before
 * their first use in forward and again in backward, started ahead so that the
 * gather overlaps compute; buffers whose uses never overlap share memory.
 * Whole parameters exist only transiently, when a checkpoint is written:
 * start-up makes or reads each rank's ranges alone (zero_startup.c). */
#include <string.h>

#include "internal.h"

void wf_gather_start(wf_ctx *c, int k) {
    const wf_program *p = c->p;
    const int *counts = c->zero_counts + (long)k * p->dp, *displs = c->zero_displs + (long)k * p->dp;
    /* 16-bit shards and gather buffers (param16.c) travel as they are stored */
    size_t size = p->param16 ? sizeof(uint16_t) : sizeof(float);
    const char *mine = (const char *)c->param_shard + size * (size_t)c->zero_base[k];
    char *whole = (char *)c->params + size * (size_t)p->buckets[k].gather;
    if (p->offload_params) {
        /* an offloaded shard is host memory, which NCCL does not read: it
         * goes to its place in the gather buffer first (in stream order,
         * before the collective), and the gather runs in place */
        int me = c->dp_rank;
        wf_backend_copy(c, whole + size * (size_t)displs[me], mine, size * (size_t)counts[me]);
        mine = NULL;
    }
    c->coll->allgatherv(c, WF_GROUP_DP, mine, whole, counts, displs, p->param16 ? wf_params16_type(c) : WF_F32,
                        &c->gather_req[k]);
}

void wf_gather_wait(wf_ctx *c, int k) {
    wf_watch_what(c, WF_GROUP_DP, "bucket %d parameter all-gather (ZeRO-3)", k);
    c->coll->wait(c, &c->gather_req[k], 1);
    wf_watch_done();
}

/* PipeDream-2BW: one version's shard over the other's (the optimizer then
 * updates dst in place), where the shards live (on the device for CUDA) */
void wf_zero_copy_shard(wf_ctx *c, float *dst, const float *src) {
    size_t size = c->p->param16 ? sizeof(uint16_t) : sizeof(float);
    wf_backend_copy(c, dst, src, size * (size_t)c->moment_numel);
    wf_params_changed(c);
}

/* Frozen parameters (bucket -1, weft.vlm's freeze) have no gradient and no
 * optimizer state, so ZeRO-3 keeps them out of its shards: whole on every
 * rank (and in fp32 under 16-bit precision, as without ZeRO), at the end of
 * the gather arena, where the compiler's zero pass put them. */
long wf_frozen_at(const wf_program *p, int k) {
    return p->zero >= 3 ? p->gather_numel - p->param_numel + p->params[k].offset : p->params[k].offset;
}
