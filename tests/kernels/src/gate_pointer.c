/* the gate's backward writes past the value it was given */
#include <math.h>

float gate_fwd(float g, float u) { return g * u; }

void gate_bwd(float g, float u, float dout, float *dg, float *du) {
    *dg = dout * u;
    *(dg + 1) = 0.0f;
    *du = dout * g;
}
