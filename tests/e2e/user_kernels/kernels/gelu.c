/* gelu.c: GPT-2's tanh GELU as a user kernel, written as runtime/common/gelu_value.h
 * writes the built-in one, expression for expression (tests/e2e/user_kernels.sh) */
#include <math.h>

static const float GELU_K = 0.7978845608f;  /* sqrt(2 / pi) */

float gelu_fwd(float x) {
    float u = GELU_K * (x + 0.044715f * x * x * x);
    return 0.5f * x * (1.0f + tanhf(u));
}

float gelu_bwd(float x, float dy) {
    float u = GELU_K * (x + 0.044715f * x * x * x);
    float t = tanhf(u);
    float du = GELU_K * (1.0f + 3.0f * 0.044715f * x * x);
    return dy * (0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du);
}
