/* ops.h: the op table.  One row per op_kind (program.h) says everything the
 * compiler knows about an op: its name, how many inputs and parameters it
 * takes, its shape rule, what its backward saves, how tensor parallelism
 * rewrites it, whether its activations may be stored in 16 bits, which
 * backends implement it, what it costs, and the runtime kernels the emitter
 * calls.  Every pass, the emitter and the simulator read the row instead of
 * switching on the kind.
 *
 * The rows are in ops.c, in op_kind order; the functions a row points to
 * live with the other ops of their family:
 *   ops_embed.c      embed, vocab_embed, pos_add
 *   ops_norm.c       layernorm, rmsnorm
 *   ops_linear.c     linear, bias_add
 *   ops_attention.c  attention, rope
 *   ops_pointwise.c  gelu, gelu_erf, add, swiglu
 *   ops_loss.c       lmhead_xent
 *   ops_tp.c         tp_copy, tp_reduce, tp_gather, tp_scatter
 *   ops_kernel.c     kernel (a user kernel, user_kernel.h)
 *   ops_vision.c     patch_embed, image_merge (weft.vlm)
 * Adding an op: README.md, "Adding an op". */
#ifndef WEFT_OPS_H
#define WEFT_OPS_H

#include "emit.h"
#include "program.h"

/* Backends with kernels for the op (a bit each). */
enum { BACKEND_CPU = 1, BACKEND_CUDA = 2 };

/* How `weft simulate` models one microbatch of the op (simulate.c). */
typedef enum {
    COST_GEMM,       /* a matmul of the input by the weight; backward 2x, W half of it */
    COST_ATTENTION,  /* per-head QK^T and PV (flash on CUDA) */
    COST_XENT,       /* vocabulary matmul + softmax cross-entropy */
    COST_NORM,       /* memory-bound, parameters' gradients a third of backward */
    COST_POINTWISE,  /* memory-bound activation function (calibrated as gelu) */
    COST_ADD,        /* memory-bound adds and lookups (calibrated as add) */
    COST_COMM,       /* a tensor-parallel collective (coll_fwd / coll_bwd) */
    COST_KERNEL,     /* a user kernel: its bytes and AST-counted FLOPs per value */
} op_cost;

/* A tensor-parallel collective over the tp group, per direction. */
typedef enum { COLL_NONE, COLL_ALLREDUCE, COLL_ALLGATHER, COLL_REDUCE_SCATTER } op_coll;

/* The runtime kernels (weft/rt.h) an op's calls name: forward, whole
 * backward, and zero-bubble's B (input gradient) and W (parameter
 * gradients) halves; NULL where the op has no such call. */
typedef struct {
    const char *fwd, *bwd, *bwd_input, *bwd_weight;
} op_kernels;

/* The rewrite the shard pass is building (shard.c); a row's shard rule adds
 * the op's tensor-parallel form through these. */
typedef struct shard_ctx shard_ctx;
Program *shard_program(shard_ctx *r);
/* op o's input k in the rewritten graph (0: none), and its rows divisor */
int shard_in(shard_ctx *r, const ir_op *o, int k);
int shard_rows(shard_ctx *r, const ir_op *o);
long shard_width(shard_ctx *r, int tensor);    /* a rewritten tensor's width */
/* Appends an op like `like` reading in (and in2, or 0), with parameters p0
 * and p1 (-1: none), writing a new (width, rows_div) tensor; returns it. */
int shard_add(shard_ctx *r, op_kind kind, const ir_op *like, int in, int in2, int p0, int p1,
              long width, int rows_div);
ir_op *shard_last(shard_ctx *r);               /* the op shard_add appended last */
/* The tp_copy (tp_gather under sp) of o's input 0, made once per tensor. */
int shard_gather_input(shard_ctx *r, const ir_op *o);
void shard_split_param(Program *p, int k, int split, int sections);
const ir_op *shard_consumer(const Program *p, int t);  /* first reader of original tensor t */

/* Emits one call of op i; k are the kernels of its variant. */
typedef void (*op_emit_fn)(writer *w, const Program *p, int i, const operands *x, const op_kernels *k);

