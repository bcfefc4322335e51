/* xent.c: the LM head and cross-entropy on the CPU (weft/rt.h), as
 * runtime/cuda/xent.cu has them: the tied head fused with the loss gradient,
 * its B / W halves (zero-bubble schedules), and the local pieces of the
 * vocabulary-parallel head (kernels_tp.h) that runtime/common/tp.c puts
 * together with the collectives.
 *
 * All tensors are row-major.  Activations are (N, width) with N = B * T.
 * Every backward kernel accumulates (+=) into its gradient outputs.  The
 * execution context is not needed on the CPU; it may be NULL.  Matrix
 * products go through wf_sgemm (blas.h) so they are timed and counted;
 * everything else is plain loops.
 */
#include "weft/rt.h"

#include <math.h>

#include "blas.h"
#include "dlogits_row.h"
#include "exp_float.h"
#include "internal.h"
#include "kernels_tp.h"
#include "precision_bits.h"
#include "stage16.h"
#include "vector_clones.h"
#include "vocab_chunk.h"

/* ---- tied LM head and cross-entropy ---------------------------------------- */

/* The row's sum in double, in SUM_LANES partial sums added in a fixed order:
 * the same on every CPU whatever its vector width (vector_clones.h), and
 * independent additions rather than one chain. */
enum { SUM_LANES = 8 };

static inline double sum_lanes(const float *row, int V) {
    double part[SUM_LANES] = { 0 }, sum = 0.0;
    int j = 0;
    for (; j + SUM_LANES <= V; j += SUM_LANES)
        for (int l = 0; l < SUM_LANES; l++) part[l] += row[j + l];
    for (; j < V; j++) sum += row[j];
    for (int l = 0; l < SUM_LANES; l++) sum += part[l];
    return sum;
}

/* In place: the logits row becomes dlogits = (softmax - onehot(target)) *
 * scale, the loss gradient, so that backward needs no pass of its own over
 * the row.  Returns -log p[target], computed from the log-sum-exp in double
 * rather than as -log of the rounded float probability, which may underflow.
 * Under a bf16 / fp16 plan the logits are first rounded to the 16-bit type
 * (they are stored in it, as Megatron-LM and llm.c keep them), the softmax
 * arithmetic stays fp32 / double, and dlogits are rounded again
 * (wf_dlogits_row). */
WF_VECTOR_CLONES static double softmax_xent_row(float *row, int target, float scale, int V, int precision)
{
    if (target < 0) {  /* a position without loss (a VLM's image and pad positions) */
        for (int j = 0; j < V; j++) row[j] = 0.0f;
        return 0.0;
    }
    if (precision != WF_FP32)
        for (int j = 0; j < V; j++)
            row[j] = wf_hd_round(precision, row[j]);
    float max = row[0];
#pragma omp simd reduction(max : max)
    for (int j = 1; j < V; j++)
        max = row[j] > max ? row[j] : max;
    double target_logit = (double)row[target] - max;
    /* one exp per element, in float (exp_float.h: the loop vectorises; a
     * logit more than 87 below the maximum counts as e^-87, which changes the
     * row's sum, at least 1, by under 2^-125 of itself); the sum is kept in
     * double (sum_lanes) */
#pragma omp simd
    for (int j = 0; j < V; j++) {
        float y = row[j] - max;
        y = fabsf(y) > 87.0f ? copysignf(87.0f, y) : y;  /* y <= 0: -87; one select, as gelu_value.h has */
        row[j] = wf_exp_float(y);
    }
    double sum = sum_lanes(row, V);
    wf_dlogits_row(row, (float)(1.0 / sum), target, scale, V, precision);
    return log(sum) - target_logit;
}

/* Each product rounded to float in this order: the probability first, then
 * the gradient, the numbers separate softmax and gradient passes would give;
 * then, under a 16-bit plan, the gradient to the 16-bit type.  fp16: the
 * gradients of tiny probabilities (scale is the loss scale over the token
 * count) may become fp16 subnormals or 0, as they do in Megatron-LM. */
