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
    int sms;          /* streaming multiprocessors (0: unknown, no tile model) */
    double clock_mhz; /* the clock the dense peaks are quoted at */
} cost_device;

/* gbs is the bandwidth one device can push in ONE direction (send, while it
 * receives the same amount) over this link kind, GB/s; latency_us is the
 * per-message (per ring / tree step) start-up cost, microseconds. */
typedef struct {
    const char *name;
    double gbs;
    double latency_us;
    /* NCCL bus bandwidth a large all-reduce reaches on this link (nccl-tests'
     * busbw, GB/s), the B the collective formulas use; 0: gbs, nominal. */
    double bus_gbs;
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
 * the output: each rank owns S/n), n the number of ranks, B = the link's bus
 * bandwidth (l->bus_gbs, else l->gbs) * 1e9, a = l->latency_us * 1e-6 (one
 * ring or tree step). n <= 1 or S <= 0 costs 0.  With B the nccl-tests bus
 * bandwidth, the ring formulas are nccl-tests' own definition of busbw
 * (all-reduce busbw = S / t * 2(n-1)/n) read backwards.
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

/* Exposed time of one stage's data-parallel bucket collectives, seconds:
 * total (their sum) runs under the last `overlap` seconds of backward, but
 * the last bucket's collective (`last`) starts only when backward ends; and
 * each of `calls` collectives takes `per_call` seconds of the rank's CPU in
 * MPI calls (issue and progress: Open MPI's non-blocking collectives advance
 * only inside MPI calls, runtime/common/step.c), which nothing overlaps:
 *   max(total - overlap, last, 0) + calls * per_call */
double cost_dp_exposed(double total, double last, double overlap, int calls, double per_call);

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

/* GPU GEMM by tiles and waves (NVIDIA, "Matrix Multiplication Background
 * User's Guide", DU-09799-001, sections 2.3 and 3): the output is cut into
 * tile_m x tile_n tiles, one per SM at a time, so the kernel runs
 * waves = ceil(tiles / sms) rounds, each as long as one tile's K loop at the
 * SM's share of the peak times the tile's main-loop efficiency, plus a fixed
 * prologue / epilogue of COST_GEMM_K_OVERHEAD steps of K; with fewer tiles
 * than SMs, K is split across them (split-K) and the slices summed after.  The time is the
 * larger of that and the operands' HBM traffic (roofline), and the tile is the
 * fastest of the candidates, as cuBLAS's heuristic picks. */
typedef struct {
    int tile_m, tile_n;  /* the tile chosen */
    double tiles, waves; /* tiles of the output; ceil(tiles / sms) */
    double seconds, efficiency; /* efficiency: 2MNK / seconds / peak */
    int memory_bound;    /* the HBM term won */
} cost_gemm_gpu;
#define COST_GEMM_K_OVERHEAD 192.0
/* el: bytes of an operand element (2 for bf16 / fp16). Zero when a dimension
 * is not positive or the device has no SM count. tile_m > 0 forces one tile
 * (its efficiency from the table), 0 lets the model choose. */
cost_gemm_gpu cost_gemm_gpu_time(double M, double N, double K, int sms, double peak_tflops,
                                 double hbm_gbs, double el, int tile_m, int tile_n);

/* bytes / (gbs * 1e9): a kernel that streams its operands once through HBM. */
double cost_memory_bound_seconds(double bytes, double gbs);

/* ---- 4. memory verdict --------------------------------- */

/* Writes "fits: 61.2 of 80 GiB" or "does not fit: 91.3 of 80 GiB (11.3 GiB
 * over)" for total_bytes on a device of device_gib (or "invalid arguments"
 * when total_bytes < 0) into buf; returns 1 when it fits, else 0. */
int cost_memory_verdict(double total_bytes, double device_gib, char *buf, size_t n);

#endif
