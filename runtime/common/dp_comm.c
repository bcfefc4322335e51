/* dp_comm.c: 16-bit data-parallel gradient sums (plan.dp_comm = "bf16" /
 * "fp16"), over host MPI or NCCL, with or without ZeRO.
 *
 * A bucket's fp32 gradients are narrowed to the type into the staging buffer
 * c->dp16 (compiler/memory.c plans it: the stage's largest bucket, 2 bytes a
 * gradient) and copied back into the bucket's first half, where the
 * collective reads them: the all-reduce in place (step.c), ZeRO's
 * reduce-scatter into its shard (zero.c) or in place (zero_grads.c).  Each add
 * of the collective rounds to the type (coll.h).  Widening is the reverse:
 * the 16-bit result to staging, widened into the bucket's floats.
 *
 * Why a staging buffer: converting in place is a serial walk (value i goes
 * to bytes 2i, which value i / 2 still occupies), which a GPU cannot do in
 * parallel.  The staging buffer is used only in stream order on the compute
 * stream, between a bucket's last gradient write and its collective's start,
 * or after its wait, never while a collective reads it; so one buffer serves
 * every bucket in flight.
 *
 * Each rank's gradient rounds once to the type, each partial sum once more;
 * the optimizer step (step.c) rounds the reduced gradient to the type as it
 * does after fp32 sums. */
#include "internal.h"

wf_dtype wf_dp16_type(wf_ctx *c) { return wf_ctx_precision(c) == WF_BF16 ? WF_B16 : WF_F16; }

void wf_dp16_pack(wf_ctx *c, float *g, long n) {
    wf_backend_to16(c, c->dp16, g, n);
    wf_backend_copy(c, g, c->dp16, 2 * (size_t)n);
}

void wf_dp16_unpack(wf_ctx *c, float *g, long n) {
    wf_backend_copy(c, c->dp16, g, 2 * (size_t)n);
    wf_backend_from16(c, g, c->dp16, n);
}

void wf_dp16_widen(wf_ctx *c, float *dst, const void *src, long n) { wf_backend_from16(c, dst, src, n); }
