/* test_backend_cuda.c: `--backend cuda` refuses, by field and name, what the
 * CUDA runtime does not implement yet, and accepts what it does
 * (compiler/backend_cuda.c's cuda_backend_check).  That check reads the
 * model family, the head size (hidden / heads) and the op kinds of the op
 * list, nothing else: each check below turns on one of them, next to a
 * program that differs from it in that field only.  Also: the op table
 * (compiler/ops.c) has a complete row for every kind. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ops.h"
#include "program.h"

#include "check.h"

#include "reporter_capture.h"

static int backend_check(Program *p) { return cuda_backend_check(p); }

static ir_op ops[6];

/* GPT-2's op kinds, one of each, and a tensor-parallel collective */
static Program gpt2(void) {
    static Program p;
    memset(&p, 0, sizeof p);
    memset(ops, 0, sizeof ops);
    strcpy(p.plan_path, "plans/x.lua");
    strcpy(p.family, "gpt2");
    p.hidden = 768;
    p.heads = 12;
    ops[0].kind = OP_EMBED;
    ops[1].kind = OP_LAYERNORM;
    ops[2].kind = OP_ATTENTION;
    ops[3].kind = OP_GELU;
    ops[4].kind = OP_TP_SCATTER;
    ops[5].kind = OP_LMHEAD_XENT;
    p.ops = ops;
    p.n_ops = 6;
    return p;
}

/* LLaMA's op kinds: RMSNorm, RoPE, grouped-query attention, SwiGLU */
static Program llama(void) {
    Program p = gpt2();
    strcpy(p.family, "llama");
    p.hidden = 4096, p.heads = 32;
    ops[0].kind = OP_RMSNORM;
    ops[1].kind = OP_ROPE;
    ops[2].kind = OP_ATTENTION;
    ops[3].kind = OP_SWIGLU;
    ops[4].kind = OP_LINEAR;
    ops[5].kind = OP_LMHEAD_XENT;
    return p;
}

static int accepted(Program p) {
    last_error[0] = 0;
    return captured(backend_check, &p) == 0 && !last_error[0];
}

static int refused(Program p, const char *want) {
    last_error[0] = 0;
    return captured(backend_check, &p) != 0 && strstr(last_error, want) != NULL;
}

int main(void) {
    if (capture_start() != 0) return 1;
    /* the family */
    check(accepted(gpt2()), "GPT-2 is accepted: %s", last_error);
    check(accepted(llama()), "LLaMA (RMSNorm, RoPE, GQA, SwiGLU) is accepted: %s", last_error);
    Program p = gpt2();
    strcpy(p.family, "mamba");
    check(refused(p, "plans/x.lua: plan.model: the mamba family is not available with --backend cuda"),
          "another model family refused, by name: %s", last_error);

    /* the head size: 256 is the largest (integer hidden / heads); 160 (the
     * 530B and 1T GPTs') and 192 pass */
    p = gpt2();
    p.hidden = 1024, p.heads = 8;
    check(accepted(p), "head size 128 is accepted: %s", last_error);
    p.hidden = 1280; /* 160 */
    check(accepted(p), "head size 160 is accepted: %s", last_error);
    p.hidden = 2048; /* 256 */
    check(accepted(p), "head size 256 is accepted: %s", last_error);
    p.hidden = 2056; /* 257 */
    check(refused(p, "plans/x.lua: plan.model.heads: head size 257 (hidden 2056 / 8 heads) is over 256"),
          "head size 257 refused: %s", last_error);
    p = llama();
    p.hidden = 8192; /* LLaMA's head size is hidden / heads too: 256 */
    check(accepted(p), "LLaMA head size 256 is accepted: %s", last_error);
    p.hidden = 16384; /* 512 */
    check(refused(p, "plans/x.lua: plan.model.heads: head size 512 (hidden 16384 / 32 heads) is over 256"),
          "LLaMA head size 512 refused: %s", last_error);

    /* the op list: every op of it, by index, and only the ops of it */
    p = gpt2();
    ops[3].kind = OP__COUNT; /* an op kind added after this backend */
    check(refused(p, "plans/x.lua: plan.model: op 3 (?) has no CUDA kernel yet"),
          "an op without a CUDA kernel refused by index and name: %s", last_error);
    p = llama();
    ops[5].kind = OP__COUNT; /* the last op is checked too */
    check(refused(p, "op 5 (?) has no CUDA kernel yet"), "the last op is checked: %s", last_error);
    p.n_ops = 5; /* past the list: not an op of the program */
    check(accepted(p), "an op kind past n_ops is not read: %s", last_error);

    /* a VLM's vision ops: on CUDA in both forms, all rows and a tp rank's
     * own under sequence parallelism (runtime/cuda/vision.cu's *_rows_*) */
    p = gpt2();
    ops[1].kind = OP_PATCH_EMBED;
    ops[2].kind = OP_IMAGE_MERGE;
    check(accepted(p), "a VLM's patch_embed and image_merge are accepted: %s", last_error);
    p.sp = 1;
    check(accepted(p), "a VLM under sequence parallelism is accepted: %s", last_error);

    /* the op table (compiler/ops.c): every kind has a complete row (a
     * graph op also a shape rule and a shard rule, an op with parameters
     * and inputs its B and W halves); the GPT-2 and LLaMA ops and the
     * tensor-parallel ones have CUDA kernels; a user kernel (OP_KERNEL)
     * calls the plan's functions, not the runtime's */
    for (int k = 0; k < OP__COUNT; k++) {
        const op_row *r = op_row_of((op_kind)k);
        int ok = r && r->name && ((r->k[0].fwd && r->k[0].bwd) || k == OP_KERNEL) && r->emit_fwd && r->emit_bwd &&
                 (!r->graph || (r->check && r->shard)) &&
                 /* past OP__GRAPH_COUNT the shard pass's ops; of those only pos_add
                  * is a graph op too (Graph:position_add, a GPT-2 VLM) */
                 (k < OP__GRAPH_COUNT ? r->graph : r->graph == (k == OP_POS_ADD)) &&
                 (r->param_min == 0 || r->in_max == 0 ||
                  (r->emit_bwd_input && r->emit_bwd_weight && r->k[0].bwd_input && r->k[0].bwd_weight));
        check(ok, "op kind %d (%s) has a complete row", k, op_name((op_kind)k));
    }
    op_kind gpt2_llama[] = { OP_EMBED, OP_LAYERNORM, OP_LINEAR, OP_ATTENTION, OP_GELU, OP_ADD, OP_LMHEAD_XENT,
                             OP_RMSNORM, OP_ROPE, OP_SWIGLU, OP_VOCAB_EMBED, OP_POS_ADD, OP_BIAS_ADD,
                             OP_TP_COPY, OP_TP_REDUCE, OP_TP_GATHER, OP_TP_SCATTER };
    for (size_t j = 0; j < sizeof gpt2_llama / sizeof gpt2_llama[0]; j++)
        check(op_has_backend(gpt2_llama[j], BACKEND_CUDA) && op_has_backend(gpt2_llama[j], BACKEND_CPU),
              "%s has CPU and CUDA kernels", op_name(gpt2_llama[j]));
    check(strcmp(op_name(OP_TP_SCATTER), "tp_scatter") == 0 && strcmp(op_name(OP__COUNT), "?") == 0,
          "op names come from the table");

    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
