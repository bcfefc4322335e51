/* zero_grads.c: ZeRO-2, gradients sharded over the data-parallel group.
 * Backward writes each bucket's gradients into a bucket buffer that the
 * compiler placed (buffers of buckets never live together share memory).
 * Once the bucket is complete it is reduce-scattered in place (one collective
 * of equal parts: the compiler padded the bucket); the wait adds this rank's
 * reduced part into its compact gradient shard (laid out like the
 * AdamW moments) and zeroes the buffer, since backward kernels accumulate.
 * This happens every microbatch, so gradient accumulation sums into the shard
 * (as DeepSpeed does) and no whole gradient ever exists. */
#include <string.h>

#include "internal.h"
#include "opt_backend.h"

void wf_grad_bucket_start(wf_ctx *c, int k) {
    const wf_program *p = c->p;
    if (p->grad16) {  /* 16-bit buffers, through float staging (grad16.c) */
        wf_grad16_bucket_start(c, k);
        return;
    }
    float *buf = c->grads + p->buckets[k].buffer;
    if (p->dp_comm16) wf_dp16_pack(c, buf, p->buckets[k].numel);  /* dp_comm.c */
    c->coll->reduce_scatter_parts(c, WF_GROUP_DP, buf, buf, wf_zero_part(p, k),
                                  p->dp_comm16 ? wf_dp16_type(c) : WF_F32, &c->bucket_req[k]);
    c->n_inflight = 1;
}

void wf_grad_bucket_wait(wf_ctx *c, int k) {
    const wf_program *p = c->p;
    if (p->grad16) {  /* grad16.c */
        wf_grad16_bucket_wait(c, k);
        return;
    }
    wf_watch_what(c, WF_GROUP_DP, "bucket %d gradient reduce-scatter (ZeRO-%d)", k, p->zero);
    c->coll->wait(c, &c->bucket_req[k], 1);
    wf_watch_done();
    /* in place: this rank's reduced part is where the collective left it
     * (wf_zero_part_at: the buffer's start on MPI, its own part on NCCL); a
     * float add where the data lives (not rt.h's residual add, which works
     * on 16-bit activation storage under act16); 16-bit sums (plan.dp_comm)
     * widened as they are added, the values the float add would have read */
    float *buf = c->grads + p->buckets[k].buffer, *shard = c->grad_shard + c->zero_base[k];
    long n = wf_zero_part(p, k), at = wf_zero_part_at(c, k);
    if (p->dp_comm16) wf_backend_add16(c, shard, (const uint16_t *)(const void *)buf + at, n);
    else wf_backend_add_floats(c, shard, buf + at, n);
    wf_backend_zero(c, buf, sizeof(float) * (size_t)p->buckets[k].numel);
}

void wf_add_grads(wf_ctx *c, float *g, const float *src, long n) {
    wf_backend_add_floats(c, g, src, n);
}

float *wf_own_grad(wf_ctx *c, int k) {
    const wf_program *p = c->p;
    if (p->zero >= 2) return c->grad_shard + c->moment_base[k] - c->own_lo[k];
    return c->grads + p->params[k].offset;
}

/* After the optimizer step: the next step accumulates from zero.  (ZeRO-2's
 * bucket buffers are zeroed by each wait already.) */
void wf_zero_grads_clear(wf_ctx *c) {
    const wf_program *p = c->p;
    if (p->zero >= 2) wf_backend_zero(c, c->grad_shard, sizeof(float) * (size_t)c->moment_numel);
    else wf_backend_zero(c, c->grads, (p->grad16 ? sizeof(uint16_t) : sizeof(float)) * (size_t)p->grad_numel);
}
