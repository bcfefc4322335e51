/* emit_ops.c: the generated call for each op, forward and backward (and its
 * B and W halves for zero-bubble schedules), with readable operand names. */
#include <ctype.h>
#include <string.h>

#include "emit.h"

/* ---- names ---------------------------------------------------------------- */

/* "h.0.attn.c_attn.weight" -> "P_H0_ATTN_C_ATTN_WEIGHT" */
void macro_name(const char *prefix, const char *name, char *out, size_t n) {
    size_t k = (size_t)snprintf(out, n, "%s", prefix);
    for (const char *s = name; *s && k + 1 < n; s++) {
        if (*s == '.' && isdigit((unsigned char)s[1]) && s > name && isalpha((unsigned char)s[-1]))
            continue;  /* h.0 -> H0 */
        out[k++] = isalnum((unsigned char)*s) ? (char)toupper((unsigned char)*s) : '_';
    }
    out[k] = 0;
}

/* A readable label for op i's output: its parameter prefix where it has one. */
void op_label(const Program *p, int i, char *out, size_t n) {
    const ir_op *o = &p->ops[i];
    char prefix[WF_MAX_NAME] = "";
    if (o->kind == OP_EMBED || o->kind == OP_POS_ADD) {
        snprintf(out, n, "A_EMBED");
        return;
    }
    if (o->kind == OP_VOCAB_EMBED) {
        snprintf(out, n, "A_EMBED_PARTIAL");
        return;
    }
    if (o->kind == OP_BIAS_ADD) {  /* named after the whole bias: h.0.attn.c_proj.bias */
        macro_name("A_", p->params[o->param[0]].name, out, n);
        return;
    }
    if (o->kind == OP_LMHEAD_XENT) {
        snprintf(out, n, "A_LOSS");
        return;
    }
    if (o->n_param > 0) {
        snprintf(prefix, sizeof prefix, "%s", p->params[o->param[0]].name);
        char *dot = strrchr(prefix, '.');
        if (dot) *dot = 0;
    } else {
        /* count ops of this kind earlier in the same block */
        int nth = 1;
        for (int j = 0; j < i; j++)
            if (p->ops[j].kind == o->kind && p->ops[j].layer == o->layer) nth++;
        const char *what = o->kind == OP_ADD ? "residual" : op_name(o->kind);
        if (o->layer >= 0) snprintf(prefix, sizeof prefix, "h.%d.%s_%d", o->layer, what, nth);
        else snprintf(prefix, sizeof prefix, "%s_%d", what, nth);
    }
    macro_name("A_", prefix, out, n);
}

/* Operand spellings used in the calls below. */
static void pname(const Program *p, const ir_op *op, int k, char *out, size_t n) {
    macro_name("P_", p->params[op->param[k]].name, out, n);
}

/* While a pipeline chunk is written, its input tensor is the copy received
 * into this stage's arena. */
static int chunk_in_tensor, chunk_in_index;

void emit_set_chunk_input(int tensor, int chunk) {
    chunk_in_tensor = tensor;
    chunk_in_index = chunk;
}

static void tname(const Program *p, int tensor, char *out, size_t n) {
    if (tensor && tensor == chunk_in_tensor) {
        snprintf(out, n, "A_IN_C%d", chunk_in_index);
        return;
    }
    op_label(p, p->tensors[tensor].producer, out, n);
}

static void sname(const Program *p, int i, char *out, size_t n) {
    char label[WF_MAX_NAME + 8];
    op_label(p, i, label, sizeof label);
    snprintf(out, n, "S%s", label + 1);
}

void get_operands(const Program *p, int i, operands *x) {
    const ir_op *op = &p->ops[i];
    memset(x, 0, sizeof *x);
    tname(p, op->out, x->out, sizeof x->out);
    if (op->n_in > 0) tname(p, op->in[0], x->in0, sizeof x->in0);
    if (op->n_in > 1) tname(p, op->in[1], x->in1, sizeof x->in1);
    if (op->n_param > 0) pname(p, op, 0, x->w0, sizeof x->w0);
    if (op->n_param > 1) pname(p, op, 1, x->w1, sizeof x->w1);
    const char *gp = p->zero >= 2 ? "G_" : "P_";
    if (op->n_param > 0) macro_name(gp, p->params[op->param[0]].name, x->g0, sizeof x->g0);
    if (op->n_param > 1) macro_name(gp, p->params[op->param[1]].name, x->g1, sizeof x->g1);
    sname(p, i, x->s, sizeof x->s);
    int sharded = p->tensors[op->out].rows_div > 1;
    x->rows = sharded ? "NL" : "N";
    x->row0 = sharded ? "wf_tp_rank(c) * NL" : "0";
    x->width = p->tensors[op->out].width;
    x->in_width = op->n_in > 0 ? p->tensors[op->in[0]].width : 0;
}