typedef struct {
    const char *name;          /* as the prelude writes it ({ op = "linear", ... }) */
    int graph;                 /* 1: the model graph has it; 0: only the shard pass adds it */
    int in_min, in_max;        /* tensor inputs */
    int param_min, param_max;  /* parameters */
    /* shape rule: NULL if op i's inputs, parameters and output width agree,
     * else what is wrong (pass_check reports it with the plan line) */
    const char *(*check)(const Program *p, int i);
    /* floats its forward keeps for backward (NULL: none); per backend where
     * they differ (attention_saves_lse) */
    long (*saved)(const Program *p, const ir_op *o);
    /* floats of scratch its backward needs (NULL: none) */
    long (*scratch)(const Program *p, const ir_op *o);
    int selective;             /* recomputed under recompute = "selective" (its saved state shared) */
    int keeps_shape;           /* its output has its first input's width and rows (verify_ir) */
    /* in place: its output may take the place of an input of its size that
     * dies at it (the memory pass, memory_slot.c).  Only where both
     * backends' forward kernels run element by element (each value read
     * before it is written, no restrict) or skip a copy onto itself
     * (runtime/common/tp.c), and the 16-bit staging (runtime/cpu/stage16.c)
     * stages an aliased operand once. */
    int inplace;
    const char *hf_activation; /* an activation: its Hugging Face name (config.json's activation_function) */
    /* the tensor-parallel rewrite: appends the op's sharded form, returns
     * its output tensor (NULL: the op cannot be tensor-parallel) */
    int (*shard)(shard_ctx *r, const ir_op *o);
    /* 16-bit storage: 1 where the CPU emitter rounds every activation and
     * input gradient the op writes (act16.c's audit); NULL: not audited */
    int (*act16)(const Program *p, const ir_op *o);
    unsigned backends;         /* BACKEND_CPU | BACKEND_CUDA */
    int gemm_weight;           /* parameter 0 is a GEMM weight (16-bit copies under act16) */
    /* zero-bubble (a split backward): its parameter gradients wait for the
     * W half.  Only a GEMM's dW (x^T dy) does, as in Qi et al. 2023: it costs
     * as much as the input gradient and nothing before this stage waits for
     * it.  The others' parameter gradients (the norms' and biases' sums) run
     * in B with their input gradient, so their output gradient dies there
     * (under ZeRO >= 2 staged for W to add in, op_weight_grad_staged). */
    int defer_weight_grad;
    /* its input gradient is its output gradient (d(x + b)/dx = 1): the
     * memory pass gives both one place where its input has no other reader
     * (memory_grads.c), and its emitter then skips the input gradient's
     * copy (a bias add, ops_linear.c; the position add, ops_embed.c; the
     * all-reduce of a row-parallel linear's partial sums, whose backward
     * is the identity, ops_tp.c) */
    int grad_alias;
    int lookup;                /* parameter 0 is the token embedding, looked up (not a matmul) */
    int loss;                  /* ends the graph; its output is the per-token loss, which no
                                  kernel writes (losses go to wf_losses): never rounded */
    op_cost cost;
    /* forward FLOPs per token (partition's balance, inspect's durations);
     * NULL: memory-bound, partition counts 10 per output value */
    double (*flops)(const Program *p, const ir_op *o);
    op_coll coll_fwd, coll_bwd;
    /* kernels: k[0], or k[variant(p, o)] where the op has two forms */
    op_kernels k[2];
    int (*variant)(const Program *p, const ir_op *o);
    /* emission: forward, whole backward, and the B / W halves (NULL: an op
     * without parameters is all B, one without inputs all W where its row
     * defers its weight gradient; emit_ops.c's emit_backward_half) */
    op_emit_fn emit_fwd, emit_bwd, emit_bwd_input, emit_bwd_weight;
    /* its output's name in generated code: a fixed label ("A_EMBED"), or
     * named after its whole first parameter, or (NULL, 0) after its
     * parameters' prefix, or stem_N within its block where it has none */
    const char *label;
    int label_param;
    const char *stem;          /* NULL: the op's name */
} op_row;

/* The row of kind k; NULL outside the table (a kind added after a pass). */
const op_row *op_row_of(op_kind k);
const op_kernels *op_kernels_of(const Program *p, const ir_op *o);
int op_has_backend(op_kind k, unsigned backend);
int op_act16_always(const Program *p, const ir_op *o);  /* act16: audited, no condition */
/* Whether op o's parameter gradients are computed in W under a split
 * backward (zero-bubble): its row defers them (defer_weight_grad); 0 where
 * it has none to compute.  Every reader of the split (emitter, memory pass,
 * ZeRO plan, simulator) asks this. */
