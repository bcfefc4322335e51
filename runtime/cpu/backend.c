/* backend.c: the CPU backend's setup and sync hooks (internal.h; the others
 * are backend_host.c's).  Kernels run on the calling thread, so the host
 * never waits for a device, and the collectives are host MPI whatever
 * plan.comm says (it chooses for --backend cuda only). */
#include "internal.h"

void wf_backend_setup(wf_ctx *c) { c->coll = &wf_coll_mpi; }

void wf_backend_sync(wf_ctx *c) { (void)c; }
