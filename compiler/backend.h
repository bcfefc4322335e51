/* backend.h: what the compiler knows about each code generator (--backend),
 * in one row per backend.  Passes ask the row for a property instead of
 * comparing names, so a new backend is a new row.  Both rows share one
 * emitter (emit.c), which reads the row for what differs. */
#ifndef WEFT_BACKEND_H
#define WEFT_BACKEND_H

struct Program;

typedef struct wf_backend {
    const char *name;         /* as --backend spells it */
    const char *suffix;       /* stage program files: stageN.<suffix> */
    int cuda_cxx;             /* the program text is CUDA C++ (make_program, a CUDA
                                 build file, NCCL settings in launch.sh) */
    int act16;                /* may store activations in 16 bits under bf16 / fp16 (act16.c) */
    int act16_staged;         /* ... with float kernels on staged operands (runtime/cpu/stage16.h):
                                 no 16-bit weight copies, the LM head's dlogits stay float */
    int param16;              /* may store the working parameters in 16 bits (param16.c) */
    int param16_gemm;         /* ... and its GEMMs read a weight's 16-bit values in place
                                 (not widened; no 16-bit copies, act16.c) */
    int grad16;               /* may store the weight gradients in 16 bits (grad16.c) */
    int attention_lse;        /* attention saves only a log-sum-exp per query row and
                                 head (flash style), not the (T, T) probabilities */
    int runtime_buffers;      /* the runtime allocates buffers of its own at the first
                                 step (weft/runtime_buffers.h), counted by memory.c */
    int separate_memory;      /* the device has memory of its own: host-offloaded
                                 tensors cross a bus (PCIe) each step */
    /* refuses, by field, what this backend's runtime lacks; NULL: takes any plan */
    int (*check)(const struct Program *p);
} wf_backend;

/* The row named `name`, or NULL. */
const wf_backend *backend_find(const char *name);
/* The plan's backend (Program.backend; empty is the CPU's). */
const wf_backend *backend_of(const struct Program *p);
/* "cpu, cuda": the valid names, for messages. */
const char *backend_names(void);

#endif
