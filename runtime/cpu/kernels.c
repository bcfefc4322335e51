/* kernels.c: the fp32 CPU kernels declared in weft/rt.h.
 *
 * All tensors are row-major.  Activations are (N, width) with N = B * T.
 * Every backward kernel accumulates (+=) into its gradient outputs.  The
 * execution context is not needed on the CPU; it may be NULL.
 *
 * Matrix products go through wf_sgemm (blas.h) so they are timed and counted;
 * everything else is plain loops.
 */
#include "weft/rt.h"

#include "blas.h"
#include "dlogits_row.h"
#include "gelu_value.h"
#include "precision_bits.h"
#include "softmax_rows.h"

#include <math.h>

/* ---- embedding --------------------------------------------------------- */

void wf_embed_fwd(wf_ctx *c, float *out, const int32_t *tok, const float *wte,
                  const float *wpe, int B, int T, int C)
{
    (void)c;
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            float *o = out + ((long)b * T + t) * C;
            const float *e = wte + (long)tok[b * T + t] * C;
            const float *p = wpe + (long)t * C;
            for (int i = 0; i < C; i++)
                o[i] = e[i] + p[i];
        }
    }
}

void wf_embed_bwd(wf_ctx *c, float *dwte, float *dwpe, const float *dout,
                  const int32_t *tok, int B, int T, int C)
{
    (void)c;
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            const float *d = dout + ((long)b * T + t) * C;
            float *de = dwte + (long)tok[b * T + t] * C;
            float *dp = dwpe + (long)t * C;
            for (int i = 0; i < C; i++) {
                de[i] += d[i];
                dp[i] += d[i];
            }
        }
    }
}

/* ---- layernorm --------------------------------------------------------- */

#define LN_EPS 1e-5

void wf_layernorm_fwd(wf_ctx *c, float *out, float *mean, float *rstd,
                      const float *inp, const float *w, const float *b, int N, int C)
{
    (void)c;
    for (int n = 0; n < N; n++) {
        const float *x = inp + (long)n * C;
        float *y = out + (long)n * C;

        /* Two passes in double: the variance of nearly constant rows would
         * lose most of its digits to cancellation in a one-pass float sum. */
        double m = 0.0;
        for (int i = 0; i < C; i++)
            m += x[i];
        m /= C;
        double v = 0.0;
        for (int i = 0; i < C; i++)
            v += (x[i] - m) * (x[i] - m);
        v /= C; /* biased variance, as in PyTorch's LayerNorm */
        double s = 1.0 / sqrt(v + LN_EPS);

        for (int i = 0; i < C; i++)
            y[i] = (float)((x[i] - m) * s) * w[i] + b[i];
        mean[n] = (float)m;
        rstd[n] = (float)s;
    }
}

/* With xhat = (x - mean) * rstd and g = dout * w, the input gradient is
 *     dx = rstd * (g - mean(g) - xhat * mean(g * xhat)). */
/* The input and the weight halves (kernels_split.c), one after the other. */
void wf_layernorm_bwd(wf_ctx *c, float *dinp, float *dw, float *db,
                      const float *dout, const float *inp, const float *w,
                      const float *mean, const float *rstd, int N, int C)
{
    wf_layernorm_bwd_input(c, dinp, dout, inp, w, mean, rstd, N, C);
    wf_layernorm_bwd_weight(c, dw, db, dout, inp, mean, rstd, N, C);
}

/* ---- linear ------------------------------------------------------------ */

void wf_linear_fwd(wf_ctx *c, float *out, const float *inp, const float *w,
                   const float *b, int N, int K, int M)
{
    (void)c;
    wf_sgemm(0, 0, N, M, K, 1.0f, inp, K, w, M, 0.0f, out, M);
    if (!b)
        return;
    for (int n = 0; n < N; n++) {
        float *o = out + (long)n * M;
        for (int j = 0; j < M; j++)
            o[j] += b[j];
    }
}

/* dinp (N,K) += dout (N,M) @ w^T;  dw (K,M) += inp^T @ dout;  db += column sums */
void wf_linear_bwd(wf_ctx *c, float *dinp, float *dw, float *db, const float *dout,
                   const float *inp, const float *w, int N, int K, int M)
{
    wf_linear_bwd_input(c, dinp, dout, w, N, K, M);
    wf_linear_bwd_weight(c, dw, db, dout, inp, N, K, M);
}

