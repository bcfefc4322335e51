/* vision.cu: a VLM's vision kernels on the GPU, as runtime/cpu/vision.c and
 * attention.c have them (weft/rt.h): the patch embedding of uint8
 * images, the image / text hand-off (all rows, or under sequence parallelism
 * a tp rank's own), and self-attention whose first `prefix`
 * positions see each other both ways.  Activations and their gradients are
 * in c's storage (storage.cuh: floats, or the plan's 16-bit bits under
 * act16), each kernel a template on it; every value a kernel stores is
 * computed in floats and stored (rounded) once, as the CPU's staging rounds
 * it (runtime/cpu/stage16.h).  Backward kernels accumulate, each sum in a
 * fixed order by one thread: no atomics.
 *
 * Attention keeps, as attention.cu does, a log-sum-exp per query row in att
 * (B, H, T) and rowsum(dout * out) per row in scratch (B, H, T) for backward:
 * one thread per query row forward and for dq, one per key row for dk and
 * dv, each recomputing its probabilities from q, k and the log-sum-exp. */
#include <math.h>

#include "cuda_rt.h"
#include "reduce.cuh"
#include "storage.cuh"

#define GRID_STRIDE(i, n) \
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < (n); i += (long)gridDim.x * blockDim.x)

/* SigLIP's normalisation, (v / 255 - 0.5) / 0.5 */
__device__ static float pixel_at(const uint8_t *img, int IH, int IW, int CH, int p, int t, int k) {
    (void)IH;
    int gw = IW / p, ch = k / (p * p), ky = (k / p) % p, kx = k % p;
    int y = (t / gw) * p + ky, x = (t % gw) * p + kx;
    return (float)img[((long)y * IW + x) * CH + ch] * (1.0f / 127.5f) - 1.0f;
}

/* ---- the patch embedding and the image / text hand-off over rows [row0,
 * row0 + rows) of the microbatch's B*T: a tp rank's own under sequence
 * parallelism (runtime/cpu/vision.c's *_rows_*), which may start and end
 * inside a sample, or all of them (row0 0, rows B*T: the same sums in the
 * same order); local row n is global row row0 + n, position (row0 + n) % T */
template <class S>
__global__ static void patch_embed_rows_fwd_kernel(typename S::raw *out, const uint8_t *image, const float *w,
                                                   const float *pos, long row0, long rows, int T, int IH, int IW,
                                                   int CH, int p, int D) {
    int P = (IH / p) * (IW / p), K = CH * p * p;
    GRID_STRIDE(i, rows * D) {
        int d = (int)(i % D);
        long g = row0 + i / D, b = g / T;
        int t = (int)(g % T);
        if (t >= P) { S::store(out, i, 0.0f); continue; }
        const uint8_t *img = image + b * IH * IW * CH;
        float acc = 0.0f;
        for (int k = 0; k < K; k++) acc += pixel_at(img, IH, IW, CH, p, t, k) * w[(long)d * K + k];
        S::store(out, i, acc + pos[(long)t * D + d]);
    }
}

/* dw[d, k] += this rank's image rows, in order */
template <class S>
__global__ static void patch_embed_rows_dw_kernel(float *dw, const typename S::raw *dout, const uint8_t *image,
                                                  long row0, long rows, int T, int IH, int IW, int CH, int p, int D) {
    int P = (IH / p) * (IW / p), K = CH * p * p;
    GRID_STRIDE(i, (long)D * K) {
        int d = (int)(i / K), k = (int)(i % K);
        float acc = 0.0f;
        for (long n = 0; n < rows; n++) {
            long g = row0 + n;
            int t = (int)(g % T);
            if (t < P) acc += S::load(dout, n * D + d) * pixel_at(image + (g / T) * IH * IW * CH, IH, IW, CH, p, t, k);
        }
        dw[i] += acc;
    }
}

/* dpos[t, d] += the rows at position t among this rank's, sample by sample */
template <class S>
__global__ static void patch_embed_rows_dpos_kernel(float *dpos, const typename S::raw *dout, long row0, long rows,
                                                    int T, int P, int D) {
    GRID_STRIDE(i, (long)P * D) {
        int t = (int)(i / D), d = (int)(i % D);
        float acc = 0.0f;
        for (long b = row0 / T; b * T < row0 + rows; b++) {
            long g = b * T + t;
            if (g >= row0 && g < row0 + rows) acc += S::load(dout, (g - row0) * D + d);
        }
        dpos[i] += acc;
    }
}

