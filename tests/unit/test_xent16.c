/* test_xent16.c: the LM head's cross-entropy under bf16 and fp16 plans on the
 * CPU backend (runtime/cpu/kernels.c, kernels_tp.c) against a plain
 * reference: the fp32 logits (the same wf_sgemm) rounded to the 16-bit type,
 * the softmax and loss in double, dlogits = round16((p - onehot) * scale).
 *   - every dlogit is a value of the 16-bit type (the kernel rounds them);
 *   - dlogits equal the reference's bit for bit, except where the kernel's
 *     fp32 probability lands on the other side of a 16-bit rounding boundary
 *     than the double one: then one 16-bit step apart, and rare;
 *   - losses within 1e-6 of the reference's (an unrounded logit moves them
 *     by ~1e-3 in bf16);
 *   - the vocabulary-parallel pieces over two ranks (as runtime/common/tp.c
 *     puts them together) give the whole head's numbers, rounded alike. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blas.h"
#include "kernels_tp.h"
#include "weft/rt.h"

enum { N = 29, C = 40, V = 1001, VL = (V + 1) / 2 };

wf_ctx *wf_precision_ctx(int precision); /* runtime/common/precision_of.c */

static uint64_t rng = 0x13198a2e03707344ull;
static float uniform(float scale) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return scale * (float)((rng >> 40) / 8388608.0 - 1.0);
}

static float round16(int precision, float x) { return precision == WF_BF16 ? wf_bf16(x) : wf_fp16(x); }

/* the 16-bit type's step at |x| (fp16 subnormals: 2^-24) */
static double step16(int precision, float x) {
    int e;
    frexp(fabs((double)x), &e);
    int mant = precision == WF_BF16 ? 8 : 11;
    double s = ldexp(1.0, e - mant);
    return precision == WF_FP16 && s < 0x1p-24 ? 0x1p-24 : s;
}

static float *rounded(int precision, long n, float scale) {
    float *x = malloc(sizeof(float) * (size_t)n);
    for (long i = 0; i < n; i++) x[i] = round16(precision, uniform(scale));
    return x;
}

/* Counts the dlogits that differ from ref: *off those one 16-bit step away,
 * *bad those further or not 16-bit values. */
static void compare(int precision, const float *got, const float *ref, long n, long *off, long *bad) {
    *off = *bad = 0;
    for (long i = 0; i < n; i++) {
        if (round16(precision, got[i]) != got[i]) { (*bad)++; continue; }
        if (got[i] == ref[i]) continue;
        if (fabs((double)got[i] - ref[i]) <= step16(precision, ref[i])) (*off)++;
        else (*bad)++;
    }
}

static int check(int precision, float scale) {
    const char *name = precision == WF_BF16 ? "bf16" : "fp16";
    wf_ctx *c = wf_precision_ctx(precision);
    float *x = rounded(precision, (long)N * C, 1.0f), *wte = rounded(precision, 2L * VL * C, 1.0f);
    int32_t targets[N];
    for (int n = 0; n < N; n++) targets[n] = (int32_t)((uniform(0.5f) + 0.5f) * (V - 1));

    /* the reference */
    float *ref = malloc(sizeof(float) * (size_t)N * V);
    double ref_loss[N], ref_total = 0.0;
    wf_sgemm(0, 1, N, V, C, 1.0f, x, C, wte, C, 0.0f, ref, V);
    for (int n = 0; n < N; n++) {
        float *row = ref + (long)n * V;
        double max = -INFINITY, sum = 0.0;
        for (int j = 0; j < V; j++) row[j] = round16(precision, row[j]), max = fmax(max, row[j]);
        for (int j = 0; j < V; j++) sum += exp(row[j] - max);
        ref_loss[n] = log(sum) - (row[targets[n]] - max);
        ref_total += ref_loss[n];
        for (int j = 0; j < V; j++)
            row[j] = round16(precision, (float)((exp(row[j] - max) / sum - (j == targets[n])) * scale));
    }

    /* the whole head */
    float *dl = malloc(sizeof(float) * (size_t)N * V), losses[N];
    double total = wf_lmhead_xent_fwd(c, dl, losses, x, wte, targets, scale, N, C, V);
    double loss_err = fabs(total - ref_total) / ref_total;
    for (int n = 0; n < N; n++) loss_err = fmax(loss_err, fabs(losses[n] - ref_loss[n]) / ref_loss[n]);
    long off, bad, zeros = 0;
    compare(precision, dl, ref, (long)N * V, &off, &bad);
    for (long i = 0; i < (long)N * V; i++) zeros += dl[i] == 0.0f;

    /* the vocabulary-parallel pieces on two ranks, the all-reduces written out */
    float *part[2], rowmax[2][N], plosses[N];
    double stats[2][2 * N], ptotal = 0.0;
    for (int r = 0; r < 2; r++) {
        int valid = V - r * VL < VL ? V - r * VL : VL;
        part[r] = malloc(sizeof(float) * (size_t)N * VL);
        wf_vocab_logits(NULL, part[r], rowmax[r], x, wte + (long)r * VL * C, N, C, VL, valid, precision);
    }
    for (int n = 0; n < N; n++) rowmax[0][n] = rowmax[1][n] = fmaxf(rowmax[0][n], rowmax[1][n]);
    for (int r = 0; r < 2; r++) {
        int valid = V - r * VL < VL ? V - r * VL : VL;
        wf_vocab_exp(NULL, part[r], stats[r], rowmax[r], targets, N, VL, r * VL, valid);
    }
    for (int i = 0; i < 2 * N; i++) stats[0][i] = stats[1][i] = stats[0][i] + stats[1][i];
    for (int r = 0; r < 2; r++)
        ptotal = wf_vocab_dlogits(NULL, part[r], plosses, rowmax[r], stats[r], targets, scale, N, VL, r * VL, precision);
    float *joined = malloc(sizeof(float) * (size_t)N * V);
    for (int n = 0; n < N; n++)
        for (int j = 0; j < V; j++) joined[(long)n * V + j] = part[j / VL][(long)n * VL + j % VL];
    long poff, pbad;
    compare(precision, joined, dl, (long)N * V, &poff, &pbad);
    double ploss_err = fabs(ptotal - total) / total;
    for (int n = 0; n < N; n++) ploss_err = fmax(ploss_err, fabs(plosses[n] - losses[n]) / losses[n]);

    long all = (long)N * V;
    int ok = loss_err <= 1e-6 && bad == 0 && off * 100 <= all && ploss_err <= 1e-6 && pbad == 0 && poff * 100 <= all;
    printf("lmhead_xent %s scale %g: loss err %.2e, dlogits %ld of %ld one step off, %ld wrong (%ld zero); "
           "vocab-parallel: loss err %.2e, %ld one step off, %ld wrong  %s\n",
           name, scale, loss_err, off, all, bad, zeros, ploss_err, poff, pbad, ok ? "ok" : "FAIL");
    free(ref), free(dl), free(joined), free(part[0]), free(part[1]), free(x), free(wte);
    return !ok;
}

int main(void) {
    int failures = 0;
    failures += check(WF_BF16, 1.0f / N);
    failures += check(WF_FP16, 1.0f / N);     /* tiny probabilities underflow to subnormals or 0 */
    failures += check(WF_FP16, 1024.0f / N);  /* with a loss scale */
    return failures != 0;
}
