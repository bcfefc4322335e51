/* test_kernels.c: checks every CPU kernel pair of weft/rt.h.
 *
 * For each kernel, on random inputs of small, mostly odd sizes:
 *   fwd    the fp32 forward against a float64 reference forward written here;
 *   bwd    the fp32 backward, for every input and parameter, against central
 *          finite differences of the float64 reference, for the scalar loss
 *          L = sum(out * R) with a fixed random R (for the LM head,
 *          L = scale * sum of per-token losses, i.e. R = scale everywhere);
 *   accum  that backward accumulates: gradient buffers are pre-filled with
 *          random values G0, backward is called twice, and (G - G0) / 2 must
 *          again match the finite differences.
 * One line per kernel and size reports the largest relative error of each.
 * Finally the checker is shown able to fail: a kernel gradient scaled by 1.01
 * must be reported wrong.
 *
 * Tolerance: an element passes when |got - ref| <= max(ATOL, RTOL * |ref|);
 * the relative error printed is |got - ref| / max(|ref|, ATOL / RTOL), so
 * everything passes when it is <= RTOL.  RTOL = 1e-3 and ATOL = 1e-4 leave
 * plenty of room for fp32 rounding (about 1e-6 relative at these sizes) while
 * catching any real mistake in a formula; the finite differences use a step of
 * 1e-5 in double, whose truncation and rounding errors are around 1e-10.
 *
 * main returns 0 when everything passes, 1 otherwise.
 */
#include "weft/rt.h"

#include "blas.h"
#include "kernels_tp.h"
#include "opt_backend.h"

#include <omp.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RTOL 1e-3
#define ATOL 1e-4
#define FD_STEP 1e-5

/* ---- sizes of the current configuration -------------------------------- */

typedef struct config {
    int B, T, C, H, V, M; /* M: output width of the linear layer */
} config;

static int B, T, C, H, V, M, N; /* N = B * T */
static long NE;                 /* element count for GELU and add */

/* Integer inputs and the LM head's scale, fixed per configuration. */
static int32_t *g_tok, *g_tgt;
static float g_scale;

/* ---- allocation: every buffer has its exact size (so valgrind sees any
 * overrun) and is freed in one go at the end of each test ---------------- */

#define MAX_ALLOCS 256
static void *allocs[MAX_ALLOCS];
static int n_allocs;

static void *talloc(size_t bytes)
{
    if (n_allocs == MAX_ALLOCS) {
        fprintf(stderr, "test_kernels: too many allocations\n");
        exit(2);
    }
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "test_kernels: out of memory\n");
        exit(2);
    }
    allocs[n_allocs++] = p;
    return p;
}

static void tfree_all(void)
{
    while (n_allocs > 0)
        free(allocs[--n_allocs]);
}

static float *fbuf(long n) { return talloc(sizeof(float) * (size_t)n); }
static double *dbuf(long n) { return talloc(sizeof(double) * (size_t)n); }

/* ---- random numbers (splitmix64, so runs are reproducible) ------------- */

static uint64_t rng_state = 0x5eed1234abcdULL;

static double urand(void) /* uniform in [0, 1) */
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-53;
}

static float *frand(long n, double lo, double hi)
{
    float *p = fbuf(n);
    for (long i = 0; i < n; i++)
        p[i] = (float)(lo + (hi - lo) * urand());
    return p;
}

/* Exact double copy of fp32 data: reference and kernel see the same inputs. */
static double *to_double(const float *x, long n)
{
    double *d = dbuf(n);
    for (long i = 0; i < n; i++)
        d[i] = x[i];
    return d;
}

static float *copy(const float *x, long n)
{
    float *p = fbuf(n);
    memcpy(p, x, sizeof(float) * (size_t)n);
    return p;
}

/* ---- float64 reference forwards ---------------------------------------
 * Each takes its differentiable inputs as in[0], in[1], ... and writes out;
 * sizes and integer inputs come from the globals above. */

typedef void (*ref_fn)(double *const *in, double *out);

static void ref_embed(double *const *in, double *out)
{
    const double *wte = in[0], *wpe = in[1];
    for (int n = 0; n < N; n++)
        for (int i = 0; i < C; i++)
            out[(long)n * C + i] = wte[(long)g_tok[n] * C + i] + wpe[(long)(n % T) * C + i];
}

static void ref_layernorm_stats(const double *inp, double *out, double *mean,
                                double *rstd, const double *w, const double *b)
{
    for (int n = 0; n < N; n++) {
        const double *x = inp + (long)n * C;
        double m = 0.0, v = 0.0;
        for (int i = 0; i < C; i++)
            m += x[i];
        m /= C;
        for (int i = 0; i < C; i++)
            v += (x[i] - m) * (x[i] - m);
        v /= C;
        double s = 1.0 / sqrt(v + 1e-5);
        for (int i = 0; i < C; i++)
            out[(long)n * C + i] = (x[i] - m) * s * w[i] + b[i];
        if (mean)
            mean[n] = m;
        if (rstd)
            rstd[n] = s;
    }
}

static void ref_layernorm(double *const *in, double *out)
{
    ref_layernorm_stats(in[0], out, NULL, NULL, in[1], in[2]);
}

static void ref_linear_impl(const double *inp, const double *w, const double *b, double *out)
{
    for (int n = 0; n < N; n++)
        for (int j = 0; j < M; j++) {
            double s = b ? b[j] : 0.0;
            for (int k = 0; k < C; k++)
                s += inp[(long)n * C + k] * w[(long)k * M + j];
            out[(long)n * M + j] = s;
        }
}

static void ref_linear(double *const *in, double *out) { ref_linear_impl(in[0], in[1], in[2], out); }
static void ref_linear_nobias(double *const *in, double *out) { ref_linear_impl(in[0], in[1], NULL, out); }

/* att may be NULL; when given it receives the natural-log log-sum-exp of each
 * (b, h, t) row's scaled scores (B*H*T), what the CPU forward keeps. */
static void ref_attention_impl(const double *qkv, double *out, double *att)
{
    int hs = C / H;
    double scale = 1.0 / sqrt((double)hs);
    double *p = malloc(sizeof(double) * (size_t)T);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int t = 0; t < T; t++) {
                const double *q = qkv + ((long)b * T + t) * 3 * C + h * hs;
                double max = -INFINITY, sum = 0.0;
                for (int j = 0; j <= t; j++) {
                    const double *k = qkv + ((long)b * T + j) * 3 * C + C + h * hs;
                    double s = 0.0;
                    for (int d = 0; d < hs; d++)
                        s += q[d] * k[d];
                    p[j] = s * scale;
                    max = fmax(max, p[j]);
                }
                for (int j = 0; j <= t; j++) {
                    p[j] = exp(p[j] - max);
                    sum += p[j];
                }
                for (int d = 0; d < hs; d++) {
                    double o = 0.0;
                    for (int j = 0; j <= t; j++)
                        o += p[j] / sum * qkv[((long)b * T + j) * 3 * C + 2 * C + h * hs + d];
                    out[((long)b * T + t) * C + h * hs + d] = o;
                }
                if (att)
                    att[((long)b * H + h) * T + t] = max + log(sum);
            }
    free(p);
}

static void ref_attention(double *const *in, double *out) { ref_attention_impl(in[0], out, NULL); }

