/* simulate.c: `weft simulate PLAN`.  A discrete-event simulation of the
 * compiled schedule with durations from the cost model (cost.h):
 *   compute  GEMMs by tiles and waves on the device's SMs (cost.h), with an
 *            HBM roofline; attention as runtime/cuda's flash kernels run it;
 *            other ops from bytes at HBM bandwidth;
 *   tp       the conjugate collectives of each layer on the tp group's link;
 *   pp       activations and gradients point-to-point between stages;
 *   dp       bucket all-reduces (NCCL ring, bus bandwidth) on the link the
 *            group spans, overlapping the last backward but for the last
 *            bucket, whose reduction starts when backward ends (zero-bubble:
 *            W, and the B left after a bucket B writes whole); on the CPU
 *            backend each bucket also costs a rank dp_bucket_us of CPU in
 *            MPI calls (weft calibrate), which nothing hides;
 * then iteration time, tokens/s, TFLOP/s per device, MFU, bubble, exposed
 * communication, and memory per rank as `weft check` counts it (memory.c).
 * CPU ranks outnumbering the cores share them along the timeline
 * (core_share, trace_shared.h).
 * Nothing is emitted: the 1T-parameter, 3072-GPU plan simulates in well under
 * a second. */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "cost.h"
#include "ops.h"
#include "simulate.h"
#include "trace.h"
#include "trace_shared.h"
#include "user_kernel.h"
#include "weft/bind.h"

/* The calibration in force for this simulation (CPU backend), or NULL. */
static const sim_calibration *calib;
/* A CUDA cluster file's measurements in force (GPU model), or NULL. */
static const sim_calibration *gcal;
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

/* "path:LINE" of the first line of the file at path that sets field
 * (`field =`, anywhere in the line), or "path" when none does. */
static const char *field_where(const char *path, const char *field, char *buf, size_t size) {
    FILE *f = fopen(path, "r");
    char line[1024];
    size_t n = strlen(field);
    snprintf(buf, size, "%s", path);
    for (int no = 1; f && fgets(line, sizeof line, f); no++)
        for (const char *s = strstr(line, field); s; s = strstr(s + 1, field)) {
            int word = (s == line || !(isalnum((unsigned char)s[-1]) || s[-1] == '_'));
            if (word && s[n + strspn(s + n, " \t")] == '=' && s[n + strspn(s + n, " \t") + 1] != '=') {
                snprintf(buf, size, "%s:%d", path, no);
                fclose(f);
                return buf;
            }
        }
    if (f) fclose(f);
    return buf;
}

/* An optional non-negative number field of the table on top of L's stack
 * into *v (left as it is when absent); -1 after reporting file:line. */
