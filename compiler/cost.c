/* cost.c: the analytic cost model of cost.h. */
#include "cost.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define GIB (1024.0 * 1024.0 * 1024.0)

/* ---- 1. hardware catalog ------------------------------------------------
 *
 * Devices, dense peaks (the datasheets print sparse figures with an asterisk;
 * those are twice the dense ones and are NOT used here):
 *   V100 SXM2 32GB: NVIDIA Tesla V100 datasheet. 15.7 fp32, 125 fp16 tensor
 *     core; no tf32 or bf16 units. HBM2 900 GB/s.
 *   A100 SXM 40GB / 80GB: NVIDIA A100 datasheet. 19.5 fp32, 156 tf32,
 *     312 fp16 / bf16. HBM2 1555 GB/s (40GB), HBM2e 2039 GB/s (80GB).
 *   H100 SXM5 80GB: NVIDIA H100 datasheet. 67 fp32, 494.7 tf32, 989 fp16 /
 *     bf16 (dense; 1979 with sparsity). HBM3 3350 GB/s.
 *   H200 SXM 141GB: NVIDIA H200 datasheet. Same compute as H100 SXM,
 *     HBM3e 4800 GB/s. The datasheet says 141 GB; kept as is here, though the
 *     driver reports about 140 GiB usable.
 * SM counts and the clocks the peaks are quoted at: V100 80 SMs at 1530 MHz
 * (NVIDIA Tesla V100 whitepaper, table 1); A100 108 SMs at 1410 MHz (NVIDIA
 * A100 Tensor Core GPU Architecture whitepaper, table 1: 1024 dense fp16 FMA
 * a clock per SM, 108 x 2048 x 1.41e9 = 312 TFLOP/s); H100 SXM5 and H200 132
 * SMs at 1830 MHz (NVIDIA H100 Tensor Core GPU Architecture whitepaper,
 * table 3: 989.4 TFLOP/s = 132 x 4096 x 1.83e9).  test_cost checks that the
 * products give the peaks.
 */
const cost_device cost_devices[] = {
    {"V100", 15.7, 0.0, 125.0, 0.0, 32.0, 900.0, 80, 1530.0},
    {"A100_40GB", 19.5, 156.0, 312.0, 312.0, 40.0, 1555.0, 108, 1410.0},
    {"A100_80GB", 19.5, 156.0, 312.0, 312.0, 80.0, 2039.0, 108, 1410.0},
    {"H100_SXM", 67.0, 494.7, 989.0, 989.0, 80.0, 3350.0, 132, 1830.0},
    {"H200", 67.0, 494.7, 989.0, 989.0, 141.0, 4800.0, 132, 1830.0},
};
const int cost_ndevices = (int)(sizeof cost_devices / sizeof cost_devices[0]);

/* Links, bandwidth per direction per device (what one rank can send while it
 * receives as much), because that is the B of the alpha-beta formulas: a ring
 * step sends one chunk and receives another at the same time.
 *   NVLink 2 (V100): 300 GB/s total bidirectional -> 150 per direction.
 *   NVLink 3 (A100): 600 total -> 300.   NVLink 4 (H100): 900 total -> 450.
 *   PCIe 4.0 x16: 16 GT/s * 16 lanes * 128/130 encoding / 8 = 31.5 GB/s;
 *   PCIe 5.0 x16: twice that, 63.0 (PCI-SIG specifications).
 *   InfiniBand HDR 200 Gb/s -> 25 GB/s; NDR 400 Gb/s -> 50 GB/s per NIC
 *   (one NIC per GPU assumed); RoCE 100 / 200 Gb/s -> 12.5 / 25 GB/s.
 * Bus bandwidth (the last column) is what NCCL reaches, as nccl-tests reports
 * it for a large (>= 1 GB) all-reduce (NVIDIA/nccl-tests doc/PERFORMANCE.md
 * defines busbw; figures published by NVIDIA and system vendors):
 *   NVLink 3, DGX A100 (NVSwitch): about 230 GB/s (NVIDIA DGX A100 nccl-tests
 *     results, quoted in NVIDIA's DGX A100 / SuperPOD material);
 *   NVLink 4, DGX H100: about 360 GB/s with rings; NVLS (NVLink SHARP, NCCL
 *     >= 2.17 on NVSwitch 3) reaches about 450-480, not modelled here, so this
 *     is the lower figure (NVIDIA NCCL 2.17 release blog / GTC 2023 talk);
 *   NVLink 2 (DGX-1V / DGX-2): about 120 (uncertain, 0.8 of nominal assumed);
 *   PCIe 4 / 5 without NVLink: about 21 / 42 (uncertain: 2/3 of nominal, the
 *     share nccl-tests reports on PCIe-switch servers);
 *   HDR: about 23 GB/s per NIC, NDR about 46 (nccl-tests across DGX A100 /
 *     H100 nodes, 8 NICs a node: about 185-190 and 370 GB/s busbw);
 *   RoCE: 0.88 of nominal (uncertain; vendor nccl-tests reports vary 0.8-0.9).
 * Latency is one ring step of NCCL's own tuning model (NCCL
 * src/graph/tuning.cc, hwLat, Ring / Simple protocol: NVLink 3.4 us, PCI 5.7,
 * network 14 in the 2.1x releases; older releases differ, e.g. network 6.6 or
 * 9.6 -- uncertain to a factor of two, and negligible beside the bytes of the
 * buckets and tp collectives priced here). */
