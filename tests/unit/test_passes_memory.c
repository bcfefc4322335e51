/* test_passes_memory.c: the memory pass (compiler/passes.c, memory.c,
 * act16.c) against closed forms.
 *
 * 1. One block of GPT-2 (h 64, 4 heads, T 32, V 256, micro 2: N = 64 tokens),
 *    every width a multiple of 16 so alignment adds nothing:
 *      tensors that carry gradients = N * 16h (the embedding, ln_1, c_attn
 *        3h, attention, c_proj, add, ln_2, c_fc 4h, c_proj, add, ln_f; the
 *        gelu's output has none, its backward is in c_proj's, fuse.c) + N
 *        (the loss);
 *      activation-gradient set (packed by live interval, memory_grads.c) =
 *        7hN, the most live at one backward step: at c_fc's (fused with the
 *        gelu's and c_proj's) d(c_fc) 4hN with d(ln_2), d(c_proj) and the
 *        residual d(add_1) hN each (the fused residual + layernorm keeps
 *        d(add_1) live from ln_f's backward to ln_2's); first-fit attains it;
 *      activation slot = the tensors that carry gradients + the gelu's output 4hN + saved buffers:
 *        3 layernorms x 2N (mean, rstd), attention B*H*T (the log-sum-exp
 *        of every query row, both backends), nothing for the LM head (it
 *        runs fused and chunked in backward on both backends); less
 *        2hN, the two c_proj outputs, which no backward reads (memory_slot.c):
 *        each lives from its linear to its residual add, in the stage's region;
 *      scratch = the larger of B*H*T (D of every query row, CUDA) and the LM
 *        head's chunk of logits, N*V here (ops_loss.c: at least 512 rows on
 *        the CPU, 2048 on CUDA, so the whole microbatch of 64): N*V;
 *      under act16 (CUDA bf16) every activation count halves (saved state
 *        but the layernorms' and attention's stays float), and so does the
 *        head's chunk of logits in scratch (16-bit on CUDA).
 *    Psi = 12 L h^2 + 13 L h + (V + T) h + 2h parameters (tied LM head).
 * 2. Model states per rank (program_memory_of), three models, dp 1, 2, 4,
 *    ZeRO 0 / 1, fp32 / bf16 / fp16: parameters 4 Psi (fp32; 16-bit plans
 *    store them in 2 bytes, 2 Psi, plus the float scratch one op's weights
 *    are widened into, the largest op's: the embedding's wte and wpe or
 *    c_fc's weight and bias, 4 max((V + T) h, 4 h^2 + 4 h) bytes;
 *    compiler/param16.c), gradients 4 Psi (16-bit plans where grad16.c
 *    stores them in 2 bytes: 2 Psi, plus one op's widened gradients and the
 *    sums' staging in floats)
 *    (ZeRO-1 reduces in place, zero.c; with 16-bit gradients it keeps
 *    floats only for the parts summed after the dp sum, tp and tied sums,
 *    none in these pp 1 plans without sp: runtime grad16.c), AdamW K Psi /
 *    (dp under ZeRO-1),
 *    K = 8 (fp32: the weights are their own master) or 12 (16-bit: fp32
 *    master, m, v).  Tolerance 0.5% + 8 bytes: ZeRO rounds each bucket's
 *    shard up to whole floats (at most dp - 1 floats a bucket).
 *    param16_rule: when the 16-bit layout applies (compiler/param16.c);
 *    grad16_rule: likewise for the gradients (compiler/grad16.c).
 * 3. Attention's saved buffer on both backends on six plans (tp, selective
 *    recompute, the 3D plan, LLaMA's grouped-query attention).
 * 4. Zero-bubble: only what W reads outlives B (zero_bubble below).
 * 5. The memory checker (memory_check.c) passes every plan's layout, and
 *    catches an overlap planted in it: a gradient moved onto another one
 *    live at the same step, an activation onto another activation, an
 *    in-place alias (memory_inplace.c) the plan does not record; every
 *    gradient a backward op touches is live at that op's step. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes_fixture.h"

static long psi_of(long L, long h, long s, long V) { return 12 * L * h * h + 13 * L * h + (V + s) * h + 2 * h; }

static void one_block(void) {
    const long h = 64, N = 64, T = 32, B = 2, H = 4, V = 256;
    for (int c = 0; c < 3; c++) {
        const char *backend = c == 0 ? "cpu" : "cuda", *prec = c == 2 ? "precision=bf16" : "precision=fp32";
        Program p;
        if (compile_with(&p, "plans/tiny.lua", backend, "model.layers=1", "model.hidden=64", "model.seq=32",
                         "batch.micro=2", "mesh.dp=1", "batch.global=2", prec, NULL) != 0) {
            check(0, "one block on %s %s compiles", backend, prec);
            continue;
        }
        int half = c == 2;  /* act16 */
        long att = B * H * T;
        long carry = (16 * h * N + N) / (half ? 2 : 1), dact = 7 * h * N / (half ? 2 : 1);
        long act = carry + 4 * h * N / (half ? 2 : 1) + 3 * 2 * N + att - 2 * h * N / (half ? 2 : 1);
        long scratch = N * V / (half ? 2 : 1);
        check(p.act16 == half, "%s %s: act16 = %d", backend, prec, half);
        check(p.param_numel[0] == psi_of(1, h, T, V), "%s %s: parameter arena Psi = %ld (%ld)", backend, prec,
              psi_of(1, h, T, V), p.param_numel[0]);
        check(p.dact_numel[0] == dact, "%s %s: activation-gradient set 7hN = %ld floats (%ld)", backend, prec,
              dact, p.dact_numel[0]);
        check(p.act_numel[0] == act, "%s %s: activation slot %ld floats (%ld)", backend, prec, act, p.act_numel[0]);
        check(p.region_numel[0] == h * N / (half ? 2 : 1), "%s %s: region hN = %ld floats, the c_proj outputs one at "
              "a time (%ld)", backend, prec, h * N / (half ? 2 : 1), p.region_numel[0]);
        check(p.scratch_numel == scratch, "%s %s: scratch %ld floats (%ld)", backend, prec, scratch, p.scratch_numel);
        program_free(&p);
    }
}

