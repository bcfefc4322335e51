/* emit_step.c: the step function.  One stage: microbatches in order.  A
 * pipeline stage: its chunks' forward and backward functions, then the
 * verified schedule as one call per instruction, with activation slots and
 * staging buffers for boundary tensors. */
#include <stdlib.h>
#include <string.h>

#include "emit.h"
#include "ops.h"

/* Full recompute: rebuild block `layer`'s activations from its input just
 * before its backward. */
static void emit_recompute(writer *o, const Program *p, int layer, int stage) {
    emit(o, "    /* block %d: recompute its activations */\n", layer);
    for (int i = 0; i < p->n_ops; i++)
        if (p->ops[i].layer == layer && p->ops[i].chunk % p->pp == stage) emit_forward_op(o, p, i);
}

/* Before backward op i: recompute its block when the walk enters one. */
static void maybe_recompute(writer *o, const Program *p, int i, int *current) {
    int layer = p->ops[i].layer, g = memory_regather_before(p, i);
    if (g >= 0) {
        emit(o, "    /* selective recompute: gather the sequence-parallel shards again */\n");
        emit_forward_op(o, p, g);
    }
    if (p->recompute == RECOMPUTE_SELECTIVE && op_row_of(p->ops[i].kind)->selective) {
        emit(o, "    /* selective recompute: the attention probabilities again */\n");
        emit_forward_op(o, p, i);
        return;
    }
    if (p->recompute != RECOMPUTE_FULL || layer < 0 || layer == *current) return;
    *current = layer;
    emit_recompute(o, p, layer, p->ops[i].chunk % p->pp);
}

/* ZeRO-3, before the op at time t (forward op i: i, backward op i, or its B
 * half: 2n-1-i, its W half: 3n-1-i): start the all-gathers planned for t
 * (prefetches), then wait for the ones whose parameters are used from t on. */
static void emit_gathers_at(writer *o, const Program *p, int stage, int t) {
    if (p->zero < 3) return;
    int first = stage_first_bucket(p, stage), n = p->n_ops;
    for (int e = 0; e < p->n_gathers; e++)
        if (p->gathers[e].stage == stage && p->gathers[e].issue == t)
            emit(o, "    wf_gather_start(c, %d);\n", p->gathers[e].bucket - first);
    for (int e = 0; e < p->n_gathers; e++)
        if (p->gathers[e].stage == stage && p->gathers[e].start == t) {
            int end = p->gathers[e].end;
            emit(o, "    wf_gather_wait(c, %d); /* used until the %s of op %d */\n", p->gathers[e].bucket - first,
                 end < n ? "forward" : end < 2 * n ? "backward" : "W half",
                 end < n ? end : end < 2 * n ? 2 * n - 1 - end : 3 * n - 1 - end);
        }
}

/* After backward op j: start the reduction of the buckets it completed (with
 * ZeRO >= 2 every microbatch: the reduce-scatter empties the bucket buffer
 * into the shard); with ZeRO >= 2 wait for the ones planned here.  Under a
 * split backward B's calls are those of the buckets B writes whole
 * (buckets.c's start_in_b), W's the others': in_b says which half this is
 * (0 without a split).  Returns whether a bucket started.  first: the
 * stage's first bucket. */
static int emit_bucket_calls(writer *o, const Program *p, int stage, int j, const char *last, int in_b) {
    int first = stage_first_bucket(p, stage), started = 0;
    for (int b = first; b < p->n_buckets && p->buckets[b].stage == stage; b++)
        if (p->buckets[b].ready_after_op == j && p->buckets[b].start_in_b == in_b) {
            if (p->zero >= 2) emit(o, "    wf_grad_bucket_start(c, %d);\n", b - first);
            else emit(o, "    if (%s) wf_bucket_start(c, %d);\n", last, b - first);
            started = 1;
        }
    if (p->zero >= 2)
        for (int b = first; b < p->n_buckets && p->buckets[b].stage == stage; b++)
            if (p->buckets[b].wait_after_op == j && p->buckets[b].start_in_b == in_b)
                emit(o, "    wf_grad_bucket_wait(c, %d);\n", b - first);
    return started;
}

