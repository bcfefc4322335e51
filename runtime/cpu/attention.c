/* attention.c: self-attention on the CPU (weft/rt.h): GPT-2's causal
 * multi-head attention, LLaMA's grouped-query attention and a vision
 * encoder's bidirectional one (a prefix of positions that see each other both
 * ways; prefix = T is fully bidirectional), without the (T, T) matrix.
 *
 * Queries are taken in strips of STRIP rows.  A strip's scores against the
 * keys it may see (0 .. its last row) are one GEMM, soft-maxed in place and
 * multiplied by v: each thread holds STRIP x T floats, never a head's T x T.
 * Forward keeps the natural-log log-sum-exp of every (b, h, t) row (B*H*T
 * floats, what the CUDA flash kernels keep in base 2); backward recomputes
 * each strip's probabilities as exp(s - lse) and forms D = rowsum(P * dP) =
 * dout . out from the forward's output (FlashAttention-2), in the B*H*T
 * floats of scratch.  Heads run in parallel (OpenMP); in backward a thread
 * takes a whole key/value head with the query heads that read it, so dk and
 * dv have one writer.  Products inside a thread are single-threaded
 * cblas_sgemm calls; their FLOPs are added to wf_sgemm's counters.
 *
 * All tensors are row-major.  Activations are (N, width) with N = B * T.
 * Every backward kernel accumulates (+=) into its gradient outputs.  The
 * execution context is not needed on the CPU; it may be NULL.
 */
#include "weft/rt.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>

#include "blas.h"
#include "stage16.h"

enum { STRIP = 64 };

/* One batch row's heads as strided matrices: query head h at q + h * hs
 * (rows ldq apart), its key / value head h / group at k / v + (h / group) * hs;
 * out and the gradients likewise (dq NULL in forward). */
typedef struct {
    const float *q, *k, *v;
    float *out, *dq, *dk, *dv;
    long ldq, ldk, ldv, ldo;
    int H, group, hs, T;
    int prefix;  /* row t sees keys 0 .. max(t, prefix - 1): 0 is causal, T bidirectional */
} heads;

static void gemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, long lda, const float *B,
                 long ldb, float beta, float *C, long ldc) {
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, alpha, A,
                (int)lda, B, (int)ldb, beta, C, (int)ldc);
}

/* keys row t sees, and the strip starting at row t0 (rows rows) */
static int row_keys(const heads *a, int t) { return t + 1 > a->prefix ? t + 1 : a->prefix; }
static int strip_keys(const heads *a, int t0, int rows) { return row_keys(a, t0 + rows - 1); }

/* head h of batch row b's forward: out rows and lse[T] */
static void head_fwd(const heads *a, int h, float *lse, float *s) {
    int hs = a->hs, T = a->T, kvh = h / a->group;
    const float *q = a->q + (long)h * hs, *k = a->k + (long)kvh * hs, *v = a->v + (long)kvh * hs;
    float *o = a->out + (long)h * hs, scale = 1.0f / sqrtf((float)hs);
    for (int t0 = 0; t0 < T; t0 += STRIP) {
        int rows = T - t0 < STRIP ? T - t0 : STRIP, kv = strip_keys(a, t0, rows);
        gemm(0, 1, rows, kv, hs, scale, q + (long)t0 * a->ldq, a->ldq, k, a->ldk, 0.0f, s, kv);
        for (int i = 0; i < rows; i++) {
            float *row = s + (long)i * kv;
            int n = row_keys(a, t0 + i);
            float max = row[0];
            for (int j = 1; j < n; j++) max = row[j] > max ? row[j] : max;
            double sum = 0.0;
            for (int j = 0; j < n; j++) {
                row[j] = expf(row[j] - max);
                sum += row[j];
            }
            float inv = (float)(1.0 / sum);
            for (int j = 0; j < n; j++) row[j] *= inv;
            for (int j = n; j < kv; j++) row[j] = 0.0f;
            lse[t0 + i] = max + (float)log(sum);
        }
        gemm(0, 0, rows, hs, kv, 1.0f, s, kv, v, a->ldv, 0.0f, o + (long)t0 * a->ldo, a->ldo);
    }
}

