/* opt_backend.h: the optimizer's per-element loops, which each backend runs
 * where the arenas live (runtime/cpu/optim_cpu.c on the host,
 * runtime/cuda/optim.cu on the device).  The common code (optim.c,
 * loss_scale.c, step.c, twobw.c) keeps the scalars around them: the lr
 * schedule, bias corrections, the clipping factor, the MPI reductions.
 *
 * What this rank updates is a table of ranges, one per parameter it owns a
 * non-empty part of, built once at setup (opt_ranges.c).  A range names its
 * first element by offsets from the arena bases the call passes, so the same
 * table serves every weight version (PipeDream-2BW) and ZeRO's compact
 * shards.  The ranges are laid end to end in one element space [0, total):
 * range r covers [start, start + n) of it, so a device kernel can cover all
 * of them in one launch. */
#ifndef WEFT_OPT_BACKEND_H
#define WEFT_OPT_BACKEND_H

#include "weft/rt.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct wf_opt_range {
    long start, n;       /* place in the concatenated element space, length */
    long w;              /* its first weight, from the weights base (ZeRO-3: a version's shard) */
    long g;              /* its first gradient, from the gradient base (ZeRO >= 2: grad_shard) */
    long mom;            /* its first moment (and fp32 master) element */
    int decay;           /* AdamW's decoupled weight decay applies (matrices) */
    int tied_copy;       /* the LM head's copy of wte: 2BW's update skips it */
    int in_norm;         /* counted in this rank's share of the gradient norm */
} wf_opt_range;

typedef struct wf_opt_table {
    const wf_opt_range *r;  /* host memory; fixed once built (the CUDA backend caches a copy) */
    int n;
    long total;             /* sum of the lengths */
} wf_opt_table;

/* One AdamW update over every range of the table: the scalars are computed
 * by the caller exactly as the CPU loop always used them. */
typedef struct wf_adamw_args {
    wf_opt_table t;
    float *weights;          /* weights base: the version being written (ZeRO-3: its shard) */
    const float *grads;      /* gradient base */
    float *m, *v;            /* moments */
    float *master;           /* bf16 / fp16: fp32 master weights (moment layout), else NULL */
    int precision;           /* with a master: the weights get the master rounded to this */
    int param16;             /* the weights are 16-bit bits of that type (the CPU's param16):
                                weights carries their address, r->w counts values */
    int grads16;             /* the gradients are 16-bit bits of that type (grad16):
                                grads carries their address, r->g counts values */
    int skip_tied_copy;      /* leave ranges marked tied_copy alone */
    float b1, b2, eps, step_size, inv_bc2_sqrt, grad_scale;
    float decay;             /* lr * weight_decay, for ranges marked decay */
    int on_host;             /* offloaded optimizer: moments and masters are host memory,
                                so the update runs on the host on every backend */
} wf_adamw_args;

/* The hooks.  c may be NULL (kernel checks); it only names the rank in errors. */
void wf_backend_adamw(wf_ctx *c, const wf_adamw_args *a);
/* The same update as a host loop (opt_host.c): the CPU backend's hook, and
 * the CUDA backend's when the optimizer is offloaded to host memory. */
void wf_adamw_host(const wf_adamw_args *a);
/* Sum of g^2 over the ranges marked in_norm, in double. */
double wf_backend_sumsq(wf_ctx *c, const wf_opt_table *t, const float *grads);
/* 1 if any gradient of any range is inf or NaN, else 0. */
int wf_backend_nonfinite(wf_ctx *c, const wf_opt_table *t, const float *grads);
/* The same two on 16-bit gradients (grad16: bf16 / fp16 bits of `precision`
 * at grads, r->g counting values), read as their values. */
double wf_backend_sumsq16(wf_ctx *c, const wf_opt_table *t, const void *grads, int precision);
int wf_backend_nonfinite16(wf_ctx *c, const wf_opt_table *t, const void *grads, int precision);
/* dst[i] = src[i] rounded to the precision (fp32: a copy); dst may be src. */
void wf_backend_round_copy(wf_ctx *c, int precision, float *dst, const float *src, long n);
/* dst[i] += src[i] in fp32 where the data lives.  For float state such as
 * gradients: rt.h's wf_add_fwd is an activation kernel, which under 16-bit
 * activation storage (act16) reads and writes 16-bit values. */
void wf_backend_add_floats(wf_ctx *c, float *dst, const float *src, long n);

#ifdef __cplusplus
}
#endif

#endif