extern "C" void wf_patch_embed_rows_fwd(wf_ctx *c, float *out, float *scratch, const uint8_t *image, const float *w,
                                        const float *pos, long row0, long rows, int T, int IH, int IW, int CH, int p,
                                        int D) {
    (void)scratch;
    WF_BY_STORAGE(c, S, WF_LAUNCH(patch_embed_rows_fwd_kernel<S>, wf_blocks(rows * D), WF_THREADS, 0,
                                  wf_cuda_stream(c))(wf_act<S>(out), image, w, pos, row0, rows, T, IH, IW, CH, p, D));
    wf_cuda_sync(c, "wf_patch_embed_rows_fwd");
}

extern "C" void wf_patch_embed_rows_bwd(wf_ctx *c, float *dw, float *dpos, float *scratch, const float *dout,
                                        const uint8_t *image, long row0, long rows, int T, int IH, int IW, int CH,
                                        int p, int D) {
    (void)scratch;
    int P = (IH / p) * (IW / p), K = CH * p * p;
    WF_BY_STORAGE(c, S, {
        WF_LAUNCH(patch_embed_rows_dw_kernel<S>, wf_blocks((long)D * K), WF_THREADS, 0, wf_cuda_stream(c))(
            dw, wf_act<S>(dout), image, row0, rows, T, IH, IW, CH, p, D);
        WF_LAUNCH(patch_embed_rows_dpos_kernel<S>, wf_blocks((long)P * D), WF_THREADS, 0, wf_cuda_stream(c))(
            dpos, wf_act<S>(dout), row0, rows, T, P, D);
    });
    wf_cuda_sync(c, "wf_patch_embed_rows_bwd");
}

template <class S>
__global__ static void image_merge_rows_fwd_kernel(typename S::raw *out, const typename S::raw *text,
                                                   const typename S::raw *image, long row0, int T, int P, int C,
                                                   long n) {
    GRID_STRIDE(i, n) S::store(out, i, S::load((row0 + i / C) % T < P ? image : text, i));
}

template <class S>
__global__ static void image_merge_rows_bwd_kernel(typename S::raw *dtext, typename S::raw *dimage,
                                                   const typename S::raw *dout, long row0, int T, int P, int C,
                                                   long n) {
    GRID_STRIDE(i, n) {
        typename S::raw *d = (row0 + i / C) % T < P ? dimage : dtext;
        S::store(d, i, S::load(d, i) + S::load(dout, i));
    }
}

extern "C" void wf_image_merge_rows_fwd(wf_ctx *c, float *out, const float *text, const float *image, long row0,
                                        long rows, int T, int P, int C) {
    long n = rows * C;
    WF_BY_STORAGE(c, S, WF_LAUNCH(image_merge_rows_fwd_kernel<S>, wf_blocks(n), WF_THREADS, 0, wf_cuda_stream(c))(
                            wf_act<S>(out), wf_act<S>(text), wf_act<S>(image), row0, T, P, C, n));
    wf_cuda_sync(c, "wf_image_merge_rows_fwd");
}

extern "C" void wf_image_merge_rows_bwd(wf_ctx *c, float *dtext, float *dimage, const float *dout, long row0,
                                        long rows, int T, int P, int C) {
    long n = rows * C;
    WF_BY_STORAGE(c, S, WF_LAUNCH(image_merge_rows_bwd_kernel<S>, wf_blocks(n), WF_THREADS, 0, wf_cuda_stream(c))(
                            wf_act<S>(dtext), wf_act<S>(dimage), wf_act<S>(dout), row0, T, P, C, n));
    wf_cuda_sync(c, "wf_image_merge_rows_bwd");
}

/* all rows */
extern "C" long wf_patch_embed_scratch(int IH, int IW, int CH, int p) {
    return (long)(IH / p) * (IW / p) * CH * p * p;
}

extern "C" void wf_patch_embed_fwd(wf_ctx *c, float *out, float *scratch, const uint8_t *image, const float *w,
                                   const float *pos, int B, int T, int IH, int IW, int CH, int p, int D) {
    wf_patch_embed_rows_fwd(c, out, scratch, image, w, pos, 0, (long)B * T, T, IH, IW, CH, p, D);
}

extern "C" void wf_patch_embed_bwd(wf_ctx *c, float *dw, float *dpos, float *scratch, const float *dout,
                                   const uint8_t *image, int B, int T, int IH, int IW, int CH, int p, int D) {
    wf_patch_embed_rows_bwd(c, dw, dpos, scratch, dout, image, 0, (long)B * T, T, IH, IW, CH, p, D);
}

extern "C" void wf_image_merge_fwd(wf_ctx *c, float *out, const float *text, const float *image, int B, int T, int P,
                                   int C) {
    wf_image_merge_rows_fwd(c, out, text, image, 0, (long)B * T, T, P, C);
}