/* query head h's backward: dq of its rows, dk / dv of its key/value head
 * (the caller runs a group's query heads on one thread); D[T] from dout . out */
static void head_bwd(const heads *a, int h, const float *dout, const float *lse, float *D, float *p, float *ds) {
    int hs = a->hs, T = a->T, kvh = h / a->group;
    const float *q = a->q + (long)h * hs, *k = a->k + (long)kvh * hs, *v = a->v + (long)kvh * hs;
    const float *o = a->out + (long)h * hs, *dy = dout + (long)h * hs;
    float *dq = a->dq + (long)h * hs, *dk = a->dk + (long)kvh * hs, *dv = a->dv + (long)kvh * hs;
    float scale = 1.0f / sqrtf((float)hs);
    for (int t = 0; t < T; t++) {
        double d = 0.0;
        for (int i = 0; i < hs; i++) d += (double)dy[(long)t * a->ldo + i] * o[(long)t * a->ldo + i];
        D[t] = (float)d;
    }
    for (int t0 = 0; t0 < T; t0 += STRIP) {
        int rows = T - t0 < STRIP ? T - t0 : STRIP, kv = strip_keys(a, t0, rows);
        const float *qs = q + (long)t0 * a->ldq, *dys = dy + (long)t0 * a->ldo;
        /* P = exp(scale q k^T - lse), 0 for keys the row does not see */
        gemm(0, 1, rows, kv, hs, scale, qs, a->ldq, k, a->ldk, 0.0f, p, kv);
        for (int i = 0; i < rows; i++) {
            float *row = p + (long)i * kv, l = lse[t0 + i];
            int n = row_keys(a, t0 + i);
            for (int j = 0; j < n; j++) row[j] = expf(row[j] - l);
            for (int j = n; j < kv; j++) row[j] = 0.0f;
        }
        /* out = P v:  dv += P^T dout,  dP = dout v^T */
        gemm(1, 0, kv, hs, rows, 1.0f, p, kv, dys, a->ldo, 1.0f, dv, a->ldv);
        gemm(0, 1, rows, kv, hs, 1.0f, dys, a->ldo, v, a->ldv, 0.0f, ds, kv);
        /* dS = P (dP - D): 0 where P is (masked keys) */
        for (int i = 0; i < rows; i++) {
            float *drow = ds + (long)i * kv, Dt = D[t0 + i];
            const float *prow = p + (long)i * kv;
            for (int j = 0; j < kv; j++) drow[j] = prow[j] * (drow[j] - Dt);
        }
        /* S = scale q k^T:  dq += scale dS k,  dk += scale dS^T q */
        gemm(0, 0, rows, hs, kv, scale, ds, kv, k, a->ldk, 1.0f, dq + (long)t0 * a->ldq, a->ldq);
        gemm(1, 0, kv, hs, rows, scale, ds, kv, qs, a->ldq, 1.0f, dk, a->ldk);
    }
}

/* QK^T and PV of a forward (and the five products of a backward: 2.5x)
 * over the visible pairs, for wf_sgemm's counters */
static double attention_flops(const heads *a, int B) {
    double pairs = 0.0;
    for (int t = 0; t < a->T; t++) pairs += row_keys(a, t);
    return 4.0 * B * a->H * pairs * a->hs;
}

/* b's heads: batch row b of the packed (q,k,v) buffer and its gradient */
static heads packed(const float *qkv, float *dqkv, float *out, int b, int T, int C, int H, int prefix) {
    long o = (long)b * T * 3 * C;
    heads a = { qkv + o, qkv + o + C, qkv + o + 2 * C, out + (long)b * T * C,
                dqkv ? dqkv + o : NULL, dqkv ? dqkv + o + C : NULL, dqkv ? dqkv + o + 2 * C : NULL,
                3 * C, 3 * C, 3 * C, C, H, 1, C / H, T, prefix };
    return a;
}

