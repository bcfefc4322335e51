/* cost.h: analytic cost model for distributed GPT training (pure math).
 *
 * Four parts, all independent of Lua, MPI and the rest of the compiler:
 *   1. a hardware catalog: GPUs (dense peak TFLOP/s, memory, HBM bandwidth) and
 *      links (per-direction bandwidth, latency), overridable by the caller;
 *   2. collective times under the alpha-beta model;
 *   3. GEMM and memory-bound kernel times, with a shape-based efficiency;
 *   4. a fits / does-not-fit verdict on a rank's memory (the bytes
 *      themselves come from the compiler's memory model, memory.c).
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

/* ---- 4. memory verdict --------------------------------- */

/* Writes "fits: 61.2 of 80 GiB" or "does not fit: 91.3 of 80 GiB (11.3 GiB
 * over)" for total_bytes on a device of device_gib (or "invalid arguments"
 * when total_bytes < 0) into buf; returns 1 when it fits, else 0. */
int cost_memory_verdict(double total_bytes, double device_gib, char *buf, size_t n);

#endif
