/* test_kernels_vision.c: checks the vision encoder's kernels of weft/rt.h
 * (patch embedding, attention with a bidirectional prefix, the image /
 * text hand-off, and the LM head's ignored positions) the way
 * test_kernels_llama.c checks the LLaMA ones:
 *   fwd    the fp32 forward against a float64 reference written here;
 *   bwd    every differentiable input's gradient against central finite
 *          differences of the reference, for L = sum(out * R), R random;
 *   accum  backward called twice onto random gradients G0: (G - G0) / 2 must
 *          match again (backward kernels accumulate).
 * Attention is checked for prefix = 0 (causal: and then equal to
 * wf_attention_fwd bit for bit), a middle prefix, and prefix = T (fully
 * bidirectional).  Sequence parallelism's row kernels (wf_patch_embed_rows_*,
 * wf_image_merge_rows_*) are checked the same way, called on three slices of
 * the rows in turn.  Then self-tests: a gradient scaled by 1.01 must be
 * reported wrong, and so must a causal kernel checked against the
 * bidirectional reference.
 * Tolerance: |got - ref| <= max(ATOL, RTOL |ref|), as in test_kernels.c:
 * fp32 rounding at these sizes (reductions of <= 48 terms) is ~1e-6
 * relative, the finite differences' truncation and rounding ~1e-10. */
#include "weft/rt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RTOL 1e-3
#define ATOL 1e-4
#define FD_STEP 1e-5
#define MAX_IN 3

static int B, T, C, H, PREFIX, N;
static int IH, IW, CH, PATCH, P, K;  /* image, patch, patches per image, values per patch */
static uint8_t *g_img;
static int failures;

#define KERNEL_FD_SEED 0x5ee1a9e5ULL
#include "kernel_fd.h"

/* ---- float64 references ---------------------------------------------- */

/* Written as the convolution itself: out[b, t = (py, px), d] = pos[t, d] +
 * sum_{ch, ky, kx} w[d, ch, ky, kx] * x[b, py p + ky, px p + kx, ch], with
 * x = (v / 255 - 0.5) / 0.5; rows t >= P are 0. */
static void ref_patch_embed(double *const *in, double *out)
{
    const double *w = in[0], *pos = in[1];
    int gw = IW / PATCH;
    memset(out, 0, sizeof(double) * (size_t)N * C);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < P; t++)
            for (int d = 0; d < C; d++) {
                double acc = pos[t * C + d];
                for (int ch = 0; ch < CH; ch++)
                    for (int ky = 0; ky < PATCH; ky++)
                        for (int kx = 0; kx < PATCH; kx++) {
                            int y = (t / gw) * PATCH + ky, x = (t % gw) * PATCH + kx;
                            double v = g_img[(((long)b * IH + y) * IW + x) * CH + ch];
                            acc += w[((d * CH + ch) * PATCH + ky) * PATCH + kx] * ((v / 255.0 - 0.5) / 0.5);
                        }
                out[((long)b * T + t) * C + d] = acc;
            }
}

/* qkv = in[0] (N, 3C); key j visible to query t iff j < PREFIX or j <= t */
static void ref_attention(double *const *in, double *out)
{
    int hs = C / H;
    double *p = xmalloc(sizeof(double) * (size_t)T);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int t = 0; t < T; t++) {
                const double *q = in[0] + (long)(b * T + t) * 3 * C + h * hs;
                double max = -1e300, sum = 0;
                for (int j = 0; j < T; j++) {
                    if (!(j < PREFIX || j <= t)) continue;
                    const double *k = in[0] + (long)(b * T + j) * 3 * C + C + h * hs;
                    double s = 0;
                    for (int d = 0; d < hs; d++) s += q[d] * k[d];
                    p[j] = s / sqrt((double)hs);
                    if (p[j] > max) max = p[j];
                }
                for (int j = 0; j < T; j++)
                    if (j < PREFIX || j <= t) sum += (p[j] = exp(p[j] - max));
                for (int d = 0; d < hs; d++) {
                    double acc = 0;
                    for (int j = 0; j < T; j++)
                        if (j < PREFIX || j <= t) acc += p[j] / sum * in[0][(long)(b * T + j) * 3 * C + 2 * C + h * hs + d];
                    out[(long)(b * T + t) * C + h * hs + d] = acc;
                }
            }
    free(p);
}

