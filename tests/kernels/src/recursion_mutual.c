/* even/odd through each other: recursion two calls deep */
#include <math.h>

static int odd(int n);
static int even(int n) { return n == 0 ? 1 : odd(n - 1); }
static int odd(int n) { return n == 0 ? 0 : even(n - 1); }

float swish_fwd(float x) { return even(2) * x / (1.0f + expf(-x)); }

float swish_bwd(float x, float dy) { return dy; }
