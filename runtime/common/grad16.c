/* grad16.c: weight gradients stored in 16 bits (wf_program.grad16, the
 * compiler's grad16.c; gradients accumulated in the plan's 16-bit type;
 * any ZeRO stage: ZeRO-3's gradients are ZeRO-2's; frozen
 * parameters, in no bucket, have none and are skipped wherever parameters
 * are walked: bucket >= 0 or == k).
 *
 * The gradient arena (ZeRO-2: its bucket buffers) holds bf16 / fp16 bits,
 * 2 bytes a gradient; c->grads carries its address as `float *`.  Every
 * value the float arena held there was one rounded to the type, so the
 * 16-bit arena holds the same values, and every sum that ran on those
 * floats runs on them widened, in the same order, rounded once where the
 * float program rounded:
 *   - backward: the generated code widens an op's parameter gradients into
 *     c->gscratch, the kernels accumulate there, wf_narrow_grads stores them
 *     rounded (the float program's round_param_grads);
 *   - the data-parallel sum of a bucket runs on its values widened into
 *     c->gstage: one bucket in flight at a time (the next bucket's start
 *     finishes it), its sum rounded into the arena (ZeRO-0; ZeRO-1: this
 *     rank's part, reduce-scattered in place in the staging, rounded into
 *     its place), or added into ZeRO-2's float shard;
 *   - a 16-bit dp sum (plan.dp_comm) sends the bucket's bits as they are,
 *     every bucket in flight at once, no staging (the float program packed
 *     the same values into the same 16-bit message, dp_comm.c); ZeRO
 *     reduce-scatters in place in the arena;
 *   - parameters summed after the dp sum (sequence parallelism's partial
 *     gradients over tp, the tied wte over the pipeline's ends) are summed
 *     in the optimizer step where the float program summed them, on their
 *     floats (the bucket's dp sum in the staging; ZeRO-1: this rank's parts
 *     of those parameters alone, kept as floats in c->zero_buf), before
 *     the one rounding the float program's optimizer step did;
 *   - the optimizer, the norm and fp16's overflow check read the bits;
 *   - PipeDream-2BW (dp 1, or dp > 1 with 16-bit dp sums, whose result is
 *     stored as it is; with fp32 dp sums the tied wte's bucket stays in the
 *     staging through the exchange): the tied wte's gradient travels as floats
 *     (twobw.c's message) and is added with one rounding; under ZeRO-1 its
 *     float part in zero_buf travels and is added there, rounded with the
 *     other float parts by the optimizer step (zero1_store).
 * ZeRO-2's shard stays float: it accumulates the microbatches unrounded.
 * Every conversion of the arena runs where it lives, in stream order
 * (internal.h's wf_backend_from16 and kin: convert16.c's loops on the CPU,
 * kernels on CUDA); host code that reads floats the device wrote (the
 * sums after the dp sum over host MPI, 2BW's tied wte message) waits for
 * the device first. */
#include <math.h>
#include <string.h>

#include "internal.h"
#include "opt_backend.h"

static uint16_t *bits_of(float *x) { return (uint16_t *)(void *)x; }

static long second(long n0) { return (n0 + 15) & ~15L; }

float *wf_widen_grads(wf_ctx *c, long off0, long n0, long off1, long n1) {
    wf_backend_from16(c, c->gscratch, bits_of(c->grads) + off0, n0);
    if (n1 > 0) wf_backend_from16(c, c->gscratch + second(n0), bits_of(c->grads) + off1, n1);
    return c->gscratch;
}

void wf_narrow_grads(wf_ctx *c, long off0, long n0, long off1, long n1) {
    wf_backend_to16(c, bits_of(c->grads) + off0, c->gscratch, n0);
    if (n1 > 0) wf_backend_to16(c, bits_of(c->grads) + off1, c->gscratch + second(n0), n1);
}

void wf_grad16_alloc(wf_ctx *c) {
    const wf_program *p = c->p;
    c->gscratch = wf_alloc(c, sizeof(float) * (size_t)p->gscratch_numel, "gradients widened for one op");
    c->gstage = wf_alloc(c, sizeof(float) * (size_t)p->gstage_numel, "gradient sums' staging (fp32)");
    c->g16_inflight = -1;
}

