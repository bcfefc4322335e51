/* rope_value.h: one pair of the rotary position embedding, as inline
 * functions that the CPU kernel (llama.c) and the CUDA one
 * (runtime/cuda/llama.cu) both compile, so the two backends turn by the same
 * floats in the same order.
 *
 * Hugging Face LLaMA's "rotate half" pairing: in each head of width hd,
 * element i (< hd/2) turns with element i + hd/2 by t * theta^(-2i/hd), t
 * being the token's position.  The angle, its cosine and sine are computed in
 * double and then rounded, so every layout gets the same floats (up to the
 * last ulp of the device's double functions, which the rounding almost always
 * hides). */
#ifndef WEFT_ROPE_VALUE_H
#define WEFT_ROPE_VALUE_H

#include <math.h>

#include "host_device.h"

/* cos and sin of pair i's angle at position t; inverse turns by -angle */
static inline WF_HD void wf_rope_angle(int t, int i, int hd, float theta, int inverse, float *cs,
                                            float *sn) {
    double angle = t * pow((double)theta, -2.0 * i / hd);
    *cs = (float)cos(angle);
    *sn = (float)(inverse ? -sin(angle) : sin(angle));
}

/* pair i of every head of one row x, into row y (written, or added to) */
static inline WF_HD void wf_rope_pair(float *y, const float *x, int heads, int hd, int i, float cs,
                                           float sn, int accumulate) {
    int half = hd / 2;
    for (int h = 0; h < heads; h++) {
        float a = x[h * hd + i], b = x[h * hd + i + half];
        float ra = a * cs - b * sn, rb = b * cs + a * sn;
        if (accumulate) {
            y[h * hd + i] += ra;
            y[h * hd + i + half] += rb;
        } else {
            y[h * hd + i] = ra;
            y[h * hd + i + half] = rb;
        }
    }
}

#endif
