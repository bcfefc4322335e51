/* step.c: the calls the generated step function is made of (microbatch
 * loading, bucket all-reduces, the optimizer step), the arena accessors, and
 * error handling. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* ---- errors ------------------------------------------------------------- */

void wf_fatal(const wf_ctx *c, const char *call, const char *where, const char *fmt, ...) {
    /* one write per message, so that lines from ranks failing together do not
     * interleave */
    char msg[2048];
    int k = snprintf(msg, sizeof msg, "weft: rank %d: %s failed (%s): ", c ? c->rank : -1, call, where);
    va_list ap;
    va_start(ap, fmt);
    if (k > 0 && k < (int)sizeof msg) k += vsnprintf(msg + k, sizeof msg - (size_t)k, fmt, ap);
    va_end(ap);
    if (k > (int)sizeof msg - 2) k = (int)sizeof msg - 2;
    msg[k++] = '\n';
    if (write(STDERR_FILENO, msg, (size_t)k) < 0) { /* nothing left to report to */ }
    int up = 0;
    MPI_Initialized(&up);
    if (up) MPI_Abort(MPI_COMM_WORLD, 1);  /* no peer is left waiting */
    exit(1);
}

void wf_mpi_fatal(const wf_ctx *c, const char *call, const char *where, int rc) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    wf_fatal(c, call, where, "%s", msg);
}

/* One process is one rank: a plain counter (metrics.c reads it around setup). */
static size_t alloc_total;

size_t wf_alloc_total(void) { return alloc_total; }

static void *arena(const wf_ctx *c, size_t bytes, const char *what, void *(*get)(const wf_ctx *, size_t),
                   const char *call, int on_device) {
    void *q = NULL;
    if (bytes == 0) bytes = 64;
    if (!(q = get(c, bytes)))
        wf_fatal(c, call, WF_WHERE, "cannot allocate %.1f MiB for %s", (double)bytes / 1048576.0, what);
    if (on_device) {
        /* zeroed where the kernels run: a host memset would first place every
         * page of CUDA's managed arenas (activations: tens of GiB) on the
         * host, for the first step to fault them all back; the host waits,
         * since host code may write the arena next (initialization) */
        wf_backend_zero((wf_ctx *)c, q, bytes);
        wf_backend_sync((wf_ctx *)c);
    } else {
        memset(q, 0, bytes);
    }
    alloc_total += bytes;
    return q;
}

/* host memory, or CUDA managed memory */
void *wf_alloc(const wf_ctx *c, size_t bytes, const char *what) {
    return arena(c, bytes, what, wf_backend_alloc, "wf_backend_alloc", 1);
}

/* offloaded state: host memory on every backend (CUDA: pinned) */
void *wf_alloc_host_arena(const wf_ctx *c, size_t bytes, const char *what) {
    return arena(c, bytes, what, wf_backend_alloc_host, "wf_backend_alloc_host", 0);
}

/* Host-only temporaries (checkpoint assembly, traces), released with free():
 * never the backend's device-visible memory. */
void *wf_host_alloc(const wf_ctx *c, size_t bytes, const char *what) {
    void *q = calloc(1, bytes ? bytes : 64);
    if (!q)
        wf_fatal(c, "calloc", WF_WHERE, "cannot allocate %.1f MiB for %s", (double)bytes / 1048576.0, what);
    return q;
}

/* ---- arenas ------------------------------------------------------------- */

float *wf_param_ptr(wf_ctx *c, long off) { return c->params + off; }
float *wf_grad_ptr(wf_ctx *c, long off) { return c->grads + off; }
float *wf_act_ptr(wf_ctx *c, long off) { return c->acts + off; }
float *wf_dact_ptr(wf_ctx *c, long off) { return c->dacts + off; }
float *wf_scratch(wf_ctx *c) { return c->scratch; }
const int32_t *wf_tokens(wf_ctx *c) { return wf_tokens_of(c, c->micro_index); }
const int32_t *wf_targets(wf_ctx *c) { return wf_targets_of(c, c->micro_index); }
const int32_t *wf_tokens_of(wf_ctx *c, int m) { return c->tokens + (long)m * c->p->micro * c->p->seq; }
const int32_t *wf_targets_of(wf_ctx *c, int m) { return c->targets + (long)m * c->p->micro * c->p->seq; }
float wf_loss_scale(wf_ctx *c) {
    /* a VLM: its microbatch's batch's (batch_vlm.c; two batches under 2BW) */
    float scale = c->vlm ? c->vlm_scale[c->micro_index / c->p->accum] : c->loss_scale;
    if (c->p->precision == WF_FP16) return (float)(scale * c->scaler.scale);
    return scale;
}
float *wf_losses(wf_ctx *c) { return c->losses; }
void wf_add_loss(wf_ctx *c, double loss_sum) {
    c->loss_sum += loss_sum;
    if (c->vlm) wf_vlm_add_losses(c);
}

/* ---- microbatches --------------------------------------------------------- */

