#include <math.h>

float swish_fwd(float x) {
    static int calls;
    calls++;
    return x / (1.0f + expf(-x));
}

float swish_bwd(float x, float dy) { return dy; }
