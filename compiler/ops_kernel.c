/* ops_kernel.c: the row (ops.c) of a user kernel (weft.kernel, g:apply;
 * user_kernel.h).  Its C functions are copied into the stage program as
 * static inline functions (emit.c) and called here, per value, in Weft's
 * own loops (CPU) or a __global__ wrapper a thread per value (CUDA): the
 * wrapper reads and writes the float arenas (the row is not audited for
 * act16, so a plan with a kernel keeps activations in floats), so the 16-bit
 * rounding of the plan's precision is the generic one after each op
 * (emit_ops.c), as for the built-in activations.  The elementwise kinds are
 * per value: under tensor and sequence parallelism they keep their inputs'
 * width and rows (pointwise_shard).  A rowwise kernel is called once per
 * row (CPU: a loop; CUDA: a thread per row forward, and backward with a
 * parameter vector one thread over the rows in order, so that dw sums as
 * on the CPU, deterministically); it needs the whole row: kernel_shard
 * keeps it where the hidden dimension is whole, as the built-in norms, and
 * refuses it where tensor parallelism split the row. */
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
    if (o->n_param != (k->kind == UK_ROWWISE && k->params)) return "has the wrong number of parameters for its kernel";
    if (o->n_param && p->params[o->param[0]].numel != op_out_width(p, o))
        return "a rowwise kernel's parameter vector is not as wide as its row";
    for (int j = 0; j < o->n_in; j++)
        if (op_in_width(p, o, j) != op_out_width(p, o)) return "a per-value kernel changes width";
    return NULL;
}

/* FLOPs per token: the kernel's count from its AST (user_kernel_check.c) per value */
double kernel_flops(const Program *p, const ir_op *o) {
    return kernel_of(p, o)->flops_fwd * (double)op_out_width(p, o);
}

/* Rowwise: the row must be whole (shard.c's rewrite; sp splits tokens, not rows). */
int kernel_shard(shard_ctx *r, const ir_op *o) {
    Program *p = shard_program(r);
    const user_kernel *k = kernel_of(p, o);
    if (k->kind != UK_ROWWISE) return pointwise_shard(r, o);
    int in = shard_in(r, o, 0);
    if (shard_width(r, in) != op_in_width(p, o, 0)) {
        wf_op_error(p, (int)(o - p->ops), "applies the rowwise kernel %s (%s) to rows that tensor parallelism "
                    "splits (%ld of %ld values on each of tp = %d ranks): a rowwise kernel needs the whole row; "
                    "apply it where the hidden dimension is whole, as the built-in norms are (before a column- "
                    "or after a row-parallel linear)", k->fwd, k->source, shard_width(r, in), op_in_width(p, o, 0),
                    p->tp);
        return -1;
    }
    int w = o->n_param ? o->param[0] : -1;
    int out = shard_add(r, o->kind, o, in, 0, w, -1, op_out_width(p, o), shard_rows(r, o));
    /* replicated like a norm weight: with sp each rank's gradient covers its tokens only */
    if (w >= 0) p->params[w].tp_partial = p->sp;
    return out;
}

static int on_cuda(const Program *p) { return strcmp(p->backend, "cuda") == 0; }

/* CUDA: a launch of the kernel's __global__ wrapper (emit_user_kernels) on
 * the rank's compute stream, n values, one thread each */
static void launch(writer *wr, const Program *p, int i, const operands *x, const char *dir, const char *args) {
    const ir_op *o = &p->ops[i];
    emit(wr, "    WF_LAUNCH(wf_user_kernel%d_%s, (unsigned)((%s * %ldL + 255) / 256), 256, 0, wf_cuda_stream(c))(%s, %s * %ldL);\n"
         "    wf_cuda_sync(c, \"%s\");\n", o->kernel, dir, x->rows, x->width, args, x->rows, x->width,
         !strcmp(dir, "fwd") ? p->kernels[o->kernel].fwd : p->kernels[o->kernel].bwd);
}

