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

#include <lauxlib.h>

#include "cost.h"
#include "simulate.h"
#include "trace.h"

/* The calibration in force for this simulation (CPU backend), or NULL. */
static const sim_calibration *calib;
static cost_link calib_link;

static int get_number(lua_State *L, const char *k, double *v) {
    lua_getfield(L, -1, k);
    int ok = lua_isnumber(L, -1);
    if (ok) *v = lua_tonumber(L, -1);
    lua_pop(L, 1);
    return ok;
}

static void stop_hook(lua_State *L, lua_Debug *ar) {
    (void)ar;
    luaL_error(L, "the calibration file runs too long");
}

int simulate_load_calibration(const char *path, sim_calibration *cal) {
    memset(cal, 0, sizeof *cal);
    lua_State *L = luaL_newstate();
    int rc = -1;
    lua_sethook(L, stop_hook, LUA_MASKCOUNT, 1000000);
    if (luaL_loadfilex(L, path, "t") != LUA_OK) {
        wf_error("%s", lua_tostring(L, -1));
        goto done;
    }
    lua_newtable(L);  /* an empty environment: data only */
    lua_setupvalue(L, -2, 1);
    if (lua_pcall(L, 0, 1, 0) != LUA_OK || !lua_istable(L, -1)) {
        wf_error("%s: %s", path, lua_isstring(L, -1) ? lua_tostring(L, -1) : "must return a table");
        goto done;
    }
    double cores = 1;
    if (!get_number(L, "fp32", &cal->fp32_tflops) || !get_number(L, "hbm_gbs", &cal->hbm_gbs) ||
        !get_number(L, "link_gbs", &cal->link_gbs) || !get_number(L, "link_latency_us", &cal->link_latency_us)) {
        wf_error("%s: needs fp32, hbm_gbs, link_gbs and link_latency_us (write it with weft-calibrate)", path);
        goto done;
    }
    if (!get_number(L, "gemm_balance", &cal->gemm_balance)) cal->gemm_balance = 1;
    struct { const char *name; double *v; } kernels[] = {
        { "layernorm", cal->layernorm }, { "gelu", cal->gelu }, { "add", cal->add },
        { "attention", cal->attention }, { "xent", cal->xent }, { "linear", cal->linear },
    };
    for (size_t i = 0; i < sizeof kernels / sizeof *kernels; i++) {
        lua_getfield(L, -1, kernels[i].name);
        for (int j = 0; j < 2 && lua_istable(L, -1); j++) {
            lua_rawgeti(L, -1, j + 1);
            kernels[i].v[j] = lua_tonumber(L, -1);
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
    }
    get_number(L, "cores", &cores);
    if (!get_number(L, "thread_speedup", &cal->thread_speedup)) cal->thread_speedup = cores;
    cal->cores = cores >= 1 ? (int)cores : 1;
    cal->loaded = 1;
    rc = 0;
done:
    lua_close(L);
    return rc;
}

/* Links: inside a node NVLink 4, across nodes InfiniBand NDR (one NIC per
 * device), the CPU backend's ranks share memory. */
static cost_link plan_intra, plan_inter;  /* the plan's cluster description */

static const cost_link *intra_link(const Program *p) {
    (void)p;
    return calib ? &calib_link : &plan_intra;
}

static const cost_link *inter_link(const Program *p, int ranks_apart) {
    if (ranks_apart < p->devices_per_node || calib) return intra_link(p);
    return &plan_inter;
}

/* GEMM efficiency: the calibrated curve on the CPU backend (the peak is the
 * measured sgemm rate), the GPU model otherwise. */
static double efficiency(double M, double N, double K) {
    if (calib) return cost_gemm_efficiency_ex(M, N, K, 1.0, calib->gemm_balance);
    return cost_gemm_efficiency(M, N, K);
}

/* Seconds of one microbatch of an op: forward, backward, the part of the
 * backward that is weight gradients (W of zero-bubble schedules), and the
 * part that is tensor-parallel communication. */
typedef struct { double f, b, w, comm; } op_time;

/* Elementwise work: calibrated ns per element on the CPU backend ([0]
 * forward, [1] backward), else bytes at HBM bandwidth. */
static double elementwise(const double *ns, double elems, int backward, double hbm) {
    if (calib) return ns[backward] * elems * 1e-9;
    return cost_memory_bound_seconds((backward ? 4.0 : 3.0) * 4 * elems, hbm);
}

static op_time op_seconds(const Program *p, const ir_op *o, double peak, double hbm) {
    static const double none[2] = { 0, 0 };
    double tokens = (double)p->micro * p->seq;
    double rows = tokens / p->tensors[o->out].rows_div, width = (double)p->tensors[o->out].width;
    op_time t = { 0, 0, 0, 0 };
    const double *add = calib ? calib->add : none;
    switch (o->kind) {
    case OP_LINEAR: {
        double K = (double)p->tensors[o->in[0]].width;
        t.f = cost_gemm_seconds(tokens, width, K, peak, efficiency(tokens, width, K));
        t.b = 2 * t.f;
        if (calib && calib->linear[0] > 0) {  /* the layer as measured, bias and transposes included */
            double scale = peak / calib->fp32_tflops;  /* threads beyond one */
            t.f = 2 * tokens * width * K / (calib->linear[0] * 1e9 * scale);
            t.b = 4 * tokens * width * K / (calib->linear[1] * 1e9 * scale);
        }
        t.w = t.b / 2;
        break;
    }
    case OP_ATTENTION: {  /* QK^T and PV per head, and the softmax between */
        double hd = width / o->heads, T = p->seq, n = (double)p->micro * o->heads;
        if (calib) {
            t.f = calib->attention[0] * n * T * T * 1e-9;
            t.b = calib->attention[1] * n * T * T * 1e-9;
        } else {
            t.f = 2 * n * cost_gemm_seconds(T, T, hd, peak, efficiency(T, T, hd)) +
                  cost_memory_bound_seconds(3 * 4 * n * T * T, hbm);
            t.b = 2 * t.f;
        }
        break;
    }
    case OP_LMHEAD_XENT: {
        double K = (double)p->tensors[o->in[0]].width, V = (double)p->vocab_padded / p->tp;
        double gemm = cost_gemm_seconds(tokens, V, K, peak, efficiency(tokens, V, K));
        t.f = gemm + elementwise(calib ? calib->xent : none, tokens * V, 0, hbm);
        t.w = gemm;
        t.b = 2 * gemm + elementwise(calib ? calib->xent : none, tokens * V, 1, hbm);
        break;
    }
    case OP_LAYERNORM:
        t.f = elementwise(calib ? calib->layernorm : none, rows * width, 0, hbm);
        t.b = elementwise(calib ? calib->layernorm : none, rows * width, 1, hbm);
        t.w = t.b / 3;
        break;
    case OP_GELU:
        t.f = elementwise(calib ? calib->gelu : none, rows * width, 0, hbm);
        t.b = elementwise(calib ? calib->gelu : none, rows * width, 1, hbm);
        break;
    case OP_TP_COPY:
        t.b = t.comm = cost_allreduce_ring(4 * rows * width, p->tp, intra_link(p));
        break;
    case OP_TP_REDUCE:
        t.f = t.comm = cost_allreduce_ring(4 * rows * width, p->tp, intra_link(p));
        break;
    case OP_TP_GATHER:
    case OP_TP_SCATTER:
        t.f = t.comm = cost_allgather_ring(4 * tokens * width, p->tp, intra_link(p));
        t.b = t.f;
        break;
    default:  /* adds, embedding lookups */
        t.f = elementwise(add, rows * width, 0, hbm);
        t.b = elementwise(add, rows * width, 1, hbm);
        break;
    }
    return t;
}

/* One microbatch of chunk k. */
static op_time chunk_seconds(const Program *p, int k, double peak, double hbm) {
    op_time sum = { 0, 0, 0, 0 };
    for (int i = p->chunk_first_op[k]; i < p->chunk_end_op[k]; i++) {
        op_time t = op_seconds(p, &p->ops[i], peak, hbm);
        sum.f += t.f;
        sum.b += t.b;
        if (p->recompute == RECOMPUTE_FULL && p->ops[i].layer >= 0) sum.b += t.f;  /* forward again */
        if (p->recompute == RECOMPUTE_SELECTIVE && p->ops[i].kind == OP_ATTENTION) sum.b += t.f;
        sum.w += t.w;
        sum.comm += t.comm;
    }
    return sum;
}

/* The dense peak for the plan's precision, from the plan's device (which a
 * plan may edit: weft.gpu.* are starting points). */
static double device_peak(const Program *p) {
    if (calib) {  /* a rank gets the cores its node's ranks do not use */
        int ranks = p->world < p->devices_per_node ? p->world : p->devices_per_node;
        int threads = calib->cores / (ranks > 0 ? ranks : 1);
        double gain = calib->cores > 1 && threads > 1
                    ? 1 + (calib->thread_speedup - 1) * (threads - 1) / (calib->cores - 1) : 1;
        return calib->fp32_tflops * gain;
    }
    double peak = strcmp(p->precision, "bf16") == 0 ? p->device_bf16_tflops
                : strcmp(p->precision, "fp16") == 0 ? p->device_fp16_tflops : p->device_fp32_tflops;
    return peak > 0 ? peak : p->device_fp32_tflops;
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
    a.recompute = p->recompute == RECOMPUTE_FULL ? "full"
                : p->recompute == RECOMPUTE_SELECTIVE ? "selective" : "none";
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

int simulate_plan(const Program *p, const sim_calibration *cal, const char *format, FILE *out) {
    calib = cal && cal->loaded ? cal : NULL;
    plan_intra = (cost_link){ "intra-node", p->intra_gbs, p->intra_latency_us };
    plan_inter = (cost_link){ "inter-node", p->inter_gbs, p->inter_latency_us };
    if (calib) {
        calib_link.name = "calibrated";
        calib_link.gbs = calib->link_gbs;
        calib_link.latency_us = calib->link_latency_us;
    }
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
    double peak = device_peak(p);
    double hbm = calib ? calib->hbm_gbs : p->device_hbm_gbs > 0 ? p->device_hbm_gbs : 20.0;
    /* the slowest stage sets the pace of a pipeline: use its chunk times */
    op_time slow = { 0, 0, 0, 0 };
    for (int k = 0; k < p->n_chunks; k++) {
        op_time t = chunk_seconds(p, k, peak, hbm);
        if (t.f + t.b > slow.f + slow.b) slow = t;
    }
    /* each microbatch first zeroes its activation-gradient slot */
    slow.f += cost_memory_bound_seconds(4.0 * p->dact_numel[0], hbm);
    double f = slow.f, b = slow.b, w = s->split_backward ? slow.w : 0, tp_comm = slow.comm;
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
    double dp_comm = 0, rs = 0, ag = 0;
    for (int k = 0; k < p->n_buckets; k++)
        if (p->buckets[k].stage == 0) {
            double bytes = 4.0 * p->buckets[k].numel;
            dp_comm += cost_allreduce_ring(bytes, p->dp, inter_link(p, p->tp));
            rs += cost_reduce_scatter_ring(bytes, p->dp, inter_link(p, p->tp));
            ag += cost_allgather_ring(bytes, p->dp, inter_link(p, p->tp));
        }
    double exposed_dp = dp_comm > b ? dp_comm - b : 0;
    /* ZeRO: reduce-scatter overlapping backward (every microbatch from stage
     * 2 on), then the updated shards all-gathered after the step (stages 1,
     * 2); stage 3 instead all-gathers each bucket before its use in forward
     * and again in backward, prefetched so that it overlaps that compute. */
    if (p->zero == 1) {
        dp_comm = rs + ag;
        exposed_dp = (rs > b ? rs - b : 0) + ag;
    } else if (p->zero == 2) {
        dp_comm = p->accum * rs + ag;
        exposed_dp = p->accum * (rs > b ? rs - b : 0) + ag;
    } else if (p->zero >= 3) {
        dp_comm = p->accum * (rs + 2.0 * ag);
        exposed_dp = p->accum * ((rs + ag > b ? rs + ag - b : 0) + (ag > f ? ag - f : 0));
    }
    /* AdamW reads and writes weights, gradients and two moments */
    double optim = cost_memory_bound_seconds(36.0 * p->param_numel[0], hbm);  /* + zeroing grads */
    double iter = span + exposed_dp + optim;
    double busy = p->accum * (f + b) * p->n_chunks / p->pp;
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
        fprintf(out, "iteration %.3f s: pipeline %.3f s + exposed dp %s %.3f s + optimizer %.3f s\n",
                iter, span, p->zero ? "communication" : "all-reduce", exposed_dp, optim);
        fprintf(out, "throughput %.0f tokens/s; %.3g TFLOP/s per device; MFU %.1f%% (model FLOPs 6N + 12Lhs)\n",
                tokens / iter, tflops, 100.0 * tflops / peak);
        fprintf(out, "bubble    %.1f%% of stage time\n", 100.0 * (bubble > 0 ? bubble : 0));
        fprintf(out, "comm      tp collectives %.3f ms per microbatch forward; pp p2p %.3f ms per message; "
                     "dp %s %.3f s (%.3f s exposed)\n", tp_comm * 1e3, p2p * 1e3,
                p->zero >= 3 ? "reduce-scatter + forward and backward all-gathers (ZeRO-3)"
                : p->zero ? "reduce-scatter + all-gather (ZeRO)" : "all-reduce", dp_comm, exposed_dp);
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
