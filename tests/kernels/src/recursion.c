#include <math.h>

static float power(float x, int n) { return n == 0 ? 1.0f : x * power(x, n - 1); }

float swish_fwd(float x) { return x / (1.0f + expf(-x)) * power(1.0f, 3); }

float swish_bwd(float x, float dy) { return dy; }
