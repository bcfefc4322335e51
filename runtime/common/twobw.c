/* twobw.c: PipeDream-2BW without a pipeline flush (pp > 1).
 *
 * Two weight versions per stage: batch b computes (forward and backward) on
 * wver[b % 2].  The stage's OPTIM after batch b's last backward writes
 * V(b+2) = V(b+1) - lr * update(grad of b) into wver[b % 2], which batch b no
 * longer needs: the same numbers as the single-rank delayed update in optim.c.
 * Under ZeRO-3 a version is this rank's parameter shard: wf_2bw_use_micro
 * points param_shard at the batch's, which the chunk's gathers then read
 * (every gather is started and waited inside one chunk function, after its
 * wf_use_micro), and OPTIM copies and updates shards.
 * The step functions name microbatches in a frame (rt.h); frame_base maps them
 * to real batches for the whole call, fixed when the call begins.
 *
 * No collective spans the stages inside a step: the tied wte travels by
 * point-to-point messages the compiler placed in the verified lists, and the
 * logged loss and gradient norm are one non-blocking all-reduce per step,
 * started at OPTIM and completed at the next one (or when the pipeline drains),
 * so a step's metrics line is written one step late, in order.
 *
 * On CUDA those are host MPI on device (managed) memory, with comm = "nccl"
 * as well, beside stage sends and dp reductions on NCCL's streams.  Each call
 * below that reads or writes device data from the host calls wf_backend_sync
 * first, which joins every comm stream into the compute stream and waits for
 * it: the host reads finished results and overwrites nothing a kernel or an
 * NCCL operation still reads; what it writes (the tied sum, the received tied
 * weights, the next batch's tokens) is in place before the operations issued
 * after it.  A version's tied weights are sent from wver itself: the next
 * writer of that version (its OPTIM) waits for the send first.  An NCCL stage
 * send completes at the next such wait, later than a host-staged MPI_Send; the
 * verifier's rendezvous semantics (verify.c) let a send block where it is
 * issued, so no rank waits earlier than the verified order allows.
 * Under 16-bit gradients (grad16.c) the tied gradient's widening, its sums
 * and its rounding back run on the device in stream order (wf_backend_from16,
 * wf_backend_add_floats, wf_backend_add_into16), into and out of tied_buf;
 * the send waits for them before MPI reads it.  tied_buf is an arena
 * (wf_alloc: managed memory on CUDA), which host MPI reads and writes in
 * place after that wait, as every host-MPI path of the runtime does
 * (coll_mpi.c), so there is no device-to-host copy to make: the wait is
 * what a device's copy would need.  The CUDA emulator runs kernels at the
 * host's next wait (WF_EMU_ASYNC=1), so without it the message is stale
 * (tests/e2e/cuda_emu_run.sh's bf16_2bw_nccl). */
#include <math.h>
#include <string.h>

#include "internal.h"

enum { TAG_TIED_GRAD = 1, TAG_TIED_WEIGHT = 2 }; /* on the tied group: stage 0 is 0, the last 1 */

/* ---- a step under CUDA graph capture (cuda/graph.c) -------------------------
 * Each step ends with host work: the tied wte's exchange and the optimizer.
 * While a step is captured those calls are recorded, not run, and
 * wf_2bw_run_tail runs them after each replay of that graph, in order.  That
 * moves them after the whole step, so no kernel may follow them in the step
 * (wf_2bw_use_micro checks: the verified lists end with them). */
enum tail_call { TAIL_SEND_GRAD, TAIL_RECV_GRAD, TAIL_SEND_WEIGHTS, TAIL_RECV_WEIGHTS, TAIL_OPTIM };
enum { TAIL_MAX = 8 };
static struct {
    int n;
    struct { enum tail_call call; int m; } calls[TAIL_MAX];
} tails[2];  /* per graph: the step's parity */

static int deferred(wf_ctx *c, enum tail_call call, int m) {
    if (!c->graph_capture) return 0;
    int k = (int)(c->step % 2);
    if (tails[k].n == TAIL_MAX)
        wf_fatal(c, "wf_2bw_tail", WF_WHERE, "more than %d tied-wte and optimizer calls in a captured step", TAIL_MAX);
    tails[k].calls[tails[k].n].call = call;
    tails[k].calls[tails[k].n].m = m;
    tails[k].n++;
    return 1;
}

void wf_2bw_capture_begin(wf_ctx *c) { tails[c->step % 2].n = 0; }