static int near(double got, double want) { return fabs(got - want) <= 0.005 * want + 8; }

static void model_states(void) {
    static const long models[][5] = { { 2, 64, 4, 64, 256 }, { 4, 128, 4, 128, 256 }, { 6, 96, 6, 32, 1000 } };
    static const char *const precs[] = { "fp32", "bf16", "fp16" };
    for (int m = 0; m < 3; m++)
        for (int dp = 1; dp <= 4; dp *= 2)
            for (int zero = 0; zero <= 1; zero++)
                for (int pr = 0; pr < 3; pr++) {
                    if (dp == 1 && zero == 1) continue;
                    const long *d = models[m];
                    char s[8][64];
                    snprintf(s[0], 64, "model.layers=%ld", d[0]);
                    snprintf(s[1], 64, "model.hidden=%ld", d[1]);
                    snprintf(s[2], 64, "model.heads=%ld", d[2]);
                    snprintf(s[3], 64, "model.seq=%ld", d[3]);
                    snprintf(s[4], 64, "model.vocab=%ld", d[4]);
                    snprintf(s[5], 64, "mesh.dp=%d", dp);
                    snprintf(s[6], 64, "batch.global=%d", 4 * dp);
                    snprintf(s[7], 64, "zero=%d", zero);
                    char prec[32];
                    snprintf(prec, sizeof prec, "precision=%s", precs[pr]);
                    Program p;
                    if (compile_with(&p, "plans/tiny.lua", "cpu", s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7],
                                     "batch.micro=4", prec, NULL) != 0) {
                        check(0, "model %d dp %d zero %d %s compiles", m, dp, zero, precs[pr]);
                        continue;
                    }
                    double psi = (double)psi_of(d[0], d[1], d[3], d[4]), K = pr == 0 ? 8 : 12;
                    program_memory mem = program_memory_of(&p, 0);
                    /* grad16.c: 2 bytes a gradient, one op's widened and the sums' staging in floats
                     * (an empty arena is wf_alloc's 64 bytes) */
                    double g16 = 4.0 * (double)grad16_scratch_numel(&p, 0) +
                                 fmax(4.0 * (double)grad16_stage_numel(&p, 0), 64);
                    double G = p.grad16 ? 2 * psi + g16 : 4 * psi, O = K * psi / (zero ? dp : 1);
                    double widest = fmax((double)((d[4] + d[3]) * d[1]), (double)(4 * d[1] * d[1] + 4 * d[1]));
                    double P = pr == 0 ? 4 * psi : 2 * psi + 4 * widest;
                    check(p.n_param_total == (long)psi && near(mem.params, P) && near(mem.grads, G) &&
                          near(mem.optim, O),
                          "L%ld h%ld s%ld V%ld dp %d zero %d %s: Psi %.0f = %ld; parameters %.0f ~ %.0f, gradients "
                          "%.0f ~ %.0f, AdamW %.0f ~ %.0f", d[0], d[1], d[3], d[4], dp, zero, precs[pr], psi,
                          p.n_param_total, P, mem.params, G, mem.grads, O, mem.optim);
                    program_free(&p);
                }
}

