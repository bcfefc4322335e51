/* plan_search.c: `weft plan`, the search over parallel layouts.
 *
 * A candidate is the plan with a handful of `--set` overrides (mesh, sequence
 * parallelism, microbatch, schedule, ZeRO stage, recompute, offload); it is
 * built by compile_plan, exactly as `weft check --set ...` builds it (every
 * pass, the IR verifier, the backend's checks), measured by the memory model
 * (program_memory_of) and priced by `weft simulate`'s own entry point
 * (simulate_plan), so a better cost model changes the ranking with no change
 * here.  Building a 1T-parameter candidate takes ~0.1 s, so the search
 * prunes before it builds:
 *   1. arithmetic: tp divides the node and the heads, pp at most the layers,
 *      dp divides the global batch, the schedule's own rules;
 *   2. a memory lower bound per rank (parameter, gradient and optimizer bytes
 *      per parameter and activation bytes per layer and token, measured on two
 *      small builds of the same model; for a pipeline, stage by stage on the
 *      split the partition pass will give (deep_lower_bound); for a VLM, its first stage, which
 *      alone holds the vision encoder and projector, and every rank's
 *      images, measured likewise) picks, for each recompute level, the
 *      smallest ZeRO stage that may fit; layouts where none may fit are out;
 *   3. a step-time lower bound (simulate's own per-op prices of one block,
 *      the embedding and the head, from one one-block build per tp, sp,
 *      recompute and micro: the busiest stage's work and the pipeline's
 *      fill, see bounds(); the model's FLOPs at peak where that build
 *      fails): candidates are built best-first by an estimate (the same
 *      prices with the schedule's bubble, the sends and the dp collectives),
 *      and one whose lower bound exceeds the K-th best priced step time is
 *      not built;
 *   4. dominance: once a layout fits with no recompute and ZeRO <= 1, its
 *      recompute variants (never faster) are not built.
 * A cap on builds (--max-priced) keeps the worst case bounded; the counts of
 * each rule are printed.  After it, the best layout's bucket size and the
 * stage partitions of the best pipelined layouts are refined by a few more
 * builds (refine_buckets, refine_partition).  Everything is deterministic:
 * ties are broken by the candidate's fields.  What makes a build cheap enough (~0.05-0.1 s for the
 * 1T model): the prelude builds the model's graph once per load, schedule
 * slot counts come from the compute orders alone (schedule_peak_slots), and
 * a schedule verified once is not verified again (schedule_verify's memo). */

#include <libgen.h>
#include <limits.h>
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cost.h"
#include "escape.h"
#include "memory_pack.h"
#include "output.h"
#include "partition.h"
#include "pass_list.h"
#include "plan_search.h"
#include "program.h"
#include "simulate.h"
#include "trace_shared.h"
#include "user_kernel.h"

enum { EXIT_OK = 0, EXIT_PLAN = 1, EXIT_USAGE = 2 };
enum { MAX_SETS = 64, MAX_CAND = 100000 };
/* pipeline chunks whose partition is recorded and refined (more: the
 * partition pass's own balance, not shown) */
enum { MAX_PART = 32 };
/* parameters of one transformer layer recorded for the bucket count */
enum { MAX_LPARAM = 64 };
/* a candidate's --set list: the user's, the cluster's, 13 layout fields and
 * one per given chunk */
enum { MAX_CAND_SETS = MAX_SETS + 4 + 13 + MAX_PART };

/* vlm0's fields: stage 0's parameter, gradient and optimizer bytes with one
 * layer and what each further layer adds; its activation slot and one
 * activation-gradient set per token with one layer; the most parameter
 * elements of one of its ops, and of one with weight gradients */
enum { V0_W, V0_G, V0_O, V0_DW, V0_DG, V0_DO, V0_ACT, V0_DACT, V0_WIDE, V0_WIDEG, V0_N };
/* act_tok's fields (stage_bytes): the first stage's activation slot, fixed
 * bytes per token and per layer and token, its activation-gradient set per
 * token, fixed and per layer; the last stage's fixed slot bytes and gradient
 * set per token, fixed and per layer; the
 * parameter, gradient and optimizer bytes of the first and of the last
 * stage beside their layers (embedding, head), and of one layer; the
 * largest layer parameter's elements (largest_layer_param); the most
 * elements one op of the first / last stage holds, and one layer's op with
 * a gradient (layer_widest) */
enum { AT_FIXED, AT_LAYER, AT_DACT, AT_DDACT, AT_LFIXED, AT_LDACT, AT_LDDACT, AT_W0, AT_G0, AT_O0, AT_WL, AT_GL, AT_OL,
       AT_DW, AT_DG, AT_DO, AT_BIG, AT_WIDE0, AT_WIDEL, AT_WIDE, AT_N };

static const char *const SCHED_NAMES[] = { "gpipe", "1f1b", "interleaved", "zb-h1", "pipedream-2bw" };
static const char *const RC_NAMES[] = { "none", "selective", "full" };

typedef struct {
    int dp, tp, pp, sp, micro, sched, virt, zero, rc, offload;
    double bucket_mb;      /* fused gradient buckets, MiB */
    double lb, est;        /* step-time lower bound and estimate, s */
    double mem_lb;         /* bytes per rank, lower bound */
    /* after building and pricing */
    int state;             /* 0 not built, 1 priced, 2 does not fit, 3 refused, 4 dominated */
    /* layers per pipeline chunk: the partition pass's balance (read back
     * after the build), or given (refine_partition: set as pipeline.stages) */
    int n_part, part[MAX_PART], part_given;
    int probe;             /* its entry in search.probes (layer_seconds), -1 none */
    int bind_off;          /* cluster.bind = "off" where the plan's "auto" binds and prices slower */
    double iter, tps, mfu, mem, bubble, exposed, ratio;
    char why[400];
} cand;

typedef struct {
    const char *plan, *backend, *out, *objective, *calibration;
    const char *user_sets[MAX_SETS];
    int n_user;
    int gpus, global, top, max_priced, scaling, quiet, print_sets;
} args;

/* --calibration: the cluster file every candidate is priced with (simulate's
 * --calibration), loaded once */
static sim_calibration search_cal;

static const char *const RULES[] = {
    "tp does not divide the heads (or kv_heads, ffn_hidden, a vision encoder's)", "tp spans more than one node", "pp over the layers",
    "dp does not divide the global batch", "schedule's own rule (microbatches, virtual chunks, clip)",
    "microbatches over the plan's limit",
};
enum { N_RULES = (int)(sizeof RULES / sizeof *RULES) };

/* Bytes as GiB for the messages: one decimal, or three significant digits
 * below 0.1 GiB (a small device's needs would all read "0.0"). */
static const char *gib_text(double bytes, char buf[32]) {
    double g = bytes / 1073741824.0;
    snprintf(buf, 32, g >= 0.1 ? "%.1f" : "%.3g", g);
    return buf;
}

/* A device's capacity as the plan gives it: 80, 0.012 */
static const char *device_gib_text(double bytes, char buf[32]) {
    snprintf(buf, 32, "%g", bytes / 1073741824.0);
    return buf;
}

typedef struct {
    args a;
    char cluster_sets[2][64];   /* --gpus: cluster.nodes, cluster.devices_per_node */
    char batch_set[64];
    /* from the plan, loaded once */
    int layers, heads, kv_heads, hidden, seq, vocab, nodes, dpn, world, global, clip0;
    int ffn_hidden, vit_heads, vit_mlp;  /* llama's MLP width, a VLM encoder's (0: none): tp divides them */
    int node_dpn;       /* the plan's (or --set's) devices per node, before --gpus fewer made one node */
    char kernel_source[512];  /* a user kernel's source, relative to the plan's folder ("": none) */
    int vlm;            /* a weft.vlm model: its encoder joins the first stage */
    int bind;           /* cluster.bind (weft/bind.h) */
    char order[64];     /* mesh.order */
    double bucket_mb;   /* the plan's */
    double device_bytes, peak, flops_step, intra_gbs, intra_lat, inter_gbs, inter_lat, el;
    double intra_bus, inter_bus, hbm;  /* NCCL bus bandwidths (0: nominal), GB/s; HBM, GB/s */
    double dp_el, p_el;  /* bytes a gradient and a working parameter travel in over dp (simulate's) */
    int prefetch;        /* ZeRO-3 gathers one ahead or more (zero_prefetch, no zero_prefetch_mb) */
    long params;
    /* measured on small builds: bytes per parameter and per layer-token */
    double bw, bg, bo;
    /* activation and activation-gradient bytes per layer and token of one
     * slot, by tp (index log2), sp and recompute; < 0: not measured yet */
    double act_tok[8][2][3][2][AT_N];  /* [tp][sp][recompute][zb-h1] */
    /* one layer's trainable parameters of a tp rank, elements, in the order
     * their gradients complete (buckets.c's order), by tp (index log2); from
     * stage_bytes's build; n_lparam 0: not known */
    long lparam[8][MAX_LPARAM];
    int n_lparam[8];
    double lpair[8];  /* the most elements of two such parameters next in that order */
    /* ZeRO's arenas of a one-layer stage (zero_arena), by tp, sp, recompute
     * and bucket size */
    struct zero_arena { int tp, sp, rc, one; double mb, buckets, gathers; } *arenas;
    int n_arenas, cap_arenas;
    /* a VLM's first stage (vlm_stage0), by tp (index log2), sp and
     * recompute; [0] < 0: not measured yet */
    double vlm0[8][2][3][V0_N];
    double image_bytes; /* a VLM: one sample's uint8 image */
    /* per-block and other seconds per microbatch by (tp, sp, recompute,
     * micro), from one-block builds (layer_seconds); the step-time bound */
    /* refused: the one-block build's error; confirmed: a candidate's own
     * build was refused with the same error, so the rest are not built */
    struct probe { int tp, sp, rc, micro, ok, confirmed; double before, layer, after; char refused[320]; } *probes;
    int n_probes, cap_probes;
    /* the partition pass's costs by (tp, sp, micro) (ok 0: unknown), and its
     * splits by (tp, sp, micro, chunks): the split a build will get
     * (predicted_split) */
    struct part_cost { int tp, sp, micro, ok; double cost[3]; } *part_costs;
    int n_part_costs, cap_part_costs;
    struct split { int tp, sp, micro, chunks; int *layers; } *splits;
    int n_splits, cap_splits;
    long split_checked, split_wrong;  /* WEFT_PLAN_DEBUG: predicted splits against built ones */
    const char *base_sets[MAX_SETS + 24];
    int n_base;
    char device[32];
    cand *c;
    int n;
    long enumerated;
    long pruned_arith[N_RULES];  /* by rule, see RULES */
    long pruned_mem, pruned_bound, pruned_cap, dominated, built, priced, refused, nofit;
    long probed;        /* one-block builds for the step-time bound (layer_seconds) */
    long zero_skipped;  /* ZeRO stages not built after a build did not fit (max_stage_bytes) */
    long refused_alike; /* not built: refused as the one-block and a full build of their kind were */
    /* the best (by estimate) of those the memory lower bound pruned, never
     * built: the rejection list names them with the bound */
    cand mem_pruned[5];
    int n_mem_pruned;
    double least_need;  /* the least bytes per rank any layout needs: bound or built (0: none seen) */
    long bucket_tried;  /* refine_buckets: builds at other bucket sizes */
    long bucket_better; /* of them, faster than the best layout's own size */
    double bucket_base; /* the best layout's bucket size before them, MiB */
    long part_tried, part_better;  /* refine_partition: builds, and of them faster */
    long part_layouts;             /* layouts refined */
    int part_new_best;             /* a refined layout that was not the best became it */
} search;


/* ---- building one candidate ------------------------------------------- */

static int set_list(const search *S, const cand *c, char buf[][64], const char **sets) {
    /* buf: 13 + MAX_PART entries; sets: MAX_CAND_SETS */
    int n = 0;
    for (int i = 0; i < S->a.n_user; i++) sets[n++] = S->a.user_sets[i];
    if (S->cluster_sets[0][0]) sets[n++] = S->cluster_sets[0], sets[n++] = S->cluster_sets[1];
    if (S->batch_set[0]) sets[n++] = S->batch_set;
    if (!c) return n;
    int k = 0;
#define SET(...) (snprintf(buf[k], 64, __VA_ARGS__), sets[n++] = buf[k++])
    SET("mesh.dp=%d", c->dp);
    SET("mesh.tp=%d", c->tp);
    SET("mesh.pp=%d", c->pp);
    SET("mesh.sp=%s", c->sp ? "true" : "false");
    SET("batch.micro=%d", c->micro);
    SET("pipeline.schedule=%s", c->pp > 1 ? SCHED_NAMES[c->sched] : "1f1b");
    SET("pipeline.virtual=%d", c->virt);
    SET("zero=%d", c->zero);
    SET("recompute=%s", RC_NAMES[c->rc]);
    SET("offload.optimizer=%s", c->offload ? "cpu" : "none");
    SET("offload.params=%s", c->offload ? "cpu" : "none");
    SET("buckets.mb=%g", c->bucket_mb);
    SET("cluster.bind=%s", wf_bind_name(c->bind_off ? WF_BIND_OFF : S->bind));
    for (int i = 0; c->part_given && i < c->n_part; i++) SET("pipeline.stages.%d=%d", i + 1, c->part[i]);
#undef SET
    return n;
}

/* compile_plan with the candidate's overrides; msg gets the first error. */
static int build(const search *S, const cand *c, Program *p, char *msg, size_t n) {
    char buf[13 + MAX_PART][64];
    const char *sets[MAX_CAND_SETS];
    int ns = set_list(S, c, buf, sets);
    compile_options o = { .plan = S->a.plan, .overrides = sets, .n_overrides = ns, .backend = S->a.backend };
    wf_error_capture(msg, n);
    int rc = compile_plan(p, &o);
    wf_error_capture(NULL, 0);
    return rc;
}

/* The fullest stage's bytes; up[z] for each higher ZeRO stage z, a lower
 * bound on the same layout's bytes at z: every stage's activations and
 * gradient sets (ZeRO does not touch them) and its parameters, gradients
 * and optimizer state divided over dp as z shards them (memory.c's shards
 * are no smaller), buffers left out. */
static double max_stage_bytes(const Program *p, int zero, int dp, double up[4]) {
    double m = 0;
    for (int z = 0; z < 4; z++) up[z] = 0;
    for (int st = 0; st < p->pp; st++) {
        program_memory pm = program_memory_of(p, st);
        if (pm.total > m) m = pm.total;
        for (int z = zero + 1; z < 4; z++) {
            /* full state at the current stage, then sharded as z shards it */
            double w = pm.params * (zero >= 3 ? dp : 1), g = pm.grads * (zero >= 2 ? dp : 1);
            double o = pm.optim * (zero >= 1 ? dp : 1);
            double b = pm.acts + pm.dacts + w / (z >= 3 ? dp : 1) + g / (z >= 2 ? dp : 1) + o / dp;
            if (b > up[z]) up[z] = b;
        }
    }
    return m;
}

/* The number after `key` in simulate's text, or NAN. */
static double after(const char *text, const char *key) {
    const char *s = strstr(text, key);
    if (!s) return NAN;
    char *end;
    double v = strtod(s + strlen(key), &end);
    return end == s + strlen(key) ? NAN : v;
}

