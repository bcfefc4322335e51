/* cast.c: the cast buffer of 16-bit activation storage (cuda_rt.h,
 * wf_cuda_cast_buffer): device memory for one conversion at a time (a
 * weight as 16-bit values before a GEMM on 16-bit activations), reused in
 * stream order.
 *
 * A program allocates its plan's cast_numel floats at the first request
 * (an eager step: graph.c captures only after a warm-up step, so no
 * allocation happens inside a capture) and fails on a request past it.
 * Kernel tests have no plan: c NULL, or a wf_storage_ctx context, whose
 * cast_numel is 0, get a buffer that grows (cudaFree waits for the device,
 * so no kernel still reads the old one).  The emulated kernel build
 * (WF_CAST_NO_PLAN, tests/cuda_emu/emu.cmake) has no wf_ctx layout: there
 * every request is unplanned.
 *
 * Without ZeRO-3 the plan has no cast buffer: each GEMM weight keeps its
 * 16-bit copy instead (below). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "cuda_rt.h"
#ifndef WF_CAST_NO_PLAN
#include "internal.h"
#endif

/* A slot of act16's 16-bit weight copies (below). */
typedef struct {
    long offset;           /* the parameter's offset in the arena: the key */
    long at;               /* the slot's first float in the buffer */
    long n;                /* values converted into it */
    const float *src;      /* from where (NULL: nothing valid) */
    unsigned long version; /* c->params_version at that conversion */
} weight16_slot;

/* This file's part of a context's state (cuda_rt.h's wf_cuda_ctx). */
struct wf_cuda_cast {
    float *planned, *grown;  /* the cast buffer: the plan's, or a kernel test's that grows */
    long grown_floats;
    weight16_slot *slots;    /* the weight copies' slots, in the order of first use */
    int n_slots;
    float *copies;           /* the plan's weight16_numel floats */
    long copies_used;
    int log_conversions;     /* WEFT_WEIGHT16_LOG set: one stderr line per conversion; -1: not read yet */
};

static struct wf_cuda_cast *cast_of(wf_ctx *c) {
    wf_cuda_ctx *x = wf_cuda_of(c);
    if (!x->cast) {
        x->cast = wf_cuda_zalloc(c, sizeof *x->cast, "cast.c's state");
        x->cast->log_conversions = -1;
    }
    return x->cast;
}

static long planned_floats(wf_ctx *c) {
#ifdef WF_CAST_NO_PLAN
    (void)c;
    return 0;
#else
    return c ? c->p->cast_numel : 0;
#endif
}

float *wf_cuda_cast_buffer(wf_ctx *c, long floats) {
    struct wf_cuda_cast *s = cast_of(c);
    long plan = planned_floats(c);
    if (plan > 0) {
        if (floats > plan) {
            char msg[160];
            snprintf(msg, sizeof msg, "%ld floats requested, the plan's cast_numel is %ld", floats, plan);
            wf_cuda_fail(c, "wf_cuda_cast_buffer", WF_CUDA_WHERE, msg);
        }
        if (!s->planned) WF_CUDA(c, wf_cuda_malloc(c, (void **)&s->planned, sizeof(float) * (size_t)plan));
        return s->planned;
    }
    if (floats > s->grown_floats) {
        if (s->grown) WF_CUDA(c, wf_cuda_free(c, s->grown));
        s->grown = NULL;
        WF_CUDA(c, wf_cuda_malloc(c, (void **)&s->grown, sizeof(float) * (size_t)(floats > 0 ? floats : 1)));
        s->grown_floats = floats;
    }
    return s->grown;
}

/* ---- act16's 16-bit weight copies (wf_cuda_weight16_slot) ----------------
 * Each GEMM weight has its own slot in one buffer of the plan's
 * weight16_numel floats, laid out in the order of first use (the compiler
 * sums the same align16((numel + 1) / 2) over the same weights: a request
 * past the plan fails).  A slot remembers what it holds: the values of w
 * (which 2BW's weight versions tell apart) as of c->params_version, which
 * every writer of the parameters bumps (wf_params_changed, internal.h); a
 * GEMM that finds them current reuses the copy, any other converts it. */
