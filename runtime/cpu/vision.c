/* vision.c: the vision encoder's kernels on the CPU (weft/rt.h): the patch
 * embedding of a uint8 image, and the hand-off of the projected patches into
 * the language model's input rows.  Attention with a bidirectional prefix is
 * in attention.c.
 *
 * Rows are tokens, as everywhere: a microbatch is (B, T) rows, and the image
 * of sample b occupies rows b*T + [0, P), P = (IH / p) * (IW / p) patches in
 * raster order (the image placeholders of the WVLM format come first,
 * runtime/common/data_vlm.h).  The encoder's rows past P carry zeros in and
 * are dropped at the hand-off, so they get no gradient.
 *
 * Every backward kernel accumulates (+=) into its gradient outputs.
 *
 * Under act16 (stage16.h) each entry point stages its activation operands:
 * the patch embedding's output and its gradient, the hand-off's two inputs,
 * output and their gradients.  The image (uint8), the parameters and their
 * gradients, and the scratch are not activations and are passed as they are. */
#include "weft/rt.h"

#include <string.h>

#include "blas.h"
#include "stage16.h"

/* SigLIP's normalisation, x = (v / 255 - 0.5) / 0.5 (data_vlm.h). */
static float pixel(uint8_t v) { return (float)v * (1.0f / 127.5f) - 1.0f; }

/* Sample b's patches as the (P, CH * p * p) matrix a convolution with a
 * [D, CH, p, p] weight and stride p multiplies: column (ch * p + ky) * p + kx
 * of row py * (IW / p) + px is pixel (py * p + ky, px * p + kx), channel ch. */
static void patches_of(float *x, const uint8_t *img, int IH, int IW, int CH, int p)
{
    int gw = IW / p, P = (IH / p) * gw, K = CH * p * p;
    for (int t = 0; t < P; t++) {
        int py = t / gw, px = t % gw;
        float *row = x + (long)t * K;
        for (int ch = 0; ch < CH; ch++)
            for (int ky = 0; ky < p; ky++)
                for (int kx = 0; kx < p; kx++)
                    row[(ch * p + ky) * p + kx] =
                        pixel(img[((long)(py * p + ky) * IW + px * p + kx) * CH + ch]);
    }
}

long wf_patch_embed_scratch(int IH, int IW, int CH, int p)
{
    return (long)(IH / p) * (IW / p) * CH * p * p;
}

/* out (B*T, D): rows [0, P) of each sample its patches' embedding plus the
 * position embedding pos [P, D], the other rows 0 */
void wf_patch_embed_fwd(wf_ctx *c, float *out, float *scratch, const uint8_t *image, const float *w,
                        const float *pos, int B, int T, int IH, int IW, int CH, int p, int D)
{
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        out = wf_stage16_out(&s, out, (long)B * T * D);
        wf_patch_embed_fwd(c, out, scratch, image, w, pos, B, T, IH, IW, CH, p, D);
        wf_stage16_end(&s);
        return;
    }
    int P = (IH / p) * (IW / p), K = CH * p * p;
    for (int b = 0; b < B; b++) {
        float *o = out + (long)b * T * D;
        patches_of(scratch, image + (long)b * IH * IW * CH, IH, IW, CH, p);
        wf_sgemm(0, 1, P, D, K, 1.0f, scratch, K, w, K, 0.0f, o, D);
        for (int t = 0; t < P; t++)
            for (int d = 0; d < D; d++) o[(long)t * D + d] += pos[(long)t * D + d];
        memset(o + (long)P * D, 0, sizeof(float) * (size_t)(T - P) * (size_t)D);
    }
}

/* dw [D, K] += dout^T X over the image rows; dpos += those rows */
void wf_patch_embed_bwd(wf_ctx *c, float *dw, float *dpos, float *scratch, const float *dout,
                        const uint8_t *image, int B, int T, int IH, int IW, int CH, int p, int D)
{
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        dout = wf_stage16_in(&s, dout, (long)B * T * D);
        wf_patch_embed_bwd(c, dw, dpos, scratch, dout, image, B, T, IH, IW, CH, p, D);
        wf_stage16_end(&s);
        return;
    }
    int P = (IH / p) * (IW / p), K = CH * p * p;
    for (int b = 0; b < B; b++) {
        const float *g = dout + (long)b * T * D;
        patches_of(scratch, image + (long)b * IH * IW * CH, IH, IW, CH, p);
        wf_sgemm(1, 0, D, K, P, 1.0f, g, D, scratch, K, 1.0f, dw, K);
        for (int t = 0; t < P; t++)
            for (int d = 0; d < D; d++) dpos[(long)t * D + d] += g[(long)t * D + d];
    }
}

/* out = the image rows [0, P) of each sample from `image`, the others from
 * `text` (the placeholders' own embeddings are replaced) */
void wf_image_merge_fwd(wf_ctx *c, float *out, const float *text, const float *image, int B, int T,
                        int P, int C)
{
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        long n = (long)B * T * C;
        text = wf_stage16_in(&s, text, n);
        image = wf_stage16_in(&s, image, n);
        out = wf_stage16_out(&s, out, n);
        wf_image_merge_fwd(c, out, text, image, B, T, P, C);
        wf_stage16_end(&s);
        return;
    }
    for (int b = 0; b < B; b++) {
        long at = (long)b * T * C, n_img = (long)P * C;
        memcpy(out + at, image + at, sizeof(float) * (size_t)n_img);
        memcpy(out + at + n_img, text + at + n_img, sizeof(float) * (size_t)((long)(T - P) * C));
    }
}