/* Prices a built candidate with simulate_plan's text report. */
static int price(const Program *p, cand *c) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    char msg[320];
    wf_error_capture(msg, sizeof msg);
    int rc = f ? simulate_plan(p, &search_cal, "text", f) : -1;
    wf_error_capture(NULL, 0);
    if (f) fclose(f);
    if (rc != 0) {
        snprintf(c->why, sizeof c->why, "simulate: %s", msg);
        free(text);
        return -1;
    }
    double fwd = after(text, "chunk: forward "), bwd = after(text, "ms, backward ");
    c->iter = after(text, "\niteration ");
    c->tps = after(text, "\nthroughput ");
    c->mfu = after(text, "; MFU ");
    c->bubble = after(text, "\nbubble ");
    if (isnan(c->bubble)) c->bubble = after(text, "\nbubble    ");
    double tp_ms = after(text, "tp collectives "), p2p_ms = after(text, "pp p2p ");
    /* "dp <what> X s (Y s exposed)" */
    const char *ex = strstr(text, " s exposed)");
    double dp_s = NAN;
    c->exposed = NAN;
    if (ex) {
        const char *open = ex;
        while (open > text && *open != '(') open--;
        c->exposed = strtod(open + 1, NULL);
        const char *q = open - 3;  /* "X s (" */
        while (q > text && q[-1] != ' ') q--;
        dp_s = strtod(q, NULL);
    }
    free(text);
    if (isnan(c->iter) || isnan(c->tps) || isnan(c->mfu) || isnan(fwd) || isnan(bwd) || isnan(tp_ms) ||
        isnan(dp_s)) {
        snprintf(c->why, sizeof c->why, "simulate's report has changed: weft plan cannot read it");
        return -1;
    }
    /* per rank and step: tp collectives run in forward and again in backward */
    double steps = (double)p->accum * p->virt;
    double compute = (fwd + bwd) * 1e-3 * steps;
    double comm = 2 * tp_ms * 1e-3 * steps + (p->pp > 1 ? 2 * p2p_ms * 1e-3 * steps : 0) + dp_s;
    c->ratio = compute > 0 ? comm / compute : 0;
    return 0;
}

static void layout_name(const cand *c, char *buf, size_t n);
static double mem_lower_bound(search *S, const cand *c, int accum);
/* WEFT_PLAN_DEBUG=stages: deep_lower_bound prints each stage's terms */
static int debug_bound_stages;
static void debug_stages(search *S, const cand *c, const Program *p);
static const int *predicted_split(search *S, const cand *c);
static void zero_buffer_elems(search *S, const cand *c, double *buckets, double *gathers);

/* A priced candidate's step, s: from tokens/s, which simulate prints to
 * more digits than the step (to the unit: relative error at most
 * 0.5 / tokens/s) */
static double step_of(const search *S, const cand *c) {
    return c->tps > 0 ? (double)S->global * S->seq / c->tps : c->iter > 0 ? c->iter : INFINITY;
}

/* Builds, measures and prices c; moves up the ZeRO stages while it does not fit. */
/* A layout needs `bytes` a rank: the least so far (explain_none names it) */
static void note_least_need(search *S, double bytes) {
    if (!S->least_need || bytes < S->least_need) S->least_need = bytes;
}

static void evaluate(search *S, cand *c) {
    for (;;) {
        Program p;
        char msg[320];
        S->built++;
        if (build(S, c, &p, msg, sizeof msg) != 0) {
            snprintf(c->why, sizeof c->why, "%s", msg);
            c->state = 3;
            S->refused++;
            program_free(&p);
            return;
        }
        double up[4];
        c->mem = max_stage_bytes(&p, c->zero, c->dp, up);
        if (getenv("WEFT_PLAN_DEBUG") && !strcmp(getenv("WEFT_PLAN_DEBUG"), "stages")) debug_stages(S, c, &p);
        if (!c->part_given) {
            c->n_part = p.pp > 1 && p.chunk_layers && p.n_chunks <= MAX_PART ? p.n_chunks : 0;
            for (int i = 0; i < c->n_part; i++) c->part[i] = p.chunk_layers[i];
        }
        if (getenv("WEFT_PLAN_DEBUG")) {  /* the memory lower bound against the model, bytes (e2e_plan_search) */
            char name[400];
            layout_name(c, name, sizeof name);
            fprintf(stderr, "debug: bound %.0f planned %.0f: %s\n", c->mem_lb, c->mem, name);
            if (p.pp > 1 && p.chunk_layers && !c->part_given) {  /* the bound's split against the build's */
                const int *q = predicted_split(S, c);
                int same = q != NULL;
                for (int k = 0; same && k < p.n_chunks; k++) same = q[k] == p.chunk_layers[k];
                fprintf(stderr, "debug: split %s: %s\n", !q ? "unknown" : same ? "predicted" : "mispredicted", name);
            }
        }
        if (c->mem > S->device_bytes) {
            char need[32], have[32];
            note_least_need(S, c->mem);
            snprintf(c->why, sizeof c->why, "does not fit: %s of %s GiB", gib_text(c->mem, need),
                     device_gib_text(S->device_bytes, have));
            /* the next ZeRO stage the schedule allows and the bound does not rule out */
            int zmax = c->dp == 1 ? 0 : 3, z = c->zero + 1;
            while (z <= zmax && up[z] > S->device_bytes) z++;
            S->zero_skipped += (z <= zmax ? z : zmax + 1) - c->zero - 1;
            if (z <= zmax && S->built < S->a.max_priced) {
                program_free(&p);
                c->zero = z;
                c->mem_lb = fmax(mem_lower_bound(S, c, S->global / c->dp / c->micro), up[z]);  /* the new stage's */
                continue;
            }
            c->state = 2;
            S->nofit++;
            program_free(&p);
            return;
        }
        if (price(&p, c) != 0) {
            c->state = 3;
            S->refused++;
        } else {
            c->state = 1;
            S->priced++;
            if (getenv("WEFT_PLAN_DEBUG")) {  /* the step-time lower bound against simulate (e2e_plan_search) */
                char name[400];
                layout_name(c, name, sizeof name);
                fprintf(stderr, "debug: time bound %.9g priced %.9g tokens/s %.0f estimate %.6g: %s\n", c->lb,
                        step_of(S, c), c->tps, c->est, name);
            }
        }
        program_free(&p);
        return;
    }
}

/* WEFT_PLAN_DEBUG=stages: each stage's planned bytes by kind beside the
 * bound's terms for it (deep_lower_bound on the build's own split), GiB:
 * which term of which stage a loose bound misses. */
static void debug_stages(search *S, const cand *c, const Program *p) {
    const double G = 1073741824.0;
    char name[400];
    layout_name(c, name, sizeof name);
    fprintf(stderr, "debug: stages of %s\n", name);
    for (int st = 0; st < p->pp; st++) {
        program_memory m = program_memory_of(p, st);
        fprintf(stderr, "debug: stage %d planned %.3f GiB: params %.3f grads %.3f optim %.3f acts %.3f (%d slots of %.3f, "
                        "region %.3f) act grads %.3f scratch %.3f cast %.3f w16 %.3f runtime %.3f\n",
                st, m.total / G, m.params / G, m.grads / G, m.optim / G, m.acts / G, program_slots(p, st),
                4.0 * (double)p->act_numel[st] / G, 4.0 * (double)p->region_numel[st] / G, m.dacts / G, m.scratch / G,
                m.cast / G, m.w16 / G, m.runtime / G);
        if (p->zero >= 2 && p->grad_buf_numel) {
            /* ZeRO's arenas, elements: first fit's beside the most live at
             * once (the least any layout of these spans could take) */
            double gl = 0, bl = 0;
            for (int t = 0; t < 3 * p->n_ops; t++) {  /* zb-h1's W halves at 2n.. */
                double g = 0, b = 0;
                for (int e = 0; p->zero >= 3 && e < p->n_gathers; e++)
                    if (p->gathers[e].stage == st && p->gathers[e].issue <= t && t <= p->gathers[e].end) g += p->buckets[p->gathers[e].bucket].numel;
                for (int k = 0; k < p->n_buckets; k++) {  /* started in B: B's times, after W's (zero_plan.c) */
                    int u = t - (p->buckets[k].start_in_b ? p->n_ops : 0);
                    if (p->buckets[k].stage == st && p->buckets[k].first_write_op <= u && u <= p->buckets[k].wait_after_op) b += p->buckets[k].numel;
                }
                gl = fmax(gl, g), bl = fmax(bl, b);
            }
            fprintf(stderr, "debug: stage %d zero buffers: buckets %ld gathers %ld; live at once %.0f %.0f\n", st, p->grad_buf_numel[st],
                    p->zero >= 3 && p->gather_numel ? p->gather_numel[st] - (p->param_numel[st] - p->train_numel[st]) : 0, bl, gl);
        }
    }
    if (c->zero >= 2) {
        double zb, zg;
        zero_buffer_elems(S, c, &zb, &zg);
        fprintf(stderr, "debug: stages: zero buffers bound: buckets %.0f gathers %.0f\n", zb, zg);
    }
    debug_bound_stages = 1;
    cand d = *c;
    if (p->pp > 1 && p->chunk_layers && p->n_chunks <= MAX_PART) {  /* the build's own split */
        d.part_given = 1, d.n_part = p->n_chunks;
        for (int i = 0; i < d.n_part; i++) d.part[i] = p->chunk_layers[i];
    }
    fprintf(stderr, "debug: stages: the bound %.3f GiB\n", mem_lower_bound(S, &d, S->global / c->dp / c->micro) / G);
    debug_bound_stages = 0;
}

/* ---- the bounds --------------------------------------------------------- */

static double bubble_factor(int sched, int pp, int m, int v) {
    if (pp <= 1) return 1;
    switch (sched) {
    case 0: case 1: return (m + pp - 1.0) / m;
    case 2: return (m * v + pp - 1.0) / (m * v);
    case 3: return (m + (pp - 1.0) / 3) / m;  /* zb-h1: a third of 1F1B's bubble */
    default: return 1;                        /* pipedream-2bw: no flush */
    }
}

/* Peak activation slots of a stage (the schedule's own count, from its
 * compute orders: schedule_peak_slots), cached: schedules are shared by many
 * candidates. */
typedef struct { int sched, pp, accum, virt, first, slots; } slot_entry;
static slot_entry slot_cache[4096];
static int n_slot_cache;

/* first: stage 0's slots (schedule_stage_slots), else the most of any stage */
static int stage_slots_of(int sched, int pp, int accum, int virt, int first) {
    if (pp <= 1) return 1;
    if (sched == SCHED_2BW) sched = SCHED_1F1B;  /* 2BW keeps 1F1B's order per step */
    for (int i = 0; i < n_slot_cache; i++) {
        const slot_entry *e = &slot_cache[i];
        if (e->sched == sched && e->pp == pp && e->accum == accum && e->virt == virt && e->first == first)
            return e->slots;
    }
    int slots = first ? schedule_stage_slots((sched_kind)sched, pp, accum, virt, 0)
                      : schedule_peak_slots((sched_kind)sched, pp, accum, virt);
    if (slots < 1) slots = 1;
    if (n_slot_cache < 4096) slot_cache[n_slot_cache++] = (slot_entry){ sched, pp, accum, virt, first, slots };
    return slots;
}

static int stage_slots(int sched, int pp, int accum, int virt) {
    return stage_slots_of(sched, pp, accum, virt, 0);
}

/* The partition pass's costs for c's tp, sp and micro (partition_costs):
 * the part before the blocks, one block, the part after, from the model
 * cut to one block, taken through the passes before the partition (its
 * costs do not depend on the chunks, dp, ZeRO or recompute).  Blocks are
 * alike before the graph pass fuses across them, so a block's sum is the
 * full model's, to the bit.  0, or -1 (a VLM, or a failed build). */
static int partition_cost(search *S, const cand *c, double cost[3]) {
    if (S->vlm) return -1;
    for (int i = 0; i < S->n_part_costs; i++) {
        const struct part_cost *q = &S->part_costs[i];
        if (q->tp == c->tp && q->sp == c->sp && q->micro == c->micro) {
            memcpy(cost, q->cost, sizeof q->cost);
            return q->ok ? 0 : -1;
        }
    }
    if (S->n_part_costs == S->cap_part_costs) {
        int cap = S->cap_part_costs ? 2 * S->cap_part_costs : 32;
        struct part_cost *t = realloc(S->part_costs, sizeof *t * (size_t)cap);
        if (!t) return -1;
        S->part_costs = t, S->cap_part_costs = cap;
    }
    struct part_cost *q = &S->part_costs[S->n_part_costs++];
    *q = (struct part_cost){ c->tp, c->sp, c->micro, 0, { 0, 0, 0 } };
    char b[6][64];
    snprintf(b[0], 64, "cluster.devices_per_node=%d", c->tp);
    snprintf(b[1], 64, "mesh.tp=%d", c->tp);
    snprintf(b[2], 64, "mesh.sp=%s", c->sp ? "true" : "false");
    snprintf(b[3], 64, "batch.micro=%d", c->micro);
    snprintf(b[4], 64, "batch.global=%d", c->micro);
    snprintf(b[5], 64, "model.layers=1");
    const char *sets[MAX_SETS + 40];
    int n = 0;
    for (int i = 0; i < S->n_base; i++) sets[n++] = S->base_sets[i];
    for (int i = 0; i < 6; i++) sets[n++] = b[i];
    Program p;
    char msg[512];
    memset(&p, 0, sizeof p);
    wf_error_capture(msg, sizeof msg);
    int rc = pass_load(&p, S->a.plan, sets, n);
    const wf_backend *be = backend_find(S->a.backend);
    if (rc == 0 && be) snprintf(p.backend, sizeof p.backend, "%s", be->name);  /* as compile_plan */
    for (int i = 0; rc == 0 && i < WF_N_PASSES && strcmp(WF_PASSES[i].name, "partition"); i++)
        rc = WF_PASSES[i].run(&p);
    if (rc == 0 && be && p.layers == 1 && partition_costs(&p, q->cost) == 0) q->ok = 1;
    wf_error_capture(NULL, 0);
    program_free(&p);
    memcpy(cost, q->cost, sizeof q->cost);
    return q->ok ? 0 : -1;
}

/* The layers of each of c's pp x virt chunks as the partition pass will
 * split them (its balance on partition_cost's costs), cached; NULL when
 * unknown.  A split given to c (refine_partition) is c's own. */
static const int *predicted_split(search *S, const cand *c) {
    int K = c->pp * c->virt;
    if (c->part_given) return c->n_part == K ? c->part : NULL;
    for (int i = 0; i < S->n_splits; i++) {
        const struct split *q = &S->splits[i];
        if (q->tp == c->tp && q->sp == c->sp && q->micro == c->micro && q->chunks == K) return q->layers;
    }
    double c3[3];
    if (partition_cost(S, c, c3) != 0 || K > S->layers) return NULL;
    if (S->n_splits == S->cap_splits) {
        int cap = S->cap_splits ? 2 * S->cap_splits : 64;
        struct split *t = realloc(S->splits, sizeof *t * (size_t)cap);
        if (!t) return NULL;
        S->splits = t, S->cap_splits = cap;
    }
    int L = S->layers, *layers = malloc(sizeof(int) * (size_t)K);
    double *cost = malloc(sizeof(double) * (size_t)(L + 2));
    if (!layers || !cost) {
        free(layers);
        free(cost);
        return NULL;
    }
    cost[0] = c3[0], cost[L + 1] = c3[2];
    for (int l = 1; l <= L; l++) cost[l] = c3[1];
    partition_balance(cost, L, K, layers);
    free(cost);
    S->splits[S->n_splits++] = (struct split){ c->tp, c->sp, c->micro, K, layers };
    return layers;
}

/* Every stage's slots, then every stage's activation-gradient sets at least
 * (schedule_each_stage_slots), cached likewise; NULL when the schedule gives
 * none. */
typedef struct { int sched, pp, accum, virt; int *slots; } slots_entry;  /* slots[pp..2pp-1]: grad sets */
static slots_entry each_cache[1024];
static int n_each_cache;

