/* omp_wait.c: the OpenMP wait policy launch.sh and job.slurm set (emit.h).
 *
 * An OpenMP thread with nothing to do either spins (ACTIVE) or sleeps
 * (PASSIVE) until the next parallel region.  A CPU rank runs a few hundred
 * regions a step, and waking a sleeping thread costs far more on a virtual
 * machine than on bare metal.  One rank of two threads on a 2-core virtual
 * machine, PASSIVE and ACTIVE alternated (bench/omp_wait.sh; step times
 * vary 10% from run to run there): ACTIVE's steps took 0.93-0.98x as long
 * on the 4-layer GPT of issue 22 and 0.87x on GPT-2 124M with the cores the
 * run's alone, 1.20x as long beside one busy process (the spinning thread
 * keeps taking the core the other wants).  So: spin where each thread has a core of its own and nothing
 * else is planned on it (a rank of two or more threads in the one pool,
 * blas.c), sleep otherwise (ranks sharing cores, OpenBLAS's own pool beside
 * OpenMP's, or the CUDA backend, whose host threads leave the cores to the
 * driver and NCCL).  The user's OMP_WAIT_POLICY always wins, and an
 * OMP_NUM_THREADS or OPENBLAS_NUM_THREADS of theirs keeps the sleeping
 * default. */
#include "emit.h"

void emit_omp_wait(writer *o, int cuda, const char *node_ranks, const char *cores) {
    if (cuda) {
        emit(o, "export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}\n");
        return;
    }
    emit(o, "# OpenMP's idle threads spin where each has a core to itself (a rank of 2+\n"
            "# threads, the runtime's one pool), else sleep; a setting of yours wins\n"
            "if [ -z \"${OMP_WAIT_POLICY:-}\" ]; then\n"
            "  if [ -z \"${OMP_NUM_THREADS:-}${OPENBLAS_NUM_THREADS:-}\" ] && [ $((2 * %s)) -le %s ]; then\n"
            "    OMP_WAIT_POLICY=ACTIVE\n"
            "  else\n"
            "    OMP_WAIT_POLICY=PASSIVE\n"
            "  fi\n"
            "fi\n"
            "export OMP_WAIT_POLICY\n",
         node_ranks, cores);
}