WF_VECTOR_CLONES void wf_dlogits_row(float *row, float inv, int target, float scale, int V, int precision)
{
    float et = target >= 0 && target < V ? row[target] : 0.0f;
    if (precision == WF_FP32)  /* nothing to round: a loop that vectorises, the same values */
        for (int j = 0; j < V; j++) {
            float p = row[j] * inv;
            row[j] = p * scale;
        }
    else
        for (int j = 0; j < V; j++) {
            float p = row[j] * inv;
            row[j] = wf_hd_round(precision, p * scale);
        }
    if (target >= 0 && target < V) {
        float p = et * inv;
        p -= 1.0f;
        row[target] = wf_hd_round(precision, p * scale);
    }
}

double wf_lmhead_xent_fwd(wf_ctx *c, float *dlogits, float *losses, const float *x,
                          const float *wte, const int32_t *targets, float scale, int N, int C,
                          int V)
{
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        x = wf_stage16_in(&s, x, (long)N * C);
        double r = wf_lmhead_xent_fwd(c, dlogits, losses, x, wte, targets, scale, N, C, V);
        wf_stage16_end(&s);
        return r;
    }
    int precision = wf_ctx_precision(c);
    /* logits (N,V) = x (N,C) @ wte^T, written straight into dlogits */
    wf_sgemm(0, 1, N, V, C, 1.0f, x, C, wte, C, 0.0f, dlogits, V);
    /* rows in parallel; the total is summed in a fixed order afterwards so that
     * it does not depend on the thread count */
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++)
        losses[n] = (float)softmax_xent_row(dlogits + (long)n * V, targets[n], scale, V, precision);
    double total = 0.0;
    for (int n = 0; n < N; n++)
        total += losses[n];
    return total;
}

/* Whether rows [0, n) of targets hold no loss position (all < 0): a VLM's
 * image and pad positions, whose chunk then needs no GEMM at all. */
int wf_xent_rows_idle(const int32_t *targets, int n)
{
    for (int i = 0; i < n; i++)
        if (targets[i] >= 0) return 0;
    return 1;
}

/* The fused, chunked head (the CPU backend's, called from the backward):
 * per chunk of `chunk` token rows, logits into scratch, softmax, loss and
 * dlogits in place, then both backward GEMMs consume the chunk, so at most
 * chunk x V logits exist at once.  The per-row arithmetic is
 * softmax_xent_row's, the whole head's; only dwte's sum over tokens is
 * split into per-chunk partial sums.  dwte NULL: a frozen head (weft.vlm's
 * freeze), dx alone. */
double wf_lmhead_xent_chunked(wf_ctx *c, float *dx, float *dwte, float *losses, float *scratch,
                              const float *x, const float *wte, const int32_t *targets,
                              float scale, int N, int C, int V, int chunk)
{
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        x = wf_stage16_in(&s, x, (long)N * C);
        dx = wf_stage16_acc(&s, dx, (long)N * C);
        double total = wf_lmhead_xent_chunked(c, dx, dwte, losses, scratch, x, wte, targets, scale, N, C, V,
                                              chunk);
        wf_stage16_end(&s);
        return total;
    }
    int precision = wf_ctx_precision(c);
    if (chunk < 1 || chunk > N) chunk = N;
    for (int r0 = 0; r0 < N; r0 += chunk) {
        int n = N - r0 < chunk ? N - r0 : chunk;
        const float *xc = x + (long)r0 * C;
        if (wf_xent_rows_idle(targets + r0, n)) {  /* no loss, no gradient */
            for (int i = 0; i < n; i++) losses[r0 + i] = 0.0f;
            continue;
        }
        wf_sgemm(0, 1, n, V, C, 1.0f, xc, C, wte, C, 0.0f, scratch, V);
#pragma omp parallel for schedule(static)
        for (int i = 0; i < n; i++)
            losses[r0 + i] = (float)softmax_xent_row(scratch + (long)i * V, targets[r0 + i], scale,
                                                     V, precision);
        /* dx += dlogits @ wte and dwte += dlogits^T @ x at once (blas.h) */
        wf_gemm gx = { 0, 0, n, C, V, 1.0f, scratch, V, wte, C, 1.0f, dx + (long)r0 * C, C };
        wf_gemm gw = { 1, 0, V, C, n, 1.0f, scratch, V, xc, C, 1.0f, dwte, C };
        wf_sgemm_pair(&gx, dwte ? &gw : NULL);
    }
    double total = 0.0;  /* in token order, as wf_lmhead_xent_fwd's */
    for (int n = 0; n < N; n++)
        total += losses[n];
    return total;
}

