/* test_passes_fuse.c: the fused pairs the graph pass marks (compiler/fuse.c),
 * by count and by which ops:
 *   residual + layernorm: every layernorm right after an add (all of them
 *     but h.0.ln_1, which follows the embedding: 2L); a pipeline boundary
 *     splits the pair there (2L - 1 at pp 2); full recompute keeps only the
 *     pairs inside a block (each ln_2: L);
 *   linear + gelu: every block's c_fc (L), across the pipeline boundary too;
 *   c_proj's input gradient + the gelu's backward: every block's mlp.c_proj
 *     (L), under full recompute and tensor parallelism too;
 *   LLaMA (RMSNorm, SwiGLU): none. */
#include "passes_fixture.h"

/* The name of op i's first parameter, or "". */
static const char *weight_of(const Program *p, int i) {
    return p->ops[i].n_param ? p->params[p->ops[i].param[0]].name : "";
}

/* Counts the ops marked `mark` (in field fused or dgelu) whose weight's name
 * contains `want`; *others gets those that do not. */
static int marked(const Program *p, int dgelu, int mark, const char *want, int *others) {
    int n = 0;
    *others = 0;
    for (int i = 0; i < p->n_ops; i++) {
        if ((dgelu ? p->ops[i].dgelu : p->ops[i].fused) != mark) continue;
        if (strstr(weight_of(p, i), want)) n++;
        else ++*others;
    }
    return n;
}

static void gpt2(const char *what, int pp, const char *recompute, int tp) {
    char spp[32], stp[32], sdp[32];
    snprintf(spp, sizeof spp, "mesh.pp=%d", pp);
    snprintf(stp, sizeof stp, "mesh.tp=%d", tp);
    snprintf(sdp, sizeof sdp, "mesh.dp=%d", tp > 1 || pp > 1 ? 1 : 2);
    Program p;
    if (compile_with(&p, "plans/tiny.lua", "cpu", sdp, spp, stp, "batch.micro=2", recompute, NULL) != 0) {
        check(0, "%s compiles", what);
        return;
    }
    int L = p.layers, full = strcmp(recompute, "recompute=full") == 0, other;
    int want = full ? L : 2 * L - (pp > 1);
    int ln2 = marked(&p, 0, FUSED_ADD_LN_NORM, ".ln_2.", &other);
    check(count_fused(&p) == want, "%s: %d residual_layernorm pairs (%d)", what, want, count_fused(&p));
    check(ln2 == L && other == want - L, "%s: every ln_2 fused (%d)%s", what, ln2,
          full ? ", nothing else" : ", and the ln_1 / ln_f after each block's last add");
    int h0 = 0, adds_ok = 1;
    for (int i = 0; i < p.n_ops; i++) {
        if (p.ops[i].fused == FUSED_ADD_LN_NORM && strcmp(weight_of(&p, i), "h.0.ln_1.weight") == 0) h0 = 1;
        if (p.ops[i].fused == FUSED_ADD_LN_ADD) adds_ok &= p.ops[i].kind == OP_ADD && p.ops[i + 1].in[0] == p.ops[i].out;
    }
    check(!h0 && adds_ok, "%s: h.0.ln_1 (after the embedding) unfused; each pair an add and the layernorm of its sum", what);
    int fc = marked(&p, 0, FUSED_LIN_GELU_LINEAR, ".mlp.c_fc.", &other);
    check(fc == L && other == 0 && count_fused_linear_gelu(&p) == L, "%s: linear_gelu on each c_fc (%d of %d), "
          "nothing else", what, fc, L);
    int proj = marked(&p, 1, DGELU_LINEAR, ".mlp.c_proj.", &other);
    check(proj == L && other == 0 && count_fused_linear_dgelu(&p) == L, "%s: linear_dgelu on each mlp.c_proj "
          "(%d of %d), nothing else", what, proj, L);
    program_free(&p);
}

int main(void) {
    gpt2("one stage", 1, "recompute=none", 1);
    gpt2("pp 2", 2, "recompute=none", 1);
    gpt2("full recompute", 1, "recompute=full", 1);
    gpt2("full recompute pp 2", 2, "recompute=full", 1);
    gpt2("tp 2", 1, "recompute=none", 2);
    Program p;
    check(compile_with(&p, "plans/llama_tiny.lua", "cpu", NULL) == 0 && count_fused(&p) == 0 &&
          count_fused_linear_gelu(&p) == 0 && count_fused_linear_dgelu(&p) == 0, "LLaMA: no fused pairs");
    program_free(&p);
    return summary();
}
