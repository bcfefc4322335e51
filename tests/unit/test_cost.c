/* test_cost.c: the cost model against closed forms and published worked
 * examples: alpha-beta collectives, GEMM efficiency shape, the exposed
 * data-parallel buckets, catalog lookups, the memory verdict. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cost.h"

#include "check.h"

/* Equal up to rounding: the model and the test evaluate the same formula in a
 * different order, so allow a few ulps, nothing more. */
static int same(double got, double want) { return fabs(got - want) <= 1e-13 * fabs(want); }

static void collectives(void)
{
    const cost_link *l = cost_find_link("ib_ndr");
    double B = 46e9, a = 14e-6; /* ib_ndr: 46 GB/s bus bandwidth, 14 us a step */
    int ns[] = {2, 3, 8, 64, 1000};
    double sizes[] = {1.0, 4096.0, 1.5e8, 7e9};
    int ring_ok = 1, split_ok = 1;
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
        for (size_t j = 0; j < sizeof sizes / sizeof sizes[0]; j++) {
            int n = ns[i];
            double S = sizes[j];
            double want = 2.0 * (n - 1) / n * S / B + 2.0 * (n - 1) * a;
            if (!same(cost_allreduce_ring(S, n, l), want)) {
                printf("     ring n=%d S=%g: %.17g, want %.17g\n", n, S,
                       cost_allreduce_ring(S, n, l), want);
                ring_ok = 0;
            }
            double rs_ag = cost_reduce_scatter_ring(S, n, l) + cost_allgather_ring(S, n, l);
            if (!same(rs_ag, cost_allreduce_ring(S, n, l))) split_ok = 0;
        }
    check(ring_ok, "ring all-reduce = 2(n-1)/n S/B + 2(n-1)a for n in {2,3,8,64,1000}, "
                   "S in {1 B, 4 KiB, 150 MB, 7 GB}");
    /* One concrete number by hand: n = 8, S = 1 GB on NDR:
     * 2*7/8 * 1e9/46e9 = 0.0380435 s, plus 14 * 14 us = 0.000196 s. */
    check(same(cost_allreduce_ring(1e9, 8, l), 1.75e9 / 46e9 + 196e-6),
          "ring all-reduce 1 GB over 8 NDR ranks = 0.038239 s (%.6f)",
          cost_allreduce_ring(1e9, 8, l));
    check(split_ok, "ring reduce-scatter + all-gather = ring all-reduce (all n, S above)");
    /* reduce-scatter alone, n = 4, S = 1e8: 3/4 * 1e8/46e9 + 3 * 14 us. */
    check(same(cost_reduce_scatter_ring(1e8, 4, l), 0.75e8 / 46e9 + 42e-6),
          "ring reduce-scatter 100 MB over 4 ranks = 1.672 ms");

    int zero_ok = 1;
    for (size_t j = 0; j < sizeof sizes / sizeof sizes[0]; j++) {
        double S = sizes[j];
        if (cost_allreduce_ring(S, 1, l) != 0 || cost_allreduce_tree(S, 1, l) != 0 ||
            cost_reduce_scatter_ring(S, 1, l) != 0 || cost_allgather_ring(S, 1, l) != 0 ||
            cost_collective("p2p", NULL, S, 1, l) != 0 ||
            cost_collective("allreduce", "auto", S, 1, l) != 0)
            zero_ok = 0;
    }
    check(zero_ok, "n = 1 costs 0 for every collective and algorithm");

    /* p2p, 64 MiB over NVLink 4: 3.4 us + 67108864 / 360e9 s. */
    const cost_link *nv = cost_find_link("nvlink4");
    check(same(cost_p2p(67108864.0, nv), 3.4e-6 + 67108864.0 / 360e9),
          "p2p 64 MiB over NVLink 4 = a + S/B = %.3f us", cost_p2p(67108864.0, nv) * 1e6);
    check(same(cost_collective("sendrecv", "ring", 1e6, 2, l), a + 1e6 / B),
          "cost_collective(\"sendrecv\") = a + S/B");

    /* Tree, n = 16, S = 1e9 on NDR: 2 * 4 * 14 us + 2 * 1e9 / 46e9. */
    check(same(cost_allreduce_tree(1e9, 16, l), 112e-6 + 2e9 / 46e9),
          "tree all-reduce 1 GB over 16 ranks = 2 log2(n) a + 2 S/B = 0.043590 s");
    /* Small messages: the tree's log2(n) latency wins; large ones: the
     * ring's (n-1)/n bandwidth factor. At n = 8 the ring is cheaper once
     * 2S/(nB) > (2(n-1) - 2 log2 n) a, i.e. S > 8 * 46e9 * 14e-6 * 4 = 21 MB.
     * auto takes the cheaper. */
    double small_auto = cost_collective("all_reduce", "auto", 1024, 8, l);
    double big_auto = cost_collective("allreduce", "auto", 1e9, 8, l);
    check(small_auto == cost_allreduce_tree(1024, 8, l) &&
              big_auto == cost_allreduce_ring(1e9, 8, l) &&
              cost_collective("allreduce", "tree", 1e9, 8, l) ==
                  cost_allreduce_tree(1e9, 8, l),
          "auto picks tree for 1 KiB and ring for 1 GB at n = 8");
    check(cost_collective("broadcast", "ring", 1e6, 4, l) < 0 &&
              cost_collective("allreduce", "hypercube", 1e6, 4, l) < 0 &&
              cost_collective("allgather", "tree", 1e6, 4, l) < 0 &&
              cost_collective("allreduce", "ring", 1e6, 4, NULL) < 0,
          "unknown kind, unknown algo, tree all-gather, NULL link -> -1");
}