/* dx += dlogits @ wte; dwte += dlogits^T @ x (the B and W halves
 * below); the forward wrote dlogits. */
void wf_lmhead_xent_bwd(wf_ctx *c, float *dx, float *dwte, const float *dlogits,
                        const float *x, const float *wte, int N, int C, int V)
{
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        x = wf_stage16_in(&s, x, (long)N * C);
        dx = wf_stage16_acc(&s, dx, (long)N * C);
        wf_lmhead_xent_bwd(c, dx, dwte, dlogits, x, wte, N, C, V);
        wf_stage16_end(&s);
        return;
    }
    wf_gemm gx = { 0, 0, N, C, V, 1.0f, dlogits, V, wte, C, 1.0f, dx, C };  /* B and W at once (blas.h) */
    wf_gemm gw = { 1, 0, V, C, N, 1.0f, dlogits, V, x, C, 1.0f, dwte, C };
    wf_sgemm_pair(&gx, &gw);
}

/* B of the LM head: dx += dlogits @ wte (the forward wrote dlogits). */
void wf_lmhead_xent_bwd_input(wf_ctx *c, float *dx, const float *dlogits, const float *wte, int N,
                              int C, int V) {
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        dx = wf_stage16_acc(&s, dx, (long)N * C);
        wf_lmhead_xent_bwd_input(c, dx, dlogits, wte, N, C, V);
        wf_stage16_end(&s);
        return;
    }
    wf_sgemm(0, 0, N, C, V, 1.0f, dlogits, V, wte, C, 1.0f, dx, C);
}

void wf_lmhead_xent_bwd_weight(wf_ctx *c, float *dwte, const float *dlogits, const float *x, int N,
                               int C, int V) {
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        x = wf_stage16_in(&s, x, (long)N * C);
        wf_lmhead_xent_bwd_weight(c, dwte, dlogits, x, N, C, V);
        wf_stage16_end(&s);
        return;
    }
    wf_sgemm(1, 0, V, C, N, 1.0f, dlogits, V, x, C, 1.0f, dwte, C);
}

/* ---- vocabulary-parallel LM head and cross-entropy ------------------------- */

/* e^y as softmax_xent_row takes it (y <= 0: a logit less its row's maximum),
 * and 0 for a padding column's -inf */
static inline float xent_exp(float y) {
    if (y == -INFINITY) return 0.0f;
    return wf_exp_float(fabsf(y) > 87.0f ? copysignf(87.0f, y) : y);
}

/* logits (N, VL) = x @ wte_part^T, padding columns set to -inf; rowmax[n] is
 * the local maximum (-inf when the whole shard is padding). */
void wf_vocab_logits(wf_ctx *c, float *logits, float *rowmax, const float *x, const float *wte_part,
                     int N, int C, int VL, int valid, int precision) {
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        x = wf_stage16_in(&s, x, (long)N * C);
        wf_vocab_logits(c, logits, rowmax, x, wte_part, N, C, VL, valid, precision);
        wf_stage16_end(&s);
        return;
    }
    wf_sgemm(0, 1, N, VL, C, 1.0f, x, C, wte_part, C, 0.0f, logits, VL);
    for (int n = 0; n < N; n++) {
        float *row = logits + (long)n * VL;
        if (precision != WF_FP32)  /* stored in the plan's 16-bit type */
            for (int j = 0; j < valid; j++) row[j] = wf_hd_round(precision, row[j]);
        for (int j = valid; j < VL; j++) row[j] = -INFINITY;
        float m = -INFINITY;
        for (int j = 0; j < valid; j++) m = row[j] > m ? row[j] : m;
        rowmax[n] = m;
    }
}

/* Reads the logits only: stats[2n] = local sum of exp(logit - max),
 * stats[2n+1] = the target's logit - max if this rank holds it, else 0. */
void wf_vocab_exp(wf_ctx *c, const float *logits, double *stats, const float *rowmax,
                  const int32_t *targets, int N, int VL, int v_begin, int valid) {
    (void)c;
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const float *row = logits + (long)n * VL;
        int t = targets[n] - v_begin;
        stats[2 * n + 1] = (t >= 0 && t < valid) ? (double)row[t] - rowmax[n] : 0.0;
        double sum = 0.0;
        for (int j = 0; j < valid; j++) sum += xent_exp(row[j] - rowmax[n]);
        stats[2 * n] = sum;
    }
}

