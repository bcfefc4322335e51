/* ops_kernel.c: the row (ops.c) of a user kernel (weft.kernel, g:apply;
 * user_kernel.h).  Its C functions are copied into the stage program as
 * static inline functions (emit.c) and called here, per value, in Weft's
 * own loops: the wrapper reads and writes the float arenas, so the 16-bit
 * rounding of the plan's precision is the generic one after each op
 * (emit_ops.c), as for the built-in activations.  Both kinds are per value:
 * under tensor and sequence parallelism they keep their inputs' width and
 * rows (pointwise_shard). */
#include <string.h>

#include "ops.h"
#include "user_kernel.h"

static const user_kernel *kernel_of(const Program *p, const ir_op *o) { return &p->kernels[o->kernel]; }

const char *kernel_check(const Program *p, int i) {
    const ir_op *o = &p->ops[i];
    if (o->kernel < 0 || o->kernel >= p->n_kernels) return "names no kernel";
    const user_kernel *k = kernel_of(p, o);
    int want = k->kind == UK_ELEMENTWISE2 ? 2 : 1;
    if (o->n_in != want) return "has the wrong number of inputs for its kernel's kind";
    for (int j = 0; j < o->n_in; j++)
        if (op_in_width(p, o, j) != op_out_width(p, o)) return "a per-value kernel changes width";
    return NULL;
}

/* FLOPs per token: the kernel's count from its AST (user_kernel_check.c) per value */
double kernel_flops(const Program *p, const ir_op *o) {
    return kernel_of(p, o)->flops_fwd * (double)op_out_width(p, o);
}

void kernel_emit_fwd(writer *wr, const Program *p, int i, const operands *x, const op_kernels *kk) {
    (void)kk;
    const user_kernel *k = kernel_of(p, &p->ops[i]);
    if (k->kind == UK_ELEMENTWISE)
        emit(wr, "    { /* %s */\n      float *y_ = a + %s; const float *x_ = a + %s;\n"
             "      for (long j = 0; j < %s * %ldL; j++) y_[j] = %s(x_[j]); }\n",
             k->source, x->out, x->in0, x->rows, x->width, k->fwd);
    else
        emit(wr, "    { /* %s */\n      float *o_ = a + %s; const float *x_ = a + %s, *y_ = a + %s;\n"
             "      for (long j = 0; j < %s * %ldL; j++) o_[j] = %s(x_[j], y_[j]); }\n",
             k->source, x->out, x->in0, x->in1, x->rows, x->width, k->fwd);
}

/* the input gradients accumulate (+=), as every backward's do */
void kernel_emit_bwd(writer *wr, const Program *p, int i, const operands *x, const op_kernels *kk) {
    (void)kk;
    const user_kernel *k = kernel_of(p, &p->ops[i]);
    if (k->kind == UK_ELEMENTWISE)
        emit(wr, "    { /* %s */\n      float *dx_ = d + D_%s; const float *x_ = a + %s, *dy_ = d + D_%s;\n"
             "      for (long j = 0; j < %s * %ldL; j++) dx_[j] += %s(x_[j], dy_[j]); }\n",
             k->source, x->in0, x->in0, x->out, x->rows, x->width, k->bwd);
    else
        emit(wr, "    { /* %s */\n      float *dx_ = d + D_%s, *dy_ = d + D_%s;\n"
             "      const float *x_ = a + %s, *y_ = a + %s, *do_ = d + D_%s;\n"
             "      for (long j = 0; j < %s * %ldL; j++) {\n"
             "        float gx = 0.0f, gy = 0.0f;\n"
             "        %s(x_[j], y_[j], do_[j], &gx, &gy);\n"
             "        dx_[j] += gx;\n        dy_[j] += gy;\n      } }\n",
             k->source, x->in0, x->in1, x->in0, x->in1, x->out, x->rows, x->width, k->bwd);
}

void emit_user_kernels(writer *o, const Program *p, int cuda) {
    if (p->n_kernels == 0) return;
    emit(o, "/* User kernels (weft.kernel): the files' functions as weft checked them */\n");
    emit(o, "#define WF_KERNEL_FN%s\n", cuda ? " __host__ __device__" : "");
    for (int i = 0; i < p->n_kernels; i++) {
        int seen = 0;
        for (int j = 0; j < i; j++) seen |= strcmp(p->kernels[j].path, p->kernels[i].path) == 0;
        if (seen) continue;
        emit(o, "/* %s */\n%s", p->kernels[i].source, p->kernels[i].text ? p->kernels[i].text : "");
    }
    emit(o, "\n");
}
