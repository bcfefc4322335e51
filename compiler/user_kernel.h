/* user_kernel.h: user kernels, C functions a plan declares with weft.kernel
 * and applies with g:apply (README.md, "User kernels").
 *
 * The contract of each kind (the functions' signatures, checked by
 * user_kernel_check.c with libclang):
 *   elementwise   float fwd(float x);  float bwd(float x, float dy)
 *                 y = fwd(x) per value; bwd returns dx = dy * fwd'(x)
 *   elementwise2  float fwd(float x, float y);
 *                 void bwd(float x, float y, float dout, float *dx, float *dy)
 *                 out = fwd(x, y) per pair of values; bwd writes both
 *                 input gradients (*dx, *dy; the wrapper accumulates them)
 *   rowwise       one row of n values (norms, gates); with params = true a
 *                 parameter vector w of n values (the op's weight):
 *                 void fwd(int n, const float *x, const float *w, float *y);
 *                 void bwd(int n, const float *x, const float *w, const float *dy,
 *                          float *dx, float *dw)
 *                 and without params the same less w and dw.  bwd ADDS its
 *                 gradients into dx and dw (the running sums the wrapper
 *                 passes).  Pointers are indexed only by a loop variable
 *                 counted from 0 while below n (syntactic check).
 * The elementwise kinds run per value: under tensor and sequence parallelism
 * they keep their inputs' sharding, like the built-in activations.  A rowwise
 * kernel needs the whole row: it applies where the hidden dimension is whole
 * (like the built-in norms; with sp each rank has its tokens) and is refused
 * where the row is split. */
#ifndef WEFT_USER_KERNEL_H
#define WEFT_USER_KERNEL_H

#include <limits.h>

#include "emit.h"
#include "program.h"

enum { UK_ELEMENTWISE, UK_ELEMENTWISE2, UK_ROWWISE };

typedef struct user_kernel {
    char path[PATH_MAX];     /* the file as opened: the plan's folder / source */
    char source[512];        /* as the plan wrote it (messages) */
    char fwd[72], bwd[72];   /* function names */
    int kind;                /* UK_* */
    int params;              /* UK_ROWWISE: a parameter vector w (params = true) */
    int line;                /* plan line of weft.kernel */
    /* set by the check (user_kernel_check.c) */
    char *text;              /* the file's function definitions, in source order,
                                each as "static inline" C (NULL until checked) */
    char **funcs; int n_funcs;  /* names of those functions */
    double flops_fwd, flops_bwd;   /* per value, counted from the AST */
} user_kernel;

/* "elementwise", "elementwise2", "rowwise"; -1 for an unknown name */
int user_kernel_kind(const char *name);
const char *user_kernel_kind_name(int kind);
/* The index of the kernel (path, fwd, bwd) in p->kernels, added if new; -1
 * after reporting (out of memory). */
int user_kernel_add(Program *p, const char *path, const char *source, const char *kind,
                    const char *fwd, const char *bwd, int params, int line);
/* libclang's checks of every kernel (user_kernel_check.c); 0, or -1 after
 * reporting the first problem with its file:line:col and the rule. */
int user_kernel_check_all(Program *p);
/* The gradient proof (gradcheck.c): 0, or -1 after reporting. */
int user_kernel_gradcheck(const Program *p);
void user_kernel_free(Program *p);
/* The stage program's copy of every kernel file's functions (ops_kernel.c),
 * static inline (and __host__ __device__ under CUDA); nothing without kernels. */
void emit_user_kernels(writer *o, const Program *p, int cuda);
/* Bytes a value of the kernel's op reads and writes, forward / backward (fp32). */
double user_kernel_bytes(const user_kernel *k, int backward);

#endif