void wf_2bw_setup(wf_ctx *c) {
    const wf_program *p = c->p;
    /* params: the version of the next batch (step), next_params the one after
     * (ZeRO-3: the versions are this rank's shards, gathered when used) */
    c->wver[c->step % 2] = p->zero >= 3 ? c->param_shard : c->params;
    c->wver[(c->step + 1) % 2] = p->zero >= 3 ? c->next_shard : c->next_params;
    c->tied_grad_req = c->tied_w_req[0] = c->tied_w_req[1] = MPI_REQUEST_NULL;
    c->metrics_req = MPI_REQUEST_NULL;
    c->metrics_step = -1;
    long most = 0;
    for (int k = 0; k < p->n_params; k++)
        if (p->params[k].tied && p->params[k].numel > most) most = p->params[k].numel;
    c->tied_buf = wf_alloc(c, sizeof(float) * (size_t)(most ? most : 1), "PipeDream-2BW tied wte gradient");
}

static int tied_param(const wf_ctx *c) {
    for (int k = 0; k < c->p->n_params; k++)
        if (c->p->params[k].tied) return k;
    wf_fatal(c, "wf_tied", WF_WHERE, "stage %d has no tied wte, but its schedule exchanges one", c->stage);
}

static int count(const wf_ctx *c, long n, const char *call) {
    if (n > 2147483647L) wf_fatal(c, call, WF_WHERE, "%ld floats exceed MPI's int count", n);
    return (int)n;
}

/* ---- batches and microbatches ---------------------------------------------- */

static long real_batch(const wf_ctx *c, int m) { return c->frame_base + m / c->p->accum; }

int wf_2bw_real_micro(const wf_ctx *c, int m) {
    return (int)(real_batch(c, m) * c->p->accum + m % c->p->accum);
}

/* Batch r's microbatches into the token buffers of its parity. */
static void load_batch(wf_ctx *c, long r) {
    const wf_program *p = c->p;
    char err[512];
    wf_backend_host_write(c);
    for (int m = 0; m < p->accum; m++) {
        uint64_t base = (uint64_t)r * (uint64_t)p->global_batch
                      + ((uint64_t)m * p->dp + (uint64_t)c->dp_rank) * (uint64_t)p->micro;
        long at = ((r % 2) * p->accum + m) * (long)p->micro * p->seq;
        if (p->image_positions > 0) {  /* a VLM: images and masked targets (batch_vlm.c) */
            wf_vlm_batch_load(c, (int)((r % 2) * p->accum + m), r, base);
            continue;
        }
        for (int j = 0; j < p->micro; j++)
            if (wf_data_sample(c->data, p->seed, base + (uint64_t)j, c->tokens + at + (long)j * p->seq,
                               c->targets + at + (long)j * p->seq, err, sizeof err) != 0)
                wf_fatal(c, "wf_data_sample", WF_WHERE, "%s", err);
    }
}

/* Every call's frame: batch 1 is the batch being finished (c->step). */
void wf_prologue_begin(wf_ctx *c) {
    c->frame_base = c->step - 1;
    load_batch(c, c->step);
}

/* The step's frame, and the next batch, whose first forwards run in this
 * step: from wf_2bw_step_begin, or before a captured step's replay. */
void wf_2bw_load_step(wf_ctx *c) {
    c->frame_base = c->step - 1;
    load_batch(c, c->step + 1);
}

void wf_2bw_step_begin(wf_ctx *c) {
    if (c->graph_capture) c->frame_base = c->step - 1;  /* graph.c loaded the batch */
    else wf_2bw_load_step(c);
}

void wf_epilogue_begin(wf_ctx *c) { c->frame_base = c->step - 1; }

void wf_2bw_use_micro(wf_ctx *c, int m) {
    if (c->graph_capture && tails[c->step % 2].n > 0)
        wf_fatal(c, "wf_2bw_use_micro", WF_WHERE, "microbatch %d computes after the step's tied-wte exchange "
                 "or optimizer, which a CUDA graph runs after the replay (run with --no-graph, and report "
                 "this plan)", m);
    long r = real_batch(c, m);
    c->micro_index = (int)((r % 2) * c->p->accum + m % c->p->accum);
    /* ZeRO-3: the chunk's gathers (started after this call) read the shard */
    if (c->p->zero >= 3) c->param_shard = c->wver[r % 2];
    else c->params = c->wver[r % 2];
}

/* ---- the tied wte -------------------------------------------------------- */

/* Under ZeRO-2, and ZeRO-1 with 16-bit gradients, this rank's reduced tied
 * gradient is a part in floats (ZeRO-2's shard; ZeRO-1's float parts,
 * grad16.c): elements [own_lo, own_hi) of the parameter, at the returned
 * pointer plus own_lo.  Only that part travels and is added: the tied wte is
 * alone in its bucket (compiler/buckets.c), so its shards are the same on
 * both ends of the tied group.  NULL where the whole gradient lies in the
 * float arena (no ZeRO; ZeRO-1's shard placed there). */