/* ---- the sums ------------------------------------------------------------- */

static int tied_sum(const wf_ctx *c, const wf_param *q) {
    return q->tied && c->group_comm[WF_GROUP_TIED] != MPI_COMM_NULL;
}

static int tp_sum(const wf_ctx *c, const wf_param *q) { return q->tp_partial && c->p->sp && c->p->tp > 1; }

/* Summed after the dp sum (wf_tp_partial_grads, wf_tied_grads): its bucket's
 * dp sum waits for them (ZeRO-0), so that one rounding follows all three. */
static int deferred(const wf_ctx *c, int k) {
    const wf_program *p = c->p;
    for (int j = 0; j < p->n_params; j++)
        if (p->params[j].bucket == k && (tp_sum(c, &p->params[j]) || tied_sum(c, &p->params[j]))) return 1;
    return 0;
}

/* Summed after the dp sum: the parameter's gradient stays in floats until
 * the optimizer step (ZeRO-1's float parts) */
static int summed_after(const wf_ctx *c, const wf_param *q) { return q->bucket >= 0 && (tp_sum(c, q) || tied_sum(c, q)); }

/* The tp and tied sums of parameter j's n floats at g, in the float
 * program's order (all tp sums, then the tied ones: per element the same). */
static void sums_after(wf_ctx *c, const wf_param *q, float *g, long n, int with_tied) {
    if (n <= 0) return;
    if (tp_sum(c, q)) {
        wf_backend_sync(c);  /* host MPI reads what the device widened */
        wf_watch_what(c, WF_GROUP_TP, "sequence-parallel gradient all-reduce of %s", q->name);
        WF_MPI(c, MPI_Allreduce(MPI_IN_PLACE, g, (int)n, MPI_FLOAT, MPI_SUM, c->group_comm[WF_GROUP_TP]));
    }
    if (with_tied && tied_sum(c, q)) {
        wf_watch_what(c, WF_GROUP_TIED, "tied-gradient all-reduce of %s", q->name);
        c->coll->allreduce(c, WF_GROUP_TIED, g, n, WF_F32, WF_SUM, NULL);
    }
    wf_watch_done();
}

static float *bucket_grads(wf_ctx *c, int k) {
    const wf_bucket *b = &c->p->buckets[k];
    return (float *)(void *)(bits_of(c->grads) + (c->p->zero >= 2 ? b->buffer : b->offset));
}

/* plan.dp_comm 16-bit (dp > 1): the dp sum runs in the stored type, so a
 * bucket's bits are its message, summed in place as dp_comm.c's packed
 * floats were (the same values, count and type): no staging, any number of
 * buckets in flight. */
static int direct(const wf_program *p) { return p->dp_comm16 && p->dp > 1; }

static wf_dtype type16(const wf_program *p) { return p->precision == WF_BF16 ? WF_B16 : WF_F16; }

static void direct_start(wf_ctx *c, int k) {
    const wf_program *p = c->p;
    void *g = bucket_grads(c, k);
    if (!p->zero)
        c->coll->allreduce(c, WF_GROUP_DP, g, p->buckets[k].numel, type16(p), WF_SUM, &c->bucket_req[k]);
    else  /* in place in the arena (ZeRO-1: moved to its place by zero1_place) */
        c->coll->reduce_scatter_parts(c, WF_GROUP_DP, g, g, wf_zero_part(p, k), type16(p), &c->bucket_req[k]);
    c->zero_unplaced = p->zero == 1;  /* its 16-bit parts to place, once (wf_grad16_finish) */
    c->n_inflight++;
}

