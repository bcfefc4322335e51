/* check.c: the `check` pass: shapes along the model graph, by each op's
 * shape rule (ops.h), which the Lua prelude could not see whole.  It also
 * says what every activation is: a row per token, `width` columns, floats
 * (the memory pass may store them in 16 bits; the shard pass splits them). */
#include <stdio.h>

#include "ops.h"

/* "1", or "1 to 2" */
static void range(char *out, size_t n, int lo, int hi) {
    if (lo == hi) snprintf(out, n, "%d", lo);
    else snprintf(out, n, "%d to %d", lo, hi);
}

int pass_check(Program *p) {
    for (int i = 0; i < p->n_ops; i++) {
        const ir_op *o = &p->ops[i];
        const op_row *r = op_row_of(o->kind);
        if (!r || !r->graph) return wf_op_error(p, i, "unknown op");
        for (int k = 0; k < o->n_in; k++)
            if (o->in[k] < 1 || o->in[k] >= p->n_tensors || p->tensors[o->in[k]].producer >= i)
                return wf_op_error(p, i, "reads a tensor that no earlier op produced");
        if (o->n_in < r->in_min || o->n_in > r->in_max || o->n_param < r->param_min || o->n_param > r->param_max) {
            char what[160], ins[16], ps[16];
            range(ins, sizeof ins, r->in_min, r->in_max);
            range(ps, sizeof ps, r->param_min, r->param_max);
            snprintf(what, sizeof what, "takes %s input(s) and %s parameter(s), not %d and %d", ins, ps,
                     o->n_in, o->n_param);
            return wf_op_error(p, i, "%s", what);
        }
        const char *bad = r->check(p, i);
        if (bad) return wf_op_error(p, i, "%s", bad);
        ir_tensor *t = &p->tensors[o->out];
        t->rows_of = ROWS_TOKENS;
        t->rows_div = 1;
        t->dtype = DTYPE_FP32;
    }
    if (p->n_ops == 0 || !op_row_of(p->ops[p->n_ops - 1].kind)->loss) {
        wf_error("%s: the model graph must end in lm_head_xent", p->plan_path);
        return -1;
    }
    return 0;
}