/* param16.c's rule: 16-bit working parameters under bf16 / fp16 on either
 * backend (CUDA: with act16, whose GEMMs read them in place; not under 2BW)
 * unless param_storage = "fp32", and only where the 2 bytes a
 * parameter saves (ZeRO-3: in its shard and gather buffers) outweigh the
 * float scratch of the widest op: one block of
 * h 64 with vocabulary 50304 (Psi ~ 3.3M, the LM head's wte 3.2M floats:
 * 6.6 MB saved against 12.9 MB of scratch) keeps the float arena, 4 Psi. */
static void param16_rule(void) {
    struct { const char *name, *backend, *sets[3]; int want; } v[] = {
        { "bf16 cpu", "cpu", { "precision=bf16", NULL }, 1 },
        { "fp16 cpu", "cpu", { "precision=fp16", NULL }, 1 },
        { "fp32 cpu", "cpu", { "precision=fp32", NULL }, 0 },
        { "bf16 cpu param_storage=fp32", "cpu", { "precision=bf16", "param_storage=fp32", NULL }, 0 },
        { "bf16 cpu zero 3", "cpu", { "precision=bf16", "zero=3", NULL }, 1 },
        { "bf16 cuda", "cuda", { "precision=bf16", NULL }, 1 },
        { "bf16 cuda zero 3", "cuda", { "precision=bf16", "zero=3", NULL }, 1 },
        { "bf16 cuda param_storage=fp32", "cuda", { "precision=bf16", "param_storage=fp32", NULL }, 0 },
        { "bf16 cpu vocab 50304", "cpu", { "precision=bf16", "model.vocab=50304", NULL }, 0 },
    };
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        Program p;
        if (compile_with(&p, "plans/tiny.lua", v[i].backend, "model.layers=1", "model.hidden=64", "model.seq=32",
                         v[i].sets[0], v[i].sets[1], NULL) != 0) {
            check(0, "%s compiles", v[i].name);
            continue;
        }
        program_memory mem = program_memory_of(&p, 0);
        double psi = (double)p.param_numel[0], scratch = 4.0 * (double)param16_scratch_numel(&p, 0);
        if (p.zero >= 3) psi = (double)(p.shard_numel[0] + p.gather_numel[0]);  /* ZeRO-3's shard and gathers */
        int arena = v[i].want ? mem.params == 2 * psi + scratch && scratch > 0 && scratch < 2 * psi
                              : scratch == 0 && mem.params >= 4 * psi;
        check(p.param16 == v[i].want && arena, "%s: param16 %d (want %d), parameters %.0f B for Psi %.0f, "
              "scratch %.0f B", v[i].name, p.param16, v[i].want, mem.params, psi, scratch);
        program_free(&p);
    }
}

/* grad16.c's rule: 16-bit weight gradients under bf16 / fp16 accumulated in
 * that type on either backend (PipeDream-2BW too), and only where the 2 bytes a gradient saves
 * outweigh the float scratch of the widest op's gradients and the staging
 * (dp 1 on one stage: none); the vocabulary-50304 block of param16_rule
 * keeps the float arena.  The arena: 2 Psi + scratch + staging, or 4 Psi.
 * ZeRO-3 (dp 2) stores only its bucket buffers in 16 bits: with fp32 dp
 * sums the staging (a bucket in floats) outweighs what they save on this
 * one-layer model; with 16-bit dp sums there is no staging, so it saves. */
