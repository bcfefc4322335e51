/* elementwise.c: the CPU's elementwise and row-wise kernels of weft/rt.h,
 * as runtime/cuda/elementwise.cu has them: the embedding lookups (whole and
 * vocabulary-parallel), the position and bias adds, the residual add, GELU
 * (the tanh approximation; gelu_value.h), the exact erf GELU (gelu_erf_value.h),
 * the rounding GELU halves of the
 * fused linear + GELU (linear_gelu.h), and the tensor-parallel collectives'
 * conversions (16-bit storage under act16; stage16.h stages the others).
 *
 * All tensors are row-major.  Activations are (N, width) with N = B * T.
 * Every backward kernel accumulates (+=) into its gradient outputs.  The
 * execution context is not needed on the CPU; it may be NULL.  Matrix
 * products go through wf_sgemm (blas.h) so they are timed and counted;
 * everything else is plain loops.
 */
#include "weft/rt.h"

#include <string.h>

#include "gelu_erf_value.h"
#include "gelu_value.h"
#include "kernels_tp.h"
#include "linear_gelu.h"
#include "precision_bits.h"
#include "stage16.h"
#include "vector_clones.h"

/* ---- embedding ------------------------------------------------------------- */

void wf_embed_fwd(wf_ctx *c, float *out, const int32_t *tok, const float *wte,
                  const float *wpe, int B, int T, int C)
{
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        out = wf_stage16_out(&s, out, (long)B * T * C);
        wf_embed_fwd(c, out, tok, wte, wpe, B, T, C);
        wf_stage16_end(&s);
        return;
    }
#pragma omp parallel for collapse(2) schedule(static) if ((long)B * T * C > 65536)
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
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        dout = wf_stage16_in(&s, dout, (long)B * T * C);
        wf_embed_bwd(c, dwte, dwpe, dout, tok, B, T, C);
        wf_stage16_end(&s);
        return;
    }
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

/* ---- vocabulary-parallel embedding ----------------------------------------- */

void wf_vocab_embed_fwd(wf_ctx *c, float *out, const int32_t *tok, const float *wte_part,
                        int v_begin, int VL, int N, int C) {
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        out = wf_stage16_out(&s, out, (long)N * C);
        wf_vocab_embed_fwd(c, out, tok, wte_part, v_begin, VL, N, C);
        wf_stage16_end(&s);
        return;
    }
    for (int n = 0; n < N; n++) {
        float *o = out + (long)n * C;
        int row = tok[n] - v_begin;
        if (row >= 0 && row < VL) memcpy(o, wte_part + (long)row * C, sizeof(float) * (size_t)C);
        else memset(o, 0, sizeof(float) * (size_t)C);
    }
}

void wf_vocab_embed_bwd(wf_ctx *c, float *dwte_part, const float *dout, const int32_t *tok,
                        int v_begin, int VL, int N, int C) {
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        dout = wf_stage16_in(&s, dout, (long)N * C);
        wf_vocab_embed_bwd(c, dwte_part, dout, tok, v_begin, VL, N, C);
        wf_stage16_end(&s);
        return;
    }
    for (int n = 0; n < N; n++) {
        int row = tok[n] - v_begin;
        if (row < 0 || row >= VL) continue;
        float *g = dwte_part + (long)row * C;
        const float *d = dout + (long)n * C;
        for (int j = 0; j < C; j++) g[j] += d[j];
    }
}

/* ---- position and bias adds (after a tensor-parallel reduction) ------------ */

void wf_pos_add_fwd(wf_ctx *c, float *out, const float *in, const float *wpe, long row0,
                    int rows, int T, int C) {
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        in = wf_stage16_in(&s, in, (long)rows * C);
        out = wf_stage16_out(&s, out, (long)rows * C);
        wf_pos_add_fwd(c, out, in, wpe, row0, rows, T, C);
        wf_stage16_end(&s);
        return;
    }
    for (int r = 0; r < rows; r++) {
        const float *pos = wpe + ((row0 + r) % T) * C;
        for (int j = 0; j < C; j++) out[(long)r * C + j] = in[(long)r * C + j] + pos[j];
    }
}

void wf_pos_add_bwd(wf_ctx *c, float *din, float *dwpe, const float *dout, long row0,
                    int rows, int T, int C) {
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        dout = wf_stage16_in(&s, dout, (long)rows * C);
        din = wf_stage16_acc(&s, din, (long)rows * C);
        wf_pos_add_bwd(c, din, dwpe, dout, row0, rows, T, C);
        wf_stage16_end(&s);
        return;
    }
    for (int r = 0; r < rows; r++) {
        float *g = dwpe + ((row0 + r) % T) * C;
        for (int j = 0; j < C; j++) {
            din[(long)r * C + j] += dout[(long)r * C + j];
            g[j] += dout[(long)r * C + j];
        }
    }
}

