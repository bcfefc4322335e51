/* memory.c: the one memory model of a plan, per rank of a pipeline stage:
 * every arena the runtime allocates at setup (runtime/common/train.c's
 * allocate, zero.c, optim.c's masters, twobw.c) and, on CUDA, the buffers the
 * runtime allocates itself at its first step (weft/runtime_buffers.h).
 * `weft check` prints it (report.c), `weft simulate` reports it, the programs
 * carry its total as planned_bytes (emit.c), and the runtime measures its own
 * allocations against that total (runtime/common/metrics.c). */
#include <stdlib.h>
#include <string.h>

#include "emit.h"
#include "memory_pack.h"
#include "ops.h"
#include "weft/runtime_buffers.h"

#define REQ_BYTES WF_REQ_BYTES  /* runtime/common/coll.h's wf_req */

/* wf_alloc hands out 64 bytes for an empty arena (runtime/common/step.c) */
static double arena(double bytes) { return bytes > 0 ? bytes : 64.0; }

static int runtime_buffers(const Program *p) { return backend_of(p)->runtime_buffers; }

/* The distinct widths of the stage's linear biases, in 16 bits: gemm.cu's 16-bit copy of a bias grows to each larger one and
 * keeps the smaller (a captured graph may read it), so the distinct widths
 * bound what it holds. */
static double bias16_bytes(const Program *p, int stage) {
    long seen[64];
    int n = 0;
    double sum = 0;
    for (int i = 0; i < p->n_ops; i++) {
        const ir_op *o = &p->ops[i];
        if (!op_row_of(o->kind)->gemm_weight || o->n_param < 2 || o->chunk % p->pp != stage) continue;  /* linear biases */
        long w = p->tensors[o->out].width;
        int k = 0;
        while (k < n && seen[k] != w) k++;
        if (k < n) continue;
        if (n < 64) seen[n++] = w;
        sum += 2.0 * (double)w;
    }
    return sum;
}

/* linear.cu's DGELU fallback under act16 (cuBLASLt may refuse the epilogue,
 * e.g. with no algorithm for the shape): a float block of rows x K, at most
 * WF_DGELU_FALLBACK_FLOATS; every layer has the same shape, so one size. */
static double dgelu_fallback_bytes(const Program *p, int stage) {
    double most = 0;
    for (int i = 1; i < p->n_ops; i++) {
        const ir_op *o = &p->ops[i];
        if (o->dgelu != DGELU_LINEAR || o->chunk % p->pp != stage) continue;
        const ir_tensor *t = &p->tensors[o->in[0]];
        long K = t->width, N = (long)p->micro * p->seq / (t->rows_div > 0 ? t->rows_div : 1);
        long rows = K >= WF_DGELU_FALLBACK_FLOATS ? 1 : WF_DGELU_FALLBACK_FLOATS / K;
        if (rows > N) rows = N;
        if (4.0 * (double)(rows * K) > most) most = 4.0 * (double)(rows * K);
    }
    return most;
}

/* What runtime/cuda allocates beside the arenas, once, in the warm-up step. */
static double cuda_buffers(const Program *p, int stage) {
    double b = (double)WF_CUBLASLT_WORKSPACE_BYTES;
    if ((long)p->micro * p->seq > WF_COLSUM_MIN_CHUNK) b += 4.0 * (double)WF_COLSUM_SCRATCH_FLOATS;
    b += 8.0 * (WF_SUMSQ_BLOCKS + 1) + WF_LOSS_ACC_BYTES;
    if (strcmp(p->precision, "fp16") == 0) b += WF_NONFINITE_FLAG_BYTES;
    /* the optimizer's range table: at most one range per parameter */
    b += (double)WF_OPT_RANGE_BYTES * stage_count(p, stage, 0);
    if (p->act16) b += bias16_bytes(p, stage) + dgelu_fallback_bytes(p, stage);
    return b;
}

/* The runtime's tables: request handles of the buckets and gathers, ZeRO's
 * ranges, offsets and counts (runtime/common/train.c, zero.c). */
