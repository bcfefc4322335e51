#include <math.h>

int calls;

float swish_fwd(float x) { calls++; return x / (1.0f + expf(-x)); }

float swish_bwd(float x, float dy) { return dy; }