void emit_passes(writer *o, const Program *p) {
    emit(o, "static void forward(wf_ctx *c) {\n");
    emit(o, "    float *a = wf_act_ptr(c, 0);\n    const float *w = wf_param_ptr(c, 0);\n");
    int layer = -2;
    for (int i = 0; i < p->n_ops; i++) {
        if (p->ops[i].layer != layer) {
            layer = p->ops[i].layer;
            if (layer >= 0) emit(o, "    /* block %d */\n", layer);
            else if (i > 0) emit(o, "    /* final norm, LM head and loss */\n");
        }
        emit_gathers_at(o, p, 0, i);
        emit_forward_op(o, p, i);
        if (p->zero >= 3 && i + 1 < p->n_ops) emit(o, "    wf_progress(c);\n");
    }
    emit(o, "}\n\n");
    emit(o, "/* Backward: forward reversed; every kernel accumulates into its gradients. */\n");
    emit(o, "static void backward(wf_ctx *c, int last_micro) {\n");
    emit(o, "    float *a = wf_act_ptr(c, 0), *d = wf_dact_ptr(c, 0), *g = wf_grad_ptr(c, 0);\n");
    emit(o, "    const float *w = wf_param_ptr(c, 0);\n");
    if (p->zero >= 2) emit(o, "    (void)last_micro;  /* ZeRO-%d reduces every microbatch */\n", p->zero);
    int block = -2;
    for (int j = 0; j < p->n_ops; j++) {
        int i = p->n_ops - 1 - j;
        emit_gathers_at(o, p, 0, p->n_ops + j);
        maybe_recompute(o, p, i, &block);
        emit_grad_zeros(o, p, i);
        emit_backward_op(o, p, i);
        int started = emit_bucket_calls(o, p, 0, j, "last_micro", 0);
        if (!started && j + 1 < p->n_ops) emit(o, "    wf_progress(c);\n");
    }
    emit(o, "}\n\n");
}

void emit_step(writer *o, const Program *p) {
    emit(o, "/* One optimizer step: the schedule, as straight-line code. */\n");
    emit(o, "static void step(wf_ctx *c) {\n");
    for (int m = 0; m < p->accum; m++) {
        emit(o, "    wf_micro_begin(c, %d);\n", m);
        emit(o, "    WF_TRACED(c, 'F', %d, 0, forward(c));\n", m);
        emit(o, "    WF_TRACED(c, 'B', %d, 0, backward(c, %d));\n", m, m == p->accum - 1);
    }
    emit(o, "    WF_TRACED(c, 'O', 0, 0, wf_buckets_wait(c); wf_optimizer_step(c));\n");
    emit(o, "}\n\n");
}

/* ---- pipeline stages ------------------------------------------------------ */

/* Whether chunk k has a bucket B starts (buckets.c's start_in_b). */
static int chunk_starts_in_b(const Program *p, int k) {
    for (int b = 0; b < p->n_buckets; b++)
        if (p->buckets[b].start_in_b && p->buckets[b].stage == k % p->pp &&
            p->params[p->grad_order[p->buckets[b].first_param]].chunk == k)
            return 1;
    return 0;
}

/* Zero-bubble: the chunk's backward as B (input gradients, for the stage
 * before, with the parameter gradients that are not a GEMM's dW) and W
 * (the GEMMs' weight gradients, later, in the bubbles).  W starts the
 * buckets, but those B writes whole (buckets.c's start_in_b: the LM head's,
 * say), which B starts after their last gradient (without ZeRO >= 2 in the
 * chunk's last B, `last`), so that their reduction overlaps the rest of B. */
