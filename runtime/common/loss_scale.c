/* loss_scale.c: fp16 loss scaling.
 *
 * The loss gradient is multiplied by the scale (wf_loss_scale), so that small
 * gradients survive fp16's range; the optimizer divides it out again before
 * clipping.  After backward and the gradient reductions every rank looks for
 * inf / NaN in the gradients it will use, and the verdict is OR-reduced over
 * all ranks (dp, tp and pp): an overflow anywhere skips the step everywhere.
 *
 * The dynamic scale follows DeepSpeed's DynamicLossScaler (the default,
 * consecutive_hysteresis = false):
 *   - overflow: if the hysteresis budget is down to 1, halve the scale (never
 *     below min); otherwise spend one unit of it.  The budget is not restored
 *     by good steps, so with hysteresis = 2 the first overflow keeps the scale
 *     and every later one (until the next growth) halves it;
 *   - every `window` overflow-free steps since the last overflow: double the
 *     scale and restore the hysteresis budget.
 * A static scale (loss_scale = 1024) never changes, but still skips steps that
 * overflow.  Skipped steps advance the data and the step count, not AdamW's
 * step count or the learning-rate schedule (both count updates). */
#include <math.h>

#include "internal.h"
#include "precision_bits.h"

void wf_scaler_init(wf_ctx *c) {
    const wf_program *p = c->p;
    c->scaler.scale = p->precision == WF_FP16 ? p->scale_initial : 1.0;
    c->scaler.hysteresis = p->scale_hysteresis;
    c->scaler.good_steps = 0;
    c->scaler.skipped = 0;
    c->scaler.overflow = 0;
}

/* The test hook: an inf in the first gradient element this rank owns. */
static void inject(wf_ctx *c) {
    const wf_program *p = c->p;
    /* CUDA: the 16-bit rounding of these gradients may still be running on
     * the device, and would write the old value back over the inf */
    wf_backend_sync(c);
    for (int k = 0; k < p->n_params; k++)
        if (c->own_hi[k] > c->own_lo[k]) {
            if (p->grad16 && p->zero < 2) {  /* 16-bit gradients (grad16.c): inf's bits */
                uint16_t *g = (uint16_t *)(void *)c->grads + p->params[k].offset + c->own_lo[k];
                *g = p->precision == WF_BF16 ? wf_hd_bf16_bits(INFINITY) : wf_hd_fp16_bits(INFINITY);
                return;
            }
            wf_own_grad(c, k)[c->own_lo[k]] = INFINITY;
            return;
        }
}

int wf_grads_overflow(wf_ctx *c) {
    for (int i = 0; i < c->opt.n_inject; i++)
        if (c->opt.inject_step[i] == c->step + 1 && c->opt.inject_rank[i] == c->rank) inject(c);
    int bad = c->p->grad16 && c->p->zero < 2 ? wf_grad16_nonfinite(c)  /* 16-bit gradients (grad16.c) */
            : wf_backend_nonfinite(c, &c->ranges, wf_opt_grads_base(c));  /* ZeRO-2: this rank's shard */
    wf_watch_what(c, -1, "fp16 overflow check (all-reduce over all ranks)");
    WF_MPI(c, MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD));
    wf_watch_done();
    return bad;
}

void wf_scaler_update(wf_ctx *c, int overflow) {
    const wf_program *p = c->p;
    wf_scaler *s = &c->scaler;
    s->overflow = overflow;
    if (overflow) s->skipped++;
    if (!p->scale_dynamic) return;
    if (overflow) {
        if (s->hysteresis <= 1) s->scale = fmax(s->scale / 2, p->scale_min);
        else s->hysteresis--;
        s->good_steps = 0;
        return;
    }
    if (++s->good_steps % p->scale_window == 0) {
        s->scale *= 2;
        s->hysteresis = p->scale_hysteresis;
    }
}
