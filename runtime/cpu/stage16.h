/* stage16.h: 16-bit activation storage on the CPU (act16; weft/rt.h,
 * "Activation storage").  The CPU kernels compute in floats.  Under act16
 * each kernel entry point stages its call: its activation operands (16-bit
 * values in the arenas) are widened into floats in c->stage16, the same
 * entry point runs on those floats (wf_ctx_act16 says 0 while a call is
 * staged, so nested kernels see floats too), and the outputs and the
 * accumulated input gradients are rounded back into 16-bit storage.  Every
 * value a kernel writes is one the float program rounds to the 16-bit type
 * right after (compiler/act16.c's audit), so staging changes no bit; the
 * state a forward saves (norm statistics, attention's log-sum-exp, the LM
 * head's dlogits on the CPU) stays float and is passed as it is.
 *
 * The compiler sizes c->stage16 (compiler/act16.c, act16_stage_numel): each
 * staged buffer takes align16 of its values, and no call stages more than
 * two buffers (a value and a gradient) per tensor of its op or fused pair.
 * A call that would need more stops the run (a compiler bug). */
#ifndef WEFT_STAGE16_H
#define WEFT_STAGE16_H
#include "weft/rt.h"

enum { WF_STAGE16_MAX = 8 };

typedef struct {
    wf_ctx *c;
    long used;                   /* floats of c->stage16 handed out */
    int n;
    struct {
        float *store;            /* the 16-bit values in the arena */
        float *f;                /* their float staging */
        long n;                  /* values */
        int widened, narrow;
    } buf[WF_STAGE16_MAX];
} wf_stage16;

/* 1 when c stores activations in 16 bits and no call is staged yet: then s
 * is ready and the caller stages its operands, calls its own entry point on
 * the floats, and ends with wf_stage16_end.  0: run on the pointers as given. */
int wf_stage16_begin(wf_ctx *c, wf_stage16 *s);
/* an input: n values widened into floats */
const float *wf_stage16_in(wf_stage16 *s, const float *x, long n);
/* an output the kernel writes whole: floats rounded into x at the end */
float *wf_stage16_out(wf_stage16 *s, float *x, long n);
/* an output the kernel adds into or writes in part: widened, then rounded back */
float *wf_stage16_acc(wf_stage16 *s, float *x, long n);
/* rounds the outputs back into 16-bit storage; calls are unstaged again */
void wf_stage16_end(wf_stage16 *s);

#endif