static void emit_split_chunk(writer *o, const Program *p, int k) {
    int first = p->chunk_first_op[k], end = p->chunk_end_op[k];
    int stage = k % p->pp, b_buckets = chunk_starts_in_b(p, k);
    emit(o, "static void bwd_input_c%d(wf_ctx *c, int m, int slot, int dslot, int last) {\n", k);
    /* g: the parameter gradients B computes (ops.h's op_weight_grad_in_w) */
    emit(o, "    float *a = wf_act_slot(c, slot), *d = wf_dact_slot(c, dslot), *g = wf_grad_ptr(c, 0);\n");
    emit(o, "    const float *w = wf_param_ptr(c, 0);\n    (void)w, (void)g;\n");
    emit(o, "    wf_use_micro(c, m);\n");
    if (!b_buckets || p->zero >= 2) emit(o, "    (void)last;\n");
    /* ZeRO-3: B reads the weights, so it gathers them (zero_plan.c) */
    int block = -2;
    for (int i = end - 1; i >= first; i--) {
        emit_gathers_at(o, p, stage, 2 * p->n_ops - 1 - i);
        maybe_recompute(o, p, i, &block);
        emit_grad_zeros(o, p, i);
        int emitted = emit_backward_half(o, p, i, 0);
        int started = emit_bucket_calls(o, p, stage, p->n_ops - 1 - i, "last", 1);
        /* Open MPI advances a started collective only inside MPI calls */
        if (emitted && !started && (p->zero >= 3 || b_buckets) && i > first) emit(o, "    wf_progress(c);\n");
    }
    emit(o, "}\n\n");
    emit(o, "static void bwd_weight_c%d(wf_ctx *c, int m, int slot, int dslot, int last) {\n", k);
    emit(o, "    float *a = wf_act_slot(c, slot), *d = wf_dact_slot(c, dslot), *g = wf_grad_ptr(c, 0);\n");
    emit(o, "    const float *w = wf_param_ptr(c, 0);\n    (void)w;\n");
    emit(o, "    wf_use_micro(c, m);\n");
    if (p->zero >= 2) emit(o, "    (void)last;  /* ZeRO-%d reduces every microbatch */\n", p->zero);
    /* buckets are complete after their last W (W runs after the same
     * microbatch's B, so a bucket with gradients from B too is complete
     * there; under ZeRO >= 2 B writes no bucket but the chunked LM head's,
     * started in B when it is alone in its bucket, else kept live by
     * zero_plan.c from that B on).  Full
     * recompute: the shared region held later blocks since B, so each block
     * is rebuilt again from its saved input before its W. */
    block = -2;
    for (int i = end - 1; i >= first; i--) {
        if (p->recompute == RECOMPUTE_FULL) {  /* the rebuild reads the weights: gathered again */
            emit_gathers_at(o, p, stage, 3 * p->n_ops - 1 - i);
            maybe_recompute(o, p, i, &block);
        }
        int emitted = emit_backward_half(o, p, i, 1);
        int started = emit_bucket_calls(o, p, stage, p->n_ops - 1 - i, "last", 0);
        if (emitted && !started) emit(o, "    wf_progress(c);\n");
    }
    emit(o, "}\n\n");
}

/* Forward and backward of one pipeline chunk, on microbatch m's slot. */
void emit_chunk(writer *o, const Program *p, int k) {
    emit_set_chunk_input(p->chunk_in[k], k);
    int first = p->chunk_first_op[k], end = p->chunk_end_op[k];
    emit(o, "/* Chunk %d: %d transformer block(s)%s%s. */\n", k, p->chunk_layers[k],
      k == 0 ? ", after the embedding" : "", k == p->n_chunks - 1 ? ", then the LM head and loss" : "");
    emit(o, "static void fwd_c%d(wf_ctx *c, int m, int slot) {\n", k);
    emit(o, "    float *a = wf_act_slot(c, slot);\n    const float *w = wf_param_ptr(c, 0);\n");
    emit(o, "    wf_use_micro(c, m);\n");
    for (int i = first; i < end; i++) {
        emit_gathers_at(o, p, k % p->pp, i);
        emit_forward_op(o, p, i);
        if (p->zero >= 3 && i + 1 < end) emit(o, "    wf_progress(c);\n");
    }
    emit(o, "}\n\n");
    if (p->sched->split_backward) {
        emit_split_chunk(o, p, k);
        emit_set_chunk_input(0, -1);
        return;
    }
    emit(o, "static void bwd_c%d(wf_ctx *c, int m, int slot, int dslot, int last) {\n", k);
    emit(o, "    float *a = wf_act_slot(c, slot), *d = wf_dact_slot(c, dslot), *g = wf_grad_ptr(c, 0);\n");
    emit(o, "    const float *w = wf_param_ptr(c, 0);\n");
    emit(o, "    wf_use_micro(c, m);\n");
    int stage = k % p->pp;
    if (p->zero >= 2) emit(o, "    (void)last;  /* ZeRO-%d reduces every microbatch */\n", p->zero);
    int block = -2;
    for (int i = end - 1; i >= first; i--) {
        emit_gathers_at(o, p, stage, 2 * p->n_ops - 1 - i);
        maybe_recompute(o, p, i, &block);
        emit_grad_zeros(o, p, i);
        emit_backward_op(o, p, i);
        int started = emit_bucket_calls(o, p, stage, p->n_ops - 1 - i, "last", 0);
        if (!started && i > first) emit(o, "    wf_progress(c);\n");
    }
    emit(o, "}\n\n");
    emit_set_chunk_input(0, -1);
}

