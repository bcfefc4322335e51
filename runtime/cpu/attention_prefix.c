/* attention_prefix.c: self-attention whose first `prefix` positions see each
 * other both ways (weft/rt.h): a vision encoder's bidirectional attention
 * (prefix = T), or a prefix-LM mask.  Key j is visible to query t iff
 * j <= max(t, prefix - 1); prefix = 0 is causal attention.  The same
 * algorithm as attention.c's wf_attention_fwd / _bwd (fused (q,k,v) rows,
 * the (B, H, T, T) probabilities kept for backward), with that mask. */
#include "weft/rt.h"

#include <math.h>

#include "blas.h"

static int last_key(int t, int prefix) { return t < prefix ? prefix - 1 : t; }

static void prefix_softmax_rows(float *p, int T, int prefix)
{
    for (int t = 0; t < T; t++) {
        float *row = p + (long)t * T;
        int last = last_key(t, prefix);
        float max = row[0];
        for (int j = 1; j <= last; j++)
            if (row[j] > max) max = row[j];
        double sum = 0.0;
        for (int j = 0; j <= last; j++) {
            row[j] = expf(row[j] - max);
            sum += row[j];
        }
        float inv = (float)(1.0 / sum);
        for (int j = 0; j <= last; j++) row[j] *= inv;
        for (int j = last + 1; j < T; j++) row[j] = 0.0f;
    }
}

/* dP -> dS = P * (dP - rowsum(P * dP)) over the visible keys, 0 elsewhere */
static void prefix_softmax_bwd_rows(float *dp, const float *p, int T, int prefix)
{
    for (int t = 0; t < T; t++) {
        float *drow = dp + (long)t * T;
        const float *prow = p + (long)t * T;
        int last = last_key(t, prefix);
        float dot = 0.0f;
        for (int j = 0; j <= last; j++) dot += prow[j] * drow[j];
        for (int j = 0; j <= last; j++) drow[j] = prow[j] * (drow[j] - dot);
        for (int j = last + 1; j < T; j++) drow[j] = 0.0f;
    }
}

void wf_attention_prefix_fwd(wf_ctx *c, float *out, float *att, const float *qkv, int B, int T, int C,
                             int H, int prefix)
{
    (void)c;
    int hs = C / H, ld = 3 * C;
    float scale = 1.0f / sqrtf((float)hs);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            const float *q = qkv + (long)b * T * ld + (long)h * hs, *k = q + C, *v = q + 2 * C;
            float *p = att + ((long)b * H + h) * T * T;
            wf_sgemm(0, 1, T, T, hs, scale, q, ld, k, ld, 0.0f, p, T);
            prefix_softmax_rows(p, T, prefix);
            wf_sgemm(0, 0, T, hs, T, 1.0f, p, T, v, ld, 0.0f, out + (long)b * T * C + (long)h * hs, C);
        }
}

void wf_attention_prefix_bwd(wf_ctx *c, float *dqkv, float *scratch, const float *dout, const float *qkv,
                             const float *out, const float *att, int B, int T, int C, int H, int prefix)
{
    (void)c;
    (void)out;
    int hs = C / H, ld = 3 * C;
    float scale = 1.0f / sqrtf((float)hs);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            long qo = (long)b * T * ld + (long)h * hs;
            const float *q = qkv + qo, *k = q + C, *v = q + 2 * C;
            float *dq = dqkv + qo, *dk = dq + C, *dv = dq + 2 * C;
            const float *p = att + ((long)b * H + h) * T * T;
            const float *dy = dout + (long)b * T * C + (long)h * hs;
            float *ds = scratch;
            wf_sgemm(1, 0, T, hs, T, 1.0f, p, T, dy, C, 1.0f, dv, ld);
            wf_sgemm(0, 1, T, T, hs, 1.0f, dy, C, v, ld, 0.0f, ds, T);
            prefix_softmax_bwd_rows(ds, p, T, prefix);
            wf_sgemm(0, 0, T, hs, T, scale, ds, T, k, ld, 1.0f, dq, ld);
            wf_sgemm(1, 0, T, hs, T, scale, ds, T, q, ld, 1.0f, dk, ld);
        }
}