extern "C" void wf_image_merge_bwd(wf_ctx *c, float *dtext, float *dimage, const float *dout, int B, int T, int P,
                                   int C) {
    wf_image_merge_rows_bwd(c, dtext, dimage, dout, 0, (long)B * T, T, P, C);
}

/* ---- attention with a bidirectional prefix ----
 * Each thread keeps the values it sums in floats, WF_PREFIX_CHUNK of a
 * head's at a time (recomputing the scores for the next chunk: the same
 * operations per value in the same order), and stores each once. */
#define WF_PREFIX_CHUNK 32
__device__ static int last_key(int t, int prefix) { return t < prefix ? prefix - 1 : t; }

/* one thread per query row (b, h, t): an online softmax over its visible keys */
template <class S>
__global__ static void prefix_fwd_kernel(typename S::raw *out, float *lse, const typename S::raw *qkv, int B, int T,
                                         int C, int H, int prefix) {
    int hs = C / H, ld = 3 * C;
    float scale = 1.0f / sqrtf((float)hs);
    GRID_STRIDE(r, (long)B * H * T) {
        int t = (int)(r % T), h = (int)((r / T) % H);
        long b = r / ((long)T * H);
        long q = (b * T + t) * ld + (long)h * hs, o_at = (b * T + t) * C + (long)h * hs;
        float max = -INFINITY, sum = 0.0f;
        for (int d0 = 0; d0 < hs; d0 += WF_PREFIX_CHUNK) {
            int n = hs - d0 < WF_PREFIX_CHUNK ? hs - d0 : WF_PREFIX_CHUNK;
            float o[WF_PREFIX_CHUNK];
            for (int d = 0; d < n; d++) o[d] = 0.0f;
            max = -INFINITY, sum = 0.0f;
            for (int j = 0; j <= last_key(t, prefix); j++) {
                long k = (b * T + j) * ld + C + (long)h * hs, v = k + C;
                float s = 0.0f;
                for (int d = 0; d < hs; d++) s += S::load(qkv, q + d) * S::load(qkv, k + d);
                s *= scale;
                float m = s > max ? s : max, rescale = expf(max - m), e = expf(s - m);
                sum = sum * rescale + e;
                for (int d = 0; d < n; d++) o[d] = o[d] * rescale + e * S::load(qkv, v + d0 + d);
                max = m;
            }
            for (int d = 0; d < n; d++) S::store(out, o_at + d0 + d, o[d] / sum);
        }
        lse[r] = max + logf(sum);
    }
}

/* D[r] = rowsum(dout * out) of query row r */
template <class S>
__global__ static void prefix_rowsum_kernel(float *D, const typename S::raw *dout, const typename S::raw *out, int B,
                                            int T, int C, int H) {
    int hs = C / H;
    GRID_STRIDE(r, (long)B * H * T) {
        int t = (int)(r % T), h = (int)((r / T) % H);
        long b = r / ((long)T * H), at = (b * T + t) * C + (long)h * hs;
        float s = 0.0f;
        for (int d = 0; d < hs; d++) s += S::load(dout, at + d) * S::load(out, at + d);
        D[r] = s;
    }
}

/* dS of query t, key j: P (dP - D), P from the scores and the log-sum-exp */
template <class S>
__device__ static float prefix_ds(const typename S::raw *qkv, const typename S::raw *dout, const float *lse,
                                  const float *D, long b, int h, int t, int j, int T, int C, int H, float scale,
                                  float *p_out) {
    int hs = C / H, ld = 3 * C;
    long q = (b * T + t) * ld + (long)h * hs, k = (b * T + j) * ld + C + (long)h * hs;
    long v = k + C, dy = (b * T + t) * C + (long)h * hs;
    long r = (b * H + h) * T + t;
    float s = 0.0f, dp = 0.0f;
    for (int d = 0; d < hs; d++)
        s += S::load(qkv, q + d) * S::load(qkv, k + d), dp += S::load(dout, dy + d) * S::load(qkv, v + d);
    float p = expf(s * scale - lse[r]);
    *p_out = p;
    return p * (dp - D[r]);
}

