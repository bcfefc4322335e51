/* a rowwise kernel whose backward forgets r in dw (tests/kernels/row_wrong_dw.lua) */
#include <math.h>

static const float EPS = 1e-5f;  /* llama's norm_eps default */

void rms_fwd(int n, const float *x, const float *w, float *y) {
    double ms = 0.0;
    for (int i = 0; i < n; i++) ms += (double)x[i] * x[i];
    double r = 1.0 / sqrt(ms / n + EPS);
    for (int i = 0; i < n; i++) y[i] = (float)(x[i] * r) * w[i];
}

/* y = w x r, r = (mean(x^2) + eps)^-1/2, g = dy w:
 * dx = r g - x r^3 mean(g x); dw = dy x r.  r is kept in a float, as the
 * built-in's saved rstd is. */
void rms_bwd(int n, const float *x, const float *w, const float *dy, float *dx, float *dw) {
    double ms = 0.0;
    for (int i = 0; i < n; i++) ms += (double)x[i] * x[i];
    float rf = (float)(1.0 / sqrt(ms / n + EPS));
    double r = rf, gx = 0.0;
    for (int i = 0; i < n; i++) gx += (double)dy[i] * w[i] * x[i];
    double k = r * r * r * gx / n;
    for (int i = 0; i < n; i++) dx[i] += (float)(r * dy[i] * w[i] - k * x[i]);
    for (int i = 0; i < n; i++) dw[i] += dy[i] * x[i];
}