/* ---- 16-bit storage (bf16 / fp16) ----------------------------------------
 * Where values are rounded to 16 bits (runtime/cpu/precision.c), so that the
 * float arenas hold exactly what 16-bit tensors would:
 *   - after each forward op: its output (the loss head's fp32 dlogits and
 *     losses excepted, as Megatron keeps the cross-entropy in fp32);
 *   - after each backward op (or B half): the gradients of its inputs, which
 *     it accumulated into;
 *   - after each backward op (or W half): its parameters' gradients, so that
 *     accumulation over microbatches is in 16 bits;
 * saved buffers (layernorm statistics, attention probabilities) stay fp32.
 * Nothing is emitted under fp32, whose programs are unchanged.  Under act16
 * (act16.c: --backend cuda) the kernels store activations and their
 * gradients as rounded 16-bit values themselves: only parameter gradients
 * are rounded here. */
static const char *round_fn(const Program *p) {
    if (strcmp(p->precision, "bf16") == 0) return "wf_to_bf16";
    if (strcmp(p->precision, "fp16") == 0) return "wf_to_fp16";
    return NULL;
}

/* The rounding call for activations and their gradients, or NULL. */
static const char *act_round_fn(const Program *p) {
    return p->act16 ? NULL : round_fn(p);
}

static void round_output(writer *o, const Program *p, int i, const operands *x) {
    const char *fn = act_round_fn(p);
    if (!fn || p->ops[i].kind == OP_LMHEAD_XENT) return;
    emit(o, "    %s(c, a + %s, %s * %ldL);\n", fn, x->out, x->rows, x->width);
}

static void round_input_grads(writer *o, const Program *p, int i, const operands *x) {
    const char *fn = act_round_fn(p);
    const ir_op *op = &p->ops[i];
    if (!fn) return;
    for (int k = 0; k < op->n_in; k++) {
        const ir_tensor *t = &p->tensors[op->in[k]];
        emit(o, "    %s(c, d + %s, %s * %ldL);\n", fn, k ? x->in1 : x->in0, t->rows_div > 1 ? "NL" : "N",
             t->width);
    }
}

static void round_param_grads(writer *o, const Program *p, int i, const operands *x) {
    const char *fn = round_fn(p);
    const ir_op *op = &p->ops[i];
    if (!fn) return;
    for (int k = 0; k < op->n_param; k++)
        emit(o, "    %s(c, g + %s, %ldL);\n", fn, k ? x->g1 : x->g0, p->params[op->param[k]].numel);
}

/* ---- fused residual add + layernorm (fuse.c) --------------------------------
 * The pair's add (op i - 1 of the layernorm i) emits nothing; the layernorm
 * emits the fused call.  The kernel rounds the residual itself before
 * normalizing it (and the residual's gradient before passing it on), so the
 * 16-bit rounding calls are those of the unfused pair less the two on the
 * residual stream, which the fused kernel never leaves unrounded. */
static void emit_fused_comment(writer *o, const Program *p, int i, const char *what) {
    operands ln;
    get_operands(p, i + 1, &ln);
    emit(o, "    /* %s: %s the fused residual + layernorm of %s */\n", op_name(p->ops[i].kind), what, ln.out);
}

static void emit_fused_fwd(writer *o, const Program *p, int i, const operands *x) {
    operands add;
    get_operands(p, i - 1, &add);
    emit(o, "    wf_residual_layernorm_fwd(c, a + %s, a + %s, a + %s, a + %s + %s, a + %s, a + %s, w + %s, w + %s,\n"
         "                              %s, %ld);\n", x->in0, x->out, x->s, x->s, x->rows, add.in0, add.in1,
      x->w0, x->w1, x->rows, x->width);
}

