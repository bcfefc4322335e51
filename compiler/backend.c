/* backend.c: the backend table (backend.h). */
#include <string.h>

#include "program.h"

static const wf_backend BACKENDS[] = {
    /* C for CPUs: float kernels (on 16-bit activations staged as floats,
     * act16.c, 16-bit parameters and weight gradients widened per op,
     * param16.c and grad16.c), attention
     * keeps a log-sum-exp per query row (runtime/cpu/attention.c), and the
     * host is the device */
    { .name = "cpu", .suffix = "c", .act16 = 1, .act16_staged = 1, .attention_lse = 1, .param16 = 1,
      .grad16 = 1 },
    /* CUDA C++ for NVIDIA GPUs (runtime/cuda): 16-bit parameters read in
     * place by the GEMMs, the others widened per op (param16.c); 16-bit
     * weight gradients widened per op on the device (runtime/cuda/grad16.cu) */
    { .name = "cuda", .suffix = "cu", .cuda_cxx = 1, .act16 = 1, .attention_lse = 1, .param16 = 1,
      .param16_gemm = 1, .grad16 = 1, .runtime_buffers = 1, .separate_memory = 1, .check = cuda_backend_check },
};
enum { N_BACKENDS = sizeof BACKENDS / sizeof *BACKENDS };

const wf_backend *backend_find(const char *name) {
    for (int i = 0; i < N_BACKENDS; i++)
        if (strcmp(name, BACKENDS[i].name) == 0) return &BACKENDS[i];
    return NULL;
}

const wf_backend *backend_of(const Program *p) {
    const wf_backend *b = p->backend[0] ? backend_find(p->backend) : NULL;
    return b ? b : &BACKENDS[0];
}

const char *backend_names(void) {
    static char names[128];
    if (!names[0])
        for (int i = 0; i < N_BACKENDS; i++) {
            if (i) strncat(names, ", ", sizeof names - strlen(names) - 1);
            strncat(names, BACKENDS[i].name, sizeof names - strlen(names) - 1);
        }
    return names;
}
