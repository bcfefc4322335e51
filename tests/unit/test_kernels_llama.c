/* test_kernels_llama.c: checks the LLaMA kernels of weft/rt.h (RMSNorm,
 * RoPE, SwiGLU, grouped-query attention, and RMSNorm's B/W halves) the way
 * test_kernels.c checks the GPT-2 ones:
 *   fwd    the fp32 forward against a float64 reference written here;
 *   bwd    every input and parameter gradient against central finite
 *          differences of the reference, for L = sum(out * R), R random;
 *   accum  backward called twice onto random gradients G0: (G - G0) / 2 must
 *          match again (backward kernels accumulate).
 * Then a self-test: a gradient scaled by 1.01 must be reported wrong, and a
 * RoPE whose backward rotated forward again (not inversely) must fail.
 * Tolerance: |got - ref| <= max(ATOL, RTOL |ref|), as in test_kernels.c. */
#include "weft/rt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RTOL 1e-3
#define ATOL 1e-4
#define FD_STEP 1e-5
#define MAX_IN 3

static int B, T, C, H, KVH, HD, N;
static float EPS = 1e-5f, THETA = 10000.0f;
static int failures;

#define KERNEL_FD_SEED 0x11a3a5eedULL
#include "kernel_fd.h"

/* ---- float64 references ---------------------------------------------- */

static void ref_rmsnorm(double *const *in, double *out)
{
    const double *x = in[0], *w = in[1];
    for (int n = 0; n < N; n++) {
        double ms = 0;
        for (int i = 0; i < C; i++) ms += x[n * C + i] * x[n * C + i];
        double r = 1.0 / sqrt(ms / C + EPS);
        for (int i = 0; i < C; i++) out[n * C + i] = x[n * C + i] * r * w[i];
    }
}

/* Written as the textbook complex rotation of pairs (i, i + hd/2). */
static void ref_rope(double *const *in, double *out)
{
    int half = HD / 2;
    for (int n = 0; n < N; n++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < half; i++) {
                double ang = (n % T) / pow(THETA, 2.0 * i / HD);
                double a = in[0][n * H * HD + h * HD + i], b = in[0][n * H * HD + h * HD + i + half];
                out[n * H * HD + h * HD + i] = a * cos(ang) - b * sin(ang);
                out[n * H * HD + h * HD + i + half] = a * sin(ang) + b * cos(ang);
            }
}

static void ref_swiglu(double *const *in, double *out)
{
    for (long i = 0; i < (long)N * C; i++) {
        double g = in[0][i];
        out[i] = g / (1.0 + exp(-g)) * in[1][i];
    }
}

/* qk = in[0] (N, (H + KVH) HD), v = in[1] (N, KVH HD); out (N, H HD). */
static void ref_gqa(double *const *in, double *out)
{
    int ldqk = (H + KVH) * HD, ldv = KVH * HD, group = H / KVH;
    double *p = xmalloc(sizeof(double) * (size_t)T);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            int kv = h / group;
            for (int t = 0; t < T; t++) {
                const double *q = in[0] + (long)(b * T + t) * ldqk + h * HD;
                double max = -1e300, sum = 0;
                for (int j = 0; j <= t; j++) {
                    const double *k = in[0] + (long)(b * T + j) * ldqk + (H + kv) * HD;
                    double s = 0;
                    for (int d = 0; d < HD; d++) s += q[d] * k[d];
                    p[j] = s / sqrt((double)HD);
                    if (p[j] > max) max = p[j];
                }
                for (int j = 0; j <= t; j++) sum += (p[j] = exp(p[j] - max));
                double *o = out + (long)(b * T + t) * H * HD + h * HD;
                for (int d = 0; d < HD; d++) {
                    double acc = 0;
                    for (int j = 0; j <= t; j++) acc += p[j] / sum * in[1][(long)(b * T + j) * ldv + kv * HD + d];
                    o[d] = acc;
                }
            }
        }
    free(p);
}

/* ---- the kernels, wrapped ------------------------------------------------ */

static float *g_rstd, *g_att, *g_out; /* what the forward saved; the output it wrote */
static int g_split, g_wrong_rope;

static void rms_fwd(float *const *x, float *out) { wf_rmsnorm_fwd(NULL, out, g_rstd, x[0], x[1], N, C, EPS); }
static void rms_bwd(float *const *x, float *const *g, const float *dout)
{
    if (g_split) {  /* the zero-bubble halves must add up to the whole */
        wf_rmsnorm_bwd_input(NULL, g[0], dout, x[0], x[1], g_rstd, N, C);
        wf_rmsnorm_bwd_weight(NULL, g[1], dout, x[0], g_rstd, N, C);
    } else {
        wf_rmsnorm_bwd(NULL, g[0], g[1], dout, x[0], x[1], g_rstd, N, C);
    }
}

