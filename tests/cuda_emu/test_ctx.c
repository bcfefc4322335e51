/* test_ctx.c: the CUDA backend's state is its execution context's
 * (runtime/cuda/cuda_ctx.c, cuda_rt.h's wf_cuda_ctx), on the emulated
 * runtime (weftrt_cuda_emu_full, device.c and cuda_ctx.c unchanged): two
 * rank contexts of one process get their own compute stream and their own
 * allocation counts; calls without a context act on the first one's state,
 * as a program's wf_copy does, and so do contexts no rank set up. */
#include <string.h>

#include "check.h"
#include "cuda_rt.h"
#include "internal.h"

int main(void) {
    static wf_ctx a, b, unset;  /* zeroed, as train.c's */
    size_t dev0 = 0, pin0 = 0, dev = 0, pin = 0;
    check(wf_cuda_of(&a) == wf_cuda_of(NULL), "before any attach every context has the process's state");
    wf_cuda_attach(&a);
    wf_cuda_attach(&b);
    check(a.cuda && a.cuda == wf_cuda_of(NULL), "the first rank context adopts the process's state");
    check(b.cuda && b.cuda != a.cuda, "a second rank context gets its own state");
    check(wf_cuda_of(&unset) == a.cuda, "a context no rank set up shares the process's (the first's)");

    cudaStream_t sa = wf_cuda_stream(&a), sb = wf_cuda_stream(&b);
    check(sa && sb && sa != sb, "each context has its own compute stream");
    check(wf_cuda_stream(NULL) == sa && wf_cuda_stream(&a) == sa, "NULL calls run on the first's stream");

    wf_backend_alloc_live(&b, &dev0, &pin0);
    void *p = NULL;
    check(wf_cuda_malloc(&a, &p, 4096) == cudaSuccess && p, "wf_cuda_malloc for the first context");
    wf_backend_alloc_live(&a, &dev, &pin);
    check(dev == 4096 && pin == 0, "the first context counts its 4096 bytes (%zu)", dev);
    wf_backend_alloc_live(&b, &dev, &pin);
    check(dev == dev0 && pin == pin0, "the second context's counts are untouched (%zu)", dev);
    check(wf_cuda_free(&b, p) == cudaErrorInvalidValue, "the second context cannot free the first's block");
    check(wf_cuda_free(&a, p) == cudaSuccess, "the first context frees its block");
    wf_backend_alloc_live(&a, &dev, &pin);
    check(dev == 0, "and its count is back to 0 (%zu)", dev);

    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