/* Global sample index of row j of microbatch m on this rank: a pure function of
 * (step, m, dp rank, j), so every layout reads the same global batch. */
static void load_micro(wf_ctx *c, int m) {
    const wf_program *p = c->p;
    char err[512];
    uint64_t base = (uint64_t)c->step * (uint64_t)p->global_batch
                  + ((uint64_t)m * p->dp + (uint64_t)c->dp_rank) * (uint64_t)p->micro;
    int32_t *tok = c->tokens + (long)m * p->micro * p->seq;
    int32_t *tgt = c->targets + (long)m * p->micro * p->seq;
    wf_backend_host_write(c);
    if (p->image_positions > 0) {  /* a VLM: images and masked targets (batch_vlm.c) */
        wf_vlm_batch_load(c, m, c->step, base);
        return;
    }
    for (int j = 0; j < p->micro; j++) {
        if (wf_data_sample(c->data, p->seed, base + (uint64_t)j, tok + (long)j * p->seq,
                           tgt + (long)j * p->seq, err, sizeof err) != 0)
            wf_fatal(c, "wf_data_sample", WF_WHERE, "%s", err);
    }
}

/* A captured step (CUDA graph) loads nothing itself: wf_load_step did before
 * the replay, into the same buffers. */
void wf_load_step(wf_ctx *c) {
    if (c->p->prologue) {  /* 2BW: the step's frame and the next batch */
        wf_2bw_load_step(c);
        return;
    }
    for (int m = 0; m < c->p->accum; m++) load_micro(c, m);
}

void wf_micro_begin(wf_ctx *c, int m) {
    wf_prof(c, WF_PROF_OTHER);
    c->micro_index = m;
    if (!c->graph_capture) load_micro(c, m);
}

void wf_use_micro(wf_ctx *c, int m) {
    if (c->p->prologue) wf_2bw_use_micro(c, m);
    else c->micro_index = m;
}

void wf_step_begin(wf_ctx *c) {
    wf_prof(c, WF_PROF_OTHER);
    if (c->p->prologue) {
        wf_2bw_step_begin(c);
        return;
    }
    if (!c->graph_capture) wf_load_step(c);
}

/* Zeroes an activation-gradient set (the generated backward zeroes each
 * gradient before its first use instead, memory_grads.c). */
void wf_slot_begin(wf_ctx *c, int slot) {
    wf_backend_zero(c, wf_dact_slot(c, slot), sizeof(float) * (size_t)c->p->dact_numel);
}

float *wf_act_slot(wf_ctx *c, int slot) { return c->acts + (long)slot * c->p->act_numel; }
float *wf_act_region(wf_ctx *c) {
    return c->acts + (long)(c->p->slots > 0 ? c->p->slots : 1) * c->p->act_numel;
}
/* activation-gradient set `slot` (sets are not activation slots: emit_step.c's dslot) */
float *wf_dact_slot(wf_ctx *c, int slot) { return c->dacts + (long)slot * c->p->dact_numel; }

/* ---- gradient buckets ------------------------------------------------------ */

void wf_bucket_start(wf_ctx *c, int k) {
    const wf_program *p = c->p;
    if (p->dp == 1) return;
    if (p->grad16) {  /* through float staging (grad16.c) */
        wf_grad16_bucket_start(c, k);
        return;
    }
    if (p->zero) {
        wf_zero_bucket_start(c, k);
        c->n_inflight++;
        return;
    }
    const wf_bucket *b = &p->buckets[k];
    if (p->dp_comm16) {  /* dp_comm.c */
        wf_dp16_pack(c, c->grads + b->offset, b->numel);
        c->dp16_packed = 1;
        c->coll->allreduce(c, WF_GROUP_DP, c->grads + b->offset, b->numel, wf_dp16_type(c), WF_SUM,
                           &c->bucket_req[k]);
    } else {
        c->coll->allreduce(c, WF_GROUP_DP, c->grads + b->offset, b->numel, WF_F32, WF_SUM, &c->bucket_req[k]);
    }
    c->n_inflight++;
}

/* Non-blocking collectives in Open MPI advance only inside MPI calls: poke
 * them between backward kernels so they overlap compute (NCCL needs none). */
void wf_progress(wf_ctx *c) {
    if (c->n_inflight == 0 && c->p->zero < 3) return;
    if (c->coll->test(c, c->bucket_req, c->p->n_buckets)) c->n_inflight = 0;
    if (c->p->zero >= 3)  /* parameter all-gathers in flight */
        c->coll->test(c, c->gather_req, c->p->n_buckets);
}