static void compute(void)
{
    double dims[] = {1, 16, 128, 768, 1024, 4096, 12288, 65536, 1e6};
    int nd = (int)(sizeof dims / sizeof dims[0]);
    int mono = 1, below = 1;
    for (int i = 0; i < nd; i++)
        for (int j = 0; j < nd; j++)
            for (int k = 0; k < nd; k++) {
                double e = cost_gemm_efficiency(dims[i], dims[j], dims[k]);
                if (!(e > 0 && e < 1)) below = 0;
                if (i + 1 < nd && cost_gemm_efficiency(dims[i + 1], dims[j], dims[k]) < e) mono = 0;
                if (j + 1 < nd && cost_gemm_efficiency(dims[i], dims[j + 1], dims[k]) < e) mono = 0;
                if (k + 1 < nd && cost_gemm_efficiency(dims[i], dims[j], dims[k + 1]) < e) mono = 0;
            }
    check(mono, "gemm efficiency non-decreasing in M, N and K (9^3 grid)");
    double e4k = cost_gemm_efficiency(4096, 4096, 4096);
    double huge = cost_gemm_efficiency(1e7, 1e7, 1e7);
    check(below && huge < COST_GEMM_EFF_MAX && huge > 0.99 * COST_GEMM_EFF_MAX && e4k < huge,
          "gemm efficiency in (0, 1), saturating: 4096^3 %.3f, 1e7^3 %.4f -> %.2f", e4k, huge,
          COST_GEMM_EFF_MAX);

    /* 2 * 4096^3 flop at 989 TFLOP/s * 0.5 */
    double t = cost_gemm_seconds(4096, 4096, 4096, 989, 0.5);
    check(same(t, 2.0 * 4096.0 * 4096.0 * 4096.0 / (989e12 * 0.5)),
          "gemm 4096^3 on H100 bf16 at 50%%: %.1f us", t * 1e6);
    check(same(cost_memory_bound_seconds(3.35e9, 3350), 1e-3),
          "memory-bound: 3.35 GB at 3350 GB/s = 1 ms");
}

/* The GEMM tile / wave model against the published figures it cites
 * (cost.c): large bf16 GEMMs at 70-80% of the dense peak on A100 and H100;
 * efficiency rising with the hidden size; one tile more than the SMs costing
 * a second wave ("Matrix Multiplication Background User's Guide", 3.2). */