static const int *each_stage_slots(int sched, int pp, int accum, int virt) {
    if (sched == SCHED_2BW) sched = SCHED_1F1B;
    for (int i = 0; i < n_each_cache; i++) {
        const slots_entry *e = &each_cache[i];
        if (e->sched == sched && e->pp == pp && e->accum == accum && e->virt == virt) return e->slots;
    }
    int *slots = malloc(sizeof(int) * 2 * (size_t)pp);
    if (slots && schedule_each_stage_slots((sched_kind)sched, pp, accum, virt, slots, slots + pp) != 0) {
        free(slots);
        slots = NULL;
    }
    if (n_each_cache < 1024) each_cache[n_each_cache++] = (slots_entry){ sched, pp, accum, virt, slots };
    return slots;  /* (past the cache's size: not kept, and not freed) */
}

/* The least bytes the fullest of pp stages can need, over every split of L
 * layers with at least `least` on each stage, when stage s holding l layers
 * needs a[s] + b[s] l: the partition pass's split, a refined one or the
 * plan's own cannot do better.  The least M for which the layers each stage
 * can hold under M add up to L, found by bisection (returned from below). */
static double least_max_stage(int L, int pp, int least, const double *a, const double *b) {
    double lo = 0, hi = 0;
    for (int s = 0; s < pp; s++) {
        lo = fmax(lo, a[s] + b[s] * least);  /* every stage holds `least` */
        hi = fmax(hi, a[s] + b[s] * (L - (double)(pp - 1) * least));  /* any stage may hold the rest */
    }
    for (int it = 0; it < 100 && hi - lo > 1e-6 * hi; it++) {  /* lo stays below the answer */
        double M = 0.5 * (lo + hi), held = 0;
        int ok = 1;
        for (int s = 0; s < pp && ok; s++) {
            double cap = b[s] > 0 ? floor((M - a[s]) / b[s]) : M >= a[s] ? L : -1;
            if (cap < least) ok = 0;
            held += fmin(cap, L);
        }
        if (ok && held >= L) hi = M;
        else lo = M;
    }
    return lo * (1 - 1e-12);  /* (floor's rounding at the answer itself) */
}

/* log2 of tp, the index of the bounds' per-tp tables; -1 when tp is not a
 * power of 2 (such layouts get no measured bound: 0 is always below) */
static int tp_index(int tp) {
    int ti = 0;
    while ((1 << ti) < tp && ti < 7) ti++;
    return (1 << ti) == tp ? ti : -1;
}

/* A small build for the bounds: the plan as load_base's one rank (the
 * user's --set and the neutral layout, base_sets) with `extra` on top
 * (NULL-terminated).  0 on success; the caller frees p either way. */
static int build_small(const search *S, Program *p, const char *const *extra, char *msg, size_t n_msg) {
    const char *sets[MAX_SETS + 40];
    int n = 0;
    for (int i = 0; i < S->n_base; i++) sets[n++] = S->base_sets[i];
    for (int i = 0; extra[i]; i++) sets[n++] = extra[i];
    compile_options o = { .plan = S->a.plan, .overrides = sets, .n_overrides = n, .backend = S->a.backend };
    wf_error_capture(msg, n_msg);
    int rc = compile_plan(p, &o);
    wf_error_capture(NULL, 0);
    return rc;
}

/* The most elements of one trainable parameter of a transformer layer (a
 * layer's op's, this tp rank's part).  Every stage holds a layer and its
 * parameters lie in buckets of that stage, so ZeRO's bucket and gather
 * buffers (zero_plan.c: first fit of whole buckets) hold at least this many. */
static double largest_layer_param(const Program *p) {
    long most = 0;
    for (int i = 0; i < p->n_ops; i++)
        for (int k = 0; p->ops[i].layer >= 0 && k < p->ops[i].n_param; k++) {
            const ir_param *q = &p->params[p->ops[i].param[k]];
            if (!q->frozen && q->numel > most) most = q->numel;
        }
    return (double)most;
}

/* Layer 0's trainable parameters in the order their gradients complete
 * (p->grad_order), their elements into S->lparam[ti]: buckets.c packs them
 * so, and every layer's are alike; and the most of two next to each other
 * in that order (S->lpair[ti]). */
static void record_layer_params(search *S, int ti, const Program *p) {
    int *layer = malloc(sizeof(int) * ((size_t)p->n_params + 1)), n = 0;
    if (!layer) return;
    for (int k = 0; k < p->n_params; k++) layer[k] = -1;
    for (int i = 0; i < p->n_ops; i++)
        for (int k = 0; k < p->ops[i].n_param; k++)
            if (layer[p->ops[i].param[k]] < 0) layer[p->ops[i].param[k]] = p->ops[i].layer;
    double pair = 0;
    for (int r = 0; r < p->n_params; r++) {
        const ir_param *q = &p->params[p->grad_order[r]];
        if (layer[p->grad_order[r]] != 0 || q->frozen) continue;
        if (n < MAX_LPARAM) S->lparam[ti][n++] = q->numel;
        if (r > 0 && layer[p->grad_order[r - 1]] == 0 && !p->params[p->grad_order[r - 1]].frozen)
            pair = fmax(pair, (double)q->numel + (double)p->params[p->grad_order[r - 1]].numel);
    }
    S->n_lparam[ti] = n, S->lpair[ti] = pair;
    free(layer);
}

/* The most parameter elements one op of stage st holds (param16.c and
 * grad16.c widen that many into their float scratch; grad16.c only an op
 * with weight gradients: `grad`). */
static double stage_widest(const Program *p, int st, int grad) {
    long most = 0;
    for (int i = 0; i < p->n_ops; i++) {
        long n = 0;
        if (grad && !p->ops[i].grad_w) continue;
        for (int k = 0; p->ops[i].chunk % p->pp == st && k < p->ops[i].n_param; k++) n += p->params[p->ops[i].param[k]].numel;
        if (n > most) most = n;
    }
    return (double)most;
}

/* The most parameter elements one layer op with weight gradients holds,
 * each aligned as param16.c's and grad16.c's widest() count them: every
 * stage holds a layer, so its float scratch (either's) holds at least this. */
static double layer_widest(const Program *p) {
    long most = 0;
    for (int i = 0; i < p->n_ops; i++) {
        const ir_op *o = &p->ops[i];
        long n = 0;
        for (int k = 0; o->layer >= 0 && o->grad_w && k < o->n_param; k++) n += align16(p->params[o->param[k]].numel);
        if (n > most) most = n;
    }
    return (double)most;
}

/* One activation slot of the first pipeline stage (as the memory model
 * counts it; the stage's region left out), and one activation-gradient set
 * (a stage has at least one, and its count is not the slots'):
 * fixed bytes per token (the embedding's) plus bytes per layer and token;
 * the last stage's slot beside its layers and its gradient set; and the
 * first and last stages' parameter, gradient and optimizer bytes beside
 * their layers and those of one layer (act_tok's fields, AT_*),
 * from two builds of the model cut to 2 stages of 1 and 2 layers each
 * (pipeline.stages), micro 1,
 * 2 microbatches, on one tp group, no ZeRO, parameters and gradients
 * stored in floats (param_storage, grad_accum "fp32": with 1 or 2 layers a
 * stage, "auto" stores 16 bits or not as the real stages may not; see
 * add16), and the most elements of one op of the first and last
 * stage.  Measured once per (tp, sp, recompute) with 1F1B, and again with
 * ZB-H1 for its layouts: its slots keep what the deferred weight-gradient
 * halves read, and its gradient sets the output gradients they wait for, a
 * layer's each (with 1F1B's, the 1008B GPT's zb-h1 builds planned 1.9
 * times the bound's slot and 18 times its gradient set, and did not fit).
 * All 0 (no bound) when tp is no power of 2 or a build fails. */
static const double *stage_bytes(search *S, const cand *c) {
    static const double none[AT_N];
    int tp = c->tp, sp = c->sp, rc = c->rc, zb = c->pp > 1 && c->sched == SCHED_ZBH1;
    int ti = tp_index(tp);
    if (ti < 0) return none;
    double *slot = S->act_tok[ti][sp][rc][zb];
    if (slot[0] >= 0) return slot;
    char b[9][64];
    snprintf(b[0], 64, "cluster.devices_per_node=%d", 2 * tp);
    snprintf(b[1], 64, "mesh.tp=%d", tp);
    snprintf(b[2], 64, "mesh.sp=%s", sp ? "true" : "false");
    snprintf(b[3], 64, "recompute=%s", RC_NAMES[rc]);
    snprintf(b[4], 64, "mesh.pp=2");
    snprintf(b[5], 64, "batch.global=2");
    const char *extra[] = { b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8],
                            "param_storage=fp32", "grad_accum=fp32", zb ? "pipeline.schedule=zb-h1" : NULL, NULL };
    double bytes[2] = { 0, 0 }, dset[2] = { 0, 0 }, lbytes[2] = { 0, 0 }, ldset[2] = { 0, 0 };
    double state[2][2][3];  /* [k][first, last][params, grads, optim] */
    memset(state, 0, sizeof state);
    for (int k = 0; k < 2; k++) {
        /* pinned: the partition pass's balance may give stage 0 three of 4
         * layers (a light LM head), which made this twice the per-layer
         * bytes and the bound prune layouts that fit */
        snprintf(b[6], 64, "model.layers=%d", 2 + 2 * k);
        snprintf(b[7], 64, "pipeline.stages.1=%d", 1 + k);
        snprintf(b[8], 64, "pipeline.stages.2=%d", 1 + k);
        Program p;
        char msg[512];
        int rc2 = build_small(S, &p, extra, msg, sizeof msg);
        if (rc2 == 0) {
            /* the slot and one gradient set (a share of the sets per slot put
             * interleaved layouts' bound above their plan) */
            bytes[k] = 4.0 * (double)p.act_numel[0];
            dset[k] = 4.0 * (double)p.dact_numel[0];
            lbytes[k] = 4.0 * (double)p.act_numel[1];
            ldset[k] = 4.0 * (double)p.dact_numel[1];
            if (k == 0) slot[AT_BIG] = largest_layer_param(&p);
            if (k == 0) slot[AT_WIDE0] = stage_widest(&p, 0, 1), slot[AT_WIDEL] = stage_widest(&p, 1, 1);
            if (k == 0) slot[AT_WIDE] = layer_widest(&p);
            if (k == 0) record_layer_params(S, ti, &p);
            for (int st = 0; st < 2; st++) {
                program_memory pm = program_memory_of(&p, st);
                state[k][st][0] = pm.params, state[k][st][1] = pm.grads, state[k][st][2] = pm.optim;
            }
        }
        program_free(&p);
        if (rc2 != 0) {
            memset(slot, 0, sizeof(double) * AT_N);
            return slot;
        }
    }
    double d = bytes[1] - bytes[0], f = bytes[0] - d;  /* stage 0 holds 1, then 2 layers */
    double lf = lbytes[0] - d;                          /* the last stage likewise */
    slot[AT_LAYER] = d > 0 ? d / S->seq : 0;
    slot[AT_FIXED] = f > 0 ? f / S->seq : 0;
    /* a gradient set: what a layer adds (ZB-H1's), and the rest */
    double dd = fmax(0, dset[1] - dset[0]), ldd = fmax(0, ldset[1] - ldset[0]);
    slot[AT_DDACT] = dd / S->seq, slot[AT_DACT] = fmax(0, dset[0] - dd) / S->seq;
    slot[AT_LFIXED] = lf > 0 ? lf / S->seq : 0;
    slot[AT_LDDACT] = ldd / S->seq, slot[AT_LDACT] = fmax(0, ldset[0] - ldd) / S->seq;
    for (int j = 0; j < 3; j++) {
        /* a layer's bytes: the first stage's growth (the last's is the same) */
        double dl = state[1][0][j] - state[0][0][j];
        slot[AT_DW + j] = dl > 0 ? dl : 0;
        slot[AT_W0 + j] = fmax(0, state[0][0][j] - slot[AT_DW + j]);
        slot[AT_WL + j] = fmax(0, state[0][1][j] - slot[AT_DW + j]);
    }
    return slot;
}

static void slot_bytes(search *S, const cand *c, int chunk_layers, double *fixed, double *per_layer, double *dact) {
    const double *v = stage_bytes(S, c);
    *fixed = v[AT_FIXED], *per_layer = v[AT_LAYER], *dact = v[AT_DACT] + chunk_layers * v[AT_DDACT];
}

/* A VLM's first stage, which alone holds the vision encoder and projector
 * (whole, or their tp shards), from two builds of the model cut to 2
 * stages of one tp group, pipeline.stages { l, 1 } with l = 1 and 2
 * language-model layers, micro 1, 2 microbatches, no ZeRO: its parameter,
 * gradient and optimizer bytes, and the size of its activation slot and of
 * one activation-gradient set, per token.  Measured once per (tp, sp,
 * recompute): sequence parallelism splits the encoder's stream by rows as
 * the language model's; parameters and gradients stored in floats, as
 * stage_bytes's (with "auto", the 1-layer builds of a 512-token vocabulary
 * kept floats where the real layouts store 16 bits: bounds up to 6% above
 * their plans); all 0 (no bound) when a build fails. */
static const double *vlm_stage0(search *S, int tp, int sp, int rc) {
    static const double none[V0_N];
    int ti = tp_index(tp);
    if (ti < 0) return none;
    double *v = S->vlm0[ti][sp][rc];
    if (v[0] >= 0) return v;
    char b[9][64];
    snprintf(b[0], 64, "cluster.devices_per_node=%d", 2 * tp);
    snprintf(b[1], 64, "mesh.tp=%d", tp);
    snprintf(b[2], 64, "mesh.sp=%s", sp ? "true" : "false");
    snprintf(b[3], 64, "recompute=%s", RC_NAMES[rc]);
    snprintf(b[4], 64, "mesh.pp=2");
    snprintf(b[5], 64, "batch.global=2");
    snprintf(b[6], 64, "pipeline.stages.2=1");
    const char *extra[] = { b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8],
                            "param_storage=fp32", "grad_accum=fp32", NULL };
    double m[2][V0_N];
    memset(m, 0, sizeof m);
    for (int l = 1; l <= 2; l++) {
        snprintf(b[7], 64, "model.llm.layers=%d", l + 1);
        snprintf(b[8], 64, "pipeline.stages.1=%d", l);
        Program p;
        char msg[512];
        int rc2 = build_small(S, &p, extra, msg, sizeof msg);
        if (rc2 == 0) {
            program_memory pm = program_memory_of(&p, 0);
            double *x = m[l - 1], tokens = (double)p.micro * p.seq;
            x[V0_W] = pm.params, x[V0_G] = pm.grads, x[V0_O] = pm.optim;
            x[V0_ACT] = 4.0 * (double)p.act_numel[0] / tokens;
            x[V0_DACT] = 4.0 * (double)p.dact_numel[0] / tokens;
            x[V0_WIDE] = stage_widest(&p, 0, 0), x[V0_WIDEG] = stage_widest(&p, 0, 1);
        }
        program_free(&p);
        if (rc2 != 0) {
            memset(m, 0, sizeof m);
            break;
        }
    }
    for (int k = 0; k < 3; k++) {
        v[k] = m[0][k];
        v[V0_DW + k] = m[1][k] > m[0][k] ? m[1][k] - m[0][k] : 0;
    }
    v[V0_ACT] = m[0][V0_ACT], v[V0_DACT] = m[0][V0_DACT];
    v[V0_WIDE] = m[0][V0_WIDE], v[V0_WIDEG] = m[0][V0_WIDEG];
    return v;
}

/* An arena of f0 + l df bytes in floats (l >= 1 layers) that param16.c or
 * grad16.c may store in 2 bytes a value beside a float scratch of at least
 * `scratch` elements ("auto" takes 16 bits only where that saves bytes on
 * every stage, so a stage holds the smaller of the two at most):
 * min(f, f / 2 + 4 scratch) = f / 2 + min(f / 2, 4 scratch), at least
 * f / 2 + min(f(1) / 2, 4 scratch), added to *a + *b l. */
static void add16(const search *S, double f0, double df, double scratch, double *a, double *b) {
    if (S->el == 2) *a += f0 / 2 + fmin((f0 + df) / 2, 4 * scratch), *b += df / 2;
    else *a += f0, *b += df;
}

