/* buckets.c: the `buckets` pass: gradients laid out in the order backward
 * completes them, cut into buckets (per pipeline stage). */
#include <stdlib.h>
#include <string.h>

#include "ops.h"
#include "program.h"

/* Each pipeline stage has its own parameter arena and buckets.  Under ZeRO
 * with pipeline parallelism the tied wte (and its copy on the last stage)
 * gets a bucket of its own, so that both copies are sharded alike and their
 * gradients can be summed shard by shard; from ZeRO-2 on a bucket also never
 * spans two chunks, so that one chunk's backward writes all of it. */
static int is_tied(const Program *p, int k) {
    if (p->params[k].tied_to >= 0) return 1;
    for (int j = 0; j < p->n_params; j++)
        if (p->params[j].tied_to == k) return 1;
    return 0;
}

/* Under ZeRO every bucket is cut into dp equal parts, one a rank (its
 * shard), so that each reduce-scatter and all-gather is one collective of
 * equal counts: NCCL's ncclReduceScatter and ncclAllGather take nothing
 * else, and run in place without a copy.  A bucket dp does not divide is
 * padded with zero floats after its last parameter (at most dp - 1 of them):
 * they lie in the arenas (parameters, gradients, shards, buffers) but belong
 * to no parameter, so no kernel, optimizer step or checkpoint reads or
 * writes them (they hold zeros: the runtime zeroes what it allocates). */
static void pad_bucket(const Program *p, ir_bucket *b, long *offset) {
    if (!b || !p->zero || p->dp < 2 || b->pad) return;
    b->pad = (p->dp - b->numel % p->dp) % p->dp;
    b->numel += b->pad;
    *offset += b->pad;
}

/* Under a split backward (zero-bubble) a bucket whose gradients B writes
 * whole (ops.h's op_weight_grad_in_b: the chunked LM head's; without
 * ZeRO >= 2 the norms' too, a bucket of them alone) is complete after the
 * last of those B halves: its reduction starts there, overlapping the rest
 * of B and then W, instead of waiting for W.  One with any gradient from W
 * (a GEMM's dW, or a sum staged for W to add in) starts in W. */
static void mark_start_in_b(Program *p) {
    if (p->pp < 2 || !p->sched || !p->sched->split_backward) return;
    int *in_b = wf_checked(calloc((size_t)p->n_buckets + 1, sizeof(int)), "buckets pass");
    int *in_w = wf_checked(calloc((size_t)p->n_buckets + 1, sizeof(int)), "buckets pass");
    for (int i = 0; i < p->n_ops; i++) {
        const ir_op *o = &p->ops[i];
        for (int k = 0; k < o->n_param; k++) {
            int b = p->params[o->param[k]].bucket;
            if (b < 0) continue;  /* frozen */
            if (op_weight_grad_in_b(p, o)) in_b[b] = 1;
            else in_w[b] = 1;
        }
    }
    for (int b = 0; b < p->n_buckets; b++) {
        p->buckets[b].written_in_b = in_b[b];
        p->buckets[b].start_in_b = in_b[b] && !in_w[b];
    }
    free(in_b);
    free(in_w);
}

int pass_buckets(Program *p) {
    double cap_bytes = p->bucket_mb * 1024.0 * 1024.0;
    for (int k = 0; k < p->n_params; k++) p->params[k].chunk = -1;
    for (int i = 0; i < p->n_ops; i++)
        for (int k = 0; k < p->ops[i].n_param; k++)
            if (p->params[p->ops[i].param[k]].chunk < 0) p->params[p->ops[i].param[k]].chunk = p->ops[i].chunk;
    int alone_tied = p->zero > 0 && p->pp > 1;
    p->buckets = calloc((size_t)p->n_params, sizeof *p->buckets);
    p->param_numel = calloc((size_t)p->pp, sizeof(long));
    p->train_numel = calloc((size_t)p->pp, sizeof(long));
    p->n_buckets = 0;
    /* buckets.mb counts gradient bytes as the plan stores them: 16-bit modes 2 a value */
    double el = strcmp(p->precision, "fp32") == 0 ? 4.0 : 2.0;
    for (int stage = 0; stage < p->pp; stage++) {
        long offset = 0;
        ir_bucket *cur = NULL;
        for (int r = 0; r < p->n_params; r++) {
            ir_param *q = &p->params[p->grad_order[r]];
            if (q->stage != stage) continue;
            if (q->frozen) {  /* after the trainable ones (graph.c sorts them last): no gradient, no bucket */
                pad_bucket(p, cur, &offset);
                if (cur) p->train_numel[stage] = offset;
                cur = NULL;
                q->offset = offset;
                q->bucket = -1;
                offset += q->numel;
                continue;
            }
            double bytes = el * (double)q->numel;
            /* a parameter larger than the cap gets a bucket of its own */
            int tied = alone_tied && is_tied(p, p->grad_order[r]);
            int cut = !cur || el * (double)cur->numel + bytes > cap_bytes || tied ||
                      (alone_tied && is_tied(p, p->grad_order[cur->last_param])) ||
                      (p->zero >= 2 && p->params[p->grad_order[cur->last_param]].chunk != q->chunk);
            if (cut) {
                pad_bucket(p, cur, &offset);
                cur = &p->buckets[p->n_buckets++];
                cur->offset = offset;
                cur->first_param = r;
                cur->stage = stage;
            }
            q->offset = offset;
            q->bucket = (int)(cur - p->buckets);
            cur->numel += q->numel;
            cur->last_param = r;
            cur->ready_after_op = q->last_grad_op;
            offset += q->numel;
            p->train_numel[stage] = offset;
        }
        if (cur) {  /* the stage's last bucket, unless a frozen parameter closed it */
            pad_bucket(p, cur, &offset);
            p->train_numel[stage] = offset;
        }
        p->param_numel[stage] = offset;
    }
    mark_start_in_b(p);
    return 0;
}