static void gemm_gpu(void)
{
    const cost_device *a100 = cost_find_device("A100_80GB"), *h100 = cost_find_device("H100_SXM");
    /* the peaks are SMs x clock x dense flop a clock per SM (A100 whitepaper
     * table 1: 2048 for 16-bit on tensor cores; H100 whitepaper table 3:
     * 4096); the datasheets round, so within 0.1% */
    check(fabs(a100->sms * a100->clock_mhz * 1e6 * 2048 / 1e12 / a100->bf16 - 1) < 1e-3 &&
              fabs(h100->sms * h100->clock_mhz * 1e6 * 4096 / 1e12 / h100->bf16 - 1) < 1e-3,
          "peak = SMs x clock x flop per clock: A100 %.1f, H100 %.1f TFLOP/s",
          a100->sms * a100->clock_mhz * 2048e-6, h100->sms * h100->clock_mhz * 4096e-6);
    /* band: the published 70-80% with 2 points either side for the model's
     * own rounding of K overhead and waves */
    cost_gemm_gpu ga = cost_gemm_gpu_time(8192, 8192, 8192, a100->sms, a100->bf16, a100->hbm_gbs, 2, 0, 0);
    cost_gemm_gpu gh = cost_gemm_gpu_time(8192, 8192, 8192, h100->sms, h100->bf16, h100->hbm_gbs, 2, 0, 0);
    check(ga.efficiency > 0.68 && ga.efficiency < 0.82 && gh.efficiency > 0.68 && gh.efficiency < 0.82 &&
              !ga.memory_bound,
          "bf16 8192^3: A100 %.3f, H100 %.3f of dense peak (published 0.70-0.80, band 0.68-0.82)",
          ga.efficiency, gh.efficiency);
    /* a transformer layer's QKV GEMM (8192 tokens x 3h x h): efficiency
     * rises with h, from the small models' to the large ones' */
    double hs[] = {1024, 2048, 4096, 8192, 16384};
    double prev = 0;
    int rising = 1;
    for (int i = 0; i < 5; i++) {
        double e = cost_gemm_gpu_time(8192, 3 * hs[i], hs[i], a100->sms, a100->bf16, a100->hbm_gbs, 2, 0, 0)
                       .efficiency;
        if (!(e > prev)) rising = 0;
        prev = e;
    }
    double e1k = cost_gemm_gpu_time(8192, 3072, 1024, a100->sms, a100->bf16, a100->hbm_gbs, 2, 0, 0).efficiency;
    check(rising && e1k < 0.65 && prev > 0.75,
          "QKV GEMM efficiency rises with hidden 1024..16384 (%.3f -> %.3f)", e1k, prev);
    /* wave quantization: one fixed 256x128 tile, 108 vs 109 tiles on 108 SMs */
    cost_gemm_gpu w1 = cost_gemm_gpu_time(256 * 108, 128, 4096, a100->sms, a100->bf16, a100->hbm_gbs, 2, 256, 128);
    cost_gemm_gpu w2 = cost_gemm_gpu_time(256 * 109, 128, 4096, a100->sms, a100->bf16, a100->hbm_gbs, 2, 256, 128);
    check(w1.waves == 1 && w2.waves == 2 && fabs(w2.seconds / w1.seconds - 2) < 0.02,
          "tiles = SMs + 1 costs 2 waves: %.3f x the time of tiles = SMs", w2.seconds / w1.seconds);
    /* with the tile free to change the cliff is smaller but still there:
     * 1% more work, over 30% more time */
    cost_gemm_gpu f1 = cost_gemm_gpu_time(256 * 108, 128, 4096, a100->sms, a100->bf16, a100->hbm_gbs, 2, 0, 0);
    cost_gemm_gpu f2 = cost_gemm_gpu_time(256 * 109, 128, 4096, a100->sms, a100->bf16, a100->hbm_gbs, 2, 0, 0);
    check(f2.seconds / f1.seconds > 1.3, "with the tile chosen: %.2f x (%dx%d tiles)", f2.seconds / f1.seconds,
          f2.tile_m, f2.tile_n);
    /* a matrix-vector product is memory bound: the weight read once at HBM
     * bandwidth, 2 x 8192^2 bytes / 2039 GB/s = 65.8 us (within 1%: the
     * vectors) */
    cost_gemm_gpu v = cost_gemm_gpu_time(1, 8192, 8192, a100->sms, a100->bf16, a100->hbm_gbs, 2, 0, 0);
    check(v.memory_bound && fabs(v.seconds / (2.0 * 8192 * 8192 / 2039e9) - 1) < 0.01,
          "GEMV 1 x 8192 x 8192 memory bound: %.1f us", v.seconds * 1e6);
    check(cost_gemm_gpu_time(0, 1, 1, 108, 312, 2039, 2, 0, 0).seconds == 0 &&
              cost_gemm_gpu_time(1, 1, 1, 0, 312, 2039, 2, 0, 0).seconds == 0,
          "no SMs or an empty shape: zero");
}