static float *tied_shard(wf_ctx *c, int k) {
    const wf_program *p = c->p;
    if (p->zero >= 2) return wf_own_grad(c, k);
    if (p->zero == 1 && p->grad16) return wf_grad16_float_part(c, k) - c->own_lo[k];
    return NULL;
}

void wf_tied_send_grad(wf_ctx *c) {
    if (deferred(c, TAIL_SEND_GRAD, 0)) return;
    int k = tied_param(c);
    const wf_param *q = &c->p->params[k];
    if (q->bucket < 0) return;  /* frozen: no gradient (both copies are) */
    wf_buckets_wait(c);  /* its dp reduction first */
    wf_backend_sync(c);  /* host MPI and copies on the arenas below */
    wf_watch_what(c, WF_GROUP_TIED, "send tied wte gradient to stage 0");
    WF_MPI(c, MPI_Wait(&c->tied_grad_req, MPI_STATUS_IGNORE));
    wf_watch_done();
    float *shard = tied_shard(c, k);
    if (shard) {  /* this rank's float shard only */
        long lo = c->own_lo[k], n = c->own_hi[k] - lo;
        wf_backend_copy(c, c->tied_buf, shard + lo, sizeof(float) * (size_t)n);
        wf_backend_sync(c);  /* MPI reads tied_buf from the host */
        WF_MPI(c, MPI_Isend(c->tied_buf, count(c, n, "MPI_Isend"), MPI_FLOAT, 0, TAG_TIED_GRAD,
                            c->group_comm[WF_GROUP_TIED], &c->tied_grad_req));
        return;
    }
    if (c->p->grad16) {  /* 16-bit gradients (grad16.c): the floats after the dp sum, widened on the device */
        float *g = wf_grad16_tied_grad(c, q);
        if (g != c->tied_buf) wf_backend_copy(c, c->tied_buf, g, sizeof(float) * (size_t)q->numel);
        wf_grad16_tied_done(c, q, g);
        wf_backend_sync(c);  /* MPI reads tied_buf from the host: the kernels above first */
    } else {
        memcpy(c->tied_buf, c->grads + q->offset, sizeof(float) * (size_t)q->numel);
    }
    WF_MPI(c, MPI_Isend(c->tied_buf, count(c, q->numel, "MPI_Isend"), MPI_FLOAT, 0, TAG_TIED_GRAD,
                        c->group_comm[WF_GROUP_TIED], &c->tied_grad_req));
}

/* The sum is the tied all-reduce of the synchronous schedules: a + b. */
void wf_tied_recv_grad(wf_ctx *c) {
    if (deferred(c, TAIL_RECV_GRAD, 0)) return;
    int k = tied_param(c);
    const wf_param *q = &c->p->params[k];
    if (q->bucket < 0) return;  /* frozen: no gradient (both copies are) */
    wf_buckets_wait(c);
    wf_backend_sync(c);
    float *shard = tied_shard(c, k);
    if (shard) {  /* the float shards' sum, rounded with the others by the optimizer step */
        long lo = c->own_lo[k], n = c->own_hi[k] - lo;
        wf_watch_what(c, WF_GROUP_TIED, "recv tied wte gradient shard from the last stage");
        WF_MPI(c, MPI_Recv(c->tied_buf, count(c, n, "MPI_Recv"), MPI_FLOAT, 1, TAG_TIED_GRAD,
                           c->group_comm[WF_GROUP_TIED], MPI_STATUS_IGNORE));
        wf_watch_done();
        wf_backend_add_floats(c, shard + lo, c->tied_buf, n);
        return;
    }
    wf_watch_what(c, WF_GROUP_TIED, "recv tied wte gradient from the last stage");
    WF_MPI(c, MPI_Recv(c->tied_buf, count(c, q->numel, "MPI_Recv"), MPI_FLOAT, 1, TAG_TIED_GRAD,
                       c->group_comm[WF_GROUP_TIED], MPI_STATUS_IGNORE));
    wf_watch_done();
    if (c->p->grad16) {  /* the same sum on the floats after the dp sum, rounded once (grad16.c), on the device */
        if (!wf_grad16_2bw_staged(c)) {  /* dp 1 or 16-bit dp sums: the stored values */
            wf_grad16_add(c, q->offset, c->tied_buf, q->numel);
            return;
        }
        float *g = wf_grad16_tied_grad(c, q);
        wf_backend_add_floats(c, g, c->tied_buf, q->numel);
        wf_grad16_tied_done(c, q, g);
        return;
    }
    float *g = c->grads + q->offset;
    for (long i = 0; i < q->numel; i++) g[i] += c->tied_buf[i];
}