/* ---- causal self-attention --------------------------------------------- */

/* Per (batch b, head h), with hs = C / H, the head's q, k and v are (T, hs)
 * blocks of the qkv buffer whose rows are 3C floats apart; the same holds for
 * their gradients in dqkv.  GEMMs read them in place via the leading dimension. */
static long qkv_head_offset(int b, int h, int T, int C, int H)
{
    return (long)b * T * 3 * C + (long)h * (C / H);
}

static long out_head_offset(int b, int h, int T, int C, int H)
{
    return (long)b * T * C + (long)h * (C / H);
}

/* In place: row t of the (T, T) scores becomes the softmax over keys 0..t;
 * the entries above the diagonal (future keys) become 0. */
void wf_causal_softmax_rows(float *p, int T)
{
    for (int t = 0; t < T; t++) {
        float *row = p + (long)t * T;
        float max = row[0];
        for (int j = 1; j <= t; j++)
            if (row[j] > max)
                max = row[j];
        double sum = 0.0;
        for (int j = 0; j <= t; j++) {
            row[j] = expf(row[j] - max);
            sum += row[j];
        }
        float inv = (float)(1.0 / sum);
        for (int j = 0; j <= t; j++)
            row[j] *= inv;
        for (int j = t + 1; j < T; j++)
            row[j] = 0.0f;
    }
}

void wf_attention_fwd(wf_ctx *c, float *out, float *att, const float *qkv,
                      int B, int T, int C, int H)
{
    (void)c;
    int hs = C / H, ld = 3 * C;
    float scale = 1.0f / sqrtf((float)hs);
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < H; h++) {
            const float *q = qkv + qkv_head_offset(b, h, T, C, H);
            const float *k = q + C;
            const float *v = q + 2 * C;
            float *p = att + ((long)b * H + h) * T * T;
            float *o = out + out_head_offset(b, h, T, C, H);

            /* The full T x T product is computed and its upper triangle then
             * discarded: simpler than a triangular product, and cheap here. */
            wf_sgemm(0, 1, T, T, hs, scale, q, ld, k, ld, 0.0f, p, T);
            wf_causal_softmax_rows(p, T);
            wf_sgemm(0, 0, T, hs, T, 1.0f, p, T, v, ld, 0.0f, o, C);
        }
    }
}

/* In place: dP becomes dS = P * (dP - rowsum(P * dP)), the gradient through
 * the softmax with respect to the (scaled) scores.  Where P is 0 (above the
 * diagonal) dS is 0, so the masked scores get no gradient. */
void wf_softmax_bwd_rows(float *dp, const float *p, int T)
{
    for (int t = 0; t < T; t++) {
        float *drow = dp + (long)t * T;
        const float *prow = p + (long)t * T;
        float dot = 0.0f;
        for (int j = 0; j <= t; j++)
            dot += prow[j] * drow[j];
        for (int j = 0; j <= t; j++)
            drow[j] = prow[j] * (drow[j] - dot);
        for (int j = t + 1; j < T; j++)
            drow[j] = 0.0f;
    }
}

/* out is unused: D = rowsum(P * dP) comes from the saved probabilities */
void wf_attention_bwd(wf_ctx *c, float *dqkv, float *scratch, const float *dout,
                      const float *qkv, const float *out, const float *att, int B, int T, int C,
                      int H)
{
    (void)c;
    (void)out;
    int hs = C / H, ld = 3 * C;
    float scale = 1.0f / sqrtf((float)hs);
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < H; h++) {
            long qo = qkv_head_offset(b, h, T, C, H);
            const float *q = qkv + qo, *k = q + C, *v = q + 2 * C;
            float *dq = dqkv + qo, *dk = dq + C, *dv = dq + 2 * C;
            const float *p = att + ((long)b * H + h) * T * T;
            const float *dout_h = dout + out_head_offset(b, h, T, C, H);
            float *ds = scratch; /* (T, T): first dP, then dS */

            /* out = P v:  dv += P^T dout,  dP = dout v^T */
            wf_sgemm(1, 0, T, hs, T, 1.0f, p, T, dout_h, C, 1.0f, dv, ld);
            wf_sgemm(0, 1, T, T, hs, 1.0f, dout_h, C, v, ld, 0.0f, ds, T);
            wf_softmax_bwd_rows(ds, p, T);
            /* S = scale q k^T:  dq += scale dS k,  dk += scale dS^T q */
            wf_sgemm(0, 0, T, hs, T, scale, ds, T, k, ld, 1.0f, dq, ld);
            wf_sgemm(1, 0, T, hs, T, scale, ds, T, q, ld, 1.0f, dk, ld);
        }
    }
}