/* text = in[0], image = in[1]: rows t < P from the image */
static void ref_merge(double *const *in, double *out)
{
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int i = 0; i < C; i++) {
                long at = ((long)b * T + t) * C + i;
                out[at] = t < P ? in[1][at] : in[0][at];
            }
}

/* ---- the kernels, wrapped ------------------------------------------------------ */

static float *g_att, *g_out, *g_scratch;
static int g_kernel_prefix;  /* the prefix the kernel is called with (the reference uses PREFIX) */

static void pe_fwd(float *const *x, float *out)
{
    wf_patch_embed_fwd(NULL, out, g_scratch, g_img, x[0], x[1], B, T, IH, IW, CH, PATCH, C);
}
static void pe_bwd(float *const *x, float *const *g, const float *dout)
{
    (void)x;
    wf_patch_embed_bwd(NULL, g[0], g[1], g_scratch, dout, g_img, B, T, IH, IW, CH, PATCH, C);
}

static void att_fwd(float *const *x, float *out)
{
    wf_attention_prefix_fwd(NULL, out, g_att, x[0], B, T, C, H, g_kernel_prefix);
    memcpy(g_out, out, sizeof(float) * (size_t)N * C);
}
static void att_bwd(float *const *x, float *const *g, const float *dout)
{
    wf_attention_prefix_bwd(NULL, g[0], g_scratch, dout, x[0], g_out, g_att, B, T, C, H, g_kernel_prefix);
}

static void merge_fwd(float *const *x, float *out) { wf_image_merge_fwd(NULL, out, x[0], x[1], B, T, P, C); }

/* Sequence parallelism's row kernels, called on g_parts equal slices of the
 * N rows in turn (as g_parts tp ranks would, each on its own rows): the
 * slices together must be the whole kernel, so the same reference and finite
 * differences check them; the parameter gradients are the slices' sum (the
 * tp group's all-reduce of a tp_partial gradient). */
static int g_parts = 1;
static void pe_rows_fwd(float *const *x, float *out)
{
    long rows = N / g_parts;
    for (int r = 0; r < g_parts; r++)
        wf_patch_embed_rows_fwd(NULL, out + r * rows * C, g_scratch, g_img, x[0], x[1], r * rows, rows, T, IH, IW,
                                CH, PATCH, C);
}
static void pe_rows_bwd(float *const *x, float *const *g, const float *dout)
{
    (void)x;
    long rows = N / g_parts;
    for (int r = 0; r < g_parts; r++)
        wf_patch_embed_rows_bwd(NULL, g[0], g[1], g_scratch, dout + r * rows * C, g_img, r * rows, rows, T, IH,
                                IW, CH, PATCH, C);
}
static void merge_rows_fwd(float *const *x, float *out)
{
    long rows = N / g_parts;
    for (int r = 0; r < g_parts; r++)
        wf_image_merge_rows_fwd(NULL, out + r * rows * C, x[0] + r * rows * C, x[1] + r * rows * C, r * rows, rows,
                                T, P, C);
}
static void merge_rows_bwd(float *const *x, float *const *g, const float *dout)
{
    (void)x;
    long rows = N / g_parts;
    for (int r = 0; r < g_parts; r++)
        wf_image_merge_rows_bwd(NULL, g[0] + r * rows * C, g[1] + r * rows * C, dout + r * rows * C, r * rows, rows,
                                T, P, C);
}
static void merge_bwd(float *const *x, float *const *g, const float *dout)
{
    (void)x;
    wf_image_merge_bwd(NULL, g[0], g[1], dout, B, T, P, C);
}

