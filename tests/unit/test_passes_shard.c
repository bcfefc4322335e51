/* test_passes_shard.c: the shard pass (compiler/shard.c) on tiny GPT-2 and
 * LLaMA plans: which parameters are split by rows or by columns and by how
 * much (against the same plan at tp = 1), and which conjugate collectives
 * surround each linear, with and without sequence parallelism; and the
 * rule of a rowwise user kernel (compiler/ops_kernel.c): whole rows only. */
#include "passes_fixture.h"
#include "reporter_capture.h"
#include "ops.h"
#include "user_kernel.h"

/* The op reading tensor t first, or NULL. */
static const ir_op *reader(const Program *p, int t) {
    for (int i = 0; i < p->n_ops; i++)
        for (int k = 0; k < p->ops[i].n_in; k++)
            if (p->ops[i].in[k] == t) return &p->ops[i];
    return NULL;
}

static int ends_with(const char *s, const char *tail) {
    size_t n = strlen(s), m = strlen(tail);
    return n >= m && strcmp(s + n - m, tail) == 0;
}

/* Each parameter's split and shape against the unsharded plan. */
static void gpt2_splits(const Program *p, const Program *whole, int tp) {
    int bad = 0, cols = 0, rows = 0;
    for (int k = 0; k < p->n_params; k++) {
        const ir_param *q = &p->params[k], *w = &whole->params[param_named(whole, q->name)];
        int want = SPLIT_NONE;
        if (strstr(q->name, "c_attn") || strstr(q->name, "c_fc")) want = SPLIT_COLS;  /* weight and bias */
        if (strstr(q->name, "c_proj.weight") || strcmp(q->name, "wte.weight") == 0) want = SPLIT_ROWS;
        if (q->split != want) {
            bad++;
            printf("     %s: split %d, want %d\n", q->name, q->split, want);
            continue;
        }
        cols += want == SPLIT_COLS;
        rows += want == SPLIT_ROWS;
        int dim = want == SPLIT_COLS && q->ndim == 2 ? 1 : 0;
        long full = strcmp(q->name, "wte.weight") == 0 ? p->vocab_padded : w->shape[dim];
        if (want != SPLIT_NONE ? q->shape[dim] * tp != full : q->numel != w->numel) bad++;
        if (want == SPLIT_COLS && q->sections != (strstr(q->name, "c_attn") ? 3 : 1)) bad++;
        /* replicated and not sequence-parallel: whole gradients */
        if (want == SPLIT_NONE && q->tp_partial != p->sp) bad++;
    }
    check(bad == 0, "tp %d sp %d: c_attn, c_fc split by columns (c_attn in 3 sections), c_proj and wte by rows, "
          "the rest whole (partial gradients exactly under sp); %d columns, %d rows", tp, p->sp, cols, rows);
    check(cols == 4 * p->layers && rows == 2 * p->layers + 1, "tp %d: 4L column-split and 2L + 1 row-split "
          "parameters (L = %d)", tp, p->layers);
}

static void gpt2_collectives(const Program *p, int tp) {
    int L = p->layers;
    op_kind in_op = p->sp ? OP_TP_GATHER : OP_TP_COPY, out_op = p->sp ? OP_TP_SCATTER : OP_TP_REDUCE;
    check(count_ops(p, in_op) == 2 * L + 1 && count_ops(p, out_op) == 2 * L + 1,
          "tp %d sp %d: 2L + 1 = %d %s (before c_attn, c_fc, the LM head) and as many %s (after c_proj, the "
          "embedding): %d and %d", tp, p->sp, 2 * L + 1, op_name(in_op), op_name(out_op), count_ops(p, in_op),
          count_ops(p, out_op));
    check(count_ops(p, p->sp ? OP_TP_COPY : OP_TP_GATHER) == 0 && count_ops(p, p->sp ? OP_TP_REDUCE : OP_TP_SCATTER) == 0,
          "tp %d sp %d: none of the other pair", tp, p->sp);
    int bad = 0;
    for (int i = 0; i < p->n_ops; i++) {
        const ir_op *o = &p->ops[i];
        if (o->kind == OP_LINEAR && strcmp(o->parallel, "column") == 0)
            bad += p->ops[p->tensors[o->in[0]].producer].kind != in_op;  /* reads the copy/gather */
        if (o->kind == OP_LINEAR && strcmp(o->parallel, "row") == 0) {
            const ir_op *next = reader(p, o->out), *after = next ? reader(p, next->out) : NULL;
            bad += !next || next->kind != out_op || !after || after->kind != OP_BIAS_ADD;
        }
        if (o->kind == OP_ATTENTION) bad += o->heads * tp != p->heads;
        /* sequence parallel: the residual stream holds N / tp rows */
        if (o->kind == OP_ADD) bad += p->tensors[o->out].rows_div != (p->sp ? tp : 1);
    }
    check(bad == 0, "tp %d sp %d: column linears read a %s, row linears feed a %s then the bias; attention on "
          "heads / tp heads; the residual stream on N / %d rows", tp, p->sp, op_name(in_op), op_name(out_op),
          p->sp ? tp : 1);
}