/* Whether a chunk's output activation waits for its send in a staging
 * buffer (copied there at the end of its FWD) rather than in its slot, as
 * Megatron-LM frees a stage's output after sending it: the slot then keeps
 * only what backward reads (memory_slot.c).  PipeDream-2BW's prologue, steady
 * step and epilogue are staged apart, each list emptying its buffers: its
 * split (schedule_2bw.c's check_staging) refuses a FWD whose send falls in
 * another list. */
int staged_sends(const Program *p) {
    return p->pp > 1 && p->sched;
}

/* Boundary tensors wait in staging buffers: a received activation until its
 * FWD claims a slot (the slot may still hold an earlier microbatch when the
 * message arrives), an input gradient from its BWD until it is sent (a FWD
 * in between may take the slot over), and (staged_sends) a chunk's output
 * from its FWD until it is sent.  staging[i] is the buffer instruction i
 * uses (a FWD: the one its input is read from), staging_recv[i] a SENDRECV's
 * receive buffer or the buffer a FWD stages its output in; returns how many
 * buffers the stage needs. */
static int assign_staging_list(const schedule *s, const sched_instr *ins, int n, int *staging,
                               int *staging_recv, int staged) {
    int peak = 0;
    int *key = wf_checked(calloc((size_t)n + 1, sizeof(int)), "emit pass");  /* buffer -> key + 1, or 0 when free */
    for (int i = 0; i < n; i++) {
        const sched_instr *in = &ins[i];
        staging[i] = staging_recv[i] = -1;
        /* the message or compute step that fills a buffer, and the one that
         * empties it: 3 (m, chunk) + 1 an activation received for chunk,
         * + 2 an input gradient of chunk + 1 to send, + 3 chunk's output */
        int fill = 0, drain = 0;
        if (in->op == SI_RECV_ACT) fill = 3 * (in->m * s->chunks + in->chunk) + 1;
        if (in->op == SI_SENDRECV && in->recv.kind == MSG_ACT)
            fill = 3 * (in->recv.m * s->chunks + in->recv.chunk) + 1;
        if ((in->op == SI_BWD || in->op == SI_BWD_INPUT) && in->chunk > 0 && s->stages > 1)
            fill = 3 * (in->m * s->chunks + in->chunk - 1) + 2;
        if (staged && in->op == SI_FWD && in->chunk + 1 < s->chunks)
            fill = 3 * (in->m * s->chunks + in->chunk) + 3;
        if (in->op == SI_FWD) drain = 3 * (in->m * s->chunks + in->chunk) + 1;
        if (in->op == SI_SEND_GRAD) drain = 3 * (in->m * s->chunks + in->chunk) + 2;
        if (in->op == SI_SENDRECV && in->send.kind == MSG_GRAD)
            drain = 3 * (in->send.m * s->chunks + in->send.chunk) + 2;
        /* an activation message names its consumer chunk: the output of chunk - 1 */
        if (staged && in->op == SI_SEND_ACT) drain = 3 * (in->m * s->chunks + in->chunk - 1) + 3;
        if (staged && in->op == SI_SENDRECV && in->send.kind == MSG_ACT)
            drain = 3 * (in->send.m * s->chunks + in->send.chunk - 1) + 3;
        /* a SENDRECV fills one buffer and drains another: take the new one
         * first so that MPI never sends from and receives into the same */
        int filled = -1;
        if (fill) {
            int b = 0;
            while (key[b]) b++;
            key[b] = fill;
            filled = b;
            if (b + 1 > peak) peak = b + 1;
        }
        if (drain)
            for (int b = 0; b < peak; b++)
                if (key[b] == drain) {
                    key[b] = 0;
                    staging[i] = b;  /* the buffer sent from or read by FWD */
                }
        if (filled >= 0) {
            if (in->op == SI_FWD || (drain && in->op == SI_SENDRECV)) staging_recv[i] = filled;
            else staging[i] = filled;
        }
    }
    free(key);
    return peak;
}

