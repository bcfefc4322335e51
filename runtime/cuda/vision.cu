/* vision.cu: a VLM's vision kernels on the GPU, as runtime/cpu/vision.c and
 * attention.c have them (weft/rt.h): the patch embedding of uint8
 * images, the image / text hand-off (all rows, or under sequence parallelism
 * a tp rank's own), and self-attention whose first `prefix`
 * positions see each other both ways.  fp32 activations only (the plan's ops
 * run on the CPU backend so far: no 16-bit storage here).  Backward kernels
 * accumulate, each sum in a fixed order by one thread: no atomics.
 *
 * Attention keeps, as attention.cu does, a log-sum-exp per query row in att
 * (B, H, T) and rowsum(dout * out) per row in scratch (B, H, T) for backward:
 * one thread per query row forward and for dq, one per key row for dk and
 * dv, each recomputing its probabilities from q, k and the log-sum-exp. */
#include <math.h>

#include "cuda_rt.h"
#include "reduce.cuh"

#define GRID_STRIDE(i, n) \
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < (n); i += (long)gridDim.x * blockDim.x)

/* SigLIP's normalisation, (v / 255 - 0.5) / 0.5 */
__device__ static float pixel_at(const uint8_t *img, int IH, int IW, int CH, int p, int t, int k) {
    (void)IH;
    int gw = IW / p, ch = k / (p * p), ky = (k / p) % p, kx = k % p;
    int y = (t / gw) * p + ky, x = (t % gw) * p + kx;
    return (float)img[((long)y * IW + x) * CH + ch] * (1.0f / 127.5f) - 1.0f;
}

/* one thread per output value (b, t, d): the patch's dot product with w[d] + pos[t, d] */
__global__ static void patch_embed_fwd_kernel(float *out, const uint8_t *image, const float *w, const float *pos,
                                              int B, int T, int IH, int IW, int CH, int p, int D) {
    int P = (IH / p) * (IW / p), K = CH * p * p;
    GRID_STRIDE(i, (long)B * T * D) {
        int d = (int)(i % D), t = (int)((i / D) % T);
        long b = i / ((long)D * T);
        if (t >= P) { out[i] = 0.0f; continue; }
        const uint8_t *img = image + b * IH * IW * CH;
        float acc = 0.0f;
        for (int k = 0; k < K; k++) acc += pixel_at(img, IH, IW, CH, p, t, k) * w[(long)d * K + k];
        out[i] = acc + pos[(long)t * D + d];
    }
}

/* dw[d, k] += sum over samples and patches in order; dpos[t, d] += sum over samples */
__global__ static void patch_embed_dw_kernel(float *dw, const float *dout, const uint8_t *image, int B, int T,
                                             int IH, int IW, int CH, int p, int D) {
    int P = (IH / p) * (IW / p), K = CH * p * p;
    GRID_STRIDE(i, (long)D * K) {
        int d = (int)(i / K), k = (int)(i % K);
        float acc = 0.0f;
        for (int b = 0; b < B; b++)
            for (int t = 0; t < P; t++)
                acc += dout[((long)b * T + t) * D + d] * pixel_at(image + (long)b * IH * IW * CH, IH, IW, CH, p, t, k);
        dw[i] += acc;
    }
}

__global__ static void patch_embed_dpos_kernel(float *dpos, const float *dout, int B, int T, int P, int D) {
    GRID_STRIDE(i, (long)P * D) {
        int t = (int)(i / D), d = (int)(i % D);
        float acc = 0.0f;
        for (int b = 0; b < B; b++) acc += dout[((long)b * T + t) * D + d];
        dpos[i] += acc;
    }
}

extern "C" long wf_patch_embed_scratch(int IH, int IW, int CH, int p) {
    return (long)(IH / p) * (IW / p) * CH * p * p;
}

extern "C" void wf_patch_embed_fwd(wf_ctx *c, float *out, float *scratch, const uint8_t *image, const float *w,
                                   const float *pos, int B, int T, int IH, int IW, int CH, int p, int D) {
    (void)scratch;
    WF_LAUNCH(patch_embed_fwd_kernel, wf_blocks((long)B * T * D), WF_THREADS, 0, wf_cuda_stream(c))(
        out, image, w, pos, B, T, IH, IW, CH, p, D);
    wf_cuda_sync(c, "wf_patch_embed_fwd");
}

