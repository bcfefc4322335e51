/* check_kernels.c: every kernel of weft/rt.h on the same random inputs, for
 * comparing the backends.  Built twice from this one file: against libweftrt
 * (check_kernels_cpu) and against libweftrt_cuda (check_kernels_cuda).
 *
 *   check_kernels run FILE           runs each kernel, writes its outputs to FILE
 *   check_kernels compare REF GOT    per kernel output: max |got - ref| / max |ref|,
 *                                    against the threshold; exit 1 if any is over
 *
 * Inputs come from a fixed-seed generator, so both programs see the same
 * numbers; gradient outputs start from random values, so the accumulate (+=)
 * contract is checked too.  The optimizer hooks (runtime/common/opt_backend.h:
 * AdamW, sum of squares, non-finite check) and the 16-bit rounding run here as
 * well.  Thresholds per output: fp32 1e-5; outputs whose name ends "[16-bit]"
 * (AdamW's rounded weights: a master one fp32 ulp apart may round to the next
 * 16-bit value; the bf16 / fp16 attention, whose CUDA kernels round P and dS)
 * 1e-2; "[exact]" (rounding, flags, counts) 0, compared bit by
 * bit, NaN payloads included.  Buffers come from the backend's own allocator
 * (CUDA: managed memory).  CUDA kernels are asynchronous: a launch returns
 * before the kernel has run, so the host waits for the device (settle)
 * before it reads a result. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_act16.h"
#include "convert16.h"
#include "kernels_tp.h"
#include "linear_gelu.h"
#include "opt_backend.h"
#include "weft/rt.h"

void *wf_backend_alloc(const wf_ctx *c, size_t bytes); /* runtime/common/internal.h */
void wf_backend_sync(wf_ctx *c);      /* the same: the host waits for the device */

static void settle(void) { wf_backend_sync(NULL); }
/* grad16's conversion hooks (the same header; CUDA: dp_comm.cu, grad16.cu) */
void wf_backend_to16(wf_ctx *c, void *dst, const float *src, long n);
void wf_backend_from16(wf_ctx *c, float *dst, const void *src, long n);
void wf_backend_from16_in_place(wf_ctx *c, float *x, long n);
void wf_backend_add16(wf_ctx *c, float *dst, const void *src, long n);
void wf_backend_add_into16(wf_ctx *c, void *dst, const float *src, long n);

/* A context carrying only a plan precision (runtime/common/precision_of.c;
 * the emulator's in tests/cuda_emu/emu_device.cc), for the kernels whose
 * CUDA arithmetic depends on it: the tensor-core attention. */
wf_ctx *wf_precision_ctx(int precision);

/* fp32 results of the same math in another order: the norm-relative error of
 * an output is bounded by a few units of 2^-24 times the reduction length.
 * The sizes below keep every reduction under 400 terms (attention: dot
 * products over head sizes up to 256, sums over at most 300 keys or 3 x 30
 * query rows; the fp32 attention cases measure 1-4e-7 on the emulator). */
#define THRESHOLD 1e-5
#define THRESHOLD_16BIT 1e-2

/* Shapes: small, but not multiples of each other or of a warp. */
enum { B = 2, T = 48, C = 96, H = 4, N = B * T, M = 4 * C, V = 301, VL = 150, V0 = 100 };

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float uniform(void) { /* in [-1, 1) */
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((rng >> 40) / 8388608.0 - 1.0);
}

static float *buf(long n) { /* random values */
    float *x = wf_backend_alloc(NULL, sizeof(float) * (size_t)n);
    if (!x) { fprintf(stderr, "check_kernels: out of memory\n"); exit(2); }
    for (long i = 0; i < n; i++) x[i] = uniform();
    return x;
}

static int32_t *tokens(long n, int vocab) {
    int32_t *t = wf_backend_alloc(NULL, sizeof(int32_t) * (size_t)n);
    if (!t) exit(2);
    for (long i = 0; i < n; i++) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        t[i] = (int32_t)((rng >> 33) % (uint64_t)vocab);
    }
    return t;
}

/* softmax-like rows (positive, summing to 1): as the LM head's probs */
static float *probs_rows(long rows, int width) {
    float *p = buf(rows * width);
    for (long r = 0; r < rows; r++) {
        double s = 0;
        for (int j = 0; j < width; j++) s += p[r * width + j] = expf(p[r * width + j]);
        for (int j = 0; j < width; j++) p[r * width + j] /= (float)s;
    }
    return p;
}

/* ---- output records: name, count, floats ---------------------------------- */

static FILE *out;

static void put(const char *kernel, const char *what, const float *x, long n) {
    char name[64] = { 0 };
    settle();  /* x may be a kernel's output still being written */
    snprintf(name, sizeof name, "%s %s", kernel, what);
    fwrite(name, 1, sizeof name, out);
    fwrite(&n, sizeof n, 1, out);
    fwrite(x, sizeof(float), (size_t)n, out);
}

/* the loss totals the kernels return, rounded to float */
static void put_double(const char *kernel, const char *what, double v) {
    float f = (float)v;
    put(kernel, what, &f, 1);
}

/* Causal attention on one shape.  att is state private to each backend
 * between forward and backward (the CPU keeps the (B, H, T, T) softmax
 * probabilities, CUDA's flash kernels a log-sum-exp per query row), so only
 * out and dqkv are compared; att and scratch are sized for either backend. */
static void attention_case(const char *tag, int b, int t, int c, int h) {
    long n = (long)b * t, rows = (long)b * h * t, tt = (long)t * t;
    float *qkv = buf(n * 3 * c), *o = buf(n * c), *dout = buf(n * c), *dqkv = buf(n * 3 * c);
    float *att = buf(rows * t), *scratch = buf(tt > rows ? tt : rows);
    char name[40];
    wf_attention_fwd(NULL, o, att, qkv, b, t, c, h);
    snprintf(name, sizeof name, "attention_fwd%s", tag);
    put(name, "out", o, n * c);
    wf_attention_bwd(NULL, dqkv, scratch, dout, qkv, o, att, b, t, c, h);
    snprintf(name, sizeof name, "attention_bwd%s", tag);
    put(name, "dqkv", dqkv, n * 3 * c);
}

/* Columns [col0, col0 + w) of each of n rows, ld apart, as a compact copy. */
static float *columns(const float *x, long n, long ld, long col0, long w) {
    float *y = buf(n * w);
    for (long i = 0; i < n; i++) memcpy(y + i * w, x + i * ld + col0, sizeof(float) * (size_t)w);
    return y;
}

/* Causal attention in a bf16 or fp16 plan: q, k, v and dout hold values of
 * the 16-bit type (the generated code rounds every op's output), so they are
 * rounded first; qkv doubled so the softmax is far from uniform (scores of
 * standard deviation about 1.3).  The CPU computes in fp32 on those inputs;
 * CUDA's tensor-core kernels round P and dS to the 16-bit type before their
 * products, hence the 16-bit threshold (1e-2 norm-relative), per gradient
 * (dq is much smaller than dv, and dqkv starts from 0 so the sums are not
 * hidden under the accumulate contract, which the fp32 cases check). */
static void attention_16bit_case(const char *tag, int precision, int b, int t, int c, int h, int misalign) {
    long n = (long)b * t, rows = (long)b * h * t, tt = (long)t * t;
    /* misalign: qkv and dout 4 bytes past the allocator's alignment (CUDA
     * loads them as float4 only where they are 16-byte aligned) */
    float *qkv = buf(n * 3 * c + misalign) + misalign, *o = buf(n * c);
    float *dout = buf(n * c + misalign) + misalign, *dqkv = buf(n * 3 * c);
    float *att = buf(rows * t), *scratch = buf(tt > rows ? tt : rows);
    for (long i = 0; i < n * 3 * c; i++) qkv[i] *= 2.0f;
    memset(dqkv, 0, sizeof(float) * (size_t)(n * 3 * c));
    wf_round_copy(precision, qkv, qkv, n * 3 * c);
    wf_round_copy(precision, dout, dout, n * c);
    wf_ctx *ctx = wf_precision_ctx(precision);
    char name[48];
    wf_attention_fwd(ctx, o, att, qkv, b, t, c, h);
    snprintf(name, sizeof name, "attention_fwd%s", tag);
    put(name, "out [16-bit]", o, n * c);
    wf_round_copy(precision, o, o, n * c); /* as the plan rounds it; CUDA's backward forms D from it */
    wf_attention_bwd(ctx, dqkv, scratch, dout, qkv, o, att, b, t, c, h);
    snprintf(name, sizeof name, "attention_bwd%s", tag);
    static const char *what[3] = { "dq [16-bit]", "dk [16-bit]", "dv [16-bit]" };
    settle();  /* columns() reads dqkv on the host */
    for (int part = 0; part < 3; part++) put(name, what[part], columns(dqkv, n, 3L * c, (long)part * c, c), n * c);
}

/* The fused classifier on rows much wider than a block (256 threads), of
 * VW columns: 5003 read one float at a time, 5004 as float4.  Row 0's logits
 * rise along the row, so each thread's running maximum grows at every
 * element it reads (CUDA's online softmax rescales its sum each time), row
 * 1's fall, the rest are random. */
static void xent_wide_rows(int VW) {
    enum { NW = 6, CW = 8 };
    float *x = buf((long)NW * CW), *wte = buf((long)VW * CW);
    float *dlogits = buf((long)NW * VW), *losses = buf(NW);
    int32_t *tgt = tokens(NW, VW);
    for (int k = 1; k < CW; k++) x[k] = x[CW + k] = 0.0f;
    x[0] = 1.0f;
    x[CW] = -1.0f;
    for (int j = 0; j < VW; j++) wte[(long)j * CW] = 8.0f * j / VW;
    double loss = wf_lmhead_xent_fwd(NULL, dlogits, losses, x, wte, tgt, 0.125f, NW, CW, VW);
    char name[40];
    snprintf(name, sizeof name, "lmhead_xent_fwd V=%d", VW);
    put(name, "dlogits", dlogits, (long)NW * VW);
    put(name, "losses", losses, NW);
    put_double(name, "loss sum", loss);
}

static void put16(const char *kernel, const char *what, int p, const float *arg, long n);

/* The fused, chunked head generated programs call (wf_lmhead_xent_chunked):
 * chunks of 40 rows over N = 96 (two whole, one of 16 rows).  The first
 * chunk's targets are all -1 (a VLM's image positions: the CPU skips that
 * chunk, CUDA computes its zero dlogits) and so is row 50's; dx and dwte
 * start from what they hold (+=).  c NULL: floats, the usual 1e-5; else c's
 * 16-bit storage (act16 on CUDA; the CPU's floats, rounded as its generated
 * code rounds dx): dx and the losses are 16-bit outputs, and dwte too, as
 * each backend rounds the dlogits it sums to 16 bits itself (where their
 * fp32 logits differ in the last bit, to neighbouring values). */
static void lmhead_chunked_case(wf_ctx *c, int p, const char *tag, float *dx, float *dwte, const float *x,
                                const float *wte, const int32_t *targets) {
    enum { CHUNK = 40 };
    int32_t *tgt = wf_backend_alloc(NULL, sizeof(int32_t) * N);
    for (int i = 0; i < N; i++) tgt[i] = i < CHUNK || i == 50 ? -1 : targets[i];
    float *scratch = buf((long)CHUNK * V), *losses = buf(N);
    char k[40];
    snprintf(k, sizeof k, "lmhead_xent_chunked%s", tag);
    double loss = wf_lmhead_xent_chunked(c, dx, dwte, losses, scratch, x, wte, tgt, 1.0f / N, N, C, V, CHUNK);
    if (!c) {
        put(k, "dx", dx, (long)N * C);
        put(k, "dwte", dwte, (long)V * C);
        put(k, "losses", losses, N);
        put_double(k, "loss sum", loss);
        return;
    }
    put16(k, "dx [16-bit]", p, dx, (long)N * C);
    put(k, "dwte [16-bit]", dwte, (long)V * C);
    put(k, "losses [16-bit]", losses, N);
    put_double(k, "loss sum [16-bit]", loss);
}