/* weight: 1 for the whole backward, 0 for zero-bubble's B half */
static void emit_fused_bwd(writer *o, const Program *p, int i, const operands *x, int weight) {
    operands add;
    get_operands(p, i - 1, &add);
    if (weight)
        emit(o, "    wf_residual_layernorm_bwd(c, d + %s, d + %s, g + %s, g + %s, d + %s, d + %s, a + %s, w + %s,\n"
             "                              a + %s, a + %s + %s, %s, %ld);\n", add.in0, add.in1, x->g0, x->g1,
          x->in0, x->out, x->in0, x->w0, x->s, x->s, x->rows, x->rows, x->width);
    else
        emit(o, "    wf_residual_layernorm_bwd_input(c, d + %s, d + %s, d + %s, d + %s, a + %s, w + %s,\n"
             "                                    a + %s, a + %s + %s, %s, %ld);\n", add.in0, add.in1, x->in0,
          x->out, x->in0, x->w0, x->s, x->s, x->rows, x->rows, x->width);
}

/* ---- fused linear + GELU (fuse.c) -----------------------------------------
 * The linear (op i) emits the fused call at its place, forward and backward;
 * its gelu (op i + 1) emits only a comment.  The fused kernels store pre and
 * out rounded to the plan's 16-bit type and round d(pre) themselves, so of
 * the unfused pair's rounding calls only the linear's backward ones remain
 * (its input and parameter gradients). */
static void emit_linear_gelu_comment(writer *o, const Program *p, int i, const char *what) {
    operands lin;
    get_operands(p, i - 1, &lin);
    emit(o, "    /* gelu: %s the fused linear + gelu of %s */\n", what, lin.out);
}

static void emit_linear_gelu_fwd(writer *o, const Program *p, int i, const operands *x) {
    operands g;
    get_operands(p, i + 1, &g);
    emit(o, "    wf_linear_gelu_fwd(c, a + %s, a + %s, a + %s, w + %s, %s%s, N, %ld, %ld);\n", x->out, g.out,
         x->in0, x->w0, p->ops[i].n_param > 1 ? "w + " : "NULL", x->w1, x->in_width, x->width);
}

/* the B half: the gelu's backward into d(pre), then the linear's input
 * gradient; only the latter where the next linear's input gradient did the
 * gelu's backward already (fuse_linear_dgelu, below) */
static void emit_linear_gelu_bwd_input(writer *o, const Program *p, int i, const operands *x) {
    operands g;
    get_operands(p, i + 1, &g);
    if (p->ops[i + 1].dgelu == DGELU_GELU)
        emit(o, "    wf_linear_bwd_input(c, d + %s, d + %s, w + %s, N, %ld, %ld);\n", x->in0, x->out, x->w0,
             x->in_width, x->width);
    else
        emit(o, "    wf_linear_gelu_bwd_input(c, d + %s, d + %s, d + %s, a + %s, w + %s, N, %ld, %ld);\n", x->in0,
             x->out, g.out, x->out, x->w0, x->in_width, x->width);
}

/* ---- backward: a linear's input gradient with the gelu's (fuse.c) ---------
 * The linear (op i, DGELU_LINEAR) writes d(pre) in its B half, gelu' applied
 * and rounded to the plan's 16-bit type in the call: no rounding call for
 * d(gelu out), which is never written, nor for d(pre).  The gelu (op i - 1)
 * emits a comment. */
static void emit_linear_dgelu_bwd_input(writer *o, const Program *p, int i, const operands *x) {
    operands g;
    get_operands(p, i - 1, &g);
    emit(o, "    wf_linear_dgelu_bwd_input(c, d + %s, d + %s, a + %s, w + %s, N, %ld, %ld);\n", g.in0, x->out,
         g.in0, x->w0, x->in_width, x->width);
}

static void emit_linear_dgelu_comment(writer *o, const Program *p, int i) {
    operands lin;
    get_operands(p, i + 1, &lin);
    emit(o, "    /* gelu: backward in the input gradient of the linear making %s */\n", lin.out);
}

static void emit_linear_bwd_weight(writer *o, const Program *p, int i, const operands *x) {
    emit(o, "    wf_linear_bwd_weight(c, g + %s, %s%s, d + %s, a + %s, N, %ld, %ld);\n", x->g0,
         p->ops[i].n_param > 1 ? "g + " : "NULL", x->g1, x->out, x->in0, x->in_width, x->width);
}