static double tables(const Program *p, int stage) {
    double buckets = stage_count(p, stage, 1), params = stage_count(p, stage, 0);
    double b = arena(REQ_BYTES * buckets) + 3 * arena(8.0 * params);
    if (p->zero) {
        b += arena(8.0 * buckets) + 2 * arena(4.0 * buckets * p->dp);
        if (p->zero >= 3) b += arena(REQ_BYTES * buckets);
    }
    return b;
}

/* PipeDream-2BW without flush: twobw.c's buffer for the tied wte's gradient. */
static double tied_buffer(const Program *p, int stage) {
    long most = 0;
    for (int k = 0; k < p->n_params; k++) {
        const ir_param *q = &p->params[k];
        if (q->stage != stage) continue;
        int tied = q->tied_to >= 0;
        for (int j = 0; j < p->n_params && !tied; j++) tied = p->params[j].tied_to == k;
        if (tied && q->numel > most) most = q->numel;
    }
    return arena(4.0 * (double)(most ? most : 1));
}

/* Every arena holds floats but the working parameters under param16
 * (param16.c: 2 bytes each, both backends) and the gradients under grad16
 * (grad16.c, likewise): otherwise 16-bit plans keep them as rounded fp32
 * values (act16 packs two 16-bit activations in a float), beside fp32
 * masters and moments.  ZeRO-1 reduces in place in the arena; with 16-bit
 * gradients it adds the float parts of the parameters summed after the dp
 * sum (sequence parallelism's, the tied wte's); ZeRO-2 keeps the shard and
 * the bucket buffers backward writes, ZeRO-3 the parameter shard and the
 * gather buffers of the buckets in use; a shard is dp rank 0's, the
 * largest. */
