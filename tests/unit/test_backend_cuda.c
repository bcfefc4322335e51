/* test_backend_cuda.c: `--backend cuda` refuses, by field and name, what the
 * CUDA runtime does not implement yet (compiler/backend_cuda.c), and accepts
 * the GPT-2 and LLaMA programs it does, in every precision. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "program.h"

#include "check.h"

/* The compiler's reporter and op names, here captured for the checks. */
static char last_error[1024];
void wf_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
}
const char *op_name(op_kind k) { return k == OP__COUNT ? "future_op" : "known_op"; }

static ir_op ops[5];

static Program gpt2(void) {
    static Program p;
    memset(&p, 0, sizeof p);
    strcpy(p.plan_path, "plans/x.lua");
    strcpy(p.family, "gpt2");
    strcpy(p.precision, "fp32");
    p.hidden = 768;
    p.heads = 12;
    ops[0].kind = OP_EMBED;
    ops[1].kind = OP_ATTENTION;
    ops[2].kind = OP_TP_SCATTER;
    p.ops = ops;
    p.n_ops = 3;
    return p;
}

/* LLaMA's ops: RMSNorm, RoPE, grouped-query attention, SwiGLU */
static Program llama(void) {
    Program p = gpt2();
    strcpy(p.family, "llama");
    p.hidden = 4096, p.heads = 32;
    ops[0].kind = OP_RMSNORM;
    ops[1].kind = OP_ROPE;
    ops[2].kind = OP_ATTENTION;
    ops[2].n_in = 2;
    ops[3].kind = OP_SWIGLU;
    ops[4].kind = OP_LMHEAD_XENT;
    p.n_ops = 5;
    return p;
}

static int refused(Program p, const char *want) {
    last_error[0] = 0;
    return cuda_backend_check(&p) != 0 && strstr(last_error, want) != NULL;
}

int main(void) {
    Program p = gpt2();
    last_error[0] = 0;
    check(cuda_backend_check(&p) == 0 && !last_error[0], "fp32 GPT-2 with tp ops is accepted");

    const char *sixteen[] = { "bf16", "fp16" };
    for (int i = 0; i < 2; i++) {
        p = gpt2();
        strcpy(p.precision, sixteen[i]);
        last_error[0] = 0;
        check(cuda_backend_check(&p) == 0 && !last_error[0], "%s GPT-2 is accepted: %s", sixteen[i],
              last_error);
        p = llama();
        strcpy(p.precision, sixteen[i]);
        last_error[0] = 0;
        check(cuda_backend_check(&p) == 0 && !last_error[0], "%s LLaMA is accepted: %s", sixteen[i],
              last_error);
    }
    p = llama();
    last_error[0] = 0;
    check(cuda_backend_check(&p) == 0 && !last_error[0], "fp32 LLaMA (RMSNorm, RoPE, GQA, SwiGLU) is "
          "accepted: %s", last_error);
    p.hidden = 8192, p.heads = 32; /* LLaMA's head size is hidden / heads too */
    check(refused(p, "plans/x.lua: plan.model.heads: head size 256 (hidden 8192 / 32 heads) is over 128"),
          "LLaMA head size 256 refused: %s", last_error);

    p = gpt2();
    strcpy(p.family, "mamba");
    check(refused(p, "plans/x.lua: plan.model: the mamba family is not available with --backend cuda"),
          "another model family refused: %s", last_error);

    p = gpt2();
    p.hidden = 1024, p.heads = 8; /* head size 128: the largest the flash kernels take */
    last_error[0] = 0;
    check(cuda_backend_check(&p) == 0 && !last_error[0], "head size 128 is accepted");
    p.hidden = 2048;
    check(refused(p, "plans/x.lua: plan.model.heads: head size 256 (hidden 2048 / 8 heads) is over 128"),
          "head size 256 refused: %s", last_error);

    p = gpt2();
    ops[1].kind = OP__COUNT; /* an op kind added after this backend */
    check(refused(p, "op 1 (future_op) has no CUDA kernel yet"), "an op without a CUDA kernel "
          "refused by index and name: %s", last_error);

    p = gpt2();
    strcpy(p.schedule, "pipedream-2bw");
    p.pp = 2;
    strcpy(p.comm, "nccl");
    last_error[0] = 0;
    check(cuda_backend_check(&p) == 0 && !last_error[0], "PipeDream-2BW over pp 2 with comm = nccl is accepted");
    strcpy(p.comm, "mpi");
    check(cuda_backend_check(&p) == 0 && !last_error[0], "PipeDream-2BW with comm = mpi is accepted");
    p.pp = 1;
    strcpy(p.comm, "nccl");
    check(cuda_backend_check(&p) == 0, "NCCL with the 2BW schedule on one stage (no pipeline) is accepted");

    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