/* ---- ZeRO-1: the summed parts in place, floats only where summed after ----
 *
 * ZeRO-1 stores each bucket's summed part (this rank's) into its place in
 * the 16-bit arena as soon as the bucket's dp sum completes.  The float
 * program keeps that float sum and rounds it at its optimizer step; for a
 * gradient nothing is added to between the dp sum and that step, rounding
 * the same float now or then is the same one rounding of the same value, so
 * the same bits (a 16-bit dp sum's part is already 16-bit values: moved, not
 * rounded).  Only the parameters summed after the dp sum (summed_after: the
 * tp and tied sums) keep their part as floats, in zero_buf, packed in
 * parameter order, until zero1_store adds those sums and rounds once.  The
 * rest of the arena (other ranks' parts, MPI's sums of them) is read by
 * nothing: the norm, the overflow check and the optimizer read own parts
 * (opt_ranges.c), and the step clears the arena (wf_zero_grads_clear). */

static long shard_at(const wf_program *p, int k, int r) { return p->shards[(long)k * (p->dp + 1) + r]; }

/* the floats of the parts summed after the dp sum that dp rank r owns */
static long float_parts_of(const wf_ctx *c, int r) {
    const wf_program *p = c->p;
    long n = 0;
    for (int j = 0; j < p->n_params; j++) {
        long lo, hi;
        if (!summed_after(c, &p->params[j])) continue;
        wf_zero_own_range(p, j, r, &lo, &hi);
        n += hi - lo;
    }
    return n;
}

/* Every rank allocates the most any dp rank needs: the parts differ when a
 * parameter summed after the dp sum straddles shards, and the memory plan
 * (compiler/memory.c) is one figure a stage.  None when nothing is summed
 * after the dp sum (no sequence parallelism, no tied wte on this stage). */
void wf_grad16_zero1_alloc(wf_ctx *c) {
    long most = 0;
    for (int r = 0; r < c->p->dp; r++) {
        long n = float_parts_of(c, r);
        if (n > most) most = n;
    }
    if (most > 0) c->zero_buf = wf_alloc(c, sizeof(float) * (size_t)most, "ZeRO-1 gradient parts summed after the dp sum (fp32)");
}

/* Parameter k's float part in zero_buf (its elements [own_lo, own_hi)) */
float *wf_grad16_float_part(wf_ctx *c, int k) {
    float *part = c->zero_buf;
    for (int j = 0; j < k; j++)
        if (summed_after(c, &c->p->params[j])) part += c->own_hi[j] - c->own_lo[j];
    return part;
}

/* Bucket k's dp sum done: this rank's part, where the in-place collective
 * left it (wf_zero_part_at: its own part, or the buffer's start), stored at
 * its place in the arena (the staging's floats rounded; 16-bit sums moved:
 * at the start, [0, part) never overlaps rank r >= 1's [r part, (r + 1)
 * part), and rank 0's is in place), and the parts of the parameters summed
 * after the dp sum copied as floats into zero_buf. */
static void zero1_place(wf_ctx *c, int k) {
    const wf_program *p = c->p;
    const wf_bucket *b = &p->buckets[k];
    long n = wf_zero_part(p, k), own = b->offset + shard_at(p, k, c->dp_rank);
    uint16_t *dst = bits_of(c->grads) + own;
    if (direct(p)) {
        const uint16_t *src = bits_of(c->grads) + b->offset + wf_zero_part_at(c, k);
        if (src != dst) wf_backend_copy(c, dst, src, sizeof(uint16_t) * (size_t)n);
    } else {
        wf_backend_to16(c, dst, c->gstage + wf_zero_part_at(c, k), n);
    }
    float *part = c->zero_buf;
    for (int j = 0; j < p->n_params; j++) {
        const wf_param *q = &p->params[j];
        if (!summed_after(c, q)) continue;
        long lo = c->own_lo[j], m = c->own_hi[j] - lo;
        if (q->bucket == k && m > 0) {
            long at = q->offset + lo - own;  /* into this rank's part */
            if (direct(p)) wf_backend_from16(c, part, dst + at, m);
            else wf_backend_copy(c, part, c->gstage + wf_zero_part_at(c, k) + at, sizeof(float) * (size_t)m);
        }
        part += m;
    }
}

/* ZeRO-2: this rank's summed part (where the in-place collective left it,
 * wf_zero_part_at) added into its float
 * shard as the float program added it (a float add of the same values; the
 * staged path's widening and wf_backend_add_floats in one pass, as the
 * direct path has no float buffer to widen into), the buffer zeroed for the
 * next microbatch. */