/* A VLM's lower bounds, bytes: its first stage's (the encoder and
 * projector, the embedding and at least one layer per chunk: whatever the
 * partition, refined or not, gives it) and what every rank holds beside:
 * the images, masks, tokens and targets of the step's microbatches
 * (memory.c's scratch). */
static void vlm_lower_bound(search *S, const cand *c, int accum, double *first, double *every) {
    const double *v = vlm_stage0(S, c->tp, c->sp, c->rc);
    int dp = c->dp;
    double extra = c->virt - 1;  /* stage 0's layers beyond the one measured */
    double w = v[V0_W] + extra * v[V0_DW], g = v[V0_G] + extra * v[V0_DG], o = v[V0_O] + extra * v[V0_DO];
    if (c->zero >= 3) w /= dp;
    if (c->offload) w = 0, o = 0;
    if (c->zero >= 1) o /= dp;
    /* v's are floats: a 16-bit plan may store them in 2 bytes beside a
     * float scratch of the stage's widest op (add16); ZeRO-2's gradient
     * shard is floats; ZeRO-1 reduces in place (its float parts beside
     * 16-bit gradients, stage_state's, are left out) */
    double w16 = 0, g16 = 0, unused = 0;
    add16(S, w, 0, v[V0_WIDE], &w16, &unused);
    if (c->zero >= 2) g16 = g / dp;
    else add16(S, g, 0, v[V0_WIDEG], &g16, &unused);
    w = w16, g = g16;
    double tokens = (double)c->micro * S->seq;
    int slots = stage_slots_of(c->pp > 1 ? c->sched : SCHED_1F1B, c->pp, accum, c->virt, 1);
    *first = w + g + o + (v[V0_ACT] * slots + v[V0_DACT]) * tokens;
    *every = (S->image_bytes * c->micro + tokens) * accum + 2 * 4.0 * tokens * accum;
}

/* The arenas zero_plan.c lays out for a stage of one layer in one chunk,
 * elements (0 0: the build failed): the middle stage of a 3-stage, 3-layer
 * build with c's tp, sp, recompute and bucket size and the plan's prefetch,
 * at ZeRO-3 (its bucket buffers are ZeRO-2's: plan_bucket_buffers does not
 * read the stage).  That layer's spans already force first fit past the
 * most live at once: each bucket has one gather buffer for all its spans,
 * and backward's spans touch (a gather is issued at the previous one's
 * start), so at 1008B's tp 8, 128 MiB, qkv, proj, fc1 and fc2 lie side by
 * side, proj beside fc1 and fc2 beside the next layer's qkv: fc1 (larger
 * than qkv) cannot go under proj, the arena is the whole layer where the
 * most live at once is fc1 + fc2.  A stage of more layers or chunks places
 * the same layer's buckets among more (and longer: prefetch crosses layers)
 * spans, first fit at each step taking the lowest gap (an argument, not a
 * proof: first fit is not monotone in general; e2e_plan_search checks the
 * bound against every build).  One stage (pp 1) runs forward and backward
 * as one function, gathers running from one into the other: its arenas
 * come from a one-stage, one-layer build (the embedding's and the head's
 * buckets beside the layer's).  Cached by tp, sp, recompute, bucket size
 * and pp 1 or not; the build's stage arenas do not depend on dp. */
static const struct zero_arena *zero_arena(search *S, const cand *c) {
    for (int i = 0; i < S->n_arenas; i++) {
        const struct zero_arena *a = &S->arenas[i];
        if (a->tp == c->tp && a->sp == c->sp && a->rc == c->rc && a->one == (c->pp == 1) && a->mb == c->bucket_mb) return a;
    }
    if (S->n_arenas == S->cap_arenas) {
        int cap = S->cap_arenas ? 2 * S->cap_arenas : 32;
        struct zero_arena *t = realloc(S->arenas, sizeof *t * (size_t)cap);
        if (!t) return NULL;
        S->arenas = t, S->cap_arenas = cap;
    }
    struct zero_arena *a = &S->arenas[S->n_arenas++];
    *a = (struct zero_arena){ c->tp, c->sp, c->rc, c->pp == 1, c->bucket_mb, 0, 0 };
    int one = a->one, st = one ? 0 : 1;
    char b[6][64];
    snprintf(b[0], 64, "cluster.devices_per_node=%d", 2 * c->tp);
    snprintf(b[1], 64, "mesh.tp=%d", c->tp);
    snprintf(b[2], 64, "mesh.sp=%s", c->sp ? "true" : "false");
    snprintf(b[3], 64, "recompute=%s", RC_NAMES[c->rc]);
    snprintf(b[4], 64, "buckets.mb=%g", c->bucket_mb);
    snprintf(b[5], 64, "cluster.nodes=%d", one ? 1 : 3);
    const char *extra[] = { b[0], b[1], b[2], b[3], b[4], b[5], "mesh.dp=2", "zero=3",
                            one ? "mesh.pp=1" : "mesh.pp=3", one ? "batch.global=2" : "batch.global=6",
                            one ? "model.layers=1" : "model.layers=3", one ? NULL : "pipeline.stages.1=1",
                            "pipeline.stages.2=1", "pipeline.stages.3=1", NULL };
    Program p;
    char msg[512];
    if (build_small(S, &p, extra, msg, sizeof msg) == 0 && p.zero >= 3 && p.pp == (one ? 1 : 3)) {
        a->buckets = (double)p.grad_buf_numel[st];
        a->gathers = (double)(p.gather_numel[st] - (p.param_numel[st] - p.train_numel[st]));  /* less the frozen */
    } else if (getenv("WEFT_PLAN_DEBUG")) {
        fprintf(stderr, "debug: zero arena build failed: %s\n", msg);
    }
    program_free(&p);
    return a;
}

/* ZeRO's buffers on every stage, bytes, a lower bound: ZeRO-2's gradient
 * bucket buffers and ZeRO-3's gather buffers (zero_plan.c: first fit of
 * whole buckets, disjoint while live together), in 2 bytes (param16,
 * grad16) or more for 16-bit plans, 4 for fp32 (memory.c).  A chunk's
 * layers are a run of parameters buckets.c cuts only where a bucket would
 * pass buckets.mb (C elements): the run lies in one bucket (at least a
 * layer's T elements), or two buckets side by side hold more than C.  Two
 * buckets side by side are live together: a bucket buffer from its first
 * gradient to the next bucket's completion, a gather (prefetched one ahead,
 * zero_prefetch 1 or more) from the previous gather's start, and in
 * backward nothing is gathered between them.  Two parameters next in the
 * run lie in one bucket or in two side by side.  So each kind holds
 * min(T, C), the most of two parameters next in a layer (lpair), and the
 * largest layer parameter P; under full recompute a layer's forward runs
 * again at once, its buckets (T at least) all gathered.  Gathers with
 * zero_prefetch 0 or zero_prefetch_mb: P.  None for a VLM: its encoder's
 * layers lie on the first stage only. */
static void zero_buffer_elems(search *S, const cand *c, double *buckets, double *gathers) {
    *buckets = *gathers = 0;
    if (c->zero < 2 || S->vlm) return;
    double P = stage_bytes(S, c)[AT_BIG], T = 0;
    int ti = tp_index(c->tp);
    for (int i = 0; ti >= 0 && i < S->n_lparam[ti]; i++) T += (double)S->lparam[ti][i];
    double pair = fmax(fmax(P, ti >= 0 ? S->lpair[ti] : 0), fmin(T, c->bucket_mb * 1048576.0 / S->el));
    *buckets = pair;
    *gathers = c->zero < 3 ? 0 : c->rc == 2 ? fmax(T, pair) : S->prefetch ? pair : P;
    /* and no less than first fit's arenas for a stage of one layer */
    const struct zero_arena *a = zero_arena(S, c);
    if (a) *buckets = fmax(*buckets, a->buckets);
    if (a && c->zero >= 3) *gathers = fmax(*gathers, a->gathers);
}

static double zero_buffer_bound(search *S, const cand *c) {
    double buckets, gathers;
    zero_buffer_elems(S, c, &buckets, &gathers);
    return S->el * (buckets + gathers);
}

/* A pipeline stage's parameters, gradients, optimizer state and ZeRO's
 * buffers, bytes, a lower bound: the first stage with the embedding, the
 * last with the head, `layers` layers.  v's parameters and gradients are
 * floats (stage_bytes); a 16-bit plan may store the working parameters, the
 * gradients (ZeRO 0 and 1) or ZeRO's bucket buffers in 2 bytes (param16.c,
 * grad16.c), then widening one op's into a float scratch, at least the
 * stage's widest op (a layer's on every stage, the embedding's or the head's
 * on the ends), and summing a bucket over dp in a float staging (dp > 1,
 * fp32 dp sums), at least the largest layer parameter: add16.  (Halving
 * only, with no scratch, left ZeRO-3 builds at tp 4 of the 1008B GPT
 * 5 GiB below their plans and built ones that do not fit.)  ZeRO-1
 * reduces in place in the arena (zero.c); beside 16-bit gradients it keeps
 * floats only for the parts summed after the dp sum (runtime grad16.c:
 * sequence parallelism's norms and biases, the tied wte's 1 / dp on a
 * pipeline's ends), left out of this bound. */
static void stage_state(search *S, const cand *c, const double *v, int first, int last, double *a, double *b) {
    double zw = c->offload ? 0 : c->zero >= 3 ? 1.0 / c->dp : 1, zg = c->zero >= 2 ? 1.0 / c->dp : 1;
    double zo = c->offload ? 0 : c->zero >= 1 ? 1.0 / c->dp : 1;
    double buckets, gathers;
    zero_buffer_elems(S, c, &buckets, &gathers);
    double wide = fmax(v[AT_WIDE], fmax(first ? v[AT_WIDE0] : 0, last ? v[AT_WIDEL] : 0));
    double staging = c->dp > 1 && S->dp_el == 4 ? v[AT_BIG] : 0;
    /* one stage (pp 1) holds the embedding and the head: at least either's
     * (a tied wte is one table there, a copy on each end of a pipeline) */
    double w0 = fmax(first ? v[AT_W0] : 0, last ? v[AT_WL] : 0), g0 = fmax(first ? v[AT_G0] : 0, last ? v[AT_GL] : 0);
    double o0 = fmax(first ? v[AT_O0] : 0, last ? v[AT_OL] : 0);
    *a = o0 * zo, *b = v[AT_DO] * zo;
    add16(S, w0 * zw + 4 * gathers, v[AT_DW] * zw, wide, a, b);
    if (c->zero >= 2) {  /* the float shard, and the bucket buffers */
        *a += g0 * zg, *b += v[AT_DG] * zg;
        add16(S, 4 * buckets, 0, wide + staging, a, b);
    } else {
        add16(S, g0, v[AT_DG], wide + staging, a, b);
    }
}

/* Bytes per rank on the fullest stage of a pipeline, a lower bound that
 * follows the stages one by one: stage s holds l_s layers (at least one a
 * chunk), the first also the embedding and the last the head (their
 * parameter, gradient and optimizer bytes measured, stage_bytes), and the
 * schedule's own slots of stage s (1F1B: the first holds as many
 * microbatches as there are stages, the last one), each slot the
 * activations of its layers; the fullest stage of the best possible split
 * (least_max_stage) is the bound.  The uneven ends matter in deep
 * pipelines: with 1 or 2 layers a stage, the embedding or a layer more on
 * a stage is a large share of it.  Interleaved: a slot holds a chunk's
 * layers, at least one. */
static double deep_lower_bound(search *S, const cand *c, int accum) {
    const double *v = stage_bytes(S, c);
    const int *slots = each_stage_slots(c->sched, c->pp, accum, c->virt);
    if (!slots || c->pp > S->layers) return 0;
    double tokens = (double)c->micro * S->seq;
    const int *split = predicted_split(S, c);
    if (split) {
        /* the split the build will get: each stage's bytes, the fullest's */
        int K = c->pp * c->virt;
        double m = 0;
        for (int s = 0; s < c->pp; s++) {
            double layers = 0, slot = 0, most = 0, other = 0;  /* a slot is sized for the stage's largest chunk */
            for (int k = s; k < K; k += c->pp) {
                layers += split[k];
                most = fmax(most, split[k]);
                double x = split[k] * v[AT_LAYER] + (k == 0 ? v[AT_FIXED] : k == K - 1 ? v[AT_LFIXED] : 0);
                slot = fmax(slot, x);
                if (k != K - 1) other = fmax(other, x);
            }
            /* interleaved: the loss chunk, when its stage holds one of its
             * microbatches at a time (memory_slot.c's lone_chunk), keeps its
             * activations once in the region and sizes no slot, so the last
             * stage holds at least slots - 1 of the other chunks' and one
             * of the largest (the plan's [3*30 2 4] of Korthikanti's 175B
             * on 64 GPUs was 65 MiB below a bound of 25 slots of its
             * 4-layer chunk) */
            double acts = slots[s] * slot;
            if (c->virt > 1 && s == (K - 1) % c->pp && slots[s] >= 1) acts = (slots[s] - 1) * other + slot;
            int first = s == 0, last = s == c->pp - 1;
            double sa, sb;
            stage_state(S, c, v, first, last, &sa, &sb);
            /* a set (as big as the first or last stage's with a layer at
             * least) per input-gradient half waiting for its weight half */
            double dact = (first ? v[AT_DACT] : last ? v[AT_LDACT] : fmin(v[AT_DACT], v[AT_LDACT])) +
                          most * (first ? v[AT_DDACT] : last ? v[AT_LDDACT] : fmin(v[AT_DDACT], v[AT_LDDACT]));
            dact *= slots[c->pp + s];
            m = fmax(m, sa + layers * sb + (acts + dact) * tokens);
            if (debug_bound_stages)
                fprintf(stderr, "debug: stage %d bound: state %.3f GiB (%.0f layers), acts %.3f (%d slots of %.3f), act grads %.3f\n", s,
                        (sa + layers * sb) / 1073741824.0, layers, acts * tokens / 1073741824.0, slots[s],
                        slot * tokens / 1073741824.0, dact * tokens / 1073741824.0);
        }
        return m;
    }
    double *a = malloc(sizeof(double) * 2 * (size_t)c->pp), *b = a ? a + c->pp : NULL;
    if (!a) return 0;
    for (int s = 0; s < c->pp; s++) {
        int first = s == 0, last = s == c->pp - 1;
        double fixed_state, layer_state;
        stage_state(S, c, v, first, last, &fixed_state, &layer_state);
        double fixed_act = first ? v[AT_FIXED] : last ? v[AT_LFIXED] : 0;
        double dact = first ? v[AT_DACT] : last ? v[AT_LDACT] : 0;
        double ddact = first ? v[AT_DDACT] : last ? v[AT_LDDACT] : fmin(v[AT_DDACT], v[AT_LDDACT]);
        if (c->virt == 1) {
            a[s] = fixed_state + (slots[s] * fixed_act + dact) * tokens;
            b[s] = layer_state + (slots[s] * v[AT_LAYER] + slots[c->pp + s] * ddact) * tokens;
        } else {  /* which chunk a slot holds is not known: one layer each, no embedding or head */
            a[s] = fixed_state + (slots[s] * v[AT_LAYER] + dact) * tokens;
            b[s] = layer_state;
        }
    }
    double m = least_max_stage(S->layers, c->pp, c->virt, a, b);
    free(a);
    return m;
}

/* Bytes per rank on the fullest stage, a lower bound: its share of the
 * parameters, gradients and optimizer state (ZeRO shards, offload removes),
 * and its activation slots times the activations of its layers.  A VLM's
 * first stage also holds the encoder (vlm_lower_bound). */
