/* attention.cu: causal self-attention with the CPU backend's API: the
 * (B, H, T, T) softmax probabilities are kept in `att` for backward, and
 * backward works one head at a time in a (T, T) scratch.  A flash-style
 * kernel that never materializes T x T needs an API change (no att, saved
 * log-sum-exp instead) and is left for later.
 *
 * qkv rows are 3C wide: head h of q is columns [h*hs, (h+1)*hs), k and v are
 * C and 2C further; cuBLAS reads them in place through the leading dimension,
 * batched over the heads of a sequence (head stride hs, att stride T*T). */
#include "cuda_rt.h"
#include "reduce.cuh"

/* Row r of the (rows, T) scores, at position t = r % T: softmax over keys
 * 0..t; the future keys become 0.  Exponentials in float, the sum in double,
 * as the CPU kernel. */
__global__ static void causal_softmax_kernel(float *p, int T) {
    long r = blockIdx.x;
    int t = (int)(r % T);
    float *row = p + r * T;
    float m = -INFINITY;
    for (int j = threadIdx.x; j <= t; j += blockDim.x) m = fmaxf(m, row[j]);
    m = wf_block_max(m);
    double s = 0.0;
    for (int j = threadIdx.x; j <= t; j += blockDim.x) {
        float e = expf(row[j] - m);
        row[j] = e;
        s += e;
    }
    float inv = (float)(1.0 / wf_block_sum(s));
    for (int j = threadIdx.x; j < T; j += blockDim.x) row[j] = j <= t ? row[j] * inv : 0.0f;
}

/* In place: dP becomes dS = P * (dP - rowsum(P * dP)); 0 above the diagonal. */
__global__ static void softmax_bwd_kernel(float *dp, const float *p, int T) {
    long r = blockIdx.x;
    int t = (int)(r % T);
    float *drow = dp + r * T;
    const float *prow = p + r * T;
    double dot = 0.0;
    for (int j = threadIdx.x; j <= t; j += blockDim.x) dot += prow[j] * drow[j];
    float d = (float)wf_block_sum(dot);
    for (int j = threadIdx.x; j < T; j += blockDim.x)
        drow[j] = j <= t ? prow[j] * (drow[j] - d) : 0.0f;
}

extern "C" void wf_attention_fwd(wf_ctx *c, float *out, float *att, const float *qkv, int B, int T,
                                 int C, int H) {
    int hs = C / H, ld = 3 * C;
    float scale = 1.0f / sqrtf((float)hs);
    for (int b = 0; b < B; b++) {
        const float *q = qkv + (long)b * T * ld, *k = q + C, *v = q + 2 * C;
        float *p = att + (long)b * H * T * T;
        float *o = out + (long)b * T * C;
        /* S = scale q k^T for every head (the upper triangle is discarded) */
        wf_cuda_sgemm(c, 0, 1, T, T, hs, scale, q, ld, hs, k, ld, hs, 0.0f, p, T, (long)T * T, H);
        WF_LAUNCH(causal_softmax_kernel, H * T, WF_THREADS, 0, wf_cuda_stream(c))(p, T);
        /* out = P v */
        wf_cuda_sgemm(c, 0, 0, T, hs, T, 1.0f, p, T, (long)T * T, v, ld, hs, 0.0f, o, C, hs, H);
    }
    wf_cuda_sync(c, "wf_attention_fwd");
}

extern "C" void wf_attention_bwd(wf_ctx *c, float *dqkv, float *scratch, const float *dout,
                                 const float *qkv, const float *att, int B, int T, int C, int H) {
    int hs = C / H, ld = 3 * C;
    float scale = 1.0f / sqrtf((float)hs);
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < H; h++) {
            long qo = (long)b * T * ld + (long)h * hs;
            const float *q = qkv + qo, *k = q + C, *v = q + 2 * C;
            float *dq = dqkv + qo, *dk = dq + C, *dv = dq + 2 * C;
            const float *p = att + ((long)b * H + h) * T * T;
            const float *dout_h = dout + (long)b * T * C + (long)h * hs;
            float *ds = scratch; /* (T, T): dP, then dS; the stream orders the heads */
            /* out = P v:  dv += P^T dout,  dP = dout v^T */
            wf_cuda_sgemm(c, 1, 0, T, hs, T, 1.0f, p, T, 0, dout_h, C, 0, 1.0f, dv, ld, 0, 1);
            wf_cuda_sgemm(c, 0, 1, T, T, hs, 1.0f, dout_h, C, 0, v, ld, 0, 0.0f, ds, T, 0, 1);
            WF_LAUNCH(softmax_bwd_kernel, T, WF_THREADS, 0, wf_cuda_stream(c))(ds, p, T);
            /* S = scale q k^T:  dq += scale dS k,  dk += scale dS^T q */
            wf_cuda_sgemm(c, 0, 0, T, hs, T, scale, ds, T, 0, k, ld, 0, 1.0f, dq, ld, 0, 1);
            wf_cuda_sgemm(c, 1, 0, T, hs, T, scale, ds, T, 0, q, ld, 0, 1.0f, dk, ld, 0, 1);
        }
    }
    wf_cuda_sync(c, "wf_attention_bwd");
}