program_memory program_memory_of(const Program *p, int stage) {
    program_memory m;
    int slots = program_slots(p, stage), wide = strcmp(p->precision, "fp32") == 0;
    int two_batches = p->sched && p->sched->pro;  /* 2BW without flush */
    double psi = (double)p->param_numel[stage];
    double trained = (double)p->train_numel[stage];  /* frozen parameters (weft.vlm's freeze) excluded */
    double shard = p->zero ? 4.0 * (double)p->shard_numel[stage] : 0;
    double moments = p->zero ? shard : 4.0 * trained;  /* one float per element this rank updates */
    /* param16.c: the working parameters in 2 bytes, and the float scratch
     * that one op's parameters are widened into for its kernels */
    double pbytes = param16(p) ? 2.0 : 4.0;
    double pshard = p->zero ? pbytes * (double)p->shard_numel[stage] : 0;  /* ZeRO-3's parameter shard */
    m.params = p->zero >= 3 ? arena(pshard) + arena(pbytes * (double)p->gather_numel[stage]) : arena(pbytes * psi);
    if (param16(p)) m.params += arena(4.0 * (double)param16_scratch_numel(p, stage));
    /* grad16.c: the gradients (ZeRO-2: the bucket buffers) in 2 bytes, one
     * op's gradients widened and the sums' staging in floats; ZeRO-2's
     * reduced shard stays float */
    double gbytes = grad16(p) ? 2.0 : 4.0;
    m.grads = p->zero >= 2 ? arena(shard) + arena(gbytes * (double)p->grad_buf_numel[stage]) : arena(gbytes * trained);
    /* ZeRO-1 reduces in place; 16-bit gradients keep the parts summed after
     * the dp sum in floats (runtime grad16.c), none without such sums */
    double float_parts = (double)grad16_zero1_float_numel(p, stage);
    if (float_parts > 0) m.grads += 4.0 * float_parts;
    if (grad16(p))
        m.grads += arena(4.0 * (double)grad16_scratch_numel(p, stage)) + arena(4.0 * (double)grad16_stage_numel(p, stage));
    /* two weight versions; under ZeRO-3 each is a shard (twobw.c) */
    int versions = strcmp(p->schedule, "pipedream-2bw") == 0 ? 2 : 1;
    if (versions == 2) m.params += p->zero >= 3 ? arena(pshard) : arena(pbytes * psi);
    m.moments = 2 * arena(moments);              /* AdamW m and v */
    m.master = wide ? 0 : arena(moments);        /* fp32 masters, laid out as the moments */
    m.optim = m.moments + m.master;
    m.acts = arena(4.0 * ((double)p->act_numel[stage] * slots + (double)p->region_numel[stage]));
    m.dacts = arena(4.0 * (double)p->dact_numel[stage] * program_dact_sets(p, stage));
    /* kernel scratch, token losses, tokens and targets of every microbatch,
     * tensor-parallel staging, pipeline receive buffers */
    double N = (double)p->micro * p->seq;
    m.scratch = arena(4.0 * (double)p->scratch_numel) + arena(4.0 * N) +
                2 * arena(4.0 * N * p->accum * (two_batches ? 2 : 1)) + arena(4.0 * (double)p->comm_numel);
    if (dp16_staging_numel(p, stage)) m.scratch += 4.0 * (double)dp16_staging_numel(p, stage);  /* dp_comm.c */
    /* a VLM's uint8 images and loss masks of every microbatch (train.c, every rank;
     * two batches' worth under 2BW without flush, as the tokens) */
    if (p->image_positions > 0)
        m.scratch += arena((double)p->image_h * p->image_w * p->image_c * p->micro * p->accum * (two_batches ? 2 : 1)) +
                     arena(N * p->accum * (two_batches ? 2 : 1));
    long recv_numel = 0;
    int recv = p->pp > 1 && p->sched ? stage_recv_buffers(p, stage, &recv_numel) : 0;
    m.scratch += arena(4.0 * (double)recv * (double)recv_numel);
    m.cast = p->act16 && p->cast_numel ? 4.0 * (double)p->cast_numel[stage] : 0;
    m.w16 = p->act16 && p->weight16_numel ? 4.0 * (double)p->weight16_numel[stage] : 0;
    /* act16 on the CPU: the float staging of a kernel call (runtime/cpu/stage16.h) */
    if (p->stage16_numel && p->stage16_numel[stage] > 0) m.scratch += 4.0 * (double)p->stage16_numel[stage];
    m.runtime = tables(p, stage) + (two_batches ? tied_buffer(p, stage) : 0);
    if (runtime_buffers(p)) m.runtime += cuda_buffers(p, stage);
    m.host = 0;
    if (p->offload_optimizer) {  /* offloaded optimizer state is host memory */
        m.host = m.optim;
        m.optim = 0;
    }
    if (p->offload_params) {     /* so is an offloaded parameter shard (each version's) */
        m.host += versions * arena(pshard);
        m.params -= versions * arena(pshard);
    }
    m.total = m.params + m.grads + m.optim + m.acts + m.dacts + m.scratch + m.cast + m.w16 + m.runtime;
    return m;
}

double program_planned_bytes(const Program *p, int stage) {
    program_memory m = program_memory_of(p, stage);
    return m.total + m.host;
}

/* ---- the `memory` pass: one activation slot per in-flight microbatch,
 * offsets fixed here; the activations' storage dtype (act16) ---- */


/* Under full recompute a block's internal activations (everything it makes
 * that no other block reads) are dropped after forward and rebuilt from the
 * block's input just before its backward, so all blocks share one region.
 * Returns a flag per tensor, from one sweep over the ops' inputs (a search
 * per tensor made a 1024-stage plan's memory pass run for minutes). */
static char *block_internals(const Program *p);

/* Whether tensor t is block-internal (the memory pass fills the table). */
static int block_internal(const Program *p, int t) {
    return p->block_internal && t > 0 && t < p->n_tensors && (p->block_internal[t] & 1);
}

int memory_block_internal(const Program *p, int t) { return block_internal(p, t); }

/* In the region by memory_slot.c (bit 1 of the table): a forward transient
 * (nothing reads it after its chunk's forward), or a kept tensor of the
 * loss chunk when one microbatch of it is in flight at a time; bit 2: that
 * chunk's op's saved buffer, likewise. */
static int transient(const Program *p, int t) {
    return p->block_internal && t > 0 && t < p->n_tensors && (p->block_internal[t] & 2);
}