static void grad16_rule(void) {
    struct { const char *name, *backend, *sets[4]; int want; } v[] = {
        { "bf16 cpu", "cpu", { "precision=bf16", NULL }, 1 },
        { "fp16 cpu", "cpu", { "precision=fp16", NULL }, 1 },
        { "fp32 cpu", "cpu", { "precision=fp32", NULL }, 0 },
        { "bf16 cpu grad_accum=fp32", "cpu", { "precision=bf16", "grad_accum=fp32", NULL }, 0 },
        { "bf16 cpu zero 3", "cpu", { "precision=bf16", "zero=3", NULL }, 0 },
        { "bf16 cpu zero 3 dp_comm bf16", "cpu", { "precision=bf16", "zero=3", "dp_comm=bf16", NULL }, 1 },
        { "bf16 cuda", "cuda", { "precision=bf16", NULL }, 1 },
        { "bf16 cpu 2bw", "cpu", { "precision=bf16", "pipeline.schedule=pipedream-2bw", NULL }, 1 },
        { "bf16 cuda 2bw", "cuda", { "precision=bf16", "pipeline.schedule=pipedream-2bw", NULL }, 1 },
        { "bf16 cpu vocab 50304", "cpu", { "precision=bf16", "model.vocab=50304", NULL }, 0 },
    };
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        Program p;
        /* dp 1 (one stage: no staging), but ZeRO-3's dp 2 */
        const char *dp = v[i].sets[1] && strcmp(v[i].sets[1], "zero=3") == 0 ? "mesh.dp=2" : "mesh.dp=1";
        if (compile_with(&p, "plans/tiny.lua", v[i].backend, "model.layers=1", "model.hidden=64", "model.seq=32",
                         dp, v[i].sets[0], v[i].sets[1], v[i].sets[1] ? v[i].sets[2] : NULL, NULL) != 0) {
            check(0, "%s compiles", v[i].name);
            continue;
        }
        program_memory mem = program_memory_of(&p, 0);
        double psi = (double)p.param_numel[0], scratch = 4.0 * (double)grad16_scratch_numel(&p, 0);
        double stage = 4.0 * (double)grad16_stage_numel(&p, 0);
        /* ZeRO-3: the float shard, 2 bytes a bucket-buffer gradient, the
         * scratch and the empty staging (64 bytes) */
        double z3 = p.zero >= 3 ? 4.0 * (double)p.shard_numel[0] + 2.0 * (double)p.grad_buf_numel[0] + scratch + 64 : 0;
        int arena = !v[i].want ? scratch == 0 && (p.zero >= 2 || mem.grads >= 4 * psi)
                    : p.zero >= 3 ? mem.grads == z3 && scratch > 0 && stage == 0
                                  : mem.grads == 2 * psi + scratch + 64 && scratch > 0 && stage == 0;
        check(p.grad16 == v[i].want && arena, "%s: grad16 %d (want %d), gradients %.0f B for Psi %.0f, "
              "scratch %.0f B, staging %.0f B", v[i].name, p.grad16, v[i].want, mem.grads, psi, scratch, stage);
        program_free(&p);
    }
}

/* Attention's saved floats: B*H*T on the CPU and on CUDA alike (the
 * log-sum-exp of every query row; H this rank's heads), never a T x T
 * matrix; the scratch is the larger of attention's (D per row, CUDA) and
 * the LM head's chunk of logits (the whole microbatch of N tokens x this
 * rank's VL vocabulary rows in these small plans), 16-bit on CUDA under
 * act16.  The LM head saves nothing on either backend (fused and chunked
 * in backward), so an fp32 plan's activations (slots and recompute region)
 * are the same on both. */