/* In place: logits -> dlogits with the global max and sum (padding logits are
 * -inf: their exponentials, so their dlogits, are 0); returns the sum of the
 * N token losses. */
double wf_vocab_dlogits(wf_ctx *c, float *dlogits, float *losses, const float *rowmax, const double *stats,
                        const int32_t *targets, float scale, int N, int VL, int v_begin,
                        int precision) {
    (void)c;
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        float *row = dlogits + (long)n * VL;
        if (targets[n] < 0) {  /* a position without loss */
            for (int j = 0; j < VL; j++) row[j] = 0.0f;
            losses[n] = 0.0f;
            continue;
        }
        for (int j = 0; j < VL; j++) row[j] = xent_exp(row[j] - rowmax[n]);
        wf_dlogits_row(row, (float)(1.0 / stats[2 * n]), targets[n] - v_begin, scale, VL,
                       precision);
        losses[n] = (float)(log(stats[2 * n]) - stats[2 * n + 1]);
    }
    double total = 0.0;
    for (int n = 0; n < N; n++) total += losses[n];
    return total;
}

void wf_vocab_xent_bwd(wf_ctx *c, float *dx, float *dwte_part, const float *dlogits,
                       const float *x, const float *wte_part, int N, int C, int VL) {
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        x = wf_stage16_in(&s, x, (long)N * C);
        dx = wf_stage16_acc(&s, dx, (long)N * C);
        wf_vocab_xent_bwd(c, dx, dwte_part, dlogits, x, wte_part, N, C, VL);
        wf_stage16_end(&s);
        return;
    }
    /* dx is partial over the vocabulary; the tp_copy before the head sums it.
     * Both products at once (blas.h) */
    wf_gemm gx = { 0, 0, N, C, VL, 1.0f, dlogits, VL, wte_part, C, 1.0f, dx, C };
    wf_gemm gw = { 1, 0, VL, C, N, 1.0f, dlogits, VL, x, C, 1.0f, dwte_part, C };
    wf_sgemm_pair(&gx, dwte_part ? &gw : NULL);
}

/* The vocabulary-parallel head fused and chunked (the CPU backend's, from
 * the backward; wf_lmhead_xent_chunked's form): per chunk of token rows the
 * local logits go into scratch (chunk x VL), the row maxima and the sums
 * are all-reduced for the chunk's rows, and dlogits feed dx (partial over
 * the vocabulary: the tp_copy before the head sums it) and dwte_part.
 * Every tp rank holds the same targets, so all skip the same idle chunks
 * and their collectives stay matched. */
double wf_vocab_xent_chunked(wf_ctx *c, float *dx, float *dwte_part, float *losses, float *scratch,
                             const float *x, const float *wte_part, const int32_t *targets,
                             float scale, int N, int C, int VL, int v_begin, int vocab, int chunk) {
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: stage the whole x and dx once, so the chunks
                                     * below index floats (stage16.h) */
        x = wf_stage16_in(&s, x, (long)N * C);
        dx = wf_stage16_acc(&s, dx, (long)N * C);
        double total = wf_vocab_xent_chunked(c, dx, dwte_part, losses, scratch, x, wte_part, targets, scale,
                                             N, C, VL, v_begin, vocab, chunk);
        wf_stage16_end(&s);
        return total;
    }
    wf_vocab_chunks k = wf_vocab_chunks_of(c, N, VL, v_begin, vocab, chunk);
    for (int r0 = 0; r0 < N; r0 += k.chunk) {
        int n = wf_vocab_chunk_rows(&k, N, r0);
        const float *xc = x + (long)r0 * C;
        if (wf_xent_rows_idle(targets + r0, n)) {
            for (int i = 0; i < n; i++) losses[r0 + i] = 0.0f;
            continue;
        }
        wf_vocab_chunk_stats(c, &k, scratch, xc, wte_part, targets + r0, n, C, VL, v_begin);
        wf_vocab_dlogits(c, scratch, losses + r0, k.rowmax, k.stats, targets + r0, scale, n, VL, v_begin,
                         k.precision);
        wf_vocab_xent_bwd(c, dx + (long)r0 * C, dwte_part, scratch, xc, wte_part, n, C, VL);
    }
    double total = 0.0;  /* in token order, as wf_vocab_dlogits' */
    for (int n = 0; n < N; n++) total += losses[n];
    return total;
}
