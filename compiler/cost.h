/* cost.h: analytic cost model for distributed GPT training (pure math).
 *
 * Four parts, all independent of Lua, MPI and the rest of the compiler:
 *   1. a hardware catalog: GPUs (dense peak TFLOP/s, memory, HBM bandwidth) and
 *      links (per-direction bandwidth, latency), overridable by the caller;
 *   2. collective times under the alpha-beta model;
 *   3. GEMM and memory-bound kernel times, with a shape-based efficiency;
 *   4. per-rank memory: model states (ZeRO stages) and activations
 *      (Korthikanti et al. 2022), with a fits / does-not-fit verdict.
 *
 * Units: time in seconds, sizes in bytes, bandwidth in GB/s (1e9 bytes/s),
 * compute in TFLOP/s (1e12 flop/s), device memory in GiB (2^30 bytes).
 */
#ifndef WEFT_COST_H
#define WEFT_COST_H

#include <stddef.h>

/* ---- 1. hardware catalog ------------------------------------------------ */

/* Dense (no structured sparsity) peak throughput per precision, TFLOP/s.
 * 0 means the precision has no hardware path (V100 has no tf32 / bf16). */
typedef struct {
    const char *name;
    double fp32, tf32, fp16, bf16;
    double memory_gib, hbm_gbs;
} cost_device;

/* gbs is the bandwidth one device can push in ONE direction (send, while it
 * receives the same amount) over this link kind, GB/s; latency_us is the
 * per-message (per ring / tree step) start-up cost, microseconds. */
typedef struct {
    const char *name;
    double gbs;
    double latency_us;
} cost_link;

/* The built-in tables (vendor figures, see cost.c). */
extern const cost_device cost_devices[];
extern const int cost_ndevices;
extern const cost_link cost_links[];
extern const int cost_nlinks;

/* Lookup by name, case-insensitive, '-' and '_' equivalent ("h100-sxm" finds
 * "H100_SXM"). Tables given to cost_override_catalog are searched first, so a
 * caller can add entries or shadow built-in ones. NULL when unknown. */
const cost_device *cost_find_device(const char *name);
const cost_link *cost_find_link(const char *name);

/* Installs caller tables (not copied: they must outlive the lookups). NULL / 0
 * removes an override. Global state: not thread-safe. */
void cost_override_catalog(const cost_device *devs, int ndevs, const cost_link *links,
                           int nlinks);

/* ---- 2. collectives (alpha-beta) ----------------------------------------
 * S is the full buffer in bytes (for reduce-scatter the input, for all-gather
 * the output: each rank owns S/n), n the number of ranks, B = l->gbs * 1e9,
 * a = l->latency_us * 1e-6. n <= 1 or S <= 0 costs 0.
 *   ring all-reduce    2(n-1) a + 2 (n-1)/n S/B
 *   tree all-reduce    2 log2(n) a + 2 S/B       (double binary tree, pipelined)
 *   ring reduce-scatter  (n-1) a + (n-1)/n S/B
 *   ring all-gather      (n-1) a + (n-1)/n S/B
 *   point-to-point       a + S/B
 */
double cost_allreduce_ring(double S, int n, const cost_link *l);
double cost_allreduce_tree(double S, int n, const cost_link *l);
double cost_reduce_scatter_ring(double S, int n, const cost_link *l);
double cost_allgather_ring(double S, int n, const cost_link *l);
double cost_p2p(double S, const cost_link *l);

/* kind: "allreduce" | "reduce_scatter" | "allgather" | "p2p" (also spelled
 * "all_reduce", "reducescatter", "all_gather", "send", "sendrecv");
 * algo: "ring" (also NULL or ""), "tree" (all-reduce only), or "auto" (the
 * cheaper of the two). For p2p, n is the ranks involved: n <= 1 is a copy to
 * oneself and costs 0. Returns -1 for an unknown kind / algo or a NULL link. */
double cost_collective(const char *kind, const char *algo, double S, int n,
                       const cost_link *l);

/* ---- 3. compute --------------------------------------------------------- */

/* 2MNK / (peak * 1e12 * efficiency). */
double cost_gemm_seconds(double M, double N, double K, double peak_tflops, double efficiency);

/* Soft roofline on arithmetic intensity I = 2MNK / (4 (MK + KN + MN)) flop per
 * byte: eff = COST_GEMM_EFF_MAX * I / (I + COST_GEMM_BALANCE). Non-decreasing
 * in each of M, N, K, always below COST_GEMM_EFF_MAX < 1, and saturating there
 * for large shapes. */
#define COST_GEMM_EFF_MAX 0.80
#define COST_GEMM_BALANCE 100.0
double cost_gemm_efficiency(double M, double N, double K);
/* The same with the two constants chosen by the caller (calibration). */
double cost_gemm_efficiency_ex(double M, double N, double K, double eff_max, double balance);

/* bytes / (gbs * 1e9): a kernel that streams its operands once through HBM. */
double cost_memory_bound_seconds(double bytes, double gbs);

/* ---- 4. memory per rank --------------------------------------------------- */

typedef struct {
    double params, grads, optimizer, activations, comm_buffers, workspace, total;
} cost_memory;