void emit_forward_op(writer *o, const Program *p, int i) {
    const ir_op *op = &p->ops[i];
    operands x;
    get_operands(p, i, &x);
    if (op->fused == FUSED_ADD_LN_ADD) {
        emit_fused_comment(o, p, i, "computed by");
        return;
    }
    if (op->fused == FUSED_ADD_LN_NORM) {
        emit_fused_fwd(o, p, i, &x);
        round_output(o, p, i, &x);
        return;
    }
    if (op->fused == FUSED_LIN_GELU_LINEAR) {  /* pre and out come rounded */
        emit_linear_gelu_fwd(o, p, i, &x);
        return;
    }
    if (op->fused == FUSED_LIN_GELU_GELU) {
        emit_linear_gelu_comment(o, p, i, "computed by");
        return;
    }
    switch (op->kind) {
    case OP_EMBED:
        if (op->n_param == 1)  /* tokens only (llama): the whole vocabulary is this rank's */
            emit(o, "    wf_vocab_embed_fwd(c, a + %s, wf_tokens(c), w + %s, 0, V, N, C);\n", x.out, x.w0);
        else
            emit(o, "    wf_embed_fwd(c, a + %s, wf_tokens(c), w + %s, w + %s, B, T, C);\n", x.out, x.w0, x.w1);
        break;
    case OP_RMSNORM:
        emit(o, "    wf_rmsnorm_fwd(c, a + %s, a + %s, a + %s, w + %s, %s, %ld, %.9g);\n", x.out, x.s, x.in0,
          x.w0, x.rows, x.width, op->eps);
        break;
    case OP_ROPE: {  /* k after q in each output row: in_width values on (storage floats) */
        long hd = x.in_width / op->heads;
        emit(o, "    wf_rope_fwd(c, a + %s, %ld, a + %s, %ld, N, T, %d, %ld, %.9g);\n", x.out, x.width, x.in0,
          x.in_width, op->heads, hd, op->theta);
        emit(o, "    wf_rope_fwd(c, a + %s + %ld, %ld, a + %s, %ld, N, T, %d, %ld, %.9g);\n", x.out,
          act_storage(p, x.in_width), x.width, x.in1, hd * op->kv_heads, op->kv_heads, hd, op->theta);
        break;
    }
    case OP_SWIGLU:
        emit(o, "    wf_swiglu_fwd(c, a + %s, a + %s, a + %s, %s * %ldL);\n", x.out, x.in0, x.in1, x.rows,
          x.width);
        break;
    case OP_VOCAB_EMBED:
        emit(o, "    wf_vocab_embed_fwd(c, a + %s, wf_tokens(c), w + %s, wf_tp_rank(c) * VL, VL, N, C);\n",
          x.out, x.w0);
        break;
    case OP_POS_ADD:
        emit(o, "    wf_pos_add_fwd(c, a + %s, a + %s, w + %s, %s, %s, T, C);\n", x.out, x.in0, x.w0,
          x.row0, x.rows);
        break;
    case OP_BIAS_ADD:
        emit(o, "    wf_bias_add_fwd(c, a + %s, a + %s, w + %s, %s, %ld);\n", x.out, x.in0, x.w0, x.rows,
          x.width);
        break;
    case OP_LAYERNORM:
        emit(o, "    wf_layernorm_fwd(c, a + %s, a + %s, a + %s + %s, a + %s, w + %s, w + %s, %s, %ld);\n",
          x.out, x.s, x.s, x.rows, x.in0, x.w0, x.w1, x.rows, x.width);
        break;
    case OP_LINEAR:
        emit(o, "    wf_linear_fwd(c, a + %s, a + %s, w + %s, %s%s, N, %ld, %ld);\n", x.out, x.in0, x.w0,
          op->n_param > 1 ? "w + " : "NULL", x.w1, x.in_width, x.width);
        break;
    case OP_ATTENTION:
        if (op->n_in == 2)
            emit(o, "    wf_gqa_attention_fwd(c, a + %s, a + %s, a + %s, a + %s, B, T, %d, %d, %ld);\n",
              x.out, x.s, x.in0, x.in1, op->heads, op->kv_heads, x.width / op->heads);
        else
            emit(o, "    wf_attention_fwd(c, a + %s, a + %s, a + %s, B, T, %ld, %d);\n", x.out, x.s, x.in0,
              x.width, op->heads);
        break;
    case OP_GELU:
        emit(o, "    wf_gelu_fwd(c, a + %s, a + %s, %s * %ldL);\n", x.out, x.in0, x.rows, x.width);
        break;
    case OP_ADD:
        emit(o, "    wf_add_fwd(c, a + %s, a + %s, a + %s, %s * %ldL);\n", x.out, x.in0, x.in1, x.rows,
          x.width);
        break;
    case OP_TP_COPY:
    case OP_TP_REDUCE:
        emit(o, "    wf_%s_fwd(c, a + %s, a + %s, N * %ldL);\n", op_name(op->kind), x.out, x.in0, x.width);
        break;
    case OP_TP_GATHER:
    case OP_TP_SCATTER:
        emit(o, "    wf_%s_fwd(c, a + %s, a + %s, NL * %ldL);\n", op_name(op->kind), x.out, x.in0, x.width);
        break;
    case OP_LMHEAD_XENT:
        if (p->tp == 1)
            emit(o, "    wf_add_loss(c, wf_lmhead_xent_fwd(c, a + %s, wf_losses(c), a + %s, w + %s,\n"
                 "                                     wf_targets(c), wf_loss_scale(c), N, %ld, V));\n",
              x.s, x.in0, x.w0, x.in_width);
        else
            emit(o, "    wf_add_loss(c, wf_vocab_xent_fwd(c, a + %s, wf_losses(c), a + %s, w + %s,\n"
                 "                                    wf_targets(c), wf_loss_scale(c), N, %ld, VL,\n"
                 "                                    wf_tp_rank(c) * VL, V));\n",
              x.s, x.in0, x.w0, x.in_width);
        break;
    default: break;
    }
    round_output(o, p, i, &x);
}