extern "C" void wf_patch_embed_bwd(wf_ctx *c, float *dw, float *dpos, float *scratch, const float *dout,
                                   const uint8_t *image, int B, int T, int IH, int IW, int CH, int p, int D) {
    (void)scratch;
    int P = (IH / p) * (IW / p), K = CH * p * p;
    WF_LAUNCH(patch_embed_dw_kernel, wf_blocks((long)D * K), WF_THREADS, 0, wf_cuda_stream(c))(
        dw, dout, image, B, T, IH, IW, CH, p, D);
    WF_LAUNCH(patch_embed_dpos_kernel, wf_blocks((long)P * D), WF_THREADS, 0, wf_cuda_stream(c))(
        dpos, dout, B, T, P, D);
    wf_cuda_sync(c, "wf_patch_embed_bwd");
}

/* ---- the hand-off ---- */
__global__ static void image_merge_fwd_kernel(float *out, const float *text, const float *image, int T, int P, int C,
                                              long n) {
    GRID_STRIDE(i, n) {
        int t = (int)((i / C) % T);
        out[i] = t < P ? image[i] : text[i];
    }
}

__global__ static void image_merge_bwd_kernel(float *dtext, float *dimage, const float *dout, int T, int P, int C,
                                              long n) {
    GRID_STRIDE(i, n) {
        int t = (int)((i / C) % T);
        if (t < P) dimage[i] += dout[i];
        else dtext[i] += dout[i];
    }
}

extern "C" void wf_image_merge_fwd(wf_ctx *c, float *out, const float *text, const float *image, int B, int T, int P,
                                   int C) {
    long n = (long)B * T * C;
    WF_LAUNCH(image_merge_fwd_kernel, wf_blocks(n), WF_THREADS, 0, wf_cuda_stream(c))(out, text, image, T, P, C, n);
    wf_cuda_sync(c, "wf_image_merge_fwd");
}

extern "C" void wf_image_merge_bwd(wf_ctx *c, float *dtext, float *dimage, const float *dout, int B, int T, int P,
                                   int C) {
    long n = (long)B * T * C;
    WF_LAUNCH(image_merge_bwd_kernel, wf_blocks(n), WF_THREADS, 0, wf_cuda_stream(c))(dtext, dimage, dout, T, P, C,
                                                                                       n);
    wf_cuda_sync(c, "wf_image_merge_bwd");
}

/* ---- sequence parallelism: this tp rank's rows [row0, row0 + rows) of the
 * microbatch's B*T (runtime/cpu/vision.c's *_rows_*), which may start and end
 * inside a sample; local row n is global row row0 + n, position (row0 + n) % T */
__global__ static void patch_embed_rows_fwd_kernel(float *out, const uint8_t *image, const float *w, const float *pos,
                                                   long row0, long rows, int T, int IH, int IW, int CH, int p, int D) {
    int P = (IH / p) * (IW / p), K = CH * p * p;
    GRID_STRIDE(i, rows * D) {
        int d = (int)(i % D);
        long g = row0 + i / D, b = g / T;
        int t = (int)(g % T);
        if (t >= P) { out[i] = 0.0f; continue; }
        const uint8_t *img = image + b * IH * IW * CH;
        float acc = 0.0f;
        for (int k = 0; k < K; k++) acc += pixel_at(img, IH, IW, CH, p, t, k) * w[(long)d * K + k];
        out[i] = acc + pos[(long)t * D + d];
    }
}

/* dw[d, k] += this rank's image rows, in order */
__global__ static void patch_embed_rows_dw_kernel(float *dw, const float *dout, const uint8_t *image, long row0,
                                                  long rows, int T, int IH, int IW, int CH, int p, int D) {
    int P = (IH / p) * (IW / p), K = CH * p * p;
    GRID_STRIDE(i, (long)D * K) {
        int d = (int)(i / K), k = (int)(i % K);
        float acc = 0.0f;
        for (long n = 0; n < rows; n++) {
            long g = row0 + n;
            int t = (int)(g % T);
            if (t < P) acc += dout[n * D + d] * pixel_at(image + (g / T) * IH * IW * CH, IH, IW, CH, p, t, k);
        }
        dw[i] += acc;
    }
}

/* dpos[t, d] += the rows at position t among this rank's, sample by sample */
__global__ static void patch_embed_rows_dpos_kernel(float *dpos, const float *dout, long row0, long rows, int T,
                                                    int P, int D) {
    GRID_STRIDE(i, (long)P * D) {
        int t = (int)(i / D), d = (int)(i % D);
        float acc = 0.0f;
        for (long b = row0 / T; b * T < row0 + rows; b++) {
            long g = b * T + t;
            if (g >= row0 && g < row0 + rows) acc += dout[(g - row0) * D + d];
        }
        dpos[i] += acc;
    }
}