const cost_link cost_links[] = {
    {"nvlink2", 150.0, 3.4, 120.0}, {"nvlink3", 300.0, 3.4, 230.0}, {"nvlink4", 450.0, 3.4, 360.0},
    {"pcie4", 31.5, 5.7, 21.0},     {"pcie5", 63.0, 5.7, 42.0},     {"ib_hdr", 25.0, 14.0, 23.0},
    {"ib_ndr", 50.0, 14.0, 46.0},   {"roce100", 12.5, 14.0, 11.0},  {"roce200", 25.0, 14.0, 22.0},
};
const int cost_nlinks = (int)(sizeof cost_links / sizeof cost_links[0]);

static const cost_device *user_devs;
static int user_ndevs;
static const cost_link *user_links;
static int user_nlinks;

void cost_override_catalog(const cost_device *devs, int ndevs, const cost_link *links,
                           int nlinks)
{
    user_devs = devs;
    user_ndevs = devs ? ndevs : 0;
    user_links = links;
    user_nlinks = links ? nlinks : 0;
}

/* Case-insensitive, with '-' and '_' the same character. */
static int same_name(const char *a, const char *b)
{
    if (!a || !b) return 0;
    for (;; a++, b++) {
        int x = tolower((unsigned char)*a), y = tolower((unsigned char)*b);
        if (x == '-') x = '_';
        if (y == '-') y = '_';
        if (x != y) return 0;
        if (!x) return 1;
    }
}

const cost_device *cost_find_device(const char *name)
{
    for (int i = 0; i < user_ndevs; i++)
        if (same_name(user_devs[i].name, name)) return &user_devs[i];
    for (int i = 0; i < cost_ndevices; i++)
        if (same_name(cost_devices[i].name, name)) return &cost_devices[i];
    return NULL;
}

const cost_link *cost_find_link(const char *name)
{
    for (int i = 0; i < user_nlinks; i++)
        if (same_name(user_links[i].name, name)) return &user_links[i];
    for (int i = 0; i < cost_nlinks; i++)
        if (same_name(cost_links[i].name, name)) return &cost_links[i];
    return NULL;
}

/* ---- 2. collectives ------------------------------------------------------ */

static double alpha(const cost_link *l) { return l->latency_us * 1e-6; }
static double bandwidth(const cost_link *l) { return (l->bus_gbs > 0 ? l->bus_gbs : l->gbs) * 1e9; }

/* Ring all-reduce = reduce-scatter + all-gather: 2(n-1) steps, each moving
 * S/n bytes per rank in each direction. */
double cost_allreduce_ring(double S, int n, const cost_link *l)
{
    if (n <= 1 || S <= 0) return 0.0;
    double steps = 2.0 * (n - 1);
    return steps * alpha(l) + steps / n * S / bandwidth(l);
}

/* Double binary tree (NCCL): the buffer is split between two trees in which
 * every rank is interior in at most one. Pipelined in small chunks, the reduce
 * phase then has each rank receive S in total (S/2 from each child of its
 * interior tree) and send S (S/2 up each tree), so it runs at S/B per
 * direction, and the broadcast phase mirrors it: 2 S/B. The tree depth only
 * adds latency, log2(n) hops up and again down; log2 is taken unrounded. */
