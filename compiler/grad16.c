/* grad16.c: weight gradients stored in 16 bits (bf16 / fp16 plans whose
 * gradients accumulate in that type, plan.grad_accum; both backends: the
 * CUDA one converts on the device, runtime/cuda/grad16.cu).
 *
 * Under 16-bit accumulation every weight gradient the float arena held was
 * already a value of the plan's 16-bit type: the generated code rounded it
 * after each backward op, the optimizer step after the reductions.  grad16
 * stores those values as 2-byte bits (the gradient arena, ZeRO-2's bucket
 * buffers) and keeps every sum that used to run in floats in floats:
 *
 *   - a backward op's parameter gradients are widened into a float scratch
 *     before its kernels (runtime wf_widen_grads), which accumulate there
 *     as before, and are stored back rounded (wf_narrow_grads): the value
 *     the float program rounded to, so the kernels need no change;
 *   - a bucket's data-parallel sum (all-reduce, ZeRO's reduce-scatter) runs
 *     on its values widened into a float staging buffer (the stage's
 *     largest bucket; one bucket in flight at a time) and is rounded once
 *     into the arena (ZeRO-1: this rank's part, as soon as its sum is done;
 *     grad16_zero1_float_numel below), or added into ZeRO-2's float shard;
 *   - the sequence-parallel tp sums and the tied wte's sum between the
 *     pipeline's ends run in that staging too, after the dp sum and before
 *     the one rounding, as the float program summed them before rounding.
 * So a run stores the float program's values bit for bit.  Memory: 2 bytes
 * a gradient plus one op's widened gradients and the staging, in floats;
 * ZeRO-2's shard stays float (it accumulates the microbatches unrounded).
 * "Where it saves" as param16.c: a small model with a large vocabulary
 * widens its V x C head gradient each microbatch into more than it saves.
 * A 16-bit dp sum (plan.dp_comm) already ran in the stored type, so there a
 * bucket's bits are sent as they are: no staging for the dp sum, half the
 * bytes of the float one (the tp and tied sums after it still run on floats,
 * one parameter at a time, as at dp 1).
 * ZeRO-3 stores its bucket buffers in 16 bits as ZeRO-2 does (its
 * parameters' gathers are param16.c's); frozen parameters (weft.vlm's
 * freeze) have no gradient, no bucket and no backward op that writes one,
 * so they are simply not counted (the arena holds the trained ones).
 * PipeDream-2BW over dp with fp32 dp sums keeps the tied wte's bucket in
 * the staging from its dp sum through the exchange between the pipeline's
 * ends (runtime wf_grad16_tied_grad; on CUDA its sums run on the device,
 * runtime/cuda/grad16.cu); under ZeRO 1, 2 and 3 as well
 * (tests/e2e/pipedream.sh's bf16 resume checks).
 * WEFT_GRAD16=0 in the compiler's environment keeps the float arena: the
 * form tests/e2e/grad16.sh compares with; WEFT_GRAD16=1 stores 16 bits
 * wherever it can, saving or not (the test's small layouts).  Under ZeRO-2
 * it rarely saves: the bucket buffers are a few buckets, the staging one
 * more in floats. */
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "memory_pack.h"
#include "ops.h"
#include "startup_peak.h"  /* wf_startup_own: a parameter's part of a rank's shard */

/* One op's parameter gradients, widened end to end (runtime wf_widen_grads
 * places the second at the first's numel rounded up to 16 floats). */
static long widest(const Program *p, int stage) {
    long most = 0;
    for (int i = 0; i < p->n_ops; i++) {
        const ir_op *o = &p->ops[i];
        if (o->chunk % p->pp != stage || !o->grad_w) continue;
        long n = 0;
        for (int k = 0; k < o->n_param; k++) n += align16(p->params[o->param[k]].numel);
        if (n > most) most = n;
    }
    return most;
}

/* Which parameters have their gradient summed after the dp sum: sequence
 * parallelism's partial gradients (over tp) and the tied wte's two copies
 * (over the pipeline's ends).  One pass over the parameters (a copy names
 * its original in tied_to). */