extern "C" void wf_patch_embed_rows_fwd(wf_ctx *c, float *out, float *scratch, const uint8_t *image, const float *w,
                                        const float *pos, long row0, long rows, int T, int IH, int IW, int CH, int p,
                                        int D) {
    (void)scratch;
    WF_LAUNCH(patch_embed_rows_fwd_kernel, wf_blocks(rows * D), WF_THREADS, 0, wf_cuda_stream(c))(
        out, image, w, pos, row0, rows, T, IH, IW, CH, p, D);
    wf_cuda_sync(c, "wf_patch_embed_rows_fwd");
}

extern "C" void wf_patch_embed_rows_bwd(wf_ctx *c, float *dw, float *dpos, float *scratch, const float *dout,
                                        const uint8_t *image, long row0, long rows, int T, int IH, int IW, int CH,
                                        int p, int D) {
    (void)scratch;
    int P = (IH / p) * (IW / p), K = CH * p * p;
    WF_LAUNCH(patch_embed_rows_dw_kernel, wf_blocks((long)D * K), WF_THREADS, 0, wf_cuda_stream(c))(
        dw, dout, image, row0, rows, T, IH, IW, CH, p, D);
    WF_LAUNCH(patch_embed_rows_dpos_kernel, wf_blocks((long)P * D), WF_THREADS, 0, wf_cuda_stream(c))(
        dpos, dout, row0, rows, T, P, D);
    wf_cuda_sync(c, "wf_patch_embed_rows_bwd");
}

__global__ static void image_merge_rows_fwd_kernel(float *out, const float *text, const float *image, long row0,
                                                   int T, int P, int C, long n) {
    GRID_STRIDE(i, n) out[i] = (row0 + i / C) % T < P ? image[i] : text[i];
}

__global__ static void image_merge_rows_bwd_kernel(float *dtext, float *dimage, const float *dout, long row0, int T,
                                                   int P, int C, long n) {
    GRID_STRIDE(i, n) {
        if ((row0 + i / C) % T < P) dimage[i] += dout[i];
        else dtext[i] += dout[i];
    }
}

extern "C" void wf_image_merge_rows_fwd(wf_ctx *c, float *out, const float *text, const float *image, long row0,
                                        long rows, int T, int P, int C) {
    long n = rows * C;
    WF_LAUNCH(image_merge_rows_fwd_kernel, wf_blocks(n), WF_THREADS, 0, wf_cuda_stream(c))(out, text, image, row0, T,
                                                                                           P, C, n);
    wf_cuda_sync(c, "wf_image_merge_rows_fwd");
}

extern "C" void wf_image_merge_rows_bwd(wf_ctx *c, float *dtext, float *dimage, const float *dout, long row0,
                                        long rows, int T, int P, int C) {
    long n = rows * C;
    WF_LAUNCH(image_merge_rows_bwd_kernel, wf_blocks(n), WF_THREADS, 0, wf_cuda_stream(c))(dtext, dimage, dout, row0,
                                                                                           T, P, C, n);
    wf_cuda_sync(c, "wf_image_merge_rows_bwd");
}

/* ---- attention with a bidirectional prefix ---- */
__device__ static int last_key(int t, int prefix) { return t < prefix ? prefix - 1 : t; }

/* one thread per query row (b, h, t): an online softmax over its visible keys */
__global__ static void prefix_fwd_kernel(float *out, float *lse, const float *qkv, int B, int T, int C, int H,
                                         int prefix) {
    int hs = C / H, ld = 3 * C;
    float scale = 1.0f / sqrtf((float)hs);
    GRID_STRIDE(r, (long)B * H * T) {
        int t = (int)(r % T), h = (int)((r / T) % H);
        long b = r / ((long)T * H);
        const float *q = qkv + (b * T + t) * ld + (long)h * hs;
        float *o = out + (b * T + t) * C + (long)h * hs;
        float max = -INFINITY, sum = 0.0f;
        for (int d = 0; d < hs; d++) o[d] = 0.0f;
        for (int j = 0; j <= last_key(t, prefix); j++) {
            const float *k = qkv + (b * T + j) * ld + C + (long)h * hs, *v = k + C;
            float s = 0.0f;
            for (int d = 0; d < hs; d++) s += q[d] * k[d];
            s *= scale;
            float m = s > max ? s : max, rescale = expf(max - m), e = expf(s - m);
            sum = sum * rescale + e;
            for (int d = 0; d < hs; d++) o[d] = o[d] * rescale + e * v[d];
            max = m;
        }
        for (int d = 0; d < hs; d++) o[d] /= sum;
        lse[r] = max + logf(sum);
    }
}