static void run_all(void) {
    /* embedding */
    int32_t *tok = tokens(N, V), *tgt = tokens(N, V);
    float *wte = buf((long)V * C), *wpe = buf((long)T * C), *x = buf((long)N * C);
    float *o = buf((long)N * C);
    wf_embed_fwd(NULL, o, tok, wte, wpe, B, T, C);
    put("embed_fwd", "out", o, (long)N * C);
    float *dwte = buf((long)V * C), *dwpe = buf((long)T * C), *dout = buf((long)N * C);
    wf_embed_bwd(NULL, dwte, dwpe, dout, tok, B, T, C);
    put("embed_bwd", "dwte", dwte, (long)V * C);
    put("embed_bwd", "dwpe", dwpe, (long)T * C);

    /* layernorm */
    float *w = buf(C), *b = buf(C), *mean = buf(N), *rstd = buf(N);
    wf_layernorm_fwd(NULL, o, mean, rstd, x, w, b, N, C);
    put("layernorm_fwd", "out", o, (long)N * C);
    put("layernorm_fwd", "mean", mean, N);
    put("layernorm_fwd", "rstd", rstd, N);
    float *dx = buf((long)N * C), *dw = buf(C), *db = buf(C);
    wf_layernorm_bwd(NULL, dx, dw, db, dout, x, w, mean, rstd, N, C);
    put("layernorm_bwd", "dinp", dx, (long)N * C);
    put("layernorm_bwd", "dw", dw, C);
    put("layernorm_bwd", "db", db, C);
    wf_layernorm_bwd_input(NULL, dx, dout, x, w, mean, rstd, N, C);
    put("layernorm_bwd_input", "dinp", dx, (long)N * C);
    wf_layernorm_bwd_weight(NULL, dw, db, dout, x, mean, rstd, N, C);
    put("layernorm_bwd_weight", "dw", dw, C);
    put("layernorm_bwd_weight", "db", db, C);

    /* linear (N, C) -> (N, M) */
    float *W = buf((long)C * M), *bias = buf(M), *y = buf((long)N * M), *dy = buf((long)N * M);
    float *dW = buf((long)C * M), *dbias = buf(M);
    wf_linear_fwd(NULL, y, x, W, bias, N, C, M);
    put("linear_fwd", "out", y, (long)N * M);
    wf_linear_fwd(NULL, y, x, W, NULL, N, C, M);
    put("linear_fwd", "out (no bias)", y, (long)N * M);
    wf_linear_bwd(NULL, dx, dW, dbias, dy, x, W, N, C, M);
    put("linear_bwd", "dinp", dx, (long)N * C);
    put("linear_bwd", "dw", dW, (long)C * M);
    put("linear_bwd", "db", dbias, M);
    wf_linear_bwd_input(NULL, dx, dy, W, N, C, M);
    put("linear_bwd_input", "dinp", dx, (long)N * C);
    wf_linear_bwd_weight(NULL, dW, NULL, dy, x, N, C, M);
    put("linear_bwd_weight", "dw (no bias)", dW, (long)C * M);

    /* fused linear + GELU, fp32 (c is NULL): on CUDA M = 4C (a multiple of
     * 8) takes cuBLASLt's GELU epilogue, MO (not one) the fallback, the bias
     * epilogue and the elementwise kernel */
    float *pre = buf((long)N * M), *dpre = buf((long)N * M);
    wf_linear_gelu_fwd(NULL, pre, y, x, W, bias, N, C, M);
    put("linear_gelu_fwd", "pre", pre, (long)N * M);
    put("linear_gelu_fwd", "out", y, (long)N * M);
    wf_linear_gelu_fwd(NULL, pre, y, x, W, NULL, N, C, M);
    put("linear_gelu_fwd", "out (no bias)", y, (long)N * M);
    enum { MO = 100 };
    wf_linear_gelu_fwd(NULL, pre, y, x, W, bias, N, C, MO);
    put("linear_gelu_fwd M=100", "pre", pre, (long)N * MO);
    put("linear_gelu_fwd M=100", "out", y, (long)N * MO);
    wf_linear_gelu_fwd(NULL, pre, y, x, W, bias, N, C, M);
    wf_linear_gelu_bwd_input(NULL, dx, dpre, dy, pre, W, N, C, M);
    put("linear_gelu_bwd_input", "dpre", dpre, (long)N * M);
    put("linear_gelu_bwd_input", "dinp", dx, (long)N * C);
    /* c_proj's input gradient with the gelu's backward, K = 4C (a multiple
     * of 8: on CUDA cuBLASLt's DGELU epilogue) and K = MO (the fallback: the
     * GEMM into dpre, then the kernel); dpre starts random: it is written,
     * not accumulated */
    float *dyc = buf((long)N * C);
    wf_linear_dgelu_bwd_input(NULL, dpre, dyc, pre, W, N, M, C);
    put("linear_dgelu_bwd_input", "dpre", dpre, (long)N * M);
    wf_linear_dgelu_bwd_input(NULL, dpre, dyc, pre, W, N, MO, C);
    put("linear_dgelu_bwd_input K=100", "dpre", dpre, (long)N * MO);
    /* the bf16 / fp16 path: the bias GEMM, then round pre, gelu, round out in
     * one kernel (and its backward); a value a few fp32 ulps off may round to
     * the next 16-bit one, hence the 16-bit threshold */
    static const int prec[2] = { WF_BF16, WF_FP16 };
    for (int k = 0; k < 2; k++) {
        char name[40];
        snprintf(name, sizeof name, "gelu_round_fwd %s", k ? "fp16" : "bf16");
        wf_linear_fwd(NULL, pre, x, W, bias, N, C, M);
        wf_gelu_round_fwd(NULL, prec[k], pre, y, (long)N * M);
        put(name, "pre [16-bit]", pre, (long)N * M);
        put(name, "out [16-bit]", y, (long)N * M);
        snprintf(name, sizeof name, "gelu_round_bwd %s", k ? "fp16" : "bf16");
        wf_gelu_round_bwd(NULL, prec[k], dpre, pre, dy, (long)N * M);
        put(name, "dpre [16-bit]", dpre, (long)N * M);
    }

    /* attention; then over several of CUDA's tiles (a tile is 4096 / HS rows,
     * HS the head size rounded up to 16, 32, 64 or 128; 16 rows at HS 192
     * and 256), T not a multiple of the tile, and head sizes (20; 160 and
     * 250, zero-padded to 192 and 256) that are not one of them */
    attention_case("", B, T, C, H);
    attention_case(" T=130 hs=20", 1, 130, 40, 2);
    attention_case(" T=300 hs=16", 1, 300, 32, 2);
    attention_case(" T=140 hs=64", 1, 140, 64, 1);
    attention_case(" T=70 hs=128", 1, 70, 128, 1);
    attention_case(" T=40 hs=160", 1, 40, 320, 2);
    attention_case(" T=35 hs=192", 1, 35, 192, 1);
    attention_case(" T=50 hs=256 B=2 H=2", 2, 50, 512, 2);
    attention_case(" T=20 hs=250", 1, 20, 250, 1);
    /* bf16 / fp16 plans: CUDA's tensor-core kernels (64-row tiles; head
     * sizes multiples of 16 up to 128, rounded up to 32, 64 or 128 inside):
     * GPT-2's head size over several tiles, T not a multiple of 64; 32, 48
     * (zero-padded to 64) and 128; fp16 on unaligned inputs; and a head size (20) that falls back
     * to the fp32 kernels */
    attention_16bit_case(" bf16 T=200 hs=64", WF_BF16, 1, 200, 128, 2, 0);
    attention_16bit_case(" bf16 T=100 hs=32", WF_BF16, 2, 100, 64, 2, 0);
    attention_16bit_case(" bf16 T=90 hs=128", WF_BF16, 1, 90, 128, 1, 0);
    attention_16bit_case(" bf16 T=70 hs=48", WF_BF16, 1, 70, 48, 1, 0);
    attention_16bit_case(" fp16 T=130 hs=64 misaligned", WF_FP16, 1, 130, 64, 1, 1);
    attention_16bit_case(" bf16 T=50 hs=20", WF_BF16, 1, 50, 40, 2, 0);
    /* head sizes over 128: the fp32 kernels on 16-bit values */
    attention_16bit_case(" bf16 T=40 hs=160", WF_BF16, 1, 40, 320, 2, 0);
    attention_16bit_case(" fp16 T=30 hs=256 misaligned", WF_FP16, 1, 30, 256, 1, 1);

    /* gelu, add */
    wf_gelu_fwd(NULL, y, dy, (long)N * M);
    put("gelu_fwd", "out", y, (long)N * M);
    float *dgin = buf((long)N * M);
    wf_gelu_bwd(NULL, dgin, y, dy, (long)N * M);
    put("gelu_bwd", "dinp", dgin, (long)N * M);
    /* the exact (erf) GELU on x in [-6, 6), its tails included; then on a
     * count and pointers the 16-byte path does not take (one element in,
     * N M - 3 values) */
    long ne = (long)N * M;
    float *xe = buf(ne), *ye = buf(ne), *dxe = buf(ne);
    for (long i = 0; i < ne; i++) xe[i] *= 6.0f;
    wf_gelu_erf_fwd(NULL, ye, xe, ne);
    put("gelu_erf_fwd", "out", ye, ne);
    wf_gelu_erf_bwd(NULL, dxe, xe, dy, ne);
    put("gelu_erf_bwd", "dinp", dxe, ne);
    wf_gelu_erf_fwd(NULL, ye + 1, xe + 1, ne - 3);
    put("gelu_erf_fwd unaligned", "out", ye + 1, ne - 3);
    wf_gelu_erf_bwd(NULL, dxe + 1, xe + 1, dy + 1, ne - 3);
    put("gelu_erf_bwd unaligned", "dinp", dxe + 1, ne - 3);
    float *a2 = buf((long)N * C);
    wf_add_fwd(NULL, o, x, a2, (long)N * C);
    put("add_fwd", "out", o, (long)N * C);
    float *da = buf((long)N * C), *da2 = buf((long)N * C);
    wf_add_bwd(NULL, da, da2, dout, (long)N * C);
    put("add_bwd", "da", da, (long)N * C);
    put("add_bwd", "db", da2, (long)N * C);

    /* tied LM head + cross-entropy: the forward writes dlogits */
    float *dlg = buf((long)N * V), *losses = buf(N);
    double loss = wf_lmhead_xent_fwd(NULL, dlg, losses, x, wte, tgt, 1.0f / N, N, C, V);
    put("lmhead_xent_fwd", "dlogits", dlg, (long)N * V);
    put("lmhead_xent_fwd", "losses", losses, N);
    put_double("lmhead_xent_fwd", "loss sum", loss);
    wf_lmhead_xent_bwd(NULL, dx, dwte, dlg, x, wte, N, C, V);
    put("lmhead_xent_bwd", "dx", dx, (long)N * C);
    put("lmhead_xent_bwd", "dwte", dwte, (long)V * C);
    lmhead_chunked_case(NULL, WF_FP32, "", dx, dwte, x, wte, tgt);
    xent_wide_rows(5003);
    xent_wide_rows(5004);
    float *pl = probs_rows(N, VL);
    wf_lmhead_xent_bwd_input(NULL, dx, pl, wte, N, C, VL);
    put("lmhead_xent_bwd_input", "dx", dx, (long)N * C);
    wf_lmhead_xent_bwd_weight(NULL, dwte, pl, x, N, C, VL);
    put("lmhead_xent_bwd_weight", "dwte", dwte, (long)VL * C);

    /* vocabulary-parallel embedding and cross-entropy pieces: rows [V0, V0+VL) */
    wf_vocab_embed_fwd(NULL, o, tok, wte, V0, VL, N, C);
    put("vocab_embed_fwd", "out", o, (long)N * C);
    wf_vocab_embed_bwd(NULL, dwte, dout, tok, V0, VL, N, C);
    put("vocab_embed_bwd", "dwte", dwte, (long)VL * C);
    int valid = VL - 20; /* the last 20 columns are vocabulary padding */
    float *logits = buf((long)N * VL), *rowmax = buf(N);
    double *stats = wf_backend_alloc(NULL, sizeof(double) * 2 * N);
    wf_vocab_logits(NULL, logits, rowmax, x, wte, N, C, VL, valid, WF_FP32);
    put("vocab_logits", "logits", logits, (long)N * VL);
    put("vocab_logits", "rowmax", rowmax, N);
    wf_vocab_exp(NULL, logits, stats, rowmax, tgt, N, VL, V0, valid);
    float *sf = buf(2 * N);
    settle();  /* stats is wf_vocab_exp's output */
    for (int i = 0; i < 2 * N; i++) sf[i] = (float)stats[i];
    put("vocab_exp", "stats", sf, 2 * N);
    loss = wf_vocab_dlogits(NULL, logits, losses, rowmax, stats, tgt, 0.25f, N, VL, V0, WF_FP32);
    put("vocab_dlogits", "dlogits", logits, (long)N * VL);
    put("vocab_dlogits", "losses", losses, N);
    put_double("vocab_dlogits", "loss sum", loss);
    wf_vocab_xent_bwd(NULL, dx, dwte, logits, x, wte, N, C, VL);
    put("vocab_xent_bwd", "dx", dx, (long)N * C);
    put("vocab_xent_bwd", "dwte", dwte, (long)VL * C);

    /* position and bias adds over rows [37, 37 + 50) of the microbatch */
    long row0 = 37;
    int rows = 50;
    wf_pos_add_fwd(NULL, o, x, wpe, row0, rows, T, C);
    put("pos_add_fwd", "out", o, (long)rows * C);
    wf_pos_add_bwd(NULL, dx, dwpe, dout, row0, rows, T, C);
    put("pos_add_bwd", "din", dx, (long)rows * C);
    put("pos_add_bwd", "dwpe", dwpe, (long)T * C);
    wf_pos_add_bwd_input(NULL, dx, dout, rows, C);
    put("pos_add_bwd_input", "din", dx, (long)rows * C);
    float *dlong = buf((long)(3 * T + 5) * C); /* more rows than positions: they wrap */
    wf_pos_add_bwd_weight(NULL, dwpe, dlong, row0, 3 * T + 5, T, C);
    put("pos_add_bwd_weight", "dwpe", dwpe, (long)T * C);
    wf_bias_add_fwd(NULL, y, dy, bias, N, M);
    put("bias_add_fwd", "out", y, (long)N * M);
    wf_bias_add_bwd(NULL, dgin, dbias, dy, N, M);
    put("bias_add_bwd", "din", dgin, (long)N * M);
    put("bias_add_bwd", "db", dbias, M);
    wf_bias_add_bwd_weight(NULL, dbias, dy, N, M);
    put("bias_add_bwd_weight", "db", dbias, M);
    /* column counts that CUDA's 32-column blocks do not divide (C and M do) */
    float *dwide = buf((long)N * V), *dbw = buf(V);
    wf_bias_add_bwd_weight(NULL, dbw, dwide, N, V);
    put("bias_add_bwd_weight", "db (301 columns)", dbw, V);
    wf_layernorm_bwd_weight(NULL, dw, db, dout, x, mean, rstd, N, 50);
    put("layernorm_bwd_weight", "dw (50 columns)", dw, 50);
    put("layernorm_bwd_weight", "db (50 columns)", db, 50);

    /* fused residual + layernorm: res = x + dout, then as the layernorm above
     * (fp32: c is NULL, so no 16-bit rounding inside) */
    float *res = buf((long)N * C), *dres = buf((long)N * C), *dln = buf((long)N * C);
    float *dres_a = buf((long)N * C), *dres_b = buf((long)N * C);
    wf_residual_layernorm_fwd(NULL, res, o, mean, rstd, x, dout, w, b, N, C);
    put("residual_layernorm_fwd", "res", res, (long)N * C);
    put("residual_layernorm_fwd", "out", o, (long)N * C);
    put("residual_layernorm_fwd", "mean", mean, N);
    put("residual_layernorm_fwd", "rstd", rstd, N);
    wf_residual_layernorm_bwd(NULL, dres_a, dres_b, dw, db, dres, dln, res, w, mean, rstd, N, C);
    put("residual_layernorm_bwd", "da", dres_a, (long)N * C);
    put("residual_layernorm_bwd", "db", dres_b, (long)N * C);
    put("residual_layernorm_bwd", "dw", dw, C);
    put("residual_layernorm_bwd", "dbias", db, C);
    wf_residual_layernorm_bwd_input(NULL, dres_a, dres_b, dres, dln, res, w, mean, rstd, N, C);
    put("residual_layernorm_bwd_input", "da", dres_a, (long)N * C);
    put("residual_layernorm_bwd_input", "db", dres_b, (long)N * C);

    /* more tensor-core attention edges: T an exact multiple of 64 over
     * batches and heads (no padded rows), fp16 at head size 128, and T under
     * 16 (three of the tile's four warps hold only padded rows) */
    attention_16bit_case(" fp16 T=128 hs=64 B=2 H=2", WF_FP16, 2, 128, 128, 2, 0);
    attention_16bit_case(" fp16 T=70 hs=128", WF_FP16, 1, 70, 128, 1, 0);
    attention_16bit_case(" bf16 T=5 hs=16", WF_BF16, 1, 5, 32, 2, 0);
}

/* A VLM's kernels (runtime/cpu/vision.c, attention.c): the patch
 * embedding of random uint8 images (P patches, then text rows the kernel
 * zeroes), the image / text hand-off, and attention bidirectional over a
 * prefix (att and scratch private to each backend, as attention_case's). */
