/* a constructor would run when the program (or the gradient harness) starts */
#include <math.h>

__attribute__((constructor)) static void hello(void) {}

float swish_fwd(float x) { return x / (1.0f + expf(-x)); }

float swish_bwd(float x, float dy) { return dy; }
