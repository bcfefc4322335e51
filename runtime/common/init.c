/* init.c: layout-invariant initialization.  Each element is a pure function
 * of (seed, parameter name, global element index), drawn from a counter-based
 * generator, so any shard of any layout generates exactly its own slice. */
#include <math.h>
#include <string.h>

#include "internal.h"

static uint64_t mix64(uint64_t x) {  /* splitmix64 finalizer */
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

static uint64_t name_key(uint64_t seed, const char *name) {
    uint64_t h = 1469598103934665603ULL;  /* FNV-1a */
    for (const char *s = name; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ULL;
    return mix64(h ^ mix64(seed + 0x9e3779b97f4a7c15ULL));
}

/* A standard normal for element `index` (Box-Muller on two counter draws). */
double wf_normal(uint64_t seed, const char *name, uint64_t index) {
    uint64_t key = name_key(seed, name);
    uint64_t a = mix64(key + 2 * index), b = mix64(key + 2 * index + 1);
    double u1 = ((double)(a >> 11) + 0.5) * 0x1.0p-53;  /* (0, 1) */
    double u2 = (double)(b >> 11) * 0x1.0p-53;
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

/* Where element i of this rank's part of q sits in the whole tensor, as a
 * flat index; -1 for vocabulary padding.  1-D tensors split like a row. */
long wf_global_index(const wf_param *q, int tp_rank, long i) {
    if (q->split == WF_SPLIT_NONE) return i;
    long cols = q->ndim == 1 ? q->shape[0] : q->shape[1];
    long gcols = q->ndim == 1 ? q->gshape[0] : q->gshape[1];
    long row = i / cols, col = i % cols;
    if (q->split == WF_SPLIT_ROWS && q->ndim == 2) {
        long grow = (long)tp_rank * q->shape[0] + row;
        return grow < q->gshape[0] ? grow * gcols + col : -1;
    }
    /* columns, in `sections` blocks each split across the tp ranks (q|k|v) */
    long block = cols / q->sections, gblock = gcols / q->sections;
    long gcol = (col / block) * gblock + (long)tp_rank * block + col % block;
    return row * gcols + gcol;
}

/* Element i of this rank's part of q, as initialised. */
float wf_init_value(const wf_ctx *c, const wf_param *q, long i) {
    long g = wf_global_index(q, c->tp_rank, i);
    if (g < 0) return 0.0f;  /* padding rows stay zero */
    switch (q->init) {
    case WF_INIT_ZEROS: return 0.0f;
    case WF_INIT_ONES: return 1.0f;
    case WF_INIT_NORMAL: return (float)(q->std * wf_normal(c->p->seed, q->name, (uint64_t)g));
    }
    return 0.0f;
}

/* elements [lo, hi) of this rank's part of q, into w[0 .. hi - lo) */
void wf_init_range(const wf_ctx *c, const wf_param *q, long lo, long hi, float *w) {
    for (long i = lo; i < hi; i++) w[i - lo] = wf_init_value(c, q, i);
}

void wf_init_params(wf_ctx *c) {
    const wf_program *p = c->p;
    for (int k = 0; k < p->n_params; k++)
        wf_init_range(c, &p->params[k], 0, p->params[k].numel, c->params + p->params[k].offset);
    wf_params_changed(c);
}

/* A digest of the parameters, to check that data-parallel replicas agree. */
uint64_t wf_params_digest(const wf_ctx *c) {
    uint64_t h = 0;
    if (c->p->param16) {  /* 16-bit values (param16.c) */
        const uint16_t *v = (const uint16_t *)(const void *)c->params;
        for (long i = 0; i < c->p->param_numel; i++) h = mix64(h ^ v[i]) + (uint64_t)i;
        return h;
    }
    const uint32_t *bits = (const uint32_t *)c->params;
    for (long i = 0; i < c->p->param_numel; i++) h = mix64(h ^ bits[i]) + (uint64_t)i;
    return h;
}