double cost_allreduce_tree(double S, int n, const cost_link *l)
{
    if (n <= 1 || S <= 0) return 0.0;
    return 2.0 * log2((double)n) * alpha(l) + 2.0 * S / bandwidth(l);
}

double cost_reduce_scatter_ring(double S, int n, const cost_link *l)
{
    if (n <= 1 || S <= 0) return 0.0;
    double steps = n - 1.0;
    return steps * alpha(l) + steps / n * S / bandwidth(l);
}

/* The reverse of a reduce-scatter: the same steps, the same bytes. */
double cost_allgather_ring(double S, int n, const cost_link *l)
{
    return cost_reduce_scatter_ring(S, n, l);
}

double cost_p2p(double S, const cost_link *l)
{
    if (S <= 0) return 0.0;
    return alpha(l) + S / bandwidth(l);
}

double cost_dp_exposed(double total, double last, double overlap, int calls, double per_call)
{
    double e = total > overlap ? total - overlap : 0;
    if (last > e) e = last;
    return e + (calls > 0 && per_call > 0 ? calls * per_call : 0);
}

double cost_collective(const char *kind, const char *algo, double S, int n,
                       const cost_link *l)
{
    if (!kind || !l) return -1.0;
    int ring = !algo || !*algo || same_name(algo, "ring");
    int tree = algo && same_name(algo, "tree");
    int autoalg = algo && same_name(algo, "auto");
    if (!ring && !tree && !autoalg) return -1.0;

    if (same_name(kind, "allreduce") || same_name(kind, "all_reduce")) {
        if (ring) return cost_allreduce_ring(S, n, l);
        if (tree) return cost_allreduce_tree(S, n, l);
        return fmin(cost_allreduce_ring(S, n, l), cost_allreduce_tree(S, n, l));
    }
    if (tree) return -1.0; /* trees are modelled for all-reduce only */
    if (same_name(kind, "reduce_scatter") || same_name(kind, "reducescatter"))
        return cost_reduce_scatter_ring(S, n, l);
    if (same_name(kind, "allgather") || same_name(kind, "all_gather"))
        return cost_allgather_ring(S, n, l);
    if (same_name(kind, "p2p") || same_name(kind, "send") || same_name(kind, "sendrecv"))
        return n <= 1 ? 0.0 : cost_p2p(S, l);
    return -1.0;
}

/* ---- 3. compute ------------------------------------------------------------ */

double cost_gemm_seconds(double M, double N, double K, double peak_tflops, double efficiency)
{
    return 2.0 * M * N * K / (peak_tflops * 1e12 * efficiency);
}

/* I = 2MNK / (4 (MK + KN + MN)) = 1 / (2 (1/M + 1/N + 1/K)): each term 1/x
 * falls as x grows, so I, and with it the efficiency, never decreases in any
 * dimension. The bytes are the three operands touched once at 4 bytes an
 * element: exact for fp32, and for 16-bit operands twice the ideal traffic, a
 * rough allowance for operands re-read between tiles. I / (I + balance) rounds off the roofline's corner: half of eff_max
 * at the machine balance, eff_max only in the limit. COST_GEMM_BALANCE = 100
 * and COST_GEMM_EFF_MAX = 0.8 give 4096^3 about 70% and 1024^3 about 50% of
 * peak, the range cuBLAS reaches on A100 / H100 for bf16; recalibrate with
 * cost_gemm_efficiency_ex when measurements exist. */
double cost_gemm_efficiency_ex(double M, double N, double K, double eff_max, double balance)
{
    if (M <= 0 || N <= 0 || K <= 0) return 0.0;
    double intensity = 2.0 * M * N * K / (4.0 * (M * K + K * N + M * N));
    return eff_max * intensity / (intensity + balance);
}

double cost_gemm_efficiency(double M, double N, double K)
{
    return cost_gemm_efficiency_ex(M, N, K, COST_GEMM_EFF_MAX, COST_GEMM_BALANCE);
}