static double mem_lower_bound(search *S, const cand *c, int accum) {
    double per = (double)S->params / ((double)c->tp * c->pp);
    double w = S->bw / (c->zero >= 3 ? c->dp : 1), g = S->bg / (c->zero >= 2 ? c->dp : 1);
    double o = c->offload ? 0 : S->bo / (c->zero >= 1 ? c->dp : 1);
    if (c->offload) w = 0;
    if (S->vlm) {
        /* the whole model's average share, or the first stage's, which holds
         * the encoder (slot_bytes's layer-count override is no VLM field) */
        double avg = per * (w + g + o), first, every;
        vlm_lower_bound(S, c, accum, &first, &every);
        return (avg > first ? avg : first) + every;
    }
    /* a pipeline: stage by stage (the average share's state beside the
     * fullest stage's slots is no bound: with an uneven split, as the
     * partition pass's [7 9 8*14] or a refined one, stage 0 holds the most
     * slots and fewer layers; its sum was above the plan of the 1T GPT's
     * refined [15 17 16*6]) */
    double deep = c->pp > 1 ? deep_lower_bound(S, c, accum) : 0;
    if (deep > 0) return deep;
    int slots = stage_slots(c->pp > 1 ? c->sched : SCHED_1F1B, c->pp, accum, c->virt);
    int chunk_layers = S->layers / (c->pp * c->virt);
    double fixed, per_layer, dact;
    slot_bytes(S, c, chunk_layers, &fixed, &per_layer, &dact);
    /* the slots, and at least one activation-gradient set */
    double acts = ((fixed + per_layer * chunk_layers) * slots + dact) * c->micro * S->seq;
    double avg = per * (w + g + o) + acts + zero_buffer_bound(S, c);
    if (c->pp == 1) {  /* its one stage as deep_lower_bound takes a pipeline's (stage_state) */
        double a, b;
        stage_state(S, c, stage_bytes(S, c), 1, 1, &a, &b);
        avg = fmax(avg, a + b * S->layers + acts);
    }
    return avg;
}

static void bounds(search *S, cand *c, int accum, int probe);

/* c, pruned by the memory lower bound, among the five best such by estimate */
static void keep_mem_pruned(search *S, cand *c, int accum) {
    note_least_need(S, c->mem_lb);
    bounds(S, c, accum, 0);
    int n = S->n_mem_pruned, cap = (int)(sizeof S->mem_pruned / sizeof S->mem_pruned[0]);
    if (n == cap && c->est >= S->mem_pruned[n - 1].est) return;
    int i = n < cap ? n++ : n - 1;
    while (i > 0 && S->mem_pruned[i - 1].est > c->est) S->mem_pruned[i] = S->mem_pruned[i - 1], i--;
    S->mem_pruned[i] = *c;
    S->mem_pruned[i].state = 2;
    char need[32], have[32];
    snprintf(S->mem_pruned[i].why, sizeof S->mem_pruned[i].why, "does not fit: at least %s of %s GiB (lower bound)",
             gib_text(c->mem_lb, need), device_gib_text(S->device_bytes, have));
    S->n_mem_pruned = n;
}

/* Seconds per microbatch of one transformer block and of the ops before
 * (embedding) and after the blocks (LM head, loss) for c's tp, sp, recompute and micro, as
 * simulate prices them (simulate_layer_seconds, with --calibration): from a
 * one-block, one-stage build, cached; -1 when that build fails (a VLM, whose
 * encoder is no block, is not probed). */
static int layer_seconds(search *S, cand *c, double t[3]) {
    if (S->vlm) return -1;
    for (int i = 0; i < S->n_probes; i++) {
        const struct probe *q = &S->probes[i];
        if (q->tp == c->tp && q->sp == c->sp && q->rc == c->rc && q->micro == c->micro) {
            c->probe = i;
            t[0] = q->before, t[1] = q->layer, t[2] = q->after;
            return q->ok ? 0 : -1;
        }
    }
    if (S->n_probes == S->cap_probes) {
        int cap = S->cap_probes ? 2 * S->cap_probes : 64;
        struct probe *t = realloc(S->probes, sizeof *t * (size_t)cap);
        if (!t) return -1;
        S->probes = t, S->cap_probes = cap;
    }
    c->probe = S->n_probes;
    struct probe *q = &S->probes[S->n_probes++];
    *q = (struct probe){ c->tp, c->sp, c->rc, c->micro, 0, 0, 0, 0, 0, "" };
    char b[7][64];
    snprintf(b[0], 64, "cluster.devices_per_node=%d", c->tp);
    snprintf(b[1], 64, "mesh.tp=%d", c->tp);
    snprintf(b[2], 64, "mesh.sp=%s", c->sp ? "true" : "false");
    snprintf(b[3], 64, "recompute=%s", RC_NAMES[c->rc]);
    snprintf(b[4], 64, "batch.micro=%d", c->micro);
    snprintf(b[5], 64, "batch.global=%d", c->micro);
    snprintf(b[6], 64, "model.layers=1");
    const char *extra[] = { b[0], b[1], b[2], b[3], b[4], b[5], b[6], NULL };
    Program p;
    int rc = build_small(S, &p, extra, q->refused, sizeof q->refused);
    if (rc != 0 && !q->refused[0]) snprintf(q->refused, sizeof q->refused, "?");
    if (rc == 0) q->refused[0] = 0;
    if (rc == 0 && simulate_layer_seconds(&p, &search_cal, &q->before, &q->layer, &q->after) == 0) q->ok = 1;
    program_free(&p);
    S->probed++;
    t[0] = q->before, t[1] = q->layer, t[2] = q->after;
    return q->ok ? 0 : -1;
}

/* The least possible cost of the costliest of K chunks of whole blocks
 * (each holds at least one; the first also t[0], the last t[2]; a block
 * costs t[1]), whatever the split: partition.c's balance or the plan's own
 * pipeline.stages cannot do better.  The answer is k blocks plus nothing,
 * t[0] or t[2], for the least k that lets the chunks hold all L blocks. */
static double least_max_chunk(int L, int K, const double t[3]) {
    if (K == 1) return L * t[1] + t[0] + t[2];
    if (!(t[1] > 0)) return fmax(t[0], t[2]);
    double best = INFINITY;
    for (int k = 1; k <= L; k++)
        for (int e = 0; e < 3; e++) {
            double M = k * t[1] + (e == 0 ? 0 : t[e == 1 ? 0 : 2]);
            if (M >= best) continue;
            /* blocks each chunk can take under M (1e-9: k * t[1] / t[1] may round below k) */
            double cap0 = floor((M - t[0]) / t[1] + 1e-9), capl = floor((M - t[2]) / t[1] + 1e-9);
            double mid = floor(M / t[1] + 1e-9);
            if (cap0 >= 1 && capl >= 1 && cap0 + capl + (K - 2) * mid >= L) best = M;
        }
    return isfinite(best) ? best * (1 - 1e-9) : 0;  /* (k = L always fits: never 0) */
}

/* The link simulate prices c's dp collectives on (simulate.c's group_link
 * for the default mesh order tp-dp-pp, where a dp group's members are tp
 * apart): inside a node when the group is, else the NICs of its members on
 * a node side by side, never more than the link inside the node. */
static cost_link dp_link(const search *S, const cand *c) {
    if (search_cal.loaded && !search_cal.cuda)
        return (cost_link){ "calibrated", search_cal.link_gbs, search_cal.link_latency_us, 0 };
    cost_link intra = { "intra", S->intra_gbs, S->intra_lat, S->intra_bus };
    if (search_cal.loaded && search_cal.nccl_bus_gbs > 0)
        intra.bus_gbs = search_cal.nccl_bus_gbs, intra.latency_us = search_cal.nccl_latency_us;
    if (c->dp <= 1 || (double)c->dp * c->tp <= S->dpn) return intra;
    int k = c->tp < S->dpn ? S->dpn / c->tp : 1;
    if (k > c->dp) k = c->dp;
    double bus = (S->inter_bus > 0 ? S->inter_bus : S->inter_gbs) * k;
    double in = intra.bus_gbs > 0 ? intra.bus_gbs : intra.gbs;
    return (cost_link){ "inter", S->inter_gbs, S->inter_lat, bus < in ? bus : in };
}

/* The buckets of a stage of c's (each costs its collectives' latency): its
 * layers' parameters packed as buckets.c packs them (a bucket takes the
 * next parameter while it stays within buckets.mb of the plan's gradient
 * type; from ZeRO-2 on, a chunk starts a bucket), one more for the
 * embedding or the head; from the bytes alone when the layer's parameters
 * are not known. */
static double stage_buckets(const search *S, const cand *c) {
    double cap = c->bucket_mb * 1048576.0 / S->el;  /* elements */
    int ti = tp_index(c->tp), lc = S->layers / (c->pp * c->virt);
    if (ti < 0 || !S->n_lparam[ti]) {
        double n = (double)S->params / ((double)c->tp * c->pp);
        return fmax(1, ceil(n / cap)) + (c->zero >= 2 ? c->virt - 1 : 0);
    }
    long nb = 1;
    double cur = -1;  /* the open bucket's elements, < 0: none */
    for (int k = 0; k < c->virt; k++) {
        if (c->zero >= 2) cur = -1;
        for (int l = 0; l < (lc > 0 ? lc : 1); l++)
            for (int i = 0; i < S->n_lparam[ti]; i++) {
                double x = (double)S->lparam[ti][i];
                if (cur < 0 || cur + x > cap) nb++, cur = x;
                else cur += x;
            }
    }
    return (double)nb;
}

/* The dp communication a step leaves exposed, s, as simulate_plan prices it
 * for a stage of c's (its formulas, on the average stage): the stage's
 * parameters of a rank in buckets of c's size, their collectives (and each
 * one's CPU in MPI calls) against
 * the forward f and backward b of one microbatch of its chunk.  Plain dp:
 * the all-reduce beyond the last backward, never less than the last
 * bucket's; ZeRO-1, 2: the reduce-scatter so (ZeRO-2: every microbatch)
 * and the all-gather after the step; ZeRO-3: every microbatch's
 * reduce-scatter and backward all-gather beyond its backward and forward
 * all-gather beyond its forward. */
static double dp_exposed(const search *S, const cand *c, int accum, double f, double b) {
    if (c->dp <= 1) return 0;
    cost_link l = dp_link(S, c);
    double n = (double)S->params / ((double)c->tp * c->pp), nb = stage_buckets(S, c);
    double one_ar = cost_allreduce_ring(S->dp_el * n / nb, c->dp, &l);
    double one_rs = cost_reduce_scatter_ring(S->dp_el * n / nb, c->dp, &l);
    double ar = nb * one_ar, rs = nb * one_rs, ag = nb * cost_allgather_ring(S->p_el * n / nb, c->dp, &l);
    double late = fmax(rs - b, 0);
    /* each non-blocking collective's CPU in MPI calls (a CPU calibration's
     * dp_bucket_us; 0 otherwise), as simulate adds it */
    double call = search_cal.dp_bucket_s;
    switch (c->zero) {
    case 0: return fmax(fmax(ar - b, 0), one_ar) + nb * call;
    case 1: return fmax(late, one_rs) + ag + nb * call;
    case 2: return (accum - 1) * late + fmax(late, one_rs) + ag + accum * nb * call;
    default: return accum * (fmax(rs + ag - b, 0) + fmax(ag - f, 0)) + 3.0 * accum * nb * call;
    }
}

static void bounds(search *S, cand *c, int accum, int probe) {
    double lb = S->flops_step / (S->world * S->peak * 1e12);
    /* full recompute runs the blocks' forward twice: + a third of their FLOPs */
    double h = S->hidden, L = S->layers;
    double blocks = 72 * L * h * h, total = blocks + 6 * S->vocab * h + 12 * L * h * S->seq;
    if (c->rc == 2) lb *= 1 + blocks / total / 3;
    lb *= bubble_factor(c->sched, c->pp, accum, c->virt);
    c->lb = lb;
    double eff = cost_gemm_efficiency((double)c->micro * S->seq, 4.0 * h / c->tp, h);
    /* nominal bandwidths: the estimate only orders the candidates; simulate prices them */
    cost_link intra = { "intra", S->intra_gbs, S->intra_lat, 0 }, inter = { "inter", S->inter_gbs, S->inter_lat, 0 };
    double act_bytes = (double)c->micro * S->seq * h * S->el;
    double tp = c->tp > 1 ? (c->rc == 2 ? 6 : 4) * cost_allreduce_ring(act_bytes, c->tp, &intra) : 0;
    tp *= (L / c->pp) * accum * bubble_factor(c->sched, c->pp, accum, c->virt);
    double t[3], pipe = lb / (eff > 0 ? eff : 1) + tp + (c->rc == 1 ? 0.02 * lb : 0);
    double chunk = pipe / ((double)accum * c->virt);  /* one microbatch of a chunk, forward and backward */
    if (probe && layer_seconds(S, c, t) != 0) {
        /* the one-block build was refused (micro * seq * vocab over 32 bits,
         * a kernel the backend lacks): this one likely is too, so it is
         * built last, if the cap allows */
        pipe = INFINITY;
    } else if (probe) {
        /* simulate's own per-op prices: every stage runs accum microbatches
         * of its chunks one at a time, so the span (and the step) is no
         * shorter than accum times the busiest stage's chunks, which hold at
         * least the average of every block and the rest, at least the
         * costliest chunk of the best split (least_max_chunk), and on the
         * first and last stage one block per chunk beside the embedding or
         * the head.  2BW's steady
         * step is a difference of two spans: only the FLOP bound. */
        double stage = fmax((L * t[1] + t[0] + t[2]) / c->pp, least_max_chunk(S->layers, c->pp * c->virt, t));
        /* interleaved: stage 0 holds the embedding and the last stage the
         * head, beside one block in each of their virt chunks */
        if (c->pp > 1) stage = fmax(stage, c->virt * t[1] + fmax(t[0], t[2]));
        double busy = accum * stage;
        if (c->pp == 1 || c->sched != SCHED_2BW) c->lb = lb = fmax(lb, busy);
        /* gpipe, 1F1B, interleaved: the last stage's first op waits for
         * microbatch 0's forward through the chunks before it, and its last
         * (a backward) is followed by that backward through them; with one
         * chunk a stage those hold everything but the last stage, which holds
         * the head and a block at least (the more it holds, the longer:
         * accum >= 1); with more, the first pp - 1 chunks hold a block each
         * and the first the embedding.  (zb-h1's last ops are weight
         * gradients, which nothing waits for: not bounded so.) */
        if (c->pp > 1 && c->sched <= SCHED_INTERLEAVED) {
            double T = L * t[1] + t[0] + t[2], last = c->virt * t[1] + t[2];
            double fill = c->virt == 1 ? T - last : (c->pp - 1) * t[1] + t[0];
            c->lb = lb = fmax(lb, fill + accum * last);
        }
        /* the estimate: the schedule's bubble, and each microbatch's sends
         * between stages in both directions (a 1/tp slice, then all-gathered
         * inside the tp group) */
        double send = 4.0 * c->micro * S->seq * h;
        double p2p = c->pp > 1 ? cost_p2p(send / c->tp, c->dp * c->tp >= S->dpn ? &inter : &intra) +
                                     cost_allgather_ring(send, c->tp, &intra) : 0;
        /* the one-block build ran tp ranks on its node, whose threads buy
         * more than the candidate's node's ranks get (simulate's thread_gain) */
        int node = S->world < S->dpn ? S->world : S->dpn, cores = search_cal.cores;
        double work = busy * simulate_thread_gain(c->tp, &search_cal) / simulate_thread_gain(node, &search_cal);
        pipe = (work + 2.0 * accum * c->virt * p2p) * bubble_factor(c->sched, c->pp, accum, c->virt);
        /* a CPU node with more ranks than cores (simulate's core_share):
         * its ranks share the cores, every rank computing at once (one
         * stage: ranks / cores), or one stage's at a time on cores whose
         * other ranks wait, the busiest core setting the pace: bound in
         * stage order (trace_bound_slowdown) when weft/bind.h's rule binds
         * them and the stages hold whole ranks, else placed at random
         * (trace_placed_slowdown), whichever is slower.  Where the plan's
         * "auto" binds and placed prices lower, the candidate says "off". */
        c->bind_off = 0;
        if (search_cal.loaded && !search_cal.cuda && node > cores) {
            int g = (int)lround((double)node / c->pp), whole = g >= 1 && g * c->pp == node;
            int size[WF_AXES] = { 0 }, stages = c->pp;
            wf_axis axes[WF_AXES];
            char problem[160], valid[200];
            size[WF_AXIS_DP] = c->dp, size[WF_AXIS_TP] = c->tp, size[WF_AXIS_PP] = c->pp;
            if (wf_mesh_layout(S->order, size, axes, problem, sizeof problem, valid, sizeof valid) == 0)
                stages = simulate_node_stages(axes, WF_AXES, c->pp, node, NULL);
            int bound = whole && wf_bind_decide(S->bind, node, cores, stages, c->tp, 1) == WF_BIND_BOUND;
            double placed = trace_placed_slowdown(g, node, cores);
            double share = bound ? trace_bound_slowdown(g, node, cores) : placed;
            if (bound && S->bind == WF_BIND_AUTO && placed < share) share = placed, c->bind_off = 1;
            pipe = fmax(pipe * share, work * node / cores);
        }
        chunk = (L * t[1] + t[0] + t[2]) / (c->pp * c->virt);
    }
    /* the dp collectives against a chunk's forward and backward (a third
     * of it forward; full recompute runs the forward again in backward),
     * and AdamW's step as simulate prices it */
    double fwd = chunk * (c->rc == 2 ? 0.25 : 1.0 / 3), n = (double)S->params / ((double)c->tp * c->pp);
    double optim = simulate_optimizer_seconds(n, c->zero, c->dp, S->hbm, &search_cal);
    double dp = isfinite(chunk) ? dp_exposed(S, c, accum, fwd, chunk - fwd) : 0;
    c->est = pipe + dp + optim + (c->offload ? 0.5 * lb : 0);
}