static void vision_case(const char *tag, int b, int t, int ih, int iw, int ch, int p, int d, int h, int prefix) {
    long n = (long)b * t, P = (long)(ih / p) * (iw / p), K = (long)ch * p * p, rows = (long)b * h * t;
    long tt = (long)t * t;
    uint8_t *img = wf_backend_alloc(NULL, (size_t)b * ih * iw * ch);
    if (!img) exit(2);
    for (long i = 0; i < (long)b * ih * iw * ch; i++) img[i] = (uint8_t)((uniform() + 1.0f) * 127.9f);
    float *w = buf((long)d * K), *pos = buf(P * d), *o = buf(n * d), *dout = buf(n * d);
    float *dw = buf((long)d * K), *dpos = buf(P * d), *scratch = buf(K * P > tt ? (K * P > rows ? K * P : rows) : (tt > rows ? tt : rows));
    char name[48];
    wf_patch_embed_fwd(NULL, o, scratch, img, w, pos, b, t, ih, iw, ch, p, d);
    snprintf(name, sizeof name, "patch_embed_fwd%s", tag);
    put(name, "out", o, n * d);
    wf_patch_embed_bwd(NULL, dw, dpos, scratch, dout, img, b, t, ih, iw, ch, p, d);
    snprintf(name, sizeof name, "patch_embed_bwd%s", tag);
    put(name, "dw", dw, (long)d * K);
    put(name, "dpos", dpos, P * d);
    float *text = buf(n * d), *dtext = buf(n * d), *dimage = buf(n * d);
    wf_image_merge_fwd(NULL, o, text, dout, b, t, (int)P, d);
    snprintf(name, sizeof name, "image_merge_fwd%s", tag);
    put(name, "out", o, n * d);
    wf_image_merge_bwd(NULL, dtext, dimage, dout, b, t, (int)P, d);
    snprintf(name, sizeof name, "image_merge_bwd%s", tag);
    put(name, "dtext", dtext, n * d);
    put(name, "dimage", dimage, n * d);
    /* sequence parallelism's row kernels on three slices of the B*T rows,
     * cut inside samples (n / 3 + 1 and 2n / 3 + 1): each slice's out,
     * text, image and their gradients hold its rows only; dw and dpos sum
     * over the slices */
    long cut[4] = { 0, n / 3 + 1, 2 * n / 3 + 1, n };
    for (int s = 0; s < 3; s++) {
        long r0 = cut[s], nr = cut[s + 1] - r0;
        wf_patch_embed_rows_fwd(NULL, o + r0 * d, scratch, img, w, pos, r0, nr, t, ih, iw, ch, p, d);
    }
    snprintf(name, sizeof name, "patch_embed_rows_fwd%s", tag);
    put(name, "out", o, n * d);
    for (int s = 0; s < 3; s++) {
        long r0 = cut[s], nr = cut[s + 1] - r0;
        wf_patch_embed_rows_bwd(NULL, dw, dpos, scratch, dout + r0 * d, img, r0, nr, t, ih, iw, ch, p, d);
    }
    snprintf(name, sizeof name, "patch_embed_rows_bwd%s", tag);
    put(name, "dw", dw, (long)d * K);
    put(name, "dpos", dpos, P * d);
    for (int s = 0; s < 3; s++) {
        long r0 = cut[s], nr = cut[s + 1] - r0;
        wf_image_merge_rows_fwd(NULL, o + r0 * d, text + r0 * d, dout + r0 * d, r0, nr, t, (int)P, d);
    }
    snprintf(name, sizeof name, "image_merge_rows_fwd%s", tag);
    put(name, "out", o, n * d);
    for (int s = 0; s < 3; s++) {
        long r0 = cut[s], nr = cut[s + 1] - r0;
        wf_image_merge_rows_bwd(NULL, dtext + r0 * d, dimage + r0 * d, dout + r0 * d, r0, nr, t, (int)P, d);
    }
    snprintf(name, sizeof name, "image_merge_rows_bwd%s", tag);
    put(name, "dtext", dtext, n * d);
    put(name, "dimage", dimage, n * d);
    float *qkv = buf(n * 3 * d), *ao = buf(n * d), *dqkv = buf(n * 3 * d), *att = buf(rows * t);
    wf_attention_prefix_fwd(NULL, ao, att, qkv, b, t, d, h, prefix);
    snprintf(name, sizeof name, "attention_prefix_fwd%s", tag);
    put(name, "out", ao, n * d);
    wf_attention_prefix_bwd(NULL, dqkv, scratch, dout, qkv, ao, att, b, t, d, h, prefix);
    snprintf(name, sizeof name, "attention_prefix_bwd%s", tag);
    put(name, "dqkv", dqkv, n * 3 * d);
}

/* Grouped-query causal attention on one shape: H query heads, KVH key/value
 * heads, head size hd; qk rows hold the H query heads then the KVH key heads,
 * v rows the KVH value heads.  As attention_case, att and scratch are each
 * backend's private state (sized for either), so out, dqk and dv are
 * compared; the gradients start random (the += contract). */
static void gqa_case(const char *tag, int b, int t, int h, int kvh, int hd) {
    long n = (long)b * t, rows = (long)b * h * t, tt = (long)t * t;
    long wqk = (long)(h + kvh) * hd, wv = (long)kvh * hd, wo = (long)h * hd;
    float *qk = buf(n * wqk), *v = buf(n * wv), *o = buf(n * wo), *dout = buf(n * wo);
    float *dqk = buf(n * wqk), *dv = buf(n * wv);
    float *att = buf(rows * t), *scratch = buf(tt > rows ? tt : rows);
    char name[48];
    wf_gqa_attention_fwd(NULL, o, att, qk, v, b, t, h, kvh, hd);
    snprintf(name, sizeof name, "gqa_attention_fwd%s", tag);
    put(name, "out", o, n * wo);
    wf_gqa_attention_bwd(NULL, dqk, dv, scratch, dout, qk, v, o, att, b, t, h, kvh, hd);
    snprintf(name, sizeof name, "gqa_attention_bwd%s", tag);
    put(name, "dqk", dqk, n * wqk);
    put(name, "dv", dv, n * wv);
}

/* Grouped-query attention in a bf16 or fp16 plan, as attention_16bit_case:
 * inputs rounded to the 16-bit type (q and k doubled first), gradients from
 * 0, the 16-bit threshold (CUDA's tensor-core kernels round P and dS); dq and
 * dk (the two column ranges of dqk) compared apart. */
static void gqa_16bit_case(const char *tag, int precision, int b, int t, int h, int kvh, int hd, int misalign) {
    long n = (long)b * t, rows = (long)b * h * t, tt = (long)t * t;
    long wq = (long)h * hd, wqk = (long)(h + kvh) * hd, wv = (long)kvh * hd;
    float *qk = buf(n * wqk + misalign) + misalign, *v = buf(n * wv + misalign) + misalign;
    float *dout = buf(n * wq + misalign) + misalign, *o = buf(n * wq);
    float *dqk = buf(n * wqk), *dv = buf(n * wv);
    float *att = buf(rows * t), *scratch = buf(tt > rows ? tt : rows);
    for (long i = 0; i < n * wqk; i++) qk[i] *= 2.0f;
    memset(dqk, 0, sizeof(float) * (size_t)(n * wqk));
    memset(dv, 0, sizeof(float) * (size_t)(n * wv));
    wf_round_copy(precision, qk, qk, n * wqk);
    wf_round_copy(precision, v, v, n * wv);
    wf_round_copy(precision, dout, dout, n * wq);
    wf_ctx *ctx = wf_precision_ctx(precision);
    char name[48];
    wf_gqa_attention_fwd(ctx, o, att, qk, v, b, t, h, kvh, hd);
    snprintf(name, sizeof name, "gqa_attention_fwd%s", tag);
    put(name, "out [16-bit]", o, n * wq);
    wf_round_copy(precision, o, o, n * wq); /* as the plan rounds it */
    wf_gqa_attention_bwd(ctx, dqk, dv, scratch, dout, qk, v, o, att, b, t, h, kvh, hd);
    snprintf(name, sizeof name, "gqa_attention_bwd%s", tag);
    settle();  /* columns() reads dqk on the host */
    put(name, "dq [16-bit]", columns(dqk, n, wqk, 0, wq), n * wq);
    put(name, "dk [16-bit]", columns(dqk, n, wqk, wq, wv), n * wv);
    put(name, "dv [16-bit]", dv, n * wv);
}

/* RoPE as the generated code calls it: the query heads from a (N, H*hd)
 * tensor and the key heads from a (N, KVH*hd) one into one (N, (H+KVH)*hd)
 * row, then backward from that row into both (accumulating). */
static void rope_case(const char *tag, int n, int t, int h, int kvh, int hd, float theta) {
    long wq = (long)h * hd, wk = (long)kvh * hd, wqk = wq + wk;
    float *q = buf(n * wq), *k = buf(n * wk), *qk = buf(n * wqk), *dqk = buf(n * wqk);
    float *dq = buf(n * wq), *dk = buf(n * wk);
    char name[48];
    wf_rope_fwd(NULL, qk, (int)wqk, q, (int)wq, n, t, h, hd, theta);
    wf_rope_fwd(NULL, qk + wq, (int)wqk, k, (int)wk, n, t, kvh, hd, theta);
    snprintf(name, sizeof name, "rope_fwd%s", tag);
    put(name, "qk", qk, n * wqk);
    wf_rope_bwd(NULL, dq, (int)wq, dqk, (int)wqk, n, t, h, hd, theta);
    wf_rope_bwd(NULL, dk, (int)wk, dqk + wq, (int)wqk, n, t, kvh, hd, theta);
    snprintf(name, sizeof name, "rope_bwd%s", tag);
    put(name, "dq", dq, n * wq);
    put(name, "dk", dk, n * wk);
}

/* The LLaMA family's kernels (runtime/cpu/ and runtime/cuda/, llama.* 
 * and attention.*): RMSNorm on C and on an odd width, RoPE with positions
 * wrapping at T, SwiGLU on a length no block size divides, grouped-query
 * attention over several of CUDA's tiles, groups of 1, 2, 3 and 4 query heads
 * per key/value head, head sizes that are not 16, 32, 64 or 128, and head
 * sizes over 128 (160, padded to 192; 256). */
static void run_llama(void) {
    static const int widths[2] = { C, 77 };
    for (int k = 0; k < 2; k++) {
        int cw = widths[k];
        char name[48];
        float *x = buf((long)N * cw), *w = buf(cw), *y = buf((long)N * cw), *rstd = buf(N);
        float *dout = buf((long)N * cw), *dx = buf((long)N * cw), *dw = buf(cw);
        snprintf(name, sizeof name, "rmsnorm_fwd C=%d", cw);
        wf_rmsnorm_fwd(NULL, y, rstd, x, w, N, cw, 1e-5f);
        put(name, "out", y, (long)N * cw);
        put(name, "rstd", rstd, N);
        snprintf(name, sizeof name, "rmsnorm_bwd C=%d", cw);
        wf_rmsnorm_bwd(NULL, dx, dw, dout, x, w, rstd, N, cw);
        put(name, "dinp", dx, (long)N * cw);
        put(name, "dw", dw, cw);
        snprintf(name, sizeof name, "rmsnorm_bwd_input C=%d", cw);
        wf_rmsnorm_bwd_input(NULL, dx, dout, x, w, rstd, N, cw);
        put(name, "dinp", dx, (long)N * cw);
        snprintf(name, sizeof name, "rmsnorm_bwd_weight C=%d", cw);
        wf_rmsnorm_bwd_weight(NULL, dw, dout, x, rstd, N, cw);
        put(name, "dw", dw, cw);
    }

    rope_case(" hd=16", N, T, 4, 2, 16, 10000.0f);
    rope_case(" hd=10 theta=500", N, T, 3, 1, 10, 500.0f);

    long ns = (long)N * M + 13;
    float *gate = buf(ns), *up = buf(ns), *o = buf(ns), *dout = buf(ns), *dgate = buf(ns), *dup = buf(ns);
    for (long i = 0; i < ns; i++) gate[i] *= 6.0f;  /* both tails of the sigmoid */
    wf_swiglu_fwd(NULL, o, gate, up, ns);
    put("swiglu_fwd", "out", o, ns);
    wf_swiglu_bwd(NULL, dgate, dup, gate, up, dout, ns);
    put("swiglu_bwd", "dgate", dgate, ns);
    put("swiglu_bwd", "dup", dup, ns);

    gqa_case("", B, T, 4, 2, 24);
    gqa_case(" T=130 hd=20 group=3", 1, 130, 6, 2, 20);
    gqa_case(" T=300 hd=16 group=2", 1, 300, 2, 1, 16);
    gqa_case(" T=140 hd=64 group=4", 2, 140, 4, 1, 64);
    gqa_case(" T=70 hd=128 group=1", 1, 70, 2, 2, 128);
    gqa_case(" T=40 hd=160 group=2", 1, 40, 4, 2, 160);
    gqa_case(" T=30 hd=256 group=3", 1, 30, 3, 1, 256);
    /* bf16 / fp16 plans: the tensor-core kernels (64-row tiles) with groups
     * of 2 and 3 over several tiles, head sizes 32, 64 and 48 (zero-padded),
     * fp16 on unaligned inputs; head size 20 falls back to the fp32 kernels */
    gqa_16bit_case(" bf16 T=200 hd=64 group=2", WF_BF16, 1, 200, 4, 2, 64, 0);
    gqa_16bit_case(" bf16 T=100 hd=32 group=3", WF_BF16, 2, 100, 6, 2, 32, 0);
    gqa_16bit_case(" bf16 T=70 hd=48 group=4", WF_BF16, 1, 70, 4, 1, 48, 0);
    gqa_16bit_case(" fp16 T=130 hd=64 misaligned", WF_FP16, 1, 130, 2, 1, 64, 1);
    gqa_16bit_case(" bf16 T=50 hd=20 group=2", WF_BF16, 1, 50, 4, 2, 20, 0);
}

/* ---- 16-bit activation storage: the GEMM kernels ---------------------------- */

/* x moved by n activation elements (16-bit ones in the packed build) */
static float *act16_at(float *x, long n) {
#ifdef CHECK_ACT16_PACKED
    return (float *)((uint16_t *)x + n);
#else
    return x + n;
#endif
}

/* n random values as a 16-bit activation argument (scaled by k) */
static float *act16_buf(int p, long n, float k) {
    float *x = buf(n);
    for (long i = 0; i < n; i++) x[i] *= k;
    return act16_in(p, x, n);
}

/* a 16-bit activation argument's n values, as put() takes them */
static void put16(const char *kernel, const char *what, int p, const float *arg, long n) {
    float *x = malloc(sizeof(float) * (size_t)(n ? n : 1));
    if (!x) exit(2);
    act16_out(p, x, arg, n);
    put(kernel, what, x, n);
    free(x);
}

