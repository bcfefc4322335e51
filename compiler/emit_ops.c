/* emit_ops.c: the generated call for each op, forward and backward (and its
 * B and W halves for zero-bubble schedules), with readable operand names.
 * The calls themselves are each op's row (ops.h: kernels and emit
 * functions); here are the operands, the 16-bit rounding after them, and
 * the fused pairs (fuse.c), which span two rows. */
#include <ctype.h>
#include <string.h>

#include "emit.h"
#include "memory_pack.h"
#include "ops.h"

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
    const op_row *r = op_row_of(o->kind);
    char prefix[WF_MAX_NAME] = "";
    if (r->label) {
        /* a fixed label an earlier op has too (a GPT-2 VLM's embed, then its
         * pos_add): numbered from the second */
        int nth = 1;
        for (int j = 0; j < i; j++) {
            const op_row *q = op_row_of(p->ops[j].kind);
            nth += q && q->label && strcmp(q->label, r->label) == 0;
        }
        if (nth > 1) snprintf(out, n, "%s_%d", r->label, nth);
        else snprintf(out, n, "%s", r->label);
        return;
    }
    if (r->label_param) {
        macro_name("A_", p->params[o->param[0]].name, out, n);
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
        const char *what = r->stem ? r->stem : r->name;
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

/* The op whose B half is being emitted with its parameter gradients staged
 * in the gradient set (ops.h's op_weight_grad_staged), or -1: its `g` then
 * points there (widen_grads), the first parameter's at 0 and the second's
 * after it, as under grad16. */
static int staging_op = -1;

void get_operands(const Program *p, int i, operands *x) {
    const ir_op *op = &p->ops[i];
    memset(x, 0, sizeof *x);
    tname(p, op->out, x->out, sizeof x->out);
    if (op->n_in > 0) tname(p, op->in[0], x->in0, sizeof x->in0);
    if (op->n_in > 1) tname(p, op->in[1], x->in1, sizeof x->in1);
    if (op->n_param > 0) pname(p, op, 0, x->w0, sizeof x->w0);
    if (op->n_param > 1) pname(p, op, 1, x->w1, sizeof x->w1);
    if (param16(p) && op->n_param > 0) {  /* w is the widened scratch (widen_params) */
        snprintf(x->w0, sizeof x->w0, "0");
        if (op->n_param > 1) snprintf(x->w1, sizeof x->w1, "%ldL", align16(p->params[op->param[0]].numel));
    }
    const char *gp = p->zero >= 2 ? "G_" : "P_";
    if (op->n_param > 0) macro_name(gp, p->params[op->param[0]].name, x->g0, sizeof x->g0);
    if (op->n_param > 1) macro_name(gp, p->params[op->param[1]].name, x->g1, sizeof x->g1);
    if ((grad16(p) || i == staging_op) && op->n_param > 0) {  /* g is the widened scratch (widen_grads) */
        snprintf(x->g0, sizeof x->g0, "0");
        if (op->n_param > 1) snprintf(x->g1, sizeof x->g1, "%ldL", align16(p->params[op->param[0]].numel));
    }
    sname(p, i, x->s, sizeof x->s);
    int sharded = p->tensors[op->out].rows_div > 1;
    x->rows = sharded ? "NL" : "N";
    x->row0 = sharded ? "wf_tp_rank(c) * NL" : "0";
    x->width = p->tensors[op->out].width;
    x->in_width = op->n_in > 0 ? p->tensors[op->in[0]].width : 0;
}

/* Set while a W half is emitted: W reads no weights (dW = x^T dy, the
 * norms' and biases' sums, the embedding's scatter), and under ZeRO-3 they
 * are not gathered there (zero_plan.c). */
static int in_w_half;

/* param16 (param16.c): op i's parameters, stored in 16 bits, widened into
 * the float scratch that `w` then points at, the first at 0 and the second
 * after it (get_operands spells them so). */
static void widen_params(writer *o, const Program *p, int i) {
    const ir_op *op = &p->ops[i];
    if (!param16(p) || op->n_param == 0 || in_w_half) return;
    char a[WF_MAX_NAME + 8], b[WF_MAX_NAME + 8] = "0";
    pname(p, op, 0, a, sizeof a);
    if (op->n_param > 1) pname(p, op, 1, b, sizeof b);
    /* a negative count: a GEMM weight read in 16 bits in place (CUDA) */
    emit(o, "    w = wf_widen_params(c, %s, %ldL, %s, %ldL);\n", a,
         param16_in_place(p, i) ? -p->params[op->param[0]].numel : p->params[op->param[0]].numel, b,
         op->n_param > 1 ? p->params[op->param[1]].numel : 0L);
}

/* grad16 (grad16.c): op i's parameter gradients, stored in 16 bits, widened
 * into the float scratch that `g` then points at before the kernel that
 * accumulates into them (the first at 0, the second after it, as
 * get_operands spells them), and stored back rounded after it (the
 * rounding the float arena got from round_param_grads). */
static void grad16_names(const Program *p, int i, char *a, char *b, size_t size) {
    const ir_op *op = &p->ops[i];
    const char *gp = p->zero >= 2 ? "G_" : "P_";
    macro_name(gp, p->params[op->param[0]].name, a, size);
    snprintf(b, size, "0");
    if (op->n_param > 1) macro_name(gp, p->params[op->param[1]].name, b, size);
}

/* the chunked LM head (every backend's, ops_loss.c) widens its gradient in
 * its call (ops_loss.c's emit_chunked) */
static int widens_itself(const Program *p, const ir_op *op) {
    (void)p;
    return op->kind == OP_LMHEAD_XENT;
}

static void widen_grads(writer *o, const Program *p, int i) {
    const ir_op *op = &p->ops[i];
    if (i == staging_op) {  /* no bucket: the gradient set, zeroed before (memory_grads.c) */
        emit(o, "    g = d + %ldL;  /* staged for W */\n", op->wg_doffset);
        return;
    }
    if (!grad16(p) || op->n_param == 0 || !op->grad_w) return;
    char a[WF_MAX_NAME + 8], b[WF_MAX_NAME + 8];
    grad16_names(p, i, a, b, sizeof a);
    emit(o, "    g = wf_widen_grads(c, %s, %ldL, %s, %ldL);\n", a, p->params[op->param[0]].numel, b,
         op->n_param > 1 ? p->params[op->param[1]].numel : 0L);
}

static void narrow_grads(writer *o, const Program *p, int i) {
    const ir_op *op = &p->ops[i];
    char a[WF_MAX_NAME + 8], b[WF_MAX_NAME + 8];
    grad16_names(p, i, a, b, sizeof a);
    /* the float program's rounding calls, by name, as act16's markers */
    emit(o, "    /* g + %s: stored rounded to %s */\n", a, p->precision);
    if (op->n_param > 1) emit(o, "    /* g + %s: stored rounded to %s */\n", b, p->precision);
    emit(o, "    wf_narrow_grads(c, %s, %ldL, %s, %ldL);\n", a, p->params[op->param[0]].numel, b,
         op->n_param > 1 ? p->params[op->param[1]].numel : 0L);
}

/* ---- 16-bit storage (bf16 / fp16) ----------------------------------------
 * Where values are rounded to 16 bits (runtime/cpu/precision.c), so that the
 * float arenas hold exactly what 16-bit tensors would:
 *   - after each forward op: its output (the loss head's fp32 dlogits and
 *     losses excepted, as Megatron keeps the cross-entropy in fp32);
 *   - after each backward op (or B half): the gradients of its inputs, which
 *     it accumulated into;
 *   - after each backward op (or W half): its parameters' gradients, so that
 *     accumulation over microbatches is in 16 bits (not under plan.grad_accum
 *     = "fp32", which accumulates them in floats);
 * saved buffers (layernorm statistics, attention probabilities) stay fp32.
 * Nothing is emitted under fp32, whose programs are unchanged.  Under act16
 * (act16.c) the kernels store activations and their gradients as rounded
 * 16-bit values themselves: only parameter gradients are rounded here.  On
 * the CPU a comment marks where the kernel's staging rounds what the float-
 * storage program would round with a call (tests count the roundings on a
 * value's path from them, tests/e2e/lib.sh's rounding_sites). */
static const char *round_fn(const Program *p) {
    if (strcmp(p->precision, "bf16") == 0) return "wf_to_bf16";
    if (strcmp(p->precision, "fp16") == 0) return "wf_to_fp16";
    return NULL;
}

/* The rounding call for activations and their gradients, or NULL. */
static const char *act_round_fn(const Program *p) {
    return p->act16 ? NULL : round_fn(p);
}

/* the CPU's act16: a kernel's staging rounds here (stage16.h) */
static int staged(const Program *p) { return p->act16 && backend_of(p)->act16_staged; }

static void round_output(writer *o, const Program *p, int i, const operands *x) {
    const char *fn = act_round_fn(p);
    if (op_row_of(p->ops[i].kind)->loss) return;
    if (staged(p)) emit(o, "    /* a + %s: stored rounded to %s */\n", x->out, p->precision);
    if (!fn) return;
    emit(o, "    %s(c, a + %s, %s * %ldL);\n", fn, x->out, x->rows, x->width);
}

/* An input gradient in its output gradient's place (op_dinput_shared) is
 * that gradient, rounded already: no rounding of its own. */
static void round_input_grads(writer *o, const Program *p, int i, const operands *x) {
    const char *fn = act_round_fn(p);
    const ir_op *op = &p->ops[i];
    if (staged(p))
        for (int k = 0; k < op->n_in; k++)
            if (!op_dinput_shared(p, op, k))
                emit(o, "    /* d + D_%s: stored rounded to %s */\n", k ? x->in1 : x->in0, p->precision);
    if (!fn) return;
    for (int k = 0; k < op->n_in; k++) {
        if (op_dinput_shared(p, op, k)) continue;
        const ir_tensor *t = &p->tensors[op->in[k]];
        emit(o, "    %s(c, d + D_%s, %s * %ldL);\n", fn, k ? x->in1 : x->in0, t->rows_div > 1 ? "NL" : "N",
             t->width);
    }
}

static void round_param_grads(writer *o, const Program *p, int i, const operands *x) {
    const char *fn = grad_accum16(p) ? round_fn(p) : NULL;  /* plan.grad_accum = "fp32": never */
    const ir_op *op = &p->ops[i];
    if (!fn || op->n_param == 0 || i == staging_op) return;  /* staged: rounded when W adds it in */
    if (grad16(p)) {  /* stored rounded, as 16-bit bits */
        narrow_grads(o, p, i);
        return;
    }
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
        emit(o, "    wf_residual_layernorm_bwd(c, d + D_%s, d + D_%s, g + %s, g + %s, d + D_%s, d + D_%s, a + %s, w + %s,\n"
             "                              a + %s, a + %s + %s, %s, %ld);\n", add.in0, add.in1, x->g0, x->g1,
          x->in0, x->out, x->in0, x->w0, x->s, x->s, x->rows, x->rows, x->width);
    else
        emit(o, "    wf_residual_layernorm_bwd_input(c, d + D_%s, d + D_%s, d + D_%s, d + D_%s, a + %s, w + %s,\n"
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
        linear_emit_bwd_input(o, p, i, x, op_kernels_of(p, &p->ops[i]));
    else
        emit(o, "    wf_linear_gelu_bwd_input(c, d + D_%s, d + D_%s, d + D_%s, a + %s, w + %s, N, %ld, %ld);\n", x->in0,
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
    emit(o, "    wf_linear_dgelu_bwd_input(c, d + D_%s, d + D_%s, a + %s, w + %s, N, %ld, %ld);\n", g.in0, x->out,
         g.in0, x->w0, x->in_width, x->width);
}

static void emit_linear_dgelu_comment(writer *o, const Program *p, int i) {
    operands lin;
    get_operands(p, i + 1, &lin);
    emit(o, "    /* gelu: backward in the input gradient of the linear making %s */\n", lin.out);
}

static void emit_linear_bwd_weight(writer *o, const Program *p, int i, const operands *x) {
    linear_emit_bwd_weight(o, p, i, x, op_kernels_of(p, &p->ops[i]));
}

/* --profile's class of op i (weft/rt.h's WF_PROF_*): what its time goes to. */
static const char *prof_class(const Program *p, int i) {
    const ir_op *op = &p->ops[i];
    if (op->fused == FUSED_ADD_LN_NORM) return "WF_PROF_NORM";
    switch (op->kind) {
    case OP_LINEAR: return "WF_PROF_GEMM";
    case OP_ATTENTION: return "WF_PROF_ATTENTION";
    case OP_LAYERNORM: case OP_RMSNORM: return "WF_PROF_NORM";
    case OP_LMHEAD_XENT: return "WF_PROF_CLASSIFIER";
    case OP_TP_COPY: case OP_TP_REDUCE: case OP_TP_GATHER: case OP_TP_SCATTER: return "WF_PROF_COMM";
    default: return "WF_PROF_ELEMENTWISE";  /* embeddings, gelu, adds, rope, swiglu */
    }
}

static void emit_prof(writer *o, const Program *p, int i) {
    /* a VLM's encoder and projector: their compute is also counted apart
     * (a tensor-parallel collective among them stays communication, as
     * simulate's encoder line leaves communication out) */
    const char *cls = prof_class(p, i);
    int enc = op_in_encoder(p, i) && strcmp(cls, "WF_PROF_COMM") != 0;
    emit(o, "    wf_prof(c, %s%s);\n", cls, enc ? " | WF_PROF_ENCODER" : "");
}

void emit_forward_op(writer *o, const Program *p, int i) {
    const ir_op *op = &p->ops[i];
    operands x;
    get_operands(p, i, &x);
    if (op->fused == FUSED_ADD_LN_ADD) {
        emit_fused_comment(o, p, i, "computed by");
        return;
    }
    widen_params(o, p, i);
    if (op->fused != FUSED_LIN_GELU_GELU) emit_prof(o, p, i);
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
    op_row_of(op->kind)->emit_fwd(o, p, i, &x, op_kernels_of(p, op));
    round_output(o, p, i, &x);
}

/* Frozen parameters (graph.c's marks): the half op i's backward still
 * needs, or nothing; such an op is in no fused pair (fuse.c). */
static void emit_partial_backward(writer *o, const Program *p, int i, const operands *x) {
    const ir_op *op = &p->ops[i];
    const op_row *r = op_row_of(op->kind);
    if (!op->grad_in && !op->grad_w) {
        emit(o, "    /* %s: no backward (nothing it depends on is trained) */\n", op_name(op->kind));
        return;
    }
    emit_prof(o, p, i);
    if (op->grad_in) {  /* a frozen op passing gradients back: no parameter gradients */
        r->emit_bwd_input(o, p, i, x, op_kernels_of(p, op));
        round_input_grads(o, p, i, x);
    } else {            /* a trained op on frozen inputs: no input gradients */
        widen_grads(o, p, i);
        r->emit_bwd_weight(o, p, i, x, op_kernels_of(p, op));
        round_param_grads(o, p, i, x);
    }
}

void emit_backward_op(writer *o, const Program *p, int i) {
    const ir_op *op = &p->ops[i];
    operands x;
    get_operands(p, i, &x);
    /* a fused pair (fuse.c) whose parameters are frozen keeps its fused
     * input half; the parameter gradients' calls are left out (wgrad) */
    int paired = op->fused != FUSED_NONE || op->dgelu != DGELU_NONE, wgrad = op->grad_w || op->n_param == 0;
    if (!op_full_backward(op) && !(paired && op->grad_in)) {
        emit_partial_backward(o, p, i, &x);
        return;
    }
    if (op->fused == FUSED_ADD_LN_ADD) {  /* its input gradients are final: round them */
        emit_fused_comment(o, p, i, "backward in");
        round_input_grads(o, p, i, &x);
        return;
    }
    widen_params(o, p, i);
    if (!widens_itself(p, op)) widen_grads(o, p, i);
    if (op->dgelu != DGELU_GELU && op->fused != FUSED_LIN_GELU_GELU) emit_prof(o, p, i);
    if (op->fused == FUSED_ADD_LN_NORM) {
        emit_fused_bwd(o, p, i, &x, wgrad);
        if (wgrad) round_param_grads(o, p, i, &x);
        return;
    }
    if (op->dgelu == DGELU_GELU) {  /* before the forward pair's: it is in both */
        emit_linear_dgelu_comment(o, p, i);
        return;
    }
    if (op->dgelu == DGELU_LINEAR) {
        emit_linear_dgelu_bwd_input(o, p, i, &x);
        if (wgrad) emit_linear_bwd_weight(o, p, i, &x);
        if (wgrad) round_param_grads(o, p, i, &x);
        return;
    }
    if (op->fused == FUSED_LIN_GELU_GELU) {  /* its d(pre) is rounded in the fused call */
        emit_linear_gelu_comment(o, p, i, "backward in");
        return;
    }
    if (op->fused == FUSED_LIN_GELU_LINEAR) {
        emit_linear_gelu_bwd_input(o, p, i, &x);
        if (wgrad) emit_linear_bwd_weight(o, p, i, &x);
        round_input_grads(o, p, i, &x);
        if (wgrad) round_param_grads(o, p, i, &x);
        return;
    }
    op_row_of(op->kind)->emit_bwd(o, p, i, &x, op_kernels_of(p, op));
    round_input_grads(o, p, i, &x);
    round_param_grads(o, p, i, &x);
}

/* The two halves of op i's backward for zero-bubble schedules: B (input
 * gradient) when `weight` is 0, W (parameter gradients) when it is 1.
 * Returns 1 if that half emitted anything.  An op whose parameter gradients
 * do not wait for W (op_weight_grad_in_w: all but the GEMMs' dW) runs its
 * whole backward in B; an op without inputs whose row defers them (a
 * lookup, the patch embedding) is all W; the others have their row's two
 * calls. */
int emit_backward_half(writer *o, const Program *p, int i, int weight) {
    const ir_op *op = &p->ops[i];
    const op_row *r = op_row_of(op->kind);
    operands x;
    get_operands(p, i, &x);
    if (op_weight_grad_staged(p, op)) {
        if (!weight) {  /* the whole backward, its parameter gradients into the gradient set */
            staging_op = i;
            emit_backward_op(o, p, i);
            staging_op = -1;
            emit(o, "    g = wf_grad_ptr(c, 0);\n");
            return 1;
        }
        widen_grads(o, p, i);  /* W: added into the bucket (g), then rounded as a W half's */
        for (int k = 0; k < op->n_param; k++)
            emit(o, "    wf_add_grads(c, g + %s, d + %ldL, %ldL);\n", k ? x.g1 : x.g0,
                 op->wg_doffset + (k ? align16(p->params[op->param[0]].numel) : 0), p->params[op->param[k]].numel);
        round_param_grads(o, p, i, &x);
        return 1;
    }
    if (!op_weight_grad_in_w(p, op) || op->n_in == 0) {
        int in_w = op_weight_grad_in_w(p, op);
        if (weight != in_w || !(op->grad_in || op->grad_w)) return 0;
        in_w_half = weight;
        emit_backward_op(o, p, i);
        in_w_half = 0;
        return 1;
    }
    if (!(weight ? op->grad_w : op->grad_in)) return 0;  /* frozen: that half is not needed */
    if (!weight) widen_params(o, p, i);
    if (weight) widen_grads(o, p, i);
    emit_prof(o, p, i);
    if (!weight && op->fused == FUSED_ADD_LN_NORM) {  /* the add's B half is in it */
        emit_fused_bwd(o, p, i, &x, 0);
        return 1;
    }
    if (!weight && op->dgelu == DGELU_LINEAR) {  /* the gelu's B half is in it, d(pre) rounded */
        emit_linear_dgelu_bwd_input(o, p, i, &x);
        return 1;
    }
    if (weight)
        r->emit_bwd_weight(o, p, i, &x, op_kernels_of(p, op));
    else if (op->fused == FUSED_LIN_GELU_LINEAR)  /* the gelu's B half is in it */
        emit_linear_gelu_bwd_input(o, p, i, &x);
    else
        r->emit_bwd_input(o, p, i, &x, op_kernels_of(p, op));
    if (weight) round_param_grads(o, p, i, &x);
    else round_input_grads(o, p, i, &x);
    return 1;
}

/* Before op i's backward: zero the gradients it touches first (memory_grads.c;
 * backward accumulates into them, and their place held other gradients). */
void emit_grad_zeros(writer *o, const Program *p, int i) {
    char label[WF_MAX_NAME + 8];
    for (int k = 0; k < p->n_places; k++) {
        const mem_place *pl = &p->places[k];
        if (pl->zero_op == i && pl->kind == PLACE_DPARAM) {  /* staged parameter gradients */
            emit(o, "    wf_zero(d + %ldL, %ldL);\n", p->ops[i].wg_doffset, pl->numel);
            continue;
        }
        if (pl->zero_op != i || (pl->kind != PLACE_DACT && pl->kind != PLACE_DCHUNK_IN)) continue;
        int t = pl->kind == PLACE_DACT ? pl->id : p->chunk_in[pl->id];
        tname(p, t, label, sizeof label);
        emit(o, "    wf_zero(d + D_%s, %ldL);\n", label, tensor_storage(p, t));
    }
}
