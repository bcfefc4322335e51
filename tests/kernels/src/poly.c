/* poly.c: a correct kernel with a constant table, a loop and a local array (a positive control of tests/kernels/run.sh) */
#include <math.h>

static const float COEF[3] = { 1.0f, 0.5f, 0.25f };

/* a polynomial with a loop and a local array */
float poly_fwd(float x) {
    float p[3];
    float s = 0.0f;
    for (int i = 0; i < 3; i++) {
        p[i] = COEF[i] * powf(x, (float)i);
        s += p[i];
    }
    return s;
}

float poly_bwd(float x, float dy) {
    return dy * (COEF[1] + 2.0f * COEF[2] * x);
}
