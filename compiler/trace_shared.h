/* trace_shared.h: a schedule's timed trace when its ranks share fewer cores
 * than there are ranks (the CPU backend, oversubscribed).
 *
 * trace_from_costs (trace.h) gives each rank a core of its own.  Here the
 * ranks of a node share `cores`: at any moment the ranks that compute and
 * the ranks that wait (for a message, or at the end of their list) ask for
 * CPU, a waiting rank `wait_share` of what a computing one asks (Open MPI
 * polls in its blocking calls, yielding between polls); when the demand
 * exceeds the cores, each computing rank runs at cores / demand of its
 * speed, else at full speed.  A pipeline stage stands for its ranks on the
 * node (`ranks`, which may be a fraction when the node holds part of a
 * stage), all of them doing the same work at the same time.  Messages are
 * not slowed (a send's comm_us as in trace.h).
 *
 * Properties (tests/unit/test_trace_shared.c): with cores at least the
 * ranks the trace is trace_from_costs's; with wait_share 1 every op is
 * slowed by ranks / cores exactly, so with no communication the makespan is
 * ranks / cores times trace_from_costs's; in between it lies between the
 * two, placed or not (each op is slowed by 1 to ranks / cores, and a
 * schedule's times are max-plus sums of its ops', which grow with them). */
#ifndef WEFT_TRACE_SHARED_H
#define WEFT_TRACE_SHARED_H

#include "schedule.h"
#include "trace.h"

typedef struct {
    double cores;       /* cores of the node (> 0) */
    const double *ranks;/* per stage: its ranks on the node (> 0); NULL: 1 each */
    double wait_share;  /* a waiting rank's CPU demand over a computing rank's, 0..1 */
    int placed;         /* 1: ranks stay on the cores they run on, computing or
                         * waiting (see below); 0: computing ranks spread over
                         * the cores as they please */
    int bound;          /* 1: each rank bound to a core, the node's ranks dealt
                         * to the cores in turn in stage order (the CPU
                         * runtime's runtime/cpu/bind.c; see below): overrides
                         * placed when every stage's ranks are whole */
} trace_share;

/* With `placed`, the node's ranks (the sum of `ranks`, rounded) sit evenly
 * on the cores, some core one more when they do not divide, and those that
 * compute at a moment are any of them alike: the ranks on the busiest core
 * set the pace (a stage's ranks keep in step through their messages and
 * collectives), so a computing rank runs at 1 / E[the most computing ranks
 * on one core] of its speed (trace_placed_slowdown), never below the
 * speed every rank computing would leave it (cores / ranks), nor above the
 * demand rule's.  (Counted exactly up to 256 ranks on a node; more are
 * taken as spread.) */
double trace_placed_slowdown(int computing, int ranks, int cores);

/* With `bound`, the ranks (a whole number per stage) sit where bind.c puts
 * them: the node's ranks in stage order, rank i of them on core i mod
 * cores.  A core's demand is its computing ranks plus its waiting ones at
 * wait_share; a stage computes at 1 / the largest demand (at least 1) on
 * the cores of its ranks (they keep in step).  One stage computing alone,
 * `computing` ranks of `ranks`, nothing waiting: ceil(computing / cores)
 * on the busiest core, the slowdown returned here (1 with a core a rank). */
double trace_bound_slowdown(int computing, int ranks, int cores);

/* trace_from_costs with the ranks sharing the cores as above: appends the
 * events, at the times the shared cores give them.  0, or -1 when the
 * schedule does not verify or memory runs out. */
int trace_from_costs_shared(trace *t, const schedule *s, const trace_costs *costs, const trace_share *share);

#endif