int op_weight_grad_in_w(const Program *p, const ir_op *o);
/* Whether op o's parameter gradients, computed in B, are staged there:
 * ZeRO >= 2 under a split backward.  A gradient written into its bucket's
 * buffer in B would be there before every W of the chunk, so that buffer
 * could share memory with no bucket W completes (zero_plan.c): all of them
 * live at once, the stage's whole gradient.  So B writes the sums into the
 * microbatch's gradient set (memory_grads.c) and W adds them into the
 * bucket at the op's place.  Not the LM head, whose chunked B call writes
 * its bucket (kept live through the chunk, zero_plan.c). */
int op_weight_grad_staged(const Program *p, const ir_op *o);
/* Whether op o writes its parameter gradients into their bucket in B under
 * a split backward: it has some, they do not wait for W and are not staged
 * for W to add in (the norms' and biases' without ZeRO >= 2, the chunked LM
 * head's always). */
int op_weight_grad_in_b(const Program *p, const ir_op *o);
/* Whether op o's input k's gradient shares its output gradient's place
 * (grad_alias, memory_grads.c): din = dout is there already, no copy. */
int op_dinput_shared(const Program *p, const ir_op *o, int k);
static inline long op_in_width(const Program *p, const ir_op *o, int k) { return p->tensors[o->in[k]].width; }
static inline long op_out_width(const Program *p, const ir_op *o) { return p->tensors[o->out].width; }

/* ---- the families' functions (ops_*.c) ---- */
const char *embed_check(const Program *p, int i);
int embed_shard(shard_ctx *r, const ir_op *o);
int embed_variant(const Program *p, const ir_op *o);
void embed_emit_fwd(writer *w, const Program *p, int i, const operands *x, const op_kernels *k);
void embed_emit_bwd(writer *w, const Program *p, int i, const operands *x, const op_kernels *k);
void vocab_embed_emit_fwd(writer *w, const Program *p, int i, const operands *x, const op_kernels *k);
void vocab_embed_emit_bwd(writer *w, const Program *p, int i, const operands *x, const op_kernels *k);
const char *pos_add_check(const Program *p, int i);
void pos_add_emit_fwd(writer *w, const Program *p, int i, const operands *x, const op_kernels *k);
void pos_add_emit_bwd(writer *w, const Program *p, int i, const operands *x, const op_kernels *k);
void pos_add_emit_bwd_input(writer *w, const Program *p, int i, const operands *x, const op_kernels *k);
void pos_add_emit_bwd_weight(writer *w, const Program *p, int i, const operands *x, const op_kernels *k);

const char *layernorm_check(const Program *p, int i);
const char *rmsnorm_check(const Program *p, int i);
long layernorm_saved(const Program *p, const ir_op *o);
long rmsnorm_saved(const Program *p, const ir_op *o);
int norm_shard(shard_ctx *r, const ir_op *o);
void layernorm_emit_fwd(writer *w, const Program *p, int i, const operands *x, const op_kernels *k);
void layernorm_emit_bwd(writer *w, const Program *p, int i, const operands *x, const op_kernels *k);
void layernorm_emit_bwd_input(writer *w, const Program *p, int i, const operands *x, const op_kernels *k);
void layernorm_emit_bwd_weight(writer *w, const Program *p, int i, const operands *x, const op_kernels *k);
void rmsnorm_emit_fwd(writer *w, const Program *p, int i, const operands *x, const op_kernels *k);
void rmsnorm_emit_bwd(writer *w, const Program *p, int i, const operands *x, const op_kernels *k);
void rmsnorm_emit_bwd_input(writer *w, const Program *p, int i, const operands *x, const op_kernels *k);
void rmsnorm_emit_bwd_weight(writer *w, const Program *p, int i, const operands *x, const op_kernels *k);

const char *linear_check(const Program *p, int i);
int linear_shard(shard_ctx *r, const ir_op *o);
double linear_flops(const Program *p, const ir_op *o);
void linear_emit_fwd(writer *w, const Program *p, int i, const operands *x, const op_kernels *k);
void linear_emit_bwd(writer *w, const Program *p, int i, const operands *x, const op_kernels *k);
void linear_emit_bwd_input(writer *w, const Program *p, int i, const operands *x, const op_kernels *k);
void linear_emit_bwd_weight(writer *w, const Program *p, int i, const operands *x, const op_kernels *k);
void bias_add_emit_fwd(writer *w, const Program *p, int i, const operands *x, const op_kernels *k);
void bias_add_emit_bwd(writer *w, const Program *p, int i, const operands *x, const op_kernels *k);
void bias_add_emit_bwd_input(writer *w, const Program *p, int i, const operands *x, const op_kernels *k);
void bias_add_emit_bwd_weight(writer *w, const Program *p, int i, const operands *x, const op_kernels *k);

