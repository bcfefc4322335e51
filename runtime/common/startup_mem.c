/* startup_mem.c: the host memory start-up takes for the parameters' values,
 * counted.  Every host buffer of tensor data that initialisation or a
 * checkpoint's load makes comes from wf_startup_alloc, so that its peak can
 * be compared with the bound `weft check` states (startup_peak.h), as
 * ckpt.c does for saves.  Start-up is one thread: plain counters. */
#include <stdlib.h>

#include "internal.h"
#include "startup_peak.h"

static size_t startup_now, startup_peak;

void *wf_startup_alloc(const wf_ctx *c, size_t bytes, const char *what) {
    size_t *h = wf_host_alloc(c, bytes + 16, what);  /* 16: the size, and floats stay aligned */
    h[0] = bytes;
    startup_now += bytes;
    if (startup_now > startup_peak) startup_peak = startup_now;
    return (char *)h + 16;
}

void wf_startup_free(void *q) {
    if (!q) return;
    size_t *h = (size_t *)(void *)((char *)q - 16);
    startup_now -= h[0];
    free(h);
}

/* The largest whole tensor, own range (this rank's: wf_own_most, at least
 * 1) and transposed tensor of this rank's stage, as startup_peak.h takes
 * them. */
static void largest(const wf_ctx *c, double *whole_max, double *own_max, double *transposed_max) {
    const wf_program *p = c->p;
    double whole = 1, own = 1, transposed = 0;
    for (int k = 0; k < p->n_params; k++) {
        const wf_param *q = &p->params[k];
        double w = (double)wf_whole_numel(q);
        int frozen = q->bucket < 0;
        double o = wf_startup_own((double)q->offset, (double)q->numel, frozen, p->zero,
                                  frozen ? 0 : (double)p->buckets[q->bucket].offset,
                                  frozen ? 0 : (double)p->buckets[q->bucket].numel, p->dp, c->dp_rank);
        if (w > whole) whole = w;
        if (o > own) own = o;
        if (q->transposed && w > transposed) transposed = w;
    }
    *whole_max = whole;
    *own_max = own;
    *transposed_max = transposed;
}

long wf_startup_piece_floats(const wf_ctx *c) {
    double whole, own, transposed;
    largest(c, &whole, &own, &transposed);
    return (long)wf_startup_piece(own, whole);
}

/* What startup_peak.h allows this rank, from the program alone (the same
 * inputs compiler/report_startup.c gives it). */
double wf_startup_bound(const wf_ctx *c) {
    const wf_program *p = c->p;
    double whole, own, transposed;
    largest(c, &whole, &own, &transposed);
    int resume = c->opt.resume != NULL;
    int idle = p->param16 && p->zero < 3 ? wf_params16_idle(c) : WF_IDLE_NONE;
    double held = wf_startup_held(p->zero >= 3, p->param16, p->weight_delay && resume, idle, (double)p->param_numel);
    return wf_startup_peak(p->zero >= 3, resume, whole, own, transposed, held);
}

/* Every rank's start-up peak beside its bound, logged by root (peak_report.c). */
void wf_startup_report(wf_ctx *c) { wf_report_peaks(c, "start-up", (double)startup_peak, wf_startup_bound(c)); }
