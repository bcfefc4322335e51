#include <math.h>

float swish_fwd(float x) {
    int n = (int)fabsf(x) + 1;
    float terms[n];
    terms[0] = x / (1.0f + expf(-x));
    return terms[0];
}

float swish_bwd(float x, float dy) { return dy; }
