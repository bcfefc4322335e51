/* program.h: the one Program that every compiler pass reads and extends.
 *
 * The passes, in the order main.c runs them:
 * load      fills the plan fields, the parameter list and the forward op list
 *           (blocks and inputs as the prelude's graph marks them), and the
 *           mesh's rank strides (rank_coords);
 * check     validates what the Lua prelude could not (shapes along the graph);
 * shard     splits parameters and adds tensor parallelism's collectives;
 * partition assigns ops to pipeline stages (chunks);
 * graph     derives the backward op list and the order gradients complete in,
 *           then fuses adjacent pairs (fuse.c);
 * schedule  builds and verifies each stage's instruction list;
 * buckets   lays the gradient arena out in backward order and cuts buckets;
 * memory    plans the activation arena and the per-rank memory;
 * zero      plans ZeRO-2/3's gradient bucket buffers and parameter gathers;
 * emit      writes the per-stage programs, config.json, ranks, build, launch.
 */
#ifndef WEFT_PROGRAM_H
#define WEFT_PROGRAM_H

#include <stdint.h>
#include <stdio.h>

#include "backend.h"
#include "schedule.h"
#include "weft/mesh.h"

#define WF_MAX_NAME 96
#define WF_MAX_NCCL_ENV 24   /* plan.nccl settings (the prelude knows fewer) */

typedef enum {
    /* ops the model graph (the Lua prelude) is written in */
    OP_EMBED, OP_LAYERNORM, OP_LINEAR, OP_ATTENTION, OP_GELU, OP_ADD, OP_LMHEAD_XENT,
    OP_RMSNORM, OP_ROPE, OP_SWIGLU,  /* the LLaMA family */
    OP_GELU_ERF,       /* the exact GELU, x Phi(x) (Hugging Face's "gelu") */
    OP_KERNEL,         /* a user kernel (weft.kernel, g:apply): ir_op.kernel names it */
    OP_PATCH_EMBED,    /* a VLM's image patches -> rows [0, P) of each sample (ops_vision.c) */
    OP_IMAGE_MERGE,    /* projected patches replace the image placeholders' embeddings */
    OP__GRAPH_COUNT,
    /* ops the shard pass adds for tensor parallelism */
    OP_VOCAB_EMBED = OP__GRAPH_COUNT, /* lookup of this rank's vocabulary rows (partial) */
    OP_POS_ADD,        /* + position embedding */
    OP_BIAS_ADD,       /* + bias, after a row-parallel reduction */
    OP_TP_COPY,        /* identity forward, all-reduce backward ("f") */
    OP_TP_REDUCE,      /* all-reduce forward, identity backward ("g") */
    OP_TP_GATHER,      /* sequence parallel: all-gather forward, reduce-scatter backward */
    OP_TP_SCATTER,     /* sequence parallel: reduce-scatter forward, all-gather backward */
    OP__COUNT
} op_kind;

typedef enum { INIT_ZEROS, INIT_ONES, INIT_NORMAL } init_kind;
enum { SPLIT_NONE, SPLIT_ROWS, SPLIT_COLS };
enum { RECOMPUTE_NONE, RECOMPUTE_FULL, RECOMPUTE_SELECTIVE };

/* A tensor Hugging Face's model has and Weft's does not compute with
 * (Graph:hf_constant): checkpoints hold it filled with value, or a copy of
 * parameter copy (-1: none). */
typedef struct {
    char name[WF_MAX_NAME];
    int ndim;
    long shape[4];
    double value;
    int copy;
} ir_hf_const;

