/* swish.c: x sigmoid(x), a correct elementwise kernel */
#include <math.h>

float swish_fwd(float x) { return x / (1.0f + expf(-x)); }

float swish_bwd(float x, float dy) {
    float s = 1.0f / (1.0f + expf(-x));
    return dy * s * (1.0f + x * (1.0f - s));
}
