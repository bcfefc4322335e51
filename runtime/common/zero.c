/* zero.c: ZeRO over the data-parallel group: the shard bookkeeping every
 * stage shares, and stage 1 itself (zero_grads.c adds stage 2, zero_params.c
 * stage 3).  Under ZeRO-1 each bucket is
 * reduce-scattered instead of all-reduced, in the contiguous shards the
 * compiler fixed (wf_program.shards); each rank keeps AdamW moments for, and
 * updates, only its shard of every bucket, then the updated parameters are
 * all-gathered bucket by bucket.  Without ZeRO every rank owns everything and
 * the same bookkeeping describes the plain layout. */
#include <string.h>

#include "internal.h"

static long shard_at(const wf_program *p, int k, int r) { return p->shards[(long)k * (p->dp + 1) + r]; }

/* Which part of each parameter this rank owns, and where its moments live. */
void wf_zero_setup(wf_ctx *c) {
    const wf_program *p = c->p;
    c->own_lo = wf_alloc(c, sizeof(long) * (size_t)p->n_params, "ZeRO ranges");
    c->own_hi = wf_alloc(c, sizeof(long) * (size_t)p->n_params, "ZeRO ranges");
    c->moment_base = wf_alloc(c, sizeof(long) * (size_t)p->n_params, "ZeRO ranges");
    c->moment_numel = p->grad_numel;  /* the trainable prefix: a frozen parameter updates nothing */
    for (int k = 0; k < p->n_params; k++) {
        c->own_lo[k] = 0;
        c->own_hi[k] = p->params[k].bucket < 0 ? 0 : p->params[k].numel;
        c->moment_base[k] = p->params[k].offset;
    }
    if (!p->zero) return;
    int dp = p->dp;
    c->zero_base = wf_alloc(c, sizeof(long) * (size_t)p->n_buckets, "ZeRO buckets");
    c->zero_counts = wf_alloc(c, sizeof(int) * (size_t)p->n_buckets * dp, "ZeRO counts");
    c->zero_displs = wf_alloc(c, sizeof(int) * (size_t)p->n_buckets * dp, "ZeRO offsets");
    long compact = 0;
    for (int b = 0; b < p->n_buckets; b++) {
        c->zero_base[b] = compact;
        if (p->buckets[b].numel % dp != 0)  /* a program from a compiler that did not pad (buckets.c) */
            wf_fatal(c, "wf_zero_setup", WF_WHERE, "bucket %d (%ld values) is not a multiple of dp %d: recompile the plan "
                     "with this weft, which pads every ZeRO bucket", b, p->buckets[b].numel, dp);
        for (int r = 0; r < dp; r++) {
            c->zero_displs[b * dp + r] = (int)shard_at(p, b, r);
            c->zero_counts[b * dp + r] = (int)(shard_at(p, b, r + 1) - shard_at(p, b, r));
        }
        compact += c->zero_counts[b * dp + c->dp_rank];
    }
    c->moment_numel = compact;
    size_t shard_bytes = sizeof(float) * (size_t)(compact ? compact : 1);
    size_t pshard_bytes = (p->param16 ? sizeof(uint16_t) : sizeof(float)) * (size_t)(compact ? compact : 1);
    if (p->zero >= 2) c->grad_shard = wf_alloc(c, shard_bytes, "gradient shard (ZeRO-2)");
    if (p->zero >= 3) {
        /* offload: pinned host memory on CUDA (zero_params.c copies it to
         * the device before each gather); one memory on the CPU backend */
        c->param_shard = p->offload_params ? wf_alloc_host_arena(c, pshard_bytes, "parameter shard (ZeRO-3, host)")
                                           : wf_alloc(c, pshard_bytes, "parameter shard (ZeRO-3)");
        /* PipeDream-2BW: a second version is a second shard (twobw.c), not
         * a whole copy of the parameters */
        if (p->weight_delay)
            c->next_shard = p->offload_params ? wf_alloc_host_arena(c, pshard_bytes, "PipeDream-2BW version shard (ZeRO-3, host)")
                                              : wf_alloc(c, pshard_bytes, "PipeDream-2BW version shard (ZeRO-3)");
        c->gather_req = wf_alloc(c, sizeof(wf_req) * (size_t)p->n_buckets, "ZeRO-3 gathers");
        wf_req_init(c->gather_req, p->n_buckets);
    }
    for (int k = 0; k < p->n_params; k++) {
        const wf_param *q = &p->params[k];
        if (q->bucket < 0) continue;  /* frozen: owns nothing (0, 0 above) */
        wf_zero_own_range(p, k, c->dp_rank, &c->own_lo[k], &c->own_hi[k]);
        long lo = p->buckets[q->bucket].offset + shard_at(p, q->bucket, c->dp_rank);
        c->moment_base[k] = c->zero_base[q->bucket] + (q->offset + c->own_lo[k] - lo);
    }
    /* ZeRO-1 reduces in place in the gradient arena (wf_zero_bucket_start);
     * 16-bit gradients keep in floats only the parts summed after the dp sum
     * (grad16.c) */
    if (p->zero == 1 && p->grad16) wf_grad16_zero1_alloc(c);
}

/* Bucket k's part of one rank: the compiler padded every bucket so that dp
 * divides it (compiler/buckets.c), and the shards are equal. */
long wf_zero_part(const wf_program *p, int k) { return p->buckets[k].numel / p->dp; }

/* Where an in-place reduce-scatter of bucket k left this rank's sum, in
 * values from the buffer's start (coll.h's in_place_at_own_part). */
long wf_zero_part_at(const wf_ctx *c, int k) {
    return c->coll->in_place_at_own_part ? (long)c->dp_rank * wf_zero_part(c->p, k) : 0;
}