void wf_pos_add_bwd_input(wf_ctx *c, float *din, const float *dout, int rows, int C) {
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        dout = wf_stage16_in(&s, dout, (long)rows * C);
        din = wf_stage16_acc(&s, din, (long)rows * C);
        wf_pos_add_bwd_input(c, din, dout, rows, C);
        wf_stage16_end(&s);
        return;
    }
    for (long i = 0; i < (long)rows * C; i++) din[i] += dout[i];
}

void wf_pos_add_bwd_weight(wf_ctx *c, float *dwpe, const float *dout, long row0, int rows, int T,
                           int C) {
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        dout = wf_stage16_in(&s, dout, (long)rows * C);
        wf_pos_add_bwd_weight(c, dwpe, dout, row0, rows, T, C);
        wf_stage16_end(&s);
        return;
    }
    for (int r = 0; r < rows; r++) {
        float *g = dwpe + ((row0 + r) % T) * C;
        for (int j = 0; j < C; j++) g[j] += dout[(long)r * C + j];
    }
}

void wf_bias_add_fwd(wf_ctx *c, float *out, const float *in, const float *b, int rows, long C) {
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        in = wf_stage16_in(&s, in, rows * C);
        out = wf_stage16_out(&s, out, rows * C);
        wf_bias_add_fwd(c, out, in, b, rows, C);
        wf_stage16_end(&s);
        return;
    }
    for (int r = 0; r < rows; r++)
        for (long j = 0; j < C; j++) out[r * C + j] = in[r * C + j] + b[j];
}

void wf_bias_add_bwd(wf_ctx *c, float *din, float *db, const float *dout, int rows, long C) {
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        dout = wf_stage16_in(&s, dout, rows * C);
        din = wf_stage16_acc(&s, din, rows * C);
        wf_bias_add_bwd(c, din, db, dout, rows, C);
        wf_stage16_end(&s);
        return;
    }
    for (int r = 0; r < rows; r++)
        for (long j = 0; j < C; j++) {
            din[r * C + j] += dout[r * C + j];
            db[j] += dout[r * C + j];
        }
}

void wf_bias_add_bwd_weight(wf_ctx *c, float *db, const float *dout, int rows, long C) {
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        dout = wf_stage16_in(&s, dout, rows * C);
        wf_bias_add_bwd_weight(c, db, dout, rows, C);
        wf_stage16_end(&s);
        return;
    }
    for (int r = 0; r < rows; r++)
        for (long j = 0; j < C; j++) db[j] += dout[r * C + j];
}

/* ---- residual add ---------------------------------------------------------- */

void wf_add_fwd(wf_ctx *c, float *out, const float *a, const float *b, long n)
{
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        a = wf_stage16_in(&s, a, n);
        b = wf_stage16_in(&s, b, n);
        out = wf_stage16_out(&s, out, n);
        wf_add_fwd(c, out, a, b, n);
        wf_stage16_end(&s);
        return;
    }
    for (long i = 0; i < n; i++)
        out[i] = a[i] + b[i];
}

void wf_add_bwd(wf_ctx *c, float *da, float *db, const float *dout, long n)
{
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        dout = wf_stage16_in(&s, dout, n);
        da = wf_stage16_acc(&s, da, n);
        db = wf_stage16_acc(&s, db, n);
        wf_add_bwd(c, da, db, dout, n);
        wf_stage16_end(&s);
        return;
    }
    for (long i = 0; i < n; i++) {
        da[i] += dout[i];
        db[i] += dout[i];
    }
}

/* ---- GELU ------------------------------------------------------------------ */

/* the formula is gelu_value.h's, shared with the fused linear + GELU; no libm
 * call in it, so the loops vectorise (simd) */

WF_VECTOR_CLONES void wf_gelu_fwd(wf_ctx *c, float *out, const float *inp, long n)
{
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        inp = wf_stage16_in(&s, inp, n);
        out = wf_stage16_out(&s, out, n);
        wf_gelu_fwd(c, out, inp, n);
        wf_stage16_end(&s);
        return;
    }
#pragma omp parallel for simd schedule(static) if (n > 65536)
    for (long i = 0; i < n; i++) {
        out[i] = wf_gelu_value(inp[i]);
    }
}

WF_VECTOR_CLONES void wf_gelu_bwd(wf_ctx *c, float *dinp, const float *inp, const float *dout, long n)
{
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        inp = wf_stage16_in(&s, inp, n);
        dout = wf_stage16_in(&s, dout, n);
        dinp = wf_stage16_acc(&s, dinp, n);
        wf_gelu_bwd(c, dinp, inp, dout, n);
        wf_stage16_end(&s);
        return;
    }
#pragma omp parallel for simd schedule(static) if (n > 65536)
    for (long i = 0; i < n; i++) {
        dinp[i] += wf_gelu_grad(inp[i]) * dout[i];
    }
}

/* ---- exact (erf) GELU --------------------------------------------------- */
/* Hugging Face's activation_function = "gelu"; the formula is
 * gelu_erf_value.h's (the erfc form), which the CUDA kernels compile too. */

