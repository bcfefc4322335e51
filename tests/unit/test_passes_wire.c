/* test_passes_wire.c: the bytes a step sends (compiler/wire.c), by kind and
 * link class, against numbers worked out by hand from the plans.
 *
 * Rings: over g ranks an all-reduce of S bytes sends 2 (g - 1) / g S per
 * rank, an all-gather / reduce-scatter (g - 1) / g S; at g = 2 that is S and
 * S / 2.  Sums of all ranks, per optimizer step.
 *
 * 1. plans/tiny.lua (dp 2, fp32, one node of 2): the buckets hold all
 *    Psi = 842496 parameters (L 4, h 128, T 128, V 256; tied LM head), so
 *    dp = 2 ranks x 4 Psi = 6739968 bytes inside the node; with one device a
 *    node the same bytes cross nodes.
 * 2. tiny at dp 1 x tp 2, micro 8 x T 128 = N 1024 tokens, 2 microbatches a
 *    step: per microbatch 4L + 2 = 18 all-reduces of N x h values (each
 *    block's two row-parallel outputs forward, two copies backward; the
 *    vocabulary-parallel embedding forward, the LM head's copy backward) and
 *    the loss's N floats + 2N doubles (20 N bytes):
 *      fp32, or bf16 with tp_comm = "fp32":  2 x 2 x (18 x 4Nh + 20N) = 37830656
 *      bf16 (CPU packs, CUDA act16):          2 x 2 x (18 x 2Nh + 20N) = 18956288
 *      fp32 with full recompute: each block's two forward all-reduces run
 *      again before its backward: 2 x 2 x (26 x 4Nh + 20N) = 54607872.
 * 3. plans/gpt2_3d.lua (dp 2 x tp 2 x pp 2, sp, interleaved 2 x 2 chunks of
 *    one layer, micro 2 x T 64 = N 128, h 64, 4 microbatches a step, one
 *    node of 8): each stage has 9 sequence-parallel collectives (stage 0:
 *    the embedding's scatter and two blocks' 2 gathers + 2 scatters; stage 1:
 *    two blocks and the LM head's gather), each moving a whole N x h tensor
 *    forward and again backward, S / 2 per rank at g = 2; stage 1 adds the
 *    loss's 20 N bytes as an all-reduce:
 *      tp = 4 ranks x 4 microbatches x (18 x Nh x 4 / 2 + 18 x Nh x 4 / 2
 *           + 20N) = 9478144 in fp32 (the 20N on stage 1's 4 ranks only),
 *           and 4759552 with 2-byte values (the loss's stay 20N);
 *      pp = 4 (dp, tp) pairs x 4 microbatches x 3 boundaries x 2 directions
 *           x (N / 2 rows x h x 4 bytes) = 1572864 (bf16, in 16-bit storage
 *           on both backends: half, 786432; the CPU's float storage,
 *           WEFT_ACT16=0: 1572864);
 *      dp = 4 Psi_stage per rank, Psi_stage0 = 2 blocks x 25184 + wpe 4096
 *           + wte/2 8192 = 62656, Psi_stage1 = 50368 + ln_f 128 + the tied
 *           wte copy 8192 = 58688 (a block on one tp rank: ln_1 128 +
 *           c_attn 64 x 96 + 96 + c_proj 32 x 64 + 64 + ln_2 128 + c_fc
 *           64 x 128 + 128 + c_proj 128 x 64 + 64 = 25184):
 *           4 x 4 x (62656 + 58688) = 1941504;
 *      tied = 8 ranks x 4 x 8192 = 262144.
 *    On two nodes of 4 (mesh.order tp-dp-pp: pp stride 4) the pipeline and
 *    tied messages cross nodes and the rest stays inside; with mesh.order
 *    tp-pp-dp (dp stride 4) the dp all-reduce crosses instead.
 * 4. gpt2_3d without sequence parallelism: a pipeline message is the whole
 *    N x h tensor, 4 pairs x 4 x 3 x 2 x (N h 4 bytes) = 3145728 with whole
 *    messages; with scatter/gather (the default there) each tp rank sends
 *    half, 1572864, and the receiving stage all-gathers: each of the 8 ranks
 *    receives one message per boundary and microbatch (an activation on the
 *    later stage, a gradient on the earlier), sending (g - 1) / g = 1/2 of it
 *    to its tp partner: 8 x 4 x 3 x 32768 / 2 = 1572864 inside the node.
 *    Under sp the message is already N / 2 rows: scatter/gather stays off.
 * 5. gpt2_3d bf16 with dp_comm = "bf16": the dp all-reduce in 2 bytes,
 *    1941504 / 2 = 970752.  With ZeRO-1 the ring reduce-scatter of the 16-bit
 *    gradients is half a ring all-reduce, 970752 / 2 = 485376, and the
 *    parameters' all-gather moves them as stored, 16-bit (param16.c):
 *    970752 / 2 = 485376; 970752 in all (fp32 parameters gave 1456128).
 * 6. plans/paper/korthikanti_175b.lua (tp 8, pp 8, bf16 on CUDA: 16-bit
 *    messages of micro 1 x 2048 x 12288 values, 48 MiB; 64 microbatches):
 *    8 tp ranks x 64 x 7 boundaries x 2 directions x 48 MiB = 336 GiB across
 *    nodes with whole messages, 42 GiB (/ tp = 8) with scatter/gather, and
 *    its all-gathers 8 x 64 x 7 x 2 x 7/8 x 48 MiB = 294 GiB inside nodes. */