void emit_backward_op(writer *o, const Program *p, int i) {
    const ir_op *op = &p->ops[i];
    operands x;
    get_operands(p, i, &x);
    if (op->fused == FUSED_ADD_LN_ADD) {  /* its input gradients are final: round them */
        emit_fused_comment(o, p, i, "backward in");
        round_input_grads(o, p, i, &x);
        return;
    }
    if (op->fused == FUSED_ADD_LN_NORM) {
        emit_fused_bwd(o, p, i, &x, 1);
        round_param_grads(o, p, i, &x);
        return;
    }
    if (op->dgelu == DGELU_GELU) {  /* before the forward pair's: it is in both */
        emit_linear_dgelu_comment(o, p, i);
        return;
    }
    if (op->dgelu == DGELU_LINEAR) {
        emit_linear_dgelu_bwd_input(o, p, i, &x);
        emit_linear_bwd_weight(o, p, i, &x);
        round_param_grads(o, p, i, &x);
        return;
    }
    if (op->fused == FUSED_LIN_GELU_GELU) {  /* its d(pre) is rounded in the fused call */
        emit_linear_gelu_comment(o, p, i, "backward in");
        return;
    }
    if (op->fused == FUSED_LIN_GELU_LINEAR) {
        emit_linear_gelu_bwd_input(o, p, i, &x);
        emit_linear_bwd_weight(o, p, i, &x);
        round_input_grads(o, p, i, &x);
        round_param_grads(o, p, i, &x);
        return;
    }
    switch (op->kind) {
    case OP_EMBED:
        if (op->n_param == 1)
            emit(o, "    wf_vocab_embed_bwd(c, g + %s, d + %s, wf_tokens(c), 0, V, N, C);\n", x.g0, x.out);
        else
            emit(o, "    wf_embed_bwd(c, g + %s, g + %s, d + %s, wf_tokens(c), B, T, C);\n", x.g0, x.g1, x.out);
        break;
    case OP_RMSNORM:
        emit(o, "    wf_rmsnorm_bwd(c, d + %s, g + %s, d + %s, a + %s, w + %s, a + %s, %s, %ld);\n", x.in0, x.g0,
          x.out, x.in0, x.w0, x.s, x.rows, x.width);
        break;
    case OP_ROPE: {
        long hd = x.in_width / op->heads;
        emit(o, "    wf_rope_bwd(c, d + %s, %ld, d + %s, %ld, N, T, %d, %ld, %.9g);\n", x.in0, x.in_width,
          x.out, x.width, op->heads, hd, op->theta);
        emit(o, "    wf_rope_bwd(c, d + %s, %ld, d + %s + %ld, %ld, N, T, %d, %ld, %.9g);\n", x.in1,
          hd * op->kv_heads, x.out, act_storage(p, x.in_width), x.width, op->kv_heads, hd, op->theta);
        break;
    }
    case OP_SWIGLU:
        emit(o, "    wf_swiglu_bwd(c, d + %s, d + %s, a + %s, a + %s, d + %s, %s * %ldL);\n", x.in0, x.in1,
          x.in0, x.in1, x.out, x.rows, x.width);
        break;
    case OP_VOCAB_EMBED:
        emit(o, "    wf_vocab_embed_bwd(c, g + %s, d + %s, wf_tokens(c), wf_tp_rank(c) * VL, VL, N, C);\n",
          x.g0, x.out);
        break;
    case OP_POS_ADD:
        emit(o, "    wf_pos_add_bwd(c, d + %s, g + %s, d + %s, %s, %s, T, C);\n", x.in0, x.g0, x.out,
          x.row0, x.rows);
        break;
    case OP_BIAS_ADD:
        emit(o, "    wf_bias_add_bwd(c, d + %s, g + %s, d + %s, %s, %ld);\n", x.in0, x.g0, x.out, x.rows,
          x.width);
        break;
    case OP_LAYERNORM:
        emit(o, "    wf_layernorm_bwd(c, d + %s, g + %s, g + %s, d + %s, a + %s, w + %s, a + %s, a + %s + %s,\n"
             "                     %s, %ld);\n", x.in0, x.g0, x.g1, x.out, x.in0, x.w0, x.s, x.s,
          x.rows, x.rows, x.width);
        break;
    case OP_LINEAR:
        emit(o, "    wf_linear_bwd(c, d + %s, g + %s, %s%s, d + %s, a + %s, w + %s, N, %ld, %ld);\n",
          x.in0, x.g0, op->n_param > 1 ? "g + " : "NULL", x.g1, x.out, x.in0, x.w0, x.in_width,
          x.width);
        break;
    case OP_ATTENTION:
        if (op->n_in == 2)
            emit(o, "    wf_gqa_attention_bwd(c, d + %s, d + %s, wf_scratch(c), d + %s, a + %s, a + %s, a + %s,\n"
                 "                         a + %s, B, T, %d, %d, %ld);\n", x.in0, x.in1, x.out, x.in0, x.in1,
              x.out, x.s, op->heads, op->kv_heads, x.width / op->heads);
        else  /* out: the forward's output (recomputed with its block under full recompute) */
            emit(o, "    wf_attention_bwd(c, d + %s, wf_scratch(c), d + %s, a + %s, a + %s, a + %s, B, T, %ld, %d);\n",
              x.in0, x.out, x.in0, x.out, x.s, x.width, op->heads);
        break;
    case OP_GELU:
        emit(o, "    wf_gelu_bwd(c, d + %s, a + %s, d + %s, %s * %ldL);\n", x.in0, x.in0, x.out, x.rows,
          x.width);
        break;
    case OP_ADD:
        emit(o, "    wf_add_bwd(c, d + %s, d + %s, d + %s, %s * %ldL);\n", x.in0, x.in1, x.out, x.rows,
          x.width);
        break;
    case OP_TP_COPY:
    case OP_TP_REDUCE:
        emit(o, "    wf_%s_bwd(c, d + %s, d + %s, N * %ldL);\n", op_name(op->kind), x.in0, x.out, x.width);
        break;
    case OP_TP_GATHER:
    case OP_TP_SCATTER:
        emit(o, "    wf_%s_bwd(c, d + %s, d + %s, NL * %ldL);\n", op_name(op->kind), x.in0, x.out, x.width);
        break;
    case OP_LMHEAD_XENT:
        if (p->tp == 1)
            emit(o, "    wf_lmhead_xent_bwd(c, d + %s, g + %s, a + %s, a + %s, w + %s, N, %ld, V);\n",
              x.in0, x.g0, x.s, x.in0, x.w0, x.in_width);
        else
            emit(o, "    wf_vocab_xent_bwd(c, d + %s, g + %s, a + %s, a + %s, w + %s, N, %ld, VL);\n",
              x.in0, x.g0, x.s, x.in0, x.w0, x.in_width);
        break;
    default: break;
    }
    round_input_grads(o, p, i, &x);
    round_param_grads(o, p, i, &x);
}