/* Ring all-reduce against the nccl-tests bus bandwidth it is built on: a
 * 1 GB all-reduce over the 8 GPUs of a DGX A100 (NVLink 3 / NVSwitch) gives
 * back busbw = S / t x 2(n-1)/n of about 230 GB/s (NVIDIA's published DGX A100
 * figure), less only the 14 steps' latency (48 us of 7.6 ms: within 1%). */
static void nccl_busbw(void)
{
    const cost_link *nv3 = cost_find_link("nvlink3"), *hdr = cost_find_link("ib_hdr");
    double t = cost_allreduce_ring(1e9, 8, nv3);
    double busbw = 1e9 / t * 2 * 7 / 8 / 1e9;
    check(fabs(busbw / 230 - 1) < 0.01, "DGX A100 all-reduce 1 GB: %.2f ms, busbw %.0f GB/s (published ~230)",
          t * 1e3, busbw);
    /* across 16 nodes on HDR, one GPU a node: 2 x 15/16 x 1 GB / 23 GB/s +
     * 30 x 14 us = 81.9 ms */
    check(same(cost_allreduce_ring(1e9, 16, hdr), 2.0 * 15 / 16 * 1e9 / 23e9 + 30 * 14e-6),
          "HDR ring all-reduce 1 GB over 16 nodes: %.1f ms", cost_allreduce_ring(1e9, 16, hdr) * 1e3);
    /* a link without a bus figure falls back to its nominal bandwidth */
    cost_link bare = {"bare", 100, 0, 0};
    check(same(cost_allreduce_ring(1e9, 2, &bare), 1e9 / 100e9), "no bus_gbs: nominal gbs");
}

/* Data-parallel buckets on a CPU-like link (1 GB/s, 5 us a step; weft
 * calibrate measures MPI near these here): 4 MiB of gradients on 2 ranks, as
 * one bucket or 16, under 50 ms of backward.  By hand, a ring all-reduce on
 * 2 ranks is 2 steps of latency plus S/B: one bucket 10 us + 4.194304 ms =
 * 4.204304 ms, exposed whole (it starts when backward ends); sixteen are
 * 10 us + 0.262144 ms = 0.272144 ms each, and only the last is exposed.
 * Free calls favour the small buckets by 3.932160 ms; at 300 us of CPU a
 * call the sixteen pay 16 x 0.3 = 4.8 ms against 0.3 ms, so they are slower
 * by 4.8 + 0.272144 - 0.3 - 4.204304 = 0.567840 ms. */
static void dp_buckets(void)
{
    cost_link cpu = {"cpu", 1, 5, 0};
    double S = 4194304, bw = 50e-3;
    double one = cost_allreduce_ring(S, 2, &cpu), each = cost_allreduce_ring(S / 16, 2, &cpu);
    check(same(one, 4.204304e-3) && same(each, 0.272144e-3), "ring all-reduce on 2 ranks: 4 MiB %.6f ms, "
          "0.25 MiB %.6f ms", one * 1e3, each * 1e3);
    double few0 = cost_dp_exposed(one, one, bw, 1, 0), many0 = cost_dp_exposed(16 * each, each, bw, 16, 0);
    check(same(few0 - many0, 3.932160e-3), "free calls: 16 small buckets expose %.6f ms less than one",
          (few0 - many0) * 1e3);
    double few = cost_dp_exposed(one, one, bw, 1, 300e-6), many = cost_dp_exposed(16 * each, each, bw, 16, 300e-6);
    check(same(few, 4.504304e-3) && same(many, 5.072144e-3) && same(many - few, 0.567840e-3),
          "300 us a call: one bucket %.6f ms, sixteen %.6f ms (slower by %.6f ms)", few * 1e3, many * 1e3,
          (many - few) * 1e3);
    /* a backward shorter than the sum: the rest is exposed, then the calls
     * (4.354304 - 1 = 3.354304 ms, plus 16 x 10 us) */
    check(same(cost_dp_exposed(16 * each, each, 1e-3, 16, 10e-6), 3.514304e-3),
          "backward of 1 ms: %.6f ms exposed", cost_dp_exposed(16 * each, each, 1e-3, 16, 10e-6) * 1e3);
}