/* ---- enumeration -------------------------------------------------------- */

static int add(search *S, const cand *c) {
    if (S->n >= MAX_CAND) return -1;
    S->c[S->n++] = *c;
    return 0;
}

/* The arithmetic rules on tp and pp alone (RULES 0-2): the rule that
 * rules the pair out, or -1.  The enumeration and the nearest global batch
 * (explain_none) must agree on them. */
static int tp_pp_rule(const search *S, int tp, int pp) {
    if (S->heads % tp || (S->kv_heads && S->kv_heads % tp) || (S->ffn_hidden && S->ffn_hidden % tp) ||
        (S->vit_heads && S->vit_heads % tp) || (S->vit_mlp && S->vit_mlp % tp))
        return 0;
    if (tp > S->dpn || S->dpn % tp) return 1;
    if (pp > S->layers) return 2;
    return -1;
}

static void enumerate(search *S) {
    int W = S->world;
    for (int tp = 1; tp <= W; tp++) {
        if (W % tp) continue;
        for (int pp = 1; pp <= W / tp; pp++) {
            if ((W / tp) % pp) continue;
            int dp = W / tp / pp;
            S->enumerated++;
            int rule = tp_pp_rule(S, tp, pp);
            if (rule >= 0) { S->pruned_arith[rule]++; continue; }
            if (S->global % dp) { S->pruned_arith[3]++; continue; }
            int per = S->global / dp;
            /* buckets: the plan's size, or larger so that a rank has at most
             * 256 (each costs a collective's latency, and the ZeRO pass's
             * work grows with their count); a power of 2 MiB */
            double rank_mib = (double)S->params / ((double)tp * pp) * S->bg / (1 << 20), mb = 1;
            while (mb < rank_mib / 256) mb *= 2;
            if (mb < S->bucket_mb) mb = S->bucket_mb;
            for (int micro = 1; micro <= per; micro++) {
                if (per % micro) continue;
                int accum = per / micro;
                for (int sp = 0; sp <= (tp > 1); sp++)
                    for (int sc = 0; sc < 5; sc++)
                        for (int v = 1; v <= 4; v *= 2) {
                            if (pp == 1 && (sc != 1 || v > 1)) continue;  /* one stage: no schedule */
                            if (pp > 1 && (sc == 2) != (v > 1)) continue;
                            S->enumerated++;
                            if (pp > 1 && ((sc == 2 && (accum % pp || pp * v > S->layers)) ||
                                           (sc == 4 && (accum < pp || !S->clip0)))) {
                                S->pruned_arith[4]++;
                                continue;
                            }
                            if ((long)pp * v * accum > 262144 || accum > 16384) {
                                S->pruned_arith[5]++;
                                continue;
                            }
                            /* per recompute level, the smallest ZeRO stage that may fit */
                            for (int rc = 0; rc < 3; rc++) {
                                int zmax = dp == 1 ? 0 : 3;
                                int placed = 0;
                                for (int z = 0; z <= zmax + (zmax == 3) && !placed; z++) {
                                    cand c = { .probe = -1, .dp = dp, .tp = tp, .pp = pp, .sp = sp, .micro = micro, .sched = sc,
                                               .virt = v, .zero = z > 3 ? 3 : z, .rc = rc, .offload = z > 3,
                                               .bucket_mb = mb };
                                    c.mem_lb = mem_lower_bound(S, &c, accum);
                                    if (c.mem_lb > S->device_bytes) {
                                        S->pruned_mem++;
                                        keep_mem_pruned(S, &c, accum);
                                        continue;
                                    }
                                    bounds(S, &c, accum, 1);
                                    add(S, &c);
                                    placed = 1;
                                }
                            }
                        }
            }
        }
    }
}

static int by_est(const void *x, const void *y) {
    const cand *a = x, *b = y;
    if (a->est != b->est) return a->est < b->est ? -1 : 1;
    int ka[] = { a->tp, a->pp, a->micro, a->sp, a->sched, a->virt, a->rc, a->zero, a->offload };
    int kb[] = { b->tp, b->pp, b->micro, b->sp, b->sched, b->virt, b->rc, b->zero, b->offload };
    for (int i = 0; i < 9; i++)
        if (ka[i] != kb[i]) return ka[i] < kb[i] ? -1 : 1;
    return 0;
}

static int memory_first;
static int by_result(const void *x, const void *y) {
    const cand *a = *(const cand *const *)x, *b = *(const cand *const *)y;
    if (memory_first && a->mem != b->mem) return a->mem < b->mem ? -1 : 1;
    /* tokens/s carries more digits than the printed step time */
    if (a->tps != b->tps) return a->tps > b->tps ? -1 : 1;
    return by_est(a, b);
}

static int same_layout(const cand *a, const cand *b) {
    return a->dp == b->dp && a->tp == b->tp && a->pp == b->pp && a->sp == b->sp && a->micro == b->micro &&
           a->sched == b->sched && a->virt == b->virt;
}

/* Builds best-first until the bound, the cap or the list ends. */
static void search_run(search *S) {
    qsort(S->c, (size_t)S->n, sizeof *S->c, by_est);
    /* worst first and no step-time pruning, every candidate under the cap
     * built (e2e_plan_search): the order and the bound decide only what
     * the cap leaves out, never the answer below it */
    const char *order = getenv("WEFT_PLAN_ORDER");
    int exhaustive = order && !strcmp(order, "reverse");
    if (exhaustive)
        for (int i = 0, j = S->n - 1; i < j; i++, j--) {
            cand t = S->c[i];
            S->c[i] = S->c[j], S->c[j] = t;
        }
    int k = S->a.top > 0 ? S->a.top : 1;
    double *best = calloc((size_t)k, sizeof *best);  /* the k best step times, ascending */
    for (int i = 0; i < k; i++) best[i] = INFINITY;
    for (int i = 0; i < S->n; i++) {
        cand *c = &S->c[i];
        /* cannot enter the top k; the list is in estimate order, not bound
         * order, so later candidates are still looked at */
        if (!memory_first && !exhaustive && c->lb > best[k - 1]) {
            S->pruned_bound++;
            continue;
        }
        if (S->built >= S->a.max_priced) { S->pruned_cap++; continue; }
        int skip = 0;  /* dominance: a cheaper memory level of the same layout fits */
        for (int j = 0; j < i && !skip; j++)
            if (S->c[j].state == 1 && same_layout(&S->c[j], c) && S->c[j].rc < c->rc && S->c[j].zero <= 1 &&
                !S->c[j].offload)
                skip = 1;
        if (skip) { c->state = 4; S->dominated++; continue; }
        struct probe *q = c->probe >= 0 ? &S->probes[c->probe] : NULL;
        if (q && q->confirmed) {  /* refused alike: not built again */
            snprintf(c->why, sizeof c->why, "%s", q->refused);
            c->state = 3;
            S->refused_alike++;
            continue;
        }
        evaluate(S, c);
        if (q && q->refused[0] && c->state == 3 && !strcmp(c->why, q->refused)) q->confirmed = 1;
        if (c->state == 1) {
            double t = step_of(S, c);
            for (int j = 0; j < k; j++)
                if (t < best[j]) { double s = best[j]; best[j] = t; t = s; }
        }
    }
    free(best);
}

/* The best priced candidate so far (the table's first row), or NULL. */
static cand *best_priced(search *S) {
    cand *best = NULL;
    for (int i = 0; i < S->n; i++) {
        cand *c = &S->c[i];
        if (c->state == 1 && (!best || by_result(&c, &best) < 0)) best = c;
    }
    return best;
}

/* Bucket sizes around the best: the enumeration gives each layout one size
 * (the plan's, or larger so that a rank has at most 256 buckets); the best
 * layout with dp > 1 is priced again at 1/4, 1/2, 2 and 4 times it, since
 * smaller buckets leave less of the reduction exposed after backward but pay
 * a collective's latency each.  Four builds beyond --max-priced. */
static void refine_buckets(search *S) {
    cand *best = best_priced(S);
    if (!best || best->dp <= 1) return;
    static const double factor[] = { 0.25, 0.5, 2, 4 };
    cand base = *best;
    for (int k = 0; k < 4; k++) {
        cand c = base;
        c.bucket_mb = base.bucket_mb * factor[k];
        if (c.bucket_mb < 1.0 / 16) continue;
        c.state = 0, c.why[0] = 0;
        if (add(S, &c) != 0) return;
        S->bucket_tried++;
        cand *v = &S->c[S->n - 1];
        evaluate(S, v);
        /* kept only when faster: a tie would list the same layout again */
        if (v->state == 1 && !(v->tps > base.tps)) v->state = 4;
        else if (v->state == 1) S->bucket_better++;
    }
    S->bucket_base = base.bucket_mb;
}

/* Stage partitions around the best: the partition pass balances the chunks'
 * FLOPs by dynamic programming (partition.c), which is optimal for that count
 * but not for simulate's step time: the first chunk also holds the embedding
 * (and a VLM's encoder), the last the LM head and loss, whose time is not in
 * proportion to their FLOPs, and ties in the largest chunk are broken
 * arbitrarily (tiny with 7 layers on 3 stages: the balance gives 2 3 2, 3 2 2
 * is 2.5% faster).  So the best pipelined layout is priced again with one
 * layer moved across its first chunk boundary and across its last, each way,
 * and climbs while one of them is faster: at most 4 * PART_ROUNDS builds
 * beyond --max-priced.  An interleaved layout's pp * virtual chunks are moved
 * the same way (its first chunk, on stage 0, holds the embedding, its last,
 * on the last stage, the head); pipeline.stages lists every chunk's layers. */
enum { PART_ROUNDS = 3, PART_LAYOUTS = 3 };
static void refine_one(search *S, const cand *layout) {
    cand base = *layout;
    S->part_layouts++;
    for (int round = 0; round < PART_ROUNDS; round++) {
        int K = base.n_part, improved = 0;
        cand next = base;
        /* (from, to): one layer from chunk `from` to its neighbour `to` */
        const int moves[4][2] = { { 0, 1 }, { 1, 0 }, { K - 1, K - 2 }, { K - 2, K - 1 } };
        for (int m = 0; m < 4; m++) {
            if (K == 2 && m >= 2) break;  /* the same boundary */
            cand c = base;
            if (c.part[moves[m][0]] <= 1) continue;
            c.part[moves[m][0]]--;
            c.part[moves[m][1]]++;
            c.part_given = 1;
            c.state = 0, c.why[0] = 0;
            /* a layer more on a stage that holds many microbatches may not fit */
            c.mem_lb = mem_lower_bound(S, &c, S->global / c.dp / c.micro);
            if (c.mem_lb > S->device_bytes) continue;
            if (add(S, &c) != 0) return;
            S->part_tried++;
            cand *v = &S->c[S->n - 1];
            evaluate(S, v);
            if (v->state == 1 && v->tps > next.tps) next = *v, improved = 1;
            else if (v->state == 1) v->state = 4;  /* not faster: not listed */
        }
        if (!improved) break;
        S->part_better++;
        base = next;
    }
}

/* The best pipelined layout is refined so; and so are the next ones (up to
 * PART_LAYOUTS in all, in step order) whose step-time lower bound, which
 * holds for every split (least_max_chunk), is below the best step so far:
 * a better split may make one of them the best (an interleaved layout
 * whose layers do not divide into its chunks evenly, say). */
static void refine_partition(search *S) {
    int n = 0;
    cand **r = malloc(sizeof(cand *) * (size_t)(S->n + 1));
    if (!r) return;
    for (int i = 0; i < S->n; i++)
        if (S->c[i].state == 1 && S->c[i].pp > 1 && S->c[i].n_part == S->c[i].pp * S->c[i].virt) r[n++] = &S->c[i];
    qsort(r, (size_t)n, sizeof *r, by_result);
    cand *first = best_priced(S);
    cand before = first ? *first : (cand){ 0 };
    for (int i = 0, done = 0; i < n && done < PART_LAYOUTS; i++) {
        cand *best = best_priced(S);
        if (done && !(r[i]->lb < step_of(S, best))) continue;
        cand layout = *r[i];  /* (refine_one adds candidates) */
        refine_one(S, &layout);
        done++;
    }
    cand *after = best_priced(S);
    S->part_new_best = first && after && !same_layout(after, &before);
    free(r);
}

/* ---- reports ------------------------------------------------------------ */

static void layout_name(const cand *c, char *buf, size_t n) {
    char sch[32];
    if (c->pp <= 1) snprintf(sch, sizeof sch, "-");
    else if (c->sched == 2) snprintf(sch, sizeof sch, "interleaved/%d", c->virt);
    else snprintf(sch, sizeof sch, "%s", SCHED_NAMES[c->sched]);
    int k = snprintf(buf, n, "dp %d tp %d%s pp %d mb %d %s zero %d rc %s%s b%g", c->dp, c->tp, c->sp ? "+sp" : "",
                     c->pp, c->micro, sch, c->zero, RC_NAMES[c->rc], c->offload ? " offload" : "", c->bucket_mb);
    /* the partition, layers per chunk, runs of equal counts as COUNT*RUN */
    for (int i = 0; i < c->n_part && k > 0 && (size_t)k < n;) {
        int j = i;
        while (j < c->n_part && c->part[j] == c->part[i]) j++;
        k += snprintf(buf + k, n - (size_t)k, "%s%d", i ? " " : " [", c->part[i]);
        if (j - i > 1 && (size_t)k < n) k += snprintf(buf + k, n - (size_t)k, "*%d", j - i);
        if (j == c->n_part && (size_t)k < n) k += snprintf(buf + k, n - (size_t)k, "]");
        i = j;
    }
    if (c->bind_off && k > 0 && (size_t)k < n) snprintf(buf + k, n - (size_t)k, " bind off");
}

