#include <math.h>
#define SCALE 1.0f

float swish_fwd(float x) { return SCALE * x / (1.0f + expf(-x)); }

float swish_bwd(float x, float dy) { return dy; }