/* ---- the configurations ------------------------------------------------------- */

static void test_patch_embed(int b, int t, int ih, int iw, int ch, int patch, int c, int parts)
{
    g_parts = parts;
    B = b, T = t, IH = ih, IW = iw, CH = ch, PATCH = patch, C = c, N = B * T;
    P = (IH / PATCH) * (IW / PATCH), K = CH * PATCH * PATCH;
    g_img = xmalloc((size_t)B * IH * IW * CH);
    for (long i = 0; i < (long)B * IH * IW * CH; i++) g_img[i] = (uint8_t)(urand() * 256);
    g_scratch = xmalloc(sizeof(float) * (size_t)wf_patch_embed_scratch(IH, IW, CH, PATCH));
    kernel k = { "patch_embed", 2, { (long)C * K, (long)P * C }, (long)N * C,
                 { frand((long)C * K, -0.3, 0.3), frand((long)P * C, -0.5, 0.5) },
                 { xmalloc(sizeof(float) * (size_t)C * K), xmalloc(sizeof(float) * (size_t)P * C) }, ref_patch_embed,
                 parts > 1 ? pe_rows_fwd : pe_fwd, parts > 1 ? pe_rows_bwd : pe_bwd };
    char cfg[80];
    snprintf(cfg, sizeof cfg, "B%d T%d %dx%dx%d p%d D%d%s", B, T, IH, IW, CH, PATCH, C, parts > 1 ? " rows/3" : "");
    check(&k, cfg, 1.0f, 0);
    for (int a = 0; a < 2; a++) free(k.x[a]), free(k.g[a]);
    free(g_img), free(g_scratch);
}

static void test_attention(int b, int t, int c, int h, int prefix, int kernel_prefix, float scale, int expect_fail)
{
    B = b, T = t, C = c, H = h, PREFIX = prefix, N = B * T;
    g_kernel_prefix = kernel_prefix;
    g_att = xmalloc(sizeof(float) * (size_t)B * H * T * T);
    g_out = xmalloc(sizeof(float) * (size_t)N * C);
    g_scratch = xmalloc(sizeof(float) * (size_t)T * T);
    kernel k = { "attention_prefix", 1, { (long)N * 3 * C }, (long)N * C, { frand((long)N * 3 * C, -1, 1) },
                 { xmalloc(sizeof(float) * (size_t)N * 3 * C) }, ref_attention, att_fwd, att_bwd };
    char cfg[80];
    snprintf(cfg, sizeof cfg, "B%d T%d C%d H%d prefix %d%s", B, T, C, H, kernel_prefix,
             expect_fail ? (scale != 1.0f ? " (grad x1.01)" : " vs bidirectional") : "");
    check(&k, cfg, scale, expect_fail);
    if (prefix == 0 && !expect_fail) {  /* the causal case is the causal kernel's, bit for bit */
        float *a = xmalloc(sizeof(float) * (size_t)N * C), *att = xmalloc(sizeof(float) * (size_t)B * H * T * T);
        wf_attention_fwd(NULL, a, att, k.x[0], B, T, C, H);
        wf_attention_prefix_fwd(NULL, g_out, g_att, k.x[0], B, T, C, H, 0);
        int same = memcmp(a, g_out, sizeof(float) * (size_t)N * C) == 0;
        printf("%-16s %-30s %s\n", "attention_prefix", "prefix 0 == wf_attention_fwd", same ? "ok" : "FAIL");
        failures += !same;
        free(a), free(att);
    }
    free(k.x[0]), free(k.g[0]), free(g_att), free(g_out), free(g_scratch);
}