static void direct_shard_add(wf_ctx *c, int k) {
    const wf_program *p = c->p;
    wf_backend_add16(c, c->grad_shard + c->zero_base[k], bits_of(bucket_grads(c, k)) + wf_zero_part_at(c, k),
                     wf_zero_part(p, k));
    wf_backend_zero(c, bucket_grads(c, k), sizeof(uint16_t) * (size_t)p->buckets[k].numel);
}

static void direct_wait(wf_ctx *c, int k) {
    wf_watch_what(c, WF_GROUP_DP, "bucket %d %s (16-bit)", k, c->p->zero ? "reduce-scatter (ZeRO)" : "all-reduce");
    c->coll->wait(c, &c->bucket_req[k], 1);
    wf_watch_done();
}

/* ZeRO-2's wait on bucket k (zero_grads.c) */
void wf_grad16_bucket_wait(wf_ctx *c, int k) {
    if (!direct(c->p)) {  /* unless a later bucket's start finished it already */
        if (c->g16_inflight == k) wf_grad16_finish(c);
        return;
    }
    direct_wait(c, k);
    direct_shard_add(c, k);
}

/* Bucket k is complete (its last microbatch, or every one under ZeRO-2):
 * its floats into the staging, and its dp sum started there. */
void wf_grad16_bucket_start(wf_ctx *c, int k) {
    const wf_program *p = c->p;
    if (direct(p)) {
        direct_start(c, k);
        return;
    }
    if (!p->zero && deferred(c, k)) return;  /* wf_grad16_step_sums */
    wf_grad16_finish(c);                     /* the staging is free again */
    const wf_bucket *b = &p->buckets[k];
    wf_backend_from16(c, c->gstage, bits_of(bucket_grads(c, k)), b->numel);
    if (p->zero >= 2)  /* its values are staged: the buffer starts over */
        wf_backend_zero(c, bucket_grads(c, k), sizeof(uint16_t) * (size_t)b->numel);
    if (!p->zero)
        c->coll->allreduce(c, WF_GROUP_DP, c->gstage, b->numel, WF_F32, WF_SUM, &c->bucket_req[k]);
    else  /* in place in the staging */
        c->coll->reduce_scatter_parts(c, WF_GROUP_DP, c->gstage, c->gstage, wf_zero_part(p, k), WF_F32,
                                      &c->bucket_req[k]);
    c->g16_inflight = k;
    c->n_inflight = 1;
}

/* The bucket in flight: its sum rounded into the arena (ZeRO-0), this
 * rank's part placed (ZeRO-1, zero1_place), or added into ZeRO-2's float
 * shard. */
void wf_grad16_finish(wf_ctx *c) {
    const wf_program *p = c->p;
    if (direct(p)) {  /* every bucket (ZeRO-2 waited on each already) */
        for (int b = 0; p->zero < 2 && b < p->n_buckets; b++) {
            direct_wait(c, b);
            /* ZeRO-1 places once a step: 2BW finishes twice (its tied wte's
             * exchange, which adds into the float part, then the optimizer),
             * and a second move would copy what the first left at the
             * bucket's start over the placed part */
            if (p->zero == 1 && c->zero_unplaced) zero1_place(c, b);
        }
        c->zero_unplaced = 0;
        c->n_inflight = 0;
        return;
    }
    int k = c->g16_inflight;
    if (k < 0) return;
    wf_watch_what(c, WF_GROUP_DP, "bucket %d %s", k, p->zero ? "reduce-scatter (ZeRO)" : "all-reduce");
    c->coll->wait(c, &c->bucket_req[k], 1);
    wf_watch_done();
    if (!p->zero) wf_backend_to16(c, bits_of(bucket_grads(c, k)), c->gstage, p->buckets[k].numel);
    if (p->zero == 1) zero1_place(c, k);
    if (p->zero >= 2)  /* in place: the part where the collective left it */
        wf_backend_add_floats(c, c->grad_shard + c->zero_base[k], c->gstage + wf_zero_part_at(c, k),
                              wf_zero_part(p, k));
    c->g16_inflight = -1;
}