void wf_gelu_erf_fwd(wf_ctx *c, float *out, const float *inp, long n)
{
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        inp = wf_stage16_in(&s, inp, n);
        out = wf_stage16_out(&s, out, n);
        wf_gelu_erf_fwd(c, out, inp, n);
        wf_stage16_end(&s);
        return;
    }
#pragma omp parallel for schedule(static) if (n > 65536)
    for (long i = 0; i < n; i++) {
        out[i] = wf_gelu_erf_value(inp[i]);
    }
}

void wf_gelu_erf_bwd(wf_ctx *c, float *dinp, const float *inp, const float *dout, long n)
{
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        inp = wf_stage16_in(&s, inp, n);
        dout = wf_stage16_in(&s, dout, n);
        dinp = wf_stage16_acc(&s, dinp, n);
        wf_gelu_erf_bwd(c, dinp, inp, dout, n);
        wf_stage16_end(&s);
        return;
    }
#pragma omp parallel for schedule(static) if (n > 65536)
    for (long i = 0; i < n; i++) {
        dinp[i] += wf_gelu_erf_grad(inp[i]) * dout[i];
    }
}

/* ---- GELU with the 16-bit rounding (linear_gelu.h) ------------------------- */
/* Under fp32 there is nothing to round (wf_hd_round is x itself): those
 * loops are written without it, so that they vectorise; the same values. */

WF_VECTOR_CLONES void wf_gelu_round_fwd(wf_ctx *c, int precision, float *pre, float *out, long n) {
    (void)c;
    if (precision == WF_FP32) {
#pragma omp parallel for simd schedule(static) if (n > 65536)
        for (long i = 0; i < n; i++) out[i] = wf_gelu_value(pre[i]);
        return;
    }
#pragma omp parallel for schedule(static) if (n > 65536)
    for (long i = 0; i < n; i++) {
        float x = wf_hd_round(precision, pre[i]);
        pre[i] = x;
        out[i] = wf_hd_round(precision, wf_gelu_value(x));
    }
}

WF_VECTOR_CLONES void wf_gelu_round_bwd(wf_ctx *c, int precision, float *dpre, const float *pre, const float *dout,
                       long n) {
    (void)c;
    if (precision == WF_FP32) {
#pragma omp parallel for simd schedule(static) if (n > 65536)
        for (long i = 0; i < n; i++) dpre[i] = dpre[i] + wf_gelu_grad(pre[i]) * dout[i];
        return;
    }
#pragma omp parallel for schedule(static) if (n > 65536)
    for (long i = 0; i < n; i++) dpre[i] = wf_hd_round(precision, dpre[i] + wf_gelu_grad(pre[i]) * dout[i]);
}

WF_VECTOR_CLONES void wf_dgelu_round(wf_ctx *c, int precision, float *dpre, const float *pre, const float *acc, long n) {
    (void)c;
    if (precision == WF_FP32) {
#pragma omp parallel for simd schedule(static) if (n > 65536)
        for (long i = 0; i < n; i++) dpre[i] = wf_gelu_grad(pre[i]) * acc[i];
        return;
    }
#pragma omp parallel for schedule(static) if (n > 65536)
    for (long i = 0; i < n; i++) dpre[i] = wf_hd_round(precision, wf_gelu_grad(pre[i]) * acc[i]);
}

/* ---- the tensor-parallel collectives' conversions (kernels_tp.h) ----------- */

/* Float activations: the conversions are copies (the generated code rounds
 * after the collective, as after every op).  16-bit storage (act16): the
 * values packed two a float, rounded where stored. */
void wf_tp_widen(wf_ctx *c, float *dst, const float *src, long n) {
    if (!wf_ctx_act16(c)) {
        memmove(dst, src, sizeof(float) * (size_t)n);
        return;
    }
    const uint16_t *h = (const uint16_t *)src;
    int bf = wf_ctx_precision(c) == WF_BF16;
    for (long i = 0; i < n; i++) dst[i] = bf ? wf_hd_bf16_value(h[i]) : wf_hd_fp16_value(h[i]);
}

void wf_tp_narrow(wf_ctx *c, float *dst, const float *src, long n) {
    if (!wf_ctx_act16(c)) {
        memmove(dst, src, sizeof(float) * (size_t)n);
        return;
    }
    uint16_t *h = (uint16_t *)dst;
    int bf = wf_ctx_precision(c) == WF_BF16;
    for (long i = 0; i < n; i++) h[i] = bf ? wf_hd_bf16_bits(src[i]) : wf_hd_fp16_bits(src[i]);
}

void wf_tp_add_floats(wf_ctx *c, float *dst, const float *src, long n) {
    if (!wf_ctx_act16(c)) {
        for (long i = 0; i < n; i++) dst[i] += src[i];
        return;
    }
    uint16_t *h = (uint16_t *)dst;
    int bf = wf_ctx_precision(c) == WF_BF16;
    for (long i = 0; i < n; i++)
        h[i] = bf ? wf_hd_bf16_bits(wf_hd_bf16_value(h[i]) + src[i]) : wf_hd_fp16_bits(wf_hd_fp16_value(h[i]) + src[i]);
}