const char *attention_check(const Program *p, int i);
long attention_saved(const Program *p, const ir_op *o);
long attention_scratch(const Program *p, const ir_op *o);
int heads_shard(shard_ctx *r, const ir_op *o);
double attention_flops(const Program *p, const ir_op *o);
int attention_variant(const Program *p, const ir_op *o);
void attention_emit_fwd(writer *w, const Program *p, int i, const operands *x, const op_kernels *k);
void attention_emit_bwd(writer *w, const Program *p, int i, const operands *x, const op_kernels *k);
const char *rope_check(const Program *p, int i);
int rope_act16(const Program *p, const ir_op *o);
void rope_emit_fwd(writer *w, const Program *p, int i, const operands *x, const op_kernels *k);
void rope_emit_bwd(writer *w, const Program *p, int i, const operands *x, const op_kernels *k);

const char *gelu_check(const Program *p, int i);
const char *add_check(const Program *p, int i);
const char *swiglu_check(const Program *p, int i);
int pointwise_shard(shard_ctx *r, const ir_op *o);
void unary_emit_fwd(writer *w, const Program *p, int i, const operands *x, const op_kernels *k);
void unary_emit_bwd(writer *w, const Program *p, int i, const operands *x, const op_kernels *k);
void binary_emit_fwd(writer *w, const Program *p, int i, const operands *x, const op_kernels *k);
void add_emit_bwd(writer *w, const Program *p, int i, const operands *x, const op_kernels *k);
void swiglu_emit_bwd(writer *w, const Program *p, int i, const operands *x, const op_kernels *k);

const char *lmhead_check(const Program *p, int i);
long lmhead_saved(const Program *p, const ir_op *o);
long lmhead_scratch(const Program *p, const ir_op *o);
long lmhead_chunk_rows(const Program *p);  /* the head's rows per chunk (fused, chunked in backward) */
int lmhead_shard(shard_ctx *r, const ir_op *o);
double lmhead_flops(const Program *p, const ir_op *o);
int lmhead_variant(const Program *p, const ir_op *o);
void lmhead_emit_fwd(writer *w, const Program *p, int i, const operands *x, const op_kernels *k);
void lmhead_emit_bwd(writer *w, const Program *p, int i, const operands *x, const op_kernels *k);
void lmhead_emit_bwd_input(writer *w, const Program *p, int i, const operands *x, const op_kernels *k);
void lmhead_emit_bwd_weight(writer *w, const Program *p, int i, const operands *x, const op_kernels *k);

const char *kernel_check(const Program *p, int i);
double kernel_flops(const Program *p, const ir_op *o);
int kernel_shard(shard_ctx *r, const ir_op *o);
void kernel_emit_fwd(writer *w, const Program *p, int i, const operands *x, const op_kernels *k);
void kernel_emit_bwd(writer *w, const Program *p, int i, const operands *x, const op_kernels *k);
/* ops_vision.c */
const char *patch_embed_check(const Program *p, int i);
long patch_embed_scratch(const Program *p, const ir_op *o);
int vision_shard(shard_ctx *r, const ir_op *o);
int vision_variant(const Program *p, const ir_op *o);
int vision_act16(const Program *p, const ir_op *o);  /* act16: not on CUDA with frozen parameters */
double patch_embed_flops(const Program *p, const ir_op *o);
int op_in_encoder(const Program *p, int i);  /* a VLM's vision encoder or projector op */
void patch_embed_emit_fwd(writer *w, const Program *p, int i, const operands *x, const op_kernels *k);
void patch_embed_emit_bwd(writer *w, const Program *p, int i, const operands *x, const op_kernels *k);
const char *image_merge_check(const Program *p, int i);
void image_merge_emit_fwd(writer *w, const Program *p, int i, const operands *x, const op_kernels *k);
void image_merge_emit_bwd(writer *w, const Program *p, int i, const operands *x, const op_kernels *k);

void tp_emit_fwd(writer *w, const Program *p, int i, const operands *x, const op_kernels *k);
void tp_emit_bwd(writer *w, const Program *p, int i, const operands *x, const op_kernels *k);

#endif
