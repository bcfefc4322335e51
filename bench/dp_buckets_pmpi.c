/* dp_buckets_pmpi.c: a PMPI wrapper (LD_PRELOAD) for bench/dp_buckets.sh.
 * It times what a data-parallel gradient bucket costs a rank of the CPU
 * runtime in MPI calls: the thread's CPU seconds inside MPI_Iallreduce and
 * inside MPI_Test on a live request (runtime/common/step.c's wf_progress
 * tests every bucket's request; a test of MPI_REQUEST_NULL is free), and the
 * wall seconds of each step's final MPI_Wait calls (the reduction left
 * exposed after backward).  At MPI_Finalize each rank prints one line. */
#define _POSIX_C_SOURCE 199309L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(clockid_t id) {
    struct timespec t;
    clock_gettime(id, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

enum { MAX_STEPS = 4096 };
static double issue_cpu, test_cpu, wait_now, waits[MAX_STEPS];
static long issues, tests;
static int steps, waiting;

int MPI_Iallreduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op o, MPI_Comm c, MPI_Request *q) {
    if (waiting) {  /* the first start after a step's waits: that step is over */
        if (steps < MAX_STEPS) waits[steps++] = wait_now;
        wait_now = 0, waiting = 0;
    }
    double c0 = now(CLOCK_THREAD_CPUTIME_ID);
    int rc = PMPI_Iallreduce(s, r, n, t, o, c, q);
    issue_cpu += now(CLOCK_THREAD_CPUTIME_ID) - c0;
    issues++;
    return rc;
}

int MPI_Test(MPI_Request *q, int *flag, MPI_Status *st) {
    if (*q == MPI_REQUEST_NULL) return PMPI_Test(q, flag, st);
    double c0 = now(CLOCK_THREAD_CPUTIME_ID);
    int rc = PMPI_Test(q, flag, st);
    test_cpu += now(CLOCK_THREAD_CPUTIME_ID) - c0;
    tests++;
    return rc;
}

int MPI_Wait(MPI_Request *q, MPI_Status *st) {
    double w0 = now(CLOCK_MONOTONIC);
    int rc = PMPI_Wait(q, st);
    wait_now += now(CLOCK_MONOTONIC) - w0;
    waiting = 1;
    return rc;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int MPI_Finalize(void) {
    int rank;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (waiting && steps < MAX_STEPS) waits[steps++] = wait_now;
    int skip = steps > 2 ? 2 : 0;  /* warm-up */
    qsort(waits + skip, (size_t)(steps - skip), sizeof *waits, cmp);
    double least = steps > skip ? waits[skip] : 0;
    printf("pmpi rank %d steps %d issues %ld cpu_ms %.3f live_tests %ld cpu_ms %.3f least_wait_ms %.3f\n", rank, steps,
           issues, issue_cpu * 1e3, tests, test_cpu * 1e3, least * 1e3);
    fflush(stdout);
    return PMPI_Finalize();
}
