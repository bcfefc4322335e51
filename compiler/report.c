/* report.c: what `weft check` prints, the per-pass IR dumps, and the one
 * diagnostic reporter every pass uses. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "program.h"
#include "simulate.h"
#include "user_kernel.h"

/* A message quotes what the plan wrote (a field name, a string value), so it
 * is cut at 4 KiB: one plan once printed 33 MB. */
enum { ERROR_MAX = 4096 };

/* wf_error_capture: where messages go instead of stderr (weft plan). */
static char *capture_buf;
static size_t capture_len;

void wf_error_capture(char *buf, size_t n) {
    capture_buf = buf;
    capture_len = n;
    if (buf && n) buf[0] = 0;
}

void wf_error(const char *fmt, ...) {
    char msg[ERROR_MAX + 1];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (capture_buf) {  /* the first message of a failed candidate says why */
        if (!capture_buf[0]) snprintf(capture_buf, capture_len, "%s", msg);
        return;
    }
    fprintf(stderr, "weft: error: %s%s\n", msg, n > ERROR_MAX ? " ... (truncated)" : "");
}

/* An error about op i: "plan.lua:LINE: model graph op I (NAME): what" where
 * the op knows its plan line (ir_op.line), else without the line. */
int wf_op_error(const Program *p, int i, const char *fmt, ...) {
    const ir_op *o = &p->ops[i];
    char what[512], where[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (o->line > 0) snprintf(where, sizeof where, "%s:%d", p->plan_path, o->line);
    else snprintf(where, sizeof where, "%s", p->plan_path);
    wf_error("%s: model graph op %d (%s): %s", where, i, op_name(o->kind), what);
    return -1;
}

/* The passes' allocations: a compile that cannot get memory stops with the
 * pass named, rather than crashing on a NULL later. */
void *wf_checked(void *q, const char *what) {
    if (!q) {
        wf_error("out of memory (%s)", what);
        exit(3);
    }
    return q;
}

void program_human_bytes(double bytes, char *out, size_t n) {
    const char *unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    int u = 0;
    while (bytes >= 1024.0 && u < 4) {
        bytes /= 1024.0;
        u++;
    }
    snprintf(out, n, u ? "%.2f %s" : "%.0f %s", bytes, unit[u]);
}

static void human_count(double v, char *out, size_t n) {
    if (v >= 1e12) snprintf(out, n, "%.2f T", v / 1e12);
    else if (v >= 1e9) snprintf(out, n, "%.2f G", v / 1e9);
    else if (v >= 1e6) snprintf(out, n, "%.2f M", v / 1e6);
    else if (v >= 1e3) snprintf(out, n, "%.2f K", v / 1e3);
    else snprintf(out, n, "%.0f", v);
}

/* fp32 runs at the device's fp32 rate (no TF32: the kernels do not use it);
 * bf16 / fp16 at theirs, or fp32's where the device description has none. */
double program_peak_tflops(const Program *p) {
    double peak = strcmp(p->precision, "bf16") == 0 ? p->device_bf16_tflops
                : strcmp(p->precision, "fp16") == 0 ? p->device_fp16_tflops : 0;
    return peak > 0 ? peak : p->device_fp32_tflops;
}

/* The CPU backend's binding of a node's ranks to cores when they outnumber
 * the cores (weft/bind.h's rule, as simulate prices it and the runtime
 * binds); nothing where a node holds one rank or on GPUs. */
static void report_binding(const Program *p, FILE *out) {
    int node = p->world < p->devices_per_node ? p->world : p->devices_per_node;
    if (strcmp(p->device, "CPU") != 0 || node < 2) return;
    const char *what = "bound to cores in turn in stage order";
    switch (simulate_binding(p, 1)) {  /* 1 core: as if oversubscribed */
    case WF_BIND_NOT_ASKED: what = "left to the kernel"; break;
    case WF_BIND_ONE_STAGE: what = "left to the kernel (the node holds one stage)"; break;
    case WF_BIND_TP: what = "left to the kernel (tensor parallelism)"; break;
    default: break;
    }
    fprintf(out, "binding   cluster.bind = %s: where a node's %d ranks outnumber its cores, %s (as simulate "
                 "prices it; WEFT_BIND overrides it at run time, unpriced)\n", wf_bind_name(p->bind), node, what);
}

void program_report(const Program *p, FILE *out) {
    char a[32], b[32], c[32];
    fprintf(out, "plan      %s (%s)\n", p->plan_name, p->plan_path);
    fprintf(out, "model     %s: %d layers, hidden %d, %d heads, seq %d, vocab %d\n",
            p->family, p->layers, p->hidden, p->heads, p->seq, p->vocab);
    if (p->kv_heads)
        fprintf(out, "          %d key/value heads (grouped-query attention), SwiGLU %d, RoPE theta %g,"
                     " RMSNorm eps %g\n", p->kv_heads, p->ffn_hidden, p->rope_theta, p->norm_eps);
    human_count((double)p->n_param_total, a, sizeof a);
    for (int i = 0; i < p->n_kernels; i++) {  /* user kernels: what the checks found */
        const user_kernel *k = &p->kernels[i];
        fprintf(out, "%s %s (%s: %s / %s), checked by libclang; per value %g / %g FLOP, %g / %g B "
                "(forward / backward)\n", i ? "         " : "kernels  ", k->source, user_kernel_kind_name(k->kind),
                k->fwd, k->bwd, k->flops_fwd, k->flops_bwd, user_kernel_bytes(k, 0), user_kernel_bytes(k, 1));
    }
    fprintf(out, "params    %s (%ld)\n", a, p->n_param_total);
    long frozen = 0;  /* weft.vlm's freeze: what it leaves out of backward (graph.c) */
    int no_bwd = 0, half_bwd = 0;
    for (int k = 0; k < p->n_params; k++) {
        long whole = 1;  /* the full tensor, whatever tensor parallelism splits */
        for (int d = 0; d < p->params[k].ndim; d++) whole *= p->params[k].gshape[d];
        if (p->params[k].frozen && p->params[k].tied_to < 0) frozen += whole;
    }
    for (int i = 0; i < p->n_ops; i++) {
        no_bwd += !p->ops[i].grad_in && !p->ops[i].grad_w;
        half_bwd += (p->ops[i].grad_in || p->ops[i].grad_w) && !op_full_backward(&p->ops[i]);
    }
    if (frozen) {
        human_count((double)frozen, b, sizeof b);
        fprintf(out, "frozen    %s (%ld): no gradients, no optimizer state%s; of %d ops' backwards %d skipped, "
                     "%d only half (input or parameter gradients)\n", b, frozen,
                p->zero >= 3 ? ", whole on every rank outside ZeRO-3's shards (never gathered)" : "",
                p->n_ops, no_bwd, half_bwd);
    }
    double tokens = (double)p->global_batch * p->seq;
    human_count(p->flops_per_token * tokens, b, sizeof b);
    human_count(p->flops_per_token, c, sizeof c);
    if (untied_embedding(p))  /* its lookup is no matmul */
        fprintf(out, "flops     %sFLOP per step (%sFLOP per token x %.0f tokens; 6(N - embedding) + 12*L*h*s"
                     " = %.0f)\n", b, c, tokens, p->flops_per_token);
    else
        fprintf(out, "flops     %sFLOP per step (%sFLOP per token x %.0f tokens; 6N + 12*L*h*s)\n",
                b, c, tokens);
    fprintf(out, "mesh      dp %d x tp %d x pp %d = %d ranks on %d node(s) of %d %s\n",
            p->dp, p->tp, p->pp, p->world, p->nodes, p->devices_per_node, p->device);
    char order[64];
    wf_mesh_order(p->axes, p->n_axes, order, sizeof order);
    if (strcmp(order, WF_MESH_DEFAULT_ORDER) != 0) {
        fprintf(out, "          ranks numbered in mesh.order %s (first fastest): stride", order);
        for (int i = 0; i < p->n_axes; i++)
            fprintf(out, "%s %s %d", i ? "," : "", wf_axis_name(p->axes[i].kind), p->axes[i].stride);
        fprintf(out, "\n");
    }
    report_binding(p, out);
    fprintf(out, "batch     global %d = micro %d x dp %d x accumulation %d; %.0f tokens/step\n",
            p->global_batch, p->micro, p->dp, p->accum, tokens);
    fprintf(out, "optimizer adamw lr %g (min %g, warmup %d), betas (%g, %g), wd %g, clip %g; %d steps\n",
            p->lr, p->min_lr, p->warmup, p->beta1, p->beta2, p->weight_decay, p->clip, p->steps);
    if (strcmp(p->precision, "fp32") != 0) {  /* (fp32 plans print as they always have) */
        fprintf(out, "precision %s storage, fp32 master weights and AdamW moments", p->precision);
        if (strcmp(p->precision, "fp16") != 0) fprintf(out, "\n");
        else if (p->loss_scale_dynamic)
            fprintf(out, "; dynamic loss scale %g (window %d, hysteresis %d, min %g)\n",
                    p->loss_scale_initial, p->loss_scale_window, p->loss_scale_hysteresis, p->loss_scale_min);
        else fprintf(out, "; static loss scale %g\n", p->loss_scale_initial);
        if (p->act16)
            fprintf(out, "          activations and their gradients stored as %s (16-bit storage; "
                         "saved statistics fp32)\n", p->precision);
        if (p->grad16)
            fprintf(out, "          weight gradients stored as %s (2 bytes; their sums on fp32 staging, "
                         "rounded once)\n", p->precision);
    }
    comm_report(p, out);
    fprintf(out, "buckets   %d of at most %g MiB, in backward order:\n", p->n_buckets, p->bucket_mb);
    for (int k = 0; k < p->n_buckets; k++) {
        const ir_bucket *bk = &p->buckets[k];
        program_human_bytes((grad_accum16(p) ? 2.0 : 4.0) * (double)bk->numel, a, sizeof a);
        fprintf(out, "  bucket %-3d %10s  %s .. %s (ready after backward op %d", k, a,
                p->params[p->grad_order[bk->first_param]].name,
                p->params[p->grad_order[bk->last_param]].name, bk->ready_after_op);
        if (bk->start_in_b) fputs(", in B: started there", out);  /* zero-bubble: B writes it whole (buckets.c) */
        /* ZeRO: zero floats so that dp divides the bucket (buckets.c) */
        if (bk->pad) fprintf(out, "; %ld padding float%s, %ld a rank's part", bk->pad, bk->pad == 1 ? "" : "s", bk->numel / p->dp);
        fputs(")\n", out);
    }
    if (p->pp > 1) {
        fprintf(out, "pipeline  %s schedule, %d stages x %d chunk(s), %d microbatches per step\n",
                p->schedule, p->pp, p->virt, p->accum);
        for (int k = 0, l = 0; k < p->n_chunks; k++) {
            fprintf(out, "  chunk %d on stage %d: layers %d..%d%s%s\n", k, k % p->pp, l,
                    l + p->chunk_layers[k] - 1, k == 0 ? " + embedding" : "",
                    k == p->n_chunks - 1 ? " + final norm, LM head, loss" : "");
            l += p->chunk_layers[k];
        }
        fprintf(out, "timeline (unit costs: F 1, B 2, or B 1 + W 1 when split):\n");
        schedule_timeline(p->sched, out);
        double bubble = schedule_bubble(p->sched);  /* -1: it could not be computed (out of memory) */
        if (bubble < 0) fprintf(out, "bubble    unavailable (out of memory)\n");
        else fprintf(out, "bubble    %.1f%% of stage time idle (unit costs)\n", 100.0 * bubble);
    }
    fprintf(out, "memory per rank%s:\n", p->pp > 1 ? " (by pipeline stage)" : "");
    const char *names[] = { "parameters", "gradients", "optimizer", "activations",
                            "act. grads", "scratch", "cast buffer", "16b weights", "runtime bufs", "total" };
    double worst = 0;
    for (int i = 0; i < 10; i++) {
        if ((i == 6 || i == 7) && !p->act16) continue;  /* act16 only */
        fprintf(out, "  %-12s", names[i]);
        for (int s = 0; s < p->pp; s++) {
            program_memory m = program_memory_of(p, s);
            double vals[] = { m.params, m.grads, m.optim, m.acts, m.dacts, m.scratch, m.cast, m.w16,
                              m.runtime, m.total };
            if (m.total > worst) worst = m.total;
            program_human_bytes(vals[i], a, sizeof a);
            fprintf(out, " %12s", a);
        }
        fputc('\n', out);
    }
    if (p->zero >= 2) {
        const char *what[] = { "param shard", "gather bufs", "grad shard", "bucket bufs" };
        for (int i = p->zero >= 3 ? 0 : 2; i < 4; i++) {
            fprintf(out, "  %-12s", what[i]);
            for (int s = 0; s < p->pp; s++) {
                long n = i == 1 ? p->gather_numel[s] : i == 3 ? p->grad_buf_numel[s] : p->shard_numel[s];
                /* floats, as memory.c, but 16-bit parameters (param16.c) */
                program_human_bytes((i < 2 && param16(p) ? 2.0 : 4.0) * (double)n, a, sizeof a);
                fprintf(out, " %12s", a);
            }
            fputc('\n', out);
        }
    }
    long pads = 0;
    for (int k = 0; k < p->n_buckets; k++) pads += p->buckets[k].pad;
    if (pads) {  /* counted in the rows above: every arena laid out by buckets holds it, every shard 1/dp of it */
        fprintf(out, "  %-12s", "ZeRO padding");
        for (int s = 0; s < p->pp; s++) {
            long n = 0;
            for (int k = 0; k < p->n_buckets; k++)
                if (p->buckets[k].stage == s) n += p->buckets[k].pad;
            char fl[32];
            snprintf(fl, sizeof fl, "%ld floats", n);
            fprintf(out, " %12s", fl);
        }
        fprintf(out, "  (so that dp %d divides every bucket; in the rows above)\n", p->dp);
    }
    if (p->offload_optimizer || p->offload_params) {
        fprintf(out, "  %-12s", "host (offload)");
        for (int s = 0; s < p->pp; s++) {
            program_human_bytes(program_memory_of(p, s).host, a, sizeof a);
            fprintf(out, " %12s", a);
        }
        fputc('\n', out);
    }
    /* legal, but slow on a GPU: the device's AdamW updates the shard in
     * pinned host memory through PCIe every step */
    if (p->offload_params && !p->offload_optimizer && backend_of(p)->separate_memory)
        fprintf(out, "  note         offload.params without offload.optimizer: AdamW runs on the device and "
                     "reads and writes the host parameter shard over PCIe each step (offload.optimizer = "
                     "\"cpu\" updates it on the host)\n");
    for (int i = 0; i < p->n_ops; i++)  /* what the flash kernels save, once */
        if (attention_saves_lse(p, &p->ops[i])) {
            char tt[32];
            const ir_op *o = &p->ops[i];
            program_human_bytes(4.0 * (double)o->saved_numel, a, sizeof a);
            program_human_bytes(4.0 * (double)o->saved_numel * p->seq, tt, sizeof tt);
            fprintf(out, "  attention    %s per layer: log-sum-exp per row and head (T x T: %s)\n", a, tt);
            break;
        }
    if (p->pp > 1) {
        fprintf(out, "  %-12s", "act. slots");
        for (int s = 0; s < p->pp; s++) fprintf(out, " %12d", program_slots(p, s));
        fputc('\n', out);
        fprintf(out, "  %-12s", "grad sets");  /* backwards live at once (memory_grads.c) */
        for (int s = 0; s < p->pp; s++) fprintf(out, " %12d", program_dact_sets(p, s));
        fputc('\n', out);
    }
    program_human_bytes(p->device_memory_gib * 1073741824.0, a, sizeof a);
    int devices = p->nodes * p->devices_per_node;
    if (strcmp(p->comm, "mpi") == 0 && strcmp(p->device, "CPU") != 0 && p->world > devices) {
        /* comm = "mpi": ranks share each device, so their memory adds up */
        int share = p->world / devices;
        fprintf(out, "  shared       %d ranks per device (comm = \"mpi\"): up to %d x the largest rank\n",
                share, share);
        worst *= share;
    }
    fprintf(out, "  verdict      %s in the %s of a %s device\n",
            worst <= p->device_memory_gib * 1073741824.0 ? "fits" : "DOES NOT FIT", a, p->device);
    model_state_report(p, out);
    startup_report(p, out);
    ckpt_report(p, out);
    wire_report(p, out);
}

static void dump_graph(const Program *p, FILE *out) {
    for (int i = 0; i < p->n_ops; i++) {
        const ir_op *o = &p->ops[i];
        fprintf(out, "  op %-3d %-11s t%d", i, op_name(o->kind), o->out);
        fprintf(out, " <-");
        for (int k = 0; k < o->n_in; k++) fprintf(out, " t%d", o->in[k]);
        for (int k = 0; k < o->n_param; k++) fprintf(out, " %s", p->params[o->param[k]].name);
        const ir_tensor *t = &p->tensors[o->out];  /* rows (tokens, or this rank's under sp) x width, stored as */
        fprintf(out, "  width %ld", t->width);
        if (t->rows_div > 1) fprintf(out, " rows tokens/%d", t->rows_div);
        else fprintf(out, " rows tokens");
        fprintf(out, " %s", dtype_name(t->dtype));
        if (o->heads) fprintf(out, " heads %d", o->heads);
        if (o->kv_heads) fprintf(out, " kv_heads %d", o->kv_heads);
        if (o->parallel[0]) fprintf(out, " %s-parallel", o->parallel);
        if (o->saved_numel) fprintf(out, "  saved @%ld+%ld", o->saved_offset, o->saved_numel);
        if (p->act_numel) fprintf(out, "  act @%ld", p->tensors[o->out].offset);
        if (p->pp > 1) fprintf(out, "  chunk %d", o->chunk);
        if (o->fused == FUSED_ADD_LN_ADD) fprintf(out, "  fused with op %d", i + 1);
        if (o->fused == FUSED_ADD_LN_NORM) fprintf(out, "  fused residual_layernorm with op %d", i - 1);
        if (o->fused == FUSED_LIN_GELU_LINEAR) fprintf(out, "  fused linear_gelu with op %d", i + 1);
        if (o->fused == FUSED_LIN_GELU_GELU) fprintf(out, "  fused with op %d", i - 1);
        if (o->dgelu == DGELU_LINEAR) fprintf(out, "  backward fused linear_dgelu with op %d", i - 1);
        if (o->dgelu == DGELU_GELU) fprintf(out, "  backward fused with op %d", i + 1);
        fputc('\n', out);
    }
}

void program_dump(const Program *p, const char *after, FILE *out) {
    fprintf(out, "; IR after pass '%s'\n", after);
    fprintf(out, "plan %s: %s L=%d h=%d heads=%d seq=%d vocab=%d; dp=%d tp=%d pp=%d; "
                 "micro=%d accum=%d global=%d\n",
            p->plan_name, p->family, p->layers, p->hidden, p->heads, p->seq, p->vocab,
            p->dp, p->tp, p->pp, p->micro, p->accum, p->global_batch);
    fprintf(out, "params (%d):\n", p->n_params);
    for (int i = 0; i < p->n_params; i++) {
        const ir_param *q = &p->params[i];
        fprintf(out, "  %-28s [", q->name);
        for (int d = 0; d < q->ndim; d++) fprintf(out, "%s%ld", d ? "," : "", q->shape[d]);
        fprintf(out, "] init %s", q->init == INIT_NORMAL ? "normal" : q->init == INIT_ONES ? "ones" : "zeros");
        if (q->init == INIT_NORMAL) fprintf(out, "(%g)", q->std);
        if (p->grad_order) fprintf(out, "  grad final after bwd op %d", q->last_grad_op);
        if (p->buckets) fprintf(out, "  @%ld bucket %d", q->offset, q->bucket);
        fputc('\n', out);
    }
    fprintf(out, "forward ops (%d):\n", p->n_ops);
    dump_graph(p, out);
    if (p->buckets) {
        fprintf(out, "buckets (%d):\n", p->n_buckets);
        for (int k = 0; k < p->n_buckets; k++)
            fprintf(out, "  bucket %d @%ld+%ld (padding %ld) ready after bwd op %d%s\n", k,
                    p->buckets[k].offset, p->buckets[k].numel, p->buckets[k].pad, p->buckets[k].ready_after_op,
                    p->buckets[k].start_in_b ? " (in B: started there)" : "");
    }
    if (p->shard_numel && p->zero >= 2) {
        fprintf(out, "zero %d: bucket buffers (live from first gradient write to reduce-scatter wait):\n", p->zero);
        for (int k = 0; k < p->n_buckets; k++)
            fprintf(out, "  bucket %d buffer @%ld, live bwd ops %d..%d\n", k, p->buckets[k].buffer,
                    p->buckets[k].first_write_op, p->buckets[k].wait_after_op);
        for (int e = 0; e < p->n_gathers; e++)
            fprintf(out, "  gather bucket %d (stage %d) into @%ld: started at t=%d, used t=%d..%d\n",
                    p->gathers[e].bucket, p->gathers[e].stage, p->buckets[p->gathers[e].bucket].gather,
                    p->gathers[e].issue, p->gathers[e].start, p->gathers[e].end);
    }
    if (p->act_numel)
        for (int s = 0; s < p->pp; s++)
            fprintf(out, "stage %d arenas: params %ld, activation slot %ld x %d, activation grads %ld, "
                         "scratch %ld floats\n", s, p->param_numel[s], p->act_numel[s],
                    program_slots(p, s), p->dact_numel[s], p->scratch_numel);
    if (p->act16 && p->cast_numel)
        for (int s = 0; s < p->pp; s++)
            fprintf(out, "stage %d act16: activations stored as 16-bit values, two a float; "
                         "cast buffer %ld floats, 16-bit weights %ld floats, float staging %ld floats\n", s,
                    p->cast_numel[s], p->weight16_numel[s], p->stage16_numel ? p->stage16_numel[s] : 0);
    if (p->places && strcmp(after, "memory") == 0) memory_dump(p, out);
    /* the instruction lists (2BW: prologue, steady step and epilogue) */
    if (p->sched && strcmp(after, "schedule") == 0) schedule_dump(p->sched, out);
}
