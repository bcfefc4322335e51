/* backend_host.c: the backend hooks (internal.h) of a runtime whose arenas
 * are plain host memory and whose kernels run on the calling thread: the CPU
 * backend (backend.c has its setup and sync) and the fake-NCCL test runtime
 * (tests/nccl_fake/backend_fake.c), which share these. */
#include <stdint.h>
#include <string.h>

#include "convert16.h"
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

/* dp_comm.c's and grad16.c's conversions (internal.h): convert16.c's loops */
void wf_backend_to16(wf_ctx *c, void *dst, const float *src, long n) {
    wf_narrow16(wf_ctx_precision(c), dst, src, n);
}

void wf_backend_from16(wf_ctx *c, float *dst, const void *src, long n) {
    wf_widen16(wf_ctx_precision(c), dst, src, n);
}

void wf_backend_from16_in_place(wf_ctx *c, float *x, long n) { wf_widen16_in_place(wf_ctx_precision(c), x, n); }

void wf_backend_add16(wf_ctx *c, float *dst, const void *src, long n) {
    const uint16_t *h = src;
    int prec = wf_ctx_precision(c);
    for (long i = 0; i < n; i++) dst[i] += wf_hd_16_value(prec, h[i]);
}

void wf_backend_add_into16(wf_ctx *c, void *dst, const float *src, long n) {
    wf_add_into16(wf_ctx_precision(c), dst, src, n);
}