static void test_merge(int b, int t, int p, int c, int parts)
{
    B = b, T = t, P = p, C = c, N = B * T;
    g_parts = parts;
    kernel k = { "image_merge", 2, { (long)N * C, (long)N * C }, (long)N * C,
                 { frand((long)N * C, -1, 1), frand((long)N * C, -1, 1) },
                 { xmalloc(sizeof(float) * (size_t)N * C), xmalloc(sizeof(float) * (size_t)N * C) }, ref_merge,
                 parts > 1 ? merge_rows_fwd : merge_fwd, parts > 1 ? merge_rows_bwd : merge_bwd };
    char cfg[80];
    snprintf(cfg, sizeof cfg, "B%d T%d P%d C%d%s", B, T, P, C, parts > 1 ? " rows/3" : "");
    check(&k, cfg, 1.0f, 0);
    for (int a = 0; a < 2; a++) free(k.x[a]), free(k.g[a]);
}

/* Positions whose target is -1 (a VLM's image and pad positions) add no loss
 * and no gradient; the others are those of the same call with every target. */
static void test_xent_ignore(void)
{
    int n = 6, c = 5, v = 7;
    float *x = frand((long)n * c, -1, 1), *w = frand((long)v * c, -1, 1);
    float *d1 = xmalloc(sizeof(float) * (size_t)n * v), *d2 = xmalloc(sizeof(float) * (size_t)n * v);
    float *l1 = xmalloc(sizeof(float) * (size_t)n), *l2 = xmalloc(sizeof(float) * (size_t)n);
    int32_t all[6] = { 1, 2, 3, 4, 5, 6 }, some[6] = { -1, 2, -1, 4, 5, -1 };
    double s1 = wf_lmhead_xent_fwd(NULL, d1, l1, x, w, all, 0.5f, n, c, v);
    double s2 = wf_lmhead_xent_fwd(NULL, d2, l2, x, w, some, 0.5f, n, c, v);
    int ok = 1;
    double kept = 0;
    for (int i = 0; i < n; i++) {
        int ignored = some[i] < 0;
        if (!ignored) kept += l1[i];
        ok &= ignored ? l2[i] == 0.0f : l2[i] == l1[i];
        for (int j = 0; j < v; j++)
            ok &= ignored ? d2[(long)i * v + j] == 0.0f : d2[(long)i * v + j] == d1[(long)i * v + j];
    }
    ok &= s2 == kept && s1 > s2;
    printf("%-16s %-30s %s\n", "lmhead_xent", "targets -1: no loss, no grad", ok ? "ok" : "FAIL");
    failures += !ok;
    free(x), free(w), free(d1), free(d2), free(l1), free(l2);
}

/* The same through the CPU backend's chunked head, two rows a chunk: the
 * first chunk has no loss position at all and is skipped (loss 0, dx rows and
 * dwte untouched by it); the kept rows' losses, dx and the dwte they make are
 * the whole head's on the same targets.  Tolerance: the two evaluations sum
 * the same at most max(n, v, c) = 7 products per value in different
 * groupings (the chunks' partial sums of dwte), each within gamma_7 = 4.2e-7
 * of the sum of |terms|; those sums are below 3 max|value| here (|x|, |w| <=
 * 1, |dl| <= 0.5), and the logits' own 2 gamma_5 relay through the softmax
 * with a factor <= 2: 1e-5 of the largest |value| covers it with margin. */
