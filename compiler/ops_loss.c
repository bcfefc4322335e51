/* ops_loss.c: the loss head's row (ops.c): the LM head's matmul over the
 * vocabulary fused with softmax cross-entropy, per token; vocabulary-
 * parallel under tensor parallelism (logits are never gathered). */
#include <string.h>

#include "ops.h"

/* Every backend runs the head fused and chunked in the backward
 * (wf_lmhead_xent_chunked, wf_vocab_xent_chunked: runtime/cpu/xent.c,
 * runtime/cuda/xent.cu and xent_vocab.c): logits, softmax, loss and both
 * backward GEMMs chunk by chunk of tokens, nothing saved between the passes,
 * so the program text is one for both backends and only the chunk size is
 * the backend's.
 *
 * Rows per chunk: as many as a budget of logits bytes holds, but never
 * fewer than a floor (nor more than the microbatch's tokens).  The floor is
 * what a chunk costs: each one streams the whole (V, C) weight through two
 * GEMMs and reads and writes the whole (V, C) fp32 gradient in the third
 * (dwte += dlogits^T x, whose inner dimension is the chunk), 16 V C bytes
 * against 6 k V C FLOPs for k rows.
 *
 * CPU: build/bench/lmhead_chunk at the tiny GPT's head (N 1024, C 256, V
 * 50304, two threads, on a machine shared with other jobs) measured the
 * chunked head at x1.67 / 1.40 / 1.21 / 1.13 of the unchunked pair's time
 * for chunks of 64 / 128 / 256 / 512 rows, and x0.95 for one chunk of 1024
 * (a second run: x3.7 / 1.9 / 1.55 / 1.08 / 0.86): 512 rows keeps the cost
 * near 10% while halving that head's logits (196 to 98 MiB); larger
 * microbatches gain more (16384 tokens: 3.1 GiB of logits unchunked, 98 MiB
 * in chunks).  The byte budget lets a small vocabulary take the microbatch
 * in one chunk.
 *
 * CUDA: an H100's tensor cores do about 300 FLOPs (bf16, ~990 TFLOP/s) per
 * byte of HBM (3.35 TB/s), so dwte's 8 V C bytes of read-modify-write per
 * chunk cost less than its 2 k V C FLOPs only from k ~ 1200 rows; a floor
 * of 2048 rows keeps that traffic under ~60% of the GEMM's time and the
 * whole chunk's overhead near 10-20% of the head (an estimate from those
 * peaks, not a measurement: no GPU was at hand), and a budget of 256 MiB of
 * logits (16-bit under act16: 2668 rows at V 50304) takes a GPT-2
 * microbatch of 8 x 1024 tokens in four chunks instead of 786 MiB whole. */
#define LMHEAD_CHUNK_BYTES (32L << 20)
#define LMHEAD_MIN_ROWS 512L
#define LMHEAD_CUDA_CHUNK_BYTES (256L << 20)
#define LMHEAD_CUDA_MIN_ROWS 2048L

/* bytes of one logit in the chunk's scratch: floats on a backend that
 * stages 16-bit activations (the CPU), else the activation storage's */
static long logit_bytes(const Program *p) {
    return backend_of(p)->act16_staged || !p->act16 ? 4 : 2;
}

long lmhead_chunk_rows(const Program *p) {
    long N = (long)p->micro * p->seq, VL = p->vocab_padded / p->tp;
    if (p->lmhead_chunk > 0) return p->lmhead_chunk < N ? p->lmhead_chunk : N;  /* the plan's */
    int cuda = backend_of(p)->cuda_cxx;
    long budget = cuda ? LMHEAD_CUDA_CHUNK_BYTES : LMHEAD_CHUNK_BYTES;
    long floor = cuda ? LMHEAD_CUDA_MIN_ROWS : LMHEAD_MIN_ROWS;
    long rows = budget / (logit_bytes(p) * (VL > 0 ? VL : 1));
    if (rows < floor) rows = floor;
    return rows < N ? rows : N;
}

const char *lmhead_check(const Program *p, int i) {
    const ir_op *o = &p->ops[i];
    const ir_param *w = &p->params[o->param[0]];
    if (w->shape[0] != p->vocab || w->shape[1] != op_in_width(p, o, 0)) return "LM head weight must be (vocab, width)";
    if (i != p->n_ops - 1) return "the loss must be the last op";
    return NULL;
}

/* Nothing: the backward computes the logits again, a chunk at a time. */
long lmhead_saved(const Program *p, const ir_op *o) {
    (void)p, (void)o;
    return 0;
}

