/* backend.c: the CPU backend's hooks around the common code (internal.h).
 * Kernels run on the calling thread, so the host never waits for a device,
 * and the collectives are host MPI whatever plan.comm says (it chooses for
 * --backend cuda only). */
#include <string.h>

#include "internal.h"

void wf_backend_setup(wf_ctx *c) { c->coll = &wf_coll_mpi; }

void wf_backend_sync(wf_ctx *c) { (void)c; }

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
