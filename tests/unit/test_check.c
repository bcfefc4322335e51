/* test_check.c: the check pass's shape rules come from the op table
 * (compiler/ops.h) and their errors name the plan line the op came from
 * (ir_op.line), or the plan alone where it is unknown; the rules set each
 * activation's rows and storage. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "program.h"

#include "check.h"

#include "reporter_capture.h"

static ir_param params[1];
static ir_op ops[2];
static ir_tensor tensors[3];

/* embed (plan line 3) -> tensor 1 -> gelu (plan line `line`) -> tensor 2 */
static Program graph(long gelu_width, int line) {
    static Program p;
    memset(&p, 0, sizeof p);
    memset(ops, 0, sizeof ops);
    memset(tensors, 0, sizeof tensors);
    strcpy(p.plan_path, "plans/x.lua");
    p.vocab = 64, p.seq = 8, p.micro = 2;
    memset(params, 0, sizeof params);
    params[0].ndim = 2, params[0].shape[0] = 64, params[0].shape[1] = 16, params[0].numel = 64 * 16;
    p.params = params, p.n_params = 1;
    ops[0].kind = OP_EMBED, ops[0].out = 1, ops[0].param[0] = 0, ops[0].n_param = 1, ops[0].line = 3;
    ops[1].kind = OP_GELU, ops[1].in[0] = 1, ops[1].n_in = 1, ops[1].out = 2, ops[1].line = line;
    tensors[1] = (ir_tensor){ .width = 16, .producer = 0, .rows_div = 7, .dtype = DTYPE_BF16 };
    tensors[2] = (ir_tensor){ .width = gelu_width, .producer = 1 };
    p.ops = ops, p.n_ops = 2, p.tensors = tensors, p.n_tensors = 3;
    return p;
}

int main(void) {
    if (capture_start() != 0) return 1;
    Program p = graph(32, 12);
    check(captured(pass_check, &p) != 0 && strstr(last_error, "plans/x.lua:12: model graph op 1 (gelu): gelu changes width"),
          "a shape error names the plan line: %s", last_error);
    p = graph(32, 0);
    check(captured(pass_check, &p) != 0 && strstr(last_error, "plans/x.lua: model graph op 1 (gelu): gelu changes width"),
          "without a line, the plan: %s", last_error);
    p = graph(16, 12);  /* shapes agree; the graph does not end in the loss */
    check(captured(pass_check, &p) != 0 && strstr(last_error, "the model graph must end in lm_head_xent"),
          "the loss must end the graph: %s", last_error);
    check(tensors[1].rows_of == ROWS_TOKENS && tensors[1].rows_div == 1 && tensors[1].dtype == DTYPE_FP32 &&
          tensors[2].rows_div == 1, "check makes every activation a row per token, stored as floats");
    p = graph(16, 5);
    ops[1].n_in = 2, ops[1].in[1] = 1;
    check(captured(pass_check, &p) != 0 && strstr(last_error, "plans/x.lua:5: model graph op 1 (gelu): takes 1 input(s) and 0 parameter(s), not 2 and 0"),
          "the row's input count: %s", last_error);
    p = graph(16, 5);
    params[0].shape[1] = 8;
    check(captured(pass_check, &p) != 0 && strstr(last_error, "plans/x.lua:3: model graph op 0 (embed): embedding shapes"),
          "the embedding's rule: %s", last_error);
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