/* One chunk's logits of this rank's vocabulary: floats on the CPU (its
 * kernels stage 16-bit activations as floats), in the activation storage on
 * CUDA (16-bit under act16). */
long lmhead_scratch(const Program *p, const ir_op *o) {
    (void)o;
    long n = lmhead_chunk_rows(p) * (p->vocab_padded / p->tp);
    return backend_of(p)->act16_staged ? n : act_storage(p, n);
}

/* this rank's vocab_padded / tp rows of the (tied or own) weight, on the
 * whole input (tp_copy; tp_gather of the rows under sp) */
int lmhead_shard(shard_ctx *r, const ir_op *o) {
    Program *p = shard_program(r);
    if (p->params[o->param[0]].split == SPLIT_NONE) {  /* untied (llama): split here */
        p->params[o->param[0]].shape[0] = p->vocab_padded;
        shard_split_param(p, o->param[0], SPLIT_ROWS, 1);
    }
    int in = shard_in(r, o, 0);
    int full = shard_add(r, p->sp ? OP_TP_GATHER : OP_TP_COPY, o, in, 0, -1, -1, shard_width(r, in), 1);
    return shard_add(r, OP_LMHEAD_XENT, o, full, 0, o->param[0], -1, 1, 1);
}

/* vocabulary-parallel: this rank's share of the vocabulary, as the linears' widths are */
double lmhead_flops(const Program *p, const ir_op *o) {
    return 2.0 * (double)op_in_width(p, o, 0) * p->vocab_padded / p->tp;
}

int lmhead_variant(const Program *p, const ir_op *o) {
    (void)o;
    return p->tp > 1;
}

/* The head's one call, whole backward or B half: it adds the parameter
 * gradient too, through wf_grad_ptr (a B half has no g). */
static void emit_chunked(writer *wr, const Program *p, int i, const operands *x) {
    /* a frozen head weight (weft.vlm's freeze: its input gradient alone) has
     * no gradient, not even an offset: NULL, and the kernel skips dwte */
    char dw[sizeof x->g0 + 96];
    if (p->ops[i].grad_w && grad16(p)) {  /* 16-bit gradients: widened here (B half too), stored by the caller */
        char name[WF_MAX_NAME + 8];
        macro_name(p->zero >= 2 ? "G_" : "P_", p->params[p->ops[i].param[0]].name, name, sizeof name);
        snprintf(dw, sizeof dw, "wf_widen_grads(c, %s, %ldL, 0, 0L)", name, p->params[p->ops[i].param[0]].numel);
    } else if (p->ops[i].grad_w) {
        snprintf(dw, sizeof dw, "wf_grad_ptr(c, 0) + %s", x->g0);
    } else {
        snprintf(dw, sizeof dw, "NULL");
    }
    if (p->tp == 1)
        emit(wr, "    wf_add_loss(c, wf_lmhead_xent_chunked(c, d + D_%s, %s, wf_losses(c),\n"
             "                                         wf_scratch(c), a + %s, w + %s, wf_targets(c),\n"
             "                                         wf_loss_scale(c), N, %ld, V, %ld));\n",
             x->in0, dw, x->in0, x->w0, x->in_width, lmhead_chunk_rows(p));
    else
        emit(wr, "    wf_add_loss(c, wf_vocab_xent_chunked(c, d + D_%s, %s, wf_losses(c),\n"
             "                                        wf_scratch(c), a + %s, w + %s, wf_targets(c),\n"
             "                                        wf_loss_scale(c), N, %ld, VL, wf_tp_rank(c) * VL, V,\n"
             "                                        %ld));\n",
             x->in0, dw, x->in0, x->w0, x->in_width, lmhead_chunk_rows(p));
}

void lmhead_emit_fwd(writer *wr, const Program *p, int i, const operands *x, const op_kernels *k) {
    (void)p, (void)i, (void)x, (void)k;
    emit(wr, "    /* the LM head and loss run in backward, fused and chunked */\n");
}

void lmhead_emit_bwd(writer *wr, const Program *p, int i, const operands *x, const op_kernels *k) {
    (void)k;
    emit_chunked(wr, p, i, x);
}

/* both halves in B: dwte needs the chunk's dlogits too */
void lmhead_emit_bwd_input(writer *wr, const Program *p, int i, const operands *x, const op_kernels *k) {
    (void)k;
    emit_chunked(wr, p, i, x);
}

void lmhead_emit_bwd_weight(writer *wr, const Program *p, int i, const operands *x, const op_kernels *k) {
    (void)p, (void)i, (void)x, (void)k;
    emit(wr, "    /* the LM head's weight gradient: in its B half (fused, chunked) */\n");
}
