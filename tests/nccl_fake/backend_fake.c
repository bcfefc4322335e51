/* backend_fake.c (test double): the CPU backend's hooks (runtime/cpu/
 * backend.c), but every collective of a multi-rank run goes through
 * runtime/cuda/coll_nccl.c (over fake_nccl.c), whatever the program's comm. */
#include <string.h>

#include "internal.h"

extern const wf_coll_ops wf_coll_nccl;  /* runtime/cuda/coll_nccl.c */
void wf_nccl_setup(wf_ctx *c);

void wf_backend_setup(wf_ctx *c) {
    c->coll = &wf_coll_mpi;
    if (c->world > 1) {
        wf_nccl_setup(c);
        c->coll = &wf_coll_nccl;
    }
}

void wf_backend_sync(wf_ctx *c) {
    if (c->coll) c->coll->join(c);
}

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
    return 0.0;
}

void wf_backend_run_step(wf_ctx *c) { c->p->step(c); }
