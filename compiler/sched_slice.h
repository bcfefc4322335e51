/* sched_slice.h: the CPU scheduler's time slice, which a rank waits for when
 * its tensor-parallel partner shares a core with other runnable ranks
 * (simulate, trace_shared.h).  weft calibrate measures it; without a
 * measurement, the kernel's documented default. */
#ifndef WEFT_SCHED_SLICE_H
#define WEFT_SCHED_SLICE_H

typedef struct {
    double run_ms;  /* median run: a slice the process got */
    double wait_ms; /* median gap: the other processes' runs on its CPU */
    int runs;       /* whole runs counted */
} sched_slice_stat;

/* A spinning process's CLOCK_MONOTONIC stamps (seconds, increasing): a gap
 * over gap_s between consecutive stamps is a time it was descheduled.  The
 * gaps' two ends into edges[2i], edges[2i + 1] (room for 2 n); how many. */
long sched_slice_edges(const double *stamps, long n, double gap_s, double *edges);

/* From m gaps' edges: the runs between them, the slices the process got,
 * into run[] (m - 1; the runs before the first gap and after the last are
 * cut by the start and the end), and the gaps into gap[] (m); how many runs. */
long sched_slice_runs(const double *edges, long m, double *run, double *gap);

/* Both on a whole stream: the median run and gap; 0, or -1 with no whole run. */
int sched_slice_stat_of(const double *stamps, long n, double gap_s, sched_slice_stat *st);

/* Forks `procs` processes pinned to one CPU this process may use, each
 * spinning for `seconds` and stamping CLOCK_MONOTONIC; 0, or -1 after
 * reporting. */
int sched_slice_measure(int procs, double seconds, sched_slice_stat *st);

/* EEVDF's default base slice for `cpus` CPUs, ms: kernel/sched/fair.c's
 * sysctl_sched_base_slice, 0.75 ms, scaled by update_sysctl's
 * 1 + ilog2(min(cpus, 8)) (SCHED_TUNABLESCALING_LOG, the default). */
double sched_slice_default_ms(int cpus);

#endif