/* Where version v's tied wte lies, and how many values travel: the whole
 * tensor, or under ZeRO-3 this rank's part of it in the version's shard (the
 * tied wte is alone in its bucket, so both ends shard it alike). */
static void *tied_weights(wf_ctx *c, float *v, long *n) {
    int k = tied_param(c);
    const wf_param *q = &c->p->params[k];
    long at = c->p->zero >= 3 ? c->moment_base[k] : q->offset;
    *n = c->p->zero >= 3 ? c->own_hi[k] - c->own_lo[k] : q->numel;
    return c->p->param16 ? wf_params16_at(v, at) : (void *)(v + at);
}

void wf_tied_send_weights(wf_ctx *c, int m) {
    if (deferred(c, TAIL_SEND_WEIGHTS, m)) return;
    long r = real_batch(c, m), n;
    wf_backend_sync(c);
    wf_watch_what(c, WF_GROUP_TIED, "send tied wte weights to the last stage");
    WF_MPI(c, MPI_Wait(&c->tied_w_req[r % 2], MPI_STATUS_IGNORE));
    wf_watch_done();
    /* param16: the version holds 16-bit values, sent as they are */
    int p16 = c->p->param16;
    void *at = tied_weights(c, c->wver[r % 2], &n);
    WF_MPI(c, MPI_Isend(at, count(c, n, "MPI_Isend"), p16 ? MPI_UINT16_T : MPI_FLOAT, 1,
                        TAG_TIED_WEIGHT, c->group_comm[WF_GROUP_TIED], &c->tied_w_req[r % 2]));
}

void wf_tied_recv_weights(wf_ctx *c, int m) {
    if (deferred(c, TAIL_RECV_WEIGHTS, m)) return;
    long r = real_batch(c, m), n;
    wf_backend_sync(c);  /* kernels may still read this version */
    wf_watch_what(c, WF_GROUP_TIED, "recv tied wte weights from stage 0");
    int p16 = c->p->param16;
    void *at = tied_weights(c, c->wver[r % 2], &n);
    WF_MPI(c, MPI_Recv(at, count(c, n, "MPI_Recv"), p16 ? MPI_UINT16_T : MPI_FLOAT, 0,
                       TAG_TIED_WEIGHT, c->group_comm[WF_GROUP_TIED], MPI_STATUS_IGNORE));
    wf_watch_done();
    wf_params_changed(c);
}

/* ---- metrics, one step late ------------------------------------------------ */

static void complete_metrics(wf_ctx *c) {
    if (c->metrics_step < 0) return;
    const wf_program *p = c->p;
    wf_watch_what(c, -1, "step metrics all-reduce (over all ranks)");
    WF_MPI(c, MPI_Wait(&c->metrics_req, MPI_STATUS_IGNORE));
    wf_watch_done();
    /* a VLM: the mean over its loss positions (batch_vlm.c) */
    double loss = c->metrics_sum[0] / (c->vlm ? (c->metrics_positions > 0 ? c->metrics_positions : 1)
                                              : (double)p->global_batch * p->seq);
    if (!isfinite(loss))
        wf_fatal(c, "wf_optimizer_step", WF_WHERE, "loss is %g at step %ld (diverged)", loss,
                 c->metrics_step + 1);
    c->ready[c->n_ready].step = c->metrics_step + 1;  /* logged as steps completed */
    c->ready[c->n_ready].loss = loss;
    c->ready[c->n_ready].lr = c->metrics_lr;
    c->ready[c->n_ready].norm = sqrt(c->metrics_sum[1]);
    c->ready[c->n_ready].desc = c->metrics_sum[3] > 0 ? c->metrics_sum[2] / c->metrics_sum[3] : NAN;
    c->n_ready++;
    c->metrics_step = -1;
}

/* This rank's share: the loss counted by tp rank 0 (every tp rank holds it
 * whole), the squared norm by dp rank 0 (replicas hold the same reduced
 * gradient; under ZeRO by every rank, each its own shards), so one sum
 * over all ranks gives both. */