static void attention(void) {
    struct { const char *name, *plan, *sets[3]; } v[] = {
        { "tiny", "plans/tiny.lua", { NULL } },
        { "tp2", "plans/tiny.lua", { "mesh.dp=1", "mesh.tp=2", NULL } },
        { "selective", "plans/tiny.lua", { "recompute=selective", NULL } },
        { "3d", "plans/gpt2_3d.lua", { NULL } },
        { "llama", "plans/llama_tiny.lua", { NULL } },
        { "llama_tp2", "plans/llama_tiny.lua", { "mesh.dp=1", "mesh.tp=2", NULL } },
    };
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        Program cpu, cuda;
        int rc = compile_with(&cpu, v[i].plan, "cpu", v[i].sets[0], v[i].sets[1], NULL) |
                 compile_with(&cuda, v[i].plan, "cuda", v[i].sets[0], v[i].sets[1], NULL);
        check(rc == 0, "%s compiles on both backends", v[i].name);
        if (rc != 0) continue;
        long B = cpu.micro, T = cpu.seq, rows = B * (cpu.heads / cpu.tp) * T;
        int n = 0, bad = 0;
        for (int k = 0; k < cpu.n_ops; k++) {
            if (cpu.ops[k].kind != OP_ATTENTION) continue;
            n++;
            bad += cpu.ops[k].saved_numel != rows || cuda.ops[k].saved_numel != rows;
        }
        check(bad == 0 && n == cpu.layers, "%s: each of %d attentions saves B*H*T = %ld floats on both backends "
              "(B*H*T*T would be %ld)", v[i].name, n, rows, rows * T);
        long N = B * T, VL = cpu.vocab_padded / cpu.tp, head = N * VL;
        long head16 = cuda.act16 ? (head + 1) / 2 : head;
        long want_cpu = ((head > rows ? head : rows) + 15) / 16 * 16;
        long want_cuda = ((head16 > rows ? head16 : rows) + 15) / 16 * 16;
        check(4 * head <= (32L << 20) && cpu.scratch_numel == want_cpu && cuda.scratch_numel == want_cuda,
              "%s: scratch max(N*VL, B*H*T) = %ld on the CPU (%ld), %ld on CUDA (%ld)", v[i].name, want_cpu,
              cpu.scratch_numel, want_cuda, cuda.scratch_numel);
        for (int k = 0; k < cuda.n_ops; k++)
            if (cuda.ops[k].kind == OP_LMHEAD_XENT)
                check(cuda.ops[k].saved_numel == 0 && cpu.ops[k].saved_numel == 0,
                      "%s: the LM head saves nothing on CUDA (%ld) nor on the CPU (%ld)", v[i].name,
                      cuda.ops[k].saved_numel, cpu.ops[k].saved_numel);
        long diff = 0;
        for (int s = 0; s < cpu.pp; s++)
            diff += cpu.act_numel[s] * program_slots(&cpu, s) + cpu.region_numel[s] -
                    cuda.act_numel[s] * program_slots(&cuda, s) - cuda.region_numel[s];
        if (!cuda.act16)
            check(diff == 0, "%s: CPU and CUDA activations (slots and region) are the same (differ by %ld)",
                  v[i].name, diff);
        program_free(&cpu);
        program_free(&cuda);
    }
}

/* Zero-bubble (zb-h1) on tiny with 8 layers over pp 2, micro 4 (h 128,
 * N = 4 x 128 tokens), CPU fp32.  W reads the output gradient of each op
 * whose parameter gradients wait for W (ops.h's op_weight_grad_in_w: a
 * GEMM's dW from dy and x; the embedding, whose whole backward runs in W),
 * so those live from their B step to W, and nothing else lives past its
 * last touch in B (memory_grads.c).  Stage 0 holds 4 blocks after the
 * embedding; what W reads there: per block d(c_attn) 3h + d(attn c_proj) h
 * + d(c_fc) 4h + d(mlp c_proj) h = 9hN, 4 x 9 = 36hN, and the embedding's
 * output gradient hN: 37hN, all live at B's last steps.  At block 0's ln_1
 * step (its gamma and beta sums run in B now, with its input gradient) its
 * output gradient d(ln_1) hN is live too: the set holds at least 38hN, and
 * the others (residuals, attention's output, the received gradient) fit in
 * the places not yet taken, so first-fit attains it exactly (before, with
 * the norms' sums in W, d(ln_1) and d(ln_2) were kept too: (4 x 11 + 1) hN).
 * Under ZeRO-2 B writes the norms' gamma and beta gradients into the set
 * (op_weight_grad_staged), each op's 2 x align16(h) = 2h floats from its B
 * step to W: 4 blocks x 2 norms x 2h = 16h more, all live at that step
 * too.  1F1B's set on the same plan is one block's peak, 7hN (one_block). */
static void zero_bubble(void) {
    const char *sets[][2] = { { "pipeline.schedule=zb-h1", "zero=0" }, { "pipeline.schedule=zb-h1", "zero=2" },
                              { "pipeline.schedule=1f1b", "zero=0" } };
    const long blocks[] = { 4 * 9 + 2, 4 * 9 + 2, 7 }, staged[] = { 0, 4 * 2 * 2, 0 };  /* hN; h */
    for (int i = 0; i < 3; i++) {
        Program p;
        if (compile_with(&p, "plans/tiny.lua", "cpu", "model.layers=8", "mesh.pp=2", "batch.micro=4", sets[i][0],
                         sets[i][1], NULL) != 0) {
            check(0, "tiny pp 2 %s %s compiles", sets[i][0], sets[i][1]);
            continue;
        }
        long hN = (long)p.hidden * p.micro * p.seq;
        long want = blocks[i] * hN + staged[i] * p.hidden;
        check(p.dact_numel[0] == want && program_dact_sets(&p, 0) == 1,
              "tiny pp 2 %s %s: stage 0's activation-gradient set %ld floats x %d (want %ld x 1)", sets[i][0],
              sets[i][1], p.dact_numel[0], program_dact_sets(&p, 0), want);
        program_free(&p);
    }
}