static void print_counts(const search *S, FILE *out) {
    fprintf(out, "candidates enumerated %ld; pruned: ", S->enumerated);
    for (int r = 0; r < N_RULES; r++)
        if (S->pruned_arith[r]) fprintf(out, "%s %ld; ", RULES[r], S->pruned_arith[r]);
    fprintf(out, "memory lower bound %ld; higher ZeRO stages ruled out by a build's memory %ld; "
                 "step-time lower bound %ld; dominated %ld; over --max-priced %ld\n",
            S->pruned_mem, S->zero_skipped, S->pruned_bound, S->dominated, S->pruned_cap);
    fprintf(out, "built %ld through every pass (%ld refused by the passes, %ld do not fit); priced %ld; "
                 "%ld one-block builds for the step-time bound\n",
            S->built, S->refused, S->nofit, S->priced, S->probed);
    if (S->refused_alike)
        fprintf(out, "not built: %ld refused as the one-block build and a full build of the same tp, sp, recompute "
                     "and micro were, with the same error\n", S->refused_alike);
    if (S->part_tried)
        fprintf(out, "stage partitions: the best %ld pipelined layout(s) priced again with a layer moved across "
                     "their first and last chunk boundaries (%ld of the builds): faster in %ld rounds%s\n",
                S->part_layouts, S->part_tried, S->part_better,
                S->part_new_best ? "; the best is now a layout that was not the best before" : "");
    if (S->bucket_tried)
        fprintf(out, "bucket sizes: the best layout priced again at 1/4, 1/2, 2 and 4 times its %g MiB "
                     "(%ld of the builds): %ld faster\n", S->bucket_base, S->bucket_tried, S->bucket_better);
}

static void print_table(const search *S, cand **r, int nr, FILE *out) {
    double gib = 1024.0 * 1024 * 1024;
    fprintf(out, "%-3s %-68s %9s %10s %6s %8s %7s %9s %6s\n", "#", "layout", "step s", "tokens/s", "MFU",
            "mem GiB", "bubble", "exposed", "comm/c");
    for (int i = 0; i < nr && i < S->a.top; i++) {
        char name[400];
        layout_name(r[i], name, sizeof name);
        fprintf(out, "%-3d %-68s %9.3f %10.0f %5.1f%% %8.1f %6.1f%% %8.3fs %5.0f%%%s\n", i + 1, name, r[i]->iter,
                r[i]->tps, r[i]->mfu, r[i]->mem / gib, r[i]->bubble, r[i]->exposed, 100 * r[i]->ratio,
                r[i]->ratio > 0.2 ? " !" : "");
    }
}

/* --print-sets: for scripts (bench/plan.sh), each of the top K as its rank,
 * predicted step time (from tokens/s, which simulate prints to more digits
 * than the step) and the --set overrides that make it. */
static void print_sets(const search *S, cand **r, int nr, FILE *out) {
    for (int i = 0; i < nr && i < S->a.top; i++) {
        char buf[13 + MAX_PART][64];
        const char *sets[MAX_CAND_SETS];
        int ns = set_list(S, r[i], buf, sets);
        fprintf(out, "sets\t%d\t%.6g\t", i + 1, step_of(S, r[i]));
        for (int k = 0; k < ns; k++) fprintf(out, "%s--set %s", k ? " " : "", sets[k]);
        fputc('\n', out);
    }
}

static void print_rejected(const search *S, FILE *out) {
    int shown = 0, m = 0;
    for (int i = 0; shown < 5 && (i < S->n || m < S->n_mem_pruned);) {
        /* the built ones that failed and those the memory bound pruned, by estimate */
        const cand *c;
        if (i < S->n && (S->c[i].state != 2 && S->c[i].state != 3)) { i++; continue; }
        if (m < S->n_mem_pruned && (i >= S->n || S->mem_pruned[m].est < S->c[i].est)) c = &S->mem_pruned[m++];
        else c = &S->c[i++];
        char name[400];
        layout_name(c, name, sizeof name);
        if (!shown++) fprintf(out, "best rejected (in estimate order):\n");
        fprintf(out, "    %-68s %s\n", name, c->why);
    }
    /* arithmetic rules, with one example each */
    if (S->pruned_arith[1]) {
        int tp = S->dpn * 2;
        while (S->world % tp && tp <= S->world) tp *= 2;
        if (tp <= S->world && S->heads % tp == 0)
            fprintf(out, "    tp %d spans %d nodes of %d devices (tp must stay inside a node)\n", tp,
                    tp / S->dpn, S->dpn);
    }
}

/* ---- writing the best as a plan ---------------------------------------- */

static char *read_all(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *s = malloc(cap);
    for (size_t k; s && (k = fread(s + n, 1, cap - n - 1, f)) > 0;) {
        n += k;
        if (n + 1 >= cap) {
            char *t = realloc(s, cap *= 2);
            if (!t) { free(s); s = NULL; }
            else s = t;
        }
    }
    fclose(f);
    if (s) s[n] = 0;
    return s;
}

/* A Lua value for an override's text as the prelude reads it (parse_override). */
static void lua_value(FILE *f, const char *v) {
    char *end;
    if (!strcmp(v, "true") || !strcmp(v, "false")) { fputs(v, f); return; }
    strtod(v, &end);
    if (*v && !*end && !strchr(v, 'x') && !strchr(v, 'X') && !strchr(v, 'n') && !strchr(v, 'N')) {
        fputs(v, f);
        return;
    }
    char esc[1024];
    if (wf_escape_lua(v, esc, sizeof esc) < 0) snprintf(esc, sizeof esc, "?");
    fprintf(f, "\"%s\"", esc);
}

static int write_best(const search *S, const cand *c) {
    char *src = read_all(S->a.plan);
    if (!src) { wf_error("%s: cannot read the plan", S->a.plan); return -1; }
    char *body = src;
    if (body[0] == '#') body += strcspn(body, "\n");  /* a #! line */
    wf_outfile o;
    char err[PATH_MAX + 200], buf[13 + MAX_PART][64], name[400], path[1024];
    const char *sets[MAX_CAND_SETS];
    if (wf_outfile_open(&o, S->a.out, 0666, err, sizeof err) != 0) {
        wf_error("%s", err);
        free(src);
        return -1;
    }
    FILE *f = o.f;
    int ns = set_list(S, c, buf, sets);
    layout_name(c, name, sizeof name);
    if (wf_escape_lua(S->a.plan, path, sizeof path) < 0) snprintf(path, sizeof path, "?");
    fprintf(f, "-- Written by `weft plan`: the plan \"%s\" unchanged (below), with the layout\n"
               "-- the search chose set on it as `--set FIELD=VALUE` would set it:\n"
               "--   %s\n-- predicted step %.3f s, %.0f tokens/s, MFU %.1f%% on %d %s.\n",
            path, name, c->iter, c->tps, c->mfu, S->world, S->device);
    fprintf(f, "local SET = {\n");
    for (int i = 0; i < ns; i++) {
        const char *eq = strchr(sets[i], '=');
        char key[256], esc[600];
        snprintf(key, sizeof key, "%.*s", (int)(eq - sets[i]), sets[i]);
        if (wf_escape_lua(key, esc, sizeof esc) < 0) continue;
        fprintf(f, "  { \"%s\", ", esc);
        lua_value(f, eq + 1);
        fprintf(f, " },\n");
    }
    fputs("}\n"
          "local real = weft\n"
          "-- sets every SET path under `prefix` (nil: all but those of built objects) in t\n"
          "-- a weft.vlm's own fields; its language model's are the rest of model.*\n"
          "local VLM = { llm = true, vision = true, projector = true, freeze = true, image_token = true }\n"
          "local function apply(t, prefix, vlm)\n"
          "  for _, kv in ipairs(SET) do\n"
          "    local path = kv[1]\n"
          "    local head = path:match(\"^[^.]+\")\n"
          "    local rest = nil\n"
          "    if prefix then\n"
          "      if head == prefix then rest = path:sub(#prefix + 2) end\n"
          "    elseif not ((head == \"cluster\" or head == \"model\") and t[head] ~= nil) then\n"
          "      rest = path\n"
          "    end\n"
          "    if rest and prefix == \"model\" and (VLM[rest:match(\"^[^.]+\")] or false) ~= vlm then rest = nil end\n"
          "    if rest and rest ~= \"\" then\n"
          "      local keys = {}\n"
          "      for k in rest:gmatch(\"[^.]+\") do keys[#keys + 1] = math.tointeger(tonumber(k)) or k end\n"
          "      local node = t\n"
          "      for i = 1, #keys - 1 do\n"
          "        if type(node[keys[i]]) ~= \"table\" then node[keys[i]] = {} end\n"
          "        node = node[keys[i]]\n"
          "      end\n"
          "      node[keys[#keys]] = kv[2]\n"
          "    end\n"
          "  end\n"
          "  return t\n"
          "end\n"
          "local weft = {}\n"
          "for k, v in pairs(real) do weft[k] = v end\n"
          "weft.plan = function(spec) return real.plan(apply(spec)) end\n"
          "weft.cluster = function(spec) return real.cluster(apply(spec, \"cluster\")) end\n"
          "weft.gpt2 = function(spec) return real.gpt2(apply(spec, \"model\", false)) end\n"
          "weft.llama = function(spec) return real.llama(apply(spec, \"model\", false)) end\n"
          "weft.vlm = function(spec) return real.vlm(apply(spec, \"model\", true)) end\n"
          "return (function()\n", f);
    fputs(body, f);
    fputs("\nend)()\n", f);
    free(src);
    if (wf_outfile_commit(&o, err, sizeof err) != 0) {
        wf_error("%s", err);
        return -1;
    }
    return 0;
}

/* ---- the command -------------------------------------------------------- */

static int usage(const char *msg) {
    fprintf(stderr, "weft: %s\nusage: weft plan PLAN [--gpus N] [--set FIELD=VALUE ...] [--global-batch B] "
                    "[--top K]\n       [--objective time|memory] [-o BEST.lua] [--backend cpu|cuda] [--scaling] "
                    "[--max-priced N]\n       [--calibration FILE] [--print-sets]\n", msg);
    return EXIT_USAGE;
}

static int parse_int(const char *s, int *v) {
    char *end;
    long x = strtol(s, &end, 10);
    if (!*s || *end || x < 1 || x > 1 << 22) return -1;
    *v = (int)x;
    return 0;
}

static int parse_args(int argc, char **argv, args *a) {
    memset(a, 0, sizeof *a);
    a->backend = "cpu";
    a->objective = "time";
    a->top = 5;
    a->max_priced = 96;
    for (int i = 0; i < argc; i++) {
        const char *s = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(s, "--gpus") && v) { if (parse_int(v, &a->gpus)) return usage("--gpus needs a count >= 1"); i++; }
        else if (!strcmp(s, "--global-batch") && v) { if (parse_int(v, &a->global)) return usage("--global-batch needs a count >= 1"); i++; }
        else if (!strcmp(s, "--top") && v) { if (parse_int(v, &a->top)) return usage("--top needs K >= 1"); i++; }
        else if (!strcmp(s, "--max-priced") && v) { if (parse_int(v, &a->max_priced)) return usage("--max-priced needs N >= 1"); i++; }
        else if (!strcmp(s, "--objective") && v) {
            a->objective = v;
            i++;
            if (strcmp(v, "time") && strcmp(v, "memory")) return usage("--objective: time or memory");
        } else if (!strcmp(s, "-o") && v) a->out = v, i++;
        else if (!strcmp(s, "--backend") && v) {
            if (!backend_find(v)) return usage("--backend: unknown backend");
            a->backend = v;
            i++;
        } else if (!strcmp(s, "--set") && v) {
            if (!strchr(v, '=') || a->n_user == MAX_SETS) return usage("--set needs FIELD=VALUE");
            a->user_sets[a->n_user++] = v;
            i++;
        } else if (!strcmp(s, "--calibration") && v) a->calibration = v, i++;
        else if (!strcmp(s, "--print-sets")) a->print_sets = 1;
        else if (!strcmp(s, "--scaling")) a->scaling = 1;
        else if (s[0] == '-') return usage("unknown option or missing value");
        else if (!a->plan) a->plan = s;
        else return usage("more than one plan given");
    }
    if (!a->plan) return usage("no plan given");
    return EXIT_OK;
}

/* The plan's model and cluster, and the memory model's bytes per parameter
 * and per layer-token, from small builds: one rank, micro 1, 2 and 4 layers. */
