/* mpi_wait.c: what a rank waiting in a blocking MPI call costs the rank
 * computing beside it when ranks outnumber cores (bench/mpi_wait.sh runs it
 * as two ranks on one core).  Rank 0 runs a fixed loop, then sends rank 1 a
 * word; rank 1 waits for it, in turn in MPI_Recv (as the CPU runtime's
 * pipeline receives do) and asleep (nanosleep between MPI_Test calls: a
 * waiter that costs nothing).  Each prints the CPU seconds it used. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double cpu_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static double wall_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    long n = argc > 1 ? atol(argv[1]) : 200000000L;
    int rounds = argc > 2 ? atoi(argv[2]) : 4;
    for (int round = 0; round < rounds; round++) {
        int asleep = round % 2;
        MPI_Barrier(MPI_COMM_WORLD);
        double c0 = cpu_s(), w0 = wall_s();
        if (rank == 0) {
            volatile double x = 0;
            for (long i = 0; i < n; i++) x += (double)i * 1e-9;
            int one = 1;
            MPI_Send(&one, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
            printf("round %d  computing rank: %.3f s CPU, %.3f s wall (waiter %s)\n", round, cpu_s() - c0,
                   wall_s() - w0, asleep ? "asleep" : "in MPI_Recv");
        } else {
            int got = 0;
            if (!asleep) {
                MPI_Recv(&got, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Request q;
                int done = 0;
                MPI_Irecv(&got, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, &q);
                while (!done) {
                    struct timespec s = { 0, 20000000 };
                    nanosleep(&s, NULL);
                    MPI_Test(&q, &done, MPI_STATUS_IGNORE);
                }
            }
            printf("round %d  waiting rank:   %.3f s CPU (%s)\n", round, cpu_s() - c0,
                   asleep ? "asleep" : "in MPI_Recv");
        }
        fflush(stdout);
    }
    MPI_Finalize();
    return 0;
}
