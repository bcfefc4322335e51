/* simulate.c: `weft simulate PLAN`.  A discrete-event simulation of the
 * compiled schedule with durations from the cost model (cost.h):
 *   compute  GEMMs from their shapes at the device's peak times a
 *            shape-dependent efficiency; other ops from bytes at HBM bandwidth;
 *   tp       the conjugate collectives of each layer on the node's link;
 *   pp       activations and gradients point-to-point between stages;
 *   dp       bucket all-reduces (ring) overlapping the last backward;
 * then iteration time, tokens/s, TFLOP/s per device, MFU, bubble, exposed
 * communication, and memory per rank by the standard per-layer accounting.
 * Nothing is emitted: the 1T-parameter, 3072-GPU plan simulates in well under
 * a second. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "simulate.h"
#include "trace.h"

/* Links: inside a node NVLink 4, across nodes InfiniBand NDR (one NIC per
 * device), the CPU backend's ranks share memory. */
static const cost_link *intra_link(const Program *p) {
    return cost_find_link(strcmp(p->device, "CPU") == 0 ? "pcie4" : "nvlink4");
}

static const cost_link *inter_link(const Program *p, int ranks_apart) {
    if (ranks_apart < p->devices_per_node) return intra_link(p);
    return cost_find_link("ib_ndr");
}

/* Seconds of one microbatch's forward of op i on this rank. */
static double op_seconds(const Program *p, const ir_op *o, double peak, double hbm) {
    double tokens = (double)p->micro * p->seq;
    double rows = tokens / p->tensors[o->out].rows_div, width = (double)p->tensors[o->out].width;
    switch (o->kind) {
    case OP_LINEAR: {
        double K = (double)p->tensors[o->in[0]].width;
        return cost_gemm_seconds(tokens, width, K, peak, cost_gemm_efficiency(tokens, width, K));
    }
    case OP_ATTENTION: {  /* QK^T and PV per head: 2 GEMMs of seq x seq x head_dim */
        double hd = width / o->heads, T = p->seq, n = (double)p->micro * o->heads;
        return 2 * n * cost_gemm_seconds(T, T, hd, peak, cost_gemm_efficiency(T, T, hd));
    }
    case OP_LMHEAD_XENT: {
        double K = (double)p->tensors[o->in[0]].width, V = (double)p->vocab_padded / p->tp;
        return cost_gemm_seconds(tokens, V, K, peak, cost_gemm_efficiency(tokens, V, K)) +
               cost_memory_bound_seconds(3 * 4 * tokens * V, hbm);
    }
    case OP_TP_COPY: return 0;  /* its all-reduce is in backward */
    case OP_TP_REDUCE:
        return cost_allreduce_ring(4 * rows * width, p->tp, intra_link(p));
    case OP_TP_GATHER:
    case OP_TP_SCATTER:
        return cost_allgather_ring(4 * tokens * width, p->tp, intra_link(p));
    default:  /* memory-bound: read inputs, write the output */
        return cost_memory_bound_seconds(3 * 4 * rows * width, hbm);
    }
}

/* Forward seconds of chunk k for one microbatch, and the part of it (and of
 * its backward) spent in tensor-parallel collectives. */
static double chunk_seconds(const Program *p, int k, double peak, double hbm, double *tp_comm) {
    double s = 0;
    *tp_comm = 0;
    for (int i = p->chunk_first_op[k]; i < p->chunk_end_op[k]; i++) {
        double t = op_seconds(p, &p->ops[i], peak, hbm);
        s += t;
        if (p->ops[i].kind >= OP_TP_COPY) *tp_comm += t;
    }
    return s;
}

/* The dense peak for the plan's precision (the cluster description's fp32
 * figure for devices the catalog does not know, e.g. the CPU backend). */
static double device_peak(const Program *p) {
    const cost_device *d = cost_find_device(p->device);
    if (!d) return p->device_fp32_tflops;
    double peak = strcmp(p->precision, "bf16") == 0 ? d->bf16
                : strcmp(p->precision, "fp16") == 0 ? d->fp16 : d->fp32;
    return peak > 0 ? peak : d->fp32;
}

static cost_memory stage_memory(const Program *p, int stage) {
    cost_memory_args a = { 0 };
    int layers = 0;
    for (int k = stage; k < p->n_chunks; k += p->pp) layers += p->chunk_layers[k];
    a.layers = layers;
    a.hidden = p->hidden;
    a.heads = p->heads;
    a.seq = p->seq;
    a.micro_batch = p->micro;
    a.vocab = p->vocab;
    a.tp = p->tp;
    a.pp = p->pp;
    a.dp = p->dp;
    a.sp = p->sp;
    a.recompute = "none";
    a.precision = p->precision;
    a.zero_stage = p->zero;
    a.inflight = program_slots(p, stage);
    a.bucket_mb = p->bucket_mb;
    a.params = (double)p->param_numel[stage];
    a.embedding = stage == 0;
    a.head = stage == p->pp - 1;
    return cost_memory_per_rank(&a);
}

static void human(double bytes, char *out, size_t n) {
    if (bytes >= 1073741824.0) snprintf(out, n, "%.2f GiB", bytes / 1073741824.0);
    else snprintf(out, n, "%.2f MiB", bytes / 1048576.0);
}