typedef struct {
    int layers;          /* transformer layers on this rank's stage */
    int hidden;          /* h */
    int heads;           /* a */
    int seq;             /* s */
    int micro_batch;     /* b */
    int vocab;           /* V (only for the embedding / head terms) */
    int tp, pp, dp;      /* t, p, d; values < 1 are invalid */
    int sp;              /* sequence parallelism, 0 / 1 */
    const char *recompute; /* "none" (also NULL) | "selective" | "full" */
    const char *precision; /* "bf16" (also NULL) | "fp16" | "fp32" */
    int zero_stage;      /* 0..3 */
    int inflight;        /* microbatches with live activations on this stage;
                            1F1B: p - stage. < 1 counts as 1 */
    double bucket_mb;    /* gradient-reduction bucket, MiB */
    double workspace_mb; /* library workspace / allocator slack, MiB */
    double params;       /* parameters on this rank after the tp / pp split and
                            before ZeRO sharding; <= 0: estimated from the shape
                            with Megatron's split (matrices, QKV / MLP-in biases
                            and the token embedding / t; the rest replicated; the
                            last stage of p > 1 keeps a copy of the tied head) */
    int embedding;       /* this stage holds the input embedding (first stage) */
    int head;            /* this stage holds the LM head and loss (last stage) */
    int ffn_hidden;      /* > 0: a LLaMA layer (RMSNorm, GQA, SwiGLU of this width,
                            no dropout, no biases, untied head); 0: GPT */
    int kv_heads;        /* LLaMA: key/value heads (grouped-query attention) */
    int flash_attention; /* 1: attention keeps an fp32 log-sum-exp per query row
                            and head, 4asb/t bytes, instead of the scores
                            (the 5as/h term; runtime/cuda/attention.cu) */
} cost_memory_args;

/* GPT-2 layout, biases, tied input / output embedding:
 * 12 L h^2 + 13 L h + (V + s) h + 2h. */
double cost_gpt_params(double L, double h, double V, double s);

/* LLaMA layout (no biases, untied embedding and head), with kvd = kv_heads *
 * head size and f = ffn_hidden: L (2h^2 + 2h kvd + 3hf + 2h) + 2Vh + h.
 * LLaMA-2-70B's shapes give 68,976,648,192. */
double cost_llama_params(double L, double h, double kvd, double f, double V);

/* Activation bytes of one transformer layer for one microbatch:
 *   no tp (t = 1)        sbh (34 + 5as/h)
 *   tp, no sp            sbh (10 + 24/t + 5as/(ht))
 *   tp + sp              sbh/t (34 + 5as/h)
 *   selective recompute  the same without the 5as/h attention-score term
 *   full recompute       only the layer input, 2sbh (2sbh/t with sp)
 * times 2 when precision is fp32.  flash_attention drops the 5as/h term and,
 * without recompute, adds the fp32 log-sum-exp, 4asb/t bytes.
 * -1 on invalid arguments (as below).
 * A LLaMA layer (ffn_hidden > 0) keeps, in 16-bit: both RMSNorm inputs and
 * both projection inputs (8sbh, replicated over t without sp), the rotated q
 * and k, v and the o_proj input (2sb(2h + 2kvd)), gate, up and the down_proj
 * input (6sbf), and the softmax output (2as^2b; no dropout anywhere):
 *   no sp   sb (8h + (4h + 4kvd + 6f + 2as) / t)
 *   sp      sb (12h + 4kvd + 6f + 2as) / t
 * with the same selective (no 2as term) and full recompute cases;
 * flash_attention drops the 2as term and adds the log-sum-exp as for GPT. */
double cost_activation_bytes_per_layer(const cost_memory_args *a);

/* Everything the rank holds at its peak, bytes:
 *   params / grads   N * (2 or 4), divided by d from ZeRO stage 3 / 2 up
 *   optimizer        N * 12 (mixed precision: fp32 master + 2 Adam moments)
 *                    or N * 8 (fp32), divided by d from stage 1 up
 *   activations      inflight * (layers * per-layer bytes
 *                      + embedding: sbh dropout mask (/t with sp)
 *                      + head: 4sbh (/t with sp) + 4sbV/t fp32 logits)
 *                    + one layer without recompute when recompute is "full"
 *   comm_buffers     bucket_mb MiB (x 2 under ZeRO-2: one reducing, one being
 *                    written; x 4 under ZeRO-3: + gather buffers in use and
 *                    prefetched), + a send and a receive buffer of one
 *                    boundary activation, 2 sbh elements (/t with sp), when p > 1
 *   workspace        workspace_mb MiB
 * An invalid argument (unknown string, t / p / d < 1, zero stage outside
 * 0..3) gives total = -1 and the other fields 0. */
cost_memory cost_memory_per_rank(const cost_memory_args *a);

/* Writes "fits: 61.2 of 80 GiB" or "does not fit: 91.3 of 80 GiB (11.3 GiB
 * over)" (or "invalid arguments") into buf; returns 1 when it fits, else 0. */
int cost_memory_verdict(const cost_memory *m, double device_gib, char *buf, size_t n);

#endif