/* n random values of the 16-bit type, as floats: a parameter of a bf16 /
 * fp16 plan (weights and biases hold rounded values) */
static float *gemm16_param(int precision, long n) {
    float *x = buf(n);
    for (long i = 0; i < n; i++) x[i] = act16_round(precision, x[i]);
    return x;
}

/* A VLM's kernels under act16 (runtime/cuda/vision.cu's 16-bit storage
 * against the CPU's floats rounded as its staging rounds them): the patch
 * embedding and the hand-off whole and on two slices of the rows, and the
 * prefix attention with head size 40 (two of the CUDA kernels' 32-value
 * chunks).  Parameters are rounded values, as a bf16 / fp16 plan's; the
 * gradients start from random 16-bit values (the += contract).  A patch
 * embedding's and the attention's 16-bit outputs are sums the backends add
 * in other orders, so they may round to the neighbouring value: "[16-bit]";
 * the hand-off copies and adds one value to another (both exact up to the
 * one rounding): 1e-5; dw and dpos are float sums of 16-bit values: 1e-5. */
static void vision_act16_case(int pr) {
    const char *tag = pr == WF_BF16 ? "bf16" : "fp16";
    wf_ctx *c = act16_ctx(pr);
    int b = 2, t = 24, ih = 32, iw = 32, ch = 3, p = 8, d = 80, h = 2, prefix = 16;
    long n = (long)b * t, P = (long)(ih / p) * (iw / p), K = (long)ch * p * p, rows = (long)b * h * t;
    uint8_t *img = wf_backend_alloc(NULL, (size_t)b * ih * iw * ch);
    if (!img) exit(2);
    for (long i = 0; i < (long)b * ih * iw * ch; i++) img[i] = (uint8_t)((uniform() + 1.0f) * 127.9f);
    float *w = gemm16_param(pr, (long)d * K), *pos = gemm16_param(pr, P * d);
    float *dw = buf((long)d * K), *dpos = buf(P * d), *scratch = buf(K * P > rows ? K * P : rows);
    float *o = act16_buf(pr, n * d, 1.0f), *dout = act16_buf(pr, n * d, 1.0f), *text = act16_buf(pr, n * d, 1.0f);
    float *dtext = act16_buf(pr, n * d, 1.0f), *dimage = act16_buf(pr, n * d, 1.0f);
    char k[64];
    snprintf(k, sizeof k, "patch_embed_fwd %s act16", tag);
    wf_patch_embed_fwd(c, o, scratch, img, w, pos, b, t, ih, iw, ch, p, d);
    put16(k, "out [16-bit]", pr, o, n * d);
    snprintf(k, sizeof k, "patch_embed_bwd %s act16", tag);
    wf_patch_embed_bwd(c, dw, dpos, scratch, dout, img, b, t, ih, iw, ch, p, d);
    put(k, "dw", dw, (long)d * K);
    put(k, "dpos", dpos, P * d);
    snprintf(k, sizeof k, "image_merge_fwd %s act16", tag);
    wf_image_merge_fwd(c, o, text, dout, b, t, (int)P, d);
    put16(k, "out", pr, o, n * d);
    snprintf(k, sizeof k, "image_merge_bwd %s act16", tag);
    wf_image_merge_bwd(c, dtext, dimage, dout, b, t, (int)P, d);
    put16(k, "dtext", pr, dtext, n * d);
    put16(k, "dimage", pr, dimage, n * d);
    /* the rows kernels on two slices cut inside a sample (row 13) */
    long cut[3] = { 0, 13, n };
    float *ro = act16_buf(pr, n * d, 1.0f), *rdt = act16_buf(pr, n * d, 1.0f), *rdi = act16_buf(pr, n * d, 1.0f);
    for (int sl = 0; sl < 2; sl++) {
        long r0 = cut[sl], nr = cut[sl + 1] - r0;
        wf_patch_embed_rows_fwd(c, act16_at(ro, r0 * d), scratch, img, w, pos, r0, nr, t, ih, iw, ch, p, d);
        wf_patch_embed_rows_bwd(c, dw, dpos, scratch, act16_at(dout, r0 * d), img, r0, nr, t, ih, iw, ch, p, d);
    }
    snprintf(k, sizeof k, "patch_embed_rows_fwd %s act16", tag);
    put16(k, "out [16-bit]", pr, ro, n * d);
    snprintf(k, sizeof k, "patch_embed_rows_bwd %s act16", tag);
    put(k, "dw", dw, (long)d * K);
    put(k, "dpos", dpos, P * d);
    for (int sl = 0; sl < 2; sl++) {
        long r0 = cut[sl], nr = cut[sl + 1] - r0;
        wf_image_merge_rows_fwd(c, act16_at(ro, r0 * d), act16_at(text, r0 * d), act16_at(dout, r0 * d), r0, nr, t,
                                (int)P, d);
        wf_image_merge_rows_bwd(c, act16_at(rdt, r0 * d), act16_at(rdi, r0 * d), act16_at(dout, r0 * d), r0, nr, t,
                                (int)P, d);
    }
    snprintf(k, sizeof k, "image_merge_rows %s act16", tag);
    put16(k, "out", pr, ro, n * d);
    put16(k, "dtext", pr, rdt, n * d);
    put16(k, "dimage", pr, rdi, n * d);
    float *qkv = act16_buf(pr, n * 3 * d, 1.0f), *dqkv = act16_buf(pr, n * 3 * d, 1.0f), *att = buf(rows * t);
    snprintf(k, sizeof k, "attention_prefix_fwd %s act16", tag);
    wf_attention_prefix_fwd(c, o, att, qkv, b, t, d, h, prefix);
    put16(k, "out [16-bit]", pr, o, n * d);
    /* the backward reads the forward's out as each backend stored it: give
     * both the same (the CPU's rounded floats packed) */
    float *oh = malloc(sizeof(float) * (size_t)(n * d));
    if (!oh) exit(2);
    act16_out(pr, oh, o, n * d);
    float *o16 = act16_in(pr, oh, n * d);
    snprintf(k, sizeof k, "attention_prefix_bwd %s act16", tag);
    wf_attention_prefix_bwd(c, dqkv, scratch, dout, qkv, o16, att, b, t, d, h, prefix);
    put16(k, "dqkv [16-bit]", pr, dqkv, n * 3 * d);
    free(oh);
}

/* The linear layers and the LM head under act16: inputs and 16-bit
 * gradients random rounded values (the += contract), weights rounded.
 * Each call accumulates into a fresh 16-bit gradient (act16_buf): the CPU
 * build rounds only the copy act16_out reads, so a second call on the same
 * buffer would start there from the unrounded sum.
 * "[16-bit]": a 16-bit output, which may round to the neighbouring value
 * where the two backends' fp32 sums differ in the last bit.  Float outputs
 * (dw, db, dwte) come from exact products of 16-bit values summed in fp32,
 * as the CPU's, so they keep 1e-5.  The LM head's dlogits are 16-bit
 * storage too; its losses come from the 16-bit logits, which (like any
 * 16-bit output) may round differently where the fp32 sums differ: "[16-bit]".
 * Its backward reads 16-bit dlogits given here (the same on both backends),
 * not the forward's. */
static void gemm_act16_case(int p) {
    wf_ctx *c = act16_ctx(p);
    const char *tag = p == WF_BF16 ? "bf16" : "fp16";
    long nx = (long)N * C, ny = (long)N * M;
    char k[48];
    float *W = gemm16_param(p, (long)C * M), *bias = gemm16_param(p, M);
    float *x = act16_in(p, buf(nx), nx), *y = act16_in(p, buf(ny), ny);
    float *dy = act16_in(p, buf(ny), ny), *dx = act16_buf(p, nx, 1.0f);
    float *dW = buf((long)C * M), *db = buf(M);

    snprintf(k, sizeof k, "linear_fwd %s act16", tag);
    wf_linear_fwd(c, y, x, W, bias, N, C, M);
    put16(k, "out [16-bit]", p, y, ny);
    wf_linear_fwd(c, y, x, W, NULL, N, C, M);
    put16(k, "out (no bias) [16-bit]", p, y, ny);
    snprintf(k, sizeof k, "linear_bwd %s act16", tag);
    wf_linear_bwd(c, dx, dW, db, dy, x, W, N, C, M);
    put16(k, "dinp [16-bit]", p, dx, nx);
    put(k, "dw", dW, (long)C * M);
    put(k, "db", db, M);
    snprintf(k, sizeof k, "linear_bwd_input %s act16", tag);
    dx = act16_buf(p, nx, 1.0f);
    wf_linear_bwd_input(c, dx, dy, W, N, C, M);
    put16(k, "dinp [16-bit]", p, dx, nx);
    snprintf(k, sizeof k, "linear_bwd_weight %s act16", tag);
    wf_linear_bwd_weight(c, dW, db, dy, x, N, C, M);
    put(k, "dw", dW, (long)C * M);
    put(k, "db", db, M);
    wf_linear_bwd_weight(c, dW, NULL, dy, x, N, C, M);
    put(k, "dw (no bias)", dW, (long)C * M);

    /* fused linear + GELU: the bias GEMM into 16-bit pre, the gelu kernel */
    float *pre = act16_in(p, buf(ny), ny), *dpre = act16_buf(p, ny, 1.0f);
    snprintf(k, sizeof k, "linear_gelu_fwd %s act16", tag);
    wf_linear_gelu_fwd(c, pre, y, x, W, bias, N, C, M);
    put16(k, "pre [16-bit]", p, pre, ny);
    put16(k, "out [16-bit]", p, y, ny);
    snprintf(k, sizeof k, "linear_gelu_bwd_input %s act16", tag);
    dx = act16_buf(p, nx, 1.0f);
    wf_linear_gelu_bwd_input(c, dx, dpre, dy, pre, W, N, C, M);
    put16(k, "dpre [16-bit]", p, dpre, ny);
    put16(k, "dinp [16-bit]", p, dx, nx);
    /* c_proj's input gradient with the gelu's backward: K = 4C takes the
     * DGELU epilogue (the 16-bit D rounded once, after gelu'), K = 100 the
     * fallback (the GEMM into a float buffer, then the kernel); dpre random
     * before: written, not accumulated */
    float *dyc = act16_in(p, buf(nx), nx);
    snprintf(k, sizeof k, "linear_dgelu_bwd_input %s act16", tag);
    dpre = act16_buf(p, ny, 1.0f);
    wf_linear_dgelu_bwd_input(c, dpre, dyc, pre, W, N, M, C);
    put16(k, "dpre [16-bit]", p, dpre, ny);
    snprintf(k, sizeof k, "linear_dgelu_bwd_input K=100 %s act16", tag);
    wf_linear_dgelu_bwd_input(c, dpre, dyc, pre, W, N, 100, C);
    put16(k, "dpre [16-bit]", p, dpre, (long)N * 100);
    /* the same where a 16-bit plan keeps float activations: on CUDA the
     * FAST_16BF / 16F GEMM into dpre, then the kernel rounds it in place
     * (wf_dgelu_round; NF rows: the emulator's time) */
    enum { NF = N / 4 };
    float *dyf = gemm16_param(p, (long)NF * C), *pref = gemm16_param(p, (long)NF * M), *dpref = buf((long)NF * M);
    snprintf(k, sizeof k, "linear_dgelu_bwd_input %s floats", tag);
    wf_linear_dgelu_bwd_input(wf_storage_ctx(p, 0), dpref, dyf, pref, W, NF, M, C);
    put(k, "dpre [16-bit]", dpref, (long)NF * M);

    /* tied LM head + cross-entropy */
    int32_t *tgt = tokens(N, V);
    float *wte = gemm16_param(p, (long)V * C), *dwte = buf((long)V * C);
    long nl = (long)N * V;
    float *dlg = act16_in(p, buf(nl), nl), *losses = buf(N);
    snprintf(k, sizeof k, "lmhead_xent_fwd %s act16", tag);
    double loss = wf_lmhead_xent_fwd(c, dlg, losses, x, wte, tgt, 1.0f / N, N, C, V);
    put16(k, "dlogits [16-bit]", p, dlg, nl);
    put(k, "losses [16-bit]", losses, N);
    put_double(k, "loss sum [16-bit]", loss);
    snprintf(k, sizeof k, "lmhead_xent_bwd %s act16", tag);
    dx = act16_buf(p, nx, 1.0f);
    wf_lmhead_xent_bwd(c, dx, dwte, act16_in(p, probs_rows(N, V), nl), x, wte, N, C, V);
    put16(k, "dx [16-bit]", p, dx, nx);
    put(k, "dwte", dwte, (long)V * C);
    float *pl = act16_in(p, probs_rows(N, VL), (long)N * VL);
    snprintf(k, sizeof k, "lmhead_xent_bwd_input %s act16", tag);
    dx = act16_buf(p, nx, 1.0f);
    wf_lmhead_xent_bwd_input(c, dx, pl, wte, N, C, VL);
    put16(k, "dx [16-bit]", p, dx, nx);
    snprintf(k, sizeof k, "lmhead_xent_bwd_weight %s act16", tag);
    wf_lmhead_xent_bwd_weight(c, dwte, pl, x, N, C, VL);
    put(k, "dwte", dwte, (long)VL * C);
    snprintf(k, sizeof k, " %s act16", tag);
    lmhead_chunked_case(c, p, k, act16_buf(p, nx, 1.0f), dwte, x, wte, tgt);
}

/* n random multiples of 1/16 in [-1, 1]: five significant bits, exact in
 * either 16-bit type */
static float *gemm16_grid(long n) {
    float *x = buf(n);
    for (long i = 0; i < n; i++) x[i] = roundf(x[i] * 16.0f) / 16.0f;
    return x;
}

/* The rounding of a GEMM's 16-bit output, bit for bit: on multiples of 1/16
 * every product is a multiple of 2^-8 and every sum below 2^9 (K and M at
 * most 384 terms), so each backend's fp32 sum is exact in any order, and
 * the stored value is that sum rounded to nearest even (ties occur) in
 * both, or the comparison shows which rounds otherwise. */
static void gemm_act16_exact_case(int p) {
    wf_ctx *c = act16_ctx(p);
    const char *tag = p == WF_BF16 ? "bf16" : "fp16";
    long nx = (long)N * C, ny = (long)N * M;
    char k[48];
    float *W = gemm16_grid((long)C * M), *bias = gemm16_grid(M);
    float *x = act16_in(p, gemm16_grid(nx), nx), *y = act16_in(p, buf(ny), ny);
    float *dy = act16_in(p, gemm16_grid(ny), ny), *dx = act16_in(p, gemm16_grid(nx), nx);
    snprintf(k, sizeof k, "linear_fwd %s act16 grid", tag);
    wf_linear_fwd(c, y, x, W, bias, N, C, M);
    put16(k, "out [exact]", p, y, ny);
    snprintf(k, sizeof k, "linear_bwd_input %s act16 grid", tag);
    wf_linear_bwd_input(c, dx, dy, W, N, C, M);
    put16(k, "dinp [exact]", p, dx, nx);
}

