#include <math.h>
#include <stdio.h>

float swish_fwd(float x) {
    FILE *f = fopen("/tmp/log", "a");
    (void)f;
    return x / (1.0f + expf(-x));
}

float swish_bwd(float x, float dy) { return dy; }