/* PipeDream-2BW: the most any of the prologue, steady step and epilogue needs
 * (each empties its buffers; schedule_2bw.c checks). */
int assign_staging(const Program *p, int stage, int *staging, int *staging_recv) {
    const schedule *s = p->sched;
    int peak = assign_staging_list(s, s->ins[stage], s->n[stage], staging, staging_recv, staged_sends(p));
    if (s->pro) {
        int most = s->npro[stage] > s->nepi[stage] ? s->npro[stage] : s->nepi[stage];
        int *a = wf_checked(calloc((size_t)most + 1, sizeof(int)), "emit pass"), *b = wf_checked(calloc((size_t)most + 1, sizeof(int)), "emit pass");
        int k = assign_staging_list(s, s->pro[stage], s->npro[stage], a, b, staged_sends(p));
        if (k > peak) peak = k;
        k = assign_staging_list(s, s->epi[stage], s->nepi[stage], a, b, staged_sends(p));
        if (k > peak) peak = k;
        free(a);
        free(b);
    }
    return peak;
}

/* Where each (m, chunk) keeps its activations on this stage: the slot of its
 * first FWD, at [m * chunks + chunk] (2BW: microbatch m of every batch has the
 * same slot, so m is taken within its batch); -1 where the stage runs none.
 * One table per list: a search per message made emission quadratic. */
static int *stage_slots(const schedule *s, int stage) {
    size_t keys = (size_t)s->micro * (size_t)s->chunks;
    int *slot = wf_checked(malloc(sizeof(int) * (keys ? keys : 1)), "emit pass");
    for (size_t k = 0; k < keys; k++) slot[k] = -1;
    for (int i = 0; i < s->n[stage]; i++) {
        const sched_instr *in = &s->ins[stage][i];
        int m = s->pro ? in->m % s->micro : in->m;
        if (in->op != SI_FWD || m < 0 || m >= s->micro || in->chunk < 0 || in->chunk >= s->chunks)
            continue;
        int *at = &slot[(size_t)m * (size_t)s->chunks + (size_t)in->chunk];
        if (*at < 0) *at = in->slot;
    }
    return slot;
}

static int slot_of(const schedule *s, const int *slots, int m, int chunk) {
    if (s->pro) m %= s->micro;
    if (m < 0 || m >= s->micro || chunk < 0 || chunk >= s->chunks) return -1;
    return slots[(size_t)m * (size_t)s->chunks + (size_t)chunk];
}

/* The buffer a message of (m, consumer chunk) is sent from or received into,
 * and its size in floats (storage floats: half under act16).  Activations:
 * the output of chunk-1, received as chunk's input.  Gradients: of chunk+1's
 * input, received for chunk's output. */