/* Gradient place of tensor t in chunk k, or NULL. */
static const mem_place *grad_place(const Program *p, int t, int k) {
    for (int i = 0; i < p->n_places; i++) {
        const mem_place *pl = &p->places[i];
        if (pl->chunk != k) continue;
        if (pl->kind == PLACE_DACT && pl->id == t) return pl;
        if (pl->kind == PLACE_DCHUNK_IN && p->chunk_in[k] == t) return pl;
    }
    return NULL;
}

static void checker(void) {
    struct { const char *name, *plan, *sets[3]; int aliases; } v[] = {
        { "tiny", "plans/tiny.lua", { NULL }, 0 },
        { "full recompute", "plans/tiny.lua", { "recompute=full", NULL }, 0 },
        { "3d", "plans/gpt2_3d.lua", { NULL }, 1 },
        { "zero-bubble", "plans/gpt2_3d.lua", { "pipeline.schedule=zb-h1", "pipeline.virtual=1", NULL }, 1 },
        { "tp full recompute", "plans/gpt2_3d.lua", { "mesh.sp=false", "recompute=full", NULL }, 1 },
        { "llama", "plans/llama_tiny.lua", { NULL }, 0 },
    };
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        Program p;
        if (compile_with(&p, v[i].plan, "cpu", v[i].sets[0], v[i].sets[1], NULL) != 0) {
            check(0, "%s compiles", v[i].name);
            continue;
        }
        check(memory_check(&p) == 0, "%s: the checker passes the memory pass's layout", v[i].name);
        /* in-place ops (memory_inplace.c): each planned alias shares its input's place, and the same
         * place without the plan (the alias cleared) is an overlap the checker catches */
        int aliases = 0, shared = 0, caught = 0;
        for (int t = 1; t < p.n_tensors; t++) {
            int a = p.tensors[t].alias;
            if (!a) continue;
            aliases++;
            shared += p.tensors[t].offset == p.tensors[a].offset;
            if (aliases > 8) continue;  /* the checker's time */
            p.tensors[t].alias = 0;
            caught += memory_check(&p) != 0;
            p.tensors[t].alias = a;
        }
        if (v[i].aliases)
            check(aliases > 0, "%s: tensor-parallel ops run in place (%d aliases)", v[i].name, aliases);
        check(shared == aliases, "%s: every alias has its input's offset (%d of %d)", v[i].name, shared, aliases);
        check(caught == (aliases < 8 ? aliases : 8), "%s: an alias not planned is caught as an overlap (%d of %d)",
              v[i].name, caught, aliases < 8 ? aliases : 8);
        /* every gradient touched by a backward op is live at its step */
        int dead = 0;
        for (int o = 0; o < p.n_ops; o++) {
            int k = p.ops[o].chunk, step = p.chunk_end_op[k] - 1 - o, ts[3] = { p.ops[o].out, 0, 0 };
            for (int n = 0; n < p.ops[o].n_in; n++) ts[1 + n] = p.ops[o].in[n];
            for (int n = 0; n < 3; n++) {
                const mem_place *pl = ts[n] ? grad_place(&p, ts[n], k) : NULL;
                if (pl && (step < pl->begin || step > pl->end)) dead++;
            }
        }
        check(dead == 0, "%s: every gradient is live at each backward op that touches it (%d not)", v[i].name, dead);
        /* plant: a gradient onto another live at the same step */
        int planted = 0;
        for (int a = 0; a < p.n_places && !planted; a++)
            for (int b = 0; b < p.n_places && !planted; b++) {
                mem_place *x = &p.places[a], *y = &p.places[b];
                if (a == b || x->kind != PLACE_DACT || y->kind != PLACE_DACT || x->chunk != y->chunk) continue;
                if (x->end < y->begin || y->end < x->begin) continue;
                if (p.tensors[x->id].doffset == p.tensors[y->id].doffset) continue;  /* shared as planned */
                long keep = p.tensors[x->id].doffset;
                p.tensors[x->id].doffset = p.tensors[y->id].doffset;
                check(memory_check(&p) != 0, "%s: a gradient planted onto a live one is caught", v[i].name);
                p.tensors[x->id].doffset = keep;
                planted = 1;
            }
        check(planted, "%s: two gradients are live at once somewhere", v[i].name);
        /* a bias add's (and a partial sum's all-reduce's) input gradient in its output gradient's place
         * (memory_grads.c): at its offset; the same place without the plan (dalias cleared) is an
         * overlap, and the plan without the place (moved where it overlaps nothing) is caught too */
        int dal = 0, dshared = 0, dcaught = 0, dmoved = 0;
        for (int t = 1; t < p.n_tensors; t++) {
            int a = p.tensors[t].dalias;
            if (!a) continue;
            dal++;
            dshared += p.tensors[t].doffset == p.tensors[a].doffset;
            if (dal > 4) continue;  /* the checker's time */
            p.tensors[t].dalias = 0;
            dcaught += memory_check(&p) != 0;
            p.tensors[t].dalias = a;
            /* moved to floats of its own: the set grown by its size, it at the top, overlapping nothing */
            int st = p.ops[p.tensors[t].producer].chunk % p.pp;
            long keep = p.tensors[t].doffset, top = p.dact_numel[st];
            p.tensors[t].doffset = top;
            p.dact_numel[st] = top + memory_tensor_numel(&p, t);
            dmoved += memory_check(&p) != 0;
            p.tensors[t].doffset = keep;
            p.dact_numel[st] = top;
        }
        if (v[i].aliases)
            check(dal > 0, "%s: bias adds' input gradients share their output gradient's place (%d)", v[i].name, dal);
        check(dshared == dal && dcaught == (dal < 4 ? dal : 4) && dmoved == dcaught,
              "%s: each shared gradient has its output gradient's offset (%d of %d); cleared, the overlap is "
              "caught (%d), moved, the place is caught (%d)", v[i].name, dshared, dal, dcaught, dmoved);
        /* the position add's (wte + wpe under tp) likewise: its input gradient is its output's place */
        int n_pos = 0;
        for (int o = 0; v[i].aliases && o < p.n_ops; o++) {
            if (p.ops[o].kind != OP_POS_ADD) continue;
            n_pos++;
            int t = p.ops[o].in[0], out = p.ops[o].out, st = p.ops[o].chunk % p.pp;
            check(p.tensors[t].dalias == out && p.tensors[t].doffset == p.tensors[out].doffset,
                  "%s: the position add's input gradient shares its output gradient's place (offsets %ld, %ld)",
                  v[i].name, p.tensors[t].doffset, p.tensors[out].doffset);
            long keep = p.tensors[t].doffset, top = p.dact_numel[st];
            p.tensors[t].doffset = top;  /* moved to floats of its own, as above */
            p.dact_numel[st] = top + memory_tensor_numel(&p, t);
            check(memory_check(&p) != 0, "%s: the position add's input gradient moved off its place is caught",
                  v[i].name);
            p.tensors[t].doffset = keep;
            p.dact_numel[st] = top;
        }
        if (v[i].aliases) check(n_pos > 0, "%s: the plan has a position add (%d)", v[i].name, n_pos);
        planted = 0;
        for (int a = 0; a < p.n_places && !planted; a++)
            for (int b = a + 1; b < p.n_places && !planted; b++) {
                mem_place *x = &p.places[a], *y = &p.places[b];
                if (x->kind != PLACE_ACT || y->kind != PLACE_ACT || x->stage != y->stage || x->chunk != y->chunk ||
                    x->region != y->region || x->end < y->begin || y->end < x->begin)
                    continue;  /* two live at once in one slot */
                long keep = p.tensors[x->id].offset;
                p.tensors[x->id].offset = p.tensors[y->id].offset + 16;
                check(memory_check(&p) != 0, "%s: an activation planted into another is caught", v[i].name);
                p.tensors[x->id].offset = keep;
                planted = 1;
            }
        check(memory_check(&p) == 0, "%s: restored, the layout passes again", v[i].name);
        program_free(&p);
    }
}

int main(void) {
    one_block();
    model_states();
    param16_rule();
    grad16_rule();
    attention();
    zero_bubble();
    checker();
    return summary();
}