static void start_metrics(wf_ctx *c, double lr) {
    double sum = wf_local_grad_sq(c);
    c->metrics_sum[0] = c->tp_rank == 0 ? c->loss_sum : 0.0;
    c->metrics_sum[1] = c->dp_rank == 0 || c->p->zero ? sum : 0.0;
    c->metrics_sum[2] = c->tp_rank == 0 ? c->desc_loss_sum : 0.0;  /* a VLM's descriptive positions */
    c->metrics_sum[3] = c->tp_rank == 0 ? c->desc_count : 0.0;
    c->metrics_positions = c->vlm ? c->vlm_positions[c->step % 2] : 0;  /* batch step's half */
    c->metrics_lr = lr;
    c->metrics_step = c->step;
    WF_MPI(c, MPI_Iallreduce(MPI_IN_PLACE, c->metrics_sum, 4, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD,
                             &c->metrics_req));
}

/* ---- the optimizer step ------------------------------------------------- */

/* OPTIM after batch b = c->step: V(b+2) = V(b+1) - lr * update(grad of b)
 * into wver[b % 2]. */
void wf_2bw_optimizer_step(wf_ctx *c) {
    if (deferred(c, TAIL_OPTIM, 0)) return;
    const wf_program *p = c->p;
    long b = c->step;
    wf_backend_sync(c);  /* the optimizer runs on the host */
    c->loss_sum += wf_backend_loss_take(c);  /* CUDA: this batch's losses, summed on the device */
    complete_metrics(c);
    if (p->grad16 && p->zero < 2) {
        wf_grad16_tp_sums(c);  /* on floats, stored rounded (grad16.c) */
    } else {  /* ZeRO-2: its float shard, with or without 16-bit bucket buffers */
        wf_tp_partial_grads(c);
        if (p->precision != WF_FP32 && !p->grad_accum32) {  /* the reduced gradients, in 16 bits (as step.c) */
            if (p->zero >= 2) wf_backend_round_copy(c, p->precision, c->grad_shard, c->grad_shard, c->moment_numel);
            else wf_backend_round_copy(c, p->precision, c->grads, c->grads, p->grad_numel);
        }
    }
    double lr = wf_lr_at(p, b);
    start_metrics(c, lr);
    c->loss_sum = c->desc_loss_sum = c->desc_count = 0;
    float *dst = c->wver[b % 2], *src = c->wver[(b + 1) % 2];
    WF_MPI(c, MPI_Wait(&c->tied_w_req[b % 2], MPI_STATUS_IGNORE));  /* still being sent? */
    wf_version_copy(c, dst, src);
    wf_adamw_into(c, dst, lr, 1.0f, 1);
    /* ZeRO-1 and 2: this rank updated its shards of the new version, the
     * others come from their owners; the version the next batch computes
     * with (src) stays whole on every rank, as both do without ZeRO.
     * (ZeRO-3 updated its shard of dst, gathered when a batch uses it.) */
    wf_zero_gather_version(c, dst);
    /* in stream order (wf_backend_zero): a host memset here raced the CUDA
     * backend's AdamW, still queued on the stream, which then read zeroed
     * gradients (every 2BW step left the weights as they were; found by
     * tests/e2e/cuda_emu_run.sh); ZeRO-2 clears its shard */
    wf_zero_grads_clear(c);
    c->last_lr = lr;
    c->step++;
}

/* After a replay of the graph captured for this step's parity: its tail, as
 * the step would have run it (frame_base is the step's, as wf_load_step set). */
void wf_2bw_run_tail(wf_ctx *c) {
    int k = (int)(c->step % 2), n = tails[k].n;
    for (int i = 0; i < n; i++) {
        int m = tails[k].calls[i].m;
        switch (tails[k].calls[i].call) {
        case TAIL_SEND_GRAD: wf_tied_send_grad(c); break;
        case TAIL_RECV_GRAD: wf_tied_recv_grad(c); break;
        case TAIL_SEND_WEIGHTS: wf_tied_send_weights(c, m); break;
        case TAIL_RECV_WEIGHTS: wf_tied_recv_weights(c, m); break;
        case TAIL_OPTIM: wf_2bw_optimizer_step(c); break;  /* step++: k is read once above */
        }
    }
}

/* The pipeline has drained (after the epilogue): the last metrics, the
 * pending sends, and params / next_params naming the two versions as the
 * single-rank delayed update and the checkpoints see them. */
void wf_2bw_finish(wf_ctx *c) {
    wf_backend_sync(c);
    complete_metrics(c);
    WF_MPI(c, MPI_Wait(&c->tied_grad_req, MPI_STATUS_IGNORE));
    if (c->p->zero >= 3) {
        c->param_shard = c->wver[c->step % 2];
        c->next_shard = c->wver[(c->step + 1) % 2];
        return;
    }
    c->params = c->wver[c->step % 2];
    c->next_params = c->wver[(c->step + 1) % 2];
}
