/* backend_host.c: the backend hooks (internal.h) of a runtime whose arenas
 * are plain host memory and whose kernels run on the calling thread: the CPU
 * backend (backend.c has its setup and sync) and the fake-NCCL test runtime
 * (tests/nccl_fake/backend_fake.c), which share these. */
#include <stdint.h>
#include <string.h>

#include "internal.h"
#include "precision_bits.h"

void wf_backend_copy(wf_ctx *c, void *dst, const void *src, size_t bytes) {
    (void)c;
    memcpy(dst, src, bytes);
}

void wf_backend_zero(wf_ctx *c, void *dst, size_t bytes) {
    (void)c;
    memset(dst, 0, bytes);
}

void wf_backend_host_write(wf_ctx *c) { (void)c; }

double wf_backend_loss_take(wf_ctx *c) {
    (void)c;
    return 0.0;  /* wf_add_loss has every loss already */
}

/* No graphs here: --no-graph is accepted and changes nothing. */
void wf_backend_run_step(wf_ctx *c) { c->p->step(c); }

/* dp_comm.c's conversions (internal.h): on the calling thread */
void wf_backend_to16(wf_ctx *c, void *dst, const float *src, long n) {
    uint16_t *d = dst;
    int bf = wf_ctx_precision(c) == WF_BF16;
    for (long i = 0; i < n; i++) d[i] = bf ? wf_hd_bf16_bits(src[i]) : wf_hd_fp16_bits(src[i]);
}

void wf_backend_from16(wf_ctx *c, float *dst, const void *src, long n) {
    const uint16_t *h = src;
    int bf = wf_ctx_precision(c) == WF_BF16;
    for (long i = 0; i < n; i++) dst[i] = bf ? wf_hd_bf16_value(h[i]) : wf_hd_fp16_value(h[i]);
}
