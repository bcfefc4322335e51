/* swiglu.c: LLaMA's gate silu(g) u as an elementwise2 kernel, written as the built-in
 * wf_swiglu_fwd / _bwd (runtime/cpu/llama.c) write it (tests/e2e/user_kernels.sh) */
#include <math.h>

static float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

float swiglu_fwd(float g, float u) { return g * sigmoid(g) * u; }

void swiglu_bwd(float g, float u, float dout, float *dg, float *du) {
    float s = sigmoid(g);
    *dg = dout * u * s * (1.0f + g * (1.0f - s));
    *du = dout * g * s;
}
