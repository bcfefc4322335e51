/* zero_startup.c: ZeRO-3's start-up without the stage's whole parameters.
 * Each rank makes (init.c: every element a pure function of seed, name and
 * global index) or reads (ckpt.c's read_all) only the range of each
 * parameter it owns, one parameter at a time, and places it where training
 * keeps it: the fp32 master (16-bit precisions), its parameter shard
 * (rounded; 16-bit values under param16) and under PipeDream-2BW the
 * second version's shard.  Frozen parameters are whole on every rank, made
 * or read straight into their place at the end of the gather arena
 * (zero_params.c).  The values are those the whole-stage way gave: the
 * same floats, rounded and narrowed the same way (optim.c's
 * wf_master_setup, param16.c). */
#include <string.h>

#include "internal.h"
#include "precision_bits.h"

/* own: this rank's range of parameter k (own_lo .. own_hi), rounded here in
 * place.  master: it is the newest version, the master's values. */
void wf_zero3_place(wf_ctx *c, int k, float *own, int master, float *shard, float *other) {
    const wf_program *p = c->p;
    long at = c->moment_base[k], n = c->own_hi[k] - c->own_lo[k];
    if (master && c->master) memcpy(c->master + at, own, sizeof(float) * (size_t)n);
    if (p->precision != WF_FP32)
        for (long i = 0; i < n; i++) own[i] = wf_hd_round(p->precision, own[i]);
    float *to[2] = { shard, other };
    for (int v = 0; v < 2; v++) {
        if (!to[v]) continue;
        if (p->param16) wf_params16_narrow(c, wf_params16_at(to[v], at), own, n);
        else memcpy(to[v] + at, own, sizeof(float) * (size_t)n);
    }
}

/* Initialisation: both 2BW versions start equal. */
void wf_zero3_init(wf_ctx *c) {
    const wf_program *p = c->p;
    float *own = wf_startup_alloc(c, sizeof(float) * (size_t)wf_own_most(c), "a parameter's own range (ZeRO-3 start-up)");
    for (int k = 0; k < p->n_params; k++) {
        const wf_param *q = &p->params[k];
        if (q->bucket < 0) {  /* frozen: whole, in place */
            wf_init_range(c, q, 0, q->numel, c->params + wf_frozen_at(p, k));
            continue;
        }
        wf_init_range(c, q, c->own_lo[k], c->own_hi[k], own);
        wf_zero3_place(c, k, own, 1, c->param_shard, p->weight_delay ? c->next_shard : NULL);
    }
    wf_startup_free(own);
    wf_params_changed(c);
}