/* RoPE over all H heads of each row (the graph calls it once for q, once for k). */
static void rope_fwd(float *const *x, float *out) { wf_rope_fwd(NULL, out, H * HD, x[0], H * HD, N, T, H, HD, THETA); }
static void rope_bwd(float *const *x, float *const *g, const float *dout)
{
    (void)x;
    if (g_wrong_rope) wf_rope_fwd(NULL, g[0], H * HD, dout, H * HD, N, T, H, HD, THETA);  /* broken on purpose */
    else wf_rope_bwd(NULL, g[0], H * HD, dout, H * HD, N, T, H, HD, THETA);
}

static void swiglu_fwd(float *const *x, float *out) { wf_swiglu_fwd(NULL, out, x[0], x[1], (long)N * C); }
static void swiglu_bwd(float *const *x, float *const *g, const float *dout)
{
    wf_swiglu_bwd(NULL, g[0], g[1], x[0], x[1], dout, (long)N * C);
}

static void gqa_fwd(float *const *x, float *out)
{
    wf_gqa_attention_fwd(NULL, out, g_att, x[0], x[1], B, T, H, KVH, HD);
    memcpy(g_out, out, sizeof(float) * (size_t)N * H * HD); /* backward takes it */
}
static void gqa_bwd(float *const *x, float *const *g, const float *dout)
{
    float *scratch = xmalloc(sizeof(float) * (size_t)B * H * T);  /* D per query row */
    wf_gqa_attention_bwd(NULL, g[0], g[1], scratch, dout, x[0], x[1], g_out, g_att, B, T, H, KVH, HD);
    free(scratch);
}

static kernel make(const char *name, int n_in, const long *len, long out_len, ref_fn ref,
                   void (*fwd)(float *const *, float *), void (*bwd)(float *const *, float *const *, const float *))
{
    kernel k = { name, n_in, { 0 }, out_len, { 0 }, { 0 }, ref, fwd, bwd };
    for (int a = 0; a < n_in; a++) {
        k.len[a] = len[a];
        k.x[a] = frand(len[a], a == 1 && ref == ref_rmsnorm ? 0.5 : -2, 2);
        k.g[a] = xmalloc(sizeof(float) * (size_t)len[a]);
    }
    return k;
}

static void drop(kernel *k)
{
    for (int a = 0; a < k->n_in; a++) free(k->x[a]), free(k->g[a]);
}

static void run_config(int b, int t, int c, int h, int kvh, int hd)
{
    B = b, T = t, C = c, H = h, KVH = kvh, HD = hd, N = b * t;
    char cfg[64];
    snprintf(cfg, sizeof cfg, "B%d T%d C%d H%d KV%d hd%d", B, T, C, H, KVH, HD);
    g_rstd = xmalloc(sizeof(float) * (size_t)N);
    g_att = xmalloc(sizeof(float) * (size_t)B * H * T);  /* log-sum-exp per query row */
    g_out = xmalloc(sizeof(float) * (size_t)N * H * HD);

    long rl[] = { (long)N * C, C };
    kernel k = make("rmsnorm", 2, rl, (long)N * C, ref_rmsnorm, rms_fwd, rms_bwd);
    g_split = 0;
    check(&k, cfg, 1.0f, 0);
    g_split = 1;
    k.name = "rmsnorm (B + W)";
    check(&k, cfg, 1.0f, 0);
    k.name = "self-test dx*1.01";
    check(&k, cfg, 1.01f, 1);
    drop(&k);

    long ql[] = { (long)N * H * HD };
    k = make("rope", 1, ql, (long)N * H * HD, ref_rope, rope_fwd, rope_bwd);
    check(&k, cfg, 1.0f, 0);
    g_wrong_rope = 1;
    k.name = "self-test rope bwd";
    check(&k, cfg, 1.0f, 1);
    g_wrong_rope = 0;
    drop(&k);

    long sl[] = { (long)N * C, (long)N * C };
    k = make("swiglu", 2, sl, (long)N * C, ref_swiglu, swiglu_fwd, swiglu_bwd);
    check(&k, cfg, 1.0f, 0);
    drop(&k);

    long al[] = { (long)N * (H + KVH) * HD, (long)N * KVH * HD };
    k = make("gqa attention", 2, al, (long)N * H * HD, ref_gqa, gqa_fwd, gqa_bwd);
    check(&k, cfg, 1.0f, 0);
    drop(&k);
    free(g_rstd);
    free(g_att);
    free(g_out);
}

int main(void)
{
    run_config(2, 5, 7, 4, 2, 4);   /* groups of 2 */
    run_config(1, 6, 9, 3, 1, 6);   /* one kv head for all (multi-query) */
    run_config(2, 3, 5, 2, 2, 2);   /* kv_heads = heads: plain multi-head */
    THETA = 500000.0f;
    EPS = 1e-6f;
    run_config(1, 4, 6, 4, 4, 8);
    printf("%s: %d failure(s)\n", failures ? "FAIL" : "ok", failures);
    return failures ? 1 : 0;
}