static float *gemm16_grid(long n);

/* How many of the n values are not values of the 16-bit type: 0 where a
 * kernel rounds them (a float count, compared "[exact]"). */
static float count_unrounded(int precision, const float *x, long n) {
    settle();
    long bad = 0;
    for (long i = 0; i < n; i++) bad += act16_round(precision, x[i]) != x[i];
    return (float)bad;
}

/* The LM head under a bf16 / fp16 plan: 16-bit logits and dlogits (weft/rt.h,
 * wf_lmhead_xent_fwd), on a row width the 16-byte paths take (vw 304: 8
 * 16-bit values or 4 floats divide it) and one they do not (301).  act16:
 * dlogits are 16-bit storage; else floats holding 16-bit values, rounded by
 * the kernel itself (the count of unrounded ones must be 0 on both
 * backends).  With act16 off, the vocabulary-parallel pieces too (once).
 * x and wte are multiples of 1/16 (gemm16_grid): the fp32 logits are exact,
 * so both backends round the same logits and the losses keep 1e-5 (a logit
 * left unrounded moves them by ~1e-3); dlogits, from expf, may still round
 * to neighbouring 16-bit values. */
static void xent16_case(int p, int vw, int act16) {
    wf_ctx *c = act16 ? act16_ctx(p) : wf_precision_ctx(p);
    char k[36];
    snprintf(k, sizeof k, "lmhead_xent_fwd %s V=%d%s", p == WF_BF16 ? "bf16" : "fp16", vw,
             act16 ? " act16" : " float");
    long nl = (long)N * vw, nx = (long)N * C;
    int32_t *tgt = tokens(N, vw);
    float *x = gemm16_grid(nx), *wte = gemm16_grid((long)vw * C);
    if (act16) x = act16_in(p, x, nx);
    float *dlg = act16 ? act16_in(p, buf(nl), nl) : buf(nl), *losses = buf(N);
    float scale = p == WF_FP16 ? 512.0f / N : 1.0f / N;  /* fp16: a loss scale */
    double loss = wf_lmhead_xent_fwd(c, dlg, losses, x, wte, tgt, scale, N, C, vw);
    float *got = buf(nl);
    if (act16) act16_out(p, got, dlg, nl);
    else settle(), memcpy(got, dlg, sizeof(float) * (size_t)nl);
    put(k, "dlogits [16-bit]", got, nl);
    float unrounded = count_unrounded(p, got, nl);
    put(k, "unrounded dlogits [exact]", &unrounded, 1);
    put(k, "losses", losses, N);
    put_double(k, "loss sum", loss);
    if (vw != 301) return;
    /* vocabulary-parallel: this rank's slice [V0, V0 + VL), 20 padding
     * columns; its logits in c's storage like the whole head's */
    int valid = VL - 20;
    long nvl = (long)N * VL;
    float *logits = act16 ? act16_in(p, buf(nvl), nvl) : buf(nvl), *rowmax = buf(N);
    float *vgot = buf(nvl);
    double *stats = wf_backend_alloc(NULL, sizeof(double) * 2 * N);
    snprintf(k, sizeof k, "vocab_xent %s%s", p == WF_BF16 ? "bf16" : "fp16", act16 ? " act16" : "");
    wf_vocab_logits(c, logits, rowmax, x, wte, N, C, VL, valid, p);
    if (act16) act16_out(p, vgot, logits, nvl);
    else settle(), memcpy(vgot, logits, sizeof(float) * (size_t)nvl);
    put(k, "logits [exact]", vgot, nvl);
    unrounded = count_unrounded(p, vgot, nvl);
    put(k, "unrounded logits [exact]", &unrounded, 1);
    wf_vocab_exp(c, logits, stats, rowmax, tgt, N, VL, V0, valid);
    loss = wf_vocab_dlogits(c, logits, losses, rowmax, stats, tgt, scale, N, VL, V0, p);
    if (act16) act16_out(p, vgot, logits, nvl);
    else settle(), memcpy(vgot, logits, sizeof(float) * (size_t)nvl);
    put(k, "dlogits [16-bit]", vgot, nvl);
    unrounded = count_unrounded(p, vgot, nvl);
    put(k, "unrounded dlogits [exact]", &unrounded, 1);
    put(k, "losses", losses, N);
    put_double(k, "loss sum", loss);
    if (!act16) return;
    /* the backward's two GEMMs on the slice: dx partial over the vocabulary */
    float *dx = act16_buf(p, nx, 1.0f), *dwte = buf((long)VL * C);
    wf_vocab_xent_bwd(c, dx, dwte, logits, x, wte, N, C, VL);
    put16(k, "dx [16-bit]", p, dx, nx);
    put(k, "dwte", dwte, (long)VL * C);
}

static void run_gemm_act16(void) {
    gemm_act16_case(WF_BF16);
    gemm_act16_case(WF_FP16);
    for (int act16 = 0; act16 < 2; act16++)
        for (int vw = 301; vw <= 304; vw += 3) {
            xent16_case(WF_BF16, vw, act16);
            xent16_case(WF_FP16, vw, act16);
        }
    gemm_act16_exact_case(WF_BF16);
    gemm_act16_exact_case(WF_FP16);
}

/* ---- optimizer hooks and 16-bit rounding ------------------------------------ */

static uint32_t random_bits(void) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng >> 32);
}