void wf_image_merge_bwd(wf_ctx *c, float *dtext, float *dimage, const float *dout, int B, int T, int P,
                        int C)
{
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        long n = (long)B * T * C;
        dout = wf_stage16_in(&s, dout, n);
        dtext = wf_stage16_acc(&s, dtext, n);
        dimage = wf_stage16_acc(&s, dimage, n);
        wf_image_merge_bwd(c, dtext, dimage, dout, B, T, P, C);
        wf_stage16_end(&s);
        return;
    }
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            long at = ((long)b * T + t) * C;
            float *d = t < P ? dimage + at : dtext + at;
            for (int i = 0; i < C; i++) d[i] += dout[at + i];
        }
}

/* ---- sequence parallelism: this tp rank's rows [row0, row0 + rows) of the
 * microbatch's B*T, which may start and end inside a sample ---- */

/* Runs body once for each sample b that rows [row0, row0 + rows) meet, with
 * its positions [t0, t1) among them, the first of them local row n. */
#define FOR_SAMPLE_SPANS(row0, rows, T, body)                                   \
    for (long n_ = (row0); n_ < (row0) + (rows);) {                             \
        long b = n_ / (T), stop_ = (b + 1) * (T) < (row0) + (rows) ? (b + 1) * (T) : (row0) + (rows); \
        int t0 = (int)(n_ - b * (T)), t1 = (int)(stop_ - b * (T));              \
        long n = n_ - (row0);                                                   \
        body                                                                    \
        n_ = stop_;                                                             \
    }

void wf_patch_embed_rows_fwd(wf_ctx *c, float *out, float *scratch, const uint8_t *image, const float *w,
                             const float *pos, long row0, long rows, int T, int IH, int IW, int CH, int p, int D)
{
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        out = wf_stage16_out(&s, out, rows * D);
        wf_patch_embed_rows_fwd(c, out, scratch, image, w, pos, row0, rows, T, IH, IW, CH, p, D);
        wf_stage16_end(&s);
        return;
    }
    int P = (IH / p) * (IW / p), K = CH * p * p;
    FOR_SAMPLE_SPANS(row0, rows, T, {
        float *o = out + n * D;
        int i1 = t1 < P ? t1 : P;  /* image rows [t0, i1), then zeros */
        if (t0 < i1) {
            patches_of(scratch, image + b * IH * IW * CH, IH, IW, CH, p);
            wf_sgemm(0, 1, i1 - t0, D, K, 1.0f, scratch + (long)t0 * K, K, w, K, 0.0f, o, D);
            for (int t = t0; t < i1; t++)
                for (int d = 0; d < D; d++) o[(long)(t - t0) * D + d] += pos[(long)t * D + d];
        }
        int z0 = t0 > P ? t0 : P;
        if (z0 < t1) memset(o + (long)(z0 - t0) * D, 0, sizeof(float) * (size_t)(t1 - z0) * (size_t)D);
    })
}

/* this rank's part of dw and dpos (the tp group sums them: tp_partial) */
void wf_patch_embed_rows_bwd(wf_ctx *c, float *dw, float *dpos, float *scratch, const float *dout,
                             const uint8_t *image, long row0, long rows, int T, int IH, int IW, int CH, int p, int D)
{
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        dout = wf_stage16_in(&s, dout, rows * D);
        wf_patch_embed_rows_bwd(c, dw, dpos, scratch, dout, image, row0, rows, T, IH, IW, CH, p, D);
        wf_stage16_end(&s);
        return;
    }
    int P = (IH / p) * (IW / p), K = CH * p * p;
    FOR_SAMPLE_SPANS(row0, rows, T, {
        const float *g = dout + n * D;
        int i1 = t1 < P ? t1 : P;
        if (t0 < i1) {
            patches_of(scratch, image + b * IH * IW * CH, IH, IW, CH, p);
            wf_sgemm(1, 0, D, K, i1 - t0, 1.0f, g, D, scratch + (long)t0 * K, K, 1.0f, dw, K);
            for (int t = t0; t < i1; t++)
                for (int d = 0; d < D; d++) dpos[(long)t * D + d] += g[(long)(t - t0) * D + d];
        }
    })
}

void wf_image_merge_rows_fwd(wf_ctx *c, float *out, const float *text, const float *image, long row0, long rows,
                             int T, int P, int C)
{
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        text = wf_stage16_in(&s, text, rows * C);
        image = wf_stage16_in(&s, image, rows * C);
        out = wf_stage16_out(&s, out, rows * C);
        wf_image_merge_rows_fwd(c, out, text, image, row0, rows, T, P, C);
        wf_stage16_end(&s);
        return;
    }
    for (long i = 0; i < rows; i++) {
        const float *src = (row0 + i) % T < P ? image : text;
        memcpy(out + i * C, src + i * C, sizeof(float) * (size_t)C);
    }
}

void wf_image_merge_rows_bwd(wf_ctx *c, float *dtext, float *dimage, const float *dout, long row0, long rows,
                             int T, int P, int C)
{
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        dout = wf_stage16_in(&s, dout, rows * C);
        dtext = wf_stage16_acc(&s, dtext, rows * C);
        dimage = wf_stage16_acc(&s, dimage, rows * C);
        wf_image_merge_rows_bwd(c, dtext, dimage, dout, row0, rows, T, P, C);
        wf_stage16_end(&s);
        return;
    }
    for (long i = 0; i < rows; i++) {
        float *d = ((row0 + i) % T < P ? dimage : dtext) + i * C;
        for (int j = 0; j < C; j++) d[j] += dout[i * C + j];
    }
}