static void msg_buffer(const Program *p, const int *slots, sched_msg_kind kind, int m, int chunk,
                       int sending, int staging, int dslot, char *buf, size_t n, long *numel) {
    const schedule *s = p->sched;
    int t = kind == MSG_ACT ? p->chunk_in[chunk] : p->chunk_in[chunk + 1];
    *numel = tensor_storage(p, t);
    char label[NAMEBUF];
    if (kind == MSG_ACT) {
        int owner = sending ? chunk - 1 : chunk;
        if (!sending) {
            snprintf(buf, n, "wf_recv_buffer(c, %d)", staging);
            return;
        }
        if (staged_sends(p)) {  /* staged at the end of its FWD */
            snprintf(buf, n, "wf_recv_buffer(c, %d)", staging);
            return;
        }
        op_label(p, p->tensors[t].producer, label, sizeof label);
        snprintf(buf, n, "wf_act_slot(c, %d) + %s", slot_of(s, slots, m, owner), label);
    } else {
        if (sending) {
            snprintf(buf, n, "wf_recv_buffer(c, %d)", staging);
            return;
        }
        op_label(p, p->tensors[t].producer, label, sizeof label);
        snprintf(buf, n, "wf_dact_slot(c, %d) + D_%s", dslot, label);
    }
}

/* By microbatch within its batch: with 2BW a message may be sent in one step
 * and received in the next, whose lists name the batch differently. */
static int msg_tag(const Program *p, sched_msg_kind kind, int m, int chunk) {
    return (((m % p->accum) * p->n_chunks + chunk) * 2 + (kind == MSG_GRAD)) % 32768;
}

/* Scatter/gather (s->split tp ranks): a message travels as this tp rank's
 * slice of its buffer, `buf` then; whole messages leave buf as it is.
 * Returns the floats sent or received. */
static long sliced(const schedule *s, char *buf, size_t len, long n) {
    if (s->split < 2) return n;
    static const char head[] = "wf_pipe_slice(c, ";
    char tail[48];
    int t = snprintf(tail, sizeof tail, ", %ldL)", n);
    size_t k = strlen(buf), h = sizeof head - 1;
    if (h + k + (size_t)t + 1 > len) {
        wf_error("emit pass: message buffer name too long (internal)");
        exit(3);
    }
    memmove(buf + h, buf, k);
    memcpy(buf, head, h);
    memcpy(buf + h + k, tail, (size_t)t + 1);
    return n / s->split;
}