typedef struct {
    char name[WF_MAX_NAME];
    int ndim;
    long shape[4];
    long numel;
    init_kind init;
    double std;
    int decay;
    /* set by shard: how tensor parallelism splits it */
    int split;          /* SPLIT_NONE (replicated), SPLIT_ROWS or SPLIT_COLS */
    int sections;       /* column blocks split separately (3 for fused q,k,v) */
    long gshape[4];     /* the full tensor's shape (shape[] is this rank's part) */
    int tp_partial;     /* replicated, but each tp rank holds a partial gradient (sp) */
    int transposed;     /* checkpoints store it (out, in), as Hugging Face nn.Linear: the
                           prelude marked it layout = "transposed" (LLaMA's projections) */
    int frozen;         /* weft.vlm's freeze: no gradient, no optimizer state (laid out after
                           the stage's trainable parameters, in no bucket) */
    int qkv;            /* layout "qkv": checkpoints store its q, k and v thirds (of the
                           output features) as three tensors, "qkv_proj" in its name
                           read as q_proj, k_proj and v_proj (SigLIP's attention) */
    /* set by partition */
    int stage;          /* pipeline stage holding it */
    int tied_to;        /* -1, or the parameter this is a copy of on another stage
                           (the LM head's wte on the last stage) */
    /* set by graph: index of the backward op that writes its last gradient */
    int last_grad_op;
    /* set by buckets */
    long offset;
    int bucket;
    int chunk;          /* pipeline chunk of the first op using it (set by buckets) */
} ir_param;

/* What an activation's rows are (ops.h's shape rules set them): today always
 * tokens of the microbatch; image patches would be a second kind. */
enum { ROWS_TOKENS };
/* How an activation is stored: floats, or the plan's 16-bit type two a float
 * (act16; set by the memory pass).  bf16 / fp16 values kept in floats (the
 * CPU backend's rounding under WEFT_ACT16=0) are stored as DTYPE_FP32. */
enum { DTYPE_FP32, DTYPE_BF16, DTYPE_FP16 };

/* An activation: rows x width values, plus what an op saves for backward. */
typedef struct {
    long width;      /* columns: values per row */
    int rows_of;     /* ROWS_TOKENS: a row per token of the microbatch (N = micro * seq) */
    int rows_div;    /* 1: all N rows; tp: this rank's N / tp (sp) */
    int dtype;       /* storage: DTYPE_FP32, or DTYPE_BF16 / DTYPE_FP16 under act16 */
    long offset;     /* in the activation slot */
    long doffset;    /* its gradient's, in an activation-gradient set (memory pass; -1: none) */
    int producer;    /* op index */
    int alias;       /* memory pass: the input whose place it takes (its producer runs in
                        place, ops.h's inplace, and that input dies there); 0: none */
    int dalias;      /* memory pass: the tensor whose gradient place its gradient shares
                        (memory_grads.c: a bias add's input, whose gradient is the bias
                        add's output gradient, ops.h's grad_alias); 0: none */
} ir_tensor;

/* What the memory pass placed, with its live interval (memory_check.c
 * verifies that no two live at once overlap; --dump=memory prints them).
 * Activation slots: intervals in forward op indices (a slot holds one
 * microbatch of one stage); the stage's recompute region: the same, or
 * under full recompute ticks of each block's forward then its backward
 * (memory_slot.c's clock).  Activation-gradient sets: in backward steps of
 * one chunk (step j runs op chunk_end - 1 - j); a set holds one chunk's
 * backward at a time, so only places of the same chunk can meet. */
enum { PLACE_ACT, PLACE_SAVED, PLACE_CHUNK_IN, PLACE_DACT, PLACE_DCHUNK_IN, PLACE_DPARAM };
typedef struct {
    int kind;          /* PLACE_*: where its offset is (memory_place_offset) */
    int stage, chunk;  /* chunk: the gradient's chunk (PLACE_D*), a slot place's under a pipeline, else -1 */
    int id;            /* tensor (PLACE_ACT, PLACE_DACT), op (PLACE_SAVED, PLACE_DPARAM), chunk (*CHUNK_IN) */
    int begin, end;    /* live interval, both ends included */
    int region;        /* PLACE_ACT / PLACE_SAVED: in the stage's recompute region */
    int zero_op;       /* PLACE_DACT: the op before whose backward it is zeroed (-1: received whole) */
    long numel;        /* floats it takes (aligned) */
} mem_place;