/* The tiles cuBLAS uses for 16-bit tensor-core GEMMs ("Matrix Multiplication
 * Background User's Guide", section 2.3: 256x128, 128x256, 128x128, 256x64,
 * 64x256, 128x64, 64x128, 64x64, larger tiles first) and the main loop's share
 * of an SM's peak for each.  The guide shows the larger tiles the more
 * efficient (more reuse of each operand loaded; its section 2.3 figure) but
 * prints no efficiencies, so these figures are ours: the large end is set to
 * the range published cuBLAS measurements report for large bf16 GEMMs, about
 * 70-80% of the dense peak on A100 and H100 (figure quoted from memory of
 * NVIDIA's cuBLAS / CUTLASS performance pages, not re-checked: uncertain);
 * the smaller tiles' figures are assumed (each halving of the tile's area
 * costs about a tenth; uncertain).  COST_GEMM_K_OVERHEAD (192 of K: the
 * pipeline's fill of about three 64-deep stages and the epilogue's store) is
 * likewise an assumption, chosen so that efficiency rises with K as the
 * guide's section 2.1 describes, not fitted to any training throughput. */
static const struct { int m, n; double eff; } gemm_tiles[] = {
    {256, 128, 0.80}, {128, 256, 0.80}, {128, 128, 0.72}, {256, 64, 0.65},
    {64, 256, 0.65},  {128, 64, 0.65},  {64, 128, 0.65},  {64, 64, 0.55},
};

static cost_gemm_gpu one_tile(double M, double N, double K, int sms, double peak_tflops,
                              double hbm_gbs, double el, int t)
{
    cost_gemm_gpu g = {gemm_tiles[t].m, gemm_tiles[t].n, 0, 0, 0, 0, 0};
    g.tiles = ceil(M / g.tile_m) * ceil(N / g.tile_n);
    /* split-K (CUTLASS documentation, "Efficient GEMM in CUDA", parallel
     * reduction across K): with fewer tiles than SMs, K is cut into slices
     * (at least 256 deep each) so that every SM has work, and a second pass
     * sums the slices' fp32 partial outputs through HBM */
    double split = floor(sms / g.tiles);
    if (split > K / 256.0) split = floor(K / 256.0);
    if (split < 1) split = 1;
    g.waves = ceil(g.tiles * split / sms);
    /* one tile's K loop, plus its fixed start and end, at 1/sms of the peak */
    double per_sm = peak_tflops * 1e12 / sms * gemm_tiles[t].eff;
    double compute = g.waves * 2.0 * g.tile_m * g.tile_n * (K / split + COST_GEMM_K_OVERHEAD) / per_sm;
    double memory = hbm_gbs > 0 ? (el * (M * K + K * N + M * N) + (split > 1 ? 8.0 * split * M * N : 0)) /
                                      (hbm_gbs * 1e9)
                                : 0;
    g.memory_bound = memory > compute;
    g.seconds = g.memory_bound ? memory : compute;
    g.efficiency = 2.0 * M * N * K / g.seconds / (peak_tflops * 1e12);
    return g;
}

cost_gemm_gpu cost_gemm_gpu_time(double M, double N, double K, int sms, double peak_tflops,
                                 double hbm_gbs, double el, int tile_m, int tile_n)
{
    cost_gemm_gpu best = {0, 0, 0, 0, 0, 0, 0};
    if (M <= 0 || N <= 0 || K <= 0 || sms <= 0 || peak_tflops <= 0) return best;
    int n = (int)(sizeof gemm_tiles / sizeof gemm_tiles[0]);
    for (int t = 0; t < n; t++) {
        if (tile_m > 0 && (gemm_tiles[t].m != tile_m || gemm_tiles[t].n != tile_n)) continue;
        cost_gemm_gpu g = one_tile(M, N, K, sms, peak_tflops, hbm_gbs, el, t);
        if (best.seconds == 0 || g.seconds < best.seconds) best = g;
    }
    return best;
}

double cost_memory_bound_seconds(double bytes, double gbs)
{
    return bytes / (gbs * 1e9);
}

/* ---- 4. model size and memory verdict ------------------------------------- */

int cost_memory_verdict(double total_bytes, double device_gib, char *buf, size_t n)
{
    if (total_bytes < 0) {
        if (buf && n) snprintf(buf, n, "invalid arguments");
        return 0;
    }
    double used = total_bytes / GIB;
    int fits = total_bytes <= device_gib * GIB;
    if (buf && n) {
        if (fits)
            snprintf(buf, n, "fits: %.1f of %g GiB", used, device_gib);
        else
            snprintf(buf, n, "does not fit: %.1f of %g GiB (%.1f GiB over)", used, device_gib,
                     used - device_gib);
    }
    return fits;
}