void wf_buckets_wait(wf_ctx *c) {
    if (c->p->grad16) {  /* one bucket at most in flight (16-bit dp sums: all); ZeRO-1's shards stored by the step */
        wf_grad16_finish(c);
        c->n_inflight = 0;
        return;
    }
    if (c->n_inflight == 0 && c->p->dp == 1) return;
    /* one bucket at a time, so that the watchdog can name the one it waits on */
    for (int k = 0; k < c->p->n_buckets; k++) {
        wf_watch_what(c, WF_GROUP_DP, "bucket %d %s", k, c->p->zero ? "reduce-scatter (ZeRO)" : "all-reduce");
        c->coll->wait(c, &c->bucket_req[k], 1);
        /* every bucket started this step, once: 2BW waits twice a step (its
         * tied wte's exchange, then the optimizer), and a second unpack
         * read the floats as 16-bit pairs (gradient norms near 1e37) */
        if (c->dp16_packed)
            wf_dp16_unpack(c, c->grads + c->p->buckets[k].offset, c->p->buckets[k].numel);
    }
    c->dp16_packed = 0;
    wf_watch_done();
    c->n_inflight = 0;
    wf_zero_after_reduce(c);
}

/* ---- optimizer step ------------------------------------------------------ */

void wf_optimizer_step(wf_ctx *c) {
    const wf_program *p = c->p;
    wf_prof(c, WF_PROF_OPTIMIZER);
    if (p->prologue) { /* 2BW without flush: nothing here may wait on another stage */
        wf_2bw_optimizer_step(c);
        return;
    }
    /* A CUDA graph captures the step up to here; cuda/graph.c runs this
     * host-side optimizer after each replay. */
    if (c->graph_capture) return;
    wf_backend_sync(c);  /* the host reads the gradients from here on */
    /* nonzero on the last pipeline stage only */
    /* the loss, and a VLM's descriptive positions' loss and count */
    double sums[3] = { c->loss_sum + wf_backend_loss_take(c), c->desc_loss_sum, c->desc_count };
    int n_sums = c->vlm ? 3 : 1;
    wf_watch_what(c, WF_GROUP_DP, "loss all-reduce");
    if (p->dp > 1)
        WF_MPI(c, MPI_Allreduce(MPI_IN_PLACE, sums, n_sums, MPI_DOUBLE, MPI_SUM, c->group_comm[WF_GROUP_DP]));
    wf_watch_what(c, WF_GROUP_PP, "loss all-reduce");
    if (p->pp > 1)
        WF_MPI(c, MPI_Allreduce(MPI_IN_PLACE, sums, n_sums, MPI_DOUBLE, MPI_SUM, c->group_comm[WF_GROUP_PP]));
    wf_watch_done();
    double loss = sums[0];
    /* a VLM: the mean over the loss positions of the global batch (batch_vlm.c) */
    double positions = c->vlm ? (c->step_loss_positions > 0 ? c->step_loss_positions : 1)
                              : (double)p->global_batch * p->seq;
    c->last_loss = loss / positions;
    c->last_desc_loss = sums[2] > 0 ? sums[1] / sums[2] : NAN;
    c->loss_sum = c->desc_loss_sum = c->desc_count = 0;
    if (!isfinite(c->last_loss))
        wf_fatal(c, "wf_optimizer_step", WF_WHERE, "loss is %g at step %ld (diverged)",
                 c->last_loss, c->step + 1);

    if (p->grad16 && p->zero < 2) {  /* the same sums on floats, rounded into 16 bits (grad16.c) */
        wf_grad16_step_sums(c);
    } else {
        wf_tp_partial_grads(c);
        wf_tied_grads(c);
    }
    wf_backend_sync(c);  /* NCCL: the tied sum ran on a comm stream */
    c->last_lr = wf_lr_at(p, c->step - c->scaler.skipped);
    if (p->precision != WF_FP32 && !p->grad_accum32) {  /* the reduced gradients, stored in 16 bits */
        if (p->zero >= 2) wf_backend_round_copy(c, p->precision, c->grad_shard, c->grad_shard, c->moment_numel);
        else if (!p->grad16) wf_backend_round_copy(c, p->precision, c->grads, c->grads, p->grad_numel);
    }
    float unscale = 1.0f;  /* fp16: divides the loss scale out, before clipping */
    if (p->precision == WF_FP16) {
        c->scaler.used = c->scaler.scale;
        unscale = (float)(1.0 / c->scaler.used);
        int overflow = wf_grads_overflow(c);  /* agreed on by every rank */
        wf_scaler_update(c, overflow);
        if (overflow) {  /* skip the step: weights and moments stay as they are */
            c->last_norm = INFINITY;
            wf_zero_grads_clear(c);
            c->step++;
            return;
        }
    }
    double norm = wf_grad_norm(c) * unscale;
    float clip_scale = 1.0f;
    if (p->clip > 0 && norm > p->clip) clip_scale = (float)(p->clip / (norm + 1e-6));
    c->last_norm = norm;
    wf_adamw(c, c->last_lr, clip_scale * unscale);
    /* ZeRO-1/2: every rank updated its shards of the version the step wrote;
     * under 2BW's weight delay that is the newest (next_params), and the one
     * computed with next (params) was just copied whole from it (wf_adamw) */
    wf_zero_gather_version(c, p->weight_delay ? c->next_params : c->params);
    wf_zero_grads_clear(c);
    c->step++;
}