static heads grouped(const float *qk, const float *v, float *dqk, float *dv, float *out, int b, int T, int H,
                     int KVH, int hd) {
    long ldqk = (long)(H + KVH) * hd, ldv = (long)KVH * hd, ldo = (long)H * hd;
    long oq = (long)b * T * ldqk, ov = (long)b * T * ldv;
    heads a = { qk + oq, qk + oq + (long)H * hd, v + ov, out + (long)b * T * ldo,
                dqk ? dqk + oq : NULL, dqk ? dqk + oq + (long)H * hd : NULL, dv ? dv + ov : NULL,
                ldqk, ldqk, ldv, ldo, H, H / KVH, hd, T, 0 };
    return a;
}

/* every (b, h) on its own: one strip buffer per thread */
#define FOR_HEADS_FWD(B, H, T, make, lse)                                          \
    _Pragma("omp parallel") {                                                      \
        float *s_ = malloc(sizeof(float) * STRIP * (size_t)(T));                   \
        _Pragma("omp for schedule(static)") for (int bh = 0; bh < (B) * (H); bh++) { \
            int b = bh / (H), h = bh % (H);                                        \
            heads a = make;                                                        \
            head_fwd(&a, h, (lse) + (long)bh * (T), s_);                           \
        }                                                                          \
        free(s_);                                                                  \
    }

void wf_attention_prefix_fwd(wf_ctx *c, float *out, float *att, const float *qkv, int B, int T, int C, int H,
                             int prefix) {
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        qkv = wf_stage16_in(&s, qkv, 3L * B * T * C);
        out = wf_stage16_out(&s, out, (long)B * T * C);
        wf_attention_prefix_fwd(c, out, att, qkv, B, T, C, H, prefix);
        wf_stage16_end(&s);
        return;
    }
    FOR_HEADS_FWD(B, H, T, packed(qkv, NULL, out, b, T, C, H, prefix), att);
    heads a0 = packed(qkv, NULL, out, 0, T, C, H, prefix);
    wf_gemm_stats_add(attention_flops(&a0, B));
}

void wf_attention_fwd(wf_ctx *c, float *out, float *att, const float *qkv, int B, int T, int C, int H) {
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        qkv = wf_stage16_in(&s, qkv, 3L * B * T * C);
        out = wf_stage16_out(&s, out, (long)B * T * C);
        wf_attention_fwd(c, out, att, qkv, B, T, C, H);
        wf_stage16_end(&s);
        return;
    }
    wf_attention_prefix_fwd(c, out, att, qkv, B, T, C, H, 0);
}

void wf_gqa_attention_fwd(wf_ctx *c, float *out, float *att, const float *qk, const float *v, int B, int T, int H,
                          int KVH, int hd) {
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        qk = wf_stage16_in(&s, qk, (long)B * T * (H + KVH) * hd);
        v = wf_stage16_in(&s, v, (long)B * T * KVH * hd);
        out = wf_stage16_out(&s, out, (long)B * T * H * hd);
        wf_gqa_attention_fwd(c, out, att, qk, v, B, T, H, KVH, hd);
        wf_stage16_end(&s);
        return;
    }
    FOR_HEADS_FWD(B, H, T, grouped(qk, v, NULL, NULL, out, b, T, H, KVH, hd), att);
    heads a0 = grouped(qk, v, NULL, NULL, out, 0, T, H, KVH, hd);
    wf_gemm_stats_add(attention_flops(&a0, B));
}

/* every (b, key/value head) on its own thread, its group's query heads in turn */
static void bwd_all(heads (*make)(const void *, int), const void *arg, const float *dout, long ldo_b,
                    const float *att, float *D, int B, int H, int KVH, int T) {
    int group = H / KVH;
#pragma omp parallel
    {
        float *p = malloc(sizeof(float) * 2 * STRIP * (size_t)T), *ds = p + STRIP * (size_t)T;
#pragma omp for schedule(static)
        for (int bk = 0; bk < B * KVH; bk++) {
            int b = bk / KVH, kvh = bk % KVH;
            heads a = make(arg, b);
            for (int h = kvh * group; h < (kvh + 1) * group; h++) {
                long r = ((long)b * H + h) * T;
                head_bwd(&a, h, dout + (long)b * ldo_b, att + r, D + r, p, ds);
            }
        }
        free(p);
    }
}

