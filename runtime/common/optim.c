/* optim.c: learning-rate schedule, global gradient norm and AdamW. */
#include <math.h>

#include "internal.h"
#include "precision_bits.h"

/* Linear warmup to lr over `warmup` steps, then cosine decay to min_lr at the
 * plan's last step. `step` counts completed steps (0 for the first). */
double wf_lr_at(const wf_program *p, long step) {
    if (p->warmup > 0 && step < p->warmup) return p->lr * (double)(step + 1) / p->warmup;
    long span = p->steps - p->warmup;
    double ratio = span > 0 ? (double)(step - p->warmup) / (double)span : 1.0;
    if (ratio > 1.0) ratio = 1.0;
    return p->min_lr + 0.5 * (1.0 + cos(M_PI * ratio)) * (p->lr - p->min_lr);
}

/* This rank's share of the squared gradient norm, each parameter counted
 * once per tp group: parameters the tp group replicates by tp rank 0 only,
 * the LM head's copy of wte not at all (stage 0 counts wte). */
double wf_local_grad_sq(wf_ctx *c) {
    if (c->p->grad16 && c->p->zero < 2) return wf_grad16_sumsq(c);  /* 16-bit gradients (grad16.c) */
    return wf_backend_sumsq(c, &c->ranges, wf_opt_grads_base(c));  /* ranges marked in_norm */
}

/* Global gradient norm, each parameter counted exactly once: data-parallel
 * replicas hold the same reduced gradient (counted by each, not summed; with
 * ZeRO each rank holds its own shard: summed), tensor-parallel shards and
 * pipeline stages are summed. */
double wf_grad_norm(wf_ctx *c) {
    const wf_program *p = c->p;
    double sum = wf_local_grad_sq(c);
    wf_watch_what(c, WF_GROUP_DP, "gradient-norm all-reduce");
    if (p->zero) WF_MPI(c, MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_DOUBLE, MPI_SUM, c->group_comm[WF_GROUP_DP]));
    wf_watch_what(c, WF_GROUP_TP, "gradient-norm all-reduce");
    if (p->tp > 1) WF_MPI(c, MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_DOUBLE, MPI_SUM, c->group_comm[WF_GROUP_TP]));
    wf_watch_what(c, WF_GROUP_PP, "gradient-norm all-reduce");
    if (p->pp > 1) WF_MPI(c, MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_DOUBLE, MPI_SUM, c->group_comm[WF_GROUP_PP]));
    wf_watch_done();
    return sqrt(sum);
}

/* Sequence parallelism leaves each tp rank a partial gradient of the
 * parameters it replicates (layernorms, row biases, wpe): sum them. */
void wf_tp_partial_grads(wf_ctx *c) {
    const wf_program *p = c->p;
    if (!p->sp || p->tp == 1) return;
    for (int k = 0; k < p->n_params; k++) {
        const wf_param *q = &p->params[k];
        if (!q->tp_partial || q->bucket < 0) continue;  /* a frozen one has no gradient */
        /* tp ranks share the bucket layout, so (ZeRO >= 2) also the shard */
        long lo = p->zero >= 2 ? c->own_lo[k] : 0, hi = p->zero >= 2 ? c->own_hi[k] : q->numel;
        if (hi <= lo) continue;
        wf_watch_what(c, WF_GROUP_TP, "sequence-parallel gradient all-reduce of %s", q->name);
        WF_MPI(c, MPI_Allreduce(MPI_IN_PLACE, wf_own_grad(c, k) + lo, (int)(hi - lo), MPI_FLOAT,
                                MPI_SUM, c->group_comm[WF_GROUP_TP]));
        wf_watch_done();
    }
}

/* AdamW with decoupled weight decay (applied to matrices only, as in GPT-2
 * training), bias-corrected moments.  With PipeDream-2BW's weight delay the
 * step updates the newest version while compute moves on to the one before:
 * W(t+1) = W(t) - lr * update(grad of W(t-1)). */
void wf_adamw(wf_ctx *c, double lr, float grad_scale) {
    const wf_program *p = c->p;
    float *weights = p->zero >= 3 ? c->param_shard : c->params;
    if (p->weight_delay) {  /* the older version becomes W(t); the newest is updated */
        float *newest = p->zero >= 3 ? c->next_shard : c->next_params;
        wf_version_copy(c, weights, newest);
        weights = newest;
    }
    wf_adamw_into(c, weights, lr, grad_scale, 0);
}

