/* pipe.c: pipeline parallelism at run time: point-to-point messages between
 * neighbouring stages (blocking, in the order the verified schedule fixed),
 * and the tied embedding shared by the first and last stage. */
#include <string.h>

#include "internal.h"

static int count(const wf_ctx *c, long n, const char *call) {
    if (n > 2147483647L) wf_fatal(c, call, WF_WHERE, "%ld floats exceed MPI's int count", n);
    return (int)n;
}

void wf_send(wf_ctx *c, const float *buf, long n, int stage, int tag) {
    WF_MPI(c, MPI_Send(buf, count(c, n, "MPI_Send"), MPI_FLOAT, stage, tag, c->pp_comm));
}

void wf_recv(wf_ctx *c, float *buf, long n, int stage, int tag) {
    WF_MPI(c, MPI_Recv(buf, count(c, n, "MPI_Recv"), MPI_FLOAT, stage, tag, c->pp_comm,
                       MPI_STATUS_IGNORE));
}

void wf_sendrecv(wf_ctx *c, const float *sbuf, long sn, int sstage, int stag,
                 float *rbuf, long rn, int rstage, int rtag) {
    WF_MPI(c, MPI_Sendrecv(sbuf, count(c, sn, "MPI_Sendrecv"), MPI_FLOAT, sstage, stag, rbuf,
                           count(c, rn, "MPI_Sendrecv"), MPI_FLOAT, rstage, rtag, c->pp_comm,
                           MPI_STATUS_IGNORE));
}

float *wf_recv_buffer(wf_ctx *c, int i) { return c->recv + (long)i * c->p->recv_numel; }

void wf_copy(float *dst, const float *src, long n) { memcpy(dst, src, sizeof(float) * (size_t)n); }

void wf_zero(float *dst, long n) { memset(dst, 0, sizeof(float) * (size_t)n); }

/* The token embedding (first stage) and the LM head (last stage) are one
 * tied tensor: sum their gradients so both copies take the same step. */
void wf_tied_grads(wf_ctx *c) {
    if (c->tied_comm == MPI_COMM_NULL) return;
    const wf_program *p = c->p;
    for (int k = 0; k < p->n_params; k++) {
        const wf_param *q = &p->params[k];
        if (!q->tied) continue;
        /* under ZeRO both copies are alone in a bucket, so sharded alike:
         * ZeRO >= 2 sums just this rank's shard */
        long lo = p->zero >= 2 ? c->own_lo[k] : 0, hi = p->zero >= 2 ? c->own_hi[k] : q->numel;
        if (hi <= lo) continue;
        WF_MPI(c, MPI_Allreduce(MPI_IN_PLACE, wf_own_grad(c, k) + lo, count(c, hi - lo, "MPI_Allreduce"),
                                MPI_FLOAT, MPI_SUM, c->tied_comm));
    }
}
