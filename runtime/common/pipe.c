/* pipe.c: pipeline parallelism at run time: point-to-point messages between
 * neighbouring stages (blocking, in the order the verified schedule fixed;
 * coll.h: with NCCL blocking for the compute stream, not the host),
 * and the tied embedding shared by the first and last stage. */
#include <string.h>

#include "internal.h"

void wf_send(wf_ctx *c, const float *buf, long n, int stage, int tag) { c->coll->send(c, buf, n, stage, tag); }

void wf_recv(wf_ctx *c, float *buf, long n, int stage, int tag) { c->coll->recv(c, buf, n, stage, tag); }

void wf_sendrecv(wf_ctx *c, const float *sbuf, long sn, int sstage, int stag,
                 float *rbuf, long rn, int rstage, int rtag) {
    c->coll->sendrecv(c, sbuf, sn, sstage, stag, rbuf, rn, rstage, rtag);
}

float *wf_recv_buffer(wf_ctx *c, int i) { return c->recv + (long)i * c->p->recv_numel; }

/* rt.h gives these no context: the backend's stream is the process's one */
void wf_copy(float *dst, const float *src, long n) { wf_backend_copy(NULL, dst, src, sizeof(float) * (size_t)n); }

void wf_zero(float *dst, long n) { wf_backend_zero(NULL, dst, sizeof(float) * (size_t)n); }

/* The token embedding (first stage) and the LM head (last stage) are one
 * tied tensor: sum their gradients so both copies take the same step. */
void wf_tied_grads(wf_ctx *c) {
    if (c->group_comm[WF_GROUP_TIED] == MPI_COMM_NULL) return;
    const wf_program *p = c->p;
    for (int k = 0; k < p->n_params; k++) {
        const wf_param *q = &p->params[k];
        if (!q->tied) continue;
        /* under ZeRO both copies are alone in a bucket, so sharded alike:
         * ZeRO >= 2 sums just this rank's shard */
        long lo = p->zero >= 2 ? c->own_lo[k] : 0, hi = p->zero >= 2 ? c->own_hi[k] : q->numel;
        if (hi <= lo) continue;
        c->coll->allreduce(c, WF_GROUP_TIED, wf_own_grad(c, k) + lo, hi - lo, WF_F32, WF_SUM, NULL);
    }
}
