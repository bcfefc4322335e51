/* stage16.c: a CPU kernel call's 16-bit activation operands widened into
 * float staging and rounded back (stage16.h). */
#include "stage16.h"

#include "internal.h"
#include "precision_bits.h"

int wf_stage16_begin(wf_ctx *c, wf_stage16 *s) {
    if (!c || !c->p->act16 || c->staging) return 0;
    s->c = c;
    s->used = 0;
    s->n = 0;
    c->staging = 1;
    return 1;
}

static void widen(int precision, float *dst, const float *src, long n) {
    const uint16_t *h = (const uint16_t *)src;
    if (precision == WF_BF16) {
#pragma omp parallel for schedule(static) if (n > 65536)
        for (long i = 0; i < n; i++) dst[i] = wf_hd_bf16_value(h[i]);
    } else {
#pragma omp parallel for schedule(static) if (n > 65536)
        for (long i = 0; i < n; i++) dst[i] = wf_hd_fp16_value(h[i]);
    }
}

/* the rounding the float program's wf_to_bf16 / wf_to_fp16 does, as bits */
static void narrow(int precision, float *dst, const float *src, long n) {
    uint16_t *h = (uint16_t *)dst;
    if (precision == WF_BF16) {
#pragma omp parallel for schedule(static) if (n > 65536)
        for (long i = 0; i < n; i++) h[i] = wf_hd_bf16_bits(src[i]);
    } else {
#pragma omp parallel for schedule(static) if (n > 65536)
        for (long i = 0; i < n; i++) h[i] = wf_hd_fp16_bits(src[i]);
    }
}

/* x's staging: the one it has if this call staged it already (the kernel
 * then sees the same aliasing the float program gives it), else a new one */
static float *stage(wf_stage16 *s, const float *x, long n, int widened, int narrowed) {
    wf_ctx *c = s->c;
    for (int k = 0; k < s->n; k++)
        if (s->buf[k].store == x && s->buf[k].n == n) {
            if (widened && !s->buf[k].widened) widen(c->p->precision, s->buf[k].f, x, n);
            s->buf[k].widened |= widened;
            s->buf[k].narrow |= narrowed;
            return s->buf[k].f;
        }
    long need = (n + 15) & ~15L;
    if (s->n == WF_STAGE16_MAX || s->used + need > c->p->stage16_numel)
        wf_fatal(c, "wf_stage16", WF_WHERE, "a kernel call stages %ld more floats of 16-bit activations "
                 "beyond %ld of the %ld planned (compiler/act16.c, act16_stage_numel)", need, s->used,
                 c->p->stage16_numel);
    float *f = c->stage16 + s->used;
    s->used += need;
    s->buf[s->n].store = (float *)x;
    s->buf[s->n].f = f;
    s->buf[s->n].n = n;
    s->buf[s->n].widened = widened;
    s->buf[s->n].narrow = narrowed;
    s->n++;
    if (widened) widen(c->p->precision, f, x, n);
    return f;
}

const float *wf_stage16_in(wf_stage16 *s, const float *x, long n) { return stage(s, x, n, 1, 0); }
float *wf_stage16_out(wf_stage16 *s, float *x, long n) { return stage(s, x, n, 0, 1); }
float *wf_stage16_acc(wf_stage16 *s, float *x, long n) { return stage(s, x, n, 1, 1); }

void wf_stage16_end(wf_stage16 *s) {
    for (int k = 0; k < s->n; k++)
        if (s->buf[k].narrow) narrow(s->c->p->precision, s->buf[k].store, s->buf[k].f, s->buf[k].n);
    s->c->staging = 0;
}