int simulate_plan(const Program *p, const char *format, FILE *out) {
    schedule own = { 0 };
    const schedule *s = p->sched;
    char err[256];
    if (!s) {
        if (schedule_build(&own, SCHED_1F1B, 1, p->accum, 1, err, sizeof err) != 0) {
            wf_error("%s: %s", p->plan_path, err);
            return -1;
        }
        s = &own;
    }
    const cost_device *dev = cost_find_device(p->device);
    double peak = device_peak(p), hbm = dev ? dev->hbm_gbs : 20.0;
    /* the slowest stage sets the pace of a pipeline: use its chunk times */
    double f = 0, tp_comm = 0;
    for (int k = 0; k < p->n_chunks; k++) {
        double c, t = chunk_seconds(p, k, peak, hbm, &c);
        if (t > f) { f = t; tp_comm = c; }
    }
    double b = 2 * f, w = s->split_backward ? f : 0;
    double boundary = 0;
    for (int k = 1; k < p->n_chunks; k++)
        if (p->chunk_in[k]) {
            const ir_tensor *t = &p->tensors[p->chunk_in[k]];
            boundary = 4.0 * p->micro * p->seq / t->rows_div * t->width;
        }
    double p2p = p->pp > 1 ? cost_p2p(boundary, inter_link(p, p->dp * p->tp)) : 0;
    trace tr = { 0 };
    if (trace_from_schedule(&tr, s, f * 1e6, b * 1e6, w * 1e6, p2p * 1e6) != 0) {
        wf_error("%s: the schedule does not simulate", p->plan_path);
        if (s == &own) schedule_free(&own);
        return -1;
    }
    double span = trace_makespan(&tr) / 1e6;
    /* data parallel: the stage's buckets, ring all-reduce across nodes when the
     * dp group spans them, overlapped with the last microbatch's backward */
    double dp_comm = 0;
    for (int k = 0; k < p->n_buckets; k++)
        if (p->buckets[k].stage == 0)
            dp_comm += cost_allreduce_ring(4.0 * p->buckets[k].numel, p->dp, inter_link(p, p->tp));
    double exposed_dp = dp_comm > b ? dp_comm - b : 0;
    double optim = cost_memory_bound_seconds(16.0 * p->param_numel[0], hbm);
    double iter = span + exposed_dp + optim;
    double busy = p->accum * (f + b + w) * p->n_chunks / p->pp;
    double bubble = span > 0 ? 1.0 - busy / span : 0;
    double tokens = (double)p->global_batch * p->seq;
    double tflops = p->flops_per_token * tokens / iter / p->world / 1e12;
    int rc = 0;
    if (strcmp(format, "text") == 0) {
        fprintf(out, "simulate  %s on %d %s (%d nodes x %d); dp %d x tp %d x pp %d, %s, %d microbatches\n",
                p->plan_name, p->world, p->device, p->nodes, p->devices_per_node, p->dp, p->tp, p->pp,
                p->pp > 1 ? p->schedule : "single stage", p->accum);
        fprintf(out, "compute   per microbatch and chunk: forward %.3f ms, backward %.3f ms%s "
                     "(peak %.1f TFLOP/s, %s)\n", f * 1e3, b * 1e3, s->split_backward ? " (B + W)" : "",
                peak, p->precision);
        fprintf(out, "iteration %.3f s: pipeline %.3f s + exposed dp all-reduce %.3f s + optimizer %.3f s\n",
                iter, span, exposed_dp, optim);
        fprintf(out, "throughput %.0f tokens/s; %.3g TFLOP/s per device; MFU %.1f%% (model FLOPs 6N + 12Lhs)\n",
                tokens / iter, tflops, 100.0 * tflops / peak);
        fprintf(out, "bubble    %.1f%% of stage time\n", 100.0 * (bubble > 0 ? bubble : 0));
        fprintf(out, "comm      tp collectives %.3f ms per microbatch forward; pp p2p %.3f ms per message; "
                     "dp all-reduce %.3f s (%.3f s exposed)\n", tp_comm * 1e3, p2p * 1e3, dp_comm, exposed_dp);
        fprintf(out, "memory per rank (stage: params, grads, optimizer, activations, buffers, total):\n");
        for (int st = 0; st < p->pp; st++) {
            cost_memory m = stage_memory(p, st);
            char a[6][32], verdict[128];
            double v[6] = { m.params, m.grads, m.optimizer, m.activations, m.comm_buffers + m.workspace, m.total };
            for (int i = 0; i < 6; i++) human(v[i], a[i], sizeof a[i]);
            cost_memory_verdict(&m, p->device_memory_gib, verdict, sizeof verdict);
            if (p->pp <= 8 || st < 2 || st >= p->pp - 2)
                fprintf(out, "  stage %-3d %10s %10s %10s %10s %10s %10s  %s\n", st, a[0], a[1], a[2], a[3],
                        a[4], a[5], verdict);
            else if (st == 2)
                fprintf(out, "  ...\n");
        }
    } else {
        char title[256];
        snprintf(title, sizeof title, "%s (predicted): dp %d x tp %d x pp %d on %s", p->plan_name, p->dp,
                 p->tp, p->pp, p->device);
        rc = strcmp(format, "chrome") == 0 ? trace_write_chrome(&tr, title, out) : trace_write_svg(&tr, title, out);
    }
    trace_free(&tr);
    if (s == &own) schedule_free(&own);
    return rc;
}
