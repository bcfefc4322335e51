/* gelu.c: GPT-2's tanh GELU as a user kernel, written as runtime/cpu/gelu_value.h
 * and exp_float.h write the built-in one, expression for expression
 * (tests/e2e/user_kernels.sh): x sigmoid(2u) with e^y from a Taylor
 * polynomial.  The one difference: 2^k comes from exp2f(k), which is exact
 * for an integer k (glibc's exp2f is within 0.502 ulp, and 2^k is a float),
 * where the built-in one writes the exponent bits. */
#include <math.h>

static const float GELU_A = 0.7978845608028654f;  /* sqrt(2 / pi) */
static const float GELU_B = 0.044715f;

/* e^y, y in [-87, 87] */
static float exp_float(float y) {
    const float shift = 12582912.0f;  /* 1.5 * 2^23 */
    float k = (y * 1.44269504f + shift) - shift;
    float r = y - k * 0.693145752f;
    r = r - k * 1.42860677e-06f;
    float p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    return p * exp2f(k);
}

/* e^(-2u), u = sqrt(2/pi) (x + 0.044715 x^3), clamped as the built-in */
static float gelu_e(float x) {
    float y = -2.0f * (GELU_A * (x + GELU_B * x * x * x));
    y = fabsf(y) > 87.0f ? copysignf(87.0f, y) : y;
    return exp_float(y);
}

float gelu_fwd(float x) {
    return x / (1.0f + gelu_e(x));
}

float gelu_bwd(float x, float dy) {
    float e = gelu_e(x);
    float s = 1.0f / (1.0f + e);
    float du = GELU_A * (1.0f + 3.0f * GELU_B * x * x);
    return dy * (s + 2.0f * x * (e * s) * s * du);
}