/* ---- GELU -------------------------------------------------------------- */

/* the formula is gelu_value.h's, shared with the fused linear + GELU */

void wf_gelu_fwd(wf_ctx *c, float *out, const float *inp, long n)
{
    (void)c;
#pragma omp parallel for schedule(static) if (n > 65536)
    for (long i = 0; i < n; i++) {
        out[i] = wf_gelu_value(inp[i]);
    }
}

void wf_gelu_bwd(wf_ctx *c, float *dinp, const float *inp, const float *dout, long n)
{
    (void)c;
#pragma omp parallel for schedule(static) if (n > 65536)
    for (long i = 0; i < n; i++) {
        dinp[i] += wf_gelu_grad(inp[i]) * dout[i];
    }
}

/* ---- residual add ------------------------------------------------------ */

void wf_add_fwd(wf_ctx *c, float *out, const float *a, const float *b, long n)
{
    (void)c;
    for (long i = 0; i < n; i++)
        out[i] = a[i] + b[i];
}

void wf_add_bwd(wf_ctx *c, float *da, float *db, const float *dout, long n)
{
    (void)c;
    for (long i = 0; i < n; i++) {
        da[i] += dout[i];
        db[i] += dout[i];
    }
}

/* ---- tied LM head and cross-entropy ------------------------------------ */

/* In place: the logits row becomes dlogits = (softmax - onehot(target)) *
 * scale, the loss gradient, so that backward needs no pass of its own over
 * the row.  Returns -log p[target], computed from the log-sum-exp in double
 * rather than as -log of the rounded float probability, which may underflow.
 * Under a bf16 / fp16 plan the logits are first rounded to the 16-bit type
 * (they are stored in it, as Megatron-LM and llm.c keep them), the softmax
 * arithmetic stays fp32 / double, and dlogits are rounded again
 * (wf_dlogits_row). */
static double softmax_xent_row(float *row, int target, float scale, int V, int precision)
{
    if (precision != WF_FP32)
        for (int j = 0; j < V; j++)
            row[j] = wf_hd_round(precision, row[j]);
    float max = row[0];
#pragma omp simd reduction(max : max)
    for (int j = 1; j < V; j++)
        max = row[j] > max ? row[j] : max;
    double target_logit = (double)row[target] - max;
    /* one exp per element, in float; the sum is kept in double */
    double sum = 0.0;
#pragma omp simd reduction(+ : sum)
    for (int j = 0; j < V; j++) {
        float e = expf(row[j] - max);
        row[j] = e;
        sum += e;
    }
    wf_dlogits_row(row, (float)(1.0 / sum), target, scale, V, precision);
    return log(sum) - target_logit;
}

/* Each product rounded to float in this order: the probability first, then
 * the gradient, the numbers separate softmax and gradient passes would give;
 * then, under a 16-bit plan, the gradient to the 16-bit type.  fp16: the
 * gradients of tiny probabilities (scale is the loss scale over the token
 * count) may become fp16 subnormals or 0, as they do in Megatron-LM. */
void wf_dlogits_row(float *row, float inv, int target, float scale, int V, int precision)
{
    float et = target >= 0 && target < V ? row[target] : 0.0f;
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

/* dx += dlogits @ wte; dwte += dlogits^T @ x (the B and W halves in
 * kernels_split.c); the forward wrote dlogits. */
void wf_lmhead_xent_bwd(wf_ctx *c, float *dx, float *dwte, const float *dlogits,
                        const float *x, const float *wte, int N, int C, int V)
{
    wf_lmhead_xent_bwd_input(c, dx, dlogits, wte, N, C, V);
    wf_lmhead_xent_bwd_weight(c, dwte, dlogits, x, N, C, V);
}
