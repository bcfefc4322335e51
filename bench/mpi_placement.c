/* mpi_placement.c: with more ranks than cores, does the kernel spread the
 * ranks that compute over the cores while the others wait in MPI?  The first
 * half of the ranks compute (a fixed loop), the second half wait for them,
 * in MPI_Recv (polling, as the CPU runtime's waits do) or asleep (nanosleep
 * between MPI_Test calls: a waiter the kernel sees idle), alternately by
 * round.  Every computing rank notes the core it runs on (sched_getcpu) in
 * each millisecond of its loop; rank 0 counts the milliseconds in which two
 * computing ranks were on one core (spread: 0; placed at random, 4 ranks
 * on 2 cores: 1/3), and prints each round's computing wall over CPU
 * seconds (1: a core each).  bench/mpi_placement.sh runs it as launch.sh
 * runs ranks; compiler/simulate.c's core_share cites what it measured. */
#define _GNU_SOURCE
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { MS = 4000 };  /* the milliseconds a round can note */

static double now(clockid_t c) {
    struct timespec t;
    clock_gettime(c, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    long n = argc > 1 ? atol(argv[1]) : 300000000L;
    int rounds = argc > 2 ? atoi(argv[2]) : 4, half = np / 2;
    int *cpu = malloc(sizeof(int) * MS), *all = malloc(sizeof(int) * MS * (size_t)np);
    if (!cpu || !all || half < 2) {
        if (rank == 0) fprintf(stderr, "mpi_placement: needs 4 or more ranks and memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (int round = 0; round < rounds; round++) {
        int asleep = round % 2, one = 1;
        for (int i = 0; i < MS; i++) cpu[i] = -1;
        MPI_Barrier(MPI_COMM_WORLD);
        double w0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_PROCESS_CPUTIME_ID), ratio = 0;
        if (rank < half) {
            volatile double x = 0;
            for (long i = 0; i < n; i++) {
                x += (double)i * 1e-9;
                if ((i & 0xffff) == 0) {
                    int ms = (int)((now(CLOCK_MONOTONIC) - w0) * 1e3);
                    if (ms < MS) cpu[ms] = sched_getcpu();
                }
            }
            ratio = (now(CLOCK_MONOTONIC) - w0) / (now(CLOCK_PROCESS_CPUTIME_ID) - c0);
            MPI_Send(&one, 1, MPI_INT, rank + half, 0, MPI_COMM_WORLD);
        } else if (!asleep) {
            MPI_Recv(&one, 1, MPI_INT, rank - half, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Request q;
            int done = 0;
            MPI_Irecv(&one, 1, MPI_INT, rank - half, 0, MPI_COMM_WORLD, &q);
            while (!done) {
                struct timespec s = { 0, 100000 };
                nanosleep(&s, NULL);
                MPI_Test(&q, &done, MPI_STATUS_IGNORE);
            }
        }
        double sum = 0;
        MPI_Reduce(&ratio, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        MPI_Gather(cpu, MS, MPI_INT, all, MS, MPI_INT, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            int seen = 0, shared = 0;
            for (int ms = 0; ms < MS; ms++) {
                int ok = 1, same = 0;
                for (int a = 0; a < half && ok; a++) {
                    ok = all[a * MS + ms] >= 0;
                    for (int b = 0; b < a && ok; b++) same |= all[a * MS + ms] == all[b * MS + ms];
                }
                seen += ok, shared += ok && same;
            }
            printf("round %d, waiters %s: computing ranks shared a core in %d of %d ms (%.0f%%); "
                   "computing wall / CPU %.2f\n", round, asleep ? "asleep " : "polling", shared, seen,
                   seen ? 100.0 * shared / seen : 0, sum / half);
            fflush(stdout);
        }
    }
    free(cpu);
    free(all);
    MPI_Finalize();
    return 0;
}