/* PipeDream-2BW: weight version src over version dst, which the optimizer
 * then updates, where the versions live (on the device for CUDA): ZeRO-3's
 * parameter shards, 16-bit arenas (param16.c) or fp32 ones (a plain copy). */
void wf_version_copy(wf_ctx *c, float *dst, const float *src) {
    const wf_program *p = c->p;
    if (p->zero >= 3) wf_zero_copy_shard(c, dst, src);
    else if (p->param16) wf_params16_copy(c, dst, src);
    else wf_backend_round_copy(c, WF_FP32, dst, src, p->param_numel);
    wf_params_changed(c);
}

/* The update itself, in place on `weights` (under ZeRO-3 a version's shard,
 * else a whole version); skip_tied_copy leaves the LM
 * head's copy of wte alone (2BW: stage 0 sends its new version). */
void wf_adamw_into(wf_ctx *c, float *weights, double lr, float grad_scale, int skip_tied_copy) {
    const wf_program *p = c->p;
    long t = c->step + 1 - c->scaler.skipped;  /* updates, not steps (fp16 skips some) */
    double bc1 = 1.0 - pow(p->beta1, (double)t), bc2 = 1.0 - pow(p->beta2, (double)t);
    wf_adamw_args a = {
        .t = c->ranges, .weights = weights, .grads = wf_opt_grads_base(c),
        .m = c->adam_m, .v = c->adam_v,
        .master = c->master,  /* 16-bit modes update the fp32 master, then store it rounded */
        .precision = p->precision, .param16 = p->param16, .grads16 = p->grad16 && p->zero < 2,
        .skip_tied_copy = skip_tied_copy,
        .b1 = (float)p->beta1, .b2 = (float)p->beta2, .eps = (float)p->eps,
        .step_size = (float)(lr / bc1), .inv_bc2_sqrt = (float)(1.0 / sqrt(bc2)),
        .grad_scale = grad_scale, .decay = (float)(lr * p->weight_decay),
        .on_host = p->offload_optimizer,
    };
    wf_backend_adamw(c, &a);  /* every range in one call (one launch on CUDA) */
    wf_params_changed(c);     /* the device's AdamW is queued: later conversions follow it */
}

/* x[i] rounded to the precision in place, on the host.  Startup only: the
 * weights were just made or loaded here, and host code reads them next (2BW's
 * copy, the 16-bit narrowing).  The backend's round (a kernel on CUDA) would run
 * asynchronously, so those reads could see unrounded values, and x may be
 * a plain host buffer (param16.c's startup floats) that a device kernel
 * must not touch. */
static void round_on_host(int precision, float *x, long n) {
    for (long i = 0; i < n; i++) x[i] = wf_hd_round(precision, x[i]);
}

/* The prefix of the parameter arena that trains: frozen parameters (bucket
 * -1, weft.vlm's freeze) lie after it and, having no master, keep their fp32
 * values in the working copy (the kernels read floats either way). */
static long trained_prefix(const wf_program *p) {
    long n = p->param_numel;
    for (int k = 0; k < p->n_params; k++)
        if (p->params[k].bucket < 0 && p->params[k].offset < n) n = p->params[k].offset;
    return n;
}

/* bf16 / fp16: the fp32 masters of this rank's part (ZeRO-3's start-up
 * fills them itself, zero_startup.c) */
void wf_master_alloc(wf_ctx *c) {
    const wf_program *p = c->p;
    if (p->precision == WF_FP32 || c->master) return;
    size_t bytes = sizeof(float) * (size_t)(c->moment_numel ? c->moment_numel : 1);
    /* an offloaded optimizer keeps its masters with the moments, on the host */
    c->master = p->offload_optimizer ? wf_alloc_host_arena(c, bytes, "fp32 master weights (host)")
                                     : wf_alloc(c, bytes, "fp32 master weights");
}

/* bf16 / fp16: the weights as initialized or loaded (fp32) become the master
 * copy of the part this rank updates, and the working copy that the kernels
 * read is rounded to 16 bits.  A PipeDream-2BW checkpoint loads two versions:
 * the master is the newest (next_params), and both working copies are rounded. */
void wf_master_setup(wf_ctx *c) {
    const wf_program *p = c->p;
    if (p->precision == WF_FP32) return;
    int two = p->weight_delay && c->opt.resume;
    wf_master_alloc(c);
    wf_moment_keep(c, two ? c->next_params : c->params, c->master);
    round_on_host(p->precision, c->params, trained_prefix(p));
    if (two) round_on_host(p->precision, c->next_params, trained_prefix(p));
    wf_params_changed(c);
}
