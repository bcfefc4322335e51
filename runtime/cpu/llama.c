/* llama.c: the CPU kernels of the LLaMA family (weft/rt.h), as
 * runtime/cuda/llama.cu has them: RMSNorm, rotary position embedding and
 * SwiGLU (its grouped-query attention is in attention.c).
 *
 * All tensors are row-major.  Activations are (N, width) with N = B * T.
 * Every backward kernel accumulates (+=) into its gradient outputs.  The
 * execution context is not needed on the CPU; it may be NULL.  Matrix
 * products go through wf_sgemm (blas.h) so they are timed and counted;
 * everything else is plain loops.
 */
#include "weft/rt.h"

#include <math.h>

#include "rope_value.h"
#include "stage16.h"

/* ---- RMSNorm --------------------------------------------------------------- */

void wf_rmsnorm_fwd(wf_ctx *c, float *out, float *rstd, const float *inp, const float *w,
                    int N, int C, float eps)
{
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        inp = wf_stage16_in(&s, inp, (long)N * C);
        out = wf_stage16_out(&s, out, (long)N * C);
        wf_rmsnorm_fwd(c, out, rstd, inp, w, N, C, eps);
        wf_stage16_end(&s);
        return;
    }
    for (int n = 0; n < N; n++) {
        const float *x = inp + (long)n * C;
        float *y = out + (long)n * C;
        double ms = 0.0;
        for (int i = 0; i < C; i++)
            ms += (double)x[i] * x[i];
        double r = 1.0 / sqrt(ms / C + eps);
        for (int i = 0; i < C; i++)
            y[i] = (float)(x[i] * r) * w[i];
        rstd[n] = (float)r;
    }
}

/* With y = w * x * r, r = (mean(x^2) + eps)^-1/2 and g = dout * w:
 *     dx = r * g - x * r^3 * mean(g * x). */
void wf_rmsnorm_bwd_input(wf_ctx *c, float *dinp, const float *dout, const float *inp,
                          const float *w, const float *rstd, int N, int C)
{
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        dout = wf_stage16_in(&s, dout, (long)N * C);
        inp = wf_stage16_in(&s, inp, (long)N * C);
        dinp = wf_stage16_acc(&s, dinp, (long)N * C);
        wf_rmsnorm_bwd_input(c, dinp, dout, inp, w, rstd, N, C);
        wf_stage16_end(&s);
        return;
    }
    for (int n = 0; n < N; n++) {
        const float *x = inp + (long)n * C, *dy = dout + (long)n * C;
        float *dx = dinp + (long)n * C;
        double r = rstd[n], gx = 0.0;
        for (int i = 0; i < C; i++)
            gx += (double)dy[i] * w[i] * x[i];
        double k = r * r * r * gx / C;
        for (int i = 0; i < C; i++)
            dx[i] += (float)(r * dy[i] * w[i] - k * x[i]);
    }
}

void wf_rmsnorm_bwd_weight(wf_ctx *c, float *dw, const float *dout, const float *inp,
                           const float *rstd, int N, int C)
{
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        dout = wf_stage16_in(&s, dout, (long)N * C);
        inp = wf_stage16_in(&s, inp, (long)N * C);
        wf_rmsnorm_bwd_weight(c, dw, dout, inp, rstd, N, C);
        wf_stage16_end(&s);
        return;
    }
    for (int n = 0; n < N; n++) {
        const float *x = inp + (long)n * C, *dy = dout + (long)n * C;
        for (int i = 0; i < C; i++)
            dw[i] += dy[i] * x[i] * rstd[n];
    }
}

void wf_rmsnorm_bwd(wf_ctx *c, float *dinp, float *dw, const float *dout, const float *inp,
                    const float *w, const float *rstd, int N, int C)
{
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        dout = wf_stage16_in(&s, dout, (long)N * C);
        inp = wf_stage16_in(&s, inp, (long)N * C);
        dinp = wf_stage16_acc(&s, dinp, (long)N * C);
        wf_rmsnorm_bwd(c, dinp, dw, dout, inp, w, rstd, N, C);
        wf_stage16_end(&s);
        return;
    }
    wf_rmsnorm_bwd_input(c, dinp, dout, inp, w, rstd, N, C);
    wf_rmsnorm_bwd_weight(c, dw, dout, inp, rstd, N, C);
}

