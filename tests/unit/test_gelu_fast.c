/* test_gelu_fast.c: the GELU of gelu_value.h (x sigmoid(2u) with a float
 * exponential of its own, vectorisable) against float64, on every float in
 * [-2^-20, 2^-20] a stride apart and on a dense sweep of [-30, 30]: the value
 * and the derivative.
 *
 * Bounds, from the arithmetic (u = 2^-24, first order; y = -2u(x) the
 * exponent, s = 1 / (1 + e), e = e^y):
 *   y: x^2, x^3, B x^3, x + B x^3 (no cancellation: the same sign), A (..)
 *     round 5 times and A and B are within u/2 of sqrt(2/pi) and 0.044715:
 *     relative error 6u, so e^y is off by 6 |y| u relative;
 *   e^y itself: the reduction's r to u (k ln2's first part is exact), the
 *     Taylor remainder 0.09u, Horner's 7 steps on |r| <= 0.35 below 2u, the
 *     power of two exact: 4u with margin;
 *   value x / (1 + e): 1 + e and the division round once each (2u) and the
 *     error of e enters scaled by e / (1 + e) = 1 - s:
 *       |err| <= (2 + (1 - s)(4 + 6|y|)) u |value|;
 *   derivative s + 2 x e s^2 du/dx: each term carries at most twice e's
 *     error and five roundings of its own:
 *       |err| <= (7 + 2 (4 + 6|y|)) u (|s| + |2 x e s^2 du/dx|);
 *   past the clamp (|y| > 87) the value and derivative are within |x| e^-87
 *   and (1 + |x| du) e^-87 of the exact ones, and results that underflow
 *   float lose their relative accuracy: an absolute floor of 1e-37 (1 + |x|
 *   du) covers both.
 * The bounds carry a factor 1.05 for the second-order terms.  Printed: the
 * worst error / bound (<= 1 passes), the worst error in units of u relative
 * to the value, and the same for 0.5 x (1 + tanhf u) (the formula before,
 * for comparison: its 1 + tanh cancels for negative x). */
#include <math.h>
#include <stdio.h>

#include "gelu_value.h"

static const double U = 0x1p-24;

static int failures;

typedef struct {
    double worst_ratio, worst_ulps_value, worst_ulps_grad, worst_tanh_ulps;
    double at_value, at_grad;
} stats;

static void one(float x, stats *st) {
    const double A = sqrt(2.0 / 3.14159265358979323846), B = 0.044715;
    double xd = x, y = -2.0 * A * (xd + B * xd * xd * xd);
    double e = exp(y), s = 1.0 / (1.0 + e), du = A * (1.0 + 3.0 * B * xd * xd);
    double ref = xd * s, t1 = s, t2 = 2.0 * xd * e * s * s * du, refg = t1 + t2;
    double ay = fabs(y), floor_abs = 1e-37 * (1.0 + fabs(xd) * du);
    if (!isfinite(e)) { /* y past double's range: s = 0 */
        ref = 0.0, t1 = 0.0, t2 = 0.0, refg = 0.0;
    }
    double one_minus_s = isfinite(e) ? e * s : 1.0;
    double bv = 1.05 * (2.0 + one_minus_s * (4.0 + 6.0 * ay)) * U * fabs(ref) + floor_abs;
    double bg = 1.05 * (7.0 + 2.0 * (4.0 + 6.0 * ay)) * U * (fabs(t1) + fabs(t2)) + floor_abs;
    double got = wf_gelu_value(x), gotg = wf_gelu_grad(x);
    double rv = fabs(got - ref) / bv, rg = fabs(gotg - refg) / bg;
    if (!(rv <= st->worst_ratio)) st->worst_ratio = rv, st->at_value = x;  /* NaN too */
    if (!(rg <= st->worst_ratio)) st->worst_ratio = rg, st->at_grad = x;
    if (fabs(ref) > 1e-30) {
        double ulps = fabs(got - ref) / (U * fabs(ref));
        if (ulps > st->worst_ulps_value) st->worst_ulps_value = ulps;
        float old = 0.5f * x * (1.0f + tanhf(WF_GELU_A * (x + WF_GELU_B * x * x * x)));
        double old_ulps = fabs(old - ref) / (U * fabs(ref));
        if (old_ulps > st->worst_tanh_ulps) st->worst_tanh_ulps = old_ulps;
    }
    if (fabs(refg) > 1e-30 && fabs(refg) > 0.01 * (fabs(t1) + fabs(t2))) {
        double ulps = fabs(gotg - refg) / (U * fabs(refg));
        if (ulps > st->worst_ulps_grad) st->worst_ulps_grad = ulps;
    }
}

static void sweep(const char *what, float lo, float hi, long n) {
    stats st = { 0, 0, 0, 0, 0, 0 };
    for (long i = 0; i <= n; i++) one((float)(lo + (hi - lo) * ((double)i / n)), &st);
    int ok = st.worst_ratio <= 1.0 && isfinite(st.worst_ratio);
    printf("gelu %-22s worst err / bound %.3f (value at %g, grad at %g); value %.1f u, grad %.1f u "
           "(0.5 x (1 + tanhf): %.3g u)  %s\n",
           what, st.worst_ratio, st.at_value, st.at_grad, st.worst_ulps_value, st.worst_ulps_grad,
           st.worst_tanh_ulps, ok ? "ok" : "FAIL");
    failures += !ok;
}

int main(void) {
    sweep("[-1e-6, 1e-6]", -1e-6f, 1e-6f, 200001);
    sweep("[-30, 30]", -30.0f, 30.0f, 6000001);
    sweep("[-6, 3], dense", -6.0f, 3.0f, 4000001);
    /* far out: x itself, or within |x| e^-87 of 0, and finite derivatives */
    int ok = fabsf(wf_gelu_value(-1e4f)) <= 1e4f * 1.7e-38f && wf_gelu_value(1e4f) == 1e4f &&
             fabsf(wf_gelu_grad(-1e4f)) < 1e-20f && wf_gelu_grad(1e4f) == 1.0f && wf_gelu_value(0.0f) == 0.0f &&
             wf_gelu_grad(0.0f) == 0.5f;
    printf("gelu far out (+-1e4) and at 0 %s\n", ok ? "ok" : "FAIL");
    failures += !ok;
    if (failures) printf("test_gelu_fast: %d FAILED\n", failures);
    else printf("test_gelu_fast: all passed\n");
    return failures != 0;
}
