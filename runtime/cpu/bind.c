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
 * ranks allow (each core floor or ceil of the run's ranks / cores).  A node
 * of one stage is left to the kernel: all its ranks compute at once, which
 * no binding spreads better, and 3 ranks bound on 2 cores would run at half
 * speed where the kernel's rotation gives each 2/3.  So is a node with tensor
 * parallelism: a tp group syncs every layer, and bound apart, each partner
 * sharing its core with another stage's rank, a partner waited for the
 * other's time slice (bench/bind.sh, two runs of 8 rounds, medians of the
 * per-round ratios bound / unbound: tp 2 x pp 2 1f1b 1.15 and 0.96, 1.09
 * pooled; dp 2 x pp 2 1f1b 0.93 and 0.84, GPipe with one microbatch 0.75
 * and 0.80; dp 4, one stage, 1.03).
 * WEFT_BIND=0 leaves every layout to the kernel, WEFT_BIND=force binds
 * those two kinds too (to measure them); a user's own OMP_NUM_THREADS above
 * 1 is never bound (one core would not hold the threads). */
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

static char bind_note[160];

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

void wf_bind_ranks(const wf_ctx *c, MPI_Comm node, int local, int local_n) {
    bind_note[0] = 0;
    if (local_n < 2) return;
    /* every node-local rank's stage, gathered before any rank decides (each
     * decides alone, so a rank that skipped it would leave the others waiting) */
    int *stage = malloc(sizeof(int) * (size_t)local_n), mine = c->stage;
    if (!stage) wf_fatal(c, "malloc", WF_WHERE, "out of memory");
    WF_MPI((wf_ctx *)c, MPI_Allgather(&mine, 1, MPI_INT, stage, 1, MPI_INT, node));
    int others = 0;
    for (int r = 0; r < local_n; r++) others += stage[r] != stage[0];
    cpu_set_t have;
    int cores = allowed_cpus(&have);
    int slot = wf_bind_slot(stage, local_n, local, cores);
    free(stage);
    const char *env = getenv("WEFT_BIND");
    if (local_n <= cores || cores < 1) return;  /* a core (or more) each: the kernel spreads them */
    if (env && strcmp(env, "0") == 0) {
        snprintf(bind_note, sizeof bind_note, "; %d ranks on %d cores, placed by the kernel (WEFT_BIND=0)",
                 local_n, cores);
        return;
    }
    if (omp_get_max_threads() > 1) {
        snprintf(bind_note, sizeof bind_note, "; %d ranks on %d cores, not bound (%d threads a rank)",
                 local_n, cores, omp_get_max_threads());
        return;
    }
    int force = env && strcmp(env, "force") == 0;  /* bench/bind.sh: what binding would do */
    if (!others && !force) {  /* one stage: all compute at once, and the kernel evens out what binding cannot */
        snprintf(bind_note, sizeof bind_note, "; %d ranks of one stage on %d cores, placed by the kernel",
                 local_n, cores);
        return;
    }
    if (c->p->tp > 1 && !force) {  /* a tp group syncs every layer: bound apart it waited on time slices */
        snprintf(bind_note, sizeof bind_note, "; %d ranks on %d cores, placed by the kernel (tp %d)",
                 local_n, cores, c->p->tp);
        return;
    }
    /* the slot-th CPU of those this process may run on */
    int cpu = -1;
    for (int k = 0, seen = 0; k < CPU_SETSIZE && cpu < 0; k++)
        if (CPU_ISSET(k, &have) && seen++ == slot) cpu = k;
    cpu_set_t one;
    CPU_ZERO(&one);
    if (cpu >= 0) CPU_SET(cpu, &one);
    if (cpu < 0 || sched_setaffinity(0, sizeof one, &one) != 0) {
        snprintf(bind_note, sizeof bind_note, "; %d ranks on %d cores, binding failed: placed by the kernel",
                 local_n, cores);
        return;
    }
    snprintf(bind_note, sizeof bind_note,
             "; %d ranks on %d cores, bound in turn by stage (this rank: CPU %d; WEFT_BIND=0 unbinds)",
             local_n, cores, cpu);
}

const char *wf_bind_note(void) { return bind_note; }
