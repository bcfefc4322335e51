/* attention.c: causal self-attention on the CPU (weft/rt.h), as
 * runtime/cuda/attention.cu has it: GPT-2's multi-head attention and LLaMA's
 * grouped-query attention, both keeping the (B, H, T, T) softmax
 * probabilities for backward, and the softmax rows they share
 * (softmax_rows.h).
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
#include "softmax_rows.h"

/* ---- causal self-attention ------------------------------------------------- */

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

/* ---- grouped-query causal attention ---------------------------------------- */

void wf_gqa_attention_fwd(wf_ctx *c, float *out, float *att, const float *qk, const float *v,
                          int B, int T, int H, int KVH, int hd)
{
    (void)c;
    int ld_qk = (H + KVH) * hd, ld_v = KVH * hd, ld_o = H * hd, group = H / KVH;
    float scale = 1.0f / sqrtf((float)hd);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            int kv = h / group;
            const float *q = qk + (long)b * T * ld_qk + (long)h * hd;
            const float *k = qk + (long)b * T * ld_qk + (long)(H + kv) * hd;
            const float *vv = v + (long)b * T * ld_v + (long)kv * hd;
            float *p = att + ((long)b * H + h) * T * T;
            wf_sgemm(0, 1, T, T, hd, scale, q, ld_qk, k, ld_qk, 0.0f, p, T);
            wf_causal_softmax_rows(p, T);
            wf_sgemm(0, 0, T, hd, T, 1.0f, p, T, vv, ld_v, 0.0f, out + (long)b * T * ld_o + (long)h * hd,
                     ld_o);
        }
}

/* Each query head adds its share into the gradient of the key and value head
 * its group reads: the sum over the group falls out of the accumulation. */
void wf_gqa_attention_bwd(wf_ctx *c, float *dqk, float *dv, float *scratch, const float *dout,
                          const float *qk, const float *v, const float *out, const float *att, int B,
                          int T, int H, int KVH, int hd)
{
    (void)c;
    (void)out; /* D comes from the saved probabilities, as wf_attention_bwd's */
    int ld_qk = (H + KVH) * hd, ld_v = KVH * hd, ld_o = H * hd, group = H / KVH;
    float scale = 1.0f / sqrtf((float)hd);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            int kv = h / group;
            long qo = (long)b * T * ld_qk + (long)h * hd, ko = (long)b * T * ld_qk + (long)(H + kv) * hd;
            long vo = (long)b * T * ld_v + (long)kv * hd;
            const float *p = att + ((long)b * H + h) * T * T;
            const float *dy = dout + (long)b * T * ld_o + (long)h * hd;
            float *ds = scratch;
            wf_sgemm(1, 0, T, hd, T, 1.0f, p, T, dy, ld_o, 1.0f, dv + vo, ld_v);
            wf_sgemm(0, 1, T, T, hd, 1.0f, dy, ld_o, v + vo, ld_v, 0.0f, ds, T);
            wf_softmax_bwd_rows(ds, p, T);  /* dS = P * (dP - rowsum(P * dP)) */
            wf_sgemm(0, 0, T, hd, T, scale, ds, T, qk + ko, ld_qk, 1.0f, dqk + qo, ld_qk);
            wf_sgemm(1, 0, T, hd, T, scale, ds, T, qk + qo, ld_qk, 1.0f, dqk + ko, ld_qk);
        }
}
