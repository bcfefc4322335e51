/* param16.c: working parameters stored in 16 bits (plan.param_storage).
 *
 * Under bf16 / fp16 the kernels compute with the parameters rounded to the
 * plan's 16-bit type, and the optimizer keeps the fp32 truth (the masters).
 * param16 stores that working copy as 16-bit values in the parameter arena
 * (2 bytes each, half the float arena of plan.param_storage = "fp32").  The
 * CPU kernels take floats: the generated code widens each op's parameters
 * into one float scratch arena before its call (runtime wf_widen_params),
 * which the memory plan counts at the size of the stage's largest op.  The
 * values the kernels read are the same floats either way (every working
 * weight is a rounded value), so the numbers are bit for bit those of the
 * float layout.  "auto" stores 16 bits where that saves memory (below).
 * Under ZeRO-3 the shards and the gather buffers hold the 16-bit values
 * (the all-gathers move them).
 * On CUDA (backend row param16_gemm) the GEMMs take 16-bit operands under
 * act16: a GEMM weight (a linear's, the LM head's) is not widened, its
 * kernels read the arena's bits in place (runtime/cuda/convert.cu), so the
 * 16-bit weight copies and ZeRO-3's cast buffer of act16.c go away; the other
 * parameters (norms, biases, embeddings) are widened as on the CPU.  The
 * scratch keeps the CPU's layout (a weight's slot stays unwritten): its size
 * is set by the largest op, in practice an embedding's table, which is
 * widened on either backend. */
#include <string.h>

#include "backend.h"
#include "memory_pack.h"
#include "ops.h"
#include "program.h"

/* The widened parameters of one op sit end to end, each aligned as the
 * arenas' tensors (runtime wf_widen_params places them so). */
static long widest(const Program *p, int stage) {
    long most = 0;
    for (int i = 0; i < p->n_ops; i++) {
        const ir_op *o = &p->ops[i];
        if (o->chunk % p->pp != stage) continue;
        long n = 0;
        for (int k = 0; k < o->n_param; k++) n += align16(p->params[o->param[k]].numel);
        if (n > most) most = n;
    }
    return most;
}

/* "auto" stores 16 bits where that saves bytes on every stage (one layout
 * for the job: the tied wte's messages between the pipeline's ends carry
 * it): the 2 bytes a parameter saves against the scratch, which a small
 * model with a large vocabulary can outgrow (its LM head widens V x C). */
int param16_decide(const Program *p) {
    if (strcmp(p->precision, "bf16") != 0 && strcmp(p->precision, "fp16") != 0) return 0;
    if (!backend_of(p)->param16 || strcmp(p->param_storage, "fp32") == 0) return 0;
    /* CUDA's GEMMs read 16-bit weights only with 16-bit activations (act16);
     * PipeDream-2BW's weight versions are not checked there yet */
    if (backend_of(p)->param16_gemm && (!p->act16 || strcmp(p->schedule, "pipedream-2bw") == 0)) return 0;
    /* weft.vlm's freeze keeps frozen weights as their fp32 values in the
     * working copy (no master holds them), so they cannot be stored rounded */
    for (int st = 0; st < p->pp; st++)
        if (p->train_numel && p->train_numel[st] != p->param_numel[st]) return 0;
    for (int st = 0; st < p->pp; st++) {  /* ZeRO-3: the shard and the gather buffers */
        double n = p->zero >= 3 ? (double)p->shard_numel[st] + (double)p->gather_numel[st] : (double)p->param_numel[st];
        if (2.0 * n <= 4.0 * (double)widest(p, st)) return 0;
    }
    return 1;
}

int param16(const Program *p) { return p->param16; }

/* Op i's first parameter is read in 16 bits in place (not widened). */
int param16_in_place(const Program *p, int i) {
    const ir_op *o = &p->ops[i];
    return param16(p) && backend_of(p)->param16_gemm && o->n_param > 0 && op_row_of(o->kind)->gemm_weight;
}

long param16_scratch_numel(const Program *p, int stage) {
    return param16(p) ? widest(p, stage) : 0;
}