#include <math.h>
#include <stdlib.h>

#include "passes_fixture.h"

static int near(double got, double want) { return fabs(got - want) < 0.5; }

static void expect(const char *what, wire_bytes got, double intra, double inter) {
    check(near(got.intra, intra) && near(got.inter, inter), "%s: inside %.0f (want %.0f), across %.0f (want %.0f)",
          what, got.intra, intra, got.inter, inter);
}

int main(void) {
    Program p;
    if (compile_with(&p, "plans/tiny.lua", "cpu", NULL) == 0) {
        wire_step w = wire_per_step(&p);
        expect("tiny dp", w.dp, 6739968, 0);
        expect("tiny tp", w.tp, 0, 0);
        expect("tiny total", w.total, 6739968, 0);
        program_free(&p);
    } else check(0, "tiny compiles");
    if (compile_with(&p, "plans/tiny.lua", "cpu", "cluster.nodes=2", "cluster.devices_per_node=1", NULL) == 0) {
        expect("tiny dp on two nodes of one", wire_per_step(&p).dp, 0, 6739968);
        program_free(&p);
    } else check(0, "tiny on two nodes compiles");

    struct {
        const char *backend, *precision, *tp_comm, *recompute;
        double tp;
        int comm16;
    } tp2[] = {
        { "cpu", "precision=fp32", "tp_comm=auto", "recompute=none", 37830656, 0 },
        { "cpu", "precision=bf16", "tp_comm=auto", "recompute=none", 18956288, 1 },
        { "cpu", "precision=fp16", "tp_comm=fp16", "recompute=none", 18956288, 1 },
        { "cpu", "precision=bf16", "tp_comm=fp32", "recompute=none", 37830656, 0 },
        { "cuda", "precision=bf16", "tp_comm=auto", "recompute=none", 18956288, 1 },
        { "cuda", "precision=bf16", "tp_comm=fp32", "recompute=none", 37830656, 0 },
        { "cpu", "precision=fp32", "tp_comm=auto", "recompute=full", 54607872, 0 },
    };
    for (size_t i = 0; i < sizeof tp2 / sizeof tp2[0]; i++) {
        char what[160];
        snprintf(what, sizeof what, "tiny tp 2 %s %s %s %s", tp2[i].backend, tp2[i].precision, tp2[i].tp_comm,
                 tp2[i].recompute);
        if (compile_with(&p, "plans/tiny.lua", tp2[i].backend, "mesh.dp=1", "mesh.tp=2", tp2[i].precision,
                         tp2[i].tp_comm, tp2[i].recompute, NULL) != 0) {
            check(0, "%s compiles", what);
            continue;
        }
        check(tp_comm16(&p) == tp2[i].comm16, "%s: 16-bit tp messages %d", what, tp_comm16(&p));
        expect(what, wire_per_step(&p).tp, tp2[i].tp, 0);
        program_free(&p);
    }

    if (compile_with(&p, "plans/gpt2_3d.lua", "cpu", NULL) == 0) {
        wire_step w = wire_per_step(&p);
        expect("gpt2_3d tp", w.tp, 9478144, 0);
        expect("gpt2_3d pp", w.pp, 1572864, 0);
        expect("gpt2_3d dp", w.dp, 1941504, 0);
        expect("gpt2_3d tied", w.tied, 262144, 0);
        expect("gpt2_3d total", w.total, 9478144 + 1572864 + 1941504 + 262144, 0);
        program_free(&p);
    } else check(0, "gpt2_3d compiles");
    for (int b = 0; b < 2; b++) {
        const char *backend = b ? "cuda" : "cpu";
        if (compile_with(&p, "plans/gpt2_3d.lua", backend, "precision=bf16", NULL) != 0) {
            check(0, "gpt2_3d bf16 %s compiles", backend);
            continue;
        }
        wire_step w = wire_per_step(&p);
        expect(b ? "gpt2_3d bf16 cuda tp" : "gpt2_3d bf16 cpu tp", w.tp, 4759552, 0);
        expect(b ? "gpt2_3d bf16 cuda pp (16-bit storage)" : "gpt2_3d bf16 cpu pp (16-bit storage)", w.pp,
               786432, 0);
        program_free(&p);
    }
    setenv("WEFT_ACT16", "0", 1);  /* the CPU's float storage (compiler/act16.c) */
    if (compile_with(&p, "plans/gpt2_3d.lua", "cpu", "precision=bf16", NULL) == 0) {
        expect("gpt2_3d bf16 cpu pp (float storage)", wire_per_step(&p).pp, 1572864, 0);
        program_free(&p);
    } else check(0, "gpt2_3d bf16 cpu float storage compiles");
    unsetenv("WEFT_ACT16");
    if (compile_with(&p, "plans/gpt2_3d.lua", "cpu", "cluster.nodes=2", "cluster.devices_per_node=4", NULL) == 0) {
        wire_step w = wire_per_step(&p);
        expect("gpt2_3d on 2 x 4, tp-dp-pp: tp", w.tp, 9478144, 0);
        expect("gpt2_3d on 2 x 4, tp-dp-pp: pp", w.pp, 0, 1572864);
        expect("gpt2_3d on 2 x 4, tp-dp-pp: dp", w.dp, 1941504, 0);
        expect("gpt2_3d on 2 x 4, tp-dp-pp: tied", w.tied, 0, 262144);
        program_free(&p);
    } else check(0, "gpt2_3d on two nodes compiles");
    if (compile_with(&p, "plans/gpt2_3d.lua", "cpu", "cluster.nodes=2", "cluster.devices_per_node=4",
                     "mesh.order=tp-pp-dp", NULL) == 0) {
        wire_step w = wire_per_step(&p);
        expect("gpt2_3d on 2 x 4, tp-pp-dp: pp", w.pp, 1572864, 0);
        expect("gpt2_3d on 2 x 4, tp-pp-dp: dp", w.dp, 0, 1941504);
        program_free(&p);
    } else check(0, "gpt2_3d tp-pp-dp on two nodes compiles");
    if (compile_with(&p, "plans/gpt2_3d.lua", "cpu", "mesh.sp=false", "pipeline.scatter_gather=false", NULL) == 0) {
        wire_step w = wire_per_step(&p);
        expect("gpt2_3d no sp, whole messages: pp", w.pp, 3145728, 0);
        expect("gpt2_3d no sp, whole messages: pp gather", w.pp_gather, 0, 0);
        program_free(&p);
    } else check(0, "gpt2_3d without sp compiles");
    if (compile_with(&p, "plans/gpt2_3d.lua", "cpu", "mesh.sp=false", NULL) == 0) {
        wire_step w = wire_per_step(&p);
        check(p.scatter_gather == 1, "gpt2_3d no sp: scatter/gather on by default");
        expect("gpt2_3d no sp, scatter/gather: pp", w.pp, 1572864, 0);
        expect("gpt2_3d no sp, scatter/gather: pp gather", w.pp_gather, 1572864, 0);
        expect("gpt2_3d no sp, scatter/gather: total", w.total, 9478144 + 2 * 1572864 + 1941504 + 262144, 0);
        program_free(&p);
    } else check(0, "gpt2_3d without sp compiles");
    if (compile_with(&p, "plans/gpt2_3d.lua", "cpu", NULL) == 0) {
        check(p.scatter_gather == 0, "gpt2_3d with sp: scatter/gather off by default");
        program_free(&p);
    }
    if (compile_with(&p, "plans/gpt2_3d.lua", "cpu", "precision=bf16", "dp_comm=bf16", NULL) == 0) {
        expect("gpt2_3d bf16 dp_comm bf16: dp", wire_per_step(&p).dp, 970752, 0);
        program_free(&p);
    } else check(0, "gpt2_3d with dp_comm compiles");
    if (compile_with(&p, "plans/gpt2_3d.lua", "cpu", "precision=bf16", "dp_comm=bf16", "zero=1", NULL) == 0) {
        expect("gpt2_3d bf16 dp_comm bf16 ZeRO-1: dp", wire_per_step(&p).dp, p.param16 ? 970752 : 1456128, 0);
        check(p.param16, "gpt2_3d bf16 ZeRO-1: 16-bit working parameters");
        program_free(&p);
    } else check(0, "gpt2_3d with dp_comm and ZeRO-1 compiles");
    double mib48 = 2048.0 * 12288 * 2, whole = 8.0 * 64 * 7 * 2 * mib48;
    for (int sg = 0; sg < 2; sg++) {
        if (compile_with(&p, "plans/paper/korthikanti_175b.lua", "cuda", sg ? "pipeline.scatter_gather=true"
                                                                            : "pipeline.scatter_gather=false", NULL) != 0) {
            check(0, "175B compiles");
            continue;
        }
        wire_step w = wire_per_step(&p);
        expect(sg ? "175B scatter/gather: pp (/ 8)" : "175B whole messages: pp", w.pp, 0, sg ? whole / 8 : whole);
        expect(sg ? "175B scatter/gather: its all-gathers" : "175B whole messages: no all-gathers", w.pp_gather,
               sg ? whole * 7 / 8 : 0, 0);
        program_free(&p);
    }
    return summary();
}
