/* pipe.c: pipeline parallelism at run time: point-to-point messages between
 * neighbouring stages (blocking, in the order the verified schedule fixed;
 * coll.h: with NCCL blocking for the compute stream, not the host),
 * and the tied embedding shared by the first and last stage. */
#include <string.h>

#include "internal.h"

/* the world rank of pipeline stage `stage` in this rank's pipeline (listed
 * once: one process is one rank) */
static int stage_rank(const wf_ctx *c, int stage) {
    static int *members;
    if (!members) {
        members = wf_host_alloc(c, sizeof(int) * (size_t)c->p->pp, "pipeline ranks");
        wf_group_members(c->p, c->rank, WF_GROUP_PP, members, NULL);
    }
    return members[stage];
}

/* The watchdog's name for a message: "recv act m=2 chunk=1 from rank 4". */
static void watch_msg(wf_ctx *c, const char *dir, int tag, const char *prep, int stage) {
    char text[64];
    wf_watch_tag_text(c, tag, text, sizeof text);
    wf_watch_what(c, -1, "%s %s %s rank %d (stage %d)", dir, text, prep, stage_rank(c, stage), stage);
}

void wf_send(wf_ctx *c, const float *buf, long n, int stage, int tag) {
    watch_msg(c, "send", tag, "to", stage);
    c->coll->send(c, buf, n, stage, tag);
    wf_watch_done();
}

void wf_recv(wf_ctx *c, float *buf, long n, int stage, int tag) {
    watch_msg(c, "recv", tag, "from", stage);
    c->coll->recv(c, buf, n, stage, tag);
    wf_watch_done();
}

void wf_sendrecv(wf_ctx *c, const float *sbuf, long sn, int sstage, int stag,
                 float *rbuf, long rn, int rstage, int rtag) {
    char sent[64], got[64];
    wf_watch_tag_text(c, stag, sent, sizeof sent);
    wf_watch_tag_text(c, rtag, got, sizeof got);
    wf_watch_what(c, -1, "send %s to rank %d (stage %d) + recv %s from rank %d (stage %d)", sent,
                  stage_rank(c, sstage), sstage, got, stage_rank(c, rstage), rstage);
    c->coll->sendrecv(c, sbuf, sn, sstage, stag, rbuf, rn, rstage, rtag);
    wf_watch_done();
}

float *wf_recv_buffer(wf_ctx *c, int i) { return c->recv + (long)i * c->p->recv_numel; }

/* Scatter/gather: the boundary tensor is the same on every tp rank of a
 * stage (after the row-parallel all-reduce and the replicated residual), so
 * each sends only its 1/tp; the receivers put the message back together
 * inside their tp group (a node's links rather than the NIC). */
float *wf_pipe_slice(wf_ctx *c, float *buf, long n) { return buf + (long)c->tp_rank * (n / c->p->tp); }

void wf_pipe_gather(wf_ctx *c, float *buf, long n) {
    int tp = c->p->tp;
    static int *counts, *displs;  /* equal slices end to end; one message size a program */
    if (!counts) {
        counts = wf_host_alloc(c, sizeof(int) * (size_t)tp, "scatter/gather counts");
        displs = wf_host_alloc(c, sizeof(int) * (size_t)tp, "scatter/gather displacements");
    }
    for (int r = 0; r < tp; r++) {
        counts[r] = (int)(n / tp);
        displs[r] = r * counts[r];
    }
    wf_watch_what(c, WF_GROUP_TP, "scatter/gather all-gather of a pipeline message (%ld floats)", n);
    c->coll->allgatherv(c, WF_GROUP_TP, NULL, buf, counts, displs, WF_F32, NULL);
    wf_watch_done();
}

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
        if (!q->tied || q->bucket < 0) continue;  /* a frozen one has no gradient */
        /* under ZeRO both copies are alone in a bucket, so sharded alike:
         * ZeRO >= 2 sums just this rank's shard */
        long lo = p->zero >= 2 ? c->own_lo[k] : 0, hi = p->zero >= 2 ? c->own_hi[k] : q->numel;
        if (hi <= lo) continue;
        wf_watch_what(c, WF_GROUP_TIED, "tied-gradient all-reduce of %s", q->name);
        c->coll->allreduce(c, WF_GROUP_TIED, wf_own_grad(c, k) + lo, hi - lo, WF_F32, WF_SUM, NULL);
        wf_watch_done();
    }
}
