/* cuda_ctx.c: which CUDA backend state (cuda_rt.h's wf_cuda_ctx) a call acts
 * on.  A rank's context has its own, given by wf_cuda_attach; everything else
 * (c NULL, the kernel tests' contexts) shares the process's.  The first rank
 * context adopts the process's state rather than getting a fresh one, so a
 * program's calls without a context (wf_copy, wf_zero, the GEMM summary) act
 * on that rank's stream and buffers, as when the state was file statics. */
#include "cuda_rt.h"
#include "internal.h"

static wf_cuda_ctx process_state;
static const wf_ctx *process_owner;  /* the context that adopted it */

wf_cuda_ctx *wf_cuda_of(const wf_ctx *c) { return c && c->cuda ? c->cuda : &process_state; }

void wf_cuda_attach(wf_ctx *c) {
    if (c->cuda) return;
    if (!process_owner) {
        process_owner = c;
        c->cuda = &process_state;
        return;
    }
    c->cuda = wf_cuda_zalloc(c, sizeof *c->cuda, "cuda_ctx.c's state");
}

const wf_ctx *wf_cuda_rank_ctx(void) { return process_owner; }