/* The two halves of op i's backward for zero-bubble schedules: B (input
 * gradient) when `weight` is 0, W (parameter gradients) when it is 1.
 * Returns 1 if that half emitted anything. */
int emit_backward_half(writer *o, const Program *p, int i, int weight) {
    const ir_op *op = &p->ops[i];
    operands x;
    get_operands(p, i, &x);
    const char *V = p->tp > 1 ? "VL" : "V";
    switch (op->kind) {
    case OP_EMBED: case OP_VOCAB_EMBED:
        if (!weight) return 0;
        emit_backward_op(o, p, i);
        return 1;
    case OP_POS_ADD:
        if (weight)
            emit(o, "    wf_pos_add_bwd_weight(c, g + %s, d + %s, %s, %s, T, C);\n", x.g0, x.out, x.row0, x.rows);
        else
            emit(o, "    wf_pos_add_bwd_input(c, d + %s, d + %s, %s, C);\n", x.in0, x.out, x.rows);
        break;
    case OP_BIAS_ADD:
        if (weight)
            emit(o, "    wf_bias_add_bwd_weight(c, g + %s, d + %s, %s, %ld);\n", x.g0, x.out, x.rows, x.width);
        else  /* din += dout */
            emit(o, "    wf_pos_add_bwd_input(c, d + %s, d + %s, %s, %ld);\n", x.in0, x.out, x.rows, x.width);
        break;
    case OP_LAYERNORM:
        if (!weight && op->fused == FUSED_ADD_LN_NORM) {  /* the add's B half is in it */
            emit_fused_bwd(o, p, i, &x, 0);
            return 1;
        }
        if (weight)
            emit(o, "    wf_layernorm_bwd_weight(c, g + %s, g + %s, d + %s, a + %s, a + %s, a + %s + %s, %s, %ld);\n",
              x.g0, x.g1, x.out, x.in0, x.s, x.s, x.rows, x.rows, x.width);
        else
            emit(o, "    wf_layernorm_bwd_input(c, d + %s, d + %s, a + %s, w + %s, a + %s, a + %s + %s, %s, %ld);\n",
              x.in0, x.out, x.in0, x.w0, x.s, x.s, x.rows, x.rows, x.width);
        break;
    case OP_RMSNORM:
        if (weight)
            emit(o, "    wf_rmsnorm_bwd_weight(c, g + %s, d + %s, a + %s, a + %s, %s, %ld);\n", x.g0, x.out,
              x.in0, x.s, x.rows, x.width);
        else
            emit(o, "    wf_rmsnorm_bwd_input(c, d + %s, d + %s, a + %s, w + %s, a + %s, %s, %ld);\n", x.in0,
              x.out, x.in0, x.w0, x.s, x.rows, x.width);
        break;
    case OP_LINEAR:
        if (!weight && op->dgelu == DGELU_LINEAR) {  /* the gelu's B half is in it, d(pre) rounded */
            emit_linear_dgelu_bwd_input(o, p, i, &x);
            return 1;
        }
        if (weight)
            emit_linear_bwd_weight(o, p, i, &x);
        else if (op->fused == FUSED_LIN_GELU_LINEAR)  /* the gelu's B half is in it */
            emit_linear_gelu_bwd_input(o, p, i, &x);
        else
            emit(o, "    wf_linear_bwd_input(c, d + %s, d + %s, w + %s, N, %ld, %ld);\n", x.in0, x.out,
              x.w0, x.in_width, x.width);
        break;
    case OP_LMHEAD_XENT:
        if (weight)
            emit(o, "    wf_lmhead_xent_bwd_weight(c, g + %s, a + %s, a + %s, N, %ld, %s);\n", x.g0, x.s,
              x.in0, x.in_width, V);
        else
            emit(o, "    wf_lmhead_xent_bwd_input(c, d + %s, a + %s, w + %s, N, %ld, %s);\n", x.in0, x.s,
              x.w0, x.in_width, V);
        break;
    default:  /* no parameters: all of it is B */
        if (weight) return 0;
        emit_backward_op(o, p, i);
        return 1;
    }
    if (weight) round_param_grads(o, p, i, &x);
    else round_input_grads(o, p, i, &x);
    return 1;
}