void wf_zero_own_range(const wf_program *p, int k, int r, long *lo, long *hi) {
    const wf_param *q = &p->params[k];
    *lo = *hi = 0;
    if (q->bucket < 0) return;
    const wf_bucket *bk = &p->buckets[q->bucket];
    long s = bk->offset + shard_at(p, q->bucket, r), e = bk->offset + shard_at(p, q->bucket, r + 1);
    long a = q->offset > s ? q->offset : s, b = q->offset + q->numel < e ? q->offset + q->numel : e;
    if (b < a) b = a;
    *lo = a - q->offset;
    *hi = b - q->offset;
}

/* ZeRO-1 keeps the whole gradient arena, so each bucket is reduced in place
 * there: no shard buffer.  16-bit sums (plan.dp_comm, dp_comm.c): the bucket
 * packed in its first half, the sum left as 16-bit values. */
void wf_zero_bucket_start(wf_ctx *c, int k) {
    const wf_program *p = c->p;
    float *g = c->grads + p->buckets[k].offset;
    if (p->dp_comm16) wf_dp16_pack(c, g, p->buckets[k].numel);
    c->zero_unplaced = 1;
    c->coll->reduce_scatter_parts(c, WF_GROUP_DP, g, g, wf_zero_part(p, k), p->dp_comm16 ? wf_dp16_type(c) : WF_F32,
                                  &c->bucket_req[k]);
}

/* The reduced shards to their places in the gradient arena, once a step:
 * 2BW waits for its buckets twice (the tied wte's exchange, which adds into
 * the placed shard, then the optimizer), and a second move would undo that
 * add.  The sum lies where the collective left it (coll.h): at this rank's
 * own part (NCCL: already in place, nothing to do for floats) or at the
 * bucket's start (MPI: rank 0's in place, another rank's part never overlaps
 * the start, [0, part) against [r part, (r + 1) part)).  16-bit sums widen
 * into the part's floats; at the same start (rank 0) in place, otherwise the
 * 16-bit values end where the floats begin at the latest (2 r part + 2 part
 * <= 4 r part bytes for r >= 1).  The rest of the arena holds this rank's
 * unreduced gradients, or sums of other parts under MPI, and nothing reads
 * it: the norm, the loss scale's check and the optimizer read own shards
 * (opt_ranges.c, loss_scale.c), and backward overwrites the arena next step. */
void wf_zero_after_reduce(wf_ctx *c) {
    const wf_program *p = c->p;
    if (p->zero != 1 || !c->zero_unplaced) return;  /* ZeRO >= 2 reduces into its gradient shard directly */
    c->zero_unplaced = 0;
    for (int b = 0; b < p->n_buckets; b++) {
        float *g = c->grads + p->buckets[b].offset, *dst = g + shard_at(p, b, c->dp_rank);
        long n = c->zero_counts[b * p->dp + c->dp_rank], at = wf_zero_part_at(c, b);
        if (p->dp_comm16) {
            const uint16_t *src = (const uint16_t *)(const void *)g + at;
            if ((const void *)src == (const void *)dst) wf_backend_from16_in_place(c, dst, n);
            else wf_dp16_widen(c, dst, src, n);
        } else if (g + at != dst) {
            wf_backend_copy(c, dst, g + at, sizeof(float) * (size_t)n);
        }
    }
}

/* Every rank updated its shards: gather the parameters, bucket by bucket
 * (one-rank-pipeline 2BW, optim.c's wf_adamw: the version it updated, the
 * newest; gathering the other left every rank's next version stale outside
 * its own shards, which the checkpoint saved) */
void wf_zero_gather_params(wf_ctx *c) { wf_zero_gather_version(c, c->p->weight_delay ? c->next_params : c->params); }

/* ... into `version` (PipeDream-2BW's step updates one of its two) */
void wf_zero_gather_version(wf_ctx *c, float *version) {
    const wf_program *p = c->p;
    if (!p->zero || p->zero >= 3) return;  /* ZeRO-3 gathers a bucket when it is used */
    /* 16-bit working parameters (param16.c) travel as they are stored */
    wf_dtype t = p->param16 ? wf_params16_type(c) : WF_F32;
    for (int b = 0; b < p->n_buckets; b++) {
        void *at = p->param16 ? wf_params16_at(version, p->buckets[b].offset) : (void *)(version + p->buckets[b].offset);
        c->coll->allgatherv(c, WF_GROUP_DP, NULL, at, c->zero_counts + (long)b * p->dp, c->zero_displs + (long)b * p->dp,
                            t, &c->bucket_req[b]);
    }
    for (int b = 0; b < p->n_buckets; b++) {
        wf_watch_what(c, WF_GROUP_DP, "bucket %d parameter all-gather (ZeRO-%d%s)", b, p->zero,
                      p->param16 ? ", 16-bit" : "");
        c->coll->wait(c, &c->bucket_req[b], 1);
    }
    wf_watch_done();
    wf_params_changed(c);
}

void wf_moment_keep(wf_ctx *c, const float *full, float *moment) {
    const wf_program *p = c->p;
    for (int k = 0; k < p->n_params; k++)
        memcpy(moment + c->moment_base[k], full + p->params[k].offset + c->own_lo[k],
               sizeof(float) * (size_t)(c->own_hi[k] - c->own_lo[k]));
}

/* the most floats of one parameter this rank owns (its optimizer state) */
long wf_own_most(const wf_ctx *c) {
    long most = 1;
    for (int k = 0; k < c->p->n_params; k++)
        if (c->own_hi[k] - c->own_lo[k] > most) most = c->own_hi[k] - c->own_lo[k];
    return most;
}