static char *block_internals(const Program *p) {
    char *internal = wf_checked(calloc((size_t)p->n_tensors + 1, 1), "memory pass");
    if (p->recompute != RECOMPUTE_FULL) return internal;
    for (int t = 1; t < p->n_tensors; t++) internal[t] = p->ops[p->tensors[t].producer].layer >= 0;
    for (int i = 0; i < p->n_ops; i++)
        for (int k = 0; k < p->ops[i].n_in; k++) {
            int t = p->ops[i].in[k];
            if (t > 0 && t < p->n_tensors && p->ops[i].layer != p->ops[p->tensors[t].producer].layer)
                internal[t] = 0;
        }
    return internal;
}

/* A tensor's place in its arena: its storage floats (half under act16),
 * aligned to 16 floats (64 bytes: vector loads and cuBLASLt like it). */
long memory_tensor_numel(const Program *p, int t) {
    return align16(tensor_storage(p, t));
}
#define tensor_numel memory_tensor_numel

/* What op o's backward needs kept from its forward (its row's rule), floats. */
static long saved_numel(const Program *p, const ir_op *o) {
    const op_row *r = op_row_of(o->kind);
    return r->saved ? r->saved(p, o) : 0;
}

static int selective(const Program *p, const ir_op *o) {
    return p->recompute == RECOMPUTE_SELECTIVE && op_row_of(o->kind)->selective;
}

/* The highest op whose backward reads tensor t (the first to need it in
 * backward), or -1; only ops of t's chunk read it. */
static int first_bwd_reader(const Program *p, int t) {
    int g = p->tensors[t].producer, end = p->chunk_end_op[p->ops[g].chunk];
    for (int i = end - 1; i > g; i--)
        if (memory_bwd_reads(p, i, t)) return i;
    return -1;
}

/* Selective recompute with sequence parallelism: a block's all-gather of
 * the sequence-parallel norm output is run again before the backward of the
 * linear that reads it (Korthikanti et al. 2022, section 4.2.3: the
 * backward keeps only this rank's 1/t shard, the norm's output, and gathers
 * it again), so the gathered (N, h) tensor lives only while its linear runs,
 * in the recompute region, not in every slot (nor, on the last stage, the
 * LM head's input in the region for the whole step).  Not under a split backward
 * (zero-bubble): W reads it long after B. */
static int regathered(const Program *p, const ir_op *o) {
    if (p->recompute != RECOMPUTE_SELECTIVE || o->kind != OP_TP_GATHER) return 0;
    if (p->sched && p->sched->split_backward) return 0;
    int r = first_bwd_reader(p, o->out);
    /* a block's gather, or the final norm's before the LM head (Megatron-LM's
     * output layer, a column-parallel linear under sequence parallelism, also
     * keeps only the shard and gathers it again in backward) */
    return r >= 0 && (o->layer >= 0 || op_row_of(p->ops[r].kind)->loss);
}

int memory_selective_op(const Program *p, int i) {
    return selective(p, &p->ops[i]) || regathered(p, &p->ops[i]);
}

int memory_regathered(const Program *p, int i) { return regathered(p, &p->ops[i]); }

int memory_regather_before(const Program *p, int i) {
    if (p->recompute != RECOMPUTE_SELECTIVE) return -1;
    const ir_op *o = &p->ops[i];
    for (int n = 0; n < o->n_in; n++) {
        int t = o->in[n];
        if (t <= 0 || t >= p->n_tensors) continue;
        const ir_op *g = &p->ops[p->tensors[t].producer];
        if (regathered(p, g) && first_bwd_reader(p, t) == i) return p->tensors[t].producer;
    }
    return -1;
}

/* A place in the stage's recompute region (once per stage, beside the
 * slots): a block-internal tensor or saved buffer (full recompute), or the
 * attention probabilities (selective).  One function runs at a time on a
 * stage and each rebuilds what it reads there, so every slot shares it. */