typedef struct {
    op_kind kind;
    int line;              /* the plan line the op came from (0: unknown) */
    int in[2], n_in;       /* tensor ids */
    int out;               /* tensor id */
    int param[2], n_param; /* parameter indices */
    int heads;             /* attention */
    int kv_heads;          /* attention with 2 inputs (rotated q|k, v) and rope: key/value heads */
    int prefix;            /* attention: positions [0, prefix) see each other both ways (0: causal) */
    double eps, theta;     /* rmsnorm epsilon; rope base */
    char parallel[8];      /* linear: "column" or "row" */
    int layer;             /* transformer block, -1 outside blocks */
    int chunk;             /* pipeline chunk (set by partition) */
    long saved_offset;     /* op-specific saved buffers (mean/rstd, att, probs) */
    long saved_numel;
    long wg_doffset;       /* its parameter gradients staged in B (ops.h's op_weight_grad_staged), in an
                              activation-gradient set (memory_grads.c; PLACE_DPARAM); -1: none */
    int fused;             /* set by graph (fuse.c): FUSED_NONE, or which end of a pair */
    int dgelu;             /* set by graph (fuse.c): DGELU_NONE, or which end of a backward pair */
    int kernel;            /* OP_KERNEL: index into Program.kernels (user_kernel.h) */
    /* set by graph (frozen parameters, weft.vlm's freeze): what its backward
     * must compute; neither: no backward at all */
    int grad_in;           /* its input gradients: an input depends on a trainable parameter */
    int grad_w;            /* its parameters' gradients: it has a trainable parameter */
} ir_op;

/* Whether op o's backward is whole: its input gradients (if it has inputs)
 * and its parameters' gradients (if it has parameters); fuse.c pairs only
 * such ops.  Frozen parameters (weft.vlm's freeze) leave part or all out. */
static inline int op_full_backward(const ir_op *o) {
    return (o->n_in == 0 || o->grad_in) && (o->n_param == 0 || o->grad_w);
}

/* Fused pairs keep both ops (and their tensors, saved buffers and gradient
 * completion points), so every pass after graph sees the same graph; only
 * emit writes one kernel for the two.  FUSED_ADD_LN_ADD: an add whose output
 * the next op, a FUSED_ADD_LN_NORM layernorm, normalizes: the add emits
 * nothing and the layernorm emits wf_residual_layernorm_*, at the
 * layernorm's place (where its parameters are gathered and its gradients
 * become final). */
enum { FUSED_NONE, FUSED_ADD_LN_ADD, FUSED_ADD_LN_NORM, FUSED_LIN_GELU_LINEAR, FUSED_LIN_GELU_GELU };
/* FUSED_LIN_GELU_LINEAR: a linear whose output the next op, a
 * FUSED_LIN_GELU_GELU gelu, reads: the linear emits wf_linear_gelu_* at its
 * own place (where its weights are gathered and its gradients become final),
 * forward and backward; the gelu emits nothing. */

/* Backward pairs, independent of the forward ones above (GPT-2's gelu is in
 * both): DGELU_LINEAR, a linear whose input is the output of the op before
 * it, a DGELU_GELU gelu, and that output's only reader: the linear's B half
 * emits wf_linear_dgelu_bwd_input, its input gradient with the gelu's
 * backward, straight into d(pre); the gelu's backward emits nothing, and the
 * linear that made pre (if FUSED_LIN_GELU_LINEAR) its plain input gradient. */
enum { DGELU_NONE, DGELU_LINEAR, DGELU_GELU };

typedef struct {
    long offset, numel;     /* in floats, into the gradient arena; numel counts the padding */
    long pad;               /* ZeRO over dp > 1: zero floats after its parameters, so that dp
                               divides numel and every rank's part is the same size (buckets.c) */
    int first_param, last_param;  /* indices in backward order */
    int ready_after_op;     /* backward op after which it is complete */
    int stage;
    /* a split backward (zero-bubble): every gradient of it is written into
     * the bucket in B, so its reduction starts (and, ZeRO >= 2, is waited)
     * in B rather than in W (buckets.c) */
    int start_in_b;
    /* a split backward: B writes one of its gradients at least (ops.h's
     * op_weight_grad_in_b, e.g. the chunked LM head's dwte; buckets.c) */
    int written_in_b;
    /* set by zero (zero_plan.c) */
    int chunk;              /* the pipeline chunk writing its gradients */
    int first_write_op;     /* backward op that first writes one of its gradients */
    int wait_after_op;      /* ZeRO >= 2: its reduce-scatter is waited after this op */
    long buffer;            /* ZeRO >= 2: offset of its gradient buffer (bucket-buffer arena) */
    long gather;            /* ZeRO-3: offset of its gathered parameters (gather arena) */
} ir_bucket;

