/* model_state.c: a plan's model state per parameter, and where its weight
 * gradients accumulate (plan.grad_accum).
 *
 * Model state is what a rank keeps for each parameter it computes with:
 * working weights, gradients, fp32 master weights (bf16 / fp16 plans) and
 * AdamW's two moments.  DeepSpeed counts 2 + 2 + 12 = 16 bytes for mixed
 * precision without ZeRO; ZeRO divides the optimizer's 12 (stage 1), the
 * gradients (2) and the weights (3) by dp.  Here the figures are memory.c's
 * arenas (what the runtime allocates, byte for byte on the CPU) over the
 * rank's parameters (its tp and pp share), so they say what this runtime
 * stores, not what an ideal one would: under param16 (bf16 / fp16, both
 * backends) the working weights are 2 bytes (param16.c, with the float
 * scratch of one op's widened weights; ZeRO-3's shards and gather buffers
 * too; CUDA's GEMMs read them in place); with param_storage = "fp32" the
 * weight arena holds floats (16-bit values rounded in them) and CUDA's act16
 * adds a 16-bit copy of each GEMM weight; the gradients are 2 bytes under
 * 16-bit accumulation where grad16.c decides so (both backends, with one
 * op's widened and the sums' staging), floats elsewhere. */
#include <string.h>

#include "ops.h"

int grad_accum16(const Program *p) {
    if (strcmp(p->precision, "bf16") != 0 && strcmp(p->precision, "fp16") != 0) return 0;
    return strcmp(p->grad_accum, "fp32") != 0;
}

model_state model_state_of(const Program *p, int stage) {
    program_memory m = program_memory_of(p, stage);
    model_state s;
    memset(&s, 0, sizeof s);
    s.numel = (double)p->param_numel[stage];
    double shard = p->zero ? 4.0 * (double)p->shard_numel[stage] : 0;
    /* an offloaded ZeRO-3 shard is host memory (memory.c moves it there) */
    if (param16(p)) shard /= 2;  /* 16-bit parameter shards (param16.c) */
    double host_shard = p->offload_params ? (shard > 0 ? shard : 64.0) : 0;
    double per = s.numel > 0 ? 1.0 / s.numel : 0;
    s.params = (m.params + host_shard + m.w16 + m.cast) * per;
    s.grads = m.grads * per;
    s.master = m.master * per;
    s.moments = m.moments * per;
    s.total = s.params + s.grads + s.master + s.moments;
    return s;
}

/* One line per plan: the stage whose ranks keep the most model state. */
void model_state_report(const Program *p, FILE *out) {
    int worst = 0;
    double most = -1;
    for (int st = 0; st < p->pp; st++) {
        model_state s = model_state_of(p, st);
        if (s.total * s.numel > most) {
            most = s.total * s.numel;
            worst = st;
        }
    }
    model_state s = model_state_of(p, worst);
    char n[32] = "";
    if (p->pp > 1) snprintf(n, sizeof n, " (stage %d)", worst);
    fprintf(out, "model state%s: %.2f B per parameter = weights %.2f%s + gradients %.2f%s + fp32 master %.2f "
                 "+ AdamW moments %.2f", n, s.total, s.params,
            param16(p) ? " (16-bit, with one op's widened)"
            : p->act16 && !backend_of(p)->act16_staged
                ? (p->zero >= 3 ? " (with the 16-bit cast buffer)" : " (with the 16-bit GEMM copies)")
            : "",
            s.grads, grad16(p) ? " (16-bit, with one op's widened and the sums' staging)" : "", s.master, s.moments);
    if (p->zero) fprintf(out, "; ZeRO-%d over dp %d", p->zero, p->dp);
    if (strcmp(p->precision, "fp32") != 0)
        fprintf(out, "; gradients accumulate in %s (plan.grad_accum)", grad_accum16(p) ? p->precision : "fp32");
    fputc('\n', out);
}