/* The optimizer step's sums (ZeRO < 2; where the float program ran
 * wf_tp_partial_grads and wf_tied_grads), then each gradient rounded once
 * into the arena where the float program's step rounded it. */
/* ZeRO-1: this rank's parts of the parameters summed after the dp sum,
 * floats until here (zero_buf), summed over tp and (unless 2BW's exchange
 * added it, twobw.c) the tied group, then stored rounded once over what
 * zero1_place rounded early into their places in the arena. */
static void zero1_store(wf_ctx *c, int with_tied) {
    const wf_program *p = c->p;
    float *part = c->zero_buf;
    for (int j = 0; j < p->n_params; j++) {
        const wf_param *q = &p->params[j];
        if (!summed_after(c, q)) continue;
        long n = c->own_hi[j] - c->own_lo[j];
        sums_after(c, q, part, n, with_tied);
        wf_backend_to16(c, bits_of(c->grads) + q->offset + c->own_lo[j], part, n);
        part += n;
    }
}

void wf_grad16_step_sums(wf_ctx *c) {
    const wf_program *p = c->p;
    if (p->zero == 1) {
        zero1_store(c, 1);
        return;
    }
    for (int k = 0; k < p->n_buckets; k++) {
        if (!deferred(c, k)) continue;
        const wf_bucket *b = &p->buckets[k];
        if (p->dp > 1 && !direct(p)) {  /* the whole bucket: its dp sum, then the others, one rounding */
            wf_backend_from16(c, c->gstage, bits_of(c->grads) + b->offset, b->numel);
            /* the bucket's request, as wf_bucket_start's (the same MPI algorithm) */
            c->coll->allreduce(c, WF_GROUP_DP, c->gstage, b->numel, WF_F32, WF_SUM, &c->bucket_req[k]);
            wf_watch_what(c, WF_GROUP_DP, "bucket %d all-reduce", k);
            c->coll->wait(c, &c->bucket_req[k], 1);
            wf_watch_done();
            for (int j = 0; j < p->n_params; j++)
                if (p->params[j].bucket == k)
                    sums_after(c, &p->params[j], c->gstage + (p->params[j].offset - b->offset), p->params[j].numel, 1);
            wf_backend_to16(c, bits_of(c->grads) + b->offset, c->gstage, b->numel);
            continue;
        }
        /* dp 1, or the dp sum done in 16 bits: parameter by parameter */
        for (int j = 0; j < p->n_params; j++) {
            const wf_param *q = &p->params[j];
            if (q->bucket != k || !(tp_sum(c, q) || tied_sum(c, q))) continue;
            wf_backend_from16(c, c->gstage, bits_of(c->grads) + q->offset, q->numel);
            sums_after(c, q, c->gstage, q->numel, 1);
            wf_backend_to16(c, bits_of(c->grads) + q->offset, c->gstage, q->numel);
        }
    }
}

/* ---- PipeDream-2BW (twobw.c) --------------------------------------- */

/* 2BW over dp with fp32 dp sums: a bucket summed after its dp sum (the
 * tied wte's, or one with tp sums; deferred by wf_grad16_bucket_start) is
 * summed in the staging and kept there in floats, unrounded as the float
 * program kept it, through the tied wte's exchange and the tp sums, then
 * rounded once (bucket_staged, bucket_store). */
static int staged_2bw(const wf_program *p) { return p->dp > 1 && !direct(p); }
int wf_grad16_2bw_staged(const wf_ctx *c) { return staged_2bw(c->p); }

static int holds_tied(const wf_ctx *c, int k) {
    for (int j = 0; j < c->p->n_params; j++)
        if (c->p->params[j].bucket == k && tied_sum(c, &c->p->params[j])) return 1;
    return 0;
}

static void bucket_staged(wf_ctx *c, int k) {
    const wf_bucket *b = &c->p->buckets[k];
    wf_backend_from16(c, c->gstage, bits_of(c->grads) + b->offset, b->numel);
    c->coll->allreduce(c, WF_GROUP_DP, c->gstage, b->numel, WF_F32, WF_SUM, &c->bucket_req[k]);
    wf_watch_what(c, WF_GROUP_DP, "bucket %d all-reduce", k);
    c->coll->wait(c, &c->bucket_req[k], 1);
    wf_watch_done();
}