/* One call per instruction of a verified list. */
static void emit_instrs(writer *o, const Program *p, int stage, const sched_instr *ins, int count) {
    const schedule *s = p->sched;
    char buf[2 * NAMEBUF + 96], rbuf[2 * NAMEBUF + 96], text[256];
    char got[2 * NAMEBUF + 96] = "";  /* the last received message's whole buffer (GATHER's) */
    long n, rn, got_n = 0;
    int *staging = wf_checked(calloc((size_t)count + 1, sizeof(int)), "emit pass");
    int *staging_recv = wf_checked(calloc((size_t)count + 1, sizeof(int)), "emit pass");
    assign_staging_list(s, ins, count, staging, staging_recv, staged_sends(p));
    int *slots = stage_slots(s, stage);
    /* is_last[i]: the chunk's final backward (B half, W half) in this list,
     * which starts its buckets (a B half those B writes whole); found in one
     * backward sweep, per (BWD or BWD_INPUT, or BWD_WEIGHT; chunk) */
    char *is_last = wf_checked(calloc((size_t)count + 1, 1), "emit pass");
    char *seen = wf_checked(calloc(2 * (size_t)s->chunks + 1, 1), "emit pass");
    for (int i = count - 1; i >= 0; i--) {
        if ((ins[i].op != SI_BWD && ins[i].op != SI_BWD_INPUT && ins[i].op != SI_BWD_WEIGHT) || ins[i].chunk < 0 ||
            ins[i].chunk >= s->chunks)
            continue;
        char *mark = &seen[(ins[i].op == SI_BWD_WEIGHT) * s->chunks + ins[i].chunk];
        is_last[i] = !*mark;
        *mark = 1;
    }
    free(seen);
    for (int i = 0; i < count; i++) {
        const sched_instr *in = &ins[i];
        sched_instr_str(in, text, sizeof text);
        int last = is_last[i];
        /* 2BW: the batch's weight version, before the chunk function reads it */
        if (s->pro && in->op <= SI_BWD_WEIGHT) emit(o, "    wf_use_micro(c, %d);\n", in->m);
        switch (in->op) {
        case SI_FWD:
            if (p->chunk_in[in->chunk]) {
                emit(o, "    wf_copy(wf_act_slot(c, %d) + A_IN_C%d, wf_recv_buffer(c, %d), %ldL);\n", in->slot,
                  in->chunk, staging[i], tensor_storage(p, p->chunk_in[in->chunk]));
            }
            emit(o, "    WF_TRACED(c, 'F', %d, %d, fwd_c%d(c, %d, %d));\n", in->m, in->chunk, in->chunk,
                 in->m, in->slot);
            if (staging_recv[i] >= 0) {  /* its output waits for the send outside the slot */
                int t = p->chunk_in[in->chunk + 1];
                char label[NAMEBUF];
                op_label(p, p->tensors[t].producer, label, sizeof label);
                /* `a`: the slot's base, which a label in the region is relative to */
                emit(o, "    { float *a = wf_act_slot(c, %d); wf_copy(wf_recv_buffer(c, %d), a + %s, %ldL); }\n",
                     in->slot, staging_recv[i], label, tensor_storage(p, t));
            }
            break;
        case SI_BWD:
        case SI_BWD_INPUT:
            if (in->op == SI_BWD)
                emit(o, "    WF_TRACED(c, 'B', %d, %d, bwd_c%d(c, %d, %d, %d, %d));", in->m, in->chunk, in->chunk,
                     in->m, in->slot, in->dslot, last);
            else
                emit(o, "    WF_TRACED(c, 'B', %d, %d, bwd_input_c%d(c, %d, %d, %d, %d));", in->m, in->chunk,
                     in->chunk, in->m, in->slot, in->dslot, last);
            if (staging[i] >= 0) {
                emit(o, " wf_copy(wf_recv_buffer(c, %d), wf_dact_slot(c, %d) + D_A_IN_C%d, %ldL);",
                  staging[i], in->dslot, in->chunk, tensor_storage(p, p->chunk_in[in->chunk]));
            }
            emit(o, "\n");
            break;
        case SI_BWD_WEIGHT:
            emit(o, "    WF_TRACED(c, 'W', %d, %d, bwd_weight_c%d(c, %d, %d, %d, %d));\n", in->m, in->chunk,
                 in->chunk, in->m, in->slot, in->dslot, last);
            break;
        case SI_SEND_ACT: case SI_SEND_GRAD:
            msg_buffer(p, slots, in->op == SI_SEND_ACT ? MSG_ACT : MSG_GRAD, in->m, in->chunk, 1,
                       staging[i], in->dslot, buf, sizeof buf, &n);
            n = sliced(s, buf, sizeof buf, n);
            emit(o, "    WF_TRACED(c, '%c', %d, %d, wf_send(c, %s, %ldL, %d, %d)); /* %s */\n",
                 in->op == SI_SEND_ACT ? 'a' : 'g', in->m, in->chunk, buf, n, in->peer,
                 msg_tag(p, in->op == SI_SEND_ACT ? MSG_ACT : MSG_GRAD, in->m, in->chunk), text);
            break;
        case SI_RECV_ACT: case SI_RECV_GRAD:
            msg_buffer(p, slots, in->op == SI_RECV_ACT ? MSG_ACT : MSG_GRAD, in->m, in->chunk, 0,
                       staging[i], in->dslot, buf, sizeof buf, &n);
            snprintf(got, sizeof got, "%s", buf);
            got_n = n;
            n = sliced(s, buf, sizeof buf, n);
            emit(o, "    wf_recv(c, %s, %ldL, %d, %d); /* %s */\n", buf, n, in->peer,
              msg_tag(p, in->op == SI_RECV_ACT ? MSG_ACT : MSG_GRAD, in->m, in->chunk), text);
            break;
        case SI_SENDRECV:
            msg_buffer(p, slots, in->send.kind, in->send.m, in->send.chunk, 1, staging[i], in->dslot, buf,
                       sizeof buf, &n);
            msg_buffer(p, slots, in->recv.kind, in->recv.m, in->recv.chunk, 0,
                       staging_recv[i] >= 0 ? staging_recv[i] : staging[i], in->dslot, rbuf, sizeof rbuf, &rn);
            snprintf(got, sizeof got, "%s", rbuf);
            got_n = rn;
            n = sliced(s, buf, sizeof buf, n);
            rn = sliced(s, rbuf, sizeof rbuf, rn);
            emit(o, "    WF_TRACED(c, '%c', %d, %d, wf_sendrecv(c, %s, %ldL, %d, %d,\n"
                    "                %s, %ldL, %d, %d));\n    /* %s */\n",
                 in->send.kind == MSG_ACT ? 'a' : 'g', in->send.m, in->send.chunk, buf, n, in->send.peer,
                 msg_tag(p, in->send.kind, in->send.m, in->send.chunk), rbuf, rn, in->recv.peer,
                 msg_tag(p, in->recv.kind, in->recv.m, in->recv.chunk), text);
            break;
        case SI_OPTIM:
            emit(o, "    WF_TRACED(c, 'O', 0, 0, wf_buckets_wait(c); wf_optimizer_step(c));\n");
            break;
        case SI_GATHER:
            /* schedule_scatter_gather puts it right after its receive */
            if (!got[0]) {
                wf_error("emit pass: %s follows no receive (internal)", text);
                exit(3);
            }
            emit(o, "    wf_pipe_gather(c, %s, %ldL); /* %s */\n", got, got_n, text);
            got[0] = 0;
            break;
        case SI_SEND_TIED:
            if (in->send.kind == MSG_TIED_GRAD) emit(o, "    wf_tied_send_grad(c); /* %s */\n", text);
            else emit(o, "    wf_tied_send_weights(c, %d); /* %s */\n", in->send.m, text);
            break;
        case SI_RECV_TIED:
            if (in->recv.kind == MSG_TIED_GRAD) emit(o, "    wf_tied_recv_grad(c); /* %s */\n", text);
            else emit(o, "    wf_tied_recv_weights(c, %d); /* %s */\n", in->recv.m, text);
            break;
        default:
            emit(o, "    /* %s */\n", text);
        }
    }
    free(staging);
    free(slots);
    free(is_last);
    free(staging_recv);
}