static void test_xent_ignore_chunked(void)
{
    int n = 6, c = 5, v = 7;
    float *x = frand((long)n * c, -1, 1), *w = frand((long)v * c, -1, 1);
    float *dl = xmalloc(sizeof(float) * (size_t)n * v), *l1 = xmalloc(sizeof(float) * (size_t)n);
    float *l2 = xmalloc(sizeof(float) * (size_t)n), *scratch = xmalloc(sizeof(float) * 2 * (size_t)v);
    float *dx1 = frand((long)n * c, -1, 1), *dw1 = frand((long)v * c, -1, 1);
    float *dx2 = xmalloc(sizeof(float) * (size_t)n * c), *dw2 = xmalloc(sizeof(float) * (size_t)v * c);
    memcpy(dx2, dx1, sizeof(float) * (size_t)n * c), memcpy(dw2, dw1, sizeof(float) * (size_t)v * c);
    int32_t some[6] = { -1, -1, 2, -1, 5, 6 };
    double s1 = wf_lmhead_xent_fwd(NULL, dl, l1, x, w, some, 0.5f, n, c, v);
    wf_lmhead_xent_bwd(NULL, dx1, dw1, dl, x, w, n, c, v);
    float *dx0 = xmalloc(sizeof(float) * (size_t)n * c);
    memcpy(dx0, dx2, sizeof(float) * (size_t)n * c);
    double s2 = wf_lmhead_xent_chunked(NULL, dx2, dw2, l2, scratch, x, w, some, 0.5f, n, c, v, 2);
    int ok = 1;
    double big = 0, worst = 0;
    for (int i = 0; i < n; i++) {
        if (some[i] < 0) ok &= l2[i] == 0.0f;
        else worst = fmax(worst, fabs(l2[i] - l1[i])), big = fmax(big, fabs(l1[i]));
        for (int j = 0; j < c; j++) {
            long k = (long)i * c + j;
            if (some[i] < 0) ok &= dx2[k] == dx0[k];  /* nothing added */
            worst = fmax(worst, fabs(dx2[k] - dx1[k])), big = fmax(big, fabs(dx1[k]));
        }
    }
    for (long k = 0; k < (long)v * c; k++) worst = fmax(worst, fabs(dw2[k] - dw1[k])), big = fmax(big, fabs(dw1[k]));
    ok &= worst <= 1e-5 * big && fabs(s2 - s1) <= 1e-5 * fabs(s1);
    printf("%-16s %-30s worst %.1e of %.1e %s\n", "lmhead_chunked", "targets -1, idle chunk skipped", worst, big,
           ok ? "ok" : "FAIL");
    failures += !ok;
    free(x), free(w), free(dl), free(l1), free(l2), free(scratch), free(dx1), free(dw1), free(dx2), free(dw2), free(dx0);
}

int main(void)
{
    test_patch_embed(2, 7, 4, 6, 3, 2, 5, 1);   /* P = 6 < T = 7: a text row after the image */
    test_patch_embed(1, 4, 8, 8, 3, 4, 3, 1);   /* P = T = 4 */
    test_patch_embed(2, 9, 6, 3, 1, 3, 4, 1);   /* one channel, P = 2 */
    /* sequence parallelism: 3 slices of 6 rows, the middle one across samples
     * (rows 6-8 of sample 0, image rows 0-2 of sample 1) */
    test_patch_embed(2, 9, 4, 6, 3, 2, 5, 3);   /* P = 6: slices end inside the image */
    test_patch_embed(2, 9, 6, 3, 1, 3, 4, 3);   /* P = 2 */
    test_attention(2, 7, 6, 2, 0, 0, 1.0f, 0);
    test_attention(2, 7, 6, 2, 3, 3, 1.0f, 0);
    test_attention(2, 7, 6, 2, 7, 7, 1.0f, 0);
    test_attention(1, 5, 9, 3, 5, 5, 1.0f, 0);
    test_merge(2, 7, 3, 4, 1);
    test_merge(1, 4, 4, 3, 1);
    test_merge(2, 9, 4, 3, 3);  /* 3 slices of 6 rows */
    test_xent_ignore();
    test_xent_ignore_chunked();
    /* self-tests: the checker fails a wrong gradient and a wrong mask */
    test_attention(2, 7, 6, 2, 7, 7, 1.01f, 1);
    test_attention(2, 7, 6, 2, 7, 0, 1.0f, 1);
    if (failures) printf("%d FAILED\n", failures);
    else printf("all vision kernels ok\n");
    return failures ? 1 : 0;
}