template <class S>
__global__ static void prefix_dq_kernel(typename S::raw *dqkv, const typename S::raw *qkv,
                                        const typename S::raw *dout, const float *lse, const float *D, int B, int T,
                                        int C, int H, int prefix) {
    int hs = C / H, ld = 3 * C;
    float scale = 1.0f / sqrtf((float)hs);
    GRID_STRIDE(r, (long)B * H * T) {
        int t = (int)(r % T), h = (int)((r / T) % H);
        long b = r / ((long)T * H), q = (b * T + t) * ld + (long)h * hs;
        for (int d0 = 0; d0 < hs; d0 += WF_PREFIX_CHUNK) {
            int n = hs - d0 < WF_PREFIX_CHUNK ? hs - d0 : WF_PREFIX_CHUNK;
            float dq[WF_PREFIX_CHUNK];
            for (int d = 0; d < n; d++) dq[d] = S::load(dqkv, q + d0 + d);
            for (int j = 0; j <= last_key(t, prefix); j++) {
                float p, ds = prefix_ds<S>(qkv, dout, lse, D, b, h, t, j, T, C, H, scale, &p);
                long k = (b * T + j) * ld + C + (long)h * hs;
                for (int d = 0; d < n; d++) dq[d] += scale * ds * S::load(qkv, k + d0 + d);
            }
            for (int d = 0; d < n; d++) S::store(dqkv, q + d0 + d, dq[d]);
        }
    }
}

/* one thread per key row (b, h, j): the queries that see it, in order */
template <class S>
__global__ static void prefix_dkv_kernel(typename S::raw *dqkv, const typename S::raw *qkv,
                                         const typename S::raw *dout, const float *lse, const float *D, int B, int T,
                                         int C, int H, int prefix) {
    int hs = C / H, ld = 3 * C;
    float scale = 1.0f / sqrtf((float)hs);
    GRID_STRIDE(r, (long)B * H * T) {
        int j = (int)(r % T), h = (int)((r / T) % H);
        long b = r / ((long)T * H), k = (b * T + j) * ld + C + (long)h * hs, v = k + C;
        for (int d0 = 0; d0 < hs; d0 += WF_PREFIX_CHUNK) {
            int n = hs - d0 < WF_PREFIX_CHUNK ? hs - d0 : WF_PREFIX_CHUNK;
            float dk[WF_PREFIX_CHUNK], dv[WF_PREFIX_CHUNK];
            for (int d = 0; d < n; d++) dk[d] = S::load(dqkv, k + d0 + d), dv[d] = S::load(dqkv, v + d0 + d);
            for (int t = 0; t < T; t++) {
                if (j > last_key(t, prefix)) continue;
                float p, ds = prefix_ds<S>(qkv, dout, lse, D, b, h, t, j, T, C, H, scale, &p);
                long q = (b * T + t) * ld + (long)h * hs, dy = (b * T + t) * C + (long)h * hs;
                for (int d = 0; d < n; d++) {
                    dk[d] += scale * ds * S::load(qkv, q + d0 + d);
                    dv[d] += p * S::load(dout, dy + d0 + d);
                }
            }
            for (int d = 0; d < n; d++) S::store(dqkv, k + d0 + d, dk[d]), S::store(dqkv, v + d0 + d, dv[d]);
        }
    }
}

extern "C" void wf_attention_prefix_fwd(wf_ctx *c, float *out, float *att, const float *qkv, int B, int T, int C,
                                        int H, int prefix) {
    WF_BY_STORAGE(c, S, WF_LAUNCH(prefix_fwd_kernel<S>, wf_blocks((long)B * H * T), WF_THREADS, 0, wf_cuda_stream(c))(
                            wf_act<S>(out), att, wf_act<S>(qkv), B, T, C, H, prefix));
    wf_cuda_sync(c, "wf_attention_prefix_fwd");
}

extern "C" void wf_attention_prefix_bwd(wf_ctx *c, float *dqkv, float *scratch, const float *dout, const float *qkv,
                                        const float *out, const float *att, int B, int T, int C, int H, int prefix) {
    long rows = (long)B * H * T;
    WF_BY_STORAGE(c, S, {
        WF_LAUNCH(prefix_rowsum_kernel<S>, wf_blocks(rows), WF_THREADS, 0, wf_cuda_stream(c))(
            scratch, wf_act<S>(dout), wf_act<S>(out), B, T, C, H);
        WF_LAUNCH(prefix_dq_kernel<S>, wf_blocks(rows), WF_THREADS, 0, wf_cuda_stream(c))(
            wf_act<S>(dqkv), wf_act<S>(qkv), wf_act<S>(dout), att, scratch, B, T, C, H, prefix);
        WF_LAUNCH(prefix_dkv_kernel<S>, wf_blocks(rows), WF_THREADS, 0, wf_cuda_stream(c))(
            wf_act<S>(dqkv), wf_act<S>(qkv), wf_act<S>(dout), att, scratch, B, T, C, H, prefix);
    });
    wf_cuda_sync(c, "wf_attention_prefix_bwd");
}
