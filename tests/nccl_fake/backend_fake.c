/* backend_fake.c (test double): the CPU backend's setup and sync hooks
 * (runtime/cpu/backend.c; the others are runtime/cpu/backend_host.c's), but
 * every collective of a multi-rank run goes through runtime/cuda/coll_nccl.c
 * (over fake_nccl.c), whatever the program's comm. */
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