/* ZeRO-3: one all-gather of a bucket's parameters and the span of ops that use
 * them.  Time t counts forward op i as i and backward op i as 2n - 1 - i. */
typedef struct {
    int bucket;
    int stage;
    int func;               /* the generated function it lies in: forward of chunk k
                               is k, backward of chunk k is n_chunks + k */
    int start, end;         /* first and last use */
    int issue;              /* when the all-gather is started (prefetch) */
} zero_gather;

typedef struct Program {
    /* where it came from */
    char plan_path[512];
    char plan_name[128];
    char plan_hash[17];
    /* model */
    char family[16];
    char input_kind[16];              /* the graph's input (g:input): "tokens" */
    int layers, hidden, heads, seq, vocab;
    int kv_heads, ffn_hidden;         /* llama (0 for gpt2) */
    double rope_theta, norm_eps;      /* llama */
    /* a VLM (weft.vlm): each sample's uint8 image_h x image_w x image_c image,
     * cut into image_positions patches of patch x patch, whose projections
     * replace the token rows [0, image_positions); 0: a text-only model */
    int image_h, image_w, image_c, patch, image_positions, image_token;
    int vit_layers, vit_hidden, vit_heads, vit_mlp;  /* its encoder (weft.vit) */
    /* mesh and cluster */
    int dp, tp, pp, world;
    /* the mesh as data (weft/mesh.h), laid out by mesh.order, fastest axis
     * first; dp, tp and pp above are its sizes, kept for the passes */
    wf_axis axes[WF_AXES];
    int n_axes;
    int sp;                 /* sequence parallelism inside the tp group */
    int vocab_padded;       /* vocab rounded up to a multiple of tp */
    int nodes, devices_per_node;
    int bind;               /* cluster.bind: WF_BIND_* (weft/bind.h) */
    char device[32];
    double device_fp32_tflops, device_tf32_tflops, device_fp16_tflops, device_bf16_tflops;
    double device_memory_gib, device_hbm_gbs;
    int device_sms;                       /* 0: unknown (no GEMM tile model) */
    double device_clock_mhz;
    double intra_gbs, intra_latency_us;   /* link inside a node */
    double inter_gbs, inter_latency_us;   /* link between nodes */
    double intra_bus_gbs, inter_bus_gbs;  /* NCCL bus bandwidth (0: gbs) */
    /* batch */
    int micro, global_batch, accum;
    /* optimizer and training */
    double lr, min_lr, beta1, beta2, eps, weight_decay, clip;
    int warmup, steps, log_every, ckpt_every;
    double fault_timeout_s;  /* fault.timeout_s: the longest wait on a peer */
    uint64_t seed;
    char data_train[512];
    char precision[8];
    /* fp16 loss scaling (prelude's check_loss_scale; unused in bf16 / fp32) */
    int loss_scale_dynamic, loss_scale_window, loss_scale_hysteresis;
    double loss_scale_initial, loss_scale_min;
    int zero;
    int offload_optimizer;  /* AdamW state and update in host memory */
    int offload_params;     /* ZeRO-3: the parameter shard in host memory */
    int zero_prefetch;      /* ZeRO-3: all-gathers started this many gathers ahead */
    double zero_prefetch_mb;/* ... or as many as fit in this many MiB (< 0: not given) */
    int recompute;          /* RECOMPUTE_FULL: block by block; _SELECTIVE: attention core */
    double bucket_mb;
    /* pipeline */
    char schedule[16];
    int scatter_gather;     /* pipeline.scatter_gather: messages split across tp ranks */
    int virt;               /* chunks per pipeline rank (interleaved) */
    int n_chunks;           /* pp * virt */
    int *chunk_layers;      /* layers per chunk, from the plan (or NULL: balance) */
    int *chunk_first_op, *chunk_end_op;  /* op range [first, end) of each chunk */
    int *chunk_in, *chunk_out;           /* boundary tensors (0 at the ends) */
    long *chunk_in_offset;  /* where the receiving stage keeps chunk_in */
    long *chunk_in_doffset; /* and its gradient, in an activation-gradient set */
    /* user kernels the graph applies (user_kernel.h), checked by load */
    struct user_kernel *kernels; int n_kernels;
    /* graph */
    ir_param *params; int n_params;
    ir_hf_const *hf_consts; int n_hf_consts;
    ir_op *ops; int n_ops;
    ir_tensor *tensors; int n_tensors;
    int *grad_order;        /* parameter indices in the order their gradients complete */
    schedule *sched;        /* pipeline schedule (pp > 1), verified */
    /* buckets and memory */
    ir_bucket *buckets; int n_buckets;
    /* per pipeline stage (arrays of pp): arena sizes in floats */
    long *param_numel;      /* parameters (and gradients) */
    long *train_numel;      /* its trainable prefix: the gradient arena (frozen parameters follow) */
    long *act_numel;        /* one activation slot, incl. saved buffers (not the region) */
    long *dact_numel;       /* one activation-gradient set (the largest chunk's packed gradients) */
    int *dact_sets;         /* sets a stage reserves: backwards live at once (memory_grads.c) */
    mem_place *places; int n_places;  /* the memory pass's placements, for its checker */
    long *shard_numel;      /* ZeRO: dp rank 0's compact shard of the stage's buckets */
    long *grad_buf_numel;   /* ZeRO >= 2: the bucket-buffer arena */
    long *gather_numel;     /* ZeRO-3: the gather arena */
    zero_gather *gathers; int n_gathers;  /* ZeRO-3: per microbatch, by stage and start */
    long scratch_numel;
    long comm_numel;        /* staging for tensor-parallel collectives, floats */
    char *block_internal;   /* per tensor (memory pass): bit 0 rebuilt by full recompute, never read outside its
                               block; bits 1, 2: its place, its op's saved buffer in the region (memory_slot.c) */
    long *region_numel;     /* per stage: the recompute region, once beside the slots
                               (block internals under full, attention probabilities
                               under selective recompute; memory.c) */
    /* derived figures */
    long n_param_total;
    double flops_per_token;  /* 6N + 12 L h s */
    /* --backend cuda's communication (plan.comm, plan.nccl; comm_env.c) */
    char comm[8];            /* "nccl" or "mpi" (host-staged; ranks may share a GPU) */
    char tp_comm[8];         /* plan.tp_comm: "auto", "fp32", "bf16" or "fp16" (wire.c) */
    char grad_accum[8];      /* plan.grad_accum: "auto", "fp32", "bf16" or "fp16" (model_state.c) */
    char param_storage[8];   /* plan.param_storage: "auto" or "fp32" (param16.c) */
    char dp_comm[8];         /* plan.dp_comm: "fp32", "bf16" or "fp16" (wire.c) */
    long lmhead_chunk;       /* plan.lmhead_chunk: CPU LM head rows per chunk, 0 auto (ops_loss.c) */
    char nccl_env[WF_MAX_NCCL_ENV][160];  /* "NCCL_ALGO=Ring", sorted by name */
    int n_nccl_env;
    /* --backend: "cuda", or "cpu" (also empty); set after load, read by the
     * memory pass, check and simulate: the backends save different buffers */
    char backend[8];
    /* 16-bit activation storage (act16.c, decided by the memory pass): 1
     * stores activations and their gradients as the plan's 16-bit type, two
     * values a float (weft/rt.h, "Activation storage") */
    int act16;
    /* 16-bit working parameters (param16.c, decided by the zero pass) */
    int param16;
    /* 16-bit weight gradients (grad16.c, decided by the zero pass) */
    int grad16;
    long *cast_numel;        /* per stage, act16 under ZeRO-3: the CUDA cast buffer, floats (else 0) */
    long *weight16_numel;    /* per stage, act16 without ZeRO-3: the 16-bit weight copies, floats */
    long *stage16_numel;     /* per stage, act16 on the CPU: one kernel call's float staging (else 0) */
} Program;