static int load_base(search *S) {
    char msg[512];
    Program p;
    const char *base[] = { "mesh.dp=1", "mesh.tp=1", "mesh.pp=1", "mesh.sp=false", "batch.micro=1",
                           "pipeline.schedule=1f1b", "pipeline.virtual=1", "zero=0", "offload.optimizer=none",
                           "offload.params=none", "comm=mpi" };
    int nb = (int)(sizeof base / sizeof *base);
    const char *sets[MAX_SETS + 24];
    int n = 0, user_nodes = 0, user_dpn = 0;
    /* the plan as written first, for its cluster (--set cluster.nodes and
     * devices_per_node are read here, not applied: the plan's mesh is for its
     * own cluster) */
    for (int i = 0; i < S->a.n_user; i++) {
        const char *u = S->a.user_sets[i];
        if (!strncmp(u, "cluster.nodes=", 14)) user_nodes = atoi(u + 14);
        else if (!strncmp(u, "cluster.devices_per_node=", 25)) user_dpn = atoi(u + 25);
        else sets[n++] = u;
    }
    wf_error_capture(msg, sizeof msg);
    int rc = pass_load(&p, S->a.plan, sets, n), probed_dpn = 0;
    if (rc != 0) {
        /* the plan's own mesh does not suit the overrides (--set model.layers=8
         * under a 64-stage mesh): load one rank of its model instead, and find
         * its devices per node as the smallest one-node mesh it accepts */
        char first[512];
        snprintf(first, sizeof first, "%s", msg);
        program_free(&p);
        int m = n;
        for (int i = 0; i < nb; i++) sets[m++] = base[i];
        sets[m++] = "cluster.nodes=1";
        char probe[2][64];
        for (int d = 1; d <= 1024 && !probed_dpn; d *= 2) {
            snprintf(probe[0], 64, "mesh.dp=%d", d);
            snprintf(probe[1], 64, "batch.global=%d", d);
            sets[m] = probe[0], sets[m + 1] = probe[1];
            wf_error_capture(msg, sizeof msg);
            if (pass_load(&p, S->a.plan, sets, m + 2) == 0) probed_dpn = d;
            program_free(&p);
        }
        sets[m] = "cluster.devices_per_node=1";
        wf_error_capture(msg, sizeof msg);
        rc = probed_dpn ? pass_load(&p, S->a.plan, sets, m + 1) : -1;
        if (rc != 0) {
            fprintf(stderr, "weft: error: %s\n", first);
            program_free(&p);
            wf_error_capture(NULL, 0);
            return -1;
        }
    }
    wf_error_capture(NULL, 0);
    S->layers = p.layers, S->heads = p.heads, S->kv_heads = p.kv_heads, S->hidden = p.hidden;
    S->ffn_hidden = p.ffn_hidden, S->vit_heads = p.vit_heads, S->vit_mlp = p.vit_mlp;
    if (p.n_kernels) snprintf(S->kernel_source, sizeof S->kernel_source, "%s", p.kernels[0].source);
    S->seq = p.seq, S->vocab = p.vocab, S->nodes = p.nodes, S->dpn = p.devices_per_node;
    S->vlm = p.image_positions > 0;
    S->bind = p.bind;
    wf_mesh_order(p.axes, p.n_axes, S->order, sizeof S->order);
    S->image_bytes = S->vlm ? (double)p.image_h * p.image_w * p.image_c : 0;
    S->global = S->a.global ? S->a.global : p.global_batch, S->clip0 = p.clip == 0;
    S->bucket_mb = p.bucket_mb;
    S->device_bytes = p.device_memory_gib * 1024.0 * 1024 * 1024;
    S->intra_gbs = p.intra_gbs, S->intra_lat = p.intra_latency_us;
    S->inter_gbs = p.inter_gbs, S->inter_lat = p.inter_latency_us;
    S->intra_bus = p.intra_bus_gbs, S->inter_bus = p.inter_bus_gbs;
    S->hbm = p.device_hbm_gbs > 0 ? p.device_hbm_gbs : 20.0;
    S->el = strcmp(p.precision, "fp32") ? 2 : 4;
    snprintf(S->device, sizeof S->device, "%s", p.device);
    program_free(&p);
    if (probed_dpn) {
        S->dpn = probed_dpn;
        S->nodes = S->a.gpus ? (S->a.gpus + probed_dpn - 1) / probed_dpn : 1;
        if (!S->a.gpus && !user_nodes) S->a.gpus = S->dpn;
    }
    if (user_dpn > 0) S->dpn = user_dpn;
    if (user_nodes > 0) S->nodes = user_nodes;
    if (!S->a.gpus && (user_dpn > 0 || user_nodes > 0)) S->a.gpus = S->nodes * S->dpn;
    S->node_dpn = S->dpn;
    if (S->a.gpus) {
        int dpn = S->a.gpus < S->dpn ? S->a.gpus : S->dpn;
        if (S->a.gpus % dpn) {
            fprintf(stderr, "weft: error: --gpus %d is not a whole number of %d-device nodes "
                            "(valid: a multiple of %d, or fewer than %d)\n", S->a.gpus, S->dpn, S->dpn, S->dpn);
            return -1;
        }
        S->dpn = dpn, S->nodes = S->a.gpus / dpn;
        snprintf(S->cluster_sets[0], 64, "cluster.nodes=%d", S->nodes);
        snprintf(S->cluster_sets[1], 64, "cluster.devices_per_node=%d", S->dpn);
    }
    S->world = S->nodes * S->dpn;
    /* the model's own figures: the user's --set (cluster.* included), the batch */
    n = 0;
    for (int i = 0; i < S->a.n_user; i++) sets[n++] = S->a.user_sets[i];
    if (S->batch_set[0]) sets[n++] = S->batch_set;
    for (int i = 0; i < nb; i++) sets[n++] = base[i];
    /* one rank of the whole model, then 2 and 4 layers for the per-layer activations */
    sets[n++] = "cluster.nodes=1";
    sets[n++] = "cluster.devices_per_node=1";
    /* for the per-layer measurements: one node of tp devices */
    for (int i = 0; i < n - 1; i++) S->base_sets[i] = sets[i];  /* all but devices_per_node */
    S->n_base = n - 1;
    for (int t = 0; t < 8; t++)
        for (int q = 0; q < 2; q++)
            for (int r = 0; r < 3; r++)
                S->act_tok[t][q][r][0][0] = S->act_tok[t][q][r][1][0] = S->vlm0[t][q][r][0] = -1;
    compile_options o = { .plan = S->a.plan, .overrides = sets, .n_overrides = n, .backend = S->a.backend };
    wf_error_capture(msg, sizeof msg);
    rc = compile_plan(&p, &o);
    wf_error_capture(NULL, 0);
    if (rc != 0) {
        fprintf(stderr, "weft: error: every layout fails: %s\n", msg);
        program_free(&p);
        return -1;
    }
    program_memory pm = program_memory_of(&p, 0);
    S->params = p.n_param_total;
    S->bw = pm.params / p.n_param_total, S->bg = pm.grads / p.n_param_total;
    S->bo = pm.optim / p.n_param_total;
    S->peak = program_peak_tflops(&p);
    /* as simulate_plan's dp collectives (measured here at dp 1, zero 0:
     * param16's choice may differ under ZeRO-3, an estimate's error only) */
    S->dp_el = dp_comm16(&p) ? 2 : 4, S->p_el = param16(&p) ? 2 : 4;
    S->prefetch = p.zero_prefetch >= 1 && p.zero_prefetch_mb < 0;
    S->flops_step = p.flops_per_token * p.global_batch * p.seq;
    program_free(&p);
    return 0;
}

static int load_base(search *S);
static int run_search(search *S, cand **best_out, FILE *out);
static void search_free(search *S);

/* -o for a plan with user kernels: their sources are read from the plan's
 * folder (relative paths inside it, the prelude's rule), which for the
 * written plan is -o's folder.  0 when that is the plan's own folder (or
 * either cannot be resolved: the write reports it), else -1 with the error. */
static int kernels_reachable(const search *S) {
    if (!S->a.out || !S->kernel_source[0]) return 0;
    char a[PATH_MAX], b[PATH_MAX], da[PATH_MAX], db[PATH_MAX];
    snprintf(a, sizeof a, "%s", S->a.plan);
    snprintf(b, sizeof b, "%s", S->a.out);
    if (!realpath(dirname(a), da) || !realpath(dirname(b), db) || !strcmp(da, db)) return 0;
    snprintf(a, sizeof a, "%s", S->a.plan);
    const char *dir = dirname(a);
    fprintf(stderr, "weft: error: %s applies a user kernel (%s), which a plan finds in its own folder: "
                    "write the plan into %s (-o %s/NAME.lua), not %s's folder\n",
            S->a.plan, S->kernel_source, dir, dir, S->a.out);
    return -1;
}

/* A quiet search of S's request on `gpus` GPUs, in nodes of the plan's size
 * where they make the count, else of the request's (--gpus 3 of an 8-device
 * node is one node of 3; 6 of them one node of 6, 12 four nodes of 3, not an
 * error); with global batch `batch` (0: S's) and `top` (0: S's).  1 when a
 * layout fits (*best its copy), 0 when none does (*least_need, when not
 * NULL: the least bytes a rank needed, 0 if none was seen), -1 when the
 * request itself is refused. */
static int search_again(const search *S, long gpus, int batch, int top, cand *best, double *least_need) {
    search T;
    char dpn_set[64];
    memset(&T, 0, sizeof T);
    T.a = S->a;
    T.a.gpus = (int)gpus, T.a.scaling = 0, T.a.out = NULL;
    if (top) T.a.top = top;
    int dpn = gpus < S->node_dpn || gpus % S->node_dpn == 0 ? S->node_dpn : S->dpn;
    snprintf(dpn_set, sizeof dpn_set, "cluster.devices_per_node=%d", dpn);
    if (T.a.n_user < MAX_SETS) T.a.user_sets[T.a.n_user++] = dpn_set;
    memcpy(T.batch_set, S->batch_set, sizeof T.batch_set);
    if (batch) {
        T.a.global = batch;
        snprintf(T.batch_set, sizeof T.batch_set, "batch.global=%d", batch);
    }
    cand *b = NULL;
    int rc = load_base(&T) == 0 && run_search(&T, &b, NULL) == 0 ? b != NULL : -1;
    if (b) *best = *b;
    if (least_need) *least_need = rc == 0 ? T.least_need : 0;
    search_free(&T);
    return rc;
}

/* The global batch nearest S's that the dp of some mesh on S's GPUs divides,
 * tp and pp within the arithmetic rules and tp not in tp_out (tp_out[tp]
 * nonzero: every layout of that tp was refused; NULL: none); 0 if none. */
enum { TP_OUT_N = 1025 };  /* tp_out's size: tp up to 1024 */
static int nearest_batch(const search *S, const char *tp_out) {
    int bestb = 0;
    for (int dp = 1; dp <= S->world; dp++) {
        if (S->world % dp) continue;
        int ok = 0;
        for (int tp = 1; tp <= S->dpn && !ok; tp++)
            if ((S->world / dp) % tp == 0 && tp_pp_rule(S, tp, S->world / dp / tp) < 0 &&
                !(tp_out && tp < TP_OUT_N && tp_out[tp]))
                ok = 1;
        if (!ok) continue;
        int up = (S->global + dp - 1) / dp * dp, down = S->global / dp * dp;
        int cand_b = down >= 1 && S->global - down <= up - S->global ? down : up;
        if (!bestb || abs(cand_b - S->global) < abs(bestb - S->global)) bestb = cand_b;
    }
    return bestb;
}

/* The nearest change that makes a layout possible, when none is. */
static void explain_none(search *S) {
    /* a global batch that no mesh's dp divides */
    if (S->pruned_arith[3] && !S->n && !S->pruned_mem) {
        fprintf(stderr, "weft: error: %s: no mesh on %d GPUs has a data-parallel size dividing the global "
                        "batch %d; nearest feasible: --global-batch %d\n", S->a.plan, S->world, S->global,
                nearest_batch(S, NULL));
        return;
    }
    /* every layout built was refused by the passes, none for memory: the
     * first in estimate order says why (the checks name valid values), and
     * a batch that a mesh of another tp divides, when a search finds one */
    const cand *first = NULL;
    for (int i = 0; i < S->n && !first; i++)
        if (S->c[i].state == 3) first = &S->c[i];
    if (first && !S->nofit && !S->pruned_mem) {
        char tp_out[TP_OUT_N] = { 0 }, name[400];
        for (int i = 0; i < S->n; i++)
            if (S->c[i].state == 3 && S->c[i].tp < TP_OUT_N) tp_out[S->c[i].tp] = 1;
        layout_name(first, name, sizeof name);
        fprintf(stderr, "weft: error: %s: every layout on %d %s is refused by the passes, none for memory; the "
                        "first by estimate, %s: %s", S->a.plan, S->world, S->device, name, first->why);
        int b = S->pruned_arith[3] ? nearest_batch(S, tp_out) : 0;
        cand best;
        if (b && b != S->global && search_again(S, S->world, b, 1, &best, NULL) == 1) fprintf(stderr, "; nearest feasible: --global-batch %d", b);
        fputc('\n', stderr);
        return;
    }
    /* nothing fits: the GPUs that the parameters, gradients and AdamW state
     * alone need when spread over every rank (ZeRO-3 across dp, tp x pp),
     * with 10% spare, doubled from the request's count; a lower bound only
     * (one microbatch's activations may not shrink with more GPUs), so the
     * count is searched and doubled up to 8 times it before it is named */
    char have[32], need_txt[32], state_txt[32];
    double state = (double)S->params * (S->bw + S->bg + S->bo);
    long need = (long)ceil(state / (0.9 * S->device_bytes)), gpus = S->world;
    while (gpus < need) gpus *= 2;
    if (gpus == S->world) gpus *= 2;
    long fits_on = 0, tried = gpus;
    double least = S->least_need;  /* per rank, on the last count searched */
    for (long g = gpus; g <= 8 * gpus && g <= 65536 && !fits_on; g *= 2) {
        cand best;
        double need_there = 0;
        int found = search_again(S, g, 0, 1, &best, &need_there);
        if (found == 1) fits_on = g;
        else if (need_there) least = need_there;
        tried = g;
    }
    fprintf(stderr, "weft: error: %s: no layout fits on %d %s (%s GiB each), ZeRO-3, full recompute and "
                    "offload included", S->a.plan, S->world, S->device, device_gib_text(S->device_bytes, have));
    if (S->least_need) fprintf(stderr, "; the smallest needs at least %s GiB per rank", gib_text(S->least_need, need_txt));
    fprintf(stderr, "; parameters, gradients and optimizer state are %s GiB in all", gib_text(state, state_txt));
    if (fits_on == gpus) fprintf(stderr, ": needs at least %ld GPUs\n", gpus);
    else if (fits_on) fprintf(stderr, ": fits on %ld GPUs (not on %ld)\n", fits_on, fits_on / 2);
    else if (least)
        fprintf(stderr, "; on %ld GPUs a rank still needs %s GiB: needs devices of at least %s GiB, or a smaller "
                        "microbatch's activations (a shorter sequence, a smaller model)\n",
                tried, gib_text(least, need_txt), gib_text(least, state_txt));
    else fprintf(stderr, "; no layout fits on %ld to %ld GPUs either\n", gpus, tried);
}

/* What a search allocates. */
static void search_free(search *S) {
    free(S->c);
    free(S->probes);
    free(S->arenas);
    free(S->part_costs);
    for (int i = 0; i < S->n_splits; i++) free(S->splits[i].layers);
    free(S->splits);
}

static int run_search(search *S, cand **best_out, FILE *out) {
    S->c = malloc(sizeof(cand) * MAX_CAND);
    if (!S->c) return -1;
    enumerate(S);
    memory_first = !strcmp(S->a.objective, "memory");
    search_run(S);
    refine_buckets(S);
    refine_partition(S);
    cand **r = malloc(sizeof(cand *) * (size_t)(S->n + 1));
    int nr = 0;
    for (int i = 0; i < S->n; i++)
        if (S->c[i].state == 1) r[nr++] = &S->c[i];
    qsort(r, (size_t)nr, sizeof *r, by_result);
    if (out) {
        fprintf(out, "weft plan %s: %d layers, hidden %d, %d heads on %d %s (%d x %d), global batch %d, "
                     "backend %s, objective %s\n",
                S->a.plan, S->layers, S->hidden, S->heads, S->world, S->device, S->nodes, S->dpn,
                S->global, S->a.backend, S->a.objective);
        print_counts(S, out);
        if (nr) print_table(S, r, nr, out);
        if (S->a.print_sets) print_sets(S, r, nr, out);
        print_rejected(S, out);
    }
    *best_out = nr ? r[0] : NULL;
    free(r);
    return 0;
}

int plan_search_main(int argc, char **argv) {
    search S;
    memset(&S, 0, sizeof S);
    int rc = parse_args(argc, argv, &S.a);
    if (rc != EXIT_OK) return rc;
    if (S.a.global) snprintf(S.batch_set, sizeof S.batch_set, "batch.global=%d", S.a.global);
    if (S.a.calibration) {
        if (simulate_load_calibration(S.a.calibration, &search_cal) != 0) return EXIT_PLAN;
        if (search_cal.cuda != !strcmp(S.a.backend, "cuda")) {
            wf_error("%s was measured for the %s backend: search with --backend %s", S.a.calibration,
                     search_cal.cuda ? "cuda" : "cpu", search_cal.cuda ? "cuda" : "cpu");
            return EXIT_PLAN;
        }
    }
    /* every build allocates and frees arrays of the same sizes again (a 1T
     * candidate's schedule and memory plan are tens of MiB): keep freed
     * memory in the heap rather than unmapping it and faulting it in anew */
    mallopt(M_MMAP_THRESHOLD, 256 << 20);
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (load_base(&S) != 0) return EXIT_PLAN;
    if (kernels_reachable(&S) != 0) return EXIT_PLAN;
    cand *best = NULL;
    if (run_search(&S, &best, stdout) != 0) return EXIT_PLAN;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    fprintf(stderr, "weft: searched in %.2f s\n", (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9);
    if (!best) {
        explain_none(&S);
        search_free(&S);
        return EXIT_PLAN;
    }
    rc = EXIT_OK;
    if (S.a.out) {
        if (write_best(&S, best) != 0) rc = EXIT_PLAN;
        else fprintf(stderr, "weft: wrote %s\n", S.a.out);
    }
    if (S.a.scaling) {
        double mfu[3] = { best->mfu, NAN, NAN }, ratio[3] = { best->ratio, NAN, NAN };
        for (int s = 1; s < 3; s++) {
            cand b;
            if (search_again(&S, (long)S.world << s, 0, 0, &b, NULL) == 1) mfu[s] = b.mfu, ratio[s] = b.ratio;
        }
        printf("scaling (same global batch, the best layout found at each size):\n");
        for (int s = 0; s < 3; s++) {
            printf("  %2dx %6d GPUs: ", 1 << s, S.world << s);
            if (isnan(mfu[s])) { printf("no layout fits\n"); continue; }
            printf("MFU %5.1f%%, comm/compute %3.0f%%", mfu[s], 100 * ratio[s]);
            if (ratio[s] > 0.2) printf("  ! communication over 20%% of compute");
            if (s && !isnan(mfu[s - 1]) && mfu[s] < 0.9 * mfu[s - 1]) printf("  ! MFU drops more than 10%% per doubling");
            printf("\n");
        }
    }
    search_free(&S);
    return rc;
}