int memory_saved_in_region(const Program *p, const ir_op *o) {
    return block_internal(p, o->out) || selective(p, o) || regathered(p, o) ||
           (p->block_internal && o->out > 0 && o->out < p->n_tensors && (p->block_internal[o->out] & 4));
}
#define in_region memory_saved_in_region

int memory_tensor_in_region(const Program *p, int t) {
    return block_internal(p, t) || transient(p, t) || (t > 0 && t < p->n_tensors && regathered(p, &p->ops[p->tensors[t].producer]));
}

/* The output of a gelu whose backward is in c_proj's input gradient (fuse.c,
 * DGELU pair) has no gradient: nothing forms or reads it. */
int memory_carries_grad(const Program *p, int t) {
    return p->ops[p->tensors[t].producer].dgelu != DGELU_GELU;
}

int pass_memory(Program *p) {
    p->act16 = act16_decide(p);  /* before any size: it halves the activations */
    int dtype = !p->act16 ? DTYPE_FP32 : strcmp(p->precision, "bf16") == 0 ? DTYPE_BF16 : DTYPE_FP16;
    for (int t = 1; t < p->n_tensors; t++) {
        p->tensors[t].dtype = dtype;
        p->tensors[t].alias = p->tensors[t].dalias = 0;  /* memory_inplace.c, memory_grads.c set them */
    }
    p->act_numel = calloc((size_t)p->pp, sizeof(long));
    p->dact_numel = calloc((size_t)p->pp, sizeof(long));
    p->region_numel = calloc((size_t)p->pp, sizeof(long));
    for (int i = 0; i < p->n_ops; i++) p->ops[i].saved_numel = saved_numel(p, &p->ops[i]);
    free(p->block_internal);
    p->block_internal = block_internals(p);
    for (int stage = 0; stage < p->pp; stage++) {
        memory_lay_out_acts(p, stage);  /* memory_slot.c: the slot and the region */
    }
    if (memory_lay_out_grads(p) != 0) return -1;
    long N = (long)p->micro * p->seq;
    /* the largest scratch a backward needs (ops.h's scratch: attention's,
     * one head's (T, T) dP on the CPU, on CUDA the rowsum(P * dP) of every
     * query row; the LM head's chunk of logits, ops_loss.c) */
    long scratch = 16;
    for (int i = 0; i < p->n_ops; i++) {
        const op_row *r = op_row_of(p->ops[i].kind);
        long need = r->scratch ? r->scratch(p, &p->ops[i]) : 0;
        if (need > scratch) scratch = need;
    }
    p->scratch_numel = align16(scratch);
    /* tensor-parallel collectives stage a whole (N, width) tensor here (in
     * floats; under act16 the widened 16-bit values), and the vocabulary-
     * parallel loss its per-token statistics; under act16 a sequence-parallel
     * gather or reduce-scatter also stages one rank's piece after the whole
     * (runtime/common/tp.c; on the CPU under tp_comm16, its packed 16-bit
     * whole and piece) */
    long widest = 6;
    for (int i = 0; i < p->n_ops; i++) {
        const op_row *r = op_row_of(p->ops[i].kind);
        long width = p->tensors[p->ops[i].out].width;
        if ((r->coll_fwd != COLL_NONE || r->coll_bwd != COLL_NONE) && width > widest) widest = width;
    }
    long whole = N * widest;
    p->comm_numel = p->tp > 1 ? align16(whole) : 0;
    if (p->tp > 1 && (p->act16 || tp_comm16(p)) && p->sp) p->comm_numel += align16((whole + p->tp - 1) / p->tp);
    p->cast_numel = calloc((size_t)p->pp, sizeof(long));
    p->weight16_numel = calloc((size_t)p->pp, sizeof(long));
    p->stage16_numel = calloc((size_t)p->pp, sizeof(long));
    for (int stage = 0; stage < p->pp; stage++) {
        p->cast_numel[stage] = act16_cast_numel(p, stage);
        p->weight16_numel[stage] = act16_weight16_numel(p, stage);
        p->stage16_numel[stage] = act16_stage_numel(p, stage);
    }
    return memory_check(p);  /* no two live places overlap */
}