/* ---- rotary position embedding -------------------------------------------
 * Row n of the microbatch is position n % T; the pairing and the angles are
 * rope_value.h's, shared with the CUDA kernel. */
static void rope_rows(float *out, int ld_out, const float *in, int ld_in, int N, int T,
                      int heads, int hd, float theta, int inverse, int accumulate)
{
    int half = hd / 2;
    for (int n = 0; n < N; n++) {
        int t = n % T;
        const float *x = in + (long)n * ld_in;
        float *y = out + (long)n * ld_out;
        for (int i = 0; i < half; i++) {
            float cs, sn;
            wf_rope_angle(t, i, hd, theta, inverse, &cs, &sn);
            wf_rope_pair(y, x, heads, hd, i, cs, sn, accumulate);
        }
    }
}

void wf_rope_fwd(wf_ctx *c, float *out, int ld_out, const float *in, int ld_in, int N, int T,
                 int heads, int hd, float theta)
{
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        in = wf_stage16_in(&s, in, (long)(N - 1) * ld_in + (long)heads * hd);
        out = wf_stage16_acc(&s, out, (long)(N - 1) * ld_out + (long)heads * hd);
        wf_rope_fwd(c, out, ld_out, in, ld_in, N, T, heads, hd, theta);
        wf_stage16_end(&s);
        return;
    }
    rope_rows(out, ld_out, in, ld_in, N, T, heads, hd, theta, 0, 0);
}

/* A rotation's transpose is its inverse: din += R(-angle) dout. */
void wf_rope_bwd(wf_ctx *c, float *din, int ld_in, const float *dout, int ld_out, int N, int T,
                 int heads, int hd, float theta)
{
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        dout = wf_stage16_in(&s, dout, (long)(N - 1) * ld_out + (long)heads * hd);
        din = wf_stage16_acc(&s, din, (long)(N - 1) * ld_in + (long)heads * hd);
        wf_rope_bwd(c, din, ld_in, dout, ld_out, N, T, heads, hd, theta);
        wf_stage16_end(&s);
        return;
    }
    rope_rows(din, ld_in, dout, ld_out, N, T, heads, hd, theta, 1, 1);
}

/* ---- SwiGLU ---------------------------------------------------------------- */

static float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

void wf_swiglu_fwd(wf_ctx *c, float *out, const float *gate, const float *up, long n)
{
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        gate = wf_stage16_in(&s, gate, n);
        up = wf_stage16_in(&s, up, n);
        out = wf_stage16_out(&s, out, n);
        wf_swiglu_fwd(c, out, gate, up, n);
        wf_stage16_end(&s);
        return;
    }
#pragma omp parallel for schedule(static) if (n > 65536)
    for (long i = 0; i < n; i++)
        out[i] = gate[i] * sigmoid(gate[i]) * up[i];
}

/* silu'(g) = s (1 + g (1 - s)) with s = sigmoid(g). */
void wf_swiglu_bwd(wf_ctx *c, float *dgate, float *dup, const float *gate, const float *up,
                   const float *dout, long n)
{
    wf_stage16 s;
    if (wf_stage16_begin(c, &s)) {  /* act16: on floats (stage16.h) */
        gate = wf_stage16_in(&s, gate, n);
        up = wf_stage16_in(&s, up, n);
        dout = wf_stage16_in(&s, dout, n);
        dgate = wf_stage16_acc(&s, dgate, n);
        dup = wf_stage16_acc(&s, dup, n);
        wf_swiglu_bwd(c, dgate, dup, gate, up, dout, n);
        wf_stage16_end(&s);
        return;
    }
#pragma omp parallel for schedule(static) if (n > 65536)
    for (long i = 0; i < n; i++) {
        float g = gate[i], s = sigmoid(g);
        dgate[i] += dout[i] * up[i] * s * (1.0f + g * (1.0f - s));
        dup[i] += dout[i] * g * s;
    }
}