static float from_bits(uint32_t u) {
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* Five ranges with gaps between them in the weights and gradients, so a
 * kernel writing outside its ranges shows: decay on some, one the LM head's
 * tied copy, one outside the norm, lengths not multiples of a block. */
enum { OPT_RANGES = 5, OPT_ARENA = 9000 };
static const long opt_len[OPT_RANGES] = { 1000, 37, 3001, 1, 2500 };

static wf_opt_table opt_table(void) {
    wf_opt_range *r = wf_backend_alloc(NULL, sizeof(wf_opt_range) * OPT_RANGES);
    if (!r) exit(2);
    long start = 0, at = 11;
    for (int k = 0; k < OPT_RANGES; k++) {
        r[k].start = start;
        r[k].n = opt_len[k];
        r[k].w = at;
        r[k].g = at + 5;  /* gradients at another offset than weights, as under ZeRO */
        r[k].mom = start;
        r[k].decay = k % 2 == 0;
        r[k].tied_copy = k == 2;
        r[k].in_norm = k != 3 && k != 2;
        start += opt_len[k];
        at += opt_len[k] + 7 * k + 3;
    }
    return (wf_opt_table){ r, OPT_RANGES, start };
}

static float *positive(long n) { /* second moments */
    float *v = buf(n);
    for (long i = 0; i < n; i++) v[i] = fabsf(v[i]) * 1e-3f;
    return v;
}

/* grads16: the gradients as the plan's 16-bit bits (grad16), their values
 * the random floats rounded */
static void adamw_case(const char *name, wf_opt_table t, int precision, int skip_tied_copy, int grads16) {
    float *w = buf(OPT_ARENA), *g = buf(OPT_ARENA), *m = buf(t.total), *v = positive(t.total);
    float *master = precision != WF_FP32 ? buf(t.total) : NULL;
    if (grads16) {
        uint16_t *h = wf_backend_alloc(NULL, sizeof(uint16_t) * OPT_ARENA);
        if (!h) exit(2);
        wf_narrow16(precision, h, g, OPT_ARENA);
        g = (float *)(void *)h;  /* as the runtime passes them */
    }
    wf_adamw_args a = { .t = t, .weights = w, .grads = g, .m = m, .v = v, .master = master,
                        .precision = precision, .grads16 = grads16, .skip_tied_copy = skip_tied_copy,
                        .b1 = 0.9f, .b2 = 0.95f, .eps = 1e-8f, .step_size = 3e-3f,
                        .inv_bc2_sqrt = 4.5f, .grad_scale = 0.7f, .decay = 6e-5f };
    wf_backend_adamw(NULL, &a);
    wf_backend_adamw(NULL, &a);  /* a second step from the first one's moments */
    char what[48];
    snprintf(what, sizeof what, "weights%s", master ? " [16-bit]" : "");
    put(name, what, w, OPT_ARENA);
    put(name, "m", m, t.total);
    put(name, "v", v, t.total);
    if (!master) return;
    put(name, "master", master, t.total);
    /* the working copy is the master rounded, bit for bit, on either backend */
    float mismatches = 0;
    for (int k = 0; k < t.n; k++)
        for (long i = 0; i < t.r[k].n; i++) {
            float want = precision == WF_BF16 ? wf_bf16(master[t.r[k].mom + i]) : wf_fp16(master[t.r[k].mom + i]);
            if (!(skip_tied_copy && t.r[k].tied_copy) && memcmp(&want, &w[t.r[k].w + i], sizeof want) != 0)
                mismatches++;
        }
    put(name, "weights != round(master) [exact]", &mismatches, 1);
}

/* Values where rounding is decided: ties either way, fp16 subnormals and
 * their underflow, the overflow thresholds, inf, NaN with payloads, zeros;
 * then random bit patterns (every exponent, NaNs included). */
static float *rounding_inputs(long n) {
    static const uint32_t edge[] = {
        0x3f808000u, 0x3f818000u, 0x3f808001u, 0xbf808000u,  /* bf16: ties to even, just above */
        0x3f801000u, 0x3f803000u, 0x3f801001u, 0x477fe000u,  /* fp16: ties, 65504 */
        0x477fefffu, 0x477ff000u, 0x7f7fffffu, 0xff7fffffu,  /* 65519.99 / 65520: fp16 overflow, FLT_MAX */
        0x7f7f8000u, 0x33000000u, 0x33000001u, 0x33400000u,  /* bf16 overflow tie, 2^-25, above it, 1.5 2^-25 */
        0x33c00000u, 0x34200000u, 0x387fe000u, 0x387ff000u,  /* 1.5 2^-24, 2.5 2^-24, near 2^-14 */
        0x38800000u, 0x00000001u, 0x80000000u, 0x00000000u,  /* 2^-14, fp32 subnormal, -0, 0 */
        0x7f800000u, 0xff800000u, 0x7fc00000u, 0x7f800001u,  /* inf, -inf, NaN, signalling NaN */
        0xffa12345u, 0x7fbfffffu, 0x32ffffffu, 0xb3400000u,  /* NaN payloads, just under 2^-25, -1.5 2^-25 */
    };
    float *x = buf(n);
    long k = (long)(sizeof edge / sizeof edge[0]);
    for (long i = 0; i < n; i++) x[i] = from_bits(i < k ? edge[i] : random_bits());
    return x;
}

static void run_optimizer(void) {
    wf_opt_table t = opt_table();
    adamw_case("adamw fp32", t, WF_FP32, 0, 0);
    adamw_case("adamw fp32 skip tied", t, WF_FP32, 1, 0);
    adamw_case("adamw bf16", t, WF_BF16, 0, 0);
    adamw_case("adamw fp16 skip tied", t, WF_FP16, 1, 0);
    adamw_case("adamw bf16 grads16", t, WF_BF16, 0, 1);
    adamw_case("adamw fp16 grads16", t, WF_FP16, 1, 1);

    float *g = buf(OPT_ARENA);
    put_double("sumsq", "sum of g^2 (in norm)", wf_backend_sumsq(NULL, &t, g));
    float flags[4];
    flags[0] = (float)wf_backend_nonfinite(NULL, &t, g);
    g[t.r[0].w - 1] = INFINITY;                    /* in a gap: not checked */
    g[t.r[1].g + t.r[1].n] = NAN;
    flags[1] = (float)wf_backend_nonfinite(NULL, &t, g);
    g[t.r[4].g + t.r[4].n - 1] = -INFINITY;         /* the last element of the last range */
    flags[2] = (float)wf_backend_nonfinite(NULL, &t, g);
    g[t.r[4].g + t.r[4].n - 1] = 0;
    g[t.r[3].g] = NAN;                              /* the one-element range */
    flags[3] = (float)wf_backend_nonfinite(NULL, &t, g);
    put("nonfinite", "clean, gaps, -inf, nan [exact]", flags, 4);
    if (flags[0] != 0 || flags[1] != 0 || flags[2] != 1 || flags[3] != 1) {
        fprintf(stderr, "check_kernels: wf_backend_nonfinite gave %g %g %g %g, want 0 0 1 1\n",
                flags[0], flags[1], flags[2], flags[3]);
        exit(1);
    }

    long n = 20011;
    float *x = rounding_inputs(n), *y = buf(n);
    memcpy(y, x, sizeof(float) * (size_t)n);
    wf_to_bf16(NULL, y, n);
    put("to_bf16", "in place [exact]", y, n);
    memcpy(y, x, sizeof(float) * (size_t)n);
    wf_to_fp16(NULL, y, n);
    put("to_fp16", "in place [exact]", y, n);
    wf_round_copy(WF_BF16, y, x, n);
    put("round_copy", "bf16 [exact]", y, n);
    wf_round_copy(WF_FP16, y, x, n);
    put("round_copy", "fp16 [exact]", y, n);
    wf_round_copy(WF_FP32, y, x, n);
    put("round_copy", "fp32 (a copy) [exact]", y, n);
}

/* ---- 16-bit weight gradients (runtime/common/grad16.c) ----------------------
 * The backend's conversions against convert16.c's host loops, bit for bit
 * (a count of differing elements, which must be 0, and the results
 * "[exact]" against the CPU's): narrowing on rounding_inputs' edges,
 * widening every 16-bit pattern that narrowing made, the in-place widening
 * of a ZeRO-1 shard at lengths 1, 2, 3 (its halving's edges) and odd
 * larger ones, and ZeRO-2's add of 16-bit values into floats (a float add
 * each: exact against the host's).  Then the norm's sum of squares and the
 * overflow check on 16-bit gradients (the float ones' ranges and cases). */
static float count_differing(const float *a, const float *b, long n) {
    settle();
    float bad = 0;
    for (long i = 0; i < n; i++) bad += memcmp(&a[i], &b[i], sizeof a[i]) != 0;
    return bad;
}

static void must_be_zero(const char *what, float bad) {
    if (bad != 0) {
        fprintf(stderr, "check_kernels: %s: %g elements differ from convert16.c's\n", what, bad);
        exit(1);
    }
}

static void grad16_conversions(int p) {
    const char *tag = p == WF_BF16 ? "grad16 bf16" : "grad16 fp16";
    wf_ctx *c = wf_storage_ctx(p, 0);
    long n = 20011;
    float *x = rounding_inputs(n), *y = buf(n), *want = buf(n);
    uint16_t *h = wf_backend_alloc(NULL, sizeof(uint16_t) * (size_t)n), *hw = malloc(sizeof(uint16_t) * (size_t)n);
    if (!h || !hw) exit(2);
    char what[40];
    wf_backend_to16(c, h, x, n);
    wf_narrow16(p, hw, x, n);
    settle();
    float bad = 0;
    for (long i = 0; i < n; i++) bad += h[i] != hw[i];
    must_be_zero("wf_backend_to16", bad);
    for (long i = 0; i < n; i++) y[i] = h[i];  /* the bits as exact floats */
    put(tag, "narrowed bits [exact]", y, n);
    put(tag, "narrowed, differing from wf_narrow16 [exact]", &bad, 1);

    wf_backend_from16(c, y, h, n);
    wf_widen16(p, want, hw, n);
    bad = count_differing(y, want, n);
    must_be_zero("wf_backend_from16", bad);
    put(tag, "widened [exact]", y, n);
    put(tag, "widened, differing from wf_widen16 [exact]", &bad, 1);

    static const long lengths[] = { 1, 2, 3, 17, 4099, 20011 };
    for (int k = 0; k < (int)(sizeof lengths / sizeof *lengths); k++) {
        long m = lengths[k];
        memcpy(y, h, sizeof(uint16_t) * (size_t)m);  /* the 16-bit values in its first half */
        wf_backend_from16_in_place(c, y, m);
        bad = count_differing(y, want, m);
        snprintf(what, sizeof what, "widened in place, n = %ld [exact]", m);
        must_be_zero(what, bad);
        put(tag, what, y, m);
    }

    float *acc = buf(n);
    memcpy(want, acc, sizeof(float) * (size_t)n);
    wf_backend_add16(c, acc, h, n);
    settle();  /* want is device-visible memory too */
    for (long i = 0; i < n; i++) want[i] += p == WF_BF16 ? wf_bf16_value(hw[i]) : wf_fp16_value(hw[i]);
    bad = count_differing(acc, want, n);
    must_be_zero("wf_backend_add16", bad);
    put(tag, "added into floats [exact]", acc, n);

    /* floats added into the 16-bit values, rounded once (2BW's tied wte).
     * Bit for bit but for NaNs: which payload a sum of two NaNs keeps is the
     * hardware's (a GPU returns its canonical NaN), so any NaN is -1 here */
    memcpy(hw, h, sizeof(uint16_t) * (size_t)n);
    wf_backend_add_into16(c, h, x + 1, n - 1);
    wf_add_into16(p, hw, x + 1, n - 1);
    settle();
    uint16_t inf16 = p == WF_BF16 ? 0x7f80 : 0x7c00;
    bad = 0;
    for (long i = 0; i < n; i++) {
        int nan = (h[i] & 0x7fff) > inf16, nan_want = (hw[i] & 0x7fff) > inf16;
        bad += nan != nan_want || (!nan && h[i] != hw[i]);
        y[i] = nan ? -1.0f : h[i];
    }
    must_be_zero("wf_backend_add_into16", bad);
    put(tag, "floats added into the bits [exact]", y, n);
}

static void grad16_optimizer(int p) {
    const char *tag = p == WF_BF16 ? "grad16 bf16" : "grad16 fp16";
    wf_opt_table t = opt_table();
    float *g = buf(OPT_ARENA);
    uint16_t *h = wf_backend_alloc(NULL, sizeof(uint16_t) * OPT_ARENA);
    if (!h) exit(2);
    wf_narrow16(p, h, g, OPT_ARENA);
    put_double(tag, "sum of g^2 (in norm)", wf_backend_sumsq16(NULL, &t, h, p));
    uint16_t inf = p == WF_BF16 ? 0x7f80 : 0x7c00, nan = p == WF_BF16 ? 0x7fc0 : 0x7e00;
    float flags[4];
    flags[0] = (float)wf_backend_nonfinite16(NULL, &t, h, p);
    h[t.r[0].g - 1] = inf;  /* in a gap: not checked */
    h[t.r[1].g + t.r[1].n] = nan;
    flags[1] = (float)wf_backend_nonfinite16(NULL, &t, h, p);
    h[t.r[4].g + t.r[4].n - 1] = inf | 0x8000;  /* -inf, the last element of the last range */
    flags[2] = (float)wf_backend_nonfinite16(NULL, &t, h, p);
    h[t.r[4].g + t.r[4].n - 1] = 0;
    h[t.r[3].g] = nan;  /* the one-element range */
    flags[3] = (float)wf_backend_nonfinite16(NULL, &t, h, p);
    put(tag, "nonfinite: clean, gaps, -inf, nan [exact]", flags, 4);
    if (flags[0] != 0 || flags[1] != 0 || flags[2] != 1 || flags[3] != 1) {
        fprintf(stderr, "check_kernels: wf_backend_nonfinite16 gave %g %g %g %g, want 0 0 1 1\n", flags[0], flags[1],
                flags[2], flags[3]);
        exit(1);
    }
}

static void run_grad16(void) {
    grad16_conversions(WF_BF16);
    grad16_conversions(WF_FP16);
    grad16_optimizer(WF_BF16);
    grad16_optimizer(WF_FP16);
}

/* ---- 16-bit activation storage (weft/rt.h "Activation storage") --------------
 * The non-GEMM kernels under act16 (check_act16.h): activations and their
 * gradients go in as the plan's 16-bit values and come out rounded; saved
 * state (mean, rstd), parameters and their gradients stay float (1e-5).
 * Gradient outputs start from random rounded values: the accumulate
 * contract, read in 16 bits, added in fp32, stored rounded.  Each call gets
 * fresh gradient buffers: the CPU build rounds only the copy act16_out
 * reads, so a second call on the same buffer would start there from the
 * unrounded sum.  Outputs whose arithmetic is fp32 additions only (the
 * embedding, the adds, the residual sum) are the same floats on every
 * backend, so their 16-bit values are compared bit for bit ("[exact]"):
 * a store that truncates instead of rounding shows there (the 1e-2 of the
 * 16-bit threshold is more than a bf16 ulp). */

static void act16_name(char *name, size_t size, const char *kernel, int p, const char *tag) {
    snprintf(name, size, "%s act16 %s%s", kernel, p == WF_BF16 ? "bf16" : "fp16", tag);
}

static void act16_elementwise(int p) {
    wf_ctx *ctx = act16_ctx(p);
    char name[48];
    long nc = (long)N * C, nm = (long)N * M;
    int32_t *tok = tokens(N, V);
    float *wte = buf((long)V * C), *wpe = buf((long)T * C);
    float *o = act16_buf(p, nc, 1.0f), *dout = act16_buf(p, nc, 1.0f);
    act16_name(name, sizeof name, "embed_fwd", p, "");
    wf_embed_fwd(ctx, o, tok, wte, wpe, B, T, C);
    put16(name, "out [exact]", p, o, nc);
    float *dwte = buf((long)V * C), *dwpe = buf((long)T * C);
    act16_name(name, sizeof name, "embed_bwd", p, "");
    wf_embed_bwd(ctx, dwte, dwpe, dout, tok, B, T, C);
    put(name, "dwte", dwte, (long)V * C);
    put(name, "dwpe", dwpe, (long)T * C);
    /* the LLaMA family's embedding on one rank (no position table) */
    float *dwte_part = buf((long)VL * C);
    act16_name(name, sizeof name, "vocab_embed_fwd", p, "");
    wf_vocab_embed_fwd(ctx, o, tok, wte, V0, VL, N, C);
    put16(name, "out [exact]", p, o, nc);
    act16_name(name, sizeof name, "vocab_embed_bwd", p, "");
    wf_vocab_embed_bwd(ctx, dwte_part, dout, tok, V0, VL, N, C);
    put(name, "dwte", dwte_part, (long)VL * C);

    float *x = act16_buf(p, nm, 3.0f), *y = act16_buf(p, nm, 1.0f), *dy = act16_buf(p, nm, 1.0f);
    float *dx = act16_buf(p, nm, 1.0f);
    act16_name(name, sizeof name, "gelu_fwd", p, "");
    wf_gelu_fwd(ctx, y, x, nm);
    put16(name, "out [16-bit]", p, y, nm);
    act16_name(name, sizeof name, "gelu_bwd", p, "");
    wf_gelu_bwd(ctx, dx, x, dy, nm);
    put16(name, "dinp [16-bit]", p, dx, nm);
    /* the exact (erf) GELU on x in [-6, 6): the 16-byte path, then an odd
     * count (one value at a time); fresh gradients for each call */
    float *xe = act16_buf(p, nm, 6.0f), *dxe = act16_buf(p, nm, 1.0f);
    act16_name(name, sizeof name, "gelu_erf_fwd", p, "");
    wf_gelu_erf_fwd(ctx, y, xe, nm);
    put16(name, "out [16-bit]", p, y, nm);
    act16_name(name, sizeof name, "gelu_erf_bwd", p, "");
    wf_gelu_erf_bwd(ctx, dxe, xe, dy, nm);
    put16(name, "dinp [16-bit]", p, dxe, nm);
    dxe = act16_buf(p, nm, 1.0f);
    act16_name(name, sizeof name, "gelu_erf_fwd", p, " odd");
    wf_gelu_erf_fwd(ctx, y, xe, nm - 3);
    put16(name, "out [16-bit]", p, y, nm - 3);
    act16_name(name, sizeof name, "gelu_erf_bwd", p, " odd");
    wf_gelu_erf_bwd(ctx, dxe, xe, dy, nm - 3);
    put16(name, "dinp [16-bit]", p, dxe, nm - 3);

    float *a = act16_buf(p, nc, 1.0f), *b = act16_buf(p, nc, 1.0f);
    float *da = act16_buf(p, nc, 1.0f), *db = act16_buf(p, nc, 1.0f);
    act16_name(name, sizeof name, "add_fwd", p, "");
    wf_add_fwd(ctx, o, a, b, nc);
    put16(name, "out [exact]", p, o, nc);
    act16_name(name, sizeof name, "add_bwd", p, "");
    wf_add_bwd(ctx, da, db, dout, nc);
    put16(name, "da [exact]", p, da, nc);
    put16(name, "db [exact]", p, db, nc);

    /* the fused linear + GELU's elementwise half: pre a GEMM's output (not
     * yet rounded in fp32 plans; under act16 already 16-bit) */
    float *pre = act16_buf(p, nm, 3.0f), *dpre = act16_buf(p, nm, 1.0f);
    act16_name(name, sizeof name, "gelu_round_fwd", p, "");
    wf_gelu_round_fwd(ctx, p, pre, y, nm);
    put16(name, "pre [16-bit]", p, pre, nm);
    put16(name, "out [16-bit]", p, y, nm);
    act16_name(name, sizeof name, "gelu_round_bwd", p, "");
    wf_gelu_round_bwd(ctx, p, dpre, pre, dy, nm);
    put16(name, "dpre [16-bit]", p, dpre, nm);
}

/* The tensor-parallel kernels under act16: the position and bias adds
 * (rows [37, 87) of the microbatch, as above), and the conversions around
 * the fp32 collectives (runtime/common/tp.c) on a count the 16-byte path
 * takes and an odd one it does not: widening is exact, narrowing and adding
 * floats into storage round once to nearest even on both backends. */
static void act16_tp(int p) {
    wf_ctx *ctx = act16_ctx(p);
    char name[48];
    long row0 = 37, nc = (long)N * C, nm = (long)N * M;
    int rows = 50;
    long nr = (long)rows * C;
    float *wpe = buf((long)T * C), *dwpe = buf((long)T * C), *bias = buf(M), *db = buf(M);
    float *x = act16_buf(p, nr, 1.0f), *o = act16_buf(p, nr, 1.0f), *dout = act16_buf(p, nr, 1.0f);
    float *dx = act16_buf(p, nr, 1.0f);
    act16_name(name, sizeof name, "pos_add_fwd", p, "");
    wf_pos_add_fwd(ctx, o, x, wpe, row0, rows, T, C);
    put16(name, "out [exact]", p, o, nr);
    act16_name(name, sizeof name, "pos_add_bwd", p, "");
    wf_pos_add_bwd(ctx, dx, dwpe, dout, row0, rows, T, C);
    put16(name, "din [exact]", p, dx, nr);
    put(name, "dwpe", dwpe, (long)T * C);
    act16_name(name, sizeof name, "pos_add_bwd_input", p, "");
    dx = act16_buf(p, nr, 1.0f);  /* fresh: the CPU build rounds only what put16 reads */
    wf_pos_add_bwd_input(ctx, dx, dout, rows, C);
    put16(name, "din [exact]", p, dx, nr);
    act16_name(name, sizeof name, "pos_add_bwd_weight", p, "");
    wf_pos_add_bwd_weight(ctx, dwpe, dout, row0, rows, T, C);
    put(name, "dwpe", dwpe, (long)T * C);

    float *y = act16_buf(p, nm, 1.0f), *dy = act16_buf(p, nm, 1.0f), *din = act16_buf(p, nm, 1.0f);
    float *out = act16_buf(p, nm, 1.0f);
    act16_name(name, sizeof name, "bias_add_fwd", p, "");
    wf_bias_add_fwd(ctx, out, y, bias, N, M);
    put16(name, "out [exact]", p, out, nm);
    act16_name(name, sizeof name, "bias_add_bwd", p, "");
    wf_bias_add_bwd(ctx, din, db, dy, N, M);
    put16(name, "din [exact]", p, din, nm);
    put(name, "db", db, M);
    act16_name(name, sizeof name, "bias_add_bwd_weight", p, "");
    wf_bias_add_bwd_weight(ctx, db, dy, N, M);
    put(name, "db", db, M);

    for (long n = nc; n <= nc + 3; n += 3) {
        const char *tag = n == nc ? "" : " odd";
        float *act = act16_buf(p, n, 3.0f), *f = buf(n), *sum = buf(n);
        for (long i = 0; i < n; i++) sum[i] *= 4.0f;
        act16_name(name, sizeof name, "tp_widen", p, tag);
        wf_tp_widen(ctx, f, act, n);
        settle();
        put(name, "floats [exact]", f, n);
        act16_name(name, sizeof name, "tp_narrow", p, tag);
        wf_tp_narrow(ctx, act, sum, n);
        put16(name, "values [exact]", p, act, n);
        /* a fresh argument: the CPU build rounds only the copy put16 reads */
        float *grad = act16_buf(p, n, 1.0f);
        act16_name(name, sizeof name, "tp_add_floats", p, tag);
        wf_tp_add_floats(ctx, grad, sum, n);
        put16(name, "values [exact]", p, grad, n);
    }
}

static void act16_layernorm(int p) {
    wf_ctx *ctx = act16_ctx(p);
    char name[48];
    long nc = (long)N * C;
    float *x = act16_buf(p, nc, 1.0f), *o = act16_buf(p, nc, 1.0f), *dout = act16_buf(p, nc, 1.0f);
    float *dx = act16_buf(p, nc, 1.0f);
    float *w = buf(C), *bias = buf(C), *mean = buf(N), *rstd = buf(N), *dw = buf(C), *db = buf(C);
    act16_name(name, sizeof name, "layernorm_fwd", p, "");
    wf_layernorm_fwd(ctx, o, mean, rstd, x, w, bias, N, C);
    put16(name, "out [16-bit]", p, o, nc);
    put(name, "mean", mean, N);
    put(name, "rstd", rstd, N);
    act16_name(name, sizeof name, "layernorm_bwd", p, "");
    wf_layernorm_bwd(ctx, dx, dw, db, dout, x, w, mean, rstd, N, C);
    put16(name, "dinp [16-bit]", p, dx, nc);
    put(name, "dw", dw, C);
    put(name, "db", db, C);
    act16_name(name, sizeof name, "layernorm_bwd_input", p, "");
    dx = act16_buf(p, nc, 1.0f);
    wf_layernorm_bwd_input(ctx, dx, dout, x, w, mean, rstd, N, C);
    put16(name, "dinp [16-bit]", p, dx, nc);
    act16_name(name, sizeof name, "layernorm_bwd_weight", p, "");
    wf_layernorm_bwd_weight(ctx, dw, db, dout, x, mean, rstd, N, C);
    put(name, "dw", dw, C);
    put(name, "db", db, C);

    /* fused residual + layernorm: res = round(a + b) inside, then as above */
    float *a = act16_buf(p, nc, 1.0f), *res = act16_buf(p, nc, 1.0f), *dres = act16_buf(p, nc, 1.0f);
    float *dln = act16_buf(p, nc, 1.0f), *ga = act16_buf(p, nc, 1.0f), *gb = act16_buf(p, nc, 1.0f);
    act16_name(name, sizeof name, "residual_layernorm_fwd", p, "");
    wf_residual_layernorm_fwd(ctx, res, o, mean, rstd, a, x, w, bias, N, C);
    put16(name, "res [exact]", p, res, nc);
    put16(name, "out [16-bit]", p, o, nc);
    put(name, "mean", mean, N);
    put(name, "rstd", rstd, N);
    act16_name(name, sizeof name, "residual_layernorm_bwd", p, "");
    wf_residual_layernorm_bwd(ctx, ga, gb, dw, db, dres, dln, res, w, mean, rstd, N, C);
    put16(name, "da [16-bit]", p, ga, nc);
    put16(name, "db [16-bit]", p, gb, nc);
    put(name, "dw", dw, C);
    put(name, "dbias", db, C);
    act16_name(name, sizeof name, "residual_layernorm_bwd_input", p, "");
    ga = act16_buf(p, nc, 1.0f);
    gb = act16_buf(p, nc, 1.0f);
    wf_residual_layernorm_bwd_input(ctx, ga, gb, dres, dln, res, w, mean, rstd, N, C);
    put16(name, "da [16-bit]", p, ga, nc);
    put16(name, "db [16-bit]", p, gb, nc);
}

/* The first w of each row's ld values of a 16-bit argument, from column col0 */
static void put16_columns(const char *kernel, const char *what, int p, const float *arg, long n, long ld,
                          long col0, long w) {
    float *all = malloc(sizeof(float) * (size_t)(n * ld));
    if (!all) exit(2);
    act16_out(p, all, arg, n * ld);
    put(kernel, what, columns(all, n, ld, col0, w), n * w);
    free(all);
}

/* GPT-2's attention under act16: qkv (doubled, as attention_16bit_case),
 * dout and dqkv 16-bit; dqkv starts from small random values (the
 * accumulate contract, without hiding the gradients under them).  misalign:
 * qkv and dout one 16-bit element past the allocation (the tensor-core
 * kernels copy 8 elements at a time only where 16-byte aligned). */
static void act16_attention(int p, const char *tag, int b, int t, int c, int h, int misalign) {
    wf_ctx *ctx = act16_ctx(p);
    long n = (long)b * t, rows = (long)b * h * t, tt = (long)t * t;
    float *qkv = act16_at(act16_buf(p, n * 3 * c + misalign, 2.0f), misalign);
    float *dout = act16_at(act16_buf(p, n * c + misalign, 1.0f), misalign);
    float *o = act16_buf(p, n * c, 1.0f), *dqkv = act16_buf(p, n * 3 * c, 0.01f);
    float *att = buf(rows * t), *scratch = buf(tt > rows ? tt : rows);
    char name[48];
    act16_name(name, sizeof name, "attention_fwd", p, tag);
    wf_attention_fwd(ctx, o, att, qkv, b, t, c, h);
    put16(name, "out [16-bit]", p, o, n * c);
    act16_name(name, sizeof name, "attention_bwd", p, tag);
    wf_attention_bwd(ctx, dqkv, scratch, dout, qkv, o, att, b, t, c, h);
    static const char *what[3] = { "dq [16-bit]", "dk [16-bit]", "dv [16-bit]" };
    for (int part = 0; part < 3; part++) put16_columns(name, what[part], p, dqkv, n, 3L * c, (long)part * c, c);
}

/* LLaMA's grouped-query attention under act16, as act16_attention */
static void act16_gqa(int p, const char *tag, int b, int t, int h, int kvh, int hd) {
    wf_ctx *ctx = act16_ctx(p);
    long n = (long)b * t, rows = (long)b * h * t, tt = (long)t * t;
    long wq = (long)h * hd, wqk = (long)(h + kvh) * hd, wv = (long)kvh * hd;
    float *qk = act16_buf(p, n * wqk, 2.0f), *v = act16_buf(p, n * wv, 1.0f), *dout = act16_buf(p, n * wq, 1.0f);
    float *o = act16_buf(p, n * wq, 1.0f), *dqk = act16_buf(p, n * wqk, 0.01f), *dv = act16_buf(p, n * wv, 0.01f);
    float *att = buf(rows * t), *scratch = buf(tt > rows ? tt : rows);
    char name[48];
    act16_name(name, sizeof name, "gqa_attention_fwd", p, tag);
    wf_gqa_attention_fwd(ctx, o, att, qk, v, b, t, h, kvh, hd);
    put16(name, "out [16-bit]", p, o, n * wq);
    act16_name(name, sizeof name, "gqa_attention_bwd", p, tag);
    wf_gqa_attention_bwd(ctx, dqk, dv, scratch, dout, qk, v, o, att, b, t, h, kvh, hd);
    put16_columns(name, "dq [16-bit]", p, dqk, n, wqk, 0, wq);
    put16_columns(name, "dk [16-bit]", p, dqk, n, wqk, wq, wv);
    put16(name, "dv [16-bit]", p, dv, n * wv);
}

static void act16_llama(int p) {
    wf_ctx *ctx = act16_ctx(p);
    char name[48];
    long nc = (long)N * C;
    float *x = act16_buf(p, nc, 1.0f), *y = act16_buf(p, nc, 1.0f), *dout = act16_buf(p, nc, 1.0f);
    float *dx = act16_buf(p, nc, 1.0f), *w = buf(C), *rstd = buf(N), *dw = buf(C);
    act16_name(name, sizeof name, "rmsnorm_fwd", p, "");
    wf_rmsnorm_fwd(ctx, y, rstd, x, w, N, C, 1e-5f);
    put16(name, "out [16-bit]", p, y, nc);
    put(name, "rstd", rstd, N);
    act16_name(name, sizeof name, "rmsnorm_bwd", p, "");
    wf_rmsnorm_bwd(ctx, dx, dw, dout, x, w, rstd, N, C);
    put16(name, "dinp [16-bit]", p, dx, nc);
    put(name, "dw", dw, C);
    act16_name(name, sizeof name, "rmsnorm_bwd_input", p, "");
    dx = act16_buf(p, nc, 1.0f);
    wf_rmsnorm_bwd_input(ctx, dx, dout, x, w, rstd, N, C);
    put16(name, "dinp [16-bit]", p, dx, nc);
    act16_name(name, sizeof name, "rmsnorm_bwd_weight", p, "");
    wf_rmsnorm_bwd_weight(ctx, dw, dout, x, rstd, N, C);
    put(name, "dw", dw, C);

    /* RoPE as rope_case: query and key heads into one row and back, the
     * row strides and the key heads' offset in 16-bit elements */
    enum { RH = 4, RKV = 2, RD = 16 };
    long wq = RH * RD, wk = RKV * RD, wqk = wq + wk;
    float *q = act16_buf(p, N * wq, 1.0f), *k = act16_buf(p, N * wk, 1.0f), *qk = act16_buf(p, N * wqk, 1.0f);
    float *dqk = act16_buf(p, N * wqk, 1.0f), *dq = act16_buf(p, N * wq, 1.0f), *dk = act16_buf(p, N * wk, 1.0f);
    wf_rope_fwd(ctx, qk, (int)wqk, q, (int)wq, N, T, RH, RD, 10000.0f);
    wf_rope_fwd(ctx, act16_at(qk, wq), (int)wqk, k, (int)wk, N, T, RKV, RD, 10000.0f);
    act16_name(name, sizeof name, "rope_fwd", p, "");
    put16(name, "qk [16-bit]", p, qk, N * wqk);
    wf_rope_bwd(ctx, dq, (int)wq, dqk, (int)wqk, N, T, RH, RD, 10000.0f);
    wf_rope_bwd(ctx, dk, (int)wk, act16_at(dqk, wq), (int)wqk, N, T, RKV, RD, 10000.0f);
    act16_name(name, sizeof name, "rope_bwd", p, "");
    put16(name, "dq [16-bit]", p, dq, N * wq);
    put16(name, "dk [16-bit]", p, dk, N * wk);

    long ns = (long)N * M + 13;
    float *gate = act16_buf(p, ns, 6.0f), *up = act16_buf(p, ns, 1.0f), *o = act16_buf(p, ns, 1.0f);
    float *dy = act16_buf(p, ns, 1.0f), *dgate = act16_buf(p, ns, 1.0f), *dup = act16_buf(p, ns, 1.0f);
    act16_name(name, sizeof name, "swiglu_fwd", p, "");
    wf_swiglu_fwd(ctx, o, gate, up, ns);
    put16(name, "out [16-bit]", p, o, ns);
    act16_name(name, sizeof name, "swiglu_bwd", p, "");
    wf_swiglu_bwd(ctx, dgate, dup, gate, up, dy, ns);
    put16(name, "dgate [16-bit]", p, dgate, ns);
    put16(name, "dup [16-bit]", p, dup, ns);
}

/* Every non-GEMM kernel under act16, bf16 and fp16.  Attention on
 * tensor-core shapes (head sizes 32, 64, 48: several 64-row tiles, T not a
 * multiple of 64, one misaligned) and on head sizes 20, 160 and 256, which
 * the tensor-core kernels refuse (the fp32 flash kernels on 16-bit storage). */
static void run_act16_kernels(void) {
    static const int prec[2] = { WF_BF16, WF_FP16 };
    for (int k = 0; k < 2; k++) {
        int p = prec[k];
        act16_elementwise(p);
        act16_tp(p);
        act16_layernorm(p);
        act16_llama(p);
        act16_attention(p, " T=100 hs=32", 2, 100, 64, 2, 0);
        act16_attention(p, " T=130 hs=64 misaligned", 1, 130, 64, 1, 1);
        act16_attention(p, " T=50 hs=20", 1, 50, 40, 2, 0);
        act16_attention(p, " T=40 hs=160", 1, 40, 320, 2, 0);
        act16_gqa(p, " T=100 hd=32 g=3", 1, 100, 6, 2, 32);
        act16_gqa(p, " T=70 hd=48 g=2", 1, 70, 4, 2, 48);
        act16_gqa(p, " T=50 hd=20 g=2", 1, 50, 4, 2, 20);
        act16_gqa(p, " T=30 hd=256 g=2", 1, 30, 4, 2, 256);
    }
}

/* ---- the memory-bound kernels' two paths (runtime/cuda/storage_vec.cuh) -----
 * CUDA moves activations 16 bytes at a time (8 bf16 / fp16 values, 4 floats)
 * where every activation pointer is 16-byte aligned and the count or row
 * width is a multiple of that; the cases above (C = 96, counts N * C and
 * N * M, buffers from the allocator) take that path, except SwiGLU's count
 * N * M + 13.  These take the element-at-a-time one, for floats (c NULL)
 * and both 16-bit storages: rows of CO = 90 (a multiple of neither 4 nor
 * 8), counts not a multiple of 4, RoPE heads of 10 (pairs 5 apart), and
 * aligned counts on pointers one element past an aligned address. */

enum { CO = 90 };

/* n random values (scaled by k) as an activation argument of storage p,
 * `off` elements past the allocation's start, and 8 more after them (a
 * guard: path_elementwise reads the first back, which no kernel may write) */
static float *path_buf(int p, long n, float k, long off) {
    if (p != WF_FP32) return act16_at(act16_buf(p, n + off + 8, k), off);
    float *x = buf(n + off + 8);
    for (long i = 0; i < n + off + 8; i++) x[i] *= k;
    return x + off;
}

static void path_put(const char *kernel, const char *what, int p, const float *arg, long n) {
    if (p == WF_FP32) put(kernel, what, arg, n);
    else put16(kernel, what, p, arg, n);
}

/* the output's name: the kernel, storage, the shape's tag; what: an
 * output's name, "[16-bit]" (16-bit storages' rounding) added for p != fp32
 * when round is set */
static void path_name(char *name, size_t size, const char *kernel, int p, const char *tag) {
    snprintf(name, size, "%s %s %s", kernel, p == WF_FP32 ? "fp32" : p == WF_BF16 ? "bf16" : "fp16", tag);
}
#define PATH_WHAT(p, what, round) ((p) != WF_FP32 && (round) ? what " [16-bit]" : what)

/* the elementwise kernels on n elements, every activation `off` elements in */
static void path_elementwise(int p, const char *tag, long n, long off) {
    wf_ctx *ctx = p == WF_FP32 ? NULL : act16_ctx(p);
    char name[48];
    /* the outputs read back with the guard after them: a vector path on a
     * count it does not divide would write there */
    long g = n + 1;
    float *x = path_buf(p, n, 3.0f, off), *y = path_buf(p, n, 1.0f, off), *dy = path_buf(p, n, 1.0f, off);
    float *dx = path_buf(p, n, 1.0f, off);
    path_name(name, sizeof name, "gelu_fwd", p, tag);
    wf_gelu_fwd(ctx, y, x, n);
    path_put(name, PATH_WHAT(p, "out", 1), p, y, g);
    path_name(name, sizeof name, "gelu_bwd", p, tag);
    wf_gelu_bwd(ctx, dx, x, dy, n);
    path_put(name, PATH_WHAT(p, "dinp", 1), p, dx, g);
    float *a = path_buf(p, n, 1.0f, off), *b = path_buf(p, n, 1.0f, off), *o = path_buf(p, n, 1.0f, off);
    float *da = path_buf(p, n, 1.0f, off), *db = path_buf(p, n, 1.0f, off);
    path_name(name, sizeof name, "add_fwd", p, tag);
    wf_add_fwd(ctx, o, a, b, n);
    path_put(name, "out [exact]", p, o, g);
    path_name(name, sizeof name, "add_bwd", p, tag);
    wf_add_bwd(ctx, da, db, dy, n);
    path_put(name, "da [exact]", p, da, g);
    path_put(name, "db [exact]", p, db, g);
    if (p != WF_FP32) {  /* the fused linear + GELU's half, in the plan's precision */
        float *pre = path_buf(p, n, 3.0f, off), *dpre = path_buf(p, n, 1.0f, off);
        path_name(name, sizeof name, "gelu_round_fwd", p, tag);
        wf_gelu_round_fwd(ctx, p, pre, y, n);
        path_put(name, "pre [16-bit]", p, pre, g);
        path_put(name, "out [16-bit]", p, y, g);
        path_name(name, sizeof name, "gelu_round_bwd", p, tag);
        wf_gelu_round_bwd(ctx, p, dpre, pre, dy, n);
        path_put(name, "dpre [16-bit]", p, dpre, g);
    }
    float *gate = path_buf(p, n, 6.0f, off), *dgate = path_buf(p, n, 1.0f, off), *dup = path_buf(p, n, 1.0f, off);
    path_name(name, sizeof name, "swiglu_fwd", p, tag);
    wf_swiglu_fwd(ctx, o, gate, a, n);
    path_put(name, PATH_WHAT(p, "out", 1), p, o, g);
    path_name(name, sizeof name, "swiglu_bwd", p, tag);
    wf_swiglu_bwd(ctx, dgate, dup, gate, a, dy, n);
    path_put(name, PATH_WHAT(p, "dgate", 1), p, dgate, g);
    path_put(name, PATH_WHAT(p, "dup", 1), p, dup, g);
}

/* the row kernels and the embedding on rows of c, activations `off` in */
static void path_rows(int p, const char *tag, int c, long off) {
    wf_ctx *ctx = p == WF_FP32 ? NULL : act16_ctx(p);
    char name[48];
    long nc = (long)N * c;
    int32_t *tok = tokens(N, V);
    float *wte = buf((long)V * c), *wpe = buf((long)T * c), *dwte = buf((long)V * c), *dwpe = buf((long)T * c);
    float *o = path_buf(p, nc, 1.0f, off), *dout = path_buf(p, nc, 1.0f, off);
    path_name(name, sizeof name, "embed_fwd", p, tag);
    wf_embed_fwd(ctx, o, tok, wte, wpe, B, T, c);
    path_put(name, "out [exact]", p, o, nc);
    path_name(name, sizeof name, "embed_bwd", p, tag);
    wf_embed_bwd(ctx, dwte, dwpe, dout, tok, B, T, c);
    put(name, "dwte", dwte, (long)V * c);
    put(name, "dwpe", dwpe, (long)T * c);
    path_name(name, sizeof name, "vocab_embed_fwd", p, tag);
    wf_vocab_embed_fwd(ctx, o, tok, wte, V0, VL, N, c);
    path_put(name, "out [exact]", p, o, nc);

    float *x = path_buf(p, nc, 1.0f, off), *dx = path_buf(p, nc, 1.0f, off);
    float *w = buf(c), *bias = buf(c), *mean = buf(N), *rstd = buf(N);
    path_name(name, sizeof name, "layernorm_fwd", p, tag);
    wf_layernorm_fwd(ctx, o, mean, rstd, x, w, bias, N, c);
    path_put(name, PATH_WHAT(p, "out", 1), p, o, nc);
    put(name, "mean", mean, N);
    put(name, "rstd", rstd, N);
    path_name(name, sizeof name, "layernorm_bwd_input", p, tag);
    wf_layernorm_bwd_input(ctx, dx, dout, x, w, mean, rstd, N, c);
    path_put(name, PATH_WHAT(p, "dinp", 1), p, dx, nc);

    float *a = path_buf(p, nc, 1.0f, off), *res = path_buf(p, nc, 1.0f, off), *dres = path_buf(p, nc, 1.0f, off);
    float *ga = path_buf(p, nc, 1.0f, off), *gb = path_buf(p, nc, 1.0f, off);
    path_name(name, sizeof name, "residual_layernorm_fwd", p, tag);
    wf_residual_layernorm_fwd(ctx, res, o, mean, rstd, a, x, w, bias, N, c);
    path_put(name, "res [exact]", p, res, nc);
    path_put(name, PATH_WHAT(p, "out", 1), p, o, nc);
    put(name, "mean", mean, N);
    put(name, "rstd", rstd, N);
    path_name(name, sizeof name, "residual_layernorm_bwd_input", p, tag);
    wf_residual_layernorm_bwd_input(ctx, ga, gb, dres, dout, res, w, mean, rstd, N, c);
    path_put(name, PATH_WHAT(p, "da", 1), p, ga, nc);
    path_put(name, PATH_WHAT(p, "db", 1), p, gb, nc);

    dx = path_buf(p, nc, 1.0f, off);
    path_name(name, sizeof name, "rmsnorm_fwd", p, tag);
    wf_rmsnorm_fwd(ctx, o, rstd, x, w, N, c, 1e-5f);
    path_put(name, PATH_WHAT(p, "out", 1), p, o, nc);
    put(name, "rstd", rstd, N);
    path_name(name, sizeof name, "rmsnorm_bwd_input", p, tag);
    wf_rmsnorm_bwd_input(ctx, dx, dout, x, w, rstd, N, c);
    path_put(name, PATH_WHAT(p, "dinp", 1), p, dx, nc);

    /* the tensor-parallel adds: rows [37, 87) after a position table */
    long nr = 50L * c;
    float *pos = path_buf(p, nr, 1.0f, off), *din = path_buf(p, nc, 1.0f, off);
    path_name(name, sizeof name, "pos_add_fwd", p, tag);
    wf_pos_add_fwd(ctx, pos, x, wpe, 37, 50, T, c);
    path_put(name, "out [exact]", p, pos, nr);
    path_name(name, sizeof name, "bias_add_fwd", p, tag);
    wf_bias_add_fwd(ctx, o, x, bias, N, c);
    path_put(name, "out [exact]", p, o, nc);
    path_name(name, sizeof name, "pos_add_bwd_input", p, tag);
    wf_pos_add_bwd_input(ctx, din, dout, N, c);
    path_put(name, "din [exact]", p, din, nc);
}

/* RoPE on heads of hd, rows `off` elements in: the vector path needs half
 * a head a multiple of the vector width and the rows aligned */
static void path_rope(int p, const char *tag, int hd, long off) {
    wf_ctx *ctx = p == WF_FP32 ? NULL : act16_ctx(p);
    char name[48];
    int heads = 3;
    long w = (long)heads * hd, n = (long)N * w;
    float *x = path_buf(p, n, 1.0f, off), *y = path_buf(p, n, 1.0f, off);
    float *dy = path_buf(p, n, 1.0f, off), *dx = path_buf(p, n, 1.0f, off);
    path_name(name, sizeof name, "rope_fwd", p, tag);
    wf_rope_fwd(ctx, y, (int)w, x, (int)w, N, T, heads, hd, 10000.0f);
    path_put(name, PATH_WHAT(p, "out", 1), p, y, n);
    path_name(name, sizeof name, "rope_bwd", p, tag);
    wf_rope_bwd(ctx, dx, (int)w, dy, (int)w, N, T, heads, hd, 10000.0f);
    path_put(name, PATH_WHAT(p, "dinp", 1), p, dx, n);
}

static void run_width_paths(void) {
    static const int prec[3] = { WF_FP32, WF_BF16, WF_FP16 };
    for (int k = 0; k < 3; k++) {
        int p = prec[k];
        path_rows(p, "C=90", CO, 0);
        path_rows(p, "C=96 off1", C, 1);
        path_elementwise(p, "n+3", (long)N * C + 3, 0);
        path_elementwise(p, "n off1", (long)N * C, 1);
        path_elementwise(p, "n", (long)N * C, 0);  /* the vector path, swiglu and fp32 included */
        path_rope(p, "hd=10", 10, 0);
        path_rope(p, "hd=16 off1", 16, 1);
    }
}

/* ---- column sums over many rows (runtime/cuda/colsum.cuh) ------------------
 * The bias and norm weight gradients: CUDA sums chunks of at least 64 rows
 * into partials, then adds each column's partials.  NR = 299 rows are 5
 * chunks, the last one short (and keep the reductions under 400 terms, as
 * above); 50 rows one chunk (no partials).  Widths 77
 * (one element at a time, three 32-column tiles, the last partly used) and
 * 200 (the vector path: tiles of 128 floats or 256 16-bit values, the last
 * partly used).  The bias gradient through the linear layer's backward, the
 * caller that takes c's storage (K = 8 inputs keeps its GEMM small). */
enum { NR = 299, NR_K = 8 };

static void colsum_case(int p, const char *tag, long rows, int c) {
    wf_ctx *ctx = p == WF_FP32 ? NULL : act16_ctx(p);
    char name[48];
    float *x = path_buf(p, rows * c, 1.0f, 0), *dout = path_buf(p, rows * c, 1.0f, 0);
    float *mean = buf(rows), *rstd = buf(rows), *dw = buf(c), *db = buf(c);
    path_name(name, sizeof name, "layernorm_bwd_weight", p, tag);
    wf_layernorm_bwd_weight(ctx, dw, db, dout, x, mean, rstd, (int)rows, c);
    put(name, "dw", dw, c);
    put(name, "db", db, c);
    path_name(name, sizeof name, "rmsnorm_bwd_weight", p, tag);
    wf_rmsnorm_bwd_weight(ctx, dw, dout, x, rstd, (int)rows, c);
    put(name, "dw", dw, c);
    float *in = path_buf(p, rows * NR_K, 1.0f, 0), *dW = buf((long)NR_K * c);
    path_name(name, sizeof name, "linear_bwd_weight", p, tag);
    wf_linear_bwd_weight(ctx, dW, db, dout, in, (int)rows, NR_K, c);
    put(name, "db", db, c);
}

static void run_colsums(void) {
    static const int prec[3] = { WF_FP32, WF_BF16, WF_FP16 };
    for (int k = 0; k < 3; k++) {
        colsum_case(prec[k], "N=299 C=77", NR, 77);
        colsum_case(prec[k], "N=299 C=200", NR, 200);
        colsum_case(prec[k], "N=50 C=77", 50, 77);
    }
}

/* ---- compare ---------------------------------------------------------------- */

typedef struct { char name[64]; long n; float *x; } record;

static int read_record(FILE *f, record *r) {
    if (fread(r->name, 1, sizeof r->name, f) != sizeof r->name) return 0;
    if (fread(&r->n, sizeof r->n, 1, f) != 1 || r->n < 0 || r->n > (1L << 30)) return -1;
    r->x = malloc(sizeof(float) * (size_t)(r->n ? r->n : 1));
    if (!r->x || fread(r->x, sizeof(float), (size_t)r->n, f) != (size_t)r->n) return -1;
    return 1;
}

static int ends_with(const char *s, const char *tail) {
    size_t a = strlen(s), b = strlen(tail);
    return a >= b && strcmp(s + a - b, tail) == 0;
}

static int compare(const char *ref_path, const char *got_path) {
    FILE *fr = fopen(ref_path, "rb"), *fg = fopen(got_path, "rb");
    if (!fr || !fg) { fprintf(stderr, "check_kernels: cannot read %s or %s\n", ref_path, got_path); return 2; }
    int bad = 0, count = 0;
    printf("%-48s %10s %12s %10s\n", "kernel output", "floats", "max rel err", "threshold");
    for (;;) {
        record r, g;
        int a = read_record(fr, &r), b = read_record(fg, &g);
        if (a == 0 && b == 0) break;
        if (a != 1 || b != 1 || strcmp(r.name, g.name) != 0 || r.n != g.n) {
            printf("FAIL the two files list different outputs (at %s)\n", a == 1 ? r.name : "the end");
            return 1;
        }
        double scale = 0, err = 0;
        for (long i = 0; i < r.n; i++) {
            double ref = r.x[i], got = g.x[i];
            if (fabs(ref) > scale) scale = fabs(ref);
            double d = fabs(got - ref);
            if (isnan(got) != isnan(ref) || isinf(got) != isinf(ref)) d = INFINITY;
            else if (isinf(ref) || isnan(ref)) d = 0; /* both -inf (padding) or both nan */
            if (d > err) err = d;
        }
        double rel = scale > 0 ? err / scale : err;
        double threshold = ends_with(r.name, "[16-bit]") ? THRESHOLD_16BIT : THRESHOLD;
        if (ends_with(r.name, "[exact]")) { /* bit for bit: any differing float fails */
            threshold = 0;
            rel = memcmp(r.x, g.x, sizeof(float) * (size_t)r.n) == 0 ? 0 : INFINITY;
        }
        int ok = rel <= threshold;
        printf("%-48s %10ld %12.2e %10.0e %s\n", r.name, r.n, rel, threshold, ok ? "ok" : "FAIL");
        bad += !ok;
        count++;
        free(r.x);
        free(g.x);
    }
    printf("%d kernel outputs compared, %d over threshold\n", count, bad);
    return bad ? 1 : 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "run") == 0) {
        out = fopen(argv[2], "wb");
        if (!out) { fprintf(stderr, "check_kernels: cannot write %s\n", argv[2]); return 2; }
        run_all();
        run_llama();
        /* a VLM's: P = 16 patches of 8 x 8 x 3, the encoder's bidirectional
         * prefix, a prefix-LM mask, and causal (prefix 0) attention */
        vision_case(" 32x32 p8 prefix=16", 2, 24, 32, 32, 3, 8, 40, 4, 16);
        vision_case(" 12x20 p4 prefix=T", 3, 15, 12, 20, 1, 4, 18, 3, 15);
        vision_case(" 8x8 p4 prefix=0", 1, 9, 8, 8, 3, 4, 12, 2, 0);
        vision_act16_case(WF_BF16);
        vision_act16_case(WF_FP16);
        run_gemm_act16();
        run_optimizer();
        run_grad16();
        run_act16_kernels();
        run_width_paths();
        run_colsums();
        return fclose(out) == 0 ? 0 : 2;
    }
    if (argc == 4 && strcmp(argv[1], "compare") == 0) return compare(argv[2], argv[3]);
    fprintf(stderr, "usage: check_kernels run FILE | compare REF GOT\n");
    return 2;
}