#ifndef WF_CAST_NO_PLAN
static void weight16_fail(wf_ctx *c, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));
static void weight16_fail(wf_ctx *c, const char *fmt, ...) {
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    wf_cuda_fail(c, "wf_cuda_weight16", WF_CUDA_WHERE, msg);
}

/* The parameter starting at arena offset `off`, or -1. */
static int param_at(const wf_program *p, long off) {
    for (int k = 0; k < p->n_params; k++)
        if (p->params[k].offset == off) return k;
    return -1;
}

static weight16_slot *slot_of(wf_ctx *c, long off, long n) {
    const wf_program *p = c->p;
    struct wf_cuda_cast *cs = cast_of(c);
    for (int i = 0; i < cs->n_slots; i++)
        if (cs->slots[i].offset == off) return &cs->slots[i];
    int k = param_at(p, off);
    if (k < 0 || n > p->params[k].numel)
        weight16_fail(c, "a GEMM weight of %ld values at arena offset %ld is not a parameter", n, off);
    long floats = ((p->params[k].numel + 1) / 2 + 15) & ~15L;
    if (cs->copies_used + floats > p->weight16_numel)
        weight16_fail(c, "%ld floats of 16-bit weights requested, the plan's weight16_numel is %ld",
                      cs->copies_used + floats, p->weight16_numel);
    if (!cs->slots) {  /* the first request: in the eager warm-up step (graph.c), never in a capture */
        cs->slots = calloc((size_t)p->n_params, sizeof *cs->slots);
        if (!cs->slots) weight16_fail(c, "cannot allocate %d slots", p->n_params);
        WF_CUDA(c, wf_cuda_malloc(c, (void **)&cs->copies, sizeof(float) * (size_t)p->weight16_numel));
    }
    weight16_slot *s = &cs->slots[cs->n_slots++];
    *s = (weight16_slot){ .offset = off, .at = cs->copies_used };
    cs->copies_used += floats;
    return s;
}
#endif

void *wf_cuda_weight16_slot(wf_ctx *c, const float *w, long n, int *convert) {
    *convert = 1;
#ifdef WF_CAST_NO_PLAN
    (void)c, (void)w, (void)n;
    return NULL;
#else
    if (!c || c->p->weight16_numel == 0) return NULL;  /* kernel tests; ZeRO-3 */
    long off = (long)(w - c->params);
    if (w < c->params || off >= c->p->param_numel)
        weight16_fail(c, "a GEMM weight of %ld values at %ld floats from the parameter arena", n, off);
    struct wf_cuda_cast *cs = cast_of(c);
    weight16_slot *s = slot_of(c, off, n);
    *convert = s->src != w || s->n != n || s->version != c->params_version;
    if (*convert) {
        s->src = w;
        s->n = n;
        s->version = c->params_version;
        if (cs->log_conversions < 0) cs->log_conversions = getenv("WEFT_WEIGHT16_LOG") != NULL;
        if (cs->log_conversions)
            fprintf(stderr, "weft: rank %d: weight16: step %ld converts %s (%ld values)%s\n", c->rank,
                    c->step + 1, c->p->params[param_at(c->p, off)].name, n,
                    c->graph_capture ? " while capturing" : "");
    }
    return cs->copies + s->at;
#endif
}

const void *wf_cuda_weight16_in_place(wf_ctx *c, const float *w, long n) {
#ifdef WF_CAST_NO_PLAN
    (void)c, (void)w, (void)n;
    return NULL;
#else
    if (!c || !c->p->param16) return NULL;
    long at = c->w16_slot ? (long)(w - c->w16_slot) : -1;
    if (!c->w16_slot || w < c->w16_slot || at + n > c->w16_n)
        weight16_fail(c, "under 16-bit parameters a GEMM weight of %ld values is not the one "
                      "wf_widen_params left in place (%ld values)", n, c->w16_n);
    return (const uint16_t *)c->w16_bits + at;
#endif
}

void wf_cuda_weight16_forget(wf_ctx *c) {
    struct wf_cuda_cast *s = cast_of(c);
    for (int i = 0; i < s->n_slots; i++) s->slots[i].src = NULL;
}