/* The step: this stage's verified instruction list, one call per line.
 * PipeDream-2BW without flush: a prologue, the steady step and an epilogue. */
void emit_pipeline_step(writer *o, const Program *p, int stage) {
    const schedule *s = p->sched;
    if (s->pro) {
        emit(o, "/* PipeDream-2BW without a flush, stage %d, as verified at compile time (prologue +\n"
                " * step + step + epilogue). Microbatches are numbered in a frame where the batch\n"
                " * being finished is 1: m in [%d, %d) is that batch, [%d, %d) the next one. */\n",
             stage, p->accum, 2 * p->accum, 2 * p->accum, 3 * p->accum);
        emit(o, "/* Fills the pipeline: the first forwards of a batch. */\n");
        emit(o, "static void prologue(wf_ctx *c) {\n    wf_prologue_begin(c);\n");
        emit_instrs(o, p, stage, s->pro[stage], s->npro[stage]);
        emit(o, "}\n\n/* Steady step: finishes a batch (OPTIM after its last backward) while the next\n"
                " * one's first forwards run; no flush. */\n");
        emit(o, "static void step(wf_ctx *c) {\n    wf_step_begin(c);\n");
        emit_instrs(o, p, stage, s->ins[stage], s->n[stage]);
        emit(o, "}\n\n/* Before a checkpoint and at the end: finishes the batch, starts none. */\n");
        emit(o, "static void epilogue(wf_ctx *c) {\n    wf_epilogue_begin(c);\n");
        emit_instrs(o, p, stage, s->epi[stage], s->nepi[stage]);
        emit(o, "}\n\n");
        return;
    }
    emit(o, "/* One optimizer step: the %s schedule of stage %d, as verified at compile time. */\n",
      p->schedule, stage);
    emit(o, "static void step(wf_ctx *c) {\n    wf_step_begin(c);\n");
    emit_instrs(o, p, stage, s->ins[stage], s->n[stage]);
    emit(o, "}\n\n");
}