/* The reporter: passes never print to stdout; diagnostics go through here. */
void wf_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Sends wf_error's messages into buf (the first one kept) instead of stderr;
 * NULL restores stderr.  For `weft plan`, which compiles many candidates. */
void wf_error_capture(char *buf, size_t n);
/* Returns q, or reports "out of memory (what)" and exits (status 3) if NULL. */
void *wf_checked(void *q, const char *what);
/* report.c: an error naming op i and, where known, its plan line; returns -1 */
int wf_op_error(const Program *p, int i, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

typedef int (*pass_fn)(Program *p);
typedef void (*dump_fn)(const Program *p, FILE *out);

int pass_load(Program *p, const char *path, const char *const *overrides, int n_overrides);
int pass_check(Program *p);
int pass_shard(Program *p);
int pass_partition(Program *p);
int pass_graph(Program *p);
int graph_mark_gradients(Program *p);       /* graph.c: each op's grad_in / grad_w (weft.vlm's freeze) */
void fuse_residual_layernorm(Program *p);   /* fuse.c, the end of pass_graph */
int count_fused(const Program *p);         /* fused pairs, for reports */
void fuse_linear_gelu(Program *p);          /* fuse.c, after fuse_residual_layernorm */
int count_fused_linear_gelu(const Program *p);
void fuse_linear_dgelu(Program *p);         /* fuse.c, after fuse_linear_gelu */
int count_fused_linear_dgelu(const Program *p);
int pass_schedule(Program *p);
int pass_buckets(Program *p);
int pass_memory(Program *p);
/* 1 where the backend's attention saves only the log-sum-exp per query row
 * (runtime/cuda/attention.cu, flash style) instead of the (T, T) probabilities
 * per head: --backend cuda, for GPT-2's attention and LLaMA's grouped-query
 * attention alike (B*H*T floats, H the query heads; its scratch the same). */
int attention_saves_lse(const Program *p, const ir_op *o);
int pass_zero(Program *p);   /* zero_plan.c: bucket buffers, gathers, shards */
/* act16.c: whether this plan stores activations in 16 bits (bf16 / fp16,
 * only audited ops), set by pass_memory before it sizes
 * anything; the floats n activation values take in storage (n, or (n + 1) / 2
 * under act16); tensor t's storage floats for one microbatch (unaligned: what
 * messages and copies move); a stage's 16-bit weight copies (act16 without
 * ZeRO-3, else 0) and its cast buffer (act16 under ZeRO-3, else 0), both
 * CUDA's; on the CPU the float staging of a kernel call's operands. */
int act16_decide(const Program *p);
long act_storage(const Program *p, long n);
long tensor_storage(const Program *p, int t);
long tensor_rows(const Program *p, int t);   /* tensor t's rows on this rank, one microbatch */
const char *dtype_name(int dtype);           /* "fp32", "bf16", "fp16" */
long act16_weight16_numel(const Program *p, int stage);
long act16_cast_numel(const Program *p, int stage);
long act16_stage_numel(const Program *p, int stage);
int pass_emit(const Program *p, const char *out_dir, const char *runtime_dir);
/* backend "cpu" (as pass_emit) or "cuda": stageN.cu and a CUDA build file
 * (emit.c); cuda_backend_check refuses what runtime/cuda lacks (backend_cuda.c). */
int pass_emit_backend(const Program *p, const char *out_dir, const char *runtime_dir,
                      const char *backend);
int cuda_backend_check(const Program *p);

void program_free(Program *p);
int program_slots(const Program *p, int stage);   /* activation slots a stage reserves */
int program_dact_sets(const Program *p, int stage);  /* activation-gradient sets a stage reserves */
/* memory_check.c: where place pl's offset is; 0 if no two places live at the
 * same time overlap and each lies inside its arena, else -1 after reporting
 * the first pair; `out`: --dump=memory's listing. */
long memory_place_offset(const Program *p, const mem_place *pl);
void memory_add_place(Program *p, const mem_place *pl);
/* memory.c: tensor t's floats in an arena (aligned); whether it has a gradient */
long memory_tensor_numel(const Program *p, int t);
int memory_carries_grad(const Program *p, int t);
/* floats of op o's parameter gradients staged in B (memory_grads.c) */
long memory_staged_numel(const Program *p, const ir_op *o);
/* memory.c: whether tensor t / op o's saved buffer is in the stage's recompute region */
int memory_tensor_in_region(const Program *p, int t);
int memory_saved_in_region(const Program *p, const ir_op *o);
/* memory.c: whether selective recompute reruns op i (attention, the
 * regathered sequence-parallel gathers); the gather to rerun just before op
 * i's backward, or -1 */
int memory_selective_op(const Program *p, int i);
int memory_regather_before(const Program *p, int i);
/* memory_slot.c: whether op i's backward reads activation t; the stage's
 * slot layout (packed by live interval, a chunk per slot), its size */
int memory_bwd_reads(const Program *p, int i, int t);
void memory_lay_out_acts(Program *p, int stage);
/* memory.c: full recompute's block-internal tensors; op i a regathered gather */
int memory_block_internal(const Program *p, int t);
int memory_regathered(const Program *p, int i);
/* memory_grads.c: the activation-gradient layout and sets (after the slots) */
int memory_lay_out_grads(Program *p);
int memory_check(const Program *p);
void memory_dump(const Program *p, FILE *out);
void program_dump(const Program *p, const char *after_pass, FILE *out);
void program_report(const Program *p, FILE *out);   /* `weft check` */
void ckpt_report(const Program *p, FILE *out);      /* its checkpoint section (report_ckpt.c) */
void startup_report(const Program *p, FILE *out);   /* its start-up line (report_startup.c) */
double startup_peak_of(const Program *p, int s, int resume);  /* stage s, bytes (startup_peak.h) */
/* report_ckpt.c: what a save asks of stage s's ranks, bytes of host memory
 * (ckpt_peak.h): the writer's (dp 0, tp 0) peak saving synchronously, the
 * copy --async-save holds until written and its peak while copying, and
 * the writer's peak where MPI gives no MPI_THREAD_MULTIPLE (whole_stage);
 * another dp 0 rank's and the rest's peaks; the tensor data of its two files
 * (pp > 1: its two shards). */
typedef struct {
    double held, peak, sync, whole_stage, dp0, other, model_file, optim_file;
} ckpt_stage;
ckpt_stage ckpt_stage_of(const Program *p, int s);
/* The figures the runtime's metrics are measured against (report.c): the
 * planned bytes of one rank of `stage` (device and host memory together), and
 * the peak TFLOP/s of one device at the plan's precision. */
double program_planned_bytes(const Program *p, int stage);
/* memory.c: one rank of `stage`, bytes: parameters, gradients, optimizer
 * state, activations and their gradients, scratch (kernel scratch, losses,
 * tokens, tp staging, pp receive buffers), act16's cast buffer (ZeRO-3) or
 * 16-bit weight copies (w16), the runtime's own buffers (tables; on CUDA weft/runtime_buffers.h's), their
 * device total, and what offload keeps in host memory. */
typedef struct {
    double params, grads, optim, acts, dacts, scratch, cast, w16, runtime, total, host;
    double master, moments;  /* optim's (and offload's) parts: fp32 masters, AdamW m and v */
} program_memory;
program_memory program_memory_of(const Program *p, int stage);
/* report.c: "12.57 GiB", "960.00 KiB", "64 B" */
void program_human_bytes(double bytes, char *out, size_t n);
double program_peak_tflops(const Program *p);
/* `weft check`'s lines on plan.comm / plan.nccl (comm_env.c); none for a
 * plan that leaves both at their defaults. */
void comm_report(const Program *p, FILE *out);

/* wire.c: the bytes on the wire.  tp_comm16: the tensor-parallel
 * collectives carry the plan's 16-bit type (valid after the memory pass);
 * the bytes of a value they sum / gather and its dtype name; one pipeline
 * message's bytes; the whole tensor op i's forward / backward collective
 * moves (0: none).  wire_per_step: the bytes all ranks send in one step, by
 * kind and link class (ring collectives); wire_report: `weft check`'s table. */
int tp_comm16(const Program *p);
/* model_state.c: 1 when weight gradients accumulate in the plan's 16-bit
 * type (bf16 / fp16 with plan.grad_accum "auto" or that type: rounded after
 * every accumulation), 0 in fp32.  model_state_of: one rank of `stage`'s
 * model state (its parameters, gradients, fp32 masters and AdamW moments, as
 * memory.c counts them) per parameter the rank computes with; model_state_report:
 * `weft check`'s lines on it. */
int grad_accum16(const Program *p);
/* param16.c: param16_decide (the zero pass, after the memory pass), then param16: 1 when the
 * working parameters are stored in the plan's 16-bit type (bf16 / fp16,
 * plan.param_storage "auto", the CPU backend, and it saves bytes
 * on every stage), 0 when the parameter arena holds floats.
 * param16_scratch_numel: the floats one op's parameters take widened (the
 * largest op of the stage; 0 without param16). */
int param16_decide(const Program *p);
int param16(const Program *p);
/* param16_in_place: 1 when op i's first parameter, a GEMM weight, is read
 * in 16 bits where it is stored (CUDA), not widened into the scratch. */
int param16_in_place(const Program *p, int i);
long param16_scratch_numel(const Program *p, int stage);
/* grad16.c: grad16_decide (the zero pass, after param16_decide), then
 * grad16: 1 when the weight gradients are stored in the plan's 16-bit type
 * (bf16 / fp16 accumulated in that type, the CPU backend, ZeRO < 3, and it
 * saves bytes on every stage).  grad16_scratch_numel: the floats one op's
 * parameter gradients take widened (the stage's largest op);
 * grad16_stage_numel: the float staging of the sums (a bucket's dp sum and
 * the tp / tied sums after it); both 0 without grad16. */
int grad16_decide(const Program *p);
int grad16(const Program *p);
long grad16_scratch_numel(const Program *p, int stage);
long grad16_stage_numel(const Program *p, int stage);
/* ZeRO-1: the floats of the parts summed after the dp sum (tp, tied) that
 * a rank keeps until the optimizer step, the most of any dp rank */
long grad16_zero1_float_numel(const Program *p, int stage);
typedef struct {
    double params;   /* working weights (both 2BW versions), act16's 16-bit GEMM copies or cast buffer */
    double grads;    /* the gradient arena, ZeRO's shard and bucket buffers */
    double master;   /* fp32 masters (16-bit plans) */
    double moments;  /* AdamW m and v */
    double total;    /* bytes per parameter, all four (device and host) */
    double numel;    /* the parameters of one rank of the stage (its tp / pp share) */
} model_state;
model_state model_state_of(const Program *p, int stage);
void model_state_report(const Program *p, FILE *out);
int tp_sum_bytes(const Program *p);
int tp_gather_bytes(const Program *p);
const char *tp_sum_dtype(const Program *p);
const char *tp_gather_dtype(const Program *p);
long pipe_message_bytes(const Program *p);
long pipe_send_bytes(const Program *p);
long dp16_staging_numel(const Program *p, int stage);  /* dp_comm.c's staging, floats (0: none) */
int dp_comm16(const Program *p);  /* the gradient all-reduce carries the 16-bit type */  /* a tp rank's part of it: 1/tp under scatter/gather */
long tp_op_bytes(const Program *p, int i, int backward);
typedef struct { double intra, inter; } wire_bytes;
/* pp_gather: scatter/gather's all-gathers of the received slices (tp links) */
typedef struct { wire_bytes tp, pp, dp, tied, total, pp_gather; } wire_step;
wire_step wire_per_step(const Program *p);
void wire_report(const Program *p, FILE *out);

const char *op_name(op_kind k);
long untied_embedding(const Program *p);  /* token embedding elements that are no matmul */

#endif
