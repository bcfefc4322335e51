/* verify_ir.c: the IR invariants (verify_ir.h):
 *   ids in range: every op's tensors in 1..n_tensors-1 (0 is "none"), its
 *     parameters in 0..n_params-1;
 *   dataflow: each tensor is made by exactly one op (its producer), and
 *     every tensor an op reads was made by an earlier op;
 *   every parameter is used by some op;
 *   widths: positive; a parameter's numel is the product of its shape;
 *     shape-preserving ops keep their input's width and rows, a linear's
 *     weight is (input width, output width), a norm's weight as wide as its
 *     input (this rank's parts, after shard);
 *   after partition: chunks in range and contiguous (non-decreasing along
 *     the op list), each chunk's op range as chunk_first_op/chunk_end_op say;
 *   after graph: every fused pair is two adjacent ops, the second reading
 *     the first's output. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "ops.h"
#include "verify_ir.h"

static int broken(const Program *p, const char *after, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int broken(const Program *p, const char *after, const char *fmt, ...) {
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    wf_error("%s: internal error: the IR after pass '%s' is inconsistent: %s", p->plan_path, after, what);
    return -1;
}

static long width(const Program *p, int t) { return p->tensors[t].width; }

static int check_op(const Program *p, const char *after, int i, int *uses) {
    const ir_op *o = &p->ops[i];
    const char *name = op_name(o->kind);
    if ((unsigned)o->kind >= OP__COUNT) return broken(p, after, "op %d has no kind (%d)", i, (int)o->kind);
    if (o->n_in < 0 || o->n_in > 2 || o->n_param < 0 || o->n_param > 2)
        return broken(p, after, "op %d (%s) has %d inputs and %d parameters", i, name, o->n_in, o->n_param);
    if (o->out < 1 || o->out >= p->n_tensors || p->tensors[o->out].producer != i)
        return broken(p, after, "op %d (%s) writes tensor %d, whose producer is not op %d", i, name, o->out, i);
    for (int k = 0; k < o->n_in; k++) {
        int t = o->in[k];
        if (t < 1 || t >= p->n_tensors)
            return broken(p, after, "op %d (%s) reads tensor %d of %d", i, name, t, p->n_tensors);
        if (p->tensors[t].producer >= i)
            return broken(p, after, "op %d (%s) reads tensor %d before op %d makes it", i, name, t,
                          p->tensors[t].producer);
    }
    for (int k = 0; k < o->n_param; k++) {
        if (o->param[k] < 0 || o->param[k] >= p->n_params)
            return broken(p, after, "op %d (%s) uses parameter %d of %d", i, name, o->param[k], p->n_params);
        uses[o->param[k]]++;
    }
    long out = width(p, o->out), in = o->n_in ? width(p, o->in[0]) : 0;
    if (out < 1) return broken(p, after, "op %d (%s) writes a tensor of width %ld", i, name, out);
    if (op_row_of(o->kind)->keeps_shape &&
        (out != in || p->tensors[o->out].rows_div != p->tensors[o->in[0]].rows_div))
        return broken(p, after, "op %d (%s) turns (N/%d, %ld) into (N/%d, %ld)", i, name,
                      p->tensors[o->in[0]].rows_div, in, p->tensors[o->out].rows_div, out);
    if (o->kind == OP_ADD && (width(p, o->in[1]) != out ||
                              p->tensors[o->in[1]].rows_div != p->tensors[o->out].rows_div))
        return broken(p, after, "op %d (add) adds tensors of different shapes", i);
    const ir_param *w = o->n_param ? &p->params[o->param[0]] : NULL;
    if (o->kind == OP_LINEAR && (w->ndim != 2 || w->shape[0] != in || w->shape[1] != out))
        return broken(p, after, "op %d (linear) maps width %ld to %ld with a [%ld,%ld] weight", i, in, out,
                      w->shape[0], w->shape[1]);
    if ((o->kind == OP_LAYERNORM || o->kind == OP_RMSNORM) && w->numel != in)
        return broken(p, after, "op %d (%s) normalizes width %ld with %ld weights", i, name, in, w->numel);
    return 0;
}

static int check_pairs(const Program *p, const char *after) {
    for (int i = 0; i < p->n_ops; i++) {
        const ir_op *o = &p->ops[i], *next = i + 1 < p->n_ops ? &p->ops[i + 1] : NULL;
        int first = o->fused == FUSED_ADD_LN_ADD || o->fused == FUSED_LIN_GELU_LINEAR;
        int second = next && (next->fused == FUSED_ADD_LN_NORM || next->fused == FUSED_LIN_GELU_GELU);
        if (first != second || (first && next->fused != o->fused + 1))
            return broken(p, after, "op %d is half of a fused pair without its other half", first ? i : i + 1);
        if (first && (next->n_in < 1 || next->in[0] != o->out))
            return broken(p, after, "fused op %d does not read op %d's output", i + 1, i);
        int gelu = o->dgelu == DGELU_GELU, linear = next && next->dgelu == DGELU_LINEAR;
        if (gelu != linear)
            return broken(p, after, "op %d is half of a fused backward pair without its other half",
                          gelu ? i : i + 1);
        if (gelu && (next->n_in < 1 || next->in[0] != o->out))
            return broken(p, after, "fused backward op %d does not read op %d's output", i + 1, i);
    }
    return 0;
}

static int check_chunks(const Program *p, const char *after) {
    for (int i = 0; i < p->n_ops; i++) {
        int c = p->ops[i].chunk;
        if (c < 0 || c >= p->n_chunks) return broken(p, after, "op %d is in chunk %d of %d", i, c, p->n_chunks);
        if (i > 0 && c < p->ops[i - 1].chunk)
            return broken(p, after, "op %d is in chunk %d after an op of chunk %d: chunks are not contiguous", i, c,
                          p->ops[i - 1].chunk);
        if (i < p->chunk_first_op[c] || i >= p->chunk_end_op[c])
            return broken(p, after, "op %d of chunk %d lies outside its range [%d, %d)", i, c,
                          p->chunk_first_op[c], p->chunk_end_op[c]);
    }
    return 0;
}

int verify_ir(const Program *p, const char *after) {
    if (p->n_tensors < 1 || p->n_ops < 1) return broken(p, after, "%d ops, %d tensors", p->n_ops, p->n_tensors);
    for (int t = 1; t < p->n_tensors; t++) {
        int by = p->tensors[t].producer;
        if (by < 0 || by >= p->n_ops || p->ops[by].out != t)
            return broken(p, after, "tensor %d claims op %d made it", t, by);
    }
    for (int k = 0; k < p->n_params; k++) {
        const ir_param *q = &p->params[k];
        long n = 1;
        for (int d = 0; d < q->ndim; d++) n *= q->shape[d];
        if (q->ndim < 1 || q->ndim > 4 || n != q->numel || n < 1)
            return broken(p, after, "parameter %s has %ld elements, its shape %ld", q->name, q->numel, n);
    }
    int *uses = calloc((size_t)p->n_params + 1, sizeof(int)), rc = 0;
    for (int i = 0; i < p->n_ops && rc == 0; i++) rc = check_op(p, after, i, uses);
    for (int k = 0; k < p->n_params && rc == 0; k++)
        if (!uses[k]) rc = broken(p, after, "parameter %s is used by no op", p->params[k].name);
    free(uses);
    if (rc != 0) return -1;
    if (p->chunk_first_op && check_chunks(p, after) != 0) return -1;
    return check_pairs(p, after);
}