typedef struct { const float *x, *v, *out; float *dx, *dv; int T, C, H, KVH, hd, prefix; } bwd_args;

static heads make_packed(const void *arg, int b) {
    const bwd_args *g = arg;
    return packed(g->x, g->dx, (float *)g->out, b, g->T, g->C, g->H, g->prefix);
}

static heads make_grouped(const void *arg, int b) {
    const bwd_args *g = arg;
    return grouped(g->x, g->v, g->dx, g->dv, (float *)g->out, b, g->T, g->H, g->KVH, g->hd);
}

/* att: the forward's log-sum-exp; scratch: D, B*H*T floats */
void wf_attention_prefix_bwd(wf_ctx *c, float *dqkv, float *scratch, const float *dout, const float *qkv,
                             const float *out, const float *att, int B, int T, int C, int H, int prefix) {
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        dout = wf_stage16_in(&s, dout, (long)B * T * C);
        qkv = wf_stage16_in(&s, qkv, 3L * B * T * C);
        out = wf_stage16_in(&s, out, (long)B * T * C);
        dqkv = wf_stage16_acc(&s, dqkv, 3L * B * T * C);
        wf_attention_prefix_bwd(c, dqkv, scratch, dout, qkv, out, att, B, T, C, H, prefix);
        wf_stage16_end(&s);
        return;
    }
    bwd_args g = { qkv, NULL, out, dqkv, NULL, T, C, H, H, C / H, prefix };
    bwd_all(make_packed, &g, dout, (long)T * C, att, scratch, B, H, H, T);
    heads a0 = make_packed(&g, 0);
    wf_gemm_stats_add(2.5 * attention_flops(&a0, B));
}

void wf_attention_bwd(wf_ctx *c, float *dqkv, float *scratch, const float *dout, const float *qkv,
                      const float *out, const float *att, int B, int T, int C, int H) {
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        dout = wf_stage16_in(&s, dout, (long)B * T * C);
        qkv = wf_stage16_in(&s, qkv, 3L * B * T * C);
        out = wf_stage16_in(&s, out, (long)B * T * C);
        dqkv = wf_stage16_acc(&s, dqkv, 3L * B * T * C);
        wf_attention_bwd(c, dqkv, scratch, dout, qkv, out, att, B, T, C, H);
        wf_stage16_end(&s);
        return;
    }
    wf_attention_prefix_bwd(c, dqkv, scratch, dout, qkv, out, att, B, T, C, H, 0);
}

void wf_gqa_attention_bwd(wf_ctx *c, float *dqk, float *dv, float *scratch, const float *dout, const float *qk,
                          const float *v, const float *out, const float *att, int B, int T, int H, int KVH,
                          int hd) {
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        dout = wf_stage16_in(&s, dout, (long)B * T * H * hd);
        qk = wf_stage16_in(&s, qk, (long)B * T * (H + KVH) * hd);
        v = wf_stage16_in(&s, v, (long)B * T * KVH * hd);
        out = wf_stage16_in(&s, out, (long)B * T * H * hd);
        dqk = wf_stage16_acc(&s, dqk, (long)B * T * (H + KVH) * hd);
        dv = wf_stage16_acc(&s, dv, (long)B * T * KVH * hd);
        wf_gqa_attention_bwd(c, dqk, dv, scratch, dout, qk, v, out, att, B, T, H, KVH, hd);
        wf_stage16_end(&s);
        return;
    }
    bwd_args g = { qk, v, out, dqk, dv, T, 0, H, KVH, hd, 0 };
    bwd_all(make_grouped, &g, dout, (long)T * H * hd, att, scratch, B, H, KVH, T);
    heads a0 = make_grouped(&g, 0);
    wf_gemm_stats_add(2.5 * attention_flops(&a0, B));
}
