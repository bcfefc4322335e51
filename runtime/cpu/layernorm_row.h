/* layernorm_row.h: the per-row means the layernorm input gradient needs,
 * shared by wf_layernorm_bwd_input and the fused residual + layernorm so the
 * two stay operation for operation the same (the fused op must equal the
 * unfused pair bit for bit). */
#ifndef WEFT_CPU_LAYERNORM_ROW_H
#define WEFT_CPU_LAYERNORM_ROW_H

/* mean over the row of g = dout * w, and of g * xhat, in float */
static inline void wf_ln_bwd_means(const float *x, const float *d, const float *w, float m,
                                   float s, int C, float *g_mean, float *gx_mean) {
    float gm = 0.0f, gxm = 0.0f;
    for (int i = 0; i < C; i++) {
        float xhat = (x[i] - m) * s, g = d[i] * w[i];
        gm += g;
        gxm += g * xhat;
    }
    *g_mean = gm / C;
    *gx_mean = gxm / C;
}

#endif
