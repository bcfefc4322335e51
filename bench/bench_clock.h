/* bench_clock.h: the clocks and the sort the C benchmarks share. */
#ifndef WEFT_BENCH_CLOCK_H
#define WEFT_BENCH_CLOCK_H

#include <time.h>

/* Seconds on clock id: CLOCK_MONOTONIC for wall time, CLOCK_PROCESS_CPUTIME_ID
 * for the CPU of every thread of the process (what counts on a shared machine). */
static inline double bench_clock_s(clockid_t id) {
    struct timespec t;
    clock_gettime(id, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static inline double bench_cpu_s(void) { return bench_clock_s(CLOCK_PROCESS_CPUTIME_ID); }

/* qsort's comparison for doubles, ascending (medians and least values). */
static inline int bench_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#endif