static void ref_gelu_n(double *const *in, double *out, long n)
{
    for (long i = 0; i < n; i++) {
        double x = in[0][i];
        out[i] = 0.5 * x * (1.0 + tanh(sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
    }
}

static void ref_gelu(double *const *in, double *out) { ref_gelu_n(in, out, NE); }

/* the exact GELU in its textbook form, 0.5 x (1 + erf(x / sqrt 2)), with
 * libm's double erf (the kernel evaluates the erfc form in float) */
static void ref_gelu_erf_n(double *const *in, double *out, long n)
{
    for (long i = 0; i < n; i++) {
        double x = in[0][i];
        out[i] = 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
    }
}

static void ref_gelu_erf(double *const *in, double *out) { ref_gelu_erf_n(in, out, NE); }

/* gelu(linear(x)), the pair the compiler fuses: out (N, M) */
static void ref_linear_gelu_impl(double *const *in, double *out, int with_bias)
{
    ref_linear_impl(in[0], in[1], with_bias ? in[2] : NULL, out);
    double *pre[] = {out};
    ref_gelu_n(pre, out, (long)N * M); /* elementwise: in place is fine */
}
static void ref_linear_gelu(double *const *in, double *out) { ref_linear_gelu_impl(in, out, 1); }
static void ref_linear_gelu_nobias(double *const *in, double *out) { ref_linear_gelu_impl(in, out, 0); }

static void ref_add(double *const *in, double *out)
{
    for (long i = 0; i < NE; i++)
        out[i] = in[0][i] + in[1][i];
}

/* losses (N); probs (N, V) may be NULL. */
static void ref_lmhead_impl(const double *x, const double *wte, double *losses, double *probs)
{
    double *logit = malloc(sizeof(double) * (size_t)V);
    for (int n = 0; n < N; n++) {
        double max = -INFINITY, sum = 0.0;
        for (int v = 0; v < V; v++) {
            double s = 0.0;
            for (int i = 0; i < C; i++)
                s += x[(long)n * C + i] * wte[(long)v * C + i];
            logit[v] = s;
            max = fmax(max, s);
        }
        for (int v = 0; v < V; v++)
            sum += exp(logit[v] - max);
        losses[n] = log(sum) + max - logit[g_tgt[n]];
        if (probs)
            for (int v = 0; v < V; v++)
                probs[(long)n * V + v] = exp(logit[v] - max) / sum;
    }
    free(logit);
}

static void ref_lmhead(double *const *in, double *out) { ref_lmhead_impl(in[0], in[1], out, NULL); }

/* ---- finite differences and comparisons -------------------------------- */

static double loss_of(ref_fn f, double *const *in, const double *R, double *out, long out_len)
{
    f(in, out);
    double L = 0.0;
    for (long i = 0; i < out_len; i++)
        L += out[i] * R[i];
    return L;
}

/* dL/d in[which], by central differences of the reference forward. */
static double *fd_grad(ref_fn f, double *const *in, int which, long len,
                       const double *R, long out_len)
{
    double *g = dbuf(len);
    double *out = dbuf(out_len);
    for (long i = 0; i < len; i++) {
        double saved = in[which][i];
        in[which][i] = saved + FD_STEP;
        double lp = loss_of(f, in, R, out, out_len);
        in[which][i] = saved - FD_STEP;
        double lm = loss_of(f, in, R, out, out_len);
        in[which][i] = saved;
        g[i] = (lp - lm) / (2.0 * FD_STEP);
    }
    return g;
}

/* Largest |got - ref| / max(|ref|, ATOL / RTOL); NaN if anything is NaN. */
static double rel_err(const float *got, const double *ref, long n)
{
    double worst = 0.0;
    for (long i = 0; i < n; i++) {
        double e = fabs(got[i] - ref[i]) / fmax(fabs(ref[i]), ATOL / RTOL);
        if (isnan(e))
            return NAN;
        if (e > worst)
            worst = e;
    }
    return worst;
}

/* Like rel_err, on what `calls` backward calls added: (after - before) / calls. */
static double grad_err(const float *after, const float *before, int calls,
                       const double *fd, long n)
{
    double worst = 0.0;
    for (long i = 0; i < n; i++) {
        double added = ((double)after[i] - before[i]) / calls;
        double e = fabs(added - fd[i]) / fmax(fabs(fd[i]), ATOL / RTOL);
        if (isnan(e))
            return NAN;
        if (e > worst)
            worst = e;
    }
    return worst;
}

static double worse(double a, double b) { return (isnan(a) || a > b) ? a : b; }

/* A gradient buffer pre-filled with random values, and a copy of them. */
typedef struct grad {
    float *g, *g0;
    long n;
} grad;

static grad grad_new(long n)
{
    grad d = {frand(n, -1.0, 1.0), NULL, n};
    d.g0 = copy(d.g, n);
    return d;
}

/* ---- results ----------------------------------------------------------- */

typedef struct result {
    double fwd, bwd, acc;
} result;

static int failures;
static char cfg_name[64];

static void report(const char *kernel, result r)
{
    int ok = r.fwd <= RTOL && r.bwd <= RTOL && r.acc <= RTOL;
    printf("%-16s %-22s fwd %.2e  bwd %.2e  accum %.2e  %s\n", kernel, cfg_name,
           r.fwd, r.bwd, r.acc, ok ? "ok" : "FAIL");
    if (!ok)
        failures++;
}

/* ---- one test per kernel pair ------------------------------------------ */

static void test_embed(void)
{
    float *wte = frand((long)V * C, -1, 1), *wpe = frand((long)T * C, -1, 1);
    double *in[] = {to_double(wte, (long)V * C), to_double(wpe, (long)T * C)};
    long n_out = (long)N * C;
    result r;

    float *out = fbuf(n_out);
    double *ref = dbuf(n_out);
    wf_embed_fwd(NULL, out, g_tok, wte, wpe, B, T, C);
    ref_embed(in, ref);
    r.fwd = rel_err(out, ref, n_out);

    float *dout = frand(n_out, -1, 1);
    double *R = to_double(dout, n_out);
    double *fd_wte = fd_grad(ref_embed, in, 0, (long)V * C, R, n_out);
    double *fd_wpe = fd_grad(ref_embed, in, 1, (long)T * C, R, n_out);
    grad dwte = grad_new((long)V * C), dwpe = grad_new((long)T * C);

    wf_embed_bwd(NULL, dwte.g, dwpe.g, dout, g_tok, B, T, C);
    r.bwd = worse(grad_err(dwte.g, dwte.g0, 1, fd_wte, dwte.n),
                  grad_err(dwpe.g, dwpe.g0, 1, fd_wpe, dwpe.n));
    wf_embed_bwd(NULL, dwte.g, dwpe.g, dout, g_tok, B, T, C);
    r.acc = worse(grad_err(dwte.g, dwte.g0, 2, fd_wte, dwte.n),
                  grad_err(dwpe.g, dwpe.g0, 2, fd_wpe, dwpe.n));
    report("embed", r);
    tfree_all();
}

static void test_layernorm(void)
{
    long n_x = (long)N * C;
    float *x = frand(n_x, -2, 2), *w = frand(C, -1.5, 1.5), *b = frand(C, -1, 1);
    double *in[] = {to_double(x, n_x), to_double(w, C), to_double(b, C)};
    result r;

    float *out = fbuf(n_x), *mean = fbuf(N), *rstd = fbuf(N);
    double *ref = dbuf(n_x), *ref_mean = dbuf(N), *ref_rstd = dbuf(N);
    wf_layernorm_fwd(NULL, out, mean, rstd, x, w, b, N, C);
    ref_layernorm_stats(in[0], ref, ref_mean, ref_rstd, in[1], in[2]);
    r.fwd = worse(rel_err(out, ref, n_x),
                  worse(rel_err(mean, ref_mean, N), rel_err(rstd, ref_rstd, N)));

    float *dout = frand(n_x, -1, 1);
    double *R = to_double(dout, n_x);
    double *fd_x = fd_grad(ref_layernorm, in, 0, n_x, R, n_x);
    double *fd_w = fd_grad(ref_layernorm, in, 1, C, R, n_x);
    double *fd_b = fd_grad(ref_layernorm, in, 2, C, R, n_x);
    grad dx = grad_new(n_x), dw = grad_new(C), db = grad_new(C);

    for (int call = 1; call <= 2; call++) {
        wf_layernorm_bwd(NULL, dx.g, dw.g, db.g, dout, x, w, mean, rstd, N, C);
        double e = worse(grad_err(dx.g, dx.g0, call, fd_x, n_x),
                         worse(grad_err(dw.g, dw.g0, call, fd_w, C),
                               grad_err(db.g, db.g0, call, fd_b, C)));
        if (call == 1)
            r.bwd = e;
        else
            r.acc = e;
    }
    report("layernorm", r);
    tfree_all();
}

/* Shows the checker can fail: the kernel's own dw increment, scaled by 1.01,
 * must be rejected.  Returns 1 if it was (as it should be). */
static int wrong_gradient_caught(const grad *dw, const double *fd)
{
    float *wrong = fbuf(dw->n);
    for (long i = 0; i < dw->n; i++)
        wrong[i] = dw->g0[i] + 1.01f * (dw->g[i] - dw->g0[i]);
    double e = grad_err(wrong, dw->g0, 1, fd, dw->n);
    int caught = !(e <= RTOL);
    printf("%-16s %-22s dw * 1.01 gives %.2e: %s\n", "self-test", cfg_name, e,
           caught ? "caught" : "NOT CAUGHT");
    return caught;
}

static void test_linear(int with_bias)
{
    long n_x = (long)N * C, n_w = (long)C * M, n_out = (long)N * M;
    float *x = frand(n_x, -1, 1), *w = frand(n_w, -1, 1);
    float *b = with_bias ? frand(M, -1, 1) : NULL;
    double *in[] = {to_double(x, n_x), to_double(w, n_w), b ? to_double(b, M) : NULL};
    ref_fn f = with_bias ? ref_linear : ref_linear_nobias;
    result r;

    float *out = fbuf(n_out);
    double *ref = dbuf(n_out);
    wf_linear_fwd(NULL, out, x, w, b, N, C, M);
    f(in, ref);
    r.fwd = rel_err(out, ref, n_out);

    float *dout = frand(n_out, -1, 1);
    double *R = to_double(dout, n_out);
    double *fd_x = fd_grad(f, in, 0, n_x, R, n_out);
    double *fd_w = fd_grad(f, in, 1, n_w, R, n_out);
    double *fd_b = with_bias ? fd_grad(f, in, 2, M, R, n_out) : NULL;
    grad dx = grad_new(n_x), dw = grad_new(n_w), db = grad_new(M);
    float *dw_once = NULL; /* dw after the first call, for the self-test */

    for (int call = 1; call <= 2; call++) {
        wf_linear_bwd(NULL, dx.g, dw.g, with_bias ? db.g : NULL, dout, x, w, N, C, M);
        double e = worse(grad_err(dx.g, dx.g0, call, fd_x, n_x),
                         grad_err(dw.g, dw.g0, call, fd_w, n_w));
        if (with_bias)
            e = worse(e, grad_err(db.g, db.g0, call, fd_b, M));
        if (call == 1)
            r.bwd = e;
        else
            r.acc = e;
        if (call == 1)
            dw_once = copy(dw.g, n_w);
    }
    report(with_bias ? "linear" : "linear (no bias)", r);
    if (with_bias) {
        grad once = {dw_once, dw.g0, n_w};
        if (!wrong_gradient_caught(&once, fd_w))
            failures++;
    }
    tfree_all();
}

static int same_bits(const float *x, const float *y, long n);

/* The fused linear + GELU (the compiler swaps it for the pair c_fc, gelu):
 * forward against the float64 composition, and forward and backward (the B
 * half, then the W half on the same d(pre)) bit for bit against the unfused
 * calls, twice, so the accumulation is compared too. */
static void test_linear_gelu(int with_bias)
{
    long n_x = (long)N * C, n_w = (long)C * M, n_out = (long)N * M;
    float *x = frand(n_x, -1, 1), *w = frand(n_w, -1, 1);
    float *b = with_bias ? frand(M, -1, 1) : NULL;
    double *in[] = {to_double(x, n_x), to_double(w, n_w), b ? to_double(b, M) : NULL};
    result r = {0, 0, 0};

    float *pre = fbuf(n_out), *out = fbuf(n_out);
    double *ref_pre = dbuf(n_out), *ref = dbuf(n_out);
    wf_linear_gelu_fwd(NULL, pre, out, x, w, b, N, C, M);
    ref_linear_impl(in[0], in[1], in[2], ref_pre);
    double *gin[] = {ref_pre};
    ref_gelu_n(gin, ref, n_out);
    r.fwd = worse(rel_err(pre, ref_pre, n_out), rel_err(out, ref, n_out));

    float *pre2 = fbuf(n_out), *out2 = fbuf(n_out);
    wf_linear_fwd(NULL, pre2, x, w, b, N, C, M);
    wf_gelu_fwd(NULL, out2, pre2, n_out);
    int same = same_bits(pre, pre2, n_out) && same_bits(out, out2, n_out);

    /* against finite differences: d(pre) is a fresh (zeroed) buffer per
     * backward, as the gelu's input gradient is in a step */
    float *dout = frand(n_out, -1, 1), *dpre = fbuf(n_out);
    double *R = to_double(dout, n_out);
    ref_fn f = with_bias ? ref_linear_gelu : ref_linear_gelu_nobias;
    double *fd_x = fd_grad(f, in, 0, n_x, R, n_out), *fd_w = fd_grad(f, in, 1, n_w, R, n_out);
    double *fd_b = with_bias ? fd_grad(f, in, 2, M, R, n_out) : NULL;
    grad dx = grad_new(n_x), dw = grad_new(n_w), db = grad_new(M);
    for (int call = 1; call <= 2; call++) {
        memset(dpre, 0, sizeof(float) * (size_t)n_out);
        wf_linear_gelu_bwd_input(NULL, dx.g, dpre, dout, pre, w, N, C, M);
        wf_linear_bwd_weight(NULL, dw.g, with_bias ? db.g : NULL, dpre, x, N, C, M);
        double e = worse(grad_err(dx.g, dx.g0, call, fd_x, n_x), grad_err(dw.g, dw.g0, call, fd_w, n_w));
        if (with_bias)
            e = worse(e, grad_err(db.g, db.g0, call, fd_b, M));
        if (call == 1)
            r.bwd = e;
        else
            r.acc = e;
    }

    /* bit for bit against the unfused calls, d(pre) accumulated into as well */
    float *dpre1 = frand(n_out, -1, 1), *dpre2 = copy(dpre1, n_out);
    float *dx2 = copy(dx.g, n_x), *dw2 = copy(dw.g, n_w), *db2 = copy(db.g, M);
    for (int call = 1; call <= 2; call++) {
        wf_linear_gelu_bwd_input(NULL, dx.g, dpre1, dout, pre, w, N, C, M);
        wf_linear_bwd_weight(NULL, dw.g, with_bias ? db.g : NULL, dpre1, x, N, C, M);
        wf_gelu_bwd(NULL, dpre2, pre2, dout, n_out);
        wf_linear_bwd(NULL, dx2, dw2, with_bias ? db2 : NULL, dpre2, x, w, N, C, M);
    }
    same = same && same_bits(dpre1, dpre2, n_out) && same_bits(dx.g, dx2, n_x) && same_bits(dw.g, dw2, n_w) &&
           same_bits(db.g, db2, M);
    const char *name = with_bias ? "linear_gelu" : "linear_gelu (no b)";
    report(name, r);
    printf("%-16s %-22s %s\n", name, "== linear + gelu", same ? "ok" : "FAIL");
    if (!same)
        failures++;
    tfree_all();
}

/* linear(gelu(pre)) without bias, the pair whose backward the compiler
 * fuses (gelu, c_proj): pre (N, M), w (M, C), out (N, C) */
static void ref_gelu_linear(double *const *in, double *out)
{
    long n_pre = (long)N * M;
    double *g = malloc(sizeof(double) * (size_t)n_pre);
    ref_gelu_n(in, g, n_pre);
    for (int n = 0; n < N; n++)
        for (int j = 0; j < C; j++) {
            double s = 0.0;
            for (int k = 0; k < M; k++)
                s += g[(long)n * M + k] * in[1][(long)k * C + j];
            out[(long)n * C + j] = s;
        }
    free(g);
}

/* c_proj's input gradient with the gelu's backward (wf_linear_dgelu_bwd_input):
 * d(pre) against finite differences of linear(gelu(pre)); written, not
 * accumulated (d(pre) starts random, and a second call must give the same
 * error, "accum"); and bit for bit the unfused calls of an fp32 plan (the
 * linear's input gradient into a zero d(gelu out), the gelu's backward into
 * a zero d(pre)). */
static void test_linear_dgelu(void)
{
    long n_pre = (long)N * M, n_w = (long)M * C, n_out = (long)N * C;
    float *pre = frand(n_pre, -2, 2), *w = frand(n_w, -1, 1), *dout = frand(n_out, -1, 1);
    double *in[] = {to_double(pre, n_pre), to_double(w, n_w)};
    double *fd_pre = fd_grad(ref_gelu_linear, in, 0, n_pre, to_double(dout, n_out), n_out);
    result r = {0, 0, 0};

    float *dpre = frand(n_pre, -1, 1);
    wf_linear_dgelu_bwd_input(NULL, dpre, dout, pre, w, N, M, C);
    r.bwd = rel_err(dpre, fd_pre, n_pre);
    wf_linear_dgelu_bwd_input(NULL, dpre, dout, pre, w, N, M, C);
    r.acc = rel_err(dpre, fd_pre, n_pre);

    float *dg = fbuf(n_pre), *dpre2 = fbuf(n_pre);
    memset(dg, 0, sizeof(float) * (size_t)n_pre);
    memset(dpre2, 0, sizeof(float) * (size_t)n_pre);
    wf_linear_bwd_input(NULL, dg, dout, w, N, M, C);
    wf_gelu_bwd(NULL, dpre2, pre, dg, n_pre);
    int same = same_bits(dpre, dpre2, n_pre);
    report("linear_dgelu", r);
    printf("%-16s %-22s %s\n", "linear_dgelu", "== linear + gelu bwd", same ? "ok" : "FAIL");
    if (!same)
        failures++;
    tfree_all();
}

static void test_attention(void)
{
    long n_qkv = (long)N * 3 * C, n_out = (long)N * C, n_att = (long)B * H * T;
    float *qkv = frand(n_qkv, -2, 2); /* wide enough for peaked softmaxes */
    double *in[] = {to_double(qkv, n_qkv)};
    result r;

    float *out = fbuf(n_out), *att = fbuf(n_att);
    double *ref = dbuf(n_out), *ref_att = dbuf(n_att);
    wf_attention_fwd(NULL, out, att, qkv, B, T, C, H);
    ref_attention_impl(in[0], ref, ref_att);
    r.fwd = worse(rel_err(out, ref, n_out), rel_err(att, ref_att, n_att));

    float *dout = frand(n_out, -1, 1);
    double *R = to_double(dout, n_out);
    double *fd_qkv = fd_grad(ref_attention, in, 0, n_qkv, R, n_out);
    grad dqkv = grad_new(n_qkv);
    float *scratch = fbuf(n_att); /* D per row */

    wf_attention_bwd(NULL, dqkv.g, scratch, dout, qkv, out, att, B, T, C, H);
    r.bwd = grad_err(dqkv.g, dqkv.g0, 1, fd_qkv, n_qkv);
    wf_attention_bwd(NULL, dqkv.g, scratch, dout, qkv, out, att, B, T, C, H);
    r.acc = grad_err(dqkv.g, dqkv.g0, 2, fd_qkv, n_qkv);
    report("attention", r);
    tfree_all();
}

/* An elementwise activation: forward against its float64 reference on x
 * in [lo, hi], backward (and its accumulation) against finite differences. */
typedef void (*unary_fwd)(wf_ctx *c, float *out, const float *inp, long n);
typedef void (*unary_bwd)(wf_ctx *c, float *dinp, const float *inp, const float *dout, long n);

static void test_unary(const char *name, unary_fwd fwd, unary_bwd bwd, ref_fn ref_of, float lo, float hi)
{
    float *x = frand(NE, lo, hi);
    double *in[] = {to_double(x, NE)};
    result r;

    float *out = fbuf(NE);
    double *ref = dbuf(NE);
    fwd(NULL, out, x, NE);
    ref_of(in, ref);
    r.fwd = rel_err(out, ref, NE);

    float *dout = frand(NE, -1, 1);
    double *R = to_double(dout, NE);
    double *fd_x = fd_grad(ref_of, in, 0, NE, R, NE);
    grad dx = grad_new(NE);

    bwd(NULL, dx.g, x, dout, NE);
    r.bwd = grad_err(dx.g, dx.g0, 1, fd_x, NE);
    bwd(NULL, dx.g, x, dout, NE);
    r.acc = grad_err(dx.g, dx.g0, 2, fd_x, NE);
    report(name, r);
    tfree_all();
}

static void test_gelu(void)
{
    test_unary("gelu", wf_gelu_fwd, wf_gelu_bwd, ref_gelu, -4, 4);
}

/* The exact GELU (wf_gelu_erf_*) as the tanh one above, on x in [-6, 6]:
 * wider, so that the left tail, where erf is near -1, is exercised. */
static void test_gelu_erf(void)
{
    test_unary("gelu_erf", wf_gelu_erf_fwd, wf_gelu_erf_bwd, ref_gelu_erf, -6, 6);
}

/* The exact GELU against values derived independently of any libm:
 * gelu(x) = x Phi(x) and gelu'(x) = Phi(x) + x phi(x) with Phi from the
 * Maclaurin series of erf, summed in 80-digit decimal arithmetic and rounded
 * to double (tests/unit/gelu_erf_values.py prints these rows); they agree
 * with the normal tables (Phi(1) = 0.8413447460685429, Phi(-1) =
 * 0.1586552539314570, phi(1) = 0.2419707245191434).  Each x is a float, so
 * the kernel sees it exactly.
 *
 * Tolerance, relative, derived for fp32: t = x / sqrt 2 is rounded twice
 * (the constant and the product), a relative error of 2^-23 at most, which
 * erfc's condition number |t erfc'(t) / erfc(t)| <= 2 t^2 + 1 = x^2 + 1
 * amplifies; erfcf and expf add a few ulps (4 allowed, 8 units of 2^-24)
 * and each product and the sum one rounding.  exp(-x^2 / 2) has condition
 * number x^2 / 2 on the rounding of x^2.  So each term is within
 * (2 x^2 + 16) 2^-24 of its value, and the derivative's sum within that
 * times (|Phi| + |x phi|) / |Phi + x phi| (the terms have opposite signs for
 * x < 0).  At x = 6: 88 units of 2^-24, 5e-6.  gelu(0) = 0 must be exact.
 *
 * Also here: the reference test_gelu_erf uses (libm's double erf, the
 * textbook formula) agrees with these values to 1e-15 in absolute terms
 * (1 + erf cancels in the tail, in double too), and the tanh approximation
 * (wf_gelu_fwd) is shown to fail them: this check tells the two apart. */
static const struct {
    float x;
    double gelu, dgelu;
} gelu_erf_values[] = {
    {-6, -5.91952587022618854e-09, -3.54687094539020151e-08},
    {-5, -1.43325785939596951e-06, -7.14694600179229474e-06},
    {-4, -1.26684967332479697e-04, -5.03649661226421492e-04},
    {-3, -4.04969409489028351e-03, -1.19456472041839269e-02},
    {-2, -4.55002638963584172e-02, -8.52318010781969032e-02},
    {-1.5f, -1.00210801903287100e-01, -1.27469192229979517e-01},
    {-1, -1.58655253931457046e-01, -8.33154705876863050e-02},
    {-0.5f, -1.54268769362993441e-01, 1.32504875343837147e-01},
    {-0.125f, -5.62827218962358850e-02, 4.00782064301793417e-01},
    {0, 0.00000000000000000e+00, 5.00000000000000000e-01},
    {0.25f, 1.49676581420730925e-01, 6.95373354883636052e-01},
    {0.5f, 3.45731230637006559e-01, 8.67495124656162853e-01},
    {1, 8.41344746068542926e-01, 1.08331547058768640e+00},
    {1.25f, 1.11793778291643098e+00, 1.12266158306942221e+00},
    {2, 1.95449973610364158e+00, 1.08523180107819694e+00},
    {3, 2.99595030590510980e+00, 1.01194564720418390e+00},
    {4, 3.99987331503266752e+00, 1.00050364966122651e+00},
    {6, 5.99999999408047380e+00, 1.00000003546870952e+00},
};

static void test_gelu_erf_values(void)
{
    enum { NV = sizeof gelu_erf_values / sizeof gelu_erf_values[0] };
    float x[NV], y[NV], dy[NV], ones[NV], tanh_y[NV];
    for (int i = 0; i < NV; i++) {
        x[i] = gelu_erf_values[i].x;
        dy[i] = 0.0f;
        ones[i] = 1.0f;
    }
    wf_gelu_erf_fwd(NULL, y, x, NV);
    wf_gelu_erf_bwd(NULL, dy, x, ones, NV); /* into zeros, times 1: gelu'(x) */
    wf_gelu_fwd(NULL, tanh_y, x, NV);

    double worst = 0.0, worst_ref = 0.0; /* in units of the tolerance; absolute */
    int tanh_fails = 0;
    for (int i = 0; i < NV; i++) {
        double xi = x[i], g = gelu_erf_values[i].gelu, dg = gelu_erf_values[i].dgelu;
        double unit = (2.0 * xi * xi + 16.0) * 0x1p-24;
        double cdf = 0.5 * erfc(-xi / sqrt(2.0)), xpdf = xi * exp(-0.5 * xi * xi) / sqrt(2.0 * 3.14159265358979323846);
        double tol_g = unit * fabs(g), tol_dg = unit * (fabs(cdf) + fabs(xpdf));
        worst = fmax(worst, g == 0.0 ? (y[i] == 0.0f ? 0.0 : INFINITY) : fabs(y[i] - g) / tol_g);
        worst = fmax(worst, fabs(dy[i] - dg) / tol_dg);
        double in0[] = {xi}, *in[] = {in0}, ref;
        ref_gelu_erf_n(in, &ref, 1);
        worst_ref = fmax(worst_ref, fabs(ref - g));
        tanh_fails += g != 0.0 && fabs(tanh_y[i] - g) > tol_g;
    }
    int ok = worst <= 1.0 && worst_ref <= 1e-15 && tanh_fails > NV / 2;
    printf("%-16s %-22s err %.2f of tol, ref %.1e, tanh fails %d/%d  %s\n", "gelu_erf values",
           "[Maclaurin, 80 digits]", worst, worst_ref, tanh_fails, NV - 1, ok ? "ok" : "FAIL");
    if (!ok)
        failures++;
}

static void test_add(void)
{
    float *a = frand(NE, -1, 1), *b = frand(NE, -1, 1);
    double *in[] = {to_double(a, NE), to_double(b, NE)};
    result r;

    float *out = fbuf(NE);
    double *ref = dbuf(NE);
    wf_add_fwd(NULL, out, a, b, NE);
    ref_add(in, ref);
    r.fwd = rel_err(out, ref, NE);

    float *dout = frand(NE, -1, 1);
    double *R = to_double(dout, NE);
    double *fd_a = fd_grad(ref_add, in, 0, NE, R, NE);
    double *fd_b = fd_grad(ref_add, in, 1, NE, R, NE);
    grad da = grad_new(NE), db = grad_new(NE);

    wf_add_bwd(NULL, da.g, db.g, dout, NE);
    r.bwd = worse(grad_err(da.g, da.g0, 1, fd_a, NE), grad_err(db.g, db.g0, 1, fd_b, NE));
    wf_add_bwd(NULL, da.g, db.g, dout, NE);
    r.acc = worse(grad_err(da.g, da.g0, 2, fd_a, NE), grad_err(db.g, db.g0, 2, fd_b, NE));
    report("add", r);
    tfree_all();
}

/* Fused residual + layernorm: outputs (res, ln) side by side, so that the
 * finite differences of sum(R1 * res + R2 * ln) give the gradients the fused
 * backward computes from dres = R1 and dln = R2. */
static void ref_residual_layernorm(double *const *in, double *out)
{
    long n_x = (long)N * C;
    for (long i = 0; i < n_x; i++)
        out[i] = in[0][i] + in[1][i];
    ref_layernorm_stats(out, out + n_x, NULL, NULL, in[2], in[3]);
}

static int same_bits(const float *x, const float *y, long n)
{
    return memcmp(x, y, sizeof(float) * (size_t)n) == 0;
}

static void test_residual_layernorm(void)
{
    long n_x = (long)N * C;
    float *a = frand(n_x, -2, 2), *b = frand(n_x, -1, 1);
    float *w = frand(C, -1.5, 1.5), *bias = frand(C, -1, 1);
    double *in[] = {to_double(a, n_x), to_double(b, n_x), to_double(w, C), to_double(bias, C)};
    result r = {0, 0, 0};

    float *res = fbuf(n_x), *out = fbuf(n_x), *mean = fbuf(N), *rstd = fbuf(N);
    double *ref = dbuf(2 * n_x), *ref_mean = dbuf(N), *ref_rstd = dbuf(N);
    wf_residual_layernorm_fwd(NULL, res, out, mean, rstd, a, b, w, bias, N, C);
    ref_residual_layernorm(in, ref);
    ref_layernorm_stats(ref, ref + n_x, ref_mean, ref_rstd, in[2], in[3]);
    r.fwd = worse(worse(rel_err(res, ref, n_x), rel_err(out, ref + n_x, n_x)),
                  worse(rel_err(mean, ref_mean, N), rel_err(rstd, ref_rstd, N)));

    /* the unfused pair, for bit-for-bit agreement (the compiler swaps one for the other) */
    float *res2 = fbuf(n_x), *out2 = fbuf(n_x), *mean2 = fbuf(N), *rstd2 = fbuf(N);
    wf_add_fwd(NULL, res2, a, b, n_x);
    wf_layernorm_fwd(NULL, out2, mean2, rstd2, res2, w, bias, N, C);
    int same = same_bits(res, res2, n_x) && same_bits(out, out2, n_x) && same_bits(mean, mean2, N) &&
               same_bits(rstd, rstd2, N);

    float *dres = frand(n_x, -1, 1), *dln = frand(n_x, -1, 1);
    double *R = dbuf(2 * n_x);
    for (long i = 0; i < n_x; i++) {
        R[i] = dres[i];
        R[n_x + i] = dln[i];
    }
    double *fd_a = fd_grad(ref_residual_layernorm, in, 0, n_x, R, 2 * n_x);
    double *fd_b = fd_grad(ref_residual_layernorm, in, 1, n_x, R, 2 * n_x);
    double *fd_w = fd_grad(ref_residual_layernorm, in, 2, C, R, 2 * n_x);
    double *fd_bias = fd_grad(ref_residual_layernorm, in, 3, C, R, 2 * n_x);
    grad da = grad_new(n_x), db = grad_new(n_x), dw = grad_new(C), dbias = grad_new(C);
    float *da2 = copy(da.g, n_x), *db2 = copy(db.g, n_x), *dw2 = copy(dw.g, C), *dbias2 = copy(dbias.g, C);

    for (int call = 1; call <= 2; call++) {
        wf_residual_layernorm_bwd(NULL, da.g, db.g, dw.g, dbias.g, dres, dln, res, w, mean, rstd, N, C);
        double e = worse(worse(grad_err(da.g, da.g0, call, fd_a, n_x), grad_err(db.g, db.g0, call, fd_b, n_x)),
                         worse(grad_err(dw.g, dw.g0, call, fd_w, C), grad_err(dbias.g, dbias.g0, call, fd_bias, C)));
        if (call == 1)
            r.bwd = e;
        else
            r.acc = e;
        /* unfused: the layernorm adds into the residual's gradient, the add passes it on */
        float *dx = copy(dres, n_x);
        wf_layernorm_bwd(NULL, dx, dw2, dbias2, dln, res2, w, mean2, rstd2, N, C);
        wf_add_bwd(NULL, da2, db2, dx, n_x);
    }
    same = same && same_bits(da.g, da2, n_x) && same_bits(db.g, db2, n_x) && same_bits(dw.g, dw2, C) &&
           same_bits(dbias.g, dbias2, C);
    report("residual_ln", r);
    printf("%-16s %-22s %s\n", "residual_ln", "== add + layernorm", same ? "ok" : "FAIL");
    if (!same)
        failures++;
    tfree_all();
}

static void test_lmhead_xent(void)
{
    long n_x = (long)N * C, n_w = (long)V * C, n_p = (long)N * V;
    float *x = frand(n_x, -1, 1), *wte = frand(n_w, -1, 1);
    double *in[] = {to_double(x, n_x), to_double(wte, n_w)};
    result r;

    /* the forward writes the loss gradient: dlogits = (probs - onehot) * scale */
    float *dlogits = fbuf(n_p), *losses = fbuf(N);
    double *ref_dlogits = dbuf(n_p), *ref_losses = dbuf(N);
    double total = wf_lmhead_xent_fwd(NULL, dlogits, losses, x, wte, g_tgt, g_scale, N, C, V);
    ref_lmhead_impl(in[0], in[1], ref_losses, ref_dlogits);
    for (int n = 0; n < N; n++) {
        ref_dlogits[(long)n * V + g_tgt[n]] -= 1.0;
        for (int j = 0; j < V; j++)
            ref_dlogits[(long)n * V + j] *= g_scale;
    }
    double ref_total = 0.0;
    for (int n = 0; n < N; n++)
        ref_total += ref_losses[n];
    float total_f = (float)total;
    r.fwd = worse(rel_err(dlogits, ref_dlogits, n_p),
                  worse(rel_err(losses, ref_losses, N), rel_err(&total_f, &ref_total, 1)));

    /* L = scale * sum of losses: the reference output is the losses, R = scale. */
    double *R = dbuf(N);
    for (int n = 0; n < N; n++)
        R[n] = g_scale;
    double *fd_x = fd_grad(ref_lmhead, in, 0, n_x, R, N);
    double *fd_w = fd_grad(ref_lmhead, in, 1, n_w, R, N);
    grad dx = grad_new(n_x), dw = grad_new(n_w);

    for (int call = 1; call <= 2; call++) {
        /* backward only reads dlogits: the second call accumulates the same again */
        wf_lmhead_xent_bwd(NULL, dx.g, dw.g, dlogits, x, wte, N, C, V);
        double e = worse(grad_err(dx.g, dx.g0, call, fd_x, n_x),
                         grad_err(dw.g, dw.g0, call, fd_w, n_w));
        if (call == 1)
            r.bwd = e;
        else
            r.acc = e;
    }
    report("lmhead_xent", r);
    tfree_all();
}

/* The CPU backend's fused, chunked head (wf_lmhead_xent_chunked): logits,
 * softmax, loss and both backward GEMMs in one call, `chunk` token rows at a
 * time.  (1) Against float64: losses and their total, and what dx / dwte
 * received (twice: it accumulates) against finite differences, as
 * test_lmhead_xent.  (2) Against the unchunked pair (wf_lmhead_xent_fwd then
 * _bwd), element by element, within what the arithmetic allows two float
 * evaluations that group the sums differently to differ by (u = 2^-24,
 * gamma_k = k u / (1 - k u); S(...) a sum of absolute terms, in double from
 * the exact values):
 *   logits: each a float sum of C products, within gamma_C S(|x w|) of exact,
 *     so the two differ by d_n <= 2 gamma_C max_v S(|x_n w_v|) in row n;
 *   dlogits: the same per-row code on logits that differ by d_n: the
 *     softmax moves by at most p (e^(2 d_n) - 1); each evaluation rounds the
 *     logit - max (relative u, so exp by |l - max| u), expf (1 ulp), 1 / sum,
 *     p and p * scale (and p - 1 at the target): |D dl| <= scale (p e + 2u
 *     [v = t]) with e = e^(2 d_n) - 1 + 2 (5 + |l - max|) u;
 *   dwte = sum over N tokens of dl x (the chunks' partial sums vs one sum):
 *     2 gamma_N S(|dl x|) + S(|D dl| |x|); dx = sum over V of dl wte, likewise
 *     with gamma_V;
 *   losses: log(sum) - (l_t - max) moves by 2 d_n, and each evaluation's
 *     sum of exponentials is within (2 + R_n) u relative (R_n the row's
 *     logit range), the float result within u |loss|: 2 d_n + 2 (2 + R_n) u
 *     + 2 u |loss|.
 * The bounds use the exact |dl| = scale |p - onehot|; the float values are
 * within a few u of them, which the factor 1.01 covers.  Printed: the largest
 * |difference| / bound (<= 1 passes). */
static double gamma_k(long k) { return (double)k * 0x1p-24 / (1.0 - (double)k * 0x1p-24); }

static void test_lmhead_xent_chunked(int chunk)
{
    const double u = 0x1p-24, slack = 1.01;
    long n_x = (long)N * C, n_w = (long)V * C, n_p = (long)N * V;
    float *x = frand(n_x, -1, 1), *wte = frand(n_w, -1, 1);
    double *in[] = {to_double(x, n_x), to_double(wte, n_w)};
    result r;

    /* (1) float64 and finite differences */
    float *losses = fbuf(N), *scratch = fbuf((long)(chunk < N ? chunk : N) * V);
    double *ref_losses = dbuf(N), *probs = dbuf(n_p);
    ref_lmhead_impl(in[0], in[1], ref_losses, probs);
    double ref_total = 0.0;
    for (int n = 0; n < N; n++)
        ref_total += ref_losses[n];
    double *R = dbuf(N);
    for (int n = 0; n < N; n++)
        R[n] = g_scale;
    double *fd_x = fd_grad(ref_lmhead, in, 0, n_x, R, N);
    double *fd_w = fd_grad(ref_lmhead, in, 1, n_w, R, N);
    grad dx = grad_new(n_x), dw = grad_new(n_w);
    for (int call = 1; call <= 2; call++) {
        double total = wf_lmhead_xent_chunked(NULL, dx.g, dw.g, losses, scratch, x, wte, g_tgt,
                                              g_scale, N, C, V, chunk);
        float total_f = (float)total;
        double e = worse(grad_err(dx.g, dx.g0, call, fd_x, n_x), grad_err(dw.g, dw.g0, call, fd_w, n_w));
        if (call == 1) {
            r.fwd = worse(rel_err(losses, ref_losses, N), rel_err(&total_f, &ref_total, 1));
            r.bwd = e;
        } else {
            r.acc = e;
        }
    }
    char what[32];
    snprintf(what, sizeof what, "lmhead_chunk%d", chunk);
    report(what, r);

    /* (2) the unchunked pair, from zero gradients */
    float *dl_whole = fbuf(n_p), *l_whole = fbuf(N);
    float *dx1 = fbuf(n_x), *dw1 = fbuf(n_w), *dx2 = fbuf(n_x), *dw2 = fbuf(n_w);
    memset(dx1, 0, sizeof(float) * (size_t)n_x), memset(dw1, 0, sizeof(float) * (size_t)n_w);
    memset(dx2, 0, sizeof(float) * (size_t)n_x), memset(dw2, 0, sizeof(float) * (size_t)n_w);
    wf_lmhead_xent_fwd(NULL, dl_whole, l_whole, x, wte, g_tgt, g_scale, N, C, V);
    wf_lmhead_xent_bwd(NULL, dx1, dw1, dl_whole, x, wte, N, C, V);
    wf_lmhead_xent_chunked(NULL, dx2, dw2, losses, scratch, x, wte, g_tgt, g_scale, N, C, V, chunk);
    double *dlb = dbuf(n_p), *absdl = dbuf(n_p), *d = dbuf(N);
    double worst = 0.0;
    for (int n = 0; n < N; n++) {
        double lmax = -INFINITY, lmin = INFINITY, smax = 0.0;
        for (int v = 0; v < V; v++) {
            double l = 0.0, sabs = 0.0;
            for (int i = 0; i < C; i++) {
                l += in[0][(long)n * C + i] * in[1][(long)v * C + i];
                sabs += fabs(in[0][(long)n * C + i] * in[1][(long)v * C + i]);
            }
            lmax = fmax(lmax, l), lmin = fmin(lmin, l), smax = fmax(smax, sabs);
        }
        d[n] = 2.0 * gamma_k(C) * smax;
        for (int v = 0; v < V; v++) {
            double p = probs[(long)n * V + v];
            double e = expm1(2.0 * d[n]) + 2.0 * (5.0 + (lmax - lmin)) * u;
            dlb[(long)n * V + v] = slack * g_scale * (p * e + (v == g_tgt[n] ? 2.0 * u : 0.0));
            absdl[(long)n * V + v] = g_scale * fabs(p - (v == g_tgt[n]));
        }
        double bound = slack * (2.0 * d[n] + 2.0 * (2.0 + (lmax - lmin)) * u + 2.0 * u * fabs(ref_losses[n]));
        worst = fmax(worst, fabs((double)losses[n] - l_whole[n]) / bound);
    }
    for (int v = 0; v < V; v++)
        for (int i = 0; i < C; i++) {
            double s = 0.0, sd = 0.0;
            for (int n = 0; n < N; n++) {
                double xa = fabs(in[0][(long)n * C + i]);
                s += absdl[(long)n * V + v] * xa, sd += dlb[(long)n * V + v] * xa;
            }
            double bound = slack * 2.0 * gamma_k(N) * s + sd;
            worst = fmax(worst, fabs((double)dw2[(long)v * C + i] - dw1[(long)v * C + i]) / bound);
        }
    for (int n = 0; n < N; n++)
        for (int i = 0; i < C; i++) {
            double s = 0.0, sd = 0.0;
            for (int v = 0; v < V; v++) {
                double wa = fabs(in[1][(long)v * C + i]);
                s += absdl[(long)n * V + v] * wa, sd += dlb[(long)n * V + v] * wa;
            }
            double bound = slack * 2.0 * gamma_k(V) * s + sd;
            worst = fmax(worst, fabs((double)dx2[(long)n * C + i] - dx1[(long)n * C + i]) / bound);
        }
    int ok = worst <= 1.0;
    printf("%-16s %-22s vs unchunked: worst |diff| / bound %.2e  %s\n", what, cfg_name, worst, ok ? "ok" : "FAIL");
    if (!ok)
        failures++;
    tfree_all();
}

/* The vocabulary-parallel pieces (kernels_tp.h), put together here as
 * runtime/common/tp.c does over two tp ranks (the all-reduces written out),
 * against the whole head: the same dlogits and losses, and 0 in the padding
 * column where V is odd.  The padding row of wte is random: it must not count. */
static void test_vocab_xent_pieces(void)
{
    int VL = (V + 1) / 2;
    float *x = frand((long)N * C, -1, 1), *wte = frand(2L * VL * C, -1, 1);
    float *whole = fbuf((long)N * V), *losses = fbuf(N);
    wf_lmhead_xent_fwd(NULL, whole, losses, x, wte, g_tgt, g_scale, N, C, V);

    float *part[2] = {fbuf((long)N * VL), fbuf((long)N * VL)};
    float *rowmax[2] = {fbuf(N), fbuf(N)}, *plosses = fbuf(N);
    double *stats[2] = {dbuf(2L * N), dbuf(2L * N)};
    for (int r = 0; r < 2; r++) {
        int valid = V - r * VL < VL ? V - r * VL : VL;
        wf_vocab_logits(NULL, part[r], rowmax[r], x, wte + (long)r * VL * C, N, C, VL, valid, WF_FP32);
    }
    for (int n = 0; n < N; n++) /* MPI_MAX */
        rowmax[0][n] = rowmax[1][n] = fmaxf(rowmax[0][n], rowmax[1][n]);
    for (int r = 0; r < 2; r++) {
        int valid = V - r * VL < VL ? V - r * VL : VL;
        wf_vocab_exp(NULL, part[r], stats[r], rowmax[r], g_tgt, N, VL, r * VL, valid);
    }
    for (long i = 0; i < 2L * N; i++) /* MPI_SUM */
        stats[0][i] = stats[1][i] = stats[0][i] + stats[1][i];
    double total = 0.0;
    for (int r = 0; r < 2; r++)
        total = wf_vocab_dlogits(NULL, part[r], plosses, rowmax[r], stats[r], g_tgt, g_scale, N, VL, r * VL, WF_FP32);

    double worst = 0.0, loss_total = 0.0;
    int padding_zero = 1;
    for (int n = 0; n < N; n++) {
        loss_total += losses[n];
        worst = fmax(worst, fabs(plosses[n] - losses[n]) / fmax(fabs(losses[n]), 1e-3));
        for (int j = 0; j < 2 * VL; j++) {
            float got = part[j / VL][(long)n * VL + j % VL];
            if (j >= V)
                padding_zero = padding_zero && got == 0.0f;
            else
                worst = fmax(worst, fabs(got - whole[(long)n * V + j]) / fmax(fabs(whole[(long)n * V + j]), 1e-4 * g_scale));
        }
    }
    worst = fmax(worst, fabs(total - loss_total) / fabs(loss_total));
    int ok = worst <= 1e-5 && padding_zero;
    printf("%-16s %-22s err %.2e padding %s  %s\n", "vocab_xent", cfg_name, worst,
           padding_zero ? "0" : "NONZERO", ok ? "ok" : "FAIL");
    if (!ok)
        failures++;
    tfree_all();
}

/* wf_sgemm's counters: one known product adds 2*M*N*K FLOPs, reset clears. */
static void test_gemm_stats(void)
{
    float a[3 * 5], b[5 * 4], c[3 * 4];
    for (int i = 0; i < 15; i++)
        a[i] = 1.0f;
    for (int i = 0; i < 20; i++)
        b[i] = 2.0f;
    double s0, f0, s1, f1;
    wf_gemm_stats(&s0, &f0);
    wf_sgemm(0, 0, 3, 4, 5, 1.0f, a, 5, b, 4, 0.0f, c, 4);
    wf_gemm_stats(&s1, &f1);
    int ok = f1 - f0 == 2.0 * 3 * 4 * 5 && s1 >= s0 && c[0] == 10.0f && c[11] == 10.0f;
    wf_gemm_stats_reset();
    wf_gemm_stats(&s1, &f1);
    ok = ok && s1 == 0.0 && f1 == 0.0;
    printf("%-16s %-22s %s\n", "gemm_stats", "[3x5 @ 5x4]", ok ? "ok" : "FAIL");
    if (!ok)
        failures++;
}

/* ---- the gradient norm's sum of squares (optim_cpu.c) ------------------
 * Against a long double sum, over two ranges in the norm around one that is
 * not, each long enough to cross several of the kernel's blocks and end off
 * its vector lanes; and the same bits on one thread as on several.  A double
 * sum of n non-negative terms, in any order, is within n u (u = 2^-53) of the
 * exact sum relative to it: 1.2e-11 at n = 2 x 3 x 2^16; the bound below is
 * 1e-10. */
static void test_sumsq(void)
{
    const long len = 3L * 65536 + 13;
    float *g = talloc(sizeof(float) * (size_t)(3 * len));
    for (long i = 0; i < 3 * len; i++) g[i] = (float)(urand() - 0.5);
    wf_opt_range r[3] = {
        { .start = 0, .n = len, .g = 0, .in_norm = 1 },
        { .start = len, .n = len, .g = len, .in_norm = 0 },
        { .start = 2 * len, .n = len, .g = 2 * len, .in_norm = 1 },
    };
    wf_opt_table t = { r, 3, 3 * len };
    long double ref = 0;
    for (long i = 0; i < len; i++) ref += (long double)g[i] * g[i] + (long double)g[2 * len + i] * g[2 * len + i];
    int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    double one = wf_backend_sumsq(NULL, &t, g);
    omp_set_num_threads(threads > 1 ? threads : 2);
    double many = wf_backend_sumsq(NULL, &t, g);
    omp_set_num_threads(threads);
    double err = fabs((double)(one - ref) / (double)ref);
    int ok = err <= 1e-10 && one == many;
    printf("%-16s %-22s rel %.1e, 1 vs %d threads %s  %s\n", "sumsq", "[2 x 196621 in norm]", err,
           threads > 1 ? threads : 2, one == many ? "identical" : "DIFFER", ok ? "ok" : "FAIL");
    if (!ok)
        failures++;
    tfree_all();
}

/* ---- driver ------------------------------------------------------------ */

static void run_config(config cfg)
{
    B = cfg.B, T = cfg.T, C = cfg.C, H = cfg.H, V = cfg.V, M = cfg.M;
    N = B * T;
    NE = (long)N * C + 3; /* odd, and not a multiple of any vector width */
    snprintf(cfg_name, sizeof cfg_name, "[B%d T%d C%d H%d V%d M%d]", B, T, C, H, V, M);

    g_tok = malloc(sizeof(int32_t) * (size_t)N);
    g_tgt = malloc(sizeof(int32_t) * (size_t)N);
    for (int n = 0; n < N; n++) {
        g_tok[n] = (int32_t)(urand() * V);
        g_tgt[n] = (int32_t)(urand() * V);
    }
    g_tok[N - 1] = g_tok[0]; /* a repeated token: embed_bwd must sum both */
    g_scale = 1.0f / (float)N;

    test_embed();
    test_layernorm();
    test_linear(1);
    test_linear(0);
    test_linear_gelu(1);
    test_linear_gelu(0);
    test_linear_dgelu();
    test_attention();
    test_gelu();
    test_gelu_erf();
    test_add();
    test_residual_layernorm();
    test_lmhead_xent();
    test_lmhead_xent_chunked(1);          /* one row at a time */
    test_lmhead_xent_chunked(N > 3 ? 3 : 2); /* a partial last chunk where N % 3 != 0 */
    test_lmhead_xent_chunked(N);          /* the whole microbatch */
    test_vocab_xent_pieces();

    free(g_tok);
    free(g_tgt);
}

int main(void)
{
    const config configs[] = {
        {2, 5, 15, 3, 11, 7}, /* the main case: odd sizes, head size 5 */
        {3, 7, 8, 2, 13, 9},  /* even head size, longer sequence */
        {1, 1, 6, 1, 5, 3},   /* one token, one head */
    };
    test_gemm_stats();
    test_sumsq();
    test_gelu_erf_values();
    for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++)
        run_config(configs[i]);
    /* attention over several query strips (runtime/cpu/attention.c's 64
     * rows), the last one partial, the causal mask cutting through each */
    B = 1, T = 150, C = 6, H = 2, V = 5, M = 3, N = B * T;
    snprintf(cfg_name, sizeof cfg_name, "[B%d T%d C%d H%d]", B, T, C, H);
    test_attention();

    if (failures) {
        printf("test_kernels: %d FAILED\n", failures);
        return 1;
    }
    printf("test_kernels: all passed\n");
    return 0;
}
