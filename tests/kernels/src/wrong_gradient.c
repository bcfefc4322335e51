/* the backward forgets the x (1 - s) term of swish's derivative */
#include <math.h>

float swish_fwd(float x) { return x / (1.0f + expf(-x)); }

float swish_bwd(float x, float dy) { return dy / (1.0f + expf(-x)); }
