/* test_fused_16bit.c: under bf16 and fp16 plans the fused residual +
 * layernorm (and the fused linear + GELU, check_linear_gelu) gives bit for
 * bit what the unfused ops and the rounding calls the compiler emits between
 * them give (compiler/emit_ops.c):
 *   forward   add; round(res); layernorm
 *   backward  layernorm input gradient into dres; round(dres); add backward
 * The kernel reads the precision from the context (wf_ctx_precision), so the
 * test builds a context holding only a plan. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

enum { N = 37, C = 67 };  /* odd: no vector width divides them */

static uint64_t rng = 0x243f6a8885a308d3ull;
static float *rand_buf(long n, float scale) {
    float *x = malloc(sizeof(float) * (size_t)n);
    for (long i = 0; i < n; i++) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = scale * (float)((rng >> 40) / 8388608.0 - 1.0);
    }
    return x;
}

static float *dup(const float *x, long n) {
    float *y = malloc(sizeof(float) * (size_t)n);
    memcpy(y, x, sizeof(float) * (size_t)n);
    return y;
}

static int same(const float *x, const float *y, long n) { return memcmp(x, y, sizeof(float) * (size_t)n) == 0; }

static void round_to(wf_ctx *c, int precision, float *x, long n) {
    if (precision == WF_BF16) wf_to_bf16(c, x, n);
    else wf_to_fp16(c, x, n);
}

/* A context whose plan has only a precision: what the kernels read of it. */
static wf_ctx *context_of(struct wf_ctx *ctx, wf_program *prog, int precision) {
    memset(prog, 0, sizeof *prog);
    prog->precision = precision;
    memset(ctx, 0, sizeof *ctx);
    ctx->p = prog;
    return ctx;
}

/* Returns the number of failed checks. */
static int check(int precision, const char *name) {
    wf_program prog;
    struct wf_ctx ctx;
    wf_ctx *c = context_of(&ctx, &prog, precision);
    long n = (long)N * C;
    float *a = rand_buf(n, 3.0f), *b = rand_buf(n, 1.0f), *w = rand_buf(C, 1.5f), *bias = rand_buf(C, 0.5f);
    round_to(c, precision, a, n);  /* 16-bit tensors, as the arenas hold them */
    round_to(c, precision, b, n);

    float *res = malloc(sizeof(float) * n), *out = malloc(sizeof(float) * n), *stats = malloc(sizeof(float) * 2 * N);
    float *res2 = malloc(sizeof(float) * n), *out2 = malloc(sizeof(float) * n), *stats2 = malloc(sizeof(float) * 2 * N);
    wf_residual_layernorm_fwd(c, res, out, stats, stats + N, a, b, w, bias, N, C);
    wf_add_fwd(c, res2, a, b, n);
    round_to(c, precision, res2, n);
    wf_layernorm_fwd(c, out2, stats2, stats2 + N, res2, w, bias, N, C);
    int fails = 0;
    int fwd_ok = same(res, res2, n) && same(out, out2, n) && same(stats, stats2, 2 * N);
    /* and the rounding is real: fp32 (no context) gives another residual */
    float *res32 = malloc(sizeof(float) * n), *out32 = malloc(sizeof(float) * n), *stats32 = malloc(sizeof(float) * 2 * N);
    wf_residual_layernorm_fwd(NULL, res32, out32, stats32, stats32 + N, a, b, w, bias, N, C);
    int rounded = !same(res, res32, n);

    float *dres = rand_buf(n, 1.0f), *dln = rand_buf(n, 1.0f);
    round_to(c, precision, dres, n);
    round_to(c, precision, dln, n);
    float *da = rand_buf(n, 1.0f), *db = rand_buf(n, 1.0f), *dw = rand_buf(C, 1.0f), *dbias = rand_buf(C, 1.0f);
    float *da2 = dup(da, n), *db2 = dup(db, n), *dw2 = dup(dw, C), *dbias2 = dup(dbias, C);
    wf_residual_layernorm_bwd(c, da, db, dw, dbias, dres, dln, res, w, stats, stats + N, N, C);
    float *dx = dup(dres, n);
    wf_layernorm_bwd(c, dx, dw2, dbias2, dln, res2, w, stats2, stats2 + N, N, C);
    round_to(c, precision, dx, n);
    wf_add_bwd(c, da2, db2, dx, n);
    int bwd_ok = same(da, da2, n) && same(db, db2, n) && same(dw, dw2, C) && same(dbias, dbias2, C);

    printf("%-5s fused == add, round, layernorm (forward)      %s\n", name, fwd_ok ? "ok" : "FAIL");
    printf("%-5s the residual is rounded (differs from fp32)   %s\n", name, rounded ? "ok" : "FAIL");
    printf("%-5s fused == layernorm, round, add (backward)     %s\n", name, bwd_ok ? "ok" : "FAIL");
    fails += !fwd_ok + !rounded + !bwd_ok;
    free(a), free(b), free(w), free(bias), free(res), free(out), free(stats), free(res2), free(out2);
    free(stats2), free(res32), free(out32), free(stats32), free(dres), free(dln), free(da), free(db);
    free(dw), free(dbias), free(da2), free(db2), free(dw2), free(dbias2), free(dx);
    return fails;
}