static void catalog(void)
{
    const cost_device *h100 = cost_find_device("H100_SXM");
    const cost_device *a100 = cost_find_device("a100-80gb");
    const cost_device *v100 = cost_find_device("V100");
    const cost_device *h200 = cost_find_device("H200");
    check(h100 && h100->bf16 == 989 && h100->fp32 == 67 && h100->tf32 == 494.7 &&
              a100 && a100->hbm_gbs == 2039 && a100->bf16 == 312 &&
              cost_find_device("A100_40GB")->hbm_gbs == 1555 && v100 && v100->fp16 == 125 &&
              v100->bf16 == 0 && h200 && h200->memory_gib == 141 && h200->bf16 == h100->bf16,
          "device lookups: H100 989/67/494.7, A100 80GB 2039 GB/s (case, '-' vs '_'), V100, H200");
    const cost_link *nv3 = cost_find_link("NVLink3");
    check(nv3 && nv3->gbs == 300 && nv3->bus_gbs == 230 && cost_find_link("nvlink2")->gbs == 150 &&
              cost_find_link("ib_hdr")->gbs == 25 && cost_find_link("pcie5")->gbs == 63 &&
              !cost_find_link("token_ring") && !cost_find_device("TPUv4") &&
              !cost_find_device(NULL),
          "link lookups (per-direction GB/s), unknown names -> NULL");

    cost_device mine[] = {{"H100_SXM", 67, 400, 800, 800, 80, 3000, 132, 1830},
                          {"MI300X", 163.4, 653.7, 1307.4, 1307.4, 192, 5300, 304, 2100}};
    cost_link fast[] = {{"nvlink4", 400, 1.5, 0}};
    cost_override_catalog(mine, 2, fast, 1);
    int ok = cost_find_device("h100_sxm")->bf16 == 800 && cost_find_device("MI300X") &&
             cost_find_device("A100_40GB") && cost_find_link("nvlink4")->gbs == 400 &&
             cost_find_link("pcie4")->gbs == 31.5;
    cost_override_catalog(NULL, 0, NULL, 0);
    check(ok && cost_find_device("H100_SXM")->bf16 == 989 && !cost_find_device("MI300X"),
          "caller tables shadow and extend the built-ins; NULL restores them");
}

static void verdict(void)
{
    char buf[96];
    double gib = 1073741824.0;
    int fits = cost_memory_verdict(61.2 * gib, 80, buf, sizeof buf);
    check(fits == 1 && strcmp(buf, "fits: 61.2 of 80 GiB") == 0, "verdict \"%s\"", buf);
    fits = cost_memory_verdict(91.3 * gib, 80, buf, sizeof buf);
    check(fits == 0 && strcmp(buf, "does not fit: 91.3 of 80 GiB (11.3 GiB over)") == 0,
          "verdict \"%s\"", buf);
    int edge = cost_memory_verdict(80.0 * gib, 80, buf, sizeof buf) &&
               !cost_memory_verdict(80.0 * gib + 1, 80, NULL, 0);
    check(edge, "exactly the device's memory fits, one byte more does not");
    fits = cost_memory_verdict(-1, 80, buf, sizeof buf);
    check(fits == 0 && strcmp(buf, "invalid arguments") == 0,
          "negative total -> \"invalid arguments\"");
}

int main(void)
{
    collectives();
    compute();
    gemm_gpu();
    nccl_busbw();
    dp_buckets();
    catalog();
    verdict();
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
