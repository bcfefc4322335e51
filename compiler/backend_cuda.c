/* backend_cuda.c: what `--backend cuda` can compile today.  The CUDA runtime
 * (runtime/cuda) implements the kernels of the GPT-2 and LLaMA families
 * (llama.cu; grouped-query attention on the flash kernels of attention.cu and
 * attention_tc.cu)
 * and the tensor-parallel ops, in fp32, bf16 and fp16 (16-bit storage rounded
 * on the device, fp32 master weights); anything else is refused here, by
 * name, rather than failing later when the generated program links.  Which
 * ops runtime/cuda has kernels (or host collectives) for is each op's row
 * (ops.h, backends); a VLM's vision ops in both forms (all rows, and a tp
 * rank's own under sequence parallelism: runtime/cuda/vision.cu). */
#include <string.h>

#include "ops.h"

int cuda_backend_check(const Program *p) {
    if (strcmp(p->family, "gpt2") != 0 && strcmp(p->family, "llama") != 0) {
        wf_error("%s: plan.model: the %s family is not available with --backend cuda yet "
                 "(valid: weft.gpt2, weft.llama; or compile with --backend cpu)", p->plan_path, p->family);
        return -1;
    }
    /* runtime/cuda/attention.cu keeps a row's head in registers (at most 16
     * floats a thread, 16 threads a row) and tiles of keys in shared memory:
     * head sizes up to 256 */
    if (p->heads > 0 && p->hidden / p->heads > 256) {
        wf_error("%s: plan.model.heads: head size %d (hidden %d / %d heads) is over 256, the "
                 "largest the CUDA attention takes (valid: heads >= hidden / 256; or compile with "
                 "--backend cpu)", p->plan_path, p->hidden / p->heads, p->hidden, p->heads);
        return -1;
    }
    for (int i = 0; i < p->n_ops; i++) {
        if (!op_has_backend(p->ops[i].kind, BACKEND_CUDA)) {
            wf_error("%s: plan.model: op %d (%s) has no CUDA kernel yet (compile with --backend cpu)",
                     p->plan_path, i, op_name(p->ops[i].kind));
            return -1;
        }
    }
    return 0;
}
