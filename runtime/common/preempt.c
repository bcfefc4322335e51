/* preempt.c: stopping cleanly when the scheduler asks.  Slurm sends SIGTERM
 * to every task before a time limit or a preemption (or the signal chosen
 * with --signal, e.g. SIGUSR1; mpirun forwards SIGUSR1 to the ranks but ends
 * them itself on SIGTERM, see on_signal).  The handler only notes the
 * signal; between steps the ranks agree with one collective whether any of
 * them got one, so that all stop after the same step, save a checkpoint and
 * exit with WF_EXIT_PREEMPTED, which a requeued job answers with
 * --resume auto. */
#if !defined(_GNU_SOURCE)
#define _GNU_SOURCE
#endif
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

static volatile sig_atomic_t requested;  /* the first signal received, 0: none */
static pid_t launcher;                    /* the Open MPI launcher that started us, or 0 */

/* SIGTERM from mpirun (or its orted) is its teardown of a failed job, sent
 * to every survivor before SIGKILL: obeyed at once, as before, so that a
 * killed rank still ends the job in about a second.  Any other SIGTERM (from
 * Slurm, or a user) asks for a checkpoint. */
static void on_signal(int sig, siginfo_t *info, void *unused) {
    (void)unused;
    if (sig == SIGTERM && launcher && info && info->si_pid == launcher) {
        signal(SIGTERM, SIG_DFL);
        raise(SIGTERM);
        return;
    }
    if (!requested) requested = sig;
}

/* The parent, where it is mpirun / orted (Open MPI 4) or prterun / prted (5). */
static pid_t open_mpi_launcher(void) {
    char path[64], name[64] = "";
    pid_t parent = getppid();
    snprintf(path, sizeof path, "/proc/%d/comm", (int)parent);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    if (!fgets(name, sizeof name, f)) name[0] = '\0';
    fclose(f);
    name[strcspn(name, "\n")] = '\0';
    static const char *const names[] = { "mpirun", "mpiexec", "orterun", "orted", "prterun", "prted" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(name, names[i]) == 0) return parent;
    return 0;
}

void wf_preempt_setup(wf_ctx *c) {
    launcher = open_mpi_launcher();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;  /* MPI's and the file system's calls carry on */
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGTERM, &sa, NULL) != 0 || sigaction(SIGUSR1, &sa, NULL) != 0)
        wf_fatal(c, "sigaction", WF_WHERE, "cannot install the SIGTERM / SIGUSR1 handler");
}

/* The agreement runs one step behind, so that no rank waits for it: each
 * call completes the all-reduce the previous call started (every rank has
 * long passed that point) and starts the next with this rank's news. */
static MPI_Request agree = MPI_REQUEST_NULL;
static int mine, anyone;

int wf_preempt_poll(wf_ctx *c) {
    int stop = 0;
    if (agree != MPI_REQUEST_NULL) {
        wf_watch_what(c, -1, "preemption check (all-reduce over all ranks after step %ld)", c->step);
        WF_MPI(c, MPI_Wait(&agree, MPI_STATUS_IGNORE));
        wf_watch_done();
        stop = anyone;
    }
    mine = requested;
    WF_MPI(c, MPI_Iallreduce(&mine, &anyone, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &agree));
    return stop;
}

void wf_preempt_end(wf_ctx *c) {
    if (agree == MPI_REQUEST_NULL) return;
    wf_watch_what(c, -1, "preemption check (all-reduce over all ranks, at the end)");
    WF_MPI(c, MPI_Wait(&agree, MPI_STATUS_IGNORE));
    wf_watch_done();
}
