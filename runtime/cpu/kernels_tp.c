/* kernels_tp.c: the kernels tensor parallelism adds: vocabulary-parallel
 * embedding lookup, position and bias adds that follow a reduction, the
 * local halves of the vocabulary-parallel cross-entropy, and the
 * collectives' conversions (floats here: the CPU never stores 16 bits). */
#include <math.h>
#include <string.h>

#include "blas.h"
#include "dlogits_row.h"
#include "kernels_tp.h"
#include "precision_bits.h"

void wf_vocab_embed_fwd(wf_ctx *c, float *out, const int32_t *tok, const float *wte_part,
                        int v_begin, int VL, int N, int C) {
    (void)c;
    for (int n = 0; n < N; n++) {
        float *o = out + (long)n * C;
        int row = tok[n] - v_begin;
        if (row >= 0 && row < VL) memcpy(o, wte_part + (long)row * C, sizeof(float) * (size_t)C);
        else memset(o, 0, sizeof(float) * (size_t)C);
    }
}

void wf_vocab_embed_bwd(wf_ctx *c, float *dwte_part, const float *dout, const int32_t *tok,
                        int v_begin, int VL, int N, int C) {
    (void)c;
    for (int n = 0; n < N; n++) {
        int row = tok[n] - v_begin;
        if (row < 0 || row >= VL) continue;
        float *g = dwte_part + (long)row * C;
        const float *d = dout + (long)n * C;
        for (int j = 0; j < C; j++) g[j] += d[j];
    }
}

void wf_pos_add_fwd(wf_ctx *c, float *out, const float *in, const float *wpe, long row0,
                    int rows, int T, int C) {
    (void)c;
    for (int r = 0; r < rows; r++) {
        const float *pos = wpe + ((row0 + r) % T) * C;
        for (int j = 0; j < C; j++) out[(long)r * C + j] = in[(long)r * C + j] + pos[j];
    }
}

void wf_pos_add_bwd(wf_ctx *c, float *din, float *dwpe, const float *dout, long row0,
                    int rows, int T, int C) {
    (void)c;
    for (int r = 0; r < rows; r++) {
        float *g = dwpe + ((row0 + r) % T) * C;
        for (int j = 0; j < C; j++) {
            din[(long)r * C + j] += dout[(long)r * C + j];
            g[j] += dout[(long)r * C + j];
        }
    }
}

void wf_bias_add_fwd(wf_ctx *c, float *out, const float *in, const float *b, int rows, long C) {
    (void)c;
    for (int r = 0; r < rows; r++)
        for (long j = 0; j < C; j++) out[r * C + j] = in[r * C + j] + b[j];
}

void wf_bias_add_bwd(wf_ctx *c, float *din, float *db, const float *dout, int rows, long C) {
    (void)c;
    for (int r = 0; r < rows; r++)
        for (long j = 0; j < C; j++) {
            din[r * C + j] += dout[r * C + j];
            db[j] += dout[r * C + j];
        }
}

/* logits (N, VL) = x @ wte_part^T, padding columns set to -inf; rowmax[n] is
 * the local maximum (-inf when the whole shard is padding). */
void wf_vocab_logits(wf_ctx *c, float *logits, float *rowmax, const float *x, const float *wte_part,
                     int N, int C, int VL, int valid, int precision) {
    (void)c;
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
        for (int j = 0; j < valid; j++) sum += expf(row[j] - rowmax[n]);
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
        for (int j = 0; j < VL; j++) row[j] = expf(row[j] - rowmax[n]);
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
    /* dx is partial over the vocabulary; the tp_copy before the head sums it */
    wf_lmhead_xent_bwd_input(c, dx, dlogits, wte_part, N, C, VL);
    wf_lmhead_xent_bwd_weight(c, dwte_part, dlogits, x, N, C, VL);
}

/* Activations are floats on the CPU: the conversions are copies (the
 * generated code rounds after the collective, as after every op). */
void wf_tp_widen(wf_ctx *c, float *dst, const float *src, long n) {
    (void)c;
    memmove(dst, src, sizeof(float) * (size_t)n);
}

void wf_tp_narrow(wf_ctx *c, float *dst, const float *src, long n) {
    (void)c;
    memmove(dst, src, sizeof(float) * (size_t)n);
}

void wf_tp_add_floats(wf_ctx *c, float *dst, const float *src, long n) {
    (void)c;
    for (long i = 0; i < n; i++) dst[i] += src[i];
}
