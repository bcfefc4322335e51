/* kernel_fd.h: the float64 finite-difference harness the kernel tests share
 * (test_kernels_llama.c, test_kernels_vision.c).  A kernel is wrapped as
 * fwd / bwd over float buffers with a float64 reference `ref`; check() runs
 * forward against the reference, then backward twice against central
 * differences of L = sum(ref(x) * R) (R the random output gradient), the
 * second call checking that backward accumulates (+=).  Errors are relative,
 * floored at ATOL / RTOL.
 *
 * The including file defines RTOL, ATOL, FD_STEP, MAX_IN, KERNEL_FD_SEED and
 * `static int failures;` first. */
#ifndef WEFT_KERNEL_FD_H
#define WEFT_KERNEL_FD_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state = KERNEL_FD_SEED;
static double urand(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-53;
}

static void *xmalloc(size_t n)
{
    void *p = calloc(n ? n : 1, 1);
    if (!p) {
        fprintf(stderr, "kernel test: out of memory\n");
        exit(2);
    }
    return p;
}

static float *frand(long n, double lo, double hi)
{
    float *p = xmalloc(sizeof(float) * (size_t)n);
    for (long i = 0; i < n; i++) p[i] = (float)(lo + (hi - lo) * urand());
    return p;
}

static double *to_double(const float *x, long n)
{
    double *d = xmalloc(sizeof(double) * (size_t)n);
    for (long i = 0; i < n; i++) d[i] = x[i];
    return d;
}

/* a float64 reference: in[k] are the differentiable inputs */
typedef void (*ref_fn)(double *const *in, double *out);

/* A kernel under test: its inputs, their gradient buffers, and calls. */
typedef struct {
    const char *name;
    int n_in;
    long len[MAX_IN], out_len;
    float *x[MAX_IN];       /* inputs (fp32) */
    float *g[MAX_IN];       /* gradient buffers the backward accumulates into */
    ref_fn ref;
    void (*fwd)(float *const *x, float *out);
    void (*bwd)(float *const *x, float *const *g, const float *dout);
} kernel;

static double err_of(double got, double ref) { return fabs(got - ref) / fmax(fabs(ref), ATOL / RTOL); }

static double fd(kernel *k, double **in, int which, long i, const double *R, double *out)
{
    double saved = in[which][i], l[2];
    for (int s = 0; s < 2; s++) {
        in[which][i] = saved + (s ? -FD_STEP : FD_STEP);
        k->ref(in, out);
        l[s] = 0;
        for (long j = 0; j < k->out_len; j++) l[s] += out[j] * R[j];
    }
    in[which][i] = saved;
    return (l[0] - l[1]) / (2 * FD_STEP);
}

/* Returns the worst error of (fwd, bwd, accum); `scale_grad` != 1 perturbs the
 * first gradient (the self-test). */
static void check(kernel *k, const char *cfg, float scale_grad, int expect_fail)
{
    double *in[MAX_IN], fwd_e = 0, bwd_e = 0, acc_e = 0;
    for (int a = 0; a < k->n_in; a++) in[a] = to_double(k->x[a], k->len[a]);
    float *out = xmalloc(sizeof(float) * (size_t)k->out_len);
    double *ref = xmalloc(sizeof(double) * (size_t)k->out_len);
    k->fwd(k->x, out);
    k->ref(in, ref);
    for (long j = 0; j < k->out_len; j++) fwd_e = fmax(fwd_e, err_of(out[j], ref[j]));
    float *dout = frand(k->out_len, -1, 1);
    double *R = to_double(dout, k->out_len);
    float *g0[MAX_IN];
    for (int a = 0; a < k->n_in; a++) {
        g0[a] = frand(k->len[a], -1, 1);
        memcpy(k->g[a], g0[a], sizeof(float) * (size_t)k->len[a]);
    }
    double **fds = xmalloc(sizeof(double *) * MAX_IN);
    for (int a = 0; a < k->n_in; a++) {
        fds[a] = xmalloc(sizeof(double) * (size_t)k->len[a]);
        for (long i = 0; i < k->len[a]; i++) fds[a][i] = fd(k, in, a, i, R, ref);
    }
    for (int call = 1; call <= 2; call++) {
        k->bwd(k->x, k->g, dout);
        double e = 0;
        for (int a = 0; a < k->n_in; a++)
            for (long i = 0; i < k->len[a]; i++) {
                double added = ((double)k->g[a][i] - g0[a][i]) / call;
                if (a == 0) added *= scale_grad;
                double ei = err_of(added, fds[a][i]);
                e = isnan(ei) ? INFINITY : fmax(e, ei);
            }
        if (call == 1) bwd_e = e;
        else acc_e = e;
    }
    int ok = fwd_e <= RTOL && bwd_e <= RTOL && acc_e <= RTOL;
    const char *verdict = expect_fail ? (ok ? "NOT CAUGHT" : "caught") : (ok ? "ok" : "FAIL");
    printf("%-20s %-26s fwd %.2e  bwd %.2e  accum %.2e  %s\n", k->name, cfg, fwd_e, bwd_e, acc_e, verdict);
    if (ok == expect_fail) failures++;
    for (int a = 0; a < k->n_in; a++) free(in[a]), free(g0[a]), free(fds[a]);
    free(fds), free(out), free(ref), free(dout), free(R);
}

#endif
