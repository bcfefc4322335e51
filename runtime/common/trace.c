/* trace.c: measured traces.  With --trace FILE every rank records the start
 * and end of each schedule instruction into a buffer sized before the loop;
 * at the end rank 0 gathers them and writes Chrome trace-event JSON with the
 * names `weft inspect` and `weft simulate` use, so `weft trace compare
 * PREDICTED MEASURED` can match them. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

enum { TRACE_CAPACITY = 200000 };  /* events per rank; later ones are dropped */

typedef struct {
    double start, end;  /* seconds since the traced loop began */
    int m, chunk;
    int kind;
    int rank;
} trace_rec;

static trace_rec *recs;
static int n_recs;
static double t_zero;

/* The system's monotonic clock, one clock for every process of a node (Open MPI's
 * MPI_Wtime counts from each process's own start). */
static double clock_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Called by every rank after a barrier.  Ranks leave a barrier at different moments
 * (milliseconds apart when oversubscribed), so the ranks of a node take the earliest
 * of their readings as the one origin, and their events compare across ranks. */
void wf_trace_begin(wf_ctx *c) {
    if (!c->opt.trace) return;
    recs = wf_host_alloc(c, sizeof(trace_rec) * TRACE_CAPACITY, "trace buffer");
    t_zero = clock_s();
    MPI_Comm node;
    WF_MPI(c, MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, c->rank, MPI_INFO_NULL, &node));
    WF_MPI(c, MPI_Allreduce(MPI_IN_PLACE, &t_zero, 1, MPI_DOUBLE, MPI_MIN, node));
    WF_MPI(c, MPI_Comm_free(&node));
}

double wf_trace_now(wf_ctx *c) { return recs && c->opt.trace ? clock_s() : 0.0; }

void wf_trace_event(wf_ctx *c, char kind, int m, int chunk, double start) {
    wf_instr_end();  /* the watchdog's instruction is over */
    if (!recs || n_recs == TRACE_CAPACITY) return;
    trace_rec *r = &recs[n_recs++];
    r->start = start - t_zero;
    r->end = clock_s() - t_zero;
    r->m = c->p->prologue ? wf_2bw_real_micro(c, m) : m;
    r->chunk = chunk;
    r->kind = kind;
    r->rank = c->rank;
}

static void write_event(FILE *f, const trace_rec *r, int first) {
    char name[48];
    const char *cat = "comm";
    int tid = 0;
    switch (r->kind) {
    case 'F': snprintf(name, sizeof name, "F%d", r->m); cat = "forward"; break;
    case 'B': snprintf(name, sizeof name, "B%d", r->m); cat = "backward"; break;
    case 'W': snprintf(name, sizeof name, "W%d", r->m); cat = "weight"; break;
    case 'O': snprintf(name, sizeof name, "optim"); cat = "optimizer"; break;
    default:
        snprintf(name, sizeof name, "send %s m%d", r->kind == 'a' ? "act" : "grad", r->m);
        tid = 1;
    }
    fprintf(f, "%s{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,"
               "\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"m\":%d,\"chunk\":%d}}\n",
            first ? "" : ",", name, cat, r->rank, tid, r->start * 1e6, (r->end - r->start) * 1e6,
            r->kind == 'O' ? -1 : r->m, r->kind == 'O' ? -1 : r->chunk);
}

void wf_trace_write(wf_ctx *c) {
    if (!recs) return;
    int bytes = n_recs * (int)sizeof(trace_rec), *counts = NULL, *displs = NULL, total = 0;
    if (wf_is_root(c)) {
        counts = wf_host_alloc(c, sizeof(int) * (size_t)c->world, "trace counts");
        displs = wf_host_alloc(c, sizeof(int) * (size_t)c->world, "trace offsets");
    }
    WF_MPI(c, MPI_Gather(&bytes, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD));
    if (wf_is_root(c))
        for (int r = 0; r < c->world; r++) {
            displs[r] = total;
            total += counts[r];
        }
    char *all = wf_is_root(c) ? wf_host_alloc(c, (size_t)total, "trace") : NULL;
    WF_MPI(c, MPI_Gatherv(recs, bytes, MPI_BYTE, all, counts, displs, MPI_BYTE, 0, MPI_COMM_WORLD));
    if (wf_is_root(c)) {
        char tmp[1100];
        snprintf(tmp, sizeof tmp, "%s.tmp-%d", c->opt.trace, (int)getpid());
        FILE *f = fopen(tmp, "w");
        if (!f) wf_fatal(c, "fopen", WF_WHERE, "cannot write trace %s: %s", tmp, strerror(errno));
        fprintf(f, "{\"traceEvents\":[\n");
        for (int r = 0; r < c->world; r++)
            fprintf(f, "%s{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,"
                       "\"args\":{\"name\":\"rank %d\"}}\n", r ? "," : "", r, r);
        const trace_rec *ev = (const trace_rec *)all;
        for (int i = 0; i < total / (int)sizeof(trace_rec); i++) write_event(f, &ev[i], 0);
        fprintf(f, "],\"displayTimeUnit\":\"ms\",\"otherData\":{\"name\":\"");
        for (const char *s = c->p->plan; *s; s++)
            if ((unsigned char)*s >= 32) fprintf(f, "%s%c", *s == '"' || *s == '\\' ? "\\" : "", *s);
        fprintf(f, " (measured)\"}}\n");
        if (fclose(f) != 0 || rename(tmp, c->opt.trace) != 0)
            wf_fatal(c, "rename", WF_WHERE, "cannot write trace %s: %s", c->opt.trace, strerror(errno));
        wf_log(c, "trace: %d events written to %s\n", total / (int)sizeof(trace_rec), c->opt.trace);
    }
    free(all);
    free(counts);
    free(displs);
    free(recs);
    recs = NULL;
}
