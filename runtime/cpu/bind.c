/* bind.c: with more ranks on a node than cores, give each rank a core so that
 * the ranks that compute at the same time do not share one.
 *
 * A rank waiting in MPI polls (it yields, but stays runnable), so to the
 * kernel every core looks as loaded as the next and it never moves a
 * computing rank off a core it shares with another computing rank onto a core
 * whose ranks only wait (bench/mpi_placement.sh; compiler/simulate.c's
 * core_share).  The schedule says who computes together: a stage's ranks
 * (its dp x tp group) always, and a run of neighbouring stages (a pipeline's
 * fill, drain and steady state move stage by stage).  Dealing the node's
 * ranks to the cores in turn, in stage order, puts a stage's ranks on
 * different cores, and any run of neighbouring stages as evenly as their
 * ranks allow (each core floor or ceil of the run's ranks / cores).  Whether
 * to is the plan's cluster.bind, decided by weft/bind.h's rule (the one
 * simulate prices): "auto" leaves a node of one stage to the kernel (all its
 * ranks compute at once, which no binding spreads better, and 3 ranks bound
 * on 2 cores would run at half speed where the kernel's rotation gives each
 * 2/3), and so a node with tensor parallelism: a tp group syncs every layer,
 * and bound apart, each partner sharing its core with another stage's rank,
 * a partner waited for the other's time slice (bench/bind.sh, two runs of 8
 * rounds, medians of the per-round ratios bound / unbound: tp 2 x pp 2 1f1b
 * 1.15 and 0.96, 1.09 pooled; dp 2 x pp 2 1f1b 0.93 and 0.84, GPipe with one
 * microbatch 0.75 and 0.80; dp 4, one stage, 1.03).  WEFT_BIND in the
 * environment overrides the plan (0 or off, auto, stages, all or force) and
 * the log says so; simulate does not price the override.  A user's own
 * OMP_NUM_THREADS above 1 is never bound (one core would not hold the
 * threads). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <omp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "weft/bind.h"

static char bind_note[256];

/* the CPUs this process may run on, into have: how many (0 if unknown) */
static int allowed_cpus(cpu_set_t *have) {
    return sched_getaffinity(0, sizeof *have, have) == 0 ? CPU_COUNT(have) : 0;
}

int wf_bind_cpus(void) {
    cpu_set_t have;
    int n = allowed_cpus(&have);
    if (n > 0) return n;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    return online > 0 ? (int)online : 1;
}

int wf_bind_slot(const int *stage, int n, int me, int cores) {
    if (cores < 1 || me < 0 || me >= n) return -1;
    /* me's place in the node's ranks ordered by (stage, node-local rank) */
    int before = 0;
    for (int r = 0; r < n; r++)
        before += stage[r] < stage[me] || (stage[r] == stage[me] && r < me);
    return before % cores;
}

/* The binding the plan asked for (cluster.bind), or WEFT_BIND's when set:
 * 0 or off, auto, stages, all or force (all); *env_note the override for the
 * log, else "".  An unknown value is ignored, and said so. */
static int bind_mode(const wf_ctx *c, char *env_note, size_t n) {
    const char *env = getenv("WEFT_BIND");
    int plan = c->p->bind, mode = plan;
    env_note[0] = 0;
    if (!env || !*env) return plan;
    mode = !strcmp(env, "0") ? WF_BIND_OFF : !strcmp(env, "force") ? WF_BIND_ALL : wf_bind_mode(env);
    if (mode < 0) {
        snprintf(env_note, n, "; WEFT_BIND=%.16s ignored (0, off, auto, stages, all or force)", env);
        return plan;
    }
    snprintf(env_note, n, "; WEFT_BIND=%.16s overrides the plan's cluster.bind = %s", env, wf_bind_name(plan));
    return mode;
}

void wf_bind_ranks(const wf_ctx *c, MPI_Comm node, int local, int local_n) {
    bind_note[0] = 0;
    if (local_n < 2) return;
    /* every node-local rank's stage, gathered before any rank decides (each
     * decides alone, so a rank that skipped it would leave the others waiting) */
    int *stage = malloc(sizeof(int) * (size_t)local_n), mine = c->stage;
    if (!stage) wf_fatal(c, "malloc", WF_WHERE, "out of memory");
    WF_MPI((wf_ctx *)c, MPI_Allgather(&mine, 1, MPI_INT, stage, 1, MPI_INT, node));
    int stages = 0;  /* distinct stages on the node */
    for (int r = 0; r < local_n; r++) {
        int seen = 0;
        for (int q = 0; q < r && !seen; q++) seen = stage[q] == stage[r];
        stages += !seen;
    }
    cpu_set_t have;
    int cores = allowed_cpus(&have);
    int slot = wf_bind_slot(stage, local_n, local, cores);
    free(stage);
    char over[128];
    int mode = bind_mode(c, over, sizeof over);
    wf_bind_why why = wf_bind_decide(mode, local_n, cores, stages, c->p->tp, omp_get_max_threads());
    const char *name = wf_bind_name(mode);
    switch (why) {
    case WF_BIND_SPREAD: return;  /* a core (or more) each: the kernel spreads them */
    case WF_BIND_NOT_ASKED:
        snprintf(bind_note, sizeof bind_note, "; %d ranks on %d cores, placed by the kernel (cluster.bind = %s)%s",
                 local_n, cores, name, over);
        return;
    case WF_BIND_THREADS:
        snprintf(bind_note, sizeof bind_note, "; %d ranks on %d cores, not bound (%d threads a rank)%s", local_n,
                 cores, omp_get_max_threads(), over);
        return;
    case WF_BIND_ONE_STAGE:
        snprintf(bind_note, sizeof bind_note,
                 "; %d ranks of one stage on %d cores, placed by the kernel (cluster.bind = %s)%s", local_n, cores,
                 name, over);
        return;
    case WF_BIND_TP:
        snprintf(bind_note, sizeof bind_note, "; %d ranks on %d cores, placed by the kernel (tp %d, cluster.bind = %s)%s",
                 local_n, cores, c->p->tp, name, over);
        return;
    case WF_BIND_BOUND: break;
    }
    /* the slot-th CPU of those this process may run on */
    int cpu = -1;
    for (int k = 0, seen = 0; k < CPU_SETSIZE && cpu < 0; k++)
        if (CPU_ISSET(k, &have) && seen++ == slot) cpu = k;
    cpu_set_t one;
    CPU_ZERO(&one);
    if (cpu >= 0) CPU_SET(cpu, &one);
    if (cpu < 0 || sched_setaffinity(0, sizeof one, &one) != 0) {
        snprintf(bind_note, sizeof bind_note, "; %d ranks on %d cores, binding failed: placed by the kernel%s",
                 local_n, cores, over);
        return;
    }
    snprintf(bind_note, sizeof bind_note,
             "; %d ranks on %d cores, bound in turn by stage (cluster.bind = %s; this rank: CPU %d)%s", local_n,
             cores, name, cpu, over);
}

const char *wf_bind_note(void) { return bind_note; }