static int optional_field(lua_State *L, const char *path, const char *field, const char *unit, double *v) {
    lua_getfield(L, -1, field);
    int rc = 0;
    if (!lua_isnil(L, -1)) {
        double x = lua_isnumber(L, -1) ? lua_tonumber(L, -1) : -1;
        if (x >= 0 && isfinite(x)) *v = x;
        else {
            char where[1100];
            wf_error("%s: %s must be a non-negative number of %s, not %s", field_where(path, field, where, sizeof where), field,
                     unit, lua_isstring(L, -1) ? lua_tostring(L, -1) : luaL_typename(L, -1));
            rc = -1;
        }
    }
    lua_pop(L, 1);
    return rc;
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
    lua_getfield(L, -1, "backend");
    int cuda = lua_isstring(L, -1) && strcmp(lua_tostring(L, -1), "cuda") == 0;
    lua_pop(L, 1);
    if (cuda) {
        rc = calibration_cuda_read(L, path, cal);
        goto done;
    }
    if (!get_number(L, "fp32", &cal->fp32_tflops) || !get_number(L, "hbm_gbs", &cal->hbm_gbs) ||
        !get_number(L, "link_gbs", &cal->link_gbs) || !get_number(L, "link_latency_us", &cal->link_latency_us)) {
        wf_error("%s: needs fp32, hbm_gbs, link_gbs and link_latency_us (write it with weft-calibrate)", path);
        goto done;
    }
    /* rates divide: zero or negative ones would price a step at inf or below 0 */
    struct { const char *name; double v; int positive; } rates[] = {
        { "fp32", cal->fp32_tflops, 1 }, { "hbm_gbs", cal->hbm_gbs, 1 },
        { "link_gbs", cal->link_gbs, 1 }, { "link_latency_us", cal->link_latency_us, 0 },
    };
    for (size_t i = 0; i < sizeof rates / sizeof *rates; i++)
        if (!isfinite(rates[i].v) || rates[i].v < 0 || (rates[i].positive && rates[i].v == 0)) {
            char where[1100];
            wf_error("%s: %s must be a %s number, not %g", field_where(path, rates[i].name, where, sizeof where),
                     rates[i].name, rates[i].positive ? "positive" : "non-negative", rates[i].v);
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
    cal->inplace[0] = cal->inplace[1] = cal->inplace[2] = 1;
    lua_getfield(L, -1, "inplace");
    if (lua_istable(L, -1)) {
        get_number(L, "forward", &cal->inplace[0]);
        get_number(L, "backward", &cal->inplace[1]);
        get_number(L, "optimizer", &cal->inplace[2]);
    }
    lua_pop(L, 1);
    if (!get_number(L, "inplace_threads", &cal->inplace_threads)) cal->inplace_threads = cal->thread_speedup;
    /* optional fields (older files have none): their defaults */
    double us = SIM_DP_BUCKET_US, ns = cal->hbm_gbs > 0 ? 36.0 / cal->hbm_gbs : 0;
    if (optional_field(L, path, "dp_bucket_us", "microseconds", &us) != 0 ||
        optional_field(L, path, "optimizer_ns", "nanoseconds a parameter", &ns) != 0)
        goto done;
    cal->dp_bucket_s = us * 1e-6;
    cal->optimizer_s = ns * 1e-9;
    /* tp_gbs: the bus bandwidth of each collective tensor parallelism calls;
     * without it, the point-to-point link's (the ring formulas on link_gbs) */
    static const char *const tp_kinds[3] = { "allreduce", "allgather", "reduce_scatter" };
    lua_getfield(L, -1, "tp_gbs");
    int tp_table = lua_istable(L, -1);
    if (!tp_table && !lua_isnil(L, -1)) {
        char where[1100];
        wf_error("%s: tp_gbs must be a table { allreduce = ..., allgather = ..., reduce_scatter = ... } of GB/s",
                 field_where(path, "tp_gbs", where, sizeof where));
        goto done;
    }
    for (int k = 0; k < 3; k++) {
        cal->tp_gbs[k] = cal->link_gbs;
        if (!tp_table) continue;
        lua_getfield(L, -1, tp_kinds[k]);
        if (!lua_isnil(L, -1)) {
            double x = lua_isnumber(L, -1) ? lua_tonumber(L, -1) : -1;
            if (!(x > 0 && isfinite(x))) {
                char where[1100];
                wf_error("%s: tp_gbs.%s must be a positive number of GB/s, not %s", field_where(path, "tp_gbs", where, sizeof where),
                         tp_kinds[k], lua_isstring(L, -1) ? lua_tostring(L, -1) : luaL_typename(L, -1));
                goto done;
            }
            cal->tp_gbs[k] = x;
        }
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    cal->cores = cores >= 1 ? (int)cores : 1;
    cal->loaded = 1;
    rc = 0;
done:
    lua_close(L);
    return rc;
}

/* Links: the plan's cluster (inside a node, between nodes), priced at their
 * NCCL bus bandwidth (cost.h); the CPU backend's ranks share memory. */
static cost_link plan_intra, plan_inter;  /* the plan's cluster description */

static const cost_link *intra_link(const Program *p) {
    (void)p;
    return calib ? &calib_link : &plan_intra;
}

/* The link of a group of n ranks `stride` apart: inside a node when every
 * member is on one node (n * stride <= devices_per_node; the mesh lays groups
 * out aligned), else across nodes.  A ring that crosses nodes carries its
 * bytes over each node's NICs once per step; with k members of the group on
 * a node, k rings run side by side (NCCL builds one per NIC), so the group
 * sees k NICs' bandwidth, never more than the link inside the node.  Not the
 * stride alone: dp 32 at stride 1 spans four 8-GPU nodes. */
static cost_link group_span;
static const cost_link *group_link(const Program *p, int stride, int n) {
    if (calib || n <= 1 || (double)n * stride <= p->devices_per_node) return intra_link(p);
    int k = stride < p->devices_per_node ? p->devices_per_node / stride : 1;
    if (k > n) k = n;
    group_span = plan_inter;
    double inter = (plan_inter.bus_gbs > 0 ? plan_inter.bus_gbs : plan_inter.gbs) * k;
    double intra = plan_intra.bus_gbs > 0 ? plan_intra.bus_gbs : plan_intra.gbs;
    group_span.bus_gbs = inter < intra ? inter : intra;
    return &group_span;
}

/* GEMM efficiency: the calibrated curve on the CPU backend (the peak is the
 * measured sgemm rate), the GPU model otherwise. */
static double efficiency(double M, double N, double K) {
    if (calib) return cost_gemm_efficiency_ex(M, N, K, 1.0, calib->gemm_balance);
    return cost_gemm_efficiency(M, N, K);
}

/* Seconds of an M x N x K GEMM: on a GPU with a known SM count by tiles and
 * waves (cost_gemm_gpu_time), else peak times the soft-roofline efficiency. */
static double model_gemm_seconds(const Program *p, double M, double N, double K, double peak, double hbm) {
    if (!calib && p->device_sms > 0) {
        double el = strcmp(p->precision, "fp32") == 0 ? 4.0 : 2.0;
        return cost_gemm_gpu_time(M, N, K, p->device_sms, peak, hbm, el, 0, 0).seconds;
    }
    return cost_gemm_seconds(M, N, K, peak, efficiency(M, N, K));
}

/* With a CUDA cluster file, 16-bit plans (its GEMMs are bf16 on tensor
 * cores): the model's time scaled by measured over modelled at the nearest
 * measured shape (distance: the sum of |log| ratios of M, N and K), so the
 * model keeps the shape's tiles and waves and the device supplies the level. */
static double gemm_seconds(const Program *p, double M, double N, double K, double peak, double hbm) {
    double t = model_gemm_seconds(p, M, N, K, peak, hbm);
    if (!gcal || gcal->n_gemm == 0 || strcmp(p->precision, "fp32") == 0) return t;
    int best = 0;
    double dist = INFINITY;
    for (int i = 0; i < gcal->n_gemm; i++) {
        const double *g = gcal->gemm[i];
        double d = fabs(log(M / g[0])) + fabs(log(N / g[1])) + fabs(log(K / g[2]));
        if (d < dist) dist = d, best = i;
    }
    const double *g = gcal->gemm[best];
    double measured = 2.0 * g[0] * g[1] * g[2] / (g[3] * 1e12);
    return t * measured / model_gemm_seconds(p, g[0], g[1], g[2], peak, hbm);
}

/* runtime/cuda/attention_tc.cu's flash kernels on tensor cores: WMMA 16x16x16
 * fragments, 4 warps over 64-row tiles, single-buffered shared-memory tiles
 * and the scores staged through shared memory: FlashAttention-1's structure,
 * not FlashAttention-2's.  Dao, "FlashAttention-2" (2023), abstract and
 * section 4.1: FlashAttention(-1) reaches only 25-40% of the A100's peak;
 * FA-2 50-73% forward.  This kernel is priced at
 * the low end of FA-1, 0.30 (uncertain: not measured on a GPU here).  The
 * fp32 kernels (attention.cu) run on CUDA cores; priced at 0.5 of the fp32
 * peak (uncertain, assumed). */
#define ATTENTION_TC_EFF 0.30
#define ATTENTION_FP32_EFF 0.50

/* Seconds of one microbatch of an op: forward, backward, the part of the
 * backward that is weight gradients (W of zero-bubble schedules), and the
 * part that is tensor-parallel communication. */
typedef struct { double f, b, w, comm; } op_time;

/* Elementwise work: calibrated ns per element on the CPU backend ([0]
 * forward, [1] backward), else bytes at HBM bandwidth, `el` bytes a value:
 * 4, or 2 for activations stored in 16 bits (act16). */
static double elementwise(const double *ns, double elems, int backward, double hbm, double el) {
    if (calib) return ns[backward] * elems * 1e-9;
    return cost_memory_bound_seconds((backward ? 4.0 : 3.0) * el * elems, hbm);
}

static op_time op_seconds(const Program *p, const ir_op *o, double peak, double hbm) {
    static const double none[2] = { 0, 0 };
    double tokens = (double)p->micro * p->seq;
    double rows = tokens / p->tensors[o->out].rows_div, width = (double)p->tensors[o->out].width;
    op_time t = { 0, 0, 0, 0 };
    const double *add = calib ? calib->add : none;
    double el = p->act16 ? 2.0 : 4.0;  /* bytes of an activation value (the logits too) */
    const op_row *r = op_row_of(o->kind);
    switch (r->cost) {  /* the op's model (ops.h) */
    case COST_GEMM: {
        if (o->n_in == 0) {  /* a VLM's patch embedding: the image patches by the weight, no input gradient */
            double K = (double)p->image_c * p->patch * p->patch, patches = (double)p->micro * p->image_positions;
            t.f = gemm_seconds(p, patches, width, K, peak, hbm);
            t.w = t.b = gemm_seconds(p, K, width, patches, peak, hbm);
            break;
        }
        double K = (double)p->tensors[o->in[0]].width;
        t.f = gemm_seconds(p, tokens, width, K, peak, hbm);
        /* backward: the input gradient (tokens x K over width) and the weight
         * gradient (K x width over tokens), each its own shape */
        t.w = gemm_seconds(p, K, width, tokens, peak, hbm);
        t.b = gemm_seconds(p, tokens, K, width, peak, hbm) + t.w;
        if (calib && calib->linear[0] > 0) {  /* the layer as measured, bias and transposes included */
            t.f = 2 * tokens * width * K / (calib->linear[0] * 1e9);
            t.b = 4 * tokens * width * K / (calib->linear[1] * 1e9);
            t.w = t.b / 2;
            /* its weights through memory once per microbatch: forward reads
             * them, backward reads them again and adds into their gradient
             * (read and write), cold each time as the microbatch's
             * activations and the other ops pass in between.  linear was
             * measured on 64 sequences, where this is noise; many small
             * microbatches pay it many times.  build/bench/micro_weights
             * (tiny's linears at 128 tokens, one thread): an extra
             * microbatch costs 0.3-0.5 ms with the weights left in cache,
             * 1.2-1.5 ms with 16 MiB written between calls, 2.9 ms with 64,
             * against 2.0 ms charged at 6.4 GB/s; --profile of whole steps
             * (the GEMM class, micro 1 against 16) saw 3-4 ms */
            double wbytes = 4.0 * K * width;
            t.f += cost_memory_bound_seconds(wbytes, hbm);
            t.w += cost_memory_bound_seconds(2.0 * wbytes, hbm);
            t.b += cost_memory_bound_seconds(3.0 * wbytes, hbm);
        }
        break;
    }
    case COST_ATTENTION: {  /* QK^T and PV per head, and the softmax between */
        double hd = width / o->heads, T = p->seq, n = (double)p->micro * o->heads;
        if (attention_saves_lse(p, o) && backend_of(p)->cuda_cxx && !calib) {
            /* runtime/cuda's flash kernels: the causal half of QK^T and PV,
             * nothing T x T through memory.  bf16 / fp16 plans with a head size
             * a multiple of 16 up to 128 run them on tensor cores
             * (attention_tc.cu), the rest on the fp32 CUDA cores (attention.cu);
             * either way backward does 7 such products to forward's 2 (D comes
             * from the forward's output, not from a sweep of its own) */
            int tensor_cores = strcmp(p->precision, "fp32") != 0 && (int)hd % 16 == 0 && hd <= 128;
            double rate = tensor_cores ? peak * ATTENTION_TC_EFF : p->device_fp32_tflops * ATTENTION_FP32_EFF;
            /* the kernel works on head sizes padded to 32, 64 or 128 and on
             * whole 64 x 64 tiles on and below the diagonal: nt (nt + 1) / 2
             * tiles of nt = ceil(T / 64), not T^2 / 2 */
            double hs = !tensor_cores ? hd : hd <= 32 ? 32 : hd <= 64 ? 64 : 128;
            double nt = ceil(T / 64.0), pairs = nt * (nt + 1) / 2 * 64.0 * 64.0;
            t.f = n * 2 * cost_gemm_seconds(pairs, 1, hs, rate, 1.0);
            t.b = 3.5 * t.f;
            if (gcal && gcal->att_tflops[0] > 0 && tensor_cores) {
                /* measured (weft-calibrate-cuda, one head size): TFLOP/s of
                 * the useful causal work, forward 2 and backward 5 products */
                double product = 2.0 * n * (T * (T + 1) / 2) * hd;
                t.f = 2 * product / (gcal->att_tflops[0] * 1e12);
                t.b = 5 * product / (gcal->att_tflops[1] * 1e12);
            }
        } else if (calib) {
            t.f = calib->attention[0] * n * T * T * 1e-9;
            t.b = calib->attention[1] * n * T * T * 1e-9;
        } else {
            /* the n heads' products as one batched GEMM: n T rows */
            t.f = 2 * gemm_seconds(p, n * T, T, hd, peak, hbm) +
                  cost_memory_bound_seconds(3 * 4 * n * T * T, hbm);
            t.b = 2 * t.f;
        }
        break;
    }
    case COST_XENT: {
        /* as every backend runs it (ops_loss.c): all of it in backward, in
         * its B half, a chunk of rows at a time, each chunk three GEMMs of
         * its own shape (logits, dx, and dwte over the chunk's rows, which
         * streams the whole weight gradient once a chunk), the softmax and
         * its gradient over all the logits */
        double K = (double)p->tensors[o->in[0]].width, V = (double)p->vocab_padded / p->tp;
        double rows = (double)lmhead_chunk_rows(p), whole = floor(tokens / rows), rest = tokens - whole * rows;
        double chunk = gemm_seconds(p, rows, V, K, peak, hbm) + gemm_seconds(p, rows, K, V, peak, hbm) +
                       gemm_seconds(p, V, K, rows, peak, hbm);
        double last = rest <= 0 ? 0 : gemm_seconds(p, rest, V, K, peak, hbm) + gemm_seconds(p, rest, K, V, peak, hbm) +
                                      gemm_seconds(p, V, K, rest, peak, hbm);
        t.b = whole * chunk + last + elementwise(calib ? calib->xent : none, tokens * V, 0, hbm, el) +
              elementwise(calib ? calib->xent : none, tokens * V, 1, hbm, el);
        t.f = t.w = 0;
        break;
    }
    case COST_NORM:
        t.f = elementwise(calib ? calib->layernorm : none, rows * width, 0, hbm, el);
        t.b = elementwise(calib ? calib->layernorm : none, rows * width, 1, hbm, el);
        t.w = t.b / 3;
        break;
    case COST_POINTWISE:
        t.f = elementwise(calib ? calib->gelu : none, rows * width, 0, hbm, el);
        t.b = elementwise(calib ? calib->gelu : none, rows * width, 1, hbm, el);
        break;
    case COST_KERNEL: {  /* a user kernel: bytes or FLOPs per value, whichever takes longer */
        const user_kernel *k = &p->kernels[o->kernel];
        double n = rows * width, flops = p->device_fp32_tflops * 1e12;
        t.f = fmax(cost_memory_bound_seconds(user_kernel_bytes(k, 0) * n, hbm), k->flops_fwd * n / flops);
        t.b = fmax(cost_memory_bound_seconds(user_kernel_bytes(k, 1) * n, hbm), k->flops_bwd * n / flops);
        break;
    }
    case COST_COMM: {
        /* all-reduces of this rank's rows; a ring reduce-scatter moves what
         * an all-gather does: the values of the sums and the gathers in the
         * dtype they travel in (wire.c: 16-bit under bf16 / fp16 unless
         * plan.tp_comm = "fp32") */
        int tp_apart = wf_mesh_stride(p->axes, p->n_axes, WF_AXIS_TP);
        const cost_link *tp_link = group_link(p, tp_apart, p->tp);
        /* the CPU backend: each kind at the bus bandwidth weft-calibrate
         * measured for it (MPI's reduce-scatter runs far below the ring) */
        cost_link kind[3] = { *tp_link, *tp_link, *tp_link };
        for (int k = 0; calib && k < 3; k++) kind[k].bus_gbs = calib->tp_gbs[k];
        double sum_el = tp_sum_bytes(p), gather_el = tp_gather_bytes(p);
        double reduce = cost_allreduce_ring(sum_el * rows * width, p->tp, &kind[0]);
        double gather = cost_allgather_ring(gather_el * tokens * width, p->tp, &kind[1]);
        double sum = cost_reduce_scatter_ring(sum_el * tokens * width, p->tp, &kind[2]);
        double each[] = { [COLL_NONE] = 0, [COLL_ALLREDUCE] = reduce, [COLL_ALLGATHER] = gather,
                          [COLL_REDUCE_SCATTER] = sum };
        t.f = each[r->coll_fwd];
        t.b = each[r->coll_bwd];
        t.comm = r->coll_fwd != COLL_NONE ? t.f : t.b;
        break;
    }
    case COST_ADD:  /* adds, embedding lookups */
        t.f = elementwise(add, rows * width, 0, hbm, el);
        t.b = elementwise(add, rows * width, 1, hbm, el);
        break;
    }
    /* An add fused into the next layernorm (fuse.c) costs what the fused
     * kernel moves beyond the layernorm's own traffic: forward, reading a
     * and b (the residual it writes is the row the layernorm would read);
     * backward, da and db's read-modify-write, the stream gradient no longer
     * written and read back.  Calibrations time the kernels themselves. */
    if (!calib && o->fused == FUSED_ADD_LN_ADD) {
        t.f = cost_memory_bound_seconds(2.0 * el * rows * width, hbm);
        t.b = cost_memory_bound_seconds(2.0 * el * rows * width, hbm);
    }
    /* A gelu fused into the linear before it (fuse.c), fp32 plans: on the
     * GPU it is the GEMM's epilogue, applied while the tile is in registers,
     * so no forward time of its own; its backward is unchanged.  bf16 / fp16
     * plans keep the gelu's pass: the pre-activation must be rounded before
     * the gelu reads it, so there it is one elementwise kernel after the GEMM
     * (in place of the gelu and two roundings, which this model, counting
     * 16-bit traffic as the unrounded gelu's, never charged).  A calibration
     * (the CPU backend) keeps the measured time: the CPU's fused pass still
     * evaluates a tanh per value. */
    if (!calib && o->fused == FUSED_LIN_GELU_GELU && strcmp(p->precision, "fp32") == 0) t.f = 0;
    /* A gelu whose backward the next linear's input gradient does (fuse.c,
     * DGELU): on the GPU cuBLASLt's DGELU epilogue in fp32 plans and under
     * act16, so no backward time of its own; a 16-bit plan with float
     * activations keeps one elementwise pass after the GEMM (linear.cu). */
    if (!calib && o->dgelu == DGELU_GELU && (strcmp(p->precision, "fp32") == 0 || p->act16)) t.b = 0;
    /* weft.vlm's freeze (graph.c): the part of the backward that is left out */
    if (!o->grad_in && !o->grad_w) t.b = t.w = 0;
    else if (!o->grad_w) t.b -= t.w, t.w = 0;      /* input gradients only */
    else if (o->n_in > 0 && !o->grad_in) t.b = t.w;  /* parameter gradients only */
    /* a split backward runs the parameter gradients that do not wait for W
     * (ops.h's op_weight_grad_in_w) in B: all of t.b is B's */
    if (!op_weight_grad_in_w(p, o)) t.w = 0;
    return t;
}

/* The plan's own links (its cluster description; a CUDA cluster file's
 * measured NCCL figures replace the intra-node one in simulate_plan). */
static void plan_links(const Program *p) {
    plan_intra = (cost_link){ "intra-node", p->intra_gbs, p->intra_latency_us, p->intra_bus_gbs };
    plan_inter = (cost_link){ "inter-node", p->inter_gbs, p->inter_latency_us, p->inter_bus_gbs };
}

static double device_peak(const Program *p);

double simulate_op_seconds(const Program *p, int i) {
    const sim_calibration *c0 = calib, *g0 = gcal;
    cost_link intra0 = plan_intra, inter0 = plan_inter;
    calib = gcal = NULL;
    plan_links(p);
    double peak = device_peak(p), hbm = p->device_hbm_gbs > 0 ? p->device_hbm_gbs : 20.0;
    op_time t = op_seconds(p, &p->ops[i], peak, hbm);
    calib = c0, gcal = g0, plan_intra = intra0, plan_inter = inter0;
    return t.f + t.b;
}

/* One microbatch of chunk k; f and b hold compute only, comm_f and comm_b
 * the tensor-parallel collectives of each direction. */
typedef struct { op_time t; double comm_f, comm_b; } chunk_time;

/* Adds op i (one microbatch, its recompute included) to sum. */
static void add_op(const Program *p, int i, double peak, double hbm, chunk_time *sum) {
    op_time t = op_seconds(p, &p->ops[i], peak, hbm);
    int again = (p->recompute == RECOMPUTE_FULL && p->ops[i].layer >= 0) ||
                memory_selective_op(p, i);  /* attention, the regathered gathers (memory.c) */
    /* full recompute under a split backward rebuilds each block for B and
     * again for W (emit_step.c): a second forward, in the weight half */
    int for_w = p->recompute == RECOMPUTE_FULL && p->ops[i].layer >= 0 && p->sched && p->sched->split_backward;
    if (t.comm > 0) {  /* a collective: the direction(s) it runs in */
        sum->comm_f += t.f, sum->comm_b += t.b;
        if (again) sum->comm_b += t.f;  /* forward again */
        if (for_w) sum->comm_b += t.f;
    } else {
        sum->t.f += t.f;
        sum->t.b += t.b + (again ? t.f : 0) + (for_w ? t.f : 0);
        sum->t.w += t.w + (for_w ? t.f : 0);
    }
    sum->t.comm += t.comm;
}

static chunk_time chunk_seconds(const Program *p, int k, double peak, double hbm) {
    chunk_time sum = { { 0, 0, 0, 0 }, 0, 0 };
    for (int i = p->chunk_first_op[k]; i < p->chunk_end_op[k]; i++) add_op(p, i, peak, hbm, &sum);
    return sum;
}

/* A VLM: forward + backward compute of its vision encoder and projector (the
 * ops before the image hand-off, less the token embedding's) and of the
 * whole first chunk, which holds them, per microbatch. */
static void encoder_seconds(const Program *p, double peak, double hbm, double *enc, double *first) {
    *enc = *first = 0;
    for (int i = p->chunk_first_op[0]; i < p->chunk_end_op[0]; i++) {
        const ir_op *o = &p->ops[i];
        op_time t = op_seconds(p, o, peak, hbm);
        if (t.comm > 0) continue;
        *first += t.f + t.b;
        if (op_in_encoder(p, i)) *enc += t.f + t.b;
    }
}

/* The dense peak for the plan's precision, from the plan's device (which a
 * plan may edit: weft.gpu.* are starting points). */
static double device_peak(const Program *p) {
    if (calib) return calib->fp32_tflops;  /* one thread; see thread_gain */
    double peak = strcmp(p->precision, "bf16") == 0 ? p->device_bf16_tflops
                : strcmp(p->precision, "fp16") == 0 ? p->device_fp16_tflops : p->device_fp32_tflops;
    return peak > 0 ? peak : p->device_fp32_tflops;
}

/* CPU backend: a rank gets the cores its node's other ranks do not use; what
 * they buy is interpolated from the calibrated lone-rank speedup in place.
 * (More ranks than cores time-share them: see oversubscription.) */
double simulate_thread_gain(int ranks, const sim_calibration *cal) {
    if (!cal || !cal->loaded || cal->cuda) return 1;
    if (ranks > cal->cores) return 1;  /* oversubscribed: see oversubscription() */
    int threads = cal->cores / (ranks > 0 ? ranks : 1);
    if (cal->cores <= 1 || threads <= 1) return 1;
    return 1 + (cal->inplace_threads - 1) * (threads - 1) / (cal->cores - 1);
}

static double thread_gain(const Program *p) {
    return simulate_thread_gain(p->world < p->devices_per_node ? p->world : p->devices_per_node, calib);
}

/* Under a split backward (zero-bubble): the B half of chunk k (one
 * microbatch) that runs after op i's, as stage_times scales it.  A bucket
 * B writes whole starts after its last gradient (buckets.c's start_in_b),
 * so its reduction overlaps this much of B. */
static double b_after_seconds(const Program *p, int k, int i, double peak, double hbm) {
    chunk_time sum = { { 0, 0, 0, 0 }, 0, 0 };
    for (int q = p->chunk_first_op[k]; q < i; q++) add_op(p, q, peak, hbm, &sum);
    const double *in = calib ? calib->inplace : (const double[3]){ 1, 1, 1 };
    return (sum.t.b - sum.t.w) * in[1] / thread_gain(p) + sum.comm_b;
}

/* AdamW reads and writes weights, gradients and two moments, then zeroes
 * gradients: 36 bytes a parameter through memory; on the CPU backend,
 * weft-calibrate's measured optimizer_ns a parameter instead, times its
 * in-place factor (the runtime's loops run slower than the copy rate: 4.6-4.9
 * ns here against 36 bytes' 3.2 ns at 11.2 GB/s, bench/optim_rate).  Under
 * ZeRO a rank steps its shard only, 1/dp of the stage's parameters (the
 * zeroing of ZeRO-1's whole gradients, under a tenth of optimizer_ns, is
 * left out). */
double simulate_optimizer_seconds(double params, int zero, int dp, double hbm_gbs, const sim_calibration *cal) {
    double n = params * (zero >= 1 && dp > 1 ? 1.0 / dp : 1.0);
    if (cal && cal->loaded && !cal->cuda) return cal->optimizer_s * n * cal->inplace[2];
    return cost_memory_bound_seconds(36.0 * n, hbm_gbs);
}

/* Seconds per microbatch of each chunk (forward, backward, its weight part,
 * tp communication) and of each stage's optimizer step, in place: with the
 * calibration's measured-over-predicted factors and the threads a rank has. */
typedef struct { double *f, *b, *w, *comm, *optim; } sim_times;

static void sim_times_free(sim_times *t) { free(t->f); }

static int stage_times(const Program *p, double peak, double hbm, sim_times *t) {
    int n = p->n_chunks;
    t->f = malloc(sizeof(double) * (size_t)(4 * n + p->pp));
    if (!t->f) return -1;
    t->b = t->f + n, t->w = t->b + n, t->comm = t->w + n, t->optim = t->comm + n;
    double gain = thread_gain(p);
    const double *in = calib ? calib->inplace : (const double[3]){ 1, 1, 1 };
    for (int k = 0; k < n; k++) {
        chunk_time c = chunk_seconds(p, k, peak, hbm);
        /* each microbatch first zeroes its activation-gradient slot */
        c.t.f += cost_memory_bound_seconds(4.0 * p->dact_numel[k % p->pp], hbm);
        t->f[k] = c.t.f * in[0] / gain + c.comm_f;
        t->b[k] = c.t.b * in[1] / gain + c.comm_b;
        t->w[k] = c.t.w * in[1] / gain;
        t->comm[k] = c.comm_f;
    }
    for (int st = 0; st < p->pp; st++)
        t->optim[st] = simulate_optimizer_seconds((double)p->param_numel[st], p->zero, p->dp, hbm, calib);
    return 0;
}

int simulate_reference_times(const Program *p, const sim_calibration *cal, double *f, double *b,
                             double *optim) {
    calib = cal && cal->loaded && !cal->cuda ? cal : NULL;
    gcal = NULL;
    sim_times tm;
    if (stage_times(p, device_peak(p), calib ? calib->hbm_gbs : 20.0, &tm) != 0) return -1;
    *f = tm.f[0], *b = tm.b[0], *optim = tm.optim[0];
    sim_times_free(&tm);
    return 0;
}

/* A waiting rank's demand on the cores over a computing rank's, when ranks
 * outnumber cores: Open MPI then yields the core between polls in its
 * blocking calls (mpi_yield_when_idle, on by default when it knows the node
 * is oversubscribed, as launch.sh's --oversubscribe tells it), so a rank
 * blocked in MPI_Recv takes little of a core another rank computes on.
 * bench/mpi_wait.sh, two ranks on one core, Open MPI 4.1.4 told so: the
 * rank in MPI_Recv used 0.002 s of CPU while the other computed for 0.31 s
 * (0.6%; 0.32 s, all of its share, when Open MPI believes each rank has a
 * core and polls without yielding).  Rounded up. */
#define WAIT_SHARE 0.01

/* CPU backend with more ranks on a node than cores: the ranks share the
 * cores along the timeline (trace_shared.h): the ranks computing at a time
 * and, at WAIT_SHARE each, those waiting (in a pipeline bubble, a receive,
 * after their step) divide the cores; a rank computing with a core free runs
 * at full speed.  The node's ranks are spread over the stages evenly.
 * Placed: a waiting rank polls (it yields, but stays runnable), so to the
 * kernel every core is as loaded as the next and it never moves a computing
 * rank off a core it shares with another onto a core whose ranks only wait:
 * the computing ranks sit on the cores as the ranks happen to, and the
 * busiest core sets the pace.  bench/mpi_placement.sh (4 ranks on 2 cores
 * as launch.sh runs them, 2 computing while 2 poll in MPI_Recv; the machine
 * busy with other jobs): the computing pair shared a core in 0-87% of the
 * milliseconds, median 35% over 12 rounds (33% if placed at random, 0% if
 * spread); tiny's dp 2 x pp 2 stage 0 pair, sampled from /proc every 2 ms,
 * in 76% and 100% (2 runs).  Two ranks of four computing on 2 cores are
 * then 4/3 slower on average (plan_q4: dp 2 x pp 2 gpipe 102-115 ms
 * against dp 2's 78-84).
 * Bound: hence the CPU runtime binds a pipeline's ranks to cores, the
 * node's ranks dealt to the cores in turn in stage order (runtime/cpu/bind.c),
 * and a stage runs at the pace of its busiest core (trace_shared.h); whether
 * it does is the plan's cluster.bind under weft/bind.h's rule, which the
 * runtime and this file both call (simulate_binding): "auto" leaves one
 * stage on a node (pp 1) to the kernel, and tensor-parallel stages (a tp
 * group syncs every layer; bound apart, tp 2 x pp 2 ran 1.09x slower over 16
 * rounds of bench/bind.sh).  The runtime's WEFT_BIND override is not priced.
 * core_share's 0: every rank has a core (no sharing). */
int simulate_node_stages(const wf_axis *axes, int n_axes, int pp, int node, double *count) {
    int coord[WF_AXES], stages = 0;
    for (int st = 0; count && st < pp; st++) count[st] = 0;
    for (int r = 0; r < node; r++) {
        wf_mesh_coords(axes, n_axes, r, coord);
        int seen = 0;  /* stage coord[pp] among ranks 0 .. r - 1 */
        for (int q = 0, c2[WF_AXES]; q < r && !seen; q++) {
            wf_mesh_coords(axes, n_axes, q, c2);
            seen = c2[WF_AXIS_PP] == coord[WF_AXIS_PP];
        }
        stages += !seen;
        if (count && coord[WF_AXIS_PP] < pp) count[coord[WF_AXIS_PP]]++;
    }
    return stages;
}

/* The ranks on the first node: the first devices_per_node of the world. */
static int node_ranks_of(const Program *p) {
    return p->world < p->devices_per_node ? p->world : p->devices_per_node;
}

wf_bind_why simulate_binding(const Program *p, int cores) {
    int node = node_ranks_of(p);
    /* a thread a rank: launch.sh's runtime gives each cores / ranks, at least 1 */
    return wf_bind_decide(p->bind, node, cores, simulate_node_stages(p->axes, p->n_axes, p->pp, node, NULL), p->tp,
                          1);
}

static int core_share(const Program *p, trace_share *sh, double *ranks) {
    int node = node_ranks_of(p);
    if (!calib || node <= calib->cores) return 0;
    /* the first node's ranks of each stage; when it lacks a stage (the
     * pipeline spans nodes), the node's ranks spread evenly, as if each node
     * held every stage alike */
    simulate_node_stages(p->axes, p->n_axes, p->pp, node, ranks);
    int every = 1;
    for (int st = 0; st < p->pp; st++) every &= ranks[st] >= 1;
    for (int st = 0; !every && st < p->pp; st++) ranks[st] = (double)node / p->pp;
    /* bound as the runtime decides; priced so only where a stage's ranks are whole */
    int whole = every || node % p->pp == 0;
    *sh = (trace_share){ calib->cores, ranks, WAIT_SHARE, 1,
                         whole && simulate_binding(p, calib->cores) == WF_BIND_BOUND };
    return 1;
}

/* The step's timeline with these costs into tr (trace_from_costs, or with
 * the ranks sharing the cores when sh is not NULL) and its span, us: the
 * makespan; for 2BW without flush the steady step (the trace is fill +
 * three batches + drain, one 1F1B step fill + one batch + drain, so a
 * steady step is half the rest).  0, or -1 when the schedule does not
 * simulate. */
static int step_timeline(const schedule *s, const trace_costs *costs, const trace_share *sh, trace *tr,
                         double *span_us) {
    if ((sh ? trace_from_costs_shared(tr, s, costs, sh) : trace_from_costs(tr, s, costs)) != 0) return -1;
    *span_us = trace_makespan(tr);
    if (s->pro) {
        schedule one = { 0 };
        trace t1 = { 0 };
        char err[256];
        if (schedule_build(&one, SCHED_1F1B, s->stages, s->micro, 1, err, sizeof err) == 0 &&
            (sh ? trace_from_costs_shared(&t1, &one, costs, sh) : trace_from_costs(&t1, &one, costs)) == 0)
            *span_us = (trace_makespan(tr) - trace_makespan(&t1)) / 2;
        trace_free(&t1);
        schedule_free(&one);
    }
    return 0;
}

/* The longest optimizer step in a trace, us. */
static double longest_optim(const trace *tr) {
    double m = 0;
    for (int i = 0; i < tr->n; i++)
        if (!strcmp(tr->ev[i].cat, "optimizer") && tr->ev[i].end_us - tr->ev[i].start_us > m)
            m = tr->ev[i].end_us - tr->ev[i].start_us;
    return m;
}

/* The calibration (CPU or CUDA) and the links simulate_plan prices with. */
static void use_calibration(const Program *p, const sim_calibration *cal) {
    calib = cal && cal->loaded && !cal->cuda ? cal : NULL;
    gcal = cal && cal->loaded && cal->cuda ? cal : NULL;
    plan_links(p);
    if (gcal && gcal->nccl_bus_gbs > 0) {  /* measured inside a node: NCCL's all-reduce */
        plan_intra.bus_gbs = gcal->nccl_bus_gbs;
        plan_intra.latency_us = gcal->nccl_latency_us;
    }
    if (calib) {
        calib_link.name = "calibrated";
        calib_link.gbs = calib->link_gbs;
        calib_link.latency_us = calib->link_latency_us;
    }
}

int simulate_layer_seconds(const Program *p, const sim_calibration *cal, double *before, double *layer,
                           double *after) {
    use_calibration(p, cal);
    double peak = device_peak(p), hbm = calib ? calib->hbm_gbs : p->device_hbm_gbs > 0 ? p->device_hbm_gbs : 20.0;
    double gain = thread_gain(p);
    const double *in = calib ? calib->inplace : (const double[3]){ 1, 1, 1 };
    /* [0] before the block, [1] the block, [2] after it */
    chunk_time part[3];
    memset(part, 0, sizeof part);
    if (p->n_chunks != 1) return -1;
    int seen = 0;
    for (int i = p->chunk_first_op[0]; i < p->chunk_end_op[0]; i++) {
        if (p->ops[i].layer > 0) return -1;  /* one block expected */
        if (p->ops[i].layer == 0) seen = 1;
        add_op(p, i, peak, hbm, &part[p->ops[i].layer == 0 ? 1 : seen ? 2 : 0]);
    }
    double s[3];
    for (int k = 0; k < 3; k++)  /* as stage_times: in place, the rank's threads */
        s[k] = (part[k].t.f * in[0] + part[k].t.b * in[1]) / gain + part[k].comm_f + part[k].comm_b;
    *before = s[0], *layer = s[1], *after = s[2];
    return 0;
}

int simulate_plan(const Program *p, const sim_calibration *cal, const char *format, FILE *out) {
    use_calibration(p, cal);
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
    sim_times tm;
    if (stage_times(p, peak, hbm, &tm) != 0) {
        wf_error("out of memory");
        if (s == &own) schedule_free(&own);
        return -1;
    }
    double f = 0, b = 0, tp_comm = 0, optim = 0, busy = 0;  /* the slowest chunk and stage */
    for (int k = 0; k < p->n_chunks; k++) {
        if (tm.f[k] + tm.b[k] > f + b) f = tm.f[k], b = tm.b[k];
        if (tm.comm[k] > tp_comm) tp_comm = tm.comm[k];
        if (!s->split_backward) tm.w[k] = 0;
    }
    double boundary = 0;
    for (int k = 1; k < p->n_chunks; k++)
        if (p->chunk_in[k]) boundary = 4.0 * tensor_storage(p, p->chunk_in[k]);  /* act16: half */
    int pp_apart = wf_mesh_stride(p->axes, p->n_axes, WF_AXIS_PP);  /* ranks between neighbour stages */
    double p2p = 0;
    if (p->pp > 1 && s->split > 1) {
        /* scatter/gather: a 1/tp slice between stages, then the all-gather
         * on the tp group's links; the trace charges both to the message */
        p2p = cost_p2p(boundary / s->split, group_link(p, pp_apart, 2));
        int tp_apart = wf_mesh_stride(p->axes, p->n_axes, WF_AXIS_TP);
        p2p += cost_allgather_ring(boundary, p->tp, group_link(p, tp_apart, p->tp));
    } else if (p->pp > 1) {
        p2p = cost_p2p(boundary, group_link(p, pp_apart, 2));
    }
    double *us = malloc(sizeof(double) * (size_t)(3 * p->n_chunks + p->pp));
    if (!us) {
        sim_times_free(&tm);
        if (s == &own) schedule_free(&own);
        return -1;
    }
    for (int k = 0; k < p->n_chunks; k++)
        us[k] = tm.f[k] * 1e6, us[p->n_chunks + k] = tm.b[k] * 1e6, us[2 * p->n_chunks + k] = tm.w[k] * 1e6;
    for (int st = 0; st < p->pp; st++) us[3 * p->n_chunks + st] = tm.optim[st] * 1e6;
    trace_costs costs = { us, us + p->n_chunks, us + 2 * p->n_chunks, p2p * 1e6, us + 3 * p->n_chunks };
    trace tr = { 0 };
    double span_us = 0, shared_us = 0;
    int failed = step_timeline(s, &costs, NULL, &tr, &span_us);
    /* ranks sharing cores: the same timeline again, ops slowed as the cores
     * are shared at each moment; its trace replaces the first */
    trace_share sh;
    double *node_ranks = malloc(sizeof(double) * (size_t)p->pp), shared_optim = 0;
    int shared = !failed && node_ranks && core_share(p, &sh, node_ranks);
    if (shared) {
        trace t2 = { 0 };
        if (step_timeline(s, &costs, &sh, &t2, &shared_us) == 0) {
            shared_optim = longest_optim(&t2) / 1e6;
            trace_free(&tr);
            tr = t2;
        } else {
            trace_free(&t2);
            failed = 1;
        }
    }
    free(node_ranks);
    free(us);
    if (failed) {
        wf_error("%s: the schedule does not simulate", p->plan_path);
        sim_times_free(&tm);
        if (s == &own) schedule_free(&own);
        return -1;
    }
    /* the bubble: the stages' idle share of the pipeline's span, on average
     * (the span includes the optimizer step, which is not pipeline time) */
    double busiest = 0;
    for (int st = 0; st < p->pp; st++) {
        double stage_busy = 0;
        for (int k = st; k < p->n_chunks; k += p->pp) stage_busy += p->accum * (tm.f[k] + tm.b[k]);
        busy += stage_busy / p->pp;
        if (stage_busy > busiest) busiest = stage_busy;
        if (tm.optim[st] > optim) optim = tm.optim[st];
    }
    /* (a steady 2BW step holds its optimizer step already) */
    double span = span_us / 1e6 - optim;
    /* data parallel: each stage's buckets, ring all-reduce across nodes when the
     * dp group spans them, overlapped with the last microbatch's backward */
    /* data parallel, per stage: its buckets' ring collectives across nodes when
     * the dp group spans them (gradients travel in 16 bits only under
     * plan.dp_comm, on either backend, as runtime/common/dp_comm.c and wire.c:
     * 16-bit accumulation alone sends floats; 16-bit working parameters,
     * param16.c, are gathered in 16 bits).  Plain dp all-reduces overlapping the last
     * microbatch's backward; ZeRO reduce-scatters overlapping backward (every
     * microbatch from stage 2 on), then the updated shards all-gathered after
     * the step (stages 1, 2); stage 3 instead all-gathers each bucket before
     * its use in forward and again in backward, prefetched so that it overlaps
     * that compute. */
    double el = dp_comm16(p) ? 2.0 : 4.0, pel = param16(p) ? 2.0 : 4.0;
    double exposed_dp = 0, dp_comm = 0;
    int dp_apart = wf_mesh_stride(p->axes, p->n_axes, WF_AXIS_DP);
    const cost_link *dp_link = group_link(p, dp_apart, p->dp);
    cost_link dpl = *dp_link;  /* group_link's answer is overwritten by its next call */
    /* the CPU each bucket's non-blocking collective costs in MPI calls
     * (weft-calibrate's dp_bucket_us; cost_dp_exposed); NCCL's are not priced so */
    double per_call = calib ? calib->dp_bucket_s : 0;
    for (int st = 0; st < p->pp; st++) {
        /* a split backward (zero-bubble) starts the buckets in W: only the
         * weight half overlaps them; but those B writes whole (buckets.c's
         * start_in_b), which start in B: `early`, the B time after the
         * first of them, overlaps them too (without ZeRO >= 2 all of the
         * step's reductions then; with it, waited at B's end, theirs
         * alone, rs_b) */
        double ar = 0, rs = 0, ag = 0, fs = tm.f[st], bs = s->split_backward ? tm.w[st] : tm.b[st];
        double last_ar = 0, last_rs = 0, rs_b = 0, early = 0;
        int nb = 0;
        for (int k = 0; k < p->n_buckets; k++)
            if (p->buckets[k].stage == st) {
                double bytes = el * p->buckets[k].numel;
                double one_ar = cost_allreduce_ring(bytes, p->dp, &dpl), one_rs = cost_reduce_scatter_ring(bytes, p->dp, &dpl);
                ar += one_ar;
                ag += cost_allgather_ring(pel * p->buckets[k].numel, p->dp, &dpl);
                nb++;
                if (p->buckets[k].start_in_b) {
                    int chunk = p->params[p->grad_order[p->buckets[k].first_param]].chunk;
                    double after = b_after_seconds(p, chunk, p->n_ops - 1 - p->buckets[k].ready_after_op, peak, hbm);
                    if (after > early) early = after;
                    rs_b += one_rs;
                    continue;
                }
                /* buckets are in the order backward completes them: the
                 * last one's collective starts only once backward is done */
                last_ar = one_ar;
                last_rs = one_rs;
                rs += one_rs;
            }
        double ar_window = bs + early;  /* without ZeRO >= 2: every reduction waits for the step's end */
        double rs_b_exposed = rs_b > early ? rs_b - early : 0;
        if (p->dp <= 1) nb = 0;  /* no collectives at all */
        /* exposed: what does not fit under the last microbatch's backward,
         * and never less than the last bucket's own collective, plus each
         * non-blocking collective's CPU in MPI calls */
        double c = ar, e = cost_dp_exposed(ar, last_ar, ar_window, nb, per_call);
        if (p->zero == 1) {
            c = rs + rs_b + ag;
            e = cost_dp_exposed(rs + rs_b, last_rs, ar_window, nb, per_call) + ag;
        } else if (p->zero == 2) {
            c = p->accum * (rs + rs_b) + ag;
            e = (p->accum - 1) * (rs > bs ? rs - bs : 0) + cost_dp_exposed(rs, last_rs, bs, p->accum * nb, per_call) +
                p->accum * rs_b_exposed + ag;
        } else if (p->zero >= 3) {
            /* a reduce-scatter and two all-gathers a bucket and microbatch
             * (forward, backward); a split backward under full recompute
             * gathers once more, for W's rebuild (zero_plan.c), beside W */
            double back = s->split_backward && p->recompute == RECOMPUTE_FULL ? 2 : 1;
            c = p->accum * (rs + rs_b + (1 + back) * ag);
            e = p->accum * ((rs + back * ag > bs ? rs + back * ag - bs : 0) + rs_b_exposed + (ag > fs ? ag - fs : 0)) +
                (2 + back) * p->accum * nb * per_call;
        }
        if (c > dp_comm) dp_comm = c;
        if (e > exposed_dp) exposed_dp = e;
    }
    sim_times_free(&tm);
    double bubble = span > 0 ? 1.0 - busy / span : 0, bubble_busiest = span > 0 ? 1.0 - busiest / span : 0;
    double stretch = 1;  /* the shared timeline's span over the unshared one's */
    if (shared) {
        stretch = span_us > 0 ? shared_us / span_us : 1;
        optim = shared_optim;
        span = shared_us / 1e6 - optim;
    }
    double iter = span + exposed_dp + optim;
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
        fprintf(out, "throughput %.0f tokens/s; %.3g TFLOP/s per device; MFU %.1f%% (model FLOPs %s)\n",
                tokens / iter, tflops, 100.0 * tflops / peak,
                untied_embedding(p) ? "6(N - embedding) + 12Lhs" : "6N + 12Lhs");
        fprintf(out, "bubble    %.1f%% of stage time (idle, averaged over stages); %.1f%% on the busiest stage\n",
                100.0 * (bubble > 0 ? bubble : 0), 100.0 * (bubble_busiest > 0 ? bubble_busiest : 0));
        if (shared) {
            int node = p->world < p->devices_per_node ? p->world : p->devices_per_node;
            fprintf(out, "cores     %d ranks share %d cores: the step's timeline stretches x%.3f (x%.3f were "
                         "every rank computing throughout; a waiting rank takes %.2f of a computing one's share; %s, "
                         "cluster.bind = %s)\n",
                    node, calib->cores, stretch, (double)node / calib->cores, WAIT_SHARE,
                    sh.bound ? "ranks bound to cores in stage order" : "ranks placed by the kernel", wf_bind_name(p->bind));
        }
        if (p->image_positions > 0) {  /* a VLM: its encoder's share of the first chunk */
            double enc, first;
            encoder_seconds(p, peak, hbm, &enc, &first);
            fprintf(out, "encoder   vision encoder and projector %.3f ms of the first chunk's %.3f ms compute "
                         "per microbatch (%.1f%%)\n", enc * 1e3, first * 1e3, first > 0 ? 100.0 * enc / first : 0);
        }
        fprintf(out, "comm      tp collectives %.3f ms per microbatch forward; pp p2p %.3f ms per message; "
                     "dp %s %.3f s (%.3f s exposed)\n", tp_comm * 1e3, p2p * 1e3,
                p->zero >= 3 ? "reduce-scatter + forward and backward all-gathers (ZeRO-3)"
                : p->zero ? "reduce-scatter + all-gather (ZeRO)" : "all-reduce", dp_comm, exposed_dp);
        /* weft check's memory model (memory.c); buffers: scratch, cast buffer,
         * 16-bit weight copies and the runtime's own */
        fprintf(out, "memory per rank (stage: params, grads, optimizer, activations, act. grads, buffers, "
                     "total; as weft check):\n");
        for (int st = 0; st < p->pp; st++) {
            program_memory pm = program_memory_of(p, st);
            char a[7][32], verdict[128];
            double v[7] = { pm.params, pm.grads, pm.optim, pm.acts, pm.dacts, pm.scratch + pm.cast + pm.w16 + pm.runtime,
                            pm.total };
            for (int i = 0; i < 7; i++) program_human_bytes(v[i], a[i], sizeof a[i]);
            cost_memory_verdict(pm.total, p->device_memory_gib, verdict, sizeof verdict);
            if (p->pp <= 8 || st < 2 || st >= p->pp - 2)
                fprintf(out, "  stage %-3d %10s %10s %10s %10s %10s %10s %10s  %s\n", st, a[0], a[1], a[2], a[3],
                        a[4], a[5], a[6], verdict);
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