/* D[r] = rowsum(dout * out) of query row r */
__global__ static void prefix_rowsum_kernel(float *D, const float *dout, const float *out, int B, int T, int C, int H) {
    int hs = C / H;
    GRID_STRIDE(r, (long)B * H * T) {
        int t = (int)(r % T), h = (int)((r / T) % H);
        long b = r / ((long)T * H), at = (b * T + t) * C + (long)h * hs;
        float s = 0.0f;
        for (int d = 0; d < hs; d++) s += dout[at + d] * out[at + d];
        D[r] = s;
    }
}

/* dS of query t, key j: P (dP - D), P from the scores and the log-sum-exp */
__device__ static float prefix_ds(const float *qkv, const float *dout, const float *lse, const float *D, long b, int h,
                                  int t, int j, int T, int C, int H, float scale, float *p_out) {
    int hs = C / H, ld = 3 * C;
    const float *q = qkv + (b * T + t) * ld + (long)h * hs, *k = qkv + (b * T + j) * ld + C + (long)h * hs;
    const float *v = k + C, *dy = dout + (b * T + t) * C + (long)h * hs;
    long r = (b * H + h) * T + t;
    float s = 0.0f, dp = 0.0f;
    for (int d = 0; d < hs; d++) s += q[d] * k[d], dp += dy[d] * v[d];
    float p = expf(s * scale - lse[r]);
    *p_out = p;
    return p * (dp - D[r]);
}

__global__ static void prefix_dq_kernel(float *dqkv, const float *qkv, const float *dout, const float *lse,
                                        const float *D, int B, int T, int C, int H, int prefix) {
    int hs = C / H, ld = 3 * C;
    float scale = 1.0f / sqrtf((float)hs);
    GRID_STRIDE(r, (long)B * H * T) {
        int t = (int)(r % T), h = (int)((r / T) % H);
        long b = r / ((long)T * H);
        float *dq = dqkv + (b * T + t) * ld + (long)h * hs;
        for (int j = 0; j <= last_key(t, prefix); j++) {
            float p, ds = prefix_ds(qkv, dout, lse, D, b, h, t, j, T, C, H, scale, &p);
            const float *k = qkv + (b * T + j) * ld + C + (long)h * hs;
            for (int d = 0; d < hs; d++) dq[d] += scale * ds * k[d];
        }
    }
}

/* one thread per key row (b, h, j): the queries that see it, in order */
__global__ static void prefix_dkv_kernel(float *dqkv, const float *qkv, const float *dout, const float *lse,
                                         const float *D, int B, int T, int C, int H, int prefix) {
    int hs = C / H, ld = 3 * C;
    float scale = 1.0f / sqrtf((float)hs);
    GRID_STRIDE(r, (long)B * H * T) {
        int j = (int)(r % T), h = (int)((r / T) % H);
        long b = r / ((long)T * H);
        float *dk = dqkv + (b * T + j) * ld + C + (long)h * hs, *dv = dk + C;
        for (int t = 0; t < T; t++) {
            if (j > last_key(t, prefix)) continue;
            float p, ds = prefix_ds(qkv, dout, lse, D, b, h, t, j, T, C, H, scale, &p);
            const float *q = qkv + (b * T + t) * ld + (long)h * hs, *dy = dout + (b * T + t) * C + (long)h * hs;
            for (int d = 0; d < hs; d++) {
                dk[d] += scale * ds * q[d];
                dv[d] += p * dy[d];
            }
        }
    }
}

extern "C" void wf_attention_prefix_fwd(wf_ctx *c, float *out, float *att, const float *qkv, int B, int T, int C,
                                        int H, int prefix) {
    WF_LAUNCH(prefix_fwd_kernel, wf_blocks((long)B * H * T), WF_THREADS, 0, wf_cuda_stream(c))(out, att, qkv, B, T, C,
                                                                                               H, prefix);
    wf_cuda_sync(c, "wf_attention_prefix_fwd");
}

extern "C" void wf_attention_prefix_bwd(wf_ctx *c, float *dqkv, float *scratch, const float *dout, const float *qkv,
                                        const float *out, const float *att, int B, int T, int C, int H, int prefix) {
    long rows = (long)B * H * T;
    WF_LAUNCH(prefix_rowsum_kernel, wf_blocks(rows), WF_THREADS, 0, wf_cuda_stream(c))(scratch, dout, out, B, T, C, H);
    WF_LAUNCH(prefix_dq_kernel, wf_blocks(rows), WF_THREADS, 0, wf_cuda_stream(c))(dqkv, qkv, dout, att, scratch, B, T,
                                                                                   C, H, prefix);
    WF_LAUNCH(prefix_dkv_kernel, wf_blocks(rows), WF_THREADS, 0, wf_cuda_stream(c))(dqkv, qkv, dout, att, scratch, B,
                                                                                    T, C, H, prefix);
    wf_cuda_sync(c, "wf_attention_prefix_bwd");
}