static char *summed_after_flags(const Program *p) {
    char *after = wf_checked(calloc((size_t)p->n_params + 1, 1), "grad16 pass");
    for (int k = 0; k < p->n_params; k++) {
        const ir_param *q = &p->params[k];
        if (q->tp_partial && p->sp && p->tp > 1) after[k] = 1;
        if (p->pp >= 2 && q->tied_to >= 0) after[k] = after[q->tied_to] = 1;
    }
    return after;
}

/* The float staging: with dp > 1 the stage's largest bucket (its dp sum,
 * and the sums after it, run there); with dp 1, or a 16-bit dp sum
 * (plan.dp_comm: the bucket's bits are summed in place, runtime grad16.c)
 * without ZeRO, the largest parameter summed after it (one at a time);
 * none for a 16-bit dp sum under ZeRO (ZeRO-1's float parts, ZeRO-2's
 * float shard hold the sums after it). */
long grad16_stage_numel_of(const Program *p, int stage) {
    long most = 0;
    int sum16 = p->dp > 1 && dp_comm16(p);
    if (sum16 && p->zero) return 0;
    if (p->dp > 1 && !sum16) {
        for (int b = 0; b < p->n_buckets; b++)
            if (p->buckets[b].stage == stage && p->buckets[b].numel > most) most = p->buckets[b].numel;
        return align16(most);
    }
    char *after = summed_after_flags(p);
    for (int k = 0; k < p->n_params; k++)
        if (p->params[k].stage == stage && !p->params[k].frozen && after[k] && p->params[k].numel > most)
            most = p->params[k].numel;
    free(after);
    return align16(most);
}

int grad16_decide(const Program *p) {
    if (!grad_accum16(p) || !backend_of(p)->grad16) return 0;
    const char *env = getenv("WEFT_GRAD16");
    if (env && strcmp(env, "0") == 0) return 0;
    if (p->zero && p->dp < 2) return 0;
    if (env && strcmp(env, "1") == 0) return 1;  /* tests: wherever it can, saving or not */
    for (int st = 0; st < p->pp; st++) {
        /* ZeRO-2 and 3: the bucket buffers are what is stored in 16 bits;
         * otherwise the trained parameters' gradients (a frozen one has none) */
        double n = p->zero >= 2 ? (double)p->grad_buf_numel[st] : (double)p->train_numel[st];
        if (2.0 * n <= 4.0 * (double)(widest(p, st) + grad16_stage_numel_of(p, st))) return 0;
    }
    return 1;
}

int grad16(const Program *p) { return p->grad16; }

long grad16_scratch_numel(const Program *p, int stage) { return grad16(p) ? widest(p, stage) : 0; }

long grad16_stage_numel(const Program *p, int stage) { return grad16(p) ? grad16_stage_numel_of(p, stage) : 0; }

/* ZeRO-1 (runtime grad16.c's zero1_place): each bucket's summed part is
 * rounded into its place in the 16-bit arena as soon as its dp sum is done;
 * only the parameters summed after the dp sum keep this rank's part of them
 * in floats until the optimizer step.  Every rank allocates the most of any
 * dp rank (a parameter straddling shards splits unevenly): rank r owns
 * [offset + r n / dp, offset + (r + 1) n / dp) of a bucket of n values. */
long grad16_zero1_float_numel(const Program *p, int stage) {
    if (!grad16(p) || p->zero != 1) return 0;
    char *after = summed_after_flags(p);
    long *sum = wf_checked(calloc((size_t)p->dp + 1, sizeof(long)), "grad16 pass"), most = 0;
    for (int k = 0; k < p->n_params; k++) {
        const ir_param *q = &p->params[k];
        if (q->stage != stage || q->frozen || q->bucket < 0 || !after[k]) continue;
        const ir_bucket *b = &p->buckets[q->bucket];
        long part = b->numel / p->dp;
        if (part <= 0 || q->numel <= 0) continue;
        /* only the ranks whose parts the parameter reaches */
        long r0 = (q->offset - b->offset) / part, r1 = (q->offset + q->numel - 1 - b->offset) / part;
        for (long r = r0 < 0 ? 0 : r0; r <= r1 && r < p->dp; r++)
            sum[r] += (long)wf_startup_own((double)q->offset, (double)q->numel, 0, 1, (double)b->offset,
                                           (double)b->numel, p->dp, (int)r);
    }
    for (int r = 0; r < p->dp; r++)
        if (sum[r] > most) most = sum[r];
    free(sum);
    free(after);
    return most;
}