int main(void) {
    Program whole, p;
    check(compile_with(&whole, "plans/tiny.lua", "cpu", "mesh.dp=1", NULL) == 0, "tiny tp 1 compiles");
    check(count_ops(&whole, OP_TP_COPY) + count_ops(&whole, OP_TP_REDUCE) == 0 && whole.vocab_padded == whole.vocab,
          "tp 1: no collective is inserted, the vocabulary is not padded");
    for (int sp = 0; sp <= 1; sp++) {
        check(compile_with(&p, "plans/tiny.lua", "cpu", "mesh.dp=1", "mesh.tp=2", sp ? "mesh.sp=true" : "mesh.sp=false",
                           NULL) == 0, "tiny tp 2 sp %d compiles", sp);
        gpt2_splits(&p, &whole, 2);
        gpt2_collectives(&p, 2);
        program_free(&p);
    }
    /* a vocabulary tp does not divide is padded to a multiple of it */
    int rc = compile_with(&p, "plans/tiny.lua", "cpu", "mesh.dp=1", "mesh.tp=4", "model.vocab=250", NULL);
    check(rc == 0 && p.vocab_padded == 252 && p.params[param_named(&p, "wte.weight")].shape[0] == 63,
          "vocab 250 at tp 4: padded to 252 (%d), 63 rows of wte a rank", p.vocab_padded);
    program_free(&p);
    program_free(&whole);

    /* LLaMA: q, k, v (and gate, up) read one tensor and share its tp_copy */
    check(compile_with(&p, "plans/llama_tiny.lua", "cpu", "mesh.dp=1", "mesh.tp=2", NULL) == 0, "llama_tiny tp 2 compiles");
    int L = p.layers, bad = 0;
    for (int k = 0; k < p.n_params; k++) {
        const ir_param *q = &p.params[k];
        int want = ends_with(q->name, "norm.weight") ? SPLIT_NONE
                 : strstr(q->name, "o_proj") || strstr(q->name, "down_proj") || strstr(q->name, "embed") ||
                   strstr(q->name, "lm_head") ? SPLIT_ROWS : SPLIT_COLS;
        if (q->split != want) {
            bad++;
            printf("     %s: split %d, want %d\n", q->name, q->split, want);
        }
    }
    check(bad == 0, "llama tp 2: q, k, v, gate, up by columns; o, down, the embedding and LM head by rows; norms whole");
    check(count_ops(&p, OP_TP_COPY) == 2 * L + 1, "llama tp 2: one tp_copy per attention, per MLP and the LM head "
          "(2L + 1 = %d, q/k/v and gate/up share one): %d", 2 * L + 1, count_ops(&p, OP_TP_COPY));
    program_free(&p);

    /* a rowwise kernel as every RMSNorm: whole like the built-in norms, its
     * weight's gradient partial exactly under sp */
    for (int sp = 0; sp <= 1; sp++) {
        check(compile_with(&p, "tests/e2e/user_kernels/llama_norm.lua", "cpu", "mesh.dp=1", "mesh.tp=2",
                           sp ? "mesh.sp=true" : "mesh.sp=false", NULL) == 0, "llama_norm tp 2 sp %d compiles", sp);
        int kernels = 0, whole_rows = 1;
        for (int i = 0; i < p.n_ops; i++) {
            const ir_op *o = &p.ops[i];
            if (o->kind != OP_KERNEL) continue;
            kernels++;
            whole_rows &= o->n_param == 1 && p.params[o->param[0]].numel == p.hidden &&
                          p.params[o->param[0]].split == SPLIT_NONE && p.params[o->param[0]].tp_partial == sp &&
                          op_in_width(&p, o, 0) == p.hidden;
        }
        check(kernels == 2 * p.layers + 1 && whole_rows, "llama_norm tp 2 sp %d: 2L + 1 rowwise kernels on whole "
              "rows, their weights whole, gradients partial exactly under sp (%d kernels)", sp, kernels);
        program_free(&p);
    }
    /* the same kernel moved onto a column-parallel linear's output (64 of
     * the q projection's 64 values, split in 2 by tp): refused by name */
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/e2e/user_kernels/llama_norm.lua", WEFT_SOURCE_DIR);
    const char *sets[] = { "mesh.dp=1", "mesh.tp=2" };
    check(pass_load(&p, path, sets, 2) == 0, "llama_norm loads at tp 2");
    int q = -1, moved = 0;
    for (int i = 0; i < p.n_ops; i++) {
        ir_op *o = &p.ops[i];
        if (o->kind == OP_LINEAR && !strcmp(o->parallel, "column") && op_out_width(&p, o) == p.hidden && q < 0)
            q = o->out;
        else if (o->kind == OP_KERNEL && q >= 0 && !moved) {
            o->in[0] = q;
            moved = 1;
        }
    }
    check(moved && capture_start() == 0, "a rowwise kernel after a column-parallel linear of width hidden");
    rc = captured(pass_shard, &p);
    check(rc != 0 && strstr(last_error, "needs the whole row") && strstr(last_error, "32 of 64 values"),
          "shard refuses it: %s", last_error);
    program_free(&p);
    return summary();
}