/* The fused linear + GELU against what the compiler emits for the unfused
 * pair (emit_ops.c):
 *   forward   linear; round(pre); gelu; round(out)
 *   backward  gelu backward into dpre; round(dpre); linear backward;
 *             round(dinp), round(dw), round(db)
 * and for the fused one: the fused forward; the fused B half, the linear's W
 * half and the same three roundings.  Returns the number of failed checks. */
static int check_linear_gelu(int precision, const char *name) {
    enum { M = 29 };
    wf_program prog;
    struct wf_ctx ctx;
    wf_ctx *c = context_of(&ctx, &prog, precision);
    long nx = (long)N * C, nw = (long)C * M, no = (long)N * M;
    float *x = rand_buf(nx, 2.0f), *w = rand_buf(nw, 0.5f), *b = rand_buf(M, 0.5f);
    round_to(c, precision, x, nx);
    round_to(c, precision, w, nw);
    round_to(c, precision, b, M);

    float *pre = malloc(sizeof(float) * no), *out = malloc(sizeof(float) * no);
    float *pre2 = malloc(sizeof(float) * no), *out2 = malloc(sizeof(float) * no);
    wf_linear_gelu_fwd(c, pre, out, x, w, b, N, C, M);
    wf_linear_fwd(c, pre2, x, w, b, N, C, M);
    round_to(c, precision, pre2, no);
    wf_gelu_fwd(c, out2, pre2, no);
    round_to(c, precision, out2, no);
    int fwd_ok = same(pre, pre2, no) && same(out, out2, no);
    /* and the rounding is real: fp32 (no context) gives other values */
    float *pre32 = malloc(sizeof(float) * no), *out32 = malloc(sizeof(float) * no);
    wf_linear_gelu_fwd(NULL, pre32, out32, x, w, b, N, C, M);
    int rounded = !same(pre, pre32, no) && !same(out, out32, no);

    float *dout = rand_buf(no, 1.0f), *dpre = rand_buf(no, 1.0f);
    round_to(c, precision, dout, no);
    round_to(c, precision, dpre, no);
    float *dx = rand_buf(nx, 1.0f), *dw = rand_buf(nw, 1.0f), *db = rand_buf(M, 1.0f);
    float *dpre2 = dup(dpre, no), *dx2 = dup(dx, nx), *dw2 = dup(dw, nw), *db2 = dup(db, M);
    wf_linear_gelu_bwd_input(c, dx, dpre, dout, pre, w, N, C, M);
    wf_linear_bwd_weight(c, dw, db, dpre, x, N, C, M);
    wf_gelu_bwd(c, dpre2, pre2, dout, no);
    round_to(c, precision, dpre2, no);
    wf_linear_bwd(c, dx2, dw2, db2, dpre2, x, w, N, C, M);
    float *grads[2][3] = { { dx, dw, db }, { dx2, dw2, db2 } };
    long lens[3] = { nx, nw, M };
    for (int k = 0; k < 2; k++)
        for (int j = 0; j < 3; j++) round_to(c, precision, grads[k][j], lens[j]);
    int bwd_ok = same(dpre, dpre2, no) && same(dx, dx2, nx) && same(dw, dw2, nw) && same(db, db2, M);

    printf("%-5s fused == linear, round, gelu, round (forward) %s\n", name, fwd_ok ? "ok" : "FAIL");
    printf("%-5s pre and out are rounded (differ from fp32)    %s\n", name, rounded ? "ok" : "FAIL");
    printf("%-5s fused == gelu, round, linear (backward)       %s\n", name, bwd_ok ? "ok" : "FAIL");
    free(x), free(w), free(b), free(pre), free(out), free(pre2), free(out2), free(pre32), free(out32);
    free(dout), free(dpre), free(dx), free(dw), free(db), free(dpre2), free(dx2), free(dw2), free(db2);
    return !fwd_ok + !rounded + !bwd_ok;
}

int main(void) {
    int fails = check(WF_BF16, "bf16") + check(WF_FP16, "fp16");
    fails += check_linear_gelu(WF_BF16, "bf16") + check_linear_gelu(WF_FP16, "fp16");
    printf("test_fused_16bit: %s\n", fails ? "FAILED" : "all passed");
    return fails ? 1 : 0;
}
