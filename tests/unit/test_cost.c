/* test_cost.c: the cost model against closed forms and published worked
 * examples: alpha-beta collectives, GEMM efficiency shape, catalog lookups,
 * the memory verdict. */
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
    double B = 50e9, a = 5e-6; /* ib_ndr: 50 GB/s per direction, 5 us */
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
     * 2*7/8 * 1e9/50e9 = 0.035 s, plus 14 * 5 us = 0.00007 s. */
    check(same(cost_allreduce_ring(1e9, 8, l), 0.03507),
          "ring all-reduce 1 GB over 8 NDR ranks = 0.03507 s (%.6f)",
          cost_allreduce_ring(1e9, 8, l));
    check(split_ok, "ring reduce-scatter + all-gather = ring all-reduce (all n, S above)");
    /* reduce-scatter alone, n = 4, S = 1e8: 3/4 * 1e8/50e9 + 3 * 5 us. */
    check(same(cost_reduce_scatter_ring(1e8, 4, l), 0.0015 + 15e-6),
          "ring reduce-scatter 100 MB over 4 ranks = 1.515 ms");

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

    /* p2p, 64 MiB over NVLink 4: 2 us + 67108864 / 450e9 s. */
    const cost_link *nv = cost_find_link("nvlink4");
    check(same(cost_p2p(67108864.0, nv), 2e-6 + 67108864.0 / 450e9),
          "p2p 64 MiB over NVLink 4 = a + S/B = %.3f us", cost_p2p(67108864.0, nv) * 1e6);
    check(same(cost_collective("sendrecv", "ring", 1e6, 2, l), a + 1e6 / B),
          "cost_collective(\"sendrecv\") = a + S/B");

    /* Tree, n = 16, S = 1e9 on NDR: 2 * 4 * 5 us + 2 * 1e9 / 50e9 = 0.04004 s. */
    check(same(cost_allreduce_tree(1e9, 16, l), 0.04004),
          "tree all-reduce 1 GB over 16 ranks = 2 log2(n) a + 2 S/B = 0.04004 s");
    /* Small messages: the tree's log2(n) latency wins; large ones: the
     * ring's (n-1)/n bandwidth factor. At n = 8 the ring is cheaper once
     * 2S/(nB) > (2(n-1) - 2 log2 n) a, i.e. S > 8 * 50e9 * 5e-6 * 4 = 8 MB.
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
    check(nv3 && nv3->gbs == 300 && cost_find_link("nvlink2")->gbs == 150 &&
              cost_find_link("ib_hdr")->gbs == 25 && cost_find_link("pcie5")->gbs == 63 &&
              !cost_find_link("token_ring") && !cost_find_device("TPUv4") &&
              !cost_find_device(NULL),
          "link lookups (per-direction GB/s), unknown names -> NULL");

    cost_device mine[] = {{"H100_SXM", 67, 400, 800, 800, 80, 3000},
                          {"MI300X", 163.4, 653.7, 1307.4, 1307.4, 192, 5300}};
    cost_link fast[] = {{"nvlink4", 400, 1.5}};
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
    catalog();
    verdict();
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
