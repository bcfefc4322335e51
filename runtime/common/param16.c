/* param16.c: working parameters stored in 16 bits (wf_program.param16, the
 * compiler's param16.c; both backends: on CUDA the arenas are managed
 * memory, which this file's host loops touch only at startup and for
 * checkpoints, after the device is idle).
 *
 * The parameter arena then holds bf16 / fp16 bits, 2 bytes a value, and
 * c->params, c->next_params and 2BW's wver[] carry its address as `float *`
 * (as act16's activations do): code that swaps versions is unchanged, and
 * code that reads or writes values goes through here.  The fp32 masters stay
 * the truth: the optimizer stores each updated master rounded, as bits
 * (opt_host.c).  Training starts on float copies (initialization and
 * checkpoint loading write floats, wf_master_setup rounds them), which
 * wf_params16_adopt then narrows into the arenas.  Every value the float
 * layout held was a rounded one, so widening gives it back exactly: the
 * kernels see the same floats.  Under ZeRO-3 c->params is the 16-bit gather
 * arena and the shards are 16-bit too (zero_params.c). */
#include <stdlib.h>
#include <string.h>

#include "convert16.h"
#include "internal.h"
#include "startup_peak.h"

static uint16_t *bits_of(float *x) { return (uint16_t *)(void *)x; }

/* In stream order where the arenas live (a kernel on CUDA, which must not
 * see a host loop run ahead of it).  n0 < 0: parameter 0 is a GEMM weight
 * that the backend's GEMMs read as 16-bit values where it is stored (CUDA:
 * runtime/cuda/cast.c's wf_cuda_weight16_in_place finds it by its slot); the
 * compiler gives that only to such a backend. */
const float *wf_widen_params(wf_ctx *c, long off0, long n0, long off1, long n1) {
    const uint16_t *v = bits_of(c->params);
    if (n0 < 0) {
        c->w16_slot = c->wscratch;
        c->w16_bits = v + off0;
        c->w16_n = -n0;
        n0 = -n0;
    } else {  /* no weight in place: a GEMM on this op's widened floats fails (cast.c) */
        c->w16_slot = NULL;
        wf_backend_from16(c, c->wscratch, v + off0, n0);
    }
    if (n1 > 0) wf_backend_from16(c, c->wscratch + ((n0 + 15) & ~15L), v + off1, n1);
    return c->wscratch;
}

/* The arenas (allocate): the version(s) and the scratch. */
void wf_params16_alloc(wf_ctx *c) {
    const wf_program *p = c->p;
    size_t bytes = sizeof(uint16_t) * (size_t)p->param_numel;
    if (p->zero >= 3) bytes = sizeof(uint16_t) * (size_t)p->gather_numel;
    c->params16[0] = (float *)wf_alloc(c, bytes, p->zero >= 3 ? "parameter gather buffers (16-bit)" : "parameters (16-bit)");
    c->params = c->params16[0];
    /* (ZeRO-3: the second version is a second shard, wf_zero_setup) */
    if (p->weight_delay && p->zero < 3) c->params16[1] = (float *)wf_alloc(c, bytes, "PipeDream-2BW weight version (16-bit)");
    c->wscratch = wf_alloc(c, sizeof(float) * (size_t)p->wscratch_numel, "parameters widened for one op");
}

/* Startup: float copies for initialization or loading, not arenas.  An
 * idle arena large enough holds the first, so that the startup's peak
 * memory does not grow (startup_peak.h's wf_startup_idle_arena chooses it,
 * the same choice weft check's start-up bound counts): the gradient arena,
 * AdamW's first moment on a fresh start, or the activation arena; else host
 * memory.  2BW's other version is a copy of it unless a checkpoint loads both. */
int wf_params16_idle(const wf_ctx *c) {
    const wf_program *p = c->p;
    double acts = (double)p->act_numel * (p->slots > 0 ? p->slots : 1) + (double)p->act_region_numel;
    return wf_startup_idle_arena(p->zero, p->grad16, c->opt.resume != NULL, p->offload_optimizer,
                                 (double)p->param_numel, (double)p->grad_numel, (double)c->moment_numel, acts);
}

static void *idle_arena(wf_ctx *c) {
    switch (wf_params16_idle(c)) {
    case WF_IDLE_GRADS: return c->grads;
    case WF_IDLE_MOMENT: return c->adam_m;
    case WF_IDLE_ACTS: return c->acts;
    default: return NULL;
    }
}

void wf_params16_startup(wf_ctx *c) {
    const wf_program *p = c->p;
    size_t bytes = sizeof(float) * (size_t)p->param_numel;
    float *idle = idle_arena(c);
    c->params = idle ? idle : wf_startup_alloc(c, bytes, "parameters (startup, fp32)");
    c->next_params = NULL;
    if (p->weight_delay && c->opt.resume)
        c->next_params = wf_startup_alloc(c, bytes, "PipeDream-2BW version (startup, fp32)");
}

/* The startup floats (already rounded by wf_master_setup) into the arenas;
 * the borrowed arena zeroed again. */
void wf_params16_adopt(wf_ctx *c) {
    const wf_program *p = c->p;
    float *from[2] = { c->params, c->next_params ? c->next_params : c->params };
    for (int v = 0; v < 2; v++) {
        if (!c->params16[v]) continue;
        wf_narrow16(p->precision, bits_of(c->params16[v]), from[v], p->param_numel);
    }
    wf_startup_free(c->next_params);
    if (c->params == c->grads || c->params == c->acts || c->params == c->adam_m) memset(c->params, 0, sizeof(float) * (size_t)p->param_numel);
    else wf_startup_free(c->params);
    c->params = c->params16[0];
    c->next_params = c->params16[1];
}

/* A version's values as floats (host memory, the caller frees). */
float *wf_params16_widened(wf_ctx *c, const float *version) {
    const wf_program *p = c->p;
    float *out = wf_host_alloc(c, sizeof(float) * (size_t)p->param_numel, "parameters widened (checkpoint)");
    wf_widen16(p->precision, out, (const uint16_t *)(const void *)version, p->param_numel);
    return out;
}

/* n floats of src as 16-bit values at dst */
void wf_params16_narrow(wf_ctx *c, void *dst, const float *src, long n) {
    wf_narrow16(c->p->precision, dst, src, n);
}

/* dst = src, version to version (2BW), where the arenas live */
void wf_params16_copy(wf_ctx *c, float *dst, const float *src) {
    wf_backend_copy(c, dst, src, sizeof(uint16_t) * (size_t)c->p->param_numel);
}

/* The collectives' type for the stored values (copied, never summed). */
wf_dtype wf_params16_type(wf_ctx *c) { return c->p->precision == WF_BF16 ? WF_B16 : WF_F16; }

/* Element `off` of a version, as the address MPI sends from or receives into. */
void *wf_params16_at(float *version, long off) { return bits_of(version) + off; }