/* the bucket's tp sums in the staging (never its tied sum: 2BW sends that
 * itself), then the whole bucket rounded into the arena */
static void bucket_store(wf_ctx *c, int k) {
    const wf_program *p = c->p;
    const wf_bucket *b = &p->buckets[k];
    for (int j = 0; j < p->n_params; j++) {
        const wf_param *q = &p->params[j];
        if (q->bucket != k || !tp_sum(c, q)) continue;
        wf_backend_sync(c);  /* host MPI reads the staging the device summed into */
        wf_watch_what(c, WF_GROUP_TP, "sequence-parallel gradient all-reduce of %s", q->name);
        WF_MPI(c, MPI_Allreduce(MPI_IN_PLACE, c->gstage + (q->offset - b->offset), (int)q->numel, MPI_FLOAT, MPI_SUM,
                                c->group_comm[WF_GROUP_TP]));
        wf_watch_done();
    }
    wf_backend_to16(c, bits_of(c->grads) + b->offset, c->gstage, b->numel);
}

/* The tied wte q's gradient as floats for 2BW's exchange: after its dp sum
 * (dp > 1: its bucket's, in the staging, until wf_grad16_tied_done) */
float *wf_grad16_tied_grad(wf_ctx *c, const wf_param *q) {
    if (!staged_2bw(c->p)) {
        wf_grad16_widened(c, c->tied_buf, q->offset, q->numel);
        return c->tied_buf;
    }
    bucket_staged(c, q->bucket);
    return c->gstage + (q->offset - c->p->buckets[q->bucket].offset);
}

/* The exchange done: the gradient (g, from wf_grad16_tied_grad) stored
 * rounded once, with its bucket's tp sums at dp > 1 */
void wf_grad16_tied_done(wf_ctx *c, const wf_param *q, const float *g) {
    if (staged_2bw(c->p)) bucket_store(c, q->bucket);
    else wf_backend_to16(c, bits_of(c->grads) + q->offset, g, q->numel);
}

/* The tp sums only (2BW sends the tied wte's gradient itself; over dp with
 * fp32 dp sums, the buckets with tp sums and no tied wte are summed here,
 * the tied wte's by the exchange). */
void wf_grad16_tp_sums(wf_ctx *c) {
    const wf_program *p = c->p;
    if (p->zero == 1) {  /* the tied shard's exchange added into zero_buf already (twobw.c) */
        zero1_store(c, 0);
        return;
    }
    if (staged_2bw(p)) {
        for (int k = 0; k < p->n_buckets; k++)
            if (deferred(c, k) && !holds_tied(c, k)) {
                bucket_staged(c, k);
                bucket_store(c, k);
            }
        return;
    }
    for (int j = 0; j < p->n_params; j++) {
        const wf_param *q = &p->params[j];
        if (q->bucket < 0 || !tp_sum(c, q)) continue;
        wf_backend_from16(c, c->gstage, bits_of(c->grads) + q->offset, q->numel);
        sums_after(c, q, c->gstage, q->numel, 1);
        wf_backend_to16(c, bits_of(c->grads) + q->offset, c->gstage, q->numel);
    }
}

/* dst = the n gradients at off, as floats */
void wf_grad16_widened(wf_ctx *c, float *dst, long off, long n) {
    wf_backend_from16(c, dst, bits_of(c->grads) + off, n);
}

/* the n gradients at off += src, rounded once (the float program's add,
 * then its optimizer step's rounding; 2BW's tied wte), on the device */
void wf_grad16_add(wf_ctx *c, long off, const float *src, long n) {
    wf_backend_add_into16(c, bits_of(c->grads) + off, src, n);
}

/* ---- what the optimizer step reads (ZeRO < 2: the arena's bits) ------------ */

double wf_grad16_sumsq(wf_ctx *c) { return wf_backend_sumsq16(c, &c->ranges, c->grads, c->p->precision); }

int wf_grad16_nonfinite(wf_ctx *c) { return wf_backend_nonfinite16(c, &c->ranges, c->grads, c->p->precision); }
