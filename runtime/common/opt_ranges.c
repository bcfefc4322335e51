/* opt_ranges.c: the table of what this rank updates (opt_backend.h), built
 * once after wf_zero_setup from own_lo / own_hi / moment_base, in parameter
 * order, so that the CPU backend's loops over it visit the elements in the
 * order they always did. */
#include "internal.h"

void wf_opt_ranges_setup(wf_ctx *c) {
    const wf_program *p = c->p;
    /* host memory: the CUDA backend keeps its own device copy (optim.cu) */
    wf_opt_range *r = wf_host_alloc(c, sizeof(wf_opt_range) * (size_t)(p->n_params ? p->n_params : 1),
                                    "optimizer range table");
    int n = 0;
    long total = 0;
    for (int k = 0; k < p->n_params; k++) {
        const wf_param *q = &p->params[k];
        long lo = c->own_lo[k], hi = c->own_hi[k];
        if (hi <= lo) continue;
        wf_opt_range *e = &r[n++];
        e->start = total;
        e->n = hi - lo;
        /* the element lo, wherever ZeRO keeps it (as wf_own_grad finds the gradient) */
        e->w = p->zero >= 3 ? c->moment_base[k] : q->offset + lo;
        e->g = p->zero >= 2 ? c->moment_base[k] : q->offset + lo;
        e->mom = c->moment_base[k];
        e->decay = q->decay != 0;
        e->tied_copy = q->tied == 2;
        /* each parameter counted once per tp group: replicated ones by tp
         * rank 0, the LM head's copy of wte not at all (stage 0 counts wte) */
        e->in_norm = !(q->split == WF_SPLIT_NONE && c->tp_rank != 0) && q->tied != 2;
        total += e->n;
    }
    c->ranges.r = r;
    c->ranges.n = n;
    c->ranges.total = total;
}

/* The base the table's gradient offsets are taken from (its weight offsets:
 * the version the caller updates, under ZeRO-3 that version's shard). */
float *wf_opt_grads_base(wf_ctx *c) { return c->p->zero >= 2 ? c->grad_shard : c->grads; }