void kernel_emit_fwd(writer *wr, const Program *p, int i, const operands *x, const op_kernels *kk) {
    (void)kk;
    const user_kernel *k = kernel_of(p, &p->ops[i]);
    char args[4 * NAMEBUF + 64];
    if (k->kind == UK_ROWWISE) {
        char w[NAMEBUF + 16] = "";
        if (k->params) snprintf(w, sizeof w, "w + %s, ", x->w0);
        if (on_cuda(p)) {
            emit(wr, "    WF_LAUNCH(wf_user_kernel%d_fwd, (unsigned)((%s + 127) / 128), 128, 0, wf_cuda_stream(c))"
                 "(a + %s, a + %s, %s(long)(%s), %ld);\n    wf_cuda_sync(c, \"%s\");\n", p->ops[i].kernel, x->rows,
                 x->out, x->in0, k->params ? w : "", x->rows, x->width, k->fwd);
            return;
        }
        emit(wr, "    { /* %s, a row at a time */\n      float *y_ = a + %s; const float *x_ = a + %s;\n"
             "      for (long r_ = 0; r_ < %s; r_++) %s(%ld, x_ + r_ * %ldL, %sy_ + r_ * %ldL); }\n",
             k->source, x->out, x->in0, x->rows, k->fwd, x->width, x->width, w, x->width);
        return;
    }
    if (on_cuda(p)) {
        if (k->kind == UK_ELEMENTWISE) snprintf(args, sizeof args, "a + %s, a + %s", x->out, x->in0);
        else snprintf(args, sizeof args, "a + %s, a + %s, a + %s", x->out, x->in0, x->in1);
        launch(wr, p, i, x, "fwd", args);
        return;
    }
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
    char args[6 * NAMEBUF + 64];
    if (k->kind == UK_ROWWISE) {
        char w[NAMEBUF + 16] = "", g[NAMEBUF + 16] = "";
        if (k->params) {
            snprintf(w, sizeof w, "w + %s, ", x->w0);
            snprintf(g, sizeof g, ", g + %s", x->g0);
        }
        if (on_cuda(p)) {
            /* with dw: one thread, the rows in order (dw sums as on the CPU) */
            char grid[NAMEBUF + 40];
            if (k->params) snprintf(grid, sizeof grid, "1, 1");
            else snprintf(grid, sizeof grid, "(unsigned)((%s + 127) / 128), 128", x->rows);
            emit(wr, "    WF_LAUNCH(wf_user_kernel%d_bwd, %s, 0, wf_cuda_stream(c))"
                 "(d + D_%s%s, a + %s, %sd + D_%s, (long)(%s), %ld);\n    wf_cuda_sync(c, \"%s\");\n",
                 p->ops[i].kernel, grid, x->in0, g, x->in0, w, x->out, x->rows, x->width, k->bwd);
            return;
        }
        emit(wr, "    { /* %s, a row at a time; the gradients accumulate */\n"
             "      float *dx_ = d + D_%s; const float *x_ = a + %s, *dy_ = d + D_%s;\n"
             "      for (long r_ = 0; r_ < %s; r_++)\n"
             "        %s(%ld, x_ + r_ * %ldL, %sdy_ + r_ * %ldL, dx_ + r_ * %ldL%s); }\n",
             k->source, x->in0, x->in0, x->out, x->rows, k->bwd, x->width, x->width, w, x->width, x->width, g);
        return;
    }
    if (on_cuda(p)) {
        if (k->kind == UK_ELEMENTWISE)
            snprintf(args, sizeof args, "d + D_%s, a + %s, d + D_%s", x->in0, x->in0, x->out);
        else
            snprintf(args, sizeof args, "d + D_%s, d + D_%s, a + %s, a + %s, d + D_%s", x->in0, x->in1, x->in0,
                     x->in1, x->out);
        launch(wr, p, i, x, "bwd", args);
        return;
    }
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
    if (cuda) {
        /* the wrappers the ops launch: one thread a value, the gradients
         * accumulated as the CPU loops do (kernel_emit_fwd / _bwd) */
        emit(o, "#ifndef WF_LAUNCH /* nvcc; the CPU emulator defines its own */\n"
                "#define WF_LAUNCH(kernel, grid, block, smem, stream) kernel<<<grid, block, smem, stream>>>\n"
                "#endif\n"
                "extern \"C\" cudaStream_t wf_cuda_stream(wf_ctx *c);\n"
                "extern \"C\" void wf_cuda_sync(wf_ctx *c, const char *kernel);\n");
        for (int i = 0; i < p->n_kernels; i++) {
            const user_kernel *k = &p->kernels[i];
            const char *idx = "long i = (long)blockIdx.x * blockDim.x + threadIdx.x;\n    if (i >= n) return;\n";
            if (k->kind == UK_ROWWISE) {
                const char *w = k->params ? "const float *w, " : "", *wa = k->params ? "w, " : "";
                emit(o, "__global__ void wf_user_kernel%d_fwd(float *y, const float *x, %slong rows, int n) {\n"
                        "    long r = (long)blockIdx.x * blockDim.x + threadIdx.x;\n    if (r >= rows) return;\n"
                        "    %s(n, x + r * n, %sy + r * n);\n}\n", i, w, k->fwd, wa);
                if (k->params)
                    emit(o, "__global__ void wf_user_kernel%d_bwd(float *dx, float *dw, const float *x, const float *w,\n"
                            "                                  const float *dy, long rows, int n) {\n"
                            "    for (long r = 0; r < rows; r++) %s(n, x + r * n, w, dy + r * n, dx + r * n, dw);\n}\n",
                         i, k->bwd);
                else
                    emit(o, "__global__ void wf_user_kernel%d_bwd(float *dx, const float *x, const float *dy, long rows, int n) {\n"
                            "    long r = (long)blockIdx.x * blockDim.x + threadIdx.x;\n    if (r >= rows) return;\n"
                            "    %s(n, x + r * n, dy + r * n, dx + r * n);\n}\n", i, k->bwd);
                continue;
            }
            if (k->kind == UK_ELEMENTWISE) {
                emit(o, "__global__ void wf_user_kernel%d_fwd(float *y, const float *x, long n) {\n    %s"
                        "    y[i] = %s(x[i]);\n}\n", i, idx, k->fwd);
                emit(o, "__global__ void wf_user_kernel%d_bwd(float *dx, const float *x, const float *dy, long n) {\n"
                        "    %s    dx[i] += %s(x[i], dy[i]);\n}\n", i, idx, k->bwd);
            } else {
                emit(o, "__global__ void wf_user_kernel%d_fwd(float *out, const float *x, const float *y, long n) {\n"
                        "    %s    out[i] = %s(x[i], y[i]);\n}\n", i, idx, k->fwd);
                emit(o, "__global__ void wf_user_kernel%d_bwd(float *dx, float *dy, const float *x, const float *y,\n"
                        "                                  const float *dout, long n) {\n    %s"
                        "    float gx = 0.0f, gy = 0.0f;\n    %s(x[i], y[i], dout[i], &gx, &gy);\n"
                        "    dx[i] += gx;\n    dy[i] += gy;\n}\n", i, idx, k->bwd);
            }
        }
    }
    emit(o, "\n");
}
